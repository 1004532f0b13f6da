"""`git vivary blast`: what depends on a node, or what a change between two trees touches."""

from __future__ import annotations

import argparse
import sys

import msgspec

from vivary_git.commands._common import add_json_arg, add_source_args, at_least, emit_json, open_ws
from vivary_git.errors import EXIT_OK, UsageError


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "blast", help="impact: who reaches a node, or what a change base..head touches",
        description="`blast ID`: every node with a path of edges to ID (reverse BFS, nearest distance wins). "
        "`blast --base REV [--head REV]`: nodes whose content or edges changed between the two trees, edges "
        "the change broke or fixed, and everything that reaches a changed node. --head defaults to the "
        "working tree (or the index with --staged).",
    )
    p.add_argument("id", nargs="?", metavar="ID", help="node ID (omit with --base)")
    p.add_argument("--depth", type=at_least(0), metavar="N", help="stop after N hops (default: no limit)")
    p.add_argument("--base", metavar="REV", help="compare this tree (the PR base) ...")
    p.add_argument("--head", metavar="REV", help="... with this one (default: the tree chosen by --rev/--staged)")
    add_source_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.blast import blast, change_impact

    if args.base is None:
        if args.id is None:
            raise UsageError("name a node ID (`blast ID`) or a base revision (`blast --base REV`)")
        if args.head is not None:
            raise UsageError("--head only makes sense with --base")
        ws = open_ws(args)
        report = blast(ws.graph(), args.id, args.depth)
        report = msgspec.structs.replace(report, root=str(ws.source.root))  # absolute, as graph --json
        ws.report_stats()
        if args.json:
            emit_json(report)
            return EXIT_OK
        target_type = ws.graph().by_id()[report.target].type or "untyped"
        limit = f" (depth ≤ {report.depth})" if report.depth is not None else ""
        print(f"vivary blast: {report.target} [{target_type}] — {report.counts['impacted']} document(s) "
              f"depend on it{limit}")
        for i in report.impacted:
            print(f"  {i.id}  [{i.type or 'untyped'}]   (distance {i.distance}, via {i.via})")
        return EXIT_OK
    if args.id is not None:
        raise UsageError("give either a node ID or --base, not both")
    if args.head is not None and (args.rev is not None or args.staged):
        raise UsageError(f"--head names the head tree; drop {'--staged' if args.staged else '--rev'}")
    from vivary_git.workspace import open_workspace

    base_ws = open_workspace(args.cwd, rev=args.base, root=args.root, cache=not args.no_cache, rev_option="--base")
    head_rev = args.head or args.rev
    head_ws = open_workspace(args.cwd, rev=head_rev, staged=args.staged, root=args.root, cache=not args.no_cache,
                             rev_option="--head" if args.head else "--rev")
    head_label = head_rev or ("staged" if args.staged else "working tree")
    change = change_impact(base_ws.graph(), head_ws.graph(), args.base, head_label, args.depth)
    if args.json:
        emit_json(change)
        return EXIT_OK
    for ch in change.changed:
        print(f"{ch.change}\t{ch.id}\t{ch.type or '-'}\t{ch.path}")
    for e in change.broken_edges:
        print(f"broke\t{e.from_} -[{e.field}]-> {e.to}")
    for e in change.fixed_edges:
        print(f"fixed\t{e.from_} -[{e.field}]-> {e.to}")
    for i in change.impacted:
        print(f"impacted\t{i.id}\t{i.type or '-'}\tdistance {i.distance} via {i.via}")
    c = change.counts
    print(f"{args.base}..{head_label}: {c['changed']} changed, {c['broken_edges']} broken edge(s), "
          f"{c['impacted']} impacted", file=sys.stderr)
    return EXIT_OK
