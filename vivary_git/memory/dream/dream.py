"""Dream: compact recently touched memories into reviewable tasks, resolved as commits (docs/dream.md).

A **run** (`run`) removes expired ephemeral memories (one commit), clusters the memories touched since
the last completed dream with their most similar live memories, and turns each cluster worth
compacting into a **compaction task**: its sources, a prepared digest (the heuristic's summary) and a
prompt for the host agent. Runs and tasks are recorded under `.git/vivary/dream/<workspace>/` (local,
never pushed), each file written whole and renamed into place, so a run killed half-way leaves no
partial record and no commit.

A task is **resolved** (`resolve`) by the host's own title and content, by the extractive heuristic
(`--use-heuristic`, no model) or by an opt-in chat provider: one commit adds a `kind: super_node`
memory that lists its sources in `compacts` and archives the sources (`archived: DATE-TIME`, durable
ones lowered to `working`), with `Vivary-Op: dream` and `Vivary-Task` trailers. `git revert` undoes it.

Clustering (deterministic: no randomness, every tie broken by id):

- text of a memory: its title and body;
- similarity: cosine of the local embedder's vectors when the local memory is enabled
  (`provider = "vivary-local"`) and the `embed` extra is installed, threshold `EMBED_THRESHOLD`;
  otherwise cosine of TF-IDF vectors over the BM25 tokenizer's terms (stop words dropped; Snowball
  stems when the `embed` extra is installed), threshold `LEXICAL_THRESHOLD`; terms in one memory only,
  or in more than half of them, are left out (they relate nothing);
- graph neighbourhood: `LINK_BONUS` when one memory links the other, `SHARED_BONUS` when both link the
  same note (notes linked from more than `HUB` memories are hubs and add nothing);
- clusters: medoids. Among the seeds (memories touched since the last dream) the one with the most
  unclustered neighbours at or above the threshold becomes a cluster with its nearest such neighbours
  (at most `MAX_CLUSTER` in all); repeat while a seed has at least `MIN_CLUSTER - 1` of them.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.config import MEMORY_TYPE
from vivary_git.errors import RefusedError, UsageError
from vivary_git.memory.dream import durability
from vivary_git.memory.dream.accesslog import Due, Log, log_for
from vivary_git.memory.dream.corpus import Mem
from vivary_git.memory.dream.digest import Unreadable
from vivary_git.memory.writes import commits
from vivary_git.memory.writes.surface import arg, call, flag

if TYPE_CHECKING:
    from vivary_git.memory.writes.remember import View

__all__ = ["DreamAnswer", "Kept", "Resolution", "Run", "Task", "TaskSource", "heuristic", "inspect", "resolve", "run"]

MIN_CLUSTER = 3
MAX_CLUSTER = 12
MAX_SEEDS = 2000
EMBED_PAIR = 0.25
EMBED_CENTROID = 0.55
LEXICAL_PAIR = 0.08
LEXICAL_CENTROID = 0.4
LINK_BONUS = 0.15
SHARED_BONUS = 0.1
HUB = 50
SOURCE_TEXT = 2000  # characters of each source's text kept in a task
SUMMARY_CHARS = 900
KEEP_RUNS = 50
TRAILER_TASK = "Vivary-Task"
TRAILER_COMPACTS = "Vivary-Compacts"
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


class TaskSource(msgspec.Struct, frozen=True):
    id: str
    path: str
    title: str
    blob: str
    durability: str
    text: str


class Resolution(msgspec.Struct, frozen=True):
    task: str
    by: str  # "host" | "heuristic" | "chat"
    at: str
    commit: str
    super_node: str
    path: str
    archived: list[str]


class Task(msgspec.Struct, frozen=True):
    id: str
    run: str
    created: str
    method: str  # "embeddings" | "lexical"
    cohesion: float  # mean similarity of the sources to the medoid
    topic: list[str]  # the cluster's most weighted terms
    sources: list[TaskSource]
    digest: str  # the prepared summary (what --use-heuristic would write)
    digest_title: str
    prompt: str
    status: str = "open"  # computed when read, from history: "open" | "resolved" | "stale"
    resolution: Resolution | None = None
    reverted: Resolution | None = None  # a resolution history no longer holds (`git revert`): open again
    reopens: str | None = None  # the reverted resolution's commit this proposal follows (proposed once per revert)


class Kept(msgspec.Struct, frozen=True):
    """An expired memory a run left in place, and why (the fix is in `reason`)."""

    id: str
    path: str  # workspace-relative
    reason: str


class Run(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    started: str
    finished: str
    method: str
    due: str  # the due state it ran in
    considered: int  # live memories
    seeds: int
    tasks: list[Task]
    expired: list[str] = []  # ephemeral memories past their date, removed by this run (in expire_commit)
    expire_commit: str | None = None
    expired_kept: list[Kept] = []  # expired memories left in place (uncommitted, or changed by the user)
    skipped: list[str] = []  # clusters already open as a task (their ids)
    # memories whose frontmatter could not be read, left alone (neither compacted nor expired): where, never what
    unreadable: list[Unreadable] = []


class DreamAnswer(msgspec.Struct, frozen=True, omit_defaults=True):
    ok: bool
    action: str  # "run" | "deferred" | "resolve" | "status" | "runs" | "tasks"
    due: Due | None = None
    run: Run | None = None
    tasks: list[Task] | None = None
    runs: list[Run] | None = None
    resolution: Resolution | None = None
    digest: str | None = None  # what happened to MEMORY.md ("written", "unchanged", or why not)
    message: str | None = None
    dream_due: str | None = None
    # memories the digest just written left out because their frontmatter could not be read (`digest`'s own list)
    digest_unreadable: list[Unreadable] | None = None


# --- records ------------------------------------------------------------------------------------


class Records:
    """Runs and resolutions of one workspace, as whole files renamed into place."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.dir = log.dir

    def _write(self, sub: str, name: str, value: Any) -> None:
        if self.dir is None:
            return
        from vivary_git.localcache import write_atomic

        write_atomic(self.dir / sub / f"{name}.json", msgspec.json.encode(value))

    def save_run(self, r: Run) -> None:
        self._write("runs", r.id, r)
        self._prune()

    def save_resolution(self, res: Resolution) -> None:
        self._write("resolved", res.task, res)

    def _files(self, sub: str) -> list[Path]:
        if self.dir is None or not (self.dir / sub).is_dir():
            return []
        return sorted(p for p in (self.dir / sub).iterdir() if p.suffix == ".json" and not p.name.startswith("."))

    def runs(self) -> list[Run]:
        out = []
        for p in self._files("runs"):
            got = _load(p, Run)
            if got is not None:
                out.append(got)
        out.sort(key=lambda r: (r.finished, r.id))
        return out

    def resolution(self, task: str) -> Resolution | None:
        if self.dir is None or not _TASK_ID.match(task):
            return None
        got: Resolution | None = _load(self.dir / "resolved" / f"{task}.json", Resolution)
        return got

    def _prune(self) -> None:
        runs = self._files("runs")
        for p in runs[:-KEEP_RUNS] if len(runs) > KEEP_RUNS else []:
            p.unlink(missing_ok=True)


_TASK_ID = re.compile(r"\At-[0-9a-f]{12}\Z")


def _load(path: Path, kind: type[Any]) -> Any:
    from vivary_git.safeio import read_regular

    try:
        return msgspec.json.decode(read_regular(path, 8 << 20), type=kind)
    except (OSError, ValueError, msgspec.DecodeError, msgspec.ValidationError):
        return None


# --- text ---------------------------------------------------------------------------------------


class _Terms:
    """Terms of a text: the BM25 tokenizer (stems with the embed extra), else folded words without stop words."""

    def __init__(self) -> None:
        self._fn: Callable[[str], list[str]]
        try:
            from vivary_git.memory.local.bm25 import Tokenizer

            self._fn = Tokenizer()
        except ImportError:
            from vivary_git.memory.local.bm25 import STOPWORDS
            from vivary_git.textsearch import fold, words

            self._fn = lambda text: [w for w in words(fold(text)) if len(w) > 1 and w not in STOPWORDS]

    def __call__(self, text: str) -> list[str]:
        return self._fn(text)


def _text(m: Mem) -> str:
    return f"{m.title}\n{m.text}" if m.text and m.text != m.title else m.title


def _tfidf(docs: list[list[str]]) -> tuple[list[dict[str, float]], dict[str, float]]:
    n = len(docs)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    idf = {t: math.log((1 + n) / (1 + c)) + 1.0 for t, c in df.items()}
    vecs = []
    for d in docs:
        tf = Counter(d)
        v = {t: (1.0 + math.log(c)) * idf[t] for t, c in tf.items()}
        norm = math.sqrt(sum(x * x for x in v.values())) or 1.0
        vecs.append({t: x / norm for t, x in v.items()})
    return vecs, idf


def _lexical_sims(docs: list[list[str]], seeds: list[int], vecs: list[dict[str, float]]) -> list[dict[int, float]]:
    """For each seed, cosine of TF-IDF vectors with every other memory sharing an informative term (in at least
    two memories and at most half of them): a pair with no such term in common has no similarity to count."""
    n = len(docs)
    df: Counter[str] = Counter()
    for d in docs:
        df.update(set(d))
    top = max(2, n // 2)
    postings: dict[str, list[tuple[int, float]]] = {}
    for i, v in enumerate(vecs):
        for t, w in v.items():
            if 2 <= df[t] <= top:
                postings.setdefault(t, []).append((i, w))
    try:
        import numpy as np
    except ImportError:
        np = None  # type: ignore[assignment]
    if np is not None and n > 64:
        return _lexical_sims_numpy(np, postings, seeds, vecs, n)
    out = []
    for s in seeds:
        acc: dict[int, float] = {}
        for t, w in vecs[s].items():
            for j, wj in postings.get(t, ()):
                if j != s:
                    acc[j] = acc.get(j, 0.0) + w * wj
        out.append(acc)
    return out


def _lexical_sims_numpy(np: Any, postings: dict[str, list[tuple[int, float]]], seeds: list[int],
                        vecs: list[dict[str, float]], n: int) -> list[dict[int, float]]:
    """The same sums, each seed's row accumulated by numpy (`bincount` over its terms' postings)."""
    arrays = {t: (np.fromiter((j for j, _ in p), dtype=np.int64, count=len(p)),
                  np.fromiter((w for _, w in p), dtype=np.float64, count=len(p))) for t, p in postings.items()}
    out: list[dict[int, float]] = []
    for s in seeds:
        idx, wts = [], []
        for t, w in vecs[s].items():
            got = arrays.get(t)
            if got is not None:
                idx.append(got[0])
                wts.append(got[1] * w)
        if not idx:
            out.append({})
            continue
        row = np.bincount(np.concatenate(idx), weights=np.concatenate(wts), minlength=n)
        row[s] = 0.0
        hit = np.nonzero(row > 0.0)[0]
        out.append(dict(zip(hit.tolist(), row[hit].tolist(), strict=True)))
    return out


def _embed_sims(vectors: Any, seeds: list[int], threshold: float) -> list[dict[int, float]]:
    import numpy as np

    out = []
    block = 256
    for start in range(0, len(seeds), block):
        rows = seeds[start:start + block]
        sims = vectors[rows] @ vectors.T
        for k, s in enumerate(rows):
            row = sims[k]
            idx = np.nonzero(row >= threshold)[0]
            out.append({int(j): float(row[j]) for j in idx.tolist() if int(j) != s})
    return out


# --- clustering ---------------------------------------------------------------------------------


def _graph_bonus(view: View, mems: list[Mem]) -> dict[tuple[int, int], float]:
    index = {m.id: i for i, m in enumerate(mems)}
    bonus: dict[tuple[int, int], float] = {}
    targets: dict[str, list[int]] = {}
    for e in view.snapshot.edges:
        a = index.get(e.source_id)
        if a is None:
            continue
        b = index.get(e.target_id)
        if b is not None and b != a:
            for key in ((a, b), (b, a)):
                bonus[key] = bonus.get(key, 0.0) + LINK_BONUS
        elif b is None:
            targets.setdefault(e.target_id, []).append(a)
    for members in targets.values():
        uniq = sorted(set(members))
        if len(uniq) < 2 or len(uniq) > HUB:
            continue
        for a in uniq:
            for b in uniq:
                if a != b:
                    bonus[(a, b)] = bonus.get((a, b), 0.0) + SHARED_BONUS
    return bonus


class Space:
    """The vectors clustering compares: unit TF-IDF dicts (lexical) or unit embedding rows (a numpy array)."""

    def __init__(self, lexical: list[dict[str, float]] | None = None, dense: Any = None) -> None:
        self.lexical = lexical
        self.dense = dense

    def centroid_cosines(self, members: Sequence[int]) -> list[float]:
        """Cosine of each member with the members' normalised mean."""
        if self.dense is not None:
            import numpy as np

            rows = self.dense[list(members)]
            c = rows.sum(axis=0)
            norm = float(np.linalg.norm(c)) or 1.0
            return [float(x) for x in (rows @ (c / norm)).tolist()]
        assert self.lexical is not None
        acc: dict[str, float] = {}
        for i in members:
            for t, w in self.lexical[i].items():
                acc[t] = acc.get(t, 0.0) + w
        norm = math.sqrt(sum(x * x for x in acc.values())) or 1.0
        return [sum(w * acc.get(t, 0.0) for t, w in self.lexical[i].items()) / norm for i in members]


def _members(space: Space, medoid: int, near: list[tuple[int, float]], taken: set[int], centroid: float,
             bonus: dict[tuple[int, int], float]) -> tuple[list[tuple[int, float]], float]:
    """The cluster a medoid makes now: its free candidates that stay near the centroid (two passes)."""
    group = [medoid, *[j for j, _ in near if j not in taken][: 2 * MAX_CLUSTER]]
    if len(group) < MIN_CLUSTER:
        return [], 0.0
    kept: list[tuple[int, float]] = []
    for _ in range(2):
        cos = space.centroid_cosines(group)
        kept = [(j, x + bonus.get((medoid, j), 0.0)) for j, x in zip(group, cos, strict=True)]
        kept = [(j, x) for j, x in kept if x >= centroid or j == medoid]
        group = [j for j, _ in kept]
        if len(group) < MIN_CLUSTER:
            return [], 0.0
    kept.sort(key=lambda p: (p[0] != medoid, -p[1], p[0]))
    kept = kept[:MAX_CLUSTER]
    return kept, sum(x for _, x in kept) / len(kept)


def cluster(space: Space, sims: list[dict[int, float]], seeds: list[int], pair: float, centroid: float,
            ids: Sequence[str], bonus: dict[tuple[int, int], float] | None = None,
            ) -> list[tuple[int, list[tuple[int, float]]]]:
    """Medoid clusters, [(medoid, [(member, cosine to the centroid), ...] with the medoid first)]: each seed's
    candidates are its neighbours at pair similarity >= `pair`, kept while within `centroid` of their mean;
    the seed whose cluster is biggest (then tightest, then first by id) wins, its members are taken, and
    the rest are re-evaluated lazily. Deterministic."""
    import heapq

    bonus = bonus or {}
    near: dict[int, list[tuple[int, float]]] = {}
    for s, row in zip(seeds, sims, strict=True):
        ranked = sorted(((j, x) for j, x in row.items() if x >= pair), key=lambda p: (-p[1], ids[p[0]]))
        near[s] = ranked[: 4 * MAX_CLUSTER]
    taken: set[int] = set()
    heap: list[tuple[int, float, str, int, int]] = []
    version = 0
    for s in seeds:
        got, mean = _members(space, s, near[s], taken, centroid, bonus)
        if got:
            heap.append((-len(got), -mean, ids[s], s, version))
    heapq.heapify(heap)
    out: list[tuple[int, list[tuple[int, float]]]] = []
    while heap:
        _size, _mean, _, s, seen = heapq.heappop(heap)
        if s in taken:
            continue
        if seen != version:
            got, m = _members(space, s, near[s], taken, centroid, bonus)
            if got:
                heapq.heappush(heap, (-len(got), -m, ids[s], s, version))
            continue
        got, _ = _members(space, s, near[s], taken, centroid, bonus)
        if not got:
            continue
        taken.update(j for j, _ in got)
        out.append((s, got[1:]))
        version += 1
    return out


# --- the heuristic ------------------------------------------------------------------------------


def _sentences(text: str) -> list[str]:
    out = []
    for part in _SENTENCE.split(text):
        s = " ".join(part.strip().lstrip("-*#>").split())
        if len(s) >= 3:
            out.append(s)
    return out


def heuristic(sources: Sequence[TaskSource], terms: Callable[[str], list[str]] | None = None,
              ) -> tuple[str, str, list[str]]:
    """(title, content, topic terms): an extractive summary, a pure function of the sources' texts.

    Each sentence of every source (the title when the text is only that) is scored by the weight of its
    terms in the whole cluster (sum over its distinct terms of the number of sources that use the term,
    divided by the square root of its term count, so long sentences do not win by length); sentences whose
    terms are mostly in a sentence already picked are dropped; the best are kept, up to `SUMMARY_CHARS`
    characters, in the order of the sources and of their sentences. The title names the topic: the three
    words most sources share."""
    tok = terms or _Terms()
    doc_terms = [set(tok(f"{s.title}\n{s.text}")) for s in sources]
    spread: Counter[str] = Counter()
    for d in doc_terms:
        spread.update(d)
    cands = []
    for si, s in enumerate(sources):
        sentences = _sentences(s.text) or [s.title]
        for ki, sent in enumerate(sentences):
            ts = set(tok(sent))
            if not ts:
                continue
            score = sum(spread[t] for t in ts) / math.sqrt(len(ts))
            cands.append((score, si, ki, sent, ts))
    cands.sort(key=lambda c: (-c[0], c[1], c[2]))
    picked: list[tuple[int, int, str, set[str]]] = []
    size = 0
    for _score, si, ki, sent, ts in cands:
        if any(len(ts & p[3]) >= 0.7 * len(ts) for p in picked):
            continue
        if picked and size + len(sent) > SUMMARY_CHARS:
            continue
        picked.append((si, ki, sent, ts))
        size += len(sent) + 3
    picked.sort(key=lambda p: (p[0], p[1]))
    topic = _topic(sources, tok)
    named = ", ".join(topic[:3]) or "related memories"
    title = commits.one_line(f"{named[:1].upper()}{named[1:]}: what {len(sources)} memories say", 160)
    content = "\n".join(f"- {p[2]}" for p in picked) or "\n".join(f"- {s.title}" for s in sources)
    return title, content, topic


def _topic(sources: Sequence[TaskSource], terms: Callable[[str], list[str]]) -> list[str]:
    """The words most sources use, most shared first: counted by stem (`deploy` and `deploys` are one), shown
    as their commonest spelling; stop words, numbers and words of one or two letters left out."""
    from vivary_git.memory.local.bm25 import STOPWORDS
    from vivary_git.textsearch import fold, words

    spread: Counter[str] = Counter()
    spelled: dict[str, Counter[str]] = {}
    for s in sources:
        stems = set()
        for w in words(fold(f"{s.title}\n{s.text}")):
            if len(w) < 3 or w in STOPWORDS or w.isdigit():
                continue
            got = terms(w)
            if not got:
                continue
            stems.add(got[0])
            spelled.setdefault(got[0], Counter())[w] += 1
        spread.update(stems)
    ranked = sorted(spread.items(), key=lambda p: (-p[1], p[0]))
    picked = [t for t, n in ranked if n > 1][:4] or [t for t, _ in ranked][:3]
    return [sorted(spelled[t].items(), key=lambda p: (-p[1], len(p[0]), p[0]))[0][0] for t in picked]


def _prompt(sources: Sequence[TaskSource], task_id: str) -> str:
    return (
        f"These {len(sources)} memories overlap. Write ONE memory that keeps every fact, decision and reason "
        "that is still true (drop repetition and anything they contradict each other on that a later memory "
        "settled), in plain sentences, with a short title. Then resolve the task: the `dream` tool with "
        f"task_id={task_id!r}, title and content (or `git vivary dream --task-id {task_id} --title T --content C`). "
        "The sources are archived, not deleted, and the change is one commit the user can revert. If they "
        "should not be merged, leave the task open."
    )


# --- run ----------------------------------------------------------------------------------------


def _method(view: View) -> tuple[str, Any]:
    """("embeddings", embedding function) when the local memory and the embed extra are there, else lexical."""
    if view.cfg.provider != "vivary-local":
        return "lexical", None
    from vivary_git.memory.writes.probe_loader import probe_for

    probe = probe_for(view)
    if probe.method != "cosine":
        return "lexical", None
    return "embeddings", probe


def _task_id(sources: Sequence[TaskSource]) -> str:
    h = hashlib.sha256(msgspec.json.encode(sorted((s.id, s.blob) for s in sources))).hexdigest()
    return f"t-{h[:12]}"


def _source(m: Mem) -> TaskSource:
    text = m.text if len(m.text) <= SOURCE_TEXT else m.text[:SOURCE_TEXT] + "…"
    return TaskSource(m.id, m.path, m.title, m.blob, durability.tier(m.fields), text)


def status(view: View, *, now: float | None = None) -> Due:
    return log_for(view.ws).due(now)


def run(view: View, *, force: bool = False, now: float | None = None, source: str = "cli",
        write_digest: bool = True) -> DreamAnswer:
    """One dream run: when due (or `force`), remove expired memories and propose compaction tasks."""
    from vivary_git.memory.dream.corpus import from_view

    log = log_for(view.ws)
    records = Records(log)
    due = log.due(now)
    if not due.due and not force:
        return DreamAnswer(ok=True, action="deferred", due=due,
                           message=f"{due.reason} (run with {flag(source, 'force')} to dream now)")
    started = durability.now()
    when = started if now is None else _dt(now)
    mems = from_view(view)
    # A memory whose frontmatter cannot be read has no fields: not "working" (it may be pinned, or expire), so it
    # is neither compacted nor expired, and the run names it (`git vivary check` says what to fix).
    unreadable = [Unreadable(m.path, m.unreadable) for m in mems if m.unreadable]
    mems = [m for m in mems if not m.unreadable]
    expired = [m for m in mems if durability.hidden(m.fields, when) == "expired"]
    expire_commit, gone, kept = _remove_expired(view, expired, source) if expired else (None, set(), [])
    live = [m for m in mems if m.id not in gone and durability.hidden(m.fields, when) is None
            and durability.tier(m.fields) != "pinned" and m.fields.get(durability.KIND) not in durability.ANCHOR_KINDS]
    index = {m.id: i for i, m in enumerate(live)}
    touched = [index[i] for i in log.touched() if i in index][:MAX_SEEDS]
    seeds = sorted(set(touched)) if touched else list(range(min(len(live), MAX_SEEDS)))
    method, probe = _method(view)
    ids = [m.id for m in live]
    tok = _Terms()
    if method == "embeddings":
        vectors = probe.vectors([_text(m) for m in live]) if live else None
        space = Space(dense=vectors)
        sims = _embed_sims(vectors, seeds, EMBED_PAIR) if live else []
        pair, centre = EMBED_PAIR, EMBED_CENTROID
    else:
        docs = [tok(_text(m)) for m in live]
        vecs, _ = _tfidf(docs)
        space = Space(lexical=vecs)
        sims = _lexical_sims(docs, seeds, vecs)
        pair, centre = LEXICAL_PAIR, LEXICAL_CENTROID
    bonus = _graph_bonus(view, live)
    for (a, b), extra in bonus.items():
        row = _row(seeds, a)
        if row is not None:
            sims[row][b] = sims[row].get(b, 0.0) + extra
    clusters = cluster(space, sims, seeds, pair, centre, ids, bonus)
    # A cluster already proposed is skipped while its task is open; one whose resolution was reverted is
    # proposed again, once per reverted resolution (named by its commit: clock seconds cannot order a revert
    # and a run made in the same second).
    proposed: set[str] = set()
    reopened: set[tuple[str, str]] = set()
    for r in records.runs():
        for t in r.tasks:
            proposed.add(t.id)
            if t.reopens:
                reopened.add((t.id, t.reopens))
    now_tasks = {t.id: t for t in tasks(view)}

    def _reverted(tid: str) -> str | None:
        got = now_tasks.get(tid)
        return got.reverted.commit if got is not None and got.reverted is not None else None

    existing = {tid for tid in proposed if (rev := _reverted(tid)) is None or (tid, rev) in reopened}
    # The last run's id is in the hash: two runs of the same memories in the same second are two records.
    last = [r.id for r in records.runs()][-1:]
    suffix = hashlib.sha256(repr((ids, seeds, last)).encode()).hexdigest()[:6]
    run_id = f"r-{started.strftime('%Y%m%dT%H%M%SZ')}-{suffix}"
    found, skipped = [], []
    for medoid, members in clusters:
        group = [live[medoid], *(live[j] for j, _ in members)]
        sources = [_source(m) for m in group]
        tid = _task_id(sources)
        if tid in existing:
            skipped.append(tid)
            continue
        title, content, topic = heuristic(sources, tok)
        cohesion = round(sum(x for _, x in members) / len(members), 4) if members else 1.0
        found.append(Task(id=tid, run=run_id, created=durability.stamp(started), method=method,
                          cohesion=cohesion, topic=topic, sources=sources, digest=content, digest_title=title,
                          prompt=_prompt(sources, tid), reopens=_reverted(tid)))
    finished = durability.now()
    record = Run(id=run_id, started=durability.stamp(started), finished=durability.stamp(finished), method=method,
                 due=due.reason, considered=len(live), seeds=len(seeds), tasks=found,
                 expired=sorted(gone), expire_commit=expire_commit, expired_kept=kept, skipped=skipped,
                 unreadable=unreadable)
    commits._pause("dream-record")
    records.save_run(record)
    log.completed(now)
    digest_state, left_out = _digest(view) if write_digest else (None, None)
    return DreamAnswer(ok=True, action="run", due=log.due(now), run=record, digest=digest_state,
                       digest_unreadable=left_out,
                       message=f"{len(found)} compaction task(s) to resolve" + (
                           f"; left {_memories(len(unreadable), 'unreadable')} alone (see unreadable)"
                           if unreadable else "") + (
                           f"; removed {_memories(len(gone), 'expired')}" if gone else "") + (
                           f"; left {_memories(len(kept), 'expired')} in place (see expired_kept)" if kept else ""))


def _row(seeds: list[int], a: int) -> int | None:
    import bisect

    i = bisect.bisect_left(seeds, a)
    return i if i < len(seeds) and seeds[i] == a else None


def _dt(t: float) -> Any:
    import datetime as dt

    return dt.datetime.fromtimestamp(t, dt.UTC)


def _digest(view: View) -> tuple[str, list[Unreadable] | None]:
    """Regenerate MEMORY.md after a change: its state and the memories it left out as unreadable (as `digest`
    names them); a digest that cannot be written says why (and lists none), and the change stands."""
    from vivary_git.errors import VivaryError
    from vivary_git.memory.dream.corpus import public_memories
    from vivary_git.memory.dream.digest import write as write_digest

    try:
        ws = _fresh(view)
        report = write_digest(ws, view.cfg, public_memories(ws, view.cfg))
        return report.state, report.unreadable
    except VivaryError as err:
        return f"not written: {err}", None


def _fresh(view: View) -> Any:
    """The workspace as it is now (after a commit), on the same source kind."""
    from vivary_git.workspace import open_workspace

    src = view.ws.source
    if src.kind != "worktree":
        return view.ws
    return open_workspace(src.root, root=str(src.root))


def _memories(n: int, what: str) -> str:
    return f"{n} {what} memor{'y' if n == 1 else 'ies'}"


_UNCOMMITTED = "not committed: delete the file, or commit it and the next dream removes it"
_USER_CHANGED = ("has changes of yours that are not committed: commit or stash them and the next dream removes it "
                 "(or give it a later `expires`)")


def _remove_expired(view: View, expired: list[Mem], source: str) -> tuple[str | None, set[str], list[Kept]]:
    """Remove the expired memories in one commit: (the commit, the ids it removed, those left in place and why).
    The counts come from the commit's own changes: a memory the user changed is left alone, and is no removal."""
    kept: list[Kept] = []
    by_path = {view.repo_path(m.path): m for m in expired}

    def plan(base: commits.Base) -> list[commits.Change] | None:
        kept.clear()  # planned again on a new tip: only the last plan's verdicts stand
        out = []
        for path, m in by_path.items():
            if base.entry(path) is None:
                kept.append(Kept(m.id, m.path, _UNCOMMITTED))
            elif base.user_changed(path):
                kept.append(Kept(m.id, m.path, _USER_CHANGED))
            else:
                out.append(commits.Change(path, None))
        return out or None

    def message(changes: list[commits.Change]) -> str:
        subject = commits.one_line(f"vivary: dream removes {_memories(len(changes), 'expired')}", 72)
        trailers = "".join(f"{commits.TRAILER_NODE}: {commits.one_line(by_path[c.path].id, 200)}\n"
                           for c in changes[:50])
        return f"{subject}\n\n{commits.TRAILER_OP}: expire\n{trailers}{commits.TRAILER_SOURCE}: {source}\n"

    result = _commit_many(view, plan, message, write="remove the expired memories from")
    if result is None:
        return None, set(), sorted(kept, key=lambda k: k.id)
    return result.commit, {by_path[p].id for p in result.blobs}, sorted(kept, key=lambda k: k.id)


# --- inspect ------------------------------------------------------------------------------------


_RESOLVED_LOCK = threading.Lock()
_RESOLVED: dict[tuple[str, str], dict[str, Resolution]] = {}
_REVERTS = re.compile(r"This reverts commit ([0-9a-f]{40})")


def resolved_in_history(view: View) -> dict[str, Resolution]:
    """The tasks whose resolution commit the memory branch holds now, by task id: every commit with a
    `Vivary-Task` trailer, less those a `git revert` undid (and a revert of that revert restores). Read from
    Git, so a clone knows what another resolved, and a reverted resolution is no longer one."""
    repo = view.ws.source.repo
    if repo is None:
        return {}
    _, ref, _ = commits.read_from(repo, view.cfg.memory.remember.branch)  # a symbolic ref is not followed
    tip = repo.git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"], check=False)
    head = tip.stdout.decode().strip()
    if tip.returncode != 0 or not head:
        return {}
    key = (str(repo.git_dir), head)
    with _RESOLVED_LOCK:
        got = _RESOLVED.get(key)
    if got is not None:
        return got
    fmt = "%x1f".join(("%H", "%cI", f"%(trailers:key={TRAILER_TASK},valueonly)",
                       f"%(trailers:key={commits.TRAILER_NODE},valueonly,separator=%x1C)",
                       f"%(trailers:key={TRAILER_COMPACTS},valueonly,separator=%x1C)", "%b")) + "%x1e"
    out = repo.git(["log", "-F", f"--grep={TRAILER_TASK}: ", "--grep=This reverts commit ", f"--format={fmt}",
                    "--end-of-options", head]).stdout.decode("utf-8", "replace")
    found: dict[str, Resolution] = {}
    reverts: dict[str, str] = {}
    active: dict[str, bool] = {}

    def set_active(commit: str, on: bool) -> None:
        for _ in range(64):  # a chain of reverts of reverts
            active[commit] = on
            if commit not in reverts:
                return
            commit, on = reverts[commit], not on

    for record in reversed(out.split("\x1e")):
        parts = record.strip("\n").split("\x1f")
        if len(parts) != 6:
            continue
        commit, when, task, nodes, compacts, body = parts
        task = task.strip()
        undoes = _REVERTS.search(body)
        if _TASK_ID.match(task):
            by = re.search(r"\(([a-z]+)\):", body)
            node = nodes.split("\x1c")[0].strip()
            found[commit] = Resolution(task=task, by=by.group(1) if by else "host", at=durability.stamp(
                durability.parse_when(when) or durability.now()), commit=commit, super_node=node,
                path=view.nodes[node].path if node in view.nodes else "",
                archived=[c.strip() for c in compacts.split("\x1c") if c.strip()])
            set_active(commit, True)
        elif undoes is not None:
            reverts[commit] = undoes.group(1)
            set_active(commit, True)
    held = {res.task: res for commit, res in found.items() if active.get(commit)}
    with _RESOLVED_LOCK:
        _RESOLVED.clear()
        _RESOLVED[key] = held
    return held


def _status_of(view: View, records: Records, task: Task, held: dict[str, Resolution]) -> Task:
    res = records.resolution(task.id)
    now = held.get(task.id)
    if now is not None:
        return msgspec.structs.replace(task, status="resolved", resolution=res if res is not None and
                                       res.commit == now.commit else now, reverted=None)
    undone = res if res is not None else task.reverted
    for s in task.sources:
        node = view.nodes.get(s.id)
        if node is None or node.blob != s.blob:
            return msgspec.structs.replace(task, status="stale", resolution=None, reverted=undone)
    return msgspec.structs.replace(task, status="open", resolution=None, reverted=undone)


def tasks(view: View) -> list[Task]:
    """Every recorded task with its status now: open first (newest run first), then resolved, then stale."""
    records = Records(log_for(view.ws))
    held = resolved_in_history(view)
    seen: set[str] = set()
    out = []
    for r in reversed(records.runs()):
        for t in r.tasks:
            if t.id in seen:
                continue
            seen.add(t.id)
            out.append(_status_of(view, records, t, held))
    order = {"open": 0, "resolved": 1, "stale": 2}
    return sorted(out, key=lambda t: order.get(t.status, 3))  # stable: newest run first within a status


def open_tasks(view: View) -> list[Task]:
    return [t for t in tasks(view) if t.status == "open"]


def inspect(view: View, what: str) -> DreamAnswer:
    log = log_for(view.ws)
    if what == "status":
        all_tasks = tasks(view)
        opened = [t for t in all_tasks if t.status == "open"]
        return DreamAnswer(ok=True, action="status", due=log.due(), tasks=opened,
                           message=f"{len(opened)} open task(s); {log.due().reason}")
    if what == "runs":
        return DreamAnswer(ok=True, action="runs", runs=list(reversed(Records(log).runs())))
    if what == "tasks":
        return DreamAnswer(ok=True, action="tasks", tasks=tasks(view))
    raise UsageError(f"--inspect {what!r}: use status, runs or tasks")


# --- resolve ------------------------------------------------------------------------------------


def resolve(view: View, task_id: str, *, title: str | None = None, content: str | None = None,
            use_heuristic: bool = False, use_chat: bool = False, source: str = "cli",
            write_digest: bool = True) -> DreamAnswer:
    """Resolve one task: a super node compacting its sources, and the sources archived, in one commit."""
    from vivary_git.memory.writes import notefile
    from vivary_git.memory.writes.remember import (
        MAX_TEXT,
        MAX_TITLE,
        _check_text,
        _edge_value,
        _FakeNode,
        _folder_for,
        _refuse_private_target,
        _stem,
    )
    from vivary_git.memory.writes.secrets import refuse_secrets

    # Before anything can echo them: a refusal names the field, never the text.
    refuse_secrets([("task id", task_id if isinstance(task_id, str) else None), ("title", title),
                    ("content", content)])
    # Each surface names its own options: the MCP tool has `title`, `content` and `use_heuristic`, and no chat.
    listed = call(source, "dream", inspect="tasks")
    fresh = call(source, "dream", force=True)
    both = f"{arg(source, 'title')} and {arg(source, 'content')}"
    if not isinstance(task_id, str) or not _TASK_ID.match(task_id.strip()):
        raise UsageError(f"task id {task_id!r} is not a dream task id (t- and 12 hex digits, from {listed})")
    task_id = task_id.strip()
    modes = [use_heuristic, use_chat, title is not None or content is not None]
    if sum(bool(m) for m in modes) != 1:
        ways = [f"{both} (your own summary)", flag(source, "use_heuristic")]
        if source == "cli":
            ways.append(flag(source, "use_chat"))
        raise UsageError(f"resolve a task one way: {', '.join(ways[:-1])} or {ways[-1]}")
    if not use_heuristic and not use_chat and (title is None or content is None):
        raise UsageError(f"give both {both} (your compacted memory), or {flag(source, 'use_heuristic')}")
    log = log_for(view.ws)
    records = Records(log)
    found = next((t for t in tasks(view) if t.id == task_id), None)
    if found is None:
        raise UsageError(f"no dream task {task_id!r} (see {listed})")
    if found.status == "resolved":
        done = found.resolution.commit[:12] if found.resolution else "?"
        raise RefusedError(f"task {task_id} is already resolved (commit {done}); nothing was written")
    if found.status == "stale":
        raise RefusedError(f"task {task_id} is stale: one of its memories changed or is gone since the run that "
                           f"proposed it; run {fresh} for a fresh task; nothing was written")
    by = "host"
    if use_heuristic:
        title, content, _ = heuristic(found.sources)
        by = "heuristic"
    elif use_chat:
        from vivary_git.memory.dream.chat import APPROVE_KEY, summarise

        repo = view.ws.source.repo
        said = repo.git(["config", "--get-all", APPROVE_KEY], check=False) if repo is not None else None
        approved = said.stdout.decode("utf-8", "replace").splitlines() if said is not None else []
        title, content = summarise(view.cfg, found.prompt, [(s.title, s.text) for s in found.sources], approved)
        by = "chat"
    if title is None or content is None:
        raise UsageError(f"give both {both} (the host's compacted memory)")
    title = " ".join(_check_text(title, "the title", MAX_TITLE).split())
    content = _check_text(content, "the content", MAX_TEXT)
    refuse_secrets([("title", title), ("content", content)])
    folder = _folder_for(view, MEMORY_TYPE)
    stem = _stem(title, view.ws.config.links.ids)
    _refuse_private_target(view, f"{folder}/{stem}.md", source=source)
    stamp = durability.stamp(durability.now())
    fake = _FakeNode(MEMORY_TYPE)
    compacts = [_edge_value(view, fake, durability.COMPACTS, s.id) for s in found.sources]
    tags: Counter[str] = Counter()
    for s in found.sources:
        tags.update(t for t in view.note(view.nodes[s.id]).fields.get("tags") or [] if isinstance(t, str))
    top_tags = [t for t, _ in sorted(tags.items(), key=lambda p: (-p[1], p[0]))][:8]
    writer = {"host": "agent" if source == "agent" else "cli", "heuristic": "dream", "chat": "dream"}[by]
    fields: list[tuple[str, Any]] = [("type", MEMORY_TYPE), ("title", title)]
    if "title" in view.ws.config.derive:
        fields = [("type", MEMORY_TYPE)]
    if top_tags:
        fields.append(("tags", top_tags))
    fields += [("durability", "durable"), (durability.KIND, durability.SUPER_NODE), ("observed_at", stamp),
               ("source", writer), (durability.COMPACTS, compacts)]
    note = notefile.render_note(fields, title, content)
    chosen: dict[str, str] = {}
    from vivary_git.graph import node_id

    def plan(base: commits.Base) -> list[commits.Change] | None:
        changes = []
        for s in found.sources:
            path = view.repo_path(s.path)
            data = base.read(path)
            if data is None:
                raise RefusedError(f"{s.id!r} is not committed on the memory branch (or is gone); task {task_id} "
                                   "cannot be resolved; nothing was written")
            from vivary_git.parse import parse_blob

            entry = base.entry(path)
            if entry is None or entry[0] != s.blob:
                raise RefusedError(f"{s.id!r} changed since task {task_id} was proposed; run {fresh} for a fresh "
                                   "task; nothing was written")
            fields_now = parse_blob(data).fields
            edited = notefile.set_field(data, durability.ARCHIVED, stamp, what=s.path)
            if durability.tier(fields_now) == "durable":
                edited = notefile.set_field(edited, "durability", "working", what=s.path)
            changes.append(commits.Change(path, edited))
        n = 1
        while True:
            name = stem if n == 1 else f"{stem}-{n}"
            path = f"{folder}/{name}.md"
            nid = node_id(path, view.ws.root_name, view.ws.config.links.ids)
            if view.free(path, nid) and not base.taken(view.repo_path(path)):
                chosen.update(path=path, id=nid)
                break
            n += 1
        return [commits.Change(view.repo_path(chosen["path"]), note), *changes]

    def message(changes: list[commits.Change]) -> str:
        subject = commits.one_line(f"vivary: dream {chosen['id']}: compacts {len(found.sources)} memories", 72)
        lines = [subject, "", f"Resolved dream task {task_id} ({by}): {commits.one_line(title, 200)}", "",
                 f"{commits.TRAILER_OP}: dream", f"{commits.TRAILER_NODE}: {commits.one_line(chosen['id'], 200)}",
                 f"{commits.TRAILER_SOURCE}: {writer}", f"{TRAILER_TASK}: {task_id}"]
        lines += [f"{TRAILER_COMPACTS}: {commits.one_line(s.id, 200)}" for s in found.sources[:MAX_CLUSTER]]
        return "\n".join(lines) + "\n"

    result = _commit_many(view, plan, message, write="commit this compaction to")
    if result is None:
        raise RefusedError(f"task {task_id}: nothing to commit")
    res = Resolution(task=task_id, by=by, at=stamp, commit=result.commit, super_node=chosen["id"],
                     path=chosen["path"], archived=[s.id for s in found.sources])
    records.save_resolution(res)
    digest_state, left_out = _digest(view) if write_digest else (None, None)
    return DreamAnswer(ok=True, action="resolve", resolution=res, digest=digest_state, digest_unreadable=left_out,
                       message=f"{chosen['id']} compacts {len(found.sources)} memories (commit {result.commit[:12]})")


def _commit_many(view: View, plan: Callable[[commits.Base], list[commits.Change] | None],
                 make_message: Callable[[list[commits.Change]], str], *, write: str) -> commits.ChangesResult | None:
    repo = view.ws.source.repo
    if repo is None or repo.workdir is None:
        raise RefusedError(f"{view.ws.source.root} is not in a Git work tree: dream changes are commits; run "
                           "`git init`")
    ref, checked_out = commits.target_ref(repo, view.cfg.memory.remember.branch, write=write)
    from vivary_git.memory.writes.remember import check_note

    def checked(base: commits.Base) -> list[commits.Change] | None:
        changes = plan(base)
        for change in changes or ():
            check_note(view, base, change.path, change.content)  # each note it writes, as `remember` does
        return changes

    return commits.commit_changes(repo, ref=ref, checked_out=checked_out, plan=checked, make_message=make_message)
