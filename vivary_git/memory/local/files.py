"""The local memory index's files and their formats: the names in its state folder, the manifest,
entries and vector records, the checks every value read back passes before numpy or hnswlib sees it,
and what is embedded for a packet (`embed_text`) under which digest.

Shared by the index (index.py), recall (recall.py) and recall of an assembled tree (assemble.py), so that
none imports another for its formats; `_as_file` hands hnswlib, which loads only from paths, a file of
verified bytes.
"""

from __future__ import annotations

import hashlib
import struct
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

if TYPE_CHECKING:
    from vivary_git.memory.state import StateStore

PROVIDER = "vivary-local"
STATE_FORMAT = 1
# Bump when `embed_text` changes: it is part of the vector cache key, so old vectors are not reused.
# 2: vectors are stored as their int8 round trip (memory/local/vectors.py), here as in refs/vivary/cache.
EMBED_FORMAT = 2
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
# ef at query time is max(HNSW_EF, candidates wanted): 64 already finds ≥ 0.99 of exact top-10 on SciFact.
HNSW_EF = 64
RRF_K = 10
# (lexical weight, vector weight) for reciprocal rank fusion and how deep each list is read. Tuned on
# SciFact *train* queries only (bench/bench_recall_scifact.py --tune); CognitiveOS's 0.65/0.35 was the start.
FUSION = (0.55, 0.45)
FUSION_DEPTH = 200
# What hybrid recall's signals add to a fused score (memory/local/signals.py), as shares of the best fused
# score: a field value the query names, a date in a month or year it names; and of a neighbour's score, to
# the note next to it in a sequence. Picked on LoCoMo (two conversations, checked on the third) and
# checked on SciFact (docs/memory.md).
FIELD_NUDGE = 1.0
DATE_NUDGE = 0.5
NEXT_NUDGE = 0.5
# A scope (filters, hidden notes) of at most this many notes is ranked by exact cosine over its own vectors;
# a larger one by the ANN graph, asked deeper until enough of its notes come back.
EXACT_SCAN = 4096

MANIFEST = "manifest.json"
VECTORS = "vectors.f32"
VECTOR_META = "vectors.msgpack"
HNSW_FILE = "hnsw.bin"
ENTRIES = "entries.msgpack"
LEXICAL = "lexical.bin"
TERMS = "terms.msgpack"
TREES = "trees"


# --- records --------------------------------------------------------------------------------------------


class FileRef(msgspec.Struct, frozen=True):
    sha256: str
    size: int


class HnswParams(msgspec.Struct, frozen=True):
    generation: str  # the vector cache generation its labels (= cache rows) refer to
    space: str
    m: int
    ef_construction: int
    ef: int
    elements: int  # labels ever added, deleted ones included
    deleted: int


class Manifest(msgspec.Struct, frozen=True):
    """Binds the state to one snapshot. The contract's keys first; `files` lists every other state file."""

    provider: str
    dataset: str
    fingerprint: str
    nodes: int
    edges: int
    model: str  # the configured model name
    model_id: str  # the embedder's id: changes whenever its vectors could
    format: int
    packet_format: int
    embed_format: int
    lexical_format: int
    dim: int
    tree: str | None  # the source tree the index was built from
    source: str  # "worktree", "HEAD", ... (for people)
    hnsw: HnswParams
    fusion: tuple[float, float, int, int]  # lexical weight, vector weight, rrf k, depth
    files: dict[str, FileRef]
    # The most trusting `vivary.cacheTrust` any vector of the index was taken from the shared cache under:
    # "none" when every one was computed here; "" in a manifest written before this was recorded (then the
    # record of the rows, memory/local/vectors.py `index_level`, says).
    trust: str = ""


class VectorMeta(msgspec.Struct, frozen=True):
    """Row i of vectors.f32 is the embedding of the packet whose sha256 is `digests[i]`."""

    key: str  # model id + embed format: vectors under another key are never reused
    dim: int
    sha256: str
    digests: list[str]
    # New whenever rows are renumbered (a fresh or compacted cache): an HNSW graph, whose labels are rows,
    # is only updated in place when it was built on the same generation.
    generation: str = ""


class Entry(msgspec.Struct, frozen=True, array_like=True):
    node_id: str
    digest: str
    label: int  # HNSW label = row in the vector cache


class Entries(msgspec.Struct, frozen=True):
    """The indexed nodes in id order; entry i is also document i of the lexical index."""

    fingerprint: str
    entries: list[Entry]


class TermCache(msgspec.Struct, frozen=True):
    format: int
    counts: dict[str, dict[str, int]]  # packet digest -> term -> count


def _sha(data: bytes | bytearray | memoryview) -> str:
    return hashlib.sha256(data).hexdigest()


# --- validating what is read back ------------------------------------------------------------------------
# Every number in the state reaches numpy or hnswlib, which trust it: a manifest saying `"dim": -1` gave
# wrong answers and `"dim": 100000000` a segmentation fault. State files are only ever written by this
# module, so anything out of these bounds is damage (or a forgery) and is refused like a digest mismatch.

_MAX_DIM = 16_384
_MAX_ELEMENTS = 1 << 31  # hnswlib labels and counts
_HEX64 = frozenset("0123456789abcdef")
_STATE_FILES = frozenset((HNSW_FILE, ENTRIES, LEXICAL))
# hnswlib's saved header (hnswalg.h saveIndex): offsetLevel0, max_elements, cur_element_count,
# size_data_per_element, label_offset, offsetData (size_t); maxlevel (int); enterpoint_node (uint32);
# maxM, maxM0, M (size_t); mult (double); ef_construction (size_t). Then cur_element_count records of
# size_data_per_element bytes, then per element a uint32 length and that many bytes of upper-level links.
_HNSW_HEADER = struct.Struct("<QQQQQQiIQQQdQ")


def _manifest_problem(m: Manifest) -> str | None:
    """What is wrong with a decoded manifest's values, or None."""
    h = m.hnsw
    if not 1 <= m.dim <= _MAX_DIM:
        return f"dim = {m.dim} is not a vector size"
    if h.space != "ip" or not (1 <= h.m <= 1024 and 1 <= h.ef_construction <= 1 << 20 and 1 <= h.ef <= 1 << 20):
        return "its HNSW parameters are out of range"
    if not 0 <= h.deleted <= h.elements <= _MAX_ELEMENTS:
        return f"it counts {h.elements} HNSW elements, {h.deleted} of them deleted"
    if not 0 <= m.nodes <= _MAX_ELEMENTS or m.edges < 0:
        return "its node or edge count is negative"
    lex, vec, rrf, depth = m.fusion
    if not (0.0 <= lex <= 1.0 and 0.0 <= vec <= 1.0 and 1 <= rrf <= 1 << 20 and 1 <= depth <= 1 << 20):
        return "its fusion weights are out of range"
    for name, ref in m.files.items():
        if name not in _STATE_FILES or ref.size < 0 or len(ref.sha256) != 64 or not _HEX64.issuperset(ref.sha256):
            return f"it lists an invalid state file {name[:40]!r}"
    return None


def _hnsw_problem(data: bytes, dim: int, params: HnswParams) -> str | None:
    """What makes `data` not an hnswlib index of `params.elements` vectors of `dim` floats, or None."""
    if len(data) < _HNSW_HEADER.size:
        return "it is too short"
    (off0, max_elements, count, per, label_at, data_at, max_level, enter, max_m, max_m0, m, _mult,
     _efc) = _HNSW_HEADER.unpack_from(data)
    if off0 != 0 or data_at != max_m0 * 4 + 4 or label_at != data_at + 4 * dim or per != label_at + 8:
        return f"it does not hold vectors of {dim} dimensions"
    if m != params.m or max_m != m or max_m0 != 2 * m:
        return "its HNSW parameters differ from the manifest's"
    if count != params.elements or count > max_elements or max_elements > _MAX_ELEMENTS:
        return f"it holds {count} elements, the manifest says {params.elements}"
    if count and not (0 <= enter < count and 0 <= max_level <= 64):
        return "its entry point is out of range"
    if len(data) < _HNSW_HEADER.size + count * (per + 4):
        return "it is truncated"
    return None


def _decode(data: bytes | None, kind: type[Any], *, json: bool = False) -> Any:
    if data is None:
        return None
    try:
        return msgspec.json.decode(data, type=kind) if json else msgspec.msgpack.decode(data, type=kind)
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None


@contextmanager
def _as_file(store: StateStore, name: str, data: bytes) -> Iterator[Path]:
    """A file holding `data` for hnswlib, which only loads from paths: the store's own file when it has one
    with exactly these bytes, else a temporary copy."""
    # The store's own file was just read and verified; a local index run replacing it in between would
    # replace it with a file of its own making, never with foreign bytes (a backend holding fetched,
    # untrusted state has no local path and gets the copy of the verified bytes).
    path = store.local_path(name)
    if path is not None:
        try:
            if path.stat().st_size == len(data):
                yield path
                return
        except OSError:
            pass
    with tempfile.TemporaryDirectory(prefix="vivary-hnsw-") as tmp:
        copy = Path(tmp) / name
        copy.write_bytes(data)
        yield copy


# --- what is embedded -----------------------------------------------------------------------------------


def embed_text(packet: str) -> str:
    """The text embedded for a packet: the packet minus its identity lines.

    Node id and path are machine identifiers: embedded, they spend the model's 256-token window on noise
    (the lexical index still sees them, so a query naming an id finds it). The title is kept unless the
    body already opens with it as a heading; type and frontmatter are kept, outbound edge lines are not.
    """
    head, _, body = packet.partition("\n\n")
    lines = head.split("\n")
    title = lines[3].removeprefix("vivary_title: ") if len(lines) > 3 else ""
    kind = lines[1].removeprefix("vivary_type: ") if len(lines) > 1 else ""
    fields = lines[4] if len(lines) > 4 else "{}"
    parts: list[str] = []
    first = body.lstrip().split("\n", 1)[0].lstrip("#").strip()
    if title and first != title:
        parts.append(title)
    if kind:
        parts.append(f"type: {kind}")
    if fields != "{}":
        parts.append(fields)
    parts.append(body.strip())
    return "\n".join(p for p in parts if p)


def _digest(packet: str) -> str:
    return _sha(packet.encode("utf-8", "surrogateescape"))
