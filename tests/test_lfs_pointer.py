"""A note committed to Git LFS: its tree holds a pointer, not the note. The pointer is `E000` (the text is in LFS
storage, which vivary does not read), a node whose body is never read, searched or shown."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import TROPO, Repo

from vivary_git.parse import parse_blob

OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
POINTER = f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 12345\n"
LFS_ATTRIBUTES = "*.md filter=lfs diff=lfs merge=lfs -text\n"
LINKED = "---\nstatus: accepted\ndate: 2026-11-01\nrelated: [core]\n---\n# Use Git trees\n\nBody.\n"


def assert_pointer_finding(out: str, path: str) -> None:
    """One finding for `path`: the E000 that says what it is and how to get the note back into the tree."""
    lines = [line for line in out.splitlines() if line.startswith(f"{path}:")]
    assert len(lines) == 1, out
    assert lines[0].startswith(f"{path}:1: error E000: file is a Git LFS pointer: the note's text is in LFS storage, "
                               "which vivary does not read"), out
    for words in ("git lfs untrack '*.md'", "git lfs migrate export --include='*.md' --everything", "`exclude`"):
        assert words in lines[0], (words, out)


def assert_no_pointer(*texts: str) -> None:
    for text in texts:
        assert OID not in text and "git-lfs.github.com" not in text, text


@pytest.mark.parametrize("tree", ["--rev", "--staged", "working tree"])
def test_a_pointer_in_a_tropo_workspace_is_e000_and_its_links_still_resolve(repo: Repo, cli: Any, tree: str) -> None:
    repo.write({".gitattributes": LFS_ATTRIBUTES, "tropo.toml": TROPO, "decisions/use-git.md": LINKED,
                "modules/core.md": POINTER})
    if tree == "--rev":
        repo.commit()
        args = ["--rev", "HEAD"]
    elif tree == "--staged":
        repo.git("add", "-A")
        args = ["--staged"]
    else:
        args = []
    r = cli("check", *args, cwd=repo.path)
    assert r.code == 1
    assert_pointer_finding(r.out, "modules/core.md")
    assert "E101" not in r.out and "W220" not in r.out, r.out  # the module is a node: `related: [core]` resolves
    graph = cli("graph", *args, "--json", cwd=repo.path)
    assert graph.code == 0, graph.err
    got = graph.json()
    assert {"id": "core", "type": "module", "path": "modules/core.md"} in got["nodes"]
    assert got["edges"] == [{"from": "use-git", "field": "related", "to": "core", "broken": False}]
    found = cli("find", *args, "--json", "sha256", OID, cwd=repo.path)
    assert found.code == 0, found.err
    assert found.json()["results"] == []  # the query is echoed; no result holds it
    assert cli("query", *args, "--json", "12345", cwd=repo.path).json()["results"] == []
    assert_no_pointer(graph.out, cli("find", *args, "core", cwd=repo.path).out,
                      cli("query", *args, "--explain", "core", cwd=repo.path).out)


def test_a_pointer_in_a_vault_is_e000_nowhere_searched_or_shown(repo: Repo, cli: Any) -> None:
    repo.commit(files={".gitattributes": LFS_ATTRIBUTES, "Deploys.md": POINTER,
                       "Index.md": "# Index\n\nSee [[Deploys]] and [[Other]].\n", "Other.md": "# Other\n\n[[Index]]\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1
    assert_pointer_finding(r.out, "Deploys.md")
    assert "W221" not in r.out, r.out  # [[Deploys]] reaches the node
    graph = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert {"from": "Index", "field": "wikilink", "to": "Deploys", "broken": False} in graph["edges"]
    for words in (("sha256", "spec", OID), ("12345",)):
        assert cli("find", "--json", *words, cwd=repo.path).json()["results"] == []
        assert cli("query", "--json", *words, cwd=repo.path).json()["results"] == []
    outputs = [cli(*cmd, cwd=repo.path) for cmd in (
        ("find", "Deploys"), ("find", "--json", "--snippet", "400", "Deploys"), ("query", "--explain", "Deploys"),
        ("graph",), ("graph", "--json"), ("check", "--json"))]
    assert "Deploys.md" in outputs[1].out
    assert_no_pointer(*(o.out + o.err for o in outputs))


def test_a_pointer_is_never_in_a_memory_packet_or_an_mcp_answer(repo: Repo) -> None:
    from vivary_git import open_workspace
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import build_snapshot, packets

    repo.commit(files={".gitattributes": LFS_ATTRIBUTES, "Deploys.md": POINTER,
                       "Index.md": "# Index\n\nSee [[Deploys]].\n"})
    ws = open_workspace(repo.path)
    cfg = load_memory_config(ws)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model)
    rendered = dict((node.id, text) for node, text in packets(ws, snap))
    assert "Deploys" in rendered
    assert_no_pointer(*rendered.values())
    mcp = pytest.importorskip("vivary_git.mcp.service")
    service = mcp.MemoryService(repo.path)
    try:
        said = [json.dumps(service.search(q, top_k=10, include_content=True, budget=0).results, default=str)
                for q in (f"sha256 spec {OID}", "Deploys")]
        said.append(str(service.read("Deploys", include_content=True)))
    finally:
        service.close()
    assert "Deploys" in said[1]
    assert_no_pointer(*said)


QUOTED = [
    f"# Storing notes in LFS\n\nGit holds this instead of the note:\n\n```\n{POINTER}```\n",
    f"---\ntitle: LFS\n---\n{POINTER}",
    f"{POINTER}\nAnd a line of the note's own.\n",
    f"{POINTER}# A heading after it\n",
    POINTER.replace("spec/v1", "spec/v2"),
    POINTER.replace("version https://git-lfs", "version  https://git-lfs"),
    "\ufeff" + POINTER,
    POINTER.replace("\n", "\r\n"),
    POINTER.rstrip("\n"),
    POINTER.replace(OID, OID[:-1]),
    POINTER.replace(OID, OID.upper()),
    POINTER.replace("sha256:", "sha1:"),
    POINTER.replace("size 12345", "size twelve"),
    POINTER.replace("size 12345\n", ""),
    f"version https://git-lfs.github.com/spec/v1\nsize 12345\noid sha256:{OID}\n",  # not sorted
    f"{POINTER}size 12345\n",  # a key twice
    POINTER + "x-extra " + "y" * 1024 + "\n",  # a pointer is under 1024 bytes
]


@pytest.mark.parametrize("text", QUOTED)
def test_a_note_that_quotes_or_resembles_a_pointer_stays_a_note(repo: Repo, cli: Any, text: str) -> None:
    assert parse_blob(text.encode()).problem is None
    repo.commit(files={"notes/lfs.md": text})
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0, r.out
    assert r.json()["findings"] == []


@pytest.mark.parametrize("text", [
    POINTER,
    # git-lfs's own extensions (`ext-<priority>-<name>`) sort before `oid`; a key it does not know is kept
    f"version https://git-lfs.github.com/spec/v1\next-0-foo sha256:{'0' * 64}\noid sha256:{OID}\nsize 0\n",
    f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize 12345\nx-note kept\n",
])
def test_what_git_lfs_writes_is_a_pointer(text: str) -> None:
    note = parse_blob(text.encode())
    assert note.problem is not None and note.problem.code == "E000" and note.problem.line == 1
    assert "Git LFS pointer" in note.problem.message
    assert note.body == "" and note.fields == {} and note.links == () and note.title is None
