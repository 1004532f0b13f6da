#!/usr/bin/env python3
"""The first recall in a fresh clone, and the re-index after 10 edits, against another revision, interleaved:
when `memory.snapshot()` returns (the graph from the fetched facts, the privacy decisions, the fingerprint)
and when the command ends.

    python bench/bench_first_recall.py --against 90a68b9
    python bench/bench_first_recall.py --against main --origin /tmp/mc10k/origin.git --runs 10 --steps recall

The origin is a bare repository whose refs/vivary/cache holds CI's parses and vectors, as
`bench/bench_memory_cache.py` leaves it (default: the 10,000-note one under /tmp/lead/mc10k). It is only
read: it is cloned once (`git clone --no-local`, `vivary.cacheTrust any`, `sync fetch`), and that clone is
copied back to one same path before every run (the memory dataset's name follows the folder's path), with
`git update-index --refresh` (untimed) so Git's stat data matches the copy.

Steps:
- recall:  `recall "…" --json` on the fetched clone (the tree is assembled from the fetched vectors);
- reindex: `index --yes` after appending a line to 10 notes, on a copy where `index --yes` was run once.

Each side runs `python -c …` with its own tree first on PYTHONPATH (byte-compiled first); a hook prints
the time since the process started at which `LocalMemory.snapshot()` first returned. Every run of one side
sits next to a run of the other, and which goes first alternates. The first run of each side also has its
`--json` output compared with the other's (the same, but for the `seconds` an index run took).
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
QUERY = "retrieval ranking latency of the hybrid index"

# Runs the CLI; prints "SNAPSHOT <seconds since $BENCH_T0> <CPU seconds of this process so far>" to stderr
# when LocalMemory.snapshot() first returns. The hook wraps the module as it is imported, so the command
# imports what it always does.
HOOK = r"""
import importlib.abc, importlib.machinery, os, sys, time
T0 = float(os.environ["BENCH_T0"])
class Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "vivary_git.memory.local.provider":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module
        def exec_module(mod):
            run(mod)
            inner, said = mod.LocalMemory.snapshot, []
            def snapshot(self, **kw):
                got = inner(self, **kw)
                if not said:
                    said.append(1)
                    sys.stderr.write(f"SNAPSHOT {time.time() - T0:.4f} {time.process_time():.4f}\n")
                return got
            mod.LocalMemory.snapshot = snapshot
        spec.loader.exec_module = exec_module
        return spec
sys.meta_path.insert(0, Hook())
sys.argv[0] = "git-vivary"
from vivary_git.main import cli
cli()  # as the console script: main(), then lifetime.leave (flush, atexit, os._exit)
"""


def env(src: Path | None = None) -> dict[str, str]:
    e = {k: v for k, v in os.environ.items()
         if k not in ("PYTHONDONTWRITEBYTECODE", "VIVARY_STATS", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    e["PATH"] = str(Path(sys.executable).parent) + os.pathsep + e.get("PATH", "")
    if src is not None:
        e["PYTHONPATH"] = str(src)
    return e


def sh(args: list[str], cwd: Path, src: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(args, cwd=cwd, env=env(src), capture_output=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(args[:6])} failed ({proc.returncode}): {proc.stderr.decode()[-600:]}")
    return proc


def require_origin(origin: Path) -> None:
    if not (origin / "refs").exists() and not (origin / "packed-refs").exists():
        sys.exit(f"{origin}: not a bare repository (build one with bench/bench_memory_cache.py --dest)")


def fetched_clone(origin: Path, dest: Path) -> Path:
    """A clone of `origin` at `dest` that trusts and has fetched its cache (this checkout's `sync fetch`)."""
    sh(["git", "clone", "-q", "--no-local", "--", str(origin), str(dest)], dest.parent)
    sh(["git", "config", "vivary.cacheTrust", "any"], dest)
    sh([sys.executable, "-m", "vivary_git.main", "sync", "fetch", "origin"], dest, ROOT)
    return dest


def restore(pristine: Path, dest: Path) -> None:
    shutil.rmtree(dest, ignore_errors=True)
    sh(["cp", "-a", str(pristine), str(dest)], pristine.parent)
    sh(["git", "update-index", "-q", "--refresh"], dest)


Run = tuple[float, float | None, float, bytes, float | None]


def timed(src: Path, ws: Path, args: list[str]) -> Run:
    """(wall s, snapshot s or None, CPU s of the command and its children, stdout, the command's own CPU s at
    the snapshot or None)."""
    e = env(src)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.time()
    e["BENCH_T0"] = repr(start)
    proc = subprocess.run([sys.executable, "-c", HOOK, *args], cwd=ws, env=e, capture_output=True, check=False)
    wall = time.time() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)} from {src} failed ({proc.returncode}): {proc.stderr.decode()[-800:]}")
    snap = snap_cpu = None
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("SNAPSHOT "):
            snap, snap_cpu = (float(x) for x in line.split()[1:3])
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, snap, cpu, proc.stdout, snap_cpu


def edit_notes(ws: Path, count: int = 10) -> None:
    names = sh(["git", "ls-files", "-z", "--", "notes/*.md"], ws).stdout.decode().split("\0")
    for i, name in enumerate([n for n in names if n][:count]):
        with (ws / name).open("a", encoding="utf-8") as fh:
            fh.write(f"\nEdited for the benchmark, pass {i}: retrieval ranking latency.\n")


def comparable(out: bytes) -> bytes:
    """A command's `--json` output without what may differ run to run (`index` reports its `seconds`)."""
    import json

    try:
        value = json.loads(out)
    except ValueError:
        return out
    if isinstance(value, dict):
        value.pop("seconds", None)
    return json.dumps(value, sort_keys=True).encode()


def summary(name: str, rows: list[Run]) -> str:
    walls = [r[0] for r in rows]
    snaps = [r[1] for r in rows if r[1] is not None]
    cpus = [r[2] for r in rows]
    snap_cpus = [r[4] for r in rows if r[4] is not None]
    snap = f"snapshot at {statistics.median(snaps):.3f} s (mean {statistics.mean(snaps):.3f}, min {min(snaps):.3f}; " \
        f"its CPU by then {statistics.median(snap_cpus):.3f} s)" if snaps and snap_cpus else "snapshot not seen"
    return (f"  {name:5s} {snap}; wall median {statistics.median(walls):.3f} s (mean {statistics.mean(walls):.3f}, "
            f"min {min(walls):.3f}); CPU {statistics.mean(cpus):.2f} s")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--against", required=True, metavar="REV", help="the revision of vivary-git to race")
    ap.add_argument("--origin", type=Path, default=Path("/tmp/lead/mc10k/origin.git"),
                    help="bare origin whose refs/vivary/cache holds parses and vectors (only read)")
    ap.add_argument("--runs", type=int, default=8, help="runs of each side per step (default 8)")
    ap.add_argument("--steps", default="recall,reindex", help="comma-separated, of: recall, reindex")
    args = ap.parse_args(argv)
    steps = [s for s in args.steps.split(",") if s]
    require_origin(args.origin)
    with tempfile.TemporaryDirectory(prefix="vivary-first-recall-") as tmp_name:
        tmp = Path(tmp_name)
        old = tmp / "old"
        sh(["git", "worktree", "add", "--detach", str(old), args.against], ROOT)
        try:
            sides = {"old": old, "new": ROOT}
            for src in sides.values():
                sh([sys.executable, "-m", "compileall", "-q", "vivary_git"], src)
            fetched = fetched_clone(args.origin, tmp / "fetched")
            ws = tmp / "ws"
            print(f"origin {args.origin}; {args.runs} runs a side; load {os.getloadavg()[0]:.1f}")
            for step in steps:
                pristine = fetched
                if step == "reindex":
                    pristine = tmp / "indexed"
                    restore(fetched, ws)
                    sh([sys.executable, "-m", "vivary_git.main", "index", "--yes"], ws, ROOT)
                    shutil.rmtree(pristine, ignore_errors=True)
                    ws.rename(pristine)
                cmd = ["recall", QUERY, "--json"] if step == "recall" else ["index", "--yes", "--json"]
                rows: dict[str, list[Run]] = {"old": [], "new": []}
                for i in range(args.runs):
                    for side in (("old", "new") if i % 2 == 0 else ("new", "old")):
                        restore(pristine, ws)
                        if step == "reindex":
                            edit_notes(ws)
                        rows[side].append(timed(sides[side], ws, cmd))
                same = comparable(rows["old"][0][3]) == comparable(rows["new"][0][3])
                print(f"{step}: `git vivary {' '.join(cmd)}` (outputs {'the same' if same else 'DIFFER'}); "
                      f"load {os.getloadavg()[0]:.1f}")
                for side in ("old", "new"):
                    print(summary(side, rows[side]))
                old_snap = [r[1] for r in rows["old"] if r[1] is not None]
                new_snap = [r[1] for r in rows["new"] if r[1] is not None]
                if old_snap and new_snap:
                    walls = {side: statistics.median(r[0] for r in rows[side]) for side in rows}
                    print(f"  new/old: snapshot {statistics.median(new_snap) / statistics.median(old_snap):.2f}, "
                          f"wall {walls['new'] / walls['old']:.2f}")
        finally:
            shutil.rmtree(tmp / "ws", ignore_errors=True)
            sh(["git", "worktree", "remove", "--force", str(old)], ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
