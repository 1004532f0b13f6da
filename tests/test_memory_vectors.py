"""The memory index in Git: vectors keyed by content in refs/vivary/cache (memory/local/vectors.py), recall of any
tree from them (memory/local/assemble.py), one index writer at a time (memory/lock.py). Real model, real Git;
model runs are counted by wrapping the embedder's one model call (`_OnnxEmbedder._vectors`), not mocked."""

from __future__ import annotations

import importlib.util
import os
import re
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Repo, git, run_git_vivary
from test_memory_local import MEMORY, PRIVATE, PUBLIC, TROPO
from test_store import objects_reachable

from vivary_git import open_workspace
from vivary_git.git import Repo as GitRepo
from vivary_git.memory.local import embed, vectors
from vivary_git.memory.local.embed import embedder_status
from vivary_git.refnames import CACHE_REF
from vivary_git.store.format import MAX_CHUNK_BYTES
from vivary_git.store.read import Snapshot
from vivary_git.store.write import Changes, _create_commit, _update_tree, write

pytestmark = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)


@pytest.fixture
def model_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many texts each model run of this process embedded."""
    runs: list[int] = []
    real = embed._OnnxEmbedder._vectors

    def counting(self: Any, rows: Any, *options: Any) -> Any:
        runs.append(len(rows))
        return real(self, rows, *options)

    monkeypatch.setattr(embed._OnnxEmbedder, "_vectors", counting)
    return runs


@pytest.fixture
def ws(repo: Repo) -> Repo:
    repo.write({"tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, ".gitignore": "ignored/\n", **PUBLIC, **PRIVATE})
    repo.git("add", "-A")
    repo.git("add", "-f", "ignored/hidden.md")
    repo.git("commit", "-qm", "init")
    return repo


def cache_vectors(path: Path, ref: str = CACHE_REF) -> dict[str, bytes]:
    """Every vector in a cache ref, verified as a reader verifies it."""
    ws = open_workspace(path)
    assert ws.source.repo is not None
    snap = Snapshot.load(ws.source.repo, ref)
    assert snap is not None
    out: dict[str, bytes] = {}
    for chunk in snap.manifest.chunks:
        kind, name = chunk.split("/")
        if kind == vectors.KIND:
            out.update(snap.chunk(kind, name[:2]))
    return out


def keys_of(path: Path, *notes: str, rev: str | None = None, root: str | None = None, every: bool = True,
            ) -> dict[str, str]:
    """The vector key of each named note (a path relative to the workspace) as it is in that tree, private
    ones included: what a leak would be filed under."""
    from vivary_git.memory.local.files import EMBED_FORMAT, embed_text
    from vivary_git.memory.snapshot import MemoryNode, packet

    ws = open_workspace(path, rev=rev, root=root)
    graph = ws.graph()
    model = embed.load_embedder("minilm-l6-int8").model_id
    out = {}
    for n in graph.nodes:
        if n.path in notes:
            node = MemoryNode(id=n.id, type=n.type, path=n.path, title=n.title, blob=n.blob, fields={})
            out[n.path] = vectors.vector_key(model, EMBED_FORMAT, embed_text(packet(node, ws.note(n.blob), [])))
    assert set(out) == set(notes) if every else set(out) <= set(notes), out
    return out


def publish(repo: Repo, tmp_path: Path) -> Path:
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "origin", "main")
    proc = run_git_vivary(["sync", "push"], repo.path)
    assert proc.returncode == 0, proc.stderr
    return origin


def clone(origin: Path, dest: Path, *, trust: str | None = "any") -> Path:
    git(dest.parent, "clone", "-q", "-b", "main", str(origin), str(dest))
    if trust is not None:
        git(dest, "config", "vivary.cacheTrust", trust)
    return dest


# --- 1. embeddings keyed by content, in refs/vivary/cache ----------------------------------------------


def test_quantised_vectors_round_trip_and_bad_values_are_named() -> None:
    import numpy as np

    rng = np.random.default_rng(7)
    rows = rng.standard_normal((50, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    stored = vectors.quantize(rows)
    assert {len(v) for v in stored} == {4 + 384}
    assert all(vectors.value_problem(v) is None for v in stored)
    once = vectors.roundtrip(rows)
    assert np.array_equal(vectors.roundtrip(once), once)  # what every clone uses is stable
    assert float(np.abs((once * rows).sum(axis=1) - 1).max()) < 1e-3  # and close to the model's vector
    good = stored[0]
    scale = good[:4]
    nan = b"\x00\x00\xc0\x7f"
    cases = {
        b"": "bytes, not a scale",
        good + b"\x01": None,  # another size is refused where the dimension is known (decode_many)
        nan + good[4:]: "scale out of range",
        b"\x00\x00\x80\x3f" + good[4:]: "scale out of range",  # 1.0: a vector 127 long
        scale + b"\x80" + good[5:]: "-128",
        scale + b"\x01" * 384: "no component at full scale",
    }
    for value, said in cases.items():
        problem = vectors.value_problem(value)
        assert (problem is None) if said is None else (problem is not None and said in problem), (value[:8], problem)
    decoded, bad = vectors.decode_many([good, good + b"\x01", scale + b"\x7f" * 384], 384)
    assert bad == [1, 2]  # another dimension; the length of no unit vector
    assert np.array_equal(decoded[0], once[0])


def test_decoding_many_vectors_refuses_what_one_value_check_refuses_and_keeps_the_rest_in_place() -> None:
    """`decode_many` checks all values at once; each is refused exactly when `value_problem` (or its length, or
    its norm) refuses it, whatever else the batch holds, and the good ones come back where they were."""
    import numpy as np

    rng = np.random.default_rng(11)
    rows = rng.standard_normal((6, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    rows[5] = 0.0
    rows[5, 3] = -1.0  # its only component at full scale is -127
    stored = vectors.quantize(rows)
    good, scale = stored[0], stored[0][:4]
    assert stored[5][4 + 3:4 + 4] == b"\x81" and b"\x7f" not in stored[5][4:]
    bad_values = [
        b"\x00\x00\xc0\x7f" + good[4:],  # NaN scale
        scale + b"\x80" + good[5:],  # -128 beside components at full scale
        scale + b"\x01" * 384,  # none at full scale
        scale + b"\x7f" * 384,  # no unit vector is that long
        good[:-1],  # another dimension
    ]
    assert all(vectors.value_problem(v) is not None for v in bad_values[:3])
    everything = [stored[0], bad_values[0], stored[1], bad_values[1], stored[2], bad_values[2], stored[3],
                  bad_values[3], stored[4], bad_values[4], stored[5]]
    decoded, bad = vectors.decode_many(everything, 384)
    assert bad == [1, 3, 5, 7, 9]
    once = vectors.roundtrip(rows)
    for at, row in zip([0, 2, 4, 6, 8, 10], range(6), strict=True):
        assert np.array_equal(decoded[at], once[row])
    assert not decoded[bad].any()
    alone, none_bad = vectors.decode_many(stored, 384)
    assert none_bad == [] and alone.dtype == np.float32 and alone.shape == (6, 384)
    assert np.array_equal(alone, once)
    short, bad = vectors.decode_many([stored[0], good[:-1]], 384)  # the only bad one has another length
    assert bad == [1] and short.shape == (2, 384) and np.array_equal(short[0], once[0]) and not short[1].any()


def test_index_records_one_vector_per_public_note_and_none_of_a_private_one(ws: Repo, cli: Any) -> None:
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert (rep["embedded"], rep["recorded"], rep["fetched"]) == (len(PUBLIC), len(PUBLIC), 0)
    stored = cache_vectors(ws.path)
    public = keys_of(ws.path, *PUBLIC)
    private = keys_of(ws.path, *(p for p in PRIVATE))
    assert set(stored) == set(public.values())
    assert not set(private.values()) & set(stored)
    # Keyed by content: the same note anywhere (renamed, in another clone) has the same key; a rename
    # therefore records nothing new and embeds nothing.
    ws.git("mv", "notes/garden.md", "notes/vegetables.md")
    ws.git("commit", "-qm", "rename")
    again = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert (again["embedded"], again["recorded"]) == (0, 0)
    assert set(cache_vectors(ws.path)) == set(public.values())


def test_an_unchanged_index_reads_no_note_and_still_records_what_the_cache_lacks(
        ws: Repo, cli: Any, model_runs: list[int], packets_rendered: list[str]) -> None:
    first = cli("index", "--yes", "--rev", "HEAD", "--json", cwd=ws.path).json()
    assert (first["embedded"], first["recorded"]) == (len(PUBLIC), len(PUBLIC)) and packets_rendered
    packets_rendered.clear()
    again = cli("index", "--yes", "--rev", "HEAD", "--json", cwd=ws.path).json()
    assert again["unchanged"] and (again["embedded"], again["recorded"]) == (0, 0)
    assert packets_rendered == []  # the snapshot's fingerprint says its packets are the indexed ones
    # The shared cache lost its vectors: the unchanged index records them again, the same keys and values,
    # from the vector keys it remembered (still no note rendered, no model run).
    stored = cache_vectors(ws.path)
    ws.git("update-ref", "-d", CACHE_REF)
    model_runs.clear()
    rep = cli("index", "--yes", "--rev", "HEAD", "--json", cwd=ws.path).json()
    assert rep["unchanged"] and (rep["embedded"], rep["recorded"]) == (0, len(PUBLIC))
    assert packets_rendered == [] and model_runs == []
    assert cache_vectors(ws.path) == stored
    assert set(stored) == set(keys_of(ws.path, *PUBLIC).values())


def test_dirty_content_is_not_recorded_until_committed(ws: Repo, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.write({"notes/bread.md": "# Sourdough\n\nRye and spelt.\n"})
    rep = cli("index", "--yes", "--json", cwd=ws.path).json()
    assert (rep["embedded"], rep["recorded"]) == (1, 0)
    ws.git("commit", "-qam", "bread")
    rep = cli("index", "--yes", "--rev", "HEAD", "--json", cwd=ws.path).json()
    assert (rep["embedded"], rep["recorded"]) == (0, 1)  # embedded before, recorded once committed
    assert keys_of(ws.path, "notes/bread.md")["notes/bread.md"] in cache_vectors(ws.path)


@pytest.fixture
def git_questions(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The paths of each privacy decision Git made in this process (`privacy.decide_scoped` asking Git: it
    checks the paths' syntax first, once per decision; an answer taken from the command's memo asks nothing)."""
    from vivary_git import privacy

    asked: list[tuple[str, ...]] = []
    real = privacy._check_paths_syntax

    def spying(paths: Any) -> None:
        asked.append(tuple(paths))
        real(paths)

    monkeypatch.setattr(privacy, "_check_paths_syntax", spying)
    return asked


def test_recording_a_commit_asks_git_about_its_notes_once(ws: Repo, cli: Any, git_questions: list[tuple[str, ...]],
                                                            ) -> None:
    # The post-commit run: its snapshot decides every note of the commit; recording the tree's parses and the
    # new vector needs the very same decision (the same tree, rules and notes), so they take its answer.
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.write({"notes/bread.md": "# Sourdough\n\nRye and spelt.\n"})
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.git("commit", "-qam", "bread")
    git_questions.clear()
    rep = cli("index", "--yes", "--rev", "HEAD", "--json", cwd=ws.path).json()
    assert (rep["embedded"], rep["recorded"]) == (0, 1)
    notes = sorted(p for p in git(ws.path, "ls-files").split("\n") if p.endswith(".md"))
    assert any(sorted(q) == notes for q in git_questions)  # the snapshot's question: every note of the tree
    assert len(git_questions) == len(set(git_questions)), git_questions
    assert keys_of(ws.path, "notes/bread.md")["notes/bread.md"] in cache_vectors(ws.path)


def cache_commits(repo: Repo) -> int:
    return int(repo.git("rev-list", "--count", CACHE_REF))


def test_each_commit_indexed_adds_one_cache_commit_holding_its_tree_and_its_vectors(ws: Repo, cli: Any) -> None:
    # What the post-commit hook runs after each commit. Its tree's parses, facts and summary, then its vectors,
    # were two cache commits: twice the history every fetch of refs/vivary/* carries and `cache gc` walks.
    from vivary_git.commands.hooks import POST_COMMIT
    from vivary_git.store.format import tree_key

    ws.commit(files={".vivary/memory.toml": MEMORY + "\n[memory.local]\nauto_index = true\n"})
    ws.git("config", "vivary.autoIndex", "true")
    assert cli(*POST_COMMIT, cwd=ws.path).code == 0
    assert cache_commits(ws) == 1
    for i in range(3):
        ws.commit(files={f"notes/day{i}.md": f"# Day {i}\n\nPlanted row {i} of beans.\n"})
        assert cli(*POST_COMMIT, cwd=ws.path).code == 0
        assert cache_commits(ws) == i + 2
        head = open_workspace(ws.path, rev="HEAD")
        assert head.source.repo is not None and head.source.tree_id is not None
        snap = Snapshot.load(head.source.repo, CACHE_REF)
        key = tree_key(head.source.tree_id, head.config.digest(), head.source.prefix)
        assert snap is not None and key in snap.manifest.trees
        assert keys_of(ws.path, f"notes/day{i}.md")[f"notes/day{i}.md"] in cache_vectors(ws.path)
        said = ws.git("log", "-1", "--format=%s", CACHE_REF)
        assert said.startswith(f"vivary cache: tree {head.source.tree_id[:12]}, ") and "1 vector(s)" in said, said


def test_an_index_run_that_fails_after_the_graph_still_records_the_tree(ws: Repo, cli: Any) -> None:
    # The tree's recording waits for its vectors; a run that ends before them (here: its lock cannot be taken)
    # writes it as it leaves, as it did when the graph was built.
    from vivary_git.memory.local.provider import LocalMemory

    mem = LocalMemory(open_workspace(ws.path))
    repo = mem.ws.source.repo
    assert repo is not None
    locks = repo.vivary_dir / "locks"
    locks.parent.mkdir(parents=True, exist_ok=True)
    locks.write_text("not a folder\n")
    assert cli("index", "--yes", "--rev", "HEAD", cwd=ws.path).code == 2
    assert cache_commits(ws) == 1
    assert cache_vectors(ws.path) == {}
    snap = Snapshot.load(repo, CACHE_REF)
    assert snap is not None and [s.tree for s in snap.manifest.trees.values()] == [mem.ws.source.tree_id]


def test_a_note_only_the_memory_policy_admits_is_indexed_but_never_recorded(ws: Repo, cli: Any) -> None:
    # respect_gitignore = false admits a committed, git-ignored note to the index; the shared cache keeps
    # ignored files out whatever memory.toml says, so recording decides again instead of taking the answer.
    ws.write({".vivary/memory.toml": MEMORY + "respect_gitignore = false\n"})
    ws.git("commit", "-qam", "admit ignored notes")
    rep = cli("index", "--yes", "--rev", "HEAD", "--json", cwd=ws.path).json()
    assert (rep["embedded"], rep["recorded"]) == (len(PUBLIC) + 1, len(PUBLIC))
    stored = cache_vectors(ws.path)
    assert keys_of(ws.path, "ignored/hidden.md")["ignored/hidden.md"] not in stored
    assert set(stored) == set(keys_of(ws.path, *PUBLIC).values())


@pytest.mark.parametrize("layout", ["top", "subfolder", "root"])
def test_no_private_vector_in_any_layout(repo: Repo, cli: Any, tmp_path: Path, layout: str) -> None:
    from test_record import _private_files

    at = "" if layout == "top" else "vault/"
    files = _private_files(at)
    files[f"{at}.vivary/memory.toml"] = MEMORY.replace('"drafts/**"', '"journal/**"')
    if layout == "root":
        del files["vault/tropo.toml"]
        files[".vivary/memory.toml"] = MEMORY.replace('"drafts/**"', '"vault/elsewhere/**"')
        files["vault/elsewhere/e.md"] = "# PRIVATE-CANARY-enclosing-title\n"
        files["tropo.toml"] = TROPO
    files[".gitignore"] = "drafts/\n"
    repo.write(files)
    repo.git("add", "-A")
    repo.git("add", "-f", f"{at}drafts/plan.md")
    repo.git("commit", "-q", "-m", "canaries")
    root = ["--root", "vault"] if layout == "root" else []
    cwd = repo.path / "vault" if layout == "subfolder" else repo.path
    rep = cli("index", "--yes", "--json", *root, cwd=cwd)
    assert rep.code == 0, rep.err
    assert rep.json()["recorded"] == 1  # public/open.md alone
    stored = cache_vectors(repo.path)
    rel = {p.removeprefix(at): p for p in files if p.endswith((".md", ".markdown")) and "vivary" not in p}
    if layout == "root":
        rel = {p.removeprefix("vault/"): p for p in files
               if p.startswith("vault/") and p.endswith((".md", ".markdown"))}
    keys = keys_of(cwd, *rel, root="vault" if layout == "root" else None, every=False)
    assert len(keys) >= 10  # the notes among them: every kind of private one, and the public one
    assert [p for p, k in keys.items() if k in stored] == ["public/open.md"]
    blob = objects_reachable(repo.path, *git(repo.path, "for-each-ref", "--format=%(refname)", "refs/vivary").split())
    assert b"PUBLIC-MARKER" in blob and b"PRIVATE-CANARY" not in blob
    # recall and its refusals never name a private note either
    r = cli("recall", "PRIVATE-CANARY", "--k", "250", "--json", *root, cwd=cwd)
    assert r.code == 0 and "PRIVATE-CANARY" not in r.out and "PRIVATE" not in r.err


# --- 2. recall from a fetched cache ----------------------------------------------------------------------


def test_fresh_clone_recalls_from_fetched_vectors_embedding_only_the_query(
        ws: Repo, cli: Any, tmp_path: Path, model_runs: list[int]) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    origin = publish(ws, tmp_path)
    other = clone(origin, tmp_path / "clone")
    fetched = run_git_vivary(["sync", "fetch"], other)
    assert fetched.returncode == 0 and f", {len(PUBLIC)} vectors)" in fetched.stdout, fetched.stdout
    model_runs.clear()
    hits = cli("recall", "how often are signing keys rotated?", "--json", cwd=other)
    assert hits.code == 0, hits.err
    assert hits.json()[0]["node_id"] == "keys"
    assert model_runs == [1]  # the query, and not one note
    # The same answer as the clone that embedded the notes.
    mine = cli("recall", "how often are signing keys rotated?", "--json", cwd=ws.path).json()
    assert [h["node_id"] for h in hits.json()] == [h["node_id"] for h in mine]
    # `index` after the fetch embeds nothing: every vector is taken from the cache.
    model_runs.clear()
    rep = cli("index", "--yes", "--json", cwd=other).json()
    assert (rep["embedded"], rep["fetched"], rep["recorded"]) == (0, len(PUBLIC), 0) and model_runs == []
    # ... and only what has no vector yet after an edit.
    (other / "notes" / "vault.md").write_text("# Vault\n\nThe vault also keeps audit logs.\n")
    rep = cli("index", "--yes", "--json", cwd=other).json()
    assert (rep["embedded"], rep["fetched"]) == (1, 0) and sum(model_runs) == 1


def test_a_fresh_clone_builds_the_keyword_index_the_indexing_clone_built(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """The clone that fetched the vectors tokenises the notes itself, in bulk (bm25.build_texts): its keyword
    index is byte for byte the one `index` built note by note, so hybrid recall answers alike, scores and all."""
    from vivary_git.memory.local.provider import LocalMemory

    assert cli("index", "--yes", cwd=ws.path).code == 0
    origin = publish(ws, tmp_path)
    other = clone(origin, tmp_path / "clone")
    assert run_git_vivary(["sync", "fetch"], other).returncode == 0
    for question in ("how often are signing keys rotated?", "tomatoes bread", "vault audit"):
        mine = cli("recall", question, "--json", cwd=ws.path)
        theirs = cli("recall", question, "--json", cwd=other)
        assert mine.code == theirs.code == 0, theirs.err
        assert theirs.json() == mine.json() and mine.json()
    indexed = Path(LocalMemory(open_workspace(ws.path)).store.location) / "lexical.bin"
    assembled = list((Path(LocalMemory(open_workspace(other)).store.location) / "trees").glob("*/lexical.bin"))
    assert len(assembled) == 1 and assembled[0].read_bytes() == indexed.read_bytes()


@pytest.fixture
def forks(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each `parallel.Forked` job of this process went to a child; every job may (no size floor), on
    two workers whatever the machine has."""
    from vivary_git import parallel
    from vivary_git.memory.local import assemble

    monkeypatch.setenv("VIVARY_JOBS", "2")
    monkeypatch.setattr(assemble, "FORK_AT", 0)
    went: list[bool] = []
    real = parallel.Forked.__init__

    def noting(self: Any, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        went.append(self.forked)

    monkeypatch.setattr(parallel.Forked, "__init__", noting)
    return went


def _assembled_lexical(path: Path) -> bytes:
    from vivary_git.memory.local.provider import LocalMemory

    found = list((Path(LocalMemory(open_workspace(path)).store.location) / "trees").glob("*/lexical.bin"))
    assert len(found) == 1, found
    return found[0].read_bytes()


def _damage_a_parse_chunk(path: Path) -> None:
    """Point the clone's refs/vivary/cache at a commit whose first parse chunk no longer matches its manifest."""
    from test_store import _rewrite

    r = GitRepo(path)
    snap = Snapshot.load(r)
    assert snap is not None
    chunk = min(p for p in snap.manifest.chunks if p.startswith("parse/"))
    data = r.repo[snap.tree[chunk].id].data
    _rewrite(path, {chunk: data[:-1] + bytes([data[-1] ^ 1])})


@pytest.mark.parametrize("cache", ["sound", "damaged"])
@pytest.mark.parametrize("child", ["answers", "fails", "fails-counting", "fails-merging"])
def test_a_fresh_clones_first_recall_is_the_same_with_or_without_its_children(
        ws: Repo, cli: Any, tmp_path: Path, forks: list[bool], monkeypatch: pytest.MonkeyPatch, child: str,
        cache: str) -> None:
    """The first recall of a fetched tree reads the notes in one forked child (while it builds the graph),
    which then counts their words, and builds the keyword index in another (while it gathers the vectors)
    from those counts, or from the packets when there are none. Whether the children answer or fail (the
    first one at once or after sending the notes, the second one merging), and whether the fetched cache is
    sound or a chunk of it was tampered with, it prints and answers exactly what a recall that forks nothing
    does; on a sound cache, byte for byte what the indexing clone answers."""
    from vivary_git.memory import snapshot
    from vivary_git.memory.local import assemble, bm25
    from vivary_git.memory.local.provider import LocalMemory

    assert cli("index", "--yes", cwd=ws.path).code == 0
    origin = publish(ws, tmp_path)
    for name in ("alone", "forking"):
        (tmp_path / name).mkdir()
    alone, forking = (clone(origin, tmp_path / name / "clone") for name in ("alone", "forking"))
    for other in (alone, forking):
        assert run_git_vivary(["sync", "fetch"], other).returncode == 0
        if cache == "damaged":
            _damage_a_parse_chunk(other)
    question = "how often are signing keys rotated?"

    def recall(path: Path) -> tuple[str, str, int]:
        r = cli("recall", question, "--json", cwd=path)
        with pytest.raises(ChildProcessError):  # every child it started is gone and waited for, whatever happened
            os.waitpid(-1, os.WNOHANG)
        # The dataset's name binds it to its folder (snapshot.dataset_name): the two clones' differ there only.
        return r.out, re.sub(r"vivary-clone-[0-9a-f]{12}", "DATASET", r.err.replace(str(path), "CLONE")), r.code

    monkeypatch.setenv("VIVARY_JOBS", "1")
    expected = recall(alone)
    assert forks == [False]  # the keyword index's job, done in the recall itself
    forks.clear()
    monkeypatch.setenv("VIVARY_JOBS", "2")
    untouched = assemble._lexical
    if child == "fails":
        parent = os.getpid()
        real_parts, real_lexical = snapshot.note_parts, assemble._lexical

        def parts_here(*args: Any) -> Any:
            if os.getpid() != parent:
                raise MemoryError("a child that cannot finish")
            return real_parts(*args)

        def lexical_here(*args: Any) -> bytes:
            if os.getpid() != parent:
                raise MemoryError("a child that cannot finish")
            return real_lexical(*args)

        monkeypatch.setattr(snapshot, "note_parts", parts_here)
        monkeypatch.setattr(assemble, "_lexical", lexical_here)
    elif child == "answers" and cache == "sound":
        def never(*args: Any) -> bytes:
            raise AssertionError("the packets were tokenised: the notes' child's counts were not used")

        monkeypatch.setattr(assemble, "_lexical", never)
    if child.startswith("fails-"):
        parent = os.getpid()
        name = "term_bags" if child == "fails-counting" else "build_framed"
        real = getattr(bm25, name)

        def only_here(*args: Any) -> Any:
            if os.getpid() != parent:
                raise MemoryError("a child that cannot finish")
            return real(*args)

        monkeypatch.setattr(bm25, name, only_here)
    assert recall(forking) == expected
    assert forks[0], "the notes were read in a child"
    if child == "answers":
        monkeypatch.setattr(assemble, "_lexical", untouched)  # a tree assembled again without the notes' child
    if cache == "damaged":
        assert expected[2] == 3 and expected[1].count("ignored the cache in refs/vivary/cache") == 1, expected
        return
    assert forks == [True, True]
    mine = cli("recall", question, "--json", cwd=ws.path)
    assert expected[0] == mine.out and mine.json()
    indexed = (Path(LocalMemory(open_workspace(ws.path)).store.location) / "lexical.bin").read_bytes()
    assert _assembled_lexical(forking) == _assembled_lexical(alone) == indexed
    # The kept assembly answers the next recall alike, and no child is started for it; nor after an edit
    # that is not to a note (another tree, the same notes).
    assert recall(forking) == expected and forks == [True, True]
    (forking / "build.sh").write_text("make all\n")
    assert recall(forking) == expected and forks == [True, True]
    # What is kept is not synced to the disk: a file a crash left short is noticed, and the tree assembled again.
    kept = next((Path(LocalMemory(open_workspace(forking)).store.location) / "trees").glob("*/vectors.f32"))
    whole = kept.read_bytes()
    kept.write_bytes(whole[:100])
    assert recall(forking) == expected and kept.read_bytes() == whole


def test_untrusted_cache_is_not_read_and_the_refusal_says_why(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    origin = publish(ws, tmp_path)
    other = clone(origin, tmp_path / "clone", trust=None)
    assert run_git_vivary(["sync", "fetch"], other).returncode == 0
    r = cli("recall", "vault", cwd=other)
    assert r.code == 3
    assert f"there is no memory index for this workspace yet (looked in {other}" in r.err
    assert f"{len(PUBLIC)} of {len(PUBLIC)} note(s) of working tree have no vector yet" in r.err
    assert f"refs/vivary/cache holds vectors for {len(PUBLIC)} of them, but this clone does not read it" in r.err
    assert "vivary.cacheTrust is none" in r.err and "run `git vivary index --yes` to build it" in r.err


def test_a_stale_tree_still_refuses(ws: Repo, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.write({"notes/garden.md": "# Garden\n\nBasil.\n"})
    r = cli("recall", "basil", cwd=ws.path)
    assert r.code == 3 and "the memory index is stale: it was built from a different snapshot" in r.err
    assert "and 1 of 5 note(s) of working tree have no vector yet" in r.err
    assert "run `git vivary index --yes` to update it" in r.err


def test_gc_keeps_the_vectors_of_current_branches(ws: Repo, cli: Any) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.commit(files={"notes/garden.md": "# Garden\n\nPeppers.\n"})
    assert cli("index", "--yes", cwd=ws.path).code == 0
    status = cli("cache", "status", "--json", cwd=ws.path).json()
    assert status["vectors"] == len(PUBLIC) + 1
    r = cli("cache", "gc", cwd=ws.path)
    assert r.code == 0 and f"{len(PUBLIC)} of {len(PUBLIC) + 1} vectors kept" in r.out, r.out
    assert set(cache_vectors(ws.path)) == set(keys_of(ws.path, *PUBLIC).values())


# --- 3. any tree ---------------------------------------------------------------------------------------------


def test_recall_any_revision_whose_notes_all_have_vectors(ws: Repo, cli: Any, model_runs: list[int]) -> None:
    ws.git("tag", "v1")
    assert cli("index", "--yes", cwd=ws.path).code == 0
    ws.commit(files={"notes/garden.md": "# Garden\n\nPeppers want heat; chillies even more.\n"})
    assert cli("index", "--yes", cwd=ws.path).code == 0
    model_runs.clear()
    old = cli("recall", "tomatoes sun watering", "--rev", "v1", "--json", cwd=ws.path)
    assert old.code == 0, old.err
    assert old.json()[0]["node_id"] == "garden" and model_runs == [1]
    assert cli("recall", "peppers", "--json", cwd=ws.path).json()[0]["node_id"] == "garden"
    # A note no clone has embedded: refused, counted, and the command that embeds it is named.
    ws.commit(files={"notes/tea.md": "# Tea\n\nGreen tea at eighty degrees.\n"})
    r = cli("recall", "tea", "--rev", "HEAD", cwd=ws.path)
    assert r.code == 3 and "1 of 6 note(s) of HEAD have no vector yet" in r.err
    assert "run `git vivary index --yes --rev HEAD`" in r.err and "recall never embeds notes itself" in r.err
    model_runs.clear()
    assert cli("index", "--yes", "--rev", "HEAD", cwd=ws.path).code == 0
    assert sum(model_runs) == 1
    assert cli("recall", "green tea", "--rev", "HEAD", "--json", cwd=ws.path).json()[0]["node_id"] == "tea"
    assert cli("recall", "tomatoes", "--rev", "v1", "--json", cwd=ws.path).json()[0]["node_id"] == "garden"


def test_exact_search_finds_what_the_index_finds(ws: Repo, cli: Any) -> None:
    """A tree recalled from vectors is searched exactly; on a handful of notes the index's HNSW graph
    (ef 64) is exact too, so the two answer alike. A note leaving the index takes the assembly with it."""
    from vivary_git.memory.local.provider import LocalMemory

    question = ["recall", "secrets and credentials", "--mode", "semantic", "--rev", "HEAD", "--json"]
    assert cli("index", "--yes", "--rev", "HEAD", cwd=ws.path).code == 0
    indexed = cli(*question, cwd=ws.path).json()
    trees = Path(LocalMemory(open_workspace(ws.path)).store.location) / "trees"
    assert not trees.exists()  # the index's own tree: served by the index
    ws.write({"notes/tea.md": "# Tea\n\nGreen tea at eighty degrees.\n"})
    assert cli("index", "--yes", cwd=ws.path).code == 0  # the index is now the working tree's
    assembled = cli(*question, cwd=ws.path)
    assert assembled.code == 0, assembled.err
    assert len(list(trees.iterdir())) == 1  # HEAD was assembled from its notes' vectors
    assert [(h["node_id"], h["score"]) for h in assembled.json()] == [(h["node_id"], h["score"]) for h in indexed]
    (ws.path / "notes" / "tea.md").unlink()
    (ws.path / "notes" / "bread.md").unlink()
    assert cli("index", "--yes", cwd=ws.path).code == 0
    assert not trees.exists()  # bread left the index: nothing assembled with its vector stays


def test_two_notes_with_the_same_text_are_both_found(ws: Repo, cli: Any) -> None:
    ws.commit(files={"notes/copy.md": PUBLIC["notes/garden.md"]})  # one vector key for two notes
    ws.write({"notes/tea.md": "# Tea\n\nGreen tea at eighty degrees.\n"})
    assert cli("index", "--yes", cwd=ws.path).code == 0  # the working tree's: HEAD is assembled
    hits = cli("recall", "tomatoes sun watering", "--mode", "semantic", "--k", "2", "--rev", "HEAD", "--json",
               cwd=ws.path)
    assert hits.code == 0, hits.err
    assert {h["node_id"] for h in hits.json()} == {"garden", "copy"}


# --- 4. trust: fetched vectors are a stranger's input ----------------------------------------------------


def _forge(path: Path, bad: dict[str, bytes]) -> None:
    """A consistent cache (digests fixed) whose vectors are `bad`, as anyone who can push the ref could make."""
    ws = open_workspace(path)
    assert ws.source.repo is not None
    write(ws.source.repo, Changes(vectors={k: msgspec.msgpack.encode(v) for k, v in bad.items()}),
                message="forged")


@pytest.mark.parametrize("what", ["size", "scale", "code"])
def test_sync_fetch_refuses_malformed_vectors(ws: Repo, cli: Any, tmp_path: Path, what: str) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    origin = publish(ws, tmp_path)
    key, value = next(iter(cache_vectors(ws.path).items()))
    forged = {"size": value + b"\x00" * 4097, "scale": b"\xff\xff\xff\x7f" + value[4:],
              "code": value[:4] + b"\x80" + value[5:]}[what]
    _forge(ws.path, {key: forged})
    said = {"size": "is 4485 bytes, not a scale and 1 to 4096 components", "scale": "has a scale out of range",
            "code": "holds the code -128, which is never written"}[what]
    proc = run_git_vivary(["sync", "push"], ws.path)  # we never publish it
    assert proc.returncode == 3 and f"holds a vector for {key[:12]} that {said}" in proc.stderr, proc.stderr
    ws.git("push", "-q", "-f", "origin", f"{CACHE_REF}:{CACHE_REF}")  # as anyone who can push the ref
    other = clone(origin, tmp_path / "clone")
    proc = run_git_vivary(["sync", "fetch"], other)
    assert proc.returncode == 3 and f"holds a vector for {key[:12]} that {said}" in proc.stderr, proc.stderr
    assert git(other, "rev-parse", "-q", "--verify", CACHE_REF, check=False).strip() == ""


def test_a_well_formed_vector_that_is_not_a_unit_vector_is_never_used(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    keys = keys_of(ws.path, "notes/vault.md")
    value = cache_vectors(ws.path)[keys["notes/vault.md"]]
    # Every code at full scale: well formed (sync fetch adopts it), but 20 times too long for a unit vector.
    origin = publish(ws, tmp_path)
    _forge(ws.path, {keys["notes/vault.md"]: value[:4] + b"\x7f" * 384})
    ws.git("push", "-q", "-f", "origin", f"{CACHE_REF}:{CACHE_REF}")
    other = clone(origin, tmp_path / "clone")
    assert run_git_vivary(["sync", "fetch"], other).returncode == 0
    r = cli("recall", "vault", cwd=other)
    assert r.code == 3 and "ignored 1 vector(s) in refs/vivary/cache that are not unit vectors" in r.err
    assert "1 of 5 note(s) of working tree have no vector yet" in r.err


def test_damaged_manifest_digest_is_refused_by_sync_fetch(ws: Repo, cli: Any, tmp_path: Path) -> None:
    assert cli("index", "--yes", cwd=ws.path).code == 0
    origin = publish(ws, tmp_path)
    # Rewrite one vector chunk without fixing the manifest: a reader must notice.
    ws_repo = open_workspace(ws.path).source.repo
    assert ws_repo is not None
    snap = Snapshot.load(ws_repo)
    assert snap is not None
    path = next(p for p in snap.manifest.chunks if p.startswith("vectors/"))
    data = msgspec.msgpack.decode(snap._verified(path, snap.manifest.chunks[path].sha256,
                                                 snap.manifest.chunks[path].size, MAX_CHUNK_BYTES))
    data[0][1] = data[0][1][:-1] + bytes([(data[0][1][-1] + 1) % 127])
    blob = str(ws_repo.repo.create_blob(msgspec.msgpack.encode(data)))
    tree = _update_tree(ws_repo, snap.tree, {path: blob})
    commit = _create_commit(ws_repo, tree, [snap.commit], "tampered")
    git(ws.path, "push", "-q", "-f", "origin", f"{commit}:{CACHE_REF}")
    other = clone(origin, tmp_path / "clone")
    proc = run_git_vivary(["sync", "fetch"], other)
    assert proc.returncode == 3 and "does not match its sha256 in the manifest" in proc.stderr


# --- 5. one writer at a time ---------------------------------------------------------------------------------


def _readline(proc: subprocess.Popen[str], guard: float = 300.0) -> str:
    """A line of `proc`'s stderr; the guard only stops a hang from blocking the suite forever."""
    assert proc.stderr is not None
    ready, _, _ = select.select([proc.stderr], [], [], guard)
    assert ready, "no line on stderr"
    return proc.stderr.readline()


def _vivary(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    return subprocess.Popen(["git", "vivary", *args], cwd=cwd, env=env, text=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def test_concurrent_index_runs_embed_each_note_once(ws: Repo) -> None:
    import json

    from vivary_git.memory.lock import index_lock

    dataset = open_workspace(ws.path)
    from vivary_git.memory.local.provider import LocalMemory

    mem = LocalMemory(dataset)
    repo = dataset.source.repo
    assert repo is not None
    with index_lock(repo.vivary_dir, mem.dataset):
        runs = [_vivary(["index", "--yes", "--json"], ws.path) for _ in range(2)]
        for proc in runs:  # both are waiting for the lock this test holds
            assert "waiting for another `git vivary index` of this workspace (pid" in _readline(proc)
    reports = []
    for proc in runs:
        out, err = proc.communicate()
        assert proc.returncode == 0, err
        reports.append(json.loads(out))
    assert sorted(r["embedded"] for r in reports) == [0, len(PUBLIC)]  # the second reused the first's work


def test_a_killed_index_run_releases_the_lock(ws: Repo, cli: Any) -> None:
    from vivary_git.memory.local.provider import LocalMemory

    mem = LocalMemory(open_workspace(ws.path))
    repo = mem.ws.source.repo
    assert repo is not None
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from vivary_git.memory.lock import "
         "index_lock\nwith index_lock(Path(sys.argv[1]), sys.argv[2]):\n print('held', file=sys.stderr, "
         "flush=True); time.sleep(3600)", str(repo.vivary_dir), mem.dataset],
        stderr=subprocess.PIPE, text=True)
    assert _readline(holder) == "held\n"
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    r = cli("index", "--yes", "--json", cwd=ws.path)
    assert r.code == 0 and r.json()["embedded"] == len(PUBLIC) and "waiting" not in r.err



@pytest.mark.parametrize("damage", ["file", "folder"])
def test_an_index_run_refuses_when_its_lock_cannot_be_taken_for_damage(ws: Repo, cli: Any, damage: str) -> None:
    """A file in the place of `.git/vivary/locks` (or a folder in the place of the lock file) made the run say
    "indexing without it" and go on unlocked, so two runs could overwrite each other's state: it refuses (exit 2,
    as for any file in the place of `.git/vivary`'s folders), naming the thing to remove, and writes nothing."""
    from vivary_git.memory.local.provider import LocalMemory

    mem = LocalMemory(open_workspace(ws.path))
    repo = mem.ws.source.repo
    assert repo is not None
    locks = repo.vivary_dir / "locks"
    locks.parent.mkdir(parents=True, exist_ok=True)
    if damage == "file":
        locks.write_text("not a folder\n")
        named = locks
    else:
        named = locks / f"index-{mem.dataset}.lock"
        named.mkdir(parents=True)
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 2, r.err
    assert r.err.startswith(f"git vivary index: {named}: ") and "remove it" in r.err and r.err.count("\n") == 1
    assert "without it" not in r.err and "Traceback" not in r.err
    assert mem.store.local_path("manifest.json") is None
    (locks.unlink() if damage == "file" else named.rmdir())
    assert cli("index", "--yes", cwd=ws.path).code == 0

# --- 7. the post-commit hook indexes in the background ----------------------------------------------------


def test_post_commit_hook_indexes_the_commit_in_the_background(ws: Repo, cli: Any) -> None:
    import time

    from vivary_git.memory.local.provider import LocalMemory
    from vivary_git.memory.lock import index_lock

    ws.commit(files={".vivary/memory.toml": MEMORY + "\n[memory.local]\nauto_index = true\n"})
    ws.git("config", "vivary.autoIndex", "true")  # the user's approval; the committed file is the team's wish
    assert cli("hooks", "install", "post-commit", cwd=ws.path).code == 0
    mem = LocalMemory(open_workspace(ws.path))
    repo = mem.ws.source.repo
    assert repo is not None
    with index_lock(repo.vivary_dir, mem.dataset):
        # An index run holds the lock: the hook's index must wait for it, and the commit must not.
        ws.write({"notes/tea.md": "# Tea\n\nGreen tea at eighty degrees.\n"})
        ws.git("add", "-A")
        done = subprocess.run(["git", "commit", "-qm", "tea"], cwd=ws.path, capture_output=True, text=True,
                              check=False, timeout=300)  # before: the commit waited for the lock, forever
        assert done.returncode == 0, done.stderr
        assert not (mem.store.local_path("manifest.json"))
    head = ws.git("rev-parse", "HEAD").strip()
    deadline = time.monotonic() + 300  # a guard against a hang, not a speed requirement
    while time.monotonic() < deadline:
        manifest = LocalMemory(open_workspace(ws.path, rev=head)).manifest()
        if manifest is not None and manifest.source == head:
            break
        time.sleep(0.2)
    else:
        raise AssertionError((repo.vivary_dir / "index.log").read_text())
    log = (repo.vivary_dir / "index.log").read_text()
    assert "waiting for another `git vivary index`" not in log  # --auto is quiet, even about waiting
    assert cli("recall", "green tea", "--rev", "HEAD", "--json", cwd=ws.path).json()[0]["node_id"] == "tea"


def test_action_builds_and_pushes_the_index_on_the_default_branch(ws: Repo, cli: Any, tmp_path: Path,
                                                                  model_runs: list[int]) -> None:
    """The Action's `index: true` (GitHub's cache service is a folder here, as in test_gates_action.py)."""
    from test_gates_action import run_action, tool_inputs

    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(origin))
    ws.git("remote", "add", "origin", str(origin))
    ws.git("push", "-q", "origin", "main")
    head = ws.git("rev-parse", "HEAD").strip()
    push = {"before": "0" * 40, "after": head, "ref": "refs/heads/main", "repository": {"default_branch": "main"}}
    inputs = {**tool_inputs(), "fail-on-error": "false", "index": "true"}
    services = tmp_path / "cache-service"
    (tmp_path / "run1").mkdir()
    r = run_action(ws.path, tmp_path / "run1", inputs, push, event_name="push", cache=services)
    assert r.code == 0, r.log
    assert git(origin, "rev-parse", "-q", "--verify", CACHE_REF, check=False).strip()
    # A clone's first recall is warm: it embeds the query only.
    other = clone(origin, tmp_path / "clone")
    assert run_git_vivary(["sync", "fetch"], other).returncode == 0
    model_runs.clear()
    assert cli("recall", "sourdough", "--json", cwd=other).json()[0]["node_id"] == "bread"
    assert model_runs == [1]
    # Not on the default branch (a pull request): nothing is built, and a notice says why.
    (tmp_path / "run2").mkdir()
    pr = {"pull_request": {"base": {"sha": head}, "head": {"sha": head, "repo": {"full_name": "owner/notes"}}}}
    r = run_action(ws.path, tmp_path / "run2", inputs, pr, cache=services)
    assert r.code == 0 and "index: the memory index is built only on a push to the default branch" in r.log


def test_every_git_subprocess_is_given_its_environment(ws: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Git runs as a subprocess, started (vfork, then exec) while other threads run: the model loads in one,
    importing numpy, which sets and clears an environment variable. A child started without an environment
    of its own execs with the process's environment array, which that thread can free under it: the start
    then failed now and then with "[Errno 14] Bad address". So every Git child is given its environment,
    built by the thread that starts it; and our own offline variables are set by the main thread only."""
    import subprocess
    import threading

    for var in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE", "HF_HUB_DISABLE_TELEMETRY",
                "OPENBLAS_NUM_THREADS"):
        monkeypatch.delenv(var, raising=False)
    started: list[tuple[str, bool]] = []
    real_popen = subprocess.Popen.__init__

    def noting(self: Any, args: Any, *rest: Any, **kwargs: Any) -> None:
        started.append((os.path.basename(str(args[0])), kwargs.get("env") is not None))
        real_popen(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", noting)
    changed: list[tuple[str, str]] = []
    real_putenv = os.putenv

    def putenv(key: Any, value: Any) -> None:
        changed.append((os.fsdecode(key), threading.current_thread().name))
        real_putenv(key, value)

    monkeypatch.setattr(os, "putenv", putenv)
    (ws.path / "notes" / "extra.md").write_text("# Extra\n\nA note the index has not seen.\n")
    for args in (("index", "--yes", "--rev", "HEAD"), ("index", "--yes"), ("recall", "how are keys rotated?")):
        assert cli(*args, cwd=ws.path).code == 0
    gits = [given for exe, given in started if exe == "git"]
    assert gits and all(gits), started
    # Ours, not numpy's own OPENBLAS_MAIN_FREE (set as it is imported, in the model's thread).
    ours = {thread for key, thread in changed
            if key.startswith(("HF_", "TRANSFORMERS_")) or key == "OPENBLAS_NUM_THREADS"}
    assert ours == {threading.main_thread().name} and os.environ["HF_HUB_OFFLINE"] == "1"
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"


@pytest.mark.parametrize("how", ["one", "batch"])
def test_recall_embeds_its_questions_while_it_reads_the_index(ws: Repo, cli: Any, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """`recall` hands its questions to the thread that loads the model, which embeds them as soon as the model
    is loaded, while the index is still being read: the same vectors, so the same answer, byte for byte."""
    import threading

    from vivary_git.memory.local import recall

    assert cli("index", "--yes", cwd=ws.path).code == 0
    queries = tmp_path / "q.jsonl"
    queries.write_text('{"id": "a", "query": "how are keys rotated?"}\n{"id": "b", "query": "vault audit"}\n')
    args = ("recall", "how are keys rotated?", "--json") if how == "one" else ("recall", "--queries", str(queries))
    runs: list[tuple[str, int]] = []
    real = embed._OnnxEmbedder._vectors

    def noting(self: Any, rows: Any) -> Any:
        runs.append((threading.current_thread().name, len(rows)))
        return real(self, rows)

    monkeypatch.setattr(embed._OnnxEmbedder, "_vectors", noting)
    asked = cli(*args, cwd=ws.path)
    assert asked.code == 0 and asked.out
    assert runs == [("vivary-background", 1 if how == "one" else 2)]
    runs.clear()
    real_ask = recall._load_and_ask
    monkeypatch.setattr(recall, "_load_and_ask", lambda name, queries, asked, **kw: real_ask(name, (), asked, **kw))
    plain = cli(*args, cwd=ws.path)
    assert runs == [("MainThread", 1 if how == "one" else 2)]
    assert (plain.code, plain.out, plain.err) == (asked.code, asked.out, asked.err)
