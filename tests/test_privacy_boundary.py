"""The privacy boundary's edges, through its public API and `privacy explain`, with real Git: workspaces below
the top (the anchored floor and `private_paths` at each, odd folder names), the folder rule the memory state
folders use (`git_ignores`), a plain folder outside Git (`decide_without_git`), paths too deep for Git to name
its rule, and the exact words of a refusal. Each answer is checked whole: path, verdict and reason."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from conftest import git, write

from vivary_git.checkignore import UNNAMED_IGNORE
from vivary_git.errors import PrivacyError
from vivary_git.privacy import (
    PrivacyDecision,
    PrivacyMemo,
    PrivacyPolicy,
    Scope,
    decide,
    decide_scoped,
    decide_without_git,
    git_ignores,
    sensitive_name,
)

DEEP = "/".join(["d"] * 25)  # below more than 20 folders: Git answers without naming the rule


def init(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    write(path, files or {})
    return path


def reasons(decisions: list[PrivacyDecision]) -> dict[str, str]:
    assert all(d.private == bool(d.reason) for d in decisions)
    return {d.path: d.reason for d in decisions}


# --- workspaces below the top -------------------------------------------------------------------------


def test_each_workspace_has_the_floor_and_its_own_private_paths_at_its_root(tmp_path: Path) -> None:
    repo = init(tmp_path / "r", {".gitignore": "*.log\n"})
    scopes = [
        Scope("vault", ("drafts/**", "!drafts/keep.md", "*.wip.md", "/top.md")),
        Scope("vault/team", ("x/**",), respect_gitignore=False),
    ]
    paths = [
        "vault/memory/a.md", "vault/heartbeat-reports/r.md", "vault/.strato/private/p.md",
        "vault/.vivary/memory.toml", "vault/team/memory/b.md", "vault/notes/memory/c.md", "vault/Memory/d.md",
        "vaultx/memory/e.md", "memory/f.md", "vault/USER.md",
        "vault/drafts/a.md", "vault/drafts/keep.md", "vault/a/b.wip.md", "vault/team/c.wip.md", "other/c.wip.md",
        "vault/top.md", "vault/sub/top.md", "drafts/a.md", "vault/team/x/1.md", "vault/x/1.md",
        "vault/n.log", "vault/team/n.log", "n.log", "vault/team/.env", "vault/idea.md",
    ]
    in_vault = " (in vault/.vivary/memory.toml)"
    assert reasons(decide_scoped(repo, paths, scopes)) == {
        "vault/memory/a.md": "floor: memory/** (workspace vault/)",
        "vault/heartbeat-reports/r.md": "floor: heartbeat-reports/** (workspace vault/)",
        "vault/.strato/private/p.md": "floor: .strato/private/** (workspace vault/)",
        "vault/.vivary/memory.toml": "floor: .vivary/** (workspace vault/)",
        "vault/team/memory/b.md": "floor: memory/** (workspace vault/team/)",
        "vault/notes/memory/c.md": "",  # anchored at the workspace's root, as at the top
        "vault/Memory/d.md": "",  # Git compares case when core.ignoreCase is off, and so does the floor
        "vaultx/memory/e.md": "",
        "memory/f.md": "floor: memory/**",
        "vault/USER.md": "floor: USER.md",
        "vault/drafts/a.md": "config: drafts/**" + in_vault,
        "vault/drafts/keep.md": "",
        "vault/a/b.wip.md": "config: *.wip.md" + in_vault,
        "vault/team/c.wip.md": "config: *.wip.md" + in_vault,
        "other/c.wip.md": "",  # a pattern without a slash matches at any depth below its workspace only
        "vault/top.md": "config: /top.md" + in_vault,
        "vault/sub/top.md": "",
        "drafts/a.md": "",
        "vault/team/x/1.md": "config: x/** (in vault/team/.vivary/memory.toml)",
        "vault/x/1.md": "",
        "vault/n.log": ".gitignore:1:*.log",
        "vault/team/n.log": "",  # the nearest workspace does not respect .gitignore
        "n.log": ".gitignore:1:*.log",
        "vault/team/.env": "sensitive name: .env*",
        "vault/idea.md": "",
    }
    # The caller's gitignore setting, when given, stands for every workspace's.
    assert reasons(decide_scoped(repo, ["vault/team/n.log", "vault/n.log"], scopes, gitignore=True)) == {
        "vault/team/n.log": ".gitignore:1:*.log", "vault/n.log": ".gitignore:1:*.log"}
    assert reasons(decide_scoped(repo, ["vault/team/n.log", "vault/n.log"], scopes, gitignore=False)) == {
        "vault/team/n.log": "", "vault/n.log": ""}


def test_a_workspaces_floor_follows_core_ignorecase(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    git(repo, "config", "core.ignoreCase", "true")
    paths = ["Vault/MEMORY/a.md", "vault/Heartbeat-Reports/r.md", "VAULT/notes/b.md"]
    assert reasons(decide_scoped(repo, paths, [Scope("vault", ("Notes/**",))])) == {
        "Vault/MEMORY/a.md": "floor: memory/** (workspace vault/)",
        "vault/Heartbeat-Reports/r.md": "floor: heartbeat-reports/** (workspace vault/)",
        "VAULT/notes/b.md": "config: Notes/** (in vault/.vivary/memory.toml)",
    }


# Folder names that are gitignore syntax themselves: a comment, a negation, a character class, a wildcard,
# an escape. The workspace's patterns must match below the folder as it is named.
ODD_FOLDERS = ["#inbox", "!later", "[old] notes", "a*b", "what?", "back\\slash", "café"]


@pytest.mark.parametrize("folder", ODD_FOLDERS)
def test_a_workspace_folder_named_in_glob_syntax_keeps_its_private_paths(tmp_path: Path, folder: str) -> None:
    repo = init(tmp_path / "r")
    scopes = [Scope(folder, ("drafts/**", "*.wip.md", "/top.md"))]
    paths = [f"{folder}/drafts/a.md", f"{folder}/n/b.wip.md", f"{folder}/top.md", f"{folder}/idea.md"]
    in_folder = f" (in {folder}/.vivary/memory.toml)"
    assert reasons(decide_scoped(repo, paths, scopes)) == {
        f"{folder}/drafts/a.md": "config: drafts/**" + in_folder,
        f"{folder}/n/b.wip.md": "config: *.wip.md" + in_folder,
        f"{folder}/top.md": "config: /top.md" + in_folder,
        f"{folder}/idea.md": "",
    }


def test_a_wildcard_in_a_workspace_folder_matches_only_that_folder(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    # Under `a*b` the pattern must not reach `axb`, even were `axb` asked with the same workspace's rules.
    scopes = [Scope("a*b", ("drafts/**",)), Scope("axb")]
    assert reasons(decide_scoped(repo, ["axb/drafts/a.md", "a*b/drafts/a.md"], scopes)) == {
        "axb/drafts/a.md": "",
        "a*b/drafts/a.md": "config: drafts/** (in a*b/.vivary/memory.toml)",
    }


@pytest.fixture
def vaults(tmp_path: Path) -> Path:
    """A repository whose workspaces are the top, `vault/` and `vault/team/` (each marked by tropo.toml or
    .vivary/), with their own memory.toml; nothing committed: privacy explain reads the working tree."""
    return init(tmp_path / "r", {
        ".gitignore": "*.log\n",
        "tropo.toml": "version = 1\n",
        "vault/tropo.toml": "version = 1\n",
        "vault/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n',
        "vault/team/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["x/**"]\nrespect_gitignore = false\n',
        "vault/notes/idea.md": "# Idea\n",
    })


EXPLAINED = [
    "private  vault/memory/m.md  (floor: memory/** (workspace vault/))",
    "private  vault/team/memory/m.md  (floor: memory/** (workspace vault/team/))",
    "private  vault/drafts/d.md  (config: drafts/** (in vault/.vivary/memory.toml))",
    "private  vault/team/x/y.md  (config: x/** (in vault/team/.vivary/memory.toml))",
    "private  vault/a.log  (.gitignore:1:*.log)",
    "public   vault/team/a.log",
    "public   vault/notes/memory/m.md",
    "public   drafts/d.md",
]


def test_explain_decides_each_path_with_every_workspace_on_its_way(vaults: Path, cli: Any) -> None:
    asked = ["vault/memory/m.md", "vault/team/memory/m.md", "vault/drafts/d.md", "vault/team/x/y.md", "vault/a.log",
             "vault/team/a.log", "vault/notes/memory/m.md", "drafts/d.md"]
    r = cli("privacy", "explain", *asked, cwd=vaults)
    assert r.code == 0, r.err
    assert r.out.splitlines() == EXPLAINED
    # The same answers from inside a workspace (paths relative to it) and with --root naming another.
    r = cli("privacy", "explain", *(":/" + p for p in asked), cwd=vaults / "vault" / "notes")
    assert (r.code, r.out.splitlines()) == (0, EXPLAINED), r.err
    r = cli("privacy", "explain", "--root", "vault/team", *asked, cwd=vaults)
    assert (r.code, r.out.splitlines()) == (0, EXPLAINED), r.err


# --- git_ignores: the rule that ignores a folder --------------------------------------------------------


def test_git_ignores_names_the_rule_for_each_folder_in_input_order(tmp_path: Path) -> None:
    repo = init(tmp_path / "r", {
        ".gitignore": "/.vivary/memory/\nbuild/\nk*/\n!keep/\n",
        "sub/.gitignore": "cache/\n",
        f"{DEEP}/.gitignore": "deepcache/\n",
        "notes/a.md": "",  # a folder that exists; the others need not
    })
    write(repo, {".git/info/exclude": "local/\n"})
    folders = ["sub/cache", "notes", ".vivary/memory", "keep", "kept", "build", "sub/notes", "local",
               f"{DEEP}/deepcache", f"{DEEP}/fine", "vault/.vivary/memory", "sub/cache"]
    assert git_ignores(repo, folders) == [
        "sub/.gitignore:1:cache/", "", ".gitignore:1:/.vivary/memory/", "", ".gitignore:3:k*/",
        ".gitignore:2:build/", "", ".git/info/exclude:1:local/", UNNAMED_IGNORE, "", "",
        "sub/.gitignore:1:cache/",
    ]
    assert git_ignores(repo, []) == []


def test_git_ignores_asks_nothing_for_no_folders_and_refuses_what_is_no_folder(tmp_path: Path) -> None:
    assert git_ignores(tmp_path / "not-a-repository", []) == []
    repo = init(tmp_path / "r")
    with pytest.raises(PrivacyError, match="not a repository-relative path: 'a//b'"):
        git_ignores(repo, ["a//b"])
    with pytest.raises(PrivacyError, match="not a Git work tree"):
        git_ignores(tmp_path, ["a"])


def test_git_ignores_in_a_work_tree_set_elsewhere_reads_that_git_directorys_rules(tmp_path: Path) -> None:
    notes, gitdir = tmp_path / "notes", tmp_path / "notes.git"
    notes.mkdir()
    git(tmp_path, f"--git-dir={gitdir}", f"--work-tree={notes}", "init", "-q", "-b", "main")
    write(notes, {".gitignore": "build/\n"})
    write(gitdir, {"info/exclude": "local/\n"})
    assert git_ignores(notes, ["build", "local", "notes"], git_dir=gitdir) == [
        ".gitignore:1:build/", f"{gitdir}/info/exclude:1:local/", ""]
    with pytest.raises(PrivacyError, match="not a Git work tree"):
        git_ignores(notes, ["build"])
    # decide, told the same Git directory, applies the same rules to files.
    assert reasons(decide(notes, ["build/a.md", "local/b.md", "notes/c.md"], git_dir=gitdir)) == {
        "build/a.md": ".gitignore:1:build/", "local/b.md": f"{gitdir}/info/exclude:1:local/", "notes/c.md": ""}
    with pytest.raises(PrivacyError, match="not a Git work tree"):
        decide(notes, ["notes/c.md"])


# --- a plain folder outside Git ---------------------------------------------------------------------------


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    folder = tmp_path / "plain"
    write(folder, {"vault/tropo.toml": "version = 1\n", "team/.vivary/cache": "", "notes/idea.md": "# Idea\n"})
    return folder


PLAIN_PATHS = ["USER.md", "memory/a.md", "vault/memory/b.md", "team/heartbeat-reports/r.md", "vault/notes/memory/c.md",
               "vaultx/memory/d.md", "notes/idea.md", "vault/.env", "user.md", "vault/Memory/e.md"]


def test_a_plain_folder_has_the_floor_at_each_workspace_and_sensitive_names(plain: Path) -> None:
    assert decide_without_git(plain, PLAIN_PATHS) == [
        PrivacyDecision("USER.md", True, "floor: USER.md"),
        PrivacyDecision("memory/a.md", True, "floor: memory/**"),
        PrivacyDecision("vault/memory/b.md", True, "floor: memory/** (workspace vault/)"),
        PrivacyDecision("team/heartbeat-reports/r.md", True, "floor: heartbeat-reports/** (workspace team/)"),
        PrivacyDecision("vault/notes/memory/c.md", False, ""),
        PrivacyDecision("vaultx/memory/d.md", False, ""),
        PrivacyDecision("notes/idea.md", False, ""),
        PrivacyDecision("vault/.env", True, "sensitive name: .env*"),
        PrivacyDecision("user.md", False, ""),  # a case-sensitive file system, as `git init` here would find
        PrivacyDecision("vault/Memory/e.md", False, ""),
    ]
    assert decide_without_git(plain, []) == []


@pytest.mark.parametrize("platform", ["darwin", "win32"])
def test_a_plain_folder_on_a_case_insensitive_system_folds_case(plain: Path, platform: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # macOS and Windows cannot exist on this machine: only the platform's name is stood in for.
    monkeypatch.setattr(sys, "platform", platform)
    got = {d.path: d.reason for d in decide_without_git(plain, PLAIN_PATHS)}
    assert got["user.md"] == "floor: USER.md"
    assert got["vault/Memory/e.md"] == "floor: memory/** (workspace vault/)"


@pytest.mark.parametrize("where", ["", "vault/"])
def test_a_plain_folder_with_private_paths_is_refused_by_name(plain: Path, where: str) -> None:
    write(plain, {f"{where}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n'})
    with pytest.raises(PrivacyError) as err:
        decide_without_git(plain, ["vault/notes/a.md"])
    assert str(err.value) == (
        f"cannot decide privacy in {plain}: {where}.vivary/memory.toml lists private_paths, gitignore patterns only"
        " Git matches exactly, and this folder is not in a Git work tree; run `git init` there (nothing needs to be"
        " committed) and try again"
    )


# --- paths too deep for Git to name its rule --------------------------------------------------------------


def test_deep_paths_are_matched_one_for_one_in_any_order_and_with_repeats(tmp_path: Path) -> None:
    repo = init(tmp_path / "r", {".gitignore": "*.log\n"})
    names = ["e.md", "b.log", "f.log", "a.md", "c.log", "b.log", "d.log", "g.md"]
    paths = [f"{DEEP}/{n}" for n in names]
    got = decide(repo, paths)
    assert [d.path for d in got] == paths
    assert [d.reason for d in got] == ["" if n.endswith(".md") else UNNAMED_IGNORE for n in names]
    assert decide(repo, [*paths, "b.log"])[-1].reason == ".gitignore:1:*.log"


def fake_check_ignore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str) -> None:
    """A `git` first on PATH that runs the real one, except that `check-ignore` without `-v` (the batch for
    deep paths) answers with `script`: a Git that crashes or garbles its answer cannot be had for real."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, check=True).stdout.decode().strip()
    bindir = tmp_path / "fake-bin"
    bindir.mkdir()
    fake = bindir / "git"
    fake.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" check-ignore "*) case " $* " in *" -v "*) ;; *)\n'
        f"{script}\n"
        "esac;; esac\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("cat >/dev/null; printf './%s/nope\\000' \"$DEEP\"; exit 0",
         "git check-ignore's answer does not line up with the 1 paths asked; nothing was admitted"),
        ("cat >/dev/null; printf './%s/a.md' \"$DEEP\"; exit 0", "malformed answer from git check-ignore"),
    ],
)
def test_a_garbled_answer_for_deep_paths_admits_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        script: str, message: str) -> None:
    repo = init(tmp_path / "r")
    fake_check_ignore(tmp_path, monkeypatch, script)
    monkeypatch.setenv("DEEP", DEEP)
    with pytest.raises(PrivacyError) as err:
        decide(repo, [f"{DEEP}/a.md"], PrivacyPolicy())
    assert str(err.value).startswith("cannot decide privacy (")
    assert str(err.value).endswith(message)


# --- the words of a refusal -------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["a//b.md", "./a.md", "a/"])
def test_a_malformed_path_is_refused_in_full_words(tmp_path: Path, bad: str) -> None:
    repo = init(tmp_path / "r")
    with pytest.raises(PrivacyError) as err:
        decide(repo, ["ok.md", bad])
    assert str(err.value) == (
        f"not a repository-relative path: {bad!r}; paths are `/`-separated, relative to the repository root,"
        " without empty, `.` or `..` components"
    )


def test_git_ignores_fails_closed_and_says_whose_rules_it_could_not_read(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    repo = init(tmp_path / "r")
    fake_check_ignore(tmp_path, monkeypatch, "cat >/dev/null; echo 'fatal: boom' >&2; exit 128")
    with pytest.raises(PrivacyError) as err:
        git_ignores(repo, [f"{DEEP}/cache"])
    assert str(err.value) == (
        f"cannot decide privacy (Git ignore rules in {repo}): git check-ignore failed with exit code 128: fatal: boom;"
        " nothing was admitted"
    )


# --- the floor for paths Git cannot name a rule for, and names that only look like secrets -----------------


def test_the_floor_is_named_for_deep_paths_when_core_ignorecase_is_on(tmp_path: Path) -> None:
    # Git names no rule for a path this deep: the reason is the floor's own, whatever the case.
    repo = init(tmp_path / "r")
    git(repo, "config", "core.ignoreCase", "true")
    paths = [f"{DEEP}/user.md", f"{DEEP}/Memory.Markdown", f"Memory/{DEEP}/x.md", f"{DEEP}/notes.md"]
    assert reasons(decide(repo, paths)) == {
        f"{DEEP}/user.md": "floor: USER.md",
        f"{DEEP}/Memory.Markdown": "floor: MEMORY.markdown",
        f"Memory/{DEEP}/x.md": "floor: memory/**",
        f"{DEEP}/notes.md": "",
    }


def test_the_floor_is_named_for_deep_paths_and_compares_case_when_core_ignorecase_is_off(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    paths = [f"{DEEP}/MEMORY.md", f"{DEEP}/USER.markdown", f"{DEEP}/memory.md", "notes/USER.mD", "MEMORY.markDown"]
    assert reasons(decide(repo, paths)) == {
        f"{DEEP}/MEMORY.md": "floor: MEMORY.md",
        f"{DEEP}/USER.markdown": "floor: USER.markdown",
        f"{DEEP}/memory.md": "",
        "notes/USER.mD": "",
        "MEMORY.markDown": "",
    }


def test_a_name_holding_every_kind_of_secret_word_is_still_one_sensitive_name() -> None:
    # Each of these words only lets a name be looked at closer; one name may hold them all.
    name = ".env-.pem.key.p12.pfx.ppk-id_-netrc-.pgpass-.pypirc-credential-secrets-passw-api"
    assert sensitive_name(f"notes/{name}") == "sensitive name: .env*"
    assert sensitive_name("notes/env-pem-key-netrc-credential-secrets-password-api.md") == ""


# --- one answer per question --------------------------------------------------------------------------------


def test_a_memo_tells_repositories_git_directories_and_trees_apart(tmp_path: Path) -> None:
    memo = PrivacyMemo()
    one = init(tmp_path / "one", {".gitignore": "a.md\n"})
    two = init(tmp_path / "two")
    assert reasons(decide_scoped(one, ["a.md"], [Scope("")], memo=memo)) == {"a.md": ".gitignore:1:a.md"}
    assert reasons(decide_scoped(two, ["a.md"], [Scope("")], memo=memo)) == {"a.md": ""}
    # One work tree, two Git directories with their own info/exclude: each is asked, and each is told.
    notes = tmp_path / "notes"
    notes.mkdir()
    for name, rule in (("g1", "a.md\n"), ("g2", "")):
        git(tmp_path, f"--git-dir={tmp_path / name}", f"--work-tree={notes}", "init", "-q", "-b", "main")
        (tmp_path / name / "info" / "exclude").write_text(rule)
    assert reasons(decide_scoped(notes, ["a.md"], [Scope("")], memo=memo, git_dir=tmp_path / "g1")) == {
        "a.md": f"{tmp_path / 'g1'}/info/exclude:1:a.md"}
    assert reasons(decide_scoped(notes, ["a.md"], [Scope("")], memo=memo, git_dir=tmp_path / "g2")) == {"a.md": ""}
    # A tree's own .gitignore, through the memo too.
    write(two, {".gitignore": "b.md\n"})
    git(two, "add", ".gitignore")
    git(two, "commit", "-q", "-m", "c")
    write(two, {".gitignore": ""})
    tree = git(two, "rev-parse", "HEAD^{tree}").strip()
    assert reasons(decide_scoped(two, ["b.md"], [Scope("")], trees=(tree,), memo=memo)) == {
        "b.md": ".gitignore:1:b.md"}
    assert reasons(decide_scoped(two, ["b.md"], [Scope("")], memo=memo)) == {"b.md": ""}


# --- a garbled answer with rules named ----------------------------------------------------------------------


def fake_verbose_check_ignore(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str) -> None:
    """A `git` first on PATH that runs the real one, except that `check-ignore -v` prints `answer` (printf
    syntax) and exits 0: a Git that garbles its answer cannot be had for real."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, check=True).stdout.decode().strip()
    bindir = tmp_path / "fake-bin"
    bindir.mkdir()
    fake = bindir / "git"
    fake.write_text(
        "#!/bin/sh\n"
        'case " $* " in *" check-ignore "*" -v "*)\n'
        f"cat >/dev/null; printf '{answer}'; exit 0\n"
        "esac\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("\\000\\000\\000./a.md\\000\\000",
         "git check-ignore's answer does not line up with the 1 paths asked; nothing was admitted"),
        ("x\\000\\000pat\\000./a.md\\000", "malformed answer from git check-ignore"),
        ("x\\0001\\000\\000./a.md\\000", "malformed answer from git check-ignore"),
        ("x\\000one\\000pat\\000./a.md\\000", "malformed answer for b'a.md'"),
    ],
)
def test_a_garbled_rule_is_refused_in_full_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, answer: str,
                                                 message: str) -> None:
    repo = init(tmp_path / "r")
    fake_verbose_check_ignore(tmp_path, monkeypatch, answer)
    with pytest.raises(PrivacyError) as err:
        decide(repo, ["a.md"])
    assert str(err.value) == f"cannot decide privacy (floor and private_paths): {message}"



# --- the top's private_paths beside a workspace's, and how a pattern is anchored -----------------------------


def test_the_tops_private_paths_apply_beside_a_workspaces_and_each_is_anchored_as_written(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    scopes = [Scope("vault", ("build/", "notes/*.md")), Scope("", ("Xmas/**", "top-secret/"))]
    in_vault = " (in vault/.vivary/memory.toml)"
    paths = ["Xmas/a.md", "top-secret/a.md", "a/top-secret/b.md", "vault/build/x.md", "vault/a/build/x.md",
             "vault/notes/a.md", "vault/a/notes/b.md", "vault/build.md"]
    assert reasons(decide_scoped(repo, paths, scopes)) == {
        "Xmas/a.md": "config: Xmas/**",
        "top-secret/a.md": "config: top-secret/",
        "a/top-secret/b.md": "config: top-secret/",
        "vault/build/x.md": "config: build/" + in_vault,  # no slash but the last: a folder at any depth below
        "vault/a/build/x.md": "config: build/" + in_vault,
        "vault/notes/a.md": "config: notes/*.md" + in_vault,  # a slash in the middle: anchored at vault/
        "vault/a/notes/b.md": "",
        "vault/build.md": "",
    }


def test_a_private_paths_entry_of_two_lines_is_refused_in_full_words(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    with pytest.raises(PrivacyError) as err:
        decide_scoped(repo, ["vault/a.md"], [Scope("vault", ("drafts/**", "a\rb"))])
    # Named by its place, never quoted: a pattern is a private file's text, and the message may reach a CI log.
    assert str(err.value) == (
        "vault/.vivary/memory.toml: private_paths[1] contains a line break or NUL; a gitignore pattern is one line:"
        " split it into separate entries"
    )



def test_a_pattern_ending_in_a_name_of_x_keeps_its_middle_slash(tmp_path: Path) -> None:
    # `social/X` (a note about X) has a slash in the middle: anchored at the workspace, not at any depth.
    repo = init(tmp_path / "r")
    paths = ["vault/social/X", "vault/a/social/X"]
    assert reasons(decide_scoped(repo, paths, [Scope("vault", ("social/X",))])) == {
        "vault/social/X": "config: social/X (in vault/.vivary/memory.toml)", "vault/a/social/X": ""}



def test_git_names_the_rule_down_to_twenty_folders_and_no_deeper(tmp_path: Path) -> None:
    repo = init(tmp_path / "r", {".gitignore": "*.log\ncache/\n"})
    at, below = "/".join(["d"] * 20) + "/a.log", "/".join(["d"] * 21) + "/a.log"
    assert reasons(decide(repo, [at, below])) == {at: ".gitignore:1:*.log", below: UNNAMED_IGNORE}
    # A folder is asked as `folder/`: its own slash counts.
    at, below = "/".join(["d"] * 19) + "/cache", "/".join(["d"] * 20) + "/cache"
    assert git_ignores(repo, [at, below]) == [".gitignore:2:cache/", UNNAMED_IGNORE]


def test_a_workspace_folder_is_matched_case_for_case_when_core_ignorecase_is_off(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    paths = ["Vault/memory/a.md", "Vault/drafts/a.md", "vault/memory/a.md"]
    assert reasons(decide_scoped(repo, paths, [Scope("vault", ("drafts/**",))])) == {
        "Vault/memory/a.md": "", "Vault/drafts/a.md": "", "vault/memory/a.md": "floor: memory/** (workspace vault/)"}



def test_a_workspace_folder_named_in_other_case_is_found_when_core_ignorecase_is_on(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    git(repo, "config", "core.ignoreCase", "true")
    assert reasons(decide_scoped(repo, ["vault/MEMORY/a.md", "vault/n.md"], [Scope("Vault")])) == {
        "vault/MEMORY/a.md": "floor: memory/** (workspace Vault/)", "vault/n.md": ""}


def test_every_tree_asked_about_has_its_say(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    trees = []
    for rule in ("a.md\n", "b.md\n"):
        write(repo, {".gitignore": rule})
        git(repo, "add", ".gitignore")
        git(repo, "commit", "-q", "-m", rule)
        trees.append(git(repo, "rev-parse", "HEAD^{tree}").strip())
    assert reasons(decide_scoped(repo, ["a.md", "b.md", "c.md"], [Scope("")], trees=trees)) == {
        "a.md": ".gitignore:1:a.md", "b.md": ".gitignore:1:b.md", "c.md": ""}


def test_gits_own_rules_compare_names_byte_for_byte(tmp_path: Path) -> None:
    # private_paths match either Unicode form of a name; a .gitignore matches as Git does, bytes for bytes.
    nfd, nfc = unicodedata.normalize("NFD", "café.md"), unicodedata.normalize("NFC", "café.md")
    repo = init(tmp_path / "r", {".gitignore": nfd + "\n"})
    assert reasons(decide(repo, [nfd, nfc])) == {nfd: f".gitignore:1:{nfd}", nfc: ""}
    assert reasons(decide(repo, [nfd, nfc], PrivacyPolicy(private_paths=(nfc,)), tree=None)) == {
        nfd: f"config: {nfc}", nfc: f"config: {nfc}"}



def test_the_top_floor_is_named_before_a_workspaces(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    assert reasons(decide_scoped(repo, ["vault/memory/USER.md", "vault/USER.md"], [Scope("vault")])) == {
        "vault/memory/USER.md": "floor: USER.md", "vault/USER.md": "floor: USER.md"}


def test_of_many_workspaces_on_the_way_the_outermost_rule_is_named(tmp_path: Path) -> None:
    # Eleven workspaces in a row; the second and the tenth would make the note private: the second is named.
    repo = init(tmp_path / "r")
    folders = ["/".join("abcdefghijk"[: n + 1]) for n in range(11)]
    scopes = [Scope(f, ("*.md",) if n in (1, 9) else ("*.txt",)) for n, f in enumerate(folders)]
    note = folders[-1] + "/n.md"
    assert reasons(decide_scoped(repo, [note], scopes)) == {note: "config: *.md (in a/b/.vivary/memory.toml)"}


def test_a_path_that_is_no_string_is_refused_by_its_value(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    with pytest.raises(PrivacyError) as err:
        decide(repo, ["a.md", b"b.md"])  # type: ignore[list-item]
    assert str(err.value) == "not a repository-relative path: b'b.md'; paths are strings"



def test_bad_paths_are_refused_even_when_every_kind_of_fault_is_in_one_batch(tmp_path: Path) -> None:
    repo = init(tmp_path / "r")
    with pytest.raises(PrivacyError, match="not a repository-relative path: 'a//b'"):
        decide(repo, ["a//b", "", "c/", "/d"])
