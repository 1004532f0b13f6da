"""The semantic-memory provider seam: the records every provider returns and the rules they share.

A provider turns the privacy-filtered snapshot (snapshot.py) into an index and answers recall with
`RecallHit`s: typed leads to nodes of the *current* snapshot, never content. Index and recall each
build their own snapshot; the manifest binds an index to the fingerprint of the snapshot it was built
from, and recall refuses when the two differ (a stale index answers about notes that no longer say
what it thinks they say).

This module is imported by the CLI before any provider runs, so it needs only msgspec; the local
provider (local/) imports numpy, hnswlib and the embedder when it works.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol

import msgspec

from vivary_git.dialects import path_matches
from vivary_git.errors import ConfigError, RefusedError, UsageError
from vivary_git.memory.snapshot import LeftOut, MemoryEdge, MemoryNode, MemorySnapshot

if TYPE_CHECKING:
    from vivary_git.memory.config import MemoryConfig
    from vivary_git.memory.state import LocalStateStore
    from vivary_git.workspace import Workspace

__all__ = [
    "EDGE_CONTEXT",
    "INDEX_COMMAND",
    "MAX_K",
    "ForgetReport",
    "IndexReport",
    "RecallFilters",
    "RecallHit",
    "fetch_size",
    "normalise_k",
    "require_local",
    "state_store",
]

MAX_K = 250
EDGE_CONTEXT = 32  # edges per hit, so a hub note cannot flood an agent's context
INDEX_COMMAND = "git vivary index --yes"
RecallMode = Literal["semantic", "hybrid"]


class RecallHit(msgspec.Struct, frozen=True):
    """A lead, not truth: read the file at `path` before acting on it."""

    node_id: str
    type: str | None
    path: str
    score: float
    reason: str
    source: str  # "provider": the hit came from provider state, as the contract labels it
    edge_context: list[MemoryEdge]
    provider: str


class IndexReport(msgspec.Struct, frozen=True):
    """`index --dry-run` and `index --yes` share this shape (the contract's keys first)."""

    ok: bool
    provider: str
    dataset: str
    dry_run: bool
    indexed: int  # nodes in the index after this run (0 in a dry run)
    would_index: int
    edges: int
    private: int
    fingerprint: str
    enabled: bool
    embedded: int = 0  # packets embedded this run: the incremental cost
    reused: int = 0  # packets whose vectors came from a cache (`fetched`, `borrowed` of them: below)
    removed: int = 0  # nodes dropped from the index since the last run
    rebuilt: bool = False  # the HNSW graph was built from scratch rather than updated
    unchanged: bool = False  # the index already matched the snapshot; nothing was written
    state: str = ""  # where the state lives
    seconds: float = 0.0
    fetched: int = 0  # vectors taken from the shared cache (refs/vivary/cache) instead of embedded
    # vectors taken from this repository's other local indexes (a moved or copied folder, another work tree)
    borrowed: int = 0
    recorded: int = 0  # vectors this run added to refs/vivary/cache
    left_out: list[LeftOut] = []  # public notes not indexed because another note has their id (E130)


class ForgetReport(msgspec.Struct, frozen=True):
    ok: bool
    provider: str
    dataset: str
    removed: bool  # whether there was any state to remove
    state: str


class RecallFilters(msgspec.Struct, frozen=True):
    """type / path / edge filters, as `query` has them; applied after recall, on the snapshot's own edges."""

    types: list[str] = []
    paths: list[str] = []
    edges: list[str] = []

    @property
    def active(self) -> bool:
        return bool(self.types or self.paths or self.edges)

    def keep(self, node: MemoryNode, outbound: Sequence[MemoryEdge]) -> bool:
        if self.types and (node.type or "") not in self.types:
            return False
        if self.paths and not path_matches(node.path, self.paths):
            return False
        for spec in self.edges:
            field, _, target = spec.partition(":")
            field, target = field.strip(), target.strip()
            if not any((not field or e.field == field) and (not target or e.target_id == target) for e in outbound):
                return False
        return True


def normalise_k(k: int) -> int:
    """k ≥ 1, capped at `MAX_K` (the contract's bound on what one recall may return)."""
    if k < 1:
        raise UsageError(f"--k must be at least 1 (got {k})")
    return min(k, MAX_K)


def fetch_size(k: int, filtered: bool) -> int:
    """How many candidates to take before filters: filters drop some, so fetch more (the contract's rule)."""
    return min(max(5 * k, k + 20, 50), MAX_K) if filtered else k


def require_local(cfg: MemoryConfig, what: str) -> None:
    """Refuse (exit 2) unless `.vivary/memory.toml` enables the vivary-local provider."""
    if cfg.provider == "vivary-local":
        return
    where = cfg.source or ".vivary/memory.toml"
    if cfg.provider == "cognee":
        raise ConfigError(
            f"{where}: provider = \"cognee\" is served by the Cognee provider (memory/cognee.py, which "
            f"`git vivary {what}` uses), not by vivary-local"
        )
    there, clear = cfg.in_the_way_fix()
    if there:
        raise ConfigError(
            f"semantic memory is disabled ({there}); to enable the local provider, {clear}write [memory] enabled = "
            f"true and provider = \"vivary-local\" in {cfg.path} (docs/memory.md) and run `git vivary index --yes`"
        )
    raise ConfigError(
        f"semantic memory is disabled ({'no ' + where if cfg.source is None else where + ' does not enable it'}); "
        "to enable the local provider, write [memory] enabled = true and provider = \"vivary-local\" in "
        ".vivary/memory.toml (docs/memory.md), then run `git vivary index --yes`"
    )


def state_store(ws: Workspace, cfg: MemoryConfig, dataset: str) -> LocalStateStore:
    """Where the local provider keeps `dataset`: `.git/vivary/memory/<dataset>/` (never in the work tree, never
    pushed), or `<[memory.local] state_path>/<dataset>/` when that is set: a folder in the work tree, used only
    when memory/statefolder.py allows it (Git ignores it and no file in it is tracked, else exit 3), whose
    files are read back only as this machine wrote them."""
    from vivary_git.memory.state import git_dir_store

    configured = cfg.memory.local.state_path
    if configured:
        from vivary_git.memory.statefolder import work_tree_store

        return work_tree_store(ws, configured, "memory.local.state_path").child(dataset)
    repo = ws.source.repo
    if repo is None:
        raise RefusedError(
            f"{ws.source.root} is not in a Git repository: the local memory keeps its state under .git/vivary/ "
            "and decides privacy with Git; run `git init` first"
        )
    return git_dir_store(repo.vivary_dir, dataset)


def outbound_map(snap: MemorySnapshot) -> dict[str, list[MemoryEdge]]:
    out: dict[str, list[MemoryEdge]] = {}
    for e in snap.edges:
        out.setdefault(e.source_id, []).append(e)
    return out


class MemoryProvider(Protocol):
    """What `index`, `recall` and `forget` need from a provider (local/provider.py's `LocalMemory`, cognee.py's
    `CogneeMemory`)."""

    def index(self, *, approved: bool) -> IndexReport: ...

    def recall(self, query: str, *, k: int = 10, filters: RecallFilters | None = None,
               mode: RecallMode = "hybrid") -> list[RecallHit]: ...

    def forget(self, *, approved: bool) -> ForgetReport: ...
