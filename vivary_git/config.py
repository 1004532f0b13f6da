"""Workspace configuration: `tropo.toml` (+ packs), `.vivary/graph.toml`, or zero-config defaults.

Config is read from the same tree as the notes, so a revision is checked against the rules it was
written under, and the same tree always gives the same answer.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import msgspec

from vivary_git import dialects
from vivary_git.dialects import dendron
from vivary_git.errors import ConfigError

FIELD_KINDS = (
    "string", "date", "datetime", "slug", "ref", "url", "bool", "number", "list", "string-list", "ref-list", "any",
)
BUILTIN_EXCLUDES = (".git", ".tropo", ".claude", "node_modules", ".obsidian")
CONFIG_FILE = "tropo.toml"
GRAPH_FILE = ".vivary/graph.toml"
MEMORY_FILE = ".vivary/memory.toml"
FORMAT_VERSION = 34  # bump when a parse or graph rule changes, so caches keyed by it are left behind


class FieldSpec(msgspec.Struct, frozen=True):
    kind: str
    choices: tuple[str, ...] = ()

    @property
    def is_ref(self) -> bool:
        return self.kind in ("ref", "ref-list")

    def describe(self) -> str:
        return f"enum:{'|'.join(self.choices)}" if self.kind == "enum" else self.kind


class TypeDef(msgspec.Struct, frozen=True):
    name: str
    folders: tuple[str, ...]
    required: dict[str, FieldSpec]
    optional: dict[str, FieldSpec]
    open: bool = False  # fields it does not declare are allowed (no W202): the built-in `memory` type


# Agent memories (`git vivary remember`, the MCP server's `add`) are notes in the memory folder
# (`[memory.remember] folder` in .vivary/memory.toml, default `memories/`), typed `memory` in every
# workspace unless its own config already has a `memory` type or types that folder otherwise.
MEMORY_TYPE = "memory"
MEMORY_EDGE_FIELDS = ("related", "about", "supersedes", "derived_from", "contradicts", "compacts")
DURABILITY = ("working", "durable", "pinned", "ephemeral")
DEFAULT_MEMORY_FOLDER = "memories"
# The private floor's top folders (privacy.FLOOR): a memory written there would never be searchable.
_FLOOR_FOLDERS = ("memory", "heartbeat-reports", ".strato", ".vivary", ".git")


def outside_workspace(path: str) -> str | None:
    """Why a path a config file names from the workspace root can name nothing in the workspace, or None: it is
    absolute (`/`, `/etc`, `C:/x`), or it leaves through a `..` part (`../..`, `a/../../b`). The one
    rule for every path-valued key: a Git tree holds no such path. `\\` counts as `/`, as Windows writes it."""
    text = path.strip().replace("\\", "/")
    if text.startswith("/") or re.match(r"[A-Za-z]:/", text):
        return "is absolute"
    if ".." in text.split("/"):
        return "leaves the workspace through `..`"
    return None


def folder_problem(folder: str) -> str | None:
    """Why `folder` cannot hold memories, or None. Pure: the graph config reads it too."""
    parts = folder.split("/")
    if (not folder or outside_workspace(folder) is not None or "\\" in folder
            or any(p in ("", ".", "..") for p in parts)):
        return "must be a relative folder inside the workspace, such as \"memories\" (no `..`, no leading `/`)"
    if any(c in folder for c in "\n\r\0*?[]") or not folder.isprintable():
        return "must be a plain folder name (no line breaks, control characters or glob characters)"
    if parts[0] in _FLOOR_FOLDERS or parts[0].lower() in _FLOOR_FOLDERS:
        return (f"is inside the private floor ({parts[0]}/), which never reaches any index, so memories written there "
                "could never be found; use a public folder such as \"memories\"")
    return None


def memory_folder(data: bytes | None) -> str:
    """The memory folder a memory.toml names, read leniently (the graph types that folder's notes
    `memory` even when the rest of the file has a problem that only memory commands report)."""
    if data is None:
        return DEFAULT_MEMORY_FOLDER
    try:
        raw = tomllib.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return DEFAULT_MEMORY_FOLDER
    memory = raw.get("memory")
    remember = memory.get("remember") if isinstance(memory, dict) else None
    folder = remember.get("folder") if isinstance(remember, dict) else None
    if not isinstance(folder, str) or folder_problem(folder) is not None:
        return DEFAULT_MEMORY_FOLDER
    return folder


def memory_type(folder: str, ids: str) -> TypeDef:
    """The built-in `memory` type for notes under `folder` (its last segment, as types match folders).
    Edge fields are `ref-list`s with the contract's slug ids; with path ids (a vault) they are lists
    of `[[links]]`, which the vault's dialect reads as edges named by the field."""
    edge = FieldSpec("ref-list") if ids == "slug" else FieldSpec("list")
    optional = {
        "type": FieldSpec("enum", (MEMORY_TYPE,)), "title": FieldSpec("string"), "tags": FieldSpec("string-list"),
        "durability": FieldSpec("enum", DURABILITY), "observed_at": FieldSpec("datetime"),
        "source": FieldSpec("enum", ("agent", "cli", "dream")),
        # Durability and compaction (docs/dream.md): when an ephemeral memory stops mattering, the
        # dream pass that archived a memory into a super node, and what a super node compacts. Source
        # anchors (docs/remember.md) are memories of a file or page, or of a folder.
        "expires": FieldSpec("string"), "archived": FieldSpec("string"),
        "kind": FieldSpec("enum", ("super_node", "source_document", "source_collection")),
        **{f: edge for f in MEMORY_EDGE_FIELDS},
    }
    return TypeDef(MEMORY_TYPE, (folder.rstrip("/").rsplit("/", 1)[-1],), {}, optional, open=True)


def _with_memory_type(config: Config, folder: str) -> Config:
    base = folder.rstrip("/").rsplit("/", 1)[-1]
    if MEMORY_TYPE in config.types or any(base in t.folders for t in config.types.values()):
        return config
    return msgspec.structs.replace(
        config, types={**config.types, MEMORY_TYPE: memory_type(folder, config.links.ids)})


class Config(msgspec.Struct, frozen=True):
    """The resolved rules for one workspace."""

    source: str  # "tropo.toml" or "zero-config"
    exclude: tuple[str, ...] = ()
    derive: tuple[str, ...] = ()
    allow_untyped: bool = True
    strict: bool = True
    base_required: dict[str, FieldSpec] = {}
    base_optional: dict[str, FieldSpec] = {}
    types: dict[str, TypeDef] = {}
    wikilinks: bool = True
    wikilink_field: str = "wikilink"
    links: dialects.Rules = dialects.Rules()  # the vault dialect's link and id rules (docs/vaults.md)
    graph_exclude: tuple[str, ...] = ()  # `.vivary/graph.toml` exclude globs (gitignore-style)
    templates: tuple[str, ...] = ()  # the editor's template folders, left out of the graph
    # Paths with a `.`-named folder or file that are read though the dialect leaves such names out, and folders
    # whose Markdown files are notes outside a Dendron vault's folder (`.vivary/graph.toml` `include`, and the
    # memory folder).
    include: tuple[str, ...] = ()
    # Host guidance files (AGENTS.md, CLAUDE.md, ...: `GUIDANCE`) as notes; left out by default (graph.toml
    # `include_guidance`).
    include_guidance: bool = False
    # Obsidian's Excluded files (`.obsidian/app.json` userIgnoreFilters): notes search leaves out, still nodes and
    # link targets (vivary_git/excluded.py); empty when graph.toml says `search_excluded = true`.
    excluded_files: tuple[str, ...] = ()
    settings_warnings: tuple[str, ...] = ()  # the editor's settings files (or entries) left unused, and why
    # Names a checkout on another system cannot hold (vivary_git/portable.py): two notes that are one file on macOS
    # and Windows (W226), a name Git for Windows refuses (W227); graph.toml `[portable]` turns each off.
    portable_collisions: bool = True
    portable_windows: bool = True

    @property
    def alias(self) -> str:
        return self.links.alias

    @property
    def dialect(self) -> str:
        return self.links.dialect

    @property
    def zero_config(self) -> bool:
        return self.source == "zero-config"

    def folder_types(self) -> dict[str, str]:
        return {folder: t.name for t in self.types.values() for folder in t.folders}

    def field_spec(self, type_name: str | None, field: str) -> FieldSpec | None:
        if type_name is not None and type_name in self.types:
            t = self.types[type_name]
            if field in t.required:
                return t.required[field]
            if field in t.optional:
                return t.optional[field]
        return self.base_required.get(field) or self.base_optional.get(field)

    def digest(self) -> str:
        payload = msgspec.json.encode([FORMAT_VERSION, self])
        return hashlib.sha256(payload).hexdigest()[:16]


class At(NamedTuple):
    """A value's place in a config file: how a message names it (`text`, the file first), and the file and
    TOML key path (`("links", "case")`) that `located` finds its line by."""

    file: str
    key: tuple[str, ...]
    text: str

    def __str__(self) -> str:
        return self.text

    def error(self, message: str) -> ConfigError:
        """`message` (which names the place itself) as the error about this value."""
        return ConfigError(message, file=self.file, key=self.key)

    def inside(self, *key: str, text: str = "") -> At:
        """The place of `key` inside this one (a field of a type's `required` table), named `text`."""
        return At(self.file, (*self.key, *key), text)


def at(file: str, *key: str, text: str | None = None) -> At:
    """The place of `key` in `file`, named "FILE: a.b" unless `text` says otherwise."""
    return At(file, key, text if text is not None else f"{file}: {'.'.join(key)}")


def fail(where: str | At, message: str) -> ConfigError:
    """The error `message` about the value at `where`: located when `where` is an `At`."""
    return where.error(message) if isinstance(where, At) else ConfigError(message)


def parse_spec(raw: object, where: str | At) -> FieldSpec:
    if not isinstance(raw, str):
        raise fail(where, f"{where}: field spec must be a string like \"string\" or \"enum:a|b\", got {raw!r}")
    text = raw.strip()
    if text.startswith("enum:"):
        choices = tuple(c.strip() for c in text[5:].split("|") if c.strip())
        if not choices:
            raise fail(where, f"{where}: `enum:` needs at least one value, e.g. \"enum:draft|done\"")
        return FieldSpec("enum", choices)
    if text not in FIELD_KINDS:
        raise fail(where, f"{where}: unknown field spec {text!r}; use one of {', '.join(FIELD_KINDS)} or enum:a|b")
    return FieldSpec(text)


def _specs(raw: object, where: At) -> dict[str, FieldSpec]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise where.error(f"{where} must be a table of `field = \"spec\"`, got {type(raw).__name__}")
    return {str(k): parse_spec(v, where.inside(str(k), text=f"{where}.{k}")) for k, v in raw.items()}


def _str_list(raw: object, where: At) -> tuple[str, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str):
        return (raw,)
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise where.error(f"{where} must be a list of strings")
    return tuple(raw)


def _paths(raw: object, where: At, shape: str) -> tuple[str, ...]:
    """A list of paths from the workspace root; one that leaves it (`../..`) can name nothing there. A leading
    `/` is the workspace root in these lists (tropo's excludes, gitignore's globs), not the file system's."""
    paths = _str_list(raw, where)
    for path in paths:
        why = outside_workspace(path.strip().lstrip("/"))
        if why is not None:
            raise where.error(f"{where}: {path!r} {why}, so it names nothing in it; write {shape}, or remove it")
    return paths


def _bool(raw: object, where: At, default: bool) -> bool:
    if raw is None:
        return default
    if not isinstance(raw, bool):
        raise where.error(f"{where} must be true or false, got {raw!r}")
    return raw


def load_toml(text: bytes, name: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        raise ConfigError(f"{name}: not valid UTF-8 ({err.reason}); re-save it as UTF-8") from err
    except tomllib.TOMLDecodeError as err:
        at = _TOML_AT.search(str(err))
        line = int(at.group(1)) if at else max(1, len(text.splitlines()))  # else: "(at end of document)"
        conflict = conflict_marker_line(text.decode("utf-8-sig"))
        if conflict is not None:
            raise ConfigError(toml_conflict(name, conflict), file=name, line=conflict) from err
        raise ConfigError(f"{name}: invalid TOML: {err}", file=name, line=line) from err
    except RecursionError:
        raise ConfigError(f"{name}: invalid TOML: arrays or tables are nested too deeply; flatten them",
                          file=name) from None


_TOML_AT = re.compile(r"\(at line (\d+), column \d+\)")
# Git writes a conflict's markers at a line's start; `|||||||` opens the base of a diff3 conflict.
_CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7}|\|{7})(?:[ \r]|$)|^={7}\r?$", re.MULTILINE)


def conflict_marker_line(text: str) -> int | None:
    """The line of the first merge conflict marker in a config file's `text`, None when it holds none: a merge
    stopped on a conflict in it leaves both sides there, which TOML reads as an invalid statement."""
    if "<<<<<<<" not in text and ">>>>>>>" not in text:
        return None
    m = _CONFLICT_MARKER.search(text)
    return None if m is None else text.count("\n", 0, m.start()) + 1


def toml_conflict(name: str, line: int) -> str:
    """The message for a config file a merge left its conflict markers in (`conflict_marker_line`)."""
    return (f"{name}: merge conflict markers left in it (line {line}): resolve the conflict (keep one side, or "
            "combine them, and delete the `<<<<<<<`, `=======` and `>>>>>>>` lines)")


_KEY_PART = re.compile(r'\s*(?:([A-Za-z0-9_-]+)|"((?:[^"\\\n]|\\.)*)"|\'([^\'\n]*)\')\s*')


def _key_path(text: str) -> tuple[tuple[str, ...], int] | None:
    """The dotted key at the start of `text` (`a.b`, `"a b".c`) and where it ends, or None."""
    parts: list[str] = []
    pos = 0
    while True:
        m = _KEY_PART.match(text, pos)
        if m is None or m.end() == pos:
            return None
        raw = m.group(1) if m.group(1) is not None else m.group(2) if m.group(2) is not None else m.group(3)
        parts.append(raw.replace('\\"', '"').replace("\\\\", "\\") if m.group(2) is not None else raw)
        pos = m.end()
        if not text.startswith(".", pos):
            return tuple(parts), pos
        pos += 1


_ONE_LINE_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'')


def _opened(value: str) -> int:
    """Brackets and braces `value` opens less those it closes, outside its strings and comment."""
    bare = _ONE_LINE_STRING.sub("", value).split("#", 1)[0]
    return bare.count("[") + bare.count("{") - bare.count("]") - bare.count("}")


def toml_line(text: str, key: tuple[str, ...]) -> int | None:
    """The 1-based line of a TOML file that sets `key` (`("links", "case")`): a `[table]` header, a
    `key = value` line in its table or the first line setting a key inside it, or, for a key inside an
    inline table or array, the line of the nearest enclosing key. None when no line names it (a value a
    pack or another file brought). Lines inside a multi-line array or string are skipped, not read as keys."""
    best: tuple[int, int] | None = None  # (length of the key path matched, line)
    table: tuple[str, ...] = ()
    depth = 0  # brackets open across lines: an array's items are not keys
    quote = ""  # a multi-line string's delimiter, while inside one
    for number, line in enumerate(text.splitlines(), 1):
        if quote:
            if quote in line:
                quote = ""
            continue
        stripped = line.strip()
        if depth == 0 and stripped.startswith("["):
            inner = stripped[2:] if stripped.startswith("[[") else stripped[1:]
            got = _key_path(inner)
            if got is None:
                continue
            table = found = got[0]
        elif depth == 0:
            got = _key_path(line)
            if got is None or not line[got[1]:].startswith("="):
                continue
            found = (*table, *got[0])
            value = line[got[1] + 1:]
            for delim in ('"""', "'''"):
                if value.count(delim) == 1:
                    quote = delim
            depth += _opened(value)
        else:
            depth += _opened(line)
            continue
        depth = max(depth, 0)
        if found[:len(key)] == key:
            return number  # the key itself, or the first line setting a key inside it (`key.a = 1`)
        if key[:len(found)] == found and (best is None or len(found) > best[0]):
            best = (len(found), number)
    return best[1] if best is not None else None


def located(err: ConfigError, read_file: Callable[[str], bytes | None]) -> ConfigError:
    """`err` with its value's line in the message ("FILE:LINE: ...", after a code like "E120: " if it has
    one), when it names one value of a file `read_file` reads; else `err` itself."""
    if err.file is None or not err.key:
        return err
    message, prefix = str(err), f"{err.file}: "
    at = message.find(prefix, 0, 8 + len(prefix))  # the file is named first, or after the code
    if at == -1 or (at and not message[:at].endswith(": ")):
        return err
    data = read_file(err.file)
    line = toml_line(data.decode("utf-8-sig", "replace"), err.key) if data is not None else None
    if line is None:
        return err
    end = at + len(prefix)
    return ConfigError(f"{message[:at]}{err.file}:{line}: {message[end:]}", detail=err.detail, file=err.file,
                       key=err.key, line=line)


_KNOWN_TOP = {"version", "exclude", "base", "types", "packs", "pack", "overlays", "workspace", "name"}


class Detected(msgspec.Struct, frozen=True):
    """What the tree says about the editor it is written for (see `dialects.detect`)."""

    dialect: str
    reason: str
    templates: tuple[str, ...] = ()
    vaults: tuple[tuple[str, str], ...] = ()  # Dendron's vaults in `dendron.yml`: (name, notes folder)
    folders: tuple[str, ...] = ()  # the folders `dendron.code-workspace` opens (VS Code's workspace folders)
    excluded: tuple[str, ...] = ()  # Obsidian's Excluded files (`.obsidian/app.json` userIgnoreFilters)
    warnings: tuple[str, ...] = ()  # editor settings left unused, and why (dialects/obsidian_settings.py)


_LINK_KEYS: dict[str, tuple[type, tuple[str, ...]]] = {
    "ids": (str, ("path", "slug")), "case": (str, ("insensitive", "sensitive")),
    "markdown": (bool, ()), "properties": (bool, ()), "attachments": (bool, ()), "anchors": (bool, ()),
    "unresolved": (bool, ()), "templates": (bool, ()), "tags": (bool, ()),
}


_GRAPH_KEYS = ("dialect", "exclude", "include", "include_guidance", "links", "portable", "search_excluded",
               "wikilinks")
_WIKILINK_KEYS = ("alias", "enabled", "field")
_PORTABLE_KEYS = ("collisions", "windows")


def _known_keys(table: Mapping[str, Any], known: tuple[str, ...], prefix: str) -> None:
    """A misspelt key (`exlcude`, `wikilinks.enabeld`) is an error, not a setting silently left at its default."""
    for key in table:
        if key not in known:
            raise at(GRAPH_FILE, *prefix.split(".")[:-1], key).error(
                f"{GRAPH_FILE}: unknown key {prefix}{key}; known: {', '.join(known)}")


def _link_rules(graph: Mapping[str, Any], wl: Mapping[str, Any], tropo: bool,
                detected: Detected | None) -> dialects.Rules:
    """The dialect (named in graph.toml, else `tropo.toml`'s own, else detected) and its rules, each
    overridable in graph.toml's [links] table (and `wikilinks.alias`)."""
    named = graph.get("dialect")
    if named is not None:
        if named not in dialects.DIALECTS:
            raise at(GRAPH_FILE, "dialect").error(
                f"{GRAPH_FILE}: dialect must be one of {', '.join(dialects.DIALECTS)}, got {named!r}")
        rules = dialects.defaults(named, f"named in {GRAPH_FILE}")
    elif tropo:
        rules = dialects.defaults("vivary", "tropo.toml workspace: the contract's ids and rules")
    elif detected is not None:
        rules = dialects.defaults(detected.dialect, detected.reason)
    else:
        rules = dialects.defaults("obsidian", "no editor configuration found; Obsidian's rules are the default")
    table = graph.get("links", {})
    if not isinstance(table, Mapping):
        raise at(GRAPH_FILE, "links").error(f"{GRAPH_FILE}: [links] must be a table")
    changes: dict[str, Any] = {}
    for key, value in table.items():
        if key not in _LINK_KEYS:
            raise at(GRAPH_FILE, "links", key).error(
                f"{GRAPH_FILE}: unknown key links.{key}; known: {', '.join(sorted(_LINK_KEYS))}")
        kind, allowed = _LINK_KEYS[key]
        if not isinstance(value, kind) or (allowed and value not in allowed):
            want = " or ".join(f'"{a}"' for a in allowed) if allowed else "true or false"
            raise at(GRAPH_FILE, "links", key).error(f"{GRAPH_FILE}: links.{key} must be {want}, got {value!r}")
        changes[key] = value
    alias = wl.get("alias")
    if alias is not None:
        if alias not in ("auto", "first", "last"):
            raise at(GRAPH_FILE, "wikilinks", "alias").error(
                f"{GRAPH_FILE}: wikilinks.alias must be \"auto\", \"first\" or \"last\", got {alias!r}")
        changes["alias"] = alias
    if rules.dialect == "dendron" and detected is not None and detected.vaults:
        changes["vaults"] = detected.vaults
    if rules.dialect == "dendron" and detected is not None and detected.folders:
        changes["folders"] = detected.folders
    if tropo and not rules.markdown_files:
        changes["markdown_files"] = True  # a tropo.toml workspace's notes are the contract's, `.markdown` too
    if tropo and not rules.nested_notes:
        changes["nested_notes"] = True  # and in any folder
    return msgspec.structs.replace(rules, **changes) if changes else rules


def build_config(tropo: dict[str, Any] | None, graph: dict[str, Any] | None, name: str = CONFIG_FILE,
                 detected: Detected | None = None, memory_folder: str = "memories") -> Config:
    """Validate raw TOML tables into a `Config`. `tropo` None means zero-config mode; `detected` is
    what the tree says about its editor (zero-config dialect detection); `memory_folder` is where
    agent memories live (typed `memory`, see `memory_type`)."""
    graph = graph or {}
    _known_keys(graph, _GRAPH_KEYS, "")
    wl = graph.get("wikilinks", {})
    if not isinstance(wl, Mapping):
        raise at(GRAPH_FILE, "wikilinks").error(f"{GRAPH_FILE}: [wikilinks] must be a table")
    _known_keys(wl, _WIKILINK_KEYS, "wikilinks.")
    field = wl.get("field", "wikilink")
    if not isinstance(field, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", field):
        raise at(GRAPH_FILE, "wikilinks", "field").error(
            f"{GRAPH_FILE}: wikilinks.field must be a simple name like \"wikilink\"")
    rules = _link_rules(graph, wl, tropo is not None, detected)
    portable = graph.get("portable", {})
    if not isinstance(portable, Mapping):
        raise at(GRAPH_FILE, "portable").error(f"{GRAPH_FILE}: [portable] must be a table")
    _known_keys(portable, _PORTABLE_KEYS, "portable.")
    templates = detected.templates if detected is not None and rules.templates else ()
    include = tuple(_include(p) for p in _str_list(graph.get("include"), at(GRAPH_FILE, "include")))
    search_excluded = _bool(graph.get("search_excluded"), at(GRAPH_FILE, "search_excluded"), False)
    common: dict[str, Any] = {
        "wikilinks": _bool(wl.get("enabled"), at(GRAPH_FILE, "wikilinks", "enabled"), True),
        "wikilink_field": field,
        "links": rules,
        "graph_exclude": _paths(graph.get("exclude"), at(GRAPH_FILE, "exclude"),
                                "a glob from the vault root, such as \"Templates/**\""),
        "include_guidance": _bool(graph.get("include_guidance"), at(GRAPH_FILE, "include_guidance"), False),
        "portable_collisions": _bool(portable.get("collisions"), at(GRAPH_FILE, "portable", "collisions"), True),
        "portable_windows": _bool(portable.get("windows"), at(GRAPH_FILE, "portable", "windows"), True),
        "excluded_files": () if search_excluded or detected is None else detected.excluded,
        "settings_warnings": detected.warnings if detected is not None else (),
        "templates": templates,
        # The memory folder is read wherever it is: memories written to `.memories/`, or outside a Dendron vault's
        # folder, must stay notes.
        "include": (*include, memory_folder)
        if not rules.nested_notes or any(p.startswith(".") for p in memory_folder.split("/")) else include,
    }
    if tropo is None:
        return _with_memory_type(Config(source="zero-config", **common), memory_folder)
    version = tropo.get("version", 1)
    if version != 1:
        raise at(name, "version").error(f"{name}: version = {version!r} is not supported; this tool reads version = 1")
    base = tropo.get("base", {})
    if not isinstance(base, Mapping):
        raise at(name, "base").error(f"{name}: [base] must be a table")
    types_raw = tropo.get("types", {})
    if not isinstance(types_raw, Mapping):
        raise at(name, "types").error(f"{name}: [types] must be a table of [types.NAME] tables")
    types: dict[str, TypeDef] = {}
    seen_folders: dict[str, str] = {}
    for tname, traw in types_raw.items():
        where = at(name, "types", tname, text=f"{name}: [types.{tname}]")
        if not isinstance(traw, Mapping):
            raise where.error(f"{where} must be a table")
        folders = _str_list(traw.get("folder", tname), where.inside("folder", text=f"{where} folder")) or (tname,)
        for folder in folders:
            why = outside_workspace(folder)
            if why is not None:
                raise where.inside("folder").error(
                    f"{where}: folder {folder!r} {why}, so no folder has that name; a type's folder is the name of "
                    "folders in the workspace, such as \"decisions\": write that name")
            if folder in seen_folders:
                raise where.inside("folder").error(
                    f"{where}: folder {folder!r} is already the folder of type {seen_folders[folder]!r}; "
                    "give each type its own folder"
                )
            seen_folders[folder] = tname
        required = _specs(traw.get("required"), where.inside("required", text=f"{where} required"))
        optional = _specs(traw.get("optional"), where.inside("optional", text=f"{where} optional"))
        types[tname] = TypeDef(tname, folders, required, {k: v for k, v in optional.items() if k not in required})
    return _with_memory_type(Config(
        source=name,
        exclude=_paths(tropo.get("exclude"), at(name, "exclude"), "a path from the workspace root (a leading `/` "
                       "is that root), such as \"drafts\" or \"archive/2024\""),
        derive=_str_list(base.get("derive"), at(name, "base", "derive")),
        allow_untyped=_bool(base.get("allow_untyped"), at(name, "base", "allow_untyped"), True),
        strict=_bool(base.get("strict"), at(name, "base", "strict"), True),
        base_required=_specs(base.get("required"), at(name, "base", "required", text=f"{name}: [base] required")),
        base_optional=_specs(base.get("optional"), at(name, "base", "optional", text=f"{name}: [base] optional")),
        types=types,
        **common,
    ), memory_folder)


class Excluder:
    """Is a workspace-relative path excluded? Callable on any path; `entry` is the cheaper test for a
    tree walk, where every ancestor folder has already passed.

    Both rules are set lookups, so the cost of a test does not grow with the number of excludes (a
    config is a stranger's input: 200,000 entries once took minutes): a path is excluded when one of
    its segments is a bare name, or when it or one of its ancestors ("a", "a/b", ...) is a prefix.

    With `hidden` (an Obsidian vault: docs/vaults.md#obsidian), a path with a folder or file named
    with a leading `.` is excluded too, unless it is one of `include`, lies inside one, or is a
    folder on the way to one."""

    def __init__(self, names: set[str], prefixes: list[str], hidden: bool = False,
                 include: tuple[str, ...] = ()) -> None:
        self.names = frozenset(names)
        self.prefixes = frozenset(prefixes)
        self.hidden = hidden
        self.include = frozenset(include)
        self.on_the_way = frozenset(p[:at] for p in include for at in range(len(p)) if p[at] == "/")

    def __call__(self, path: str) -> bool:
        segments = path.split("/")
        if not self.names.isdisjoint(segments):
            return True
        if self.hidden and (path.startswith(".") or "/." in path) and self._hidden(path):
            return True
        if not self.prefixes:
            return False
        at = -1
        while True:
            at = path.find("/", at + 1)
            if at < 0:
                return path in self.prefixes
            if path[:at] in self.prefixes:
                return True

    def entry(self, name: str, path: str) -> bool:
        # (Below a `.`-named folder only on the way to an include, each entry is asked again.)
        return name in self.names or path in self.prefixes or (
            self.hidden and (path.startswith(".") or "/." in path) and self._hidden(path))

    def _hidden(self, path: str) -> bool:
        """Whether `path`, which has a `.`-named segment, is left out: not in or on the way to an include."""
        if path in self.include or path in self.on_the_way:
            return False
        at = path.find("/")
        while at >= 0:
            if path[:at] in self.include:
                return False
            at = path.find("/", at + 1)
        return True


def excluder(config: Config) -> Excluder:
    """A predicate over workspace-relative paths. Excludes are not globs (tropo's rule):
    a bare name excludes any path segment with that name; a pattern with a slash is a prefix;
    a trailing `/**` is stripped."""
    names: set[str] = set(BUILTIN_EXCLUDES)
    prefixes: list[str] = []
    for raw in config.exclude:
        pat = raw.strip()
        if pat.endswith("/**"):
            pat = pat[:-3]
        pat = pat.strip("/") if "/" in pat.strip("/") else pat.rstrip("/")
        if not pat:
            continue
        if "/" in pat:
            prefixes.append(pat)
        else:
            names.add(pat)
    hidden = config.zero_config and not config.links.dotfiles
    return Excluder(names, prefixes, hidden, config.include if hidden else ())


def left_out_because(config: Config, path: str) -> str | None:
    """Why the note at workspace-relative `path` is no node of the graph, naming the rule (None: it is one):
    the decision `excluder` and `leaves_out` make for a tree walk, said in words, for a write that must
    not put a note where nothing reads it (a memory moved into a folder `exclude` names)."""
    if excluder(config)(path):
        return _excluded_because(config, path)
    left_out = leaves_out(config)
    if left_out is None or not left_out(path):
        return None
    nfc = dialects.nfc
    name, folder = path.rsplit("/", 1)[-1], nfc(path)
    for f in config.templates:
        if f.strip("/") and folder.startswith(nfc(f.strip("/")) + "/"):
            return f"{f.strip('/')}/ is the editor's template folder, whose notes are templates, not notes"
    if not config.include_guidance and is_guidance(path):
        return (f"{name} is an agent host's guidance file, which is not read as a note unless {GRAPH_FILE} "
                "has `include_guidance = true`")
    editor = config.links.dialect.capitalize()
    if not config.links.markdown_files and path[-9:].lower() == ".markdown":
        return f"this vault is read as {editor} reads it, where a .markdown file is not a note"
    if not config.links.nested_notes and outside_vaults(config)(folder):
        where = dendron.folders_said([f for _, f in config.links.vaults])
        return (f"this vault is read as {editor} reads it, where only the .md files directly in a vault's folder "
                f"({where}), not named with a leading `.`, are notes; `include` in {GRAPH_FILE} names folders "
                "read as notes anyway")
    hit = _matching_glob(config.graph_exclude, folder)
    return f"`exclude` in {GRAPH_FILE} has {hit!r}" if hit else f"`exclude` in {GRAPH_FILE} leaves it out"


def _excluded_because(config: Config, path: str) -> str:
    where = CONFIG_FILE if config.source != "zero-config" else "the workspace's rules"
    for seg in path.split("/"):
        if seg in BUILTIN_EXCLUDES:
            return f"{seg!r} is a name vivary always leaves out, at any depth"
        for raw in config.exclude:
            pat = raw.strip()
            pat = pat[:-3] if pat.endswith("/**") else pat
            if "/" not in pat.strip("/") and pat.rstrip("/") == seg:
                return (f"`exclude` in {where} has {raw!r}, a bare name, which leaves out every file and folder "
                        "of that name at any depth")
    for raw in config.exclude:
        pat = raw.strip()
        pat = (pat[:-3] if pat.endswith("/**") else pat).strip("/")
        if "/" in pat and (path == pat or path.startswith(pat + "/")):
            return f"`exclude` in {where} has {raw!r}"
    return "a file or folder named with a leading `.`, which this vault leaves out unless `include` in " \
           f"{GRAPH_FILE} names it"


def _matching_glob(globs: tuple[str, ...], path: str) -> str | None:
    """The last of `.vivary/graph.toml`'s exclude globs that matches `path` (as Git reads them, the last
    match decides); None when a negation or none decides it."""
    import pathspec

    hit = None
    for g in globs:
        try:
            if not g.startswith("!") and pathspec.GitIgnoreSpec.from_lines([dialects.nfc(g)]).match_file(path):
                hit = g
        except (ValueError, TypeError):
            return None
    return hit


def _include(raw: str) -> str:
    """An `include` entry as a path from the vault root: `.github/**` and `/.github/` are `.github`."""
    pat = raw.strip()
    if pat.endswith("/**"):
        pat = pat[:-3]
    pat = pat.strip("/")
    if (not pat or outside_workspace(pat) is not None or any(p in ("", ".") for p in pat.split("/"))
            or any(c in pat for c in "*?[\\")):
        raise ConfigError(f"{GRAPH_FILE}: include: {raw!r} is not a path from the vault root; name a folder or file "
                          "like \".github\" or \"docs/.drafts\" (no globs, no `..`)")
    return pat


# Files agent hosts read their instructions from (docs/hosts.md): written for a host, not as knowledge, so not
# notes unless `.vivary/graph.toml` says `include_guidance = true`. By file name in any folder, and by path.
GUIDANCE_NAMES = frozenset({"AGENTS.md", "AGENTS.override.md", "AGENT.md", "CLAUDE.md", "CLAUDE.local.md",
                            "GEMINI.md"})
GUIDANCE_PATHS = (".cursor/rules/", ".github/copilot-instructions.md", ".github/instructions/", ".kiro/steering/",
                  ".roo/rules/", ".continue/rules/")


_GUIDANCE_BELOW = tuple(f"/{p}" for p in GUIDANCE_PATHS)
_GUIDANCE_DIRS = tuple(dict.fromkeys(f"/{p.split('/', 1)[0]}/" for p in GUIDANCE_PATHS))  # `/.cursor/`, `/.github/`, …


def is_guidance(path: str) -> bool:
    """Whether a workspace-relative path is a host guidance file (`GUIDANCE_NAMES`, `GUIDANCE_PATHS`)."""
    return path.rsplit("/", 1)[-1] in GUIDANCE_NAMES or path.startswith(GUIDANCE_PATHS) or (
        any(d in path for d in _GUIDANCE_DIRS) and any(p in path for p in _GUIDANCE_BELOW))


def leaves_out(config: Config) -> Callable[[str], bool] | None:
    """Notes left out of the graph though they stay files a link may name: the editor's template folders
    (zero-config), `.vivary/graph.toml`'s `exclude` globs (gitignore-style, e.g. `Templates/**`,
    `drafts/*.md`), host guidance files (`is_guidance`) unless it has `include_guidance = true`, `.markdown`
    files where the dialect reads only `.md` (Obsidian, Dendron), and in Dendron every Markdown file not directly
    in a vault's folder (`outside_vaults`). None when there are none.
    Folders, globs and paths are compared in NFC, as names are (docs/vaults.md): a folder macOS wrote decomposed
    (`e` and a combining grave) is the `Modèles` a configuration names composed, and the reverse."""
    guidance = not config.include_guidance
    markdown = not config.links.markdown_files  # Obsidian: a `.markdown` file is a file, not a note
    outside = None if config.links.nested_notes else outside_vaults(config)
    nfc = dialects.nfc
    folders = tuple(nfc(f.strip("/")) + "/" for f in config.templates if f.strip("/"))
    spec = None
    if config.graph_exclude:
        import pathspec

        try:
            spec = pathspec.GitIgnoreSpec.from_lines([nfc(g) for g in config.graph_exclude])
        except (ValueError, TypeError) as err:
            raise ConfigError(f"{GRAPH_FILE}: exclude: {err}") from None
    if not folders and spec is None and not guidance and not markdown and outside is None:
        return None

    def left_out(path: str) -> bool:
        path = nfc(path)
        return (path.startswith(folders) or (guidance and is_guidance(path))
                or (markdown and path[-9:].lower() == ".markdown") or (outside is not None and outside(path))
                or (spec is not None and spec.match_file(path)))

    return left_out


def outside_vaults(config: Config) -> Callable[[str], bool]:
    """Dendron (`nested_notes` false) reads as notes the `*.md` files directly in each vault's folder
    (`dendron.yml`'s vaults, else the workspace folder), none named with a leading `.`: whether the Markdown file
    at `path` (NFC) is not one of those, nor in a folder `include` names (the memory folder is one)."""
    nfc = dialects.nfc
    folders = frozenset(f for _, f in config.links.vaults) or frozenset(("",))
    named = frozenset(nfc(p.strip("/")) for p in config.include if p.strip("/"))
    included = tuple(p + "/" for p in named)

    def outside(path: str) -> bool:
        folder, _, name = path.rpartition("/")
        if folder in folders and name.endswith(".md") and not name.startswith("."):
            return False
        return path not in named and not path.startswith(included)

    return outside
