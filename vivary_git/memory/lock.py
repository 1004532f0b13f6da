"""One index writer at a time per dataset, one memory write at a time per repository: advisory locks in
`.git/vivary/locks/`.

Two `git vivary index --yes` runs at once (a post-commit hook firing while one runs by hand, two commits
in a row) used to embed everything twice and overwrite each other's state. The second now waits for the
first and then finds its work done: what the first embedded is in the vector cache, so the second embeds
only what is still missing (usually nothing).

The lock is `flock` on a file: the kernel releases it when its holder exits, however it exits (a killed
run never leaves a stale lock behind). The file holds the holder's pid, for the message. `cache gc` removes the
index lock file of a dataset it removes, while holding that lock; a process that waited on the removed file finds
it gone once it has the lock, and takes the lock again on the file at the path, so two never hold it at once.
Where `fcntl` does not exist (Windows) there is no lock and runs behave as before. Where the lock cannot be taken
because `.git/vivary` cannot be written (a read-only repository), the run goes on without it, saying so; where something
else is in the place of the locks folder or a lock file (a file, a symbolic link that leads out of the Git folder
or to no folder), it refuses (exit 2, naming it): going on would let two writers race, or write outside the Git
folder. What may stand on the way is `derived.py`'s decision, the same as for the memory index and the snapshot.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from vivary_git import derived
from vivary_git.errors import GitError
from vivary_git.escape import text as shown

__all__ = ["index_lock", "removing_index_lock", "write_lock"]

LOCKS = "locks"
# What a damaged `.git/vivary` gives (a file where a folder is, or the reverse, a symbolic link): refused, never
# worked around. Any other error (a read-only repository) leaves the run unlocked, as it would be without fcntl.
_DAMAGED = (errno.ENOTDIR, errno.EEXIST, errno.EISDIR, errno.ELOOP)


@contextlib.contextmanager
def index_lock(vivary_dir: Path, dataset: str, *, quiet: bool = False) -> Iterator[None]:
    """Hold the index lock of `dataset` (under `vivary_dir`, the repository's `.git/vivary/`), waiting for
    another holder first; says once on stderr that it waits, unless `quiet`."""
    with _flock(vivary_dir, _index_name(dataset), what="indexing", quiet=quiet,
                waiting="waiting for another `git vivary index` of this workspace{holder} to finish; then only "
                        "what it has not embedded is embedded"):
        yield


@contextlib.contextmanager
def removing_index_lock(vivary_dir: Path, dataset: str) -> Iterator[Callable[[], bool]]:
    """Hold the index lock of `dataset` quietly, as `index_lock` does, for removing the dataset (`cache gc`): the
    function given removes the lock file while it is held, and says whether it did. It removes nothing where no
    lock is held (no `fcntl`, a read-only `.git`): the file may be another process's lock then."""
    path = vivary_dir / LOCKS / _index_name(dataset)
    with _flock(vivary_dir, path.name, what="indexing", quiet=True, waiting="") as held:
        def unlink() -> bool:
            if not held:
                return False
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            return True

        yield unlink


@contextlib.contextmanager
def write_lock(vivary_dir: Path) -> Iterator[None]:
    """One memory write at a time per repository (`memory/writes/commits.py`): from reading the branch's tip to
    putting the committed paths into the user's index and work tree. Without it, a second writer could
    read the tip just before the first committed and then see the first's note in the index as a change
    of the user's."""
    with _flock(vivary_dir, "memory-write.lock", what="writing", quiet=True, waiting=""):
        yield


def _index_name(dataset: str) -> str:
    return f"index-{dataset}.lock"


@contextlib.contextmanager
def _flock(vivary_dir: Path, name: str, *, what: str, quiet: bool, waiting: str) -> Iterator[bool]:
    """Hold the lock `name`; yields whether it is held (False: going on without it, as said above)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on this platform
        yield False
        return
    folder = vivary_dir / LOCKS
    path = folder / name
    derived.refuse(vivary_dir, path, file=True, needs=_needs(path, what))
    while True:
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as err:
            if err.errno in _DAMAGED:
                raise _damaged(vivary_dir, path, what, err) from None
            # Cannot lock (a read-only .git?): go on as before rather than refuse; say so once.
            if not quiet:
                print(f"vivary: cannot take the lock {shown(name)} in {shown(str(folder))} ({err.strerror or err}); "
                      f"{what} without it", file=sys.stderr)
            yield False
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not quiet and waiting:
                    print(f"vivary: {waiting.format(holder=_holder(fd))}", file=sys.stderr, flush=True)
                fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        if _still_there(fd, path):
            break
        # The holder we waited for removed the file (`cache gc`, removing its dataset): a lock on it excludes no
        # one who opens the path now, so the lock is taken again on the file there.
        os.close(fd)
        quiet = True  # the wait was said once
    try:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield True
    finally:
        os.close(fd)  # releases the lock


def _still_there(fd: int, path: Path) -> bool:
    """Whether the lock file `fd` is still the file at `path` (not removed, nor replaced, since it was opened)."""
    try:
        there = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: the lock taken stands, as it did before files were ever removed
    mine = os.fstat(fd)
    return (mine.st_dev, mine.st_ino) == (there.st_dev, there.st_ino)


def _needs(path: Path, what: str) -> str:
    return f"of the lock {shown(str(path))} that keeps a second process from {what} at the same time"


def _damaged(vivary_dir: Path, path: Path, what: str, err: OSError) -> GitError:
    """The error for the lock file `path` that could not be taken because something is in the place of a folder
    on its way or of the lock file itself (put there since `derived.refuse` looked): it names the first such
    thing, as `derived.damage` decides, or the lock file when nothing is left in the way."""
    why = derived.damage(vivary_dir, path, file=True, needs=_needs(path, what))
    return GitError(why or f"{shown(str(path))}: cannot be made the file {_needs(path, what)} "
                           f"({err.strerror or err}); {derived.FIX}")


def _holder(fd: int) -> str:
    try:
        raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {raw})" if raw.isdigit() else ""
