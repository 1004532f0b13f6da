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
from vivary_git.parse import parse_blob, plain_kind

__all__ = ["NoteEditError", "render_note", "replace_body", "scalar", "set_field"]

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
