"""Parse many blobs on every core: cold runs on big workspaces are dominated by YAML parsing.

Workers are forked (cheap, inherit the imported modules), open their own handle on the repository
(a libgit2 handle must not be shared across a fork) and send back msgpack, which is far cheaper to
move between processes than pickled objects.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Sequence

import msgspec

from vivary_git.models import Note

MIN_BLOBS = 1500  # below this, starting workers costs more than it saves
_encoder = msgspec.msgpack.Encoder()
_decoder = msgspec.msgpack.Decoder(list[tuple[str, Note]])
_repo_path: str = ""
_repo: object = None


def _init(path: str) -> None:
    global _repo_path, _repo
    _repo_path, _repo = path, None


def _parse_chunk(oids: Sequence[str]) -> bytes:
    global _repo
    import pygit2

    from vivary_git.parse import parse_blob

    if _repo is None:
        _repo = pygit2.Repository(_repo_path)
    odb = _repo.odb  # type: ignore[attr-defined]
    out = [(oid, parse_blob(odb.read(pygit2.Oid(hex=oid))[1])) for oid in oids]
    return _encoder.encode(out)


def workers() -> int:
    """How many processes parse: `VIVARY_JOBS` if set (1 turns parallel parsing off), else the cores."""
    env = os.environ.get("VIVARY_JOBS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    return min(cores, 8)


def parse_many(repo_path: str, oids: Sequence[str]) -> list[tuple[str, Note]] | None:
    """Parse `oids` across processes; None when parallelism does not pay or is unavailable."""
    n = workers()
    if n < 2 or len(oids) < MIN_BLOBS or "fork" not in multiprocessing.get_all_start_methods():
        return None
    chunk = max(200, len(oids) // (n * 4))
    chunks = [oids[i:i + chunk] for i in range(0, len(oids), chunk)]
    ctx = multiprocessing.get_context("fork")
    try:
        with ctx.Pool(n, initializer=_init, initargs=(repo_path,)) as pool:
            results: list[tuple[str, Note]] = []
            for encoded in pool.imap(_parse_chunk, chunks):
                results.extend(_decoder.decode(encoded))
            return results
    except (OSError, RuntimeError):
        return None  # no processes to be had (limits, sandbox): parse in this one

