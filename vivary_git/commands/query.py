"""`git vivary query`: deterministic text search over typed nodes, with type/path/edge filters."""

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
from vivary_git.errors import EXIT_OK, UsageError
from vivary_git.escape import text as shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "query", help="text search over nodes, ranked and explainable",
        description="Search the typed graph of one tree. Deterministic scoring over id+title, frontmatter, "
        "path, body and outbound-edge text (docs/query.md has the weights). Private notes are not searched "
        "unless you pass --include-private (docs/privacy.md).",
    )
    p.add_argument("text", nargs="*", metavar="TEXT",
                   help="what to look for (words are joined by spaces); with --edge it may be left out, to list "
                   "every node that has the edge")
    p.add_argument("--k", type=at_least(1), default=10, metavar="N",
                   help="how many results (default 10; with --mode semantic|hybrid at most 250)")
    add_filter_args(p, "filters (applied before ranking)")
    p.add_argument("--explain", action="store_true", help="say which sources matched, and list each hit's edges")
    p.add_argument("--include-private", action="store_true",
                   help="also search the notes the privacy boundary keeps private (USER.md, memory/**, private_paths, "
                   "ignored files: docs/privacy.md), which are never shown otherwise; for you at your terminal, "
                   "never for an agent (text mode only)")
    add_mode_arg(p)
    add_source_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    if not " ".join(args.text).strip():
        if not args.edge:
            raise UsageError('query needs TEXT to look for, e.g. `git vivary query "auth module"`, or an --edge '
                             'FIELD[:TARGET] filter to list the nodes with that edge, e.g. `git vivary query --edge '
                             'depends:auth`; --type and --path narrow either, and list nothing alone')
        if args.mode != "text":
            raise UsageError(f"--mode {args.mode} needs TEXT: it ranks notes by how near they are to it; to list "
                             "the nodes with an edge, leave --mode out")
    if args.mode != "text":
        if args.include_private:
            raise UsageError("--include-private works with --mode text only: semantic memory never holds a private "
                             "note (docs/privacy.md)")
        return run_semantic(args)
    from vivary_git.query import search

    ws = open_ws(args)
    text = " ".join(args.text)
    from vivary_git.excluded import excluded_ids
    from vivary_git.hidden import PrivateNodes

    hidden: frozenset[str] | PrivateNodes = frozenset() if args.include_private else PrivateNodes(ws)
    graph = ws.graph()
    result = search(
        graph, ws.lazy_notes(), text, k=args.k, types=args.type, paths=args.path,
        edges=args.edge, prefix=ws.source.prefix, snippet=args.snippet, explain=args.explain, index=ws.search_index(),
        hidden=hidden, exclude=excluded_ids(ws.config, graph.nodes),
    )
    ws.report_stats()
    note_unknown_types(ws, args.type)
    if args.json:
        emit_json(result)
        return EXIT_OK
    # No text: the edge filters are what was asked (their targets as resolved).
    asked = f"for {shown(repr(text))}" if text.strip() else \
        "with " + " ".join(f"--edge {shown(e)}" for e in result.filters.edge)
    if not result.results:
        print(f"vivary query: no results {asked}")
        return EXIT_OK
    print(f"vivary query: {len(result.results)} result(s) {asked}")
    for i, hit in enumerate(result.results, 1):
        kind = f"[{shown(hit.type)}] " if hit.type else ""
        print(f"{i:2d}. {kind}{shown(hit.id)} - {shown(hit.path)}  (score {hit.score})")
        if hit.reasons:
            print(f"    why: {', '.join(shown(r) for r in hit.reasons)}")
        if hit.snippet:
            print(f"    {shown(hit.snippet)}")
    return EXIT_OK


# --- issue 5: `--mode semantic|hybrid` through the local memory provider (memory/local/) -----------------


def add_mode_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--mode", choices=("text", "semantic", "hybrid"), default="text",
                   help="text (default): the deterministic scoring above; semantic: the local memory's vectors; "
                   "hybrid: vectors fused with stemmed BM25 (both need an up-to-date `git vivary index --yes`)")


def run_semantic(args: argparse.Namespace) -> int:
    """The same provider as `git vivary recall`, with query's filters and output framing."""
    import msgspec

    from vivary_git.excluded import excluded_ids
    from vivary_git.hidden import PrivateNodes
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.provider import RecallFilters, normalise_k, require_local
    from vivary_git.query import QueryFilters

    text = " ".join(args.text)
    k = normalise_k(args.k)
    ws = open_ws(args)
    cfg = load_memory_config(ws)
    require_local(cfg, "recall")  # before anything builds the graph: memory off writes no cache
    # Without --edge the graph is left to the memory snapshot, which builds it beside the privacy decisions.
    edges = ws.resolve_edge_specs(args.edge, hidden=PrivateNodes(ws)) if args.edge else []
    session = LocalMemory(ws, cfg).open([text])
    hits = session.recall(text, k=k, filters=RecallFilters(types=args.type, paths=args.path, edges=edges),
                          mode=args.mode, exclude=excluded_ids(ws.config, session.snapshot.nodes))
    ws.report_stats()
    if args.json:
        emit_json({"query": text, "k": k, "mode": args.mode,
                   "filters": QueryFilters(type=args.type, path=args.path, edge=edges),
                   "results": [msgspec.to_builtins(h) for h in hits]})
        return EXIT_OK
    if not hits:
        print(f"vivary query: no results for {shown(repr(text))} ({args.mode})")
        return EXIT_OK
    print(f"vivary query: {len(hits)} result(s) for {shown(repr(text))} ({args.mode}; leads: read the files)")
    for i, hit in enumerate(hits, 1):
        kind = f"[{shown(hit.type)}] " if hit.type else ""
        print(f"{i:2d}. {kind}{shown(hit.node_id)} - {shown(hit.path)}  (score {hit.score:.4f})")
        if args.explain:
            print(f"    why: {shown(hit.reason)}")
    return EXIT_OK
