"""Where a memory provider may keep its derived state, and what this machine wrote there.

Derived state (the vectors, the HNSW graph, the keyword index, the manifests that vouch for them, Cognee's
manifest) decides what recall ranks, so it is only ever what this machine wrote. The local provider's
default folder, `.git/vivary/memory/`, is under the Git directory, where no clone, checkout or pull writes.
A folder in the work tree is named by a committed file (`state_path` in `.vivary/memory.toml`), so a
stranger's repository could point it at an index it ships. `state_folder` decides whether such a folder may
be used, before anything in it is read:

* no folder on the way to it is a symbolic link (it would lead elsewhere);
* no file under it is tracked (`git ls-files`): a tracked file came with the repository, not from this
  machine;
* Git ignores it (`privacy.git_ignores`, Git's own `check-ignore`), so nothing written there is committed.

Otherwise the command refuses (exit 3), naming the folder, the rule and the fix.

An ignored, untracked folder can still hold files another process put there. So what the state store
writes in a work-tree folder is recorded under the Git directory (state.py `Written`,
`.git/vivary/written/`), and read back only as recorded: anything else is not ours and reads as absent.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from vivary_git import derived
from vivary_git.errors import GitError, RefusedError
from vivary_git.escape import text as shown
from vivary_git.memory.state import LocalStateStore, Written

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace

__all__ = ["RULE", "WRITTEN", "state_folder", "work_tree_store"]

WRITTEN = "written"  # under .git/vivary/
RULE = "a memory state folder in the work tree must be ignored by Git and hold no tracked file"


def state_folder(ws: Workspace, configured: str, key: str) -> tuple[Path, Written]:
    """The folder `configured` names (relative to the workspace root, under `.vivary/`: config.py), when
    memory state may be kept there, and the record of what this machine writes in it; else `RefusedError`
    (exit 3) naming the folder, the rule and the fix. `key` is the setting that named it, for messages
    (`memory.local.state_path`)."""
    folder = ws.source.root / configured
    repo = ws.source.repo
    if repo is None or repo.workdir is None:
        raise RefusedError(
            f"{shown(str(folder))} ({key}) is not in a Git work tree, so Git cannot say that it ignores it ({RULE}); "
            f"run `git init` and add it to .gitignore, or leave {key} empty"
        )
    top = repo.workdir
    try:
        rel = folder.relative_to(top).as_posix()
    except ValueError:
        raise RefusedError(f"{shown(str(folder))} ({key}) is not inside the work tree {shown(str(top))}; leave "
                           f"{key} empty to keep the state under .git/vivary/") from None
    here = top
    for part in rel.split("/"):
        here = here / part
        if here.is_symlink() or (here.exists() and not here.is_dir()):
            what = "a symbolic link" if here.is_symlink() else "not a folder"
            raise RefusedError(
                f"{shown(here.relative_to(top).as_posix())} is {what}, on the way to the memory state folder "
                f"{shown(rel)} ({key}): a state folder is a plain folder in the work tree; remove it (it holds only "
                f"derived state), or leave {key} empty to keep the state under .git/vivary/"
            )
    tracked = _tracked(ws, rel)
    if tracked:
        raise RefusedError(
            f"{shown(rel)} ({key}) holds {len(tracked)} file(s) tracked by Git, {shown(tracked[0])} first: {RULE}, "
            "and a tracked file came with the repository, not from this machine (a shipped index would decide "
            f"what recall ranks), so nothing in it was read; untrack them with `git rm -r --cached -- {shown(rel)}`, "
            f"commit, and make sure .gitignore lists `/{shown(rel)}/`"
        )
    from vivary_git import privacy

    rule = privacy.git_ignores(top, [rel], git_dir=repo.pinned_git_dir)[0]
    if not rule:
        raise RefusedError(
            f"{shown(rel)} ({key}) is in the work tree but Git does not ignore it: {RULE} (what is kept there could "
            f"be committed, and only what this machine wrote may be read); add `/{shown(rel)}/` to .gitignore "
            f"(`git check-ignore -v {shown(rel)}/` then names the rule), or leave {key} empty to keep the state under "
            ".git/vivary/"
        )
    # The record is the folder's, by its path from the (resolved) top: the same folder however it was reached.
    digest = hashlib.sha256(os.fsencode(str(top / rel))).hexdigest()[:32]
    record = repo.vivary_dir / WRITTEN / digest
    # The record decides what is read back: never kept where a link out of the Git folder leads (derived.py).
    derived.refuse(repo.vivary_dir, record, needs=f"of the record of what this machine wrote in {shown(rel)}")
    return top / rel, Written(record)


def work_tree_store(ws: Workspace, configured: str, key: str) -> LocalStateStore:
    """A state store over the folder `configured` names, once `state_folder` allows it: what it writes is
    recorded, and only that is read back."""
    folder, written = state_folder(ws, configured, key)
    return LocalStateStore(folder, written)


def _tracked(ws: Workspace, rel: str) -> list[str]:
    """The files under `rel` that Git's index tracks (up to a few, for the message)."""
    repo = ws.source.repo
    assert repo is not None
    try:
        proc = repo.git(["--literal-pathspecs", "ls-files", "-z", "--cached", "--", rel], check=False)
    except GitError as err:
        raise RefusedError(f"cannot tell whether Git tracks files in {shown(rel)} ({err}); {RULE}") from None
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"
        raise RefusedError(f"cannot tell whether Git tracks files in {shown(rel)} ({said}); {RULE}")
    return [os.fsdecode(p) for p in proc.stdout.split(b"\0") if p]
