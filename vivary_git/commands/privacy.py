"""`git vivary privacy explain`: is a path private to semantic memory, and by which rule?

This is how a user answers "why was my note not indexed?": the same batch decision the memory
snapshot makes, for paths of their choosing, with the rule that decided.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import msgspec

from vivary_git.commands._common import add_json_arg, add_source_args, emit_json, open_ws
from vivary_git.errors import EXIT_OK, UsageError
from vivary_git.escape import json_text, name, text


class Explained(msgspec.Struct, frozen=True):
    path: str  # repository-relative, `/`-separated: the name the boundary decides on
    private: bool
    reason: str


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "privacy", help="explain which paths semantic memory may never see, and why",
        description="Questions about the privacy boundary of semantic memory (docs/privacy.md).",
    )
    actions = p.add_subparsers(dest="privacy_command", metavar="ACTION", required=True)
    e = actions.add_parser(
        "explain", help="print private/public and the deciding rule for each PATH",
        description="For each PATH print `private  PATH  (reason)` or `public   PATH`, decided exactly as the "
        "memory snapshot decides (the floor, memory.privacy.private_paths, Git's ignore rules, sensitive names). "
        "PATHs are relative to the current directory like Git's (`:/x` is relative to the repository top); "
        "output names them relative to the repository top. Exit 0; 3 when the boundary cannot decide "
        "(it fails closed); 2 on a usage or config error.",
    )
    e.add_argument("paths", nargs="*", metavar="PATH", help="paths to explain (files need not exist)")
    e.add_argument("--stdin", action="store_true", help="read paths from standard input, one per line")
    e.add_argument("-z", dest="nul", action="store_true",
                   help="with --stdin, paths are NUL-terminated; text output records become "
                   "`private|public NUL PATH NUL REASON NUL`")
    add_source_args(e)
    add_json_arg(e)
    e.set_defaults(run=run)


def _read_stdin(nul: bool) -> list[str]:
    data = sys.stdin.buffer.read()
    # surrogateescape: a name that is not UTF-8 still round-trips to the exact bytes Git sees.
    text = os.fsdecode(data) if os.name != "nt" else data.decode("utf-8", "surrogateescape")
    if nul:
        items = text.split("\0")
        if items and items[-1] == "":
            items.pop()
        return items
    return [line.removesuffix("\r") for line in text.splitlines() if line]


def _to_repo_path(raw: str, base: Path, top: Path) -> str:
    """Git's reading of a command-line path: relative to the current directory, `:/` for the top."""
    if not raw:
        raise UsageError("an empty path was given; name a file relative to the current directory")
    if raw.startswith(":/"):
        full = os.path.normpath(top / raw[2:]) if raw[2:] else str(top)
    else:
        full = os.path.normpath(base / raw)  # lexical like Git: `a/../b` is `b`; absolute stays absolute
    try:
        rel = Path(full).relative_to(top).as_posix()
    except ValueError:
        # An absolute path through a symlinked directory (e.g. /tmp → /private/tmp): compare real parents.
        parent = Path(full).parent.resolve()
        try:
            rel = (parent / Path(full).name).relative_to(top).as_posix()
        except ValueError:
            raise UsageError(f"{raw}: is outside the repository {top}; name a path inside it") from None
    if rel in ("", "."):
        raise UsageError(f"{raw}: names the repository top itself; name a file or folder inside it")
    return rel


def _shown(path: str) -> str:
    # Quote like Git does for names a terminal line cannot carry as they are; either way escaped as all
    # text output is (docs/output.md): `##[`, U+2028 and C1 controls cannot reach the line raw.
    if any(c < " " or c in "\"\\\x7f" for c in path):
        return json_text(name(path))
    return text(path)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import decide_for_source, work_tree

    if args.stdin and args.paths:
        raise UsageError("give paths as arguments or with --stdin, not both")
    if args.nul and not args.stdin:
        raise UsageError("-z only applies to --stdin; add --stdin and pipe NUL-terminated paths in")
    raw = _read_stdin(args.nul) if args.stdin else list(args.paths)
    if not raw and not args.stdin:
        raise UsageError("name at least one PATH (or pass --stdin)")
    ws = open_ws(args)
    policy = load_memory_config(ws).policy()
    top = work_tree(ws)  # refuses (exit 3) outside a work tree, as the snapshot does
    base = Path(os.getcwd(), args.cwd or ".").resolve()
    paths = [_to_repo_path(p, base, top) for p in raw]
    decisions = decide_for_source(ws, paths, policy) if paths else []
    found = [Explained(d.path, d.private, d.reason) for d in decisions]
    if args.json:
        emit_json(found)  # a name that is not UTF-8 shows its bytes as \xNN (docs/output.md)
        return EXIT_OK
    out = sys.stdout
    if args.nul:
        out.flush()
        for d in found:
            record = f"{'private' if d.private else 'public'}\0{d.path}\0{d.reason}\0"
            out.buffer.write(record.encode("utf-8", "surrogateescape"))
        out.buffer.flush()
        return EXIT_OK
    for d in found:
        if d.private:
            out.write(f"private  {_shown(d.path)}  ({text(d.reason)})\n")
        else:
            out.write(f"public   {_shown(d.path)}\n")
    out.flush()
    return EXIT_OK
