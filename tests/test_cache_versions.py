"""A team on several vivary-git versions sharing one refs/vivary/cache (docs/cache.md, "When versions differ").

An older or newer version's cache is simulated by rewriting the manifest of one this version wrote: its store
layout and parse format numbers, and for a newer one a manifest field this version does not know.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Repo, git
from test_store import NOTES, tip

from vivary_git.config import FORMAT_VERSION
from vivary_git.refnames import CACHE_REF
from vivary_git.store.format import STORE_FORMAT

NEWER = {"store": STORE_FORMAT + 1, "format": FORMAT_VERSION + 1, "writer": "ci (vivary-git 9.0)",
         "compression": "zstd"}  # a field this version's manifest does not have
NEWER_FORMAT = {"format": FORMAT_VERSION + 1, "writer": "ci (vivary-git 9.0)"}  # same layout, later parse rules
OLDER = {"format": FORMAT_VERSION - 1, "writer": "laptop (vivary-git 0.0.9)"}


def as_written_by(path: Path, fields: dict[str, Any], ref: str = CACHE_REF) -> str:
    """Make the cache at `ref` look written by another version: its manifest with `fields` set, in a new root
    commit. Returns that commit."""
    old = tip(path, ref)
    manifest = msgspec.msgpack.decode(subprocess.run(["git", "cat-file", "blob", f"{old}:manifest.msgpack"],
                                                     cwd=path, capture_output=True, check=True).stdout)
    manifest.update(fields)
    blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=path, input=msgspec.msgpack.encode(manifest),
                          capture_output=True, check=True).stdout.decode().strip()
    entries = [line for line in git(path, "ls-tree", old).splitlines() if not line.endswith("\tmanifest.msgpack")]
    entries.append(f"100644 blob {blob}\tmanifest.msgpack")
    tree = subprocess.run(["git", "mktree"], cwd=path, input="\n".join(entries) + "\n", text=True,
                          capture_output=True, check=True).stdout.strip()
    commit = git(path, "commit-tree", tree, "-m", "vivary cache").strip()
    git(path, "update-ref", ref, commit)
    return commit


@pytest.fixture
def shared(repo: Repo) -> Repo:
    """Notes committed and recorded, read by commands whoever wrote the cache."""
    repo.commit("notes", NOTES)
    repo.git("config", "vivary.cacheTrust", "any")
    return repo


@pytest.mark.parametrize("newer", [NEWER, NEWER_FORMAT], ids=["new-layout", "new-format"])
def test_a_newer_versions_cache_is_not_damage_and_is_not_written_over(shared: Repo, cli: Any,
                                                                       newer: dict[str, Any]) -> None:
    assert cli("check", "--rev", "HEAD", cwd=shared.path).code == 1  # d2's broken link; records our cache
    theirs = as_written_by(shared.path, newer)
    shared.commit("edit", {"notes/free.md": "# Free note\n\nlinks [[d1]] and [[m1]]\n"})
    cold = cli("check", "--rev", "HEAD", "--no-cache", cwd=shared.path)
    for _ in range(2):
        r = cli("check", "--rev", "HEAD", cwd=shared.path)
        assert (r.code, r.out) == (cold.code, cold.out)
        assert "ignored the cache" not in r.err and "damage" not in r.err, r.err
        # Left to the version that wrote it: writing ours in its place made the two replace each other every run.
        assert tip(shared.path) == theirs


def test_an_older_versions_cache_is_replaced_by_this_ones(shared: Repo, cli: Any) -> None:
    cli("check", "--rev", "HEAD", cwd=shared.path)
    theirs = as_written_by(shared.path, OLDER)
    r = cli("check", "--rev", "HEAD", cwd=shared.path)
    assert "ignored the cache" not in r.err
    assert tip(shared.path) != theirs
    s = cli("cache", "status", "--json", cwd=shared.path).json()
    assert (s["format"], s["store"], s["problem"]) == (FORMAT_VERSION, STORE_FORMAT, "")


@pytest.mark.parametrize(("fields", "age"), [(NEWER, "newer"), (NEWER_FORMAT, "newer"), (OLDER, "older")])
def test_cache_commands_say_which_version_wrote_a_cache_and_call_it_no_damage(shared: Repo, cli: Any,
                                                                               fields: dict[str, Any],
                                                                               age: str) -> None:
    cli("check", "--rev", "HEAD", cwd=shared.path)
    theirs = as_written_by(shared.path, fields)
    article = "a" if age == "newer" else "an"
    said = f"written by {article} {age} vivary-git ({fields['writer']}, format {fields['format']}"
    status = cli("cache", "status", cwd=shared.path)
    assert status.code == 0 and said in status.out and theirs in status.out, status.out
    verify = cli("cache", "verify", cwd=shared.path)
    assert verify.code == 0 and said in verify.out, verify.out + verify.err
    gc = cli("cache", "gc", cwd=shared.path)
    assert gc.code == 0 and said in gc.out, gc.out + gc.err
    for r in (status, verify, gc):
        assert "damaged" not in r.out + r.err and "cache drop" not in r.out + r.err
    doctor = cli("doctor", "--json", cwd=shared.path).json()
    (problem,) = [p for p in doctor["problems"] if p["area"] == "cache"]
    assert problem["level"] == "warning" and said in problem["message"]
    assert tip(shared.path) == theirs  # none of them changed it


def bare(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


@pytest.mark.parametrize("newer", [NEWER, NEWER_FORMAT], ids=["new-layout", "new-format"])
def test_sync_leaves_a_newer_versions_cache_on_the_remote(shared: Repo, tmp_path: Path, cli: Any,
                                                          newer: dict[str, Any]) -> None:
    origin = bare(tmp_path, "origin.git")
    shared.git("remote", "add", "origin", str(origin))
    shared.git("push", "-q", "origin", "main")
    cli("check", "--rev", "HEAD", cwd=shared.path)
    theirs = as_written_by(shared.path, newer)
    shared.git("push", "-q", "origin", f"{CACHE_REF}:{CACHE_REF}")  # as the newer version's `sync push` would
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", str(origin), str(me))
    git(me, "config", "vivary.cacheTrust", "any")
    cli("check", "--rev", "HEAD", cwd=me)
    ours = tip(me)
    fetched = cli("sync", "fetch", cwd=me)
    assert fetched.code == 0, fetched.err
    assert "written by a newer vivary-git (ci (vivary-git 9.0)" in fetched.err and "upgrade" in fetched.err
    assert tip(me) == ours
    pushed = cli("sync", "push", cwd=me)
    assert pushed.code == 0, pushed.err
    assert "left in place, nothing was pushed" in pushed.err
    assert git(origin, "rev-parse", CACHE_REF).strip() == theirs
    # --force still replaces it, for a team that goes back to an older release.
    assert cli("sync", "push", "--force", cwd=me).code == 0
    assert git(origin, "rev-parse", CACHE_REF).strip() == ours


def test_sync_push_of_another_versions_cache_here_is_no_damage(shared: Repo, tmp_path: Path, cli: Any) -> None:
    origin = bare(tmp_path, "origin.git")
    shared.git("remote", "add", "origin", str(origin))
    cli("check", "--rev", "HEAD", cwd=shared.path)
    as_written_by(shared.path, OLDER)  # an older install recorded in this clone last
    r = cli("sync", "push", cwd=shared.path)
    assert r.code == 0, r.err
    assert "written by an older vivary-git" in r.err and "nothing was pushed" in r.err and "damaged" not in r.err
    assert git(origin, "for-each-ref", CACHE_REF) == ""


def verdict(repo: Repo, fmt: int, more: str = "") -> str:
    """A verdict note on HEAD as the version of format `fmt` writes it."""
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    return (f'{{"tree":"{tree}","checked":6,"errors":1,"warnings":0,"clean":5,"tool":"vivary-git",'
            f'"format":{fmt}{more}}}')


def notes_commits(path: Path) -> int:
    return int(git(path, "rev-list", "--count", "refs/notes/vivary"))


def test_a_verdict_note_is_written_once_per_commit_and_a_newer_versions_is_left(shared: Repo, cli: Any) -> None:
    shared.git("config", "vivary.notes", "true")
    for _ in range(3):
        cli("check", "--rev", "HEAD", cwd=shared.path)
    assert notes_commits(shared.path) == 1  # one commit of the notes ref per run made it grow without bound
    newer = verdict(shared, FORMAT_VERSION + 1, ',"rules":"x"')  # a field this version's verdict does not have
    shared.git("notes", "--ref", "vivary", "add", "-f", "-m", newer, "HEAD")
    cli("check", "--rev", "HEAD", cwd=shared.path)
    assert shared.git("notes", "--ref", "vivary", "show", "HEAD").strip() == newer
    assert notes_commits(shared.path) == 2


def test_an_adopted_verdict_keeps_the_format_it_was_written_with(shared: Repo, tmp_path: Path, cli: Any) -> None:
    origin = bare(tmp_path, "origin.git")
    shared.git("remote", "add", "origin", str(origin))
    shared.git("push", "-q", "origin", "main")
    older = verdict(shared, FORMAT_VERSION - 1)
    shared.git("notes", "--ref", "vivary", "add", "-m", older, "HEAD")
    shared.git("push", "-q", "origin", "refs/notes/vivary")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", str(origin), str(me))
    git(me, "config", "vivary.cacheTrust", "any")
    assert cli("sync", "fetch", cwd=me).code == 0
    noted = msgspec.json.decode(git(me, "notes", "--ref", "vivary", "show", "HEAD"))
    assert noted["format"] == FORMAT_VERSION - 1  # it was said to be this version's


def test_an_upgrade_keeps_the_local_caches_of_two_other_formats_not_of_every_one(repo: Repo, cli: Any) -> None:
    import os

    repo.commit("notes", NOTES)
    local = repo.path / ".git" / "vivary"
    for age, fmt in enumerate(range(FORMAT_VERSION - 1, FORMAT_VERSION - 5, -1)):  # the older, the longer unused
        folder = local / f"parse-v{fmt}"
        folder.mkdir(parents=True)
        (folder / "seg-1.msgpack").write_bytes(b"")
        os.utime(folder, (1_700_000_000 - age * 86400, 1_700_000_000 - age * 86400))
    (local / "graph-v1").mkdir()  # another kind: counted on its own
    for _ in range(2):
        assert cli("check", cwd=repo.path).code == 1
        kept = sorted(p.name for p in local.iterdir() if p.name.startswith("parse-v"))
        assert kept == sorted(f"parse-v{f}" for f in (FORMAT_VERSION, FORMAT_VERSION - 1, FORMAT_VERSION - 2))
    assert (local / "graph-v1").is_dir()


def test_the_writer_a_cache_names_is_escaped_where_it_is_shown(shared: Repo, tmp_path: Path, cli: Any) -> None:
    cli("check", "--rev", "HEAD", cwd=shared.path)
    as_written_by(shared.path, {**NEWER, "writer": "ci\n::error file=x::forged\x1b[2J"})
    origin = bare(tmp_path, "origin.git")
    shared.git("remote", "add", "origin", str(origin))
    shared.git("push", "-q", "origin", "main", f"{CACHE_REF}:{CACHE_REF}")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", str(origin), str(me))
    said = [cli("cache", "status", cwd=shared.path), cli("cache", "verify", cwd=shared.path),
            cli("cache", "gc", cwd=shared.path), cli("doctor", cwd=shared.path), cli("sync", "push", cwd=shared.path),
            cli("sync", "fetch", cwd=me)]
    for r in said:
        for line in (r.out + r.err).splitlines():
            assert not line.startswith("::") and "\x1b" not in line, line
    assert "forged" in said[0].out
