"""A vault as an Obsidian user commits it, `.obsidian/` settings included (docs/vaults.md#obsidian-settings):
Excluded files (`app.json` userIgnoreFilters) are left out of search but stay notes and link targets, and a
settings file that is too large or not JSON is named in a warning, never a failure. Real Git, the public CLI."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from conftest import Repo, run_git_vivary

NOTES = {
    "Current.md": "# Zebra plans\n\nZebra migration notes. See [[Old zebra]] and [[Zebra draft]].\n",
    "Archive/Old zebra.md": "# Old zebra\n\nZebra old stuff.\n",
    "Zebra draft.md": "# Zebra draft\n\nA zebra draft.\n",
    "Drafts/zebra.md": "# Zebra scratch\n\nZebra scratch pad.\n",
}


def _vault(repo: Repo, filters: Any, **extra: str) -> None:
    repo.commit("vault", {**NOTES, ".obsidian/app.json": json.dumps({"userIgnoreFilters": filters}), **extra})


def _ids(result: Any) -> list[str]:
    return [h.get("id", h.get("node_id")) for h in result.json()["results"]]


def test_excluded_files_are_left_out_of_find_and_query_but_stay_link_targets(repo: Repo, cli: Any) -> None:
    # A folder (as Obsidian's picker writes it), a prefix of a file name, and a regular expression (any case)
    _vault(repo, ["Archive/", "Zebra dr", "/^drafts\\//"])
    for command in ("query", "find"):
        got = cli(command, "zebra", "--json", cwd=repo.path)
        assert got.code == 0, got.err
        assert _ids(got) == ["Current"], command
    # Still notes, and what Current links to (Obsidian resolves a link to an excluded file)
    check = cli("check", "--verbose", cwd=repo.path)
    assert check.code == 0 and "W221" not in check.out, check.out
    assert "vivary: 3 note(s) match Obsidian's Excluded files (.obsidian/app.json userIgnoreFilters)" in check.err
    graph = cli("graph", "--json", cwd=repo.path).json()
    assert {n["id"] for n in graph["nodes"]} == {"Current", "Archive/Old zebra", "Zebra draft", "Drafts/zebra"}
    assert {(e["to"], e["broken"]) for e in graph["edges"]} == {("Archive/Old zebra", False), ("Zebra draft", False)}
    # Never private: the owner's --include-private changes nothing, and the setting turns the exclusion off
    assert _ids(cli("query", "zebra", "--json", "--include-private", cwd=repo.path)) == ["Current"]
    repo.commit("search them", {".vivary/graph.toml": "search_excluded = true\n"})
    assert set(_ids(cli("query", "zebra", "--json", cwd=repo.path))) == {
        "Current", "Archive/Old zebra", "Zebra draft", "Drafts/zebra"}


def test_an_entry_is_a_prefix_of_the_path_as_obsidian_matches_it(repo: Repo, cli: Any) -> None:
    # `Archive` without a slash is a prefix, in any case: `Archive/…`, `archive/…` and `Archived.md`; it is
    # matched from the vault root, so `old/Archive/…` stays. `/^Old/i` is no regular expression to Obsidian (it
    # does not end with `/`): a prefix no path has. A regular expression is searched anywhere in the path.
    repo.commit("vault", {
        "Archive/a.md": "# Zebra a\n", "Archived.md": "# Zebra b\n", "old/Archive/c.md": "# Zebra c\n",
        "archive/d.md": "# Zebra d\n", "notes/zebra.excalidraw.md": "# Zebra e\n", "notes/f.md": "# Zebra f\n",
        ".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive", "/^Old/i", "/\\.EXCALIDRAW\\.md$/"]})})
    assert set(_ids(cli("query", "zebra", "--json", cwd=repo.path))) == {"old/Archive/c", "notes/f"}


@pytest.mark.parametrize(("content", "said"), [
    (b'{"userIgnoreFilters": ["Archive/"', ".obsidian/app.json:1: not valid JSON"),
    (b'["Archive/"]', ".obsidian/app.json: not a JSON object"),
    (b"\xff\xfe{}", ".obsidian/app.json: not UTF-8 text"),
    (b'{"userIgnoreFilters": "Archive/"}', ".obsidian/app.json: userIgnoreFilters is not a list of paths"),
    (b" " * (1 << 20) + b"{}", ".obsidian/app.json: 1,048,578 bytes, more than the 1,048,576 read"),
    (b"[" * 100_000 + b"]" * 100_000, ".obsidian/app.json:"),
])
def test_settings_that_cannot_be_read_are_a_warning_naming_the_file(repo: Repo, cli: Any, content: bytes,
                                                                   said: str, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit("vault", {**NOTES, ".obsidian/app.json": content})
    monkeypatch.setenv("CI", "true")  # the gate: a warning about the editor's settings never fails it
    got = cli("check", cwd=repo.path)
    assert got.code == 0, got.out + got.err
    assert f"vivary: warning: {said}" in got.err
    assert "Traceback" not in got.err
    # Nothing is excluded: the note in Archive/ is found
    assert "Archive/Old zebra" in _ids(cli("query", "zebra", "--json", cwd=repo.path))


def test_a_templates_setting_that_is_not_json_is_a_warning(repo: Repo, cli: Any) -> None:
    repo.commit("vault", {**NOTES, ".obsidian/templates.json": '{"folder": '})
    got = cli("check", cwd=repo.path)
    assert got.code == 0
    assert "vivary: warning: .obsidian/templates.json:1: not valid JSON (Expecting value at column 12)" in got.err


def test_entries_that_cannot_be_used_are_named_and_the_rest_apply(repo: Repo, cli: Any) -> None:
    # `(a+)+$` against a path of many a's backtracks for ever in a backtracking matcher, `.*.*.*.*x` for the fifth
    # power of its length: refused, not run
    _vault(repo, ["/(a+)+$/", "/(x|xy)*z/", "/.*.*.*.*x/", "/(a)\\1/", "/[/", 3, "", "Archive/", "Zebra draft.md",
                  "/^drafts\\//"],
           **{"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab.md": "# Zebra aaa\n"})
    got = cli("query", "zebra", "--json", cwd=repo.path)
    assert _ids(got) == ["Current", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"]
    for entry, why in (("'/(a+)+$/'", "repeats a repeat, so it could take very long to match"),
                       ("'/(x|xy)*z/'", "repeats an alternative"),
                       ("'/.*.*.*.*x/'", "has more than one open-ended repeat"),
                       ("'/(a)\\\\1/'", "has a back reference"),
                       ("'/[/'", "is not a regular expression Python reads"), ("'3'", "is not a string"),
                       ("''", "is empty")):
        assert f"userIgnoreFilters entry {entry} {why}" in got.err, got.err


def test_an_alias_is_no_link_target_as_in_obsidian(repo: Repo, cli: Any) -> None:
    # Obsidian links an alias as `[[Artificial intelligence|AI]]`; a bare `[[AI]]` is unresolved there (clicking it
    # creates `AI.md`), and the property links Obsidian 1.4+ writes (quoted, lists of them) are edges.
    repo.commit("vault", {
        ".obsidian/app.json": "{}",
        "Artificial intelligence.md": '---\naliases:\n  - AI\ntags:\n  - topic/ai\ncssclasses:\n  - wide\n'
                                      'related: "[[Dog]]"\nsee:\n  - "[[Dog]]"\n  - "[[Cat|kitty]]"\n---\n# AI\n',
        "Dog.md": "# Dog\n\n[[AI]] and [[Artificial intelligence|AI]].\n", "Cat.md": "# Cat\n"})
    graph = cli("graph", "--json", cwd=repo.path).json()
    assert sorted((e["from"], e["field"], e["to"], e["broken"]) for e in graph["edges"]) == [
        ("Artificial intelligence", "related", "Dog", False),
        ("Artificial intelligence", "see", "Cat", False),
        ("Artificial intelligence", "see", "Dog", False),
        ("Dog", "wikilink", "AI", True),
        ("Dog", "wikilink", "Artificial intelligence", False),
    ]


EMBED = importlib.util.find_spec("hnswlib") is not None and importlib.util.find_spec("onnxruntime") is not None
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'


def _indexed(repo: Repo) -> None:
    from vivary_git.memory.local.embed import embedder_status

    if not EMBED or embedder_status() != "available":
        pytest.skip("needs the [embed] extra")
    _vault(repo, ["Archive/", "Zebra draft.md", "Drafts/"], **{".vivary/memory.toml": MEMORY})
    done = run_git_vivary(["index", "--yes"], repo.path)
    assert done.returncode == 0, done.stderr


def test_recall_and_semantic_query_leave_excluded_files_out(repo: Repo, cli: Any) -> None:
    _indexed(repo)
    recall = cli("recall", "zebra", "--json", cwd=repo.path)
    assert [h["node_id"] for h in recall.json()] == ["Current"], recall.out
    for mode in ("semantic", "hybrid"):
        assert _ids(cli("query", "zebra", "--mode", mode, "--json", cwd=repo.path)) == ["Current"]


def test_mcp_search_leaves_excluded_files_out_and_reads_them(repo: Repo) -> None:
    # No `cli` fixture here: the MCP SDK, imported under pytest's capsys, would keep its stand-in stderr for later
    # tests' servers (a stream with no file number to hand a process).
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    _indexed(repo)
    service = MemoryService(repo.path)
    for mode in ("text", "hybrid"):
        assert [h.id for h in service.search("zebra", mode=mode).results] == ["Current"], mode
    # An excluded note is not private: it is read on request
    packet = service.read("Archive/Old zebra")
    assert packet.title == "Old zebra" and packet.path == "Archive/Old zebra.md"
    service.close()


BROKEN = {".obsidian/app.json": json.dumps({"userIgnoreFilters": ["Archive/", "/##[/"]}),
          ".obsidian/templates.json": '{"folder": '}


def test_doctor_names_the_settings_it_leaves_unused_once_each(repo: Repo, cli: Any) -> None:
    # Doctor reads HEAD, not through the working tree's opening that warns on stderr: its report says it.
    repo.commit("vault", {**NOTES, **BROKEN})
    text = cli("doctor", cwd=repo.path)
    assert "vivary: warning:" not in text.err, text.err
    for said in (".obsidian/templates.json:1: not valid JSON (Expecting value at column 12)",
                 ".obsidian/app.json: userIgnoreFilters entry '/##\\x5b/' is not a regular expression Python reads"):
        assert text.out.count(f"warning: workspace: {said}") == 1, text.out
    assert "  fix: correct the settings file it names, or let Obsidian write it again" in text.out
    assert text.code == 0 and "##[" not in text.out  # a warning, never a failure; a CI runner's command stays inert
    problems = [p for p in cli("doctor", "--json", cwd=repo.path).json()["problems"] if p["area"] == "workspace"]
    assert [p["level"] for p in problems] == ["warning", "warning"], problems
    assert {p["message"].split(":")[0] for p in problems} == {".obsidian/templates.json", ".obsidian/app.json"}


def test_mcp_status_names_the_settings_it_leaves_unused(repo: Repo) -> None:
    # No `cli` fixture: see test_mcp_search_leaves_excluded_files_out_and_reads_them.
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    repo.commit("vault", {**NOTES, **BROKEN})
    service = MemoryService(repo.path)
    warnings = service.status().workspace["settings_warnings"]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith(".obsidian/templates.json:1: not valid JSON"), warnings
    assert warnings[1] == ".obsidian/app.json: userIgnoreFilters entry '/##\\x5b/' is not a regular expression " \
        "Python reads (unterminated character set at position 2); it excludes nothing", warnings
    service.close()
    repo.commit("fixed", {".obsidian/app.json": "{}", ".obsidian/templates.json": "{}"})
    service = MemoryService(repo.path)
    assert "settings_warnings" not in service.status().workspace  # none: the key is left out
    service.close()
