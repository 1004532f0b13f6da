"""Parse many blobs on every core: cold runs on big workspaces are dominated by reading and parsing
blobs and deriving each document's facts.

The work is split into one share per core. This process does the first share itself, natively;
each other share goes to a forked child (cheap: it inherits the imported modules and the caller's
rules, which need not be pickled), which opens its own handle on the repository (a libgit2 handle
must not be shared across a fork), does its share, writes it back through a pipe as msgpack (far
cheaper to move than pickles) and exits. A child that fails in any way has its share done here.
Measured on 2 cores and 10,000 notes, this beat a `multiprocessing` pool of two workers with an
idle parent by ~0.1 s: no task queue, no result thread, and one process's results never cross a pipe.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO, Generic, TypeVar

import msgspec

from vivary_git.models import Note

MIN_BLOBS = 1500  # below this, starting workers costs more than it saves
T = TypeVar("T")
R = TypeVar("R")


def usable_cores() -> int:
    """Cores this process may run on: `os.process_cpu_count` (Python 3.13+), else sched_getaffinity, both of
    which respect CPU pinning in containers where cpu_count() overstates."""
    counted = getattr(os, "process_cpu_count", None)
    if counted is not None:
        return max(1, counted() or 1)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def workers() -> int:
    """How many processes parse: `VIVARY_JOBS` if set (1 turns parallel parsing off), else the cores."""
    env = os.environ.get("VIVARY_JOBS", "").strip()
    if env.isascii() and env.isdigit() and int(env) > 0:  # `²` is a digit to isdigit(), not to int(): a traceback
        return int(env)
    return min(usable_cores(), 8)


def can_fork() -> bool:
    """Whether work may go to forked children here: Linux (forking is not safe with some macOS system
    libraries), more than one worker wanted, and no other thread running (a thread holding a lock at
    the fork, say `recall`'s runtime import, could leave a child waiting forever on it)."""
    return (sys.platform.startswith("linux") and hasattr(os, "fork") and workers() > 1
            and threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods())


def _shares(count: int) -> int:
    """Processes worth using for `count` blobs (this one included): 1 when parallelism does not pay
    or is unavailable."""
    n = workers()
    if n < 2 or count < MIN_BLOBS or not can_fork():
        return 1
    return n


def _blob_reader(reopen: Callable[[], Any]) -> Callable[[str], bytes]:
    """A reader on a fresh repository handle (in a child: never the parent's), bounded as the parent's
    (`Source.read`): a blob over `NOTE_MAX_BYTES` is `git.BlobTooLarge`, never inflated here either."""
    import pygit2

    from vivary_git.git import read_blob
    from vivary_git.models import NOTE_MAX_BYTES

    pygit2.settings.enable_strict_hash_verification(False)  # as in git.Repo
    odb = reopen().odb  # `git.Repo.reopen`: objects read where the parent reads them

    def read(oid: str) -> bytes:
        return read_blob(odb, pygit2.Oid(hex=oid), NOTE_MAX_BYTES)

    return read


def _split(
    items: Sequence[T],
    here: Callable[[Sequence[T]], list[Any]],
    there: Callable[[Sequence[T]], bytes],
    decode: Callable[[bytes], list[Any]],
    redone: Callable[[int], None] | None = None,
) -> list[Any] | None:
    """`here(share)` for the first share in this process and `decode(there(share))` for each other
    share in a forked child; results in item order. None when one process should do it all.
    `redone(n)` is told of every share of n items a child failed at and this process did again."""
    n = _shares(len(items))
    if n < 2:
        return None
    size = -(-len(items) // n)
    shares = [items[i:i + size] for i in range(0, len(items), size)]

    def work(share: Sequence[T]) -> Callable[[], Sequence[bytes]]:
        return lambda: (there(share),)

    # No process to be had (limits, sandbox), or a child that fails: this process does that share.
    children = [_child(work(share)) or (-1, -1) for share in shares[1:]]
    try:
        results = here(shares[0])
    except BaseException:
        # Refused here (a blob the clone lacks, `git.MissingObject`) or interrupted: the children's shares are not
        # wanted, and a long-lived caller (the MCP server) must not keep them waiting on a pipe nobody reads.
        _stop(children)
        raise
    for n, ((pid, r), share) in enumerate(zip(children, shares[1:], strict=True)):
        data = b""
        if pid > 0:
            with os.fdopen(r, "rb") as pipe:
                data = pipe.read()
            if reap(pid) != 0:
                data = b""
        got = None
        if data:
            try:
                got = decode(data)
            except (msgspec.DecodeError, msgspec.ValidationError, ValueError):
                got = None
        if got is None or len(got) != len(share):
            if redone is not None:
                redone(len(share))
            try:
                got = here(share)
            except BaseException:
                _stop(children[n + 1:])
                raise
        results.extend(got)
    return results


def _stop(children: Sequence[tuple[int, int]]) -> None:
    """Kill and reap forked children (pid, pipe) whose work is not wanted, closing their pipes."""
    for pid, r in children:
        if pid > 0:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.close(r)
            reap(pid)


def _child(produce: Callable[[], Iterable[bytes]]) -> tuple[int, int] | None:
    """Fork a child that writes the parts `produce()` returns to a pipe and exits 0, or exits 1 on any
    failure at all, in either case without running this process's cleanup. Parts given by an iterator are
    written behind, by a thread, as they come: making the next does not wait for the reader. (pid, the
    pipe's reading end) here; None when no pipe or process was to be had."""
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:
        code = 1
        try:
            os.close(r)
            parts = produce()
            with os.fdopen(w, "wb") as out:
                if isinstance(parts, Iterator):
                    _write_behind(out, parts)
                else:
                    for part in parts:
                        out.write(part)
            code = 0
        except BaseException:  # the caller does the work itself
            pass
        finally:
            os._exit(code)
    os.close(w)
    return pid, r


def _write_behind(out: BinaryIO, parts: Iterator[bytes]) -> None:
    """Write `parts` to `out` from a thread while the next ones are made here; re-raise the writer's error."""
    import queue

    pending: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    failed: list[BaseException] = []

    def write() -> None:
        try:
            while (part := pending.get()) is not None:
                out.write(part)
            out.flush()
        except BaseException as err:  # the reader left: said where the parts are made
            failed.append(err)

    writer = threading.Thread(target=write, name="vivary-write-behind", daemon=True)
    writer.start()
    try:
        for part in parts:
            if failed:
                break
            pending.put(part)
    finally:
        pending.put(None)
        writer.join()
    if failed:
        raise failed[0]


def reap(pid: int) -> int:
    """Wait for a forked child; its wait status, or 0 when the system reaped it already (SIGCHLD
    ignored by whoever started us): then what it wrote is judged by itself (decoded and counted)."""
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def _encode(value: Any) -> bytes:
    """What a child writes back: msgpack behind the local cache's header, so a file name that is not
    UTF-8 (a str with surrogates, which msgpack cannot encode) is spelled out rather than failing the
    child's whole share (`localcache.encode`)."""
    from vivary_git import localcache

    return localcache.encode(value)


def _decoder(plain: msgspec.msgpack.Decoder[Any], spelled: Any) -> Callable[[bytes], list[Any]]:
    from vivary_git import localcache

    def decode(data: bytes) -> list[Any]:
        got: list[Any] = localcache.decode(data, spelled, plain)
        return got

    return decode


def parse_many(reopen: Callable[[], Any], oids: Sequence[str], read: Callable[[str], bytes],
               redone: Callable[[int], None] | None = None) -> list[tuple[str, Note]] | None:
    """Parse `oids` across processes (`read` reads a blob in this one); None when parallelism does
    not pay or is unavailable. `redone` as in `_split`."""
    from vivary_git.parse import parse_read

    decoder = msgspec.msgpack.Decoder(list[tuple[str, Note]])

    def each(share: Sequence[str], read: Callable[[str], bytes]) -> list[tuple[str, Note]]:
        return [(oid, parse_read(read, oid)) for oid in share]

    def here(share: Sequence[str]) -> list[tuple[str, Note]]:
        return each(share, read)

    def there(share: Sequence[str]) -> bytes:
        return _encode(each(share, _blob_reader(reopen)))

    return _split(oids, here, there, _decoder(decoder, list[tuple[str, Note]]), redone)


def derive_many(
    reopen: Callable[[], Any],
    items: Sequence[T],
    read: Callable[[str], bytes],
    work: Callable[[Callable[[str], bytes], Sequence[T]], list[R]],
    result_type: Any,
    spelled_type: Any,
    redone: Callable[[int], None] | None = None,
) -> list[R] | None:
    """`work(read, share)` for each share of `items`, across processes: this one's with `read`, a child's
    with a reader of its own, its results sent back in msgpack and decoded as `result_type` (which may keep
    parts encoded, as `msgspec.Raw`; a share holding a file name that is not UTF-8 comes back spelled out
    and is decoded as `spelled_type`). The caller's `work` parses each blob and derives its facts, and
    may write what it made to the local caches itself (parses.py): then no process holds every parse.
    None when parallelism does not pay or is unavailable. `redone` as in `_split`."""
    decoder = msgspec.msgpack.Decoder(result_type)

    def here(share: Sequence[T]) -> list[R]:
        return work(read, share)

    def there(share: Sequence[T]) -> bytes:
        return _encode(work(_blob_reader(reopen), share))

    return _split(items, here, there, _decoder(decoder, spelled_type), redone)


class Forked:
    """`fn()` computed in a forked child while this process goes on with other work: the second core's share
    of a job. `fn` returns bytes, or yields `frames` of them one after another (the child writes each as soon
    as it is made, from a thread, so that making the next never waits for this process to read). Each
    `result()` is the child's next frame, or None when no child could do it (not Linux, one worker wanted,
    another thread running, no process to be had, the child failed before that frame was whole) or `fork`
    was false (too little work to be worth a process): then the caller does the work itself, as it would
    without. The last frame counts only when the child also exited cleanly."""

    _LENGTH = 8

    def __init__(self, fn: Callable[[], bytes | Iterator[bytes]], *, fork: bool = True, frames: int = 1) -> None:
        self._pid = -1
        self._pipe = -1
        self._reader: BinaryIO | None = None
        self._left = frames
        if not fork or not can_fork():
            return

        def framed() -> Iterator[bytes]:  # length first: a child cut short is told from one that finished
            made = fn()
            for data in (made,) if isinstance(made, bytes) else made:
                yield len(data).to_bytes(self._LENGTH, "little")
                yield data

        started = _child(framed)  # None: no process to be had (limits, sandbox); the caller does it
        if started is not None:
            self._pid, self._pipe = started

    @property
    def forked(self) -> bool:
        """Whether a child is at work on it (until its last `result()` or `cancel()`)."""
        return self._pid > 0

    def cancel(self) -> None:
        """Stop the child, when the rest of its work is not wanted after all (or the caller raised)."""
        if self._pid > 0:
            pid, self._pid = self._pid, -1
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            self._close()
            reap(pid)

    def _close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        else:
            os.close(self._pipe)

    def result(self) -> bytes | None:
        """The child's next frame (waiting for it), or None: see the class."""
        if self._pid <= 0:
            return None
        if self._reader is None:
            self._reader = os.fdopen(self._pipe, "rb")
        head = self._reader.read(self._LENGTH)
        data = self._reader.read(int.from_bytes(head, "little")) if len(head) == self._LENGTH else None
        whole = data is not None and len(data) == int.from_bytes(head, "little")
        self._left -= 1
        if whole and self._left > 0:
            return data
        pid, self._pid = self._pid, -1
        if whole:
            whole = not self._reader.read(1)  # nothing after the last frame
        self._close()
        status = reap(pid)
        return data if whole and status == 0 else None


class Background(Generic[T]):
    """Run `fn` in a thread now; `result()` waits and returns its value or re-raises its error. For
    work that mostly waits (Git subprocesses, imports of C extensions) beside work in this thread.
    Not a daemon: the interpreter waits for it at exit rather than tear down what it is loading."""

    def __init__(self, fn: Callable[[], T], name: str = "vivary-background") -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(fn,), name=name)
        self._thread.start()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value = fn()
        except BaseException as err:  # handed to the caller's thread by result()
            self._error = err
        finally:
            self._done.set()

    def result(self) -> T:
        # Waited for on an event, not by `join`: a Ctrl-C that interrupts `Thread.join` on Python 3.11 leaves the
        # thread marked as ended while it runs (a later join returns at once, and the interpreter's exit does
        # not wait for it), so an index run could not wait for its model to stop and save what it made.
        self._done.wait()
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]  # set when no error was raised
