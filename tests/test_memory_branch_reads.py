"""A `[memory.remember] branch` that is a symbolic ref is read as writes treat it: never followed.

Writes refuse such a branch (`test_remember.py::test_a_memory_branch_that_is_a_symbolic_ref_is_refused`): Git would
move the branch it names. Reads followed it: `recent` listed another branch's history as the memory branch's,
`dream` took another branch's resolutions for its own, and a search by commit date took another branch's dates.
Each now reads HEAD, as when the branch does not exist, and `recent` and the MCP `status` say why, with the fix."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import Repo

CONFIG = {".vivary/memory.toml": '[memory.remember]\nbranch = "vivary/memory"\n'}
NOTE = "---\ntags: [ops]\n---\n# Deploy runbook\n\nHow we deploy.\n"
RELEASE = "---\ntype: memory\n---\n# Release memory\n\nThe okapi lives on the release branch.\n"


def _note(target: str) -> str:
    return (f"refs/heads/vivary/memory is a symbolic ref to refs/heads/{target} and is not followed: memories are "
            "read from HEAD; remove the symbolic ref (`git symbolic-ref --delete refs/heads/vivary/memory`), or "
            "name the branch to use in [memory.remember] branch in .vivary/memory.toml")


def _release_and_link(repo: Repo, target: str) -> None:
    """main holds the notes and the config; `release` a memory of its own; vivary/memory a symbolic ref."""
    repo.commit("init", {"notes/deploy.md": NOTE, **CONFIG})
    repo.git("switch", "-q", "-c", "release")
    repo.commit("release memory", {"memories/from-release.md": RELEASE})
    repo.git("switch", "-q", "main")
    repo.git("symbolic-ref", "refs/heads/vivary/memory", f"refs/heads/{target}")


@pytest.mark.parametrize("target", ["release", "nowhere"])
def test_recent_never_follows_a_symbolic_memory_branch(repo: Repo, cli: Any, target: str) -> None:
    """`recent` listed the history of the branch the symbolic ref names (`release`) as the memory branch's, under
    `ref: refs/heads/vivary/memory`. It reads HEAD, as when the branch does not exist, and says why and the fix."""
    _release_and_link(repo, target)
    r = cli("recent", "--since", "2000-01-01", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json() == {"since": "2000-01-01T00:00:00Z", "until": None, "ref": "HEAD", "entries": [],
                        "note": _note(target)}
    text = cli("recent", "--since", "2000-01-01", cwd=repo.path)
    assert text.code == 0
    assert text.out == "vivary recent: no memory commits in that window\n"
    assert text.err == f"vivary recent: {_note(target)}\n"
    repo.git("symbolic-ref", "--delete", "refs/heads/vivary/memory")  # the fix the note names
    repo.git("branch", "vivary/memory", "release")
    fixed = cli("recent", "--since", "2000-01-01", "--json", cwd=repo.path).json()
    assert fixed["ref"] == "refs/heads/vivary/memory" and "note" not in fixed
    assert [e["nodes"] for e in fixed["entries"]] == [["memories/from-release"]]


def test_dream_takes_no_resolution_from_the_branch_a_symbolic_memory_branch_names(repo: Repo, cli: Any) -> None:
    """A task resolved on `release` only, read from main: `dream --inspect tasks` said it was resolved when
    vivary/memory was a symbolic ref to `release`. It is open, as main's history says."""
    repo.commit("init", {"notes/deploy.md": NOTE, ".gitignore": "USER.md\n"})
    for text in ("Deploys happen on Tuesdays, never on Fridays, so the release train leaves Tuesday morning.",
                 "The deploy pipeline runs smoke tests before switching blue green traffic on Tuesday.",
                 "A failed Tuesday deploy is rolled back with the release rollback script.",
                 "Deploy freezes start two days before a holiday release train.",
                 "Only the release captain may approve a production deploy on Tuesday.",
                 "Canary deploys get ten percent of traffic for an hour before the full release train."):
        assert cli("remember", text, "--json", cwd=repo.path).code == 0
    run = cli("dream", "--force", "--json", cwd=repo.path)
    assert run.code == 0, run.err
    task = run.json()["run"]["tasks"][0]["id"]
    repo.git("switch", "-q", "-c", "release")
    resolved = cli("dream", "--task-id", task, "--use-heuristic", "--json", cwd=repo.path)
    assert resolved.code == 0, resolved.err
    repo.git("switch", "-q", "main")

    def status() -> str:
        tasks = cli("dream", "--inspect", "tasks", "--json", cwd=repo.path).json()["tasks"]
        return next(t["status"] for t in tasks if t["id"] == task)

    assert status() == "open"
    repo.commit("memory branch", CONFIG)
    repo.git("symbolic-ref", "refs/heads/vivary/memory", "refs/heads/release")
    assert status() == "open"
    repo.git("symbolic-ref", "refs/heads/vivary/memory", "refs/heads/nowhere")
    assert status() == "open"


@pytest.mark.parametrize("target", ["release", "nowhere"])
def test_the_mcp_reads_never_follow_a_symbolic_memory_branch(repo: Repo, monkeypatch: pytest.MonkeyPatch,
                                                             target: str) -> None:
    """Over an in-process MCP session: `recent` and `status` say the branch is not followed and why; a search by
    commit date takes main's dates (the branch `release` changed the deploy note later: that date was taken)."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import Client

    from vivary_git.mcp.server import build_server
    from vivary_git.mcp.service import MemoryService

    repo.commit("init", {"notes/deploy.md": NOTE, **CONFIG})
    repo.git("switch", "-q", "-c", "release")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-12-02T12:00:00Z")
    repo.commit("release", {"notes/deploy.md": NOTE + "\nOn release too.\n"})
    repo.git("switch", "-q", "main")
    repo.git("symbolic-ref", "refs/heads/vivary/memory", f"refs/heads/{target}")

    async def session() -> list[Any]:
        async with Client(build_server(MemoryService(repo.path))) as client:
            return [await client.call_tool("recent", {"since": "2000-01-01"}),
                    await client.call_tool("status", {}),
                    await client.call_tool("search", {"query": "deploy", "since": "2026-12-01", "date": "commit"}),
                    await client.call_tool("search", {"query": "deploy", "until": "2026-12-01", "date": "commit"})]

    recent, status, later, earlier = asyncio.run(session())
    for got in (recent, status, later, earlier):
        assert not got.is_error, got.content
    assert recent.structured_content["ref"] == "HEAD" and recent.structured_content["note"] == _note(target)
    assert recent.structured_content["entries"] == []
    memory = status.structured_content["memory"]
    assert memory["branch"] == "vivary/memory" and memory["branch_note"] == _note(target)
    assert later.structured_content["results"] == []
    assert [h["id"] for h in earlier.structured_content["results"]] == ["notes/deploy"]


def _point(repo: Repo, state: str) -> None:
    """Make refs/heads/vivary/memory one of the ways a memory branch can stand (`release` exists, `nowhere` not)."""
    loose = repo.path / ".git" / "refs" / "heads" / "vivary" / "memory"
    if state == "a branch":
        repo.git("branch", "vivary/memory", "release")
    elif state == "an alias":  # a symbolic ref to a symbolic ref: the first one it names is the one said
        repo.git("symbolic-ref", "refs/heads/alias", "refs/heads/release")
        repo.git("symbolic-ref", "refs/heads/vivary/memory", "refs/heads/alias")
    elif state in ("itself", "HEAD"):  # `git symbolic-ref` makes neither; Git reads both
        loose.parent.mkdir(parents=True, exist_ok=True)
        loose.write_text(f"ref: {'refs/heads/vivary/memory' if state == 'itself' else 'HEAD'}\n")
    elif state != "none":
        repo.git("symbolic-ref", "refs/heads/vivary/memory", f"refs/heads/{state}")


@pytest.mark.parametrize("state", ["none", "a branch", "release", "nowhere", "an alias", "itself", "HEAD"])
def test_a_read_does_not_follow_exactly_the_memory_branch_a_write_refuses(repo: Repo, cli: Any, state: str) -> None:
    """Writes and reads look the memory branch up in one place: a write is refused exactly when a read does not
    follow the branch and reads HEAD instead, and both name the same ref it points to; else both take the branch."""
    _release_and_link(repo, "release")
    repo.git("symbolic-ref", "--delete", "refs/heads/vivary/memory")
    _point(repo, state)
    before = repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads")
    read = cli("recent", "--since", "2000-01-01", "--json", cwd=repo.path)
    assert read.code == 0, read.err
    write = cli("remember", "The loading dock closes at six.", "--json", cwd=repo.path)
    if state in ("none", "a branch"):
        assert write.code == 0, write.err
        assert read.json()["ref"] == ("HEAD" if state == "none" else "refs/heads/vivary/memory")
        assert "note" not in read.json() and write.json()["ref"] == "refs/heads/vivary/memory"
        return
    to = {"an alias": "refs/heads/alias", "itself": "refs/heads/vivary/memory", "HEAD": "HEAD"}.get(
        state, f"refs/heads/{state}")
    assert write.code == 3, write.out
    assert write.err.startswith(f"git vivary remember: refs/heads/vivary/memory is a symbolic ref to {to}, ")
    assert read.json()["ref"] == "HEAD"
    assert read.json()["note"].startswith(f"refs/heads/vivary/memory is a symbolic ref to {to} and is not followed")
    assert repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads") == before


def test_a_memory_branch_whose_ref_does_not_parse_is_said_and_never_written_over(repo: Repo, cli: Any) -> None:
    """A damaged ref file at the memory branch was a traceback in `recent` and `remember` (libgit2's "corrupted
    loose reference file"). A write is refused, exit 3, nothing committed (starting the branch again would lose the
    memories on it); a read says so and reads HEAD. Both name the commit the branch's reflog last gave it, and the
    fix, which works."""
    repo.commit("init", {"notes/deploy.md": NOTE, **CONFIG})
    repo.git("switch", "-q", "-c", "vivary/memory")
    repo.commit("a memory", {"memories/kept.md": RELEASE})
    repo.git("switch", "-q", "main")
    held = repo.git("rev-parse", "vivary/memory").strip()
    head = repo.git("rev-parse", "HEAD").strip()
    ref_file = repo.path / ".git/refs/heads/vivary/memory"
    ref_file.write_text("garbage\n")
    fix = (f"its reflog says it last pointed at {held[:12]}: remove the file {ref_file.resolve()} by hand, then "
           f"`git branch -- vivary/memory {held}`")
    w = cli("remember", "The okapi lives in the forest", cwd=repo.path)
    assert w.code == 3, w.err
    assert w.err == ("git vivary remember: refs/heads/vivary/memory does not parse (corrupted loose reference file: "
                     f"refs/heads/vivary/memory), so Git can neither read nor move it and the memories on it cannot be "
                     f"found; {fix}; nothing was committed\n")
    assert ref_file.read_text() == "garbage\n" and repo.git("rev-parse", "HEAD").strip() == head
    r = cli("recent", "--since", "2000-01-01", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["ref"] == "HEAD" and fix in r.json()["note"]
    ref_file.unlink()  # the fix the message names
    repo.git("branch", "--", "vivary/memory", held)
    assert cli("remember", "The okapi lives in the forest", cwd=repo.path).code == 0
