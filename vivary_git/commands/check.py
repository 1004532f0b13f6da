"""`git vivary check`: validate every note against the workspace's rules."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from vivary_git.commands._common import add_json_arg, add_source_args, emit_json, open_ws
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK

if TYPE_CHECKING:
    from vivary_git.baseline import NewReport


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "check", help="validate notes: frontmatter, required fields, specs, broken references",
        description="Validate every note in one tree. Prints `path:line: level CODE: message` per finding "
        "(codes in docs/check.md). Exit 0 when no finding is at level error (warnings alone pass under "
        "--lenient), 1 otherwise, 2 on a usage or config error.",
    )
    add_source_args(p)
    add_json_arg(p)
    s = p.add_mutually_exclusive_group()
    s.add_argument("--strict", dest="strict", action="store_true", default=None,
                   help="report warnings at level error (the default when base.strict = true)")
    s.add_argument("--lenient", dest="strict", action="store_false", help="report warnings as warnings")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="hide W-coded findings in text output (counts and exit code are unchanged)")
    p.add_argument("--new-since", metavar="REV",
                   help="report only findings REV did not have (matched by code, path and target, not by line; "
                   "a renamed note keeps its findings); exit 1 only for a new error. The pre-commit hook "
                   "runs `check --staged --new-since HEAD`")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    ws = open_ws(args)
    report = ws.check(strict=args.strict)
    new: NewReport | None = None
    if args.new_since is not None:
        from vivary_git.baseline import new_since

        new = new_since(ws, report, args.new_since)
    ws.report_stats()
    shown = new if new is not None else report
    if args.json:
        emit_json(shown)
    else:
        out = sys.stdout
        # Editors jump to `path:line:`; sorted by place, rule order kept within a line.
        for f in sorted(shown.findings, key=lambda f: (f.path, f.line)):
            if args.quiet and f.code.startswith("W"):
                continue
            out.write(f.render() + "\n")
        if not args.quiet or shown.errors:
            if new is None:
                out.write(f"\nvivary: {report.checked} document(s), {report.errors} error(s), "
                          f"{report.warnings} warning(s) in {ws.source.label}\n")
            else:
                out.write(f"\nvivary: {new.checked} document(s), {new.errors} new error(s), {new.warnings} new "
                          f"warning(s) in {ws.source.label} since {new.new_since}; {new.existing_errors} error(s) "
                          f"and {new.existing_warnings} warning(s) it already had are not shown\n")
            if new is not None and new.note:
                out.write(f"vivary: {new.new_since}: {new.note}\n")
    return EXIT_FINDINGS if shown.errors else EXIT_OK
