#!/usr/bin/env python3
"""Mean reciprocal rank of `find` on the shared corpora's labelled questions (tests/data/find/queries.tsv).

    python bench/bench_find_mrr.py                          # this checkout's vivary_git
    PYTHONPATH=/work/main python bench/bench_find_mrr.py    # another checkout's, for "before"
    python bench/bench_find_mrr.py --k 10 --verbose          # each question's rank

For each question `find` answers with `--k` results (default 10) and the question scores 1/rank of the
first right note among them (0 when none is there); MRR is the mean over the questions. The corpora are
cloned from /work/shared/corpora (or --corpora) into a temporary folder; foam-docs is read with
`--root docs`, as tests/test_corpora.py reads it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERIES = ROOT / "tests" / "data" / "find" / "queries.tsv"
CORPORA = ROOT.parent / "shared" / "corpora"
ROOTS = {"foam-docs": "docs"}  # the workspace folder of a corpus, when not its top


def questions(path: Path = QUERIES) -> list[tuple[str, str, list[str]]]:
    """(corpus, question, right note paths) of every labelled question."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            corpus, question, right = line.split("\t")
            out.append((corpus, question, [p.strip() for p in right.split("|")]))
    return out


def clone(corpora: Path, corpus: str, dest: Path) -> Path:
    target = dest / corpus
    if not target.exists():
        subprocess.run(["git", "clone", "-q", str(corpora / f"{corpus}.bundle"), str(target)], check=True)
    return target


def ranks(clones: dict[str, Path], k: int) -> list[tuple[str, str, int | None]]:
    """(corpus, question, rank of its first right note or None) for every question."""
    from vivary_git import open_workspace
    from vivary_git.hidden import PrivateNodes
    from vivary_git.query import find

    out = []
    spaces = {}
    for corpus, question, right in questions():
        ws = spaces.get(corpus)
        if ws is None:
            ws = spaces[corpus] = open_workspace(clones[corpus], rev="HEAD", root=ROOTS.get(corpus), cache=False,
                                                 shared_cache=False)
        got = find(ws.graph(), ws.lazy_notes(), question, k=k, budget=1 << 30, index=ws.search_index(),
                   hidden=PrivateNodes(ws))
        paths = [h.path for h in got.results]
        out.append((corpus, question, next((i + 1 for i, p in enumerate(paths) if p in right), None)))
    return out


def mrr(ranked: list[tuple[str, str, int | None]]) -> float:
    return sum(1 / r for _, _, r in ranked if r) / len(ranked)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=10, help="results asked of find per question (default 10)")
    ap.add_argument("--corpora", type=Path, default=CORPORA, help="folder of the corpus bundles")
    ap.add_argument("--verbose", action="store_true", help="print each question's rank")
    args = ap.parse_args()
    import vivary_git

    with tempfile.TemporaryDirectory() as tmp:
        clones = {c: clone(args.corpora, c, Path(tmp)) for c in sorted({q[0] for q in questions()})}
        ranked = ranks(clones, args.k)
    if args.verbose:
        for corpus, question, rank in ranked:
            print(f"{rank or '-':>3}  {corpus:16} {question}")
    for corpus in sorted({c for c, _, _ in ranked}):
        part = [r for r in ranked if r[0] == corpus]
        print(f"{corpus}: MRR@{args.k} {mrr(part):.3f} over {len(part)} questions")
    print(f"all: MRR@{args.k} {mrr(ranked):.3f} over {len(ranked)} questions "
          f"(vivary_git from {Path(vivary_git.__file__).parent})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
