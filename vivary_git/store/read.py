"""Reading the shared cache: one cache commit (`Snapshot`), read lazily and verified as it is read.

A cache may come from someone else's clone, so reading it is reading untrusted input: the manifest
and every chunk are size-bounded, each chunk's sha256 and size must match the manifest, every key
must be a hex id of the chunk it is in, and decoding is msgspec's typed msgpack (never pickle). Any
mismatch raises `StoreDamaged`; `refcache.RefCache` then disables the ref cache for the run with one
line on stderr, and the caller recomputes. Whose commit may be read at all is trust.py's question.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from vivary_git.refnames import CACHE_REF
from vivary_git.store import format as fmt  # its bounds read through the module: one value for every reader
from vivary_git.store.format import (
    _BLOB_MODE,
    _HEX40,
    _MANIFEST_DECODER,
    _RAW_CHUNK,
    _WRITTEN_DECODER,
    MAX_MANIFEST_BYTES,
    MAX_STATE_BYTES,
    Manifest,
    StoreDamaged,
    Written,
    _check_manifest,
    _chunk_decoder,
    _keys_belong,
    _sha256,
    _state_path,
)

T = TypeVar("T")

if TYPE_CHECKING:
    from vivary_git.git import Repo


class Snapshot:
    """One cache commit, read lazily and verified as it is read. Raises `StoreDamaged`."""

    def __init__(self, repo: Repo, ref: str, commit: str, tree: Any, manifest: Manifest) -> None:
        self.repo = repo
        self.ref = ref
        self.commit = commit
        self.tree = tree
        self.manifest = manifest
        self._chunks: dict[str, dict[str, Any]] = {}
        self._decoders: dict[str, msgspec.msgpack.Decoder[Any]] = {}
        self._folders: dict[str, Any] = {}  # kind -> its folder's tree (None: not a folder), found once

    @classmethod
    def load(cls, repo: Repo, ref: str = CACHE_REF, *, commit: str | None = None) -> Snapshot | None:
        """The cache at `ref` (None when there is none, or another vivary-git wrote it: `written_by` says which)."""
        found = _manifest_at(repo, ref, commit)
        if found is None:
            return None
        commit, tree, data, written = found
        if not written.ours():
            return None  # another vivary-git wrote it; not damage, just not ours to read
        manifest = _decode_manifest(ref, _MANIFEST_DECODER, data)
        _check_manifest(ref, manifest)
        return cls(repo, ref, commit, tree, manifest)

    def chunk(self, kind: str, prefix: str) -> dict[str, Any]:
        """Entries of one chunk, verified (digest, size, types, keys)."""
        path = f"{kind}/{prefix}.msgpack"
        got = self._chunks.get(path)
        if got is not None:
            return got
        want = self.manifest.chunks.get(path)
        if want is None:
            self._chunks[path] = {}
            return self._chunks[path]
        data = self._verified(path, want.sha256, want.size, fmt.MAX_CHUNK_BYTES)
        decoder = self._decoders.get(kind) or self._decoders.setdefault(kind, _chunk_decoder(kind))
        try:
            items = decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            raise StoreDamaged(self.ref, f"{path} does not decode ({err})") from None
        except RecursionError:
            raise StoreDamaged(self.ref, f"{path} is nested too deeply to be a cache entry") from None
        out = dict(items)
        if len(out) != want.count or len(items) != want.count:
            raise StoreDamaged(self.ref, f"{path} holds {len(items)} entries, the manifest says {want.count}")
        if not _keys_belong(out, prefix):  # all at once; then one by one, to name the first that does not
            for key in out:
                if not _HEX40.match(key) or not key.startswith(prefix):
                    raise StoreDamaged(self.ref, f"{path} holds a key {key[:48]!r} that does not belong there")
        if kind == "parse":
            from vivary_git.parse import MAX_VALUES, within_bounds

            for key, note in out.items():
                # A parse never holds more (or deeper) frontmatter than parse.py bounds it to.
                if not within_bounds(note.fields):
                    raise StoreDamaged(self.ref, f"{path} holds frontmatter for {key[:12]} larger or deeper than "
                                                 f"a note may have ({MAX_VALUES:,} values)")
        if kind == "vectors":
            from vivary_git.memory.local.vectorvalue import value_problem

            for key, value in out.items():
                problem = value_problem(value)
                if problem is not None:
                    raise StoreDamaged(self.ref, f"{path} holds a vector for {key[:12]} that {problem}")
        self._chunks[path] = out
        return out

    def raw_keys(self, kind: str, prefix: str) -> set[str]:
        """The keys of one chunk without decoding (or verifying) the values: for writers deciding
        what is new. A damaged chunk just looks empty here; readers still verify it."""
        path = f"{kind}/{prefix}.msgpack"
        if path in self._chunks:
            return set(self._chunks[path])
        if path not in self.manifest.chunks:
            return set()
        data = self._blob(path, fmt.MAX_CHUNK_BYTES)
        try:
            return {k for k, _ in _RAW_CHUNK.decode(data)} if data is not None else set()
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            return set()

    def get(self, kind: str, keys: Iterable[str]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        chunks: dict[str, dict[str, Any]] = {}  # by prefix: `chunk` once per chunk, not once per key
        for key in keys:
            prefix = key[:2]
            entries = chunks.get(prefix)
            if entries is None:
                entries = chunks[prefix] = self.chunk(kind, prefix)
            value = entries.get(key)
            if value is not None:
                out[key] = value
        return out

    def missing(self, kind: str, keys: Iterable[str]) -> list[str]:
        by_prefix: dict[str, list[str]] = {}
        for key in keys:
            by_prefix.setdefault(key[:2], []).append(key)
        out: list[str] = []
        for prefix, wanted in by_prefix.items():
            have = self.raw_keys(kind, prefix)
            out.extend(k for k in wanted if k not in have)
        return out

    def state(self, provider: str, key: str, name: str) -> bytes | None:
        path = _state_path(provider, key, name)
        want = self.manifest.states.get(path)
        if want is None:
            return None
        return self._verified(path, want.sha256, want.size, MAX_STATE_BYTES)

    def _blob(self, path: str, limit: int) -> bytes | None:
        """`_blob_at(…, self.tree, path, limit)`; a chunk (`kind/name`) is looked up in its kind's folder,
        which is found once, instead of walking down from the root for each of hundreds of chunks."""
        kind, _, name = path.partition("/")
        if not name or "/" in name:
            return _blob_at(self.repo, self.ref, self.tree, path, limit)
        if kind not in self._folders:
            try:
                found = self.tree[kind]
            except KeyError:
                found = None
            self._folders[kind] = found if found is not None and found.type_str == "tree" else None
        folder = self._folders[kind]
        if folder is None:
            return _blob_at(self.repo, self.ref, self.tree, path, limit)
        return _blob_at(self.repo, self.ref, folder, name, limit, shown=path)

    def _verified(self, path: str, sha256: str, size: int, limit: int) -> bytes:
        data = self._blob(path, limit)
        if data is None:
            raise StoreDamaged(self.ref, f"{path} is listed in the manifest but missing")
        if len(data) != size:
            raise StoreDamaged(self.ref, f"{path} is {len(data)} bytes, the manifest says {size} (truncated?)")
        if _sha256(data) != sha256:
            raise StoreDamaged(self.ref, f"{path} does not match its sha256 in the manifest (modified?)")
        return data

    def verify(self) -> list[str]:
        """Read and check everything; the problems found (empty when sound), in the order of the chunks'
        paths. With a second core to use and enough entries to be worth a process (`VERIFY_FORK_AT`), a
        forked child checks every other chunk while this process checks the rest (`parallel.Forked`):
        the same checks, and the same problems in the same order. When no child can run or it fails,
        this process checks its share too."""
        from vivary_git.parallel import Forked

        paths = sorted(self.manifest.chunks)
        theirs = paths[1::2]
        entries = sum(c.count for c in self.manifest.chunks.values())
        child = Forked(lambda: _PROBLEMS_ENCODE(self._reopened()._chunk_problems(theirs)),
                       fork=entries >= VERIFY_FORK_AT and len(paths) > 1)
        found: list[str | None]
        try:
            if not child.forked:
                found = self._chunk_problems(paths)
            else:
                mine = self._chunk_problems(paths[0::2])
                got = child.result()
                told = _decoded_problems(got) if got is not None else None
                if told is None or len(told) != len(theirs):
                    told = self._chunk_problems(theirs)
                found = [None] * len(paths)
                found[0::2], found[1::2] = mine, told
        finally:
            child.cancel()  # only when this process raised: a result taken leaves no child
        problems = [what for what in found if what is not None]
        for path, want in sorted(self.manifest.states.items()):
            try:
                self._verified(path, want.sha256, want.size, MAX_STATE_BYTES)
            except StoreDamaged as err:
                problems.append(err.what)
        listed = set(self.manifest.chunks) | set(self.manifest.states) | {"manifest.msgpack"}
        for path in _walk(self.tree):
            if path not in listed:
                problems.append(f"{path} is in the tree but not in the manifest")
        return problems


    def _chunk_problems(self, paths: Iterable[str]) -> list[str | None]:
        """Each chunk of `paths` read and checked (`chunk`): what is wrong with it, or None."""
        out: list[str | None] = []
        for path in paths:
            kind, name = path.split("/")
            try:
                self.chunk(kind, name[:2])
            except StoreDamaged as err:
                out.append(err.what)
            else:
                out.append(None)
        return out

    def _reopened(self) -> Snapshot:
        """This snapshot on a repository handle of its own: in a forked child (a libgit2 handle must not
        be shared across a fork)."""
        self.repo.repo = self.repo.reopen()
        self.tree = self.repo.repo[self.tree.id]
        self._chunks = {}
        self._folders = {}
        return self


VERIFY_FORK_AT = 1500  # entries from which `Snapshot.verify` has a child check half the chunks: fewer, it costs more
_PROBLEMS_ENCODE = msgspec.msgpack.Encoder().encode
_PROBLEMS = msgspec.msgpack.Decoder(list[str | None])


def _decoded_problems(data: bytes) -> list[str | None] | None:
    try:
        return _PROBLEMS.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def written_by(repo: Repo, ref: str = CACHE_REF, *, commit: str | None = None) -> Written | None:
    """Which vivary-git wrote the cache at `ref` (store and parse format, writer); None when there is none. Raises
    `StoreDamaged` as `Snapshot.load` does for a ref or manifest no version could have written."""
    found = _manifest_at(repo, ref, commit)
    return found[3] if found is not None else None


def _manifest_at(repo: Repo, ref: str, commit: str | None) -> tuple[str, Any, bytes, Written] | None:
    """The commit, its tree, the manifest's bytes and who wrote them, for the cache at `ref`; None when there is
    none. Who wrote it is read first and leniently: another version's manifest may hold fields this one does not
    know, and that is a cache this one does not read, not damage."""
    pygit2 = repo.pygit2
    if commit is None:
        commit = ref_tip(repo, ref)  # StoreDamaged when the ref itself does not parse
        if commit is None:
            return None
    try:
        obj = repo.repo[commit]
    except (KeyError, ValueError, pygit2.GitError):
        raise StoreDamaged(ref, f"commit {commit[:12]} is not in this repository (fetched shallowly or "
                           "partially, or removed)") from None
    # A commit exactly: never peeled. A tree (or a tag of a commit) would be read as a cache here, and a
    # writer would then make it the parent of its commit, which Git refuses (a traceback in every run).
    kind = getattr(obj, "type_str", "") or "object"
    if kind != "commit":
        what = "an annotated tag" if kind == "tag" else f"a {kind}"
        raise StoreDamaged(ref, f"it names {what} ({commit[:12]}), not a commit: a cache is a commit whose "
                           "tree holds the manifest and the chunks, and this ref was set to something else")
    try:
        tree = obj.tree
    except (ValueError, pygit2.GitError):
        raise StoreDamaged(ref, f"the tree of commit {commit[:12]} is not in this repository (fetched shallowly "
                           "or partially, or removed)") from None
    data = _blob_at(repo, ref, tree, "manifest.msgpack", MAX_MANIFEST_BYTES)
    if data is None:
        raise StoreDamaged(ref, "manifest.msgpack is missing")
    return commit, tree, data, _decode_manifest(ref, _WRITTEN_DECODER, data)


def _decode_manifest(ref: str, decoder: msgspec.msgpack.Decoder[T], data: bytes) -> T:
    """`data` as the manifest `decoder` reads (all of it, or who wrote it); what does not decode is damage."""
    try:
        return decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as err:
        raise StoreDamaged(ref, f"manifest.msgpack is not a valid manifest ({err})") from None
    except RecursionError:
        raise StoreDamaged(ref, "manifest.msgpack is nested too deeply to be a manifest") from None


def _blob_at(repo: Repo, ref: str, tree: Any, path: str, limit: int, *, shown: str | None = None) -> bytes | None:
    """The blob at `path` in `tree` (None when there is none); `shown`: the path messages name, if not `path`."""
    pygit2 = repo.pygit2
    try:
        entry = tree[path]
    except KeyError:
        return None
    path = shown or path
    if entry.filemode not in (_BLOB_MODE, 0o100755) or entry.type_str != "blob":
        raise StoreDamaged(ref, f"{path} is not a regular file")
    try:
        # Header first: a huge object is refused before it is inflated into memory.
        _, size = repo.repo.odb.read_header(entry.id)
        if size > limit:
            raise StoreDamaged(ref, f"{path} is {size} bytes, over the {limit}-byte limit")
        data: bytes = repo.repo.odb.read(entry.id)[1]
    except (KeyError, pygit2.GitError) as err:
        raise StoreDamaged(ref, f"{path} cannot be read ({err}); fetched shallowly or partially?") from None
    return data


def _walk(tree: Any, prefix: str = "") -> Iterable[str]:
    for entry in tree:
        path = prefix + entry.name
        if entry.type_str == "tree":
            yield from _walk(entry, path + "/")
        else:
            yield path


def _tip(repo: Repo, ref: str) -> str | None:
    """What `ref` names; None when there is no such ref, or it does not parse (`ref_tip` tells the two apart)."""
    try:
        return ref_tip(repo, ref)
    except StoreDamaged:
        return None


def ref_tip(repo: Repo, ref: str) -> str | None:
    """What `ref` names; None when there is no such ref. Raises `StoreDamaged` when it exists but does not parse (a
    loose ref file holding no object id, a symbolic ref that loops): Git ignores such a ref when reading and refuses
    to update or delete it (`reference broken`), so it is damage to say, never "no cache" (`cache drop` removes it)."""
    pygit2 = repo.pygit2
    try:
        return str(repo.repo.references[ref].resolve().target)
    except (KeyError, pygit2.InvalidSpecError):
        return None
    except pygit2.GitError as err:
        said = str(err).replace(f"{ref}: ", "", 1) or "it does not parse"
        raise StoreDamaged(ref, f"the ref itself is unreadable ({said}): it names no object, and Git refuses to "
                           "update it") from None
