"""The local hot cache under .git/vivary/ (localcache.py) as the pre-commit hook meets it: edit after edit."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import TROPO, Repo, run_git_vivary

from vivary_git.localcache import _MAX_SEGMENTS


def segments(repo: Repo, kind: str) -> list[Path]:
    return sorted((repo.path / ".git" / "vivary").glob(f"{kind}-v*/seg-*.msgpack"))


def keys(segs: list[Path]) -> set[str]:
    out: set[str] = set()
    for seg in segs:
        out.update(k for k, _ in msgspec.msgpack.decode(seg.read_bytes()[4:]))
    return out


def stats(err: str) -> dict[str, Any]:
    line = next(x for x in err.splitlines() if x.startswith("vivary: stats "))
    got: dict[str, Any] = msgspec.json.decode(line[len("vivary: stats "):])
    return got


def note(i: int, edit: int = 0) -> str:
    return f"---\nstatus: live\ndepends: [n{(i + 1) % 60:02d}]\n---\n# N{i}\n\n{'Body text. ' * 20}edit {edit}\n"


def test_edits_merge_their_own_small_segments_and_leave_the_cold_runs_segment_alone(repo: Repo, cli: Any) -> None:
    """A cold check writes one big parse segment; each staged check after an edit adds a small one. When
    they pile up, the small ones are merged with each other, and the big one is neither read nor rewritten
    (at 300,000 notes it is ~0.5 GB: rewriting it made one hook run in eight take 17 s and 2 GB). Once the
    edits' segments reach a quarter of it, everything is merged and the parses of blobs no longer in the
    tree are dropped. Nothing is lost on the way: the parses of the tree are all found in the cache."""
    repo.commit("many", {"tropo.toml": TROPO, **{f"modules/n{i:02d}.md": note(i) for i in range(60)}})
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
    [big] = segments(repo, "parse")
    cold = big.stat()
    first = keys([big])
    full_merge_at = None
    small_merges, before = 0, 1
    for edit in range(1, 41):
        i = edit % 60
        repo.write({f"modules/n{i:02d}.md": note(i, edit)})
        repo.git("add", "-A")
        r = run_git_vivary(["check", "--staged"], repo.path, env={"VIVARY_STATS": "1"})  # the pre-commit hook
        assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
        assert stats(r.stderr)["parsed"] <= 2  # the edited note only, never the whole tree
        repo.git("commit", "-q", "-m", f"edit {edit}")
        r = run_git_vivary(["check", "--rev", "HEAD"], repo.path, env={"VIVARY_STATS": "1"})  # as the post-commit
        assert r.returncode == 0 and stats(r.stderr)["parsed"] <= 2, r.stderr
        segs = segments(repo, "parse")
        assert 1 <= len(segs) <= _MAX_SEGMENTS
        if big in segs:
            assert (big.stat().st_ino, big.stat().st_mtime_ns) == (cold.st_ino, cold.st_mtime_ns), edit
            small_merges += len(segs) < before  # merged with each other, the big one left out
        elif full_merge_at is None:
            full_merge_at = edit
            assert len(segs) <= 2  # the merge, and what the post-commit run added after it
            tree = {line.split()[1] for line in repo.git("ls-files", "-s").splitlines()}
            assert keys(segs) <= tree  # parses of blobs gone from the tree were dropped
            assert not first <= keys(segs)
        before = len(segs)
    assert small_merges >= 2 and full_merge_at is not None and full_merge_at > _MAX_SEGMENTS, (
        small_merges, full_merge_at)

    # Every parse of the tree is still in the cache: a check with the graphs gone reparses nothing.
    for kind in ("graph", "checks", "findings", "search"):
        for path in (repo.path / ".git" / "vivary").glob(f"{kind}-v*/*"):
            path.unlink()
    r = run_git_vivary(["check", "--staged"], repo.path, env={"VIVARY_STATS": "1"})
    assert r.returncode == 0 and stats(r.stderr)["parsed"] == 0, r.stderr


def test_a_cold_runs_segment_per_parsing_process_are_all_left_alone(repo: Repo, cli: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A cold run that parsed across processes wrote one big segment per process (parses.py): each is left
    alone as the one big segment is, while the edits' small segments are merged with each other."""
    from vivary_git import parallel, parses

    monkeypatch.setattr(parallel, "MIN_BLOBS", 10)
    monkeypatch.setattr(parses, "_STREAM_ABOVE", 10)  # as a cold run of thousands of notes
    monkeypatch.setenv("VIVARY_JOBS", "2")
    repo.commit("many", {"tropo.toml": TROPO, **{f"modules/n{i:02d}.md": note(i) for i in range(60)}})
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
    bigs = segments(repo, "parse")
    assert len(bigs) == 2
    stamps = {seg: (seg.stat().st_ino, seg.stat().st_mtime_ns) for seg in bigs}
    small_merges, before = 0, len(bigs)
    for edit in range(1, 3 * _MAX_SEGMENTS):
        i = edit % 60
        repo.commit(f"edit {edit}", {f"modules/n{i:02d}.md": note(i, edit)})
        assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
        segs = segments(repo, "parse")
        assert 1 <= len(segs) <= _MAX_SEGMENTS
        if not all(seg in segs for seg in bigs):
            break  # everything merged at last
        assert {seg: (seg.stat().st_ino, seg.stat().st_mtime_ns) for seg in bigs} == stamps, edit
        small_merges += len(segs) < before
        before = len(segs)
    assert small_merges >= 1, small_merges


def test_a_killed_writers_temporary_files_are_removed_by_a_later_run(repo: Repo, cli: Any) -> None:
    """A writer killed before its rename leaves `.NAME.PID.tmp` (a parse segment is ~160 MB at 100,000 notes).
    The next run that writes in that folder removes those over an hour old; a younger one may be a living
    writer's and stays, as do the cache's own files."""
    import os
    import time

    repo.commit("one", {"tropo.toml": TROPO, "notes/n00.md": "# N0\n"})
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
    [seg] = segments(repo, "parse")
    graphs = next((repo.path / ".git" / "vivary").glob("graph-v*"))
    stale = [seg.parent / f".{seg.name}.4242.tmp", graphs / ".abc.msgpack.4242.1a2b3c4d.tmp"]
    young = seg.parent / f".seg-0.msgpack.{os.getpid()}.tmp"
    for path in [*stale, young]:
        path.write_bytes(b"half a segment")
    for path in stale:
        os.utime(path, (time.time() - 7200, time.time() - 7200))
    repo.commit("two", {"notes/n01.md": "# N1\n"})
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
    assert not any(path.exists() for path in stale)
    assert young.exists() and seg.exists()
    r = run_git_vivary(["check", "--rev", "HEAD"], repo.path, env={"VIVARY_STATS": "1"})
    assert r.returncode == 0 and stats(r.stderr)["parsed"] == 0  # the cache itself is whole


def test_whole_results_are_kept_by_count_and_by_bytes_the_newest_always(tmp_path: Path) -> None:
    """Graphs and query indexes are kept sixteen (or four) at most and within a byte budget: at 100,000 notes
    sixteen graphs and four indexes were ~2 GB. The newest three stay whatever their size: the entry just
    written, the one before it (a patch's base) and a `last` pointer."""
    import os

    from vivary_git.localcache import ObjectCache

    decoder = msgspec.msgpack.Decoder(str)

    def kept(kind: str, puts: int, keep: int, budget: int) -> list[int]:
        cache = ObjectCache(tmp_path, kind, keep=keep, budget=budget)
        for n in range(puts):
            cache.put(f"k{n}", "x" * 1000)  # ~1,007 bytes a file
            assert cache.dir is not None
            os.utime(cache.dir / f"k{n}.msgpack", ns=(n * 10**9, n * 10**9))  # in order, whatever the clock
        return [n for n in range(puts) if cache.get(f"k{n}", decoder) is not None]

    assert kept("bytes", 8, keep=6, budget=4500) == [4, 5, 6, 7]  # a fifth would make ~5,035 bytes
    assert kept("newest", 8, keep=6, budget=10) == [5, 6, 7]  # over the budget, the newest three stay
    assert kept("count", 8, keep=4, budget=10**6) == [4, 5, 6, 7]
