"""Which notes search leaves out because the vault's owner excluded them in their editor: Obsidian's
"Excluded files" (`.obsidian/app.json` `userIgnoreFilters`, docs/vaults.md#obsidian-settings).

Obsidian hides such files from search, the graph view and unlinked mentions, and still resolves a link to them.
So here: they stay nodes and link targets (`check` and `graph` are unchanged), and `find`, `query`, `recall` and
the MCP `search` tool leave them out of their answers, unless `.vivary/graph.toml` says `search_excluded = true`.
This is a preference about what is shown, never privacy: an excluded note is as readable as any other (the
MCP `read` tool reads it), and the privacy boundary (`vivary_git/privacy.py`) does not look at it.

An entry is matched as Obsidian matches it: written `/…/` it is a regular expression searched in the note's
path from the vault root; otherwise that path must start with it (`Archive/` is the folder; `Archive` is also
`Archive 2023.md`). Both ignore case (Obsidian compiles each with JavaScript's `i` flag) and compare in Unicode
NFC.
"""

from __future__ import annotations

import functools
import unicodedata
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from vivary_git.config import Config

__all__ = ["excluded_ids", "matcher"]


class _Node(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def path(self) -> str: ...


@functools.lru_cache(maxsize=8)
def matcher(filters: tuple[str, ...]) -> Callable[[str], bool] | None:
    """A predicate over vault-relative paths for these Excluded files entries (None: there are none)."""
    from vivary_git.dialects.obsidian_settings import regex_of

    if not filters:
        return None
    patterns = [regex_of(unicodedata.normalize("NFC", entry)) for entry in filters]

    def excluded(path: str) -> bool:
        path = unicodedata.normalize("NFC", path)
        return any(p.search(path) for p in patterns)

    return excluded


def excluded_ids(config: Config, nodes: Iterable[_Node]) -> frozenset[str]:
    """The ids of `nodes` (graph or memory-snapshot nodes: an id and a workspace-relative path) that the vault's
    Excluded files leave out of search."""
    match = matcher(config.excluded_files)
    if match is None:
        return frozenset()
    return frozenset(n.id for n in nodes if match(n.path))
