#!/usr/bin/env python3
"""How often a note asked for by its name comes first, on every search surface (tests/data/find/exact-titles.json).

    python bench/bench_title_rank.py                          # this checkout's vivary_git
    PYTHONPATH=/work/main python bench/bench_title_rank.py    # another checkout's, for "before"
    python bench/bench_title_rank.py --verbose                # each question's rank on each surface

Writes the labelled vault (113 notes whose names are in eleven scripts, each with others sharing its words)
into a Git repository in a temporary folder, indexes it (`git vivary index --yes`), and asks each of its 38
questions (a note's title or alias, as written, in another case, NFD, full-width or half-width) of `find`,
`query` (text and hybrid), `recall --queries` (semantic and hybrid) and the MCP server's `search` (the SDK's
client over stdio; text, semantic, hybrid, auto), 10 results each. Prints, per surface, how many questions
had the named note first and the mean reciprocal rank. Needs the `embed` and `mcp` extras.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "find" / "exact-titles.json"
SURFACES = ("find", "query", "query-hybrid", "recall-semantic", "recall-hybrid", "mcp-text", "mcp-semantic",
            "mcp-hybrid", "mcp-auto")


def _rank(paths: list[str], want: str) -> int | None:
    return next((i + 1 for i, p in enumerate(paths) if p == want), None)


def _cli(vault: Path, *args: str) -> str:
    got = subprocess.run([sys.executable, "-m", "vivary_git", *args], cwd=vault, capture_output=True, text=True)
    if got.returncode != 0:
        raise SystemExit(f"git vivary {' '.join(args[:1])} failed ({got.returncode}): {got.stderr.strip()}")
    return got.stdout


def _vault(dest: Path, notes: dict[str, str]) -> None:
    for rel, text in notes.items():
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "vault"]):
        subprocess.run(["git", *args], cwd=dest, check=True, env=env)
    _cli(dest, "index", "--yes")


def ranks(vault: Path, questions: list[dict[str, str]]) -> list[dict[str, int | None]]:
    """Each question's rank of its note on every surface (None: not in the first 10)."""
    out: list[dict[str, int | None]] = [{} for _ in questions]
    for q, got in zip(questions, out, strict=True):
        for surface, extra in (("find", ()), ("query", ()), ("query-hybrid", ("--mode", "hybrid"))):
            answer = json.loads(_cli(vault, surface.split("-")[0], q["query"], *extra, "--k", "10", "--json"))
            got[surface] = _rank([h["path"] for h in answer["results"]], q["note"])
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False, encoding="utf-8") as f:
        f.write("".join(json.dumps({"id": i, "query": q["query"]}) + "\n" for i, q in enumerate(questions)))
    try:
        for mode in ("semantic", "hybrid"):
            for line in _cli(vault, "recall", "--queries", f.name, "--mode", mode, "--k", "10").splitlines():
                answer = json.loads(line)
                i = answer["id"]
                out[i][f"recall-{mode}"] = _rank([h["path"] for h in answer["hits"]], questions[i]["note"])
    finally:
        os.unlink(f.name)
    asyncio.run(_mcp(vault, questions, out))
    return out


async def _mcp(vault: Path, questions: list[dict[str, str]], out: list[dict[str, int | None]]) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"], cwd=str(vault),
                                   env=dict(os.environ))
    async with Client(params) as client:
        for q, got in zip(questions, out, strict=True):
            for mode in ("text", "semantic", "hybrid", "auto"):
                answer: Any = await client.call_tool("search", {"query": q["query"], "mode": mode, "top_k": 10,
                                                               "budget": 0})
                if answer.is_error:
                    raise SystemExit(f"MCP search failed: {answer.content}")
                got[f"mcp-{mode}"] = _rank([h["path"] for h in answer.structured_content["results"]], q["note"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--verbose", action="store_true", help="print each question's rank on each surface")
    args = ap.parse_args()
    import vivary_git

    data = json.loads(DATA.read_text(encoding="utf-8"))
    questions = data["questions"]
    with tempfile.TemporaryDirectory() as tmp:
        vault = Path(tmp) / "vault"
        vault.mkdir()
        _vault(vault, data["notes"])
        got = ranks(vault, questions)
    if args.verbose:
        print(f"{'note':24} {'asked as':10} " + " ".join(f"{s:>15}" for s in SURFACES))
        for q, r in zip(questions, got, strict=True):
            print(f"{q['note'][:-3]:24} {q['asked_as']:10} " + " ".join(f"{r[s] or '-':>15}" for s in SURFACES))
    for s in SURFACES:
        placed = [r[s] for r in got]
        first = placed.count(1)
        mrr = sum(1 / p for p in placed if p) / len(got)
        print(f"{s:16} first {first:>2}/{len(got)}  MRR@10 {mrr:.3f}")
    print(f"(vivary_git from {Path(vivary_git.__file__).parent})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
