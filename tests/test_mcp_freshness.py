"""`mcp/freshness.py`: the working tree kept as a tree id by a long-lived process. Every step is held
equal to the snapshot every command takes (`worktree.worktree_tree`: `git add -A` into a fresh copy
of the index), with folder watches (inotify) and without them (`git add -A` each time)."""

from __future__ import annotations

import os
import random
import shutil
import time
from collections.abc import Callable, Iterator

import pytest
from conftest import Repo

from vivary_git import git
from vivary_git.mcp.freshness import WorkTree, watching_available
from vivary_git.worktree import worktree_tree

MODES = ["watch", "poll"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    if request.param == "watch" and not watching_available():
        pytest.skip("this system cannot watch folders (no inotify)")
    return str(request.param)


@pytest.fixture
def keeper(repo: Repo, mode: str) -> Iterator[Callable[[], tuple[WorkTree, git.Repo]]]:
    made: list[WorkTree] = []

    def make() -> tuple[WorkTree, git.Repo]:
        r = git.Repo(repo.path)
        wt = WorkTree(r, watch=mode == "watch")
        made.append(wt)
        return wt, r

    yield make
    for wt in made:
        wt.close()


def _same(wt: WorkTree, r: git.Repo) -> str:
    got = wt.tree()
    assert got == worktree_tree(r)
    return got


def _seed(repo: Repo) -> None:
    repo.commit("init", {"a.md": "# A\n", "notes/b.md": "# B\n", "notes/deep/c.md": "# C\n",
                         ".gitignore": "*.log\nbuild/\n"})


def test_each_kind_of_change_is_in_the_next_tree(repo: Repo, keeper: Callable[[], tuple[WorkTree, git.Repo]],
                                                 mode: str) -> None:
    _seed(repo)
    wt, r = keeper()
    seen = [_same(wt, r)]

    def step() -> None:
        got = _same(wt, r)
        assert got != seen[-1]
        seen.append(got)

    repo.write({"a.md": "# A\n\nedited\n"})  # an edit
    step()
    repo.write({"notes/new.md": "# New\n"})  # a new file
    step()
    (repo.path / "notes/b.md").unlink()  # a deleted file
    step()
    (repo.path / "notes/new.md").rename(repo.path / "renamed.md")  # a rename
    step()
    repo.write({"notes/deep/er/d.md": "# D\n"})  # new folders
    step()
    repo.write({"notes/deep/er/e.md": "# E\n"})  # a file in a folder made since the start
    step()
    (repo.path / "notes/deep").rename(repo.path / "moved")  # a folder moved
    step()
    shutil.rmtree(repo.path / "moved")  # a folder removed
    step()
    repo.write({"debug.log": "x"})  # an ignored file: no change
    assert _same(wt, r) == seen[-1]
    repo.write({".gitignore": "*.log\nbuild/\nrenamed.md\n*.tmp\n"})  # an ignore rule: the file goes
    repo.git("rm", "-q", "--cached", "renamed.md", check=False)
    step()
    repo.write({".gitignore": "build/\n"})  # and back, with the log file now wanted
    step()
    repo.write({"build/out.md": "# built\n"})  # ignored by that rule: no change
    assert _same(wt, r) == seen[-1]
    (repo.path / ".git/info").mkdir(exist_ok=True)
    (repo.path / ".git/info/exclude").write_text("build/\n")
    repo.write({".gitignore": ""})
    step()  # the .gitignore line is gone but info/exclude still ignores build/
    (repo.path / ".git/info/exclude").write_text("")
    step()  # ...and now it does not


def test_index_and_head_changes(repo: Repo, keeper: Callable[[], tuple[WorkTree, git.Repo]]) -> None:
    _seed(repo)
    repo.git("switch", "-q", "-c", "other")
    repo.commit("other", {"a.md": "# A on other\n", "other.md": "# Only here\n"})
    repo.git("switch", "-q", "main")
    wt, r = keeper()
    first = _same(wt, r)
    repo.git("switch", "-q", "other")  # a checkout
    assert _same(wt, r) != first
    repo.git("switch", "-q", "main")
    assert _same(wt, r) == first
    repo.write({"a.md": "# A, work in progress\n", "untracked.md": "# U\n"})
    edited = _same(wt, r)
    repo.git("add", "a.md")  # staged: the working tree is the same
    assert _same(wt, r) == edited
    repo.git("stash", "-q", "-u")  # a stash (of this temporary repository) takes both away
    assert _same(wt, r) == first
    repo.git("stash", "pop", "-q", "--index")
    assert _same(wt, r) == edited
    repo.git("commit", "-qm", "wip")  # a commit: the index and HEAD move, the working tree stays
    assert _same(wt, r) == edited
    repo.git("rm", "-q", "--cached", "a.md")  # untracked now, still there: still in the tree
    assert _same(wt, r) == edited
    repo.git("reset", "-q", "--hard", "HEAD~1")  # a reset: back to the first tree, the untracked file aside
    repo.write({"a.md": "# A\n"})
    (repo.path / "untracked.md").unlink(missing_ok=True)
    assert _same(wt, r) == first
    repo.git("update-index", "--refresh", check=False)  # the index rewritten, its content the same
    assert _same(wt, r) == first


def test_a_rewrite_within_one_timestamp_tick_is_seen(repo: Repo,
                                                     keeper: Callable[[], tuple[WorkTree, git.Repo]]) -> None:
    """Same size, same mtime, not older than the last look: a stat check alone would miss the second
    write (racy Git). Timestamps are set to one value a little ahead, so the test does not depend on
    how coarse this file system's clock is."""
    _seed(repo)
    wt, r = keeper()
    _same(wt, r)
    note = repo.path / "a.md"
    stamp = time.time_ns() + 5_000_000_000
    note.write_text("# X\n")
    os.utime(note, ns=(stamp, stamp))
    one = _same(wt, r)
    note.write_text("# Y\n")
    os.utime(note, ns=(stamp, stamp))
    assert _same(wt, r) != one


def test_an_edit_is_added_alone_when_watching(repo: Repo) -> None:
    if not watching_available():
        pytest.skip("this system cannot watch folders (no inotify)")
    _seed(repo)
    r = git.Repo(repo.path)
    wt = WorkTree(r, watch=True)
    _same(wt, r)
    assert (wt.full_snapshots, wt.mode) == (1, "inotify")
    for text in ("one", "two", "three"):
        repo.write({"notes/b.md": f"# B\n\n{text}\n"})
        _same(wt, r)
    repo.git("add", "notes/b.md")
    _same(wt, r)
    repo.git("commit", "-qm", "b")
    _same(wt, r)
    assert wt.tree() == wt.tree()
    assert wt.full_snapshots == 1
    repo.write({".gitignore": "*.log\n"})  # a rule changed: everything is looked at again
    _same(wt, r)
    assert wt.full_snapshots == 2
    wt.close()


@pytest.mark.parametrize("seed", range(3))
def test_random_changes_match_the_full_snapshot(repo: Repo, keeper: Callable[[], tuple[WorkTree, git.Repo]],
                                                seed: int) -> None:
    rnd = random.Random(seed)
    _seed(repo)
    wt, r = keeper()
    _same(wt, r)
    folders = ["", "notes", "notes/deep", "x", "x/y", "build"]
    for _ in range(40):
        files = sorted(p.relative_to(repo.path).as_posix() for p in repo.path.rglob("*")
                       if p.is_file() and ".git" not in p.parts)
        op = rnd.choice(["edit", "edit", "new", "delete", "rename", "ignore", "add", "commit", "rmdir", "mode"])
        if op == "edit" and files:
            repo.write({rnd.choice(files): f"# {rnd.random()}\n"})
        elif op == "new":
            folder = rnd.choice(folders)
            name = rnd.choice(["n.md", "m.md", "z.log", "q.txt"])
            repo.write({f"{folder}/{name}" if folder else name: f"{rnd.random()}\n"})
        elif op == "delete" and files:
            (repo.path / rnd.choice(files)).unlink()
        elif op == "rename" and files:
            src = repo.path / rnd.choice(files)
            dst = repo.path / rnd.choice(folders) / f"r{rnd.randrange(5)}.md"
            dst.parent.mkdir(parents=True, exist_ok=True)
            src.rename(dst)
        elif op == "ignore":
            repo.write({".gitignore": rnd.choice(["*.log\n", "build/\n", "*.txt\nx/\n", ""])})
        elif op == "add":
            repo.git("add", "-A")
        elif op == "commit":
            repo.git("add", "-A")
            repo.git("commit", "-qm", "step", "--allow-empty")
        elif op == "rmdir":
            folder = rnd.choice(folders[1:])
            shutil.rmtree(repo.path / folder, ignore_errors=True)
        elif op == "mode" and files:
            target = repo.path / rnd.choice(files)
            target.chmod(target.stat().st_mode ^ 0o100)
        _same(wt, r)


def test_a_nested_repository_is_one_entry(repo: Repo, keeper: Callable[[], tuple[WorkTree, git.Repo]]) -> None:
    _seed(repo)
    wt, r = keeper()
    _same(wt, r)
    inner = repo.path / "vendor/lib"
    inner.mkdir(parents=True)
    git_env_repo = Repo(inner)
    git_env_repo.git("init", "-q", "-b", "main")
    git_env_repo.commit("inner", {"inside.md": "# Inside\n"})
    _same(wt, r)
    git_env_repo.write({"inside.md": "# Changed inside\n"})  # not the outer repository's business
    _same(wt, r)


def test_this_process_own_write_needs_no_git_add(repo: Repo) -> None:
    """The MCP server's `add` commits a memory and puts it in the index and work tree: it keys its state by
    the tree with that one note, and no `git add` runs to find that out."""
    if not watching_available():
        pytest.skip("this system cannot watch folders (no inotify)")
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    service = MemoryService(repo.path)
    service.search("anything")
    wt = service._worktree
    assert wt is not None and wt.mode == "inotify"
    before = (wt.full_snapshots, wt.partial_updates)
    added = service.add("Memories are keyed by the tree they made.")
    assert added.ok and added.id is not None
    assert [h.id for h in service.search("memories keyed tree").results] == [added.id]
    assert (wt.full_snapshots, wt.partial_updates) == before
    assert wt.tree() == worktree_tree(git.Repo(repo.path))
    # an edit right after is still seen
    repo.write({"a.md": "# A\n\nokapi\n"})
    assert [h.id for h in service.search("okapi").results] == ["a"]
    service.close()



def test_a_warm_server_answers_after_edits_like_a_fresh_one(repo: Repo) -> None:
    """Edits, new notes, deleted and renamed ones, a private note, an id a link now resolves to: the
    warm server keeps its search index and searches the changed notes beside it, and every answer is
    the one a server started afresh on the same files gives."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    repo.commit("init", {
        "tropo.toml": 'version = 1\n[base]\nallow_untyped = true\n[base.optional]\nrelated = "ref-list"\n',
        "alpha.md": "---\nrelated: [beta, gamma]\n---\n# Alpha\n\nThe zebra grazes near the river.\n",
        "beta.md": "# Beta\n\nA river of zebra stories.\n",
        "notes/delta.md": "---\nrelated: [alpha]\n---\n# Delta\n\nNothing about stripes.\n",
        "USER.md": "# Me\n\nzebra canary of the private floor\n",
    })
    warm = MemoryService(repo.path)
    queries = ["zebra", "river", "gamma", "stripes zebra", "okapi", "related alpha", "canary"]

    def agree() -> None:
        fresh = MemoryService(repo.path)
        for q in queries:
            got = warm.search(q, top_k=10, include_neighbors=1)
            want = fresh.search(q, top_k=10, include_neighbors=1)
            assert got.results == want.results, q
            assert got.tree == want.tree
        assert warm.read("alpha").outbound == fresh.read("alpha").outbound
        fresh.close()

    agree()
    base = warm.state()
    steps = [
        lambda: repo.write({"beta.md": "# Beta\n\nNow an okapi story.\n"}),  # an edit
        lambda: repo.write({"gamma.md": "# Gamma\n\nA zebra, at last.\n"}),  # alpha's link to gamma resolves now
        lambda: (repo.path / "notes/delta.md").rename(repo.path / "notes/epsilon.md"),  # a rename
        lambda: (repo.path / "beta.md").unlink(),  # a deletion: alpha's link to beta breaks
        lambda: repo.write({"memory/secret.md": "# Secret\n\nzebra canary in a private folder\n"}),  # private
        lambda: repo.write({"alpha.md": "---\nrelated: [gamma]\n---\n# Alpha\n\nStripes everywhere.\n"}),
    ]
    for step in steps:
        step()
        agree()
        st = warm.state()
        assert st.public is base.public and st._index is base._index  # the index was not rebuilt
    assert "canary" not in str([h.snippet for h in warm.search("canary", top_k=10).results])
    assert set(warm.state().delta) == {"alpha", "gamma", "epsilon"}
    assert warm.state().gone == {"beta", "delta"}
    warm.close()


def test_a_killed_servers_scratch_index_is_swept_by_the_next(repo: Repo,
                                                             keeper: Callable[[], tuple[WorkTree, git.Repo]]) -> None:
    """A server killed with SIGKILL leaves its `mcp-index.PID.*` in `.git/vivary/tmp/` (89 of them after 88 kills):
    the next one removes those whose process is gone, and leaves a living one's."""
    import subprocess
    import sys

    _seed(repo)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True).stdout.strip()
    tmp = repo.path / ".git" / "vivary" / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    dead = tmp / f"mcp-index.{gone}.140000000000"
    alive = tmp / f"mcp-index.{os.getppid()}.140000000001"  # pytest's parent: it runs
    for path in (dead, alive):
        path.write_bytes(b"DIRC")
    wt, r = keeper()
    _same(wt, r)
    assert not dead.exists() and alive.exists()


def _racing_cli(monkeypatch: pytest.MonkeyPatch, repo: Repo, target: str, times: int) -> list[str]:
    """Another command's end, `times` times, just before the server's `target` step runs: a command that made
    `.git/vivary/tmp` for its own scratch index removes it once done while it is empty (`worktree.py`), which it
    is until the server has put its scratch index there."""
    from vivary_git import worktree
    from vivary_git.mcp import freshness

    tmp = repo.path / ".git" / "vivary" / "tmp"
    removed: list[str] = []
    owner, name = (freshness.shutil, "copy2") if target == "copy" else (worktree, "add_all")
    real = getattr(owner, name)

    def step(*args: object, **kwargs: object) -> object:
        if len(removed) < times and tmp.is_dir() and not any(tmp.iterdir()):
            worktree._remove_empty([tmp])
            removed.append(str(tmp))
        return real(*args, **kwargs)

    monkeypatch.setattr(owner, name, step)
    return removed


def _search_over_a_session(repo: Repo, query: str) -> tuple[bool, str]:
    import asyncio

    from mcp import Client

    from vivary_git.mcp.server import build_server
    from vivary_git.mcp.service import MemoryService

    async def session() -> tuple[bool, str]:
        async with Client(build_server(MemoryService(repo.path))) as client:
            got = await client.call_tool("search", {"query": query})
            return got.is_error, " ".join(getattr(c, "text", "") for c in got.content)

    return asyncio.run(session())


@pytest.mark.parametrize("target", ["copy", "add"])
def test_a_scratch_folder_another_command_removes_is_made_again(repo: Repo, monkeypatch: pytest.MonkeyPatch,
                                                                 target: str) -> None:
    """Between the server making `.git/vivary/tmp` and putting its scratch index there, a `git vivary check` ending
    in another process removed the folder: the copy of the index (or, with no index yet, Git's `git add -A`) failed
    and so did the search ("Error executing tool search"). The folder is made again and the search answers."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    if target == "copy":
        _seed(repo)
    else:  # a repository whose index Git has not written yet: nothing to copy, Git writes the first one
        repo.write({"a.md": "# A\n\nzebra\n"})
        assert not (repo.path / ".git" / "index").exists()
    removed = _racing_cli(monkeypatch, repo, target, times=1)
    failed, text = _search_over_a_session(repo, "zebra" if target == "add" else "anything")
    assert removed, "the folder was never empty before the step"
    assert not failed, text
    assert len(list((repo.path / ".git" / "vivary" / "tmp").glob("mcp-index.*"))) == 1  # made again, and used
    if target == "add":
        assert '"id":"a"' in text


def test_a_scratch_folder_removed_every_time_is_a_sentence_not_a_crash(repo: Repo,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Made again a bounded number of times: a folder that goes every time is named, with the fix, in the tool's
    error."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    _seed(repo)
    _racing_cli(monkeypatch, repo, "copy", times=1000)
    failed, text = _search_over_a_session(repo, "anything")
    assert failed
    assert f"{repo.path / '.git' / 'vivary' / 'tmp'}: removed 5 times in a row" in text
    assert "stop whatever removes it" in text
