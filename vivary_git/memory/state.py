"""Where a memory provider keeps its derived state: named byte strings, nothing else.

Everything a provider stores (manifest, cached vectors, the HNSW file, the lexical index) is a flat
name → bytes mapping, so the same state can live in a local directory today and be mirrored into
`refs/vivary/*` (store.py `put_state`/`get_state`) later without the provider knowing. Every file but
the manifest is also recorded in the manifest with its sha256 and size, so a reader can verify what it
loads whatever the backend; nothing is ever unpickled.

The local backend keeps one directory per dataset, by default `.git/vivary/memory/<dataset>/` (never in
the work tree, never pushed). Writes go to a temporary name and are renamed into place, so a reader sees
an old file or a new one, never half of one.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import Protocol

from vivary_git.errors import GitError
from vivary_git.safeio import FileRefused, read_regular

__all__ = ["MAX_STATE_FILE_BYTES", "Data", "LocalStateStore", "Staged", "StateStore", "check_name"]

# What a state file's bytes may be given as: a numpy array's memory (`a.data.cast("B")`) is written without
# a copy.
Data = bytes | bytearray | memoryview

# The largest state file read back: the vectors of ~500,000 notes (384 float32 each), or their HNSW graph.
MAX_STATE_FILE_BYTES = 1 << 30

# Names are single path segments: a store mirrored into a Git tree, or a directory, can hold them as is.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")


def check_name(name: str) -> str:
    if not _NAME.match(name) or ".." in name:
        raise ValueError(f"invalid state name {name!r}")
    return name


_TMP = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9._-]{0,127}\.([0-9]{1,10})\.[0-9a-f]{8}\.tmp")


def _running(pid: int) -> bool:
    """Whether process `pid` exists (one of another user's counts: its file is not ours to judge)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, OSError):  # another user's (PermissionError), or no such number here
        return True
    return True


class StateStore(Protocol):
    """Named bytes for one provider dataset."""

    @property
    def location(self) -> str:
        """Where the state lives, for messages (a directory, a ref)."""
        ...

    def get(self, name: str) -> bytes | None:
        """The bytes stored under `name`, or None when there are none (or they cannot be read)."""
        ...

    def put(self, name: str, data: Data, *, sync: bool = True) -> None:
        """Store `data` under `name`, replacing what was there, atomically; with `sync`, on the disk before it
        replaces the old file (for what a digest elsewhere does not vouch for when it is read again)."""
        ...

    def stage(self, name: str, data: Data) -> Staged:
        """`put(name, data, sync=False)` in two steps: the bytes are written now, and replace what `name` holds
        only at `commit()` (`discard()` drops them). An index run writes what is ready while the model is still
        embedding, and still replaces nothing until every vector is in."""
        ...

    def ready(self) -> None:
        """Raise the error `put` would when nothing can be stored here, before minutes of work are spent."""
        ...

    def local_path(self, name: str) -> Path | None:
        """A file holding `name`'s bytes, when the backend has one (hnswlib loads from a path); else None."""
        ...

    def names(self) -> list[str]:
        """Every stored name, sorted."""
        ...

    def delete_all(self) -> bool:
        """Remove every name (and the dataset itself); True when there was anything to remove."""
        ...


class Staged(Protocol):
    """Bytes written for a name (`StateStore.stage`), not yet in its place."""

    def commit(self) -> None:
        """Put them in place of what the name held (atomically)."""
        ...

    def discard(self) -> None:
        """Drop them; the name keeps what it held. Does nothing after `commit`."""
        ...


class _StagedFile:
    def __init__(self, store: LocalStateStore, tmp: Path, path: Path) -> None:
        self._store, self._tmp, self._path = store, tmp, path

    def commit(self) -> None:
        try:
            os.replace(self._tmp, self._path)
        except OSError as err:
            self.discard()
            raise self._store._unwritable(err) from None

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self._tmp.unlink()


class LocalStateStore:
    """A directory of files, one per name."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @property
    def location(self) -> str:
        return str(self.directory)

    def get(self, name: str) -> bytes | None:
        try:
            # Only a regular file, read no further than a state file can be: a FIFO here would block recall.
            return read_regular(self.directory / check_name(name), MAX_STATE_FILE_BYTES, follow_symlinks=False)
        except (FileRefused, OSError):
            return None  # absent, unreadable or not a file counts as absent: the caller rebuilds, which rewrites it

    def put(self, name: str, data: Data, *, sync: bool = True) -> None:
        """`sync=False`: not flushed to the disk before it replaces the old file; for what is verified
        when read again (a digest elsewhere), so that a crash costs a rebuild, never a wrong answer."""
        self._write(name, data, sync=sync).commit()

    def stage(self, name: str, data: Data) -> Staged:
        return self._write(name, data, sync=False)

    def _write(self, name: str, data: Data, *, sync: bool) -> _StagedFile:
        """`data` in a temporary file beside `name`'s (a dot name, which `names` skips), to be renamed over it."""
        path = self.directory / check_name(name)
        tmp = self.directory / f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(data)
                if sync:
                    fh.flush()
                    os.fsync(fh.fileno())
        except OSError as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise self._unwritable(err) from None
        except BaseException:  # interrupted: leave nothing behind
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return _StagedFile(self, tmp, path)

    def ready(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise self._unwritable(err) from None

    def sweep(self) -> None:
        """Remove the temporary files of writers that are gone (a killed index run leaves what it staged while
        the model embedded): `.NAME.PID.HEX.tmp`, where no process PID runs on this machine any more. Called by
        the one index writer (under the index lock), so no live writer of another PID namespace loses its file."""
        try:
            names = [p.name for p in self.directory.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")]
        except OSError:
            return
        for name in names:
            found = _TMP.fullmatch(name)
            if found is None or _running(int(found[1])):
                continue
            with contextlib.suppress(OSError):
                (self.directory / name).unlink()

    def _unwritable(self, err: OSError) -> GitError:
        return GitError(
            f"cannot write the memory index in {self.directory} ({err.strerror or err}): a file may be in the "
            f"place of a folder on that path; remove it (the index is rebuilt by `git vivary index --yes`)"
        )

    def local_path(self, name: str) -> Path | None:
        path = self.directory / check_name(name)
        return path if path.is_file() and not path.is_symlink() else None

    def names(self) -> list[str]:
        try:
            return sorted(p.name for p in self.directory.iterdir() if p.is_file() and not p.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete_all(self) -> bool:
        if not self.directory.exists():
            return False
        shutil.rmtree(self.directory)
        parent = self.directory.parent
        # Leave no empty `memory/` folder behind, but never remove one that holds other datasets.
        with contextlib.suppress(OSError):
            parent.rmdir()
        return True
