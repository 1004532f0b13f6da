"""Plan and apply bootstrap-host's set-up of a host: its MCP server entry and the guidance block, and their removal.

A plan is a list of `Change`s, each the whole text of one file before and after; nothing is written until
`apply`. `install` edits each file (install, install again, uninstall gives back every file byte for byte);
`merged` adds what the files a host merges with ours do to our entry, as notes.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from vivary_git.errors import ConfigError, RefusedError, UsageError, VivaryError
from vivary_git.hosts import blocks, files
from vivary_git.hosts.install import (
    GUIDANCE_MARKERS,
    Scope,
    _check_strings,
    _config_location,
    _pick,
    _servers,
    default_name,
    guidance_file,
    guidance_text,
    json_install,
    json_uninstall,
    server_args,
    server_command,
    server_entry,
    server_state,
    toml_install,
    toml_uninstall,
    workspace_servers,
)
from vivary_git.hosts.kinds import HOST_KINDS, HOSTS, HostKind, HostSpec, user_config_path
from vivary_git.hosts.merged import merged_over

Role = Literal["server", "guidance"]
Action = Literal["create", "update", "unchanged", "remove", "delete", "absent", "kept"]

_NAME = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")


@dataclass
class Change:
    path: Path
    shown: str  # the path as the user reads it: relative to the workspace, or ~/… for user files
    role: Role
    scope: Scope
    before: str | None
    after: str | None
    action: Action
    note: str = ""

    def diff(self) -> str:
        a = [] if self.before is None else self.before.splitlines(keepends=True)
        b = [] if self.after is None else self.after.splitlines(keepends=True)
        lines = difflib.unified_diff(a, b, "/dev/null" if self.before is None else f"a/{self.shown}",
                                     "/dev/null" if self.after is None else f"b/{self.shown}")
        return "".join(x if x.endswith("\n") else x + "\n\\ No newline at end of file\n" for x in lines)


@dataclass
class Plan:
    kind: HostKind
    root: Path
    uninstall: bool
    name: str | None
    entry: dict[str, Any] | None
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _outside_git(root: Path) -> bool:
    """Whether `root` is in no Git work tree (a repository Git cannot open is another command's error to name)."""
    from vivary_git import git

    try:
        repo = git.try_open(root)
    except VivaryError:
        return False
    return repo is None or repo.workdir is None


def plan(kind: HostKind, root: Path, *, uninstall: bool = False, user: bool = False,
         name: str | None = None) -> Plan:
    spec = HOSTS[kind]
    scope: Scope = "user" if user else "project"
    if spec.config is None and user:
        raise UsageError(f"--user: {kind} has no server config to write")
    if spec.config is not None:
        if user and not spec.config.user:
            raise UsageError(f"--user: {spec.label} reads its servers from {spec.config.project} in the workspace; "
                             "run without --user")
        if not user and spec.config.project is None:
            raise UsageError(f"{spec.label} has only a user-level config ({user_config_path(kind)}), outside the "
                             "workspace: pass --user to write it")
    if name is not None and not _NAME.match(name):
        raise UsageError(f"--name {name!r}: use 1-64 letters, digits, '-' or '_'")
    entry = server_entry(root, spec.config) if spec.config is not None else None
    p = Plan(kind, root, uninstall, None, entry)
    if spec.config is not None and entry is not None:
        if not uninstall:
            _check_strings(entry, spec.config, kind)
        change, p.name, others = _server_change(spec, root, scope, name, entry, uninstall)
        p.changes.append(change)
        if others:
            p.notes.append(f"{change.shown} has this workspace's server under another name too: "
                           f"{', '.join(map(repr, others))}; remove it with --uninstall --name NAME")
        if not uninstall:
            p.notes.extend(m.note for m in merged_over(kind, root, scope, p.name, entry, change.shown))
        if scope == "project" and not uninstall:
            p.notes.append(f"the entry in {change.shown} holds this machine's paths (the command and the "
                           "workspace): commit it only where everyone shares them")
        if kind == "vscode" and not uninstall:
            p.notes.append("VS Code asks you to trust the server before it first starts it (and again when the entry "
                           "changes); its tools are offered in the Chat view's agent mode")
        if kind == "zed" and not uninstall:
            p.notes.append("Zed starts a project's MCP servers only in a worktree you trust")
        if not uninstall and importlib.util.find_spec("mcp") is None:
            p.notes.append("the server needs the MCP SDK, which is not installed here: pip install 'vivary-git[mcp]'")
    else:
        argv = [*server_command(), *server_args(root)]
        p.notes.append("configure your host to start this stdio server: " + " ".join(shlex.quote(a) for a in argv))
    if not uninstall and _outside_git(root):
        p.notes.append(f"{root} is not in a Git work tree: the server can search and read, but every memory it writes "
                       "is a commit, so `add`, `update` and the rest are refused until you run `git init` there")
    target = guidance_file(spec, root)
    if target is not None:
        p.changes.append(_guidance_change(kind, scope, root, target, uninstall))
        if kind == "opencode" and target != spec.guidance and not uninstall:
            p.notes.append(f"opencode reads {target} only where there is no {spec.guidance} (from the workspace up to "
                           f"the top of the work tree), so the guidance block is in your {target}: a new "
                           f"{spec.guidance} would hide it from opencode")
        elif spec.reads_first and kind != "opencode" and not uninstall:
            p.notes.append(f"{spec.label} reads only the first of {', '.join(spec.reads_first)} that is a file at the "
                           f"workspace root, so the guidance block is in {target}")
    return p


def _server_change(spec: HostSpec, root: Path, scope: Scope, given: str | None, entry: dict[str, Any],
                   uninstall: bool) -> tuple[Change, str, list[str]]:
    """The change to the host's file, the server's name in it, and other names this workspace's server has
    there (an entry should have one)."""
    assert spec.config is not None
    path, shown = _config_location(spec, root, scope)
    before = files.read(path, shown)
    note = ""
    project = scope == "project"
    found = [] if before is None else workspace_servers(_servers(before, spec.config, shown), root, project=project)
    name = given or _pick(found, default_name(root, scope))
    if given is not None and not uninstall and found and given not in found:
        raise RefusedError(f"{shown} already has this workspace's server, named {found[0]!r}; a second one would "
                           f"start a second server on the same memory: run with --name {found[0]} (or without "
                           f"--name), or remove it first (--uninstall --name {found[0]}); nothing was written")
    if spec.config.format == "toml":
        if uninstall:
            after, note = (None, "") if before is None else toml_uninstall(before, name, root, shown, project=project)
        else:
            after, note = toml_install(before, name, entry, root, shown, project=project)
    elif uninstall:
        after, note = (None, "") if before is None else json_uninstall(before, spec.config, name, root, shown,
                                                                        project=project)
    else:
        after = json_install(before, spec.config, name, entry, root, shown, project=project)
    change = Change(path, shown, "server", scope, before, after, _action(before, after, note), note)
    return change, name, [n for n in found if n != name]


def _guidance_change(kind: HostKind, scope: Scope, root: Path, rel: str, uninstall: bool) -> Change:
    path = files.project_path(root, rel)
    before = files.read(path, rel)
    note = ""
    if uninstall:
        users = list(dict.fromkeys(k for k, s in _installed_hosts(root)
                                   if (k, s) != (kind, scope) and guidance_file(HOSTS[k], root) == rel))
        if before is None or GUIDANCE_MARKERS.span(before, rel) is None:
            after: str | None = before
        elif users:
            after = before
            note = "still used by " + ", ".join(HOSTS[k].label for k in users)
        else:
            after = blocks.remove(before, GUIDANCE_MARKERS, rel)
    else:
        after = blocks.put(before, GUIDANCE_MARKERS, guidance_text(), rel)
    return Change(path, rel, "guidance", "project", before, after, _action(before, after, note), note)


def _installed_hosts(root: Path) -> list[tuple[HostKind, Scope]]:
    """Hosts whose config, the project's or the user-level one (Codex's `--user` entry reads AGENTS.md too),
    holds this workspace's server: the ones a guidance block serves."""
    found: list[tuple[HostKind, Scope]] = []
    for kind in HOST_KINDS:
        spec = HOSTS[kind]
        if spec.config is None:
            continue
        scopes: list[Scope] = ["project"] if spec.config.project is not None else []
        scopes += ["user"] if spec.config.user else []
        for scope in scopes:
            try:
                state = server_state(kind, root, scope).state
            except (ConfigError, RefusedError):
                continue
            if state in ("installed", "stale"):
                found.append((kind, scope))
    return found


def _action(before: str | None, after: str | None, note: str) -> Action:
    if before == after:
        if note:
            return "kept"
        return "absent" if before is None else "unchanged"
    if before is None:
        return "create"
    if after is None:
        return "delete"
    return "update"


def apply(p: Plan) -> None:
    for c in p.changes:  # every file first: a read-only one stops the run before anything is written
        if c.before != c.after:
            files.check_writable(c.path, c.shown)
    for c in p.changes:
        if c.before == c.after:
            continue
        made = _folders_to_make(c.path.parent) if c.scope == "user" and c.before is None else []
        files.write(c.path, c.shown, c.after, before=c.before)
        if made:
            _remember_made(p.root, made)
        if c.after is None and c.scope == "project":
            _drop_empty_dirs(c.path.parent, p.root)
        elif c.after is None:
            _drop_made_dirs(c.path.parent, p.root)


def _drop_empty_dirs(folder: Path, root: Path) -> None:
    """`.cursor/`, `.gemini/`, `.codex/` left empty by an uninstall go too (nothing else can be in them)."""
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


# A user-level file's folders (~/.codeium/windsurf/, ~/.kiro/settings/) may be the user's own, made empty or
# not by them: only those this workspace's bootstrap-host made, as its Git folder remembers, go with the file.

def _folders_to_make(folder: Path) -> list[Path]:
    """The folders `files.write` makes for a new file in `folder`, the outermost first."""
    out = []
    while not folder.exists() and not folder.is_symlink() and folder != folder.parent:
        out.append(folder)
        folder = folder.parent
    return out[::-1]


def _made_record(root: Path) -> Path | None:
    """Where the workspace's Git folder keeps the user-level folders bootstrap-host made (none outside Git, or with
    something other than a folder on the way there: those folders are then left, as if they were the user's)."""
    from vivary_git import derived, git

    try:
        repo = git.try_open(root)
    except VivaryError:
        return None
    if repo is None:
        return None
    record = repo.vivary_dir / "hosts" / "made-folders"
    return None if derived.damage(repo.vivary_dir, record, needs="of bootstrap-host", file=True) else record


def _read_made(record: Path) -> list[str]:
    try:
        return record.read_text("utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []


def _remember_made(root: Path, made: list[Path]) -> None:
    record = _made_record(root)
    if record is None:
        return
    known = _read_made(record)
    with contextlib.suppress(OSError):  # not remembered: the folders stay, as the user's would
        record.parent.mkdir(parents=True, exist_ok=True)
        record.write_text("".join(f"{d}\n" for d in dict.fromkeys([*known, *map(str, made)])), "utf-8")


def _drop_made_dirs(folder: Path, root: Path) -> None:
    """The folders of a user-level file that bootstrap-host made, left empty by its uninstall, go too; one the user
    had, or one with anything in it, stays."""
    record = _made_record(root)
    if record is None:
        return
    known = _read_made(record)
    left = list(known)
    while str(folder) in left:
        try:
            folder.rmdir()
        except OSError:  # something in it: the user's now, and so are the folders around it
            left = [d for d in left if d != str(folder) and Path(d) not in folder.parents]
            break
        left.remove(str(folder))
        folder = folder.parent
    if left == known:
        return
    with contextlib.suppress(OSError):
        if left:
            record.write_text("".join(f"{d}\n" for d in left), "utf-8")
        else:
            record.unlink()
