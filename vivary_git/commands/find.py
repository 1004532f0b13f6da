"""`git vivary find`: the few nodes worth reading for a task, within a token budget (for agents)."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import (
    add_filter_args,
    add_json_arg,
    add_source_args,
    at_least,
    emit_json,
    note_unknown_types,
    open_ws,
)
from vivary_git.errors import EXIT_OK
from vivary_git.escape import text as shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "find", help="budgeted context for a task: top nodes, why, snippets, edges",
        description="`query --explain`'s best, ordered again for the question (a note whose title holds its "
        "words before a page that only lists it: docs/find.md), k=5, trimmed to a token budget (JSON length / 4): "
        "over budget it shortens then drops snippets, then edges, then trailing results, then reasons. Private notes "
        "(USER.md, memory/**, private_paths, ignored files: docs/privacy.md) are never shown.",
    )
    p.add_argument("text", nargs="+", metavar="TEXT", help="the task or question")
    p.add_argument("--k", type=at_least(1), default=5, metavar="N", help="how many results at most (default 5)")
    p.add_argument("--budget", type=at_least(1), default=1200, metavar="TOKENS",
                   help="token budget for the results (default 1200; the first result is kept even when it "
                   "alone is over)")
    add_filter_args(p, "filters (applied before ranking)")
    add_source_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.excluded import excluded_ids
    from vivary_git.hidden import PrivateNodes
    from vivary_git.query import find

    ws = open_ws(args)
    text = " ".join(args.text)
    graph = ws.graph()
    result = find(
        graph, ws.lazy_notes(), text, k=args.k, budget=args.budget, types=args.type, paths=args.path,
        edges=args.edge, prefix=ws.source.prefix, snippet=args.snippet, index=ws.search_index(),
        hidden=PrivateNodes(ws),
        exclude=excluded_ids(ws.config, graph.nodes),
    )
    ws.report_stats()
    note_unknown_types(ws, args.type)
    if args.json:
        emit_json(result)
        return EXIT_OK
    if not result.results:
        print(f"vivary find: no context for {shown(repr(text))}")
        return EXIT_OK
    over = result.estimated_tokens > result.budget
    budget = (f"over the budget of {result.budget}: the first result is always kept" if over
              else f"budget {result.budget}")
    print(f"vivary find: {len(result.results)} context result(s) for {shown(repr(text))} "
          f"(~{result.estimated_tokens} token(s), {budget})")
    for i, hit in enumerate(result.results, 1):
        kind = f"[{shown(hit.type)}] " if hit.type else ""
        print(f"{i:2d}. {kind}{shown(hit.id)} - {shown(hit.path)}")
        print(f"    why: {shown(hit.reason)}")
        if hit.snippet:
            print(f"    {shown(hit.snippet)}")
    return EXIT_OK
