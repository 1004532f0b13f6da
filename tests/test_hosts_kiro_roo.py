"""bootstrap-host --host-kind kiro and roo-code: Kiro's `.kiro/settings/mcp.json` (comments kept; one user-level
file, `~/.kiro/settings/mcp.json`), Roo Code's `.roo/mcp.json` (strict JSON; no user-level file written), the
guidance both read in AGENTS.md, and the refusals every host gets."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from conftest import Repo
from test_hosts import DATA, home, load_jsonc, plain_workspace, snapshot

from vivary_git.hosts.install import GUIDANCE_MARKERS

KIRO = ".kiro/settings/mcp.json"
ROO = ".roo/mcp.json"


def test_kiro_s_entry_is_in_mcp_servers_and_the_guidance_in_agents_md(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "kiro", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    rep = r.json()
    assert [(f["path"], f["scope"], f["action"]) for f in rep["files"]] == [
        (KIRO, "project", "create"), ("AGENTS.md", "project", "create")]
    data = json.loads((ws.path / KIRO).read_text("utf-8"))  # a new file is plain JSON, which Kiro's CLI reads too
    entry = data["mcpServers"]["vivary"]
    assert set(entry) == {"command", "args"} and Path(entry["command"]).is_file()
    assert entry["args"][-3:] == ["mcp", "-C", str(ws.path)]
    assert GUIDANCE_MARKERS.span((ws.path / "AGENTS.md").read_text("utf-8"), "AGENTS.md") is not None


def test_roo_code_s_entry_is_in_mcp_servers_and_the_guidance_in_agents_md(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "roo-code", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [(f["path"], f["action"]) for f in r.json()["files"]] == [(ROO, "create"), ("AGENTS.md", "create")]
    entry = json.loads((ws.path / ROO).read_text("utf-8"))["mcpServers"]["vivary"]
    assert set(entry) == {"command", "args"} and entry["args"][-3:] == ["mcp", "-C", str(ws.path)]


def test_dry_run_prints_both_diffs_and_writes_nothing(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path, home())
    for kind, dest in (("kiro", KIRO), ("roo-code", ROO)):
        r = cli("bootstrap-host", "--host-kind", kind, "--dry-run", cwd=ws.path)
        assert r.code == 0, r.err
        assert f"+++ b/{dest}" in r.out and '+  "mcpServers": {' in r.out and "+++ b/AGENTS.md" in r.out
        assert "would create" in r.out
    assert snapshot(ws.path, home()) == start


def test_a_commented_kiro_file_keeps_its_comments_and_servers_and_comes_back_byte_for_byte(
        repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    (ws.path / ".kiro" / "settings").mkdir(parents=True)
    shutil.copy(DATA / "kiro.mcp.json", ws.path / KIRO)
    ws.write({"AGENTS.md": "# Agents\n\nRun the tests first.\n"})
    start = snapshot(ws.path)

    assert cli("bootstrap-host", "--host-kind", "kiro", cwd=ws.path).code == 0
    text = (ws.path / KIRO).read_text("utf-8")
    assert "// Kiro: workspace servers" in text and "/* expanded by Kiro */" in text
    data = load_jsonc(text)
    assert list(data["mcpServers"]) == ["aws-docs", "api-server", "vivary"]
    data["mcpServers"].pop("vivary")
    assert data == load_jsonc((DATA / "kiro.mcp.json").read_text("utf-8"))

    gone = cli("bootstrap-host", "--host-kind", "kiro", "--uninstall", "--json", cwd=ws.path)
    assert [f["action"] for f in gone.json()["files"]] == ["update", "update"]
    assert snapshot(ws.path) == start


def test_a_comment_in_roo_code_s_strict_json_is_reported_and_nothing_is_written(repo: Repo, cli: Any) -> None:
    """Roo Code reads .roo/mcp.json with JSON.parse: a file with a comment fails there too."""
    ws = plain_workspace(repo)
    mine = '{\n  // my servers\n  "mcpServers": {}\n}\n'
    ws.write({ROO: mine})
    r = cli("bootstrap-host", "--host-kind", "roo-code", cwd=ws.path)
    assert r.code == 2
    assert f"{ROO}: line 2, column 3: comments are not allowed" in r.err and "nothing was written" in r.err
    assert (ws.path / ROO).read_text("utf-8") == mine and not (ws.path / "AGENTS.md").exists()
    status = cli("host-status", "--host-kind", "roo-code", "--json", cwd=ws.path)
    assert status.code == 1 and status.json()["hosts"][0]["servers"][0]["state"] == "unreadable"


def test_kiro_s_user_level_file_is_home_s_and_holds_the_workspace_s_server_by_folder_name(
        repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "kiro", "--user", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [(f["path"], f["scope"]) for f in r.json()["files"]] == [
        ("~/.kiro/settings/mcp.json", "user"), ("AGENTS.md", "project")]
    user = home() / ".kiro" / "settings" / "mcp.json"
    name = f"vivary-{ws.path.name.lower()}"
    assert json.loads(user.read_text("utf-8"))["mcpServers"][name]["args"][-3:] == ["mcp", "-C", str(ws.path)]
    assert not (ws.path / ".kiro").exists()
    assert cli("bootstrap-host", "--host-kind", "kiro", cwd=ws.path).code == 0  # and the workspace's own file

    status = cli("host-status", "--host-kind", "kiro", "--json", cwd=ws.path)
    assert status.code == 0, status.out
    host = status.json()["hosts"][0]
    assert [(s["path"], s["scope"], s["state"]) for s in host["servers"]] == [
        (KIRO, "project", "installed"), ("~/.kiro/settings/mcp.json", "user", "installed")]
    assert host["guidance"] == {"path": "AGENTS.md", "state": "present", "detail": None}

    # The project's entry goes; the block stays for the user-level one, and goes with it.
    gone = cli("bootstrap-host", "--host-kind", "kiro", "--uninstall", "--json", cwd=ws.path).json()["files"]
    assert [(f["path"], f["action"], f["note"]) for f in gone] == [
        (KIRO, "delete", ""), ("AGENTS.md", "kept", "still used by Kiro")]
    last = cli("bootstrap-host", "--host-kind", "kiro", "--user", "--uninstall", "--json", cwd=ws.path)
    assert [f["action"] for f in last.json()["files"]] == ["delete", "delete"]
    assert not user.exists() and not (ws.path / "AGENTS.md").exists()


def test_kiro_takes_a_name_s_entry_whole_from_the_workspace_s_file(repo: Repo, cli: Any) -> None:
    """Kiro reads ~/.kiro/settings/mcp.json and the workspace's .kiro/settings/mcp.json, and a server named in both is
    the workspace's entry, whole ("Complete override", kiro.dev/docs/mcp/configuration, "MCP server loading
    priority"): a workspace entry of the user-level one's name replaces it, even one of a single member (no command
    is left: `overridden`), and `disabled: true` there turns it off; a user-level entry of the workspace one's name
    lends it nothing."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "kiro", "--user", cwd=ws.path).code == 0
    name = f"vivary-{ws.path.name.lower()}"
    for theirs, effect in (({"command": "/bin/true"}, "overridden"), ({"env": {"A": "1"}}, "overridden"),
                           ({"disabled": True}, "disabled")):
        ws.write({KIRO: json.dumps({"mcpServers": {name: theirs}})})
        status = cli("host-status", "--host-kind", "kiro", "--json", cwd=ws.path)
        user = status.json()["hosts"][0]["servers"][1]
        assert (status.code, user["state"]) == (1, effect), user
        assert [(m["path"], m["effect"], m["name"]) for m in user["merged"]] == [(KIRO, effect, name)], user
        assert f"Kiro also reads {KIRO}, which has a server named {name!r} too, and in this workspace uses that " \
               "entry whole instead of this one" in user["merged"][0]["detail"], user
    ws.write({KIRO: json.dumps({"mcpServers": {"other": {"command": "/bin/true"}}})})
    status = cli("host-status", "--host-kind", "kiro", "--json", cwd=ws.path)
    assert (status.code, status.json()["hosts"][0]["servers"][1]["state"]) == (0, "installed"), status.out

    assert cli("bootstrap-host", "--host-kind", "kiro", "--user", "--uninstall", cwd=ws.path).code == 0
    user_file = home() / ".kiro" / "settings" / "mcp.json"
    user_file.parent.mkdir(parents=True, exist_ok=True)
    user_file.write_text(json.dumps({"mcpServers": {"vivary": {"command": "/bin/true", "disabled": True}}}))
    (ws.path / KIRO).unlink()
    r = cli("bootstrap-host", "--host-kind", "kiro", "--json", cwd=ws.path)
    assert r.code == 0 and not any("also reads" in n for n in r.json()["notes"]), r.out
    status = cli("host-status", "--host-kind", "kiro", "--json", cwd=ws.path)
    project = status.json()["hosts"][0]["servers"][0]
    assert (status.code, project["state"], project["merged"]) == (0, "installed", []), project


def test_roo_code_s_global_settings_are_not_written(repo: Repo, cli: Any) -> None:
    """Roo Code's mcp_settings.json is in each editor's extension storage: no one file is the user's."""
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "roo-code", "--user", cwd=ws.path)
    assert r.code == 2 and ROO in r.err and "without --user" in r.err
    assert snapshot(home()) == {} and not (ws.path / ".roo").exists()
    status = cli("host-status", "--host-kind", "roo-code", "--json", cwd=ws.path).json()
    assert [s["scope"] for s in status["hosts"][0]["servers"]] == ["project"]


def test_the_agents_md_block_stays_while_the_other_host_still_uses_it(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path)
    assert cli("bootstrap-host", "--host-kind", "kiro", cwd=ws.path).code == 0
    both = cli("bootstrap-host", "--host-kind", "roo-code", "--json", cwd=ws.path).json()["files"]
    assert [f["action"] for f in both] == ["create", "unchanged"]  # one block for both hosts
    first = cli("bootstrap-host", "--host-kind", "roo-code", "--uninstall", "--json", cwd=ws.path).json()["files"]
    assert [(f["action"], f["note"]) for f in first] == [("delete", ""), ("kept", "still used by Kiro")]
    assert not (ws.path / ".roo").exists()
    assert cli("bootstrap-host", "--host-kind", "kiro", "--uninstall", cwd=ws.path).code == 0
    assert snapshot(ws.path) == start  # .kiro/settings/, .kiro/ and AGENTS.md gone


def test_a_linked_kiro_or_roo_folder_is_refused_and_nothing_is_written(repo: Repo, cli: Any, tmp_path: Path) -> None:
    ws = plain_workspace(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for kind, folder in (("kiro", ".kiro"), ("roo-code", ".roo")):
        (ws.path / folder).symlink_to(elsewhere)
        r = cli("bootstrap-host", "--host-kind", kind, cwd=ws.path)
        assert r.code == 3 and folder in r.err and "symlink" in r.err
        assert list(elsewhere.iterdir()) == [] and not (ws.path / "AGENTS.md").exists()
        status = cli("host-status", "--host-kind", kind, "--json", cwd=ws.path)
        assert status.code == 1 and status.json()["hosts"][0]["servers"][0]["state"] == "unreadable"
        (ws.path / folder).unlink()


def test_a_vivary_server_of_someone_else_s_is_never_replaced(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    theirs = '{\n  "mcpServers": {\n    "vivary": {"command": "npx", "args": ["vivary-other"]}\n  }\n}\n'
    for kind, dest in (("kiro", KIRO), ("roo-code", ROO)):
        ws.write({dest: theirs})
        r = cli("bootstrap-host", "--host-kind", kind, cwd=ws.path)
        assert r.code == 3 and "--name" in r.err
        assert (ws.path / dest).read_text("utf-8") == theirs and not (ws.path / "AGENTS.md").exists()


def test_host_status_says_a_moved_installation_is_stale_and_a_second_run_pins_it(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    for kind, dest in (("kiro", KIRO), ("roo-code", ROO)):
        assert cli("bootstrap-host", "--host-kind", kind, cwd=ws.path).code == 0
        config = ws.path / dest
        data = json.loads(config.read_text("utf-8"))
        data["mcpServers"]["vivary"]["command"] = os.fspath(ws.path / "gone" / "git-vivary")
        config.write_text(json.dumps(data))
        stale = cli("host-status", "--host-kind", kind, "--json", cwd=ws.path)
        assert stale.code == 1 and stale.json()["hosts"][0]["servers"][0]["state"] == "stale"
        assert cli("bootstrap-host", "--host-kind", kind, cwd=ws.path).code == 0
        assert cli("host-status", "--host-kind", kind, cwd=ws.path).code == 0
