"""`git vivary recall`: meaning-based leads from the local semantic memory, gated by the snapshot fingerprint.

Thin over `vivary_git.memory.local.provider.LocalMemory` / `recall.RecallSession`. Refuses (exit 3) when there is no
index or it is stale; `--queries FILE.jsonl` answers many queries with one loaded index.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git import lifetime
from vivary_git.commands._common import add_filter_args, add_json_arg, add_source_args, at_least, emit_json, open_ws
from vivary_git.errors import EXIT_OK, UsageError
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from vivary_git.memory.cognee import CogneeMemory
    from vivary_git.memory.local.recall import RecallSession


class BatchQuery(msgspec.Struct, frozen=True):
    id: str | int
    query: str


class BatchAnswer(msgspec.Struct, frozen=True):
    id: str | int
    hits: list[Any]  # RecallHit; not imported at module level, every command's startup would pay for it


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "recall", help="semantic recall: typed leads to notes, from the memory index",
        description="Ask the semantic memory (vivary-local or Cognee, docs/recall.md) for the notes that best match "
        "a question by meaning. Returns typed leads (node id, type, path, score, reason, edges) for notes of the "
        "current snapshot only: read the files before acting. Exit 0; 2 on a usage or config error (memory not "
        "enabled, the [embed] or [cognee] extra missing, Cognee failed, a file in the place of a folder of "
        ".git/vivary); 3 when refused: no index yet, or the index is stale (notes changed since `git vivary index "
        "--yes`), a Cognee gate closed, or privacy cannot be decided.",
    )
    p.add_argument("text", nargs="*", metavar="QUERY", help="the question (words are joined by spaces)")
    p.add_argument("--k", type=at_least(1), default=10, metavar="N", help="how many hits (default 10, at most 250)")
    p.add_argument("--mode", choices=("hybrid", "semantic"), default="hybrid",
                   help="vivary-local: hybrid (default) fuses vectors with stemmed BM25; semantic: vectors only. "
                   "Cognee always answers from its own vector search over chunks")
    p.add_argument("--queries", metavar="FILE.jsonl",
                   help='answer every {"id": ..., "query": ...} line of FILE (- for stdin) in one process; prints '
                   'one {"id": ..., "hits": [...]} line per query, in order')
    add_filter_args(p, "filters (applied after recall, on over-fetched candidates)", snippet=False)
    add_source_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


MAX_QUERIES_BYTES = 16 << 20  # a --queries file (or standard input): ~100,000 questions


def _read_queries(name: str) -> list[BatchQuery]:
    from vivary_git.safeio import FileRefused, describe_size, read_regular, read_stream

    try:
        data = read_stream(sys.stdin.buffer, MAX_QUERIES_BYTES) if name == "-" \
            else read_regular(name, MAX_QUERIES_BYTES)
        text = data.decode("utf-8")
    except FileRefused as err:
        raise UsageError(f"--queries {name}: {err}; give a JSON-lines file of at most "
                         f"{describe_size(MAX_QUERIES_BYTES)} (split a bigger batch)") from None
    except OSError as err:
        raise UsageError(f"--queries {name}: cannot be read ({err.strerror or err}); check the path") from None
    except UnicodeDecodeError:
        raise UsageError(f"--queries {name}: not UTF-8; save it as UTF-8 JSON lines") from None
    out: list[BatchQuery] = []
    decoder = msgspec.json.Decoder(BatchQuery)
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            asked = decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError) as err:
            why = "nested too deeply" if isinstance(err, RecursionError) else str(err)
            raise UsageError(f'{name}:{n}: not a {{"id": ..., "query": "..."}} line ({why}); fix that line') \
                from None
        if not asked.query.strip():  # refused by recall too, where it could no longer say which line
            raise UsageError(f"{name}:{n}: the query is empty; write the question, or remove that line")
        out.append(asked)
    return out


def _lines(answers: Iterator[BatchAnswer]) -> Iterator[bytes]:
    from vivary_git.escape import json_text

    for a in answers:
        yield json_text(a).encode() + b"\n"


def _without_hidden(ws: Any, session: Any, text: str, hits: list[Any], k: int, filters: Any, mode: str,
                    exclude: frozenset[str]) -> list[Any]:
    """Recall's hits without archived or expired memories (docs/dream.md), asking for more when some were
    left out; the memories returned count as memory events toward the next dream, and a due dream is said on
    stderr (the JSON answer keeps its shape)."""
    from vivary_git.memory.dream import durability
    from vivary_git.memory.dream.accesslog import log_for

    when = durability.now()
    notes = ws.lazy_notes()
    blobs = {n.id: n.blob for n in session.snapshot.nodes}

    def keep(h: Any) -> bool:
        blob = blobs.get(h.node_id)
        return h.type != "memory" or blob is None or durability.hidden(notes[blob].fields, when) is None

    ask = k
    kept = [h for h in hits if keep(h)]
    while len(kept) < k and len(hits) == ask and ask < 250:
        ask = min(ask * 2 + (k - len(kept)), 250)
        hits = session.recall(text, k=ask, filters=filters, mode=mode, **({"exclude": exclude} if exclude else {}))
        kept = [h for h in hits if keep(h)]
    kept = kept[:k]
    log = log_for(ws)
    log.record("hit", [h.node_id for h in kept if h.type == "memory"])
    hint = log.due().hint
    if hint:
        print(f"vivary recall: {hint}", file=sys.stderr)
    return kept


def _kept_off_disk(ws: Any, hits: list[Any]) -> dict[str, str]:
    """The hits' paths a sparse checkout keeps off the disk (outside its cone: skip-worktree), each with its
    repository path: read from their index blobs, they are leads the user cannot open, but `git show :PATH`
    prints. Only when the working tree or the index is read (a revision's files are its own); Git is asked
    only about the paths not on disk."""
    source = ws.source
    repo = source.repo
    if source.kind not in ("worktree", "staged") or repo is None or repo.workdir is None:
        return {}
    full = {h.path: f"{source.prefix}/{h.path}" if source.prefix else h.path for h in hits}
    missing = {p: r for p, r in full.items() if not os.path.lexists(repo.workdir / r)}
    if not missing:
        return {}
    from vivary_git.worktree import skip_worktree

    off = skip_worktree(repo, *missing.values())
    return {p: r for p, r in missing.items() if r in off}


def run(args: argparse.Namespace) -> int:
    from vivary_git.excluded import excluded_ids
    from vivary_git.hidden import PrivateNodes
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.local.runtime import preload_runtime
    from vivary_git.memory.provider import RecallFilters, normalise_k, require_local

    preload_runtime()  # a fresh `recall` per agent turn: the runtime imports overlap opening the workspace

    text = " ".join(args.text)
    if args.queries is None and not text.strip():
        raise UsageError('provide a query, e.g. `git vivary recall "how do we rotate keys?"`, or --queries FILE')
    if args.queries is not None and text.strip():
        raise UsageError("give either a QUERY or --queries FILE, not both")
    k = normalise_k(args.k)
    batch = _read_queries(args.queries) if args.queries is not None else None
    ws = open_ws(args)
    cfg = load_memory_config(ws)
    if cfg.provider != "cognee":
        require_local(cfg, "recall")  # before --edge builds the graph: memory off writes no cache
    # Without --edge the graph is left to the memory snapshot, which builds it beside the privacy decisions.
    filters = RecallFilters(types=args.type, paths=args.path,
                            edges=ws.resolve_edge_specs(args.edge, hidden=PrivateNodes(ws)) if args.edge else [])
    session: RecallSession | CogneeMemory
    exclude: frozenset[str] = frozenset()
    if cfg.provider == "cognee":
        from vivary_git.memory.cognee import CogneeMemory

        session = CogneeMemory(ws, cfg)
    else:
        session = LocalMemory(ws, cfg).open([q.query for q in batch] if batch is not None else [text])
        # The vault's Excluded files (Obsidian's userIgnoreFilters) are no answers (docs/vaults.md#obsidian-settings)
        exclude = excluded_ids(ws.config, session.snapshot.nodes)
    # The model's runtime, the vectors and the keyword index: freed by the system at exit, not one by one
    # (an onnxruntime session takes ~0.2 s to tear down).
    lifetime.keep_until_exit(session)
    excluding: dict[str, Any] = {"exclude": exclude} if exclude else {}
    if batch is not None:
        answers = session.recall_many([q.query for q in batch], k=k, filters=filters, mode=args.mode, **excluding)
        ws.report_stats()
        out = sys.stdout.buffer
        for line in _lines(BatchAnswer(q.id, hits) for q, hits in zip(batch, answers, strict=True)):
            out.write(line)
        out.flush()
        return EXIT_OK
    hits = session.recall(text, k=k, filters=filters, mode=args.mode, **excluding)
    if any(h.type == "memory" for h in hits):
        hits = _without_hidden(ws, session, text, hits, k, filters, args.mode, exclude)
    ws.report_stats()
    if args.json:
        emit_json(hits)
        return EXIT_OK
    if not hits:
        print(f"vivary recall: no hits for {shown(repr(text))}")
        return EXIT_OK
    print(f"vivary recall: {len(hits)} lead(s) for {shown(repr(text))} (read the files before acting on them)")
    off_disk = _kept_off_disk(ws, hits)
    for i, hit in enumerate(hits, 1):
        kind = f"[{shown(hit.type)}] " if hit.type else ""
        where = shown(hit.path)
        if hit.path in off_disk:
            where += f" (not checked out: `git show {shown(shlex.quote(':' + off_disk[hit.path]))}`)"
        print(f"{i:2d}. {kind}{shown(hit.node_id)} - {where}  (score {hit.score:.4f})")
        print(f"    why: {shown(hit.reason)}")
        if hit.edge_context:
            edges = ", ".join(f"{shown(e.source_id)} -{shown(e.field)}-> {shown(e.target_id)}"
                              for e in hit.edge_context[:5])
            more = f" (+{len(hit.edge_context) - 5} more)" if len(hit.edge_context) > 5 else ""
            print(f"    edges: {edges}{more}")
    return EXIT_OK
