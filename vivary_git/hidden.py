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

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace

__all__ = ["PrivateNodes", "hidden_ids", "private_paths"]


class PrivateNodes:
    """`query.search(hidden=PrivateNodes(ws))`: tells which of the node IDs it is asked about are private,
    deciding only those (one privacy batch per call, answers remembered), so a search asks about its best
    candidates and their edge targets instead of every note. IDs that are not nodes are not private."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._nodes = {n.id: n for n in ws.graph().nodes}
        self._known: dict[str, bool] = {}

    def __call__(self, ids: Collection[str]) -> frozenset[str]:
        todo = [i for i in ids if i not in self._known and i in self._nodes]
        if todo:
            for node_id, private in zip(todo, _private(self.ws, [self._nodes[i].path for i in todo]), strict=True):
                self._known[node_id] = private
        return frozenset(i for i in ids if self._known.get(i, False))


def hidden_ids(ws: Workspace) -> frozenset[str]:
    """IDs of every node of `ws.graph()` that search must not show. Raises `PrivacyError` (exit 3) when
    privacy cannot be decided, `ConfigError` (exit 2) for an unreadable `.vivary/memory.toml`."""
    graph = ws.graph()
    if not graph.nodes:
        return frozenset()
    verdicts = _private(ws, [n.path for n in graph.nodes])
    return frozenset(n.id for n, private in zip(graph.nodes, verdicts, strict=True) if private)


def private_paths(ws: Workspace, paths: Collection[str]) -> frozenset[str]:
    """Which of the workspace-relative `paths` are private (one privacy batch for all of them): `ci` hides what
    these files hold from everything it prints. Raises `PrivacyError` (exit 3) when privacy cannot be decided."""
    asked = sorted(set(paths))
    if not asked:
        return frozenset()
    return frozenset(p for p, private in zip(asked, _private(ws, asked), strict=True) if private)


def _private(ws: Workspace, paths: Sequence[str]) -> list[bool]:
    """The verdict on each workspace-relative path (the snapshot's decision, or outside Git its part
    that needs no Git)."""
    source = ws.source
    prefix = f"{source.prefix}/" if source.prefix else ""
    asked = [prefix + p for p in paths]
    if source.kind == "folder":
        from vivary_git.privacy import decide_without_git

        return [v.private for v in decide_without_git(source.root, asked)]
    from vivary_git.memory.snapshot import decide_for_source

    return [v.private for v in decide_for_source(ws, asked)]
