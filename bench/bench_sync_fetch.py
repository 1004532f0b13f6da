#!/usr/bin/env python3
"""`git vivary sync fetch` of a shared cache: this checkout against another revision, interleaved.

    python bench/bench_sync_fetch.py --origin /tmp/lead/mc10k/origin.git --against 90a68b9 --runs 8
    python bench/bench_sync_fetch.py --origin ORIGIN --old /path/to/other/tree --jobs 1

ORIGIN is a bare repository whose `refs/vivary/cache` holds a CI's cache (`bench/bench_memory_cache.py`
builds one: 10,000 notes, their parses and vectors). It is cloned once (untimed, `vivary.cacheTrust any`);
before every run that clone is copied afresh to one path (Git's index refreshed, untimed), so every run is
the first fetch of a fresh clone. Runs of the two sides alternate, and which goes first alternates too (the
machines this runs on are shared and noisy). Each run prints wall, user and system seconds of the command
and its children (Git's fetch included), and every run's output, exit code and adopted cache commit must
be the same on both sides: the table says so, or the script fails.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def timed(src: Path, ws: Path, jobs: str | None) -> tuple[float, float, float, tuple[str, str, int, str]]:
    """(wall, user, system) seconds of `git vivary sync fetch origin` run from source tree `src`, and
    what it said and adopted."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VIVARY_STATS")}
    env["PYTHONPATH"] = str(src)
    if jobs is not None:
        env["VIVARY_JOBS"] = jobs
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "vivary_git.main", "sync", "fetch", "origin"], cwd=ws, env=env,
                          capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tip = subprocess.run(["git", "rev-parse", "-q", "--verify", "refs/vivary/cache"], cwd=ws, capture_output=True,
                         text=True, check=False).stdout.strip()
    return (wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime,
            (proc.stdout, proc.stderr, proc.returncode, tip))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--origin", type=Path, required=True, help="bare repository holding refs/vivary/cache")
    side = ap.add_mutually_exclusive_group(required=True)
    side.add_argument("--against", help="the revision to compare with (checked out into a temporary worktree)")
    side.add_argument("--old", type=Path, help="a source tree to compare with")
    ap.add_argument("--runs", type=int, default=8, help="runs per side (default 8)")
    ap.add_argument("--jobs", help="VIVARY_JOBS for both sides (default: unset)")
    ap.add_argument("--dest", type=Path, help="folder for the clones (default: a temporary one)")
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-sync-fetch-", dir=args.dest))
    old_tree = args.old
    try:
        if old_tree is None:
            old_tree = work / "old"
            git(ROOT, "worktree", "add", "-q", "--detach", str(old_tree), args.against)
        for tree in (ROOT, old_tree):
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            subprocess.run([sys.executable, "-m", "compileall", "-q", "vivary_git"], cwd=tree, env=env, check=True)
        pristine, ws = work / "pristine", work / "clone"
        git(work, "clone", "-q", "--no-local", str(args.origin), str(pristine))
        git(pristine, "config", "vivary.cacheTrust", "any")
        sides = {"old": old_tree, "new": ROOT}
        times: dict[str, list[tuple[float, float, float]]] = {"old": [], "new": []}
        said: dict[str, set[tuple[str, str, int, str]]] = {"old": set(), "new": set()}
        loads = [os.getloadavg()[0]]
        for i in range(args.runs):
            for name in (("old", "new") if i % 2 == 0 else ("new", "old")):
                shutil.rmtree(ws, ignore_errors=True)
                shutil.copytree(pristine, ws, symlinks=True)
                subprocess.run(["git", "update-index", "-q", "--refresh"], cwd=ws, check=False)
                wall, user, system, outcome = timed(sides[name], ws, args.jobs)
                times[name].append((wall, user, system))
                said[name].add(outcome)
                print(f"run {i + 1} {name}: {wall:.2f} s wall, {user:.2f} s user, {system:.2f} s system", flush=True)
            loads.append(os.getloadavg()[0])
        print(f"\nload average (1 min) during the runs: {min(loads):.2f} to {max(loads):.2f}")
        print(f"{'':6} {'wall':>8} {'user':>8} {'system':>8}   (means of {args.runs} runs; median wall)")
        for name in ("old", "new"):
            cols = list(zip(*times[name], strict=True))
            print(f"{name:6} {statistics.mean(cols[0]):8.3f} {statistics.mean(cols[1]):8.3f} "
                  f"{statistics.mean(cols[2]):8.3f}   median {statistics.median(cols[0]):.3f}")
        ratio = statistics.mean(t[0] for t in times["new"]) / statistics.mean(t[0] for t in times["old"])
        cpu = (statistics.mean(t[1] + t[2] for t in times["new"]) /
               statistics.mean(t[1] + t[2] for t in times["old"]))
        print(f"new / old: wall {ratio:.2f}, user + system {cpu:.2f}")
        same = said["old"] == said["new"] and len(said["old"]) == 1
        print("output, exit code and adopted commit: " + ("the same on both sides, every run" if same else "DIFFER"))
        if not same:
            for name in ("old", "new"):
                for outcome in said[name]:
                    print(f"  {name}: {outcome!r}")
        return 0 if same else 1
    finally:
        if args.old is None and old_tree is not None and old_tree.exists():
            subprocess.run(["git", "worktree", "remove", "--force", str(old_tree)], cwd=ROOT, check=False)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
