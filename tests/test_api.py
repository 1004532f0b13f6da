"""The library API that every command wraps: what an agent or a script calls in Python."""

from __future__ import annotations

from conftest import TROPO, Repo

import vivary_git
from vivary_git.blast import blast
from vivary_git.models import Finding
from vivary_git.query import find, search


def test_open_workspace_check_query_blast(repo: Repo) -> None:
    repo.commit(files={
        "tropo.toml": TROPO,
        "modules/core.md": "---\nstatus: active\n---\n# Core engine\n",
        "modules/ui.md": "---\nstatus: active\ndepends: [core, nope]\n---\n# UI\n",
    })
    ws = vivary_git.open_workspace(repo.path, rev="HEAD")
    report = ws.check(strict=False)
    assert report.findings == [
        Finding("modules/ui.md", 3, "warning", "W220", "field 'depends': ref 'nope' matches no document id")
    ]
    assert (report.checked, report.clean, report.errors, report.warnings) == (2, 1, 0, 1)
    graph = ws.graph()
    assert [n.id for n in graph.nodes] == ["core", "ui"]
    assert graph.counts() == {"nodes": 2, "edges": 2, "broken": 1}
    assert [h.id for h in search(graph, ws.notes(), "engine", hidden=frozenset()).results] == ["core"]
    assert find(graph, ws.notes(), "engine", budget=50, hidden=frozenset()).estimated_tokens <= 50
    assert [i.id for i in blast(graph, "core").impacted] == ["ui"]
    assert ws.tree_id == repo.git("rev-parse", "HEAD^{tree}").strip()
