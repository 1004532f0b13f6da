"""`git vivary hooks install pre-receive` on a server: real bare repositories, real `git push`es into them."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import Repo, git, run_git_vivary

TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list" }
"""
# A dispatcher as Gitea and Forgejo write it in hooks/pre-receive: every script in pre-receive.d gets the refs.
DISPATCHER = """#!/bin/sh
data=$(cat)
for hook in "$(dirname "$0")/pre-receive.d"/*; do
    test -x "$hook" && test -f "$hook" || continue
    printf '%s\\n' "$data" | "$hook" || exit $?
done
"""


def _bare(tmp_path: Path, repo: Repo) -> Path:
    bare = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    repo.commit("start", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n",
                                "modules/b.md": "---\ndepends: [a]\n---\n# B\n"})
    return bare


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def push(repo: Repo, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "push", "origin", *args], cwd=repo.path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=env or dict(os.environ), check=False)


def test_install_in_a_bare_repository_keeps_the_hook_there_and_guards_every_push(tmp_path: Path,
                                                                                 repo: Repo) -> None:
    bare = _bare(tmp_path, repo)
    seen = tmp_path / "seen"
    mine = f"#!/bin/sh\ncat >> '{seen}'\n"
    _executable(bare / "hooks" / "pre-receive", mine)
    installed = run_git_vivary(["hooks", "install"], bare)  # a bare repository: the server's hook by default
    assert installed.returncode == 0, installed.stderr
    assert "vivary: pre-receive: installed " in installed.stdout and "pre-receive.local and runs first" \
        in installed.stdout
    status = run_git_vivary(["hooks", "status"], bare).stdout
    assert "pre-receive       vivary (python " in status and "runs pre-receive.local first" in status, status
    # The server's hook runs with no HOME, and with who pushed in its environment: neither decides anything.
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CONFIG_HOME")}
    env.update(GL_ID="user-1", GL_USERNAME="root", GITEA_PUSHER_NAME="admin", GITEA_PUSHER_ID="1")
    first = push(repo, "main", env=env)
    assert first.returncode == 0, first.stdout
    assert "remote: vivary: refs/heads/main: checking " in first.stdout
    repo.git("rm", "-q", "modules/a.md")
    repo.commit("drop a")
    refused = push(repo, "main", env=env)
    assert refused.returncode == 1, refused.stdout
    assert "remote: modules/b.md:2: error W220: field 'depends': ref 'a' matches no document id" in refused.stdout
    assert "remote: vivary: push refused: refs/heads/main would gain the errors above" in refused.stdout
    assert "[remote rejected] main -> main (pre-receive hook declined)" in refused.stdout
    lines = seen.read_text().splitlines()  # the hook kept got every push's refs, whole
    assert len(lines) == 2 and all(line.endswith(" refs/heads/main") for line in lines), lines
    removed = run_git_vivary(["hooks", "uninstall", "pre-receive"], bare)
    assert "restored your previous hook from pre-receive.local" in removed.stdout, removed.stdout
    assert (bare / "hooks" / "pre-receive").read_text() == mine
    assert not (bare / "hooks" / "pre-receive.local").exists()
    assert push(repo, "main").returncode == 0


def test_gitea_and_forgejo_get_a_script_in_pre_receive_d(tmp_path: Path, repo: Repo) -> None:
    bare = _bare(tmp_path, repo)
    hooks = bare / "hooks"
    _executable(hooks / "pre-receive", DISPATCHER)
    _executable(hooks / "pre-receive.d" / "gitea", "#!/bin/sh\ncat >/dev/null\necho gitea-ran\n")
    installed = run_git_vivary(["hooks", "install", "pre-receive"], bare)
    assert installed.returncode == 0, installed.stderr
    assert f"installed {hooks / 'pre-receive.d' / 'vivary'} (pre-receive.d/ is there" in installed.stdout
    assert (hooks / "pre-receive").read_text() == DISPATCHER  # the server's own file is the server's
    assert "pre-receive.d/vivary)" in run_git_vivary(["hooks", "status"], bare).stdout
    assert push(repo, "main").returncode == 0
    repo.commit("d", files={"modules/d.md": "---\ndepends: [nowhere]\n---\n# D\n"})
    repo.git("tag", "v1")
    refused = push(repo, "v1")
    assert refused.returncode == 1 and "remote: gitea-ran" in refused.stdout, refused.stdout
    assert "remote: modules/d.md:2: error W220" in refused.stdout and "refs/tags/v1 would gain" in refused.stdout
    removed = run_git_vivary(["hooks", "uninstall"], bare)
    assert f"pre-receive: removed {hooks / 'pre-receive.d' / 'vivary'}" in removed.stdout, removed.stdout
    assert sorted(p.name for p in (hooks / "pre-receive.d").iterdir()) == ["gitea"]
    assert (hooks / "pre-receive").read_text() == DISPATCHER


def _branches(repo: Repo, count: int) -> None:
    """`count` branches on main (made in one go), and `zzz`, whose commit breaks a reference: the last ref a push of
    them all names."""
    head = repo.git("rev-parse", "HEAD").strip()
    subprocess.run(["git", "update-ref", "--stdin"], cwd=repo.path, check=True, text=True,
                   input="".join(f"create refs/heads/many/{i:05d} {head}\n" for i in range(count)))
    repo.git("checkout", "-q", "-b", "zzz")
    repo.commit("d", files={"modules/d.md": "---\ndepends: [nowhere]\n---\n# D\n"})
    repo.git("checkout", "-q", "main")


def test_a_push_of_thousands_of_refs_reaches_the_kept_hook_and_the_gate_whole(tmp_path: Path, repo: Repo) -> None:
    bare = _bare(tmp_path, repo)
    assert push(repo, "main").returncode == 0
    seen = tmp_path / "seen"
    _executable(bare / "hooks" / "pre-receive", f"#!/bin/sh\ncat > '{seen}'\n")
    assert run_git_vivary(["hooks", "install", "pre-receive"], bare).returncode == 0
    _branches(repo, 3000)
    scratch = tmp_path / "scratch"  # where the server's temporary files go
    scratch.mkdir()
    env = dict(os.environ, TMPDIR=str(scratch))
    refused = push(repo, "refs/heads/*:refs/heads/*", env=env)
    assert refused.returncode == 1, refused.stdout[-2000:]
    assert "remote: vivary: push refused: refs/heads/zzz would gain the errors above" in refused.stdout
    lines = seen.read_text().splitlines()
    assert len(lines) == 3001 and lines[-1].endswith(" refs/heads/zzz"), lines[-3:]  # many/*, zzz (main is there)
    assert refused.stdout.count("remote: vivary: refs/heads/many/") == 3000
    assert list(scratch.iterdir()) == []  # the copy for the kept hook is gone
    accepted = push(repo, "refs/heads/many/*:refs/heads/many/*", env=env)
    assert accepted.returncode == 0, accepted.stdout[-2000:]
    assert len(seen.read_text().splitlines()) == 3000
    assert len(git(bare, "for-each-ref", "refs/heads/many/").splitlines()) == 3000
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("kept", [False, True], ids=["alone", "after-a-kept-hook"])
def test_a_server_that_bounds_a_hooks_memory_still_refuses_a_breaking_push(tmp_path: Path, repo: Repo,
                                                                          kept: bool) -> None:
    """The script held the pushed refs in a shell variable and printed them on: three times their size in dash. Under
    a server's data limit dash ran out of space, or crashed in printf, and the gate, reading nothing, let the push
    through (a 100 MiB limit: "Out of space"; 130 MiB: "Segmentation fault" and exit 0)."""
    bare = _bare(tmp_path, repo)
    assert push(repo, "main").returncode == 0
    if kept:
        _executable(bare / "hooks" / "pre-receive", "#!/bin/sh\ncat >/dev/null\n")
    assert run_git_vivary(["hooks", "install", "pre-receive"], bare).returncode == 0
    repo.git("checkout", "-q", "-b", "zzz")
    repo.commit("d", files={"modules/d.md": "---\ndepends: [nowhere]\n---\n# D\n"})
    bad = repo.git("rev-parse", "zzz").strip()
    git(bare, "fetch", "-q", str(repo.path), "zzz:refs/heads/zzz")  # the server has the commit, as in a push
    git(bare, "update-ref", "-d", "refs/heads/zzz")
    main = git(bare, "rev-parse", "main").strip()
    # What Git writes for a push of 10,000 refs with long names (41 MB): 9,999 on main, and then zzz.
    stdin = b"".join(f"{'0' * 40} {main} refs/heads/{'x' * 4000}{i:05d}\n".encode() for i in range(9_999))
    stdin += f"{'0' * 40} {bad} refs/heads/zzz\n".encode()
    scratch = tmp_path / "scratch"
    scratch.mkdir()

    def bounded() -> None:  # a server's limit on a hook's memory (`ulimit -d`)
        hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
        resource.setrlimit(resource.RLIMIT_DATA, (100 << 20 if hard == resource.RLIM_INFINITY else min(hard, 100 << 20),
                                                  hard))
    proc = subprocess.run([str(bare / "hooks" / "pre-receive")], input=stdin, cwd=bare, capture_output=True,
                          preexec_fn=bounded, env=dict(os.environ, TMPDIR=str(scratch)), check=False)
    err = proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, err[-2000:]
    assert "vivary: push refused: refs/heads/zzz would gain the errors above" in err, err[-2000:]
    assert list(scratch.iterdir()) == []


def test_status_reports_gitlab_custom_hooks_and_install_refuses_a_mix(tmp_path: Path, repo: Repo) -> None:
    bare = _bare(tmp_path, repo)
    _executable(bare / "custom_hooks" / "pre-receive.d" / "vivary",
                "#!/bin/sh\nexec /opt/vivary/bin/git-vivary hooks run pre-receive\n")
    status = run_git_vivary(["hooks", "status"], bare)
    assert "GitLab's server hooks (" in status.stdout and "custom_hooks/pre-receive.d/vivary) run vivary" \
        in status.stdout, status.stdout
    mixed = run_git_vivary(["hooks", "install", "pre-commit", "pre-receive"], bare)
    assert mixed.returncode == 2 and "install them apart" in mixed.stderr, mixed.stderr
    bad_root = run_git_vivary(["hooks", "install", "pre-receive", "--root", "../x"], bare)
    assert bad_root.returncode == 2 and "--root '../x': for pre-receive, a folder of each pushed tree" \
        in bad_root.stderr, bad_root.stderr
    assert not (bare / "hooks" / "pre-receive").exists()


def test_install_writes_nothing_in_a_gitlab_repository(tmp_path: Path, repo: Repo) -> None:
    # Gitaly runs its own hooks, never the repository's hooks/: a script there would refuse no push.
    bare = _bare(tmp_path, repo)
    (bare / "custom_hooks").mkdir()
    refused = run_git_vivary(["hooks", "install"], bare)
    assert refused.returncode == 3 and "cannot install: a GitLab repository (custom_hooks/ is there)" \
        in refused.stderr and "`gitaly hooks set`" in refused.stderr, refused.stderr
    (bare / "custom_hooks").rmdir()
    git(bare, "config", "gitlab.fullpath", "group/notes")
    refused = run_git_vivary(["hooks", "install", "pre-receive"], bare)
    assert refused.returncode == 3 and "gitlab.fullpath = 'group/notes'" in refused.stderr, refused.stderr
    assert sorted(p.name for p in (bare / "hooks").iterdir() if not p.name.endswith(".sample")) == []
    assert push(repo, "main").returncode == 0


def test_a_server_hook_whose_vivary_is_gone_refuses_every_push_in_words(tmp_path: Path, repo: Repo) -> None:
    bare = _bare(tmp_path, repo)
    installed = run_git_vivary(["hooks", "install", "--python", str(tmp_path / "gone" / "python")], bare)
    assert installed.returncode == 0, installed.stderr
    env = dict(os.environ, PATH=os.pathsep.join(("/usr/bin", "/bin")))  # no git-vivary on the server's PATH
    refused = push(repo, "main", env=env)
    assert refused.returncode == 1, refused.stdout
    assert "remote: vivary: git-vivary is not on the server's PATH and the Python that installed this hook is " \
        "gone" in refused.stdout
    assert "[remote rejected] main -> main (pre-receive hook declined)" in refused.stdout
    assert git(bare, "for-each-ref") == ""


def test_status_in_a_bare_repository_says_client_hooks_do_not_apply(tmp_path: Path, repo: Repo) -> None:
    bare = _bare(tmp_path, repo)
    status = run_git_vivary(["hooks", "status"], bare)
    assert status.returncode == 0, status.stderr
    # No commit is made on a server: a client hook that is not there is no news, so not three "not installed".
    assert "not installed" not in status.stdout.replace("pre-receive       not installed", ""), status.stdout
    assert ("client hooks (pre-commit, pre-merge-commit, post-commit, post-checkout, post-merge, post-rewrite) do not "
            "apply") in status.stdout, status.stdout
    assert "  pre-receive       not installed; `git vivary hooks install pre-receive` writes" in status.stdout
    report = json.loads(run_git_vivary(["hooks", "status", "--json"], bare).stdout)
    assert report["bare"] is True and [h["hook"] for h in report["hooks"]] == ["pre-receive"], report
    # A client hook someone left there is still named (it is a file in the hooks folder), with the server's.
    _executable(bare / "hooks" / "pre-commit", "#!/bin/sh\nexit 0\n")
    report = json.loads(run_git_vivary(["hooks", "status", "--json"], bare).stdout)
    assert [(h["hook"], h["state"]) for h in report["hooks"]] == [("pre-commit", "other"), ("pre-receive", "absent")]
    # With a work tree nothing changes: the client hooks, each named.
    here = json.loads(run_git_vivary(["hooks", "status", "--json"], repo.path).stdout)
    assert here["bare"] is False and [h["hook"] for h in here["hooks"]] == ["pre-commit", "pre-merge-commit",
                                                                           "post-commit", "post-checkout",
                                                                           "post-merge", "post-rewrite"], here


def test_a_gate_out_of_memory_says_so_and_refuses_without_a_traceback(tmp_path: Path) -> None:
    """Under a limit the gate's own reading of 10,000 long ref names passes (a server's `ulimit -d` on its hooks),
    Python raised MemoryError through the gate: a traceback on the pusher's screen, though the push was refused."""
    bare = tmp_path / "srv.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    stdin = b"".join(f"{'0' * 40} {'1' * 40} refs/heads/{'x' * 4000}{i:05d}\n".encode() for i in range(9_999))

    def bounded() -> None:  # enough to start and read a few refs (24 MiB did, here), not 41 MB of them
        hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
        resource.setrlimit(resource.RLIMIT_DATA, (32 << 20 if hard == resource.RLIM_INFINITY else min(hard, 32 << 20),
                                                  hard))
    proc = subprocess.run([sys.executable, "-m", "vivary_git.main", "hooks", "run", "pre-receive"], input=stdin,
                          cwd=bare, capture_output=True, preexec_fn=bounded, check=False)
    err = proc.stderr.decode(errors="replace")
    assert "Traceback" not in err, err[-2000:]
    assert proc.returncode == 2, err[-2000:]
    assert "git vivary hooks: ran out of memory before it finished" in err, err[-2000:]
