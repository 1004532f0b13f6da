"""The gate on the server: real `git push`es into a bare repository whose pre-receive hook runs vivary."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Repo, git

ROOT = Path(__file__).resolve().parents[1]
TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list" }
"""
ZERO = "0" * 40


def _hook(bare: Path, body: str) -> None:
    hook = bare / "hooks" / "pre-receive"
    hook.write_text(f"#!/bin/sh\n{body}\n")
    hook.chmod(0o755)


def _vivary() -> str:
    return f"env PYTHONPATH={shlex.quote(str(ROOT))} {shlex.quote(sys.executable)} -m vivary_git.main"


@pytest.fixture
def server(tmp_path: Path, repo: Repo) -> tuple[Path, Repo]:
    """A bare repository with vivary's pre-receive hook (and verdict notes on, which must never be written
    there), and a clone of it, `repo`, that has pushed a clean workspace to `main`."""
    bare = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(bare, "config", "vivary.notes", "true")
    _hook(bare, f"exec {_vivary()} hooks run pre-receive")
    repo.git("remote", "add", "origin", str(bare))
    repo.commit("start", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n",
                                "modules/b.md": "---\ndepends: [a]\n---\n# B\n"})
    first = push(repo, "main")
    assert first.returncode == 0, first.stdout
    assert "vivary: refs/heads/main: checking" in first.stdout
    return bare, repo


def push(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "origin", *args], cwd=repo.path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=dict(os.environ), check=False)


def _nothing_written(bare: Path, branches: set[str]) -> None:
    refs = set(git(bare, "for-each-ref", "--format=%(refname)").split())
    assert refs == branches, refs
    assert not (bare / "vivary").exists()
    assert git(bare, "fsck", "--no-dangling").strip() == ""


def test_a_push_that_breaks_a_reference_is_refused_and_its_fix_accepted(server: tuple[Path, Repo]) -> None:
    bare, repo = server
    repo.git("rm", "-q", "modules/a.md")
    repo.commit("drop a")
    refused = push(repo, "main")
    assert refused.returncode == 1, refused.stdout
    assert "remote: modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert "remote: vivary: push refused: refs/heads/main would gain the errors above" in refused.stdout
    assert "[remote rejected] main -> main (pre-receive hook declined)" in refused.stdout
    repo.commit("b stands alone", files={"modules/b.md": "---\n---\n# B\n"})
    fixed = push(repo, "main")
    assert fixed.returncode == 0, fixed.stdout
    _nothing_written(bare, {"refs/heads/main"})


def test_new_branches_and_tags_are_compared_with_the_default_branch_and_deletions_pass(
        server: tuple[Path, Repo]) -> None:
    bare, repo = server
    # Debt main already has is no new branch's: b's link to `gone` is on main before the branch leaves it.
    repo.commit("debt", files={"modules/b.md": "---\ndepends: [a, gone]\n---\n# B\n"})
    _hook(bare, "exit 0")
    assert push(repo, "main").returncode == 0
    _hook(bare, f"exec {_vivary()} hooks run pre-receive")
    repo.git("checkout", "-q", "-b", "ok")
    repo.commit("c", files={"modules/c.md": "---\ndepends: [a]\n---\n# C\n"})
    ok = push(repo, "ok")
    assert ok.returncode == 0, ok.stdout
    assert "a new branch: compared with where it leaves main" in ok.stdout
    repo.git("checkout", "-q", "-b", "bad")
    repo.commit("d", files={"modules/d.md": "---\ndepends: [nowhere]\n---\n# D\n"})
    bad = push(repo, "bad")
    assert bad.returncode == 1 and "modules/d.md:2: error W220" in bad.stdout, bad.stdout
    assert "ref 'gone'" not in bad.stdout
    repo.git("checkout", "-q", "--orphan", "alone")  # no commit in common with main: every error is its own
    repo.commit("alone", files={"modules/e.md": "---\ndepends: [elsewhere]\n---\n# E\n"})
    alone = push(repo, "alone")
    assert alone.returncode == 1 and "a new branch sharing no commit with main: every error counts" in alone.stdout
    assert "modules/e.md:2: error W220" in alone.stdout and "ref 'gone'" in alone.stdout, alone.stdout
    repo.git("checkout", "-q", "bad")
    # A tag on the commit the gate refused on a branch: it used to get in unchecked, under the tag's name.
    repo.git("tag", "-a", "-m", "release", "v1")
    tag = push(repo, "v1")
    assert tag.returncode == 1, tag.stdout
    assert "remote: vivary: refs/tags/v1: checking " in tag.stdout and "the commit tag " in tag.stdout
    assert "a new tag: compared with where it leaves main" in tag.stdout and "modules/d.md:2: error W220" in tag.stdout
    assert "remote: vivary: push refused: refs/tags/v1 would gain the errors above" in tag.stdout
    assert "(or point the tag at a commit without them)" in tag.stdout
    repo.git("tag", "-f", "-a", "-m", "release", "v1", "main")  # the tag on a commit main has: nothing new
    moved = push(repo, "v1")
    assert moved.returncode == 0, moved.stdout
    assert "vivary: refs/tags/v1: the commit tag " in moved.stdout and "main already has: nothing new" in moved.stdout
    gone = push(repo, "--delete", "ok")
    assert gone.returncode == 0 and "vivary: refs/heads/ok: deleted: nothing to check" in gone.stdout
    _nothing_written(bare, {"refs/heads/main", "refs/tags/v1"})


def test_a_force_push_is_compared_with_what_the_branch_had(server: tuple[Path, Repo]) -> None:
    bare, repo = server
    repo.git("commit", "-q", "--amend", "-m", "start, reworded")
    repo.commit("break", files={"modules/b.md": "---\ndepends: [gone]\n---\n# B\n"})
    refused = push(repo, "--force", "main")
    assert refused.returncode == 1 and "ref 'gone' matches no document id" in refused.stdout, refused.stdout
    repo.git("reset", "-q", "--hard", "HEAD^")
    forced = push(repo, "--force", "main")
    assert forced.returncode == 0 and "(forced update)" in forced.stdout, forced.stdout
    _nothing_written(bare, {"refs/heads/main"})


def test_a_check_inside_the_quarantine_writes_nothing(server: tuple[Path, Repo]) -> None:
    """A hook of one's own, `check --rev NEW`, inside the push's quarantine: it used to write the verdict note
    (libgit2 writes refs where Git forbids them) on an object Git then threw away with the refused push, leaving
    `refs/notes/vivary` pointing at nothing, and its caches beside the bare repository."""
    bare, repo = server
    _hook(bare, f"while read old new ref; do {_vivary()} check --rev \"$new\" --new-since \"$old\" || exit 1; done")
    repo.git("rm", "-q", "modules/a.md")
    repo.commit("drop a")
    refused = push(repo, "main")
    assert refused.returncode == 1 and "error W220" in refused.stdout, refused.stdout
    _nothing_written(bare, {"refs/heads/main"})


def test_a_branch_that_cannot_be_checked_is_refused_in_words(server: tuple[Path, Repo]) -> None:
    bare, repo = server
    repo.commit("bad config", files={"tropo.toml": "version = oops\n"})
    refused = push(repo, "main")
    assert refused.returncode == 1, refused.stdout
    assert "remote: git vivary check: tropo.toml: invalid TOML" in refused.stdout
    assert "remote: vivary: push refused: refs/heads/main could not be checked" in refused.stdout
    assert "Traceback" not in refused.stdout
    _nothing_written(bare, {"refs/heads/main"})


@pytest.mark.parametrize(("line", "said"), [
    (b"abc def refs/heads/x\n", "OLD abc: not an object id"),
    (f"{ZERO} {'1' * 40} refs/heads/a..b\n".encode(), "refs/heads/a..b: not a ref name Git accepts"),
    (f"{ZERO} {'1' * 40} --output=x\n".encode(), "--output=x: not a ref name Git accepts"),
    (f"{ZERO} {'1' * 40} refs/heads/\x1b[31mred\n".encode(), "refs/heads/\\x1b[31mred: not a ref name"),
    (f"{ZERO} {'1' * 40}\n".encode(), "not `OLD NEW REFNAME`"),
    (f"{ZERO} {'1' * 64} refs/heads/x\n".encode(), "not a pair of ids"),
    (f"{ZERO} {ZERO} refs/heads/x\n".encode(), "not a pair of ids"),
    (b"\xff\n", "not UTF-8"),
    (f"{ZERO} {'1' * 40} refs/heads/{'x' * 100_000}".encode(), "bytes, longer than any line Git writes"),
])
def test_every_line_is_checked_before_anything_is(server: tuple[Path, Repo], line: bytes, said: str) -> None:
    bare, _ = server
    good = f"{ZERO} {'2' * 40} refs/heads/fine\n".encode()
    proc = subprocess.run([sys.executable, "-m", "vivary_git.main", "hooks", "run", "pre-receive"], cwd=bare,
                          input=good + line, capture_output=True, env=dict(os.environ, PYTHONPATH=str(ROOT)),
                          check=False)
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert proc.stdout == b""  # the valid line before it was not acted on either
    assert said in err and "stdin line 2" in err and "Traceback" not in err, err
    assert len(err.splitlines()) == 1 and "\x1b" not in err


def test_a_repository_this_libgit2_cannot_read_refuses_the_push_in_words(tmp_path: Path) -> None:
    """A SHA-256 repository: Git runs the hook with GIT_DIR set, where opening it used to be a traceback."""
    bare = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", "--object-format=sha256", "-b", "main", str(bare))
    _hook(bare, f"exec {_vivary()} hooks run pre-receive")
    clone = Repo(tmp_path / "clone")
    git(tmp_path, "init", "-q", "--object-format=sha256", "-b", "main", str(clone.path))
    clone.git("remote", "add", "origin", str(bare))
    clone.commit("start", files={"a.md": "# A\n"})
    pushed = push(clone, "main")
    assert "Traceback" not in pushed.stdout, pushed.stdout
    if pushed.returncode != 0:  # refused, saying why, unless this libgit2 reads SHA-256
        assert "remote: git vivary hooks: cannot open the Git repository" in pushed.stdout, pushed.stdout
        assert "unknown object format 'sha256'" in pushed.stdout


def test_every_name_a_commit_enters_under_is_judged_but_data_refs_and_trees(server: tuple[Path, Repo]) -> None:
    """Lightweight tags, a tag moved by force, a pull-request-like ref: each is checked. Notes and what `sync`
    pushes (`refs/vivary/*`) are data, accepted unread (a broken Markdown file in them is nobody's document),
    and so is a tag naming a tree."""
    bare, repo = server
    repo.git("checkout", "-q", "--detach")
    repo.commit("d", files={"modules/d.md": "---\ndepends: [nowhere]\n---\n# D\n"})
    repo.git("tag", "light")
    pulled = push(repo, "HEAD:refs/pull/7/head", "light")
    assert pulled.returncode == 1, pulled.stdout
    assert "remote: vivary: refs/pull/7/head: checking " in pulled.stdout and "a new ref: compared" in pulled.stdout
    assert "remote: vivary: refs/tags/light: " in pulled.stdout and "as checked for refs/pull/7/head above" \
        in pulled.stdout
    assert pulled.stdout.count("error W220") == 1  # one check for the two names of one commit
    assert "refs/pull/7/head, refs/tags/light would gain the errors above" in pulled.stdout
    repo.git("notes", "add", "-m", "a note")
    repo.git("update-ref", "refs/vivary/memory/x", "HEAD")
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    repo.git("tag", "-a", "-m", "a tree", "snapshot", tree)
    data = push(repo, "refs/notes/commits", "refs/vivary/memory/x", "snapshot")
    assert data.returncode == 0, data.stdout
    assert "vivary: refs/notes/commits: notes or vivary's own data, not documents: accepted unread" in data.stdout
    assert "vivary: refs/vivary/memory/x: notes or vivary's own data" in data.stdout
    assert "vivary: refs/tags/snapshot: names a tree, not a commit" in data.stdout
    assert "error W220" not in data.stdout
    repo.git("tag", "release", "main")
    assert push(repo, "release").returncode == 0
    repo.git("tag", "-f", "release", "HEAD")  # a tag moved by force is compared with the commit it named
    moved = push(repo, "--force", "release")
    assert moved.returncode == 1 and "modules/d.md:2: error W220" in moved.stdout, moved.stdout
    assert "refs/tags/release: checking" in moved.stdout and "a new tag" not in moved.stdout
    refs = set(git(bare, "for-each-ref", "--format=%(refname)").split())
    assert refs == {"refs/heads/main", "refs/notes/commits", "refs/vivary/memory/x", "refs/tags/snapshot",
                    "refs/tags/release"}, refs
    assert git(bare, "rev-parse", "release").strip() == git(bare, "rev-parse", "main").strip()


def test_pushes_of_many_refs_and_push_options(server: tuple[Path, Repo]) -> None:
    """`--all` and `--atomic` are judged ref by ref (atomic: one refused ref keeps every ref where it was),
    `--mirror` checks each distinct commit once, and a push option asks nothing of the gate."""
    bare, repo = server
    git(bare, "config", "receive.advertisePushOptions", "true")
    repo.git("checkout", "-q", "-b", "good")
    repo.commit("c", files={"modules/c.md": "---\ndepends: [a]\n---\n# C\n"})
    repo.git("checkout", "-q", "-b", "bad")
    repo.commit("d", files={"modules/d.md": "---\ndepends: [nowhere]\n---\n# D\n"})
    every = push(repo, "--all")
    assert every.returncode == 1 and "[remote rejected] bad -> bad (pre-receive hook declined)" in every.stdout
    assert "[remote rejected] good -> good" in every.stdout, every.stdout  # a failing hook refuses the whole push
    assert "remote: vivary: refs/heads/good passed; Git takes or refuses a push whole: push it without " \
        "refs/heads/bad" in every.stdout
    atomic = push(repo, "--atomic", "good", "bad")
    assert atomic.returncode == 1 and "refs/heads/bad would gain" in atomic.stdout, atomic.stdout
    assert set(git(bare, "for-each-ref", "--format=%(refname)").split()) == {"refs/heads/main"}
    option = push(repo, "-o", "vivary.skip", "-o", "ci.skip", "bad")
    assert option.returncode == 1 and "refs/heads/bad would gain" in option.stdout, option.stdout
    repo.git("checkout", "-q", "good")
    repo.git("branch", "-D", "bad")
    repo.git("update-ref", "refs/remotes/origin/good", "good")
    mirror = push(repo, "--mirror")
    assert mirror.returncode == 0, mirror.stdout
    assert "vivary: refs/remotes/origin/good: " in mirror.stdout and "as checked for refs/heads/good above" \
        in mirror.stdout
    assert git(bare, "rev-parse", "refs/heads/good").strip() == repo.git("rev-parse", "good").strip()
