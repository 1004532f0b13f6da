"""The Git workflows people run every day, with vivary set up in the repository: fetch and pull after
`sync setup`, the post-commit index through a rebase."""

from __future__ import annotations

import contextlib
import fcntl
import json
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
    repo.git("config", "vivary.autoIndex", "true")  # the user's approval; the committed file is the team's wish
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
    repo.git("config", "vivary.autoIndex", "true")
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


def _background_index_done(repo: Path) -> None:
    """Wait for the hooks' background index runs: each holds `.git/vivary/index.log` open (its output) until it
    exits, and Git returns only once the hook that started it has."""
    log = repo / ".git" / "vivary" / "index.log"
    while any(_holds_open(int(p.name), log) for p in Path("/proc").iterdir() if p.name.isdigit()):
        os.sched_yield()


def _clone_with_auto_index(repo: Repo, tmp_path: Path, memory: str = LOCAL_AUTO) -> tuple[Path, Path]:
    """origin (bare) with the notes, and a clone of it with the post-commit hooks installed and auto-indexing
    approved in it (`vivary.autoIndex`, the user's own word; `memory` is the committed file, the team's wish)."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see the background index finish")
    repo.commit("notes", {**MEMORY_NOTES, ".vivary/memory.toml": memory})
    origin = _bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    installed = run_git_vivary(["hooks", "install", "post-commit"], me)
    assert installed.returncode == 0, installed.stderr
    git(me, "config", "vivary.autoIndex", "true")
    return origin, me


def _upstream(repo: Repo, origin: Path, name: str, text: str) -> None:
    repo.commit(name, {f"notes/{name}.md": f"# {name.title()}\n\n{text}\n"})
    repo.git("push", "-q", f"file://{origin}", "main")


def _recalls(me: Path, query: str, node: str) -> None:
    _background_index_done(me)
    r = run_git_vivary(["recall", query, "--json"], me)
    log = me / ".git" / "vivary" / "index.log"
    assert r.returncode == 0, r.stderr + (log.read_text() if log.is_file() else "(no background index ran)")
    assert json.loads(r.stdout)[0]["node_id"] == node, r.stdout


def test_auto_index_follows_a_pull_a_switch_a_merge_and_a_rebase(repo: Repo, tmp_path: Path) -> None:
    # With auto_index = true only the post-commit hook indexed: a pull, a switch, a merge or a rebase that fast-forwards
    # moves HEAD without a commit that hook sees, and the next recall refused the index as stale (exit 3) until
    # `index --yes` by hand.
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    origin, me = _clone_with_auto_index(repo, tmp_path)
    assert run_git_vivary(["index", "--yes"], me).returncode == 0
    _upstream(repo, origin, "tea", "Green tea steeps at eighty degrees.")
    git(me, "pull", "-q", "--no-rebase")  # a fast-forward: post-merge
    _recalls(me, "green tea", "notes/tea")
    _upstream(repo, origin, "coffee", "Espresso needs a fine grind.")
    git(me, "fetch", "-q")
    git(me, "switch", "-q", "-c", "reading", "origin/main")  # post-checkout, flag 1
    _recalls(me, "espresso grind", "notes/coffee")
    git(me, "switch", "-q", "main")
    _recalls(me, "green tea", "notes/tea")
    _upstream(repo, origin, "cocoa", "Hot cocoa wants whole milk.")
    git(me, "fetch", "-q")
    git(me, "rebase", "-q", "origin/main")  # fast-forwards: post-checkout, and no commit
    _recalls(me, "hot cocoa milk", "notes/cocoa")
    (me / "notes" / "mine.md").write_text("# Mine\n\nMy own note on oolong.\n")
    git(me, "add", "-A")
    git(me, "commit", "-q", "-m", "mine")
    _upstream(repo, origin, "mate", "Yerba mate in a gourd.")
    git(me, "pull", "-q", "--no-rebase", "--no-edit")  # a merge commit: post-merge, not post-commit
    _recalls(me, "yerba mate gourd", "notes/mate")
    assert git(me, "rev-list", "--count", "--merges", "HEAD").strip() == "1"
    # A burst of checkouts, none waited for: the runs queue on the index lock in no promised order, and each whose
    # commit is no longer HEAD by its turn does nothing, so the index ends at the last one.
    _upstream(repo, origin, "chai", "Masala chai with cardamom.")
    _upstream(repo, origin, "matcha", "Matcha is whisked, never steeped.")
    git(me, "fetch", "-q")
    for start in ("origin/main~1", "origin/main", "origin/main~1"):
        git(me, "switch", "-q", "--detach", start)
    _recalls(me, "masala chai cardamom", "notes/chai")
    assert not (me / "notes" / "matcha.md").exists()


def test_the_checkout_hooks_index_nothing_without_auto_index(repo: Repo, tmp_path: Path) -> None:
    off = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
    origin, me = _clone_with_auto_index(repo, tmp_path, off)
    _upstream(repo, origin, "tea", "Green tea steeps at eighty degrees.")
    pulled = subprocess.run(["git", "pull", "-q", "--no-rebase"], cwd=me, capture_output=True, text=True, check=False)
    switched = subprocess.run(["git", "switch", "-q", "-c", "other", "HEAD~1"], cwd=me, capture_output=True,
                              text=True, check=False)
    assert (pulled.returncode, pulled.stdout + pulled.stderr) == (0, "")
    assert (switched.returncode, switched.stdout + switched.stderr) == (0, "")
    _background_index_done(me)
    assert not (me / ".git" / "vivary" / "memory").exists()
    log = me / ".git" / "vivary" / "index.log"
    assert log.is_file(), "the hooks started their run, which said nothing"
    assert log.read_text() == ""


def test_a_users_own_post_checkout_hook_still_runs(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", {"notes/a.md": "# A\n"})
    hook = repo.path / ".git" / "hooks" / "post-checkout"
    hook.write_text('#!/bin/sh\necho "$@" >> "$(git rev-parse --git-dir)/mine.log"\n')
    hook.chmod(0o755)
    installed = run_git_vivary(["hooks", "install", "post-commit"], repo.path)
    assert installed.returncode == 0, installed.stderr
    assert "post-checkout: installed" in installed.stdout and "post-checkout.local and runs first" in installed.stdout
    old = repo.git("rev-parse", "HEAD").strip()
    repo.commit("b", {"notes/b.md": "# B\n"})
    repo.git("switch", "-q", "--detach", old)
    assert (repo.path / ".git" / "mine.log").read_text().split() == [repo.git("rev-parse", "main").strip(), old, "1"]
    status = run_git_vivary(["hooks", "status"], repo.path).stdout
    assert "post-checkout     vivary (python " in status and "runs post-checkout.local first" in status, status
    removed = run_git_vivary(["hooks", "uninstall"], repo.path)
    assert "post-checkout: removed; restored your previous hook from post-checkout.local" in removed.stdout
    assert hook.read_text().startswith('#!/bin/sh\necho "$@"')


@pytest.mark.parametrize(("hook", "args", "env", "moves"), [
    ("post-checkout", ["a" * 40, "b" * 40, "1"], {}, True),
    ("post-checkout", ["a" * 40, "a" * 40, "0"], {}, False),  # git checkout -- FILE: HEAD stays
    ("post-checkout", ["a" * 40, "a" * 40, "1"], {}, False),  # a branch at the same commit: the same tree
    ("post-checkout", ["0" * 40, "b" * 40, "1"], {}, True),  # git worktree add
    ("post-merge", ["0"], {}, True),
    ("post-merge", ["1"], {}, False),  # --squash makes no commit
    ("post-rewrite", ["rebase"], {}, True),
    ("post-rewrite", ["amend"], {}, False),  # post-commit follows an amend
    # The pre-commit framework passes no arguments, only its variables.
    ("post-checkout", [], {"PRE_COMMIT_FROM_REF": "a" * 40, "PRE_COMMIT_TO_REF": "a" * 40,
                           "PRE_COMMIT_CHECKOUT_TYPE": "0"}, False),
    ("post-merge", [], {"PRE_COMMIT_IS_SQUASH_MERGE": "1"}, False),
    ("post-rewrite", [], {"PRE_COMMIT_REWRITE_COMMAND": "rebase"}, True),
])
def test_which_checkouts_move_head(hook: str, args: list[str], env: dict[str, str], moves: bool,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from vivary_git.commands.hooks import moves_head

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert moves_head(hook, args) is moves
