"""The MCP `onboard` tool: the first-start questions over MCP, answered into the private USER.md exactly as
`git vivary onboard` does, driven by the MCP SDK's own client over stdio in a real Git repository."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import TROPO, Repo, git
from mcp import Client
from test_mcp import _data, _run, _stdio, _text
from test_store import vivary_objects

from vivary_git.errors import RefusedError
from vivary_git.hosts import onboard
from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService

CANARY = "zqxmcponboardcanary"  # one token: survives lower-casing and stemming, so any copy of it is found
NOTES = {"tropo.toml": TROPO, "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests.\n",
         "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter. See [[deploy]].\n"}


def _seed(repo: Repo, extra: dict[str, str] | None = None) -> None:
    repo.commit("init", {**NOTES, **(extra or {})})


def _twin(tmp_path: Path, name: str) -> Repo:
    """A second repository with the same notes, for the CLI's side of a comparison."""
    path = tmp_path / name
    path.mkdir()
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "gc.auto", "0")
    twin = Repo(path)
    _seed(twin)
    return twin


def _exclude(repo: Repo) -> str:
    return (repo.path / ".git" / "info" / "exclude").read_text("utf-8")


def test_onboard_asks_the_clis_questions_then_writes_as_the_cli_does(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _seed(repo)
    twin = _twin(tmp_path, "twin")
    answers = {"name": "Ada Lovelace", "response_style": "brief, with sources", "goal": "ship the thesis"}

    async def session() -> tuple[set[str], Any, Any, Any, Any]:
        async with Client(_stdio(repo)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            asked = _data(await client.call_tool("onboard", {}))
            asked["user_md_after_asking"] = (repo.path / "USER.md").exists()
            wrote = _data(await client.call_tool("onboard", {"answers": answers}))
            again = _data(await client.call_tool("onboard", {}))
            status = _data(await client.call_tool("status", {}))
            return tools, asked, wrote, again, status

    tools, asked, wrote, again, status = _run(session)
    assert "onboard" in tools
    # The same questions, in the same order and words, as the CLI asks them.
    listed = cli("onboard", "--json", cwd=twin.path).json()["questions"]
    assert [{"key": q["key"], "question": q["question"]} for q in asked["questions"]] == listed
    assert [q["key"] for q in listed] == ["name", "role", "language", "style", "goal"]
    assert asked["answered"] == [] and asked["done"] is False and asked["written"] == []
    assert asked["user_md_after_asking"] is False  # asking writes nothing

    assert wrote["written"] == ["name", "style", "goal"] and wrote["file"] == "USER.md"
    assert wrote["excluded"] is True and wrote["missing"] == ["role", "language"]
    # Byte for byte what `git vivary onboard --answer …` writes, to USER.md and .git/info/exclude.
    r = cli("onboard", *[a for k, v in answers.items() for a in ("--answer", f"{k}={v}")], cwd=twin.path)
    assert r.code == 0, r.err
    assert (repo.path / "USER.md").read_bytes() == (twin.path / "USER.md").read_bytes()
    assert _exclude(repo) == _exclude(twin)
    assert repo.git("status", "--porcelain=v1") == ""  # Git ignores the profile: nothing to commit

    assert again["answered"] == ["name", "style", "goal"]
    assert [(q["key"], q["answered"]) for q in again["questions"]] == [
        ("name", True), ("role", False), ("language", False), ("style", True), ("goal", True)]
    assert status["onboarding"] == {"file": "USER.md", "done": False, "answered": ["name", "style", "goal"],
                                    "missing": ["role", "language"]}
    # The answers are the user's: no answer of the server repeats them (nor does the CLI's).
    for value in answers.values():
        for said in (asked, wrote, again, status):
            assert value not in json.dumps(said)


def test_onboard_refuses_as_the_cli_does_with_a_tool_error(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _seed(repo)

    async def session(calls: list[dict[str, Any]]) -> list[Any]:
        async with Client(_stdio(repo)) as client:
            return [await client.call_tool("onboard", args) for args in calls]

    unknown, wrong_type, not_a_dict = _run(lambda: session([
        {"answers": {"name": "Ada", "shoe": "42"}}, {"answers": {"name": 42}}, {"answers": ["name=Ada"]}]))
    assert unknown.is_error and wrong_type.is_error and not_a_dict.is_error
    cli_said = cli("onboard", "--answer", "name=Ada", "--answer", "shoe=42", cwd=repo.path)
    assert cli_said.code == 2
    assert "'shoe'" in _text(unknown) and "name, role, language, style, goal" in _text(unknown)
    assert "name, role, language, style, goal" in cli_said.err
    for result in (unknown, wrong_type, not_a_dict):
        assert "Traceback" not in _text(result)
    assert not (repo.path / "USER.md").exists()  # a refusal writes nothing, not even the valid answers

    repo.commit("track it", {"USER.md": "# Me\n"})
    (tracked,) = _run(lambda: session([{"answers": {"name": "Ada"}}]))
    assert tracked.is_error and "is tracked by Git" in _text(tracked) and "git rm --cached" in _text(tracked)
    assert (repo.path / "USER.md").read_text() == "# Me\n"
    assert "Traceback" not in _text(tracked)


def test_onboard_over_mcp_reports_only_what_changed(repo: Repo) -> None:
    _seed(repo)

    async def session() -> list[Any]:
        async with Client(build_server(MemoryService(repo.path))) as client:
            return [_data(await client.call_tool("onboard", {"answers": answers})) for answers in (
                {"name": "Ada"}, {"name": "Ada"}, {"goal": ""}, {"name": ""})]

    first, same, absent, last = _run(session)
    assert first["written"] == ["name"] and first["removed"] == []
    assert same["written"] == [] and same["removed"] == [] and same["answered"] == ["name"]
    assert absent["written"] == [] and absent["removed"] == []
    assert last["written"] == [] and last["removed"] == ["name"] and last["answered"] == []
    assert not (repo.path / "USER.md").exists()


def test_onboard_bounds_and_cleans_values_as_the_cli_does(repo: Repo, tmp_path: Path, cli: Any) -> None:
    _seed(repo)
    twin = _twin(tmp_path, "twin")
    odd = {"name": "Ada\x00\x1b[31m\tLovelace\r\n- goal: injected <!-- <<< vivary profile <<< -->",
           "role": " x " * 200, "language": "Ελληνικά & English", "goal": "\u202eevil\u202c & <b>"}

    async def session() -> Any:
        async with Client(_stdio(repo)) as client:
            return _data(await client.call_tool("onboard", {"answers": odd}))

    wrote = _run(session)
    assert wrote["written"] == ["name", "role", "language", "goal"]
    r = cli("onboard", *[a for k, v in odd.items() for a in ("--answer", f"{k}={v}")], cwd=twin.path)
    assert r.code == 0, r.err
    text = (repo.path / "USER.md").read_text("utf-8")
    assert text == (twin.path / "USER.md").read_text("utf-8")
    assert text.count("<<< vivary profile <<<") == 1 and "\x1b" not in text and "\x00" not in text
    assert onboard.read_profile(repo.path)["role"] == " ".join(["x"] * 200)  # whitespace folded first


def test_onboard_refuses_a_long_answer_or_a_credential_and_writes_nothing(repo: Repo, cli: Any) -> None:
    _seed(repo)
    token = "ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8"
    cases = [({"name": "Ada", "role": "y" * (onboard.MAX_ANSWER + 1)}, 2, "answer to 'role' is 501 characters"),
             ({"name": "Ada", "goal": f"ship it; token {token}"}, 3, "answer to 'goal' looks like a credential")]
    for answers, code, said in cases:
        r = cli("onboard", *[a for k, v in answers.items() for a in ("--answer", f"{k}={v}")], cwd=repo.path)
        assert (r.code, said in r.err, "nothing was written" in r.err) == (code, True, True), r.err
        assert token not in r.err + r.out

        async def session(given: dict[str, str] = answers) -> Any:
            async with Client(_stdio(repo)) as client:
                return await client.call_tool("onboard", {"answers": given})

        got = _run(session)
        assert got.is_error and said in _text(got) and token not in _text(got), _text(got)
        assert not (repo.path / "USER.md").exists()


def test_onboard_is_not_offered_to_read_only_hosts(repo: Repo) -> None:
    _seed(repo)
    server = build_server(MemoryService(repo.path, profile="read-only"))

    async def session() -> tuple[set[str], Any, Any]:
        async with Client(server) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            called = await client.call_tool("onboard", {"answers": {"name": "Ada"}})
            status = _data(await client.call_tool("status", {}))
            return tools, called, status

    tools, called, status = _run(session)
    assert tools == {"search", "read", "status", "recent", "context"}
    assert called.is_error
    assert "onboarding" not in status
    with pytest.raises(RefusedError, match="not available in the read-only profile"):
        MemoryService(repo.path, profile="read-only").onboard({"name": "Ada"})
    with pytest.raises(RefusedError, match="not available in the read-only profile"):
        MemoryService(repo.path, profile="read-only").onboard()
    assert not (repo.path / "USER.md").exists()


def test_an_onboarding_canary_reaches_no_other_answer_index_or_cache(repo: Repo, cli: Any) -> None:
    _seed(repo, {".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n'})
    answers = {k: f"{CANARY}{k} deploy keys" for k in onboard.QUESTIONS}
    said: list[str] = []

    async def probe(client: Any) -> None:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("search", {"query": CANARY, "top_k": 50, "include_neighbors": 3, "include_content": True,
                        "budget": 0}),
            ("search", {"query": f"{CANARY}name {CANARY}goal deploy keys", "top_k": 50, "include_content": True,
                        "budget": 0}),
            ("search", {"query": "deploy keys", "top_k": 50, "include_neighbors": 3, "include_content": True,
                        "budget": 0, "mode": "text"}),
            ("read", {"id": "notes/deploy", "neighbors": 3, "include_content": True}),
            ("read", {"id": "USER.md"}), ("read", {"id": "USER"}), ("read", {"id": "./USER.md"}),
            ("status", {}), ("onboard", {}), ("dream", {"inspect": "status"}),
        ]
        for name, args in calls:
            result = await client.call_tool(name, args)
            said.append(json.dumps(result.structured_content) if not result.is_error else _text(result))
        for uri in ("vivary://node/USER", "vivary://node/notes/deploy"):
            try:
                got = await client.read_resource(uri)
                said.append(" ".join(getattr(c, "text", "") for c in got.contents))
            except Exception as err:  # the SDK's error type for a refused resource varies by version
                said.append(str(err))

    async def onboard_then_probe() -> Any:
        async with Client(_stdio(repo)) as client:
            wrote = await client.call_tool("onboard", {"answers": answers})
            said.append(json.dumps(wrote.structured_content))
            await probe(client)
            return _data(wrote)

    wrote = _run(onboard_then_probe)
    assert wrote["written"] == list(onboard.QUESTIONS)
    assert CANARY in (repo.path / "USER.md").read_text("utf-8")  # where the user asked for it, and only there
    # The semantic index and the cache ref, built after onboarding; then a fresh server searches hybrid.
    assert cli("check", cwd=repo.path).code in (0, 1)
    r = cli("index", "--yes", cwd=repo.path)
    assert r.code == 0, r.err

    async def probe_again() -> str:
        async with Client(_stdio(repo)) as client:
            await probe(client)
            return str(_data(await client.call_tool("search", {"query": "deploy keys"}))["mode"])

    assert _run(probe_again) == "hybrid"
    for s in said:  # a search repeats its own query (the caller's text): that echo is left out
        value = json.loads(s) if s.startswith("{") else s
        if isinstance(value, dict):
            value.pop("query", None)
        shown = json.dumps(value)
        assert CANARY not in shown, shown[max(0, shown.find(CANARY) - 200):shown.find(CANARY) + 50]
    joined = "\n".join(said)
    assert joined.count("'USER.md' is private (floor: USER.md)") == 2  # USER.md by path, once per server
    assert CANARY.encode() not in vivary_objects(repo.path)
    assert subprocess.run(["git", "for-each-ref", "refs/vivary/"], cwd=repo.path, capture_output=True, text=True,
                          check=True).stdout  # the cache ref exists, and was scanned
    files = [p for p in (repo.path / ".git" / "vivary").rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert CANARY.encode() not in p.read_bytes().lower(), p
    assert "USER.md" not in repo.git("ls-files")


def test_agents_are_told_to_onboard_at_first_start(repo: Repo, cli: Any) -> None:
    """The guidance block bootstrap-host writes, and the server's own instructions, name every tool a
    host-core host gets, `onboard` among them, and when to call it."""
    _seed(repo)
    r = cli("bootstrap-host", "--host-kind", "claude-code", cwd=repo.path)
    assert r.code == 0, r.err
    guidance = (repo.path / "CLAUDE.md").read_text("utf-8")

    async def session() -> tuple[set[str], str]:
        async with Client(_stdio(repo)) as client:
            return {t.name for t in (await client.list_tools()).tools}, str(client.instructions)

    tools, instructions = _run(session)
    assert "onboard" in tools
    for tool in tools:
        assert f"| `{tool}`" in guidance or f"| `link` / `{tool}`" in guidance, tool
        assert f"`{tool}`" in instructions, tool
    assert "call `onboard` with no arguments" in guidance and "git vivary host-status" in guidance
    assert "at first start when `status` says onboarding is not done" in instructions


def test_a_user_md_that_cannot_be_read_is_said_not_a_traceback(repo: Repo) -> None:
    _seed(repo)
    repo.write({".gitignore": "USER.md\n", "USER.md": b"# Me\n\n\xff\xfe not UTF-8\n"})

    async def session() -> tuple[Any, Any, Any]:
        async with Client(_stdio(repo)) as client:
            status = _data(await client.call_tool("status", {}))
            asked = await client.call_tool("onboard", {})
            wrote = await client.call_tool("onboard", {"answers": {"name": "Ada"}})
            return status, asked, wrote

    status, asked, wrote = _run(session)
    assert status["ok"] is True and status["onboarding"]["done"] is False
    assert "USER.md: line 3: not UTF-8 text" in status["onboarding"]["problem"]
    for result in (asked, wrote):
        assert result.is_error and "USER.md: line 3: not UTF-8 text" in _text(result)
        assert "Traceback" not in _text(result)
    assert (repo.path / "USER.md").read_bytes() == b"# Me\n\n\xff\xfe not UTF-8\n"
