"""Derived memory state is only ever what this machine wrote (memory/statefolder.py) or what the trust setting
still allows (memory/local/vectors.py): the attacker's steps, for real, with Git and the real model.

1. A repository commits `.vivary/memory.toml` pointing `state_path` into the work tree and ships a forged
   index there (two notes' vectors swapped, the digests patched): a fresh clone at the path the forger
   predicted must refuse it, naming the folder and the rule, and never hand it to hnswlib.
2. The contract's layout (`.vivary/memory/`, ignored by Git, nothing tracked) keeps working, and a file some
   other process puts there later is not read as state.
3. Vectors taken from `refs/vivary/cache` under `vivary.cacheTrust any` are not ranked with once the setting
   is lowered; `index` drops them and embeds those notes here.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Repo, git, run_git_vivary
from test_memory_local import PUBLIC, TROPO
from test_memory_vectors import cache_vectors, clone, keys_of, publish

from vivary_git import open_workspace
from vivary_git.errors import RefusedError
from vivary_git.memory.local.embed import embedder_status
from vivary_git.refnames import CACHE_REF
from vivary_git.store.write import Changes, write

needs_model = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

STATE = ".vivary/memory/local"
DEFAULT = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
IN_TREE = f'{DEFAULT}\n[memory.local]\nstate_path = "{STATE}"\n'
IGNORED = "/.vivary/memory/\n"
QUESTION = "how often are the signing keys rotated?"


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path this process hands to hnswlib's `load_index` (the class wrapped, not mocked)."""
    import hnswlib

    seen: list[str] = []
    real = hnswlib.Index

    class Recording(real):  # type: ignore[misc, valid-type]
        def load_index(self, path: str, *args: Any, **kwargs: Any) -> Any:
            seen.append(path)
            return super().load_index(path, *args, **kwargs)

    monkeypatch.setattr(hnswlib, "Index", Recording)
    return seen


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file this process reads through safeio (how state, notes and config files are read), wrapped."""
    from vivary_git import safeio

    seen: list[str] = []
    real = safeio._read

    def recording(path: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(safeio, "_read", recording)
    return seen


def dataset_folder(root: Path) -> Path:
    found = list((root / STATE).glob("vivary-*"))
    assert len(found) == 1, found
    return found[0]


def swap_two_notes(folder: Path, a: str, b: str) -> None:
    """Forge the index in `folder` as anyone with its format could: notes `a` and `b` trade their vectors
    (their entries' HNSW labels), and the manifest's digest of the entries is patched to match."""
    from vivary_git.memory.local.files import ENTRIES, Entries, Entry, FileRef, Manifest, _sha

    entries = msgspec.msgpack.decode((folder / ENTRIES).read_bytes(), type=Entries)
    label = {e.node_id: e.label for e in entries.entries}
    swapped = [Entry(e.node_id, e.digest, label[b] if e.node_id == a else label[a] if e.node_id == b else e.label)
               for e in entries.entries]
    data = msgspec.msgpack.encode(Entries(fingerprint=entries.fingerprint, entries=swapped))
    (folder / ENTRIES).write_bytes(data)
    manifest = msgspec.json.decode((folder / "manifest.json").read_bytes(), type=Manifest)
    files = {**manifest.files, ENTRIES: FileRef(_sha(data), len(data))}
    (folder / "manifest.json").write_bytes(msgspec.json.encode(msgspec.structs.replace(manifest, files=files)))


def top_hit(cli: Any, path: Path) -> str:
    r = cli("recall", QUESTION, "--mode", "semantic", "--json", cwd=path)
    assert r.code == 0, r.err
    hit: str = r.json()[0]["node_id"]
    return hit


# --- 1. a state folder a clone brings ---------------------------------------------------------------------


@needs_model
def test_a_shipped_index_in_a_committed_state_path_is_refused_in_a_fresh_clone(
        repo: Repo, cli: Any, tmp_path: Path, loads: list[str], reads: list[str]) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, **PUBLIC})
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    repo.git("push", "-q", str(origin), "main")
    # The forger builds a real index at the path a CI runner clones to (the dataset's name hashes that path),
    # swaps two notes' vectors, and commits it.
    victim = tmp_path / "victim"
    git(tmp_path, "clone", "-q", "-b", "main", str(origin), str(victim))
    (victim / ".git" / "info" / "exclude").write_text(IGNORED)  # only so that this index run may write there
    assert cli("index", "--yes", cwd=victim).code == 0
    assert top_hit(cli, victim) == "keys"
    swap_two_notes(dataset_folder(victim), "keys", "garden")
    git(victim, "add", "-f", STATE)
    git(victim, "commit", "-qm", "memory index")
    git(victim, "push", "-q", str(origin), "main")
    shipped = {p: p.read_bytes() for p in dataset_folder(victim).iterdir()}
    assert shipped
    shutil.rmtree(victim)

    git(tmp_path, "clone", "-q", "-b", "main", str(origin), str(victim))  # fresh, at the predicted path
    loads.clear()
    reads.clear()
    for args in (["recall", QUESTION, "--mode", "semantic", "--json"], ["index", "--yes", "--json"]):
        r = cli(*args, cwd=victim)
        assert r.code == 3, (args, r.out, r.err)
        assert r.out == "" and "garden" not in r.err
        assert f"{STATE} (memory.local.state_path) holds" in r.err and "tracked by Git" in r.err
        assert "must be ignored by Git and hold no tracked file" in r.err
        assert f"git rm -r --cached -- {STATE}" in r.err
    assert loads == []  # nothing under the folder reached hnswlib: nothing was loaded at all
    assert not [p for p in reads if p.startswith(str(victim / STATE))]  # nor was any of it read
    assert {p: p.read_bytes() for p in dataset_folder(victim).iterdir()} == shipped  # and nothing was rewritten
    memory = cli("doctor", "--json", cwd=victim).json()["memory"]
    assert memory["status"] == "misconfigured" and "tracked by Git" in memory["detail"]

    # Once the files are untracked and the folder ignored, they are still not this machine's: rebuilt, not read.
    git(victim, "rm", "-r", "-q", "--cached", "--", STATE)
    (victim / ".gitignore").write_text(IGNORED)
    git(victim, "add", ".gitignore")
    git(victim, "commit", "-qm", "untrack the index")
    r = cli("recall", QUESTION, "--mode", "semantic", "--json", cwd=victim)
    assert r.code == 3 and "did not write it" in r.err and "garden" not in r.out, r.out + r.err
    assert [p for p in reads if p.startswith(str(victim / STATE))]  # read now (and disowned): the wrapper sees it
    assert loads == []
    rep = cli("index", "--yes", "--json", cwd=victim)
    assert rep.code == 0 and not rep.json()["unchanged"] and rep.json()["embedded"] == len(PUBLIC), rep.err
    assert top_hit(cli, victim) == "keys"


def test_a_state_folder_git_does_not_ignore_is_refused_before_anything_is_written(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, **PUBLIC})
    for args in (["index", "--yes"], ["recall", "keys"], ["forget", "--yes"]):
        r = cli(*args, cwd=repo.path)
        assert r.code == 3, (args, r.err)
        assert f"{STATE} (memory.local.state_path) is in the work tree but Git does not ignore it" in r.err
        assert f"add `/{STATE}/` to .gitignore" in r.err
    assert not (repo.path / ".vivary" / "memory").exists()


def test_a_symbolic_link_on_the_way_to_the_state_folder_is_refused(repo: Repo, cli: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    (repo.path / ".vivary" / "memory").symlink_to(elsewhere)
    r = cli("index", "--yes", cwd=repo.path)
    assert r.code == 3 and ".vivary/memory is a symbolic link, on the way to the memory state folder" in r.err
    assert list(elsewhere.iterdir()) == []


# Each refusal word for word: the folder, the setting that named it, the rule and the fix.
RULE = "a memory state folder in the work tree must be ignored by Git and hold no tracked file"
KEY = "memory.local.state_path"
UNDER_GIT = f"leave {KEY} empty to keep the state under .git/vivary/"


def _refused_with(r: Any, want: str) -> None:
    assert r.code == 3, (r.code, r.out, r.err)
    assert r.err == f"git vivary forget: {want}\n", r.err


def test_a_state_folder_outside_git_is_refused_word_for_word(cli: Any, tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    for name, text in {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, **PUBLIC}.items():
        (plain / name).parent.mkdir(parents=True, exist_ok=True)
        (plain / name).write_text(text)
    r = cli("forget", "--yes", cwd=plain)
    assert r.code == 3, r.err
    assert (f"git vivary forget: {plain / STATE} ({KEY}) is not in a Git work tree, so Git cannot say that it "
            f"ignores it ({RULE}); run `git init` and add it to .gitignore, or leave {KEY} empty\n") in r.err


def test_a_file_on_the_way_to_the_state_folder_is_refused_word_for_word(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    (repo.path / ".vivary" / "memory").write_text("not a folder")
    _refused_with(cli("forget", "--yes", cwd=repo.path),
                  f".vivary/memory is not a folder, on the way to the memory state folder {STATE} ({KEY}): a state "
                  f"folder is a plain folder in the work tree; remove it (it holds only derived state), or {UNDER_GIT}")


def test_tracked_files_in_the_state_folder_are_refused_word_for_word(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, **PUBLIC,
                          f"{STATE}/manifest.json": "{}", f"{STATE}/index.bin": "x"})
    _refused_with(cli("forget", "--yes", cwd=repo.path),
                  f"{STATE} ({KEY}) holds 2 file(s) tracked by Git, {STATE}/index.bin first: {RULE}, and a tracked "
                  "file came with the repository, not from this machine (a shipped index would decide what recall "
                  f"ranks), so nothing in it was read; untrack them with `git rm -r --cached -- {STATE}`, commit, and "
                  f"make sure .gitignore lists `/{STATE}/`")


def test_a_state_folder_git_does_not_ignore_is_refused_word_for_word(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, **PUBLIC})
    _refused_with(cli("forget", "--yes", cwd=repo.path),
                  f"{STATE} ({KEY}) is in the work tree but Git does not ignore it: {RULE} (what is kept there could "
                  f"be committed, and only what this machine wrote may be read); add `/{STATE}/` to .gitignore "
                  f"(`git check-ignore -v {STATE}/` then names the rule), or {UNDER_GIT}")


@pytest.mark.parametrize(("stderr", "said"), [
    (b"fatal: index file corrupt", "fatal: index file corrupt"),
    (b"fatal: bad \xff byte", "fatal: bad \ufffd byte"),
    (b"", "exit code 128"),
], ids=["its-words", "not-utf-8", "silent"])
def test_a_git_that_cannot_list_tracked_files_refuses_naming_its_reason(
        repo: Repo, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stderr: bytes, said: str) -> None:
    """Git failing is put in place of the real `git` only for `ls-files` of the state folder: a `git` first on
    PATH that runs the real one for everything else."""
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    real = shutil.which("git")
    bindir = tmp_path / "failing-git"
    bindir.mkdir()
    (bindir / "said").write_bytes(stderr)
    (bindir / "git").write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" ls-files "*" {STATE}"*) cat "{bindir}/said" >&2; exit 128;; esac\n'
        f'exec {real} "$@"\n')
    (bindir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    _refused_with(cli("forget", "--yes", cwd=repo.path),
                  f"cannot tell whether Git tracks files in {STATE} ({said}); {RULE}")


def test_a_work_tree_set_elsewhere_has_its_ignore_rules_asked_of_its_own_git_dir(repo: Repo, cli: Any,
                                                                                 tmp_path: Path) -> None:
    """`core.worktree`: Git run in the notes folder finds no repository; the ignore rule lives in the Git
    directory's info/exclude."""
    notes = tmp_path / "notes"
    for name, text in {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, **PUBLIC}.items():
        (notes / name).parent.mkdir(parents=True, exist_ok=True)
        (notes / name).write_text(text)
    repo.git("config", "core.worktree", str(notes))
    (repo.path / ".git" / "info" / "exclude").write_text(IGNORED)
    repo.git("add", "-A")
    repo.git("commit", "-qm", "notes")
    r = cli("forget", "--yes", cwd=repo.path)
    assert r.code == 0, r.err


@needs_model
def test_each_state_folder_has_its_own_record(repo: Repo, cli: Any) -> None:
    """What is written in a work-tree folder is recorded by that folder's path: a second folder gets a record
    of its own, and the first one's stays."""
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    written = repo.path / ".git" / "vivary" / "written"
    assert cli("index", "--yes", cwd=repo.path).code == 0
    first = sorted(p.name for p in written.iterdir())
    other = IN_TREE.replace(STATE, ".vivary/memory/other")
    repo.commit("other folder", {".vivary/memory.toml": other})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    both = sorted(p.name for p in written.iterdir())
    assert len(first) == 1 and len(both) == 2 and first[0] in both


# --- 2. the contract's layout ----------------------------------------------------------------------------


@needs_model
def test_an_ignored_untracked_state_folder_keeps_working(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    rep = cli("index", "--yes", "--json", cwd=repo.path)
    assert rep.code == 0 and rep.json()["state"].endswith(dataset_folder(repo.path).name), rep.err
    assert top_hit(cli, repo.path) == "keys"
    assert cli("index", "--yes", "--json", cwd=repo.path).json()["unchanged"]
    assert repo.git("status", "--porcelain") == ""  # nothing to commit: the state is ignored
    assert (repo.path / ".git" / "vivary" / "written").is_dir()  # what was written is recorded in the git dir
    assert cli("forget", "--yes", cwd=repo.path).code == 0
    assert not (repo.path / ".git" / "vivary" / "written").exists() or not any(
        (repo.path / ".git" / "vivary" / "written").rglob("manifest.json"))


@needs_model
@pytest.mark.parametrize("place", ["written", "written/DIGEST"])
def test_the_record_of_a_state_folder_is_never_kept_through_a_link_out_of_the_git_folder(
        repo: Repo, cli: Any, tmp_path: Path, place: str) -> None:
    """What this machine wrote in a work-tree state folder is recorded under `.git/vivary/written/`, and only what
    the record vouches for is read back: a link there out of the Git folder had the record kept (and read) wherever
    it led. It is refused as everything under `.git/vivary` is (derived.py), before anything is written."""
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    written = repo.path / ".git" / "vivary" / "written"
    (digest,) = [p.name for p in written.iterdir()]
    shutil.rmtree(written)
    shutil.rmtree(repo.path / STATE)
    outside = tmp_path / "outside"
    outside.mkdir()
    link = written.parent / place.replace("DIGEST", digest)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    r = cli("index", "--yes", cwd=repo.path)
    assert r.code == 2 and r.err.startswith(f"git vivary index: {link}: a symbolic link that leads out"), r.err
    assert list(outside.iterdir()) == [] and not (repo.path / STATE).exists()


@needs_model
def test_a_file_put_in_an_ignored_state_folder_later_is_not_loaded(repo: Repo, cli: Any, loads: list[str]) -> None:
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": IN_TREE, ".gitignore": IGNORED, **PUBLIC})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    folder = dataset_folder(repo.path)
    swap_two_notes(folder, "keys", "garden")  # another process: a consistent forgery, digests patched
    loads.clear()
    r = cli("recall", QUESTION, "--mode", "semantic", "--json", cwd=repo.path)
    # The forged manifest and entries are not this machine's, so not the index: recall answers from the vectors
    # this machine wrote (an exact search), and never loads a graph from the folder.
    assert r.code == 0 and r.json()[0]["node_id"] == "keys", r.out + r.err
    assert "this machine did not write it" in r.err
    assert not [p for p in loads if p.startswith(str(folder))]
    # A graph file replaced later is not handed to hnswlib either, even when its size is right.
    assert cli("index", "--yes", cwd=repo.path).code == 0
    hnsw = folder / "hnsw.bin"
    forged = bytearray(hnsw.read_bytes())
    forged[-1] ^= 1
    hnsw.write_bytes(bytes(forged))
    loads.clear()
    r = cli("recall", QUESTION, "--mode", "semantic", "--json", cwd=repo.path)
    assert not [p for p in loads if p == str(hnsw)], loads
    rep = cli("index", "--yes", "--json", cwd=repo.path)
    assert rep.code == 0 and not rep.json()["unchanged"]
    assert top_hit(cli, repo.path) == "keys"


def test_cognee_state_folder_follows_the_same_rule(repo: Repo) -> None:
    """Through the function that decides Cognee's folder (memory/cognee.py `state_store`; the library itself
    is not needed for that, and is not imported)."""
    from vivary_git.memory import cognee
    from vivary_git.memory.config import load_memory_config

    memory = '[memory]\nenabled = true\nprovider = "cognee"\n'
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": memory, **PUBLIC})

    def folder() -> Any:
        ws = open_workspace(repo.path)
        return cognee.state_store(ws, load_memory_config(ws))

    with pytest.raises(RefusedError, match="Git does not ignore it"):
        folder()
    repo.commit("ignore", {".gitignore": IGNORED})
    state = folder()
    assert state.directory == repo.path / ".vivary" / "memory" / "cognee"
    # A manifest this machine did not write is not read; one written through the store is.
    (state.directory).mkdir(parents=True)
    (state.directory / cognee.MANIFEST).write_text("{}")
    assert state.get(cognee.MANIFEST) is None
    state.put(cognee.MANIFEST, b'{"x": 1}')
    assert folder().get(cognee.MANIFEST) == b'{"x": 1}'
    # A tracked file in it: refused, named, whatever else is there.
    repo.git("add", "-f", ".vivary/memory/cognee/manifest.json")
    repo.git("commit", "-qm", "ship a manifest")
    with pytest.raises(RefusedError, match=r"\.vivary/memory/cognee/manifest\.json first"):
        folder()


# --- 3. lowering vivary.cacheTrust ---------------------------------------------------------------------------


@pytest.fixture
def forged_origin(repo: Repo, cli: Any, tmp_path: Path) -> Path:
    """An origin whose refs/vivary/cache holds every note's vector, with two notes' vectors swapped: well
    formed, as anyone who can push the ref could publish it."""
    repo.commit("notes", {"tropo.toml": TROPO, ".vivary/memory.toml": DEFAULT, **PUBLIC})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    origin = publish(repo, tmp_path)
    keys = keys_of(repo.path, "notes/keys.md", "notes/garden.md")
    held = cache_vectors(repo.path)
    a, b = keys["notes/keys.md"], keys["notes/garden.md"]
    write(open_workspace(repo.path).source.repo, Changes(  # type: ignore[arg-type]
        vectors={a: msgspec.msgpack.encode(held[b]), b: msgspec.msgpack.encode(held[a])}), message="forged")
    repo.git("push", "-q", "-f", "origin", f"{CACHE_REF}:{CACHE_REF}")
    return origin


@needs_model
@pytest.mark.parametrize("lowered", ["none", "signed"])
def test_lowering_cache_trust_stops_recall_ranking_with_fetched_vectors(
        forged_origin: Path, cli: Any, tmp_path: Path, lowered: str) -> None:
    me = clone(forged_origin, tmp_path / "me", trust="any")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    rep = cli("index", "--yes", "--json", cwd=me).json()
    assert (rep["fetched"], rep["embedded"]) == (len(PUBLIC), 0)
    assert top_hit(cli, me) == "garden"  # the fetched vectors rank: trusted, the forgery works

    git(me, "config", "vivary.cacheTrust", lowered)
    r = cli("recall", QUESTION, "--mode", "semantic", "--json", cwd=me)
    assert r.code == 3 and r.out == "", r.out
    assert f"vivary.cacheTrust any, and this clone's vivary.cacheTrust is {lowered} now" in r.err
    assert "run `git vivary index --yes`" in r.err
    rep = cli("index", "--yes", "--json", cwd=me)
    assert rep.code == 0 and f"dropped {len(PUBLIC)} vector(s)" in rep.err
    assert (rep.json()["fetched"], rep.json()["embedded"]) == (0, len(PUBLIC))
    assert top_hit(cli, me) == "keys"
    assert cli("index", "--yes", "--json", cwd=me).json()["unchanged"]
    # Raised again, the fetched vectors are not taken back: the local ones are this clone's own now.
    git(me, "config", "vivary.cacheTrust", "any")
    assert top_hit(cli, me) == "keys"


@needs_model
def test_lowering_cache_trust_stops_recall_of_an_assembled_tree_ranking_with_fetched_vectors(
        forged_origin: Path, cli: Any, tmp_path: Path) -> None:
    me = clone(forged_origin, tmp_path / "me", trust="any")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    assert top_hit(cli, me) == "garden"  # assembled from the fetched vectors, and kept
    git(me, "config", "vivary.cacheTrust", "none")
    r = cli("recall", QUESTION, "--mode", "semantic", "--json", cwd=me)
    assert r.code == 3 and r.out == "" and "have no vector yet" in r.err, r.out + r.err
    rep = cli("index", "--yes", "--json", cwd=me).json()
    assert (rep["fetched"], rep["embedded"]) == (0, len(PUBLIC))
    assert top_hit(cli, me) == "keys"


def test_trust_levels_are_ordered_and_an_unrecorded_level_is_the_most_trusting() -> None:
    from vivary_git.memory.local import vectors

    assert [vectors.allows("signed", level) for level in ("none", "signed", "any")] == [True, True, False]
    assert [vectors.allows("none", level) for level in ("none", "signed", "any")] == [True, False, False]
    assert vectors.allows("any", "any") and not vectors.allows("bogus", "signed")
    assert vectors.highest([]) == "none" and vectors.highest(["signed", "none"]) == "signed"
    # A record written before levels were: every foreign row counts as taken under `any`.
    old = msgspec.msgpack.encode({"keys": {}, "foreign": ["a" * 64]})
    assert msgspec.msgpack.decode(old, type=vectors._Sharing).levels() == {"a" * 64: vectors.LEGACY_TRUST}
