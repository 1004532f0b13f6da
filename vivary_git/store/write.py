"""Derived data in Git: the `refs/vivary/cache` commit chain, shared by `git push` and `git fetch`.

Layout of every cache commit's tree (docs/cache.md has the long version):

    manifest.msgpack                 what is here and how to check it (`Manifest`)
    parse/00.msgpack … ff.msgpack    parsed notes (bodies left out) by blob id, by the id's first two hex digits
    facts/00.msgpack … ff.msgpack    per-document facts by fact key (sha1 of blob, rules digest, root, path)
    vectors/00.msgpack … ff.msgpack  int8 note embeddings by vector key (memory/local/vectors.py: model, text)
    state/PROVIDER/KEY/NAME          memory-provider state, written through `put_state`

Entries are grouped into 256 content-addressed chunks per kind instead of one Git object per note:
ten thousand loose objects are slow to write, list and transfer, while an edit of ten notes rewrites
about twenty chunks, which `git push` sends as deltas against their previous versions. Each commit's
parent is the previous cache commit; past `CHAIN_LIMIT` commits a new root commit (same content, no
parent) starts the chain again so history does not grow without bound.

A cache may come from someone else's clone, so reading it is reading untrusted input: the manifest
and every chunk are size-bounded, each chunk's sha256 and size must match the manifest, every key
must be a hex id of the chunk it is in, and decoding is msgspec's typed msgpack (never pickle). Any
mismatch disables the ref cache for the run with one line on stderr; the caller recomputes.

Writes are objects first, ref last, and the ref moves by compare-and-swap (`git update-ref REF NEW
OLD`): a killed writer leaves the old cache, and a writer that loses a race re-applies its entries
on the winner's commit (bounded retries). Deciding *what* may be written (the privacy boundary, only
entries computed here) is record.py's job; this module stores what it is given. Deciding *who may be
believed* is `RefCache`'s: reads follow `vivary.cacheTrust` (docs/cache.md, "Trust"), gates read none.
"""

from __future__ import annotations

import contextlib
import hashlib
import operator
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git import escape
from vivary_git.config import FORMAT_VERSION
from vivary_git.models import Ignore, Link, Note, ParseProblem
from vivary_git.refnames import CACHE_REF as CACHE_REF
from vivary_git.refnames import NOTES_REF as NOTES_REF
from vivary_git.refnames import STAGING_PREFIX as STAGING_PREFIX

if TYPE_CHECKING:
    from vivary_git.git import Repo
    from vivary_git.graph import Facts

STORE_FORMAT = 3  # bump when the layout below changes; a cache of another format is left unread (3: vectors)
CHAIN_LIMIT = 64  # cache commits per chain before a new root commit restarts it
MAX_MANIFEST_BYTES = 8 << 20
MAX_CHUNK_BYTES = 32 << 20  # per chunk; a 100k-note vault's largest is ~1 MiB
MAX_STATE_BYTES = 256 << 20  # per provider state file (an HNSW index of 100k × 384 floats is ~160 MiB)
MAX_TREES = 256  # tree summaries kept in a manifest (oldest dropped)
KINDS = ("parse", "facts", "vectors")
ZERO = "0" * 40

_HEX40 = re.compile(r"[0-9a-f]{40}\Z")
_HEX = re.compile(r"[0-9a-f]*")
_CHUNK_PATH = re.compile(r"(parse|facts|vectors)/[0-9a-f]{2}\.msgpack\Z")
_TREE_KEY = re.compile(r"[0-9a-f]{40}-[0-9a-f]{16}\Z")
_PROVIDER = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\Z")
_STATE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}\Z")
_BLOB_MODE = 0o100644
_TREE_MODE = 0o040000

class ChunkRef(msgspec.Struct, frozen=True, array_like=True):
    sha256: str
    size: int
    count: int


class StateRef(msgspec.Struct, frozen=True, array_like=True):
    sha256: str
    size: int
    written: int  # unix time


class TreeSummary(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The verdict for one source tree: counts only, so nothing a private note says can be in it."""

    tree: str
    checked: int
    errors: int
    warnings: int
    nodes: int
    edges: int
    broken: int
    private: int  # documents whose entries were kept out of the cache
    written: int


class SharedNote(msgspec.Struct, frozen=True, array_like=True):
    """A `Note` as the cache shares it: without its body. A body is the tail of its blob, which every
    clone has, so sharing it would only make the cache ~4x larger to write, push and fetch."""

    fields: dict[str, Any]
    key_lines: dict[str, int]
    title: str | None
    body_chars: int  # length of the body: the last `body_chars` characters of the blob's text
    links: tuple[Link, ...] = ()
    problem: ParseProblem | None = None
    has_frontmatter: bool = False
    anchors: tuple[str, ...] = ()
    ignores: tuple[Ignore, ...] = ()


def share(note: Note) -> SharedNote:
    return SharedNote(note.fields, note.key_lines, note.title, len(note.body), note.links, note.problem,
                      note.has_frontmatter, note.anchors, note.ignores)


_ENCODE = msgspec.msgpack.Encoder().encode


def encode_shared(note: Note) -> bytes:
    """`share(note)` encoded, without building the struct: an array_like struct is a msgpack array
    of its fields in order, which is what this tuple encodes to (a test holds the bytes equal)."""
    return _ENCODE((note.fields, note.key_lines, note.title, len(note.body), note.links, note.problem,
                    note.has_frontmatter, note.anchors, note.ignores))


_NOTE_PARTS = msgspec.msgpack.Decoder(list[msgspec.Raw])
_BODY_TEXT = msgspec.msgpack.Decoder(str)
_BODY_AT = Note.__struct_fields__.index("body")


def encode_shared_encoded(encoded: bytes | msgspec.Raw) -> bytes:
    """`encode_shared` of a note still in msgpack (a `Note`, as a parse worker hands it back), without
    rebuilding it: its fields are copied as they are and its body replaced by the body's length (a
    test holds the bytes equal)."""
    parts = _NOTE_PARTS.decode(encoded)
    if len(parts) != len(Note.__struct_fields__):
        return encode_shared(msgspec.msgpack.decode(encoded, type=Note))
    parts[_BODY_AT] = msgspec.Raw(_ENCODE(len(_BODY_TEXT.decode(parts[_BODY_AT]))))
    return _ENCODE(parts)


def unshare(shared: SharedNote, read: Callable[[], bytes]) -> Note | None:
    """The note again, its body cut from the blob `read()` returns; None when the blob cannot hold
    that body (then the caller parses the blob instead). A bounded reader's refusal of a huge blob
    (`git.BlobTooLarge`) is None too: a shared parse never gets a note past the size bound."""
    from vivary_git.git import BlobTooLarge

    body = ""
    if shared.body_chars:
        try:
            data = read()
        except BlobTooLarge:
            return None
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return None
        if not 0 < shared.body_chars <= len(text):
            return None
        body = text[len(text) - shared.body_chars:]
    return Note(shared.fields, shared.key_lines, shared.title, body, shared.links, shared.problem,
                shared.has_frontmatter, shared.anchors, shared.ignores)


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    store: int
    format: int  # vivary-git's parse/graph FORMAT_VERSION the entries were computed with
    chain: int  # commits in this chain, this one included
    writer: str
    written: int
    chunks: dict[str, ChunkRef] = {}
    trees: dict[str, TreeSummary] = {}
    states: dict[str, StateRef] = {}


class StoreDamaged(Exception):
    """The cache at `ref` cannot be trusted: `str(err)` says which part and why."""

    def __init__(self, ref: str, what: str) -> None:
        super().__init__(f"{ref}: {what}")
        self.ref = ref
        self.what = what


class StoreBusy(Exception):
    """Other writers kept moving the ref; this run's entries were not recorded."""


def damaged_message(err: StoreDamaged) -> str:
    """The one line a user sees: which ref, what is wrong, what to run."""
    return (f"vivary: ignored the cache in {err.ref} ({err.what}); results are recomputed. "
            f"`git vivary cache verify` shows the damage, `git vivary cache drop` removes it")


def tree_key(tree_id: str, config_digest: str) -> str:
    """A tree summary's key: the source tree id plus the rules and format its graph depends on. The
    workspace folder's name is left out (it changes at most a root-level index note's id), so clones
    in differently named folders share summaries."""
    raw = f"{FORMAT_VERSION}\0{config_digest}".encode("utf-8", "surrogateescape")
    return f"{tree_id}-{hashlib.sha256(raw).hexdigest()[:16]}"


def state_key(tree_id: str, config_digest: str, model: str) -> str:
    """The key memory providers file their state under: (source tree, config, format, model)."""
    raw = f"{FORMAT_VERSION}\0{config_digest}\0{model}".encode("utf-8", "surrogateescape")
    return f"{tree_id}-{hashlib.sha256(raw).hexdigest()[:16]}"


def chunk_path(kind: str, key: str) -> str:
    return f"{kind}/{key[:2]}.msgpack"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# --- reading -------------------------------------------------------------------------------------------

_MANIFEST_DECODER = msgspec.msgpack.Decoder(Manifest)
_RAW_CHUNK = msgspec.msgpack.Decoder(list[tuple[str, msgspec.Raw]])


def _chunk_decoder(kind: str) -> msgspec.msgpack.Decoder[Any]:
    if kind == "parse":
        return msgspec.msgpack.Decoder(list[tuple[str, SharedNote]])
    if kind == "vectors":
        return msgspec.msgpack.Decoder(list[tuple[str, bytes]])
    from vivary_git.graph import Facts

    return msgspec.msgpack.Decoder(list[tuple[str, Facts]])


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
        """The cache at `ref` (None when there is none, or it has another format)."""
        pygit2 = repo.pygit2
        if commit is None:
            try:
                commit = str(repo.repo.references[ref].resolve().target)
            except (KeyError, pygit2.InvalidSpecError, pygit2.GitError):
                return None
        try:
            obj = repo.repo[commit]
            tree = obj.peel(pygit2.Tree)
        except (KeyError, ValueError, pygit2.GitError) as err:
            raise StoreDamaged(ref, f"commit {commit[:12]} cannot be read ({err})") from None
        data = _blob_at(repo, ref, tree, "manifest.msgpack", MAX_MANIFEST_BYTES)
        if data is None:
            raise StoreDamaged(ref, "manifest.msgpack is missing")
        try:
            manifest = _MANIFEST_DECODER.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            raise StoreDamaged(ref, f"manifest.msgpack is not a valid manifest ({err})") from None
        except RecursionError:
            raise StoreDamaged(ref, "manifest.msgpack is nested too deeply to be a manifest") from None
        if manifest.store != STORE_FORMAT or manifest.format != FORMAT_VERSION:
            return None  # another vivary-git wrote it; not damage, just not ours to read
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
        data = self._verified(path, want.sha256, want.size, MAX_CHUNK_BYTES)
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
        data = self._blob(path, MAX_CHUNK_BYTES)
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
        self.repo.repo = self.repo.pygit2.Repository(str(self.repo.git_dir))
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


def _check_manifest(ref: str, m: Manifest) -> None:
    if m.chain < 1:
        raise StoreDamaged(ref, f"manifest.msgpack has a chain length of {m.chain}")
    for path, c in m.chunks.items():
        if not _CHUNK_PATH.match(path) or c.size < 0 or c.count < 0:
            raise StoreDamaged(ref, f"manifest.msgpack lists an invalid chunk {path[:80]!r}")
        if c.size > MAX_CHUNK_BYTES:
            raise StoreDamaged(ref, f"{path} is {c.size} bytes, over the {MAX_CHUNK_BYTES}-byte limit")
    for path, s in m.states.items():
        parts = path.split("/")
        if (len(parts) != 4 or parts[0] != "state" or not _PROVIDER.match(parts[1])
                or not all(_STATE_PART.match(p) for p in parts[2:]) or not 0 <= s.size <= MAX_STATE_BYTES):
            raise StoreDamaged(ref, f"manifest.msgpack lists an invalid state file {path[:80]!r}")
    for key, t in m.trees.items():
        if not _TREE_KEY.match(key) or not key.startswith(t.tree):
            raise StoreDamaged(ref, f"manifest.msgpack lists an invalid tree key {key[:80]!r}")


def _keys_belong(keys: Collection[str], prefix: str) -> bool:
    """Whether every key matches `_HEX40` and starts with `prefix`: the check of each, in a few passes over
    all of them (a chunk holds tens of keys, a cache tens of thousands)."""
    return (set(map(len, keys)) <= {40} and _HEX.fullmatch("".join(keys)) is not None
            and all(map(operator.methodcaller("startswith", prefix), keys)))


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


def _state_path(provider: str, key: str, name: str) -> str:
    if not _PROVIDER.match(provider):
        raise ValueError(f"provider name {provider!r}: use lowercase letters, digits and '-'")
    for part in (key, name):
        if not _STATE_PART.match(part):
            raise ValueError(f"state key or name {part!r}: use letters, digits, '.', '_' and '-' (no '/')")
    return f"state/{provider}/{key}/{name}"


# --- writing -------------------------------------------------------------------------------------------


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


def encode_entries(values: Mapping[str, Facts]) -> dict[str, bytes]:
    enc = msgspec.msgpack.Encoder()
    out: dict[str, bytes] = {}
    for k, v in values.items():
        try:
            out[k] = enc.encode(v)
        except UnicodeEncodeError:  # a file name that is not UTF-8: kept local (.git/vivary), never shared
            continue
    return out


class WriteResult(msgspec.Struct, frozen=True):
    commit: str
    parent: str | None
    chunks: int  # chunk files rewritten
    attempts: int


def write(repo: Repo, changes: Changes, *, message: str = "vivary cache", ref: str = CACHE_REF,
          retries: int = 8, sign: bool = False) -> WriteResult | None:
    """Add `changes` to the cache at `ref` in one commit; None when everything was there already.
    Raises `StoreDamaged` (the current cache is unreadable: nothing is written on top of it) or
    `StoreBusy` (the ref kept moving under us for `retries` attempts)."""
    for attempt in range(1, retries + 1):
        tip = _tip(repo, ref)
        made = _commit_on(repo, ref, tip, changes, message, sign=sign)
        if made is None:
            return None
        commit, parent, chunks = made
        _test_pause()
        if update_ref(repo, ref, commit, tip):
            return WriteResult(commit, parent, chunks, attempt)
        # Lost the race: the winner's commit is the new base; our entries are re-applied on it.
        import random

        time.sleep(random.uniform(0.01, 0.05) * attempt)
    raise StoreBusy(f"{ref} moved {retries} times while this run was recording; its entries were not recorded")


def _test_pause() -> None:
    # Lets the tests kill a writer between "objects written" and "ref moved"; unset, it costs a lookup.
    pause = os.environ.get("VIVARY_TEST_STORE_PAUSE")
    if pause:
        time.sleep(float(pause))


def _tip(repo: Repo, ref: str) -> str | None:
    try:
        return str(repo.repo.references[ref].resolve().target)
    except (KeyError, repo.pygit2.GitError, repo.pygit2.InvalidSpecError):
        return None


def update_ref(repo: Repo, ref: str, new: str, old: str | None) -> bool:
    """Compare-and-swap: move `ref` to `new` only if it still points at `old` (None: does not exist)."""
    proc = repo.git(["update-ref", "-m", "vivary cache", ref, new, old or ZERO], check=False)
    return proc.returncode == 0


def delete_ref(repo: Repo, ref: str, old: str) -> bool:
    return repo.git(["update-ref", "-d", ref, old], check=False).returncode == 0


def _writer() -> str:
    from vivary_git.version import __version__

    who = os.environ.get("VIVARY_CACHE_WRITER") or ("ci" if os.environ.get("CI") else "local")
    return f"{who} (vivary-git {__version__})"


def _commit_on(repo: Repo, ref: str, tip: str | None, changes: Changes, message: str, *, sign: bool = False,
               ) -> tuple[str, str | None, int] | None:
    snap: Snapshot | None = None
    if tip is not None and sign and not verified(repo, tip):
        # A signature vouches for every entry of the commit's tree: a signing writer never builds on
        # entries it cannot vouch for, so it starts a new chain holding only what it computed.
        tip = None
    if tip is not None:
        snap = Snapshot.load(repo, ref, commit=tip)  # StoreDamaged propagates: never build on damage
    old = snap.manifest if snap is not None else None
    chunks = dict(old.chunks) if old else {}
    trees = dict(old.trees) if old else {}
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
            if len(data) > MAX_CHUNK_BYTES:
                continue  # readers would refuse it; the entries are recomputed instead
            files[path] = str(repo.repo.create_blob(data))
            chunks[path] = ChunkRef(_sha256(data), len(data), len(merged))
    for path, data in changes.states.items():
        want = states.get(path)
        if want is not None and want.sha256 == _sha256(data):
            continue
        files[path] = str(repo.repo.create_blob(data))
        states[path] = StateRef(_sha256(data), len(data), now)
    new_trees = {k: v for k, v in changes.trees.items() if k not in trees}
    if not files and not new_trees:
        return None
    trees.update(new_trees)
    if len(trees) > MAX_TREES:
        trees = dict(sorted(trees.items(), key=lambda kv: kv[1].written)[-MAX_TREES:])
    chain = old.chain + 1 if old is not None and old.chain < CHAIN_LIMIT else 1
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
    data = _blob_at(snap.repo, snap.ref, snap.tree, path, MAX_CHUNK_BYTES)
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
    for _ in range(CHAIN_LIMIT + 1):
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
    if base is not None and (base.manifest.chain >= CHAIN_LIMIT or (sign and not verified(repo, base.commit))):
        base = None
    manifest = Manifest(store=STORE_FORMAT, format=FORMAT_VERSION, chain=base.manifest.chain + 1 if base else 1,
                        writer=_writer(), written=int(time.time()), chunks=m.chunks, trees=m.trees, states={})
    builder = repo.repo.TreeBuilder(snap.tree)
    if "state" in snap.tree:
        builder.remove("state")
    builder.insert("manifest.msgpack", repo.repo.create_blob(msgspec.msgpack.encode(manifest)), _BLOB_MODE)
    return _create_commit(repo, str(builder.write()), [base.commit] if base else [],
                          "vivary cache: published without provider state", sign=sign)


# --- the API for memory providers ----------------------------------------------------------------------


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


def get_state(repo: Repo, provider: str, key: str, name: str) -> bytes | None:
    """A provider's state file, verified; None when absent or when the cache is unreadable (the
    reason is printed once on stderr)."""
    ref = RefCache(repo)
    snap = ref.snapshot()  # only a cache this clone trusts (`vivary.cacheTrust`)
    try:
        return snap.state(provider, key, name) if snap is not None else None
    except StoreDamaged as err:
        print(escape.text(damaged_message(err)), file=sys.stderr)
        return None


def list_states(repo: Repo, provider: str) -> dict[str, list[str]]:
    """KEY -> names of the state files a provider has in the cache commit this clone may read
    (`vivary.cacheTrust`, as `get_state`: none by default); {} when none or when it is damaged (the
    reason is printed once on stderr)."""
    snap = RefCache(repo).snapshot()
    out: dict[str, list[str]] = {}
    for path in sorted(snap.manifest.states if snap is not None else ()):
        _, prov, key, name = path.split("/")
        if prov == provider:
            out.setdefault(key, []).append(name)
    return out


# --- what a workspace uses -----------------------------------------------------------------------------


class RefCache:
    """The shared cache for one run, as far as the trust setting lets it be used (docs/cache.md,
    "Trust").

    *Reads* (`get`): none with `read=False` (a gate) or `vivary.cacheTrust = none` (the default); the
    tip with `any`; with `signed`, the newest commit of the chain whose signature `git verify-commit`
    accepts. *Writes* (`write`, and `missing`/`has_tree`, which say what is new) build on the tip; a
    signing writer (`vivary.cacheSign`) only on a tip that verifies, else it starts a new chain.

    The first damage found prints one line and turns the ref cache off for the rest of the run;
    callers then recompute."""

    def __init__(self, repo: Repo, ref: str = CACHE_REF, *, read: bool = True) -> None:
        self.repo = repo
        self.ref = ref
        self.trust = trust(repo) if read else "none"
        self.sign = signing(repo)
        self._snap: Snapshot | None = None
        self._loaded = False
        self._base: Snapshot | None = None
        self._base_loaded = False
        self.damaged = False

    def reads(self) -> bool:
        """Whether this run may take entries from the shared cache at all."""
        return self.trust != "none" and not self.damaged

    def snapshot(self) -> Snapshot | None:
        """The cache commit this run may read entries from (None: none it trusts)."""
        if not self._loaded:
            self._loaded = True
            self._snap = None
            try:
                if self.trust == "any":
                    self._snap = Snapshot.load(self.repo, self.ref)
                elif self.trust == "signed":
                    commit = newest_verified(self.repo, self.ref)
                    self._snap = Snapshot.load(self.repo, self.ref, commit=commit) if commit else None
            except StoreDamaged as err:
                self._fail(err)
        return self._snap

    def base(self) -> Snapshot | None:
        """The cache commit the next write builds on (None: a new chain)."""
        if not self._base_loaded:
            self._base_loaded = True
            self._base = None
            try:
                tip = _tip(self.repo, self.ref)
                if tip is not None and (not self.sign or verified(self.repo, tip)):
                    self._base = Snapshot.load(self.repo, self.ref, commit=tip)
            except StoreDamaged as err:
                self._fail(err)
        return self._base

    def _fail(self, err: StoreDamaged) -> None:
        if not self.damaged:
            print(escape.text(damaged_message(err)), file=sys.stderr)
        self.damaged = True
        self._snap = self._base = None

    def get(self, kind: str, keys: Iterable[str]) -> dict[str, Any]:
        snap = self.snapshot()
        if snap is None:
            return {}
        try:
            return snap.get(kind, keys)
        except StoreDamaged as err:
            self._fail(err)
            return {}

    def has_tree(self, key: str) -> bool:
        base = self.base()
        return base is not None and key in base.manifest.trees

    def missing(self, kind: str, keys: Iterable[str]) -> list[str]:
        base = self.base()
        return list(keys) if base is None else base.missing(kind, keys)

    def write(self, changes: Changes, message: str) -> WriteResult | None:
        if self.damaged or changes.empty():
            return None
        try:
            result = write(self.repo, changes, message=message, ref=self.ref, sign=self.sign)
        except StoreDamaged as err:
            self._fail(err)
            return None
        except StoreBusy as err:
            print(f"vivary: {escape.text(str(err))}; results are unaffected", file=sys.stderr)
            return None
        except SigningError as err:
            print(f"vivary: {err}; this tree was not recorded", file=sys.stderr)
            return None
        self._loaded = self._base_loaded = False  # the next read sees our commit
        return result


# --- trust: what may read the shared cache, and signed cache commits -------------------------------------

TRUST_KEY = "vivary.cacheTrust"
SIGN_KEY = "vivary.cacheSign"
TRUST_LEVELS = ("none", "signed", "any")
_verified: dict[tuple[str, str], bool] = {}


class SigningError(Exception):
    """`vivary.cacheSign` is on but Git could not sign the cache commit."""


def trust(repo: Repo) -> str:
    """`git config vivary.cacheTrust`: `none` (the default: no command reads the shared cache),
    `signed` (commands that are not gates read the newest cache commit signed by a key Git's
    signature verification accepts) or `any` (they read whatever the ref holds). An unknown value is
    `none`, said once on stderr."""
    try:
        value = str(repo.repo.config[TRUST_KEY]).strip().lower()
    except (KeyError, ValueError, repo.pygit2.GitError):
        return "none"
    if value not in TRUST_LEVELS:
        print(f"vivary: {TRUST_KEY} = {value[:40]!r} is not one of {', '.join(TRUST_LEVELS)}; the shared cache is "
              "not read (`git config vivary.cacheTrust signed|any` to read it)", file=sys.stderr)
        return "none"
    return value


def signing(repo: Repo) -> bool:
    """`git config vivary.cacheSign true`: cache commits are signed by Git (`git commit-tree -S`, with
    `gpg.format`, `user.signingKey`), so clones with `vivary.cacheTrust = signed` can trust them."""
    return _config_bool(repo, SIGN_KEY, default=False)


def verified(repo: Repo, commit: str) -> bool:
    """Whether `git verify-commit` accepts `commit`'s signature (a good signature by a key Git trusts:
    for SSH keys, one listed in `gpg.ssh.allowedSignersFile`). Unsigned: False, without running Git."""
    key = (str(repo.git_dir), commit)
    got = _verified.get(key)
    if got is None:
        pygit2 = repo.pygit2
        try:
            signature, _ = repo.repo[commit].peel(pygit2.Commit).gpg_signature
        except (KeyError, ValueError, pygit2.GitError):
            signature = None
        got = False
        if signature is not None:
            from vivary_git.errors import GitError

            try:
                got = repo.git(["verify-commit", commit], check=False).returncode == 0
            except GitError:
                got = False
        _verified[key] = got
    return got


def newest_verified(repo: Repo, ref: str = CACHE_REF) -> str | None:
    """The newest commit on `ref`'s first-parent chain whose signature verifies (at most `CHAIN_LIMIT`
    back: a chain is never longer), or None."""
    pygit2 = repo.pygit2
    commit = _tip(repo, ref)
    for _ in range(CHAIN_LIMIT + 1):
        if commit is None:
            return None
        if verified(repo, commit):
            return commit
        try:
            parents = repo.repo[commit].peel(pygit2.Commit).parent_ids
        except (KeyError, ValueError, pygit2.GitError):
            return None
        commit = str(parents[0]) if parents else None
    return None


def _signed_commit(repo: Repo, tree: str, parents: list[str], message: str) -> str:
    from vivary_git import git
    from vivary_git.errors import GitError

    env = {**os.environ, "GIT_AUTHOR_NAME": "vivary-git", "GIT_AUTHOR_EMAIL": "vivary-git@localhost",
           "GIT_COMMITTER_NAME": "vivary-git", "GIT_COMMITTER_EMAIL": "vivary-git@localhost"}
    try:
        return git.commit_tree(repo, tree, parents, message, sign=True, env=env)
    except git.SigningFailed as err:
        raise SigningError(f"{SIGN_KEY} is on but Git could not sign the cache commit: {err.why} "
                           "(check user.signingKey and gpg.format)") from None
    except GitError as err:
        raise SigningError(f"cannot sign the cache commit ({err})") from None


def enabled(repo: Repo) -> bool:
    """`git config vivary.cache false` turns the ref cache off (reads and writes); default on."""
    return _config_bool(repo, "vivary.cache", default=True)


def notes_enabled(repo: Repo) -> bool:
    """`git config vivary.notes true` (`git vivary cache notes on`) writes verdict notes; default off."""
    return _config_bool(repo, "vivary.notes", default=False)


def _config_bool(repo: Repo, key: str, *, default: bool) -> bool:
    try:
        return bool(repo.repo.config.get_bool(key))
    except (KeyError, ValueError, repo.pygit2.GitError):
        return default


# --- verdict notes ---------------------------------------------------------------------------------------


class Verdict(msgspec.Struct, frozen=True):
    """What `refs/notes/vivary` says about a commit: counts only."""

    tree: str
    checked: int
    errors: int
    warnings: int
    clean: int
    tool: str = "vivary-git"
    format: int = FORMAT_VERSION


def write_note(repo: Repo, commit: str, verdict: Verdict, retries: int = 8) -> bool:
    """Attach (or replace) the verdict note on `commit`. libgit2 moves the notes ref only if it still
    points at the commit it built on, so concurrent writers retry instead of losing a note."""
    pygit2 = repo.pygit2
    text = msgspec.json.encode(verdict).decode() + "\n"
    sig = pygit2.Signature("vivary-git", "vivary-git@localhost", int(time.time()), 0)
    for attempt in range(1, retries + 1):
        try:
            repo.repo.create_note(text, sig, sig, commit, NOTES_REF, True)
            return True
        except pygit2.GitError:
            import random

            time.sleep(random.uniform(0.01, 0.05) * attempt)
    return False


def read_note(repo: Repo, commit: str, ref: str = NOTES_REF) -> Verdict | None:
    """The verdict noted on `commit` (None when there is none or it is not one of ours)."""
    try:
        note = repo.repo.lookup_note(commit, ref)
        raw = note.message.encode() if isinstance(note.message, str) else note.message
        if len(raw) > 65536:
            return None
        return msgspec.json.decode(raw, type=Verdict)
    except (KeyError, repo.pygit2.GitError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
