"""What the MCP server does, as a plain Python API: search, read, status and the memory writes, over
one workspace kept warm and always as fresh as the working tree.

Freshness: before each answer the working tree's tree id is brought up to date (`freshness.WorkTree`:
folder watches, and `git add -A` of just the paths that changed into a scratch index this process
keeps) and compared with the tree the warm state was built from; HEAD, a memory branch's tip and
Git's config and excludes are part of the key too. When only notes changed, the state is patched:
the search index stays, the changed notes are searched directly beside it and privacy is decided
again for their paths; anything else rebuilds the state. No answer comes from an older tree than
the one on disk. The server's own writes patch the state without looking (the note it committed is
its only change, which `WorkTree.wrote` confirms), so a memory is searchable right after `add`.

Privacy: every node, edge, search hit and neighbour comes from the privacy-filtered snapshot
(`memory/snapshot.py`); a private node is absent, never named, and asking for a private file by
path is refused with the reason.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import threading
from collections import deque
from collections.abc import Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git import git
from vivary_git.errors import RefusedError, UsageError, VivaryError
from vivary_git.memory.writes.remember import EdgeRef, Remembered

if TYPE_CHECKING:
    from vivary_git.graph import Graph
    from vivary_git.mcp.freshness import WorkTree
    from vivary_git.memory.local.recall import RecallSession
    from vivary_git.memory.sources.anchors import Anchored
    from vivary_git.memory.writes.probe import Probe
    from vivary_git.memory.writes.remember import View
    from vivary_git.models import Edge, Node, Note
    from vivary_git.searchindex import Ranker, SearchIndex

__all__ = ["PROFILES", "RESOURCES", "MemoryService", "NodePacket", "Onboarded", "SearchAnswer", "Status"]

# Tool names by profile (CognitiveOS's host-core: search, read, add, update, link, unlink, dream).
PROFILES: dict[str, tuple[str, ...]] = {
    "host-core": ("search", "read", "add", "update", "link", "unlink", "dream", "status", "onboard"),
    "read-only": ("search", "read", "status"),
}
# Resources by profile. The digest holds the private MEMORY.md's block and USER.md's profile (name, role):
# a read-only host (a CI runner, an untrusted host) is served no private file's content.
RESOURCES: dict[str, tuple[str, ...]] = {
    "host-core": ("node", "memory-digest"),
    "read-only": ("node",),
}
MAX_TOP_K = 50
MAX_HOPS = 3
MAX_NEIGHBORS = 50
MAX_QUERY = 2000
DEFAULT_BUDGET = 1200
SNIPPET = 160
_CONTENT_LIMIT = 20_000


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


class SearchFilters(msgspec.Struct, frozen=True):
    type: list[str]
    path: list[str]
    edge: list[str]


class SearchAnswer(msgspec.Struct, frozen=True, omit_defaults=True):
    query: str
    mode: str  # "text" | "hybrid"
    mode_reason: str
    top_k: int
    budget: int
    estimated_tokens: int
    filters: SearchFilters
    results: list[SearchHit]
    tree: str | None  # the working tree the answer comes from, as a Git tree id
    hidden: int = 0  # archived or expired memories left out (docs/dream.md)
    dream_due: str | None = None


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


class Question(msgspec.Struct, frozen=True):
    key: str
    question: str
    answered: bool


class Onboarded(msgspec.Struct, frozen=True):
    """The `onboard` tool's answer: which questions are answered, never the answers (docs/hosts.md)."""

    ok: bool
    file: str  # the profile, relative to the workspace root: private, never committed, never indexed
    done: bool
    written: list[str]
    answered: list[str]
    missing: list[str]
    excluded: bool  # USER.md was added to .git/info/exclude just now
    questions: list[Question]


# Notes changed since the search index was built that are searched directly, beside it; past this
# many the state is rebuilt (with a new index) instead.
MAX_DELTA = 256


def _without(edges: list[Edge], ids: set[str]) -> list[Edge]:
    """`edges` (sorted by source) less the runs of those from `ids`, cut out by bisection."""
    from vivary_git.models import Edge

    out: list[Edge] = []
    at = 0
    for nid in sorted(ids):
        lo = bisect.bisect_left(edges, Edge(nid), at)
        hi = bisect.bisect_left(edges, Edge(nid + "\0"), lo)
        out += edges[at:lo]
        at = hi
    out += edges[at:]
    return out


class _State:
    """One tree's warm answers: the view (privacy-filtered), the public graph and its search index,
    and the nodes changed since that index was built (`delta`, searched directly beside it; `gone`,
    left out of its answers). A state built after an edit (`base`: the state before) keeps the
    base's index and graph: only the edited notes are searched anew."""

    def __init__(self, key: tuple[Any, ...], view: View, base: _State | None = None,
                 changed: Collection[str] = ()) -> None:
        from vivary_git import graph as graph_mod

        self.key = key
        self.view = view
        ws = view.ws
        full = ws.graph()
        admitted = view.nodes
        current: Graph = graph_mod.Graph(
            root=full.root, tree=full.tree, config=full.config, findings=[],
            nodes=[n for n in full.nodes if n.id in admitted],
            edges=[e for e in full.edges if not e.broken and e.from_ in admitted and e.to in admitted],
        )
        self.nodes: dict[str, Node] = {n.id: n for n in current.nodes}
        self.out: dict[str, list[tuple[str, str]]] = {}
        self.inn: dict[str, list[tuple[str, str]]] = {}
        for e in current.edges:
            self.out.setdefault(e.from_, []).append((e.field, e.to))
            self.inn.setdefault(e.to, []).append((e.from_, e.field))
        self.delta: dict[str, Node] = {}
        self.gone: set[str] = set()
        self.hybrid: RecallSession | None = None
        self.hybrid_reason: str | None = None
        self.root_tree: str | None = key[0]
        if base is None:
            self.public = current  # the graph the search index is built from
            self.base_tree: str | None = key[0]
            self._index: SearchIndex | None = None
            self._ranker: Ranker | None = None
            self._outgoing: dict[str, list[Edge]] | None = None
            return
        self.public, self.base_tree = base.public, base.base_tree
        self._index, self._ranker, self._outgoing = base.index(), base._ranker, base.outgoing()
        before = {n.id: n for n in self.public.nodes}
        self.gone = set(before) - set(self.nodes)
        # The notes at the changed paths, and any new id, read differently; usually nothing else does
        # (checked: every other node and edge is the same). When others do (an id changed, a link now
        # resolves elsewhere), every node's edges are compared.
        touched = {n.id for n in current.nodes if n.path in changed} | {
            n.id for n in self.public.nodes if n.path in changed} | (set(self.nodes) - set(before))
        if ([n for n in current.nodes if n.id not in touched] != [n for n in self.public.nodes if n.id not in touched]
                or _without(current.edges, touched) != _without(self.public.edges, touched)):
            from vivary_git.query import outgoing_edges

            now = outgoing_edges(current)
            touched |= {i for i, n in self.nodes.items()
                        if before.get(i) != n or now.get(i, []) != self._outgoing.get(i, [])}
        self.delta = {i: self.nodes[i] for i in sorted(touched) if i in self.nodes}

    def outgoing(self) -> dict[str, list[Edge]]:
        """The public graph's outbound edges by node (as `query.outgoing_edges`), grouped once."""
        if self._outgoing is None:
            from vivary_git.query import outgoing_edges

            self._outgoing = outgoing_edges(self.public)
        return self._outgoing

    def index(self) -> SearchIndex:
        if self._index is None:
            self._index = _public_index(self.view, self.public)
        return self._index

    def ranker(self) -> Ranker:
        """The index's ranker: each term's scores are kept between questions."""
        if self._ranker is None:
            from vivary_git.searchindex import Ranker

            self._ranker = Ranker(self.index(), self.public)
        return self._ranker


def _public_index(view: View, public: Graph) -> SearchIndex:
    """The search index of the public graph, cached under .git/vivary/ by tree and snapshot."""
    from vivary_git import searchindex
    from vivary_git.localcache import ObjectCache

    ws = view.ws
    repo = ws.source.repo
    cache = ObjectCache(repo.vivary_dir if repo is not None and ws.cache_enabled else None, "mcp-search", keep=4)
    key = f"{ws.tree_id}-{view.snapshot.fingerprint[:16]}"
    got = cache.get(key, msgspec.msgpack.Decoder(searchindex.SearchIndex))
    if got is not None and got.ids == [n.id for n in public.nodes]:
        return got
    built = searchindex.build(public, ws.notes())
    cache.put(key, built)
    return built


class MemoryService:
    """One workspace for one agent host. Thread-safe: one request at a time (a web page is fetched
    outside the lock, so a slow page holds up no other request)."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None, *, root: str | None = None,
                 profile: str = "host-core", source: str = "agent") -> None:
        if profile not in PROFILES:
            raise UsageError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
        self.profile = profile
        self.source = source
        self._cwd = Path(cwd).resolve() if cwd is not None else Path.cwd()
        self._root = root
        self._lock = threading.RLock()
        self._state: _State | None = None
        self._probe: Probe | None = None
        self._repo = git.try_open(self._cwd)
        self._worktree: WorkTree | None = None

    # --- freshness ------------------------------------------------------------------------------

    def close(self) -> None:
        if self._worktree is not None:
            self._worktree.close()
            self._worktree = None

    def _key(self) -> tuple[Any, ...]:
        repo = self._repo
        if repo is None or repo.workdir is None:
            return (None, os.urandom(8))  # no Git work tree: never warm (a plain folder is read each time)
        head = repo.repo.references.get("HEAD")
        head_oid = None
        with contextlib.suppress(Exception):
            head_oid = str(head.resolve().target) if head is not None else None
        tip = None
        state = self._state
        branch = state.view.cfg.memory.remember.branch if state is not None else ""
        if branch:
            ref = repo.repo.references.get(f"refs/heads/{branch}")
            tip = str(ref.resolve().target) if ref is not None else None
        tree = self._worktree_tree(repo)
        assert self._worktree is not None
        # Git's config and excludes outside the work tree decide privacy too: a change rebuilds.
        return (tree, head_oid, tip, self._worktree.rules)

    def _worktree_tree(self, repo: git.Repo) -> str:
        """The working tree as a tree id, kept current by `freshness.WorkTree` (folder watches, and
        `git add` of just what changed)."""
        if self._worktree is None:
            from vivary_git.mcp.freshness import WorkTree

            self._worktree = WorkTree(repo)
        return self._worktree.tree()

    def state(self) -> _State:
        """The warm state for the tree on disk now (rebuilt when anything changed)."""
        with self._lock:
            key = self._key()
            if self._state is not None and self._state.key == key:
                return self._state
            from vivary_git.memory.config import load_memory_config
            from vivary_git.memory.writes.remember import open_view
            from vivary_git.workspace import open_workspace

            if self._state is not None:
                patched = self._patched(self._state, key)
                if patched is not None:
                    self._state = patched
                    return patched
            ws = open_workspace(self._cwd, root=self._root, worktree=key[0])
            cfg = load_memory_config(ws)
            overlay = self._overlay(ws, cfg.memory.remember.branch, cfg.memory.remember.folder)
            if overlay is not None:
                ws = open_workspace(self._cwd, rev=overlay, root=self._root)
            state = _State(key, open_view(ws, cfg))
            if state.view.cfg.memory.remember.branch and key[2] is None:
                state.key = self._key()  # the branch is known now: key it by its tip too
            self._state = state
            self._probe = None
            return state

    def _patched(self, st: _State, key: tuple[Any, ...]) -> _State | None:
        """The state for `key` made from `st` when only notes changed (their content, or notes added,
        removed or renamed) since `st`'s search index was built: the same index, with those notes
        searched directly, and privacy decided again for just their paths. None: rebuild."""
        repo = self._repo
        old = st.view
        if (repo is None or key[2:] != st.key[2:] or st.base_tree is None or key[0] is None
                or old.cfg.memory.remember.branch):
            return None
        if key[0] == st.key[0]:  # HEAD alone moved (a commit of what was already there)
            if {"created", "updated"} & set(old.ws.config.derive):
                return None
            st.key = key
            return st
        changed = self._changed_notes(repo, st.base_tree, key[0], old.ws.source.prefix)
        if changed is None:
            return None
        from vivary_git.escape import name as text_name
        from vivary_git.memory.writes.remember import open_view
        from vivary_git.workspace import open_workspace

        ws = open_workspace(self._cwd, root=self._root, worktree=key[0])
        if ws.source.prefix != old.ws.source.prefix or ws.source.tree_id is None:
            return None
        prefix = f"{ws.source.prefix}/" if ws.source.prefix else ""
        admitted = {n.id for n in old.snapshot.nodes}
        known = {prefix + n.path: text_name(n.id) in admitted for n in old.ws.graph().nodes if n.path not in changed}
        view = open_view(ws, old.cfg, known=known)
        state = _State(key, view, base=st, changed=changed)
        if len(state.delta) + len(state.gone) > MAX_DELTA:
            return None
        return state

    @staticmethod
    def _changed_notes(repo: git.Repo, base: str, tree: str, prefix: str) -> set[str] | None:
        """Workspace-relative paths of the notes that differ between the two trees; None when anything
        but notes differs inside the workspace, or anything but a note does outside it (a file that
        may decide rules), or too many notes do."""
        from vivary_git.source import is_note

        top = f"{prefix}/" if prefix else ""
        out: set[str] = set()
        try:
            diff = repo.repo[base].diff_to_tree(repo.repo[tree])  # type: ignore[attr-defined]
        except (KeyError, ValueError):
            return None
        for delta in diff.deltas:
            for f in (delta.old_file, delta.new_file):
                path: str = f.path
                if not path.startswith(top):
                    if is_note(path):
                        continue  # a note outside this workspace
                    return None
                rel = path[len(top):]
                if not is_note(rel) or rel.startswith(".vivary/"):
                    return None
                out.add(rel)
        return out if len(out) <= MAX_DELTA else None

    def _overlay(self, ws: Any, branch: str, folder: str) -> str | None:
        """With memories on their own branch: the working tree with that branch's memory folder laid
        over it (a tree id), so search and read see them; None when there is no such branch."""
        repo = self._repo
        if not branch or repo is None or ws.source.root_tree is None:
            return None
        from vivary_git.memory.writes.commits import _tree_with

        ref = repo.repo.references.get(f"refs/heads/{branch}")
        if ref is None:
            return None
        prefix = f"{ws.source.prefix}/{folder}" if ws.source.prefix else folder
        try:
            sub = repo.repo[ref.resolve().target].peel(repo.pygit2.Tree)[prefix]
        except (KeyError, ValueError):
            return None
        tree = repo.repo[ws.source.root_tree]
        blobs: list[tuple[str, str]] = []

        def walk(t: Any, base: str) -> None:
            for entry in t:
                if entry.type_str == "tree":
                    walk(entry, f"{base}/{entry.name}")
                elif entry.type_str == "blob":
                    blobs.append((f"{base}/{entry.name}", str(entry.id)))

        if sub.type_str != "tree":
            return None
        walk(sub, prefix)
        out = str(tree.id)
        for path, blob in blobs:
            out = _tree_with(repo, repo.repo[out], path.split("/"), blob) or out
        return out

    def warm_up(self) -> None:
        """Build the state and the search index now (server start), not on the first question."""
        self.state().index()

    # --- search -----------------------------------------------------------------------------------

    def search(self, query: str, *, top_k: int = 5, type: Sequence[str] = (), path: Sequence[str] = (),
               edge: Sequence[str] = (), include_neighbors: int = 0, include_content: bool = False,
               budget: int = DEFAULT_BUDGET, mode: str = "auto", include_archived: bool = False) -> SearchAnswer:
        if not isinstance(query, str) or not query.strip():
            raise UsageError("query is empty: give keywords or a question")
        if len(query) > MAX_QUERY:
            raise UsageError(f"query is {len(query):,} characters; keep it under {MAX_QUERY:,}")
        if not 1 <= top_k <= MAX_TOP_K:
            raise UsageError(f"top_k must be 1 to {MAX_TOP_K} (got {top_k})")
        if not 0 <= include_neighbors <= MAX_HOPS:
            raise UsageError(f"include_neighbors must be 0 to {MAX_HOPS} hops (got {include_neighbors})")
        if mode not in ("auto", "text", "hybrid"):
            raise UsageError(f"mode must be auto, text or hybrid (got {mode!r})")
        types, paths, edges = list(type), list(path), list(edge)
        with self._lock:
            st = self.state()
            hidden = _hidden_memories(st.view, include_archived)
            hits: list[SearchHit] | None = None
            used, why = "text", "keyword search (the contract's text scoring)"
            if mode != "text":
                session, reason = self._hybrid(st)
                if session is not None:
                    hits = self._hybrid_hits(st, session, query, top_k, types, paths, edges, hidden)
                    used, why = "hybrid", "semantic memory fused with keywords (the index is fresh)"
                else:
                    why = f"keyword search: {reason}"
            if hits is None:
                hits = self._text_hits(st, query, top_k, types, paths, edges, hidden)
            for h in hits:
                if include_content:
                    h.content = _bounded(self._note(st, h.id).body)
                if include_neighbors:
                    h.neighbors = _neighbors(st, h.id, include_neighbors)
            tokens = _trim(hits, budget) if budget > 0 else _estimate(hits)
            return SearchAnswer(query=query, mode=used, mode_reason=why, top_k=top_k, budget=budget,
                                estimated_tokens=tokens, filters=SearchFilters(types, paths, edges), results=hits,
                                tree=st.root_tree, hidden=len(hidden), dream_due=_memory_event(st.view, "hit", hits))

    def _note(self, st: _State, nid: str) -> Note:
        return st.view.note_of(st.view.nodes[nid].blob)

    def _text_hits(self, st: _State, q: str, k: int, types: list[str], paths: list[str],
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

    def _hybrid(self, st: _State) -> tuple[RecallSession | None, str]:
        if st.hybrid is not None or st.hybrid_reason is not None:
            return st.hybrid, st.hybrid_reason or ""
        cfg = st.view.cfg
        if cfg.provider != "vivary-local":
            st.hybrid_reason = "semantic memory is not enabled for this workspace (.vivary/memory.toml)"
        elif st.delta or st.gone:
            st.hybrid_reason = (f"the semantic index is stale ({len(st.delta) + len(st.gone)} note(s) changed since "
                                "it was built; run `git vivary index --yes`)")
        else:
            from vivary_git.memory.local.provider import LocalMemory
            from vivary_git.memory.local.recall import RecallSession

            memory = LocalMemory(st.view.ws, cfg)
            memory._snap = st.view.snapshot  # the same privacy-filtered snapshot: not decided twice
            manifest = memory.manifest()
            if manifest is None:
                st.hybrid_reason = "there is no semantic index yet (run `git vivary index --yes`)"
            elif manifest.fingerprint != st.view.snapshot.fingerprint:
                st.hybrid_reason = "the semantic index is stale (run `git vivary index --yes`)"
            else:
                try:
                    st.hybrid = RecallSession(memory)
                except VivaryError as err:
                    st.hybrid_reason = f"the semantic index cannot be used ({err})"
        if st.hybrid is None and st.hybrid_reason is None:
            st.hybrid_reason = "the semantic index cannot be used"
        return st.hybrid, st.hybrid_reason or ""

    def _hybrid_hits(self, st: _State, session: RecallSession, q: str, k: int, types: list[str],
                     paths: list[str], edges: list[str], hidden: frozenset[str] = frozenset()) -> list[SearchHit]:
        from vivary_git.memory.provider import RecallFilters
        from vivary_git.query import make_snippet, terms_of

        wanted = min(k + len(hidden), 250)  # archived or expired memories are dropped from what comes back
        got = session.recall(q, k=wanted, filters=RecallFilters(types=types, paths=paths, edges=edges),
                             mode="hybrid")
        out: list[SearchHit] = []
        terms = terms_of(q)
        for h in got:
            node = st.nodes.get(h.node_id)
            if node is None or node.id in hidden:
                continue
            if len(out) >= k:
                break
            note = self._note(st, node.id)
            out.append(SearchHit(
                id=node.id, type=node.type, path=node.path, title=node.title, score=h.score, reason=h.reason,
                snippet=make_snippet(note, node, q.lower().strip(), terms, SNIPPET) or None,
                edges=[EdgeRef(node.id, f, to) for f, to in st.out.get(node.id, ())] or None,
            ))
        return out

    # --- read -------------------------------------------------------------------------------------

    def read(self, id: str, *, include_content: bool = False, neighbors: int = 1) -> NodePacket:
        if not isinstance(id, str) or not id.strip():
            raise UsageError("give a node id (from search) or a note's path")
        if not 0 <= neighbors <= MAX_HOPS:
            raise UsageError(f"neighbors must be 0 to {MAX_HOPS} hops (got {neighbors})")
        with self._lock:
            st = self.state()
            found = st.view.find(id.strip())
            if found is None:
                self._refuse_private_path(st, id.strip())
                raise UsageError(f"no public node {id!r} in this workspace (ids come from `search`; private notes "
                                 "are never shown)")
            node = st.nodes[found.id]
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

    def _refuse_private_path(self, st: _State, asked: str) -> None:
        """An agent naming a private file by path is told it is private, and why."""
        path = asked.lstrip("/")
        if "\x00" in path or not path or any(p in ("", ".", "..") for p in path.split("/")):
            return
        from vivary_git.memory.snapshot import decide_for_source
        from vivary_git.privacy import PrivacyError

        view = st.view
        candidates = [path] if path.endswith((".md", ".markdown")) else [path, f"{path}.md"]
        try:
            verdicts = decide_for_source(view.ws, [view.repo_path(p) for p in candidates], view.cfg.policy())
        except PrivacyError:
            return
        for v in verdicts:
            if v.private:
                raise RefusedError(f"{asked!r} is private ({v.reason}): vivary never shows private files to agents")

    # --- resources ------------------------------------------------------------------------------

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

    # --- dream --------------------------------------------------------------------------------------

    def dream(self, *, inspect: str | None = None, task_id: str | None = None, title: str | None = None,
              content: str | None = None, use_heuristic: bool = False, force: bool = False) -> Any:
        """The `dream` tool: a run (when due, or `force`), a task resolved, or `inspect` status|runs|tasks."""
        from vivary_git.memory.dream import dream

        resolving = title is not None or content is not None or use_heuristic
        if inspect is not None and (task_id or resolving or force):
            raise UsageError("inspect lists: give it alone")
        if resolving and not task_id:
            raise UsageError("title/content or use_heuristic resolve a task: give task_id (dream with inspect=tasks)")
        if inspect is None:
            self._writable("dream")
        with self._lock:
            st = self.state()
            if inspect is not None:
                return dream.inspect(st.view, inspect)
            if task_id:
                answer = dream.resolve(st.view, task_id, title=title, content=content, use_heuristic=use_heuristic,
                                       source=self.source)
            else:
                answer = dream.run(st.view, force=force, source=self.source)
            if answer.resolution is not None or (answer.run is not None and answer.run.expire_commit):
                self._state = None  # several notes changed in one commit: read the tree again
            return answer

    # --- status -------------------------------------------------------------------------------------

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
            return Status(
                ok=True,
                workspace={"root": str(ws.source.root), "config": ws.config.source, "dialect": ws.config.dialect,
                           "ids": ws.config.links.ids},
                tree={"id": st.root_tree, "head": st.key[1], "branch": branch, "source": ws.source.label},
                nodes={"public": len(st.nodes), "private": view.snapshot.private_count,
                       "memories": len(view.memories()), "edges": sum(len(v) for v in st.out.values()),
                       "written_since_start": len(st.delta)},
                memory={"enabled": cfg.enabled, "provider": cfg.provider,
                        "search": "hybrid" if st.hybrid is not None else "text", "search_reason": reason,
                        "folder": remember.folder, "branch": remember.branch or branch,
                        "similarity": remember.similarity},
                profile=self.profile, tools=list(PROFILES[self.profile]), dream=_dream_status(view),
                onboarding=self._onboarding(ws.source.root) if "onboard" in PROFILES[self.profile] else None,
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

    # --- onboarding -------------------------------------------------------------------------------

    def onboard(self, answers: Mapping[str, str] | None = None) -> Onboarded:
        """The first-start questions and which are answered; with `answers`, those written into the
        private USER.md profile as `git vivary onboard --answer` writes them (`hosts/onboard.py`)."""
        from vivary_git.hosts import onboard

        self._writable("onboard")
        checked = onboard.check_answers(answers or {}, what="answers key")
        with self._lock:
            root = self.state().view.ws.source.root
            report = onboard.record(root, checked) if checked else onboard.status(root)
            answered = set(report.answered)
            return Onboarded(ok=True, file=report.file, done=report.done, written=report.written,
                             answered=report.answered, missing=report.missing, excluded=report.excluded,
                             questions=[Question(k, q, k in answered) for k, q in onboard.QUESTIONS.items()])

    # --- writes ---------------------------------------------------------------------------------

    def _writable(self, tool: str) -> None:
        if tool not in PROFILES[self.profile]:
            raise RefusedError(f"`{tool}` is not available in the {self.profile} profile (read-only hosts can "
                               "search, read and ask for status)")

    def _probe_for(self, st: _State) -> Probe:
        if self._probe is None:
            from vivary_git.memory.writes.probe_loader import probe_for

            self._probe = probe_for(st.view)
        return self._probe

    def add(self, text: str, *, title: str | None = None, tags: Sequence[str] = (),
            durability: str | None = None, links: Sequence[str] = (), force: bool = False) -> Remembered:
        from vivary_git.memory.writes import remember

        self._writable("add")
        with self._lock:
            st = self.state()
            result = remember.add(st.view, text, title=title, tags=tags, durability=durability, links=links,
                                  force=force, source=self.source, probe=self._probe_for(st))
            if result.ok and result.commit is not None:
                self._after_write(st, result, add=[(e.field, e.to) for e in result.links or ()])
            return result

    def update(self, id: str, *, text: str | None = None, tags: Sequence[str] | None = None,
               durability: str | None = None) -> Remembered:
        from vivary_git.memory.writes import remember

        self._writable("update")
        with self._lock:
            st = self.state()
            result = remember.update(st.view, id, text=text, tags=tags, durability=durability, source=self.source)
            if result.commit is not None:
                self._after_write(st, result)
            return result

    def link(self, source: str, field: str, target: str) -> Remembered:
        return self._relink("link", source, field, target)

    def unlink(self, source: str, field: str, target: str) -> Remembered:
        return self._relink("unlink", source, field, target)

    def _relink(self, tool: str, source: str, field: str, target: str) -> Remembered:
        from vivary_git.memory.writes import remember

        self._writable(tool)
        with self._lock:
            st = self.state()
            fn = remember.link if tool == "link" else remember.unlink
            result = fn(st.view, source, field, target, source=self.source)
            if result.commit is not None and result.edge is not None:
                edge = (result.edge.field, result.edge.to)
                self._after_write(st, result, add=[edge] if tool == "link" else [],
                                  remove=[edge] if tool == "unlink" else [])
            return result

    def anchor(self, *, file: str | None = None, folder: str | None = None, url: str | None = None,
               allow_network: bool = False, description: str | None = None, title: str | None = None,
               tags: Sequence[str] = (), durability: str | None = None, links: Sequence[str] = (),
               force: bool = False) -> Anchored:
        """`add` with a source anchor (memory/sources/anchors.py): a file or folder (paths relative to the
        repository top) or a web page (fetched only with the network allowed by both the workspace and
        `allow_network`)."""
        from vivary_git.memory.sources import anchors

        self._writable("add")
        given = [k for k, v in (("file", file), ("folder", folder), ("url", url)) if v is not None]
        if len(given) != 1:
            raise UsageError("give one of file, folder or url to remember a source")
        common: dict[str, Any] = {"title": title, "description": description, "tags": tags,
                                  "durability": durability, "links": links, "force": force, "source": self.source}
        if url is not None:
            return self._anchor_url(url, allow_network, common)
        with self._lock:
            st = self.state()
            repo = st.view.ws.source.repo
            base = repo.workdir if repo is not None and repo.workdir is not None else self._cwd
            if file is not None:
                result = anchors.remember_file(st.view, file, base=base, **common)
            else:
                assert folder is not None
                result = anchors.remember_folder(st.view, folder, base=base, **common)
            self._after_anchor(st, result)
            return result

    def _anchor_url(self, url: str, allow_network: bool, common: dict[str, Any]) -> Anchored:
        """`anchors.remember_url` in its three steps, the fetch (up to `timeout` seconds) outside the lock:
        other calls are answered while a slow page arrives. The write decides again under the lock (the
        tree may have moved meanwhile)."""
        from vivary_git.memory.sources import anchors

        with self._lock:
            st = self.state()
            known = anchors.known_url(st.view, url, **{k: v for k, v in common.items() if k != "source"})
            limits = st.view.cfg.memory.sources
        if known is not None:
            return known
        page = anchors.fetch_page(limits, url, allow_network=allow_network)
        with self._lock:
            st = self.state()
            result = anchors.remember_page(st.view, url, page, **common)
            self._after_anchor(st, result)
            return result

    def _after_anchor(self, st: _State, result: Anchored) -> None:
        if result.changed and result.commit is not None:
            self._after_write(st, Remembered(ok=True, op=result.op, changed=True, id=result.id, path=result.path,
                                             commit=result.commit, ref=result.ref, blob=result.blob),
                              add=[(e.field, e.to) for e in result.links or ()])

    def _after_write(self, st: _State, result: Remembered, *, add: Sequence[tuple[str, str]] = (),
                     remove: Sequence[tuple[str, str]] = ()) -> None:
        """Patch the warm state with the note this process just committed, and key it by the tree the
        working tree now has (that tree with the one blob changed): a search right after sees the note,
        and any other change on disk still rebuilds everything."""
        from vivary_git import graph as graph_mod
        from vivary_git.memory.snapshot import MemoryNode
        from vivary_git.memory.writes.commits import _tree_with
        from vivary_git.models import Node

        view = st.view
        ws = view.ws
        assert result.path is not None and result.blob is not None and result.id is not None
        note = view.note_of(result.blob)
        config = ws.config
        facts = graph_mod.facts(result.path, result.blob, note, config, config.folder_types(), ws.root_name)
        node = Node(id=result.id, type=facts.type, path=result.path, title=facts.title, blob=result.blob)
        st.nodes[node.id] = node
        st.delta[node.id] = node
        view.put(MemoryNode(id=node.id, type=node.type, path=node.path, title=node.title, blob=node.blob, fields={}))
        out = st.out.setdefault(node.id, [])
        for field, to in add:
            if (field, to) not in out:
                out.append((field, to))
                st.inn.setdefault(to, []).append((node.id, field))
        for field, to in remove:
            if (field, to) in out:
                out.remove((field, to))
                with contextlib.suppress(ValueError):
                    st.inn.get(to, []).remove((node.id, field))
        out.sort()
        st.hybrid, st.hybrid_reason = None, None
        repo = self._repo
        key = list(st.key)
        if repo is not None and st.root_tree is not None and result.ref is not None:
            if self._checked_out(result.ref):
                path = view.repo_path(result.path)
                tree = _tree_with(repo, repo.repo[st.root_tree], path.split("/"), result.blob)
                assert tree is not None
                key[0] = st.root_tree = tree
                if self._worktree is not None:
                    # Tells the watcher these events are ours (when they are exactly that): no `git add`.
                    self._worktree.wrote(path, result.blob, tree)
            head = repo.repo.references.get("HEAD")
            key[1] = str(head.resolve().target) if head is not None else None
            if view.cfg.memory.remember.branch:
                key[2] = result.commit
        st.key = tuple(key)

    def _checked_out(self, ref: str) -> bool:
        repo = self._repo
        if repo is None:
            return False
        head = repo.repo.references.get("HEAD")
        return head is not None and head.target == ref


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


def _neighbors(st: _State, start: str, hops: int) -> list[Neighbor]:
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


def _estimate(hits: Sequence[SearchHit]) -> int:
    return (len(msgspec.json.encode(list(hits))) + 3) // 4


def _trim(hits: list[SearchHit], budget: int) -> int:
    """Within `budget` tokens (JSON length / 4): drop content, then neighbours, then as `find` does."""
    from vivary_git.query import trim_hits

    trim_hits(hits, lambda: _estimate(hits) > budget, first=("content", "neighbors"))
    return _estimate(hits)
