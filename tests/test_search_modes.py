"""Memory search's modes and scopes: filters before ranking (k hits whenever k notes pass), MCP `search` in every
mode (`text` is BM25 when the semantic index is fresh), the signals that nudge hybrid recall, and host guidance
files left out of the graph, search and recall unless `.vivary/graph.toml` includes them."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from vivary_git.memory.local.embed import embedder_status

needs_index = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\n'
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'


def _far_vault(repo: Any) -> None:
    """80 notes about the deploy pipeline, and 12 in `far/` that mention it once in a long text about
    something else: every far note is far down the whole index's ranking, whatever the mode."""
    files = {"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY}
    for i in range(80):
        files[f"near/n{i:02d}.md"] = (f"# Deploy pipeline {i}\n\nThe deploy pipeline runs the deploy pipeline "
                                      f"checks before each deploy (step {i}).\n")
    for i in range(12):
        files[f"far/f{i:02d}.md"] = (f"# Garden diary {i}\n\nTomatoes, basil and beans grow along the fence; the "
                                     f"watering schedule is written on the shed door. We water at dawn, weed on "
                                     f"Sundays and compost the rest. Someone mentioned a deploy once ({i}).\n")
    repo.commit("init", files)


@needs_index
def test_a_filtered_search_returns_k_hits_whenever_k_pass(repo: Any, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                          ) -> None:
    from vivary_git import open_workspace
    from vivary_git.mcp.service import MemoryService
    from vivary_git.memory.local import files, recall
    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.provider import RecallFilters

    _far_vault(repo)
    assert cli("index", "--yes", cwd=repo.path).code == 0
    for mode in ("hybrid", "semantic"):
        got = cli("recall", "deploy pipeline", "--path", "far/*", "--k", "10", "--mode", mode, "--json",
                  cwd=repo.path)
        assert got.code == 0, got.err
        assert len(got.json()) == 10 and all(h["path"].startswith("far/") for h in got.json()), mode
    service = MemoryService(repo.path)
    try:
        for mode in ("text", "semantic", "hybrid", "auto"):
            ans = service.search("deploy pipeline", top_k=10, path=["far/*"], mode=mode, budget=0)
            assert ans.mode == ("hybrid" if mode == "auto" else mode), ans.mode_reason
            assert len(ans.results) == 10 and all(h.path.startswith("far/") for h in ans.results), mode
        # All 12 pass: a top_k of 50 returns the 12, no more.
        assert len(service.search("deploy pipeline", top_k=50, path=["far/*"], mode="hybrid").results) == 12
    finally:
        service.close()
    # A scope larger than an exact scan takes: the ANN graph is asked deeper until enough of it comes back.
    monkeypatch.setattr(recall, "EXACT_SCAN", 0)
    assert files.EXACT_SCAN > 0
    session = LocalMemory(open_workspace(repo.path)).open()
    for mode in ("semantic", "hybrid"):
        hits = session.recall("deploy pipeline", k=10, filters=RecallFilters(paths=["far/*"]), mode=mode)
        assert len(hits) == 10 and all(h.path.startswith("far/") for h in hits), mode
    # Left-out notes are left out before ranking too.
    best = [h.node_id for h in session.recall("deploy pipeline", k=5, mode="hybrid")]
    again = session.recall("deploy pipeline", k=5, mode="hybrid", exclude=best)
    assert len(again) == 5 and not {h.node_id for h in again} & set(best)
    # A tree the index was not built from (a far note removed since) is answered from its notes' vectors: the
    # scope is ranked the same way.
    monkeypatch.undo()
    repo.git("rm", "-q", "far/f00.md")
    repo.commit("one far note less")
    for mode in ("semantic", "hybrid"):
        got = cli("recall", "deploy pipeline", "--path", "far/*", "--k", "11", "--mode", mode, "--json",
                  cwd=repo.path)
        assert got.code == 0, got.err
        assert sorted(h["path"] for h in got.json()) == [f"far/f{i:02d}.md" for i in range(1, 12)], mode


@needs_index
def test_mcp_search_has_every_mode_and_text_is_bm25(repo: Any, cli: Any) -> None:
    from vivary_git.mcp.service import MemoryService

    # "did" and "her" are everywhere in the first note: the contract's scoring counts them as much as "sister";
    # BM25 drops them (stopwords) and weighs the rare words.
    repo.commit("init", {
        "tropo.toml": TROPO, ".vivary/memory.toml": MEMORY,
        "talk/chatter.md": "# Chatter\n\nDid her friend call? Did her brother call? Her mother did, her aunt did. "
                           "Did she? Her cousin did, and her neighbour did too.\n",
        "talk/sister.md": "# Weekend\n\nMy sister painted a lake at sunrise last weekend.\n",
        "talk/other.md": "# Groceries\n\nWe bought apples, bread and cheese.\n",
    })
    service = MemoryService(repo.path)
    try:
        before = service.search("What did her sister paint?", mode="text")
        assert before.mode == "text" and "contract" in before.mode_reason  # no index yet: the contract's scoring
        assert before.results[0].id == "chatter"
    finally:
        service.close()
    assert cli("index", "--yes", cwd=repo.path).code == 0
    service = MemoryService(repo.path)
    try:
        text = service.search("What did her sister paint?", mode="text")
        assert text.mode == "text" and "BM25" in text.mode_reason, text.mode_reason
        assert text.results[0].id == "sister" and text.results[0].reason.startswith("keyword match (BM25")
        sem = service.search("a picture of a lake", mode="semantic")
        assert sem.mode == "semantic" and sem.results[0].reason.startswith("semantic match (cosine")
        assert sem.results[0].id == "sister"
        with pytest.raises(Exception, match="auto, text, semantic or hybrid"):
            service.search("lake", mode="vector")
    finally:
        service.close()


@needs_index
def test_mcp_server_accepts_the_semantic_mode(repo: Any) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import asyncio
    import os
    import subprocess
    import sys

    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    repo.commit("init", {"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY,
                         "notes/lake.md": "# Lake\n\nMy sister painted a lake at sunrise.\n"})
    # The CLI in a process of its own: the `cli` fixture's captured stderr has no file number to hand a server.
    subprocess.run([sys.executable, "-m", "vivary_git.main", "index", "--yes"], cwd=repo.path, check=True,
                   capture_output=True)
    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"],
                                   cwd=str(repo.path), env=dict(os.environ))

    async def ask() -> Any:
        async with Client(params) as client:
            return await client.call_tool("search", {"query": "a painting of water", "mode": "semantic"})

    got = asyncio.run(ask())
    assert not got.is_error, got.content
    assert got.structured_content["mode"] == "semantic"
    assert got.structured_content["results"][0]["id"] == "lake"


def test_signals_of_field_values_dates_and_sequences() -> None:
    import datetime as dt

    from vivary_git.memory.local.signals import Signals, month_years

    paths = ["talk/call-D1-1.md", "talk/call-D1-2.md", "talk/call-D1-3.md", "abstracts/4983.md",
             "abstracts/4984.md", "journal/2023-05-08.md", "journal/2023-05-09.md", "talk/call-D2-1.md"]
    fields: list[dict[str, Any]] = [
        {"speaker": "Caroline", "date": dt.date(2023, 5, 8)}, {"speaker": "Melanie", "date": "2023-05-08"},
        {"speaker": "Caroline", "tags": ["Pottery Class", "it"]}, {}, {}, {"status": "done"},
        {"status": "approved", "tags": ["hook", "INC-42"], "owner": "Ада"}, {}]
    sig = Signals(paths, [p.removesuffix(".md") for p in paths], fields)
    assert sig.named("What did Caroline paint?") == [("speaker", frozenset({0, 2}))]
    assert sig.named("when was the pottery class") == [("tags", frozenset({2}))]
    assert sig.named("pottery") == []  # a value is named whole
    assert sig.named("is it done") == []  # values of only common words name nothing
    # A value all in lower case is the vault's vocabulary (a status, a tag): a query using the word names
    # nothing. Names and ids (a capital letter, a digit) are named, whatever the query's case.
    assert sig.named("Invoices are approved by Marta") == [] and sig.named("the pump on the hook") == []
    assert sig.named("is inc-42 fixed") == [("tags", frozenset({6}))]
    assert sig.named("what did ада write") == [("owner", frozenset({6}))]
    assert sig.dated("What happened in May 2023?") == {0, 1}
    assert sig.dated("what may happen in 2024") == set()
    assert month_years("in June, 2022 or 2023") == {(6, 2022), (6, 2023)}
    # A sequence: a word, a separator and a number; not bare numbers, not dates, not across a prefix.
    assert sig.neighbours(1) == {0, 2} and sig.neighbours(2) == {1}
    assert sig.neighbours(3) == set() and sig.neighbours(5) == set() and sig.neighbours(7) == set()
    linked = Signals(["a.md", "b.md"], ["a", "b"], [{"next": "b", "owner": "Ada"}, {}], [("a", "next", "b")])
    assert linked.neighbours(0) == {1} and linked.neighbours(1) == {0}
    assert linked.named("what did Ada write before b") == [("owner", frozenset({0}))]  # a reference is no value


@needs_index
def test_a_note_first_in_both_lists_stays_first_and_only_names_are_named(repo: Any, cli: Any,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A memory's own sentence comes first in hybrid and semantic search, ahead of the many notes whose
    status or tag is one word of it; a field value still puts the named speaker's turn first in a near tie."""
    from vivary_git import open_workspace
    from vivary_git.mcp.service import MemoryService
    from vivary_git.memory.local import recall
    from vivary_git.memory.local.provider import LocalMemory

    files = {"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY,
             "memories/invoices.md": "Invoices are approved by Marta in finance.\n",
             "memories/pump.md": "Mateo keeps the bike pump on the garage hook.\n",
             "talk/c1.md": "---\nspeaker: Caroline\n---\nI painted a sunrise over the lake last week.\n",
             "talk/c2.md": "---\nspeaker: Caroline\n---\nThanks! The support group was great yesterday.\n",
             "talk/m1.md": "---\nspeaker: Melanie\n---\nCaroline, that is lovely! I painted too.\n",
             "talk/m2.md": "---\nspeaker: Melanie\n---\nI painted my kids playing in the garden.\n"}
    for i in range(30):
        files[f"gates/g{i:02d}.md"] = (f"---\nstatus: approved\ntags: [hook, review]\n---\n# Gate {i}\n\nThe "
                                       f"release gate {i} was approved after review; the hook runs before merge.\n")
        files[f"checks/c{i:02d}.md"] = (f"---\nstate: Approved\n---\n# Check {i}\n\nCheck {i} of the budget was "
                                        f"approved by the board.\n")
    repo.commit("init", files)
    assert cli("index", "--yes", cwd=repo.path).code == 0
    service = MemoryService(repo.path)
    try:
        for text, own in (("Invoices are approved by Marta in finance.", "invoices"),
                          ("Mateo keeps the bike pump on the garage hook.", "pump")):
            for mode in ("hybrid", "semantic"):
                got = service.search(text, top_k=10, mode=mode, budget=0).results
                assert got[0].id == own, (mode, [(h.id, h.reason) for h in got])
            reasons = [h.reason for h in service.search(text, top_k=40, mode="hybrid", budget=0).results]
            # `status: approved`, `tags: [hook, review]`: words, not names.
            assert not [r for r in reasons if "names its status" in r or "names its tags" in r], reasons
        # `state: Approved` is written as a name, so counted, but cannot pass the note both lists put first.
        got = service.search("Invoices are approved by Marta in finance.", top_k=3, mode="hybrid", budget=0)
        assert got.results[0].reason.endswith("first in both lists"), got.results[0].reason
        assert all("the query names its state" in h.reason for h in got.results[1:])
    finally:
        service.close()
    # The named speaker's turn, second in the fused lists, comes first; without the nudge it would not.
    session = LocalMemory(open_workspace(repo.path)).open()
    hits = session.recall("What did Caroline paint?", k=3, mode="hybrid")
    assert hits[0].node_id == "c1" and hits[0].reason.endswith("the query names its speaker"), hits
    monkeypatch.setattr(recall, "FIELD_NUDGE", 0.0)
    assert session.recall("What did Caroline paint?", k=1, mode="hybrid")[0].node_id == "m1"


GUIDANCE = {
    "AGENTS.md": "# Agents\n\nWhen do we deploy? Read notes/deploy first; deploy with care.\n",
    "CLAUDE.md": "@AGENTS.md\n\nWhen do we deploy: ask.\n",
    "GEMINI.md": "# Gemini\n\nWhen do we deploy: ask.\n",
    "sub/AGENTS.md": "# Sub agents\n\nWhen do we deploy here.\n",
    ".github/copilot-instructions.md": "# Copilot\n\nWhen do we deploy.\n",
}


@needs_index
@pytest.mark.parametrize("included", [False, True])
def test_guidance_files_are_not_notes_unless_included(repo: Any, cli: Any, included: bool) -> None:
    from vivary_git.mcp.service import MemoryService

    graph_toml = 'include = [".github"]\n' + ("include_guidance = true\n" if included else "")
    repo.commit("init", {
        ".vivary/memory.toml": MEMORY, ".vivary/graph.toml": graph_toml, **GUIDANCE,
        "notes/deploy.md": "# Deploy\n\nWe deploy on Tuesdays. The agents' rules: [[AGENTS]].\n",
    })
    guidance = {p.removesuffix(".md") for p in GUIDANCE}
    nodes = {n["id"] for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]}
    assert (guidance <= nodes) if included else not (guidance & nodes), nodes
    check = cli("check", "--json", cwd=repo.path)
    assert "W221" not in check.out  # a link to a guidance file still resolves: the file is there
    found = {h["id"] for h in cli("query", "when do we deploy", "--json", cwd=repo.path).json()["results"]}
    assert bool(found & guidance) == included
    assert cli("index", "--yes", cwd=repo.path).code == 0
    recalled = {h["node_id"] for h in cli("recall", "when do we deploy", "--k", "10", "--json",
                                          cwd=repo.path).json()}
    assert bool(recalled & guidance) == included
    service = MemoryService(repo.path)
    try:
        for mode in ("text", "hybrid"):
            hits = {h.id for h in service.search("when do we deploy", top_k=10, mode=mode).results}
            assert bool(hits & guidance) == included, mode
            assert "notes/deploy" in hits
    finally:
        service.close()
