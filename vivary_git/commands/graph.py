"""`git vivary graph`: the typed graph as JSON (agents), DOT or Mermaid (people), or a text listing."""

from __future__ import annotations

import argparse
import sys

import msgspec

from vivary_git.commands._common import (
    add_private_args,
    add_source_args,
    emit_json,
    note_unknown_types,
    open_ws,
    write_out,
)
from vivary_git.errors import EXIT_OK
from vivary_git.escape import text as shown
from vivary_git.models import Edge


class GraphNode(msgspec.Struct, frozen=True):
    id: str
    type: str | None
    path: str


class GraphDoc(msgspec.Struct, frozen=True):
    """The contract's `graph --json` shape."""

    root: str
    nodes: list[GraphNode]
    edges: list[Edge]
    counts: dict[str, int]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "graph", help="print the graph: nodes and typed edges",
        description="Print the workspace graph of one tree: nodes (id, type, path) and edges "
        "(from, field, to, broken). --json for programs; --format dot|mermaid for pictures.",
    )
    add_source_args(p)
    p.add_argument("--json", action="store_const", const="json", dest="format", help="same as --format json")
    p.add_argument("--format", choices=("text", "json", "dot", "mermaid"), default="text",
                   help="output format (default: text)")
    p.add_argument("--type", action="append", metavar="TYPE", help="only nodes of this type (repeatable)")
    add_private_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    ws = open_ws(args)
    g = ws.graph()
    nodes = g.nodes
    edges = g.edges
    if args.type:
        wanted = set(args.type)
        if "" in wanted:
            wanted.add("untyped")  # as `query --type ''` says it
        nodes = [n for n in nodes if (n.type or "untyped") in wanted]
        keep = {n.id for n in nodes}
        edges = [e for e in edges if e.from_ in keep]
    from vivary_git.gates.private import masking, of_notes

    if masking(args.show_private):  # a CI log: others read it (docs/privacy.md)
        mask = of_notes(ws)
        if mask:
            nodes, edges = [mask.node(n) for n in nodes], [mask.edge(e) for e in edges]
    ws.report_stats()
    note_unknown_types(ws, args.type)
    if args.format == "json":
        emit_json(GraphDoc(
            root=str(ws.source.root),
            nodes=[GraphNode(n.id, n.type, n.path) for n in nodes],
            edges=edges,
            counts={"nodes": len(nodes), "edges": len(edges), "broken": sum(e.broken for e in edges)},
        ))
    elif args.format == "dot":
        from vivary_git.render import dot

        write_out(dot(nodes, edges, ws.root_name))
    elif args.format == "mermaid":
        from vivary_git.render import mermaid

        write_out(mermaid(nodes, edges))
    else:
        out = sys.stdout
        broken = sum(e.broken for e in edges)
        out.write(f"vivary graph: {len(nodes)} node(s), {len(edges)} edge(s)" + (f", {broken} broken" if broken else "")
                  + "\n")
        by_source: dict[str, list[Edge]] = {}
        for e in edges:
            by_source.setdefault(e.from_, []).append(e)
        for n in nodes:
            out.write(f"\n  {shown(n.id)}  [{shown(n.type or 'untyped')}]\n")
            for e in by_source.get(n.id, ()):
                out.write(f"    --{shown(e.field)}--> {shown(e.to)}{'  (broken)' if e.broken else ''}\n")
    return EXIT_OK
