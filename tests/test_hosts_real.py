"""The agent hosts' own command-line tools read what bootstrap-host writes as we mean it: Claude Code (`claude mcp
list` / `get`, which start each server to say "Connected"), Codex (`codex mcp get --json`, which does not start
it: the test starts the command Codex reports), Gemini CLI (`gemini mcp list`, which starts it) and opencode
(`opencode mcp list`, which starts it), installed from the npm registry at the versions in npm_tools.py, each run
in a home of its own with no credentials.

Each finds our server under the name we wrote, with our command and arguments, and starts it: at the top of a
workspace with memory off and on, for a workspace chosen with `--root`, in a path with a space and a non-ASCII
letter, and (Codex) from the user-level file. After `--uninstall` the host lists it no more, and the user's own
server stays (opencode's in the user's commented opencode.jsonc, which takes our entry meanwhile). A host that
starts a project's servers only once trusted (Claude Code, Codex, Gemini CLI) is shown not starting ours before
that, and bootstrap-host says so; opencode asks nothing. Where Codex reads the project's file and where it does
not (which `[projects."<path>"]` trusts the project), where Gemini CLI trusts the folder and where not
(~/.gemini/trustedFolders.json, `security.folderTrust`), and where Claude Code starts our server, asks first or
rejects it (`enabledMcpjsonServers` and the rest, in which settings file, in a folder trusted or not),
host-status agrees with it, and the fix bootstrap-host's note gives works. A host that merges a user-level
file with the project's by name (Codex, opencode) starts this workspace's server twice under two names, and
bootstrap-host says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed (the server needs it to start)")

from conftest import TROPO, git
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from npm_tools import CLAUDE_CODE, CODEX, GEMINI_CLI, OPENCODE, npm_bin
from test_hosts_trust import CLAUDE_CASES, CODEX_CASES, GEMINI_CASES, claude_files, gemini_files

MEMORY_ON = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
HOSTS = ["claude-code", "codex", "gemini-cli", "opencode"]
LAYOUTS = ["memory off", "memory on", "--root notes", "a path with a space and ö"]


@pytest.fixture(autouse=True)
def _no_config_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    """No host reads a config of the machine's: Codex's CODEX_HOME, opencode's OPENCODE_CONFIG and the rest."""
    for name in ("CODEX_HOME", "OPENCODE_CONFIG", "OPENCODE_CONFIG_DIR", "OPENCODE_CONFIG_CONTENT",
                 "OPENCODE_DISABLE_PROJECT_CONFIG", "GEMINI_CLI_HOME", "GEMINI_CLI_TRUSTED_FOLDERS_PATH",
                 "GEMINI_CLI_TRUST_WORKSPACE", "GEMINI_RESTRICTED_MODE", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="session")
def claude(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_bin(tmp_path_factory, CLAUDE_CODE, "claude")


@pytest.fixture(scope="session")
def codex(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_bin(tmp_path_factory, CODEX, "codex")


@pytest.fixture(scope="session")
def gemini(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_bin(tmp_path_factory, GEMINI_CLI, "gemini")


@pytest.fixture(scope="session")
def opencode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return npm_bin(tmp_path_factory, OPENCODE, "opencode")


@pytest.fixture
def host_cli(request: pytest.FixtureRequest) -> Callable[[str], Path]:
    """The host's own CLI by `--host-kind`, installed only when a test asks for that host."""
    return lambda kind: Path(request.getfixturevalue({"claude-code": "claude", "codex": "codex",
                                                      "gemini-cli": "gemini", "opencode": "opencode"}[kind]))


def home() -> Path:
    return Path(os.environ["HOME"])  # a temporary folder (conftest)


def run_host(exe: Path, *args: str, cwd: Path, code: int = 0) -> subprocess.CompletedProcess[str]:
    """The host's CLI in the test's home, with no credentials, asked not to phone home; it exits `code`."""
    env = dict(os.environ, XDG_DATA_HOME=str(home() / ".local" / "share"), XDG_CACHE_HOME=str(home() / ".cache"),
               XDG_STATE_HOME=str(home() / ".local" / "state"), CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
               DISABLE_AUTOUPDATER="1", NO_COLOR="1", OPENCODE_DISABLE_AUTOUPDATE="1",
               OPENCODE_DISABLE_MODELS_FETCH="1", OPENCODE_DISABLE_SHARE="1")
    proc = subprocess.run([str(exe), *args], cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=env, timeout=300, check=False)
    assert proc.returncode == code, proc.stdout + proc.stderr
    return proc


def host_text(exe: Path, *args: str, cwd: Path) -> str:
    proc = run_host(exe, *args, cwd=cwd)
    return proc.stdout + proc.stderr  # Gemini CLI prints its warnings and its list on either


def host_json(exe: Path, *args: str, cwd: Path) -> Any:
    """Codex's `--json` (on stdout; its warnings, such as no helper binaries under /tmp, go to stderr)."""
    return json.loads(run_host(exe, *args, cwd=cwd).stdout)


def trust(kind: str, folder: Path) -> None:
    """What the user does once, by hand, before the host starts a project's servers."""
    if kind == "claude-code":
        settings = home() / ".claude" / "settings.json"
        settings.parent.mkdir(parents=True, exist_ok=True)
        settings.write_text(json.dumps({"enableAllProjectMcpServers": True}), "utf-8")
    elif kind == "codex":
        config = home() / ".codex" / "config.toml"
        config.parent.mkdir(parents=True, exist_ok=True)
        with config.open("a", encoding="utf-8") as f:
            f.write(f'\n[projects.{json.dumps(str(folder))}]\ntrust_level = "trusted"\n')
    elif kind == "gemini-cli":
        trusted = home() / ".gemini" / "trustedFolders.json"
        trusted.parent.mkdir(parents=True, exist_ok=True)
        trusted.write_text(json.dumps({str(folder): "TRUST_FOLDER"}), "utf-8")
    # opencode asks nothing: it starts the servers of every opencode.json it reads, in any folder.


def workspace(tmp_path: Path, layout: str) -> tuple[Path, list[str]]:
    """A repository of notes laid out as `layout`: the workspace folder, and bootstrap-host's extra arguments."""
    top = tmp_path / ("my wörk" if "space" in layout else "ws")
    top.mkdir()
    git(top, "init", "-q", "-b", "main")
    files = {"README.md": "# top\n", "notes/plants.md": "# Plants\n\nThe fern needs water weekly.\n"}
    if layout == "memory on":
        files[".vivary/memory.toml"] = MEMORY_ON
    if layout != "--root notes":
        files["tropo.toml"] = TROPO
    for rel, text in files.items():
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text(text, "utf-8")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "init")
    return (top / "notes", ["--root", "notes"]) if layout == "--root notes" else (top, [])


def bootstrap(cli: Any, kind: str, cwd: Path, *extra: str) -> dict[str, Any]:
    done = cli("bootstrap-host", "--host-kind", kind, *extra, "--json", cwd=cwd)
    assert done.code == 0, done.err
    report = done.json()
    assert isinstance(report, dict)
    return report


def served_status(command: str, args: list[str], started_in: Path) -> dict[str, Any]:
    """`status` from a server started as a host starts it: the given command and arguments, a bare PATH."""
    params = StdioServerParameters(command=command, args=args, cwd=str(started_in),
                                   env=dict(os.environ, PATH="/usr/bin:/bin"))

    async def session() -> dict[str, Any]:
        async with Client(params) as client:
            status = await client.call_tool("status", {})
            assert not status.is_error, status.content
            return dict(status.structured_content or {})

    return asyncio.run(session())


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def listed(kind: str, exe: Path, where: Path) -> dict[str, str]:
    """The servers the host lists in `where`, each with its own line (Codex: its JSON), from one run."""
    if kind == "codex":
        return {s["name"]: json.dumps(s) for s in host_json(exe, "mcp", "list", "--json", cwd=where)}
    if kind == "opencode":  # `●  ✓ NAME connected`, then `│      COMMAND ARGS`; coloured whatever NO_COLOR says
        lines = [line.lstrip("│ ") for line in _ANSI.sub("", host_text(exe, "mcp", "list", cwd=where)).splitlines()]
        return {line.split()[2]: f"{' '.join(line.split()[1:])}\n{after}"
                for line, after in zip(lines, [*lines[1:], ""], strict=True) if line.startswith("●")}
    lines = host_text(exe, "mcp", "list", cwd=where).splitlines()
    return {line.lstrip("✓✗○ ").split(": ", 1)[0]: line for line in lines if ": " in line}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", HOSTS)
def test_the_host_finds_our_server_and_starts_it(kind: str, layout: str, cli: Any, tmp_path: Path,
                                                 host_cli: Callable[[str], Path]) -> None:
    exe = host_cli(kind)
    folder, extra = workspace(tmp_path, layout)
    top = folder.parent if extra else folder
    entry = bootstrap(cli, kind, top, *extra)["server"]
    assert entry["name"] == "vivary"
    trust(kind, folder)
    command, args = entry["command"], entry["args"]
    assert args[:3] == ["mcp", "-C", str(folder)]

    if kind == "claude-code":
        line = listed(kind, exe, folder).get("vivary", "")
        assert line.startswith(f"vivary: {command} {' '.join(args)} - ") and "Connected" in line, line
        got = host_text(exe, "mcp", "get", "vivary", cwd=folder)
        assert f"Command: {command}\n" in got and f"Args: {' '.join(args)}\n" in got, got
        assert "Status: ✔ Connected" in got and "Scope: Project config" in got, got
    elif kind == "codex":
        server = host_json(exe, "mcp", "get", "vivary", "--json", cwd=folder)
        assert server["enabled"] is True and server["transport"]["type"] == "stdio", server
        assert [server["transport"]["command"], server["transport"]["args"]] == [command, args]
        # Codex's `mcp list` does not start a server: start the one it would, from what it read.
        status = served_status(server["transport"]["command"], server["transport"]["args"], tmp_path)
        assert status["workspace"]["root"] == str(folder)
    elif kind == "gemini-cli":
        line = listed(kind, exe, folder).get("vivary", "")
        assert line.startswith(f"✓ vivary: {command} {' '.join(args)} (stdio) - Connected"), line
    else:
        assert listed(kind, exe, folder).get("vivary") == f"✓ vivary connected\n{command} {' '.join(args)}"


@pytest.mark.parametrize("kind", HOSTS)
def test_after_uninstall_the_host_lists_only_the_users_own_server(kind: str, cli: Any, tmp_path: Path,
                                                                  host_cli: Callable[[str], Path]) -> None:
    exe = host_cli(kind)
    folder, _ = workspace(tmp_path, "memory off")
    mine = {"claude-code": (".mcp.json", '{"mcpServers": {"mine": {"type": "stdio", "command": "/bin/true"}}}\n'),
            "codex": (".codex/config.toml", '[mcp_servers.mine]\ncommand = "/bin/true"\n'),
            "gemini-cli": (".gemini/settings.json",
                           '{\n  // my own\n  "mcpServers": {"mine": {"command": "/bin/true"}}\n}\n'),
            # With its `$schema`, as opencode's docs show every file: opencode writes one into a file without.
            "opencode": ("opencode.jsonc", '{\n  "$schema": "https://opencode.ai/config.json",\n  // my own\n'
                                           '  "mcp": {"mine": {"type": "local", "command": ["/bin/true"]},},\n}\n')}
    rel, text = mine[kind]
    (folder / rel).parent.mkdir(exist_ok=True)
    (folder / rel).write_text(text, "utf-8")
    trust(kind, folder)
    assert {"mine", "vivary"} & set(listed(kind, exe, folder)) == {"mine"}

    bootstrap(cli, kind, folder)
    both = listed(kind, exe, folder)
    assert {"mine", "vivary"} <= set(both)
    if kind == "opencode":  # the entry went into the user's opencode.jsonc, comments kept, and started
        assert both["vivary"].startswith("✓ vivary connected\n"), both
        assert "// my own" in (folder / rel).read_text("utf-8") and not (folder / "opencode.json").exists()

    bootstrap(cli, kind, folder, "--uninstall")
    assert {"mine", "vivary"} & set(listed(kind, exe, folder)) == {"mine"}
    assert (folder / rel).read_text("utf-8") == text


@pytest.mark.parametrize("layout", ["memory off", "a path with a space and ö"])
def test_codex_reads_the_user_level_entry(layout: str, cli: Any, tmp_path: Path, codex: Path) -> None:
    """`--user` writes ~/.codex/config.toml, which Codex reads in any folder, trusted or not; the user's own
    server there stays after `--uninstall`."""
    folder, _ = workspace(tmp_path, layout)
    config = home() / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[mcp_servers.mine]\ncommand = "/bin/true"\n', "utf-8")
    entry = bootstrap(cli, "codex", folder, "--user")["server"]
    name = entry["name"]
    assert name == ("vivary-my-w-rk" if "space" in layout else "vivary-ws")

    server = host_json(codex, "mcp", "get", name, "--json", cwd=folder)
    assert [server["transport"]["command"], server["transport"]["args"]] == [entry["command"], entry["args"]]
    assert served_status(entry["command"], entry["args"], tmp_path)["workspace"]["root"] == str(folder)
    assert {"mine", name} <= set(listed("codex", codex, tmp_path))  # user-level servers: listed from anywhere

    bootstrap(cli, "codex", folder, "--user", "--uninstall")
    assert {"mine", name} & set(listed("codex", codex, folder)) == {"mine"}
    assert config.read_text("utf-8") == '[mcp_servers.mine]\ncommand = "/bin/true"\n'


def test_codex_starts_both_names_of_one_workspace_and_bootstrap_host_says_so(cli: Any, tmp_path: Path,
                                                                              codex: Path) -> None:
    """Codex merges the project's `.codex/config.toml` with the user's by name: `vivary` there and `vivary-ws`
    in ~/.codex are two servers on one memory; one name is one server."""
    folder, _ = workspace(tmp_path, "memory off")
    trust("codex", folder)
    bootstrap(cli, "codex", folder)
    notes = bootstrap(cli, "codex", folder, "--user")["notes"]
    assert any(n.startswith("Codex also reads .codex/config.toml, where this workspace's server is 'vivary'")
               for n in notes), notes
    both = host_json(codex, "mcp", "list", "--json", cwd=folder)
    assert sorted(s["name"] for s in both if s["transport"]["args"][:3] == ["mcp", "-C", str(folder)]) == [
        "vivary", "vivary-ws"]

    bootstrap(cli, "codex", folder, "--user", "--uninstall")
    notes = bootstrap(cli, "codex", folder, "--user", "--name", "vivary")["notes"]
    assert not any("also reads" in n for n in notes), notes
    assert [s["name"] for s in host_json(codex, "mcp", "list", "--json", cwd=folder)] == ["vivary"]


def test_opencode_leaves_our_opencode_json_as_written_and_uninstall_removes_it(cli: Any, tmp_path: Path,
                                                                               opencode: Path) -> None:
    """opencode writes a `$schema` into a config file it reads without one: ours holds it from the start, so the
    file is still what bootstrap-host wrote after opencode started our server, and `--uninstall` removes it."""
    folder, _ = workspace(tmp_path, "memory off")
    bootstrap(cli, "opencode", folder)
    written = (folder / "opencode.json").read_bytes()
    assert listed("opencode", opencode, folder)["vivary"].startswith("✓ vivary connected\n")
    assert (folder / "opencode.json").read_bytes() == written
    bootstrap(cli, "opencode", folder, "--uninstall")
    assert not (folder / "opencode.json").exists()
    assert git(folder, "status", "--porcelain", "--untracked-files=all") == ""


def test_opencode_merges_its_user_files_by_name_and_bootstrap_host_says_so(cli: Any, tmp_path: Path,
                                                                           opencode: Path) -> None:
    """opencode merges ~/.config/opencode/opencode.json (and config.json, opencode.jsonc) with the project's file
    by server name, member by member: this workspace's server under a second name there starts twice, and an
    entry named `vivary` there lends ours its `enabled: false`. bootstrap-host writes neither, and says so."""
    folder, _ = workspace(tmp_path, "memory off")
    entry = bootstrap(cli, "opencode", folder)["server"]
    argv = [entry["command"], *entry["args"]]
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (user / "opencode.json").write_text(json.dumps({"mcp": {"vivary-ws": {"type": "local", "command": argv}}}))
    off = {"type": "local", "command": ["/bin/true"], "enabled": False}
    (user / "config.json").write_text(json.dumps({"mcp": {"vivary": off}}))

    notes = bootstrap(cli, "opencode", folder)["notes"]
    assert any(n.startswith("opencode also reads ~/.config/opencode/opencode.json, where this workspace's server "
                            "is 'vivary-ws': in this workspace it starts both") for n in notes), notes
    assert any(n.startswith("opencode also reads ~/.config/opencode/config.json, which has a server named 'vivary' "
                            "too, and merges the two member by member") for n in notes), notes
    both = listed("opencode", opencode, folder)
    line = " ".join(argv)
    assert (both.get("vivary-ws"), both.get("vivary")) == (f"✓ vivary-ws connected\n{line}",
                                                            f"○ vivary disabled\n{line}"), both


def test_host_status_agrees_with_opencode_that_a_user_file_turns_our_entry_off(cli: Any, tmp_path: Path,
                                                                              opencode: Path) -> None:
    """Where `opencode mcp list` shows `○ vivary disabled` (a `vivary` with `enabled: false` in the user's
    ~/.config/opencode/config.json), host-status says `disabled`, names that file, and exits 1; and where
    opencode shows it connected again, host-status says `installed`."""
    folder, _ = workspace(tmp_path, "memory off")
    bootstrap(cli, "opencode", folder)
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (user / "config.json").write_text(json.dumps({"mcp": {"vivary": {"enabled": False}}}))
    assert listed("opencode", opencode, folder)["vivary"].startswith("○ vivary disabled\n")
    status = cli("host-status", "--host-kind", "opencode", "--json", cwd=folder)
    server = status.json()["hosts"][0]["servers"][0]
    assert (status.code, server["state"]) == (1, "disabled"), server
    assert [(m["path"], m["effect"]) for m in server["merged"]] == [("~/.config/opencode/config.json", "disabled")]

    (user / "config.json").unlink()
    assert listed("opencode", opencode, folder)["vivary"].startswith("✓ vivary connected\n")
    status = cli("host-status", "--host-kind", "opencode", "--json", cwd=folder)
    assert (status.code, status.json()["hosts"][0]["servers"][0]["state"]) == (0, "installed")


def test_host_status_agrees_with_opencode_on_the_whole_merge(cli: Any, tmp_path: Path, opencode: Path) -> None:
    """opencode takes `enabled: false` from the user's config.json and then `enabled: true` from the workspace's
    .opencode/, read later: ours runs, and host-status says `installed`; the other way round, both say disabled."""
    folder, _ = workspace(tmp_path, "memory off")
    bootstrap(cli, "opencode", folder)
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (folder / ".opencode").mkdir()
    for first, last, shown, state in ((False, True, "✓ vivary connected", "installed"),
                                      (True, False, "○ vivary disabled", "disabled")):
        (user / "config.json").write_text(json.dumps({"mcp": {"vivary": {"enabled": first}}}))
        (folder / ".opencode" / "opencode.json").write_text(json.dumps({"mcp": {"vivary": {"enabled": last}}}))
        assert listed("opencode", opencode, folder)["vivary"].startswith(shown + "\n")
        status = cli("host-status", "--host-kind", "opencode", "--json", cwd=folder)
        assert status.json()["hosts"][0]["servers"][0]["state"] == state, status.out


def test_host_status_agrees_with_codex_that_the_user_file_turns_the_project_s_entry_off(cli: Any, tmp_path: Path,
                                                                                       codex: Path) -> None:
    """Codex merges ~/.codex/config.toml and the project's file by server name, member by member: a `vivary` with
    `enabled = false` and a command of its own in the user's file leaves the project's command and turns it off."""
    folder, _ = workspace(tmp_path, "memory off")
    trust("codex", folder)
    entry = bootstrap(cli, "codex", folder)["server"]
    with (home() / ".codex" / "config.toml").open("a", encoding="utf-8") as f:
        f.write('\n[mcp_servers.vivary]\ncommand = "/bin/true"\nenabled = false\n')
    server = host_json(codex, "mcp", "get", "vivary", "--json", cwd=folder)
    assert server["enabled"] is False and server["transport"]["command"] == entry["command"], server
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=folder)
    assert (status.code, status.json()["hosts"][0]["servers"][0]["state"]) == (1, "disabled"), status.out


def placed(tmp_path: Path, where: str) -> tuple[Path, Path, Path, list[str]]:
    """A workspace `where` a case puts it: at the top of its work tree ("top"), in `notes` of it with `--root notes`
    ("notes"), or in a linked worktree of it ("linked"): (its folder, the main work tree's top, the folder commands
    run in, their extra arguments)."""
    folder, extra = workspace(tmp_path, "--root notes" if where == "notes" else "memory off")
    top = folder.parent if extra else folder
    run_in = top
    if where == "linked":
        folder = run_in = tmp_path / "linked"
        git(top, "worktree", "add", "-q", str(folder))
    return folder, top, run_in, extra


@pytest.mark.parametrize(("where", "levels", "read"), CODEX_CASES)
def test_host_status_agrees_with_codex_on_whether_it_reads_the_project_s_file(
        where: str, levels: dict[str, str], read: bool, cli: Any, tmp_path: Path, codex: Path) -> None:
    """Codex reads .codex/config.toml only where ~/.codex/config.toml trusts the project (`[projects."<path>"]
    trust_level`): the folder's own key, else its project root's, else its repository's main work tree's. Where
    `codex mcp list` lists our server host-status says `installed`, and where it lists none `untrusted`, exit 1."""
    folder, top, run_in, extra = placed(tmp_path, where)
    bootstrap(cli, "codex", run_in, *extra)
    config = home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    for key, level in levels.items():
        with config.open("a", encoding="utf-8") as f:
            path = key.format(top=top, above=top.parent, linked=tmp_path / "linked")
            f.write(f'\n[projects.{json.dumps(path)}]\ntrust_level = "{level}"\n')
    assert ("vivary" in listed("codex", codex, folder)) is read
    status = cli("host-status", "--host-kind", "codex", *extra, "--json", cwd=run_in)
    state = status.json()["hosts"][0]["servers"][0]["state"]
    assert (state, status.code) == (("installed", 0) if read else ("untrusted", 1)), status.out


def test_the_trust_bootstrap_host_asks_for_is_the_one_codex_needs(cli: Any, tmp_path: Path, codex: Path) -> None:
    """bootstrap-host's note for an untrusted project names the table to add to ~/.codex/config.toml: added as it
    says, Codex lists our server, and host-status says `installed`."""
    folder, _ = workspace(tmp_path, "a path with a space and ö")
    notes = bootstrap(cli, "codex", folder)["notes"]
    said = next(n for n in notes if n.startswith("Codex reads .codex/config.toml only in a project you trust"))
    table = re.search(r"add `(\[projects\..*\])` with `(trust_level = \"trusted\")` to ~/\.codex/config\.toml$", said)
    assert table is not None, said
    assert "vivary" not in listed("codex", codex, folder)
    config = home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"{table.group(1)}\n{table.group(2)}\n", "utf-8")
    assert "vivary" in listed("codex", codex, folder)
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=folder)
    assert (status.code, status.json()["hosts"][0]["servers"][0]["state"]) == (0, "installed"), status.out


@pytest.mark.parametrize("kind, untrusted, note, state", [
    ("claude-code", "Pending approval", "Claude Code asks once before it starts a server", "unapproved"),
    ("codex", "No MCP servers configured", "Codex reads .codex/config.toml only in a project you trust",
     "untrusted"),
    ("gemini-cli", "Disabled", "Gemini CLI starts MCP servers only in a folder you trust", "untrusted"),
])
def test_an_untrusted_project_does_not_start_our_server_and_bootstrap_host_says_so(
        kind: str, untrusted: str, note: str, state: str, cli: Any, tmp_path: Path,
        host_cli: Callable[[str], Path]) -> None:
    exe = host_cli(kind)
    folder, _ = workspace(tmp_path, "memory off")
    notes = bootstrap(cli, kind, folder)["notes"]
    said = [n for n in notes if n.startswith(note)]
    assert len(said) == 1, notes
    out = host_text(exe, "mcp", "list", cwd=folder)
    assert untrusted in out, out
    assert "Connected" not in out, out
    status = cli("host-status", "--host-kind", kind, "--json", cwd=folder)
    server = status.json()["hosts"][0]["servers"][0]
    assert (status.code, server["state"], [m["detail"] for m in server["merged"]]) == (1, state, said), server


@pytest.mark.parametrize(("folders", "settings", "trusted"), GEMINI_CASES)
def test_host_status_agrees_with_gemini_cli_on_whether_it_trusts_the_folder(
        folders: dict[str, str] | None, settings: dict[str, Any] | None, trusted: bool, cli: Any, tmp_path: Path,
        gemini: Path) -> None:
    """Where `gemini mcp list` shows our server Connected host-status says `installed`, and where it shows it
    Disabled (an untrusted folder) `untrusted`, exit 1: every rule of ~/.gemini/trustedFolders.json and of
    `security.folderTrust` in tests/test_hosts_trust.py, against Gemini CLI itself."""
    folder, _ = workspace(tmp_path, "memory off")
    bootstrap(cli, "gemini-cli", folder)
    gemini_files(folder, folders, settings)
    status = cli("host-status", "--host-kind", "gemini-cli", "--json", cwd=folder)
    line = listed("gemini-cli", gemini, folder).get("vivary", "")
    assert line.endswith("- Connected" if trusted else "- Disabled"), line
    state = status.json()["hosts"][0]["servers"][0]["state"]
    assert (state, status.code) == (("installed", 0) if trusted else ("untrusted", 1)), status.out


def test_gemini_cli_takes_comments_but_stops_on_a_trailing_comma_and_so_does_bootstrap_host(
        cli: Any, tmp_path: Path, gemini: Path) -> None:
    """Gemini CLI strips comments from its settings.json and trustedFolders.json and hands the rest to JSON.parse:
    a comment is read, a trailing comma or a byte order mark stops it (exit 52). bootstrap-host writes into the
    commented file, and refuses the others, naming the line and column, without writing; host-status calls a
    trustedFolders.json with a trailing comma unreadable."""
    folder, _ = workspace(tmp_path, "memory off")
    trust("gemini-cli", folder)
    settings = folder / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{\n  // mine\n  "mcpServers": {\n    "mine": {"command": "/bin/true"}\n  }\n}\n', "utf-8")
    bootstrap(cli, "gemini-cli", folder)
    assert listed("gemini-cli", gemini, folder)["vivary"].endswith("- Connected")
    bootstrap(cli, "gemini-cli", folder, "--uninstall")

    comma = '{\n  "mcpServers": {\n    "mine": {"command": "/bin/true"},\n  }\n}\n'
    for text, said in ((comma, "line 3, column 37: trailing comma"),
                       ("\ufeff" + comma.replace("},\n", "}\n"), "line 1, column 1: a byte order mark")):
        settings.write_text(text, "utf-8")
        out = run_host(gemini, "mcp", "list", cwd=folder, code=52)
        assert f"Error in {settings}" in out.stdout + out.stderr
        done = cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=folder)
        assert done.code == 2 and f".gemini/settings.json: {said}" in done.err, done.err
        assert settings.read_text("utf-8") == text

    settings.unlink()
    bootstrap(cli, "gemini-cli", folder)
    folders = home() / ".gemini" / "trustedFolders.json"
    folders.write_text(f"{{{json.dumps(str(folder))}: \"TRUST_FOLDER\",\n}}", "utf-8")
    out = run_host(gemini, "mcp", "list", cwd=folder, code=52)
    assert f"Error in {folders}" in out.stdout + out.stderr
    status = cli("host-status", "--host-kind", "gemini-cli", "--json", cwd=folder)
    merged = status.json()["hosts"][0]["servers"][0]["merged"]
    assert (status.code, [(m["path"], m["effect"]) for m in merged]) == (
        1, [("~/.gemini/trustedFolders.json", "unreadable")]), merged


def test_host_status_agrees_with_gemini_cli_on_how_it_merges_the_user_s_settings(cli: Any, tmp_path: Path,
                                                                                  gemini: Path) -> None:
    """Gemini CLI merges `mcpServers` of ~/.gemini/settings.json and the project's .gemini/settings.json by name,
    the project's entry whole: a `vivary` of the user's runs ours, and this workspace's server under another name
    there runs too, twice on one memory, which host-status and bootstrap-host say (`second`)."""
    folder, _ = workspace(tmp_path, "memory off")
    trust("gemini-cli", folder)
    entry = bootstrap(cli, "gemini-cli", folder)["server"]
    line = " ".join([entry["command"], *entry["args"]])
    settings = home() / ".gemini" / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {
        "vivary": {"command": "/bin/echo", "args": ["mine"], "env": {"MINE": "1"}},
        "vivary-ws": {"command": entry["command"], "args": entry["args"]}}}), "utf-8")
    both = listed("gemini-cli", gemini, folder)
    assert (both["vivary"], both["vivary-ws"]) == (f"✓ vivary: {line} (stdio) - Connected",
                                                   f"✓ vivary-ws: {line} (stdio) - Connected"), both
    status = cli("host-status", "--host-kind", "gemini-cli", "--json", cwd=folder)
    server = status.json()["hosts"][0]["servers"][0]
    assert (status.code, server["state"], [(m["path"], m["effect"], m["name"]) for m in server["merged"]]) == (
        0, "installed", [("~/.gemini/settings.json", "second", "vivary-ws")]), server
    assert server["merged"][0]["detail"] in bootstrap(cli, "gemini-cli", folder)["notes"]


@pytest.mark.parametrize(("user", "project", "local", "projects", "state"), CLAUDE_CASES)
def test_host_status_agrees_with_claude_code_on_whether_our_server_is_approved(
        user: dict[str, Any] | None, project: dict[str, Any] | None, local: dict[str, Any] | None,
        projects: dict[str, Any] | None, state: str, cli: Any, tmp_path: Path, claude: Path) -> None:
    """`claude mcp get vivary` says Connected where host-status says `installed`, Pending approval where it says
    `unapproved`, Rejected where it says `disabled`: every rule of tests/test_hosts_trust.py against Claude Code
    itself. Claude Code moves the lists an earlier version kept in ~/.claude.json into .claude/settings.local.json
    when it starts: host-status says the same before and after."""
    folder, _ = workspace(tmp_path, "memory off")
    bootstrap(cli, "claude-code", folder)
    claude_files(folder, user, project, local, projects)
    before = cli("host-status", "--host-kind", "claude-code", "--json", cwd=folder)
    got = host_text(claude, "mcp", "get", "vivary", cwd=folder)
    said = {"installed": "Status: ✔ Connected", "unapproved": "Status: ⏸ Pending approval",
            "disabled": "Status: ✘ Rejected"}[state]
    assert said in got, got
    after = cli("host-status", "--host-kind", "claude-code", "--json", cwd=folder)
    for status in (before, after):
        server = status.json()["hosts"][0]["servers"][0]
        assert (server["state"], status.code) == (state, 0 if state == "installed" else 1), status.out


@pytest.mark.parametrize(("where", "trusted_key", "approved"), [
    ("notes", "{top}", True), ("notes", "{top}/notes", True), ("notes", "{up}", False),
    ("linked", "{top}", True), ("linked", "{linked}", True),
])
def test_host_status_agrees_with_claude_code_on_which_folder_s_trust_counts(
        where: str, trusted_key: str, approved: bool, cli: Any, tmp_path: Path, claude: Path) -> None:
    """The workspace's own approval counts in a folder whose trust dialog was accepted: the folder, one above it up
    to the top of the work tree, or the repository's main work tree (a linked worktree's)."""
    folder, top, run_in, extra = placed(tmp_path, where)
    bootstrap(cli, "claude-code", run_in, *extra)
    claude_files(folder, None, None, {"enabledMcpjsonServers": ["vivary"]}, None)
    key = trusted_key.format(top=top, up=top.parent, linked=tmp_path / "linked")
    (home() / ".claude.json").write_text(json.dumps({"projects": {key: {"hasTrustDialogAccepted": True}}}), "utf-8")
    status = cli("host-status", "--host-kind", "claude-code", *extra, "--json", cwd=run_in)
    got = host_text(claude, "mcp", "get", "vivary", cwd=folder)
    assert ("Status: ✔ Connected" if approved else "Status: ⏸ Pending approval") in got, got
    state = status.json()["hosts"][0]["servers"][0]["state"]
    assert state == ("installed" if approved else "unapproved"), status.out


def test_the_trust_bootstrap_host_asks_gemini_cli_and_claude_code_for_starts_our_server(
        cli: Any, tmp_path: Path, claude: Path, gemini: Path) -> None:
    """Done as bootstrap-host's notes say (the entry for ~/.gemini/trustedFolders.json, the name for
    `enabledMcpjsonServers` in ~/.claude/settings.json), each host starts our server, and host-status says
    `installed`."""
    folder, _ = workspace(tmp_path, "a path with a space and ö")
    gemini_note = next(n for n in bootstrap(cli, "gemini-cli", folder)["notes"] if "folder you trust" in n)
    entry = re.search(r"add `(\"[^`]*\"): \"TRUST_FOLDER\"` to ~/\.gemini/trustedFolders\.json$", gemini_note)
    assert entry is not None, gemini_note
    claude_note = next(n for n in bootstrap(cli, "claude-code", folder)["notes"] if "approved" in n)
    name = re.search(r"or add (\"[^\"]+\") to `enabledMcpjsonServers` in ~/\.claude/settings\.json, which", claude_note)
    assert name is not None, claude_note
    (home() / ".gemini").mkdir(exist_ok=True)
    (home() / ".gemini" / "trustedFolders.json").write_text(
        json.dumps({json.loads(entry.group(1)): "TRUST_FOLDER"}), "utf-8")
    (home() / ".claude").mkdir(exist_ok=True)
    (home() / ".claude" / "settings.json").write_text(
        json.dumps({"enabledMcpjsonServers": [json.loads(name.group(1))]}), "utf-8")
    assert listed("gemini-cli", gemini, folder)["vivary"].endswith("- Connected")
    assert "Connected" in listed("claude-code", claude, folder)["vivary"]
    for kind in ("gemini-cli", "claude-code"):
        status = cli("host-status", "--host-kind", kind, "--json", cwd=folder)
        assert (status.code, status.json()["hosts"][0]["servers"][0]["state"]) == (0, "installed"), status.out
