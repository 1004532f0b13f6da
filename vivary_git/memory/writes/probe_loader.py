"""The similarity probe a workspace's memory config asks for: cosine with the local embedder when the
local memory is enabled and its extra installed, else exact text. The model is the process's own when it has
one (the MCP server's), else loaded in the build `runtime.BUILDS` gives the probe: the same build either way."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from vivary_git.memory.writes.probe import Probe

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.writes.remember import View

__all__ = ["probe_for"]


def probe_for(view: View, model: Callable[[], Embedder] | None = None) -> Probe:
    """The probe for `view`'s workspace; `model`, when given, loads the process's own model (raising
    `EmbedderError` when it cannot), instead of a model of the probe's own."""
    cfg = view.cfg
    threshold = cfg.memory.remember.similarity
    repo = view.ws.source.repo
    if cfg.provider != "vivary-local":
        return Probe(threshold)

    def load() -> Embedder | None:
        from vivary_git.memory.local.embed import EmbedderError
        from vivary_git.memory.local.runtime import _load_embedder, require_extra

        try:
            require_extra()
            return model() if model is not None else _load_embedder(cfg.memory.local.model, use="probe")
        except EmbedderError:
            return None  # no extra: exact matching, and the answer says so

    return Probe(threshold, load, repo.vivary_dir if repo is not None else None)
