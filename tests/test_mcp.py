"""`git vivary mcp`: driven by the MCP SDK's own client over stdio, streamable HTTP and in-process, and by
an independent client (the MCP Inspector CLI) where it installs."""

from __future__ import annotations

import asyncio
import contextlib
import http.client
import json
import os
import re
import select
import subprocess
import sys
import urllib.parse
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from npm_tools import inspector_cli

from vivary_git.mcp.reads import answer_text, estimate_tokens
from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService

NOTES = {
    "notes/deploy.md": "---\ntags: [ops]\n---\n# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
    "README.md": "# Home\n\nSee [[notes/deploy]].\n",
}


HOST_CORE = {"search", "read", "add", "update", "link", "unlink", "dream", "status", "onboard", "edit", "retire",
             "forget", "move", "recent", "context"}


def _seed(repo: Repo) -> None:
    repo.commit("init", NOTES)


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


def _start_http(repo: Repo, env: dict[str, str] | None = None, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vivary_git.main", "mcp", "--transport", "streamable-http", "--port", "0", *extra],
        cwd=repo.path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, **(env or {})),
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise AssertionError(f"the server did not start (exit {proc.wait()})")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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
    assert "'drafts/plan-b.md' is private (.gitignore:1:drafts/)" in joined
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


# The initialize request every raw client here sends first (a session of MCP 2025-06-18).
_INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})


class _RawPipe:
    """The stdio server spoken to in raw lines (no SDK client sends what these tests send). Unbuffered, stderr to a
    file: answers that arrive together must not wait in a buffer select() cannot see (a test once sat 394 s under
    load until some later write woke it), nor the server on a full pipe."""

    def __init__(self, repo: Repo) -> None:
        self.log = repo.path.parent / "mcp-stderr.log"
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "vivary_git.main", "mcp"], cwd=repo.path,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0)

    def send(self, line: str | bytes) -> None:
        """One line: text as UTF-8, bytes as they are."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def line(self) -> str:
        """The next answer's line, as the server wrote it."""
        ready, _, _ = select.select([self.proc.stdout], [], [], 600)  # a failure mode (no answer), not a time limit
        assert ready, f"no answer; server said: {self.log.read_text(errors='replace')}"
        return self.proc.stdout.readline().decode()  # type: ignore[union-attr]

    def initialise(self) -> None:
        self.send(_INITIALIZE)
        self.line()
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


@contextlib.contextmanager
def _raw_pipe(repo: Repo) -> Iterator[_RawPipe]:
    """A `_RawPipe` to a server on `repo`, initialised; its input closed and the server waited for on leaving."""
    pipe = _RawPipe(repo)
    try:
        pipe.initialise()
        yield pipe
    finally:
        assert pipe.proc.stdin is not None
        pipe.proc.stdin.close()
        pipe.proc.wait(timeout=60)


def test_a_line_the_sdk_cannot_read_is_answered_not_dropped(repo: Repo) -> None:
    """Over stdio, a request the SDK's parser refuses got no answer and the host waited for ever: a query cut in
    the middle of an emoji (JavaScript writes the lone half as `\\ud83d`), arguments nested 300 deep, a line cut
    short. Each is answered now: mended and served (U+FFFD for the lone half; the deep value a wrong argument),
    or a JSON-RPC error carrying the request's id. Raw lines on a pipe: no SDK client can send them."""
    _seed(repo)
    with _raw_pipe(repo) as pipe:
        def answers(count: int) -> dict[Any, Any]:
            got: dict[Any, Any] = {}
            while len(got) < count:
                message = json.loads(pipe.line())
                got[message.get("id")] = message
            return got

        call = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":%s}}}'
        pipe.send(call % (2, '"deploy \\ud83d"'))
        pipe.send(call % (3, "[" * 300 + "]" * 300))
        pipe.send('{"jsonrpc":"2.0","id":"cut","method":"tools/ca')
        pipe.send(call % (4, '"deploy"'))
        got = answers(4)
    assert got[2]["result"]["structuredContent"]["query"] == "deploy \ufffd"
    assert got[2]["result"]["structuredContent"]["results"][0]["id"] == "notes/deploy"
    assert got[3]["result"]["isError"] and "query" in got[3]["result"]["content"][0]["text"]
    assert got["cut"]["error"] == {"code": -32700, "message": "the request is not valid JSON"}
    assert got[4]["result"]["structuredContent"]["results"][0]["id"] == "notes/deploy"
    assert pipe.proc.returncode == 0


def test_every_json_rpc_line_on_stdio_gets_its_answer(repo: Repo) -> None:
    """Lines the SDK reads as something they are not got no answer (a host's call waited for ever) or the wrong
    one: no method, a batch, an object for the id (read as a notification), params a string and jsonrpc "1.0"
    (both answered "not valid JSON" with id null). Each gets a -32600 error now, with the request's id when it
    is an MCP id (a string or an integer), and the server goes on serving. Raw lines: no SDK client sends them."""
    _seed(repo)
    with _raw_pipe(repo) as pipe:
        got = []
        for line in ('{"jsonrpc":"2.0","id":13}',
                     '[{"jsonrpc":"2.0","id":12,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"},'
                     '{"jsonrpc":"2.0","method":"notifications/initialized"}]',
                     '[]',
                     '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
                     '{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
                     '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":"search"}',
                     '{"jsonrpc":"1.0","id":14,"method":"tools/list"}',
                     '{"jsonrpc":"2.0","id":16,"method":"tools/list"}'):
            pipe.send(line)
            got.append(json.loads(pipe.line()))
            if line.startswith("[{"):
                got.append(json.loads(pipe.line()))  # a batch: one error for each request in it with an id
    *errors, served = got
    assert [(e["id"], e["error"]["code"]) for e in errors] == [
        (13, -32600), (12, -32600), ("b", -32600), (None, -32600), (None, -32600), (None, -32600), (15, -32600),
        (14, -32600)]
    said = [e["error"]["message"] for e in errors]
    assert 'no "method"' in said[0]
    assert all("batches are not supported" in m for m in said[1:4])
    assert 'the request\'s "id" is an object' in said[4] and "string or an integer" in said[4]
    assert 'the request\'s "id" is null' in said[5]
    assert said[6] == 'the request\'s "params" must be an object, not a string'
    assert said[7] == 'the request\'s "jsonrpc" must be "2.0" (got "1.0")'
    assert served["id"] == 16 and "search" in {t["name"] for t in served["result"]["tools"]}
    assert pipe.proc.returncode == 0


def test_every_request_id_json_rpc_allows_is_answered_with_that_id(repo: Repo) -> None:
    """JSON-RPC wants an answer's id the same as its request's: the host's call waits for that id. A number MCP does
    not allow (`1.5`, `2.0`, `1e400`) was answered with id null, so the call waited for ever; a line cut short had
    `"id":1.5` answered as request 1 (another call's id) and a 30-digit id as its first 18 digits; a batch left its
    `1.5` call unanswered. Each is answered now with the id as the request spelled it; an id that cannot be read (an
    object, an array, a boolean, a number the cut may have shortened) with null. An id of 5,000 digits (more than
    Python reads) was answered "not valid JSON": it is valid, and now said to be too long, with that id.
    Raw lines: no SDK client sends them."""
    _seed(repo)

    def answer() -> tuple[str, Any]:
        return _spelled(pipe.line())

    big = "123456789012345678901234567890"
    ping = '{"jsonrpc":"2.0","id":%s,"method":"ping"}'
    with _raw_pipe(repo) as pipe:
        got = []
        for rid in ("1.5", "2.0", "1e2", "-1.5e-7", "1.0e400", "-3", "0", big, "-" + big, '"s"', "true", "[1]"):
            pipe.send(ping % rid)
            got.append((rid, *answer()))
        for line in ('{"jsonrpc":"2.0","id":1.5,"method":"tools/ca',
                     '{"jsonrpc":"2.0","id":' + big + ',"method":"tools/',
                     '{"jsonrpc":"2.0","id":12'):
            pipe.send(line)
            got.append((line, *answer()))
        pipe.send(f"[{ping % '2.5'},{ping % '7'}]")
        batch = [answer(), answer()]
        pipe.send(ping % HUGE)
        huge = answer()
        pipe.send(_SEARCH % ("17", HUGE))
        argument = answer()
        pipe.send(ping % "16")
        last = answer()
    assert [(sent, rid) for sent, rid, _ in got] == [
        ("1.5", "1.5"), ("2.0", "2.0"), ("1e2", "1e2"), ("-1.5e-7", "-1.5e-7"), ("1.0e400", "1.0e400"), ("-3", "-3"),
        ("0", "0"), (big, big), ("-" + big, "-" + big), ('"s"', '"s"'), ("true", "null"), ("[1]", "null"),
        (got[12][0], "1.5"), (got[13][0], big), (got[14][0], "null")]
    codes = [a.get("error", {}).get("code") for _, _, a in got]
    assert codes == [-32600] * 5 + [None] * 5 + [-32600] * 2 + [-32700] * 3
    assert 'the request\'s "id" is a number with a fraction or an exponent' in got[1][2]["error"]["message"]
    assert [(rid, a["error"]["code"]) for rid, a in batch] == [("2.5", -32600), ("7", -32600)]
    assert huge[0] == HUGE and huge[1]["error"] == {"code": -32600, "message": _TOO_LONG_ID}
    assert argument[0] == "17" and argument[1]["error"] == {"code": -32600, "message": _TOO_LONG_ARGUMENT}
    assert last[0] == "16" and last[1]["result"] == {}
    assert pipe.proc.returncode == 0


HUGE = "9" * 5000  # an integer of more digits than Python reads (4,300): valid JSON all the same
_SEARCH = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":"deploy",' \
          '"top_k":%s}}}'
_TOO_LONG_ID = ('the request\'s "id" is an integer of 5,000 digits, more than the 4,300 this server reads; send a '
                "shorter one, or a string")
_TOO_LONG_ARGUMENT = ("the request holds an integer of 5,000 digits, more than the 4,300 this server reads: send a "
                      "shorter number")


def _spelled(text: str) -> tuple[str, Any]:
    """An answer's id as written (its JSON text: `1.5` is not `1.50`, nor 5,000 digits anything Python reads), and
    the answer. No answer at all (HTTP 202's empty body) is "no answer"."""
    if not text:
        return "no answer", {}
    got = json.loads(text, parse_float=lambda t: ("spelled", t),
                     parse_int=lambda t: ("spelled", t) if len(t) > 18 else int(t))
    rid = got.get("id")
    return (rid[1] if isinstance(rid, tuple) else json.dumps(rid)), got


def _http(url: str, body: str | bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """POST `body` (text as UTF-8, bytes as they are) to the server at `url` on loopback as a client writes it: the
    status and the body (an SSE stream's one message, or JSON). A session's id, when the answer opens one, is kept
    in `headers`."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=600)  # a failure mode, no limit
    try:
        conn.request("POST", parts.path, body=body.encode() if isinstance(body, str) else body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
        resp = conn.getresponse()
        said = resp.read().decode()
    finally:
        conn.close()
    if headers is not None and resp.headers["Mcp-Session-Id"]:
        headers["Mcp-Session-Id"] = resp.headers["Mcp-Session-Id"]
    data = [line[len("data: "):] for line in said.splitlines() if line.startswith("data: ")]
    return resp.status, data[0] if data else said


def _stdio_answers(repo: Repo, lines: Sequence[str | bytes]) -> list[Any]:
    """What a stdio server on `repo` answers each of `lines`, sent one at a time, each answer read as JSON."""
    with _raw_pipe(repo) as pipe:
        answers = []
        for line in lines:
            pipe.send(line)
            answers.append(json.loads(pipe.line()))
    return answers


@contextlib.contextmanager
def _http_session(repo: Repo) -> Iterator[Callable[[str | bytes], tuple[int, str]]]:
    """A streamable HTTP server on `repo` with a session open (initialised, MCP 2025-06-18): what POSTs a body in
    that session (`_http`); the server stopped on leaving."""
    proc, url = _start_http(repo)
    try:
        session = {"Mcp-Protocol-Version": "2025-06-18"}
        assert _http(url, _INITIALIZE, session)[0] == 200
        yield lambda body: _http(url, body, session)
    finally:
        _stop(proc)


def test_over_http_too_every_request_id_json_rpc_allows_is_answered_with_that_id(repo: Repo) -> None:
    """Over streamable HTTP the SDK took a request whose id MCP does not allow (`1.5`, `true`, null) for a
    notification: 202, no body, and the client waited for ever; an id of 5,000 digits was "Parse error: number
    out of range" with id null. Each gets stdio's answer now (`wire.refusal`, one decision): 400 and a -32600
    error with the id as written, null where it cannot be; a session's requests, the SDK's 2026 single POSTs and
    an error a client posts with id null (JSON-RPC's own) are served as before. The token, Host, Origin,
    Content-Type and the SDK's body limit are checked first. Raw POSTs on loopback: no SDK client sends them."""
    _seed(repo)
    token = "t0ken-for-the-id-tests-0123456789"
    proc, url = _start_http(repo, {"VIVARY_MCP_TOKEN": token})
    auth = {"Authorization": f"Bearer {token}"}
    try:
        session = {**auth, "Mcp-Protocol-Version": "2025-06-18"}
        status, said = _http(url, _INITIALIZE, session)
        assert status == 200 and "Mcp-Session-Id" in session, said
        assert _http(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', session)[0] == 202
        ping = '{"jsonrpc":"2.0","id":%s,"method":"ping"}'
        long = "8" * 4300  # as many digits as Python reads: served
        got = []
        for rid in ("1.5", "2.0", "1e2", "-1.5e-7", "1.0e400", HUGE, "-" + HUGE, "true", "null", '{"a":1}', "[1]",
                    "7", '"s"', long):
            status, said = _http(url, ping % rid, session)
            got.append((rid, status, *_spelled(said)))
        status, said = _http(url, _SEARCH % ("17", HUGE), session)
        argument = (status, *_spelled(said))
        modern = _http(url, ping % "1.5", {**auth, "Mcp-Protocol-Version": "2026-07-28"})
        posted_error = _http(url, '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"no JSON"}}', session)
        first = [_http(url, ping % "1.5", headers)[0] for headers in (
            {}, {**session, "Host": "attacker.example"}, {**session, "Origin": "http://attacker.example"},
            {**session, "Content-Type": "text/plain"})]
        padded = '{"jsonrpc":"2.0","id":1.5,"method":"ping","params":{"pad":"%s"}}' % ("x" * (5 << 20))
        first.append(_http(url, padded, session)[0])
        last = _http(url, ping % "16", session)
    finally:
        _stop(proc)
    assert [(sent, status, rid) for sent, status, rid, _ in got] == [
        ("1.5", 400, "1.5"), ("2.0", 400, "2.0"), ("1e2", 400, "1e2"), ("-1.5e-7", 400, "-1.5e-7"),
        ("1.0e400", 400, "1.0e400"), (HUGE, 400, HUGE), ("-" + HUGE, 400, "-" + HUGE), ("true", 400, "null"),
        ("null", 400, "null"), ('{"a":1}', 400, "null"), ("[1]", 400, "null"), ("7", 200, "7"), ('"s"', 200, '"s"'),
        (long, 200, long)]
    codes = [a.get("error", {}).get("code") for *_, a in got]
    assert codes == [-32600] * 11 + [None] * 3
    said = [a["error"]["message"] for *_, a in got[:11]]
    assert said[0] == ('the request\'s "id" is a number with a fraction or an exponent; an MCP request id is a '
                       "string or an integer (a notification has no id)")
    assert said[5] == _TOO_LONG_ID and said[7].startswith('the request\'s "id" is a boolean')
    assert argument == (400, "17", {"jsonrpc": "2.0", "id": 17,
                                    "error": {"code": -32600, "message": _TOO_LONG_ARGUMENT}})
    assert modern[0] == 400 and _spelled(modern[1])[0] == "1.5" and '"code":-32600' in modern[1]
    assert posted_error == (202, "")
    assert first == [401, 421, 403, 400, 413]  # no token, a rebound Host or Origin, no JSON, over 4 MiB: as before
    assert last[0] == 200 and _spelled(last[1]) == ("16", {"jsonrpc": "2.0", "id": 16, "result": {}})


def test_a_number_id_is_kept_from_the_one_reading_of_a_deep_line(repo: Repo) -> None:
    """A request with an id MCP does not allow (`1.5`) was read twice, the second time to keep the id's spelling, one
    call deeper: params nested just short of what Python reads (976 deep over stdio) passed the first reading and
    raised out of the second, and the stdio server stopped. The spelling is kept from the one reading now: every
    depth is answered -32600 with id 1.5 (past what Python reads, said to be nested too deep) and the server goes
    on serving."""
    from vivary_git.mcp import wire

    _seed(repo)
    line = '{"jsonrpc":"2.0","id":1.5,"method":"ping","params":{"a":%s}}'
    for depth in range(1, sys.getrecursionlimit() + 50):  # in process first: where the depth falls here, at once
        served, answers = wire.screened(line % ("[" * depth + "]" * depth), ValueError("not read"))
        said = [a.message.model_dump_json() for a in answers]
        assert served is None and len(said) == 1 and said[0].startswith('{"jsonrpc":"2.0","id":1.5,"error":'), depth
    with _raw_pipe(repo) as pipe:
        codes = set()
        for depth in range(1, sys.getrecursionlimit() + 50):
            pipe.send(line % ("[" * depth + "]" * depth))
            said = pipe.line()
            assert said.startswith('{"jsonrpc":"2.0","id":1.5,"error":{"code":-32'), (depth, said[:200])
            codes.add((json.loads(said)["error"]["code"], json.loads(said)["error"]["message"] == _TOO_DEEP))
        pipe.send('{"jsonrpc":"2.0","id":16,"method":"ping"}')
        assert json.loads(pipe.line()) == {"jsonrpc": "2.0", "id": 16, "result": {}}
    assert codes == {(-32600, False), (-32600, True)}
    assert pipe.proc.returncode == 0


_BATCH = ('[{"jsonrpc":"2.0","id":12,"method":"ping"},{"jsonrpc":"2.0","id":"b","method":"tools/list"},'
          '{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2.5,"method":"ping"},'
          '{"jsonrpc":"2.0","id":true,"method":"ping"}]')
_DEEP = ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":'
         + "[" * 5000 + "]" * 5000 + "}}}")  # valid JSON, deeper than Python's reader goes
_TOO_DEEP = ("the request is nested too deep to read: Python reads JSON to about 1,000 levels of arrays and objects "
             "(its recursion limit), and this server's tools take arguments nested at most 64: send it nested less "
             "deep")


def test_over_http_a_batch_gets_the_errors_stdio_gives_it_as_one_json_array(repo: Repo) -> None:
    """A batch (MCP 2025-06-18 removed JSON-RPC batching) got stdio's answer on stdio, an error for each request in it
    with an id, so no call waits; over HTTP the SDK's `-32602 "Validation error: 4 validation errors for union[...]"`,
    id null, for the whole batch. It gets stdio's errors now (`wire.batch_refusal`, one decision), 400 and, as
    JSON-RPC answers a batch, one JSON array of them; a batch with no request with an id (`[]`, notifications only)
    gets the one error, id null, as JSON-RPC answers an empty batch. Raw lines and POSTs: no SDK client sends them."""
    _seed(repo)
    with _raw_pipe(repo) as pipe:
        pipe.send(_BATCH)
        stdio = [pipe.line().strip() for _ in range(3)]
        pipe.send("[]")
        stdio_empty = pipe.line().strip()
    with _http_session(repo) as post:
        batch = post(_BATCH)
        empty = post("[]")
        notes = post('[{"jsonrpc":"2.0","method":"notifications/initialized"}]')
        last = post('{"jsonrpc":"2.0","id":16,"method":"ping"}')
    assert batch == (400, "[" + ",".join(stdio) + "]")
    assert [(_spelled(line)[0], _spelled(line)[1]["error"]["code"]) for line in stdio] == [
        ("12", -32600), ('"b"', -32600), ("2.5", -32600)]
    said = json.loads(batch[1])[0]["error"]["message"]
    assert said.startswith("batches are not supported (MCP 2025-06-18 removed JSON-RPC batching)"), said
    assert empty == notes == (400, stdio_empty)
    assert json.loads(stdio_empty)["id"] is None and json.loads(stdio_empty)["error"]["code"] == -32600
    assert last[0] == 200 and json.loads(last[1]) == {"jsonrpc": "2.0", "id": 16, "result": {}}


def test_json_nested_deeper_than_python_reads_is_said_to_be_too_deep_not_invalid(repo: Repo) -> None:
    """Valid JSON nested deeper than Python's reader goes (its RecursionError) was answered -32700 "the request is
    not valid JSON" on stdio and the SDK's "-32700 Parse error: recursion limit exceeded", id null, over HTTP. It is
    valid, and on both transports now answered -32600, said to be nested too deep and the limit given, with the
    request's id when it stands near the line's start; the server goes on serving. Raw lines and POSTs."""
    _seed(repo)
    lost_id = '{"jsonrpc":"2.0","method":"ping","params":{"a":%s},"id":3}' % ("[" * 5000 + "]" * 5000)
    sent = (_DEEP % "7", _DEEP % '"s"', lost_id, '{"jsonrpc":"2.0","id":16,"method":"ping"}')
    stdio = _stdio_answers(repo, sent)
    with _http_session(repo) as post:
        http = [post(body) for body in sent]
    assert [status for status, _ in http] == [400, 400, 400, 200]
    assert [json.loads(said) for _, said in http] == stdio
    deep = {"code": -32600, "message": _TOO_DEEP}
    assert stdio[:3] == [{"jsonrpc": "2.0", "id": rid, "error": deep} for rid in (7, "s", None)]
    assert stdio[3] == {"jsonrpc": "2.0", "id": 16, "result": {}}


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


def test_over_http_a_body_only_python_reads_is_mended_and_served_and_no_request_is_answered_as_on_stdio(
        repo: Repo) -> None:
    """Over stdio a line the SDK's parser refuses but Python's reads is mended and served (arguments nested 300
    deep cut to null at 64, a lone surrogate half U+FFFD) and JSON that is no request is answered -32600 saying
    what is wrong; over HTTP the SDK answered the first `-32700 "Parse error: recursion limit exceeded ..."` and
    `"... unexpected end of hex escape ..."` and the second `-32602 "Validation error: ..."`, all with id null.
    Each POST gets stdio's answer now (`wire.mended`, one decision): the mended request is served (the SDK given
    it re-encoded), the rest 400 with stdio's error and id. Raw lines and POSTs: no SDK client sends them."""
    _seed(repo)
    call = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":%s}}}'
    sent = (call % (3, "[" * 300 + "]" * 300), call % (4, '"deploy \\ud83d"'), "42", '"x"', "null",
            '{"jsonrpc":"2.0","id":13}', '{"jsonrpc":"2.0","id":"p","method":"ping","params":"x"}',
            '{"jsonrpc":"2.0","id":16,"method":"ping"}')
    stdio = _stdio_answers(repo, sent)
    with _http_session(repo) as post:
        http = [post(body) for body in sent]
        # 3.5 MB as sent, over the SDK's 4 MiB mended (each 1e15 written 1000000000000000.0): said, not served
        numbers = ",".join(["1e15"] * 700_000)
        grown = post(call % (9, '{"n":[' + numbers + '],"deep":' + "[" * 300 + "]" * 300 + "}"))
    assert [status for status, _ in http] == [200, 200, 400, 400, 400, 400, 400, 200]
    assert [json.loads(said) for _, said in http] == stdio
    assert stdio[0]["result"]["isError"] and "query" in stdio[0]["result"]["content"][0]["text"]
    assert stdio[1]["result"]["structuredContent"]["query"] == "deploy \ufffd"
    assert [(a["id"], a["error"]["code"], a["error"]["message"]) for a in stdio[2:7]] == [
        (None, -32600, "a request must be a JSON object, not a number"),
        (None, -32600, "a request must be a JSON object, not a string"),
        (None, -32600, "a request must be a JSON object, not null"),
        (13, -32600, 'the request has no "method": a JSON-RPC request names the method it calls'),
        ("p", -32600, 'the request\'s "params" must be an object, not a string')]
    assert stdio[7] == {"jsonrpc": "2.0", "id": 16, "result": {}}
    assert grown[0] == 400 and json.loads(grown[1])["id"] == 9, grown
    assert json.loads(grown[1])["error"]["message"].startswith("the request is too large to serve mended"), grown
