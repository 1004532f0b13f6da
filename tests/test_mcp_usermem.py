"""The user memory: one Git repository of the user's own (`git config --global vivary.userMemory PATH`),
searched beside every workspace by the MCP server, read and added to with scope user (docs/mcp.md,
docs/remember.md). Real Git throughout; the global config is the temporary HOME conftest gives each test."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git
from mcp import Client
from test_mcp import _data, _run, _stdio, _text

from vivary_git.errors import UsageError
from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService
from vivary_git.mcp.usermem import SCOPES

WS = "canary-ws-51c0de"  # in the workspace's private files only
ME = "canary-me-9b2f4a"  # in the user memory's private files only


def _init(path: Path, files: dict[str, str] | None = None) -> Repo:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "gc.auto", "0")
    r = Repo(path)
    if files:
        r.commit("init", files)
    return r


def _user_memory(tmp_path: Path, files: dict[str, str] | None = None) -> Repo:
    me = _init(tmp_path / "me", files)
    git(tmp_path, "config", "--global", "vivary.userMemory", str(me.path))
    return me


def _objects(r: Repo) -> str:
    """Every object in the repository's database, as text (reachable or not), and its index's paths."""
    out = subprocess.run(["git", "cat-file", "--batch-all-objects", "--batch"], cwd=r.path, capture_output=True,
                         check=True).stdout.decode("utf-8", "replace")
    return out + r.git("ls-files", "--stage")


def test_a_memory_added_with_scope_user_in_one_repository_is_found_from_another(repo: Repo, tmp_path: Path) -> None:
    me = _user_memory(tmp_path)
    repo.commit("init", {"notes/deploy.md": "# Deploy runbook\n\nWe deploy on Tuesdays with tabs of checklists.\n"})
    other = _init(tmp_path / "b", {"README.md": "# Project B\n\nNothing about editors here.\n"})
    head = repo.git("rev-parse", "HEAD").strip()

    a = MemoryService(repo.path)
    added = a.add("I prefer tabs over spaces in every Python file.", tags=["editor"], scope="user")
    assert added.ok and added.id is not None and added.id.startswith("user:memories/"), added
    a.close()
    # one commit in the user memory, with the usual trailers; the workspace did not move
    assert me.git("log", "-1", "--format=%(trailers:key=Vivary-Op,valueonly)").strip() == "add"
    assert me.git("log", "-1", "--format=%(trailers:key=Vivary-Node,valueonly)").strip() == added.id[len("user:"):]
    assert repo.git("rev-parse", "HEAD").strip() == head and repo.git("status", "--porcelain") == ""

    b = MemoryService(other.path)
    only = b.search("tabs spaces python", scope="user", include_content=True)
    assert [h.id for h in only.results] == [added.id] and only.results[0].scope == "user", only
    assert only.scope == "user" and only.user is not None and only.user.path == str(me.path)
    assert "tabs over spaces" in (only.results[0].content or "")
    both = b.search("tabs spaces python project", top_k=5)
    assert {(h.id, h.scope) for h in both.results} == {(added.id, "user"), ("README", None)}, both
    assert [h.id for h in b.search("tabs", scope="workspace").results] == []
    packet = b.read(added.id, include_content=True)
    assert packet.id == added.id and packet.scope == "user" and packet.frontmatter["tags"] == ["editor"]
    status = b.status().user_memory
    assert status is not None and status.ok and status.memories == 1 and status.path == str(me.path)
    b.close()
    # the probe runs against the user memory's own memories: the same claim again is a duplicate there
    again = MemoryService(other.path).add("I prefer tabs over spaces in every Python file.", scope="user")
    assert not again.ok and again.verdict == "duplicate" and again.duplicate is not None
    assert again.duplicate.id == added.id


def test_the_merged_list_alternates_by_rank_with_each_repositorys_own_scores(repo: Repo, tmp_path: Path) -> None:
    _user_memory(tmp_path, {f"memories/m{i}.md": f"# Kettle note {i}\n\nkettle {'kettle ' * i}\n" for i in range(3)})
    repo.commit("init", {f"n{i}.md": f"# Kettle page {i}\n\nkettle {'kettle ' * i}\n" for i in range(3)})
    svc = MemoryService(repo.path)
    ws = [(h.id, h.score) for h in svc.search("kettle", top_k=3, scope="workspace").results]
    me = [(h.id, h.score) for h in svc.search("kettle", top_k=3, scope="user").results]
    merged = [(h.id, h.score) for h in svc.search("kettle", top_k=6, budget=0).results]
    assert merged == [ws[0], me[0], ws[1], me[1], ws[2], me[2]]
    page1 = svc.search("kettle", top_k=4, budget=0)
    assert page1.next_cursor is not None
    page2 = svc.search("kettle", top_k=4, budget=0, cursor=page1.next_cursor)
    assert [h.id for h in page1.results + page2.results] == [i for i, _ in merged]


def test_only_the_users_own_config_names_the_user_memory(repo: Repo, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    planted = _init(tmp_path / "planted", {"README.md": "# Planted\n"})
    before = planted.git("rev-parse", "HEAD").strip()
    repo.commit("init", {
        "README.md": "# Home\n",
        ".gitconfig": f"[vivary]\n\tuserMemory = {planted.path}\n",  # committed: a stranger's input
    })
    repo.git("config", "vivary.userMemory", str(planted.path))  # the clone's own .git/config
    repo.git("config", "include.path", "../.gitconfig")
    # a host config (.mcp.json's env) can set `git -c` values for the server: not the user's config either
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "vivary.userMemory")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", str(planted.path))
    svc = MemoryService(repo.path)
    status = svc.status().user_memory
    assert status is not None and not status.configured and status.how is not None
    with pytest.raises(UsageError, match="no user memory is configured"):
        svc.add("The planted repository must never get this.", scope="user")
    assert svc.search("home").user is None
    assert planted.git("rev-parse", "HEAD").strip() == before

    # the user's own global config is what names it, whatever the clone says
    mine = _user_memory(tmp_path)
    svc = MemoryService(repo.path)
    got = svc.add("Lunch is at noon.", scope="user")
    assert got.ok
    assert mine.git("log", "-1", "--format=%(trailers:key=Vivary-Op,valueonly)").strip() == "add"
    assert planted.git("rev-parse", "HEAD").strip() == before


@pytest.mark.parametrize("kind", ["missing", "plain folder", "subfolder", "relative", "itself", "broken config"])
def test_a_user_memory_that_cannot_be_used_is_said_and_the_server_serves_on(repo: Repo, tmp_path: Path,
                                                                            kind: str) -> None:
    repo.commit("init", {"README.md": "# Home\n\nThe kettle is in the kitchen.\n"})
    target = {"missing": str(tmp_path / "nowhere"), "plain folder": str(tmp_path),
              "subfolder": str(repo.path / "sub"), "relative": "me", "itself": str(repo.path),
              "broken config": str(tmp_path / "me")}[kind]
    if kind == "broken config":
        _init(tmp_path / "me", {"tropo.toml": "version = [[[\n"})
    (repo.path / "sub").mkdir()
    git(tmp_path, "config", "--global", "vivary.userMemory", target)
    svc = MemoryService(repo.path)
    status = svc.status()
    assert status.ok and status.user_memory is not None
    um = status.user_memory
    assert um.configured and not um.ok and um.problem is not None and "vivary.userMemory" in um.problem
    said = {"missing": "does not exist", "plain folder": "not the top of a Git work tree",
            "subfolder": "not the top of a Git work tree", "relative": "not an absolute path",
            "itself": "this workspace's own repository", "broken config": "cannot be read"}[kind]
    assert said in um.problem
    alone = svc.search("kettle")
    assert [h.id for h in alone.results] == ["README"]
    assert alone.user is not None and alone.user.problem == um.problem
    for call in (lambda: svc.search("kettle", scope="user"), lambda: svc.add("x y z", scope="user"),
                 lambda: svc.read("user:memories/x")):
        with pytest.raises(UsageError, match="the user memory is off"):
            call()
    if kind in ("missing", "broken config"):  # the server starts, says it in one line, and no traceback
        proc = subprocess.run([sys.executable, "-m", "vivary_git.main", "mcp"], cwd=repo.path, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, check=False)
        lines = [line for line in proc.stderr.splitlines() if "user memory" in line]
        assert lines == [f"vivary mcp: user memory is off: {um.problem}"], proc.stderr
        assert "Traceback" not in proc.stderr


def test_privacy_holds_both_ways_and_nothing_crosses_between_the_repositories(repo: Repo, tmp_path: Path) -> None:
    me = _user_memory(tmp_path, {
        "USER.md": f"# {ME}-user\n\nkettle\n",
        "memory/diary.md": f"# {ME}-diary\n\nkettle diary\n",
        ".gitignore": "secret/\n",
        "prefs.md": "# Prefs\n\nkettle: the blue one. See [[USER]] and [[memory/diary]].\n",
    })
    me.write({"secret/plan.md": f"# {ME}-ignored\n\nkettle\n"})
    repo.commit("init", {
        "USER.md": f"# {WS}-user\n\nkettle\n",
        "memory/diary.md": f"# {WS}-diary\n\nkettle diary\n",
        ".gitignore": "drafts/\n",
        "notes/kettle.md": "# Kettle\n\nThe kettle is in the kitchen. See [[USER]].\n",
    })
    repo.write({"drafts/plan.md": f"# {WS}-ignored\n\nkettle\n"})
    said: list[str] = []

    async def session() -> None:
        async with Client(build_server(MemoryService(repo.path))) as client:
            calls: list[tuple[str, dict[str, Any]]] = [
                ("search", {"query": "kettle diary user ignored", "top_k": 50, "include_neighbors": 3,
                            "include_content": True, "budget": 0}),
                ("search", {"query": "kettle", "scope": "user", "top_k": 50, "include_content": True, "budget": 0}),
                ("read", {"id": "user:prefs", "neighbors": 3, "include_content": True}),
                ("read", {"id": "user:USER.md"}), ("read", {"id": "user:memory/diary"}),
                ("read", {"id": "user:secret/plan.md"}), ("read", {"id": "USER"}),
                ("status", {}),
                ("add", {"text": "The office kettle descales on Mondays.", "scope": "user"}),
                ("add", {"text": "The project kettle budget is twelve euros.", "links": ["related:notes/kettle"]}),
                ("add", {"text": "x", "scope": "user", "file": "drafts/plan.md"}),
                ("add", {"text": "x", "scope": "user", "file": "notes/kettle.md"}),
                ("search", {"query": "kettle descales budget", "top_k": 50, "include_content": True, "budget": 0}),
            ]
            for name, args in calls:
                result = await client.call_tool(name, args)
                said.append(json.dumps(result.structured_content) if not result.is_error else _text(result))
            got = await client.read_resource("vivary://node/user:prefs")
            said.append(" ".join(getattr(c, "text", "") for c in got.contents))

    _run(session)
    joined = "\n".join(said)
    assert WS not in joined and ME not in joined, joined
    assert "'secret/plan.md' is private (.gitignore:1)" in joined and "secret/)" not in joined
    assert "remembered in the workspace only" in joined
    prefs = json.loads(said[2])
    assert prefs["scope"] == "user" and prefs["outbound"] == [] and prefs["neighbors"] == []
    last = json.loads(said[-2])
    assert {(h["title"], h.get("scope")) for h in last["results"]} >= {
        ("The office kettle descales on Mondays.", "user"), ("The project kettle budget is twelve euros.", None)}
    # each memory is in its own repository only: not in the other's objects, refs, index or files
    mine, theirs = _objects(me), _objects(repo)
    assert "descales on Mondays" in mine and "descales on Mondays" not in theirs
    assert "twelve euros" in theirs and "twelve euros" not in mine
    assert WS not in mine and ME not in theirs
    for r, word in ((repo, "descales"), (me, "twelve euros")):
        assert word not in r.git("for-each-ref", "--format=%(refname) %(subject)")
        files = [p for p in r.path.rglob("*") if p.is_file() and ".git" + os.sep + "objects" not in str(p)]
        assert not [p for p in files if word.encode() in p.read_bytes()]


def test_over_stdio_and_the_command_line(repo: Repo, tmp_path: Path, cli: Any) -> None:
    me = _user_memory(tmp_path)
    repo.commit("init", {"README.md": "# Home\n"})
    other = _init(tmp_path / "b", {"README.md": "# B\n"})
    got = cli("remember", "--scope", "user", "Coffee", "is", "black,", "no", "sugar.", cwd=repo.path)
    assert got.code == 0 and f"of {me.path}" in got.out, got
    assert me.git("log", "-1", "--format=%(trailers:key=Vivary-Source,valueonly)").strip() == "cli"
    assert repo.git("log", "--oneline").count("\n") == 1

    async def session() -> dict[str, Any]:
        async with Client(_stdio(other)) as client:
            tools = {t.name: t.input_schema["properties"] for t in (await client.list_tools()).tools}
            assert tools["search"]["scope"]["enum"] == list(SCOPES) and tools["search"]["scope"]["default"] == "all"
            assert tools["add"]["scope"]["enum"] == ["workspace", "user"]
            found = _data(await client.call_tool("search", {"query": "coffee sugar"}))
            first = found["results"][0]
            packet = _data(await client.call_tool("read", {"id": first["id"], "include_content": True}))
            added = _data(await client.call_tool("add", {"text": "Tea is green.", "scope": "user"}))
            status = _data(await client.call_tool("status", {}))
            return {"found": found, "packet": packet, "added": added, "status": status}

    out = _run(session)
    assert out["found"]["results"][0]["scope"] == "user" and out["found"]["scope"] == "all"
    assert out["packet"]["id"].startswith("user:memories/") and "no sugar" in out["packet"]["content"]
    assert out["added"]["scope"] == "user" and out["added"]["id"].startswith("user:")
    assert out["status"]["user_memory"]["memories"] == 2
    assert other.git("log", "--oneline").count("\n") == 1
    # without a user memory the command says how to name one, in one line
    git(tmp_path, "config", "--global", "--unset", "vivary.userMemory")
    bad = cli("remember", "--scope", "user", "Nothing", "lands.", cwd=repo.path)
    assert bad.code == 2 and "git config --global vivary.userMemory" in bad.err and "Traceback" not in bad.err


def test_each_repository_searches_in_its_own_mode(repo: Repo, tmp_path: Path, cli: Any) -> None:
    """The user memory with its semantic index, the workspace without: hybrid there, keywords here, one list."""
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    me = _user_memory(tmp_path, {
        ".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n',
        "memories/ship-days.md": "---\ntype: memory\n---\n# Ship days\n\n"
                                 "I ship releases on Tuesdays, never on Fridays.\n",
    })
    assert cli("index", "--yes", cwd=me.path).code == 0
    repo.commit("init", {"notes/weekday.md": "# Weekday plan\n\nWhich weekday: standups on Monday.\n"})
    svc = MemoryService(repo.path)
    ans = svc.search("which weekday do we ship releases")
    assert ans.mode == "text" and ans.user is not None and ans.user.mode == "hybrid", ans
    assert [(h.id, h.scope) for h in ans.results[:2]] == [("notes/weekday", None), ("user:memories/ship-days", "user")]
    um = svc.status().user_memory
    assert um is not None and um.search == "hybrid"
    # a near-duplicate is found by the user memory's own cosine probe
    dup = svc.add("I ship releases on Tuesdays and never on Fridays!", scope="user")
    assert not dup.ok and dup.probe == "cosine" and dup.duplicate is not None
    assert dup.duplicate.id == "user:memories/ship-days"
    svc.close()


def _vivary_bytes(r: Repo) -> dict[str, str]:
    """Every object reachable from the repository's `refs/vivary/*`, by ref and path, and every file under
    `.git/vivary/` (the semantic index and its embeddings, the search cache) but the local hot cache of parses,
    facts, graph and checks, which may hold private notes (docs/privacy.md: never pushed, and nothing a reader
    of the clone does not already have), as text."""
    out: dict[str, str] = {}
    for ref in r.git("for-each-ref", "--format=%(refname)", "refs/vivary/").split():
        listed = r.git("rev-list", "--objects", ref, "--")
        for line in listed.splitlines():
            oid, _, name = line.partition(" ")
            out[f"{ref}:{name}"] = subprocess.run(["git", "cat-file", "-p", oid], cwd=r.path, capture_output=True,
                                                  check=True).stdout.decode("utf-8", "replace")
    cache = r.path / ".git" / "vivary"
    hot = ("graph-", "facts-", "parse-", "checks-")
    for p in cache.rglob("*") if cache.is_dir() else ():
        if p.is_file() and not p.relative_to(cache).parts[0].startswith(hot):
            out[str(p)] = p.read_bytes().decode("utf-8", "replace")
    return out


@pytest.mark.parametrize("layout", ["subfolder", "root"])
def test_privacy_holds_in_every_workspace_layout_of_both_repositories(repo: Repo, tmp_path: Path, cli: Any,
                                                                      capsys: pytest.CaptureFixture[str],
                                                                      layout: str) -> None:
    """The workspace in a subfolder of its repository (the server started there, or with `--root`), and a user
    memory holding a nested workspace in a subfolder (the user memory itself is served from the top of its work
    tree, the only place `vivary.userMemory` may name): a canary in every kind of private file of both is in no
    answer, no stderr line, and no object reachable from either repository's `refs/vivary/*`. Searched in every
    mode: keywords always, and semantic and hybrid over both repositories' own indexes when the embed extra is
    installed."""
    embed = importlib.util.find_spec("hnswlib") is not None  # the embed extra: semantic and hybrid too
    index = '[memory]\nenabled = true\nprovider = "vivary-local"\n' if embed else ""
    me = _user_memory(tmp_path, {
        "USER.md": f"# {ME}-user\n\nkettle\n",
        "MEMORY.md": f"# {ME}-memory-md\n\nkettle\n",
        "memory/diary.md": f"# {ME}-diary\n\nkettle diary\n",
        ".gitignore": "secret/\n",
        ".vivary/memory.toml": index + '[memory.privacy]\nprivate_paths = ["vault/**"]\n',
        "vault/keys.md": f"# {ME}-config\n\nkettle vault\n",
        "prefs.md": "# Prefs\n\nkettle: the blue one. See [[USER]], [[memory/diary]] and [[vault/keys]].\n",
        "team/tropo.toml": "version = 1\n",
        "team/USER.md": f"# {ME}-sub-user\n\nkettle\n",
        "team/memory/log.md": f"# {ME}-sub-memory\n\nkettle\n",
        "team/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["internal/**"]\n',
        "team/internal/notes.md": f"# {ME}-sub-config\n\nkettle internal\n",
        "team/plan.md": "# Team kettle plan\n\nkettle. See [[USER]] and [[internal/notes]].\n",
    })
    me.write({"secret/plan.md": f"# {ME}-ignored\n\nkettle\n", "team/secret/plan.md": f"# {ME}-sub-ignored\n"})
    repo.commit("init", {
        "USER.md": f"# {WS}-top-user\n\nkettle\n",
        ".gitignore": "drafts/\n",
        "ws/tropo.toml": "version = 1\n",
        "ws/USER.md": f"# {WS}-user\n\nkettle\n",
        "ws/MEMORY.md": f"# {WS}-memory-md\n\nkettle\n",
        "ws/memory/diary.md": f"# {WS}-diary\n\nkettle diary\n",
        "ws/.vivary/memory.toml": index + '[memory.privacy]\nprivate_paths = ["internal/**"]\n',
        "ws/internal/notes.md": f"# {WS}-config\n\nkettle internal\n",
        "ws/notes/kettle.md": "# Kettle\n\nThe kettle is in the kitchen. See [[USER]] and [[internal/notes]].\n",
    })
    repo.write({"ws/drafts/plan.md": f"# {WS}-ignored\n\nkettle\n"})
    modes = ["text", "auto"]
    if embed:
        assert cli("index", "--yes", cwd=me.path).code == 0
        assert cli("index", "--yes", cwd=repo.path / "ws").code == 0
        modes += ["semantic", "hybrid"]
    capsys.readouterr()
    service = MemoryService(repo.path / "ws") if layout == "subfolder" else MemoryService(repo.path, root="ws")
    said: list[str] = []

    async def session() -> None:
        async with Client(build_server(service)) as client:
            calls: list[tuple[str, dict[str, Any]]] = [("status", {})]
            for mode in modes:
                for scope in SCOPES:
                    calls.append(("search", {"query": "kettle diary user memory internal vault ignored", "top_k": 50,
                                             "include_neighbors": 3, "include_content": True, "budget": 0,
                                             "mode": mode, "scope": scope}))
            calls += [
                ("read", {"id": "notes/kettle", "neighbors": 3, "include_content": True}),
                ("read", {"id": "user:prefs", "neighbors": 3, "include_content": True}),
                ("read", {"id": "user:team/plan", "neighbors": 3, "include_content": True}),
                *[("read", {"id": i}) for i in ("USER", "MEMORY.md", "memory/diary", "internal/notes", "drafts/plan.md",
                                                "../USER.md", "user:USER", "user:MEMORY.md", "user:memory/diary",
                                                "user:vault/keys", "user:secret/plan.md", "user:team/USER",
                                                "user:team/memory/log", "user:team/internal/notes",
                                                "user:team/secret/plan.md")],
                ("add", {"text": "The office kettle descales on Mondays.", "scope": "user",
                         "links": ["related:user:USER"]}),
                ("add", {"text": "The project kettle budget is twelve euros.", "links": ["related:internal/notes"]}),
                ("search", {"query": "kettle descales budget", "top_k": 50, "include_content": True, "budget": 0,
                            "include_neighbors": 3}),
            ]
            for name, args in calls:
                result = await client.call_tool(name, args)
                said.append(json.dumps(result.structured_content) if not result.is_error else _text(result))
            for uri in ("vivary://node/user:prefs", "vivary://node/user:USER", "vivary://node/USER",
                        "vivary://node/user:team/plan"):
                try:
                    got = await client.read_resource(uri)
                    said.append(" ".join(getattr(c, "text", "") for c in got.contents))
                except Exception as err:
                    said.append(str(err))

    _run(session)
    service.close()
    joined = "\n".join(said)
    leaks = [s[max(0, s.find(c) - 200):s.find(c) + 50] for s in said for c in (WS, ME) if c in s]
    assert not leaks, "\n".join(leaks)
    assert "kitchen" in joined and "the blue one" in joined and "Team kettle plan" in joined  # both were searched
    # A rule of the user's by its place alone: its pattern is the text of a file on the privacy floor.
    for why in ("'memory/diary' is private (floor: memory/** (workspace ws/))",
                "'internal/notes' is private (private_paths in ws/.vivary/memory.toml)",
                "'drafts/plan.md' is private (.gitignore:1)",
                "'vault/keys' is private (private_paths in .vivary/memory.toml)",
                "'secret/plan.md' is private (.gitignore:1)",
                "'team/memory/log' is private (floor: memory/** (workspace team/))",
                "'team/internal/notes' is private (private_paths in team/.vivary/memory.toml)"):
        assert why in joined, why
    for pattern in ("internal/**", "vault/**", "drafts/)", "secret/)"):
        assert pattern not in joined, pattern
    err = capsys.readouterr().err
    assert WS not in err and ME not in err, err
    for r in (repo, me):
        found = [where for where, text in _vivary_bytes(r).items() if WS in text or ME in text]
        assert not found, found
    if embed:
        assert '"mode": "hybrid"' in joined, joined


def test_a_user_scoped_search_counts_only_the_user_memorys_left_out(repo: Repo, tmp_path: Path) -> None:
    """`hidden` counts the archived or expired memories left out of the answer: with `scope: "user"` the workspace
    was not searched, so its two archived memories are not among them (they were)."""
    _user_memory(tmp_path)
    archived = "---\ntype: memory\narchived: \"2026-01-01T00:00:00Z\"\n---\n# {}\n"
    repo.commit("init", {"notes/a.md": "# A\n", "memories/old-1.md": archived.format("Kettle one"),
                         "memories/old-2.md": archived.format("Kettle two")})
    svc = MemoryService(repo.path)
    try:
        assert svc.add("The kettle descaler is under the sink.", scope="user").ok
        assert svc.search("kettle", scope="workspace").hidden == 2
        user = svc.search("kettle", scope="user")
        assert user.hidden == 0 and user.dream_due is None, user
        assert svc.search("kettle").hidden == 2
    finally:
        svc.close()


def test_a_user_memory_id_is_read_as_spelt(repo: Repo, tmp_path: Path) -> None:
    """`user:Meeting ` (a note named with a trailing space) is that note, not `user:Meeting`: the id is read as
    spelt, in the user memory as in the workspace."""
    _user_memory(tmp_path, {"Meeting .md": "# The spaced one\n", "Meeting.md": "# The plain one\n"})
    repo.commit("init", {"README.md": "# A project\n"})
    service = MemoryService(repo.path)
    try:
        assert service.read("user:Meeting ").title == "The spaced one"
        assert service.read(" user:Meeting").title == "The plain one"
    finally:
        service.close()
