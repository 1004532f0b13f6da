"""Memory writes are commits: one note, one commit, made beside the user's own work.

A write never touches the user's staging: the new tree is HEAD's tree with that one blob swapped
in (built with libgit2's tree builder along the note's path, no index file at all), the commit is
made with `git commit-tree`, and the branch is advanced with `git update-ref REF NEW OLD`, a
compare-and-swap: when the branch moved meanwhile (another agent, the user committing), the change
is planned again on the new tip. Then, when that branch is checked out, the one path is put into the
user's index (`git update-index --index-info`) and work tree, so `git status` and
`git diff --cached` read exactly as before. A path the user has changed (staged or not) is never
overwritten: the write is refused.

Between the branch moving and the path reaching the user's index, a process can be killed (or the index be
locked by someone else for longer than we wait): the branch then holds the memory and the index does not, and
the user's next `git commit` would delete it. So the paths are written down first (`_Pending`, in the work
tree's own git directory) and crossed out when they are in; the next memory write, and the MCP server as it
starts, puts in any left over (`recover`), unless the user has changed that path since.

The commit is signed when the user's commits are (`commit.gpgSign`), by Git with their `gpg.format` and
key (`git commit-tree -S`); when Git cannot sign, the write is refused rather than made unsigned. The
user's own hooks do not run (`commit-tree` runs none): the checks a memory write makes instead are the
privacy guard, the secret scan and the workspace's rules on the one note (memory/writes/remember.py).

The commit message carries the op and node as trailers (`Vivary-Op`, `Vivary-Node`); everything in
it that an agent chose is put on one line and bounded, so no text can forge a trailer.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec

from vivary_git import git
from vivary_git.errors import GitError, RefusedError
from vivary_git.memory.writes import states
from vivary_git.worktree import skip_worktree

__all__ = ["Base", "Change", "ChangesResult", "CommitResult", "Planned", "branch_tip", "commit_changes", "commit_note",
           "housekeep", "left_out", "message", "one_line", "read_from", "recover", "recover_now", "target_ref", "tip"]

_ZERO = "0" * 40
_ATTEMPTS = 64
_LOCK = threading.Lock()  # one write at a time per process; other processes are handled by the CAS
_SAID = threading.local()  # what this thread's writes committed but could not put into the user's index
_CONTROL = re.compile(r"[\x00-\x1f\x7f\u0085\u2028\u2029]+")
TRAILER_OP = "Vivary-Op"
TRAILER_NODE = "Vivary-Node"
TRAILER_SOURCE = "Vivary-Source"
TRAILER_FROM = "Vivary-From"  # a move: the memory's id before it
TRAILER_REASON = "Vivary-Reason"  # retire, forget: why, in the agent's or user's words
TRAILER_SUPERSEDES = "Vivary-Supersedes"  # an add that archives the memory it contradicts


class CommitResult(msgspec.Struct, frozen=True):
    commit: str
    parent: str | None
    ref: str
    path: str  # repository-relative
    blob: str | None  # None: the note was removed
    checked_out: bool  # the branch is the one checked out: the user's index and work tree got the note
    attempts: int


class Planned(msgspec.Struct, frozen=True):
    path: str  # repository-relative
    content: bytes


class Change(msgspec.Struct, frozen=True):
    path: str  # repository-relative
    content: bytes | None  # None: the path is removed


class ChangesResult(msgspec.Struct, frozen=True):
    commit: str
    parent: str | None
    ref: str
    blobs: dict[str, str | None]  # repository-relative path -> its new blob id (None: removed)
    checked_out: bool
    attempts: int


class _Pending(msgspec.Struct, frozen=True):
    """A memory commit whose paths may not be in the user's index yet: (path, new blob or None, old blob or None)."""

    ref: str
    commit: str
    paths: list[tuple[str, str | None, str | None]]


_PENDING = "vivary-pending-sync.msgpack"


def _pending_path(repo: git.Repo) -> Path:
    return repo.git_dir / _PENDING  # the work tree's own git directory: its index is the one to fix


def _read_pending(path: Path) -> _Pending | None:
    try:
        return msgspec.msgpack.decode(path.read_bytes(), type=_Pending)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def recover(repo: git.Repo) -> list[str]:
    """Put into the user's index and work tree the paths of a memory commit a killed process (or a long-held
    index lock) left out, when the branch holds that commit, is checked out, and the user has not changed the
    path since; then forget it. The paths put in, in order. While another program still holds the index, a
    `GitError` (after a short wait), and the record is kept for the next try."""
    path = _pending_path(repo)
    if repo.workdir is None or not path.is_file():
        return []
    fixed: list[str] = []
    wait = _sync_wait(repo)
    for rel, new_blob in _left_out(repo, path)[1]:
        content = git.checkout_bytes(repo, rel, new_blob) if new_blob is not None else b""
        _sync_user(repo, Planned(rel, content), new_blob, wait)
        fixed.append(rel)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    return fixed


def left_out(repo: git.Repo) -> tuple[str, list[str]]:
    """The branch and the paths `recover` would put into the user's index, changing nothing: what `doctor` names, for
    the user's next `git commit` would delete (or bring back) each of them. ("", []) when there are none."""
    path = _pending_path(repo)
    if repo.workdir is None or not path.is_file():
        return "", []
    pending, found = _left_out(repo, path)
    return (pending.ref, [rel for rel, _ in found]) if pending is not None and found else ("", [])


def _left_out(repo: git.Repo, path: Path) -> tuple[_Pending | None, list[tuple[str, str | None]]]:
    """The record at `path`, and (path, new blob or None) of each of its paths still to be put in: its commit is on
    the branch checked out, the user's index holds the path as before the write, and the file on disk is either
    version."""
    assert repo.workdir is not None
    pending = _read_pending(path)
    if pending is None or not _published(repo, pending):
        return pending, []
    idx = repo.repo.index
    idx.read(True)
    found = []
    last = {rel: i for i, (rel, _, _) in enumerate(pending.paths)}  # a path written twice: its last write
    for i, (rel, new_blob, old_blob) in enumerate(pending.paths):
        if last[rel] != i:
            continue
        entry = idx[rel] if rel in idx else None  # noqa: SIM401 - a pygit2 Index has no .get
        now = None if entry is None else str(entry.id)
        if now == new_blob or now != old_blob:
            continue  # in already, or the user's since: theirs
        full = repo.workdir / rel
        before = not os.path.lexists(full) if old_blob is None else repo.stores(full, rel, old_blob)
        after = not os.path.lexists(full) if new_blob is None else repo.stores(full, rel, new_blob)
        if before or after:  # otherwise the user changed the file since
            found.append((rel, new_blob))
    return pending, found


def recover_now(repo: git.Repo) -> list[str]:
    """`recover`, holding the memory write locks (another process may be writing): for a process that starts. With
    nothing left over, no lock is taken (a start must not wait for another process's write)."""
    if repo.workdir is None or not _pending_path(repo).is_file():
        return []
    with _LOCK, _write_lock(repo):
        return recover(repo)


def _published(repo: git.Repo, pending: _Pending) -> bool:
    """Is the pending commit on its branch, and that branch the one checked out?"""
    raw = repo.repo
    try:
        head = raw.references.get("HEAD")
        if head is None or not isinstance(head.target, str) or head.target != pending.ref:
            return False  # detached, or another branch checked out since: its own files are in the work tree
        now = tip(repo, pending.ref)
        return now is not None and (now == pending.commit or raw.descendant_of(now, pending.commit))
    except (KeyError, ValueError, repo.pygit2.GitError):
        return False


def _publish(repo: git.Repo, ref: str, new: str, old: str | None, text: str, checked_out: bool,
             syncs: list[tuple[Planned, str | None, str | None]]) -> bool:
    """Move `ref` from `old` to `new` (compare-and-swap), then put `syncs` (planned, new blob, old blob) into the
    user's index and work tree when the branch is checked out, written down first so that a kill in between is
    put right later (`recover`). False when the branch moved meanwhile (nothing changed)."""
    pending = _pending_path(repo)
    if checked_out and _wait_for_index(repo, ref):
        return False  # the user committed meanwhile: plan again on their commit
    earlier = _read_pending(pending) if checked_out else None
    # What an earlier write could not put in (the index was held then too) stays written down with this one's.
    left = earlier.paths if earlier is not None and earlier.ref == ref else []
    if checked_out:
        _write_pending(pending, _Pending(ref, new, [*left, *((p.path, blob, was) for p, blob, was in syncs)]))
    _pause("before-ref")
    cas = repo.git(["update-ref", "-m", f"vivary: {one_line(text, 100)}", "--end-of-options", ref, new, old or _ZERO],
                   check=False)
    if cas.returncode != 0:
        if earlier is not None:
            _write_pending(pending, earlier)
        else:
            with contextlib.suppress(FileNotFoundError):
                pending.unlink()
        return False
    if checked_out:
        _pause("before-index")
        wait = _sync_wait(repo)
        try:
            for planned, blob, _ in syncs:
                _sync_user(repo, planned, blob, wait)
            if left:
                recover(repo)  # and what earlier writes left out, now that the index is free
        except GitError as err:
            # The write is committed: it is not refused. The record stays, and the next write or start puts the
            # paths in; the caller is told (`unsynced`), so an agent does not write the memory again.
            _unsynced().append(str(err))
            return True
        with contextlib.suppress(FileNotFoundError):
            pending.unlink()
    return True


def _write_pending(path: Path, record: _Pending) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(msgspec.msgpack.encode(record))
    os.replace(tmp, path)


def _unsynced() -> list[str]:
    said: list[str] | None = getattr(_SAID, "unsynced", None)
    if said is None:
        said = _SAID.unsynced = []
    return said


def unsynced() -> list[str]:
    """What this thread's memory writes since the last call committed but could not put into the user's index
    and work tree (another program held `index.lock`), each with how it is put right; emptied by the call."""
    said = _unsynced()
    out = list(said)
    said.clear()
    return out


_INDEX_WAIT = 30.0  # seconds a write waits for another program's index.lock (as `_sync_user` does)


def _wait_for_index(repo: git.Repo, ref: str) -> bool:
    """Wait while another program holds the user's index (`git commit` holds `index.lock` while its editor is open):
    moving the branch under a commit in progress made it fail ("cannot lock ref 'HEAD'") and lost its message. True
    when `ref`, the checked-out branch, moved meanwhile (the user's commit landed), so the write is planned again
    on it."""
    lock = repo.git_dir / "index.lock"
    if not lock.exists():
        return False
    before = tip(repo, ref)
    deadline = time.monotonic() + _INDEX_WAIT
    while lock.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return tip(repo, ref) != before


def _pause(point: str) -> None:
    """A test seam: `VIVARY_TEST_PAUSE=POINT` stops here (saying so on stderr) so a test can kill the process
    at a known place and prove that nothing half-written is left. Never set outside tests."""
    if os.environ.get("VIVARY_TEST_PAUSE") == point:
        import sys

        sys.stderr.write(f"vivary: paused at {point}\n")
        sys.stderr.flush()
        time.sleep(120)


def one_line(text: str, limit: int) -> str:
    """`text` as one printable line of at most `limit` characters: what may go into a commit subject or
    trailer (a line break there could forge a trailer or a second paragraph)."""
    flat = " ".join(_CONTROL.sub(" ", text).split())
    return flat if len(flat) <= limit else flat[: max(limit - 1, 1)].rstrip() + "…"


_NODE_SHOWN = 28  # the most of a long id a subject shows when it has a summary to show too


def _cut(text: str, width: int, breaks: str) -> str:
    """`text` in at most `width` characters, cut after the last of `breaks` that fits, with `…`: whole words
    (or whole parts of an id), unless the first one is longer than that."""
    if len(text) <= width:
        return text
    room = text[: max(width - 1, 1)]
    at = max(room.rfind(b) for b in breaks)
    if at < len(room) * 2 // 3:  # one long word (a path) would leave little: cut it at one of its parts
        at = max(at, *(room.rfind(b) for b in "-/_."))
    return (room[:at] if at > 0 else room).rstrip(" ,;:.-/_") + "…"


def message(op: str, node: str, summary: str, source: str, *, extra: Sequence[tuple[str, str]] = ()) -> str:
    """The commit message of a memory write: a bounded subject, then the trailers (`extra`: more of them,
    e.g. `Vivary-From`, `Vivary-Reason`, `Vivary-Supersedes`), each value one bounded line."""
    subject = one_line(f"vivary: {op} {node}" + (f": {summary}" if summary else ""), 72)
    if subject.endswith("…") and summary and len(one_line(node, 200)) > _NODE_SHOWN:
        # A long id (a slug of a long title) would fill the subject on its own: shortened at a dash, so that
        # what was done is read too (the whole id is in the Vivary-Node trailer).
        head = f"vivary: {one_line(op, 16)} {_cut(one_line(node, 200), _NODE_SHOWN, '-/_.')}: "
        subject = head + _cut(one_line(summary, 200), 72 - len(head), " ")
    more = "".join(f"{key}: {one_line(value, 200)}\n" for key, value in extra)
    return (f"{subject}\n\n{TRAILER_OP}: {one_line(op, 16)}\n{TRAILER_NODE}: {one_line(node, 200)}\n"
            f"{TRAILER_SOURCE}: {one_line(source, 16)}\n{more}")


class Base:
    """The branch tip a change is planned on, and the user's state of the same paths."""

    def __init__(self, repo: git.Repo, commit: str | None, checked_out: bool) -> None:
        self.repo = repo
        self.commit = commit
        self.checked_out = checked_out
        raw = repo.repo
        self.tree: Any = raw[commit].peel(repo.pygit2.Tree) if commit is not None else None
        self._index: Any = None

    def entry(self, path: str) -> tuple[str, int] | None:
        """(blob id, mode) at `path` in the base tree."""
        if self.tree is None:
            return None
        try:
            obj = self.tree[path]
        except (KeyError, ValueError):
            return None
        return str(obj.id), int(obj.filemode)

    def blob(self, path: str) -> str | None:
        """The blob id at `path` in the base tree, or None."""
        got = self.entry(path)
        return got[0] if got is not None else None

    def read(self, path: str) -> bytes | None:
        """The note at `path` in the base tree (None when there is none): never one over `NOTE_MAX_BYTES`,
        which is refused unread (it is E000 to `check`, and nothing here edits it). A note behind a `filter` is
        read as the filter checks it out (the plaintext of an encrypted one), as `git.blob_of` stores it: an edit
        changes the text, never the ciphertext."""
        from vivary_git.models import NOTE_MAX_BYTES
        from vivary_git.safeio import describe_size

        got = self.entry(path)
        if got is None or got[1] not in (0o100644, 0o100755):
            return None
        try:
            data = self.repo.read_blob(got[0], NOTE_MAX_BYTES)
        except git.BlobTooLarge as err:
            raise RefusedError(f"{path}: is {err.size:,} bytes, over the {describe_size(NOTE_MAX_BYTES)} limit "
                               "for a note, so it is not edited; split it, or add it to `exclude` (in tropo.toml; "
                               "in a vault, .vivary/graph.toml)") from None
        return git.checkout_bytes(self.repo, path, got[0]) if git.filtered(self.repo, path) else data

    def _user_index(self) -> Any:
        if self._index is None:
            idx = self.repo.repo.index
            idx.read(True)
            self._index = idx
        return self._index

    def taken(self, path: str) -> bool:
        """Is `path` used in the base tree, the user's index or the work tree?"""
        if self.entry(path) is not None:
            return True
        if not self.checked_out:
            return False
        if path in self._user_index():
            return True
        workdir = self.repo.workdir
        return workdir is not None and os.path.lexists(workdir / path)

    def user_changed(self, path: str) -> bool:
        """Has the user changed `path` against the base (staged, or in the work tree)?"""
        if not self.checked_out:
            return False
        base = self.entry(path)
        idx = self._user_index()
        entry = idx[path] if path in idx else None  # noqa: SIM401 - a pygit2 Index has no .get
        if (None if entry is None else str(entry.id)) != (None if base is None else base[0]):
            return True
        workdir = self.repo.workdir
        assert workdir is not None
        full = workdir / path
        if base is None:
            return os.path.lexists(full)
        if self.repo.stores(full, path, base[0]):  # as committed, or as Git checks it out (.gitattributes)
            return False
        # Not on disk as committed: changed, unless Git keeps it off the disk (a sparse checkout's file outside
        # its cone), which `git status` calls unchanged too.
        return os.path.lexists(full) or path not in skip_worktree(self.repo, path)


def target_ref(repo: git.Repo, branch: str, *, write: str = "commit this memory write to") -> tuple[str, bool]:
    """(full ref name the memory commit goes to, whether that branch is the checked-out one). `write` says what the
    write does, as "there is no branch to ..." ends when HEAD is detached: "add this memory to", "commit this move
    to"."""
    head = repo.repo.references.get("HEAD")
    head_target = head.target if head is not None and isinstance(head.target, str) else None
    if branch:
        ref = f"refs/heads/{branch}"
        proc = git.run(["check-ref-format", ref], check=False)
        if proc.returncode != 0:
            raise RefusedError(f"`{branch}` is not a valid branch name; fix [memory.remember] branch in "
                               ".vivary/memory.toml")
        _refuse_symbolic(repo, ref)
        if head_target != ref:
            held = states.held_elsewhere(repo, ref)
            if held is not None:
                raise RefusedError(held)
        return ref, head_target == ref and repo.workdir is not None
    if head_target is None:
        raise RefusedError(states.detached_by(repo, write) or (
            f"HEAD is detached, so there is no branch to {write}; check out a branch "
            "(`git switch NAME`), or send memories to their own branch with [memory.remember] branch = "
            "\"vivary/memory\" in .vivary/memory.toml"
        ))
    return head_target, repo.workdir is not None


class BrokenBranch(RefusedError):
    """The memory branch's ref does not parse (a damaged ref file): Git can neither read nor move it, so the memories
    on it cannot be found. A write is refused (exit 3, nothing committed), a read says so and reads HEAD."""


def _memory_branch(repo: git.Repo, ref: str) -> tuple[str | None, str | None]:
    """(the commit a memory branch points at, the ref it names when it is a symbolic ref): at most one of the two,
    (None, None) when there is none yet. The one reading of the memory branch that writes (`_refuse_symbolic`) and
    reads (`branch_tip`, `read_from`) decide by, so they cannot part: a symbolic ref is never followed. A ref that
    does not parse is `BrokenBranch`, never taken for none (a write would start the branch again without its
    memories)."""
    try:
        got = repo.repo.references.get(ref)
    except repo.pygit2.GitError as err:  # libgit2: "corrupted loose reference file"
        raise BrokenBranch(_broken_said(repo, ref, str(err))) from None
    if got is None:
        return None, None
    target = got.target
    return (None, target) if isinstance(target, str) else (str(target), None)


_REFLOG_TAIL = 1 << 16  # bytes of a reflog read for its last entry


def _broken_said(repo: git.Repo, ref: str, why: str) -> str:
    """What is wrong with a memory branch whose ref does not parse, and the fix: the commit it last pointed at, when
    its reflog names one this repository has (Git itself will not show the reflog of a broken ref)."""
    from vivary_git.escape import text

    path = repo.common_dir / ref
    last = None
    with contextlib.suppress(OSError):
        with open(repo.common_dir / "logs" / ref, "rb") as log:
            log.seek(max(0, os.fstat(log.fileno()).st_size - _REFLOG_TAIL))
            lines = log.read(_REFLOG_TAIL).splitlines()
        for line in reversed(lines):
            fields = line.split(b" ", 2)
            if len(fields) > 1 and re.fullmatch(rb"[0-9a-f]{40}|[0-9a-f]{64}", fields[1]):
                oid = fields[1].decode()
                if repo.repo.get(oid) is not None:
                    last = oid
                break
    branch = ref.removeprefix("refs/heads/")
    said = (f"{ref} does not parse ({text(why.replace(f'{ref}: ', '', 1))}), so Git can neither read nor move it and "
            "the memories on it cannot be found; ")
    if last is not None:
        return (said + f"its reflog says it last pointed at {last[:12]}: remove the file {text(str(path))} by hand, "
                f"then `git branch -- {branch} {last}`")
    return (said + f"remove the file {text(str(path))} by hand, then `git branch -- {branch} COMMIT` with the commit "
            "it held (`git fsck --lost-found` lists commits no ref reaches)")


def _refuse_symbolic(repo: git.Repo, ref: str) -> None:
    """Refuse a memory branch that is a symbolic ref: `git update-ref` would follow it and put the memory on the
    branch it names (the checked-out one, a release branch), behind the user's back. HEAD is followed, as `git
    commit` follows it (a branch alias checked out included): that is the branch the user is on."""
    try:
        _, to = _memory_branch(repo, ref)
    except BrokenBranch as err:
        raise BrokenBranch(f"{err}; nothing was committed") from None
    if to is None:  # none yet, or a branch (its target a commit id)
        return
    raise RefusedError(
        f"{ref} is a symbolic ref to {to}, so Git would move that branch instead and the memory would land "
        f"there; memories go to their own branch: remove the symbolic ref (`git symbolic-ref --delete {ref}`), or "
        "name the branch to use in [memory.remember] branch in .vivary/memory.toml; nothing was committed"
    )


def branch_tip(repo: git.Repo, ref: str) -> str | None:
    """The commit a memory branch of its own points at; None when there is none, or when it is a symbolic ref: never
    followed, to read it either (`_refuse_symbolic` says why and what to do when a memory is written); None too when
    its ref does not parse (`BrokenBranch`: `read_from` says so)."""
    try:
        return _memory_branch(repo, ref)[0]
    except BrokenBranch:
        return None


def read_from(repo: git.Repo, branch: str) -> tuple[str, str, str | None]:
    """Where memories and their history are read: (the ref, the commit or "HEAD" to read, a note or None).
    The configured memory branch when it is a branch of its own; else HEAD: none is configured or it does not
    exist yet, or it is a symbolic ref, never followed to read as none is written through one (`_refuse_symbolic`);
    the note then says so, where it points and the fix."""
    if not branch:
        return "HEAD", "HEAD", None
    ref = f"refs/heads/{branch}"
    try:
        at, to = _memory_branch(repo, ref)
    except BrokenBranch as err:
        return "HEAD", "HEAD", f"{err}; memories are read from HEAD meanwhile"
    if at is not None:
        return ref, at, None  # the commit itself: a ref made symbolic meanwhile is not followed either
    if to is None:
        return "HEAD", "HEAD", None
    return "HEAD", "HEAD", (
        f"{ref} is a symbolic ref to {to} and is not followed: memories are read from HEAD; remove the "
        f"symbolic ref (`git symbolic-ref --delete {ref}`), or name the branch to use in [memory.remember] branch in "
        ".vivary/memory.toml"
    )


def tip(repo: git.Repo, ref: str) -> str | None:
    """The commit `ref` points at, None when it does not exist yet."""
    got = repo.repo.references.get(ref)
    if got is None:
        return None
    return str(got.resolve().target)


def _tree_with(repo: git.Repo, tree: Any, parts: list[str], blob: str | None) -> str | None:
    """The id of `tree` with the blob at `parts` set (or removed, `blob` None); None for an empty tree.
    Only the trees along the path are rebuilt."""
    pygit2 = repo.pygit2
    raw = repo.repo
    builder = raw.TreeBuilder(tree) if tree is not None else raw.TreeBuilder()
    name = parts[0]
    if len(parts) == 1:
        if blob is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=blob), pygit2.GIT_FILEMODE_BLOB)
    else:
        existing = builder.get(name)
        sub = raw[existing.id] if existing is not None and existing.type_str == "tree" else None
        if existing is not None and sub is None:
            raise RefusedError(f"cannot write under {'/'.join(parts)}: `{name}` is a file in the tree, not a folder")
        child = _tree_with(repo, sub, parts[1:], blob)
        if child is None:
            if existing is not None:
                builder.remove(name)
        else:
            builder.insert(name, pygit2.Oid(hex=child), pygit2.GIT_FILEMODE_TREE)
    if len(builder) == 0:
        return None
    return str(builder.write())


def _empty_tree(repo: git.Repo) -> str:
    return str(repo.repo.TreeBuilder().write())


def commit_note(
    repo: git.Repo,
    *,
    ref: str,
    checked_out: bool,
    plan: Callable[[Base], Planned | None],
    make_message: Callable[[Planned], str],
    remove: bool = False,
) -> CommitResult | None:
    """Commit the change `plan` makes on the tip of `ref`, retrying on a new tip when the branch moved.
    `plan(base)` returns the path and its new bytes (or None: nothing to do, no commit), and may raise
    to refuse; with `remove` the path is deleted instead."""
    sign = git.commit_signing(repo)
    with _LOCK, _write_lock(repo):
        if checked_out:
            with contextlib.suppress(GitError):  # the index still held: the record stays, and goes with this write's
                recover(repo)
        for attempt in range(1, _ATTEMPTS + 1):
            old = tip(repo, ref)
            base = Base(repo, old, checked_out)
            planned = plan(base)
            if planned is None:
                return None
            if checked_out:
                _check_inside_tree(repo, planned.path)  # refused before anything is committed
            if base.user_changed(planned.path):
                raise RefusedError(
                    f"{planned.path} has changes of yours that are not committed (staged or in the working tree); "
                    "commit or stash them first, then try again: a memory write never overwrites your work"
                )
            blob = None if remove else git.blob_of(repo, planned.path, planned.content)
            on_disk = _on_disk(repo, planned.path, blob, checked_out)
            tree = _tree_with(repo, base.tree, planned.path.split("/"), blob) or _empty_tree(repo)
            new = _commit_tree(repo, tree, old, make_message(planned), sign)
            if not _publish(repo, ref, new, old, make_message(planned), checked_out,
                            [(Planned(planned.path, on_disk), blob, base.blob(planned.path))]):
                # The tip moved (or its lock was held) since we read it: plan again on the new tip.
                _refuse_held(repo, ref, old, checked_out, "memory")
                time.sleep(random.uniform(0.001, 0.02) * min(attempt, 8))
                continue
            result = CommitResult(commit=new, parent=old, ref=ref, path=planned.path, blob=blob,
                                  checked_out=checked_out, attempts=attempt)
            break
        else:
            raise GitError(f"{ref} kept moving while the memory was being committed ({_ATTEMPTS} attempts); try again")
    housekeep(repo)
    return result


def commit_changes(
    repo: git.Repo,
    *,
    ref: str,
    checked_out: bool,
    plan: Callable[[Base], list[Change] | None],
    make_message: Callable[[list[Change]], str],
) -> ChangesResult | None:
    """Commit several paths at once (a dream resolution: the super node and its sources), as one commit:
    all of them or none. As `commit_note`: planned on the tip, retried on a new tip, refused when the user
    changed one of the paths, then put into the user's index and work tree."""
    sign = git.commit_signing(repo)
    with _LOCK, _write_lock(repo):
        if checked_out:
            with contextlib.suppress(GitError):  # the index still held: the record stays, and goes with this write's
                recover(repo)
        for attempt in range(1, _ATTEMPTS + 1):
            old = tip(repo, ref)
            base = Base(repo, old, checked_out)
            changes = plan(base)
            if not changes:
                return None
            for change in changes:
                if checked_out:
                    _check_inside_tree(repo, change.path)
                if base.user_changed(change.path):
                    raise RefusedError(
                        f"{change.path} has changes of yours that are not committed (staged or in the working "
                        "tree); commit or stash them first, then try again: a memory write never overwrites your work"
                    )
            tree = base.tree
            blobs: dict[str, str | None] = {}
            for change in changes:
                blob = None if change.content is None else git.blob_of(repo, change.path, change.content)
                blobs[change.path] = blob
                tree_id = _tree_with(repo, tree, change.path.split("/"), blob) or _empty_tree(repo)
                tree = repo.repo[tree_id]
            text = make_message(changes)
            new = _commit_tree(repo, str(tree.id) if tree is not None else _empty_tree(repo), old, text, sign)
            syncs = [(Planned(c.path, _on_disk(repo, c.path, blobs[c.path], checked_out)), blobs[c.path],
                      base.blob(c.path)) for c in changes]
            if not _publish(repo, ref, new, old, text, checked_out, syncs):
                _refuse_held(repo, ref, old, checked_out, "memory change")
                time.sleep(random.uniform(0.001, 0.02) * min(attempt, 8))
                continue
            done = ChangesResult(commit=new, parent=old, ref=ref, blobs=blobs, checked_out=checked_out,
                                 attempts=attempt)
            break
        else:
            raise GitError(f"{ref} kept moving while the memory change was being committed ({_ATTEMPTS} attempts); "
                           "try again")
    housekeep(repo)
    return done


def _refuse_held(repo: git.Repo, ref: str, old: str | None, checked_out: bool, what: str) -> None:
    """After a move of `ref` failed: when it did not move and Git's lock file is beside it, or beside HEAD when it is
    checked out (Git locks both to move it), stop. Git already waited for that lock (`core.filesRefLockTimeout`),
    and one a `git commit` killed mid-write left stays until someone removes it: 64 more tries took 17 s to say
    "kept moving; try again", which never helped. The file is named, with how to clear it."""
    if tip(repo, ref) != old:
        return  # it moved: plan again on the new tip
    held = repo.held_ref(ref) or (repo.held_ref("HEAD") if checked_out else "")
    if held:
        raise GitError(f"the {what} was not committed: {held}")


def housekeep(repo: git.Repo) -> None:
    """What `git commit` does once it has committed: `git maintenance run --auto --quiet`, unless
    `maintenance.auto` is false (run_auto_maintenance, Git's run-command.c). Git packs the loose objects when
    `gc.auto` says there are too many (or too many packs, `gc.autoPackLimit`), in the background unless
    `gc.autoDetach` is false. Memory commits are made with plumbing (`commit-tree`, `update-ref`), which never
    does this: an agent's server writing all day left thousands of loose objects that no `git gc --auto` would
    ever pack. Run after the write's locks are let go, as Git runs it after the commit; its failure (another
    maintenance holding the lock, say) is Git's to report next time, as `git commit` ignores it."""
    try:
        if repo.setting("maintenance.auto", boolean=True) == "false":
            return
    except ValueError:
        return  # Git says so at the user's next `git commit`; a memory write already done is not refused for it
    with contextlib.suppress(GitError):
        repo.git(["maintenance", "run", "--auto", "--quiet"], check=False)


def _on_disk(repo: git.Repo, path: str, blob: str | None, checked_out: bool) -> bytes:
    """What goes into the user's work tree for `blob` at `path`: the bytes `git checkout` would write there (a
    UTF-16 or CRLF note stays one, a filtered note is smudged), made before anything is committed so that a
    failing filter commits nothing."""
    if blob is None or not checked_out:
        return b""
    return git.checkout_bytes(repo, path, blob)


def _commit_tree(repo: git.Repo, tree: str, parent: str | None, text: str, sign: bool) -> str:
    """The memory commit, signed when the user's commits are (`commit.gpgSign`): with their `gpg.format` and
    key, as `git commit` would. When Git cannot sign, nothing is committed: never an unsigned commit in a
    repository that signs."""
    try:
        return git.commit_tree(repo, tree, [parent] if parent is not None else [], text, sign=sign)
    except git.SigningFailed as err:
        raise RefusedError(
            f"{git.SIGN_SETTING} is true in your Git config, so memory commits are signed, but Git could not sign "
            f"this one: {err.why}; nothing was committed. Fix user.signingKey (and gpg.format, gpg.program or "
            "gpg.ssh.program) until `git commit --allow-empty -S -m test` works, or set commit.gpgSign false "
            "for this repository") from None
    except GitError as err:
        said = str(err)
        if any(sign in said for sign in _NO_IDENTITY):
            said += ("; a memory commit is yours, made with your Git identity, as `git commit` would: set it with `git "
                     "config user.name \"Your Name\"` and `git config user.email you@example.com` (add --global for "
                     "every repository; GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL and the GIT_COMMITTER_ pair, when set, win "
                     "over them), then write it again; nothing was committed")
        raise GitError(f"could not commit the memory: {said}") from None


# What Git says when it has no identity to write a commit with (ident.c): no user.name / user.email, and none it
# could make up from the system (or `user.useConfigOnly` forbids making one up).
_NO_IDENTITY = ("Please tell me who you are", "unable to auto-detect email address", "empty ident name",
                "auto-detection is disabled")


def _sync_wait(repo: git.Repo) -> float:
    """How long putting a path into the user's index waits for another program's `index.lock`: a lock there
    already has outlasted `_wait_for_index` (or a write's start) and is likely a stale one of a crashed git, so no
    second long wait."""
    return 1.0 if (repo.git_dir / "index.lock").exists() else _INDEX_WAIT


def _sync_user(repo: git.Repo, planned: Planned, blob: str | None, wait: float) -> None:
    """Put the committed path into the user's work tree and index, and nothing else; another program's
    `index.lock` is waited for `wait` seconds (`_sync_wait`)."""
    workdir = repo.workdir
    assert workdir is not None
    full = workdir / planned.path
    _check_inside(workdir, full)
    if blob is None:
        with contextlib.suppress(FileNotFoundError):
            full.unlink()
        line = f"0 {_ZERO}\t{planned.path}\0"
    else:
        full.parent.mkdir(parents=True, exist_ok=True)
        _check_inside(workdir, full)
        fd, tmp = tempfile.mkstemp(prefix=".vivary-", dir=full.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(planned.content)
            os.replace(tmp, full)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        line = f"100644 {blob}\t{planned.path}\0"
    # Other writers (Git's own, other agents) hold index.lock briefly.
    deadline = time.monotonic() + wait
    while True:
        proc = repo.git(["update-index", "-z", "--index-info"], input=line.encode("utf-8", "surrogateescape"),
                        check=False)
        if proc.returncode == 0:
            return
        said = proc.stderr.decode("utf-8", "replace").strip()
        if "index.lock" not in said or time.monotonic() > deadline:
            raise GitError(f"the memory was committed, but your index could not be updated for {planned.path}: "
                           f"{said}; the next memory write (or the MCP server as it starts) puts it in, or run "
                           f"`git reset -q -- {planned.path}` to pick it up now")
        time.sleep(random.uniform(0.005, 0.03))


def _check_inside_tree(repo: git.Repo, path: str) -> None:
    """`_check_inside` for a path of the checked-out branch, asked before its commit: a write the work tree
    would refuse commits nothing."""
    assert repo.workdir is not None
    _check_inside(repo.workdir, repo.workdir / path)


def _check_inside(workdir: Path, full: Path) -> None:
    """Refuse a path whose folders leave the work tree through a symbolic link."""
    here = workdir
    rel = full.relative_to(workdir).parts
    for part in rel[:-1]:
        here = here / part
        if here.is_symlink():
            raise RefusedError(f"{here.relative_to(workdir)} is a symbolic link; memories are never written "
                               "through one: replace it with a folder")


def _write_lock(repo: git.Repo) -> contextlib.AbstractContextManager[None]:
    """Other processes' memory writes wait for this one (memory/lock.py)."""
    from vivary_git.memory.lock import write_lock

    return write_lock(repo.vivary_dir)
