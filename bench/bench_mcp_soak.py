"""An agent session that lasts all day: one `git vivary mcp` server after hundreds of writes and searches.

    python bench/bench_mcp_soak.py [--notes 300] [--dest DIR] [--ops 600] [--every 50] [--no-index]

Builds (or reuses, with an existing --dest) a memory-enabled workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks`, `.vivary/memory.toml` with the vivary-local provider, `git vivary index --yes`),
then drives ONE server process through the MCP SDK's own client over stdio (as a host starts it) with --ops
operations mixed as an agent would: `add` (new memories and near-duplicates), `search` in each mode
(auto, text, semantic, hybrid), `read`, `update`, `edit`, `retire`, `link`, `status`, and now and then a note
edited on disk and committed with git outside the server, as the user would (--no-user: none, an agent alone;
then only the server's own writes can start Git's `gc --auto`).

Every --every operations it records the server's RSS (/proc/PID/status VmRSS), open file descriptors
(/proc/PID/fd), threads, child processes (and zombies among them), each tool's p50/p95 over the window, the
size of .git/vivary, the loose objects and packs (`git count-objects -v`), the unreachable objects (`git fsck
--unreachable --no-reflogs`) and the length of the `refs/vivary/cache` chain (the workspace keeps Git's default
`gc.auto`, which make_vault.py turns off), temporary files (in .git/vivary and in the server's own TMPDIR),
and whether `git fsck --no-dangling` and `git status --porcelain` stay clean. It prints the table (one row
per window) and the end against the start, with the ratio. The server gets a TMPDIR of its own so that files
it leaves there are counted and nothing else's are.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench_mcp import GIT_ENV, MAKE_VAULT, WORDS, _pct  # a sibling script: one vault recipe, one percentile

ANIMALS = ["quokka", "wombat", "walrus", "heron", "otter", "lynx", "ibis", "marmot", "tapir", "okapi"]
TEMP_MARKS = (".tmp", "tmp.", ".partial", ".new")


def _git(dest: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=dest, capture_output=True, text=True, check=True,
                          env=dict(os.environ, **GIT_ENV)).stdout


def _vault(dest: Path, notes: int, index: bool) -> None:
    if (dest / ".git").is_dir():
        return
    subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--wikilinks"], check=True,
                   stdout=subprocess.DEVNULL)
    # make_vault.py turns `gc.auto` off; a user's repository has Git's default (6700), and whether Git ever
    # packs what the memory writes leave loose is part of what a soak measures.
    _git(dest, "config", "--unset", "gc.auto")
    (dest / ".vivary").mkdir(exist_ok=True)
    (dest / ".vivary/memory.toml").write_text('[memory]\nenabled = true\nprovider = "vivary-local"\n')
    _git(dest, "add", "-A")
    _git(dest, "commit", "-qm", "memory on")
    if index:
        subprocess.run([sys.executable, "-m", "vivary_git.main", "index", "--yes"], cwd=dest, check=True,
                       stdout=subprocess.DEVNULL, env=dict(os.environ, **GIT_ENV))


def _server_pid(parent: int) -> int:
    """The `git vivary mcp` process the SDK's client started (a child of this one)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            cmd = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and b"mcp" in cmd:
            return int(proc.name)
    raise SystemExit("the server process was not found")


def _children(pid: int) -> tuple[int, int]:
    """(children, zombies among them) of pid."""
    kids = zombies = 0
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids += 1
            zombies += fields[0] == "Z"
    return kids, zombies


def _du(folder: Path) -> tuple[int, int]:
    """(bytes, temporary-looking files) under folder."""
    size = temps = 0
    for p in folder.rglob("*"):
        if p.is_file():
            size += p.stat().st_size
            temps += any(m in p.name for m in TEMP_MARKS)
    return size, temps


def _sample(dest: Path, pid: int, tmp: Path) -> dict[str, Any]:
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    kids, zombies = _children(pid)
    counts = dict(line.split(": ") for line in _git(dest, "count-objects", "-v").splitlines())
    vsize, vtemps = _du(dest / ".git/vivary")
    fsck = subprocess.run(["git", "fsck", "--no-dangling", "--no-progress"], cwd=dest, capture_output=True,
                          text=True, check=False)
    # What nothing reaches (the replaced commits of refs/vivary/cache were): loose until `gc.pruneExpire`.
    unreachable = _git(dest, "fsck", "--unreachable", "--no-reflogs", "--no-progress").count("\n")
    chain = subprocess.run(["git", "rev-list", "--count", "refs/vivary/cache"], cwd=dest, capture_output=True,
                           text=True, check=False).stdout.strip()
    return {
        "rss_mb": int(status["VmRSS"].split()[0]) / 1024, "fds": len(os.listdir(f"/proc/{pid}/fd")),
        "threads": int(status["Threads"]), "children": kids, "zombies": zombies,
        "loose": int(counts["count"]), "unreachable": unreachable, "cache_chain": int(chain or 0),
        "packs": int(counts["packs"]), "vivary_mb": vsize / 2**20,
        "temps": vtemps + sum(1 for _ in tmp.rglob("*")), "tmp_names": sorted(p.name for p in tmp.rglob("*")),
        "fsck": "ok" if fsck.returncode == 0 and not fsck.stdout.strip() else "BAD",
        "status": "ok" if not _git(dest, "status", "--porcelain").strip() else "DIRTY",
    }


class Agent:
    """The operations of one long session, chosen by a seeded random mix."""

    def __init__(self, client: Any, dest: Path, seed: int, user: bool = True) -> None:
        self.client = client
        self.user = user
        self.dest = dest
        self.rng = random.Random(seed)
        self.notes = sorted(str(p.relative_to(dest).with_suffix("")) for p in (dest / "modules").rglob("*.md"))
        self.mems: list[str] = []
        self.texts: list[str] = []
        self.n = 0
        self.errors: dict[str, int] = defaultdict(int)

    async def call(self, tool: str, args: dict[str, Any]) -> tuple[float, Any]:
        t = time.perf_counter()
        got = await self.client.call_tool(tool, args)
        took = time.perf_counter() - t
        if got.is_error:
            self.errors[tool] += 1
        return took, got.structured_content or {}

    def _text(self) -> str:
        self.n += 1
        a, w = self.rng.choice(ANIMALS), self.rng.sample(WORDS, 3)
        return f"The {a} {w[0]} {self.n} runs through the {w[1]} before the {w[2]} review, at {self.n % 24} o'clock."

    async def step(self) -> tuple[str, float]:
        r = self.rng.random()
        live = self.mems
        if r < 0.18 or not live:
            text = self._text()
            took, got = await self.call("add", {"text": text, "tags": [self.rng.choice(ANIMALS)],
                                                "links": [f"related:{self.rng.choice(self.notes)}"]})
            if got.get("id") and got.get("changed", True):
                live.append(got["id"])
                self.texts.append(text)
            return "add", took
        if r < 0.22:  # a near-duplicate of something remembered: refused or merged, nothing written
            return "add", (await self.call("add", {"text": self.rng.choice(self.texts)}))[0]
        if r < 0.50:
            mode = self.rng.choice(["auto", "text", "semantic", "hybrid"])
            q = f"{self.rng.choice(ANIMALS)} {self.rng.choice(WORDS)} {self.rng.choice(WORDS)}"
            return f"search/{mode}", (await self.call("search", {"query": q, "mode": mode, "top_k": 5}))[0]
        if r < 0.60:
            target = self.rng.choice(live + self.notes)
            return "read", (await self.call("read", {"id": target, "include_content": True}))[0]
        if r < 0.67:
            return "update", (await self.call("update", {"id": self.rng.choice(live), "text": self._text()}))[0]
        if r < 0.76:
            return "edit", (await self.call("edit", {"id": self.rng.choice(live),
                                                     "append": f"Seen again at {self.rng.randint(1, 23)} o'clock."}))[0]
        if r < 0.80 and len(live) > 5:
            mid = live.pop(self.rng.randrange(len(live)))
            return "retire", (await self.call("retire", {"id": mid, "reason": "the soak moved on"}))[0]
        if r < 0.88:
            return "link", (await self.call("link", {"source": self.rng.choice(live), "field": "related",
                                                     "target": self.rng.choice(self.notes)}))[0]
        if r < 0.94 or not self.user:
            return "status", (await self.call("status", {}))[0]
        note = self.dest / (self.rng.choice(self.notes) + ".md")  # the user, outside the server
        with note.open("a", encoding="utf-8") as fh:
            fh.write(f"\nThe user noted a {self.rng.choice(ANIMALS)} here ({self.n}).\n")
        self.n += 1
        t = time.perf_counter()
        _git(self.dest, "commit", "-qam", "user edit")
        return "user commit", time.perf_counter() - t


async def _soak(dest: Path, ops: int, every: int, seed: int,
                user: bool = True) -> tuple[list[dict[str, Any]], dict[str, int]]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    tmp = Path(tempfile.mkdtemp(prefix="vivary-soak-tmp-"))
    env = dict(os.environ, **GIT_ENV, TMPDIR=str(tmp))
    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"], cwd=str(dest),
                                   env=env)
    rows = []
    try:
        async with Client(params) as client:
            first = await client.call_tool("status", {})
            assert not first.is_error, first.content
            pid = _server_pid(os.getpid())
            agent = Agent(client, dest, seed, user)
            rows.append({"ops": 0, **_sample(dest, pid, tmp), "lat": {}})
            lat: dict[str, list[float]] = defaultdict(list)
            for i in range(1, ops + 1):
                tool, took = await agent.step()
                lat[tool].append(took)
                if i % every == 0:
                    rows.append({"ops": i, **_sample(dest, pid, tmp), "lat": dict(lat)})
                    lat = defaultdict(list)
            errors = dict(agent.errors)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows, errors


COLUMNS = ["ops", "rss_mb", "fds", "threads", "children", "zombies", "loose", "unreachable", "cache_chain", "packs",
           "vivary_mb", "temps", "fsck", "status"]


def _fmt(v: Any) -> str:
    return f"{v:.1f}" if isinstance(v, float) else str(v)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=300)
    ap.add_argument("--dest", type=Path, default=None)
    ap.add_argument("--ops", type=int, default=600)
    ap.add_argument("--every", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-user", action="store_true", help="no notes edited and committed by the user between calls")
    ap.add_argument("--no-index", action="store_true", help="skip `git vivary index --yes` (search stays text)")
    args = ap.parse_args()
    dest = args.dest or Path(os.environ.get("TMPDIR", "/tmp")) / f"vivary-bench-soak-{args.notes}"
    _vault(dest, args.notes, not args.no_index)
    head = _git(dest, "rev-parse", "HEAD").strip()
    load = os.getloadavg()
    print(f"# {args.notes} notes at {dest}; {args.ops} operations in one server"
          f"{' (no user commits)' if args.no_user else ''}; {os.cpu_count()} CPU(s); "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    started = time.perf_counter()
    rows, errors = asyncio.run(_soak(dest, args.ops, args.every, args.seed, not args.no_user))
    print(f"# {time.perf_counter() - started:.0f} s; tool errors (refusals included): {errors or 'none'}")
    print("| " + " | ".join(COLUMNS) + " |")
    print("|" + "---|" * len(COLUMNS))
    for row in rows:
        print("| " + " | ".join(_fmt(row[c]) for c in COLUMNS) + " |")
    tools = sorted({t for row in rows for t in row["lat"]})
    print("\nlatency, ms p50/p95 per window:")
    print("| ops | " + " | ".join(tools) + " |")
    print("|" + "---|" * (len(tools) + 1))
    for row in rows[1:]:
        cells = [f"{_pct(v, .5) * 1000:.0f}/{_pct(v, .95) * 1000:.0f}" if (v := row["lat"].get(t)) else "-"
                 for t in tools]
        print(f"| {row['ops']} | " + " | ".join(cells) + " |")
    first, last = rows[0], rows[-1]
    print("\nstart -> end:")
    for c in COLUMNS[1:]:
        a, b = first[c], last[c]
        ratio = f"x{b / a:.2f}" if isinstance(a, (int, float)) and a else ""
        print(f"  {c:<10} {_fmt(a):>8} -> {_fmt(b):<8} {ratio}")
    if len(rows) > 2:
        for t in tools:
            early, late = rows[1]["lat"].get(t), rows[-1]["lat"].get(t)
            if early and late:
                print(f"  {t:<14} p50 {statistics.median(early) * 1000:.0f} -> {statistics.median(late) * 1000:.0f} ms")
    print(f"# in the server's TMPDIR at the end: {last['tmp_names'] or 'nothing'}")
    print(f"# memories written are left in {dest} (HEAD was {head[:12]})")


if __name__ == "__main__":
    main()
