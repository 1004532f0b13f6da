"""A repository someone else committed to never runs commands, chooses the tree a gate reads, or leads an
output file outside the checkout.

Each test is written as the attacker's steps. A commit lays out a folder as a Git directory (`docs/HEAD`,
`docs/config`, `docs/objects/`, `docs/refs/`) whose config sets `core.worktree = ..` and names commands Git
would run (`core.fsmonitor`, a clean filter the committed `.gitattributes` applies), and whose own HEAD is
the base commit. The victim clones it fresh and runs `--root docs` (by hand, as the pre-commit hook
`args: [--root, docs]`, as the Action's `root:` input, or as an MCP server). The commands would create a
canary file; it must never appear, and the gate must read the commits the runner checked out. Plain
`git` run at the top of the clone never opens that folder, and neither does vivary.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, run_git_vivary, write

TROPO = "version = 1\n\n[base]\nallow_untyped = true\n"
GOOD = "# A\n\nSee [[b]].\n"
BROKEN = "# C\n\nSee [[nowhere]].\n"


@dataclass
class Hostile:
    clone: Path  # the victim's fresh clone of the attacker's repository
    canary: Path  # what the planted config's commands would create
    base: str  # the commit the pull request starts from (the planted folder's own HEAD names it)
    outside: Path  # a folder next to the checkout


def _plant(upstream: Path, canary: Path, base: str) -> None:
    """The attacker's commit: a folder laid out as a Git directory whose HEAD is `base`, holding `base`'s
    objects, and whose config runs commands; `.gitattributes` (at the top and in the folder) asks for the
    filter on every note."""
    docs = upstream / "docs"
    command = f"touch '{canary}'"
    write(docs, {
        "HEAD": "ref: refs/heads/main\n",
        "config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ..\n"
                  f'\tfsmonitor = "{command}; false"\n[filter "x"]\n\tclean = "{command}; cat"\n\trequired = true\n',
        "refs/heads/main": base + "\n",
        "refs/tags/.keep": "",
        ".gitattributes": "*.md filter=x\n",
    })
    shutil.copytree(upstream / ".git" / "objects", docs / "objects", dirs_exist_ok=True)
    write(upstream, {".gitattributes": "*.md filter=x\n"})


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    canary = tmp_path / "canary"
    git(upstream, "init", "-q", "-b", "main")
    write(upstream, {"docs/tropo.toml": TROPO, "docs/a.md": GOOD, "docs/b.md": "# B\n"})
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "base")
    base = git(upstream, "rev-parse", "HEAD").strip()
    _plant(upstream, canary, base)
    write(upstream, {"docs/c.md": BROKEN})  # the change under review breaks a link
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "plant a Git directory and break a link")
    assert git(upstream, "ls-files", "docs/HEAD", "docs/config").split() == ["docs/HEAD", "docs/config"]
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    assert not canary.exists()  # Git itself, cloning and checking out, ran nothing
    outside = tmp_path / "outside"
    outside.mkdir()
    return Hostile(clone, canary, base, outside)


def test_check_root_never_opens_a_planted_git_dir(hostile: Hostile, cli: Any) -> None:
    """`check --root docs` reads the clone's working tree (and its index, for --staged, as the pre-commit
    hook with `args: [--root, docs]` does), finds the broken link, and runs nothing the folder names."""
    for args in (["check", "--root", "docs"], ["check", "--staged", "--root", "docs"],
                 ["check", "--rev", "HEAD", "--root", "docs"], ["graph", "--json", "--root", "docs"]):
        r = run_git_vivary(args, hostile.clone)
        assert not hostile.canary.exists(), (args, r.stdout, r.stderr)
        if args[0] == "check":
            assert r.returncode == 1 and "c.md:3: error W221" in r.stdout, (args, r.stdout, r.stderr)
        else:
            ids = sorted(n["id"] for n in json.loads(r.stdout)["nodes"])
            assert ids == ["a", "b", "c"], r.stdout


def test_an_untracked_folder_laid_out_as_a_git_dir_is_only_a_folder(hostile: Hostile, cli: Any) -> None:
    """The same folder unpacked into the clone (from an archive, say) and not committed: nothing tracks
    it, yet `--root` names a folder of the work tree, so it is read as one and never opened."""
    shutil.copytree(hostile.clone / "docs", hostile.clone / "vendor")
    assert git(hostile.clone, "status", "--porcelain", "--", "vendor").strip() == "?? vendor/"
    for args in (["check", "--root", "vendor"], ["check", "--staged", "--root", "vendor"]):
        r = cli(*args, cwd=hostile.clone)
        assert not hostile.canary.exists(), (args, r.out, r.err)
        if "--staged" in args:  # the index holds no such folder
            assert r.code == 2 and "no folder 'vendor' in staged" in r.err, r.err
        else:
            assert r.code == 1 and "c.md:3: error W221" in r.out, r.out + r.err


def test_running_inside_the_planted_folder_reads_the_clone(hostile: Hostile, cli: Any) -> None:
    """From inside the folder (`cd docs`, `-C docs`, which `bootstrap-host --root docs` writes into a host's
    server entry), Git's discovery would take the folder for a repository; the clone tracks its files, so
    the folder is read as what it is, a folder of the clone's work tree."""
    from vivary_git import git as vgit

    repo = vgit.try_open(hostile.clone / "docs")
    assert repo is not None and repo.workdir == hostile.clone.resolve()
    assert repo.git_dir == (hostile.clone / ".git").resolve()
    r = cli("check", cwd=hostile.clone / "docs")
    assert r.code == 1 and "c.md:3: error W221" in r.out, r.out + r.err
    r = cli("check", "-C", "docs", cwd=hostile.clone)
    assert r.code == 1 and "c.md:3: error W221" in r.out, r.out + r.err
    assert not hostile.canary.exists()


def _plant_more(hostile: Hostile, config: str, files: dict[str, str] | None = None) -> None:
    """More of the attacker's planted folder, as a commit would bring it (Git reads the checked-out file)."""
    cfg = hostile.clone / "docs" / "config"
    cfg.write_text(cfg.read_text() + config)
    write(hostile.clone / "docs", files or {})


def test_doctor_init_hooks_and_sync_never_open_a_planted_git_dir(hostile: Hostile) -> None:
    """The commands that run `git` in the folder they are given, before or beside the graph, take the repository
    `git.Repo` finds too: from inside the planted folder, or naming it, none runs its `core.fsmonitor`, its
    remote's `uploadpack`, its committed hooks, writes where its `core.hooksPath` points, or commits into it."""
    outside_hooks = hostile.outside / "hooks"
    _plant_more(hostile, f'[core]\n\thooksPath = {outside_hooks}\n[remote "origin"]\n\turl = ./\n'
                         f"\tuploadpack = \"touch '{hostile.canary}'; git-upload-pack\"\n",
                {"hooks/pre-commit": f"#!/bin/sh\ntouch '{hostile.canary}'\n"})
    (hostile.clone / "docs" / "hooks" / "pre-commit").chmod(0o755)
    docs = hostile.clone / "docs"
    planted_head = (docs / "refs" / "heads" / "main").read_text()

    for args, cwd in ((["doctor"], docs), (["doctor", "--root", "docs"], hostile.clone)):
        r = run_git_vivary(args, cwd)
        assert "Traceback" not in r.stderr and not hostile.canary.exists(), (args, r.stdout, r.stderr)

    r = run_git_vivary(["sync", "fetch"], docs)
    assert r.returncode == 0 and "no vivary cache" in r.stdout + r.stderr, r.stdout + r.stderr
    assert not hostile.canary.exists()

    r = run_git_vivary(["hooks", "install"], docs)
    assert r.returncode == 0, r.stdout + r.stderr
    assert not outside_hooks.exists() and (hostile.clone / ".git" / "hooks" / "pre-commit").is_file()
    assert not hostile.canary.exists()

    git(hostile.clone, "config", "user.name", "Victim")
    git(hostile.clone, "config", "user.email", "victim@example.com")
    r = run_git_vivary(["init", "--yes", "--no-wizard", "docs"], hostile.clone)
    assert "Traceback" not in r.stderr and not hostile.canary.exists(), r.stdout + r.stderr
    assert (docs / "refs" / "heads" / "main").read_text() == planted_head  # nothing committed into it
    assert not (docs / "index").exists() and not (docs / "COMMIT_EDITMSG").exists()


def test_a_bare_repository_nobody_committed_still_opens(tmp_path: Path) -> None:
    """Only a folder the repository around it tracks is read as that repository's folder: a bare repository
    kept (untracked) in a work tree, a home folder under dotfiles say, is still the repository it is."""
    from vivary_git import git as vgit

    outer = tmp_path / "home"
    outer.mkdir()
    git(outer, "init", "-q", "-b", "main")
    git(outer, "init", "-q", "--bare", "-b", "main", "notes.git")
    repo = vgit.try_open(outer / "notes.git")
    assert repo is not None and repo.bare and repo.git_dir == (outer / "notes.git").resolve()


def test_ci_root_reads_the_commits_the_runner_checked_out(hostile: Hostile) -> None:
    """The planted folder's HEAD is the base commit: read as a repository, base..HEAD would be no change
    and the broken link would pass. The gate reads the clone's commits, and fails."""
    r = run_git_vivary(["ci", "--base", hostile.base, "--head", "HEAD", "--root", "docs"], hostile.clone)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "c.md:3: error W221" in r.stdout and "1 changed" in r.stdout, r.stdout
    r = run_git_vivary(["ci", "--base", hostile.base, "--root", "docs", "--format", "github"], hostile.clone)
    assert r.returncode == 1 and "::error file=docs/c.md,line=3" in r.stdout, r.stdout + r.stderr
    assert not hostile.canary.exists()


def test_mcp_server_never_opens_a_planted_git_dir(hostile: Hostile) -> None:
    """The MCP server (`mcp --root docs`, and `mcp -C docs` as a host entry names it) reads the clone."""
    from vivary_git.mcp.service import MemoryService

    for service in (MemoryService(hostile.clone, root="docs"), MemoryService(hostile.clone / "docs")):
        try:
            status = service.status()
            assert status.workspace["root"] == str((hostile.clone / "docs").resolve()), status.workspace
            hits = service.search("nowhere")
            assert [h.path for h in hits.results] == ["c.md"], hits
        finally:
            service.close()
    assert not hostile.canary.exists()


def test_root_names_a_folder_of_the_work_tree_and_nothing_else(tmp_path: Path, cli: Any) -> None:
    """Outside the work tree, a nested repository (which Git does not read into from the top), a folder
    of a repository the current folder is not in: each is a usage error that says where to run instead. A
    plain folder outside any repository still reads as one."""
    top = tmp_path / "top"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    write(top, {"a.md": "# A\n", "nested/s.md": "# S\n"})
    git(top / "nested", "init", "-q", "-b", "main")
    git(top / "nested", "add", "-A")
    git(top / "nested", "commit", "-qm", "nested")
    git(top, "add", "a.md")
    git(top, "commit", "-qm", "top")
    r = cli("check", "--root", "nested", cwd=top)
    assert r.code == 2 and "another repository" in r.err and "-C nested" in r.err, r.err
    r = cli("check", "--root", "..", cwd=top)
    assert r.code == 2 and "is not inside" in r.err, r.err
    r = cli("check", "--root", str(top), cwd=tmp_path)
    assert r.code == 2 and f"inside the Git repository {top.resolve()}" in r.err, r.err
    r = cli("check", "-C", "nested", cwd=top)  # inside it, it is the repository Git finds
    assert r.code == 0, r.err
    write(tmp_path, {"plain/notes/p.md": "# P\n"})
    r = cli("check", "--root", "notes", cwd=tmp_path / "plain")
    assert r.code == 0 and "1 document(s)" in r.out and "folder" in r.out, r.out + r.err
    for where in (top, tmp_path / "plain"):  # in a repository and in a plain folder: a file is not a folder
        r = cli("check", "--root", "notes/p.md" if where != top else "a.md", cwd=where)
        assert r.code == 2 and "is a file, not a folder" in r.err, r.err
        r = cli("check", "--root", "gone", cwd=where)
        assert r.code == 2 and "--root gone: no such directory" in r.err, r.err


def test_onboard_keeps_the_profile_out_of_the_clone_not_of_a_planted_folder(tmp_path: Path, cli: Any) -> None:
    """`onboard --root profile` writes the private USER.md there and makes the clone's Git ignore it. A
    planted `profile/` (its own `config` with `core.worktree = .`, an `info/exclude` naming USER.md) would
    have answered "already ignored" for the clone, and the profile would reach the next `git add -A`."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git(upstream, "init", "-q", "-b", "main")
    write(upstream / "profile", {
        "HEAD": "ref: refs/heads/main\n", "objects/info/.keep": "", "refs/heads/.keep": "", "info/exclude": "USER.md\n",
        "config": "[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = .\n", "n.md": "# N\n",
    })
    git(upstream, "add", "-A")
    git(upstream, "commit", "-qm", "plant")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(upstream), str(clone))
    r = cli("onboard", "--root", "profile", "--answer", "name=Ada", cwd=clone)
    assert r.code == 0 and (clone / "profile" / "USER.md").is_file(), r.out + r.err
    assert git(clone, "status", "--porcelain", "--untracked-files=all") == ""
    assert git(clone, "check-ignore", "profile/USER.md").strip() == "profile/USER.md"


# --- output paths ------------------------------------------------------------------------------------------

OUTPUTS = ("--sarif", "--codequality", "--output", "--summary", "--github-output")


def _link_reports(hostile: Hostile) -> None:
    """The pull request commits `reports -> ../outside`, and `stale.sarif -> ../outside/stale.sarif`."""
    (hostile.outside / "stale.sarif").write_text("precious\n")
    os.symlink("../outside", hostile.clone / "reports")
    os.symlink("../outside/stale.sarif", hostile.clone / "stale.sarif")
    git(hostile.clone, "add", "reports", "stale.sarif")
    git(hostile.clone, "commit", "-qm", "reports")


def _outside_untouched(hostile: Hostile) -> None:
    assert sorted(p.name for p in hostile.outside.iterdir()) == ["stale.sarif"]
    assert (hostile.outside / "stale.sarif").read_text() == "precious\n"


def test_ci_never_writes_through_a_committed_symlink(hostile: Hostile) -> None:
    _link_reports(hostile)
    for option in OUTPUTS:
        r = run_git_vivary(["ci", "--base", hostile.base, "--root", "docs", f"{option}=reports/vivary.sarif"],
                           hostile.clone)
        assert r.returncode == 3, (option, r.stdout, r.stderr)
        said = r.stderr.strip()
        assert "\n" not in said and "Traceback" not in said
        assert said.startswith(f"git vivary ci: {option} reports/vivary.sarif: ") and "reports is a symbolic link" \
            in said, said
        _outside_untouched(hostile)
    for option in ("--output", "--summary", "--github-output"):  # a link in the file's own place
        r = run_git_vivary(["ci", "--root", "docs", f"{option}=stale.sarif"], hostile.clone)
        assert r.returncode == 3 and "stale.sarif is a symbolic link" in r.stderr, (option, r.stderr)
        _outside_untouched(hostile)
    # --sarif and --codequality remove what is in their place first (a stale file must never pass for this run's):
    # the link itself, never what it names; then they write a file of their own.
    r = run_git_vivary(["ci", "--root", "docs", "--sarif=stale.sarif"], hostile.clone)
    assert r.returncode == 1, r.stderr
    assert not (hostile.clone / "stale.sarif").is_symlink()
    assert json.loads((hostile.clone / "stale.sarif").read_text())["version"] == "2.1.0"
    _outside_untouched(hostile)
    git(hostile.clone, "checkout", "-q", "--", "stale.sarif")  # the committed link again
    assert (hostile.clone / "stale.sarif").is_symlink()
    r = run_git_vivary(["ci", "--root", "docs", "--codequality=stale.sarif"], hostile.clone)
    assert r.returncode == 1, r.stderr
    assert not (hostile.clone / "stale.sarif").is_symlink()
    assert isinstance(json.loads((hostile.clone / "stale.sarif").read_text()), list)
    _outside_untouched(hostile)


def test_outputs_outside_a_work_tree_follow_links(tmp_path: Path, repo: Repo) -> None:
    """A path of the user's own outside any work tree (`/tmp -> /private/tmp`) is written through its link."""
    repo.commit(files={"tropo.toml": TROPO, "c.md": BROKEN})
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")
    r = run_git_vivary(["ci", f"--output={tmp_path / 'alias' / 'out.txt'}"], repo.path)
    assert r.returncode == 1 and "W221" in (real / "out.txt").read_text(), r.stderr


def test_an_output_inside_the_git_folder_is_refused(repo: Repo) -> None:
    """`ci --output .git/HEAD` replaced HEAD, and `--sarif` removed it first: no repository was left. Only Git
    writes its folder (`.git/hooks/...` would be a hook)."""
    repo.commit(files={"tropo.toml": TROPO, "c.md": BROKEN})
    head = (repo.path / ".git" / "HEAD").read_bytes()
    for option in OUTPUTS:
        for name in (".git/HEAD", ".git/hooks/post-checkout"):
            r = run_git_vivary(["ci", f"{option}={name}"], repo.path)
            assert r.returncode == 2, (option, name, r.stderr)
            assert "is inside the Git folder of" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert (repo.path / ".git" / "HEAD").read_bytes() == head
    assert not (repo.path / ".git" / "hooks" / "post-checkout").exists()
    r = run_git_vivary(["ci", "--output=.github-report.txt"], repo.path)  # a name merely like it is fine
    assert r.returncode == 1 and (repo.path / ".github-report.txt").exists(), r.stderr


def test_the_action_never_writes_or_removes_through_a_committed_symlink(hostile: Hostile, tmp_path: Path) -> None:
    """The Action's `sarif:` input into a committed link: the step fails (exit 3), names no SARIF file for
    upload, and neither writes nor removes anything outside the checkout (it used to `rm -f` the path)."""
    from test_gates_action import pr_event, run_action, tool_inputs

    _link_reports(hostile)
    (hostile.outside / "vivary.sarif").write_text("precious\n")
    head = git(hostile.clone, "rev-parse", "HEAD").strip()
    runner = tmp_path / "runner"
    runner.mkdir()
    r = run_action(hostile.clone, runner, {**tool_inputs(), "root": "docs", "sarif": "reports/vivary.sarif"},
                   pr_event(hostile.base, head))
    assert r.code == 3, r.log
    assert "reports is a symbolic link" in r.log and r.outputs["sarif"] == ""
    assert (hostile.outside / "vivary.sarif").read_text() == "precious\n"
    (hostile.outside / "vivary.sarif").unlink()
    _outside_untouched(hostile)
    assert not hostile.canary.exists()
