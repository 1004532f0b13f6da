"""Deterministic text search over typed nodes, and `find`'s budgeted context for agents.

Scoring is the contract's: terms minus stopwords; per source a phrase bonus (the raw query as a
substring) plus a bonus per whole-word hit of each term — id+title 120/40, frontmatter 80/24, path
60/16, body 40/10, outbound-edge text 30/8; +20 per edge filter; score ≤ 0 dropped; sorted by
(-score, path, id). The contract's terms are `[a-z0-9]+`; ours are words of any script and CJK
bigrams (`textsearch.py`), which on ASCII text are exactly those.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

import msgspec

from vivary_git import findrank
from vivary_git.dialects import path_matches
from vivary_git.errors import UsageError
from vivary_git.graph import Graph, resolve_edge_specs
from vivary_git.models import Edge, Node, Note
from vivary_git.searchindex import Ranker, SearchIndex, node_sources
from vivary_git.searchindex import frontmatter_text as frontmatter_text  # the scored sources live with the index
from vivary_git.searchindex import outgoing_edges as outgoing_edges
from vivary_git.textsearch import fold, query_terms, word_counts

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


def parse_edge_filter(spec: str) -> tuple[str, str]:
    field, _, target = spec.partition(":")
    return field.strip(), target.strip()


def make_filter(
    types: Sequence[str], paths: Sequence[str], edge_specs: Sequence[str], outgoing: Mapping[str, list[Edge]]
) -> Callable[[Node], bool]:
    type_set = set(types)
    if "untyped" in type_set:
        type_set.add("")  # as `graph --type untyped` says it: the notes of no type
    edge_filters = [parse_edge_filter(s) for s in edge_specs]

    def keep(node: Node) -> bool:
        if type_set and (node.type or "") not in type_set:
            return False
        if paths and not path_matches(node.path, paths):
            return False
        out = outgoing.get(node.id, [])
        return all(
            any((not f or e.field == f) and (not t or e.to == t) for e in out) for f, t in edge_filters
        )

    return keep


Hidden = AbstractSet[str] | Callable[[Collection[str]], AbstractSet[str]]
"""What search must not show: the IDs themselves, or a function telling which of the IDs it is given are
hidden (asked only about the best candidates and their edge targets: `hidden.PrivateNodes`)."""


def search(
    graph: Graph,
    notes: Mapping[str, Note],
    text: str,
    *,
    k: int = 10,
    types: Sequence[str] = (),
    paths: Sequence[str] = (),
    edges: Sequence[str] = (),
    prefix: str = "",
    snippet: int = DEFAULT_SNIPPET,
    explain: bool = False,
    index: SearchIndex | None = None,
    hidden: Hidden,
    outgoing: Mapping[str, list[Edge]] | None = None,
    ranker: Ranker | None = None,
    exclude: AbstractSet[str] = frozenset(),
) -> QueryResult:
    """Rank the graph's nodes for `text`. With an `index` (built from the same graph and notes) the
    answer is identical and only the top results' notes are read (for snippets).

    `hidden`: the nodes that must not show (`hidden.PrivateNodes(ws)` or `hidden.hidden_ids(ws)`, the
    privacy boundary's private notes; an empty set only when the owner asks for every note). They are
    never results, never listed as an edge's target, never match an `--edge` filter, and their IDs are
    not edge text that scores another node. Required, so that no caller forgets it.

    `edges`: `FIELD:TARGET` filters, each TARGET a node's ID or a name as a link writes it (`graph.resolve_node`;
    `prefix`: the workspace's folder, for a path from the repository's top). A TARGET naming a hidden note stays
    as written in the answer's `filters`: its ID is not shown, and no edge to it passes anyway.

    `exclude`: nodes that are never hits but stay what they are to the others (archived or expired
    memories, docs/dream.md; the vault's Excluded files, `excluded.excluded_ids`).

    `outgoing`, when a caller asking many questions of one graph has it, is `outgoing_edges(graph)`;
    `ranker`, such a caller's `searchindex.Ranker` of the index (it keeps each term's scores between
    questions)."""
    if not text.strip() and not edges:
        raise UsageError('provide a search query, e.g. `git vivary query "auth module"`, or an --edge filter to list '
                         'the nodes that have that edge')
    edges = resolve_edge_specs(graph, edges, prefix=prefix, hidden=_asker(hidden))
    phrase = fold(text).strip()
    if not phrase:
        # No text, only edge filters (the published tropo answers `query "" --edge F:T` so): every node that passes
        # them scores the edge bonus alone, so the answer lists them by path, then ID. No note is read to score.
        index = None
    terms = terms_of(text)
    weights = Counter(terms)  # a repeated term counts each time it is repeated
    # In ASCII text a term (`[a-z0-9]+` there) matches exactly where a whole \w+ run equals it, so
    # `\bterm\b` finds every term's hits in one pass per source; other text is cut into its words.
    words = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in sorted(weights, key=len, reverse=True)) + r")\b")
    # Outbound edges are wanted only to filter by them, to show them, or to score without an index;
    # grouping every edge of a big graph is a good part of a warm query otherwise.
    given = outgoing is not None
    everyone = bool(edges or explain or index is None)
    if outgoing is None:
        outgoing = outgoing_edges(graph) if everyone else {}
    out_of = _edges_of(graph, outgoing if (everyone or given) else None)
    edge_filters = [parse_edge_filter(s) for s in edges]
    keep = make_filter(types, paths, edges, outgoing)
    if exclude:
        kept = keep
        keep = lambda node: node.id not in exclude and kept(node)  # noqa: E731
    bonus = EDGE_FILTER_BONUS * len(edges)

    def direct(node: Node, out: Sequence[Edge]) -> tuple[int, list[str]]:
        score = 0
        reasons: list[str] = []
        sources = node_sources(node, notes[node.blob], out) if phrase else ()
        for (reason, w_phrase, w_term), source in zip(SOURCES[:len(sources)], sources, strict=True):
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
        return score, reasons

    def rescore(node: Node, out: Sequence[Edge]) -> tuple[int, list[str]] | None:
        """A node's score without its edges to hidden nodes (None when it no longer passes the filters)."""
        if not _edges_pass(edge_filters, out):
            return None
        score, reasons = direct(node, out)
        return (score, reasons) if score > 0 else None

    asker = _asker(hidden)
    top: list[tuple[int, Node, list[str], list[Edge]]]
    if index is not None:
        ranker = ranker if ranker is not None and ranker.index is index else Ranker(index, graph)
        nodes = graph.nodes
        allowed = ranker.allowed((tuple(types), tuple(paths), tuple(edges), frozenset(exclude)),
                                 lambda i: keep(nodes[i])) if (types or paths or edges or exclude) else None
        # The index gives the best `want` by score with every edge; hidden nodes may take places in
        # them, so ask for more until the public best `k` are known to rank before every node left out.
        want = max(k, 0)
        while True:
            scored: list[tuple[int, Node, list[str]]] = []
            for got, i, mask in ranker.top(phrase, weights, SOURCES, want, allowed=allowed, bonus=bonus):
                why = [SOURCES[b][0] for b in range(len(SOURCES)) if mask >> b & 1]
                if bonus:
                    why.append("edge filter match")
                scored.append((got, nodes[i], why))
            top = _public_top(scored, max(k, 0), asker, out_of, rescore)
            if len(scored) < want or want <= 0 or (len(top) >= k and _rank(top[-1]) <= _rank(scored[-1])):
                break
            want *= 4
    else:
        scored = []
        for node in graph.nodes:
            if not keep(node):
                continue
            score, reasons = direct(node, outgoing.get(node.id, []))
            if score > 0:
                scored.append((score, node, reasons))
        scored.sort(key=_rank)
        top = _public_top(scored, max(k, 0), asker, out_of, rescore)
    hits: list[QueryHit] = []
    for score, node, reasons, out in top:
        note = notes[node.blob]
        snip = make_snippet(note, node, phrase, terms, snippet) if snippet > 0 else ""
        hits.append(QueryHit(
            id=node.id, type=node.type, path=node.path, title=node.title, score=score,
            snippet=snip or None,
            reasons=reasons if explain else None,
            edges=[EdgeRef(e.field, e.to) for e in out] if (explain or edges) else None,
        ))
    return QueryResult(
        query=text if phrase else "", k=k, mode="text",
        filters=QueryFilters(type=list(types), path=list(paths), edge=list(edges)), results=hits,
    )


def _rank(hit: tuple[Any, ...]) -> tuple[int, str, str]:
    """(score, node, …) → its place: score descending, then path, then ID."""
    node: Node = hit[1]
    return -hit[0], node.path, node.id


def _asker(hidden: Hidden) -> Callable[[Collection[str]], AbstractSet[str]]:
    if callable(hidden):
        return hidden
    return lambda ids: {i for i in ids if i in hidden} if hidden else set()


def _edges_of(graph: Graph, outgoing: Mapping[str, list[Edge]] | None) -> Callable[[str], list[Edge]]:
    """A node's non-broken outbound edges: from `outgoing` when it was built, else found by bisection
    in the graph's edges (sorted by source), for the few nodes asked about."""
    if outgoing is not None:
        return lambda node_id: outgoing.get(node_id, [])
    sources: list[str] = []

    def out_of(node_id: str) -> list[Edge]:
        if not sources:
            sources.extend(e.from_ for e in graph.edges)
        lo = bisect.bisect_left(sources, node_id)
        hi = bisect.bisect_right(sources, node_id, lo)
        return [e for e in graph.edges[lo:hi] if not e.broken]

    return out_of


def _edges_pass(filters: Sequence[tuple[str, str]], out: Sequence[Edge]) -> bool:
    return all(any((not f or e.field == f) and (not t or e.to == t) for e in out) for f, t in filters)


def _public_top(
    scored: list[tuple[int, Node, list[str]]],
    k: int,
    hidden: Callable[[Collection[str]], AbstractSet[str]],
    out_of: Callable[[str], list[Edge]],
    rescore: Callable[[Node, Sequence[Edge]], tuple[int, list[str]] | None],
) -> list[tuple[int, Node, list[str], list[Edge]]]:
    """The best `k` of `scored` (sorted, scored with every edge) once hidden nodes are left out and
    every other node is scored again without its edges to them. Privacy is asked about the best
    candidates and their edge targets only, a growing batch at a time: leaving edges out never raises
    a score, so once `k` kept hits rank before the next candidate's score with every edge, no later
    candidate can beat them."""
    chosen: list[tuple[int, Node, list[str], list[Edge]]] = []
    i, batch = 0, max(4 * k, 64)
    while i < len(scored) and k > 0:
        if len(chosen) >= k:
            chosen.sort(key=_rank)
            if _rank(chosen[k - 1]) < _rank(scored[i]):
                break
        part = scored[i:i + batch]
        i, batch = i + len(part), batch * 2
        outs = {node.id: out_of(node.id) for _, node, _ in part}
        asked = set(outs)
        for out in outs.values():
            asked.update(e.to for e in out)
        gone = hidden(asked)
        for score, node, reasons in part:
            if node.id in gone:
                continue
            out = outs[node.id]
            if gone and any(e.to in gone for e in out):
                out = [e for e in out if e.to not in gone]
                again = rescore(node, out)
                if again is None:
                    continue
                score, reasons = again
            chosen.append((score, node, reasons, out))
    chosen.sort(key=_rank)
    return chosen[:k]


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
    prefix: str = "",
    snippet: int = DEFAULT_SNIPPET,
    index: SearchIndex | None = None,
    hidden: Hidden,
    exclude: AbstractSet[str] = frozenset(),
) -> FindResult:
    """Context for a task within a token budget: drop snippets, then edges, then trailing hits, then reasons.
    `hidden` as in `search`: for an agent, always `hidden.PrivateNodes(ws)` (or `hidden.hidden_ids(ws)`);
    `edges`, `prefix` and `exclude` as in `search`."""
    if k < 1 or budget < 1:
        raise UsageError(f"find needs k ≥ 1 and budget ≥ 1 (got k={k}, budget={budget})")
    # `query`'s best (its filters and privacy boundary applied), ordered again for a question (findrank.py).
    q = search(graph, notes, text, k=findrank.pool_size(k), types=types, paths=paths, edges=edges, prefix=prefix,
               snippet=0, explain=True, index=index, hidden=hidden, exclude=exclude)
    by_id = graph.by_id()
    pool = [by_id[h.id] for h in q.results]
    ranked = findrank.order(pool, notes, [[Edge(h.id, e.field, e.to) for e in h.edges or ()] for h in q.results],
                            terms_of(text), text)[:k]
    phrase, terms = fold(text).strip(), terms_of(text)
    hits = []
    for i in ranked:
        h, node = q.results[i], pool[i]
        snip = make_snippet(notes[node.blob], node, phrase, terms, snippet) if snippet > 0 else ""
        hits.append(FindHit(h.id, h.type, h.path, "; ".join(h.reasons or []) or "matches the task query",
                            snip or None, h.edges or None))
    _trim(hits, budget)
    return FindResult(
        query=text, k=k, budget=budget, estimated_tokens=estimate_tokens(hits), filters=q.filters, results=hits
    )


class _Trimmable(Protocol):
    snippet: str | None
    edges: list[EdgeRef] | None


def trim_hits(hits: list[Any], over: Callable[[], bool], first: Sequence[str] = ()) -> None:
    """Shrink `hits` (each with `snippet` and `edges`) until `over()` is false: clear each attribute named in
    `first`, then halve and drop snippets, then drop edges, then trailing hits (one is always kept).
    `find` and the MCP server's search trim their answers by the same steps."""
    for attr in first:
        if over():
            for h in hits:
                setattr(h, attr, None)
    items: list[_Trimmable] = hits
    while over() and any(h.snippet for h in items):
        for h in items:
            if h.snippet:
                h.snippet = None if len(h.snippet) <= 80 else h.snippet[: max(40, len(h.snippet) // 2)].rstrip()
    if over():
        for h in items:
            h.edges = None
    while over() and len(hits) > 1:
        hits.pop()


def _trim(hits: list[FindHit], budget: int) -> None:
    def over() -> bool:
        return estimate_tokens(hits) > budget

    trim_hits(hits, over)
    for h in hits:
        if over() and ";" in h.reason:
            h.reason = h.reason.split(";", 1)[0]
        if over() and len(h.reason) > 24:
            h.reason = "query match"
        elif len(h.reason) > 80:
            h.reason = h.reason[:77] + "..."
