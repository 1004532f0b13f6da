"""Managed blocks: text between two marker lines that `git vivary` owns inside a file it shares with the user.

Used for the guidance in AGENTS.md / CLAUDE.md / GEMINI.md, the server table in Codex's config.toml, the
profile in USER.md and the digest in MEMORY.md. Everything outside the markers is the user's and is kept
byte for byte. A marker line is a line that holds the marker alone (spaces around it and a CR before its
newline allowed; a BOM before the first line stays the file's). A file holds no marker line, or exactly one
block: a begin line, later an end line. Anything else (a begin line with no end after it, an end line with
no begin before it, a second begin line inside the block, a second block) is refused, naming the file and
the line (exit 3): pairing such markers would hand the user's text between them to the next rewrite, and
MEMORY.md and USER.md are never in Git to get it back from.

The insertion has an exact inverse, so adding then removing a block gives back the same bytes:

- a new file is the block alone; removing a block that starts the file and leaves nothing (or only a BOM)
  deletes it; with text of the user's below it, that text stays;
- an existing file (even an empty one) gets a newline and then the block at its end; removing the block
  also removes the one newline before it. A block the user moved up into the middle of the text takes the
  newline before it only when that newline makes a blank line: two of the user's lines are never joined.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from vivary_git.errors import RefusedError

_BOM = "\ufeff"


@dataclass(frozen=True)
class Markers:
    begin: str  # the whole begin line, without its newline
    end: str

    def span(self, text: str, shown: str) -> tuple[int, int] | None:
        """Where the block is: from the start of its begin line to the end of its end line (with newline).
        None when the file holds neither marker; a `RefusedError` naming `shown` and the line when its
        markers do not make exactly one block."""
        found: tuple[int, int] | None = None
        first = 0  # the line of the block found, for a second one
        open_at: tuple[int, int] | None = None  # (line, offset) of a begin line not closed yet
        for number, start, stop, line in _lines(text):
            if line == self.begin:
                if open_at is not None:
                    raise _malformed(shown, number, f"a second begin marker line, inside the block that begins at "
                                     f"line {open_at[0]}")
                if found is not None:
                    raise _malformed(shown, number, f"a second vivary block (the first begins at line {first})")
                open_at = (number, start)
            elif line == self.end:
                if open_at is None:
                    raise _malformed(shown, number, "vivary's end marker line, with no begin marker line before it")
                found, first, open_at = (open_at[1], stop), open_at[0], None
        if open_at is not None:
            raise _malformed(shown, open_at[0], "vivary's begin marker line, with no end marker line after it")
        return found

    def inner(self, text: str, shown: str) -> str | None:
        span = self.span(text, shown)
        if span is None:
            return None
        block = text[span[0]:span[1]]
        first = block.find("\n") + 1
        last = block.rstrip("\r\n").rfind("\n") + 1
        return block[first:last]


def _lines(text: str) -> Iterator[tuple[int, int, int, str]]:
    """(line number, start, end with its newline, the line as a marker is compared) for each line of `text`;
    the start of the first line is after a BOM, which stays outside any block."""
    pos = len(_BOM) if text.startswith(_BOM) else 0
    number = 1
    while pos < len(text):
        nl = text.find("\n", pos)
        stop = len(text) if nl < 0 else nl + 1
        yield number, pos, stop, text[pos:stop].strip(" \t\r\n")
        pos = stop
        number += 1


def _malformed(shown: str, line: int, what: str) -> RefusedError:
    return RefusedError(f"{shown}:{line}: {what}, so which lines are vivary's is not clear; remove the stray marker "
                        "line (or the whole block) by hand and run again; nothing was written")


def render(markers: Markers, body: str, nl: str) -> str:
    """The block: begin line, `body` (its lines), end line, each ending in `nl`."""
    lines = body.splitlines()
    return nl.join([markers.begin, *lines, markers.end]) + nl


def put(text: str | None, markers: Markers, body: str, shown: str) -> str:
    """`text` (None: no file) with the block set to `body`: replaced in place, or added at the end."""
    if text is None:
        return render(markers, body, "\n")
    nl = "\r\n" if "\r\n" in text else "\n"
    block = render(markers, body, nl)
    span = markers.span(text, shown)
    if span is not None:
        return text[:span[0]] + block + text[span[1]:]
    return text + nl + block


def remove(text: str, markers: Markers, shown: str) -> str | None:
    """`text` without the block; None when the file should go (it held the block and nothing else)."""
    span = markers.span(text, shown)
    if span is None:
        return text
    head, tail = text[:span[0]], text[span[1]:]
    if head in ("", _BOM):  # the block starts the file: what follows is the user's, byte for byte
        return None if tail == "" else head + tail
    if tail == "" or head.endswith(("\n\n", "\n\r\n")):  # the newline `put` added, or a blank line
        head = head[:-2] if head.endswith("\r\n") else head[:-1]
    return head + tail
