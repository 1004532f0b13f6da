"""The previous bytes of a file `git vivary` rewrites in a user's text, kept under `.git/vivary/backups/`.

AGENTS.md, CLAUDE.md, GEMINI.md and the host configs hold the user's own text around what bootstrap-host
writes, and USER.md and MEMORY.md are never in Git: a rewrite gone wrong could not be undone from history.
So before `files.write` replaces or deletes such a file, its bytes are copied to

    <the repository's common Git dir>/vivary/backups/<path>/<UTC time, YYYYMMDDTHHMMSS.ffffffZ>

where <path> is the file's path in the work tree with `%`, `/` and `@` spelled `%25`, `%2F` and `%40`, and
`@NAME` after it in a linked worktree NAME (one folder per file: `AGENTS.md`, `.codex%2Fconfig.toml`,
`USER.md@feature`). The newest `KEEP` of each file are kept. The folders are 0700 and the copies 0600
(USER.md is a profile): local, never in the work tree, never pushed.

Nothing stands on the way there but folders, and symbolic links to folders inside the Git folder (`derived.py`,
as for everything under `.git/vivary/`): a copy is never written where a link out of the Git folder leads.

A file in no Git work tree (a plain folder, a user-level config outside any repository) gets no backup:
the only places for one would be the folder itself or the user's home, where nothing of ours belongs.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
from pathlib import Path

from vivary_git import derived, git
from vivary_git.errors import RefusedError

KEEP = 5


def folder(path: Path) -> Path | None:
    """Where the backups of `path` (an existing file) go, or None when no Git work tree holds it."""
    repo = git.try_open(path.parent)
    if repo is None or repo.workdir is None:
        return None
    try:
        rel = path.resolve().relative_to(repo.workdir).as_posix()
    except ValueError:
        return None
    name = rel.replace("%", "%25").replace("/", "%2F").replace("@", "%40")
    if repo.git_dir != repo.common_dir:  # a linked worktree: its own files, beside the main tree's
        name += "@" + repo.git_dir.name
    return repo.vivary_dir / "backups" / name


def keep(path: Path, shown: str, data: bytes) -> Path | None:
    """Copy `data` (the bytes `path` holds now) to its backup folder, keep the newest `KEEP` there; the copy's
    path, or None when the file has no place for backups. A copy that cannot be written is a `RefusedError`:
    the file is then not rewritten either."""
    where = folder(path)
    if where is None:
        return None
    why = derived.damage(where.parent.parent, where, needs="for its backups")
    if why is not None:
        raise RefusedError(f"{shown}: cannot keep a copy of it before rewriting it, so nothing was written: {why}")
    try:
        _private_dir(where.parent)
        _private_dir(where)
        copy = _write_new(where, data)
        _prune(where)
    except OSError as err:
        raise RefusedError(f"{shown}: cannot keep a copy of it in {where} before rewriting it ({err.strerror}); "
                           "nothing was written; fix that folder (or free some space) and run again") from None
    return copy


def _private_dir(d: Path) -> None:
    d.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileExistsError):
        d.mkdir(mode=0o700)
    if d.is_symlink() or not d.is_dir():
        raise NotADirectoryError(20, "not a folder")
    os.chmod(d, 0o700)


def _write_new(where: Path, data: bytes) -> Path:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for n in range(100):
        copy = where / (stamp if n == 0 else f"{stamp}-{n}")
        try:
            fd = os.open(copy, flags, 0o600)
        except FileExistsError:
            continue
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        except BaseException:
            with contextlib.suppress(OSError):
                copy.unlink()
            raise
        return copy
    raise FileExistsError(17, "too many backups with the same time")


def _prune(where: Path) -> None:
    """The newest `KEEP` copies stay (their names sort by time); older ones go."""
    copies = sorted(p for p in where.iterdir() if p.is_file() and not p.is_symlink())
    for old in copies[:-KEEP]:
        with contextlib.suppress(FileNotFoundError):
            old.unlink()
