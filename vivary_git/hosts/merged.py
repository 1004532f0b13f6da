"""What the files a host merges with ours by server name do to our entry: Codex's and Kiro's other scope's
file (this workspace's server under a second name there), opencode's user-level files, the files of the folders
above and `.opencode/`. bootstrap-host's notes and host-status's states both come from here."""

from __future__ import annotations

import contextlib
import itertools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vivary_git.errors import ConfigError, RefusedError
from vivary_git.hosts import files
from vivary_git.hosts.install import Scope, _servers, server_state, workspace_servers
from vivary_git.hosts.kinds import HOSTS, HostKind, HostSpec, user_files_read


@dataclass(frozen=True)
class Merged:
    """What a file the host merges with ours by server name makes of our entry: `disabled` (its `enabled: false`
    turns ours off), `overridden` (read after ours, its command replaces ours), `lent` (other members of its
    apply to ours), `second` (this workspace's server under another name there: two servers, one memory),
    `unread` (a link in the workspace, not followed: the user checks it)."""
    path: str  # as the user reads it
    effect: Literal["disabled", "overridden", "lent", "second", "unread"]
    name: str  # the server's name in that file
    note: str  # what it does, and the fix


def merged_over(kind: HostKind, root: Path, scope: Scope, name: str, entry: dict[str, Any] | None,
                written: str) -> list[Merged]:
    """What the files a host merges with `written` (ours, holding `entry` as `command` + `args` under `name`) do
    to it: bootstrap-host's notes and host-status's states both come from here."""
    spec = HOSTS[kind]
    twin = _twin(spec, root, scope, name)
    return ([twin] if twin else []) + (_merged_by_name(spec, root, name, written, entry or {})
                                       if scope == "project" else [])


def _twin(spec: HostSpec, root: Path, scope: Scope, name: str) -> Merged | None:
    """A host that reads a project's file and a user-level one (Codex, Kiro) merges their servers by name: this
    workspace's server under another name in the other file is a second server on the same memory there."""
    other: Scope = "user" if scope == "project" else "project"
    assert spec.config is not None
    if not spec.config.user or spec.config.project is None:
        return None
    try:
        state = server_state(spec.kind, root, other)
    except (ConfigError, RefusedError):  # that file is the other run's to report
        return None
    if state.state not in ("installed", "stale") or state.name == name:
        return None
    flag = " --user" if other == "user" else ""
    return Merged(state.path, "second", state.name, (
        f"{spec.label} also reads {state.path}, where this workspace's server is {state.name!r}: in this "
        f"workspace it starts both, two servers on the same memory; keep one (remove that one with "
        f"`git vivary bootstrap-host --host-kind {spec.kind}{flag} --uninstall`)"))


def _merged_files(spec: HostSpec, root: Path, written: str) -> list[tuple[Path, str, bool, bool]]:
    """The other files a host merges with the one we write, by server name (opencode): each as (path, shown,
    project's, read after ours). Seen with opencode-ai 1.18.33: the user's own (~/.config/opencode), then
    opencode.json and opencode.jsonc from the top of the work tree down to the folder it starts in (the nearer
    wins; in one folder opencode.jsonc wins over opencode.json), then that folder's .opencode/."""
    if spec.kind != "opencode":
        return []
    out = []
    for path in user_files_read(spec.kind):
        shown = str(path)
        with contextlib.suppress(ValueError):
            shown = "~/" + path.relative_to(Path.home()).as_posix()
        out.append((path, shown, False, False))
    top = next((d for d in (root, *root.parents) if (d / ".git").exists()), root)
    above = list(itertools.takewhile(lambda d: d != top.parent, root.parents)) if top != root else []
    for rel in (Path(os.path.relpath(d / n, root)).as_posix() for d in above
                for n in ("opencode.json", "opencode.jsonc")):
        out.append((root / rel, rel, True, False))
    if written == "opencode.json":
        out.append((root / "opencode.jsonc", "opencode.jsonc", True, True))
    out += [(root / rel, rel, True, True) for rel in (".opencode/opencode.json", ".opencode/opencode.jsonc")]
    return out


def _merged_by_name(spec: HostSpec, root: Path, name: str, written: str, entry: dict[str, Any]) -> list[Merged]:
    """What a host that merges other files with ours by server name (opencode) makes of our entry: this
    workspace's server under another name there is a second server on the same memory; an entry of our name
    there lends ours the members ours lacks (`enabled: false`), or, read after ours, replaces those it has;
    a link in the workspace, not followed, is `unread`, for the user to check."""
    assert spec.config is not None
    out = []
    for path, shown, project, after in _merged_files(spec, root, written):
        try:
            # A project's file is committed, a stranger's input: a link is not followed (it could point out of the
            # work tree, or at /dev/zero), and what is read is a small regular file (files.read).
            text = files.read(files.project_path(root, shown) if project else path, shown)
        except RefusedError:
            out.append(Merged(shown, "unread", name, (
                f"{spec.label} also reads {shown}, a symbolic link, which bootstrap-host does not follow: check by "
                f"hand that it names no server {name!r} nor this workspace's under another name")))
            continue
        except (OSError, ConfigError):  # the host's to report: it reads no server from it
            continue
        try:
            servers = {} if text is None else _servers(text, spec.config, shown)
        except ConfigError:
            continue
        others = [n for n in workspace_servers(servers, root, project=project) if n != name]
        if others:
            out.append(Merged(shown, "second", others[0], (
                f"{spec.label} also reads {shown}, where this workspace's server is {others[0]!r}: in this "
                f"workspace it starts both, two servers on the same memory; keep one (remove {others[0]!r} from "
                f"{shown} by hand)")))
        theirs = servers.get(name)
        if not isinstance(theirs, dict):
            continue
        lent = [k for k, v in theirs.items() if (entry.get(k) != v if after else k not in entry)]
        if lent:
            off = "enabled" in lent and theirs.get("enabled") is False
            effect: Literal["disabled", "overridden", "lent"] = (
                "disabled" if off else "overridden" if {"command", "args"} & set(lent) else "lent")
            out.append(Merged(shown, effect, name, (
                f"{spec.label} also reads {shown}, which has a server named {name!r} too, and merges the two member "
                f"by member: its {', '.join(lent)} {'applies' if len(lent) == 1 else 'apply'} here"
                f"{' (`enabled: false` there turns this one off)' if off else ''}; rename one of them")))
    return out

