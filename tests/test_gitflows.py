"""The Git workflows people run every day, with vivary set up in the repository: fetch and pull after
`sync setup`, the post-commit index through a rebase."""

from __future__ import annotations

import subprocess
from pathlib import Path

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
    r = run_git_vivary(["sync", "setup"], me)
    assert r.returncode == 0, r.stderr
    specs = git(me, "config", "--get-all", "remote.origin.fetch").splitlines()
    assert specs == ["+refs/heads/*:refs/remotes/origin/*", "+refs/vivary/cache*:refs/vivary-fetch/origin/cache*",
                     "+refs/notes/vivary*:refs/vivary-fetch/origin/notes*"], specs
    assert "replaces +refs/notes/vivary:refs/vivary-fetch/origin/notes" in r.stdout, r.stdout
    git(me, "fetch", "-q")
    again = run_git_vivary(["sync", "setup"], me)
    assert again.stdout.count("(already there)") == 2 and "replaces" not in again.stdout, again.stdout
    assert git(me, "config", "--get-all", "remote.origin.fetch").splitlines() == specs
