"""Verdict notes (`refs/notes/vivary`, store/notes.py) in a repository of more than one workspace: a commit's note
holds one verdict per workspace folder, kept by every run in any order and by `sync fetch`, which adopts a verdict
only when it names the tree its commit has at its folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git
from test_store import tip
from test_trust import bare

from vivary_git.config import FORMAT_VERSION
from vivary_git.refnames import NOTES_REF
from vivary_git.store.notes import MAX_LINES

TOP = {
    "tropo.toml": TROPO,
    "decisions/d1.md": "---\nstatus: accepted\ndate: 2026-01-02\n---\n# Use Git\n",
    "decisions/bad.md": "---\nstatus: maybe\ndate: 2026-01-03\n---\n# Bad status\n",
    "modules/m1.md": "---\nstatus: live\n---\n# Module one\n",
}
SUB = {
    "sub/tropo.toml": TROPO,
    "sub/modules/s1.md": "---\nstatus: live\n---\n# Sub one\n",
    "sub/modules/s2.md": "# Sub two\n\nlinks [[nowhere]]\n",
}


@pytest.fixture
def two(repo: Repo) -> Repo:
    """A repository with a workspace at the top and one in `sub/`, verdict notes on."""
    repo.commit("workspaces", {**TOP, **SUB})
    repo.git("config", "vivary.notes", "true")
    return repo


def note(path: Path, ref: str = NOTES_REF) -> str:
    """The note on HEAD, byte for byte."""
    return git(path, "cat-file", "blob", f"{ref}:{git(path, 'rev-parse', 'HEAD').strip()}")


def noted(path: Path) -> list[tuple[str, str, int]]:
    """(folder, tree, checked) of each line of the note on HEAD, in order."""
    return [(v.get("folder", ""), v["tree"], v["checked"]) for v in map(json.loads, note(path).splitlines())]


def grows(path: Path) -> int:
    return int(git(path, "rev-list", "--count", NOTES_REF))


def line(tree: str, folder: str | None = None, checked: int = 3, fmt: int = FORMAT_VERSION) -> str:
    verdict: dict[str, Any] = {"tree": tree, "checked": checked, "errors": 0, "warnings": 0, "clean": checked,
                               "tool": "vivary-git", "format": fmt}
    if folder is not None:
        verdict["folder"] = folder
    return json.dumps(verdict, separators=(",", ":"))


def published(repo: Repo, tmp_path: Path, text: str) -> Path:
    """A clone trusting any cache, of an origin whose HEAD commit carries the note `text`."""
    repo.git("notes", "--ref", "vivary", "add", "-f", "-m", text, "HEAD")
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", str(origin), "main", NOTES_REF)
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", str(origin), str(me))
    git(me, "config", "vivary.cacheTrust", "any")
    return me


def test_two_workspaces_noting_one_commit_keep_both_verdicts_in_either_order(two: Repo, cli: Any) -> None:
    tree, sub = two.git("rev-parse", "HEAD^{tree}", "HEAD:sub").split()
    assert cli("check", "--rev", "HEAD", cwd=two.path).code == 1
    assert cli("check", "--rev", "HEAD", "--root", "sub", cwd=two.path).code == 1
    first = note(two.path)
    assert noted(two.path) == [("", tree, 5), ("sub", sub, 2)], first  # the last to run replaced the other's
    git(two.path, "update-ref", "-d", NOTES_REF)
    cli("check", "--rev", "HEAD", cwd=two.path / "sub")  # the workspace found from where it runs: its folder
    cli("check", "--rev", "HEAD", cwd=two.path)
    assert note(two.path) == first
    runs = grows(two.path)
    for where in ("sub", ".", "sub"):
        cli("check", "--rev", "HEAD", "--root", where, cwd=two.path)
    assert (note(two.path), grows(two.path)) == (first, runs)  # the notes ref grows with the commits, not the runs


def test_a_top_level_only_note_is_one_line_without_a_folder(repo: Repo, cli: Any) -> None:
    repo.commit("notes", TOP)
    repo.git("config", "vivary.notes", "true")
    report = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).json()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert note(repo.path) == (
        f'{{"tree":"{tree}","checked":{report["checked"]},"errors":{report["errors"]},'
        f'"warnings":{report["warnings"]},"clean":{report["clean"]},"tool":"vivary-git","format":{FORMAT_VERSION}}}\n')


def test_a_newer_versions_verdict_of_one_folder_is_left_and_the_others_written(two: Repo, cli: Any) -> None:
    tree, sub = two.git("rev-parse", "HEAD^{tree}", "HEAD:sub").split()
    newer = line(tree, fmt=FORMAT_VERSION + 1)[:-1] + ',"rules":"x"}'  # a field this version's verdict lacks
    two.git("notes", "--ref", "vivary", "add", "-m", newer, "HEAD")
    cli("check", "--rev", "HEAD", "--root", "sub", cwd=two.path)
    cli("check", "--rev", "HEAD", cwd=two.path)
    assert note(two.path).splitlines()[0] == newer
    assert noted(two.path)[1] == ("sub", sub, 2)


def test_a_clone_trusting_any_adopts_every_workspaces_verdict(two: Repo, tmp_path: Path, cli: Any) -> None:
    tree, sub = two.git("rev-parse", "HEAD^{tree}", "HEAD:sub").split()
    me = published(two, tmp_path, line(tree, checked=5) + "\n" + line(sub, "sub", checked=2))
    assert cli("sync", "fetch", cwd=me).code == 0
    assert noted(me) == [("", tree, 5), ("sub", sub, 2)]
    assert tip(me, NOTES_REF) != tip(me, "refs/vivary-fetch/origin/notes")  # re-encoded, never their commit


def test_ours_win_on_the_same_commit_and_folder_and_theirs_fill_the_other_folders(two: Repo, tmp_path: Path,
                                                                                  cli: Any) -> None:
    tree, sub = two.git("rev-parse", "HEAD^{tree}", "HEAD:sub").split()
    me = published(two, tmp_path, line(tree, checked=99) + "\n" + line(sub, "sub", checked=2))
    git(me, "config", "vivary.notes", "true")
    cli("check", "--rev", "HEAD", cwd=me)
    assert cli("sync", "fetch", cwd=me).code == 0
    assert noted(me) == [("", tree, 5), ("sub", sub, 2)]


def test_a_tampered_fetched_note_is_not_adopted(two: Repo, tmp_path: Path, cli: Any) -> None:
    two.commit("more", {"sub/modules/s3.md": "# Sub three\n"})
    tree, sub, blob = two.git("rev-parse", "HEAD^{tree}", "HEAD:sub", "HEAD:sub/modules/s3.md").split()
    lies = [
        line(sub, "../sub"), line(sub, "/sub"), line(sub, "./sub"), line(sub, "sub/"), line(sub, "sub\0"),
        line(tree, "sub"),  # the top's tree, not the folder's
        line(blob, "sub/modules/s3.md"),  # a file, not a folder
        line(sub, "sub/modules"),  # another folder's tree
        line(two.git("rev-parse", "HEAD~1:sub").strip(), "sub"),  # the folder's tree in another commit
        '{"tree":"' + sub + '","folder":"sub"}',  # no counts
        "not json", "",
        line(tree, checked=5),  # the one true verdict
    ]
    me = published(two, tmp_path, "\n".join(lies))
    assert cli("sync", "fetch", cwd=me).code == 0
    assert noted(me) == [("", tree, 5)]
    # A note of more lines than a verdict note holds is read no further: the true line after them is not adopted.
    git(me, "update-ref", "-d", NOTES_REF)
    two.git("notes", "--ref", "vivary", "add", "-f", "-m", "\n".join([line(sub, "../x")] * MAX_LINES
                                                                      + [line(tree)]), "HEAD")
    two.git("push", "-q", "-f", str(tmp_path / "origin.git"), NOTES_REF)
    assert cli("sync", "fetch", cwd=me).code == 0
    assert not tip(me, NOTES_REF)


def test_a_notes_lock_left_by_a_killed_writer_is_named_never_a_traceback(two: Repo, tmp_path: Path, cli: Any) -> None:
    """Git's `refs/notes/vivary.lock`, there while another writer moves the notes ref (two `sync fetch` at once) or
    left by one killed meanwhile, made libgit2 raise an `OSError` that no one caught: `check --rev` and `sync fetch`
    ended in a traceback. Now the note is not written, the lock file is named with how to clear it, the exit code is
    the run's own, and the next run after it is removed writes what was left out."""
    tree, sub = two.git("rev-parse", "HEAD^{tree}", "HEAD:sub").split()
    me = published(two, tmp_path, line(tree, checked=5) + "\n" + line(sub, "sub", checked=2))
    git(me, "config", "vivary.notes", "true")
    lock = me / ".git" / "refs" / "notes" / "vivary.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_bytes(b"")
    said = f"refs/notes/vivary is locked: {lock.resolve()} is there"
    fetched = cli("sync", "fetch", cwd=me)
    assert fetched.code == 0
    assert f"vivary: verdict notes from origin not all adopted: {said}" in fetched.err, fetched.err
    assert "remove that file and try again; the rest stay in refs/vivary-fetch/origin/notes" in fetched.err
    checked = cli("check", "--rev", "HEAD", cwd=me)
    assert checked.code == 1  # the findings', as without notes
    assert f"vivary: could not write the verdict note: {said}" in checked.err, checked.err
    assert not tip(me, NOTES_REF)
    lock.unlink()
    assert cli("sync", "fetch", cwd=me).code == 0
    assert noted(me) == [("", tree, 5), ("sub", sub, 2)]
