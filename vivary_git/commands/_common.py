"""Options and output shared by every command that reads a tree."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from vivary_git.escape import json_text, text

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace


def at_least(low: int) -> Callable[[str], int]:
    """An argparse `type` for a whole number ≥ `low`: anything else is a usage error (exit 2) that names
    the option, e.g. `argument --k: must be a whole number of at least 1, got '0'`."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"must be a whole number of at least {low}, got {text!r}")
        return value

    convert.__name__ = f"at_least_{low}"
    return convert


def between(low: int, high: int) -> Callable[[str], int]:
    """As `at_least`, with an upper bound too (a port number)."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"must be a whole number of at least {low} and at most {high}, got {text!r}")
        return value

    convert.__name__ = f"between_{low}_{high}"
    return convert


def edge_spec(spec: str) -> str:
    """An argparse `type` for `--edge FIELD[:TARGET]`: a field, a target or both. One that names neither (`''`,
    `':'`, spaces) would filter on nothing: a usage error (exit 2) that names the option and the form."""
    field, _, target = spec.partition(":")
    if not field.strip() and not target.strip():
        raise argparse.ArgumentTypeError(f"expected FIELD, FIELD:TARGET or :TARGET, got {spec!r}")
    return spec


def add_workspace_args(p: argparse.ArgumentParser) -> None:
    """`--root` and `-C`, for commands that read the working tree only."""
    p.add_argument("--root", metavar="DIR", help="workspace directory (default: nearest folder with tropo.toml)")
    p.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")


def add_source_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("which tree to read (default: the working tree, as `git status` sees it)")
    x = g.add_mutually_exclusive_group()
    x.add_argument("--rev", metavar="REV", help="read this commit, branch, tag or tree")
    x.add_argument("--staged", action="store_true", help="read the index (what the next commit would hold)")
    g.add_argument("--root", metavar="DIR", help="workspace directory (default: nearest folder with tropo.toml)")
    g.add_argument("--no-cache", action="store_true", help="neither read nor write cached results")
    g.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")


def add_filter_args(p: argparse.ArgumentParser, title: str, *, snippet: bool = True) -> None:
    """The --type/--path/--edge filters shared by query, find and recall (and query's --snippet)."""
    g = p.add_argument_group(title)
    g.add_argument("--type", action="append", default=[], metavar="TYPE",
                   help="only nodes of this type; repeat for any of several; '' for untyped")
    g.add_argument("--path", action="append", default=[], metavar="GLOB",
                   help="only paths matching this glob (fnmatch, case-sensitive, * crosses /); repeatable")
    g.add_argument("--edge", action="append", default=[], type=edge_spec, metavar="FIELD[:TARGET]",
                   help="only nodes with an outbound edge of FIELD (to TARGET: an ID, or a note as a link names it); "
                   "repeat to require all")
    if snippet:
        g.add_argument("--snippet", type=at_least(0), default=160, metavar="N",
                       help="snippet length in characters (default 160; 0: none)")


def add_json_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="print JSON for programs and agents")


def gate_from_env() -> bool:
    """CI runs `check` as a gate: one of the variables a CI runner sets (`gates.runner.CI_MARKERS`: `CI` and the
    runners' own, `TF_BUILD`, `JENKINS_URL`) set to anything but "" / "0" / "false" / "no"."""
    from vivary_git.gates.runner import marker

    return marker() is not None


def add_private_args(p: argparse.ArgumentParser, masked_by_default: str = "in CI ($CI, $TF_BUILD, $JENKINS_URL, ...)"
                     ) -> None:
    """`--show-private` / `--mask-private`: the owner's explicit choice over `gates.private.masking`'s default
    (`masked_by_default` says where the command masks without one)."""
    x = p.add_mutually_exclusive_group()
    x.add_argument("--show-private", dest="show_private", action="store_true", default=None,
                   help="show what private files hold (finding messages, IDs, link texts) even in CI or with "
                   "--json: for output only you read")
    x.add_argument("--mask-private", dest="show_private", action="store_false",
                   help="mask what private files hold as `ci` does (paths, lines, codes and counts kept): the "
                   f"default where others read the output, {masked_by_default} "
                   "(docs/privacy.md#where-others-read-the-output)")


def open_ws(args: argparse.Namespace, *, gate: bool = False, rev_option: str = "--rev") -> Workspace:
    from vivary_git import lifetime
    from vivary_git.workspace import open_workspace

    ws = open_workspace(args.cwd, rev=args.rev, staged=args.staged, root=args.root, cache=not args.no_cache,
                        gate=gate, rev_option=rev_option)
    lifetime.keep_until_exit(ws)  # freed by the system at exit, not object by object
    if not ws.source.caching:
        print(f"vivary: {text(str(ws.source.root))} is not in a Git repository: reading files directly, caching is "
              "off", file=sys.stderr)
    for warning in ws.config.settings_warnings:  # the editor's settings are the vault's data: never a failure
        print(f"vivary: warning: {text(warning)}", file=sys.stderr)
    return ws


def note_unknown_types(ws: Workspace, types: list[str] | None) -> None:
    """A `--type` no note has and the config does not declare selects nothing: say so on stderr, with the types
    there are (a typo would otherwise read as "no results")."""
    if not types:
        return
    known = {n.type for n in ws.graph().nodes if n.type} | set(ws.config.types)
    unknown = [t for t in dict.fromkeys(types) if t not in known and t not in ("", "untyped")]
    if unknown:
        listed = ", ".join(sorted(known)) or "none; `--type untyped` selects the notes of no type"
        print(f"vivary: no type {', '.join(text(repr(t)) for t in unknown)} here (types: {text(listed)})",
              file=sys.stderr)


_PIECE = 1 << 16


def write_out(data: str) -> None:
    """`data` on stdout in pieces of 64 KiB, each flushed: one write of a long output (a `ci` report of thousands of
    rows) into a pipe whose reader left after a line (`| head -1`) ended without a broken pipe and exited 0; piece
    by piece, the write after the reader left raises it, and the command exits 141 (docs/exit-codes.md)."""
    if len(data) <= _PIECE:
        sys.stdout.write(data)
        return
    for at in range(0, len(data), _PIECE):
        sys.stdout.write(data[at:at + _PIECE])
        sys.stdout.flush()


def emit_json(value: Any) -> None:
    """`--json` output: one line, escaped as docs/output.md says (a file name that is not UTF-8 as `\\xNN`)."""
    write_out(json_text(value) + "\n")


def index_after_write(args: argparse.Namespace, command: str, loaded: Any = None) -> None:
    """After a memory write on the command line, bring the semantic index up to the new tree as the MCP server
    does after its own (memory/local/writethrough.py), and say what happened: on stdout, or on stderr under
    `--json` (whose stdout is the write's result alone). The write is committed either way."""
    from vivary_git.memory.local.writethrough import after_write
    from vivary_git.workspace import open_workspace

    said = after_write(open_workspace(args.cwd, root=args.root), loaded)
    if said:
        print(f"vivary {command}: {text(said)}" if args.json else f"    {text(said)}",
              file=sys.stderr if args.json else sys.stdout)
