"""What the privacy-filtered memory snapshot costs on top of the graph it is built from.

    python bench/bench_snapshot.py [--notes 10000] [--dest DIR] [--runs 3]

Builds (or, with an existing --dest, reuses) a workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks`), then times, best of --runs, in the same run:

* CLI, warm (`.git/vivary` kept after a warm-up run): `git vivary graph --json --rev HEAD` (the
  baseline) against `git vivary index --dry-run --json --rev HEAD` and the same on the working tree;
* in-process, cold (`cache=False`: every blob parsed): `open_workspace(...).graph()` (the baseline)
  against `build_snapshot(...)` on a fresh workspace, and the privacy decision alone.

Prints seconds, the ratio to the baseline, and the snapshot's counts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

MAKE_VAULT = Path(__file__).resolve().parents[2] / "shared/bench/make_vault.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def best(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def cli(dest: Path, *args: str) -> Callable[[], str]:
    def go() -> str:
        proc = subprocess.run(["git", "vivary", *args], cwd=dest, capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            sys.exit(f"git vivary {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc.stdout
    return go


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--dest", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    dest = args.dest or Path(tempfile.gettempdir()) / f"vivary-bench-snapshot-{args.notes}"
    env = dict(os.environ, **GIT_ENV)
    if not (dest / ".git").is_dir():
        print(f"building {args.notes} notes in {dest} …", file=sys.stderr)
        subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(args.notes), "--wikilinks"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    os.environ.update(GIT_ENV)

    from vivary_git import open_workspace
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import build_snapshot, decide_for_source

    rows: list[tuple[str, float, float | None]] = []
    graph_cli = cli(dest, "graph", "--json", "--rev", "HEAD")
    graph_cli()  # warm-up: fills the parse and graph caches
    base = best(graph_cli, args.runs)
    rows.append(("CLI warm: graph --json --rev HEAD (baseline)", base, None))
    dry_rev = cli(dest, "index", "--dry-run", "--json", "--rev", "HEAD")
    report = json.loads(dry_rev())
    rows.append(("CLI warm: index --dry-run --json --rev HEAD", t := best(dry_rev, args.runs), t / base))
    dry_wt = cli(dest, "index", "--dry-run", "--json")
    dry_wt()
    rows.append(("CLI warm: index --dry-run --json (working tree)", t := best(dry_wt, args.runs), t / base))

    def graph_cold() -> None:
        open_workspace(dest, rev="HEAD", cache=False).graph()

    def snapshot_cold() -> None:
        ws = open_workspace(dest, rev="HEAD", cache=False)
        cfg = load_memory_config(ws)
        build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model)

    ws = open_workspace(dest, rev="HEAD")
    paths = [n.path for n in ws.graph().nodes]
    policy = load_memory_config(ws).policy()
    base_cold = best(graph_cold, args.runs)
    rows.append(("API cold: open_workspace(cache=False).graph() (baseline)", base_cold, None))
    rows.append(("API cold: build_snapshot (graph included)", t := best(snapshot_cold, args.runs), t / base_cold))
    rows.append((f"API: privacy decision alone ({len(paths)} paths, --rev tree)",
                 t := best(lambda: decide_for_source(ws, paths, policy), args.runs), t / base_cold))

    print(f"workspace {dest}: {report['would_index']} admitted, {report['private']} private, "
          f"{report['edges']} edges; cpus {os.cpu_count()}, load {os.getloadavg()[0]:.2f}; best of {args.runs}")
    width = max(len(r[0]) for r in rows)
    print(f"{'step':<{width}}  {'seconds':>8}  {'ratio':>6}")
    for name, secs, ratio in rows:
        print(f"{name:<{width}}  {secs:8.3f}  {'' if ratio is None else f'{ratio:5.2f}x':>6}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
