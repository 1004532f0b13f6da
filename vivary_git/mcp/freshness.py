"""The working tree as a Git tree id, kept current for a long-lived process without re-reading it.

Every command that reads the working tree writes it as a tree the way `git stash` does: `git add -A`
into a scratch copy of the index, then `git write-tree` (`source.py`). That stats every file, which on
10,000 notes is 60-250 ms: too much before every answer of a server. `WorkTree` does the same thing
once, then keeps its scratch index current with what changed:

- the work tree's folders are watched with inotify (Linux); before each answer the events that came
  in are read (no system call beyond one `read` when nothing changed), and only the paths they name
  go through `git add -A` (pathspecs from stdin, literal) and `git write-tree`. Git's own stat cache,
  ignore rules, filters and racy-timestamp handling decide what those paths hold, exactly as they do
  for the full snapshot;
- the user's index is identified by its stat and trailing checksum (a rewrite without a change of
  content, as `git status` does, leaves the tree alone); when its tree changes, the scratch index is
  copied from it again and re-added only at the paths where the working tree or the index may differ
  (the tree diffs of what was known, through libgit2, plus the events);
- a change to a file that decides what is ignored or how a file is filtered (a `.gitignore`, a
  `.gitattributes`, `.git/info/exclude`, Git's config and the global excludes) takes the full
  snapshot again, as does an event queue overflow, a folder that cannot be watched, or any failure.

Without inotify (another OS, no watches left) every `tree()` takes the full snapshot: Git's own
stat-based check, which here is faster than a stat walk in Python (measured: 10,000 `lstat` calls
from Python took 220-370 ms, `git add -A` 230-280 ms, on the same machine under the same load).

A folder watch does not see a file changed through a hard link from outside the work tree; the
memory snapshot refuses hard-linked notes when it checks them.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import shutil
import stat
import struct
import time
from pathlib import Path
from typing import Any

from vivary_git import derived, git
from vivary_git.errors import GitError
from vivary_git.worktree import BOUNDED_HASH

__all__ = ["WorkTree", "watching_available"]

_IN_MODIFY = 0x2
_IN_ATTRIB = 0x4
_IN_CLOSE_WRITE = 0x8
_IN_MOVED_FROM = 0x40
_IN_MOVED_TO = 0x80
_IN_CREATE = 0x100
_IN_DELETE = 0x200
_IN_DELETE_SELF = 0x400
_IN_MOVE_SELF = 0x800
_IN_UNMOUNT = 0x2000
_IN_Q_OVERFLOW = 0x4000
_IN_IGNORED = 0x8000
_IN_ONLYDIR = 0x1000000
_IN_DONT_FOLLOW = 0x2000000
_IN_ISDIR = 0x40000000
_MASK = (_IN_MODIFY | _IN_ATTRIB | _IN_CLOSE_WRITE | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
         | _IN_DELETE_SELF | _IN_MOVE_SELF | _IN_ONLYDIR | _IN_DONT_FOLLOW)
_EVENT = struct.Struct("iIII")
# Files whose change alters what `git add -A` would make of files that did not change themselves.
_RULE_NAMES = frozenset((b".gitignore", b".gitattributes"))
_COARSE_NS = 2_000_000_000  # the coarsest file timestamps in use (FAT: 2 s)
# How many times the scratch folder may be found gone (and made again) before one snapshot gives up.
_ATTEMPTS = 5
_ADD = ["-c", "advice.addEmbeddedRepo=false", "-c", "advice.addIgnoredFile=false", "-c", "core.safecrlf=false",
        *BOUNDED_HASH, "add", "-A", "--ignore-errors"]


class _Unwatchable(Exception):
    """The work tree cannot be (fully) watched: take the full snapshot instead."""


def _libc() -> Any:
    name = ctypes.util.find_library("c")
    lib = ctypes.CDLL(name, use_errno=True)
    for fn in ("inotify_init1", "inotify_add_watch", "inotify_rm_watch"):
        if not hasattr(lib, fn):
            raise _Unwatchable(fn)
    return lib


def watching_available() -> bool:
    """Whether this system can watch folders (inotify) and `VIVARY_MCP_WATCH` does not turn it off."""
    if os.environ.get("VIVARY_MCP_WATCH", "1") == "0" or not hasattr(os, "O_NONBLOCK"):
        return False
    try:
        _libc()
    except (OSError, _Unwatchable):
        return False
    return True


class _Watcher:
    """inotify watches on every folder of a work tree but `.git` and nested repositories."""

    def __init__(self, top: Path) -> None:
        self._lib = _libc()
        fd = self._lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise _Unwatchable(os.strerror(ctypes.get_errno()))
        self.fd: int | None = fd
        self.top = os.fsencode(top)
        self.dirs: dict[int, bytes] = {}  # watch descriptor -> folder, top-relative ("" for the top)
        self.wds: dict[bytes, int] = {}
        self.nested: set[bytes] = set()  # nested repositories: Git records them as one entry
        self._watch_tree(b"")

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def _watch_tree(self, rel: bytes) -> None:
        stack = [rel]
        while stack:
            here = stack.pop()
            full = os.path.join(self.top, here) if here else self.top
            wd = self._lib.inotify_add_watch(self.fd, full, _MASK)
            if wd < 0:
                err = ctypes.get_errno()
                if err in (errno.ENOENT, errno.ENOTDIR):
                    continue  # gone again (or replaced by a file): the parent's event says so
                raise _Unwatchable(f"{os.fsdecode(full)}: {os.strerror(err)}")
            old = self.dirs.get(wd)
            if old is not None and old != here:
                self.wds.pop(old, None)
            self.dirs[wd] = here
            self.wds[here] = wd
            try:
                with os.scandir(full) as it:
                    for entry in it:
                        name = entry.name
                        if name == b".git":
                            continue
                        if not entry.is_dir(follow_symlinks=False):
                            continue
                        sub = os.path.join(here, name) if here else name
                        if os.path.lexists(os.path.join(entry.path, b".git")):
                            self.nested.add(sub)
                            continue
                        stack.append(sub)
            except (FileNotFoundError, NotADirectoryError):
                continue

    def _forget(self, rel: bytes) -> None:
        """Stop watching a folder and everything under it (moved or removed)."""
        prefix = rel + b"/"
        for path in [p for p in self.wds if p == rel or p.startswith(prefix)]:
            wd = self.wds.pop(path)
            self.dirs.pop(wd, None)
            self._lib.inotify_rm_watch(self.fd, wd)
        self.nested = {p for p in self.nested if not (p == rel or p.startswith(prefix))}

    def drain(self) -> tuple[set[bytes], bool]:
        """(top-relative paths changed since the last call, whether to take the full snapshot)."""
        paths: set[bytes] = set()
        rescan = False
        assert self.fd is not None
        while True:
            try:
                data = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            pos = 0
            while pos < len(data):
                wd, mask, _cookie, size = _EVENT.unpack_from(data, pos)
                name = data[pos + _EVENT.size: pos + _EVENT.size + size].rstrip(b"\0")
                pos += _EVENT.size + size
                if mask & _IN_Q_OVERFLOW:
                    rescan = True
                    continue
                base = self.dirs.get(wd)
                if base is None:
                    continue  # a watch already forgotten
                if mask & _IN_IGNORED:
                    if self.dirs.get(wd) == base:
                        self.dirs.pop(wd, None)
                        if self.wds.get(base) == wd:
                            self.wds.pop(base, None)
                    continue
                if not name:  # the folder itself: its parent reports it too, except for the top
                    if base == b"" and mask & (_IN_DELETE_SELF | _IN_MOVE_SELF | _IN_UNMOUNT):
                        rescan = True
                    continue
                path = os.path.join(base, name) if base else name
                if base == b"" and name == b".git":
                    continue
                if name == b".git":
                    # A repository made (or unmade) inside a watched folder: Git records the folder as one
                    # entry from now on, so stop watching inside it.
                    self._forget(base)
                    if mask & (_IN_CREATE | _IN_MOVED_TO):
                        self.nested.add(base)
                    else:
                        self.nested.discard(base)
                        with contextlib.suppress(_Unwatchable):
                            self._watch_tree(base)
                    paths.add(base)
                    continue
                if name in _RULE_NAMES:
                    rescan = True
                if mask & _IN_ISDIR:
                    if mask & (_IN_MOVED_FROM | _IN_DELETE):
                        self._forget(path)
                    elif mask & (_IN_CREATE | _IN_MOVED_TO):
                        full = os.path.join(self.top, path)
                        if os.path.lexists(os.path.join(full, b".git")):
                            self.nested.add(path)
                        else:
                            self._watch_tree(path)
                            # `.gitignore` files inside a folder moved in change what is ignored there: a
                            # full snapshot is simplest and exact
                            if mask & _IN_MOVED_TO:
                                rescan = True
                paths.add(path)
        return {self._outermost(p) for p in paths}, rescan

    def _outermost(self, path: bytes) -> bytes:
        """The path as Git sees it: inside a nested repository, that repository's folder."""
        if not self.nested:
            return path
        parts = path.split(b"/")
        for n in range(1, len(parts)):
            head = b"/".join(parts[:n])
            if head in self.nested:
                return head
        return path


def _file_id(path: Path) -> tuple[Any, ...] | None:
    """A file's identity for change detection: its stat and its last 32 bytes (an index's checksum: an
    index rewritten within one timestamp tick, same size, on a reused inode, still differs there)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return None
    except OSError as err:
        return ("error", err.errno)
    try:
        st = os.fstat(fd)
        tail = b""
        if stat.S_ISREG(st.st_mode) and st.st_size >= 32:
            tail = os.pread(fd, 32, st.st_size - 32)
        return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino, tail)
    finally:
        os.close(fd)


def _racy(file_id: tuple[Any, ...] | None, checked_ns: int) -> bool:
    """Could the file change again without its identity changing? When its checksum is zero (Git's
    `index.skipHash`) and its mtime is not older than when it was last read (as Git treats an entry
    whose mtime is not older than its index: timestamps are coarse, down to seconds on some file
    systems), it could."""
    if file_id is None or len(file_id) != 5:
        return False
    tail: bytes = file_id[4]
    mtime: int = file_id[0]
    return not tail.strip(b"\0") and mtime >= checked_ns - _COARSE_NS


def _content_id(path: Path) -> tuple[Any, ...] | None:
    """A small settings file's identity: its bytes (up to 1 MiB; its stat beyond), so an edit within the
    same timestamp tick is seen."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return None
    except OSError as err:
        return ("error", err.errno)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return ("special", st.st_mode, st.st_ino)
        if st.st_size > 1 << 20:
            return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)
        return (st.st_size, os.pread(fd, st.st_size + 1, 0))
    finally:
        os.close(fd)


class WorkTree:
    """The working tree of `repo` as a tree id (`tree()`), as `git add -A` into a copy of the index
    would write it, kept current incrementally while folders can be watched."""

    def __init__(self, repo: git.Repo, *, watch: bool | None = None) -> None:
        from vivary_git.worktree import refuse_foreign

        refuse_foreign(repo)
        assert repo.workdir is not None
        self.repo = repo
        self._scratch: Path | None = None
        index = Path(repo.git(["rev-parse", "--git-path", "index"]).stdout.decode("utf-8", "surrogateescape").strip())
        self._index = index if index.is_absolute() else repo.workdir / index
        self._index_id: tuple[Any, ...] | None = None
        self._index_read_ns = 0
        self._index_tree: str | None = None  # the tree of the user's index as `_index_id` identifies it
        self._rules: tuple[Any, ...] | None = None
        self._rule_paths: list[Path] | None = None
        self._tree: str | None = None  # the working tree
        self._scratch_tree: str | None = None  # the scratch index as last written (`_pending` aside)
        self._pending: set[bytes] = set()  # paths to give `git add` the next time it runs (this process's writes)
        self._dirty: set[bytes] = set()  # changed paths read from the watches but not yet added
        self._watcher: _Watcher | None = None
        self._watch = watching_available() if watch is None else watch
        self.full_snapshots = 0  # how many times the whole work tree was re-read (tests, VIVARY_STATS)
        self.partial_updates = 0

    @property
    def rules(self) -> tuple[Any, ...] | None:
        """What Git's config and excludes outside the work tree said at the last look (`tree()`)."""
        return self._rules

    @property
    def mode(self) -> str:
        return "inotify" if self._watcher is not None else "git add -A"

    def close(self) -> None:
        if self._watcher is not None:
            self._watcher.close()
            self._watcher = None
        if self._scratch is not None:
            with contextlib.suppress(FileNotFoundError):
                self._scratch.unlink()

    # --- the tree ---------------------------------------------------------------------------------

    def tree(self) -> str:
        """The tree id of the working tree as it is on disk now."""
        if self._watcher is None and self._watch:
            assert self.repo.workdir is not None
            try:
                self._watcher = _Watcher(self.repo.workdir)
            except (_Unwatchable, OSError):
                self._watch = False
            self._tree = None  # the snapshot is taken after the watches are in place
        if self._watcher is None or self._tree is None:
            return self._full()
        paths, rescan = self._watcher.drain()
        paths |= self._dirty
        self._dirty = set()
        if rescan or self._rule_files() != self._rules:
            return self._full()
        index_id = _file_id(self._index)
        if index_id != self._index_id or _racy(index_id, self._index_read_ns):
            got = self._index_changed(index_id, paths)
            return self._full() if got is None else got
        if paths:
            return self._update(paths)
        return self._tree

    def _scratch_path(self) -> Path:
        tmp = self.repo.vivary_dir / "tmp"
        derived.refuse(self.repo.vivary_dir, tmp, needs="for the working tree's snapshot")  # as worktree.py does
        # Made again when it is gone: a command that made the folder for its own scratch index removes it once
        # done when it is empty (worktree.py), which it is until this server has copied the index there.
        tmp.mkdir(parents=True, exist_ok=True)
        if self._scratch is None:
            _sweep_scratch(tmp)
            self._scratch = tmp / f"mcp-index.{os.getpid()}.{id(self)}"
        return self._scratch

    def _env(self, literal: bool = True) -> dict[str, str]:
        env = dict(os.environ, GIT_INDEX_FILE=str(self._scratch_path()))
        if literal:
            env["GIT_LITERAL_PATHSPECS"] = "1"  # names from the events, never pathspec magic
        else:
            env.pop("GIT_LITERAL_PATHSPECS", None)
        return env

    def _copy_index(self) -> tuple[Any, ...] | None:
        """Copy the user's index over the scratch index; returns the identity of what was copied. The scratch
        folder can go between its making and the copy (a command that made it removes it once done while it is
        empty, `worktree.py`): it is made again and the copy taken again, a bounded number of times."""
        for _ in range(_ATTEMPTS):
            scratch = self._scratch_path()
            self._index_read_ns = time.time_ns()
            before = _file_id(self._index)
            if before is None:
                with contextlib.suppress(FileNotFoundError):
                    scratch.unlink()
                return None
            try:
                shutil.copy2(self._index, scratch)  # the index's own mtime: Git's racy-file check needs it (source.py)
            except FileNotFoundError:
                continue  # the scratch folder went (made again), or the index did (the next look says so)
            if _file_id(self._index) != before:
                return ("unknown", time.time_ns())  # written meanwhile: the next look finds it changed
            return before
        raise GitError(self._vanishing())

    def _vanishing(self) -> str:
        """Why a snapshot gave up: its scratch folder went every time it was made again."""
        return (f"{self.repo.vivary_dir / 'tmp'}: removed {_ATTEMPTS} times in a row while this server put its "
                "scratch index there; stop whatever removes it (vivary keeps only rebuildable data there) and ask "
                "again")

    def _full(self) -> str:
        """`git add -A` of the whole work tree into a fresh copy of the index (as `source.py` does)."""
        from vivary_git.worktree import add_all

        for _ in range(_ATTEMPTS):
            if self._watcher is not None:
                self._watcher.drain()  # what happened until now is in the snapshot about to be taken
            self._rules = self._rule_files()
            self._index_id = self._copy_index()
            self._index_tree = self._tree_of(self._scratch_path()) if self._index_id is not None else self._empty()
            self._pending.clear()
            self._dirty.clear()
            try:
                add_all(self.repo, self._env(literal=False))  # `:/`: the whole work tree
                tree = self._write_tree()
            except GitError:
                # Without an index to copy, the scratch folder stays empty until Git writes there, and can go
                # meanwhile as it can before a copy: made again, and the snapshot taken again.
                assert self._scratch is not None
                if self._scratch.parent.is_dir():
                    raise
                continue
            self._tree = self._scratch_tree = tree
            self.full_snapshots += 1
            return tree
        raise GitError(self._vanishing())

    def _write_tree(self) -> str:
        return self.repo.git([*BOUNDED_HASH, "write-tree"], env=self._env()).stdout.decode().strip()

    def _update(self, paths: set[bytes], *, index_tree: str | None = None) -> str:
        """`git add -A` of just `paths` into the scratch index, first copied from the user's index when
        `index_tree` (the tree of that index) is given; then the tree."""
        assert self._tree is not None and self._scratch_tree is not None
        workdir = self.repo.workdir
        assert workdir is not None
        top = os.fsencode(workdir)
        # What the scratch index holds when `git add` runs: a path Git has never seen that is gone again
        # matches nothing, and `git add` refuses a pathspec that matches nothing, so leave those out.
        known = (index_tree,) if index_tree is not None else (self._tree, self._scratch_tree)
        asked = [p for p in sorted(paths | self._pending)
                 if os.path.lexists(os.path.join(top, p)) or any(self._in_tree(t, p) for t in known)]
        if index_tree is not None:
            copied = self._copy_index()
            if copied != self._index_id:
                return self._full()  # the index was written again meanwhile
        self._pending.clear()
        if asked:
            proc = self.repo.git([*_ADD, "--pathspec-from-file=-", "--pathspec-file-nul"], env=self._env(),
                                 input=b"\0".join(asked) + b"\0", check=False)
            if proc.returncode not in (0, 1):  # 1: an ignored path was named, or a file could not be read
                return self._full()
        if asked or index_tree is not None:
            self._tree = self._scratch_tree = self._write_tree()
        self.partial_updates += 1
        return self._tree

    def _empty(self) -> str:
        return str(self.repo.repo.TreeBuilder().write())

    def _in_tree(self, tree: str, path: bytes) -> bool:
        try:
            self.repo.repo[tree][os.fsdecode(path)]  # type: ignore[index]
        except (KeyError, ValueError, TypeError):
            return False
        return True

    def _tree_of(self, index: Path) -> str | None:
        """The tree of an index file (libgit2, from its cached trees); None when it has none (a conflict,
        an extension libgit2 does not read)."""
        pygit2 = self.repo.pygit2
        try:
            return str(pygit2.Index(str(index)).write_tree(self.repo.repo))
        except (pygit2.GitError, OSError, ValueError):
            return None

    def _index_changed(self, index_id: tuple[Any, ...] | None, dirty: set[bytes]) -> str | None:
        """The user's index was written: re-add only where it or the work tree may differ from what the
        scratch index holds. None: take the full snapshot."""
        old = self._index_tree
        if index_id is None or old is None or self._tree is None:
            return None
        self._index_read_ns = time.time_ns()
        new = self._tree_of(self._index)
        if new is None or _file_id(self._index) != index_id:
            return None
        self._index_id = index_id
        if new == old:
            # Rewritten without a change of content (`git status` refreshing stat data): nothing moved.
            return self._update(dirty) if dirty else self._tree
        paths = set(dirty)
        paths |= self._diff(self._tree, old)  # where the work tree differed from the index
        paths |= self._diff(old, new)  # what the index changed
        self._index_tree = new
        return self._update(paths, index_tree=new)

    def _diff(self, a: str, b: str) -> set[bytes]:
        raw = self.repo.repo
        out: set[bytes] = set()
        for delta in raw[a].diff_to_tree(raw[b]).deltas:  # type: ignore[attr-defined]
            out.add(delta.old_file.raw_path)
            out.add(delta.new_file.raw_path)
        return out

    def _rule_files(self) -> tuple[Any, ...]:
        """What decides ignores and filters from outside the work tree: Git's config and excludes."""
        if self._rule_paths is None:
            repo = self.repo
            home = Path(os.environ.get("HOME", "/nonexistent"))
            xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
            self._rule_paths = [repo.common_dir / "info" / "exclude", repo.common_dir / "info" / "attributes",
                                repo.common_dir / "config", repo.git_dir / "config.worktree", home / ".gitconfig",
                                xdg / "git" / "config", xdg / "git" / "ignore", xdg / "git" / "attributes"]
        return tuple(_content_id(f) for f in self._rule_paths)

    # --- this process's own writes ----------------------------------------------------------------

    def wrote(self, path: str, blob: str | None, tree: str) -> str | None:
        """This process has just written `path` (repository-relative) as `blob` (None: removed) into the
        work tree and the user's index, and `tree` is the working tree as it was with that one change.
        Returns `tree` when the work tree and the index hold exactly that, else None (something else
        changed too: the next `tree()` finds out what)."""
        if self._watcher is None or self._tree is None:
            return None
        paths, rescan = self._watcher.drain()
        raw_path = os.fsencode(path)
        workdir = self.repo.workdir
        assert workdir is not None
        self._pending.add(raw_path)  # the scratch index still has the old entry: re-added next time
        if rescan or self._rule_files() != self._rules:
            self._tree = None
            return None
        top = os.fsencode(workdir)
        for p in paths:
            if p == raw_path:
                ours = self._holds(workdir / path, blob)
            elif raw_path.startswith(p + b"/"):  # a folder the write made: it must hold just the note
                ours = self._only(os.path.join(top, p), raw_path[len(p) + 1:]) and self._holds(workdir / path, blob)
            else:  # a temporary file of the write, gone again; or someone else's change
                ours = not os.path.lexists(os.path.join(top, p)) and not self._in_tree(self._tree, p)
            if not ours:
                self._dirty |= paths  # `tree()` adds them
                return None
        index_id = _file_id(self._index)
        if index_id != self._index_id:
            expected = self._expected_index_tree(path, blob)
            self._index_read_ns = time.time_ns()
            if expected is None or self._tree_of(self._index) != expected or _file_id(self._index) != index_id:
                return None
            self._index_id, self._index_tree = index_id, expected
        self._tree = tree
        return tree

    @staticmethod
    def _only(folder: bytes, rest: bytes) -> bool:
        """Does `folder` hold nothing but the path `rest` (its folders and the file at its end)?"""
        head, _, tail = rest.partition(b"/")
        try:
            names = os.listdir(folder)
        except OSError:
            return False
        if names != [head]:
            return False
        return not tail or WorkTree._only(os.path.join(folder, head), tail)

    def _holds(self, full: Path, blob: str | None) -> bool:
        if blob is None:
            return not os.path.lexists(full)
        return self.repo.holds(full, blob)  # a bigger file put there meanwhile is not ours, and unread

    def _expected_index_tree(self, path: str, blob: str | None) -> str | None:
        from vivary_git.memory.writes.commits import _tree_with

        base = self._index_tree
        if base is None:
            return None
        return _tree_with(self.repo, self.repo.repo[base], path.split("/"), blob) or self._empty()


def _sweep_scratch(tmp: Path) -> None:
    """Remove the scratch indexes of servers that are gone (a killed one leaves its `mcp-index.PID.*`, ~10 kB to
    megabytes each, for good): a file whose process no longer runs is no one's."""
    for old in tmp.glob("mcp-index.*"):
        parts = old.name.split(".")
        if len(parts) < 3 or not parts[1].isdecimal() or int(parts[1]) == os.getpid():
            continue
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                old.unlink()
        except (PermissionError, OverflowError, ValueError):
            continue  # another user's process (or no such number): not ours to judge
