"""The MCP service's read side: `search`, `read`, `status`, `recent`, `context` and the resources (a node, the
MEMORY.md digest).

Privacy: every node, edge, search hit and neighbour comes from the privacy-filtered snapshot
(`memory/snapshot.py`); a private node is absent, never named, and asking for a private file by
path is refused with the reason. Search is hybrid (or semantic, or BM25 keyword) over the semantic index when
that index is the current snapshot's, filters applied before ranking; otherwise the contract's keyword scoring
over the warm state's index, with the changed notes searched beside it.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.context import with_own_size
from vivary_git.errors import RefusedError, UsageError, VivaryError
from vivary_git.mcp.profiles import PROFILES, RESOURCES
from vivary_git.mcp.usermem import UserStatus
from vivary_git.mcp.warm import State, Warm
from vivary_git.memory.writes.remember import EdgeRef

if TYPE_CHECKING:
    from vivary_git.context import Context
    from vivary_git.mcp.paging import Window
    from vivary_git.memory.local.recall import RecallSession, SessionMode
    from vivary_git.memory.writes.history import Recent
    from vivary_git.memory.writes.remember import View
    from vivary_git.models import Note


MAX_TOP_K = 50
MAX_HOPS = 3
MAX_NEIGHBORS = 50
MAX_QUERY = 2000
DEFAULT_BUDGET = 1200
MAX_BUDGET = 100_000
SNIPPET = 160
_CONTENT_LIMIT = 20_000
# Why an answer is in the mode it says, when the semantic index is fresh.
_WHY = {
    "hybrid": "semantic memory fused with keywords",
    "semantic": "semantic memory alone",
    "text": "keyword search: BM25, the keyword half of hybrid",
}


def _edge(spec: str) -> str:
    """One `edge` filter of search, checked as the CLI's `--edge` is: one naming neither a field nor a target
    (`''`, `':'`) would match every edge, so it is refused, naming the argument and the forms it takes."""
    import argparse

    from vivary_git.commands._common import edge_spec

    try:
        return edge_spec(spec)
    except argparse.ArgumentTypeError as err:
        raise UsageError(f"edge: {err}") from None

class Neighbor(msgspec.Struct, frozen=True):
    id: str
    type: str | None
    title: str
    distance: int
    via: str  # the edge field that reached it
    direction: str  # "out": reached along an edge from the nearer node; "in": along an edge into it


class SearchHit(msgspec.Struct, omit_defaults=True):
    id: str
    type: str | None
    path: str
    title: str
    score: float
    reason: str
    snippet: str | None = None
    content: str | None = None
    edges: list[EdgeRef] | None = None
    neighbors: list[Neighbor] | None = None
    scope: str | None = None  # "user": from the user memory (mcp/usermem.py); none: from the workspace


class UserSearch(msgspec.Struct, frozen=True, omit_defaults=True):
    """How the user memory answered a search beside the workspace (mcp/usermem.py)."""

    path: str | None
    mode: str | None = None  # its own mode: "text" | "semantic" | "hybrid"
    mode_reason: str | None = None
    hidden: int = 0
    problem: str | None = None  # why a configured user memory was not searched


class SearchFilters(msgspec.Struct, frozen=True, omit_defaults=True):
    type: list[str]
    path: list[str]
    edge: list[str]
    since: str | None = None  # the time window (mcp/paging.py), on the note's date or its commit's
    until: str | None = None
    date: str | None = None


class SearchAnswer(msgspec.Struct, frozen=True, omit_defaults=True):
    query: str
    mode: str  # "text" | "semantic" | "hybrid"
    mode_reason: str
    top_k: int
    budget: int
    estimated_tokens: int
    filters: SearchFilters
    results: list[SearchHit]
    tree: str | None  # the working tree the answer comes from, as a Git tree id
    hidden: int = 0  # archived or expired memories left out (docs/dream.md)
    dream_due: str | None = None
    next_cursor: str | None = None  # the next page: pass it as `cursor` with the same question
    scope: str | None = None  # "all" | "user" when the user memory was searched too (mcp/usermem.py)
    user: UserSearch | None = None


class InEdge(msgspec.Struct, frozen=True):
    source: str = msgspec.field(name="from")
    field: str = ""


class OutEdge(msgspec.Struct, frozen=True):
    field: str
    to: str


class NodePacket(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    type: str | None
    path: str
    title: str
    frontmatter: dict[str, Any]
    outbound: list[OutEdge]
    inbound: list[InEdge]
    neighbors: list[Neighbor]
    tree: str | None
    content: str | None = None
    problem: str | None = None  # E000/E001: why the frontmatter could not be read
    scope: str | None = None  # "user": a node of the user memory (mcp/usermem.py)


class Status(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    workspace: dict[str, Any]
    tree: dict[str, Any]
    nodes: dict[str, int]
    memory: dict[str, Any]
    profile: str
    tools: list[str]
    dream: dict[str, Any] | None = None  # due state, open tasks, digest (docs/dream.md)
    onboarding: dict[str, Any] | None = None  # which first-start questions are answered (host-core only)
    user_memory: UserStatus | None = None  # the user's own memory repository (mcp/usermem.py)


def _hidden_memories(view: View, include_archived: bool) -> frozenset[str]:
    """Memories left out of search now: expired ephemeral ones, and archived ones unless asked for."""
    from vivary_git.memory.dream import durability
    from vivary_git.memory.dream.corpus import notes_of

    when = durability.now()
    out = []
    memories = view.memories()
    todo = [n.blob for n in memories if (n.blob, include_archived) not in _HIDDEN]
    notes = notes_of(view, todo) if todo else {}
    for n in memories:
        key = (n.blob, include_archived)
        got = _HIDDEN.get(key)
        if got is None:
            fields = notes[n.blob].fields
            end = durability.expires_at(fields)
            got = _HIDDEN[key] = (durability.is_archived(fields) and not include_archived,
                                  end.timestamp() if end is not None else None)
        if got[0] or (got[1] is not None and got[1] <= when.timestamp()):
            out.append(n.id)
    if len(_HIDDEN) > 200_000:
        _HIDDEN.clear()
    return frozenset(out)


_HIDDEN: dict[tuple[str, bool], tuple[bool, float | None]] = {}  # (blob, include archived) -> (hidden, expires)


def _memory_event(view: View, op: str, hits: Sequence[SearchHit]) -> str | None:
    """Log a search that returned memories (a memory event, docs/dream.md); the dream_due hint when due."""
    from vivary_git.config import MEMORY_TYPE
    from vivary_git.memory.dream.accesslog import log_for

    log = log_for(view.ws)
    ids = [h.id for h in hits if h.type == MEMORY_TYPE]
    if ids:
        log.record(op, ids)
    return log.due().hint


def _due_hint(view: View) -> str | None:
    """The `dream_due` hint as it stands before this answer's own memory event."""
    from vivary_git.memory.dream.accesslog import log_for

    return log_for(view.ws).due().hint


def _dream_status(view: View) -> dict[str, Any]:
    from vivary_git.memory.dream import dream
    from vivary_git.memory.dream.accesslog import log_for

    due = log_for(view.ws).due()
    opened = dream.open_tasks(view)
    return {"due": due.due, "reason": due.reason, "events": due.events,
            "open_tasks": [{"id": t.id, "sources": len(t.sources), "topic": t.topic} for t in opened[:20]],
            "open_task_count": len(opened)}


class _Notes(Mapping[str, "Note"]):
    """Parsed notes by blob id, read when looked up (those committed by this process too)."""

    def __init__(self, view: View) -> None:
        self._view = view

    def __getitem__(self, blob: str) -> Note:
        return self._view.note_of(blob)

    def __iter__(self) -> Iterator[str]:
        return iter(n.blob for n in self._view.nodes.values())

    def __len__(self) -> int:
        return len(self._view.nodes)


def _bounded(text: str) -> str:
    return text if len(text) <= _CONTENT_LIMIT else text[:_CONTENT_LIMIT] + "\n…(truncated)"


def _jsonable(fields: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(msgspec.json.encode(fields, order="sorted"))
    return out


def _neighbors(st: State, start: str, hops: int) -> list[Neighbor]:
    """Nodes within `hops` edges of `start`, either direction, nearest first (bounded)."""
    seen = {start}
    out: list[Neighbor] = []
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    while queue and len(out) < MAX_NEIGHBORS:
        nid, dist = queue.popleft()
        if dist >= hops:
            continue
        steps = [(to, f, "out") for f, to in st.out.get(nid, ())] + [(src, f, "in") for src, f in st.inn.get(nid, ())]
        for other, field, direction in sorted(steps):
            if other in seen or other not in st.nodes:
                continue
            seen.add(other)
            n = st.nodes[other]
            out.append(Neighbor(id=n.id, type=n.type, title=n.title, distance=dist + 1, via=field,
                                direction=direction))
            queue.append((other, dist + 1))
            if len(out) >= MAX_NEIGHBORS:
                break
    return out


def answer_text(value: Any) -> bytes:
    """The text a host receives for a tool's answer: its compact JSON, UTF-8 (docs/mcp.md#budgets)."""
    return msgspec.json.encode(value)


def estimate_tokens(text: bytes) -> int:
    """A budget's tokens: the answer text's UTF-8 bytes / 4, rounded up (docs/mcp.md#budgets)."""
    return (len(text) + 3) // 4


def _fit(answer: SearchAnswer) -> SearchAnswer:
    """`answer` trimmed until its whole text is within its budget of tokens: its hits' content goes, then their
    neighbours, then as `find` does (snippets shorten and go, edges, trailing hits; one hit always stays)."""
    from vivary_git.query import trim_hits

    budget = answer.budget
    if budget > 0:
        probe = msgspec.structs.replace(answer, estimated_tokens=budget)  # the same list of hits, trimmed in place
        trim_hits(probe.results, lambda: estimate_tokens(answer_text(probe)) > budget, first=("content", "neighbors"))
    return with_own_size(answer)


class Reads(Warm):
    """Search, read, status and the resources, answered from the warm state."""

    def search(self, query: str, *, top_k: int = 5, type: Sequence[str] = (), path: Sequence[str] = (),
               edge: Sequence[str] = (), include_neighbors: int = 0, include_content: bool = False,
               budget: int = DEFAULT_BUDGET, mode: str = "auto", include_archived: bool = False,
               since: str | None = None, until: str | None = None, date: str = "note",
               cursor: str | None = None, scope: str = "all") -> SearchAnswer:
        from vivary_git.mcp import paging
        from vivary_git.mcp.usermem import SCOPES

        if not isinstance(query, str) or not query.strip():
            raise UsageError("query is empty: give keywords or a question")
        if len(query) > MAX_QUERY:
            raise UsageError(f"query is {len(query):,} characters; keep it under {MAX_QUERY:,}")
        if not 1 <= top_k <= MAX_TOP_K:
            raise UsageError(f"top_k must be 1 to {MAX_TOP_K} (got {top_k})")
        if not 0 <= include_neighbors <= MAX_HOPS:
            raise UsageError(f"include_neighbors must be 0 to {MAX_HOPS} hops (got {include_neighbors})")
        if mode not in ("auto", "text", "semantic", "hybrid"):
            raise UsageError(f"mode must be auto, text, semantic or hybrid (got {mode!r})")
        if scope not in SCOPES:
            raise UsageError(f"scope must be all, workspace or user (got {scope!r})")
        if not 0 <= budget <= MAX_BUDGET:
            raise UsageError(f"budget must be 0 (none) to {MAX_BUDGET:,} tokens (got {budget})")
        types, paths, edges = list(type), list(path), [_edge(e) for e in edge]
        win = paging.window_of(since, until, date)
        question = (query, types, paths, edges, since, until, date, mode, include_archived,
                    *((scope,) if scope != "all" else ()))
        offset = paging.offset_of(cursor, question)
        shown_k, top_k = top_k, offset + top_k + 1  # this page, and one more to know there is a next
        with self._lock:
            st = self.state()
            hits, used, why, left_out = self._visible(st, query, top_k, types, paths, edges, mode, include_archived,
                                                      win, rank=scope != "user")
            hits, user = self._with_user(scope, hits, (query, top_k, types, paths, edges, mode, include_archived, win))
            if scope == "user":  # the workspace was not searched: the user memory's mode and left-out count
                assert user is not None and user.mode is not None
                used, why, left_out = user.mode, user.mode_reason or "", 0
            left_out += user.hidden if user is not None else 0
            more = len(hits) > offset + shown_k
            hits = hits[offset:offset + shown_k]
            for h in hits:
                if h.scope == "user":
                    self.usermem().fill(h, include_content, include_neighbors)
                    continue
                if include_content:
                    h.content = _bounded(self._note(st, h.id).body)
                if include_neighbors:
                    h.neighbors = _neighbors(st, h.id, include_neighbors)
            page = len(hits)
            window = (since, until, date) if win is not None else (None, None, None)
            # A cursor as long as the one this page can end with, so trimming counts it
            widest = paging.cursor_for(offset + page, question) if hits else None
            answer = _fit(SearchAnswer(query=query, mode=used, mode_reason=why, top_k=shown_k, budget=budget,
                                       estimated_tokens=0, filters=SearchFilters(types, paths, edges, *window),
                                       results=hits, tree=st.root_tree, hidden=left_out,
                                       dream_due=_due_hint(st.view) if scope != "user" else None, next_cursor=widest,
                                       scope=scope if user is not None else None, user=user))
            due = self._hits_seen(st, hits)
            if scope == "user":
                due = None  # the workspace's hint: not this answer's, which searched the user memory alone
            if due != answer.dream_due:  # this search's own event made a dream due: the hint counts too
                answer = _fit(msgspec.structs.replace(answer, dream_due=due))
            more = more or len(hits) < page
            cursor = paging.cursor_for(offset + len(hits), question) if more and hits else None
            return with_own_size(msgspec.structs.replace(answer, next_cursor=cursor))

    def _hits_seen(self, st: State, hits: list[SearchHit]) -> str | None:
        """Each repository's memory events in its own access log; the workspace's dream_due hint."""
        if any(h.scope == "user" for h in hits):
            self.usermem().seen([h for h in hits if h.scope == "user"])
        return _memory_event(st.view, "hit", [h for h in hits if h.scope is None])

    def _ranked(self, st: State, query: str, top_k: int, types: list[str], paths: list[str], edges: list[str],
                hidden: frozenset[str], mode: str) -> tuple[list[SearchHit], str, str]:
        """This workspace's top `top_k` hits for `query` in `mode`, the mode used and why."""
        hits: list[SearchHit] | None = None
        session, reason = self._hybrid(st)
        if session is not None:
            used = "hybrid" if mode == "auto" else mode
            asked: SessionMode = "keyword" if used == "text" else "semantic" if used == "semantic" else "hybrid"
            hits = self._hybrid_hits(st, session, query, top_k, types, paths, edges, hidden, mode=asked)
            why = f"{_WHY[used]} ({reason})"
        else:
            used = "text"
            why = f"keyword search (the contract's text scoring): {reason}"
        if hits is None:
            hits = self._text_hits(st, query, top_k, types, paths, edges, hidden)
        return hits, used, why

    def _with_user(self, scope: str, hits: list[SearchHit], asked: tuple[Any, ...]) -> tuple[list[SearchHit],
                                                                                           UserSearch | None]:
        """`hits` with the user memory's merged in by rank (mcp/usermem.py), or only those for scope user."""
        from vivary_git.mcp.usermem import merge

        user = self.usermem()
        if scope == "workspace" or (not user.where.configured and scope == "all"):
            return hits, None
        try:
            got, used, why, left_out = user.ranked(*asked)
        except UsageError:
            if scope == "user":
                raise
            return hits, UserSearch(path=user.where.path, problem=user.problem)  # the workspace alone, and why
        answer = UserSearch(path=user.where.path, mode=used, mode_reason=why, hidden=left_out)
        return (got if scope == "user" else merge(hits, got)), answer

    # -- this service as a user memory beside another workspace's (mcp/usermem.py) ---------------------------

    def beside(self, query: str, k: int, types: list[str], paths: list[str], edges: list[str], mode: str,
               include_archived: bool, window: Window | None) -> tuple[list[SearchHit], str, str, int]:
        """This repository's top `k` hits for another workspace's search, the mode used and why, and how many
        memories were left out (archived, expired): by its own rules, its own index."""
        with self._lock:
            return self._visible(self.state(), query, k, types, paths, edges, mode, include_archived, window)

    def _visible(self, st: State, query: str, k: int, types: list[str], paths: list[str], edges: list[str], mode: str,
                 include_archived: bool, window: Window | None, *, rank: bool = True,
                 ) -> tuple[list[SearchHit], str, str, int]:
        """This workspace's top `k` hits among the memories search may show now (not expired, archived only when
        asked for, inside `window`), the mode used and why, and how many memories were left out (archived,
        expired). Without `rank`, only the count (the hits are another repository's)."""
        from vivary_git.excluded import excluded_ids
        from vivary_git.mcp import paging

        hidden = _hidden_memories(st.view, include_archived)
        left_out = len(hidden)
        if not rank:
            return [], "text", "", left_out
        if window is not None:
            hidden |= paging.outside(st, window)
        # The vault's Excluded files (Obsidian's userIgnoreFilters) are no hits; not counted as memories left out
        hidden |= excluded_ids(st.view.ws.config, st.nodes.values())
        hits, used, why = self._ranked(st, query, k, types, paths, edges, hidden, mode)
        return hits, used, why, left_out

    def fill_hit(self, hit: SearchHit, nid: str, include_content: bool, include_neighbors: int) -> None:
        """`hit`'s body and neighbours from this repository, where its node is `nid`."""
        with self._lock:
            st = self.state()
            if nid not in st.nodes:
                return
            if include_content:
                hit.content = _bounded(self._note(st, nid).body)
            if include_neighbors:
                hit.neighbors = _neighbors(st, nid, include_neighbors)

    def hits_seen_here(self, hits: list[SearchHit]) -> None:
        """Another workspace's search returned these memories of this repository: a memory event here."""
        with self._lock:
            _memory_event(self.state().view, "hit", hits)

    def _note(self, st: State, nid: str) -> Note:
        return st.view.note_of(st.view.nodes[nid].blob)

    def _text_hits(self, st: State, q: str, k: int, types: list[str], paths: list[str],
                   edges: list[str], hidden: frozenset[str] = frozenset()) -> list[SearchHit]:
        from vivary_git import graph as graph_mod
        from vivary_git.models import Edge
        from vivary_git.query import search

        notes = _Notes(st.view)
        changed = set(st.delta) | st.gone
        base = search(st.public, notes, q, k=k + len(changed), types=types, paths=paths, edges=edges,
                      snippet=SNIPPET, explain=True, index=st.index(), outgoing=st.outgoing(),
                      hidden=frozenset(),  # st.public holds the snapshot's admitted nodes only
                      ranker=st.ranker(), exclude=hidden)
        found = [h for h in base.results if h.id not in changed]
        if st.delta:
            nodes = sorted(st.delta.values(), key=lambda n: n.id)
            delta_edges = sorted(Edge(n.id, f, to) for n in nodes for f, to in st.out.get(n.id, ()))
            small = graph_mod.Graph(root=st.public.root, tree=None, config=st.public.config, nodes=nodes,
                                    edges=delta_edges, findings=[])
            extra = search(small, notes, q, k=k, types=types, paths=paths, edges=edges, snippet=SNIPPET,
                           explain=True, hidden=frozenset(), exclude=hidden)
            found = sorted([*found, *extra.results], key=lambda h: (-h.score, h.path, h.id))
        out = []
        for h in found[:k]:
            out.append(SearchHit(
                id=h.id, type=h.type, path=h.path, title=h.title, score=float(h.score),
                reason="; ".join(h.reasons or []) or "matches the query", snippet=h.snippet,
                edges=[EdgeRef(h.id, e.field, e.to) for e in h.edges] if h.edges else None,
            ))
        return out

    def _hybrid_hits(self, st: State, session: RecallSession, q: str, k: int, types: list[str],
                     paths: list[str], edges: list[str], hidden: frozenset[str] = frozenset(), *,
                     mode: SessionMode = "hybrid") -> list[SearchHit]:
        """The session's answer in `mode`; the filters and the hidden memories apply before ranking, so k hits
        come back whenever k notes pass them."""
        from vivary_git.memory.provider import RecallFilters
        from vivary_git.query import make_snippet, terms_of

        got = session.recall(q, k=k, filters=RecallFilters(types=types, paths=paths, edges=edges), mode=mode,
                             exclude=hidden)
        out: list[SearchHit] = []
        terms = terms_of(q)
        for h in got:
            node = st.nodes.get(h.node_id)
            if node is None or node.id in hidden:
                continue
            note = self._note(st, node.id)
            out.append(SearchHit(
                id=node.id, type=node.type, path=node.path, title=node.title, score=h.score, reason=h.reason,
                snippet=make_snippet(note, node, q.lower().strip(), terms, SNIPPET) or None,
                edges=[EdgeRef(node.id, f, to) for f, to in st.out.get(node.id, ())] or None,
            ))
        return out

    def read(self, id: str, *, include_content: bool = False, neighbors: int = 1) -> NodePacket:
        if not isinstance(id, str) or not id.strip():
            raise UsageError("give a node id (from search) or a note's path")
        if not 0 <= neighbors <= MAX_HOPS:
            raise UsageError(f"neighbors must be 0 to {MAX_HOPS} hops (got {neighbors})")
        if self.usermem().owns(id.lstrip()):  # a trailing blank may be the id's own (`user:Meeting `): kept
            packet: NodePacket = self.usermem().read(id.lstrip(), include_content=include_content, neighbors=neighbors)
            return packet
        with self._lock:
            st = self.state()
            node = st.nodes[self._public_id(st, id)]
            note = self._note(st, node.id)
            return NodePacket(
                id=node.id, type=node.type, path=node.path, title=node.title,
                frontmatter=_jsonable(note.fields) if note.problem is None else {},
                problem=note.problem.message if note.problem is not None else None,
                outbound=[OutEdge(f, to) for f, to in st.out.get(node.id, ())],
                inbound=[InEdge(src, f) for src, f in st.inn.get(node.id, ())],
                neighbors=_neighbors(st, node.id, neighbors) if neighbors else [],
                content=_bounded(note.body) if include_content else None,
                tree=st.root_tree,
            )

    def recent(self, *, since: str | None = "7d", until: str | None = None, ops: Sequence[str] = (),
               limit: int = 50) -> Recent:
        """What was added, edited, retired, moved or dreamed in a time window, from the Git history."""
        from vivary_git.memory.writes.history import recent

        with self._lock:
            return recent(self.state().view, since=since, until=until, ops=ops, limit=limit)

    def context(self, id: str, *, depth: int = 1, budget: int = 2000, include_content: bool = True) -> Context:
        """One node and its neighbourhood to `depth` with every edge between them, cut to `budget` tokens."""
        from vivary_git import context

        if not isinstance(id, str) or not id.strip():
            raise UsageError("give a node id (from search) or a note's path")
        if not 0 <= depth <= context.MAX_DEPTH:
            raise UsageError(f"depth must be 0 to {context.MAX_DEPTH} (got {depth})")
        if not 0 <= budget <= MAX_BUDGET:
            raise UsageError(f"budget must be 0 (none) to {MAX_BUDGET:,} tokens (got {budget})")
        with self._lock:
            st = self.state()
            return context.build(self._public_id(st, id), st.nodes, st.out, st.inn,
                                 lambda nid: self._note(st, nid).body,
                                 depth=depth, budget=budget, include_content=include_content)

    def _public_id(self, st: State, asked: str) -> str:
        """The id of the public node `asked` names (an id or a path); a private file is refused by name, anything
        else as unknown. The id as given first: `Meeting ` (a file name with a trailing space) is its own note, not
        `Meeting`; blanks around an id no note has are then forgiven."""
        found = st.view.find(asked) or st.view.find(asked.strip())
        if found is None:
            self._refuse_private_path(st, asked.strip())
            raise UsageError(f"no public node {asked!r} in this workspace (ids come from `search`; private notes "
                             "are never shown)")
        return found.id

    def _refuse_private_path(self, st: State, asked: str) -> None:
        """An agent naming a private file by path is told it is private, and by which rule: a rule of the user's
        by its place alone (`PrivacyDecision.told`), as `check` masks where others read it."""
        path = asked.lstrip("/")
        if "\x00" in path or not path or any(p in ("", ".", "..") for p in path.split("/")):
            return
        from vivary_git.errors import PrivacyError
        from vivary_git.memory.snapshot import decide_for_source

        view = st.view
        candidates = [path] if path.endswith((".md", ".markdown")) else [path, f"{path}.md"]
        try:
            verdicts = decide_for_source(view.ws, [view.repo_path(p) for p in candidates], view.cfg.policy())
        except PrivacyError:
            return
        for v in verdicts:
            if v.private:
                raise RefusedError(f"{asked!r} is private ({v.told(masked=True)}): vivary never shows private files "
                                   f"to agents{v.unsaid(masked=True)}")

    def node_resource(self, id: str) -> str:
        return msgspec.json.encode(self.read(id, include_content=True, neighbors=1)).decode()

    def digest(self) -> str:
        """MEMORY.md, served to the host that asked (the one place it is served; docs/dream.md): the file
        as `git vivary digest` wrote it when its digest is fresh, else with the digest block as it would be
        written now. Never logged, cached or indexed; nothing is written by reading it."""
        from vivary_git.memory.dream import digest
        from vivary_git.memory.dream.corpus import from_view

        if "memory-digest" not in RESOURCES[self.profile]:
            raise RefusedError(f"the memory digest is not served in the {self.profile} profile: it holds private "
                               "files' content (MEMORY.md, the USER.md profile)")
        with self._lock:
            st = self.state()
            return digest.served(st.view.ws, st.view.cfg, from_view(st.view))

    def status(self) -> Status:
        with self._lock:
            st = self.state()
            view = st.view
            ws = view.ws
            cfg = view.cfg
            repo = ws.source.repo
            branch = None
            if repo is not None:
                head = repo.repo.references.get("HEAD")
                if head is not None and isinstance(head.target, str):
                    branch = head.target.removeprefix("refs/heads/")
            _, reason = self._hybrid(st)
            remember = cfg.memory.remember
            note = None
            if repo is not None and remember.branch:
                from vivary_git.memory.writes.commits import read_from

                note = read_from(repo, remember.branch)[2]  # a symbolic ref: not read, and the fix
            # The editor's settings left unused (as the CLI warns on stderr): why a note is not in search. They name
            # committed files and entries, so each goes out inert (escape.text), once.
            from vivary_git.escape import text

            settings = [text(w) for w in dict.fromkeys(ws.config.settings_warnings)]
            return Status(
                ok=True,
                workspace={"root": str(ws.source.root), "config": ws.config.source, "dialect": ws.config.dialect,
                           "ids": ws.config.links.ids, **({"settings_warnings": settings} if settings else {})},
                tree={"id": st.root_tree, "head": st.key[1], "branch": branch, "source": ws.source.label},
                nodes={"public": len(st.nodes), "private": view.snapshot.private_count,
                       "memories": len(view.memories()), "edges": sum(len(v) for v in st.out.values()),
                       "written_since_start": len(st.delta)},
                memory={"enabled": cfg.enabled, "provider": cfg.provider,
                        "search": "hybrid" if st.hybrid is not None else "text", "search_reason": reason,
                        "folder": remember.folder, "branch": remember.branch or branch,
                        "similarity": remember.similarity, **({"branch_note": note} if note else {})},
                profile=self.profile, tools=list(PROFILES[self.profile]), dream=_dream_status(view),
                onboarding=self._onboarding(ws.source.root) if "onboard" in PROFILES[self.profile] else None,
                user_memory=self.usermem().status(),
            )

    @staticmethod
    def _onboarding(root: Path) -> dict[str, Any]:
        """Which onboarding questions are answered (as `host-status` says it); a USER.md that cannot be
        read is said as a problem, not an error of the whole status."""
        from vivary_git.hosts import onboard

        try:
            ob = onboard.status(root)
        except VivaryError as err:
            return {"file": onboard.USER_FILE, "done": False, "problem": str(err)}
        return {"file": ob.file, "done": ob.done, "answered": ob.answered, "missing": ob.missing}
