"""`.git/vivary/index.log`: what the hooks' background `index --auto` says, with nobody watching it.

Every hook that moves HEAD (post-commit, post-checkout, post-merge, post-rewrite) starts a run whose stdout and
stderr go here (commands/hooks.py). Kept readable: past 1 MiB the next run starts it afresh, and a line that is
already its last one is not written again. The line that would repeat is the one saying auto-indexing is asked
for and not approved: every commit and checkout said it again, and the log became that line a thousand times.
Said once, until anything else is said in between or the reason changes.
"""

from __future__ import annotations

import os
import stat
import sys
from typing import IO, TYPE_CHECKING

if TYPE_CHECKING:
    from vivary_git.git import Repo

__all__ = ["LIMIT", "NAME", "open_for_run", "said_last"]

NAME = "index.log"  # in the common Git folder's vivary/, shared by its linked worktrees
LIMIT = 1 << 20  # a log past this size is started afresh by the next run


def open_for_run(repo: Repo) -> IO[bytes]:
    """The log, open for appending (truncated first when it is past `LIMIT`), to hand to a background run.
    `GitError` when something in the way of it leads out of the Git folder (derived.py, as for all of .git/vivary);
    `OSError` when it cannot be opened."""
    from vivary_git import derived

    folder = repo.vivary_dir
    path = folder / NAME
    derived.refuse(folder, path, file=True, needs="of the background index's messages")
    folder.mkdir(parents=True, exist_ok=True)
    mode = "wb" if path.is_file() and path.stat().st_size > LIMIT else "ab"
    return open(path, mode)  # the caller hands it to the run, and closes it once the run has it


def said_last(repo: Repo | None, line: str) -> bool:
    """Whether this process's stderr is `repo`'s index log and `line` (with its line break) is already the last
    line in it. Never on a terminal, a pipe or any other file: a person who runs `index --auto` reads every line."""
    if repo is None:
        return False
    try:
        mine = os.fstat(sys.stderr.fileno())
        fd = os.open(repo.vivary_dir / NAME, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except (OSError, ValueError, AttributeError):  # no stderr (closed, or a stream without a descriptor), no log
        return False
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode) or (found.st_dev, found.st_ino) != (mine.st_dev, mine.st_ino):
            return False
        want = line.encode(sys.stderr.encoding or "utf-8", sys.stderr.errors or "strict")
        start = max(0, found.st_size - len(want) - 1)
        os.lseek(fd, start, os.SEEK_SET)
        tail = os.read(fd, found.st_size - start)
    except (OSError, UnicodeError):
        return False
    finally:
        os.close(fd)
    return tail == want or tail.endswith(b"\n" + want)
