"""`searchindex.Ranker`: one ranker asked many questions (as the MCP server asks it) answers each
exactly as scoring every node directly does: scores, ties, filters, repeated terms, any k."""

from __future__ import annotations

import random

from conftest import Repo

import vivary_git
from vivary_git import searchindex
from vivary_git.query import search

TROPO = ('version = 1\n[types.module]\nfolder = "modules"\n[types.module.optional]\ndepends = "ref-list"\n'
         'tags = "string-list"\n')


def test_one_ranker_answers_every_question_like_the_direct_scan(repo: Repo) -> None:
    rng = random.Random(11)
    words = ["auth", "graph", "memory", "graphs", "paragraph", "café", "the", "release", "gate", "2026"]
    files = {"tropo.toml": TROPO}
    for i in range(60):
        # Many notes say exactly the same: equal scores, ordered by path then id.
        body = "graph memory auth" if i % 3 == 0 else " ".join(rng.choice(words) for _ in range(rng.randint(0, 25)))
        deps = ", ".join(f"m{rng.randrange(60)}" for _ in range(rng.randint(0, 2)))
        files[f"modules/m{i}.md"] = f"---\ndepends: [{deps}]\ntags: [{rng.choice(words)}]\n---\n# {body[:15]}\n{body}\n"
    files["z/odd\x01name.md"] = "graph\x00memory graph\n"  # a NUL in a body: documents are cut by offset
    repo.commit(files=files)
    ws = vivary_git.open_workspace(repo.path, rev="HEAD")
    graph, notes = ws.graph(), ws.notes()
    index = searchindex.build(graph, notes)
    ranker = searchindex.Ranker(index, graph)
    queries = ["graph", "graph memory", "graph graph memory", "auth", "the", "paragraph", "café auth", "zzz",
               "m1", "depends m2", "modules", "release gate 2026", "GRAPH",
               # phrases of three words and more, whole or cut mid-word at either end, found in titles,
               # bodies and frontmatter, and not
               "graph memory auth", "aph memory au", "# graph memory auth", "memory auth\ngraph",
               "depends: m1, m", "the graph the", "graph zzz memory", "café the release gate 2026"]
    # Hidden nodes (as private notes are) take places in the index's best k: the ranker is asked for
    # more until the public best k are exact, and edges to hidden nodes no longer score.
    hidden_sets = [frozenset(), frozenset(f"m{i}" for i in range(0, 60, 3)),
                   frozenset(n.id for n in graph.nodes if n.id != "m59")]
    for _ in range(3):  # asked again: the kept per-term scores give the same answers
        for q in queries:
            for kw in ({}, {"k": 1}, {"k": 7}, {"k": 100}, {"types": ["module"]},
                       {"edges": ["depends"], "k": 4}, {"paths": ["modules/m1*"]}, {"edges": [":m1"], "k": 50}):
                for hidden in hidden_sets:
                    got = search(graph, notes, q, index=index, ranker=ranker, explain=True, hidden=hidden,
                                 **kw)  # type: ignore[arg-type]
                    want = search(graph, notes, q, explain=True, hidden=hidden, **kw)  # type: ignore[arg-type]
                    assert got == want, (q, kw, len(hidden))
                    assert not {h.id for h in got.results} & hidden
    assert hidden_sets[1] <= {n.id for n in graph.nodes}
