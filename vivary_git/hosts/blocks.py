"""Managed blocks: text between two marker lines that `git vivary` owns inside a file it shares with the user.

Used for the guidance in AGENTS.md / CLAUDE.md / GEMINI.md, the server table in Codex's config.toml and
the profile in USER.md. Everything outside the markers is the user's and is kept byte for byte. The
insertion has an exact inverse, so adding then removing a block gives back the same bytes:

- a new file is the block alone; removing a block that starts the file and leaves nothing deletes it;
- an existing file (even an empty one) gets a newline and then the block at its end; removing the block
  also removes the one newline before it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Markers:
    begin: str  # the whole begin line, without its newline
    end: str

    def span(self, text: str) -> tuple[int, int] | None:
        """Where the block is: from the start of its begin line to the end of its end line (with newline)."""
        b = _line_at(text, self.begin)
        if b is None:
            return None
        e = _line_at(text, self.end, b)
        if e is None:
            return None
        stop = text.find("\n", e)
        return b, len(text) if stop < 0 else stop + 1

    def inner(self, text: str) -> str | None:
        span = self.span(text)
        if span is None:
            return None
        block = text[span[0]:span[1]]
        first = block.find("\n") + 1
        last = block.rstrip("\r\n").rfind("\n") + 1
        return block[first:last]


def _line_at(text: str, line: str, start: int = 0) -> int | None:
    """The offset of the first line equal to `line` (ignoring a trailing CR) at or after `start`."""
    pos = start
    while True:
        i = text.find(line, pos)
        if i < 0:
            return None
        at_start = i == 0 or text[i - 1] == "\n"
        after = text[i + len(line):i + len(line) + 2]
        at_end = after == "" or after.startswith(("\n", "\r\n"))
        if at_start and at_end:
            return i
        pos = i + 1


def render(markers: Markers, body: str, nl: str) -> str:
    """The block: begin line, `body` (its lines), end line, each ending in `nl`."""
    lines = body.splitlines()
    return nl.join([markers.begin, *lines, markers.end]) + nl


def put(text: str | None, markers: Markers, body: str) -> str:
    """`text` (None: no file) with the block set to `body`: replaced in place, or added at the end."""
    if text is None:
        return render(markers, body, "\n")
    nl = "\r\n" if "\r\n" in text else "\n"
    block = render(markers, body, nl)
    span = markers.span(text)
    if span is not None:
        return text[:span[0]] + block + text[span[1]:]
    return text + nl + block


def remove(text: str, markers: Markers) -> str | None:
    """`text` without the block; None when the file should go (it held the block and nothing else)."""
    span = markers.span(text)
    if span is None:
        return text
    b, e = span
    if b == 0:
        rest = text[e:]
        return None if rest == "" else rest
    if text[b - 2:b] == "\r\n":
        b -= 2
    elif text[b - 1] == "\n":
        b -= 1
    return text[:b] + text[e:]
