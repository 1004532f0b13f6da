"""`git vivary ci`: the review engine behind the GitHub Action, usable in any CI."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from vivary_git.blast import DEFAULT_DEPTH
from vivary_git.commands._common import at_least
from vivary_git.commands.blast import depth_arg
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK, UsageError

FORMATS = ("text", "github", "json", "sarif")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ci", help="review a change for CI: check the head tree, blast radius of base..head, annotations",
        description="Check the head tree and, with --base, compute the change's blast radius (changed notes, "
        "broken and fixed edges, impacted notes). --format github prints workflow-command annotations ranked "
        "to fit GitHub's caps (errors on changed files first); --summary appends a Markdown report with a "
        "Mermaid picture. Findings the base tree already had are reported apart. Exit 0 when the head tree has "
        "no new error (--fail-on all: no error), 1 when it has, 2 on a usage or config error (docs/ci.md).",
    )
    p.add_argument("--base", metavar="REV", help="the tree the change starts from (the PR base); omit to only check")
    p.add_argument("--head", metavar="REV", default="HEAD", help="the tree to check (default: HEAD)")
    p.add_argument("--format", choices=FORMATS, default="text", help="what to print (default: text)")
    p.add_argument("--output", metavar="FILE", help="write the --format output to FILE instead of stdout")
    p.add_argument("--summary", metavar="FILE",
                   help="append a Markdown report to FILE (on GitHub: \"$GITHUB_STEP_SUMMARY\")")
    p.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 to FILE")
    p.add_argument("--github-output", metavar="FILE",
                   help="append outputs errors, warnings, impacted, changed, broken-edges to FILE "
                   "(on GitHub: \"$GITHUB_OUTPUT\")")
    p.add_argument("--max-annotations", type=at_least(0), default=10, metavar="N",
                   help="annotations per type (error, warning, notice) with --format github; GitHub shows at "
                   "most 10 per step (default: 10)")
    p.add_argument("--depth", type=depth_arg, default=DEFAULT_DEPTH, metavar="N|all",
                   help=f"impact: stop after N hops; `all` for no limit (default: {DEFAULT_DEPTH})")
    p.add_argument("--fail-on", choices=("new", "all"), default="new",
                   help="new (default): exit 1 only for an error the base tree did not have (matched by code, "
                   "path and target); all: for any error in the head tree. Without --base every error is new")
    s = p.add_mutually_exclusive_group()
    s.add_argument("--strict", dest="strict", action="store_true", default=None,
                   help="report warnings at level error (the default when base.strict = true)")
    s.add_argument("--lenient", dest="strict", action="store_false", help="report warnings as warnings")
    p.add_argument("--root", metavar="DIR", help="workspace directory (default: nearest folder with tropo.toml)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write cached results")
    p.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.escape import json_text
    from vivary_git.gates import github
    from vivary_git.gates.review import fails, render_text, review
    from vivary_git.gates.sarif import render_sarif
    from vivary_git.gates.summary import render_summary

    r = review(args.cwd, base=args.base, head=args.head, root=args.root, cache=not args.no_cache,
               depth=args.depth, strict=args.strict)
    if args.format == "text":
        text = render_text(r)
    elif args.format == "github":
        text = github.render_annotations(r, args.max_annotations)
    elif args.format == "json":
        text = json_text(r) + "\n"
    else:
        text = json_text(render_sarif(r)) + "\n"
    if args.output:
        _write(args.output, text)
    else:
        sys.stdout.write(text)
    if args.sarif:
        _write(args.sarif, json_text(render_sarif(r)) + "\n")
    try:
        if args.summary:
            github.append_text(_path(args.summary), [render_summary(r)])
        if args.github_output:
            github.write_outputs(_path(args.github_output), github.outputs(r))
    except OSError as err:
        raise UsageError(f"{err.filename}: cannot write: {err.strerror or err}") from None
    return EXIT_FINDINGS if fails(r, args.fail_on) else EXIT_OK


def _path(name: str) -> Path:
    from vivary_git.safeio import FileRefused, check_output

    p = Path(name)
    if not p.parent.is_dir():
        raise UsageError(f"{name}: the folder {p.parent} does not exist; create it or choose another file")
    try:
        # A FIFO would block the write until something reads it; a device or kernel file is no report.
        check_output(p)
    except FileRefused as err:
        raise UsageError(f"{name}: {err}; name a regular file to write to") from None
    return p


def _write(name: str, text: str) -> None:
    from vivary_git.safeio import FileRefused, open_output

    try:
        with open_output(_path(name), append=False) as out:
            out.write(text)
    except FileRefused as err:
        raise UsageError(f"{name}: {err}; name a regular file to write to") from None
    except OSError as err:
        raise UsageError(f"{name}: cannot write: {err.strerror or err}") from None
