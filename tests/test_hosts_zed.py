"""bootstrap-host --host-kind zed: Zed's project `.zed/settings.json` (`context_servers`, comments, trailing commas
and the other settings kept), and the guidance in the one rules file Zed reads: the first of its list there is."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from conftest import Repo
from test_hosts import DATA, home, load_jsonc, plain_workspace, snapshot

from vivary_git.hosts.install import GUIDANCE_MARKERS

CONFIG = ".zed/settings.json"


def _has_block(path: Path, rel: str) -> bool:
    return path.is_file() and GUIDANCE_MARKERS.span(path.read_text("utf-8"), rel) is not None


def test_the_entry_is_a_flat_context_server_and_the_guidance_goes_to_agents_md(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "zed", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    rep = r.json()
    assert [(f["path"], f["action"]) for f in rep["files"]] == [(CONFIG, "create"), ("AGENTS.md", "create")]
    data = json.loads((ws.path / CONFIG).read_text("utf-8"))
    assert list(data) == ["context_servers"]  # Zed's key, not mcpServers
    entry = data["context_servers"]["vivary"]
    assert set(entry) == {"command", "args"} and Path(entry["command"]).is_file()  # no nested `command.path`
    assert entry["args"][-3:] == ["mcp", "-C", str(ws.path)]
    assert any("trust" in n for n in rep["notes"]) and any("guidance block is in AGENTS.md" in n for n in rep["notes"])


def test_settings_comments_and_other_servers_are_kept_and_come_back_byte_for_byte(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    (ws.path / ".zed").mkdir()
    shutil.copy(DATA / "zed.settings.json", ws.path / CONFIG)
    start = snapshot(ws.path)
    assert cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path).code == 0
    text = (ws.path / CONFIG).read_text("utf-8")
    for line in (DATA / "zed.settings.json").read_text("utf-8").splitlines():
        assert line in text  # comments, trailing commas, the extension's server and the editor settings
    data = load_jsonc(text)
    assert list(data["context_servers"]) == ["postgres-context-server", "local-mcp-server", "vivary"]
    data["context_servers"].pop("vivary")
    assert data == load_jsonc((DATA / "zed.settings.json").read_text("utf-8"))
    again = cli("bootstrap-host", "--host-kind", "zed", "--json", cwd=ws.path)
    assert {f["action"] for f in again.json()["files"]} == {"unchanged"}
    assert cli("bootstrap-host", "--host-kind", "zed", "--uninstall", cwd=ws.path).code == 0
    assert snapshot(ws.path) == start


def test_dry_run_prints_the_diff_and_writes_nothing(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "zed", "--dry-run", cwd=ws.path)
    assert r.code == 0, r.err
    assert snapshot(ws.path) == start
    assert "+++ b/.zed/settings.json" in r.out and '+  "context_servers": {' in r.out
    assert "+++ b/AGENTS.md" in r.out and "would create" in r.out


def test_the_block_goes_into_the_first_rules_file_zed_reads_and_never_ahead_of_the_user_s(
        repo: Repo, cli: Any) -> None:
    """Zed reads one rules file: a new `.rules` would hide the user's AGENTS.md from it, and a block in AGENTS.md
    would not reach it past a `.cursorrules`."""
    ws = plain_workspace(repo)
    ws.write({"AGENTS.md": "# Agents\n", "CLAUDE.md": "# Claude\n", ".cursorrules": "Use tabs.\n"})
    (ws.path / ".windsurfrules").mkdir()  # a folder of that name: Zed passes it over, and so do we
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "zed", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [f["path"] for f in r.json()["files"]] == [CONFIG, ".cursorrules"]
    assert (ws.path / ".cursorrules").read_text("utf-8").startswith("Use tabs.\n\n<!-- >>> vivary")
    assert not (ws.path / ".rules").exists()
    assert (ws.path / "AGENTS.md").read_text("utf-8") == "# Agents\n"
    status = cli("host-status", "--host-kind", "zed", "--json", cwd=ws.path).json()["hosts"][0]
    assert status["guidance"] == {"path": ".cursorrules", "state": "present", "detail": None}

    assert cli("bootstrap-host", "--host-kind", "zed", "--uninstall", cwd=ws.path).code == 0
    assert snapshot(ws.path) == start

    (ws.path / ".cursorrules").unlink()
    r = cli("bootstrap-host", "--host-kind", "zed", "--json", cwd=ws.path)
    assert [f["path"] for f in r.json()["files"]] == [CONFIG, "AGENTS.md"]  # AGENTS.md comes before CLAUDE.md
    assert _has_block(ws.path / "AGENTS.md", "AGENTS.md") and not _has_block(ws.path / "CLAUDE.md", "CLAUDE.md")


def test_a_rules_file_added_ahead_later_is_where_host_status_looks(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path).code == 0
    ws.write({".rules": "Be brief.\n"})
    status = cli("host-status", "--host-kind", "zed", "--json", cwd=ws.path).json()["hosts"][0]
    assert status["guidance"]["path"] == ".rules" and status["guidance"]["state"] == "absent"
    assert "--host-kind zed" in status["guidance"]["detail"]
    assert cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path).code == 0
    assert _has_block(ws.path / ".rules", ".rules")


def test_the_copilot_file_zed_reads_is_shared_with_vs_code(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "vscode", cwd=ws.path).code == 0
    r = cli("bootstrap-host", "--host-kind", "zed", "--json", cwd=ws.path)
    assert [(f["path"], f["action"]) for f in r.json()["files"]] == [
        (CONFIG, "create"), (".github/copilot-instructions.md", "unchanged")]
    gone = cli("bootstrap-host", "--host-kind", "zed", "--uninstall", "--json", cwd=ws.path).json()["files"]
    assert [(f["action"], f["note"]) for f in gone] == [("delete", ""), ("kept", "still used by VS Code")]
    assert _has_block(ws.path / ".github/copilot-instructions.md", ".github/copilot-instructions.md")


def test_a_linked_rules_file_or_zed_folder_is_refused_and_nothing_is_written(repo: Repo, cli: Any,
                                                                           tmp_path: Path) -> None:
    ws = plain_workspace(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "rules.md").write_text("theirs\n")
    (ws.path / ".cursorrules").symlink_to(elsewhere / "rules.md")
    r = cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path)
    assert r.code == 3 and ".cursorrules" in r.err and "symlink" in r.err
    assert (elsewhere / "rules.md").read_text() == "theirs\n" and not (ws.path / ".zed").exists()
    (ws.path / ".cursorrules").unlink()
    (ws.path / ".zed").symlink_to(elsewhere)
    r = cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path)
    assert r.code == 3 and ".zed" in r.err and sorted(p.name for p in elsewhere.iterdir()) == ["rules.md"]
    assert not (ws.path / "AGENTS.md").exists()


def test_zed_s_user_settings_are_not_written(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "zed", "--user", cwd=ws.path)
    assert r.code == 2 and CONFIG in r.err and "without --user" in r.err
    assert snapshot(home()) == {} and not (ws.path / ".zed").exists()


def test_host_status_reports_zed_s_entry_installed_then_stale(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path).code == 0
    r = cli("host-status", "--host-kind", "zed", "--json", cwd=ws.path)
    assert r.code == 0, r.out
    host = r.json()["hosts"][0]
    assert host["label"] == "Zed" and (host["servers"][0]["path"], host["servers"][0]["state"]) == (CONFIG, "installed")
    assert host["guidance"] == {"path": "AGENTS.md", "state": "present", "detail": None}
    config = ws.path / CONFIG
    data = json.loads(config.read_text("utf-8"))
    data["context_servers"]["vivary"]["command"] = str(ws.path / "gone" / "git-vivary")
    config.write_text(json.dumps(data))
    stale = cli("host-status", "--host-kind", "zed", "--json", cwd=ws.path)
    assert stale.code == 1 and stale.json()["hosts"][0]["servers"][0]["state"] == "stale"
    assert cli("bootstrap-host", "--host-kind", "zed", cwd=ws.path).code == 0
    assert cli("host-status", "--host-kind", "zed", cwd=ws.path).code == 0
