"""Where a memory provider keeps its derived state: named byte strings, nothing else.

Everything a provider stores (manifest, cached vectors, the HNSW file, the lexical index) is a flat
name → bytes mapping, so the same state can live in a local directory today and be mirrored into
`refs/vivary/*` (store/write.py `put_state`, store/refcache.py `get_state`) later without the provider
knowing. Every file but the manifest is also recorded in the manifest with its sha256 and size, so a
reader can verify what it loads whatever the backend; nothing is ever unpickled.

The local backend keeps one directory per dataset, by default `.git/vivary/memory/<dataset>/` (never in
the work tree, never pushed). Writes go to a temporary name and are renamed into place, so a reader sees
an old file or a new one, never half of one. A directory in the work tree (`state_path`) is used only as
memory/statefolder.py allows, and with its `Written` record: every file written is recorded under the Git
directory, and a file read back that is not what was recorded reads as absent.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import sys
import uuid
from pathlib import Path
from typing import Protocol

import msgspec

from vivary_git import derived
from vivary_git.errors import GitError
from vivary_git.escape import text as shown
from vivary_git.safeio import FileRefused, read_regular, read_regular_stat

__all__ = ["MAX_STATE_FILE_BYTES", "MEMORY", "Data", "LocalStateStore", "Staged", "StateStore", "Written", "check_name",
           "git_dir_store", "stamp"]

MEMORY = "memory"  # under .git/vivary/: one folder per dataset

# What a state file's bytes may be given as: a numpy array's memory (`a.data.cast("B")`) is written without
# a copy.
Data = bytes | bytearray | memoryview

# The largest state file read back: the vectors of ~500,000 notes (384 float32 each), or their HNSW graph.
MAX_STATE_FILE_BYTES = 1 << 30

_MAX_RECORD = 4096
_SAID: set[Path] = set()  # folders whose unvouched files this process has named on stderr

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
    def __init__(self, store: LocalStateStore, tmp: Path, path: Path,
                 written: tuple[str, int, tuple[int, int]] | None = None) -> None:
        self._store, self._tmp, self._path = store, tmp, path
        self._written = written  # sha256, size and (device, inode) of the bytes, when the store records them

    def commit(self) -> None:
        record = self._store.written
        try:
            os.replace(self._tmp, self._path)
        except OSError as err:
            self.discard()
            raise self._store._unwritable(err) from None
        if record is not None and self._written is not None:
            sha, size, inode = self._written
            try:
                st: os.stat_result | None = os.stat(self._path, follow_symlinks=False)
            except OSError:
                st = None
            # Only the file this process renamed into place (the same inode) is recorded by its identity.
            record.record(self._path.name, sha, size, st if st is not None and (st.st_dev, st.st_ino) == inode
                          else None)

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self._tmp.unlink()


class LocalStateStore:
    """A directory of files, one per name. With `written` (a folder in the work tree, memory/statefolder.py),
    what is written is recorded there, and only what was recorded is read back."""

    def __init__(self, directory: Path, written: Written | None = None) -> None:
        self.directory = directory
        self.written = written

    @property
    def location(self) -> str:
        return str(self.directory)

    def child(self, name: str) -> LocalStateStore:
        """The store of the subfolder `name`, recorded like this one."""
        return LocalStateStore(self.directory / check_name(name),
                               self.written.child(name) if self.written is not None else None)

    def get(self, name: str) -> bytes | None:
        path = self.directory / check_name(name)
        try:
            # Only a regular file, read no further than a state file can be: a FIFO here would block recall.
            if self.written is None:
                return read_regular(path, MAX_STATE_FILE_BYTES, follow_symlinks=False)
            data, st = read_regular_stat(path, MAX_STATE_FILE_BYTES, follow_symlinks=False)
        except (FileRefused, OSError):
            return None  # absent, unreadable or not a file counts as absent: the caller rebuilds, which rewrites it
        # Not what this machine wrote: absent too, so it is never loaded, and the next index run replaces it.
        return data if self.written.vouches(name, data, st, self.directory) else None

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
        written: tuple[str, int, tuple[int, int]] | None = None
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(data)
                if sync:
                    fh.flush()
                    os.fsync(fh.fileno())
                if self.written is not None:
                    fh.flush()
                    st = os.fstat(fh.fileno())
                    written = (hashlib.sha256(data).hexdigest(), st.st_size, (st.st_dev, st.st_ino))
        except OSError as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise self._unwritable(err) from None
        except BaseException:  # interrupted: leave nothing behind
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return _StagedFile(self, tmp, path, written)

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
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):  # a read-only `.git`, or file system
            fix = ("this user may not write there: make it writable (`git vivary index --yes` then builds the index), "
                   "or set `state_path` under [memory.local] to a git-ignored folder under .vivary/ that is")
        elif err.errno == errno.ENOSPC:
            fix = "the disk is full: free some space, then run `git vivary index --yes` again"
        else:
            fix = ("a file may be in the place of a folder on that path; remove it (the index is rebuilt by "
                   "`git vivary index --yes`)")
        return GitError(f"cannot write the memory index in {self.directory} ({err.strerror or err}): {fix}")

    def local_path(self, name: str) -> Path | None:
        path = self.directory / check_name(name)
        if self.written is not None:
            # Handed to hnswlib, which reads it itself: only while it is still the file this machine wrote.
            try:
                st = os.stat(path, follow_symlinks=False)
            except OSError:
                return None
            return path if self.written.unchanged(name, st) else None
        return path if path.is_file() and not path.is_symlink() else None

    def names(self) -> list[str]:
        try:
            return sorted(p.name for p in self.directory.iterdir() if p.is_file() and not p.name.startswith("."))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def delete_all(self) -> bool:
        if self.written is not None:
            self.written.forget()
        if self.directory.is_symlink():
            self.directory.unlink()  # not a folder of ours: the link goes, never what it leads to
            return True
        if not self.directory.exists():
            return False
        shutil.rmtree(self.directory)
        parent = self.directory.parent
        # Leave no empty `memory/` folder behind, but never remove one that holds other datasets.
        with contextlib.suppress(OSError):
            parent.rmdir()
        return True


def git_dir_store(vivary_dir: Path, dataset: str) -> LocalStateStore:
    """The store of `dataset` in its default place, `.git/vivary/memory/<dataset>/`. Something in the place of a
    folder on the way (a file; a symbolic link that leads to no folder, or out of the Git folder) is a `GitError`
    (exit 2) naming it, as `derived.py` decides for the rest of `.git/vivary`: read as a folder that holds
    nothing, a file made recall say there was no index yet and `index` fail on a folder it could not make; a
    link out of the Git folder had the index written wherever it led."""
    folder = vivary_dir / MEMORY / check_name(dataset)
    derived.refuse(vivary_dir, folder, needs=f"of the memory index {shown(str(folder))}",
                   then=", then `git vivary index --yes` builds the index again")
    hidden = derived.unsearchable(vivary_dir, folder)
    if hidden is not None:  # read as empty, recall said there was no index yet
        raise GitError(f"the memory index {shown(str(folder))}: {hidden}")
    return LocalStateStore(folder)


# --- what this machine wrote in a work-tree folder --------------------------------------------------------


class _Record(msgspec.Struct, frozen=True, array_like=True):
    sha256: str
    size: int
    stamp: tuple[int, ...] = ()  # device, inode, size, mtime_ns, ctime_ns once in place; () when unknown


def stamp(st: os.stat_result) -> tuple[int, ...]:
    """A file's identity: the same file, unchanged since (a write changes its ctime, which no user sets back)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


class Written:
    """What this machine wrote in one state folder in the work tree (memory/statefolder.py), kept under the Git
    directory (`.git/vivary/written/`): one small file per name, replaced atomically, so writers of different
    names never lose each other's record. Each holds the sha256 and size of what was written, and the file's
    identity once renamed into place (`stamp`). A file read back is ours while its identity is the recorded
    one, else while its sha256 is (a copy of our bytes); anything else is not ours. The identity spares the
    hashing (at 10,000 notes a recall reads 25 MB: 17-70 ms of sha256, growing with the vault), and tells
    whether a path may still be handed to hnswlib, which opens it itself."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def child(self, name: str) -> Written:
        """The record of the subfolder `name` (a `LocalStateStore.child`)."""
        return Written(self.folder / name)

    def _get(self, name: str) -> _Record | None:
        try:
            data = read_regular(self.folder / name, _MAX_RECORD, follow_symlinks=False)
            return msgspec.msgpack.decode(data, type=_Record)
        except (OSError, FileRefused, msgspec.DecodeError, msgspec.ValidationError):
            return None

    def record(self, name: str, sha256: str, size: int, st: os.stat_result | None) -> None:
        """`name` now holds `size` bytes whose digest is `sha256`, in the file `st` describes (None: unknown)."""
        data = msgspec.msgpack.encode(_Record(sha256, size, stamp(st) if st is not None else ()))
        tmp = self.folder / f".{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(data)
            os.replace(tmp, self.folder / name)
        except OSError as err:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise GitError(f"cannot record what was written in {self.folder} ({err.strerror or err}); the memory "
                           "state there cannot be vouched for") from None

    def vouches(self, name: str, data: bytes, st: os.stat_result, where: Path) -> bool:
        """Whether `data`, read from the file `st` describes, is what this machine wrote under `name`. Said once
        on stderr when it is not."""
        found = self._get(name)
        ok = found is not None and len(data) == found.size and (
            (bool(found.stamp) and stamp(st) == found.stamp) or hashlib.sha256(data).hexdigest() == found.sha256)
        if not ok and self.folder not in _SAID:
            _SAID.add(self.folder)  # once per folder: after an upgrade, every file of it is one this run did not write
            print(f"vivary: ignored {shown(name)} in {shown(str(where))}: this machine did not write it, or it changed "
                  "since (memory state in the work tree is only ever what vivary wrote here); `git vivary index "
                  "--yes` writes it again", file=sys.stderr)
        return ok

    def unchanged(self, name: str, st: os.stat_result) -> bool:
        """Whether the file `st` describes is still the one written under `name` (cheap: no byte is read)."""
        found = self._get(name)
        return found is not None and bool(found.stamp) and stamp(st) == found.stamp

    def forget(self) -> None:
        """Drop every record (the folder's state is being deleted)."""
        if self.folder.is_symlink():
            with contextlib.suppress(OSError):
                self.folder.unlink()
            return
        shutil.rmtree(self.folder, ignore_errors=True)
