"""Trust in the shared cache: what may read it (`vivary.cacheTrust`), signed cache commits
(`vivary.cacheSign`) and their verification by Git, and whether the cache is on at all.

docs/cache.md, "Trust": gates read none; other commands read nothing by default, the newest commit whose
signature `git verify-commit` accepts with `signed`, and whatever the ref holds with `any`.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from vivary_git.refnames import CACHE_REF
from vivary_git.store import format as fmt  # its bounds read through the module: one value for every reader
from vivary_git.store.read import _tip

if TYPE_CHECKING:
    from vivary_git.git import Repo


TRUST_KEY = "vivary.cacheTrust"
SIGN_KEY = "vivary.cacheSign"
TRUST_LEVELS = ("none", "signed", "any")
_verified: dict[tuple[str, str], bool] = {}


class SigningError(Exception):
    """`vivary.cacheSign` is on but Git could not sign the cache commit."""


def trust(repo: Repo) -> str:
    """`git config vivary.cacheTrust`: `none` (the default: no command reads the shared cache),
    `signed` (commands that are not gates read the newest cache commit signed by a key Git's
    signature verification accepts) or `any` (they read whatever the ref holds). An unknown value is
    `none`, said once on stderr."""
    try:
        said = repo.setting(TRUST_KEY)
    except ValueError:
        return "none"
    if said is None:
        return "none"
    value = said.strip().lower()
    if value not in TRUST_LEVELS:
        print(f"vivary: {TRUST_KEY} = {value[:40]!r} is not one of {', '.join(TRUST_LEVELS)}; the shared cache is "
              "not read (`git config vivary.cacheTrust signed|any` to read it)", file=sys.stderr)
        return "none"
    return value


def signing(repo: Repo) -> bool:
    """`git config vivary.cacheSign true`: cache commits are signed by Git (`git commit-tree -S`, with
    `gpg.format`, `user.signingKey`), so clones with `vivary.cacheTrust = signed` can trust them."""
    return _config_bool(repo, SIGN_KEY, default=False)


def verified(repo: Repo, commit: str) -> bool:
    """Whether `git verify-commit` accepts `commit`'s signature (a good signature by a key Git trusts:
    for SSH keys, one listed in `gpg.ssh.allowedSignersFile`). Unsigned: False, without running Git."""
    key = (str(repo.git_dir), commit)
    got = _verified.get(key)
    if got is None:
        pygit2 = repo.pygit2
        try:
            signature, _ = repo.repo[commit].peel(pygit2.Commit).gpg_signature
        except (KeyError, ValueError, pygit2.GitError):
            signature = None
        got = False
        if signature is not None:
            from vivary_git.errors import GitError

            try:
                got = repo.git(["verify-commit", commit], check=False).returncode == 0
            except GitError:
                got = False
        _verified[key] = got
    return got


def newest_verified(repo: Repo, ref: str = CACHE_REF) -> str | None:
    """The newest commit on `ref`'s first-parent chain whose signature verifies (at most `CHAIN_LIMIT`
    back: a chain is never longer), or None."""
    pygit2 = repo.pygit2
    commit = _tip(repo, ref)
    for _ in range(fmt.CHAIN_LIMIT + 1):
        if commit is None:
            return None
        if verified(repo, commit):
            return commit
        try:
            parents = repo.repo[commit].peel(pygit2.Commit).parent_ids
        except (KeyError, ValueError, pygit2.GitError):
            return None
        commit = str(parents[0]) if parents else None
    return None


def _signed_commit(repo: Repo, tree: str, parents: list[str], message: str) -> str:
    from vivary_git import git
    from vivary_git.errors import GitError

    env = {**os.environ, "GIT_AUTHOR_NAME": "vivary-git", "GIT_AUTHOR_EMAIL": "vivary-git@localhost",
           "GIT_COMMITTER_NAME": "vivary-git", "GIT_COMMITTER_EMAIL": "vivary-git@localhost"}
    try:
        return git.commit_tree(repo, tree, parents, message, sign=True, env=env)
    except git.SigningFailed as err:
        raise SigningError(f"{SIGN_KEY} is on but Git could not sign the cache commit: {err.why} "
                           "(check user.signingKey and gpg.format)") from None
    except GitError as err:
        raise SigningError(f"cannot sign the cache commit ({err})") from None


def _config_bool(repo: Repo, key: str, *, default: bool) -> bool:
    try:
        value = repo.setting(key, boolean=True)
    except ValueError:
        return default
    return default if value is None else value == "true"
