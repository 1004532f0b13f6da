"""refs/vivary/cache (store/write.py): recording as a side effect, keys, privacy, untrusted reads, chain bound."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import TROPO, Repo, git, run_git_vivary

from vivary_git.git import Repo as GitRepo
from vivary_git.refnames import CACHE_REF, NOTES_REF
from vivary_git.store import format as fmt
from vivary_git.store.format import (
    ChunkRef,
    SharedNote,
    StoreDamaged,
    encode_shared,
    encode_shared_encoded,
    share,
    state_key,
    unshare,
)
from vivary_git.store.notes import Verdict
from vivary_git.store.read import Snapshot
from vivary_git.store.refcache import get_state, list_states
from vivary_git.store.write import _create_commit, _update_tree, put_state

NOTES = {
    "tropo.toml": TROPO,
    "decisions/d1.md": "---\nstatus: accepted\ndate: 2026-01-02\nrelated: [m1]\n---\n# Use Git\n\nAlpha body.\n",
    "decisions/d2.md": "---\nstatus: maybe\ndate: 2026-01-03\n---\n# Bad status\n\nsee [[m1]] and [[nowhere]]\n",
    "modules/m1.md": "---\nstatus: live\ndepends: [m2]\n---\n# Module one\n",
    "modules/m2.md": "---\nstatus: live\n---\n# Module two\n",
    "notes/free.md": "# Free note\n\nlinks [[d1]]\n",
}


def objects_reachable(path: Path, *refs: str) -> bytes:
    """The content of every object reachable from `refs` (those that exist), concatenated."""
    present = [r for r in refs if git(path, "rev-parse", "-q", "--verify", r, check=False).strip()]
    if not present:
        return b""
    listing = git(path, "rev-list", "--objects", *present)
    ids = "".join(line.split()[0] + "\n" for line in listing.splitlines() if line.strip())
    proc = subprocess.run(["git", "cat-file", "--batch"], cwd=path, input=ids.encode(), capture_output=True,
                          check=True)
    return proc.stdout


def vivary_objects(path: Path) -> bytes:
    """The content of every object reachable from any ref under refs/vivary/ (what `sync push` could send)."""
    return objects_reachable(path, *git(path, "for-each-ref", "--format=%(refname)", "refs/vivary/").split())


def stats(err: str) -> dict[str, Any]:
    line = next(x for x in err.splitlines() if x.startswith("vivary: stats "))
    out: dict[str, Any] = msgspec.json.decode(line[len("vivary: stats "):])
    return out


def tip(path: Path, ref: str = CACHE_REF) -> str:
    return git(path, "rev-parse", "-q", "--verify", ref, check=False).strip()


@pytest.fixture
def ws(repo: Repo) -> Repo:
    """A repository whose commands read the shared cache whoever wrote it (`vivary.cacheTrust any`):
    these tests are about reading and writing it; tests/test_trust.py is about who may be trusted."""
    repo.commit("notes", NOTES)
    repo.git("config", "vivary.cacheTrust", "any")
    return repo


def test_check_records_once_per_tree_and_a_cold_run_reads_it(ws: Repo, cli: Any) -> None:
    first = cli("check", "--rev", "HEAD", cwd=ws.path)
    commit = tip(ws.path)
    assert commit, "check --rev HEAD records the cache"
    assert git(ws.path, "log", "--format=%s", CACHE_REF).startswith("vivary cache: tree ")
    names = git(ws.path, "ls-tree", "-r", "--name-only", CACHE_REF).split()
    assert "manifest.msgpack" in names and all(n.startswith(("parse/", "facts/", "manifest")) for n in names)
    assert len(names) < 2 * len(NOTES) + 1  # chunks, not one object per note
    cli("check", "--rev", "HEAD", cwd=ws.path)
    cli("graph", "--rev", "HEAD", cwd=ws.path)
    assert tip(ws.path) == commit, "nothing new, no commit"
    # Cold local cache: everything comes from the ref, nothing is parsed, output is identical.
    import shutil

    shutil.rmtree(ws.path / ".git" / "vivary")
    r = run_git_vivary(["check", "--rev", "HEAD"], ws.path, env={"VIVARY_STATS": "1"})
    assert stats(r.stderr)["parsed"] == 0, r.stderr
    assert r.stdout == first.out and r.returncode == first.code


def test_rebase_or_squash_reproducing_a_tree_hits(ws: Repo) -> None:
    run_git_vivary(["check", "--rev", "HEAD"], ws.path)
    tree = git(ws.path, "rev-parse", "HEAD^{tree}").strip()
    other = git(ws.path, "commit-tree", tree, "-m", "squashed elsewhere").strip()  # same tree, new commit
    import shutil

    shutil.rmtree(ws.path / ".git" / "vivary")
    before = tip(ws.path)
    r = run_git_vivary(["check", "--rev", other], ws.path, env={"VIVARY_STATS": "1"})
    assert stats(r.stderr)["parsed"] == 0
    assert tip(ws.path) == before, "the tree was recorded already"


def test_switches_and_uncommitted_content(ws: Repo, cli: Any) -> None:
    cli("check", "--rev", "HEAD", "--no-cache", cwd=ws.path)
    assert not tip(ws.path)
    ws.git("config", "vivary.cache", "false")
    cli("check", "--rev", "HEAD", cwd=ws.path)
    cli("query", "module", "--rev", "HEAD", cwd=ws.path)
    assert not tip(ws.path)
    ws.git("config", "vivary.cache", "true")
    ws.write({"modules/m2.md": "---\nstatus: live\n---\n# Draft DIRTY-MARKER\n"})
    cli("check", cwd=ws.path)  # a dirty working tree is not recorded
    assert not tip(ws.path)
    ws.git("add", "modules/m2.md")
    cli("check", "--staged", cwd=ws.path)  # nor an index that differs from HEAD
    assert not tip(ws.path)
    ws.git("reset", "-q")
    cli("check", "--staged", cwd=ws.path)  # the index is HEAD's tree again: recorded
    assert tip(ws.path)
    assert b"DIRTY-MARKER" not in objects_reachable(ws.path, CACHE_REF)


def test_every_command_records(repo: Repo, cli: Any) -> None:
    repo.commit("notes", NOTES)
    for args in (["graph", "--rev", "HEAD"], ["query", "module", "--rev", "HEAD"], ["blast", "m2", "--rev", "HEAD"]):
        git(repo.path, "update-ref", "-d", CACHE_REF, check=False)
        import shutil

        shutil.rmtree(repo.path / ".git" / "vivary", ignore_errors=True)
        cli(*args, cwd=repo.path)
        assert tip(repo.path), args


CANARIES = {
    "USER.md": "# Me\n\nPRIVATE-CANARY-user\n",
    "MEMORY.md": "---\ntitle: PRIVATE-CANARY-memory-title\n---\nPRIVATE-CANARY-memory\n",
    "memory/x.md": "---\nstatus: PRIVATE-CANARY-status\n---\n# PRIVATE-CANARY-x-title\n",
    "drafts/plan.md": "# PRIVATE-CANARY-ignored-title\n\nPRIVATE-CANARY-ignored [[PRIVATE-CANARY-link]]\n",
    "journal/day.md": "# PRIVATE-CANARY-journal\n",
    "notes/credentials.md": "# PRIVATE-CANARY-sensitive-name\n",
    ".gitignore": "drafts/\n",
    ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["journal/**"]\n',
    "public/open.md": "# PUBLIC-MARKER title\n\nPUBLIC-MARKER body [[plan]]\n",
}


def test_nothing_private_reaches_the_refs(repo: Repo, cli: Any) -> None:
    repo.write(CANARIES)
    repo.git("add", "-A")
    repo.git("add", "-f", "drafts/plan.md")  # ignored, yet tracked: still private
    repo.git("commit", "-q", "-m", "canaries")
    repo.git("config", "vivary.notes", "true")
    for args in (["check", "--rev", "HEAD"], ["check"], ["graph", "--format", "json"], ["query", "PRIVATE"],
                 ["blast", "plan"], ["check", "--staged"]):
        cli(*args, cwd=repo.path)
    assert tip(repo.path) and tip(repo.path, NOTES_REF)
    blob = objects_reachable(repo.path, CACHE_REF, NOTES_REF)
    assert b"PUBLIC-MARKER" in blob, "the scan sees what was written"
    assert b"PRIVATE-CANARY" not in blob
    for private in ("USER.md", "MEMORY.md", "memory/x.md", "drafts/plan.md", "journal/day.md", "credentials"):
        assert private.encode() not in blob, private
    summary = next(iter(Snapshot.load(GitRepo(repo.path)).manifest.trees.values()))  # type: ignore[union-attr]
    assert summary.private == 6 and summary.checked == 7


def test_privacy_undecidable_records_nothing(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {**NOTES, ".vivary/memory.toml": "[memory.privacy]\nfail_closed = false\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert "not recording this tree in refs/vivary/cache" in r.err
    assert not tip(repo.path)


def test_a_tree_not_recorded_is_said_once_per_command(repo: Repo, cli: Any) -> None:
    """`ci` checks the head tree and then builds its graph; once both are in the local cache, each asked to record
    the tree, and a symlinked `.vivary/memory.toml` (privacy cannot be decided) was said twice. Once is enough, in
    every run; the tree is not recorded."""
    import os

    repo.commit("base", NOTES)
    repo.write({"real.toml": "[memory]\nenabled = true\n"})
    (repo.path / ".vivary").mkdir()
    os.symlink("../real.toml", repo.path / ".vivary" / "memory.toml")
    repo.commit("head", {"modules/m3.md": "---\nstatus: live\ndepends: [m1]\n---\n# Module three\n"})
    said = "vivary: not recording this tree in refs/vivary/cache: .vivary/memory.toml: is a symbolic link in the tree"
    for args in (["ci", "--base", "HEAD~1"], ["ci", "--base", "HEAD~1"], ["check", "--rev", "HEAD"],
                 ["blast", "--base", "HEAD~1"]):
        r = cli(*args, cwd=repo.path)
        # `ci` then stops (exit 2): without the rules it cannot tell which notes to keep out of what it prints.
        assert r.code in ((2,) if args[0] == "ci" else (0, 1)) and r.err.count(said) == 1, (args, r.err)
    snap = Snapshot.load(GitRepo(repo.path)) if tip(repo.path) else None
    recorded = {t.tree for t in snap.manifest.trees.values()} if snap is not None else set()
    assert repo.git("rev-parse", "HEAD^{tree}").strip() not in recorded


# --- untrusted reads --------------------------------------------------------------------------------------


def _rewrite(path: Path, edits: dict[str, bytes], *, fix_manifest: bool = False) -> None:
    """Point refs/vivary/cache at a commit whose tree has `edits` applied (the manifest untouched,
    unless `fix_manifest`, which makes digests match: a consistent forgery of bad content)."""
    r = GitRepo(path)
    snap = Snapshot.load(r)
    assert snap is not None
    files = {p: r.repo.create_blob(data) for p, data in edits.items()}
    if fix_manifest:
        m = snap.manifest
        chunks = dict(m.chunks)
        for p, data in edits.items():
            import hashlib

            chunks[p] = ChunkRef(hashlib.sha256(data).hexdigest(), len(data), m.chunks[p].count)
        forged = msgspec.structs.replace(m, chunks=chunks)
        files["manifest.msgpack"] = r.repo.create_blob(msgspec.msgpack.encode(forged))
    tree = _update_tree(r, snap.tree, {p: str(o) for p, o in files.items()})
    commit = _create_commit(r, tree, [snap.commit], "tampered")
    git(path, "update-ref", CACHE_REF, commit)


def _chunk_with(path: Path, kind: str, text: bytes) -> str:
    r = GitRepo(path)
    snap = Snapshot.load(r)
    assert snap is not None
    for p in snap.manifest.chunks:
        if p.startswith(kind) and text in r.repo[snap.tree[p].id].data:
            return p
    raise AssertionError(text)


@pytest.mark.parametrize("damage", ["modified", "truncated", "wrong-types", "bad-manifest", "bad-key", "missing"])
def test_damaged_cache_is_ignored_with_one_line(ws: Repo, cli: Any, damage: str) -> None:
    cold = cli("check", "--rev", "HEAD", "--no-cache", cwd=ws.path)
    cli("check", "--rev", "HEAD", cwd=ws.path)
    # A chunk `check` needs: the facts of decisions/d1.md (a cold `check` reads facts, not parses).
    p = _chunk_with(ws.path, "facts/", b"Use Git")
    old = GitRepo(ws.path).repo[Snapshot.load(GitRepo(ws.path)).tree[p].id].data  # type: ignore[union-attr]
    if damage == "modified":
        _rewrite(ws.path, {p: old.replace(b"Use Git", b"Use Gix")})
    elif damage == "truncated":
        _rewrite(ws.path, {p: old[: len(old) // 2]})
    elif damage == "wrong-types":
        _rewrite(ws.path, {p: msgspec.msgpack.encode([["x" * 40, {"not": "a note"}]])}, fix_manifest=True)
    elif damage == "bad-key":
        items = msgspec.msgpack.decode(old)
        items[0][0] = "ff" + items[0][0][2:] if not p.endswith("ff.msgpack") else "00" + items[0][0][2:]
        _rewrite(ws.path, {p: msgspec.msgpack.encode(items)}, fix_manifest=True)
    elif damage == "bad-manifest":
        _rewrite(ws.path, {"manifest.msgpack": msgspec.msgpack.encode({"store": "one", "chunks": [1, 2]})})
    else:
        r = GitRepo(ws.path)
        snap = Snapshot.load(r)
        assert snap is not None
        builder = r.repo.TreeBuilder(snap.tree / "facts")  # type: ignore[operator]
        builder.remove(p.split("/")[1])
        root = r.repo.TreeBuilder(snap.tree)
        root.insert("facts", builder.write(), 0o040000)
        git(ws.path, "update-ref", CACHE_REF, _create_commit(r, str(root.write()), [], "cut"))
    import shutil

    shutil.rmtree(ws.path / ".git" / "vivary")
    damaged_tip = tip(ws.path)
    r = cli("check", "--rev", "HEAD", cwd=ws.path)
    assert (r.out, r.code) == (cold.out, cold.code)
    lines = [x for x in r.err.splitlines() if "refs/vivary/cache" in x]
    assert len(lines) == 1, r.err
    assert "git vivary cache verify" in lines[0] and "git vivary cache drop" in lines[0]
    assert "Traceback" not in r.err
    assert tip(ws.path) == damaged_tip, "nothing is written on top of a damaged cache"
    v = cli("cache", "verify", cwd=ws.path)
    assert v.code == 1 and "damaged" in v.err
    assert cli("cache", "drop", cwd=ws.path).code == 0 and not tip(ws.path)
    cli("check", "--rev", "HEAD", cwd=ws.path)
    assert cli("cache", "verify", cwd=ws.path).code == 0


@pytest.mark.parametrize("bad", ["upper", "short", "long", "not-hex", "other-digits", "other-prefix", "last"])
def test_a_chunk_holding_a_key_that_does_not_belong_there_is_damage_named_by_that_key(ws: Repo, cli: Any,
                                                                                       bad: str) -> None:
    """Every key of a chunk read is 40 lowercase hex digits starting with the chunk's prefix: the first that
    is not is named (the keys are checked all at once, and one by one only to find it)."""
    cli("check", "--rev", "HEAD", cwd=ws.path)
    p = _chunk_with(ws.path, "facts/", b"Use Git")
    prefix = p.split("/")[1][:2]
    old = GitRepo(ws.path).repo[Snapshot.load(GitRepo(ws.path)).tree[p].id].data  # type: ignore[union-attr]
    items = msgspec.msgpack.decode(old)
    at = -1 if bad == "last" else 0
    key = items[at][0]
    items[at][0] = {"upper": prefix + "A" * 38, "short": key[:39], "long": key + "0", "not-hex": key[:39] + "g",
                    "other-digits": key[:39] + "\u0663", "other-prefix": ("00" if prefix != "00" else "ff") + key[2:],
                    "last": prefix + "E" * 38}[bad]
    _rewrite(ws.path, {p: msgspec.msgpack.encode(items)}, fix_manifest=True)
    snap = Snapshot.load(GitRepo(ws.path))
    assert snap is not None
    with pytest.raises(StoreDamaged) as err:
        snap.chunk("facts", prefix)
    assert err.value.what == f"{p} holds a key {items[at][0][:48]!r} that does not belong there"


def test_oversized_chunk_is_refused(ws: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    cold = cli("check", "--rev", "HEAD", "--no-cache", cwd=ws.path)
    cli("check", "--rev", "HEAD", cwd=ws.path)
    import shutil

    shutil.rmtree(ws.path / ".git" / "vivary")
    monkeypatch.setattr(fmt, "MAX_CHUNK_BYTES", 10)
    r = cli("check", "--rev", "HEAD", cwd=ws.path)
    assert (r.out, r.code) == (cold.out, cold.code)
    assert "over the 10-byte limit" in r.err


def test_a_cache_whose_chunks_add_up_past_the_whole_bound_is_refused(ws: Repo, cli: Any,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk within its own bound, yet together more than a whole cache may hold (a forged manifest of 32 MiB
    chunks made a reader hold gigabytes): damaged, read as no cache, the answer the same as without it."""
    cold = cli("check", "--rev", "HEAD", "--no-cache", cwd=ws.path)
    cli("check", "--rev", "HEAD", cwd=ws.path)
    import shutil

    shutil.rmtree(ws.path / ".git" / "vivary")
    snap = Snapshot.load(GitRepo(ws.path))
    assert snap is not None and len(snap.manifest.chunks) > 1
    monkeypatch.setattr(fmt, "MAX_CHUNKS_BYTES", max(c.size for c in snap.manifest.chunks.values()) + 1)
    r = cli("check", "--rev", "HEAD", cwd=ws.path)
    assert (r.out, r.code) == (cold.out, cold.code)
    assert "bytes of chunks, over the" in r.err and "limit for a whole cache" in r.err, r.err


def test_chain_restarts_past_its_bound(ws: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt, "CHAIN_LIMIT", 3)
    r = GitRepo(ws.path)
    for i in range(4):
        put_state(r, "test", f"k{i}", {"blob": bytes([i]) * 10})
    parents = git(ws.path, "log", "--format=%P", "-1", CACHE_REF).strip()
    assert parents == "", "the fourth commit starts a new chain"
    snap = Snapshot.load(r)
    assert snap is not None and snap.manifest.chain == 1 and len(snap.manifest.states) == 4
    assert get_state(r, "test", "k0", "blob") == b"\0" * 10
    assert list_states(r, "test") == {f"k{i}": ["blob"] for i in range(4)}


def test_entries_staged_ahead_are_committed_as_written_whole_and_restaged_when_the_ref_moved(ws: Repo) -> None:
    """A cold run writes its entries' objects while the graph is built (`stage`) and commits once the counts
    come: the commit holds what one `write` would; if another writer moved the ref in between, the staged
    objects are left aside and the entries are merged onto the new tip, nothing of either lost."""
    from vivary_git.graph import Facts
    from vivary_git.store.write import Changes, stage, write

    r = GitRepo(ws.path)

    def fact(title: str) -> bytes:
        return msgspec.msgpack.encode(Facts(id=title, type=None, title=title, findings=[], refs=[], links=[],
                                            problem=False))

    def tree(n: int) -> dict[str, fmt.TreeSummary]:
        t = str(n) * 40
        return {fmt.tree_key(t, "cfg", ""): fmt.TreeSummary(tree=t, checked=1, errors=0, warnings=0, nodes=1, edges=0,
                                                        broken=0, private=0, written=n)}

    def facts() -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for name in git(ws.path, "ls-tree", "--name-only", f"{CACHE_REF}:facts").split():
            blob = subprocess.run(["git", "show", f"{CACHE_REF}:facts/{name}"], cwd=ws.path, capture_output=True,
                                  check=True).stdout
            out.update((k, bytes(v)) for k, v in msgspec.msgpack.decode(blob, type=list[tuple[str, msgspec.Raw]]))
        return out

    mine = Changes(facts={"ab" + "0" * 38: fact("mine")})
    staged = stage(r, mine)
    mine.trees = tree(1)
    assert write(r, mine, staged=staged) is not None
    snap = Snapshot.load(r)
    assert snap is not None and set(tree(1)) <= set(snap.manifest.trees)
    assert facts()["ab" + "0" * 38] == fact("mine")

    later = Changes(facts={"cd" + "0" * 38: fact("later")})
    staged = stage(r, later)
    other = Changes(facts={"ab" + "1" * 38: fact("other")}, trees=tree(2))
    assert write(r, other) is not None  # the ref moves under the staged objects
    later.trees = tree(3)
    assert write(r, later, staged=staged) is not None
    snap = Snapshot.load(r)
    assert snap is not None and set(tree(1)) | set(tree(2)) | set(tree(3)) <= set(snap.manifest.trees)
    got = facts()
    assert (got["ab" + "0" * 38], got["ab" + "1" * 38], got["cd" + "0" * 38]) == (fact("mine"), fact("other"),
                                                                                  fact("later"))


def test_state_api_rejects_bad_names_and_nothing_new_is_no_commit(ws: Repo) -> None:
    r = GitRepo(ws.path)
    key = state_key("a" * 40, "cfg", "minilm")
    assert put_state(r, "vivary-local", key, {"index.bin": b"x"}) is not None
    assert put_state(r, "vivary-local", key, {"index.bin": b"x"}) is None
    for provider, name in (("Bad/Name", "x"), ("ok", "../x"), ("ok", "a/b")):
        with pytest.raises(ValueError):
            put_state(r, provider, key, {name: b""})


def test_verdict_notes(ws: Repo, cli: Any) -> None:
    cli("check", "--rev", "HEAD", cwd=ws.path)
    assert not tip(ws.path, NOTES_REF), "off by default"
    assert "are on" in cli("cache", "notes", "on", cwd=ws.path).out
    r = cli("check", "--rev", "HEAD", cwd=ws.path)
    note = git(ws.path, "notes", "--ref", "vivary", "show", "HEAD")
    got = msgspec.json.decode(note, type=Verdict)
    assert got.checked == 5 and got.errors > 0 and r.code == 1
    cli("cache", "notes", "off", cwd=ws.path)


def test_cache_status_and_gc(ws: Repo, cli: Any) -> None:
    cli("check", "--rev", "HEAD", cwd=ws.path)
    ws.commit("edit", {"modules/m2.md": "---\nstatus: live\n---\n# Module two, again\n"})
    cli("check", "--rev", "HEAD", cwd=ws.path)
    s = cli("cache", "status", "--json", cwd=ws.path).json()
    assert (s["trees"], s["blobs"], s["chain"]) == (2, 6, 2)
    ws.git("branch", "old", "HEAD~1")
    assert "at most" in cli("cache", "gc", "--dry-run", cwd=ws.path).out
    ws.git("branch", "-D", "old")
    r = cli("cache", "gc", cwd=ws.path)
    assert r.code == 0, r.err
    s = cli("cache", "status", "--json", cwd=ws.path).json()
    assert (s["trees"], s["blobs"], s["chain"]) == (1, 5, 1)
    assert git(ws.path, "log", "--format=%P", "-1", CACHE_REF).strip() == ""
    assert "chain     1 of 64" in cli("cache", "status", cwd=ws.path).out


def test_recording_alongside_the_build_equals_recording_inline(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                                forks: list[int]) -> None:
    """Big cold runs derive facts in forked processes and record the tree from a forked child while
    the graph is built; what lands in the ref must be what the one-process path records, canaries
    kept out, and the parses shared without their bodies."""
    import shutil

    from vivary_git import parallel, parses

    many = {f"modules/n{i:02d}.md": f"---\nstatus: live\ndepends: [n{(i + 1) % 40:02d}]\n---\n# N{i}\n\nBODY-{i}\n"
            for i in range(40)}
    repo.write({**CANARIES, **many, "tropo.toml": TROPO})
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "many")
    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setattr(parses, "_STREAM_ABOVE", 10)  # each parsing process writes its own segments
    listings = []
    for jobs in ("2", "1"):
        monkeypatch.setenv("VIVARY_JOBS", jobs)
        git(repo.path, "update-ref", "-d", CACHE_REF, check=False)
        shutil.rmtree(repo.path / ".git" / "vivary", ignore_errors=True)
        forks.clear()
        r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
        assert r.code == 1 and "Traceback" not in r.err
        assert len(forks) == (2 if jobs == "2" else 0)  # one child derives half the facts, one records
        for kind in ("parse", "facts"):  # each written once, by the process that computed it (one segment each)
            segments = list((repo.path / ".git" / "vivary").glob(f"{kind}-v*/seg-*.msgpack"))
            assert len(segments) == (2 if jobs == "2" else 1), kind
            keys = [k for seg in segments for k, _ in msgspec.msgpack.decode(seg.read_bytes()[4:])]
            assert len(keys) == len(set(keys)) == 46, kind  # every document's, none twice
        listings.append([line for line in git(repo.path, "ls-tree", "-r", CACHE_REF).splitlines()
                         if "manifest" not in line])
        blob = objects_reachable(repo.path, CACHE_REF)
        assert b"N39" in blob and b"PRIVATE-CANARY" not in blob and b"BODY-" not in blob
    assert listings[0] == listings[1]
    summary = next(iter(Snapshot.load(GitRepo(repo.path)).manifest.trees.values()))  # type: ignore[union-attr]
    assert summary.private == 5 and summary.checked == 46  # drafts/ is ignored, so not committed here


def test_shared_parses_get_their_bodies_back_from_the_blobs(ws: Repo, cli: Any) -> None:
    """The ref shares parses without bodies; a clone that reads them cuts each body from its blob, so
    query scores and snippets equal a run that parsed everything."""
    import shutil

    cli("check", "--rev", "HEAD", cwd=ws.path)
    assert b"Alpha body" not in objects_reachable(ws.path, CACHE_REF)
    want = cli("query", "alpha", "--snippet", "40", "--json", "--rev", "HEAD", "--no-cache", cwd=ws.path).out
    shutil.rmtree(ws.path / ".git" / "vivary")
    r = run_git_vivary(["query", "alpha", "--snippet", "40", "--json", "--rev", "HEAD"], ws.path,
                       env={"VIVARY_STATS": "1"})
    assert stats(r.stderr)["parsed"] == 0, r.stderr
    assert r.stdout == want and "Alpha body" in want


def test_a_failing_recording_child_loses_only_the_recording(repo: Repo, cli: Any,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """The child that records the ref beside the build fails: the command still answers in full and
    writes its local caches; the ref is simply not written (the next run records it)."""
    import shutil

    from vivary_git import parallel, record

    many = {f"modules/n{i:02d}.md": f"---\nstatus: live\ndepends: [n{(i + 1) % 30:02d}]\n---\n# N{i}\n"
            for i in range(30)}
    repo.commit("many", {**many, "tropo.toml": TROPO})
    monkeypatch.setenv("VIVARY_JOBS", "1")
    want = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)

    def fail(ws: Any, keyed: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setattr(record, "prepare", fail)
    monkeypatch.setenv("VIVARY_JOBS", "2")
    shutil.rmtree(repo.path / ".git" / "vivary", ignore_errors=True)
    got = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert got.out == want.out and got.code == want.code and "Traceback" not in got.err
    assert not tip(repo.path)
    assert list((repo.path / ".git" / "vivary").glob("parse-v*/seg-*.msgpack"))
    monkeypatch.undo()
    cli("check", "--rev", "HEAD", cwd=repo.path)  # the next run records it
    assert tip(repo.path)


def test_a_shared_parse_naming_a_body_in_a_huge_blob_is_not_taken() -> None:
    """A forged shared parse may claim a body for any blob; the bounded reader refuses a blob over the note limit
    unread, and the caller parses it (E000) instead."""
    from vivary_git.git import BlobTooLarge
    from vivary_git.parse import parse_blob

    def read() -> bytes:
        raise BlobTooLarge(3 << 30)

    shared = msgspec.msgpack.decode(encode_shared(parse_blob(b"# T\n\nbody\n")), type=SharedNote)
    assert shared.body_chars
    assert unshare(shared, read) is None


@pytest.mark.parametrize("data", [
    b"# T\n\nbody [[x]]\n", b"---\na: 1\nb: [x, y]\n---\n# T\n", b"---\na: [1\n---\n", b"\xff\xfe", b"",
    b"---\nn:\n  deep: {x: [1, 2]}\n---\nbody\n",
])
def test_shared_encoding_without_the_struct_is_the_structs(data: bytes) -> None:
    from vivary_git.parse import parse_blob

    note = parse_blob(data)
    assert encode_shared(note) == msgspec.msgpack.encode(share(note))
    shared = msgspec.msgpack.decode(encode_shared(note), type=SharedNote)
    assert unshare(shared, lambda: data) == note


@pytest.mark.parametrize("data", [
    b"# T\n\nbody [[x]]\n", b"---\na: 1\nb: [x, y]\n---\n# T\n", b"---\na: [1\n---\n", b"\xff\xfe", b"",
    b"---\nn:\n  deep: {x: [1, 2]}\nf: 1.5\nbig: 123456789012\nneg: -3\nt: true\n---\nbody \xc3\xa9\xe6\x97\xa5 ^b1\n",
    b"---\nvivary-ignore: W221\n---\n# A\n<!-- vivary-ignore W202 -->\n## B\n#tag [l](x.md) ![[e]]\n",
    b"---\nx: " + b"y" * 70000 + b"\n---\n" + b"z" * 70000,
])
def test_a_workers_encoded_note_is_shared_as_the_note_is(data: bytes) -> None:
    """A note a parse worker handed back still encoded is re-encoded for the shared cache without
    being decoded: the same bytes as sharing the note itself."""
    from vivary_git.parse import parse_blob

    note = parse_blob(data)
    encoded = msgspec.msgpack.encode(note)
    assert encode_shared_encoded(encoded) == encode_shared(note)
    assert encode_shared_encoded(msgspec.Raw(encoded)) == encode_shared(note)
