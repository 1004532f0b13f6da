"""`git vivary capabilities`: which optional capabilities exist and which are installed right now."""

from __future__ import annotations

import argparse
import sys

from vivary_git.commands._common import add_json_arg, emit_json
from vivary_git.errors import EXIT_OK
from vivary_git.scaffold.presets import PRESETS


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "capabilities", help="list optional capabilities (storage, memory) and what is installed now",
        description="Capability discovery for people and agents: each optional capability with its install "
        "requirement, approval gate, network use and whether it is installed right now (found without "
        "importing anything heavy). Nothing is enabled by being listed. Exit 0. See docs/capabilities.md.",
    )
    p.add_argument("--preset", choices=PRESETS, default=None, help="echo this preset in the report")
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.scaffold.capabilities import capability_report

    report = capability_report(args.preset)
    if args.json:
        emit_json(report)
        return EXIT_OK
    out = sys.stdout
    out.write(f"default: {', '.join(report.default_capabilities)}\n")
    width = max(len(c.id) for c in report.available_capabilities)
    for c in report.available_capabilities:
        mark = "default" if c.default else c.install_status
        gates = []
        if c.requires_approval:
            gates.append("needs approval")
        if c.requires_explicit_index:
            gates.append("explicit index")
        if c.network:
            gates.append(f"network: {c.network}" if isinstance(c.network, str) else "network")
        extra = f" [{', '.join(gates)}]" if gates else ""
        out.write(f"  {c.id.ljust(width)}  {mark:<13}  {c.label}{extra}\n")
        if c.missing_install:
            wanted = " ".join(repr(m) for m in c.missing_install)
            out.write(f"  {''.ljust(width)}  {'':<13}  install: pip install {wanted}\n")
    return EXIT_OK
