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
from collections.abc import Iterable
from pathlib import Path
from typing import TypeVar

import msgspec

from vivary_git.config import FORMAT_VERSION
from vivary_git.models import Note

T = TypeVar("T")
_MAGIC = b"VVG1"
_MAX_SEGMENTS = 8
_MAX_GRAPHS = 16


def _note(message: str) -> None:
    print(f"vivary: {message}", file=sys.stderr)


def write_atomic(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _read(path: Path, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:  # removed by a concurrent compaction
        return None
    except OSError as err:
        _note(f"cannot read cache file {path} ({err.strerror}); recomputing")
        return None
    if not raw.startswith(_MAGIC):
        _discard(path, "it has no cache header")
        return None
    try:
        return decoder.decode(raw[len(_MAGIC):])
    except (msgspec.DecodeError, msgspec.ValidationError):
        _discard(path, "it is truncated or damaged")
        return None


def _discard(path: Path, why: str) -> None:
    _note(f"ignored cache file {path}: {why}; it will be rebuilt")
    with contextlib.suppress(OSError):
        path.unlink()


class ParseCache:
    """Parsed notes keyed by blob id, as append-only segments compacted now and then."""

    _decoder = msgspec.msgpack.Decoder(list[tuple[str, Note]])

    def __init__(self, directory: Path | None) -> None:
        self.dir = directory / f"parse-v{FORMAT_VERSION}" if directory is not None else None
        self._notes: dict[str, Note] | None = None
        self._segments: list[Path] = []
        self._new: dict[str, Note] = {}

    def _load(self) -> dict[str, Note]:
        if self._notes is None:
            self._notes = {}
            if self.dir is not None and self.dir.is_dir():
                self._segments = sorted(self.dir.glob("seg-*.msgpack"))
                for seg in self._segments:
                    items = _read(seg, self._decoder)
                    if items:
                        self._notes.update(items)
        return self._notes

    def get(self, oid: str) -> Note | None:
        return self._load().get(oid)

    def put(self, oid: str, note: Note) -> None:
        self._load()[oid] = note
        self._new[oid] = note

    def flush(self, keep: Iterable[str] | None = None) -> None:
        """Write what was parsed this run; compact when segments pile up, keeping `keep` blobs."""
        if self.dir is None or not self._new:
            return
        try:
            if len(self._segments) + 1 > _MAX_SEGMENTS and keep is not None:
                notes = self._load()
                wanted = set(keep) | set(self._new)
                merged = sorted((k, v) for k, v in notes.items() if k in wanted)
                write_atomic(self.dir / f"seg-{uuid.uuid4().hex}.msgpack", _MAGIC + msgspec.msgpack.encode(merged))
                for seg in self._segments:
                    with contextlib.suppress(OSError):
                        seg.unlink()
            else:
                items = sorted(self._new.items())
                write_atomic(self.dir / f"seg-{uuid.uuid4().hex}.msgpack", _MAGIC + msgspec.msgpack.encode(items))
        except OSError as err:
            _note(f"could not write the parse cache in {self.dir} ({err.strerror}); continuing without it")
        self._new.clear()


class ObjectCache:
    """Whole results (a graph, a history) keyed by tree or commit id, a bounded number kept."""

    def __init__(self, directory: Path | None, kind: str) -> None:
        self.dir = directory / f"{kind}-v{FORMAT_VERSION}" if directory is not None else None

    def get(self, key: str, decoder: msgspec.msgpack.Decoder[T]) -> T | None:
        if self.dir is None:
            return None
        return _read(self.dir / f"{key}.msgpack", decoder)

    def put(self, key: str, value: object) -> None:
        if self.dir is None:
            return
        try:
            write_atomic(self.dir / f"{key}.msgpack", _MAGIC + msgspec.msgpack.encode(value))
            files = sorted(self.dir.glob("*.msgpack"), key=lambda p: p.stat().st_mtime)
            for old in files[:-_MAX_GRAPHS]:
                with contextlib.suppress(OSError):
                    old.unlink()
        except OSError as err:
            _note(f"could not write the cache in {self.dir} ({err.strerror}); continuing without it")
