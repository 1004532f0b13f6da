"""Wall-clock cost of the graph commands on a generated workspace, next to the issue's targets.

    python bench/bench_graph.py [--notes 10000] [--dest DIR] [--runs 3] [--tropo PATH] [--tropo-notes 10000]
    python bench/bench_graph.py --notes 100000          # cold check + peak memory only (takes a while)
    python bench/bench_graph.py --parse-count           # also list blobs parsed/reused by every run

Builds (or, with an existing --dest, reuses) a workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks --commits 3`), then runs the real CLI as subprocesses (`git vivary …`):
`check --rev HEAD` cold (`.git/vivary` and `refs/vivary/*` removed before every run) and warm, `check --staged` after
appending a line to 10 notes and `git add` (fresh edits for every run), `check` on the working tree,
`query "graph memory"` (warm, and after a fresh line in one note), `blast ID` (the ID with the most
dependents) and `blast --base HEAD~1 --head HEAD`.
Baselines from the same run: `git cat-file --batch-all-objects --batch > /dev/null` (reading every
blob once) and, with `--tropo PATH` (or $VIVARY_TROPO) when N <= --tropo-notes, `tropo check --json`
(measured once by default: ~43 s at 10k notes). Every run of ours sets VIVARY_STATS=1 and the table
shows how many blobs each step parsed, reused from the cache, and whether the graph came from cache.

Figures are the best of --runs (after one warm-up for warm steps). Peak RSS is the largest single
process of the cold check (getrusage of a wrapper's children; parse workers count separately).
The work edits and resets the bench workspace (`git reset --hard HEAD` at the end).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

MAKE_VAULT = Path(__file__).resolve().parents[2] / "shared/bench/make_vault.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}
# One wrapper process per measured command: its RUSAGE_CHILDREN peak is that command's (and its
# children's) largest resident set, unpolluted by earlier runs.
_WRAP = (
    "import resource, subprocess, sys, time\n"
    "t = time.perf_counter()\n"
    "p = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL if sys.argv[1] == '-' else open(sys.argv[1], 'w'),"
    " stderr=subprocess.PIPE)\n"
    "dt = time.perf_counter() - t\n"
    "sys.stderr.write(p.stderr.decode('utf-8', 'replace'))\n"
    "print(p.returncode, dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


@dataclass
class Run:
    seconds: float
    rc: int
    rss_kib: int
    stats: dict[str, object] = field(default_factory=dict)
    stdout: str = ""


@dataclass
class Row:
    name: str
    runs: list[Run]
    target: float | None = None
    note: str = ""

    @property
    def best(self) -> Run:
        return min(self.runs, key=lambda r: r.seconds)


def measure(cmd: list[str], cwd: Path, *, capture: bool = False, stats: bool = True) -> Run:
    env = dict(os.environ, **GIT_ENV)
    if stats:
        env["VIVARY_STATS"] = "1"
    with tempfile.NamedTemporaryFile("r", suffix=".out", delete=False) as out:
        target = out.name if capture else "-"
    try:
        proc = subprocess.run([sys.executable, "-c", _WRAP, target, *cmd], cwd=cwd, env=env, capture_output=True,
                              text=True, check=False)
        rc, seconds, rss = proc.stdout.split()
        stdout = Path(target).read_text() if capture else ""
    finally:
        if capture:
            os.unlink(target)
    got: dict[str, object] = {}
    for line in proc.stderr.splitlines():
        if line.startswith("vivary: stats "):
            got = json.loads(line[len("vivary: stats "):])
    if int(rc) not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({rc}):\n{proc.stderr}")
    return Run(float(seconds), int(rc), int(rss), got, stdout)


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=dict(os.environ, **GIT_ENV)).stdout


def make_cold(ws: Path) -> None:
    """As a fresh clone has it: no `.git/vivary`, no `refs/vivary/*` or `refs/notes/vivary`, and none of the
    objects an earlier run's caches wrote. Left loose, those objects made the next run's cache write find them
    written (libgit2 writes no object it has) and the floor read them too: on 2026-12-06, with 1,112 of them
    from earlier runs, the floor was 1.57 s and a 2-job run 4.5x it; pruned, 1.27 s and 6.1x."""
    shutil.rmtree(ws / ".git" / "vivary", ignore_errors=True)
    for ref in git(ws, "for-each-ref", "--format=%(refname)", "refs/vivary", "refs/notes/vivary").split():
        git(ws, "update-ref", "-d", ref)
    git(ws, "prune", "--expire=now")  # only objects no ref reaches: the workspace's own commits stay


def unreachable(ws: Path, fix: str) -> int:
    """Objects the repository holds that no ref reaches (a fresh clone has none), warned of on stderr with `fix`:
    the floor reads every object, so they would inflate it."""
    held = len(git(ws, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    reached = len(git(ws, "rev-list", "--objects", "--all").splitlines())
    stray = max(0, held - reached)
    if stray:
        print(f"warning: {stray:,} packed object(s) no ref reaches (an earlier run's caches?): the floor reads them "
              f"and a clone would not have them; {fix}", file=sys.stderr)
    return stray


def runnable(vivary: str) -> list[str]:
    """`--vivary` as a command, once `--version` has run: exit 1 means findings to the timing loops, so a missing
    command (`git vivary` off PATH: git exits 1) would pass for a fast one."""
    ours = vivary.split()
    probe = subprocess.run([*ours, "--version"], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        raise SystemExit(f"`{vivary} --version` failed: {(probe.stderr or probe.stdout).strip()}; activate the "
                         "environment that has vivary-git (scripts/test makes .venv/test) or pass --vivary")
    return ours


def build(dest: Path, notes: int, seed: int) -> None:
    if (dest / ".git").exists():
        print(f"reusing {dest}", file=sys.stderr)
        return
    if dest.exists():
        raise SystemExit(f"{dest} exists but is not a Git repository; remove it or pick another --dest")
    t = time.perf_counter()
    subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--wikilinks",
                    "--commits", "3", "--seed", str(seed)], check=True)
    print(f"built {dest} ({notes} notes) in {time.perf_counter() - t:.1f} s", file=sys.stderr)


def edit_ten(ws: Path, rng: random.Random) -> None:
    notes = sorted(p for p in ws.glob("*/*/*.md"))
    picked = rng.sample(notes, min(10, len(notes)))
    for p in picked:
        with p.open("a", encoding="utf-8") as fh:
            fh.write(f"\nbench edit {rng.random():.12f}\n")
    git(ws, "add", "--", *(str(p.relative_to(ws)) for p in picked))


def edit_one(ws: Path, rng: random.Random) -> None:
    """A fresh line in one note of the working tree, not staged: the tree a `query` then reads is new."""
    notes = sorted(p for p in ws.glob("*/*/*.md"))
    with rng.choice(notes).open("a", encoding="utf-8") as fh:
        fh.write(f"\nbench edit {rng.random():.12f}\n")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000, help="notes in the generated workspace (default 10000)")
    ap.add_argument("--dest", type=Path, help="workspace folder: built if missing, reused if it is a Git repo "
                    "(default: $TMPDIR/vivary-bench-N-sSEED)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3, help="best of N for each step (default 3)")
    ap.add_argument("--tropo", default=os.environ.get("VIVARY_TROPO"), help="tropo binary to compare (default "
                    "$VIVARY_TROPO); not measured when absent")
    ap.add_argument("--tropo-notes", type=int, default=10_000, help="measure tropo only up to this many notes")
    ap.add_argument("--tropo-runs", type=int, default=1, help="tropo runs (default 1: ~43 s each at 10k notes)")
    ap.add_argument("--all-steps", action="store_true", help="above 20,000 notes run every step, not only the "
                    "cold check")
    ap.add_argument("--parse-count", action="store_true", help="also list parsed/reused/graph-cached for every run "
                    "of every step, not only the best (the table always shows the best run's)")
    ap.add_argument("--vivary", default="git vivary", help="our command (default: 'git vivary')")
    a = ap.parse_args()

    dest = a.dest or Path(tempfile.gettempdir()) / f"vivary-bench-{a.notes}-s{a.seed}"
    build(dest.resolve(), a.notes, a.seed)
    ws = dest.resolve()
    ours = runnable(a.vivary)
    rng = random.Random(a.seed)
    runs = max(1, a.runs)
    scale = max(1.0, a.notes / 10_000)
    only_cold = a.notes > 20_000 and not a.all_steps
    git(ws, "reset", "-q", "--hard", "HEAD")
    make_cold(ws)  # the floor reads every object: none an earlier run's caches left
    unreachable(ws, "`git repack -ad` leaves them out")
    rows: list[Row] = []

    def best_of(name: str, cmd: list[str], target: float | None, *, cold: bool = False, warm_up: bool = True,
                before: object = None, note: str = "") -> Row:
        if warm_up and not cold:
            measure(cmd, ws)
        got = []
        for _ in range(runs):
            if cold:
                # Truly cold: neither the local hot cache nor the shared ref cache (which this first run
                # also pays for recording).
                make_cold(ws)
            if callable(before):
                before()
            got.append(measure(cmd, ws))
        row = Row(name, got, target, note)
        rows.append(row)
        print(f"  {name}: {row.best.seconds:.3f} s", file=sys.stderr)
        return row

    cat = best_of("git cat-file --batch-all-objects --batch", ["git", "cat-file", "--batch-all-objects", "--batch"],
                  None, warm_up=True, note="baseline: read every object once")
    cold = best_of("check --rev HEAD (cold)", [*ours, "check", "--rev", "HEAD"], 1.0 * scale, cold=True,
                   note=".git/vivary and refs/vivary/* removed before each run")
    if not only_cold:
        best_of("check --rev HEAD (warm)", [*ours, "check", "--rev", "HEAD"], 0.2)
        measure([*ours, "check", "--staged"], ws)  # the index as committed: warm
        best_of("check --staged (10 notes edited)", [*ours, "check", "--staged"], 0.3, warm_up=False,
                before=lambda: edit_ten(ws, rng), note="fresh edits + git add before each run")
        best_of("check (working tree, warm)", [*ours, "check"], 0.2)
        git(ws, "reset", "-q", "--hard", "HEAD")
        best_of('query "graph memory" --rev HEAD (warm)', [*ours, "query", "graph memory", "--rev", "HEAD"], 0.3)
        measure([*ours, "query", "graph memory"], ws)  # the working tree's index, as committed
        best_of('query "graph memory" (one note edited)', [*ours, "query", "graph memory"], None, warm_up=False,
                before=lambda: edit_one(ws, rng), note="a fresh line in one note before each run: the index patched")
        git(ws, "reset", "-q", "--hard", "HEAD")
        graph = json.loads(measure([*ours, "graph", "--rev", "HEAD", "--json"], ws, capture=True).stdout)
        indeg = Counter(e["to"] for e in graph["edges"] if not e["broken"])
        hub, n_dep = indeg.most_common(1)[0]
        best_of(f"blast {hub} --rev HEAD (warm)", [*ours, "blast", hub, "--rev", "HEAD"], 0.3,
                note=f"{n_dep} direct dependents")
        best_of("blast --base HEAD~1 --head HEAD (warm)", [*ours, "blast", "--base", "HEAD~1", "--head", "HEAD"], 0.3)

    tropo_row: Row | None = None
    if a.tropo and a.notes <= a.tropo_notes:
        cmd = [a.tropo, "check", "--json"]
        got = [measure(cmd, ws, stats=False) for _ in range(max(1, a.tropo_runs))]
        tropo_row = Row("tropo check --json", got, None, f"reference tool, {len(got)} run(s)")
        rows.append(tropo_row)
        print(f"  tropo: {tropo_row.best.seconds:.3f} s", file=sys.stderr)
    git(ws, "reset", "-q", "--hard", "HEAD")

    print(f"\nworkspace: {ws}  ({a.notes} notes, --wikilinks --commits 3, seed {a.seed}); "
          f"best of {runs}; {os.cpu_count()} CPUs; load {os.getloadavg()[0]:.1f}")
    head = f"{'step':<46} {'seconds':>8} {'target':>8} {'ok':>3} {'/cat-file':>9} {'/tropo':>7} " \
           f"{'parsed':>7} {'reused':>7} {'graph$':>6}  note"
    print(head)
    print("-" * len(head))
    for r in rows:
        b = r.best
        ok = "" if r.target is None else ("yes" if b.seconds <= r.target else "NO")
        ratio_cat = f"{b.seconds / cat.best.seconds:.1f}x" if r is not cat else ""
        ratio_tropo = f"{b.seconds / tropo_row.best.seconds:.3f}" if tropo_row and r.name.startswith("check") else ""
        st = b.stats
        print(f"{r.name:<46} {b.seconds:>8.3f} {'' if r.target is None else f'{r.target:.1f}':>8} {ok:>3} "
              f"{ratio_cat:>9} {ratio_tropo:>7} {st.get('parsed', '')!s:>7} {st.get('reused', '')!s:>7} "
              f"{st.get('graph_cached', '')!s:>6}  {r.note}")
    if a.parse_count:
        print("\nparse counts per run (parsed/reused/graph cached):")
        for r in rows:
            if r is not cat and r is not tropo_row:
                each = ", ".join(f"{x.stats.get('parsed', '-')}/{x.stats.get('reused', '-')}/"
                                 f"{x.stats.get('graph_cached', '-')}" for x in r.runs)
                print(f"  {r.name:<46} {each}")
    rss_mib = cold.best.rss_kib / 1024
    verdict = ("ok" if rss_mib <= 1024 else "OVER") if a.notes >= 100_000 else "no target below 100k notes"
    print(f"\npeak RSS of the cold check (largest single process): {rss_mib:.0f} MiB "
          f"(target at 100k notes: <= 1024 MiB): {verdict}")
    if tropo_row:
        print(f"tropo check --json: {tropo_row.best.seconds:.2f} s; cold check is "
              f"{tropo_row.best.seconds / cold.best.seconds:.0f}x faster")
    return 0


if __name__ == "__main__":
    sys.exit(main())
