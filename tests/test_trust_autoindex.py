"""Auto-indexing's approval is the user's, never a committed file's (docs/security.md, memory/local/autoindex.py).

`[memory.local] auto_index = true` is committed with the notes: with vivary's hooks where every repository runs
them (a global `core.hooksPath`), a `git clone` of a stranger's repository started `index --auto`, which embedded
its notes and wrote derived state on this machine because a file someone else wrote said so."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, run_git_vivary

AUTO = '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.local]\nauto_index = true\n'
NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
    ".vivary/memory.toml": AUTO,
}
HINT = ("vivary: index --auto: .vivary/memory.toml sets auto_index = true, but indexing is not approved in this "
        "clone ({why}), so nothing was indexed; to approve it, run `git config vivary.autoIndex true` "
        "(docs/memory.md#5-auto-index-after-each-commit-optional)\n")


def _holds_open(pid: int, path: Path) -> bool:
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False


def _background_done(clone: Path) -> str:
    """What the hooks' background index runs said, once they are over (each holds the log open until it exits)."""
    log = clone / ".git" / "vivary" / "index.log"
    while any(_holds_open(int(p.name), log) for p in Path("/proc").iterdir() if p.name.isdigit()):
        os.sched_yield()
    return log.read_text() if log.is_file() else ""


@pytest.fixture
def global_hooks(tmp_path: Path) -> Path:
    """vivary's post-commit hooks (and the checkout ones) in a global `core.hooksPath`, installed as a user does:
    every repository of this user runs them, a fresh clone of anyone's included."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see the background index finish")
    folder = tmp_path / "global-hooks"
    folder.mkdir()
    git(tmp_path, "config", "--global", "core.hooksPath", str(folder))
    scratch = tmp_path / "scratch"
    git(tmp_path, "init", "-q", str(scratch))
    installed = run_git_vivary(["hooks", "install", "post-commit"], scratch)
    assert installed.returncode == 0 and "post-checkout: installed" in installed.stdout, installed.stderr
    assert ("vivary: note: these hooks index a clone only where its .vivary/memory.toml sets auto_index = true and "
            "you approve it: `git config vivary.autoIndex true` there") in installed.stdout, installed.stdout
    return folder


def _clone(repo: Repo, tmp_path: Path, files: dict[str, str] | None = None) -> Path:
    repo.commit("notes", {**NOTES, **(files or {})})
    clone = tmp_path / "clone"
    done = subprocess.run(["git", "clone", "-q", str(repo.path), str(clone)], capture_output=True, text=True,
                          check=False)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
    return clone


def test_a_strangers_committed_auto_index_indexes_nothing_on_clone_or_commit(repo: Repo, tmp_path: Path,
                                                                             global_hooks: Path) -> None:
    clone = _clone(repo, tmp_path)
    said = _background_done(clone)  # the clone's checkout ran post-checkout
    assert not (clone / ".git" / "vivary" / "memory").exists()
    assert said == HINT.format(why="vivary.autoIndex is not set"), said
    (clone / "notes" / "mine.md").write_text("# Mine\n\nOolong.\n")
    git(clone, "add", "-A")
    committed = subprocess.run(["git", "commit", "-q", "-m", "mine"], cwd=clone, capture_output=True, text=True,
                               check=False)
    assert (committed.returncode, committed.stdout + committed.stderr) == (0, "")  # the commit is not held up
    assert _background_done(clone) == HINT.format(why="vivary.autoIndex is not set")  # said once, not again
    assert not (clone / ".git" / "vivary" / "memory").exists()
    # `doctor` says so beside the memory line, and what approves it.
    doctor = run_git_vivary(["doctor", "--json"], clone)
    assert ("auto_index = true, not approved here (vivary.autoIndex is not set): the hooks index nothing until "
            "`git config vivary.autoIndex true`") in json.loads(doctor.stdout)["memory"]["detail"], doctor.stdout


def test_the_background_hint_is_written_once_until_something_changes(repo: Repo, tmp_path: Path, cli: Any,
                                                                     global_hooks: Path) -> None:
    """Every commit and checkout appended the same hint to `.git/vivary/index.log` (up to its 1 MiB cap), which
    then held little else. It is not written again while it is the log's last line; a new reason, or anything
    said in between, and it is written again; a person who runs `index --auto` reads it every time."""
    clone = _clone(repo, tmp_path)
    unset = HINT.format(why="vivary.autoIndex is not set")
    assert _background_done(clone) == unset
    for n in range(3):
        (clone / "notes" / f"n{n}.md").write_text(f"# N{n}\n")
        git(clone, "add", "-A")
        git(clone, "commit", "-q", "-m", f"n{n}")
        _background_done(clone)
    git(clone, "switch", "-q", "--detach", "HEAD~1")
    _background_done(clone)
    git(clone, "switch", "-q", "main")
    assert _background_done(clone) == unset
    git(clone, "config", "vivary.autoIndex", "maybe")  # a new reason is news
    git(clone, "commit", "-q", "--allow-empty", "-m", "maybe")
    _background_done(clone)
    git(clone, "commit", "-q", "--allow-empty", "-m", "maybe again")
    bad = HINT.format(why="vivary.autoIndex is not true or false: bad boolean config value 'maybe' for "
                      "'vivary.autoindex'")
    assert _background_done(clone) == unset + bad
    git(clone, "config", "--unset", "vivary.autoIndex")
    log = clone / ".git" / "vivary" / "index.log"
    with log.open("a") as f:
        f.write("vivary: something else was said\n")
    git(clone, "commit", "-q", "--allow-empty", "-m", "after")
    assert _background_done(clone) == unset + bad + "vivary: something else was said\n" + unset
    assert cli("index", "--auto", cwd=clone).err == unset  # on the terminal: said each time
    assert cli("index", "--auto", cwd=clone).err == unset
    # The cap stays: a log past 1 MiB is started afresh by the next run.
    log.write_text("x" * (1 << 20) + "\n" + unset)
    git(clone, "commit", "-q", "--allow-empty", "-m", "capped")
    assert _background_done(clone) == unset


def test_the_users_own_approval_indexes_as_before(repo: Repo, tmp_path: Path, global_hooks: Path) -> None:
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    clone = _clone(repo, tmp_path)
    _background_done(clone)
    git(clone, "config", "vivary.autoIndex", "true")  # this clone's .git/config: the user's own
    (clone / "notes" / "tea.md").write_text("# Tea\n\nGreen tea steeps at eighty degrees.\n")
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "tea")
    assert _background_done(clone).endswith(HINT.format(why="vivary.autoIndex is not set"))  # the clone's run only
    r = run_git_vivary(["recall", "green tea", "--json"], clone)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[0]["node_id"] == "notes/tea"
    doctor = json.loads(run_git_vivary(["doctor", "--json"], clone).stdout)["memory"]["detail"]
    assert "auto-index approved here (vivary.autoIndex = true, from .git/config)" in doctor, doctor


def test_approval_from_a_file_in_the_work_tree_does_not_count(repo: Repo, tmp_path: Path, cli: Any) -> None:
    """A repository that ships `[vivary] autoIndex = true` in a file of its own, which the user includes from
    `.git/config` (as a README may ask): Git reads it as local config, but its bytes are the repository's."""
    clone = _clone(repo, tmp_path, {".gitconfig": "[vivary]\n\tautoIndex = true\n"})
    git(clone, "config", "include.path", "../.gitconfig")
    assert git(clone, "config", "--type=bool", "vivary.autoIndex").strip() == "true"
    r = cli("index", "--auto", cwd=clone)
    assert r.code == 0 and r.out == ""
    shipped = (clone / ".gitconfig").resolve()
    assert r.err == HINT.format(why=f"vivary.autoIndex = true comes from {shipped}, a file in the work tree, which "
                                "the repository can ship: it is not your approval"), r.err
    assert not (clone / ".git" / "vivary" / "memory").exists()
    # The user's own word, after it, counts (the last value wins, as in Git); an explicit no is an answer, and is
    # not nagged about; a value that is no boolean is said.
    git(clone, "config", "--global", "vivary.autoIndex", "maybe")
    git(clone, "config", "--unset", "include.path")
    r = cli("index", "--auto", cwd=clone)
    assert r.code == 0 and "vivary.autoIndex is not true or false: bad boolean config value 'maybe'" in r.err, r.err
    git(clone, "config", "--global", "--unset", "vivary.autoIndex")
    git(clone, "config", "vivary.autoIndex", "false")
    r = cli("index", "--auto", cwd=clone)
    assert (r.code, r.out, r.err) == (0, "", "")
    assert not (clone / ".git" / "vivary" / "memory").exists()


def test_a_false_from_a_file_in_the_work_tree_is_named(repo: Repo, tmp_path: Path, cli: Any) -> None:
    """A shipped `autoIndex = false` the user includes turns auto-indexing off (only ever off: it stands), and
    doctor names the file it came from, as it does for a shipped `true`, rather than a path through `.git/..`."""
    clone = _clone(repo, tmp_path, {".gitconfig": "[vivary]\n\tautoIndex = false\n"})
    git(clone, "config", "include.path", "../.gitconfig")
    r = cli("index", "--auto", cwd=clone)
    assert (r.code, r.out, r.err) == (0, "", "")  # declined: nothing indexed, nobody nagged
    assert not (clone / ".git" / "vivary" / "memory").exists()
    shipped = (clone / ".gitconfig").resolve()
    doctor = run_git_vivary(["doctor", "--json"], clone)
    assert (f"auto_index = true, declined here (vivary.autoIndex = false comes from {shipped}, a file in the work "
            "tree, which the repository can ship; it can only turn auto-indexing off): the hooks index nothing"
            ) in json.loads(doctor.stdout)["memory"]["detail"], doctor.stdout
    # The user's own `false` is said as before.
    git(clone, "config", "--unset", "include.path")
    git(clone, "config", "vivary.autoIndex", "false")
    doctor = run_git_vivary(["doctor", "--json"], clone)
    assert ("auto_index = true, declined here (vivary.autoIndex = false, from .git/config): the hooks index nothing"
            ) in json.loads(doctor.stdout)["memory"]["detail"], doctor.stdout


def test_the_hint_names_the_file_escaped(repo: Repo, tmp_path: Path, cli: Any) -> None:
    """Paths in the line are a stranger's: escaped like every value, so none starts a CI runner's command."""
    clone = _clone(repo, tmp_path, {"x\n::error::y/.gitconfig": "[vivary]\n\tautoIndex = true\n"})
    git(clone, "config", "include.path", "../x\n::error::y/.gitconfig")
    r = cli("index", "--auto", cwd=clone)
    assert r.code == 0 and "\n::" not in r.err and r.err.count("\n") == 1, r.err
    assert "x\\n::error::y/.gitconfig, a file in the work tree" in r.err, r.err


def test_the_mcp_server_a_host_starts_builds_no_index_on_a_committed_setting(repo: Repo) -> None:
    """The server runs without the user typing a command: `auto_index = true` and `require_explicit_index = false`,
    committed, are no approval to it. It answers by keywords and names `index --yes`; it writes through only an
    index this machine already built (test_mcp_writethrough.py)."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    repo.commit("notes", {**NOTES, ".vivary/memory.toml": AUTO.replace("auto_index = true\n", "auto_index = true\n"
                                                                       "require_explicit_index = false\n")})
    service = MemoryService(repo.path)
    try:
        ans = service.search("how do we deploy", mode="hybrid")
        assert ans.mode != "hybrid" and "no semantic index yet (run `git vivary index --yes`)" in ans.mode_reason, ans
        assert service.add("Deploys happen on Tuesdays.").ok
        assert service.search("which weekday do we deploy", mode="hybrid").mode != "hybrid"
    finally:
        service.close()
    assert not list((repo.path / ".git" / "vivary").rglob("manifest.json"))
