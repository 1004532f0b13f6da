"""Which graph nodes a search answer must never show: the ones the privacy boundary keeps private.

`find` and `query` (and the MCP `search` tool, which calls the same code) answer agents: by the house
rule no byte of a private file reaches them, so these nodes are neither results nor edge targets, and
nothing of theirs earns another node a score (`query.search(hidden=…)`). The decision is the memory
snapshot's admission (`memory.snapshot.decide_for_source` → `privacy.decide_scoped`), so search shows
exactly the notes semantic memory may see: the floor at the top and at every workspace root, each
workspace's `private_paths`, Git's ignore rules (a force-added ignored file stays private), sensitive
names. It fails closed: `PrivacyError` (exit 3) when Git cannot decide.

Outside Git (a plain folder) only the rules that need no Git apply, and they are the same code
(`privacy.decide_scoped`'s floor and sensitive names, `privacy.decide_without_git`); a workspace
there whose `.vivary/memory.toml` lists `private_paths` is refused, since only Git matches gitignore
patterns exactly (docs/privacy.md, "Search").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace

__all__ = ["hidden_ids"]


def hidden_ids(ws: Workspace) -> frozenset[str]:
    """IDs of the nodes of `ws.graph()` that search must not show. Raises `PrivacyError` (exit 3) when
    privacy cannot be decided, `ConfigError` (exit 2) for an unreadable `.vivary/memory.toml`."""
    graph = ws.graph()
    if not graph.nodes:
        return frozenset()
    source = ws.source
    prefix = f"{source.prefix}/" if source.prefix else ""
    paths = [prefix + n.path for n in graph.nodes]
    if source.kind == "folder":
        from vivary_git.privacy import decide_without_git

        verdicts = decide_without_git(source.root, paths)
    else:
        from vivary_git.memory.snapshot import decide_for_source

        verdicts = decide_for_source(ws, paths)
    return frozenset(n.id for n, v in zip(graph.nodes, verdicts, strict=True) if v.private)
