"""The memory snapshot: nothing private reaches a packet, a report or an edge; the fingerprint moves
exactly when what a provider would see moves."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import git, write

from vivary_git import open_workspace
from vivary_git.errors import PrivacyError
from vivary_git.memory import snapshot as snapshot_mod
from vivary_git.memory.config import load_memory_config
from vivary_git.memory.snapshot import (
    MemoryEdge,
    MemorySnapshot,
    build_snapshot,
    dataset_name,
    fingerprint,
    packet,
    packets,
)
from vivary_git.models import Note
from vivary_git.privacy import PrivacyPolicy

TROPO = """version = 1

[base]
allow_untyped = true
optional = { related = "ref-list", owner = "ref", tags = "string-list" }

[types.decision]
folder = "decisions"
optional = { related = "ref-list" }
"""

CANARY = "PRIVATE-CANARY"

# id -> (path, kind); every kind of private file the boundary knows.
PRIVATE = {
    "user": ("USER.md", "floor-user"),
    "memory": ("MEMORY.md", "floor-memory"),
    "mem-note": ("memory/mem-note.md", "floor-memory-dir"),
    "hb-note": ("heartbeat-reports/hb-note.md", "floor-heartbeat"),
    "strato-note": (".strato/private/strato-note.md", "floor-strato"),
    "draft-note": ("drafts/draft-note.md", "config-glob"),
    "nested-hidden": ("notes/deep/nested-hidden.md", "nested-gitignore"),
    "info-excluded": ("info-excluded.md", "info-exclude"),
    "global-excluded": ("global-excluded.md", "excludes-file"),
    "forced": ("build/forced.md", "force-added"),
    "secrets": ("secrets.md", "sensitive-name"),
}
PUBLIC = {"hub": "hub.md", "other": "notes/other.md", "d1": "decisions/d1.md"}


def private_note(kind: str, nid: str) -> str:
    # The canary is everywhere a packet could pick it up: frontmatter, title, body, outbound links.
    return (f"---\nsummary: {CANARY}-{kind}-field\nrelated: [hub, other]\n---\n# {CANARY}-{kind}-title\n\n"
            f"{CANARY}-{kind}-body mentions [[hub]] and [[other]].\n")


def hub_note() -> str:
    ids = sorted(PRIVATE)
    links = " ".join(f"[[{i}]]" for i in ids)
    return (f"---\nrelated: [{', '.join([*ids, 'other'])}]\nowner: user\ntags: [index]\n---\n# Hub\n\n"
            f"Links to everything: {links} and [[other]] and [[d1]].\n")


@pytest.fixture
def ws_repo(repo: Any, tmp_path: Path) -> Any:
    global_ignore = tmp_path / "global-ignore"
    global_ignore.write_text("global-excluded.md\n")
    repo.git("config", "core.excludesFile", str(global_ignore))
    files: dict[str, str | bytes] = {
        "tropo.toml": TROPO,
        ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n',
        ".gitignore": "build/\n",
        "notes/.gitignore": "deep/nested-hidden.md\n",
        "hub.md": hub_note(),
        "notes/other.md": "---\nrelated: [hub]\n---\n# Other\n\nBack to [[hub]].\n",
        "decisions/d1.md": "---\nrelated: [other, user]\n---\n# D1\n",
    }
    for nid, (path, kind) in PRIVATE.items():
        files[path] = private_note(kind, nid)
    repo.write(files)
    (repo.path / ".git/info/exclude").write_text("info-excluded.md\n")
    repo.git("add", "-A")
    # The ignored ones are tracked anyway (force-added): --no-index semantics keep them private.
    repo.git("add", "-f", "notes/deep/nested-hidden.md", "info-excluded.md", "global-excluded.md", "build/forced.md")
    repo.git("commit", "-q", "-m", "vault")
    # An ignored, never-added file with a canary: not in any tree, so nowhere in the snapshot either.
    repo.write({"build/untracked.md": f"# {CANARY}-untracked\n"})
    return repo


def snap_of(path: Path, **kw: Any) -> tuple[MemorySnapshot, list[str]]:
    ws = open_workspace(path, **kw)
    cfg = load_memory_config(ws)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model)
    return snap, [p for _, p in packets(ws, snap)]


def assert_no_canary(*texts: str) -> None:
    for text in texts:
        assert CANARY not in text, text


# --- the canaries ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", [{}, {"rev": "HEAD"}, {"staged": True}])
def test_no_private_byte_reaches_a_packet_or_an_edge(ws_repo: Any, source: dict[str, Any]) -> None:
    snap, texts = snap_of(ws_repo.path, **source)
    assert {n.id for n in snap.nodes} == set(PUBLIC)
    assert snap.private_count == len(PRIVATE)
    admitted = set(PUBLIC)
    assert all(e.source_id in admitted and e.target_id in admitted for e in snap.edges)
    assert ("d1", "related", "other") in {(e.source_id, e.field, e.target_id) for e in snap.edges}
    assert_no_canary(*texts, msgspec.json.encode(snap).decode())
    hub = next(t for t in texts if t.startswith("vivary_node_id: hub\n"))
    outbound = hub.split("outbound_edges:\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert outbound == ["- related: other", "- wikilink: d1", "- wikilink: other"]


def test_every_private_file_is_in_the_graph(ws_repo: Any) -> None:
    # Otherwise the canary test above proves nothing: the graph must hold them, the snapshot must not.
    ids = {n.id for n in open_workspace(ws_repo.path).graph().nodes}
    assert set(PRIVATE) <= ids


@pytest.mark.parametrize("flags", [(), ("--rev", "HEAD"), ("--staged",)])
def test_dry_run_report_and_streams_hold_no_canary(ws_repo: Any, cli: Any, flags: tuple[str, ...]) -> None:
    j = cli("index", "--dry-run", "--json", *flags, cwd=ws_repo.path)
    t = cli("index", "--dry-run", *flags, cwd=ws_repo.path)
    assert (j.code, t.code) == (0, 0), j.err + t.err
    assert_no_canary(j.out, j.err, t.out, t.err)
    report = j.json()
    assert report == {
        "ok": True, "provider": "none", "dataset": report["dataset"], "dry_run": True, "indexed": 0,
        "would_index": len(PUBLIC), "edges": report["edges"], "private": len(PRIVATE),
        "fingerprint": report["fingerprint"], "enabled": False, "left_out": [],
    }
    assert "memory is disabled" in t.out and "nothing was written" in t.out
    assert f"would index  {len(PUBLIC)} note(s)" in t.out


def test_dry_run_writes_nothing_outside_the_cache(ws_repo: Any, cli: Any) -> None:
    def listing() -> set[str]:
        return {str(p.relative_to(ws_repo.path)) for p in ws_repo.path.rglob("*")
                if ".git" not in p.relative_to(ws_repo.path).parts[:1]}

    before = listing()
    status = ws_repo.git("status", "--porcelain", "--ignored")
    assert cli("index", "--dry-run", cwd=ws_repo.path).code == 0
    assert listing() == before
    assert ws_repo.git("status", "--porcelain", "--ignored") == status


def test_all_three_sources_agree_on_a_clean_tree(ws_repo: Any) -> None:
    prints = {snap_of(ws_repo.path, **kw)[0].fingerprint for kw in ({}, {"rev": "HEAD"}, {"staged": True})}
    assert len(prints) == 1


# --- fails closed ---------------------------------------------------------------------------------------


def test_symlinked_public_note_refuses_with_its_path(repo: Any, cli: Any) -> None:
    repo.commit(files={"a.md": "# A\n"})
    os.symlink("a.md", repo.path / "linked.md")
    r = cli("index", "--dry-run", "--json", cwd=repo.path)
    assert r.code == 3 and r.out == ""
    assert "'linked.md'" in r.err and "symbolic link" in r.err and "Traceback" not in r.err


def test_symlinked_private_note_is_just_private(repo: Any, cli: Any) -> None:
    repo.commit(files={"a.md": "# A\n", "memory/real.md": "# R\n"})
    os.symlink("real.md", repo.path / "memory/linked.md")
    r = cli("index", "--dry-run", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["would_index"] == 1


def test_symlink_in_a_commit_is_not_read_so_rev_proceeds(repo: Any, cli: Any) -> None:
    repo.write({"a.md": "# A\n"})
    os.symlink("a.md", repo.path / "linked.md")
    repo.commit()
    assert cli("index", "--dry-run", "--json", "--rev", "HEAD", cwd=repo.path).code == 0
    assert cli("index", "--dry-run", "--json", cwd=repo.path).code == 3


def test_hard_linked_note_refuses(repo: Any, cli: Any, tmp_path: Path) -> None:
    repo.commit(files={"a.md": "# A\n"})
    outside = tmp_path / "outside.md"
    outside.write_text("# elsewhere\n")
    os.link(outside, repo.path / "b.md")
    r = cli("index", "--dry-run", cwd=repo.path)
    assert r.code == 3 and "'b.md'" in r.err and "hard links" in r.err


def test_note_behind_a_symlinked_directory_is_never_read(repo: Any, cli: Any, tmp_path: Path) -> None:
    # Git itself does not descend into a symlinked directory: the link is one blob, not a note.
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere/x.md").write_text(f"# {CANARY}-elsewhere\n")
    repo.commit(files={"a.md": "# A\n"})
    os.symlink(tmp_path / "elsewhere", repo.path / "dir")
    r = cli("index", "--dry-run", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["would_index"] == 1
    assert_no_canary(r.out, r.err)


def test_plain_folder_fails_closed(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "a.md").write_text("# A\n")
    r = cli("index", "--dry-run", "--json", cwd=tmp_path)
    assert r.code == 3 and "needs a Git work tree" in r.err


def test_unreadable_ignore_file_fails_closed(unreadable_files: Any, cli: Any,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    ws = unreadable_files.base / "ws"
    ws.mkdir()
    git(ws, "init", "-q", "-b", "main")
    write(ws, {"a.md": "# A\n", "notes/.gitignore": "x\n", "notes/b.md": "# B\n"})
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "notes")
    monkeypatch.setenv("PATH", unreadable_files.path)
    (ws / "notes/.gitignore").chmod(0)
    try:
        r = cli("index", "--dry-run", cwd=ws)
    finally:
        (ws / "notes/.gitignore").chmod(0o644)
    assert r.code == 3 and r.out == ""
    assert "Git could not use every ignore rule" in r.err and "notes/.gitignore" in r.err
    assert "nothing was admitted" in r.err
    # The same workspace, readable again (and through the same `git`): decided, and both notes admitted.
    ok = cli("index", "--dry-run", "--json", cwd=ws)
    assert ok.code == 0 and ok.json()["would_index"] == 2, ok.err


# --- parse problems -------------------------------------------------------------------------------------


def test_notes_with_parse_problems_are_admitted_with_empty_fields(repo: Any) -> None:
    repo.commit(files={
        "bad-yaml.md": "---\nkey: [unclosed\nsecretish: x\n---\n# Bad\n\nbody text\n",
        "binary.md": b"\x00\x01\x02",
        "ok.md": "---\nk: v\n---\n# Ok\n",
    })
    snap, texts = snap_of(repo.path, rev="HEAD")
    by_id = {n.id: n for n in snap.nodes}
    assert by_id["bad-yaml"].fields == {} and by_id["binary"].fields == {} and by_id["ok"].fields == {"k": "v"}
    bad = next(t for t in texts if t.startswith("vivary_node_id: bad-yaml\n"))
    assert bad.endswith("# Bad\n\nbody text\n") and "\n{}\noutbound_edges:\n" in bad


# --- packets --------------------------------------------------------------------------------------------


def test_packet_format(repo: Any) -> None:
    repo.commit(files={
        "tropo.toml": TROPO,
        "decisions/d.md": "---\ntags: [b, a]\nrelated: [n]\nowner: n\nz: 1\nA: {y: 2, x: 1}\n---\n"
                          "# Decide\n\nSee [[n]].\n",
        "n.md": "# N\n",
    })
    _, texts = snap_of(repo.path, rev="HEAD")
    d = next(t for t in texts if t.startswith("vivary_node_id: d\n"))
    assert d == (
        "vivary_node_id: d\n"
        "vivary_type: decision\n"
        "vivary_path: decisions/d.md\n"
        "vivary_title: Decide\n"
        '{"A":{"x":1,"y":2},"owner":"n","related":["n"],"tags":["b","a"],"z":1}\n'
        "outbound_edges:\n"
        "- owner: n\n"
        "- related: n\n"
        "- wikilink: n\n"
        "\n"
        "# Decide\n\nSee [[n]].\n"
    )
    n = next(t for t in texts if t.startswith("vivary_node_id: n\n"))
    assert n == "vivary_node_id: n\nvivary_type: \nvivary_path: n.md\nvivary_title: N\n{}\noutbound_edges:\n\n# N\n"


def test_a_file_name_cannot_forge_header_lines(repo: Any) -> None:
    repo.commit(files={"odd\nvivary_type: admin.md": "# T\n"})
    _, texts = snap_of(repo.path, rev="HEAD")
    assert texts[0].splitlines()[2] == "vivary_path: odd\\nvivary_type: admin.md"


def test_packet_renders_only_the_nodes_own_edges() -> None:
    node = snapshot_mod.MemoryNode(id="a", type=None, path="a.md", title="A", blob="0" * 40, fields={})
    # The packet's frontmatter comes from the note (the snapshot may be built without fields).
    note = Note(fields={1: "x", "b": 2}, key_lines={}, title="A", body="body")  # type: ignore[dict-item]
    edges = [MemoryEdge("b", "f", "a"), MemoryEdge("a", "g", "c"), MemoryEdge("a", "f", "b")]
    assert packet(node, note, edges) == (
        "vivary_node_id: a\nvivary_type: \nvivary_path: a.md\nvivary_title: A\n"
        '{"1":"x","b":2}\noutbound_edges:\n- f: b\n- g: c\n\nbody'
    )


def test_a_packet_is_its_frame_and_its_notes_text_line_for_line() -> None:
    """The keyword index of a fetched tree is built from two halves counted apart (bm25.build_framed): the
    lines the snapshot gives (`packet_frame`) and those the note gives (`note_text`). Together they must be
    the packet's lines, whatever the names hold (line breaks, backslashes, other scripts)."""
    from vivary_git.memory.snapshot import note_text, packet_frame, packet_of

    node = snapshot_mod.MemoryNode(id="a\nvivary_type: x", type="dé\\c", path="日本/a\r.md", title="", blob="0" * 40,
                                   fields={})
    edges = [MemoryEdge("a\nvivary_type: x", "f\n", "b\u0301"), MemoryEdge("z", "g", "a"),
             MemoryEdge("a\nvivary_type: x", "g", "c")]
    for frontmatter, body in (("{}", ""), ('{"k":"v"}', "# T\n\nline\n\n- b\n"), ("{}", "\u0301body\n")):
        whole = packet_of(node, frontmatter, body, edges)
        halves = packet_frame(node, edges).split("\n") + note_text(frontmatter, body).split("\n")
        assert sorted(whole.split("\n")) == sorted([*halves, ""])  # and the blank line before the body
        assert whole.startswith(packet_frame(node, edges).split("\noutbound_edges:")[0] + f"\n{frontmatter}\n")


def test_packets_and_frames_escape_names_with_line_breaks_and_backslashes_like_one_packet(repo: Any) -> None:
    """`packets` and `packet_frames` render a whole snapshot at once, writing a node's names as they are when
    none holds a backslash or a line break: those that do are still escaped, each packet as `packet` and each
    frame as `packet_frame` render it alone."""
    from vivary_git.memory.snapshot import frame_parts, packet_frame, packet_frames

    repo.commit(files={
        "plain.md": "# Plain\n\nSee [[sl\\ash]] and [[back]].\n",
        "sl\\ash.md": "# Slash\n",
        "odd\nname.md": "# Odd\n\nBack to [[plain]].\n",
        "back.md": "# Back\\slash title\n\n[[plain]]\n",
        "cr.md": "---\nrelated: [plain]\n---\n# Carriage\rreturn\n",
    })
    ws = open_workspace(repo.path, rev="HEAD")
    cfg = load_memory_config(ws)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model)
    rendered = dict((node.id, text) for node, text in packets(ws, snap))
    notes = ws.notes()
    assert [packet(n, notes[n.blob], snap.edges) for n in snap.nodes] == [rendered[n.id] for n in snap.nodes]
    assert packet_frames(snap) == [packet_frame(n, snap.edges) for n in snap.nodes]
    # The first recall of a fetched tree makes the frames once (`frame_parts`) for its packets and its frames.
    frames = frame_parts(snap)
    assert list(packets(ws, snap, frames=frames)) == list(packets(ws, snap))
    assert packet_frames(snap, frames) == packet_frames(snap) == ["\n".join(f) for f in frames]
    assert "vivary_title: Back\\\\slash title\n" in rendered["back"]
    assert "vivary_title: Carriage\\rreturn\n" in rendered["cr"]
    odd = next(n for n in snap.nodes if n.path == "odd\nname.md")
    assert "vivary_path: odd\\nname.md\n" in rendered[odd.id]
    assert "outbound_edges:\n- wikilink: back\n- wikilink: sl\\\\ash\n" in rendered["plain"]


def test_dataset_name(tmp_path: Path) -> None:
    root = tmp_path / "My Notes (2026)"
    root.mkdir()
    name = dataset_name(root)
    assert re.fullmatch(r"vivary-my-notes-2026-[0-9a-f]{12}", name)
    assert dataset_name(root, "Team KB") == "vivary-team-kb-" + name[-12:]
    other = tmp_path / "b" / "My Notes (2026)"
    other.mkdir(parents=True)
    assert dataset_name(other)[-12:] != name[-12:]


# --- the fingerprint ------------------------------------------------------------------------------------


def fp(path: Path, **kw: Any) -> str:
    return snap_of(path, **kw)[0].fingerprint


def test_fingerprint_is_stable_for_the_same_tree(ws_repo: Any) -> None:
    assert fp(ws_repo.path, rev="HEAD") == fp(ws_repo.path, rev="HEAD", cache=False)
    assert re.fullmatch(r"[0-9a-f]{64}", fp(ws_repo.path))


def test_fingerprint_moves_with_public_content_edges_and_paths(ws_repo: Any) -> None:
    base = fp(ws_repo.path)
    seen = {base}

    def changed(files: dict[str, str]) -> None:
        ws_repo.write(files)
        now = fp(ws_repo.path)
        assert now not in seen, files
        seen.add(now)

    changed({"notes/other.md": "---\nrelated: [hub]\n---\n# Other\n\nBack to [[hub]]. One more line.\n"})
    changed({"notes/third.md": "# Third\n"})  # a new public node
    changed({"hub.md": hub_note() + "\nAnd [[third]].\n"})  # a new edge (and new content)
    changed({"notes/third.md": "# Third, retitled\n"})
    os.rename(ws_repo.path / "notes/third.md", ws_repo.path / "decisions/third.md")  # same blob, new path and type
    now = fp(ws_repo.path)
    assert now not in seen


def test_fingerprint_moves_with_edges_alone(repo: Any) -> None:
    # Same blobs, different edges: a config change makes `owner` a ref field.
    repo.commit(files={"a.md": "---\nowner: b\n---\n# A\n", "b.md": "# B\n", "tropo.toml": "version = 1\n"})
    before = snap_of(repo.path)[0]
    repo.write({"tropo.toml": 'version = 1\n[base]\noptional = { owner = "ref" }\n'})
    after = snap_of(repo.path)[0]
    assert [n.blob for n in before.nodes] == [n.blob for n in after.nodes]
    assert (len(before.edges), len(after.edges)) == (0, 1)
    assert before.fingerprint != after.fingerprint


def test_private_edits_change_nothing(ws_repo: Any) -> None:
    before = snap_of(ws_repo.path)[0]
    # Edit every private file, give each a new link to a public note, add new private ones.
    for nid, (path, kind) in PRIVATE.items():
        ws_repo.write({path: private_note(kind, nid) + f"\nmore {CANARY} and [[d1]]\n"})
    ws_repo.write({"memory/new.md": f"# {CANARY}-new\n[[hub]]\n", "drafts/new-draft.md": f"# {CANARY}\n"})
    after, texts = snap_of(ws_repo.path)
    assert (after.fingerprint, after.nodes, after.edges) == (before.fingerprint, before.nodes, before.edges)
    assert after.private_count == before.private_count + 2
    assert_no_canary(*texts)


def test_a_public_ref_to_a_missing_note_that_becomes_private_changes_nothing(repo: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "a.md": "---\nrelated: [ghost]\n---\n# A\n[[ghost]]\n"})
    before = snap_of(repo.path)[0]
    repo.write({"memory/ghost.md": f"# {CANARY}-ghost\n"})
    after, texts = snap_of(repo.path)
    assert (after.fingerprint, after.nodes, after.edges, after.private_count) == (before.fingerprint, before.nodes,
                                                                                  [], 1)
    assert_no_canary(*texts)


def test_a_private_note_made_public_changes_it(ws_repo: Any) -> None:
    before = snap_of(ws_repo.path)[0]
    ws_repo.write({".vivary/memory.toml": "[memory.privacy]\nprivate_paths = []\n"})
    after = snap_of(ws_repo.path)[0]
    assert "draft-note" in {n.id for n in after.nodes} and after.fingerprint != before.fingerprint
    assert ("draft-note", "related", "hub") in {(e.source_id, e.field, e.target_id) for e in after.edges}


def test_fingerprint_moves_with_provider_model_and_packet_format(ws_repo: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = open_workspace(ws_repo.path, rev="HEAD")
    policy = load_memory_config(ws).policy()
    prints = {
        build_snapshot(ws, policy, provider=p, model=m).fingerprint
        for p, m in (("none", ""), ("vivary-local", "minilm-l6-int8"), ("vivary-local", "other-model"), ("cognee", ""))
    }
    assert len(prints) == 4
    plain = build_snapshot(ws, policy, provider="none", model="").fingerprint
    monkeypatch.setattr(snapshot_mod, "PACKET_FORMAT", snapshot_mod.PACKET_FORMAT + 1)
    assert build_snapshot(ws, policy, provider="none", model="").fingerprint != plain


def test_enabling_a_provider_in_config_changes_the_fingerprint(ws_repo: Any, cli: Any) -> None:
    before = cli("index", "--dry-run", "--json", cwd=ws_repo.path).json()
    ws_repo.write({".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n'
                   '[memory.privacy]\nprivate_paths = ["drafts/**"]\n'})
    after = cli("index", "--dry-run", "--json", cwd=ws_repo.path).json()
    assert (after["provider"], after["enabled"], after["would_index"]) == ("vivary-local", True, before["would_index"])
    assert after["fingerprint"] != before["fingerprint"] and after["dataset"] == before["dataset"]
    t = cli("index", "--dry-run", cwd=ws_repo.path)
    assert "provider     vivary-local\n" in t.out


def test_fingerprint_definition_is_the_documented_one() -> None:
    nodes = [snapshot_mod.MemoryNode(id="a", type="t", path="a.md", title="A", blob="b" * 40, fields={})]
    edges = [MemoryEdge("a", "f", "a")]
    from vivary_git.config import FORMAT_VERSION

    payload = ["vivary-memory-snapshot", snapshot_mod.PACKET_FORMAT, FORMAT_VERSION, "p", "m",
               [["a", "t", False, "a.md", "b" * 40]], [["a", "f", "a"]]]
    import hashlib

    expected = hashlib.sha256(json.dumps(payload, separators=(",", ":")).encode()).hexdigest()
    assert fingerprint("p", "m", nodes, edges) == expected


def test_without_index_writing_yet_index_exits_2(repo: Any, cli: Any) -> None:
    repo.commit(files={"a.md": "# A\n"})
    r = cli("index", cwd=repo.path)
    assert r.code == 2 and "--dry-run" in r.err


def test_policy_respect_gitignore_false_admits_ignored_but_not_floor(ws_repo: Any) -> None:
    ws = open_workspace(ws_repo.path)
    snap = build_snapshot(ws, PrivacyPolicy(respect_gitignore=False), provider="none", model="")
    ids = {n.id for n in snap.nodes}
    assert {"forced", "info-excluded", "global-excluded", "nested-hidden", "draft-note"} <= ids
    assert not ids & {"user", "memory", "mem-note", "hb-note", "strato-note", "secrets"}


def test_git_missing_fails_closed(repo: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit(files={"a.md": "# A\n"})
    monkeypatch.setenv("PATH", "/nonexistent")
    ws = open_workspace(repo.path, rev="HEAD")  # pygit2 reads the tree; Git itself decides privacy
    with pytest.raises(PrivacyError, match="not on PATH"):
        build_snapshot(ws, PrivacyPolicy(), provider="none", model="")
    r = cli("index", "--dry-run", "--json", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 3 and r.out == "" and "not on PATH" in r.err


# --- a workspace below the repository top ----------------------------------------------------------------


def test_workspace_in_a_subfolder_gets_its_own_floor_and_anchored_globs(repo: Any, cli: Any) -> None:
    repo.commit(files={
        "vault/tropo.toml": TROPO,
        # The `!` line tries to reopen the workspace's floor; it cannot.
        "vault/.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**", "*.wip.md", "!memory/mem-x.md"]',
        "vault/hub.md": "# Hub\n[[mem-x]] [[hb-x]] [[draft-x]] [[idea]]\n",
        "vault/notes/idea.md": "# Idea\n",
        "vault/memory/mem-x.md": f"# {CANARY}-workspace-memory\n",
        "vault/heartbeat-reports/hb-x.md": f"# {CANARY}-workspace-heartbeat\n",
        "vault/drafts/draft-x.md": f"# {CANARY}-workspace-config\n",
        "vault/notes/w.wip.md": f"# {CANARY}-unanchored\n",
        "drafts/top-level-draft.md": "# outside the workspace: not a note of it\n",
    })
    for source in ({}, {"rev": "HEAD"}, {"staged": True}):
        snap, texts = snap_of(repo.path / "vault", **source)
        assert {n.id for n in snap.nodes} == {"hub", "idea"} and snap.private_count == 4
        assert_no_canary(*texts)
    r = cli("privacy", "explain", "memory/mem-x.md", "drafts/draft-x.md", "notes/w.wip.md", "notes/idea.md",
            "../drafts/top-level-draft.md", cwd=repo.path / "vault")
    assert r.out.splitlines() == [
        "private  vault/memory/mem-x.md  (floor: memory/** (workspace vault/))",
        "private  vault/drafts/draft-x.md  (config: drafts/** (in vault/.vivary/memory.toml))",
        "private  vault/notes/w.wip.md  (config: *.wip.md (in vault/.vivary/memory.toml))",
        "public   vault/notes/idea.md",
        "public   drafts/top-level-draft.md",
    ]
