"""Plain Git hooks: install/uninstall/status next to existing hooks, and real `git commit`s through them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git

from vivary_git.gates.guard import _read_minimal
from vivary_git.gates.install import HOOKS, script

ROOT = Path(__file__).resolve().parents[1]
TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list" }
"""


def workspace(repo: Repo) -> None:
    repo.commit("start", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# B\n",
    })


def commit(repo: Repo | Path, *args: str, path: str = "/usr/bin:/bin",
           env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A real `git commit`; Git sends a hook's stdout to stderr, so `.stdout` holds both. The default
    PATH lacks our venv: the hook must find vivary-git through the Python that installed it."""
    full = dict(os.environ, PATH=path, **(env or {}))
    cwd = repo.path if isinstance(repo, Repo) else repo
    return subprocess.run(["git", "commit", "-q", "-m", "change", *args], cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=full, check=False)


def test_hook_files_in_the_repository_match_the_installer() -> None:
    for hook in HOOKS:
        path = ROOT / "hooks" / hook
        assert path.read_text() == script(hook, None), f"regenerate {path} from vivary_git/gates/install.py"
        assert os.access(path, os.X_OK)


def test_pre_commit_refuses_a_broken_reference_and_accepts_the_fix(repo: Repo, cli: Any) -> None:
    workspace(repo)
    assert cli("hooks", "install", cwd=repo.path).code == 0
    repo.git("rm", "-q", "modules/a.md")  # b still depends on a: only the staged tree as a whole shows it
    refused = commit(repo)
    assert refused.returncode == 1
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    repo.write({"modules/b.md": "---\n---\n# B\n"})
    repo.git("add", "modules/b.md")
    ok = commit(repo)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "0 error(s)" in ok.stdout


def test_a_merge_that_breaks_a_reference_is_refused_too(repo: Repo, cli: Any) -> None:
    """Git runs pre-merge-commit, not pre-commit, for a `git merge` that commits by itself: a branch adding a
    reference to a note the other branch removed merged cleanly and unchecked. The default install puts both gates
    in; the merge is refused with the finding, and HEAD stays where it was."""
    workspace(repo)
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 0 and (repo.path / ".git" / "hooks" / "pre-merge-commit").is_file(), r.out + r.err
    main = repo.git("rev-parse", "--abbrev-ref", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "feature")
    repo.write({"modules/c.md": "---\ndepends: [a]\n---\n# C\n"})
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    repo.git("checkout", "-q", main)
    repo.git("rm", "-q", "modules/a.md")
    repo.write({"modules/b.md": "---\n---\n# B\n"})
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    head = repo.git("rev-parse", "HEAD").strip()
    merged = subprocess.run(["git", "merge", "--no-edit", "feature"], cwd=repo.path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PATH="/usr/bin:/bin"),
                            check=False)
    assert merged.returncode != 0, merged.stdout
    assert "modules/c.md:2: error W220: field 'depends': ref 'a' matches no document id" in merged.stdout
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_commit_all_uses_the_index_git_hands_the_hook(repo: Repo, cli: Any) -> None:
    workspace(repo)
    cli("hooks", "install", cwd=repo.path)
    repo.write({"modules/b.md": "---\ndepends: [gone]\n---\n# B\n"})  # not staged: only `-a` stages it
    assert commit(repo, "-a").returncode == 1  # Git's temporary index, via GIT_INDEX_FILE


def test_privacy_guard_refuses_private_files_and_literal_secrets(repo: Repo, cli: Any) -> None:
    workspace(repo)
    cli("hooks", "install", cwd=repo.path)
    repo.write({"USER.md": "# me\n", "memory/log.md": "x\n"})
    repo.git("add", "USER.md", "memory/log.md")
    r = commit(repo)
    assert r.returncode == 1
    assert "USER.md:1: error P101: private file staged (floor: USER.md)" in r.stdout
    assert "memory/log.md:1: error P101: private file staged (floor: memory/**)" in r.stdout
    repo.git("rm", "-q", "--cached", "USER.md", "memory/log.md")
    secret = ('[memory]\nprovider = "cognee"\n\n[memory.cognee]\napi_key_env = "K"\n'
              'api_key = "sk-live-0123456789abcdefghij"\n\n[memory.privacy]\nprivate_paths = ["drafts/**"]\n')
    repo.write({".vivary/memory.toml": secret, "drafts/plan.md": "# plan\n"})
    repo.git("add", ".vivary/memory.toml")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1
    assert r.out.startswith(".vivary/memory.toml:6: error P102: `memory.cognee.api_key` holds a literal secret")
    assert "sk-live" not in r.out  # the secret itself is never echoed into a terminal or CI log
    repo.write({".vivary/memory.toml": secret.replace('api_key = "sk-live-0123456789abcdefghij"\n', "")})
    repo.git("add", ".vivary/memory.toml", "drafts/plan.md")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.out.splitlines() == [
        "drafts/plan.md:1: error P101: private file staged (config: drafts/**); unstage it with "
        "`git restore --staged -- drafts/plan.md` and list it in .gitignore",
    ]
    repo.git("rm", "-q", "--cached", "drafts/plan.md")
    assert cli("hooks", "privacy-guard", cwd=repo.path).code == 0  # .vivary/ config is committed on purpose
    assert commit(repo).returncode == 0



def test_a_private_file_git_ignores_is_not_sent_to_gitignore_again(repo: Repo, cli: Any) -> None:
    """`git vivary init` lists USER.md in .gitignore; staging it anyway takes `git add -f`. The fix names
    the unstaging, not a .gitignore line that is already there."""
    workspace(repo)
    repo.commit("ignore", {".gitignore": "USER.md\n/memory/\n"})
    cli("hooks", "install", cwd=repo.path)
    repo.write({"USER.md": "# me\n", "memory/log.md": "x\n", "drafts/plan.md": "# plan\n",
                ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n'})
    repo.git("add", "-f", "USER.md", "memory/log.md")
    repo.git("add", "drafts/plan.md", ".vivary/memory.toml")
    r = commit(repo)
    assert r.returncode == 1
    for path, rule in (("USER.md", "floor: USER.md"), ("memory/log.md", "floor: memory/**")):
        assert (f"{path}:1: error P101: private file staged ({rule}); unstage it with "
                f"`git restore --staged -- {path}` (Git already ignores it; `git add -f` stages it anyway)\n"
                ) in r.stdout, r.stdout
    assert ("drafts/plan.md:1: error P101: private file staged (config: drafts/**); unstage it with "
            "`git restore --staged -- drafts/plan.md` and list it in .gitignore\n") in r.stdout, r.stdout

def test_minimal_memory_config_reading_without_the_memory_module() -> None:
    text = b'[memory.cognee]\napi_key_env = "K"\ntoken = "abc"\n[memory.privacy]\nprivate_paths = ["d/**"]\n'
    private, findings = _read_minimal(".vivary/memory.toml", text, staged=True)
    assert private == ["d/**"]
    assert [(f.line, f.code) for f in findings] == [(3, "P102")]
    assert _read_minimal("m.toml", b"x = [", staged=False)[1][0].code == "P103"
    assert _read_minimal("m.toml", b'[memory.privacy]\nprivate_paths = "d"\n', staged=False)[1][0].line == 2


def test_nested_workspace_private_paths_are_anchored_there(repo: Repo, cli: Any) -> None:
    repo.commit("start", files={"docs/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["inbox/", "x.md"]\n'})
    repo.write({"inbox/keep.md": "a\n", "docs/inbox/secret.md": "b\n", "docs/deep/x.md": "c\n", "x.md": "d\n"})
    repo.git("add", "-A")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert [line.split(":")[0] for line in r.out.splitlines() if "P101" in line] == [
        "docs/deep/x.md", "docs/inbox/secret.md"]


def test_existing_hook_is_chained_and_restored(repo: Repo, cli: Any) -> None:
    workspace(repo)
    hooks = repo.path / ".git" / "hooks"
    mine = "#!/bin/sh\necho local-hook-ran\nexit ${LOCAL_EXIT:-0}\n"
    (hooks / "pre-commit").write_text(mine)
    (hooks / "pre-commit").chmod(0o755)
    r = cli("hooks", "install", cwd=repo.path)
    assert "your previous hook is now pre-commit.local and runs first" in r.out
    assert (hooks / "pre-commit.local").read_text() == mine
    status = cli("hooks", "status", cwd=repo.path).out
    assert "pre-commit        vivary (python " in status and "runs pre-commit.local first" in status
    got = cli("hooks", "status", "--json", cwd=repo.path).json()["hooks"][0]
    assert got["state"] == "vivary" and got["chained"].endswith("pre-commit.local") and got["python_ok"]
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    out = commit(repo)
    assert out.returncode == 0 and "local-hook-ran" in out.stdout
    repo.write({"modules/d.md": "---\n---\n# D\n"})
    repo.git("add", "-A")
    failed = commit(repo, env={"LOCAL_EXIT": "7"})
    assert failed.returncode == 1 and "vivary" not in failed.stdout  # the chained hook's failure stops it
    assert cli("hooks", "install", cwd=repo.path).out.startswith("vivary: pre-commit: updated")  # idempotent
    r = cli("hooks", "uninstall", cwd=repo.path)
    assert "restored your previous hook from pre-commit.local" in r.out
    assert (hooks / "pre-commit").read_text() == mine and not (hooks / "pre-commit.local").exists()


def test_install_refuses_rather_than_overwrite(repo: Repo, cli: Any) -> None:
    workspace(repo)
    hooks = repo.path / ".git" / "hooks"
    (hooks / "pre-commit").write_text("#!/bin/sh\n")
    (hooks / "pre-commit.local").write_text("#!/bin/sh\n")
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 3 and "both pre-commit and pre-commit.local exist" in r.err
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\n"
    assert "another hook (not vivary's)" in cli("hooks", "status", cwd=repo.path).out
    assert "is not vivary's; left alone" in cli("hooks", "uninstall", cwd=repo.path).out


def test_core_hooks_path_and_worktrees(repo: Repo, cli: Any, tmp_path: Path) -> None:
    workspace(repo)
    shared = tmp_path / "my-hooks"  # outside the work tree: this machine's own folder
    repo.git("config", "core.hooksPath", str(shared))
    r = cli("hooks", "install", "pre-commit", "post-commit", cwd=repo.path)
    assert (shared / "pre-commit").is_file() and (shared / "post-commit").is_file(), r.err
    assert f"core.hooksPath = {shared}" in cli("hooks", "status", cwd=repo.path).out, r.out
    # A git-ignored folder inside the work tree is this machine's too.
    repo.write({".gitignore": ".localhooks/\n"})
    repo.git("config", "core.hooksPath", ".localhooks")
    assert cli("hooks", "install", cwd=repo.path).code == 0
    assert (repo.path / ".localhooks" / "pre-commit").is_file()
    repo.git("config", "--unset", "core.hooksPath")
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", str(wt))
    cli("hooks", "install", cwd=wt)
    # Hooks live in the common Git directory: the main worktree sees them too.
    assert (repo.path / ".git" / "hooks" / "pre-commit").is_file()
    (wt / "modules" / "a.md").unlink()
    git(wt, "add", "-A")
    refused = commit(wt)
    assert refused.returncode == 1 and "ref 'a' matches no document id" in refused.stdout


def test_post_commit_is_silent_unless_auto_index(repo: Repo, cli: Any) -> None:
    """The hook runs `index --auto`: without `auto_index = true` it neither indexes nor complains."""
    workspace(repo)
    cli("hooks", "install", "post-commit", cwd=repo.path)
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    r = commit(repo)
    assert r.returncode == 0
    assert r.stdout.strip() == ""
    assert not (repo.path / ".git" / "vivary" / "memory").exists()


def test_post_commit_never_writes_its_log_through_a_link_out_of_the_git_folder(repo: Repo, cli: Any,
                                                                                tmp_path: Path) -> None:
    """The hook keeps what its background index says in `.git/vivary/index.log`, opened after every commit: a link
    at `.git/vivary` had it written wherever it led. The commit goes through; the hook says what is in the way."""
    workspace(repo)
    cli("hooks", "install", "post-commit", cwd=repo.path)
    outside = tmp_path / "outside"
    outside.mkdir()
    link = repo.path / ".git" / "vivary"
    link.symlink_to(outside)
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    r = commit(repo)
    assert r.returncode == 0 and repo.git("log", "-1", "--format=%s").strip() == "change"
    assert "post-commit: the memory index was not refreshed" in r.stdout, r.stdout
    assert f"{link}: a symbolic link that leads out of the Git folder" in r.stdout and "remove it" in r.stdout
    assert list(outside.iterdir()) == []


def test_hooks_status_shows_a_pinned_python_escaped_once_and_install_refuses_a_line_break(repo: Repo, cli: Any,
                                                                                        tmp_path: Path) -> None:
    """`hooks status` printed the path of a pinned Python that is gone as it was (a right-to-left override reversed
    the rest of the line on a terminal), while a Python still there went through the escaping. A path with a line
    break was written into the hook, where the status read half a quoted value: a traceback. The first is escaped
    once like every value; the second is refused at install, and a hook holding such a line is read without one."""
    workspace(repo)
    gone = tmp_path / "gone\u202e" / "python"
    assert cli("hooks", "install", "--python", str(gone), cwd=repo.path).code == 0
    out = cli("hooks", "status", cwd=repo.path).out
    assert f"vivary (python {tmp_path}/gone\\u202e/python is gone: falls back to git-vivary on PATH" in out, out
    assert "\u202e" not in out
    broken = f"{tmp_path}/gone\n::error::x/python"
    r = cli("hooks", "install", "--python", broken, cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert r.err == (f"git vivary hooks: --python {tmp_path}/gone\\n::error::x/python: a path with a control "
                     "character cannot be written into a hook script; give the path of a Python whose path has "
                     "none\n")
    hook = repo.path / ".git" / "hooks" / "pre-commit"
    assert str(gone) in hook.read_text()  # the refused install wrote nothing
    hook.write_text(hook.read_text().replace(str(gone), broken))  # such a line, written by another hand
    status = cli("hooks", "status", cwd=repo.path)
    assert status.code == 0 and "  pre-commit        vivary (git-vivary on PATH)\n" in status.out, status.err


def test_the_post_commit_hook_shows_a_path_escaped_once(tmp_path: Path, cli: Any) -> None:
    """The hook's word on a log it may not write is a message built with the path already escaped, shown through
    the escaping again: the escaping leaves an escaped value as it is, so a line break in the path shows as `\\n`,
    once, never `\\\\n`, and starts no line of its own."""
    repo = Repo(tmp_path / "ws\nx")
    repo.path.mkdir()
    repo.git("init", "-q", "-b", "main")
    workspace(repo)
    cli("hooks", "install", "post-commit", cwd=repo.path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / ".git" / "vivary").symlink_to(outside)
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    r = commit(repo)
    assert r.returncode == 0
    assert r.stdout == (f"vivary: post-commit: the memory index was not refreshed ({tmp_path}/ws\\nx/.git/vivary: a "
                        f"symbolic link that leads out of the Git folder (to {outside}) is in the place of a folder "
                        "of the background index's messages; remove it (vivary keeps only rebuildable data there))\n")


def test_the_post_commit_hook_names_a_python_it_cannot_start_escaped(repo: Repo, cli: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The hook starts the index with the Python running it; when that cannot be run (moved or removed since), the
    system's error was printed as it came, the one message of the hook not escaped. It names the program, escaped
    as every value is, and the commit is not held up."""
    workspace(repo)
    gone = tmp_path / "py\u202e\n::error::x" / "python"  # a path that is not there: the spawn fails
    monkeypatch.setattr(sys, "executable", str(gone))
    r = cli("hooks", "run", "post-commit", cwd=repo.path)
    assert r.code == 0 and r.out == ""
    assert r.err == (f"vivary: post-commit: could not start the memory index ({tmp_path}/py\\u202e\\n::error::x/"
                     "python: No such file or directory)\n")


def test_hook_without_vivary_fails_closed(repo: Repo, tmp_path: Path, cli: Any) -> None:
    workspace(repo)
    cli("hooks", "install", "--python", str(tmp_path / "gone" / "python"), cwd=repo.path)
    assert "is gone: falls back to git-vivary on PATH" in cli("hooks", "status", cwd=repo.path).out
    repo.write({"modules/c.md": "---\n---\n# C\n"})
    repo.git("add", "-A")
    r = commit(repo)
    assert r.returncode == 1 and "git-vivary is not on PATH" in r.stdout
    # With git-vivary on PATH (the venv's bin), the same hook works.
    ok = commit(repo, path=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    assert ok.returncode == 0, ok.stdout


@pytest.mark.parametrize("args", [["install", "bogus"], ["run", "pre-push"], []])
def test_hooks_usage_errors(repo: Repo, cli: Any, args: list[str]) -> None:
    assert cli("hooks", *args, cwd=repo.path).code == 2


def test_post_commit_docs_name_the_command_the_hook_runs() -> None:
    """The manifest and docs/hooks.md promised `index --yes`; the hook runs `index --auto` (it indexes
    only with `auto_index = true`, which counts as approval, and is silent otherwise)."""
    import yaml

    from vivary_git.commands.hooks import POST_COMMIT

    runs = "git vivary " + " ".join(POST_COMMIT)
    assert runs == "git vivary index --auto --rev HEAD"
    manifest = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert runs in manifest["vivary-index"]["description"]
    row = next(line for line in (ROOT / "docs" / "hooks.md").read_text().splitlines()
               if line.startswith("| `vivary-index`"))
    assert runs in row and "index --yes" not in row


SUB_TROPO = """version = 1
[base]
derive = ["id"]
[types.module]
folder = "modules"
required = { owner = "string" }
optional = { depends = "ref-list" }
"""


def test_install_root_checks_a_workspace_in_a_subfolder(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """A workspace in `docs/`: the hook ran from the top, read a zero-config vault there and passed every commit,
    and doctor said ok. `install` and `doctor` now name docs/tropo.toml and `--root docs`; with it the commit that
    breaks a reference is refused; a second install keeps the folder; two workspaces are both checked."""
    repo.commit("base", files={
        "docs/tropo.toml": SUB_TROPO,
        "docs/modules/core.md": "---\nowner: t\n---\n",
        "docs/modules/a.md": "---\nowner: t\ndepends: [core]\n---\n",
    })
    fix = "git vivary hooks install --root docs"
    r = cli("hooks", "install", cwd=repo.path)
    assert r.code == 0 and "docs/tropo.toml configures a workspace the hooks do not check" in r.out
    assert f"`{fix}`" in r.out
    doctor = cli("doctor", cwd=repo.path)
    assert "warning: hooks: docs/tropo.toml configures a workspace the hooks do not check" in doctor.out
    assert f"fix: {fix}" in doctor.out
    assert "note: docs/tropo.toml" in cli("hooks", "status", cwd=repo.path).out

    r = cli("hooks", "install", "--root", "docs", cwd=repo.path)
    assert r.code == 0 and "checks docs (was the top)" in r.out and "note:" not in r.out, r.out
    status = cli("hooks", "status", "--json", cwd=repo.path).json()
    assert [h["roots"] for h in status["hooks"]] == [["docs"], ["docs"], [], [], [], []] and status["unchecked"] is None
    assert "checks docs" in cli("hooks", "status", cwd=repo.path).out
    assert "hooks: " not in cli("doctor", cwd=repo.path).out
    repo.git("rm", "-q", "docs/modules/core.md")
    refused = commit(repo)
    assert refused.returncode == 1, refused.stdout
    assert "modules/a.md:3: error W220: field 'depends': ref 'core' matches no document id" in refused.stdout
    assert "vivary: workspace docs/" in refused.stdout
    repo.git("reset", "-q", "--hard")

    # Installing again without --root keeps the folder; `--root .` is the top; a folder from a subfolder.
    assert "checks docs as before" in cli("hooks", "install", cwd=repo.path).out
    assert "--root docs " in (repo.path / ".git" / "hooks" / "pre-commit").read_text()
    # Checked as --root is everywhere: no such folder, a file, outside the work tree, another repository.
    repo.write({"notes/tropo.toml": SUB_TROPO, "notes/modules/x.md": "---\nowner: t\n---\n", "file.md": "x\n"})
    git(repo.path, "init", "-q", "nested")
    for bad, said in (("nope", "no such directory"), ("file.md", "is a file"),
                      (str(tmp_path), "is not inside"), ("nested", "is another repository")):
        r = cli("hooks", "install", "--root", bad, cwd=repo.path)
        assert r.code == 2 and said in r.err and "Traceback" not in r.err, (bad, r.err)
    assert "--root docs " in (repo.path / ".git" / "hooks" / "pre-commit").read_text()  # unchanged
    (repo.path / "nested").rename(tmp_path / "nested-away")

    # Two workspaces: one named from a subfolder (relative to it, as --root is everywhere).
    r = cli("hooks", "install", "--root", "../docs", "--root", "../notes", cwd=repo.path / "notes")
    assert r.code == 0 and "checks docs, notes" in r.out, r.out + r.err
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    repo.write({"notes/modules/y.md": "---\nowner: t\ndepends: [gone]\n---\n"})
    repo.git("add", "-A")
    refused = commit(repo)
    assert refused.returncode == 1 and "modules/y.md:3: error W220" in refused.stdout, refused.stdout
    assert "vivary: workspace docs/" in refused.stdout and "vivary: workspace notes/" in refused.stdout
    assert "(was docs, notes)" in cli("hooks", "install", "--root", ".", cwd=repo.path).out
    assert "--root" not in (repo.path / ".git" / "hooks" / "pre-commit").read_text().split("exec", 1)[1]
    r = cli("hooks", "uninstall", cwd=repo.path)
    assert not (repo.path / ".git" / "hooks" / "pre-commit").exists(), r.out


def test_a_rebase_passes_the_hook_by_and_the_documented_exec_stops_it(repo: Repo, cli: Any) -> None:
    """Git runs no pre-commit hook for the commits a rebase makes: a branch adding a link to a note `main` deleted
    rebases cleanly with the hook installed. docs/hooks.md says so, and its `--exec` line stops the rebase at that
    commit (exit 1 of the check)."""
    workspace(repo)
    assert cli("hooks", "install", cwd=repo.path).code == 0
    repo.git("checkout", "-q", "-b", "feature")
    repo.write({"modules/c.md": "---\ndepends: [a]\n---\n# C\n"})
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    repo.git("checkout", "-q", "main")
    repo.git("rm", "-q", "modules/a.md")
    repo.write({"modules/b.md": "---\n---\n# B\n"})
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    repo.git("checkout", "-q", "feature")
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + "/usr/bin:/bin")
    plain = subprocess.run(["git", "rebase", "main"], cwd=repo.path, capture_output=True, text=True, env=env,
                           check=False)
    assert plain.returncode == 0, plain.stderr  # unchecked: the gap the docs describe
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 1
    repo.git("reset", "-q", "--hard", "ORIG_HEAD")

    text = (ROOT / "docs" / "hooks.md").read_text()
    assert "Git runs no `pre-commit` (and no `pre-merge-commit`) hook for the commits `git rebase`" in text
    line = next(ln.strip() for ln in text.splitlines() if ln.strip().startswith("git rebase --exec "))
    assert line == "git rebase --exec 'git vivary check --rev HEAD --new-since HEAD^' main"
    stopped = subprocess.run(line, shell=True, cwd=repo.path, capture_output=True, text=True, env=env, check=False)
    assert stopped.returncode != 0
    assert "modules/c.md:2: error W220: field 'depends': ref 'a' matches no document id" in stopped.stdout
    assert (repo.path / ".git" / "rebase-merge").is_dir()  # stopped there, to be fixed and continued
    repo.git("rebase", "--abort")


def test_status_lines_up_every_hook_name(repo: Repo, cli: Any) -> None:
    """`pre-merge-commit vivary (python …)` stood one column off the others: the names were padded to 12."""
    workspace(repo)
    cli("hooks", "install", cwd=repo.path)
    rows = [line for line in cli("hooks", "status", cwd=repo.path).out.splitlines() if line.startswith("  ")]
    assert [row.split()[0] for row in rows] == ["pre-commit", "pre-merge-commit", "post-commit", "post-checkout",
                                                "post-merge", "post-rewrite"]
    columns = {len(row) - len(row[2:].split(maxsplit=1)[1]) for row in rows}
    assert len(columns) == 1, rows
    assert rows[1].startswith("  pre-merge-commit  vivary (python ")


def test_status_says_a_post_commit_hook_alone_leaves_the_index_behind_a_checkout(repo: Repo, cli: Any) -> None:
    """A post-commit hook installed before post-checkout, post-merge and post-rewrite came with it: the index follows
    commits only, and a switch or a pull leaves recall refusing it as stale. status says how to add them."""
    workspace(repo)
    assert cli("hooks", "install", "post-commit", cwd=repo.path).code == 0
    assert cli("hooks", "uninstall", "post-checkout", "post-merge", "post-rewrite", cwd=repo.path).code == 0
    rows = {r.split()[0]: r for r in cli("hooks", "status", cwd=repo.path).out.splitlines() if r.startswith("  ")}
    for hook in ("post-checkout", "post-merge", "post-rewrite"):
        assert rows[hook].endswith("not installed; the index follows commits only: `git vivary hooks install "
                                   "post-commit` adds this hook, so that it follows a switch, a pull, a merge and a "
                                   "rebase too"), rows[hook]
    assert rows["pre-commit"].strip() == "pre-commit        not installed"
    assert cli("hooks", "install", "post-commit", cwd=repo.path).code == 0
    assert "follows commits only" not in cli("hooks", "status", cwd=repo.path).out


AUTO_INDEX = '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.local]\nauto_index = true\n'


def test_hooks_status_says_whether_the_auto_index_runs(repo: Repo, cli: Any) -> None:
    """`hooks status` listed the post-commit hooks as installed and said nothing of their `index --auto`, which
    indexes nothing until the user approves it: a user with the hooks and `auto_index = true` saw no reason why no
    index came. It says so, in doctor's words (the one decision, memory/local/autoindex.py), and exits 0."""
    repo.commit("notes", {"notes/a.md": "# A\n", ".vivary/memory.toml": AUTO_INDEX})
    assert cli("hooks", "install", "post-commit", cwd=repo.path).code == 0
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0 and r.out.endswith(
        "auto-index: auto_index = true in .vivary/memory.toml, not approved here (vivary.autoIndex is not set): the "
        "hooks index nothing until `git config vivary.autoIndex true`\n"), r.out
    j = cli("hooks", "status", "--json", cwd=repo.path)
    assert j.code == 0 and j.json()["auto_index"] == {
        "hooks": ["post-commit", "post-checkout", "post-merge", "post-rewrite"], "files": [".vivary/memory.toml"],
        "asked": [".vivary/memory.toml"], "approved": False, "declined": False, "said": "vivary.autoIndex is not set",
        "indexes": False, "unread": []}
    repo.git("config", "vivary.autoIndex", "true")
    r = cli("hooks", "status", cwd=repo.path)
    assert r.out.endswith("auto-index: auto_index = true in .vivary/memory.toml, approved here (vivary.autoIndex = "
                          "true, from .git/config)\n"), r.out
    assert cli("hooks", "status", "--json", cwd=repo.path).json()["auto_index"]["indexes"] is True
    # A `false` from a file the repository ships, included: it stands, and the line names the file.
    repo.git("config", "--unset", "vivary.autoIndex")
    repo.commit("shipped", {".gitconfig": "[vivary]\n\tautoIndex = false\n"})
    repo.git("config", "include.path", "../.gitconfig")
    r = cli("hooks", "status", cwd=repo.path)
    shipped = (repo.path / ".gitconfig").resolve()
    assert r.out.endswith(f"declined here (vivary.autoIndex = false comes from {shipped}, a file in the work tree, "
                          "which the repository can ship; it can only turn auto-indexing off): the hooks index "
                          "nothing\n"), r.out
    repo.git("config", "--unset", "include.path")
    # Asked for, with no hook to run it.
    assert cli("hooks", "uninstall", cwd=repo.path).code == 0
    r = cli("hooks", "status", cwd=repo.path)
    assert r.out.endswith("the hooks index nothing until `git config vivary.autoIndex true`; no installed hook runs "
                          "`index --auto` yet (`git vivary hooks install post-commit`)\n"), r.out


def test_hooks_status_says_when_no_committed_memory_toml_asks(repo: Repo, cli: Any) -> None:
    """With the hooks and no `auto_index = true` in HEAD's tree, which the hooks' run reads, they index nothing: said,
    with the approval; with neither hooks nor the file, nothing is said. A bad file is the error the run logs."""
    workspace(repo)
    assert cli("hooks", "install", cwd=repo.path).code == 0
    assert "auto-index" not in cli("hooks", "status", cwd=repo.path).out
    assert cli("hooks", "status", "--json", cwd=repo.path).json()["auto_index"] is None
    repo.commit("docs", {"docs/tropo.toml": TROPO})
    assert cli("hooks", "install", "--root", ".", "--root", "docs", cwd=repo.path).code == 0
    assert cli("hooks", "install", "post-commit", "--root", "docs", cwd=repo.path).code == 0
    repo.write({"docs/.vivary/memory.toml": AUTO_INDEX})  # not committed yet: the hooks' run does not see it
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0 and r.out.endswith(
        "auto-index: the hooks index nothing: no committed docs/.vivary/memory.toml sets auto_index = true "
        "(under [memory.local], provider \"vivary-local\"); vivary.autoIndex is not set\n"), r.out
    repo.commit("memory")
    assert cli("hooks", "status", cwd=repo.path).out.endswith(
        "auto-index: auto_index = true in docs/.vivary/memory.toml, not approved here (vivary.autoIndex is not set): "
        "the hooks index nothing until `git config vivary.autoIndex true`\n")
    repo.write({"docs/.vivary/memory.toml": AUTO_INDEX.replace("auto_index = true", 'auto_index = "yes"')})
    repo.git("add", "-A")
    repo.git("commit", "-q", "--no-verify", "-m", "bad")  # the gate refuses it; a commit may still bring it
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0 and r.out.endswith(
        "auto-index: the hooks' index run fails here: docs/.vivary/memory.toml:6: `$.memory.local.auto_index`: "
        "expected `bool`, got `str`; fix the value (see docs/index.md, the memory.toml reference)\n"), r.out


def test_hooks_status_names_no_memory_toml_as_committed_where_there_is_none(repo: Repo, cli: Any) -> None:
    """The indexing hooks in a repository with no .vivary/memory.toml at all: the line said "the committed
    .vivary/memory.toml does not set auto_index = true", sending the user to look for a file that is not there."""
    repo.commit("notes", {"notes/a.md": "# A\n"})
    assert cli("hooks", "install", "post-commit", cwd=repo.path).code == 0
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0 and r.out.endswith(
        "auto-index: the hooks index nothing: no committed .vivary/memory.toml sets auto_index = true (under "
        "[memory.local], provider \"vivary-local\"); vivary.autoIndex is not set\n"), r.out


def test_hooks_status_escapes_the_file_an_approval_came_from(repo: Repo, cli: Any) -> None:
    """The file named on the auto-index line is the repository's to name: escaped, so no line starts a CI runner's
    command."""
    repo.commit("notes", {".vivary/memory.toml": AUTO_INDEX,
                          "x\n::error::y/.gitconfig": "[vivary]\n\tautoIndex = true\n"})
    repo.git("config", "include.path", "../x\n::error::y/.gitconfig")
    assert cli("hooks", "install", "post-commit", cwd=repo.path).code == 0
    r = cli("hooks", "status", cwd=repo.path)
    assert r.code == 0 and "\n::" not in r.out, r.out
    assert ("x\\n::error::y/.gitconfig, a file in the work tree, which the repository can ship: it is not your "
            "approval") in r.out, r.out
