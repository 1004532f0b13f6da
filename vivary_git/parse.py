"""Bytes of one blob → `Note`. Pure: the same blob id always gives the same `Note`.

We split frontmatter ourselves (rather than through python-frontmatter) because every finding
needs the exact 1-based line of its key, and YAML is read with PyYAML's C parser through a
loader that keeps dates as the strings the user wrote: a date like `2026-13-45` must be a
finding about that field, not a crash of the whole parse.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING, Any

from vivary_git.models import Ignore, Link, Note, ParseProblem

if TYPE_CHECKING:
    import yaml

MAX_BYTES = 8 * 1024 * 1024
_BINARY_SNIFF = 8000

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
        ignores=ignore_comments(body, first_line=body_start + 1) if IGNORE_MARK in body else (),
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
        else:
            ok, value = _fast_scalar(rest)
            if not ok:
                return None
            fields[key] = value
        key_lines[key] = first_line + i
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
    except (yaml.YAMLError, ValueError, TypeError, RecursionError) as err:
        return {}, {}, ParseProblem("E001", first_line, f"frontmatter is not valid YAML: {err}")
    finally:
        loader.dispose()
    fields = {str(k): _jsonable(v) for k, v in data.items()}
    return fields, key_lines, None


def _key_text(node: yaml.Node) -> str:
    value = node.value
    return value if isinstance(value, str) else str(value)


def _jsonable(value: Any, depth: int = 0) -> Any:
    """Make a YAML value JSON-safe: string keys, no NaN, bounded depth (alias bombs stay bounded)."""
    if depth > 32:
        return None
    if isinstance(value, dict):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


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


IGNORE_MARK = "vivary-ignore"
_IGNORE = re.compile(r"<!--\s*vivary-ignore\s+([^>]*?)\s*-->")
_IGNORE_CODE = re.compile(r"^[EW][0-9]{3}$")


def ignore_comments(body: str, first_line: int) -> tuple[Ignore, ...]:
    """`<!-- vivary-ignore CODE... -->` comments outside fenced code (codes split by spaces or commas,
    case-insensitive; anything that is not a code is skipped). Each silences its codes on its own line
    and, when nothing else is on that line, on the next line too (a comment above a list item)."""
    out: list[Ignore] = []
    fence: str | None = None
    for i, raw in enumerate(body.split("\n")):
        line = raw.rstrip("\r")
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if IGNORE_MARK not in line:
            continue
        for c in _IGNORE.finditer(line):
            codes = tuple(dict.fromkeys(t.upper() for t in re.split(r"[\s,]+", c.group(1))
                                        if _IGNORE_CODE.match(t.upper())))
            if not codes:
                continue
            out.append(Ignore(first_line + i, codes))
            if not _IGNORE.sub("", line).strip():
                out.append(Ignore(first_line + i + 1, codes))
    return tuple(out)
