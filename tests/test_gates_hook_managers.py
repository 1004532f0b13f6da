"""`git vivary hooks` next to hook managers: husky 9, the pre-commit framework, a tracked hooks folder.

Each manager is the real tool where it can be had: husky 9 from npm (tests/npm_tools.py; the same
test also runs on husky 9's layout written by hand, so it runs without npm too), pre-commit from the
dev extra (its `repo: local` hooks need no download). Commits are real `git commit`s.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from npm_tools import npm_home, npm_install

from vivary_git.gates.install import script

BIN = str(Path(sys.executable).parent)  # git-vivary and pre-commit live here
PATH = BIN + os.pathsep + "/usr/bin:/bin"
TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list" }
"""


def workspace(repo: Repo, files: dict[str, str] | None = None) -> None:
    repo.commit("start", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# B\n",
        **(files or {}),
    })


def commit(repo: Repo, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PATH=PATH, PRE_COMMIT_COLOR="never")
    if home is not None:
        env["PRE_COMMIT_HOME"] = str(home)
    return subprocess.run(["git", "commit", "-q", "-m", "change"], cwd=repo.path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env, check=False, timeout=300)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under `folder`, byte for byte, with its mode."""
    return {p.relative_to(folder).as_posix(): (p.read_bytes(), stat.S_IMODE(p.lstat().st_mode))
            for p in sorted(folder.rglob("*")) if p.is_file()}


def advice(out: str) -> str:
    """The lines `install` printed to add, without its comment lines."""
    return "".join(line + "\n" for line in out.splitlines() if line and not line.startswith("# "))


def break_reference(repo: Repo) -> None:
    repo.git("rm", "-q", "modules/a.md")  # b still depends on a


# --- husky 9 ---------------------------------------------------------------------------------------

# husky 9.1.7's dispatcher (`node_modules/husky/husky`, MIT), as `npx husky` copies it to .husky/_/h.
HUSKY_H = """#!/usr/bin/env sh
[ "$HUSKY" = "2" ] && set -x
n=$(basename "$0")
s=$(dirname "$(dirname "$0")")/$n

[ ! -f "$s" ] && exit 0

if [ -f "$HOME/.huskyrc" ]; then
	echo "husky - '~/.huskyrc' is DEPRECATED, please move your code to ~/.config/husky/init.sh"
fi
i="${XDG_CONFIG_HOME:-$HOME/.config}/husky/init.sh"
[ -f "$i" ] && . "$i"

[ "${HUSKY-}" = "0" ] && exit 0

export PATH="node_modules/.bin:$PATH"
sh -e "$s" "$@"
c=$?

[ $c != 0 ] && echo "husky - $n script failed (code $c)"
[ $c = 127 ] && echo "husky - command not found in PATH=$PATH"
exit $c
"""
HUSKY_HOOKS = ("pre-commit", "pre-merge-commit", "prepare-commit-msg", "commit-msg", "post-commit",
               "applypatch-msg", "pre-applypatch", "post-applypatch", "pre-rebase", "post-rewrite",
               "post-checkout", "post-merge", "pre-push", "pre-auto-gc")


@pytest.fixture(params=["npm", "by-hand"])
def husky(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """What `npx husky` (run by every `npm install` through the `prepare` script) does in a repository."""
    if request.param == "npm":
        modules = npm_install(npm_home(tmp_path_factory), "husky@9")
        node = shutil.which("node")
        assert node is not None  # npm runs on node

        def run(path: Path) -> None:
            proc = subprocess.run([node, str(modules / "husky" / "bin.js")], cwd=path, capture_output=True,
                                  text=True, check=False)
            assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr
        return run

    def by_hand(path: Path) -> None:
        subprocess.run(["git", "config", "core.hooksPath", ".husky/_"], cwd=path, check=True)
        d = path / ".husky" / "_"
        d.mkdir(parents=True, exist_ok=True)
        (d / ".gitignore").write_text("*")
        (d / "h").write_text(HUSKY_H)
        for hook in HUSKY_HOOKS:
            (d / hook).write_text('#!/usr/bin/env sh\n. "$(dirname "$0")/h"')
            (d / hook).chmod(0o755)
    return by_hand


def test_husky_9_keeps_its_files_and_gets_the_line_to_add(repo: Repo, cli: Any, husky: Any) -> None:
    workspace(repo, {"package.json": '{"name": "notes", "private": true, "scripts": {"prepare": "husky"}}\n',
                     ".husky/pre-commit": "echo user-hook-ran\n"})
    husky(repo.path)
    assert repo.git("config", "core.hooksPath").strip() == ".husky/_"
    before = snapshot(repo.path / ".husky")

    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert "husky manages this repository's hooks (core.hooksPath = .husky/_)" in r.err
    assert r.out == "# .husky/pre-commit\ngit vivary hooks run pre-commit\n"
    assert snapshot(repo.path / ".husky") == before  # nothing renamed, nothing written
    status = cli("hooks", "status", cwd=repo.path).out
    assert "managed by husky (core.hooksPath = .husky/_)" in status
    assert "pre-commit        husky's hook: runs .husky/pre-commit, which does not run vivary" in status

    with (repo.path / ".husky" / "pre-commit").open("a") as f:
        f.write(advice(r.out))
    repo.git("add", ".husky/pre-commit")
    break_reference(repo)
    refused = commit(repo)
    assert refused.returncode == 1, refused.stdout
    assert "user-hook-ran" in refused.stdout  # the user's hook still runs
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert "pre-commit        husky's hook: runs .husky/pre-commit, which runs vivary" in \
        cli("hooks", "status", cwd=repo.path).out

    husky(repo.path)  # the next `npm install`: nothing of vivary's to overwrite, the gate stays
    assert commit(repo).returncode == 1
    again = cli("hooks", "install", cwd=repo.path)
    assert again.code == 0 and "husky already runs vivary (.husky/pre-commit); nothing to do" in again.out
    repo.git("reset", "-q", "--hard")
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    ok = commit(repo)
    assert ok.returncode == 0 and "user-hook-ran" in ok.stdout, ok.stdout


def test_uninstall_after_husky_rewrote_an_earlier_install(repo: Repo, cli: Any, husky: Any) -> None:
    """An earlier vivary-git renamed husky's dispatcher to pre-commit.local (husky never looks there)
    and `npx husky` then wrote the dispatcher over vivary's script: uninstall leaves husky's files as
    husky wrote them."""
    workspace(repo, {".husky/pre-commit": "echo user-hook-ran\n"})
    husky(repo.path)
    d = repo.path / ".husky" / "_"
    original = snapshot(d)
    (d / "pre-commit").rename(d / "pre-commit.local")  # what that earlier install did
    (d / "pre-commit").write_text(script("pre-commit", sys.executable))
    (d / "pre-commit").chmod(0o755)
    assert "pre-commit        vivary (python " in cli("hooks", "status", cwd=repo.path).out
    assert cli("hooks", "install", cwd=repo.path).code == 3  # it says: uninstall first
    husky(repo.path)
    r = cli("hooks", "uninstall", cwd=repo.path)
    assert r.code == 0 and "removed the identical copy pre-commit.local" in r.out
    assert snapshot(d) == original


# --- the pre-commit framework ------------------------------------------------------------------------

CONFIG = """repos:
  - repo: local
    hooks:
      - id: hello
        name: hello
        entry: echo hello-from-pre-commit
        language: system
        pass_filenames: false
        always_run: true
"""


def pre_commit(repo: Repo, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("pre-commit", path=BIN)
    if exe is None:
        pytest.skip("pre-commit is not installed (it is in the dev extra)")
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never", PATH=PATH)
    proc = subprocess.run([exe, *args], cwd=repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout
    return proc


def test_pre_commit_framework_keeps_its_script_and_gets_a_config_entry(repo: Repo, cli: Any,
                                                                        tmp_path: Path) -> None:
    home = tmp_path / "pre-commit-home"
    workspace(repo, {".pre-commit-config.yaml": CONFIG})
    pre_commit(repo, home, "install")
    hooks = repo.path / ".git" / "hooks"
    before = snapshot(hooks)

    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3, r.out + r.err
    assert "the pre-commit framework manages this repository's hooks (its script is .git/hooks/pre-commit)" in r.err
    assert r.out.startswith("# .pre-commit-config.yaml, under `repos:`\n  - repo: local\n")
    assert "        entry: git-vivary hooks run pre-commit\n        language: system\n" in r.out
    assert snapshot(hooks) == before
    assert ".pre-commit-config.yaml does not run vivary" in cli("hooks", "status", cwd=repo.path).out

    with (repo.path / ".pre-commit-config.yaml").open("a") as f:
        f.write(r.out)
    repo.git("add", ".pre-commit-config.yaml")
    pre_commit(repo, home, "install")  # routine, as after every clone: no "migration mode"
    break_reference(repo)
    refused = commit(repo, home)
    assert refused.returncode == 1, refused.stdout
    assert re.search(r"^hello\.+Passed$", refused.stdout, re.M)  # the user's own hook still runs
    assert "ref 'a' matches no document id" in refused.stdout and "migration mode" not in refused.stdout
    status = cli("hooks", "status", cwd=repo.path).out
    assert "pre-commit        the pre-commit framework's hook: .pre-commit-config.yaml runs vivary" in status
    assert cli("hooks", "install", cwd=repo.path).code == 0
    assert cli("hooks", "install", "post-commit", cwd=repo.path).code == 3  # not in the config yet


def test_uninstall_restores_pre_commit_after_it_moved_ours_to_legacy(repo: Repo, cli: Any, tmp_path: Path) -> None:
    home = tmp_path / "pre-commit-home"
    workspace(repo, {".pre-commit-config.yaml": CONFIG})
    pre_commit(repo, home, "install")
    hooks = repo.path / ".git" / "hooks"
    original = snapshot(hooks)
    # What an earlier vivary-git's `hooks install` did: chain pre-commit's script as pre-commit.local.
    (hooks / "pre-commit").rename(hooks / "pre-commit.local")
    (hooks / "pre-commit").write_text(script("pre-commit", sys.executable))
    (hooks / "pre-commit").chmod(0o755)
    pre_commit(repo, home, "install")  # moves vivary's script to pre-commit.legacy ("migration mode")
    assert "vivary-git hook" in (hooks / "pre-commit.legacy").read_text()
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    broken = commit(repo, home)
    assert broken.returncode != 0 and "migration mode" in broken.stdout  # every commit fails like this
    status = cli("hooks", "status", cwd=repo.path).out
    assert "(migration mode); run `git vivary hooks uninstall`" in status
    assert cli("hooks", "install", cwd=repo.path).code == 3

    r = cli("hooks", "uninstall", cwd=repo.path)
    assert "restored your previous hook from pre-commit.local" in r.out, r.out
    assert snapshot(hooks) == original  # byte for byte, modes included
    ok = commit(repo, home)
    assert ok.returncode == 0 and re.search(r"^hello\.+Passed$", ok.stdout, re.M), ok.stdout


# --- a core.hooksPath folder in the work tree ------------------------------------------------------------

def test_tracked_hooks_folder_is_not_rewritten(repo: Repo, cli: Any) -> None:
    workspace(repo, {".githooks/pre-commit": "#!/bin/sh\necho team-hook-ran\n"})
    repo.git("update-index", "--chmod=+x", ".githooks/pre-commit")
    (repo.path / ".githooks" / "pre-commit").chmod(0o755)
    repo.commit("executable")
    repo.git("config", "core.hooksPath", ".githooks")
    before = snapshot(repo.path / ".githooks")

    r = cli("hooks", "install", "pre-commit", "post-commit", cwd=repo.path)
    assert r.code == 3
    assert "a shared hooks folder manages this repository's hooks (core.hooksPath = .githooks, a folder Git " \
           "tracks)" in r.err
    assert r.out == ("# .githooks/pre-commit: add this line\ngit vivary hooks run pre-commit || exit $?\n\n"
                     "# .githooks/post-commit (a new file; then `chmod +x .githooks/post-commit` and commit it)\n"
                     "#!/bin/sh\nexec git vivary hooks run post-commit\n"
                     + "".join(f"\n# .githooks/{h} (a new file; then `chmod +x .githooks/{h}` and commit it)\n"
                               f'#!/bin/sh\nexec git vivary hooks run {h} "$@"\n'
                               for h in ("post-checkout", "post-merge", "post-rewrite")))
    assert snapshot(repo.path / ".githooks") == before and repo.git("status", "--porcelain") == ""
    assert sys.executable not in "".join(p.read_text() for p in (repo.path / ".githooks").iterdir())

    with (repo.path / ".githooks" / "pre-commit").open("a") as f:
        f.write("git vivary hooks run pre-commit || exit $?\n")
    status = cli("hooks", "status", cwd=repo.path).out
    assert "pre-commit        your hook (.githooks/pre-commit), which runs vivary" in status
    break_reference(repo)
    refused = commit(repo)
    assert refused.returncode == 1 and "team-hook-ran" in refused.stdout
    assert "ref 'a' matches no document id" in refused.stdout

    # A folder that does not exist yet but would be committed is shared too.
    repo.git("config", "core.hooksPath", "tools/hooks")
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3 and "inside the work tree and not ignored (it would be committed)" in r.err
    assert not (repo.path / "tools").exists()
