"""Dialect name -> its module's `read` and `Resolver`; every link of a document as its dialect reads it."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import msgspec

from vivary_git.dialects import Resolver, Rules, Target, dendron, foam, logseq, obsidian, vivary
from vivary_git.models import Link, Note

Reader = Callable[[Link, Rules, str], Target | None]

_READERS: dict[str, Reader] = {
    "obsidian": obsidian.read, "dendron": dendron.read, "foam": foam.read, "logseq": logseq.read,
    "vivary": vivary.read,
}


def reader(dialect: str) -> Reader:
    return _READERS[dialect]


def make_resolver(rules: Rules, notes: Sequence[str], files: Sequence[str],
                  ids: Callable[[], dict[str, str]], names: Mapping[str, Sequence[str]] | None = None) -> Resolver:
    if rules.dialect == "vivary":
        return vivary.resolver(rules, notes, files, ids)
    if rules.dialect == "logseq":
        return logseq.Resolver(rules, notes, files, names)
    cls = {"dendron": dendron.Resolver, "foam": foam.Resolver}.get(rules.dialect, obsidian.Resolver)
    return cls(rules, notes, files)


def page_names(note: Note, rules: Rules) -> tuple[str, ...]:
    """The names a document answers to besides its path, where its dialect has such names (Logseq:
    `title::` or "", then `alias::` values); empty elsewhere."""
    return logseq.names(note) if rules.dialect == "logseq" else ()


def read_links(note: Note, rules: Rules, field: str, wikilinks: bool) -> list[Target]:
    """Every link a document writes, as its dialect reads it (placeholders and URLs left out)."""
    read = reader(rules.dialect)
    out: list[Target] = []
    links: Sequence[Link] = note.links
    if rules.dialect == "logseq" and "#+" in note.body:
        blocks = logseq.verbatim_lines(links)
        if blocks:
            links = [x for x in links if not any(first <= x.line <= last for first, last in blocks)]
    for link in links:
        if link.kind == "t":  # `#name`: a link to the page `name` where the dialect says so
            if link.text.startswith("+"):
                continue  # `#+BEGIN_NOTE`, `#+title:`: Org-mode's block and keyword lines, not tags
            if rules.tags and wikilinks:
                t = read(Link(link.text, link.line, "w"), rules, field)
                if t is not None:
                    out.append(msgspec.structs.replace(t, kind="t"))
            continue
        if link.kind in ("w", "e"):
            if not wikilinks:
                continue
        elif not rules.markdown:
            continue
        t = read(link, rules, field)
        if t is not None:
            out.append(t)
    if rules.dialect == "logseq":
        out = logseq.property_links(note, out, rules)
    if rules.properties and note.fields:
        for key, value in note.fields.items():
            for text in _property_links(value):
                t = read(Link(text, note.key_lines.get(key, 1), "w"), rules, key)
                if t is not None:
                    out.append(msgspec.structs.replace(t, kind="p"))
    return out


_PROPERTY_LINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")


def _property_links(value: Any, depth: int = 0) -> Iterable[str]:
    """`"[[Japan]]"` (a quoted property value), lists of them, and the unquoted `[[Japan]]` YAML reads
    as a list in a list."""
    if isinstance(value, str):
        if "[[" in value:
            yield from (m.group(1) for m in _PROPERTY_LINK.finditer(value))
    elif isinstance(value, list) and depth < 2:
        if depth == 0 and len(value) == 1 and isinstance(value[0], list) and len(value[0]) == 1 \
                and isinstance(value[0][0], str):
            yield value[0][0]  # `up: [[Japan]]` unquoted
            return
        for item in value:
            if depth == 0 and isinstance(item, list) and len(item) == 1 and isinstance(item[0], list) \
                    and len(item[0]) == 1 and isinstance(item[0][0], str):
                yield item[0][0]  # `- [[Japan]]` unquoted, in a block list (`[[["Japan"]]]` to YAML)
            elif not isinstance(item, list) or depth == 0:
                yield from _property_links(item, depth + 1)
            # else `- [Japan]`: a list holding the word Japan, no link


def resolver(rules: Rules, notes: Sequence[str], files: Sequence[str], ids: Callable[[], dict[str, str]],
             names: Mapping[str, Sequence[str]] | None = None) -> Resolver:
    """The resolver of this dialect over every note path and every other file path of the tree;
    `ids` (id -> path) is asked only by dialects that resolve to ids (the contract's slugs), `names`
    (path -> `page_names`) only by those that name documents by more than their path (Logseq)."""
    return make_resolver(rules, notes, files, ids, names)
