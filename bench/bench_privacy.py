"""How fast is the privacy boundary next to Git itself?

    python bench/bench_privacy.py [--paths 100000] [--repeat 3]

Builds a throw-away repository with a realistic set of ignore rules (a long root `.gitignore` with
negations, nested `.gitignore` files, `info/exclude`) and N tracked paths (written straight into the
index, so no N files on disk), then reports the best of R runs of:

- `decide()` on the working tree and on the committed tree (`tree=`);
- raw `git check-ignore --no-index --stdin -z`, plain and with `-v -n`, output discarded, no parsing;
- `git ls-files -z` over the same index.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from vivary_git.privacy import PrivacyPolicy, decide

ROOT_GITIGNORE = """\
# Python
__pycache__/
*.py[cod]
.venv/
build/
dist/
*.egg-info/
.pytest_cache/
.mypy_cache/
# Node
node_modules/
npm-debug.log*
.next/
coverage/
# Editors and OS
.idea/
.vscode/*
!.vscode/settings.json
*.swp
.DS_Store
Thumbs.db
# Notes workspace
*.tmp
*.bak
drafts/**/scratch-*
/exports/
!exports/README.md
archive/**/*.pdf
**/private-*/
*.log
!keep.log
attachments/**/*.png
!attachments/**/diagram-*.png
"""

NESTED_GITIGNORE = "*.draft.md\n!important.draft.md\n/local/\n"


def git(cwd: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, input=stdin, capture_output=True, check=True).stdout


def make_paths(n: int) -> list[str]:
    suffixes = ["md", "md", "md", "md", "md", "draft.md", "log", "png", "pdf", "tmp", "json"]
    areas = ["notes", "decisions", "research", "drafts", "archive", "attachments", "modules", "changes"]
    paths = []
    for i in range(n):
        area = areas[i % len(areas)]
        depth = 1 + i % 4
        dirs = "/".join(f"{area}-{(i // 7 + d) % 40}" if d == 0 else f"t{(i // 13 + d) % 25}" for d in range(depth))
        paths.append(f"{area}/{dirs}/note-{i}.{suffixes[i % len(suffixes)]}")
    return paths


def build_repo(root: Path, paths: list[str], on_disk: bool) -> tuple[Path, str]:
    repo = root / "repo"
    repo.mkdir()
    git(repo, "init", "--quiet")
    (repo / ".gitignore").write_text(ROOT_GITIGNORE)
    (repo / ".git" / "info" / "exclude").write_text("*.orig\n*.rej\n")
    nested = sorted({p.rsplit("/", 1)[0] for p in paths})[::25]
    for d in nested:
        (repo / d).mkdir(parents=True, exist_ok=True)
        (repo / d / ".gitignore").write_text(NESTED_GITIGNORE)
    git(repo, "add", "--all", "--force")
    if on_disk:
        # Git's lstat cache remembers existing directories, not missing ones: a checkout is the fair case.
        for p in paths:
            (repo / p).parent.mkdir(parents=True, exist_ok=True)
            (repo / p).touch()
    blob = git(repo, "hash-object", "-w", "--stdin", stdin=b"").decode().strip()
    index_info = "".join(f"100644 {blob}\t{p}\n" for p in paths).encode()
    git(repo, "update-index", "--add", "--index-info", stdin=index_info)
    tree = git(repo, "write-tree").decode().strip()
    return repo, tree


def best_of(repeat: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def raw_check_ignore(repo: Path, stdin: bytes, verbose: bool) -> None:
    args = ["git", "check-ignore", "--no-index", *(["-v", "-n"] if verbose else []), "--stdin", "-z"]
    with open(os.devnull, "wb") as sink:
        proc = subprocess.run(args, cwd=repo, input=stdin, stdout=sink, check=False)
    assert proc.returncode in (0, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--paths", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--index-only", action="store_true", help="do not create the files on disk (faster to set up)")
    args = parser.parse_args()

    paths = make_paths(args.paths)
    stdin = b"".join(p.encode() + b"\0" for p in paths)
    with tempfile.TemporaryDirectory(prefix="vivary-bench-privacy-") as tmp:
        repo, tree = build_repo(Path(tmp), paths, on_disk=not args.index_only)
        policy = PrivacyPolicy(private_paths=("research/**/embargo-*",))
        decisions = decide(repo, paths, policy)
        private = sum(d.private for d in decisions)
        assert decisions == decide(repo, paths, policy, tree=tree)

        rows = [
            ("decide() working tree", best_of(args.repeat, lambda: decide(repo, paths, policy))),
            ("decide() tree=", best_of(args.repeat, lambda: decide(repo, paths, policy, tree=tree))),
            ("git check-ignore --stdin -z", best_of(args.repeat, lambda: raw_check_ignore(repo, stdin, False))),
            ("git check-ignore -v -n --stdin -z", best_of(args.repeat, lambda: raw_check_ignore(repo, stdin, True))),
            ("git ls-files -z", best_of(args.repeat, lambda: git(repo, "ls-files", "-z"))),
        ]
    print(
        f"git {git(Path.cwd(), 'version').decode().split()[-1]}, python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    where = "in the index only" if args.index_only else "in the index and on disk"
    print(f"{len(paths):,} paths {where}, {private:,} private; best of {args.repeat}")
    baseline = rows[3][1]
    for name, seconds in rows:
        print(f"  {name:36} {seconds * 1000:8.1f} ms   {seconds / baseline:5.2f}x raw -v batch")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
