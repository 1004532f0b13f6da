"""Memory history from Git: `git log` of a note's path, with the `Vivary-*` trailers of each commit."""

from __future__ import annotations

import msgspec

from vivary_git.errors import UsageError
from vivary_git.memory.writes.commits import TRAILER_NODE, TRAILER_OP, TRAILER_SOURCE, one_line

__all__ = ["LogEntry", "memory_log"]

_FIELDS = ("%H", "%aI", "%an", "%s", f"%(trailers:key={TRAILER_OP},valueonly,separator=%x2C)",
           f"%(trailers:key={TRAILER_NODE},valueonly,separator=%x2C)",
           f"%(trailers:key={TRAILER_SOURCE},valueonly,separator=%x2C)")


class LogEntry(msgspec.Struct, frozen=True):
    commit: str
    date: str
    author: str
    op: str  # the Vivary-Op trailer, or "edit" for a commit made otherwise
    node: str | None
    source: str | None  # agent | cli | None
    subject: str


def memory_log(cwd: str | None, ref: str | None, *, rev: str = "HEAD", root: str | None = None,
               limit: int = 50) -> list[LogEntry]:
    """Commits of `ref`'s note (admitted nodes only), or every commit with a Vivary-Op trailer."""
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
        found = view.require(ref)
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
        entries.append(LogEntry(commit=commit, date=date, author=one_line(author, 80), op=one_line(op, 16) or "edit",
                                node=one_line(node, 200) or None, source=one_line(source, 16) or None,
                                subject=one_line(subject, 120)))
    return entries
