"""What the files a host merges with ours by server name do to our entry: Codex's and Kiro's other scope's
file (this workspace's server under a second name there; Codex's member by member, Kiro's a name's entry whole),
opencode's user-level files, the files of the folders above and `.opencode/`, Gemini CLI's user-level
settings.json, judged together in the host's order; and whether the host starts the project's servers at all
(trust.py: Codex's and Gemini CLI's trust in the project, Claude Code's approval of the server). bootstrap-host's
notes and host-status's states both come from here."""

from __future__ import annotations

import itertools
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vivary_git.errors import ConfigError, RefusedError, UsageError
from vivary_git.hosts import files, trust
from vivary_git.hosts.install import (
    Scope,
    _config_location,
    _servers,
    pins,
    server_state,
    workspace_servers,
)
from vivary_git.hosts.kinds import HOSTS, HostKind, HostSpec, user_files_read

_NONE = object()  # a member an entry does not have


@dataclass(frozen=True)
class Merged:
    """What a file the host merges with ours by server name makes of our entry, judged on the merged result: `disabled`
    (its `enabled: false` is what the host ends up with), `overridden` (its command is), `lent` (other members of its
    are), `second` (this workspace's server under another name there: two servers, one memory), `unread` (a link in
    the workspace, not followed: the user checks it), `unreadable` (too big, not UTF-8, not parseable: the host cannot
    read it either), `untrusted` (Codex, Gemini CLI: the user's file does not trust the project, so the host starts
    none of its servers), `unapproved` (Claude Code: the user has not approved this server yet)."""
    path: str  # as the user reads it
    effect: Literal["disabled", "overridden", "lent", "second", "unread", "unreadable", "untrusted", "unapproved"]
    name: str  # the server's name in that file
    note: str  # what it does, and the fix


@dataclass(frozen=True)
class _Layer:
    """A file the host merges with ours: where it is, as the user reads it, whether it is the project's (a link is not
    followed), and whether host-status reports it in a row of its own (Codex's other scope)."""
    path: Path
    shown: str
    project: bool
    own_row: bool = False


def merged_over(kind: HostKind, root: Path, scope: Scope, name: str, entry: dict[str, Any] | None,
                written: str) -> list[Merged]:
    """What the files a host merges with `written` (ours, holding `entry` as `command` + `args` under `name`) do
    to it: bootstrap-host's notes and host-status's states both come from here."""
    spec = HOSTS[kind]
    untrusted = _untrusted(spec, root, scope, name, written)
    twin = _twin(spec, root, scope, name)
    said = {untrusted.path} if untrusted is not None and untrusted.effect == "unreadable" else set()
    # (Gemini CLI's ~/.gemini/settings.json decides its folder trust and holds servers: one that cannot be read is
    # said once.)
    return [m for m in (untrusted, twin) if m] + [
        m for m in _merged_by_name(spec, root, scope, name, written, entry or {})
        if not (m.effect == "unreadable" and m.path in said)]


def _trusted(root: Path) -> bool:
    found = trust.codex_trust(root)
    return found is not None and found[0] == "trusted"


def _untrusted(spec: HostSpec, root: Path, scope: Scope, name: str, written: str) -> Merged | None:
    """What keeps the host from starting the project's servers at all (trust.py): Codex's and Gemini CLI's trust in
    the project, Claude Code's approval of the server."""
    verdict = trust.project_trust(spec.kind, root, scope, name, written)
    return None if verdict is None else Merged(verdict.path, verdict.effect, name, verdict.note)


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


def _merge_order(spec: HostSpec, root: Path, scope: Scope, written: str) -> list[_Layer | None]:
    """The files a host merges with the one we write by server name, member by member, in the order it reads them
    (a later one wins each member it has); None is ours. Seen with opencode-ai 1.18.33: the user's own
    (~/.config/opencode: config.json, opencode.json, opencode.jsonc), then opencode.json and opencode.jsonc from the
    top of the work tree down to the folder it starts in (in one folder opencode.jsonc after opencode.json), then
    that folder's .opencode/. Seen with Codex 0.171.0: ~/.codex/config.toml, then the project's .codex/config.toml.
    Codex reads the project's file only in a trusted project (`codex_trust`). Kiro reads ~/.kiro/settings/mcp.json,
    then the workspace's, which wins a name's entry whole (kiro.dev/docs/mcp/configuration, "MCP server loading
    priority"). Gemini CLI 0.61.0 (packages/cli/src/config/settings.ts, `mergeSettings`; `mcpServers` is merged
    shallowly) reads ~/.gemini/settings.json, then the project's .gemini/settings.json, whose entry of a name
    replaces the user's whole (in a trusted folder: elsewhere it reads none of the project's, trust.py)."""
    assert spec.config is not None
    if spec.kind == "gemini-cli" and scope == "project":
        return [*(_Layer(path, files.home_relative(path), False) for path in user_files_read(spec.kind)), None]
    if spec.kind in ("codex", "kiro"):
        other: Scope = "user" if scope == "project" else "project"
        if spec.kind == "codex" and other == "project" and not _trusted(root):
            return []  # Codex does not read the project's file here
        try:
            path, shown = _config_location(spec, root, other)
        except (RefusedError, UsageError):  # a link in the workspace, a relative CODEX_HOME: said in its own row
            return []
        layer = _Layer(path, shown, other == "project", own_row=True)
        return [layer, None] if other == "user" else [None, layer]
    if spec.kind != "opencode" or scope != "project":
        return []
    out: list[_Layer | None] = [_Layer(path, files.home_relative(path), False) for path in user_files_read(spec.kind)]
    top = next((d for d in (root, *root.parents) if (d / ".git").exists()), root)
    above = list(itertools.takewhile(lambda d: d != top.parent, root.parents)) if top != root else []
    for rel in (Path(os.path.relpath(d / n, root)).as_posix() for d in reversed(above)
                for n in ("opencode.json", "opencode.jsonc")):
        out.append(_Layer(root / rel, rel, True))
    if written == "opencode.jsonc":  # ours: opencode.json is not there (or it would be ours)
        out.append(_Layer(root / "opencode.json", "opencode.json", True))
    out.append(None)
    if written == "opencode.json":
        out.append(_Layer(root / "opencode.jsonc", "opencode.jsonc", True))
    out += [_Layer(root / rel, rel, True) for rel in (".opencode/opencode.json", ".opencode/opencode.jsonc")]
    return out


def _merged_by_name(spec: HostSpec, root: Path, scope: Scope, name: str, written: str,
                    entry: dict[str, Any]) -> list[Merged]:
    """What a host that merges other files with ours by server name, member by member (opencode, Codex), or a name's
    entry whole (Kiro, Gemini CLI), makes of our entry, judged on the result of the whole merge in the host's order: a
    member another file sets and no file read after it sets again is what the host runs (`enabled: false` there,
    then `enabled: true` in a file read later, is on); Kiro and Gemini CLI run the entry of the file read last
    (Kiro's `disabled: true` there is off). This workspace's server under another name in one of them is a second
    server on the same memory; a link in the workspace, not followed, is `unread`, for the user to check; a file
    that cannot be read is `unreadable`."""
    assert spec.config is not None
    out: list[Merged] = []
    layers: list[tuple[_Layer | None, dict[str, Any]]] = []
    for layer in _merge_order(spec, root, scope, written):
        if layer is None:
            layers.append((None, entry))
            continue
        try:
            # A project's file is committed, a stranger's input: a link is not followed (it could point out of the
            # work tree, or at /dev/zero), and what is read is a small regular file (files.read).
            path = files.project_path(root, layer.shown) if layer.project else layer.path
            text = files.read(path, layer.shown)
            servers = {} if text is None else _servers(text, spec.config, layer.shown)
        except RefusedError:
            if not layer.own_row:
                out.append(Merged(layer.shown, "unread", name, (
                    f"{spec.label} also reads {layer.shown}, a symbolic link, which bootstrap-host does not follow: "
                    f"check by hand that it names no server {name!r} nor this workspace's under another name")))
            continue
        except (OSError, ConfigError) as err:
            if not layer.own_row:  # (Codex's other file is reported in its own row)
                why = str(err).removesuffix(" (nothing was written)")
                out.append(Merged(layer.shown, "unreadable", name, (
                    f"{spec.label} also reads {layer.shown}, which could not be read, so what it does to this "
                    f"server is not known: {why}")))
            continue
        others = [n for n in workspace_servers(servers, root, project=layer.project) if n != name]
        if others and not layer.own_row:  # (Codex's: `_twin`)
            out.append(Merged(layer.shown, "second", others[0], (
                f"{spec.label} also reads {layer.shown}, where this workspace's server is {others[0]!r}: in this "
                f"workspace it starts both, two servers on the same memory; keep one (remove {others[0]!r} from "
                f"{layer.shown} by hand)")))
        theirs = servers.get(name)
        if isinstance(theirs, dict):
            layers.append((layer, theirs))
    whole = spec.kind in ("kiro", "gemini-cli")  # the file read last takes the name, its entry whole
    if whole:
        layers = layers[-1:]
    last = {key: i for i, (_, value) in enumerate(layers) for key in value}  # who sets each member last
    switch, off_value = ("disabled", True) if spec.kind == "kiro" else ("enabled", False)
    for i, (layer, theirs) in enumerate(layers):
        if layer is None:
            continue
        if whole:  # (a member of ours that it lacks is gone too)
            lent = [k for k in dict.fromkeys([*theirs, *entry]) if theirs.get(k, _NONE) != entry.get(k, _NONE)]
        else:
            lent = [k for k, v in theirs.items() if last[k] == i and (k not in entry or entry[k] != v)]
        if not lent:
            continue
        off = switch in lent and theirs.get(switch) is off_value
        effect: Literal["disabled", "overridden", "lent"] = (
            "disabled" if off else "overridden" if {"command", "args"} & set(lent) else "lent")
        fix = ("keep one of the two entries" if pins(theirs, root, project=layer.project)
               else "rename one of them")
        how = (f"in this workspace uses that entry whole instead of this one: its {', '.join(lent)} "
               f"{'differs' if len(lent) == 1 else 'differ'}" if whole else
               f"merges the two member by member: its {', '.join(lent)} {'applies' if len(lent) == 1 else 'apply'} "
               "here")
        out.append(Merged(layer.shown, effect, name, (
            f"{spec.label} also reads {layer.shown}, which has a server named {name!r} too, and {how}"
            f"{f' (`{switch}: {json.dumps(off_value)}` there turns this one off)' if off else ''}; {fix}")))
    return out
