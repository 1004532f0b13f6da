"""`git vivary move`: rename or move a memory within the memory folder, the links to it rewritten, one commit."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json, index_after_write
from vivary_git.errors import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "move", help="rename or move a memory in the memory folder, rewriting the links to it; one commit",
        description="Move the memory ID to TO: a new name (beside it) or a path in the memory folder "
        "(ops/deploy-days, or memories/ops/deploy-days). In the same commit (Vivary-Op: move, Vivary-From: the "
        "old id) the links to it in other memories are rewritten to reach it, as Obsidian's \"update links on "
        "rename\" does; your own notes are left as they are and listed, unless --rewrite-user-links (or "
        "rewrite_user_links = true under [memory.remember] in .vivary/memory.toml). `git vivary log` follows "
        "the memory across the move. Exit 0; 2 usage error or unknown memory; 3 refused (not a memory, the "
        "name taken, private or where no note is read (an exclude names it), a link that cannot be rewritten "
        "safely, your changes on a path). docs/remember.md.",
    )
    p.add_argument("id", metavar="ID", help="the memory's id (or its path)")
    p.add_argument("to", metavar="TO", help="its new name, or its path in the memory folder")
    p.add_argument("--rewrite-user-links", action="store_true",
                   help="rewrite the links to it in your own notes too (they are committed with the move)")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.escape import text as shown
    from vivary_git.memory.writes import lifecycle, remember
    from vivary_git.workspace import open_workspace

    view = remember.open_view(open_workspace(args.cwd, root=args.root), machine=args.json)
    result = lifecycle.move(view, args.id, args.to, rewrite_user_links=True if args.rewrite_user_links else None,
                            source="cli")
    if args.json:
        emit_json(result)
        if result.changed:
            index_after_write(args, "move")
        return EXIT_OK
    if result.changed:
        print(f"moved {shown(result.moved_from)} to {shown(result.id)} ({shown(result.path)}) in "
              f"{(result.commit or '-')[:12]} on {result.ref}; links rewritten in {len(result.rewritten)} note(s)")
    if result.message:
        print(f"vivary move: {shown(result.message)}")
    if result.changed:
        index_after_write(args, "move")
    return EXIT_OK
