"""Digest and dream on a 10,000-note vault holding 2,000 memories.

    python bench/bench_dream.py [--notes 10000] [--memories 2000] [--dest DIR] [--runs 3]

Builds (or reuses, with an existing --dest) a workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks --commits 3`), then commits --memories memory notes under `memories/` in one
commit: 200 topics, each a few sentences drawn from its own words and the common ones, 5% pinned, 20%
durable, the rest working, some linked to vault notes. Then, as subprocesses (`git vivary ...`, warm:
the graph cached by a first `check`):

- `digest` (write MEMORY.md), `digest --check`;
- `dream --force` with no access log: every live memory is a seed, the worst case of a run (its records
  are removed before each run, so every run clusters and writes its tasks again);
- resolving one task with `--use-heuristic` (one commit; reset afterwards).

Baseline, in the same run: `git vivary check` on the working tree (warm), a whole-workspace read.
Goals (from the issue): digest <= 1 s, a dream run <= 10 s on this machine. Each step prints its median
wall time and its median CPU time (user + system): on a machine shared with other work the CPU time is
the figure to compare with the goals, the wall time says how loaded the machine was.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAKE_VAULT = ROOT.parent / "shared/bench/make_vault.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}
COMMON = ["team", "service", "config", "review", "weekly", "client", "server", "notes", "always", "check"]


def _env() -> dict[str, str]:
    env = dict(os.environ, **GIT_ENV)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


def _vault(dest: Path, notes: int) -> None:
    if (dest / ".git").is_dir():
        return
    subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--wikilinks", "--commits",
                    "3"], check=True, stdout=subprocess.DEVNULL)


def _memories(dest: Path, count: int) -> None:
    folder = dest / "memories"
    if folder.is_dir() and len(list(folder.iterdir())) >= count:
        return
    rng = random.Random(7)
    vault_notes = sorted(p.relative_to(dest).with_suffix("").as_posix() for p in dest.rglob("*.md")
                         if ".git" not in p.parts and "memories" not in p.parts)[:500]
    folder.mkdir(exist_ok=True)
    # the generator commits USER.md and MEMORY.md; the digest is refused while Git tracks MEMORY.md
    subprocess.run(["git", "rm", "-q", "--cached", "--ignore-unmatch", "MEMORY.md", "USER.md"], cwd=dest, check=True,
                   env=_env())
    with open(dest / ".gitignore", "a", encoding="utf-8") as fh:
        fh.write("USER.md\nMEMORY.md\n")
    subprocess.run(["git", "add", ".gitignore"], cwd=dest, check=True, env=_env())
    topics = [[f"t{t}w{i}" for i in range(12)] for t in range(200)]
    for n in range(count):
        words = topics[n % 200]
        sentences = []
        for _ in range(rng.randint(1, 4)):
            picked = rng.sample(words, 5) + rng.sample(COMMON, 2)
            rng.shuffle(picked)
            sentences.append(" ".join(picked).capitalize() + ".")
        tier = "pinned" if n % 20 == 0 else "durable" if n % 5 == 1 else "working"
        related = f'related: ["[[{rng.choice(vault_notes)}]]"]\n' if vault_notes and n % 3 == 0 else ""
        title = f"Memory {n} about {words[0]} and {words[1]}"
        (folder / f"memory-{n:05d}.md").write_text(
            f"---\ntype: memory\ntitle: \"{title}\"\ndurability: {tier}\n"
            f"observed_at: \"2026-01-{1 + n % 28:02d}T00:00:00Z\"\n{related}---\n# {title}\n\n{' '.join(sentences)}\n")
    subprocess.run(["git", "add", "-A", "memories"], cwd=dest, check=True, env=_env())
    subprocess.run(["git", "commit", "-qm", "memories"], cwd=dest, check=True, env=_env())


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _time(args: list[str], cwd: Path, runs: int, before: object = None) -> tuple[float, float, str]:
    """Median wall time and median CPU time (user + system of the process and its children)."""
    times, cpus = [], []
    out = ""
    for _ in range(runs):
        if callable(before):
            before()
        t, c = time.perf_counter(), _cpu()
        proc = subprocess.run(["git", "vivary", *args], cwd=cwd, capture_output=True, text=True, env=_env(),
                              check=False)
        times.append(time.perf_counter() - t)
        cpus.append(_cpu() - c)
        if proc.returncode not in (0, 1):
            raise SystemExit(f"git vivary {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()}")
        out = proc.stdout
    return statistics.median(times), statistics.median(cpus), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--memories", type=int, default=2_000)
    ap.add_argument("--dest", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    dest = args.dest or Path(os.environ.get("TMPDIR", "/tmp")) / f"vivary-bench-dream-{args.notes}-{args.memories}"
    _vault(dest, args.notes)
    _memories(dest, args.memories)
    subprocess.run(["git", "vivary", "check"], cwd=dest, capture_output=True, env=_env(), check=False)  # warm
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True, check=True,
                          env=_env()).stdout.strip()
    dream_dir = dest / ".git" / "vivary" / "dream"

    def forget_runs() -> None:
        shutil.rmtree(dream_dir, ignore_errors=True)

    print(f"cpus={os.cpu_count()} load={os.getloadavg()[0]:.2f} notes={args.notes} memories={args.memories} "
          f"runs={args.runs} (medians)")
    rows = []
    wall, cpu, _ = _time(["check"], dest, args.runs)
    rows.append(("baseline: check (working tree, warm)", wall, cpu, "-"))
    wall, cpu, _ = _time(["digest"], dest, args.runs)
    rows.append(("digest (write MEMORY.md)", wall, cpu, "<= 1 s"))
    wall, cpu, _ = _time(["digest", "--check"], dest, args.runs)
    rows.append(("digest --check", wall, cpu, "<= 1 s"))
    wall, cpu, out = _time(["dream", "--force", "--json"], dest, args.runs, before=forget_runs)
    got = json.loads(out)["run"]
    rows.append((f"dream --force ({got['considered']} live, {len(got['tasks'])} tasks, {got['method']})", wall, cpu,
                 "<= 10 s"))
    task = got["tasks"][0]["id"] if got["tasks"] else None
    if task:
        wall, cpu, _ = _time(["dream", "--task-id", task, "--use-heuristic"], dest, 1)
        rows.append(("resolve one task (--use-heuristic, one commit)", wall, cpu, "-"))
        subprocess.run(["git", "reset", "-q", "--hard", head], cwd=dest, check=True, env=_env())
    width = max(len(r[0]) for r in rows)
    print(f"{'step':<{width}}  {'wall':>9}  {'cpu':>9}")
    for name, secs, used, goal in rows:
        print(f"{name:<{width}}  {secs:7.3f} s  {used:7.3f} s   goal {goal}")


if __name__ == "__main__":
    main()
