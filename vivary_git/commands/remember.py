"""`git vivary remember`: write a memory as a note and commit it, beside your own work."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, emit_json
from vivary_git.errors import EXIT_OK, EXIT_REFUSED


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "remember", help="add a memory: a note in the memory folder, committed with a Vivary-Op trailer",
        description="Write TEXT as a Markdown note in the workspace's memory folder (default memories/, "
        "[memory.remember] in .vivary/memory.toml) and commit it on the checked-out branch without touching your "
        "staged changes or other edits: `git status` and `git diff --cached` read as before. Refused when the text "
        "looks like a credential, or when an existing memory says the same (cosine >= 0.92 with the local memory "
        "enabled, else the same normalised text) unless --force. Exit 0 added; 2 usage or config error; 3 refused "
        "(near-duplicate, secret, the note's path changed by you). docs/remember.md.",
    )
    p.add_argument("text", nargs="+", metavar="TEXT", help="what to remember (words are joined by spaces)")
    p.add_argument("--title", metavar="T", help="its title (default: the first words of TEXT)")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="a tag; repeatable")
    p.add_argument("--type", default="memory", metavar="TYPE", help="its type (default memory)")
    p.add_argument("--durability", choices=("working", "durable", "pinned", "ephemeral"),
                   help="how long it should matter (default: [memory.remember] durability, working)")
    p.add_argument("--link", action="append", default=[], metavar="FIELD:ID",
                   help="an edge from the new memory, e.g. related:deploy-runbook; repeatable")
    p.add_argument("--force", action="store_true", help="add even when a near-duplicate exists")
    p.add_argument("--root", metavar="DIR", help="workspace directory (default: nearest folder with tropo.toml)")
    p.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory import remember
    from vivary_git.memory.probe_loader import probe_for
    from vivary_git.workspace import open_workspace

    ws = open_workspace(args.cwd, root=args.root)
    view = remember.open_view(ws)
    result = remember.add(
        view, " ".join(args.text), title=args.title, tags=args.tag, type_name=args.type,
        durability=args.durability, links=args.link, force=args.force, source="cli", probe=probe_for(view),
    )
    if args.json:
        emit_json(result)
    elif result.ok:
        print(f"remembered {result.id} ({result.path}) in {result.commit[:12] if result.commit else '-'} "
              f"on {result.ref}")
    else:
        print(f"vivary remember: {result.message}")
        if result.duplicate is not None:
            print(f"    {result.duplicate.text[:200]}")
    if result.dream_due and not args.json:
        print(f"vivary remember: {result.dream_due}")
    return EXIT_OK if result.ok else EXIT_REFUSED
