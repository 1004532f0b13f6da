"""The local hot cache under `.git/vivary/`: parsed notes by blob id, graphs by tree id.

Never inside the work tree, never pushed. Files are written whole to a temporary name and renamed
into place, so a reader sees an old file or a new one, never half of one; a damaged or foreign file
is ignored (and removed) and its contents recomputed. Two processes writing at once each add their
own segment; nothing is lost, at worst a blob is parsed twice. A cache whose folder may not be written
(`derived.py`: a file in its place or on its way, a symbolic link out of the Git folder) is left off, saying so
once, never read or written there.
"""

from __future__ import annotations

import contextlib
import os
import sys
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from vivary_git import derived
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
# Whole results of one kind kept on disk, in bytes, however many `keep` allows: at 100,000 notes a graph is ~62 MB
# and a query index ~270 MB, so sixteen graphs and four indexes were ~2 GB. The newest `_ALWAYS_KEPT` files stay
# whatever their size (the entry just written, the one before it and a `last` pointer: a patch's base).
_MAX_BYTES = 512 << 20
_ALWAYS_KEPT = 3
# Folders of other FORMAT_VERSIONs kept beside this one's, the most recently written: two installs on one machine (a
# hook pinned to one release, the command line on another) both stay warm, and an upgrade does not leave a copy of
# every cache behind for good (the format changed 17 times in three days of releases).
_OTHER_FORMATS = 2
# A temporary file this old is a killed writer's (a run writes a segment in seconds, ~160 MB at 100,000 notes):
# removed by the next run that writes there.
_STALE_AFTER = 3600.0


def _note(message: str) -> None:
    from vivary_git.escape import text

    print(f"vivary: {text(message)}", file=sys.stderr)


_SAID: set[str] = set()  # the cache folders said to be left off, once per process (the MCP server opens many)


def cache_folder(directory: Path | None, name: str, what: str = "the cache") -> Path | None:
    """The folder `name` of `what` (a cache, or other optional state) under `directory` (`.git/vivary/`), or None
    (going without it) when `derived.py` says it may not be written: said once on stderr, with what is in the way
    and the fix."""
    if directory is None:
        return None
    folder = directory / name
    why = derived.damage(directory, folder, needs=f"of {what}")
    if why is None:
        why = derived.unsearchable(directory, folder)
    if why is None:
        return folder
    if why not in _SAID:
        _SAID.add(why)
        print(f"vivary: {why}; continuing without {what}", file=sys.stderr)
    return None


def _unwritten(folder: Path, err: OSError) -> None:
    """Said once a run, whatever cache it was (they sit side by side, and one reason stops them all): a read-only
    `.git` printed six lines for one `check`, one per cache kind and write."""
    said = f"could not write the cache in {folder} ({err.strerror or err}); continuing without it"
    key = f"unwritten:{err.errno}"
    if key not in _SAID:
        _SAID.add(key)
        _note(said)


def write_atomic(path: Path, *parts: bytes) -> None:
    """Write `parts` one after the other (never joined: at 100,000 notes a segment is ~160 MB, and a
    joined copy was the peak of a cold run's memory) to a temporary name, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    # No fsync: this is a cache. A crash can at worst leave a short file, which the magic header and
    # typed decoding reject on the next read (then it is recomputed); an fsync of a multi-megabyte
    # graph on every run cost tens to hundreds of milliseconds on a slow disk.
    try:
        with open(tmp, "wb") as fh:
            for part in parts:
                fh.write(part)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


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


def _array_header(n: int) -> bytes:
    """msgpack's header for an array of `n` items."""
    if n < 16:
        return bytes([0x90 | n])
    return (b"\xdc" + n.to_bytes(2, "big")) if n < 65536 else (b"\xdd" + n.to_bytes(4, "big"))


def encoded_parts(value: Any) -> Iterator[bytes]:
    """The msgpack of `value` in pieces: a struct encoded as a map (a graph), field by field, and its long
    lists a batch at a time, so that no one buffer holds all of it (a cold graph of 100,000 notes is
    ~60 MB, and the buffer that grew to hold it was the peak of the run's memory). The same bytes as
    `msgspec.msgpack.encode(value)` (a test holds them equal); anything else is encoded whole. Raises
    UnicodeEncodeError as that does."""
    enc = msgspec.msgpack.Encoder()
    config = getattr(value, "__struct_config__", None)
    if config is None or config.array_like or config.omit_defaults or config.tag is not None:
        yield enc.encode(value)
        return
    names = value.__struct_encode_fields__
    yield bytes([0x80 | len(names)]) if len(names) < 16 else b"\xde" + len(names).to_bytes(2, "big")
    for name, field in zip(names, value.__struct_fields__, strict=True):
        yield enc.encode(name)
        item = getattr(value, field)
        if not isinstance(item, list) or len(item) <= _BATCH:
            yield enc.encode(item)
            continue
        yield _array_header(len(item))
        for start in range(0, len(item), _BATCH):
            batch = item[start:start + _BATCH]
            yield memoryview(enc.encode(batch))[_array_header_size(len(batch)):].tobytes()


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


def format_folder(directory: Path | None, kind: str) -> Path | None:
    """This format's folder of a cache `kind` (`cache_folder`). When it is not there yet (the first run after an
    upgrade, or on a new clone), the folders of other formats beyond the `_OTHER_FORMATS` most recently written go."""
    folder = cache_folder(directory, f"{kind}-v{FORMAT_VERSION}")
    if folder is not None and not folder.exists():
        _leave_other_formats(folder.parent, kind)
    return folder


def _leave_other_formats(directory: Path, kind: str) -> None:
    import re
    import shutil

    named = re.compile(rf"{re.escape(kind)}-v([0-9]+)")
    others: list[tuple[float, Path]] = []
    try:
        for entry in directory.iterdir():
            found = named.fullmatch(entry.name)
            if found and int(found.group(1)) != FORMAT_VERSION and entry.is_dir() and not entry.is_symlink():
                others.append((entry.stat().st_mtime, entry))
    except OSError:
        return  # not listable: nothing is removed, as nothing would be read there either
    for _, old in sorted(others, reverse=True)[_OTHER_FORMATS:]:
        shutil.rmtree(old, ignore_errors=True)


class SegmentCache(Generic[T]):
    """Values keyed by content ids (blob ids, or digests of them), as append-only segment files
    compacted now and then. A run reads every segment once, on first use, and writes one new one."""

    def __init__(self, directory: Path | None, kind: str, value_type: type[T]) -> None:
        self.dir = format_folder(directory, kind)
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
            for key, value in self._new.items():  # added before the first look-up, not written yet
                self._values[key] = msgspec.msgpack.decode(value, type=self._value_type) \
                    if isinstance(value, msgspec.Raw) else value
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

    def writer(self) -> SegmentWriter | None:
        """A segment of its own, written as its entries come (`SegmentWriter`), or None without a cache
        directory (or when it cannot be created). What it writes is seen by this cache's next load."""
        if self.dir is None:
            return None
        try:
            return SegmentWriter(self.dir / f"seg-{uuid.uuid4().hex}.msgpack", self._reload)
        except OSError as err:
            _unwritten(self.dir, err)
            return None

    def _reload(self) -> None:
        self._values = None  # a segment was added: the next look-up reads it

    def discard(self) -> None:
        """Forget what was added and not written yet (a forked child leaves the writing to its parent)."""
        self._new.clear()

    def flush(self, keep: Callable[[], Iterable[str]] | None = None) -> None:
        """Write what was added this run as a new segment. When segments pile up they are merged, by size
        tier: the small ones (what edits add, a few notes a run) into one, leaving the big ones a cold run
        wrote (one per parsing process) untouched, until together they reach a quarter of them; only then is
        everything merged into one, keeping only the keys `keep()` names (called only then: listing them may
        mean walking a tree), or all of them. So a hook run in a 300,000-note workspace never reads and rewrites the
        whole ~0.5 GB cache for its ten edits, and what is dropped for good still goes within a bounded
        share of the cache's size."""
        if self.dir is None or not self._new:
            return
        try:
            _remove_stale(self.dir)
            segments = sorted(self.dir.glob("seg-*.msgpack")) if self.dir.is_dir() else []
            if len(segments) + 1 <= _MAX_SEGMENTS:
                _write_segment(self._segment_path(), sorted(self._new.items()))
            else:
                sizes = {seg: _size(seg) for seg in segments}
                # The big ones: a cold run writes one per process that parsed (parses.py), of about one size.
                largest = max(sizes.values())
                small = [seg for seg in segments if sizes[seg] * _SMALL_SHARE < largest]
                if small and sum(sizes[seg] for seg in small) * _SMALL_SHARE < sum(sizes.values()) - sum(
                        sizes[seg] for seg in small):
                    self._merge(small, None)
                else:
                    self._merge(segments, keep)
        except OSError as err:
            _unwritten(self.dir, err)
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


def _remove_stale(directory: Path) -> None:
    """Remove the temporary files (`.NAME.PID[.ID].tmp`) that writers killed before their rename left in
    `directory` over `_STALE_AFTER` seconds ago; a living writer's are younger."""
    import time

    if not directory.is_dir():
        return
    now = time.time()
    for tmp in directory.glob(".*.tmp"):
        with contextlib.suppress(OSError):
            if tmp.is_file() and not tmp.is_symlink() and now - tmp.stat().st_mtime > _STALE_AFTER:
                tmp.unlink()


_BATCH = 2048


class SegmentWriter:
    """One new segment, its entries encoded and written as they are added (by the process that computed
    them: a parse worker writes its share's parses itself, and nobody holds them all), under a temporary
    name renamed into place by `close`. The array header, written first, gets its count at the end."""

    def __init__(self, path: Path, written: Callable[[], None]) -> None:
        self._path = path
        self._written = written
        self._tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: BinaryIO | None = open(self._tmp, "wb")  # noqa: SIM115  # closed by close() or abandon()
        self._enc = msgspec.msgpack.Encoder()
        self._parts: list[bytes] = []
        self._count = 0
        self._write(_MAGIC + bytes([0xDD]) + bytes(4))  # array32: the count is filled in by close()

    def _write(self, data: bytes) -> None:
        if self._fh is None:
            return
        try:
            self._fh.write(data)
        except OSError as err:
            _unwritten(self._path.parent, err)
            self.abandon()

    def add(self, key: str, value: Any) -> bool:
        """Add one entry; False when it cannot be (a string that is not UTF-8, which this plain form
        cannot hold, or a failed write): the caller keeps it for the cache's usual `put`."""
        if self._fh is None:
            return False
        try:
            self._parts.append(self._enc.encode((key, value)))
        except UnicodeEncodeError:
            return False
        self._count += 1
        if len(self._parts) >= _BATCH:
            parts, self._parts = self._parts, []
            self._write(b"".join(parts))
        return self._fh is not None

    def close(self) -> None:
        """Rename the segment into place (nothing when no entry was added)."""
        if self._fh is None:
            return
        self._write(b"".join(self._parts))
        self._parts = []
        fh = self._fh
        if fh is None or not self._count:
            self.abandon()
            return
        try:
            fh.seek(len(_MAGIC) + 1)
            fh.write(self._count.to_bytes(4, "big"))
            fh.close()
            os.replace(self._tmp, self._path)
        except OSError as err:
            _unwritten(self._path.parent, err)
            self.abandon()
            return
        self._fh = None
        self._written()

    def abandon(self) -> None:
        """Leave nothing behind (an entry added is then simply computed again next time)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            with contextlib.suppress(OSError):
                fh.close()
        with contextlib.suppress(OSError):
            self._tmp.unlink()


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
    """Whole results (a graph, a history) keyed by tree or commit id, a bounded number and size kept."""

    def __init__(self, directory: Path | None, kind: str, keep: int = _MAX_GRAPHS, budget: int = _MAX_BYTES) -> None:
        self.dir = format_folder(directory, kind)
        self.keep = keep
        self.budget = budget

    def get(self, key: str, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
        if self.dir is None:
            return None
        return _read(self.dir / f"{key}.msgpack", decoder)

    def _evict(self) -> None:
        """Remove the oldest entries beyond `keep`, and beyond `budget` bytes but for the newest `_ALWAYS_KEPT`."""
        assert self.dir is not None
        found = []
        for path in self.dir.glob("*.msgpack"):
            with contextlib.suppress(OSError):  # another run removed it meanwhile
                st = path.stat()
                found.append((st.st_mtime, st.st_size, path))
        found.sort(key=lambda f: f[0], reverse=True)
        used = 0
        for n, (_, size, path) in enumerate(found):
            used += size
            if n >= self.keep or (n >= _ALWAYS_KEPT and used > self.budget):
                with contextlib.suppress(OSError):
                    path.unlink()

    def put(self, key: str, value: object) -> None:
        if self.dir is None:
            return
        try:
            try:
                write_atomic(self.dir / f"{key}.msgpack", _MAGIC, *encoded_parts(value))
            except UnicodeEncodeError:  # a file name that is not UTF-8: spelled out, whole
                write_atomic(self.dir / f"{key}.msgpack", _MAGIC_NAMES, _encode_spelled(value))
            _remove_stale(self.dir)
            self._evict()
        except OSError as err:
            _unwritten(self.dir, err)
