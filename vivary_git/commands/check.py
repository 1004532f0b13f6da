"""`git vivary check`: validate every note against the workspace's rules."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git import dialects
from vivary_git.commands._common import (
    add_json_arg,
    add_private_args,
    add_source_args,
    emit_json,
    gate_from_env,
    open_ws,
)
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from vivary_git.baseline import NewReport
    from vivary_git.gates.precommit import Range
    from vivary_git.models import Finding
    from vivary_git.workspace import Workspace


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
    p.add_argument("--gate", action="store_true",
                   help="decide as a gate: computed from the tree's own blobs and caches this machine wrote, never "
                   "from a fetched cache (the default in CI: $CI, $TF_BUILD, $JENKINS_URL, ...; the hooks pass it; "
                   "docs/cache.md)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="hide W-coded findings in text output (counts and exit code are unchanged)")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="also say (on stderr) which vault dialect links are read in, and why, and in Dendron "
                   "which files are notes (docs/vaults.md)")
    p.add_argument("--new-since", metavar="REV",
                   help="report only findings REV did not have (matched by code, path and target, not by line; "
                   "a renamed note keeps its findings); exit 1 only for a new error. The pre-commit hook "
                   "runs `check --staged --gate --new-since HEAD`")
    p.add_argument("--pre-commit-range", action="store_true",
                   help="when the pre-commit framework names a range (PRE_COMMIT_FROM_REF and PRE_COMMIT_TO_REF: "
                   "`pre-commit run --from-ref A --to-ref B`, the pre-push stage), check B's tree and report only "
                   "the findings A (their merge base when A is not an ancestor of B) did not have, instead of "
                   "--rev/--staged and --new-since (a push the remote has none of: the pushed ref's tree, every "
                   "finding new); without them, as given (docs/hooks.md#pre-commit-in-ci)")
    add_private_args(p, "in CI ($CI, $TF_BUILD, $JENKINS_URL, ...), with --json and for a pre-commit range")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    span: Range | None = None
    rev_option = "--rev"
    if args.pre_commit_range:
        from vivary_git.gates.precommit import from_env

        span = from_env()
        if span is not None:  # the range replaces the tree and the baseline the hook's command line names
            args.rev, args.staged, args.new_since, rev_option = span.to_ref, False, None, span.to_var
    ws = open_ws(args, gate=args.gate or gate_from_env(), rev_option=rev_option)
    if args.verbose:
        rules = ws.config.links
        sys.stderr.write(f"vivary: dialect {shown(rules.dialect)}: {shown(rules.reason)}\n")
        if not rules.nested_notes:
            sys.stderr.write(_vault_notes(ws))
        if ws.config.excluded_files:
            from vivary_git.excluded import excluded_ids

            left = len(excluded_ids(ws.config, ws.graph().nodes))
            sys.stderr.write(f"vivary: {left} note(s) match Obsidian's Excluded files (.obsidian/app.json "
                             "userIgnoreFilters): checked, and left out of search (`search_excluded = true` in "
                             ".vivary/graph.toml searches them)\n")
    report = ws.check(strict=args.strict)
    new: NewReport | None = None
    if span is not None:
        from vivary_git.gates.precommit import new_in_range

        new = new_in_range(ws, report, span)
    elif args.new_since is not None:
        from vivary_git.baseline import new_since

        new = new_since(ws, report, args.new_since)
    ws.report_stats()
    if report.checked == 0 and ws.source.kind == "folder":
        # Outside Git nothing says this folder is a workspace: zero notes means the wrong folder, not a pass.
        raise UsageError(no_notes_message(ws.source.root, ws.source.nested_repos))
    verdict = new if new is not None else report
    from vivary_git.gates.private import mask_findings, masking

    # A CI log, a program, a pusher: others read what a private file's finding says (docs/privacy.md).
    masked = masking(args.show_private, machine=args.json or span is not None)
    # A broken link whose file Git ignores says so (only the output: what is recorded and compared stays as found).
    from vivary_git.ignoredlinks import explain

    verdict = msgspec.structs.replace(verdict, findings=explain(ws, verdict.findings, masked=masked))
    if verdict.findings and masked:
        verdict = msgspec.structs.replace(verdict, findings=mask_findings(ws, verdict.findings))
    if args.json:
        emit_json(verdict)
    else:
        out = sys.stdout
        # Editors jump to `path:line:`; sorted by place, rule order kept within a line.
        for f in sorted(verdict.findings, key=lambda f: (f.path, f.line)):
            if args.quiet and f.code.startswith("W"):
                continue
            out.write(f.render() + "\n")
        if not args.quiet or verdict.errors:
            if new is None:
                out.write(f"\nvivary: {report.checked} document(s), {report.errors} error(s), "
                          f"{report.warnings} warning(s) in {shown(ws.source.label)}\n")
            else:
                out.write(f"\nvivary: {new.checked} document(s), {new.errors} new error(s), {new.warnings} new "
                          f"warning(s) in {shown(ws.source.label)} since {shown(new.new_since)}; "
                          f"{new.existing_errors} error(s) and {new.existing_warnings} warning(s) it already had "
                          "are not shown\n")
            if new is not None and new.note:
                out.write(f"vivary: {shown(new.new_since)}: {shown(new.note)}\n")
        if args.strict is None:
            hint = _unresolved_hint(ws, verdict.findings)
            if hint:  # (not flushing stdout first: a reader gone by then must not change the exit code)
                sys.stderr.write(hint)
    return EXIT_FINDINGS if verdict.errors else EXIT_OK


def _unresolved_hint(ws: Workspace, findings: Sequence[Finding]) -> str:
    """In a vault whose only errors are links to notes not written yet (Obsidian shows them as unresolved
    links, a way of working, not a mistake), where to say that they are fine: the default `base.strict`
    fails `check`, and so the hook, on each of them."""
    unresolved = sum(1 for f in findings if f.level == "error" and f.code == "W221")
    if not ws.config.zero_config or not unresolved:
        return ""
    return (f"vivary: {unresolved} error(s) are links to notes that do not exist (W221). If they are notes "
            "you mean to write, as an editor's unresolved links are, `[links] unresolved = false` in "
            ".vivary/graph.toml stops reporting them, and `check --lenient` reports them as warnings "
            "(docs/config.md#vivarygraphtoml)\n")


def no_notes_message(root: Path, nested: list[str]) -> str:
    said = f"no notes found in {root} (files ending in .md or .markdown, outside excluded folders)"
    if nested:
        nested = sorted(nested)
        listed = ", ".join(nested[:5]) + (f" and {len(nested) - 5} more" if len(nested) > 5 else "")
        said += (f"; {len(nested)} nested Git repositor{'y was' if len(nested) == 1 else 'ies were'} skipped "
                 f"({listed}): run `git vivary check` inside one, or `-C PATH`")
    else:
        said += "; run it in your notes folder, or `-C PATH`"
    return said


def _vault_notes(ws: Workspace) -> str:
    """Where a Dendron workspace's notes are, and how many Markdown files are only files (docs/vaults.md#dendron)."""
    from vivary_git.config import outside_vaults
    from vivary_git.dialects import dendron
    from vivary_git.source import is_note

    folders = dendron.folders_said([shown(f) for _, f in ws.config.links.vaults])
    outside = outside_vaults(ws.config)
    files = sum(1 for p in ws.source.others if is_note(p) and outside(dialects.nfc(p)))
    said = (f"vivary: notes are the .md files directly in {folders}; {files} other "
            "Markdown file(s) are files, not notes\n")
    empty = dendron.without_notes(ws.config.links.vaults, [n.path for n in ws.graph().nodes])
    if empty:
        what, fix = dendron.without_notes_said(empty)
        said += f"vivary: {shown(what)}; fix: {shown(fix)}\n"
    return said
