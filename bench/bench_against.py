#!/usr/bin/env python3
"""This checkout against another revision of vivary-git, interleaved, on one 10,000-note workspace.

    python bench/bench_against.py --against 19499ea                    # cold, warm and staged, 8 runs each
    python bench/bench_against.py --against main~5 --steps cold --runs 12 --dest /tmp/v10k

"Nothing may get slower" is a claim about two revisions on one machine at one time. These machines are
shared and noisy (two cores, load moving from 1 to 8 within minutes), so the two sides are never
measured one batch after the other: every run of one side sits next to a run of the other, and which
goes first alternates. Each side runs as `python -m vivary_git.main` with its own tree first on
`PYTHONPATH`, byte-compiled first, on its own clone of the workspace (the two sides' caches never
meet).

Steps (each run prints wall, user and system seconds of the command and its children):
- cold:   `check --rev HEAD` with `.git/vivary` and `refs/vivary/*` removed before every run;
- warm:   `check --rev HEAD` again on the caches the previous run left;
- staged: `check --staged` after appending a line to 10 notes and staging them (the pre-commit hook's
          check; the same 10 edits on both sides).

The table gives the mean of each side and new / old for wall and user time, with the load average.
The old revision is checked out with `git worktree add --detach` into a temporary folder and removed
at the end.
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
from collections.abc import Mapping, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_graph import GIT_ENV, build, git  # noqa: E402  (a sibling script, not a package)

STEPS = ("cold", "warm", "staged")


def forget_caches(ws: Path) -> None:
    shutil.rmtree(ws / ".git" / "vivary", ignore_errors=True)
    for ref in git(ws, "for-each-ref", "--format=%(refname)", "refs/vivary").split():
        git(ws, "update-ref", "-d", ref)


def timed(src: Path, ws: Path, args: list[str]) -> tuple[float, float, float]:
    """(wall, user, system) seconds of `git vivary ARGS` run from source tree `src`."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "VIVARY_STATS")}
    env.update(GIT_ENV, PYTHONPATH=str(src))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "vivary_git.main", *args], cwd=ws, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{src}: git vivary {' '.join(args)} failed ({proc.returncode}): "
                         f"{proc.stderr.decode('utf-8', 'replace')[-800:]}")
    return wall, after.ru_utime - before.ru_utime, after.ru_stime - before.ru_stime


def edit_ten(ws: Path, notes: list[str], n: int) -> None:
    for rel in notes:
        with (ws / rel).open("a", encoding="utf-8") as fh:
            fh.write(f"\nbench edit {n}\n")
    git(ws, "add", "--", *notes)


def print_race(steps: Sequence[str], rows: Mapping[tuple[str, str], Sequence[tuple[float, ...]]],
               loads: Mapping[str, Sequence[float]], what: str) -> None:
    """The race's table: per step, the mean wall and `what` (a second time: user or CPU seconds) of each side,
    new/old for both, and the mean load. `rows[(step, side)]` holds (wall, that time, ...) per run."""
    print(f"\n| step | old wall | new wall | new/old | old {what} | new {what} | new/old | load |\n|{'---|' * 8}")
    for step in steps:
        old = [statistics.fmean(x) for x in zip(*rows[(step, "old")], strict=True)]
        new = [statistics.fmean(x) for x in zip(*rows[(step, "new")], strict=True)]
        print(f"| {step} | {old[0]:.3f} s | {new[0]:.3f} s | {new[0] / old[0]:.2f} | {old[1]:.3f} s | "
              f"{new[1]:.3f} s | {new[1] / old[1]:.2f} | {statistics.fmean(loads[step]):.1f} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--against", required=True, metavar="REV", help="the revision of vivary-git to race")
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--dest", type=Path, help="the workspace (built once by make_vault.py, then reused)")
    ap.add_argument("--runs", type=int, default=8, help="runs of each side per step (default 8)")
    ap.add_argument("--steps", default=",".join(STEPS), help="comma-separated, of: " + ", ".join(STEPS))
    args = ap.parse_args()
    steps = [s for s in args.steps.split(",") if s]
    if not steps or any(s not in STEPS for s in steps) or args.runs < 1:
        ap.error(f"--steps takes some of {', '.join(STEPS)}; --runs at least 1")
    dest = args.dest or Path(tempfile.gettempdir()) / f"vivary-bench-{args.notes}"
    build(dest, args.notes, 7)
    old_rev = git(ROOT, "rev-parse", "--verify", "--end-of-options", f"{args.against}^{{commit}}").strip()
    work = Path(tempfile.mkdtemp(prefix="vivary-against-"))
    old_src = work / "old"
    git(ROOT, "worktree", "add", "--detach", "--", str(old_src), old_rev)
    try:
        sides = {"old": old_src, "new": ROOT}
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        spaces = {}
        for side, src in sides.items():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "vivary_git")], env=env, check=True)
            spaces[side] = work / f"ws-{side}"
            git(work, "clone", "-q", "--no-local", "--", str(dest), str(spaces[side]))
        notes = sorted(git(spaces["old"], "ls-files", "--", "*.md").split())[:: max(1, args.notes // 10)][:10]
        print(f"{os.cpu_count()} CPUs; new = {git(ROOT, 'rev-parse', '--short', 'HEAD').strip()} (this checkout, "
              f"with its uncommitted changes), old = {old_rev[:7]} ({args.against}); {args.notes} notes, "
              f"{args.runs} interleaved runs per step")
        rows: dict[tuple[str, str], list[tuple[float, float, float]]] = {}
        loads: dict[str, list[float]] = {}
        for step in steps:
            for side in sides:  # each side's caches, for warm and staged
                forget_caches(spaces[side])
                timed(sides[side], spaces[side], ["check", "--rev", "HEAD"])
            for i in range(args.runs):
                if step == "staged":
                    for side in sides:
                        edit_ten(spaces[side], notes, i)
                order = ("old", "new") if i % 2 == 0 else ("new", "old")
                for side in order:
                    if step == "cold":
                        forget_caches(spaces[side])
                    cmd = ["check", "--staged"] if step == "staged" else ["check", "--rev", "HEAD"]
                    rows.setdefault((step, side), []).append(timed(sides[side], spaces[side], cmd))
                loads.setdefault(step, []).append(os.getloadavg()[0])
        print_race(steps, rows, loads, "user")
    finally:
        git(ROOT, "worktree", "remove", "--force", "--", str(old_src))
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
