"""Two notes with one document id (E130): the graph keeps the first path's, so the index holds one of them.
`git vivary index` says which note it left out and why, in text and JSON, instead of dropping it silently.
Real model, real Git, through the CLI."""

from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest
from test_memory_local import MEMORY, TROPO

from vivary_git.memory.local.embed import embedder_status

pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

NOTES = {
    "notes/plan.md": "# Plan\n\nWe rotate the signing keys every ninety days.\n",
    "projects/plan.md": "# Garden plan\n\nTomatoes need six hours of sun and deep watering.\n",
    "notes/bread.md": "# Sourdough\n\nFeed the starter, fold the dough, bake hot.\n",
}
WHY = "2 notes share the id 'plan': notes/plan.md, projects/plan.md; give each its own id (E130)"


@pytest.fixture
def ws(repo: Any) -> Any:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, **NOTES})
    repo.git("add", "-A")
    repo.git("commit", "-qm", "init")
    return repo


def test_index_names_the_note_a_duplicate_id_leaves_out(ws: Any, cli: Any) -> None:
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    report = r.json()
    assert report["indexed"] == 2  # notes/bread.md and notes/plan.md, the first path keeping 'plan'
    assert report["left_out"] == [{"path": "projects/plan.md", "id": "plan", "code": "E130", "reason": WHY}]

    # recall cannot find the left-out note's text: the report is where the user learns why.
    hits = cli("recall", "tomatoes sun watering", "--json", cwd=ws.path)
    assert hits.code == 0, hits.err
    assert "projects/plan.md" not in hits.out

    text = cli("index", "--yes", cwd=ws.path)
    assert text.code == 0 and "Traceback" not in text.err
    assert f"left out     projects/plan.md: {WHY}" in text.out

    dry = cli("index", "--dry-run", "--json", cwd=ws.path)
    assert dry.code == 0 and dry.json()["left_out"] == report["left_out"]
    dry_text = cli("index", "--dry-run", cwd=ws.path)
    assert f"left out     projects/plan.md: {WHY}" in dry_text.out


def test_a_note_left_out_is_no_longer_named_once_it_has_its_own_id(ws: Any, cli: Any) -> None:
    ws.git("mv", "projects/plan.md", "projects/garden-plan.md")
    ws.git("commit", "-qm", "own id")
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert r.json()["left_out"] == [] and r.json()["indexed"] == 3
    hits = cli("recall", "tomatoes sun watering", "--json", cwd=ws.path)
    assert hits.code == 0 and "projects/garden-plan.md" in hits.out


def test_a_private_note_owning_the_id_is_counted_never_named(ws: Any, cli: Any) -> None:
    # drafts/ is private (MEMORY) and walks first, so its note owns 'plan': both public notes are left out.
    ws.write({"drafts/plan.md": "# Draft plan\n\nzqxdraft a private draft with the same id.\n"})
    ws.git("add", "-A")
    ws.git("commit", "-qm", "draft")
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    why = ("3 notes share the id 'plan': notes/plan.md, projects/plan.md and 1 private note(s); "
           "give each its own id (E130)")
    assert r.json()["indexed"] == 1 and r.json()["private"] == 1
    assert r.json()["left_out"] == [{"path": p, "id": "plan", "code": "E130", "reason": why}
                                    for p in ("notes/plan.md", "projects/plan.md")]
    assert "drafts" not in r.out and "zqxdraft" not in r.out


def test_doctor_names_the_note_the_index_cannot_hold(ws: Any, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    r = cli("doctor", "--json", cwd=ws.path)
    report = json.loads(r.out)
    assert report["memory"]["status"] == "healthy", report["memory"]
    warned = [p for p in report["problems"] if p["area"] == "memory"]
    assert warned == [{"area": "memory", "level": "warning",
                       "message": f"1 public note(s) cannot be in the index: projects/plan.md: {WHY}",
                       "fix": "give each note its own id (`git vivary check` lists every E130); then "
                              "`git vivary index --yes`"}]
    # The exit code is the graph's E130 error's, as before: the memory warning adds none.
    assert r.code == 1 and any(p["area"] == "graph" and p["level"] == "error" for p in report["problems"])
    text = cli("doctor", cwd=ws.path)
    assert "projects/plan.md" in text.out and "Traceback" not in text.err
