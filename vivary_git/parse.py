"""Bytes of one blob → `Note`. Pure: the same blob id always gives the same `Note`.

We split frontmatter ourselves (rather than through python-frontmatter) because every finding
needs the exact 1-based line of its key, and YAML is read with PyYAML's C parser through a
loader that keeps dates as the strings the user wrote: a date like `2026-13-45` must be a
finding about that field, not a crash of the whole parse.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vivary_git.models import Link, Note, ParseProblem

if TYPE_CHECKING:
    import yaml

MAX_BYTES = 8 * 1024 * 1024
_BINARY_SNIFF = 8000
# A YAML alias (`*name`) repeats what its anchor holds without repeating its text: nine lines of
# anchors and aliases expand to 9^9 values (the "billion laughs"). One frontmatter may expand to at
# most MAX_VALUES values (every scalar, list and mapping below the top-level keys counts one) and to at
# most MAX_EXTRA_CHARS characters of text beyond its own length; past either it is E001. Without
# aliases neither can be reached by a note under MAX_BYTES that is not a wall of values.
MAX_VALUES = 10_000
MAX_EXTRA_CHARS = 1 << 20
MAX_DEPTH = 32  # nesting kept; deeper values read as null

# How plain scalars resolve: YAML 1.2-style, as Vivary workspaces are written and read. Only
# true/false are booleans (`yes`, `on` stay text), integers are decimal (`010` is 10, `1:30` and
# `0x10` stay text), `.inf`/`.nan` stay text, and dates stay the strings the user wrote, so
# `2026-13-45` is a finding about one field rather than a crash of the whole parse. The fast path
# below applies these rules itself, so most notes are read without importing PyYAML at all (a
# pre-commit hook then starts ~20 ms sooner); the loader gives PyYAML the same rules.
_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_INT = re.compile(r"^[-+]?[0-9](?:_?[0-9])*$")
_FLOAT = re.compile(
    r"^[-+]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][-+]?[0-9]+)?$"
)
_NULL = frozenset(("", "~", "null", "Null", "NULL"))  # PyYAML's null resolver, kept
_YAML_ONLY = frozenset(("<<", "="))  # PyYAML's merge and value resolvers, kept: left to PyYAML


def plain_kind(text: str) -> str:
    """What a plain scalar resolves to under our loader: "null", "bool", "int", "float", "str", or
    "yaml" (a merge/value key, for PyYAML to handle). The first matching resolver wins, as in PyYAML."""
    if text in _NULL:
        return "null"
    if text in _YAML_ONLY:
        return "yaml"
    if _BOOL.match(text):
        return "bool"
    if _INT.match(text):
        return "int"
    if _FLOAT.match(text):
        return "float"
    return "str"


@functools.cache
def loader_class() -> type[yaml.SafeLoader]:
    """PyYAML's SafeLoader (the C one when libyaml is there, ~7x faster) with the rules above."""
    import yaml

    base: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
            return int(self.construct_scalar(node))

        def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
            return float(self.construct_scalar(node))

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    replaced = {
        "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp",
    }
    Loader.yaml_implicit_resolvers = {
        first: [(tag, rx) for tag, rx in resolvers if tag not in replaced]
        for first, resolvers in base.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver("tag:yaml.org,2002:bool", _BOOL, list("tTfF"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:int", _INT, list("-+0123456789"))
    Loader.add_implicit_resolver("tag:yaml.org,2002:float", _FLOAT, list("-+0123456789."))
    return Loader


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_H1 = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")
_H1_ANYWHERE = re.compile(r"^ {0,3}#[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*\r*$", re.MULTILINE)  # _H1 on each line
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
_INLINE_CODE = re.compile(r"(`+)(?:(?!\1).)+?\1")


def parse_blob(data: bytes) -> Note:
    """Parse one Markdown file's bytes. Never raises for bad input: problems become E000/E001."""
    if len(data) > MAX_BYTES:
        return _unreadable(
            1, f"file is {len(data):,} bytes, over the {MAX_BYTES // (1024 * 1024)} MiB limit for a note; "
            "split it, or add it to `exclude` in tropo.toml"
        )
    if b"\x00" in data[:_BINARY_SNIFF]:
        return _unreadable(1, "file looks binary (it contains NUL bytes); exclude it or give it another extension")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return _unreadable(
            line, f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}); re-save the file as UTF-8"
        )
    lines = text.split("\n")
    fields: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    problem: ParseProblem | None = None
    has_frontmatter = False
    body_start = 0  # index into `lines`
    if lines and lines[0].rstrip("\r").rstrip() == "---":
        has_frontmatter = True
        close = next(
            (i for i in range(1, len(lines)) if lines[i].rstrip("\r").rstrip() in ("---", "...")), None
        )
        if close is None:
            problem = ParseProblem(
                "E001", 1, "frontmatter opened with `---` on line 1 is never closed; add a `---` line after it"
            )
            body_start = len(lines)
        else:
            body_start = close + 1
            fields, key_lines, problem = _frontmatter("\n".join(lines[1:close]), first_line=2)
    body = "\n".join(lines[body_start:]) if body_start else text
    title, links = _scan_body(body, first_line=body_start + 1)
    return Note(
        fields=fields,
        key_lines=key_lines,
        title=title,
        body=body,
        links=tuple(links),
        problem=problem,
        has_frontmatter=has_frontmatter,
    )


def _unreadable(line: int, message: str) -> Note:
    return Note(fields={}, key_lines={}, title=None, body="", problem=ParseProblem("E000", line, message))


_FAST_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# A plain scalar we can read without YAML's full grammar: no indicator first, no `: `/` #`/flow chars.
_FAST_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`]([^:#,\[\]{}]|:(?=[^\s,\[\]{}])|(?<=\S)#)*")


# Frontmatter repeats itself across a workspace (the same keys, statuses, tags and ref targets in
# thousands of notes), so each distinct text is resolved once per process. Values are immutable
# (str, int, bool, None): sharing them is safe. Bounded: cleared when full.
_SCALARS: dict[str, tuple[bool, Any]] = {}
_KEYS: dict[str, bool] = {}
_MEMO_MAX = 100_000


def _fast_scalar(text: str) -> tuple[bool, Any]:
    """(ok, value) for a plain scalar, resolved exactly as PyYAML resolves it; ok False to fall back."""
    got = _SCALARS.get(text)
    if got is None:
        if len(_SCALARS) >= _MEMO_MAX:
            _SCALARS.clear()
        got = _SCALARS[text] = _resolve_scalar(text)
    return got


def _resolve_scalar(text: str) -> tuple[bool, Any]:
    if not _FAST_PLAIN.fullmatch(text):
        return False, None
    kind = plain_kind(text)
    if kind == "str":
        return True, text
    if kind == "null":
        return True, None
    if kind == "bool":
        return True, text[0] in "tT"
    if kind == "int":
        return True, int(text)
    return False, None  # floats (NaN/inf need the slow path's JSON-safe handling), merge/value keys


def _fast_key(key: str) -> bool:
    """Whether `key` is a plain key the fast path may take: a name YAML reads as a string."""
    ok = _KEYS.get(key)
    if ok is None:
        if len(_KEYS) >= _MEMO_MAX:
            _KEYS.clear()
        ok = _KEYS[key] = bool(_FAST_KEY.fullmatch(key)) and plain_kind(key) == "str"
    return ok


def _fast_frontmatter(source: str, first_line: int) -> tuple[dict[str, Any], dict[str, int]] | None:
    """Most frontmatter is flat `key: scalar` and `key: [a, b]` lines; read those without the YAML
    machinery (~10x faster), with PyYAML's own resolver deciding each scalar's type so the result is
    identical. Anything else (nesting, quotes, block scalars, anchors, odd keys) returns None and
    takes the full parser."""
    fields: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    values = 0
    for i, raw in enumerate(source.split("\n")):
        line = raw.rstrip("\r").rstrip(" ")
        if not line or line.startswith("#"):
            continue
        key, sep, rest = line.partition(": ")
        if not sep or key in fields or "\t" in line or not _fast_key(key):
            return None
        rest = rest.strip(" ")
        if rest.startswith("[") and rest.endswith("]"):
            inner = rest[1:-1].strip(" ")
            items: list[Any] = []
            if inner:
                for part in inner.split(","):
                    ok, value = _fast_scalar(part.strip(" "))
                    if not ok:
                        return None
                    items.append(value)
            fields[key] = items
            values += len(items)
        else:
            ok, value = _fast_scalar(rest)
            if not ok:
                return None
            fields[key] = value
        key_lines[key] = first_line + i
    if values + len(fields) > MAX_VALUES:
        return None  # the full parser says where the limit was crossed
    return fields, key_lines


def _frontmatter(source: str, first_line: int) -> tuple[dict[str, Any], dict[str, int], ParseProblem | None]:
    fast = _fast_frontmatter(source, first_line)
    if fast is not None:
        return fast[0], fast[1], None
    for i, raw in enumerate(source.split("\n")):
        stripped = raw.lstrip(" ")
        if stripped.startswith("\t") and stripped.strip():
            return {}, {}, ParseProblem(
                "E001", first_line + i, "frontmatter is not valid YAML: tab character used for indentation"
            )
    import yaml

    loader = loader_class()(source)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}, {}, None
        if not isinstance(node, yaml.MappingNode):
            return {}, {}, ParseProblem("E001", first_line, "frontmatter must be a mapping of key: value")
        key_lines: dict[str, int] = {}
        for key_node, _ in node.value:
            key = _key_text(key_node)
            line = first_line + key_node.start_mark.line
            if key in key_lines:
                return {}, {}, ParseProblem("E001", line, f"frontmatter is not valid YAML: duplicate key '{key}'")
            key_lines[key] = line
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        # An unclosed `[1` is reported by libyaml where the file ends; the line the user must fix is
        # where the flow collection opened, which libyaml keeps as the context mark.
        opened_flow = err.context is not None and "flow" in err.context and err.context_mark is not None
        mark = err.context_mark if opened_flow else (err.problem_mark or err.context_mark)
        line = first_line + (mark.line if mark is not None else 0)
        what = (err.problem or err.context or "invalid YAML").strip()
        return {}, {}, ParseProblem("E001", line, f"frontmatter is not valid YAML: {what}")
    except RecursionError:
        return {}, {}, ParseProblem(
            "E001", first_line, "frontmatter is nested too deeply to read; flatten its lists and mappings"
        )
    except (yaml.YAMLError, ValueError, TypeError) as err:
        return {}, {}, ParseProblem("E001", first_line, f"frontmatter is not valid YAML: {err}")
    finally:
        loader.dispose()
    budget = [MAX_VALUES, len(source) + MAX_EXTRA_CHARS]
    fields: dict[str, Any] = {}
    for k, v in data.items():
        key = str(k)
        try:
            fields[key] = _jsonable(v, 0, budget)
        except _TooBig as err:
            what = f"{MAX_VALUES:,} values" if err.values else f"{MAX_EXTRA_CHARS:,} more characters than it holds"
            return {}, {}, ParseProblem(
                "E001", key_lines.get(key, first_line),
                f"frontmatter expands to more than {what} at key '{key[:80]}' (YAML aliases like `*name` repeat "
                "what their anchor holds); write the values out, or move them out of the frontmatter",
            )
    return fields, key_lines, None


def _key_text(node: yaml.Node) -> str:
    value = node.value
    return value if isinstance(value, str) else str(value)


class _TooBig(Exception):
    def __init__(self, values: bool) -> None:
        self.values = values  # True: too many values; False: too much text


def _jsonable(value: Any, depth: int, budget: list[int]) -> Any:
    """Make a YAML value JSON-safe: string keys, no NaN, bounded depth, and bounded size: `budget` is
    [values left, characters left], shared by the whole frontmatter (aliases repeat objects, so this
    expansion, not the YAML text, is what an alias bomb inflates). Raises `_TooBig` past either."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig(True)
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        budget[1] -= len(value)
        if budget[1] < 0:
            raise _TooBig(False)
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            budget[1] -= len(key)
            if budget[1] < 0:
                raise _TooBig(False)
            out[key] = _jsonable(v, depth + 1, budget)
        return out
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v, depth + 1, budget) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    budget[1] -= len(text)
    if budget[1] < 0:
        raise _TooBig(False)
    return text


def within_bounds(fields: Mapping[str, Any]) -> bool:
    """Whether `fields` (a note's frontmatter, as a cache holds it) is no bigger and no deeper than a
    parse can make it: for frontmatter that was decoded from a cache someone else may have written."""
    left = [MAX_VALUES]

    def walk(value: Any, depth: int) -> bool:
        left[0] -= 1
        if left[0] < 0 or depth > MAX_DEPTH + 1:
            return False
        if isinstance(value, dict):
            return all(isinstance(k, str) and walk(v, depth + 1) for k, v in value.items())
        if isinstance(value, list):
            return all(walk(v, depth + 1) for v in value)
        return value is None or isinstance(value, (str, int, float, bool))

    return all(isinstance(k, str) and walk(v, 0) for k, v in fields.items())


def _scan_body(body: str, first_line: int) -> tuple[str | None, list[Link]]:
    """The first ATX H1 and every [[wikilink]], skipping fenced code and inline code spans."""
    if "`" in body or "~~~" in body:
        return _scan_lines(body.split("\n"), first_line)
    # No code at all (most notes): two searches over the whole text, no per-line loop.
    h = _H1_ANYWHERE.search(body)
    links: list[Link] = []
    if "[[" in body:
        line, at = first_line, 0
        for m in _WIKILINK.finditer(body):
            line += body.count("\n", at, m.start())
            at = m.start()
            links.append(Link(m.group(1), line))
    return (h.group(1).strip() if h else None), links


def _scan_lines(lines: list[str], first_line: int) -> tuple[str | None, list[Link]]:
    title: str | None = None
    links: list[Link] = []
    fence: str | None = None
    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if title is None:
            h = _H1.match(line)
            if h:
                title = h.group(1).strip()
        if "[[" in line:
            visible = _INLINE_CODE.sub(lambda c: " " * len(c.group(0)), line) if "`" in line else line
            links.extend(Link(m.group(1), first_line + i) for m in _WIKILINK.finditer(visible))
    return title, links
