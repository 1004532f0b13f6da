"""The similarity probe run before every add: is this memory already remembered?

With the local memory enabled (`provider = "vivary-local"` and the `embed` extra), the new text is
embedded and compared by cosine with every existing memory's text; at or above the threshold
(`[memory.remember] similarity`, default 0.92, CognitiveOS's value) the add is blocked. Memory texts'
vectors are cached by text digest and model, in this process and under `.git/vivary/probe-vN/`
(public memories only: the candidates come from the privacy-filtered snapshot). Without an embedder,
an exact match of the normalised text (case, punctuation and spacing ignored) blocks it.
"""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.models import Note

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder

__all__ = ["Candidate", "Duplicate", "Probe", "memory_text", "normalise"]

_WORDS = re.compile(r"[^\w]+")
_FORMAT = 1
_SHOWN = 2000  # characters of a near-duplicate's text put in the answer


class Candidate(msgspec.Struct, frozen=True):
    id: str
    path: str
    title: str
    text: str  # the memory's text: its body without the leading `# title`


class Duplicate(msgspec.Struct, frozen=True):
    id: str
    path: str
    title: str
    text: str
    score: float  # cosine, or 1.0 for an exact match
    method: str  # "cosine" | "exact"


def normalise(text: str) -> str:
    return _WORDS.sub(" ", text.casefold()).strip()


def memory_text(note: Note) -> str:
    """A memory's text: the body without its leading `# title` line (the title when that is all)."""
    body = note.body.lstrip("\n")
    first, _, rest = body.partition("\n")
    if first.startswith("# "):
        return rest.strip() or first[2:].strip()  # a one-line memory is only its title
    return body.strip()


class _Vectors(msgspec.Struct):
    format: int
    model: str
    vectors: dict[str, bytes]  # sha256 of the text -> float32 row


class Probe:
    """One probe per process (the MCP server keeps it warm); `embedder` None means exact matching."""

    def __init__(self, threshold: float, embedder: Callable[[], Embedder | None] | None = None,
                 cache_dir: Path | None = None) -> None:
        self.threshold = threshold
        self._load = embedder
        self._embedder: Embedder | None = None
        self._loaded = False
        self._dir = cache_dir
        self._cache: _Vectors | None = None
        self._dirty = False
        self._lock = threading.Lock()

    @property
    def method(self) -> str:
        return "cosine" if self._get_embedder() is not None else "exact"

    def _get_embedder(self) -> Embedder | None:
        if not self._loaded:
            self._embedder = self._load() if self._load is not None else None
            self._loaded = True
        return self._embedder

    def check(self, text: str, candidates: Sequence[Candidate]) -> Duplicate | None:
        """The closest existing memory at or above the threshold, or None."""
        wanted = normalise(text)
        for c in candidates:
            if normalise(c.text) == wanted:
                return Duplicate(c.id, c.path, c.title, c.text[:_SHOWN], 1.0, "exact")
        embedder = self._get_embedder()
        if embedder is None or not candidates:
            return None
        with self._lock:
            import numpy as np

            vectors = self._vectors(embedder, [c.text for c in candidates])
            query = embedder.embed([text])[0]
            scores = vectors @ query
            best = int(np.argmax(scores))
            score = float(scores[best])
            self._save()
        if score >= self.threshold:
            c = candidates[best]
            return Duplicate(c.id, c.path, c.title, c.text[:_SHOWN], round(score, 4), "cosine")
        return None

    def vectors(self, texts: list[str]) -> Any:
        """Unit vectors of `texts` (cached as the probe's own), or None without an embedder (dream's clustering)."""
        embedder = self._get_embedder()
        if embedder is None:
            return None
        with self._lock:
            got = self._vectors(embedder, texts) if texts else None
            self._save()
        return got

    def _vectors(self, embedder: Embedder, texts: list[str]) -> Any:
        import numpy as np

        cache = self._loaded_cache(embedder.model_id)
        keys = [hashlib.sha256(t.encode("utf-8", "surrogateescape")).hexdigest() for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in cache.vectors}.items())
        if missing:
            got = embedder.embed([t for _, t in missing])
            for (k, _), row in zip(missing, got, strict=True):
                cache.vectors[k] = np.asarray(row, dtype="<f4").tobytes()
            self._dirty = True
        return np.stack([np.frombuffer(cache.vectors[k], dtype="<f4") for k in keys])

    def _loaded_cache(self, model: str) -> _Vectors:
        if self._cache is not None and self._cache.model == model:
            return self._cache
        found: _Vectors | None = None
        path = self._path(model)
        if path is not None and path.is_file():
            try:
                found = msgspec.msgpack.decode(path.read_bytes(), type=_Vectors)
            except (OSError, msgspec.DecodeError, msgspec.ValidationError):
                found = None
            if found is not None and (found.format != _FORMAT or found.model != model):
                found = None
        self._cache = found or _Vectors(_FORMAT, model, {})
        return self._cache

    def _path(self, model: str) -> Path | None:
        if self._dir is None:
            return None
        return self._dir / f"probe-v{_FORMAT}" / (hashlib.sha256(model.encode()).hexdigest()[:16] + ".msgpack")

    def _save(self) -> None:
        if not self._dirty or self._cache is None:
            return
        path = self._path(self._cache.model)
        self._dirty = False
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.name}.{threading.get_ident()}.tmp")
            tmp.write_bytes(msgspec.msgpack.encode(self._cache))
            tmp.replace(path)
        except OSError:
            pass  # a cache: the next probe embeds again
