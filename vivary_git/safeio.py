"""Files opened on someone's say-so: regular files only, and never more than a bound.

A FIFO where a file is expected blocks its reader until something writes to it (forever, in a hook),
a device such as `/dev/zero` never ends, and a kernel file such as `/proc/self/mem` fails or worse.
Every file the tool opens because a user named it (`--queries`, `--output`), because it sits in a
work tree or a plain folder (notes, config files, hook scripts), or because it is derived data in
`.git/vivary/`, is read or written through these helpers. They raise `FileRefused` (its text says
why, without the path; callers add the path and the fix, and choose the error: a finding, a config
error, a usage error, a cache miss) and let `OSError` through.
"""

from __future__ import annotations

import contextlib
import functools
import os
import stat
from pathlib import Path
from typing import IO, BinaryIO

__all__ = ["FileRefused", "check_output", "describe_size", "open_output", "read_regular", "read_regular_stat",
           "read_stream"]

_CHUNK = 1 << 20


class FileRefused(Exception):
    """Not a file we read or write: not a regular file, a kernel interface, or over a size limit."""


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


def check_output(path: Path | str) -> None:
    """Refuse to write to anything but a regular file (or a name that does not exist yet)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    _check(st, None)


def open_output(path: Path | str, *, append: bool, encoding: str = "utf-8") -> IO[str]:
    """`path` opened for writing text (created when missing; emptied unless `append`), refusing a FIFO,
    a device or a kernel file: opening a FIFO for writing would wait for a reader, forever."""
    check_output(path)
    flags = os.O_WRONLY | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) \
        | getattr(os, "O_CLOEXEC", 0) | (os.O_APPEND if append else 0)
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
