"""A partial clone (`git clone --filter=blob:none`, actions/checkout's `filter: blob:none`) lacks the blobs of
every commit but the one it checked out, and libgit2 never fetches them: a tree read from it is refused once,
exit 2, naming the revision, the first missing note and how many files are missing, with the one Git command that
fetches them all; after that command, the same `git vivary` command succeeds. Real clones from a file:// source."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git

from vivary_git import parallel

A1 = "---\ntitle: A\n---\nsee [[b]]\n"
A2 = "---\ntitle: A2\n---\nsee [[b]] and [[c]]\n"


def _source(repo: Repo, commits: list[dict[str, str]]) -> Repo:
    for n, files in enumerate(commits):
        repo.commit(f"c{n}", files)
    repo.git("config", "uploadpack.allowFilter", "true")
    return repo


def _clone(src: Repo, dest: Path, *extra: str) -> Repo:
    git(dest.parent, "clone", "-q", "--no-local", "--filter=blob:none", *extra, f"file://{src.path}", dest.name)
    git(dest, "config", "gc.auto", "0")
    return Repo(dest)


def _missing(clone: Repo, tree: str) -> list[str]:
    out = clone.git("rev-list", "--objects", "--missing=print", tree)
    return [line[1:] for line in out.splitlines() if line.startswith("?")]


def _fetch_named(err: str) -> str:
    """The fetch command the refusal names, run as a user pastes it."""
    found = re.search(r"Fetch (?:it|them) in one batch with `([^`]+)`", err)
    assert found, err
    return found.group(1)


def _paste(clone: Repo, command: str, **env: str) -> None:
    proc = subprocess.run(["sh", "-c", command], cwd=clone.path, capture_output=True, text=True, check=False,
                          env=dict(os.environ, **env))
    assert proc.returncode == 0, proc.stderr


@pytest.fixture
def partial(repo: Repo, tmp_path: Path) -> Repo:
    """A clone of two commits that has the blobs of the second only: HEAD~1's notes/a.md is missing."""
    _source(repo, [{"notes/a.md": A1, "notes/b.md": "hi\n"}, {"notes/a.md": A2, "notes/c.md": "c\n"}])
    return _clone(repo, tmp_path / "clone")


@pytest.mark.parametrize("args", [
    ("check", "--rev", "HEAD~1"), ("graph", "--rev", "HEAD~1"), ("find", "--rev", "HEAD~1", "see"),
    ("query", "--rev", "HEAD~1", "see"), ("blast", "--base", "HEAD~1"), ("blast", "--base", "HEAD~1", "--head", "HEAD"),
    ("ci", "--base", "HEAD~1"),
])
def test_a_revision_a_partial_clone_lacks_is_refused_with_the_fetch_that_brings_it(
        partial: Repo, cli: Any, args: tuple[str, ...]) -> None:
    r = cli(*args, cwd=partial.path)
    assert r.code == 2, (r.out, r.err)
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    option = args[1]
    assert lines[0].startswith(f"git vivary {args[0]}: {option} HEAD~1: notes/a.md is not in this clone: it is a "
                               "partial clone, whose promisor remote `origin` has it"), r.err
    assert "Traceback" not in r.err and "see [[b]]" not in r.err + r.out  # no content, ever
    _paste(partial, _fetch_named(r.err))
    assert _missing(partial, "HEAD~1^{tree}") == []
    again = cli(*args, cwd=partial.path)
    assert again.code in (0, 1) and "not in this clone" not in again.err, again.err


def test_nothing_is_fetched(partial: Repo, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    url = partial.git("remote", "get-url", "origin").strip()
    partial.git("remote", "set-url", "origin", f"file://{tmp_path}/nowhere")  # a fetch would fail loudly
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    for args in (("check", "--rev", "HEAD~1"), ("ci", "--base", "HEAD~1"), ("find", "--rev", "HEAD~1", "see")):
        r = cli(*args, cwd=partial.path)
        assert r.code == 2 and "is not in this clone" in r.err, r.err
    assert trace.exists() and "fetch" not in trace.read_text()
    partial.git("remote", "set-url", "origin", url)


def test_new_since_names_its_option(partial: Repo, cli: Any) -> None:
    r = cli("check", "--new-since", "HEAD~1", cwd=partial.path)
    assert r.code == 2
    base = partial.git("rev-parse", "HEAD~1").strip()
    assert r.err.startswith(f"git vivary check: --new-since {base}: notes/a.md is not in this clone"), r.err


def test_doctor_lists_the_refusal_with_its_fix(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"notes/in/i.md": "# I\n", "notes/out/o.md": "# O\n"}])
    clone = _clone(repo, tmp_path / "clone", "--sparse")
    clone.git("sparse-checkout", "set", "notes/in")
    r = cli("doctor", cwd=clone.path)
    assert r.code == 1
    assert "error: workspace: --rev HEAD: notes/out/o.md is not in this clone" in r.out, r.out
    assert "fix: run the `git` command it names, then `git vivary doctor` again" in r.out, r.out


def test_index_and_recall_of_a_revision_the_clone_lacks_are_refused(repo: Repo, tmp_path: Path, cli: Any) -> None:
    from vivary_git.memory.local.embed import embedder_status

    if embedder_status() != "available":
        pytest.skip("needs the [embed] extra")
    memory = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
    first = {"tropo.toml": "version = 1\n", ".vivary/memory.toml": memory, "notes/keys.md": "# Keys\n\nrotate\n"}
    _source(repo, [first, {"notes/keys.md": "# Keys\n\nrotate often\n"}])
    clone = _clone(repo, tmp_path / "clone")
    for args in (("index", "--yes", "--rev", "HEAD~1"), ("recall", "--rev", "HEAD~1", "rotate")):
        r = cli(*args, cwd=clone.path)
        assert r.code == 2, (args, r.out, r.err)
        assert r.err.startswith(f"git vivary {args[0]}: --rev HEAD~1: notes/keys.md is not in this clone"), r.err


def test_the_fetch_is_one_batch_for_every_missing_file_and_only_those_of_the_workspace(
        repo: Repo, tmp_path: Path, cli: Any) -> None:
    old = {f"vault/n{i}.md": f"# N{i}\n\none\n" for i in range(5)}
    new = {f"vault/n{i}.md": f"# N{i}\n\ntwo\n" for i in range(5)}
    _source(repo, [{"vault/tropo.toml": "version = 1\n", "other/x.md": "x1\n", **old},
                   {"other/x.md": "x2\n", **new}])
    clone = _clone(repo, tmp_path / "clone")
    r = cli("check", "--rev", "HEAD~1", cwd=clone.path / "vault")
    assert r.code == 2
    assert "--rev HEAD~1: vault/n0.md and 4 other files under vault/ are not in this clone" in r.err, r.err
    trace = tmp_path / "trace"
    _paste(clone, _fetch_named(r.err), GIT_TRACE=str(trace))
    # One fetch (Git starts no lazy fetch of its own on top), and the folder outside the workspace untouched.
    assert trace.read_text().count("built-in: git fetch") == 1
    assert _missing(clone, "HEAD~1:vault") == []
    assert _missing(clone, "HEAD~1:other") != []
    assert cli("check", "--rev", "HEAD~1", cwd=clone.path / "vault").code == 0


@pytest.mark.parametrize("tree_filter", ["tree:0", "tree:1"])
def test_a_treeless_clone_fetches_the_tree_with_its_files_in_one_batch(
        repo: Repo, tmp_path: Path, cli: Any, tree_filter: str) -> None:
    _source(repo, [{"notes/a.md": A1, "notes/b.md": "hi\n"}, {"notes/a.md": A2}])
    git(tmp_path, "clone", "-q", "--no-local", f"--filter={tree_filter}", f"file://{repo.path}", "clone")
    clone = Repo(tmp_path / "clone")
    r = cli("check", "--rev", "HEAD~1", cwd=clone.path)
    assert r.code == 2, (r.out, r.err)
    said = ("--rev HEAD~1: its tree (the list of its files) is not in this clone" if tree_filter == "tree:0"
            else "--rev HEAD~1: 1 file or folder (none named")
    assert r.err.startswith(f"git vivary check: {said}"), r.err
    _paste(clone, _fetch_named(r.err))
    assert cli("check", "--rev", "HEAD~1", cwd=clone.path).code == 0


def test_ci_in_a_shallow_partial_clone_fetches_the_base_then_its_files(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"tropo.toml": "version = 1\n", "a.md": "# A\n"}, {"tropo.toml": "version = 1\n\n"}])
    base = repo.git("rev-parse", "HEAD~1").strip()
    clone = _clone(repo, tmp_path / "clone", "--depth=1")
    r = cli("ci", "--base", base, cwd=clone.path)
    assert r.code == 2 and "not in this shallow clone" in r.err, r.err
    clone.git("fetch", "-q", "--no-tags", "--depth=1", "origin", base)
    r = cli("ci", "--base", base, cwd=clone.path)
    assert r.code == 2
    # The commit is here now, its files are not: not a deeper history to fetch, but them.
    assert r.err.startswith(f"git vivary ci: --base {base}: tropo.toml is not in this clone"), r.err
    _paste(clone, _fetch_named(r.err))
    assert cli("ci", "--base", base, cwd=clone.path).code == 0


def test_a_missing_config_file_is_named(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"tropo.toml": "version = 1\n", "a.md": "# A\n"}, {"tropo.toml": "version = 1\n\n"}])
    clone = _clone(repo, tmp_path / "clone")
    r = cli("check", "--rev", "HEAD~1", cwd=clone.path)
    assert r.code == 2
    assert r.err.startswith("git vivary check: --rev HEAD~1: tropo.toml is not in this clone"), r.err
    _paste(clone, _fetch_named(r.err))
    assert cli("check", "--rev", "HEAD~1", cwd=clone.path).code == 0


def test_a_private_note_missing_is_counted_never_named(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"notes/a.md": "# A\n", "USER.md": "# Me\n\nfirst secret\n", "memory/m.md": "# M\n\none\n"},
                   {"USER.md": "# Me\n\nsecond secret\n", "memory/m.md": "# M\n\ntwo\n"}])
    clone = _clone(repo, tmp_path / "clone")
    for args in (("check", "--rev", "HEAD~1"), ("find", "--rev", "HEAD~1", "secret")):
        r = cli(*args, cwd=clone.path)
        assert r.code == 2
        said = "--rev HEAD~1: 2 files (none named: only a note the privacy boundary admits is) are not in this clone"
        assert said in r.err, r.err
        assert "USER" not in r.err and "memory/" not in r.err and "secret" not in r.err


def test_a_public_note_is_named_before_a_private_one_missing_too(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"USER.md": "# Me\n\none\n", "z.md": "# Z\n\none\n"}, {"USER.md": "# Me\n\ntwo\n", "z.md": "# Z\n"}])
    clone = _clone(repo, tmp_path / "clone")
    r = cli("check", "--rev", "HEAD~1", cwd=clone.path)
    assert r.code == 2
    assert "--rev HEAD~1: z.md and 1 other file are not in this clone" in r.err, r.err
    assert "USER" not in r.err


def test_a_damaged_repository_is_told_to_git_fsck(repo: Repo, cli: Any) -> None:
    repo.commit("one", {"notes/a.md": A1})
    repo.commit("two", {"notes/a.md": A2})
    oid = repo.git("rev-parse", "HEAD~1:notes/a.md").strip()
    (repo.path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    r = cli("check", "--rev", "HEAD~1", cwd=repo.path)
    assert r.code == 2
    assert r.err.startswith("git vivary check: --rev HEAD~1: notes/a.md is not in this clone, which is not a partial "
                            f"clone: the repository is damaged (blob {oid[:12]} is gone). `git fsck`"), r.err


def test_the_working_tree_of_a_partial_clone_is_read(partial: Repo, cli: Any) -> None:
    r = cli("check", cwd=partial.path)
    assert r.code == 0, r.err
    assert cli("check", "--staged", cwd=partial.path).code == 0


def test_a_sparse_partial_clone_names_the_fetch_and_a_root_inside_the_checkout(
        repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"notes/in/i.md": "# I\n\nsee [[o]]\n", "notes/out/o.md": "# O\n"}])
    clone = _clone(repo, tmp_path / "clone", "--sparse")
    clone.git("sparse-checkout", "set", "notes/in")
    r = cli("check", cwd=clone.path)
    assert r.code == 2
    assert r.err.startswith("git vivary check: the working tree: notes/out/o.md is not in this clone"), r.err
    assert "`--root DIR`" in r.err
    inside = cli("check", "--root", ".", cwd=clone.path / "notes" / "in")
    assert inside.code == 1 and "W221" in inside.out  # read: [[o]] is outside the folder checked
    _paste(clone, _fetch_named(r.err))
    assert cli("check", cwd=clone.path).code == 0
    assert not (clone.path / "notes" / "out").exists()  # fetched, still outside the sparse checkout


def _vivary_with(setting: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git -c SETTING vivary ARGS`, through Git's own dispatch (which hands `-c` on in GIT_CONFIG_PARAMETERS)."""
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["git", "-c", setting, "vivary", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          check=False)


def test_a_promisor_given_with_git_c_is_read_as_git_reads_it(partial: Repo) -> None:
    # The clone's config no longer says it is partial; `git -c remote.origin.promisor=true` does, for Git and for us.
    partial.git("config", "--unset", "remote.origin.promisor")
    partial.git("config", "--unset", "remote.origin.partialclonefilter")  # Git takes this one alone as a promisor too
    blob = partial.git("rev-parse", "HEAD~1:notes/a.md").strip()
    # A `-c` of another setting: Git is asked, and says the clone is not partial.
    plain = _vivary_with("core.quotePath=true", partial.path, "check", "--rev", "HEAD~1")
    assert plain.returncode == 2 and "which is not a partial clone: the repository is damaged" in plain.stderr
    given = _vivary_with("remote.origin.promisor=true", partial.path, "check", "--rev", "HEAD~1")
    assert given.returncode == 2, given.stderr
    assert "notes/a.md is not in this clone: it is a partial clone, whose promisor remote `origin` has it" \
        in given.stderr, given.stderr
    # Git reads `extensions.*` from the repository's config file alone: a `-c` of one is no partial clone to it.
    older = _vivary_with("extensions.partialClone=origin", partial.path, "check", "--rev", "HEAD~1")
    assert "which is not a partial clone" in older.stderr, older.stderr
    assert subprocess.run(["git", "-c", "extensions.partialClone=origin", "cat-file", "-e", blob], cwd=partial.path,
                          capture_output=True, check=False).returncode != 0
    # And Git, given the same `-c`, fetches the blob from that promisor: after which the revision reads.
    git(partial.path, "-c", "remote.origin.promisor=true", "cat-file", "-e", blob)
    assert _vivary_with("core.quotePath=true", partial.path, "check", "--rev", "HEAD~1").returncode in (0, 1)


def test_a_sparse_checkout_given_with_git_c_is_read_as_git_reads_it(repo: Repo, tmp_path: Path) -> None:
    _source(repo, [{"notes/in/i.md": "# I\n", "notes/out/o.md": "# O\n"}])
    clone = _clone(repo, tmp_path / "clone", "--sparse")
    clone.git("sparse-checkout", "set", "notes/in")
    clone.git("config", "--worktree", "core.sparseCheckout", "false")  # the files outside stay skip-worktree
    off = _vivary_with("core.quotePath=true", clone.path, "check")
    assert off.returncode == 2 and "not in this clone" in off.stderr and "`--root DIR`" not in off.stderr, off.stderr
    on = _vivary_with("core.sparseCheckout=true", clone.path, "check")
    assert on.returncode == 2, on.stderr
    assert "(or check a folder inside the sparse checkout, which needs none of the missing files, with `--root " \
        "DIR`)" in on.stderr, on.stderr


def test_a_sparse_full_clone_reads_its_whole_tree(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{"notes/in/i.md": "# I\n\nsee [[o]]\n", "notes/out/o.md": "# O\n"}])
    git(tmp_path, "clone", "-q", "--no-local", "--sparse", f"file://{repo.path}", "full")
    clone = Repo(tmp_path / "full")
    clone.git("sparse-checkout", "set", "notes/in")
    r = cli("check", cwd=clone.path)
    assert r.code == 0, r.err


def _children() -> bool:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        return False
    return True


@pytest.mark.parametrize("where", ["first", "last"])
def test_a_missing_blob_in_either_process_share_is_one_refusal_and_no_child_is_left(
        repo: Repo, tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    monkeypatch.setenv("VIVARY_JOBS", "2")
    monkeypatch.setattr(parallel, "MIN_BLOBS", 2)
    notes = {f"n{i:03d}.md": f"# N{i}\n\nsee [[n{(i + 1) % 300:03d}]]\n" for i in range(300)}
    changed = "n000.md" if where == "first" else "n299.md"  # in this process's share, or in the child's
    _source(repo, [notes, {changed: "# changed\n"}])
    clone = _clone(repo, tmp_path / "clone")
    assert not _children()
    r = cli("check", "--rev", "HEAD~1", "--no-cache", cwd=clone.path)
    assert r.code == 2, (r.out, r.err)
    assert r.err.startswith(f"git vivary check: --rev HEAD~1: {changed} is not in this clone"), r.err
    assert r.out == ""  # no half-built answer
    assert not _children()
    _paste(clone, _fetch_named(r.err))
    assert cli("check", "--rev", "HEAD~1", "--no-cache", cwd=clone.path).code == 0


def test_a_missing_gitignore_is_refused_where_privacy_is_decided(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _source(repo, [{".gitignore": "*.log\n", "a.md": "# Alpha\n\nalpha words\n"}, {".gitignore": "*.tmp\n"}])
    clone = _clone(repo, tmp_path / "clone")
    r = cli("find", "--rev", "HEAD~1", "alpha", cwd=clone.path)
    assert r.code == 2, (r.out, r.err)
    assert ": .gitignore is not in this clone" in r.err and "Traceback" not in r.err, r.err
    _paste(clone, _fetch_named(r.err))
    again = cli("find", "--rev", "HEAD~1", "alpha", cwd=clone.path)
    assert again.code == 0 and "a.md" in again.out, again.err


def test_the_mcp_server_answers_a_missing_blob_with_a_tool_error_and_goes_on(partial: Repo) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import asyncio
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    server = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"],
                                   cwd=str(partial.path), env=dict(os.environ))
    lacking = partial.git("rev-parse", "HEAD~1:notes/a.md").strip()

    async def session() -> list[Any]:
        async with Client(server) as client:
            before = await client.call_tool("search", {"query": "see"})
            # Staged, and outside the checkout: the working tree's tree names a blob the clone lacks.
            partial.git("update-index", "--add", "--cacheinfo", f"100644,{lacking},notes/old.md")
            partial.git("update-index", "--skip-worktree", "notes/old.md")
            during = await client.call_tool("search", {"query": "see"})
            partial.git("update-index", "--force-remove", "notes/old.md")
            after = await client.call_tool("search", {"query": "see"})
            return [before, during, after]

    before, during, after = asyncio.run(session())
    assert not before.is_error and not after.is_error  # the server is still there, answering
    assert during.is_error
    said = " ".join(getattr(c, "text", "") for c in during.content)
    assert "notes/old.md is not in this clone" in said and "git rev-list --objects --missing=print" in said, said


def test_the_mcp_server_of_a_sparse_partial_clone_refuses_to_start_with_the_fetch(
        repo: Repo, tmp_path: Path) -> None:
    import sys

    _source(repo, [{"notes/in/i.md": "# I\n\nrotate keys\n", "notes/out/o.md": "# O\n\nrotate keys\n"}])
    clone = _clone(repo, tmp_path / "clone", "--sparse")
    clone.git("sparse-checkout", "set", "notes/in")
    proc = subprocess.run([sys.executable, "-m", "vivary_git.main", "mcp"], cwd=clone.path, input="", text=True,
                          capture_output=True, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("git vivary mcp: the working tree: notes/out/o.md is not in this clone"), proc.stderr
