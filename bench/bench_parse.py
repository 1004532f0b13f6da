"""Per-note cost of parsing the notes of real vaults, against reading the same blobs in the same run.

    python bench/bench_parse.py [--rounds 7] [--corpus DIR]... [--against DIR] [--profile NAME]

By default the three vaults of /work/shared/corpora (dendron-vault, kepano-obsidian, foam-docs) are
cloned once into $TMPDIR/vivary-bench-corpora/ and every `.md`/`.markdown` blob of HEAD is read.
Each round, for each corpus in turn (interleaved, so load from other processes hits every column
alike): **read** every blob from Git (pygit2, the object database the commands read from), then
**parse** every blob (`parse.parse_blob`: frontmatter, title, links, anchors), then **scan** every
body alone (`body.scan_body`, the CommonMark-aware link scan). Figures are per-note microseconds,
the median over the rounds (the first round, which warms caches and memos, is left out), with each
column's ratio to reading. `--against DIR` also times another revision's `vivary_git/parse.py` (unpacked
in DIR: `git archive REV vivary_git | tar -x -C DIR`) in the same rounds, alternating which goes
first, and prints how much less time this one takes. `--profile NAME` runs cProfile over parsing that
corpus and prints the functions that cost most.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CORPORA = Path(__file__).resolve().parents[2] / "shared/corpora"
NAMES = ("dendron-vault", "kepano-obsidian", "foam-docs")
OTHER_PARSE, OTHER_SCAN = "parse'", "scan'"  # the columns of --against's revision


def clone(name: str) -> Path:
    dest = Path(tempfile.gettempdir()) / "vivary-bench-corpora" / name
    if not (dest / ".git").exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", str(CORPORA / f"{name}.bundle"), str(dest)], check=True)
    return dest


def note_blobs(path: Path) -> tuple[object, list[object]]:
    import pygit2

    repo = pygit2.Repository(str(path))
    oids: list[object] = []
    stack = [repo.revparse_single("HEAD").peel(pygit2.Tree)]
    while stack:
        tree = stack.pop()
        for entry in tree:
            if entry.type_str == "tree":
                stack.append(repo[entry.id])
            elif entry.type_str == "blob" and entry.name.lower().endswith((".md", ".markdown")):
                oids.append(entry.id)
    return repo, oids


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7, help="rounds per corpus (default 7; the first is left out)")
    ap.add_argument("--corpus", action="append", default=[], metavar="DIR",
                    help="a Git repository of notes (repeatable; default: the three shared corpora)")
    ap.add_argument("--against", type=Path, metavar="DIR", help="also time DIR/vivary_git/parse.py, interleaved")
    ap.add_argument("--profile", metavar="NAME", help="cProfile parsing this corpus and print the top functions")
    args = ap.parse_args()
    from vivary_git import body, parse

    modules: list[tuple[str, Any, Any]] = [("", parse.parse_blob, body.scan_body)]
    if args.against is not None:
        spec = importlib.util.spec_from_file_location("vivary_parse_against", args.against / "vivary_git/parse.py")
        if spec is None or spec.loader is None:
            ap.error(f"--against {args.against}: no vivary_git/parse.py there")
        other = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(other)
        scan = getattr(other, "_scan_body", None)  # (before the body scan had its own module, body.py)
        if scan is None:
            spec = importlib.util.spec_from_file_location("vivary_body_against", args.against / "vivary_git/body.py")
            assert spec is not None and spec.loader is not None
            other_body = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(other_body)
            scan = other_body.scan_body
        modules.append(("'", other.parse_blob, scan))

    paths = [Path(c) for c in args.corpus] or [clone(n) for n in NAMES]
    corpora = []
    for path in paths:
        repo, oids = note_blobs(path)
        data = [repo[o].read_raw() for o in oids]  # type: ignore[index]
        bodies = [parse.parse_blob(d).body for d in data]
        firsts = []
        for d, b in zip(data, bodies, strict=True):
            text = d.decode("utf-8", "replace")
            firsts.append(text[: len(text) - len(b)].count("\n") + 1 if b and text.endswith(b) else 1)
        corpora.append((path.name, repo, oids, data, bodies, firsts))

    if args.profile:
        wanted = [c for c in corpora if c[0] == args.profile]
        if not wanted:
            ap.error(f"--profile {args.profile}: not one of {', '.join(c[0] for c in corpora)}")
        _, _, _, data, _, _ = wanted[0]
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(5):
            for d in data:
                parse.parse_blob(d)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)
        return 0

    times: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for name, repo, oids, data, bodies, firsts in corpora:
            t = time.perf_counter()
            for o in oids:
                repo[o].read_raw()  # type: ignore[index]
            read = time.perf_counter() - t
            measured = [("read", read)]
            for mark, parse_blob, scan_body in modules if r % 2 == 0 else modules[::-1]:
                t = time.perf_counter()
                for d in data:
                    parse_blob(d)
                measured.append(("parse" + mark, time.perf_counter() - t))
                t = time.perf_counter()
                for b, first in zip(bodies, firsts, strict=True):
                    scan_body(b, first)
                measured.append(("scan" + mark, time.perf_counter() - t))
            if r == 0 and args.rounds > 1:
                continue  # warm-up: memos, page cache
            for col, secs in measured:
                times.setdefault((name, col), []).append(secs / len(oids) * 1e6)

    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"bench_parse: {args.rounds} interleaved rounds (first left out), {os.cpu_count()} CPUs, "
          f"load {load:.1f}; per note, median µs")
    against = args.against is not None
    head = f"{'corpus':<24}{'notes':>7}{'KiB/note':>10}{'read':>9}{'parse':>9}{'÷read':>7}{'scan':>9}{'÷read':>7}"
    print(head + (f"{OTHER_PARSE:>9}{OTHER_SCAN:>9}{'parse -%':>10}{'scan -%':>9}" if against else ""))
    for name, _, oids, data, _, _ in corpora:
        med = {col: statistics.median(v) for (n, col), v in times.items() if n == name}
        kib = sum(map(len, data)) / len(data) / 1024
        line = (f"{name:<24}{len(oids):>7}{kib:>10.1f}{med['read']:>9.1f}{med['parse']:>9.1f}"
                f"{med['parse'] / med['read']:>7.1f}{med['scan']:>9.1f}{med['scan'] / med['read']:>7.1f}")
        if against:
            line += (f"{med[OTHER_PARSE]:>9.1f}{med[OTHER_SCAN]:>9.1f}"
                     f"{(1 - med['parse'] / med[OTHER_PARSE]) * 100:>10.0f}"
                     f"{(1 - med['scan'] / med[OTHER_SCAN]) * 100:>9.0f}")
        print(line)
    if against:
        print(f"(' = {args.against}; -% = how much less time this checkout takes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
