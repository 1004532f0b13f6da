"""Edit one member of a JSON or JSONC file in place, keeping every other byte.

A host's config file is the user's: their other servers, their comments, their layout. So it is never
re-serialised. A small parser records where each value starts and ends; an edit splices text in or out
at those offsets. Every insertion has an exact inverse, so install then uninstall gives back the same
bytes:

- a member appended to an object that has members goes after the last value as `,NL INDENT "key": V`;
  removing a member that has a predecessor deletes from the end of that predecessor's value to the end
  of its own value: the same bytes;
- a member put into an object with no members goes right after `{` as `NL INDENT "key": V`, and the
  object's old inside (whitespace, comments) stays after it; removing an only member deletes from after
  `{` to the end of its value;
- an object this module creates to hold the member (`mcpServers` when there is none) is written as
  `{NL INDENT "key": V NL OUTER}`; emptied, it reads `{NL OUTER}`, and that exact text is how removal
  knows to take the container away too. A file this module creates reads `{NL}NL` once emptied, and is
  deleted.

JSONC (comments `//` and `/* */`, trailing commas) is accepted where the host accepts it (Cursor, VS Code,
Kiro's IDE, Zed, opencode, Continue); Gemini CLI takes comments but no trailing comma nor BOM (it strips the
comments and hands the rest to `JSON.parse`); Claude Code, Roo Code and the desktop app read strict JSON, so
comments there are reported as the host would fail on them, and so are they in Windsurf's file, whose docs show
none.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from typing import Any

_NUMBER_START = re.compile(r"-?[0-9]")


class JsonSyntaxError(ValueError):
    """Not JSON (or JSONC) the host could read: `line` and `column` are 1-based."""

    def __init__(self, text: str, pos: int, message: str) -> None:
        self.line = text.count("\n", 0, pos) + 1
        self.column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        super().__init__(f"line {self.line}, column {self.column}: {message}")


@dataclass
class Node:
    kind: str  # object | array | string | number | true | false | null
    start: int
    end: int
    members: list[Member] = field(default_factory=list)  # objects
    items: list[Node] = field(default_factory=list)  # arrays
    scalar: Any = None


@dataclass
class Member:
    key: str
    key_start: int
    value: Node


_MAX_DEPTH = 200  # a config file is shallow; a deeper one is refused rather than recursed into


class _Parser:
    def __init__(self, text: str, *, comments: bool, trailing_commas: bool, bom: bool = True) -> None:
        self.text = text
        self.comments = comments
        self.trailing_commas = trailing_commas
        self.bom = bom
        self.pos = 0

    def fail(self, message: str, pos: int | None = None) -> JsonSyntaxError:
        return JsonSyntaxError(self.text, self.pos if pos is None else pos, message)

    def skip(self) -> None:
        t, n = self.text, len(self.text)
        while self.pos < n:
            c = t[self.pos]
            if c in " \t\r\n\ufeff":
                if c == "\ufeff" and not self.bom:
                    raise self.fail("a byte order mark (U+FEFF), which the host does not read (it stops on it): save "
                                    "the file without it")
                self.pos += 1
            elif c == "/" and self.pos + 1 < n and t[self.pos + 1] in "/*":
                if not self.comments:
                    raise self.fail("comments are not allowed in this file (the host reads strict JSON)")
                if t[self.pos + 1] == "/":
                    nl = t.find("\n", self.pos)
                    self.pos = n if nl < 0 else nl
                else:
                    close = t.find("*/", self.pos + 2)
                    if close < 0:
                        raise self.fail("unterminated /* comment")
                    self.pos = close + 2
            else:
                return

    def document(self) -> Node:
        self.skip()
        node = self.value(0)
        self.skip()
        if self.pos != len(self.text):
            raise self.fail("unexpected text after the JSON value")
        return node

    def value(self, depth: int) -> Node:
        if depth > _MAX_DEPTH:
            raise self.fail("nested too deeply")
        if self.pos >= len(self.text):
            raise self.fail("unexpected end of file")
        c = self.text[self.pos]
        if c == "{":
            return self.obj(depth)
        if c == "[":
            return self.arr(depth)
        if c == '"':
            start = self.pos
            s = self.string()
            return Node("string", start, self.pos, scalar=s)
        return self.literal()

    def string(self) -> str:
        start = self.pos
        decoder = json.JSONDecoder()
        try:
            s, end = decoder.raw_decode(self.text, start)
        except json.JSONDecodeError as err:
            raise self.fail(f"bad string: {err.msg}", err.pos) from None
        self.pos = end
        assert isinstance(s, str)
        return s

    def literal(self) -> Node:
        start = self.pos
        decoder = json.JSONDecoder()
        try:
            v, end = decoder.raw_decode(self.text, start)
        except json.JSONDecodeError:
            raise self.fail("expected a value") from None
        kind = "null" if v is None else "true" if v is True else "false" if v is False else "number"
        # NaN and Infinity: raw_decode takes them, JSON does not. A number too large for a double (`1e400`) is
        # JSON all the same (a host's JavaScript reads it as Infinity): kept, as its text is.
        written_number = _NUMBER_START.match(self.text, start) is not None
        if isinstance(v, (dict, list, str)) or (isinstance(v, float) and not math.isfinite(v) and not written_number):
            raise self.fail("expected a value")
        self.pos = end
        return Node(kind, start, end, scalar=v)

    def obj(self, depth: int) -> Node:
        node = Node("object", self.pos, -1)
        self.pos += 1
        seen: set[str] = set()
        while True:
            self.skip()
            if self.at("}"):
                break
            if node.members:
                if not self.at(","):
                    raise self.fail("expected , or } after an object member")
                comma = self.pos
                self.pos += 1
                self.skip()
                if self.at("}"):
                    if not self.trailing_commas:
                        raise self.trailing_comma(comma)
                    break
            if not self.at('"'):
                cut = self.pos >= len(self.text)
                raise self.fail("unexpected end of file" if cut else "expected a quoted member name")
            key_start = self.pos
            key = self.string()
            if key in seen:
                raise self.fail(f"duplicate member {key!r}: hosts keep only one of them; remove the other",
                                key_start)
            seen.add(key)
            self.skip()
            if not self.at(":"):
                raise self.fail("expected : after a member name")
            self.pos += 1
            self.skip()
            node.members.append(Member(key, key_start, self.value(depth + 1)))
        self.pos += 1
        node.end = self.pos
        return node

    def arr(self, depth: int) -> Node:
        node = Node("array", self.pos, -1)
        self.pos += 1
        while True:
            self.skip()
            if self.at("]"):
                break
            if node.items:
                if not self.at(","):
                    raise self.fail("expected , or ] after an array item")
                comma = self.pos
                self.pos += 1
                self.skip()
                if self.at("]"):
                    if not self.trailing_commas:
                        raise self.trailing_comma(comma)
                    break
            node.items.append(self.value(depth + 1))
        self.pos += 1
        node.end = self.pos
        return node

    def trailing_comma(self, comma: int) -> JsonSyntaxError:
        why = "the host reads strict JSON" if not self.comments else "the host reads comments but no trailing comma"
        return self.fail(f"trailing comma ({why}): remove it", comma)

    def at(self, c: str) -> bool:
        return self.pos < len(self.text) and self.text[self.pos] == c


def parse(text: str, *, comments: bool, trailing_commas: bool | None = None, bom: bool = True) -> Node:
    """The document's tree with offsets; raises `JsonSyntaxError`. Trailing commas are taken where comments are,
    unless `trailing_commas` says otherwise, and a byte order mark unless `bom` is False (Gemini CLI: comments, no
    trailing comma, no BOM)."""
    commas = comments if trailing_commas is None else trailing_commas
    return _Parser(text, comments=comments, trailing_commas=commas, bom=bom).document()


def to_python(node: Node) -> Any:
    if node.kind == "object":
        return {m.key: to_python(m.value) for m in node.members}
    if node.kind == "array":
        return [to_python(i) for i in node.items]
    return node.scalar


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _line_indent(text: str, pos: int) -> str:
    """The whitespace that starts the line holding `pos`."""
    start = text.rfind("\n", 0, pos) + 1
    end = start
    while end < len(text) and text[end] in " \t":
        end += 1
    return text[start:end]


def _own_line_indent(text: str, pos: int) -> str | None:
    """The indentation before `pos` when only whitespace precedes it on its line, else None."""
    start = text.rfind("\n", 0, pos) + 1
    before = text[start:pos]
    return before if before.strip(" \t") == "" else None


def indent_unit(text: str, root: Node) -> str:
    """The file's indentation step, read from the top-level object's first member (default 2 spaces)."""
    if root.kind == "object" and root.members:
        own = _own_line_indent(text, root.members[0].key_start)
        if own:
            return own
    return "  "


def render(value: Any, base: str, unit: str, nl: str) -> str:
    """`value` as JSON laid out like the file: nested lines start with `base`."""
    out = json.dumps(value, indent=unit, ensure_ascii=False)
    return out.replace("\n", nl + base)


def _member_indent(text: str, obj: Node, unit: str) -> str:
    if obj.members:
        own = _own_line_indent(text, obj.members[-1].key_start)
        if own is not None:
            return own
    return _line_indent(text, obj.start) + unit


def created_container(key: str, value: Any, outer: str, unit: str, nl: str) -> str:
    """The object this module writes to hold one member: `{NL IND "key": V NL OUTER}`."""
    ind = outer + unit
    return "{" + nl + ind + json.dumps(key, ensure_ascii=False) + ": " + render(value, ind, unit, nl) + nl + outer + "}"


def empty_created_container(outer: str, nl: str) -> str:
    return "{" + nl + outer + "}"


def insert_member(text: str, obj: Node, key: str, value_text: str | None = None, *, value: Any = None,
                  unit: str, nl: str) -> str:
    """`text` with member `key` added last to `obj`; `value_text` is pre-rendered (for containers)."""
    ind = _member_indent(text, obj, unit)
    rendered = value_text if value_text is not None else render(value, ind, unit, nl)
    member = json.dumps(key, ensure_ascii=False) + ": " + rendered
    if obj.members:
        at = obj.members[-1].value.end
        return text[:at] + "," + nl + ind + member + text[at:]
    at = obj.start + 1
    return text[:at] + nl + ind + member + text[at:]


def replace_value(text: str, member: Member, value: Any, *, unit: str, nl: str) -> str:
    base = _own_line_indent(text, member.key_start)
    if base is None:
        base = _line_indent(text, member.key_start)
    v = member.value
    return text[:v.start] + render(value, base, unit, nl) + text[v.end:]


def set_member(text: str, obj: Node, key: str, value: Any, *, unit: str, nl: str) -> str:
    """`text` with member `key` of `obj` set to `value`: its value's bytes replaced (on one line when they
    were on one line), or the member added last. Every other byte of `obj`, comments included, stays."""
    member = find(obj, key)
    if member is None:
        return insert_member(text, obj, key, value=value, unit=unit, nl=nl)
    v = member.value
    if "\n" not in text[v.start:v.end]:
        return text[:v.start] + json.dumps(value, ensure_ascii=False) + text[v.end:]
    return replace_value(text, member, value, unit=unit, nl=nl)


def remove_member(text: str, obj: Node, key: str) -> str:
    """`text` without member `key` of `obj` (the inverse of `insert_member`)."""
    index = next(i for i, m in enumerate(obj.members) if m.key == key)
    m = obj.members[index]
    if index > 0:
        return text[:obj.members[index - 1].value.end] + text[m.value.end:]
    if len(obj.members) > 1:
        return text[:m.key_start] + text[obj.members[1].key_start:]
    end = m.value.end
    p = _Parser(text, comments=True, trailing_commas=True)
    p.pos = end
    p.skip()
    if p.at(","):  # a trailing comma after an only member is the user's; it goes with the member
        end = p.pos + 1
    return text[:obj.start + 1] + text[end:]


def find(obj: Node, key: str) -> Member | None:
    return next((m for m in obj.members if m.key == key), None)
