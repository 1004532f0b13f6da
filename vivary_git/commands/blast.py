"""`git vivary blast`: what depends on a node, or what a change between two trees touches."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import msgspec

from vivary_git.blast import DEFAULT_DEPTH
from vivary_git.commands._common import add_json_arg, add_private_args, add_source_args, at_least, emit_json, open_ws
from vivary_git.errors import EXIT_OK, UsageError
from vivary_git.escape import text as shown

# `--depth` left out: each mode has its own default.
NOT_GIVEN: Any = object()


def depth_arg(text: str) -> int | None:
    """`--depth N|all` (argparse type): a number of hops, or None for no limit."""
    if text == "all":
        return None
    try:
        return at_least(0)(text)
    except argparse.ArgumentTypeError as err:
        raise argparse.ArgumentTypeError(f"{err} (or 'all' for no limit)") from None


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "blast", help="impact: who reaches a node, or what a change base..head touches",
        description="`blast ID`: every node with a path of edges to ID (reverse BFS, nearest distance wins). "
        "`blast --base REV [--head REV]`: nodes whose content or edges changed between the two trees, edges "
        "the change broke or fixed, and what reaches a changed node within --depth hops (default "
        f"{DEFAULT_DEPTH}; `--depth all` for everything). --head defaults to the working tree (or the index "
        "with --staged).",
    )
    p.add_argument("id", nargs="?", metavar="ID", help="node ID, or the note's name or path as a link "
                   "would write it (omit with --base)")
    p.add_argument("--depth", type=depth_arg, default=NOT_GIVEN, metavar="N|all",
                   help=f"stop after N hops; `all` for no limit (default: {DEFAULT_DEPTH} with --base, "
                   "no limit for an ID)")
    p.add_argument("--base", metavar="REV", help="compare this tree (the PR base) ...")
    p.add_argument("--head", metavar="REV", help="... with this one (default: the tree chosen by --rev/--staged)")
    add_source_args(p)
    add_json_arg(p)
    add_private_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.blast import blast, change_impact
    from vivary_git.gates.private import masking

    # A CI log: others read what a private note holds (its ID, type, link fields), so it is masked (docs/privacy.md).
    masked = masking(args.show_private)

    if args.base is None:
        if args.id is None:
            raise UsageError("name a node ID (`blast ID`) or a base revision (`blast --base REV`)")
        if args.head is not None:
            raise UsageError("--head only makes sense with --base")
        ws = open_ws(args)
        from vivary_git.hidden import private_paths

        # A name of several notes lists them: where others read it, not the private ones (their IDs are paths).
        target = ws.resolve_node(args.id, private=(lambda paths: private_paths(ws, paths)) if masked else None).id
        report = blast(ws.graph(), target, None if args.depth is NOT_GIVEN else args.depth)
        report = msgspec.structs.replace(report, root=str(ws.source.root))  # absolute, as graph --json
        target_type = ws.graph().by_id()[report.target].type or "untyped"
        if masked:
            from vivary_git.gates.private import of_notes

            mask = of_notes(ws, [report.target, *(i.id for i in report.impacted)])
            if report.target in mask.ids:
                target_type = "untyped"
            report = msgspec.structs.replace(report, target=mask.id(report.target),
                                             impacted=[mask.impacted(i) for i in report.impacted])
        ws.report_stats()
        if args.json:
            emit_json(report)
            return EXIT_OK
        limit = f" (depth ≤ {report.depth})" if report.depth is not None else ""
        print(f"vivary blast: {shown(report.target)} [{shown(target_type)}] — {report.counts['impacted']} document(s) "
              f"depend on it{limit}")
        for i in report.impacted:
            print(f"  {shown(i.id)}  [{shown(i.type or 'untyped')}]   (distance {i.distance}, via {shown(i.via)})")
        return EXIT_OK
    if args.id is not None:
        raise UsageError("give either a node ID or --base, not both")
    if args.head is not None and (args.rev is not None or args.staged):
        raise UsageError(f"--head names the head tree; drop {'--staged' if args.staged else '--rev'}")
    from vivary_git import lifetime
    from vivary_git.workspace import open_workspace

    base_ws = open_workspace(args.cwd, rev=args.base, root=args.root, cache=not args.no_cache, rev_option="--base")
    head_rev = args.head or args.rev
    head_ws = open_workspace(args.cwd, rev=head_rev, staged=args.staged, root=args.root, cache=not args.no_cache,
                             rev_option="--head" if args.head else "--rev")
    lifetime.keep_until_exit(base_ws)  # freed by the system at exit, not object by object
    lifetime.keep_until_exit(head_ws)
    head_label = head_rev or ("staged" if args.staged else "working tree")
    depth = DEFAULT_DEPTH if args.depth is NOT_GIVEN else args.depth
    change = change_impact(base_ws.graph(), head_ws.graph(), args.base, head_label, depth)
    if masked:
        from vivary_git.gates.private import decide

        mask = decide(head_ws, head_ws.graph(), (), head_ws.source.prefix, base_ws, base_ws.graph(), change)
        change = mask.change(change)
    if args.json:
        emit_json(change)
        return EXIT_OK
    for ch in change.changed:
        print(f"{ch.change}\t{shown(ch.id)}\t{shown(ch.type or '-')}\t{shown(ch.path)}")
    for e in change.broken_edges:
        print(f"broke\t{shown(e.from_)} -[{shown(e.field)}]-> {shown(e.to)}")
    for e in change.fixed_edges:
        print(f"fixed\t{shown(e.from_)} -[{shown(e.field)}]-> {shown(e.to)}")
    for i in change.impacted:
        print(f"impacted\t{shown(i.id)}\t{shown(i.type or '-')}\tdistance {i.distance} via {shown(i.via)}")
    c = change.counts
    further = f" (+{c['further']} further than {depth} hops: --depth all)" if c.get("further") else ""
    print(f"{shown(args.base)}..{shown(head_label)}: {c['changed']} changed, {c['broken_edges']} broken edge(s), "
          f"{c['impacted']} impacted{further}", file=sys.stderr)
    return EXIT_OK
