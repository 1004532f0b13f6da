"""`git vivary mcp`: driven by the MCP SDK's own client over stdio, streamable HTTP and in-process, and by
an independent client (the MCP Inspector CLI) where it installs."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp_servers import NOTES, _seed, _start_http, _stop
from npm_tools import inspector_cli

from vivary_git.mcp.reads import answer_text, estimate_tokens
from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService

HOST_CORE = {"search", "read", "add", "update", "link", "unlink", "dream", "status", "onboard", "edit", "retire",
             "forget", "move", "recent", "context"}


def _data(result: Any) -> Any:
    assert not result.is_error, result.content
    return result.structured_content


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


def _run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro())


def _stdio(repo: Repo, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp", *extra],
                                 cwd=str(repo.path), env=dict(os.environ))


def _trailer_ops(repo: Repo, n: int) -> list[str]:
    return repo.git("log", f"-{n}", "--reverse", "--format=%(trailers:key=Vivary-Op,valueonly)").split()


def test_a_scripted_agent_session_over_stdio(repo: Repo) -> None:
    _seed(repo)
    repo.write({"staged.md": "# Staged work\n"})
    repo.git("add", "staged.md")
    head = repo.git("rev-parse", "HEAD").strip()

    async def session() -> dict[str, Any]:
        async with Client(_stdio(repo)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == HOST_CORE
            ids = []
            for text, tags in (("Deploys happen on Tuesdays, never on Fridays.", ["deploy"]),
                               ("The staging database is reset every night at 02:00 UTC.", ["staging"]),
                               ("Signing keys live in the team vault, never in the repo.", ["keys"])):
                got = _data(await client.call_tool("add", {"text": text, "tags": tags}))
                assert got["ok"] is True, got
                ids.append(got["id"])
            found = {}
            for q, want in (("Fridays deploy", ids[0]), ("staging database reset", ids[1]),
                            ("team vault signing keys", ids[2])):
                ans = _data(await client.call_tool("search", {"query": q, "top_k": 3}))
                assert ans["mode"] == "text"
                found[q] = [r["id"] for r in ans["results"]]
                assert want in found[q], (q, ans)
            linked = _data(await client.call_tool("link", {"source": ids[0], "field": "related", "target": ids[1]}))
            assert linked["ok"] and linked["edge"] == {"from": ids[0], "field": "related", "to": ids[1]}
            upd = _data(await client.call_tool("update", {"id": ids[2], "text": "Signing keys live in the vault.",
                                                          "durability": "pinned"}))
            assert upd["ok"] and upd["changed"] is True
            packet = _data(await client.call_tool("read", {"id": ids[1], "neighbors": 2, "include_content": True}))
            again = _data(await client.call_tool("search", {"query": "vault", "include_content": True}))
            status = _data(await client.call_tool("status", {}))
            digest = await client.read_resource("vivary://memory/digest")
            return {"ids": ids, "packet": packet, "again": again, "status": status,
                    "digest": digest.contents[0].text}

    got = _run(session)
    ids = got["ids"]
    assert got["packet"]["inbound"] == [{"from": ids[0], "field": "related"}]
    assert [n["id"] for n in got["packet"]["neighbors"]] == [ids[0]]
    assert got["again"]["results"][0]["id"] == ids[2]
    assert "Signing keys live in the vault." in got["again"]["results"][0]["content"]
    assert got["status"]["nodes"]["memories"] == 3
    assert f"`{ids[2]}`" in got["digest"]
    # five commits (three adds, a link, an update), each with its trailers, on top of the old HEAD
    assert repo.git("rev-parse", "HEAD~5").strip() == head
    assert _trailer_ops(repo, 5) == ["add", "add", "add", "link", "update"]
    nodes = repo.git("log", "-5", "--reverse", "--format=%(trailers:key=Vivary-Node,valueonly)").split()
    assert nodes == [ids[0], ids[1], ids[2], ids[0], ids[2]]
    # the user's staged file is still staged, unchanged, and nothing else moved
    assert repo.git("status", "--porcelain=v1") == "A  staged.md\n"
    assert repo.git("show", ":staged.md") == "# Staged work\n"


def test_streamable_http_on_loopback(repo: Repo) -> None:
    _seed(repo)
    proc, url = _start_http(repo)
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")

        async def session() -> tuple[Any, Any]:
            async with Client(url) as client:
                added = _data(await client.call_tool("add", {"text": "HTTP memories land as commits."}))
                ans = _data(await client.call_tool("search", {"query": "http memories commits"}))
                return added, ans

        added, ans = _run(session)
        assert ans["results"][0]["id"] == added["id"]
        assert _trailer_ops(repo, 1) == ["add"]
    finally:
        _stop(proc)


def test_http_bearer_token_is_required_when_set(repo: Repo) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    _seed(repo)
    token = "t0ken-for-tests-0123456789"
    proc, url = _start_http(repo, {"VIVARY_MCP_TOKEN": token})
    try:
        async def with_header(value: str) -> Any:
            http = create_mcp_http_client(headers={"Authorization": value})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return _data(await client.call_tool("status", {}))

        assert _run(lambda: with_header(f"Bearer {token}"))["ok"] is True
        with pytest.raises(Exception):  # noqa: B017 - the SDK's error type for an HTTP 401 varies by version
            _run(lambda: with_header("Bearer wrong"))
    finally:
        _stop(proc)


@pytest.mark.parametrize(("args", "env", "said"), [
    (["--host", "0.0.0.0"], {}, "is not loopback"),
    (["--host", "0.0.0.0", "--allow-remote"], {}, "needs a bearer token of at least 16 characters"),
])
def test_binding_beyond_loopback_needs_a_flag_and_a_token(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                          args: list[str], env: dict[str, str], said: str) -> None:
    _seed(repo)
    monkeypatch.delenv("VIVARY_MCP_TOKEN", raising=False)
    r = cli("mcp", "--transport", "streamable-http", *args, cwd=repo.path)
    assert r.code == 3 and said in r.err


def test_read_only_profile_serves_reads_only(repo: Repo) -> None:
    _seed(repo)
    server = build_server(MemoryService(repo.path, profile="read-only"))

    async def session() -> tuple[set[str], Any]:
        async with Client(server) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            ans = _data(await client.call_tool("search", {"query": "deploy"}))
            return tools, ans

    tools, ans = _run(session)
    assert tools == {"search", "read", "status", "recent", "context"}
    assert ans["results"][0]["id"] == "notes/deploy"
    with pytest.raises(Exception, match="not available in the read-only profile"):
        MemoryService(repo.path, profile="read-only").add("nope")


CANARY = "canary-7f3e9a"


def test_no_answer_resource_or_error_carries_a_private_byte(repo: Repo) -> None:
    """Canaries in every kind of private file; every tool, resource and error is scanned for them."""
    _privacy_canaries(repo, nested_from_root=False)


def test_a_nested_workspaces_private_files_stay_private_from_the_parent(repo: Repo) -> None:
    _privacy_canaries(repo, nested_from_root=True)


def _privacy_canaries(repo: Repo, *, nested_from_root: bool) -> None:
    repo.commit("init", {
        **NOTES,
        "USER.md": f"# {CANARY}-user-title\n\n{CANARY}-user-body [[notes/deploy]]\n",
        "MEMORY.md": f"# {CANARY}-memory-md\n",
        "memory/diary.md": f"---\ntitle: {CANARY}-diary\n---\n# {CANARY}-diary-title\n\ndeploy {CANARY}-diary\n",
        ".gitignore": "drafts/\n",
        "team/tropo.toml": "version = 1\n",
        "team/USER.md": f"# {CANARY}-sub-user\n\ndeploy\n",
        "team/memory/log.md": f"# {CANARY}-sub-memory\n\ndeploy\n",
        "team/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["internal/**"]\n',
        "team/internal/notes.md": f"# {CANARY}-sub-config\n\ndeploy\n",
        "team/plan.md": "# Team plan\n\ndeploy\n",
    })
    repo.write({"drafts/plan-b.md": f"# {CANARY}-ignored\n\ndeploy [[notes/deploy]]\n"})
    repo.git("add", "-f", "drafts")
    repo.git("commit", "-qm", "force-add an ignored draft")
    # a public note linking to a private one: the edge must be dropped
    repo.commit("link", {"notes/links.md": "# Links\n\nSee [[USER]] and [[memory/diary]] for deploy.\n"})
    said: list[str] = []

    async def probe(client: Any, root: str) -> None:
        calls = [
            ("search", {"query": "deploy", "top_k": 50, "include_neighbors": 3, "include_content": True,
                        "budget": 0}),
            ("search", {"query": "7f3e9a sub user memory diary ignored", "top_k": 50}),
            ("search", {"query": "diary user memory", "top_k": 50, "include_neighbors": 3}),
            ("read", {"id": "notes/links", "neighbors": 3, "include_content": True}),
            ("read", {"id": "notes/deploy", "neighbors": 3}),
            ("read", {"id": "USER.md"}), ("read", {"id": "USER"}), ("read", {"id": "memory/diary.md"}),
            ("read", {"id": "memory/diary"}), ("read", {"id": "drafts/plan-b.md"}), ("read", {"id": "drafts/plan-b"}),
            ("read", {"id": "team/USER.md"}), ("read", {"id": "MEMORY.md"}), ("read", {"id": "../USER.md"}),
            ("status", {}),
            ("link", {"source": "notes/deploy", "field": "related", "target": "USER"}),
            ("link", {"source": "USER", "field": "related", "target": "notes/deploy"}),
            ("update", {"id": "memory/diary", "text": "x"}),
            ("add", {"text": "remember the deploy plan", "links": ["related:USER"]}),
            ("add", {"text": "remember the deploy plan", "links": ["related:notes/deploy"]}),
            ("search", {"query": "deploy plan", "top_k": 50, "include_neighbors": 3, "include_content": True}),
            ("read", {"id": "internal/notes.md"}), ("read", {"id": "team/internal/notes.md"}),
        ]
        for name, args in calls:
            result = await client.call_tool(name, args)
            said.append(json.dumps(result.structured_content) if not result.is_error else _text(result))
        for uri in ("vivary://node/USER", "vivary://node/memory/diary", "vivary://node/notes/links",
                    "vivary://memory/digest"):
            try:
                got = await client.read_resource(uri)
                said.append(" ".join(getattr(c, "text", "") for c in got.contents))
            except Exception as err:
                said.append(str(err))

    async def session() -> None:
        async with Client(build_server(MemoryService(repo.path / "team"))) as client:
            await probe(client, "team")
        if nested_from_root:
            async with Client(build_server(MemoryService(repo.path))) as client:
                await probe(client, "")
        else:
            repo.git("rm", "-rq", "team")  # the parent's view of a nested workspace: see the test below
            repo.git("commit", "-qm", "drop the nested workspace")
            async with Client(build_server(MemoryService(repo.path))) as client:
                await probe(client, "")

    _run(session)
    joined = "\n".join(said)
    leaks = [s[max(0, s.find(CANARY) - 200):s.find(CANARY) + 50] for s in said if CANARY in s]
    assert not leaks, "\n".join(leaks)
    assert "'USER.md' is private (floor: USER.md)" in joined
    assert "'memory/diary.md' is private (floor: memory/**)" in joined
    assert "'USER.md' is private (floor: USER.md" in joined
    # A rule of the user's is named by its place: its pattern (the text of a file on the privacy floor) names
    # private things.
    assert "'drafts/plan-b.md' is private (.gitignore:1): vivary never shows" in joined
    assert "'internal/notes.md' is private (private_paths in team/.vivary/memory.toml)" in joined
    assert "drafts/)" not in joined and "internal/**" not in joined
    links = json.loads(said[len(said) // 2 + 3])  # the parent workspace's `read notes/links`
    assert links["outbound"] == [] and links["neighbors"] == []


def test_search_trims_to_its_budget_in_the_documented_order(repo: Repo) -> None:
    body = "Deploy notes. " + "The deploy pipeline runs smoke tests before it shifts traffic. " * 40
    repo.commit("init", {f"notes/d{i}.md": f"# Deploy {i}\n\n{body}[[notes/d{(i + 1) % 6}]]\n" for i in range(6)})
    service = MemoryService(repo.path)

    def ask(budget: int) -> Any:
        return service.search("deploy pipeline", top_k=6, include_content=True, include_neighbors=1,
                              budget=budget, mode="text")

    def shape(budget: int) -> list[tuple[bool, bool, int, bool]]:
        got = ask(budget)
        # the whole answer's text counts, as the host receives it (compact JSON), its own size included
        assert got.estimated_tokens == estimate_tokens(answer_text(got))
        if budget:  # 0 = no budget
            assert got.estimated_tokens <= max(budget, smallest), (budget, got.estimated_tokens)
        assert [h.id for h in got.results] == [h.id for h in full.results][: len(got.results)]
        return [(bool(h.content), bool(h.neighbors), len(h.snippet or ""), bool(h.edges)) for h in got.results]

    full = ask(0)
    smallest = ask(1).estimated_tokens  # the answer's envelope and one bare result
    snippet = len(full.results[0].snippet or "")
    assert snippet > 80 and full.estimated_tokens > 2000 and smallest < 150
    assert shape(0) == [(True, True, snippet, True)] * 6
    assert shape(2000) == [(False, True, snippet, True)] * 6  # content goes first
    assert shape(700) == [(False, False, snippet, True)] * 6  # then neighbours
    assert shape(400) == [(False, False, 0, True)] * 6  # then snippets shorten and go
    assert shape(300) == [(False, False, 0, False)] * 6  # then edges
    assert shape(200) == [(False, False, 0, False)] * 3  # then trailing results (a next_cursor for them)
    assert ask(200).next_cursor is not None and ask(300).next_cursor is None
    assert shape(1) == [(False, False, 0, False)]  # one result always stays


def test_a_note_rewritten_in_the_second_of_its_commit_is_searched_anew(repo: Repo) -> None:
    """Racy Git, as in test_source.py: the server's snapshot of the working tree must see a note rewritten to
    the same size in the second its commit wrote the index. The sleeps set up the race; nothing is timed."""
    import time

    _seed(repo)
    for _attempt in range(3):
        time.sleep(1.05 - time.time() % 1)
        start = int(time.time())
        repo.commit("zoo", {"notes/zoo.md": "# Zoo\n\nzebras\n"})
        repo.write({"notes/zoo.md": "# Zoo\n\nokapis\n"})  # the same size, the same second
        if int(time.time()) != start:
            continue  # the commit crossed into the next second: no race to test; try again
        time.sleep(1.05 - time.time() % 1)
        service = MemoryService(repo.path)
        assert [h.id for h in service.search("okapis", mode="text").results] == ["notes/zoo"]
        assert not service.search("zebras", mode="text").results
        return
    pytest.fail("three commits in a row took over a second each: the race could not be set up")


def test_answers_follow_the_working_tree(repo: Repo) -> None:
    _seed(repo)
    service = MemoryService(repo.path)
    assert not service.search("zebra").results
    repo.write({"notes/zoo.md": "# Zoo\n\nA zebra note, not committed.\n"})
    assert [h.id for h in service.search("zebra").results] == ["notes/zoo"]
    repo.write({"notes/zoo.md": "# Zoo\n\nNow about giraffes.\n"})
    assert not service.search("zebra").results
    repo.git("add", "-A")
    repo.git("commit", "-qm", "zoo")
    assert [h.id for h in service.search("giraffes").results] == ["notes/zoo"]
    added = service.add("Zebras are remembered right after they are added.")
    assert added.ok
    assert service.search("zebras remembered").results[0].id == added.id
    # the patched state is keyed by the tree on disk: an edit made after the add is still seen
    repo.write({"notes/zoo.md": "# Zoo\n\nOkapi now.\n"})
    assert [h.id for h in service.search("okapi").results] == ["notes/zoo"]
    assert service.search("zebras remembered").results[0].id == added.id
    service.close()


def test_a_note_whose_file_name_is_not_utf8_is_searched_read_and_followed(repo: Repo) -> None:
    """The view names such a note in its text form (`bad\\xff`), the warm state by its raw name: `search` left it
    out, and `read` / `context` of the id `graph` prints failed with an unexpected tool error."""
    _seed(repo)
    with open(os.path.join(os.fsencode(repo.path), b"notes", b"bad\xff\xfe.md"), "wb") as f:
        f.write(b"# Walrus\n\nA walrus note; see [[deploy]].\n")
    repo.git("add", "-A")
    repo.git("commit", "-qm", "walrus")
    service = MemoryService(repo.path)
    hits = service.search("walrus").results
    assert [h.id for h in hits] == ["notes/bad\\xff\\xfe"], hits
    packet = service.read(hits[0].id)
    assert packet.path == "notes/bad\\xff\\xfe.md" and packet.title == "Walrus"
    assert [(e.field, e.to) for e in packet.outbound] == [("wikilink", "notes/deploy")]
    assert [n.id for n in service.context(hits[0].id).nodes] == ["notes/bad\\xff\\xfe", "notes/deploy"]
    service.close()


def test_update_refuses_a_memory_the_user_is_editing(repo: Repo) -> None:
    _seed(repo)
    service = MemoryService(repo.path)
    added = service.add("A memory the user will edit by hand.")
    assert added.path is not None
    note = repo.path / added.path
    note.write_text(note.read_text() + "\nMy own edit.\n")
    with pytest.raises(Exception, match="has changes of yours that are not committed"):
        service.update(added.id or "", durability="durable")
    assert "My own edit." in note.read_text()
    service.close()


def test_edits_change_only_what_they_say(repo: Repo) -> None:
    repo.commit("init", {**NOTES, "tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'
                         '[types.decision.optional]\nrelated = "ref-list"\n',
                         "decisions/use-git.md": "---\n# a comment kept\nstatus: accepted   # trailing\n"
                         "related:\n  - keys\n---\n# Use Git\n\nBody stays.\n"})
    service = MemoryService(repo.path)
    before = (repo.path / "decisions/use-git.md").read_text()
    got = service.link("use-git", "related", "deploy")
    assert got.ok and got.commit
    after = (repo.path / "decisions/use-git.md").read_text()
    assert after == before.replace("related:\n  - keys\n", "related: [keys, deploy]\n")
    assert service.unlink("use-git", "related", "deploy").ok
    assert (repo.path / "decisions/use-git.md").read_text() == before.replace("related:\n  - keys\n",
                                                                             "related: [keys]\n")
    refused = pytest.raises(Exception, match="not a link field of decision")
    with refused:
        service.link("use-git", "nonsense", "deploy")
    service.close()


def test_help_and_check_import_no_server_or_model(repo: Repo) -> None:
    _seed(repo)
    code = ("import sys; from vivary_git.main import main; main(sys.argv[1:]); "
            "heavy = [m for m in ('mcp', 'numpy', 'detect_secrets', 'pydantic', 'starlette', 'onnxruntime') "
            "if m in sys.modules]; print(heavy)")
    for args in (["-h"], ["check"], ["remember", "-h"], ["mcp", "-h"]):
        out = subprocess.run([sys.executable, "-c", code, *args], cwd=repo.path, capture_output=True, text=True,
                             check=False).stdout
        assert out.strip().splitlines()[-1] == "[]", (args, out)


def test_an_independent_client_the_inspector_cli(repo: Repo, tmp_path_factory: pytest.TempPathFactory) -> None:
    cmd = [*inspector_cli(tmp_path_factory), "--cli", sys.executable, "-m", "vivary_git.main", "mcp"]
    _seed(repo)
    listed = subprocess.run([*cmd, "--method", "tools/list"], cwd=repo.path, capture_output=True, text=True,
                            timeout=300, check=False)
    assert listed.returncode == 0, listed.stderr
    names = {t["name"] for t in json.loads(listed.stdout)["tools"]}
    assert names == HOST_CORE
    called = subprocess.run([*cmd, "--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=deploy"],
                            cwd=repo.path, capture_output=True, text=True, timeout=300, check=False)
    assert called.returncode == 0, called.stderr
    answer = json.loads(called.stdout)
    assert answer["structuredContent"]["results"][0]["id"] == "notes/deploy"


def test_a_memory_branch_is_read_as_an_overlay(repo: Repo) -> None:
    repo.commit("init", {**NOTES, ".vivary/memory.toml": '[memory.remember]\nbranch = "vivary/memory"\n'})
    service = MemoryService(repo.path)
    added = service.add("Overlay memories live on their own branch.")
    assert added.ok and added.ref == "refs/heads/vivary/memory"
    assert [h.id for h in service.search("overlay memories branch").results] == [added.id]
    service.close()
    assert repo.git("status", "--porcelain") == ""
    assert not (repo.path / "memories").exists()
    fresh = MemoryService(repo.path)  # a new server: the branch is laid over the working tree
    assert [h.id for h in fresh.search("overlay memories branch").results] == [added.id]
    assert fresh.read(added.id or "").type == "memory"
    second = fresh.add("A second overlay memory, on top of the first.")
    assert second.ok
    assert repo.git("ls-tree", "-r", "--name-only", "vivary/memory").split() == sorted([added.path, second.path])
    fresh.close()


@pytest.mark.parametrize("target", ["release", "elsewhere"])
def test_a_memory_branch_that_is_a_symbolic_ref_is_neither_followed_nor_a_crash(repo: Repo, target: str) -> None:
    """The memory branch made a symbolic ref by someone else: a write followed it onto the branch it named, and one
    to no branch (`elsewhere`) made every answer after the first fail ("Error executing tool"). Over a real server
    session: searches answer, from the working tree alone (the ref is not followed to read either), and `add` is
    refused with the ref, where it points and the fix; no branch moves."""
    repo.commit("init", {**NOTES, ".vivary/memory.toml": '[memory.remember]\nbranch = "vivary/memory"\n'})
    repo.commit("release", {"memories/from-release.md": "---\ntype: memory\n---\n# Release memory\n\nokapi\n"})
    repo.git("branch", "release")
    repo.git("reset", "-q", "--hard", "HEAD~1")
    repo.git("symbolic-ref", "refs/heads/vivary/memory", f"refs/heads/{target}")
    refs = repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads")

    async def session() -> list[Any]:
        async with Client(build_server(MemoryService(repo.path))) as client:
            return [await client.call_tool("search", {"query": "deploy"}),
                    await client.call_tool("add", {"text": "The loading dock closes at six."}),
                    await client.call_tool("search", {"query": "okapi"})]

    first, add, okapi = _run(session)
    assert _data(first)["results"][0]["id"] == "notes/deploy"
    assert add.is_error
    assert (f"refs/heads/vivary/memory is a symbolic ref to refs/heads/{target}, so Git would move that branch "
            "instead") in _text(add)
    assert "`git symbolic-ref --delete refs/heads/vivary/memory`" in _text(add)
    assert _data(okapi)["results"] == []  # release's memories are not laid over the working tree
    assert repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads") == refs
    assert repo.git("status", "--porcelain") == ""


def test_hybrid_when_the_semantic_index_is_fresh_and_a_cosine_probe(repo: Repo, cli: Any) -> None:
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    repo.commit("init", {**NOTES, ".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n',
                         "memories/deploy-days.md": "---\ntype: memory\n---\n# Deploy days\n\n"
                         "Deploys happen on Tuesdays and never on Fridays.\n"})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    service = MemoryService(repo.path)
    ans = service.search("which weekday do we ship releases")
    assert ans.mode == "hybrid" and "fresh" in ans.mode_reason
    assert ans.results[0].id == "memories/deploy-days"
    dup = service.add("Deploys happen on Tuesdays, never on Fridays!")
    assert not dup.ok and dup.probe == "cosine" and dup.duplicate is not None and dup.verdict == "duplicate"
    assert dup.duplicate.id == "memories/deploy-days" and dup.duplicate.score >= 0.92
    assert service.add("The coffee machine is on the third floor.").ok
    after = service.search("coffee machine floor")
    assert after.mode == "hybrid" and "embedded" in after.mode_reason  # written through (test_mcp_writethrough.py)
    assert after.results[0].id == "memories/the-coffee-machine-is-on-the-third-floor"
    service.close()


def test_a_symlinked_note_at_start_is_refused_by_each_tool_not_by_the_start(repo: Repo, tmp_path: Any) -> None:
    """A note that is a symbolic link stopped the server at start: the host saw only "Connection closed", the
    reason went to stderr. The server starts now and each tool, `status` too, answers the refusal naming the
    link and what to do, as when the link appears while it runs; once the link is gone it serves. The link's
    target is never read."""
    _seed(repo)
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("# Secret\n\nThe vault password is quokka-aubergine-42.\n")
    (repo.path / "linked-secret.md").symlink_to(secret)

    async def session() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with Client(_stdio(repo)) as client:
            for tool, args in (("status", {}), ("search", {"query": "vault password"}),
                               ("read", {"id": "notes/deploy"}),
                               ("add", {"text": "The cafeteria closes at 3pm on Fridays."})):
                answer = await client.call_tool(tool, args)
                got[tool] = (answer.is_error, _text(answer))
            (repo.path / "linked-secret.md").unlink()
            got["after"] = _data(await client.call_tool("search", {"query": "deploy runbook"}))
        return got

    got = _run(session)
    for tool in ("status", "search", "read", "add"):
        is_error, text = got[tool]
        assert is_error, (tool, text)
        assert "refusing 'linked-secret.md': it is a symbolic link" in text, (tool, text)
        assert "replace it with the file itself" in text and "quokka" not in text
    assert got["after"]["results"][0]["id"] == "notes/deploy"
    assert repo.git("log", "--format=%s").count("\n") == 1  # the refused add committed nothing


def test_a_refusal_of_gits_reaches_the_agent_with_gits_own_words(repo: Repo) -> None:
    """A tool error carries the lines Git said under vivary's message, as the CLI prints them: a clean filter that
    fails stops the working tree from being read, and the agent is told which file and why."""
    _seed(repo)

    async def session() -> Any:
        async with Client(_stdio(repo)) as client:
            _data(await client.call_tool("search", {"query": "anything"}))
            repo.git("config", "filter.boom.clean", "false")
            repo.git("config", "filter.boom.required", "true")
            repo.write({".gitattributes": "*.md filter=boom\n", "fresh.md": "# Fresh\n"})
            return await client.call_tool("search", {"query": "anything"})

    answer = _run(session)
    assert answer.is_error
    said = _text(answer)
    assert "could not read the working tree" in said and "Git said:" in said, said
    assert "clean filter 'boom' failed" in said, said


def test_search_refuses_an_edge_that_names_neither_field_nor_target(repo: Repo) -> None:
    """`edge` is checked as the CLI's `--edge` is: `''` or `':'` would match every edge, so it is a tool error that
    names the argument and the forms it takes, and a well-formed edge next to it does not make it pass."""
    _seed(repo)

    async def session() -> list[Any]:
        async with Client(build_server(MemoryService(repo.path))) as client:
            return [await client.call_tool("search", {"query": "deploy", "edge": edge})
                    for edge in ([""], [":"], [" : "], ["related", ":"], ["related"], [":notes/deploy"])]

    *refused, field, target = _run(session)
    for answer in refused:
        assert answer.is_error, answer.content
        said = _text(answer)
        assert "edge: expected FIELD, FIELD:TARGET or :TARGET, got " in said, said
    assert _data(field)["results"] == [] and _data(target) is not None




@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
def test_the_server_collects_cycles_for_as_long_as_it_serves(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                              transport: str) -> None:
    """A command runs with the cyclic collector off (main.main); the server is one command that lasts all day,
    and every write's snapshot and index session it left in a cycle stayed: its RSS grew ~1 MB a call over a
    soak of 600 memory writes and searches (bench/bench_mcp_soak.py). It serves with the collector on."""
    import gc

    from vivary_git.mcp import server

    _seed(repo)
    serving: list[bool] = []
    monkeypatch.setattr(server, "serve_stdio", lambda service: serving.append(gc.isenabled()))
    monkeypatch.setattr(server, "serve_http", lambda service, **_: serving.append(gc.isenabled()))
    assert cli("mcp", "--transport", transport, "--port", "0", cwd=repo.path).code == 0
    assert serving == [True]
