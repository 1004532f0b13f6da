"""Shared fixtures: real Git repositories in temporary folders, and the CLI run in-process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from vivary_git.gates.runner import CI_MARKERS
from vivary_git.main import main

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_AUTHOR_DATE": "2026-11-30T12:00:00Z", "GIT_COMMITTER_DATE": "2026-11-30T12:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def _hermetic_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    for k, v in GIT_ENV.items():
        monkeypatch.setenv(k, v)
    # A CI runner's own variables too: run in CI, a test must see the owner's terminal unless it sets one.
    for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "VIVARY_STATS", *CI_MARKERS, "PRE_COMMIT_FROM_REF",
              "PRE_COMMIT_TO_REF", "PRE_COMMIT_LOCAL_BRANCH", "PRE_COMMIT_REMOTE_NAME"):
        monkeypatch.delenv(k, raising=False)


def git(cwd: Path, *args: str, check: bool = True, env: Mapping[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=False,
        env=dict(os.environ, **(env or {})),
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def write(root: Path, files: Mapping[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            p.write_bytes(content)
        else:
            p.write_text(content, encoding="utf-8")


@dataclass
class Repo:
    path: Path

    def write(self, files: Mapping[str, str | bytes]) -> None:
        write(self.path, files)

    def git(self, *args: str, check: bool = True) -> str:
        return git(self.path, *args, check=check)

    def commit(self, message: str = "change", files: Mapping[str, str | bytes] | None = None) -> str:
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD").strip()


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    path = tmp_path / "ws"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "gc.auto", "0")
    yield Repo(path)


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]) -> Any:
    """Run `git vivary ARGS` in-process with a working directory; returns exit code and output."""

    def run(*args: str, cwd: Path) -> Result:
        old = Path.cwd()
        os.chdir(cwd)
        try:
            code = main(list(args))
        finally:
            os.chdir(old)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


@pytest.fixture
def packets_rendered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The node ids whose packet this process rendered (`snapshot.packet`, wrapped, not mocked)."""
    from vivary_git.memory import snapshot

    rendered: list[str] = []
    real = snapshot.packet

    def counting(node: Any, note: Any, edges: Any) -> str:
        rendered.append(node.id)
        return real(node, note, edges)

    monkeypatch.setattr(snapshot, "packet", counting)
    return rendered


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the children this test process forks from here on (os.fork still forks)."""
    pids: list[int] = []
    real_fork = os.fork

    def counting_fork() -> int:
        pid = real_fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(os, "fork", counting_fork)
    return pids


# Run as root, this replaces `git` on PATH: `git check-ignore` in the folder (the one command that reads the
# workspace's ignore files) runs as `nobody`, every other Git command as root. safe.directory: that user
# does not own the repository.
_UNPRIVILEGED_GIT = """#!{python}
import os, sys
args = sys.argv[1:]
if "check-ignore" in args and (os.getcwd() + "/").startswith({base!r}):
    home = {base!r} + "home"  # the hermetic HOME is in root's private temp folder
    os.environ.update(GIT_CONFIG_COUNT="1", GIT_CONFIG_KEY_0="safe.directory", GIT_CONFIG_VALUE_0="*",
                      HOME=home, XDG_CONFIG_HOME=home + "/.config")
    os.setgroups([])
    os.setgid(65534)
    os.setuid(65534)
os.execv({git!r}, [{git!r}, *args])
"""


@dataclass
class UnreadableFiles:
    """A folder where `chmod 000` really stops Git from reading a file. Root reads every file, and the
    suite runs as root here and in CI: then the folder is made under /tmp (traversable by every user) and
    `path` puts a `git` first whose `check-ignore` runs as the `nobody` account (uid 65534). Not as root,
    this user is already stopped, and `path` is PATH unchanged."""

    base: Path
    path: str


@pytest.fixture
def unreadable_files(tmp_path: Path) -> Iterator[UnreadableFiles]:
    if os.geteuid() != 0:
        (tmp_path / "unreadable").mkdir()
        yield UnreadableFiles(tmp_path / "unreadable", os.environ["PATH"])
        return
    import shutil
    import tempfile

    real_git = shutil.which("git")
    assert real_git is not None
    base = Path(tempfile.mkdtemp(prefix="vivary-unreadable-", dir="/tmp")).resolve()
    base.chmod(0o755)
    (base / "home").mkdir()
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(_UNPRIVILEGED_GIT.format(python=sys.executable, git=real_git, base=f"{base}/"))
    wrapper.chmod(0o755)
    try:
        yield UnreadableFiles(base, f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def run_git_vivary(args: list[str], cwd: Path, env: Mapping[str, str] | None = None,
                   input: str | None = None) -> subprocess.CompletedProcess[str]:
    """`git vivary …` as a real subprocess through Git's own command dispatch."""
    bindir = str(Path(sys.executable).parent)
    full_env = dict(os.environ, **(env or {}))
    full_env["PATH"] = bindir + os.pathsep + full_env.get("PATH", "")
    return subprocess.run(["git", "vivary", *args], cwd=cwd, capture_output=True, text=True, env=full_env,
                          input=input, check=False)



def killed_at(cwd: Path, args: list[str], point: str) -> None:
    """`git vivary ARGS` (in-tree) killed with SIGKILL where it pauses at `point` (`VIVARY_TEST_PAUSE`, a seam of the
    code): what a crash leaves there must be nothing half-written."""
    import signal
    import time

    env = dict(os.environ, VIVARY_TEST_PAUSE=point)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    proc = subprocess.Popen([sys.executable, "-m", "vivary_git.main", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    deadline = time.monotonic() + 300
    try:
        while True:
            line = proc.stderr.readline()
            if f"paused at {point}" in line:
                return
            if not line and proc.poll() is not None:
                raise AssertionError(f"exited {proc.returncode} before pausing at {point}")
            if time.monotonic() > deadline:
                raise AssertionError(f"never paused at {point}")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()

TROPO = """version = 1
exclude = ["README.md"]

[base]
derive = ["id", "title"]
allow_untyped = true
optional = { tags = "string-list" }

[types.decision]
folder = "decisions"
required = { status = "enum:proposed|accepted", date = "date" }
optional = { related = "ref-list", owner = "ref", link = "url" }

[types.module]
folder = "modules"
required = { status = "string" }
optional = { depends = "ref-list" }
"""


def approve_claude_code(*names: str) -> None:
    """What a user does once before Claude Code starts a server of a project's .mcp.json (tests/test_hosts_real.py
    shows it pending before): list it in `enabledMcpjsonServers` of ~/.claude/settings.json."""
    settings = Path(os.environ["HOME"]) / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"enabledMcpjsonServers": list(names or ["vivary"])}), "utf-8")
