"""Verdict notes, `refs/notes/vivary`: a small per-commit verdict (counts only) for CI and review, written
when `git config vivary.notes true`.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import msgspec

from vivary_git.config import FORMAT_VERSION
from vivary_git.refnames import NOTES_REF
from vivary_git.store.trust import _config_bool

if TYPE_CHECKING:
    from vivary_git.git import Repo


def notes_enabled(repo: Repo) -> bool:
    """`git config vivary.notes true` (`git vivary cache notes on`) writes verdict notes; default off."""
    return _config_bool(repo, "vivary.notes", default=False)


class Verdict(msgspec.Struct, frozen=True):
    """What `refs/notes/vivary` says about a commit: counts only."""

    tree: str
    checked: int
    errors: int
    warnings: int
    clean: int
    tool: str = "vivary-git"
    format: int = FORMAT_VERSION


class _Written(msgspec.Struct):
    format: int = 0


def write_note(repo: Repo, commit: str, verdict: Verdict, retries: int = 8) -> bool:
    """Attach (or replace) the verdict note on `commit`. libgit2 moves the notes ref only if it still
    points at the commit it built on, so concurrent writers retry instead of losing a note.

    Every note written is a commit of the notes ref, so the same verdict is not written again (each `check --rev`
    of a commit added one), and a verdict a newer vivary-git noted is left to it (two versions replaced each
    other's on every run): the notes ref grows with the commits noted, not with the runs."""
    pygit2 = repo.pygit2
    text = msgspec.json.encode(verdict).decode() + "\n"
    sig = pygit2.Signature("vivary-git", "vivary-git@localhost", int(time.time()), 0)
    for attempt in range(1, retries + 1):
        there = _note_text(repo, commit)
        if there == text or (there is not None and _format(there) > verdict.format):
            return True
        try:
            repo.repo.create_note(text, sig, sig, commit, NOTES_REF, True)
            return True
        except pygit2.GitError:
            import random

            time.sleep(random.uniform(0.01, 0.05) * attempt)
    return False


def _note_text(repo: Repo, commit: str) -> str | None:
    try:
        note = repo.repo.lookup_note(commit, NOTES_REF)
    except (KeyError, repo.pygit2.GitError):
        return None
    message = note.message
    return message if isinstance(message, str) else bytes(message).decode("utf-8", "replace")


def _format(text: str) -> int:
    """The `format` a verdict note says it was written with (0 when it says none, or is not one)."""
    if len(text) > 65536:  # as read_note: no verdict is that long
        return 0
    try:
        return msgspec.json.decode(text.encode(), type=_Written).format
    except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return 0


def read_note(repo: Repo, commit: str, ref: str = NOTES_REF) -> Verdict | None:
    """The verdict noted on `commit` (None when there is none or it is not one of ours)."""
    try:
        note = repo.repo.lookup_note(commit, ref)
        raw = note.message.encode() if isinstance(note.message, str) else note.message
        if len(raw) > 65536:
            return None
        return msgspec.json.decode(raw, type=Verdict)
    except (KeyError, repo.pygit2.GitError, msgspec.DecodeError, msgspec.ValidationError, RecursionError):
        return None
