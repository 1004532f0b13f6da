"""What hiding private notes costs `query` and `find` (hidden.py: one privacy decision per run).

    python bench/bench_search_privacy.py [--notes 10000] [--repeat 7] [--dest DIR]

Builds a workspace with `/work/shared/bench/make_vault.py DEST --notes N --wikilinks` (it holds the
private `USER.md`, `MEMORY.md`, `memory/`), warms the caches, then times the real CLI as subprocesses,
interleaved (A, B, A, B, …), median of R runs each:

- `query "graph memory" --rev HEAD --include-private` (the baseline: no privacy decision) against
  `query "graph memory" --rev HEAD` (private notes hidden: `hidden.PrivateNodes` asks about the best
  candidates and their edge targets only), and the same two in the working tree;
- `find "graph memory" --rev HEAD`, which always decides;
- in-process: `hidden_ids(ws)` (every node decided at once), on a warm workspace.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

MAKE_VAULT = "/work/shared/bench/make_vault.py"


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, check=False)
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--notes", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--dest", type=Path)
    a = ap.parse_args()
    dest = a.dest or Path(tempfile.gettempdir()) / f"vivary-bench-search-{a.notes}"
    if not (dest / ".git").is_dir():
        subprocess.run([sys.executable, MAKE_VAULT, str(dest), "--notes", str(a.notes), "--wikilinks"], check=True,
                       stdout=subprocess.DEVNULL)
    vivary = [str(Path(sys.executable).parent / "git-vivary")]
    q = ["graph memory"]
    pairs = [
        ("query --rev HEAD", ["query", *q, "--rev", "HEAD", "--include-private"], ["query", *q, "--rev", "HEAD"]),
        ("query (working tree)", ["query", *q, "--include-private"], ["query", *q]),
    ]
    for _, base, hidden in pairs:  # warm every cache both use
        timed(vivary + base, dest)
        timed(vivary + hidden, dest)
    timed([*vivary, "find", *q, "--rev", "HEAD"], dest)
    print(f"{a.notes} notes, {os.cpu_count()} CPU(s), load {os.getloadavg()[0]:.2f}; median of {a.repeat}, interleaved")
    print(f"{'':24} {'all notes':>10} {'private hidden':>15} {'difference':>11}")
    for name, base, hidden in pairs:
        ta: list[float] = []
        tb: list[float] = []
        for _ in range(a.repeat):
            ta.append(timed(vivary + base, dest))
            tb.append(timed(vivary + hidden, dest))
        ma, mb = statistics.median(ta), statistics.median(tb)
        print(f"{name:24} {ma * 1000:8.0f}ms {mb * 1000:13.0f}ms {(mb - ma) * 1000:+9.0f}ms")
    tf = statistics.median(timed([*vivary, "find", *q, "--rev", "HEAD"], dest) for _ in range(a.repeat))
    print(f"{'find --rev HEAD':24} {'':>10} {tf * 1000:13.0f}ms")

    from vivary_git import open_workspace
    from vivary_git.hidden import hidden_ids

    ws = open_workspace(dest, rev="HEAD")
    ws.graph()
    runs = []
    for _ in range(a.repeat):
        start = time.perf_counter()
        hidden = hidden_ids(ws)
        runs.append(time.perf_counter() - start)
    print(f"hidden_ids(ws) in-process: {statistics.median(runs) * 1000:.0f}ms for {len(ws.graph().nodes)} nodes "
          f"({len(hidden)} private)")


if __name__ == "__main__":
    main()
