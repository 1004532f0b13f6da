"""Files opened on someone's say-so: regular files only, and never more than a bound.

A FIFO where a file is expected blocks its reader until something writes to it (forever, in a hook),
a device such as `/dev/zero` never ends, and a kernel file such as `/proc/self/mem` fails or worse.
Every file the tool opens because a user named it (`--queries`, `--output`), because it sits in a
work tree or a plain folder (notes, config files, hook scripts), or because it is derived data in
`.git/vivary/`, is read or written through these helpers. They raise `FileRefused` (its text says
why, without the path; callers add the path and the fix, and choose the error: a finding, a config
error, a usage error, a cache miss) and let `OSError` through.

A file written on a user's say-so (`ci --output`, `--sarif`, `--summary`, `--github-output`) goes
through `open_output`, which also refuses a symbolic link inside a Git work tree (`LinkRefused`): a
commit can hold `reports -> ../outside`, and `--sarif=reports/vivary.sarif` must not write outside the
checkout. Outside any work tree the path is the user's own, and links there (`/tmp -> /private/tmp`)
are followed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from pathlib import Path
from typing import IO, BinaryIO

__all__ = [
    "FileRefused", "LinkRefused", "check_output", "check_regular", "describe_size", "open_output", "read_regular",
    "read_regular_stat", "read_stream", "remove_output",
]

_CHUNK = 1 << 20


class FileRefused(Exception):
    """Not a file we read or write: not a regular file, a kernel interface, or over a size limit."""


class LinkRefused(FileRefused):
    """An output path with a symbolic link inside a Git work tree (a folder on the way, or the file): a
    commit may have put it there. Its text names the link and the work tree."""


def describe_size(n: int) -> str:
    """`8 MiB`, `64 KiB`, `1,000 bytes`: limits as people write them."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n:,} bytes"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "not a regular file"


@functools.cache
def _kernel_devices() -> frozenset[int]:
    """The devices of /proc and /sys: their files call themselves regular but are kernel interfaces."""
    found = set()
    for where in ("/proc", "/sys"):
        with contextlib.suppress(OSError):
            found.add(os.stat(where).st_dev)
    return frozenset(found)


def _check(st: os.stat_result, limit: int | None) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = _kind(st.st_mode)
        raise FileRefused(f"is {kind}" + ("" if kind == "not a regular file" else ", not a regular file"))
    if st.st_dev in _kernel_devices():
        raise FileRefused("is a kernel interface (under /proc or /sys), not a regular file")
    if limit is not None and st.st_size > limit:
        raise FileRefused(f"is {st.st_size:,} bytes, over the {describe_size(limit)} limit")


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def read_regular(path: Path | str, limit: int | None, *, follow_symlinks: bool = True) -> bytes:
    """The bytes of `path`, which must be a regular file of at most `limit` bytes (None: any size).

    The file is checked before it is opened (opening some devices has effects) and again through the
    open descriptor (it may have been swapped), opened non-blocking (a FIFO swapped in cannot block
    the open), and read no further than `limit` whatever its size claims to be."""
    return _read(path, limit, follow_symlinks, after=False)[0]


def read_regular_stat(path: Path | str, limit: int | None, *, follow_symlinks: bool = True,
                      ) -> tuple[bytes, os.stat_result]:
    """`read_regular`, and the status of the file read, taken through the descriptor once the bytes are read (a
    write meanwhile shows in it)."""
    return _read(path, limit, follow_symlinks, after=True)


def _read(path: Path | str, limit: int | None, follow_symlinks: bool, *, after: bool) -> tuple[bytes, os.stat_result]:
    if not follow_symlinks and os.path.islink(path):
        raise FileRefused("is a symbolic link, not a regular file")
    _check(os.stat(path), limit)
    flags = _READ_FLAGS | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    try:
        st = os.fstat(fd)
        _check(st, limit)
        data = _read_fd(fd, limit, st.st_size)
        return data, os.fstat(fd) if after else st
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int | None, size_hint: int) -> bytes:
    """Up to `limit` bytes (None: the size the file had, and a little), in one read when the file is as
    big as it says (no copy of a large cache file); more than the limit is `FileRefused`."""
    cap = limit if limit is not None else max(size_hint, 0) + _CHUNK
    parts: list[bytes] = []
    total = 0
    want = min(max(size_hint, 0), cap) + 1
    while total <= cap:
        part = os.read(fd, min(want, cap + 1 - total))
        if not part:
            break
        parts.append(part)
        total += len(part)
        want = _CHUNK
    if total > cap:
        raise FileRefused(f"is over the {describe_size(cap)} limit")
    return parts[0] if len(parts) == 1 else b"".join(parts)


def read_stream(stream: BinaryIO, limit: int) -> bytes:
    """At most `limit` bytes of an already open stream (standard input); more is `FileRefused`."""
    data = stream.read(limit + 1)
    if len(data) > limit:
        raise FileRefused(f"is over the {describe_size(limit)} limit")
    return data


def check_regular(path: Path | str) -> None:
    """Refuse anything but a regular file (or a name that does not exist yet), following links."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    _check(st, None)


# O_PATH where there is one: a folder is walked through, never read, so one the user may only enter (mode
# 0711, a shared home) is no obstacle.
_DIR_FLAGS = getattr(os, "O_PATH", os.O_RDONLY) | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_AT = os.open in os.supports_dir_fd and os.stat in os.supports_dir_fd and bool(_NOFOLLOW)


def _is_top(fd: int, inside: os.stat_result | None) -> bool:
    """Whether the folder open as `fd` is the top of a Git work tree: it holds `.git` (a folder, or the file
    of a linked worktree or a submodule; a commit cannot hold one), or it is the work tree the caller named."""
    try:
        os.stat(".git", dir_fd=fd, follow_symlinks=False)
        return True
    except OSError:
        pass
    return inside is not None and os.path.samestat(os.fstat(fd), inside)


def _link(path: str, top: str) -> LinkRefused:
    return LinkRefused(f"{path} is a symbolic link inside the Git work tree {top}, and an output is never written "
                       "through one (a commit may have put it there)")


class _Place:
    """Where an output file goes: its folder open as `fd` (reached without following a symbolic link inside
    a Git work tree), its name there, and whether that folder is inside a work tree (`top`)."""

    def __init__(self, path: Path | str, inside: Path | None) -> None:
        full = os.path.abspath(path)  # `..` takes away the folder before it, as in Git's paths
        folder, self.name = os.path.split(full)
        if not self.name:
            raise FileRefused("is a directory, not a regular file")
        mark = os.stat(inside) if inside is not None else None
        self.top: str | None = None
        self.fd = os.open(os.sep, _DIR_FLAGS)
        walked = os.sep
        try:
            for part in [p for p in folder.split(os.sep) if p]:
                if self.top is None and _is_top(self.fd, mark):
                    self.top = walked
                walked = os.path.join(walked, part)
                if self.top is not None and stat.S_ISLNK(os.stat(part, dir_fd=self.fd, follow_symlinks=False).st_mode):
                    raise _link(walked, self.top)
                # O_NOFOLLOW as well: a link swapped in since is not followed (and is no folder, below).
                fd = os.open(part, _DIR_FLAGS | (_NOFOLLOW if self.top is not None else 0), dir_fd=self.fd)
                os.close(self.fd)
                self.fd = fd
                if not stat.S_ISDIR(os.fstat(fd).st_mode):
                    raise _link(walked, self.top or os.sep)
            if self.top is None and _is_top(self.fd, mark):
                self.top = walked
            self.shown = os.path.join(walked, self.name)
            if self.top is not None:
                below = os.path.relpath(self.shown, self.top).split(os.sep)
                if any(p.casefold() == ".git" for p in below):
                    # `--output .git/HEAD` replaced HEAD (no repository was left), `.git/hooks/...` would be a hook
                    raise FileRefused(f"is inside the Git folder of {self.top}, which only Git writes")
        except BaseException:
            os.close(self.fd)
            raise

    def stat(self) -> os.stat_result | None:
        """The file as it is (None when there is none); a symbolic link inside a work tree is refused."""
        try:
            st = os.stat(self.name, dir_fd=self.fd, follow_symlinks=self.top is None)
        except FileNotFoundError:
            return None
        if stat.S_ISLNK(st.st_mode):
            assert self.top is not None
            raise _link(self.shown, self.top)
        return st

    def close(self) -> None:
        os.close(self.fd)


def _check_links(path: Path | str, inside: Path | None, *, file_too: bool = True) -> None:
    """Where the system cannot open a path folder by folder (no `dir_fd`): the same refusal, by `lstat`."""
    full = Path(os.path.abspath(path))
    inside_abs = Path(os.path.abspath(inside)) if inside is not None else None
    tops = [d for d in full.parents if os.path.lexists(d / ".git") or d == inside_abs]
    if not tops:
        return
    if any(p.casefold() == ".git" for p in full.relative_to(tops[-1]).parts):
        raise FileRefused(f"is inside the Git folder of {tops[-1]}, which only Git writes")
    for d in (full, *full.parents) if file_too else full.parents:
        if d == tops[-1]:
            break
        if d.is_symlink():
            raise _link(str(d), str(tops[-1]))


def check_output(path: Path | str, *, inside: Path | None = None) -> None:
    """Refuse an output path before anything is written: a FIFO, a device or a kernel file (`FileRefused`),
    or a symbolic link inside a Git work tree, the file or a folder on its way (`LinkRefused`). `inside`: the
    top of the work tree the command reads, when Git found it elsewhere than by a `.git` on the path (every
    folder holding `.git` is one already). A missing folder is `FileNotFoundError`."""
    if not _AT:
        _check_links(path, inside)
        check_regular(path)
        return
    place = _Place(path, inside)
    try:
        st = place.stat()
        if st is not None:
            _check(st, None)
    finally:
        place.close()


def open_output(path: Path | str, *, append: bool, encoding: str = "utf-8", inside: Path | None = None) -> IO[str]:
    """`path` opened for writing text (created when missing; emptied unless `append`), refused as
    `check_output` says: opening a FIFO for writing would wait for a reader, forever, and a link inside a
    work tree could lead anywhere. The folders and the file are opened without following a link there, so
    one swapped in after the check is refused too."""
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
        | getattr(os, "O_CLOEXEC", 0) | (os.O_APPEND if append else 0)
    if _AT:
        place = _Place(path, inside)
        try:
            st = place.stat()
            if st is not None:
                _check(st, None)
            fd = os.open(place.name, flags | (_NOFOLLOW if place.top is not None else 0), 0o666, dir_fd=place.fd)
        finally:
            place.close()
    else:
        _check_links(path, inside)
        check_regular(path)
        fd = os.open(path, flags, 0o666)
    try:
        _check(os.fstat(fd), None)
        os.set_blocking(fd, True)
        if not append:
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "a" if append else "w", encoding=encoding)
    except BaseException:
        os.close(fd)
        raise


def remove_output(path: Path | str, *, inside: Path | None = None) -> None:
    """Remove an output file left from before (so a run that stops early leaves none to be taken for its
    own), reaching it as `open_output` does: never through a link inside a work tree. Only a regular file is
    removed, and a symbolic link in its place inside a work tree (the link, never what it names); a FIFO, a
    device, a kernel file or a link elsewhere stays, for `check_output` to refuse. A missing file or folder is
    nothing to remove."""
    if not _AT:
        _check_links(path, inside, file_too=False)
        with contextlib.suppress(FileNotFoundError):
            st = os.lstat(path)
            if stat.S_ISREG(st.st_mode) and st.st_dev not in _kernel_devices():
                os.unlink(path)
        return
    try:
        place = _Place(path, inside)
    except FileNotFoundError:
        return
    try:
        st = os.stat(place.name, dir_fd=place.fd, follow_symlinks=False)
        regular = stat.S_ISREG(st.st_mode) and st.st_dev not in _kernel_devices()
        if regular or (stat.S_ISLNK(st.st_mode) and place.top is not None):
            os.unlink(place.name, dir_fd=place.fd)
    except FileNotFoundError:
        pass
    finally:
        place.close()
