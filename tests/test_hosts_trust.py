"""Whether a host starts the servers of the project's file at all (vivary_git/hosts/trust.py): Gemini CLI's trusted
folders and Claude Code's approval of a .mcp.json server, judged as each host judges them (every case here is run
against the host's own CLI in tests/test_hosts_real.py), said by host-status (`untrusted`, `unapproved`,
`disabled`: exit 1) and by bootstrap-host's note, whose fix, done as it says, makes the host start the server."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo

# Where the workspace is (the top of its work tree, `--root notes`, a linked worktree), the `[projects."<key>"]
# trust_level`s of ~/.codex/config.toml (`{top}` the work tree's top, `{above}` the folder above it, `{linked}` the
# linked worktree), and whether Codex then reads the project's .codex/config.toml (seen with Codex 0.171.0).
CODEX_CASES: list[tuple[str, dict[str, str], bool]] = [
    ("top", {}, False),
    ("top", {"{top}": "trusted"}, True),
    ("top", {"{top}": "untrusted"}, False),
    ("top", {"{top}/": "trusted"}, False),  # a key is the folder's path exactly
    ("top", {"{above}": "trusted"}, False),  # a folder above is not enough
    ("notes", {"{top}": "trusted"}, True),  # the project root: the nearest folder up holding .git
    ("notes", {"{top}": "trusted", "{top}/notes": "untrusted"}, False),  # the folder's own first
    ("notes", {"{top}": "untrusted", "{top}/notes": "trusted"}, True),
    ("linked", {"{top}": "trusted"}, True),  # a linked worktree: its repository's main work tree
    ("linked", {"{top}": "trusted", "{linked}": "untrusted"}, False),
]

# ~/.gemini/trustedFolders.json, the user's ~/.gemini/settings.json, and whether Gemini CLI then trusts the
# workspace; `{ws}` is the workspace, `{up}` the folder above it, `{link}` a symbolic link to that folder, `{name}`
# the workspace's name.
GEMINI_CASES: list[tuple[dict[str, str] | None, dict[str, Any] | None, bool]] = [
    (None, None, False),
    ({"{ws}": "TRUST_FOLDER"}, None, True),
    ({"{up}": "TRUST_FOLDER"}, None, True),  # a folder above trusts what is under it
    ({"{link}": "TRUST_FOLDER"}, None, True),  # compared as real paths
    ({"{ws}/": "TRUST_FOLDER"}, None, True),
    ({"{ws}/notes": "TRUST_FOLDER"}, None, False),  # a folder below does not
    ({"{ws}/notes": "TRUST_PARENT"}, None, True),  # the folder above that path
    ({"{ws}": "TRUST_PARENT"}, None, True),
    ({"{ws}x": "TRUST_FOLDER"}, None, False),  # a path that only starts like it
    ({"{up}": "TRUST_FOLDER", "{ws}": "DO_NOT_TRUST"}, None, False),  # the longest path decides
    ({"{up}": "DO_NOT_TRUST", "{ws}": "TRUST_FOLDER"}, None, True),
    ({"{ws}x": "TRUST_PARENT", "{ws}": "DO_NOT_TRUST"}, None, True),  # the longest path, not the folder it names
    ({"{up}": "TRUST_FOLDER", "{link}/{name}": "DO_NOT_TRUST"}, None, False),
    (None, {"security": {"folderTrust": {"enabled": False}}}, True),  # folder trust off: every folder
    (None, {"security": {"folderTrust": {"enabled": "FALSE"}}}, True),
    (None, {"security": {"folderTrust": {"enabled": 0}}}, True),
    (None, {"security": {"folderTrust": {"enabled": "no"}}}, False),
    (None, {"security": {"folderTrust": {"enabled": True}}}, False),
    (None, {"security": {"folderTrust": False}}, False),
    ({"{ws}": "DO_NOT_TRUST"}, {"security": {"folderTrust": {"enabled": False}}}, True),
]

# ~/.claude/settings.json, the workspace's .claude/settings.json and .claude/settings.local.json, the `projects`
# of ~/.claude.json, and what Claude Code makes of the workspace's .mcp.json server `vivary`.
CLAUDE_CASES: list[tuple[dict[str, Any] | None, dict[str, Any] | None, dict[str, Any] | None,
                         dict[str, Any] | None, str]] = [
    (None, None, None, None, "unapproved"),
    ({"enableAllProjectMcpServers": True}, None, None, None, "installed"),
    ({"enabledMcpjsonServers": ["vivary"]}, None, None, None, "installed"),
    ({"enabledMcpjsonServers": ["VIVARY"]}, None, None, None, "unapproved"),
    (None, None, {"enabledMcpjsonServers": ["vivary"]}, None, "unapproved"),  # the project's: in a trusted folder
    (None, None, {"enabledMcpjsonServers": ["vivary"]}, {"{ws}": {"hasTrustDialogAccepted": True}}, "installed"),
    (None, {"enableAllProjectMcpServers": True}, None, None, "unapproved"),
    (None, {"enableAllProjectMcpServers": True}, None, {"{ws}": {"hasTrustDialogAccepted": True}}, "installed"),
    (None, None, {"enabledMcpjsonServers": ["vivary"]}, {"{up}": {"hasTrustDialogAccepted": True}}, "unapproved"),
    (None, None, {"enabledMcpjsonServers": ["vivary"]}, {"{ws}/": {"hasTrustDialogAccepted": True}}, "unapproved"),
    # Earlier versions' lists in ~/.claude.json: moved into .claude/settings.local.json at the next start.
    (None, None, None, {"{ws}": {"enabledMcpjsonServers": ["vivary"]}}, "unapproved"),
    (None, None, None, {"{ws}": {"enabledMcpjsonServers": ["vivary"], "hasTrustDialogAccepted": True}},
     "installed"),
    (None, None, {"disabledMcpjsonServers": ["vivary"]}, None, "disabled"),  # rejected, trusted or not
    (None, {"disabledMcpjsonServers": ["vivary"]}, None, None, "disabled"),
    ({"disabledMcpjsonServers": ["vivary"]}, None, None, None, "disabled"),
    ({"enableAllProjectMcpServers": True}, None, {"disabledMcpjsonServers": ["vivary"]}, None, "disabled"),
]


@pytest.fixture(autouse=True)
def _no_host_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """No variable of the machine's decides for the hosts (each is its own case below)."""
    for name in ("GEMINI_CLI_HOME", "GEMINI_CLI_TRUSTED_FOLDERS_PATH", "GEMINI_CLI_TRUST_WORKSPACE",
                 "GEMINI_RESTRICTED_MODE", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)


def home() -> Path:
    return Path(os.environ["HOME"])


def write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), "utf-8")


def gemini_files(ws: Path, folders: dict[str, str] | None, settings: dict[str, Any] | None) -> None:
    """Write a case of GEMINI_CASES for the workspace `ws` (a symbolic link `{link}` to the folder above made)."""
    link = ws.parent.parent / f"{ws.parent.name}-link"
    if not link.is_symlink():
        link.symlink_to(ws.parent)
    paths = {"ws": str(ws), "up": str(ws.parent), "link": str(link), "name": ws.name}
    if folders is not None:
        write_json(home() / ".gemini" / "trustedFolders.json",
                   {key.format(**paths): level for key, level in folders.items()})
    if settings is not None:
        write_json(home() / ".gemini" / "settings.json", settings)


def claude_files(ws: Path, user: dict[str, Any] | None, project: dict[str, Any] | None,
                 local: dict[str, Any] | None, projects: dict[str, Any] | None) -> None:
    """Write a case of CLAUDE_CASES for the workspace `ws`."""
    for path, data in ((home() / ".claude" / "settings.json", user), (ws / ".claude" / "settings.json", project),
                       (ws / ".claude" / "settings.local.json", local)):
        if data is not None:
            write_json(path, data)
    if projects is not None:
        write_json(home() / ".claude.json",
                   {"projects": {k.format(ws=ws, up=ws.parent): v for k, v in projects.items()}})


def server(cli: Any, kind: str, cwd: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    r = cli("host-status", "--host-kind", kind, *extra, "--json", cwd=cwd)
    return r.code, r.json()["hosts"][0]["servers"][0]


@pytest.fixture
def ws(repo: Repo) -> Repo:
    repo.write({"tropo.toml": TROPO, "notes/a.md": "# A\n"})
    repo.commit("init")
    return repo


@pytest.mark.parametrize(("folders", "settings", "trusted"), GEMINI_CASES)
def test_gemini_cli_s_folder_trust_is_judged_as_gemini_cli_judges_it(
        folders: dict[str, str] | None, settings: dict[str, Any] | None, trusted: bool, ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=ws.path).code == 0
    gemini_files(ws.path, folders, settings)
    code, got = server(cli, "gemini-cli", ws.path)
    assert (code, got["state"]) == ((0, "installed") if trusted else (1, "untrusted")), got
    assert [m["effect"] for m in got["merged"]] == ([] if trusted else ["untrusted"]), got


@pytest.mark.parametrize(("user", "project", "local", "projects", "state"), CLAUDE_CASES)
def test_claude_code_s_approval_is_judged_as_claude_code_judges_it(
        user: dict[str, Any] | None, project: dict[str, Any] | None, local: dict[str, Any] | None,
        projects: dict[str, Any] | None, state: str, ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    claude_files(ws.path, user, project, local, projects)
    code, got = server(cli, "claude-code", ws.path)
    assert (code, got["state"]) == (0 if state == "installed" else 1, state), got


def test_gemini_cli_s_untrusted_folder_is_said_with_the_entry_to_add(ws: Repo, cli: Any) -> None:
    """bootstrap-host's note and host-status's finding are one text, naming the entry that trusts the folder;
    added as it says, host-status says `installed` and bootstrap-host says nothing of trust."""
    notes = cli("bootstrap-host", "--host-kind", "gemini-cli", "--json", cwd=ws.path).json()["notes"]
    said = [n for n in notes if n.startswith("Gemini CLI starts MCP servers only in a folder you trust")]
    assert len(said) == 1 and f"~/.gemini/trustedFolders.json does not trust {ws.path} (no entry" in said[0], notes
    entry = re.search(r"add `(\"[^`]*\"): \"TRUST_FOLDER\"` to ~/\.gemini/trustedFolders\.json$", said[0])
    assert entry is not None, said
    code, got = server(cli, "gemini-cli", ws.path)
    assert (code, got["state"]) == (1, "untrusted")
    assert [(m["path"], m["effect"], m["name"], m["detail"]) for m in got["merged"]] == [
        ("~/.gemini/trustedFolders.json", "untrusted", "vivary", said[0])]
    assert "  server    untrusted  .gemini/settings.json [vivary]\n" in \
        cli("host-status", "--host-kind", "gemini-cli", cwd=ws.path).out

    write_json(home() / ".gemini" / "trustedFolders.json", {json.loads(entry.group(1)): "TRUST_FOLDER"})
    assert server(cli, "gemini-cli", ws.path)[1]["state"] == "installed"
    notes = cli("bootstrap-host", "--host-kind", "gemini-cli", "--json", cwd=ws.path).json()["notes"]
    assert not any("trust" in n for n in notes), notes

    for key in (str(ws.path), "{link}/{name}"):  # the folder itself, through a link too
        gemini_files(ws.path, {key: "DO_NOT_TRUST"}, None)
        detail = server(cli, "gemini-cli", ws.path)[1]["merged"][0]["detail"]
        assert " DO_NOT_TRUST, so" in detail and detail.endswith('set it to "TRUST_FOLDER" there'), detail
    gemini_files(ws.path, {"{up}": "DO_NOT_TRUST"}, None)
    detail = server(cli, "gemini-cli", ws.path)[1]["merged"][0]["detail"]
    assert f"marks {ws.path.parent} DO_NOT_TRUST" in detail and detail.endswith(f"add {entry.group(0)[4:]}"), detail


def test_a_trusted_folders_file_gemini_cli_stops_on_is_unreadable(ws: Repo, cli: Any) -> None:
    """Gemini CLI exits 52 on a trustedFolders.json it cannot parse or with a level it does not know (seen with
    0.61.0): host-status names the file and why, and exits 1."""
    assert cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=ws.path).code == 0
    folders = home() / ".gemini" / "trustedFolders.json"
    folders.parent.mkdir()
    wrong = json.dumps({str(ws.path): "trusted"})
    for text, why in ((wrong, f'gives {ws.path} the level "trusted", which is not one of TRUST_FOLDER'),
                      ("[1]", "holds a JSON array, not an object"), ("{ nope", "line 1, column 3"),
                      # comments it takes, a trailing comma it does not (strip-json-comments, then JSON.parse)
                      (f"// mine\n{{{json.dumps(str(ws.path))}: \"TRUST_FOLDER\",\n}}",
                       f"line 2, column {len(json.dumps(str(ws.path))) + 18}: trailing comma (the host reads "
                       "comments but no trailing comma): remove it"),
                      ("\ufeff{}", "line 1, column 1: a byte order mark (U+FEFF), which the host does not read")):
        folders.write_text(text, "utf-8")
        code, got = server(cli, "gemini-cli", ws.path)
        assert (code, [(m["path"], m["effect"]) for m in got["merged"]]) == (
            1, [("~/.gemini/trustedFolders.json", "unreadable")]), got
        assert why in got["merged"][0]["detail"] and "stops on it (exit 52)" in got["merged"][0]["detail"], got


def test_a_gemini_settings_file_with_a_trailing_comma_is_unreadable(ws: Repo, cli: Any) -> None:
    """The user's ~/.gemini/settings.json is read as Gemini CLI reads it: comments taken, a trailing comma not (it
    stops on it, exit 52: seen with 0.61.0)."""
    assert cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=ws.path).code == 0
    settings = home() / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // mine\n  "security": {"folderTrust": {"enabled": false}},\n}\n', "utf-8")
    code, got = server(cli, "gemini-cli", ws.path)
    assert (code, [(m["path"], m["effect"]) for m in got["merged"]]) == (
        1, [("~/.gemini/settings.json", "unreadable")]), got
    assert "line 3, column 50: trailing comma" in got["merged"][0]["detail"], got
    settings.write_text('{\n  // mine\n  "security": {"folderTrust": {"enabled": false}}\n}\n', "utf-8")
    assert server(cli, "gemini-cli", ws.path)[1]["state"] == "installed"


def test_gemini_cli_s_user_settings_are_merged_with_ours_by_server_name(ws: Repo, cli: Any, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI takes `mcpServers` from ~/.gemini/settings.json, then the project's .gemini/settings.json, whose
    entry of a name replaces the user's whole: a `vivary` of the user's own is replaced by ours (nothing to say),
    this workspace's server under another name there is a second server on the same memory (said by bootstrap-host
    and host-status, a note, exit 0); `GEMINI_CLI_HOME` stands for the home folder."""
    entry = cli("bootstrap-host", "--host-kind", "gemini-cli", "--json", cwd=ws.path).json()["server"]
    gemini_files(ws.path, {"{ws}": "TRUST_FOLDER"}, None)
    servers = {"vivary": {"command": "/bin/echo", "args": ["mine"]},
               "vivary-ws": {"command": entry["command"], "args": entry["args"]}}
    write_json(home() / ".gemini" / "settings.json", {"mcpServers": servers})
    code, got = server(cli, "gemini-cli", ws.path)
    assert (code, got["state"], [(m["path"], m["effect"], m["name"]) for m in got["merged"]]) == (
        0, "installed", [("~/.gemini/settings.json", "second", "vivary-ws")]), got
    notes = cli("bootstrap-host", "--host-kind", "gemini-cli", "--json", cwd=ws.path).json()["notes"]
    assert got["merged"][0]["detail"] in notes, notes
    assert got["merged"][0]["detail"].startswith("Gemini CLI also reads ~/.gemini/settings.json, where this "
                                                 "workspace's server is 'vivary-ws'"), got

    write_json(home() / ".gemini" / "settings.json", {"mcpServers": {"vivary": servers["vivary"]}})
    assert server(cli, "gemini-cli", ws.path)[1]["merged"] == []  # ours, read last, takes the name
    elsewhere = tmp_path / "gemini-home"
    write_json(elsewhere / ".gemini" / "settings.json", {"mcpServers": servers})
    write_json(elsewhere / ".gemini" / "trustedFolders.json", {str(ws.path): "TRUST_FOLDER"})
    monkeypatch.setenv("GEMINI_CLI_HOME", str(elsewhere))
    got = server(cli, "gemini-cli", ws.path)[1]
    assert [(m["path"], m["effect"]) for m in got["merged"]] == [(f"{elsewhere}/.gemini/settings.json", "second")]


@pytest.mark.parametrize(("variable", "value", "trusted"), [
    ("GEMINI_CLI_TRUST_WORKSPACE", "true", True), ("GEMINI_CLI_TRUST_WORKSPACE", "false", False),
    ("GEMINI_RESTRICTED_MODE", "true", False)])
def test_gemini_cli_s_trust_variables_decide_before_its_files(variable: str, value: str, trusted: bool, ws: Repo,
                                                              cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=ws.path).code == 0
    write_json(home() / ".gemini" / "trustedFolders.json", {str(ws.path): "TRUST_FOLDER"} if not trusted else {})
    monkeypatch.setenv(variable, value)
    code, got = server(cli, "gemini-cli", ws.path)
    assert (code, got["state"]) == ((0, "installed") if trusted else (1, "untrusted")), got
    if not trusted:
        assert got["merged"][0]["path"] == f"${variable}" and f"unset {variable}" in got["merged"][0]["detail"]


def test_gemini_cli_s_home_and_trusted_folders_path_are_its_variables(ws: Repo, cli: Any, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=ws.path).code == 0
    write_json(tmp_path / "gh" / ".gemini" / "trustedFolders.json", {str(ws.path): "TRUST_FOLDER"})
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gh"))
    assert server(cli, "gemini-cli", ws.path)[1]["state"] == "installed"
    monkeypatch.setenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", str(tmp_path / "elsewhere.json"))
    assert server(cli, "gemini-cli", ws.path)[1]["state"] == "untrusted"


def test_claude_code_s_unapproved_server_is_said_with_the_step_to_approve(ws: Repo, cli: Any) -> None:
    """Not approved: the note names the trust dialog (or, in a folder already trusted, the list to add it to) and
    the user-level list; done as it says, host-status says `installed`."""
    notes = cli("bootstrap-host", "--host-kind", "claude-code", "--json", cwd=ws.path).json()["notes"]
    said = [n for n in notes if n.startswith("Claude Code asks once before it starts a server from a project's")]
    assert len(said) == 1 and "'vivary' in .mcp.json is not approved yet" in said[0], notes
    assert f"run `claude` in {ws.path}, trust the folder and choose \"Use this MCP server\"" in said[0], said
    code, got = server(cli, "claude-code", ws.path)
    assert (code, got["state"]) == (1, "unapproved")
    assert [(m["path"], m["effect"], m["name"], m["detail"]) for m in got["merged"]] == [
        (".claude/settings.local.json", "unapproved", "vivary", said[0])]
    assert "  server    unapproved .mcp.json [vivary]\n" in cli("host-status", "--host-kind", "claude-code",
                                                               cwd=ws.path).out

    claude_files(ws.path, None, None, None, {"{ws}": {"hasTrustDialogAccepted": True}})
    detail = server(cli, "claude-code", ws.path)[1]["merged"][0]["detail"]
    assert 'add "vivary" to `enabledMcpjsonServers` in .claude/settings.local.json (or run' in detail, detail
    claude_files(ws.path, None, None, {"enabledMcpjsonServers": ["vivary"]}, None)
    assert server(cli, "claude-code", ws.path)[1]["state"] == "installed"
    notes = cli("bootstrap-host", "--host-kind", "claude-code", "--json", cwd=ws.path).json()["notes"]
    assert not any("approve" in n for n in notes), notes


def test_claude_code_s_rejected_server_is_disabled_and_names_the_file(ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    claude_files(ws.path, {"enableAllProjectMcpServers": True}, None, {"disabledMcpjsonServers": "vivary"}, None)
    code, got = server(cli, "claude-code", ws.path)
    assert (code, got["state"]) == (1, "disabled"), got
    assert [(m["path"], m["effect"]) for m in got["merged"]] == [(".claude/settings.local.json", "disabled")]
    assert got["merged"][0]["detail"].endswith('remove "vivary" from that list to use it'), got


@pytest.mark.parametrize(("where", "trusted_key", "approved"), [
    ("notes", "{top}", True),  # a folder above, up to the top of the work tree
    ("notes", "{top}/notes", True),
    ("notes", "{up}", False),  # above the work tree: not
    ("linked", "{top}", True),  # the repository's main work tree
    ("linked", "{linked}", True),
])
def test_claude_code_s_trusted_folder_is_found_as_claude_code_finds_it(
        where: str, trusted_key: str, approved: bool, ws: Repo, cli: Any, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    if where == "linked":
        ws.git("worktree", "add", "-q", str(linked))
    run_in, extra = {"notes": (ws.path, ["--root", "notes"]), "linked": (linked, [])}[where]
    folder = ws.path / "notes" if where == "notes" else linked
    assert cli("bootstrap-host", "--host-kind", "claude-code", *extra, cwd=run_in).code == 0
    write_json(folder / ".claude" / "settings.local.json", {"enabledMcpjsonServers": ["vivary"]})
    key = trusted_key.format(top=ws.path, up=ws.path.parent, linked=linked)
    write_json(home() / ".claude.json", {"projects": {key: {"hasTrustDialogAccepted": True}}})
    assert server(cli, "claude-code", run_in, *extra)[1]["state"] == ("installed" if approved else "unapproved")


def test_claude_code_s_config_dir_is_its_variable(ws: Repo, cli: Any, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    write_json(tmp_path / "cc" / "settings.json", {"enableAllProjectMcpServers": True})
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert server(cli, "claude-code", ws.path)[1]["state"] == "installed"


def test_a_claude_settings_file_that_cannot_be_read_is_unreadable(ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    ws.write({".claude/settings.local.json": "{ nope"})
    code, got = server(cli, "claude-code", ws.path)
    assert (code, [(m["path"], m["effect"]) for m in got["merged"]]) == (
        1, [(".claude/settings.local.json", "unreadable")]), got
    assert ".claude/settings.local.json: line 1, column 3" in got["merged"][0]["detail"], got


def test_a_claude_json_past_a_config_file_s_size_is_read(ws: Repo, cli: Any) -> None:
    """~/.claude.json is Claude Code's record of every project and grows past the 4 MiB a config file is allowed:
    its trust is read all the same."""
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    claude_files(ws.path, None, None, {"enabledMcpjsonServers": ["vivary"]}, None)
    projects: dict[str, Any] = {f"/elsewhere/{i}": {"history": ["x" * 1000]} for i in range(5000)}
    projects[str(ws.path)] = {"hasTrustDialogAccepted": True}
    write_json(home() / ".claude.json", {"projects": projects})
    assert (home() / ".claude.json").stat().st_size > 4 * 1024 * 1024
    code, got = server(cli, "claude-code", ws.path)
    assert (code, got["state"]) == (0, "installed"), got


def test_a_linked_claude_folder_in_the_workspace_is_not_followed(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """A clone's `.claude` could be a link to anywhere: it is named, never read through, and nothing it would hold
    approves the server."""
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    write_json(tmp_path / "elsewhere" / "settings.local.json", {"enabledMcpjsonServers": ["vivary"]})
    (ws.path / ".claude").symlink_to(tmp_path / "elsewhere")
    claude_files(ws.path, None, None, None, {"{ws}": {"hasTrustDialogAccepted": True}})
    code, got = server(cli, "claude-code", ws.path)
    assert (code, [(m["path"], m["effect"]) for m in got["merged"]]) == (
        1, [(".claude/settings.json", "unreadable")]), got
    assert "a symbolic link is on the way to it in the workspace, which is not followed" in \
        got["merged"][0]["detail"], got
