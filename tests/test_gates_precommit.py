"""The hooks of `.pre-commit-hooks.yaml`, run by the real pre-commit framework.

pre-commit builds a hook's environment from a *committed* revision of the hook repository, so this
repository's working files (uncommitted work included) are copied into a temporary Git repository
and committed there. Building that environment pip-installs vivary-git and its dependencies from
PyPI once per session (PRE_COMMIT_HOME is shared by these tests; set VIVARY_TEST_PRE_COMMIT_HOME to
keep it across sessions). Select or skip these with `-m precommit` / `-m "not precommit"`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GIT_ENV, Repo, git

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.precommit
PRE_COMMIT = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
if PRE_COMMIT is None:
    pytest.skip("pre-commit is not installed (it is in the dev extra)", allow_module_level=True)

TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list" }
"""


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """This repository's working files, committed in a scratch repository; yields (path, commit)."""
    dest = tmp_path_factory.mktemp("hook-repo")
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    env = dict(os.environ, **GIT_ENV)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "snapshot"]):
        subprocess.run(["git", *args], cwd=dest, env=env, check=True, capture_output=True)
    rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=dest, env=env, check=True, capture_output=True,
                         text=True).stdout.strip()
    yield dest, rev


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = os.environ.get("VIVARY_TEST_PRE_COMMIT_HOME")
    return Path(kept) if kept else tmp_path_factory.mktemp("pre-commit-home")


def pre_commit(cwd: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    assert PRE_COMMIT is not None
    env = dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never")
    return subprocess.run([PRE_COMMIT, *args], cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False, timeout=600)


def workspace(repo: Repo) -> None:
    repo.commit("start", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# B\n",
    })


def test_try_repo_refuses_a_deleted_reference_target(repo: Repo, hook_repo: tuple[Path, str],
                                                      pre_commit_home: Path) -> None:
    workspace(repo)
    repo.git("rm", "-q", "modules/a.md")  # only b.md references it, and b.md is not staged
    r = pre_commit(repo.path, pre_commit_home, "try-repo", str(hook_repo[0]), "vivary-check", "--all-files")
    assert r.returncode == 1, r.stdout
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in r.stdout
    repo.git("reset", "-q", "--hard")
    r = pre_commit(repo.path, pre_commit_home, "try-repo", str(hook_repo[0]), "vivary-check", "--all-files")
    assert r.returncode == 0, r.stdout
    assert "Passed" in r.stdout


def test_installed_hooks_gate_real_commits(repo: Repo, hook_repo: tuple[Path, str], pre_commit_home: Path) -> None:
    path, rev = hook_repo
    workspace(repo)
    repo.commit("config", files={".pre-commit-config.yaml": (
        f"repos:\n  - repo: {path}\n    rev: {rev}\n    hooks:\n"
        "      - id: vivary-check\n      - id: vivary-privacy\n      - id: vivary-index\n")})
    r = pre_commit(repo.path, pre_commit_home, "install", "--hook-type", "pre-commit", "--hook-type", "post-commit")
    assert r.returncode == 0, r.stdout

    def commit() -> subprocess.CompletedProcess[str]:
        env = dict(os.environ, PRE_COMMIT_HOME=str(pre_commit_home), PRE_COMMIT_COLOR="never")
        return subprocess.run(["git", "commit", "-m", "change"], cwd=repo.path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False, timeout=600)

    repo.git("rm", "-q", "modules/a.md")
    refused = commit()
    assert refused.returncode == 1, refused.stdout
    assert "vivary check (staged tree)" in refused.stdout and "Failed" in refused.stdout
    assert "ref 'a' matches no document id" in refused.stdout
    assert repo.git("rev-parse", "HEAD:modules/a.md", check=False).strip()  # still committed

    repo.write({"modules/b.md": "---\n---\n# B\n"})
    repo.git("add", "modules/b.md")
    ok = commit()
    assert ok.returncode == 0, ok.stdout
    assert "vivary index (post-commit, opt-in)" in ok.stdout  # the opt-in post-commit hook ran

    repo.write({"USER.md": "# me\n"})
    repo.git("add", "USER.md")
    private = commit()
    assert private.returncode == 1, private.stdout
    assert "USER.md:1: error P101: private file staged (floor: USER.md)" in private.stdout
    git(repo.path, "rm", "-q", "--cached", "USER.md")


def test_the_local_recipe_of_docs_hooks_gates_real_commits(repo: Repo, tmp_path: Path) -> None:
    """docs/hooks.md's recipe for today (`repo: local`, `language: system`), copied as written: it runs the
    installed `git-vivary` (this environment's, first on PATH), so pre-commit builds nothing from PyPI."""
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    recipe = next(b for b in blocks if "repo: local" in b and "id: vivary-privacy" in b)
    assert "example.invalid" not in recipe and "OWNER" not in recipe
    workspace(repo)
    repo.commit("config", files={".pre-commit-config.yaml": recipe})
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert PRE_COMMIT is not None
    r = subprocess.run([PRE_COMMIT, "install", "--hook-type", "pre-commit", "--hook-type", "post-commit"],
                       cwd=repo.path, env=env, capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr

    def commit() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "commit", "-m", "change"], cwd=repo.path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False, timeout=600)

    repo.git("rm", "-q", "modules/a.md")
    refused = commit()
    assert refused.returncode == 1, refused.stdout
    assert "vivary check (staged tree)" in refused.stdout and "ref 'a' matches no document id" in refused.stdout
    repo.write({"modules/b.md": "---\n---\n# B\n"})
    repo.git("add", "modules/b.md")
    ok = commit()
    assert ok.returncode == 0, ok.stdout
    assert "vivary index (post-commit, opt-in)" in ok.stdout
    repo.write({"USER.md": "# me\n"})
    repo.git("add", "USER.md")
    private = commit()
    assert private.returncode == 1, private.stdout
    assert "USER.md:1: error P101: private file staged (floor: USER.md)" in private.stdout


def _ci_workspace(repo: Repo, config: str) -> None:
    """A `main` with the hooks configured, and a branch `topic` whose commit, made with `--no-verify` as any
    commit in CI may have been, deletes the note `modules/b.md` depends on."""
    workspace(repo)
    repo.commit("config", files={".pre-commit-config.yaml": config})
    repo.git("checkout", "-q", "-b", "topic")
    repo.git("rm", "-q", "modules/a.md")
    repo.git("commit", "-q", "--no-verify", "-m", "drop a")


def _local_recipe() -> str:
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    return next(b for b in blocks if "repo: local" in b and "id: vivary-privacy" in b)


def _system_env(home: Path) -> dict[str, str]:
    """pre-commit running the `git-vivary` of this environment (the local recipe's `language: system`)."""
    return dict(os.environ, PRE_COMMIT_HOME=str(home), PRE_COMMIT_COLOR="never",
                PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def _run(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False, timeout=600)


def test_ci_run_from_ref_to_ref_judges_the_change_not_the_empty_index(repo: Repo, tmp_path: Path) -> None:
    """In CI the index equals HEAD: `new since HEAD` passed every pull request. With the range pre-commit names,
    the gate judges TO_REF's tree against FROM_REF, as `git vivary ci --base` does."""
    _ci_workspace(repo, _local_recipe())
    env = _system_env(tmp_path / "pre-commit-home")
    assert PRE_COMMIT is not None
    r = _run(repo.path, env, PRE_COMMIT, "run", "--from-ref", "main", "--to-ref", "HEAD")
    assert r.returncode == 1, r.stdout
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in r.stdout
    assert "1 new error(s), 0 new warning(s) in HEAD since main" in r.stdout
    # --all-files names no range: the staged tree against HEAD, as in a commit (docs/hooks.md#pre-commit-in-ci).
    r = _run(repo.path, env, PRE_COMMIT, "run", "--all-files", "vivary-check")
    assert r.returncode == 0, r.stdout
    # A range that ends where it starts adds nothing.
    r = _run(repo.path, env, PRE_COMMIT, "run", "--from-ref", "HEAD", "--to-ref", "HEAD", "vivary-check")
    assert r.returncode == 0, r.stdout


def test_ci_run_reads_a_base_that_moved_on_as_the_merge_base(repo: Repo, tmp_path: Path) -> None:
    """`--from-ref main` after main fixed a broken link the branch still has: compared with main's tip, that
    old link would count as the branch's own; compared with their merge base it is debt the change kept."""
    workspace(repo)
    repo.commit("debt", files={".pre-commit-config.yaml": _local_recipe(),
                               "modules/c.md": "---\ndepends: [ghost]\n---\n# C\n"})
    repo.git("checkout", "-q", "-b", "topic")
    repo.commit("edit b", files={"modules/b.md": "---\ndepends: [a]\n---\n# B, edited\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("fix c", files={"modules/c.md": "---\n---\n# C\n"})
    repo.git("checkout", "-q", "topic")
    env = _system_env(tmp_path / "pre-commit-home")
    assert PRE_COMMIT is not None
    r = _run(repo.path, env, PRE_COMMIT, "run", "--from-ref", "main", "--to-ref", "HEAD", "vivary-check")
    assert r.returncode == 0, r.stdout
    r = _run(repo.path, env, PRE_COMMIT, "run", "--verbose", "--from-ref", "main", "--to-ref", "HEAD",
             "vivary-check")
    assert "vivary: main: not an ancestor of HEAD: compared with their merge base" in r.stdout, r.stdout
    assert "1 error(s) and 0 warning(s) it already had are not shown" in r.stdout


def _pre_push(repo: Repo, hook_repo: tuple[Path, str], pre_commit_home: Path,
              tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """The CI workspace with vivary-check at the user's `stages: [pre-push]`, pre-commit's pre-push hook installed and
    an empty bare `origin`: (the remote, pre-commit's environment)."""
    path, rev = hook_repo
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    _ci_workspace(repo, f"repos:\n  - repo: {path}\n    rev: {rev}\n    hooks:\n"
                        "      - id: vivary-check\n        stages: [pre-push]\n")
    repo.git("remote", "add", "origin", str(remote))
    env = dict(os.environ, PRE_COMMIT_HOME=str(pre_commit_home), PRE_COMMIT_COLOR="never")
    assert PRE_COMMIT is not None
    r = _run(repo.path, env, PRE_COMMIT, "install", "--hook-type", "pre-push")
    assert r.returncode == 0, r.stdout
    return remote, env


def test_a_users_pre_push_stage_refuses_a_push_that_breaks_a_reference(
        repo: Repo, hook_repo: tuple[Path, str], pre_commit_home: Path, tmp_path: Path) -> None:
    """`.pre-commit-hooks.yaml` lists pre-commit and pre-merge-commit, but a user's `stages:` replaces that
    list (pre-commit checks no subset); pre-push names the range pushed: the remote's commit to the local one."""
    remote, env = _pre_push(repo, hook_repo, pre_commit_home, tmp_path)
    r = _run(repo.path, env, "git", "push", "-q", "origin", "main")
    assert r.returncode == 0, r.stdout
    refused = _run(repo.path, env, "git", "push", "-q", "origin", "topic")
    assert refused.returncode == 1, refused.stdout
    assert "vivary check (staged tree)" in refused.stdout and "Failed" in refused.stdout
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert not git(remote, "branch", "--list", "topic").strip()  # nothing pushed
    repo.commit("fix b", files={"modules/b.md": "---\n---\n# B\n"})
    pushed = _run(repo.path, env, "git", "push", "-q", "origin", "topic")
    assert pushed.returncode == 0, pushed.stdout


def test_a_first_push_to_an_empty_remote_judges_the_whole_tree(
        repo: Repo, hook_repo: tuple[Path, str], pre_commit_home: Path, tmp_path: Path) -> None:
    """A push the remote has none of the commits of names no range: pre-commit runs it as `--all-files`, naming
    only the pushed ref. Nothing to compare with, so every finding is the push's, as in a first commit."""
    _, env = _pre_push(repo, hook_repo, pre_commit_home, tmp_path)
    refused = _run(repo.path, env, "git", "push", "-q", "origin", "topic")
    assert refused.returncode == 1, refused.stdout
    assert "modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert "vivary: 1 document(s), 1 error(s), 0 warning(s) in refs/heads/topic" in refused.stdout
    assert _run(repo.path, env, "git", "push", "-q", "origin", "main").returncode == 0


def test_the_local_recipe_keeps_the_auto_index_at_a_branch_checked_out(repo: Repo, tmp_path: Path) -> None:
    """The recipe's vivary-index-checkout hook, run by the framework at post-checkout: the framework passes Git's
    arguments in PRE_COMMIT_* variables, not as arguments, and the index follows the branch switched to."""
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to see the background index finish")
    text = (ROOT / "docs" / "hooks.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```yaml\n")[1:]]
    recipe = next(b for b in blocks if "repo: local" in b and "id: vivary-index-checkout" in b)
    repo.commit("notes", files={
        ".pre-commit-config.yaml": recipe,
        ".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.local]\n'
                               'auto_index = true\n',
        "notes/deploy.md": "# Deploy\n\nBlue green deploys.\n"})
    repo.git("config", "vivary.autoIndex", "true")  # the user's approval; the committed file is the team's wish
    repo.git("switch", "-q", "-c", "tea")
    repo.commit("tea", files={"notes/tea.md": "# Tea\n\nGreen tea steeps at eighty degrees.\n"})
    repo.git("switch", "-q", "main")
    env = dict(os.environ, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), PRE_COMMIT_COLOR="never",
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    assert PRE_COMMIT is not None
    r = subprocess.run([PRE_COMMIT, "install", "--hook-type", "post-checkout"], cwd=repo.path, env=env,
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    assert subprocess.run(["git", "vivary", "index", "--yes"], cwd=repo.path, env=env, capture_output=True,
                          check=False).returncode == 0
    switched = subprocess.run(["git", "switch", "tea"], cwd=repo.path, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, check=False)
    assert switched.returncode == 0 and "vivary index (post-checkout)" in switched.stdout, switched.stdout
    log = repo.path / ".git" / "vivary" / "index.log"
    assert log.is_file(), "the hook started no index run"
    while any(_holds_open(p, log) for p in Path("/proc").iterdir() if p.name.isdigit()):
        os.sched_yield()
    hit = subprocess.run(["git", "vivary", "recall", "green tea"], cwd=repo.path, env=env, capture_output=True,
                         text=True, check=False)
    assert hit.returncode == 0 and "notes/tea" in hit.stdout, hit.stderr + log.read_text()


def _holds_open(proc: Path, path: Path) -> bool:
    """Whether the process of /proc/PID `proc` has `path` open (a background index run writing its log)."""
    try:
        return any(os.readlink(fd) == str(path) for fd in (proc / "fd").iterdir())
    except OSError:
        return False
