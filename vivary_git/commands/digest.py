"""`git vivary digest`: write MEMORY.md from the pinned and durable memories, or say whether it is stale."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from vivary_git.memory.dream.digest import DigestReport, Unreadable


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "digest", help="write the private MEMORY.md digest of pinned and durable memories (or --check it)",
        description="Regenerate the digest block of MEMORY.md at the workspace root from the pinned and durable "
        "memories and the onboarding profile in USER.md, most important first, at most 200 lines and 12 KiB. "
        "MEMORY.md is private: never indexed, cached or committed (refused while Git tracks it; a rule in "
        ".git/info/exclude is added when nothing ignores it). Text outside the digest's markers is kept. "
        "--check writes nothing and exits 1 when the file is missing, stale or holds no digest block (3 while Git "
        "tracks it, as digest refuses then). Exit 0; 1 missing, stale or no block (--check); 2 usage or config "
        "error; 3 refused. docs/dream.md.",
    )
    p.add_argument("--check", action="store_true",
                   help="write nothing; exit 1 when MEMORY.md is missing, stale or holds no digest block")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.dream import digest
    from vivary_git.workspace import open_workspace

    ws = open_workspace(args.cwd, root=args.root)
    cfg = load_memory_config(ws)
    report = digest.check(ws, cfg) if args.check else digest.write(ws, cfg)
    if args.json:
        emit_json(report)
    elif args.check:
        said = {"fresh": ("is fresh", ""),
                "stale": ("is stale", "; run `git vivary digest` to rewrite it"),
                "missing": ("is missing", "; run `git vivary digest` to write it"),
                "no-block": ("holds no digest block, only text of yours",
                             "; run `git vivary digest` to add it (your text is kept)")}
        what, fix = said.get(report.state, (f"is {report.state}", ""))
        print(f"vivary digest: {report.path} {what} ({report.entries} memories"
              + (f", {report.omitted} left out by the bound" if report.omitted else "") + f"){fix}")
    else:
        print(f"vivary digest: {report.path} {report.state} ({report.entries} memories"
              + (f", {report.omitted} left out by the bound" if report.omitted else "")
              + (", with your profile" if report.profile else "") + f"; {report.lines} lines, {report.bytes} bytes)")
        if report.excluded:
            print(f"vivary digest: added {report.path} to .git/info/exclude so Git ignores it")
    if not args.json:
        _unreadable(report)
    return EXIT_OK if report.ok else EXIT_FINDINGS


def _unreadable(report: DigestReport) -> None:
    say_unreadable(report.unreadable)


def say_unreadable(unreadable: Sequence[Unreadable], who: str = "vivary digest") -> None:
    """Each memory left out because its frontmatter could not be read: where, never what it says."""
    for u in unreadable:
        print(f"{who}: {shown(u.path)}:{u.line}: frontmatter could not be read, so this memory is not in "
              "the digest (it may be pinned or durable); `git vivary check` names the problem, fix it and run "
              "`git vivary digest` again", file=sys.stderr)
