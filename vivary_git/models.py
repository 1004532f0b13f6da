"""The vocabulary of the graph as frozen, typed records.

These are what the public API returns and what `--json` encodes; parse into them at the edge,
pass them around, encode them once.
"""

from __future__ import annotations

from typing import Any

import msgspec

# The most a note may hold (8 MiB): a bigger file is E000 (parse.py), and every reader of a note's bytes
# asks its size first and refuses it unread (source.py, parallel.py), so a log dump committed as a `.md`
# costs no reader its size in memory.
NOTE_MAX_BYTES = 8 * 1024 * 1024


class Finding(msgspec.Struct, frozen=True, order=True):
    """One `check` result: `path:line: level CODE: message`."""

    path: str
    line: int
    level: str  # "error" | "warning"
    code: str
    message: str

    def render(self) -> str:
        line = f"{self.path}:{self.line}: {self.level} {self.code}: {self.message}"
        if line.isprintable() and "::" not in line and "##[" not in line:
            return line  # no field holds anything `text()` would change: one test for the whole line
        from vivary_git.escape import text

        return f"{text(self.path)}:{self.line}: {text(self.level)} {text(self.code)}: {text(self.message)}"


class Node(msgspec.Struct, frozen=True):
    """A Markdown document in the workspace, typed by its folder."""

    id: str
    type: str | None
    path: str  # relative to the workspace root, `/`-separated
    title: str
    blob: str  # Git blob id of the file's content: the key of its parse


class Edge(msgspec.Struct, frozen=True, order=True):
    """A reference from one node to another: a `ref`/`ref-list` field value or a `[[wikilink]]`."""

    from_: str = msgspec.field(name="from")
    field: str = ""
    to: str = ""
    broken: bool = False


# gc=False: a link holds only text and numbers, so it can be in no reference cycle; untracked, it has no
# collector's header (16 of its 56 bytes), and a note may hold 1.6 million links (tests/test_hostile.py).
class Link(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """A link as written in a body: its raw text, its 1-based line and its kind. For a `[[wikilink]]`
    (`kind` "w") or an embed `![[…]]` ("e") the text is what is inside the brackets; for a Markdown
    link `[t](dest)` ("m"), an image `![t](dest)` ("i") or a reference definition `[t]: dest` ("r")
    it is the destination as written (angle brackets removed, not yet URL-decoded); for a tag `#name`
    ("t") it is the name."""

    text: str
    line: int
    kind: str = "w"


class ParseProblem(msgspec.Struct, frozen=True, array_like=True):
    code: str  # E000 | E001
    line: int
    message: str
    template: bool = False  # E001 because the frontmatter holds a template placeholder (`{{date}}`, `<% … %>`)


class Ignore(msgspec.Struct, frozen=True, array_like=True):
    """A `<!-- vivary-ignore CODE... -->` comment: the codes it silences on one line of its note."""

    line: int  # 1-based line of the file the codes are silenced on
    codes: tuple[str, ...]


class Conflict(msgspec.Struct, frozen=True, array_like=True):
    """A merge conflict Git left in a note's body: the 1-based lines of its `<<<<<<<` and its `>>>>>>>`."""

    line: int
    end: int


class Note(msgspec.Struct, frozen=True, array_like=True):
    """Everything a blob's bytes say, independent of path and config: a pure function of the blob id."""

    fields: dict[str, Any]
    key_lines: dict[str, int]
    title: str | None  # first `# H1` of the body, if any
    body: str
    links: tuple[Link, ...] = ()
    problem: ParseProblem | None = None
    has_frontmatter: bool = False
    anchors: tuple[str, ...] = ()  # heading texts, and `^id` block ids (with their `^`), outside code
    ignores: tuple[Ignore, ...] = ()  # `vivary-ignore` comments in the body
    conflicts: tuple[Conflict, ...] = ()  # merge conflicts left in the body (W225), in order
