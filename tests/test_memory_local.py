"""vivary-local end to end: real model, real hnswlib, real Git. Approval, incremental index, stale gating,
forget, privacy canaries, no network, missing extra, damaged state."""

from __future__ import annotations

import importlib.util
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from vivary_git import open_workspace
from vivary_git.memory.local import files
from vivary_git.memory.local.embed import embedder_status
from vivary_git.memory.local.provider import LocalMemory

# Skipped only without the model/runtime; snowballstemmer is deliberately not checked, so an [embed] extra
# that forgets it fails here instead of silently skipping the suite.
pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)

TROPO = """version = 1

[base]
derive = ["id", "title"]
allow_untyped = true
optional = { related = "ref-list", tags = "string-list" }

[types.decision]
folder = "decisions"
optional = { related = "ref-list" }
"""
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.privacy]\nprivate_paths = ["drafts/**"]\n'
CANARY = "zqxcanary"  # one token: survives lower-casing and stemming unchanged, so a scan finds any copy of it

PUBLIC = {
    "notes/keys.md": "---\nrelated: [vault]\ntags: [security]\n---\n# Key rotation\n\n"
                     "We rotate the signing keys every ninety days with the vault service.\n",
    "notes/vault.md": "# Vault\n\nThe vault service stores secrets and issues short-lived credentials.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need six hours of sun and deep watering twice a week.\n",
    "notes/bread.md": "# Sourdough\n\nFeed the starter, fold the dough, bake at a high temperature.\n",
    "decisions/d1.md": "---\nrelated: [keys]\n---\n# Use short-lived tokens\n\n"
                       "Accepted: tokens expire after an hour.\n",
}
PRIVATE = {
    "USER.md": f"# User\n\n{CANARY}user rotate keys vault\n",
    "MEMORY.md": f"# Memory\n\n{CANARY}memory rotate keys\n",
    "memory/m.md": f"# M\n\n{CANARY}memdir signing keys\n",
    "drafts/secret-plan.md": f"# Plan\n\n{CANARY}draft rotate the signing keys\n",
    "ignored/hidden.md": f"# Hidden\n\n{CANARY}ignored tomatoes\n",
}


@pytest.fixture
def ws(repo: Any) -> Any:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, ".gitignore": "ignored/\n", **PUBLIC, **PRIVATE})
    repo.git("add", "-A")
    repo.git("add", "-f", "ignored/hidden.md")  # force-added but ignored: stays private
    repo.git("commit", "-qm", "init")
    return repo


def state_dir(path: Path) -> Path:
    found = list((path / ".git" / "vivary" / "memory").glob("vivary-*"))
    assert len(found) <= 1
    return found[0] if found else path / ".git" / "vivary" / "memory" / "none"


def recall(cli: Any, path: Path, *args: str) -> Any:
    r = cli("recall", *args, "--json", cwd=path)
    assert r.code == 0, r.err
    return r.json()


def test_index_needs_approval_and_writes_nothing_without_it(ws: Any, cli: Any) -> None:
    r = cli("index", cwd=ws.path)
    assert r.code == 3
    assert "git vivary index --yes" in r.err and "Traceback" not in r.err
    assert not state_dir(ws.path).exists()


def test_disabled_memory_is_a_config_error(repo: Any, cli: Any) -> None:
    repo.commit(files={"tropo.toml": TROPO, "a.md": "# A\n"})
    for args in (("index", "--yes"), ("recall", "anything")):
        r = cli(*args, cwd=repo.path)
        assert r.code == 2, args
        assert "enabled = true" in r.err and "vivary-local" in r.err
    assert cli("index", "--auto", cwd=repo.path).code == 0  # the post-commit path stays silent
    assert not (repo.path / ".git" / "vivary" / "memory").exists()



def test_a_command_refused_because_memory_is_off_leaves_no_state(repo: Any, cli: Any) -> None:
    """Reading the working tree made `.git/vivary/tmp` for its scratch index and left it, and `query --mode
    semantic` (or `--edge`) built and cached the graph before it found memory off: a command that only reads and
    refuses leaves `.git/vivary` as it was (here: absent). A command that reads the graph keeps its caches there,
    but no scratch folder."""
    repo.commit(files={"tropo.toml": TROPO, "a.md": "---\nid: a\n---\n# A\n"})
    vivary = repo.path / ".git" / "vivary"
    for args in (("recall", "anything"), ("recall", "--edge", "related:a", "anything"),
                 ("query", "--mode", "semantic", "anything"), ("query", "--mode", "hybrid", "--edge", "related:a", "x"),
                 ("index", "--yes"), ("index", "--auto")):
        r = cli(*args, cwd=repo.path)
        assert r.code == (0 if "--auto" in args else 2), (args, r.err)
        assert not vivary.exists(), (args, sorted(p.name for p in vivary.iterdir()))
    for args in (("graph",), ("query", "A"), ("find", "A"), ("blast", "a"), ("doctor",), ("cache", "status")):
        assert cli(*args, cwd=repo.path).code in (0, 1), args
        assert not (vivary / "tmp").exists(), args

def test_stale_gating_and_incremental_index(ws: Any, cli: Any) -> None:
    r = cli("recall", "rotate keys", cwd=ws.path)
    assert r.code == 3 and "git vivary index --yes" in r.err  # no index yet

    first = cli("index", "--yes", "--json", cwd=ws.path)
    assert first.code == 0, first.err
    rep = first.json()
    assert (rep["indexed"], rep["embedded"], rep["reused"], rep["rebuilt"]) == (len(PUBLIC), len(PUBLIC), 0, True)
    assert rep["private"] == len(PRIVATE)

    hits = recall(cli, ws.path, "how often are signing keys rotated?")
    assert hits[0]["node_id"] == "keys"
    assert set(hits[0]) == {"node_id", "type", "path", "score", "reason", "source", "edge_context", "provider"}
    assert hits[0]["provider"] == "vivary-local" and hits[0]["path"] == "notes/keys.md"
    assert {"source_id": "keys", "field": "related", "target_id": "vault"} in hits[0]["edge_context"]

    # An unchanged snapshot is not re-indexed.
    again = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert again["unchanged"] and again["embedded"] == 0

    # Edit one note: recall refuses until the index is updated, and only that note is embedded again.
    ws.write({"notes/garden.md": "# Garden\n\nTomatoes need sun; basil likes the same bed.\n"})
    stale = cli("recall", "tomatoes", cwd=ws.path)
    # (words from the message itself: the test's temp folder name, in the path, holds "stale" too)
    assert stale.code == 3 and "the memory index is stale: it was built from a different snapshot" in stale.err
    assert "run `git vivary index --yes` to update it" in stale.err
    upd = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert (upd["embedded"], upd["reused"], upd["rebuilt"], upd["indexed"]) == (1, len(PUBLIC) - 1, False, len(PUBLIC))
    assert recall(cli, ws.path, "basil")[0]["node_id"] == "garden"

    # The committed tree is what --rev reads: its snapshot differs from the indexed working tree's, but each of
    # its notes has a vector (HEAD's garden note was embedded by the first index), so it is answered from them.
    assert recall(cli, ws.path, "tomatoes", "--rev", "HEAD")[0]["node_id"] == "garden"


def test_deleted_nodes_are_never_returned(ws: Any, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    assert recall(cli, ws.path, "sourdough starter")[0]["node_id"] == "bread"
    (ws.path / "notes" / "bread.md").unlink()
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert rep["removed"] == 1 and rep["indexed"] == len(PUBLIC) - 1
    hits = recall(cli, ws.path, "sourdough starter", "--k", "250")
    assert "bread" not in {h["node_id"] for h in hits} and len(hits) == len(PUBLIC) - 1

    # Whatever the state holds, a node missing from the current snapshot is dropped (the last filter).
    session = LocalMemory(open_workspace(ws.path)).open()
    del session._nodes["vault"]
    assert "vault" not in {h.node_id for h in session.recall("vault secrets", k=10)}


def test_forget_removes_everything(ws: Any, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    assert (where / "manifest.json").is_file()
    r = cli("forget", cwd=ws.path)
    assert r.code == 3 and "git vivary forget --yes" in r.err and where.exists()
    r = cli("forget", "--yes", "--json", cwd=ws.path)
    assert r.code == 0 and r.json()["removed"] is True
    assert not where.exists() and not (ws.path / ".git" / "vivary" / "memory").exists()
    assert cli("recall", "keys", cwd=ws.path).code == 3
    assert cli("forget", "--yes", "--json", cwd=ws.path).json()["removed"] is False


def test_private_notes_never_reach_state_or_output(ws: Any, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    files = [p for p in where.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"manifest.json", "vectors.f32", "hnsw.bin", "lexical.bin", "entries.msgpack"}
    for p in files:
        data = p.read_bytes().lower()
        assert CANARY.encode() not in data, p
        for path in PRIVATE:
            assert path.encode().lower() not in data, (p, path)
    outputs = []
    for query in (CANARY, f"{CANARY}user rotate keys", "secret plan draft", "tomatoes ignored hidden"):
        for mode in ("hybrid", "semantic"):
            r = cli("recall", query, "--json", "--k", "250", "--mode", mode, cwd=ws.path)
            assert r.code == 0, r.err
            outputs.append(r.out + r.err)
            assert {h["path"] for h in r.json()} <= set(PUBLIC)
        t = cli("recall", query, "--k", "250", cwd=ws.path)
        outputs.append(t.out.split("\n", 1)[1] + t.err)  # the first line echoes the query itself
    for text in outputs:
        assert CANARY not in text.lower()
        assert not any(p in text for p in PRIVATE)


def test_no_network(ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    assert cli("index", "--yes", cwd=ws.path).code == 0
    assert recall(cli, ws.path, "vault credentials")[0]["node_id"] == "vault"
    assert cli("query", "vault credentials", "--mode", "hybrid", cwd=ws.path).code == 0


def test_missing_extra_names_the_install(ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.write({"notes/new.md": "# New\n\ntext\n"})
    # Simulate an install without the [embed] extra: find_spec (how both embed.py and runtime.py look for
    # modules without importing them) says hnswlib and onnxruntime are absent. Everything else resolves.
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name.split(".")[0] in ("hnswlib", "onnxruntime") else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    for args in (("index", "--yes"), ("recall", "keys"), ("query", "keys", "--mode", "semantic")):
        r = cli(*args, cwd=ws.path)
        assert r.code == 2, (args, r.err)
        assert "pip install 'vivary-git[embed]'" in r.err and "Traceback" not in r.err
    assert embedder_status().startswith("unavailable")


def test_queries_batch_keeps_order(ws: Any, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    asked = [("b", "bake bread with a starter"), (7, "tomatoes in the garden"), ("a", "signing key rotation"),
             ("z", "vault credentials")]
    batch = tmp_path / "q.jsonl"
    batch.write_text("".join(json.dumps({"id": i, "query": q}) + "\n" for i, q in asked) + "\n")
    r = cli("recall", "--queries", str(batch), "--k", "2", cwd=ws.path)
    assert r.code == 0, r.err
    lines = [json.loads(line) for line in r.out.splitlines()]
    assert [line["id"] for line in lines] == [i for i, _ in asked]
    assert [line["hits"][0]["node_id"] for line in lines] == ["bread", "garden", "keys", "vault"]
    assert all(len(line["hits"]) == 2 for line in lines)
    # One at a time gives the same answers as the batch.
    assert [h["node_id"] for h in recall(cli, ws.path, asked[2][1], "--k", "2")] == \
        [h["node_id"] for h in lines[2]["hits"]]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "query": "ok"}\n{"query": 3}\n')
    r = cli("recall", "--queries", str(bad), cwd=ws.path)
    assert r.code == 2 and "bad.jsonl:2" in r.err
    # An empty question is refused on its line too (it was refused only once the index was read, unnamed).
    empty = tmp_path / "empty.jsonl"
    empty.write_text('{"id": 1, "query": "ok"}\n{"id": 2, "query": " "}\n')
    r = cli("recall", "--queries", str(empty), cwd=ws.path)
    assert r.code == 2 and r.err == (f"git vivary recall: {empty}:2: the query is empty; write the question, or "
                                     "remove that line\n"), r.err


def test_filters_k_and_modes(ws: Any, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    assert cli("recall", "keys", "--k", "0", cwd=ws.path).code == 2
    assert [h["node_id"] for h in recall(cli, ws.path, "tokens", "--type", "decision")] == ["d1"]
    in_notes = recall(cli, ws.path, "anything", "--path", "notes/*")
    assert {h["path"] for h in in_notes} == set(PUBLIC) - {"decisions/d1.md"}
    assert [h["node_id"] for h in recall(cli, ws.path, "anything", "--edge", "related:vault")] == ["keys"]
    # A TARGET is a name as a link writes it (graph.resolve_node), as for query and blast.
    assert [h["node_id"] for h in recall(cli, ws.path, "anything", "--edge", "related:Vault")] == ["keys"]
    sem_edge = cli("query", "anything", "--mode", "semantic", "--edge", "related:Vault", "--json", cwd=ws.path)
    assert [h["node_id"] for h in sem_edge.json()["results"]] == ["keys"], sem_edge.err
    assert cli("recall", "anything", "--edge", "related:Nowhere", cwd=ws.path).code == 2
    assert len(recall(cli, ws.path, "anything", "--k", "1000")) == len(PUBLIC)  # capped at 250, then all there is
    sem = recall(cli, ws.path, "signing keys", "--mode", "semantic")
    assert sem[0]["reason"].startswith("semantic match") and -1.0 <= sem[0]["score"] <= 1.0
    hyb = recall(cli, ws.path, "signing keys")
    assert hyb[0]["reason"].startswith("hybrid:")
    q = cli("query", "signing keys", "--mode", "semantic", "--json", cwd=ws.path)
    assert q.code == 0 and q.json()["mode"] == "semantic" and q.json()["results"][0]["node_id"] == "keys"
    text = cli("query", "signing keys", "--json", cwd=ws.path).json()
    assert text["mode"] == "text" and text["results"][0]["id"] == "keys"  # text mode unchanged
    human = cli("recall", "signing keys", cwd=ws.path)
    assert human.code == 0 and "keys - notes/keys.md" in human.out


def test_damaged_state_is_refused_then_rebuilt(ws: Any, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    hnsw = where / "hnsw.bin"
    hnsw.write_bytes(hnsw.read_bytes()[:-10] + b"0123456789")
    r = cli("recall", "keys", cwd=ws.path)
    assert r.code == 3 and "memory index file hnsw.bin in " in r.err
    assert "is missing or damaged (it does not match the manifest); run `git vivary index --yes`" in r.err
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert rep["rebuilt"] and rep["embedded"] == 0 and not rep["unchanged"]
    assert recall(cli, ws.path, "keys")
    # A damaged vector cache is dropped and every note embedded again; never trusted.
    (where / "vectors.f32").write_bytes(b"\0" * 16)
    ws.write({"notes/garden.md": "# Garden\n\nChanged.\n"})
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    # Every note embedded again, and the HNSW graph rebuilt: its labels were rows of the dropped cache.
    assert rep["embedded"] == len(PUBLIC) and rep["rebuilt"]
    assert [h["node_id"] for h in recall(cli, ws.path, "sourdough starter", "--mode", "semantic", "--k", "1")] \
        == ["bread"]
    # A damaged manifest is not used; the notes' vectors (verified) still answer, as for any tree.
    (where / "manifest.json").write_text("{not json")
    assert [h["node_id"] for h in recall(cli, ws.path, "sourdough starter", "--mode", "semantic", "--k", "1")] \
        == ["bread"]
    (where / "vectors.msgpack").write_bytes(b"\0")
    for kept in (where / "trees").iterdir():  # what that recall assembled is kept too; gone, nothing answers
        (kept / "vectors.f32").write_bytes(b"\0")
    r = cli("recall", "keys", cwd=ws.path)
    assert r.code == 3 and "manifest in " in r.err and "is damaged or from another version, and 5 of 5 note(s)" in r.err


def test_auto_index(ws: Any, cli: Any) -> None:
    r = cli("index", "--auto", cwd=ws.path)
    assert (r.code, r.out, r.err) == (0, "", "") and not state_dir(ws.path).exists()
    ws.commit(files={".vivary/memory.toml": MEMORY + "\n[memory.local]\nauto_index = true\n"})
    # The committed file asks for it; the approval is the user's own Git config (docs/memory.md, section 5).
    r = cli("index", "--auto", cwd=ws.path)
    assert (r.code, r.out) == (0, "") and not state_dir(ws.path).exists()
    assert "not approved in this clone (vivary.autoIndex is not set)" in r.err, r.err
    ws.git("config", "vivary.autoIndex", "true")
    r = cli("index", "--auto", cwd=ws.path)
    assert (r.code, r.out) == (0, "") and (state_dir(ws.path) / "manifest.json").is_file()
    assert recall(cli, ws.path, "vault")
    # auto_index counts as approval for a plain `index` too, which a person types.
    ws.git("config", "--unset", "vivary.autoIndex")
    ws.write({"notes/vault.md": "# Vault\n\nNow with audit logs.\n"})
    assert cli("index", cwd=ws.path).code == 0


def test_fresh_process(ws: Any) -> None:
    from conftest import run_git_vivary

    assert run_git_vivary(["index", "--yes"], ws.path).returncode == 0
    proc = run_git_vivary(["recall", "vault", "--json"], ws.path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)[0]["node_id"] == "vault"
    proc = run_git_vivary(["recall", "--queries", "-"], ws.path, input='{"id": 1, "query": "garden"}\n')
    assert proc.returncode == 0 and json.loads(proc.stdout)["hits"][0]["node_id"] == "garden"
    # A refusal ends the process while the model may still be loading in its thread: one clean line,
    # no crash in onnxruntime's teardown.
    ws.write({"notes/garden.md": "# Garden\n\nChanged.\n"})
    proc = run_git_vivary(["recall", "garden"], ws.path)
    assert proc.returncode == 3 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and "the memory index is stale:" in proc.stderr, proc.stderr


def test_library_api(ws: Any) -> None:
    mem = LocalMemory(open_workspace(ws.path))
    rep = mem.index(approved=True)
    assert rep.indexed == len(PUBLIC)
    manifest = mem.manifest()
    assert manifest is not None and manifest.fingerprint == rep.fingerprint
    assert manifest.hnsw.m == files.HNSW_M and manifest.hnsw.ef_construction == files.HNSW_EF_CONSTRUCTION
    hits = mem.recall("vault", k=2)
    assert len(hits) == 2 and hits[0].node_id == "vault"
    assert mem.forget(approved=True).removed


def test_many_edits_compact_the_cache_and_rebuild_the_graph(ws: Any, cli: Any) -> None:
    import msgspec

    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.write({"notes/garden.md": "# Garden\n\nPeppers.\n", "notes/bread.md": "# Bread\n\nRye loaves.\n",
              "notes/vault.md": "# Vault\n\nAudit logs for every secret read.\n"})
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert (rep["embedded"], rep["rebuilt"]) == (3, True)  # 3 of 8 cached vectors dead: compacted
    meta = msgspec.msgpack.decode((state_dir(ws.path) / "vectors.msgpack").read_bytes(), type=files.VectorMeta)
    assert len(meta.digests) == len(PUBLIC)
    assert [h["node_id"] for h in recall(cli, ws.path, "rye", "--mode", "semantic", "--k", "1")] == ["bread"]
    assert [h["node_id"] for h in recall(cli, ws.path, "audit logs", "--mode", "semantic", "--k", "1")] == ["vault"]


def _run(args: list[str], cwd: Path) -> Any:
    """`git vivary ARGS` in a subprocess, as an agent runs it: a crash in a native library shows as a signal
    here. The timeout only turns a hang into a failure; it is not a speed target."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["git", "vivary", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          timeout=600, check=False)


@pytest.mark.parametrize("edit", [
    {"dim": -1}, {"dim": 3}, {"dim": 100_000_000}, {"dim": 10**30}, {"dim": 1e30},
    {"hnsw": {"elements": 10**30}}, {"hnsw": {"elements": -1}}, {"hnsw": {"m": 0}}, {"hnsw": {"deleted": 99}},
    {"nodes": -5}, {"fusion": [1e30, 0.45, 60, 200]},
])
def test_manifest_values_are_validated_before_they_reach_hnswlib(ws: Any, cli: Any, edit: dict[str, Any]) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    manifest = state_dir(ws.path) / "manifest.json"
    data = json.loads(manifest.read_text())
    for key, value in edit.items():
        if isinstance(value, dict):
            data[key].update(value)
        else:
            data[key] = value
    manifest.write_text(json.dumps(data))
    # Nothing of it reaches hnswlib. A manifest out of bounds is as good as none: recall assembles the
    # tree's index from its notes' vectors (memory/local/assemble.py), each one checked. One in bounds that
    # disagrees with hnsw.bin is damage: refused in one line.
    r = _run(["recall", "vault", "--json"], ws.path)
    assert "Traceback" not in r.stderr and r.returncode in (0, 3), (edit, r.returncode, r.stdout, r.stderr)
    if r.returncode == 0:
        assert json.loads(r.stdout)[0]["node_id"] == "vault", r.stdout
    else:
        assert r.stderr.count("\n") == 1 and "damaged" in r.stderr and "git vivary index --yes" in r.stderr, r.stderr
    rep = _run(["index", "--yes", "--json"], ws.path)
    assert rep.returncode == 0 and json.loads(rep.stdout)["rebuilt"], rep.stderr
    assert recall(cli, ws.path, "vault")[0]["node_id"] == "vault"


def test_hnsw_file_that_disagrees_with_the_manifest_is_refused(ws: Any, cli: Any) -> None:
    """A consistent forgery: hnsw.bin built for another dimension, its digest and size in the manifest."""
    import hashlib
    import struct

    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    hnsw = bytearray((where / "hnsw.bin").read_bytes())
    label_offset = struct.unpack_from("<Q", hnsw, 32)[0]
    struct.pack_into("<Q", hnsw, 32, label_offset + 4 * 1000)  # claims 1,000 more floats per vector
    (where / "hnsw.bin").write_bytes(bytes(hnsw))
    data = json.loads((where / "manifest.json").read_text())
    data["files"]["hnsw.bin"] = {"sha256": hashlib.sha256(hnsw).hexdigest(), "size": len(hnsw)}
    (where / "manifest.json").write_text(json.dumps(data))
    r = _run(["recall", "vault", "--json"], ws.path)
    assert r.returncode == 3 and r.stderr.count("\n") == 1 and "hnsw.bin" in r.stderr, r.stderr


def test_state_directories_replaced_by_files_are_clear_errors(ws: Any, cli: Any) -> None:
    import shutil

    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    shutil.rmtree(where)
    where.write_text("not a folder\n")
    for args in (["recall", "vault"], ["index", "--yes"]):
        r = _run(args, ws.path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1 and f": {where}: a file" in r.stderr, (args, r.stderr)
    where.unlink()
    # `.git/vivary/memory` itself: recall and forget said "no index yet" (exit 3 and 0), as if it held none.
    memory = where.parent
    memory.rmdir()
    memory.write_text("not a folder\n")
    for args in (["recall", "vault"], ["query", "--mode", "semantic", "vault"], ["index", "--yes"],
                 ["forget", "--yes"]):
        r = _run(args, ws.path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, (args, r.stderr)
        assert f": {memory}: a file is in the place of a folder" in r.stderr and "remove it" in r.stderr, r.stderr
    assert memory.read_text() == "not a folder\n"  # named, never removed by a command
    memory.unlink()
    vivary = ws.path / ".git" / "vivary"
    shutil.rmtree(vivary)
    vivary.write_text("not a folder\n")
    for args in (["index", "--yes"], ["check"], ["recall", "vault"]):
        r = _run(args, ws.path)
        assert r.returncode in (2, 3) and r.stderr.count("\n") == 1 and ".git/vivary" in r.stderr, (args, r.stderr)
    vivary.unlink()
    (vivary / "tmp").parent.mkdir()
    (vivary / "tmp").write_text("not a folder\n")
    r = _run(["check"], ws.path)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and ".git/vivary/tmp" in r.stderr, r.stderr


def test_state_files_that_are_fifos_are_damage_not_a_hang(ws: Any, cli: Any) -> None:
    import os

    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    for name in ("manifest.json", "hnsw.bin"):
        saved = (where / name).read_bytes()
        (where / name).unlink()
        os.mkfifo(where / name)
        r = _run(["recall", "vault", "--json"], ws.path)
        # No hang. A manifest that cannot be read is none: the index is assembled from the vectors.
        if name == "manifest.json" and r.returncode == 0:
            assert json.loads(r.stdout)[0]["node_id"] == "vault", r.stdout
        else:
            assert r.returncode == 3 and r.stderr.count("\n") == 1, (name, r.stderr)
        (where / name).unlink()
        (where / name).write_bytes(saved)
    os.mkfifo(where / "vectors.f32.fifo")
    (where / "vectors.f32").unlink()
    os.rename(where / "vectors.f32.fifo", where / "vectors.f32")
    ws.write({"notes/garden.md": "# Garden\n\nBeans.\n"})
    r = _run(["index", "--yes", "--json"], ws.path)
    assert r.returncode == 0 and json.loads(r.stdout)["embedded"] == len(PUBLIC), r.stderr


def test_a_note_made_private_leaves_no_trace_in_the_index_files(ws: Any, cli: Any) -> None:
    """Indexed, then private: the next index removes its vector and text physically, not just marks them."""
    import numpy as np

    secret = "Secret"  # title kept distinct so its packet, and so its vector, is its own
    ws.write({"notes/plan.md": f"# {secret} plan\n\n{CANARY}plan rotate the signing keys quarterly\n"})
    assert cli("index", "--yes", cwd=ws.path).code == 0
    where = state_dir(ws.path)
    session = LocalMemory(open_workspace(ws.path)).open()
    row = next(e.label for e in session._entries if e.node_id == "plan")
    raw = (where / "vectors.f32").read_bytes()
    vector = raw[row * 384 * 4:(row + 1) * 384 * 4]
    assert vector in raw and vector in (where / "hnsw.bin").read_bytes()
    assert CANARY.encode() in (where / "terms.msgpack").read_bytes() + (where / "lexical.bin").read_bytes()

    ws.write({".vivary/memory.toml": MEMORY.replace('["drafts/**"]', '["drafts/**", "notes/plan.md"]')})
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert rep["removed"] == 1 and rep["private"] == len(PRIVATE) + 1
    for p in where.iterdir():
        data = p.read_bytes()
        assert CANARY.encode() not in data.lower(), p
        assert vector not in data, p
        assert b"notes/plan.md" not in data, p
    # Nor a nearby copy: no stored vector is the removed one, whatever the byte alignment.
    stored = np.frombuffer((where / "vectors.f32").read_bytes(), dtype="<f4").reshape(-1, 384)
    assert float((stored @ np.frombuffer(vector, dtype="<f4")).max()) < 0.999
    assert recall(cli, ws.path, "signing keys quarterly")


def test_every_answer_of_a_session_carries_each_hits_edges(ws: Any, cli: Any) -> None:
    """A `recall` answers once, finding its hits' edges in one pass; a long-lived session (the MCP server)
    maps every node's edges on its second batch: each answer has the edges from and to each hit, in
    snapshot order, whichever way they were found."""
    assert cli("index", "--yes", cwd=ws.path).code == 0
    session = LocalMemory(open_workspace(ws.path)).open()
    edges = session.snapshot.edges

    def context(hits: list[Any]) -> list[tuple[str, list[Any]]]:
        return [(h.node_id, h.edge_context) for h in hits]

    answers = [session.recall("how often are signing keys rotated?", k=5) for _ in range(3)]
    many = session.recall_many(["signing keys", "vault", "tomatoes"], k=5)
    for hits in [*answers, *many]:
        assert hits
        for h in hits:
            assert h.edge_context == [e for e in edges if h.node_id in (e.source_id, e.target_id)]
    assert context(answers[0]) == context(answers[1]) == context(answers[2])
    keys = next(h for h in answers[0] if h.node_id == "keys")
    assert [(e.source_id, e.target_id) for e in keys.edge_context] == [("d1", "keys"), ("keys", "vault")]
