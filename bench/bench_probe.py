"""The similarity probe's verdicts on a labelled set of pairs: duplicates caught, contradictions refused as
duplicates, new facts refused.

    python bench/bench_probe.py [--half tune|test|holdout|holdout2 ... holdout19|all]
                                [--similarity 0.80] [--misses] [--exact]

Each pair of tests/data/probe_pairs.jsonl and tests/data/probe_holdout*.jsonl (provenance:
tests/data/probe_pairs.md) is an existing memory `a` and a new text `b`, labelled paraphrase, contradiction
(negation, number, date, name, "no longer"; in the held-out sets also a substituted word, an antonym, a
reversed comparison, a quantifier), related or unrelated. The probe sees `a` among four existing memories, never
first: a memory of the same subject that says something else (the pair group's related fact; not for a
related pair, whose `b` it is) and three of other groups of the same file. A verdict counts as right only
when it names `a`: a duplicate or update of another memory is wrong. Goals: paraphrases caught as duplicates
>= 0.90; contradictions refused as duplicates <= 0.05; new facts (related and unrelated) refused (duplicate
or update) <= 0.02.

The thresholds (probe.py) were set on the `tune` half (even groups) and checked on the `test` half (odd
groups). The held-out sets `holdout`, `holdout2` ... `holdout19` were each written before the probe change
they measure, by a writer who had not seen the probe, measured once, then read: the newest (`holdout19`) is
the figure that counts. Each runs by itself (`--half holdout19`); `all` is tune, test and holdout.
`--exact`: without the embedder (the probe of a workspace without the local memory).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "tests/data/probe_pairs.jsonl"
# Each held-out set by its name: tests/data/probe_holdout.jsonl, then probe_holdout2.jsonl, ... (the newest last).
HELD_OUT = {f"holdout{n}": ROOT / f"tests/data/probe_holdout{n}.jsonl" for n in ("", *range(2, 20))}
LABELS = ("paraphrase", "contradiction", "related", "unrelated")
VERDICTS = ("duplicate", "update", "related", "new")


def _load(half: str = "tune") -> list[dict[str, Any]]:
    """The pairs of the file that holds `half`."""
    path = HELD_OUT.get(half, PAIRS)
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _existing(pairs: list[dict[str, Any]], pair: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, text) of the memories the probe sees for `pair`: `a` last."""
    groups = sorted({p["group"] for p in pairs})
    first = {p["group"]: p["a"] for p in pairs}
    related = {p["group"]: p["b"] for p in pairs if p["label"] == "related"}
    g, n = pair["group"], len(groups)
    out = [(f"g{(g + 7) % n}", first[(g + 7) % n]), (f"r{(g + 13) % n}", related[(g + 13) % n])]
    if pair["label"] != "related":
        out.insert(0, (f"r{g}", related[g]))
    out += [(f"g{(g + 31) % n}", first[(g + 31) % n]), (f"g{g}", pair["a"])]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--half",
        choices=("tune", "test", *HELD_OUT, "all"),
        default="all",
    )
    ap.add_argument("--similarity", type=float, default=None, help="the duplicate cosine (default: the config's)")
    ap.add_argument("--misses", action="store_true", help="list every pair with a wrong verdict")
    ap.add_argument("--exact", action="store_true", help="no embedder: the probe without the local memory")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from vivary_git.memory.config import DEFAULT_SIMILARITY
    from vivary_git.memory.writes.probe import Candidate, Probe

    loader = None
    if not args.exact:
        from vivary_git.memory.local.runtime import _load_embedder

        embedder = _load_embedder("minilm-l6-int8", use="probe")  # the build an add's probe loads

        def loader() -> Any:
            return embedder

    probe = Probe(args.similarity or DEFAULT_SIMILARITY, loader)
    halves = ("tune", "test", "holdout") if args.half == "all" else (args.half,)
    print(f"probe: {probe.method}, duplicate at cosine >= {probe.threshold}; "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.2f}")
    for half in halves:
        pairs = _load(half)
        chosen = [p for p in pairs if p["half"] == half]
        table: Counter[tuple[str, str]] = Counter()
        kinds: Counter[tuple[str, str]] = Counter()  # a contradiction's kind and verdict
        wrong_target = 0
        misses = []
        for p in chosen:
            existing = _existing(pairs, p)
            got = probe.check(p["b"], [Candidate(i, i, i, t) for i, t in existing])
            verdict = got.verdict
            top = got.top
            if verdict in ("duplicate", "update") and top is not None and top.id != f"g{p['group']}":
                wrong_target += 1
                verdict = f"{verdict}(other)"
            table[(p["label"], verdict)] += 1
            if p["label"] == "contradiction":
                kinds[(p["kind"], verdict)] += 1
            right = {"paraphrase": "duplicate", "contradiction": "update", "related": "related",
                     "unrelated": "new"}[p["label"]]
            if verdict != right and not (p["label"] in ("related", "unrelated") and verdict in ("related", "new")):
                misses.append((p, verdict, top))
        count = Counter(p["label"] for p in chosen)
        caught = table[("paraphrase", "duplicate")] / count["paraphrase"]
        as_dup = (table[("contradiction", "duplicate")] + table[("contradiction", "duplicate(other)")]) \
            / count["contradiction"]
        as_update = table[("contradiction", "update")] / count["contradiction"]
        new = count["related"] + count["unrelated"]
        refused = sum(table[(lab, v)] for lab in ("related", "unrelated")
                      for v in ("duplicate", "update", "duplicate(other)", "update(other)")) / new
        print(f"\n{half} half ({len(chosen)} pairs)")
        print(f"  duplicates caught            {caught:.3f}  (goal >= 0.90)")
        print(f"  contradictions as duplicates {as_dup:.3f}  (goal <= 0.05)")
        print(f"  contradictions as updates    {as_update:.3f}")
        print(f"  new facts refused            {refused:.3f}  (goal <= 0.02)")
        print(f"  refused naming another memory: {wrong_target}")
        cols = [*VERDICTS, "duplicate(other)", "update(other)"]
        print("  " + f"{'':15}" + "".join(f"{c:>18}" for c in cols))
        for lab in LABELS:
            print("  " + f"{lab:15}" + "".join(f"{table[(lab, c)]:>18}" for c in cols))
        print("  contradictions by kind (update/all): " + ", ".join(
            f"{k} {kinds[(k, 'update')]}/{sum(n for (k2, _), n in kinds.items() if k2 == k)}"
            for k in sorted({k for k, _ in kinds})))
        if args.misses:
            for p, verdict, top in misses:
                why = f" {top.score:.3f} {top.evidence}" if top is not None else ""
                print(f"  MISS {p['label']}/{p['kind'] or '-'} -> {verdict}{why}\n      a: {p['a']}\n      b: {p['b']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
