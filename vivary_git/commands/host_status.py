"""`git vivary host-status`: which agent hosts have this workspace's server and guidance, and onboarding."""

from __future__ import annotations

import argparse
import sys

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json
from vivary_git.commands.bootstrap_host import KINDS
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK
from vivary_git.escape import text


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "host-status", help="what bootstrap-host installed where, and whether onboarding is done",
        description="For each agent host (or --host-kind): whether its config holds this workspace's MCP server "
        "(installed, stale: written for a command that moved or for another workspace, disabled or overridden: the "
        "files the host merges with it by server name, taken together in the host's order, turn it off or replace "
        "its command, or a Claude Code settings file rejects it, untrusted: Codex or Gemini CLI starts no server of "
        "the project's file in a folder the user's file does not trust, unapproved: Claude Code has not been told "
        "to start this .mcp.json server yet, other: the name is another server's, absent, unreadable), where, what "
        "the files merged with it do to it (this workspace's server under another name there, a file that cannot "
        "be read), and whether the guidance block is there and current; user-level files (the desktop app's, "
        "~/.codex/config.toml, ~/.gemini/trustedFolders.json, ~/.claude.json) are read, never written. Then which "
        "onboarding questions are answered (never the answers: they stay in USER.md). Reads only. Exit 0; 1 when an "
        "installed entry is stale, disabled, overridden, untrusted or unapproved, or a file (merged ones too) is "
        "unreadable; 2 on a usage error. See docs/hosts.md.",
    )
    p.add_argument("--host-kind", choices=KINDS, metavar="KIND", help="only this host: " + ", ".join(KINDS))
    p.add_argument("--name", metavar="NAME",
                   help="only a server of this name (default: this workspace's server, whatever its name)")
    add_json_arg(p)
    add_workspace_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from vivary_git.hosts import install, merged, onboard
    from vivary_git.hosts.kinds import HOST_KINDS, HOSTS

    root = install.find_root(args.cwd, args.root)
    hosts = []
    bad = False
    for kind in [args.host_kind] if args.host_kind else HOST_KINDS:
        spec = HOSTS[kind]
        servers = []
        if spec.config is not None:
            scopes: list[install.Scope] = []
            if spec.config.project is not None:
                scopes.append("project")
            if spec.config.user:
                scopes.append("user")
            for scope in scopes:
                s = install.server_state(kind, root, scope, args.name)
                over = [] if s.entry is None else merged.merged_over(kind, root, scope, s.name, s.entry, s.path)
                state = _state(s.state, [m.effect for m in over])
                bad = bad or state in _BAD or any(m.effect == "unreadable" for m in over)
                servers.append({"path": s.path, "scope": s.scope, "name": s.name, "state": state,
                                "command": s.command, "command_found": s.command_found, "detail": s.detail,
                                "merged": [{"path": m.path, "effect": m.effect, "name": m.name, "detail": m.note}
                                           for m in over]})
        guide, guide_state, why = install.guidance_state(kind, root)
        hosts.append({"host_kind": kind, "label": spec.label, "servers": servers,
                      "guidance": None if guide is None else {"path": guide, "state": guide_state, "detail": why}})
    ob = onboard.status(root)
    out = {
        "workspace": str(root), "mcp_extra": importlib.util.find_spec("mcp") is not None, "hosts": hosts,
        "onboarding": {"file": ob.file, "done": ob.done, "answered": ob.answered, "missing": ob.missing},
    }
    if args.json:
        emit_json(out)
    else:
        _print(out)
    return EXIT_FINDINGS if bad else EXIT_OK


# States of an entry the host does not run as bootstrap-host wrote it, or cannot read: exit 1.
_BAD = ("stale", "unreadable", "disabled", "overridden", "untrusted", "unapproved")


def _state(state: str, effects: list[str]) -> str:
    """An installed entry a file merged over it turns off is `disabled`, one whose command it replaces is
    `overridden`, one in a file whose servers the host starts none of (Codex, Gemini CLI: an untrusted project)
    `untrusted`, one the user has not approved yet (Claude Code) `unapproved`: the host does not run what
    bootstrap-host wrote (a second server elsewhere is only a note)."""
    if state != "installed":
        return state
    return next((e for e in ("untrusted", "unapproved", "disabled", "overridden") if e in effects), state)


def _print(out: dict[str, object]) -> None:
    w = sys.stdout.write
    w(f"workspace {out['workspace']}\n")
    hosts = out["hosts"]
    assert isinstance(hosts, list)
    for h in hosts:
        w(f"{h['host_kind']} ({h['label']})\n")
        for s in h["servers"]:  # (names and details come from files a clone may hold: escaped, docs/output.md)
            detail = f"  ({text(s['detail'])})" if s["detail"] else ""
            w(f"  server    {s['state']:<10} {text(s['path'])} [{text(s['name'])}]{detail}\n")
            for m in s["merged"]:
                w(f"    {m['effect']:<10} {text(m['path'])} [{text(m['name'])}]  ({text(m['detail'])})\n")
        g = h["guidance"]
        if g is not None:
            detail = f"  ({text(g['detail'])})" if g["detail"] else ""
            w(f"  guidance  {g['state']:<10} {text(g['path'])}{detail}\n")
    if not out["mcp_extra"]:
        w("note: the MCP SDK is not installed, so hosts cannot start the server: pip install 'vivary-git[mcp]'\n")
    ob = out["onboarding"]
    assert isinstance(ob, dict)
    if ob["done"]:
        w(f"onboarding done ({ob['file']}, private)\n")
    else:
        w(f"onboarding: {len(ob['answered'])} of {len(ob['answered']) + len(ob['missing'])} answered; to answer: "
          f"{', '.join(ob['missing'])} (git vivary onboard)\n")
