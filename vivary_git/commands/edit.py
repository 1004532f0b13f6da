"""`git vivary edit`: change a memory in place (append, replace a passage, expires, durability, tags), one commit."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json, index_after_write
from vivary_git.errors import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "edit", help="change a memory in place: append, replace a passage, expires, durability, tags; one commit",
        description="Change the memory ID (a note of type memory in the memory folder; your own notes are refused) "
        "in one commit, every other byte of its file unchanged: --append TEXT at its end, or at the end of the "
        "section under --heading H; --replace OLD --with NEW (OLD must occur exactly once in its body, else it is "
        "refused and the candidates are named); --expires, --durability, --tag (replacing its tags; --no-tags "
        "removes them). As `remember`: secrets refused, the note checked, your staging untouched (Vivary-Op: "
        "edit). The MCP `edit` tool does the same. Exit 0 (also when nothing changed); 2 usage error or unknown "
        "memory; 3 refused (not a memory, a passage not found or found twice, a secret, your changes on that "
        "path). docs/remember.md.",
    )
    p.add_argument("id", metavar="ID", help="the memory's id (or its path)")
    p.add_argument("--append", metavar="TEXT", help="text to add at the end (of the --heading section)")
    p.add_argument("--heading", metavar="H", help="append at the end of the section under this heading")
    p.add_argument("--replace", metavar="OLD", help="a passage of the memory, exactly as written (once)")
    p.add_argument("--with", dest="with_text", metavar="NEW", help="what replaces it (\"\" deletes it)")
    p.add_argument("--expires", metavar="DATE", help="an ISO date or date-time (ephemeral memories); \"\" removes it")
    p.add_argument("--durability", choices=("working", "durable", "pinned", "ephemeral"), help="its new tier")
    tags = p.add_mutually_exclusive_group()
    tags.add_argument("--tag", action="append", metavar="T", help="its tags (replacing them); repeatable")
    tags.add_argument("--no-tags", action="store_true", help="remove its tags")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.escape import text as shown
    from vivary_git.memory.writes import lifecycle, remember
    from vivary_git.workspace import open_workspace

    view = remember.open_view(open_workspace(args.cwd, root=args.root))
    result = lifecycle.edit(view, args.id, append=args.append, heading=args.heading, replace=args.replace,
                            with_text=args.with_text, expires=args.expires, durability=args.durability,
                            tags=[] if args.no_tags else args.tag, source="cli")
    if args.json:
        emit_json(result)
    elif result.changed:
        print(f"edited {shown(result.id or '')} ({shown(result.path or '')}) in "
              f"{(result.commit or '-')[:12]} on {result.ref}")
    else:
        print(f"vivary edit: {shown(result.message or '')}")
    if result.changed:
        index_after_write(args, "edit")
    return EXIT_OK
