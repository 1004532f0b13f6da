from __future__ import annotations

import contextlib
import os
import stat
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from vivary_git import checkignore
from vivary_git.errors import PrivacyError, RefusedError
from vivary_git.privacy import (
    FLOOR,
    PrivacyDecision,
    PrivacyPolicy,
    check_snapshot_files,
    decide,
)

CASES_DIR = Path(__file__).parent / "privacy_cases"
DEEP_REASON = "ignored by Git (rule not named for paths over 20 directories deep)"


@pytest.fixture(autouse=True)
def isolated_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The developer's own ~/.gitconfig or ~/.config/git/ignore must not change any answer.
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_GLOBAL"):
        monkeypatch.delenv(name, raising=False)
    for key, value in {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }.items():
        monkeypatch.setenv(key, value)


def git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True)


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--quiet", "--initial-branch=main")
    return path


def write(root: Path, rel: str, content: str | bytes = b"") -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)


def commit_all(repo: Path, message: str = "c") -> None:
    # ignoreCase off while adding: a case may hold names that differ only in case.
    git(repo, "-c", "core.ignoreCase=false", "add", "--all", "--force", ".")
    git(repo, "commit", "--quiet", "--allow-empty", "-m", message)


# --- the differential corpus --------------------------------------------------------------------------


def load_cases() -> Iterator[Any]:
    for file in sorted(CASES_DIR.glob("*.toml")):
        with file.open("rb") as fh:
            for case in tomllib.load(fh)["case"]:
                yield pytest.param(case, id=f"{file.stem}: {case['name']}")


CASES = list(load_cases())


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 60


def build_case(tmp_path: Path, case: dict[str, Any]) -> Path:
    repo = init_repo(tmp_path / "repo")
    if "ignorecase" in case:
        git(repo, "config", "core.ignoreCase", str(case["ignorecase"]).lower())
    for rel, content in case.get("files", {}).items():
        write(repo, rel, content)
    for rel, target in case.get("symlinks", {}).items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, repo / rel)
    if "exclude" in case:
        write(repo, ".git/info/exclude", case["exclude"])
    if "excludes_file" in case:
        write(tmp_path, "excludes", case["excludes_file"])
        git(repo, "config", "core.excludesFile", str(tmp_path / "excludes"))
    if "xdg_ignore" in case:
        write(Path(os.environ["XDG_CONFIG_HOME"]), "git/ignore", case["xdg_ignore"])
    for rel in case["paths"]:
        if not (repo / rel).exists():
            # A leading component may be a file; Git decides on the name alone.
            with contextlib.suppress(OSError):
                write(repo, rel)
    return repo


_C_ESCAPES = {b"a": 7, b"b": 8, b"t": 9, b"n": 10, b"v": 11, b"f": 12, b"r": 13, b'"': 34, b"\\": 92}


def unquote_c(text: bytes) -> tuple[bytes, bytes]:
    """Undo Git's C-style quoting of a leading `"..."` field; return (value, rest)."""
    if not text.startswith(b'"'):
        return b"", text
    value, i = bytearray(), 1
    while text[i : i + 1] != b'"':
        if text[i : i + 1] == b"\\":
            nxt = text[i + 1 : i + 2]
            if nxt.isdigit():
                value.append(int(text[i + 1 : i + 4], 8))
                i += 4
            else:
                value.append(_C_ESCAPES[nxt])
                i += 2
        else:
            value += text[i : i + 1]
            i += 1
    return bytes(value), text[i + 1 :]


def oracle(repo: Path, path: str) -> str:
    """Plain Git, one path per process, as an argument: the matching rule, or "" when not ignored."""
    # Only a leading `:` needs `./`: Git would read it as pathspec magic.
    arg = "./" + path if path.startswith(":") else path
    quiet = subprocess.run(["git", "check-ignore", "--no-index", "--", arg], cwd=repo, capture_output=True)
    assert quiet.returncode in (0, 1), quiet.stderr
    if quiet.returncode == 1:
        return ""
    if path.count("/") > 20:
        return DEEP_REASON
    # `-v` is asked only now: with -v Git exits 0 for a `!` match too, so it cannot give the verdict.
    # Without -z (which Git allows only with --stdin) the line is `SOURCE:LINE:PATTERN<TAB>PATH`, the
    # source and path C-quoted when unusual, the pattern raw (it may hold a tab).
    verbose = subprocess.run(
        ["git", "check-ignore", "--no-index", "-v", "--", arg], cwd=repo, capture_output=True, check=True
    )
    line_out = verbose.stdout.removesuffix(b"\n")
    rule, _, _quoted_path = line_out.rpartition(b"\t")
    source, rest = unquote_c(rule)
    if not rule.startswith(b'"'):
        source, _, rest = rule.partition(b":")
        rest = b":" + rest
    lineno, _, pattern = rest[1:].partition(b":")
    src = os.fsdecode(source)
    if os.path.isabs(src) and Path(src).is_relative_to(repo):
        src = Path(src).relative_to(repo).as_posix()
    return f"{src}:{lineno.decode()}:{os.fsdecode(pattern)}"


def assert_agrees(decisions: list[PrivacyDecision], expected: dict[str, str], paths: list[str]) -> None:
    assert [d.path for d in decisions] == paths
    for d in decisions:
        assert not d.reason.startswith(("floor:", "sensitive name:", "config:")), (
            f"corpus path {d.path!r} is decided by {d.reason!r}, not by Git's rules; rename it"
        )
    got = {d.path: d.reason for d in decisions}
    assert got == expected
    assert all(d.private == bool(d.reason) for d in decisions)


@pytest.mark.parametrize("case", CASES)
def test_decide_agrees_with_git(tmp_path: Path, case: dict[str, Any]) -> None:
    repo = build_case(tmp_path, case)
    paths: list[str] = case["paths"]
    expected = {p: oracle(repo, p) for p in paths}
    if "ignored" in case:
        assert sorted(p for p, r in expected.items() if r) == sorted(case["ignored"]), "oracle mismatch"

    assert_agrees(decide(repo, paths), expected, paths)

    # The same tree, committed, must get the same answers from its own .gitignore files even when the
    # working tree's ones say something else entirely.
    commit_all(repo)
    for ignore_file in [*repo.rglob(".gitignore")]:
        if ".git" not in ignore_file.relative_to(repo).parts:
            ignore_file.unlink()
    write(repo, ".gitignore", "*\n!*/\n")
    assert_agrees(decide(repo, paths, tree="HEAD"), expected, paths)


# --- canaries: every kind of private file -------------------------------------------------------------


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    repo = init_repo(tmp_path / "ws")
    write(repo, ".gitignore", "*.log\ndrafts-local/\n")
    write(repo, "notes/.gitignore", "scratch-*.md\n")
    write(repo, ".git/info/exclude", "*.swp\n")
    write(tmp_path, "global-ignore", "*.orig\n")
    git(repo, "config", "core.excludesFile", str(tmp_path / "global-ignore"))
    write(repo, "forced.log", "x")
    git(repo, "add", "--force", "forced.log")
    write(repo, "notes/idea.md", "# idea")
    commit_all(repo)
    return repo


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("USER.md", "floor: USER.md"),
        ("people/USER.md", "floor: USER.md"),
        ("MEMORY.md", "floor: MEMORY.md"),
        ("memory/2024-01-01.md", "floor: memory/**"),
        ("memory/deep/x.md", "floor: memory/**"),
        ("heartbeat-reports/r.md", "floor: heartbeat-reports/**"),
        (".strato/private/p.md", "floor: .strato/private/**"),
        (".vivary/memory.toml", "floor: .vivary/**"),
        (".git/config", "floor: .git/**"),
        ("drafts/plan.md", "config: drafts/**"),
        ("notes/scratch-1.md", "notes/.gitignore:1:scratch-*.md"),
        ("a.swp", ".git/info/exclude:1:*.swp"),
        ("forced.log", ".gitignore:1:*.log"),
        ("drafts-local/x.md", ".gitignore:2:drafts-local/"),
        (".env", "sensitive name: .env*"),
        ("config/.env.production", "sensitive name: .env*"),
        ("certs/server.pem", "sensitive name: *.pem"),
        ("certs.pem/readme.md", "sensitive name: *.pem"),  # a folder's name taints what is in it
        ("ssh/id.KEY", "sensitive name: *.key"),
        (".ssh/id_rsa", "sensitive name: id_rsa*"),
        ("home/.netrc", "sensitive name: .netrc"),
        ("notes/Secrets.md", "sensitive name: secrets.*"),
        (".aws/credentials", "sensitive name: credentials"),
        ("apikey.txt", "sensitive name: apikey.*"),
        ("API-Key.md", "sensitive name: api-key.*"),
        ("secrets/notes.md", "sensitive name: secrets"),
        ("passwords.kdbx", "sensitive name: passwords.*"),
        ("etc/PASSWD", "sensitive name: passwd"),
        # A word inside a longer title is not a sensitive name.
        ("notes/github-token.md", ""),
        ("aws-credentials.md", ""),
        ("my_api_key.md", ""),
        ("wifi-password.md", ""),
        ("plugins/ring-a-secretary.md", ""),
        ("USER.markdown", "floor: USER.markdown"),
        ("notes/MEMORY.markdown", "floor: MEMORY.markdown"),
        ("notes/idea.md", ""),
        ("README.md", ""),
        ("memory.md", ""),
        ("notes/memory/x.md", ""),
        ("monkey.md", ""),
    ],
)
def test_canary(workspace: Path, path: str, reason: str) -> None:
    policy = PrivacyPolicy(private_paths=("drafts/**",))
    [decision] = decide(workspace, [path], policy)
    assert (decision.path, decision.private, decision.reason) == (path, bool(reason), reason)


def test_excludes_file_canary(workspace: Path, tmp_path: Path) -> None:
    [decision] = decide(workspace, ["x.orig"])
    assert decision.private
    assert decision.reason == f"{tmp_path / 'global-ignore'}:1:*.orig"


def test_floor_is_listed_in_contract_order() -> None:
    assert FLOOR == (
        "USER.md",
        "MEMORY.md",
        "USER.markdown",
        "MEMORY.markdown",
        "memory/**",
        "heartbeat-reports/**",
        ".strato/private/**",
        ".vivary/**",
        ".git/**",
    )


def test_reason_order_floor_then_config_then_gitignore_then_sensitive(workspace: Path) -> None:
    write(workspace, ".gitignore", "*.log\nUSER.md\nnotes/\n*.pem\n")
    policy = PrivacyPolicy(private_paths=("notes/**",))
    got = {d.path: d.reason for d in decide(workspace, ["USER.md", "notes/a.md", "x.pem", "notes/USER.md"], policy)}
    assert got == {
        "USER.md": "floor: USER.md",
        "notes/a.md": "config: notes/**",
        "x.pem": ".gitignore:4:*.pem",
        "notes/USER.md": "floor: USER.md",
    }


def test_config_negation_cannot_reopen_the_floor(workspace: Path) -> None:
    policy = PrivacyPolicy(private_paths=("drafts/*", "!drafts/ok.md", "!memory/**", "!USER.md"))
    got = {d.path: d.reason for d in decide(workspace, ["drafts/a.md", "drafts/ok.md", "memory/x", "USER.md"], policy)}
    assert got == {
        "drafts/a.md": "config: drafts/*",
        "drafts/ok.md": "",
        "memory/x": "floor: memory/**",
        "USER.md": "floor: USER.md",
    }


def test_gitignore_negation_cannot_reopen_floor_or_sensitive(workspace: Path) -> None:
    write(workspace, ".gitignore", "!USER.md\n!*.pem\n")
    got = {d.path: d.private for d in decide(workspace, ["USER.md", "a.pem"])}
    assert got == {"USER.md": True, "a.pem": True}


def test_floor_follows_core_ignorecase(workspace: Path) -> None:
    paths = ["user.md", "Memory/x.md", "docs/Memory.MD"]
    assert [d.private for d in decide(workspace, paths)] == [False, False, False]
    git(workspace, "config", "core.ignoreCase", "true")
    assert [d.reason for d in decide(workspace, paths)] == [
        "floor: USER.md",
        "floor: memory/**",
        "floor: MEMORY.md",
    ]


def test_respect_gitignore_false_skips_git_rules_only(workspace: Path) -> None:
    policy = PrivacyPolicy(respect_gitignore=False)
    got = {d.path: d.reason for d in decide(workspace, ["forced.log", "USER.md", "a.pem"], policy)}
    assert got == {"forced.log": "", "USER.md": "floor: USER.md", "a.pem": "sensitive name: *.pem"}


def test_input_order_and_duplicates_are_kept(workspace: Path) -> None:
    paths = ["z.md", "a.log", "m/USER.md", "a.log", "b.md", "z.md"]
    decisions = decide(workspace, paths)
    assert [d.path for d in decisions] == paths
    assert [d.private for d in decisions] == [False, True, True, True, False, False]


def test_empty_input_needs_no_git(tmp_path: Path) -> None:
    assert decide(tmp_path / "nowhere", []) == []


def test_many_paths_in_one_batch(workspace: Path) -> None:
    paths = [f"d{i % 50}/n{i}.{'log' if i % 7 == 0 else 'md'}" for i in range(20_000)]
    decisions = decide(workspace, paths)
    assert [d.private for d in decisions] == [p.endswith(".log") for p in paths]


def test_hook_environment_does_not_redirect_git(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = init_repo(tmp_path / "other")
    write(other, ".gitignore", "*\n")
    monkeypatch.setenv("GIT_DIR", str(other / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    monkeypatch.setenv("GIT_INDEX_FILE", str(other / ".git" / "index"))
    monkeypatch.setenv("GIT_ICASE_PATHSPECS", "1")
    assert [d.private for d in decide(workspace, ["a.md", "a.log"])] == [False, True]


def test_git_config_parameters_from_the_caller_apply(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `git -c core.excludesFile=... vivary ...` passes its -c through GIT_CONFIG_PARAMETERS.
    write(workspace, "../cli-ignore", "*.cli\n")
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", f"'core.excludesfile={workspace.parent / 'cli-ignore'}'")
    assert decide(workspace, ["a.cli"])[0].private


def test_linked_worktree_uses_the_common_info_exclude(workspace: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    git(workspace, "worktree", "add", "--quiet", str(linked))
    got = {d.path: d.reason for d in decide(linked, ["a.swp", "b.log", "c.md"])}
    assert got["a.swp"] == f"{workspace / '.git' / 'info' / 'exclude'}:1:*.swp"
    assert got["b.log"] == ".gitignore:1:*.log"
    assert got["c.md"] == ""
    assert decide(linked, ["a.swp"], tree="HEAD")[0].private


# --- tree= uses that tree's own .gitignore files -------------------------------------------------------


def test_tree_uses_its_own_gitignore_not_the_working_trees(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    write(repo, ".gitignore", "*.log\n")
    write(repo, "sub/.gitignore", "!keep.log\n")
    commit_all(repo, "old rules")
    old = git(repo, "rev-parse", "HEAD").stdout.decode().strip()
    old_tree = git(repo, "rev-parse", "HEAD^{tree}").stdout.decode().strip()
    write(repo, ".gitignore", "*.tmp\n")
    (repo / "sub" / ".gitignore").unlink()
    paths = ["a.log", "b.tmp", "sub/keep.log", "sub/x.log", "c.md"]

    worktree = {d.path: d.reason for d in decide(repo, paths)}
    assert worktree == {
        "a.log": "",
        "b.tmp": ".gitignore:1:*.tmp",
        "sub/keep.log": "",
        "sub/x.log": "",
        "c.md": "",
    }
    for rev in (old, old_tree, "HEAD", "main"):
        in_tree = {d.path: d.reason for d in decide(repo, paths, tree=rev)}
        assert in_tree == {
            "a.log": ".gitignore:1:*.log",
            "b.tmp": "",
            "sub/keep.log": "",
            "sub/x.log": ".gitignore:1:*.log",
            "c.md": "",
        }


def test_tree_mode_keeps_info_exclude_and_excludes_file(workspace: Path, tmp_path: Path) -> None:
    got = {d.path: d.private for d in decide(workspace, ["a.swp", "a.orig", "a.md"], tree="HEAD")}
    assert got == {"a.swp": True, "a.orig": True, "a.md": False}


def test_tree_mode_resolves_a_relative_excludes_file_against_the_top(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    write(repo, "rules/ignore", "*.rel\n")
    git(repo, "config", "core.excludesFile", "rules/ignore")
    commit_all(repo)
    assert decide(repo, ["a.rel"])[0].private
    assert decide(repo, ["a.rel"], tree="HEAD")[0].private


def test_tree_mode_ignores_a_symlinked_gitignore_in_the_tree(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "r")
    write(repo, "rules", "*.md\n")
    os.symlink("rules", repo / ".gitignore")
    commit_all(repo)
    mode = git(repo, "ls-tree", "HEAD", ".gitignore").stdout.split()[0]
    assert mode == b"120000"
    assert not decide(repo, ["a.md"], tree="HEAD")[0].private
    assert not decide(repo, ["a.md"])[0].private


def test_bad_tree_fails_closed(workspace: Path) -> None:
    for bad in ("no-such-branch", "0" * 40, "HEAD:notes/idea.md"):
        with pytest.raises(PrivacyError):
            decide(workspace, ["a.md"], tree=bad)


# --- fails closed --------------------------------------------------------------------------------------


def test_privacy_error_is_a_refusal() -> None:
    assert issubclass(PrivacyError, RefusedError)


def test_bare_repository_fails_closed(tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "init", "--quiet", "--bare", str(bare))
    with pytest.raises(PrivacyError, match="bare repository"):
        decide(bare, ["a.md"])


def test_not_a_repository_fails_closed(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(PrivacyError, match="not a Git work tree"):
        decide(tmp_path / "plain", ["a.md"])


def test_missing_directory_fails_closed(tmp_path: Path) -> None:
    with pytest.raises(PrivacyError):
        decide(tmp_path / "missing", ["a.md"])


def test_subdirectory_is_refused(workspace: Path) -> None:
    with pytest.raises(PrivacyError, match="top of the work tree"):
        decide(workspace / "notes", ["a.md"])


def test_git_not_on_path_fails_closed(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(PrivacyError, match="not on PATH"):
        decide(workspace, ["a.md"])


def test_path_beyond_a_symlink_fails_closed(workspace: Path) -> None:
    os.symlink("notes", workspace / "linked")
    with pytest.raises(PrivacyError, match="beyond a symbolic link"):
        decide(workspace, ["a.md", "linked/idea.md"])


def test_unreadable_gitignore_fails_closed(unreadable_files: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    workspace = init_repo(unreadable_files.base / "ws")
    write(workspace, "notes/.gitignore", "scratch-*.md\n")
    write(workspace, "notes/idea.md", "# idea")
    commit_all(workspace)
    monkeypatch.setenv("PATH", unreadable_files.path)  # as root: Git reads the ignore files as `nobody`
    assert decide(workspace, ["notes/scratch-1.md"])[0].private  # readable: decided
    ignore = workspace / "notes" / ".gitignore"
    ignore.chmod(0)
    try:
        with pytest.raises(PrivacyError, match=r"could not use every ignore rule: warning: unable to access "
                                               r"'notes/\.gitignore': Permission denied"):
            decide(workspace, ["notes/scratch-1.md"])
    finally:
        ignore.chmod(0o644)


def test_gitignore_directory_counts_as_no_rules_as_in_git(workspace: Path) -> None:
    # Git reads nothing from a `.gitignore` that is a directory, and says nothing about it.
    (workspace / "notes" / ".gitignore").unlink()
    (workspace / "notes" / ".gitignore").mkdir()
    assert oracle(workspace, "notes/scratch-1.md") == ""
    assert not decide(workspace, ["notes/scratch-1.md"])[0].private


def test_deep_paths_do_not_crash_git(tmp_path: Path) -> None:
    # git check-ignore -v (2.39) reads freed memory once a path is below 24 directories: it crashed
    # or named garbage rules for that path and all later ones in the batch.
    repo = init_repo(tmp_path / "r")
    write(repo, ".gitignore", "*.log\nz*/\n")
    deep = "/".join(["d"] * 30)
    paths = [
        f"{deep}/a.log",
        f"{deep}/a.md",
        "a/zeta/b.md",
        "a/b.log",
        "c.md",
        f"{deep}/USER.md",
        f"{deep}/x.pem",
    ]
    got = {d.path: d.reason for d in decide(repo, paths, PrivacyPolicy(private_paths=("**/q/*.md",)))}
    assert got == {
        f"{deep}/a.log": DEEP_REASON,
        f"{deep}/a.md": "",
        "a/zeta/b.md": ".gitignore:2:z*/",
        "a/b.log": ".gitignore:1:*.log",
        "c.md": "",
        f"{deep}/USER.md": "floor: USER.md",
        f"{deep}/x.pem": "sensitive name: *.pem",
    }
    deeper_config = decide(repo, [f"{deep}/q/n.md"], PrivacyPolicy(private_paths=("**/q/*.md",)))[0]
    assert deeper_config.private
    assert deeper_config.reason.startswith("config:")
    commit_all(repo)
    assert decide(repo, paths, tree="HEAD") == decide(repo, paths)


def test_fifo_gitignore_times_out_closed(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Git blocks for ever opening a FIFO named .gitignore.
    monkeypatch.setattr(checkignore, "_TIMEOUT_SECONDS", 2.0)
    (workspace / "notes" / ".gitignore").unlink()
    os.mkfifo(workspace / "notes" / ".gitignore")
    with pytest.raises(PrivacyError, match="no answer"):
        decide(workspace, ["notes/a.md"])


def fake_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check_ignore_script: str) -> None:
    """Put a `git` first on PATH that runs the real one, except for a broken `check-ignore`."""
    real = subprocess.run(["sh", "-c", "command -v git"], capture_output=True, check=True).stdout.decode().strip()
    bindir = tmp_path / "fake-bin"
    bindir.mkdir()
    script = bindir / "git"
    script.write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = check-ignore ] && {\n'
        f"{check_ignore_script}\n"
        "}; done\n"
        f'exec {real} "$@"\n'
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ("cat >/dev/null; exit 0", "does not line up"),
        ("cat >/dev/null; printf '.gitignore\\0001\\000*\\000./nope\\000'; exit 0", "does not line up"),
        ("cat >/dev/null; printf 'x\\000\\000\\000./a.md\\000'; exit 0", "malformed"),
        ("cat >/dev/null; echo 'fatal: boom' >&2; exit 128", "exit code 128"),
        ("cat >/dev/null; exit 2", "exit code 2"),
        (
            "cat >/dev/null; printf '\\000\\000\\000./a.md\\000'; echo 'warning: unable to access x' >&2; exit 1",
            "ignore rule",
        ),
    ],
)
def test_broken_git_output_fails_closed(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, script: str, message: str
) -> None:
    fake_git(tmp_path, monkeypatch, script)
    with pytest.raises(PrivacyError, match=message):
        decide(workspace, ["a.md"])


@pytest.mark.parametrize("bad", ["", "/abs.md", "a//b.md", "a/", "./a.md", "a/../b.md", "..", "a/./b", "nul\0.md"])
def test_malformed_paths_are_refused(workspace: Path, bad: str) -> None:
    for paths in (["ok.md", bad, "fine.md"], [bad, "ok.md"], ["ok.md", bad], [bad]):
        with pytest.raises(PrivacyError, match="not a repository-relative path"):
            decide(workspace, paths)


@pytest.mark.parametrize("good", ["...", ".a", "a..b", "a/.../b", "..md", ".x/y"])
def test_dotty_but_valid_paths_are_accepted(workspace: Path, good: str) -> None:
    assert decide(workspace, [good])[0].path == good


def test_private_path_with_a_line_break_is_refused(workspace: Path) -> None:
    with pytest.raises(PrivacyError, match="line break"):
        decide(workspace, ["a.md"], PrivacyPolicy(private_paths=("a\nb",)))


# --- check_snapshot_files -----------------------------------------------------------------------------


@pytest.fixture()
def snapshot_root(tmp_path: Path) -> Path:
    root = tmp_path / "snap"
    write(root, "a.md", "a")
    write(root, "d/b.md", "b")
    write(tmp_path, "outside.md", "secret stuff")
    return root


def test_snapshot_files_accepts_plain_files(snapshot_root: Path) -> None:
    check_snapshot_files(snapshot_root, ["a.md", "d/b.md"])


def test_snapshot_files_refuses_a_symlinked_file(snapshot_root: Path) -> None:
    os.symlink("../outside.md", snapshot_root / "link.md")
    with pytest.raises(PrivacyError, match=r"'link\.md'.*symbolic link"):
        check_snapshot_files(snapshot_root, ["a.md", "link.md"])


def test_snapshot_files_refuses_a_file_behind_a_symlinked_directory(snapshot_root: Path) -> None:
    os.symlink("d", snapshot_root / "e")
    with pytest.raises(PrivacyError, match="behind the symbolic link 'e'"):
        check_snapshot_files(snapshot_root, ["e/b.md"])


def test_snapshot_files_refuses_a_hard_link(snapshot_root: Path) -> None:
    os.link(snapshot_root.parent / "outside.md", snapshot_root / "hard.md")
    with pytest.raises(PrivacyError, match="hard links"):
        check_snapshot_files(snapshot_root, ["hard.md"])


def test_snapshot_files_refuses_a_missing_file(snapshot_root: Path) -> None:
    with pytest.raises(PrivacyError, match=r"cannot stat 'gone\.md'"):
        check_snapshot_files(snapshot_root, ["gone.md"])


def test_snapshot_files_refuses_a_path_outside_the_root(snapshot_root: Path) -> None:
    with pytest.raises(PrivacyError, match="not a repository-relative path"):
        check_snapshot_files(snapshot_root, ["../outside.md"])


def test_snapshot_files_refuses_a_fifo(snapshot_root: Path) -> None:
    os.mkfifo(snapshot_root / "pipe.md")
    with pytest.raises(PrivacyError, match="not a regular file"):
        check_snapshot_files(snapshot_root, ["pipe.md"])


def test_snapshot_files_refuses_a_file_where_a_directory_should_be(snapshot_root: Path) -> None:
    with pytest.raises(PrivacyError, match="not a directory"):
        check_snapshot_files(snapshot_root, ["a.md/x.md"])


def test_snapshot_root_through_a_symlink_is_resolved(snapshot_root: Path, tmp_path: Path) -> None:
    os.symlink(snapshot_root, tmp_path / "alias")
    check_snapshot_files(tmp_path / "alias", ["a.md", "d/b.md"])


def test_snapshot_files_refuses_a_missing_root(tmp_path: Path) -> None:
    with pytest.raises(PrivacyError, match="cannot resolve"):
        check_snapshot_files(tmp_path / "none", ["a.md"])


def test_a_memo_answers_the_same_question_once_and_never_another(workspace: Path) -> None:
    from vivary_git.privacy import PrivacyMemo, Scope, decide_scoped

    memo = PrivacyMemo()
    paths = ["forced.log", "USER.md", "b.md"]
    first = decide_scoped(workspace, paths, [Scope("")], memo=memo)
    assert [d.private for d in first] == [True, True, False]
    # The same question: the answer Git gave (gitignore=None is True when every workspace respects it).
    (workspace / ".git" / "info" / "exclude").write_text("b.md\n")
    assert decide_scoped(workspace, paths, [Scope("")], gitignore=True, memo=memo) == first
    # Any other question is asked: other rules, other paths, other trees, or ignore rules not applied.
    assert decide_scoped(workspace, paths, [Scope("", ("USER.md",), False)], memo=memo)[0].private is False
    assert [d.private for d in decide_scoped(workspace, paths[::-1], [Scope("")], memo=memo)] == [True, True, True]
    assert [d.private for d in decide_scoped(workspace, paths, [Scope("")], gitignore=False, memo=memo)] \
        == [False, True, False]


def test_a_memo_gives_every_asker_the_error_git_gave(workspace: Path) -> None:
    from vivary_git.errors import PrivacyError
    from vivary_git.privacy import PrivacyMemo, Scope, decide_scoped

    memo = PrivacyMemo()
    for _ in range(2):
        with pytest.raises(PrivacyError, match="line break"):
            decide_scoped(workspace, ["a.md"], [Scope("", ("bad\npattern",))], memo=memo)
