"""`git vivary log`: a node's memory history, read from Git (the commits and their Vivary trailers)."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, at_least, emit_json


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "log", help="memory history from Git: the commits that wrote a node, or every memory commit",
        description="With ID (or a note's path): the commits that changed that note, newest first, with the "
        "memory operation each made (Vivary-Op trailer: add, update, edit, link, unlink, retire, forget, move, "
        "dream, expire; `commit` for your own commits, `revert` for a `git revert`). A memory is followed by its "
        "id: across a move, and once it is gone (forgotten, expired, its add reverted). Without ID: every memory "
        "commit (those with a Vivary-Op trailer) on the branch. Private notes have no history here. Exit 0; 2 for "
        "an unknown node. docs/remember.md.",
    )
    p.add_argument("id", nargs="?", metavar="ID", help="a node id or path (default: all memory commits)")
    p.add_argument("-n", "--max-count", type=at_least(1), default=50, metavar="N",
                   help="at most N commits (default 50)")
    p.add_argument("--rev", metavar="REV", default="HEAD", help="history of this commit (default HEAD)")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.writes.history import memory_log

    entries = memory_log(args.cwd, args.id, rev=args.rev, root=args.root, limit=args.max_count)
    if args.json:
        emit_json(entries)
        return 0
    if not entries:
        print("vivary log: no memory commits" + (f" for {args.id!r}" if args.id else ""))
    for e in entries:
        print(f"{e.commit[:12]} {e.date} {e.op:<7} {e.node or '-'}  {e.subject}")
    return 0
