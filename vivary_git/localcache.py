"""The local hot cache under `.git/vivary/`: parsed notes by blob id, graphs by tree id.

Never inside the work tree, never pushed. Files are written whole to a temporary name and renamed
into place, so a reader sees an old file or a new one, never half of one; a damaged or foreign file
is ignored (and removed) and its contents recomputed. Two processes writing at once each add their
own segment; nothing is lost, at worst a blob is parsed twice.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Generic, TypeVar

import msgspec

from vivary_git.config import FORMAT_VERSION
from vivary_git.models import Note
from vivary_git.safeio import FileRefused, read_regular

T = TypeVar("T")
_MAGIC = b"VVG1"
# The same msgpack, for values holding a file name that is not UTF-8: such a name is a str with
# surrogates (`surrogateescape`, so the bytes Git gave come back exactly), which msgpack cannot
# encode. In these files every string that holds one, or starts with the mark, is the mark followed
# by the hex of its bytes. Rare, so only these files pay for the walk.
_MAGIC_NAMES = b"VVGn"
_BYTES_MARK = "\ufdd0"
_MAX_SEGMENTS = 8
_SMALL_SHARE = 4  # the small segments are merged apart from the big one while they are under a quarter of it
_MAX_GRAPHS = 16


def _note(message: str) -> None:
    from vivary_git.escape import text

    print(f"vivary: {text(message)}", file=sys.stderr)


def write_atomic(path: Path, *parts: bytes) -> None:
    """Write `parts` one after the other (never joined: at 100,000 notes a segment is ~160 MB, and a
    joined copy was the peak of a cold run's memory) to a temporary name, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    # No fsync: this is a cache. A crash can at worst leave a short file, which the magic header and
    # typed decoding reject on the next read (then it is recomputed); an fsync of a multi-megabyte
    # graph on every run cost tens to hundreds of milliseconds on a slow disk.
    with open(tmp, "wb") as fh:
        for part in parts:
            fh.write(part)
    os.replace(tmp, path)


def _spelled(value: Any) -> Any:
    """`value` as msgpack-ready builtins with every string holding a byte that is not UTF-8 spelled out."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _BYTES_MARK + value.encode("utf-8", "surrogateescape").hex()
        return _BYTES_MARK + value.encode().hex() if value.startswith(_BYTES_MARK) else value
    if isinstance(value, list | tuple):
        return [_spelled(v) for v in value]
    if isinstance(value, dict):
        return {_spelled(k): _spelled(v) for k, v in value.items()}
    if isinstance(value, msgspec.Raw):  # a worker's still-encoded value
        return _spelled(msgspec.msgpack.decode(value))
    return value


def _unspelled(value: Any) -> Any:
    if isinstance(value, str):
        return bytes.fromhex(value[1:]).decode("utf-8", "surrogateescape") if value.startswith(_BYTES_MARK) else value
    if isinstance(value, list):
        return [_unspelled(v) for v in value]
    if isinstance(value, dict):
        return {_unspelled(k): _unspelled(v) for k, v in value.items()}
    return value


def _encode_spelled(value: Any) -> bytes:
    return msgspec.msgpack.encode(_spelled(msgspec.to_builtins(value, builtin_types=(bytes, msgspec.Raw))))


def _encoded(value: Any) -> tuple[bytes, bytes]:
    """The header and msgpack of a value: `_MAGIC_NAMES` when it holds a file name that is not UTF-8."""
    try:
        return _MAGIC, msgspec.msgpack.encode(value)
    except UnicodeEncodeError:
        return _MAGIC_NAMES, _encode_spelled(value)


def encode(value: Any) -> bytes:
    """A value as the cache files hold it: header, then msgpack (`_MAGIC_NAMES` and spelled-out strings
    when it holds a file name that is not UTF-8). Also what a worker process hands back (parallel.py)."""
    header, body = _encoded(value)
    return header + body


def decode(data: bytes, value_type: type[T], decoder: msgspec.msgpack.Decoder[Any] | None = None) -> T:
    """`encode`'s bytes back as `value_type`. `decoder`, when given, decodes the plain form instead (it
    may keep parts encoded, as `msgspec.Raw`; the spelled-out form is always `value_type`). Raises
    `msgspec.DecodeError`, `msgspec.ValidationError` or `ValueError` for anything else."""
    if data.startswith(_MAGIC):
        body = memoryview(data)[len(_MAGIC):]
        plain: T = decoder.decode(body) if decoder is not None else msgspec.msgpack.decode(body, type=value_type)
        return plain
    if data.startswith(_MAGIC_NAMES):
        value: T = msgspec.convert(_unspelled(msgspec.msgpack.decode(memoryview(data)[len(_MAGIC_NAMES):])),
                                   value_type)
        return value
    raise ValueError("no cache header")


def _read(path: Path, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
    try:
        raw = read_regular(path, None, follow_symlinks=False)  # a FIFO put here must not block the hook
    except FileNotFoundError:  # removed by a concurrent compaction
        return None
    except FileRefused as err:
        _discard(path, str(err))
        return None
    except OSError as err:
        _note(f"cannot read cache file {path} ({err.strerror}); recomputing")
        return None
    try:
        if raw.startswith(_MAGIC):
            return decoder.decode(memoryview(raw)[len(_MAGIC):])  # no copy of a big file
        if raw.startswith(_MAGIC_NAMES):
            value: T = msgspec.convert(_unspelled(msgspec.msgpack.decode(memoryview(raw)[len(_MAGIC_NAMES):])),
                                       decoder.type)
            return value
    except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
        _discard(path, "it is truncated or damaged")
        return None
    except RecursionError:  # msgspec's own guard against nesting no cache of ours has
        _discard(path, "it is nested too deeply")
        return None
    _discard(path, "it has no cache header")
    return None


def _discard(path: Path, why: str) -> None:
    _note(f"ignored cache file {path}: {why}; it will be rebuilt")
    with contextlib.suppress(OSError):
        path.unlink()


class SegmentCache(Generic[T]):
    """Values keyed by content ids (blob ids, or digests of them), as append-only segment files
    compacted now and then. A run reads every segment once, on first use, and writes one new one."""

    def __init__(self, directory: Path | None, kind: str, value_type: type[T]) -> None:
        self.dir = directory / f"{kind}-v{FORMAT_VERSION}" if directory is not None else None
        self._decoder = msgspec.msgpack.Decoder(list[tuple[str, value_type]])  # type: ignore[valid-type]
        self._value_type = value_type
        self._values: dict[str, T] | None = None
        self._segments: list[Path] = []
        self._new: dict[str, T | msgspec.Raw] = {}

    def _load(self) -> dict[str, T]:
        if self._values is None:
            self._values = {}
            if self.dir is not None and self.dir.is_dir():
                self._segments = sorted(self.dir.glob("seg-*.msgpack"))
                for seg in self._segments:
                    items = _read(seg, self._decoder)
                    if items:
                        self._values.update(items)
        return self._values

    @property
    def loaded(self) -> bool:
        return self._values is not None

    def get(self, key: str) -> T | None:
        return self._load().get(key)

    def put(self, key: str, value: T) -> None:
        """Remember a value; loading the existing segments is not needed to add one."""
        if self._values is not None:
            self._values[key] = value
        self._new[key] = value

    def put_encoded(self, key: str, value: msgspec.Raw) -> None:
        """Remember a value that is msgpack already (from a worker process): written as it is."""
        if self._values is not None:
            self._values[key] = msgspec.msgpack.decode(value, type=self._value_type)
        self._new[key] = value

    def discard(self) -> None:
        """Forget what was added and not written yet (a forked child leaves the writing to its parent)."""
        self._new.clear()

    def flush(self, keep: Callable[[], Iterable[str]] | None = None) -> None:
        """Write what was added this run as a new segment. When segments pile up they are merged, by size
        tier: the small ones (what edits add, a few notes a run) into one, leaving the big one a cold run
        wrote untouched, until together they reach a quarter of its size; only then is everything merged
        into one, keeping only the keys `keep()` names (called only then: listing them may mean walking a
        tree), or all of them. So a hook run in a 300,000-note workspace never reads and rewrites the
        whole ~0.5 GB cache for its ten edits, and what is dropped for good still goes within a bounded
        share of the cache's size."""
        if self.dir is None or not self._new:
            return
        try:
            segments = sorted(self.dir.glob("seg-*.msgpack")) if self.dir.is_dir() else []
            if len(segments) + 1 <= _MAX_SEGMENTS:
                _write_segment(self._segment_path(), sorted(self._new.items()))
            else:
                sizes = {seg: _size(seg) for seg in segments}
                big = max(segments, key=lambda seg: sizes[seg])
                small = [seg for seg in segments if seg != big]
                if sum(sizes[seg] for seg in small) * _SMALL_SHARE < sizes[big]:
                    self._merge(small, None)
                else:
                    self._merge(segments, keep)
        except OSError as err:
            _note(f"could not write the cache in {self.dir} ({err.strerror}); continuing without it")
        self._new.clear()

    def _segment_path(self) -> Path:
        assert self.dir is not None
        return self.dir / f"seg-{uuid.uuid4().hex}.msgpack"

    def _merge(self, segments: list[Path], keep: Callable[[], Iterable[str]] | None) -> None:
        """Write `segments` and what was added this run as one segment, then remove them. With `keep`,
        only the keys it names (and this run's) are written."""
        merged: dict[str, T | msgspec.Raw] = {}
        loaded = self._values is not None and set(segments) == set(self._segments)
        if loaded:
            assert self._values is not None
            merged.update(self._values)
        else:
            for seg in segments:
                merged.update(_read(seg, self._decoder) or ())
        merged.update(self._new)
        wanted = (set(keep()) | set(self._new)) if keep is not None else None
        _write_segment(self._segment_path(), sorted((k, v) for k, v in merged.items() if wanted is None or k in wanted))
        for seg in segments:
            with contextlib.suppress(OSError):
                seg.unlink()


_BATCH = 2048


def _write_segment(path: Path, items: list[tuple[str, Any]]) -> None:
    """A segment is one msgpack array of (key, value) pairs; it is encoded and written a batch at a
    time (each batch's own array header cut off behind one header for the whole), so a big segment
    is never in memory at once: at 100,000 notes the parse segment is ~160 MB."""
    enc = msgspec.msgpack.Encoder()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(tmp, "wb") as fh:
            try:
                fh.write(_MAGIC)
                fh.write(bytes([0xDD]) + len(items).to_bytes(4, "big"))  # array32: reads as any array header
                for start in range(0, len(items), _BATCH):
                    batch = items[start:start + _BATCH]
                    fh.write(memoryview(enc.encode(batch))[_array_header_size(len(batch)):])
            except UnicodeEncodeError:  # a file name that is not UTF-8: the whole segment is spelled out
                fh.seek(0)
                fh.truncate()
                fh.write(_MAGIC_NAMES)
                fh.write(_encode_spelled(items))
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:  # removed by a concurrent compaction
        return 0


def _array_header_size(n: int) -> int:
    """Bytes of msgpack's header for an array of `n` items."""
    return 1 if n < 16 else 3 if n < 65536 else 5


def parse_cache(directory: Path | None) -> SegmentCache[Note]:
    """Parsed notes by blob id."""
    return SegmentCache(directory, "parse", Note)


class ObjectCache:
    """Whole results (a graph, a history) keyed by tree or commit id, a bounded number kept."""

    def __init__(self, directory: Path | None, kind: str, keep: int = _MAX_GRAPHS) -> None:
        self.dir = directory / f"{kind}-v{FORMAT_VERSION}" if directory is not None else None
        self.keep = keep

    def get(self, key: str, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
        if self.dir is None:
            return None
        return _read(self.dir / f"{key}.msgpack", decoder)

    def put(self, key: str, value: object) -> None:
        if self.dir is None:
            return
        try:
            write_atomic(self.dir / f"{key}.msgpack", *_encoded(value))
            files = sorted(self.dir.glob("*.msgpack"), key=lambda p: p.stat().st_mtime)
            for old in files[: -self.keep]:
                with contextlib.suppress(OSError):
                    old.unlink()
        except OSError as err:
            _note(f"could not write the cache in {self.dir} ({err.strerror}); continuing without it")
