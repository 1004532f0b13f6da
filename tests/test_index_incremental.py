"""`git vivary index --yes` after edits: it renders only the packets whose inputs changed, patches the BM25
index instead of rebuilding it, loads the model only when something is to be embedded, and leaves exactly
the index a from-scratch run of the same tree leaves. Real model, real hnswlib, real Git."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import threading
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import git, run_git_vivary
from test_memory_local import CANARY, MEMORY, TROPO
from test_memory_vectors import clone, publish

from vivary_git.memory.local import embed, runtime
from vivary_git.memory.local import index as local_index
from vivary_git.memory.local.embed import EmbedderError, embedder_status
from vivary_git.memory.local.files import Entries, VectorMeta
from vivary_git.memory.local.provider import LocalMemory

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
    """The embedders this process loaded for an index run (`runtime._load_embedder`, wrapped)."""
    names: list[str] = []
    real = runtime._load_embedder

    def counting(name: str, **kwargs: Any) -> Any:
        names.append(name)
        return real(name, **kwargs)

    monkeypatch.setattr(runtime, "_load_embedder", counting)
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
    assert (state_dir(ws.path) / local_index.PACKETS).is_file()

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
        msgspec.msgpack.decode((where / local_index.PACKETS).read_bytes(), type=local_index.PacketKeys).pairs,
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


@pytest.mark.parametrize("damage", ["truncated", "altered", "not hex", "foreign"])
def test_a_damaged_packet_cache_is_named_and_every_packet_rendered_again(
        ws: Any, cli: Any, tmp_path: Path, rendered: list[str], damage: str) -> None:
    index(cli, ws.path)
    path = state_dir(ws.path) / local_index.PACKETS
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "altered":  # another digest for a key, the file's own sha256 left as it was
        found = msgspec.msgpack.decode(data, type=local_index.PacketKeys)
        pairs = msgspec.msgpack.decode(found.pairs, type=list[tuple[str, str]])
        pairs[0] = (pairs[0][0], pairs[1][1])
        path.write_bytes(msgspec.msgpack.encode(local_index.PacketKeys(
            format=found.format, sha256=found.sha256, pairs=msgspec.Raw(msgspec.msgpack.encode(pairs)))))
    elif damage == "not hex":  # a digest that is not one, under a sha256 that matches the list
        found = msgspec.msgpack.decode(data, type=local_index.PacketKeys)
        pairs = msgspec.msgpack.decode(found.pairs, type=list[tuple[str, str]])
        pairs[0] = (pairs[0][0], pairs[0][1][:63] + "G")
        raw = msgspec.msgpack.encode(pairs)
        path.write_bytes(msgspec.msgpack.encode(local_index.PacketKeys(
            format=found.format, sha256=hashlib.sha256(raw).hexdigest(), pairs=msgspec.Raw(raw))))
    else:
        path.write_bytes(msgspec.msgpack.encode({"format": 99, "sha256": "", "pairs": []}))
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil.\n"})
    rendered.clear()
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    assert f"ignored {local_index.PACKETS}" in r.err and "Traceback" not in r.err
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


def test_a_model_is_loaded_only_for_a_note_no_cache_holds(
        ws: Any, cli: Any, tmp_path: Path, model_loads: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # The model costs ~0.4 s and ~260 MiB: a clone that fetched CI's vectors (`sync fetch`) has every one it needs,
    # and so has a checkout back to a tree indexed before; an edit loads it to embed that note alone.
    index(cli, ws.path)
    other = clone(publish(ws, tmp_path), tmp_path / "clone")
    assert run_git_vivary(["sync", "fetch"], other).returncode == 0
    texts: list[str] = []  # every text this process handed the model
    real = embed._OnnxEmbedder.tokenize

    def tokenize(self: Any, batch: Any) -> Any:
        texts.extend(batch)
        return real(self, batch)

    monkeypatch.setattr(embed._OnnxEmbedder, "tokenize", tokenize)
    model_loads.clear()
    rep = index(cli, other)
    assert (rep["embedded"], rep["fetched"], rep["unchanged"]) == (0, 6, False)
    assert model_loads == [] and texts == []
    assert index(cli, other)["unchanged"] and model_loads == []
    (other / "notes" / "garden.md").write_text(NOTES["notes/garden.md"] + "\nBasil grows in pots on the sill.\n")
    git(other, "commit", "-qam", "basil")
    dry = cli("index", "--dry-run", "--json", cwd=other)
    assert dry.code == 0 and model_loads == [], dry.err  # a dry run looks, and loads nothing
    rep = index(cli, other)
    assert (rep["embedded"], rep["reused"]) == (1, 5) and model_loads == ["minilm-l6-int8"]
    assert len(texts) == 1 and "Basil grows in pots" in texts[0]
    git(other, "revert", "--no-edit", "HEAD")  # back to a tree this folder indexed: its rows are all there
    rep = index(cli, other)
    assert (rep["embedded"], rep["reused"], rep["unchanged"]) == (0, 6, False)
    assert model_loads == ["minilm-l6-int8"] and len(texts) == 1


def test_the_model_an_index_loaded_is_left_for_the_exit(ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Tearing the model's session down costs 0.03-0.1 s after the work is done: the console script leaves it,
    # with the snapshot and packets, for the system to take back at exit (vivary_git/lifetime.py).
    import gc
    import weakref

    from vivary_git import lifetime

    index(cli, ws.path)
    loaded: list[weakref.ref[Any]] = []
    real = runtime._load_embedder

    def load(name: str, **kwargs: Any) -> Any:
        embedder = real(name, **kwargs)
        loaded.append(weakref.ref(embedder))
        return embedder

    monkeypatch.setattr(runtime, "_load_embedder", load)
    monkeypatch.setattr(lifetime, "_kept", [])  # as `cli` starts it
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    assert index(cli, ws.path)["embedded"] == 1
    gc.collect()
    assert len(loaded) == 1 and loaded[0]() is not None


def test_an_index_run_reads_the_last_entries_once(ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Finding the index out of date and then updating it read the same manifest and entries: decoded once.
    index(cli, ws.path)
    decoded: list[type] = []
    real = local_index._decode

    def counting(data: Any, kind: Any, **kwargs: Any) -> Any:
        decoded.append(kind)
        return real(data, kind, **kwargs)

    monkeypatch.setattr(local_index, "_decode", counting)
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    assert index(cli, ws.path)["embedded"] == 1
    assert decoded.count(Entries) == 1


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


def test_the_keyword_index_and_the_graph_are_updated_while_the_model_embeds_the_edits(
        ws: Any, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The model's thread waits, before it embeds, until the run has begun the BM25 update: a run that embedded
    # first and updated the indexes after would leave it waiting until the guard gives up (no speed is timed).
    index(cli, ws.path)
    began = threading.Event()
    seen: list[bool] = []
    real_lexical, real_embed = local_index._IndexBuilder._lexical, local_index.embed_pending

    def lexical(self: Any, *args: Any, **kwargs: Any) -> Any:
        began.set()
        return real_lexical(self, *args, **kwargs)

    def embed(*args: Any, **kwargs: Any) -> Any:
        seen.append(began.wait(timeout=30))
        return real_embed(*args, **kwargs)

    monkeypatch.setattr(local_index._IndexBuilder, "_lexical", lexical)
    monkeypatch.setattr(local_index, "embed_pending", embed)
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    rep = index(cli, ws.path)
    assert seen == [True] and rep["embedded"] == 1
    monkeypatch.undo()
    assert_same_index(ws.path, tmp_path, cli, "fresh")


def test_a_run_whose_embedding_fails_leaves_the_last_index_whole(
        ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing the manifest vouches for is written before the new vectors are in: the BM25 update and the graph,
    # done meanwhile, are dropped with the run, and the last index still answers for its tree.
    index(cli, ws.path)
    where = state_dir(ws.path)
    vouched = {p.name: p.read_bytes() for p in where.iterdir() if p.name != "terms.msgpack"}

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise EmbedderError("the model failed (for the test)")

    monkeypatch.setattr(local_index, "embed_pending", broken)
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 2 and "the model failed (for the test)" in r.err and "Traceback" not in r.err
    assert {p.name: p.read_bytes() for p in where.iterdir() if p.name != "terms.msgpack"} == vouched
    ws.write({"notes/garden.md": NOTES["notes/garden.md"]})
    assert index(cli, ws.path)["unchanged"]
    assert cli("recall", "tomatoes need sun", "--json", cwd=ws.path).code == 0


def test_what_needs_no_new_vector_is_written_while_the_model_embeds_and_put_in_place_after(
        ws: Any, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The entries and the keyword index are written to temporary files while the model embeds, and renamed over
    # the last run's only once every vector is in: the model's thread looks at the folder before it embeds.
    index(cli, ws.path)
    where = state_dir(ws.path)
    last = {name: (where / name).read_bytes() for name in ("entries.msgpack", "lexical.bin")}
    seen: list[tuple[list[str], bool]] = []
    real_lexical, real_embed = local_index._IndexBuilder._lexical, local_index.embed_pending
    staged = threading.Event()

    def lexical(self: Any, *args: Any, **kwargs: Any) -> Any:
        out = real_lexical(self, *args, **kwargs)
        real_stage = self.store.stage

        def stage(name: str, data: Any) -> Any:
            file = real_stage(name, data)
            if name == "lexical.bin":
                staged.set()
            return file

        monkeypatch.setattr(self.store, "stage", stage)
        return out

    def embed(*args: Any, **kwargs: Any) -> Any:
        assert staged.wait(timeout=30)
        temporary = sorted(p.name.split(".")[1] for p in where.iterdir() if p.name.endswith(".tmp"))
        seen.append((temporary, all((where / n).read_bytes() == data for n, data in last.items())))
        return real_embed(*args, **kwargs)

    monkeypatch.setattr(local_index._IndexBuilder, "_lexical", lexical)
    monkeypatch.setattr(local_index, "embed_pending", embed)
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    assert index(cli, ws.path)["embedded"] == 1
    assert seen == [(["entries", "lexical"], True)]
    assert not [p for p in where.iterdir() if p.name.endswith(".tmp")]
    assert all((where / n).read_bytes() != data for n, data in last.items())
    monkeypatch.undo()
    assert_same_index(ws.path, tmp_path, cli, "fresh")


def test_an_index_run_removes_what_a_killed_run_left_and_nothing_else(ws: Any, cli: Any) -> None:
    # A run killed while the model embeds leaves its staged files (temporary names, which no reader looks at);
    # the next run removes those of processes that are gone, never a live writer's or a file not of that form.
    import os
    import subprocess

    index(cli, ws.path)
    where = state_dir(ws.path)
    gone = subprocess.Popen(["true"])
    gone.wait()  # reaped: no process has its PID now (until the system hands it out again, far later)
    left = {
        f".lexical.bin.{gone.pid}.0123abcd.tmp": False,
        f".entries.msgpack.{os.getppid()}.0123abcd.tmp": True,  # a live process's
        ".lexical.bin.notapid.0123abcd.tmp": True,
        f".{gone.pid}.tmp": True,
    }
    for name in left:
        (where / name).write_bytes(b"half a file")
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    assert index(cli, ws.path)["embedded"] == 1
    assert {name: (where / name).exists() for name in left} == left
    assert cli("recall", "tomatoes need sun", "--json", cwd=ws.path).code == 0


def test_recall_reads_the_index_again_when_a_run_replaced_a_file_as_it_read(
        ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # An index run renames its files into place one by one, then the manifest: a recall reading between two
    # renames finds a file the manifest it read does not vouch for. It waits for the index lock and reads again,
    # rather than call a sound index damaged; a file still wrong after that is refused as before.
    from vivary_git.memory import state

    index(cli, ws.path)
    want = cli("recall", "tomatoes need sun", "--json", cwd=ws.path)
    assert want.code == 0
    real = state.LocalStateStore.get
    reads: list[str] = []

    def get(self: Any, name: str) -> bytes | None:
        data = real(self, name)
        if name == "hnsw.bin" and data is not None:
            reads.append(name)
            if len(reads) == 1 or damaged:
                return data[:-1] + bytes([data[-1] ^ 1])  # another version of the file than the manifest's
        return data

    monkeypatch.setattr(state.LocalStateStore, "get", get)
    damaged = False
    got = cli("recall", "tomatoes need sun", "--json", cwd=ws.path)
    assert (got.code, got.out, reads) == (0, want.out, ["hnsw.bin", "hnsw.bin"]), got.err
    damaged = True
    r = cli("recall", "tomatoes need sun", "--json", cwd=ws.path)
    assert r.code == 3 and "hnsw.bin" in r.err and "is missing or damaged" in r.err and "Traceback" not in r.err


def test_embedding_stops_before_its_next_window_once_the_run_is_cancelled() -> None:
    from vivary_git.memory.local.embed import load_embedder

    embedder = load_embedder("minilm-l6-int8")
    runs: list[int] = []
    cancel = threading.Event()

    def ran(n: int) -> None:
        runs.append(n)

    cancel.set()
    with pytest.raises(local_index.EmbeddingCancelled):
        local_index.embed_pending(embedder, ["tomatoes", "basil"], progress=lambda done, total: ran(done),
                                  cancel=cancel)
    assert runs == [0]  # started, and no model run after that
    cancelled = local_index.embed_pending(embedder, ["tomatoes", "basil"], cancel=threading.Event())
    assert cancelled.shape == (2, embedder.dim)


def test_only_the_manifest_and_the_caches_no_digest_vouches_for_are_synced_to_the_disk(
        ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every other state file is vouched for by a digest when it is read (the manifest's, the vector
    # metadata's, the packet cache's own): a killed process loses none of them, and one cut short by a power
    # cut is noticed and rebuilt. (The term cache and the sharing state, shared.msgpack, have no digest.)
    import os

    from vivary_git.memory import state

    index(cli, ws.path)
    synced: list[str] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real(fd)

    monkeypatch.setattr(state.os, "fsync", fsync)
    ws.write({"notes/garden.md": NOTES["notes/garden.md"] + "\nAlso basil, in pots.\n"})
    assert index(cli, ws.path)["embedded"] == 1
    names = sorted(Path(p).name.split(f".{os.getpid()}.")[0].lstrip(".") for p in synced)
    assert names == ["manifest.json", "shared.msgpack", "terms.msgpack"]


def test_every_packet_key_of_a_snapshot_at_once_is_each_nodes_own(ws: Any) -> None:
    from vivary_git import open_workspace
    from vivary_git.memory.snapshot import Packets, packet_key

    memory = LocalMemory(open_workspace(ws.path))
    snap = memory.snapshot()
    assert any(sum(e.source_id == n.id for e in snap.edges) > 1 for n in snap.nodes)  # d1: several, sorted
    want = [packet_key(n, reversed(snap.edges)) for n in snap.nodes]
    assert Packets(memory.ws, snap).keys() == want and len(set(want)) == len(want)


def test_state_read_ahead_hands_over_only_files_still_the_ones_read(tmp_path: Path) -> None:
    # An index run reads its state files (and hashes the large ones) in a thread while the snapshot is built,
    # before it holds the index lock: what it is handed later must be the file as it is then.
    from vivary_git.memory.local.files import ENTRIES, HNSW_FILE, VECTORS, _sha
    from vivary_git.memory.state import LocalStateStore

    store = LocalStateStore(tmp_path / "state")
    for name, data in ((ENTRIES, b"entries 1"), (VECTORS, b"vectors 1"), (HNSW_FILE, b"graph 1")):
        store.put(name, data)
    ahead = local_index._ReadAhead(store)
    vectors = ahead.get(VECTORS)
    assert vectors == b"vectors 1" and ahead.get(VECTORS) is vectors  # read once, ahead
    assert ahead.sha(vectors) == _sha(b"vectors 1") and ahead.sha(b"other") == _sha(b"other")
    store.put(ENTRIES, b"entries 2")  # replaced by another writer after it was read ahead
    assert ahead.get(ENTRIES) == b"entries 2"
    (tmp_path / "state" / HNSW_FILE).unlink()
    assert ahead.get(HNSW_FILE) is None
    ahead.put(VECTORS, b"vectors 2", sync=False)
    assert ahead.get(VECTORS) == b"vectors 2" == store.get(VECTORS)
