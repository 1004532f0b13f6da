"""Git plumbing (vivary_git/git.py and every `git` we run): user strings never become Git options, and
the repository is the one the environment names."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git

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
