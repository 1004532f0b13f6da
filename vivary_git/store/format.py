"""The shared cache's format: the layout of a cache commit's tree, its chunks and their codecs.

Layout of every cache commit's tree (docs/cache.md has the long version):

    manifest.msgpack                 what is here and how to check it (`Manifest`)
    parse/00.msgpack … ff.msgpack    parsed notes (bodies left out) by blob id, by the id's first two hex digits
    facts/00.msgpack … ff.msgpack    per-document facts by fact key (sha1 of blob, rules digest, root, path)
    vectors/00.msgpack … ff.msgpack  int8 note embeddings by vector key (memory/local/vectors.py: model, text)
    state/PROVIDER/KEY/NAME          memory-provider state, written through `write.put_state`

Entries are grouped into 256 content-addressed chunks per kind instead of one Git object per note:
ten thousand loose objects are slow to write, list and transfer, while an edit of ten notes rewrites
about twenty chunks, which `git push` sends as deltas against their previous versions. Each commit's
parent is the previous cache commit; past `CHAIN_LIMIT` commits a new root commit (same content, no
parent) starts the chain again so history does not grow without bound.

A manifest is checked before anything it lists is read (`_check_manifest`): every chunk and state path is
one this layout names, and no size is over its bound. A note is shared without its body (`SharedNote`).
"""

from __future__ import annotations

import hashlib
import operator
import re
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.config import FORMAT_VERSION
from vivary_git.models import Conflict, Ignore, Link, Note, ParseProblem

if TYPE_CHECKING:
    from vivary_git.graph import Facts


STORE_FORMAT = 3  # bump when the layout below changes; a cache of another format is left unread (3: vectors)
CHAIN_LIMIT = 64  # cache commits per chain before a new root commit restarts it
MAX_MANIFEST_BYTES = 8 << 20
MAX_CHUNK_BYTES = 32 << 20  # per chunk; a 100k-note vault's largest is ~1 MiB
# All chunks together (a 100k-note vault's are ~70 MB): a forged manifest listing 32 MiB chunks of one long string
# each (a few kB each once Git compresses them) made a reader hold gigabytes.
MAX_CHUNKS_BYTES = 1 << 30
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
    conflicts: tuple[Conflict, ...] = ()


def share(note: Note) -> SharedNote:
    return SharedNote(note.fields, note.key_lines, note.title, len(note.body), note.links, note.problem,
                      note.has_frontmatter, note.anchors, note.ignores, note.conflicts)


_ENCODE = msgspec.msgpack.Encoder().encode


def encode_shared(note: Note) -> bytes:
    """`share(note)` encoded, without building the struct: an array_like struct is a msgpack array
    of its fields in order, which is what this tuple encodes to (a test holds the bytes equal)."""
    return _ENCODE((note.fields, note.key_lines, note.title, len(note.body), note.links, note.problem,
                    note.has_frontmatter, note.anchors, note.ignores, note.conflicts))


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
                shared.has_frontmatter, shared.anchors, shared.ignores, shared.conflicts)


class Manifest(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    store: int
    format: int  # vivary-git's parse/graph FORMAT_VERSION the entries were computed with
    chain: int  # commits in this chain, this one included
    writer: str
    written: int
    chunks: dict[str, ChunkRef] = {}
    trees: dict[str, TreeSummary] = {}
    states: dict[str, StateRef] = {}


class Written(msgspec.Struct, frozen=True):
    """Who wrote a cache, read from its manifest before anything else. Every vivary-git's manifest is a msgpack map
    with `store` and `format`; the rest is that version's own (a newer one may add fields), so this decoder takes
    those two (and the writer, for messages) and ignores the others: another version's cache is not damage."""

    store: int
    format: int
    writer: str = ""
    written: int = 0

    def ours(self) -> bool:
        return self.store == STORE_FORMAT and self.format == FORMAT_VERSION

    def newer(self) -> bool:
        """Written by a later vivary-git than this one (its store layout first, then its parse format)."""
        return (self.store, self.format) > (STORE_FORMAT, FORMAT_VERSION)

    def describe(self) -> str:
        """`written by a newer vivary-git (ci (vivary-git 0.2.0), format 28, store 3; this one reads format 27,
        store 3)`, for the line that says why a cache is not read."""
        age = "a newer" if self.newer() else "an older"
        by = f"{self.writer}, " if self.writer else ""
        return (f"written by {age} vivary-git ({by}format {self.format}, store {self.store}; this one reads "
                f"format {FORMAT_VERSION}, store {STORE_FORMAT})")

    def fate(self) -> str:
        """What happens to this cache here, as every message about one says it (docs/cache.md, "When versions
        differ")."""
        if self.newer():
            return ("this one neither reads it nor records on it, and `sync push` leaves it on the remote; "
                    "upgrade vivary-git to use it (this one's local cache in .git/vivary/ still works)")
        return ("this one does not read it; the next run that records replaces it with this one's "
                "(`git vivary check --rev HEAD`), and the next `sync push` publishes that")


class StoreDamaged(Exception):
    """The cache at `ref` cannot be trusted: `str(err)` says which part and why."""

    def __init__(self, ref: str, what: str) -> None:
        super().__init__(f"{ref}: {what}")
        self.ref = ref
        self.what = what


class StoreNewer(Exception):
    """A newer vivary-git wrote the cache at the ref: this one neither reads it nor writes on top of it (writing would
    start a chain of its own format in its place, which the newer one would then replace, each discarding the
    other's entries on every run). `str(err)` is `Written.describe()`."""


class StoreBusy(Exception):
    """Other writers kept moving the ref; this run's entries were not recorded."""


def damaged_message(err: StoreDamaged) -> str:
    """The one line a user sees: which ref, what is wrong, what to run."""
    return (f"vivary: ignored the cache in {err.ref} ({err.what}); results are recomputed. "
            f"`git vivary cache verify` shows the damage, `git vivary cache drop` removes it")


def tree_key(tree_id: str, config_digest: str, prefix: str) -> str:
    """A tree summary's key: the source tree id plus the rules and format its graph depends on, and the
    workspace's folder in the repository (`prefix`, "" at the top). Two folders may hold one tree (a copied
    vault) yet need different facts (a root-level index note's id, a type named like the folder): the second
    must not take the first's summary for its own and record nothing. The name of the clone's own folder is
    left out (it changes at most a root-level index note's id), so clones in differently named folders share
    summaries. A summary keyed before the folder was in the key matches none now: never taken for any
    workspace's, it ages out of the manifest (`MAX_TREES`, gc)."""
    raw = f"{FORMAT_VERSION}\0{config_digest}\0{prefix}".encode("utf-8", "surrogateescape")
    return f"{tree_id}-{hashlib.sha256(raw).hexdigest()[:16]}"


def state_key(tree_id: str, config_digest: str, model: str) -> str:
    """The key memory providers file their state under: (source tree, config, format, model)."""
    raw = f"{FORMAT_VERSION}\0{config_digest}\0{model}".encode("utf-8", "surrogateescape")
    return f"{tree_id}-{hashlib.sha256(raw).hexdigest()[:16]}"


def chunk_path(kind: str, key: str) -> str:
    return f"{kind}/{key[:2]}.msgpack"


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_MANIFEST_DECODER = msgspec.msgpack.Decoder(Manifest)
_WRITTEN_DECODER = msgspec.msgpack.Decoder(Written)
_RAW_CHUNK = msgspec.msgpack.Decoder(list[tuple[str, msgspec.Raw]])


def _chunk_decoder(kind: str) -> msgspec.msgpack.Decoder[Any]:
    if kind == "parse":
        return msgspec.msgpack.Decoder(list[tuple[str, SharedNote]])
    if kind == "vectors":
        return msgspec.msgpack.Decoder(list[tuple[str, bytes]])
    from vivary_git.graph import Facts

    return msgspec.msgpack.Decoder(list[tuple[str, Facts]])


def _check_manifest(ref: str, m: Manifest) -> None:
    if m.chain < 1:
        raise StoreDamaged(ref, f"manifest.msgpack has a chain length of {m.chain}")
    for path, c in m.chunks.items():
        if not _CHUNK_PATH.match(path) or c.size < 0 or c.count < 0:
            raise StoreDamaged(ref, f"manifest.msgpack lists an invalid chunk {path[:80]!r}")
        if c.size > MAX_CHUNK_BYTES:
            raise StoreDamaged(ref, f"{path} is {c.size} bytes, over the {MAX_CHUNK_BYTES}-byte limit")
    total = sum(c.size for c in m.chunks.values())
    if total > MAX_CHUNKS_BYTES:
        raise StoreDamaged(ref, f"manifest.msgpack lists {total:,} bytes of chunks, over the {MAX_CHUNKS_BYTES:,}-byte "
                                "limit for a whole cache")
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


def _state_path(provider: str, key: str, name: str) -> str:
    if not _PROVIDER.match(provider):
        raise ValueError(f"provider name {provider!r}: use lowercase letters, digits and '-'")
    for part in (key, name):
        if not _STATE_PART.match(part):
            raise ValueError(f"state key or name {part!r}: use letters, digits, '.', '_' and '-' (no '/')")
    return f"state/{provider}/{key}/{name}"


def encode_entries(values: Mapping[str, Facts]) -> dict[str, bytes]:
    enc = msgspec.msgpack.Encoder()
    out: dict[str, bytes] = {}
    for k, v in values.items():
        try:
            out[k] = enc.encode(v)
        except UnicodeEncodeError:  # a file name that is not UTF-8: kept local (.git/vivary), never shared
            continue
    return out
