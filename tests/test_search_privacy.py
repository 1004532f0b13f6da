"""Search answers (`find`, `query`) never show a private note: not its text, title, path or ID, not as a
result, a snippet, an edge or a score, whatever the workspace layout (top level, a subfolder with its own
tropo.toml, `--root`) and the tree read (working tree, `--staged`, `--rev`). The privacy decision is the
one every consumer makes (docs/privacy.md); `check`, `graph` and `blast` still show the owner every node.

Canary strings are planted in every kind of private file (tests/test_record.py's `_private_files`),
including a tracked file Git ignores (`git add -f`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, write
from test_record import PRIVATE, _private_files

from vivary_git.hidden import hidden_ids
from vivary_git.workspace import open_workspace

QUERIES = ("PRIVATE CANARY", "user title memory", "password token plan", "status link")


def _layout(repo: Repo, layout: str) -> tuple[Path, list[str]]:
    """The canary workspace in this layout; (the folder to run from, the extra arguments)."""
    at = "" if layout == "top" else "vault/"
    files = _private_files(at)
    if layout == "root":
        del files["vault/tropo.toml"]
        files[".vivary/memory.toml"] = '[memory.privacy]\nprivate_paths = ["vault/elsewhere/**"]\n'
        files["vault/elsewhere/e.md"] = "# PRIVATE-CANARY-enclosing-title\n\nPUBLIC-MARKER? no: [[plan]]\n"
        files["tropo.toml"] = TROPO
    files[".gitignore"] = "drafts/\nUSER.md\n"
    repo.write(files)
    repo.git("add", "-A")
    repo.git("add", "-f", f"{at}drafts/plan.md", f"{at}USER.md")  # ignored, yet tracked: still private
    repo.git("commit", "-q", "-m", "canaries")
    cwd = repo.path / "vault" if layout == "subfolder" else repo.path
    return cwd, (["--root", "vault"] if layout == "root" else [])


def _assert_clean(text: str) -> None:
    assert "PRIVATE-CANARY" not in text
    assert "private-canary" not in text.lower()
    for private in PRIVATE:
        assert private not in text, private


@pytest.mark.parametrize("source", [[], ["--staged"], ["--rev", "HEAD"]], ids=["worktree", "staged", "rev"])
@pytest.mark.parametrize("layout", ["top", "subfolder", "root"])
def test_search_never_shows_a_private_note(repo: Repo, cli: Any, layout: str, source: list[str]) -> None:
    cwd, root = _layout(repo, layout)
    graph = cli("graph", "--json", *source, *root, cwd=cwd).json()
    private_paths = [n["path"] for n in graph["nodes"] if any(p in n["path"] for p in PRIVATE)]
    private = {n["id"] for n in graph["nodes"] if n["path"] in private_paths}
    assert len(private) >= 8, "the owner's graph lists the private notes"
    for q in QUERIES:
        for cmd in (["find", q], ["find", q, "--json"], ["find", q, "--json", "--k", "50", "--budget", "100000"],
                    ["query", q], ["query", q, "--explain"], ["query", q, "--json", "--explain", "--k", "100"]):
            r = cli(*cmd, *source, *root, cwd=cwd)
            assert r.code == 0, (cmd, r.err)
            _assert_clean(r.out + r.err)
            if "--json" in cmd:
                hits = r.json()["results"]
                assert not {h["id"] for h in hits} & private, cmd
                assert not {e["to"] for h in hits for e in h.get("edges") or ()} & private, cmd
    # The public note is still found, with its public edges.
    doc = cli("find", "PUBLIC-MARKER", "--json", *source, *root, cwd=cwd).json()
    assert [h["path"] for h in doc["results"]] == ["public/open.md"]
    # The owner may ask for every note, at their own terminal.
    mine = cli("query", "PRIVATE CANARY", "--include-private", "--json", "--k", "50", *source, *root, cwd=cwd).json()
    assert {h["id"] for h in mine["results"]} & private


def test_an_edge_to_a_private_note_neither_shows_nor_scores(repo: Repo, cli: Any) -> None:
    """A public note referring to a private one: the edge is not listed, does not pass an `--edge` filter,
    and the private note's ID earns the public note nothing as edge text."""
    repo.write({"tropo.toml": TROPO, ".gitignore": "USER.md\n", "USER.md": "# Me\n",
                "modules/a.md": "---\nstatus: ok\ndepends: [user, b]\n---\n# A\n",
                "modules/b.md": "---\nstatus: ok\n---\n# B\n"})
    repo.git("add", "-A")
    repo.git("add", "-f", "USER.md")
    repo.git("commit", "-q", "-m", "x")
    graph = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert {"from": "a", "field": "depends", "to": "user", "broken": False} in [
        {k: e[k] for k in ("from", "field", "to", "broken")} for e in graph["edges"]]
    for src in ([], ["--rev", "HEAD"]):
        doc = cli("query", "a", "--explain", "--json", *src, cwd=repo.path).json()
        assert doc["results"][0]["edges"] == [{"field": "depends", "to": "b"}]
        # `user` is written in a's own frontmatter, so a's frontmatter matches; the edge text does not.
        doc = cli("query", "user", "--explain", "--json", *src, cwd=repo.path).json()
        assert [(h["id"], h["reasons"]) for h in doc["results"]] == [("a", ["frontmatter match"])]
        assert cli("find", "--edge", "depends:user", "a", "--json", *src, cwd=repo.path).json()["results"] == []
        assert cli("find", "--edge", "depends:b", "a", "--json", *src, cwd=repo.path).json()["results"] != []


def test_hidden_ids_is_the_snapshots_admission(repo: Repo) -> None:
    """The API the MCP `search` tool calls: the privacy boundary's verdict on every node."""
    repo.write({"tropo.toml": TROPO, "USER.md": "# U\n", "modules/a.md": "---\nstatus: ok\n---\n# A\n",
                "memory/m.md": "# M\n", "notes/passwords.md": "# P\n"})
    repo.commit("x")
    ws = open_workspace(repo.path, rev="HEAD")
    assert hidden_ids(ws) == frozenset({"user", "m", "passwords"})


def test_a_plain_folder_hides_what_needs_no_git_and_refuses_what_does(tmp_path: Path, cli: Any) -> None:
    folder = tmp_path / "plain"
    write(folder, {"tropo.toml": TROPO, "USER.md": "# PRIVATE-CANARY-user\n\ncommon\n",
                   "memory/m.md": "# PRIVATE-CANARY-memory\n\ncommon\n",
                   "notes/apikey.md": "# PRIVATE-CANARY-token\n\ncommon\n", "notes/open.md": "# Open\n\ncommon\n"})
    for cmd in (["find", "common", "--json"], ["query", "common"], ["find", "PRIVATE CANARY"]):
        r = cli(*cmd, cwd=folder)
        assert r.code == 0, r.err
        _assert_clean(r.out)
    assert [h["path"] for h in cli("find", "common", "--json", cwd=folder).json()["results"]] == ["notes/open.md"]
    # private_paths are gitignore patterns only Git can match exactly: outside Git, refuse rather than guess.
    write(folder, {".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["notes/open.md"]\n'})
    r = cli("find", "common", cwd=folder)
    assert r.code == 3 and r.out == ""
    assert "private_paths" in r.err and "Git" in r.err


def test_hiding_is_searching_the_graph_without_those_nodes(repo: Repo) -> None:
    """Search with `hidden` (asked lazily, a batch of candidates at a time) answers exactly like search
    over the graph with those nodes and every edge to them removed, with and without the index."""
    import random

    import msgspec

    import vivary_git
    from vivary_git import searchindex
    from vivary_git.query import find, search

    rng = random.Random(7)
    words = ["auth", "graph", "memory", "gate", "review", "token", "the", "release"]
    files = {"tropo.toml": TROPO}
    for i in range(300):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 12)))
        deps = ", ".join(f"m{rng.randrange(300)}" for _ in range(rng.randint(0, 4)))
        files[f"modules/m{i}.md"] = f"---\nstatus: s\ndepends: [{deps}]\n---\n# {body[:10]}\n{body}\n"
    repo.commit(files=files)
    ws = vivary_git.open_workspace(repo.path, rev="HEAD")
    graph, notes = ws.graph(), ws.notes()
    index = searchindex.build(graph, notes)
    for trial in range(12):
        hidden = frozenset(f"m{i}" for i in rng.sample(range(300), rng.choice([1, 20, 150])))
        pruned = msgspec.structs.replace(graph, nodes=[n for n in graph.nodes if n.id not in hidden],
                                         edges=[e for e in graph.edges if e.from_ not in hidden and e.to not in hidden])
        for q, kw in (("auth", {"k": 3}), ("graph memory", {"k": 25, "explain": True}),
                      ("token", {"edges": ["depends"], "k": 5}), ("review gate", {"k": 1}), ("m12", {"k": 10})):
            want = search(pruned, notes, q, hidden=frozenset(), **kw)  # type: ignore[arg-type]
            for idx in (None, index):
                got = search(graph, notes, q, index=idx, hidden=hidden, **kw)  # type: ignore[arg-type]
                assert got == want, (trial, q, kw, idx is None)
                asked = search(graph, notes, q, index=idx, hidden=lambda ids, h=hidden: h & set(ids),  # type: ignore[misc]
                               **kw)  # type: ignore[arg-type]
                assert asked == want
        assert find(graph, notes, "auth graph", hidden=hidden, index=index) == find(pruned, notes, "auth graph",
                                                                                   hidden=frozenset())


def test_an_edge_filter_naming_a_private_note_does_not_echo_its_id(repo: Repo, cli: Any) -> None:
    """In a vault the id of `USER.md` is `USER`, so `--edge wikilink:user` resolved to it and the answer's filters
    said `wikilink:USER`: a private note's ID in `find` and `query` output. The filter stays as written (nothing
    passes it, as before); `query --include-private` still resolves it, for the owner."""
    repo.write({".gitignore": "USER.md\n", "docs/USER.md": "# Me\n", "docs/a.md": "# A\n\nsee [[user]]\n",
                "docs/b.md": "# B\n\nsee [[a]]\n"})
    repo.git("add", "-A")
    repo.git("add", "-f", "docs/USER.md")
    repo.git("commit", "-q", "-m", "x")
    for root in ([], ["--root", "docs"]):
        at = "" if root else "docs/"  # the ids: paths in the vault read
        for cmd, name in (("find", "user"), ("query", "user"), ("find", f"{at}USER.md"), ("query", "User")):
            args = [cmd, "--edge", f"wikilink:{name}", *(["A"] if cmd == "find" else []), "--json", *root]
            doc = cli(*args, cwd=repo.path).json()
            assert (doc["filters"]["edge"], doc["results"]) == ([f"wikilink:{name}"], []), args
        doc = cli("query", "--edge", "wikilink:a", "--json", *root, cwd=repo.path).json()
        assert (doc["filters"]["edge"], [h["id"] for h in doc["results"]]) == ([f"wikilink:{at}a"], [f"{at}b"])
        doc = cli("query", "--edge", "wikilink:user", "--include-private", "--json", *root, cwd=repo.path).json()
        assert (doc["filters"]["edge"], [h["id"] for h in doc["results"]]) == ([f"wikilink:{at}USER"], [f"{at}a"])


@pytest.mark.parametrize("layout", ["top", "subfolder", "root"])
def test_an_edge_filter_naming_several_notes_counts_the_private_ones(repo: Repo, cli: Any, layout: str) -> None:
    """`--edge FIELD:NAME` where NAME is a public note's name and a private one's is refused, as every name of
    several notes is; the refusal names the public candidates and counts the private ones (their IDs are their
    paths: `clients/acme-canary/plan`), in `find`, `query` and semantic search alike."""
    at = "" if layout == "top" else "vault/"
    memory = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
    repo.commit("init", {
        ".vivary/memory.toml": memory,  # run from vault/, the workspace is the top; its rule is vault's own
        f"{at}.vivary/memory.toml": f'{memory}[memory.privacy]\nprivate_paths = ["clients/acme-*"]\n',
        f"{at}notes/plan.md": "# Plan\n", f"{at}notes/idea.md": "# Idea\n\nSee [[notes/plan]].\n",
        f"{at}clients/acme-canary/plan.md": "# Plan\n\ncanary\n"})
    cwd = repo.path / "vault" if layout == "subfolder" else repo.path
    root = ["--root", "vault"] if layout == "root" else []
    ids = "vault/" if layout == "subfolder" else ""  # a vault's IDs: paths from its top (the repository's, run below)
    for cmd in (["find", "idea"], ["find", "idea", "--json"], ["query", "idea"], ["query", "idea", "--json"],
                ["query", "idea", "--mode", "semantic"], ["recall", "idea"], ["recall", "idea", "--json"]):
        r = cli(*cmd, "--edge", "related:plan", *root, cwd=cwd)
        assert r.code == 2 and r.out == "", (cmd, r.out, r.err)
        assert "canary" not in r.err.lower(), (cmd, r.err)
        assert (f"'plan' names 2 notes: '{ids}notes/plan', and 1 private note(s), not named here; give one of "
                "these IDs (or its path)") in r.err, (cmd, r.err)
    # Either ID then resolves: the public one filters, the private one is kept as written (nothing passes it).
    doc = cli("query", "--edge", f"related:{ids}notes/plan", "--json", *root, cwd=cwd).json()
    assert doc["filters"]["edge"] == [f"related:{ids}notes/plan"]
