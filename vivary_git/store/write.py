"""Writing the shared cache: commits of chunks, compare-and-swap on the ref, merging, rebuilding.

Writes are objects first, ref last, and the ref moves by compare-and-swap (`git update-ref REF NEW
OLD`): a killed writer leaves the old cache, and a writer that loses a race re-applies its entries
on the winner's commit (bounded retries). Deciding *what* may be written (the privacy boundary, only
entries computed here) is record.py's job; this module stores what it is given. A signing writer
(`vivary.cacheSign`, trust.py) never builds on a commit whose signature does not verify.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.config import FORMAT_VERSION
from vivary_git.refnames import CACHE_REF
from vivary_git.store import format as fmt  # its bounds read through the module: one value for every reader
from vivary_git.store.format import (
    _BLOB_MODE,
    _RAW_CHUNK,
    _TREE_MODE,
    MAX_STATE_BYTES,
    MAX_TREES,
    STORE_FORMAT,
    ZERO,
    ChunkRef,
    Manifest,
    StateRef,
    StoreBusy,
    StoreDamaged,
    StoreNewer,
    TreeSummary,
    _sha256,
    _state_path,
)
from vivary_git.store.read import Snapshot, _blob_at, _tip, ref_tip, written_by
from vivary_git.store.trust import _signed_commit, signing, verified

if TYPE_CHECKING:
    from vivary_git.git import Repo


class Changes(msgspec.Struct):
    """What one run adds. Values are encoded already, so merging never re-decodes them."""

    parse: dict[str, bytes] = {}
    facts: dict[str, bytes] = {}
    trees: dict[str, TreeSummary] = {}
    states: dict[str, bytes] = {}
    vectors: dict[str, bytes] = {}  # vector key -> quantised vector (memory/local/vectors.py)

    def empty(self) -> bool:
        return not (self.parse or self.facts or self.trees or self.states or self.vectors)

    def of(self, kind: str) -> dict[str, bytes]:
        """The entries of one chunk kind."""
        got: dict[str, bytes] = {"parse": self.parse, "facts": self.facts, "vectors": self.vectors}[kind]
        return got


class WriteResult(msgspec.Struct, frozen=True):
    commit: str
    parent: str | None
    chunks: int  # chunk files rewritten
    attempts: int


class Staged:
    """The chunk and state objects of some changes, written on top of the cache at `tip` (`stage`)."""

    def __init__(self, tip: str | None, snap: Snapshot | None, chunks: dict[str, ChunkRef],
                 states: dict[str, StateRef], files: dict[str, str]) -> None:
        self.tip, self.snap, self.chunks, self.states, self.files = tip, snap, chunks, states, files


def stage(repo: Repo, changes: Changes, *, ref: str = CACHE_REF, sign: bool = False) -> Staged:
    """Write the objects of `changes`' entries (its chunks and states, not its tree summaries) now, on top
    of the cache as it is: `write` given them, while the ref has not moved, only adds the manifest and
    commits (a cold run writes them while the graph is still being built, record.alongside). Objects
    only: nothing points at them until `write` moves the ref. Raises `StoreDamaged` as `write` does, and
    `StoreNewer` when a newer vivary-git wrote the cache (`write` then records nothing)."""
    tip = ref_tip(repo, ref)
    return Staged(tip, *_objects_on(repo, ref, tip, changes, sign=sign))


def write(repo: Repo, changes: Changes, *, message: str = "vivary cache", ref: str = CACHE_REF,
          retries: int = 8, sign: bool = False, staged: Staged | None = None) -> WriteResult | None:
    """Add `changes` to the cache at `ref` in one commit; None when everything was there already, or when a
    newer vivary-git wrote the cache (left to it: docs/cache.md "When versions differ").
    `staged`: `stage(changes)`'s objects, used while the ref is still where they were staged on.
    Raises `StoreDamaged` (the current cache is unreadable: nothing is written on top of it) or
    `StoreBusy` (the ref kept moving under us for `retries` attempts)."""
    moved, said = 0, ""
    for attempt in range(1, retries + 1):
        tip = ref_tip(repo, ref)
        try:
            made = _commit_on(repo, ref, tip, changes, message, sign=sign,
                              staged=staged if staged is not None and staged.tip == tip else None)
        except StoreNewer:
            return None  # a newer vivary-git's cache is left as it is: nothing recorded, results unaffected
        if made is None:
            return None
        commit, parent, chunks = made
        _test_pause()
        # --no-deref: a symbolic ref in the cache ref's place (to a branch that does not exist: read as no cache)
        # is replaced, never followed: Git would have made that branch, holding a cache commit.
        proc = repo.git(["update-ref", "--no-deref", "-m", "vivary cache", ref, commit, tip or ZERO], check=False)
        if proc.returncode == 0:
            return WriteResult(commit, parent, chunks, attempt)
        said = proc.stderr.decode("utf-8", "replace").strip()
        if ref_tip(repo, ref) != tip:
            moved += 1
        # Lost the race: the winner's commit is the new base; our entries are re-applied on it. (A ref that did not
        # move may be locked by a writer about to move it: tried again too.)
        import random

        time.sleep(random.uniform(0.01, 0.05) * attempt)
    if not moved:  # Git refused every time, and nothing moved: not a race, and "moved" would be false
        held = repo.held_ref(ref)  # its lock file left by a writer killed mid-write: named, with how to clear it
        if held:
            raise StoreBusy(f"{held}; this run's entries were not recorded")
        first = next((line for line in said.splitlines() if line.strip()), "no reason given")
        raise StoreBusy(f"Git refused to move {ref} ({first}); this run's entries were not recorded")
    raise StoreBusy(f"{ref} moved {moved} times while this run was recording; its entries were not recorded")


def _test_pause() -> None:
    # Lets the tests kill a writer between "objects written" and "ref moved"; unset, it costs a lookup.
    pause = os.environ.get("VIVARY_TEST_STORE_PAUSE")
    if pause:
        time.sleep(float(pause))


def update_ref(repo: Repo, ref: str, new: str, old: str | None) -> bool:
    """Compare-and-swap: move `ref` to `new` only if it still points at `old` (None: does not exist). The ref
    itself, never what a symbolic ref in its place leads to (`commit`)."""
    proc = repo.git(["update-ref", "--no-deref", "-m", "vivary cache", ref, new, old or ZERO], check=False)
    return proc.returncode == 0


def delete_ref(repo: Repo, ref: str, old: str) -> bool:
    """Delete `ref` if it still names `old`. `--no-deref`: a symbolic ref goes itself; Git's plain `update-ref -d`
    deletes the ref it leads to instead (`cache drop` of a staged ref made a symbolic ref to a branch deleted the
    branch)."""
    return repo.git(["update-ref", "--no-deref", "-d", ref, old], check=False).returncode == 0


def delete_dangling_ref(repo: Repo, ref: str) -> bool:
    """Delete `ref` when it is a symbolic ref to a ref that does not exist (`read.ref_tip` reads it as none): only a
    symbolic ref, never what it would lead to. True when one was deleted."""
    return repo.git(["symbolic-ref", "--delete", ref], check=False).returncode == 0


def delete_unreadable_ref(repo: Repo, ref: str) -> bool:
    """Delete `ref` when it does not parse (`read.ref_tip` raises): Git refuses `update-ref -d` on it ("reference
    broken"), but `symbolic-ref` writes a ref without reading its old value. So, through Git and its ref lock: make
    it a symbolic ref to itself (which no writer can update: it resolves to nothing), then delete that. True when
    the ref is gone; a ref that parses is left alone."""
    try:
        ref_tip(repo, ref)
        return False
    except StoreDamaged:
        pass
    for args in (["symbolic-ref", "-m", "vivary cache: unreadable ref removed", ref, ref],
                 ["symbolic-ref", "--delete", ref]):
        if repo.git(args, check=False).returncode != 0:
            return False
    return _tip(repo, ref) is None


def _writer() -> str:
    from vivary_git.version import __version__

    who = os.environ.get("VIVARY_CACHE_WRITER") or ("ci" if os.environ.get("CI") else "local")
    return f"{who} (vivary-git {__version__})"


def _objects_on(repo: Repo, ref: str, tip: str | None, changes: Changes, *, sign: bool = False,
                ) -> tuple[Snapshot | None, dict[str, ChunkRef], dict[str, StateRef], dict[str, str]]:
    """The snapshot to build on, and its chunks and states with `changes`' entries merged in, their new
    objects written (path -> new blob id)."""
    snap: Snapshot | None = None
    if tip is not None and sign and not verified(repo, tip):
        # A signature vouches for every entry of the commit's tree: a signing writer never builds on
        # entries it cannot vouch for, so it starts a new chain holding only what it computed.
        tip = None
    if tip is not None:
        snap = Snapshot.load(repo, ref, commit=tip)  # StoreDamaged propagates: never build on damage
        if snap is None:
            written = written_by(repo, ref, commit=tip)
            if written is not None and written.newer():
                raise StoreNewer(written.describe())  # left to the version that wrote it (docs/cache.md)
    old = snap.manifest if snap is not None else None
    chunks = dict(old.chunks) if old else {}
    states = dict(old.states) if old else {}
    files: dict[str, str] = {}  # path -> new blob id
    now = int(time.time())
    for kind, entries in (("parse", changes.parse), ("facts", changes.facts), ("vectors", changes.vectors)):
        by_prefix: dict[str, dict[str, bytes]] = {}
        for key, value in entries.items():
            by_prefix.setdefault(key[:2], {})[key] = value
        for prefix, new in sorted(by_prefix.items()):
            path = f"{kind}/{prefix}.msgpack"
            merged = _old_raw(snap, path) if snap is not None and path in chunks else {}
            if all(merged.get(k) == v for k, v in new.items()):
                continue
            merged.update(new)
            data = msgspec.msgpack.encode([(k, msgspec.Raw(merged[k])) for k in sorted(merged)])
            if len(data) > fmt.MAX_CHUNK_BYTES:
                continue  # readers would refuse it; the entries are recomputed instead
            files[path] = str(repo.repo.create_blob(data))
            chunks[path] = ChunkRef(_sha256(data), len(data), len(merged))
    for path, data in changes.states.items():
        want = states.get(path)
        if want is not None and want.sha256 == _sha256(data):
            continue
        files[path] = str(repo.repo.create_blob(data))
        states[path] = StateRef(_sha256(data), len(data), now)
    return snap, chunks, states, files


def _commit_on(repo: Repo, ref: str, tip: str | None, changes: Changes, message: str, *, sign: bool = False,
               staged: Staged | None = None) -> tuple[str, str | None, int] | None:
    if staged is not None:  # staged on this tip: its objects are written
        snap, chunks, states, files = staged.snap, dict(staged.chunks), dict(staged.states), dict(staged.files)
    else:
        snap, chunks, states, files = _objects_on(repo, ref, tip, changes, sign=sign)
    old = snap.manifest if snap is not None else None
    trees = dict(old.trees) if old else {}
    now = int(time.time())
    new_trees = {k: v for k, v in changes.trees.items() if k not in trees}
    if not files and not new_trees:
        return None
    trees.update(new_trees)
    if len(trees) > MAX_TREES:
        trees = dict(sorted(trees.items(), key=lambda kv: kv[1].written)[-MAX_TREES:])
    chain = old.chain + 1 if old is not None and old.chain < fmt.CHAIN_LIMIT else 1
    restart = chain == 1
    manifest = Manifest(store=STORE_FORMAT, format=FORMAT_VERSION, chain=chain,
                        writer=_writer(), written=now, chunks=chunks, trees=trees, states=states)
    files["manifest.msgpack"] = str(repo.repo.create_blob(msgspec.msgpack.encode(manifest)))
    root = _update_tree(repo, snap.tree if snap is not None else None, files)
    parents = [] if restart or tip is None else [tip]
    commit = _create_commit(repo, root, parents, message, sign=sign)
    return commit, (parents[0] if parents else None), len(files) - 1


def _old_raw(snap: Snapshot, path: str) -> dict[str, bytes]:
    """A chunk's entries as encoded bytes. A damaged chunk is replaced, not merged into."""
    kind, name = path.split("/")
    try:
        snap.chunk(kind, name[:2])  # verifies
    except StoreDamaged:
        return {}
    data = _blob_at(snap.repo, snap.ref, snap.tree, path, fmt.MAX_CHUNK_BYTES)
    return {k: bytes(v) for k, v in _RAW_CHUNK.decode(data)} if data is not None else {}


def _update_tree(repo: Repo, base: Any, files: Mapping[str, str]) -> str:
    """A tree like `base` with `files` (path -> blob id) put in place; nested folders as needed."""
    nested: dict[str, dict[str, str]] = {}
    here: dict[str, str] = {}
    for path, oid in files.items():
        head, _, rest = path.partition("/")
        if rest:
            nested.setdefault(head, {})[rest] = oid
        else:
            here[head] = oid
    builder = repo.repo.TreeBuilder(base) if base is not None else repo.repo.TreeBuilder()
    pygit2 = repo.pygit2
    for name, oid in here.items():
        builder.insert(name, pygit2.Oid(hex=oid), _BLOB_MODE)
    for name, sub in nested.items():
        old_sub = None
        if base is not None and name in base:
            entry = base[name]
            old_sub = repo.repo[entry.id] if entry.type_str == "tree" else None
        builder.insert(name, pygit2.Oid(hex=_update_tree(repo, old_sub, sub)), _TREE_MODE)
    return str(builder.write())


def _create_commit(repo: Repo, tree: str, parents: list[str], message: str, *, sign: bool = False) -> str:
    if sign:
        return _signed_commit(repo, tree, parents, message)
    pygit2 = repo.pygit2
    sig = pygit2.Signature("vivary-git", "vivary-git@localhost", int(time.time()), 0)
    oid = repo.repo.create_commit(None, sig, sig, message, pygit2.Oid(hex=tree),
                                  [pygit2.Oid(hex=p) for p in parents])
    return str(oid)


def rebuild(repo: Repo, snap: Snapshot, keep: Mapping[str, set[str]], keep_trees: set[str],
            keep_states: set[str], message: str) -> str:
    """A new root commit holding only the kept entries of `snap` (gc). Returns the commit id."""
    files: dict[str, str] = {}
    chunks: dict[str, ChunkRef] = {}
    for path in sorted(snap.manifest.chunks):
        kind = path.split("/")[0]
        old = _old_raw(snap, path)
        kept = {k: v for k, v in old.items() if k in keep.get(kind, set())}
        if not kept:
            continue
        data = msgspec.msgpack.encode([(k, msgspec.Raw(kept[k])) for k in sorted(kept)])
        files[path] = str(repo.repo.create_blob(data))
        chunks[path] = ChunkRef(_sha256(data), len(data), len(kept))
    states: dict[str, StateRef] = {}
    for path, ref in snap.manifest.states.items():
        if path in keep_states:
            data = snap._verified(path, ref.sha256, ref.size, MAX_STATE_BYTES)
            files[path] = str(repo.repo.create_blob(data))
            states[path] = ref
    trees = {k: v for k, v in snap.manifest.trees.items() if k in keep_trees}
    manifest = Manifest(store=STORE_FORMAT, format=FORMAT_VERSION, chain=1, writer=_writer(),
                        written=int(time.time()), chunks=chunks, trees=trees, states=states)
    files["manifest.msgpack"] = str(repo.repo.create_blob(msgspec.msgpack.encode(manifest)))
    return _create_commit(repo, _update_tree(repo, None, files), [], message)


def merge_into(repo: Repo, base: Snapshot, other: Snapshot, message: str) -> str | None:
    """A commit on `base` that also holds every entry of `other` (base wins on equal keys, as both
    are pure functions of their keys). None when `other` adds nothing."""
    changes = Changes()
    for path in other.manifest.chunks:
        kind = path.split("/")[0]
        raw = _old_raw(other, path)
        target = changes.of(kind)
        have = base.raw_keys(kind, path.split("/")[1][:2])
        target.update({k: v for k, v in raw.items() if k not in have})
    changes.trees = {k: v for k, v in other.manifest.trees.items() if k not in base.manifest.trees}
    for path, ref in other.manifest.states.items():
        if base.manifest.states.get(path) is None:
            with contextlib.suppress(StoreDamaged):
                changes.states[path] = other._verified(path, ref.sha256, ref.size, MAX_STATE_BYTES)
    made = _commit_on(repo, base.ref, base.commit, changes, message)
    return made[0] if made is not None else None


def chain_states(repo: Repo, commit: str, ref: str = CACHE_REF) -> int:
    """How many provider state files the newest commit of `commit`'s chain that holds any lists (0: no
    commit of the chain, first parents back to its root or to what this clone lacks, holds one)."""
    pygit2 = repo.pygit2
    at: str | None = commit
    for _ in range(fmt.CHAIN_LIMIT + 1):
        if at is None:
            return 0
        try:
            snap = Snapshot.load(repo, ref, commit=at)
            parents = repo.repo[at].peel(pygit2.Commit).parent_ids
        except (StoreDamaged, KeyError, ValueError, pygit2.GitError):
            return 0  # not here (a shallow chain) or not readable: push verifies the tip itself
        if snap is not None and snap.manifest.states:
            return len(snap.manifest.states)
        at = str(parents[0]) if parents else None
    return 0


def publishable(repo: Repo, snap: Snapshot, theirs: str | None) -> str:
    """The commit `sync push` publishes for our cache `snap`. `sync fetch` refuses a cache holding
    provider state files (opaque bytes it cannot check), so none is published: when no commit of our
    chain holds one, `snap.commit` itself; otherwise a commit of the same parses, facts and tree
    summaries without them, chained on `theirs` (the remote's tip) when this clone has it, its chain
    holds no state either and, for a signing writer, its signature verifies; else a new root. Signed
    like every cache commit this clone writes. When `theirs` already holds exactly those entries, it is
    returned: pushing again publishes nothing."""
    if not chain_states(repo, snap.commit, snap.ref):
        return snap.commit
    m = snap.manifest
    base: Snapshot | None = None
    if theirs is not None and theirs in repo.repo and not chain_states(repo, theirs, snap.ref):
        with contextlib.suppress(StoreDamaged):
            base = Snapshot.load(repo, snap.ref, commit=theirs)
    if base is not None and base.manifest.chunks == m.chunks and base.manifest.trees == m.trees:
        return base.commit
    sign = signing(repo)
    if base is not None and (base.manifest.chain >= fmt.CHAIN_LIMIT or (sign and not verified(repo, base.commit))):
        base = None
    manifest = Manifest(store=STORE_FORMAT, format=FORMAT_VERSION, chain=base.manifest.chain + 1 if base else 1,
                        writer=_writer(), written=int(time.time()), chunks=m.chunks, trees=m.trees, states={})
    builder = repo.repo.TreeBuilder(snap.tree)
    if "state" in snap.tree:
        builder.remove("state")
    builder.insert("manifest.msgpack", repo.repo.create_blob(msgspec.msgpack.encode(manifest)), _BLOB_MODE)
    return _create_commit(repo, str(builder.write()), [base.commit] if base else [],
                          "vivary cache: published without provider state", sign=sign)


def put_state(repo: Repo, provider: str, key: str, files: Mapping[str, bytes]) -> WriteResult | None:
    """File a memory provider's state (e.g. `{"index.bin": …, "manifest.json": …}`) under
    `state/PROVIDER/KEY/` in one cache commit. `key` should come from `state_key(tree, config, model)`.

    The caller must have built the state from privacy-admitted nodes only (the memory snapshot does;
    see memory/snapshot.py): this function cannot tell what bytes were derived from. Raises
    `ValueError` for bad names or sizes, `StoreDamaged`/`StoreBusy` as `write`."""
    states: dict[str, bytes] = {}
    for name, data in files.items():
        if len(data) > MAX_STATE_BYTES:
            raise ValueError(f"state file {name!r} is {len(data)} bytes, over the {MAX_STATE_BYTES}-byte limit")
        states[_state_path(provider, key, name)] = data
    return write(repo, Changes(states=states), message=f"vivary cache: {provider} state {key[:12]}")
