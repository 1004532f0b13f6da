"""SciFact through the Cognee provider, beside vivary-local on the same notes, with the same embedder.

    .venv/test/bin/python bench/bench_recall_cognee_scifact.py [--docs 500] [--cognee-python .venv/cognee/bin/python]
        [--data /work/shared/bench/scifact] [--dest DIR] [--json OUT]

Cognee runs for real (`git vivary index --yes` / `recall --queries` from the Cognee virtualenv) against model
endpoints on loopback (tests/model_endpoints.py): embeddings from this project's packaged embedder (MiniLM-L6
int8, the one vivary-local uses), and a chat endpoint that answers Cognee's graph-extraction and summary
prompts deterministically with the smallest valid JSON. So the figures measure Cognee's pipeline and its
CHUNKS vector search over the same vectors, not a language model.

Cognee's cognify costs ~2-4 s per note on 2 shared cores (two chat and ~four embedding requests per note,
plus its graph and vector stores; 4.05 s/note measured at a load of ~17), so the full 5,183 abstracts would
take 3-6 hours. `--docs N` takes every abstract
judged relevant for a TEST query plus random others (seeded) up to N; vivary-local is indexed and scored on
the very same notes in the same run, and its full-corpus figure (bench/bench_recall_scifact.py) is the
reference for `--docs 0` (all). Reported: nDCG@10 and Recall@10 on the TEST queries, index wall time, batch
recall time per query, and the wall time of one fresh `git vivary recall` process (Cognee's import included).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))

import bench_recall_scifact as base  # noqa: E402
from model_endpoints import serve  # noqa: E402

COGNEE_MEMORY = """[memory]
enabled = true
mode = "semantic-provider"
provider = "cognee"

[memory.cognee]
allow_network = true
allow_without_api_key = true
"""


def pick(corpus: list[dict[str, Any]], test: dict[str, dict[str, int]], n: int, seed: int) -> list[dict[str, Any]]:
    if n <= 0 or n >= len(corpus):
        return corpus
    relevant = {d for rels in test.values() for d in rels}
    others = [d for d in corpus if d["_id"] not in relevant]
    random.Random(seed).shuffle(others)
    chosen = [d for d in corpus if d["_id"] in relevant] + others[: max(0, n - len(relevant))]
    return sorted(chosen, key=lambda d: d["_id"])


def write_ws(dest: Path, corpus: list[dict[str, Any]], memory: str) -> None:
    dest.mkdir(parents=True)
    base.sh(["git", "init", "-q", "-b", "main"], dest)
    (dest / "tropo.toml").write_text(base.TROPO, encoding="utf-8")
    (dest / ".vivary").mkdir()
    (dest / ".vivary" / "memory.toml").write_text(memory, encoding="utf-8")
    (dest / "notes").mkdir()
    for doc in corpus:
        (dest / "notes" / f"{doc['_id']}.md").write_text(base.note_text(doc), encoding="utf-8")
    base.sh(["git", "add", "-A"], dest)
    base.sh(["git", "commit", "-qm", "SciFact notes"], dest)


def run_cognee(args: list[str], cwd: Path, env: dict[str, str], stdin: str | None = None) -> tuple[str, float]:
    start = time.perf_counter()
    proc = subprocess.run(["git", "vivary", *args], cwd=cwd, env=env, capture_output=True, text=True, input=stdin,
                          check=False)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"git vivary {' '.join(args)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout, seconds


def runs_of(stdout: str, qids: list[str]) -> dict[str, list[str]]:
    lines = stdout.splitlines()
    assert len(lines) == len(qids), (len(lines), len(qids))
    out = {}
    for q, line in zip(qids, lines, strict=True):
        answer = json.loads(line)
        assert str(answer["id"]) == q
        out[q] = [h["node_id"] for h in answer["hits"]]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=Path("/work/shared/bench/scifact"))
    ap.add_argument("--docs", type=int, default=500, help="notes to index (0: all 5,183); see above")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--cognee-python", type=Path,
                    default=Path(os.environ.get("VIVARY_COGNEE_PYTHON", HERE.parent / ".venv/cognee/bin/python")))
    ap.add_argument("--dest", type=Path, default=None)
    ap.add_argument("--fresh", type=int, default=3, help="fresh `git vivary recall` processes to time")
    ap.add_argument("--json", type=Path, default=None)
    opts = ap.parse_args()

    corpus = base.read_jsonl(opts.data / "corpus.jsonl")
    queries = {str(q["_id"]): str(q["text"]) for q in base.read_jsonl(opts.data / "queries.jsonl")}
    test = base.read_qrels(opts.data / "qrels" / "test.tsv")
    qids = sorted(q for q in test if q in queries)
    notes = pick(corpus, test, opts.docs, opts.seed)
    dest = opts.dest or Path(tempfile.mkdtemp(prefix="vivary-cognee-scifact-"))
    print(f"{len(notes)} notes ({'all' if len(notes) == len(corpus) else 'test-relevant + seeded others'}), "
          f"{len(qids)} test queries; workspaces under {dest}")

    local_ws, cognee_ws = dest / "local", dest / "cognee"
    write_ws(local_ws, notes, base.MEMORY)
    write_ws(cognee_ws, notes, COGNEE_MEMORY)

    _, local_index = base.cli_index(local_ws)
    local_hybrid, local_hybrid_s = base.batch_recall(local_ws, queries, qids, "hybrid")
    local_semantic, local_semantic_s = base.batch_recall(local_ws, queries, qids, "semantic")

    batch = "".join(json.dumps({"id": q, "query": queries[q]}) + "\n" for q in qids)
    with serve() as ep:
        env = base.env()
        env.update(ep.env())
        env["PATH"] = f"{opts.cognee_python.parent}{os.pathsep}{env['PATH']}"
        out, cognee_index = run_cognee(["index", "--yes", "--json"], cognee_ws, env)
        cognee_report = json.loads(out)
        out, cognee_batch_s = run_cognee(["recall", "--queries", "-", "--k", str(base.K)], cognee_ws, env, batch)
        cognee_runs = runs_of(out, qids)
        fresh = [run_cognee(["recall", queries[q], "--k", str(base.K), "--json"], cognee_ws, env)[1]
                 for q in qids[: opts.fresh]]
        chat_calls = sum(1 for p in ep.paths() if p.endswith("/chat/completions"))
        embed_calls = sum(1 for p in ep.paths() if p.endswith("/embeddings"))

    rows = {
        "vivary-local hybrid": (*base.score(local_hybrid, test), local_index, local_hybrid_s / len(qids)),
        "vivary-local semantic": (*base.score(local_semantic, test), local_index, local_semantic_s / len(qids)),
        "cognee (CHUNKS)": (*base.score(cognee_runs, test), cognee_index, cognee_batch_s / len(qids)),
    }
    print(f"\n{'':24s} {'nDCG@10':>8s} {'R@10':>7s} {'index s':>9s} {'recall ms/query (batch)':>24s}")
    for name, (ndcg, rec, idx, per) in rows.items():
        print(f"{name:24s} {ndcg:8.4f} {rec:7.4f} {idx:9.1f} {per * 1000:24.1f}")
    print(f"\ncognee: {cognee_report['indexed']} notes indexed in {cognee_index:.1f}s "
          f"({cognee_index / max(1, cognee_report['indexed']):.2f} s/note); {chat_calls} chat and {embed_calls} "
          "embedding requests in all")
    print(f"cognee: fresh `git vivary recall` process: median {statistics.median(fresh):.1f}s over {len(fresh)} "
          "(Cognee's import included)")
    print("reference: vivary-local hybrid on all 5,183 abstracts: nDCG@10 0.7214 (bench/bench_recall_scifact.py)")
    if opts.json:
        opts.json.write_text(json.dumps({
            "notes": len(notes), "queries": len(qids),
            "rows": {k: dict(zip(("ndcg10", "recall10", "index_s", "recall_s_per_query"), v, strict=True))
                     for k, v in rows.items()},
            "cognee_fresh_recall_s": fresh, "chat_calls": chat_calls, "embedding_calls": embed_calls,
        }, indent=2))


if __name__ == "__main__":
    main()
