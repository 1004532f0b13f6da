"""bootstrap-host --host-kind vscode: VS Code's own `.vscode/mcp.json` (`servers`, not `mcpServers`; comments and
`inputs` kept), the guidance in `.github/copilot-instructions.md`, and the refusals every host gets."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from conftest import Repo
from test_hosts import DATA, home, load_jsonc, plain_workspace, snapshot

from vivary_git.hosts import blocks
from vivary_git.hosts.install import GUIDANCE_MARKERS

CONFIG = ".vscode/mcp.json"
GUIDE = ".github/copilot-instructions.md"


def test_the_entry_is_in_vs_code_s_format_and_the_guidance_where_copilot_reads_it(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "vscode", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    rep = r.json()
    assert [(f["path"], f["role"], f["action"]) for f in rep["files"]] == [
        (CONFIG, "server", "create"), (GUIDE, "guidance", "create")]
    data = json.loads((ws.path / CONFIG).read_text("utf-8"))  # a new file is plain JSON
    assert list(data) == ["servers"]  # VS Code ignores `mcpServers` in this file
    entry = data["servers"]["vivary"]
    assert entry["type"] == "stdio" and Path(entry["command"]).is_file()
    assert entry["args"][-3:] == ["mcp", "-C", str(ws.path)]
    assert {k: v for k, v in rep["server"].items() if k != "name"} == entry
    assert GUIDANCE_MARKERS.span((ws.path / GUIDE).read_text("utf-8"), GUIDE) is not None
    assert not (ws.path / "AGENTS.md").exists()
    assert any("trust" in n for n in rep["notes"])


def test_an_existing_file_keeps_its_comments_inputs_and_servers_and_comes_back_byte_for_byte(
        repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    (ws.path / ".vscode").mkdir()
    shutil.copy(DATA / "vscode.mcp.json", ws.path / CONFIG)
    ws.write({GUIDE: "# Copilot\n\nUse tabs.\n"})
    start = snapshot(ws.path)

    assert cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path).code == 0
    text = (ws.path / CONFIG).read_text("utf-8")
    for line in (DATA / "vscode.mcp.json").read_text("utf-8").splitlines():
        assert line in text  # comments, tabs, trailing commas, `${input:…}` of the user's
    data = load_jsonc(text)
    original = load_jsonc((DATA / "vscode.mcp.json").read_text("utf-8"))
    assert data["inputs"] == original["inputs"]
    assert data["servers"].pop("vivary")["type"] == "stdio"
    assert data == original
    guide = (ws.path / GUIDE).read_text("utf-8")
    assert guide.startswith("# Copilot\n\nUse tabs.\n\n<!-- >>> vivary")
    installed = snapshot(ws.path)

    again = cli("bootstrap-host", "--host-kind", "vscode", "--json", cwd=ws.path)
    assert {f["action"] for f in again.json()["files"]} == {"unchanged"}
    assert snapshot(ws.path) == installed

    gone = cli("bootstrap-host", "--host-kind", "vscode", "--uninstall", "--json", cwd=ws.path)
    assert gone.code == 0, gone.err
    assert [f["action"] for f in gone.json()["files"]] == ["update", "update"]
    assert snapshot(ws.path) == start


def test_dry_run_prints_the_diff_and_writes_nothing(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "vscode", "--dry-run", cwd=ws.path)
    assert r.code == 0, r.err
    assert snapshot(ws.path) == start
    assert "+++ b/.vscode/mcp.json" in r.out and '+  "servers": {' in r.out and '"type": "stdio"' in r.out
    assert "+++ b/.github/copilot-instructions.md" in r.out and "would create" in r.out


def test_the_profile_s_mcp_json_is_not_written(repo: Repo, cli: Any) -> None:
    """One per profile and per edition (Insiders, VSCodium): no one file is the user's, so --user is refused."""
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "vscode", "--user", cwd=ws.path)
    assert r.code == 2 and ".vscode/mcp.json" in r.err and "without --user" in r.err
    assert not (home() / ".config").exists() and not (ws.path / ".vscode").exists()
    status = cli("host-status", "--host-kind", "vscode", "--json", cwd=ws.path).json()
    assert [s["scope"] for s in status["hosts"][0]["servers"]] == ["project"]


def test_a_linked_vscode_or_github_folder_is_refused_and_nothing_is_written(repo: Repo, cli: Any,
                                                                            tmp_path: Path) -> None:
    ws = plain_workspace(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (ws.path / ".vscode").symlink_to(elsewhere)
    r = cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path)
    assert r.code == 3 and "symlink" in r.err
    assert list(elsewhere.iterdir()) == [] and not (ws.path / ".github").exists()
    status = cli("host-status", "--host-kind", "vscode", "--json", cwd=ws.path)
    assert status.code == 1 and status.json()["hosts"][0]["servers"][0]["state"] == "unreadable"

    (ws.path / ".vscode").unlink()
    (ws.path / ".github").symlink_to(elsewhere)
    r = cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path)
    assert r.code == 3 and ".github" in r.err and "symlink" in r.err
    assert list(elsewhere.iterdir()) == [] and not (ws.path / ".vscode").exists()


def test_an_at_agents_line_is_text_to_copilot_so_the_block_stays_in_its_own_file(repo: Repo, cli: Any) -> None:
    """Only CLAUDE.md and GEMINI.md import `@AGENTS.md`; a block moved to AGENTS.md would reach no one here."""
    ws = plain_workspace(repo)
    ws.write({GUIDE: "@AGENTS.md\n", "AGENTS.md": "# Agents\n"})
    r = cli("bootstrap-host", "--host-kind", "vscode", "--json", cwd=ws.path)
    assert [f["path"] for f in r.json()["files"]] == [CONFIG, GUIDE]
    assert (ws.path / "AGENTS.md").read_text("utf-8") == "# Agents\n"
    assert blocks.Markers(GUIDANCE_MARKERS.begin, GUIDANCE_MARKERS.end).span(
        (ws.path / GUIDE).read_text("utf-8"), GUIDE) is not None


def test_a_vivary_server_of_someone_else_s_is_never_replaced(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    theirs = '{\n  "servers": {\n    "vivary": {"type": "stdio", "command": "npx", "args": ["vivary-other"]}\n  }\n}\n'
    ws.write({CONFIG: theirs})
    r = cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path)
    assert r.code == 3 and "--name" in r.err
    assert (ws.path / CONFIG).read_text("utf-8") == theirs and not (ws.path / ".github").exists()
    assert cli("bootstrap-host", "--host-kind", "vscode", "--name", "notes", cwd=ws.path).code == 0
    data = load_jsonc((ws.path / CONFIG).read_text("utf-8"))
    assert data["servers"]["vivary"]["args"] == ["vivary-other"]
    assert data["servers"]["notes"]["args"][-3:] == ["mcp", "-C", str(ws.path)]


def test_an_mcp_servers_table_is_not_vs_code_s_and_is_left_alone(repo: Repo, cli: Any) -> None:
    """A file written for another host's format (`mcpServers`) gets VS Code's `servers` beside it."""
    ws = plain_workspace(repo)
    other = '{\n  "mcpServers": {\n    "x": {"command": "x"}\n  }\n}\n'
    ws.write({CONFIG: other})
    assert cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path).code == 0
    data = load_jsonc((ws.path / CONFIG).read_text("utf-8"))
    assert data["mcpServers"] == {"x": {"command": "x"}} and "vivary" in data["servers"]
    assert cli("bootstrap-host", "--host-kind", "vscode", "--uninstall", cwd=ws.path).code == 0
    assert (ws.path / CONFIG).read_text("utf-8") == other


def test_host_status_reports_the_vscode_entry_and_its_guidance(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path).code == 0
    r = cli("host-status", "--host-kind", "vscode", "--json", cwd=ws.path)
    assert r.code == 0, r.out
    host = r.json()["hosts"][0]
    assert host["label"] == "VS Code"
    assert (host["servers"][0]["path"], host["servers"][0]["state"]) == (CONFIG, "installed")
    assert host["guidance"] == {"path": GUIDE, "state": "present", "detail": None}
    config = ws.path / CONFIG
    data = json.loads(config.read_text("utf-8"))
    data["servers"]["vivary"]["command"] = os.fspath(ws.path / "gone" / "git-vivary")
    config.write_text(json.dumps(data))
    stale = cli("host-status", "--host-kind", "vscode", "--json", cwd=ws.path)
    assert stale.code == 1 and stale.json()["hosts"][0]["servers"][0]["state"] == "stale"
    assert cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path).code == 0
    assert cli("host-status", "--host-kind", "vscode", cwd=ws.path).code == 0
