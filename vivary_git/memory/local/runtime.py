"""What the vivary-local provider needs installed, imports ahead and loads: the `embed` extra's runtime.

numpy, hnswlib, onnxruntime and the stemmer are imported inside functions: `git vivary recall` runs in
every agent turn, and the embedder's ~0.3 s model load runs in a thread while the snapshot is built.
`preload_runtime` starts those imports before the workspace is even opened; `_load_embedder` is the one
place the index (index.py), recall (recall.py), the similarity probe (memory/writes/probe_loader.py) and the
MCP server (mcp/warm.py) load the model, and `BUILDS` the one place that decides which build each loads.
"""

from __future__ import annotations

import contextlib
import importlib.util
from typing import TYPE_CHECKING, Literal

from vivary_git.memory.local.embed import INSTALL_HINT, EmbedderError, model_environment, module_present
from vivary_git.parallel import Background

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder

# Modules the provider needs beyond the embedder's own (import name → what `pip` calls it).
_PROVIDER_MODULES = {"hnswlib": "hnswlib", "snowballstemmer": "snowballstemmer"}


def require_extra() -> None:
    """Raise `EmbedderError` (exit 2) naming the extra when a module the provider needs is missing.
    Uses `importlib.util.find_spec`, so nothing heavy is imported to find out."""
    missing = [dist for module, dist in _PROVIDER_MODULES.items() if not module_present(module)]
    if missing:
        raise EmbedderError(f"the local semantic memory needs {', '.join(missing)}; {INSTALL_HINT}")


_PRELOADING: Background[None] | None = None


def preload_runtime() -> None:
    """Start importing the embedding runtime (numpy, onnxruntime, tokenizers, hnswlib: ~0.15 s) in a
    thread, before the workspace is even opened: `recall` calls this first, so the imports overlap
    opening the repository and snapshotting the working tree (whose `git` subprocesses release the
    GIL). Does nothing when the extra is not installed; the model itself loads later, as before."""
    global _PRELOADING
    if _PRELOADING is not None:
        return
    names = ("numpy", "onnxruntime", "tokenizers", "hnswlib")
    if not all(module_present(n) for n in names):
        return

    def load() -> None:
        for name in names:
            try:
                importlib.import_module(name)
            except ImportError:
                return  # said properly where it is used (require_extra, load_embedder)

    model_environment()  # before the thread, which imports tokenizers (see model_environment)
    _PRELOADING = Background(load)


def _wait_for_preload() -> None:
    """Let `preload_runtime`'s imports finish (they are needed next anyway); a failure among them is said
    where the runtime is used, as without the preload."""
    if _PRELOADING is not None:
        with contextlib.suppress(Exception):
            _PRELOADING.result()


Use = Literal["index", "probe", "server", "recall"]
# Which build of the model each use loads (embed.py `load_embedder`'s `optimize`): the graph-optimised one wherever
# a vector is kept or the model is shared, for the two builds' vectors differ by ~2e-7 and a kept vector must be
# the one every other path would have made: an index run (`index --yes`, the post-commit hook), the similarity
# probe of an add (it caches memory texts' vectors under `.git/vivary/probe-vN/`, read by every later add, the MCP
# server's and `dream`'s too), the MCP server (one model for its searches, its write-through and its probe). Only
# `recall` in a process of its own, which embeds a few questions and keeps nothing, loads the unoptimised build:
# ~0.1 s less to load, a fifth of a fresh `recall` on an index (0.42 s, against 0.53 s optimised, on 5,183 notes).
# Its questions' vectors differ from the server's by at most ~1.4e-6 (L2), so a score moves by no more than that:
# two notes would have to lie that close to swap, and on SciFact 8,792 questions ranked the same top 10 with either
# build, semantic and hybrid (docs/recall.md#the-same-answer-as-the-mcp-server; tests/test_model_build.py holds
# recall to the server's ranking on near-duplicate notes).
BUILDS: dict[str, bool] = {"index": True, "probe": True, "server": True, "recall": False}


def _load_embedder(name: str, *, use: Use) -> Embedder:
    """The model `name`, in the build `BUILDS` gives `use`."""
    # numpy is imported here, in the loader's thread, so the main thread does not wait for it.
    import numpy  # noqa: F401

    from vivary_git.memory.local.embed import load_embedder

    return load_embedder(name, optimize=BUILDS[use])
