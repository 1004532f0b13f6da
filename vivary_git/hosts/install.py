"""One host's files: which entry in them is this workspace's server, that entry added or taken out as text,
the guidance block's file and text, and what state they are in (`host-status`).

Install, install again, uninstall gives back every file byte for byte (`jsonedit` and `blocks` say how); a file
this module did not create is only ever merged into, and a file it cannot parse is reported with its line and left
alone. `bootstrap` plans and applies a set-up with these; `merged` says what the files a host merges with ours do
to our entry.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import itertools
import json
import re
import shutil
import sys
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from vivary_git.errors import ConfigError, RefusedError, UsageError, VivaryError
from vivary_git.hosts import blocks, files, jsonedit
from vivary_git.hosts.kinds import HOSTS, ConfigSpec, HostKind, HostSpec, user_config_path

Scope = Literal["project", "user"]

PROJECT_NAME = "vivary"
GUIDANCE_MARKERS = blocks.Markers(
    "<!-- >>> vivary: managed by `git vivary bootstrap-host`; edits between these lines are replaced >>> -->",
    "<!-- <<< vivary <<< -->",
)
_IMPORTS_AGENTS = re.compile(r"^@(?:\./)?AGENTS\.md\s*$", re.MULTILINE)
ROOT_MARKERS = ("tropo.toml", ".vivary/workspace.toml")


# -- the workspace and the server entry ------------------------------------------------------------------

def find_root(cwd: str | None, root: str | None) -> Path:
    """The workspace: `--root`, else the nearest folder with tropo.toml (or .vivary/workspace.toml) up to
    the top of the Git work tree, else that top, else the folder itself."""
    start = Path(cwd or ".").resolve()
    if not start.is_dir():
        raise UsageError(f"-C {cwd}: no such directory")
    if root is not None:
        from vivary_git.source import root_folder

        return root_folder(start, root)  # inside the work tree, as every command checks it (exit 2)
    top = next((d for d in (start, *start.parents) if (d / ".git").exists()), None)
    for d in (start, *start.parents):
        if any((d / m).is_file() for m in ROOT_MARKERS):
            return d
        if d == top:
            return d
    return start


def server_command() -> list[str]:
    """How a host starts this very installation: the `git-vivary` script beside the running Python (a
    venv's, pipx's, the system's), else that Python with `-m vivary_git.main`. Not `git vivary`: hosts
    start servers with a bare PATH, where a venv's script is not found."""
    python = Path(sys.executable)
    for name in ("git-vivary", "git-vivary.exe"):
        script = python.parent / name
        if script.is_file():
            return [str(script)]
    return [str(python), "-m", "vivary_git.main"]


def server_args(root: Path) -> list[str]:
    """The server's arguments after the command: `mcp -C <root>`, and `--root .` when the server would not
    find this workspace from that folder by itself (a folder chosen with `--root`, with no tropo.toml or
    .vivary/workspace.toml of its own: from it, the server would serve the top of the work tree)."""
    args = ["mcp", "-C", str(root)]
    try:
        found = find_root(str(root), None)
    except VivaryError:
        found = None
    return args if found == root else [*args, "--root", "."]


def server_entry(root: Path, spec: ConfigSpec | None) -> dict[str, Any]:
    command = server_command()
    entry: dict[str, Any] = dict(spec.extra) if spec is not None else {}
    entry["command"] = command[0]
    entry["args"] = [*command[1:], *server_args(root)]
    return entry


def served(value: Any, root: Path, *, project: bool = True) -> Path | None:
    """The workspace a server entry serves, resolved as `git vivary mcp` resolves it: its `-C` folder (a
    relative one from `root`, the workspace, in a project's own file; no one folder in a user-level file),
    then its `--root` from there, else the nearest workspace marker from that folder up. None when that
    cannot be told (no `-C`, a folder that is not there, a `--root` outside the work tree)."""
    if not isinstance(value, dict):
        return None
    cwd, pinned = _pinned_args(value.get("args"))
    path = _folder(cwd, root, project) if cwd is not None else None
    if path is None:
        return None
    try:
        return find_root(str(path), pinned)
    except (VivaryError, OSError, RuntimeError, ValueError):
        return None


def _pinned_args(args: Any) -> tuple[str | None, str | None]:
    """The `-C` and `--root` values after `mcp` in an entry's arguments (None when not given)."""
    if not isinstance(args, list) or "mcp" not in args:
        return None, None
    cwd = pinned = None
    rest = args[args.index("mcp") + 1:]
    for a, b in itertools.pairwise(rest):
        if a == "-C" and isinstance(b, str) and b:
            cwd = b
        elif a == "--root" and isinstance(b, str) and b:
            pinned = b
    for a in rest:
        if isinstance(a, str) and a.startswith("--root="):
            pinned = a.removeprefix("--root=")
    return cwd, pinned


def _folder(arg: str, root: Path, project: bool) -> Path | None:
    """An entry's `-C` folder: an absolute one as it is; a relative one from the workspace, where the host starts a
    project's servers, in a project's own file; in a user-level file a relative one names no one folder (None)."""
    path = Path(arg)
    if path.is_absolute():
        return path
    return root / path if project else None


def default_name(root: Path, scope: Scope) -> str:
    """`vivary` in a project's own file; `vivary-<folder>` in a user-level file shared by workspaces."""
    if scope == "project":
        return PROJECT_NAME
    slug = re.sub(r"[^a-z0-9]+", "-", root.name.lower()).strip("-")[:40].strip("-") or "workspace"
    return f"vivary-{slug}"


def pins(value: Any, root: Path, *, project: bool = True) -> bool:
    """Whether a server entry is one of ours for this workspace: its args hold `-C <root>`, compared as
    resolved folders (`-C /ws/`, `-C /ws/../ws`); with `--root R`, when R from that folder is this
    workspace. A relative one (`-C .`) is taken from the workspace, where the host starts a project's
    servers, in a project's own file; in a user-level file (`project` False) it names whichever folder the
    host starts in, so no one workspace."""
    if not isinstance(value, dict):
        return False
    args = value.get("args")
    if not isinstance(args, list):
        return False
    if _pinned_args(args)[1] is not None:  # `-C DIR --root R`: the folder R names from DIR
        return served(value, root, project=project) == root
    return any(a == "-C" and _names(b, root, project) for a, b in itertools.pairwise(args))


def _names(arg: Any, root: Path, project: bool) -> bool:
    if not isinstance(arg, str) or not arg:
        return False
    if arg == str(root):
        return True
    path = _folder(arg, root, project)
    if path is None:
        return False
    try:
        return path.resolve() == root
    except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL: not this folder
        return False


def merged_entry(current: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
    """`entry`, with what the user added to this workspace's entry already there: their own members (`env`,
    `disabled`, …, in their order) and the arguments after ours (`--profile read-only`). The command, our
    arguments and the host's fixed members are ours and are set as `entry` has them. Dropping the user's
    additions would undo choices such as a read-only profile for a host they do not trust."""
    merged = {**current, **entry}
    merged["args"] = [*entry["args"], *user_args(current.get("args"))]
    return merged


def user_args(args: Any) -> list[Any]:
    """The arguments the user added to one of our entries: those after `mcp`, but for `-C DIR` and
    `--root DIR`."""
    return split_args(args)[1]


def split_args(args: Any) -> tuple[list[Any], list[Any]]:
    """An entry's arguments as (ours: up to `mcp`, `-C DIR` and `--root DIR`, the user's: the others after
    `mcp`)."""
    if not isinstance(args, list) or "mcp" not in args:
        return (args if isinstance(args, list) else []), []
    at = args.index("mcp") + 1
    ours, theirs = list(args[:at]), []
    rest = args[at:]
    i = 0
    while i < len(rest):
        if rest[i] in ("-C", "--root") and i + 1 < len(rest):
            ours += rest[i:i + 2]
            i += 2
            continue
        theirs.append(rest[i])
        i += 1
    return ours, theirs


def _check_strings(entry: dict[str, Any], spec: ConfigSpec, kind: HostKind) -> None:
    for value in (entry["command"], *entry["args"]):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise UsageError(f"{value!r} is not valid UTF-8, so no config file can hold it; rename the folder "
                             "and run again") from None
        found = spec.expands.search(value) if spec.expands is not None else None
        if found is not None:
            brace = found.group(0).startswith("{")  # opencode's {env:NAME} and {file:PATH}, the others' $
            raise RefusedError(
                f"{value!r} holds a {'`{`' if brace else '`$`'} that {HOSTS[kind].label} would expand as an "
                f"environment variable{' or a file' if brace else ''}, and it has no escape for it; rename the "
                f"folder (or the venv) so the path holds no {found.group(0)!r}, or configure the server by hand")


# -- one file each ---------------------------------------------------------------------------------------

def _config_location(spec: HostSpec, root: Path, scope: Scope) -> tuple[Path, str]:
    assert spec.config is not None
    if scope == "project":
        rel = spec.config.project
        assert rel is not None
        alt = spec.config.project_alt
        if alt is not None and not _there(root / rel) and _there(root / alt):
            rel = alt  # opencode.jsonc alone: the user's file, where the entry goes (a new opencode.json would do)
        return files.project_path(root, rel), rel
    path = user_config_path(spec.kind)
    return files.user_path(path), files.home_relative(path)


def _there(path: Path) -> bool:
    return path.is_symlink() or path.exists()  # a link is there: it is refused where the file is read


def _as_read(value: Any, spec: ConfigSpec) -> Any:
    """An entry as `command` + `args`, from the `command: [cmd, *args]` of a host that takes one list (opencode);
    other values, and other hosts' entries, as they are."""
    if not spec.argv or not isinstance(value, dict) or not isinstance(value.get("command"), list):
        return value
    argv = value["command"]
    out: dict[str, Any] = {}
    for key, member in value.items():
        if key == "command":
            out["command"] = argv[0] if argv else None
            out["args"] = argv[1:]
        elif key != "args":
            out[key] = member
    return out


def _in_host_shape(entry: dict[str, Any], spec: ConfigSpec) -> dict[str, Any]:
    """`entry` (`command` + `args`) as the host's file holds it: for opencode one `command` list."""
    if not spec.argv:
        return entry
    out: dict[str, Any] = {}
    for key, member in entry.items():
        if key == "command":
            out["command"] = [member, *entry.get("args", [])]
        elif key != "args":
            out[key] = member
    return out


def _parse_error(shown: str, err: object) -> ConfigError:
    return ConfigError(f"{shown}: {err}; the host cannot read it either: fix the file and run again "
                       "(nothing was written)")


def _reads_as_jsonc(text: str) -> bool:
    try:
        jsonedit.parse(text, comments=True)
    except jsonedit.JsonSyntaxError:
        return False
    return True


def _json_tree(text: str, spec: ConfigSpec, shown: str) -> jsonedit.Node:
    try:
        jsonc = spec.format == "jsonc"
        tree = jsonedit.parse(text, comments=jsonc, trailing_commas=jsonc and not spec.comments_only,
                              bom=not spec.comments_only)
    except jsonedit.JsonSyntaxError as err:
        if spec.comments_unsaid and _reads_as_jsonc(text):
            said = str(err).replace(" (the host reads strict JSON)", "")
            raise ConfigError(f"{shown}: {said}: the host's docs show this file as plain JSON and do not say whether "
                              "it reads comments or trailing commas, so that is not guessed at: remove them and run "
                              "again, or add the entry by hand (nothing was written)") from None
        raise _parse_error(shown, err) from None
    if tree.kind != "object":
        raise ConfigError(f"{shown}: line 1: the file holds a JSON {tree.kind}, not an object; the host expects "
                          "an object; fix the file and run again (nothing was written)")
    return tree


def _container(tree: jsonedit.Node, text: str, spec: ConfigSpec, shown: str) -> jsonedit.Member | None:
    member = jsonedit.find(tree, spec.container)
    if member is not None and member.value.kind != "object":
        line = text.count("\n", 0, member.key_start) + 1
        kind = member.value.kind
        raise ConfigError(f"{shown}: line {line}: {spec.container!r} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, "
                          "not an object; fix the file and run again (nothing was written)")
    return member


def json_install(text: str | None, spec: ConfigSpec, name: str, entry: dict[str, Any], root: Path,
                 shown: str, *, project: bool = True) -> str:
    written = _in_host_shape(entry, spec)
    if text is None:
        unit, nl = "  ", "\n"
        inner = jsonedit.created_container(name, written, unit, unit, nl)
        schema = _schema_member(spec)
        head = "" if schema is None else unit + schema + "," + nl
        return "{" + nl + head + unit + '"' + spec.container + '": ' + inner + nl + "}" + nl
    tree = _json_tree(text, spec, shown)
    unit, nl = jsonedit.indent_unit(text, tree), jsonedit.newline_of(text)
    container = _container(tree, text, spec, shown)
    if container is None:
        outer = jsonedit._member_indent(text, tree, unit)
        value_text = jsonedit.created_container(name, written, outer, unit, nl)
        return jsonedit.insert_member(text, tree, spec.container, value_text, unit=unit, nl=nl)
    current = jsonedit.find(container.value, name)
    if current is None:
        return jsonedit.insert_member(text, container.value, name, value=written, unit=unit, nl=nl)
    value = jsonedit.to_python(current.value)
    if not pins(_as_read(value, spec), root, project=project):
        raise _taken(shown, spec, name)
    merged = _in_host_shape(merged_entry(_as_read(value, spec), entry), spec)
    for key, want in merged.items():  # member by member: the user's layout and comments inside it stay
        if key not in value or value[key] != want:
            text = jsonedit.set_member(text, _entry_node(text, spec, name), key, want, unit=unit, nl=nl)
    return text


def _schema_member(spec: ConfigSpec) -> str | None:
    """The `$schema` member as the host writes it into a file it reads without one (opencode)."""
    return None if spec.schema is None else '"$schema": ' + json.dumps(spec.schema)


def _entry_node(text: str, spec: ConfigSpec, name: str) -> jsonedit.Node:
    """The object of server `name` in a file already read (and found to hold it)."""
    container = jsonedit.find(jsonedit.parse(text, comments=True), spec.container)
    assert container is not None
    member = jsonedit.find(container.value, name)
    assert member is not None and member.value.kind == "object"
    return member.value


def json_uninstall(text: str, spec: ConfigSpec, name: str, root: Path, shown: str, *,
                   project: bool = True) -> tuple[str | None, str]:
    """The text without our entry (None: delete the file), and a note when something is left."""
    tree = _json_tree(text, spec, shown)
    container = _container(tree, text, spec, shown)
    current = None if container is None else jsonedit.find(container.value, name)
    if container is None or current is None:
        return text, ""
    if not pins(_as_read(jsonedit.to_python(current.value), spec), root, project=project):
        return text, f"{name!r} there is not this workspace's server; left alone"
    nl = jsonedit.newline_of(text)
    after = jsonedit.remove_member(text, container.value, name)
    tree = jsonedit.parse(after, comments=True)
    container = jsonedit.find(tree, spec.container)
    assert container is not None
    outer = jsonedit._own_line_indent(after, container.key_start)
    emptied = after[container.value.start:container.value.end]
    if outer is not None and emptied == jsonedit.empty_created_container(outer, nl):
        after = jsonedit.remove_member(after, tree, spec.container)  # the container was ours too
        schema = _schema_member(spec)
        if after == "{" + nl + "}" + nl or (schema is not None and after == "{" + nl + "  " + schema + nl + "}" + nl):
            return None, ""  # and so was the file (its `$schema` written by us, or by the host on reading it)
    return after, ""


def _toml_markers(name: str) -> blocks.Markers:
    return blocks.Markers(f"# >>> vivary: MCP server {name}, managed by `git vivary bootstrap-host` >>>",
                          f"# <<< vivary: MCP server {name} <<<")


def _toml_data(text: str, shown: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        said = str(err)
        at = re.search(r" ?\(at line (\d+), column (\d+)\)", said)
        if at is not None:
            said = f"line {at.group(1)}, column {at.group(2)}: {said[:at.start()] + said[at.end():]}"
        raise _parse_error(shown, said) from None
    except RecursionError:
        raise _parse_error(shown, "arrays or tables are nested too deeply") from None


def _toml_servers(data: dict[str, Any], shown: str) -> dict[str, Any]:
    servers = data.get("mcp_servers", {})
    if not isinstance(servers, dict):
        raise ConfigError(f"{shown}: `mcp_servers` is not a table; fix the file and run again (nothing was written)")
    return servers


def toml_install(text: str | None, name: str, entry: dict[str, Any], root: Path,
                 shown: str, *, project: bool = True) -> tuple[str, str]:
    import tomlkit

    data = _toml_data(text or "", shown)
    servers = _toml_servers(data, shown)
    markers = _toml_markers(name)
    current = servers.get(name)
    ours = isinstance(current, dict) and pins(current, root, project=project)
    merged = merged_entry(current, entry) if ours and isinstance(current, dict) else entry
    inner = None if text is None else markers.inner(text, shown)
    if text is not None and inner is None and current is not None:
        if current == merged:
            return text, "written by hand, as bootstrap-host would"
        if ours:
            return text, (f"[mcp_servers.{name}] was written by hand; left as it is (edit it, or remove it and "
                          "run again)")
        raise _taken(shown, None, name)
    # The block is rewritten with what it held, merged: a member of the user's outside it (an
    # [mcp_servers.NAME.env] table after the block) stays where it is, outside.
    held = _block_server(inner, name) if inner is not None else {}
    body = tomlkit.dumps({"mcp_servers": {name: {k: v for k, v in merged.items() if k in entry or k in held}}})
    after = blocks.put(text, markers, body, shown)
    expected = {**data, "mcp_servers": {**servers, name: merged}}
    try:
        got: dict[str, Any] | None = tomllib.loads(after)
    except (tomllib.TOMLDecodeError, RecursionError):
        got = None
    if got != expected:
        why = ("`mcp_servers` is an inline table, which no table can add to" if re.search(
            r"^\s*mcp_servers\s*=", text or "", re.MULTILINE) else "was the server's table edited by hand?")
        raise ConfigError(f"{shown}: adding a [mcp_servers.{name}] table would not add just this server ({why}); "
                          "nothing was written; add this by hand:", detail=body.splitlines())
    return after, ""


def _block_server(inner: str, name: str) -> dict[str, Any]:
    """The server's members the managed block itself holds ({} when it cannot be read alone: the check of
    the result then finds what would be lost)."""
    try:
        held = tomllib.loads(inner).get("mcp_servers", {}).get(name, {})
    except (tomllib.TOMLDecodeError, RecursionError, AttributeError):
        return {}
    return held if isinstance(held, dict) else {}


def toml_uninstall(text: str, name: str, root: Path, shown: str, *, project: bool = True) -> tuple[str | None, str]:
    data = _toml_data(text, shown)
    servers = _toml_servers(data, shown)
    markers = _toml_markers(name)
    if markers.span(text, shown) is None:
        if name in servers and pins(servers[name], root, project=project):
            return text, f"[mcp_servers.{name}] was written by hand (no bootstrap-host markers); left alone"
        return text, ""
    after = blocks.remove(text, markers, shown)
    note = ""
    left = _toml_servers(_toml_data(after or "", shown), shown).get(name)
    if after is not None and isinstance(left, dict) and left and pins(servers.get(name), root, project=project):
        # Members the user added outside the block ([mcp_servers.NAME.env], Codex's way to pass variables)
        # belong to this server: left behind, they would make a server with no command.
        after = _drop_server_table(after, name) or None  # nothing else there: the file was ours
        note = ("with your own " + ", ".join(
            f"[mcp_servers.{name}.{k}]" if isinstance(v, dict) else f"{k} of [mcp_servers.{name}]"
            for k, v in left.items()))
    rest = {k: v for k, v in servers.items() if k != name}
    expected = {k: v for k, v in data.items() if k != "mcp_servers"}
    if rest:
        expected["mcp_servers"] = rest
    got = _toml_data(after or "", shown)
    if got.get("mcp_servers") == {} and not rest:
        got.pop("mcp_servers")  # an empty [mcp_servers] table of the user's stays, as written
    if got != expected:
        raise ConfigError(f"{shown}: removing the managed block would change more than this server (was it edited "
                          f"by hand?); nothing was written; remove [mcp_servers.{name}] by hand")
    return after, note


def _drop_server_table(text: str, name: str) -> str:
    """`text` without what is left of `[mcp_servers.NAME]` (tomlkit keeps every other byte as it is)."""
    import tomlkit

    doc = tomlkit.parse(text)
    servers = doc["mcp_servers"]
    assert isinstance(servers, dict)
    del servers[name]
    if not servers and isinstance(servers, tomlkit.items.Table) and servers.is_super_table():
        del doc["mcp_servers"]  # implied by [mcp_servers.NAME.env] alone: it goes with it
    out = tomlkit.dumps(doc)
    return "" if out.strip() == "" else out


def _taken(shown: str, spec: ConfigSpec | None, name: str) -> RefusedError:
    return RefusedError(f"{shown} already has a server named {name!r} that is not this workspace's; choose another "
                        "name with --name NAME (nothing was written)")


def guidance_text() -> str:
    return importlib.resources.files("vivary_git.hosts").joinpath("templates/guidance.md").read_text("utf-8")


def guidance_file(spec: HostSpec, root: Path) -> str | None:
    """The host's instructions file; AGENTS.md when that file only imports AGENTS.md (as `init` writes it), in a
    host that reads such an import (a `@AGENTS.md` line in `.github/copilot-instructions.md` is only text). For a
    host that reads only the first of several files (Zed), the first of them there is: a block in a later one
    would never reach it, and a new file ahead of the user's would hide theirs."""
    if spec.reads_first:
        # A link counts as there (its file is refused where it is edited), a folder does not (Zed skips it).
        return next((rel for rel in spec.reads_first if (root / rel).is_symlink() or (root / rel).is_file()),
                    spec.guidance)
    if spec.guidance is None or not spec.imports:
        return spec.guidance
    own = files.read(files.project_path(root, spec.guidance), spec.guidance)
    if own is None or not _IMPORTS_AGENTS.search(own):
        return spec.guidance
    try:
        own_block = GUIDANCE_MARKERS.span(own, spec.guidance) is not None
    except RefusedError:
        own_block = True  # markers that make no one block are refused where the file is edited, not here
    return spec.guidance if own_block else "AGENTS.md"


# -- the servers a file holds ---------------------------------------------------------------------------

def _servers(text: str, spec: ConfigSpec, shown: str) -> dict[str, Any]:
    """The servers table of a host's file, as data."""
    if spec.format == "toml":
        return _toml_servers(_toml_data(text, shown), shown)
    container = _container(_json_tree(text, spec, shown), text, spec, shown)
    servers = {} if container is None else jsonedit.to_python(container.value)
    if not isinstance(servers, dict):
        return {}
    return {n: _as_read(v, spec) for n, v in servers.items()}


def workspace_servers(servers: dict[str, Any], root: Path, *, project: bool = True) -> list[str]:
    """The names under which the file holds this workspace's server, whatever they are (`--name`): an
    entry running `mcp` pinned to this root."""
    return [n for n, v in servers.items()
            if pins(v, root, project=project) and "mcp" in split_args(v.get("args"))[0]]


def _pick(found: list[str], default: str) -> str:
    return default if default in found or not found else found[0]


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)


# -- status ----------------------------------------------------------------------------------------------

@dataclass
class ServerState:
    path: str
    scope: Scope
    name: str
    state: Literal["installed", "stale", "absent", "other", "unreadable"]
    command: str | None = None
    command_found: bool | None = None
    detail: str = ""
    entry: dict[str, Any] | None = None  # this workspace's entry as read (`command` + `args`), when it is there


def server_state(kind: HostKind, root: Path, scope: Scope, name: str | None = None) -> ServerState:
    """Is this workspace's server in the host's file (under `name`; None: whatever its name), and can the host
    start it?"""
    spec = HOSTS[kind]
    assert spec.config is not None
    given, name = name, name or default_name(root, scope)
    try:
        path, shown = _config_location(spec, root, scope)
    except (RefusedError, UsageError) as err:  # a symlink in the workspace, a relative CODEX_HOME
        return ServerState(spec.config.project or "", scope, name, "unreadable", detail=str(err))
    try:
        text = files.read(path, shown)
        if text is None:
            return ServerState(shown, scope, name, "absent")
        servers = _servers(text, spec.config, shown)
    except ConfigError as err:
        return ServerState(shown, scope, name, "unreadable", detail=str(err))
    if given is None:
        name = _pick(workspace_servers(servers, root, project=scope == "project"), name)
    value = servers.get(name)
    if value is None:
        return ServerState(shown, scope, name, "absent")
    if not pins(value, root, project=scope == "project"):
        return ServerState(shown, scope, name, "other", detail=f"{name!r} there is not this workspace's server")
    command = value.get("command")
    found = ServerState(shown, scope, name, "installed", command if isinstance(command, str) else None, entry=value)
    serves = served(value, root, project=scope == "project")
    if serves != root:
        said = "no workspace it can open" if serves is None else f"the workspace {serves}"
        return replace(found, state="stale", detail=f"the entry starts the server on {said}, not on this one "
                       f"({root}); run `git vivary bootstrap-host --root {_quote(str(root))}` again to pin it")
    missing = _missing_command(command, value.get("args"), root)
    if missing:
        return replace(found, state="stale", command_found=False, detail=missing)
    return replace(found, command_found=True, detail=_differences(value, server_entry(root, None)))


def _missing_command(command: Any, args: Any, root: Path) -> str:
    """Why the host could not start the entry's command ("" when it can): an absolute path that is not a
    file, a bare name not on PATH (looked up as the host would, with this PATH), `git vivary` without
    `git-vivary` on PATH."""
    if not isinstance(command, str) or not command:
        return "the entry has no command"
    if Path(command).is_absolute():
        return "" if Path(command).is_file() else f"the command {command!r} is not there any more"
    if "/" in command or "\\" in command:
        return "" if (root / command).is_file() else f"the command {command!r} is not there (from {root})"
    if shutil.which(command) is None:
        return f"the command {command!r} is not on PATH"
    if Path(command).stem == "git" and isinstance(args, list) and args[:1] == ["vivary"] \
            and shutil.which("git-vivary") is None:
        return "`git vivary` needs `git-vivary` on PATH, and it is not there"
    return ""


def _differences(value: dict[str, Any], ours: dict[str, Any]) -> str:
    """What a working entry of this workspace has that bootstrap-host would not write: another command,
    the user's own members and arguments. Notes, not faults: the host starts it."""
    said = []
    base, theirs = split_args(value.get("args"))
    if value.get("command") != ours["command"]:
        said.append(f"starts {value.get('command')!r}, not this installation's {ours['command']!r}; "
                    "bootstrap-host would pin this one")
    elif base != ours["args"]:
        said.append(f"arguments {' '.join(map(str, base))!r}, where bootstrap-host writes "
                    f"{' '.join(ours['args'])!r}")
    own = [repr(k) for k in value if k not in ("command", "args", "type")]
    if theirs:
        own.append(repr(" ".join(map(str, theirs))))
    if own:
        said.append("with your own settings: " + ", ".join(own))
    return "; ".join(said)


def guidance_state(kind: HostKind, root: Path) -> tuple[str | None, str, str | None]:
    """(file, present | outdated | absent | unreadable, what to know) for the host's guidance block: why it is
    unreadable, or, when absent, whether the file itself is there (`init` writes AGENTS.md without the block)."""
    try:
        rel = guidance_file(HOSTS[kind], root)
        if rel is None:
            return None, "absent", None
        text = files.read(files.project_path(root, rel), rel)
        inner = None if text is None else GUIDANCE_MARKERS.inner(text, rel)
    except (ConfigError, RefusedError) as err:
        return HOSTS[kind].guidance, "unreadable", str(err)
    if inner is None:
        said = "no such file" if text is None else "the file has no vivary block"
        return rel, "absent", f"{said}: `git vivary bootstrap-host --host-kind {kind}` adds it"
    want = guidance_text()
    return rel, "present" if inner.replace("\r\n", "\n") == want else "outdated", None
