"""Help a new user can reach: `git vivary --help` / `git help vivary` (a manual page, as Git expects),
`-h`, and option errors that name the option typed and reject out-of-range values with exit 2."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, run_git_vivary

from vivary_git import manpage

PROJECT = Path(__file__).resolve().parents[1]


def test_committed_manual_page_is_the_generated_one() -> None:
    # `python -m vivary_git.manpage` rewrites it; a changed option or help text must reach the page.
    assert manpage.PAGE == PROJECT / "man" / "git-vivary.1"
    assert manpage.PAGE.read_text(encoding="utf-8") == manpage.render()


def test_manual_page_lists_every_command_and_option() -> None:
    from vivary_git.main import build_parser

    page = manpage.render()
    sub = manpage._subparsers(build_parser())
    assert sub is not None and "check" in sub.choices and "init" in sub.choices
    for name, parser in sub.choices.items():
        # every option of every command, as roff (hyphens escaped)
        assert f".SS git vivary {name.replace('-', chr(92) + '-')}\n" in page, name
        for action in parser._actions:
            for opt in action.option_strings:
                if opt not in ("-h", "--help"):
                    assert "\\fB" + opt.replace("-", "\\-") + "\\fR" in page, (name, opt)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """vivary-git installed from its wheel into a prefix: bin/git-vivary and share/man/man1/git-vivary.1,
    as pip, pipx or a virtualenv lay them out (an editable install lays out the page too: test_install.py)."""
    if shutil.which("man") is None:
        pytest.skip("no `man` on this machine: `git help` cannot show any manual page here")
    tmp = tmp_path_factory.mktemp("install")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp / "dist"), str(PROJECT)],
                   check=True, capture_output=True)
    wheel = next((tmp / "dist").glob("vivary_git-*.whl"))
    assert "vivary_git-0.1.0.data/data/share/man/man1/git-vivary.1" in zipfile.ZipFile(wheel).namelist()
    prefix = tmp / "prefix"
    # --ignore-installed: install beside, never over, this virtualenv's own (editable) vivary-git
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--ignore-installed", "--prefix",
                    str(prefix), str(wheel)], check=True, capture_output=True)
    assert (prefix / "share/man/man1/git-vivary.1").is_file()
    return prefix


def _git_from(prefix: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("MANPATH", "MANPAGER", "PAGER", "GIT_PAGER")}
    env["PATH"] = f"{prefix / 'bin'}{os.pathsep}{env['PATH']}"
    env["MANWIDTH"] = "200"
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("args", [("vivary", "--help"), ("help", "vivary")])
def test_git_help_shows_the_manual_page(args: tuple[str, ...], installed: Path, repo: Repo) -> None:
    # Git runs `git help vivary` for `git vivary --help` (our program never sees --help): `man git-vivary`.
    r = _git_from(installed, *args, cwd=repo.path)
    assert r.returncode == 0, r.stderr
    assert "No manual entry" not in r.stderr
    assert "GIT-VIVARY(1)" in r.stdout
    assert "git vivary check" in r.stdout and "--budget" in r.stdout


def test_dash_h_and_direct_help_print_usage(repo: Repo) -> None:
    for args in (["-h"], ["check", "-h"], ["check", "--help"]):
        r = run_git_vivary(args, repo.path)
        assert r.returncode == 0, (args, r.stderr)
        assert r.stdout.startswith("usage: git vivary"), args
    direct = subprocess.run([str(Path(sys.executable).parent / "git-vivary"), "--help"], capture_output=True,
                            text=True, check=False)
    assert direct.returncode == 0 and "COMMAND" in direct.stdout


def test_python_dash_m_runs_the_command(repo: Repo) -> None:
    """`python -m vivary_git`, for an environment whose scripts folder is not on PATH: the same command, exit codes
    included."""
    repo.commit(files={"a.md": "# A\n\nSee [[nowhere]].\n"})
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    usage = subprocess.run([sys.executable, "-m", "vivary_git", "-h"], capture_output=True, text=True, check=False,
                           env=env)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: git vivary"), usage.stderr
    r = subprocess.run([sys.executable, "-m", "vivary_git", "check", "--rev", "HEAD"], cwd=repo.path,
                       capture_output=True, text=True, check=False, env=env)
    assert r.returncode == 1 and "a.md:3: error W221" in r.stdout, r.stdout + r.stderr



def _numeric_options() -> list[tuple[str, str]]:
    from vivary_git.commands._common import edge_spec
    from vivary_git.main import build_parser

    sub = manpage._subparsers(build_parser())
    assert sub is not None
    found = []
    for name, parser in sub.choices.items():
        for action in parser._actions:
            if action.option_strings and action.type not in (None, str, edge_spec):  # edge_spec: a text form
                found.append((name, action.option_strings[-1]))
    return found


# (command and arguments up to the option, option, a value out of range, what the message says)
OUT_OF_RANGE = [
    (("query", "auth"), "--k", "0", "at least 1"),
    (("query", "auth"), "--k", "ten", "at least 1"),
    (("query", "auth"), "--snippet", "-1", "at least 0"),
    (("find", "auth"), "--k", "0", "at least 1"),
    (("find", "auth"), "--budget", "-5", "at least 1"),
    (("find", "auth"), "--budget", "0", "at least 1"),
    (("find", "auth"), "--snippet", "-1", "at least 0"),
    (("recall", "auth"), "--k", "0", "at least 1"),
    (("blast", "a"), "--depth", "-1", "at least 0"),
    (("ci",), "--depth", "-1", "at least 0"),
    (("ci",), "--max-annotations", "-1", "at least 0"),
    (("log",), "--max-count", "0", "at least 1"),
    (("mcp",), "--port", "65536", "at least 0 and at most 65535"),
    (("recent",), "--max-count", "0", "at least 1 and at most 500"),
    (("context", "a"), "--depth", "4", "at least 0 and at most 3"),
    (("context", "a"), "--budget", "-1", "at least 0"),
]


def test_every_numeric_option_has_a_range_case() -> None:
    assert sorted(_numeric_options()) == sorted({(c[0][0], c[1]) for c in OUT_OF_RANGE})


@pytest.mark.parametrize("args,option,value,says", OUT_OF_RANGE, ids=[f"{c[0][0]}{c[1]}{c[2]}" for c in OUT_OF_RANGE])
def test_out_of_range_values_are_usage_errors(args: tuple[str, ...], option: str, value: str, says: str,
                                              repo: Repo, cli: Any) -> None:
    repo.commit(files={"a.md": "# A auth\n"})
    r = cli(*args, option, value, cwd=repo.path)
    assert r.code == 2 and r.out == ""
    # argparse names the option as declared: `argument --k`, or `argument -n/--max-count` with a short form
    said = rf"argument (-\w/)?{option}: must be a whole number of {says}, got '{re.escape(value)}'"
    assert re.search(said, r.err), r.err


def test_errors_name_the_option_the_user_typed(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit(files={"a.md": "# A\n"})
    r = cli("blast", "--base", "nosuchrev", cwd=repo.path)
    assert r.code == 2 and "--base nosuchrev: no such revision" in r.err and "--rev" not in r.err
    r = cli("blast", "--base", "HEAD", "--head", "nosuchrev", cwd=repo.path)
    assert r.code == 2 and "--head nosuchrev: no such revision" in r.err and "--rev" not in r.err
    r = cli("blast", "--base", "HEAD", "--head", "HEAD", "--staged", cwd=repo.path)
    assert r.code == 2 and "drop --staged" in r.err and "--rev" not in r.err
    r = cli("ci", "--base", "nosuchrev", cwd=repo.path)
    assert r.code == 2 and "--base nosuchrev: no such revision" in r.err and "--rev" not in r.err
    r = cli("ci", "--head", "nosuchrev", cwd=repo.path)
    assert r.code == 2 and "--head nosuchrev: no such revision" in r.err and "--rev" not in r.err
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.md").write_text("# A\n")
    for args, named in ((("check", "--rev", "HEAD"), "--rev HEAD: "), (("check", "--staged"), "--staged: "),
                        (("blast", "--base", "main"), "--base main: ")):
        r = cli(*args, cwd=plain)
        assert r.code == 2 and r.err.startswith(f"git vivary {args[0]}: {named}"), r.err
        assert "not inside a Git repository" in r.err and "--rev/--staged" not in r.err


def _every_command(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...],
                                                                                          list[str]]]:
    """(command path, arguments that satisfy its required positionals) for every command and nested subcommand."""
    out: list[tuple[tuple[str, ...], list[str]]] = []
    needed: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                out += _every_command(child, (*path, name))
        elif not action.option_strings and action.nargs not in ("?", "*", argparse.SUPPRESS):
            needed.append(str(next(iter(action.choices))) if action.choices else "x")
        elif action.option_strings and action.required:
            needed += [action.option_strings[0], str(next(iter(action.choices))) if action.choices else "x"]
    if path and not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        out.append((path, needed))
    return out


def test_an_unknown_option_is_said_by_the_subcommand_it_was_given_to(cli: Any, tmp_path: Path) -> None:
    """`git vivary sync setup -x` printed the top-level usage and `git vivary: error: unrecognized arguments`:
    argparse says it from the top parser. Every command, nested or not, says it with its own usage."""
    from vivary_git.main import build_parser

    commands = _every_command(build_parser())
    assert (("sync", "setup"), []) in commands and any(p == ("hooks", "run") for p, _ in commands)
    for path, needed in commands:
        r = cli(*path, *needed, "--no-such-option", cwd=tmp_path)
        prog = " ".join(("git vivary", *path))
        assert r.code == 2, (path, r.err)
        assert r.err.startswith(f"usage: {prog} "), (path, r.err)
        assert f"\n{prog}: error: unrecognized arguments: --no-such-option\n" in r.err, (path, r.err)
