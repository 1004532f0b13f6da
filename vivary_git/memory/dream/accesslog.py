"""The local memory access log and the dream due policy (docs/dream.md).

Memory events (an add, an update, a link or unlink, a search or recall that returned memories) are
appended to `.git/vivary/dream/<workspace>/events.log`, one JSON line each: `{"t": epoch seconds,
"op": ..., "ids": [memory ids]}`. Only public memory ids are logged: never a query, a text or a path
of a private file. The log is local (under the Git directory: never in the work tree, never pushed),
bounded (past 256 KiB it is cut to its newest half) and survives kills: each event is one `write` of
one line to a file opened for appending, and a torn last line is skipped when read.

Due policy: a dream is due after 10 memory events since the last completed dream, or once 24 hours
have passed since it (since the oldest event, when there has been none) with at least 5 events;
otherwise it is deferred, and the answer says when it will be due.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace

__all__ = ["DUE_AFTER_DAY", "DUE_EVENTS", "Due", "Event", "Log", "log_for"]

DUE_EVENTS = 10
DUE_AFTER_DAY = 5
DAY = 24 * 3600.0
MAX_LOG = 256 * 1024
MAX_IDS = 20
OPS = ("add", "update", "link", "unlink", "hit", "dream")


class Event(msgspec.Struct, frozen=True):
    t: float
    op: str
    ids: list[str] = []


class _State(msgspec.Struct):
    last_dream: float | None = None  # when the last dream run completed (epoch seconds)
    runs: int = 0


class Due(msgspec.Struct, frozen=True, omit_defaults=True):
    due: bool
    events: int  # memory events since the last completed dream
    last_dream: float | None
    reason: str
    due_at: float | None = None  # when not due yet: when it would be with enough events (the 24 h rule)

    @property
    def hint(self) -> str | None:
        """The short `dream_due` hint every memory answer carries when a dream is due."""
        if not self.due:
            return None
        return (f"{self.reason}: run `git vivary dream` (or the `dream` tool) to compact recent memories into "
                "reviewable tasks")


_decode_event = msgspec.json.Decoder(Event).decode


class Log:
    """One workspace's access log and dream state, under `dir` (created when first written)."""

    def __init__(self, dir: Path | None) -> None:
        self.dir = dir

    @property
    def events_path(self) -> Path | None:
        return None if self.dir is None else self.dir / "events.log"

    def record(self, op: str, ids: Iterable[str], *, when: float | None = None) -> None:
        """Append one event. A log that cannot be written is no reason to fail a memory operation."""
        path = self.events_path
        if path is None:
            return
        picked = sorted(set(ids))[:MAX_IDS]
        line = msgspec.json.encode(Event(time.time() if when is None else when, op, picked)) + b"\n"
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                os.write(fd, line)
                size = os.fstat(fd).st_size
            finally:
                os.close(fd)
            if size > MAX_LOG:
                self._shrink(path)
        except OSError:
            pass

    def _shrink(self, path: Path) -> None:
        from vivary_git.localcache import write_atomic

        data = path.read_bytes()
        cut = data.find(b"\n", len(data) - MAX_LOG // 2)
        write_atomic(path, data[cut + 1:] if cut >= 0 else b"")

    def events(self, since: float | None = None, *, limit: int | None = None) -> list[Event]:
        """Events newer than `since`, oldest first; with `limit`, at most the newest `limit` of them (read
        from the end of the file, so the hot path reads a few KiB however long the log is)."""
        path = self.events_path
        if path is None:
            return []
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            return []
        found: list[Event] = []
        try:
            size = os.fstat(fd).st_size
            chunk = 8192
            end = size
            tail = b""
            done = False
            while end > 0 and not done:
                start = max(0, end - chunk)
                os.lseek(fd, start, os.SEEK_SET)
                data = os.read(fd, end - start) + tail
                lines = data.split(b"\n")
                tail = lines[0] if start > 0 else b""
                body = lines[1:] if start > 0 else lines
                for raw in reversed(body):
                    ev = _event(raw)
                    if ev is None:
                        continue
                    if since is not None and ev.t <= since:
                        done = True
                        break
                    found.append(ev)
                    if limit is not None and len(found) >= limit:
                        done = True
                        break
                end = start
                chunk = min(chunk * 2, MAX_LOG * 2)
        finally:
            os.close(fd)
        found.reverse()
        return found

    # --- dream state ------------------------------------------------------------------------------

    def _state_path(self) -> Path | None:
        return None if self.dir is None else self.dir / "state.json"

    def state(self) -> _State:
        path = self._state_path()
        if path is None:
            return _State()
        try:
            from vivary_git.safeio import read_regular

            return msgspec.json.decode(read_regular(path, 64 * 1024), type=_State)
        except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):
            return _State()

    def completed(self, when: float | None = None) -> None:
        """Record a completed dream run: the events before it no longer count toward the next one."""
        path = self._state_path()
        if path is None:
            return
        from vivary_git.localcache import write_atomic

        st = self.state()
        st.last_dream = time.time() if when is None else when
        st.runs += 1
        write_atomic(path, msgspec.json.encode(st))

    def due(self, now: float | None = None) -> Due:
        now = time.time() if now is None else now
        last = self.state().last_dream
        recent = self.events(last, limit=DUE_EVENTS)
        n = len(recent)
        if n >= DUE_EVENTS:
            return Due(True, n, last, f"dream due: {DUE_EVENTS}+ memory events since the last dream")
        since = last if last is not None else (recent[0].t if recent else None)
        day_at = None if since is None else since + DAY
        if day_at is not None and now >= day_at and n >= DUE_AFTER_DAY:
            return Due(True, n, last, f"dream due: {n} memory events and 24 h since the last dream")
        need = DUE_EVENTS - n
        when = ""
        if day_at is not None and n < DUE_AFTER_DAY:
            when = f", or at {DUE_AFTER_DAY} events after {_iso(day_at)}"
        elif day_at is not None:
            when = f", or at {_iso(day_at)}"
        return Due(False, n, last, f"dream deferred: {n} memory event(s) since the last dream; due after "
                   f"{need} more{when}", due_at=day_at)

    def touched(self) -> list[str]:
        """Memory ids touched since the last completed dream, most recently touched first."""
        out: dict[str, None] = {}
        for ev in reversed(self.events(self.state().last_dream)):
            for i in ev.ids:
                out.setdefault(i, None)
        return list(out)


def _event(raw: bytes) -> Event | None:
    raw = raw.strip()
    if not raw:
        return None
    try:
        ev = _decode_event(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None  # a torn line (a kill mid-write) or a foreign one
    return ev if ev.op in OPS else None


def _iso(t: float) -> str:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def workspace_key(prefix: str) -> str:
    """The folder of one workspace's log: its root folder's name and a hash of its repository prefix."""
    name = "".join(c if c.isalnum() or c in "-_" else "-" for c in (prefix.rsplit("/", 1)[-1] or "root"))[:40]
    return f"{name}-{hashlib.sha256(prefix.encode('utf-8', 'surrogateescape')).hexdigest()[:10]}"


def log_for(ws: Workspace) -> Log:
    repo = ws.source.repo
    if repo is None:
        return Log(None)
    with contextlib.suppress(Exception):
        from vivary_git.localcache import cache_folder

        # Never written where a link out of the Git folder leads (derived.py): then no log, said once.
        return Log(cache_folder(repo.vivary_dir, f"dream/{workspace_key(ws.source.prefix)}",
                                "the memory access log"))
    return Log(None)


def memory_ids(ids: Sequence[tuple[str, str | None]]) -> list[str]:
    """The ids of the memories among (id, type) pairs."""
    from vivary_git.config import MEMORY_TYPE

    return [i for i, t in ids if t == MEMORY_TYPE]
