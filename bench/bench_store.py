#!/usr/bin/env python3
"""The shared cache (refs/vivary/cache) at 10,000 notes: what a fetched cache saves a fresh clone, what
a push costs after an edit, and what reading the ref costs a warm `check`.

    python bench/bench_store.py                       # 10,000 notes, a fresh vault under $TMPDIR
    python bench/bench_store.py --dest /tmp/v10k      # build there once, reuse later
    python bench/bench_store.py --notes 2000 --runs 3

Steps (real CLI subprocesses, `git vivary …`, with two bare remotes over file://):
  1. origin.git gets the vault's main; a shallow CI clone (`--depth 1`) runs `check --rev HEAD`
     (cold: parses everything and records the cache) and `sync push`.
  2. Cold clone A (no cache): `git clone` + `check` computed from scratch.
     Cold clone B: `git clone` + `sync fetch` + `check` answered from the fetched cache.
  3. The CI clone edits 10 notes, commits, checks, and `sync push`es: bytes sent (the thin pack
     `git push` builds: `pack-objects --revs --thin` of the new tip minus what the remote has).
  4. Warm `check --rev HEAD` with the ref cache on vs `vivary.cache false` (best of --runs).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAKE_VAULT = Path("/work/shared/bench/make_vault.py")


def sh(args: list[str], cwd: Path, env: dict[str, str] | None = None, check: bool = True,
       input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    proc = subprocess.run(args, cwd=cwd, capture_output=True, env=env, input=input, check=False)
    if check and proc.returncode not in (0, 1):
        sys.exit(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr.decode()[-400:]}")
    return proc


def timed(args: list[str], cwd: Path, env: dict[str, str] | None = None) -> tuple[float, str]:
    t = time.perf_counter()
    proc = sh(args, cwd, env)
    return time.perf_counter() - t, proc.stderr.decode()


def parsed(err: str) -> str:
    m = re.search(r'"parsed":(\d+)', err)
    return m.group(1) if m else "?"


def thin_pack_bytes(repo: Path, new: str, remote: Path) -> int:
    """Bytes of the pack `git push` would send for `new` to `remote` (what it has is excluded)."""
    have = sh(["git", "ls-remote", str(remote)], repo).stdout.decode().split()
    negatives = [f"^{oid}" for oid in have[0::2]
                 if sh(["git", "cat-file", "-e", oid], repo, check=False).returncode == 0]
    data = ("\n".join([new, *negatives]) + "\n").encode()
    return len(sh(["git", "pack-objects", "--revs", "--thin", "--stdout", "-q"], repo, input=data).stdout)


def packed_size(path: Path) -> int:
    out = sh(["git", "count-objects", "-v"], path).stdout.decode()
    vals = dict(line.split(": ") for line in out.splitlines())
    return (int(vals["size"]) + int(vals["size-pack"])) * 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=10000)
    ap.add_argument("--dest", type=Path, help="vault to build or reuse")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if shutil.which("git-vivary") is None:
        sys.exit("git-vivary is not on PATH; export PATH=/tmp/dev/bin:$PATH")
    work = Path(tempfile.mkdtemp(prefix="vivary-bench-store-"))
    vault = args.dest or work / "vault"
    if not (vault / ".git").is_dir():
        print(f"building {args.notes} notes in {vault} …", file=sys.stderr)
        sh([sys.executable, str(MAKE_VAULT), str(vault), "--notes", str(args.notes), "--wikilinks", "--commits", "3"],
           work)
    env = dict(os.environ, VIVARY_STATS="1")
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        env.pop(k, None)
    origin = work / "origin.git"
    sh(["git", "init", "-q", "--bare", "-b", "main", str(origin)], work)
    sh(["git", "push", "-q", f"file://{origin}", "HEAD:refs/heads/main"], vault)
    rows: list[tuple[str, str, str]] = []

    # 1. CI: shallow clone, cold check (records), push.
    ci = work / "ci"
    sh(["git", "clone", "-q", "--depth", "1", f"file://{origin}", str(ci)], work)
    t_ci, err = timed(["git", "vivary", "check", "--rev", "HEAD"], ci, env)
    rows.append(("CI shallow clone: check --rev HEAD (cold, records the cache)", f"{t_ci:.2f} s",
                 f"parsed {parsed(err)}"))
    tip = sh(["git", "rev-parse", "refs/vivary/cache"], ci).stdout.decode().strip()
    first_push = thin_pack_bytes(ci, tip, origin)
    t_push, _ = timed(["git", "vivary", "sync", "push"], ci)
    rows.append(("CI: sync push (first, whole cache)", f"{t_push:.2f} s", f"{first_push / 1e6:.2f} MB pack"))

    # 2. Fresh clones: cold compute vs fetched cache.
    a, b = work / "a", work / "b"
    t_clone_a, _ = timed(["git", "clone", "-q", f"file://{origin}", str(a)], work)
    sh(["git", "config", "vivary.cache", "false"], a)
    t_cold, err_a = timed(["git", "vivary", "check"], a, env)
    rows.append(("clone A: git clone", f"{t_clone_a:.2f} s", ""))
    rows.append(("clone A: check, cold compute (no cache)", f"{t_cold:.2f} s", f"parsed {parsed(err_a)}"))
    t_clone_b, _ = timed(["git", "clone", "-q", f"file://{origin}", str(b)], work)
    before = packed_size(b)
    t_fetch, _ = timed(["git", "vivary", "sync", "fetch"], b)
    fetched = packed_size(b) - before
    t_from, err_b = timed(["git", "vivary", "check"], b, env)
    rows.append(("clone B: git clone", f"{t_clone_b:.2f} s", ""))
    rows.append(("clone B: sync fetch (verify + adopt)", f"{t_fetch:.2f} s", f"+{fetched / 1e6:.2f} MB in .git"))
    rows.append(("clone B: check from the fetched cache", f"{t_from:.2f} s", f"parsed {parsed(err_b)}"))
    out_a = sh(["git", "vivary", "check"], a).stdout
    out_b = sh(["git", "vivary", "check"], b).stdout
    same = "same output" if out_a == out_b else "OUTPUT DIFFERS"
    rows.append(("  fetch + check vs cold check", f"{(t_fetch + t_from) / t_cold:.2f}x",
                 f"{t_cold / (t_fetch + t_from):.1f}x faster; {same}"))

    # 3. Edit 10 notes in CI, record, push: bytes sent.
    notes = sorted((ci / "modules").rglob("*.md"))[:10]
    assert len(notes) == 10, "the vault has fewer than 10 notes under modules/"
    for p in notes:
        p.write_text(p.read_text() + "\nEdited for the benchmark.\n")
    if sh(["git", "commit", "-q", "-am", "edit 10 notes"], ci).returncode != 0:
        sys.exit("could not commit the 10 edits")
    sh(["git", "push", "-q", "origin", "HEAD:refs/heads/main"], ci)
    t_edit, err = timed(["git", "vivary", "check", "--rev", "HEAD"], ci, env)
    rows.append(("CI: check --rev HEAD after editing 10 notes (records)", f"{t_edit:.2f} s", f"parsed {parsed(err)}"))
    new_tip = sh(["git", "rev-parse", "refs/vivary/cache"], ci).stdout.decode().strip()
    changed = sh(["git", "diff-tree", "-r", "--name-only", tip, new_tip], ci).stdout.decode().split()
    sent = thin_pack_bytes(ci, new_tip, origin)
    t_push2, _ = timed(["git", "vivary", "sync", "push"], ci)
    rows.append(("CI: sync push after 10 edits", f"{t_push2:.2f} s",
                 f"{sent / 1e3:.1f} kB pack ({len(changed)} files changed); {first_push / max(sent, 1):.0f}x "
                 "smaller than the first push"))

    # 4. Warm check, ref cache on vs off.
    def best(repo: Path) -> float:
        sh(["git", "vivary", "check", "--rev", "HEAD"], repo)
        return min(timed(["git", "vivary", "check", "--rev", "HEAD"], repo)[0] for _ in range(args.runs))

    on = best(b)
    sh(["git", "config", "vivary.cache", "false"], b)
    off = best(b)
    sh(["git", "config", "vivary.cache", "true"], b)
    rows.append(("warm check --rev HEAD, ref cache on", f"{on:.3f} s", f"best of {args.runs}"))
    rows.append(("warm check --rev HEAD, vivary.cache false", f"{off:.3f} s", f"on/off {on / off:.2f}"))

    status = sh(["git", "vivary", "cache", "status"], b).stdout.decode()
    width = max(len(r[0]) for r in rows)
    print(f"vivary-git ref cache, {args.notes} notes, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>9}  {note}")
    print("\n" + status)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
