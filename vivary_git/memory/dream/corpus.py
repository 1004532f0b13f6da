"""The public memories of a workspace, with their frontmatter and text: what the digest and dream read.

Only memories the privacy boundary admits are read (the same `decide_for_source` as everything else),
asked about the memory notes alone, so a digest of a big vault does not decide privacy for every note.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.config import MEMORY_TYPE

if TYPE_CHECKING:
    from vivary_git.memory.config import MemoryConfig
    from vivary_git.memory.writes.remember import View
    from vivary_git.models import Note
    from vivary_git.workspace import Workspace

__all__ = ["Mem", "from_view", "notes_of", "public_memories"]


class Mem(msgspec.Struct, frozen=True):
    id: str
    path: str  # workspace-relative
    title: str
    blob: str
    fields: dict[str, Any]
    text: str  # the body without its `# title` line
    unreadable: int = 0  # the line of a frontmatter that could not be read (its fields are then empty)


def _mem(id: str, path: str, title: str, blob: str, note: Note) -> Mem:
    from vivary_git.memory.writes.probe import memory_text

    if note.problem is not None:
        return Mem(id, path, title, blob, {}, memory_text(note), unreadable=max(note.problem.line, 1))
    return Mem(id, path, title, blob, note.fields, memory_text(note))


def public_memories(ws: Workspace, cfg: MemoryConfig) -> list[Mem]:
    """Every memory of the workspace's tree that the privacy boundary admits, sorted by id."""
    from vivary_git import escape
    from vivary_git.memory.snapshot import decide_for_source

    graph = ws.graph()
    nodes = [n for n in graph.nodes if n.type == MEMORY_TYPE]
    if not nodes:
        return []
    prefix = f"{ws.source.prefix}/" if ws.source.prefix else ""
    if ws.source.repo is not None and ws.source.repo.workdir is not None:
        verdicts = decide_for_source(ws, [prefix + n.path for n in nodes], cfg.policy())
        nodes = [n for n, v in zip(nodes, verdicts, strict=True) if not v.private]
    notes = ws.notes_for([n.blob for n in nodes])
    out = [_mem(escape.name(n.id), escape.name(n.path), escape.name(n.title), n.blob, notes[n.blob]) for n in nodes]
    out.sort(key=lambda m: m.id)
    return out


def from_view(view: View, nodes: Iterable[Any] | None = None) -> list[Mem]:
    """The memories of a `View` (already privacy-filtered), sorted by id."""
    picked = view.memories() if nodes is None else list(nodes)
    notes = notes_of(view, [n.blob for n in picked])
    out = [_mem(n.id, n.path, n.title, n.blob, notes[n.blob]) for n in picked]
    out.sort(key=lambda m: m.id)
    return out


def notes_of(view: View, blobs: list[str]) -> dict[str, Note]:
    """Parsed notes of these blobs, at once (the parse cache, not one parse each); a blob this process
    committed after the view's tree was read is parsed on its own."""
    tree = {n.blob for n in view.ws.graph().nodes}
    out = view.ws.notes_for([b for b in blobs if b in tree])
    for b in blobs:
        if b not in out:
            out[b] = view.note_of(b)
    return out
