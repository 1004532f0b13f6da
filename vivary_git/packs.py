"""Packs and nested overlays layered onto `tropo.toml`, under the "tighten-only" law.

A workspace's rules are built in layers: start empty, merge each pack named by `packs = [...]` in
order, then the root `tropo.toml` itself; for files below a directory holding its own `tropo.toml`
(a nested overlay), merge that overlay (and the packs it names) on top, outermost first. Each layer
may only *tighten* what it inherits: add a type or a field, move a field from optional to required,
narrow an enum to a subset, add excludes / derived fields / folders. Anything that loosens a rule is
`E120`, a `ConfigError` (exit 2) naming the layer, the field, the old and the new rule and the fix.

Every function here works on raw TOML-shaped dicts and returns one in the shape `build_config`
accepts: `version`, `exclude`, `[base]` (`derive`, `required`, `optional`, `allow_untyped`,
`strict`, `timezone`) and `[types.NAME]` (`folder` as a list, `required`, `optional`). `allow_untyped`
and `strict` appear only when some layer set them, because "strict = true set explicitly" and
"strict left at its default" merge differently (only the explicit one may not be turned off).

Pack lookup, per name: `.tropo/packs/NAME.toml` in the same Git tree as the config, then a pack
bundled with this package (`packs_data/NAME.toml`), else a `ConfigError` saying where it looked.

Deliberate differences from vivary-tropo 0.5.4 (the published tool):
- A pack or overlay table for a type that already exists, written *without* `folder`, adds no
  folder. tropo silently adds a folder named after the type (a root `folder = "adr"` plus a pack's
  `[types.decision]` then types every `decision/` folder too). A *new* type without `folder` still
  gets its name as its folder, as in tropo.
- Moving a field from optional to required must not also loosen its spec (optional `ref` cannot
  become required `string`); tropo checks the spec only when the field was already required.
- Specs are compared by meaning: `enum:a|b` equals `enum: b | a`; tropo compares the strings.
- Packs named in a nested overlay are honoured (tropo ignores them silently). They are looked up
  at the workspace root like the root's packs, and their excludes are rebased like the overlay's.
- A pack that itself lists `packs` is a `ConfigError` (tropo ignores the key silently).
- A nested `.vivary/workspace.toml` and every overlay error are `ConfigError`s, not tracebacks.
- Overlay excludes: entries with a `/` are rebased onto the overlay's directory (as in tropo);
  bare names are kept apart under `exclude_under = {dir: [names]}`, because `exclude` holds
  workspace-relative patterns and a bare name from `sub/tropo.toml` must not exclude anything
  outside `sub/`. `excluder_for(raw)` applies both.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from vivary_git.config import CONFIG_FILE, At, Config, at, excluder, fail, load_toml, parse_spec
from vivary_git.errors import ConfigError

ReadFile = Callable[[str], bytes | None]

PACK_DIR = ".tropo/packs"
BUNDLED_PACKS = ("coordination", "dev-project", "repo-graph")
THIN_FILE = ".vivary/workspace.toml"
EXCLUDE_UNDER = "exclude_under"  # {overlay dir: [bare names]}, see the module docstring

# A pack name becomes a path (`.tropo/packs/NAME.toml`): no separators, no leading dot, so a name
# can never reach outside `.tropo/packs` (in a plain folder, `read_file` reads the disk).
_PACK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_TIGHTEN = "an overlay may only tighten rules"
_LAYER_KEYS = ("version", "packs", "exclude", "base", "types", EXCLUDE_UNDER)


# ---------------------------------------------------------------------------------------------
# Packs


def merge_packs(base: dict[str, Any], read_file: ReadFile, *, source: str = CONFIG_FILE) -> dict[str, Any]:
    """The root config with its packs resolved: empty → pack1 → pack2 → … → `base` itself.

    `base` is the raw root config (`source` names it in messages); `read_file(path)` returns a
    workspace-relative file from the same tree, or None. Keys this module does not merge (e.g. a
    thin workspace's `[workspace]`) are kept from `base` unchanged. The result has no `packs` key,
    so merging it again is a no-op.
    """
    out = _empty()
    for name in _pack_names(base, source):
        where, pack = _load_pack(name, read_file, listed_in=source)
        out = merge(out, pack, source=where)
    out = merge(out, base, source=source)
    for key, value in base.items():
        if key not in _LAYER_KEYS:
            out[key] = copy.deepcopy(value)
    if "version" in base:
        out["version"] = base["version"]  # build_config checks it and names the root file
    return out


def _pack_names(raw: Mapping[str, Any], source: str) -> list[str]:
    names = raw.get("packs")
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise at(source, "packs").error(f"{source}: packs must be a list of pack names, e.g. packs = [\"dev-project\"]")
    return names


def _load_pack(name: str, read_file: ReadFile, *, listed_in: str) -> tuple[str, dict[str, Any]]:
    """(label for messages, raw pack table). The workspace's own pack wins over a bundled one."""
    if not _PACK_NAME.fullmatch(name):
        raise ConfigError(
            f"{listed_in}: packs entry {name!r} is not a pack name; use a bare name such as \"dev-project\", "
            f"which reads {PACK_DIR}/dev-project.toml or the bundled pack of that name"
        )
    path = f"{PACK_DIR}/{name}.toml"
    data = read_file(path)
    if data is not None:
        where, raw = path, load_toml(data, path)
    elif name in BUNDLED_PACKS:
        where = f"bundled pack {name!r}"
        try:
            data = resources.files("vivary_git").joinpath("packs_data").joinpath(f"{name}.toml").read_bytes()
        except OSError as err:
            raise ConfigError(
                f"{where} is missing from this installation of vivary-git ({err.strerror or err}); "
                f"reinstall vivary-git, or commit your own copy as {path}"
            ) from None
        raw = load_toml(data, where)
    else:
        raise ConfigError(
            f"{listed_in}: pack {name!r} not found: looked for {path} in the tree being read, then the "
            f"bundled packs ({', '.join(BUNDLED_PACKS)}); add {path} (commit it to check a revision) "
            f"or remove {name!r} from packs"
        )
    if "packs" in raw:
        raise ConfigError(
            f"{where}: a pack cannot list other packs (packs = {raw['packs']!r}); "
            f"list them in {listed_in} before {name!r} instead"
        )
    version = raw.get("version", 1)
    if version != 1 or isinstance(version, bool):
        raise ConfigError(f"{where}: version = {version!r} is not supported; this tool reads version = 1")
    return where, raw


# ---------------------------------------------------------------------------------------------
# The tighten-only merge


def merge(current: dict[str, Any], add: dict[str, Any], *, source: str) -> dict[str, Any]:
    """`add` layered onto `current`, refusing any loosening with `E120`. Returns a new dict.

    `source` names `add` in messages (`.tropo/packs/x.toml`, `sub/tropo.toml`). `current` is taken
    as already valid (normally the output of an earlier merge); `add` is validated here so a bad
    pack or overlay is reported under its own name. `version` and `packs` in `add` are not merged:
    the callers resolve them.
    """
    out = _normalize(current)
    base_add = _table(add.get("base"), at(source, "base", text=f"{source}: [base]"))
    base = out["base"]
    _union(base["derive"], _strings(base_add.get("derive"), at(source, "base", "derive")))
    _merge_fields(base, base_add, source=source, label="base", where=at(source, "base", text=f"{source}: [base]"))
    if "allow_untyped" in base_add:
        value = _bool(base_add["allow_untyped"], at(source, "base", "allow_untyped"))
        # Untyped notes being allowed again would hide W201 for files an earlier layer governs.
        if base.get("allow_untyped") is False and value:
            raise at(source, "base", "allow_untyped").error(
                f"E120: {source}: base.allow_untyped: true loosens an inherited false; {_TIGHTEN}: "
                "remove allow_untyped here or set it to false"
            )
        base["allow_untyped"] = value
    if "strict" in base_add:
        value = _bool(base_add["strict"], at(source, "base", "strict"))
        # Only an explicit earlier `strict = true` binds: the default is not a rule anyone wrote.
        if base.get("strict") is True and not value:
            raise at(source, "base", "strict").error(
                f"E120: {source}: base.strict: false loosens an inherited true; {_TIGHTEN}: "
                "remove strict here (run with --lenient to see warnings as warnings)"
            )
        base["strict"] = value
    if "timezone" in base_add:
        base["timezone"] = base_add["timezone"]  # stored, unused (as in tropo): last layer wins
    _union(out["exclude"], _strings(add.get("exclude"), at(source, "exclude")))
    types_add = _table(add.get("types"), at(source, "types", text=f"{source}: [types]"))
    for tname, traw_any in types_add.items():
        where = at(source, "types", tname, text=f"{source}: [types.{tname}]")
        traw = _table(traw_any, where)
        folders = _strings(traw.get("folder"), where.inside("folder", text=f"{where} folder"))
        tdef: dict[str, Any] | None = out["types"].get(tname)
        if tdef is None:
            tdef = {"folder": [], "required": {}, "optional": {}}
            out["types"][tname] = tdef
            _union(tdef["folder"], folders or [tname])
        else:
            # No `folder` on a known type means "same folders", not "also a folder named like it".
            _union(tdef["folder"], folders)
        _merge_fields(tdef, traw, source=source, label=f"type {tname!r}", where=where)
    return out


def _merge_fields(
    target: dict[str, Any], add: Mapping[str, Any], *, source: str, label: str, where: At
) -> None:
    required = _specs(add.get("required"), where.inside("required", text=f"{where} required"))
    optional = _specs(add.get("optional"), where.inside("optional", text=f"{where} optional"))
    for field, spec in required.items():
        old = target["optional"].pop(field, None)  # optional → required is a tightening...
        if old is None:
            old = target["required"].get(field)
        if old is not None and not _tightens(old, spec, where):  # ...unless the spec loosens too
            raise where.inside("required", field).error(
                f"E120: {source}: {label} field {field!r}: {spec!r} loosens {old!r}; {_TIGHTEN}: "
                f"keep {old!r}" + (" or a subset of its values" if old.startswith("enum:") else "")
            )
        target["required"][field] = spec
    for field, spec in optional.items():
        if field in required:
            continue  # listed both ways in one file: required wins, as build_config reads one file
        if field in target["required"]:
            old = target["required"][field]
            raise where.inside("optional", field).error(
                f"E120: {source}: {label} field {field!r}: optional {spec!r} loosens required {old!r} "
                f"(required->optional); {_TIGHTEN}: remove {field!r} from this optional table "
                "(it stays required) or list it under required"
            )
        old = target["optional"].get(field)
        if old is not None and not _tightens(old, spec, where):
            raise where.inside("optional", field).error(
                f"E120: {source}: {label} field {field!r}: {spec!r} loosens {old!r}; {_TIGHTEN}: "
                f"keep {old!r}" + (" or a subset of its values" if old.startswith("enum:") else "")
            )
        target["optional"][field] = spec


def _tightens(old: str, new: str, where: At) -> bool:
    """True when every value `new` accepts, `old` accepted too, judged the way tropo does: the same
    spec, or an enum whose values are a subset. Any other change (string→enum included) is refused,
    so a layer can never change what a field *means*, only how much of it is allowed."""
    a, b = parse_spec(old, where), parse_spec(new, where)
    if a.kind == "enum" and b.kind == "enum":
        return set(b.choices) <= set(a.choices)
    return a == b


def _specs(raw: object, where: At) -> dict[str, str]:
    """Validated `field = "spec"` pairs, kept as (stripped) strings: the result stays raw TOML."""
    table = _table(raw, where)
    out: dict[str, str] = {}
    for field, spec in table.items():
        parse_spec(spec, where.inside(str(field), text=f"{where}.{field}"))  # names file and field
        out[str(field)] = spec.strip()
    return out


def _empty() -> dict[str, Any]:
    return {"exclude": [], "base": {"derive": [], "required": {}, "optional": {}}, "types": {}}


def _normalize(current: Mapping[str, Any]) -> dict[str, Any]:
    """A deep copy of `current` in the merged shape (lists for folders, every table present)."""
    out = copy.deepcopy(dict(current))
    out.pop("packs", None)
    out["exclude"] = _strings(out.get("exclude"), "exclude")
    base = out["base"] = dict(_table(out.get("base"), "[base]"))
    base["derive"] = _strings(base.get("derive"), "base.derive")
    base["required"] = dict(_table(base.get("required"), "[base] required"))
    base["optional"] = {
        k: v for k, v in _table(base.get("optional"), "[base] optional").items() if k not in base["required"]
    }
    types: dict[str, Any] = {}
    for tname, traw_any in _table(out.get("types"), "[types]").items():
        traw = _table(traw_any, f"[types.{tname}]")
        required = dict(_table(traw.get("required"), f"[types.{tname}] required"))
        types[tname] = {
            "folder": _strings(traw.get("folder", tname), f"[types.{tname}] folder") or [tname],
            "required": required,
            "optional": {
                k: v for k, v in _table(traw.get("optional"), f"[types.{tname}] optional").items()
                if k not in required
            },
        }
    out["types"] = types
    return out


def _table(raw: object, where: str | At) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise fail(where, f"{where} must be a table, got {type(raw).__name__} {raw!r}")
    return dict(raw)


def _strings(raw: object, where: str | At) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw]
    if not isinstance(raw, list) or not all(isinstance(x, str) for x in raw):
        raise fail(where, f"{where} must be a string or a list of strings, got {raw!r}")
    return list(raw)


def _bool(raw: object, where: At) -> bool:
    if not isinstance(raw, bool):
        raise where.error(f"{where} must be true or false, got {raw!r}")
    return raw


def _union(into: list[str], more: list[str]) -> None:
    """Append what is new, keeping first-seen order (stable output, stable config digest). Linear: an
    `exclude` list may hold hundreds of thousands of entries."""
    seen = set(into)
    for item in more:
        if item not in seen:
            seen.add(item)
            into.append(item)


# ---------------------------------------------------------------------------------------------
# Nested overlays


def overlay_configs(
    root_raw: dict[str, Any], overlay_paths: list[str], read_file: ReadFile
) -> dict[str, dict[str, Any]]:
    """The merged rules for each directory holding a nested `tropo.toml`.

    `overlay_paths` are workspace-relative paths of nested `tropo.toml` (or `.vivary/workspace.toml`)
    files, or their directories; order and duplicates do not matter. `root_raw` is the root config,
    raw or already through `merge_packs` (its packs are resolved either way). The result maps
    `"sub"`, `"sub/deep"`, … to the rules for files in that directory and below that have no nearer
    overlay: root → each overlay on the way down, each with its own packs first. A file's rules are
    those of its nearest overlay directory, else the root config.

    Overlays inside a folder excluded by the rules above them are skipped: they govern no note.
    Raises `ConfigError` for a nested `.vivary/workspace.toml` and for any overlay or pack error.
    """
    root = merge_packs(root_raw, read_file)
    dirs = {d for d in (_overlay_dir(p) for p in overlay_paths) if d}
    result: dict[str, dict[str, Any]] = {}
    excluders: dict[int, Callable[[str], bool]] = {}  # one per parent config: building one is linear
    for d in sorted(dirs, key=lambda d: (d.count("/"), d)):  # parents before children
        parent = _nearest(result, d) or root
        excluded = excluders.get(id(parent))
        if excluded is None:
            excluded = excluders[id(parent)] = excluder_for(parent)
        if excluded(d):
            continue
        thin = f"{d}/{THIN_FILE}"
        if read_file(thin) is not None:
            raise ConfigError(
                f"{thin}: a nested Vivary workspace inside the workspace at the root is not supported "
                f"(two sets of rules would compete for {d}/); move its rules to {d}/{CONFIG_FILE} as an "
                f"overlay, or add \"{d}\" to exclude in the root {CONFIG_FILE} and check {d} on its own "
                f"with --root {d}"
            )
        src = f"{d}/{CONFIG_FILE}"
        data = read_file(src)
        if data is None:
            continue
        raw = load_toml(data, src)
        version = raw.get("version", 1)
        if version != 1 or isinstance(version, bool):
            raise ConfigError(f"{src}: version = {version!r} is not supported; this tool reads version = 1")
        eff = parent
        for name in _pack_names(raw, src):
            where, pack = _load_pack(name, read_file, listed_in=src)
            eff = _merge_overlay(eff, pack, d, source=f"{where} (listed in {src})")
        result[d] = _merge_overlay(eff, raw, d, source=src)
    return result


def _merge_overlay(current: dict[str, Any], add: dict[str, Any], d: str, *, source: str) -> dict[str, Any]:
    """`merge`, with `add`'s excludes made relative to the workspace: `a/b` → `d/a/b`; bare names go
    to `exclude_under[d]` so they only ever match below `d`."""
    rebased: list[str] = []
    bare: list[str] = []
    for pat in _strings(add.get("exclude"), at(source, "exclude")):
        if "/" in pat:
            rel = pat.strip()
            while rel.startswith("./"):
                rel = rel[2:]
            rebased.append(f"{d}/{rel.lstrip('/')}")
        elif pat.strip():
            bare.append(pat.strip())
    out = merge(current, {**add, "exclude": rebased}, source=source)
    if bare:
        under = out.setdefault(EXCLUDE_UNDER, {})
        _union(under.setdefault(d, []), bare)
    return out


def _overlay_dir(path: str) -> str:
    p = path.strip().replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    p = p.strip("/")
    for name in (THIN_FILE, CONFIG_FILE):
        if p == name:
            return ""
        if p.endswith("/" + name):
            return p[: -len(name) - 1]
    return p


def _nearest(found: Mapping[str, dict[str, Any]], d: str) -> dict[str, Any] | None:
    parts = d.split("/")
    for n in range(len(parts) - 1, 0, -1):
        hit = found.get("/".join(parts[:n]))
        if hit is not None:
            return hit
    return None


def excluder_for(raw: Mapping[str, Any]) -> Callable[[str], bool]:
    """The exclude predicate of a merged raw config, over workspace-relative paths: the root rule
    (`config.excluder`, built-in names included) plus each overlay's bare names below its folder."""
    plain = excluder(Config(source=CONFIG_FILE, exclude=tuple(_strings(raw.get("exclude"), "exclude"))))
    scoped = [(d, frozenset(names)) for d, names in _table(raw.get(EXCLUDE_UNDER), EXCLUDE_UNDER).items()]

    def excluded(path: str) -> bool:
        if plain(path):
            return True
        for d, names in scoped:
            if path.startswith(d + "/") and any(seg in names for seg in path[len(d) + 1 :].split("/")):
                return True
        return False

    return excluded
