"""A memory's life over MCP: edit, move, retire, forget, recent, context, and search's window and pages, driven
by the MCP SDK's own client over stdio (`git vivary mcp`, as a host starts it) in a real Git repository."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp import Client
from test_mcp import _data, _run, _stdio, _text

from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService

NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "README.md": "# Home\n\nSee [[notes/deploy]].\n",
}


def _ids(answer: dict[str, Any]) -> list[str]:
    return [r["id"] for r in answer["results"]]


def test_a_memorys_life_over_stdio(repo: Repo, cli: Any) -> None:
    """add -> edit -> search finds the edit -> move rewrites the links -> retire leaves search, stays in `log`
    -> recent lists all four -> `git revert` of the retire brings it back to search."""
    repo.commit("init", NOTES)

    async def session() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with Client(_stdio(repo)) as client:
            async def call(tool: str, **args: Any) -> Any:
                return _data(await client.call_tool(tool, args))

            mem = (await call("add", text="Deploys happen on Tuesdays.", links=["related:notes/deploy"]))["id"]
            other = (await call("add", text="The release train is announced in the ops channel.",
                                links=[f"related:{mem}"]))["id"]
            got["edit"] = await call("edit", id=mem, append="Never on Fridays: the quokka freeze.")
            got["found"] = _ids(await call("search", query="quokka freeze", top_k=3))
            got["move"] = await call("move", id=mem, to="ops/deploy-days")
            moved = got["move"]["id"]
            got["other"] = await call("read", id=other)
            got["retire"] = await call("retire", id=moved, reason="the deploy day is in the runbook now")
            got["after_retire"] = await call("search", query="quokka freeze", top_k=3)
            got["archived"] = _ids(await call("search", query="quokka freeze", top_k=3, include_archived=True))
            got["recent"] = await call("recent", since="30d")
            got["ids"] = (mem, other, moved)
            repo.git("revert", "--no-edit", got["retire"]["commit"])
            got["after_revert"] = _ids(await call("search", query="quokka freeze", top_k=3))
            got["context"] = await call("context", id=moved, depth=2)
            refused = await client.call_tool("edit", {"id": "notes/deploy", "append": "Mine."})
            got["refused"] = (refused.is_error, _text(refused))
        return got

    got = _run(session)
    mem, other, moved = got["ids"]
    assert got["edit"]["changed"] is True and got["edit"]["op"] == "edit"
    assert mem in got["found"]
    assert got["move"]["changed"] and moved == "memories/ops/deploy-days" and got["move"]["moved_from"] == mem
    assert got["move"]["rewritten"] == [other]
    assert {"field": "related", "to": moved} in got["other"]["outbound"]  # the link follows the memory
    assert moved not in _ids(got["after_retire"]) and got["after_retire"]["hidden"] == 1
    assert moved in got["archived"]
    ops = [(e["op"], e["nodes"][0]) for e in got["recent"]["entries"]]
    assert ops[:4] == [("retire", moved), ("move", moved), ("edit", mem), ("add", other)]
    assert got["recent"]["entries"][0]["reason"] == "the deploy day is in the runbook now"
    assert got["recent"]["entries"][1]["moved_from"] == mem
    assert moved in got["after_revert"]
    assert got["context"]["nodes"][0]["id"] == moved
    assert [(n["id"], n["distance"]) for n in got["context"]["nodes"]] == [
        (moved, 0), (other, 1), ("notes/deploy", 1), ("README", 2)]
    assert {(e["from"], e["field"], e["to"]) for e in got["context"]["edges"]} == {
        (moved, "related", "notes/deploy"), (other, "related", moved), ("README", "wikilink", "notes/deploy")}
    assert "quokka freeze" in got["context"]["nodes"][0]["content"]
    assert got["refused"][0] and "not a memory" in got["refused"][1]
    # the retired memory's history, by `git vivary log`: its add (under its old id), edit, move and retire
    log = cli("log", moved, "--json", cwd=repo.path).json()
    assert [e["op"] for e in log] == ["revert", "retire", "move", "edit", "add"]
    # every change one commit with its trailers; the user's revert on top
    ops_in_git = repo.git("log", "-6", "--reverse", "--format=%(trailers:key=Vivary-Op,valueonly)").split()
    assert ops_in_git == ["add", "add", "edit", "move", "retire"]
    assert repo.git("status", "--porcelain") == ""


def _dated(day: int) -> str:
    return f"---\ntype: memory\ntitle: Walrus day {day}\nobserved_at: \"2026-11-{day:02d}T09:00:00Z\"\n---\n" \
           f"# Walrus day {day}\n\nThe walrus log for day {day}.\n"


def test_search_pages_with_a_cursor_and_keeps_to_a_window(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of 3 put together are the top 10 asked at once; `since`/`until` on the note's date and on its
    commit's date; a cursor of another question is refused."""
    repo.commit("init", {**NOTES, **{f"memories/walrus-{d}.md": _dated(d) for d in range(1, 11)}})
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-12-02T12:00:00Z")
    repo.commit("later", {"memories/walrus-10.md": _dated(10) + "\nWalrus again.\n"})
    service = MemoryService(repo.path)
    whole = [h.id for h in service.search("walrus log", top_k=10).results]
    assert len(whole) == 10
    pages, cursor = [], None
    for _ in range(5):
        ans = service.search("walrus log", top_k=3, cursor=cursor)
        pages += [h.id for h in ans.results]
        cursor = ans.next_cursor
        if cursor is None:
            break
    assert pages == whole
    with pytest.raises(Exception, match="another search"):
        service.search("walrus", top_k=3, cursor=service.search("walrus log", top_k=3).next_cursor)
    with pytest.raises(Exception, match="not one this server gave"):
        service.search("walrus log", cursor="bm90IGEgY3Vyc29y")
    window = service.search("walrus log", top_k=10, since="2026-11-03", until="2026-11-05")
    assert sorted(h.id for h in window.results) == ["memories/walrus-3", "memories/walrus-4", "memories/walrus-5"]
    assert window.filters.since == "2026-11-03" and window.filters.date == "note"
    by_commit = service.search("walrus log", top_k=10, since="2026-12-01", date="commit")
    assert [h.id for h in by_commit.results] == ["memories/walrus-10"]
    with pytest.raises(Exception, match="is not a date"):
        service.search("walrus", since="last tuesday")
    with pytest.raises(Exception, match="date must be note or commit"):
        service.search("walrus", since="7d", date="author")
    service.close()


def test_forget_and_move_keep_to_memories_and_say_what_they_left(repo: Repo, cli: Any) -> None:
    repo.commit("init", NOTES)
    service = MemoryService(repo.path)
    mem = service.add("Walrus feeding is at noon.", links=["related:notes/deploy"]).id
    assert mem is not None
    assert service.link("notes/deploy", "related", mem).changed  # a note of the user's links to it
    moved = service.move(mem, "feeding")
    assert moved.id == "memories/feeding" and moved.rewritten == [] and moved.not_rewritten == ["notes/deploy"]
    assert f"[[{mem}]]" in (repo.path / "notes/deploy.md").read_text()  # the user's note is left as it was
    assert "still link to the old name" in (moved.message or "")
    for call in (lambda: service.retire("notes/deploy", reason="x"), lambda: service.forget("notes/deploy", reason="x"),
                 lambda: service.move("notes/deploy", "deploy-2"), lambda: service.edit("README", append="x")):
        with pytest.raises(Exception, match="not a memory"):
            call()
    with pytest.raises(Exception, match="takes a reason"):
        service.forget(moved.id, reason=" ")
    gone = service.forget(moved.id, reason="the walrus left")
    assert gone.changed and not (repo.path / "memories/feeding.md").exists()
    assert moved.id not in [h.id for h in service.search("walrus feeding noon").results]
    service.close()
    log = cli("log", moved.id, "--json", cwd=repo.path).json()
    assert [e["op"] for e in log] == ["forget", "move", "add"]
    old = cli("log", mem, "--json", cwd=repo.path).json()
    assert [e["op"] for e in old] == ["move", "add"]
    assert "Vivary-Reason: the walrus left" in repo.git("log", "-1", "--format=%B")


def test_update_keeps_the_title_unless_given_one(repo: Repo) -> None:
    """`update` kept the note's `# title`, which may state the old claim: new text saying "03:00 (moved from
    02:00)" left the title "... at 02:00 UTC". The title stays unless `title` is given (the tool says so), and
    `title` sets the `# title` line and a `title:` field, checked like `add`'s; the id stays."""
    repo.commit("init", NOTES)

    async def session() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with Client(build_server(MemoryService(repo.path))) as client:
            async def call(tool: str, **args: Any) -> Any:
                return _data(await client.call_tool(tool, args))

            listed = {t.name: t for t in (await client.list_tools()).tools}
            got["described"] = listed["update"].description
            got["schema"] = listed["update"].input_schema["properties"]["title"]
            mem = (await call("add", text="Backups run every Saturday at 02:00 UTC."))["id"]
            await call("update", id=mem, text="Backups run every Saturday at 03:00 UTC (moved from 02:00).")
            got["kept"] = (await call("read", id=mem, include_content=True))
            got["update"] = await call("update", id=mem, title="Backups run every Saturday at 03:00 UTC")
            got["titled"] = (await call("read", id=mem, include_content=True))
            for bad in ("", "x" * 201):
                refused = await client.call_tool("update", {"id": mem, "title": bad})
                got.setdefault("refused", []).append((refused.is_error, _text(refused)))
            got["mem"] = mem
        return got

    got = _run(session)
    assert "title stays as it was unless title is given" in " ".join(got["described"].split())
    assert "title stays" in got["schema"]["description"]
    assert got["kept"]["title"] == "Backups run every Saturday at 02:00 UTC."
    assert "03:00 UTC (moved from 02:00)" in got["kept"]["content"]
    assert got["update"]["changed"] is True and got["update"]["title"] == "Backups run every Saturday at 03:00 UTC"
    assert got["update"]["id"] == got["mem"]
    assert got["titled"]["title"] == "Backups run every Saturday at 03:00 UTC"
    body = (repo.path / got["titled"]["path"]).read_text()
    assert "# Backups run every Saturday at 03:00 UTC\n" in body and "02:00 UTC.\n" not in body
    assert "03:00 UTC (moved from 02:00)." in body
    assert 'title: "Backups run every Saturday at 03:00 UTC"\n' in body  # the frontmatter's title too
    assert got["refused"][0][0] and "the title is empty" in got["refused"][0][1]
    assert got["refused"][1][0] and "the title is 201 characters, over 200" in got["refused"][1][1]
    assert repo.git("log", "-1", "--format=%s") == f"vivary: update {got['mem']}: title\n"


def _server(parent: int) -> int:
    """The `git vivary mcp` process the SDK's client started for this test."""
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and _parent_of(proc) == parent:
            with contextlib.suppress(OSError):
                if b"vivary_git.main" in (proc / "cmdline").read_bytes():
                    return int(proc.name)
    raise AssertionError("no server process")


def _figures(pid: int, repo: Repo, tmp: Path) -> dict[str, Any]:
    status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    kids = [p for p in Path("/proc").iterdir() if p.name.isdigit() and _parent_of(p) == pid]  # zombies too
    counts = dict(line.split(": ") for line in repo.git("count-objects", "-v").splitlines())
    vivary = repo.path / ".git/vivary"
    return {"fds": len(list(Path(f"/proc/{pid}/fd").iterdir())), "threads": int(status["Threads"]),
            "children": len(kids), "tmp": sorted(p.name for p in tmp.rglob("*")),
            "vivary_tmp": sorted(str(p.relative_to(vivary)) for p in vivary.rglob("*") if p.is_file() and (
                "tmp" in p.relative_to(vivary).parts or ".tmp" in p.name or "tmp." in p.name)),
            "packs": int(counts["packs"])}


def _parent_of(proc: Path) -> int | None:
    try:
        return int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="reads the server's figures from /proc")
def test_a_hundred_calls_leave_the_server_and_the_repository_as_they_were(repo: Repo, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """One server through 100 writes and reads, with the user committing between them: its fds, threads and
    children, the temporary files in its TMPDIR and in .git/vivary are what they were after the first 10 calls;
    fsck and status are clean; and Git's housekeeping ran as after `git commit` (here: over the pack limit)."""
    repo.commit("init", NOTES)
    repo.git("repack", "-d", "-q")
    repo.commit("more", {"notes/more.md": "# More\n\nAnother note.\n"})
    repo.git("repack", "-d", "-q")
    for key, value in (("gc.auto", "6700"), ("gc.autoPackLimit", "1"), ("gc.autoDetach", "false")):
        repo.git("config", key, value)
    tmp = tmp_path / "server-tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))

    async def session() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(_stdio(repo)) as client:
            async def call(tool: str, **args: Any) -> Any:
                return _data(await client.call_tool(tool, args))

            mems = [(await call("add", text=f"The {w} shift starts at {h} o'clock on the {w} dock.",
                                force=True))["id"] for h, w in ((6, "walrus"), (7, "heron"), (8, "otter"))]
            pid = _server(os.getpid())
            start: dict[str, Any] = {}
            for i in range(110):
                if i == 10:  # each kind of call made once: what the server keeps from here on is the baseline
                    start = _figures(pid, repo, tmp)
                mem = mems[i % 3]
                if i % 10 == 9:
                    repo.commit(f"user {i}", {"notes/more.md": f"# More\n\nEdited by the user, {i}.\n"})
                elif i % 4 == 0:
                    await call("edit", id=mem, append=f"Moved by {i} minutes.")
                elif i % 4 == 1:
                    await call("search", query="shift dock", top_k=3)
                elif i % 4 == 2:
                    await call("link" if i % 8 == 2 else "unlink", source=mem, field="related", target="notes/deploy")
                else:
                    await call("read", id=mem)
            return start, _figures(pid, repo, tmp)

    start, end = _run(session)
    assert {k: end[k] for k in ("fds", "children", "tmp", "vivary_tmp")} == {
        k: start[k] for k in ("fds", "children", "tmp", "vivary_tmp")}
    # The SDK runs each tool in a worker thread of anyio's pool, which lets an idle one go: one more or fewer
    # between two samples; one left per call would be 100.
    assert end["threads"] <= start["threads"] + 1
    assert end["children"] == 0
    assert end["packs"] == 1  # the first write's housekeeping packed the two packs (and everything) into one
    assert repo.git("fsck", "--no-dangling", "--no-progress") == ""
    assert repo.git("status", "--porcelain") == ""
