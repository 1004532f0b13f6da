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

`after_write(ws, loaded)` is the same for a memory written on the command line (`remember`, `edit`, `retire`,
`move`, `refresh`): the write is a commit made without `git commit`, so no post-commit hook indexes it, and without
this a `recall` right after it would refuse the index as stale. It writes through only an index that exists (a
person approved indexing once) and within `max_unindexed`, as the server does, and says what it did.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.local.recall import RecallSession
    from vivary_git.memory.provider import IndexReport
    from vivary_git.workspace import Workspace

__all__ = ["after_write", "unindexed", "write_through"]


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


def after_write(ws: Workspace, loaded: Embedder | None = None) -> str | None:
    """Bring `ws`'s semantic index up to its tree after a memory write on the command line, as the MCP server
    does after its own (`loaded`: the model the write's similarity probe loaded, if any). Returns the line to show
    the user, or None when there is nothing to say (memory not on, or the index already holds this tree)."""
    from vivary_git.errors import VivaryError
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.local.provider import LocalMemory

    cfg = load_memory_config(ws)
    if cfg.provider != "vivary-local":
        return None
    later = "recall finds it after `git vivary index --yes`"
    memory = LocalMemory(ws, cfg)
    if memory.manifest() is None:
        return f"{later} (there is no semantic index yet)"
    count = unindexed(memory)
    limit = cfg.memory.max_unindexed
    if count == 0:
        return None
    if count is None or count > limit:
        many = "the notes" if count is None else f"{count} note(s)"
        return (f"{later}: {many} changed since the index was built, more than [memory] max_unindexed = {limit} "
                "a write embeds itself")
    try:
        report = memory.index(approved=True, embedder=loaded)
    except VivaryError as err:
        return f"{later}: the semantic index could not be brought up to date ({err})"
    return (f"the semantic index is up to date ({report.embedded} note(s) embedded, {report.removed} removed): "
            "recall finds it now")
