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


def _index_of(repo: Repo, **kw: object) -> tuple[searchindex.SearchIndex, searchindex.SearchIndex]:
    """(the workspace's query index, a fresh build from its graph and notes)."""
    ws = vivary_git.open_workspace(repo.path, **kw)  # type: ignore[arg-type]
    return ws.search_index(), searchindex.build(ws.graph(), ws.notes())


def test_an_edit_patches_the_last_index_into_what_a_build_gives(repo: Repo, monkeypatch: object) -> None:
    """After a query, an edited note's index is the last one with its documents put in place, equal to a new
    build: words added and gone (a word no note holds any more leaves the postings), a title, frontmatter, an
    outbound edge (the target's words), non-ASCII text, a note that turns unreadable (a NUL), working tree and
    commits alike."""
    import pytest

    mp = monkeypatch
    assert isinstance(mp, pytest.MonkeyPatch)
    files = {"tropo.toml": TROPO}
    for i in range(30):
        deps = f"m{(i + 1) % 30}"
        files[f"modules/m{i}.md"] = f"---\ndepends: [{deps}]\ntags: [t{i % 4}]\n---\n# Module {i}\nbody {i} graph\n"
    files["modules/odd.md"] = "# Odd\ngraph memory\n"
    repo.commit(files=files)
    first, fresh = _index_of(repo, rev="HEAD")
    assert first == fresh
    built = searchindex.build

    def no_build(*_: object) -> object:
        raise AssertionError("the index was built anew, not patched")

    edits: list[dict[str, str]] = [
        {"modules/m3.md": "---\ndepends: [m4]\ntags: [t3]\n---\n# Module 3\nbody 3 graph zebra quartz\n"},
        {"modules/m3.md": "---\ndepends: [m4]\ntags: [t3]\n---\n# Module 3\nbody 3 graph\n"},  # zebra gone
        {"modules/m7.md": "---\ndepends: [m20, m21]\ntags: [renamed]\n---\n# Seven, renamed\nCafé ÉTÉ straße\n",
         "modules/m8.md": "---\ndepends: []\n---\n# Eight\n"},
        {"modules/odd.md": "# Odd\nmemory\x00graph quartz\n"},
        {"modules/m0.md": files["modules/m0.md"], "modules/m29.md": "---\ndepends: [m0]\n---\n# 29\n\n"},
    ]
    for step, edit in enumerate(edits):
        repo.write(edit)  # the working tree first, then the same tree committed
        mp.setattr(searchindex, "build", no_build)
        got = vivary_git.open_workspace(repo.path).search_index()
        mp.setattr(searchindex, "build", built)
        ws = vivary_git.open_workspace(repo.path)
        assert got == searchindex.build(ws.graph(), ws.notes()), step
        assert ("zebra" in got.postings[3]) == (step == 0), step  # the body's words: in, then out
        repo.commit(files=edit)
        got, fresh = _index_of(repo, rev="HEAD")
        assert got == fresh
    ws = vivary_git.open_workspace(repo.path, rev="HEAD")
    assert search(ws.graph(), ws.notes(), "café", index=ws.search_index(), hidden=frozenset()).results[0].id == "m7"


def test_a_note_added_or_removed_builds_the_index_anew(repo: Repo) -> None:
    """Other documents, or another order of them: nothing to patch, and the index is a new build's."""
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": "# A\nalpha\n", "modules/c.md": "# C\ngamma\n"})
    assert _index_of(repo, rev="HEAD")[0].ids == ["a", "c"]
    repo.commit(files={"modules/b.md": "# B\nbeta\n"})
    got, fresh = _index_of(repo, rev="HEAD")
    assert got == fresh and got.ids == ["a", "b", "c"]
    repo.git("rm", "-q", "modules/a.md")
    repo.commit()
    got, fresh = _index_of(repo, rev="HEAD")
    assert got == fresh and got.ids == ["b", "c"]


def test_a_cached_index_that_disagrees_with_its_graph_is_built_anew(repo: Repo) -> None:
    """A tampered base (postings that do not hold a document's words, offsets too few or out of the text,
    sources missing, postings cut mid-pair): the patch refuses it, and the answer is a new build's, never a
    traceback or an index that says what the notes do not."""
    import msgspec

    from vivary_git.localcache import ObjectCache

    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": "# A\nalpha beta\n", "modules/b.md": "# B\nbeta\n"})
    base, _ = _index_of(repo, rev="HEAD")
    cache = ObjectCache(repo.path / ".git" / "vivary", "search", keep=4)
    pointed = cache.get("last", msgspec.msgpack.Decoder(str))
    assert pointed is not None
    last = pointed.partition("\0")[2]
    tampered = [
        searchindex.SearchIndex(base.ids, base.texts, base.offsets,
                                [{k: v for k, v in p.items() if k != "alpha"} for p in base.postings]),
        searchindex.SearchIndex(base.ids, base.texts, [o[:1] for o in base.offsets], base.postings),
        searchindex.SearchIndex(base.ids, base.texts, [[0, 10**9] for _ in base.offsets], base.postings),
        searchindex.SearchIndex(base.ids, base.texts[:2], base.offsets, base.postings),
        searchindex.SearchIndex(base.ids, base.texts, base.offsets, [{k: v[:3] for k, v in p.items()}
                                                                     for p in base.postings]),
    ]
    for step, broken in enumerate(tampered):
        cache.put(last, broken)
        cache.put("last", pointed)
        repo.commit(files={"modules/a.md": f"# A\nalpha gamma {step}\n"})
        got, fresh = _index_of(repo, rev="HEAD")
        assert got == fresh and "gamma" in got.postings[3], step
        pointed = cache.get("last", msgspec.msgpack.Decoder(str))
        assert pointed is not None
        last = pointed.partition("\0")[2]


def test_a_last_pointer_is_never_a_path_out_of_the_cache(repo: Repo, monkeypatch: object) -> None:
    """The `last` pointers of the graph and query-index caches name the entry to patch from; one that names
    anything but a cache key (`../../x`) is ignored, never turned into a file name, and the answers are a
    new build's."""
    import msgspec
    import pytest

    from vivary_git import version
    from vivary_git.localcache import ObjectCache

    mp = monkeypatch
    assert isinstance(mp, pytest.MonkeyPatch)
    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": "# A\nalpha\n", "modules/b.md": "# B\nbeta\n"})
    _index_of(repo, rev="HEAD")
    vdir = repo.path / ".git" / "vivary"
    ObjectCache(vdir, "graph").put("last", "../../../../outside")
    ObjectCache(vdir, "search", keep=4).put("last", f"{version.__version__}\0../../outside")
    asked: list[str] = []
    get = ObjectCache.get

    def recording(self: ObjectCache, key: str, decoder: msgspec.msgpack.Decoder[object]) -> object:
        asked.append(key)
        return get(self, key, decoder)

    mp.setattr(ObjectCache, "get", recording)
    repo.write({"modules/a.md": "# A\nalpha gamma\n"})
    repo.git("add", "modules/a.md")
    ws = vivary_git.open_workspace(repo.path, staged=True)
    ws.check()
    got = vivary_git.open_workspace(repo.path).search_index()
    assert asked and not [k for k in asked if "/" in k or ".." in k], asked
    ws = vivary_git.open_workspace(repo.path)
    assert got == searchindex.build(ws.graph(), ws.notes())
