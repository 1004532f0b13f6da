"""Whether a host starts the servers of a project's file at all, whatever the file holds: Codex reads
.codex/config.toml only in a project ~/.codex/config.toml trusts, Gemini CLI starts MCP servers only in a folder
~/.gemini/trustedFolders.json trusts, Claude Code starts a server of .mcp.json only once the user approved it.
Each answer is a `Verdict`, which merged.py makes a finding of: bootstrap-host's notes and host-status's states
both come from there."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vivary_git.errors import ConfigError, RefusedError, UsageError, VivaryError
from vivary_git.hosts import files, jsonedit
from vivary_git.hosts.install import Scope, _config_location, _toml_data
from vivary_git.hosts.kinds import HOSTS, HostKind, home_folder


@dataclass(frozen=True)
class Verdict:
    """Why the host does not start the project's servers (`untrusted`, `unapproved`), or this one (`disabled`),
    or why that is not known (`unreadable`): the file that decides, as the user reads it, and the note (what the
    host does, and the fix)."""
    path: str
    effect: Literal["untrusted", "unapproved", "disabled", "unreadable"]
    note: str


def project_trust(kind: HostKind, root: Path, scope: Scope, name: str, written: str) -> Verdict | None:
    """What keeps the host from starting the servers of the project's file `written` (ours, `name` in it) in
    `root`; None when nothing does (or the host asks nothing)."""
    if scope != "project":
        return None
    if kind == "codex":
        return _codex(root, written)
    if kind == "gemini-cli":
        return _gemini(root, written)
    if kind == "claude-code":
        return _claude(root, name, written)
    return None


def _json(path: Path, shown: str, *, comments: bool, comments_only: bool = False) -> Any:
    """A small JSON file's data (None: no file); ConfigError naming the line when it does not parse. `comments_only`:
    comments, but no trailing comma and no byte order mark (Gemini CLI's files: strip-json-comments, then
    JSON.parse)."""
    text = files.read(path, shown)
    if text is None:
        return None
    try:
        tree = jsonedit.parse(text if comments_only else text.removeprefix("\ufeff"), comments=comments,
                              trailing_commas=comments and not comments_only, bom=not comments_only)
        return jsonedit.to_python(tree)
    except jsonedit.JsonSyntaxError as err:
        raise ConfigError(f"{shown}: {err}") from None


def _claude_state(path: Path, shown: str) -> Any:
    """~/.claude.json, Claude Code's own record of every project, which grows past any config file's size: read up
    to 256 MiB, by the standard parser (the file is Claude Code's strict JSON)."""
    text = files.read(path, shown, limit=256 * 1024 * 1024)
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{shown}: line {err.lineno}, column {err.colno}: {err.msg}") from None


def _top(root: Path) -> tuple[Path | None, Path | None]:
    """The top of `root`'s work tree and its repository's main work tree (None outside one)."""
    from vivary_git import git

    try:
        repo = git.try_open(root)
    except VivaryError:
        repo = None
    if repo is None or repo.workdir is None:
        return None, None
    return repo.workdir, repo.common_dir.parent


# --- Codex ------------------------------------------------------------------------------------------------------


def codex_trust(root: Path) -> tuple[object, str, str] | None:
    """How the user's ~/.codex/config.toml trusts the project in `root`, as Codex decides it (codex-rs
    `config_loader`, `decision_for_dir`; seen with Codex 0.171.0): the `trust_level` of `[projects."<root>"]`, else
    of the project root (the nearest folder up holding one of `project_root_markers`, `.git` by default), else of
    the repository's main work tree (a linked worktree's too), each keyed by its absolute path exactly as written
    (no trailing `/`; a folder above is not enough). Returns the level (None: none set), the key it was read under
    (or `root`, the one to add) and the file as the user reads it; None when that file cannot be read (its own
    row says why)."""
    try:
        path, shown = _config_location(HOSTS["codex"], root, "user")
        text = files.read(path, shown)
        data = {} if text is None else _toml_data(text, shown)
    except (RefusedError, UsageError, ConfigError):
        return None
    projects = data.get("projects")
    markers = data.get("project_root_markers", [".git"])
    if not isinstance(markers, list) or not all(isinstance(m, str) for m in markers):
        markers = [".git"]  # (Codex refuses to start on it: not ours to report)
    top = next((d for d in (root, *root.parents) for m in markers if (d / m).exists()), root)
    keys = [str(root), str(top)]
    main = _top(root)[1]
    if main is not None:
        keys.append(str(main))
    for key in keys:
        said = projects.get(key) if isinstance(projects, dict) else None
        if isinstance(said, dict) and "trust_level" in said:
            return said["trust_level"], key, shown
    return None, str(root), shown


def _codex(root: Path, written: str) -> Verdict | None:
    """Codex reads a project's .codex/config.toml only in a project the user's file trusts: elsewhere it starts none
    of its servers, ours included, and says nothing (`codex mcp list`: "No MCP servers configured")."""
    found = codex_trust(root)
    if found is None or found[0] == "trusted":  # (a file Codex cannot read: its own row)
        return None
    level, key, shown = found
    table = f"[projects.{json.dumps(key)}]"
    if level == "untrusted":
        said, fix = f"marks {key} untrusted", f"set `trust_level = \"trusted\"` under `{table}` there"
    elif level is not None:
        given = json.dumps(level) if isinstance(level, str) else str(level)
        said = f"gives {key} `trust_level = {given}`, which Codex does not accept (it stops on it)"
        fix = f"set it to \"trusted\" under `{table}` there"
    else:
        said = f"does not trust {key}"
        fix = f"trust the project when `codex` asks, or add `{table}` with `trust_level = \"trusted\"` to {shown}"
    return Verdict(shown, "untrusted", (
        f"Codex reads {written} only in a project you trust, and {shown} {said}, so Codex starts none of that "
        f"file's servers there, this one included; if you trust what {written} holds (every server in it starts), "
        f"{fix}"))


# --- Gemini CLI -------------------------------------------------------------------------------------------------

_GEMINI_LEVELS = ("TRUST_FOLDER", "TRUST_PARENT", "DO_NOT_TRUST")


def _gemini_path(path: str) -> str:
    """A path as Gemini CLI compares it: its real path when there is one, case folded where the file system
    folds case (its `normalizePath`)."""
    real = os.path.realpath(path) if os.path.exists(path) else path
    return real.lower() if sys.platform in ("darwin", "win32") else real


def _gemini(root: Path, written: str) -> Verdict | None:
    """Gemini CLI (seen with 0.61.0: packages/core/src/utils/trust.ts, packages/cli/src/config/trustedFolders.ts)
    reads the project's .gemini/settings.json, and starts any MCP server at all, only in a folder it trusts:
    `GEMINI_CLI_TRUST_WORKSPACE=true` trusts every folder (`=false`, or `GEMINI_RESTRICTED_MODE=true`, none);
    `security.folderTrust.enabled: false` in the user's settings.json turns folder trust off (it is on by default);
    else the entry of ~/.gemini/trustedFolders.json (`GEMINI_CLI_TRUSTED_FOLDERS_PATH`; `GEMINI_CLI_HOME` stands
    for the home folder) with the longest path among those that hold the folder decides: `TRUST_FOLDER` trusts
    that folder and every folder under it, `TRUST_PARENT` the folder above its path and everything under that,
    `DO_NOT_TRUST` trusts nothing there; paths compared as real paths (links resolved), a relative one taken from
    the folder Gemini CLI starts in. No entry: not trusted. A file Gemini CLI cannot parse, or a level it does not
    know, stops it (exit 52)."""
    env = os.environ
    for var, value in (("GEMINI_RESTRICTED_MODE", "true"), ("GEMINI_CLI_TRUST_WORKSPACE", "false")):
        if env.get(var) == value:
            return Verdict(f"${var}", "untrusted", (
                f"Gemini CLI starts MCP servers only in a folder you trust, and {var}={value} in this environment "
                f"trusts none, so Gemini CLI started from here starts none of {written}'s servers, this one "
                f"included; unset {var} to let ~/.gemini/trustedFolders.json decide"))
    if env.get("GEMINI_CLI_TRUST_WORKSPACE") == "true":
        return None
    gemini = Path(env.get("GEMINI_CLI_HOME") or home_folder()) / ".gemini"
    settings = gemini / "settings.json"
    try:
        data = _json(settings, files.home_relative(settings), comments=True, comments_only=True)
    except (ConfigError, RefusedError) as err:
        return _gemini_unreadable(files.home_relative(settings), str(err))
    enabled = _dig(data, "security", "folderTrust", "enabled")
    # Gemini CLI reads "true" / "false" (any case) as booleans, and any other value of the wrong type as
    # JavaScript does (0 and "" are false): seen with 0.61.0.
    if enabled is False or enabled in (0, "") or (isinstance(enabled, str) and enabled.lower() == "false"):
        return None
    path = Path(env["GEMINI_CLI_TRUSTED_FOLDERS_PATH"]) if env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH") else (
        gemini / "trustedFolders.json")
    shown = files.home_relative(path)
    try:
        rules = _json(path, shown, comments=True, comments_only=True)
    except (ConfigError, RefusedError) as err:
        return _gemini_unreadable(shown, str(err))
    if rules is None:
        rules = {}
    if not isinstance(rules, dict):
        kind = {"list": "array", "str": "string", "int": "number", "float": "number", "bool": "boolean"}
        return _gemini_unreadable(shown, f"{shown} holds a JSON {kind[type(rules).__name__]}, not an object")
    wrong = next(((k, v) for k, v in rules.items() if v not in _GEMINI_LEVELS), None)
    if wrong is not None:
        return _gemini_unreadable(shown, f"{shown} gives {wrong[0]} the level {json.dumps(wrong[1])}, which is not "
                                         f"one of {', '.join(_GEMINI_LEVELS)}")
    real = os.path.realpath(root)
    here = Path(_gemini_path(real))
    levels = {os.path.abspath(os.path.join(root, key)): level for key, level in rules.items()}
    best: tuple[str, str, Path] | None = None  # the entry that decides: its path, its level, the folder it names
    for key, level in levels.items():
        folder = Path(_gemini_path(os.path.dirname(key) if level == "TRUST_PARENT" else key))
        if (folder == here or folder in here.parents) and (best is None or len(key) > len(best[0])):
            best = (key, level, folder)
    if best is not None and best[1] != "DO_NOT_TRUST":
        return None
    entry = f"`{json.dumps(real)}: \"TRUST_FOLDER\"`"
    if best is None:
        said = f"does not trust {real} (no entry for it or a folder above it)"
        fix = f"trust the folder when `gemini` asks, or add {entry} to {shown}"
    else:
        said = f"marks {best[0]} DO_NOT_TRUST"
        fix = "set it to \"TRUST_FOLDER\" there" if best[2] == here else f"add {entry} to {shown}"
    return Verdict(shown, "untrusted", (
        f"Gemini CLI starts MCP servers only in a folder you trust, and {shown} {said}, so Gemini CLI starts none "
        f"of {written}'s servers there, this one included (nor your user-level ones: `gemini mcp list` shows them "
        f"Disabled); if you trust what {written} holds (every server in it starts), {fix}"))


def _dig(data: Any, *keys: str) -> Any:
    """`data[k1][k2]...`, None where a step is no object or has no such member."""
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _gemini_unreadable(shown: str, why: str) -> Verdict:
    return Verdict(shown, "unreadable", (
        f"Gemini CLI reads {shown} to decide whether it trusts this folder, and stops on it (exit 52): {why}; fix "
        "the file, or move it aside"))


# --- Claude Code ------------------------------------------------------------------------------------------------


def _names(value: Any) -> list[Any]:
    return [value] if isinstance(value, str) else value if isinstance(value, list) else []


def _claude(root: Path, name: str, written: str) -> Verdict | None:
    """Claude Code (seen with 2.1.332) starts a server of the project's .mcp.json only once it is approved, and
    never while it is rejected. Rejected: a `disabledMcpjsonServers` naming it in the user's settings.json or the
    project's `.claude/settings.json` or `.claude/settings.local.json` (in the workspace folder or the top of its
    work tree). Approved: `enableAllProjectMcpServers: true`, or an `enabledMcpjsonServers` naming it, in the user's
    settings.json; or in one of the project's files, but only in a folder whose trust dialog was accepted
    (`hasTrustDialogAccepted` in ~/.claude.json under the folder, a folder above it up to the top of its work tree,
    or the repository's main work tree). The same lists kept per project in ~/.claude.json by earlier versions are
    moved into `.claude/settings.local.json` at its next start, and read as that file. `CLAUDE_CONFIG_DIR` stands
    for ~/.claude and holds .claude.json too."""
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    user = (Path(config_dir) if config_dir else home_folder() / ".claude") / "settings.json"
    state_path = Path(config_dir) / ".claude.json" if config_dir else home_folder() / ".claude.json"
    top, main = _top(root)
    folders = [root]
    if top is not None and top in root.parents:
        folders += [d for d in root.parents if d == top or top in d.parents]
    state_shown = files.home_relative(state_path)
    read: list[tuple[str, bool, Any]] = []  # (a file as the user reads it, whether it is the project's, its data)
    places = [(user.parent, user.name, False),
              *[(folder, f".claude/{n}", True) for folder in dict.fromkeys([root, folders[-1]])
                for n in ("settings.json", "settings.local.json")],
              (state_path.parent, state_path.name, False)]
    for base, rel, project in places:
        shown = Path(os.path.relpath(base / rel, root)).as_posix() if project else files.home_relative(base / rel)
        try:
            if base / rel == state_path:
                read.append((shown, False, _claude_state(state_path, shown)))
            else:  # a project's file is a stranger's input: a link in it is not followed
                read.append((shown, project, _json(files.project_path(base, rel) if project else base / rel, shown,
                                                   comments=False)))
        except (ConfigError, RefusedError) as err:
            why = str(err).removesuffix(" (nothing was written)")
            if isinstance(err, RefusedError):
                why = ("a symbolic link is on the way to it in the workspace, which is not followed (a clone's link "
                       "could point anywhere): check by hand what Claude Code reads there")
            return Verdict(shown, "unreadable", (
                f"Claude Code reads {shown} to decide whether it may start {name!r} of {written}, which is not "
                f"known: {why}"))
    state = read.pop()[2]
    projects = state.get("projects") if isinstance(state, dict) else None
    keys = [str(d) for d in dict.fromkeys([*folders, *([main] if main else [])])]
    entries = [projects[k] for k in keys if isinstance(projects, dict) and isinstance(projects.get(k), dict)]
    legacy = [(state_shown, True, e) for e in entries]
    for shown, _, data in [*read, *legacy]:
        if isinstance(data, dict) and name in _names(data.get("disabledMcpjsonServers")):
            return Verdict(shown, "disabled", (
                f"Claude Code also reads {shown}, whose `disabledMcpjsonServers` lists {name!r}, so it does not "
                f"start this server (`claude mcp get {name}`: Rejected); remove {json.dumps(name)} from that list "
                "to use it"))
    trusted = any(e.get("hasTrustDialogAccepted") is True for e in entries)
    for _, project, data in [*read, *legacy]:
        if (not project or trusted) and isinstance(data, dict) and (
                data.get("enableAllProjectMcpServers") is True or name in _names(data.get("enabledMcpjsonServers"))):
            return None
    local = ".claude/settings.local.json"
    fix = (f"add {json.dumps(name)} to `enabledMcpjsonServers` in {local} (or run `claude` here and choose \"Use "
           "this MCP server\")" if trusted else
           f"run `claude` in {root}, trust the folder and choose \"Use this MCP server\"")
    user_shown = files.home_relative(user)
    return Verdict(local, "unapproved", (
        f"Claude Code asks once before it starts a server from a project's .mcp.json, and {name!r} in {written} is "
        f"not approved yet (`claude mcp list`: Pending approval), so it does not start it; if you trust what "
        f"{written} holds, {fix}; or add {json.dumps(name)} to `enabledMcpjsonServers` in {user_shown}, which "
        f"approves a server of that name in every project"))
