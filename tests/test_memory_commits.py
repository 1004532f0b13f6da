"""The commit a memory write makes (memory/writes/commits.py), read back with Git: its message and trailers,
its parent, its tree, the branch it lands on and the reflog line, and each refusal word for word.

Every memory write (remember, update, link, edit, retire, forget) goes through `commit_note`, a move and a
dream's resolution through `commit_changes`; these tests call them with plans of their own, as those writes
do, on real repositories, and read what Git recorded.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, killed_at

from vivary_git.errors import GitError, RefusedError
from vivary_git.git import Repo as GitRepo
from vivary_git.memory.writes import commits
from vivary_git.memory.writes.commits import Base, Change, ChangesResult, CommitResult, Planned

EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
CHANGED = ("{} has changes of yours that are not committed (staged or in the working tree); commit or stash them "
           "first, then try again: a memory write never overwrites your work")


def _seed(repo: Repo) -> str:
    return repo.commit("init", {"notes/deploy.md": "# Deploy\n", "memories/old.md": "---\ntype: memory\n---\n# Old\n",
                                "README.md": "# Home\n"})


def _write(repo: Repo, path: str, content: bytes | None, *, ref: str = "refs/heads/main", checked_out: bool = True,
           text: str = "vivary: add {}\n\nVivary-Op: add\n",
           plan: Callable[[Base], Planned | None] | None = None) -> CommitResult | None:
    """`commit_note` as a memory write calls it: the message made from what was planned (`{}`: its path); a
    removal with `remove`, a write without it (its default)."""
    return commits.commit_note(GitRepo(repo.path), ref=ref, checked_out=checked_out,
                               plan=plan or (lambda base: Planned(path, content or b"")),
                               make_message=lambda planned: text.replace("{}", planned.path),
                               **({"remove": True} if content is None else {}))


def _trailers(repo: Repo, rev: str = "HEAD") -> str:
    msg = repo.git("log", "-1", "--format=%B", rev)
    return subprocess.run(["git", "interpret-trailers", "--parse"], input=msg, capture_output=True, text=True,
                          check=True).stdout


def _move(repo: Repo, ref: str = "refs/heads/main") -> str:
    """The branch moved by someone else (another tool, the user): one more commit on it, the same tree."""
    tip = repo.git("rev-parse", ref).strip()
    moved = repo.git("commit-tree", f"{tip}^{{tree}}", "-p", tip, "-m", "someone else").strip()
    repo.git("update-ref", ref, moved, tip)
    return moved


# --- the message ------------------------------------------------------------------------------------------


def test_one_line_flattens_and_bounds_what_an_agent_chose() -> None:
    assert commits.one_line("a\nb\r\x00c\u2028d\x7f \u0085e\u2029f\tg", 100) == "a b c d e f g"
    assert commits.one_line("  many   spaces\n\n  here  ", 100) == "many spaces here"
    assert commits.one_line("x" * 72, 72) == "x" * 72  # at the bound: kept whole
    assert commits.one_line("x" * 73, 72) == "x" * 71 + "…"  # over it: cut, and the cut shown
    assert commits.one_line("abc def", 5) == "abc…"  # no space left before the mark
    assert commits.one_line("abcd", 2) == "a…"
    assert commits.one_line("abcd", 1) == "a…"  # never nothing but the mark


def test_the_message_is_a_bounded_subject_then_one_line_trailers() -> None:
    assert commits.message("add", "memories/x", "a summary", "cli") == (
        "vivary: add memories/x: a summary\n\nVivary-Op: add\nVivary-Node: memories/x\nVivary-Source: cli\n")
    assert commits.message("forget", "memories/x", "", "agent") == (
        "vivary: forget memories/x\n\nVivary-Op: forget\nVivary-Node: memories/x\nVivary-Source: agent\n")
    assert commits.message("move", "ops/new", "from ops/old", "mcp",
                           extra=(("Vivary-From", "ops/old"), ("Vivary-Reason", "two\nlines"))) == (
        "vivary: move ops/new: from ops/old\n\nVivary-Op: move\nVivary-Node: ops/new\nVivary-Source: mcp\n"
        "Vivary-From: ops/old\nVivary-Reason: two lines\n")
    long = commits.message("o" * 17, "n" * 201, "s" * 80, "c" * 17, extra=(("Vivary-Reason", "r" * 201),))
    subject, blank, op, node, source, reason, end = long.split("\n")
    # a long id is shortened so that the summary is read too (the whole id is in the trailer)
    assert subject == "vivary: " + "o" * 15 + "… " + "n" * 27 + "…: " + "s" * 16 + "…" and len(subject) == 72
    assert (blank, end) == ("", "")
    assert op == "Vivary-Op: " + "o" * 15 + "…"
    assert node == "Vivary-Node: " + "n" * 199 + "…"
    assert source == "Vivary-Source: " + "c" * 15 + "…"
    assert reason == "Vivary-Reason: " + "r" * 199 + "…"
    # at the bounds, nothing is cut
    exact = commits.message("o" * 16, "n" * 200, "", "c" * 16, extra=(("Vivary-Reason", "r" * 200),))
    assert exact.split("\n")[2:6] == ["Vivary-Op: " + "o" * 16, "Vivary-Node: " + "n" * 200,
                                      "Vivary-Source: " + "c" * 16, "Vivary-Reason: " + "r" * 200]


def test_what_git_records_is_that_message_and_no_forged_trailer(repo: Repo) -> None:
    _seed(repo)
    hostile = "evil\n\nVivary-Op: forget\nVivary-Node: USER.md\nSigned-off-by: someone"
    text = commits.message("add", "memories/x", hostile, "cli", extra=(("Vivary-Reason", hostile),))
    got = _write(repo, "memories/x.md", b"# X\n", text=text)
    assert got is not None
    assert repo.git("log", "-1", "--format=%B") == text + "\n"
    assert repo.git("log", "-1", "--format=%s").strip() == (
        "vivary: add memories/x: evil Vivary-Op: forget Vivary-Node: USER.md Sig…")
    assert _trailers(repo) == ("Vivary-Op: add\nVivary-Node: memories/x\nVivary-Source: cli\nVivary-Reason: evil "
                               "Vivary-Op: forget Vivary-Node: USER.md Signed-off-by: someone\n")
    # the reflog says what was done, on one line of at most 100 characters
    assert repo.git("reflog", "-1", "--format=%gs", "refs/heads/main").strip() == (
        "vivary: " + commits.one_line(text, 100))
    assert len(commits.one_line(text, 100)) == 100


# --- the commit: parent, tree, branch ---------------------------------------------------------------------


def test_a_memory_commit_sits_on_the_tip_and_changes_only_its_path(repo: Repo) -> None:
    head = _seed(repo)
    got = _write(repo, "memories/new/deep/x.md", b"# X\n")
    new = repo.git("rev-parse", "HEAD").strip()
    blob = repo.git("rev-parse", "HEAD:memories/new/deep/x.md").strip()
    assert got == CommitResult(commit=new, parent=head, ref="refs/heads/main", path="memories/new/deep/x.md",
                               blob=blob, checked_out=True, attempts=1)
    assert repo.git("log", "-1", "--format=%P %an <%ae>").strip() == f"{head} Test <test@example.invalid>"
    assert repo.git("diff", "--name-status", "HEAD~1", "HEAD") == "A\tmemories/new/deep/x.md\n"
    assert repo.git("ls-tree", "HEAD", "memories/new/deep/x.md").split()[:3] == ["100644", "blob", blob]
    assert repo.git("show", "HEAD:memories/new/deep/x.md") == "# X\n"
    # the user's index and work tree hold it too: nothing to commit, nothing changed
    assert repo.git("ls-files", "-s", "memories/new/deep/x.md").split()[1] == blob
    assert (repo.path / "memories/new/deep/x.md").read_bytes() == b"# X\n"
    assert repo.git("status", "--porcelain") == ""

    edited = _write(repo, "memories/old.md", b"---\ntype: memory\n---\n# Old, edited\n")
    assert edited is not None and edited.parent == new and edited.blob is not None
    assert repo.git("diff", "--name-status", "HEAD~1", "HEAD") == "M\tmemories/old.md\n"
    assert repo.git("show", "HEAD:memories/old.md") == "---\ntype: memory\n---\n# Old, edited\n"
    assert repo.git("status", "--porcelain") == ""


def test_a_removal_takes_the_path_and_any_folder_it_leaves_empty(repo: Repo) -> None:
    _seed(repo)
    repo.commit("two", {"memories/deep/down/only.md": "# Only\n"})
    got = _write(repo, "memories/deep/down/only.md", None)
    assert got is not None and got.blob is None and got.path == "memories/deep/down/only.md"
    assert repo.git("diff", "--name-status", "HEAD~1", "HEAD") == "D\tmemories/deep/down/only.md\n"
    assert repo.git("ls-tree", "--name-only", "HEAD", "memories/").split() == ["memories/old.md"]
    assert not (repo.path / "memories/deep/down/only.md").exists()
    assert repo.git("ls-files", "memories") == "memories/old.md\n"
    assert repo.git("status", "--porcelain") == ""
    # a path that is not there: the tree is left as it was
    assert _write(repo, "memories/never.md", None) is not None
    assert repo.git("rev-parse", "HEAD^{tree}") == repo.git("rev-parse", "HEAD~1^{tree}")
    # the last note of all: the empty tree
    for path in ("memories/old.md", "notes/deploy.md", "README.md"):
        _write(repo, path, None)
    assert repo.git("rev-parse", "HEAD^{tree}").strip() == EMPTY_TREE
    assert repo.git("status", "--porcelain") == ""


def test_the_first_commit_of_a_memory_branch_has_no_parent_and_leaves_head_alone(repo: Repo) -> None:
    head = _seed(repo)
    repo.write({"memories/x.md": "the user's own untracked file\n"})  # not on that branch: not the user's change
    got = _write(repo, "memories/x.md", b"# X\n", ref="refs/heads/vivary/memory", checked_out=False)
    tip = repo.git("rev-parse", "vivary/memory").strip()
    assert got == CommitResult(commit=tip, parent=None, ref="refs/heads/vivary/memory", path="memories/x.md",
                               blob=repo.git("rev-parse", "vivary/memory:memories/x.md").strip(), checked_out=False,
                               attempts=1)
    assert repo.git("log", "--format=%P", "vivary/memory") == "\n"
    assert repo.git("ls-tree", "-r", "--name-only", "vivary/memory").split() == ["memories/x.md"]
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert (repo.path / "memories/x.md").read_text() == "the user's own untracked file\n"
    assert repo.git("status", "--porcelain") == "?? memories/x.md\n"
    assert repo.git("reflog", "-1", "--format=%gs", "refs/heads/vivary/memory").strip() == (
        "vivary: vivary: add memories/x.md Vivary-Op: add")


def test_a_plan_that_changes_nothing_commits_nothing(repo: Repo) -> None:
    head = _seed(repo)
    assert _write(repo, "memories/x.md", b"", plan=lambda base: None) is None
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("reflog", "--format=%gs", "refs/heads/main").splitlines() == ["commit (initial): init"]


def test_a_branch_moved_meanwhile_is_planned_again_on_its_new_tip(repo: Repo) -> None:
    head = _seed(repo)
    seen: list[str | None] = []
    moved: list[str] = []

    def plan(base: Base) -> Planned:
        seen.append(base.commit)
        if not moved:
            moved.append(_move(repo))
        return Planned("memories/x.md", b"# X\n")

    got = _write(repo, "memories/x.md", b"", plan=plan)
    assert seen == [head, moved[0]]
    assert got is not None and got.attempts == 2 and got.parent == moved[0]
    assert repo.git("log", "-1", "--format=%P").strip() == moved[0]
    assert repo.git("log", "--format=%s").splitlines() == ["vivary: add memories/x.md", "someone else", "init"]


def test_a_branch_that_keeps_moving_is_an_error_after_64_attempts(repo: Repo) -> None:
    head = _seed(repo)
    calls: list[str | None] = []

    def plan(base: Base) -> Planned:
        calls.append(base.commit)
        _move(repo)
        return Planned("memories/x.md", b"# X\n")

    with pytest.raises(GitError) as err:
        _write(repo, "memories/x.md", b"", plan=plan)
    assert str(err.value) == ("refs/heads/main kept moving while the memory was being committed (64 attempts); "
                              "try again")
    assert len(calls) == 64 and calls[0] == head
    assert "vivary" not in repo.git("log", "--format=%s")
    assert not (repo.path / "memories/x.md").exists()


# --- the branch ---------------------------------------------------------------------------------------------


def test_the_branch_a_memory_goes_to(repo: Repo, tmp_path: Path) -> None:
    _seed(repo)
    g = GitRepo(repo.path)
    assert commits.target_ref(g, "") == ("refs/heads/main", True)
    assert commits.target_ref(g, "main") == ("refs/heads/main", True)
    assert commits.target_ref(g, "vivary/memory") == ("refs/heads/vivary/memory", False)
    for bad in ("bad..name", "with space", "ends.lock", "x@{1}"):
        with pytest.raises(RefusedError) as err:
            commits.target_ref(g, bad)
        assert str(err.value) == (f"`{bad}` is not a valid branch name; fix [memory.remember] branch in "
                                  ".vivary/memory.toml")
    repo.git("checkout", "-q", "--detach")
    detached = GitRepo(repo.path)
    with pytest.raises(RefusedError) as err:
        commits.target_ref(detached, "")
    assert str(err.value) == (
        "HEAD is detached, so there is no branch to commit this memory write to; check out a branch (`git switch "
        "NAME`), or "
        "send memories to their own branch with [memory.remember] branch = \"vivary/memory\" in .vivary/memory.toml")
    assert commits.target_ref(detached, "main") == ("refs/heads/main", False)
    # a bare repository has no work tree to bring up to date
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    assert commits.target_ref(GitRepo(bare), "") == ("refs/heads/main", False)
    assert commits.target_ref(GitRepo(bare), "main") == ("refs/heads/main", False)


# --- what is refused ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["unstaged edit", "staged edit", "deleted", "untracked new", "staged new",
                                    "dangling link"])
def test_a_path_the_user_changed_is_refused_and_nothing_is_committed(repo: Repo, change: str) -> None:
    head = _seed(repo)
    path = "memories/old.md" if change in ("unstaged edit", "staged edit", "deleted") else "memories/x.md"
    full = repo.path / path
    if change == "deleted":
        full.unlink()
    elif change == "dangling link":
        full.symlink_to("nowhere.md")
    else:
        full.write_text("the user's work\n")
    if change.startswith("staged"):
        repo.git("add", path)
    status = repo.git("status", "--porcelain")
    with pytest.raises(RefusedError) as err:
        _write(repo, path, b"# Written over\n")
    assert str(err.value) == CHANGED.format(path)
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == status
    if change == "dangling link":
        assert os.readlink(full) == "nowhere.md"
    elif change != "deleted":
        assert full.read_text() == "the user's work\n"


def test_the_same_bytes_as_committed_are_no_change_of_the_users(repo: Repo) -> None:
    _seed(repo)
    (repo.path / "memories/old.md").write_text("---\ntype: memory\n---\n# Old\n")  # rewritten, byte for byte
    assert _write(repo, "memories/old.md", b"# New\n") is not None
    assert repo.git("status", "--porcelain") == ""


def test_which_paths_are_taken(repo: Repo) -> None:
    head = _seed(repo)
    repo.write({"staged.md": "s\n", "untracked.md": "u\n"})
    repo.git("add", "staged.md")
    (repo.path / "link.md").symlink_to("nowhere.md")
    g = GitRepo(repo.path)
    mine = Base(g, head, True)
    assert [mine.taken(p) for p in ("memories/old.md", "staged.md", "untracked.md", "link.md", "free.md")] == [
        True, True, True, True, False]
    other = Base(g, head, False)  # a branch not checked out: only its own tree counts
    assert [other.taken(p) for p in ("memories/old.md", "staged.md", "untracked.md", "link.md", "free.md")] == [
        True, False, False, False, False]
    assert Base(g, None, False).taken("memories/old.md") is False


def test_what_a_base_reads_is_a_note_within_the_size_limit(repo: Repo) -> None:
    repo.write({"big.md": b"x" * (8 * 1024 * 1024 + 1), "run.md": "#!/bin/sh\n", "limit.md": b"y" * (8 * 1024 * 1024)})
    (repo.path / "run.md").chmod(0o755)
    (repo.path / "link.md").symlink_to("run.md")
    head = repo.commit("init", {"notes/a.md": "# A\n"})
    base = Base(GitRepo(repo.path), head, True)
    assert base.read("notes/a.md") == b"# A\n"
    assert base.read("run.md") == b"#!/bin/sh\n"
    assert base.read("limit.md") == b"y" * (8 * 1024 * 1024)
    assert base.read("link.md") is None  # a symbolic link is no note
    assert base.read("notes") is None and base.read("gone.md") is None
    with pytest.raises(RefusedError) as err:
        base.read("big.md")
    assert str(err.value) == ("big.md: is 8,388,609 bytes, over the 8 MiB limit for a note, so it is not edited; "
                              "split it, or add it to `exclude` (in tropo.toml; in a vault, .vivary/graph.toml)")


@pytest.mark.parametrize(("file", "path", "under"), [
    ("memories", "memories/x.md", "memories/x.md"),
    ("memories/ops", "memories/ops/deep/x.md", "ops/deep/x.md"),
])
def test_a_file_where_the_path_needs_a_folder_is_refused(repo: Repo, file: str, path: str, under: str) -> None:
    repo.commit("init", {file: "a file\n", "README.md": "# Home\n"})
    head = repo.git("rev-parse", "HEAD")
    with pytest.raises(RefusedError) as err:
        _write(repo, path, b"# X\n")
    name = under.split("/")[0]
    assert str(err.value) == f"cannot write under {under}: `{name}` is a file in the tree, not a folder"
    assert repo.git("rev-parse", "HEAD") == head


@pytest.mark.parametrize("link", ["memories", "memories/deep"])
def test_a_symbolic_link_on_the_way_is_never_written_through(repo: Repo, tmp_path: Path, link: str) -> None:
    _seed(repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo.path / "memories/old.md").unlink()
    repo.git("rm", "-q", "--cached", "memories/old.md")
    repo.git("commit", "-qm", "no memories")
    (repo.path / "memories").rmdir()
    if link == "memories/deep":
        (repo.path / "memories").mkdir()
    (repo.path / link).symlink_to(outside, target_is_directory=True)
    head = repo.git("rev-parse", "HEAD")
    path = "memories/deep/x.md" if link == "memories/deep" else "memories/x.md"
    with pytest.raises(RefusedError) as err:
        _write(repo, path, b"# X\n")
    assert str(err.value) == (f"{link} is a symbolic link; memories are never written through one: replace it with "
                              "a folder")
    with pytest.raises(RefusedError) as err:
        _changes(repo, [Change("notes/other.md", b"# Other\n"), Change(path, b"# X\n")])
    assert str(err.value).startswith(f"{link} is a symbolic link")
    # refused before anything is committed: the branch, the work tree and the outside folder are as they were
    assert repo.git("rev-parse", "HEAD") == head
    assert list(outside.iterdir()) == [] and not (repo.path / "notes/other.md").exists()


def test_a_commit_git_cannot_make_is_an_error_in_gits_words(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    head = _seed(repo)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "")
    with pytest.raises(GitError) as err:
        _write(repo, "memories/x.md", b"# X\n")
    assert str(err.value) == (
        "could not commit the memory: `git commit-tree` failed: fatal: empty ident name (for <test@example.invalid>) "
        "not allowed; a memory commit is yours, made with your Git identity, as `git commit` would: set it with `git "
        "config user.name \"Your Name\"` and `git config user.email you@example.com` (add --global for every "
        "repository; GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL and the GIT_COMMITTER_ pair, when set, win over them), then "
        "write it again; nothing was committed")
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_a_commit_git_cannot_sign_is_refused_with_the_fix(repo: Repo, cli: Any) -> None:
    """Word for word (tests/test_trust_writes.py tries each way signing fails): the setting, Git's reason,
    that nothing was committed, and the fix."""
    head = _seed(repo)
    for key, value in (("commit.gpgSign", "true"), ("gpg.format", "openpgp"), ("gpg.program", "/bin/false")):
        repo.git("config", key, value)
    r = cli("remember", "Never unsigned", cwd=repo.path)
    assert (r.code, r.out) == (3, ""), r.out + r.err
    assert r.err == (
        "git vivary remember: commit.gpgSign is true in your Git config, so memory commits are signed, but Git could "
        "not sign this one: error: gpg failed to sign the data; nothing was committed. Fix user.signingKey (and "
        "gpg.format, gpg.program or gpg.ssh.program) until `git commit --allow-empty -S -m test` works, or set "
        "commit.gpgSign false for this repository\n")
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == ""


# --- several paths in one commit (a move with the links it rewrites, a dream's resolution) ----------------------


def _changes(repo: Repo, changes: list[Change], *, ref: str = "refs/heads/main", checked_out: bool = True,
             plan: Callable[[Base], list[Change] | None] | None = None) -> ChangesResult | None:
    return commits.commit_changes(
        GitRepo(repo.path), ref=ref, checked_out=checked_out, plan=plan or (lambda base: changes),
        make_message=lambda planned: "vivary: move " + ", ".join(c.path for c in planned) + "\n\nVivary-Op: move\n")


def test_several_paths_are_one_commit_on_the_tip(repo: Repo) -> None:
    head = _seed(repo)
    got = _changes(repo, [Change("memories/old.md", None), Change("memories/ops/new.md", b"# New\n"),
                          Change("notes/deploy.md", b"# Deploy, linked\n"), Change("memories/empty.md", b"")])
    new = repo.git("rev-parse", "HEAD").strip()
    blobs = {p: repo.git("rev-parse", f"HEAD:{p}").strip()
             for p in ("memories/ops/new.md", "notes/deploy.md", "memories/empty.md")}
    assert got == ChangesResult(commit=new, parent=head, ref="refs/heads/main",
                                blobs={"memories/old.md": None, **blobs}, checked_out=True, attempts=1)
    assert repo.git("log", "-1", "--format=%P").strip() == head
    assert repo.git("diff", "--no-renames", "--name-status", "HEAD~1", "HEAD") == (
        "A\tmemories/empty.md\nD\tmemories/old.md\nA\tmemories/ops/new.md\nM\tnotes/deploy.md\n")
    text = "vivary: move memories/old.md, memories/ops/new.md, notes/deploy.md, memories/empty.md\n\nVivary-Op: move\n"
    assert repo.git("log", "-1", "--format=%B") == text + "\n"
    reflog = repo.git("reflog", "-1", "--format=%gs", "refs/heads/main").strip()
    assert reflog == "vivary: " + commits.one_line(text, 100)
    # the user's index and work tree hold the commit: nothing to commit, nothing changed
    assert not (repo.path / "memories/old.md").exists()
    assert (repo.path / "memories/ops/new.md").read_bytes() == b"# New\n"
    assert (repo.path / "notes/deploy.md").read_bytes() == b"# Deploy, linked\n"
    assert (repo.path / "memories/empty.md").read_bytes() == b""
    assert repo.git("status", "--porcelain") == ""
    # every path removed: the empty tree
    gone = _changes(repo, [Change(p, None) for p in ("memories/ops/new.md", "notes/deploy.md", "memories/empty.md",
                                                     "README.md")])
    assert gone is not None and set(gone.blobs.values()) == {None}
    assert repo.git("rev-parse", "HEAD^{tree}").strip() == EMPTY_TREE
    assert repo.git("status", "--porcelain") == ""


def test_several_paths_refused_when_the_user_changed_one_and_nothing_is_committed(repo: Repo) -> None:
    head = _seed(repo)
    (repo.path / "notes/deploy.md").write_text("the user's work\n")
    for plan in ([Change("memories/ops/new.md", b"# New\n"), Change("notes/deploy.md", b"# Linked\n")],
                 [Change("notes/deploy.md", None)]):
        with pytest.raises(RefusedError) as err:
            _changes(repo, plan)
        assert str(err.value) == CHANGED.format("notes/deploy.md")
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == " M notes/deploy.md\n"
    assert not (repo.path / "memories/ops").exists()
    assert _changes(repo, [], plan=lambda base: []) is None
    assert _changes(repo, [], plan=lambda base: None) is None
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_several_paths_on_a_branch_not_checked_out_leave_the_work_tree_alone(repo: Repo) -> None:
    head = _seed(repo)
    (repo.path / "notes/deploy.md").write_text("the user's work\n")  # not on that branch: not the user's change
    got = _changes(repo, [Change("notes/deploy.md", b"# Linked\n"), Change("memories/x.md", b"# X\n")],
                   ref="refs/heads/vivary/memory", checked_out=False)
    assert got is not None and (got.parent, got.checked_out, got.attempts) == (None, False, 1)
    assert repo.git("ls-tree", "-r", "--name-only", "vivary/memory").split() == ["memories/x.md", "notes/deploy.md"]
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == " M notes/deploy.md\n"
    assert not (repo.path / "memories/x.md").exists()


def test_several_paths_are_planned_again_when_the_branch_moved(repo: Repo) -> None:
    head = _seed(repo)
    seen: list[str | None] = []
    moved: list[str] = []

    def plan(base: Base) -> list[Change]:
        seen.append(base.commit)
        if not moved:
            moved.append(_move(repo))
        return [Change("memories/x.md", b"# X\n")]

    got = _changes(repo, [], plan=plan)
    assert seen == [head, moved[0]]
    assert got is not None and got.attempts == 2 and got.parent == moved[0]
    assert repo.git("log", "--format=%s").splitlines() == ["vivary: move memories/x.md", "someone else", "init"]

    calls: list[str | None] = []

    def always(base: Base) -> list[Change]:
        calls.append(base.commit)
        _move(repo)
        return [Change("memories/y.md", b"# Y\n")]

    with pytest.raises(GitError) as err:
        _changes(repo, [], plan=always)
    assert str(err.value) == ("refs/heads/main kept moving while the memory change was being committed (64 attempts); "
                              "try again")
    assert len(calls) == 64
    assert not (repo.path / "memories/y.md").exists()


@pytest.mark.parametrize("left", ["refs/heads/main.lock", "HEAD.lock"])
def test_a_lock_file_a_killed_git_left_by_the_branch_is_named_with_its_fix(repo: Repo, cli: Any, left: str) -> None:
    """A `git commit` killed while it moved the branch leaves Git's lock file beside the branch (or HEAD, which Git
    locks too for the checked-out branch), and every move fails until someone removes it. A memory write tried 64
    times and said the branch "kept moving; try again", which never helped: it now names the file and the fix, and
    the memory goes in once it is removed."""
    head = _seed(repo)
    lock = repo.path / ".git" / left
    lock.write_bytes(b"")
    got = cli("remember", "The mail room closes at 16:45 on Fridays.", cwd=repo.path)
    assert got.code == 2
    name = left.removesuffix(".lock")
    assert got.err == (f"git vivary remember: the memory was not committed: {name} is locked: {lock.resolve()} is "
                       "there (a Git command moving it now, or one killed while it did, which leaves it behind); when "
                       "no Git command is running in this repository, remove that file and try again\n")
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == ""
    assert not (repo.path / ".git" / "vivary-pending-sync.msgpack").exists()
    lock.unlink()
    assert cli("remember", "The mail room closes at 16:45 on Fridays.", cwd=repo.path).code == 0
    assert repo.git("status", "--porcelain") == ""
    assert (repo.path / "memories/the-mail-room-closes-at-16-45-on-fridays.md").is_file()


def test_a_process_stopped_before_the_branch_moves_leaves_nothing_half_written(repo: Repo) -> None:
    """`VIVARY_TEST_PAUSE=before-ref` stops a several-path commit after its commit object is made and before the
    branch is moved: killed there, the branch, the index and the work tree are as they were."""
    head = _seed(repo)
    script = ("from pathlib import Path\n"
              "from vivary_git.git import Repo\n"
              "from vivary_git.memory.writes import commits\n"
              "commits.commit_changes(Repo(Path('.')), ref='refs/heads/main', checked_out=True,\n"
              "    plan=lambda base: [commits.Change('memories/x.md', b'# X\\n')],\n"
              "    make_message=lambda c: 'vivary: x')\n")
    proc = subprocess.Popen([sys.executable, "-c", script], cwd=repo.path, stderr=subprocess.PIPE,
                            env=dict(os.environ, VIVARY_TEST_PAUSE="before-ref"))
    try:
        assert proc.stderr is not None
        assert proc.stderr.readline() == b"vivary: paused at before-ref\n"
    finally:
        proc.kill()
        proc.wait()
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == ""
    assert not (repo.path / "memories/x.md").exists()


def test_several_paths_are_signed_as_the_users_commits_are_or_refused(repo: Repo) -> None:
    head = _seed(repo)
    for key, value in (("commit.gpgSign", "true"), ("gpg.format", "openpgp"), ("gpg.program", "/bin/false")):
        repo.git("config", key, value)
    with pytest.raises(RefusedError) as err:
        _changes(repo, [Change("memories/x.md", b"# X\n")])
    assert str(err.value).startswith("commit.gpgSign is true in your Git config, so memory commits are signed, but "
                                     "Git could not sign this one: error: gpg failed to sign the data; nothing was "
                                     "committed."), err.value
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert not (repo.path / "memories/x.md").exists()


def test_a_memory_committed_by_a_killed_writer_reaches_the_index_before_the_users_next_commit(repo: Repo,
                                                                                                   cli: Any) -> None:
    """Killed after the branch moved and before the path reached the user's index: HEAD holds the memory and the
    index does not, so `git status` showed it staged for deletion and the user's next commit deleted it. The path
    was written down first: the next memory write puts it in, and so does the MCP server as it starts."""
    repo.commit("init", {"notes/a.md": "# A\n"})
    killed_at(repo.path, ["remember", "The mail room closes at 16:45 on Fridays."], "before-index")
    path = "memories/the-mail-room-closes-at-16-45-on-fridays.md"
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == [path]  # committed
    assert repo.git("status", "--porcelain").splitlines() == [f"D  {path}"]  # and not in the index yet
    assert cli("remember", "Parcels are kept for two weeks.", cwd=repo.path).code == 0
    assert repo.git("status", "--porcelain") == ""  # the next write put it in
    assert (repo.path / path).read_text().endswith("# The mail room closes at 16:45 on Fridays.\n")

    repo.write({"notes/mine.md": "# Mine\n"})  # the user's own work, staged: left as it is
    repo.git("add", "notes/mine.md")
    killed_at(repo.path, ["remember", "The bike shed key hangs by the door."], "before-index")
    gone = "memories/the-bike-shed-key-hangs-by-the-door.md"
    assert sorted(repo.git("status", "--porcelain").splitlines()) == ["A  notes/mine.md", f"D  {gone}"]
    from vivary_git.mcp.service import MemoryService

    MemoryService(repo.path).close()  # a server starting
    assert repo.git("status", "--porcelain").splitlines() == ["A  notes/mine.md"]
    repo.git("commit", "-qm", "mine")
    assert repo.git("show", "--name-status", "--format=", "HEAD").split() == ["A", "notes/mine.md"]
    assert (repo.path / gone).is_file()


def test_doctor_names_a_memory_a_killed_writer_left_out_of_the_index(repo: Repo, cli: Any) -> None:
    """Between a kill after the branch moved and the next memory write, the user's `git commit` deletes the memory,
    and nothing said so: `doctor` (what one runs after a crash) reported nothing. It now names the path, as an error,
    with the Git command that puts it in; once it is in, nothing is said and the user's commit keeps it."""
    repo.commit("init", {"notes/a.md": "# A\n"})
    assert not [p for p in cli("doctor", "--json", cwd=repo.path).json()["problems"] if p["area"] == "memory"]
    killed_at(repo.path, ["remember", "The mail room closes at 16:45 on Fridays."], "before-index")
    path = "memories/the-mail-room-closes-at-16-45-on-fridays.md"
    assert repo.git("status", "--porcelain").splitlines() == [f"D  {path}"]
    got = cli("doctor", "--json", cwd=repo.path)
    assert got.code == 1
    assert [p for p in got.json()["problems"] if p["area"] == "memory"] == [{
        "area": "memory", "level": "error",
        "message": f"{path}: committed on refs/heads/main by a memory write that was stopped before it reached your "
                   "index, so your next `git commit` would undo it",
        "fix": f"git restore --source=HEAD --staged --worktree -- {path}   # or any memory write puts it in"}]
    assert repo.git("status", "--porcelain").splitlines() == [f"D  {path}"]  # doctor changed nothing
    repo.git("restore", "--source=HEAD", "--staged", "--worktree", "--", path)
    assert not [p for p in cli("doctor", "--json", cwd=repo.path).json()["problems"] if p["area"] == "memory"]
    repo.write({"notes/mine.md": "# Mine\n"})
    repo.git("add", "notes/mine.md")
    repo.git("commit", "-qm", "mine")
    assert repo.git("show", "--name-status", "--format=", "HEAD").split() == ["A", "notes/mine.md"]
    assert (repo.path / path).is_file()


def test_a_left_over_path_the_user_changed_since_stays_theirs(repo: Repo, cli: Any) -> None:
    """What the user did to the path after the kill (here: staged the deletion on purpose and wrote a file of
    their own there) is theirs: the record is dropped, nothing of theirs is overwritten."""
    repo.commit("init", {"notes/a.md": "# A\n"})
    killed_at(repo.path, ["remember", "The mail room closes at 16:45 on Fridays."], "before-index")
    path = "memories/the-mail-room-closes-at-16-45-on-fridays.md"
    (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
    (repo.path / path).write_text("my own words\n")
    assert commits.recover(GitRepo(repo.path)) == []
    assert (repo.path / path).read_text() == "my own words\n"
    assert not (GitRepo(repo.path).git_dir / "vivary-pending-sync.msgpack").exists()


def test_a_commit_of_the_users_in_progress_is_waited_for_not_broken(repo: Repo) -> None:
    """`git commit` holds `index.lock` while its editor is open. A memory write that moved the branch meanwhile made
    that commit fail ("cannot lock ref 'HEAD'") and lost its message: the write now waits for the lock, and when
    the user's commit lands it is planned again on top of it."""
    import threading

    _seed(repo)
    lock = repo.path / ".git" / "index.lock"
    lock.write_bytes(b"")  # the user's `git commit -a`, editor open
    landed: list[str] = []

    def user_commits() -> None:
        time.sleep(1.0)
        landed.append(_move(repo))  # their commit lands on the branch...
        lock.unlink()  # ...and Git lets the index go

    user = threading.Thread(target=user_commits)
    user.start()
    got = _write(repo, "memories/x.md", b"# X\n")
    user.join()
    assert got is not None and got.parent == landed[0] and got.attempts == 2
    assert repo.git("log", "--format=%s").splitlines() == ["vivary: add memories/x.md", "someone else", "init"]
    assert repo.git("status", "--porcelain") == ""


def test_a_write_kept_out_of_the_index_by_a_held_lock_is_a_success_with_a_warning(
        repo: Repo, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Another program holding `index.lock` past the wait (a stale lock of a crashed git) kept a committed memory
    out of the user's index, and the write answered as a failure: an agent told so writes the memory again. Now
    the answer is the commit, with a warning saying how it is put right; the next write puts it in."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import Client
    from test_mcp import _data, _run

    from vivary_git.main import main
    from vivary_git.mcp.server import build_server
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    monkeypatch.setattr(commits, "_INDEX_WAIT", 0.2)  # (30 s in use: how long `git commit`'s editor may stay open)
    lock = repo.path / ".git" / "index.lock"
    lock.write_bytes(b"")

    async def session() -> Any:
        async with Client(build_server(MemoryService(repo.path))) as client:
            return _data(await client.call_tool("add", {"text": "The boiler is serviced every October."}))

    added = _run(session)
    assert added["ok"] and added["commit"] == repo.git("rev-parse", "HEAD").strip()
    assert "was committed, but your index could not be updated" in added["warning"], added
    assert "index.lock" in added["warning"]
    assert main(["remember", "The gate code changed to 4471 in May.", "-C", str(repo.path)]) == 0
    err = capsys.readouterr().err
    assert "git vivary remember: warning: the memory was committed, but your index" in err, err
    lock.unlink()
    assert main(["remember", "The recycling goes out on Thursday nights.", "-C", str(repo.path)]) == 0
    assert repo.git("status", "--porcelain") == ""  # all three memories in the index and committed
    assert len(repo.git("log", "--format=%s").splitlines()) == 4


def _objects(repo: Repo) -> tuple[int, int]:
    """(loose objects, packs), as `git count-objects -v` counts them."""
    counts = dict(line.split(": ") for line in repo.git("count-objects", "-v").splitlines())
    return int(counts["count"]), int(counts["packs"])


def _two_packs(repo: Repo) -> None:
    """A repository one pack over `gc.autoPackLimit`, where `git gc --auto` packs everything into one (in the
    foreground: `gc.autoDetach` false), as `git commit` would have it done."""
    _seed(repo)
    repo.git("repack", "-d", "-q")
    repo.commit("more", {"notes/more.md": "# More\n"})
    repo.git("repack", "-d", "-q")
    for key, value in (("gc.auto", "6700"), ("gc.autoPackLimit", "1"), ("gc.autoDetach", "false")):
        repo.git("config", key, value)
    assert _objects(repo) == (0, 2)


@pytest.mark.parametrize("write", ["one note", "several paths"])
def test_a_memory_write_runs_gits_automatic_housekeeping_as_git_commit_does(repo: Repo, write: str) -> None:
    """Memory commits are made with plumbing, which never runs `git gc --auto`: an MCP server writing all day
    left thousands of loose objects that nothing packed. Each write now ends as `git commit` does, with
    `git maintenance run --auto`: here over the pack limit, so everything, the memory too, is in one pack."""
    _two_packs(repo)
    if write == "one note":
        got: Any = _write(repo, "memories/new.md", b"# New\n")
    else:
        got = _changes(repo, [Change("memories/new.md", b"# New\n"), Change("memories/old.md", None)])
    assert got is not None and got.commit == repo.git("rev-parse", "HEAD").strip()
    assert _objects(repo)[1] == 1
    (idx,) = (repo.path / ".git/objects/pack").glob("*.idx")
    with idx.open("rb") as fh:
        listed = subprocess.run(["git", "show-index"], stdin=fh, capture_output=True, text=True, check=True).stdout
    packed = {line.split()[1] for line in listed.splitlines()}
    reachable = {line.split()[0] for line in repo.git("rev-list", "--objects", "--all").splitlines()}
    assert got.commit in packed and reachable <= packed  # left loose (several paths): trees between two paths
    assert repo.git("fsck", "--no-dangling", "--no-progress") == ""
    assert repo.git("status", "--porcelain") == ""


def test_maintenance_auto_false_keeps_the_housekeeping_off(repo: Repo) -> None:
    """`maintenance.auto = false` turns it off for `git commit`, and for memory writes as well."""
    _two_packs(repo)
    repo.git("config", "maintenance.auto", "false")
    assert _write(repo, "memories/new.md", b"# New\n") is not None
    loose, packs = _objects(repo)
    assert packs == 2 and loose >= 3  # the memory's blob, tree(s) and commit, left loose as Git would leave them
