"""LoCoMo conversations as memory notes: recall@5/@10 and hit@10 of keyword, semantic and hybrid search.

    python bench/bench_locomo.py [--data /work/shared/bench/locomo] [--dest DIR] [--k 10] [--analyse]
                                 [--date-words] [--context-turns N] [--json OUT]

Every dialog turn of each conversation (`/work/shared/bench/locomo/*.json`, read in place, never copied into
this repository: the dataset is for evaluation only) becomes one note,
`memories/locomo-<conv>/<conv>-D<session>-<turn>.md` (a file name is a note's ID: unique), with frontmatter
`speaker`, `session`, `date` (the session's day, ISO) and `dia_id`, and the turn's text as its body (plus
`[image: <caption>]` when the turn shared a picture). The notes are committed in a Git repository at DIR
(default: a fresh temp dir) with memory enabled, and indexed through the real CLI (`git vivary index --yes`; a
second run on the same DIR embeds nothing). Then every question of categories 1-4 (multi-hop, temporal,
open-domain, single-hop) is asked through the MCP server's `search` tool, with the MCP SDK's own client over
stdio (`git vivary mcp`, as a host starts it), scoped to its conversation (`path:
["memories/locomo-<conv>/*"]`), `top_k` k, `budget` 0, once per mode: keyword (`mode: "text"`), semantic and
hybrid. When the server has no semantic mode, the semantic figures come from `git vivary recall --queries FILE
--mode semantic --path GLOB --k k` (one process per conversation, same scope and k) and the output says so.

Printed: per mode and category, recall@5 and recall@k (the share of a question's evidence turns in the
top 5 / k), hit@k (at least one evidence turn in the top k), the question count and how many answers
came back with fewer than k hits ("short": BM25 returns only notes sharing a word with the question; scoped
hybrid and semantic search rank the scope's own notes, so they are short only when the scope is); search p50
per mode; the load average before and after; a summary line.

`--analyse` also asks deeper questions (`top_k` 50 in every mode: the whole index's best 250 are filtered)
and a second round with expanded queries, and estimates, by post-processing what the product returned (no
product change), what each retrieval idea would gain at k: an exact scoped candidate pool, the fusion's
weights and RRF k, adding the adjacent turns of a hit, a speaker prior, a session-date prior for
questions that name a month or year, and pseudo-relevance query expansion from the notes' own words.
Each estimate is also given leave-one-conversation-out (parameters picked on the other two).
`--date-words` writes the session's date and time as the dataset gives it (`when: 1:56 pm on 8 May, 2023`)
as one more frontmatter field, `--context-turns N` quotes the N turns before and after each turn under
its text: measure each on its own --dest, against a run without it.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

K = 10
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
MODES = ("text", "semantic", "hybrid")
LABEL = {"text": "keyword", "semantic": "semantic", "hybrid": "hybrid"}
FOLDER = "memories"
TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\n'
MEMORY = '[memory]\nenabled = true\nmode = "semantic-provider"\nprovider = "vivary-local"\n'
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}
_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D(\d+):(\d+)")
_PATH = re.compile(r"(?:^|/)locomo-([^/]+)/\1-D(\d+)-(\d+)\.md$")
_WHEN = re.compile(r"(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.I)
MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")


# ---------------------------------------------------------------------------------------------- the data


@dataclass(frozen=True)
class Turn:
    conv: str
    dia_id: str  # "D3:12"
    session: int
    when: str  # the session's date and time as the dataset writes it
    date: dt.date
    speaker: str
    text: str
    caption: str = ""


@dataclass(frozen=True)
class Question:
    conv: str
    number: int  # its place in the conversation's qa list
    text: str
    category: int
    evidence: tuple[str, ...]  # dia_ids of this conversation
    dropped: tuple[str, ...] = ()  # evidence entries that name no turn of the conversation

    @property
    def key(self) -> str:
        return f"{self.conv}/{self.number}"


def parse_when(value: str) -> dt.date:
    """The day of a LoCoMo session stamp, e.g. '1:56 pm on 8 May, 2023' -> 2023-05-08."""
    m = _WHEN.search(value)
    if m is None:
        raise ValueError(f"not a LoCoMo session date: {value!r}")
    return dt.date(int(m.group(6)), MONTHS.index(m.group(5).lower()) + 1, int(m.group(4)))


def parse_evidence(raw: Iterable[str]) -> list[str]:
    """Evidence dia_ids, normalised ('D8:06' -> 'D8:6'); entries that hold several ('D8:6; D9:17') are split."""
    out: list[str] = []
    for item in raw:
        for m in _DIA.finditer(str(item)):
            dia = f"D{int(m.group(1))}:{int(m.group(2))}"
            if dia not in out:
                out.append(dia)
    return out


def turns_of(conv: str, data: Mapping[str, Any]) -> list[Turn]:
    out = []
    for key in sorted((k for k in data if _SESSION.fullmatch(k)), key=lambda k: int(k.split("_")[1])):
        number = int(key.split("_")[1])
        when = str(data[f"{key}_date_time"])
        day = parse_when(when)
        for t in data[key]:
            out.append(Turn(conv=conv, dia_id=str(t["dia_id"]), session=number, when=when, date=day,
                            speaker=str(t["speaker"]), text=str(t["text"]),
                            caption=str(t.get("blip_caption") or "")))
    return out


def questions_of(conv: str, data: Mapping[str, Any], known: set[str]) -> list[Question]:
    out = []
    for number, qa in enumerate(data["qa"]):
        category = int(qa["category"])
        if category not in CATEGORIES:
            continue
        evidence = parse_evidence(qa.get("evidence", []))
        out.append(Question(conv=conv, number=number, text=str(qa["question"]), category=category,
                            evidence=tuple(e for e in evidence if e in known),
                            dropped=tuple(e for e in evidence if e not in known)))
    return out


def load(data_dir: Path) -> tuple[list[Turn], list[Question]]:
    turns: list[Turn] = []
    questions: list[Question] = []
    files = sorted(data_dir.glob("*.json"))
    if not files:
        raise SystemExit(f"{data_dir}: no LoCoMo conversation (*.json) here; give --data DIR")
    for path in files:
        data = json.loads(path.read_text(encoding="utf-8"))
        conv_turns = turns_of(path.stem, data)
        turns += conv_turns
        questions += questions_of(path.stem, data, {t.dia_id for t in conv_turns})
    return turns, questions


def scope(conv: str) -> str:
    return f"{FOLDER}/locomo-{conv}/*"


def note_path(turn: Turn) -> str:
    session, number = turn.dia_id[1:].split(":")
    return f"{FOLDER}/locomo-{turn.conv}/{turn.conv}-D{session}-{number}.md"  # file names are IDs: unique


def dia_of(path: str) -> tuple[str, str] | None:
    """(conversation, dia_id) of a note `note_path` wrote; None for any other path."""
    m = _PATH.search(path)
    return (m.group(1), f"D{m.group(2)}:{m.group(3)}") if m else None


def note_text(turn: Turn, date_words: bool = False, context: Sequence[Turn] = ()) -> str:
    """The note of one turn; `context`: the turns around it, written after it (`--context-turns`)."""
    lines = ["---", f"speaker: {json.dumps(turn.speaker)}", f"session: {turn.session}",
             f"date: {turn.date.isoformat()}", f"dia_id: {json.dumps(turn.dia_id)}"]
    if date_words:
        lines.append(f"when: {json.dumps(turn.when)}")
    body = turn.text.strip()
    if turn.caption:
        body += f"\n\n[image: {turn.caption.strip()}]"
    for other in context:
        body += f"\n\n> {other.speaker}: {other.text.strip()}"
    return "\n".join([*lines, "---", body]) + "\n"


def contexts(turns: Sequence[Turn], reach: int) -> dict[Turn, list[Turn]]:
    """Each turn's `reach` turns before and after it in its session, in order."""
    out: dict[Turn, list[Turn]] = {}
    for i, t in enumerate(turns):
        near = turns[max(0, i - reach):i + reach + 1]
        out[t] = [o for o in near if o is not t and o.conv == t.conv and o.session == t.session]
    return out


# ------------------------------------------------------------------------------------------- the scores


def recall_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return len(set(ranked[:k]) & set(evidence)) / len(evidence) if evidence else 0.0


def hit_at(ranked: Sequence[str], evidence: Sequence[str], k: int) -> float:
    return 1.0 if set(ranked[:k]) & set(evidence) else 0.0


@dataclass
class Scores:
    r5: float
    rk: float
    hit: float
    n: int


def scores(runs: Mapping[str, Sequence[str]], questions: Sequence[Question], k: int) -> Scores:
    asked = [q for q in questions if q.evidence and q.key in runs]
    if not asked:
        return Scores(0.0, 0.0, 0.0, 0)
    return Scores(statistics.fmean(recall_at(runs[q.key], q.evidence, 5) for q in asked),
                  statistics.fmean(recall_at(runs[q.key], q.evidence, k) for q in asked),
                  statistics.fmean(hit_at(runs[q.key], q.evidence, k) for q in asked), len(asked))


def pct(values: Sequence[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))] if ordered else math.nan


# ---------------------------------------------------------------------------------- the product, outside


def env() -> dict[str, str]:
    e = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "GIT_DIR", "GIT_WORK_TREE",
                                                          "GIT_INDEX_FILE")}
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", "")
    for k, v in GIT_ENV.items():
        e.setdefault(k, v)
    return e


def sh(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env(), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])}... failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def materialise(dest: Path, turns: Sequence[Turn], date_words: bool = False, context_turns: int = 0) -> int:
    """Write the vault (or bring an existing one at DEST to exactly these notes); commit; the notes changed."""
    if not (dest / ".git").is_dir():
        dest.mkdir(parents=True, exist_ok=True)
        sh(["git", "init", "-q", "-b", "main"], dest)
    (dest / ".vivary").mkdir(exist_ok=True)
    for rel, text in (("tropo.toml", TROPO), (".vivary/memory.toml", MEMORY)):
        if not (dest / rel).is_file() or (dest / rel).read_text(encoding="utf-8") != text:
            (dest / rel).write_text(text, encoding="utf-8")
    near = contexts(turns, context_turns) if context_turns else {}
    wanted = {note_path(t): note_text(t, date_words, near.get(t, ())) for t in turns}
    for old in (dest / FOLDER).rglob("*.md") if (dest / FOLDER).is_dir() else ():
        if old.relative_to(dest).as_posix() not in wanted:
            old.unlink()
    for rel, text in wanted.items():
        path = dest / rel
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    sh(["git", "add", "-A"], dest)
    changed = sh(["git", "status", "--porcelain"], dest).stdout.splitlines()
    if changed:
        sh(["git", "commit", "-qm", "LoCoMo turns as notes"], dest)
    return len(changed)


def cli_index(dest: Path) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    proc = sh(["git", "vivary", "index", "--yes", "--json"], dest)
    return json.loads(proc.stdout), time.perf_counter() - start


@dataclass
class Hit:
    dia: str
    score: float
    reason: str


@dataclass
class Run:
    """One mode's answers: question key -> hits (dia_ids of its conversation, best first), and timings."""
    mode: str
    k: int
    via: str
    hits: dict[str, list[Hit]] = field(default_factory=dict)
    seconds: list[float] = field(default_factory=list)
    foreign: int = 0  # hits outside the asked conversation (a scope that leaked)

    def ranked(self) -> dict[str, list[str]]:
        return {q: [h.dia for h in hs] for q, hs in self.hits.items()}

    def short(self) -> dict[str, int]:
        return {q: 1 for q, hs in self.hits.items() if len(hs) < self.k}


def _keep(run: Run, q: Question, found: Iterable[tuple[str, float, str]]) -> None:
    hits = []
    for path, score, reason in found:
        got = dia_of(path)
        if got is None or got[0] != q.conv:
            run.foreign += 1
            continue
        hits.append(Hit(got[1], score, reason))
    run.hits[q.key] = hits


async def mcp_runs(dest: Path, questions: Sequence[Question], asks: Sequence[tuple[str, int]],
                   rewrite: Callable[[Question], str] | None = None) -> list[Run]:
    """Ask every question once per (mode, top_k) through one `git vivary mcp` server; a semantic ask the
    server refuses (it has no such mode) is left out of the answer."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"], cwd=str(dest),
                                   env=env())
    # The server logs every refused call (a semantic ask it has no mode for) on stderr: into a file, not here.
    with (dest / ".git" / "bench-locomo-mcp.log").open("a", encoding="utf-8") as log:
        return await _ask_all(Client(stdio_client(params, errlog=log)), questions, asks, rewrite)


async def _ask_all(connect: Any, questions: Sequence[Question], asks: Sequence[tuple[str, int]],
                   rewrite: Callable[[Question], str] | None) -> list[Run]:
    runs = []
    async with connect as client:
        warm = await client.call_tool("search", {"query": "warm up", "top_k": 1})
        assert not warm.is_error, warm.content
        for mode, top_k in asks:
            run = Run(mode, top_k, "MCP search")
            for q in questions:
                args = {"query": rewrite(q) if rewrite else q.text, "mode": mode, "top_k": top_k,
                        "path": [scope(q.conv)], "budget": 0}
                t = time.perf_counter()
                got = await client.call_tool("search", args)
                run.seconds.append(time.perf_counter() - t)
                if got.is_error:
                    text = " ".join(getattr(c, "text", "") for c in got.content)
                    if mode == "semantic" and "mode must be" in text:
                        break
                    raise SystemExit(f"MCP search {args} failed: {text}")
                answer = got.structured_content or {}
                if answer.get("mode") != mode:
                    raise SystemExit(f"MCP search answered in mode {answer.get('mode')!r}, not {mode!r}: "
                                     f"{answer.get('mode_reason')}")
                _keep(run, q, ((r["path"], float(r["score"]), str(r.get("reason", "")))
                               for r in answer.get("results", [])))
            else:
                runs.append(run)
    return runs


def recall_run(dest: Path, questions: Sequence[Question], mode: str, k: int,
               rewrite: Callable[[Question], str] | None = None) -> Run:
    """`git vivary recall --queries` once per conversation, scoped with --path; seconds are per question (the
    process's wall time shared out), so they include the process start and the model load."""
    run = Run(mode, k, "git vivary recall --queries (one process per conversation)")
    for conv in sorted({q.conv for q in questions}):
        asked = [q for q in questions if q.conv == conv]
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as fh:
            for q in asked:
                fh.write(json.dumps({"id": q.key, "query": rewrite(q) if rewrite else q.text}) + "\n")
            name = fh.name
        try:
            start = time.perf_counter()
            proc = sh(["git", "vivary", "recall", "--queries", name, "--k", str(k), "--mode", mode,
                       "--path", scope(conv), "--json"], dest)
            seconds = time.perf_counter() - start
        finally:
            os.unlink(name)
        lines = proc.stdout.splitlines()
        assert len(lines) == len(asked), (len(lines), len(asked))
        for q, line in zip(asked, lines, strict=True):
            answer = json.loads(line)
            assert answer["id"] == q.key, "answers come back in query order"
            _keep(run, q, ((h["path"], float(h["score"]), str(h.get("reason", ""))) for h in answer["hits"]))
            run.seconds.append(seconds / len(asked))
    return run


def ask(dest: Path, questions: Sequence[Question], asks: Sequence[tuple[str, int]],
        rewrite: Callable[[Question], str] | None = None) -> dict[tuple[str, int], Run]:
    """Every (mode, top_k) of `asks` over MCP; semantic through `recall --k top_k` when MCP lacks it."""
    runs = asyncio.run(mcp_runs(dest, questions, asks, rewrite))
    if not any(r.mode == "semantic" for r in runs):
        runs += [recall_run(dest, questions, "semantic", top_k, rewrite) for m, top_k in asks if m == "semantic"]
    return {(r.mode, r.k): r for r in runs}


# ----------------------------------------------------------------------------------------------- report


def table(runs: Mapping[str, Run], questions: Sequence[Question], k: int) -> list[str]:
    lines = [f"| mode | category | R@5 | R@{k} | hit@{k} | questions | short (< {k} hits) |",
             "|---|---|---|---|---|---|---|"]
    for mode, run in runs.items():
        ranked, short = run.ranked(), run.short()
        for cat in [*CATEGORIES, 0]:
            subset = [q for q in questions if cat in (0, q.category)]
            s = scores(ranked, subset, k)
            name = "all" if cat == 0 else f"{cat} {CATEGORIES[cat]}"
            lines.append(f"| {LABEL[mode]} | {name} | {s.r5:.3f} | {s.rk:.3f} | {s.hit:.3f} | {s.n} | "
                         f"{sum(short.get(q.key, 0) for q in subset)} |")
    return lines


# --------------------------------------------------------------------------------------------- analysis


def rrf(lists: Sequence[tuple[Sequence[str], float]], k: float) -> dict[str, float]:
    """Weighted reciprocal rank fusion of ranked lists (each with its weight), ranks from 1."""
    out: dict[str, float] = {}
    for ranked, weight in lists:
        for r, d in enumerate(ranked, 1):
            out[d] = out.get(d, 0.0) + weight / (k + r)
    return out


def order(scored: Mapping[str, float], tie: Sequence[str] = ()) -> list[str]:
    first = {d: i for i, d in enumerate(tie)}
    return sorted(scored, key=lambda d: (-scored[d], first.get(d, 1 << 30), d))


_RANKS = re.compile(r"(vector|keyword) rank (\d+)")


def fused_lists(hits: Sequence[Hit]) -> tuple[list[str], list[str]]:
    """The scoped keyword (BM25) and vector lists behind a hybrid answer, from its reasons: each hit's
    rank in the whole index's lists, kept in that order (their ranks within the scope)."""
    lex: list[tuple[int, str]] = []
    vec: list[tuple[int, str]] = []
    for h in hits:
        for kind, rank in _RANKS.findall(h.reason):
            (vec if kind == "vector" else lex).append((int(rank), h.dia))
    return [d for _, d in sorted(lex)], [d for _, d in sorted(vec)]


def neighbours(dia: str, known: set[str], reach: int = 1) -> list[str]:
    session, number = dia[1:].split(":")
    out = []
    for step in range(1, reach + 1):
        for n in (int(number) - step, int(number) + step):
            d = f"D{session}:{n}"
            if d in known:
                out.append(d)
    return out


def with_neighbours(ranked: Sequence[str], known: set[str], top: int, k: int) -> list[str]:
    """The first `top` hits each followed by its adjacent turns (same session), then the rest, cut at k."""
    out: list[str] = []
    for i, d in enumerate(ranked):
        for x in [d, *(neighbours(d, known) if i < top else [])]:
            if x not in out:
                out.append(x)
    return out[:k]


def smooth(scored: Mapping[str, float], known: set[str], beta: float) -> dict[str, float]:
    """Each turn also takes `beta` x the best score of its adjacent turns (a hit's context)."""
    out = dict(scored)
    for d in list(known):
        best = max((scored.get(n, 0.0) for n in neighbours(d, known)), default=0.0)
        if best:
            out[d] = out.get(d, 0.0) + beta * best
    return out


STOP = frozenset({"a", "about", "above", "after", "again", "against", "all", "also", "am", "amazing", "an", "and",
    "any", "are", "as", "at", "awesome", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "cool", "could", "did", "do", "does", "doing", "down", "during", "each", "few", "for",
    "from", "further", "get", "glad", "good", "got", "great", "had", "has", "have", "having", "he", "her", "here",
    "hers", "herself", "hey", "hi", "him", "himself", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "like", "lot", "love", "me", "more", "most", "much", "my", "myself", "no", "nor", "not", "now",
    "of", "off", "oh", "on", "once", "only", "or", "other", "our", "ours", "ourselves", "out", "over", "own",
    "really", "same", "she", "should", "so", "some", "something", "sounds", "such", "than", "thank", "thanks",
    "that", "the", "their", "theirs", "them", "themselves", "then", "there", "these", "they", "thing", "things",
    "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "wow", "yeah", "yes", "you", "your",
    "yours", "yourself", "yourselves"})
_WORD = re.compile(r"[a-z][a-z'-]{2,}")


def words(text: str) -> list[str]:
    return [w.strip("'-") for w in _WORD.findall(text.lower()) if w.strip("'-") not in STOP]


def expansion(question: str, top_texts: Sequence[str], df: Mapping[str, int], n_docs: int, terms: int) -> list[str]:
    """Pseudo-relevance feedback: the `terms` words of the best hits' text with the highest tf x idf (idf
    over the conversation's notes), leaving out the question's own words."""
    asked = set(words(question))
    tf: Counter[str] = Counter()
    for text in top_texts:
        tf.update(w for w in words(text) if w not in asked)
    ranked = sorted(tf, key=lambda w: (-tf[w] * math.log(1 + n_docs / (1 + df.get(w, 0))), w))
    return ranked[:terms]


def month_years(text: str) -> set[tuple[int | None, int | None]]:
    """(month, year) pairs a question names: 'May 2023' -> (5, 2023); 'in 2022' -> (None, 2022)."""
    low = text.lower()
    years = [int(y) for y in re.findall(r"\b(20\d\d)\b", low)]
    months = [MONTHS.index(m) + 1 for m in re.findall(r"\b(" + "|".join(MONTHS) + r")\b", low)]
    if not months:
        return {(None, y) for y in years}
    return {(m, y) for m in months for y in (years or [None])}


@dataclass
class Deep:
    """The deeper answers `--analyse` collects, beside the k runs."""
    text: Run
    hybrid: Run
    semantic: Run
    expanded: Run  # hybrid, expanded queries
    expanded_terms: dict[str, list[str]]


def analyse(deep: Deep, base: Mapping[str, Run], questions: Sequence[Question], turns: Sequence[Turn],
            k: int) -> list[str]:
    asked = [q for q in questions if q.evidence]
    convs = sorted({q.conv for q in asked})
    known = {c: {t.dia_id for t in turns if t.conv == c} for c in convs}
    turn_of = {(t.conv, t.dia_id): t for t in turns}
    out: list[str] = []

    def score(runs: Mapping[str, Sequence[str]], subset: Sequence[Question] = asked) -> Scores:
        return scores(runs, subset, k)

    def line(name: str, runs: Mapping[str, Sequence[str]], note: str = "") -> None:
        s = score(runs)
        out.append(f"| {name} | {s.r5:.3f} | {s.rk:.3f} | {s.hit:.3f} | {note} |")

    def loco(make: Callable[[Any, Question], list[str]], grid: Sequence[Any]) -> tuple[Any, Scores, Scores]:
        """The grid's best on all questions, and leave-one-conversation-out: pick on two, score the third."""
        def run(p: Any, subset: Sequence[Question]) -> dict[str, list[str]]:
            return {q.key: make(p, q) for q in subset}
        every = {p: run(p, asked) for p in grid}

        def fit(p: Any, subset: Sequence[Question]) -> tuple[float, float]:
            s = score(every[p], subset)
            return s.rk, s.r5
        best = max(grid, key=lambda p: fit(p, asked))
        held: dict[str, list[str]] = {}
        for c in convs:
            pick = max(grid, key=lambda p: fit(p, [q for q in asked if q.conv != c]))
            held.update({q.key: every[pick][q.key] for q in asked if q.conv == c})
        return best, score(every[best]), score(held)

    hyb10 = base["hybrid"].ranked()
    sem10 = base["semantic"].ranked()
    text10 = base["text"].ranked()
    hyb = deep.hybrid.hits
    lists = {key: fused_lists(hs) for key, hs in hyb.items()}
    text_deep = deep.text.ranked()
    sem_deep = deep.semantic.ranked()

    out += [f"| estimate (k = {k}, {len(asked)} questions with evidence) | R@5 | R@{k} | hit@{k} | how |",
            "|---|---|---|---|---|"]
    line("keyword today", text10)
    line("semantic today", sem10)
    line("hybrid today", hyb10, "MCP search, mode hybrid, top_k k")
    # 1. The candidate pool: the scope applied before the cut, not after the whole index's best 50.
    line("pool: hybrid, scope exact", {q: [h.dia for h in hs][:k] for q, hs in hyb.items()},
         f"top {deep.hybrid.k} asked, first k kept (the fused whole-index depth is then 250)")
    line("pool: semantic, scope exact", {q: r[:k] for q, r in sem_deep.items()}, f"top {deep.semantic.k} asked")
    # The reconstruction of today's fusion from the reasons must give back the exact-scope hybrid.
    today = {q: order(rrf([(lx, 0.55), (vc, 0.45)], 60))[:k] for q, (lx, vc) in lists.items()}
    line("fusion: today's (0.55/0.45, RRF k 60) rebuilt", today, "from the hits' keyword and vector ranks")
    line("fusion: keyword list alone (BM25)", {q: lx[:k] for q, (lx, _) in lists.items()})

    # 2. Fusion parameters.
    weights = [i / 20 for i in range(4, 17)]
    ks = [1, 5, 10, 20, 40, 60, 100]
    grid = [(w, kk) for w in weights for kk in ks]

    def fused(p: tuple[float, float], q: Question) -> list[str]:
        lx, vc = lists.get(q.key, ([], []))
        return order(rrf([(lx, p[0]), (vc, 1 - p[0])], p[1]))[:k]
    best, s_all, s_loco = loco(fused, grid)
    out.append(f"| fusion: best weight/k: lexical {best[0]:.2f}, RRF k {best[1]} | {s_all.r5:.3f} | {s_all.rk:.3f} "
               f"| {s_all.hit:.3f} | leave-one-conversation-out R@{k} {s_loco.rk:.3f} |")
    fusion_best = best
    line("fusion: lexical 0.55 (today's), RRF k 20", {q.key: fused((0.55, 20), q) for q in asked},
         "only k changed")

    def three(p: tuple[float, float, float], q: Question) -> list[str]:
        lx, vc = lists.get(q.key, ([], []))
        wl, wt, kk = p
        return order(rrf([(lx, wl), (vc, 1 - wl), (text_deep.get(q.key, []), wt)], kk))[:k]
    grid3 = [(w, t, kk) for w in (0.3, 0.4, 0.5, 0.55, 0.6) for t in (0.0, 0.1, 0.2, 0.3, 0.5)
             for kk in (5, 10, 20, 60)]
    best3, s_all, s_loco = loco(three, grid3)
    out.append(f"| fusion + the keyword mode's list (BM25 {best3[0]:.2f}, vector {1 - best3[0]:.2f}, text "
               f"{best3[1]:.2f}, k {best3[2]}) | {s_all.r5:.3f} | {s_all.rk:.3f} | {s_all.hit:.3f} | "
               f"leave-one-conversation-out R@{k} {s_loco.rk:.3f} |")

    def fused_scores(q: Question, p: tuple[float, float] = fusion_best) -> dict[str, float]:
        lx, vc = lists.get(q.key, ([], []))
        return rrf([(lx, p[0]), (vc, 1 - p[0])], p[1])

    # 3. Adjacent turns of a hit.
    for top in (1, 2, 3, 5):
        line(f"adjacent: today's hybrid, top {top} hits each followed by its neighbours",
             {q.key: with_neighbours(hyb10.get(q.key, []), known[q.conv], top, k) for q in asked})
    for top in (1, 2, 3):
        line(f"adjacent: exact scope + best fusion, top {top} + neighbours",
             {q.key: with_neighbours(order(fused_scores(q)), known[q.conv], top, k) for q in asked})

    def smoothed(beta: float, q: Question) -> list[str]:
        return order(smooth(fused_scores(q), known[q.conv], beta))[:k]
    best_b, s_all, s_loco = loco(smoothed, [0.0, 0.1, 0.2, 0.3, 0.5, 0.7])
    out.append(f"| adjacent: score += {best_b} x best neighbour's (exact scope + best fusion) | {s_all.r5:.3f} | "
               f"{s_all.rk:.3f} | {s_all.hit:.3f} | leave-one-conversation-out R@{k} {s_loco.rk:.3f} |")

    # 4. A speaker prior (what a weighted speaker field would do): a turn said by someone the question names.
    def named(q: Question) -> set[str]:
        speakers = {t.speaker for t in turns if t.conv == q.conv}
        return {s for s in speakers if re.search(rf"\b{re.escape(s)}\b", q.text, re.I)}
    by_named = [e for q in asked for e in q.evidence if turn_of[(q.conv, e)].speaker in named(q)]
    share = len(by_named) / sum(len(q.evidence) for q in asked)
    one_named = [q for q in asked if len(named(q)) == 1]

    def prior(g: float, q: Question) -> list[str]:
        scored = fused_scores(q)
        who = named(q)
        if len(who) == 1:
            top = max(scored.values(), default=0.0)
            scored = {d: s + (g * top if turn_of[(q.conv, d)].speaker in who else 0.0) for d, s in scored.items()}
        return order(scored)[:k]
    best_g, s_all, s_loco = loco(prior, [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 1.0])
    out.append(f"| speaker prior: + {best_g} x top score to turns by the one person named (exact scope + best "
               f"fusion) | {s_all.r5:.3f} | {s_all.rk:.3f} | {s_all.hit:.3f} | leave-one-conversation-out R@{k} "
               f"{s_loco.rk:.3f}; {share:.0%} of evidence turns are by a person the question names, "
               f"{len(one_named)} questions name one |")

    # 5. The session date: questions that name a month or year, and turns of sessions of that month/year.
    dated = [q for q in asked if month_years(q.text)]

    def date_prior(g: float, q: Question) -> list[str]:
        scored = fused_scores(q)
        want = month_years(q.text)
        if want:
            top = max(scored.values(), default=0.0)
            for d in known[q.conv]:
                t = turn_of[(q.conv, d)]
                if any((m is None or m == t.date.month) and (y is None or y == t.date.year) for m, y in want):
                    scored[d] = scored.get(d, 0.0) + g * top
        return order(scored)[:k]
    best_d, s_all, s_loco = loco(date_prior, [0.0, 0.1, 0.2, 0.3, 0.5, 1.0])
    sub = scores({q.key: date_prior(best_d, q) for q in dated}, dated, k)
    was = scores({q.key: fused(fusion_best, q) for q in dated}, dated, k)
    out.append(f"| date prior: + {best_d} x top score to turns of a month/year the question names | {s_all.r5:.3f} "
               f"| {s_all.rk:.3f} | {s_all.hit:.3f} | {len(dated)} questions name one; on them R@{k} {was.rk:.3f} "
               f"-> {sub.rk:.3f}; leave-one-conversation-out R@{k} {s_loco.rk:.3f} |")
    when_q = [q for q in asked if q.text.lower().startswith(("when", "how long", "what year", "what month"))]
    out.append(f"| (temporal questions that ask *when*: {len(when_q)} of {len(asked)}; the date is their answer, "
               "not a word they share with the turn) | | | | |")

    # 6. Query expansion from the notes' own words (pseudo-relevance feedback, a second hybrid search).
    exp = deep.expanded.ranked()
    line(f"expansion: hybrid on the question + {len(next(iter(deep.expanded_terms.values()), []))} words of its "
         "top 3 hits", {q: r[:k] for q, r in exp.items()})

    def exp_fused(w: float, q: Question) -> list[str]:
        base_list = [h.dia for h in hyb.get(q.key, [])]
        return order(rrf([(base_list, 1 - w), (exp.get(q.key, []), w)], 60), base_list)[:k]
    best_e, s_all, s_loco = loco(exp_fused, [0.0, 0.2, 0.3, 0.4, 0.5])
    out.append(f"| expansion: RRF of the question's and the expanded query's hybrid lists (weight {best_e}) | "
               f"{s_all.r5:.3f} | {s_all.rk:.3f} | {s_all.hit:.3f} | leave-one-conversation-out R@{k} "
               f"{s_loco.rk:.3f} |")

    # All that gained, together (every weight picked again, jointly): exact scope, a fusion (today's weights
    # with RRF k 20, or the best with the keyword mode's list), speaker and date priors, the neighbour score,
    # then neighbours after the top hits.
    def together(p: tuple[bool, float, float, float, int], q: Question) -> list[str]:
        with_text, g, dp, b, top = p
        lx, vc = lists.get(q.key, ([], []))
        if with_text:
            scored = rrf([(lx, best3[0]), (vc, 1 - best3[0]), (text_deep.get(q.key, []), best3[1])], best3[2])
        else:
            scored = rrf([(lx, 0.55), (vc, 0.45)], 20)
        top_score = max(scored.values(), default=0.0)
        who = named(q)
        want = month_years(q.text)
        for d in known[q.conv]:
            t = turn_of[(q.conv, d)]
            add = g * top_score if len(who) == 1 and t.speaker in who else 0.0
            if want and any((m is None or m == t.date.month) and (y is None or y == t.date.year) for m, y in want):
                add += dp * top_score
            if add:
                scored[d] = scored.get(d, 0.0) + add
        scored = smooth(scored, known[q.conv], b) if b else scored
        return with_neighbours(order(scored), known[q.conv], top, k)
    joint = [(t, g, dp, b, top) for t in (False, True) for g in (0.3, 0.5, 1.0) for dp in (0.5, 1.0)
             for b in (0.0, 0.2, 0.5) for top in (0, 1)]
    best_t, s_all, s_loco = loco(together, joint)
    how = (f"the keyword mode's list too (weights {best3[0]:.2f}/{1 - best3[0]:.2f}/{best3[1]:.2f}, k {best3[2]})"
           if best_t[0] else "lexical 0.55, k 20")
    out.append(f"| together: exact scope, fusion {how}, speaker prior {best_t[1]}, date prior {best_t[2]}, "
               f"neighbour score {best_t[3]}, top {best_t[4]} + neighbours | {s_all.r5:.3f} | {s_all.rk:.3f} | "
               f"{s_all.hit:.3f} | leave-one-conversation-out R@{k} {s_loco.rk:.3f} |")
    per_cat = {c: scores({q.key: together(best_t, q) for q in asked if q.category == c},
                         [q for q in asked if q.category == c], k).rk for c in CATEGORIES}
    out.append("| together, R@k per category | | | | " + ", ".join(f"{CATEGORIES[c]} {v:.3f}"
                                                            for c, v in per_cat.items()) + " |")
    return out


def expansion_terms(questions: Sequence[Question], hybrid: Run, turns: Sequence[Turn], terms: int = 5,
                    top: int = 3) -> dict[str, list[str]]:
    text_of = {(t.conv, t.dia_id): f"{t.text} {t.caption}" for t in turns}
    out = {}
    for conv in sorted({q.conv for q in questions}):
        docs = [text for (c, _), text in text_of.items() if c == conv]
        df: Counter[str] = Counter()
        for text in docs:
            df.update(set(words(text)))
        for q in questions:
            if q.conv == conv:
                tops = [text_of[(conv, h.dia)] for h in hybrid.hits.get(q.key, [])[:top]]
                out[q.key] = expansion(q.text, tops, df, len(docs), terms)
    return out


# ------------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("/work/shared/bench/locomo"))
    p.add_argument("--dest", type=Path, help="vault directory to create or reuse (default: a temp dir)")
    p.add_argument("--k", type=int, default=K)
    p.add_argument("--analyse", action="store_true", help="estimate each retrieval idea from deeper answers")
    p.add_argument("--date-words", action="store_true", help="also write the session's date and time as a field")
    p.add_argument("--context-turns", type=int, default=0, metavar="N",
                   help="also write the N turns before and after each turn into its note")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)
    started = time.perf_counter()
    load_start = os.getloadavg()

    turns, questions = load(args.data)
    dest = args.dest or Path(tempfile.mkdtemp(prefix="vivary-locomo-"))
    changed = materialise(dest, turns, args.date_words, args.context_turns)
    print(f"vault: {dest}: {len(turns)} turns as notes of {len({t.conv for t in turns})} conversations "
          f"({changed} file(s) written and committed this run)")
    report, seconds = cli_index(dest)
    print(f"index --yes: {seconds:.1f}s wall, embedded {report['embedded']}, reused {report['reused']}"
          f"{' (already up to date)' if report['unchanged'] else ''}")
    empty = [q for q in questions if not q.evidence]
    dropped = sum(len(q.dropped) for q in questions)
    counts = dict(sorted(Counter(q.category for q in questions).items()))
    print(f"questions: {len(questions)} of categories 1-4 ({counts}); {len(empty)} without any evidence turn "
          f"(not scored); {dropped} evidence entr(ies) naming no turn of the conversation, dropped")

    runs = ask(dest, questions, [(m, args.k) for m in MODES])
    base = {m: runs[(m, args.k)] for m in MODES}
    print()
    print(f"LoCoMo ({len(turns)} turns, {len(questions) - len(empty)} questions scored), scoped search, k = {args.k}")
    for line in table(base, questions, args.k):
        print(line)
    print()
    for m, run in base.items():
        print(f"search p50 {LABEL[m]}: {pct(run.seconds, 50) * 1000:.1f} ms (p95 {pct(run.seconds, 95) * 1000:.1f} ms)"
              f" via {run.via}; hits outside the conversation: {run.foreign}")
    figures: dict[str, Any] = {"turns": len(turns), "questions": len(questions) - len(empty), "k": args.k,
                               "index_seconds": round(seconds, 1), "embedded": report["embedded"], "modes": {}}
    for m, run in base.items():
        s = scores(run.ranked(), questions, args.k)
        figures["modes"][m] = {
            "via": run.via, "r5": round(s.r5, 4), "rk": round(s.rk, 4), "hit": round(s.hit, 4),
            "short": sum(run.short().values()), "p50_ms": round(pct(run.seconds, 50) * 1000, 1),
            "categories": {CATEGORIES[c]: round(scores(run.ranked(), [q for q in questions if q.category == c],
                                                       args.k).rk, 4) for c in CATEGORIES}}
    h, best = figures["modes"]["hybrid"], max(figures["modes"][m]["rk"] for m in ("text", "semantic"))
    summary = (f"summary: hybrid R@{args.k} {h['rk']:.3f} (R@5 {h['r5']:.3f}, hit@{args.k} {h['hit']:.3f}); semantic "
               f"{figures['modes']['semantic']['rk']:.3f}, keyword {figures['modes']['text']['rk']:.3f}; hybrid - "
               f"best single mode {h['rk'] - best:+.3f}")

    if args.analyse:
        deep_runs = ask(dest, questions, [("text", 50), ("hybrid", 50), ("semantic", 50)])
        hybrid_deep = deep_runs[("hybrid", 50)]
        terms = expansion_terms(questions, hybrid_deep, turns)
        expanded = ask(dest, questions, [("hybrid", 50)],
                       rewrite=lambda q: f"{q.text} {' '.join(terms[q.key])}")[("hybrid", 50)]
        deep = Deep(deep_runs[("text", 50)], hybrid_deep, deep_runs[("semantic", 50)], expanded, terms)
        print()
        for line in analyse(deep, base, questions, turns, args.k):
            print(line)
        sample = next(iter(terms.items()))
        print(f"(expansion example: {sample[0]}: + {' '.join(sample[1])})")

    load_end = os.getloadavg()
    print()
    print(summary)
    print(f"load {load_start[0]:.2f} -> {load_end[0]:.2f} (1-min average), {os.cpu_count()} CPU(s); "
          f"run {time.perf_counter() - started:.0f}s")
    print(f"reproduce: python bench/bench_locomo.py --dest {dest}{' --analyse' if args.analyse else ''}"
          f"{' --date-words' if args.date_words else ''}"
          f"{f' --context-turns {args.context_turns}' if args.context_turns else ''}")
    figures["load"] = [round(load_start[0], 2), round(load_end[0], 2)]
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
