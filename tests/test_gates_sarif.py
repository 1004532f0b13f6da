"""SARIF from `git vivary ci`: valid by the OASIS schema, and clean by Microsoft's SARIF Multitool,
including the rules GitHub code scanning applies to uploads (the GH… rules).

The schema (tests/data/sarif-2.1.0.json) is the one shipped in the MIT-licensed npm package
@microsoft/sarif-multitool-linux 5.7.0. The Multitool itself is installed from npm in the session
(tests/npm_tools.py); it is a self-contained .NET program, so no .NET runtime is needed.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import Repo
from npm_tools import npm_home, npm_install

from vivary_git.gates.sarif import RULES, uri

DATA = Path(__file__).resolve().parent / "data"
ROOT = Path(__file__).resolve().parent.parent
TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list", uses = "ref" }
"""


def sarif_of(repo: Repo, cli: Any, tmp_path: Path, *args: str) -> tuple[Path, dict[str, Any]]:
    out = tmp_path / "vivary.sarif"
    cli("ci", *args, "--sarif", str(out), cwd=repo.path)
    return out, json.loads(out.read_text())


def obsidian_like(repo: Repo) -> None:
    """Names as Obsidian vaults have them: spaces, `#`, `%`, accents, brackets."""
    repo.commit("base", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/Meeting notes 2024.md": "---\ndepends: [gone]\n---\n# M\n",
        "modules/C# & 100%.md": "---\nuses: nowhere\n---\n",
        "modules/café [draft].md": "---\ndepends: [a, lost]\n---\n",
    })
    repo.commit("head", files={"modules/a.md": "---\ndepends: [x, x2]\n---\n# A\n\n[[missing]]\n"})


def test_artifact_uris_are_percent_encoded_rfc3986() -> None:
    assert uri("modules/Meeting notes 2024.md") == "modules/Meeting%20notes%202024.md"
    assert uri("modules/C# & 100%.md") == "modules/C%23%20%26%20100%25.md"
    assert uri("modules/café [draft].md") == "modules/caf%C3%A9%20%5Bdraft%5D.md"
    assert uri("a:b.md") == "a%3Ab.md"  # a colon in the first segment would read as a URI scheme
    assert uri("notes/\udcff.md") == "notes/%FF.md"  # a non-UTF-8 name: its raw byte, not U+FFFD
    assert uri("plain/ok-_.~x.md") == "plain/ok-_.~x.md"


def test_sarif_matches_the_schema_and_github_needs(repo: Repo, cli: Any, tmp_path: Path) -> None:
    obsidian_like(repo)
    _, s = sarif_of(repo, cli, tmp_path, "--base", "HEAD~1")
    schema = json.loads((DATA / "sarif-2.1.0.json").read_text())
    jsonschema.Draft202012Validator(schema).validate(s)
    run = s["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["informationUri"].startswith("https://")
    assert run["automationDetails"]["id"] == "vivary/"
    for rule in driver["rules"]:
        assert rule["name"] != rule["id"] and rule["fullDescription"]["text"] and rule["help"]["text"]
        assert rule["help"]["markdown"]
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in run["results"])
    assert "modules/Meeting%20notes%202024.md" in uris and "modules/C%23%20%26%20100%25.md" in uris
    prints = [r["partialFingerprints"]["vivaryFinding/v1"] for r in run["results"]]
    assert len(set(prints)) == len(prints)  # two identical messages in one file still differ
    # The fingerprint follows the finding, not its line: moving it down keeps the same value.
    repo.commit("move", files={"modules/Meeting notes 2024.md": "---\ntitle: M\ndepends: [gone]\n---\n# M\n"})
    _, moved = sarif_of(repo, cli, tmp_path, "--base", "HEAD~1")

    def by_uri(doc: dict[str, Any]) -> dict[str, str]:
        return {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]: r["partialFingerprints"][
            "vivaryFinding/v1"] for r in doc["runs"][0]["results"] if r["ruleId"] == "W220"}

    assert by_uri(moved)["modules/Meeting%20notes%202024.md"] == by_uri(s)["modules/Meeting%20notes%202024.md"]


def test_sarif_in_a_subfolder_workspace_has_its_own_category(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit("base", files={"docs/tropo.toml": TROPO, "docs/modules/a b.md": "---\ndepends: [zz]\n---\n"})
    _, s = sarif_of(repo, cli, tmp_path, "--root", "docs")
    assert s["runs"][0]["automationDetails"]["id"] == "vivary/docs/"
    loc = s["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "docs/modules/a%20b.md", "uriBaseId": "%SRCROOT%"}


def test_the_rules_are_the_codes_check_documents_and_emits() -> None:
    """One SARIF rule a finding code: the codes of docs/check.md's table, and every code the package
    writes. A code without its rule got a generic one ("vivary finding W224.") in code scanning."""
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    table = text.split("\n## Findings\n", 1)[1].split("\n## ", 1)[0]
    documented = set(re.findall(r"^\| `([EW]\d{3})` \|", table, re.MULTILINE))
    emitted = {code for py in (ROOT / "vivary_git").rglob("*.py") if py.name != "sarif.py"
               for code in re.findall(r"[\"']([EW]\d{3})[\"']", py.read_text(encoding="utf-8"))}
    assert sorted(RULES) == sorted(documented)
    assert emitted == documented, f"written, not documented: {sorted(emitted - documented)}; " \
                                  f"documented, never written: {sorted(documented - emitted)}"


def test_link_findings_of_a_vault_have_their_own_rules(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """W222 (a heading the note lacks), W223 (an attachment not in the vault) and W224 (link findings past
    the ones a note lists) each name a rule of their own, with the words of docs/check.md."""
    from vivary_git.check import MAX_LINK_FINDINGS

    gone = "\n".join(f"[[gone{i}]]" for i in range(MAX_LINK_FINDINGS + 1))
    repo.commit("vault", files={".vivary/graph.toml": "[links]\nanchors = true\n",
                                "A.md": "# A\n[[B#Nowhere]] ![[missing.png]]\n", "B.md": "## Intro\n",
                                "Big.md": f"# Big\n{gone}\n"})
    _, s = sarif_of(repo, cli, tmp_path)
    run = s["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    used = {r["ruleId"] for r in run["results"]}
    assert {"W221", "W222", "W223", "W224"} <= used
    for result in run["results"]:
        assert rules[result["ruleIndex"]]["id"] == result["ruleId"]
    by_id = {r["id"]: r for r in rules}
    assert by_id["W222"]["name"] == "BrokenAnchor"
    assert by_id["W223"]["help"]["text"].endswith(
        "Fix: Add the file, or fix its name (attachments are named with their extension).")
    assert "this one finding counts the rest" in by_id["W224"]["fullDescription"]["text"]
    for code in used:
        assert by_id[code]["name"] == RULES[code].name and "vivary finding" not in by_id[code]["help"]["text"]


@pytest.fixture(scope="session")
def multitool(tmp_path_factory: pytest.TempPathFactory) -> Path:
    modules = npm_install(npm_home(tmp_path_factory), "@microsoft/sarif-multitool@5.7.0")
    exe = modules / "@microsoft" / "sarif-multitool-linux" / "Sarif.Multitool"
    if not exe.is_file():
        pytest.skip("npm installed @microsoft/sarif-multitool without its Linux build (another platform?)")
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)  # its postinstall does this; npm may skip scripts
    return exe


def test_sarif_multitool_validate_finds_nothing(repo: Repo, cli: Any, tmp_path: Path, multitool: Path) -> None:
    """`Sarif.Multitool validate` with the SARIF rules and GitHub's (GH…): no error, no warning. (Its
    notes are suggestions left out on purpose: message ids instead of text, code snippets, help URIs,
    version-control provenance that needs a repository URL, and a `$schema` reachable over the network.)"""
    obsidian_like(repo)
    path, _ = sarif_of(repo, cli, tmp_path, "--base", "HEAD~1")
    report = tmp_path / "validation.sarif"
    env = dict(os.environ, DOTNET_SYSTEM_GLOBALIZATION_INVARIANT="1", DOTNET_CLI_TELEMETRY_OPTOUT="1")
    proc = subprocess.run([str(multitool), "validate", "--rule-kind", "Sarif;Gh", "--level", "Error;Warning",
                           "--output", str(report), str(path)], capture_output=True, text=True, env=env,
                          timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = [f"{r['ruleId']}: {r['message'].get('text') or r['message'].get('arguments')}"
             for r in json.loads(report.read_text(encoding="utf-8-sig"))["runs"][0].get("results", [])]
    assert found == [], "\n".join(found)
