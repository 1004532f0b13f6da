"""Dendron's link rules (docs/vaults.md#dendron).

A note's name is its dotted hierarchy (`dendron.topic.links` is `dendron.topic.links.md`), matched
case-insensitively. In `[[shown|target]]` the target comes *last*. `#heading`, `#^block` (and
`^block`) point inside a note; a wildcard reference (`![[tags.*]]`) names a pattern, not a note.
`dendron://VAULT/target` names another vault: a link into a vault that is not this one points
outside the repository and is not checked. Markdown links are read as Obsidian reads
them (relative to the note, then from the root).

A wikilink that reaches nothing names a note, whatever its last dotted part: `[[deck.key]]`,
`[[proj.data.csv]]` and `![[deck.slides.pdf]]` are hierarchy names, and Dendron's Go to Note creates
them. Dendron's file links are written as the file's path (`[[assets/plan.pdf]]`): a missing one of those is
a missing file as in Obsidian.
"""

from __future__ import annotations

import re

from vivary_git.dialects import Resolution, Rules, Target, obsidian
from vivary_git.models import Link

_VAULT = re.compile(r"^dendron://([^/]*)/")


def read(link: Link, rules: Rules, field: str) -> Target | None:
    if link.kind not in ("w", "e"):
        return obsidian.read_markdown(link, rules, field)
    t = obsidian.read_wikilink(link, rules, field)
    if t is None:
        return None
    m = _VAULT.match(t.name)
    name, vault = (t.name[m.end():], m.group(1)) if m is not None else (t.name, "")
    anchor = t.anchor
    if "^" in name:  # a Dendron name has no `^`: `[[note^block]]` is a block anchor
        name, _, block = name.partition("^")
        anchor = anchor or "^" + block
    if "*" in name:
        return None  # a wildcard note reference (`![[tags.feature.*]]`) names a pattern, not a note
    if not name and not anchor:
        return None
    return Target(t.line, t.kind, t.field, t.written, name.strip(), anchor, vault)


class Resolver(obsidian.Resolver):
    """By hierarchy name anywhere in the vault (a vault in a subfolder too); Markdown links by path.
    A Dendron name has no folders, so Obsidian's name lookup is Dendron's, except that a name is
    the whole file name less `.md`: `[[a.b.md]]` names the note `a.b.md`, which is not `a.b`."""

    def resolve(self, target: Target, source: str) -> Resolution:
        if target.kind in ("w", "e", "p") and target.name.lower().endswith(".md"):
            return Resolution(self.index.nearest(target.name + ".md", source), target.name)
        return super().resolve(target, source)

    def candidates(self, target: Target) -> list[str]:
        if target.name.lower().endswith(".md"):
            return self.index.named(target.name + ".md")
        return super().candidates(target)

    def missing_code(self, target: Target) -> str:
        """A wikilink's (an embed's, a property's) name without a `/` is a hierarchy name: a missing note (W221),
        even when its last part is a file format's extension (`[[deck.key]]`, `[[proj.data.csv]]`). A path and a
        Markdown link name files as in Obsidian."""
        if target.kind in ("w", "e", "p") and "/" not in target.name:
            return "W221"
        return super().missing_code(target)
