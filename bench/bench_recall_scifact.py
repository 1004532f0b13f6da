"""`git vivary recall` on BEIR SciFact: quality (text / semantic / hybrid), index cost, latency, ANN recall.

    python bench/bench_recall_scifact.py [--dest DIR] [--data /work/shared/bench/scifact] [--tune] [--json OUT]

Materialises the 5,183 abstracts as a workspace of 5,183 notes (`notes/<id>.md`: `# title`, blank line,
abstract) in a Git repository at DIR (default: a fresh temp dir), enables `vivary-local`, and indexes it
through the real CLI (`git vivary index --yes`). Then, on the TEST queries:

* nDCG@10 and Recall@10 for `query --mode text` (the deterministic scorer, in process through the API),
  and `recall --mode semantic|hybrid` (one `git vivary recall --queries FILE.jsonl` process per mode);
* incremental re-index time after editing 10 notes (and that exactly 10 were embedded);
* recall latency p50/p95 inside one process (a loaded `RecallSession`) and as fresh `git vivary recall`
  processes;
* hnswlib's recall@10 against exact search over the same cached vectors.

`--tune` searches the fusion weights and depth on the TRAIN queries only and prints the best; the
shipped constants in vivary_git/memory/local/files.py come from that run. Reusing `--dest` keeps the
provider's vector cache, so only the first run pays the ~5 minutes of embedding on 2 cores.

The corpus is CC BY-NC: it is read in place and written only into DEST (outside the repository).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

K = 10
TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\n'
MEMORY = '[memory]\nenabled = true\nmode = "semantic-provider"\nprovider = "vivary-local"\n'


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    return qrels


def ndcg_at_k(ranked: list[str], rels: dict[str, int], k: int = K) -> float:
    dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(rels.values(), reverse=True)[:k]
    idcg = sum(r / math.log2(i + 2) for i, r in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranked: list[str], rels: dict[str, int], k: int = K) -> float:
    relevant = {d for d, r in rels.items() if r > 0}
    return len(relevant & set(ranked[:k])) / len(relevant) if relevant else 0.0


def score(runs: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> tuple[float, float]:
    qids = [q for q in qrels if q in runs]
    return (statistics.fmean(ndcg_at_k(runs[q], qrels[q]) for q in qids),
            statistics.fmean(recall_at_k(runs[q], qrels[q]) for q in qids))


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(p / 100 * len(ordered)) - 1))]


def env() -> dict[str, str]:
    # A pip-installed package has byte-compiled modules; this dev shell sets PYTHONDONTWRITEBYTECODE,
    # which would make every fresh process compile vivary_git again and measure that instead.
    e = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", "")
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        e.pop(k, None)
    e.setdefault("GIT_AUTHOR_NAME", "bench")
    e.setdefault("GIT_AUTHOR_EMAIL", "bench@example.invalid")
    e.setdefault("GIT_COMMITTER_NAME", "bench")
    e.setdefault("GIT_COMMITTER_EMAIL", "bench@example.invalid")
    return e


def sh(args: list[str], cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(args, cwd=cwd, env=env(), capture_output=True, text=True, input=stdin, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:4])}... failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc


def note_text(doc: dict[str, Any], suffix: str = "") -> str:
    title = " ".join(str(doc.get("title", "")).split()) or str(doc["_id"])
    return f"# {title}\n\n{doc.get('text', '')}{suffix}\n"


def materialise(dest: Path, corpus: list[dict[str, Any]]) -> None:
    """Write the workspace (or restore it when DEST already holds it: a previous run's edits are undone)."""
    if (dest / ".git").is_dir() and (dest / "tropo.toml").is_file():
        sh(["git", "checkout", "-q", "--", "."], dest)
        sh(["git", "clean", "-qfd", "notes"], dest)
        print(f"workspace: reusing {dest} (its provider state keeps cached vectors)")
        return
    dest.mkdir(parents=True, exist_ok=True)
    sh(["git", "init", "-q", "-b", "main"], dest)
    (dest / "tropo.toml").write_text(TROPO, encoding="utf-8")
    (dest / ".vivary").mkdir(exist_ok=True)
    (dest / ".vivary" / "memory.toml").write_text(MEMORY, encoding="utf-8")
    notes = dest / "notes"
    notes.mkdir(exist_ok=True)
    for doc in corpus:
        (notes / f"{doc['_id']}.md").write_text(note_text(doc), encoding="utf-8")
    sh(["git", "add", "-A"], dest)
    sh(["git", "commit", "-qm", "SciFact corpus as notes"], dest)
    print(f"workspace: wrote {len(corpus)} notes to {dest}")


def cli_index(dest: Path) -> tuple[dict[str, Any], float]:
    start = time.perf_counter()
    proc = sh(["git", "vivary", "index", "--yes", "--json"], dest)
    return json.loads(proc.stdout), time.perf_counter() - start


def batch_recall(dest: Path, queries: dict[str, str], qids: list[str], mode: str) -> tuple[dict[str, list[str]], float]:
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as fh:
        for q in qids:
            fh.write(json.dumps({"id": q, "query": queries[q]}) + "\n")
        name = fh.name
    try:
        start = time.perf_counter()
        proc = sh(["git", "vivary", "recall", "--queries", name, "--k", str(K), "--mode", mode], dest)
        seconds = time.perf_counter() - start
    finally:
        os.unlink(name)
    runs: dict[str, list[str]] = {}
    lines = proc.stdout.splitlines()
    assert len(lines) == len(qids), (len(lines), len(qids))
    for q, line in zip(qids, lines, strict=True):
        answer = json.loads(line)
        assert str(answer["id"]) == q, "answers must come back in query order"
        runs[q] = [h["node_id"] for h in answer["hits"]]
    return runs, seconds


def text_runs(dest: Path, queries: dict[str, str], qids: list[str]) -> tuple[dict[str, list[str]], float]:
    from vivary_git import open_workspace
    from vivary_git.query import search

    ws = open_workspace(dest)
    graph, notes, index = ws.graph(), ws.lazy_notes(), ws.search_index()
    start = time.perf_counter()
    runs = {q: [h.id for h in search(graph, notes, queries[q], k=K, snippet=0, index=index,
                                       hidden=frozenset()).results] for q in qids}
    return runs, time.perf_counter() - start


def tune(session: Any, queries: dict[str, str], train: dict[str, dict[str, int]],
         test: dict[str, dict[str, int]]) -> dict[str, Any]:
    """Grid-search fusion weight and depth on TRAIN; report the pick's TEST score alongside."""
    from vivary_git.memory.local.files import RRF_K
    from vivary_git.memory.local.recall import fuse

    depth_max = 200
    lists: dict[str, tuple[list[tuple[int, float]], list[tuple[int, float]]]] = {}
    qids = [q for q in {**train, **test} if q in queries]
    vectors = session.embedder.embed([queries[q] for q in qids])
    from vivary_git.memory.local.bm25 import Tokenizer

    tok = Tokenizer()
    for i, q in enumerate(qids):
        lists[q] = (session._lexical.top(tok(queries[q]), depth_max), session._vector_ranking(vectors[i], depth_max))
    ids = [e.node_id for e in session._entries]

    def evaluate(qrels: dict[str, dict[str, int]], w: float, depth: int) -> tuple[float, float]:
        runs = {}
        for q in qrels:
            if q not in lists:
                continue
            lex, vec = lists[q]
            fused = fuse(lex[:depth], vec[:depth], weights=(w, 1.0 - w), k=RRF_K)
            runs[q] = [ids[d] for d, _, _ in fused[:K]]
        return score(runs, qrels)

    grid = []
    for depth in (20, 50, 100, 200):
        for step in range(0, 21):
            w = step / 20
            grid.append((evaluate(train, w, depth)[0], w, depth))
    best_train, w, depth = max(grid)
    test_ndcg, test_r = evaluate(test, w, depth)
    start_train = evaluate(train, 0.65, 100)[0]
    print(f"tune (TRAIN {len(train)} queries): best lexical weight {w:.2f} / vector {1 - w:.2f}, depth {depth}: "
          f"train nDCG@10 {best_train:.4f} (0.65/0.35 depth 100: {start_train:.4f}); "
          f"its TEST nDCG@10 {test_ndcg:.4f}, R@10 {test_r:.4f}")
    return {"lexical_weight": w, "vector_weight": 1 - w, "depth": depth, "train_ndcg": best_train,
            "train_ndcg_start": start_train, "test_ndcg": test_ndcg, "test_recall": test_r}


def ann_vs_exact(session: Any, dest: Path, queries: dict[str, str], qids: list[str]) -> float:
    import numpy as np

    from vivary_git.memory.local import files

    store = session.memory.store
    meta = files._decode(store.get(files.VECTOR_META), files.VectorMeta)
    raw = store.get(files.VECTORS)
    vectors = np.frombuffer(raw, dtype="<f4").reshape(len(meta.digests), meta.dim)
    rows = [e.label for e in session._entries]
    live = vectors[rows]
    qv = session.embedder.embed([queries[q] for q in qids])
    exact = np.argsort(-(qv @ live.T), axis=1)[:, :K]
    found = []
    for i in range(len(qids)):
        ann = {d for d, _ in session._vector_ranking(qv[i], K)}
        found.append(len(ann & set(exact[i].tolist())) / K)
    return statistics.fmean(found)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--data", type=Path, default=Path("/work/shared/bench/scifact"))
    p.add_argument("--dest", type=Path, help="workspace directory to create or reuse (default: a temp dir)")
    p.add_argument("--tune", action="store_true", help="grid-search fusion on TRAIN queries")
    p.add_argument("--fresh", type=int, default=20, help="fresh `git vivary recall` processes to time")
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)

    corpus = read_jsonl(args.data / "corpus.jsonl")
    queries = {str(q["_id"]): str(q["text"]) for q in read_jsonl(args.data / "queries.jsonl")}
    test = read_qrels(args.data / "qrels" / "test.tsv")
    train = read_qrels(args.data / "qrels" / "train.tsv")
    test_ids = [q for q in test if q in queries]
    dest = args.dest or Path(tempfile.mkdtemp(prefix="vivary-scifact-"))
    figures: dict[str, Any] = {"docs": len(corpus), "test_queries": len(test_ids)}

    materialise(dest, corpus)
    report, seconds = cli_index(dest)
    figures["index"] = {"seconds": round(seconds, 2), "embedded": report["embedded"], "reused": report["reused"],
                        "unchanged": report["unchanged"]}
    print(f"index --yes: {seconds:.1f}s wall, embedded {report['embedded']}, reused {report['reused']}"
          f"{' (already up to date)' if report['unchanged'] else ''}")

    results: dict[str, tuple[float, float]] = {}
    runs, secs = text_runs(dest, queries, test_ids)
    results["text (query --mode text)"] = score(runs, test)
    print(f"text: {secs:.1f}s for {len(test_ids)} queries")
    for mode in ("semantic", "hybrid"):
        runs, secs = batch_recall(dest, queries, test_ids, mode)
        results[f"{mode} (recall --mode {mode})"] = score(runs, test)
        print(f"{mode}: {secs:.1f}s for {len(test_ids)} queries in one `recall --queries` process")
    figures["quality"] = {name: {"ndcg@10": round(n, 4), "recall@10": round(r, 4)} for name, (n, r) in results.items()}

    from vivary_git import open_workspace
    from vivary_git.memory.local.provider import LocalMemory

    session = LocalMemory(open_workspace(dest)).open()
    if args.tune:
        figures["tune"] = tune(session, queries, train, test)
    figures["hnsw_recall_vs_exact"] = round(ann_vs_exact(session, dest, queries, test_ids), 4)

    latencies: dict[str, list[float]] = {"semantic": [], "hybrid": []}
    for mode in latencies:
        for q in test_ids[:100]:
            start = time.perf_counter()
            session.recall(queries[q], k=K, mode=mode)
            latencies[mode].append(time.perf_counter() - start)
    figures["latency_in_process_ms"] = {
        m: {"p50": round(pct(v, 50) * 1000, 2), "p95": round(pct(v, 95) * 1000, 2)} for m, v in latencies.items()}

    sample = random.Random(5).sample(test_ids, min(args.fresh, len(test_ids)))
    sh(["git", "vivary", "recall", "warm up", "--json"], dest)  # byte-compiles once, as an install does
    fresh = []
    for q in sample:
        start = time.perf_counter()
        sh(["git", "vivary", "recall", queries[q], "--json", "--k", str(K)], dest)
        fresh.append(time.perf_counter() - start)
    figures["latency_fresh_process_s"] = {"p50": round(pct(fresh, 50), 3), "p95": round(pct(fresh, 95), 3),
                                          "n": len(fresh)}

    # Incremental: edit 10 notes, re-index through the CLI, then restore (and re-index: nothing to embed).
    edited = random.Random(10).sample(corpus, 10)
    nonce = time.time_ns()  # new text every run: an edit seen before would find its vectors in the cache
    for doc in edited:
        (dest / "notes" / f"{doc['_id']}.md").write_text(note_text(doc, f" (revised {nonce})"), encoding="utf-8")
    report, seconds = cli_index(dest)
    assert report["embedded"] == 10, report
    figures["incremental_10"] = {"seconds": round(seconds, 2), "embedded": report["embedded"]}
    print(f"incremental after editing 10 notes: {seconds:.2f}s wall, embedded {report['embedded']}")
    materialise(dest, corpus)
    report, seconds = cli_index(dest)
    figures["restore"] = {"seconds": round(seconds, 2), "embedded": report["embedded"]}

    print()
    print(f"SciFact TEST ({len(test_ids)} queries, {len(corpus)} notes)")
    print("| mode | nDCG@10 | Recall@10 |")
    print("|---|---|---|")
    for name, (n, r) in results.items():
        print(f"| {name} | {n:.4f} | {r:.4f} |")
    print()
    for key in ("index", "incremental_10", "restore", "hnsw_recall_vs_exact", "latency_in_process_ms",
                "latency_fresh_process_s"):
        print(f"{key}: {json.dumps(figures[key])}")
    print(f"workspace: {dest}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
