"""Who approves auto-indexing: the person whose machine runs it, in their own Git config.

`[memory.local] auto_index = true` in .vivary/memory.toml is committed with the notes: the team's wish, and in a
clone of someone else's repository a stranger's word. With vivary's hooks where every repository runs them (a
global `core.hooksPath`, the pre-commit framework's or husky's hooks), a `git clone`, a checkout, a commit or a
pull starts `git vivary index --auto`, which embeds the repository's public notes and writes derived state on
this machine. That takes the approval of whoever owns the machine, never of a file they were handed.

`approval(repo)` is the one rule, asked by `index --auto`, which every hook runs: `vivary.autoIndex = true` in
Git config the user writes (this clone's `.git/config`, their global or system config, a `git -c`), never a
value Git reads from a file inside the work tree (an `include.path` naming a file the repository ships), which
is the repository's word again. Commands a person types (`index --yes`) are their approval and do not ask.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from vivary_git.git import Repo

__all__ = ["APPROVE", "KEY", "Approval", "approval", "verdict"]

KEY = "vivary.autoIndex"
APPROVE = f"git config {KEY} true"  # this clone only; `--global` approves every clone of this user's


class Approval(msgspec.Struct, frozen=True):
    """Whether auto-indexing is approved here, and `said`: where the approval comes from, or why there is none
    (words for people; values in it are not escaped yet). `declined`: the user's own config says no
    (`vivary.autoIndex = false`), an answer, so nobody needs telling what to run."""

    approved: bool
    said: str
    declined: bool = False


def approval(repo: Repo | None) -> Approval:
    """`vivary.autoIndex` as Git reads it for `repo` (the last value wins, as everywhere in Git), counted only when
    it is true and comes from the user's own config: a repository's local or worktree config may `include` a
    file, and one inside the work tree (outside the Git folder) is the repository's, not the user's."""
    from vivary_git.errors import GitError

    if repo is None:
        return Approval(False, f"not a Git repository, whose config would hold {KEY}")
    try:
        proc = repo.git(["config", "--show-scope", "--show-origin", "--type=bool", "-z", "--get", KEY], check=False)
    except GitError as err:
        return Approval(False, f"{KEY} could not be read ({err})")
    if proc.returncode == 1:
        return Approval(False, f"{KEY} is not set")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    if proc.returncode != 0 or len(fields) < 3:
        said = [line for line in proc.stderr.decode("utf-8", "replace").splitlines() if line.strip()]
        why = said[-1].removeprefix("fatal: ") if said else f"`git config` exit code {proc.returncode}"
        return Approval(False, f"{KEY} is not true or false: {why}")
    scope, origin, value = fields[:3]
    where = f"from {origin.removeprefix('file:')}" if origin.startswith("file:") else f"from the {scope} line"
    shipped = _shipped(repo, scope, origin)
    if value != "true":
        # Only ever off, so it stands; but named, as a `true` there is: the user's own config did not say it.
        if shipped is not None:
            return Approval(False, f"{KEY} = false comes from {shipped}, a file in the work tree, which the "
                            "repository can ship; it can only turn auto-indexing off", declined=True)
        return Approval(False, f"{KEY} = false, {where}", declined=True)
    if shipped is not None:
        return Approval(False, f"{KEY} = true comes from {shipped}, a file in the work tree, which the repository "
                        "can ship: it is not your approval")
    return Approval(True, f"{KEY} = true, {where}")


def verdict(found: Approval) -> str:
    """`found` where a memory.toml asks for auto-indexing, in the one wording doctor's memory line and
    `hooks status` share: approved, declined, or not approved and what approves it."""
    if found.approved:
        return f"approved here ({found.said})"
    if found.declined:
        return f"declined here ({found.said}): the hooks index nothing"
    return f"not approved here ({found.said}): the hooks index nothing until `{APPROVE}`"


def _shipped(repo: Repo, scope: str, origin: str) -> Path | None:
    """The file a local or worktree value came from, when it lies in the work tree (an `include` of a file the
    repository ships); None for the user's own files and for values from no file (`git -c`)."""
    if scope not in ("local", "worktree") or not origin.startswith("file:"):
        return None
    path = (Path(repo.workdir or repo.git_dir) / origin.removeprefix("file:")).resolve()
    return path if _in_work_tree(repo, path) else None


def _in_work_tree(repo: Repo, path: Path) -> bool:
    """Whether `path` lies in `repo`'s work tree and outside its Git folders (`.git/config` is the user's)."""
    top = repo.workdir
    if top is None or not path.is_relative_to(top):
        return False
    return not any(path.is_relative_to(d) for d in (repo.git_dir, repo.common_dir))
