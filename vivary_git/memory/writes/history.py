"""Memory history from Git: a memory's commits followed by its id, what changed in a time window, and dates.

- `memory_log`: `git log` of a note with the `Vivary-*` trailers of each commit. A memory is followed by
  its id through the memory folder's history, not by its path: across a `move` (its `Vivary-From` trailer,
  or a rename Git detects), and after it is gone (forgotten, expired, or its add reverted), so
  `git vivary log ID` answers for a memory that no longer exists as for one that does.
- `recent`: the memory commits in a time window (adds, edits, retirements, moves, dreams, and your own
  commits in the memory folder: `edit`, or `revert` for a `git revert`), newest first.
- `window`, `note_date`, `commit_dates`: the time window a caller gives (an ISO date or date-time, or
  `7d`-style ages), the date a note says it was written, and the date of the last commit of each note.
"""

from __future__ import annotations

import datetime as dt
import re
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.errors import UsageError
from vivary_git.memory.writes.commits import (
    TRAILER_FROM,
    TRAILER_NODE,
    TRAILER_OP,
    TRAILER_REASON,
    TRAILER_SOURCE,
    one_line,
    read_from,
)

if TYPE_CHECKING:
    from vivary_git import git
    from vivary_git.memory.writes.remember import View
    from vivary_git.workspace import Workspace

__all__ = ["OPS", "LogEntry", "Recent", "RecentEntry", "commit_dates", "memory_log", "note_date", "recent",
           "window"]

_FIELDS = ("%H", "%aI", "%an", "%s", f"%(trailers:key={TRAILER_OP},valueonly,separator=%x2C)",
           f"%(trailers:key={TRAILER_NODE},valueonly,separator=%x2C)",
           f"%(trailers:key={TRAILER_SOURCE},valueonly,separator=%x2C)")
# The walk's record: the same, with the committer date, every Vivary-Node apart (%x1c), the move's origin and
# the reason of a retirement, then the changed paths (`--name-status -z`).
_WALK = ("%H", "%aI", "%cI", "%an", "%s", f"%(trailers:key={TRAILER_OP},valueonly,separator=%x2C)",
         f"%(trailers:key={TRAILER_NODE},valueonly,separator=%x1C)",
         f"%(trailers:key={TRAILER_SOURCE},valueonly,separator=%x2C)",
         f"%(trailers:key={TRAILER_FROM},valueonly,separator=%x1C)",
         f"%(trailers:key={TRAILER_REASON},valueonly,separator=%x2C)")
# Ops a memory commit can carry (and `commit`/`revert` for commits made otherwise), for `recent`'s filter.
OPS = ("add", "update", "edit", "link", "unlink", "retire", "forget", "move", "dream", "expire", "commit", "revert")
MAX_RECENT = 500
_AGE = re.compile(r"\A\s*(\d{1,6})\s*(m|min|h|d|w)\s*\Z")


class LogEntry(msgspec.Struct, frozen=True):
    commit: str
    date: str
    author: str
    op: str  # the Vivary-Op trailer, or "commit" for a commit made otherwise ("revert" for a `git revert`)
    node: str | None
    source: str | None  # agent | cli | None
    subject: str


class RecentEntry(msgspec.Struct, frozen=True, omit_defaults=True):
    commit: str
    date: str  # the commit date, ISO 8601
    op: str
    nodes: list[str]  # the public memories it changed
    subject: str
    source: str | None = None
    reason: str | None = None  # retire, forget
    moved_from: str | None = None  # move: the memory's id before


class Recent(msgspec.Struct, frozen=True, omit_defaults=True):
    since: str | None
    until: str | None
    ref: str
    entries: list[RecentEntry]
    more: bool = False  # more commits matched than `limit`
    note: str | None = None  # why the configured memory branch was not read (a symbolic ref), and the fix


class _Commit(msgspec.Struct, frozen=True):
    commit: str
    date: str
    committed: str
    author: str
    subject: str
    op: str
    nodes: list[str]
    source: str
    moved_from: list[str]
    reason: str
    files: list[tuple[str, list[str]]]  # (status letter, [path] or [old, new]): repository-relative
    vivary: bool  # made by vivary-git (it carries a Vivary-Op trailer)


# --- windows and dates ------------------------------------------------------------------------------------


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(microsecond=0)


def _moment(value: str, what: str, *, end: bool, now: dt.datetime) -> dt.datetime:
    from vivary_git.memory.dream.durability import parse_when

    age = _AGE.match(value)
    if age is not None:
        n, unit = int(age.group(1)), age.group(2)
        step = {"m": dt.timedelta(minutes=1), "min": dt.timedelta(minutes=1), "h": dt.timedelta(hours=1),
                "d": dt.timedelta(days=1), "w": dt.timedelta(weeks=1)}[unit]
        return now - n * step
    got = parse_when(value)
    if got is None:
        raise UsageError(f"{what} {value!r} is not a date: give an ISO date or date-time (2026-11-30, "
                         "2026-11-30T12:00:00Z; UTC when no zone is given) or an age such as 90m, 24h, 7d or 2w")
    if end and len(value.strip()) == 10:
        got += dt.timedelta(days=1)  # `until` a day: through the end of that day
    return got


def window(since: str | None, until: str | None, *, now: dt.datetime | None = None,
           ) -> tuple[dt.datetime | None, dt.datetime | None]:
    """(start, end) of a time window: `since` inclusive, `until` exclusive (a date alone: through that day),
    UTC; either may be None (open)."""
    now = now or _now()
    for what, value in (("since", since), ("until", until)):
        if value is not None and (not isinstance(value, str) or len(value) > 40):
            raise UsageError(f"{what} must be a date or an age (at most 40 characters)")
    start = _moment(since, "since", end=False, now=now) if since else None
    end = _moment(until, "until", end=True, now=now) if until else None
    if start is not None and end is not None and end <= start:
        raise UsageError(f"the window is empty: until ({until}) is not after since ({since})")
    return start, end


_DATE_FIELDS = ("observed_at", "updated", "modified", "date", "created")


def note_date(fields: Mapping[str, Any]) -> dt.datetime | None:
    """When a note says it was written: its `observed_at` (a memory's), else `updated`, `modified`, `date` or
    `created`; None when it says none."""
    from vivary_git.memory.dream.durability import parse_when

    for key in _DATE_FIELDS:
        got = parse_when(fields.get(key))
        if got is not None:
            return got
    return None


_DATES_LOCK = threading.Lock()
_DATES: dict[tuple[str, str, str], dict[str, float]] = {}


def commit_dates(repo: git.Repo, rev: str, prefix: str) -> dict[str, float]:
    """The commit date (seconds since the epoch) of the last commit on `rev` that changed each note under
    `prefix` (workspace-relative paths). One walk of the history, kept for the last commit asked about."""
    from vivary_git.source import is_note

    tip = repo.git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{rev}^{{commit}}"], check=False)
    head = tip.stdout.decode().strip()
    if tip.returncode != 0 or not head:
        return {}
    key = (str(repo.git_dir), head, prefix)
    with _DATES_LOCK:
        got = _DATES.get(key)
        if got is not None:
            return got
    out = repo.git(["log", "-z", "--format=%x1d%ct", "--name-only", "--no-renames", "--end-of-options", head, "--",
                    f":(literal){prefix}" if prefix else "."]).stdout.decode("utf-8", "surrogateescape")
    dates: dict[str, float] = {}
    top = f"{prefix}/" if prefix else ""
    for record in out.split("\x1d"):
        when, _, names = record.partition("\n")
        if not when.strip():
            continue
        stamp = float(when.strip().strip("\0"))
        for name in names.split("\0"):
            name = name.strip("\n")
            if name.startswith(top) and is_note(name):
                dates.setdefault(name[len(top):], stamp)
    with _DATES_LOCK:
        _DATES.clear()
        _DATES[key] = dates
    return dates


# --- the walk -----------------------------------------------------------------------------------------------


def _walk(repo: git.Repo, rev: str, pathspec: Sequence[str], extra: Sequence[str] = ()) -> list[_Commit]:
    """The commits of `rev` (newest first) that change `pathspec`, with their trailers and changed paths."""
    fmt = "%x1d" + "%x1f".join(_WALK) + "%x1e"
    args = ["log", "-z", f"--format={fmt}", "--name-status", "-M", *extra, "--end-of-options", rev, "--",
            *pathspec]
    proc = repo.git(args, check=False)
    if proc.returncode != 0:
        return []  # an unborn branch: no history yet
    out = proc.stdout.decode("utf-8", "surrogateescape")
    commits = []
    for record in out.split("\x1d"):
        head, sep, rest = record.partition("\x1e")
        if not sep:
            continue
        parts = head.split("\x1f")
        if len(parts) != len(_WALK):
            continue
        commit, date, committed, author, subject, op, nodes, source, moved, reason = parts
        tokens = [t for t in rest.lstrip("\0\n").split("\0")]
        files: list[tuple[str, list[str]]] = []
        i = 0
        while i < len(tokens):
            status = tokens[i].strip("\n")
            if not status:
                i += 1
                continue
            n = 2 if status[:1] in ("R", "C") else 1
            files.append((status[:1], tokens[i + 1:i + 1 + n]))
            i += 1 + n
        op = one_line(op, 16)
        vivary = bool(op)
        if not op:
            op = "revert" if subject.startswith('Revert "') else "commit"
        commits.append(_Commit(commit=commit, date=date, committed=committed, author=one_line(author, 80),
                               subject=one_line(subject, 120), op=op,
                               nodes=[one_line(x, 200) for x in nodes.split("\x1c") if x.strip()],
                               source=one_line(source, 16), moved_from=[one_line(x, 200) for x in moved.split("\x1c")
                                                                        if x.strip()],
                               reason=one_line(reason, 200), files=files, vivary=vivary))
    return commits


class _Ids:
    """A repository path's node id in this workspace, for note paths inside it."""

    def __init__(self, ws: Workspace) -> None:
        from vivary_git.graph import node_id

        self._node_id = node_id
        self.top = f"{ws.source.prefix}/" if ws.source.prefix else ""
        self.root_name = ws.root_name
        self.ids = ws.config.links.ids

    def __call__(self, path: str) -> str | None:
        from vivary_git.source import is_note

        if not path.startswith(self.top) or not is_note(path):
            return None
        return self._node_id(path[len(self.top):], self.root_name, self.ids)


def _public(view: View, paths: Sequence[str]) -> set[str]:
    """Those of the repository-relative `paths` the privacy boundary admits now."""
    from vivary_git.memory.snapshot import decide_for_source

    if not paths:
        return set()
    uniq = sorted(set(paths))
    return {p for p, v in zip(uniq, decide_for_source(view.ws, uniq, view.cfg.policy()), strict=True)
            if not v.private}


def _follow(commits: Sequence[_Commit], ident: str, id_of: _Ids) -> tuple[list[_Commit], list[str]]:
    """The commits that changed the memory `ident` (newest first), following it back across moves; and the
    repository paths it had."""
    followed = {ident}
    out: list[_Commit] = []
    paths: list[str] = []
    for c in commits:
        hit = bool(followed & set(c.nodes))
        for status, names in c.files:
            mine = [n for n in names if id_of(n) in followed]
            if not mine:
                continue
            hit = True
            paths += [n for n in mine if n not in paths]
            if status == "R" and id_of(names[1]) in followed:
                old = id_of(names[0])
                if old is not None:
                    followed.add(old)
                    paths.append(names[0])
        if hit and c.op == "move" and followed & set(c.nodes):
            followed.update(c.moved_from)
        if hit:
            out.append(c)
    return out, paths


def memory_log(cwd: str | None, ref: str | None, *, rev: str = "HEAD", root: str | None = None,
               limit: int = 50) -> list[LogEntry]:
    """Commits of `ref`'s note (admitted nodes only; a memory followed by its id, also once it is gone), or
    every commit with a Vivary-Op trailer."""
    from vivary_git.memory.writes.remember import open_view
    from vivary_git.workspace import open_workspace

    if limit < 1:
        raise UsageError(f"-n must be at least 1 (got {limit})")
    ws = open_workspace(cwd, rev=rev, root=root)
    repo = ws.source.repo
    if repo is None:
        raise UsageError(f"{ws.source.root} is not in a Git repository: memory history is Git history")
    fmt = "%x1f".join(_FIELDS) + "%x1e"
    args = ["log", f"--format={fmt}", f"--max-count={limit}", "--end-of-options", rev]
    if ref is not None:
        view = open_view(ws)
        found = view.find(ref)
        folder = view.repo_path(view.cfg.memory.remember.folder)
        if found is None or view.repo_path(found.path).startswith(f"{folder}/"):
            return _memory_history(view, repo, ref, found.id if found is not None else None, rev, folder, limit)
        args += ["--", f":(literal){view.repo_path(found.path)}"]
    else:
        args += ["--", "."]
    out = repo.git(args).stdout.decode("utf-8", "replace")
    entries = []
    for record in out.split("\x1e"):
        record = record.strip("\n")
        if not record:
            continue
        parts = record.split("\x1f")
        if len(parts) != len(_FIELDS):
            continue
        commit, date, author, subject, op, node, source = parts
        if ref is None and not op:
            continue
        op = one_line(op, 16) or ("revert" if subject.startswith('Revert "') else "commit")
        entries.append(LogEntry(commit=commit, date=date, author=one_line(author, 80), op=op,
                                node=one_line(node, 200) or None, source=one_line(source, 16) or None,
                                subject=one_line(subject, 120)))
    return entries


def _memory_history(view: View, repo: git.Repo, ref: str, found: str | None, rev: str, folder: str,
                    limit: int) -> list[LogEntry]:
    """A memory's commits by its id through the memory folder's history: `found` (its id, when it exists now)
    or `ref` (an id or a path it had)."""
    id_of = _Ids(view.ws)
    ident = found
    if ident is None:
        path = ref.strip().lstrip("/")
        ident = id_of(view.repo_path(path)) if path.endswith((".md", ".markdown")) else path
    unknown = UsageError(f"no public node {ref!r} in this workspace, and no memory of that id in the history "
                         "(ids come from `search` or `git vivary recent`; private notes are never shown)")
    if not ident:
        raise unknown
    got, paths = _follow(_walk(repo, rev, [f":(literal){folder}"]), ident, id_of)
    if found is None and (not got or not paths or paths[0] not in _public(view, paths[:1])):
        raise unknown  # never a memory here, or one the boundary holds back now: as an unknown id
    return [LogEntry(commit=c.commit, date=c.date, author=c.author, op=c.op, node=",".join(c.nodes) or None,
                     source=c.source or None, subject=c.subject) for c in got[:limit]]


# --- recent -------------------------------------------------------------------------------------------------


def recent(view: View, *, since: str | None = "7d", until: str | None = None, ops: Sequence[str] = (),
           limit: int = 50) -> Recent:
    """The memory commits between `since` and `until` (committer dates; default the last 7 days), newest first:
    each with its op, the public memories it changed, and a retirement's reason or a move's origin."""
    for op in ops:
        if op not in OPS:
            raise UsageError(f"op {op!r} is not one of {', '.join(OPS)}")
    if not 1 <= limit <= MAX_RECENT:
        raise UsageError(f"limit must be 1 to {MAX_RECENT} (got {limit})")
    start, end = window(since, until)
    repo = view.ws.source.repo
    if repo is None:
        raise UsageError(f"{view.ws.source.root} is not in a Git repository: memory history is Git history")
    # The branch memories are committed on: `[memory.remember] branch` when it is a branch of its own, else HEAD.
    ref, rev, note = read_from(repo, view.cfg.memory.remember.branch)
    extra = [f"--since={start.strftime('%Y-%m-%d %H:%M:%S +0000')}"] if start is not None else []
    if end is not None:
        extra.append(f"--until={end.strftime('%Y-%m-%d %H:%M:%S +0000')}")
    folder = view.repo_path(view.cfg.memory.remember.folder)
    id_of = _Ids(view.ws)
    picked: list[_Commit] = []
    for c in _walk(repo, rev, [], extra):
        when = dt.datetime.fromisoformat(c.committed)
        if (start is not None and when < start) or (end is not None and when >= end):
            continue
        if not c.vivary and not any(n.startswith(f"{folder}/") for _, names in c.files for n in names):
            continue
        if ops and c.op not in ops:
            continue
        picked.append(c)
    paths = [n for c in picked for _, names in c.files for n in names if id_of(n) is not None]
    public = _public(view, paths)
    entries: list[RecentEntry] = []
    for c in picked:
        touched = {id_of(n): n for _, names in c.files for n in names if id_of(n) is not None}
        shown = {i for i, p in touched.items() if i is not None and p in public}
        nodes = [n for n in c.nodes if n in shown or (n not in touched and n in view.nodes)]
        nodes += sorted(i for i in shown if i not in nodes and i is not None and
                        touched[i].startswith(f"{folder}/"))
        if not nodes:
            continue  # only private notes, or nothing this workspace reads
        entries.append(RecentEntry(commit=c.commit, date=c.committed, op=c.op, nodes=nodes, subject=c.subject,
                                   source=c.source or None, reason=c.reason or None,
                                   moved_from=c.moved_from[0] if c.op == "move" and c.moved_from else None))
    stamp = _stamp
    return Recent(since=stamp(start), until=stamp(end), ref=ref, entries=entries[:limit], more=len(entries) > limit,
                  note=note)


def _stamp(when: dt.datetime | None) -> str | None:
    return None if when is None else when.astimezone(dt.UTC).isoformat().replace("+00:00", "Z")
