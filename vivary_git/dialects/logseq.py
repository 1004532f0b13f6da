"""Logseq's link rules (docs/vaults.md#logseq), from Logseq's own documentation (logseq/docs:
"Properties", "Built-in Properties", "term/alias").

A page is a file in `pages/` (or a journal in `journals/`); its name is its `title::` property, else
the file name, with `___` (or the older `%2F`) for the `/` of a namespace (`a___b.md` is the page
`a/b`); its `alias::` values name it too. Names match case-insensitively. `[[page]]`, `#page` and
`#[[two words]]` all link a page; so do the comma-separated values of `tags::` (and a property's
`[[links]]` and `#tags` are edges named by the property). A `[[page]]` with no file is not broken:
Logseq creates that page when it is first linked, so it is an edge to a page without a file, not a
finding, whatever its name: `[[report.pdf]]` and `[[deck.key]]` are pages (Logseq links its assets with
Markdown links, `![report](../assets/report.pdf)`, and a missing one of those is a missing file). Page
properties are the `key:: value` lines a file starts with (its first block), or its YAML front matter.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence

from vivary_git.dialects import Resolution, Rules, Target, fold, is_attachment_name, obsidian
from vivary_git.models import Link, Note

read = obsidian.read

# `key:: value`: a name (Logseq's rule: no spaces, not starting with a digit) then `::`.
_PROPERTY = re.compile(r"([^\s:0-9][^\s:]*)::(?:[ \t]+(.*?))?[ \t]*\r?$")
_REF = re.compile(r"#?\[\[([^\[\]\n]+?)\]\]|#([^\s#\[\],]+)")


def page_name(path: str) -> str:
    stem = obsidian.strip_note_suffix(path.rsplit("/", 1)[-1])
    if stem.lower().endswith(".org"):
        stem = stem[:-4]
    return urllib.parse.unquote(stem.replace("___", "/").replace("%2F", "/").replace("%2f", "/"))


def is_org_page(path: str) -> bool:
    """A page Logseq reads from an Org-mode file (`pages/Meeting.org`): not a note here, but a page a
    link names. Not one of `logseq/`'s own files (config, backups)."""
    return path.lower().endswith(".org") and not path.startswith("logseq/")


# Blocks whose lines Logseq does not read as Markdown (`#+BEGIN_SRC`, `#+BEGIN_EXAMPLE`, …, and an advanced
# query's `#+BEGIN_QUERY`, Datalog): no links in them. A `#+BEGIN_QUOTE`, `#+BEGIN_NOTE` or `#+BEGIN_TIP`
# holds Markdown, its links as anywhere.
_VERBATIM = frozenset(("src", "example", "export", "comment", "query"))


def verbatim_lines(links: Sequence[Link]) -> list[tuple[int, int]]:
    """(first, last) line of each `#+BEGIN_SRC` … `#+END_SRC` block (and EXAMPLE, EXPORT, COMMENT, QUERY),
    found by the `#+…` lines the body scan reads as tags (`+BEGIN_SRC`), so code and math hide them as they
    hide any link. A block never closed is not one (Logseq shows its lines as text)."""
    out: list[tuple[int, int]] = []
    opened: tuple[str, int] | None = None
    for link in links:
        if link.kind != "t" or not link.text.startswith("+"):
            continue
        word = link.text[1:].lower()
        if opened is None and word.startswith("begin_") and word[6:] in _VERBATIM:
            opened = (word[6:], link.line)
        elif opened is not None and word == "end_" + opened[0]:
            out.append((opened[1], link.line))
            opened = None
    return out


def page_properties(note: Note) -> list[tuple[str, str, int]]:
    """(name, value, line) of the page's properties: its YAML front matter when it has one, else the
    `key:: value` lines its body starts with (Logseq's first block; a first bullet's too). Names are
    lowercased, `_` read as `-` (Logseq's rule)."""
    out: list[tuple[str, str, int]] = []
    if note.has_frontmatter:
        for key, value in note.fields.items():
            if isinstance(value, list):
                text = ", ".join(str(v) for v in value if v is not None and not isinstance(v, (list, dict)))
            elif value is None or isinstance(value, dict):
                continue
            else:
                text = str(value)
            out.append((key.lower().replace("_", "-"), text, note.key_lines.get(key, 1)))
        return out
    started = False
    for i, raw in enumerate(note.body.split("\n")):
        line = raw.strip()
        if not started:
            if not line:
                continue
            started = True
            if line.startswith("- "):
                line = line[2:].lstrip()
        m = _PROPERTY.fullmatch(line)
        if m is None:
            break
        out.append((m.group(1).lower().replace("_", "-"), (m.group(2) or "").strip(), i + 1))
    return out


def references(value: str) -> list[str]:
    """The pages a property value names: `[[a]]`, `#b`, `#[[c d]]`, and (in `tags::` and `alias::`)
    the comma-separated rest. A value in quotes names none."""
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return []
    found = [m.group(1) or m.group(2) for m in _REF.finditer(value)]
    rest = _REF.sub(",", value)
    found += [part.strip() for part in rest.split(",") if part.strip()]
    return [f.strip() for f in found if f.strip()]


def names(note: Note) -> tuple[str, ...]:
    """(page name, *aliases): the `title::` ("" when there is none: the file name names the page),
    then the `alias::` values."""
    title = ""
    aliases: list[str] = []
    for key, value, _ in page_properties(note):
        if key == "title" and value and not title:
            title = value.strip()
        elif key == "alias":
            aliases += references(value)
    return (title, *aliases) if (title or aliases) else ()


def property_links(note: Note, targets: list[Target], rules: Rules) -> list[Target]:
    """The body's links with those on a page-property line named by their property, plus the plain
    comma-separated pages of `tags::` (Logseq's built-in page references)."""
    props = page_properties(note)
    if not props:
        return targets
    by_line = {line: key for key, _, line in props}
    out = [_named_by(t, by_line[t.line]) if t.line in by_line and t.kind in ("w", "t") and not note.has_frontmatter
           else t for t in targets]
    seen = {(t.line, fold(t.name, rules.case)) for t in out}
    for key, value, line in props:
        if key != "tags":
            continue
        for name in references(value):
            if (line, fold(name, rules.case)) not in seen:
                seen.add((line, fold(name, rules.case)))
                out.append(Target(line, "p", key, name, name))
    return out


def _named_by(t: Target, key: str) -> Target:
    if key == "alias":
        return Target(t.line, t.kind, "alias", t.written, "")  # an alias names this page: no edge
    return Target(t.line, "p" if t.kind == "w" else t.kind, key, t.written, t.name, t.anchor, t.vault)


class Resolver(obsidian.Resolver):
    def __init__(self, rules: Rules, notes: Sequence[str], files: Sequence[str],
                 names: Mapping[str, Sequence[str]] | None = None) -> None:
        super().__init__(rules, notes, files)
        names = names or {}
        self.case = rules.case
        self.pages: dict[str, str] = {}
        for p in sorted(notes):
            own = names.get(p)
            self.pages.setdefault(fold(own[0] if own and own[0] else page_name(p), rules.case), p)
        for p in sorted(f for f in files if is_org_page(f)):  # a page of an Org file: a file, not a node
            self.pages.setdefault(fold(page_name(p), rules.case), p)
        for p in sorted(names):
            for alias in list(names[p])[1:]:
                self.pages.setdefault(fold(alias, rules.case), p)

    def resolve(self, target: Target, source: str) -> Resolution:
        if target.kind in ("w", "e", "p", "t") and target.name:
            hit = self.pages.get(fold(target.name, self.case))
            if hit is not None:
                return Resolution(hit, target.name)
            if not is_attachment_name(target.name):
                return Resolution(None, target.name)  # a page no file holds (yet)
        return super().resolve(target, source)

    def candidates(self, target: Target) -> list[str]:
        """The page `target` names; a name with a `/` that names no page may be a path (`pages/bar`); any other
        name of no page names nothing, as its link does (Logseq makes a new page of it), not the file of that name
        whose `title::` is another."""
        if target.name:
            hit = self.pages.get(fold(target.name, self.case))
            if hit is not None:
                return [hit]
            if target.kind in ("w", "e", "p", "t") and "/" not in target.name \
                    and not is_attachment_name(target.name):
                return []
        return super().candidates(target)

    def missing_code(self, target: Target) -> str:
        """A `[[page]]`, `#tag` or property link that reaches nothing names a page, whatever its extension (W221,
        which `unresolved = false` leaves unreported: an edge to a page without a file); Markdown links name
        files as in Obsidian."""
        if target.kind in ("w", "e", "p", "t"):
            return "W221"
        return super().missing_code(target)


