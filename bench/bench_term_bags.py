#!/usr/bin/env python3
"""Counting the words of a fetched clone's notes, against another revision, interleaved: the work of the first
recall's two children (the notes' `bm25.term_bags`, the packets' frames' `bm25.frame_terms`) and of an index
built from whole packets (`bm25.build_texts`), in CPU seconds of one process.

    python bench/bench_term_bags.py --against be5a5a7
    python bench/bench_term_bags.py --against main --origin /tmp/mc10k/origin.git --runs 12

The origin is a bare repository whose refs/vivary/cache holds CI's parses and vectors, as
`bench/bench_memory_cache.py` leaves it (default: the 10,000-note one under /tmp/lead/mc10k). It is only
read: it is cloned once (`git clone --no-local`, `vivary.cacheTrust any`, `sync fetch`), and this checkout
writes down what the first recall counts: each note's text as the notes' child hands it on (frontmatter and
body) and each packet's frame. Each run is then one process of one side (its tree first on PYTHONPATH,
byte-compiled first) timing the three calls on those texts, imports and the stemmer's first words paid
before the clock starts; every run of one side sits next to a run of the other, and which goes first
alternates. The sides' results are compared too: the same index, the same counts.
"""

from __future__ import annotations

import argparse
import os
import pickle
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_first_recall import fetched_clone, require_origin, sh  # noqa: E402  (a sibling script, not a package)

# Writes the texts: run in the clone, with this checkout first on PYTHONPATH.
DUMP = r"""
import pickle, sys
from vivary_git.memory.local.provider import LocalMemory
from vivary_git.memory.snapshot import note_parts, note_text, packet_frames
from vivary_git.workspace import open_workspace
ws = open_workspace(".")
got = [(oid, *note_parts(note)) for oid, note in ws.notes().items()]
snap = LocalMemory(ws).snapshot()
with open(sys.argv[1], "wb") as f:
    pickle.dump(([oid for oid, _, _ in got], [note_text(a, b) for _, a, b in got], packet_frames(snap)), f)
"""

# One timed run of one side: prints CPU seconds of each call, and a digest of what each made.
RUN = r"""
import hashlib, json, pickle, sys, time
import msgspec
from vivary_git.memory.local import bm25
with open(sys.argv[1], "rb") as f:
    keys, texts, frames = pickle.load(f)
tok = bm25.Tokenizer()
bm25.build_texts(texts[:8], tok)
out = {}
def timed(name, fn, digest):
    start = time.process_time()
    made = fn()
    out[name] = time.process_time() - start
    out[name + " digest"] = digest(made)
def bags_digest(bags):  # the counts of each text, whatever order its terms were numbered in
    import numpy as np
    indptr = np.frombuffer(bags.indptr, dtype="<i8").tolist()
    ids = np.frombuffer(bags.ids, dtype="<i4").tolist()
    counts = np.frombuffer(bags.counts, dtype="<i4").tolist()
    each = [sorted((bags.terms[ids[k]], counts[k]) for k in range(lo, hi)) for lo, hi in zip(indptr, indptr[1:])]
    return hashlib.sha256(msgspec.msgpack.encode(each)).hexdigest()
timed("term_bags", lambda: bm25.term_bags(keys, texts, bm25.Tokenizer()), bags_digest)
timed("frame_terms", lambda: bm25.frame_terms(frames, bm25.Tokenizer()),
      lambda ft: hashlib.sha256(msgspec.msgpack.encode(sorted(zip([ft.terms[i] for i in ft.ids.tolist()],
                                                                     ft.docs.tolist())))).hexdigest())
timed("build_texts", lambda: bm25.build_texts(texts, bm25.Tokenizer()),
      lambda index: hashlib.sha256(index.encode()).hexdigest())
print(json.dumps(out))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--against", required=True, metavar="REV", help="the revision of vivary-git to race")
    ap.add_argument("--origin", type=Path, default=Path("/tmp/lead/mc10k/origin.git"),
                    help="bare origin whose refs/vivary/cache holds parses and vectors (only read)")
    ap.add_argument("--runs", type=int, default=8, help="runs of each side (default 8)")
    args = ap.parse_args(argv)
    require_origin(args.origin)
    import json

    with tempfile.TemporaryDirectory(prefix="vivary-term-bags-") as tmp_name:
        tmp = Path(tmp_name)
        old = tmp / "old"
        sh(["git", "worktree", "add", "--detach", str(old), args.against], ROOT)
        try:
            sides = {"old": old, "new": ROOT}
            for src in sides.values():
                sh([sys.executable, "-m", "compileall", "-q", "vivary_git"], src)
            fetched = fetched_clone(args.origin, tmp / "fetched")
            texts = tmp / "texts.pickle"
            sh([sys.executable, "-c", DUMP, str(texts)], fetched, ROOT)
            with texts.open("rb") as f:
                _, notes, frames = pickle.load(f)
            print(f"origin {args.origin}: {len(notes):,} notes ({sum(map(len, notes)):,} characters), "
                  f"{len(frames):,} frames; {args.runs} runs a side; load {os.getloadavg()[0]:.1f}")
            rows: dict[str, list[dict[str, float | str]]] = {"old": [], "new": []}
            for i in range(args.runs):
                for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                    got = sh([sys.executable, "-c", RUN, str(texts)], tmp, sides[side])
                    rows[side].append(json.loads(got.stdout))
            print(f"load {os.getloadavg()[0]:.1f}")
            for name in ("term_bags", "frame_terms", "build_texts"):
                same = {str(r[name + " digest"]) for r in rows["old"] + rows["new"]}
                cpu = {side: [float(r[name]) for r in rows[side]] for side in rows}
                med = {side: statistics.median(cpu[side]) for side in cpu}
                print(f"  {name:11s} CPU median old {med['old']:.3f} s, new {med['new']:.3f} s "
                      f"(min {min(cpu['old']):.3f} / {min(cpu['new']):.3f}); new/old {med['new'] / med['old']:.2f}; "
                      f"{'the same result' if len(same) == 1 else 'RESULTS DIFFER'}")
        finally:
            shutil.rmtree(tmp / "fetched", ignore_errors=True)
            sh(["git", "worktree", "remove", "--force", str(old)], ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
