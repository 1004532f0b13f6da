"""One index writer at a time per dataset, one memory write at a time per repository: advisory locks in
`.git/vivary/locks/`.

Two `git vivary index --yes` runs at once (a post-commit hook firing while one runs by hand, two commits
in a row) used to embed everything twice and overwrite each other's state. The second now waits for the
first and then finds its work done: what the first embedded is in the vector cache, so the second embeds
only what is still missing (usually nothing).

The lock is `flock` on a file: the kernel releases it when its holder exits, however it exits (a killed
run never leaves a stale lock behind). The file holds the holder's pid, for the message. Where `fcntl`
does not exist (Windows) there is no lock and runs behave as before.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from vivary_git.escape import text as shown

__all__ = ["index_lock", "write_lock"]

LOCKS = "locks"


@contextlib.contextmanager
def index_lock(vivary_dir: Path, dataset: str, *, quiet: bool = False) -> Iterator[None]:
    """Hold the index lock of `dataset` (under `vivary_dir`, the repository's `.git/vivary/`), waiting for
    another holder first; says once on stderr that it waits, unless `quiet`."""
    with _flock(vivary_dir, f"index-{dataset}.lock", what="indexing", quiet=quiet,
                waiting="waiting for another `git vivary index` of this workspace{holder} to finish; then only "
                        "what it has not embedded is embedded"):
        yield


@contextlib.contextmanager
def write_lock(vivary_dir: Path) -> Iterator[None]:
    """One memory write at a time per repository (`memory/writes/commits.py`): from reading the branch's tip to
    putting the committed paths into the user's index and work tree. Without it, a second writer could
    read the tip just before the first committed and then see the first's note in the index as a change
    of the user's."""
    with _flock(vivary_dir, "memory-write.lock", what="writing", quiet=True, waiting=""):
        yield


@contextlib.contextmanager
def _flock(vivary_dir: Path, name: str, *, what: str, quiet: bool, waiting: str) -> Iterator[None]:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not on this platform
        yield
        return
    folder = vivary_dir / LOCKS
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError as err:
        # Cannot lock (a read-only .git?): go on as before rather than refuse; say so once.
        if not quiet:
            print(f"vivary: cannot take the lock {shown(name)} in {shown(str(folder))} ({err.strerror or err}); "
                  f"{what} without it", file=sys.stderr)
        yield
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not quiet and waiting:
                print(f"vivary: {waiting.format(holder=_holder(fd))}", file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def _holder(fd: int) -> str:
    try:
        raw = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {raw})" if raw.isdigit() else ""
