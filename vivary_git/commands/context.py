"""`git vivary context`: one note and its typed graph neighbourhood, cut to a token budget."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, at_least, between, emit_json
from vivary_git.errors import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from vivary_git.context import MAX_DEPTH

    p = sub.add_parser(
        "context", help="a note and its graph neighbourhood to depth N, with typed edges, cut to a token budget",
        description="The note ID, every public node within --depth edges of it (either direction, nearest "
        "first) and every edge between them with its field, with their bodies, cut to --budget tokens (JSON "
        "length / 4): the neighbours' bodies become snippets first (farthest first), then the farthest neighbours "
        "go, then the note's own body is shortened. Private notes are never shown. The MCP `context` tool does "
        "the same. Exit 0; 2 for an unknown node. docs/mcp.md.",
    )
    p.add_argument("id", metavar="ID", help="a node id or a note's path")
    p.add_argument("--depth", type=between(0, MAX_DEPTH), default=1, metavar="N",
                   help=f"neighbours within N edges (default 1, at most {MAX_DEPTH})")
    p.add_argument("--budget", type=at_least(0), default=2000, metavar="TOKENS",
                   help="token budget (default 2000; 0: none)")
    p.add_argument("--no-content", action="store_true", help="snippets instead of bodies")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git import context
    from vivary_git.escape import text as shown
    from vivary_git.memory.writes import remember
    from vivary_git.workspace import open_workspace

    view = remember.open_view(open_workspace(args.cwd, root=args.root))
    node = view.require(args.id)
    out, inn = context.adjacency((e.source_id, e.field, e.target_id) for e in view.snapshot.edges)
    got = context.build(node.id, view.nodes, out, inn, lambda nid: view.note(view.nodes[nid]).body,
                        depth=args.depth, budget=args.budget, include_content=not args.no_content)
    if args.json:
        emit_json(got)
        return EXIT_OK
    for n in got.nodes:
        print(shown(f"{'  ' * n.distance}{n.id} [{n.type or '-'}] {n.title}"))
    for e in got.edges:
        print(shown(f"  {e.source} -{e.field}-> {e.to}"))
    first = got.nodes[0]
    if first.content:
        print()
        for line in first.content.splitlines():
            print(shown(line))
    if got.dropped or got.trimmed:
        print(f"vivary context: {got.dropped} neighbour(s) left out, {got.trimmed} body(ies) cut for the budget "
              f"of {got.budget} tokens")
    return EXIT_OK
