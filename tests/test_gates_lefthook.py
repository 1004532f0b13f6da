"""`git vivary hooks` next to lefthook: install writes none of its files and prints what to add to its config, status
reads that config (a committed file: parsed safely and boundedly), uninstall undoes what lefthook did to an earlier
install of ours.

The real lefthook comes from npm (tests/npm_tools.py), pinned; the cases that need no binary write what `lefthook
install` writes by hand. Commits are real `git commit`s, run through lefthook's own hook scripts.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from npm_tools import npm_home, npm_install

from vivary_git.gates.install import script

LEFTHOOK = "lefthook@2.2.4"
BIN = str(Path(sys.executable).parent)  # git-vivary lives here
PATH = BIN + os.pathsep + "/usr/bin:/bin"
TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list" }
"""
CONFIG = """pre-commit:
  commands:
    lint:
      run: echo lint >> .git/lint.log
"""
# The end of the script `lefthook install` writes (2.2.4), after the function that finds the binary.
SCRIPT = """#!/bin/sh
call_lefthook()
{
  lefthook "$@"
}

call_lefthook run "pre-commit" "$@"
"""


def workspace(repo: Repo, files: dict[str, str]) -> None:
    repo.commit("start", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# B\n",
        **files,
    })


def commit(repo: Repo) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "commit", "-q", "-m", "change"], cwd=repo.path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PATH=PATH), check=False,
                          timeout=300)


def commit_breaking(repo: Repo) -> subprocess.CompletedProcess[str]:
    """Commit the removal of modules/a.md, which modules/b.md depends on: the gate, where it runs, refuses (W220)."""
    (repo.path / "modules" / "a.md").unlink()
    repo.git("add", "-A")
    return commit(repo)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.lstat().st_mode))
            for p in sorted(folder.rglob("*")) if p.is_file()}


def advice(out: str) -> str:
    """The lines `install` printed to add, without its comment lines."""
    return "".join(line + "\n" for line in out.splitlines() if line and not line.startswith("# "))


@pytest.fixture
def lefthook(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """`lefthook install` in a repository, with the real binary."""
    exe = npm_install(npm_home(tmp_path_factory), LEFTHOOK) / ".bin" / "lefthook"
    if not exe.is_file():
        pytest.skip(f"{LEFTHOOK} installed, but without its lefthook command")

    def install(path: Path) -> None:
        proc = subprocess.run([str(exe), "install"], cwd=path, capture_output=True, text=True, check=False,
                              env=dict(os.environ, PATH=PATH), timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return install


# --- with the real lefthook ----------------------------------------------------------------------------

def test_lefthook_keeps_its_scripts_and_runs_the_gate_from_its_config(repo: Repo, cli: Any, lefthook: Any) -> None:
    workspace(repo, {"lefthook.yml": CONFIG})
    lefthook(repo.path)
    hooks = repo.path / ".git" / "hooks"
    before = snapshot(hooks)

    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert "lefthook manages this repository's hooks (its script is .git/hooks/pre-commit)" in r.err
    assert r.out == ("# lefthook.yml: under `pre-commit:`, in its `commands:`\n"
                     "    vivary:\n      run: git vivary hooks run pre-commit\n\n# then: lefthook install\n")
    assert snapshot(hooks) == before  # nothing renamed, nothing written
    status = cli("hooks", "status", cwd=repo.path).out
    assert "managed by lefthook (its script is .git/hooks/pre-commit)" in status
    assert "pre-commit        lefthook's hook: lefthook.yml does not run vivary" in status

    with (repo.path / "lefthook.yml").open("a") as f:
        f.write(advice(r.out))
    repo.git("add", "lefthook.yml")
    lefthook(repo.path)
    refused = commit_breaking(repo)  # b still depends on a
    assert refused.returncode == 1, refused.stdout
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert (repo.path / ".git" / "lint.log").read_text() == "lint\n"  # the user's own command still runs
    assert "pre-commit        lefthook's hook: lefthook.yml runs vivary" in cli("hooks", "status", cwd=repo.path).out
    again = cli("hooks", "install", cwd=repo.path)
    assert again.code == 0 and "lefthook already runs vivary (lefthook.yml); nothing to do" in again.out

    repo.git("reset", "-q", "--hard")
    repo.write({"modules/c.md": "---\n---\n# C\n", "lefthook.yml": CONFIG + advice(r.out)})
    repo.git("add", "-A")
    ok = commit(repo)
    assert ok.returncode == 0, ok.stdout
    assert (repo.path / ".git" / "lint.log").read_text() == "lint\nlint\n"


# JSON with comments and trailing commas, which lefthook reads from a .jsonc file; the comment names the gate but
# runs nothing.
JSONC = """{
  // was: "run": "git vivary hooks run pre-commit"
  "pre-commit": {
    "commands": {
      "lint": {"run": "echo lint >> .git/lint.log"},
    },
  },
}
"""


def test_lefthook_runs_the_json_members_printed_for_a_jsonc_config(repo: Repo, cli: Any, lefthook: Any) -> None:
    # YAML lines, as were printed for a .jsonc config, pasted into it leave a file lefthook cannot load.
    workspace(repo, {"lefthook.jsonc": JSONC})
    lefthook(repo.path)
    assert "lefthook.jsonc does not run vivary" in cli("hooks", "status", cwd=repo.path).out
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert r.out == ("# lefthook.jsonc: in `pre-commit`'s `commands` object, after a comma\n"
                     '"vivary": {"run": "git vivary hooks run pre-commit"}\n\n# then: lefthook install\n')
    assert "Add the lines printed above to lefthook.jsonc" in r.err
    text = JSONC.replace('.git/lint.log"},\n', '.git/lint.log"},\n      ' + r.out.splitlines()[1] + "\n")
    repo.write({"lefthook.jsonc": text})
    repo.git("add", "lefthook.jsonc")
    lefthook(repo.path)
    assert "pre-commit        lefthook's hook: lefthook.jsonc runs vivary" in cli("hooks", "status", cwd=repo.path).out
    refused = commit_breaking(repo)  # b still depends on a
    assert refused.returncode == 1, refused.stdout
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert (repo.path / ".git" / "lint.log").read_text() == "lint\n"  # the user's own command still runs


def test_the_config_lefthook_reads_is_the_one_named(repo: Repo, cli: Any, lefthook: Any) -> None:
    # lefthook reads .lefthook.yml before lefthook.toml (every name in .yml, then in .yaml, .json, .jsonc, .toml):
    # the gate in lefthook.toml never ran, though status said it did and install told to add it there.
    workspace(repo, {".lefthook.yml": CONFIG,
                     "lefthook.toml": '[pre-commit.commands.vivary]\nrun = "git vivary hooks run pre-commit"\n'})
    lefthook(repo.path)
    assert "pre-commit        lefthook's hook: .lefthook.yml does not run vivary" in \
        cli("hooks", "status", cwd=repo.path).out
    assert commit_breaking(repo).returncode == 0  # what lefthook.toml says runs nothing
    repo.git("reset", "-q", "--hard", "HEAD~1")

    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3 and r.out.startswith("# .lefthook.yml: under `pre-commit:`, in its `commands:`\n"), r.out
    assert "Add the lines printed above to .lefthook.yml" in r.err
    repo.write({".lefthook.yml": CONFIG + advice(r.out)})
    repo.git("add", "-A")
    lefthook(repo.path)
    refused = commit_breaking(repo)  # b still depends on a
    assert refused.returncode == 1 and "error W220" in refused.stdout, refused.stdout


def test_a_hook_lefthook_lists_without_commands_gets_them_under_it(repo: Repo, cli: Any, lefthook: Any) -> None:
    # A hook of its own at the top level would name `pre-commit:` twice: lefthook then loads no config at all.
    config = "pre-commit:\n  parallel: true\n"
    workspace(repo, {"lefthook.yml": config})
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3, r.err
    assert r.out == ("# lefthook.yml: under `pre-commit:`\n  commands:\n    vivary:\n"
                     "      run: git vivary hooks run pre-commit\n\n# then: lefthook install\n")
    repo.write({"lefthook.yml": config + advice(r.out)})
    repo.git("add", "-A")
    lefthook(repo.path)
    assert "pre-commit        lefthook's hook: lefthook.yml runs vivary" in cli("hooks", "status", cwd=repo.path).out
    refused = commit_breaking(repo)  # b still depends on a
    assert refused.returncode == 1 and "error W220" in refused.stdout, refused.stdout


GATE = "      run: git vivary hooks run pre-commit\n"
MAIN_COMMANDS = CONFIG + "    vivary:\n" + GATE
MAIN_JOBS = "pre-commit:\n  jobs:\n    - name: lint\n      run: echo lint >> .git/lint.log\n    - name: vivary\n" + GATE
# lefthook.yml, lefthook-local.yml, and whether lefthook, merging the two, runs the gate (lefthook 2.2.4).
LOCAL_CASES = [
    (MAIN_COMMANDS, "pre-commit:\n  commands:\n    vivary:\n      skip: true\n", False),
    (MAIN_COMMANDS, "pre-commit:\n  skip: true\n", False),
    (MAIN_COMMANDS, "pre-commit:\n  commands:\n    vivary:\n      run: echo replaced\n", False),
    (MAIN_COMMANDS, 'pre-commit:\n  commands:\n    vivary:\n      run: "echo first && {cmd}"\n', True),
    (MAIN_COMMANDS, "pre-commit:\n  commands:\n    vivary:\n      skip: [merge]\n", True),  # not this time
    (MAIN_COMMANDS.replace("pre-commit:\n", "pre-commit:\n  skip: true\n"), "pre-commit:\n  skip: false\n", True),
    (MAIN_JOBS, "pre-commit:\n  jobs:\n    - name: vivary\n      skip: true\n", False),
    (MAIN_JOBS, "pre-commit:\n  jobs:\n    - skip: true\n      run: echo more\n", True),  # unnamed: added
    (MAIN_JOBS, 'pre-commit:\n  jobs:\n    - name: vivary\n      run: "echo first && {cmd}"\n', True),
    (MAIN_JOBS, "pre-commit:\n  jobs:\n    - name: vivary\n      run: echo replaced\n", False),
    (CONFIG, "pre-commit:\n  commands:\n    vivary:\n" + GATE, True),
]


@pytest.mark.parametrize(("main", "local", "runs"), LOCAL_CASES)
def test_status_judges_lefthooks_local_config_merged_over_the_main_one(repo: Repo, cli: Any, lefthook: Any,
                                                                      main: str, local: str, runs: bool) -> None:
    """lefthook merges lefthook-local.yml over lefthook.yml, hook by hook: a `skip` or a `run` there wins. status says
    "runs vivary" exactly where a commit lefthook hooks is refused by the gate."""
    workspace(repo, {"lefthook.yml": main, "lefthook-local.yml": local})
    lefthook(repo.path)
    report = cli("hooks", "status", "--json", cwd=repo.path).json()
    said = {h["hook"]: h for h in report["hooks"]}["pre-commit"]
    assert said["vivary_runs"] is runs, said
    refused = commit_breaking(repo)
    assert refused.returncode == (1 if runs else 0), refused.stdout
    if not runs and "vivary" in main:
        assert said["note"].startswith("it holds vivary's command, but lefthook-local.yml, which lefthook merges"), said
        r = cli("hooks", "install", cwd=repo.path)
        assert (r.code, r.out) == (3, ""), r.out
        assert "pre-commit: it holds vivary's command, but lefthook-local.yml" in r.err, r.err


def test_status_reads_the_config_lefthook_config_names(repo: Repo, cli: Any, lefthook: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """`LEFTHOOK_CONFIG` names the main config in place of lefthook.yml, the `-local` one still merged over it; one
    that is not there stops lefthook, which then runs nothing."""
    workspace(repo, {"lefthook.yml": CONFIG, "ci/lefthook.yml": MAIN_COMMANDS})
    lefthook(repo.path)
    monkeypatch.setenv("LEFTHOOK_CONFIG", "ci/lefthook.yml")
    status = cli("hooks", "status", cwd=repo.path).out
    assert "pre-commit        lefthook's hook: ci/lefthook.yml runs vivary" in status, status
    refused = commit_breaking(repo)
    assert refused.returncode == 1 and "error W220" in refused.stdout, refused.stdout
    repo.write({"lefthook-local.yml": "pre-commit:\n  skip: true\n"})
    assert "ci/lefthook.yml does not run vivary" in cli("hooks", "status", cwd=repo.path).out
    assert commit(repo).returncode == 0
    monkeypatch.setenv("LEFTHOOK_CONFIG", "ci/none.yml")
    assert "runs vivary" not in cli("hooks", "status", cwd=repo.path).out.replace("does not run vivary", "")


def _index_done(repo: Path) -> None:
    """Wait for the hooks' background index runs: each holds `.git/vivary/index.log` open until it exits."""
    log = str(repo / ".git" / "vivary" / "index.log")

    def holds(pid: str) -> bool:
        with contextlib.suppress(OSError):
            return any(os.readlink(fd) == log for fd in Path(f"/proc/{pid}/fd").iterdir())
        return False
    while any(holds(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()):
        os.sched_yield()


def test_lefthooks_post_checkout_keeps_the_auto_index_at_head(repo: Repo, cli: Any, lefthook: Any,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", PATH)  # lefthook runs `git vivary` from PATH
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see the background index finish")
    repo.commit("notes", {
        "notes/tea.md": "# Tea\n\nGreen tea steeps at eighty degrees.\n",
        ".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.local]\n'
                               "auto_index = true\n",
        "lefthook.yml": CONFIG,
    })
    repo.git("config", "vivary.autoIndex", "true")  # the user's approval; the committed file is the team's wish
    lefthook(repo.path)
    r = cli("hooks", "install", "post-commit", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert "      run: git vivary hooks run post-checkout {1} {2} {3}\n" in r.out
    assert "      run: git vivary hooks run post-merge {1}\n" in r.out
    with (repo.path / "lefthook.yml").open("a") as f:
        f.write(advice(r.out))
    lefthook(repo.path)
    status = cli("hooks", "status", cwd=repo.path).out
    for hook in ("post-commit", "post-checkout", "post-merge", "post-rewrite"):
        assert f"{hook:<16}  lefthook's hook: lefthook.yml runs vivary" in status, status
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    main = repo.git("rev-parse", "HEAD").strip()
    repo.git("switch", "-q", "-c", "coffee")
    repo.commit("coffee", {"notes/coffee.md": "# Coffee\n\nEspresso needs a fine grind.\n"})
    _index_done(repo.path)

    # A switch moves HEAD without a commit: lefthook's post-checkout hands Git's arguments on, and the index follows.
    subprocess.run(["git", "switch", "-q", "main"], cwd=repo.path, env=dict(os.environ, PATH=PATH), check=True,
                   capture_output=True)
    assert repo.git("rev-parse", "HEAD").strip() == main
    _index_done(repo.path)
    recalled = subprocess.run([sys.executable, "-m", "vivary_git.main", "recall", "espresso grind", "--json"],
                              cwd=repo.path, capture_output=True, text=True, check=False)
    log = repo.path / ".git" / "vivary" / "index.log"
    assert recalled.returncode == 0, recalled.stderr + (log.read_text() if log.is_file() else "(no index ran)")
    assert "notes/coffee" not in recalled.stdout  # the index is main's, where that note is not
    assert '"node_id": "notes/tea"' in recalled.stdout.replace('":"', '": "'), recalled.stdout


def test_uninstall_after_lefthook_moved_an_earlier_install_to_old(repo: Repo, cli: Any, lefthook: Any) -> None:
    """An earlier vivary-git chained lefthook's script as pre-commit.local; the next `lefthook install` moved vivary's
    script to pre-commit.old, which nothing runs: commits went unchecked, without a word."""
    workspace(repo, {"lefthook.yml": CONFIG})
    lefthook(repo.path)
    hooks = repo.path / ".git" / "hooks"
    original = snapshot(hooks)
    (hooks / "pre-commit").rename(hooks / "pre-commit.local")  # what that earlier install did
    (hooks / "pre-commit").write_text(script("pre-commit", sys.executable))
    (hooks / "pre-commit").chmod(0o755)
    lefthook(repo.path)
    assert "vivary-git hook" in (hooks / "pre-commit.old").read_text()
    assert commit_breaking(repo).returncode == 0  # the gate no longer runs
    repo.git("reset", "-q", "--hard", "HEAD~1")

    status = cli("hooks", "status", cwd=repo.path).out
    assert ("pre-commit        lefthook's hook: lefthook.yml does not run vivary; `lefthook install` moved vivary's "
            "earlier hook to pre-commit.old, which nothing runs") in status, status
    refused = cli("hooks", "install", cwd=repo.path)
    assert refused.code == 3 and "run `git vivary hooks uninstall` first" in refused.err
    r = cli("hooks", "uninstall", "pre-commit", cwd=repo.path)
    assert r.out == ("vivary: pre-commit: removed vivary's script (pre-commit.old, where lefthook had moved it) and "
                     "lefthook's earlier script pre-commit.local; lefthook's hook stays\n")
    assert snapshot(hooks) == original


# --- without npm: what `lefthook install` writes, by hand ---------------------------------------------------

def _installed(repo: Repo, hooks: tuple[str, ...] = ("pre-commit",)) -> Path:
    d = repo.path / ".git" / "hooks"
    for hook in hooks:
        (d / hook).write_text(SCRIPT.replace('"pre-commit"', f'"{hook}"'))
        (d / hook).chmod(0o755)
    return d


@pytest.mark.parametrize("name", ["lefthook.yml", ".lefthook.yaml", ".config/lefthook.yml", "lefthook.toml",
                                  "lefthook-local.yml", ".config/lefthook-local.json"])
def test_a_lefthook_config_alone_is_lefthook(repo: Repo, cli: Any, name: str) -> None:
    repo.commit("start", {name: "{}\n" if name.endswith(".json") else ""})
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3 and f"lefthook manages this repository's hooks ({name} exists)" in r.err, r.err
    assert not [p for p in (repo.path / ".git" / "hooks").iterdir() if not p.name.endswith(".sample")]
    status = cli("hooks", "status", cwd=repo.path).out
    assert f"managed by lefthook ({name} exists)" in status
    assert "pre-commit        not installed" in status


def test_lefthooks_script_alone_is_lefthook(repo: Repo, cli: Any) -> None:
    repo.commit("start")
    _installed(repo)
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3 and "lefthook manages this repository's hooks (its script is .git/hooks/pre-commit)" in r.err
    assert r.out == ("# lefthook.yml (a new file): add at the top level\npre-commit:\n  commands:\n    vivary:\n"
                     "      run: git vivary hooks run pre-commit\n\n# then: lefthook install\n")
    # A script that merely names lefthook is not its script.
    (repo.path / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\n# we used lefthook once\nexit 0\n")
    assert cli("hooks", "install", "pre-commit", cwd=repo.path).code == 0


def test_status_names_the_local_config_that_runs_vivary(repo: Repo, cli: Any) -> None:
    """With vivary's command in `.lefthook-local.yml` only, `hooks status` said "lefthook's hook:
    .config/lefthook.yaml runs vivary", naming the main config, which holds no such command."""
    repo.commit("start", {".config/lefthook.yaml": "pre-commit:\n  commands:\n    lint:\n      run: echo lint\n",
                          ".lefthook-local.yml": "pre-commit:\n  commands:\n    vivary:\n"
                                                 "      run: git vivary hooks run pre-commit\n"})
    _installed(repo, ("pre-commit", "post-commit"))
    rows = cli("hooks", "status", cwd=repo.path).out
    assert "  pre-commit        lefthook's hook: .lefthook-local.yml runs vivary\n" in rows, rows
    # Where neither runs it, the main config is named: the file to add it to.
    assert "  post-commit       lefthook's hook: .config/lefthook.yaml does not run vivary\n" in rows, rows
    hooks = {h["hook"]: h for h in cli("hooks", "status", "--json", cwd=repo.path).json()["hooks"]}
    assert (hooks["pre-commit"]["runs"], hooks["pre-commit"]["vivary_runs"]) == (".lefthook-local.yml", True)


def test_status_reads_lefthooks_commands_jobs_and_groups(repo: Repo, cli: Any) -> None:
    repo.commit("start", {"lefthook.yml": """# run: git vivary hooks run post-merge   (a comment runs nothing)
pre-commit:
  jobs:
    - name: lint
      run: echo lint
    - group:
        parallel: true
        jobs:
          - run: git vivary hooks run pre-commit
post-commit:
  commands:
    gate:
      run: git vivary hooks run post-commit
      skip: true
post-checkout:
  commands:
    other:
      run: echo checked out
post-merge:
  skip: true
  commands:
    index:
      run: git vivary hooks run post-merge {1}
""", "lefthook-local.yml": "post-rewrite:\n  commands:\n    v:\n      run: git vivary hooks run post-rewrite {1}\n"})
    _installed(repo, ("pre-commit", "post-commit", "post-checkout", "post-merge", "post-rewrite"))
    report = cli("hooks", "status", "--json", cwd=repo.path).json()
    runs = {h["hook"]: h["vivary_runs"] for h in report["hooks"]}
    assert runs == {"pre-commit": True, "pre-merge-commit": False, "post-commit": False, "post-checkout": False,
                    "post-merge": False, "post-rewrite": True}, runs
    assert {h["hook"]: h["state"] for h in report["hooks"]}["post-merge"] == "lefthook"

    r = cli("hooks", "install", "post-commit", cwd=repo.path)
    assert r.code == 3
    assert r.out == ("# lefthook.yml: under `post-commit:`, in its `commands:`\n    vivary-index:\n"
                     "      run: git vivary hooks run post-commit\n\n"
                     "# lefthook.yml: under `post-checkout:`, in its `commands:`\n    vivary-index-checkout:\n"
                     "      run: git vivary hooks run post-checkout {1} {2} {3}\n\n"
                     "# lefthook.yml: under `post-merge:`, in its `commands:` (and remove its `skip: true`, which "
                     "skips all of it)\n    vivary-index-merge:\n      run: git vivary hooks run post-merge {1}\n\n"
                     "# then: lefthook install\n")


def test_snippet_in_lefthooks_jobs_and_toml_styles(repo: Repo, cli: Any) -> None:
    repo.commit("start", {"lefthook.yml": "pre-commit:\n  jobs:\n    - run: echo lint\n"})
    r = cli("hooks", "install", "pre-commit", "--root", ".", cwd=repo.path)
    assert r.out == ("# lefthook.yml: under `pre-commit:`, in its `jobs:` list\n    - name: vivary\n"
                     "      run: git vivary hooks run pre-commit\n\n# then: lefthook install\n")
    repo.git("rm", "-q", "lefthook.yml")
    repo.commit("toml", {".lefthook.toml": "[pre-commit.commands.lint]\nrun = \"echo lint\"\n"})
    r = cli("hooks", "install", "pre-merge-commit", cwd=repo.path)
    assert r.out == ("# .lefthook.toml: add at the top level\n[pre-merge-commit.commands.vivary-merge]\n"
                     'run = "git vivary hooks run pre-merge-commit"\n\n# then: lefthook install\n')
    with (repo.path / ".lefthook.toml").open("a") as f:
        f.write(advice(r.out))
    status = cli("hooks", "status", cwd=repo.path).out
    assert ("pre-merge-commit  not installed; .lefthook.toml runs vivary, but Git does not run it for pre-merge-commit "
            "yet: run `lefthook install`") in status, status


@pytest.mark.parametrize("config", [
    "pre-commit: [unclosed\n",  # not YAML
    # Groups of jobs by alias: 10^8 entries if walked as a tree, and none runs vivary.
    "a: &a {run: echo}\n"
    + "".join(f"{c}: &{c} {{group: {{jobs: [{', '.join([f'*{p}'] * 10)}]}}}}\n"
              for p, c in zip("abcdefg", "bcdefgh", strict=True))
    + "pre-commit:\n  jobs: [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n",
    "pre-commit: " + "[" * 5000 + "]" * 5000 + "\n",  # nested deeper than the parser goes
    "x: " + "y" * (2 << 20) + "\n# git vivary hooks run pre-commit\n",  # over the size read
    "!!python/object/apply:os.system ['echo owned']\n",  # a tag only an unsafe loader runs
])
def test_a_strangers_lefthook_config_is_read_safely(repo: Repo, cli: Any, config: str) -> None:
    repo.commit("start", {"lefthook.yml": config})
    _installed(repo)
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0, r.err
    assert "pre-commit        lefthook's hook: lefthook.yml does not run vivary" in r.out
    assert cli("hooks", "install", cwd=repo.path).code == 3


def test_lefthook_config_that_is_a_fifo_is_not_read(repo: Repo, cli: Any) -> None:
    repo.commit("start")
    os.mkfifo(repo.path / "lefthook.yml")
    _installed(repo)
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0 and "lefthook.yml does not run vivary" in r.out, r.out + r.err


def test_snippet_quotes_a_root_yaml_would_misread_and_takes_a_free_name(repo: Repo, cli: Any) -> None:
    # A folder named `my #docs` in a plain YAML value starts a comment: lefthook would run the check on the top.
    repo.commit("start", {"my #docs/tropo.toml": TROPO, "lefthook.yml": CONFIG + "    vivary:\n      run: echo old\n"})
    r = cli("hooks", "install", "pre-commit", "--root", "my #docs", cwd=repo.path)
    assert r.code == 3, r.err
    assert r.out == ("# lefthook.yml: under `pre-commit:`, in its `commands:`\n    vivary-2:\n"
                     """      run: "git vivary hooks run pre-commit --root 'my #docs'"\n\n# then: lefthook install\n""")
    with (repo.path / "lefthook.yml").open("a") as f:
        f.write(advice(r.out))
    _installed(repo)
    assert "pre-commit        lefthook's hook: lefthook.yml runs vivary" in cli("hooks", "status", cwd=repo.path).out


def test_snippet_for_a_json_config_is_json(repo: Repo, cli: Any) -> None:
    # YAML lines pasted into lefthook.json, as the printed header told, would leave a file no one can read.
    lint = '{"lint": {"run": "echo lint"}}'
    jobs = '[{"run": "echo hi"}]'
    config = f'{{"pre-commit": {{"commands": {lint}}}, "post-commit": {{"jobs": {jobs}}}}}\n'
    repo.commit("start", {"lefthook.json": config})
    r = cli("hooks", "install", "pre-commit", cwd=repo.path)
    assert r.code == 3, r.err
    assert r.out == ("# lefthook.json: in `pre-commit`'s `commands` object, after a comma\n"
                     '"vivary": {"run": "git vivary hooks run pre-commit"}\n\n# then: lefthook install\n')
    member = r.out.splitlines()[1]
    r = cli("hooks", "install", "post-commit", cwd=repo.path)
    assert r.code == 3, r.err
    blocks = r.out.split("\n\n")
    assert blocks[0] == ("# lefthook.json: in `post-commit`'s `jobs` list, after a comma\n"
                         '{"name": "vivary-index", "run": "git vivary hooks run post-commit"}')
    assert blocks[1].startswith("# lefthook.json: add at the top level, after a comma\n"
                                '"post-checkout": {"commands": {"vivary-index-checkout": {"run": '
                                '"git vivary hooks run post-checkout {1} {2} {3}"}}},\n')
    job, top = blocks[0].splitlines()[1], "\n".join(blocks[1].splitlines()[1:])
    text = (repo.path / "lefthook.json").read_text()
    text = text.replace(lint, lint[:-1] + ", " + member + "}").replace(jobs, jobs[:-1] + ", " + job + "]")
    text = text.rstrip()[:-1] + ", " + top + "}\n"
    json.loads(text)  # what was printed, added where it says, is JSON
    (repo.path / "lefthook.json").write_text(text)
    _installed(repo, ("pre-commit", "post-commit", "post-checkout", "post-merge", "post-rewrite"))
    runs = {h["hook"]: h["vivary_runs"] for h in cli("hooks", "status", "--json", cwd=repo.path).json()["hooks"]}
    assert runs == {"pre-commit": True, "pre-merge-commit": False, "post-commit": True, "post-checkout": True,
                    "post-merge": True, "post-rewrite": True}, runs


@pytest.mark.parametrize(("files", "reads"), [
    ({"lefthook.toml": "", ".lefthook.yml": "", "lefthook.yaml": ""}, ".lefthook.yml"),
    ({"lefthook.jsonc": "{}", ".config/lefthook.json": "{}"}, ".config/lefthook.json"),
    ({".lefthook.toml": "", ".config/lefthook.jsonc": "{}"}, ".config/lefthook.jsonc"),
    ({"lefthook-local.toml": "", ".lefthook-local.yaml": ""}, ".lefthook-local.yaml"),
])
def test_the_config_named_is_the_first_lefthook_tries(repo: Repo, cli: Any, files: dict[str, str], reads: str) -> None:
    repo.commit("start", files)
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3 and f"lefthook manages this repository's hooks ({reads} exists)" in r.err, r.err
    assert r.out.startswith(f"# {reads}: add at the top level"), r.out


def test_a_jsonc_config_is_parsed_and_given_json(repo: Repo, cli: Any) -> None:
    repo.commit("start", {"lefthook.jsonc": JSONC, "lefthook-local.jsonc": "{\n  // nothing yet\n}\n"})
    _installed(repo)
    report = cli("hooks", "status", "--json", cwd=repo.path).json()
    assert [h["vivary_runs"] for h in report["hooks"] if h["hook"] == "pre-commit"] == [False]  # a comment runs none
    r = cli("hooks", "install", "pre-merge-commit", cwd=repo.path)
    assert r.out == ("# lefthook.jsonc: add at the top level, after a comma\n"
                     '"pre-merge-commit": {"commands": {"vivary-merge": {"run": '
                     '"git vivary hooks run pre-merge-commit"}}}\n\n# then: lefthook install\n')
    # The -local one alone is the config lefthook reads; an object with no member takes no comma.
    repo.git("rm", "-q", "lefthook.jsonc")
    r = cli("hooks", "install", "pre-merge-commit", cwd=repo.path)
    assert r.out.startswith("# lefthook-local.jsonc: add at the top level\n\"pre-merge-commit\": "), r.out


def test_a_json_hook_without_commands_gets_a_commands_member(repo: Repo, cli: Any) -> None:
    repo.commit("start", {"lefthook.json": '{"pre-commit": {"parallel": true}, "post-commit": {}}\n'})
    r = cli("hooks", "install", "pre-commit", cwd=repo.path)
    assert r.out == ("# lefthook.json: in `pre-commit`'s object, after a comma\n"
                     '"commands": {"vivary": {"run": "git vivary hooks run pre-commit"}}\n\n# then: lefthook install\n')
    member = r.out.splitlines()[1]
    r = cli("hooks", "install", "post-commit", cwd=repo.path)
    assert r.out.startswith("# lefthook.json: in `post-commit`'s object\n"), r.out  # no member there: no comma
    text = '{"pre-commit": {"parallel": true, ' + member + '}, "post-commit": {}}\n'
    assert json.loads(text)["pre-commit"] == {"parallel": True, "commands": {"vivary": {
        "run": "git vivary hooks run pre-commit"}}}
    repo.write({"lefthook.json": text})
    _installed(repo)
    assert "pre-commit        lefthook's hook: lefthook.json runs vivary" in cli("hooks", "status", cwd=repo.path).out
