"""`git vivary ci`: the review engine behind the GitHub Action, usable in any CI."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from pathlib import Path

from vivary_git.blast import DEFAULT_DEPTH
from vivary_git.commands._common import at_least, write_out
from vivary_git.commands.blast import depth_arg
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK, ConfigError, RefusedError, UsageError

FORMATS = ("text", "github", "json", "sarif", "codequality")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "ci", help="review a change for CI: check the head tree, blast radius of base..head, annotations",
        description="Check the head tree and, with --base, compute the change's blast radius (changed notes, "
        "broken and fixed edges, impacted notes). --format github prints workflow-command annotations ranked "
        "to fit GitHub's caps (errors on changed files first); --summary appends a Markdown report with a "
        "Mermaid picture; --sarif and --codequality (GitLab's merge-request report) write files for other CI "
        "systems. Findings the base tree already had are reported apart. Exit 0 when the head tree has "
        "no new error (--fail-on all: no error), 1 when it has, 2 on a usage or config error (docs/ci.md).",
    )
    p.add_argument("--base", metavar="REV", help="the tree the change starts from (the PR base); omit to only check")
    p.add_argument("--head", metavar="REV", default="HEAD", help="the tree to check (default: HEAD)")
    p.add_argument("--format", choices=FORMATS, default="text", help="what to print (default: text)")
    p.add_argument("--output", metavar="FILE", help="write the --format output to FILE instead of stdout")
    p.add_argument("--summary", metavar="FILE",
                   help="append a Markdown report to FILE (on GitHub: \"$GITHUB_STEP_SUMMARY\")")
    p.add_argument("--sarif", metavar="FILE", help="also write SARIF 2.1.0 to FILE")
    p.add_argument("--codequality", metavar="FILE",
                   help="also write GitLab's Code Quality report to FILE (artifacts:reports:codequality)")
    p.add_argument("--github-output", metavar="FILE",
                   help="append outputs errors, warnings, impacted, changed, broken-edges to FILE "
                   "(on GitHub: \"$GITHUB_OUTPUT\")")
    p.add_argument("--max-annotations", type=at_least(0), default=10, metavar="N",
                   help="annotations per type (error, warning, notice) with --format github; GitHub shows at "
                   "most 10 per step, so a larger N annotates 10 (default: 10)")
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
    from vivary_git.gates.codequality import render_codequality
    from vivary_git.gates.review import fails, render_text, review
    from vivary_git.gates.sarif import render_sarif
    from vivary_git.gates.summary import render_summary
    from vivary_git.safeio import check_output, remove_output

    inside = _work_tree(args.cwd)
    outputs = [(f"--{opt.replace('_', '-')}", getattr(args, opt))
               for opt in ("output", "sarif", "codequality", "summary", "github_output") if getattr(args, opt)]
    for option, name in outputs:
        if option in ("--sarif", "--codequality"):
            # A report left from before (or committed) must never be taken for this run's: a run that stops
            # early leaves none for the CI system to read.
            _guard(option, name, functools.partial(remove_output, name, inside=inside))
    for option, name in outputs:  # refused before the review runs, and again as each is opened
        _guard(option, name, functools.partial(check_output, name, inside=inside))
    try:
        r = review(args.cwd, base=args.base, head=args.head, root=args.root, cache=not args.no_cache,
                   depth=args.depth, strict=args.strict)
    except ConfigError as err:
        if args.format == "github":  # on the pull request's file too, not only in the log (still exit 2)
            annotation = github.config_annotation(err, f"git vivary {args.command}")
            if args.output:
                _write("--output", args.output, annotation, inside)
            else:
                write_out(annotation)
        raise
    if args.format == "text":
        text = render_text(r)
    elif args.format == "github":
        text = github.render_annotations(r, args.max_annotations, args.fail_on, summary=bool(args.summary))
    elif args.format == "json":
        text = json_text(r) + "\n"
    elif args.format == "codequality":
        text = json_text(render_codequality(r, args.fail_on)) + "\n"
    else:
        text = json_text(render_sarif(r)) + "\n"
    if args.output:
        _write("--output", args.output, text, inside)
    else:
        write_out(text)
    if args.sarif:
        _write("--sarif", args.sarif, json_text(render_sarif(r)) + "\n", inside)
    if args.codequality:
        _write("--codequality", args.codequality, json_text(render_codequality(r, args.fail_on)) + "\n", inside)
    if args.summary:
        _guard("--summary", args.summary, lambda: github.append_text(Path(args.summary), [render_summary(r)],
                                                                     inside=inside))
    if args.github_output:
        _guard("--github-output", args.github_output,
               lambda: github.write_outputs(Path(args.github_output), github.outputs(r), inside=inside))
    return EXIT_FINDINGS if fails(r, args.fail_on) else EXIT_OK


def _work_tree(cwd: str | None) -> Path | None:
    """The top of the work tree the review reads: no output is written through a symbolic link inside it."""
    from vivary_git import git

    repo = git.try_open(Path(cwd or ".").resolve())
    return repo.workdir if repo is not None else None


def _guard(option: str, name: str, act: Callable[[], object]) -> None:
    """Run `act` on the output file `name`, turning a refusal into the error a user can act on: a symbolic
    link inside the work tree is refused (exit 3), anything else that is no file to write is a usage error."""
    from vivary_git.safeio import FileRefused, LinkRefused

    try:
        act()
    except LinkRefused as err:
        raise RefusedError(f"{option} {name}: {err}; name a path without the link, or remove it") from None
    except FileRefused as err:
        raise UsageError(f"{option} {name}: {err}; name a regular file to write to") from None
    except FileNotFoundError:
        folder = Path(name).parent
        raise UsageError(f"{option} {name}: the folder {folder} does not exist; create it or choose another "
                         "file") from None
    except OSError as err:
        raise UsageError(f"{option} {name}: cannot write: {err.strerror or err}") from None


def _write(option: str, name: str, text: str, inside: Path | None) -> None:
    from vivary_git.safeio import open_output

    def write() -> None:
        with open_output(name, append=False, inside=inside) as out:
            out.write(text)

    _guard(option, name, write)
