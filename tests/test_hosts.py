"""bootstrap-host and host-status against real host config files: round trips byte for byte, merges that keep
the user's servers and comments, refusals, and the per-OS places of user-level files."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, approve_claude_code, run_git_vivary
from test_hosts_trust import CODEX_CASES

from vivary_git.hosts import blocks, jsonedit
from vivary_git.hosts.kinds import HOSTS, user_config_path

DATA = Path(__file__).parent / "data" / "hosts"


@pytest.fixture(autouse=True)
def _no_codex_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("APPDATA", raising=False)


def plain_workspace(repo: Repo) -> Repo:
    """A workspace of one note and no guidance file yet."""
    repo.write({"tropo.toml": TROPO, "notes/a.md": "# A\n"})
    return repo


@pytest.fixture
def ws(repo: Repo) -> Repo:
    shutil.copy(DATA / "AGENTS.md", plain_workspace(repo).path / "AGENTS.md")
    return repo


def home() -> Path:
    return Path(os.environ["HOME"])


def trust_codex(folder: Path | str, level: str = "trusted") -> None:
    """What the user does once before Codex reads a project's .codex/config.toml (tests/test_hosts_real.py shows
    Codex reading none before): `folder` is the key, exactly."""
    config = home() / ".codex" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    with config.open("a", encoding="utf-8") as f:
        f.write(f'\n[projects.{json.dumps(str(folder))}]\ntrust_level = "{level}"\n')


def snapshot(*roots: Path) -> dict[str, bytes]:
    """Every file (and empty folder) under the roots, outside .git."""
    out: dict[str, bytes] = {}
    for root in roots:
        for p in sorted(root.rglob("*")):
            rel = p.relative_to(root).as_posix()
            if rel == ".git" or rel.startswith(".git/"):
                continue
            if p.is_file():
                out[f"{root}/{rel}"] = p.read_bytes()
            elif p.is_dir() and not any(p.iterdir()):
                out[f"{root}/{rel}/"] = b""
    return out


_JSONC_TOKEN = re.compile(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', re.DOTALL)


def load_jsonc(text: str) -> Any:
    """An independent JSONC reader for the assertions: comments out (strings kept), trailing commas out."""
    stripped = _JSONC_TOKEN.sub(lambda m: m.group(1) or "", text.lstrip("\ufeff"))
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", stripped))


def load(path: Path) -> Any:
    text = path.read_text("utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else load_jsonc(text)


# kind, fixture, where the host reads it (~ = HOME), extra flags, server name, where the guidance goes
CASES = [
    ("claude-code", "claude-code.mcp.json", ".mcp.json", [], "vivary", "CLAUDE.md"),
    ("codex", "codex.config.toml", ".codex/config.toml", [], "vivary", "AGENTS.md"),
    ("cursor", "cursor.mcp.json", ".cursor/mcp.json", [], "vivary", "AGENTS.md"),
    ("gemini-cli", "gemini.settings.json", ".gemini/settings.json", [], "vivary", "GEMINI.md"),
    ("vscode", "vscode.mcp.json", ".vscode/mcp.json", [], "vivary", ".github/copilot-instructions.md"),
    ("kiro", "kiro.mcp.json", ".kiro/settings/mcp.json", [], "vivary", "AGENTS.md"),
    ("kiro", "kiro.mcp.json", "~/.kiro/settings/mcp.json", ["--user"], "vivary-ws", "AGENTS.md"),
    ("roo-code", "roo.mcp.json", ".roo/mcp.json", [], "vivary", "AGENTS.md"),
    ("zed", "zed.settings.json", ".zed/settings.json", [], "vivary", "AGENTS.md"),
    ("claude-desktop", "claude-desktop.json", "~/.config/Claude/claude_desktop_config.json", ["--user"],
     "vivary-ws", None),
    ("claude-desktop", "claude-desktop.windows.json", "~/.config/Claude/claude_desktop_config.json", ["--user"],
     "vivary-ws", None),
    ("codex", "codex.config.toml", "~/.codex/config.toml", ["--user"], "vivary-ws", "AGENTS.md"),
    ("windsurf", "windsurf.mcp_config.json", "~/.codeium/windsurf/mcp_config.json", ["--user"], "vivary-ws",
     "AGENTS.md"),
]


def where(ws: Repo, dest: str) -> Path:
    return home() / dest[2:] if dest.startswith("~/") else ws.path / dest


@pytest.mark.parametrize(("kind", "fixture", "dest", "extra", "name", "guide"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{'user' if c[3] else 'project'}" for c in CASES])
def test_round_trip_keeps_every_byte(ws: Repo, cli: Any, kind: str, fixture: str, dest: str, extra: list[str],
                                     name: str, guide: str | None) -> None:
    config = where(ws, dest)
    config.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / fixture, config)
    original = load(config)
    start = snapshot(ws.path, home())

    first = cli("bootstrap-host", "--host-kind", kind, *extra, "--json", cwd=ws.path)
    assert first.code == 0, first.err
    rep = first.json()
    server = rep["server"]
    assert server["name"] == name
    assert server["args"][-3:] == ["mcp", "-C", str(ws.path)]
    assert Path(server["command"]).is_file()
    installed = snapshot(ws.path, home())
    assert installed != start

    # As data: the user's servers and settings exactly as they were, plus ours.
    data = load(config)
    container = _container(kind)
    ours = data[container].pop(name)
    assert ours == {k: v for k, v in server.items() if k != "name"}
    if container not in original:
        data.pop(container)
    assert data == original
    # As text: every original line is still there, comments included.
    text = config.read_text("utf-8")
    lines = (DATA / fixture).read_text("utf-8").splitlines()
    for line in lines if len(lines) > 1 else []:  # a one-line (minified) file gains our entry inside its line
        assert line in text
    if guide is not None:
        assert blocks.Markers(*_guidance_markers()).span((ws.path / guide).read_text("utf-8"), guide) is not None

    again = cli("bootstrap-host", "--host-kind", kind, *extra, "--json", cwd=ws.path)
    assert again.code == 0, again.err
    assert {f["action"] for f in again.json()["files"]} == {"unchanged"}
    assert snapshot(ws.path, home()) == installed

    gone = cli("bootstrap-host", "--host-kind", kind, *extra, "--uninstall", "--json", cwd=ws.path)
    assert gone.code == 0, gone.err
    assert snapshot(ws.path, home()) == start


def _container(kind: str) -> str:
    """The table of servers in the host's file: `mcpServers`, VS Code's `servers`, Codex's `mcp_servers`."""
    config = HOSTS[kind].config
    assert config is not None
    return config.container


def _guidance_markers() -> tuple[str, str]:
    from vivary_git.hosts.install import GUIDANCE_MARKERS

    return GUIDANCE_MARKERS.begin, GUIDANCE_MARKERS.end


@pytest.mark.parametrize("kind", ["claude-code", "codex", "cursor", "gemini-cli", "vscode", "kiro", "roo-code",
                                  "zed", "opencode", "continue", "generic"])
def test_fresh_workspace_round_trip_removes_what_it_created(repo: Repo, cli: Any, kind: str) -> None:
    repo.write({"tropo.toml": TROPO})
    start = snapshot(repo.path)
    r = cli("bootstrap-host", "--host-kind", kind, cwd=repo.path)
    assert r.code == 0, r.err
    created = set(snapshot(repo.path)) - set(start)
    assert created  # a config file and/or a guidance file
    assert cli("bootstrap-host", "--host-kind", kind, cwd=repo.path).code == 0
    assert cli("bootstrap-host", "--host-kind", kind, "--uninstall", cwd=repo.path).code == 0
    assert snapshot(repo.path) == start  # files and the .cursor/ .gemini/ .codex/ .vscode/ .github/ .kiro/ .roo/
    # .zed/ folders gone


def test_fresh_json_file_is_plain_json_the_host_reads(repo: Repo, cli: Any) -> None:
    repo.write({"tropo.toml": TROPO})
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=repo.path).code == 0
    data = json.loads((repo.path / ".mcp.json").read_text("utf-8"))
    entry = data["mcpServers"]["vivary"]
    assert entry["type"] == "stdio" and entry["args"] == ["mcp", "-C", str(repo.path)]


def test_generic_writes_agents_md_and_prints_the_command(repo: Repo, cli: Any) -> None:
    repo.write({"tropo.toml": TROPO})
    r = cli("bootstrap-host", "--host-kind", "generic", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    rep = r.json()
    assert rep["server"] is None
    assert [f["path"] for f in rep["files"]] == ["AGENTS.md"]
    assert any(f"mcp -C {repo.path}" in n for n in rep["notes"])


@pytest.mark.parametrize("text", [
    "{}", "{ }", "{\n}", '{"mcpServers": {}}', '{"mcpServers": {  }, "x": 1}', '{"mcpServers":{"a":1,}}',
    '{\n\t"mcpServers": {\n\t\t"a": {"command": "x"}\n\t}\n}', '\ufeff{"a": [1, 2, {"b": null}]}\r\n',
    '{"a": 1 // note\n}', '/* head */ {"mcpServers": /* none yet */ {}}',
    '{"a": 1e400, "b": -2E+999, "mcpServers": {}}',  # JSON all the same: a host's JavaScript reads Infinity
])
def test_json_insert_then_remove_is_the_identity(text: str) -> None:
    from vivary_git.hosts.install import json_install, json_uninstall
    from vivary_git.hosts.kinds import HOSTS

    spec = HOSTS["cursor"].config
    assert spec is not None
    root = Path("/w")
    entry = {"command": "/bin/git-vivary", "args": ["mcp", "-C", "/w"]}
    added = json_install(text, spec, "vivary", entry, root, "f")
    assert load_jsonc(added)["mcpServers"]["vivary"] == entry
    assert json_install(added, spec, "vivary", entry, root, "f") == added
    assert json_uninstall(added, spec, "vivary", root, "f") == (text, "")


def test_a_container_of_the_wrong_kind_is_named_with_its_article(repo: Repo, cli: Any) -> None:
    repo.write({"tropo.toml": TROPO, ".mcp.json": '{"mcpServers": []}'})
    r = cli("bootstrap-host", "--host-kind", "claude-code", cwd=repo.path)
    assert r.code == 2 and "'mcpServers' is an array, not an object" in r.err, r.err


def test_an_emptied_file_laid_out_as_created_is_deleted() -> None:
    """The one layout removal cannot tell apart: `{NL}NL` is what a file bootstrap-host created reads once
    emptied, so a user's file holding exactly that is taken as ours (docs/hosts.md says so)."""
    from vivary_git.hosts.install import json_install, json_uninstall
    from vivary_git.hosts.kinds import HOSTS

    spec = HOSTS["claude-code"].config
    assert spec is not None
    entry = {"command": "c", "args": ["mcp", "-C", "/w"]}
    created = json_install(None, spec, "vivary", entry, Path("/w"), "f")
    assert json_install("{\n}\n", spec, "vivary", entry, Path("/w"), "f") == created
    assert json_uninstall(created, spec, "vivary", Path("/w"), "f") == (None, "")


def test_user_without_final_newline_and_crlf_keep_their_bytes() -> None:
    m = blocks.Markers("<!-- b -->", "<!-- e -->")
    for text in ("no final newline", "lines\r\nwith crlf\r\n", "", "\n\n", "x\n"):
        added = blocks.put(text, m, "body\n", "F")
        assert blocks.put(added, m, "body\n", "F") == added
        assert blocks.remove(added, m, "F") == text
    assert blocks.remove(blocks.put(None, m, "body\n", "F"), m, "F") is None  # a created file goes


@pytest.mark.parametrize(("kind", "dest", "bad", "line"), [
    ("claude-code", ".mcp.json", '{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n', 3),
    ("claude-code", ".mcp.json", '{\n  // a comment\n  "mcpServers": {}\n}\n', 2),
    ("cursor", ".cursor/mcp.json", '{\n  "mcpServers": {\n    "a": {"command": "x"\n  }\n', 5),
    ("gemini-cli", ".gemini/settings.json", '{\n  "mcpServers": {"a": 1},\n  "mcpServers": {}\n}\n', 3),
    ("codex", ".codex/config.toml", 'model = "x"\n[mcp_servers.a]\ncommand = \n', 3),
    ("gemini-cli", ".gemini/settings.json", '[1, 2]\n', 1),
    # Gemini CLI takes comments but stops on a trailing comma (strip-json-comments, then JSON.parse; exit 52)
    ("gemini-cli", ".gemini/settings.json", '{\n  // ours\n  "mcpServers": {\n    "a": {"command": "x"},\n  }\n}\n', 4),
    ("gemini-cli", ".gemini/settings.json", '\ufeff{\n  "mcpServers": {}\n}\n', 1),  # and on a byte order mark
    ("cursor", ".cursor/mcp.json", '{"mcpServers": []}\n', 1),
])
def test_unparsable_config_is_exit_2_with_its_line_and_never_written(
        ws: Repo, cli: Any, kind: str, dest: str, bad: str, line: int) -> None:
    ws.write({dest: bad})
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", kind, cwd=ws.path)
    assert r.code == 2
    assert f"{dest}: line {line}" in r.err and "Traceback" not in r.err
    assert snapshot(ws.path) == start  # nothing written, not even the guidance block


def test_a_config_cut_short_says_so(ws: Repo, cli: Any) -> None:
    ws.write({".mcp.json": "{"})
    r = cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path)
    assert r.code == 2 and "unexpected end of file" in r.err, r.err


def test_non_utf8_and_non_file_configs_are_exit_2(ws: Repo, cli: Any) -> None:
    ws.write({".mcp.json": b'{\n  "x": "\xff"\n}\n'})
    r = cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path)
    assert r.code == 2 and ".mcp.json: line 2: not UTF-8" in r.err
    (ws.path / ".cursor" / "mcp.json").mkdir(parents=True)
    r = cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path)
    assert r.code == 2 and "not a regular file" in r.err
    (ws.path / ".gemini").mkdir()
    os.mkfifo(ws.path / ".gemini" / "settings.json")  # a FIFO is never opened: it would block
    r = cli("bootstrap-host", "--host-kind", "gemini-cli", cwd=ws.path)
    assert r.code == 2 and ".gemini/settings.json is not a regular file" in r.err
    ws.write({".codex/config.toml": "# " + "x" * (5 * 1024 * 1024) + "\n"})
    r = cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path)
    assert r.code == 2 and "more than" in r.err


def test_codex_inline_servers_table_is_refused_with_the_snippet(ws: Repo, cli: Any) -> None:
    ws.write({".codex/config.toml": 'mcp_servers = { other = { command = "x" } }\n'})
    r = cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path)
    assert r.code == 2
    assert "add this by hand" in r.err and "[mcp_servers.vivary]" in r.err
    assert (ws.path / ".codex/config.toml").read_text() == 'mcp_servers = { other = { command = "x" } }\n'


def test_a_name_taken_by_another_server_is_refused(ws: Repo, cli: Any) -> None:
    ws.write({".mcp.json": '{"mcpServers": {"vivary": {"command": "something-else"}}}\n'})
    r = cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path)
    assert r.code == 3 and "--name" in r.err
    assert cli("bootstrap-host", "--host-kind", "claude-code", "--name", "notes", cwd=ws.path).code == 0
    data = json.loads((ws.path / ".mcp.json").read_text())
    assert set(data["mcpServers"]) == {"vivary", "notes"}
    r = cli("bootstrap-host", "--host-kind", "claude-code", "--uninstall", "--name", "vivary", "--json", cwd=ws.path)
    assert r.code == 0 and "not this workspace's server" in r.json()["files"][0]["note"]
    r = cli("bootstrap-host", "--host-kind", "claude-code", "--uninstall", "--json", cwd=ws.path)
    assert r.code == 0 and r.json()["server"]["name"] == "notes"  # this workspace's, whatever its name
    assert set(json.loads((ws.path / ".mcp.json").read_text())["mcpServers"]) == {"vivary"}


def test_a_moved_installation_is_updated_in_place(ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path).code == 0
    path = ws.path / ".cursor" / "mcp.json"
    path.write_text(path.read_text().replace(json.dumps(str(Path(sys.executable).parent))[:-1], '"/old/venv/bin'))
    stale = cli("host-status", "--host-kind", "cursor", "--json", cwd=ws.path)
    assert stale.code == 1
    assert stale.json()["hosts"][0]["servers"][0]["state"] == "stale"
    r = cli("bootstrap-host", "--host-kind", "cursor", "--json", cwd=ws.path)
    assert [f["action"] for f in r.json()["files"]] == ["update", "unchanged"]
    assert cli("host-status", "--host-kind", "cursor", cwd=ws.path).code == 0


@pytest.mark.parametrize("name", ['we"ird \\ name', "ünï côdé", "tab\there", "line\nbreak", "a'b $HOME"])
def test_strangers_paths_are_escaped_not_concatenated(repo: Repo, cli: Any, name: str) -> None:
    root = repo.path / name
    root.mkdir()
    (root / "tropo.toml").write_text(TROPO)
    for kind, dest in (("claude-code", ".mcp.json"), ("codex", ".codex/config.toml"), ("cursor", ".cursor/mcp.json"),
                       ("vscode", ".vscode/mcp.json"), ("kiro", ".kiro/settings/mcp.json"),
                       ("roo-code", ".roo/mcp.json"), ("zed", ".zed/settings.json")):
        r = cli("bootstrap-host", "--host-kind", kind, cwd=root)
        assert r.code == 0, r.err
        assert load(root / dest)[_container(kind)]["vivary"]["args"] == ["mcp", "-C", str(root)]


@pytest.mark.parametrize(("kind", "folder", "code"), [
    ("claude-code", "a${HOME}b", 3), ("cursor", "x${env:HOME}", 3), ("gemini-cli", "cost$HOME", 3),
    ("gemini-cli", "price 5$", 0), ("codex", "a${HOME}b", 0), ("claude-code", "price $5", 0),
    ("vscode", "x${workspaceFolder}", 3), ("vscode", "${input:who}", 3), ("vscode", "price $5", 0),
    ("kiro", "a${HOME}b", 3), ("kiro", "price $5", 0), ("roo-code", "x${workspaceFolder}", 3),
    ("roo-code", "${env:HOME}", 3), ("roo-code", "price $5", 0), ("zed", "a${HOME}b", 0), ("zed", "cost$HOME", 0),
    ("opencode", "a{env:HOME}b", 3), ("opencode", "{file:x}", 3), ("opencode", "open {env:", 3),
    ("opencode", "a${HOME}b", 0), ("opencode", "{envy}", 0), ("continue", "a${HOME}b", 3),
    ("continue", "price $5", 0),
])
def test_paths_the_host_would_expand_are_refused(repo: Repo, cli: Any, kind: str, folder: str, code: int) -> None:
    root = repo.path / folder
    root.mkdir()
    (root / "tropo.toml").write_text(TROPO)
    r = cli("bootstrap-host", "--host-kind", kind, cwd=root)
    assert r.code == code, r.err
    if code:
        assert "would expand" in r.err
        assert snapshot(root) == {f"{root}/tropo.toml": TROPO.encode()}


def test_symlinks_in_the_workspace_are_refused(ws: Repo, cli: Any, tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch\n")
    (ws.path / "AGENTS.md").unlink()
    (ws.path / "AGENTS.md").symlink_to(victim)
    r = cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path)
    assert r.code == 3 and "symlink" in r.err
    assert victim.read_text() == "do not touch\n" and not (ws.path / ".codex").exists()
    os.symlink(tmp_path, ws.path / ".cursor")
    assert cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path).code == 3
    status = cli("host-status", "--host-kind", "cursor", "--json", cwd=ws.path)
    assert status.code == 1, status.err  # reported, not raised
    host = status.json()["hosts"][0]
    assert host["servers"][0]["state"] == "unreadable" and "symlink" in host["servers"][0]["detail"]
    guidance = host["guidance"]
    assert guidance["path"] == "AGENTS.md" and guidance["state"] == "unreadable"
    assert "AGENTS.md" in guidance["detail"] and "symlink" in guidance["detail"]  # why, not only that
    shown = cli("host-status", "--host-kind", "cursor", cwd=ws.path).out
    assert "guidance  unreadable AGENTS.md  (" in shown and "symlink" in shown.split("guidance", 1)[1], shown


def test_user_level_symlink_is_followed_and_kept(ws: Repo, cli: Any, tmp_path: Path) -> None:
    dotfiles = tmp_path / "dotfiles" / "codex.toml"
    dotfiles.parent.mkdir()
    shutil.copy(DATA / "codex.config.toml", dotfiles)
    (home() / ".codex").mkdir()
    (home() / ".codex" / "config.toml").symlink_to(dotfiles)
    assert cli("bootstrap-host", "--host-kind", "codex", "--user", cwd=ws.path).code == 0
    assert (home() / ".codex" / "config.toml").is_symlink()
    assert "vivary-ws" in tomllib.loads(dotfiles.read_text())["mcp_servers"]
    assert cli("bootstrap-host", "--host-kind", "codex", "--user", "--uninstall", cwd=ws.path).code == 0
    assert dotfiles.read_bytes() == (DATA / "codex.config.toml").read_bytes()


@pytest.mark.parametrize("kind, project", [("codex", ".codex/config.toml"), ("kiro", ".kiro/settings/mcp.json")])
def test_a_second_name_for_the_workspace_in_the_other_file_is_said(kind: str, project: str, ws: Repo,
                                                                   cli: Any) -> None:
    """Codex and Kiro merge the project's servers with the user-level ones by name: this workspace's server as
    `vivary` in one and `vivary-ws` in the other is two servers on the same memory (tests/test_hosts_real.py
    shows Codex listing both)."""
    assert cli("bootstrap-host", "--host-kind", kind, cwd=ws.path).code == 0
    user = cli("bootstrap-host", "--host-kind", kind, "--user", "--json", cwd=ws.path).json()
    assert any(n.startswith(f"{HOSTS[kind].label} also reads {project}, where this workspace's server is 'vivary': "
                            "in this workspace it starts both") and n.endswith(f"--host-kind {kind} --uninstall`)")
               for n in user["notes"]), user["notes"]
    again = cli("bootstrap-host", "--host-kind", kind, "--json", cwd=ws.path).json()["notes"]
    assert any("where this workspace's server is 'vivary-ws'" in n and f"{kind} --user --uninstall" in n
               for n in again), again

    assert cli("bootstrap-host", "--host-kind", kind, "--user", "--uninstall", cwd=ws.path).code == 0
    same = cli("bootstrap-host", "--host-kind", kind, "--user", "--name", "vivary", "--json", cwd=ws.path).json()
    assert not any("also reads" in n for n in same["notes"]), same["notes"]  # one name: the project's wins


def test_host_status_says_codex_s_user_file_holds_a_second_server_for_the_workspace(ws: Repo, cli: Any) -> None:
    """host-status names the twin bootstrap-host's note names, from each side (Codex starts both)."""
    assert cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path).code == 0
    assert cli("bootstrap-host", "--host-kind", "codex", "--user", cwd=ws.path).code == 0
    trust_codex(ws.path)
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    project, user = status.json()["hosts"][0]["servers"]
    assert status.code == 0 and (project["state"], user["state"]) == ("installed", "installed")
    assert [(m["path"], m["effect"], m["name"]) for m in project["merged"]] == [
        (user["path"], "second", user["name"])], project
    assert [(m["path"], m["effect"], m["name"]) for m in user["merged"]] == [
        (".codex/config.toml", "second", "vivary")], user
    assert "--host-kind codex --user --uninstall`" in project["merged"][0]["detail"]
    text = cli("host-status", "--host-kind", "codex", cwd=ws.path).out
    assert "    second     .codex/config.toml [vivary]" in text, text


def test_host_status_judges_codex_s_two_files_merged_member_by_member(ws: Repo, cli: Any) -> None:
    """Codex merges ~/.codex/config.toml and then the project's .codex/config.toml by server name, member by member
    (seen with Codex 0.171.0, tests/test_hosts_real.py): an `enabled = false` of a `vivary` in the user's file turns
    the project's `vivary` off; in the project's file, read last, it turns off the user-level entry of that name,
    once the project is trusted (before, Codex does not read the project's file)."""
    assert cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path).code == 0
    config = home() / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('[mcp_servers.vivary]\ncommand = "/bin/true"\nenabled = false\n', "utf-8")
    trust_codex(ws.path)
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    project = status.json()["hosts"][0]["servers"][0]
    assert (status.code, project["state"]) == (1, "disabled"), project
    assert [(m["path"], m["effect"], m["name"]) for m in project["merged"]] == [
        ("~/.codex/config.toml", "disabled", "vivary")], project
    assert "its enabled applies here (`enabled: false` there turns this one off); rename one of them" in \
        project["merged"][0]["detail"]

    config.unlink()
    assert cli("bootstrap-host", "--host-kind", "codex", "--uninstall", cwd=ws.path).code == 0
    assert cli("bootstrap-host", "--host-kind", "codex", "--user", "--name", "vivary", cwd=ws.path).code == 0
    ws.write({".codex/config.toml": '[mcp_servers.vivary]\nenabled = false\n'})
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    user = status.json()["hosts"][0]["servers"][1]
    assert (status.code, user["state"], user["merged"]) == (0, "installed", []), user  # not read: not trusted
    trust_codex(ws.path)
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    user = status.json()["hosts"][0]["servers"][1]
    assert (status.code, user["state"]) == (1, "disabled"), user
    assert [(m["path"], m["effect"]) for m in user["merged"]] == [(".codex/config.toml", "disabled")], user


def test_codex_s_project_file_unread_until_the_user_s_file_trusts_the_project_is_said(ws: Repo, cli: Any) -> None:
    """Codex reads .codex/config.toml only in a project ~/.codex/config.toml trusts (tests/test_hosts_real.py: it lists
    none of its servers before): bootstrap-host says so with the table to add, host-status says `untrusted` (exit 1)
    until it is there, and `installed` once it is; `trust_level = "untrusted"` is said as such."""
    notes = cli("bootstrap-host", "--host-kind", "codex", "--json", cwd=ws.path).json()["notes"]
    table = f"[projects.{json.dumps(str(ws.path))}]"
    said = [n for n in notes if n.startswith("Codex reads .codex/config.toml only in a project you trust")]
    assert len(said) == 1 and f"~/.codex/config.toml does not trust {ws.path}, so Codex starts none" in said[0], notes
    assert said[0].endswith(f"add `{table}` with `trust_level = \"trusted\"` to ~/.codex/config.toml"), said
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    project = status.json()["hosts"][0]["servers"][0]
    assert (status.code, project["state"]) == (1, "untrusted"), project
    assert [(m["path"], m["effect"], m["name"], m["detail"]) for m in project["merged"]] == [
        ("~/.codex/config.toml", "untrusted", "vivary", said[0])], project
    assert "  server    untrusted  .codex/config.toml [vivary]\n" in \
        cli("host-status", "--host-kind", "codex", cwd=ws.path).out

    trust_codex(ws.path)  # the table the note gives
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    assert (status.code, status.json()["hosts"][0]["servers"][0]["state"]) == (0, "installed"), status.out
    notes = cli("bootstrap-host", "--host-kind", "codex", "--json", cwd=ws.path).json()["notes"]
    assert not any("trust" in n for n in notes), notes

    (home() / ".codex" / "config.toml").unlink()
    trust_codex(ws.path, "untrusted")
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    project = status.json()["hosts"][0]["servers"][0]
    assert (status.code, project["state"]) == (1, "untrusted"), project
    assert f"~/.codex/config.toml marks {ws.path} untrusted, so" in project["merged"][0]["detail"]
    assert project["merged"][0]["detail"].endswith(f"set `trust_level = \"trusted\"` under `{table}` there")


@pytest.mark.parametrize(("where", "levels", "read"), CODEX_CASES)
def test_codex_s_trust_is_judged_as_codex_judges_it(where: str, levels: dict[str, str], read: bool, repo: Repo,
                                                    cli: Any, tmp_path: Path) -> None:
    """The rule of Codex's config loader, each case seen with Codex 0.171.0 itself (tests/test_hosts_real.py): the
    trust of the folder holding .codex/, else of the project root, else of the main work tree, keyed exactly."""
    plain_workspace(repo).commit("init")
    linked = tmp_path / "linked"
    if where == "linked":
        repo.git("worktree", "add", "-q", str(linked))
    run_in, extra = {"top": (repo.path, []), "notes": (repo.path, ["--root", "notes"]),
                     "linked": (linked, [])}[where]
    assert cli("bootstrap-host", "--host-kind", "codex", *extra, cwd=run_in).code == 0
    for key, level in levels.items():
        trust_codex(key.format(top=repo.path, above=repo.path.parent, linked=linked), level)
    status = cli("host-status", "--host-kind", "codex", *extra, "--json", cwd=run_in)
    state = status.json()["hosts"][0]["servers"][0]["state"]
    assert state == ("installed" if read else "untrusted"), status.out


def test_user_level_files_need_the_flag(ws: Repo, cli: Any) -> None:
    r = cli("bootstrap-host", "--host-kind", "claude-desktop", cwd=ws.path)
    assert r.code == 2 and "--user" in r.err
    assert not (home() / ".config").exists()
    assert cli("bootstrap-host", "--host-kind", "cursor", "--user", cwd=ws.path).code == 2


def test_desktop_config_places_per_os() -> None:
    env = {"HOME": "/home/ada", "APPDATA": r"C:\Users\ada\AppData\Roaming"}
    mac = user_config_path("claude-desktop", platform="darwin", env=env)
    assert mac == Path("/home/ada/Library/Application Support/Claude/claude_desktop_config.json")
    win = user_config_path("claude-desktop", platform="win32", env=env)
    assert win == Path(r"C:\Users\ada\AppData\Roaming") / "Claude" / "claude_desktop_config.json"
    linux = user_config_path("claude-desktop", platform="linux", env={"HOME": "/home/ada"})
    assert linux == Path("/home/ada/.config/Claude/claude_desktop_config.json")
    xdg = user_config_path("claude-desktop", platform="linux", env={"HOME": "/h", "XDG_CONFIG_HOME": "/x"})
    assert xdg == Path("/x/Claude/claude_desktop_config.json")
    assert user_config_path("codex", env={"HOME": "/h"}) == Path("/h/.codex/config.toml")
    assert user_config_path("codex", env={"HOME": "/h", "CODEX_HOME": "/c"}) == Path("/c/config.toml")


def test_dry_run_prints_the_diff_and_writes_nothing(ws: Repo, cli: Any) -> None:
    shutil.copy(DATA / "gemini.settings.json", ws.path / "GEMINI-src.json")
    (ws.path / ".gemini").mkdir()
    shutil.move(ws.path / "GEMINI-src.json", ws.path / ".gemini" / "settings.json")
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "gemini-cli", "--dry-run", cwd=ws.path)
    assert r.code == 0, r.err
    assert snapshot(ws.path) == start
    assert "--- a/.gemini/settings.json" in r.out and '+  "mcpServers": {' in r.out
    assert "+++ b/GEMINI.md" in r.out and "would update" in r.out
    j = cli("bootstrap-host", "--host-kind", "gemini-cli", "--dry-run", "--json", cwd=ws.path).json()
    assert j["dry_run"] and [f["action"] for f in j["files"]] == ["update", "create"]
    assert '"mcpServers"' in j["files"][0]["diff"]
    assert snapshot(ws.path) == start


def test_guidance_goes_where_the_host_reads_it(ws: Repo, cli: Any) -> None:
    # CLAUDE.md that only imports AGENTS.md (as `git vivary init` writes it): the block goes to AGENTS.md.
    ws.write({"CLAUDE.md": "# Claude Code\n\n@AGENTS.md\n"})
    r = cli("bootstrap-host", "--host-kind", "claude-code", "--json", cwd=ws.path)
    assert [f["path"] for f in r.json()["files"]] == [".mcp.json", "AGENTS.md"]
    assert (ws.path / "CLAUDE.md").read_text() == "# Claude Code\n\n@AGENTS.md\n"
    agents = (ws.path / "AGENTS.md").read_text()
    assert agents.startswith((DATA / "AGENTS.md").read_text() + "\n<!-- >>> vivary")
    for tool in ("search", "read", "add", "update", "link", "unlink", "status"):
        assert f"`{tool}`" in agents
    for command in ("git vivary find", "git vivary recall", "git vivary remember"):
        assert command in agents


def test_shared_guidance_stays_while_another_host_uses_it(ws: Repo, cli: Any) -> None:
    start = snapshot(ws.path)
    assert cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path).code == 0
    assert cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path).code == 0
    r = cli("bootstrap-host", "--host-kind", "cursor", "--uninstall", "--json", cwd=ws.path)
    agents = r.json()["files"][1]
    assert agents["action"] == "kept" and "Codex" in agents["note"]
    assert "<!-- >>> vivary" in (ws.path / "AGENTS.md").read_text()
    assert cli("bootstrap-host", "--host-kind", "codex", "--uninstall", cwd=ws.path).code == 0
    assert snapshot(ws.path) == start


def test_host_status_says_whether_an_absent_block_lacks_its_file_or_only_the_block(ws: Repo, cli: Any) -> None:
    """`init` writes AGENTS.md without vivary's block: "guidance absent AGENTS.md" read as if the file were missing."""
    ws.write({"AGENTS.md": "# Agents\n\nBe brief.\n"})
    shown = cli("host-status", "--host-kind", "codex", cwd=ws.path).out
    assert "guidance  absent     AGENTS.md  (the file has no vivary block: `git vivary bootstrap-host --host-kind " \
           "codex` adds it)" in shown, shown
    shown = cli("host-status", "--host-kind", "claude-code", cwd=ws.path).out
    assert "CLAUDE.md  (no such file: `git vivary bootstrap-host --host-kind claude-code` adds it)" in shown, shown


def test_host_status_reports_what_is_where(ws: Repo, cli: Any) -> None:
    before = cli("host-status", "--json", cwd=ws.path)
    assert before.code == 0, before.err
    rep = before.json()
    assert {h["host_kind"] for h in rep["hosts"]} == {"generic", "claude-code", "codex", "cursor", "gemini-cli",
                                                      "vscode", "kiro", "roo-code", "zed", "opencode", "continue",
                                                      "windsurf", "claude-desktop"}
    assert all(s["state"] == "absent" for h in rep["hosts"] for s in h["servers"])
    assert rep["onboarding"] == {"file": "USER.md", "done": False, "answered": [],
                                 "missing": ["name", "role", "language", "style", "goal"]}
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    after = cli("host-status", "--host-kind", "claude-code", "--json", cwd=ws.path).json()
    assert after["hosts"][0]["servers"][0]["state"] == "unapproved"  # (tests/test_hosts_trust.py)
    approve_claude_code()
    after = cli("host-status", "--host-kind", "claude-code", "--json", cwd=ws.path).json()
    host = after["hosts"][0]
    assert host["servers"][0]["state"] == "installed" and host["servers"][0]["path"] == ".mcp.json"
    assert host["guidance"] == {"path": "CLAUDE.md", "state": "present", "detail": None}
    text = cli("host-status", "--host-kind", "claude-code", cwd=ws.path)
    assert "installed" in text.out and ".mcp.json" in text.out and "onboarding" in text.out
    desktop = cli("host-status", "--host-kind", "claude-desktop", "--json", cwd=ws.path).json()
    assert desktop["hosts"][0]["servers"][0]["path"] == "~/.config/Claude/claude_desktop_config.json"


def test_host_status_names_an_unreadable_file(ws: Repo, cli: Any) -> None:
    ws.write({".cursor/mcp.json": "{ nope"})
    r = cli("host-status", "--host-kind", "cursor", "--json", cwd=ws.path)
    assert r.code == 1
    server = r.json()["hosts"][0]["servers"][0]
    assert server["state"] == "unreadable" and ".cursor/mcp.json: line 1" in server["detail"]


def test_a_file_changed_under_us_is_not_overwritten(tmp_path: Path) -> None:
    from vivary_git.errors import RefusedError
    from vivary_git.hosts import files

    path = tmp_path / "f.json"
    path.write_text("{}\n")
    with pytest.raises(RefusedError, match="changed while"):
        files.write(path, "f.json", '{"a": 1}\n', before="{ }\n")
    assert path.read_text() == "{}\n"


def test_through_git_as_a_real_subprocess(ws: Repo) -> None:
    start = snapshot(ws.path)
    r = run_git_vivary(["bootstrap-host", "--host-kind", "cursor"], cwd=ws.path)
    assert r.returncode == 0, r.stderr
    assert "vivary" in jsonedit.to_python(jsonedit.parse((ws.path / ".cursor/mcp.json").read_text(),
                                                         comments=True))["mcpServers"]
    r = run_git_vivary(["host-status", "--host-kind", "cursor"], cwd=ws.path)
    assert r.returncode == 0 and "installed" in r.stdout, r.stderr
    assert run_git_vivary(["bootstrap-host", "--host-kind", "cursor", "--uninstall"], cwd=ws.path).returncode == 0
    assert snapshot(ws.path) == start
    assert run_git_vivary(["bootstrap-host", "-h"], cwd=ws.path).returncode == 0


def _edit_json(path: Path, name: str, edit: Any, container: str = "mcpServers") -> None:
    data = load_jsonc(path.read_text("utf-8"))
    edit(data[container][name])
    path.write_text(json.dumps(data, indent=2) + "\n", "utf-8")


@pytest.mark.parametrize(("kind", "dest"), [("cursor", ".cursor/mcp.json"), ("claude-code", ".mcp.json"),
                                           ("vscode", ".vscode/mcp.json")])
def test_a_second_run_keeps_what_the_user_added_to_the_entry(ws: Repo, cli: Any, kind: str, dest: str) -> None:
    """A read-only profile given to an untrusted host must survive a re-run (the tester's repro)."""
    assert cli("bootstrap-host", "--host-kind", kind, cwd=ws.path).code == 0
    path = ws.path / dest

    def add(entry: dict[str, Any]) -> None:
        entry["args"] += ["--profile", "read-only"]
        entry["env"] = {"FOO": "1"}
        entry["disabled"] = False
        entry["command"] = "/old/venv/bin/git-vivary"  # and the installation moved: ours to update
    _edit_json(path, "vivary", add, _container(kind))
    r = cli("bootstrap-host", "--host-kind", kind, "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert r.json()["files"][0]["action"] == "update"
    entry = load_jsonc(path.read_text("utf-8"))[_container(kind)]["vivary"]
    assert entry["args"] == ["mcp", "-C", str(ws.path), "--profile", "read-only"]
    assert entry["env"] == {"FOO": "1"} and entry["disabled"] is False
    assert entry["command"] == r.json()["server"]["command"] != "/old/venv/bin/git-vivary"
    again = cli("bootstrap-host", "--host-kind", kind, "--json", cwd=ws.path)
    assert {f["action"] for f in again.json()["files"]} == {"unchanged"}


def test_a_second_run_keeps_the_codex_entry_s_additions(ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path).code == 0
    path = ws.path / ".codex" / "config.toml"
    text = path.read_text("utf-8")
    args = f'args = ["mcp", "-C", {json.dumps(str(ws.path))}]'
    assert args in text
    path.write_text(text.replace(args, args[:-1] + ', "--profile", "read-only"]\nenv = { FOO = "1" }'), "utf-8")
    r = cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path)
    assert r.code == 0, r.err
    entry = tomllib.loads(path.read_text("utf-8"))["mcp_servers"]["vivary"]
    assert entry["args"][-2:] == ["--profile", "read-only"] and entry["env"] == {"FOO": "1"}


def _status(ws: Repo, cli: Any, kind: str) -> tuple[int, dict[str, Any]]:
    r = cli("host-status", "--host-kind", kind, "--json", cwd=ws.path)
    return r.code, r.json()["hosts"][0]["servers"][0]


@pytest.mark.parametrize(("kind", "dest", "edit", "said"), [
    ("cursor", ".cursor/mcp.json", lambda e: e.update(env={"FOO": "1"}), "'env'"),
    ("cursor", ".cursor/mcp.json", lambda e: e.update(disabled=True), "'disabled'"),
    ("cursor", ".cursor/mcp.json", lambda e: e["args"].extend(["--profile", "read-only"]), "--profile read-only"),
    ("cursor", ".cursor/mcp.json", lambda e: e.update(type="stdio"), ""),
    ("claude-code", ".mcp.json", lambda e: e.pop("type"), ""),
])
def test_host_status_calls_a_working_entry_with_the_user_s_settings_installed(
        ws: Repo, cli: Any, kind: str, dest: str, edit: Any, said: str) -> None:
    assert cli("bootstrap-host", "--host-kind", kind, cwd=ws.path).code == 0
    approve_claude_code()
    _edit_json(ws.path / dest, "vivary", edit)
    code, server = _status(ws, cli, kind)
    assert (code, server["state"]) == (0, "installed"), server
    assert said in server["detail"]


def test_host_status_looks_bare_commands_up_on_path(ws: Repo, cli: Any, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    script = bin_ / "git-vivary"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}{os.pathsep}{os.environ['PATH']}")
    for command, args in (("git", ["vivary", "mcp", "-C", str(ws.path)]), ("git-vivary", ["mcp", "-C", str(ws.path)])):
        ws.write({".cursor/mcp.json": json.dumps({"mcpServers": {"vivary": {"command": command, "args": args}}})})
        code, server = _status(ws, cli, "cursor")
        assert (code, server["state"], server["command_found"]) == (0, "installed", True), server
        assert f"starts {command!r}" in server["detail"]
    ws.write({".cursor/mcp.json": json.dumps({"mcpServers": {"vivary": {
        "command": "no-such-vivary-command", "args": ["mcp", "-C", str(ws.path)]}}})})
    code, server = _status(ws, cli, "cursor")
    assert (code, server["state"]) == (1, "stale") and "not on PATH" in server["detail"]


@pytest.mark.parametrize("command", [["bootstrap-host", "--host-kind", "cursor"], ["host-status"],
                                     ["onboard", "--answer", "name=Ada"]])
def test_a_root_outside_the_work_tree_is_a_usage_error(ws: Repo, cli: Any, tmp_path: Path,
                                                       command: list[str]) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    r = cli(*command, "--root", str(outside), cwd=ws.path)
    assert r.code == 2 and f"is not inside {ws.path}" in r.err, r.err
    assert list(outside.iterdir()) == []
    (ws.path / "sub").mkdir()
    r = cli("bootstrap-host", "--host-kind", "cursor", "--root", "sub", "--json", cwd=ws.path)
    assert r.code == 0 and r.json()["workspace"] == str(ws.path / "sub"), r.err


def test_relative_config_homes_never_put_user_files_in_the_workspace(ws: Repo, cli: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    start = snapshot(ws.path)
    monkeypatch.setenv("CODEX_HOME", "relative/dir")
    r = cli("bootstrap-host", "--host-kind", "codex", "--user", cwd=ws.path)
    assert r.code == 2 and "CODEX_HOME=relative/dir is a relative path" in r.err, r.err
    assert snapshot(ws.path) == start
    status = cli("host-status", "--host-kind", "codex", "--json", cwd=ws.path)
    assert status.code == 1 and status.json()["hosts"][0]["servers"][1]["state"] == "unreadable"
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.setenv("XDG_CONFIG_HOME", "rel")
    r = cli("bootstrap-host", "--host-kind", "claude-desktop", "--user", cwd=ws.path)
    assert r.code == 0, r.err
    assert snapshot(ws.path) == start
    assert (home() / ".config" / "Claude" / "claude_desktop_config.json").is_file()


def test_a_dangling_user_level_symlink_is_refused(ws: Repo, cli: Any, tmp_path: Path) -> None:
    link = home() / ".config" / "Claude" / "claude_desktop_config.json"
    link.parent.mkdir(parents=True)
    target = tmp_path / "nonexistent" / "x.json"
    link.symlink_to(target)
    r = cli("bootstrap-host", "--host-kind", "claude-desktop", "--user", cwd=ws.path)
    assert r.code == 3 and str(link) in r.err and str(target) in r.err and "does not exist" in r.err, r.err
    assert not target.parent.exists() and link.is_symlink()
    status = cli("host-status", "--host-kind", "claude-desktop", "--json", cwd=ws.path)
    assert status.code == 1 and status.json()["hosts"][0]["servers"][0]["state"] == "unreadable"


def test_a_read_only_config_is_refused_not_replaced(ws: Repo, cli: Any) -> None:
    ws.write({".cursor/mcp.json": '{"mcpServers": {}}\n'})
    config = ws.path / ".cursor" / "mcp.json"
    config.chmod(0o444)
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path)
    assert r.code == 3 and ".cursor/mcp.json is read-only (mode 0444)" in r.err and "chmod u+w" in r.err, r.err
    assert snapshot(ws.path) == start  # nor the guidance block: nothing is written when one file is refused
    assert config.stat().st_mode & 0o777 == 0o444
    config.chmod(0o644)
    assert cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path).code == 0


def test_shared_guidance_stays_while_a_user_level_codex_entry_uses_it(ws: Repo, cli: Any) -> None:
    assert cli("bootstrap-host", "--host-kind", "codex", "--user", cwd=ws.path).code == 0
    assert cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path).code == 0
    r = cli("bootstrap-host", "--host-kind", "cursor", "--uninstall", "--json", cwd=ws.path)
    agents = r.json()["files"][1]
    assert agents["action"] == "kept" and agents["note"] == "still used by Codex", agents
    assert "<!-- >>> vivary" in (ws.path / "AGENTS.md").read_text()
    # Codex's own project entry keeps it too when its user-level one goes.
    assert cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path).code == 0
    r = cli("bootstrap-host", "--host-kind", "codex", "--user", "--uninstall", "--json", cwd=ws.path)
    assert r.json()["files"][1]["note"] == "still used by Codex", r.json()
    assert cli("bootstrap-host", "--host-kind", "codex", "--uninstall", cwd=ws.path).code == 0
    assert "<!-- >>> vivary" not in (ws.path / "AGENTS.md").read_text()


@pytest.mark.parametrize("pinned", ["{root}/", ".", "{root}/./sub/.."])
def test_the_workspace_pin_is_compared_as_a_folder(ws: Repo, cli: Any, pinned: str) -> None:
    (ws.path / "sub").mkdir()
    assert cli("bootstrap-host", "--host-kind", "cursor", cwd=ws.path).code == 0
    _edit_json(ws.path / ".cursor" / "mcp.json", "vivary",
               lambda e: e.update(args=["mcp", "-C", pinned.format(root=ws.path)]))
    code, server = _status(ws, cli, "cursor")
    assert (code, server["state"]) == (0, "installed"), server
    r = cli("bootstrap-host", "--host-kind", "cursor", "--json", cwd=ws.path)
    assert r.code == 0 and r.json()["files"][0]["action"] == "update", r.err
    entry = load(ws.path / ".cursor" / "mcp.json")["mcpServers"]["vivary"]
    assert entry["args"] == ["mcp", "-C", str(ws.path)]


def test_a_relative_pin_in_a_user_level_file_is_no_one_workspace_s(ws: Repo, cli: Any) -> None:
    path = home() / ".codex" / "config.toml"
    path.parent.mkdir()
    path.write_text('[mcp_servers.vivary-ws]\ncommand = "git-vivary"\nargs = ["mcp", "-C", "."]\n')
    r = cli("bootstrap-host", "--host-kind", "codex", "--user", cwd=ws.path)
    assert r.code == 3 and "not this workspace's" in r.err


def test_the_workspace_s_entry_is_found_whatever_its_name(ws: Repo, cli: Any) -> None:
    start = snapshot(ws.path)
    assert cli("bootstrap-host", "--host-kind", "cursor", "--name", "mymem", cwd=ws.path).code == 0
    code, server = _status(ws, cli, "cursor")
    assert (code, server["state"], server["name"]) == (0, "installed", "mymem"), server
    r = cli("bootstrap-host", "--host-kind", "cursor", "--json", cwd=ws.path)  # no second entry
    assert r.code == 0 and r.json()["server"]["name"] == "mymem", r.err
    assert {f["action"] for f in r.json()["files"]} == {"unchanged"}
    assert list(load(ws.path / ".cursor" / "mcp.json")["mcpServers"]) == ["mymem"]
    r = cli("bootstrap-host", "--host-kind", "cursor", "--name", "other", cwd=ws.path)
    assert r.code == 3 and "named 'mymem'" in r.err
    r = cli("bootstrap-host", "--host-kind", "cursor", "--uninstall", cwd=ws.path)
    assert r.code == 0, r.err
    assert snapshot(ws.path) == start  # mymem gone, and with it the guidance block and .cursor/


@pytest.mark.parametrize("extra", ['\n[mcp_servers.vivary.env]\nFOO = "1"\n',
                                   '\n[mcp_servers.vivary.env]\nFOO = "1"\n\n[profile]\nmodel = "x"\n'])
def test_a_codex_env_table_of_the_user_s_is_theirs(ws: Repo, cli: Any, extra: str) -> None:
    start = snapshot(ws.path)
    trust_codex(ws.path)
    assert cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path).code == 0
    path = ws.path / ".codex" / "config.toml"
    path.write_text(path.read_text("utf-8") + extra, "utf-8")
    code, server = _status(ws, cli, "codex")
    assert (code, server["state"]) == (0, "installed") and "'env'" in server["detail"], server
    r = cli("bootstrap-host", "--host-kind", "codex", "--json", cwd=ws.path)
    assert r.code == 0 and {f["action"] for f in r.json()["files"]} == {"unchanged"}, r.err
    r = cli("bootstrap-host", "--host-kind", "codex", "--uninstall", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert "[mcp_servers.vivary.env]" in r.json()["files"][0]["note"]
    left = tomllib.loads(path.read_text("utf-8")) if path.exists() else {}
    assert "mcp_servers" not in left and left.get("profile", {"model": "x"}) == {"model": "x"}
    if "profile" not in extra:
        assert snapshot(ws.path) == start


def test_a_codex_block_that_cannot_be_added_prints_lines_not_escapes(ws: Repo, cli: Any) -> None:
    ws.write({".codex/config.toml": 'mcp_servers = { other = { command = "x" } }\n'})
    r = cli("bootstrap-host", "--host-kind", "codex", cwd=ws.path)
    assert r.code == 2 and "inline table" in r.err and "\\n" not in r.err, r.err
    assert "\n  [mcp_servers.vivary]\n" in r.err


def test_a_workspace_outside_git_is_set_up_with_a_note_that_writes_need_git(tmp_path: Path, cli: Any) -> None:
    """The server then searches and reads, and refuses every memory write (a write is a commit): said at set-up
    rather than at the agent's first `add`."""
    folder = tmp_path / "plain"
    folder.mkdir()
    r = cli("bootstrap-host", "--host-kind", "cursor", "--json", cwd=folder)
    assert r.code == 0, r.err
    assert any("is not in a Git work tree" in n and "git init" in n for n in r.json()["notes"]), r.out


def test_host_status_shows_a_planted_server_name_inert(ws: Repo, cli: Any) -> None:
    """A cloned workspace's `.mcp.json` may hold any name for an entry that starts this workspace's server: the
    text output shows it escaped (docs/output.md), never as a line a CI runner reads as a command."""
    assert cli("bootstrap-host", "--host-kind", "claude-code", cwd=ws.path).code == 0
    data = json.loads((ws.path / ".mcp.json").read_text("utf-8"))
    data["mcpServers"] = {"x\n::error file=a.md::forged": data["mcpServers"]["vivary"]}
    (ws.path / ".mcp.json").write_text(json.dumps(data), "utf-8")
    out = cli("host-status", "--host-kind", "claude-code", cwd=ws.path).out
    assert not any(line.lstrip().startswith("::") for line in out.splitlines()), out
    assert "x\\n::error file=a.md::forged" in out, out


def test_a_dry_run_shows_a_planted_line_of_the_file_inert(ws: Repo, cli: Any) -> None:
    """`--dry-run` prints each file's diff: a context line ` ::error ...` of a cloned AGENTS.md would be a workflow
    command in a CI log (a runner reads `::` after spaces). Each diff line is escaped (docs/output.md)."""
    ws.write({"AGENTS.md": "# Agents\n::error file=a.md::forged\n\tindented\n"})
    r = cli("bootstrap-host", "--host-kind", "cursor", "--dry-run", cwd=ws.path)
    assert r.code == 0, r.err
    assert not any(line.lstrip().startswith("::") for line in r.out.splitlines()), r.out
    assert "\\x3a:error file=a.md::forged" in r.out and "+<!--" in r.out, r.out
