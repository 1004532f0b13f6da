"""`git vivary forget`: remove this workspace's whole local memory index (state and manifest)."""

from __future__ import annotations

import argparse
import sys

from vivary_git.commands._common import add_json_arg, add_source_args, emit_json, open_ws
from vivary_git.errors import EXIT_OK
from vivary_git.escape import text as shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "forget", help="delete the semantic-memory index of this workspace (needs --yes)",
        description="Remove the provider's whole dataset for this workspace (docs/memory.md): for vivary-local the "
        "cached vectors, the HNSW and keyword indexes and the manifest; for Cognee its dataset and the manifest. "
        "Notes are never touched; `git vivary index --yes` rebuilds everything. Exit 0 (also when there was "
        "nothing to remove); 2 on a config error or a Cognee failure; 3 when refused: --yes not given, or a "
        "Cognee gate closed (allow_network, key route).",
    )
    p.add_argument("--yes", action="store_true", help="confirm: delete the whole index")
    add_source_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.provider import ForgetReport

    ws = open_ws(args)
    cfg = load_memory_config(ws)
    # The provider's module is imported only when it is the one enabled; vivary-local refuses when
    # memory is disabled.
    report: ForgetReport
    if cfg.provider == "cognee":
        from vivary_git.memory.cognee import CogneeMemory

        report = CogneeMemory(ws, cfg).forget(approved=args.yes)
    else:
        from vivary_git.memory.local.provider import LocalMemory

        report = LocalMemory(ws, cfg).forget(approved=args.yes)
    if args.json:
        emit_json(report)
        return EXIT_OK
    if report.removed:
        sys.stdout.write(f"forgot dataset {shown(report.dataset)}: removed {shown(report.state)}\n")
    else:
        sys.stdout.write(f"nothing to forget: no index for dataset {shown(report.dataset)} "
                         f"(looked in {shown(report.state)})\n")
    return EXIT_OK
