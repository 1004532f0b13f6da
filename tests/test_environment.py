"""The environment a command runs in, rather than the notes it reads: closed standard streams, a `.git/vivary` this
user may not look into or write, a repository another user owns. Each gets a clear message and its exit code, never
a traceback, through the CLI as a real process on real Git.

Permissions stop no one running as root, as the suite does here and in CI: there the command runs as root without
its capabilities (`setpriv --bounding-set=-all`), which the file modes stop as they stop any user."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Repo

from vivary_git.memory.local.embed import embedder_status

needs_embed = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None, reason="needs the [embed] extra"
)

MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
NOTES = {"a.md": "---\ntitle: A\n---\nSee [[b]].\n", "b.md": "# B\n\nThe vault stores secrets.\n"}


def _unprivileged() -> list[str]:
    """What runs a command so that file modes stop it: nothing for a user, `setpriv` dropping every capability
    for root."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root, and no setpriv to drop the capabilities that ignore file modes")
    return [setpriv, "--bounding-set=-all", "--inh-caps=-all"]


def _vivary(cwd: Path, *args: str, shell: str = "", unprivileged: bool = False,
            env: dict[str, str] | None = None, umask: int | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m vivary_git ARGS` in `cwd`; `shell`, redirections for a shell to apply first (`>&-`); `env`, what
    to set on top of this process's environment; `umask`, the one to run it under."""
    command = [*(_unprivileged() if unprivileged else []), sys.executable, "-m", "vivary_git", *args]
    if shell or umask is not None:
        first = f"umask {umask:04o} && " if umask is not None else ""
        command = ["sh", "-c", f'{first}exec "$@" {shell}', "sh", *command]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False,
                          env=dict(os.environ, **(env or {})))


def _no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stderr + proc.stdout, proc.stderr[-2000:]


def test_a_closed_stdout_is_no_traceback_and_the_exit_code_still_tells(repo: Repo) -> None:
    """`git vivary check >&-`: Python starts with `sys.stdout = None`, and every command ended in an AttributeError
    traceback (exit 1 whatever the verdict). As Git does, the closed descriptor is /dev/null's."""
    repo.commit("notes", NOTES)
    clean = _vivary(repo.path, "check", shell=">&-")
    _no_traceback(clean)
    assert clean.returncode == 0, clean.stderr
    repo.commit("broken", {"c.md": "See [[nowhere]].\n"})
    broken = _vivary(repo.path, "check", shell=">&-")
    _no_traceback(broken)
    assert broken.returncode == 1, broken.stderr


def test_a_closed_stderr_keeps_warnings_out_of_the_json_and_the_exit_code_right(repo: Repo) -> None:
    """`git vivary graph --json 2>&-`: with `sys.stderr = None`, `print(..., file=sys.stderr)` printed to stdout, so
    a warning (here: a file in the place of the graph cache's folder) came first in the JSON; and the command
    exited 1, a failing check's code, after a clean run, when flushing the missing stream raised."""
    repo.commit("notes", NOTES)
    (repo.path / ".git" / "vivary").mkdir()
    (repo.path / ".git" / "vivary" / "graph-v34").write_text("not a folder\n")
    proc = _vivary(repo.path, "graph", "--json", "--rev", "HEAD", shell="2>&-")
    assert proc.returncode == 0, proc.stdout[:500]
    graph = json.loads(proc.stdout)
    assert {n["id"] for n in graph["nodes"]} == {"a", "b"}
    clean = _vivary(repo.path, "check", "--rev", "HEAD", shell="2>&- <&-")
    assert clean.returncode == 0, clean.stdout


def test_a_closed_stdin_reads_as_empty(repo: Repo) -> None:
    """`privacy explain --stdin <&-` and `recall --queries - <&-` read `sys.stdin.buffer` of a `sys.stdin` that was
    None: an AttributeError traceback. A closed stdin is /dev/null's, so they read nothing, as from `</dev/null`."""
    repo.commit("notes", NOTES)
    proc = _vivary(repo.path, "privacy", "explain", "--stdin", "--json", shell="<&-")
    _no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _vivary(repo.path, "privacy", "explain", "--stdin", "--json", shell="</dev/null").stdout


def test_a_git_vivary_folder_no_one_may_look_into_leaves_the_caches_off_saying_so_once(repo: Repo) -> None:
    """A `.git/vivary` of mode 000 (what a run under `umask 0777` leaves): `exists()` on each cache folder raised
    PermissionError, a traceback for check, graph, find and privacy alike. The caches are left off, said once."""
    repo.commit("notes", NOTES)
    vivary = repo.path / ".git" / "vivary"
    vivary.mkdir()
    vivary.chmod(0)
    try:
        for args in (["check"], ["graph", "--json"], ["find", "vault"], ["privacy", "explain", "a.md"]):
            proc = _vivary(repo.path, *args, unprivileged=True)
            _no_traceback(proc)
            assert proc.returncode == 0, (args, proc.stderr)
            said = f"vivary: cannot look into {vivary} (Permission denied); make it readable and searchable"
            assert proc.stderr.count(said) == 1 and proc.stderr.count("\n") == 1, (args, proc.stderr)
    finally:
        vivary.chmod(0o755)


def test_a_read_only_git_vivary_says_once_that_the_caches_are_off(repo: Repo) -> None:
    """Every cache kind (parse, facts, graph, checks, ...) said on its own line that it could not be written: six
    lines for one `check` of a read-only `.git/vivary`, where one reason stops them all."""
    repo.commit("notes", NOTES)
    vivary = repo.path / ".git" / "vivary"
    vivary.mkdir()
    vivary.chmod(0o555)
    try:
        proc = _vivary(repo.path, "check", "--rev", "HEAD", unprivileged=True)
        _no_traceback(proc)
        assert proc.returncode == 0, proc.stderr
        lines = [line for line in proc.stderr.splitlines() if "could not write the cache" in line]
        assert len(lines) == 1 and "(Permission denied); continuing without it" in lines[0], proc.stderr
    finally:
        vivary.chmod(0o755)


@needs_embed
def test_a_memory_index_no_one_may_read_or_write_is_named_with_its_fix(repo: Repo) -> None:
    """A `.git/vivary` this user may not look into made `recall` say there was no index yet (exit 3, "run `git
    vivary index --yes`"), `doctor` end in a traceback, and a read-only one made `index --yes` blame "a file in the
    place of a folder". Each now names the folder, what stops it and the fix."""
    repo.commit("notes", {**NOTES, ".vivary/memory.toml": MEMORY})
    built = _vivary(repo.path, "index", "--yes")
    assert built.returncode == 0, built.stderr
    vivary = repo.path / ".git" / "vivary"
    vivary.chmod(0)
    try:
        for args in (["recall", "vault"], ["index", "--yes"]):
            proc = _vivary(repo.path, *args, unprivileged=True)
            _no_traceback(proc)
            assert proc.returncode == 2, (args, proc.stderr)
            assert f"cannot look into {vivary} (Permission denied); make it readable and searchable" in \
                proc.stderr.splitlines()[-1], (args, proc.stderr)
        doctor = _vivary(repo.path, "doctor", "--json", unprivileged=True)
        _no_traceback(doctor)
        memory = json.loads(doctor.stdout)["memory"]
        assert memory["status"] == "misconfigured" and f"cannot look into {vivary}" in memory["detail"], memory
    finally:
        vivary.chmod(0o755)
    shutil.rmtree(vivary / "memory")
    (vivary / "memory").mkdir(mode=0o555)
    try:
        proc = _vivary(repo.path, "index", "--yes", unprivileged=True)
        _no_traceback(proc)
        assert proc.returncode == 2, proc.stderr
        last = proc.stderr.splitlines()[-1]
        assert "(Permission denied): this user may not write there: make it writable" in last, proc.stderr
        assert "a file may be in the place of a folder" not in last
    finally:
        (vivary / "memory").chmod(0o755)


def test_doctor_in_a_repository_another_user_owns_names_safe_directory(repo: Repo) -> None:
    """Git (and libgit2) refuse a repository another user owns. `doctor` said the folder was "not inside a Git work
    tree" and offered `git vivary init`; every other command said "check it with `git status`". Both now name the
    owner check and Git's own fix."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to give the repository to another user")
    repo.commit("notes", NOTES)
    for folder, _, files in os.walk(repo.path):
        for name in [folder, *(os.path.join(folder, f) for f in files)]:
            os.chown(name, 65534, 65534, follow_symlinks=False)
    fix = f"if you trust it, run `git config --global --add safe.directory {repo.path}`"
    doctor = _vivary(repo.path, "doctor")
    _no_traceback(doctor)
    assert doctor.returncode == 1
    assert "not inside a Git work tree" not in doctor.stdout and "git vivary init" not in doctor.stdout
    assert "Git refuses such a repository" in doctor.stdout and fix in doctor.stdout, doctor.stdout
    check = _vivary(repo.path, "check")
    _no_traceback(check)
    assert check.returncode == 2 and fix in check.stderr, check.stderr


def test_a_current_folder_since_removed_is_a_usage_error_not_a_traceback(repo: Repo) -> None:
    """A shell left in a folder that was then removed (a `git checkout` of a branch without it, say): every command
    ended in a FileNotFoundError traceback from `os.getcwd()`. Git says "Unable to read current working directory";
    so does vivary, exit 2, naming the way out; with an absolute `-C` it runs there."""
    repo.commit("notes", NOTES)
    gone = repo.path / "gone"
    gone.mkdir()
    for args in (["check"], ["graph", "--json"], ["doctor"], ["hooks", "status"], ["sync", "fetch"]):
        proc = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
                               sys.executable, "-m", "vivary_git", *args], capture_output=True, text=True, check=False)
        _no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr == (f"git vivary {args[0]}: cannot read the current folder (No such file or directory): it "
                               "was removed, or a folder above it may not be looked into; cd to a folder that exists, "
                               "or name one with -C PATH\n"), proc.stderr
        gone.mkdir()
    proc = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", str(gone),
                           sys.executable, "-m", "vivary_git", "check", "-C", str(repo.path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "2 document(s), 0 error(s)" in proc.stdout, proc.stdout + proc.stderr


def test_git_refusing_for_a_broken_user_config_is_said_on_one_readable_line(repo: Repo, tmp_path: Path) -> None:
    """A `~/.gitconfig` that is a folder (or has a bad line, or GIT_CONFIG_COUNT without its key): Git's refusal came
    through as one line of escaped `\\n`s with its warning twice. Its lines are now joined, each once."""
    repo.commit("notes", NOTES)
    home = tmp_path / "odd-home"
    (home / ".gitconfig").mkdir(parents=True)
    proc = _vivary(repo.path, "check", env={"HOME": str(home)})
    _no_traceback(proc)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == (
        f"git vivary check: `git rev-parse --git-path index` failed: warning: unable to access '{home}/.gitconfig': "
        "Is a directory; fatal: unknown error occurred while reading the configuration files\n"), proc.stderr
    counted = _vivary(repo.path, "check", env={"GIT_CONFIG_COUNT": "1"})
    assert counted.returncode == 2 and counted.stderr.endswith(
        "failed: error: missing config key GIT_CONFIG_KEY_0; fatal: unable to parse command-line config\n"), \
        counted.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full, a device every write to fails")
def test_output_to_a_full_disk_is_said_with_exit_2_not_a_traceback(repo: Repo) -> None:
    """`git vivary check --json > check.json` on a full disk (here /dev/full): an OSError traceback and exit 1, which
    a CI script reads as "findings". The output is cut short, so the command says so and exits 2."""
    repo.commit("notes", NOTES)
    for args in (["check"], ["check", "--json"], ["graph", "--json"], ["doctor"], ["hooks", "status"]):
        proc = _vivary(repo.path, *args, shell=">/dev/full")
        _no_traceback(proc)
        assert proc.returncode == 2, (args, proc.stderr)
        assert proc.stderr.endswith(f"git vivary {args[0]}: could not write the output (No space left on device), so "
                                    "it is cut short; free some space, or send it elsewhere, and run the command "
                                    "again\n"), (args, proc.stderr)
    quiet = _vivary(repo.path, "graph", "--json", shell="2>/dev/full")  # nothing to say there: the answer stands
    assert quiet.returncode == 0 and json.loads(quiet.stdout)["nodes"], quiet.stdout[:300]


def test_a_run_under_umask_0777_leaves_no_folder_behind(repo: Repo, tmp_path: Path) -> None:
    """Under `umask 0777` every folder is made mode 000, so the working tree's snapshot has nowhere to copy the index
    (exit 2, naming both places). Before, each run left its mode-000 `vivary-index-*` folder in the temporary
    directory (rmtree cannot list it), and `.git/vivary` mode 000 (the removal stopped at the `tmp/` it never made),
    which then stood in the way of every later run whatever its umask."""
    repo.commit("notes", NOTES)
    temp = tmp_path / "temp"
    temp.mkdir()
    proc = _vivary(repo.path, "check", unprivileged=True, env={"TMPDIR": str(temp)}, umask=0o777)
    _no_traceback(proc)
    assert proc.returncode == 2 and "cannot read the working tree: its snapshot needs a copy of the index" in \
        proc.stderr, proc.stderr
    assert list(temp.iterdir()) == []
    assert not (repo.path / ".git" / "vivary").exists()


def test_a_root_name_longer_than_the_system_allows_is_no_folder(repo: Repo, tmp_path: Path) -> None:
    """`--root` with a name over 255 bytes: `Path.is_dir()` raised ENAMETOOLONG (it swallows only "not there"),
    a traceback for every command that takes --root, inside a repository and outside one. It is no such folder."""
    repo.commit("notes", NOTES)
    long = "a" * 300
    outside = tmp_path / "plain"
    outside.mkdir()
    for cwd, commands in ((repo.path, (["check"], ["graph", "--json"], ["doctor"], ["check", "--staged"])),
                          (outside, (["check"], ["graph", "--json"]))):
        for args in commands:
            proc = _vivary(cwd, *args, "--root", long)
            _no_traceback(proc)
            assert proc.returncode == 2, (args, proc.stderr)
            assert proc.stderr.endswith(f"--root {long}: no such directory\n"), (args, proc.stderr[-300:])


def test_hooks_install_in_a_read_only_hooks_folder_changes_nothing(repo: Repo) -> None:
    """`hooks install` where `.git/hooks` cannot be written: the user's own pre-commit was moved aside to
    `pre-commit.local`, then writing vivary's script failed with a PermissionError traceback, leaving the repository
    with no pre-commit hook at all. It now refuses first (exit 3), naming the folder, and nothing moves."""
    repo.commit("notes", NOTES)
    hooks = repo.path / ".git" / "hooks"
    mine = "#!/bin/sh\necho mine\n"
    (hooks / "pre-commit").write_text(mine)
    (hooks / "pre-commit").chmod(0o755)
    hooks.chmod(0o555)
    try:
        proc = _vivary(repo.path, "hooks", "install", unprivileged=True)
        _no_traceback(proc)
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr == (f"git vivary hooks: {hooks}: cannot write Git's hooks there (Permission denied); "
                               "nothing was changed: make it writable (or run this as the user who owns the "
                               "repository), then run this again\n"), proc.stderr
        assert (hooks / "pre-commit").read_text() == mine and not (hooks / "pre-commit.local").exists()
    finally:
        hooks.chmod(0o755)


def test_a_vivary_jobs_that_is_a_digit_only_to_unicode_is_ignored(repo: Repo) -> None:
    """`VIVARY_JOBS=²`: `str.isdigit()` says yes, `int()` says no, so every command that parsed notes ended in a
    ValueError traceback. A value that is no whole number is ignored, as `VIVARY_JOBS=abc` always was."""
    repo.commit("notes", NOTES)
    for value in ("²", "abc"):
        proc = _vivary(repo.path, "check", "--no-cache", env={"VIVARY_JOBS": value})
        _no_traceback(proc)
        assert proc.returncode == 0 and "2 document(s), 0 error(s)" in proc.stdout, (value, proc.stderr)
