"""vivary-local's recall (`RecallSession`): a verified, loaded index answering queries.

Rebuild the current snapshot, refuse (exit 3) unless the manifest's fingerprint is the snapshot's, verify
each state file against the manifest, then answer from the vectors alone (`semantic`), BM25 alone (`keyword`,
the MCP server's keyword search) or both fused by weighted reciprocal rank (`hybrid`, the default) and nudged
by what the notes' frontmatter and names say (signals.py). Hits are only ever node ids of the current
snapshot. Type/path/edge filters and left-out notes are applied before ranking, so a filtered recall returns
k hits whenever k notes pass: BM25 scores only the notes that pass, and their vectors are ranked by exact
cosine (a scope of up to `EXACT_SCAN` notes) or by the ANN graph asked deeper until enough of them come back.
A tree the index was not built from is answered from its notes' vectors (assemble.py) or refused.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from vivary_git.errors import RefusedError, UsageError
from vivary_git.memory.local import runtime
from vivary_git.memory.local.embed import model_environment
from vivary_git.memory.local.files import (
    DATE_NUDGE,
    ENTRIES,
    EXACT_SCAN,
    FIELD_NUDGE,
    FUSION,
    FUSION_DEPTH,
    HNSW_EF,
    HNSW_FILE,
    LEXICAL,
    NEXT_NUDGE,
    PROVIDER,
    RRF_K,
    STATE_FORMAT,
    Entries,
    Entry,
    Manifest,
    _as_file,
    _decode,
    _hnsw_problem,
    _sha,
)
from vivary_git.memory.provider import (
    EDGE_CONTEXT,
    INDEX_COMMAND,
    RecallFilters,
    RecallHit,
    RecallMode,
    normalise_k,
    outbound_map,
    require_local,
)
from vivary_git.memory.snapshot import MemoryEdge, MemorySnapshot
from vivary_git.parallel import Background
from vivary_git.refnames import CACHE_REF

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vivary_git.memory.config import MemoryConfig
    from vivary_git.memory.local.bm25 import LexicalIndex, Tokenizer
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.local.signals import Signals
    from vivary_git.memory.state import LocalStateStore, StateStore
    from vivary_git.titlematch import Names
    from vivary_git.workspace import Workspace


SessionMode = RecallMode | Literal["keyword"]


class _Scope:
    """The entries a filter admits (a mask over the entries), with their vectors once an exact scan needs them."""

    def __init__(self, mask: npt.NDArray[np.bool_]) -> None:
        import numpy as np

        self.mask = mask
        self.docs = np.flatnonzero(mask)
        self.vectors: npt.NDArray[np.float32] | None = None


class Memory(Protocol):
    """What recall needs of the local memory (provider.py `LocalMemory`, which imports this module): what
    assembling needs (assemble.py `Memory`), its snapshot, its manifest and its index lock."""

    @property
    def ws(self) -> Workspace: ...
    @property
    def cfg(self) -> MemoryConfig: ...
    @property
    def dataset(self) -> str: ...
    @property
    def store(self) -> LocalStateStore: ...
    def snapshot(self, *, overlap: bool | None = None) -> MemorySnapshot: ...
    def manifest(self) -> Manifest | None: ...
    def _lock(self, *, quiet: bool) -> contextlib.AbstractContextManager[None]: ...


def _load_and_ask(name: str, queries: tuple[str, ...], asked: dict[tuple[str, ...], Any], *,
                  use: runtime.Use = "recall") -> Embedder:
    """The model, in the build `runtime.BUILDS` gives `use` (recall's own: unoptimised, for short queries),
    and the first `queries` embedded with it at once, into `asked`, exactly as `RecallSession.recall_many`
    would embed them. A query it cannot embed is left to `recall_many`, which says why."""
    embedder = runtime._load_embedder(name, use=use)
    if queries and all(q.strip() for q in queries):
        with contextlib.suppress(Exception):
            asked[queries] = embedder.embed(list(queries))
    return embedder

def _index_files(store: StateStore, manifest: Manifest) -> tuple[dict[str, bytes], str]:
    """The files recall loads, each as the manifest vouches for it; else the name of the first that is not."""
    blobs: dict[str, bytes] = {}
    for name in (ENTRIES, HNSW_FILE, LEXICAL):
        data = store.get(name)
        ref = manifest.files.get(name)
        if data is None or ref is None or len(data) != ref.size or _sha(data) != ref.sha256:
            return blobs, name
        blobs[name] = data
    return blobs, ""


def _check_trust(memory: Memory, manifest: Manifest, entries: Entries) -> None:
    """Refuse (exit 3) an index holding vectors taken from the shared cache under a `vivary.cacheTrust` this
    clone no longer has: recall never ranks with them; `index` drops them and embeds those notes here."""
    from vivary_git.memory.local.vectors import SharedVectors, allows, index_level

    trust = SharedVectors(memory.ws).trust
    if trust == "any":
        return  # every level is allowed: nothing to read
    level = manifest.trust or index_level(memory.store, (e.digest for e in entries.entries))
    if not allows(trust, level):
        raise RefusedError(
            f"the memory index holds vectors taken from {CACHE_REF} under vivary.cacheTrust {level}, and this clone's "
            f"vivary.cacheTrust is {trust} now, so recall does not rank with them (docs/cache.md#lowering-the-trust); "
            f"run `{INDEX_COMMAND}` to drop them and embed those notes here"
        )


def _graph_is_shared(ws: Workspace) -> bool:
    """Whether this run reads the tree's facts from the shared cache, which recorded the tree (as CI's `check`
    does): then building its graph parses next to nothing. Cheap: the manifest only."""
    ref = ws.refcache()
    tree = ws.source.tree_id
    if ref is None or tree is None or not ref.reads() or {"created", "updated"} & set(ws.config.derive):
        return False
    from vivary_git.store.format import tree_key

    snap = ref.snapshot()
    return snap is not None and tree_key(tree, ws.config.digest(), ws.source.prefix) in snap.manifest.trees


class RecallSession:
    """A verified, loaded index for many queries (`recall --queries`); refuses when stale or damaged."""

    def __init__(self, memory: Memory, queries: Sequence[str] = (), *, embedder: Embedder | None = None,
                 use: runtime.Use = "recall") -> None:
        """`embedder`: the model, already loaded; else it loads in a thread, in the build `runtime.BUILDS` gives
        `use`: `"server"` for the MCP server, whose one model also writes the index through."""
        cfg = memory.cfg
        require_local(cfg, "recall")
        self.memory = memory
        runtime.require_extra()
        store = memory.store
        from vivary_git.memory.local.assemble import assemble, assembly_likely, prefetch_notes

        # The first recall of a tree the index was not built from: a child reads the notes meanwhile (it must
        # start before any thread), and a graph the shared cache recorded is read beside the privacy decisions
        # (`build_snapshot`). Otherwise the graph comes first: one nobody recorded may have to parse every note,
        # on every core, which a running thread would prevent; a cached one is read in a few hundredths.
        likely = assembly_likely(memory)
        if not likely or not _graph_is_shared(memory.ws):
            memory.ws.graph()
        notes = prefetch_notes(memory, settle=runtime._wait_for_preload) if likely else None
        try:
            # The model loads, and embeds the first questions, in a thread while the index is read.
            model_environment()  # here, not in the thread (see model_environment)
            self._asked: dict[tuple[str, ...], Any] = {}
            loaded = embedder
            loading: Background[Embedder] = Background(
                functools.partial(_load_and_ask, cfg.memory.local.model, tuple(queries), self._asked, use=use)
            ) if loaded is None else Background(lambda: loaded)
            snap = memory.snapshot()
            manifest = memory.manifest()
            if manifest is None or manifest.format != STATE_FORMAT or manifest.fingerprint != snap.fingerprint:
                # Not the snapshot the index was built from: answer from the vectors of this tree's notes when
                # every one has a vector (this clone's, or the shared cache's), else refuse (memory/local/assemble.py).
                built, embedder = assemble(memory, snap, manifest, loading, notes)
                self.manifest: Manifest | None = None
                self._serve(snap, embedder, built.index, built.entries, built.lexical)
                return
        finally:
            if notes is not None:
                notes.cancel()  # taken by `assemble`, or not wanted after all
        blobs, bad = _index_files(store, manifest)
        if bad:
            # `index` renames its files into place one by one, and the manifest last, all under the index lock: a
            # run that held it while these were read may have replaced some. Once it is done, read them again.
            with memory._lock(quiet=True):
                manifest = memory.manifest()
            if manifest is None or manifest.format != STATE_FORMAT or manifest.fingerprint != snap.fingerprint:
                built, embedder = assemble(memory, snap, manifest, loading, None)  # it indexed another tree
                self.manifest = None
                self._serve(snap, embedder, built.index, built.entries, built.lexical)
                return
            blobs, bad = _index_files(store, manifest)
        if bad:
            raise RefusedError(f"memory index file {bad} in {store.location} is missing or damaged (it does "
                               f"not match the manifest); run `{INDEX_COMMAND}` to rebuild it")
        entries: Entries | None = _decode(blobs[ENTRIES], Entries)
        if entries is None or entries.fingerprint != snap.fingerprint:
            raise RefusedError(f"memory index file {ENTRIES} in {store.location} is damaged; run "
                               f"`{INDEX_COMMAND}` to rebuild it")
        _check_trust(memory, manifest, entries)
        import hnswlib

        from vivary_git.memory.local.bm25 import decode as decode_lexical

        lexical = decode_lexical(blobs[LEXICAL])
        if lexical is None or lexical.n_docs != len(entries.entries):
            raise RefusedError(f"memory index file {LEXICAL} in {store.location} is damaged; run "
                               f"`{INDEX_COMMAND}` to rebuild it")
        problem = _hnsw_problem(blobs[HNSW_FILE], manifest.dim, manifest.hnsw)
        if problem is None and not all(0 <= e.label < manifest.hnsw.elements for e in entries.entries):
            problem = "the entries name elements it does not have"
        if problem is not None:
            raise RefusedError(f"memory index file {HNSW_FILE} in {store.location} is damaged ({problem}); run "
                               f"`{INDEX_COMMAND}` to rebuild it")
        index: Any = hnswlib.Index(space="ip", dim=manifest.dim)
        with _as_file(store, HNSW_FILE, blobs[HNSW_FILE]) as path:
            try:
                index.load_index(str(path))
            except (RuntimeError, ValueError, MemoryError) as err:
                raise RefusedError(f"memory index file {HNSW_FILE} in {store.location} is damaged ({err}); run "
                                   f"`{INDEX_COMMAND}` to rebuild it") from None
        embedder = loading.result()
        if embedder.model_id != manifest.model_id or embedder.dim != manifest.dim:
            raise RefusedError(f"the memory index was built with {manifest.model_id} ({manifest.dim} dimensions), "
                               f"but the installed model is {embedder.model_id} ({embedder.dim}); run "
                               f"`{INDEX_COMMAND}` to embed the notes again")
        self.snapshot = snap
        self.manifest = manifest
        self._serve(snap, embedder, index, entries.entries, lexical)

    def _serve(self, snap: MemorySnapshot, embedder: Embedder, index: Any, entries: list[Entry],
               lexical: LexicalIndex) -> None:
        self.snapshot = snap
        self.embedder = embedder
        self._index = index
        self._live = len(entries)
        self._lexical: LexicalIndex = lexical
        self._tokenizer: Tokenizer | None = None
        self._entries = entries
        self._doc_of_label = {e.label: i for i, e in enumerate(entries)}
        nodes = {n.id: n for n in snap.nodes}
        self._nodes = nodes
        # Whether every entry is a node of the snapshot: then an unfiltered recall needs no scope.
        self._complete = all(e.node_id in nodes for e in entries)
        self._scopes: dict[Any, _Scope] = {}
        self._signals: Signals | None = None
        self._names: Names | None = None
        self._frontmatter: list[dict[str, Any]] | None = None
        # Edge maps of the whole snapshot are built only when asked for: the outbound map for filters, the
        # map of every node's edges for a session's second batch of queries on (`_edge_context`).
        self._outbound: dict[str, list[MemoryEdge]] | None = None
        self._touching: dict[str, list[MemoryEdge]] | None = None
        self._batches = 0

    def recall(self, query: str, *, k: int = 10, filters: RecallFilters | None = None,
               mode: SessionMode = "hybrid", exclude: Collection[str] = ()) -> list[RecallHit]:
        return self.recall_many([query], k=k, filters=filters, mode=mode, exclude=exclude)[0]

    def recall_many(self, queries: Sequence[str], *, k: int = 10, filters: RecallFilters | None = None,
                    mode: SessionMode = "hybrid", exclude: Collection[str] = ()) -> list[list[RecallHit]]:
        """One answer per query, in order; the queries are embedded in one batch (`keyword` embeds none).
        `exclude`: node ids left out, as a filter leaves them out (before ranking)."""
        for q in queries:
            if not q.strip():
                raise UsageError('provide a recall query, e.g. `git vivary recall "how do we rotate keys?"`')
        if mode not in ("semantic", "hybrid", "keyword"):
            raise UsageError(f"unknown recall mode {mode!r}; use semantic or hybrid")
        k = normalise_k(k)
        filters = filters or RecallFilters()
        scope = self._scope(filters, frozenset(exclude))
        if mode == "keyword":
            return self._edge_context([self._answer(q, None, k, scope, mode) for q in queries])
        asked = self._asked.pop(tuple(queries), None)  # embedded while the index was read (`open`)
        vectors = asked if asked is not None else self.embedder.embed(list(queries)) if queries else None
        answers = [self._answer(q, vectors[i], k, scope, mode) for i, q in enumerate(queries)] \
            if vectors is not None else []
        return self._edge_context(answers)

    def _scope(self, filters: RecallFilters, exclude: frozenset[str]) -> _Scope | None:
        """The entries `filters` keep less `exclude`, and none of another snapshot; None when that is all."""
        if not filters.active and not exclude and self._complete:
            return None
        key = (tuple(filters.types), tuple(filters.paths), tuple(filters.edges), exclude)
        got = self._scopes.get(key)
        if got is None:
            import numpy as np

            if filters.active and self._outbound is None:
                self._outbound = outbound_map(self.snapshot)
            outbound = self._outbound or {}
            keep = []
            for e in self._entries:
                node = self._nodes.get(e.node_id)
                keep.append(node is not None and node.id not in exclude
                            and (not filters.active or filters.keep(node, outbound.get(node.id, ()))))
            if len(self._scopes) >= 8:
                self._scopes.clear()
            got = self._scopes[key] = _Scope(np.fromiter(keep, dtype=bool, count=len(keep)))
        return got

    def _edge_context(self, answers: list[list[RecallHit]]) -> list[list[RecallHit]]:
        """The hits with the snapshot's edges from or to each (in snapshot order, at most `EDGE_CONTEXT`).
        A session's first batch (a `recall` command's only one) takes them from one pass over the edges for
        its hits; a longer-lived session (the MCP server) maps every node's edges once, on its second batch."""
        self._batches += 1
        if self._touching is None and self._batches > 1:
            self._touching = self._edges_touching(None)
        wanted = {h.node_id for hits in answers for h in hits}
        touching = self._touching if self._touching is not None else self._edges_touching(wanted) if wanted else {}
        return [[msgspec.structs.replace(h, edge_context=touching.get(h.node_id, [])[:EDGE_CONTEXT]) for h in hits]
                for hits in answers]

    def _edges_touching(self, wanted: set[str] | None) -> dict[str, list[MemoryEdge]]:
        """Node id -> the snapshot's edges from or to it, in snapshot order, for the `wanted` nodes (all: None)."""
        touching: dict[str, list[MemoryEdge]] = {}
        for e in self.snapshot.edges:
            if wanted is None or e.source_id in wanted:
                touching.setdefault(e.source_id, []).append(e)
            if e.target_id != e.source_id and (wanted is None or e.target_id in wanted):
                touching.setdefault(e.target_id, []).append(e)
        return touching

    def _knn(self, vector: npt.NDArray[np.float32], depth: int) -> list[tuple[int, float]]:
        """(entry number, cosine) best first, from the ANN graph."""
        depth = min(depth, self._live)
        if depth <= 0:
            return []
        self._index.set_ef(max(HNSW_EF, depth))
        labels, distances = self._index.knn_query(vector.reshape(1, -1), k=depth)
        out = []
        for label, dist in zip(labels[0].tolist(), distances[0].tolist(), strict=True):
            doc = self._doc_of_label.get(int(label))
            if doc is not None:
                out.append((doc, 1.0 - float(dist)))  # "ip" distance is 1 - dot; unit vectors: 1 - cosine
        return out

    def _vector_ranking(self, vector: npt.NDArray[np.float32], depth: int,
                        scope: _Scope | None = None) -> list[tuple[int, float]]:
        """(entry number, cosine) best first, of the entries in `scope` (all: None)."""
        if scope is None:
            return self._knn(vector, depth)
        count = len(scope.docs)
        if count <= EXACT_SCAN:
            return self._scan(vector, depth, scope)
        want = min(depth, count)
        ask = depth
        while True:
            try:
                got = [(d, c) for d, c in self._knn(vector, ask) if scope.mask[d]]
            except RuntimeError:  # the graph could not give that many: rank the scope exactly instead
                return self._scan(vector, depth, scope)
            if len(got) >= want or ask >= self._live:
                return got[:depth]
            ask = min(self._live, ask * 4)

    def _scan(self, vector: npt.NDArray[np.float32], depth: int, scope: _Scope) -> list[tuple[int, float]]:
        """(entry number, cosine) best first, by exact cosine over the scope's own vectors."""
        import numpy as np

        if not len(scope.docs) or depth <= 0:
            return []
        if scope.vectors is None:
            labels = np.fromiter((self._entries[d].label for d in scope.docs), dtype=np.uint64,
                                 count=len(scope.docs))
            vectors = np.asarray(self._index.get_items(labels), dtype=np.float32)
            if len(scope.docs) > EXACT_SCAN:
                return _best(scope.docs, vectors @ vector.reshape(-1), depth)  # too large to keep
            scope.vectors = vectors
        return _best(scope.docs, scope.vectors @ vector.reshape(-1), depth)

    def _lexical_ranking(self, query: str, depth: int, scope: _Scope | None) -> list[tuple[int, float]]:
        """(entry number, BM25 score) best first, of the entries in `scope` (all: None)."""
        if self._tokenizer is None:
            from vivary_git.memory.local.bm25 import Tokenizer

            self._tokenizer = Tokenizer()
        return self._lexical.top(self._tokenizer(query), depth, scope.mask if scope is not None else None)

    def _answer(self, query: str, vector: npt.NDArray[np.float32] | None, k: int, scope: _Scope | None,
                mode: SessionMode) -> list[RecallHit]:
        ranked: list[tuple[int, float, str]]
        if mode == "keyword":
            ranked = [(doc, s, f"keyword match (BM25 {s:.3f})") for doc, s in self._lexical_ranking(query, k, scope)]
        elif mode == "semantic":
            assert vector is not None
            ranked = [(doc, cos, f"semantic match (cosine {cos:.3f})")
                      for doc, cos in self._vector_ranking(vector, k, scope)]
        else:
            assert vector is not None
            depth = max(k, FUSION_DEPTH)
            lexical, vectors = self._lexical_ranking(query, depth, scope), self._vector_ranking(vector, depth, scope)
            ranked = fuse(lexical, vectors, weights=FUSION, k=RRF_K)
            if FIELD_NUDGE or DATE_NUDGE or NEXT_NUDGE:
                lead = lexical[0][0] if lexical and vectors and lexical[0][0] == vectors[0][0] else None
                ranked = self._nudged(query, ranked, scope, lead)
        named = self._named(query, scope)
        if named:
            ranked = named_first(ranked, named)
        hits: list[RecallHit] = []
        for doc, score, reason in ranked:
            entry = self._entries[doc]
            node = self._nodes.get(entry.node_id)
            if node is None:
                continue  # not in the current snapshot: never returned, whatever the state says
            hits.append(RecallHit(
                node_id=node.id, type=node.type, path=node.path, score=round(score, 6), reason=reason,
                source="provider", edge_context=[], provider=PROVIDER,
            ))
            if len(hits) == k:
                break
        return hits

    def _fields(self) -> list[dict[str, Any]]:
        """Each entry's frontmatter ({} for a note of another snapshot or one that could not be parsed), its
        notes read the first time: the snapshot recall loads leaves them out (provider.py)."""
        if self._frontmatter is None:
            nodes = [self._nodes.get(e.node_id) for e in self._entries]
            blobs = [n.blob for n in nodes if n is not None]
            notes = self.memory.ws.notes_for(blobs) if blobs else {}
            self._frontmatter = [notes[n.blob].fields if n is not None and notes[n.blob].problem is None else {}
                                 for n in nodes]
        return self._frontmatter

    def _named(self, query: str, scope: _Scope | None) -> list[int]:
        """The entries in `scope` that `query` names (titlematch.py): their title, file name, id or an alias."""
        if self._names is None:
            from vivary_git.titlematch import Names, names_of

            nodes = (self._nodes.get(e.node_id) for e in self._entries)
            self._names = Names(names_of(n.id, n.path, n.title, fields) if n is not None else ()
                                for n, fields in zip(nodes, self._fields(), strict=True))
        return [d for d in self._names.named(query) if scope is None or scope.mask[d]]

    def signals(self) -> Signals:
        """The snapshot's signals (signals.py), numbered as the entries; its notes are read the first time."""
        if self._signals is None:
            from vivary_git.memory.local.signals import Signals

            nodes = [self._nodes.get(e.node_id) for e in self._entries]
            self._signals = Signals([n.path if n is not None else "" for n in nodes],
                                    [e.node_id for e in self._entries], self._fields(),
                                    ((e.source_id, e.field, e.target_id) for e in self.snapshot.edges))
        return self._signals

    def _nudged(self, query: str, ranked: list[tuple[int, float, str]], scope: _Scope | None,
                lead: int | None = None) -> list[tuple[int, float, str]]:
        """The fused ranking with the signals' nudges added (files.py: FIELD_NUDGE, DATE_NUDGE, NEXT_NUDGE).
        `lead`: the note first in both the keyword and the vector list, if one is; it stays first: the
        signals reorder what both lists left open, never a note both put first."""
        if not ranked:
            return ranked
        sig = self.signals()
        top = ranked[0][1]
        score = {doc: s for doc, s, _ in ranked}
        why = {doc: [r] for doc, _, r in ranked}
        place = {doc: i for i, (doc, _, _) in enumerate(ranked)}
        named = sig.named(query) if FIELD_NUDGE else []
        for field, holders in named:
            gain = FIELD_NUDGE * top / len(named)
            for doc in score.keys() & holders:
                score[doc] += gain
                why[doc].append(f"the query names its {field}")
        dated = sig.dated(query) if DATE_NUDGE else set()
        for doc in score.keys() & dated:
            score[doc] += DATE_NUDGE * top
            why[doc].append("dated in a month or year the query names")
        if NEXT_NUDGE and sig.has_sequences:
            near: dict[int, float] = {}
            for doc, s in score.items():
                for other in sig.neighbours(doc):
                    if (scope is None or scope.mask[other]) and NEXT_NUDGE * s > near.get(other, 0.0):
                        near[other] = NEXT_NUDGE * s
            for doc, gain in near.items():
                score[doc] = score.get(doc, 0.0) + gain
                if doc in why:
                    why[doc].append("next to a hit in its sequence")
                else:
                    why[doc] = ["hybrid: next to a hit in its sequence"]
        if lead is not None and lead in score:
            best = max(score.values())
            if best > score[lead]:
                score[lead] = best  # ties go to the fused place: the lead's is the first
                why[lead].append("first in both lists")
        out = sorted(score, key=lambda d: (-score[d], place.get(d, 1 << 30), d))
        return [(d, score[d], "; ".join(why[d])) for d in out]


def _best(docs: npt.NDArray[np.int64], scores: npt.NDArray[np.float32], depth: int) -> list[tuple[int, float]]:
    """The `depth` best (document, score) of `docs` scored `scores`, best first, ties by document number."""
    import numpy as np

    if len(docs) > depth:
        part = np.argpartition(-scores, depth - 1)[:depth]
        docs, scores = docs[part], scores[part]
    order = np.lexsort((docs, -scores))
    return [(int(docs[i]), float(scores[i])) for i in order]


def fuse(lexical: Sequence[tuple[int, float]], vector: Sequence[tuple[int, float]], *,
         weights: tuple[float, float] = FUSION, k: int = RRF_K) -> list[tuple[int, float, str]]:
    """Weighted reciprocal rank fusion: score(d) = w_lex/(k + lexical rank) + w_vec/(k + vector rank), ranks
    from 1, a list a document is absent from adds nothing. Ties go to the better vector rank, then the
    document number, so the order is a function of the two lists alone."""
    w_lex, w_vec = weights
    lex_rank = {doc: r for r, (doc, _) in enumerate(lexical, 1)}
    vec_rank = {doc: r for r, (doc, _) in enumerate(vector, 1)}
    cosine = dict(vector)
    scored = []
    for doc in lex_rank.keys() | vec_rank.keys():
        lr, vr = lex_rank.get(doc), vec_rank.get(doc)
        score = (w_lex / (k + lr) if lr else 0.0) + (w_vec / (k + vr) if vr else 0.0)
        parts = []
        if vr:
            parts.append(f"vector rank {vr} (cosine {cosine[doc]:.3f})")
        if lr:
            parts.append(f"keyword rank {lr}")
        scored.append((doc, score, "hybrid: " + ", ".join(parts), vr or 1 << 30))
    scored.sort(key=lambda s: (-s[1], s[3], s[0]))
    return [(doc, score, reason) for doc, score, reason, _ in scored]


def named_first(ranked: Sequence[tuple[int, float, str]], named: Sequence[int]) -> list[tuple[int, float, str]]:
    """`ranked` with the `named` entries first, in the order it gave them (one it left out after those it
    has), each scored at least the best score: a note asked for by its name comes first in every mode."""
    place = {doc: i for i, (doc, _, _) in enumerate(ranked)}
    top = ranked[0][1] if ranked else 1.0
    lifted = []
    for doc in sorted(set(named), key=lambda d: (place.get(d, 1 << 30), d)):
        at = place.get(doc)
        if at is None:
            lifted.append((doc, top, "named by the query"))
        else:
            _, score, reason = ranked[at]
            lifted.append((doc, max(score, top), f"{reason}; named by the query"))
    lift = {doc for doc, _, _ in lifted}
    return lifted + [r for r in ranked if r[0] not in lift]
