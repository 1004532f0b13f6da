"""`git vivary init`: start a workspace from a preset, with private files and a disabled memory policy."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git.commands._common import add_json_arg, emit_json
from vivary_git.errors import EXIT_OK, RefusedError
from vivary_git.scaffold.presets import (
    DEFAULT_HOST,
    DEFAULT_MEMORY,
    DEFAULT_PRESET,
    DEFAULT_STORAGE,
    HOSTS,
    MEMORY_CHOICES,
    PRESETS,
    STORAGE_CHOICES,
    Memory,
    Storage,
)

if TYPE_CHECKING:
    from vivary_git.scaffold.plan import ExistingNotes, ScaffoldPlan


class Findings(msgspec.Struct, frozen=True):
    """What `git vivary check` says of the folder: the counts at level error and warning, and per code."""

    errors: int
    warnings: int
    codes: dict[str, int]


class InitReport(msgspec.Struct, frozen=True):
    """`init --json`: the choices, each file with what happens to it, and what to do next."""

    ok: bool
    dry_run: bool
    target: str
    choices: dict[str, str]
    wizard: bool  # the two questions were asked
    git_init: bool  # `git init` ran (or, with dry_run, would run)
    files: list[dict[str, object]]
    private_verified: list[str] | None  # private files Git was shown to ignore; None on a dry run
    committed: str | None
    next_steps: list[str]
    # Notes that were in the folder already: {count, typed: {folder: n}, exclude_dropped: {entry: n}}.
    existing_notes: dict[str, object] = msgspec.field(default_factory=dict)
    # A vault's dialect, kept ({dialect, reason}); null when the folder becomes a typed tropo.toml workspace.
    kept_dialect: dict[str, str] | None = None
    # `check` of the folder before and after init, when it held notes: {before, after: {errors, warnings,
    # codes}}; `after` is null on a dry run; either is null when check could not run (`findings_error`).
    findings: dict[str, Findings | None] | None = None
    findings_error: str = ""


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "init", help="start a workspace: seed graph, agent guidance, private files, optional memory policy",
        description="Scaffold a workspace in DIR (default: the current folder): `git init` when needed, a seed "
        "graph for the preset, AGENTS.md for agents, private USER.md/MEMORY.md/memory/heartbeat-reports/ kept out "
        "of Git (proved with `git check-ignore`), a tropo.toml the published tropo also reads and, with --memory, "
        "a DISABLED memory policy. Existing files are never overwritten without --force (private files never), "
        "and notes already in DIR stay visible to `check`. In a vault (Obsidian, Dendron, Foam, Logseq) init keeps "
        "its dialect: no tropo.toml and no typed seed graph. In a folder that already holds files, init lists what "
        "it will change and asks (on a terminal) or needs --yes, and prints the findings of the notes there before "
        "and after (a warning when it raises them). "
        "On a terminal, with neither --memory nor --storage, two questions choose the capabilities. "
        "Exit 0; 2 on a usage error; 3 when a private file would not be ignored (nothing is committed). "
        "See docs/init.md.",
    )
    p.add_argument("dir", nargs="?", default=".", metavar="DIR", help="folder to scaffold in (created if missing)")
    p.add_argument("--preset", choices=PRESETS, default=DEFAULT_PRESET,
                   help=f"what the starter graph is about (default {DEFAULT_PRESET})")
    p.add_argument("--memory", choices=MEMORY_CHOICES, default=None,
                   help="semantic memory policy to write, always disabled (default none)")
    p.add_argument("--storage", choices=STORAGE_CHOICES, default=None,
                   help="where derived data lives: file (default) or git-cache (refs/vivary/cache)")
    p.add_argument("--host", choices=HOSTS, default=DEFAULT_HOST,
                   help="agent host to write guidance for (AGENTS.md always; CLAUDE.md, GEMINI.md or a Cursor rule)")
    p.add_argument("--dry-run", action="store_true", help="write nothing; list what would be written")
    add_json_arg(p)
    p.add_argument("--yes", action="store_true",
                   help="also make the first commit (only the scaffold's files); in a folder that already holds "
                   "files, also the approval to write there")
    p.add_argument("--no-wizard", action="store_true", help="never ask questions; flags and defaults decide")
    p.add_argument("--auto", action="store_true",
                   help="choose the recommended defaults without asking (never Cognee)")
    p.add_argument("--force", action="store_true",
                   help="overwrite existing scaffold files that differ (listed); private files are never overwritten")
    p.set_defaults(run=run)


def _choose(args: argparse.Namespace) -> tuple[Storage, Memory, bool]:
    """Storage and memory from flags, the wizard, or the defaults; and whether the wizard ran."""
    explicit = args.memory is not None or args.storage is not None
    interactive = not (args.no_wizard or args.auto or explicit) and sys.stdin.isatty()
    if interactive:
        from vivary_git.scaffold.wizard import ask

        storage, memory = ask(sys.stdin, sys.stderr)
        return storage, memory, True
    # Non-interactive runs (agents, CI, --auto) take the smallest setup: Cognee only by explicit flag.
    return args.storage or DEFAULT_STORAGE, args.memory or DEFAULT_MEMORY, False


def run(args: argparse.Namespace) -> int:
    from vivary_git.scaffold import plan as scaffold

    target = Path(args.dir)
    storage, memory, asked = _choose(args)
    choices = scaffold.Choices(preset=args.preset, memory=memory, storage=storage, host=args.host,
                               project=scaffold.project_name(target))
    plan = scaffold.plan_scaffold(target, choices, force=args.force)
    verified: list[str] | None = None
    committed: str | None = None
    said: list[str] = []
    before = _findings(plan.target, said) if plan.existing.count else None
    after: Findings | None = None
    if not args.dry_run and plan.non_empty and plan.writes() and not args.yes:
        _confirm(args, plan, before)
    if not args.dry_run:
        scaffold.apply(plan)
        if plan.existing.count:
            after = _findings(plan.target, said)
            _warn_if_raised(before, after)
        leaks = scaffold.verify_private(plan.target)
        if leaks:
            raise RefusedError(scaffold.leak_message(leaks) + "; the files are written, nothing was committed")
        verified = [p for p in scaffold.PRIVATE_FILES if (plan.target / p).exists()]
        if args.yes:
            committed = scaffold.commit(plan, f"Start a vivary workspace (preset {choices.preset})")
    report = InitReport(
        ok=True, dry_run=args.dry_run, target=str(plan.target), choices=msgspec.to_builtins(choices),
        wizard=asked, git_init=plan.git_init, files=[msgspec.to_builtins(f) for f in plan.files],
        private_verified=verified, committed=committed, next_steps=_next_steps(args, plan, committed),
        existing_notes=msgspec.to_builtins(plan.existing),
        kept_dialect=msgspec.to_builtins(plan.kept_dialect) if plan.kept_dialect else None,
        findings={"before": before, "after": after} if plan.existing.count else None,
        findings_error="; ".join(dict.fromkeys(said)),
    )
    if args.json:
        emit_json(report)
    else:
        _print(report)
    return EXIT_OK


def _findings(target: Path, said: list[str]) -> Findings | None:
    """`git vivary check` of the folder as a workspace of its own (its working files); None, with the
    reason in `said`, when it cannot run (a bad config file the folder already had, say)."""
    from vivary_git.errors import VivaryError
    from vivary_git.workspace import open_workspace

    try:
        report = open_workspace(target, root=".").check()
    except VivaryError as err:
        said.append(str(err))
        return None
    codes: dict[str, int] = {}
    for f in report.findings:
        codes[f.code] = codes.get(f.code, 0) + 1
    return Findings(report.errors, report.warnings, dict(sorted(codes.items())))


def findings_line(f: Findings | None) -> str:
    if f is None:
        return "unknown (check could not run)"
    return f"{f.errors} error(s), {f.warnings} warning(s)"


def raised(before: Findings | None, after: Findings | None) -> dict[str, int]:
    """The codes init added findings of, and how many more of each."""
    if before is None or after is None:
        return {}
    return {c: n - before.codes.get(c, 0) for c, n in after.codes.items() if n > before.codes.get(c, 0)}


def _warn_if_raised(before: Findings | None, after: Findings | None) -> None:
    more = raised(before, after)
    if more:
        shown = ", ".join(f"{code} +{n}" for code, n in more.items())
        sys.stderr.write(f"warning: init raised the findings of the notes already here ({shown}): "
                         f"{findings_line(before)} before, {findings_line(after)} after; `git vivary check` lists "
                         "them\n")
        if "E130" in more:
            sys.stderr.write("warning: notes that shared a file name in different folders now share an id (tropo.toml "
                             "ids are slugs of the name): each E130 note is left out of the graph, with its links, "
                             "until one of the two is renamed\n")


def existing_lines(e: ExistingNotes) -> list[str]:
    """What the scaffold does to the notes already in the folder, in words."""
    if not e.count:
        return []
    lines = [f"{e.count} note(s) already here stay visible to `git vivary check`"]
    if e.exclude_dropped:
        shown = ", ".join(f"{k} ({n})" for k, n in e.exclude_dropped.items())
        lines.append(f"left out of tropo.toml's exclude so they stay visible: {shown}")
    if e.typed:
        shown = ", ".join(f"{k}/ ({n})" for k, n in e.typed.items())
        lines.append(f"already in type folders, now checked against those types' fields: {shown}")
    return lines


def kept_line(dialect: str, reason: str) -> str:
    return (f"kept the {dialect} dialect ({reason}): no tropo.toml and no typed seed graph, so the notes here "
            "read as before (docs/init.md)")


def _confirm(args: argparse.Namespace, plan: ScaffoldPlan, before: Findings | None) -> None:
    """The folder holds files already: say what will change, then ask (a terminal) or refuse (exit 3)."""
    out = sys.stderr
    writes = plan.writes()
    out.write(f"{plan.target} already holds files; init would change:\n")
    for f in writes:
        out.write(f"  {f.action.ljust(9)}  {f.path}\n")
    for line in existing_lines(plan.existing):
        out.write(f"  {line}\n")
    if plan.kept_dialect is not None:
        out.write(f"  {kept_line(plan.kept_dialect.dialect, plan.kept_dialect.reason)}\n")
    if plan.existing.count:
        out.write(f"  findings now: {findings_line(before)} (init prints them again after writing)\n")
    ask = sys.stdin.isatty() and not (args.no_wizard or args.auto)
    if ask:
        out.write(f"Write these {len(writes)} file(s)? [y/N]: ")
        out.flush()
        if sys.stdin.readline().strip().lower() in ("y", "yes"):
            return
        raise RefusedError("nothing was written (not confirmed)")
    raise RefusedError(f"{plan.target} already holds files; nothing was written. Review the list above (or "
                       "`git vivary init --dry-run`), then run again with --yes to write them (--yes also commits "
                       "the scaffold's own files)")


def _next_steps(args: argparse.Namespace, plan: ScaffoldPlan, committed: str | None) -> list[str]:
    c = plan.choices
    where = "" if plan.target == Path.cwd().absolute() else f"cd {plan.target} && "
    steps = []
    if args.dry_run:
        steps.append("run again without --dry-run to write these files")
    steps.append(f"{where}git vivary check")
    if not args.dry_run and committed is None and not args.yes:
        steps.append("review the files, then commit them (or run again with --yes)")
    if any(f.action == "keep" and not f.private for f in plan.files):
        steps.append("some files were kept as they were; --force overwrites them (see the list above)")
    steps.append("git vivary hooks install   # optional: check the graph before every commit (a human gate)")
    if c.memory != "none":
        from vivary_git.scaffold.plan import MEMORY_DOC, VAULT_MEMORY_DOC

        doc = VAULT_MEMORY_DOC if plan.kept_dialect is not None else MEMORY_DOC
        steps.append(f"memory policy ({c.memory}) is written DISABLED; {doc} explains activation, "
                     "install and index as separate steps")
    steps.append("git vivary doctor")
    return steps


def _print(r: InitReport) -> None:
    out = sys.stdout
    c = r.choices
    head = "dry run: nothing was written\n" if r.dry_run else ""
    verb = "would scaffold" if r.dry_run else "scaffolded"
    out.write(f"{head}{verb} a {c['preset']} workspace in {r.target} "
              f"(memory {c['memory']}, storage {c['storage']}, host {c['host']})\n")
    if r.git_init:
        out.write(f"  {'would run' if r.dry_run else 'ran'} git init\n")
    width = max(len(str(f["action"])) for f in r.files)
    for f in r.files:
        note = f"  ({f['note']})" if f["note"] else ""
        private = "  [private]" if f["private"] else ""
        out.write(f"  {str(f['action']).ljust(width)}  {f['path']}{private}{note}\n")
    from vivary_git.scaffold.plan import ExistingNotes

    for line in existing_lines(msgspec.convert(r.existing_notes, ExistingNotes)):
        out.write(f"{line}\n")
    if r.kept_dialect:
        out.write(kept_line(r.kept_dialect["dialect"], r.kept_dialect["reason"]) + "\n")
    if r.findings is not None:
        before, after = r.findings["before"], r.findings["after"]
        if r.dry_run:
            out.write(f"findings of the notes here: {findings_line(before)}\n")
        else:
            out.write(f"findings of the notes here: {findings_line(before)} before init, {findings_line(after)} "
                      "after\n")
    if r.private_verified:
        out.write(f"private, proved ignored by Git: {', '.join(r.private_verified)}\n")
    if r.committed:
        out.write(f"committed {r.committed[:12]}\n")
    out.write("next:\n")
    for step in r.next_steps:
        out.write(f"  {step}\n")
