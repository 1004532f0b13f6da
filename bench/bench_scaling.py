"""How a cold `check` scales with the cores: its serial and parallel parts, fitted from runs at 1, 2 and all cores.

    python bench/bench_scaling.py [--notes 10000] [--dest DIR] [--runs 5] [--jobs 1,2,4] [--repack]

Builds (or, with an existing --dest, reuses) a workspace with /work/shared/bench/make_vault.py (`--notes N
--wikilinks --commits 3`, as bench_graph.py does), then times `git vivary check --rev HEAD --json` cold
(`.git/vivary`, `refs/vivary/*` and `refs/notes/vivary` removed before every run, and the objects only they
reached) with VIVARY_JOBS=n for each n of --jobs (default 1, 2 and the usable cores), interleaved round by round
(1, 2, all, 1, 2, all, ...), and fits the medians to Amdahl's T(n) = s + p/n by least squares. It prints each n's
median wall, CPU (user + system of the command and its children) and peak RSS (the largest single process:
getrusage of a wrapper's children), then s (serial seconds), p (parallel seconds, on one core), the serial share
s / (s + p), the floor (`git cat-file --batch-all-objects --batch > /dev/null`: reading every object once) and each
median's ratio to it, with the load average before and after and how the objects are stored. Objects no ref
reaches (an earlier run's caches, packed by a repack while their refs stood) are counted and warned of: the floor
reads them and a clone would not have them (on 2026-12-06, 517 such objects, 77 MB of cache chunks, took a
100,000-note vault's floor from 1.07 to 1.43 s). The floor depends on that storage as much as on the machine:
loose objects cost the floor one file each (on this project's machines 1.3 s one day and 4.6 s another for the
same 100,000 notes, most of it system time), a packed repository's floor opens one file; `--repack` measures what
a clone has (and leaves out what no ref reaches). With 2 cores the fit has exactly two points.
CPU / wall below the job count means the command waited for a core: on a machine shared with other work
the wall figures, and so the fit, measure the sharing as much as the code.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_graph import GIT_ENV, build, git, make_cold, runnable, unreachable

from vivary_git.parallel import usable_cores  # what `git vivary` itself counts

# One wrapper per run: its RUSAGE_CHILDREN figures are that command's and its children's alone.
_WRAP = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)\n"
    "dt = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write(p.stderr.decode('utf-8', 'replace'))\n"
    "print(p.returncode, dt, r.ru_utime + r.ru_stime, r.ru_maxrss)\n"
)


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """(wall s, CPU s, peak RSS KiB) of one run of `cmd`; exits on a failure (1 = findings is fine)."""
    proc = subprocess.run([sys.executable, "-c", _WRAP, *cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          check=False)
    rc, wall, cpu, rss = proc.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}):\n{proc.stderr}")
    return float(wall), float(cpu), int(rss)


def fit(points: dict[int, float]) -> tuple[float, float]:
    """Least squares of T(n) = s + p/n over (n, T) points: (s, p)."""
    xs = [1 / n for n in points]
    ys = list(points.values())
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        raise SystemExit("need at least two different job counts to fit s + p/n")
    p = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    return my - p * mx, p


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000, help="notes in the generated workspace (default 10000)")
    ap.add_argument("--dest", type=Path, help="workspace folder: built if missing, reused if it is a Git repo "
                    "(default: $TMPDIR/vivary-bench-N-sSEED, shared with bench_graph.py)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=5, help="runs of each job count, interleaved (default 5)")
    ap.add_argument("--jobs", help="comma-separated VIVARY_JOBS values (default: 1, 2 and the usable cores)")
    ap.add_argument("--vivary", default="git vivary", help="our command (default: 'git vivary')")
    ap.add_argument("--repack", action="store_true", help="`git repack -ad` the workspace first, as a clone is and "
                    "as #28's 16-core table was measured (the generated workspace's objects are loose)")
    a = ap.parse_args()

    cores = usable_cores()
    jobs = sorted({int(j) for j in a.jobs.split(",")} if a.jobs else {1, min(2, cores), cores})
    if len(jobs) < 2 or min(jobs) < 1:
        raise SystemExit(f"--jobs needs at least two different counts >= 1, got {jobs}")
    dest = (a.dest or Path(tempfile.gettempdir()) / f"vivary-bench-{a.notes}-s{a.seed}").resolve()
    build(dest, a.notes, a.seed)
    ws = dest
    git(ws, "reset", "-q", "--hard", "HEAD")
    make_cold(ws)  # first: a repack while an earlier run's cache refs stood would pack their objects in for good
    if a.repack:
        git(ws, "repack", "-adq")  # what no ref reaches is left out of the one pack, as a clone leaves it out
    counted = dict(line.split(": ", 1) for line in git(ws, "count-objects", "-v").splitlines() if ": " in line)
    stray = unreachable(ws, "--repack leaves them out")
    storage = f"{int(counted.get('count', 0)):,} loose object(s), {int(counted.get('in-pack', 0)):,} in " \
              f"{counted.get('packs', '0')} pack(s), {stray:,} no ref reaches"
    ours = runnable(a.vivary)
    env = dict(os.environ, **GIT_ENV)
    env.pop("VIVARY_JOBS", None)
    started = load()
    print(f"machine: {cores} usable core(s), python {sys.version.split()[0]}; load {started}", file=sys.stderr)

    floor_cmd = ["git", "cat-file", "--batch-all-objects", "--batch"]
    timed(floor_cmd, ws, env)  # the objects into the page cache, as every later run finds them
    floors: list[float] = []
    walls: dict[int, list[float]] = {n: [] for n in jobs}
    cpus: dict[int, list[float]] = {n: [] for n in jobs}
    rss: dict[int, int] = dict.fromkeys(jobs, 0)
    for round_ in range(max(1, a.runs)):
        floors.append(timed(floor_cmd, ws, env)[0])
        # Alternate the order round by round, so that neither end of a round always gets the quieter moment.
        for n in jobs if round_ % 2 == 0 else reversed(jobs):
            make_cold(ws)
            wall, cpu, peak = timed([*ours, "check", "--rev", "HEAD", "--json"], ws, dict(env, VIVARY_JOBS=str(n)))
            walls[n].append(wall)
            cpus[n].append(cpu)
            rss[n] = max(rss[n], peak)
        print(f"  round {round_ + 1}: " + ", ".join(f"{n} job(s) {walls[n][-1]:.2f} s" for n in jobs),
              file=sys.stderr)
    ended = load()

    floor = statistics.median(floors)
    medians = {n: statistics.median(walls[n]) for n in jobs}
    s, p = fit(medians)
    notes = sum(1 for path in git(ws, "ls-tree", "-r", "-z", "--name-only", "HEAD").split("\0")
                if path.endswith(".md"))  # what is there: a reused --dest was built with its own --notes
    print(f"cold `check --rev HEAD --json`, {notes:,} Markdown files ({ws}), median of {a.runs} interleaved run(s); "
          f"{cores} usable core(s); load {started} -> {ended}; {storage}")
    print()
    print("| VIVARY_JOBS | wall s median [min-max] | CPU s median | CPU / wall | fit s + p/n | x floor "
          "| peak RSS MiB |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n in jobs:
        w = walls[n]
        cpu = statistics.median(cpus[n])
        print(f"| {n} | {medians[n]:.2f} [{min(w):.2f}-{max(w):.2f}] | {cpu:.2f} | {cpu / medians[n]:.2f} | "
              f"{s + p / n:.2f} | {medians[n] / floor:.1f} | {rss[n] / 1024:.0f} |")
    print()
    print(f"serial s = {s:.2f} s, parallel p = {p:.2f} s (on one core): serial share s / (s + p) = "
          f"{s / (s + p):.0%}; the most more cores can give: T -> {s:.2f} s ({(s + p) / s:.1f}x the one-job time)"
          if s > 0 else f"serial s = {s:.2f} s (the fit found no serial part), parallel p = {p:.2f} s")
    print(f"floor (`git cat-file --batch-all-objects --batch`): {floor:.2f} s median [{min(floors):.2f}-"
          f"{max(floors):.2f}]; all cores ({jobs[-1]}) at {medians[jobs[-1]] / floor:.1f}x the floor")
    git(ws, "reset", "-q", "--hard", "HEAD")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
