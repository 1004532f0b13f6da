"""The server bootstrap-host writes serves the workspace it was written for: started from the entry's own command
and arguments, as a host starts it (a bare PATH, another working directory), in every layout a workspace can
have, and `host-status` says so only when it does."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import TROPO, Repo, approve_claude_code
from mcp import Client
from mcp.client.stdio import StdioServerParameters


@pytest.fixture(autouse=True)
def _approved() -> None:
    """The user approved the server, so Claude Code starts it (tests/test_hosts_trust.py judges what before)."""
    approve_claude_code()


def _entry(folder: Path) -> dict[str, Any]:
    entry = json.loads((folder / ".mcp.json").read_text("utf-8"))["mcpServers"]["vivary"]
    assert isinstance(entry, dict)
    return entry


def _as_a_host(entry: dict[str, Any], started_in: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """`status`, then `add`, from a server started exactly as the entry says, with a host's bare PATH."""
    env = dict(os.environ, PATH="/usr/bin:/bin")
    params = StdioServerParameters(command=entry["command"], args=entry["args"], cwd=str(started_in), env=env)

    async def session() -> tuple[dict[str, Any], dict[str, Any]]:
        async with Client(params) as client:
            status = await client.call_tool("status", {})
            added = await client.call_tool("add", {"text": "The fern in the hall is repotted every April."})
            assert not status.is_error and not added.is_error, (status.content, added.content)
            return status.structured_content, added.structured_content

    return asyncio.run(session())


@pytest.mark.parametrize("layout", ["top", "subfolder with its own tropo.toml", "--root notes"])
def test_the_entry_serves_the_workspace_it_was_written_for(repo: Repo, cli: Any, tmp_path: Path,
                                                           layout: str) -> None:
    repo.commit("init", {"README.md": "# top\n", "notes/plants.md": "# Plants\n\nThe fern needs water weekly.\n",
                         **({"notes/tropo.toml": TROPO} if layout.startswith("subfolder") else {})})
    if layout == "top":
        workspace, run_in, extra = repo.path, repo.path, []
    elif layout.startswith("subfolder"):
        workspace, run_in, extra = repo.path / "notes", repo.path / "notes", []
    else:
        workspace, run_in, extra = repo.path / "notes", repo.path, ["--root", "notes"]
    done = cli("bootstrap-host", "--host-kind", "claude-code", *extra, "--json", cwd=run_in)
    assert done.code == 0, done.err
    assert done.json()["workspace"] == str(workspace)
    state = cli("host-status", "--host-kind", "claude-code", *extra, "--json", cwd=run_in)
    assert state.code == 0, state.out
    assert state.json()["hosts"][0]["servers"][0]["state"] == "installed"

    status, added = _as_a_host(_entry(workspace), started_in=tmp_path)
    assert status["workspace"]["root"] == str(workspace)
    assert added["ok"] is True, added
    landed = repo.git("show", "--name-only", "--format=", "HEAD").split()
    rel = workspace.relative_to(repo.path).as_posix()
    assert landed == [f"{rel}/{added['path']}" if rel != "." else added["path"]]
    assert (workspace / added["path"]).is_file()


def test_host_status_says_an_entry_for_the_wrong_workspace_is_stale(repo: Repo, cli: Any) -> None:
    """An entry written before `--root` was pinned (`-C <repo>/notes` alone) starts the server on the top of
    the work tree: not installed for `--root notes`, and a second bootstrap-host pins it."""
    repo.commit("init", {"README.md": "# top\n", "notes/plants.md": "# Plants\n"})
    assert cli("bootstrap-host", "--host-kind", "claude-code", "--root", "notes", cwd=repo.path).code == 0
    config = repo.path / "notes" / ".mcp.json"
    data = json.loads(config.read_text("utf-8"))
    assert data["mcpServers"]["vivary"]["args"][-2:] == ["--root", "."]
    data["mcpServers"]["vivary"]["args"] = ["mcp", "-C", str(repo.path / "notes")]
    config.write_text(json.dumps(data))

    state = cli("host-status", "--host-kind", "claude-code", "--root", "notes", "--json", cwd=repo.path)
    assert state.code == 1
    server = state.json()["hosts"][0]["servers"][0]
    assert server["state"] == "stale"
    assert f"on the workspace {repo.path}, not on this one ({repo.path / 'notes'})" in server["detail"]
    assert "bootstrap-host --root" in server["detail"]

    assert cli("bootstrap-host", "--host-kind", "claude-code", "--root", "notes", cwd=repo.path).code == 0
    assert _entry(repo.path / "notes")["args"] == ["mcp", "-C", str(repo.path / "notes"), "--root", "."]
    state = cli("host-status", "--host-kind", "claude-code", "--root", "notes", "--json", cwd=repo.path)
    assert state.code == 0 and state.json()["hosts"][0]["servers"][0]["state"] == "installed"


def test_vs_code_s_entry_starts_the_server_on_its_workspace(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """VS Code starts `servers.vivary` of `.vscode/mcp.json` (`type: stdio`) as every other host starts its entry."""
    repo.commit("init", {"README.md": "# top\n", "notes/plants.md": "# Plants\n\nThe fern needs water weekly.\n"})
    done = cli("bootstrap-host", "--host-kind", "vscode", "--json", cwd=repo.path)
    assert done.code == 0, done.err
    entry = json.loads((repo.path / ".vscode" / "mcp.json").read_text("utf-8"))["servers"]["vivary"]
    assert entry.pop("type") == "stdio"

    status, added = _as_a_host(entry, started_in=tmp_path)
    assert status["workspace"]["root"] == str(repo.path)
    assert added["ok"] is True, added
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == [added["path"]]


@pytest.mark.parametrize(("kind", "extra", "config", "container"), [
    ("kiro", [], ".kiro/settings/mcp.json", "mcpServers"),
    ("kiro", ["--user"], "~/.kiro/settings/mcp.json", "mcpServers"),
    ("roo-code", [], ".roo/mcp.json", "mcpServers"),
    ("zed", [], ".zed/settings.json", "context_servers"),
    ("continue", [], ".continue/mcpServers/vivary.json", "mcpServers"),
    ("windsurf", ["--user"], "~/.codeium/windsurf/mcp_config.json", "mcpServers"),
])
def test_kiro_s_roo_code_s_and_zed_s_entries_start_the_server_on_their_workspace(
        repo: Repo, cli: Any, tmp_path: Path, kind: str, extra: list[str], config: str, container: str) -> None:
    """Kiro, Roo Code, Zed, Continue and Windsurf start the entry of their file (`command`, `args`) as every other
    host starts its entry, the user-level ones of Kiro and Windsurf included."""
    repo.commit("init", {"README.md": "# top\n", "notes/plants.md": "# Plants\n\nThe fern needs water weekly.\n"})
    done = cli("bootstrap-host", "--host-kind", kind, *extra, "--json", cwd=repo.path)
    assert done.code == 0, done.err
    name = done.json()["server"]["name"]
    path = Path(os.environ["HOME"]) / config[2:] if config.startswith("~/") else repo.path / config
    entry = json.loads(path.read_text("utf-8"))[container][name]
    assert set(entry) == {"command", "args"}

    status, added = _as_a_host(entry, started_in=tmp_path)
    assert status["workspace"]["root"] == str(repo.path)
    assert added["ok"] is True, added
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == [added["path"]]


def test_opencode_s_entry_starts_the_server_on_its_workspace(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """opencode starts `mcp.vivary` of `opencode.json` (`type: local`) from its one `command` list: the program
    first, its arguments after it."""
    repo.commit("init", {"README.md": "# top\n", "notes/plants.md": "# Plants\n\nThe fern needs water weekly.\n"})
    done = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=repo.path)
    assert done.code == 0, done.err
    entry = json.loads((repo.path / "opencode.json").read_text("utf-8"))["mcp"]["vivary"]
    assert entry.pop("type") == "local"
    command, *args = entry.pop("command")
    assert entry == {}

    status, added = _as_a_host({"command": command, "args": args}, started_in=tmp_path)
    assert status["workspace"]["root"] == str(repo.path)
    assert added["ok"] is True, added
    assert repo.git("show", "--name-only", "--format=", "HEAD").split() == [added["path"]]
