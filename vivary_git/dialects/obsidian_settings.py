"""The settings in a vault's `.obsidian/` that change what its owner sees (docs/vaults.md#obsidian-settings).

`.obsidian/` is committed with the vault, so it is a stranger's input like any note: each file is read only
up to `MAX_BYTES`, and one that is too large, not JSON, or not the shape Obsidian writes is left unused with
a warning that names it (`Settings.warnings`), never an error: Obsidian itself opens such a vault with its
defaults. Read here:

- `templates.json` `folder` (the core Templates plugin) and Templater's `templates_folder`: folders left out;
- `app.json` `userIgnoreFilters` ("Excluded files"): notes search leaves out (`vivary_git/excluded.py`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import msgspec

__all__ = ["MAX_BYTES", "MAX_FILTERS", "Settings", "is_regex", "read_settings", "regex_of"]

MAX_BYTES = 1 << 20  # Obsidian's own settings files are a few KiB; a plugin's data.json rarely reaches 100 KiB
MAX_FILTERS = 1000  # Excluded files entries read; more are left out with a warning
MAX_PATTERN = 1000  # characters in one entry

_TEMPLATES = ((".obsidian/templates.json", "folder"),
              (".obsidian/plugins/templater-obsidian/data.json", "templates_folder"))
APP = ".obsidian/app.json"


class Settings(msgspec.Struct, frozen=True):
    templates: tuple[str, ...] = ()  # the template folders the settings name
    excluded: tuple[str, ...] = ()  # app.json userIgnoreFilters, the entries that can be used, as written
    warnings: tuple[str, ...] = ()  # a settings file left unused, or an entry of one, and why


def read_settings(read: Callable[[str], bytes | None]) -> Settings:
    """The settings of the vault whose files `read` returns (None: no such file)."""
    warnings: list[str] = []
    templates: list[str] = []
    for path, key in _TEMPLATES:
        value = _json(read, path, warnings)
        folder = value.get(key) if isinstance(value, dict) else None
        if isinstance(folder, str) and folder.strip("/ "):
            templates.append(folder.strip("/ "))
    app = _json(read, APP, warnings)
    excluded: list[str] = []
    raw = app.get("userIgnoreFilters") if isinstance(app, dict) else None
    if raw is not None and not isinstance(raw, list):
        warnings.append(f"{APP}: userIgnoreFilters is not a list of paths; no file is excluded from search")
        raw = None
    for entry in (raw or [])[:MAX_FILTERS]:
        problem = _entry_problem(entry)
        if problem:
            warnings.append(f"{APP}: userIgnoreFilters entry {_shown(entry)} {problem}; it excludes nothing")
        else:
            assert isinstance(entry, str)
            excluded.append(entry)
    if raw is not None and len(raw) > MAX_FILTERS:
        warnings.append(f"{APP}: userIgnoreFilters has {len(raw):,} entries; the first {MAX_FILTERS:,} are used")
    return Settings(tuple(templates), tuple(excluded), tuple(warnings))


def _json(read: Callable[[str], bytes | None], path: str, warnings: list[str]) -> Any:
    data = read(path)
    if data is None:
        return None
    if len(data) > MAX_BYTES:
        warnings.append(f"{path}: {len(data):,} bytes, more than the {MAX_BYTES:,} read of a settings file; "
                        "its settings are not used")
        return None
    try:
        value = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        warnings.append(f"{path}: not UTF-8 text; its settings are not used")
        return None
    except json.JSONDecodeError as err:
        warnings.append(f"{path}:{err.lineno}: not valid JSON ({err.msg} at column {err.colno}); its settings are "
                        "not used: fix the file, or let Obsidian write it again")
        return None
    except RecursionError:
        warnings.append(f"{path}: JSON nested too deep to read; its settings are not used")
        return None
    if not isinstance(value, dict):
        warnings.append(f"{path}: not a JSON object, as Obsidian writes it; its settings are not used")
        return None
    return value


def _shown(entry: object) -> str:
    text = entry if isinstance(entry, str) else json.dumps(entry)[:80]
    return repr(text[:80] + ("…" if len(text) > 80 else ""))


def regex_of(entry: str) -> re.Pattern[str]:
    """The pattern an Excluded files entry is, as Obsidian compiles it: written `/…/` (two characters or more), the
    regular expression between the slashes; otherwise the path must start with it. Both ignore case (JavaScript's
    `i` flag), and both are searched in the path (`RegExp.test`). Only an entry `_entry_problem` accepted is asked
    about."""
    if is_regex(entry):
        return re.compile(entry[1:-1], re.IGNORECASE)
    return re.compile("^" + re.escape(entry), re.IGNORECASE)


def is_regex(entry: str) -> bool:
    return len(entry) > 1 and entry.startswith("/") and entry.endswith("/")


def _entry_problem(entry: object) -> str:
    """Why an Excluded files entry cannot be used ("" when it can)."""
    if not isinstance(entry, str):
        return "is not a string"
    if not entry:
        return "is empty"
    if len(entry) > MAX_PATTERN:
        return f"is longer than {MAX_PATTERN:,} characters"
    if not is_regex(entry):
        return ""
    try:
        regex = regex_of(entry)
    except re.error as err:
        return f"is not a regular expression Python reads ({err})"
    why = _backtracks(regex)
    if why:
        # A stranger's pattern is matched against every path: `/(a+)+$/` takes exponential time in the path's
        # length, `/.*.*.*x/` its fourth power (seconds on a path of a few hundred characters).
        return f"{why}, so it could take very long to match"
    return ""


_OPEN = 100  # a repeat that may match more than this many times is open-ended (`*`, `+`, `{2,}`, `{1,1000}`)


def _backtracks(regex: re.Pattern[str]) -> str:
    """Why matching `regex` may backtrack for long ("" when it may not): a repeat of something that itself
    repeats or alternates, more than one open-ended repeat, or a back reference."""
    from re import _parser  # type: ignore[attr-defined]

    open_ended = 0

    def walk(items: Any, inside: bool) -> str:
        nonlocal open_ended
        for op, av in items:
            name = str(op)
            why = ""
            if name in ("GROUPREF", "GROUPREF_EXISTS"):
                why = "has a back reference"
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                _lo, hi, sub = av
                open_ended += hi > _OPEN
                if hi > 1 and inside:
                    why = "repeats a repeat"
                elif open_ended > 1:
                    why = "has more than one open-ended repeat (`*`, `+`, `{n,}`)"
                else:
                    why = walk(sub, inside or hi > 1)
            elif name == "BRANCH":
                why = "repeats an alternative" if inside else next(
                    (w for w in (walk(b, inside) for b in av[1]) if w), "")
            elif name == "SUBPATTERN":
                why = walk(av[-1], inside)
            elif name in ("ASSERT", "ASSERT_NOT"):
                why = walk(av[1], inside)
            if why:
                return why
        return ""

    return walk(_parser.parse(regex.pattern, regex.flags), False)
