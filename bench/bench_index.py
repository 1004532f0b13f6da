"""First-index throughput of `git vivary index --yes` against the model's own floor, on SciFact and a vault.

    python bench/bench_index.py [--corpus scifact,vault] [--notes 10000] [--dest DIR] [--limit N]
    python bench/bench_index.py --sweep [--sweep-docs 96] [--rounds 5]

For each corpus (the 5,183 BEIR SciFact abstracts as notes, and a `make_vault.py --notes N --wikilinks`
workspace), with the provider state removed first:

* floor: a bare onnxruntime loop, in this process, over exactly the model runs the index makes (the same
  texts, tokenised beforehand and cut into the same length-sorted runs by `index_windows` and
  `Embedder.plan`, fed with the same session settings: threads per run, runs at once);
* index: the real `git vivary index --yes --json` as a subprocess, wall time and notes/s, and its ratio
  to the floor (the goal: within 1.2x; everything else the index does, from start-up and the snapshot
  to tokenising, pooling, HNSW, BM25 and writing the state, is in the difference);
* re-index after editing 10 notes (median of --edits-runs fresh edits), and how many were embedded.

`--sweep` measures the choices instead (A/B interleaved rounds, median and min-max, wall notes/s and notes
per CPU-second): runs at once x threads per run, spinning, graph optimisation level, run size, and the
tokeniser's share. The machine's 2 cores are shared: compare figures of one run only, and read the
CPU-second column when the load average is high.
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
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_recall_scifact import materialise, note_text, read_jsonl, sh  # noqa: E402

MAKE_VAULT = ROOT.parent / "shared/bench/make_vault.py"
MEMORY = '[memory]\nenabled = true\nmode = "semantic-provider"\nprovider = "vivary-local"\n'


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f}"


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):7.2f} [{min(values):.2f}-{max(values):.2f}]"


# --- workspaces -----------------------------------------------------------------------------------------


def scifact_workspace(dest: Path, data: Path, limit: int | None) -> tuple[Path, Callable[[int], list[Path]]]:
    corpus = read_jsonl(data / "corpus.jsonl")[:limit]
    path = dest / (f"scifact-{limit}" if limit else "scifact")
    materialise(path, corpus)

    def edit(seed: int) -> list[Path]:
        nonce = time.time_ns()  # new text every run: an edit seen before would find its vectors cached
        picked = random.Random(seed).sample(corpus, 10)
        for doc in picked:
            (path / "notes" / f"{doc['_id']}.md").write_text(note_text(doc, f" (revised {nonce})"), encoding="utf-8")
        return [path / "notes" / f"{doc['_id']}.md" for doc in picked]

    return path, edit


def vault_workspace(dest: Path, notes: int) -> tuple[Path, Callable[[int], list[Path]]]:
    path = dest / f"vault-{notes}"
    if not (path / ".vivary" / "memory.toml").is_file():
        if path.exists():
            raise SystemExit(f"{path} exists but is not a bench vault: remove it or pass another --dest")
        print(f"workspace: generating {notes} notes in {path}", file=sys.stderr)
        subprocess.run([sys.executable, str(MAKE_VAULT), str(path), "--notes", str(notes), "--wikilinks"], check=True,
                       stdout=subprocess.DEVNULL)
        (path / ".vivary").mkdir(exist_ok=True)
        (path / ".vivary" / "memory.toml").write_text(MEMORY, encoding="utf-8")
        sh(["git", "add", "-A"], path)
        sh(["git", "commit", "-qm", "enable memory"], path)
    else:
        sh(["git", "checkout", "-q", "--", "."], path)
    candidates = sorted(p for p in (path / "notes").rglob("*.md"))

    def edit(seed: int) -> list[Path]:
        nonce = time.time_ns()
        picked = random.Random(seed).sample(candidates, 10)
        for p in picked:
            with p.open("a", encoding="utf-8") as handle:
                handle.write(f"\nRevised {nonce}.\n")
        return picked

    return path, edit


# --- the floor ------------------------------------------------------------------------------------------


def index_runs(path: Path, embedder: Any) -> tuple[list[list[list[int]]], int, float]:
    """The model runs a first index of `path` makes, tokenised (as lists of token-id rows), the number of
    texts, and the CPU seconds tokenising took."""
    from vivary_git import open_workspace
    from vivary_git.memory.local.files import embed_text
    from vivary_git.memory.local.index import index_batch_size, index_windows
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.snapshot import packets

    ws = open_workspace(path)
    memory = LocalMemory(ws)
    texts = [embed_text(packet) for _, packet in packets(ws, memory.snapshot())]
    batch = index_batch_size(len(texts))
    runs: list[list[list[int]]] = []
    cpu = 0.0
    for start, end in index_windows(len(texts)):
        began = time.process_time()
        tokens = embedder.tokenize(texts[start:end])
        cpu += time.process_time() - began
        runs.extend([[tokens[i] for i in run] for run in embedder.plan(tokens, batch_size=batch)])
    return runs, len(texts), cpu


def run_feeds(session: Any, feeds: list[dict[str, Any]], lanes: int) -> None:
    """session.run over `feeds`, `lanes` at a time (onnxruntime releases the GIL), nothing else."""
    if lanes <= 1:
        for feed in feeds:
            session.run(None, feed)
        return
    items = iter(feeds)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                feed = next(items, None)
            if feed is None:
                return
            session.run(None, feed)

    threads = [threading.Thread(target=worker) for _ in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def floor(embedder: Any, runs: list[list[list[int]]]) -> tuple[float, float]:
    """Wall and CPU seconds of the bare loop over pre-built feeds."""
    feeds = [embedder.feeds(rows) for rows in runs]
    run_feeds(embedder.session, feeds[:1], 1)  # the first run of a session pays one-off allocations
    began, cpu = time.perf_counter(), time.process_time()
    run_feeds(embedder.session, feeds, embedder.lanes)
    return time.perf_counter() - began, time.process_time() - cpu


# --- the real CLI ---------------------------------------------------------------------------------------


def cli_index(path: Path) -> tuple[dict[str, Any], float, str]:
    began = time.perf_counter()
    proc = subprocess.run(["git", "vivary", "index", "--yes", "--json"], cwd=path, capture_output=True, text=True,
                          env=bench_env(), check=False)
    seconds = time.perf_counter() - began
    if proc.returncode != 0:
        raise SystemExit(f"git vivary index failed ({proc.returncode}): {proc.stderr.strip()}")
    return json.loads(proc.stdout), seconds, proc.stderr.strip()


def bench_env() -> dict[str, str]:
    from bench_recall_scifact import env

    return env()


def corpus_figures(name: str, path: Path, edit: Callable[[int], list[Path]], embedder: Any,
                   edit_runs: int) -> dict[str, Any]:
    sh(["git", "vivary", "forget", "--yes"], path)
    print(f"\n## {name}: {path}")
    runs, notes, tokenise_cpu = index_runs(path, embedder)
    padded = sum(len(rows) * max(len(r) for r in rows) for rows in runs)
    real = sum(len(r) for rows in runs for r in rows)
    print(f"{notes:,} notes, {len(runs):,} model runs, {real / notes:.0f} tokens/note, "
          f"padding +{padded / real - 1:.1%}; tokenising took {tokenise_cpu:.1f} CPU s "
          f"({1000 * tokenise_cpu / notes:.2f} ms/note)")
    print(f"floor ... ({load()})", file=sys.stderr, flush=True)
    before = load()
    wall, cpu = floor(embedder, runs)
    print(f"floor: bare onnxruntime over those runs: {wall:.1f} s, {notes / wall:.2f} notes/s "
          f"({notes / cpu:.2f} notes per CPU-second; {before} -> {load()})")
    print(f"index ... ({load()})", file=sys.stderr, flush=True)
    before = load()
    report, seconds, summary = cli_index(path)
    if report["embedded"] != notes:
        raise SystemExit(f"the index embedded {report['embedded']} notes, the floor {notes}")
    print(f"index --yes: {seconds:.1f} s wall, {notes / seconds:.2f} notes/s, {seconds / wall:.2f}x the floor "
          f"({before} -> {load()}); its summary: {summary.splitlines()[-1] if summary else '(none)'}")
    incremental = []
    for i in range(edit_runs):
        edited = edit(i)
        again, secs, _ = cli_index(path)
        if again["embedded"] != len(edited):
            raise SystemExit(f"re-index after editing {len(edited)} notes embedded {again['embedded']}")
        incremental.append(secs)
    sh(["git", "checkout", "-q", "--", "."], path)
    print(f"re-index after editing 10 notes: median {statistics.median(incremental):.2f} s "
          f"[{min(incremental):.2f}-{max(incremental):.2f}] over {edit_runs} runs ({load()})")
    cli_index(path)  # back to the committed notes (their vectors are cached: nothing is embedded)
    return {"notes": notes, "runs": len(runs), "padding": round(padded / real - 1, 4),
            "tokenise_cpu_s": round(tokenise_cpu, 2), "floor_s": round(wall, 2), "floor_cpu_s": round(cpu, 2),
            "index_s": round(seconds, 2), "ratio": round(seconds / wall, 3),
            "incremental_10_s": [round(s, 2) for s in incremental]}


# --- the sweep ------------------------------------------------------------------------------------------


def sweep(data: Path, docs: int, rounds: int) -> None:
    """Interleaved A/B of the settings on `docs` SciFact abstracts (the index's text, pre-tokenised)."""
    import onnxruntime as ort

    from vivary_git.memory.local import embed as embed_mod
    from vivary_git.memory.local.embed import load_embedder

    base: Any = load_embedder()
    corpus = read_jsonl(data / "corpus.jsonl")[:docs]
    texts = [note_text(d) for d in corpus]
    began = time.process_time()
    tokens = base.tokenize(texts)
    tokenise = (time.process_time() - began) / len(texts)
    spec = embed_mod._MODELS[embed_mod.DEFAULT_EMBEDDER]
    model = embed_mod._installed_model_path(spec).read_bytes()
    levels = {"all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
              "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
              "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
              "disabled": ort.GraphOptimizationLevel.ORT_DISABLE_ALL}

    def session(threads: int, level: str = "all", spin: bool = False) -> Any:
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = levels[level]
        options.log_severity_level = 3
        options.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        return ort.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])

    def feeds(budget: int) -> list[dict[str, Any]]:
        old = base._token_budget
        base._token_budget = budget
        try:
            plan = base.plan(tokens, batch_size=32)
        finally:
            base._token_budget = old
        return [base.feeds([tokens[i] for i in run]) for run in plan]

    default = feeds(embed_mod.TOKEN_BUDGET)
    n = cores()
    groups: dict[str, dict[str, tuple[Any, list[dict[str, Any]], int]]] = {
        "runs at once x threads per run": {
            f"{n} x 1 (default)": (session(1), default, n),
            f"1 x {n}, spinning": (session(n, spin=True), default, 1),
            f"1 x {n}, no spinning": (session(n), default, 1),
            "1 x 1": (session(1), default, 1),
        },
        "graph optimisation": {level: (session(1, level), default, n) for level in levels},
        "run size (padded tokens per run)": {
            f"{budget} (up to {max(1, budget // 256)} x 256)": (session(1), feeds(budget), n)
            for budget in (256, 1024, 2048, 4096, 8192)
        },
    }
    mean_tokens = sum(map(len, tokens)) / len(tokens)
    print(f"sweep: {len(texts)} SciFact abstracts, {mean_tokens:.0f} tokens each on average; tokenising "
          f"{1000 * tokenise:.2f} CPU ms/note; {rounds} interleaved rounds")
    for title, configs in groups.items():
        for sess, fl, _ in configs.values():
            run_feeds(sess, fl[:1], 1)
        wall: dict[str, list[float]] = {k: [] for k in configs}
        per_cpu: dict[str, list[float]] = {k: [] for k in configs}
        first = load()
        for _ in range(rounds):
            for name, (sess, fl, lanes) in configs.items():
                began, cpu = time.perf_counter(), time.process_time()
                run_feeds(sess, fl, lanes)
                wall[name].append(len(texts) / (time.perf_counter() - began))
                per_cpu[name].append(len(texts) / max(time.process_time() - cpu, 1e-9))
        print(f"\n{title} ({first} -> {load()})")
        print(f"| {'setting':32} | notes/s median [min-max] | notes per CPU-s |")
        for name in configs:
            print(f"| {name:32} | {spread(wall[name]):23} | {spread(per_cpu[name]):15} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--corpus", default="scifact,vault", help="comma-separated: scifact, vault (default: both)")
    p.add_argument("--data", type=Path, default=Path("/work/shared/bench/scifact"))
    p.add_argument("--notes", type=int, default=10000, help="notes in the generated vault (default 10000)")
    p.add_argument("--limit", type=int, default=None, help="only the first N SciFact abstracts (a quick run)")
    p.add_argument("--dest", type=Path, default=Path(tempfile.gettempdir()) / "vivary-bench-index",
                   help="where the workspaces are built, or reused when they exist")
    p.add_argument("--edits-runs", type=int, default=3, help="re-index runs after editing 10 notes (default 3)")
    p.add_argument("--sweep", action="store_true", help="measure the settings instead (see above)")
    p.add_argument("--sweep-docs", type=int, default=96)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    args = p.parse_args(argv)

    import onnxruntime

    from vivary_git.memory.local import embed as embed_mod
    from vivary_git.memory.local.embed import load_embedder
    from vivary_git.memory.local.index import _FIRST_WINDOW, _WINDOW

    embedder: Any = load_embedder()
    print(f"machine: {cores()} usable cores, {load()}; onnxruntime {onnxruntime.__version__}")
    print(f"embedder {embedder.model_id}: {embedder.lanes} run(s) at once x "
          f"{embedder.session.get_session_options().intra_op_num_threads} thread(s) each; runs of up to "
          f"{embed_mod.BATCH_SIZE} texts and {embed_mod.TOKEN_BUDGET} padded tokens, sorted by length within "
          f"windows of {_FIRST_WINDOW} then {_WINDOW} texts")
    if args.sweep:
        sweep(args.data, args.sweep_docs, args.rounds)
        return 0
    args.dest.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Any] = {"cores": cores()}
    for name in args.corpus.split(","):
        if name == "scifact":
            path, edit = scifact_workspace(args.dest, args.data, args.limit)
        elif name == "vault":
            path, edit = vault_workspace(args.dest, args.notes)
        else:
            raise SystemExit(f"unknown corpus {name!r}: scifact or vault")
        figures[name] = corpus_figures(name, path, edit, embedder, args.edits_runs)
    print(f"\n{load()}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
