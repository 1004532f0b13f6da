"""Verdict notes, `refs/notes/vivary`: a small per-commit verdict (counts only) for CI and review, written
when `git config vivary.notes true`.

A commit's note holds one verdict per workspace that checked it: one JSON line each, sorted by the workspace's
folder in the repository (`folder`, left out at the top, so a repository with one top-level workspace notes what
it noted before there could be more). A workspace's run replaces its own line and keeps the others.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from vivary_git.config import FORMAT_VERSION
from vivary_git.refnames import NOTES_REF
from vivary_git.store.trust import _config_bool

if TYPE_CHECKING:
    from vivary_git.git import Repo

MAX_BYTES = 65536  # a note past this is not one of ours: no verdicts are that long
MAX_LINES = 256  # verdicts read from one note: a fetched note is a stranger's input


def notes_enabled(repo: Repo) -> bool:
    """`git config vivary.notes true` (`git vivary cache notes on`) writes verdict notes; default off."""
    return _config_bool(repo, "vivary.notes", default=False)


class Verdict(msgspec.Struct, frozen=True):
    """What `refs/notes/vivary` says about a commit for one workspace: counts only. `tree` is the workspace's tree,
    the commit's tree at `folder` (the workspace's folder in the repository, "" at the top)."""

    tree: str
    checked: int
    errors: int
    warnings: int
    clean: int
    tool: str = "vivary-git"
    format: int = FORMAT_VERSION
    folder: str = ""


class _Line(msgspec.Struct, frozen=True, omit_defaults=True):
    """A verdict as its note's line says it: `folder` is left out at the top, never `tool` or `format`."""

    tree: str
    checked: int
    errors: int
    warnings: int
    clean: int
    tool: str
    format: int
    folder: str = ""


class _Written(msgspec.Struct):
    """What a line must say for a writer to keep it: whose folder, and with which format (0 when it says none)."""

    format: int = 0
    folder: str = ""


def valid_folder(folder: str) -> bool:
    """Whether `folder` can name a workspace's folder in a tree: "" (the top) or folder names joined by `/`; never
    an absolute path, `.`, `..`, an empty name or a NUL."""
    if not folder:
        return True
    return "\0" not in folder and all(part not in ("", ".", "..") for part in folder.split("/"))


def folder_tree(repo: Repo, commit: str, folder: str) -> str | None:
    """The id of `commit`'s tree at `folder` (its root tree at ""): None when this repository lacks the commit or
    there is no folder there (a file, a submodule, nothing, or a name no folder can have)."""
    pygit2 = repo.pygit2
    if not valid_folder(folder):
        return None
    try:
        tree = repo.repo[commit].peel(pygit2.Tree)
        entry = tree[folder] if folder else tree
    except (KeyError, ValueError, TypeError, pygit2.GitError):
        return None
    if folder and entry.type_str != "tree":
        return None
    return str(entry.id)


def write_note(repo: Repo, commit: str, *verdicts: Verdict, retries: int = 8) -> bool:
    """Put these verdicts on `commit`, each replacing the line of its folder, the other folders' lines kept.
    libgit2 moves the notes ref only if it still points at the commit it built on, so concurrent writers retry
    instead of losing a verdict.

    Every note written is a commit of the notes ref, so a note that would not change is not written again (each
    `check --rev` of a commit added one), and a folder's verdict a newer vivary-git noted is left to it (two
    versions replaced each other's on every run): the notes ref grows with the commits noted, not with the runs.
    The lines are sorted by folder, so two workspaces noting one commit, in either order, note the same."""
    pygit2 = repo.pygit2
    sig = pygit2.Signature("vivary-git", "vivary-git@localhost", int(time.time()), 0)
    for attempt in range(1, retries + 1):
        there = _note_bytes(repo, commit, NOTES_REF)
        lines = _lines(there)
        for verdict in verdicts:
            kept = lines.get(verdict.folder)
            if kept is None or kept[1] <= verdict.format:
                lines[verdict.folder] = (_encode(verdict), verdict.format)
        text = _joined(lines, {v.folder for v in verdicts})
        if text == there:
            return True
        try:
            repo.repo.create_note(text.decode("utf-8", "replace"), sig, sig, commit, NOTES_REF, True)
            return True
        except (pygit2.GitError, OSError):  # OSError: libgit2 found the ref's lock file there (another writer's)
            import random

            time.sleep(random.uniform(0.01, 0.05) * attempt)
    return False


def unwritten(repo: Repo) -> str:
    """Why `write_note` gave up: the notes ref's lock file left there (named, with the fix), or other writers."""
    return repo.held_ref(NOTES_REF) or f"{NOTES_REF} kept moving (other writers); the next run writes it"


def read_verdicts(repo: Repo, commit: str, ref: str = NOTES_REF) -> list[Verdict]:
    """The verdicts noted on `commit`, one per folder, sorted by folder: a line that is no verdict of ours, names
    no folder a tree can have, or repeats a folder is left out, and so is a note past the bounds. An old note of one
    line with no `folder` is the top-level workspace's verdict."""
    found = []
    for line, _ in _lines(_note_bytes(repo, commit, ref)).values():
        try:
            verdict = msgspec.json.decode(line, type=Verdict)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        found.append(verdict)
    return sorted(found, key=lambda v: v.folder)


def _encode(verdict: Verdict) -> bytes:
    return msgspec.json.encode(_Line(**msgspec.structs.asdict(verdict)))


def _note_bytes(repo: Repo, commit: str, ref: str) -> bytes | None:
    try:
        note = repo.repo.lookup_note(commit, ref)
    except (KeyError, ValueError, repo.pygit2.GitError):
        return None
    message = note.message
    return message.encode() if isinstance(message, str) else bytes(message)


def _lines(raw: bytes | None) -> dict[str, tuple[bytes, int]]:
    """A note's lines by folder, each with the format it says it was written with: the first line of each folder
    among the first `MAX_LINES`; none of a note over `MAX_BYTES`. A line that is no JSON object, or whose folder
    no tree can have, is left out."""
    if raw is None or len(raw) > MAX_BYTES:
        return {}
    found: dict[str, tuple[bytes, int]] = {}
    for line in [line for line in raw.split(b"\n") if line.strip()][:MAX_LINES]:
        try:
            said = msgspec.json.decode(line, type=_Written)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        if valid_folder(said.folder) and said.folder not in found:
            found[said.folder] = (line.strip(), said.format)
    return found


def _joined(lines: dict[str, tuple[bytes, int]], ours: Iterable[str]) -> bytes:
    """The note of these lines, sorted by folder, within the bounds a reader keeps: when they are full, the lines
    left out are other folders' before ours, the last in order first."""
    mine = sorted(f for f in set(ours) if f in lines)
    kept: list[str] = []
    size = 0
    for folder in [*mine, *sorted(f for f in lines if f not in mine)]:
        size += len(lines[folder][0]) + 1
        if len(kept) == MAX_LINES or size > MAX_BYTES:
            break
        kept.append(folder)
    return b"".join(lines[f][0] + b"\n" for f in sorted(kept))
