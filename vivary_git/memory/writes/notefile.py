"""A memory note's bytes: writing a new one, and editing one frontmatter key or the body of any note
with the smallest diff (every other byte of the file unchanged).

Edits are line-based: a top-level key's value is its line plus the indented or `- ` lines that follow
it; the new value is written as one flow-style line. Every edit is checked by parsing the result with
the same parser the graph uses: the other fields must read exactly as before and the edited one as
intended, else the edit is refused (a note whose YAML is too clever for a line edit is left alone).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from vivary_git.errors import RefusedError
from vivary_git.parse import parse_blob
from vivary_git.scalars import plain_kind

__all__ = ["NoteEditError", "append_text", "render_note", "replace_body", "replace_passage", "scalar", "set_field"]

_PLAIN = re.compile(r"\A[A-Za-z0-9_][A-Za-z0-9 ._/-]*\Z")
_KEY = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.-]*\Z")


class NoteEditError(RefusedError):
    """The note cannot be edited safely line by line (unusual YAML, unreadable bytes)."""


def scalar(value: Any) -> str:
    """One YAML flow scalar or flow sequence on one line: plain when it reads back as the same string,
    else JSON-quoted (a JSON string is a YAML double-quoted scalar)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return json.dumps(value)
    if value is None:
        return "null"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(scalar(v) for v in value) + "]"
    text = str(value)
    if _PLAIN.match(text) and text == text.strip() and plain_kind(text) == "str" and ": " not in text \
            and " #" not in text and not _DATE_LIKE.match(text):
        return text
    return json.dumps(text, ensure_ascii=False)


# YAML 1.1 timestamps: PyYAML turns these into dates, so they are quoted.
_DATE_LIKE = re.compile(r"\A\d{4}-\d{1,2}-\d{1,2}")


def render_note(fields: Sequence[tuple[str, Any]], title: str | None, text: str) -> bytes:
    """A new note: frontmatter (in the order given), then `# title` (when given) and the text."""
    lines = ["---"]
    for key, value in fields:
        lines.append(f"{key}: {scalar(value)}")
    lines.append("---")
    lines.append("")
    body = text.strip("\n")
    if title:
        lines.append(f"# {_one_line(title)}")
        if body.strip() == _one_line(title):
            body = ""  # a one-line memory is its own title: not written twice
        else:
            lines.append("")
    if body:
        lines.append(body)
    return ("\n".join(lines) + "\n").encode("utf-8")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _split(data: bytes, what: str) -> tuple[str, list[str], int | None]:
    """(BOM, lines with their endings, index of the closing fence or None when there is no frontmatter)."""
    bom = ""
    if data.startswith(b"\xef\xbb\xbf"):
        bom, data = "\ufeff", data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise NoteEditError(f"{what} is not valid UTF-8, so it cannot be edited safely; fix the file first") from None
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return bom, lines, None
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() in ("---", "..."):
            return bom, lines, i
    raise NoteEditError(f"{what}: its frontmatter is never closed; add a `---` line after it first")


def _newline(lines: list[str]) -> str:
    return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"


def _verify(before: bytes, after: bytes, what: str, key: str | None, value: Any, removed: bool) -> None:
    old, new = parse_blob(before), parse_blob(after)
    if old.problem is not None or new.problem is not None:
        raise NoteEditError(f"{what}: its frontmatter does not parse ({(old.problem or new.problem).message}); "  # type: ignore[union-attr]
                            "fix it first")
    expected = dict(old.fields)
    if key is not None:
        if removed:
            expected.pop(key, None)
        else:
            expected[key] = value
    if new.fields != expected:
        raise NoteEditError(
            f"{what}: its frontmatter is written in a way a one-line edit cannot change safely (a multi-line "
            "value, anchors or comments inside it); edit it by hand"
        )


def set_field(data: bytes, key: str, value: Any, *, what: str, remove: bool = False) -> bytes:
    """`data` with top-level frontmatter `key` set to `value` (or removed): that key's lines replaced by
    one line (appended before the closing fence when the key is new), nothing else changed."""
    if not _KEY.match(key):
        raise NoteEditError(f"field name {key!r} is not a plain YAML key (letters, digits, `_`, `.`, `-`)")
    bom, lines, close = _split(data, what)
    nl = _newline(lines)
    line = f"{key}: {scalar(value)}{nl}"
    if close is None:
        if remove:
            return data
        out = [f"---{nl}", line, f"---{nl}", *lines]
    else:
        start = next((i for i in range(1, close) if _is_key_line(lines[i], key)), None)
        if start is None:
            if remove:
                return data
            out = [*lines[:close], line, *lines[close:]]
        else:
            end = start + 1
            while end < close and (lines[end][:1] in (" ", "\t") or lines[end].startswith("- ")
                                   or lines[end].rstrip("\r\n") == "-"):
                end += 1
            out = [*lines[:start], *([] if remove else [line]), *lines[end:]]
    after = (bom + "".join(out)).encode("utf-8")
    _verify(data, after, what, key, value, remove)
    return after


def _is_key_line(line: str, key: str) -> bool:
    for quote in ("", '"', "'"):
        head = f"{quote}{key}{quote}:"
        if line.startswith(head) and line[len(head):len(head) + 1] in (" ", "\t", "\r", "\n", ""):
            return True
    return False


def replace_body(data: bytes, body: str, *, what: str) -> bytes:
    """`data` with everything after the frontmatter replaced by `body` (its first `# H1` line kept when
    the new body does not start with a heading of its own); the frontmatter bytes unchanged."""
    bom, lines, close = _split(data, what)
    nl = _newline(lines)
    head = lines[: close + 1] if close is not None else []
    rest = lines[close + 1:] if close is not None else lines
    keep: list[str] = []
    i = 0
    while i < len(rest) and not rest[i].strip():
        keep.append(rest[i])
        i += 1
    if i < len(rest) and rest[i].startswith("# ") and not body.lstrip().startswith("# "):
        keep.extend([rest[i], nl])
    new_body = nl.join(body.strip("\n").split("\n")) + nl
    after = (bom + "".join(head) + "".join(keep) + new_body).encode("utf-8")
    if close is not None:
        _verify(data, after, what, None, None, False)
    return after


def set_title(data: bytes, title: str, *, what: str) -> bytes:
    """`data` with its `# title` line (the body's first line after blank ones) saying `title`, or such a line put
    there when the body has none; the frontmatter's `title:` too when it has one. Nothing else changed."""
    bom, head, body, nl = _body(data, what)
    i = 0
    while i < len(body) and not body[i].strip():
        i += 1
    line = f"# {_one_line(title)}{nl}"
    if i < len(body) and body[i].startswith("# "):
        body = [*body[:i], line, *body[i + 1:]]
    else:
        body = [*body[:i], line, *([nl] if i < len(body) else []), *body[i:]]
    after = (bom + "".join(head) + "".join(body)).encode("utf-8")
    if head:
        _verify(data, after, what, None, None, False)
        if any(_is_key_line(h, "title") for h in head[1:-1]):
            after = set_field(after, "title", _one_line(title), what=what)
    return after


_FENCE = re.compile(r"\A {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"\A {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*\r?\n?\Z")
_LIST_ITEM = re.compile(r"\A\s*(?:[-*+]|\d+[.)])\s")
_SHOWN = 100  # characters of a line shown as a candidate


def _body(data: bytes, what: str) -> tuple[str, list[str], list[str], str]:
    """(BOM, frontmatter lines with their fences, body lines, newline) of a note."""
    bom, lines, close = _split(data, what)
    head = lines[: close + 1] if close is not None else []
    return bom, head, lines[len(head):], _newline(lines)


def _headings_of(body: list[str]) -> list[tuple[int, int, str]]:
    """(line index, level, text) of each ATX heading of the body, outside fenced code."""
    out = []
    fence = ""
    for i, line in enumerate(body):
        m = _FENCE.match(line)
        if m is not None:
            mark = m.group(1)
            if not fence:
                fence = mark
            elif mark[0] == fence[0] and len(mark) >= len(fence) and not line.strip()[len(mark):].strip():
                fence = ""
            continue
        if fence:
            continue
        h = _ATX.match(line)
        if h is not None:
            out.append((i, len(h.group(1)), h.group(2).strip()))
    return out


def _heading_key(text: str) -> str:
    return " ".join(text.strip().lstrip("#").split()).casefold()


def _shown(line: str) -> str:
    flat = " ".join(line.split())
    return json.dumps(flat if len(flat) <= _SHOWN else flat[: _SHOWN - 1] + "…", ensure_ascii=False)


def append_text(data: bytes, text: str, *, what: str, heading: str | None = None) -> bytes:
    """`data` with `text` added after the last line of the body, or of the section under `heading` (a
    heading's text, `#`s optional, matched without regard to case or spacing; it must name one heading).
    A blank line is put before the text unless both it and the line it follows are list items. The
    frontmatter bytes are unchanged."""
    bom, head, body, nl = _body(data, what)
    start, end = 0, len(body)
    if heading is not None:
        key = _heading_key(heading)
        found = _headings_of(body)
        same = [h for h in found if _heading_key(h[2]) == key]
        first = len(head) + 1
        if len(same) != 1:
            listed = ", ".join(f"line {first + i}: {_shown('#' * lv + ' ' + t)}" for i, lv, t in found[:12])
            if not same:
                raise NoteEditError(f"{what} has no heading {_shown(heading)}; its headings: {listed or 'none'}")
            raise NoteEditError(f"{what} has {len(same)} headings {_shown(heading)} (" + ", ".join(
                f"line {first + i}" for i, _, _ in same) + "); append to the end instead, or rename one")
        at, level, _ = same[0]
        start = at + 1
        end = next((i for i, lv, _ in found if i > at and lv <= level), len(body))
    last = end
    while last > start and not body[last - 1].strip():
        last -= 1
    new = [f"{line}{nl}" for line in text.strip("\n").replace("\r\n", "\n").split("\n")]
    if last == 0 and heading is None:
        last = len(body)  # an empty body: after its blank lines
        gap = [] if body or not head else [nl]
    else:
        before = body[last - 1]
        if not before.endswith(("\n", "\r")):
            body = [*body[: last - 1], before + nl, *body[last:]]
        lists = last > start and bool(_LIST_ITEM.match(before)) and bool(_LIST_ITEM.match(new[0]))
        gap = [] if lists else [nl]
    out = [*body[:last], *gap, *new, *body[last:]]
    after = (bom + "".join(head) + "".join(out)).encode("utf-8")
    if head:
        _verify(data, after, what, None, None, False)
    return after


def replace_passage(data: bytes, old: str, new: str, *, what: str) -> bytes:
    """`data` with the one occurrence of `old` in its body replaced by `new`. Refused, naming the candidates,
    when `old` is not in the body (the lines most like it) or is there more than once (where)."""
    bom, head, body, nl = _body(data, what)
    text = "".join(body)
    needle = old.replace("\r\n", "\n")
    if nl == "\r\n":
        needle = needle.replace("\n", "\r\n")
        new = new.replace("\r\n", "\n").replace("\n", "\r\n")
    first = len(head) + 1
    count = text.count(needle) if needle else 0
    if count == 1:
        after = (bom + "".join(head) + text.replace(needle, new, 1)).encode("utf-8")
        if head:
            _verify(data, after, what, None, None, False)
        return after
    if count > 1:
        where: list[int] = []
        at = text.find(needle)
        while at != -1 and len(where) < 12:
            where.append(first + text.count("\n", 0, at))
            at = text.find(needle, at + len(needle))
        raise NoteEditError(f"the passage is in {what} {count} times (lines {', '.join(map(str, where))}); give "
                            "more of the text around it, so that it is there once")
    import difflib

    width = max(1, needle.count("\n") + 1)
    scored = []
    for i in range(len(body)):
        window = "".join(body[i:i + width])
        if window.strip():
            scored.append((difflib.SequenceMatcher(None, needle.strip(), window.strip()).ratio(), i, window))
    best = sorted(scored, key=lambda s: (-s[0], s[1]))[:3]
    near = "; ".join(f"line {first + i}: {_shown(w)}" for r, i, w in best if r >= 0.4)
    raise NoteEditError(f"the passage is not in {what}" + (f"; the closest: {near}" if near else "") +
                        "; give the text exactly as the note has it (`read` it with include_content)")
