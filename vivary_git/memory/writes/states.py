"""What Git is in the middle of, read as Git reads it, so a memory write refuses the states a commit of its own
would break, in the user's words: a rebase or a bisect in this work tree (HEAD detached by it), and a memory branch
another work tree has checked out or is rebasing (what `git branch -f` refuses: "used by worktree").

Git keeps this state in files of each work tree's own Git directory: `HEAD`, `rebase-merge/head-name` or
`rebase-apply/head-name` (a rebase; `rebase-apply/applying` marks `git am`, which keeps its branch checked out)
and `BISECT_START` (the branch a bisect started from). The main work tree's are in the common Git directory, a
linked one's under `worktrees/ID/`, whose `gitdir` file names the work tree's `.git`."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import msgspec

from vivary_git import git
from vivary_git.escape import text


class InProgress(msgspec.Struct, frozen=True):
    """An operation Git has under way in one work tree: `rebase` or `bisect`, of `branch` (its full ref, or None
    when it started from a detached HEAD)."""

    op: str
    branch: str | None


def _read(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            return f.read(4096).decode("utf-8", "surrogateescape").strip()
    except (OSError, ValueError):
        return None


def in_progress(git_dir: Path) -> InProgress | None:
    """The rebase or bisect under way in the work tree whose Git directory is `git_dir`, None when neither is."""
    for folder in ("rebase-merge", "rebase-apply"):
        if not (git_dir / folder).is_dir() or (git_dir / folder / "applying").exists():
            continue  # `applying`: `git am`, which commits on the branch still checked out
        head = _read(git_dir / folder / "head-name")
        return InProgress("rebase", head if head and head.startswith("refs/heads/") else None)
    if (git_dir / "BISECT_START").exists():
        start = _read(git_dir / "BISECT_START") or ""  # a branch's name, or the commit a detached HEAD was at
        detached = not start or re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", start) is not None
        return InProgress("bisect", None if detached else f"refs/heads/{start}")
    return None


def _work_trees(repo: git.Repo) -> list[tuple[Path, str]]:
    """Each work tree's Git directory, with the work tree as it is named to the user: the main one (unless the
    repository is bare) and every linked one Git lists under `worktrees/`, this one included."""
    found: list[tuple[Path, str]] = []
    common = repo.common_dir
    if (git._config_value(str(common), "core.bare") or "false").lower() not in ("true", "yes", "on", "1"):
        main = repo.workdir if repo.git_dir == common and repo.workdir is not None else common.parent
        found.append((common, str(main)))
    with contextlib.suppress(OSError):
        for entry in sorted((common / "worktrees").iterdir()):
            dot_git = _read(entry / "gitdir")
            found.append((entry, str(Path(dot_git).parent) if dot_git else str(entry)))
    return found


def held_elsewhere(repo: git.Repo, ref: str) -> str | None:
    """Why `ref` may not be moved from here by a memory commit, or None: it is checked out in another work tree
    (its index there would lose the memory: `git status` shows it deleted, the next commit there deletes it), or
    being rebased in any work tree (`git rebase --continue` would then fail to move the branch, and `--abort` put
    it back without the memory). Said with where, and the fix."""
    here = repo.git_dir
    branch = ref.removeprefix("refs/heads/")
    other = "name a branch no work tree has checked out in [memory.remember] branch in .vivary/memory.toml"
    for git_dir, where in _work_trees(repo):
        state = in_progress(git_dir)
        if state is not None and state.op == "rebase" and state.branch == ref:
            return (f"{ref} is being rebased in the work tree at {text(where)}, and a memory committed to it now "
                    f"would make `git rebase --continue` fail (and `git rebase --abort` drop the memory); finish "
                    f"the rebase there (`git rebase --continue`, or `git rebase --abort`) and write it again, or "
                    f"{other}; nothing was committed")
        if git_dir == here:
            continue  # checked out here is the ordinary case: the write brings this index up to date
        if _read(git_dir / "HEAD") == f"ref: {ref}":
            return (f"{ref} is checked out in the work tree at {text(where)}, whose index would then lack the "
                    f"memory (`git status` there shows it deleted, and the next commit there deletes it); write "
                    f"it from that work tree, or {other}; nothing was committed. "
                    f"If that folder is gone, `git worktree prune` forgets it ({text(branch)} is then free)")
    return None


def detached_by(repo: git.Repo, write: str = "commit this memory write to") -> str | None:
    """What to do about a HEAD detached by a rebase or bisect in this work tree, or None when neither is under way:
    `git switch` is no answer there (Git refuses it during a rebase, and it would end a bisect's checkout). `write`
    as for `commits.target_ref`."""
    state = in_progress(repo.git_dir)
    if state is None:
        return None
    of = f" of {state.branch.removeprefix('refs/heads/')}" if state.branch else ""
    if state.op == "rebase":
        return (f"a rebase{of} is in progress, so HEAD is detached and there is no branch to {write}; "
                "finish it (`git rebase --continue`, or `git rebase --abort`) and write it again, or send memories "
                "to their own branch with [memory.remember] branch = \"vivary/memory\" in .vivary/memory.toml")
    return (f"a bisect{of} is in progress, so HEAD is detached and there is no branch to {write}; end "
            "it (`git bisect reset`) and write it again, or send memories to their own branch with "
            "[memory.remember] branch = \"vivary/memory\" in .vivary/memory.toml")
