"""The command line's own behaviour: exit codes when the reader of our output goes away, error lines."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import Repo


def _vivary(args: list[str], cwd: Path, stdout: int) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTHONUNBUFFERED", None)  # output buffered as on a user's machine
    return subprocess.run(["git", "vivary", *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, env=env,
                          check=False)


def _findings(repo: Repo, n: int) -> None:
    links = "\n".join(f"[[missing-{i}]]" for i in range(n))
    repo.write({"a.md": f"---\ntitle: A\n---\n{links}\n"})


def _closed_pipe() -> int:
    """The writing end of a pipe whose reader has already left (as after `| head -1`): every write fails."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_check_into_a_pipe_nobody_reads_keeps_its_exit_code(repo: Repo) -> None:
    # A few findings fit in the output buffer: the reader is found gone only when it is flushed, after the
    # verdict is known, and the verdict is the exit code (not Python's 120 for a failed flush at exit).
    _findings(repo, 3)
    w = _closed_pipe()
    try:
        proc = _vivary(["check"], repo.path, w)
    finally:
        os.close(w)
    assert proc.returncode == 1
    assert b"BrokenPipe" not in proc.stderr and b"Exception ignored" not in proc.stderr


def test_check_cut_short_by_the_reader_exits_141_not_0(repo: Repo) -> None:
    # Thousands of findings do not fit: the reader's leaving interrupts the printing. Exit 0 there made
    # `set -o pipefail; git vivary check | head -1` pass a failing check.
    _findings(repo, 3000)
    w = _closed_pipe()
    try:
        proc = _vivary(["check"], repo.path, w)
    finally:
        os.close(w)
    assert proc.returncode == 141
    assert proc.stderr == b""


def test_check_piped_into_head_fails_the_pipeline(repo: Repo) -> None:
    _findings(repo, 3000)
    bindir = str(Path(sys.executable).parent)
    proc = subprocess.run(
        ["bash", "-c", 'set -o pipefail; git vivary check | head -1; echo "status=$?"'],
        cwd=repo.path, capture_output=True, text=True, check=False,
        env=dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", "")),
    )
    assert proc.stdout.splitlines()[0].startswith("a.md:4: error W221")
    assert proc.stdout.splitlines()[-1] == "status=141"
