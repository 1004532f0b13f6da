"""graph, blast, query and find through the CLI."""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

import pytest
from conftest import Repo

TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list", uses = "ref" }
"""


def chain(repo: Repo) -> None:
    repo.commit(files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# Auth service\n\nHandles the auth tokens.\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# Billing\n\nThe auth flow matters here; auth twice.\n",
        "modules/c.md": "---\ndepends: [b]\nuses: a\n---\n# Checkout\n",
        "modules/d.md": "---\ndepends: [c, ghost]\n---\n# Dashboard\n",
        "notes/free.md": "# Free note\n\nSee [[a]].\n",
    })


def test_graph_json_shape(repo: Repo, cli: Any) -> None:
    chain(repo)
    g = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert list(g) == ["root", "nodes", "edges", "counts"]
    assert g["nodes"][0] == {"id": "a", "type": "module", "path": "modules/a.md"}
    assert g["edges"] == [
        {"from": "b", "field": "depends", "to": "a", "broken": False},
        {"from": "c", "field": "depends", "to": "b", "broken": False},
        {"from": "c", "field": "uses", "to": "a", "broken": False},
        {"from": "d", "field": "depends", "to": "c", "broken": False},
        {"from": "d", "field": "depends", "to": "ghost", "broken": True},
        {"from": "free", "field": "wikilink", "to": "a", "broken": False},
    ]
    assert g["counts"] == {"nodes": 5, "edges": 6, "broken": 1}


def test_graph_pictures_are_valid_and_escaped(repo: Repo, cli: Any) -> None:
    chain(repo)
    dot = cli("graph", "--format", "dot", "--rev", "HEAD", cwd=repo.path).out
    assert dot.startswith('digraph "ws" {') and '"d" -> "ghost" [label="depends", style=dashed' in dot
    mermaid = cli("graph", "--format", "mermaid", "--rev", "HEAD", cwd=repo.path).out
    assert mermaid.startswith("flowchart LR\n") and "ghost (missing)" in mermaid


def test_blast_nearest_distance_and_via(repo: Repo, cli: Any) -> None:
    chain(repo)
    r = cli("blast", "a", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert r["impacted"] == [
        {"id": "b", "type": "module", "distance": 1, "via": "depends"},
        {"id": "c", "type": "module", "distance": 1, "via": "uses"},
        {"id": "free", "type": None, "distance": 1, "via": "wikilink"},
        {"id": "d", "type": "module", "distance": 2, "via": "depends"},
    ]
    assert r["counts"] == {"impacted": 4} and r["depth"] is None
    shallow = cli("blast", "a", "--depth", "1", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert [i["id"] for i in shallow["impacted"]] == ["b", "c", "free"]
    missing = cli("blast", "nope", "--rev", "HEAD", cwd=repo.path)
    assert missing.code == 2 and "no node named 'nope'" in missing.err


def test_blast_between_two_trees(repo: Repo, cli: Any) -> None:
    chain(repo)
    repo.git("tag", "base")
    repo.git("rm", "-q", "modules/a.md")
    repo.commit(files={"modules/b.md": "---\ndepends: [a]\n---\n# Billing v2\n"})
    r = cli("blast", "--base", "base", "--head", "HEAD", "--json", cwd=repo.path).json()
    assert [(c["id"], c["change"]) for c in r["changed"]] == [("a", "removed"), ("b", "modified")]
    assert {(e["from"], e["to"]) for e in r["broken_edges"]} == {("b", "a"), ("c", "a"), ("free", "a")}
    assert [(i["id"], i["distance"]) for i in r["impacted"]] == [("c", 1), ("free", 1), ("d", 2)]


def test_query_scores_and_explains(repo: Repo, cli: Any) -> None:
    chain(repo)
    r = cli("query", "auth", "--json", "--explain", "--rev", "HEAD", cwd=repo.path).json()
    assert r["query"] == "auth" and r["mode"] == "text" and r["k"] == 10
    top = r["results"][0]
    # a: id+title phrase 120 + one hit 40; body (its H1 included) phrase 40 + two hits 2x10.
    assert (top["id"], top["score"], top["reasons"]) == ("a", 220, ["title/id match", "body match"])
    b = next(x for x in r["results"] if x["id"] == "b")
    assert b["score"] == 40 + 2 * 10
    filtered = cli("query", "auth", "--json", "--edge", "depends:a", "--rev", "HEAD", cwd=repo.path).json()
    assert [x["id"] for x in filtered["results"]] == ["b"]
    assert filtered["results"][0]["edges"] == [{"field": "depends", "to": "a"}]
    assert cli("query", "auth", "--type", "nope", "--json", "--rev", "HEAD", cwd=repo.path).json()["results"] == []
    paths = cli("query", "note", "--path", "notes/*", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert [x["id"] for x in paths["results"]] == ["free"]


@pytest.mark.parametrize("spec", ["", ":", " : "])
def test_an_edge_filter_naming_neither_field_nor_target_is_a_usage_error(repo: Repo, cli: Any, spec: str) -> None:
    """`--edge ''` or `--edge ':'` names no field and no target: rather than quietly keep every node with any edge,
    it is exit 2 naming the option and its form, in each command that takes it. `FIELD:` and `:TARGET` still work."""
    chain(repo)
    for command in ("query", "find"):
        r = cli(command, "auth", "--edge", spec, "--json", "--rev", "HEAD", cwd=repo.path)
        assert r.code == 2 and r.out == "", (command, r.out)
        assert f"argument --edge: expected FIELD, FIELD:TARGET or :TARGET, got {spec!r}" in r.err, r.err
    for ok, ids in (("depends:", {"b", "c", "d"}), (":a", {"b", "c", "free"})):
        r = cli("query", "auth", "--edge", ok, "--json", "--rev", "HEAD", cwd=repo.path)
        assert r.code == 0 and {x["id"] for x in r.json()["results"]} == ids, (ok, r.err)


def test_untyped_is_spelt_either_way_and_an_unknown_type_is_named(repo: Repo, cli: Any) -> None:
    """`graph --type untyped` and `query --type ''` (each command's own spelling) select the same notes in all three
    commands; a type no note has and the config does not declare selects nothing, and stderr says which types
    there are (a typo would otherwise read as "no results")."""
    chain(repo)
    for spelling in ("untyped", ""):
        g = cli("graph", "--json", "--type", spelling, "--rev", "HEAD", cwd=repo.path)
        assert [n["id"] for n in g.json()["nodes"]] == ["free"] and g.err == "", g.err
        for command in ("query", "find"):
            r = cli(command, "note", "--type", spelling, "--json", "--rev", "HEAD", cwd=repo.path)
            assert [x["id"] for x in r.json()["results"]] == ["free"] and r.err == "", (command, r.err)
    for command in ("graph", "query", "find"):
        r = cli(command, *(["auth"] if command != "graph" else []), "--type", "modul", "--rev", "HEAD", cwd=repo.path)
        assert r.code == 0 and "vivary: no type 'modul' here (types: " in r.err and "module" in r.err, r.err


@pytest.mark.parametrize(("folder", "glob"), [("NFD", "NFC"), ("NFC", "NFD")])
def test_a_path_glob_matches_a_name_in_either_unicode_form(repo: Repo, cli: Any, folder: str, glob: str) -> None:
    """`--path 'Дневник/*'` typed on a keyboard is composed (NFC); the folder written on macOS is decomposed
    (NFD: `й` is `и` + U+0306). The glob and the paths are matched in one form, as links and private_paths are."""
    import unicodedata

    name = unicodedata.normalize(folder, "Мой дневник/Запись.md")
    repo.commit(files={name: "# Запись\n\nhoney harvest\n", "other.md": "# Other\n\nhoney\n"})
    pattern = unicodedata.normalize(glob, "Мой дневник/*")
    got = cli("query", "honey", "--path", pattern, "--json", "--rev", "HEAD", cwd=repo.path)
    assert got.code == 0, got.err
    assert [unicodedata.normalize("NFC", x["path"]) for x in got.json()["results"]] == ["Мой дневник/Запись.md"]


def test_find_trims_in_the_documented_order(repo: Repo, cli: Any) -> None:
    """docs/find.md: halve snippets (drop one at 80 characters or fewer), then drop edges, then trailing
    results, then shorten reasons; the first result is kept even when it alone is over the budget."""
    chain(repo)
    repo.commit(files={"modules/a.md": "---\n---\n# Auth service\n\n"
                       + "The auth service issues and checks tokens for every request. " * 6})

    def find(budget: int) -> tuple[int, list[tuple[str, str, int, bool]]]:
        doc = cli("find", "auth", "--budget", str(budget), "--json", "--rev", "HEAD", cwd=repo.path).json()
        assert doc["budget"] == budget
        # the estimate is the documented one: ceil(len(sorted-key JSON of the results) / 4)
        text = json.dumps(doc["results"], ensure_ascii=False, sort_keys=True)
        assert doc["estimated_tokens"] == math.ceil(len(text) / 4)
        return doc["estimated_tokens"], [(r["id"], r["reason"], len(r.get("snippet") or ""), "edges" in r)
                                         for r in doc["results"]]

    both = "title/id match; body match"
    assert find(1200) == (115, [("a", both, 163, False), ("b", "body match", 49, True)])
    assert find(100) == (79, [("a", both, 81, False), ("b", "body match", 0, True)])  # halved; b's dropped
    assert find(70) == (69, [("a", both, 40, False), ("b", "body match", 0, True)])  # halved again
    assert find(60) == (55, [("a", both, 0, False), ("b", "body match", 0, True)])  # no snippets left
    assert find(50) == (44, [("a", both, 0, False), ("b", "body match", 0, False)])  # then edges
    assert find(40) == (24, [("a", both, 0, False)])  # then trailing results
    assert find(20) == (21, [("a", "title/id match", 0, False)])  # then reasons; the first result stays
    text = cli("find", "auth", "--budget", "20", "--rev", "HEAD", cwd=repo.path)
    assert "~21 token(s), over the budget of 20: the first result is always kept" in text.out


def test_empty_query_is_a_usage_error(repo: Repo, cli: Any) -> None:
    chain(repo)
    r = cli("query", " ", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "provide a search query" not in r.err and "query needs TEXT to look for" in r.err
    # --type and --path narrow a search and rank nothing alone (every node would score 0, which is dropped)
    for args in ((), ("--type", "module"), ("--path", "modules/*")):
        r = cli("query", *args, "--rev", "HEAD", cwd=repo.path)
        assert r.code == 2 and "or an --edge FIELD[:TARGET] filter to list the nodes with that edge" in r.err, args
        assert "Traceback" not in r.err and r.err.count("\n") == 1, r.err


def test_query_with_an_edge_filter_and_no_text_lists_the_nodes_with_that_edge(repo: Repo, cli: Any) -> None:
    """"Everything that links to a": no words to invent. Every node the filters pass scores the edge bonus, so they
    come by path, then ID, as the published tropo answers `query "" --edge ...`."""
    chain(repo)
    got = cli("query", "--edge", ":a", "--json", "--rev", "HEAD", cwd=repo.path)
    assert got.code == 0, got.err
    doc = got.json()
    assert doc["query"] == "" and doc["filters"]["edge"] == [":a"]
    assert [(h["id"], h["score"]) for h in doc["results"]] == [("b", 20), ("c", 20), ("free", 20)]
    assert [h["id"] for h in cli("query", "--edge", "depends", "--type", "module", "--json", "--rev", "HEAD",
                                 cwd=repo.path).json()["results"]] == ["b", "c", "d"]
    both = cli("query", "--edge", "depends:b", "--edge", "uses:a", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert [(h["id"], h["score"]) for h in both["results"]] == [("c", 40)]
    text = cli("query", "--edge", "depends:a", "--rev", "HEAD", cwd=repo.path)
    assert text.out.splitlines()[:2] == ["vivary query: 1 result(s) with --edge depends:a",
                                         " 1. [module] b - modules/b.md  (score 20)"], text.out
    none = cli("query", "--edge", "uses:b", "--rev", "HEAD", cwd=repo.path)
    assert none.code == 0 and none.out == "vivary query: no results with --edge uses:b\n", none.out
    semantic = cli("query", "--edge", ":a", "--mode", "semantic", "--rev", "HEAD", cwd=repo.path)
    assert semantic.code == 2 and "--mode semantic needs TEXT" in semantic.err, semantic.err


def test_search_index_answers_exactly_like_the_direct_scan(repo: Repo) -> None:
    """The cached per-tree index is an optimisation only: every query, filter and tie gives the
    same results as scoring each node directly."""
    import random

    import vivary_git
    from vivary_git import searchindex
    from vivary_git.query import find, search

    rng = random.Random(5)
    words = ["auth", "graph", "memory", "café", "naïve", "token_id", "x-ray", "2026", "the", "of", "a", "release",
             "gate", "review"]
    files = {"tropo.toml": TROPO}
    for i in range(40):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
        deps = ", ".join(f"m{rng.randrange(40)}" for _ in range(rng.randint(0, 3)))
        files[f"modules/m{i}.md"] = f"---\ndepends: [{deps}]\ntags: [{rng.choice(words)}]\n---\n# {body[:20]}\n{body}\n"
    files["notes/[[x]].md"] = "[[m1]] auth auth\n"
    repo.commit(files=files)
    ws = vivary_git.open_workspace(repo.path, rev="HEAD")
    graph, notes = ws.graph(), ws.notes()
    index = searchindex.build(graph, notes)
    queries = ["auth", "graph memory", "the", "of the", "café", "naïve auth", "token", "token_id", "x-ray", "2026",
               "m1", "depends m2", "modules/m", "AUTH Graph", "release gate review", "zzz", "a"]
    # Hidden (private) nodes: nodes with an edge to one are scored without the index; still the same answer.
    for q, hidden in itertools.product(queries, (frozenset(), frozenset({"m1", "m7", "m22"}))):
        for kw in ({}, {"k": 3}, {"edges": ["depends"]}, {"types": ["module"], "explain": True},
                   {"paths": ["modules/m1*"], "snippet": 30}, {"edges": [":m1"], "k": 50}):
            indexed = search(graph, notes, q, index=index, hidden=hidden, **kw)  # type: ignore[arg-type]
            assert indexed == search(graph, notes, q, hidden=hidden, **kw), (q, kw)  # type: ignore[arg-type]
            assert not {h.id for h in indexed.results} & hidden
        assert find(graph, notes, q, index=index, budget=80, hidden=hidden) == find(graph, notes, q, budget=80,
                                                                                      hidden=hidden)
    cached = vivary_git.open_workspace(repo.path, rev="HEAD").search_index()
    assert cached == vivary_git.open_workspace(repo.path, rev="HEAD").search_index() == index


def test_a_parent_ignoring_sigchld_changes_nothing(repo: Repo) -> None:
    """A process that ignores SIGCHLD passes that on through exec; then the system would reap our git
    subprocesses and every exit code would read 0. A conflicted index must still be refused by
    `check --staged` (git write-tree fails), and a clean check must still answer."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo.commit(files={"tropo.toml": TROPO, "modules/a.md": "---\nstatus: one\n---\n# A\n"})
    repo.git("checkout", "-q", "-b", "other")
    repo.commit(files={"modules/a.md": "---\nstatus: two\n---\n# A\n"})
    repo.git("checkout", "-q", "-")
    repo.commit(files={"modules/a.md": "---\nstatus: three\n---\n# A\n"})
    subprocess.run(["git", "merge", "-q", "other"], cwd=repo.path, capture_output=True, check=False)
    # git-vivary itself, not `git vivary`: Git's own dispatcher cannot wait for us in that state.
    ignoring = ("import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
                "os.execvp('git-vivary', ['git-vivary', *sys.argv[1:]])")
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", ignoring, *args], cwd=repo.path, env=env,
                              capture_output=True, text=True, check=False)

    staged = run("check", "--staged")
    assert staged.returncode == 2 and "unmerged" in staged.stderr, staged.stderr
    plain = subprocess.run(["git-vivary", "check", "--rev", "HEAD"], cwd=repo.path, env=env, capture_output=True,
                           text=True, check=False)
    got = run("check", "--rev", "HEAD")
    assert (got.returncode, got.stdout) == (plain.returncode, plain.stdout)
