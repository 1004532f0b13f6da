"""The links that name a note, rewritten when it moves (as Obsidian's "update internal links on rename" does).

A link is rewritten when it reached the old path and would not reach the new one as it is written: its
target becomes the shortest name that reaches the new path from where the link is written, in the
workspace's dialect (the note's name, then its path without and with the extension for a `[[wikilink]]`
or a property `"[[link]]"`, the id where links name ids; a relative path for a Markdown link), keeping its
`#heading` and its `|shown text`. A ref field holding the old id gets the new one. The moved note's own
links are kept reaching what they reached (a relative Markdown link from a new folder is written anew).
Every rewritten note is parsed again and each of its links resolved again with the workspace's resolver:
when one reaches anything but what it should, the move is refused (a link too unusual to rewrite safely).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from vivary_git.errors import RefusedError
from vivary_git.memory.writes import notefile

if TYPE_CHECKING:
    from vivary_git.config import Config
    from vivary_git.dialects import Resolver, Target
    from vivary_git.graph import Graph

__all__ = ["Renamer", "sources"]


class Renamer:
    """One move, `old` to `new` (workspace-relative paths), over the workspace's graph before it."""

    def __init__(self, graph: Graph, config: Config, old: str, new: str, old_id: str, new_id: str) -> None:
        from vivary_git.dialects import registry

        self.config = config
        self.rules = config.links
        self.old, self.new, self.old_id, self.new_id = old, new, old_id, new_id
        notes = [n.path for n in graph.nodes]
        ids = {n.id: n.path for n in graph.nodes}
        names = dict(graph.page_names)
        self.before: Resolver = registry.resolver(self.rules, notes, graph.others, lambda: ids, names)
        after_ids = {i: p for i, p in ids.items() if i != old_id}
        after_ids[new_id] = new
        after_names = {(new if p == old else p): v for p, v in names.items()}
        self.after: Resolver = registry.resolver(self.rules, [p for p in notes if p != old] + [new], graph.others,
                                                 lambda: after_ids, after_names)
        self._read: Callable[[Any], Target | None] = lambda link: registry.reader(self.rules.dialect)(
            link, self.rules, config.wikilink_field)

    def _targets(self, data: bytes) -> tuple[Any, list[Target]]:
        from vivary_git.dialects import registry
        from vivary_git.parse import parse_blob

        note = parse_blob(data)
        return note, registry.read_links(note, self.rules, self.config.wikilink_field, self.config.wikilinks)

    def rewrite(self, path: str, data: bytes, type_name: str | None) -> bytes:
        """The note at `path` (the moved note: its old path) with its links rewritten; `data` when none is."""
        here = self.new if path == self.old else path
        note, targets = self._targets(data)
        want: list[str | None] = []
        edits: list[tuple[Target, str]] = []
        for t in targets:
            was = self.before.resolve(t, path).path
            goal = self.new if was == self.old else was
            want.append(goal)
            if was is None or self.after.resolve(t, here).path == goal:
                continue
            assert goal is not None
            edits.append((t, self._written(t, goal, here, path)))
        out = _apply(data, edits, path) if edits else data
        out = self._refs(out, note, type_name, path)
        if out is data:
            return data
        _, again = self._targets(out)
        got = [self.after.resolve(t, here).path for t in again]
        if len(got) != len(want) or any(w is not None and g != w for g, w in zip(got, want, strict=True)):
            bad = next((t for t, g, w in zip(again, got, want, strict=False) if w is not None and g != w), None)
            line = f":{bad.line}" if bad is not None else ""
            raise RefusedError(f"{path}{line}: a link there cannot be rewritten safely for the move (it would "
                               "reach another note); edit it by hand, then move again; nothing was committed")
        return out

    def _written(self, t: Target, goal: str, here: str, path: str) -> str:
        """The new text of link `t` (as `Target.written` holds it) so that it reaches `goal` from `here`."""
        from vivary_git.dialects import split_target
        from vivary_git.dialects.obsidian import strip_note_suffix
        from vivary_git.graph import node_id
        from vivary_git.models import Link

        if t.kind in ("m", "i", "r"):
            rel = posixpath.relpath(goal, posixpath.dirname(here) or ".").replace(" ", "%20")
            names = [rel, "/" + goal.replace(" ", "%20")]
            anchor = f"#{t.written.partition('#')[2]}" if "#" in t.written else ""
            options = [n + anchor for n in names]
        elif t.kind in ("w", "e", "p"):
            target, shown = split_target(t.written, self.rules.alias)
            _, hashed, anchor = target.partition("#")
            stem = strip_note_suffix(goal)
            names = [stem.rsplit("/", 1)[-1], stem, goal]
            if "/" in t.name:
                names = [stem, goal, names[0]]
            if self.rules.ids == "slug":
                names.insert(0, node_id(goal, "", "slug"))
            tail = f"{hashed}{anchor}"
            if shown is None:
                options = [f"{n}{tail}" for n in names]
            elif self.rules.alias == "last":
                options = [f"{shown}|{n}{tail}" for n in names]
            else:
                options = [f"{n}{tail}|{shown}" for n in names]
        else:
            options = []
        for text in dict.fromkeys(options):
            got = self._read(Link(text, t.line, "w" if t.kind == "p" else t.kind))
            if got is not None and self.after.resolve(got, here).path == goal:
                return text
        raise RefusedError(f"{path}:{t.line}: the link {notefile.scalar(t.written)} cannot be rewritten to reach "
                           f"{goal}; edit it by hand, then move again; nothing was committed")

    def _refs(self, data: bytes, note: Any, type_name: str | None, path: str) -> bytes:
        """Ref fields (`ref`, `ref-list`) holding the old id, given the new one."""
        if self.old_id == self.new_id:
            return data
        out = data
        for key, value in note.fields.items():
            spec = self.config.field_spec(type_name, key)
            if spec is None or not spec.is_ref:
                continue
            if isinstance(value, str) and value == self.old_id:
                out = notefile.set_field(out, key, self.new_id, what=path)
            elif isinstance(value, list) and self.old_id in value:
                out = notefile.set_field(out, key, [self.new_id if v == self.old_id else v for v in value], what=path)
        return out


def _apply(data: bytes, edits: Sequence[tuple[Target, str]], path: str) -> bytes:
    """`data` with each link's text replaced on its line (a property's: in its key's lines)."""
    bom = b""
    if data.startswith(b"\xef\xbb\xbf"):
        bom, data = data[:3], data[3:]
    lines = data.decode("utf-8").splitlines(keepends=True)
    fences = _frontmatter_end(lines)
    for t, new in edits:
        if t.kind == "p":
            at = next((i for i in range(t.line - 1, fences) if _swap(lines, i, "[[", t.written, "]]", new)), None)
        elif t.kind in ("w", "e"):
            at = t.line - 1 if _swap(lines, t.line - 1, "[[", t.written, "]]", new) else None
        elif t.kind in ("m", "i"):
            at = t.line - 1 if (_swap(lines, t.line - 1, "](<", t.written, ">", new)
                                or _swap(lines, t.line - 1, "](", t.written, "", new)) else None
        else:
            at = t.line - 1 if (_swap(lines, t.line - 1, "]: <", t.written, ">", new)
                                or _swap(lines, t.line - 1, "]:", t.written, "", new, spaced=True)) else None
        if at is None:
            raise RefusedError(f"{path}:{t.line}: the link {notefile.scalar(t.written)} was not found where the "
                               "parser saw it; edit it by hand, then move again; nothing was committed")
    return bom + "".join(lines).encode("utf-8")


def _swap(lines: list[str], i: int, before: str, old: str, after: str, new: str, *, spaced: bool = False) -> bool:
    if not 0 <= i < len(lines):
        return False
    line = lines[i]
    if spaced:
        at = line.find(before)
        rest = line[at + len(before):] if at != -1 else ""
        pad = len(rest) - len(rest.lstrip(" \t"))
        if at == -1 or not rest[pad:].startswith(old + after):
            return False
        start = at + len(before) + pad
        lines[i] = line[:start] + new + line[start + len(old):]
        return True
    needle = before + old + after
    at = line.find(needle)
    if at == -1:
        return False
    lines[i] = line[:at] + before + new + after + line[at + len(needle):]
    return True


def _frontmatter_end(lines: Sequence[str]) -> int:
    if not lines or lines[0].rstrip("\r\n").rstrip() != "---":
        return 0
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r\n").rstrip() in ("---", "..."):
            return i
    return 0


def sources(graph: Graph, admitted: Mapping[str, Any], old_id: str) -> list[str]:
    """Ids of the public nodes with an edge to `old_id` (the moved node itself aside)."""
    return sorted({e.from_ for e in graph.edges if e.to == old_id and not e.broken and e.from_ != old_id
                   and e.from_ in admitted})
