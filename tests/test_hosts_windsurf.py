"""bootstrap-host --host-kind windsurf: Windsurf reads its servers from one user-level file only,
`~/.codeium/windsurf/mcp_config.json` (every workspace's, so `--user` and a `vivary-FOLDER` name), and a root
AGENTS.md as an always-on rule."""

from __future__ import annotations

import json
from typing import Any

from conftest import TROPO, Repo
from test_hosts import home, plain_workspace, snapshot

USER = "~/.codeium/windsurf/mcp_config.json"


def _config() -> Any:
    return home() / ".codeium" / "windsurf" / "mcp_config.json"


def test_windsurf_has_only_the_user_level_file_and_says_so(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path, home())
    r = cli("bootstrap-host", "--host-kind", "windsurf", cwd=ws.path)
    assert r.code == 2 and "only a user-level config" in r.err and "--user" in r.err
    assert snapshot(ws.path, home()) == start


def test_windsurf_s_entry_is_named_by_folder_and_the_guidance_in_agents_md(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    _config().parent.mkdir(parents=True)  # Windsurf's own folder, there once it has run
    start = snapshot(ws.path, home())
    r = cli("bootstrap-host", "--host-kind", "windsurf", "--user", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [(f["path"], f["scope"], f["action"]) for f in r.json()["files"]] == [
        (USER, "user", "create"), ("AGENTS.md", "project", "create")]
    name = f"vivary-{ws.path.name.lower()}"
    entry = json.loads(_config().read_text("utf-8"))["mcpServers"][name]
    assert set(entry) == {"command", "args"} and entry["args"][-3:] == ["mcp", "-C", str(ws.path)]

    status = cli("host-status", "--host-kind", "windsurf", "--json", cwd=ws.path)
    assert status.code == 0, status.out
    host = status.json()["hosts"][0]
    assert [(s["path"], s["scope"], s["name"], s["state"]) for s in host["servers"]] == [
        (USER, "user", name, "installed")]
    assert host["guidance"] == {"path": "AGENTS.md", "state": "present", "detail": None}

    dry = cli("bootstrap-host", "--host-kind", "windsurf", "--user", "--uninstall", "--dry-run", cwd=ws.path)
    assert dry.code == 0 and f"--- a/{USER}" in dry.out and "would delete" in dry.out
    assert _config().is_file()
    gone = cli("bootstrap-host", "--host-kind", "windsurf", "--user", "--uninstall", "--json", cwd=ws.path)
    assert [f["action"] for f in gone.json()["files"]] == ["delete", "delete"]
    assert snapshot(ws.path, home()) == start


def test_a_comment_in_windsurf_s_file_is_reported_and_nothing_is_written(repo: Repo, cli: Any) -> None:
    """Windsurf's docs show mcp_config.json as plain JSON: a comment there is not guessed to be readable."""
    ws = plain_workspace(repo)
    mine = '{\n  // mine\n  "mcpServers": {}\n}\n'
    _config().parent.mkdir(parents=True)
    _config().write_text(mine)
    r = cli("bootstrap-host", "--host-kind", "windsurf", "--user", cwd=ws.path)
    assert r.code == 2 and "line 2, column 3: comments are not allowed" in r.err
    assert _config().read_text("utf-8") == mine and not (ws.path / "AGENTS.md").exists()
    # Nor is it claimed to be unreadable to Windsurf: its docs do not say.
    for text in (mine, '{"mcpServers": {},}\n'):
        _config().write_text(text)
        for command in ("bootstrap-host", "host-status"):
            said = cli(command, "--host-kind", "windsurf", *(["--user"] if command == "bootstrap-host" else []),
                       cwd=ws.path)
            said_all = said.err + said.out
            assert "the host cannot read it" not in said_all and "strict JSON" not in said_all, said_all
            assert "do not say whether it reads comments or trailing commas" in said_all, said_all
        assert _config().read_text("utf-8") == text


def test_a_path_windsurf_would_interpolate_is_refused(repo: Repo, cli: Any) -> None:
    for folder, code in (("a${env:HOME}b", 3), ("${file:x}", 3), ("price $5", 0)):
        root = repo.path / folder
        root.mkdir()
        (root / "tropo.toml").write_text(TROPO)
        r = cli("bootstrap-host", "--host-kind", "windsurf", "--user", cwd=root)
        assert r.code == code, r.err
        if code:
            assert "Windsurf would expand" in r.err and not _config().exists()
            assert snapshot(root) == {f"{root}/tropo.toml": TROPO.encode()}
        else:
            assert cli("bootstrap-host", "--host-kind", "windsurf", "--user", "--uninstall", cwd=root).code == 0


def test_the_agents_md_block_stays_while_windsurf_s_user_level_entry_uses_it(repo: Repo, cli: Any) -> None:
    """opencode and Windsurf share the AGENTS.md block: opencode's uninstall keeps it for Windsurf's user-level
    entry, and Windsurf's takes it."""
    ws = plain_workspace(repo)
    _config().parent.mkdir(parents=True)
    start = snapshot(ws.path, home())
    assert cli("bootstrap-host", "--host-kind", "windsurf", "--user", cwd=ws.path).code == 0
    both = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path).json()["files"]
    assert [f["action"] for f in both] == ["create", "unchanged"]
    first = cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", "--json", cwd=ws.path).json()["files"]
    assert [(f["path"], f["action"], f["note"]) for f in first] == [
        ("opencode.json", "delete", ""), ("AGENTS.md", "kept", "still used by Windsurf")]
    last = cli("bootstrap-host", "--host-kind", "windsurf", "--user", "--uninstall", "--json", cwd=ws.path)
    assert [f["action"] for f in last.json()["files"]] == ["delete", "delete"]
    assert snapshot(ws.path, home()) == start


def test_uninstall_removes_the_folders_install_made_for_windsurf_s_file_and_no_other(repo: Repo, cli: Any) -> None:
    """`--user` makes ~/.codeium/windsurf/ for mcp_config.json when it is not there; `--uninstall` that deletes the
    file removes the folders it made, left empty, and never one the user had, nor one with anything in it."""
    ws = plain_workspace(repo)
    start = snapshot(home())
    user = ["bootstrap-host", "--host-kind", "windsurf", "--user"]
    assert cli(*user, cwd=ws.path).code == 0 and _config().is_file()
    assert cli(*user, "--uninstall", cwd=ws.path).code == 0
    assert not (home() / ".codeium").exists() and snapshot(home()) == start

    (home() / ".codeium").mkdir()  # the user's own, empty
    assert cli(*user, cwd=ws.path).code == 0
    assert cli(*user, "--uninstall", cwd=ws.path).code == 0
    assert (home() / ".codeium").is_dir() and not (home() / ".codeium" / "windsurf").exists()

    assert cli(*user, cwd=ws.path).code == 0
    (_config().parent / "installation_id").write_text("x\n")  # Windsurf's, since
    assert cli(*user, "--uninstall", cwd=ws.path).code == 0
    assert sorted(p.name for p in _config().parent.iterdir()) == ["installation_id"]
    (_config().parent / "installation_id").unlink()
    assert cli(*user, cwd=ws.path).code == 0  # the folder there: not made this time
    assert cli(*user, "--uninstall", cwd=ws.path).code == 0
    assert _config().parent.is_dir()  # made by this workspace once, then the user's: left as it is
