"""Okapi BM25 over packets, with Snowball stemming: the lexical half of hybrid recall.

Small on purpose: a tokenizer (the words of `textsearch.py`: folded, any script, CJK as characters
and bigrams; words of two or more characters, English stopwords dropped, Snowball stems: English for
Latin text, Russian for Cyrillic, Greek for Greek), an index in compressed-sparse-row form, and
Lucene's BM25 scoring. The index is encoded as a msgpack header plus raw little-endian arrays, so it
loads with `numpy.frombuffer` (no parsing per posting) and is never unpickled. numpy and the stemmer
are imported inside functions: this module is imported by commands whose startup time matters.

Stemming matters on SciFact (docs/recall.md): "fractures" must meet "fracture".
"""

from __future__ import annotations

import math
import re
import struct
from array import array
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import chain, count, islice
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.textsearch import fold, has_cjk, words

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = ["LEXICAL_FORMAT", "FrameTerms", "LexicalIndex", "TermBags", "Tokenizer", "build", "build_framed",
           "build_iter", "build_texts", "decode", "frame_terms", "from_postings", "term_bags"]

LEXICAL_FORMAT = 2  # bump when tokenisation or the encoding changes: cached token counts are keyed by it
K1 = 1.2
B = 0.75
_MAGIC = b"VVBM"

# The usual English list (as scikit-learn's and bm25s's, trimmed to function words); a word block reads
# better than 127 quoted strings.
STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below
between both but by can could did do does doing down during each few for from further had has have
having he her here hers herself him himself his how i if in into is it its itself just me more most my
myself no nor not now of off on once only or other our ours ourselves out over own same she should so
some such than that the their theirs them themselves then there these they this those through to too
under until up very was we were what when where which while who whom why will with would you your yours
yourself yourselves
""".split())  # noqa: SIM905
_WORD = re.compile(r"\w\w+")
# ASCII text as space-separated lower-case words, in one `bytes.translate`: A-Z become a-z, and every other
# ASCII character `\w` does not match a space.
_NOT_WORD = frozenset(c for c in range(128) if not (chr(c).isalnum() or chr(c) == "_"))
_LOWER_CLEAR = bytes(c + 32 if 65 <= c <= 90 else 32 if c in _NOT_WORD else c for c in range(256))


_CYRILLIC = re.compile("[\u0400-\u052f\u1c80-\u1c8f\u2de0-\u2dff\ua640-\ua69f]")
_GREEK = re.compile("[\u0370-\u03ff\u1f00-\u1fff]")


class Tokenizer:
    """text → stemmed terms. Stems are memoised: a corpus repeats its words far more than it adds new ones.

    ASCII text is cut exactly as it always was (`\\w\\w+` runs of the lower-cased text); other text into
    `textsearch.words` (folded words, CJK characters and bigrams), words of one character dropped but
    CJK characters kept. A word in Cyrillic or Greek letters gets that language's stemmer."""

    def __init__(self) -> None:
        from snowballstemmer.english_stemmer import EnglishStemmer  # type: ignore[import-untyped]

        stem: Callable[[str], str] = EnglishStemmer().stemWord
        self._stem = stem
        self._other: dict[str, Callable[[str], str]] = {}
        self._cache: dict[str, str] = {}

    def _stem_other(self, word: str) -> str:
        """A non-ASCII word's stem: Russian for Cyrillic, Greek for Greek, English for the rest (which
        leaves letters outside a-z alone); CJK grams are kept whole."""
        if _CYRILLIC.search(word):
            lang = "russian"
        elif _GREEK.search(word):
            lang = "greek"
        elif has_cjk(word):
            return word
        else:
            return self._stem(word)
        stem = self._other.get(lang)
        if stem is None:
            import snowballstemmer  # type: ignore[import-untyped]

            stem = self._other[lang] = snowballstemmer.stemmer(lang).stemWord
        return stem(word)

    def __call__(self, text: str) -> list[str]:
        cache = self._cache
        out: list[str] = []
        if text.isascii():
            found = _WORD.findall(text.lower())
            stem = self._stem
        else:
            found = [w for w in self.raw_words(text) if len(w) > 1 or has_cjk(w)]
            stem = self._stem_other
        for word in found:
            if word in STOPWORDS:
                continue
            s = cache.get(word)
            if s is None:
                s = cache[word] = stem(word)
            out.append(s)
        return out

    def counts(self, text: str) -> dict[str, int]:
        return dict(Counter(self(text)))

    @staticmethod
    def raw_words(text: str) -> list[str]:
        """The words of `text` before stopwords, short words and stemming are dealt with (`term`): for ASCII
        text its lower-cased runs of `[A-Za-z0-9_]` (what `\\w` matches there), else `textsearch.words` of the
        folded text."""
        if text.isascii():  # lowered and cleared in one pass over its bytes: half the work of two
            return text.encode("ascii").translate(_LOWER_CLEAR).decode("ascii").split()
        return words(fold(text))

    def term(self, word: str) -> str | None:
        """The term one of `raw_words` counts as: its stem, or None for a stopword or a one-character word
        (but a CJK character). As `__call__` decides it, memoised the same way."""
        if word in STOPWORDS or (len(word) < 2 and not has_cjk(word)):
            return None
        cache = self._cache
        s = cache.get(word)
        if s is None:
            # A run of ASCII digits is its own stem: every suffix Snowball's English stemmer strips is letters.
            s = cache[word] = word if word.isascii() and word.isdigit() else self._stem_other(word)
        return s


class _Header(msgspec.Struct, frozen=True, array_like=True):
    format: int
    k1: float
    b: float
    n_docs: int
    n_postings: int
    avgdl: float
    vocab: list[str]


class LexicalIndex:
    """BM25 over `n_docs` documents numbered 0..n_docs-1 (the caller maps numbers to nodes)."""

    def __init__(self, header: _Header, indptr: npt.NDArray[np.int64], docs: npt.NDArray[np.int32],
                 tfs: npt.NDArray[np.float32], lengths: npt.NDArray[np.float32]) -> None:
        self.header = header
        self.n_docs = header.n_docs
        self._term_id = {t: i for i, t in enumerate(header.vocab)}
        self._indptr = indptr
        self._docs = docs
        self._tfs = tfs
        self._lengths = lengths

    @property
    def vocab(self) -> list[str]:
        """The terms, sorted: term number t is `vocab[t]`."""
        return self.header.vocab

    def same_parameters(self, *, k1: float = K1, b: float = B) -> bool:
        """Whether this index was built with these BM25 parameters in this format."""
        h = self.header
        return h.format == LEXICAL_FORMAT and h.k1 == k1 and h.b == b

    def postings(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int32], npt.NDArray[np.float32],
                                npt.NDArray[np.float32]]:
        """The index as arrays (read only): `indptr` (term t's postings are `indptr[t]:indptr[t + 1]`), the
        document and the term frequency of each posting, and each document's length."""
        return self._indptr, self._docs, self._tfs, self._lengths

    def encode(self) -> bytes:
        head = msgspec.msgpack.encode(self.header)
        return b"".join((_MAGIC, struct.pack("<Q", len(head)), head, self._indptr.astype("<i8").tobytes(),
                         self._docs.astype("<i4").tobytes(), self._tfs.astype("<f4").tobytes(),
                         self._lengths.astype("<f4").tobytes()))

    def scores(self, terms: Iterable[str]) -> npt.NDArray[np.float32]:
        """BM25 score of every document for these (already tokenised) query terms; a repeated term counts
        once per repetition, as in Lucene."""
        import numpy as np

        h = self.header
        out = np.zeros(self.n_docs, dtype=np.float32)
        avgdl = h.avgdl or 1.0
        for term, qtf in Counter(terms).items():
            t = self._term_id.get(term)
            if t is None:
                continue
            lo, hi = int(self._indptr[t]), int(self._indptr[t + 1])
            docs = self._docs[lo:hi]
            tf = self._tfs[lo:hi]
            df = hi - lo
            idf = math.log(1.0 + (self.n_docs - df + 0.5) / (df + 0.5))
            norm = h.k1 * (1.0 - h.b + h.b * self._lengths[docs] / avgdl)
            out[docs] += np.float32(qtf * idf) * tf * (h.k1 + 1.0) / (tf + norm)
        return out

    def top(self, terms: Sequence[str], n: int,
            allowed: npt.NDArray[np.bool_] | None = None) -> list[tuple[int, float]]:
        """The `n` best (document, score) pairs with a positive score, best first, ties by document number;
        only documents `allowed` (a mask over the documents) when given."""
        import numpy as np

        scores = self.scores(terms)
        hit = np.flatnonzero((scores > 0) & allowed if allowed is not None else scores > 0)
        if hit.size == 0 or n <= 0:
            return []
        part = hit[np.argpartition(-scores[hit], n - 1)[:n]] if hit.size > n else hit
        order = sorted(part.tolist(), key=lambda d: (-float(scores[d]), d))
        return [(d, float(scores[d])) for d in order[:n]]


def build(counts: Sequence[dict[str, int]], *, k1: float = K1, b: float = B) -> LexicalIndex:
    """An index over documents given as term → count maps (from `Tokenizer.counts`)."""
    import numpy as np

    # Iteration stays in C (chain/map/fromiter) and the grouping by term is one stable argsort: a re-index
    # of 5,000 abstracts (~500k postings) builds in a few hundredths of a second instead of ~0.7 s.
    vocab = sorted(set().union(*counts)) if counts else []
    term_id = {t: i for i, t in enumerate(vocab)}
    sizes = np.fromiter(map(len, counts), dtype=np.int64, count=len(counts))
    total = int(sizes.sum())
    terms = np.fromiter(map(term_id.__getitem__, chain.from_iterable(counts)), dtype=np.int64, count=total)
    tfs = np.fromiter(chain.from_iterable(c.values() for c in counts), dtype=np.float32, count=total)
    docs = np.repeat(np.arange(len(counts), dtype=np.int32), sizes)
    order = np.argsort(terms, kind="stable")  # stable: within a term, postings stay in document order
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=indptr[1:])
    lengths = np.fromiter((sum(c.values()) for c in counts), dtype=np.float32, count=len(counts))
    avgdl = float(lengths.mean()) if len(counts) else 0.0
    header = _Header(format=LEXICAL_FORMAT, k1=k1, b=b, n_docs=len(counts), n_postings=total, avgdl=avgdl,
                     vocab=vocab)
    return LexicalIndex(header, indptr, docs[order], tfs[order], lengths)


def build_iter(counts: Iterable[Mapping[str, int]], *, k1: float = K1, b: float = B) -> LexicalIndex:
    """`build(list(counts))`, byte for byte, holding each document's map only while it is read: its postings
    go into flat arrays (a term number, a count: 16 bytes a posting, where a map costs ~35), numbered in the
    order terms are first seen and renumbered in sorted order at the end. An index run's first build of
    10,000 notes held ~50 MiB of maps at once through `build`."""
    import numpy as np

    term_id: dict[str, int] = {}
    ids = array("q")
    tfs = array("q")
    sizes = array("q")
    lengths = array("q")
    for c in counts:
        for t in c:
            if t not in term_id:
                term_id[t] = len(term_id)
        ids.extend(map(term_id.__getitem__, c))
        tfs.extend(c.values())
        sizes.append(len(c))
        lengths.append(sum(c.values()))
    vocab = sorted(term_id)
    rank = dict(zip(vocab, count(), strict=False))
    renumber = np.fromiter(map(rank.__getitem__, term_id), dtype=np.int64, count=len(term_id))
    terms = renumber[np.frombuffer(ids, dtype=np.int64)] if len(ids) else np.zeros(0, dtype=np.int64)
    n = len(sizes)
    docs = np.repeat(np.arange(n, dtype=np.int32), np.frombuffer(sizes, dtype=np.int64)) if n else \
        np.zeros(0, dtype=np.int32)
    order = np.argsort(terms, kind="stable")  # stable: within a term, postings stay in document order
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=indptr[1:])
    # As `build`: each count and each length a Python int made float32 (exact below 2**24).
    tf = np.fromiter(tfs, dtype=np.float32, count=len(tfs))
    length = np.fromiter(lengths, dtype=np.float32, count=n)
    avgdl = float(length.mean()) if n else 0.0
    header = _Header(format=LEXICAL_FORMAT, k1=k1, b=b, n_docs=n, n_postings=len(ids), avgdl=avgdl, vocab=vocab)
    return LexicalIndex(header, indptr, docs[order], tf[order], length)


def build_texts(docs: Sequence[str | Mapping[str, int]], tokenizer: Tokenizer | None = None, *,
                k1: float = K1, b: float = B) -> LexicalIndex:
    """`build([tokenizer.counts(d) for d in docs])`, byte for byte, without a Python step per word: documents
    are cut into words (`Tokenizer.raw_words`, C-level for ASCII text), every distinct word is stemmed once
    (`Tokenizer.term`), and the postings are counted by numpy. A document may also be given as its term
    counts already (a term -> count map, as `Tokenizer.counts` makes).

    Recall of a fetched tree builds the index of every note this way: at 10,000 notes, tokenising note by
    note was half of that recall's time (bench/bench_memory_cache.py)."""
    import numpy as np

    tok = tokenizer if tokenizer is not None else Tokenizer()
    n = len(docs)
    words_seen, blocks, given = _word_postings(docs, tok)
    # Each distinct word's term (None: a stopword or a short word), then the vocabulary in sorted order.
    term_of = [tok.term(w) for w in words_seen]
    vocab = sorted({t for t in term_of if t is not None}.union(*(d for _, d in given)))
    term_id = {t: j for j, t in enumerate(vocab)}
    word_term = np.fromiter((-1 if t is None else term_id[t] for t in term_of), dtype=np.int64, count=len(term_of))
    parts_keys: list[npt.NDArray[np.int64]] = []
    parts_counts: list[npt.NDArray[np.int64]] = []
    for keys, counts in blocks:
        terms = word_term[keys // n] if n else keys
        kept = terms >= 0
        parts_keys.append(terms[kept] * n + keys[kept] % n)
        parts_counts.append(counts[kept])
    if given:
        maps = [d for _, d in given]
        sizes_of = np.fromiter(map(len, maps), dtype=np.int64, count=len(maps))
        size = int(sizes_of.sum())
        ids = np.fromiter(map(term_id.__getitem__, chain.from_iterable(maps)), dtype=np.int64, count=size)
        parts_keys.append(ids * n + np.repeat(np.fromiter((i for i, _ in given), dtype=np.int64, count=len(given)),
                                              sizes_of))
        parts_counts.append(np.fromiter(chain.from_iterable(d.values() for d in maps), dtype=np.int64, count=size))
    all_keys = np.concatenate(parts_keys) if parts_keys else np.zeros(0, dtype=np.int64)
    all_counts = np.concatenate(parts_counts) if parts_counts else np.zeros(0, dtype=np.int64)
    # Sorted by term, then document: the order `build` leaves its postings in. Two words with one stem
    # (or a word in two blocks: never, blocks are whole documents) add up.
    keys, tf = _sum_by_key(all_keys, all_counts, len(vocab) * max(n, 1))
    terms = keys // n if n else keys
    docs_of = (keys % n).astype(np.int32) if n else keys.astype(np.int32)
    indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=indptr[1:])
    lengths = np.bincount(docs_of, weights=tf, minlength=n).astype(np.float32) if n else \
        np.zeros(0, dtype=np.float32)
    avgdl = float(lengths.mean()) if n else 0.0
    header = _Header(format=LEXICAL_FORMAT, k1=k1, b=b, n_docs=n, n_postings=len(keys), avgdl=avgdl, vocab=vocab)
    return LexicalIndex(header, indptr, docs_of, tf.astype(np.float32), lengths)


def decode(data: bytes) -> LexicalIndex | None:
    """The index encoded by `LexicalIndex.encode`, or None when the bytes are not one (damaged, foreign)."""
    import numpy as np

    try:
        if not data.startswith(_MAGIC):
            return None
        (n,) = struct.unpack_from("<Q", data, len(_MAGIC))
        start = len(_MAGIC) + 8
        header = msgspec.msgpack.decode(data[start:start + n], type=_Header)
        if header.format != LEXICAL_FORMAT:
            return None
        # Counts become numpy array lengths (a negative one reads "all the rest"), parameters scores.
        if header.n_docs < 0 or header.n_postings < 0 or not (
                math.isfinite(header.k1) and math.isfinite(header.b) and math.isfinite(header.avgdl)
                and 0.0 <= header.k1 <= 100.0 and 0.0 <= header.b <= 1.0 and header.avgdl >= 0.0):
            return None
        pos = start + n
        v, p, d = len(header.vocab), header.n_postings, header.n_docs
        arrays: list[Any] = []
        for count, dtype, size in ((v + 1, "<i8", 8), (p, "<i4", 4), (p, "<f4", 4), (d, "<f4", 4)):
            end = pos + count * size
            if end > len(data):
                return None
            arrays.append(np.frombuffer(data, dtype=dtype, count=count, offset=pos))
            pos = end
        if pos != len(data):
            return None
        indptr, docs, tfs, lengths = arrays
        if indptr[0] != 0 or indptr[-1] != p or (p and (docs.min() < 0 or docs.max() >= d)) \
                or (v and bool((np.diff(indptr) < 0).any())):
            return None
    except (struct.error, msgspec.DecodeError, msgspec.ValidationError, ValueError, RecursionError):
        return None
    return LexicalIndex(header, indptr, docs, tfs, lengths)


def from_postings(vocab: list[str], indptr: npt.NDArray[np.int64], docs: npt.NDArray[np.int32],
                  tfs: npt.NDArray[np.float32], lengths: npt.NDArray[np.float32], *, k1: float = K1,
                  b: float = B) -> LexicalIndex:
    """The index of these arrays (as `LexicalIndex.postings` gives them: postings grouped by term in vocabulary
    order, documents ascending within a term), with the average length `build` computes from `lengths`."""
    n = len(lengths)
    avgdl = float(lengths.mean()) if n else 0.0
    header = _Header(format=LEXICAL_FORMAT, k1=k1, b=b, n_docs=n, n_postings=len(docs), avgdl=avgdl, vocab=vocab)
    return LexicalIndex(header, indptr, docs, tfs, lengths)


def _word_postings(docs: Sequence[str | Mapping[str, int]], tok: Tokenizer,
                   ) -> tuple[list[str], list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]],
                              list[tuple[int, Mapping[str, int]]]]:
    """The texts among `docs` cut into words (`Tokenizer.raw_words`): the distinct words, numbered in order
    of first sight, and per block of documents the distinct `word * len(docs) + doc` keys with their counts,
    counted so that the words of only one block are held as Python strings at a time. And the documents
    given as term counts already, by position."""
    import numpy as np

    n = len(docs)
    # Each word's number, a new word numbered as it is first looked up, in C (no pass to find the new words).
    word_id: defaultdict[str, int] = defaultdict(count().__next__)
    blocks: list[tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = []
    given: list[tuple[int, Mapping[str, int]]] = []
    block = 512
    for lo in range(0, n, block):
        cut: list[str] = []
        sizes: list[int] = []
        at: list[int] = []
        for i in range(lo, min(lo + block, n)):
            doc = docs[i]
            if isinstance(doc, str):
                found = tok.raw_words(doc)
                cut.extend(found)
                sizes.append(len(found))
                at.append(i)
            else:
                given.append((i, doc))
        if not cut:
            continue
        ids = np.fromiter(map(word_id.__getitem__, cut), dtype=np.int64, count=len(cut))
        doc_of = np.repeat(np.asarray(at, dtype=np.int64), np.asarray(sizes, dtype=np.int64))
        keys, counts = np.unique(ids * n + doc_of, return_counts=True)
        blocks.append((keys, counts.astype(np.int64)))
    return list(word_id), blocks, given


def _numbered(words: Iterable[str], tok: Tokenizer, terms: list[str], number: dict[str, int]) -> list[int]:
    """The number in `terms` of each word's term (`Tokenizer.term`), a new term appended and numbered in
    `number`; -1 for a word that is no term (a stopword, a one-character word)."""
    out: list[int] = []
    for w in words:
        t = tok.term(w)
        if t is None:
            out.append(-1)
            continue
        j = number.get(t)
        if j is None:
            j = number[t] = len(terms)
            terms.append(t)
        out.append(j)
    return out


def _sum_by_key(keys: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], bound: int,
                ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct `keys` (each in 0..bound-1), ascending, and the sum of the `counts` of each.
    The count rides below its key in one int64, so one sort of values does it (several times faster than
    the argsort `np.unique(..., return_inverse=True)` makes), unless that would not fit in 63 bits."""
    import numpy as np

    if not len(keys):
        return keys, counts
    scale = int(counts.max()) + 1
    if bound * scale < 1 << 62 and int(counts.min()) >= 0:
        found, each = np.divmod(np.sort(keys * scale + counts), scale)
        firsts = np.flatnonzero(np.diff(found, prepend=-1))
        return found[firsts], np.add.reduceat(each, firsts)
    distinct, inverse = np.unique(keys, return_inverse=True)
    return distinct, np.bincount(inverse.reshape(-1), weights=counts, minlength=len(distinct)).astype(np.int64)


# --- an index from two halves of each document ------------------------------------------------------------


class TermBags(msgspec.Struct, frozen=True, array_like=True):
    """The term counts of many texts, compactly (`term_bags`): text j's postings are `indptr[j]:indptr[j + 1]`
    of `ids` (numbers into `terms`, ascending) and `counts`, all little-endian (int64, int32, int32)."""

    keys: list[str]  # a caller's name for each text (a blob id, say)
    terms: list[str]
    indptr: bytes
    ids: bytes
    counts: bytes


def term_bags(keys: Sequence[str], texts: Sequence[str], tokenizer: Tokenizer | None = None) -> TermBags:
    """The term counts of `texts` (named by `keys`), as `Tokenizer.counts` counts them, cut in bulk as
    `build_texts` cuts them. With `build_framed`, the costly half of an index (the notes' own text) can be
    counted before, and apart from, the half that depends on the graph.

    Each word is looked up once, straight to its term's number (`_TermNumbers`), and each block of texts'
    (text, term) pairs counted by one sort: no number per distinct word, no second pass to merge the words of
    one stem. Small blocks: their words and keys stay in the CPU's cache (at 10,000 notes, 128 texts a block
    took about two thirds of the time 512 did, bench/bench_term_bags.py)."""
    import numpy as np

    tok = tokenizer if tokenizer is not None else Tokenizer()
    m = len(texts)
    if m >= 1 << 31:
        raise ValueError("term_bags counts fewer than 2**31 texts")
    numbers = _TermNumbers(tok)
    number = numbers.__getitem__
    raw_words = tok.raw_words
    parts_keys: list[npt.NDArray[np.int64]] = []
    parts_counts: list[npt.NDArray[np.int64]] = []
    for lo in range(0, m, _BAG_BLOCK):
        cut: list[str] = []
        sizes: list[int] = []
        for i in range(lo, min(lo + _BAG_BLOCK, m)):
            found = raw_words(texts[i])
            cut.extend(found)
            sizes.append(len(found))
        if not cut:
            continue
        ids = np.fromiter(map(number, cut), dtype=np.int64, count=len(cut))
        text = np.repeat(np.arange(lo, lo + len(sizes), dtype=np.int64), np.asarray(sizes, dtype=np.int64))
        kept = ids >= 0
        # Text number in the high half, term number in the low: sorted, by text, then term (a block's texts
        # follow the last block's, so the blocks need no merging).
        found_keys, found_counts = np.unique((text[kept] << 32) | ids[kept], return_counts=True)
        parts_keys.append(found_keys)
        parts_counts.append(found_counts)
    merged = np.concatenate(parts_keys) if parts_keys else np.zeros(0, dtype=np.int64)
    counts = np.concatenate(parts_counts) if parts_counts else np.zeros(0, dtype=np.int64)
    indptr = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(np.bincount(merged >> 32, minlength=m), out=indptr[1:])
    return TermBags(keys=list(keys), terms=numbers.terms, indptr=indptr.astype("<i8").tobytes(),
                    ids=(merged & 0xFFFFFFFF).astype("<i4").tobytes(), counts=counts.astype("<i4").tobytes())


_BAG_BLOCK = 128  # texts whose words `term_bags` holds at once


class _TermNumbers(dict[str, int]):
    """word -> the number in `terms` of its term (`Tokenizer.term`), a new term numbered as first met; -1 for
    a word that is no term (a stopword, a one-character word). A word not seen before is looked up by
    `__missing__`, so `map(numbers.__getitem__, words)` stays in C for every word seen before: most of them."""

    def __init__(self, tok: Tokenizer) -> None:
        super().__init__()
        self._tok = tok
        self._number: dict[str, int] = {}
        self.terms: list[str] = []

    def __missing__(self, word: str) -> int:
        t = self._tok.term(word)
        j = -1
        if t is not None:
            got = self._number.get(t)
            if got is None:
                got = self._number[t] = len(self.terms)
                self.terms.append(t)
            j = got
        self[word] = j
        return j


class FrameTerms:
    """The terms of documents' frames (`frame_terms`): posting k is term `terms[ids[k]]` once in document
    `docs[k]`, of `n` documents."""

    def __init__(self, terms: list[str], ids: npt.NDArray[np.int64], docs: npt.NDArray[np.int64], n: int) -> None:
        self.terms, self.ids, self.docs, self.n = terms, ids, docs, n


def frame_terms(frames: Sequence[str], tokenizer: Tokenizer | None = None) -> FrameTerms:
    """The terms of each of `frames`, for `build_framed`: each distinct word stemmed once, and the ASCII
    frames (most) cut into words all at once, one marker word between each two."""
    import secrets

    import numpy as np

    tok = tokenizer if tokenizer is not None else Tokenizer()
    # The other frames first, one by one (folded: other scripts), then the ASCII ones at once.
    other = [i for i, frame in enumerate(frames) if not frame.isascii()]
    cut: list[str] = []
    sizes: list[int] = []
    for i in other:
        found = tok.raw_words(frames[i])
        cut.extend(found)
        sizes.append(len(found))
    plain = [i for i, frame in enumerate(frames) if frame.isascii()]
    marker = ""
    if plain:
        # Words never run across a line break, so the words of "\nMARKER\n".join(frames) are each frame's
        # words with MARKER before them, once no frame holds MARKER as a word (checked: counted).
        marker = f"vivary{secrets.token_hex(12)}"
        found = tok.raw_words("".join(f"\n{marker}\n{frames[i]}" for i in plain))
        if found.count(marker) == len(plain) and marker not in cut:
            cut.extend(found)
        else:  # a frame holding a random 30-character word: cut them one by one
            for i in plain:
                found = tok.raw_words(frames[i])
                cut.extend(found)
                sizes.append(len(found))
            other, plain, marker = other + plain, [], ""
    # Each word numbered as it is first looked up (in C), the marker word first ("" when there is none: never
    # a word), then each distinct word's term: -2 for the marker.
    numbers = count()
    word_id: defaultdict[str, int] = defaultdict(numbers.__next__, {marker: next(numbers)})
    word_ids = np.fromiter(map(word_id.__getitem__, cut), dtype=np.int64, count=len(cut))
    terms: list[str] = []
    word_term = np.asarray([-2, *_numbered(islice(word_id, 1, None), tok, terms, {})], dtype=np.int64)
    ids = word_term[word_ids]
    docs = np.repeat(np.asarray(other, dtype=np.int64), np.asarray(sizes, dtype=np.int64))
    if plain:  # after the others' words: the joined frames', each frame's behind its marker
        after = len(docs)
        docs = np.concatenate((docs, np.asarray(plain, dtype=np.int64)[np.cumsum(ids[after:] == -2) - 1]))
    kept = ids >= 0
    return FrameTerms(terms, ids[kept], docs[kept], len(frames))


def build_framed(frames: Sequence[str] | FrameTerms, bags: TermBags, rows: Sequence[int],
                 tokenizer: Tokenizer | None = None, *, k1: float = K1, b: float = B) -> LexicalIndex | None:
    """`build_texts([frames[i] + "\n" + texts[rows[i]] for i ...])` byte for byte, where `texts` are those
    `bags` counted: document i is the words of `frames[i]` (or their `frame_terms`, counted before) plus
    text `rows[i]`'s bag. (Words never run across a line break, before or after folding, so a document's
    words are its two halves' words.) None when `bags` is not a consistent set of bags (then build the
    index from the texts)."""
    import numpy as np

    framed = frames if isinstance(frames, FrameTerms) else frame_terms(frames, tokenizer)
    n = framed.n
    try:
        indptr = np.frombuffer(bags.indptr, dtype="<i8")
        ids = np.frombuffer(bags.ids, dtype="<i4")
        bag_counts = np.frombuffer(bags.counts, dtype="<i4")
    except ValueError:
        return None
    m, v = len(indptr) - 1, len(bags.terms)
    if m != len(bags.keys) or m < 0 or len(ids) != len(bag_counts) or (m >= 0 and len(indptr) and (
            indptr[0] != 0 or indptr[-1] != len(ids) or bool((np.diff(indptr) < 0).any()))) \
            or (len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= v or int(bag_counts.min()) < 1)):
        return None
    rows_at = np.asarray(rows, dtype=np.int64)
    if len(rows_at) != n or (n and (int(rows_at.min()) < 0 or int(rows_at.max()) >= m)):
        return None
    # One table of terms: the bags' own, then the frames' that they lack.
    table = list(bags.terms)
    number = {t: i for i, t in enumerate(table)}
    renumber: list[int] = []
    for t in framed.terms:
        j = number.get(t)
        if j is None:
            j = number[t] = len(table)
            table.append(t)
        renumber.append(j)
    frame_ids = np.asarray(renumber, dtype=np.int64)[framed.ids]
    frame_docs = framed.docs
    # Each document's bag: the postings of its row, gathered in one pass.
    starts, ends = indptr[rows_at], indptr[rows_at + 1]
    lengths_of = ends - starts
    total = int(lengths_of.sum())
    offsets = np.cumsum(lengths_of) - lengths_of
    at = np.repeat(starts - offsets, lengths_of) + np.arange(total, dtype=np.int64)
    bag_docs = np.repeat(np.arange(n, dtype=np.int64), lengths_of)
    # Terms numbered in sorted order, as `build_texts` numbers its vocabulary; postings by term, then document.
    order = sorted(range(len(table)), key=table.__getitem__)
    rank = np.empty(len(table), dtype=np.int64)
    rank[np.asarray(order, dtype=np.int64)] = np.arange(len(table), dtype=np.int64)
    keys_of = np.concatenate((rank[frame_ids] * n + frame_docs, rank[ids[at].astype(np.int64)] * n + bag_docs))
    counts_of = np.concatenate((np.ones(len(frame_ids), dtype=np.int64), bag_counts[at].astype(np.int64)))
    keys, summed = _sum_by_key(keys_of, counts_of, len(table) * max(n, 1))
    ranks, docs = np.divmod(keys, max(n, 1))
    # Terms of these documents only (a bag nobody asked for adds none), each where its postings start.
    starts_at = np.flatnonzero(np.diff(ranks, prepend=-1))
    vocab = [table[order[r]] for r in ranks[starts_at].tolist()]
    postings = np.append(starts_at, len(keys)).astype(np.int64)
    docs_of = docs.astype(np.int32)
    lengths = np.bincount(docs_of, weights=summed, minlength=n).astype(np.float32) if n else \
        np.zeros(0, dtype=np.float32)
    tf = summed
    avgdl = float(lengths.mean()) if n else 0.0
    header = _Header(format=LEXICAL_FORMAT, k1=k1, b=b, n_docs=n, n_postings=len(keys), avgdl=avgdl, vocab=vocab)
    return LexicalIndex(header, postings, docs_of, tf.astype(np.float32), lengths)
