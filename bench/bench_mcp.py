"""The MCP server on a 10,000-note workspace: start to first answer, warm search, add to searchable.

    python bench/bench_mcp.py [--notes 10000] [--dest DIR] [--queries 40] [--adds 5] [--edits 5]
                              [--lifecycle 20] [--hybrid-notes 400] [--hybrid-only] [--other-code DIR] [--rounds 1]

Builds (or reuses, with an existing --dest) a workspace from /work/shared/bench/make_vault.py
(`--notes N --wikilinks --commits 3`), then, through the MCP SDK's own client over stdio
(`git vivary mcp`, started as a host starts it):

- start → first `search` answer: process start, SDK handshake, the workspace read, the privacy
  snapshot and the search index built (cold: `.git/vivary/mcp-search*` removed first; then warm);
- warm `search`: p50/p95 over --queries different queries, text mode (the freshness check is inside
  every one);
- `add` → searchable: from calling `add` (probe, secret scan, commit, index and work-tree update)
  until a `search` for its text returns it, over --adds memories;
- edit → searchable: a note edited on disk (as an editor would) until a `search` finds the new word,
  over --edits edits (no goal in the issue; it is what freshness costs);
- `edit`, `retire` and `context`: p50/p95 of each call over --lifecycle memories (added first, untimed):
  `edit` appends a line, `retire` archives it with a reason (each one commit), `context` reads a note of the
  workspace with its neighbourhood to depth 2 within the default budget.

With --hybrid-notes N (0: off), the same on a smaller memory-enabled vault of N notes (embedding 10,000
notes takes too long on a shared machine): `git vivary index --yes` once, then warm `search` p50/p95 in
hybrid mode, against `git vivary recall QUERY --json` per call, and `add` -> found by a hybrid search
(the answer's mode must stay hybrid: the server embeds the memory as it commits it), over --adds memories.
--hybrid-only runs just that part.

Baseline, measured in the same run: `git vivary find QUERY --json` (a fresh process per call, what an
agent shelling out pays per question), median of 5 warm runs. Goals (from the issue): warm search p50
≤ 50 ms (text), ≤ 150 ms (hybrid), add → searchable ≤ 0.5 s, add → found by hybrid p50 ≤ 0.5 s (300
notes). With --other-code DIR (a checkout of
another revision's source tree), each round runs that code's server and this one's, interleaved, so
the two are compared under the same load. The memories and edits are removed at the end
(`git reset --hard` to the starting commit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MAKE_VAULT = ROOT.parent / "shared/bench/make_vault.py"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid",
}
WORDS = ["graph", "memory", "module", "decision", "change", "gate", "verification", "cache", "index", "deploy",
         "privacy", "review", "release", "schema", "parser", "budget", "token", "search", "recall", "hook"]


def _vault(dest: Path, notes: int) -> None:
    if (dest / ".git").is_dir():
        return
    subprocess.run([sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--wikilinks", "--commits",
                    "3"], check=True, stdout=subprocess.DEVNULL)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _env(code: Path | None) -> dict[str, str]:
    env = dict(os.environ, **GIT_ENV)
    if code is not None:
        env["PYTHONPATH"] = str(code)  # before the installed (editable) package
    return env


async def _lifecycle(client: Any, n: int, notes: list[str]) -> dict[str, list[float]]:
    """`edit`, `retire` and `context` timed over n memories added for them (the adds untimed)."""
    mids = []
    for i in range(n):
        added = await client.call_tool("add", {"text": f"Lifecycle memory {i}: the wombat shift {i} starts early",
                                               "force": True, "links": [f"related:{notes[i % len(notes)]}"]})
        assert not added.is_error, added.content
        mids.append((added.structured_content or {})["id"])
    out: dict[str, list[float]] = {"edit": [], "retire": [], "context": []}
    for i, mid in enumerate(mids):
        t = time.perf_counter()
        got = await client.call_tool("edit", {"id": mid, "append": f"Moved to {i + 8} o'clock."})
        out["edit"].append(time.perf_counter() - t)
        assert not got.is_error, got.content
    for i in range(n):
        t = time.perf_counter()
        got = await client.call_tool("context", {"id": notes[i % len(notes)], "depth": 2})
        out["context"].append(time.perf_counter() - t)
        assert not got.is_error, got.content
    for mid in mids:
        t = time.perf_counter()
        got = await client.call_tool("retire", {"id": mid, "reason": "the bench is over"})
        out["retire"].append(time.perf_counter() - t)
        assert not got.is_error, got.content
    return out


async def _session(dest: Path, queries: list[str], adds: int, edits: int = 0, code: Path | None = None,
                   mode: str = "text", lifecycle: int = 0) -> dict[str, Any]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"], cwd=str(dest),
                                   env=_env(code))
    started = time.perf_counter()
    async with Client(params) as client:
        first = await client.call_tool("search", {"query": "graph memory"})
        assert not first.is_error, first.content
        start_to_first = time.perf_counter() - started
        times = []
        used = None
        for q in queries:
            t = time.perf_counter()
            got = await client.call_tool("search", {"query": q, "mode": mode})
            times.append(time.perf_counter() - t)
            assert not got.is_error
            used = (got.structured_content or {}).get("mode")
        searchable = []
        for i in range(adds):
            text = f"Benchmark memory {i}: the quokka release train leaves at {i + 7} o'clock"
            t = time.perf_counter()
            added = await client.call_tool("add", {"text": text, "force": True})
            assert not added.is_error, added.content
            mid = (added.structured_content or {})["id"]
            while True:
                got = await client.call_tool("search", {"query": f"quokka release train {i + 7}", "top_k": 3,
                                                        "mode": mode})
                answer = got.structured_content or {}
                assert mode != "hybrid" or answer.get("mode") == "hybrid", answer.get("mode_reason")
                if any(r["id"] == mid for r in answer.get("results", [])):
                    break
            searchable.append(time.perf_counter() - t)
        edited = []
        notes = sorted((dest / "notes").rglob("*.md"))[:edits]
        for i, note in enumerate(notes):
            word = f"wombat{i}x{os.getpid()}"
            t = time.perf_counter()
            with note.open("a", encoding="utf-8") as fh:
                fh.write(f"\nA {word} was seen here.\n")
            while True:
                got = await client.call_tool("search", {"query": word, "top_k": 3})
                if (got.structured_content or {}).get("results"):
                    break
            edited.append(time.perf_counter() - t)
        life = await _lifecycle(client, lifecycle, [p.relative_to(dest).with_suffix("").as_posix() for p in
                                                    sorted((dest / "notes").rglob("*.md"))[:lifecycle]]) \
            if lifecycle else {}
    return {"start": start_to_first, "search": times, "mode": used, "searchable": searchable, "edited": edited,
            "lifecycle": life}


def _cli(dest: Path, *args: str, code: Path | None = None) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "vivary_git.main", *args, "--json"], cwd=dest, check=True,
                   stdout=subprocess.DEVNULL, env=_env(code))
    return time.perf_counter() - t


def _reset(dest: Path, head: str) -> None:
    subprocess.run(["git", "reset", "-q", "--hard", head], cwd=dest, check=True)


def _text(dest: Path, queries: list[str], args: argparse.Namespace,
          code: Path | None) -> list[tuple[str, float, float]]:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True,
                          check=True).stdout.strip()
    try:
        for cached in (dest / ".git/vivary").glob("mcp-search*"):
            shutil.rmtree(cached, ignore_errors=True)
        _cli(dest, "find", "graph memory", code=code)  # warms the graph and query caches the CLI uses
        baseline = statistics.median(_cli(dest, "find", q, code=code) for q in queries[:5])
        cold = asyncio.run(_session(dest, queries, args.adds, args.edits, code, lifecycle=args.lifecycle))
        _reset(dest, head)
        warm = asyncio.run(_session(dest, queries, 0, 0, code))
    finally:
        _reset(dest, head)
    s = warm["search"] + cold["search"]
    rows = [
        ("baseline: `git vivary find` per call (warm, median)", baseline),
        ("start -> first search (cold index)", cold["start"]),
        ("start -> first search (warm caches)", warm["start"]),
        (f"warm search p50 ({cold['mode']}) [goal <= 0.050]", _pct(s, 0.5)),
        (f"warm search p95 ({cold['mode']})", _pct(s, 0.95)),
    ]
    if cold["searchable"]:
        rows += [("add -> searchable, median [goal <= 0.500]", statistics.median(cold["searchable"])),
                 ("add -> searchable, max", max(cold["searchable"]))]
    if cold["edited"]:
        rows += [("edit on disk -> searchable, median", statistics.median(cold["edited"])),
                 ("edit on disk -> searchable, max", max(cold["edited"]))]
    for tool, got in cold["lifecycle"].items():
        rows += [(f"`{tool}` p50 ({len(got)} calls)", _pct(got, 0.5)), (f"`{tool}` p95", _pct(got, 0.95))]
    return [(name, value, baseline) for name, value in rows]


def _hybrid(dest: Path, notes: int, queries: list[str], code: Path | None,
            adds: int = 0) -> list[tuple[str, float, float]]:
    if not (dest / ".git").is_dir():
        _vault(dest, notes)
        (dest / ".vivary").mkdir(exist_ok=True)
        (dest / ".vivary/memory.toml").write_text('[memory]\nenabled = true\nprovider = "vivary-local"\n')
        subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
        subprocess.run(["git", "commit", "-qm", "memory on"], cwd=dest, check=True, env=dict(os.environ, **GIT_ENV))
    indexing = _cli(dest, "index", "--yes", code=code)
    _cli(dest, "recall", "graph memory", code=code)
    baseline = statistics.median(_cli(dest, "recall", q, code=code) for q in queries[:5])
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, capture_output=True, text=True,
                          check=True).stdout.strip()
    try:
        got = asyncio.run(_session(dest, queries, adds, 0, code, mode="hybrid"))
    finally:
        _reset(dest, head)
        _cli(dest, "index", "--yes", code=code)  # back to the starting tree's index
    assert got["mode"] == "hybrid", got["mode"]
    rows = [
        (f"hybrid ({notes} notes): `git vivary index --yes`", indexing),
        (f"hybrid ({notes} notes): baseline `git vivary recall` per call", baseline),
        (f"hybrid ({notes} notes): start -> first search", got["start"]),
        (f"hybrid ({notes} notes): warm search p50 [goal <= 0.150]", _pct(got["search"], 0.5)),
        (f"hybrid ({notes} notes): warm search p95", _pct(got["search"], 0.95)),
    ]
    if got["searchable"]:
        rows += [(f"hybrid ({notes} notes): add -> found by hybrid, p50 [goal <= 0.500]", _pct(got["searchable"], 0.5)),
                 (f"hybrid ({notes} notes): add -> found by hybrid, max", max(got["searchable"]))]
    return [(name, value, baseline) for name, value in rows]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--dest", type=Path, default=None)
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--adds", type=int, default=5)
    ap.add_argument("--edits", type=int, default=5)
    ap.add_argument("--lifecycle", type=int, default=20, help="memories to edit, retire and read context of (0: off)")
    ap.add_argument("--hybrid-notes", type=int, default=0)
    ap.add_argument("--hybrid-only", action="store_true", help="only the memory-enabled vault of --hybrid-notes")
    ap.add_argument("--other-code", type=Path, default=None, help="another revision's source tree, run interleaved")
    ap.add_argument("--rounds", type=int, default=1)
    args = ap.parse_args()
    dest = args.dest or Path(os.environ.get("TMPDIR", "/tmp")) / f"vivary-bench-mcp-{args.notes}"
    if not args.hybrid_only:
        _vault(dest, args.notes)
    queries = [f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7 + 3) % len(WORDS)]}" for i in range(args.queries)]
    print(f"# {args.notes} notes at {dest}; {os.cpu_count()} CPU(s)", file=sys.stderr)
    codes: list[tuple[str, Path | None]] = [("this", None)]
    if args.other_code is not None:
        codes = [("other", args.other_code.resolve()), ("this", None)]
    for round_ in range(args.rounds):
        for label, code in codes:
            load = os.getloadavg()[0]
            rows = [] if args.hybrid_only else _text(dest, queries, args, code)
            if args.hybrid_notes:
                rows += _hybrid(dest.with_name(dest.name + f"-hybrid-{args.hybrid_notes}"), args.hybrid_notes,
                                queries, code, args.adds)
            print(f"\n## round {round_ + 1}, code: {label}{'' if code is None else f' ({code})'}; "
                  f"load {load:.1f} -> {os.getloadavg()[0]:.1f}")
            print(f"{'step':<62} {'seconds':>8}  {'x its baseline':>14}")
            for name, value, baseline in rows:
                print(f"{name:<62} {value:8.3f}  {value / baseline:14.2f}")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
