"""The lexical (BM25) side of recall alone on BEIR SciFact: quality and tokenising cost, no model needed.

    python bench/bench_bm25_scifact.py [--data /work/shared/bench/scifact] [--code DIR]

Tokenises the 5,183 abstracts as `recall` does (`# title`, blank line, abstract), builds the BM25
index, and ranks the 300 TEST queries by BM25 alone: nDCG@10 and Recall@10, with the CPU time of
tokenising (best of --runs). `--code DIR` imports vivary_git from DIR instead (a checkout of another
revision, e.g. `git archive main vivary_git | tar -x -C /tmp/base`), so a tokeniser change can be
compared with the one before it in the same conditions. The full hybrid figures need
bench_recall_scifact.py (which embeds every abstract: minutes).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

K = 10


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/bench/scifact")
    ap.add_argument("--code", type=Path, help="import vivary_git from this directory")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    if a.code is not None:
        sys.path.insert(0, str(a.code))
    from vivary_git.memory.local import bm25

    docs: list[dict[str, Any]] = [json.loads(line) for line in (a.data / "corpus.jsonl").open(encoding="utf-8")
                                  if line.strip()]
    queries = {str(q["_id"]): str(q["text"]) for q in map(json.loads, (a.data / "queries.jsonl").open())}
    qrels: dict[str, dict[str, int]] = {}
    with (a.data / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        next(handle)
        for line in handle:
            qid, did, score = line.rstrip("\n").split("\t")
            qrels.setdefault(qid, {})[did] = int(score)
    texts = [f"# {d.get('title', '')}\n\n{d.get('text', '')}\n" for d in docs]
    best = math.inf
    counts: list[dict[str, int]] = []
    for _ in range(max(1, a.runs)):
        tok = bm25.Tokenizer()
        t = time.process_time()
        counts = [tok.counts(x) for x in texts]
        best = min(best, time.process_time() - t)
    index = bm25.build(counts)
    ids = [str(d["_id"]) for d in docs]
    ndcg = recall = 0.0
    for qid, rels in qrels.items():
        ranked = [ids[i] for i, _ in index.top(tok(queries[qid]), K)]
        dcg = sum(rels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked))
        ideal = sum(r / math.log2(i + 2) for i, r in enumerate(sorted(rels.values(), reverse=True)[:K]))
        ndcg += dcg / ideal if ideal else 0.0
        relevant = {d for d, r in rels.items() if r > 0}
        recall += len(set(ranked) & relevant) / max(1, len(relevant))
    n = len(qrels)
    print(f"vivary_git from {Path(bm25.__file__).parents[2]}")
    print(f"BM25 only, SciFact TEST ({n} queries): nDCG@10 {ndcg / n:.4f}, Recall@10 {recall / n:.4f}; "
          f"vocabulary {len(index.header.vocab)}; tokenising {len(docs)} abstracts: {best:.2f} s CPU "
          f"(best of {a.runs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
