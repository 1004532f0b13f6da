"""`git vivary index`: build the privacy-filtered memory snapshot and (later) hand it to a provider.

For now only `--dry-run` exists: it builds the whole snapshot, exactly as an index would, and reports
its counts and fingerprint without writing anything anywhere. Writing arrives with the local memory
provider; `run` already separates planning from writing so `--yes` slots in as one more branch.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import msgspec

from vivary_git.commands._common import add_json_arg, add_source_args, emit_json, open_ws
from vivary_git.errors import EXIT_OK, UsageError

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace


class IndexReport(msgspec.Struct, frozen=True):
    """The contract's `index --dry-run` shape, plus `private` (nodes held back) and `enabled`."""

    ok: bool
    provider: str
    dataset: str
    dry_run: bool
    indexed: int
    would_index: int
    edges: int
    private: int
    fingerprint: str
    enabled: bool


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index", help="build the semantic-memory index (for now: --dry-run reports what it would hold)",
        description="Build the privacy-filtered memory snapshot of one tree (docs/index.md). With --dry-run, "
        "report how many notes and edges would be indexed, how many are private, and the snapshot "
        "fingerprint, writing nothing anywhere. Exit 0; 2 on a usage or config error (.vivary/memory.toml); "
        "3 when privacy cannot be decided or a working-tree file is unsafe (symlink, hard link).",
    )
    add_source_args(p)
    add_json_arg(p)
    p.add_argument("--dry-run", action="store_true", help="build the snapshot and report it; write nothing")
    p.set_defaults(run=run)


def dry_run(ws: Workspace) -> IndexReport:
    """Build the snapshot of `ws` and describe it; writes nothing (the library form of --dry-run)."""
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import build_snapshot

    cfg = load_memory_config(ws)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model, dataset_label=cfg.dataset_label)
    return IndexReport(
        ok=True, provider=snap.provider, dataset=snap.dataset, dry_run=True, indexed=0,
        would_index=len(snap.nodes), edges=len(snap.edges), private=snap.private_count,
        fingerprint=snap.fingerprint, enabled=cfg.enabled,
    )


def run(args: argparse.Namespace) -> int:
    if not args.dry_run:
        # The writing branch (`--yes`: approval gate, provider refresh, manifest) lands with the local
        # memory provider; until then, refuse rather than pretend.
        raise UsageError(
            "writing a memory index arrives with the local memory provider (vivary-local); for now run "
            "`git vivary index --dry-run` to see what would be indexed"
        )
    ws = open_ws(args)
    report = dry_run(ws)
    ws.report_stats()
    if args.json:
        emit_json(report)
        return EXIT_OK
    out = sys.stdout
    out.write("dry run: nothing was written\n")
    if report.enabled:
        out.write(f"provider     {report.provider}\n")
    else:
        out.write("provider     none (memory is disabled: no .vivary/memory.toml, or `enabled = false`, or "
                  "provider = \"none\"; this is what an index would hold once it is enabled)\n")
    out.write(f"dataset      {report.dataset}\n")
    out.write(f"would index  {report.would_index} note(s), {report.edges} edge(s)\n")
    out.write(f"private      {report.private} note(s) held back "
              "(`git vivary privacy explain PATH` names the rule)\n")
    out.write(f"fingerprint  {report.fingerprint}\n")
    return EXIT_OK
