"""Sharing refs/vivary/cache through remotes (`git vivary sync`), and writers racing or dying."""

from __future__ import annotations

import hashlib
import math
import os
import signal
import struct
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Repo, git, run_git_vivary
from test_store import NOTES, objects_reachable, stats, tip

from vivary_git.git import Repo as GitRepo
from vivary_git.refnames import CACHE_REF, NOTES_REF
from vivary_git.store import read as store_read
from vivary_git.store.format import ChunkRef, Manifest
from vivary_git.store.read import Snapshot
from vivary_git.store.refcache import get_state, list_states
from vivary_git.store.write import Changes, _create_commit, _update_tree, put_state, write


def bare(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def test_ci_builds_and_pushes_a_fresh_clone_checks_without_parsing(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    mirror = bare(tmp_path, "mirror.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    # CI: a shallow checkout fetches whatever cache exists (none yet), checks, pushes the cache.
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(ci))
    r = run_git_vivary(["sync", "fetch"], ci)
    assert r.returncode == 0 and "has no vivary cache yet" in r.stdout, r.stderr
    cold = run_git_vivary(["check", "--rev", "HEAD"], ci, env={"VIVARY_STATS": "1"})
    assert stats(cold.stderr)["parsed"] == len(NOTES) - 1
    r = run_git_vivary(["sync", "push"], ci)
    assert r.returncode == 0 and "refs/vivary/cache: (none) ->" in r.stdout, r.stderr
    assert git(origin, "rev-parse", CACHE_REF).strip() == tip(ci)
    assert "already has" in run_git_vivary(["sync", "push"], ci).stdout
    # A second remote, by URL: push works without setup.
    assert run_git_vivary(["sync", "push", f"file://{mirror}"], ci).returncode == 0
    # A person: a fresh full clone, setup is idempotent, fetch verifies and adopts, check parses nothing.
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    for _ in range(2):
        r = run_git_vivary(["sync", "setup"], me)
        assert r.returncode == 0, r.stderr
    assert len(git(me, "config", "--get-all", "remote.origin.fetch").splitlines()) == 3
    r = run_git_vivary(["sync", "fetch"], me)
    assert r.returncode == 0 and "adopted from origin" in r.stdout, r.stderr
    git(me, "config", "vivary.cacheTrust", "any")  # reading what others wrote is opt-in (tests/test_trust.py)
    warm = run_git_vivary(["check"], me, env={"VIVARY_STATS": "1"})
    assert '"parsed":0' in warm.stderr, warm.stderr
    assert warm.stdout.replace("working tree", "HEAD") == cold.stdout and warm.returncode == cold.returncode
    assert git(me, "rev-parse", "--is-shallow-repository").strip() == "false", "fetch kept the clone whole"


def test_diverged_caches_merge_and_push_never_loses_an_update(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    a, b = tmp_path / "a", tmp_path / "b"
    for clone in (a, b):
        git(tmp_path, "clone", "-q", f"file://{origin}", str(clone))
    run_git_vivary(["check", "--rev", "HEAD"], a)
    assert run_git_vivary(["sync", "push"], a).returncode == 0
    # b records a different tree without having fetched a's cache, then pushes: a's entries survive.
    (b / "modules" / "m3.md").write_text("---\nstatus: new\n---\n# Module three\n")
    git(b, "add", "-A")
    git(b, "commit", "-q", "-m", "m3")
    run_git_vivary(["check", "--rev", "HEAD"], b)
    r = run_git_vivary(["sync", "push"], b)
    assert r.returncode == 0, r.stderr
    git(a, "fetch", "-q", "origin", "+refs/vivary/cache:refs/vivary-check")
    snap = Snapshot.load(GitRepo(a), "refs/vivary-check")
    assert snap is not None and len(snap.manifest.trees) == 2
    assert snap.verify() == []
    # a fetches: fast-forward onto the merged cache
    r = run_git_vivary(["sync", "fetch"], a)
    assert "adopted from origin" in r.stdout and tip(a) == snap.commit


def test_a_tampered_remote_cache_is_not_adopted(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", "refs/vivary/cache")
    # Someone rewrites the remote's cache with a modified chunk (the manifest left as it was).
    r = GitRepo(repo.path)
    snap = Snapshot.load(r)
    assert snap is not None
    path = next(p for p in snap.manifest.chunks if p.startswith("facts/"))
    data = bytearray(r.repo[snap.tree[path].id].data)
    data[-1] ^= 1
    tree = _update_tree(r, snap.tree, {path: str(r.repo.create_blob(bytes(data)))})
    bad = _create_commit(r, tree, [snap.commit], "tampered")
    repo.git("push", "-q", "--force", f"file://{origin}", f"{bad}:refs/vivary/cache")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    res = run_git_vivary(["sync", "fetch"], me)
    assert res.returncode == 3 and "Traceback" not in res.stderr
    assert "is damaged" in res.stderr and "refs/vivary-fetch/origin/cache" in res.stderr
    assert not tip(me), "nothing adopted"
    out = run_git_vivary(["check", "--rev", "HEAD"], me)
    assert out.returncode == 1 and "Traceback" not in out.stderr


def test_a_damaged_remote_cache_names_the_push_that_replaces_it(repo: Repo, tmp_path: Path) -> None:
    """`sync push` met a damaged remote cache and said "run `git vivary cache drop` and push a fresh one": doing that
    met the same remote cache, exit 3 again, for ever. It names `sync push --force REMOTE` (ours verified; the
    lease holds it to the commit it refused), which works; `cache verify --ref` of the staged copy no longer
    names `cache drop` (which deletes our good cache and leaves the remote's as it was)."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    origin = bare(tmp_path, "origin.git")
    repo.git("remote", "add", "origin", f"file://{origin}")
    assert run_git_vivary(["sync", "push"], repo.path).returncode == 0
    r = GitRepo(repo.path)
    snap = Snapshot.load(r)
    assert snap is not None
    good = snap.commit
    truncated = r.repo[snap.tree["manifest.msgpack"].id].data[:10]
    tree = _update_tree(r, snap.tree, {"manifest.msgpack": str(r.repo.create_blob(truncated))})
    bad = _create_commit(r, tree, [good], "damaged")
    repo.git("push", "-q", "--force", "origin", f"{bad}:refs/vivary/cache")

    pushed = run_git_vivary(["sync", "push"], repo.path)
    assert pushed.returncode == 3 and "Traceback" not in pushed.stderr
    assert f"origin's cache ({bad[:12]}, fetched into refs/vivary-fetch/origin/cache) is damaged" in pushed.stderr
    assert "`git vivary sync push --force origin` replaces it with ours" in pushed.stderr
    assert f"only while origin holds {bad[:12]} or a cache this clone has seen" in pushed.stderr
    assert "cache drop" not in pushed.stderr, pushed.stderr
    fetched = run_git_vivary(["sync", "fetch"], repo.path)
    assert fetched.returncode == 3 and "`git vivary sync push --force origin`" in fetched.stderr
    assert "should run `git vivary cache drop`" not in fetched.stderr
    verify = run_git_vivary(["cache", "verify", "--ref", "refs/vivary-fetch/origin/cache"], repo.path)
    assert verify.returncode == 1 and "Fix: `git vivary cache drop`" not in verify.stderr
    assert "this is origin's cache as `git vivary sync fetch` staged it" in verify.stderr
    assert "`git vivary sync push --force origin`" in verify.stderr
    mine = run_git_vivary(["cache", "verify"], repo.path)
    assert mine.returncode == 0, mine.stdout + mine.stderr
    repo.git("update-ref", "refs/other/cache", bad)
    other = run_git_vivary(["cache", "verify", "--ref", "refs/other/cache"], repo.path)
    assert other.returncode == 1 and "`git update-ref -d refs/other/cache` removes it" in other.stderr

    # A cache pushed there since, which this clone has never seen, is not replaced blind: fetch looks at it first.
    other_clone = tmp_path / "other"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(other_clone))
    git(other_clone, "fetch", "-q", "origin", "refs/vivary/cache")
    sound = git(other_clone, "commit-tree", f"{good}^{{tree}}", "-m", "sound").strip()
    git(other_clone, "push", "-q", "--force", "origin", f"{sound}:refs/vivary/cache")
    blind = run_git_vivary(["sync", "push", "--force", "origin"], repo.path)
    assert blind.returncode == 3 and f"origin's cache is now {sound[:12]}, which this clone has never seen" in \
        blind.stderr and "`git vivary sync fetch origin` looks at it first" in blind.stderr, blind.stderr
    assert git(tmp_path, "--git-dir", str(origin), "rev-parse", "refs/vivary/cache").strip() == sound
    git(other_clone, "push", "-q", "--force", "origin", f"{bad}:refs/vivary/cache")

    # What it names fixes it: the remote holds ours again, and a fresh clone adopts it.
    forced = run_git_vivary(["sync", "push", "--force", "origin"], repo.path)
    assert forced.returncode == 0, forced.stderr
    assert git(tmp_path, "--git-dir", str(origin), "rev-parse", "refs/vivary/cache").strip() == tip(repo.path)
    assert run_git_vivary(["sync", "push"], repo.path).returncode == 0
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0


WRITER = textwrap.dedent("""
    import sys
    from pathlib import Path
    from vivary_git.git import Repo
    from vivary_git.store.write import put_state
    repo = Repo(Path(sys.argv[1]))
    who, n = sys.argv[2], int(sys.argv[3])
    for i in range(n):
        put_state(repo, "race", f"{who}-{i}", {"data": f"{who} {i}".encode()})
""")


def test_concurrent_writers_both_finish_and_nothing_is_lost(repo: Repo, cli: Any) -> None:
    repo.commit("notes", NOTES)
    cli("check", "--rev", "HEAD", cwd=repo.path)
    n = 12
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(repo.path), who, str(n)], stderr=subprocess.PIPE)
             for who in ("a", "b", "c")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    r = GitRepo(repo.path)
    snap = Snapshot.load(r)
    assert snap is not None and snap.verify() == []
    assert get_state(r, "race", "b-7", "data") is None, "reading state is up to vivary.cacheTrust"
    repo.git("config", "vivary.cacheTrust", "any")
    keys = list_states(r, "race")
    assert len(keys) == 3 * n, "every writer's every entry is there"
    assert get_state(r, "race", "b-7", "data") == b"b 7"
    assert len(snap.manifest.trees) == 1, "and what was there before"
    chain = git(repo.path, "rev-list", "--count", CACHE_REF).strip()
    assert int(chain) == 1 + 3 * n


def test_concurrent_checks_of_two_trees(repo: Repo) -> None:
    first = repo.commit("notes", NOTES)
    repo.commit("more", {"modules/m3.md": "---\nstatus: x\n---\n# Three\n"})
    procs = [subprocess.Popen(["git", "vivary", "check", "--rev", rev], cwd=repo.path, stderr=subprocess.PIPE,
                              stdout=subprocess.DEVNULL, env=dict(os.environ, PATH=f"{Path(sys.executable).parent}"
                                                                  f"{os.pathsep}{os.environ['PATH']}"))
             for rev in (first, "HEAD")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        # both trees have findings (exit 1); a lost race on the cache ref is retried, never an error
        assert (p.returncode, err.decode()) == (1, ""), err.decode()
    snap = Snapshot.load(GitRepo(repo.path))
    assert snap is not None and len(snap.manifest.trees) == 2 and snap.verify() == []


# The writer above, paused between "every object written" and "ref moved" (write._test_pause): it says
# so in a marker file, so the test kills it exactly there, not before it wrote anything.
PAUSED_WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from vivary_git.git import Repo
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store import write
    from vivary_git.store.read import _tip

    def pause():
        Path(sys.argv[2]).write_text(_tip(repo, CACHE_REF) or "")
        time.sleep(60)

    write._test_pause = pause
    repo = Repo(Path(sys.argv[1]))
    write.put_state(repo, "race", "doomed", {"data": b"never recorded"})
""")


def test_a_writer_killed_mid_write_leaves_the_old_cache(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    cli("check", "--rev", "HEAD", cwd=repo.path)
    before = tip(repo.path)
    objects = set(git(repo.path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    marker = tmp_path / "paused"
    p = subprocess.Popen([sys.executable, "-c", PAUSED_WRITER, str(repo.path), str(marker)])
    deadline = time.monotonic() + 60
    while not marker.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert marker.exists(), f"the writer never reached the pause (exit {p.poll()})"
    p.send_signal(signal.SIGKILL)
    assert p.wait() == -signal.SIGKILL
    assert marker.read_text() == before, "it paused on top of the cache we had"
    written = set(git(repo.path, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    assert len(written - objects) >= 3, "its new commit, tree and chunk are in the object database"
    assert tip(repo.path) == before
    assert not (repo.path / ".git" / "refs" / "vivary" / "cache.lock").exists()
    assert cli("cache", "verify", cwd=repo.path).code == 0
    ok = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert ok.code == 1 and "Traceback" not in ok.err
    put_state(GitRepo(repo.path), "race", "after", {"data": b"fine"})
    assert tip(repo.path) != before


def test_private_content_never_travels(repo: Repo, tmp_path: Path) -> None:
    from test_store import CANARIES

    repo.write(CANARIES)
    repo.git("add", "-A")
    repo.git("add", "-f", "drafts/plan.md")
    repo.git("commit", "-q", "-m", "canaries")
    repo.git("config", "vivary.notes", "true")
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    origin = bare(tmp_path, "origin.git")
    assert run_git_vivary(["sync", "push", f"file://{origin}"], repo.path).returncode == 0
    blob = objects_reachable(origin, CACHE_REF, NOTES_REF)
    assert b"PUBLIC-MARKER" in blob and b"PRIVATE-CANARY" not in blob


def test_push_from_a_shallow_clone_says_what_git_said(repo: Repo, tmp_path: Path) -> None:
    # CI clones with --depth 1 and fetches the tip of the cache chain only; pushing that chain to a remote
    # that lacks its older commits is refused by Git ("shallow update not allowed"), not by a race.
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    first = tmp_path / "first"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(first))
    assert run_git_vivary(["check", "--rev", "HEAD"], first).returncode == 1
    assert run_git_vivary(["sync", "push"], first).returncode == 0
    repo.commit("more", {"notes/more.md": "# More\n"})
    repo.git("push", "-q", f"file://{origin}", "main")
    ci = tmp_path / "ci"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{origin}", str(ci))
    assert run_git_vivary(["sync", "fetch"], ci).returncode == 0
    run_git_vivary(["check", "--rev", "HEAD"], ci)
    mirror = bare(tmp_path, "mirror.git")
    r = run_git_vivary(["sync", "push", f"file://{mirror}"], ci)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "kept changing" not in r.stderr
    lines = r.stderr.splitlines()
    assert "shallow clone lacks" in lines[0] and "`git vivary cache gc`" in lines[0]
    # Git's whole message, each line indented under ours.
    assert f"  To file://{mirror}" in lines
    assert any(line.startswith("  !\\t") and line.endswith("\\t[remote rejected] (shallow update not allowed)")
               for line in lines)
    assert "  error: failed to push some refs to " + f"'file://{mirror}'" in lines
    # The way out it names works.
    assert run_git_vivary(["cache", "gc"], ci).returncode == 0
    assert run_git_vivary(["sync", "push", f"file://{mirror}"], ci).returncode == 0


def test_an_unreachable_remote_shows_all_of_gits_message_escaped(repo: Repo, tmp_path: Path) -> None:
    from test_escape import assert_inert

    repo.commit("notes", NOTES)
    hostile = str(tmp_path / "nowhere\n::error title=Forged::x ##[warning]y")
    r = run_git_vivary(["sync", "fetch", hostile], repo.path)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.splitlines()
    assert lines[0].startswith("git vivary sync: cannot reach remote ")
    assert len(lines) > 2 and all(line.startswith("  ") for line in lines[1:]), lines  # not just the last line
    assert any("does not appear to be a git repository" in line for line in lines[1:])
    assert_inert(r.stderr)


def test_push_leaves_provider_state_out_so_fetch_adopts_it(repo: Repo, tmp_path: Path) -> None:
    """`sync fetch` refuses a cache holding provider state files (opaque bytes it cannot check), so `sync
    push` never publishes one: the remote gets the same parses, facts and summaries, without the states,
    and no object of them is reachable there. They stay in this clone."""
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1
    r = GitRepo(repo.path)
    put_state(r, "vivary-local", "k1", {"index.bin": b"STATE-BYTES-one"})
    for round_ in range(2):
        push = run_git_vivary(["sync", "push", f"file://{origin}"], repo.path)
        assert push.returncode == 0, push.stderr
        assert "1 memory-provider state file(s) stay in this clone" in push.stderr
        published = objects_reachable(origin, CACHE_REF)
        assert b"STATE-BYTES" not in published, round_
        names = [line.split(" ", 1)[1] for line in git(origin, "rev-list", "--objects", CACHE_REF).splitlines()
                 if " " in line]
        assert "parse" in names and not [n for n in names if n.startswith("state")], names
        mine = Snapshot.load(r)
        theirs = Snapshot.load(r, commit=git(origin, "rev-parse", CACHE_REF).strip())
        assert mine is not None and theirs is not None
        assert theirs.manifest.chunks == mine.manifest.chunks and theirs.manifest.trees == mine.manifest.trees
        assert theirs.manifest.states == {} and len(mine.manifest.states) == 1
    assert "already has" in push.stdout, "pushing again publishes nothing new"
    # Another clone fetches and adopts it (it refused it before), and its own check reads it.
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    fetched = run_git_vivary(["sync", "fetch"], me)
    assert fetched.returncode == 0 and "adopted from origin" in fetched.stdout, fetched.stderr
    # More state and more entries here: the next push builds on what the remote has, still without state.
    put_state(r, "vivary-local", "k2", {"index.bin": b"STATE-BYTES-two"})
    repo.commit("m9", {"modules/m9.md": "---\nstatus: new\n---\n# Nine\n"})
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    before = git(origin, "rev-parse", CACHE_REF).strip()
    assert run_git_vivary(["sync", "push", f"file://{origin}"], repo.path).returncode == 0
    after = git(origin, "rev-parse", CACHE_REF).strip()
    assert git(origin, "rev-parse", f"{after}^").strip() == before, "the published chain grows by one commit"
    assert b"STATE-BYTES" not in objects_reachable(origin, CACHE_REF)
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    git(repo.path, "config", "vivary.cacheTrust", "any")
    assert get_state(r, "vivary-local", "k2", "index.bin") == b"STATE-BYTES-two", "kept here"


def test_list_states_follows_trust(repo: Repo) -> None:
    """Which state files a provider has is read from the cache commit this clone trusts, like their bytes."""
    repo.commit("notes", NOTES)
    r = GitRepo(repo.path)
    put_state(r, "vivary-local", "k1", {"index.bin": b"x"})
    assert list_states(r, "vivary-local") == {}, "vivary.cacheTrust none: nothing is read"
    assert get_state(r, "vivary-local", "k1", "index.bin") is None
    repo.git("config", "vivary.cacheTrust", "signed")
    assert list_states(r, "vivary-local") == {}, "no signed commit"
    repo.git("config", "vivary.cacheTrust", "any")
    assert list_states(r, "vivary-local") == {"k1": ["index.bin"]}


def test_fetch_refuses_provider_state_anywhere_in_the_chain(repo: Repo, tmp_path: Path) -> None:
    """A remote chain whose tip holds no state file but an older commit does: fetching it would adopt
    those opaque bytes (reachable, and read by `vivary.cacheTrust signed` when that commit is the newest
    signed one), so it is refused like a tip that holds them."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    r = GitRepo(repo.path)
    put_state(r, "vivary-local", "k1", {"index.bin": b"STATE-BYTES"})
    snap = Snapshot.load(r)
    assert snap is not None
    # A commit on top that drops the state folder (as another tool might write it).
    builder = r.repo.TreeBuilder(snap.tree)
    builder.remove("state")
    m = snap.manifest
    manifest = Manifest(store=m.store, format=m.format, chain=m.chain + 1, writer=m.writer, written=m.written,
                              chunks=m.chunks, trees=m.trees, states={})
    import msgspec

    builder.insert("manifest.msgpack", r.repo.create_blob(msgspec.msgpack.encode(manifest)), 0o100644)
    top = _create_commit(r, str(builder.write()), [snap.commit], "state dropped")
    repo.git("update-ref", CACHE_REF, top)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", f"{CACHE_REF}:{CACHE_REF}")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    got = run_git_vivary(["sync", "fetch"], me)
    assert got.returncode == 3 and "memory-provider state" in got.stderr, got.stderr
    assert git(me, "rev-parse", "-q", "--verify", CACHE_REF, check=False).strip() == ""


# --- sync fetch verifies on two cores: the verdict is the same with or without the child -------------------

_VECTOR = struct.pack("<f", 1 / 127) + b"\x7f" + bytes(7)  # a stored vector: one component at full scale
_STAGED = "refs/vivary-fetch/origin/cache"


def _publish(repo: Repo, tmp_path: Path) -> Path:
    """An origin whose cache holds NOTES' parses and facts and 48 vectors: some 60 chunks, so both halves
    of a split hold parse, facts or vector chunks."""
    repo.commit("notes", NOTES)
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1
    vectors = {hashlib.sha1(str(i).encode()).hexdigest(): msgspec.msgpack.encode(_VECTOR) for i in range(48)}
    assert write(GitRepo(repo.path), Changes(vectors=vectors)) is not None
    origin = bare(tmp_path, "origin.git")
    git(repo.path, "remote", "add", "origin", f"file://{origin}")
    repo.git("push", "-q", "origin", "main", CACHE_REF)
    return origin


def _damage(repo: Repo, damage: str, share: str) -> list[str]:
    """Damage the publisher's cache in a chunk of `share` (`child`: an odd place in the sorted chunk paths,
    which `Snapshot.verify` gives its child; `here`: an even one) and push it to origin, as anyone who can
    push the ref could. The problems `cache verify` must list, in order (what `sync fetch` says of a sound
    cache, when there are none)."""
    from test_store import _rewrite

    r = GitRepo(repo.path)
    snap = Snapshot.load(r)
    assert snap is not None
    paths = sorted(snap.manifest.chunks)
    odd = share == "child"

    def data(path: str) -> bytes:
        blob: bytes = r.repo[snap.tree[path].id].data
        return blob

    if damage == "tampered":
        path = paths[1 if odd else 2]
        _rewrite(repo.path, {path: data(path)[:-1] + bytes([data(path)[-1] ^ 1])})
        said = [f"{path} does not match its sha256 in the manifest (modified?)"]
    elif damage == "truncated":
        path = paths[1 if odd else 2]
        _rewrite(repo.path, {path: data(path)[:len(data(path)) // 2]})
        said = [f"{path} is {len(data(path)) // 2} bytes, the manifest says {len(data(path))} (truncated?)"]
    elif damage == "forged-vector":  # a consistent forgery: the manifest's digests match the forged chunk
        path = next(p for i, p in enumerate(paths) if p.startswith("vectors/") and i % 2 == odd)
        key = msgspec.msgpack.decode(data(path))[0][0]
        assert write(r, Changes(vectors={key: msgspec.msgpack.encode(b"\x00\x00\x80\x3b" + b"\x80" * 8)}))
        said = [f"{path} holds a vector for {key[:12]} that holds the code -128, which is never written"]
    elif damage == "two":  # one in each share; the child's comes first in the chunks' order
        first, second = paths[1], paths[2]
        _rewrite(repo.path, {first: data(first)[:-1] + bytes([data(first)[-1] ^ 1]), second: data(second)[:3]})
        said = [f"{first} does not match its sha256 in the manifest (modified?)",
                f"{second} is 3 bytes, the manifest says {len(data(second))} (truncated?)"]
    elif damage == "bad-manifest":
        _rewrite(repo.path, {"manifest.msgpack": msgspec.msgpack.encode({"store": "one", "chunks": [1, 2]})})
        said = ["manifest.msgpack is not a valid manifest (Expected `int`, got `str` - at `$.store`)"]
    else:
        return ["adopted from origin"]
    repo.git("push", "-q", "-f", "origin", f"{CACHE_REF}:{CACHE_REF}")
    return said


@pytest.fixture
def checked_here(monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[bool]]:
    """The chunks this process checked (`Snapshot.chunk`, wrapped, not mocked), and whether each
    `parallel.Forked` job went to a child; every cache is worth a child (no size floor)."""
    from vivary_git import parallel

    monkeypatch.setattr(store_read, "VERIFY_FORK_AT", 0)
    here: list[str] = []
    went: list[bool] = []
    parent = os.getpid()
    real_chunk, real_init = Snapshot.chunk, parallel.Forked.__init__

    def chunk(self: Snapshot, kind: str, prefix: str) -> dict[str, Any]:
        if os.getpid() == parent:
            here.append(f"{kind}/{prefix}.msgpack")
        return real_chunk(self, kind, prefix)

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        real_init(self, *args, **kwargs)
        went.append(self.forked)

    monkeypatch.setattr(Snapshot, "chunk", chunk)
    monkeypatch.setattr(parallel.Forked, "__init__", init)
    return here, went


def _fetch_and_verify(cli: Any, path: Path) -> tuple[tuple[int, str, str], tuple[int, str, str], str]:
    fetched = cli("sync", "fetch", cwd=path)
    with pytest.raises(ChildProcessError):  # every child it started is gone and waited for, whatever happened
        os.waitpid(-1, os.WNOHANG)
    verified = cli("cache", "verify", "--ref", _STAGED, cwd=path)
    return (fetched.code, fetched.out, fetched.err), (verified.code, verified.out, verified.err), tip(path)


@pytest.mark.parametrize(("damage", "share"), [
    ("sound", ""), ("tampered", "child"), ("tampered", "here"), ("truncated", "child"), ("truncated", "here"),
    ("forged-vector", "child"), ("forged-vector", "here"), ("two", "both"), ("bad-manifest", ""),
])
def test_sync_fetch_says_the_same_whether_a_child_checks_half_the_chunks(
        repo: Repo, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        checked_here: tuple[list[str], list[bool]], damage: str, share: str) -> None:
    """`sync fetch` checks every other chunk of the fetched cache in a forked child. Whatever the damage
    and whichever process's share it is in, it refuses (exit 3) with the message, and `cache verify` lists
    the problems in the order, that one process checking every chunk gives; damage only the child read is
    still reported. A sound cache is adopted alike."""
    origin = _publish(repo, tmp_path)
    problems = _damage(repo, damage, share)
    said = problems[0]
    here, went = checked_here
    results = {}
    for jobs in ("1", "2"):
        monkeypatch.setenv("VIVARY_JOBS", jobs)
        results[jobs] = _fetch_and_verify(cli, clone_of(origin, tmp_path / f"jobs{jobs}"))
        forked = went[:]
        went.clear()
        if jobs == "1":
            assert not any(forked)
            alone = here[:]
            here.clear()
    (code, out, err), (vcode, vout, verr), adopted = results["2"]
    assert results["2"] == results["1"]
    if damage == "bad-manifest":
        assert forked == []  # nothing to split: the manifest itself is refused
    else:
        assert forked == [True, True], "the fetch's verify and `cache verify` each had a child"
    if damage == "sound":
        assert code == 0 and said in out and adopted == tip(repo.path), err
        assert vcode == 0, verr
        assert len(here) < len(alone) and set(alone) - set(here), "the child checked its share, not this process"
        return
    assert code == 3 and f"is damaged ({said}); ours is unchanged" in err and "Traceback" not in err, err
    assert adopted == "" and vcode == 1 and "damaged; it is ignored" in verr
    assert vout.splitlines() == [f"{_STAGED}: {p}" for p in problems]
    if share in ("child", "both"):
        damaged = said.split()[0]
        assert damaged in alone and damaged not in here, "the child found it, and this process never read it"


@pytest.mark.parametrize("damage", ["sound", "tampered"])
def test_sync_fetch_checks_a_failed_childs_share_itself(
        repo: Repo, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        checked_here: tuple[list[str], list[bool]], damage: str) -> None:
    """A child that cannot finish its share: this process checks it, with the same verdict."""
    origin = _publish(repo, tmp_path)
    said = _damage(repo, damage, "child")[0]
    here, went = checked_here
    monkeypatch.setenv("VIVARY_JOBS", "1")
    expected = _fetch_and_verify(cli, clone_of(origin, tmp_path / "alone"))
    alone = here[:]
    here.clear()
    went.clear()
    monkeypatch.setenv("VIVARY_JOBS", "2")
    parent, real = os.getpid(), Snapshot._chunk_problems

    def failing(self: Snapshot, paths: Any) -> list[str | None]:
        if os.getpid() != parent:
            raise MemoryError("a child that cannot finish")
        return real(self, paths)

    monkeypatch.setattr(Snapshot, "_chunk_problems", failing)
    assert _fetch_and_verify(cli, clone_of(origin, tmp_path / "forking")) == expected
    assert went == [True, True]
    assert sorted(here) == sorted(alone), "this process checked every chunk itself, in both commands"
    assert said in (expected[0][1] if damage == "sound" else expected[0][2])


def clone_of(origin: Path, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    git(path.parent, "clone", "-q", f"file://{origin}", str(path))
    return path


@pytest.mark.parametrize("where", ["subfolder", "bare", "GIT_DIR"])
def test_sync_fetch_runs_git_where_the_repository_is(repo: Repo, tmp_path: Path, where: str) -> None:
    """`sync fetch` lists and fetches while it opens the repository, in the folder Git always runs in for
    it: the work tree's top, whichever subfolder it starts in (a relative URL is read from the top), a bare
    repository's git dir, or what GIT_DIR names."""
    origin = _publish(repo, tmp_path)
    me = tmp_path / "me"
    if where == "bare":
        git(tmp_path, "clone", "-q", "--bare", f"file://{origin}", str(me))
        r = run_git_vivary(["sync", "fetch", "../origin.git"], me)
    elif where == "subfolder":
        clone_of(origin, me)
        r = run_git_vivary(["sync", "fetch", "../origin.git"], me / "modules")
    else:
        clone_of(origin, me)
        r = run_git_vivary(["sync", "fetch", "origin"], tmp_path, env={"GIT_DIR": str(me / ".git")})
    assert r.returncode == 0 and "refs/vivary/cache: adopted from" in r.stdout, r.stderr
    assert tip(me) == tip(repo.path)


def _value_problem_as_first_written(value: bytes) -> str | None:
    """`vectorvalue.value_problem` as it was first written, on a copy of the codes: what it must agree with."""
    from vivary_git.memory.local import vectorvalue as vv

    dim = len(value) - 4
    if not 1 <= dim <= vv.MAX_DIM:
        return f"is {len(value)} bytes, not a scale and 1 to {vv.MAX_DIM} components"
    (scale,) = struct.unpack_from("<f", value)
    if not (math.isfinite(scale) and vv._MIN_SCALE <= scale <= vv._MAX_SCALE):
        return "has a scale out of range"
    codes = value[4:]
    if b"\x80" in codes:
        return "holds the code -128, which is never written"
    if b"\x7f" not in codes and b"\x81" not in codes:
        return "has no component at full scale (+-127)"
    return None


@pytest.mark.parametrize("value", [
    _VECTOR, _VECTOR[:4], _VECTOR[:4] + b"\x01" * 8, _VECTOR[:4] + b"\x01" * 7 + b"\x81",
    _VECTOR[:4] + b"\x01" * 7 + b"\x80", _VECTOR[:4] + b"\x80" + b"\x7f" * 7, _VECTOR + b"\x00" * 4096,
    # A scale whose bytes hold the codes searched for (0x7f, 0x80, 0x81): only the codes count.
    b"\x0b\x23\x81\x3a" + b"\x01" * 8, b"\x7f\x00\x01\x3c" + b"\x01" * 8, b"\x80\x00\x01\x3c" + b"\x7f" + b"\x01" * 7,
    b"\x00\x00\xc0\x7f" + b"\x7f" * 8, b"\x00\x00\x80\x3f" + b"\x7f" * 8,
])
def test_a_fetched_vector_is_judged_as_it_always_was(value: bytes) -> None:
    from vivary_git.memory.local.vectorvalue import value_problem

    assert value_problem(value) == _value_problem_as_first_written(value)


@pytest.mark.parametrize("how", ["plain", "GIT_DIR"])
def test_sync_fetch_refuses_a_file_of_head_dressed_up_as_a_chunk(repo: Repo, tmp_path: Path, how: str) -> None:
    """A chunk that verifies (an empty list, its digest in the manifest) but is a blob of HEAD's tree, a
    file of the work tree: refused. HEAD is read while Git fetches (plain), or after (GIT_DIR)."""
    repo.commit("notes", {**NOTES, "data.bin": b"\x90"})  # an empty msgpack array
    _publish(repo, tmp_path)
    r = GitRepo(repo.path)
    snap = Snapshot.load(r)
    assert snap is not None
    path = sorted(p for p in snap.manifest.chunks if p.startswith("parse/"))[-1]
    chunks = {**snap.manifest.chunks, path: ChunkRef(hashlib.sha256(b"\x90").hexdigest(), 1, 0)}
    files = {path: str(r.repo.create_blob(b"\x90")),
             "manifest.msgpack": str(r.repo.create_blob(msgspec.msgpack.encode(
                 msgspec.structs.replace(snap.manifest, chunks=chunks))))}
    forged = _create_commit(r, _update_tree(r, snap.tree, files), [snap.commit], "forged")
    repo.git("push", "-q", "-f", "origin", f"{forged}:{CACHE_REF}")
    me = clone_of(tmp_path / "origin.git", tmp_path / "me")
    git(repo.path, "update-ref", CACHE_REF, forged)
    assert run_git_vivary(["cache", "verify"], repo.path).returncode == 0  # well formed: only HEAD tells
    env = {"GIT_DIR": str(me / ".git")} if how == "GIT_DIR" else None
    res = run_git_vivary(["sync", "fetch"], me if env is None else tmp_path, env=env)
    name = path.split("/")[1]
    assert res.returncode == 3 and f"holds {name}, which is a file of HEAD's tree, not cache data" in res.stderr, \
        res.stderr
    assert not tip(me)


def _fetch_refs(path: Path) -> str:
    return git(path, "for-each-ref", "refs/vivary-fetch/", "refs/vivary/")


@pytest.mark.parametrize("how", ["GIT_WORK_TREE", "core.worktree"])
def test_sync_fetch_writes_only_into_its_own_repository(repo: Repo, tmp_path: Path, how: str) -> None:
    """A repository whose work tree lies inside another repository (`git --work-tree=…`, or core.worktree):
    `sync fetch` stages and adopts the cache in the repository it was run for, and writes not a ref into the
    one around the work tree, not even for a moment."""
    origin = _publish(repo, tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q", "-b", "main")
    git(other, "remote", "add", "origin", f"file://{origin}")  # the same remote name, as clones of one project have
    tree = other / "tree"
    tree.mkdir()
    me = clone_of(origin, tmp_path / "me")
    if how == "GIT_WORK_TREE":
        r = run_git_vivary(["sync", "fetch", "origin"], me, env={"GIT_WORK_TREE": str(tree)})
    else:
        git(me, "config", "core.worktree", str(tree))
        r = run_git_vivary(["sync", "fetch", "origin"], me)
    assert r.returncode == 0 and "refs/vivary/cache: adopted from" in r.stdout, r.stderr
    assert tip(me) == tip(repo.path)
    assert _fetch_refs(other) == ""


def test_a_cache_ref_naming_a_blob_is_said_in_plain_words(repo: Repo, tmp_path: Path) -> None:
    """A cache ref set to a blob: "commit 45b983be36b7 cannot be read (the git_object of id '…' can not be
    successfully peeled into a tree (git_object_t=2).)" was libgit2's text. It says what the ref names and the fix."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    (tmp_path / "not-a-cache").write_text("hi\n")
    blob = git(repo.path, "hash-object", "-w", "--", str(tmp_path / "not-a-cache")).strip()
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", f"{blob}:refs/vivary/cache")
    repo.git("update-ref", "refs/vivary/cache", blob)
    said = f"it names a blob ({blob[:12]}), not a commit"
    for args, code in ((["cache", "verify"], 1), (["cache", "status"], 0), (["sync", "push"], 3)):
        r = run_git_vivary(args, repo.path)
        out = r.stdout + r.stderr
        assert r.returncode == code and said in out, (args, out)
        assert "git_object" not in out and "peeled" not in out and "Traceback" not in out, (args, out)
    assert "`git vivary cache drop` removes it" in run_git_vivary(["cache", "status"], repo.path).stdout
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    fetched = run_git_vivary(["sync", "fetch"], me)
    assert fetched.returncode == 3 and said in fetched.stderr and "git_object" not in fetched.stderr
    assert "`git vivary sync push --force origin`" in fetched.stderr
    assert run_git_vivary(["cache", "drop"], repo.path).returncode == 0
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    assert run_git_vivary(["cache", "verify"], repo.path).returncode == 0


@pytest.mark.parametrize("kind", ["tree", "tag"])
def test_a_cache_ref_naming_a_tree_or_a_tag_is_damaged_and_no_writer_crashes(repo: Repo, tmp_path: Path,
                                                                              kind: str) -> None:
    """A cache ref set to its own commit's tree, or to an annotated tag of a cache commit, was read as the cache
    (peeled), so `sync fetch` adopted it, `cache verify` said ok, and every recording run then made it the parent
    of a commit: a traceback (`NotFoundError: the requested type does not match the type in the ODB`), exit 1.
    Every read requires a commit exactly: fetch refuses it (exit 3), verify and status say what it names, and a
    writer says so once and carries on without the shared cache."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    good = tip(repo.path)
    if kind == "tree":
        bad = repo.git("rev-parse", f"{good}^{{tree}}").strip()
        said = f"it names a tree ({bad[:12]}), not a commit"
    else:
        tag = f"object {good}\ntype commit\ntag c\ntagger t <t@t> 0 +0000\n\nc\n"
        bad = subprocess.run(["git", "mktag"], cwd=repo.path, input=tag.encode(), check=True,
                             capture_output=True).stdout.decode().strip()
        said = f"it names an annotated tag ({bad[:12]}), not a commit"
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", f"{bad}:refs/vivary/cache")
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    fetched = run_git_vivary(["sync", "fetch"], me)
    assert fetched.returncode == 3 and said in fetched.stderr, fetched.stdout + fetched.stderr
    assert "`git vivary sync push --force origin`" in fetched.stderr
    assert tip(me) == "", "not adopted"
    # Our own ref set so: reads say what it names, writers carry on without it.
    repo.git("update-ref", "refs/vivary/cache", bad)
    for args, code in ((["cache", "verify"], 1), (["cache", "status"], 0), (["sync", "push", "origin"], 3)):
        r = run_git_vivary(args, repo.path)
        out = r.stdout + r.stderr
        assert r.returncode == code and said in out and "Traceback" not in out, (args, out)
    repo.commit("two", {"notes/two.md": "# Two\n"})
    git(repo.path, "config", "vivary.cacheTrust", "any")
    for args in (["check", "--rev", "HEAD"], ["check"], ["ci"], ["graph"], ["query", "type:decision"]):
        r = run_git_vivary(args, repo.path)
        assert r.returncode in (0, 1) and "Traceback" not in r.stderr, (args, r.stderr)  # 1: NOTES' findings
        assert r.stderr.count(said) == 1 and "`git vivary cache drop` removes it" in r.stderr, (args, r.stderr)
    assert repo.git("rev-parse", "refs/vivary/cache").strip() == bad, "a damaged cache is not written on"
    assert run_git_vivary(["cache", "drop"], repo.path).returncode == 0
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    assert run_git_vivary(["cache", "verify"], repo.path).returncode == 0


def test_a_cache_ref_naming_a_tree_that_is_no_cache_says_so(repo: Repo) -> None:
    """A ref set to any tree (here the notes' own) was 'manifest.msgpack is missing': it names a tree, not a commit."""
    repo.commit("notes", NOTES)
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    repo.git("update-ref", "refs/vivary/cache", tree)
    r = run_git_vivary(["cache", "verify"], repo.path)
    assert r.returncode == 1 and f"it names a tree ({tree[:12]}), not a commit" in r.stdout, r.stdout + r.stderr
    assert "manifest.msgpack is missing" not in r.stdout


@pytest.mark.parametrize("how", ["garbage", "loop"])
def test_a_cache_ref_that_does_not_parse_is_called_damaged_and_cache_drop_removes_it(repo: Repo, tmp_path: Path,
                                                                                   how: str) -> None:
    """A `refs/vivary/cache` file that holds no object id (or a symbolic ref to itself): every recording run said
    "refs/vivary/cache moved 8 times while this run was recording" (nothing moved: Git refuses to update a ref it
    cannot read), `cache status` "none yet", `cache verify` "no such ref" (exit 0), `cache drop` "none; nothing to
    drop", leaving it, and `sync push` "there is no refs/vivary/cache". It is damage, said with its fix, and `cache
    drop` removes it (Git's `update-ref -d` refuses a broken ref)."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", "refs/vivary/cache:refs/vivary/cache")
    loose = repo.path / ".git" / "refs" / "vivary" / "cache"
    if how == "garbage":
        loose.write_text("garbage\n")
    else:
        repo.git("symbolic-ref", "refs/vivary/cache", "refs/vivary/cache")
    said = "the ref itself is unreadable"
    r = run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    assert "moved" not in r.stderr and r.stderr.count(said) == 1, r.stderr
    assert "`git vivary cache drop` removes it" in r.stderr and "Traceback" not in r.stderr
    for args, code in ((["cache", "status"], 0), (["cache", "verify"], 1), (["sync", "push", "origin"], 3),
                       (["cache", "gc"], 2)):
        r = run_git_vivary(args, repo.path)
        out = r.stdout + r.stderr
        assert r.returncode == code and said in out and "Traceback" not in out, (args, out)
    if how == "loop":
        # Git fetches past a symbolic ref that loops: the remote's sound cache replaces our damaged one.
        r = run_git_vivary(["sync", "fetch", f"file://{origin}"], repo.path)
        assert r.returncode == 0 and "refs/vivary/cache: adopted from" in r.stdout, r.stdout + r.stderr
        assert run_git_vivary(["cache", "verify"], repo.path).returncode == 0
        repo.git("symbolic-ref", "refs/vivary/cache", "refs/vivary/cache")
    else:
        # Git's fetch stops at a ref file it cannot read: the message says so, and names the fix.
        r = run_git_vivary(["sync", "fetch", f"file://{origin}"], repo.path)
        assert r.returncode == 2 and said in r.stderr and "`git vivary cache drop` removes it" in r.stderr, r.stderr
    r = run_git_vivary(["cache", "drop"], repo.path)
    assert r.returncode == 0 and "dropped refs/vivary/cache" in r.stdout, r.stdout + r.stderr
    assert not loose.exists() and not repo.git("for-each-ref", "refs/vivary/").strip()
    assert run_git_vivary(["sync", "fetch", f"file://{origin}"], repo.path).returncode == 0
    assert run_git_vivary(["cache", "verify"], repo.path).returncode == 0



def test_cache_drop_removes_staged_refs_that_do_not_parse_and_never_a_branch(repo: Repo) -> None:
    """A staged ref under refs/vivary-fetch/ whose file holds no object id is left out of every listing (Git's
    "ignoring broken ref", libgit2's too): `cache drop` left it for good. A staged ref made a symbolic ref to a
    branch was deleted through it, branch and all, and one leading to no ref stayed. Drop removes each staged ref
    itself, says which and why, and leaves the branch."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    repo.git("branch", "keep")
    keep = repo.git("rev-parse", "keep").strip()
    staged = repo.path / ".git" / "refs" / "vivary-fetch"
    (staged / "origin").mkdir(parents=True)
    (staged / "origin" / "cache").write_text("garbage\n")
    repo.git("symbolic-ref", "refs/vivary-fetch/linked/cache", "refs/heads/keep")
    repo.git("symbolic-ref", "refs/vivary-fetch/gone/cache", "refs/heads/gone")
    r = run_git_vivary(["cache", "drop"], repo.path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout == ("dropped refs/vivary/cache, refs/vivary-fetch/gone/cache (a symbolic ref to no ref), "
                        "refs/vivary-fetch/linked/cache, refs/vivary-fetch/origin/cache (it did not parse)\n")
    assert not (staged / "origin" / "cache").exists() and not repo.git("for-each-ref", "refs/vivary-fetch/").strip()
    assert repo.git("rev-parse", "--verify", "refs/heads/keep").strip() == keep  # the branch is not the cache's
    r = run_git_vivary(["cache", "drop"], repo.path)
    assert r.returncode == 0 and r.stdout == "refs/vivary/cache: none; nothing to drop\n", r.stdout + r.stderr


def test_a_symbolic_cache_ref_to_no_branch_is_replaced_never_followed(repo: Repo) -> None:
    """refs/vivary/cache made a symbolic ref to a branch that does not exist reads as no cache; the recording run
    then moved it from "none" with Git's `update-ref`, which follows a symbolic ref: it made that branch, holding a
    cache commit. The cache ref itself is written now, and no branch appears."""
    repo.commit("notes", NOTES)
    repo.git("symbolic-ref", "refs/vivary/cache", "refs/heads/nowhere")
    r = run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr  # NOTES have findings
    assert not repo.git("for-each-ref", "refs/heads/nowhere").strip()
    assert repo.git("symbolic-ref", "-q", "refs/vivary/cache", check=False).strip() == ""  # a plain ref now
    r = run_git_vivary(["cache", "status"], repo.path)
    assert r.returncode == 0 and "damaged" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_cache_ref_line_git_cannot_read_in_packed_refs_is_named(repo: Repo) -> None:
    """A `packed-refs` line Git cannot read stops Git itself (`fatal: unexpected line in .git/packed-refs`); libgit2
    reads the ref as absent. A run said the ref "moved 8 times"; `cache drop` was a traceback (libgit2's "corrupted
    packed references file"). Both name the file now, and nothing is a traceback."""
    repo.commit("notes", NOTES)
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    repo.git("pack-refs", "--all")
    packed = repo.path / ".git" / "packed-refs"
    lines = [("zzzz refs/vivary/cache" if line.endswith(" refs/vivary/cache") else line)
             for line in packed.read_text().splitlines()]
    packed.write_text("\n".join(lines) + "\n")
    r = run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    assert "moved" not in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert "Git refused to move refs/vivary/cache" in r.stderr and "packed-refs" in r.stderr, r.stderr
    r = run_git_vivary(["cache", "drop"], repo.path)
    assert r.returncode == 2 and "packed-refs" in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_a_cache_ref_lock_a_killed_git_left_is_named_by_fetch_gc_and_drop(repo: Repo, tmp_path: Path) -> None:
    """Git's `refs/vivary/cache.lock`, left by a writer killed while it moved the ref, fails every move of it. `sync
    fetch` and `cache gc` said the ref "changed" and to run again, which never helped, and `cache drop` said it
    dropped the staged refs and left the cache ref there, unsaid, with exit 0. Each now names the lock file with its
    fix (exit 2), and once it is removed the same command does its work."""
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1  # NOTES have findings
    assert run_git_vivary(["sync", "push", f"file://{origin}"], repo.path).returncode == 0
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", f"file://{origin}", str(me))
    lock = me / ".git" / "refs" / "vivary" / "cache.lock"
    lock.parent.mkdir(parents=True)
    lock.write_bytes(b"")
    said = (f"refs/vivary/cache is locked: {lock.resolve()} is there (a Git command moving it now, or one killed "
            "while it did, which leaves it behind); when no Git command is running in this repository, remove that "
            "file and try again")
    r = run_git_vivary(["sync", "fetch"], me)
    assert (r.returncode, r.stderr) == (2, f"git vivary sync: {said}\n"), r.stdout + r.stderr
    lock.unlink()
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    cache = tip(me)
    assert cache
    lock.write_bytes(b"")
    r = run_git_vivary(["cache", "gc"], me)
    assert (r.returncode, r.stderr) == (2, f"git vivary cache: {said}\n"), r.stdout + r.stderr
    r = run_git_vivary(["cache", "drop"], me)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == "dropped refs/vivary-fetch/origin/cache\n"
    assert r.stderr.endswith(f"git vivary cache: not dropped: {said}\n"), r.stderr
    assert tip(me) == cache
    lock.unlink()
    r = run_git_vivary(["cache", "drop"], me)
    assert (r.returncode, r.stdout) == (0, "dropped refs/vivary/cache\n"), r.stdout + r.stderr
    assert not tip(me)
