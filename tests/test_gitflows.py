"""The Git workflows people run every day, with vivary set up in the repository: fetch and pull after
`sync setup`, the post-commit index through a rebase."""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, run_git_vivary
from test_store import NOTES


def _bare(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def test_fetch_and_pull_work_after_sync_setup_while_the_remote_lacks_a_cache_ref(repo: Repo, tmp_path: Path) -> None:
    # A remote with a cache but no verdict notes (CI ran `check` and `sync push` with notes off), then one with
    # neither: a refspec naming a ref the remote lacks made every plain `git fetch` and `git pull` die with
    # `fatal: couldn't find remote ref refs/notes/vivary`.
    repo.commit("notes", NOTES)
    origin = _bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1
    assert run_git_vivary(["sync", "push", f"file://{origin}"], repo.path).returncode == 0
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    r = run_git_vivary(["sync", "setup"], me)
    assert r.returncode == 0, r.stderr
    repo.commit("more", {"notes/later.md": "# Later\n"})
    repo.git("push", "-q", f"file://{origin}", "main")
    git(me, "fetch", "-q")
    assert git(me, "rev-parse", "refs/vivary-fetch/origin/cache").strip() == \
        git(origin, "rev-parse", "refs/vivary/cache").strip(), "a plain fetch stages the cache"
    git(me, "pull", "-q", "--rebase")
    assert (me / "notes" / "later.md").is_file()
    # A remote that has no vivary ref at all (`sync setup` before CI ever pushed one).
    empty = _bare(tmp_path, "empty.git")
    git(me, "push", "-q", f"file://{empty}", "main")
    git(me, "remote", "add", "empty", f"file://{empty}")
    assert run_git_vivary(["sync", "setup", "empty"], me).returncode == 0
    git(me, "fetch", "-q", "empty")
    r = run_git_vivary(["sync", "fetch", "empty"], me)
    assert r.returncode == 0 and "has no vivary cache yet" in r.stdout, r.stderr


def test_sync_setup_replaces_the_refspecs_an_earlier_setup_wrote(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    origin = _bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    # What an earlier `sync setup` wrote: with this remote, which has neither ref, `git fetch` died.
    for old in ("+refs/vivary/cache:refs/vivary-fetch/origin/cache",
                "+refs/notes/vivary:refs/vivary-fetch/origin/notes"):
        git(me, "config", "--add", "remote.origin.fetch", old)
    assert "couldn't find remote ref" in subprocess.run(["git", "fetch"], cwd=me, capture_output=True,
                                                        text=True).stderr
    fetched = run_git_vivary(["sync", "fetch"], me)
    assert fetched.returncode == 0, fetched.stderr
    assert ("vivary: remote.origin.fetch holds +refs/notes/vivary:refs/vivary-fetch/origin/notes, which an earlier "
            "`git vivary sync setup` wrote: `git fetch origin` and `git pull` stop at it while origin has no "
            "refs/notes/vivary; `git vivary sync setup origin` replaces it") in fetched.stderr, fetched.stderr
    r = run_git_vivary(["sync", "setup"], me)
    assert r.returncode == 0, r.stderr
    specs = git(me, "config", "--get-all", "remote.origin.fetch").splitlines()
    assert specs == ["+refs/heads/*:refs/remotes/origin/*", "+refs/vivary/cache*:refs/vivary-fetch/origin/cache*",
                     "+refs/notes/vivary*:refs/vivary-fetch/origin/notes*"], specs
    assert "replaces +refs/notes/vivary:refs/vivary-fetch/origin/notes" in r.stdout, r.stdout
    git(me, "fetch", "-q")
    fetched = run_git_vivary(["sync", "fetch"], me)
    assert fetched.returncode == 0 and "earlier" not in fetched.stderr, fetched.stderr
    again = run_git_vivary(["sync", "setup"], me)
    assert again.stdout.count("(already there)") == 2 and "replaces" not in again.stdout, again.stdout
    assert git(me, "config", "--get-all", "remote.origin.fetch").splitlines() == specs


LOCAL_AUTO = '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.local]\nauto_index = true\n'
MEMORY_NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
    ".vivary/memory.toml": LOCAL_AUTO,
}


def test_a_post_commit_index_of_a_commit_since_replaced_leaves_the_index_of_head(repo: Repo, cli: Any) -> None:
    # The post-commit hook starts `index --auto --rev C` for each commit; runs queue on the index lock, which hands
    # it out in no promised order. After `git commit --amend` (or the commits of a rebase, in a row), the run of the
    # commit replaced could take the lock last and leave the index at a tree nobody has checked out: recall then
    # refused a working tree equal to HEAD as stale.
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    first = repo.commit("notes", MEMORY_NOTES)
    repo.write({"notes/keys.md": "# Key rotation\n\nSigning keys rotate every month, by the on-call.\n"})
    repo.git("commit", "-q", "-a", "--amend", "--no-edit")
    amended = repo.git("rev-parse", "HEAD").strip()
    assert cli("index", "--auto", "--rev", amended, cwd=repo.path).code == 0  # the amended commit's run first
    assert cli("index", "--auto", "--rev", first, cwd=repo.path).code == 0  # then the replaced one's
    r = cli("recall", "signing keys", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()[0]["node_id"] == "notes/keys"
    # The run of the commit HEAD is at still indexes it.
    repo.write({"notes/deploy.md": "# Deploy runbook\n\nHow we deploy: canary first.\n"})
    repo.git("commit", "-q", "-a", "-m", "canary")
    assert cli("recall", "canary", cwd=repo.path).code == 3  # stale until the commit's run
    assert cli("index", "--auto", "--rev", repo.git("rev-parse", "HEAD").strip(), cwd=repo.path).code == 0
    assert cli("recall", "canary", cwd=repo.path).code == 0


def test_a_post_commit_index_waiting_on_the_lock_skips_a_commit_replaced_meanwhile(repo: Repo, cli: Any) -> None:
    # The same, decided once the run holds the lock: the commit was HEAD when the run started and was amended while
    # it waited for another run to finish.
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see the run wait on the lock")
    repo.commit("notes", MEMORY_NOTES)
    assert cli("index", "--yes", cwd=repo.path).code == 0
    dataset = cli("index", "--dry-run", "--json", cwd=repo.path).json()["dataset"]
    manifest = repo.path / ".git" / "vivary" / "memory" / dataset / "manifest.json"
    before = manifest.read_bytes()
    commit = repo.commit("keys", {"notes/keys.md": "# Key rotation\n\nSigning keys rotate every month.\n"})
    lock = repo.path / ".git" / "vivary" / "locks" / f"index-{dataset}.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # another index run holds it
        env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
        run = subprocess.Popen([sys.executable, "-m", "vivary_git.main", "index", "--auto", "--rev", commit],
                               cwd=repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while run.poll() is None and not _holds_open(run.pid, lock):
            os.sched_yield()
        assert run.poll() is None, run.communicate()
        repo.git("commit", "-q", "--amend", "-m", "keys, monthly")
    finally:
        os.close(fd)
    _, err = run.communicate()
    assert run.returncode == 0, err
    assert manifest.read_bytes() == before, "the run of the commit replaced left the index alone"


def _holds_open(pid: int, path: Path) -> bool:
    """Whether process `pid` has `path` open (it is waiting on the lock there)."""
    with contextlib.suppress(OSError):
        return any(os.readlink(fd) == str(path) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return False


def test_bisect_run_finds_the_commit_that_broke_a_reference_past_one_it_cannot_read(repo: Repo) -> None:
    # docs/check.md: `check` exits 2 on a commit it cannot read (a broken tropo.toml), never 125 or 128 and more,
    # which `git bisect run` reads as skip and abort; the recipe there turns 2 into a skip.
    good = repo.commit("notes", {**NOTES, "decisions/d2.md": "---\nstatus: accepted\ndate: 2026-01-03\n---\n# Ok\n"})
    repo.commit("broken config", {"tropo.toml": "[[[\n"})
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 2
    for n in range(3):
        repo.commit("config still broken", {f"notes/n{n}.md": f"# N{n}\n"})
    repo.commit("fixed config", {"tropo.toml": NOTES["tropo.toml"]})
    culprit = repo.commit("culprit", {"modules/m1.md": "---\nstatus: live\ndepends: [m2, gone]\n---\n# Module one\n"})
    repo.commit("later", {"notes/later.md": "# Later\n"})
    bin_dir = str(Path(sys.executable).parent)
    env = {"PATH": bin_dir + os.pathsep + os.environ.get("PATH", "")}
    repo.git("bisect", "start", "HEAD", good)
    try:
        out = git(repo.path, "bisect", "run", "sh", "-c",
                  'git vivary check --rev HEAD; s=$?; [ "$s" -eq 2 ] && exit 125; exit "$s"', env=env)
        log = repo.git("bisect", "log")
    finally:
        repo.git("bisect", "reset")
    assert f"{culprit} is the first bad commit" in out, out
    assert "# skip: " in log, log
