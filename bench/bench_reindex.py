#!/usr/bin/env python3
"""`git vivary index --yes` after editing 10 notes of a 10,000-note vault: this checkout against another
revision of vivary-git, interleaved, on the same clone restored to the same path before every run.

    python bench/bench_reindex.py --origin /tmp/mc10k/origin.git --against be5a5a7
    python bench/bench_reindex.py --origin /tmp/mc10k/origin.git --against main --runs 12 --steps edit

`--origin` is a bare repository whose `refs/vivary/cache` holds a vector for every note, as
`bench/bench_memory_cache.py --dest DIR` leaves in DIR/origin.git. The clone (`sync fetch` with
`vivary.cacheTrust any`, then one `index --yes` by the old side, which takes every fetched vector) is kept as
a pristine copy; the memory index's dataset is named after the clone's folder, so every run restores it to
one path (and refreshes Git's stat data, which a copy changes). Steps, each run timed (wall, and the CPU
seconds of the command and its children):
- edit:      10 admitted notes get a line appended, then `index --yes --json` (embeds exactly 10);
- unchanged: `index --yes --json` on the pristine copy (nothing to embed);
- commit:    the 10 edits committed, then `index --yes --json --rev HEAD` (the post-commit hook's run,
             which also records the 10 vectors in refs/vivary/cache).
The two sides alternate run by run (which goes first too). Each run's `--json` output (less `seconds`) and
the state files it leaves are compared between the sides: a difference is printed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_against import print_race  # noqa: E402  (sibling scripts, not a package)
from bench_first_recall import env, restore  # noqa: E402
from bench_graph import GIT_ENV  # noqa: E402

STEPS = ("edit", "unchanged", "commit")


def run(args: list[str], cwd: Path, src: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(args, cwd=cwd, env={**env(src), **GIT_ENV}, capture_output=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args[:5])} failed ({proc.returncode}): {proc.stderr.decode()[-800:]}")
    return proc


def git(cwd: Path, *args: str) -> str:
    return run(["git", *args], cwd).stdout.decode()


def vivary(src: Path, ws: Path, args: list[str]) -> tuple[float, float, bytes]:
    """(wall, CPU seconds, stdout) of `git vivary ARGS` run from source tree `src`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = run(["git", "vivary", *args], ws, src)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc.stdout


def edit_ten(ws: Path, src: Path) -> None:
    """Append a line to 10 admitted notes (the snapshot's first 10 nodes), as bench_memory_cache.py does."""
    code = ("import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]); "
            "from bench_memory_cache import edit_notes; edit_notes(Path(sys.argv[1]), 10)")
    run([sys.executable, "-c", code, str(ws), str(ROOT / "bench")], ws, src)


def state(ws: Path) -> dict[str, str]:
    """sha256 of each file of the memory index's state folder."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted((ws / ".git" / "vivary" / "memory").glob("*/*")) if p.is_file()}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--origin", type=Path, required=True, help="bare origin whose refs/vivary/cache has every vector")
    ap.add_argument("--against", required=True, metavar="REV", help="the revision of vivary-git to race")
    ap.add_argument("--runs", type=int, default=8, help="runs of each side per step (default 8)")
    ap.add_argument("--steps", default=",".join(STEPS), help="comma-separated, of: " + ", ".join(STEPS))
    args = ap.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    if not steps or any(s not in STEPS for s in steps) or args.runs < 1:
        ap.error(f"--steps takes some of {', '.join(STEPS)}; --runs at least 1")
    old_rev = git(ROOT, "rev-parse", "--verify", "--end-of-options", f"{args.against}^{{commit}}").strip()
    work = Path(tempfile.mkdtemp(prefix="vivary-reindex-"))
    old_src = work / "old"
    git(ROOT, "worktree", "add", "--detach", "--", str(old_src), old_rev)
    try:
        sides = {"old": old_src, "new": ROOT}
        for src in sides.values():
            run([sys.executable, "-m", "compileall", "-q", str(src / "vivary_git")], work)
        ws, pristine = work / "ws", work / "ws.pristine"
        git(work, "clone", "-q", "--no-local", "--", str(args.origin.resolve()), str(ws))
        git(ws, "config", "vivary.cacheTrust", "any")
        run(["git", "vivary", "sync", "fetch", "origin"], ws, old_src)
        run(["git", "vivary", "index", "--yes"], ws, old_src)
        run(["cp", "-a", str(ws), str(pristine)], work)
        print(f"{os.cpu_count()} CPUs; new = {git(ROOT, 'rev-parse', '--short', 'HEAD').strip()} (this checkout, "
              f"with its uncommitted changes), old = {old_rev[:7]} ({args.against}); {args.runs} interleaved runs "
              "per step")
        rows: dict[tuple[str, str], list[tuple[float, float]]] = {}
        loads: dict[str, list[float]] = {}
        for step in steps:
            for i in range(args.runs):
                seen: dict[str, tuple[str, dict[str, str]]] = {}
                for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                    restore(pristine, ws)
                    cmd = ["index", "--yes", "--json"]
                    if step != "unchanged":
                        edit_ten(ws, sides[side])
                    if step == "commit":
                        git(ws, "commit", "-qam", "ten edits")
                        cmd += ["--rev", "HEAD"]
                    loads.setdefault(step, []).append(os.getloadavg()[0])
                    wall, cpu, out = vivary(sides[side], ws, cmd)
                    rows.setdefault((step, side), []).append((wall, cpu))
                    report = json.loads(out)
                    report.pop("seconds")
                    seen[side] = (json.dumps(report, sort_keys=True), state(ws))
                if seen["old"][0] != seen["new"][0]:
                    print(f"{step} run {i}: the --json outputs differ:\n  old {seen['old'][0]}\n  new {seen['new'][0]}")
                differ = sorted(n for n in seen["old"][1].keys() | seen["new"][1].keys()
                                if seen["old"][1].get(n) != seen["new"][1].get(n))
                if differ:
                    print(f"{step} run {i}: state files differ: {', '.join(differ)}")
        print_race(steps, rows, loads, "CPU")
        for step in steps:
            for side in ("old", "new"):
                walls = sorted(w for w, _ in rows[(step, side)])
                print(f"  {step} {side} walls: {' '.join(f'{w:.2f}' for w in walls)}")
    finally:
        git(ROOT, "worktree", "remove", "--force", "--", str(old_src))
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
