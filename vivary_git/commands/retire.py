"""`git vivary retire`: archive a memory with a reason (or, with --delete, delete its note), one commit."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json, index_after_write
from vivary_git.errors import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "retire", help="archive a memory with a reason (hidden from search, kept); --delete removes its note",
        description="Retire the memory ID (a note of type memory in the memory folder; your own notes are refused) "
        "in one commit with a Vivary-Reason trailer: it gets `archived: DATE-TIME` and `archived_reason`, so "
        "search and recall leave it out (as a memory a dream compacted) while the note and its history stay "
        "(`git vivary log ID`). With --delete the note is deleted instead (the MCP `forget` tool; `git vivary "
        "forget` is another command: it deletes the semantic index). `git revert` of the commit undoes either. "
        "Exit 0 (also when already archived); 2 usage error or unknown memory; 3 refused (not a memory, a secret, "
        "your changes on that path). docs/remember.md.",
    )
    p.add_argument("id", metavar="ID", help="the memory's id (or its path)")
    p.add_argument("--reason", required=True, metavar="WHY", help="why, in one line (kept in the commit)")
    p.add_argument("--delete", action="store_true", help="delete the note instead of archiving it (forget it)")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.escape import text as shown
    from vivary_git.memory.writes import lifecycle, remember
    from vivary_git.workspace import open_workspace

    view = remember.open_view(open_workspace(args.cwd, root=args.root))
    do = lifecycle.forget if args.delete else lifecycle.retire
    result = do(view, args.id, reason=args.reason, source="cli")
    if args.json:
        emit_json(result)
        if result.changed:
            index_after_write(args, "retire")
        return EXIT_OK
    if result.changed:
        verb = "forgot" if args.delete else "retired"
        print(f"{verb} {shown(result.id or '')} ({shown(result.path or '')}) in {(result.commit or '-')[:12]} "
              f"on {result.ref}")
    if result.message:
        print(f"vivary retire: {shown(result.message)}")
    if result.changed:
        index_after_write(args, "retire")
    return EXIT_OK
