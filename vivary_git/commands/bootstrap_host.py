"""`git vivary bootstrap-host`: put this workspace's MCP server and memory guidance into an agent host."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json
from vivary_git.errors import EXIT_OK
from vivary_git.escape import text
from vivary_git.hosts.kinds import HOST_KINDS

if TYPE_CHECKING:
    from vivary_git.hosts.bootstrap import Plan

KINDS = HOST_KINDS  # one list: a host added in `hosts/kinds.py` is a choice here and in host-status


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bootstrap-host", help="set up an agent host: the MCP server entry and the memory guidance block",
        description="Write the `git vivary mcp` server entry, pinned to this workspace, into the host's own config "
        "file (.mcp.json, .codex/config.toml, .cursor/mcp.json, .gemini/settings.json, .vscode/mcp.json, "
        ".kiro/settings/mcp.json, .roo/mcp.json, .zed/settings.json, opencode.json, .continue/mcpServers/vivary.json, "
        "or, with --user, the desktop app's or Windsurf's config), and a managed block telling the agent how to use "
        "the memory into AGENTS.md, CLAUDE.md, GEMINI.md, .github/copilot-instructions.md, the rules file Zed reads or "
        ".continue/rules/vivary.md. Files are merged, never overwritten: other "
        "servers, comments and layout are kept byte for byte; a second run changes nothing; --uninstall removes "
        "exactly what was added. "
        "Exit 0; 2 on a usage error or a config file it cannot parse (named with its line; never written); "
        "3 when refused (a server of that name that is not this workspace's, a symlink in the workspace, marker "
        "lines that make no one block). "
        "See docs/hosts.md.",
    )
    p.add_argument("--host-kind", required=True, choices=KINDS, metavar="KIND",
                   help="the agent host: " + ", ".join(KINDS))
    p.add_argument("--install", action="store_true", help="install or update (the default)")
    p.add_argument("--uninstall", action="store_true", help="remove the server entry and the guidance block")
    p.add_argument("--user", action="store_true",
                   help="write the user-level config outside the workspace (needed for claude-desktop and windsurf; "
                   "for codex, ~/.codex/config.toml instead of the project's .codex/config.toml; for kiro, "
                   "~/.kiro/settings/mcp.json)")
    p.add_argument("--name", metavar="NAME",
                   help="the server's name in the host (default: vivary; vivary-FOLDER in a user-level file)")
    p.add_argument("--dry-run", action="store_true", help="write nothing; print the diff it would apply")
    add_json_arg(p)
    add_workspace_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.errors import UsageError
    from vivary_git.hosts import bootstrap, install

    if args.install and args.uninstall:
        raise UsageError("--install and --uninstall contradict each other; pass one of them")
    root = install.find_root(args.cwd, args.root)
    p = bootstrap.plan(args.host_kind, root, uninstall=args.uninstall, user=args.user, name=args.name)
    if not args.dry_run:
        bootstrap.apply(p)
    if args.json:
        emit_json(report(p, dry_run=args.dry_run))
    else:
        _print(p, dry_run=args.dry_run)
    return EXIT_OK


def report(p: Plan, *, dry_run: bool) -> dict[str, object]:
    out: dict[str, object] = {
        "ok": True, "host_kind": p.kind, "workspace": str(p.root), "uninstall": p.uninstall, "dry_run": dry_run,
        "server": None if p.entry is None else {"name": p.name, **p.entry},
        "files": [
            {"path": c.shown, "scope": c.scope, "role": c.role, "action": c.action, "note": c.note,
             **({"diff": c.diff()} if dry_run else {})}
            for c in p.changes
        ],
        "notes": p.notes,
    }
    return out


_DONE = {"create": "created", "update": "updated", "delete": "deleted", "remove": "removed"}


def _print(p: Plan, *, dry_run: bool) -> None:
    """The plan as lines, every value escaped (docs/output.md): names, notes and the files' own lines in a diff come
    from configs a cloned workspace may hold, and a diff's context line ` ::error ...` would be a CI command."""
    out = sys.stdout
    verb = "uninstall" if p.uninstall else "install"
    out.write(f"{'dry run: nothing was written' + chr(10) if dry_run else ''}"
              f"bootstrap-host {p.kind} ({verb}) for {text(p.root)}\n")
    if p.entry is not None and not p.uninstall:
        out.write(f"  server {text(repr(p.name))}: {text(p.entry['command'])} {text(' '.join(p.entry['args']))}\n")
    for c in p.changes:
        action = c.action if dry_run else _DONE.get(c.action, c.action)
        if dry_run and c.action in _DONE:
            action = "would " + c.action
        what = "MCP server entry" if c.role == "server" else "guidance block"
        note = f"  ({text(c.note)})" if c.note else ""
        out.write(f"  {action:<16} {text(c.shown)}  {what}{note}\n")
    for n in p.notes:
        out.write(f"note: {text(n)}\n")
    if dry_run:
        for c in p.changes:
            if c.before != c.after:
                out.write("\n" + "".join(text(line) + "\n" for line in c.diff().split("\n")[:-1]))
