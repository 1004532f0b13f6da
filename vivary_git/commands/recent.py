"""`git vivary recent`: what was added, edited, retired, moved or dreamed in a time window, from Git history."""

from __future__ import annotations

import argparse
import sys

from vivary_git.commands._common import add_json_arg, add_workspace_args, between, emit_json
from vivary_git.errors import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from vivary_git.memory.writes.history import MAX_RECENT, OPS

    p = sub.add_parser(
        "recent", help="memory commits in a time window: added, edited, retired, moved, dreamed",
        description="The commits that changed memories between --since (default 7d: the last seven days) and "
        "--until, newest first, by commit date, on the memory branch: each with its op (the Vivary-Op trailer; "
        "`commit` for your own commits in the memory folder, `revert` for a `git revert`), the public memories it "
        "changed, a retirement's reason and a move's old id. The MCP `recent` tool does the same. Exit 0; 2 for "
        "a date or op it cannot read. docs/remember.md.",
    )
    p.add_argument("--since", default="7d", metavar="WHEN",
                   help="from: an ISO date or date-time (UTC when no zone is given), or an age: 90m, 24h, 7d, 2w")
    p.add_argument("--until", metavar="WHEN", help="before (a date alone: through that day)")
    p.add_argument("--op", action="append", default=[], choices=OPS, metavar="OP",
                   help=f"only this op ({', '.join(OPS)}); repeatable")
    p.add_argument("-n", "--max-count", type=between(1, MAX_RECENT), default=50, metavar="N",
                   help=f"at most N commits (default 50, at most {MAX_RECENT})")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.escape import text as shown
    from vivary_git.memory.writes import history, remember
    from vivary_git.workspace import open_workspace

    view = remember.open_view(open_workspace(args.cwd, root=args.root))
    got = history.recent(view, since=args.since or None, until=args.until, ops=args.op, limit=args.max_count)
    if args.json:
        emit_json(got)
        return EXIT_OK
    if got.note:
        print(f"vivary recent: {shown(got.note)}", file=sys.stderr)
    if not got.entries:
        print("vivary recent: no memory commits in that window")
    for e in got.entries:
        extra = f" (from {e.moved_from})" if e.moved_from else f" ({e.reason})" if e.reason else ""
        print(shown(f"{e.commit[:12]} {e.date} {e.op:<7} {', '.join(e.nodes)}{extra}"))
    if got.more:
        print(f"vivary recent: more than {args.max_count}; narrow the window or raise -n")
    return EXIT_OK
