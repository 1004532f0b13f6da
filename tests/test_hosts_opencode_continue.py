"""bootstrap-host --host-kind opencode and continue: opencode's `opencode.json` / `opencode.jsonc` (comments kept,
a server is `{type: "local", command: [cmd, *args]}`, the guidance in AGENTS.md), Continue's
`.continue/mcpServers/vivary.json` and `.continue/rules/vivary.md` (files of our own), and the refusals every
host gets."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from conftest import Repo
from test_hosts import DATA, home, load_jsonc, plain_workspace, snapshot

from vivary_git.hosts.install import GUIDANCE_MARKERS

OPENCODE = "opencode.json"
CONTINUE = ".continue/mcpServers/vivary.json"
RULE = ".continue/rules/vivary.md"


def test_opencode_s_entry_is_one_command_list_and_the_guidance_in_agents_md(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    r = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    rep = r.json()
    assert [(f["path"], f["scope"], f["action"]) for f in rep["files"]] == [
        (OPENCODE, "project", "create"), ("AGENTS.md", "project", "create")]
    entry = json.loads((ws.path / OPENCODE).read_text("utf-8"))["mcp"]["vivary"]
    assert list(entry) == ["type", "command"] and entry["type"] == "local"
    command = entry["command"]
    assert Path(command[0]).is_file() and command[-3:] == ["mcp", "-C", str(ws.path)]
    assert command == [rep["server"]["command"], *rep["server"]["args"]]
    assert GUIDANCE_MARKERS.span((ws.path / "AGENTS.md").read_text("utf-8"), "AGENTS.md") is not None

    status = cli("host-status", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert status.code == 0, status.out
    host = status.json()["hosts"][0]
    assert [(s["path"], s["state"], s["detail"]) for s in host["servers"]] == [(OPENCODE, "installed", "")]
    assert host["guidance"] == {"path": "AGENTS.md", "state": "present", "detail": None}


def test_a_commented_opencode_jsonc_takes_the_entry_keeps_every_byte_and_comes_back(repo: Repo, cli: Any) -> None:
    """opencode reads opencode.jsonc as it reads opencode.json: a workspace with only the .jsonc gets the entry
    there (no second file), its comments and trailing commas kept."""
    ws = plain_workspace(repo)
    shutil.copy(DATA / "opencode.jsonc", ws.path / "opencode.jsonc")
    ws.write({"AGENTS.md": "# Agents\n\nRun the tests first.\n"})
    start = snapshot(ws.path)

    r = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [(f["path"], f["action"]) for f in r.json()["files"]] == [("opencode.jsonc", "update"),
                                                                    ("AGENTS.md", "update")]
    assert not (ws.path / OPENCODE).exists()
    text = (ws.path / "opencode.jsonc").read_text("utf-8")
    for line in (DATA / "opencode.jsonc").read_text("utf-8").splitlines():
        assert line in text
    data = load_jsonc(text)
    assert list(data["mcp"]) == ["my-local", "docs", "vivary"]
    assert data["mcp"].pop("vivary")["command"][-3:] == ["mcp", "-C", str(ws.path)]
    assert data == load_jsonc((DATA / "opencode.jsonc").read_text("utf-8"))
    installed = snapshot(ws.path)

    again = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert [f["action"] for f in again.json()["files"]] == ["unchanged", "unchanged"]
    assert snapshot(ws.path) == installed
    gone = cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", "--json", cwd=ws.path)
    assert [f["action"] for f in gone.json()["files"]] == ["update", "update"]
    assert snapshot(ws.path) == start


def test_opencode_s_guidance_goes_into_the_claude_md_it_reads_when_there_is_no_agents_md(repo: Repo, cli: Any) -> None:
    """opencode reads CLAUDE.md only where no AGENTS.md is: a new AGENTS.md would hide the user's CLAUDE.md."""
    ws = plain_workspace(repo)
    ws.write({"CLAUDE.md": "# Rules\n\nAlways use tabs.\n"})
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [(f["path"], f["action"]) for f in r.json()["files"]] == [(OPENCODE, "create"), ("CLAUDE.md", "update")]
    assert not (ws.path / "AGENTS.md").exists()
    claude = (ws.path / "CLAUDE.md").read_text("utf-8")
    assert claude.startswith("# Rules\n\nAlways use tabs.\n") and GUIDANCE_MARKERS.span(claude, "CLAUDE.md")
    assert any("a new AGENTS.md would hide it from opencode" in n for n in r.json()["notes"]), r.json()["notes"]
    host = cli("host-status", "--host-kind", "opencode", "--json", cwd=ws.path).json()["hosts"][0]
    assert host["guidance"] == {"path": "CLAUDE.md", "state": "present", "detail": None}
    gone = cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", "--json", cwd=ws.path)
    assert [(f["path"], f["action"]) for f in gone.json()["files"]] == [(OPENCODE, "delete"), ("CLAUDE.md", "update")]
    assert snapshot(ws.path) == start


def test_opencode_json_is_written_when_both_files_are_there(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    ws.write({"opencode.jsonc": '{\n  // theirs\n  "model": "x"\n}\n', OPENCODE: '{\n  "mcp": {}\n}\n'})
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    assert (ws.path / "opencode.jsonc").read_text("utf-8") == '{\n  // theirs\n  "model": "x"\n}\n'
    assert "vivary" in json.loads((ws.path / OPENCODE).read_text("utf-8"))["mcp"]


def test_a_second_run_keeps_what_the_user_added_to_opencode_s_entry(repo: Repo, cli: Any) -> None:
    """`enabled`, `environment` and arguments after ours (`--profile read-only`) are the user's: kept when the
    command list is brought up to date."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    config = ws.path / OPENCODE
    data = json.loads(config.read_text("utf-8"))
    entry = data["mcp"]["vivary"]
    fresh = list(entry["command"])
    entry["command"] = [os.fspath(ws.path / "gone" / "git-vivary"), *fresh[1:], "--profile", "read-only"]
    entry["enabled"] = False
    entry["environment"] = {"A": "1"}
    config.write_text(json.dumps(data, indent=2) + "\n")

    stale = cli("host-status", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert stale.code == 1 and stale.json()["hosts"][0]["servers"][0]["state"] == "stale"
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    entry = json.loads(config.read_text("utf-8"))["mcp"]["vivary"]
    assert entry == {"type": "local", "command": [*fresh, "--profile", "read-only"], "enabled": False,
                     "environment": {"A": "1"}}
    state = cli("host-status", "--host-kind", "opencode", "--json", cwd=ws.path)
    assert state.code == 0
    server = state.json()["hosts"][0]["servers"][0]
    assert server["state"] == "installed"
    assert "'enabled', 'environment', '--profile read-only'" in server["detail"]


def test_a_vivary_server_of_someone_else_s_in_opencode_is_never_replaced(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    theirs = '{\n  "mcp": {\n    "vivary": {"type": "local", "command": ["npx", "vivary-other"]}\n  }\n}\n'
    ws.write({OPENCODE: theirs})
    r = cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path)
    assert r.code == 3 and "--name" in r.err
    assert (ws.path / OPENCODE).read_text("utf-8") == theirs and not (ws.path / "AGENTS.md").exists()
    gone = cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", cwd=ws.path)
    assert gone.code == 0 and (ws.path / OPENCODE).read_text("utf-8") == theirs


def test_dry_run_prints_both_diffs_and_writes_nothing(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path, home())
    for kind, dest, container, guide in (("opencode", OPENCODE, "mcp", "AGENTS.md"),
                                         ("continue", CONTINUE, "mcpServers", RULE)):
        r = cli("bootstrap-host", "--host-kind", kind, "--dry-run", cwd=ws.path)
        assert r.code == 0, r.err
        assert f"+++ b/{dest}" in r.out and f'+  "{container}": {{' in r.out and f"+++ b/{guide}" in r.out
        assert "would create" in r.out
    assert snapshot(ws.path, home()) == start


def test_continue_s_files_are_its_own_and_go_with_the_uninstall(repo: Repo, cli: Any) -> None:
    """Continue reads every JSON file of .continue/mcpServers/ and every rule of .continue/rules/: ours are two
    files of our own beside the user's, which stay as they are."""
    ws = plain_workspace(repo)
    ws.write({".continue/mcpServers/mine.yaml": "name: mine\nversion: 0.0.1\nschema: v1\nmcpServers:\n"
                                                "  - name: x\n    command: npx\n",
              "AGENTS.md": "# Agents\n"})
    start = snapshot(ws.path)
    r = cli("bootstrap-host", "--host-kind", "continue", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert [(f["path"], f["action"]) for f in r.json()["files"]] == [(CONTINUE, "create"), (RULE, "create")]
    entry = json.loads((ws.path / CONTINUE).read_text("utf-8"))["mcpServers"]["vivary"]
    assert set(entry) == {"command", "args"} and entry["args"][-3:] == ["mcp", "-C", str(ws.path)]
    rule = (ws.path / RULE).read_text("utf-8")
    assert GUIDANCE_MARKERS.span(rule, RULE) is not None
    assert not rule.startswith("---")  # no front matter: Continue always applies the rule
    assert (ws.path / "AGENTS.md").read_text("utf-8") == "# Agents\n"

    status = cli("host-status", "--host-kind", "continue", "--json", cwd=ws.path)
    assert status.code == 0, status.out
    host = status.json()["hosts"][0]
    assert [(s["path"], s["state"]) for s in host["servers"]] == [(CONTINUE, "installed")]
    assert host["guidance"] == {"path": RULE, "state": "present", "detail": None}

    assert {f["action"] for f in cli("bootstrap-host", "--host-kind", "continue", "--json",
                                     cwd=ws.path).json()["files"]} == {"unchanged"}
    gone = cli("bootstrap-host", "--host-kind", "continue", "--uninstall", "--json", cwd=ws.path)
    assert [f["action"] for f in gone.json()["files"]] == ["delete", "delete"]
    assert snapshot(ws.path) == start  # .continue/rules/ gone, the user's mcpServers/ file kept


def test_continue_and_opencode_have_no_user_level_file_written(repo: Repo, cli: Any) -> None:
    ws = plain_workspace(repo)
    start = snapshot(ws.path)
    for kind, dest in (("opencode", OPENCODE), ("continue", CONTINUE)):
        r = cli("bootstrap-host", "--host-kind", kind, "--user", cwd=ws.path)
        assert r.code == 2 and dest in r.err and "without --user" in r.err
    assert snapshot(home()) == {} and snapshot(ws.path) == start


def test_a_linked_continue_folder_or_opencode_file_is_refused(repo: Repo, cli: Any, tmp_path: Path) -> None:
    ws = plain_workspace(repo)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "opencode.json").write_text("{}\n")
    for kind, link, target in (("continue", ".continue", elsewhere), ("opencode", OPENCODE,
                                                                     elsewhere / "opencode.json")):
        (ws.path / link).symlink_to(target)
        r = cli("bootstrap-host", "--host-kind", kind, cwd=ws.path)
        assert r.code == 3 and link in r.err and "symlink" in r.err
        assert sorted(p.name for p in elsewhere.iterdir()) == ["opencode.json"]
        assert (elsewhere / "opencode.json").read_text() == "{}\n" and not (ws.path / "AGENTS.md").exists()
        status = cli("host-status", "--host-kind", kind, "--json", cwd=ws.path)
        assert status.code == 1 and status.json()["hosts"][0]["servers"][0]["state"] == "unreadable"
        (ws.path / link).unlink()


def test_opencode_s_own_user_files_are_merged_by_name_and_bootstrap_host_says_so(repo: Repo, cli: Any) -> None:
    """opencode merges ~/.config/opencode/{config.json,opencode.json,opencode.jsonc} with the project's file by
    server name, member by member (seen with opencode-ai 1.18.33): this workspace's server under a second name
    there is a second server on the same memory, and a `vivary` there lends ours its `enabled: false`. Those
    files are the user's: read, never written."""
    ws = plain_workspace(repo)
    argv = json.dumps(["/usr/bin/git-vivary", "mcp", "-C", str(ws.path)])
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (user / "opencode.jsonc").write_text(
        '{\n  // mine\n  "mcp": {"vivary-old": {"type": "local", "command": ' + argv + '}},\n}\n', "utf-8")
    (user / "config.json").write_text('{"mcp": {"vivary": {"type": "local", "command": ["/bin/true"], '
                                      '"enabled": false}}}\n', "utf-8")
    before = snapshot(home())

    notes = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path).json()["notes"]
    assert ("opencode also reads ~/.config/opencode/opencode.jsonc, where this workspace's server is 'vivary-old': "
            "in this workspace it starts both, two servers on the same memory; keep one (remove 'vivary-old' from "
            "~/.config/opencode/opencode.jsonc by hand)") in notes, notes
    assert ("opencode also reads ~/.config/opencode/config.json, which has a server named 'vivary' too, and merges "
            "the two member by member: its enabled applies here (`enabled: false` there turns this one off); "
            "rename one of them") in notes, notes
    assert snapshot(home()) == before

    (user / "opencode.jsonc").unlink()
    (user / "config.json").write_text('{"mcp": {"vivary": {"type": "local", "command": ["/bin/true"]}}}\n')
    notes = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path).json()["notes"]
    assert not any("also reads" in n for n in notes), notes  # a command alone: the project's wins whole


def test_opencode_s_project_files_merged_with_ours_by_name_are_named_too(repo: Repo, cli: Any) -> None:
    """opencode also merges the opencode.json and opencode.jsonc of every folder above the workspace (up to the
    top of the work tree: the nearer wins), an opencode.jsonc beside our opencode.json (which wins) and the
    workspace's .opencode/ (which wins over all), seen with opencode-ai 1.18.33."""
    ws = plain_workspace(repo)
    sub = ws.path / "notes"
    top_entry = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path).json()["server"]
    notes = cli("bootstrap-host", "--host-kind", "opencode", "--root", "notes", "--json", cwd=ws.path).json()["notes"]
    assert not any("also reads" in n for n in notes), notes  # the top's `vivary` is its own, and ours wins it

    argv = json.dumps([top_entry["command"], "mcp", "-C", str(sub), "--root", "."])
    (sub / ".opencode").mkdir()
    (sub / ".opencode" / "opencode.jsonc").write_text('{"mcp": {"vivary": {"type": "local", "command": ["/bin/x"]}}}')
    ws.write({"opencode.jsonc": '{"mcp": {"vivary-notes": {"type": "local", "command": ' + argv + '}}}\n'})
    notes = cli("bootstrap-host", "--host-kind", "opencode", "--root", "notes", "--json", cwd=ws.path).json()["notes"]
    assert ("opencode also reads ../opencode.jsonc, where this workspace's server is 'vivary-notes': in this "
            "workspace it starts both, two servers on the same memory; keep one (remove 'vivary-notes' from "
            "../opencode.jsonc by hand)") in notes, notes
    assert ("opencode also reads .opencode/opencode.jsonc, which has a server named 'vivary' too, and merges the two "
            "member by member: its command, args apply here; rename one of them") in notes, notes


def test_opencode_s_project_files_are_read_within_bounds_and_never_through_a_link(repo: Repo, cli: Any,
                                                                                  tmp_path: Path) -> None:
    """The project's files opencode merges with ours are committed ones, a stranger's: a symbolic link among them
    (to a file out of the work tree, to /dev/zero) is named and not followed, and one bigger than a host's file
    is left unread, as every host file bootstrap-host reads is."""
    ws = plain_workspace(repo)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"mcp": {"vivary": {"canary_outside": 1}}}\n', "utf-8")
    (ws.path / ".opencode").mkdir()
    (ws.path / ".opencode" / "opencode.jsonc").symlink_to(elsewhere)
    ws.write({"opencode.json": "{}\n", "opencode.jsonc": '{"mcp": {"vivary": {"canary_huge": 1}}}' + " " * (5 << 20)})
    r = cli("bootstrap-host", "--host-kind", "opencode", "--dry-run", "--json", cwd=ws.path)
    assert r.code == 0, r.out + r.err
    notes = r.json()["notes"]
    assert not any("canary" in n for n in notes), notes
    assert ("opencode also reads .opencode/opencode.jsonc, a symbolic link, which bootstrap-host does not follow: "
            "check by hand that it names no server 'vivary' nor this workspace's under another name") in notes, notes


def _opencode_status(cli: Any, ws: Repo) -> tuple[int, dict[str, Any], str]:
    status = cli("host-status", "--host-kind", "opencode", "--json", cwd=ws.path)
    out = cli("host-status", "--host-kind", "opencode", cwd=ws.path)
    assert out.code == status.code
    return status.code, status.json()["hosts"][0]["servers"][0], out.out


def test_host_status_says_a_user_file_of_opencode_s_turns_our_entry_off(repo: Repo, cli: Any) -> None:
    """A `vivary` with `enabled: false` in ~/.config/opencode/config.json turns ours off (`opencode mcp list`:
    `○ vivary disabled`, tests/test_hosts_real.py): host-status says `disabled`, names the file, exit 1."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    assert _opencode_status(cli, ws)[1]["state"] == "installed"
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (user / "config.json").write_text('{"mcp": {"vivary": {"enabled": false}}}\n', "utf-8")
    code, server, text = _opencode_status(cli, ws)
    assert (code, server["state"]) == (1, "disabled"), server
    assert [(m["path"], m["effect"], m["name"]) for m in server["merged"]] == [
        ("~/.config/opencode/config.json", "disabled", "vivary")]
    assert "`enabled: false` there turns this one off" in server["merged"][0]["detail"]
    assert "server    disabled   opencode.json [vivary]" in text and "~/.config/opencode/config.json" in text

    (user / "config.json").write_text('{"mcp": {"vivary": {"enabled": true}}}\n', "utf-8")
    code, server, _ = _opencode_status(cli, ws)
    assert (code, server["state"], server["merged"][0]["effect"]) == (0, "installed", "lent"), server


def test_host_status_says_opencode_s_dot_opencode_folder_overrides_our_entry(repo: Repo, cli: Any) -> None:
    """`.opencode/opencode.jsonc` is read after our opencode.json and wins member by member: a `vivary` there with
    its own command is what opencode runs (`overridden`, exit 1); a link there is not followed, but said."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    (ws.path / ".opencode").mkdir()
    (ws.path / ".opencode" / "opencode.jsonc").write_text(
        '{\n  // mine\n  "mcp": {"vivary": {"type": "local", "command": ["/bin/x"]}},\n}\n', "utf-8")
    code, server, text = _opencode_status(cli, ws)
    assert (code, server["state"]) == (1, "overridden"), server
    assert [(m["path"], m["effect"]) for m in server["merged"]] == [(".opencode/opencode.jsonc", "overridden")]
    assert "its command, args apply here" in server["merged"][0]["detail"]
    assert "server    overridden opencode.json [vivary]" in text

    elsewhere = repo.path.parent / "elsewhere.jsonc"
    (ws.path / ".opencode" / "opencode.jsonc").rename(elsewhere)
    (ws.path / ".opencode" / "opencode.jsonc").symlink_to(elsewhere)
    code, server, _ = _opencode_status(cli, ws)
    assert (code, server["state"]) == (0, "installed"), server
    assert [(m["path"], m["effect"]) for m in server["merged"]] == [(".opencode/opencode.jsonc", "unread")]
    assert "a symbolic link, which bootstrap-host does not follow" in server["merged"][0]["detail"]


def test_host_status_says_opencode_s_user_file_holds_this_workspace_s_server_under_another_name(
        repo: Repo, cli: Any) -> None:
    """This workspace's server as `vivary-old` in ~/.config/opencode/opencode.jsonc is a second server on the same
    memory: said in `merged` (`second`), the entry still `installed` (it runs), exit 0."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    argv = json.dumps(["/usr/bin/git-vivary", "mcp", "-C", str(ws.path)])
    (user / "opencode.jsonc").write_text('{"mcp": {"vivary-old": {"type": "local", "command": ' + argv + '}}}\n')
    code, server, text = _opencode_status(cli, ws)
    assert (code, server["state"]) == (0, "installed"), server
    assert [(m["path"], m["effect"], m["name"]) for m in server["merged"]] == [
        ("~/.config/opencode/opencode.jsonc", "second", "vivary-old")]
    assert "    second     ~/.config/opencode/opencode.jsonc [vivary-old]" in text


def test_opencode_json_holds_opencode_s_schema_so_opencode_leaves_it_and_uninstall_removes_it(repo: Repo,
                                                                                              cli: Any) -> None:
    """opencode writes `"$schema": "https://opencode.ai/config.json"` first into every config file it reads
    without one (seen with opencode-ai 1.18.33): ours has it from the start, and a file left holding only it,
    ours or the host's, goes with our entry."""
    ws = plain_workspace(repo)
    start = snapshot(ws.path)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    text = (ws.path / OPENCODE).read_text("utf-8")
    assert text.startswith('{\n  "$schema": "https://opencode.ai/config.json",\n  "mcp": {\n'), text
    gone = cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", "--json", cwd=ws.path)
    assert [(f["path"], f["action"]) for f in gone.json()["files"]] == [(OPENCODE, "delete"), ("AGENTS.md", "delete")]
    assert snapshot(ws.path) == start

    # A file written without it (by an earlier bootstrap-host), then given it by opencode as opencode does:
    # `original.replace(/^\s*\{/, '{\n  "$schema": "https://opencode.ai/config.json",')`.
    entry = json.dumps({"type": "local", "command": ["/usr/bin/git-vivary", "mcp", "-C", str(ws.path)]}, indent=2)
    older = '{\n  "mcp": {\n    "vivary": ' + entry.replace("\n", "\n    ") + "\n  }\n}\n"
    (ws.path / OPENCODE).write_text(older.replace("{", '{\n  "$schema": "https://opencode.ai/config.json",', 1))
    assert cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", cwd=ws.path).code == 0
    assert snapshot(ws.path) == start

    kept = '{\n  "$schema": "https://opencode.ai/config.json",\n  "model": "x"\n}\n'
    (ws.path / OPENCODE).write_text(kept)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    assert cli("bootstrap-host", "--host-kind", "opencode", "--uninstall", cwd=ws.path).code == 0
    assert (ws.path / OPENCODE).read_text() == kept


def test_host_status_judges_opencode_s_files_together_in_opencode_s_order(repo: Repo, cli: Any) -> None:
    """opencode merges its files by server name, member by member, a later one winning each member it has (seen with
    opencode-ai 1.18.33, tests/test_hosts_real.py): `enabled: false` in the user's file, then `enabled: true` in
    .opencode/, is on; the other way round, off. The folders above are read from the top down, the nearer last."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (ws.path / ".opencode").mkdir()
    for first, last, want in ((False, True, (0, "installed", "lent")), (True, False, (1, "disabled", "disabled"))):
        (user / "config.json").write_text(json.dumps({"mcp": {"vivary": {"enabled": first}}}), "utf-8")
        (ws.path / ".opencode" / "opencode.json").write_text(json.dumps({"mcp": {"vivary": {"enabled": last}}}))
        code, server, _ = _opencode_status(cli, ws)
        assert (code, server["state"]) == want[:2], server
        assert [(m["path"], m["effect"]) for m in server["merged"]] == [(".opencode/opencode.json", want[2])], server

    (user / "config.json").unlink()
    shutil.rmtree(ws.path / ".opencode")
    deep = ws.path / "notes" / "deep"
    deep.mkdir()
    assert cli("bootstrap-host", "--host-kind", "opencode", "--root", "notes/deep", cwd=ws.path).code == 0
    for top, near, want in ((False, True, (0, "installed", "lent")), (True, False, (1, "disabled", "disabled"))):
        ws.write({"opencode.jsonc": json.dumps({"mcp": {"vivary": {"enabled": top}}}),
                  "notes/opencode.jsonc": json.dumps({"mcp": {"vivary": {"enabled": near}}})})
        status = cli("host-status", "--host-kind", "opencode", "--root", "notes/deep", "--json", cwd=ws.path)
        server = status.json()["hosts"][0]["servers"][0]
        assert (status.code, server["state"]) == want[:2], server
        assert [(m["path"], m["effect"]) for m in server["merged"]] == [("../opencode.jsonc", want[2])], server


def test_host_status_names_a_file_opencode_merges_that_it_cannot_read(repo: Repo, cli: Any) -> None:
    """A file opencode merges with ours that cannot be read (not JSON: opencode stops on it too; over 4 MiB) is
    named, with why and the fix, as `unreadable` (exit 1); the rest of the report is there all the same, and
    bootstrap-host says it in a note."""
    ws = plain_workspace(repo)
    assert cli("bootstrap-host", "--host-kind", "opencode", cwd=ws.path).code == 0
    user = home() / ".config" / "opencode"
    user.mkdir(parents=True)
    (user / "config.json").write_text('{"mcp": {"vivary": {"enabled": false}\n', "utf-8")
    ws.write({"opencode.jsonc": '{"mcp": {}}' + " " * (5 << 20)})
    code, server, text = _opencode_status(cli, ws)
    assert (code, server["state"]) == (1, "installed"), server
    assert [(m["path"], m["effect"]) for m in server["merged"]] == [
        ("~/.config/opencode/config.json", "unreadable"), ("opencode.jsonc", "unreadable")], server
    broken, big = (m["detail"] for m in server["merged"])
    assert broken.startswith("opencode also reads ~/.config/opencode/config.json, which could not be read") and \
        "~/.config/opencode/config.json: line 2" in broken and "fix the file" in broken, broken
    assert "opencode.jsonc is 5242891 bytes, more than 4194304" in big and "check it is the right file" in big, big
    assert "    unreadable ~/.config/opencode/config.json [vivary]" in text, text

    every = cli("host-status", "--json", cwd=ws.path)
    assert every.code == 1 and len(every.json()["hosts"]) > 1 and every.json()["onboarding"]["missing"]
    notes = cli("bootstrap-host", "--host-kind", "opencode", "--json", cwd=ws.path).json()["notes"]
    assert any(n.startswith("opencode also reads opencode.jsonc, which could not be read") for n in notes), notes
