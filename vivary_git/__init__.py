"""vivary-git: a typed knowledge graph and private semantic memory, derived from Git trees."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vivary_git.version import __version__

if TYPE_CHECKING:
    from vivary_git.workspace import CheckReport, Workspace, open_workspace

__all__ = ["CheckReport", "Workspace", "__version__", "open_workspace"]


def __getattr__(name: str) -> Any:
    # Lazy: `import vivary_git` must stay cheap for hooks that only need one submodule.
    if name in ("open_workspace", "Workspace", "CheckReport"):
        from vivary_git import workspace

        return getattr(workspace, name)
    raise AttributeError(name)
