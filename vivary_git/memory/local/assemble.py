"""Recall for any tree whose notes all have a vector, without running the model over a single note.

The local index (index.py) answers for the snapshot it was last built from. Vectors are keyed by content
(vectors.py), so any other tree (`recall --rev v1.0`, the base of a pull request, a fresh clone after
`git vivary sync fetch`) can be answered as soon as every admitted note of it has a vector, from this
clone's vector cache or from the shared cache (`refs/vivary/cache`, as far as `vivary.cacheTrust` lets it
be read). Recall never embeds a note itself: when some note has no vector, it refuses (exit 3), says how
many, and names the `index` command that embeds them.

What is assembled for a tree (entries, the BM25 index, the vectors) is kept under the dataset's
`trees/<fingerprint>/` (the 4 most recently used), verified against its own manifest when read again, so
only the first recall of a tree pays for it.

Search is exact (one matrix product over unit vectors: cosine) up to `EXACT_LIMIT` vectors: measured on
this project's 2-core machines, building the HNSW graph of 10,000 vectors takes tens of seconds, shipping
it would cost ~1.7 KB per note in the shared cache and change on every index, while an exact search of
10,000 vectors takes a few milliseconds and finds the true nearest neighbours (bench/bench_memory_cache.py).
Above the limit an HNSW graph (the local index's parameters) is built once and kept with the rest.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from vivary_git.errors import RefusedError
from vivary_git.escape import text as shown
from vivary_git.memory.local.files import TREES

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vivary_git.memory.config import MemoryConfig
    from vivary_git.memory.local.bm25 import FrameTerms, LexicalIndex
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.local.files import Entry, Manifest
    from vivary_git.memory.local.vectors import SharedVectors
    from vivary_git.memory.snapshot import MemorySnapshot
    from vivary_git.memory.state import LocalStateStore
    from vivary_git.parallel import Background, Forked
    from vivary_git.workspace import Workspace

__all__ = ["EXACT_LIMIT", "Assembled", "ExactIndex", "assemble", "index_command"]


class Memory(Protocol):
    """What assembling needs of the local memory (provider.py `LocalMemory`): its workspace, config, dataset
    and state folder."""

    @property
    def ws(self) -> Workspace: ...
    @property
    def cfg(self) -> MemoryConfig: ...
    @property
    def dataset(self) -> str: ...
    @property
    def store(self) -> LocalStateStore: ...

EXACT_LIMIT = 20_000
FORK_AT = 1000  # notes from which assembling forks children (`prefetch_notes`, the keyword index): fewer, it costs more
_KEEP = 4
_FORMAT = 2  # 2: `notes` and `tree`, what it was assembled from
_TREE_MANIFEST = "manifest.json"
_ENTRIES = "entries.msgpack"
_LEXICAL = "lexical.bin"
_VECTORS = "vectors.f32"
_HNSW = "hnsw.bin"


class _File(msgspec.Struct, frozen=True):
    sha256: str
    size: int


class TreeManifest(msgspec.Struct, frozen=True):
    """What `trees/<key>/` holds and how to check it."""

    format: int
    fingerprint: str
    model_id: str
    embed_format: int
    lexical_format: int
    dim: int
    vectors: int  # rows / HNSW elements: one per note
    search: str  # "exact" or "hnsw"
    files: dict[str, _File]
    notes: str = ""  # `notes_digest` of the workspace it was assembled from: see `prefetch_notes`
    tree: str = ""  # and its source tree (cheaper to compare: the same tree has the same notes)
    # The most trusting `vivary.cacheTrust` any of its vectors was taken from the shared cache under ("none":
    # all computed here; "" before this was recorded, read as memory/local/vectors.py's `LEGACY_TRUST`).
    trust: str = ""


class _Entries(msgspec.Struct, frozen=True):
    entries: list[tuple[str, str, int]]  # node id, packet digest, row


class Assembled(msgspec.Struct, frozen=True):
    """An index for one tree, assembled from stored vectors: what `RecallSession` serves from."""

    index: Any  # ExactIndex, or an hnswlib.Index above EXACT_LIMIT
    entries: list[Entry]
    lexical: Any  # LexicalIndex
    search: str


class ExactIndex:
    """hnswlib's query interface (`knn_query`, `set_ef`) over a matrix of unit rows: exact inner products."""

    def __init__(self, rows: npt.NDArray[np.float32]) -> None:
        self.rows = rows

    def set_ef(self, ef: int) -> None:  # the graph's search breadth: nothing to set for an exact search
        return None

    def get_current_count(self) -> int:
        return int(self.rows.shape[0])

    def get_items(self, ids: npt.NDArray[np.uint64]) -> npt.NDArray[np.float32]:
        """The rows of these labels (a scoped recall's exact scan)."""
        import numpy as np

        return self.rows[np.asarray(ids, dtype=np.int64)]

    def knn_query(self, vectors: npt.NDArray[np.float32], k: int = 1,
                  ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Labels (rows) and distances (1 - inner product) of the `k` best rows for each query, best
        first; equal scores in row order, so the answer is a function of the rows alone."""
        import numpy as np

        queries = np.asarray(vectors, dtype=np.float32).reshape(-1, self.rows.shape[1])
        n = self.rows.shape[0]
        k = min(k, n)
        labels = np.zeros((len(queries), k), dtype=np.int64)
        distances = np.zeros((len(queries), k), dtype=np.float32)
        if not k:
            return labels, distances
        scores = queries @ self.rows.T
        for q, row in enumerate(scores):
            top = np.argpartition(-row, k - 1)[:k] if k < n else np.arange(n)
            order = top[np.lexsort((top, -row[top]))]
            labels[q] = order
            distances[q] = 1.0 - row[order]
        return labels, distances


def index_command(memory: Memory) -> str:
    """The `index` command that embeds what a recall of this source lacks (the rev as typed, escaped)."""
    source = memory.ws.source
    if source.kind == "rev":
        rev = source.label
        return f"git vivary index --yes --rev {shown(rev) if rev.isprintable() and ' ' not in rev else repr(rev)}"
    if source.kind == "staged":
        return "git vivary index --yes --staged"
    return "git vivary index --yes"


def assemble(memory: Memory, snap: MemorySnapshot, manifest: Manifest | None,
             loading: Background[Embedder], notes: Forked | None = None) -> tuple[Assembled, Embedder]:
    """The index of `snap` from stored vectors (kept under `trees/`), or `RefusedError` naming how many
    notes have no vector and the command that embeds them. `notes`: `prefetch_notes`' child, if any."""
    from vivary_git.memory.local.files import _digest
    from vivary_git.memory.local.vectors import SharedVectors

    store = memory.store
    trees = store.child(TREES)
    cache = trees.child(snap.fingerprint[:32])
    shared = SharedVectors(memory.ws)
    if cache.get(_TREE_MANIFEST) is not None:  # kept before (see `_load`): the model decides whether it serves
        embedder = loading.result()
        found = _load(cache, snap, embedder, shared.trust)
        if found is not None:
            if notes is not None:
                notes.cancel()
            _touch(cache.directory)
            return found, embedder

    # The keyword index is the largest part of the work, and goes to a forked child. When the notes' child
    # delivered their parts it is counting their words: the keyword index's child starts now, cuts each
    # packet's frame (id, type, path, title, edges) into words and builds the index from both, while this
    # process renders the packets and finds the vectors. (The parts are taken and the model's thread joined
    # first: no thread may run across a fork, and the pipe then holds only the counts, for that child.)
    # Else it starts once the packets are rendered, and builds the index from them. The same bytes every way.
    from vivary_git.memory.snapshot import frame_parts

    parts = notes.result() if notes is not None else None
    if parts is not None:
        loading.result()  # joined: the keyword index's child is forked next
    # The packets' frames, made once: this process renders the packets from them, the child cuts them into words.
    frames = frame_parts(snap)
    lexical_job = _Lexical(store, snap, notes if parts is not None else None, frames)
    try:
        rendered = _rendered(memory.ws, snap, parts, frames)  # the model goes on loading meanwhile, if it still is
        digests = [_digest(p) for _, p in rendered]
        embedder = loading.result()  # before the fork below: no thread may run across one
        lexical_job.packets(rendered, digests)
        return _assembled(memory, snap, manifest, embedder, shared, trees, cache, rendered, digests, lexical_job)
    finally:
        lexical_job.cancel()  # only when it raised: a result taken leaves no child


# --- the notes, read on the second core -----------------------------------------------------------------

_PARTS = msgspec.msgpack.Decoder(list[tuple[str, str, str]])


def notes_digest(ws: Workspace) -> str:
    """sha256 of the workspace's notes (path and blob of each, private ones included): what a kept assembly
    was made from, known before any note is read or the graph is built."""
    listed = "".join(f"{e.path}\0{e.oid}\n" for e in ws.source.entries)
    return hashlib.sha256(b"vivary-notes\0" + listed.encode("utf-8", "surrogateescape")).hexdigest()


def assembly_likely(memory: Memory) -> bool:
    """Whether a recall of this workspace will most likely assemble its index (`assemble`), which is worth
    preparing for (`prefetch_notes`): many notes, no local index to serve it, no kept assembly of these
    notes. Cheap: a few small files and, at most, a hash of the notes' paths and blob ids."""
    from vivary_git.memory.local.files import MANIFEST

    ws = memory.ws
    if ws.source.repo is None or len(ws.source.entries) < FORK_AT:
        return False
    if memory.store.get(MANIFEST) is not None:
        return False  # a local index: most likely it serves (its snapshot), or an index run is due
    made: list[tuple[str, str]] = []  # (tree, notes) of each kept assembly
    with contextlib.suppress(OSError):
        # Read as they are (only which tree and notes each was made from, for this guess): `_load` checks them.
        for kept in (memory.store.directory / TREES).glob(f"*/{_TREE_MANIFEST}"):
            with contextlib.suppress(OSError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
                m = msgspec.json.decode(kept.read_bytes()[:1 << 16], type=TreeManifest)
                made.append((m.tree, m.notes))
    if any(tree == ws.source.tree_id for tree, _ in made):
        return False  # this tree was assembled before: most likely kept for this snapshot
    # So were these notes, maybe (in another tree: an edit elsewhere than in a note).
    return not made or notes_digest(ws) not in {notes for _, notes in made}


def prefetch_notes(memory: Memory, *, settle: Callable[[], None] = lambda: None) -> Forked | None:
    """The notes of the workspace read in a forked child while this process builds the graph and decides
    privacy, for a recall that will most likely assemble its index (`assembly_likely`, the caller's to
    ask). The child hands back what packets take of each note (`snapshot.note_parts`), which is much cheaper
    to decode than the notes. None when no child can be had: a thread runs (call this before starting one;
    `settle()` joins the caller's that are about to end)."""
    from vivary_git.parallel import Forked, can_fork

    ws = memory.ws
    settle()
    if not can_fork():
        return None
    # The stemmer (~30 ms of imports) is imported here, once, for this child and the keyword index's, which
    # would each import it again: a keyword query needs it in this process later anyway.
    import snowballstemmer.english_stemmer  # type: ignore[import-untyped]  # noqa: F401

    def parts() -> Iterator[bytes]:
        from vivary_git import localcache
        from vivary_git.memory.local.bm25 import term_bags
        from vivary_git.memory.snapshot import note_parts, note_text

        # Whatever the child would say, the parent says itself when it reads the notes: a shared cache the
        # child finds damaged fails the child, so that the parent finds it too and stops reading it.
        sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - the child ends with os._exit
        ws.reopen_after_fork()
        notes = ws.notes()
        ref = ws.refcache()
        if ref is not None and ref.damaged:
            raise RuntimeError("the shared cache is damaged")
        got = [(oid, *note_parts(note)) for oid, note in notes.items()]
        yield localcache.encode(got)
        # Then the words of each note, counted while the parent renders and finds the vectors: the costly
        # half of the keyword index (`_Lexical`).
        yield msgspec.msgpack.encode(term_bags([oid for oid, _, _ in got], [note_text(f, b) for _, f, b in got]))

    return Forked(parts, frames=2)


def _rendered(ws: Workspace, snap: MemorySnapshot, data: bytes | None, frames: list[tuple[str, str]],
              ) -> list[tuple[Any, str]]:
    """`snapshot.packets(ws, snap)`, from the note parts `prefetch_notes`' child delivered (`data`), if any, and
    the snapshot's `frame_parts`."""
    from vivary_git.memory.snapshot import packets

    got: list[tuple[str, str, str]] | None = None
    if data is not None:
        from vivary_git import localcache

        with contextlib.suppress(msgspec.DecodeError, msgspec.ValidationError, ValueError):
            got = localcache.decode(data, list[tuple[str, str, str]], _PARTS)
    parts = {oid: (frontmatter, body) for oid, frontmatter, body in got} if got is not None else None
    return list(packets(ws, snap, parts, frames))


def _assembled(memory: Memory, snap: MemorySnapshot, manifest: Manifest | None, embedder: Embedder,
               shared: SharedVectors, trees: LocalStateStore, cache: LocalStateStore, rendered: list[tuple[Any, str]],
               digests: list[str], lexical_job: _Lexical) -> tuple[Assembled, Embedder]:
    from vivary_git.memory.local.files import EMBED_FORMAT, MANIFEST, embed_text
    from vivary_git.memory.local.vectors import LEGACY_TRUST, adopted, allows, highest, local_rows, vector_key

    store = memory.store
    keys = [vector_key(embedder.model_id, EMBED_FORMAT, embed_text(p)) for _, p in rendered]
    dim = embedder.dim
    rows: dict[str, Any] = {}
    # A local row taken from the shared cache under a vivary.cacheTrust this clone no longer has is not used
    # (any row may have been, when that record is damaged).
    levels = adopted(store)
    trust = shared.trust

    def usable(digest: str) -> bool:
        level = levels.get(digest) if levels is not None else LEGACY_TRUST
        return level is None or allows(trust, level)

    row_of, matrix = local_rows(store, embedder.model_id, dim, EMBED_FORMAT, usable=None if trust == "any" else usable)
    used: set[str] = set()  # the trust levels of the vectors used
    for d, k in zip(digests, keys, strict=True):
        i = row_of.get(d)
        if i is not None:
            rows[k] = matrix[i]
            used.add(levels.get(d, "none") if levels is not None else LEGACY_TRUST)
    missing = [k for k in dict.fromkeys(keys) if k not in rows]
    if missing:
        got = shared.get(missing, dim)
        rows.update(got)
        if got:
            used.add(trust)
    lacking = [i for i, k in enumerate(keys) if k not in rows]
    if lacking:
        raise RefusedError(_refusal(memory, snap, manifest, store.get(MANIFEST) is not None, len(lacking),
                                    len(keys), shared.stored_elsewhere([keys[i] for i in lacking])))

    import numpy as np

    from vivary_git.memory.local.files import Entry

    # One row per note, in id order (two notes with the same text each get theirs: a label is one note).
    # (One array made from the rows at once: not stacked, then copied again as float32.)
    vectors = np.array([rows[k] for k in keys], dtype="<f4") if keys else np.zeros((0, dim), dtype="<f4")
    entries = [Entry(node.id, d, i) for i, ((node, _), d) in enumerate(zip(rendered, digests, strict=True))]
    from vivary_git.memory.local.bm25 import LEXICAL_FORMAT
    from vivary_git.memory.local.bm25 import decode as decode_lexical

    lexical_bytes = lexical_job.result()
    lexical = decode_lexical(lexical_bytes)
    assert lexical is not None and lexical.n_docs == len(entries)  # just built, here or in our own child
    search = "exact" if len(entries) <= EXACT_LIMIT else "hnsw"
    files = {
        _ENTRIES: msgspec.msgpack.encode(_Entries([(e.node_id, e.digest, e.label) for e in entries])),
        _LEXICAL: lexical_bytes,
        _VECTORS if search == "exact" else _HNSW: vectors.tobytes() if search == "exact" else _hnsw(vectors),
    }
    tree = TreeManifest(format=_FORMAT, fingerprint=snap.fingerprint, model_id=embedder.model_id,
                        embed_format=EMBED_FORMAT, lexical_format=LEXICAL_FORMAT, dim=dim, vectors=len(entries),
                        search=search, files={n: _File(_sha(b), len(b)) for n, b in sorted(files.items())},
                        notes=notes_digest(memory.ws), tree=memory.ws.source.tree_id or "", trust=highest(used))
    with contextlib.suppress(OSError, ValueError):  # a cache: recall answers whether or not it could be kept
        # Not synced to the disk: every file is checked against the manifest's digests when read (`_load`), so
        # a crash costs a rebuild. The manifest goes last: it vouches for the rest.
        for name, data in files.items():
            cache.put(name, data, sync=False)
        cache.put(_TREE_MANIFEST, msgspec.json.encode(tree) + b"\n", sync=False)
        _prune(trees, keep=cache.directory)
    index = ExactIndex(vectors) if search == "exact" else _load_hnsw(files[_HNSW], dim, cache)
    return Assembled(index=index, entries=entries, lexical=lexical, search=search), embedder


def _refusal(memory: Memory, snap: MemorySnapshot, manifest: Manifest | None, has_manifest: bool,
             lacking: int, total: int, elsewhere: int) -> str:
    from vivary_git.memory.local.files import STATE_FORMAT

    location = memory.store.location
    if manifest is not None and manifest.format == STATE_FORMAT:
        lead = ("the memory index is stale: it was built from a different snapshot of the notes "
                f"(index {manifest.fingerprint[:12]}, now {snap.fingerprint[:12]}: notes, links, privacy rules or "
                "the model changed since the last index)")
        fix = "to update it (only notes without a vector are embedded)"
    elif has_manifest:
        lead = f"the memory index manifest in {location} is damaged or from another version"
        fix = "to rebuild it (only notes without a vector are embedded)"
    else:
        lead = f"there is no memory index for this workspace yet (looked in {location})"
        fix = "to build it"
    what = f"{lacking} of {total} note(s) of {shown(memory.ws.source.label)} have no vector yet"
    if elsewhere:
        from vivary_git.refnames import CACHE_REF
        from vivary_git.store.trust import TRUST_KEY, trust

        what += (f" ({CACHE_REF} holds vectors for {elsewhere} of them, but this clone does not read it: "
                 f"{TRUST_KEY} is {trust(memory.ws.source.repo) if memory.ws.source.repo else 'none'}, "
                 "see docs/cache.md#trust)")
    return f"{lead}, and {what}; recall never embeds notes itself: run `{index_command(memory)}` {fix}"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _load(cache: Any, snap: MemorySnapshot, embedder: Embedder, trust: str) -> Assembled | None:
    """The assembled index kept for this snapshot, verified; None when there is none, it does not check, or it
    holds vectors taken from the shared cache under a more trusting `vivary.cacheTrust` than `trust`."""
    import numpy as np

    from vivary_git.memory.local.bm25 import LEXICAL_FORMAT
    from vivary_git.memory.local.bm25 import decode as decode_lexical
    from vivary_git.memory.local.files import EMBED_FORMAT, Entry
    from vivary_git.memory.local.vectors import LEGACY_TRUST, allows

    raw = cache.get(_TREE_MANIFEST)
    if raw is None:
        return None
    try:
        m = msgspec.json.decode(raw, type=TreeManifest)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    body = _VECTORS if m.search == "exact" else _HNSW
    if (m.format != _FORMAT or m.fingerprint != snap.fingerprint or m.model_id != embedder.model_id
            or m.embed_format != EMBED_FORMAT or m.lexical_format != LEXICAL_FORMAT or m.dim != embedder.dim
            or m.search not in ("exact", "hnsw") or set(m.files) != {_ENTRIES, _LEXICAL, body}
            or not 0 <= m.vectors <= 1 << 31 or not allows(trust, m.trust or LEGACY_TRUST)):
        return None
    blobs: dict[str, bytes] = {}
    for name, ref in m.files.items():
        data = cache.get(name)
        if data is None or len(data) != ref.size or _sha(data) != ref.sha256:
            return None
        blobs[name] = data
    try:
        decoded = msgspec.msgpack.decode(blobs[_ENTRIES], type=_Entries)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    entries = [Entry(n, d, label) for n, d, label in decoded.entries]
    lexical: LexicalIndex | None = decode_lexical(blobs[_LEXICAL])
    if (lexical is None or lexical.n_docs != len(entries) or len(entries) != len(snap.nodes)
            or not all(0 <= e.label < m.vectors for e in entries)):
        return None
    if m.search == "exact":
        if len(blobs[_VECTORS]) != m.vectors * m.dim * 4:
            return None
        index: Any = ExactIndex(np.frombuffer(blobs[_VECTORS], dtype="<f4").reshape(m.vectors, m.dim))
    else:
        try:
            index = _load_hnsw(blobs[_HNSW], m.dim, cache)
        except (RuntimeError, ValueError, MemoryError):
            return None
        if index.get_current_count() != m.vectors:
            return None
    return Assembled(index=index, entries=entries, lexical=lexical, search=m.search)


def _lexical(store: Any, rendered: list[tuple[Any, str]], digests: list[str]) -> bytes:
    """The BM25 index of these packets, from the local index's term counts where it has them (`build_texts`
    tokenises the others in bulk: the same index as note by note)."""
    from vivary_git.memory.local.bm25 import LEXICAL_FORMAT, build_texts
    from vivary_git.memory.local.files import TERMS, TermCache, _decode

    cache: TermCache | None = _decode(store.get(TERMS), TermCache)
    known = cache.counts if cache is not None and cache.format == LEXICAL_FORMAT else {}
    docs: list[str | dict[str, int]] = [known.get(d, packet) for (_, packet), d in zip(rendered, digests, strict=True)]
    return build_texts(docs).encode()


class _Lexical:
    """The keyword index of an assembly, encoded, built on the second core while this process renders the
    packets and finds the vectors: by a forked child from the notes' term counts, which it reads itself from
    `prefetch_notes`' child (their second frame, `_framed_there`), started at once; or, without those, from the
    packets (`_lexical`), started when they are given (`packets`); here when no child can be had or one
    failed. The same bytes every way."""

    def __init__(self, store: Any, snap: MemorySnapshot, bags: Forked | None, frames: list[tuple[str, str]]) -> None:
        from vivary_git.parallel import Forked

        self._store, self._snap, self._bags, self._frames = store, snap, bags, frames
        self._rendered: list[tuple[Any, str]] = []
        self._digests: list[str] = []
        self._job = Forked(functools.partial(_framed_there, bags, snap, frames), fork=len(snap.nodes) >= FORK_AT) \
            if bags is not None else None

    def packets(self, rendered: list[tuple[Any, str]], digests: list[str]) -> None:
        """The packets and their digests: what the index is built from when there are no counts."""
        from vivary_git.parallel import Forked

        self._rendered, self._digests = rendered, digests
        if self._bags is None:
            self._job = Forked(functools.partial(_lexical, self._store, rendered, digests),
                               fork=len(rendered) >= FORK_AT)

    def result(self) -> bytes:
        made: bytes | None = None
        if self._job is not None and self._job.forked:
            made = self._job.result()
            if self._bags is not None:
                self._bags.cancel()  # its last frame went to our child (or was not wanted after all)
        elif self._bags is not None:
            from vivary_git.memory.snapshot import packet_frames

            made = _framed(self._bags.result(), self._snap, packet_frames(self._snap, self._frames))
        return made if made is not None else _lexical(self._store, self._rendered, self._digests)

    def cancel(self) -> None:
        if self._job is not None:
            self._job.cancel()
        if self._bags is not None:
            self._bags.cancel()


def _framed_there(bags: Forked, snap: MemorySnapshot, frames: list[tuple[str, str]]) -> bytes:
    """`_framed` in a forked child: it cuts the packets' frames (`frame_parts`, made before the fork) into words
    (while the notes' child may still count theirs), then reads the notes' counts from the pipe it inherited."""
    from vivary_git.memory.local.bm25 import frame_terms
    from vivary_git.memory.snapshot import packet_frames

    framed = frame_terms(packet_frames(snap, frames))
    made = _framed(bags.result(), snap, framed)
    if made is None:
        raise RuntimeError("no term counts")  # the parent builds the index from the packets
    return made


def _framed(data: bytes | None, snap: MemorySnapshot, frames: list[str] | FrameTerms) -> bytes | None:
    """The keyword index of `snap`'s packets from its notes' term counts (`prefetch_notes`' second frame):
    each packet's frame (id, type, path, title, edges; or their `frame_terms`) plus its note's counts.
    None when there are none."""
    if data is None:
        return None
    from vivary_git.memory.local.bm25 import TermBags, build_framed

    try:
        bags = msgspec.msgpack.decode(data, type=TermBags)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
    row = {key: i for i, key in enumerate(bags.keys)}
    rows = [row.get(node.blob, -1) for node in snap.nodes]
    index = build_framed(frames, bags, rows)
    return index.encode() if index is not None else None


def _hnsw(vectors: npt.NDArray[np.float32]) -> bytes:
    import tempfile

    import hnswlib
    import numpy as np

    from vivary_git.memory.local.files import HNSW_EF, HNSW_EF_CONSTRUCTION, HNSW_M

    index: Any = hnswlib.Index(space="ip", dim=int(vectors.shape[1]))
    index.init_index(max_elements=max(len(vectors), 1), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                     random_seed=100)
    if len(vectors):
        index.add_items(vectors, np.arange(len(vectors), dtype=np.int64))
    index.set_ef(HNSW_EF)
    with tempfile.TemporaryDirectory(prefix="vivary-hnsw-") as tmp:
        path = Path(tmp) / _HNSW
        index.save_index(str(path))
        return path.read_bytes()


def _load_hnsw(data: bytes, dim: int, cache: Any) -> Any:
    import tempfile

    import hnswlib

    from vivary_git.memory.local.files import HNSW_EF

    index: Any = hnswlib.Index(space="ip", dim=dim)
    path = cache.local_path(_HNSW)
    if path is not None and path.stat().st_size == len(data):
        index.load_index(str(path))
    else:
        with tempfile.TemporaryDirectory(prefix="vivary-hnsw-") as tmp:
            copy = Path(tmp) / _HNSW
            copy.write_bytes(data)
            index.load_index(str(copy))
    index.set_ef(HNSW_EF)
    return index


def _touch(folder: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(folder)


def _prune(trees: LocalStateStore, *, keep: Path) -> None:
    """Keep the `_KEEP` most recently used assembled trees."""
    try:
        found = sorted((p for p in trees.directory.iterdir() if p.is_dir() and not p.is_symlink()),
                       key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for old in [p for p in found if p != keep][_KEEP - 1:]:
        if trees.written is not None:
            trees.written.child(old.name).forget()
        shutil.rmtree(old, ignore_errors=True)
