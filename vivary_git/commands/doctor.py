"""`git vivary doctor`: one read-only health report, each problem with the command that fixes it."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from vivary_git.commands._common import add_json_arg, emit_json
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from vivary_git.scaffold.doctor import DoctorReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "doctor", help="read-only health report: repo, graph, privacy, hooks, cache, memory",
        description="Report the workspace's health without changing anything (not even .git): repository and "
        "workspace, graph counts and findings of a commit (default HEAD), whether private files are really "
        "ignored by Git, hooks, the refs/vivary/cache ref, and semantic-memory status. Each problem comes with "
        "the command that fixes it. Exit 0 when nothing is at level error, 1 otherwise. See docs/doctor.md.",
    )
    p.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")
    p.add_argument("--root", metavar="DIR", help="workspace directory (default: nearest folder with tropo.toml)")
    p.add_argument("--rev", metavar="REV", default="HEAD", help="commit whose graph to report (default HEAD)")
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.scaffold.doctor import doctor

    report = doctor(args.cwd, rev=args.rev, root=args.root)
    if args.json:
        emit_json(report)
    else:
        _print(report)
    return EXIT_OK if report.ok else EXIT_FINDINGS


def _print(r: DoctorReport) -> None:
    out = sys.stdout
    t = shown
    out.write(f"repo       {t(r.repo.top or '-')}" + (f" ({t(r.repo.branch)})" if r.repo.branch else "") + "\n")
    if r.workspace.root:
        out.write(f"workspace  {t(r.workspace.root)} ({t(r.workspace.config)})\n")
        if r.workspace.dialect:
            out.write(f"dialect    {t(r.workspace.dialect)}: {t(r.workspace.dialect_reason)}\n")
    g = r.graph
    if g is not None:
        out.write(f"graph      {g.nodes} node(s), {g.edges} edge(s), {g.broken} broken; {g.errors} error(s), "
                  f"{g.warnings} warning(s) at {t(r.workspace.source)}")
        out.write(f"; {g.worktree_changes} uncommitted change(s)\n" if g.worktree_changes else "\n")
    else:
        out.write("graph      -\n")
    privacy = {"ok": "ok: private files are ignored by Git", "failed": "FAILED", "unknown": "unknown"}[r.privacy.status]
    out.write(f"privacy    {privacy}\n")
    hooks = ", ".join(t(h) for h in r.hooks.vivary_hooks or ["pre-commit framework"])
    out.write(f"hooks      {f'installed ({hooks})' if r.hooks.installed else 'not installed'}\n")
    cache = f"at {r.cache.commit[:12]}" if r.cache.commit else "damaged (below)" if r.cache.present \
        else "absent (optional)"
    out.write(f"cache      {r.cache.ref} {cache}\n")
    m = r.memory
    out.write(f"memory     {t(m.status)} (provider {t(m.provider)})" + (f": {t(m.detail)}" if m.detail else "") + "\n")
    if r.problems:
        out.write("\n")
        for p in r.problems:
            out.write(f"{p.level}: {p.area}: {t(p.message)}\n  fix: {t(p.fix)}\n")
    out.write(f"\nvivary doctor: {'ok' if r.ok else 'problems found'}\n")
