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
from collections.abc import Mapping, Sequence
from typing import Any

import msgspec

from vivary_git.graph import Graph
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
