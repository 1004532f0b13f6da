"""A moved or copied repository, or a new linked work tree, takes the vectors this repository already embedded in
its other state folders (memory/local/siblings.py) instead of running the model over every note again: only
rows of the same packet and model, checked as the own cache is, for notes this workspace admits."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Repo, git, run_git_vivary
from test_memory_local import MEMORY, PRIVATE, PUBLIC, TROPO
from test_memory_vectors import clone, model_runs, publish  # noqa: F401  (model_runs: a fixture)

from vivary_git.memory.local.embed import embedder_status
from vivary_git.memory.local.files import VECTOR_META, VECTORS, VectorMeta

pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

QUESTION = "how often are signing keys rotated?"


@pytest.fixture
def ws(repo: Repo) -> Repo:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, ".gitignore": "ignored/\n", **PUBLIC, **PRIVATE})
    repo.git("add", "-A")
    repo.git("add", "-f", "ignored/hidden.md")
    repo.git("commit", "-qm", "init")
    return repo


def _copy(repo: Path, dest: Path) -> Path:
    """`cp -a`: the repository, its `.git/vivary/memory/` state folders included, in another folder."""
    shutil.copytree(repo, dest, symlinks=True)
    return dest


def _folders(path: Path) -> list[Path]:
    return sorted(p for p in (path / ".git" / "vivary" / "memory").iterdir() if p.is_dir())


def _hits(cli: Any, path: Path) -> list[str]:
    r = cli("recall", QUESTION, "--json", cwd=path)
    assert r.code == 0, r.err
    return [h["node_id"] for h in r.json()]


def test_a_copied_repository_embeds_nothing_and_recalls_the_same(
        ws: Repo, cli: Any, tmp_path: Path, model_runs: list[int]) -> None:  # noqa: F811
    first = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert (first["embedded"], first["borrowed"]) == (len(PUBLIC), 0)
    copy = _copy(ws.path, tmp_path / "moved")
    model_runs.clear()
    r = cli("index", "--yes", "--json", cwd=copy)
    assert r.code == 0, r.err
    rep = r.json()
    assert (rep["embedded"], rep["reused"], rep["borrowed"], rep["fetched"]) == (0, len(PUBLIC), len(PUBLIC), 0)
    assert model_runs == []  # not one note through the model
    assert len(_folders(copy)) == 2  # the old folder is read, never renamed or changed
    assert _hits(cli, copy) == _hits(cli, ws.path)
    text = cli("index", "--yes", cwd=copy).out  # the same again: nothing to do
    assert text.startswith("up to date"), text


@pytest.fixture
def model_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The models this process loaded (`runtime._load_embedder`, wrapped, not mocked)."""
    from vivary_git.memory.local import runtime

    loads: list[str] = []
    real = runtime._load_embedder

    def counting(name: str, **kwargs: Any) -> Any:
        loads.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(runtime, "_load_embedder", counting)
    return loads


def test_a_moved_repository_whose_vectors_are_all_borrowed_loads_no_model(
        ws: Repo, cli: Any, tmp_path: Path, model_loads: list[str]) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    moved = tmp_path / "moved"
    shutil.move(ws.path, moved)
    model_loads.clear()
    rep = cli("index", "--yes", "--json", cwd=moved).json()
    assert (rep["embedded"], rep["borrowed"]) == (0, len(PUBLIC))
    assert model_loads == []  # every vector was there to take: the model is not even loaded
    # A note left to embed still loads it, once.
    (moved / "notes" / "new.md").write_text("# Lunch\n\nThe canteen opens at noon.\n")
    git(moved, "add", "-A")
    git(moved, "commit", "-qm", "lunch")
    rep = cli("index", "--yes", "--json", cwd=moved).json()
    assert rep["embedded"] == 1 and len(model_loads) == 1


def test_a_new_linked_work_tree_embeds_nothing(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    other = tmp_path / "second"
    ws.git("worktree", "add", "-q", str(other))
    r = cli("index", "--yes", cwd=other)
    assert r.code == 0, r.err
    assert f"0 note(s) new or changed; {len(PUBLIC)} reused from the cache ({len(PUBLIC)} from this " \
           "repository's other index folders)" in r.out, r.out
    assert _hits(cli, other) == _hits(cli, ws.path)


def test_only_notes_this_workspace_admits_take_a_row(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """A note public where it was indexed but private in the copy gets no vector from there."""
    assert cli("index", "--yes", cwd=ws.path).code == 0
    copy = _copy(ws.path, tmp_path / "moved")
    (copy / ".vivary" / "memory.toml").write_text(MEMORY.replace('"drafts/**"', '"drafts/**", "notes/garden.md"'))
    rep = cli("index", "--yes", "--json", cwd=copy).json()
    assert (rep["indexed"], rep["embedded"], rep["borrowed"]) == (len(PUBLIC) - 1, 0, len(PUBLIC) - 1)
    mine = [p for p in _folders(copy) if p.name == rep["dataset"]]
    meta = msgspec.msgpack.decode((mine[0] / VECTOR_META).read_bytes(), type=VectorMeta)
    assert len(meta.digests) == len(PUBLIC) - 1
    assert not any(b"tomato" in p.read_bytes().lower() for p in mine[0].rglob("*") if p.is_file())


@pytest.mark.parametrize("damage", ["truncated", "another model"])
def test_a_damaged_or_foreign_sibling_is_not_used(ws: Repo, cli: Any, tmp_path: Path, damage: str) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    copy = _copy(ws.path, tmp_path / "moved")
    [old] = _folders(copy)
    if damage == "truncated":
        data = (old / VECTORS).read_bytes()
        (old / VECTORS).write_bytes(data[: len(data) // 2])
    else:
        meta = msgspec.msgpack.decode((old / VECTOR_META).read_bytes(), type=VectorMeta)
        (old / VECTOR_META).write_bytes(msgspec.msgpack.encode(msgspec.structs.replace(meta, key="another-model/e1")))
    r = cli("index", "--yes", "--json", cwd=copy)
    assert r.code == 0, r.err
    rep = r.json()
    assert (rep["embedded"], rep["borrowed"]) == (len(PUBLIC), 0)
    assert _hits(cli, copy) == _hits(cli, ws.path)


def test_a_row_the_sibling_took_from_the_shared_cache_keeps_its_trust(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """A row the old folder fetched under `vivary.cacheTrust any` is taken only while the setting still allows it,
    and stays a fetched row here (never recorded as this clone's work, dropped once the trust is lowered)."""
    assert cli("index", "--yes", cwd=ws.path).code == 0
    other = clone(publish(ws, tmp_path), tmp_path / "clone")
    assert run_git_vivary(["sync", "fetch"], other).returncode == 0
    rep = cli("index", "--yes", "--json", cwd=other).json()
    assert (rep["embedded"], rep["fetched"]) == (0, len(PUBLIC))
    trusting = _copy(other, tmp_path / "trusting")
    rep = cli("index", "--yes", "--json", cwd=trusting).json()
    assert (rep["embedded"], rep["borrowed"], rep["recorded"]) == (0, len(PUBLIC), 0)
    git(trusting, "config", "vivary.cacheTrust", "none")
    r = cli("index", "--yes", "--json", cwd=trusting)  # the rows it borrowed were fetched ones: dropped
    assert r.code == 0, r.err
    assert (r.json()["embedded"], r.json()["borrowed"]) == (len(PUBLIC), 0), r.err
    careful = _copy(other, tmp_path / "careful")
    git(careful, "config", "vivary.cacheTrust", "none")
    rep = cli("index", "--yes", "--json", cwd=careful).json()
    assert (rep["embedded"], rep["borrowed"]) == (len(PUBLIC), 0)


def test_a_copied_work_tree_state_folder_is_not_read_and_says_nothing(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """With `state_path`, what the copy's folder holds was recorded for the original's path, not the copy's: it is
    not this machine's writing there, so it is passed over without a word (no "ignored ... writes it again")."""
    ws.write({".vivary/memory.toml": MEMORY + '\n[memory.local]\nstate_path = ".vivary/memory/local"\n',
              ".gitignore": "ignored/\n/.vivary/memory/\n"})
    ws.git("commit", "-qam", "state in the work tree")
    assert cli("index", "--yes", cwd=ws.path).code == 0
    copy = _copy(ws.path, tmp_path / "moved")
    r = cli("index", "--yes", "--json", cwd=copy)
    assert r.code == 0, r.err
    assert (r.json()["embedded"], r.json()["borrowed"]) == (len(PUBLIC), 0)
    assert "ignored" not in r.err, r.err
    assert _hits(cli, copy) == _hits(cli, ws.path)


def _gc(cwd: Path, *args: str) -> tuple[int, str, str]:
    r = run_git_vivary(["cache", "gc", *args], cwd)
    return r.returncode, r.stdout, r.stderr


def test_cache_gc_removes_the_state_folders_of_gone_workspaces_and_no_live_one(ws: Repo, cli: Any,
                                                                                 tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    second = tmp_path / "second"
    ws.git("worktree", "add", "-q", str(second))
    assert cli("index", "--yes", cwd=second).code == 0
    legacy = ws.path / ".git" / "vivary" / "memory" / "vivary-old-0123456789ab"  # names no workspace: kept
    shutil.copytree(_folders(ws.path)[0], legacy)
    (legacy / "workspace.path").unlink()
    moved = tmp_path / "moved"
    shutil.move(ws.path, moved)
    assert cli("index", "--yes", cwd=moved).code == 0
    # The work tree's link still names the old place: whether it is live cannot be told, so it is kept.
    code, out, err = _gc(moved, "--dry-run")
    assert code == 0, err
    assert out.count("gc would remove") == 1 and f"the index of {ws.path}: that folder is gone" in out, out
    assert "kept 1 memory state folder(s) that name no workspace" in err and str(legacy.name) in err
    assert len(_folders(moved)) == 4  # a dry run removes nothing
    said = cli("doctor", "--json", cwd=moved).json()["problems"]
    assert [p["fix"] for p in said if "of workspaces that are gone" in p["message"]] == [
        "git vivary cache gc   # removes them; --dry-run names them"], said
    git(moved, "worktree", "repair", str(second))
    code, out, err = _gc(moved)
    assert code == 0, err
    assert out.count("removed ") == 1 and f"the index of {ws.path}: that folder is gone" in out, out
    left = {p.name.rsplit("-", 1)[0] for p in _folders(moved)}
    assert left == {"vivary-moved", "vivary-second", "vivary-old"}
    assert _hits(cli, moved) and _hits(cli, second)  # both live indexes still answer
    # In a copy, the original's folders are another repository's: all go; its own (none yet) is made by index.
    copy = _copy(moved, tmp_path / "copy")
    code, out, err = _gc(copy)
    assert code == 0, err
    assert out.count("removed ") == 2 and "another repository's" in out, out
    assert [p.name.rsplit("-", 1)[0] for p in _folders(copy)] == ["vivary-old"]
    assert len(_folders(moved)) == 3  # the original is untouched
    # The work tree removed: its folder is dead now.
    git(moved, "worktree", "remove", "--force", str(second))
    code, out, err = _gc(moved)
    assert out.count("removed ") == 1 and f"the index of {second}: that folder is gone" in out, out


def test_cache_gc_removes_the_index_lock_of_a_folder_it_removes(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    moved = tmp_path / "moved"
    shutil.move(ws.path, moved)
    assert cli("index", "--yes", cwd=moved).code == 0
    locks = moved / ".git" / "vivary" / "locks"
    names = {p.name.rsplit("-", 1)[0]: f"index-{p.name}.lock" for p in _folders(moved)}
    live, dead = names["vivary-moved"], names["vivary-ws"]
    assert sorted(p.name for p in locks.iterdir()) == sorted([dead, live])
    code, out, err = _gc(moved)
    assert code == 0 and out.count("removed ") == 1, (out, err)
    # The removed folder's lock file goes with it (one more file left per move, before); the live one stays.
    assert [p.name for p in locks.iterdir()] == [live]
    assert cli("index", "--yes", cwd=moved).code == 0 and [p.name for p in locks.iterdir()] == [live]


def test_a_gc_that_refuses_removes_no_state_folder(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    moved = tmp_path / "moved"
    shutil.move(ws.path, moved)
    git(moved, "update-ref", "refs/vivary/cache", "HEAD")  # no cache commit: gc says `cache drop`, writes nothing
    code, out, err = _gc(moved)
    assert code == 2 and "cache drop" in err, err
    assert len(_folders(moved)) == 1 and "removed" not in out


def test_reading_or_indexing_never_removes_a_state_folder(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    moved = tmp_path / "moved"
    shutil.move(ws.path, moved)
    assert cli("index", "--yes", cwd=moved).code == 0
    assert _hits(cli, moved)
    assert cli("doctor", cwd=moved).code in (0, 1)
    assert len(_folders(moved)) == 2
