"""Memory writes in the states Git is really in: a rebase or bisect under way, a memory branch another work tree
has checked out or is rebasing. A write refuses what a commit of its own would break, and says what to do."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import Repo

MEMORY_ON_MAIN = "[memory.remember]\nbranch = \"main\"\n"


def _seed(repo: Repo) -> str:
    repo.commit("init", {"notes/deploy.md": "# Deploy\n\nHow we deploy.\n", "README.md": "# Home\n"})
    repo.commit("second", {"README.md": "# Home\n\nMore.\n"})
    return repo.commit("third", {"notes/deploy.md": "# Deploy\n\nHow we deploy, on Tuesdays.\n"})


def _stop_rebase_at_edit(repo: Repo) -> None:
    subprocess.run(["git", "rebase", "-q", "-i", "HEAD~2"], cwd=repo.path, check=True, capture_output=True,
                   env={**os.environ, "GIT_SEQUENCE_EDITOR": "sed -i 1s/pick/edit/"})


def test_a_rebase_or_bisect_under_way_is_named_with_its_own_way_out(repo: Repo, cli: Any) -> None:
    """HEAD detached by a rebase or a bisect: `git switch` is no way out (Git refuses it while rebasing), finishing
    the operation is."""
    _seed(repo)
    _stop_rebase_at_edit(repo)
    r = cli("remember", "The coffee machine is on floor three.", cwd=repo.path)
    assert (r.code, r.out) == (3, "")
    assert r.err == (
        "git vivary remember: a rebase of main is in progress, so HEAD is detached and there is no branch to add "
        "this memory to; finish it (`git rebase --continue`, or `git rebase --abort`) and write it again, or send "
        "memories to their own branch with [memory.remember] branch = \"vivary/memory\" in .vivary/memory.toml\n")
    repo.git("rebase", "--abort")

    repo.git("bisect", "start", "HEAD", "HEAD~2")
    r = cli("remember", "The coffee machine is on floor three.", cwd=repo.path)
    assert (r.code, r.out) == (3, "")
    assert r.err == (
        "git vivary remember: a bisect of main is in progress, so HEAD is detached and there is no branch to add "
        "this memory to; end it (`git bisect reset`) and write it again, or send memories to their own branch with "
        "[memory.remember] branch = \"vivary/memory\" in .vivary/memory.toml\n")
    repo.git("bisect", "reset")
    assert repo.git("log", "--format=%s", "main") == "third\nsecond\ninit\n"


def test_a_detached_head_refusal_names_the_write_being_made(repo: Repo, cli: Any) -> None:
    """`move`, `retire`, `retire --delete` and `edit` said there was "no branch to add this memory to"."""
    repo.commit("memory", {"memories/deploy-days.md": "---\ntype: memory\n---\n# Deploy days\n\nTuesdays.\n"})
    _seed(repo)
    writes = {("move", "memories/deploy-days", "memories/deploy-weekdays"): "commit this move to",
              ("retire", "memories/deploy-days", "--reason", "stale"): "commit this retirement to",
              ("retire", "memories/deploy-days", "--reason", "stale", "--delete"): "delete this memory from",
              ("edit", "memories/deploy-days", "--append", "Not Fridays."): "commit this edit to"}
    repo.git("checkout", "-q", "--detach")
    for args, write in writes.items():
        r = cli(*args, cwd=repo.path)
        assert (r.code, r.out) == (3, "")
        assert r.err == (
            f"git vivary {args[0]}: HEAD is detached, so there is no branch to {write}; check out a branch (`git "
            "switch NAME`), or send memories to their own branch with [memory.remember] branch = \"vivary/memory\" "
            "in .vivary/memory.toml\n")
    repo.git("switch", "-q", "main")
    _stop_rebase_at_edit(repo)
    r = cli("retire", "memories/deploy-days", "--reason", "stale", cwd=repo.path)
    assert r.code == 3 and r.err.startswith(
        "git vivary retire: a rebase of main is in progress, so HEAD is detached and there is no branch to commit "
        "this retirement to; finish it"), r.err
    repo.git("rebase", "--abort")
    assert repo.git("log", "--format=%s", "main") == "third\nsecond\ninit\nmemory\n"


def test_a_memory_branch_being_rebased_is_left_to_the_rebase(repo: Repo, cli: Any) -> None:
    """Committed under a rebase of that branch, the memory would make `git rebase --continue` fail to move the branch
    (and `--abort` put the branch back without it): refused, and the rebase finishes as it would have."""
    tip = _seed(repo)
    repo.write({".vivary/memory.toml": MEMORY_ON_MAIN})  # untracked: the rebase leaves it in place
    _stop_rebase_at_edit(repo)
    r = cli("remember", "The coffee machine is on floor three.", cwd=repo.path)
    assert (r.code, r.out) == (3, ""), r.out
    assert r.err == (
        f"git vivary remember: refs/heads/main is being rebased in the work tree at {repo.path.resolve()}, and a "
        "memory committed to it now would make `git rebase --continue` fail (and `git rebase --abort` drop the "
        "memory); finish the rebase there (`git rebase --continue`, or `git rebase --abort`) and write it again, or "
        "name a branch no work tree has checked out in [memory.remember] branch in .vivary/memory.toml; nothing "
        "was committed\n")
    assert repo.git("rev-parse", "main").strip() == tip
    repo.git("rebase", "--continue")
    assert repo.git("symbolic-ref", "HEAD").strip() == "refs/heads/main"
    r = cli("remember", "The coffee machine is on floor three.", cwd=repo.path)
    assert r.code == 0, r.err
    assert repo.git("status", "--porcelain", "--untracked-files=no") == ""


def test_a_memory_branch_checked_out_in_another_work_tree_is_written_from_there(repo: Repo, cli: Any,
                                                                                tmp_path: Path) -> None:
    """The other work tree's index would lack the memory (`git status` there: deleted; its next commit deletes it),
    as `git branch -f` refuses a branch "used by worktree"."""
    tip = _seed(repo)
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "-b", "side", str(linked))
    (linked / ".vivary").mkdir()
    (linked / ".vivary" / "memory.toml").write_text(MEMORY_ON_MAIN)
    r = cli("remember", "The coffee machine is on floor three.", cwd=linked)
    assert (r.code, r.out) == (3, ""), r.out
    assert r.err == (
        f"git vivary remember: refs/heads/main is checked out in the work tree at {repo.path.resolve()}, whose index "
        "would then lack the memory (`git status` there shows it deleted, and the next commit there deletes it); "
        "write it from that work tree, or name a branch no work tree has checked out in [memory.remember] branch in "
        ".vivary/memory.toml; nothing was committed. If that folder is gone, `git worktree prune` forgets it (main "
        "is then free)\n")
    assert repo.git("rev-parse", "main").strip() == tip
    assert repo.git("status", "--porcelain") == ""

    # from the work tree that has it checked out, the memory reaches that index too
    (repo.path / ".vivary").mkdir()
    (repo.path / ".vivary" / "memory.toml").write_text(MEMORY_ON_MAIN)
    r = cli("remember", "The coffee machine is on floor three.", cwd=repo.path)
    assert r.code == 0, r.err
    assert repo.git("status", "--porcelain", "--untracked-files=no") == ""
    # and a memory branch no work tree has checked out takes memories from any of them
    (linked / ".vivary" / "memory.toml").write_text("[memory.remember]\nbranch = \"vivary/memory\"\n")
    r = cli("remember", "Tea is kept on floor two.", cwd=linked)
    assert r.code == 0, r.err
    assert repo.git("log", "--format=%s", "vivary/memory").startswith("vivary: add")


def test_a_sparse_checkout_that_leaves_the_notes_and_memories_out_is_written_to(repo: Repo, cli: Any) -> None:
    """Notes outside the cone are not on disk (Git keeps their index blobs): they are no file to refuse, and a
    memory outside it is no change of the user's. Each write is one commit, and `git status` stays clean."""
    _seed(repo)
    repo.commit("other", {"other/o.md": "# Other\n"})
    assert cli("remember", "The coffee machine is on floor three.", cwd=repo.path).code == 0
    repo.git("update-index", "-q", "--refresh")  # else Git keeps the new file, whose index entry has no stat yet
    repo.git("sparse-checkout", "set", "other")
    assert not (repo.path / "notes").exists() and not (repo.path / "memories").exists()

    r = cli("remember", "Tea is kept on floor two.", cwd=repo.path)
    assert r.code == 0, r.err
    r = cli("move", "memories/the-coffee-machine-is-on-floor-three", "coffee", cwd=repo.path)
    assert r.code == 0, r.err
    r = cli("retire", "memories/tea-is-kept-on-floor-two", "--reason", "moved out", "--delete", cwd=repo.path)
    assert r.code == 0, r.err
    assert repo.git("ls-tree", "-r", "--name-only", "HEAD", "memories") == "memories/coffee.md\n"
    assert repo.git("status", "--porcelain") == ""
    assert repo.git("log", "--format=%s", "-3") == (
        "vivary: forget memories/tea-is-kept-on-floor-two: moved out\n"
        "vivary: move memories/coffee: from memories/the-coffee-machine-is-on-fl…\n"
        "vivary: add memories/tea-is-kept-on-floor-two: Tea is kept on floor two.\n")


def test_a_repository_without_a_git_identity_is_told_how_to_set_one(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    """A memory commit is the user's, made with their identity as `git commit` would: without one, Git's own
    complaint is followed by the two commands that set it, and nothing is committed."""
    before = _seed(repo)
    for name in ("GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(name, raising=False)
    repo.git("config", "user.useConfigOnly", "true")  # no identity made up from the host name, on any machine
    r = cli("remember", "The coffee machine is on floor three.", cwd=repo.path)
    assert (r.code, r.out) == (2, ""), r.err
    assert r.err.startswith("git vivary remember: could not commit the memory: `git commit-tree` failed:"), r.err
    assert ("set it with `git config user.name \"Your Name\"` and `git config user.email you@example.com` (add "
            "--global for every repository; GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL and the GIT_COMMITTER_ pair, when set, "
            "win over them), then write it again; nothing was committed\n") in r.err, r.err
    assert repo.git("rev-parse", "HEAD").strip() == before
    assert repo.git("status", "--porcelain") == ""
