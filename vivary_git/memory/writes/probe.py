"""The similarity probe run before every add: what does the workspace already remember about this?

Every add gets one verdict (`Verdict`), with the matching memories and the evidence:

- `duplicate`: an existing memory makes the same claim; the add is refused with its id;
- `update`: an existing memory is about the same thing but claims otherwise (a negation, another number,
  day, month, name or quantifier, "no longer", or the same sentence with another word in a word's place:
  "purple" for "orange", "slower" for "faster"); the add is refused with "update ID instead", or, asked to supersede,
  added with the old one archived (remember.py);
- `related`: memories about the same subject that say something else; the add goes ahead, linked to them;
- `new`.

With the local memory enabled (`provider = "vivary-local"` and the `embed` extra) each existing memory is
compared by cosine of the embeddings, by the share of content words they have in common and by the values a
contradiction changes (claims.py). A memory is about the same subject at cosine `SUBJECT` or more (or
`SUBJECT_WORDS` with most words shared); it is an update when the two claims differ in a value (a swapped word
counts unless the two words embed at `SYNONYM` or more), else a duplicate at `[memory.remember] similarity`
(default 0.75) with most words shared, or at `SURE`, or at `SAME_VALUES` with most words and the same numbers, days
and months or with the same content words both ways, never when each gives a value in digits (or a day or month) the
other does not; related at `RELATED` or more. The thresholds were set on half
of a labelled set of pairs and measured on the other half (tests/data/probe_pairs.jsonl), and the probe
is measured on a held-out set written before its last change (tests/data/probe_holdout*.jsonl, the newest one;
bench/bench_probe.py, docs/remember.md). The closest memory that is the same claim or changes one of its
values decides between `duplicate` and `update`. Memory texts' vectors are cached by text digest, model and build
(`build`: the graph-optimised and the unoptimised model give vectors ~2e-7 apart, and a cache read by both would
mix them), in this process and under `.git/vivary/probe-vN/` (public memories only: the candidates come from the
privacy-filtered snapshot). Without an embedder, the same normalised text (case, punctuation and spacing
ignored) is a duplicate, and shared words with a changed value an update.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.escape import text as shown
from vivary_git.localcache import cache_folder, write_atomic
from vivary_git.memory.writes.claims import Claim, mismatches, overlap
from vivary_git.models import Note
from vivary_git.safeio import FileRefused, read_regular

if TYPE_CHECKING:
    from vivary_git.memory.local.embed import Embedder

__all__ = ["Candidate", "Duplicate", "Match", "Probe", "Verdict", "build", "memory_text", "normalise"]

_WORDS = re.compile(r"[^\w]+")
_FORMAT = 2  # 2: keyed by the model's build too (`build`); version 1's files hold the unoptimised build's vectors
_SHOWN = 2000  # characters of a matching memory's text put in the answer
_SPANS = 4096  # swapped spans' vectors kept in a process before the cache starts again
_SAID: set[str] = set()  # the cache files said to be left off, once per process (`Probe._leave_off`)
# Cosine at or above which two memories are about the same subject (an update when their values differ);
# with at least `SAME_WORDS` of the shorter one's content words shared, `SUBJECT_WORDS` is enough.
SUBJECT = 0.72
SUBJECT_WORDS = 0.55
SAME_WORDS = 0.6
# A duplicate is at the configured cosine (`[memory.remember] similarity`) with `SAME_WORDS` of the words shared,
# or at `SURE` whatever the words ("The survey tablets need a charging cable" is not "Survey tablets must be
# charged": 0.76, with 4 of 7 words in common).
SURE = 0.83
# Below the duplicate cosine, two texts with most words in common that give the same numbers, days and months (at
# least one) make the same claim from this cosine up ("Twelve people have confirmed for Ayşe's fortieth" / "12
# guests have said yes to Ayşe's 40th": 0.74), and so do two texts with the same content words both ways, which
# nothing tells apart ("All the windows at the depot are double-glazed" / "Every window at the depot has double
# glazing": 0.70).
SAME_VALUES = 0.65
RELATED = 0.45  # cosine at or above which a memory is related: linked to the new one
# Cosine of two swapped spans' embeddings at or above which they mean the same ("buy" / "purchase" 0.87,
# "car" / "automobile" 0.86), so the swap is a paraphrase's, not a changed claim. High, because a word and its
# opposite embed close too ("cheap" / "expensive" 0.80, "blue" / "green" 0.69, "must" / "need" only 0.49).
SYNONYM = 0.85
# Without an embedder: the share of content words at or above which two memories are about the same subject,
# and related.
WORDS_SUBJECT = 0.7
WORDS_RELATED = 0.4
MAX_RELATED = 3  # related memories linked to a new one
MAX_SHOWN = 5  # matches put in an answer


class Candidate(msgspec.Struct, frozen=True):
    id: str
    path: str
    title: str
    text: str  # the memory's text: its body without the leading `# title`


class Match(msgspec.Struct, frozen=True, omit_defaults=True):
    """An existing memory the probe found, and why."""

    id: str
    path: str
    title: str
    text: str
    score: float  # cosine, or 1.0 for an exact match, or the share of words in common without an embedder
    method: str  # "cosine" | "exact" | "words"
    words: float = 0.0  # the share of the shorter text's content words the other has
    evidence: list[str] = []  # what the two claim differently (an update's reasons)


Duplicate = Match  # the name `Remembered.duplicate` has always had


class Verdict(msgspec.Struct, frozen=True):
    verdict: str  # "duplicate" | "update" | "related" | "new"
    method: str  # "cosine" | "exact": how memories were compared
    matches: list[Match]  # best first: the duplicate or the memory to update first, then the related ones

    @property
    def top(self) -> Match | None:
        return self.matches[0] if self.matches else None


def normalise(text: str) -> str:
    return _WORDS.sub(" ", text.casefold()).strip()


def memory_text(note: Note) -> str:
    """A memory's text: the body without its leading `# title` line (the title when that is all)."""
    body = note.body.lstrip("\n")
    first, _, rest = body.partition("\n")
    if first.startswith("# "):
        return rest.strip() or first[2:].strip()  # a one-line memory is only its title
    return body.strip()


def build(embedder: Embedder) -> str:
    """What the cached vectors of `embedder` are keyed by: the model and its build (embed.py `load_embedder`'s
    `optimize`; `runtime.BUILDS` decides which a product path loads)."""
    return f"{embedder.model_id} {'optimised' if getattr(embedder, 'optimized', True) else 'unoptimised'}"


class _Vectors(msgspec.Struct):
    format: int
    model: str  # `build`
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
        self._folder: Path | None = None  # the cache's folder, once looked at (`_looked`); None: none may be written
        self._looked = False
        self._cache: _Vectors | None = None
        self._dirty = False
        self._lock = threading.Lock()
        self._spans: dict[str, Any] = {}  # swapped spans' vectors, in this process only (at most `_SPANS`)

    @property
    def method(self) -> str:
        return "cosine" if self._get_embedder() is not None else "exact"

    @property
    def loaded(self) -> Embedder | None:
        """The model this probe has loaded, if it has (never loads one): a CLI write hands it on to the
        write-through of the semantic index, which then loads no second copy."""
        return self._embedder

    def _get_embedder(self) -> Embedder | None:
        if not self._loaded:
            self._embedder = self._load() if self._load is not None else None
            self._loaded = True
        return self._embedder

    def check(self, text: str, candidates: Sequence[Candidate]) -> Verdict:
        """The verdict on adding `text` beside `candidates` (the existing memories)."""
        wanted = normalise(text)
        for c in candidates:
            if normalise(c.text) == wanted:
                return Verdict("duplicate", self.method, [_match(c, 1.0, "exact", 1.0, [])])
        embedder = self._get_embedder()
        if not candidates:
            return Verdict("new", "cosine" if embedder is not None else "exact", [])
        claim = Claim.of(text)
        if embedder is None:
            return _decide(claim, candidates, None, "exact", self.threshold)
        with self._lock:
            vectors = self._vectors(embedder, [c.text for c in candidates])
            query = embedder.embed([text])[0]
            scores = vectors @ query
            self._save()
        return _decide(claim, candidates, [float(x) for x in scores], "cosine", self.threshold,
                       lambda a, b: self._same_sense(embedder, a, b))

    def _same_sense(self, embedder: Embedder, a: str, b: str) -> bool:
        """Do two swapped spans of words mean the same: the cosine of their embeddings at `SYNONYM` or more."""
        with self._lock:
            missing = [t for t in dict.fromkeys((a, b)) if t not in self._spans]
            if missing:
                if len(self._spans) > _SPANS:
                    self._spans.clear()
                    missing = list(dict.fromkeys((a, b)))  # the one already kept went with the rest
                self._spans.update(zip(missing, embedder.embed(missing), strict=True))
            return float(self._spans[a] @ self._spans[b]) >= SYNONYM

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

        cache = self._loaded_cache(build(embedder))
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
        raw: bytes | None = None
        if path is not None:
            try:  # a regular file only, its link not followed: a FIFO put there must not block the add
                raw = read_regular(path, None, follow_symlinks=False)
            except FileRefused as err:
                self._leave_off(f"{path} {err}")
            except OSError:
                pass  # none yet (or unreadable): embedded again, and written when it can be
        if raw is not None:
            try:
                found = msgspec.msgpack.decode(raw, type=_Vectors)
            except (msgspec.DecodeError, msgspec.ValidationError):
                found = None
            if found is not None and (found.format != _FORMAT or found.model != model):
                found = None
        self._cache = found or _Vectors(_FORMAT, model, {})
        return self._cache

    def _leave_off(self, what: str) -> None:
        """The cache is optional: with something other than a file of ours in its place (a symbolic link, a FIFO, a
        folder) it is neither read nor written by this probe, said once a process, as `cache_folder` says it."""
        self._folder = None
        if what not in _SAID:
            _SAID.add(what)
            print(f"vivary: the probe's vector cache {shown(what)}; continuing without it (remove it to have it "
                  "rebuilt)", file=sys.stderr)

    def _path(self, model: str) -> Path | None:
        if not self._looked:
            # Where `.git/vivary` may be written, as for every cache there (localcache.py, derived.py); else none.
            self._folder = cache_folder(self._dir, f"probe-v{_FORMAT}")
            self._looked = True
        if self._folder is None:
            return None
        return self._folder / (hashlib.sha256(model.encode()).hexdigest()[:16] + ".msgpack")

    def _save(self) -> None:
        if not self._dirty or self._cache is None:
            return
        path = self._path(self._cache.model)
        self._dirty = False
        if path is None:
            return
        with contextlib.suppress(OSError):  # a cache: the next probe embeds again
            write_atomic(path, msgspec.msgpack.encode(self._cache))  # a new file renamed in place: no link followed


def _match(c: Candidate, score: float, method: str, words: float, evidence: list[str]) -> Match:
    return Match(c.id, c.path, c.title, c.text[:_SHOWN], round(score, 4), method, round(words, 4), evidence)


def _same_values(a: Claim, b: Claim) -> bool:
    values = a.numbers | a.when
    return bool(values) and values == b.numbers | b.when


def _other_values(a: Claim, b: Claim) -> bool:
    """Does each text give a value the other does not, in digits or by a day's or month's name: values of
    different things ("due on 28 April" / "between 2,500 and 3,000 words", "every Sunday" / "since 1998"), which
    `mismatches` leaves alone as no one slot changed, and no paraphrase of one claim gives. A number in words is
    left out: it may be a value the other writes in digits ("two in the afternoon" / "2pm")."""
    said = a.numbers | a.when, b.numbers | b.when
    return bool((a.digits | a.when) - said[1]) and bool((b.digits | b.when) - said[0])


def _same_words(a: Claim, b: Claim) -> bool:
    """The same content words, numbers, days and months, both ways ("All the windows are double-glazed" / "Every
    window has double glazing")."""
    return a.words | a.numbers | a.when == b.words | b.numbers | b.when


def _decide(claim: Claim, candidates: Sequence[Candidate], scores: list[float] | None, method: str,
            threshold: float, same_sense: Callable[[str, str], bool] | None = None) -> Verdict:
    """Each candidate's verdict, then the add's: a duplicate over an update over related ones, the closest
    first. `threshold`: the cosine of a duplicate. `scores` None: no embedder, the share of words in common
    stands in for the cosine. `same_sense`: do two swapped spans mean the same (claims.mismatches)."""

    found: dict[str, list[tuple[float, Match]]] = {"duplicate": [], "update": [], "related": []}
    for i, c in enumerate(candidates):
        cosine = scores[i] if scores is not None else None
        if cosine is not None and cosine < RELATED:
            continue  # far apart: no need to read its words
        other = Claim.of(c.text)
        words = overlap(other, claim)
        if cosine is None:
            if words < WORDS_RELATED:
                continue
            subject, score, how = words >= WORDS_SUBJECT, words, "words"
            same = False  # without a model only the same text is the same claim
        else:
            subject = cosine >= SUBJECT or (cosine >= SUBJECT_WORDS and words >= SAME_WORDS)
            score, how = cosine, "cosine"
            same = ((cosine >= threshold and (words >= SAME_WORDS or cosine >= SURE)) or
                    (cosine >= SAME_VALUES and words >= SAME_WORDS and _same_values(other, claim)) or
                    (cosine >= SAME_VALUES and _same_words(other, claim))) and not _other_values(other, claim)
        evidence = mismatches(other, claim, same_sense) if subject else []
        if evidence:
            found["update"].append((score, _match(c, score, how, words, evidence)))
        elif same:
            found["duplicate"].append((score, _match(c, score, how, words, [])))
        else:
            found["related"].append((score, _match(c, score, how, words, [])))
    # The closest memory that is the same claim or another claim about the same thing decides: a text that
    # changes a value of the memory it is closest to is that memory's update, even when a farther memory of
    # the same subject embeds close enough to pass for a duplicate. A tie is a duplicate.
    closest = {v: max((sm[0] for sm in found[v]), default=-1.0) for v in ("duplicate", "update")}
    for verdict in sorted(("duplicate", "update"), key=lambda v: (-closest[v], v)):
        if found[verdict]:
            best = sorted(found[verdict], key=lambda sm: (-sm[0], sm[1].id))
            others = sorted(found["related"] + found["update"] + found["duplicate"], key=lambda sm: (-sm[0], sm[1].id))
            rest = [m for _, m in others if m.id != best[0][1].id]
            return Verdict(verdict, method, [best[0][1], *rest][:MAX_SHOWN])
    if found["related"]:
        return Verdict("related", method, [m for _, m in sorted(found["related"], key=lambda sm: (-sm[0], sm[1].id))]
                       [:MAX_SHOWN])
    return Verdict("new", method, [])

