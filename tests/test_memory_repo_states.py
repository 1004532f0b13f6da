"""Semantic memory in the repository states people are really in: a sparse checkout, a linked work tree, a
branch switched under the index, a merge stopped on a conflict. What is indexed and recalled there is what
the same commands give in a plain clone, and privacy is decided by the rules Git applies to that tree."""

from __future__ import annotations

import importlib.util
import subprocess
from typing import Any

import pytest
from conftest import Repo

from vivary_git.memory.local.embed import embedder_status

needs_model = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="the [embed] extra (model package, onnxruntime, tokenizers, hnswlib) is not installed",
)

CANARY = "CANARYOTTERSPARSE"
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'


def _state_holds(repo: Repo, token: str) -> list[str]:
    """The files under the memory state folders that hold `token` (any case: terms are stemmed lower case)."""
    found = []
    for path in (repo.path / ".git" / "vivary" / "memory").rglob("*"):
        if path.is_file() and token.lower().encode() in path.read_bytes().lower():
            found.append(str(path))
    return found


def _force_added_under_a_gitignore(repo: Repo) -> None:
    """A memory workspace whose `research/.gitignore` ignores `hidden-*.md`, and a canary note there force-added."""
    repo.write({
        ".vivary/memory.toml": MEMORY,
        "decisions/keys.md": "# Rotate keys\n\nWe rotate the signing keys every quarter.\n",
        "research/survey.md": "# Survey\n\nOtters and beavers build near the river.\n",
        "research/.gitignore": "hidden-*.md\n",
        "research/hidden-otter.md": f"# Hidden\n\n{CANARY} otter dens by the river are secret.\n",
    })
    repo.git("add", "-A")
    repo.git("add", "-f", "research/hidden-otter.md")
    repo.git("commit", "-qm", "init")


def _indexed_without_the_hidden_note(repo: Repo, cli: Any) -> None:
    """`privacy explain`, `index --dry-run` and `index --yes` hold the force-added note back, and no state file
    holds its canary."""
    r = cli("privacy", "explain", "research/hidden-otter.md", cwd=repo.path)
    assert r.out.startswith("private"), r.out
    dry = cli("index", "--dry-run", "--json", cwd=repo.path).json()
    assert (dry["would_index"], dry["private"]) == (2, 1)
    r = cli("index", "--yes", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert (r.json()["indexed"], r.json()["private"]) == (2, 1)
    assert _state_holds(repo, CANARY) == []


def _searched_without_the_hidden_note(repo: Repo) -> None:
    """MCP `search` in every mode neither finds the force-added note nor answers with its canary."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    server = MemoryService(repo.path)
    try:
        for mode in ("hybrid", "semantic", "text"):
            answer = server.search("otter dens by the river", top_k=5, mode=mode, include_content=True)
            assert answer.mode == mode, answer.mode_reason
            assert "research/hidden-otter.md" not in [h.path for h in answer.results], mode
            assert CANARY not in repr(answer), mode
    finally:
        server.close()


@needs_model
def test_a_note_ignored_by_a_gitignore_outside_the_sparse_checkout_stays_private(repo: Repo, cli: Any) -> None:
    """A sparse checkout leaves `research/.gitignore` off the disk, but its rule still makes the force-added note
    under it private: the note's text (its index blob) must not be embedded because the rule is not on disk."""
    _force_added_under_a_gitignore(repo)
    full = cli("index", "--dry-run", "--json", cwd=repo.path).json()
    assert (full["would_index"], full["private"]) == (2, 1)

    repo.git("sparse-checkout", "set", "decisions")
    assert not (repo.path / "research").exists()
    _indexed_without_the_hidden_note(repo, cli)
    r = cli("recall", "otter dens by the river", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert [h["path"] for h in r.json()] == ["research/survey.md", "decisions/keys.md"]
    _searched_without_the_hidden_note(repo)


@needs_model
def test_a_note_ignored_by_a_skip_worktree_gitignore_missing_from_the_disk_stays_private(repo: Repo, cli: Any) -> None:
    """Not a sparse checkout: `git update-index --skip-worktree research/.gitignore`, then the file deleted. Git
    reads a skip-worktree `.gitignore` missing from the disk from its index blob (an untracked `hidden-*.md` there
    is still ignored), so the force-added note under it stays private: its text must not be embedded, recalled or
    answered because the rule is not on disk."""
    _force_added_under_a_gitignore(repo)
    repo.git("update-index", "--skip-worktree", "research/.gitignore")
    (repo.path / "research" / ".gitignore").unlink()
    assert repo.git("status", "--porcelain") == ""
    (repo.path / "research" / "hidden-new.md").write_text("# New\n")
    assert "research/hidden-new.md" in repo.git("status", "--porcelain", "--ignored")  # Git: ignored ("!!")
    _indexed_without_the_hidden_note(repo, cli)
    r = cli("recall", "otter dens by the river", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert "research/hidden-otter.md" not in [h["path"] for h in r.json()]
    assert CANARY not in r.out + r.err
    _searched_without_the_hidden_note(repo)


@needs_model
def test_a_lead_outside_the_sparse_checkout_says_how_to_read_it(repo: Repo, cli: Any) -> None:
    """Recall's hits outside a sparse checkout's cone are read from their index blobs, so their files are not on
    disk: the text answer says so and names `git show :PATH` (the repository's path, for a workspace in a folder
    too); the MCP `read` gives their text, from the tree, not the disk."""
    repo.write({
        "vault/.vivary/memory.toml": MEMORY,
        "vault/decisions/keys.md": "# Rotate keys\n\nWe rotate the signing keys every quarter.\n",
        "vault/research/otters.md": "# Otters\n\nOtters and beavers build near the river.\n",
    })
    repo.git("add", "-A")
    repo.git("commit", "-qm", "init")
    repo.git("sparse-checkout", "set", "vault/decisions", "vault/.vivary")
    assert not (repo.path / "vault/research").exists()
    vault = ("--root", "vault")
    assert cli("index", "--yes", *vault, cwd=repo.path).code == 0
    r = cli("recall", "otters by the river", "--k", "2", *vault, cwd=repo.path)
    assert r.code == 0, r.err
    leads = [line for line in r.out.splitlines() if line[:3] in (" 1.", " 2.")]
    assert leads[0].startswith(" 1. research/otters - research/otters.md (not checked out: `git show "
                               ":vault/research/otters.md`)  (score "), r.out
    assert leads[1].startswith(" 2. decisions/keys - decisions/keys.md  (score "), r.out
    assert repo.git("show", ":vault/research/otters.md").startswith("# Otters")
    r = cli("recall", "otters by the river", "--rev", "HEAD", *vault, cwd=repo.path)  # a revision's files: its own
    assert r.code == 0 and "research/otters.md" in r.out and "not checked out" not in r.out, r.out + r.err
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    server = MemoryService(repo.path, root="vault")
    try:
        packet = server.read("research/otters", include_content=True)
        assert packet.path == "research/otters.md" and "Otters and beavers" in (packet.content or "")
    finally:
        server.close()


def _merge_stopped_on_a_conflict(repo: Repo, path: str, ours: str, theirs: str) -> None:
    repo.git("switch", "-q", "-c", "side")
    repo.commit("side", {path: theirs})
    repo.git("switch", "-q", "main")
    repo.commit("ours", {path: ours})
    merge = subprocess.run(["git", "merge", "-q", "side"], cwd=repo.path, capture_output=True, text=True)
    assert merge.returncode == 1, merge.stderr
    assert repo.git("status", "--porcelain", "--", path) == f"UU {path}\n"


CONFLICT_FIX = ("merge conflict markers left in it (line {line}): resolve the conflict (keep one side, or combine "
                "them, and delete the `<<<<<<<`, `=======` and `>>>>>>>` lines)\n")


def test_a_memory_policy_a_merge_left_conflicted_is_named_with_its_fix(repo: Repo, cli: Any) -> None:
    """Both branches added a private path: the markers are named as what they are, not as an invalid statement."""
    base = MEMORY + "\n[memory.privacy]\n"
    repo.commit("init", {".vivary/memory.toml": base + 'private_paths = ["drafts/**"]\n', "notes/a.md": "# A\n"})
    _merge_stopped_on_a_conflict(repo, ".vivary/memory.toml", base + 'private_paths = ["drafts/**", "diary/**"]\n',
                                 base + 'private_paths = ["drafts/**", "journal/**"]\n')
    for args in (("index", "--dry-run"), ("index", "--yes"), ("recall", "what is a?")):
        r = cli(*args, cwd=repo.path)
        assert (r.code, r.out) == (2, ""), args
        assert r.err == f"git vivary {args[0]}: .vivary/memory.toml: {CONFLICT_FIX.format(line=6)}", args


def test_a_tropo_toml_a_merge_left_conflicted_is_named_with_its_fix(repo: Repo, cli: Any) -> None:
    head = "version = 1\n"
    repo.commit("init", {"tropo.toml": head + 'exclude = ["drafts"]\n', "notes/a.md": "# A\n"})
    _merge_stopped_on_a_conflict(repo, "tropo.toml", head + 'exclude = ["drafts", "diary"]\n',
                                 head + 'exclude = ["drafts", "journal"]\n')
    r = cli("check", cwd=repo.path)
    assert (r.code, r.out) == (2, "")
    assert r.err == f"git vivary check: tropo.toml: {CONFLICT_FIX.format(line=2)}"


def test_a_revision_behind_a_shallow_clones_cut_names_the_fetch(repo: Repo, cli: Any, tmp_path: Any) -> None:
    """A CI checkout at depth 1 holds no `HEAD~1`: the message says why and how to fetch it, not only that it is
    missing."""
    repo.commit("init", {".vivary/memory.toml": MEMORY, "notes/a.md": "# A\n"})
    repo.commit("second", {"notes/b.md": "# B\n"})
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo.path}", str(shallow)], check=True)
    for args in (("index", "--dry-run"), ("recall", "what is b?"), ("check",)):
        r = cli(*args, "--rev", "HEAD~1", cwd=shallow)
        assert (r.code, r.out) == (2, ""), args
        assert r.err == (
            f"git vivary {args[0]}: --rev HEAD~1: no such revision in {shallow.resolve()}, a shallow clone whose "
            "history stops at the commits in .git/shallow; if HEAD~1 is older, fetch more history (`git fetch "
            "--deepen=N`, or `git fetch --unshallow`) and run this again\n"), args
    r = cli("check", "--rev", "HEAD~1", cwd=repo.path)
    assert r.code == 0, r.err
