"""The advisory locks in `.git/vivary/locks/` (memory/lock.py): a lock file `cache gc` removes while holding it
never lets two processes hold the lock at once. Real processes, real flock, a real repository's Git folder."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys

from conftest import Repo

from vivary_git.memory.lock import removing_index_lock

DATASET = "vivary-gone-0123456789ab"
WAITER = """import sys
from pathlib import Path
from vivary_git.memory.lock import index_lock
with index_lock(Path(sys.argv[1]), sys.argv[2]):
    print("held", file=sys.stderr, flush=True)
    sys.stdin.read()  # until the test closes it
"""


def test_a_run_waiting_on_a_lock_file_gc_removes_takes_the_lock_on_the_file_there(repo: Repo) -> None:
    vivary_dir = repo.path / ".git" / "vivary"
    path = vivary_dir / "locks" / f"index-{DATASET}.lock"
    waiter = None
    try:
        with removing_index_lock(vivary_dir, DATASET) as unlink:
            waiter = subprocess.Popen([sys.executable, "-c", WAITER, str(vivary_dir), DATASET],
                                      stdin=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            assert waiter.stderr is not None
            line = waiter.stderr.readline()  # it opened the file and waits for this lock
            assert "waiting for another `git vivary index` of this workspace" in line, line
            assert unlink() is True and not path.exists()  # removed while held
        assert waiter.stderr.readline() == "held\n"
        # The waiter holds the lock on the file at the path now, not on the one removed: a third process that opens
        # the path is kept out (before, it made a new file and locked it beside the waiter).
        assert path.is_file()
        fd = os.open(path, os.O_RDWR)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                pass
            else:
                raise AssertionError("two processes hold the index lock")
        finally:
            os.close(fd)
    finally:
        if waiter is not None:
            waiter.communicate("")
    assert waiter.returncode == 0

