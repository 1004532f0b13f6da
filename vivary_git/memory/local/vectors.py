"""Note embeddings keyed by content, shared in `refs/vivary/cache` like parses (docs/cache.md, "Vectors").

An embedding is a pure function of the model and the text embedded, so it is stored under

    key = sha256("vivary-vector", VECTOR_FORMAT, model id, embed format, the text embedded)[:40]

(`vector_key`; the model id names the model's and the tokenizer's sha256, and the text is `embed_text` of
the note's packet). A clone that has the key of every admitted note of a tree can answer recall for that
tree without running the model over a single note: CI embeds once, every clone fetches.

A stored vector is int8 with one scale (`quantize`): 4 bytes of little-endian float32 scale, then `dim`
signed bytes, the largest component mapped to ±127. 388 bytes for MiniLM's 384 dimensions, against 1,536
as float32. What every clone uses is the quantised vector made unit again (`roundtrip`), including the
clone that embedded it: the index built here and the one assembled from fetched vectors hold the same
numbers.

A fetched vector is a stranger's input. `value_problem` (pure Python: `store` runs it on every chunk it
reads or `sync fetch` adopts) refuses a value of the wrong size, a scale that is not a finite number in
range, an int8 code of -128 (never written) or a vector whose largest component is not ±127; `decode_many`
then refuses any vector of another dimension or whose length is not that of a unit vector, before numpy
computes anything with it. What a well-formed forgery can still do is said in docs/cache.md.

Recording (`record_vectors`) follows record.py's rules: only committed trees, only vectors computed in
this clone, only notes the cache's privacy decision admits (a blob is admitted only when every path that
holds it is public).

A vector the local index took from the shared cache is remembered with the `vivary.cacheTrust` it was
taken under (`shared.msgpack`). Once the setting no longer allows that level (`allows`: `any` > `signed` >
`none`), the row is not used: recall refuses the index until `index` has dropped it and embedded the note
here (or taken the vector again, as the setting now allows), and recall of an assembled tree leaves it out.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.escape import text as shown
from vivary_git.memory.local.vectorvalue import (
    _LEVELS,
    _MAX_SCALE,
    _MIN_SCALE,
    _SCALE,
    KIND,
    MAX_DIM,
    VECTOR_FORMAT,
    value_problem,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vivary_git import privacy
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.snapshot import MemoryNode, MemorySnapshot
    from vivary_git.memory.state import LocalStateStore, StateStore
    from vivary_git.workspace import Workspace

__all__ = [
    "KIND",
    "LEGACY_TRUST",
    "VECTOR_FORMAT",
    "IndexSharing",
    "SharedVectors",
    "adopted",
    "allows",
    "decode_many",
    "quantize",
    "record_vectors",
    "roundtrip",
    "value_problem",
    "vector_key",
]

# |quantised vector| - 1: rounding 384 components by at most half a step moves the length by ~1e-3.
_NORM_TOLERANCE = 0.05

# `vivary.cacheTrust` levels (store/trust.py `TRUST_LEVELS`), from the one that allows least.
_TRUST_RANK = {"none": 0, "signed": 1, "any": 2}
# The level of a row taken from the shared cache before the level was recorded: the most trusting one.
LEGACY_TRUST = "any"


def allows(trust: str, level: str) -> bool:
    """Whether `vivary.cacheTrust = trust` allows a vector taken from the shared cache under `level`."""
    return _TRUST_RANK.get(level, len(_TRUST_RANK)) <= _TRUST_RANK.get(trust, 0)


def highest(levels: Iterable[str]) -> str:
    """The most trusting of `levels` ("none" when there are none: every vector computed here)."""
    return max(levels, key=lambda level: _TRUST_RANK.get(level, len(_TRUST_RANK)), default="none")


def vector_key(model_id: str, embed_format: int, text: str) -> str:
    """The key a vector of `text` is stored under (40 hex digits, like every key of the cache)."""
    h = hashlib.sha256(f"vivary-vector\0{VECTOR_FORMAT}\0{model_id}\0{embed_format}\0".encode())
    h.update(text.encode("utf-8", "surrogateescape"))
    return h.hexdigest()[:40]


def quantize(vectors: npt.NDArray[np.float32]) -> list[bytes]:
    """Each row as a stored value: its float32 scale (largest |component| / 127), then int8 codes."""
    import numpy as np

    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim != 2 or rows.shape[1] < 1 or not np.isfinite(rows).all():
        raise ValueError("quantize takes finite rows of at least one component")
    peak = np.abs(rows).max(axis=1)
    if (peak <= 0).any():
        raise ValueError("quantize cannot store a zero vector")
    scale = (peak / _LEVELS).astype(np.float32)
    codes = np.clip(np.rint(rows / scale[:, None]), -_LEVELS, _LEVELS).astype(np.int8)
    return [_SCALE.pack(float(s)) + c.tobytes() for s, c in zip(scale.tolist(), codes, strict=True)]


def decode_many(values: Sequence[bytes], dim: int) -> tuple[npt.NDArray[np.float32], list[int]]:
    """Unit float32 rows for `values` (zeros where a value is bad) and the indices of the bad ones: of
    another dimension, failing `value_problem`, or not the length of a unit vector once scaled."""
    import numpy as np

    size = _SCALE.size + dim
    sized = [i for i, value in enumerate(values) if len(value) == size]
    if not sized or not 1 <= dim <= MAX_DIM:
        return np.zeros((len(values), dim), dtype=np.float32), list(range(len(values)))
    # `value_problem` for every value at once: no code is -128 (the smallest is not), and one is at full
    # scale (the largest is 127 or the smallest -127), from two passes over the codes.
    raw = np.frombuffer(b"".join(values[i] for i in sized), dtype=np.uint8).reshape(len(sized), size)
    scales = raw[:, :_SCALE.size].copy().view("<f4").reshape(-1).astype(np.float64)
    codes = raw[:, _SCALE.size:].view(np.int8)
    low, high = codes.min(axis=1), codes.max(axis=1)
    ok = (np.isfinite(scales) & (scales >= _MIN_SCALE) & (scales <= _MAX_SCALE)
          & (low != -128) & ((high == _LEVELS) | (low == -_LEVELS)))
    exact = codes.astype(np.float32)
    norms = np.linalg.norm(exact, axis=1)  # > 0 where ok: a component at +-127
    with np.errstate(divide="ignore", invalid="ignore"):
        ok &= np.abs(norms * np.where(ok, scales, 0.0) - 1.0) <= _NORM_TOLERANCE
        rows = exact / np.where(ok, norms, 1.0)[:, None].astype(np.float32)
    if len(sized) == len(values) and ok.all():
        return rows.astype(np.float32, copy=False), []  # every value good, in order: the rows as they are
    out = np.zeros((len(values), dim), dtype=np.float32)
    where = np.asarray(sized, dtype=np.int64)
    out[where[ok]] = rows[ok]
    bad = sorted(set(range(len(values))) - set(where[ok].tolist()))
    return out, bad


def roundtrip(vectors: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """The vectors every clone uses for these: quantised, then unit length again. Idempotent."""
    import numpy as np

    if not len(vectors):
        return np.asarray(vectors, dtype=np.float32)
    rows, bad = decode_many(quantize(vectors), int(vectors.shape[1]))
    if bad:  # only a vector far from unit length (never an embedding) can fail here
        raise ValueError(f"{len(bad)} vector(s) are not unit vectors")
    return rows


# --- the shared cache ---------------------------------------------------------------------------------


class SharedVectors:
    """The vectors of `refs/vivary/cache` this run may use, as far as `vivary.cacheTrust` lets it read
    the shared cache (docs/cache.md, "Trust"): none by default, and none ever in a gate."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.ref = ws.refcache() if ws.source.repo is not None else None
        self.rejected = 0  # well-formed chunks holding a vector that failed `decode_many`

    def readable(self) -> bool:
        return self.ref is not None and self.ref.reads()

    @property
    def trust(self) -> str:
        """The `vivary.cacheTrust` in force for this run: what a vector taken now is taken under, and what a
        vector taken before must have been taken under to be used ("none" without a shared cache, in a gate)."""
        return self.ref.trust if self.ref is not None else "none"

    def get(self, keys: Iterable[str], dim: int) -> dict[str, npt.NDArray[np.float32]]:
        """Unit float32 vectors of the `keys` the trusted cache has; bad ones are left out (and counted)."""
        if self.ref is None or not self.ref.reads():
            return {}
        found: Mapping[str, bytes] = self.ref.get(KIND, list(dict.fromkeys(keys)))
        if not found:
            return {}
        names = list(found)
        rows, bad = decode_many([found[k] for k in names], dim)
        if bad:
            self.rejected += len(bad)
            print(f"vivary: ignored {len(bad)} vector(s) in {self.ref.ref} that are not unit vectors of {dim} "
                  "dimensions; those notes are treated as having none", file=sys.stderr)
        skip = set(bad)
        return {k: rows[i] for i, k in enumerate(names) if i not in skip}

    def stored_elsewhere(self, keys: Sequence[str]) -> int:
        """How many of `keys` the cache's tip holds although this run may not read them (trust `none`, or
        no signed commit holds them): for the hint that says why recall could not use them. Only keys are
        read, never a value."""
        if self.ref is None or self.ref.reads() or not keys:
            return 0
        return len(keys) - len(self.ref.missing(KIND, keys))


def recordable(ws: Workspace) -> bool:
    """Whether vectors of this tree may be recorded at all (cheap: no note read)."""
    from vivary_git import record

    ref = ws.refcache()
    return ref is not None and not ref.damaged and record.recordable_root(ws.source) is not None


def record_vectors(ws: Workspace, nodes: Sequence[MemoryNode], keys: Sequence[str],
                   values: Callable[[set[str]], Mapping[str, npt.NDArray[np.float32]]], foreign: set[str], *,
                   memo: privacy.PrivacyMemo | None = None) -> int:
    """Add to `refs/vivary/cache` the vectors of `nodes` (under `keys`, one per node) that it lacks, for a
    committed tree only, leaving out vectors read from a shared cache (`foreign`) and any note the cache's
    privacy decision does not admit. `values(keys)` gives the unit rows this clone computed for those keys.
    Returns how many were recorded; never raises for a cache problem (it says why on stderr: the index
    itself is unaffected). `memo`: privacy questions this command has had answered (`privacy.decide_scoped`):
    a `--rev` snapshot asks exactly this one when its workspaces respect Git's ignore rules."""
    from vivary_git import record
    from vivary_git.errors import VivaryError
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store.write import Changes

    source = ws.source
    ref = ws.refcache()
    root = record.recordable_root(source)
    if ref is None or ref.damaged or root is None or not nodes:
        return 0  # uncommitted content (a dirty working tree, a staged change) stays in this clone
    wanted = [k for k in dict.fromkeys(keys) if k not in foreign]
    new = set(ref.missing(KIND, wanted))
    if not new:
        return 0
    # The same decision record.py makes for parses: every document of the tree, the recorded tree's
    # ignore rules (and the working tree's for a working-tree source), each workspace's floor and
    # private_paths, sensitive names, ignored files private whatever memory.toml says.
    prefix = f"{source.prefix}/" if source.prefix else ""
    entries = list(source.entries)
    paths = [prefix + e.path for e in entries]
    try:
        found = record.scopes(ws, paths, root)
        private = record.private_paths(ws, paths, root, found, memo=memo)
    except VivaryError as err:
        print(f"vivary: not recording vectors in {CACHE_REF}: {shown(str(err))}", file=sys.stderr)
        return 0
    private_blobs = {entries[i].oid for i in private}
    public_blobs = {e.oid for e in entries} - private_blobs
    admitted: dict[str, str] = {}
    for node, key in zip(nodes, keys, strict=True):
        if key in new and node.blob in public_blobs:
            admitted[key] = node.blob
    have = values(set(admitted))
    order = sorted(k for k in admitted if k in have)
    if not order:
        return 0
    import numpy as np

    encoded = [msgspec.msgpack.encode(v) for v in quantize(np.stack([have[k] for k in order]))]
    changes = Changes(vectors=dict(zip(order, encoded, strict=True)))  # entries go in encoded
    # In the commit of the tree's own parses and facts when `index` holds it back (`record.one_commit`).
    result = record.write(ws, changes, f"{len(order)} vector(s)")
    return len(order) if result is not None else 0


# --- the local index and the shared cache ----------------------------------------------------------------


class _Sharing(msgspec.Struct, frozen=True):
    """What the local index knows about its rows beyond their packet digests (`shared.msgpack`)."""

    keys: dict[str, str] = {}  # packet digest -> vector key, for rows whose key was computed
    foreign: list[str] = []  # packet digests whose rows came from refs/vivary/cache
    # The `vivary.cacheTrust` each foreign row was taken under (`LEGACY_TRUST` for one taken before it was
    # recorded).
    trust: dict[str, str] = {}

    def levels(self) -> dict[str, str]:
        """packet digest -> the trust level of each foreign row."""
        return {d: self.trust.get(d, LEGACY_TRUST) for d in self.foreign}


def _read_sharing(store: StateStore) -> _Sharing | None:
    """`shared.msgpack`; an empty record when there is none, None when it is damaged."""
    data = store.get(IndexSharing.FILE)
    if data is None:
        return _Sharing()
    try:
        return msgspec.msgpack.decode(data, type=_Sharing)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


def adopted(store: StateStore) -> dict[str, str] | None:
    """packet digest -> the trust level under which the local row of that packet was taken from the shared
    cache (a row computed here is not listed); None when that record is damaged: then any row may have been."""
    found = _read_sharing(store)
    return found.levels() if found is not None else None


def index_level(store: StateStore, digests: Iterable[str]) -> str:
    """The most trusting level any of these rows was taken under ("none": all computed here), from the record;
    `LEGACY_TRUST` when the record is damaged."""
    levels = adopted(store)
    if levels is None:
        return LEGACY_TRUST
    return highest(levels[d] for d in digests if d in levels)


class IndexSharing:
    """What `index` does beyond its own vector cache (which is keyed by packet digest, so by node id and path
    too): before embedding, take for each packet the cache lacks a row of this clone under the same vector
    key (a renamed or moved note), else the row of the same packet and model in another state folder of this
    repository (a moved or copied folder, another work tree: siblings.py), else the shared cache's vector
    (`adopt`, as far as `vivary.cacheTrust` allows); afterwards, record the vectors this clone computed that
    the shared cache lacks (`record`, committed trees only).

    Which local rows came from the shared cache, and under which `vivary.cacheTrust`, is remembered
    (`shared.msgpack`), so they are never recorded again as this clone's work (record.py's rule: only what was
    computed here), and a row the setting no longer allows is dropped (`revoke`) and its note embedded again.
    Only digests of the current snapshot are kept there: a note that left the index leaves nothing behind."""

    FILE = "shared.msgpack"

    def __init__(self, ws: Workspace, store: StateStore, embedder: Embedder, *, embed_format: int,
                 assembled: LocalStateStore, memo: privacy.PrivacyMemo | None = None) -> None:
        self.ws = ws
        self.assembled = assembled  # where recall keeps what it assembled for other trees (memory/local/assemble.py)
        self.memo = memo  # privacy questions answered in this command (`privacy.decide_scoped`)
        self.store = store
        self.embedder = embedder
        self.embed_format = embed_format
        self.shared = SharedVectors(ws)
        self.adopted = 0  # rows taken from the shared cache
        self.borrowed = 0  # rows taken from this repository's other state folders (siblings.py)
        self.appended = 0  # rows added without embedding (adopted, or copied from a row under the same key)
        self._keys: dict[str, str] = {}  # packet digest -> vector key, computed this run
        self.trust = self.shared.trust
        self._fetched: dict[str, str] = {}  # packet digest -> trust level, of the rows taken this run
        self._revoked: set[str] = set()  # foreign rows dropped this run (`revoke`)
        self._state = self._load()
        self._levels = self._state.levels() if self._state is not None else {}  # as the last run left them
        self._indexed = self._indexed_nodes()

    def key(self, packet: str) -> str:
        from vivary_git.memory.local.files import embed_text

        return vector_key(self.embedder.model_id, self.embed_format, embed_text(packet))

    def _key(self, digest: str, packet: str) -> str:
        got = self._keys.get(digest)
        if got is None:
            got = self._keys[digest] = self.key(packet)
        return got

    def level(self, digest: str) -> str | None:
        """The trust level the local row of `digest` was taken from the shared cache under (None: computed
        here), as this run leaves it."""
        got = self._fetched.get(digest)
        return got if got is not None or digest in self._revoked else self._levels.get(digest)

    def _foreign(self) -> dict[str, str]:
        """packet digest -> trust level of every foreign row, as this run leaves them."""
        return {d: v for d, v in self._levels.items() if d not in self._revoked} | self._fetched

    def index_level(self, digests: Iterable[str]) -> str:
        """The most trusting level any of these rows was taken under, once this run is done."""
        levels = self._foreign()
        return highest(levels[d] for d in digests if d in levels)

    def allowed(self, level: str) -> bool:
        """Whether the trust in force allows rows taken under `level` (an index's `Manifest.trust`)."""
        return self._state is not None and allows(self.trust, level)

    def revoke(self, cached: Sequence[str]) -> set[str]:
        """The rows of the vector cache (`cached`: their packet digests) that the trust in force no longer
        allows: taken from the shared cache under a more trusting `vivary.cacheTrust`. The caller drops them,
        so their notes are taken again as the setting now allows, or embedded here. Every row when the record
        of where they came from is damaged."""
        if self._state is None:
            self._revoked = set(cached)
        else:
            levels = self._levels
            self._revoked = {d for d in cached if d in levels and not allows(self.trust, levels[d])}
        return self._revoked

    def adopt(self, todo: list[int], rendered: Sequence[tuple[Any, str]], digests: Sequence[str], cached: list[str],
              row_of: dict[str, int], vectors: npt.NDArray[np.float32]) -> tuple[npt.NDArray[np.float32], list[int]]:
        """Append to (`cached`, `row_of`, `vectors`) a row for each packet of `todo` whose vector is known
        without embedding; returns the vectors and what is left to embed."""
        import numpy as np

        state = self._state or _Sharing()
        keys = {i: self._key(digests[i], rendered[i][1]) for i in todo}
        mine = {k: d for d, k in state.keys.items() if d in row_of}
        taken: list[tuple[int, Any]] = [(i, vectors[row_of[mine[keys[i]]]]) for i in todo if keys[i] in mine]
        for i, _ in taken:  # a copy of a row taken from the shared cache is one too
            level = self.level(mine[keys[i]])
            if level is not None:
                self._fetched[digests[i]] = level
        rest = [i for i in todo if keys[i] not in mine]
        if rest:
            # This repository's other state folders (a moved or copied folder, another work tree): rows of the
            # same packet under the same model, for admitted notes only (`todo`), checked as the own cache is.
            near = borrow(self.store, {digests[i] for i in rest}, model_id=self.embedder.model_id,
                          dim=self.embedder.dim, embed_format=self.embed_format, trust=self.trust)
            for i in rest:
                row, level = near.get(digests[i], (None, None))
                if row is not None:
                    taken.append((i, row))
                    if level is not None:  # taken from the shared cache there: it stays one here
                        self._fetched[digests[i]] = level
            self.borrowed = len(near)
            rest = [i for i in rest if digests[i] not in near]
        if rest and self.shared.readable():
            got = self.shared.get([keys[i] for i in rest], self.embedder.dim)
            fetched = [(i, got[keys[i]]) for i in rest if keys[i] in got]
            taken += fetched
            self.adopted = len(fetched)
            self._fetched.update((digests[i], self.trust) for i, _ in fetched)
        if not taken:
            return vectors, todo
        if self._fetched and self._state is not None:
            # Remembered before the rows are written (a killed run may have saved them): they must never pass
            # for this clone's own work, nor outlive the trust they were taken under.
            self._save(self._state.keys, live=None)
        for i, _ in taken:
            row_of[digests[i]] = len(cached)
            cached.append(digests[i])
        block = np.stack([v for _, v in taken]).astype("<f4")
        self.appended = len(taken)
        vectors = np.vstack([vectors, block]) if len(vectors) else block
        return vectors, [i for i in todo if digests[i] not in row_of]

    def record(self, snap: MemorySnapshot, digests: Sequence[str], packet: Callable[[int], str]) -> int:
        """Remember what this run learnt about the local rows, and record this clone's vectors of the
        snapshot's notes in the shared cache; returns how many were new there. `digests[i]` is the packet
        digest of `snap.nodes[i]` and `packet(i)` its packet, asked for only when its vector key is not
        remembered already."""
        live = set(digests)
        if self._indexed is None or self._indexed - {n.id for n in snap.nodes}:
            self._forget_assembled()
        state = self._state
        old = state or _Sharing()
        go = recordable(self.ws)
        if go:
            for i, d in enumerate(digests):
                if d not in self._keys:
                    remembered = old.keys.get(d)
                    self._keys[d] = remembered if remembered is not None else self.key(packet(i))
        keys = {d: k for d, k in {**old.keys, **self._keys}.items() if d in live}
        foreign = self._save(keys, live=live, unless=None if state is None else old)
        if state is None or not go:
            return 0  # a damaged record of which rows came from elsewhere: record none this time
        node_keys = [keys[d] for d in digests]
        row_key = dict(zip(digests, node_keys, strict=True))

        def values(wanted: set[str]) -> dict[str, npt.NDArray[np.float32]]:
            row_of, matrix = local_rows(self.store, self.embedder.model_id, self.embedder.dim, self.embed_format)
            return {row_key[d]: matrix[i] for d, i in row_of.items() if row_key.get(d) in wanted}

        return record_vectors(self.ws, snap.nodes, node_keys, values, {keys[d] for d in foreign}, memo=self.memo)

    def _save(self, keys: dict[str, str], *, live: set[str] | None, unless: _Sharing | None = None) -> set[str]:
        """Write the record: `keys`, and the foreign rows with their levels (those of `live` digests only, when
        given); not when it would say what `unless` says. Returns the foreign digests."""
        levels = self._foreign()
        if live is not None:
            levels = {d: v for d, v in levels.items() if d in live}
        new = _Sharing(keys=keys, foreign=sorted(levels), trust=dict(sorted(levels.items())))
        if unless is None or new.keys != unless.keys or new.foreign != sorted(unless.foreign) \
                or new.trust != unless.levels():
            self.store.put(self.FILE, msgspec.msgpack.encode(new))
        return set(levels)

    def _indexed_nodes(self) -> set[str] | None:
        """The node ids of the index before this run (None when that cannot be read)."""
        from vivary_git.memory.local.files import ENTRIES, Entries, _decode

        data = self.store.get(ENTRIES)
        if data is None:
            return set()
        entries: Entries | None = _decode(data, Entries)
        return {e.node_id for e in entries.entries} if entries is not None else None

    def _forget_assembled(self) -> None:
        """A note left the index (deleted, or now private): what recall assembled for other trees goes too,
        so no vector or term of it stays behind (memory/local/assemble.py rebuilds what is asked for again)."""
        import shutil

        kept = self.assembled
        if kept.written is not None:
            kept.written.forget()
        folder = kept.directory
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder, ignore_errors=True)

    def _load(self) -> _Sharing | None:
        """What was remembered; None when that record is damaged (then nothing local is recorded in the shared
        cache this run, and the record starts afresh from what this run saw)."""
        return _read_sharing(self.store)


def borrow(store: StateStore, wanted: Collection[str], *, model_id: str, dim: int, embed_format: int,
           trust: str) -> dict[str, tuple[npt.NDArray[np.float32], str | None]]:
    """The rows of `wanted` packet digests that this repository's other state folders (siblings.py: a moved or
    copied folder, another work tree) hold under this model and embed format, each with the trust level it was
    taken from the shared cache under (None: embedded on this machine). Each folder is checked as the own cache
    is (`local_rows`); a row whose level `trust` (the `vivary.cacheTrust` in force) does not allow is left out,
    and so is every row of a folder whose record of such rows is damaged. `wanted` must be digests of notes
    this workspace admits: a digest identifies a packet's content, and no other row is read."""
    from vivary_git.memory.local.siblings import siblings

    left = set(wanted)
    found: dict[str, tuple[npt.NDArray[np.float32], str | None]] = {}
    for sibling in siblings(store) if left else []:
        levels = adopted(sibling)
        if levels is None:
            continue  # which of its rows came from the shared cache is not known: none of them is taken
        row_of, rows = local_rows(sibling, model_id, dim, embed_format)
        for digest in sorted(left & row_of.keys()):
            level = levels.get(digest)
            if level is not None and not allows(trust, level):
                continue
            found[digest] = (rows[row_of[digest]].copy(), level)
            left.discard(digest)
        if not left:
            break
    return found


def local_rows(store: StateStore, model_id: str, dim: int, embed_format: int, *,
               usable: Callable[[str], bool] | None = None) -> tuple[dict[str, int], npt.NDArray[np.float32]]:
    """The local index's vector cache: row by packet digest, and the rows (unit float32); empty when it
    is absent, damaged or from another model. `usable(digest)` False leaves a row out of the map."""
    import numpy as np

    from vivary_git.memory.local.files import VECTOR_META, VECTORS, VectorMeta, _decode, _sha

    meta: VectorMeta | None = _decode(store.get(VECTOR_META), VectorMeta)
    raw = store.get(VECTORS)
    if (meta is None or raw is None or meta.key != f"{model_id}/e{embed_format}" or meta.dim != dim
            or len(raw) != len(meta.digests) * dim * 4 or _sha(raw) != meta.sha256):
        return {}, np.zeros((0, dim), dtype=np.float32)
    rows = np.frombuffer(raw, dtype="<f4").reshape(len(meta.digests), dim)
    return {d: i for i, d in enumerate(meta.digests) if usable is None or usable(d)}, rows
