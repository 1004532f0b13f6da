"""Wall time of the pre-commit hook on a 10,000-note workspace with 10 staged edited notes.

    python bench/bench_hook.py [--notes 10000] [--dest DIR] [--runs 5] [--pre-commit] [--attachment]

Builds (or reuses, with an existing --dest) a workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks`), installs vivary's plain Git hook with `git vivary hooks install`, and
warms the parse cache with one `check --staged`. Then, for every run, it appends a line to 10
different notes and stages them (fresh blobs and a new tree each time, as in a real commit), and
times, in this state:

- `git write-tree` alone: the floor, what Git itself spends turning the index into a tree;
- `git vivary check --staged` (warm parse cache): the graph check alone;
- the installed `.git/hooks/pre-commit`, run as Git runs it: privacy guard + check, one process;
- with --pre-commit, `pre-commit run` of vivary-check and vivary-privacy from a pre-commit config that
  points at a committed snapshot of this repository; its hook environment is built before timing.

With --attachment the workspace's links are read as Obsidian reads them (`.vivary/graph.toml`
`dialect = "obsidian"`, committed once; the default DEST gets a `-obsidian` suffix) and every edit also
stages a new image no note links to, as when a screenshot is added beside an edited note: links may
name any file there, so the file set changed.

Figures are medians of --runs (each run on its own fresh edits); ratios are against `git write-tree`.
The workspace is reset (`git reset -q --hard`) at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAKE_VAULT = ROOT.parent / "shared/bench/make_vault.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}


def sh(args: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True) -> float:
    t = time.perf_counter()
    proc = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    dt = time.perf_counter() - t
    if check and proc.returncode not in (0, 1):  # 1: findings (the vault has ~1% broken refs on purpose)
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-2000:]}")
    return dt


def build(dest: Path, notes: int) -> None:
    if (dest / ".git").is_dir():
        print(f"reusing {dest}")
        return
    print(f"building {dest} with {notes} notes …", flush=True)
    subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--wikilinks"], check=True,
                   stdout=subprocess.DEVNULL)


def snapshot_repo(dest: Path) -> str:
    """This repository's working files committed in `dest` (pre-commit installs from a commit)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, check=True, capture_output=True,
                          text=True).stdout.strip()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10000)
    ap.add_argument("--dest", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--pre-commit", action="store_true", help="also time the pre-commit framework's hooks")
    ap.add_argument("--attachment", action="store_true",
                    help="Obsidian's link rules, and a new unlinked image staged with every edit")
    a = ap.parse_args()
    os.environ.update(GIT_ENV)
    suffix = "-obsidian" if a.attachment else ""
    dest = a.dest or Path(tempfile.gettempdir()) / f"vivary-bench-hook-{a.notes}{suffix}"
    build(dest, a.notes)
    graph_toml = dest / ".vivary" / "graph.toml"
    if a.attachment and not graph_toml.exists():
        graph_toml.parent.mkdir(exist_ok=True)
        graph_toml.write_text('dialect = "obsidian"\n')
        subprocess.run(["git", "add", str(graph_toml)], cwd=dest, check=True)
        subprocess.run(["git", "commit", "-q", "-m", "obsidian rules"], cwd=dest, check=True)
    vivary = shutil.which("git-vivary")
    if vivary is None:
        raise SystemExit("git-vivary is not on PATH: export PATH=/tmp/dev/bin:$PATH (or any venv with vivary-git)")
    subprocess.run([vivary, "hooks", "install"], cwd=dest, check=True, stdout=subprocess.DEVNULL)
    hook = Path(subprocess.run(["git", "rev-parse", "--path-format=absolute", "--git-path", "hooks"], cwd=dest,
                               check=True, capture_output=True, text=True).stdout.strip()) / "pre-commit"
    notes = sorted(str(p.relative_to(dest)) for p in dest.rglob("*.md") if ".git" not in p.parts)
    notes = [n for n in notes if not n.startswith(("memory/", "USER.md", "MEMORY.md"))]
    pc_env: dict[str, str] | None = None
    if a.pre_commit:
        tmp = Path(tempfile.mkdtemp(prefix="vivary-bench-pc-"))
        rev = snapshot_repo(tmp / "hook-repo")
        (dest / ".pre-commit-config.yaml").write_text(
            f"repos:\n  - repo: {tmp / 'hook-repo'}\n    rev: {rev}\n    hooks:\n"
            "      - id: vivary-check\n      - id: vivary-privacy\n")
        subprocess.run(["git", "add", ".pre-commit-config.yaml"], cwd=dest, check=True)
        pc_env = dict(os.environ, PRE_COMMIT_HOME=str(tmp / "home"))
        print("building the pre-commit hook environment (untimed) …", flush=True)
        subprocess.run(["pre-commit", "install-hooks"], cwd=dest, env=pc_env, check=True, stdout=subprocess.DEVNULL)

    times: dict[str, list[float]] = {}

    def edit(run: int) -> None:
        for i in range(10):
            path = dest / notes[(run * 10 + i) * 37 % len(notes)]
            with path.open("a", encoding="utf-8") as f:
                f.write(f"\nbench edit {run}-{i}\n")
        if a.attachment:
            (dest / "attachments").mkdir(exist_ok=True)
            (dest / "attachments" / f"screenshot-{run}.png").write_bytes(run.to_bytes(4, "big"))
            subprocess.run(["git", "add", "attachments"], cwd=dest, check=True)
        subprocess.run(["git", "add", "-u"], cwd=dest, check=True)

    try:
        edit(0)
        sh([vivary, "check", "--staged"], dest)  # warm the parse cache
        for run in range(1, a.runs + 1):
            edit(run)
            times.setdefault("git write-tree", []).append(sh(["git", "write-tree"], dest))
            times.setdefault("git vivary check --staged (warm)", []).append(sh([vivary, "check", "--staged"], dest))
            edit(run + 1000)  # fresh blobs again: the hook must not ride on the check's cached graph
            times.setdefault(".git/hooks/pre-commit (guard + check)", []).append(sh([str(hook)], dest))
            if pc_env is not None:
                edit(run + 2000)
                times.setdefault("pre-commit run vivary-check vivary-privacy", []).append(
                    sh(["pre-commit", "run"], dest, env=pc_env))
    finally:
        subprocess.run(["git", "reset", "-q", "--hard"], cwd=dest, check=False)
        subprocess.run(["git", "clean", "-q", "-f", "--", "attachments"], cwd=dest, check=False)
    base = statistics.median(times["git write-tree"])
    also = " + 1 new attachment (Obsidian rules)" if a.attachment else ""
    print(f"\n{a.notes} notes, 10 staged edited notes{also}, median of {a.runs} runs, {os.cpu_count()} CPUs, "
          f"load {os.getloadavg()[0]:.2f}")
    print(f"{'what':<48} {'median':>9} {'min':>9} {'x write-tree':>13}")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{name:<48} {m * 1000:>7.0f}ms {min(ts) * 1000:>7.0f}ms {m / base:>12.1f}x")
    check = statistics.median(times["git vivary check --staged (warm)"])
    hook_t = statistics.median(times[".git/hooks/pre-commit (guard + check)"])
    print(f"\nhook / check --staged: {hook_t / check:.2f}x; hook - check = {(hook_t - check) * 1000:.0f} ms "
          "(privacy guard, shell, chained-hook test)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
