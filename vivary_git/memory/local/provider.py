"""vivary-local: offline semantic memory — embeddings (embed.py) + hnswlib + BM25, fingerprint-gated.

`LocalMemory` is the provider for one workspace at one tree, the library form of `index`, `recall` and
`forget`. Indexing (index.py) embeds only the packets whose digest the vector cache lacks and brings the
HNSW graph and the lexical index up to date; the manifest, written last, binds all of it to the snapshot
fingerprint. Recall (recall.py) refuses (exit 3) unless the manifest's fingerprint is the current
snapshot's, and answers only with node ids of that snapshot. What the provider needs installed, and when it
is imported, is runtime.py's.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import msgspec

from vivary_git import lifetime, privacy
from vivary_git.errors import RefusedError
from vivary_git.memory.local.files import EMBED_FORMAT, MANIFEST, PROVIDER, TREES, Manifest, _decode, _manifest_problem
from vivary_git.memory.local.index import _IndexBuilder, _PendingEmbedder, _ReadAhead, _sweep
from vivary_git.memory.local.recall import RecallSession
from vivary_git.memory.local.runtime import require_extra
from vivary_git.memory.provider import (
    INDEX_COMMAND,
    ForgetReport,
    IndexReport,
    RecallFilters,
    RecallHit,
    RecallMode,
    require_local,
    state_store,
)
from vivary_git.memory.snapshot import MemorySnapshot, Packets, build_snapshot, dataset_name

if TYPE_CHECKING:
    from vivary_git.memory.config import MemoryConfig
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.state import LocalStateStore
    from vivary_git.workspace import Workspace


class Superseded(Exception):
    """The commit an `index --auto --rev` run was started for is no longer the one checked out (`LocalMemory.index`'s
    `superseded`): the run ends without touching the index."""


class LocalMemory:
    """The vivary-local provider for one workspace at one tree. Library form of index/recall/forget."""

    provider = PROVIDER

    def __init__(self, ws: Workspace, cfg: MemoryConfig | None = None) -> None:
        from vivary_git.memory.config import load_memory_config

        self.ws = ws
        self.cfg = cfg if cfg is not None else load_memory_config(ws)
        self._snap: MemorySnapshot | None = None
        self._store: LocalStateStore | None = None
        # Privacy questions Git answered for this object's snapshot: recording vectors asks one again.
        self._privacy = privacy.PrivacyMemo()

    @property
    def dataset(self) -> str:
        return dataset_name(self.ws.source.root, self.cfg.dataset_label)

    @property
    def store(self) -> LocalStateStore:
        """The dataset's state folder (provider.py `state_store`: a folder in the work tree is decided on once)."""
        if self._store is None:
            self._store = state_store(self.ws, self.cfg, self.dataset)
        return self._store

    @property
    def assembled(self) -> LocalStateStore:
        """Where recall keeps what it assembled for trees other than the index's (memory/local/assemble.py)."""
        return self.store.child(TREES)

    def snapshot(self, *, overlap: bool | None = None) -> MemorySnapshot:
        """The memory snapshot (built once); `overlap` as for `build_snapshot`."""
        if self._snap is None:
            cfg = self.cfg
            self._snap = build_snapshot(self.ws, cfg.policy(), provider=cfg.provider, model=cfg.model,
                                        dataset_label=cfg.dataset_label, with_fields=False, overlap=overlap,
                                        memo=self._privacy)
        return self._snap

    def manifest(self) -> Manifest | None:
        """The stored manifest, or None when there is none or it is damaged."""
        found: Manifest | None = _decode(self.store.get(MANIFEST), Manifest, json=True)
        return found if found is not None and _manifest_problem(found) is None else None

    def dry_run(self) -> IndexReport:
        snap = self.snapshot()
        return IndexReport(
            ok=True, provider=snap.provider, dataset=snap.dataset, dry_run=True, indexed=0,
            would_index=len(snap.nodes), edges=len(snap.edges), private=snap.private_count,
            fingerprint=snap.fingerprint, enabled=self.cfg.enabled, left_out=snap.left_out,
        )

    # --- index ---------------------------------------------------------------------------------------

    def index(self, *, approved: bool, progress: Callable[[int, int], None] | None = None,
              embedder: Embedder | None = None, superseded: Callable[[], bool] | None = None) -> IndexReport:
        """Bring the index up to date with the current snapshot (incrementally). `approved` is `--yes`
        (or `auto_index`); without it the configured gate (`require_explicit_index`) refuses with exit 3.
        `progress(done, total)` is called as packets are embedded. `embedder`: the configured model, already
        loaded (a long-lived process's); else it is loaded when something is to be embedded. `superseded`: asked
        once the index lock is held; when it says yes, `Superseded` is raised and nothing is written."""
        # A privacy question asked for the snapshot, for recording the tree's parses and for recording its
        # vectors is asked of Git once in this run (`privacy.PrivacyMemo`); and both are recorded in one
        # cache commit, not two (`record.one_commit`).
        from vivary_git import record

        ws, kept = self.ws, self.ws.privacy_memo
        ws.privacy_memo = self._privacy
        try:
            with record.one_commit(ws):
                return self._index(approved=approved, progress=progress, loaded=embedder, superseded=superseded)
        finally:
            ws.privacy_memo = kept

    def _index(self, *, approved: bool, progress: Callable[[int, int], None] | None,
               loaded: Embedder | None, superseded: Callable[[], bool] | None) -> IndexReport:
        started = time.perf_counter()
        require_local(self.cfg, "index")
        gate = self.cfg.memory.local
        if not approved and gate.require_explicit_index and not gate.auto_index:
            raise RefusedError(
                "indexing copies the text of every public note into a local embedding index, so it needs "
                f"your approval: run `{INDEX_COMMAND}` (or set `require_explicit_index = false`, or "
                "`auto_index = true`, under [memory.local] in .vivary/memory.toml)"
            )
        require_extra()
        # The model (~0.4 s and ~260 MiB) is loaded only once a note is left to embed after the caches had their say
        # (`_IndexBuilder.run`), not ahead beside the snapshot: an index that is this snapshot's, or whose every
        # vector the shared cache (`sync fetch`), another state folder or this folder's own rows hold (a checkout
        # back to a tree indexed before), never loads it. Loading it ahead won an edit's run nothing under load
        # (docs/index.md#when-the-model-is-loaded).
        embedder = _PendingEmbedder(self.cfg.memory.local.model)
        if loaded is not None:
            embedder.use(loaded)
        store = _ReadAhead(self.store)
        # Privacy is decided beside the graph, in a thread: the graph is most likely cached but for the notes just
        # edited (no parsing on every core to keep threads out of).
        snap = self.snapshot(overlap=True)
        store.ready()  # a folder that cannot be written fails now, not after the notes are embedded
        builder = _IndexBuilder(store, snap, embedder, tree=self.ws.source.tree_id, label=self.ws.source.label,
                                progress=progress)
        from vivary_git.memory.local.vectors import IndexSharing

        # The store itself, not the read-ahead view: the sharing state is not read ahead, and a note leaving the
        # index removes what recall assembled in the store's folder.
        sharing = builder.shared = IndexSharing(self.ws, store.inner, embedder, embed_format=EMBED_FORMAT,
                                                assembled=self.assembled, memo=self._privacy)
        # Packets are rendered only when asked for: the unchanged index needs none (unless recording needs a
        # vector key this clone has not remembered), an edit only the packets whose inputs changed.
        rendered = Packets(self.ws, snap)
        with self._lock(quiet=progress is None):
            if superseded is not None and superseded():
                raise Superseded
            if self.store.written is None:  # under .git/vivary/memory/: `cache gc` tells by it when it is dead
                from vivary_git.memory.local.folders import claim

                # Under the lock: a run the lock refuses (something in the way of `.git/vivary/locks`) writes nothing.
                claim(self.store, self.ws.source.root)
            _sweep(store.inner)
            found = builder.unchanged()
            if found is not None:
                # The index is this snapshot's: its packets are the ones indexed (the fingerprint binds blobs,
                # ids, paths, types and edges).
                report, digests = found
            else:
                digests = builder.digests(rendered)
                report = builder.run(rendered, digests)
            recorded = sharing.record(snap, digests, lambda i: rendered[i][1])
        # The model's session (0.03-0.1 s to tear down), the snapshot and the packets are left for the system to
        # take back when the command exits (lifetime.py), not freed one by one before it answers.
        lifetime.keep_until_exit((self, embedder, builder, rendered))
        return msgspec.structs.replace(report, state=store.location, fetched=sharing.adopted, borrowed=sharing.borrowed,
                                       recorded=recorded, seconds=round(time.perf_counter() - started, 3))

    def _lock(self, *, quiet: bool) -> contextlib.AbstractContextManager[None]:
        """One index writer per dataset at a time (memory/lock.py); none outside a Git repository."""
        from vivary_git.memory.lock import index_lock

        repo = self.ws.source.repo
        return index_lock(repo.vivary_dir, self.dataset, quiet=quiet) if repo is not None \
            else contextlib.nullcontext()

    # --- recall --------------------------------------------------------------------------------------

    def open(self, queries: Sequence[str] = (), *, embedder: Embedder | None = None) -> RecallSession:
        """Verify and load the index for recall (refuses when missing, stale or damaged). `queries`: the
        questions the session will be asked first, embedded as soon as the model is loaded, in its thread,
        while the index is still being read. `embedder`: the model, already loaded."""
        return RecallSession(self, queries, embedder=embedder)

    def recall(self, query: str, *, k: int = 10, filters: RecallFilters | None = None,
               mode: RecallMode = "hybrid") -> list[RecallHit]:
        return RecallSession(self).recall(query, k=k, filters=filters, mode=mode)

    # --- forget --------------------------------------------------------------------------------------

    def forget(self, *, approved: bool) -> ForgetReport:
        """Remove this workspace's whole dataset: vectors, HNSW, lexical index and manifest."""
        if self.cfg.provider not in ("none", PROVIDER):
            require_local(self.cfg, "forget")  # cognee: say which tool forgets it
        store = self.store
        if not approved:
            raise RefusedError(
                f"forget deletes this workspace's whole local memory index ({store.location}); "
                "run `git vivary forget --yes` to confirm (the notes themselves are not touched)"
            )
        removed = store.delete_all()
        return ForgetReport(ok=True, provider=PROVIDER, dataset=self.dataset, removed=removed, state=store.location)

