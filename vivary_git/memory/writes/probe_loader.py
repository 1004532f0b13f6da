"""The similarity probe a workspace's memory config asks for: cosine with the local embedder when the
local memory is enabled and its extra installed, else exact text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from vivary_git.memory.writes.probe import Probe

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder
    from vivary_git.memory.writes.remember import View

__all__ = ["probe_for"]


def probe_for(view: View) -> Probe:
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
            return _load_embedder(cfg.memory.local.model, optimize=False)
        except EmbedderError:
            return None  # no extra: exact matching, and the answer says so

    return Probe(threshold, load, repo.vivary_dir if repo is not None else None)
