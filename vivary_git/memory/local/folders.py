"""The state folders under `.git/vivary/memory/`: which workspace each was written for, and which are dead.

A folder is named by its workspace's absolute path (snapshot.py `dataset_name`), so a repository moved or copied
to another folder, or a linked work tree, starts a new one beside the old (siblings.py reads them for vectors).
Nothing removes the old one as the repository moves: each is a whole index (~1.5 MB at 300 notes). So `index`
writes, in the folder it keeps, the workspace path it was written for (`OWNER`), and `cache gc` removes a folder
whose workspace is dead:

* the path it names is no folder any more (the repository moved, the work tree was removed), or
* the folder there belongs to another repository (this one is a copy: the original keeps its own index), or to
  none (no `.git` in it or above it).

A folder is kept when that cannot be told: no `OWNER` (written before it was recorded), one that does not name
the path the folder's name was made from, a symbolic link, a repository that cannot be opened, or a work tree
whose link to its repository is broken (a `.git` that leads nowhere: `git worktree repair` mends it). Only an
explicit command removes anything (`git vivary cache gc`, `--dry-run` to see), never a read; a work tree that
exists and shares this repository's Git directory is live, whichever branch it is on; `doctor` warns of dead ones.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import msgspec

from vivary_git.memory.state import MEMORY, LocalStateStore, check_name

__all__ = ["OWNER", "DeadFolder", "claim", "dead_folders", "remove", "unowned"]

OWNER = "workspace.path"  # in a state folder: the resolved workspace path it was written for, as bytes


class DeadFolder(msgspec.Struct, frozen=True):
    """A state folder whose workspace is gone: its path, the workspace it was written for, and why it is dead."""

    folder: str
    workspace: str
    why: str


def claim(store: LocalStateStore, root: Path) -> None:
    """Record in `store`'s folder the workspace it is written for (once; again only if it changed)."""
    want = os.fsencode(str(root.resolve()))
    if store.get(OWNER) != want:
        store.put(OWNER, want, sync=False)


def _folders(common_dir: Path) -> list[Path]:
    top = common_dir / "vivary" / MEMORY
    try:
        found = sorted(top.iterdir())
    except OSError:
        return []
    out = []
    for path in found:
        try:
            check_name(path.name)
        except ValueError:
            continue  # a temporary file, or nothing an index is kept under
        if not path.is_symlink() and path.is_dir():
            out.append(path)
    return out


def _owner(folder: Path) -> str | None:
    """The workspace path `folder` was written for, when its record names the path its name was made from."""
    raw = LocalStateStore(folder).get(OWNER)
    if raw is None:
        return None
    digest = hashlib.sha256(raw).hexdigest()[:12]  # as dataset_name hashes it (`surrogateescape`: the same bytes)
    return os.fsdecode(raw) if folder.name.endswith(f"-{digest}") else None


def unowned(common_dir: Path) -> list[str]:
    """The state folders that name no workspace (written before it was recorded): kept, for they may be live."""
    return [str(f) for f in _folders(common_dir) if _owner(f) is None]


def dead_folders(common_dir: Path) -> list[DeadFolder]:
    """The state folders under `.git/vivary/memory/` of the repository whose common Git directory is `common_dir`
    whose workspace is gone. Reads only."""
    from vivary_git import git
    from vivary_git.errors import GitError

    out: list[DeadFolder] = []
    common_dir = common_dir.resolve()
    for folder in _folders(common_dir):
        owner = _owner(folder)
        if owner is None:
            continue
        root = Path(owner)
        if not root.is_dir():
            out.append(DeadFolder(str(folder), owner, "that folder is gone"))
            continue
        try:
            there = git.Repo(root, environment=False)
        except git.NotARepository:
            if not any((p / ".git").exists() or (p / ".git").is_symlink() for p in (root, *root.parents)):
                out.append(DeadFolder(str(folder), owner, "that folder is in no Git repository now"))
            # else a work tree whose link to its repository is broken (moved with it: `git worktree repair`): kept
            continue
        except GitError:
            continue  # a repository that cannot be opened now may be this one: kept
        if there.common_dir != common_dir:
            out.append(DeadFolder(str(folder), owner, f"that folder is another repository's ({there.common_dir})"))
    return out


def remove(common_dir: Path, dead: DeadFolder) -> bool:
    """Remove a dead state folder, under its index lock (an index run of it, if any, finishes first), and that lock's
    file (`.git/vivary/locks/index-<dataset>.lock`) while it is held: a run that waited on it then locks the file
    at the path anew (memory/lock.py). False when the folder is not there any more, or has become a symbolic link."""
    from vivary_git.memory.lock import removing_index_lock

    folder = Path(dead.folder)
    with removing_index_lock(common_dir / "vivary", folder.name) as unlink_lock:
        if folder.is_symlink() or not folder.is_dir():
            return False
        shutil.rmtree(folder)
        unlink_lock()
    return True
