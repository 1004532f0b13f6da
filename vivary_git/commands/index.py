"""`git vivary index`: build the privacy-filtered memory snapshot and hand it to the provider.

`--dry-run` builds the whole snapshot, exactly as an index would, and reports its counts and fingerprint
without writing anything anywhere. `--yes` is the approval gate (`require_explicit_index`, on by default):
it brings the vivary-local index up to date, embedding only packets it has not embedded before
(memory/local/). `--auto` is the hooks' path: it does that only when the committed `auto_index = true` asks
for it and the user's own Git config approves it (`vivary.autoIndex`, memory/local/autoindex.py), says what to
run when only the first holds, and is otherwise a quiet no-op.
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, TextIO

import msgspec

from vivary_git.commands._common import add_json_arg, add_source_args, emit_json, open_ws
from vivary_git.errors import EXIT_OK, ConfigError
from vivary_git.escape import text as shown
from vivary_git.memory.snapshot import LeftOut

if TYPE_CHECKING:
    from vivary_git.memory.config import MemoryConfig
    from vivary_git.workspace import Workspace


class IndexReport(msgspec.Struct, frozen=True):
    """The contract's `index --dry-run` shape, plus `private` (nodes held back) and `enabled`."""

    ok: bool
    provider: str
    dataset: str
    dry_run: bool
    indexed: int
    would_index: int
    edges: int
    private: int
    fingerprint: str
    enabled: bool
    left_out: list[LeftOut] = []  # public notes not indexed because another note has their id (E130)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "index", help="build or update the local semantic-memory index (--dry-run: report only)",
        description="Build the privacy-filtered memory snapshot of one tree (docs/index.md) and index it with "
        "the provider .vivary/memory.toml enables (docs/memory.md): vivary-local embeds only notes whose packet "
        "changed; Cognee (provider = \"cognee\", the [cognee] extra) replaces its dataset with the current notes "
        "once allow_network = true and a key route are set. "
        "With --dry-run, report how many notes and edges would be indexed, how many are private, and the "
        "snapshot fingerprint, writing nothing anywhere. Exit 0; 2 on a usage or config error (memory not "
        "enabled in .vivary/memory.toml, the [embed] or [cognee] extra not installed, Cognee failed); 3 when refused: "
        "no approval (--yes) while require_explicit_index = true, a Cognee gate closed (allow_network, key route), "
        "or privacy cannot be decided, or a working-tree file is unsafe (symlink, hard link).",
    )
    add_source_args(p)
    add_json_arg(p)
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="build the snapshot and report it; write nothing")
    mode.add_argument("--yes", action="store_true",
                      help="approve indexing: put the public notes into the provider's index (vivary-local: "
                      "incremental)")
    mode.add_argument("--auto", action="store_true",
                      help="the hooks' path (post-commit, post-checkout, post-merge, post-rewrite): index when "
                      "[memory.local] auto_index = true asks for it and your own Git config approves it "
                      "(git config vivary.autoIndex true; a committed file is never the approval), else exit 0: "
                      "silently, or with one line on stderr saying what to run when only auto_index is set; prints "
                      "nothing on success. With --rev, a commit that is no longer HEAD when its turn comes "
                      "(amended, or followed by the next of a rebase) is not indexed")
    p.set_defaults(run=run)


def dry_run(ws: Workspace) -> IndexReport:
    """Build the snapshot of `ws` and describe it; writes nothing (the library form of --dry-run)."""
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import build_snapshot

    cfg = load_memory_config(ws)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model, dataset_label=cfg.dataset_label)
    return IndexReport(
        ok=True, provider=snap.provider, dataset=snap.dataset, dry_run=True, indexed=0,
        would_index=len(snap.nodes), edges=len(snap.edges), private=snap.private_count,
        fingerprint=snap.fingerprint, enabled=cfg.enabled, left_out=snap.left_out,
    )


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.config import load_memory_config

    if not args.dry_run:
        return _write(args)
    ws = open_ws(args)
    report = dry_run(ws)
    ws.report_stats()
    if args.json:
        emit_json(report)
        return EXIT_OK
    out = sys.stdout
    out.write("dry run: nothing was written\n")
    if report.enabled:
        out.write(f"provider     {shown(report.provider)}\n")
    elif said := load_memory_config(ws).in_the_way_said():
        out.write(f"provider     none (memory is disabled: {shown(said)}; this is what an index would hold once it "
                  "is enabled)\n")
    else:
        out.write("provider     none (memory is disabled: no .vivary/memory.toml, or `enabled = false`, or "
                  "provider = \"none\"; this is what an index would hold once it is enabled)\n")
    out.write(f"dataset      {shown(report.dataset)}\n")
    out.write(f"would index  {report.would_index} note(s), {report.edges} edge(s)\n")
    out.write(f"private      {report.private} note(s) held back "
              "(`git vivary privacy explain PATH` names the rule)\n")
    out.write(f"fingerprint  {report.fingerprint}\n")
    _write_left_out(out, report.left_out)
    return EXIT_OK


def _moved_on(ws: Workspace, rev: str | None) -> Callable[[], bool] | None:
    """For `index --auto --rev C`, the post-commit hook's run: whether C is no longer the commit checked out.

    The hook starts one run per commit, and runs queue on the index lock (memory/lock.py), which hands it out in no
    promised order. After `git commit --amend`, or the commits a rebase or a cherry-pick of several makes in a row,
    the run of a commit already replaced could take the lock last and put the index back to a tree nobody has
    checked out: recall then refused a working tree equal to HEAD as stale. Such a run does nothing: the commit
    that replaced it has a run of its own (or, after a checkout or a reset, the index was not this tree's either).
    None when there is nothing to ask (no `--rev`, or one that names no commit)."""
    import pygit2

    repo = ws.source.repo
    if rev is None or repo is None:
        return None
    try:
        wanted = repo.repo.revparse_single(rev).peel(pygit2.Commit).id
    except (KeyError, ValueError, pygit2.GitError):
        return None

    def moved() -> bool:
        try:
            return bool(repo.repo.head.peel(pygit2.Commit).id != wanted)
        except (KeyError, ValueError, pygit2.GitError):  # no HEAD to compare with: index as asked
            return False

    return moved


def _write(args: argparse.Namespace) -> int:
    from vivary_git.memory.config import load_memory_config

    ws = open_ws(args)
    cfg = load_memory_config(ws)
    if args.auto and not _auto_approved(ws, cfg):
        return EXIT_OK
    there, clear = cfg.in_the_way_fix()
    if there:
        raise ConfigError(
            f"semantic memory is disabled ({there}); {clear}enable it with [memory] enabled = true and provider = "
            f"\"vivary-local\" in {cfg.path} (docs/memory.md) and run `git vivary index --yes`"
        )
    if cfg.provider == "none":
        raise ConfigError(
            "semantic memory is disabled (no .vivary/memory.toml, or `enabled = false`, or provider = \"none\"); "
            "enable it with [memory] enabled = true and provider = \"vivary-local\" (docs/memory.md), then run "
            "`git vivary index --yes`; `git vivary index --dry-run` shows what it would hold"
        )
    if cfg.provider == "cognee":
        from vivary_git.memory.cognee import CogneeMemory

        report = CogneeMemory(ws, cfg).index(approved=args.yes)
    else:
        from vivary_git.memory.local.provider import LocalMemory, Superseded

        moved = _moved_on(ws, args.rev) if args.auto else None
        if moved is not None and moved():
            return EXIT_OK
        with _first_interrupt_only():
            try:
                report = LocalMemory(ws, cfg).index(approved=args.yes or args.auto, superseded=moved,
                                                    progress=None if args.auto else EmbedProgress())
            except Superseded:
                return EXIT_OK
    ws.report_stats()
    if args.auto:
        return EXIT_OK
    if args.json:
        emit_json(report)
        return EXIT_OK
    out = sys.stdout
    if report.provider == "cognee":
        out.write(f"indexed      {report.indexed} note(s), {report.edges} edge(s) into Cognee in "
                  f"{report.seconds:.1f}s (the previous dataset was replaced)\n")
    elif report.unchanged:
        out.write("up to date: the index already matches this snapshot; nothing was written\n")
    else:
        out.write(f"indexed      {report.indexed} note(s), {report.edges} edge(s) in {report.seconds:.1f}s\n")
        near = f" ({report.borrowed} from this repository's other index folders)" if report.borrowed else ""
        out.write(f"embedded     {report.embedded} note(s) new or changed; {report.reused} reused from the "
                  f"cache{near}\n")
        if report.removed:
            out.write(f"removed      {report.removed} note(s) no longer in the snapshot\n")
    out.write(f"private      {report.private} note(s) held back (never embedded)\n")
    out.write(f"dataset      {shown(report.dataset)}\n")
    out.write(f"state        {shown(report.state)}\n")
    out.write(f"fingerprint  {report.fingerprint}\n")
    _write_left_out(out, report.left_out)
    return EXIT_OK


def _auto_approved(ws: Workspace, cfg: MemoryConfig) -> bool:
    """Whether `index --auto` (what every hook runs) indexes: the committed `auto_index = true` asks for it, and
    the user's own Git config approves it (memory/local/autoindex.py). Silent unless it was asked for (the hooks
    run on every commit, checkout and pull) or the user declined it (`vivary.autoIndex = false`). Asked for and
    not approved: one line on stderr saying what to run (the background run's goes to .git/vivary/index.log,
    where it is not written again while it is the last line there)."""
    if not cfg.auto_index:
        return False
    from vivary_git.memory.local.autoindex import APPROVE, approval

    found = approval(ws.source.repo)
    if not found.approved and not found.declined:
        from vivary_git.gates.indexlog import said_last

        hint = (f"vivary: index --auto: {shown(cfg.source or cfg.path)} sets auto_index = true, but indexing is not "
                f"approved in this clone ({shown(found.said)}), so nothing was indexed; to approve it, run "
                f"`{APPROVE}` (docs/memory.md#5-auto-index-after-each-commit-optional)")
        if not said_last(ws.source.repo, hint + "\n"):  # the hooks' log says it once, not after every commit
            print(hint, file=sys.stderr)
    return found.approved


def _write_left_out(out: TextIO, left_out: list[LeftOut]) -> None:
    """One line per public note the index cannot hold, with why and the fix (a duplicate id, E130)."""
    for o in left_out:
        out.write(f"left out     {shown(o.path)}: {shown(o.reason)}\n")


# Off a terminal, a progress line this often (seconds; `VIVARY_PROGRESS_SECONDS` sets it): a CI log shows the run
# is alive, as pip's and git's do.
LOG_EVERY = 10.0


class EmbedProgress:
    """Shows how embedding goes, on stderr (so --json output stays clean).

    On a terminal: one line redrawn in place, `embedding [####----]  done/total notes  N notes/s  ETA 1m05s`,
    at most ten times a second. Otherwise (CI logs, pipes): a line `vivary: embedding done/total notes  N
    notes/s  ETA 1m05s` every `every` seconds (`VIVARY_PROGRESS_SECONDS`, else `LOG_EVERY`), then one summary
    line, `vivary: embedded N note(s) in S s (R notes/s)`. The clock starts when embedding does (`done == 0`),
    after the snapshot and the model are ready.
    """

    _WIDTH = 24

    def __init__(self, stream: TextIO | None = None, *, clock: Callable[[], float] = time.monotonic,
                 every: float | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty()) if isatty is not None else False
        self.every = _log_every() if every is None else every
        self._clock = clock
        self._start: float | None = None
        self._drawn = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if self._start is None or done == 0:
            self._start = self._drawn = now
        if total <= 0:
            return
        elapsed = now - self._start
        rate = done / elapsed if elapsed > 0 else 0.0
        if done >= total:
            line = f"vivary: embedded {total:,} note(s) in {elapsed:.1f}s ({rate:.1f} notes/s)"
            self.stream.write(f"\r{line}\033[K\n" if self.tty else line + "\n")
            self.stream.flush()
            return
        if self.tty:
            if done and now - self._drawn < 0.1:
                return
        elif not done or now - self._drawn < self.every:
            return
        self._drawn = now
        eta = f"ETA {_duration((total - done) / rate)}" if rate > 0 else "ETA ?"
        counts = f"{done:,}/{total:,} notes  {rate:.1f} notes/s  {eta}"
        if self.tty:
            filled = self._WIDTH * done // total
            self.stream.write(f"\rvivary: embedding [{'#' * filled}{'-' * (self._WIDTH - filled)}] {counts}\033[K")
        else:
            self.stream.write(f"vivary: embedding {counts}\n")
        self.stream.flush()


def _log_every() -> float:
    """`VIVARY_PROGRESS_SECONDS` when it is a number >= 0, else `LOG_EVERY`."""
    try:
        seconds = float(os.environ.get("VIVARY_PROGRESS_SECONDS", ""))
    except ValueError:
        return LOG_EVERY
    return seconds if seconds >= 0 and math.isfinite(seconds) else LOG_EVERY


@contextlib.contextmanager
def _first_interrupt_only() -> Iterator[None]:
    """Ctrl-C reaches `git vivary index` twice: from the terminal, and from `git`, which passes a signal on to
    the command it runs and waits for it. The first raises KeyboardInterrupt, and the index run stops its model
    and saves the vectors made so far (memory/local/index.py); a second must not cut that short, so later ones
    are ignored until the run has ended. Left alone when this is not the main thread, or SIGINT is not Python's
    default handler (ignored, as in a background job, or the caller's own)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    interrupted = False

    def first(signum: int, frame: FrameType | None) -> None:
        nonlocal interrupted
        if not interrupted:
            interrupted = True
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def _duration(seconds: float) -> str:
    whole = int(seconds + 0.5)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
