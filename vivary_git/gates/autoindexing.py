"""Whether the hooks' background `index --auto` indexes this clone, for `hooks status`.

It takes three things: an installed hook that runs it (post-commit, post-checkout, post-merge, post-rewrite:
vivary's scripts, or a hook manager's file that runs them), a committed memory.toml that asks for it
(`auto_index = true`, the team's wish), and the user's own approval (`vivary.autoIndex`). The last is decided
where every hook decides it, memory/local/autoindex.py: this module only gathers the three, so that a user who
installed the hooks and set `auto_index = true` sees that nothing is indexed until they approve it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    from vivary_git.gates.install import AutoIndex, HookStatus
    from vivary_git.git import Repo

__all__ = ["INDEXING", "state"]

INDEXING = ("post-commit", "post-checkout", "post-merge", "post-rewrite")  # the hooks that run `index --auto`


def state(cwd: Path, hooks: list[HookStatus]) -> AutoIndex | None:
    """The auto-index of the repository at `cwd`, whose hooks are `hooks` (`install.status`); None where it does
    not matter: no work tree, or neither a hook that runs `index --auto` nor a memory.toml that asks for it."""
    from vivary_git.errors import GitError
    from vivary_git.gates.install import GATES, AutoIndex, _toplevel
    from vivary_git.git import try_open
    from vivary_git.memory.local.autoindex import approval

    top = _toplevel(cwd)
    if top is None:
        return None
    try:
        repo = try_open(top)
    except GitError:
        repo = None
    running = [h for h in hooks if h.hook in INDEXING and h.vivary_runs]
    # The workspaces they index (`--root`, repository-relative; a manager's file: the top); with none installed,
    # the ones the gates check, where a memory.toml could ask for an index nothing runs.
    roots = [r for h in running for r in (h.roots if h.state == "vivary" and h.roots else ["."])] or [
        r for h in hooks if h.hook in GATES and h.state == "vivary" for r in h.roots] or ["."]
    files: list[str] = []
    asked: list[str] = []
    unread: list[str] = []
    for root in dict.fromkeys(roots):
        name, asks, why = _asks(repo, root)
        files.append(name)
        if why:
            unread.append(why)
        elif asks:
            asked.append(name)
    if not running and not asked and not unread:
        return None
    found = approval(repo)
    return AutoIndex([h.hook for h in running], files, asked, found.approved, found.declined, found.said,
                     bool(running) and bool(asked) and found.approved, unread)


def _asks(repo: Repo | None, root: str) -> tuple[str, bool, str]:
    """(the memory.toml of the workspace at `root`, whether it sets auto_index = true, why it cannot be read or
    ""), read from HEAD's tree as the hooks' run reads it (`index --auto --rev` the commit): a file not committed
    yet asks for nothing there."""
    from vivary_git.config import MEMORY_FILE
    from vivary_git.errors import ConfigError, GitError
    from vivary_git.memory.config import parse_memory_config
    from vivary_git.source import tree_config

    name = MEMORY_FILE if root in (".", "") else f"{root}/{MEMORY_FILE}"
    if repo is None:
        return name, False, ""
    try:
        if repo.repo.head_is_unborn:
            return name, False, ""
        tree = str(repo.repo.head.peel(repo.pygit2.Commit).tree_id)
        data = tree_config(repo, tree, name)
        return name, data is not None and parse_memory_config(data, name).auto_index, ""
    except ConfigError as err:
        return name, False, str(err)
    except (GitError, KeyError, ValueError, repo.pygit2.GitError):
        return name, False, ""  # no commit to read (a HEAD that names none): the hooks' run indexes nothing either
