"""Git plumbing (vivary_git/git.py and every `git` we run): user strings never become Git options, and
the repository is the one the environment names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git, run_git_vivary

# What a stranger can name a branch or tag, or pass as a revision, remote or path, hoping Git reads it
# as an option: each would write a file named `pwned` (or run a command that does).
HOSTILE_REVS = ["--output=pwned", "-opwned", "--output=pwned.txt"]


def two_commits(repo: Repo) -> None:
    repo.commit("base", files={"tropo.toml": TROPO, "modules/a.md": "---\nstatus: ok\n---\n# A\n"})
    repo.commit("head", files={"modules/b.md": "---\nstatus: ok\ndepends: [a]\n---\n# B\n"})


def no_pwned(*places: Path) -> None:
    for place in places:
        assert not list(place.rglob("pwned*")), list(place.rglob("pwned*"))


@pytest.mark.parametrize("name", HOSTILE_REVS)
def test_a_base_named_like_an_option_is_a_revision(repo: Repo, cli: Any, name: str) -> None:
    two_commits(repo)
    repo.git("update-ref", f"refs/heads/{name}", "HEAD~1")
    r = cli("ci", f"--base={name}", "--head", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    assert "added\tb\tmodule\tmodules/b.md" in r.out  # the ref was read as the base it names
    j = cli("ci", f"--base={name}", "--format", "json", cwd=repo.path).json()
    assert j["changed_files"] == ["modules/b.md"]
    b = cli("blast", f"--base={name}", "--head", "HEAD", cwd=repo.path)
    assert b.code == 0 and "added\tb\tmodule\tmodules/b.md" in b.out, b.err
    no_pwned(repo.path.parent)


@pytest.mark.parametrize("name", HOSTILE_REVS)
def test_doctor_reads_a_rev_named_like_an_option(repo: Repo, cli: Any, name: str) -> None:
    two_commits(repo)
    repo.git("update-ref", f"refs/tags/{name}", "HEAD~1")
    r = cli("doctor", "--json", f"--rev={name}", cwd=repo.path)
    assert r.json()["repo"]["head"] == repo.git("rev-parse", "HEAD~1").strip()
    assert r.json()["graph"]["nodes"] == 1
    no_pwned(repo.path.parent)


@pytest.mark.parametrize("remote", ["--upload-pack=touch pwned; :", "-opwned", "--receive-pack=touch pwned"])
@pytest.mark.parametrize("action", ["fetch", "push", "setup"])
def test_a_remote_named_like_an_option_is_never_an_option(repo: Repo, cli: Any, tmp_path: Path,
                                                          remote: str, action: str) -> None:
    two_commits(repo)
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0  # records a cache to push
    r = cli("sync", "-C", str(repo.path), action, "--", remote, cwd=tmp_path)
    assert r.code == 2, r.out + r.err
    no_pwned(tmp_path, repo.path)


def test_paths_starting_with_a_dash_are_paths(repo: Repo, cli: Any) -> None:
    repo.commit("notes", files={"-n.md": "# N\n", "--output=pwned.md": "# O\n", ".gitignore": "-secret.md\n"})
    r = cli("privacy", "explain", "--json", "--", "-secret.md", "--output=pwned.md", cwd=repo.path)
    assert r.code == 0, r.err
    assert [(d["path"], d["private"]) for d in r.json()] == [("-secret.md", True), ("--output=pwned.md", False)]
    assert cli("check", cwd=repo.path).code == 0
    assert git(repo.path, "status", "--porcelain") == ""
    no_pwned(repo.path.parent)


# --- GIT_DIR: the repository is the one the environment names, as for Git itself -------------------------

CANARY = "CANARY-3f9c1e: a private note of this work tree\n"


def objects(git_dir: Path) -> set[str]:
    return {str(p.relative_to(git_dir / "objects")) for p in (git_dir / "objects").rglob("*") if p.is_file()}


@pytest.fixture
def other(tmp_path: Path) -> Repo:
    path = tmp_path / "other"
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    r = Repo(path)
    r.commit("other", files={"theirs.md": "---\ntitle: Theirs\n---\n[[nowhere]]\n"})
    return r


def test_git_dir_of_another_repository_never_receives_this_work_trees_files(repo: Repo, other: Repo) -> None:
    repo.commit("mine", files={"mine.md": "# Mine\n", "memory/canary.md": CANARY})
    repo.write({"memory/canary.md": CANARY + "edited\n", "new.md": "# New\n"})
    before = objects(other.path / ".git")
    env = {"GIT_DIR": str(other.path / ".git")}
    r = run_git_vivary(["check"], repo.path, env=env)
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr
    assert f"GIT_DIR names the repository {other.path / '.git'}" in r.stderr
    assert str(repo.path / ".git") in r.stderr  # and says whose files these are
    assert objects(other.path / ".git") == before
    canary = git(repo.path, "hash-object", "memory/canary.md").strip()
    assert git(other.path, "cat-file", "-e", canary, check=False) == ""
    assert subprocess.run(["git", "cat-file", "-e", canary], cwd=other.path).returncode != 0


def test_git_dir_names_the_repository_whose_commits_are_read(repo: Repo, other: Repo) -> None:
    repo.commit("mine", files={"mine.md": "# Mine\n"})
    env = {"GIT_DIR": str(other.path / ".git")}
    r = run_git_vivary(["check", "--rev", "HEAD"], repo.path, env=env)
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith("theirs.md:4: error W221"), r.stdout  # the other repository's HEAD, as Git reads it
    with_tree = run_git_vivary(["check"], repo.path, env={**env, "GIT_WORK_TREE": str(other.path)})
    assert with_tree.returncode == 1 and with_tree.stdout.startswith("theirs.md:4: error W221"), with_tree.stderr


def test_git_dir_that_is_no_repository_is_an_error(repo: Repo, tmp_path: Path) -> None:
    repo.commit("mine", files={"mine.md": "# Mine\n"})
    r = run_git_vivary(["check"], repo.path, env={"GIT_DIR": str(tmp_path / "nowhere")})
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"GIT_DIR={tmp_path / 'nowhere'} does not name a Git repository" in r.stderr


@pytest.mark.parametrize("how", ["--work-tree", "core.worktree"])
def test_a_work_tree_set_elsewhere_is_read_as_git_reads_it(repo: Repo, tmp_path: Path, how: str) -> None:
    """`git --work-tree=DIR vivary …` (Git sets GIT_WORK_TREE alone) and a repository whose core.worktree is
    another folder: the notes read are that folder's, as `git status` sees them, and its ignored files stay
    private."""
    repo.commit("mine", files={"mine.md": "# Mine\n", ".gitignore": "secret.md\n"})
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / ".gitignore").write_text("secret.md\n")
    (tree / "there.md").write_text("---\ntitle: There\n---\n[[nowhere]]\n")
    (tree / "secret.md").write_text(CANARY)
    if how == "core.worktree":
        git(repo.path, "config", "core.worktree", str(tree))
        argv, env = ["git", "vivary"], {}
    else:
        argv, env = ["git", f"--work-tree={tree}", "vivary"], {}
    bindir = str(Path(sys.executable).parent)
    full = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"], **env)
    r = subprocess.run([*argv, "check", "--json"], cwd=repo.path, capture_output=True, text=True, env=full)
    assert r.returncode == 1, r.stderr
    found = json.loads(r.stdout)
    assert [f["path"] for f in found["findings"]] == ["there.md"], r.stdout
    assert "CANARY" not in r.stdout + r.stderr
    # Privacy tells Git the repository (the work tree's top names none here): that work tree's rules decide.
    shown = subprocess.run([*argv, "privacy", "explain", "--json", "--", str(tree / "secret.md")], cwd=repo.path,
                           capture_output=True, text=True, env=full)
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout) == [{"path": "secret.md", "private": True, "reason": ".gitignore:1:secret.md"}]
    assert "CANARY" not in shown.stdout + shown.stderr


def test_a_git_file_without_core_worktree_names_the_work_tree(tmp_path: Path) -> None:
    """`git init --separate-git-dir`: the work tree holds a `.git` file and the repository's config names no
    work tree. The work tree is the folder of that file, as for Git, not the git dir's parent."""
    (tmp_path / "modules").mkdir()
    tree = tmp_path / "notes"
    git(tmp_path, "init", "-q", f"--separate-git-dir={tmp_path / 'modules' / 'notes'}", str(tree))
    (tree / "sub").mkdir()
    (tree / "sub" / "a.md").write_text("# A\n\n[[missing]]\n")
    r = run_git_vivary(["check", "--json"], tree / "sub")
    assert r.returncode == 1, r.stderr
    assert [f["path"] for f in json.loads(r.stdout)["findings"]] == ["sub/a.md"], r.stdout


def test_a_repository_whose_work_tree_is_gone_is_an_error_not_a_plain_folder(repo: Repo, tmp_path: Path) -> None:
    """core.worktree naming a folder that no longer exists: the repository is found but cannot be opened. Said
    as such (exit 2, naming the setting and its fix), never a traceback, and never read as a plain folder."""
    repo.commit("mine", files={"mine.md": "# Mine\n"})
    git(repo.path, "config", "core.worktree", str(tmp_path / "gone"))
    for args in (["check"], ["recall", "anything"], ["graph", "--json"]):
        r = run_git_vivary(args, repo.path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr and "reading files directly" not in r.stderr, r.stderr
        assert "core.worktree names" in r.stderr and "git config --unset core.worktree" in r.stderr, r.stderr


def test_hook_in_a_linked_worktree_sees_its_own_index(repo: Repo, tmp_path: Path) -> None:
    # Git sets GIT_DIR (the worktree's own git dir) and GIT_INDEX_FILE for the hooks of a linked worktree.
    repo.commit("mine", files={"mine.md": "# Mine\n"})
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", str(wt))
    (wt / "staged.md").write_text("[[missing]]\n")
    git(wt, "add", "staged.md")
    gitdir = git(wt, "rev-parse", "--absolute-git-dir").strip()
    env = {"GIT_DIR": gitdir, "GIT_INDEX_FILE": f"{gitdir}/index"}
    r = run_git_vivary(["check", "--staged"], wt, env=env)
    assert r.returncode == 1 and r.stdout.startswith("staged.md:1: error W221"), r.stdout + r.stderr
    r = run_git_vivary(["check"], wt / "sub" if (wt / "sub").is_dir() else wt, env=env)
    assert r.returncode == 1, r.stderr


def test_a_bounded_blob_read_refuses_a_bigger_blob_by_its_header(repo: Repo) -> None:
    """Loose and packed: the size comes from the object header, and a blob at the limit is read whole."""
    from vivary_git.git import BlobTooLarge
    from vivary_git.git import Repo as GitRepo

    repo.commit(files={"a.md": "x" * 100})
    oid = repo.git("rev-parse", "HEAD:a.md").strip()
    for packed in (False, True):
        if packed:
            repo.git("gc", "-q")
        r = GitRepo(repo.path)
        assert r.read_blob(oid, 100) == b"x" * 100 == r.read_blob(oid)
        with pytest.raises(BlobTooLarge) as err:
            r.read_blob(oid, 99)
        assert err.value.size == 100
