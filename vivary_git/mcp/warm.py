"""The workspace an MCP server keeps warm for an agent host, always as fresh as the working tree.

Freshness: before each answer the working tree's tree id is brought up to date (`freshness.WorkTree`:
folder watches, and `git add -A` of just the paths that changed into a scratch index this process
keeps) and compared with the tree the warm state was built from; HEAD, a memory branch's tip and
Git's config and excludes are part of the key too. When only notes changed, the state is patched:
the search index stays, the changed notes are searched directly beside it and privacy is decided
again for their paths; anything else rebuilds the state. No answer comes from an older tree than
the one on disk. The service's own writes patch the state without looking (writes.py).

`Warm` holds that state for `service.MemoryService`, whose read side (reads.py) and write side (writes.py)
answer from it; `PROFILES` and `RESOURCES` say what each profile may do.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git import git
from vivary_git.errors import PrivacyError, UsageError, VivaryError
from vivary_git.mcp.profiles import PROFILES

if TYPE_CHECKING:
    from vivary_git.graph import Graph
    from vivary_git.mcp.freshness import WorkTree
    from vivary_git.mcp.usermem import UserMemory
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.local.recall import RecallSession
    from vivary_git.memory.provider import IndexReport
    from vivary_git.memory.writes.probe import Probe
    from vivary_git.memory.writes.remember import View
    from vivary_git.models import Edge, Node
    from vivary_git.searchindex import Ranker, SearchIndex


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


def _text_form(nodes: list[Node], edges: list[Edge]) -> tuple[list[Node], list[Edge]]:
    """A graph's nodes and edges with every id, path and title in its text form (`escape.name`), as the
    view (`memory.snapshot`) has them; the lists themselves when every name is its own text form."""
    from vivary_git import escape

    name = escape.name
    if all(name(n.id) == n.id and name(n.path) == n.path and name(n.title) == n.title for n in nodes):
        return nodes, edges
    shown = [msgspec.structs.replace(n, id=name(n.id), path=name(n.path), title=name(n.title)) for n in nodes]
    moved = [msgspec.structs.replace(e, from_=name(e.from_), to=name(e.to)) for e in edges]
    return sorted(shown, key=lambda n: n.id), sorted(moved)


def _brought_up(report: IndexReport) -> str:
    """What a write-through did, in its run's own counts: a note whose vectors were cached (on switching back to
    the branch the index was built on) is not embedded again, and a note that left the snapshot (deleted, or held
    back by a privacy change) is dropped, not embedded."""
    done: list[str] = []
    if report.embedded:
        done.append(f"{report.embedded} note(s) embedded as they changed")
    if report.removed:
        done.append(f"{report.removed} note(s) dropped from it")
    if done:
        return " and ".join(done)
    return "brought up to this tree from cached vectors, no note embedded" if report.reused else "no note embedded"


class State:
    """One tree's warm answers: the view (privacy-filtered), the public graph and its search index,
    and the nodes changed since that index was built (`delta`, searched directly beside it; `gone`,
    left out of its answers). A state built after an edit (`base`: the state before) keeps the
    base's index and graph: only the edited notes are searched anew."""

    def __init__(self, key: tuple[Any, ...], view: View, base: State | None = None,
                 changed: Collection[str] = ()) -> None:
        from vivary_git import graph as graph_mod

        self.key = key
        self.view = view
        ws = view.ws
        full = ws.graph()
        admitted = view.nodes
        # The view names every node in its text form (a file name that is not UTF-8 has `\xNN` for each such
        # byte: no other form goes into JSON); so does this state, or such a note was in neither its search
        # nor its reads (`read` of the id `search` gave failed).
        nodes, edges = _text_form(full.nodes, full.edges)
        current: Graph = graph_mod.Graph(
            root=full.root, tree=full.tree, config=full.config, findings=[],
            nodes=[n for n in nodes if n.id in admitted],
            edges=[e for e in edges if not e.broken and e.from_ in admitted and e.to in admitted],
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
        self.hybrid_reason: str | None = None  # why there is no hybrid search
        self.hybrid_note = "the index is fresh"  # what the hybrid search's answers say of the index
        # Whether `view.snapshot` is the snapshot of this state's tree: not once this process's own write patched
        # the state without reading the tree again (writes.py `_after_write`).
        self.current = True
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


class Warm:
    """One workspace for one agent host, kept warm. Thread-safe: one request at a time (a web page is fetched
    outside the lock, so a slow page holds up no other request)."""

    def __init__(self, cwd: str | os.PathLike[str] | None = None, *, root: str | None = None,
                 profile: str = "host-core", source: str = "agent", user_memory: bool = True) -> None:
        if profile not in PROFILES:
            raise UsageError(f"unknown profile {profile!r}; use one of {', '.join(PROFILES)}")
        self.profile = profile
        self.source = source
        self._cwd = Path(cwd).resolve() if cwd is not None else Path.cwd()
        self._root = root
        self._lock = threading.RLock()
        self._state: State | None = None
        self._probe: Probe | None = None
        self._embedder: Embedder | None = None  # the semantic index's model, once loaded (write-through)
        self._repo = git.try_open(self._cwd)
        if self._repo is not None and self._repo.workdir is not None:
            from vivary_git.memory.writes.commits import recover_now

            # A memory committed by a server killed before the path reached the user's index: put it in now,
            # before the user's next `git commit` could delete it (commits.py).
            with contextlib.suppress(VivaryError, OSError):
                recover_now(self._repo)
        self._worktree: WorkTree | None = None
        self._user_enabled = user_memory
        self._usermem: UserMemory | None = None

    def usermem(self) -> UserMemory:
        """The user's own memory repository beside this workspace (mcp/usermem.py), located on first use."""
        if self._usermem is None:
            from vivary_git.mcp.usermem import UserMemory

            def opener(path: str) -> Any:  # the same kind of service, over the user memory, with none of its own
                return type(self)(path, profile=self.profile, source=self.source, user_memory=False)

            self._usermem = UserMemory(self._repo, opener, enabled=self._user_enabled)
        return self._usermem

    def close(self) -> None:
        if self._worktree is not None:
            self._worktree.close()
            self._worktree = None
        if self._usermem is not None:
            self._usermem.close()

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
            from vivary_git.memory.writes.commits import branch_tip

            tip = branch_tip(repo, f"refs/heads/{branch}")
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

    def state(self) -> State:
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
            state = State(key, open_view(ws, cfg))
            if state.view.cfg.memory.remember.branch and key[2] is None:
                state.key = self._key()  # the branch is known now: key it by its tip too
            self._state = state
            self._probe = None
            return state

    def _patched(self, st: State, key: tuple[Any, ...], *, reread: bool = False) -> State | None:
        """The state for `key` made from `st` when only notes changed (their content, or notes added,
        removed or renamed) since `st`'s search index was built: the same index, with those notes
        searched directly, and privacy decided again for just their paths. None: rebuild. `reread`: the
        tree is `st`'s own, which this process patched after a write: read it again (a current snapshot)."""
        repo = self._repo
        old = st.view
        if (repo is None or key[2:] != st.key[2:] or st.base_tree is None or key[0] is None
                or old.cfg.memory.remember.branch):
            return None
        if key[0] == st.key[0] and not reread:  # HEAD alone moved (a commit of what was already there)
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

        # Not recorded in refs/vivary/cache: a tree patched in is this server's write (or the user's edit of a few
        # notes), superseded by the next one within seconds. Recorded, each cost two cache commits (~12 objects),
        # unreachable once the chain restarted, so loose for two weeks: ~4 a call, Git's "too many unreachable
        # loose objects" past ~2,000 calls. The next command that reads the tree (`check`, `index`, a hook)
        # records what the cache lacks, this session's parses and vectors included.
        ws = open_workspace(self._cwd, root=self._root, worktree=key[0], shared_cache=False)
        if ws.source.prefix != old.ws.source.prefix or ws.source.tree_id is None:
            return None
        prefix = f"{ws.source.prefix}/" if ws.source.prefix else ""
        admitted = {n.id for n in old.snapshot.nodes}
        known = {prefix + n.path: text_name(n.id) in admitted for n in old.ws.graph().nodes if n.path not in changed}
        view = open_view(ws, old.cfg, known=known)
        state = State(key, view, base=st, changed=changed)
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
        from vivary_git.memory.writes.commits import _tree_with, branch_tip

        tip = branch_tip(repo, f"refs/heads/{branch}")  # a symbolic ref is not followed: no overlay
        if tip is None:
            return None
        prefix = f"{ws.source.prefix}/{folder}" if ws.source.prefix else folder
        try:
            sub = repo.repo[tip].peel(repo.pygit2.Tree)[prefix]
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

    def _hybrid(self, st: State) -> tuple[RecallSession | None, str]:
        """The semantic index's session for this state, or why there is none. An index a few notes behind this
        tree is brought up to it first (write-through: memory/local/writethrough.py), with the model this
        process keeps loaded; past `[memory] max_unindexed` notes changed outside it, or without the model,
        the answer is keywords and says why."""
        if st.hybrid is not None or st.hybrid_reason is not None:
            return st.hybrid, st.hybrid_reason or st.hybrid_note
        cfg = st.view.cfg
        if cfg.provider != "vivary-local":
            st.hybrid_reason = "semantic memory is not enabled for this workspace (.vivary/memory.toml)"
        elif not st.current:
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
                self._write_through(st, memory)
            else:
                try:
                    # The server's one model (`_model`), in its build: it also writes the index through.
                    st.hybrid = RecallSession(memory, embedder=self._embedder, use="server")
                    self._embedder = st.hybrid.embedder
                except VivaryError as err:
                    st.hybrid_reason = f"the semantic index cannot be used ({err})"
        if st.hybrid is None and st.hybrid_reason is None:
            st.hybrid_reason = "the semantic index cannot be used"
        return st.hybrid, st.hybrid_reason or st.hybrid_note

    def _write_through(self, st: State, memory: LocalMemory) -> None:
        """Bring the semantic index up to this state's snapshot, as `index --yes` would, when at most
        `[memory] max_unindexed` notes differ from the tree it was built from; else say why not."""
        from vivary_git.memory.local.writethrough import unindexed, write_through

        limit = st.view.cfg.memory.max_unindexed
        count = unindexed(memory)
        if count is None or count > limit:
            many = "the notes" if count is None else f"{count} note(s)"
            st.hybrid_reason = (f"the semantic index is stale: {many} changed outside this server since it was built, "
                                f"more than [memory] max_unindexed = {limit} it embeds itself; run "
                                "`git vivary index --yes`")
            return
        embedder = self._semantic_model(st)
        if embedder is None:
            return
        try:
            st.hybrid, report = write_through(memory, embedder)
        except VivaryError as err:
            st.hybrid_reason = (f"the semantic index could not be brought up to date ({err}); run "
                                "`git vivary index --yes`")
            return
        st.hybrid_note = f"the index is fresh: {_brought_up(report)}"

    def _semantic_model(self, st: State) -> Embedder | None:
        """The server's model (`_model`); None, with the reason on `st`, when it cannot be loaded."""
        from vivary_git.memory.local.embed import EmbedderError

        try:
            return self._model(st)
        except EmbedderError as err:
            st.hybrid_reason = f"the embedding model is unavailable ({err})"
            return None

    def _model(self, st: State) -> Embedder:
        """The one model of this process, loaded once, for its searches, its write-through and the similarity
        probe of its adds: in the build `runtime.BUILDS` gives the server, the one `git vivary index --yes` and
        `git vivary remember` load, so the vectors it writes through and the probe vectors it caches are the very
        bits those commands make. Raises `EmbedderError` when it cannot be loaded."""
        if self._embedder is None:
            from vivary_git.memory.local.runtime import _load_embedder, require_extra

            require_extra()
            self._embedder = _load_embedder(st.view.cfg.memory.local.model, use="server")
        return self._embedder

    def warm_up(self) -> None:
        """Build the state and the search index now (server start), not on the first question. A tree the snapshot
        refuses (`PrivacyError`: a note that is a symbolic link, say) is no reason not to serve: each call answers
        the refusal until the tree is fixed, and then is served as usual."""
        with contextlib.suppress(PrivacyError):
            self.state().index()
