"""What an MCP host sees of `git vivary mcp` before and around a call: every tool's title and hints, the enums and
bounds of its arguments, the capabilities, the change notifications, answers that are compact JSON within their
budget, and the server entry the docs recommend. Driven by the MCP SDK's own client (over stdio where the wire
matters) and by an independent one, the MCP Inspector CLI, where npm can install it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, get_args

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

import anyio
import mcp.types as types
import msgspec
from conftest import Repo
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from npm_tools import inspector_cli

from vivary_git.config import DURABILITY
from vivary_git.errors import UsageError
from vivary_git.mcp import server as server_mod
from vivary_git.mcp.profiles import PROFILES
from vivary_git.mcp.reads import estimate_tokens
from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService
from vivary_git.memory.writes.history import OPS

DOCS = Path(__file__).resolve().parents[1]
HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")
# What each tool says of itself (docs/mcp.md#tool-metadata): read-only, destructive, idempotent, open world
EXPECTED = {
    "search": (True, False, True, False),
    "read": (True, False, True, False),
    "status": (True, False, True, False),
    "recent": (True, False, True, False),
    "context": (True, False, True, False),
    "add": (False, True, False, True),  # `supersede` archives the memory it replaces; `url` fetches a page
    "update": (False, True, True, False),
    "edit": (False, True, False, False),  # appending twice appends twice
    "link": (False, False, True, False),  # the one write that only adds
    "unlink": (False, True, True, False),
    "retire": (False, True, True, False),
    "forget": (False, True, True, False),
    "move": (False, True, True, False),
    "dream": (False, True, False, False),
    "onboard": (False, True, True, False),
}
BODY = "Deploy notes. " + "The deploy pipeline runs smoke tests before it shifts traffic. " * 40
NOTES = {f"notes/d{i}.md": f"# Deploy {i}\n\n{BODY}[[notes/d{(i + 1) % 6}]]\n" for i in range(6)}


def _run(coro: Callable[[], Awaitable[Any]]) -> Any:
    return asyncio.run(coro())


def _stdio(repo: Repo, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp", *extra],
                                 cwd=str(repo.path), env=dict(os.environ))


def _listed(server: Any, mode: str = "legacy") -> list[dict[str, Any]]:
    async def session() -> list[dict[str, Any]]:
        async with Client(server, mode=mode) as client:
            return [t.model_dump(by_alias=True, exclude_none=True, mode="json")
                    for t in (await client.list_tools()).tools]

    listed: list[dict[str, Any]] = _run(session)
    return listed


def _check_tool_metadata(tools: list[dict[str, Any]], profile: str) -> None:
    assert sorted(t["name"] for t in tools) == sorted(PROFILES[profile])
    assert set(EXPECTED) == set(server_mod.TOOLS) == set(PROFILES["host-core"])
    for tool in tools:
        name, notes = tool["name"], tool.get("annotations", {})
        assert tool.get("title") and notes.get("title") == tool["title"], name
        assert [h for h in HINTS if not isinstance(notes.get(h), bool)] == [], (name, notes)  # all four, explicit
        assert tuple(notes[h] for h in HINTS) == EXPECTED[name], (name, notes)
        if name in PROFILES["read-only"]:
            assert notes["readOnlyHint"] is True, name
        else:
            assert notes["readOnlyHint"] is False, name  # offered only to hosts that may write
        reaches_network = {"url", "allow_network"} & set(tool["inputSchema"]["properties"])
        if reaches_network:
            assert notes["openWorldHint"] is True, name


@pytest.mark.parametrize("profile", ["host-core", "read-only"])
def test_every_tool_has_a_title_and_its_four_hints(repo: Repo, profile: str) -> None:
    repo.commit("init", NOTES)
    _check_tool_metadata(_listed(build_server(MemoryService(repo.path, profile=profile))), profile)


def test_metadata_over_stdio_as_hosts_start_it(repo: Repo) -> None:
    repo.commit("init", NOTES)
    tools = {t["name"]: t for t in _listed(_stdio(repo))}
    _check_tool_metadata(list(tools.values()), "host-core")
    assert tools["search"]["annotations"] == {"title": "Search notes and memories", "readOnlyHint": True,
                                              "destructiveHint": False, "idempotentHint": True,
                                              "openWorldHint": False}
    assert tools["add"]["annotations"]["openWorldHint"] is True  # `url` fetches a web page
    assert "\n        " not in tools["add"]["description"]  # the docstring's indentation is not shown


def test_a_tool_without_its_line_is_refused_at_start(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit("init", NOTES)
    monkeypatch.delitem(server_mod.TOOLS, "link")
    with pytest.raises(RuntimeError, match="'link' has no line in TOOLS"):
        build_server(MemoryService(repo.path))


def test_enums_and_bounds_are_in_the_schema() -> None:
    assert get_args(server_mod.Durability) == DURABILITY
    assert get_args(server_mod.Mode) == ("auto", "text", "semantic", "hybrid")
    assert get_args(server_mod.Inspect) == ("status", "runs", "tasks")
    assert get_args(server_mod.Op) == OPS
    assert get_args(server_mod.DateOf) == ("note", "commit")


def test_out_of_range_and_unknown_values_are_refused_by_the_schema(repo: Repo) -> None:
    repo.commit("init", NOTES)
    head = repo.git("rev-parse", "HEAD")

    async def session() -> tuple[dict[str, Any], list[tuple[str, str]]]:
        async with Client(_stdio(repo), mode="legacy") as client:
            tools = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            said = []
            for name, args in [("search", {"query": "deploy", "budget": -5}),
                               ("search", {"query": "deploy", "budget": 10**9}),
                               ("search", {"query": "deploy", "mode": "fast"}),
                               ("search", {"query": "deploy", "date": "yesterday"}),
                               ("search", {"query": "deploy", "top_k": 0}),
                               ("search", {"query": "x" * 2001}),
                               ("read", {"id": "notes/d0", "neighbors": 9}),
                               ("add", {"text": "Deploys on Tuesdays.", "durability": "forever"}),
                               ("update", {"id": "notes/d0", "durability": "forever"}),
                               ("dream", {"inspect": "everything"}),
                               ("edit", {"id": "notes/d0", "durability": "forever"}),
                               ("context", {"id": "notes/d0", "budget": -5}),
                               ("context", {"id": "notes/d0", "budget": 10**9}),
                               ("recent", {"limit": 0}),
                               ("recent", {"ops": ["delete"]}),
                               ("read", {"id": "z" * 100_000}),
                               ("search", {"query": "deploy", "path": ["z" * 100_000]}),
                               ("search", {"query": "deploy", "type": ["t"] * 65}),
                               ("link", {"source": "notes/d0", "field": "f" * 5000, "target": "notes/d1"})]:
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args)
                said.append((name, " ".join(getattr(c, "text", "") for c in result.content)))
            return tools, said

    tools, said = _run(session)
    search = tools["search"]["properties"]
    assert (search["budget"]["minimum"], search["budget"]["maximum"]) == (0, 100_000)
    assert search["mode"]["enum"] == ["auto", "text", "semantic", "hybrid"]
    assert search["date"]["enum"] == ["note", "commit"]
    context = tools["context"]["properties"]
    assert (context["budget"]["minimum"], context["budget"]["maximum"]) == (0, 100_000)
    assert tools["recent"]["properties"]["ops"]["anyOf"][0]["items"]["enum"] == list(OPS)
    assert tools["edit"]["properties"]["durability"]["anyOf"][0]["enum"] == list(DURABILITY)
    assert search["query"]["maxLength"] == 2000
    assert tools["add"]["properties"]["durability"]["anyOf"][0]["enum"] == list(DURABILITY)
    assert tools["dream"]["properties"]["inspect"]["anyOf"][0]["enum"] == ["status", "runs", "tasks"]
    # the SDK's message names the argument and the rule; no traceback
    assert "budget" in said[0][1] and "greater than or equal to 0" in said[0][1]
    assert "budget" in said[1][1] and "less than or equal to 100000" in said[1][1]
    assert "'auto', 'text', 'semantic' or 'hybrid'" in said[2][1]
    assert "'note' or 'commit'" in said[3][1]
    assert "'working', 'durable', 'pinned' or 'ephemeral'" in said[7][1]
    assert "'status', 'runs' or 'tasks'" in said[9][1]
    assert "'working', 'durable', 'pinned' or 'ephemeral'" in said[10][1]
    assert "budget" in said[11][1] and "greater than or equal to 0" in said[11][1]
    assert "budget" in said[12][1] and "less than or equal to 100000" in said[12][1]
    assert "limit" in said[13][1] and "greater than or equal to 1" in said[13][1]
    assert "'add', 'update'" in said[14][1]
    # names and lists of them are bounded: the 100 kB argument is not echoed back (nor logged) whole
    assert "at most 4096 characters" in said[15][1] and len(said[15][1]) < 2000, said[15][1][:300]
    assert "at most 4096 characters" in said[16][1] and len(said[16][1]) < 2000
    assert "at most 64 items" in said[17][1]
    assert "at most 4096 characters" in said[18][1]
    assert tools["read"]["properties"]["id"]["maxLength"] == 4096
    assert search["path"]["anyOf"][0]["maxItems"] == 64 and search["path"]["anyOf"][0]["items"]["maxLength"] == 4096
    assert not [s for s in said if "Traceback" in s[1]]
    assert repo.git("rev-parse", "HEAD") == head  # nothing was written


def test_arguments_are_strict_and_refused_in_words(repo: Repo) -> None:
    """Arguments were loose: an unknown one was ignored (a mistyped `k` got `top_k`'s default in silence),
    `"top_k": true` read as 1, `"top_k": "5"` as 5, and a refusal was pydantic's report ending in a link to its
    documentation. Every tool's schema now says `additionalProperties: false`, and a call is refused naming
    the argument, what was given and what is expected (an unknown one: the arguments the tool takes)."""
    repo.commit("init", NOTES)
    head = repo.git("rev-parse", "HEAD")

    async def session() -> tuple[dict[str, Any], list[str], Any]:
        async with Client(_stdio(repo), mode="legacy") as client:
            schemas = {t.name: t.input_schema for t in (await client.list_tools()).tools}
            said = []
            for name, args in [("search", {"query": "deploy", "k": 2}),
                               ("search", {"query": "deploy", "top_k": True}),
                               ("search", {"query": "deploy", "top_k": "5"}),
                               ("read", {"id": "notes/d0", "include_content": "yes"}),
                               ("search", {"query": 42}),
                               ("search", {}),
                               ("add", {"text": "Deploys on Tuesdays.", "tag": ["ops"]}),
                               ("status", {"verbose": True}),
                               ("search", {"query": "deploy", "path": ["notes/*", 7]})]:
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args)
                said.append(" ".join(getattr(c, "text", "") for c in result.content))
            fine = await client.call_tool("search", {"query": "deploy", "top_k": 2})
            return schemas, said, fine

    schemas, said, fine = _run(session)
    assert {name: schema.get("additionalProperties") for name, schema in schemas.items()} == \
        dict.fromkeys(schemas, False)
    assert said[0].startswith("search: unknown argument 'k'; search takes query, top_k, type, path, ")
    assert said[1] == "search: 'top_k' should be a valid integer, given true (a boolean)"
    assert said[2] == "search: 'top_k' should be a valid integer, given \"5\" (a string)"
    assert said[3] == "read: 'include_content' should be a valid boolean, given \"yes\" (a string)"
    assert said[4] == "search: 'query' should be a valid string, given 42"
    assert said[5] == "search: the argument 'query' is required"
    assert said[6].startswith("add: unknown argument 'tag'; add takes text, title, tags, ")
    assert said[7] == "status: unknown argument 'verbose'; status takes no arguments"
    assert said[8] == "search: 'path[1]' should be a valid string, given 7"
    assert not [s for s in said if "pydantic" in s or "validation error" in s or "http" in s]
    assert not fine.is_error and len(fine.structured_content["results"]) == 2
    assert repo.git("rev-parse", "HEAD") == head  # nothing was written

def test_mcp_help_lists_the_tools_each_profile_serves(repo: Repo) -> None:
    """`git vivary mcp -h` listed 9 tools and a read-only profile of "search, read and status only" while the
    server served 15 and 5: the help is made from the profiles now, and is held here to what the SDK's client
    is served. And `search`'s include_archived names every way a memory is archived, not only a dream."""
    repo.commit("init", NOTES)

    async def served(profile: str) -> dict[str, Any]:
        async with Client(build_server(MemoryService(repo.path, profile=profile))) as client:
            return {t.name: t for t in (await client.list_tools()).tools}

    tools = {profile: _run(lambda profile=profile: served(profile)) for profile in ("host-core", "read-only")}

    def helped(*args: str) -> str:
        out = subprocess.run([sys.executable, "-m", "vivary_git.main", *args], capture_output=True, text=True,
                             env={**os.environ, "COLUMNS": "4000"}, check=True).stdout
        return " ".join(out.split())

    def names(sentence: str) -> set[str]:
        return set(re.split(r", | and ", sentence))

    page = helped("mcp", "-h")
    said = re.search(r"tools (.+?) \(profile host-core\), or (.+?) only \(read-only\)", page)
    assert said is not None, page
    assert names(said.group(1)) == set(tools["host-core"])
    assert names(said.group(2)) == set(tools["read-only"])
    option = re.search(r"read-only: (.+?), and no private", page)
    assert option is not None and names(option.group(1)) == set(tools["read-only"])
    listed = re.search(r"mcp MCP server for agent hosts: ([a-z]+(?:, [a-z]+)*)", helped("-h"))
    assert listed is not None and set(listed.group(1).split(", ")) == set(tools["host-core"])
    archived = tools["host-core"]["search"].input_schema["properties"]["include_archived"]["description"]
    assert all(way in archived for way in ("retire", "supersede", "dream")), archived

def test_search_budget_counts_the_text_the_host_receives(repo: Repo) -> None:
    repo.commit("init", NOTES)

    async def session() -> list[Any]:
        async with Client(_stdio(repo), mode="legacy") as client:
            return [await client.call_tool("search", {"query": "deploy pipeline", "top_k": 6, "include_neighbors": 1,
                                                      "budget": budget}) for budget in (300, 0)]

    trimmed, whole = _run(session)
    for result in (trimmed, whole):
        assert not result.is_error and len(result.content) == 1
        text = result.content[0].text
        # compact JSON, the same as the structured content sent beside it: whichever a host gives the model, the
        # budget counts it once
        assert json.loads(text) == result.structured_content
        assert text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
        assert result.structured_content["estimated_tokens"] == estimate_tokens(text.encode())
    assert estimate_tokens(trimmed.content[0].text.encode()) <= 300
    assert whole.structured_content["estimated_tokens"] > 600  # there was something to trim
    assert [r["id"] for r in trimmed.structured_content["results"]] == ["notes/d0", "notes/d1", "notes/d2",
                                                                        "notes/d3", "notes/d4", "notes/d5"]


def test_context_counts_its_own_figure_in_its_size(repo: Repo) -> None:
    """`estimated_tokens` is the answer's size as sent, its own digits included: sized with a one-digit placeholder
    it came out one short in a quarter of the answers."""
    repo.commit("init", NOTES)
    service = MemoryService(repo.path)
    try:
        for i in range(6):
            for depth in (1, 2):
                for budget in (0, 150, 400, 2000):
                    got = service.context(f"notes/d{i}", depth=depth, budget=budget)
                    text = json.dumps(msgspec.to_builtins(got), ensure_ascii=False, separators=(",", ":"))
                    assert got.estimated_tokens == estimate_tokens(text.encode()), (i, depth, budget)
    finally:
        service.close()


def test_a_dream_due_hint_counts_within_the_budget(repo: Repo) -> None:
    repo.commit("init", NOTES)
    service = MemoryService(repo.path)
    for i in range(12):  # memory events until a dream is due (10)
        assert service.add(f"Memory number {i} is about the deploy pipeline.", force=True).ok
    for budget in (300, 400, 600):
        got = service.search("deploy pipeline memory", top_k=10, budget=budget, mode="text")
        assert got.dream_due, "a dream should be due after 12 memory events"
        text = server_mod._answer(got).content[0]
        assert isinstance(text, types.TextContent)
        assert estimate_tokens(text.text.encode()) <= budget
    service.close()


def test_add_takes_expires_for_an_ephemeral_memory(repo: Repo) -> None:
    repo.commit("init", NOTES)

    async def session() -> list[Any]:
        async with Client(build_server(MemoryService(repo.path)), mode="legacy") as client:
            return [await client.call_tool("add", args) for args in [
                {"text": "The staging box is down until the new year.", "expires": "2099-01-01"},
                {"text": "A memory that has already expired.", "expires": "2001-01-01"},
                {"text": "A pinned memory does not expire.", "expires": "2099-01-01", "durability": "pinned"},
                {"text": "A memory that expires at no time.", "expires": "next week"},
                {"file": "notes/d0.md", "expires": "2099-01-01"},
            ]]

    added, past, pinned, vague, anchor = _run(session)
    assert not added.is_error, added.content
    note = (repo.path / added.structured_content["path"]).read_text()
    assert "durability: ephemeral\n" in note and 'expires: "2099-01-01T00:00:00Z"\n' in note
    said = [" ".join(getattr(c, "text", "") for c in r.content) for r in (past, pinned, vague, anchor)]
    assert all(r.is_error for r in (past, pinned, vague, anchor))
    assert "has passed" in said[0]
    assert "expires is for ephemeral memories, not pinned ones" in said[1]
    assert "is not an ISO date or date-time" in said[2]
    assert "expires does not apply to file, folder or url" in said[3]
    assert repo.git("log", "--format=%s").count("\n") == 2  # init and the one memory


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-11-25"), ("auto", "2026-07-28")])
def test_capabilities_say_what_the_server_has(repo: Repo, mode: str, version: str) -> None:
    repo.commit("init", NOTES)

    async def session() -> Any:
        async with Client(build_server(MemoryService(repo.path)), mode=mode) as client:
            assert client.protocol_version == version
            return client.server_capabilities  # as `initialize` said them, or `server/discover` in 2026

    caps = _run(session)
    assert caps.prompts is None  # no prompts, so no prompts capability
    assert caps.resources is not None and caps.resources.list_changed is True
    assert caps.tools is not None


def test_a_commit_tells_the_host_its_resources_changed(repo: Repo) -> None:
    repo.commit("init", NOTES)
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            seen.append(message.method)

    async def session() -> list[list[str]]:
        after = []
        memory = ""
        async with Client(_stdio(repo), mode="legacy", message_handler=on_message) as client:
            for name, args in [("add", {"text": "Deploys happen on Tuesdays."}),
                               ("search", {"query": "deploy"}),
                               ("add", {"text": "Deploys happen on Tuesdays."}),  # a near-duplicate: no commit
                               ("link", {"source": "notes/d0", "field": "related", "target": "notes/d2"}),
                               ("status", {}),
                               ("dream", {"inspect": "status"}),
                               ("edit", {"append": "Never on Fridays."}),
                               ("move", {"to": "deploy-days"}),
                               ("recent", {}),
                               ("context", {"id": "notes/d0"}),
                               ("retire", {"reason": "the release train replaced it"}),
                               ("forget", {"reason": "it was never true"})]:
                if name in ("edit", "move", "retire", "forget"):
                    args = {"id": memory, **args}
                seen.clear()
                result = await client.call_tool(name, args)
                assert not result.is_error, (name, result.content)
                memory = result.structured_content.get("id", memory) if name in ("add", "move") else memory
                await client.list_tools()  # a round trip: a notification sent with the answer is read by now
                after.append([m for m in seen if m.startswith("notifications/resources/")])
        return after

    after = _run(session)
    changed = ["notifications/resources/list_changed"]
    assert after == [changed, [], [], changed, [], [], changed, changed, [], [], changed, changed]


def test_over_http_too(repo: Repo) -> None:
    """Streamable HTTP opens its sessions another way than stdio: the capabilities and the notification hold."""
    from mcp_servers import _start_http, _stop

    repo.commit("init", NOTES)
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ServerNotification):
            seen.append(message.method)

    async def session() -> Any:
        async with Client(url, mode="legacy", message_handler=on_message) as client:
            assert not (await client.call_tool("add", {"text": "HTTP sessions hear of commits."})).is_error
            return client.server_capabilities

    proc, url = _start_http(repo)
    try:
        caps = _run(session)
    finally:
        _stop(proc)
    assert caps.prompts is None and caps.resources.list_changed is True
    assert "notifications/resources/list_changed" in seen


def test_a_listening_2026_client_hears_of_a_commit(repo: Repo) -> None:
    repo.commit("init", NOTES)

    async def session() -> list[Any]:
        events: list[Any] = []
        async with (Client(build_server(MemoryService(repo.path))) as client,
                    client.listen(resources_list_changed=True) as sub):

            async def collect() -> None:
                async for event in sub:
                    events.append(event)

            async with anyio.create_task_group() as tg:
                tg.start_soon(collect)
                assert not (await client.call_tool("status", {})).is_error
                assert not (await client.call_tool("add", {"text": "Listen streams hear of commits."})).is_error
                await anyio.wait_all_tasks_blocked()  # every event published has reached `collect` by now
                tg.cancel_scope.cancel()
        return events

    assert [type(e).__name__ for e in _run(session)] == ["ResourcesListChanged"]


def _server_entries(text: str) -> list[dict[str, Any]]:
    """Every JSON object a page shows that has a `command`: the server entries it recommends."""
    found = []
    for m in re.finditer(r'\{[^{}]*"command":[^{}]*\}', text):
        found.append(json.loads(m.group(0)))
    return found


def _shape(entry: dict[str, Any]) -> dict[str, Any]:
    """A server entry with its two machine-specific paths named: the `git-vivary` script and the workspace."""
    command, args = Path(entry["command"]), list(entry["args"])
    assert command.is_absolute() and command.name == "git-vivary", entry
    assert args[-2] == "-C" and Path(args[-1]).is_absolute(), entry
    return {**entry, "command": "GIT_VIVARY", "args": [*args[:-1], "WORKSPACE"]}


def test_the_docs_recommend_the_server_entry_bootstrap_host_writes(repo: Repo, cli: Any) -> None:
    repo.write({"tropo.toml": "version = 1\n"})
    written = []
    for kind, config in [("claude-code", ".mcp.json"), ("cursor", ".cursor/mcp.json")]:
        assert cli("bootstrap-host", "--host-kind", kind, cwd=repo.path).code == 0
        written.append(_shape(json.loads((repo.path / config).read_text())["mcpServers"]["vivary"]))
    pages = [DOCS / "README.md", *sorted((DOCS / "docs").glob("*.md"))]
    entries = [(p.name, e) for p in pages for e in _server_entries(p.read_text("utf-8"))]
    assert {name for name, _ in entries} >= {"mcp.md", "hosts.md"}
    for name, entry in entries:  # each, but for its two paths, is what bootstrap-host writes for some host
        assert _shape(entry) in written, (name, entry, written)
    for page in pages:  # the form that fails under a host's bare PATH is shown nowhere as one to use
        assert '"command": "git", "args": ["vivary"' not in page.read_text("utf-8"), page.name


def test_the_written_entry_starts_under_a_bare_path_and_git_vivary_does_not(repo: Repo, cli: Any) -> None:
    repo.commit("init", NOTES)
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=repo.path).code == 0
    entry = json.loads((repo.path / ".mcp.json").read_text())["mcpServers"]["vivary"]
    bare = os.pathsep.join(("/usr/bin", "/bin"))  # what a desktop app hands the servers it starts

    async def session() -> set[str]:
        params = StdioServerParameters(command=entry["command"], args=entry["args"], env={"PATH": bare})
        async with Client(params, mode="legacy") as client:
            return {t.name for t in (await client.list_tools()).tools}

    assert _run(session) == set(PROFILES["host-core"])
    if shutil.which("git-vivary", path=bare) is not None:
        pytest.skip("git-vivary is installed on the bare PATH here, so `git vivary` would start too")
    git = shutil.which("git", path=bare)
    assert git is not None
    proc = subprocess.run([git, "vivary", "mcp"], cwd=repo.path, capture_output=True, text=True, timeout=60,
                          env={"PATH": bare, "HOME": os.environ["HOME"]}, stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode != 0 and "'vivary' is not a git command" in proc.stderr


def test_the_inspector_cli_lists_every_tool_with_its_hints(repo: Repo,
                                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    cmd = [*inspector_cli(tmp_path_factory), "--cli", sys.executable, "-m", "vivary_git.main", "mcp"]
    repo.commit("init", NOTES)

    def inspect(*args: str) -> Any:
        proc = subprocess.run([*cmd, *args], cwd=repo.path, capture_output=True, text=True, timeout=300,
                              check=False)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    tools = inspect("--method", "tools/list")["tools"]
    _check_tool_metadata(tools, "host-core")
    answer = inspect("--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=deploy pipeline",
                     "--tool-arg", "budget=300")
    text = answer["content"][0]["text"]
    assert estimate_tokens(text.encode()) <= 300 and json.loads(text) == answer["structuredContent"]
    refused = inspect("--method", "tools/call", "--tool-name", "search", "--tool-arg", "query=deploy",
                      "--tool-arg", "budget=-5")
    assert refused["isError"] is True and "greater than or equal to 0" in refused["content"][0]["text"]


def test_the_service_checks_the_bounds_too(repo: Repo) -> None:
    """A caller in Python passes no schema: the service refuses what the schema would, in the same words."""
    repo.commit("init", NOTES)
    service = MemoryService(repo.path)
    for call, said in [(lambda: service.search("deploy", budget=-5), "budget must be 0 (none) to 100,000 tokens"),
                       (lambda: service.search("deploy", budget=100_001), "budget must be 0 (none) to 100,000"),
                       (lambda: service.context("notes/d0", budget=-5), "budget must be 0 (none) to 100,000"),
                       (lambda: service.context("notes/d0", budget=10**9), "budget must be 0 (none) to 100,000"),
                       (lambda: service.search("deploy", mode="fast"), "mode must be auto, text, semantic or")]:
        with pytest.raises(UsageError, match=re.escape(said)):
            call()
    assert service.search("deploy", budget=100_000).budget == 100_000
    service.close()
