"""The command line's own behaviour: exit codes when the reader of our output goes away, error lines."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo


def _vivary(args: list[str], cwd: Path, stdout: int) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTHONUNBUFFERED", None)  # output buffered as on a user's machine
    return subprocess.run(["git", "vivary", *args], cwd=cwd, stdout=stdout, stderr=subprocess.PIPE, env=env,
                          check=False)


def _findings(repo: Repo, n: int) -> None:
    links = "\n".join(f"[[missing-{i}]]" for i in range(n))
    repo.write({"a.md": f"---\ntitle: A\n---\n{links}\n"})


def _closed_pipe() -> int:
    """The writing end of a pipe whose reader has already left (as after `| head -1`): every write fails."""
    read, write = os.pipe()
    os.close(read)
    return write


def test_check_into_a_pipe_nobody_reads_keeps_its_exit_code(repo: Repo) -> None:
    # A few findings fit in the output buffer: the reader is found gone only when it is flushed, after the
    # verdict is known, and the verdict is the exit code (not Python's 120 for a failed flush at exit).
    _findings(repo, 3)
    w = _closed_pipe()
    try:
        proc = _vivary(["check"], repo.path, w)
    finally:
        os.close(w)
    assert proc.returncode == 1
    assert b"BrokenPipe" not in proc.stderr and b"Exception ignored" not in proc.stderr


def test_check_cut_short_by_the_reader_exits_141_not_0(repo: Repo) -> None:
    # Thousands of findings do not fit: the reader's leaving interrupts the printing. Exit 0 there made
    # `set -o pipefail; git vivary check | head -1` pass a failing check.
    _findings(repo, 3000)
    w = _closed_pipe()
    try:
        proc = _vivary(["check"], repo.path, w)
    finally:
        os.close(w)
    assert proc.returncode == 141
    assert proc.stderr == b""


def test_check_piped_into_head_fails_the_pipeline(repo: Repo) -> None:
    _findings(repo, 3000)
    bindir = str(Path(sys.executable).parent)
    proc = subprocess.run(
        ["bash", "-c", 'set -o pipefail; git vivary check | head -1; echo "status=$?"'],
        cwd=repo.path, capture_output=True, text=True, check=False,
        env=dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", "")),
    )
    assert proc.stdout.splitlines()[0].startswith("a.md:4: error W221")
    assert proc.stdout.splitlines()[-1] == "status=141"


def _module(args: list[str], cwd: Path, code: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """`python -m vivary_git.main ARGS` (the console script's `cli`), or `python -c CODE` with ARGS as argv."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("PYTHONUNBUFFERED", None)
    cmd = [sys.executable, "-c", code, *args] if code is not None else [sys.executable, "-m", "vivary_git.main", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, env=env, check=False)


def test_the_command_line_leaves_fast_with_its_whole_output_and_caches(repo: Repo) -> None:
    # The console script ends with os._exit (vivary_git/lifetime.py): everything buffered must be out by then
    # (3,000 findings is far more than a pipe or stdio buffer holds), and the caches must be on disk.
    _findings(repo, 3000)
    repo.commit()
    proc = _module(["check", "--rev", "HEAD"], repo.path)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.decode().splitlines()
    assert sum("W221" in line for line in lines) == 3000
    assert lines[-1] == "vivary: 1 document(s), 3000 error(s), 0 warning(s) in HEAD", lines[-1]
    again = _module(["check", "--rev", "HEAD", "--json"], repo.path)
    assert again.returncode == 1
    assert len(json.loads(again.stdout)["findings"]) == 3000  # one long line, whole
    assert (repo.path / ".git" / "vivary").is_dir() and any((repo.path / ".git" / "vivary").iterdir())


def test_leaving_runs_exit_handlers_and_waits_for_a_running_thread(repo: Repo, tmp_path: Path) -> None:
    _findings(repo, 1)
    done = tmp_path / "thread-done"
    code = (
        "import atexit, sys, threading, time\n"
        "from vivary_git.main import cli\n"
        "atexit.register(lambda: print('exit handler ran', file=sys.stderr))\n"
        f"def slow():\n    time.sleep(0.5)\n    open({str(done)!r}, 'w').close()\n"
        "threading.Thread(target=slow).start()\n"
        "sys.argv = ['git-vivary', *sys.argv[1:]]\n"
        "cli()\n"
    )
    proc = _module(["check"], repo.path, code)
    assert proc.returncode == 1, proc.stderr
    assert b"exit handler ran" in proc.stderr
    assert done.exists()  # the interpreter waited for the thread that is not a daemon, as a plain exit does
    quick = _module(["check"], repo.path, code.replace("threading.Thread(target=slow).start()\n", ""))
    assert quick.returncode == 1 and b"exit handler ran" in quick.stderr


def test_the_command_line_leaves_without_collecting_what_it_built(repo: Repo) -> None:
    # A command runs with the cycle collector off; turned back on, its first pass would walk every object the
    # command allocated (~0.12 s after a first recall of 10,000 notes) just before `os._exit` frees them all.
    # The console script leaves with it off; a caller running commands in-process gets it back on.
    _findings(repo, 1)
    code = (
        "import atexit, gc, sys\n"
        "from vivary_git.main import cli\n"
        "atexit.register(lambda: print(f'collector on at exit: {gc.isenabled()}', file=sys.stderr))\n"
        "sys.argv = ['git-vivary', *sys.argv[1:]]\n"
        "cli()\n"
    )
    proc = _module(["check"], repo.path, code)
    assert proc.returncode == 1, proc.stderr
    assert b"collector on at exit: False" in proc.stderr
    # Leaving as usual, to wait for a thread that is not a daemon, it is back on, as a usual exit has it. The
    # thread starts as the command returns, so it is still running when the script leaves, however slow the
    # command was.
    waiting = code.replace("from vivary_git.main import cli\n",
                           "from vivary_git.main import cli\nimport threading, time\nimport vivary_git.main as m\n"
                           "command = m.main\n"
                           "def main(argv=None):\n"
                           "    code = command(argv)\n"
                           "    threading.Thread(target=time.sleep, args=(0.5,)).start()\n"
                           "    return code\n"
                           "m.main = main\n")
    proc = _module(["check"], repo.path, waiting)
    assert proc.returncode == 1, proc.stderr
    assert b"collector on at exit: True" in proc.stderr
    in_process = (
        "import gc, sys\n"
        "from vivary_git.main import main\n"
        "code = main(sys.argv[1:])\n"
        "print(f'collector on after main: {gc.isenabled()}', file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    proc = _module(["check"], repo.path, in_process)
    assert proc.returncode == 1, proc.stderr
    assert b"collector on after main: True" in proc.stderr


def test_a_long_ci_report_cut_short_by_head_fails_the_pipeline(repo: Repo) -> None:
    """`ci` writes its report whole: one write of a few hundred kilobytes into a pipe whose reader left after a line
    ended without a broken pipe and exited 0 (with no findings) or 1, where the docs promise 141."""
    repo.commit("base", {"b.md": "# B\n"})
    repo.commit("many clean notes",
                {f"notes/clean-note-with-a-long-name-{i:05d}.md": f"# C{i}\n\n[[b]]\n" for i in range(3000)})
    bindir = str(Path(sys.executable).parent)
    proc = subprocess.run(
        ["bash", "-c", 'set -o pipefail; git vivary ci --base HEAD~1 | head -1; echo "status=$?"'],
        cwd=repo.path, capture_output=True, text=True, check=False,
        env=dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", "")),
    )
    assert proc.stdout.splitlines()[-1] == "status=141", proc.stdout[-300:] + proc.stderr


def test_minus_c_naming_a_file_or_nothing_is_a_usage_error_for_every_command(repo: Repo, cli: Any) -> None:
    """`-C a.md` ran silently on the repository the command started in (so did `-C gone` inside a repository),
    exit 0: Git says "Not a directory". It is a usage error, exit 2, for every command that takes -C."""
    repo.write({"a.md": "---\ntitle: A\n---\n"})
    commands = [["check"], ["graph"], ["query", "x"], ["doctor"], ["hooks", "status"], ["ci"], ["mcp"],
                ["cache", "-C", "{}", "status"], ["sync", "-C", "{}", "fetch"], ["onboard"], ["remember", "x"]]
    for command in commands:
        for where, said in (("a.md", "not a directory"), ("gone", "no such directory")):
            args = [a.replace("{}", where) for a in command]
            if "-C" not in args:
                args += ["-C", where]
            r = cli(*args, cwd=repo.path)
            assert r.code == 2 and f"-C {where}: {said}" in r.err and "usage:" in r.err, (args, r.code, r.err)
            assert "Traceback" not in r.err
    assert cli("check", "-C", "", cwd=repo.path).code == 0  # `-C ""` is where it started, as in Git


def test_a_locale_whose_file_names_are_not_utf8_reads_non_ascii_paths(tmp_path: Path) -> None:
    # `LC_ALL=C` with Python's UTF-8 mode turned off makes file names ASCII to Python: a workspace under
    # /…/zoë/ failed with a UnicodeEncodeError traceback, and tree entries read in that encoding no longer
    # matched the links naming them. The command runs itself again in UTF-8 mode.
    path = tmp_path / "zoë"
    path.mkdir()
    ws = Repo(path)
    ws.git("init", "-q", "-b", "main")
    ws.commit("notes", {"notes/café.md": "---\ntitle: Café\n---\nSee [[zürich]].\n", "notes/zürich.md": "# Zürich\n"})
    env = dict(os.environ, LC_ALL="C", LANG="C", PYTHONUTF8="0", PYTHONCOERCECLOCALE="0")
    env.pop("PYTHONIOENCODING", None)
    for args in (["check"], ["graph", "--json"]):
        proc = subprocess.run([sys.executable, "-m", "vivary_git.main", *args], cwd=path, capture_output=True,
                              env=env, check=False)
        assert b"Traceback" not in proc.stderr, proc.stderr.decode("utf-8", "replace")
        assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")
    # Output keeps the locale's encoding: what ASCII cannot spell is escaped, as a C locale always had it.
    assert proc.stdout.isascii()
    graph = json.loads(proc.stdout)
    assert graph["edges"] == [{"from": "notes/café", "field": "wikilink", "to": "notes/zürich", "broken": False}]
    assert graph["root"] == str(path)


@pytest.mark.parametrize("failure", [
    MemoryError(),
    ImportError("/venv/lib/pygit2.libs/libcrypto-06d2c0b8.so.3: failed to map segment from shared object"),
    RuntimeError("can't start new thread"),
    OSError(errno.ENOMEM, "Cannot allocate memory"),
], ids=["MemoryError", "loader", "thread", "ENOMEM"])
@pytest.mark.parametrize("when", ["loading", "running"])
def test_a_command_short_of_memory_says_so_in_one_line(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                       failure: BaseException, when: str) -> None:
    """`ulimit -v` (a server's limit on its hooks) met while the command loads its modules and pygit2, or while it
    runs: a MemoryError, the loader's `failed to map segment from shared object` for a shared library, a thread
    with no stack, an mmap's ENOMEM came out as a traceback and exit 1, though exit-codes.md promises one line and
    exit 2. Each is raised here where the limit met it (swept under real limits, which limit a run meets first
    depends on the machine and its load, and one limit killed a C library by a signal, where no Python runs)."""
    import vivary_git.commands.check as check_command
    import vivary_git.main as main_module

    def fail(*args: object, **kwargs: object) -> None:
        raise failure

    repo.commit("a", {"a.md": "---\ntitle: A\n---\n"})
    monkeypatch.setattr(main_module if when == "loading" else check_command,
                        "build_parser" if when == "loading" else "run", fail)
    r = cli("check", cwd=repo.path)
    assert r.code == 2, r.err
    assert len(r.err.splitlines()) == 1 and r.err.startswith("git vivary check: ran out of memory before it finished")
    if isinstance(failure, ImportError):
        assert "(loading libcrypto-06d2c0b8.so.3)" in r.err


def test_an_import_error_that_is_not_memory_is_not_called_memory(repo: Repo, cli: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import vivary_git.main as main_module

    def fail(*args: object, **kwargs: object) -> None:
        raise ImportError("No module named 'nowhere'")

    monkeypatch.setattr(main_module, "build_parser", fail)
    with pytest.raises(ImportError):
        cli("check", cwd=repo.path)
