"""A cold `check` from pure Python against the same code with its hot path compiled by mypyc, interleaved.

    python bench/bench_compiled.py --dest /tmp/v10k [--runs 3] [--jobs 1,2] [--work DIR]
    python bench/bench_compiled.py --notes 100000 --runs 3

Copies this checkout's `vivary_git` twice into --work (default: a temporary folder), byte-compiles both, and
compiles the hot-path modules (COMPILED below: parsing a note, its body, the per-note checks, the dialect's
links; --modules for another set) in the second copy with mypyc (`python -m mypyc`, part of mypy), timing
that build. Then it runs `python -m vivary_git check --rev HEAD --json --no-cache` in the workspace (--dest:
reused if it is a Git repository, else built by /work/shared/bench/make_vault.py as bench_graph.py builds it)
with PYTHONPATH set to one copy or the other and VIVARY_JOBS=n for each n of --jobs, pure and compiled side by
side round after round (which goes first alternates), and prints each side's median wall and CPU (user + system
of the command and its children), compiled / pure, and the floor (`git cat-file --batch-all-objects --batch`:
reading every object once), with the load before and after. `--no-cache` makes every run cold without writing
into the workspace (no `.git/vivary`, no `refs/vivary/cache`): the workspace is only read. Each run's JSON is
compared with the other side's: a difference is an error, since compiled code must say what pure code says.

CPU seconds are the steadier figure on a shared machine (wall counts the waits for a core); compare runs from
one machine at one time only.
"""

from __future__ import annotations

import argparse
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_graph import GIT_ENV, build

ROOT = Path(__file__).resolve().parents[1]
# The modules a cold check spends its per-note Python time in (py-spy, 100,000 notes: parse_blob, the body's links,
# the per-note checks, the dialect's reading of a link) that mypyc compiles correctly. Not graph.py, parses.py and
# config.py: mypyc rewrites a compiled class's annotations to bare runtime classes (`str | None` becomes `type`,
# `list[Node]` `list`), so their msgspec Structs (Graph, Facts, Stats, Config) decode nothing they encoded
# ("Expected `type`, got `NoneType` - at `$.tree`"): every local cache is dropped as damaged and every parse a
# forked worker sends back is done again.
COMPILED = (
    "vivary_git/scalars.py", "vivary_git/parse.py", "vivary_git/body.py", "vivary_git/check.py",
    "vivary_git/dialects/vivary.py", "vivary_git/dialects/registry.py",
)
# mypyc reads mypy's settings from the folder it runs in: the project's own (pyproject.toml [tool.mypy]).
_MYPY_INI = """[mypy]
python_version = 3.11
strict = True
warn_unreachable = True

[mypy-pygit2.*,hnswlib.*,onnxruntime.*,tokenizers.*,frontmatter.*,detect_secrets.*,trafilatura.*,pypdf.*,cognee.*]
ignore_missing_imports = True
"""
# One wrapper per run: its RUSAGE_CHILDREN figures are that command's and its children's alone.
_WRAP = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[2:], stdout=open(sys.argv[1], 'wb'), stderr=subprocess.PIPE)\n"
    "dt = time.perf_counter() - t\n"
    "r = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "sys.stderr.write(p.stderr.decode('utf-8', 'replace'))\n"
    "print(p.returncode, dt, r.ru_utime + r.ru_stime)\n"
)


def copies(work: Path, modules: list[str]) -> tuple[Path, Path, float]:
    """(pure, compiled, build seconds): this checkout's package twice under `work`, the second with `modules` built
    in place by mypyc. Both byte-compiled, so that no run pays for compiling a module (PYTHONDONTWRITEBYTECODE)."""
    pure, compiled = work / "pure", work / "compiled"
    for side in (pure, compiled):
        shutil.rmtree(side, ignore_errors=True)
        shutil.copytree(ROOT / "vivary_git", side / "vivary_git", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    (compiled / "mypy.ini").write_text(_MYPY_INI, encoding="utf-8")
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "mypyc", *modules], cwd=compiled, capture_output=True, text=True,
                          check=False)
    took = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"mypyc failed ({proc.returncode}):\n{proc.stdout[-4000:]}{proc.stderr[-4000:]}")
    for side in (pure, compiled):
        compileall.compile_dir(side / "vivary_git", quiet=1)
    probe = "import importlib, sys\nfor m in sys.argv[1:]:\n    print(importlib.import_module(m).__file__)\n"
    names = [path.removesuffix(".py").replace("/", ".") for path in modules]
    files = subprocess.run([sys.executable, "-c", probe, *names], cwd=work, env=dict(os.environ, PYTHONPATH=str(
        compiled)), capture_output=True, text=True, check=True).stdout.split()
    pure_py = [f for f in files if not f.endswith(".so")]
    if pure_py:
        raise SystemExit(f"mypyc built, but these still load as Python: {', '.join(pure_py)}")
    return pure, compiled, took


def timed(cmd: list[str], cwd: Path, env: dict[str, str], out: Path) -> tuple[float, float]:
    """(wall s, CPU s) of one run of `cmd`, its stdout into `out`; exits on a failure (1 = findings is fine)."""
    proc = subprocess.run([sys.executable, "-c", _WRAP, str(out), *cmd], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)
    rc, wall, cpu = proc.stdout.split()
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}):\n{proc.stderr}")
    return float(wall), float(cpu)


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def spread(xs: list[float]) -> str:
    return f"{statistics.median(xs):.2f} [{min(xs):.2f}-{max(xs):.2f}]"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000, help="notes in a generated workspace (default 10000)")
    ap.add_argument("--dest", type=Path, help="workspace: reused if it is a Git repo, else built (default: "
                    "$TMPDIR/vivary-bench-N-sSEED, shared with bench_graph.py)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3, help="runs of each side and job count, interleaved (default 3)")
    ap.add_argument("--jobs", default="1,2", help="comma-separated VIVARY_JOBS values (default 1,2)")
    ap.add_argument("--modules", help="comma-separated files to compile (default: COMPILED)")
    ap.add_argument("--work", type=Path, help="folder for the two copies (default: a temporary one, removed)")
    a = ap.parse_args()

    jobs = [int(j) for j in a.jobs.split(",")]
    ws = (a.dest or Path(tempfile.gettempdir()) / f"vivary-bench-{a.notes}-s{a.seed}").resolve()
    build(ws, a.notes, a.seed)
    work = a.work.resolve() if a.work else Path(tempfile.mkdtemp(prefix="vivary-compiled-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        return measure(ws, work, jobs, max(1, a.runs), a.modules.split(",") if a.modules else list(COMPILED))
    finally:
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)


def measure(ws: Path, work: Path, jobs: list[int], runs: int, modules: list[str]) -> int:
    pure, compiled, took = copies(work, modules)
    sides = {"pure": pure, "compiled": compiled}
    env = dict(os.environ, **GIT_ENV)
    env.pop("VIVARY_JOBS", None)
    started = load()
    print(f"mypyc built {len(modules)} modules in {took:.0f} s; python {sys.version.split()[0]}, "
          f"{os.cpu_count()} CPU(s), load {started}", file=sys.stderr)
    floor_cmd = ["git", "cat-file", "--batch-all-objects", "--batch"]
    timed(floor_cmd, ws, env, work / "floor.out")  # the objects into the page cache, as every later run finds them
    floors: list[float] = []
    walls = {(side, n): [] for side in sides for n in jobs}
    cpus = {(side, n): [] for side in sides for n in jobs}
    cmd = [sys.executable, "-m", "vivary_git", "check", "--rev", "HEAD", "--json", "--no-cache"]
    for round_ in range(runs):
        floors.append(timed(floor_cmd, ws, env, work / "floor.out")[0])
        for n in jobs:
            order = list(sides) if (round_ + n) % 2 == 0 else list(reversed(sides))
            for side in order:
                run_env = dict(env, PYTHONPATH=str(sides[side]), VIVARY_JOBS=str(n))
                wall, cpu = timed(cmd, ws, run_env, work / f"{side}.json")
                walls[side, n].append(wall)
                cpus[side, n].append(cpu)
            if (work / "pure.json").read_bytes() != (work / "compiled.json").read_bytes():
                raise SystemExit(f"compiled and pure `check --json` differ (VIVARY_JOBS={n}): compare "
                                 f"{work / 'pure.json'} and {work / 'compiled.json'}")
        print(f"  round {round_ + 1}: " + ", ".join(f"{side} {n} job(s) {walls[side, n][-1]:.2f} s" for n in jobs
                                                    for side in sides), file=sys.stderr)
    ended = load()
    floor = statistics.median(floors)
    notes = sum(1 for line in subprocess.run(["git", "ls-tree", "-r", "-z", "--name-only", "HEAD"], cwd=ws,
                                             capture_output=True, text=True, check=True).stdout.split("\0")
                if line.endswith(".md"))
    print(f"cold `check --rev HEAD --json --no-cache`, {notes:,} Markdown files ({ws}), median [min-max] of {runs} "
          f"interleaved run(s) a side; {os.cpu_count()} CPU(s); load {started} -> {ended}; mypyc build {took:.0f} s")
    print(f"compiled: {', '.join(m.removeprefix('vivary_git/') for m in modules)}")
    print()
    print("| VIVARY_JOBS | pure wall s | compiled wall s | wall compiled / pure | pure CPU s | compiled CPU s "
          "| CPU compiled / pure | x floor pure / compiled |")
    print("|---:|---|---|---:|---|---|---:|---|")
    for n in jobs:
        pw, cw = statistics.median(walls["pure", n]), statistics.median(walls["compiled", n])
        pc, cc = statistics.median(cpus["pure", n]), statistics.median(cpus["compiled", n])
        print(f"| {n} | {spread(walls['pure', n])} | {spread(walls['compiled', n])} | {cw / pw:.2f} | "
              f"{spread(cpus['pure', n])} | {spread(cpus['compiled', n])} | {cc / pc:.2f} | "
              f"{pw / floor:.1f} / {cw / floor:.1f} |")
    print()
    print(f"floor (`git cat-file --batch-all-objects --batch`): {spread(floors)} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
