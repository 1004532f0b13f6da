"""vivary-local's index run: the snapshot's packets embedded, the HNSW graph and the BM25 index updated.

`LocalMemory.index` (provider.py) builds the privacy-filtered snapshot and hands it here: render every
admitted node's packet, embed only packets whose digest the vector cache lacks (cache key: packet sha256 +
model id + embed format), then bring the HNSW graph (cosine as inner product on unit vectors, M=16,
efConstruction=200) up to date from cached vectors — marking removed nodes deleted and adding new ones, or
rebuilding when too much is dead — and rebuild the lexical (BM25) index. The manifest, written last, binds
all of it to the snapshot fingerprint and records every state file's sha256.

numpy, hnswlib, onnxruntime and the stemmer are imported inside functions (runtime.py), and the model is
loaded only once something is to be embedded (`_PendingEmbedder`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import sys
import tempfile
import threading
import time
import uuid
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.escape import text as shown
from vivary_git.memory.local import runtime
from vivary_git.memory.local.embed import BATCH_SIZE, EmbedderError, EmbeddingCancelled, model_environment
from vivary_git.memory.local.files import (
    EMBED_FORMAT,
    ENTRIES,
    FUSION,
    FUSION_DEPTH,
    HNSW_EF,
    HNSW_EF_CONSTRUCTION,
    HNSW_FILE,
    HNSW_M,
    LEXICAL,
    MANIFEST,
    PROVIDER,
    RRF_K,
    STATE_FORMAT,
    TERMS,
    VECTOR_META,
    VECTORS,
    Entries,
    Entry,
    FileRef,
    HnswParams,
    Manifest,
    VectorMeta,
    _as_file,
    _decode,
    _digest,
    _hnsw_problem,
    _manifest_problem,
    _sha,
    embed_text,
)
from vivary_git.memory.provider import INDEX_COMMAND, IndexReport
from vivary_git.memory.snapshot import PACKET_FORMAT, MemorySnapshot, Packets
from vivary_git.parallel import Background
from vivary_git.refnames import CACHE_REF

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vivary_git.memory.local.bm25 import LexicalIndex, Tokenizer
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.local.vectors import IndexSharing
    from vivary_git.memory.state import Data, Staged, StateStore

# The packet key -> digest cache (`PacketKeys`): not part of the index the manifest vouches for.
PACKETS = "packets.msgpack"
PACKET_KEYS_FORMAT = 1
# Rebuild the HNSW graph instead of updating it once this many of its elements are dead (deleted nodes,
# old versions of edited ones): deleted elements still cost search time and vector cache space.
_DEAD_FRACTION = 0.25
# Texts tokenised and embedded together while the next are tokenised (see `index_windows`).
_FIRST_WINDOW = 64
_WINDOW = 512
_CHECKPOINT_SECONDS = 30.0
# Lowercase hex digits, checked in one pass over a packet cache's hashes run together.
_HEX_RUN = re.compile(r"[0-9a-f]*")


class _ReadAhead:
    """An index run's state store: the files the run reads are read, and the large ones hashed, in a thread
    while the snapshot is built (`sha(data)` is then free). What was read ahead is handed over only while the
    file is still the one read (the same inode, size and times), checked when it is asked for: under the index
    lock, so never a file another run replaced meanwhile. Writes go through, dropping what was read ahead."""

    _NAMES = (ENTRIES, PACKETS, VECTOR_META, VECTORS, HNSW_FILE, LEXICAL, TERMS)
    _HASHED = frozenset({ENTRIES, VECTORS, HNSW_FILE, LEXICAL})

    def __init__(self, store: StateStore) -> None:
        from vivary_git.memory.state import LocalStateStore

        self._store = store
        self._read: dict[str, tuple[bytes, tuple[int, ...]]] = {}
        self._digests: list[tuple[bytes, str]] = []
        self._folder = store.directory if isinstance(store, LocalStateStore) else None
        self._loading = Background(self._load, name="vivary-state") if self._folder is not None else None

    @property
    def inner(self) -> StateStore:
        """The store read through."""
        return self._store

    def _stamp(self, name: str) -> tuple[int, ...]:
        assert self._folder is not None
        st = os.stat(self._folder / name, follow_symlinks=False)
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns

    def _load(self) -> None:
        for name in self._NAMES:
            try:
                before = self._stamp(name)
                data = self._store.get(name)
                if data is None or self._stamp(name) != before:
                    continue
            except OSError:
                continue
            self._read[name] = (data, before)
            if name in self._HASHED:
                self._digests.append((data, _sha(data)))

    def _wait(self) -> None:
        if self._loading is not None:
            with contextlib.suppress(Exception):  # nothing read ahead: every file is read when asked for
                self._loading.result()
            self._loading = None

    def sha(self, data: bytes) -> str:
        """sha256 of `data`, as `_sha`."""
        self._wait()
        return next((digest for held, digest in self._digests if held is data), None) or _sha(data)

    @property
    def location(self) -> str:
        return self._store.location

    def get(self, name: str) -> bytes | None:
        if name not in self._NAMES:
            return self._store.get(name)  # the manifest, read before the snapshot: never waits for the rest
        self._wait()
        got = self._read.get(name)
        if got is not None:
            try:
                if self._stamp(name) == got[1]:
                    return got[0]
            except OSError:
                pass
            del self._read[name]
        return self._store.get(name)

    def put(self, name: str, data: Data, *, sync: bool = True) -> None:
        self._wait()
        self._read.pop(name, None)
        self._store.put(name, data, sync=sync)

    def stage(self, name: str, data: Data) -> Staged:
        self._wait()
        self._read.pop(name, None)
        return self._store.stage(name, data)

    def ready(self) -> None:
        self._store.ready()

    def local_path(self, name: str) -> Path | None:
        return self._store.local_path(name)

    def names(self) -> list[str]:
        return self._store.names()

    def delete_all(self) -> bool:
        self._wait()
        self._read.clear()
        return self._store.delete_all()


class _PendingEmbedder:
    """The configured embedder for an index run, loaded only once something is to be embedded: its id and
    size are pinned (memory/local/embed.py), so deciding that the index is already up to date, and which vectors
    the caches hold, needs no model. `start()` begins loading it in a thread (a no-op once started): the run calls
    it once a note is left to embed after the caches had their say (`_IndexBuilder.run`)."""

    def __init__(self, name: str) -> None:
        from vivary_git.memory.local.embed import model_dim, model_id, require_runtime

        require_runtime(name)  # a missing extra is said now, as loading would say it, even when not loaded
        # Here, in the main thread, before any thread loads the model (see model_environment); numpy, which the
        # run imports whether or not it loads the model, reads it too.
        model_environment()
        self.name = name
        self._id = model_id(name)
        self._dim = model_dim(name)
        self._lock = threading.Lock()
        self._loading: Background[Embedder] | None = None

    @property
    def model_id(self) -> str:
        return self._id

    @property
    def dim(self) -> int:
        return self._dim

    def use(self, embedder: Embedder) -> None:
        """Use a model already loaded (a long-lived process's, memory/local/writethrough.py) instead of loading one.

        It must be loaded as `start` loads it, graph optimised: the unoptimised graph (recall's, for a query) gives
        the same vectors to ~2e-7 but not the same bits, and about 1 note in 120 would then store another int8 code
        than `index --yes` stores for it (embed.py `load_embedder`). Refused, so that is never written."""
        if getattr(embedder, "optimized", True) is False:
            raise EmbedderError("the model was loaded without graph optimisation, for queries: the vectors an "
                                "index stores are the optimised model's")
        self._loading = Background(lambda: embedder, name="vivary-model")

    def start(self) -> None:
        with self._lock:  # the tokenising thread and the model's may both ask first
            if self._loading is None:
                name = self.name
                self._loading = Background(lambda: runtime._load_embedder(name, use="index"), name="vivary-model")

    def loaded(self) -> Embedder:
        self.start()
        assert self._loading is not None
        embedder = self._loading.result()
        if embedder.model_id != self._id or embedder.dim != self._dim:  # pragma: no cover - pinned together
            raise EmbedderError(f"the loaded embedder {embedder.model_id} is not the pinned {self._id}")
        return embedder

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        return self.loaded().tokenize(texts)

    def embed_tokens(self, tokens: Sequence[Sequence[int]], *, batch_size: int = BATCH_SIZE,
                     on_run: Callable[[list[int], npt.NDArray[np.float32]], None] | None = None,
                     cancel: threading.Event | None = None) -> npt.NDArray[np.float32]:
        return self.loaded().embed_tokens(tokens, batch_size=batch_size, on_run=on_run, cancel=cancel)

    def embed(self, texts: Sequence[str], *, batch_size: int = BATCH_SIZE) -> npt.NDArray[np.float32]:
        return self.loaded().embed(texts, batch_size=batch_size)

def index_windows(count: int) -> list[tuple[int, int]]:
    """How `embed_pending` cuts `count` texts into windows, each tokenised as one piece and embedded as one
    `embed_tokens` call (so sorted by length within it). The first window is small so the model starts
    early; the rest are large so that sorting pads little (SciFact's padded tokens beyond the real ones:
    1.3% with these windows, 0.2% with one global sort, 2.1% in the windows of 256 used before)."""
    out: list[tuple[int, int]] = []
    start = 0
    while start < count:
        stop = min(count, start + (_FIRST_WINDOW if not out else _WINDOW))
        out.append((start, stop))
        start = stop
    return out


def index_batch_size(count: int) -> int:
    """Texts per model run for an index that embeds `count` texts. A handful of edits (the post-commit case)
    is embedded one text a run: a fresh session's first run on a big batch costs up to ~3x (10 SciFact
    abstracts: 0.5 s in runs of 4, 0.6-1.4 s as one), and single texts are shared evenly by the model's
    lanes (10 notes of 256 tokens in runs of 4 leave one lane 6 notes, the other 4; one by one they took
    1.3-1.6 s of CPU in a fresh session, in runs of 4 1.6-2.0 s, as one run 1.8 s), with no padding."""
    return 1 if count <= 32 else BATCH_SIZE


def embed_pending(embedder: Embedder, texts: list[str], *, progress: Callable[[int, int], None] | None = None,
                  checkpoint: Callable[[list[int], npt.NDArray[np.float32]], None] | None = None,
                  cancel: threading.Event | None = None, out: npt.NDArray[np.float32] | None = None,
                  release: bool = False) -> npt.NDArray[np.float32]:
    """Embed `texts` (the packets the vector cache lacks) for an index: float32 rows in their order.

    A thread tokenises window after window (`index_windows`; the tokenizer releases the GIL) while this
    one runs the model on the window before, so the model's lanes never wait for text. `progress(done,
    total)` is called as embedding starts (done = 0) and after each model run. `checkpoint(made, vectors)`,
    `made` the positions whose rows are final, is called at most every `_CHECKPOINT_SECONDS` as runs
    finish, and once more when `cancel` is set: the runs under way stop inside the model, no other starts,
    and `EmbeddingCancelled` is raised once the vectors made are handed over. So an interrupted index ends
    within a fraction of a second and the next run embeds only what is left.

    What is held at once stays bounded by the windows, not the vault: the rows go into `out` when given
    (`len(texts)` rows of the embedder's dim, little-endian float32: the part of the caller's vector array
    kept for them, so no second copy of the vectors is made), a window's token ids are kept as 4-byte
    integers and dropped once embedded, and with `release` each text in `texts` is replaced by "" once its
    window is tokenised (the caller hands the list over: 15 MiB of text at 10,000 notes).
    """
    import queue

    import numpy as np

    from vivary_git.memory.local.vectors import roundtrip

    total = len(texts)
    if out is None:
        out = np.zeros((total, embedder.dim), dtype="<f4")
    elif out.shape != (total, embedder.dim) or out.dtype != np.dtype("<f4"):
        raise ValueError(f"out has shape {out.shape} and type {out.dtype}, not ({total}, {embedder.dim}) <f4")
    if not total:
        return out
    windows = index_windows(total)
    ready: queue.Queue[tuple[list[Sequence[int]] | None, BaseException | None]] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def tokenise() -> None:
        for start, end in windows:
            try:
                # array("i"): 4 bytes a token where a list of ints takes 36 (up to four windows wait here).
                item: tuple[list[Sequence[int]] | None, BaseException | None] = (
                    [array("i", ids) for ids in embedder.tokenize(texts[start:end])], None)
            except BaseException as err:  # handed to the model's thread
                item = (None, err)
            if release:
                texts[start:end] = [""] * (end - start)
            while not stop.is_set():
                try:
                    ready.put(item, timeout=0.1)
                    break
                except queue.Full:
                    continue
            if stop.is_set() or item[1] is not None:
                return

    producer = threading.Thread(target=tokenise, name="vivary-tokenise", daemon=True)
    producer.start()
    batch = index_batch_size(total)
    made = np.zeros(total, dtype=bool)
    done = 0
    saved = time.monotonic()

    def made_so_far() -> list[int]:
        return [int(i) for i in np.flatnonzero(made)]

    def ran(start: int) -> Callable[[list[int], npt.NDArray[np.float32]], None]:
        def finished(positions: list[int], vectors: npt.NDArray[np.float32]) -> None:
            nonlocal done, saved
            rows = [start + i for i in positions]
            # Stored as every clone gets them from refs/vivary/cache: the int8 round trip (memory/local/vectors.py).
            out[rows] = roundtrip(vectors)
            made[rows] = True
            done += len(rows)
            if progress is not None:
                progress(done, total)
            if checkpoint is not None and done < total and time.monotonic() - saved > _CHECKPOINT_SECONDS:
                checkpoint(made_so_far(), out)
                saved = time.monotonic()

        return finished

    if progress is not None:
        progress(0, total)
    try:
        for start, _end in windows:
            while True:
                if cancel is not None and cancel.is_set():
                    raise EmbeddingCancelled("embedding cancelled")
                try:
                    tokens, error = ready.get(timeout=0.05)
                    break
                except queue.Empty:
                    continue
            if error is not None:
                raise error
            assert tokens is not None
            embedder.embed_tokens(tokens, batch_size=batch, on_run=ran(start), cancel=cancel)
    except EmbeddingCancelled:
        if checkpoint is not None and done:
            checkpoint(made_so_far(), out)
        raise
    finally:
        stop.set()
        producer.join()
    return out


def _give_back() -> None:
    """Hand the free pages of the heap back to the system (glibc's `malloc_trim`; elsewhere nothing). Memory
    Python frees stays in the process's heap, where the model's lanes, which map their own, never reuse it: at
    10,000 notes the keyword index's term counts, once freed, left 139 MiB resident until the end of the run.
    One call takes milliseconds."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        trim = ctypes.CDLL(None).malloc_trim  # glibc's; another C library (musl) has none
    except (OSError, AttributeError):
        return
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    trim(0)


class _IndexBuilder:
    def __init__(self, store: StateStore, snap: MemorySnapshot, embedder: Embedder, *, tree: str | None,
                 label: str, progress: Callable[[int, int], None] | None = None) -> None:
        self.progress = progress
        self.tree = tree
        self.label = label
        self.store = store
        self.snap = snap
        self.embedder = embedder
        self.key = f"{embedder.model_id}/e{EMBED_FORMAT}"
        self.generation = ""
        self.shared: IndexSharing | None = None  # vectors from refs/vivary/cache, and recording there
        self._keys: list[str] | None = None  # packet key of each node, once `digests` computed them
        self._last: tuple[Manifest | None, Entries | None] | None = None  # `_previous`
        # sha256 of bytes read from the store: computed while they were read ahead (`_ReadAhead`), or now.
        self._sha: Callable[[bytes], str] = store.sha if isinstance(store, _ReadAhead) else _sha

    def _previous(self) -> tuple[Manifest | None, Entries | None]:
        """The last manifest and entries, when both are intact and were built with this embedder: read and
        decoded once (`unchanged`, then `run`, under the same lock)."""
        if self._last is None:
            self._last = self._read_previous()
        return self._last

    def _read_previous(self) -> tuple[Manifest | None, Entries | None]:
        store = self.store
        manifest: Manifest | None = _decode(store.get(MANIFEST), Manifest, json=True)
        if manifest is None or manifest.model_id != self.embedder.model_id or manifest.format != STATE_FORMAT \
                or manifest.dim != self.embedder.dim or _manifest_problem(manifest) is not None:
            return None, None
        raw = store.get(ENTRIES)
        ref = manifest.files.get(ENTRIES)
        if raw is None or ref is None or self._sha(raw) != ref.sha256:
            return manifest, None
        entries: Entries | None = _decode(raw, Entries)
        return manifest, entries

    def _vector_cache(self) -> tuple[list[str], npt.NDArray[np.float32], str]:
        import numpy as np

        dim = self.embedder.dim
        meta: VectorMeta | None = _decode(self.store.get(VECTOR_META), VectorMeta)
        raw = self.store.get(VECTORS)
        # Vectors of embed format 1 are the float32 ones: their int8 round trip is what format 2 stores.
        upgrade = meta is not None and meta.key == f"{self.embedder.model_id}/e1" and EMBED_FORMAT == 2
        if (meta is None or raw is None or (meta.key != self.key and not upgrade) or meta.dim != dim
                or len(raw) != len(meta.digests) * dim * 4 or self._sha(raw) != meta.sha256):
            # Absent, damaged or from another model: start over (every packet is embedded again).
            return [], np.zeros((0, dim), dtype=np.float32), uuid.uuid4().hex
        rows = np.frombuffer(raw, dtype="<f4").reshape(len(meta.digests), dim)
        if upgrade:
            from vivary_git.memory.local.vectors import roundtrip

            self.generation = uuid.uuid4().hex  # new values: the HNSW graph is rebuilt on them
            self._save_vectors(list(meta.digests), roundtrip(rows))
            return self._vector_cache()
        return list(meta.digests), rows, meta.generation

    def unchanged(self) -> tuple[IndexReport, list[str]] | None:
        """When the stored index is intact and this snapshot's: the report of an index run that finds nothing
        to do, and the packet digests of the snapshot's nodes in order (from the verified entries)."""
        previous, prev_entries = self._previous()
        if previous is None or prev_entries is None or previous.fingerprint != self.snap.fingerprint \
                or prev_entries.fingerprint != self.snap.fingerprint or not self._intact(previous) \
                or [e.node_id for e in prev_entries.entries] != [n.id for n in self.snap.nodes]:
            return None
        digests = [e.digest for e in prev_entries.entries]
        shared = self.shared
        if shared is not None:
            level = previous.trust or shared.index_level(digests)
            if not shared.allowed(level):
                return None  # it holds vectors taken under a trust this clone no longer has: `run` drops them
            if not previous.trust:  # written before the level was: say it, so recall need not work it out
                self.store.put(MANIFEST, msgspec.json.encode(msgspec.structs.replace(previous, trust=level)) + b"\n")
        return self._report(previous.nodes, 0, len(digests), 0, False, unchanged=True), digests

    def digests(self, rendered: Packets) -> list[str]:
        """The packet digest of each node of the snapshot, in order: the one remembered for its packet key
        (`snapshot.packet_key`) when the last run saw that key, else its packet's, rendered now (in one batch).
        """
        known = self._packet_keys()
        keys = rendered.keys()
        rendered.render(i for i, k in enumerate(keys) if k not in known)
        self._keys = keys
        return [known.get(k) or _digest(rendered[i][1]) for i, k in enumerate(keys)]

    def _packet_keys(self) -> dict[str, str]:
        """packet key -> digest, as the last run left them (`PACKETS`); empty when absent or damaged (then every
        packet is rendered, and the damage named on stderr)."""
        data = self.store.get(PACKETS)
        if data is None:
            return {}
        found: PacketKeys | None = _decode(data, PacketKeys)
        pairs: list[tuple[str, str]] | None = None
        if found is not None and found.format == PACKET_KEYS_FORMAT and _sha(bytes(found.pairs)) == found.sha256:
            pairs = _decode(bytes(found.pairs), list[tuple[str, str]])
        hashes = list(itertools.chain.from_iterable(pairs)) if pairs is not None else []
        if pairs is None or not {len(h) for h in hashes} <= {64} or not _HEX_RUN.fullmatch("".join(hashes)):
            print(f"vivary: ignored {PACKETS} in {shown(self.store.location)} (damaged or of another version); "
                  "every note's packet is rendered again", file=sys.stderr)
            return {}
        return dict(pairs)

    def _save_packet_keys(self, digests: list[str]) -> None:
        """Remember each node's packet key -> digest for the next run: this snapshot's nodes only, so a note
        that left the index (deleted, or now private) leaves not even a hash behind."""
        keys = self._keys
        if keys is None:
            return
        pairs = msgspec.msgpack.encode(list(zip(keys, digests, strict=True)))
        data = msgspec.msgpack.encode(PacketKeys(format=PACKET_KEYS_FORMAT, sha256=_sha(pairs),
                                                 pairs=msgspec.Raw(pairs)))
        if data != self.store.get(PACKETS):
            self.store.put(PACKETS, data, sync=False)  # its own sha256 vouches for it

    def run(self, rendered: Packets, digests: list[str]) -> IndexReport:
        """Bring the index up to the snapshot (`unchanged` said it is not already). Packets are rendered only
        where a cache lacks what they give (a vector, term counts)."""
        import numpy as np

        snap, store = self.snap, self.store
        previous, prev_entries = self._previous()

        cached, vectors, self.generation = self._vector_cache()
        revoked = self.shared.revoke(cached) if self.shared is not None else set()
        if revoked and self.shared is not None:
            # Taken from refs/vivary/cache under a vivary.cacheTrust this clone no longer has: not used again.
            # Their notes are taken again as the setting allows now, or embedded here; the graph is rebuilt.
            print(f"vivary: dropped {len(revoked)} vector(s) taken from {CACHE_REF} under a vivary.cacheTrust this "
                  f"clone no longer has (it is {self.shared.trust} now), or whose origin is no longer known; their "
                  "notes are embedded here, unless the setting still lets the cache be read for them", file=sys.stderr)
            kept_rows = [i for i, d in enumerate(cached) if d not in revoked]
            vectors = vectors[kept_rows]
            cached = [cached[i] for i in kept_rows]
            self.generation = uuid.uuid4().hex
        live = set(digests)
        row_of = {d: i for i, d in enumerate(cached)}
        todo = [i for i, d in enumerate(digests) if d not in row_of]
        rendered.render(todo)  # in one batch: after a lost vector cache that is every note
        if todo and self.shared is not None:
            # Vectors known for these packets' text are taken, not computed: rows of this clone under
            # another packet (a renamed note embeds the same text) and the shared cache's (`sync fetch`).
            vectors, todo = self.shared.adopt(todo, rendered, digests, cached, row_of, vectors)
        if todo and isinstance(self.embedder, _PendingEmbedder):
            # Only now is a note known to be left to embed: the model (~0.4 s) loads while the keyword index and the
            # graph are brought up to date. Every vector taken from a cache, it is never loaded.
            self.embedder.start()
        # A node that left the index (deleted, or now private) must leave no vector behind, in the cache or
        # the HNSW graph: marking it deleted keeps its bytes on disk. So when one has left (or we cannot tell,
        # the entries being lost), every dead row goes now, before anything is written, and the graph is
        # rebuilt on the new rows. Old versions of notes still indexed may wait for the dead-fraction rule.
        left = prev_entries is None or bool({e.node_id for e in prev_entries.entries} - {n.id for n in snap.nodes})
        scrubbed = left and any(d not in live for d in cached)
        if scrubbed:
            kept_rows = [i for i, d in enumerate(cached) if d in live]
            vectors = vectors[kept_rows]
            cached = [cached[i] for i in kept_rows]
            row_of = {d: i for i, d in enumerate(cached)}
            self.generation = uuid.uuid4().hex
        # The model embeds the packets the caches lack in a thread while this one does all that does not need
        # their vectors: the BM25 update, loading and patching the HNSW graph, encoding the entries (more than a
        # window of packets: from the end of the BM25 update on). Nothing is written before the vectors are in: an
        # interrupted run leaves the last index whole.
        embedding: Background[npt.NDArray[np.float32]] | None = None
        waiting: Callable[[list[str]], Background[npt.NDArray[np.float32]]] | None = None  # started after the BM25
        cancel = threading.Event()
        kept = 0  # vectors of this run saved so far (`save`)
        if todo:
            # The rows laid out now with room for the new ones, which the model writes in place: the vectors are
            # never held twice (15 MiB at 10,000 notes).
            grown = np.empty((len(vectors) + len(todo), self.embedder.dim), dtype="<f4")
            grown[:len(vectors)] = vectors
            before, before_rows, fresh_rows, generation = list(cached), grown[:len(vectors)], grown[len(vectors):], \
                self.generation
            vectors = grown
            pending = [digests[i] for i in todo]

            def save(made: list[int], fresh: npt.NDArray[np.float32]) -> None:
                # A first index of a large vault takes minutes: keep what is done if it is interrupted.
                nonlocal kept
                rows = fresh[made]
                self._save_vectors(before + [pending[i] for i in made],
                                   np.vstack([before_rows, rows]) if len(before_rows) else rows, generation=generation)
                kept = len(made)

            def embed(texts: list[str]) -> Background[npt.NDArray[np.float32]]:
                # `texts` is handed over: let go window by window.
                return Background(lambda: embed_pending(self.embedder, texts, progress=self.progress, checkpoint=save,
                                                        cancel=cancel, out=fresh_rows, release=True),
                                  name="vivary-embedding")

            # A few notes are embedded while the keyword index and the graph are brought up to date: an edit's index
            # answers sooner. Many wait for the keyword index (a few seconds at 10,000 notes, next to minutes of
            # model), whose term counts would otherwise stand on top of the model's lanes at their largest.
            if len(todo) <= _WINDOW:
                embedding = embed([embed_text(rendered[i][1]) for i in todo])
            else:
                waiting = embed
            for d in pending:
                row_of[d] = len(cached)
                cached.append(d)
        staged: list[Staged] = []
        try:
            dead = len(cached) - len(live)
            compact = dead > _DEAD_FRACTION * max(len(cached), 1)
            keep: list[int] | None = None
            if compact:
                keep = [i for i, d in enumerate(cached) if d in live]
                cached = [cached[i] for i in keep]
                row_of = {d: i for i, d in enumerate(cached)}
                self.generation = uuid.uuid4().hex
            entries = [Entry(node.id, d, row_of[d]) for node, d in zip(snap.nodes, digests, strict=True)]
            graph = self._hnsw_update(previous, prev_entries, entries)
            lexical = self._lexical(rendered, digests, previous, prev_entries)
            texts = [embed_text(rendered[i][1]) for i in todo] if waiting is not None else []
            # Nothing else here reads a packet: those rendered for the digests, the model's texts and the term counts
            # are let go (19 MiB at 10,000 notes), not held while the model embeds and the graph is built.
            rendered.forget()
            if waiting is not None:
                _give_back()  # what the term counts took, before the model's lanes take theirs
                embedding = waiting(texts)
                del texts
            entries_bytes = msgspec.msgpack.encode(Entries(fingerprint=snap.fingerprint, entries=entries))
            ready = {ENTRIES: entries_bytes, LEXICAL: lexical}
            refs = {name: FileRef(_sha(data), len(data)) for name, data in ready.items()}
            # While the model embeds, the files that do not need its vectors are written (into place only once
            # every vector is in), and the rows laid out with room for the new ones: after the model, only the
            # HNSW graph and the vector cache are left to write.
            staged = [store.stage(name, data) for name, data in ready.items()]
            if embedding is not None:
                embedding.result()  # the rows are in `vectors` (`fresh_rows`)
        except BaseException:
            for file in staged:
                file.discard()
            if embedding is not None:
                # Interrupted (Ctrl-C) or failed: the model stops inside the runs under way and saves the vectors
                # made so far (`embed_pending`), under this run's index lock, before the error goes on.
                cancel.set()
                with contextlib.suppress(BaseException):  # this error is the one to report
                    embedding.result()
                if kept:
                    print(f"vivary: kept the {kept:,} of {len(todo):,} new vector(s) made; `{INDEX_COMMAND}` embeds "
                          "only the rest", file=sys.stderr)
            raise
        if keep is not None:
            vectors = vectors[keep]
        save_vectors = bool(todo or compact or scrubbed or revoked
                            or (self.shared is not None and self.shared.appended))

        def cached_files() -> None:
            if save_vectors:
                self._save_vectors(cached, vectors)
            self._save_packet_keys(digests)

        # The vector cache and the packet keys (each vouched for by its own digest) are written in a thread while
        # this one finishes the graph and writes the files the manifest vouches for: once the model is done, the
        # second core is free. The manifest waits for both.
        side = Background(cached_files, name="vivary-vectors")
        try:
            hnsw_bytes, params, rebuilt, removed = graph.finish(vectors)
            store.put(HNSW_FILE, hnsw_bytes, sync=False)  # the manifest vouches for them all
            for file in staged:
                file.commit()
            refs = dict(sorted({**refs, HNSW_FILE: FileRef(_sha(hnsw_bytes), len(hnsw_bytes))}.items()))
        except BaseException:
            for file in staged:
                file.discard()  # once committed, nothing to drop
            with contextlib.suppress(BaseException):  # this error is the one to report
                side.result()
            raise
        side.result()
        from vivary_git.memory.local.bm25 import LEXICAL_FORMAT

        manifest = Manifest(
            provider=PROVIDER, dataset=snap.dataset, fingerprint=snap.fingerprint, nodes=len(snap.nodes),
            edges=len(snap.edges), model=snap.model, model_id=self.embedder.model_id, format=STATE_FORMAT,
            packet_format=PACKET_FORMAT, embed_format=EMBED_FORMAT, lexical_format=LEXICAL_FORMAT,
            dim=self.embedder.dim, tree=self.tree, source=self.label, hnsw=params,
            fusion=(FUSION[0], FUSION[1], RRF_K, FUSION_DEPTH), files=refs,
            trust=self.shared.index_level(digests) if self.shared is not None else "none",
        )
        store.put(MANIFEST, msgspec.json.encode(manifest) + b"\n")  # last: it vouches for the rest
        return self._report(len(entries), len(todo), len(digests) - len(todo), removed, rebuilt)

    def _save_vectors(self, digests: list[str], vectors: npt.NDArray[np.float32], *,
                      generation: str | None = None) -> None:
        import numpy as np

        # The rows' own memory, not a copy of it (15 MB at 10,000 notes): nothing writes to them any more.
        blob = np.ascontiguousarray(vectors, dtype="<f4").data.cast("B")
        # Vectors first, then the metadata that vouches for them (its sha256): a reader of a half-written
        # pair sees a digest mismatch and starts over, never misattributed vectors. Neither is synced to the
        # disk: a killed process loses nothing (the system has the bytes), and after a power cut a file cut
        # short fails that digest.
        self.store.put(VECTORS, blob, sync=False)
        self.store.put(VECTOR_META, sync=False, data=msgspec.msgpack.encode(
            VectorMeta(key=self.key, generation=self.generation if generation is None else generation,
                       dim=self.embedder.dim, sha256=_sha(blob),
                       digests=list(digests))))

    def _report(self, indexed: int, embedded: int, reused: int, removed: int, rebuilt: bool, *,
                unchanged: bool = False) -> IndexReport:
        snap = self.snap
        return IndexReport(
            ok=True, provider=PROVIDER, dataset=snap.dataset, dry_run=False, indexed=indexed,
            would_index=len(snap.nodes), edges=len(snap.edges), private=snap.private_count,
            fingerprint=snap.fingerprint, enabled=True, embedded=embedded, reused=reused, removed=removed,
            rebuilt=rebuilt, unchanged=unchanged, left_out=snap.left_out,
        )

    def _intact(self, manifest: Manifest) -> bool:
        for name, ref in manifest.files.items():
            data = self.store.get(name)
            if data is None or len(data) != ref.size or self._sha(data) != ref.sha256:
                return False
        return (manifest.embed_format == EMBED_FORMAT and manifest.packet_format == PACKET_FORMAT
                and _lexical_format_ok(manifest.lexical_format))

    def _hnsw_update(self, previous: Manifest | None, prev_entries: Entries | None,
                     entries: list[Entry]) -> _GraphUpdate:
        """The HNSW graph of `entries`, begun: the last one loaded and its gone elements marked deleted when it
        can be updated (`_GraphUpdate.finish` adds the new ones, once their vectors are known), else a rebuild."""
        import hnswlib

        dim = self.embedder.dim
        want = {e.label for e in entries}
        old: set[int] = {e.label for e in prev_entries.entries} if prev_entries is not None else set()
        removed_nodes = (len({e.node_id for e in prev_entries.entries} - {e.node_id for e in entries})
                         if prev_entries is not None else 0)
        params = previous.hnsw if previous is not None else None
        raw = self.store.get(HNSW_FILE)
        ref = previous.files.get(HNSW_FILE) if previous is not None else None
        usable = (params is not None and params.generation == self.generation and prev_entries is not None
                  and raw is not None
                  and ref is not None and self._sha(raw) == ref.sha256 and params.m == HNSW_M
                  and params.ef_construction == HNSW_EF_CONSTRUCTION
                  and _hnsw_problem(raw, dim, params) is None
                  and all(0 <= e.label < params.elements for e in prev_entries.entries))
        update = _GraphUpdate(dim, self.generation, sorted(want), removed_nodes)
        if usable and params is not None and raw is not None:
            add = sorted(want - old)
            gone = sorted(old - want)
            # Upper bound on dead elements after this update (a re-added label revives its element).
            if params.deleted + len(gone) <= _DEAD_FRACTION * max(params.elements + len(add), 1):
                index: Any = hnswlib.Index(space="ip", dim=dim)
                with _as_file(self.store, HNSW_FILE, raw) as path:
                    index.load_index(str(path), max_elements=max(params.elements + len(add), 1))
                existing = set(index.get_ids_list())
                revived = [label for label in add if label in existing]
                for label in gone:
                    index.mark_deleted(label)
                update.index, update.add = index, add
                update.deleted = params.deleted + len(gone) - len(revived)
        return update

    def _lexical(self, rendered: Packets, digests: list[str], previous: Manifest | None,
                 prev_entries: Entries | None) -> bytes:
        """The BM25 index of the snapshot: the last one with the changed documents replaced
        (`lexical_update.update`) when it is intact, else built from every document's term counts.

        Term counts are also kept by packet digest (`TERMS`, read by recall's assembled trees too): a
        document's counts come from there, else from tokenising its packet. Only this snapshot's are kept."""
        from vivary_git.memory.local.bm25 import LEXICAL_FORMAT, Tokenizer, build_iter

        cache: _RawTermCache | None = _decode(self.store.get(TERMS), _RawTermCache)
        known = cache.counts if cache is not None and cache.format == LEXICAL_FORMAT else {}
        tokenizer: Tokenizer | None = None
        # Counts computed here, kept encoded as `TERMS` keeps them: a map of every note's terms at once is ~50 MiB
        # at 10,000 notes, their encoding ~15.
        computed: dict[str, msgspec.Raw] = {}

        def counts_of(i: int) -> dict[str, int]:
            nonlocal tokenizer
            d = digests[i]
            raw = known.get(d)
            got: dict[str, int] | None = _decode(bytes(raw), dict[str, int]) if raw is not None else None
            if got is None:
                if tokenizer is None:
                    tokenizer = Tokenizer()
                got = tokenizer.counts(rendered[i][1])
                computed[d] = msgspec.Raw(msgspec.msgpack.encode(got))
            return got

        index = None
        old = self._previous_lexical(previous, prev_entries)
        if old is not None and prev_entries is not None:
            from vivary_git.memory.local.lexical_update import update

            old_doc = {e.digest: k for k, e in enumerate(prev_entries.entries)}
            old_of_new = [old_doc.get(d) for d in digests]
            fresh = [j for j, k in enumerate(old_of_new) if k is None]
            rendered.render(j for j in fresh if digests[j] not in known)  # those to tokenise, in one batch
            index = update(old, old_of_new, {j: counts_of(j) for j in fresh})
        if index is None:
            rendered.render(j for j, d in enumerate(digests) if d not in known)
            index = build_iter(counts_of(j) for j in range(len(digests)))
        kept: dict[str, msgspec.Raw] = {}
        for d in digests:
            raw = known.get(d)
            if raw is None:
                raw = computed.get(d)
            if raw is not None:
                kept[d] = raw
        if list(kept) != list(known):
            self.store.put(TERMS, msgspec.msgpack.encode(_RawTermCache(format=LEXICAL_FORMAT, counts=kept)))
        return index.encode()

    def _previous_lexical(self, previous: Manifest | None, prev_entries: Entries | None) -> LexicalIndex | None:
        """The last run's BM25 index when it is intact (the manifest's sha256) and of its entries."""
        from vivary_git.memory.local.bm25 import decode

        ref = previous.files.get(LEXICAL) if previous is not None else None
        if ref is None or prev_entries is None or previous is None or not _lexical_format_ok(previous.lexical_format):
            return None
        data = self.store.get(LEXICAL)
        if data is None or len(data) != ref.size or self._sha(data) != ref.sha256:
            return None
        found = decode(data)
        return found if found is not None and found.n_docs == len(prev_entries.entries) else None


class _GraphUpdate:
    """An HNSW graph being brought up to date (`_IndexBuilder._hnsw_update`): `finish(vectors)` adds the
    elements `add` to the loaded `index`, or builds the graph of `labels` anew when there is no index."""

    def __init__(self, dim: int, generation: str, labels: list[int], removed: int) -> None:
        self.dim = dim
        self.generation = generation
        self.labels = labels
        self.removed = removed  # nodes of the last index no longer in this one
        self.index: Any = None
        self.add: list[int] = []
        self.deleted = 0

    def finish(self, vectors: npt.NDArray[np.float32]) -> tuple[bytes, HnswParams, bool, int]:
        """The graph's file, its parameters, whether it was rebuilt and how many nodes left it."""
        import hnswlib
        import numpy as np

        index = self.index
        rebuilt = index is None
        if index is not None:
            if self.add:
                index.add_items(vectors[self.add], np.asarray(self.add, dtype=np.int64), num_threads=1)
            elements, deleted = index.get_current_count(), self.deleted
        else:
            labels = self.labels
            index = hnswlib.Index(space="ip", dim=self.dim)
            index.init_index(max_elements=max(len(labels), 1), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                             random_seed=100)
            if labels:
                index.add_items(vectors[labels], np.asarray(labels, dtype=np.int64))
            elements, deleted = len(labels), 0
        index.set_ef(HNSW_EF)
        with tempfile.TemporaryDirectory(prefix="vivary-hnsw-") as tmp:
            path = Path(tmp) / HNSW_FILE
            index.save_index(str(path))
            # The graph is let go before its file is read back: never both at once (17 MiB at 10,000 notes).
            self.index = index = None
            data = path.read_bytes()
        out = HnswParams(generation=self.generation, space="ip", m=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                         ef=HNSW_EF, elements=elements, deleted=deleted)
        return data, out, rebuilt, self.removed


class PacketKeys(msgspec.Struct, frozen=True):
    """`PACKETS`: the packet key (`snapshot.packet_key`) and packet digest of each indexed node, so the next
    run renders only the packets whose inputs changed. `pairs` is msgpack of [key, digest] pairs, `sha256`
    its digest: a truncated or altered file is noticed and ignored, never half used."""

    format: int
    sha256: str
    pairs: msgspec.Raw


class _RawTermCache(msgspec.Struct, frozen=True):
    """`TermCache` (the same encoding) with each document's counts left encoded: reading and rewriting the
    cache costs a copy per document, not a dictionary; a value is decoded only when its counts are used."""

    format: int
    counts: dict[str, msgspec.Raw]


def _lexical_format_ok(found: int) -> bool:
    from vivary_git.memory.local.bm25 import LEXICAL_FORMAT

    return found == LEXICAL_FORMAT

def _sweep(store: StateStore) -> None:
    """What an index run that was killed left in the store's folder (`LocalStateStore.sweep`): called by the
    one index writer, under the index lock."""
    from vivary_git.memory.state import LocalStateStore

    if isinstance(store, LocalStateStore):
        store.sweep()
