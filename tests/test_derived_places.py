"""What may stand where derived state goes under `.git/vivary/`: one decision (vivary_git/derived.py) for the
memory index, the locks, the working tree snapshot's scratch folder and the caches, through the CLI on real Git.

Before, the lock and the memory index each walked the way with rules of their own, and the snapshot and the
caches had none: a symbolic link leading out of the Git folder (at `.git/vivary`, `locks`, `memory` or `tmp`) had
the index, its lock, the scratch index and every cache written wherever it led; a link leading nowhere was "a
file" to one command, "a symbolic link" to another, and named at a different place by each."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

from vivary_git.memory.local.embed import embedder_status

needs_embed = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None, reason="needs the [embed] extra"
)

MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
PLACES = ["vivary", "vivary/locks", "vivary/memory", "vivary/tmp"]
DAMAGE = ["link out", "link to nothing", "file"]
SAID = {"link out": "a symbolic link that leads out of the Git folder", "link to nothing":
        "a symbolic link that leads to no folder", "file": "a file"}


@pytest.fixture
def ws(repo: Repo) -> Repo:
    repo.commit("init", {".vivary/memory.toml": MEMORY, "notes/vault.md": "# Vault\n\nThe vault stores secrets.\n"})
    return repo


def _damage(ws: Repo, place: str, damage: str) -> tuple[Path, Path]:
    """Put `damage` at `.git/<place>`; returns it and the folder outside the Git folder a link out leads to."""
    where = ws.path / ".git" / place
    outside = ws.path.parent / "outside"
    outside.mkdir(exist_ok=True)
    where.parent.mkdir(parents=True, exist_ok=True)
    if damage == "link out":
        where.symlink_to(outside)
    elif damage == "link to nothing":
        where.symlink_to(ws.path.parent / "nowhere")
    else:
        where.write_text("not a folder\n")
    return where, outside


def _listing(ws: Repo) -> list[str]:
    top = ws.path / ".git" / "vivary"
    return sorted(str(p.relative_to(top)) for p in top.rglob("*")) if top.is_dir() and not top.is_symlink() else []


def _index_files(ws: Repo) -> list[str]:
    """The files of a memory index under `.git/vivary/memory/` (links not followed)."""
    return [name for _, _, names in os.walk(ws.path / ".git" / "vivary" / "memory") for name in names]


@needs_embed
@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("place", PLACES)
def test_index_refuses_what_stands_in_the_way_and_writes_nothing_through_it(ws: Repo, cli: Any, place: str,
                                                                            damage: str) -> None:
    where, outside = _damage(ws, place, damage)
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 2, r.err
    assert r.err.startswith(f"git vivary index: {where}: {SAID[damage]}") and r.err.count("\n") == 1, r.err
    assert "remove it" in r.err and "Traceback" not in r.err
    assert list(outside.iterdir()) == [] and _index_files(ws) == []
    assert os.path.lexists(where)  # named, never removed by a command
    where.unlink()
    assert cli("index", "--yes", cwd=ws.path).code == 0  # the fix it names is the fix


@needs_embed
@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("place", ["vivary", "vivary/memory", "vivary/tmp"])
def test_recall_and_check_refuse_it_alike_and_leave_no_state(ws: Repo, cli: Any, place: str, damage: str) -> None:
    """`recall` and `check` of the working tree need the memory folder and the snapshot's: the same refusal, and
    a command that only reads makes nothing, here or where a link leads."""
    where, outside = _damage(ws, place, damage)
    before = _listing(ws)
    for args in (["recall", "vault"], ["check"]):
        if args == ["check"] and place == "vivary/memory":
            continue  # check has no memory index to look for
        r = cli(*args, cwd=ws.path)
        assert r.code == 2 and r.err.startswith(f"git vivary {args[0]}: {where}: {SAID[damage]}"), (args, r.err)
        assert r.err.count("\n") == 1 and "remove it" in r.err
    assert list(outside.iterdir()) == [] and _listing(ws) == before


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_memory_write_refuses_a_locks_folder_it_may_not_write_in(ws: Repo, cli: Any, damage: str) -> None:
    where, outside = _damage(ws, "vivary/locks", damage)
    head = ws.git("rev-parse", "HEAD")
    r = cli("remember", "The loading dock closes at 6pm on Fridays.", cwd=ws.path)
    assert r.code == 2 and r.err.startswith(f"git vivary remember: {where}: {SAID[damage]}"), r.err
    assert ws.git("rev-parse", "HEAD") == head and list(outside.iterdir()) == []


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_committed_tree_is_checked_without_the_cache_it_may_not_write(ws: Repo, cli: Any, damage: str) -> None:
    """`check --rev` needs no scratch folder: the cache is optional, so it is left off, saying once what is in the
    way, and never written through a link out of the Git folder."""
    where, outside = _damage(ws, "vivary", damage)
    r = cli("check", "--rev", "HEAD", cwd=ws.path)
    assert r.code == 0, r.err
    assert r.err.startswith(f"vivary: {where}: {SAID[damage]}") and "continuing without the cache" in r.err, r.err
    assert r.err.count(str(where)) == 1
    assert list(outside.iterdir()) == []


@needs_embed
@pytest.mark.parametrize("place", PLACES)
def test_a_link_to_a_folder_inside_the_git_folder_is_used(ws: Repo, cli: Any, place: str) -> None:
    """A link that keeps derived state in the Git folder (a user moving `.git/vivary` beside it) is followed."""
    where = ws.path / ".git" / place
    kept = ws.path / ".git" / f"kept-{where.name}"
    kept.mkdir()
    where.parent.mkdir(parents=True, exist_ok=True)
    where.symlink_to(os.path.relpath(kept, where.parent))
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 0, r.err
    assert "vivary" not in r.err.replace("vivary: embedded", ""), r.err
    assert cli("recall", "vault", cwd=ws.path).code == 0
    assert cli("check", cwd=ws.path).code == 0
    if place != "vivary/tmp":  # the scratch index goes with its run
        assert any(kept.iterdir())


@pytest.mark.parametrize("damage", ["link out", "link to nothing"])
def test_the_mcp_servers_snapshot_refuses_the_scratch_folder_alike(ws: Repo, damage: str) -> None:
    """The MCP server keeps its own scratch index in `.git/vivary/tmp/` (mcp/freshness.py): the same decision as
    every command's snapshot, never a copy of the index written where a link leads."""
    from vivary_git import git
    from vivary_git.errors import GitError
    from vivary_git.mcp.freshness import WorkTree

    where, outside = _damage(ws, "vivary/tmp", damage)
    keeper = WorkTree(git.Repo(ws.path), watch=False)
    try:
        with pytest.raises(GitError, match=f"^{where}: {SAID[damage]}"):
            keeper.tree()
    finally:
        keeper.close()
    assert list(outside.iterdir()) == []


@needs_embed
@pytest.mark.parametrize("damage", DAMAGE)
def test_the_probes_cache_is_left_off_where_it_may_not_be_written(ws: Repo, cli: Any, damage: str) -> None:
    """The similarity probe of an add caches memory vectors in `.git/vivary/probe-vN/`: a cache like the others,
    left off (said once) where `derived.py` says no, never written through a link out of the Git folder."""
    from vivary_git.memory.writes.probe import _FORMAT

    assert cli("remember", "The loading dock closes at 6pm on Fridays.", cwd=ws.path).code == 0
    where, outside = _damage(ws, f"vivary/probe-v{_FORMAT}", damage)
    r = cli("remember", "Visitors sign in at reception and wear a badge.", cwd=ws.path)
    assert r.code == 0, r.err
    assert f"vivary: {where}: {SAID[damage]}" in r.err and "continuing without the cache" in r.err, r.err
    assert list(outside.iterdir()) == [] and os.path.lexists(where)
    if damage == "file":
        assert where.read_text() == "not a folder\n"


def _read_only(git_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`git vivary ARGS` with `git_dir` mounted read-only (a private mount namespace: as root, `chmod` stops no
    write), through `git vivary`'s own `-m` entry point."""
    script = 'mount --bind -o ro "$1" "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(git_dir), sys.executable, "-m",
                           "vivary_git.main", *args], cwd=git_dir.parent, capture_output=True, text=True, check=False)


def _can_mount_read_only(where: Path) -> bool:
    if shutil.which("unshare") is None:
        return False
    done = subprocess.run(["unshare", "-m", "sh", "-c", 'mount --bind -o ro "$1" "$1"', "sh", str(where)],
                          capture_output=True, check=False)
    return done.returncode == 0


@needs_embed
def test_a_read_only_git_folder_is_no_damage(ws: Repo, cli: Any) -> None:
    """Only what stands in the way is refused, never a Git folder that cannot be written: a commit is still read
    (the caches left off, an index run unlocked, each saying so) and recalled from an index made before."""
    git_dir = ws.path / ".git"
    if not _can_mount_read_only(git_dir):
        pytest.skip("no read-only bind mount here (needs unshare and mount in a private namespace)")
    assert cli("index", "--yes", cwd=ws.path).code == 0
    before = _listing(ws)
    checked = _read_only(git_dir, "check", "--rev", "HEAD")
    assert checked.returncode == 0, checked.stderr
    recalled = _read_only(git_dir, "recall", "--rev", "HEAD", "vault", "--json")
    assert recalled.returncode == 0, recalled.stderr
    assert json.loads(recalled.stdout)[0]["path"] == "notes/vault.md", recalled.stdout
    indexed = _read_only(git_dir, "index", "--rev", "HEAD", "--yes")
    assert indexed.returncode == 0 and "without it" in indexed.stderr, indexed.stderr
    assert "in the place of" not in checked.stderr + recalled.stderr + indexed.stderr
    assert _listing(ws) == before


def test_the_memory_access_log_is_left_off_where_it_may_not_be_written(ws: Repo, cli: Any) -> None:
    """An add and a recall append to `.git/vivary/dream/<workspace>/events.log` (docs/dream.md): never through a link
    out of the Git folder; the log is left off, said once, and the add goes through."""
    where, outside = _damage(ws, "vivary/dream", "link out")
    r = cli("remember", "The loading dock closes at 6pm on Fridays.", cwd=ws.path)
    assert r.code == 0, r.err
    assert f"vivary: {where}: {SAID['link out']}" in r.err and "continuing without the memory access log" in r.err
    assert list(outside.iterdir()) == []
