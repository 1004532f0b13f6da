"""Deterministic text search over typed nodes, and `find`'s budgeted context for agents.

Scoring is the contract's: terms minus stopwords; per source a phrase bonus (the raw query as a
substring) plus a bonus per whole-word hit of each term — id+title 120/40, frontmatter 80/24, path
60/16, body 40/10, outbound-edge text 30/8; +20 per edge filter; score ≤ 0 dropped; sorted by
(-score, path, id). The contract's terms are `[a-z0-9]+`; ours are words of any script and CJK
bigrams (`textsearch.py`), which on ASCII text are exactly those.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Container, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.errors import UsageError
from vivary_git.graph import Graph
from vivary_git.models import Edge, Node, Note
from vivary_git.textsearch import fold, query_terms, word_counts

if TYPE_CHECKING:
    from vivary_git.searchindex import SearchIndex

STOPWORDS = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "by", "do", "does", "for", "from", "how", "i", "in", "is", "it",
    "of", "on", "or", "our", "the", "this", "to", "we", "what", "where", "which", "who", "why",
))
_SPACE = re.compile(r"\s+")
# (source name in reasons, phrase weight, per-hit term weight)
SOURCES = (
    ("title/id match", 120, 40),
    ("frontmatter match", 80, 24),
    ("path match", 60, 16),
    ("body match", 40, 10),
    ("edge context match", 30, 8),
)
EDGE_FILTER_BONUS = 20
DEFAULT_SNIPPET = 160


class EdgeRef(msgspec.Struct, frozen=True):
    field: str
    to: str


class QueryFilters(msgspec.Struct, frozen=True):
    type: list[str]
    path: list[str]
    edge: list[str]


class QueryHit(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    type: str | None
    path: str
    title: str
    score: int
    snippet: str | None = None
    reasons: list[str] | None = None
    edges: list[EdgeRef] | None = None


class QueryResult(msgspec.Struct, frozen=True):
    query: str
    k: int
    mode: str
    filters: QueryFilters
    results: list[QueryHit]


def terms_of(text: str) -> list[str]:
    """The query's terms: its words minus stopwords (all of them when every one is a stopword), then
    its CJK grams (`textsearch.query_terms`)."""
    found, grams = query_terms(text)
    kept = [t for t in found if t not in STOPWORDS] + grams
    return kept or found


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


def parse_edge_filter(spec: str) -> tuple[str, str]:
    field, _, target = spec.partition(":")
    return field.strip(), target.strip()


def make_filter(
    types: Sequence[str], paths: Sequence[str], edge_specs: Sequence[str], outgoing: Mapping[str, list[Edge]]
) -> Callable[[Node], bool]:
    type_set = set(types)
    edge_filters = [parse_edge_filter(s) for s in edge_specs]

    def keep(node: Node) -> bool:
        if type_set and (node.type or "") not in type_set:
            return False
        if paths and not any(fnmatchcase(node.path, g) for g in paths):
            return False
        out = outgoing.get(node.id, [])
        return all(
            any((not f or e.field == f) and (not t or e.to == t) for e in out) for f, t in edge_filters
        )

    return keep


def outgoing_edges(graph: Graph) -> dict[str, list[Edge]]:
    """Non-broken outbound edges by source ID, in sorted order."""
    out: dict[str, list[Edge]] = {}
    for e in graph.edges:
        if not e.broken:
            out.setdefault(e.from_, []).append(e)
    return out


def search(
    graph: Graph,
    notes: Mapping[str, Note],
    text: str,
    *,
    k: int = 10,
    types: Sequence[str] = (),
    paths: Sequence[str] = (),
    edges: Sequence[str] = (),
    snippet: int = DEFAULT_SNIPPET,
    explain: bool = False,
    index: SearchIndex | None = None,
    outgoing: Mapping[str, list[Edge]] | None = None,
    exclude: Container[str] = frozenset(),
) -> QueryResult:
    """Rank the graph's nodes for `text`. With an `index` (built from the same graph and notes) the
    answer is identical and only the top results' notes are read (for snippets). `outgoing`, when a
    caller asking many questions of one graph has it, is `outgoing_edges(graph)`. Nodes whose id is in
    `exclude` are never hits (archived or expired memories, docs/dream.md)."""
    if not text.strip():
        raise UsageError('provide a search query, e.g. `git vivary query "auth module"`')
    phrase = fold(text).strip()
    terms = terms_of(text)
    weights = Counter(terms)  # a repeated term counts each time it is repeated
    # In ASCII text a term (`[a-z0-9]+` there) matches exactly where a whole \w+ run equals it, so
    # `\bterm\b` finds every term's hits in one pass per source; other text is cut into its words.
    words = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in sorted(weights, key=len, reverse=True)) + r")\b")
    # Outbound edges are wanted only to filter by them, to show them, or to score without an index;
    # grouping every edge of a big graph is a good part of a warm query otherwise.
    if outgoing is None:
        outgoing = outgoing_edges(graph) if (edges or explain or index is None) else {}
    keep = make_filter(types, paths, edges, outgoing)
    bonus = EDGE_FILTER_BONUS * len(edges)
    scored: list[tuple[int, Node, list[str]]] = []
    if index is not None:
        from vivary_git.searchindex import score as index_score

        matched = index_score(index, phrase, weights, SOURCES)
        for i, node in enumerate(graph.nodes):
            got, mask = matched.get(i, (0, 0))
            if not (got or bonus) or not keep(node) or (exclude and node.id in exclude):
                continue
            why = [SOURCES[b][0] for b in range(len(SOURCES)) if mask >> b & 1]
            if bonus:
                got += bonus
                why.append("edge filter match")
            if got > 0:
                scored.append((got, node, why))
    for node in graph.nodes if index is None else ():
        if not keep(node) or (exclude and node.id in exclude):
            continue
        sources = node_sources(node, notes[node.blob], outgoing.get(node.id, []))
        score = 0
        reasons: list[str] = []
        for (reason, w_phrase, w_term), source in zip(SOURCES, sources, strict=True):
            low = fold(source)
            got = w_phrase if phrase in low else 0
            if any(t in low for t in weights):
                if low.isascii():
                    got += w_term * sum(weights[w] for w in words.findall(low))
                else:
                    counts = word_counts(low)
                    got += w_term * sum(weights[t] * counts[t] for t in weights)
            if got or phrase in low:
                score += got
                reasons.append(reason)
        if bonus:
            score += bonus
            reasons.append("edge filter match")
        if score > 0:
            scored.append((score, node, reasons))
    scored.sort(key=lambda s: (-s[0], s[1].path, s[1].id))
    hits: list[QueryHit] = []
    for score, node, reasons in scored[: max(k, 0)]:
        note = notes[node.blob]
        snip = make_snippet(note, node, phrase, terms, snippet) if snippet > 0 else ""
        hits.append(QueryHit(
            id=node.id, type=node.type, path=node.path, title=node.title, score=score,
            snippet=snip or None,
            reasons=reasons if explain else None,
            edges=[EdgeRef(e.field, e.to) for e in outgoing.get(node.id, [])] if (explain or edges) else None,
        ))
    return QueryResult(
        query=text, k=k, mode="text",
        filters=QueryFilters(type=list(types), path=list(paths), edge=list(edges)), results=hits,
    )


def make_snippet(note: Note, node: Node, phrase: str, terms: Sequence[str], width: int) -> str:
    source = note.body if note.body.strip() else (frontmatter_text(note.fields) or node.title)
    text = _SPACE.sub(" ", source).strip()
    low = fold(text)
    positions = [p for p in (low.find(n) for n in (phrase, *terms) if n) if p >= 0]
    start = min(positions) if positions else 0
    if len(low) != len(text):  # folding changed the length (`ß` is `ss`): place the window proportionally
        start = start * len(text) // max(len(low), 1)
    if len(text) <= width:
        return text
    left = max(0, start - width // 2)
    right = min(len(text), left + width)
    if right - left < width:
        left = max(0, right - width)
    out = text[left:right].strip()
    return ("..." if left > 0 else "") + out + ("..." if right < len(text) else "")


class FindHit(msgspec.Struct, omit_defaults=True):
    id: str
    type: str | None
    path: str
    reason: str
    snippet: str | None = None
    edges: list[EdgeRef] | None = None


class FindResult(msgspec.Struct, frozen=True):
    query: str
    k: int
    budget: int
    estimated_tokens: int
    filters: QueryFilters
    results: list[FindHit]


def estimate_tokens(hits: Sequence[FindHit]) -> int:
    """~4 characters a token, over the results as compact-ish sorted JSON (what an agent pays for)."""
    plain = [msgspec.to_builtins(h) for h in hits]
    return math.ceil(len(json.dumps(plain, ensure_ascii=False, sort_keys=True)) / 4)


def find(
    graph: Graph,
    notes: Mapping[str, Note],
    text: str,
    *,
    k: int = 5,
    budget: int = 1200,
    types: Sequence[str] = (),
    paths: Sequence[str] = (),
    edges: Sequence[str] = (),
    snippet: int = DEFAULT_SNIPPET,
    index: SearchIndex | None = None,
) -> FindResult:
    """Context for a task within a token budget: drop snippets, then edges, then trailing hits, then reasons."""
    if k < 1 or budget < 1:
        raise UsageError(f"find needs k ≥ 1 and budget ≥ 1 (got k={k}, budget={budget})")
    q = search(graph, notes, text, k=k, types=types, paths=paths, edges=edges, snippet=snippet, explain=True,
               index=index)
    hits = [
        FindHit(h.id, h.type, h.path, "; ".join(h.reasons or []) or "matches the task query", h.snippet,
                h.edges or None)
        for h in q.results
    ]
    _trim(hits, budget)
    return FindResult(
        query=text, k=k, budget=budget, estimated_tokens=estimate_tokens(hits), filters=q.filters, results=hits
    )


def _trim(hits: list[FindHit], budget: int) -> None:
    def over() -> bool:
        return estimate_tokens(hits) > budget

    while over() and any(h.snippet for h in hits):
        for h in hits:
            if h.snippet:
                h.snippet = None if len(h.snippet) <= 80 else h.snippet[: max(40, len(h.snippet) // 2)].rstrip()
    if over():
        for h in hits:
            h.edges = None
    while over() and len(hits) > 1:
        hits.pop()
    for h in hits:
        if over() and ";" in h.reason:
            h.reason = h.reason.split(";", 1)[0]
        if over() and len(h.reason) > 24:
            h.reason = "query match"
        elif len(h.reason) > 80:
            h.reason = h.reason[:77] + "..."
