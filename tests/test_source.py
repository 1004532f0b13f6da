"""Which tree a command reads: --rev, --staged, the working tree, subfolders, worktrees, no Git."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git, run_git_vivary, write

NOTE = "---\nstatus: active\n---\n# Core\n"


def ids(result: Any) -> list[str]:
    return [n["id"] for n in result.json()["nodes"]]


def test_three_sources_read_three_trees(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    repo.write({"modules/b.md": NOTE})
    repo.git("add", "modules/b.md")
    repo.write({"modules/c.md": NOTE, ".gitignore": "ignored.md\n", "ignored.md": "# no\n"})
    assert ids(cli("graph", "--json", "--rev", "HEAD", cwd=repo.path)) == ["a"]
    assert ids(cli("graph", "--json", "--staged", cwd=repo.path)) == ["a", "b"]
    # The working tree is what `git status` sees: untracked files yes, ignored files no.
    assert ids(cli("graph", "--json", cwd=repo.path)) == ["a", "b", "c"]


def test_working_tree_source_leaves_the_index_alone(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    repo.write({"modules/new.md": NOTE})
    before = repo.git("status", "--porcelain")
    cli("check", cwd=repo.path)
    assert repo.git("status", "--porcelain") == before
    assert not (repo.path / ".git" / "vivary" / "tmp").exists() or \
        not list((repo.path / ".git" / "vivary" / "tmp").iterdir())


def test_a_note_rewritten_in_the_second_of_its_commit_is_read_anew(repo: Repo, cli: Any) -> None:
    """Racy Git: a file rewritten to the same size within the second its commit wrote the index has the
    stat the index recorded. Git then compares content only if the file is not older than the index, so
    the working tree's snapshot must see the index's own mtime (an agent edits right after committing).
    The sleeps set up the race (same second, then the next); nothing here is timed."""
    import time

    repo.commit(files={"tropo.toml": TROPO})
    for attempt in range(3):
        time.sleep(1.05 - time.time() % 1)
        start = int(time.time())
        repo.commit(files={"modules/a.md": "# Title one\n"})
        repo.write({"modules/a.md": "# Title two\n"})  # the same size, the same second
        if int(time.time()) != start:
            continue  # the commit crossed into the next second: no race to test; try again
        time.sleep(1.05 - time.time() % 1)  # the snapshot is taken in a later second
        titles = [h["title"] for h in cli("query", "Title", "--json", cwd=repo.path).json()["results"]]
        assert titles == ["Title two"], f"attempt {attempt}: {titles}"
        return
    pytest.fail("three commits in a row took over a second each: the race could not be set up")


def test_staged_honours_git_index_file_like_a_hook(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    alt = repo.path / ".git" / "alt-index"
    env = {"GIT_INDEX_FILE": str(alt)}
    git(repo.path, "read-tree", "HEAD", env=env)
    repo.write({"modules/hooked.md": NOTE})
    git(repo.path, "add", "modules/hooked.md", env=env)
    monkeypatch.setenv("GIT_INDEX_FILE", str(alt))
    assert ids(cli("graph", "--json", "--staged", cwd=repo.path)) == ["a", "hooked"]
    monkeypatch.delenv("GIT_INDEX_FILE")
    assert ids(cli("graph", "--json", "--staged", cwd=repo.path)) == ["a"]


def test_runs_from_a_subdirectory_and_finds_the_workspace_root(repo: Repo, cli: Any) -> None:
    repo.commit(files={"docs/tropo.toml": TROPO, "docs/modules/a.md": NOTE, "outside.md": "# Out\n"})
    r = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path / "docs" / "modules")
    assert ids(r) == ["a"]
    assert r.json()["nodes"][0] == {"id": "a", "type": "module", "path": "modules/a.md"}


def test_zero_config_vault_at_repo_root(repo: Repo, cli: Any) -> None:
    repo.commit(files={"dendron.yml": "version: 5\n", "a.b.md": "# A B\n[[c]] and [[Label|a.b.c#anchor]]\n",
                       "a.b.c.md": "no title\n", "c.md": "[[missing-note]]\n"})
    g = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert [n["id"] for n in g["nodes"]] == ["a.b", "a.b.c", "c"]
    assert {(e["from"], e["to"], e["broken"]) for e in g["edges"]} == {
        ("a.b", "c", False), ("a.b", "a.b.c", False), ("c", "missing-note", True)}
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert "c.md:1: error W221: wikilink [[missing-note]] matches no note (looked for 'missing-note' from c.md)" \
        in r.out


def test_repository_with_no_commits(repo: Repo, cli: Any) -> None:
    repo.write({"tropo.toml": TROPO, "modules/a.md": NOTE})
    assert ids(cli("graph", "--json", cwd=repo.path)) == ["a"]
    repo.git("add", "-A")
    assert ids(cli("graph", "--json", "--staged", cwd=repo.path)) == ["a"]
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "no commits yet" in r.err


def test_linked_worktree(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    wt = tmp_path / "wt"
    repo.git("worktree", "add", "-q", "-b", "side", str(wt))
    write(wt, {"modules/side.md": NOTE})
    assert ids(cli("graph", "--json", cwd=wt)) == ["a", "side"]
    assert ids(cli("graph", "--json", cwd=repo.path)) == ["a"]
    # The cache is shared with the main repository, not written into the worktree.
    assert not (wt / ".git" / "vivary").exists()


def test_plain_folder_outside_git(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "plain"
    write(folder, {"tropo.toml": TROPO, "modules/a.md": NOTE, "modules/b.md": "---\nstatus:\n---\n"})
    r = cli("check", "--json", cwd=folder)
    assert r.code == 1
    assert "caching is off" in r.err
    assert r.json()["findings"][0]["code"] == "E102"
    assert cli("check", "--rev", "HEAD", cwd=folder).code == 2


def test_plain_folder_walk_stops_at_nested_repositories(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "clones"
    write(folder, {"mine.md": "# Mine\n", "proj/readme-notes/x.md": "# X\n", "wt/y.md": "# Y\n",
                   "deep/er/z.md": "# Z\n"})
    git(folder / "proj", "init", "-q")  # a clone: .git is a folder
    (folder / "wt" / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")  # a worktree: .git is a file
    git(folder / "deep" / "er", "init", "-q")
    r = cli("graph", "--json", cwd=folder)
    assert r.code == 0 and [n["path"] for n in r.json()["nodes"]] == ["mine.md"]
    (folder / "mine.md").unlink()
    r = cli("check", cwd=folder)
    assert r.code == 2 and r.out == ""
    assert f"git vivary check: no notes found in {folder.resolve()}" in r.err
    assert "3 nested Git repositories were skipped (deep/er, proj, wt): run `git vivary check` inside one" in r.err
    # inside one of them, its own notes are read
    assert cli("graph", "--json", cwd=folder / "proj").json()["counts"]["nodes"] == 1


def test_no_notes_outside_git_is_exit_2_inside_git_exit_0(tmp_path: Path, repo: Repo, cli: Any) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("check", cwd=empty)
    assert r.code == 2 and f"no notes found in {empty.resolve()}" in r.err and "run it in your notes folder" in r.err
    assert cli("check", "--json", cwd=empty).out == ""
    # A repository may have no notes yet: its hook (`check --staged`) and CI (`--rev`) must not fail.
    repo.commit(files={"src/main.c": "int main;\n"})
    for args in ((), ("--staged",), ("--rev", "HEAD")):
        r = cli("check", *args, "--json", cwd=repo.path)
        assert r.code == 0 and r.json()["checked"] == 0, args


def test_bare_repository_needs_rev(repo: Repo, tmp_path: Path, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(bare))
    assert ids(cli("graph", "--json", "--rev", "HEAD", cwd=bare)) == ["a"]
    r = cli("graph", "--json", cwd=bare)
    assert r.code == 2 and "bare repository" in r.err


def test_odd_file_names(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "notes/spaces and ünïcode.md": "# S\n", "notes/-dash.md": "# D\n", "notes/#hash.md": "# H\n",
        "notes/quote\"d.md": "# Q\n", "notes/tab\there.md": "# T\n",
    })
    g = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()
    # A zero-config vault's ids are its paths without the extension: every name kept as written.
    assert sorted(n["id"] for n in g["nodes"]) == sorted([
        "notes/spaces and ünïcode", "notes/-dash", "notes/#hash", 'notes/quote"d', "notes/tab\there"])


def test_git_vivary_runs_through_git_dispatch(repo: Repo) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    proc = run_git_vivary(["check", "--rev", "HEAD"], cwd=repo.path)
    assert proc.returncode == 0, proc.stderr
    assert "1 document(s), 0 error(s)" in proc.stdout
    proc = run_git_vivary(["check", "-h"], cwd=repo.path)
    assert proc.returncode == 0 and "--staged" in proc.stdout


def test_cache_is_reused_and_work_is_proportional(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    files = {"tropo.toml": TROPO, **{f"modules/m{i:03d}.md": f"---\nstatus: s{i}\n---\n# M{i}\n" for i in range(50)}}
    repo.commit(files=files)
    monkeypatch.setenv("VIVARY_STATS", "1")
    first = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert '"parsed":50' in first.err
    again = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert '"graph_cached":true' in again.err
    repo.commit(files={f"modules/m{i:03d}.md": f"---\nstatus: edited{i}\n---\n# M{i}\n" for i in range(3)})
    third = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert '"parsed":3,"reused":47' in third.err


def test_damaged_cache_files_are_ignored_and_rebuilt(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    good = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).out
    files = list((repo.path / ".git" / "vivary").rglob("*.msgpack"))
    assert {p.parent.name.rsplit("-", 1)[0] for p in files} >= {"parse", "facts", "graph", "checks"}
    for p in files:
        p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2])
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.out == good
    assert "truncated or damaged" in r.err
    assert "Traceback" not in r.err


def test_no_cache_writes_nothing(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    cli("check", "--rev", "HEAD", "--no-cache", cwd=repo.path)
    assert not (repo.path / ".git" / "vivary").exists()
    assert os.listdir(repo.path) == [".git", "modules", "tropo.toml"] or \
        sorted(os.listdir(repo.path)) == [".git", "modules", "tropo.toml"]


def test_wikilinks_people_would_not_call_broken(repo: Repo, cli: Any) -> None:
    """Same-note anchors, template placeholders and links into another Dendron vault are not broken;
    a link into this vault (recognised because other links into it resolve) that misses is."""
    repo.commit(files={
        "dendron.yml": "version: 5\n",
        "a.md": "[[remote vaults|#remote]] [[journal.{{CURRENT_DAY}}]]\n"
                "[[Other|dendron://other.vault/x.y]] [[ok|dendron://home.vault/b]]\n"
                "[[gone|dendron://home.vault/c.d]] ![[assets/img.png]]\n",
        "b.md": "# B\n",
    })
    r = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path)
    assert r.out.count("W221") == 1
    assert "a.md:3: warning W221: wikilink [[gone|dendron://home.vault/c.d]]" in r.out
    # The image (a file link: Dendron names files by their path) is not in the vault: a missing attachment has
    # its own code. (`![[img.png]]` would be a reference to the note `img.png`: W221, docs/vaults.md#dendron.)
    assert "a.md:3: warning W223: embed ![[assets/img.png]] matches no file (looked for 'assets/img.png' from a.md)" \
        in r.out
    edges = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()["edges"]
    assert [(e["to"], e["broken"]) for e in edges] == [("b", False), ("c.d", True)]


def test_parallel_parse_gives_the_same_graph(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    from vivary_git import parallel

    repo.commit(files={"tropo.toml": TROPO, **{
        f"modules/m{i:03d}.md": f"---\nstatus: s{i}\ndepends: [m{(i + 1) % 60:03d}]\n---\n# M{i}\n"
        for i in range(60)}, "modules/bad.md": b"---\na: [1\n---\n\xff"})
    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setenv("VIVARY_JOBS", "2")
    monkeypatch.setenv("VIVARY_STATS", "1")
    two = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    assert '"parsed":61' in two.err
    monkeypatch.setenv("VIVARY_JOBS", "1")
    one = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    assert one.out == two.out and "E000" in one.out


@pytest.mark.parametrize("cache", [[], ["--no-cache"]], ids=["cached", "no-cache"])
def test_a_name_that_is_not_utf8_does_not_fail_a_worker(repo: Repo, cli: Any, monkeypatch: Any, forks: list[int],
                                                        cache: list[str]) -> None:
    """A worker's share holding a file name that is not UTF-8 (zero-config: the ID and title are the file
    name) comes back spelled out, as the local cache keeps such names, instead of failing its encoding
    and being parsed again here (`redone` in VIVARY_STATS)."""
    from vivary_git import parallel

    repo.commit(files={f"m{i:03d}.md": f"---\nstatus: s{i}\n---\n# M{i}\n\n[[m{(i + 1) % 60:03d}]]\n"
                       for i in range(60)})
    with open(bytes(repo.path) + b"/zz\xff.md", "wb") as fh:  # sorts last: in the child's share
        fh.write(b"---\nstatus: [odd\n---\n[[m001]] [[nope]]\n")
    repo.commit("odd name")
    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setenv("VIVARY_JOBS", "2")
    monkeypatch.setenv("VIVARY_STATS", "1")
    two = cli("check", "--rev", "HEAD", "--json", *cache, cwd=repo.path)
    assert forks, "the work was split"
    assert '"parsed":61' in two.err and '"redone":0' in two.err, two.err
    found = two.json()["findings"]
    assert found and {f["path"] for f in found} == {"zz\\xff.md"}  # the byte shown escaped (docs/output.md)
    warm = cli("graph", "--rev", "HEAD", "--json", *cache, cwd=repo.path)  # reads what the first run cached
    assert "Traceback" not in warm.err and '"redone":0' in warm.err
    assert "zz\\xff" in [n["id"] for n in warm.json()["nodes"]]
    monkeypatch.setenv("VIVARY_JOBS", "1")
    one = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    assert one.out == two.out
    assert cli("graph", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path).out == warm.out


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_cold_run_holds_no_note_and_reads_them_back_from_the_parse_cache(repo: Repo, cli: Any, monkeypatch: Any,
                                                                           jobs: str) -> None:
    """With a local cache, each process that parses writes its share's parses and facts to segments of its
    own and keeps none of the notes: a command that wants the notes after the graph (`query`'s index) reads
    them back from those segments, parsing nothing twice, and answers as a run without the cache."""
    from vivary_git import parallel, parses

    repo.commit(files={"tropo.toml": TROPO, **{
        f"modules/m{i:03d}.md": f"---\nstatus: s{i}\ndepends: [m{(i + 1) % 60:03d}]\n---\n# M{i}\n\nword{i % 7} here\n"
        for i in range(60)}})
    for limit in ((parallel, "MIN_BLOBS"), (parses, "_STREAM_ABOVE"), (parses, "_LOAD_PARSE_CACHE_ABOVE")):
        monkeypatch.setattr(*limit, 10)  # as a cold run of thousands of notes
    monkeypatch.setenv("VIVARY_JOBS", jobs)
    monkeypatch.setenv("VIVARY_STATS", "1")
    want = cli("query", "word3", "--json", "--rev", "HEAD", "--no-cache", cwd=repo.path)
    got = cli("query", "word3", "--json", "--rev", "HEAD", cwd=repo.path)
    assert got.out == want.out and "M3" in got.out and "Traceback" not in got.err
    assert '"parsed":60' in got.err, got.err
    vivary = repo.path / ".git" / "vivary"
    for kind in ("parse", "facts"):
        assert len(list(vivary.glob(f"{kind}-v*/seg-*.msgpack"))) == int(jobs), kind
    for d in vivary.iterdir():  # only the parse and fact caches left: the next run builds from them
        if d.is_dir() and not d.name.startswith(("parse-", "facts-")):
            shutil.rmtree(d)
    again = cli("query", "word3", "--json", "--rev", "HEAD", cwd=repo.path)
    assert again.out == want.out and '"parsed":0' in again.err, again.err


def test_no_fork_while_another_thread_runs(repo: Repo, cli: Any, monkeypatch: Any, forks: list[int]) -> None:
    """A thread might hold a lock when the process forks (recall imports its runtime in one), so work
    that would go to forked children is done in this process instead, with the same answer."""
    import threading

    from vivary_git import parallel

    repo.commit(files={"tropo.toml": TROPO, **{
        f"modules/m{i:03d}.md": f"---\nstatus: s{i}\ndepends: [m{(i + 1) % 40:03d}]\n---\n# M{i}\n"
        for i in range(40)}})
    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setenv("VIVARY_JOBS", "2")
    alone = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    assert forks, "with no other thread, the work is split"
    forks.clear()
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        beside = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    finally:
        release.set()
        other.join()
    assert not forks and beside.out == alone.out


def test_a_failing_child_has_its_share_done_here(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    """A forked child that fails (here: it cannot open the repository) exits non-zero; this process
    parses and derives that share itself and the answer is the same as from one process."""
    from vivary_git import parallel

    repo.commit(files={"tropo.toml": TROPO, **{
        f"modules/m{i:03d}.md": f"---\nstatus: s{i}\ndepends: [m{(i + 3) % 40:03d}]\n---\n# M{i}\n"
        for i in range(40)}})
    monkeypatch.setenv("VIVARY_JOBS", "1")
    want = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)

    def broken_reader(repo_path: str) -> Any:
        raise OSError("no repository here")

    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setattr(parallel, "_blob_reader", broken_reader)
    monkeypatch.setenv("VIVARY_JOBS", "2")
    monkeypatch.setenv("VIVARY_STATS", "1")
    got = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    assert got.out == want.out and got.code == want.code and "Traceback" not in got.err
    assert '"parsed":40' in got.err


def test_staged_graphs_are_cached_once_far_from_their_base(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    """The hook's staged tree is patched from the last cached graph; its own graph is cached only
    when it has drifted far from that base, after which it is the base."""
    from vivary_git import tiers

    files = {f"modules/m{i}.md": f"---\nstatus: s\n---\n# M{i}\n" for i in range(8)}
    repo.commit(files={"tropo.toml": TROPO, **files})
    cli("check", "--rev", "HEAD", cwd=repo.path)  # HEAD's graph: the base
    monkeypatch.setattr(tiers, "_CACHE_STAGED_AFTER", 2)
    monkeypatch.setenv("VIVARY_STATS", "1")

    def stage(n: int) -> None:
        write(repo.path, {f"modules/m{i}.md": f"---\nstatus: edited{n}\n---\n# M{i}\n" for i in range(n)})
        repo.git("add", "-A")

    stage(2)
    for _ in range(2):  # near the base: patched each time, not cached
        r = cli("check", "--staged", cwd=repo.path)
        assert '"graph_cached":false,"patched":true' in r.err and '"parsed":' in r.err
    stage(3)
    assert '"patched":true' in cli("check", "--staged", cwd=repo.path).err
    assert '"graph_cached":true' in cli("check", "--staged", cwd=repo.path).err  # far: cached


def test_root_that_is_not_in_the_tree_is_a_usage_error(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    (repo.path / "later").mkdir()
    r = cli("check", "--rev", "HEAD", "--root", "later", cwd=repo.path)
    assert r.code == 2 and "--root later" in r.err


def test_root_naming_a_symbolic_link_says_so_and_names_the_folder(repo: Repo, cli: Any) -> None:
    """A tree holds a symbolic link as the path it points to, so `--root linked` (or a folder through it) is
    no folder of the tree; it was "there is no folder 'linked'" beside a folder one can see. It says what
    is there and which folder to name instead, from where the command runs."""
    repo.commit(files={"vault/tropo.toml": TROPO, "vault/sub/a.md": NOTE})
    os.symlink("vault", repo.path / "linked")
    os.symlink("/", repo.path / "outside")
    repo.commit("links")
    for where, label in (([], "working tree"), (["--rev", "HEAD"], "HEAD"), (["--staged"], "staged")):
        said = (f"a symbolic link to 'vault' in {label}, not a folder, and a tree is read as Git keeps it, without "
                "following links; name the folder itself: --root")
        r = cli("check", "--root", "linked", *where, cwd=repo.path)
        assert r.code == 2 and r.err == f"git vivary check: --root linked: 'linked' is {said} vault\n", r.err
        r = cli("check", "--root", "../linked/sub", *where, cwd=repo.path / "vault")
        assert r.code == 2 and r.err == (f"git vivary check: --root ../linked/sub: 'linked', on the way to "
                                         f"'linked/sub', is {said} sub\n"), r.err
        r = cli("check", "--root", "outside", *where, cwd=repo.path)
        assert r.code == 2 and "'outside' is a symbolic link to '/'" in r.err, r.err
        assert r.err.endswith("; name a folder of that tree instead\n"), r.err
    os.symlink("nowhere", repo.path / "dangling")  # on disk it is no folder at all: said before the tree is read
    r = cli("check", "--root", "dangling", cwd=repo.path)
    assert r.code == 2 and "--root dangling: is a symbolic link to 'nowhere', which is no folder" in r.err, r.err
    assert cli("check", "--root", "vault", cwd=repo.path).code == 0


# Every command that takes `--root`, with what else it needs, the tree it reads and who says the refusal (`hooks run`
# hands `--root` to `check --staged`). The commands that work on the folder on disk (doctor, hooks install, onboard,
# bootstrap-host, host-status, cache gc) followed the link and took the folder it leads to, or reported its own way.
ROOT_COMMANDS = [
    (["check"], "working tree", "check"), (["graph"], "working tree", "graph"),
    (["blast", "a"], "working tree", "blast"),
    (["query", "type:module"], "working tree", "query"), (["find", "core"], "working tree", "find"),
    (["recall", "core"], "working tree", "recall"), (["index", "--dry-run"], "working tree", "index"),
    (["forget"], "working tree", "forget"), (["privacy", "explain", "vault/a.md"], "working tree", "privacy"),
    (["doctor"], "HEAD", "doctor"), (["hooks", "install"], "working tree", "hooks"),
    (["hooks", "run", "pre-commit"], "staged", "check"), (["ci"], "HEAD", "ci"),
    (["cache", "gc", "--dry-run"], "working tree", "cache"), (["mcp"], "working tree", "mcp"),
    (["remember", "a fact"], "working tree", "remember"), (["log", "a"], "HEAD", "log"),
    (["bootstrap-host", "--host-kind", "generic"], "working tree", "bootstrap-host"),
    (["host-status"], "working tree", "host-status"), (["onboard"], "working tree", "onboard"),
    (["dream"], "working tree", "dream"), (["digest"], "working tree", "digest"),
    (["refresh", "a"], "working tree", "refresh"), (["edit", "a", "--append", "more"], "working tree", "edit"),
    (["retire", "a", "--reason", "gone"], "working tree", "retire"), (["move", "a", "b"], "working tree", "move"),
    (["recent"], "working tree", "recent"), (["context", "a"], "working tree", "context"),
]


def test_every_command_that_takes_root_is_in_the_list_below() -> None:
    import argparse

    from vivary_git.main import build_parser

    def taking_root(parser: argparse.ArgumentParser, path: list[str]) -> list[str]:
        found = [" ".join(path)] if any("--root" in a.option_strings for a in parser._actions) else []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += taking_root(sub, [*path, name])
        return found

    listed = {" ".join(args[:2] if args[0] in ("hooks", "cache", "privacy") else args[:1])
              for args, _, _ in ROOT_COMMANDS}
    assert set(taking_root(build_parser(), [])) == listed


@pytest.mark.parametrize(("args", "label", "said_by"), ROOT_COMMANDS, ids=lambda v: " ".join(v)
                         if isinstance(v, list) else None)
def test_every_command_refuses_a_root_that_is_a_symbolic_link_in_the_same_words(
        repo: Repo, cli: Any, args: list[str], label: str, said_by: str) -> None:
    """One function decides what `--root` names: a symbolic link to the folder (or a folder through one) is refused
    by every command in the same words, with the folder to name instead, and exit 2; nothing is written."""
    repo.commit(files={"vault/tropo.toml": TROPO, "vault/a.md": NOTE, "vault/sub/b.md": NOTE})
    os.symlink("vault", repo.path / "linked")
    repo.commit("link")
    hooks = sorted(p.name for p in (repo.path / ".git" / "hooks").iterdir())
    said = (f"is a symbolic link to 'vault' in {label}, not a folder, and a tree is read as Git keeps it, without "
            "following links; name the folder itself: --root")
    r = cli(*args, "--root", "linked", cwd=repo.path)
    assert r.code == 2 and r.err.endswith(f"git vivary {said_by}: --root linked: 'linked' {said} vault\n"), r.err
    # From a folder below the top (`hooks run` is given folders relative to the top, where Git runs hooks).
    through, cwd, real = (("linked/sub", repo.path, "vault/sub") if args[:2] == ["hooks", "run"] else
                          ("../linked/sub", repo.path / "vault", "sub"))
    r = cli(*args, "--root", through, cwd=cwd)
    assert r.code == 2 and r.err.endswith(f"git vivary {said_by}: --root {through}: 'linked', on the way to "
                                          f"'linked/sub', {said} {real}\n"), r.err
    assert repo.git("status", "--porcelain") == "" and not (repo.path / "vault" / "USER.md").exists()
    assert sorted(p.name for p in (repo.path / ".git" / "hooks").iterdir()) == hooks


def test_patched_graph_equals_a_full_build(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    """After small edits the graph is patched from the last one computed; it must equal a full build
    whatever the edit does: fields, refs, links, titles, broken and fixed references, adds, removals,
    rule changes."""
    import random

    rng = random.Random(11)
    ids = [f"m{i}" for i in range(25)]

    def note(i: int) -> str:
        deps = ", ".join(rng.choice([*ids, "ghost", "m99"]) for _ in range(rng.randint(0, 3)))
        status = rng.choice(["active", "", "x y"])
        body = " ".join(f"[[{rng.choice([*ids, 'nowhere'])}]]" for _ in range(rng.randint(0, 2)))
        return f"---\nstatus: {status}\ndepends: [{deps}]\n---\n# Title {rng.randint(0, 9)}\n{body}\n"

    repo.commit(files={"tropo.toml": TROPO.replace('"string"', '"enum:active|x y"'),
                       **{f"modules/m{i}.md": note(i) for i in range(25)}, "notes/free.md": "[[m1]]\n"})
    monkeypatch.setenv("VIVARY_STATS", "1")
    cli("check", "--staged", cwd=repo.path)
    patched_runs = 0
    for step in range(30):
        edits: dict[str, str | bytes] = {f"modules/m{rng.randrange(25)}.md": note(0) for _ in range(rng.randint(1, 3))}
        if step % 7 == 3:
            edits[f"notes/extra{step}.md"] = f"# Extra\n[[m{step % 25}]]\n"
        repo.write(edits)
        if step % 9 == 5:
            (repo.path / "notes" / "free.md").unlink(missing_ok=True)
        if step == 20:
            repo.write({"tropo.toml": TROPO})
        if step % 5 == 1:
            repo.write({"assets/img.png": bytes([step]) * 10})  # not a note: the patch ignores it
        if step % 6 == 2:
            repo.write({"README.md": f"# excluded {step}\n[[nowhere]]\n"})  # excluded by tropo.toml
        if step == 25:
            repo.write({"modules/sub/tropo.toml": "[base]\nallow_untyped = false\n"})  # an overlay appears
        repo.git("add", "-A")
        fast = cli("check", "--staged", "--json", "--lenient", cwd=repo.path)
        full = cli("check", "--staged", "--json", "--lenient", "--no-cache", cwd=repo.path)
        assert fast.out == full.out, step
        g_fast = cli("graph", "--staged", "--json", cwd=repo.path).out
        g_full = cli("graph", "--staged", "--json", "--no-cache", cwd=repo.path).out
        assert g_fast == g_full, step
        patched_runs += '"patched":true' in fast.err
    assert patched_runs >= 15, patched_runs  # most small edits took the patch path


@pytest.mark.parametrize("n", [0, 1, 15, 16, 2047, 2048, 2049, 70000])
def test_cache_segments_written_a_batch_at_a_time_read_back_whole(tmp_path: Path, n: int) -> None:
    """A local cache segment is encoded in batches behind one array header (never whole in memory);
    it must read back as the one array it stands for, across every msgpack array header size."""
    import msgspec

    from vivary_git import localcache
    from vivary_git.models import Note

    items = sorted((f"{i:040x}", Note({"a": i}, {"a": 2}, "t", "b")) for i in range(n))
    localcache._write_segment(tmp_path / "seg.msgpack", items)
    raw = (tmp_path / "seg.msgpack").read_bytes()
    assert raw.startswith(b"VVG1")
    assert msgspec.msgpack.decode(raw[4:], type=list[tuple[str, Note]]) == items
    assert [p.name for p in tmp_path.iterdir()] == ["seg.msgpack"]  # no temporary file left


@pytest.mark.parametrize("n", [0, 15, 2049, 70000])
def test_a_segment_written_as_it_comes_reads_back_whole(tmp_path: Path, n: int) -> None:
    """A parsing process writes its share's entries to a segment as they come (`SegmentWriter`): it reads
    back as the whole array, an entry it cannot hold (a string that is not UTF-8) is refused for the
    caller to keep, and no temporary file is left, nor a segment when nothing was added."""
    import msgspec

    from vivary_git import localcache
    from vivary_git.models import Note

    cache = localcache.parse_cache(tmp_path)
    writer = cache.writer()
    assert writer is not None
    items = [(f"{i:040x}", Note({"a": i}, {"a": 2}, "t", "b")) for i in range(n)]
    assert all(writer.add(k, v) for k, v in items)
    assert not writer.add("f" * 40, Note({"a": "\udcff"}, {}, None, ""))
    writer.close()
    segments = list((tmp_path / cache.dir.name).iterdir()) if cache.dir and cache.dir.exists() else []  # type: ignore[union-attr]
    assert len(segments) == (1 if n else 0)
    if n:
        raw = segments[0].read_bytes()
        assert raw.startswith(b"VVG1")
        assert msgspec.msgpack.decode(raw[4:], type=list[tuple[str, Note]]) == items
        assert cache.get(items[-1][0]) == items[-1][1]  # the cache's next look-up sees it


def test_a_graph_cached_in_pieces_is_the_same_bytes(tmp_path: Path) -> None:
    """The graph cache is written a field and a batch at a time (no buffer of the whole graph): the file
    holds exactly the one encoding it always held, and a file name that is not UTF-8 is spelled out."""
    import msgspec

    from vivary_git import localcache
    from vivary_git.config import Config
    from vivary_git.graph import Graph
    from vivary_git.models import Edge, Finding, Node

    nodes = [Node(id=f"n{i}", type="t", path=f"n{i}.md", title=f"N{i}", blob="0" * 40) for i in range(5000)]
    edges = [Edge(f"n{i}", "depends", f"n{i + 1}", i % 3 == 0) for i in range(70000)]
    graph = Graph(root="r", tree=None, config=Config(source="tropo.toml"), nodes=nodes, edges=edges,
                  findings=[Finding("n1.md", 1, "error", "E100", "x")], others=[f"o{i}" for i in range(3000)])
    cache = localcache.ObjectCache(tmp_path, "graph")
    cache.put("k", graph)
    assert (tmp_path / "graph-v" f"{localcache.FORMAT_VERSION}" / "k.msgpack").read_bytes() == \
        b"VVG1" + msgspec.msgpack.encode(graph)
    odd = msgspec.structs.replace(graph, others=["zz\udcff.png"])
    cache.put("odd", odd)
    assert cache.get("odd", msgspec.msgpack.Decoder(Graph)) == odd
    assert sorted(p.name for p in (tmp_path / f"graph-v{localcache.FORMAT_VERSION}").iterdir()) == \
        ["k.msgpack", "odd.msgpack"]  # no temporary file left


def _huge(path: Path, size: int = 9 << 20) -> None:
    """A note over the limit, its time set back (a file written in the last seconds is not remembered)."""
    with open(path, "wb") as fh:
        fh.truncate(size)  # sparse: nothing but its size is written
    then = os.stat(path).st_mtime - 60
    os.utime(path, (then, then))


def _adds(trace: Path) -> list[str]:
    lines = [line for line in trace.read_text().splitlines() if "built-in: git add -A" in line]
    trace.unlink()
    return lines


def test_a_huge_note_git_was_slow_to_hash_is_not_hashed_again_while_unchanged(
        repo: Repo, cli: Any, monkeypatch: Any, tmp_path: Path) -> None:
    """A snapshot's `git add -A` that takes a while notes the notes over the limit it is hashing, with their
    `lstat`; while a file keeps it, later snapshots leave it out of `git add` and enter its blob themselves:
    the same tree, the same E000, the file unread. Changed, or ignored since, it is Git's again."""
    from vivary_git import worktree
    from vivary_git.source import open_source

    repo.commit(files={"a.md": "# A\n"})
    _huge(repo.path / "huge.md")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    first = open_source(repo.path).tree_id  # fast: Git hashes it, and it is not remembered
    assert not (repo.path / ".git" / "vivary" / "oversized.json").exists() and ":(top" not in _adds(trace)[0]
    with monkeypatch.context() as slow:
        slow.setattr(worktree, "_WATCH_AFTER", 0)  # as if `git add` took long
        assert open_source(repo.path).tree_id == first
    _adds(trace)
    r = cli("check", "--json", "--no-cache", cwd=repo.path)
    assert [(f["path"], f["code"]) for f in r.json()["findings"]] == [("huge.md", "E000")]
    assert "file is 9,437,184 bytes" in r.json()["findings"][0]["message"]
    assert open_source(repo.path).tree_id == first
    assert all(add.endswith(" -- :/ ':(top,literal,exclude)huge.md'") for add in _adds(trace))
    with open(repo.path / "huge.md", "ab") as fh:
        fh.write(b"more")
    changed = open_source(repo.path).tree_id
    assert changed != first and ":(top" not in _adds(trace)[0]
    assert not (repo.path / ".git" / "vivary" / "oversized.json").exists()
    _huge(repo.path / "huge.md")
    with monkeypatch.context() as slow:
        slow.setattr(worktree, "_WATCH_AFTER", 0)
        assert open_source(repo.path).tree_id == first
    (repo.path / ".gitignore").write_text("huge.md\n")
    assert cli("check", "--json", "--no-cache", cwd=repo.path).json()["findings"] == []


def _index_changes(repo: Repo, scenario: str) -> None:
    """Stage one kind of change against HEAD (see the test's parameters)."""
    if scenario == "none":
        return
    if scenario == "edit":
        repo.write({"modules/a.md": NOTE + "more\n"})
        repo.git("add", "modules/a.md")
    elif scenario == "add-deep":
        repo.write({"modules/new/deeper/n.md": NOTE, "top.md": NOTE})
        repo.git("add", "modules/new/deeper/n.md", "top.md")
    elif scenario == "remove-a-whole-folder":
        repo.git("rm", "-q", "-r", "--cached", "decisions")
    elif scenario == "remove-everything":
        repo.git("rm", "-q", "-r", "--cached", ".")
    elif scenario == "file-becomes-folder":
        repo.git("rm", "-q", "--cached", "plain")
        (repo.path / "plain").unlink()
        repo.write({"plain/inside.md": NOTE})
        repo.git("add", "plain/inside.md")
    elif scenario == "folder-becomes-file":
        repo.git("rm", "-q", "-r", "--cached", "decisions")
        shutil.rmtree(repo.path / "decisions")
        repo.write({"decisions": "now a file\n"})
        repo.git("add", "decisions")
    elif scenario == "mode-and-symlink":
        repo.git("update-index", "--chmod=+x", "modules/a.md")
        os.symlink("modules/a.md", repo.path / "link.md")
        repo.git("add", "link.md")
    elif scenario == "odd-names":
        repo.write({"modules/caf\u00e9 \u7b14\u8bb0.md": NOTE, "modules/-dash.md": NOTE, "modules/a b\tc.md": NOTE})
        repo.git("add", "modules")
    elif scenario == "intent-to-add":
        repo.write({"modules/later.md": NOTE})
        repo.git("add", "-N", "modules/later.md")
        repo.write({"modules/now.md": NOTE})
        repo.git("add", "modules/now.md")
    elif scenario == "sparse-index":
        repo.git("config", "core.sparseCheckout", "true")
        repo.git("config", "index.sparse", "true")
        repo.git("sparse-checkout", "set", "--cone", "modules")
        repo.write({"modules/a.md": NOTE + "sparse\n"})
        repo.git("add", "modules/a.md")
    elif scenario == "submodule":
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{repo.git('rev-parse', 'HEAD').strip()},vendor/sub")
    else:
        raise AssertionError(scenario)


@pytest.mark.parametrize("scenario", [
    "none", "edit", "add-deep", "remove-a-whole-folder", "remove-everything", "file-becomes-folder",
    "folder-becomes-file", "mode-and-symlink", "odd-names", "intent-to-add", "sparse-index", "submodule",
])
def test_the_staged_tree_is_the_one_git_write_tree_names(repo: Repo, scenario: str, monkeypatch: Any) -> None:
    """`--staged` names the index's tree by writing HEAD's tree with the index's few changes (not by `git
    write-tree`, which rewrites the whole index): every kind of change gives Git's own tree id, and what the
    patch does not take (a submodule) goes to `git write-tree`."""
    from vivary_git import git as vgit
    from vivary_git import worktree

    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE, "decisions/d.md": NOTE, "decisions/e/f.md": NOTE,
                       "plain": "a file\n"})
    _index_changes(repo, scenario)
    ran: list[str] = []
    real_git = vgit.Repo.git

    def spy(self: Any, args: Any, **kwargs: Any) -> Any:
        ran.append(" ".join(args))
        return real_git(self, args, **kwargs)

    monkeypatch.setattr(vgit.Repo, "git", spy)
    tree = worktree.staged_tree(vgit.Repo(repo.path))
    monkeypatch.undo()
    assert tree == repo.git("write-tree").strip()
    assert repo.git("cat-file", "-t", tree).strip() == "tree"
    wrote_whole_index = any("write-tree" in args for args in ran)
    assert wrote_whole_index == (scenario == "submodule"), ran


def test_the_staged_tree_with_unmerged_paths_is_refused_by_name(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": NOTE})
    base = repo.git("rev-parse", "HEAD").strip()
    first = repo.git("symbolic-ref", "--short", "HEAD").strip()
    repo.commit(files={"modules/a.md": NOTE + "ours\n"})
    repo.git("checkout", "-q", "-b", "other", base)
    repo.commit(files={"modules/a.md": NOTE + "theirs\n"})
    repo.git("merge", "-q", first, check=False)
    assert "UU modules/a.md" in repo.git("status", "--porcelain")
    r = cli("check", "--staged", cwd=repo.path)
    assert r.code == 2 and "unmerged paths" in r.err and "Traceback" not in r.err
    # It names the file in conflict (a note deleted on one side and edited on the other too), and the way out.
    assert "the index has unmerged paths (modules/a.md);" in r.err and "git merge --abort" in r.err, r.err
    repo.git("merge", "--abort")
    repo.git("rm", "-q", "modules/a.md")
    repo.git("commit", "-q", "-m", "drop a")
    repo.git("merge", "-q", first, check=False)
    assert "DU modules/a.md" in repo.git("status", "--porcelain")  # deleted by us, edited by them
    r = cli("check", "--staged", cwd=repo.path)
    assert r.code == 2 and "the index has unmerged paths (modules/a.md);" in r.err, r.err
    repo.git("merge", "--abort")
    repo.git("rebase", "-q", first, check=False)
    r = cli("check", "--staged", cwd=repo.path)
    assert r.code == 2 and "or abort the rebase (`git rebase --abort`)" in r.err, r.err


def _with_full_scratch(cwd: Path, args: list[str]) -> Any:
    """`git vivary ARGS` whose scratch index in `.git/vivary/tmp/` lands on a full disk: the file it copies the index to
    (named by its pid, which `exec` keeps) is a symbolic link to /dev/full, where every write is ENOSPC."""
    import subprocess
    import sys

    script = ('mkdir -p .git/vivary/tmp && ln -sf /dev/full .git/vivary/tmp/index.$$ && '
              'exec "$0" -m vivary_git.main "$@"')
    return subprocess.run(["sh", "-c", script, sys.executable, *args], cwd=cwd, capture_output=True, text=True,
                          check=False)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_scratch_index_that_cannot_be_written_in_git_vivary_is_made_elsewhere(repo: Repo) -> None:
    """A read-only repository or a full disk: copying the index to `.git/vivary/tmp/` was a traceback (`OSError:
    [Errno 28] No space left on device`, or 30, read-only) and exit 1 for every command reading the working tree.
    The copy is made in a private folder of the system's temporary directory instead, and the run goes on."""
    repo.commit("a", {"notes/a.md": "# A\n\nSee [[b]].\n"})
    repo.write({"notes/b.md": "# B\n"})  # a new file: the snapshot is the working tree's, not the index's
    for args in (["check"], ["graph"], ["query", "id:b"], ["find", "B"]):
        want = run_git_vivary(args, repo.path)
        got = _with_full_scratch(repo.path, args)
        assert "Traceback" not in got.stderr and got.returncode == want.returncode == 0, (args, got.stderr)
        assert got.stdout == want.stdout, args
        assert not list((repo.path / ".git" / "vivary" / "tmp").iterdir())


def test_no_place_for_a_scratch_index_is_one_line_naming_both(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither `.git/vivary/tmp/` nor the system's temporary directory can hold the copy: a `GitError` (exit 2)
    naming both and the fix."""
    import errno
    import tempfile

    from vivary_git import worktree
    from vivary_git.errors import GitError
    from vivary_git.git import Repo as GitRepo

    repo.commit("a", {"notes/a.md": "# A\n"})
    r = GitRepo(repo.path)
    tmp = r.vivary_dir / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / f"index.{os.getpid()}").symlink_to("/dev/full")

    def full(*_: Any, **__: Any) -> str:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tempfile, "mkdtemp", full)
    with pytest.raises(GitError) as err:
        worktree.worktree_tree(r)
    said = str(err.value)
    assert str(tmp) in said and "No space left on device" in said and "Free some space" in said, said
    assert "--rev" in said and "\n" not in said and err.value.exit_code == 2


def _read_only_git_dir_works() -> bool:
    import subprocess

    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind / /mnt 2>/dev/null || exit 1"],
                           capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.skipif(not _read_only_git_dir_works(), reason="needs a mount namespace (unshare -m) for a read-only .git")
def test_a_read_only_repository_is_read_or_refused_in_one_line(repo: Repo) -> None:
    """`.git` mounted read-only (a mount namespace of the test's own): every working-tree command was a traceback.
    Now the caches are skipped with a line each; a working tree with a file Git cannot store (it cannot write its
    object database) is refused in one line naming the folder, exit 2, instead of being read without that file."""
    import subprocess
    import sys

    repo.commit("a", {"notes/a.md": "# A\n"})
    # Files as old as the index are "racily clean": Git hashes them again, and cannot even freshen the objects it has.
    for path in repo.path.rglob("*"):
        if ".git" not in path.relative_to(repo.path).parts:
            os.utime(path, (1_600_000_000, 1_600_000_000))
    repo.git("update-index", "--refresh")
    gitdir = repo.path / ".git"

    def ro(args: list[str]) -> Any:
        script = ('mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && cd "$1" && shift && '
                  'exec "$0" -m vivary_git.main "$@"')
        return subprocess.run(["unshare", "-m", "sh", "-c", script, sys.executable, str(gitdir), str(repo.path),
                               *args], capture_output=True, text=True, check=False)

    for args in (["check"], ["graph"], ["query", "id:a"], ["find", "A"], ["check", "--staged"], ["ci"]):
        got = ro(args)
        assert got.returncode == 0 and "Traceback" not in got.stderr, (args, got.stderr)
    repo.write({"notes/b.md": "# B, never stored\n"})
    got = ro(["check"])
    assert got.returncode == 2 and "Traceback" not in got.stderr, got.stderr
    assert f"Git cannot write its object database {gitdir / 'objects'}" in got.stderr, got.stderr


def test_git_refusing_to_read_the_working_tree_is_said_with_its_own_lines(repo: Repo, cli: Any) -> None:
    """A clean filter that fails (`filter.NAME.required`) stops `git add -A` of the working tree. Git's own
    lines were folded into ours with literal `\\n`s; they follow it, each indented, as for every refusal of Git's."""
    repo.commit(files={"a.md": "# A\n"})
    repo.git("config", "filter.boom.clean", "false")
    repo.git("config", "filter.boom.required", "true")
    repo.write({".gitattributes": "*.md filter=boom\n", "a.md": "# A, edited\n"})
    r = cli("check", cwd=repo.path)
    assert r.code == 2, r.err
    head, *said = r.err.splitlines()
    assert head == ("git vivary check: could not read the working tree: `git add -A` into a scratch index failed "
                    "(exit code 128); fix what Git names, then run it again. Git said:")
    assert said and all(line.startswith("  ") for line in said), said
    assert "  fatal: a.md: clean filter 'boom' failed" in said and "\\n" not in r.err
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0  # a commit is read without the filter
