"""Where derived state may be written under `.git/vivary/`: one decision for every writer there.

Derived state lives in the repository's common Git folder and nowhere else. Each place a command writes under
`.git/vivary/` (the memory index, the index and write locks, the working tree snapshot's scratch folder, the
hot caches) is looked at here, thing by thing from the Git folder down, before anything is made:

- a missing folder is fine: the writer makes it (this module never makes or removes anything, so a command
  that only reads leaves no state behind);
- a folder is fine;
- a symbolic link is fine only when it leads to a folder inside the Git folder: one that leads out of it
  (derived state would be written in a place the user did not choose for it), to a file or to nothing is
  refused;
- anything else (a file, a FIFO) where a folder belongs is refused; and so is a folder or a symbolic link where
  a file belongs (`file=True`).

A refusal names the first such thing, what was expected there and the fix (remove it: vivary keeps only
rebuildable data there). Callers choose what a refusal means: a usage error (exit 2) where the command cannot
do its job without the place (`refuse`), the cache left off where it is optional (`damage`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from vivary_git.errors import GitError
from vivary_git.escape import text as shown

__all__ = ["damage", "refuse", "unsearchable"]

FIX = "remove it (vivary keeps only rebuildable data there)"


def damage(vivary_dir: Path, path: Path, *, needs: str, file: bool = False) -> str | None:
    """Why `path` (a folder under `vivary_dir`, the common Git folder's `vivary/`; a file with `file`) may not
    be written, naming the first thing on the way that is not what it must be; None when it may. `needs` says
    what the place is for ("of the memory index /x", "for the working tree's snapshot"), after "a folder"."""
    top = vivary_dir.parent
    try:
        parts = path.relative_to(top).parts
    except ValueError:
        raise ValueError(f"{path} is not under {top}") from None
    inside = os.path.realpath(top)
    here = top
    for part in parts:
        here = here / part
        last = file and here == path
        try:
            st = os.lstat(here)
        except FileNotFoundError:
            return None  # made by the writer, a real folder
        except OSError:
            return None  # cannot look (an unreadable Git folder): the writer's own error says so
        kind = _wrong(here, st, inside, last)
        if kind is not None:
            place = f"the file {needs}" if last else f"a folder {needs}"
            return f"{shown(str(here))}: {kind} is in the place of {place}; {FIX}"
    return None


def refuse(vivary_dir: Path, path: Path, *, needs: str, then: str = "", file: bool = False) -> None:
    """Raise a `GitError` (exit 2) when `damage` finds something in the way of `path`; `then` follows the fix."""
    why = damage(vivary_dir, path, needs=needs, file=file)
    if why is not None:
        raise GitError(why + then)


def unsearchable(vivary_dir: Path, path: Path) -> str | None:
    """Why `path` (under `vivary_dir`) cannot even be looked at: a folder on the way that this user may not search
    (a `.git/vivary` left mode 000 by a run under `umask 0777`, a Git folder of another user's), named with the
    fix; None when it can be, or is simply not there yet. `damage` lets such a folder pass, for the writer's own
    error to say; a reader's `exists()` raised PermissionError instead, a traceback. Naming the folder in the way,
    not `path`, lets the caches under it say so once."""
    here = vivary_dir.parent
    for part in path.relative_to(here).parts:
        try:
            os.stat(here / part)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            return (f"cannot look into {shown(str(here))} ({err.strerror or err}); make it readable and searchable "
                    f"(`chmod u+rwx {shown(str(here))}`)")
        here = here / part
    return None


def _wrong(here: Path, st: os.stat_result, inside: str, last: bool) -> str | None:
    """What is wrong with `here` (lstat `st`) as a folder on the way (a file when `last`), or None."""
    if stat.S_ISLNK(st.st_mode):
        target = os.path.realpath(here)
        if last:
            return "a symbolic link"
        if not os.path.isdir(target):
            return "a symbolic link that leads to no folder"
        if os.path.commonpath([inside, target]) != inside:
            return f"a symbolic link that leads out of the Git folder (to {shown(target)})"
        return None
    if last:
        return None if stat.S_ISREG(st.st_mode) else "a folder" if stat.S_ISDIR(st.st_mode) else "a special file"
    return None if stat.S_ISDIR(st.st_mode) else "a file"
