"""The MCP server on a 10,000-note workspace: start to first answer, warm search, add to searchable.

    python bench/bench_mcp.py [--notes 10000] [--dest DIR] [--queries 40] [--adds 5]

Builds (or reuses, with an existing --dest) a workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks --commits 3`), then, through the MCP SDK's own client over stdio
(`git vivary mcp`, started as a host starts it):

- start → first `search` answer: process start, SDK handshake, the workspace read, the privacy
  snapshot and the search index built (cold: `.git/vivary/mcp-search*` removed first; then warm);
- warm `search`: p50/p95 over --queries different queries, text mode (the freshness check, writing
  the working tree as a tree, is inside every one);
- `add` → searchable: from calling `add` (probe, secret scan, commit, index and work-tree update)
  until a `search` for its text returns it, over --adds memories.

Baseline, measured in the same run: `git vivary find QUERY --json` (a fresh process per call, what an
agent shelling out pays per question), median of 5 warm runs. Goals (from the issue): warm search p50
≤ 50 ms (text), add → searchable ≤ 0.5 s. The memories added are removed at the end
(`git reset --hard` to the starting commit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MAKE_VAULT = ROOT.parent / "shared/bench/make_vault.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}
WORDS = ["graph", "memory", "module", "decision", "change", "gate", "verification", "cache", "index", "deploy",
         "privacy", "review", "release", "schema", "parser", "budget", "token", "search", "recall", "hook"]


def _vault(dest: Path, notes: int) -> None:
    if (dest / ".git").is_dir():
        return
    subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--wikilinks", "--commits",
                    "3"], check=True, stdout=subprocess.DEVNULL)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def _session(dest: Path, queries: list[str], adds: int) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"], cwd=str(dest),
                                   env=dict(os.environ, **GIT_ENV))
    started = time.perf_counter()
    async with Client(params) as client:
        first = await client.call_tool("search", {"query": "graph memory"})
        assert not first.is_error, first.content
        start_to_first = time.perf_counter() - started
        times = []
        for q in queries:
            t = time.perf_counter()
            got = await client.call_tool("search", {"query": q})
            times.append(time.perf_counter() - t)
            assert not got.is_error
            mode = (got.structured_content or {}).get("mode")
        searchable = []
        for i in range(adds):
            text = f"Benchmark memory {i}: the quokka release train leaves at {i + 7} o'clock"
            t = time.perf_counter()
            added = await client.call_tool("add", {"text": text, "force": True})
            assert not added.is_error, added.content
            mid = (added.structured_content or {})["id"]
            while True:
                got = await client.call_tool("search", {"query": f"quokka release train {i + 7}", "top_k": 3})
                if any(r["id"] == mid for r in (got.structured_content or {}).get("results", [])):
                    break
            searchable.append(time.perf_counter() - t)
    return {"start": start_to_first, "search": times, "mode": mode, "searchable": searchable}


def _cli_find(dest: Path, query: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vivary_git.main", "find", query, "--json"], cwd=dest, check=True,
                   stdout=subprocess.DEVNULL, env=dict(os.environ, **GIT_ENV))
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--dest", type=Path, default=None)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--adds", type=int, default=5)
    args = ap.parse_args()
    dest = args.dest or Path(os.environ.get("TMPDIR", "/tmp")) / f"vivary-bench-mcp-{args.notes}"
    _vault(dest, args.notes)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True,
                          check=True).stdout.strip()
    queries = [f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]}" for i in range(args.queries)]
    print(f"# {args.notes} notes at {dest}; {os.cpu_count()} CPU(s), load {os.getloadavg()[0]:.1f}", file=sys.stderr)
    try:
        for cached in (dest / ".git/vivary").glob("mcp-search*"):
            shutil.rmtree(cached, ignore_errors=True)
        _cli_find(dest, "graph memory")  # warms the graph and query caches the CLI uses
        baseline = statistics.median(_cli_find(dest, q) for q in queries[:5])
        cold = asyncio.run(_session(dest, queries, args.adds))
        subprocess.run(["git", "reset", "-q", "--hard", head], cwd=dest, check=True)
        warm = asyncio.run(_session(dest, queries, 0))
    finally:
        subprocess.run(["git", "reset", "-q", "--hard", head], cwd=dest, check=True)
    s = warm["search"] + cold["search"]
    rows = [
        ("baseline: `git vivary find` per call (warm, median)", baseline, "-"),
        ("start -> first search (cold index)", cold["start"], "-"),
        ("start -> first search (warm caches)", warm["start"], "-"),
        (f"warm search p50 ({cold['mode']})", _pct(s, 0.5), "<= 0.050"),
        (f"warm search p95 ({cold['mode']})", _pct(s, 0.95), "-"),
        ("add -> searchable, median", statistics.median(cold["searchable"]), "<= 0.500"),
        ("add -> searchable, max", max(cold["searchable"]), "-"),
    ]
    print(f"{'step':<55} {'seconds':>8}  {'goal':>8}  {'x baseline':>10}")
    for name, value, goal in rows:
        print(f"{name:<55} {value:8.3f}  {goal:>8}  {value / baseline:10.2f}")


if __name__ == "__main__":
    main()
