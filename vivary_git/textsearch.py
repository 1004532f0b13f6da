"""Words of any script, for `query`, `find` and the lexical side of `recall`.

One rule for every script, chosen so that ASCII text reads exactly as the contract's `[a-z0-9]+`
terms did:

- **Folding**: text is Unicode-normalised (NFKC: full-width `ＡＰＩ` is `api`, `ﬁ` is `fi`, a
  decomposed `a` + U+0308 is `ä`) and case-folded (`Straße` is `strasse`, `Σ`/`ς` are `σ`). ASCII
  text is only lower-cased (the same thing, faster).
- **Words**: maximal runs of word characters: Unicode letters and digits (Python's `\\w`, `_`
  included) and the combining marks of the common scripts (Devanagari vowel signs, Arabic and Hebrew
  points), so `naïve`, `ссылки`, `λόγος` and `हिन्दी` are one word each.
- **CJK** (Han, Hiragana, Katakana, Hangul, Bopomofo) has no spaces between words: a run of it is
  cut out of its word (`API设计` is `api` and `设计`) and read as overlapping character bigrams
  (`内部链接`: `内部`, `部链`, `链接`). A document also counts each CJK character on its own, so a
  one-character query (`链`) finds it; a query uses a single character only when it is all the run
  has, so longer queries are not diluted by common single characters.

A query term is a word without `_` (`token_id` asks for `token` and `id`, which a document's
`token_id` never equals, as before) or a CJK gram; a document's term hits are its words equal to
the term, counted.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter

# Combining marks of the common scripts (Latin ones mostly compose away under NFKC). Indic blocks are
# taken whole but for their dandas (sentence stops): their marks sit between letters of one word.
_MARKS = (
    "\u0300-\u036f\u0483-\u0489\u0591-\u05bd\u05bf\u05c1\u05c2\u05c4\u05c5\u05c7\u0610-\u061a\u064b-\u065f"
    "\u0670\u06d6-\u06dc\u06df-\u06e4\u06e7\u06e8\u06ea-\u06ed\u0900-\u0963\u0966-\u0dff\u1ab0-\u1aff"
    "\u1dc0-\u1dff\u20d0-\u20ff\u302a-\u302f\u3099\u309a\ufe20-\ufe2f"
)
_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3041-\u3096\u3099-\u309f\u30a1-\u30fa\u30fc-\u30ff"
    "\u3105-\u312f\u3131-\u318e\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7af"
    "\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
_WORD = re.compile(rf"[\w{_MARKS}]+")
_ASCII_WORD = re.compile(r"\w+")
_CJK_RUN = re.compile(f"[{_CJK}]+")
_HAS_CJK = re.compile(f"[{_CJK}]")


def fold(text: str) -> str:
    """NFKC, case-folded (see the module docstring); ASCII text is only lower-cased."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def has_cjk(text: str) -> bool:
    return _HAS_CJK.search(text) is not None


def _split(word: str) -> list[tuple[str, bool]]:
    """A word as (piece, is_cjk) pieces, CJK runs cut out of it."""
    if not _HAS_CJK.search(word):
        return [(word, False)]
    out: list[tuple[str, bool]] = []
    at = 0
    for m in _CJK_RUN.finditer(word):
        if m.start() > at:
            out.append((word[at:m.start()], False))
        out.append((m.group(0), True))
        at = m.end()
    if at < len(word):
        out.append((word[at:], False))
    return out


def _grams(run: str, unigrams: bool) -> list[str]:
    """Bigrams of a CJK run, with its characters too when `unigrams` (or when it has only one)."""
    if len(run) == 1:
        return [run]
    grams = [run[i:i + 2] for i in range(len(run) - 1)]
    return [*run, *grams] if unigrams else grams


def words(folded: str) -> list[str]:
    """A document's terms, in order, from text already `fold`ed: words, and CJK characters and bigrams."""
    if folded.isascii():
        return _ASCII_WORD.findall(folded)
    if not _HAS_CJK.search(folded):
        return _WORD.findall(folded)
    out: list[str] = []
    for word in _WORD.findall(folded):
        for piece, cjk in _split(word):
            if cjk:
                out.extend(_grams(piece, True))
            else:
                out.append(piece)
    return out


def word_counts(folded: str) -> Counter[str]:
    """How often each term occurs in `folded` text (see `words`), terms with `_` left out: no query has them."""
    counts = Counter(words(folded))
    for w in [w for w in counts if "_" in w]:
        del counts[w]
    return counts


def query_terms(text: str) -> tuple[list[str], list[str]]:
    """(words, CJK grams) of a query, in order: words are runs of letters, digits and marks (`_`
    splits), grams the bigrams of each CJK run (its one character when that is all it has)."""
    found: list[str] = []
    grams: list[str] = []
    for word in _WORD.findall(fold(text)):
        for part in word.split("_"):
            for piece, cjk in _split(part) if part else ():
                if cjk:
                    grams.extend(_grams(piece, False))
                else:
                    found.append(piece)
    return found, grams
