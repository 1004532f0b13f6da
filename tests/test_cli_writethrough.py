"""A memory written on the command line (`remember`, `edit`, `retire`, `move`) is in the semantic index when the
command returns, as one written over MCP is: `recall` right after it finds it instead of refusing a stale index.
Only an index that exists is written through (someone approved indexing once), and only within
`[memory] max_unindexed`; otherwise the command says what to run."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("hnswlib", reason="the embed extra is not installed")

from conftest import Repo

LOCAL = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
    "README.md": "# Home\n\nSee [[notes/deploy]].\n",
}


def _indexed(repo: Repo, cli: Any, config: str = LOCAL) -> None:
    repo.commit("init", {**NOTES, ".vivary/memory.toml": config})
    assert cli("index", "--yes", cwd=repo.path).code == 0


def _top(cli: Any, repo: Repo, question: str) -> str:
    r = cli("recall", question, "--json", cwd=repo.path)
    assert r.code == 0, r.err  # a stale index would be refused (exit 2)
    hits = r.json()
    return hits[0]["node_id"] if hits else ""


def test_remember_then_recall_finds_it_and_index_has_nothing_left_to_do(repo: Repo, cli: Any) -> None:
    _indexed(repo, cli)
    r = cli("remember", "The coffee machine is on the third floor, next to the printer.", cwd=repo.path)
    assert r.code == 0, r.err
    assert "the semantic index is up to date (1 note(s) embedded, 0 removed): recall finds it now" in r.out
    memory = r.out.split()[1]
    assert _top(cli, repo, "where can I get an espresso") == memory  # no word of the memory: only its meaning
    # What the write left on disk is the index `index --yes` would have made of this tree.
    again = cli("index", "--yes", cwd=repo.path)
    assert again.code == 0 and again.out.startswith("up to date"), again.out


def test_edit_retire_and_move_keep_the_index_current(repo: Repo, cli: Any) -> None:
    _indexed(repo, cli)
    memory = cli("remember", "Field trips leave from the north gate.", cwd=repo.path).out.split()[1]
    r = cli("edit", memory, "--append", "Bring the survey tablets, fully charged.", cwd=repo.path)
    assert r.code == 0 and "recall finds it now" in r.out, r.out
    assert _top(cli, repo, "survey tablets charged") == memory

    r = cli("move", memory, "memories/trips/north-gate", cwd=repo.path)
    assert r.code == 0 and "recall finds it now" in r.out, (r.out, r.err)
    moved = r.out.split()[3]  # moved OLD to NEW (PATH) ...
    assert moved != memory
    assert _top(cli, repo, "survey tablets charged") == moved

    r = cli("retire", moved, "--reason", "the gate moved", cwd=repo.path)
    assert r.code == 0 and "recall finds it now" in r.out, r.out
    assert _top(cli, repo, "survey tablets charged") != moved  # archived: left out of recall


def test_json_output_stays_one_document_and_the_line_goes_to_stderr(repo: Repo, cli: Any) -> None:
    _indexed(repo, cli)
    r = cli("remember", "Invoices are paid on the first Monday.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert json.loads(r.out)["ok"] is True
    assert "vivary remember: the semantic index is up to date" in r.err
    assert _top(cli, repo, "when are invoices paid") == json.loads(r.out)["id"]


def test_no_index_yet_nothing_is_embedded_and_the_command_says_how(repo: Repo, cli: Any) -> None:
    repo.commit("init", {**NOTES, ".vivary/memory.toml": LOCAL})
    r = cli("remember", "The server room key is at the front desk.", cwd=repo.path)
    assert r.code == 0, r.err
    assert "recall finds it after `git vivary index --yes` (there is no semantic index yet)" in r.out
    assert not any(p.name == "manifest.json" for p in (repo.path / ".git").rglob("manifest.json"))


def test_past_max_unindexed_the_write_does_not_embed_and_names_the_limit(repo: Repo, cli: Any) -> None:
    _indexed(repo, cli, LOCAL + "max_unindexed = 0\n")
    r = cli("remember", "The server room key is at the front desk.", cwd=repo.path)
    assert r.code == 0, r.err
    assert ("recall finds it after `git vivary index --yes`: 1 note(s) changed since the index was built, more "
            "than [memory] max_unindexed = 0 a write embeds itself") in r.out
    stale = cli("recall", "server room key", cwd=repo.path)
    assert stale.code != 0 and "stale" in stale.err



def test_a_dream_resolved_on_the_command_line_leaves_the_index_current(repo: Repo, cli: Any) -> None:
    _indexed(repo, cli)
    for text in ("The espresso machine in the office kitchen needs descaling every Monday.",
                 "Office coffee beans are ordered from the roaster on the first of the month.",
                 "Oat milk for the office coffee lives in the second fridge.",
                 "The kitchen espresso grinder is set to fine grind for office coffee."):
        assert cli("remember", text, cwd=repo.path).code == 0
    tasks = cli("dream", "--force", "--json", cwd=repo.path).json()["run"]["tasks"]
    assert len(tasks) == 1 and len(tasks[0]["sources"]) == 4
    r = cli("dream", "--task-id", tasks[0]["id"], "--use-heuristic", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert "vivary dream: the semantic index is up to date (5 note(s) embedded" in r.err  # the node + 4 archived
    assert _top(cli, repo, "office coffee") == r.json()["resolution"]["super_node"]
    assert cli("index", "--yes", cwd=repo.path).out.startswith("up to date")
