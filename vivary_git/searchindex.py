"""A per-tree index for `query`/`find`: the five scored sources of every node, folded (lowercased,
`textsearch.fold`), plus whole-word postings, so a query touches only the postings of its terms
instead of every body.

It answers exactly what the direct scan in `query.search` answers (a test holds the two equal):
- phrase bonus: the raw query as a substring of a source, found by scanning one string per source
  (documents joined by NUL, which no query contains) and mapping hits back by offset;
- term bonus: a document's words equal to the term (`textsearch.word_counts`; in ASCII text a term
  is `[a-z0-9]+` and matches exactly where a whole `\\w+` run equals it), counted per document once
  for every term.
"""

from __future__ import annotations

import bisect
from array import array
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from itertools import compress, repeat
from operator import add, and_, contains, ge, mul
from typing import Any

import msgspec

from vivary_git.graph import Graph, edge_run
from vivary_git.models import Edge, Node, Note
from vivary_git.textsearch import fold, word_counts

SOURCE_COUNT = 5


class SearchIndex(msgspec.Struct, frozen=True, array_like=True):
    ids: list[str]  # node IDs, in graph order; a document's number is its position here
    texts: list[str]  # per source: every document's lowercased text, NUL-joined
    offsets: list[list[int]]  # per source: where each document's text starts in `texts`
    postings: list[dict[str, bytes]]  # per source: term -> array('I') of (document, hits) pairs


def frontmatter_text(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{k}: {_flat(fields[k])}" for k in sorted(fields))


def _flat(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value)
    if isinstance(value, dict):
        return " ".join(f"{k}: {_flat(value[k])}" for k in sorted(value))
    return str(value)


def node_sources(node: Node, note: Note, out: Sequence[Edge]) -> tuple[str, str, str, str, str]:
    """The five texts a node is scored on, in `SOURCES` order: id+title, frontmatter, path, body and
    outbound-edge text (`out`: its non-broken outbound edges, sorted)."""
    return (
        f"{node.id} {node.title}",
        frontmatter_text(note.fields),
        node.path,
        note.body,
        " ".join(f"{e.field} {e.to}" for e in out),
    )


def outgoing_edges(graph: Graph) -> dict[str, list[Edge]]:
    """Non-broken outbound edges by source ID, in sorted order."""
    out: dict[str, list[Edge]] = {}
    for e in graph.edges:
        if not e.broken:
            out.setdefault(e.from_, []).append(e)
    return out


def sources_of(graph: Graph, notes: Mapping[str, Note]) -> list[tuple[str, str, str, str, str]]:
    outgoing = outgoing_edges(graph)
    return [node_sources(node, notes[node.blob], outgoing.get(node.id, [])) for node in graph.nodes]


def build(graph: Graph, notes: Mapping[str, Note]) -> SearchIndex:
    docs = sources_of(graph, notes)
    texts: list[str] = []
    offsets: list[list[int]] = []
    postings: list[dict[str, bytes]] = []
    for s in range(SOURCE_COUNT):
        lows = [fold(d[s]) for d in docs]
        starts: list[int] = []
        pos = 0
        post: dict[str, array[int]] = {}
        for i, low in enumerate(lows):
            starts.append(pos)
            pos += len(low) + 1
            for word, hits in word_counts(low).items():
                arr = post.get(word)
                if arr is None:
                    arr = post[word] = array("I")
                arr.append(i)
                arr.append(hits)
        texts.append("\0".join(lows))
        offsets.append(starts)
        postings.append({t: a.tobytes() for t, a in post.items()})
    return SearchIndex([n.id for n in graph.nodes], texts, offsets, postings)


PATCH_AT_MOST = 1024  # documents whose sources changed, at most, for an index to be patched rather than built


def changed_documents(base: Graph, graph: Graph) -> list[int] | None:
    """The numbers of the documents whose five sources (`node_sources`) may differ between the index of
    `base` and that of `graph`: a node with another blob (its frontmatter and body), title or outbound
    edges. None when the two graphs do not hold the same nodes in the same order (ID and path), or more
    than `PATCH_AT_MOST` documents changed: then only a new build gives the index."""
    if len(base.nodes) != len(graph.nodes):
        return None
    changed = [i for i, (a, b) in enumerate(zip(base.nodes, graph.nodes, strict=True)) if a != b]
    if len(changed) > PATCH_AT_MOST or any(
            base.nodes[i].id != graph.nodes[i].id or base.nodes[i].path != graph.nodes[i].path for i in changed):
        return None
    if base.edges != graph.edges:  # the nodes whose outbound edges differ (as sets: both lists are sorted)
        moved = {e.from_ for e in set(base.edges).symmetric_difference(graph.edges)}
        at = {n.id: i for i, n in enumerate(graph.nodes) if n.id in moved}
        changed = sorted(set(at.values()).union(changed))
        if len(changed) > PATCH_AT_MOST:
            return None
    return changed


def outgoing_of(graph: Graph, node_id: str) -> list[Edge]:
    """`outgoing_edges(graph)[node_id]` without going through every edge (`graph.edge_run`)."""
    lo, hi = edge_run(graph.edges, node_id)
    return [e for e in graph.edges[lo:hi] if not e.broken and e.from_ == node_id]


def patch(base: SearchIndex, changed: Mapping[int, Sequence[str]]) -> SearchIndex:
    """`base` with the five sources of the documents in `changed` (document number -> its texts, as
    `node_sources` gives them) put in place of theirs: what `build` gives from the graph and notes they
    came from (a test holds the two equal), in time that grows with the documents changed and the
    postings of their words, not with the vault (the joined texts are copied once)."""
    n = len(base.ids)
    if not (len(base.texts) == len(base.offsets) == len(base.postings) == SOURCE_COUNT
            and all(len(starts) == n for starts in base.offsets) and all(0 <= d < n for d in changed)):
        raise ValueError("the index does not have one entry per document in every source")
    order = sorted(changed)
    texts: list[str] = []
    offsets: list[list[int]] = []
    postings: list[dict[str, bytes]] = []
    for s in range(SOURCE_COUNT):
        text, starts = base.texts[s], base.offsets[s]
        pieces: list[str] = []
        new_starts: list[int] = []
        post = dict(base.postings[s])
        touched: dict[str, array[int]] = {}
        done, shift = 0, 0  # base text copied up to here; how far later documents moved
        for doc in order:
            start = starts[doc]
            end = starts[doc + 1] - 1 if doc + 1 < n else len(text)  # the NUL before the next one is not its
            if not done <= start <= end <= len(text):
                raise ValueError(f"document {doc}'s text is not where the index says")
            old, low = text[start:end], fold(changed[doc][s])
            new_starts.extend(x + shift for x in starts[len(new_starts):doc + 1])
            if old == low:
                continue
            pieces.append(text[done:start])
            pieces.append(low)
            done = end
            shift += len(low) - len(old)
            for word in word_counts(old):
                arr = _posting(post, touched, word)
                at = _pair_at(arr, doc)
                if at >= len(arr) or arr[at] != doc:
                    raise ValueError(f"document {doc} is not in the postings of a word it holds")
                del arr[at:at + 2]
            for word, hits in word_counts(low).items():
                arr = _posting(post, touched, word)
                at = _pair_at(arr, doc)
                arr[at:at] = array("I", (doc, hits))
        new_starts.extend(x + shift for x in starts[len(new_starts):])
        pieces.append(text[done:])
        for word, arr in touched.items():
            if arr:
                post[word] = arr.tobytes()
            else:
                del post[word]  # no document holds it any more: a new build would not list it
        texts.append("".join(pieces))
        offsets.append(new_starts)
        postings.append(post)
    return SearchIndex(list(base.ids), texts, offsets, postings)


def _posting(post: Mapping[str, bytes], touched: dict[str, array[int]], word: str) -> array[int]:
    """The (document, hits) pairs of `word`, as an array this patch may change (taken from `post` once)."""
    arr = touched.get(word)
    if arr is None:
        arr = touched[word] = array("I")
        packed = post.get(word)
        if packed is not None:
            if len(packed) % (2 * arr.itemsize):
                raise ValueError(f"the postings of {word!r} are not (document, hits) pairs")
            arr.frombytes(packed)
    return arr


class _Pairs:
    """The document numbers of a postings array of (document, hits) pairs, as a sequence `bisect` reads."""

    def __init__(self, arr: array[int]) -> None:
        self.arr = arr

    def __len__(self) -> int:
        return len(self.arr) // 2

    def __getitem__(self, i: int) -> int:
        return self.arr[2 * i]


def _pair_at(arr: array[int], doc: int) -> int:
    """Where `doc`'s pair is, or would go, in `arr` (pairs sorted by document): an index into `arr`."""
    return 2 * bisect.bisect_left(_Pairs(arr), doc)


def score(index: SearchIndex, phrase: str, weights: Mapping[str, int],
          sources: Sequence[tuple[str, int, int]]) -> dict[int, tuple[int, int]]:
    """document number -> (score, bit mask of matched sources), for documents with any match."""
    out: dict[int, list[int]] = {}
    for s, (_, w_phrase, w_term) in enumerate(sources):
        matched: dict[int, int] = {}
        text, starts = index.texts[s], index.offsets[s]
        if phrase and "\0" not in phrase:
            pos = text.find(phrase)
            while pos >= 0:
                doc = bisect.bisect_right(starts, pos) - 1
                matched[doc] = w_phrase
                # Next document: a phrase counts once per source, however often it occurs.
                nxt = starts[doc + 1] if doc + 1 < len(starts) else len(text)
                pos = text.find(phrase, nxt)
        for term, weight in weights.items():
            packed = index.postings[s].get(term)
            if packed is None:
                continue
            arr = array("I")
            arr.frombytes(packed)
            for j in range(0, len(arr), 2):
                doc = arr[j]
                matched[doc] = matched.get(doc, 0) + w_term * arr[j + 1] * weight
        for doc, got in matched.items():
            entry = out.get(doc)
            if entry is None:
                out[doc] = [got, 1 << s]
            else:
                entry[0] += got
                entry[1] |= 1 << s
    return {doc: (v[0], v[1]) for doc, v in out.items()}


class Ranker:
    """Exact top-k over one index, for a process that asks many questions of it (the MCP server) or
    one (`query`): what `score` and a sort give, without a Python step per matching document.

    Each term's score in every document, summed over the sources (`w_term * hits`), is spread once
    into a dense array and kept; a question adds its terms' arrays, its phrase bonus (found in each
    document's folded text by `str.__contains__`) and any filter bonus, all through `map` over C
    functions; sorting the scores finds the k-th best, and only documents scoring at least that are
    sorted by (score, path, id). A query that matches every note costs a few passes over arrays, not
    a loop over its postings."""

    MAX_CACHED = 4_000_000  # dense scores kept, over every term (32 MB)

    def __init__(self, index: SearchIndex, graph: Graph) -> None:
        if len(graph.nodes) != len(index.ids):
            raise ValueError("the index was not built from this graph")
        self.index = index
        self.graph = graph
        self.size = len(index.ids)
        # (term, its weight per source) -> (its score in each document, the sources it hits there as bits)
        self._terms: dict[tuple[str, tuple[int, ...]], tuple[array[int], array[int]] | None] = {}
        self._texts: list[list[str]] | None = None
        self._ranks: list[int] | None = None
        self._allowed: dict[Any, array[int]] = {}

    def texts(self, s: int) -> list[str]:
        """Every document's folded text of source `s`, by document number."""
        if self._texts is None:
            out = []
            for text, starts in zip(self.index.texts, self.index.offsets, strict=True):
                parts = text.split("\0")
                if len(parts) != len(starts):  # a NUL inside a document: cut by the offsets instead
                    ends = [*(p - 1 for p in starts[1:]), len(text)]
                    parts = [text[a:b] for a, b in zip(starts, ends, strict=True)]
                out.append(parts)
            self._texts = out
        return self._texts[s]

    def ranks(self) -> list[int]:
        """Each document's place in (path, id) order: how equal scores are ordered."""
        if self._ranks is None:
            nodes = self.graph.nodes
            order = sorted(range(self.size), key=lambda i: (nodes[i].path, nodes[i].id))
            ranks = [0] * self.size
            for place, doc in enumerate(order):
                ranks[doc] = place
            self._ranks = ranks
        return self._ranks

    def allowed(self, key: Any, keep: Callable[[int], bool]) -> array[int]:
        """1 for each document a filter keeps, 0 otherwise; kept for the last few filters."""
        got = self._allowed.get(key)
        if got is None:
            if len(self._allowed) >= 16:
                self._allowed.clear()
            got = self._allowed[key] = array("q", map(int, map(keep, range(self.size))))
        return got

    def _term(self, term: str, weights: tuple[int, ...]) -> tuple[array[int], array[int]] | None:
        key = (term, weights)
        if key in self._terms:
            return self._terms[key]
        got: tuple[array[int], array[int]] | None = None
        for s, w in enumerate(weights):
            packed = self.index.postings[s].get(term)
            if packed is None:
                continue
            pairs = array("I")
            pairs.frombytes(packed)
            docs = pairs[0::2]
            if got is None:
                got = (array("q", bytes(8 * self.size)), array("B", bytes(self.size)))
            _scatter_add(got[0], docs, map(mul, pairs[1::2], repeat(w)))
            _scatter_add(got[1], docs, repeat(1 << s))  # each source once per document: adding is or-ing
        if len(self._terms) * self.size >= self.MAX_CACHED:
            self._terms.clear()
        self._terms[key] = got
        return got

    def _phrase(self, total: array[int], phrase: str, sources: Sequence[tuple[str, int, int]], k: int,
                allowed: array[int] | None) -> int:
        """Add each source's phrase bonus to `total` where it can change the top k; returns a lower bound
        of the k-th best score. Sources are taken cheapest first; before each, the bonuses still to come
        bound what any document can gain, so once the k-th best score less that bound leaves few
        documents in reach, only their texts are searched (a document out of reach scores below the
        k-th best whatever its phrase bonuses)."""
        n = self.size
        order = sorted(range(len(sources)), key=lambda s: len(self.index.texts[s]))
        reach = sum(sources[s][1] for s in order)
        kth = _kth(total, k)  # a lower bound of the k-th best final score, raised as bonuses are added
        # A word of the phrase with whitespace on both sides is a whole word wherever the phrase occurs:
        # a source can hold the phrase only where it holds every such word.
        inner = {w for chunk in phrase.split()[1:-1] for w in word_counts(chunk)}
        holds: array[int] | None = None  # bit s: the document's source s has every inner word
        for word in inner:
            got_word = self._term(word, tuple(w for _, _, w in sources))
            if got_word is None:
                return kth
            holds = got_word[1] if holds is None else array("B", map(and_, holds, got_word[1]))
        near: list[int] | None = None
        for s in order:
            floor = kth - reach
            if near is not None:
                near = [d for d in near if total[d] >= floor]
            elif floor > 0:
                got = list(compress(range(n), map(ge, total, repeat(floor))))
                if len(got) <= n // 4:
                    near = got
            if holds is not None:
                bit = 1 << s
                texts = self.texts(s)
                maybe = compress(range(n), map(and_, holds, repeat(bit))) if near is None else \
                    (d for d in near if holds[d] & bit)
                docs = [d for d in maybe if phrase in texts[d] and (allowed is None or allowed[d])]
            elif near is not None:
                texts = self.texts(s)
                docs = [d for d in near if phrase in texts[d]]
            else:
                docs = self._phrase_docs(s, phrase)
                if allowed is not None:
                    docs = [d for d in docs if allowed[d]]
            _scatter_add(total, docs, repeat(sources[s][1]))
            reach -= sources[s][1]
            if len(docs) >= k:
                kth = max(kth, sorted(total[d] for d in docs)[-k])
        return kth

    def _phrase_docs(self, s: int, phrase: str) -> list[int]:
        """The documents whose source `s` holds `phrase`: one search through the joined text when it is
        rare, one test per document when it is common."""
        text, starts = self.index.texts[s], self.index.offsets[s]
        count = text.count(phrase)
        if count == 0:
            return []
        if count > len(starts) // 16:
            return list(compress(range(self.size), map(contains, self.texts(s), repeat(phrase))))
        out: list[int] = []
        pos = text.find(phrase)
        while pos >= 0:
            doc = bisect.bisect_right(starts, pos) - 1
            out.append(doc)
            nxt = starts[doc + 1] if doc + 1 < len(starts) else len(text)
            pos = text.find(phrase, nxt)
        return out

    def top(self, phrase: str, weights: Mapping[str, int], sources: Sequence[tuple[str, int, int]], k: int,
            *, allowed: array[int] | None = None, bonus: int = 0) -> list[tuple[int, int, int]]:
        """The best `k` documents as (score, document number, bit mask of matched sources), by score
        then path then id; documents scoring 0 or less, or not `allowed`, are left out."""
        n = self.size
        if n == 0 or k <= 0:
            return []
        term_weights = tuple(w for _, _, w in sources)
        total: array[int] | None = None
        fresh = False  # whether `total` is this call's own array (a cached term's must not change)
        masks = []
        for term, weight in weights.items():
            cached = self._term(term, term_weights)
            if cached is None:
                continue
            dense = cached[0]
            masks.append(cached[1])
            if total is None:
                total, fresh = (dense, False) if weight == 1 else (array("q", map(mul, dense, repeat(weight))), True)
            else:
                total = array("q", map(add, total, dense if weight == 1 else map(mul, dense, repeat(weight))))
                fresh = True
        with_phrase = bool(phrase) and "\0" not in phrase
        if total is None:
            total = array("q", bytes(8 * n))
        elif not fresh:
            total = array("q", total)
        if bonus:
            total = array("q", map(add, total, repeat(bonus)))
        if allowed is not None:
            total = array("q", map(mul, total, allowed))
        # At least the k-th best score (any lower bound of it is exact here: it only lets more documents
        # into the sort below).
        floor = max(self._phrase(total, phrase, sources, k, allowed) if with_phrase else _kth(total, k), 1)
        picked = list(compress(range(n), map(ge, total, repeat(floor))))
        ranks = self.ranks()
        picked.sort(key=lambda d: (-total[d], ranks[d]))
        out = []
        for doc in picked[:k]:
            mask = 0
            for m in masks:
                mask |= m[doc]
            if with_phrase:
                for s in range(len(sources)):
                    if phrase in self.texts(s)[doc]:
                        mask |= 1 << s
            out.append((total[doc], doc, mask))
        return out


def _kth(values: array[int], k: int) -> int:
    """The k-th largest value (the smallest when there are fewer)."""
    return sorted(values, reverse=True)[min(k, len(values)) - 1]


def _scatter_add(dense: array[int], docs: Sequence[int], values: Iterable[int]) -> None:
    """dense[d] += v for each (d, v), in C (`map` over the array's own methods); `docs` distinct."""
    deque(map(dense.__setitem__, docs, map(add, map(dense.__getitem__, docs), values)), maxlen=0)
