"""Write-through: a long-lived process that has the model loaded (the MCP server) brings the index on disk up
to its snapshot when only a few notes changed since the index was built, and answers from it at once.

`write_through(memory, embedder)` is `git vivary index --yes` for `memory`'s snapshot with that model: the same
run (provider.py, index.py), so the same files, and a later `git vivary recall` of the same tree finds the index
current; then a `RecallSession` on it, with the same model, and the run's report (what it embedded and dropped:
what the server's answer says). `unindexed(memory)` counts the notes that differ between the tree the index was
built from and the memory's tree: the server writes through only while that is at most `[memory] max_unindexed`,
so a vault changed wholesale outside it (a checkout, a pull) is not embedded inside a search: the answer says so
and names `index --yes`. That count bounds the work; it is not what was embedded (a note whose vectors are cached
is not embedded again).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.local.recall import RecallSession
    from vivary_git.memory.provider import IndexReport

__all__ = ["unindexed", "write_through"]


def unindexed(memory: LocalMemory) -> int | None:
    """Notes added, removed or changed between the tree the index was built from and `memory`'s tree (0 when it
    is the same tree); None when that cannot be told: no index, or a tree that is not in the repository."""
    from vivary_git.source import is_note

    manifest = memory.manifest()
    source = memory.ws.source
    if manifest is None or manifest.tree is None or source.repo is None or source.tree_id is None:
        return None
    if manifest.tree == source.tree_id:
        return 0
    raw = source.repo.repo
    try:
        diff = raw[manifest.tree].diff_to_tree(raw[source.tree_id])  # type: ignore[attr-defined]
    except (KeyError, ValueError, TypeError):
        return None
    return len({f.path for d in diff.deltas for f in (d.old_file, d.new_file) if is_note(f.path)})


def write_through(memory: LocalMemory, embedder: Embedder) -> tuple[RecallSession, IndexReport]:
    """Index `memory`'s snapshot as `git vivary index --yes` would (embedding only what changed, with
    `embedder`), then open it for recall; with the run's report (what was embedded, what was dropped)."""
    report = memory.index(approved=True, embedder=embedder)
    return memory.open(embedder=embedder), report
