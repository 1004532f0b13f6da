"""A note asked for by its name comes first: the rule `find`, `recall` (every mode), `query --mode
semantic|hybrid` and the MCP server's `search` share (docs/find.md#a-note-asked-for-by-its-name).

A question *names* a note when, compared as an editor compares names, it is the note's title, the name of
its file (without `.md`), its id, or one of its aliases (the frontmatter's `aliases` or `alias`, as Obsidian
keeps them: a list, or a string of names separated by commas). Both sides are compared folded
(`textsearch.fold`: NFKC and case-folded, so `CAFÉ CRÈME`, a
decomposed `é` as macOS writes file names and full-width `Ｃａｆé ｃｒèｍｅ` are `café crème`), with runs of
white space as one space and none at either end.

Ranking by words alone misses such a note, mostly in other scripts: BM25 stems Russian and Greek (`Москва`,
`Москву` and `Москвы` are one term), so a note that mentions a city in three cases outscores the note named
after it; a short title's words are no rarer than anyone's; the embedding model knows little of most scripts,
so a note that is only a name is placed by chance. The names are the user's own handles on their notes: the
notes a question names go first, in the order the ranking gave them, and the rest keep theirs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vivary_git.textsearch import fold

__all__ = ["ALIAS_FIELDS", "Names", "first", "key", "names_of"]

ALIAS_FIELDS = ("aliases", "alias")


def key(text: str) -> str:
    """`text` as names are compared: folded, white space collapsed and trimmed."""
    return " ".join(fold(text).split())


def names_of(id: str, path: str, title: str, fields: Mapping[str, Any]) -> set[str]:
    """The keys a note answers to: its title, its file's name, its id and its aliases (empty ones left out)."""
    stem = path.rpartition("/")[2]
    if stem.lower().endswith(".md"):
        stem = stem[:-3]
    given = [title, stem, id]
    for field in ALIAS_FIELDS:
        value = fields.get(field)
        if isinstance(value, str):
            # Obsidian reads a string here as a list written with commas: `aliases: Big Apple, NYC` is two aliases,
            # both offered by its quick switcher (obsidianmd/obsidian-importer#64); a list's items stay whole.
            given.extend(value.split(","))
        elif isinstance(value, list):
            given.extend(v for v in value if isinstance(v, str))
    return {k for k in map(key, given) if k}


class Names:
    """Which of a list of notes (numbered by position) each name key names."""

    def __init__(self, names: Iterable[Iterable[str]]) -> None:
        self._docs: dict[str, list[int]] = {}
        for doc, keys in enumerate(names):
            for k in keys:
                self._docs.setdefault(k, []).append(doc)

    def named(self, query: str) -> list[int]:
        """The notes `query` names, by number; none for a query of no words."""
        k = key(query)
        return self._docs.get(k, []) if k else []


def first(order: Sequence[int], named: Iterable[int]) -> list[int]:
    """`order` with the `named` notes in it moved to the front, each group keeping its order."""
    lift = set(named)
    return [d for d in order if d in lift] + [d for d in order if d not in lift]
