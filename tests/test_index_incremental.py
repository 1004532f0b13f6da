"""`git vivary index --yes` after edits: it renders only the packets whose inputs changed, patches the BM25
index instead of rebuilding it, loads the model only when something is to be embedded, and leaves exactly
the index a from-scratch run of the same tree leaves. Real model, real hnswlib, real Git."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import msgspec
import pytest
from test_memory_local import CANARY, MEMORY, TROPO

from vivary_git.memory import local
from vivary_git.memory.embed import embedder_status
from vivary_git.memory.localfiles import Entries, VectorMeta

pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

NOTES = {
    "notes/keys.md": "---\nrelated: [vault]\ntags: [security]\n---\n# Key rotation\n\n"
                     "We rotate the signing keys every ninety days with the [[vault]] service.\n",
    "notes/vault.md": "# Vault\n\nThe vault service stores secrets and issues short-lived credentials.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need six hours of sun and deep watering twice a week.\n",
    "notes/bread.md": "# Sourdough\n\nFeed the starter, fold the dough, bake at a high temperature.\n",
    "notes/plan.md": f"# Quarterly plan\n\n{CANARY}plan rotate the signing keys quarterly, see [[garden]].\n",
    "decisions/d1.md": "---\nrelated: [keys, bread]\n---\n# Use short-lived tokens\n\n"
                       "Accepted: tokens expire after an hour. Bake [[bread]] on Fridays.\n",
    "drafts/secret.md": f"# Draft\n\n{CANARY}draft rotate the signing keys\n",
    "MEMORY.md": f"# Memory\n\n{CANARY}memory\n",
}


@pytest.fixture
def ws(repo: Any) -> Any:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, **NOTES})
    repo.git("add", "-A")
    repo.git("commit", "-qm", "init")
    return repo


@pytest.fixture
def rendered(packets_rendered: list[str]) -> list[str]:
    """The node ids whose packet this process rendered (conftest's `packets_rendered`)."""
    return packets_rendered


@pytest.fixture
def model_loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The embedders this process loaded for an index run (`local._load_embedder`, wrapped)."""
    names: list[str] = []
    real = local._load_embedder

    def counting(name: str, **kwargs: Any) -> Any:
        names.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(local, "_load_embedder", counting)
    return names


def state_dir(path: Path) -> Path:
    found = list((path / ".git" / "vivary" / "memory").glob("vivary-*"))
    assert len(found) == 1, found
    return found[0]


def index(cli: Any, path: Path, *args: str) -> dict[str, Any]:
    r = cli("index", "--yes", "--json", *args, cwd=path)
    assert r.code == 0, r.err
    out: dict[str, Any] = r.json()
    return out


def index_state(path: Path) -> dict[str, Any]:
    """What an index holds, independent of how its rows happen to be numbered: the nodes in order with their
    packet digests, the BM25 index and term counts (bytes), each node's vector, the HNSW graph's vector for
    each node and how many of its elements are live, and the manifest minus what names the folder or the
    HNSW file's bytes."""
    import hnswlib
    import numpy as np

    where = state_dir(path)
    manifest = json.loads((where / "manifest.json").read_bytes())
    entries = msgspec.msgpack.decode((where / "entries.msgpack").read_bytes(), type=Entries)
    meta = msgspec.msgpack.decode((where / "vectors.msgpack").read_bytes(), type=VectorMeta)
    rows = np.frombuffer((where / "vectors.f32").read_bytes(), dtype="<f4").reshape(len(meta.digests), meta.dim)
    for e in entries.entries:
        assert meta.digests[e.label] == e.digest  # the label is the vector cache's row of this packet
    graph: Any = hnswlib.Index(space="ip", dim=meta.dim)
    graph.load_index(str(where / "hnsw.bin"))
    live = manifest["hnsw"]["elements"] - manifest["hnsw"]["deleted"]
    assert graph.get_current_count() == manifest["hnsw"]["elements"]
    for key in ("dataset", "hnsw"):
        del manifest[key]
    del manifest["files"]["hnsw.bin"], manifest["files"]["entries.msgpack"]
    return {
        "manifest": manifest,
        "nodes": [(e.node_id, e.digest) for e in entries.entries],
        "lexical": (where / "lexical.bin").read_bytes(),
        "terms": (where / "terms.msgpack").read_bytes(),
        "vectors": {e.node_id: rows[e.label].copy() for e in entries.entries},
        "graph": {e.node_id: np.asarray(graph.get_items([e.label]), dtype=np.float32)[0] for e in entries.entries},
        "live": live,
    }


def assert_same_index(path: Path, tmp_path: Path, cli: Any, name: str) -> None:
    """The incremental index of `path` is the one a from-scratch index of the same files gives."""
    import numpy as np

    fresh = tmp_path / name
    shutil.copytree(path, fresh, symlinks=True)
    shutil.rmtree(fresh / ".git" / "vivary" / "memory")
    rep = index(cli, fresh)
    assert not rep["unchanged"] and rep["reused"] == 0
    got, want = index_state(path), index_state(fresh)
    assert got["manifest"] == want["manifest"]
    assert got["nodes"] == want["nodes"]
    assert got["lexical"] == want["lexical"]  # byte for byte
    assert got["terms"] == want["terms"]
    assert got["live"] == want["live"] == len(want["nodes"])
    assert got["vectors"].keys() == want["vectors"].keys() == got["graph"].keys()
    for node, vector in want["vectors"].items():
        # The model's vectors of the same text, embedded in other batches: the same to float precision
        # (tests/test_index_embedding.py); the HNSW graph holds exactly the vector cache's row.
        assert np.abs(got["vectors"][node] - vector).max() < 1e-5, node
        assert np.array_equal(got["graph"][node], got["vectors"][node]), node


def test_incremental_index_equals_a_fresh_one_after_edits_renames_deletions_and_a_note_turning_private(
        ws: Any, cli: Any, tmp_path: Path, rendered: list[str]) -> None:
    first = index(cli, ws.path)
    assert first["embedded"] == 6 and sorted(rendered) == ["bread", "d1", "garden", "keys", "plan", "vault"]
    assert (state_dir(ws.path) / local.PACKETS).is_file()

    # An edit of one note's body: only its packet is rendered again.
    rendered.clear()
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    rep = index(cli, ws.path)
    assert (rep["embedded"], rep["reused"]) == (1, 5) and rendered == ["garden"]
    assert_same_index(ws.path, tmp_path, cli, "fresh-edit")

    # A rename: the note's id and path change, and so do the edges of the notes that link to it (`bread` no
    # longer resolves). Nothing else is rendered.
    rendered.clear()
    ws.git("mv", "notes/bread.md", "notes/baking.md")
    rep = index(cli, ws.path)
    assert sorted(set(rendered)) == ["baking", "d1"]
    assert_same_index(ws.path, tmp_path, cli, "fresh-rename")

    # A deletion: `vault` goes, and `keys`, which linked to it, is rendered again without that edge.
    rendered.clear()
    ws.git("rm", "-q", "notes/vault.md")
    rep = index(cli, ws.path)
    assert rep["removed"] == 1 and sorted(set(rendered)) == ["keys"]
    assert_same_index(ws.path, tmp_path, cli, "fresh-delete")

    # A note turning private: it leaves the index, and no trace of it (text, vector, packet digest or key)
    # stays in any file of the state folder.
    where = state_dir(ws.path)
    before = {node: digest for node, digest in index_state(ws.path)["nodes"]}
    keys_before = msgspec.msgpack.decode(
        msgspec.msgpack.decode((where / local.PACKETS).read_bytes(), type=local.PacketKeys).pairs,
        type=list[tuple[str, str]])
    plan_key = next(k for k, d in keys_before if d == before["plan"])
    rendered.clear()
    ws.write({".vivary/memory.toml": MEMORY.replace('["drafts/**"]', '["drafts/**", "notes/plan.md"]')})
    rep = index(cli, ws.path)
    assert rep["removed"] == 1 and "plan" not in rendered
    for p in where.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert CANARY.encode() not in data.lower(), p
            for trace in (before["plan"], plan_key):
                assert trace.encode() not in data and bytes.fromhex(trace) not in data, p
    assert_same_index(ws.path, tmp_path, cli, "fresh-private")

    # A new note, and nothing else: only it is rendered.
    rendered.clear()
    ws.write({"notes/new.md": "# Compost\n\nTurn the heap every week.\n"})
    rep = index(cli, ws.path)
    assert rep["embedded"] == 1 and rendered == ["new"]
    assert_same_index(ws.path, tmp_path, cli, "fresh-add")


@pytest.mark.parametrize("damage", ["truncated", "altered", "foreign"])
def test_a_damaged_packet_cache_is_named_and_every_packet_rendered_again(
        ws: Any, cli: Any, tmp_path: Path, rendered: list[str], damage: str) -> None:
    index(cli, ws.path)
    path = state_dir(ws.path) / local.PACKETS
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "altered":  # another digest for a key, the file's own sha256 left as it was
        found = msgspec.msgpack.decode(data, type=local.PacketKeys)
        pairs = msgspec.msgpack.decode(found.pairs, type=list[tuple[str, str]])
        pairs[0] = (pairs[0][0], pairs[1][1])
        path.write_bytes(msgspec.msgpack.encode(local.PacketKeys(
            format=found.format, sha256=found.sha256, pairs=msgspec.Raw(msgspec.msgpack.encode(pairs)))))
    else:
        path.write_bytes(msgspec.msgpack.encode({"format": 99, "sha256": "", "pairs": []}))
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil.\n"})
    rendered.clear()
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert f"ignored {local.PACKETS}" in r.err and "Traceback" not in r.err
    assert sorted(rendered) == ["bread", "d1", "garden", "keys", "plan", "vault"]
    assert r.json()["embedded"] == 1
    assert_same_index(ws.path, tmp_path, cli, "fresh")


@pytest.mark.parametrize("damage", ["lexical", "terms"])
def test_a_damaged_lexical_index_or_term_cache_is_rebuilt_the_same(
        ws: Any, cli: Any, tmp_path: Path, damage: str) -> None:
    index(cli, ws.path)
    where = state_dir(ws.path)
    name = {"lexical": "lexical.bin", "terms": "terms.msgpack"}[damage]
    data = (where / name).read_bytes()
    (where / name).write_bytes(data[:-7])
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil.\n"})
    index(cli, ws.path)
    if damage == "lexical":
        assert_same_index(ws.path, tmp_path, cli, "fresh")
    else:
        # The term cache holds what this run tokenised; the BM25 index is the fresh one's all the same.
        got = index_state(ws.path)
        fresh = tmp_path / "fresh"
        shutil.copytree(ws.path, fresh, symlinks=True)
        shutil.rmtree(fresh / ".git" / "vivary" / "memory")
        index(cli, fresh)
        assert got["lexical"] == index_state(fresh)["lexical"]


def test_an_up_to_date_index_loads_no_model_and_records_after_a_commit_rendering_only_the_edits(
        ws: Any, cli: Any, rendered: list[str], model_loads: list[str]) -> None:
    first = index(cli, ws.path)  # the working tree is HEAD's: its vectors are recorded
    assert (first["embedded"], first["recorded"]) == (6, 6) and model_loads == ["minilm-l6-int8"]
    model_loads.clear()
    assert index(cli, ws.path)["unchanged"] and model_loads == []

    # The post-commit path: the edit was indexed from the working tree (not recorded: not committed), then
    # committed; `index --rev HEAD` finds the index up to date (the same tree) and records the edited note's
    # vector: no model loaded, no packet rendered (its vector key was remembered when it was embedded).
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil.\n"})
    rep = index(cli, ws.path)
    assert (rep["embedded"], rep["recorded"]) == (1, 0) and model_loads == ["minilm-l6-int8"]
    ws.git("commit", "-qam", "basil")
    model_loads.clear()
    rendered.clear()
    rep = index(cli, ws.path, "--rev", "HEAD")
    assert rep["unchanged"] and (rep["embedded"], rep["recorded"]) == (0, 1)
    assert model_loads == [] and rendered == []


def test_a_missing_runtime_is_named_even_when_the_index_is_up_to_date(
        ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    index(cli, ws.path)
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name.split(".")[0] == "onnxruntime" else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 2 and "pip install 'vivary-git[embed]'" in r.err and "Traceback" not in r.err


def test_one_run_that_embeds_removes_and_adds_equals_a_fresh_index_and_keeps_no_trace_of_the_private_note(
        ws: Any, cli: Any, tmp_path: Path) -> None:
    # An edit, a new note and a note turning private in one run (embedding, updating the keyword index and
    # removing a note at once) leave exactly the fresh index, and nothing of the private note.
    index(cli, ws.path)
    where = state_dir(ws.path)
    before = dict(index_state(ws.path)["nodes"])
    ws.write({
        "notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n",
        "notes/new.md": "# Compost\n\nTurn the heap every week.\n",
        ".vivary/memory.toml": MEMORY.replace('["drafts/**"]', '["drafts/**", "notes/plan.md"]'),
    })
    rep = index(cli, ws.path)
    assert (rep["embedded"], rep["removed"]) == (2, 1)
    for p in where.rglob("*"):
        if p.is_file():
            data = p.read_bytes()
            assert CANARY.encode() not in data.lower(), p
            assert before["plan"].encode() not in data and bytes.fromhex(before["plan"]) not in data, p
    assert_same_index(ws.path, tmp_path, cli, "fresh")
