"""Search's time window and its pages: `since`/`until` on a note's own date or its last commit's, and a cursor.

The window leaves out the nodes dated outside it (a note's date: `observed_at`, else `updated`, `modified`,
`date` or `created`, `history.note_date`; a note that says none is outside every window on that date; its
commit date: the last commit on HEAD that changed it, `history.commit_dates`, and a note not committed yet is
dated now). The cursor is the offset of the next page with a digest of the question it belongs to: a cursor
from another question is refused, never read as an offset into this one.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from vivary_git.errors import UsageError

if TYPE_CHECKING:
    from vivary_git.mcp.warm import State

__all__ = ["DATES", "MAX_OFFSET", "Window", "cursor_for", "offset_of", "outside", "window_of"]

DATES = ("note", "commit")
MAX_OFFSET = 1000
_CURSOR = re.compile(r"\A(\d{1,5})\.([0-9a-f]{16})\Z")
_NOTE_DATES: dict[str, float | None] = {}  # blob id -> its note date (seconds), a pure function of the blob


class Window:
    def __init__(self, start: dt.datetime | None, end: dt.datetime | None, date: str) -> None:
        self.start = start.timestamp() if start is not None else None
        self.end = end.timestamp() if end is not None else None
        self.date = date

    def holds(self, when: float | None) -> bool:
        if when is None:
            return False
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)


def window_of(since: str | None, until: str | None, date: str) -> Window | None:
    """The window `since`/`until` give on `date` ("note" or "commit"), or None when neither is given."""
    from vivary_git.memory.writes.history import window

    if date not in DATES:
        raise UsageError(f"date must be note or commit (got {date!r})")
    if not since and not until:
        return None
    start, end = window(since or None, until or None)
    return Window(start, end, date)


def outside(st: State, win: Window) -> frozenset[str]:
    """The public nodes the window leaves out."""
    view = st.view
    if win.date == "commit":
        from vivary_git.memory.writes.commits import read_from
        from vivary_git.memory.writes.history import commit_dates

        repo = view.ws.source.repo
        dates = commit_dates(repo, "HEAD", view.ws.source.prefix) if repo is not None else {}
        if repo is not None:  # the memory branch's dates over HEAD's, when it is a branch of its own: not followed
            _, rev, _ = read_from(repo, view.cfg.memory.remember.branch)
            if rev != "HEAD":
                dates = {**dates, **commit_dates(repo, rev, view.ws.source.prefix)}
        now = time.time()
        return frozenset(n.id for n in st.nodes.values() if not win.holds(dates.get(n.path, now)))
    from vivary_git.memory.writes.history import note_date

    out = []
    for n in st.nodes.values():
        if n.blob not in _NOTE_DATES:
            got = note_date(view.note_of(n.blob).fields)
            _NOTE_DATES[n.blob] = got.timestamp() if got is not None else None
        if not win.holds(_NOTE_DATES[n.blob]):
            out.append(n.id)
    if len(_NOTE_DATES) > 200_000:
        _NOTE_DATES.clear()
    return frozenset(out)


def _digest(question: Sequence[Any]) -> str:
    return hashlib.sha256(json.dumps(list(question), sort_keys=True, default=str).encode()).hexdigest()[:16]


def cursor_for(offset: int, question: Sequence[Any]) -> str:
    return base64.urlsafe_b64encode(f"{offset}.{_digest(question)}".encode()).decode().rstrip("=")


def offset_of(cursor: str | None, question: Sequence[Any]) -> int:
    """The offset a cursor holds for this question (0 without one)."""
    if not cursor:
        return 0
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
    except (ValueError, UnicodeDecodeError):
        raw = ""
    m = _CURSOR.match(raw) if len(cursor) <= 64 else None
    if m is None:
        raise UsageError("cursor is not one this server gave: pass next_cursor from the previous answer as it is")
    if m.group(2) != _digest(question):
        raise UsageError("cursor belongs to another search (a different query, filters, window or mode): start "
                         "again without it")
    offset = int(m.group(1))
    if offset > MAX_OFFSET:
        raise UsageError(f"a search pages through its first {MAX_OFFSET} results; narrow the query instead")
    return offset
