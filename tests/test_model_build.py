"""Which build of the embedding model each product path loads: decided in one place (`runtime.BUILDS`), the
graph-optimised one wherever a vector is kept or the model is shared.

The MCP server and `index --yes` loaded the optimised graph while the similarity probe of an add (`remember`, the
server's own adds) loaded the unoptimised one, whose vectors differ by ~2e-7; the probe caches memory texts'
vectors under `.git/vivary/probe-vN/` keyed by text and model only, so the two builds' vectors were mixed in one
cache, and the server held two models. The loader is wrapped here, never replaced: every model is the real one."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import Repo

from vivary_git.memory.local import embed
from vivary_git.memory.local.embed import embedder_status

pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None
    or importlib.util.find_spec("mcp") is None, reason="needs the [embed] and [mcp] extras",
)

LOCAL = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "memories/deploy-days.md": "---\ntype: memory\n---\n# Deploy days\n\nDeploys happen on Tuesdays and never on "
                               "Fridays.\n",
}
TEXTS = ["Deploys happen on Tuesdays and never on Fridays.", "The coffee machine is on the third floor.",
         "Signing keys rotate every quarter, the week after the release.", "Visitors sign in at reception."]


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, tuple[tuple[str, Any], ...]]]:
    """Every model this process loads, with the arguments it was loaded with (the real loader, wrapped)."""
    seen: list[tuple[str, tuple[tuple[str, Any], ...]]] = []
    real = embed.load_embedder

    def load(name: str = embed.DEFAULT_EMBEDDER, **kwargs: Any) -> Any:
        seen.append((name, tuple(sorted(kwargs.items()))))
        return real(name, **kwargs)

    monkeypatch.setattr(embed, "load_embedder", load)
    return seen


def _probe_files(repo: Repo) -> list[Path]:
    return sorted((repo.path / ".git" / "vivary").glob("probe-v*/*"))


def test_every_path_that_keeps_a_vector_loads_the_one_build_and_the_server_loads_one_model(
        repo: Repo, cli: Any, loads: list[tuple[str, tuple[tuple[str, Any], ...]]]) -> None:
    from vivary_git.mcp.service import MemoryService
    from vivary_git.memory.local import runtime

    repo.commit("init", {**NOTES, ".vivary/memory.toml": LOCAL})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    assert len(loads) == 1
    index_load = loads[0]

    r = cli("remember", "The coffee machine is on the third floor, next to the printer.", cwd=repo.path)
    assert r.code == 0, r.err
    assert loads[1:] == [index_load]  # the probe of a CLI add: the index's build
    cached = _probe_files(repo)
    assert len(cached) == 1

    service = MemoryService(repo.path)
    try:
        added = service.add("Visitors sign in at reception and wear a badge.")
        assert added.ok, added
        assert service.search("where do visitors go").mode == "hybrid"
        assert loads[2:] == [index_load]  # one model for the server's probe, search and write-through
        assert service._probe is not None and service._probe._get_embedder() is service._embedder
    finally:
        service.close()
    # The server's probe read and wrote the very cache the CLI's add wrote: one key, one file.
    assert _probe_files(repo) == cached

    # `recall` in its own process embeds a question and keeps nothing: the one use given the other build.
    assert cli("recall", "coffee", cwd=repo.path).code == 0
    assert loads[3:] == [(index_load[0], (("optimize", runtime.BUILDS["recall"]),))]
    assert dict(index_load[1]) == {"optimize": True}
    assert {use for use, optimised in runtime.BUILDS.items() if not optimised} == {"recall"}


def test_the_probe_cache_never_hands_one_builds_vectors_to_the_other(tmp_path: Path) -> None:
    """A cache written with one build, read by a probe holding the other (a cache an older version left, a
    test's or a benchmark's probe): each gets its own build's vectors, bit for bit."""
    from vivary_git.memory.writes.probe import Probe

    unoptimised = embed.load_embedder("minilm-l6-int8", optimize=False)
    optimised = embed.load_embedder("minilm-l6-int8")
    first = Probe(0.75, lambda: unoptimised, tmp_path)
    got_first = first.vectors(TEXTS)
    assert np.array_equal(got_first, unoptimised.embed(TEXTS))
    later = Probe(0.75, lambda: optimised, tmp_path)  # another process, the other build, the same folder
    got_later = later.vectors(TEXTS)
    assert np.array_equal(got_later, optimised.embed(TEXTS))
    assert not np.array_equal(got_first, got_later)  # the two builds do differ: the test can tell
    assert np.array_equal(Probe(0.75, lambda: unoptimised, tmp_path).vectors(TEXTS), got_first)


# Near-ties: notes that differ by a word or a mark, a note kept twice under two names (an exact tie, broken by
# id), and questions that sit between them. The query vectors of the two builds differ for every question.
TIED = {
    "notes/tuesday-a.md": "# Deploys\n\nDeploys happen on Tuesdays.\n",
    "notes/tuesday-b.md": "# Deploys\n\nDeploys happen on Tuesday.\n",
    "notes/tuesday-c.md": "# Deploys\n\nDeploys happen on Tuesdays!\n",
    "notes/tuesday-d.md": "# Deploy\n\nDeploys happen on Tuesdays.\n",
    "notes/keys-a.md": "# Keys\n\nSigning keys rotate every quarter.\n",
    "notes/keys-b.md": "# Keys\n\nSigning keys are rotated every quarter.\n",
    "notes/keys-twin.md": "# Keys\n\nSigning keys rotate every quarter.\n",
    "notes/coffee-a.md": "# Coffee\n\nThe coffee machine is on the third floor.\n",
    "notes/coffee-b.md": "# Coffee\n\nThe coffee machine is on floor three.\n",
    "notes/visitors.md": "# Visitors\n\nVisitors sign in at reception.\n",
}
QUESTIONS = ["when do deploys happen", "deploy day", "Tuesday", "deploys on tuesdays", "key rotation",
             "how often are signing keys rotated", "where is the coffee", "coffee machine floor", "reception",
             "what happens every quarter", "floor", "release"]


def test_recall_and_the_server_rank_alike_though_their_builds_differ(
        repo: Repo, cli: Any, tmp_path: Path, loads: list[tuple[str, tuple[tuple[str, Any], ...]]]) -> None:
    """`recall` in its own process embeds its questions with the unoptimised build (~0.1 s less to load: a
    fresh `recall` on 5,183 notes: 0.42 s against 0.53 s), the MCP server with the optimised one; a
    question's vectors differ by at most ~1.4e-6 (L2), so a score moves by no more than that and two notes
    would have to lie closer than that to swap. On SciFact, 8,792 questions, semantic and hybrid, gave the same
    ranked top 10 either way (docs/recall.md). Here near-duplicate notes, an exact tie and questions between
    them: the two paths must give the same ids in the same order. The vault's closest notes are further apart
    than the builds' 3e-7 a component (noise of 3e-4 a component on recall's questions swaps some, 1e-4 does
    not): the test holds the two paths' ranking to each other, SciFact the builds."""
    from vivary_git.mcp.service import MemoryService

    repo.commit("init", {**TIED, ".vivary/memory.toml": LOCAL})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    batch = tmp_path / "questions.jsonl"
    batch.write_text("".join(json.dumps({"id": str(i), "query": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    service = MemoryService(repo.path)
    try:
        for mode in ("semantic", "hybrid"):
            r = cli("recall", "--queries", str(batch), "--k", "10", "--mode", mode, cwd=repo.path)
            assert r.code == 0, r.err
            by_cli = [[h["node_id"] for h in json.loads(line)["hits"]] for line in r.out.splitlines()]
            by_server = [[h.id for h in service.search(q, top_k=10, mode=mode).results] for q in QUESTIONS]
            assert by_cli == by_server, mode
            assert all(len(ids) == 10 for ids in by_cli)
    finally:
        service.close()
    # The two paths did load the two builds, and the builds do embed these questions apart: the test can tell.
    assert [dict(kw)["optimize"] for _, kw in loads] == [True, False, True, False]
    unoptimised = embed.load_embedder("minilm-l6-int8", optimize=False).embed(QUESTIONS)
    optimised = embed.load_embedder("minilm-l6-int8").embed(QUESTIONS)
    assert all(not np.array_equal(a, b) for a, b in zip(unoptimised, optimised, strict=True))
