"""Finding the repository, and reading its settings, as Git does (vivary_git/git.py `discover`, `Repo`), in the
set-ups people have: `GIT_CEILING_DIRECTORIES`, objects kept elsewhere (`GIT_OBJECT_DIRECTORY`,
`GIT_ALTERNATE_OBJECT_DIRECTORIES`), a submodule, the dotfiles repository, `git -c`; through the CLI and Git's own
command dispatch on real repositories."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git, run_git_vivary

from vivary_git.memory.local.embed import embedder_status

NOTE = "---\ntitle: A\n---\n# A\n\n[[nowhere]]\n"


@pytest.fixture
def outer(tmp_path: Path) -> Path:
    """A repository at a home folder (the dotfiles kind), whose commit holds a note, with a folder of notes
    below it that it does not track."""
    home = tmp_path / "home"
    home.mkdir()
    git(home, "init", "-q", "-b", "main")
    (home / "tracked.md").write_text(NOTE)
    git(home, "add", "tracked.md")
    git(home, "commit", "-q", "-m", "home")
    (home / "notes" / "sub").mkdir(parents=True)
    (home / "notes" / "here.md").write_text(NOTE)
    return home


def test_no_repository_is_found_above_a_ceiling_directory(outer: Path) -> None:
    """GIT_CEILING_DIRECTORIES: Git does not look for a repository in or above a folder it names, so below one
    the folder is no repository's. vivary found the repository above it (libgit2 ignores the variable), read its
    files and wrote its caches into that repository's `.git`."""
    notes = outer / "notes"
    env = {"GIT_CEILING_DIRECTORIES": str(outer)}
    assert run_git_vivary(["--version"], notes, env=env).returncode == 0  # Git runs vivary there, as any command
    said = git(notes, "rev-parse", "--git-dir", check=False, env=env)
    assert said == ""  # Git finds no repository here
    r = run_git_vivary(["check", "--json"], notes, env=env)
    assert r.returncode == 1, r.stderr
    assert [f["path"] for f in json.loads(r.stdout)["findings"]] == ["here.md"], r.stdout  # the folder, read as one
    assert "is not in a Git repository: reading files directly" in r.stderr, r.stderr
    staged = run_git_vivary(["check", "--staged"], notes / "sub", env=env)
    assert staged.returncode == 2 and "is not inside a Git repository" in staged.stderr, staged.stderr
    hooks = run_git_vivary(["hooks", "install"], notes, env=env)
    assert hooks.returncode == 2 and hooks.stderr.count("\n") == 1, hooks.stderr
    assert f"{notes} is not inside a Git repository, and hooks are a repository's" in hooks.stderr, hooks.stderr
    assert not (outer / ".git" / "vivary").exists() and not (outer / ".git" / "hooks" / "pre-commit").exists()
    # Without the ceiling, the repository above is the one read, as for Git.
    r = run_git_vivary(["check", "--json"], notes)
    assert r.returncode == 1 and "reading files directly" not in r.stderr, r.stderr
    assert (outer / ".git" / "vivary").is_dir()


@pytest.mark.parametrize("ceiling", ["here", "relative", "after-empty-through-link"])
def test_a_ceiling_git_does_not_stop_at_does_not_stop_vivary(outer: Path, ceiling: str) -> None:
    """Git's own rules for the entries: a ceiling that is the current folder itself is not above it, a relative
    entry is ignored, and after an empty entry a path through a symbolic link is taken as spelled (so never above
    the current folder's real path)."""
    notes = outer / "notes"
    (outer.parent / "link").symlink_to(outer)
    value = {"here": str(notes), "relative": "home", "after-empty-through-link": f"{os.pathsep}{outer.parent / 'link'}"}
    env = {"GIT_CEILING_DIRECTORIES": value[ceiling]}
    assert git(notes, "rev-parse", "--absolute-git-dir", env=env).strip() == str(outer / ".git")
    r = run_git_vivary(["check", "--staged", "--json"], notes, env=env)
    assert r.returncode == 1, r.stderr
    assert [f["path"] for f in json.loads(r.stdout)["findings"]] == ["tracked.md"], r.stdout


def test_a_discovery_setting_git_cannot_read_is_said(outer: Path, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_DISCOVERY_ACROSS_FILESYSTEM (Git looks past a file-system boundary when true): a value Git refuses
    ("bad boolean config value") is refused with the fix, not read as false; Git's own words for the values it
    takes."""
    monkeypatch.setenv("GIT_DISCOVERY_ACROSS_FILESYSTEM", "maybe")
    r = cli("check", cwd=outer / "notes")
    assert r.code == 2 and r.err.count("\n") == 1, r.err
    assert "GIT_DISCOVERY_ACROSS_FILESYSTEM='maybe' is not a boolean Git reads (true or false)" in r.err, r.err
    for value in ("1", "yes", "On", "0", "off", ""):
        monkeypatch.setenv("GIT_DISCOVERY_ACROSS_FILESYSTEM", value)
        assert cli("check", "--staged", cwd=outer / "notes").code == 1


def _objects(folder: Path) -> set[str]:
    return {p.parent.name + p.name for p in folder.glob("??/*")}


@pytest.mark.parametrize("where", ["GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES"])
def test_objects_kept_elsewhere_are_read_and_written_where_git_keeps_them(tmp_path: Path, where: str) -> None:
    """GIT_OBJECT_DIRECTORY (Git reads and writes objects there instead of `.git/objects`) and
    GIT_ALTERNATE_OBJECT_DIRECTORIES (objects borrowed, read only): libgit2 ignores both, so every read of a
    commit, the index or the working tree was a traceback (KeyError on a tree id) or "no such revision". Now
    the notes are read, in children too (VIVARY_JOBS, 1,500 notes), and the cache's objects are written where
    Git writes."""
    store = tmp_path / "objects"
    store.mkdir()
    tree = tmp_path / "ws"
    tree.mkdir()
    git(tree, "init", "-q", "-b", "main")
    git(tree, "config", "gc.auto", "0")
    for n in range(1500):
        (tree / "notes" / f"n{n}.md").parent.mkdir(exist_ok=True)
        (tree / "notes" / f"n{n}.md").write_text(f"# N{n}\n")
    (tree / "notes" / "a.md").write_text(NOTE)
    env = {"GIT_OBJECT_DIRECTORY": str(store)}
    git(tree, "add", "-A", env=env)
    git(tree, "commit", "-q", "-m", "notes", env=env)
    if where == "GIT_ALTERNATE_OBJECT_DIRECTORIES":
        env = {where: str(store)}  # borrowed: this repository's own objects/ holds none of them
    own = _objects(tree / ".git" / "objects")
    assert own == set()
    (tree / "notes" / "b.md").write_text("# B\n")
    for args in (["check", "--rev", "HEAD"], ["check", "--staged"], ["check"]):
        r = run_git_vivary([*args, "--json"], tree, env={**env, "VIVARY_JOBS": "2", "VIVARY_STATS": "1"})
        assert r.returncode == 1 and "Traceback" not in r.stderr, (args, r.stderr)
        assert '"redone":0' in r.stderr, r.stderr  # no child failed to read its share
        assert [f["path"] for f in json.loads(r.stdout)["findings"]] == ["notes/a.md"], (args, r.stdout)
    cache = git(tree, "rev-parse", "refs/vivary/cache").strip()
    assert git(tree, "cat-file", "-t", cache, env=env).strip() == "commit"
    if where == "GIT_OBJECT_DIRECTORY":
        assert cache in _objects(store) and _objects(tree / ".git" / "objects") == set()
    else:
        assert cache in _objects(tree / ".git" / "objects") and cache not in _objects(store)


def test_an_object_folder_that_is_not_there_is_said(outer: Path) -> None:
    """Git finds no repository while GIT_OBJECT_DIRECTORY names a folder that is not there; vivary says which
    setting and its fix, never a traceback."""
    r = run_git_vivary(["check"], outer, env={"GIT_OBJECT_DIRECTORY": str(outer / "gone")})
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"git vivary check: GIT_OBJECT_DIRECTORY={outer / 'gone'} is not a folder Git can "
                               "keep objects in"), r.stderr
    assert r.stderr.rstrip().endswith("point it at one, or unset it"), r.stderr


@pytest.fixture
def superproject(tmp_path: Path) -> Path:
    """A repository whose `vault` folder is a submodule (its `.git` a file naming `.git/modules/vault`)."""
    lib = tmp_path / "vault-src"
    lib.mkdir()
    git(lib, "init", "-q", "-b", "main")
    (lib / "notes").mkdir()
    (lib / "notes" / "a.md").write_text(NOTE)
    git(lib, "add", "-A")
    git(lib, "commit", "-q", "-m", "vault")
    top = tmp_path / "super"
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    (top / "README.md").write_text("# Top\n")
    git(top, "add", "-A")
    git(top, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), "vault")
    git(top, "commit", "-q", "-m", "vault as a submodule")
    return top


@pytest.mark.parametrize("root", ["vault", "vault/notes"])
def test_root_naming_a_submodule_is_refused_by_every_command_that_takes_it(superproject: Path, root: str) -> None:
    """A submodule's files are its own repository's, which Git run in the superproject does not read into: `--root`
    naming it (or a folder inside it) is a usage error that says to run inside it, for every command. `check
    --root vault/notes` said there was no such folder; `doctor` read the submodule's memory config from disk and
    reported the superproject's privacy for it; `cache gc` told to delete branch main (`git branch -D main`)."""
    for args in (["check"], ["check", "--staged"], ["check", "--rev", "HEAD"], ["doctor"], ["cache", "gc"],
                 ["cache", "gc", "--dry-run"]):
        r = run_git_vivary([*args, "--root", root], superproject)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (args, r.stderr)
        assert (f"--root {root}: 'vault' is another repository (a submodule, or a clone inside this work tree), "
                "which Git does not read into from here; run the command inside it (-C vault)") in r.stderr, r.stderr
    r = run_git_vivary(["hooks", "install", "--root", root], superproject)
    assert r.returncode == 2 and "install its hooks there (git vivary hooks install -C vault)" in r.stderr, r.stderr
    assert not (superproject / ".git" / "hooks" / "pre-commit").exists()
    # Inside it, it is the repository: its derived state goes to its own Git folder, none to the superproject's.
    r = run_git_vivary(["check", "--json"], superproject / "vault" / "notes")
    assert r.returncode == 1 and [f["path"] for f in json.loads(r.stdout)["findings"]] == ["notes/a.md"], r.stdout
    assert (superproject / ".git" / "modules" / "vault" / "vivary").is_dir()
    assert not (superproject / ".git" / "vivary").exists() and not (superproject / "vault" / ".git").is_dir()


def test_a_dotfiles_repository_reads_the_home_folder_git_is_told_of(tmp_path: Path) -> None:
    """The dotfiles set-up: a bare repository used as `git --git-dir=~/.dotfiles --work-tree=~` (Git exports both to
    `git vivary`), and the same repository with core.worktree set. With core.bare still true Git uses no work tree
    ("core.bare and core.worktree do not make sense"), and neither does vivary: it says which setting to change
    instead of calling the repository plainly bare."""
    home = tmp_path / "home"
    (home / "notes").mkdir(parents=True)
    dot = tmp_path / "dotfiles"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(dot))
    (home / "notes" / "a.md").write_text(NOTE)
    named = ["--git-dir", str(dot), "--work-tree", str(home)]
    git(home, *named, "add", "notes/a.md")
    git(home, *named, "commit", "-q", "-m", "notes")
    for args in (["check"], ["check", "--staged"]):
        r = run_git_vivary([*args, "--json"], home / "notes", env={"GIT_DIR": str(dot), "GIT_WORK_TREE": str(home)})
        assert r.returncode == 1, r.stderr
        assert [f["path"] for f in json.loads(r.stdout)["findings"]] == ["notes/a.md"], r.stdout
    assert (dot / "vivary").is_dir() and not (home / ".git").exists()
    git(tmp_path, "--git-dir", str(dot), "config", "core.worktree", str(home))
    r = run_git_vivary(["check"], home, env={"GIT_DIR": str(dot)})
    assert git(home, "rev-parse", "--is-bare-repository", env={"GIT_DIR": str(dot)}).strip() == "true"
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert (f"this repository is bare (core.bare = true), so Git uses no work tree, although core.worktree names "
            f"{home}: to use that folder as its work tree, `git --git-dir={dot} config core.bare false`") in r.stderr
    assert run_git_vivary(["check", "--rev", "HEAD"], home, env={"GIT_DIR": str(dot)}).returncode == 1
    git(tmp_path, "--git-dir", str(dot), "config", "core.bare", "false")  # the fix it names
    r = run_git_vivary(["check", "--json"], tmp_path, env={"GIT_DIR": str(dot)})
    assert r.returncode == 1 and [f["path"] for f in json.loads(r.stdout)["findings"]] == ["notes/a.md"], r.stderr


def test_vivary_settings_given_with_git_c_are_read_as_git_reads_them(outer: Path) -> None:
    """`git -c vivary.cache=false vivary …` (GIT_CONFIG_PARAMETERS) and GIT_CONFIG_COUNT/KEY/VALUE: Git reads them
    for that command, and the settings vivary reads with `git config` honoured them; those read through libgit2
    (vivary.cache, vivary.notes, vivary.cacheTrust, vivary.cacheSign) did not, so `-c vivary.cache=false` still
    wrote the shared cache."""
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    r = subprocess.run(["git", "-c", "vivary.cache=false", "vivary", "check", "--rev", "HEAD"], cwd=outer, env=env,
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    assert git(outer, "for-each-ref", "refs/vivary/") == ""  # nothing recorded, as asked
    assert run_git_vivary(["check", "--rev", "HEAD"], outer).returncode == 1
    assert git(outer, "for-each-ref", "--format=%(refname)", "refs/vivary/") == "refs/vivary/cache\n"
    counted = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "vivary.notes", "GIT_CONFIG_VALUE_0": "yes"}
    for extra, said in (({}, "notes     off"), (counted, "notes     on")):
        r = run_git_vivary(["cache", "status"], outer, env=extra)
        assert said in r.stdout, (extra, r.stdout, r.stderr)
    r = subprocess.run(["git", "-c", "vivary.cacheTrust=bogus", "vivary", "check"], cwd=outer, env=env,
                       capture_output=True, text=True)
    assert "vivary.cacheTrust = 'bogus' is not one of none, signed, any" in r.stderr, r.stderr


@pytest.mark.skipif(importlib.util.find_spec("hnswlib") is None or embedder_status() != "available",
                    reason="needs the [embed] extra")
def test_each_linked_worktree_has_its_own_memory_index_in_the_common_git_dir(tmp_path: Path) -> None:
    """docs/memory.md: a linked worktree is a workspace of its own, with an index of its own kept in the common
    Git directory (never in its `.git/worktrees/NAME` or its work tree): `index` in the main worktree builds none for
    the linked one, whose `recall` says to run `index` (exit 3)."""
    main = tmp_path / "main"
    main.mkdir()
    git(main, "init", "-q", "-b", "main")
    (main / ".vivary").mkdir()
    (main / ".vivary" / "memory.toml").write_text('[memory]\nenabled = true\nprovider = "vivary-local"\n')
    (main / "notes").mkdir()
    (main / "notes" / "a.md").write_text("# Apples\n\nApples are red.\n")
    git(main, "add", "-A")
    git(main, "commit", "-q", "-m", "notes")
    linked = tmp_path / "linked"
    git(main, "worktree", "add", "-q", "-b", "other", str(linked))
    assert run_git_vivary(["index", "--yes"], main).returncode == 0
    r = run_git_vivary(["recall", "apples"], linked / "notes")
    assert r.returncode == 3 and "there is no memory index for this workspace yet" in r.stderr, r.stderr
    assert "run `git vivary index --yes`" in r.stderr
    assert run_git_vivary(["index", "--yes"], linked).returncode == 0
    r = run_git_vivary(["recall", "apples", "--json"], linked / "notes")
    assert r.returncode == 0 and "notes/a.md" in r.stdout, r.stderr
    datasets = sorted(p.name.split("-")[1] for p in (main / ".git" / "vivary" / "memory").iterdir())
    assert datasets == ["linked", "main"]
    assert not (main / ".git" / "worktrees" / "linked" / "vivary").exists()
    assert not (linked / ".vivary" / "memory").exists()
