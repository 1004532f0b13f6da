"""`created`/`updated` for every file from ONE walk of history (tropo runs `git log` per file).

Dates are author dates as `YYYY-MM-DD` (what tropo derives), keyed by repository path, and cached
by commit id, so a second run costs one file read. Only needed when `derive` names these fields and
a document declares one (W210).
"""

from __future__ import annotations

import datetime as dt

import msgspec

from vivary_git import git
from vivary_git.localcache import ObjectCache

Dates = dict[str, tuple[str, str]]  # repository path → (created, updated)


def file_dates(repo: git.Repo, commit: str, cache: ObjectCache) -> Dates:
    cached = cache.get(commit, msgspec.msgpack.Decoder(Dates))
    if cached is not None:
        return cached
    raw = repo.git(["log", "-z", "--no-renames", "--format=%x01%ad", "--date=short", "--name-only", commit]).stdout
    dates: Dates = {}
    current = ""
    for token in raw.split(b"\0"):
        if token.startswith(b"\x01"):
            current = token[1:].decode()
            continue
        path = token.lstrip(b"\n").decode("utf-8", "surrogateescape")
        if not path:
            continue
        seen = dates.get(path)
        # Newest commits come first: the first date seen is `updated`, the last is `created`.
        dates[path] = (current, current) if seen is None else (current, seen[1])
    cache.put(commit, dates)
    return dates


def head_commit(repo: git.Repo, rev: str | None) -> str | None:
    """The commit whose history dates a tree: REV itself, or HEAD for the index and working tree."""
    try:
        obj = repo.repo.revparse_single(rev or "HEAD")
        commit = obj.peel(repo.pygit2.Commit)
    except (KeyError, ValueError, repo.pygit2.GitError, repo.pygit2.InvalidSpecError):
        return None  # a bare tree id, or no commits yet: nothing has history
    return str(commit.id)


def today() -> str:
    # A file with no history yet was created (and updated) today, as tropo's mtime fallback says.
    return dt.date.today().isoformat()
