"""Recording a tree in the shared cache, `refs/vivary/cache`: what may be recorded, decided in one place.

`Workspace` computes; this module decides what of it is shared, and writes it through `store`. A tree
is recorded once (one cache commit: the admitted documents' parses and facts, and a counts-only
summary) when all of these hold:

* the ref cache is on (not `--no-cache`, not `git config vivary.cache false`) and readable;
* the content is committed: a `--rev` tree, or a working tree / index identical to `HEAD`'s
  (`recordable_root`); a dirty working tree or a staged change is never recorded;
* facts do not depend on history (`derive` naming `created`/`updated`), and the repository has a work
  tree (Git decides ignore rules only there);
* the tree's summary is not in the cache yet (keyed by the workspace folder too: `store.format.tree_key`).

And an entry is recorded only when:

* **the privacy boundary admits it**: `privacy.decide_scoped`, the one decision every consumer makes,
  over every document path, with every workspace in the tree (each folder holding `tropo.toml` or
  `.vivary/` gets the floor at its root and its own memory.toml `private_paths`, whatever `--root` or
  folder the command ran from), Git's ignore rules of the recorded tree and, for a working-tree or
  index source, of the working tree too (`respect_gitignore = false` does not loosen the cache), and
  sensitive names. A blob is admitted only if every path holding it is public. If privacy cannot be
  decided, nothing is recorded;
* **it was computed here from the blob**: an entry read from a fetched cache, or facts derived from a
  parse read there, are never recorded again (see docs/cache.md, "Trust").

Big cold runs record from a forked child while the graph is built (`alongside`); everything else
records inline (`record`). `index` records a tree's vectors too: it holds the tree's recording back
(`one_commit`) so that they go in the same cache commit (`write`), not in a second one: every commit on
the ref is history that each `git fetch` of `refs/vivary/*` carries and that `cache gc` walks.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from vivary_git.escape import text

if TYPE_CHECKING:
    from vivary_git import graph as graph_mod
    from vivary_git import privacy
    from vivary_git.config import Config
    from vivary_git.localcache import SegmentCache
    from vivary_git.source import Entry, Source
    from vivary_git.store.refcache import RefCache
    from vivary_git.store.write import Changes, Staged, WriteResult

Keyed = list[tuple["Entry", str, "graph_mod.Facts"]]


class Workspace(Protocol):
    """What recording needs of a `workspace.Workspace` (which imports this module: a protocol, so
    this module does not import it back)."""

    @property
    def config(self) -> Config: ...

    @property
    def source(self) -> Source: ...

    def refcache(self) -> RefCache | None: ...

    def facts_for_recording(self) -> list[tuple[Entry, str, graph_mod.Facts]]: ...

    def not_computed_here(self) -> set[str]: ...

    def shared_parses(self, oids: list[str]) -> dict[str, bytes]: ...

    def reopen_after_fork(self) -> None: ...

    def drop_shared_parses(self) -> None: ...

    @property
    def privacy_memo(self) -> privacy.PrivacyMemo | None: ...

    held: Held | None  # set by `one_commit`


class Counts(msgspec.Struct, frozen=True, array_like=True):
    """A graph's counts, for the summary of a recorded tree."""

    checked: int
    errors: int
    warnings: int
    nodes: int
    edges: int
    broken: int


def counts_of(g: graph_mod.Graph) -> Counts:
    errors = sum(f.level == "error" for f in g.findings)
    counts = g.counts()
    return Counts(g.checked, errors, len(g.findings) - errors, counts["nodes"], counts["edges"], counts["broken"])


class Pending:
    """Entries ready to record, waiting for the graph's counts."""

    def __init__(self, ref: RefCache, tkey: str, changes: Changes, private: int) -> None:
        self.ref, self.tkey, self.changes, self.private = ref, tkey, changes, private
        self.staged: Staged | None = None  # their objects, written ahead of the counts (`alongside`)


class Held:
    """The recording of the tree a command is working on, held back for what it records next (`one_commit`)."""

    def __init__(self) -> None:
        self.tree: tuple[Pending, Counts] | None = None

    def take(self) -> tuple[Pending, Counts] | None:
        got, self.tree = self.tree, None
        return got


def recordable_root(source: Source) -> str | None:
    """The root tree to decide privacy with, when this source may be recorded at all: a `--rev`,
    or a working tree / index identical to HEAD's. Uncommitted content never enters the ref."""
    repo = source.repo
    if repo is None or source.tree_id is None or repo.workdir is None:
        return None  # bare: Git decides privacy only in a work tree, so nothing could be admitted
    if source.kind == "rev":
        return source.root_tree  # the tree read; its subtree at the prefix is source.tree_id
    if source.kind not in ("worktree", "staged") or repo.repo.head_is_unborn:
        return None
    pygit2 = repo.pygit2
    try:
        root = str(repo.repo.head.peel(pygit2.Tree).id)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    sub = repo.lookup(root, source.prefix) if source.prefix else root
    return root if sub == source.tree_id else None


def recording(ws: Workspace) -> tuple[RefCache, str, str] | None:
    """(ref cache, tree summary key, root tree to decide privacy in) when this tree is to be recorded:
    cheap checks only, nothing read or parsed."""
    if {"created", "updated"} & set(ws.config.derive):
        return None  # facts depend on history; the ref cache holds pure functions of content only
    ref = ws.refcache()
    tree = ws.source.tree_id
    if ref is None or tree is None:
        return None
    root = recordable_root(ws.source)
    if root is None:
        return None
    from vivary_git.store.format import tree_key

    tkey = tree_key(tree, ws.config.digest(), ws.source.prefix)
    held = ws.held.tree if ws.held is not None else None
    if ref.has_tree(tkey) or ref.damaged or tkey in ref.refused or (held is not None and held[0].tkey == tkey):
        return None  # recorded already (or about to be), or not recordable this run (and said so once: `_refuse`)
    return ref, tkey, root


def record(ws: Workspace, counts: Callable[[], Counts], keyed: Keyed | None) -> None:
    """Add what this tree needed (parses, facts, a counts-only summary) to the ref cache, once per
    tree, for the privacy-admitted documents only; one commit per recorded tree. Within `one_commit`,
    held back for what the command records next."""
    pending = prepare(ws, keyed)
    if pending is None:
        return
    if ws.held is not None:
        ws.held.tree = (pending, counts())
    else:
        finish(ws, pending, counts())


@contextlib.contextmanager
def one_commit(ws: Workspace) -> Iterator[None]:
    """Within it, the tree this command records waits for the entries it records next for the same tree
    (`write`: `index`'s vectors), and both go in one cache commit. A tree nothing followed (the index had
    no new vector, or it failed after the graph was built) is written as it leaves, as it would have been."""
    ws.held = Held()
    try:
        yield
    finally:
        held, ws.held = ws.held, None
        left = held.take() if held is not None else None
        if left is not None:
            finish(ws, *left)


def write(ws: Workspace, changes: Changes, what: str) -> WriteResult | None:
    """Write `changes`, entries of this tree that recording admitted (its vectors: `what` says how many), to
    the ref cache: in the commit of the tree's own recording when `one_commit` holds it back, else alone."""
    held = ws.held.take() if ws.held is not None else None
    if held is not None:
        return finish(ws, *held, also=changes, what=what)
    ref = ws.refcache()
    if ref is None:
        return None
    tree = ws.source.tree_id or ""
    return ref.write(changes, f"vivary cache: tree {tree[:12]}, {what}")


def scopes(ws: Workspace, paths: list[str], root: str) -> list[privacy.Scope]:
    """The workspaces whose rules decide `paths` (read from the recorded tree through this thread's
    repository handle: call before the privacy thread starts). Raises VivaryError."""
    from vivary_git import privacy

    repo = ws.source.repo
    assert repo is not None
    return privacy.find_scopes(repo, root, paths, also=[ws.source.prefix])


def private_paths(ws: Workspace, paths: list[str], root: str, found: list[privacy.Scope], *,
                  memo: privacy.PrivacyMemo | None = None) -> set[int]:
    """Indices of `paths` the privacy boundary keeps out of the ref cache (raises VivaryError when it
    cannot decide: then nothing is recorded). Only Git is asked: safe in a thread. `memo`: as for
    `privacy.decide_scoped` (the same question answered earlier in this command is not asked again)."""
    from vivary_git import privacy
    from vivary_git.errors import PrivacyError

    repo = ws.source.repo
    assert repo is not None
    if repo.workdir is None:
        raise PrivacyError("a bare repository has no work tree for Git to decide privacy in")
    # The working tree's ignore rules may be ahead of the recorded tree's; either making a path private wins.
    trees: tuple[str | None, ...] = (root,) if ws.source.kind == "rev" else (root, None)
    # Ignored files stay private here whatever a memory.toml says about respect_gitignore.
    decided = privacy.decide_scoped(repo.workdir, paths, found, trees=trees, gitignore=True, memo=memo,
                                    git_dir=repo.pinned_git_dir)
    return {i for i, d in enumerate(decided) if d.private}


def prepare(ws: Workspace, keyed: Keyed | None) -> Pending | None:
    """Everything recording needs but the graph: the privacy decision and the encoded entries."""
    got = recording(ws)
    if got is None:
        return None
    ref, tkey, root = got
    from vivary_git.errors import VivaryError
    from vivary_git.parallel import Background
    from vivary_git.store.format import encode_entries
    from vivary_git.store.write import Changes

    if keyed is None:
        keyed = ws.facts_for_recording()
    prefix = f"{ws.source.prefix}/" if ws.source.prefix else ""
    paths = [prefix + e.path for e, _, _ in keyed]
    try:
        found = scopes(ws, paths, root) if paths else []
    except VivaryError as err:
        _refuse(ref, tkey, err)
        return None
    # Git decides privacy (a few subprocesses, ~0.07 s at 10,000 notes) in a thread while this one
    # encodes every candidate entry; only the admitted ones are then kept. Nothing is written
    # before the decision.
    deciding = Background(lambda: private_paths(ws, paths, root, found, memo=ws.privacy_memo) if paths else set())
    foreign = ws.not_computed_here()
    fact_keys = [k for _, k, _ in keyed if k not in foreign]
    blobs = list(dict.fromkeys(e.oid for e, _, _ in keyed if e.oid not in foreign))
    new_facts = set(ref.missing("facts", fact_keys))
    parse = ws.shared_parses(ref.missing("parse", blobs))
    encoded_facts = encode_entries({k: f for _, k, f in keyed if k in new_facts})
    try:
        private = deciding.result()
    except VivaryError as err:
        _refuse(ref, tkey, err)
        return None
    # A blob is admitted only if every path holding it is public.
    private_blobs = {keyed[i][0].oid for i in private}
    admitted = {k for i, (e, k, _) in enumerate(keyed) if i not in private and e.oid not in private_blobs}
    changes = Changes(
        parse={oid: data for oid, data in parse.items() if oid not in private_blobs},
        facts={k: data for k, data in encoded_facts.items() if k in admitted},
    )
    return Pending(ref, tkey, changes, len(keyed) - len(admitted))


def _refuse(ref: RefCache, tkey: str, err: Exception) -> None:
    """Privacy could not be decided for this tree: say why, once. A command that reads the tree twice (`ci`
    checks it, then builds its graph) does not try again, nor say it twice."""
    from vivary_git.refnames import CACHE_REF

    ref.refused.add(tkey)
    print(f"vivary: not recording this tree in {CACHE_REF}: {text(str(err))}", file=sys.stderr)


def finish(ws: Workspace, pending: Pending, counts: Counts, *, also: Changes | None = None,
           what: str = "") -> WriteResult | None:
    """Write the tree's recording with its summary, and `also` (more of this tree's entries: `what` says
    which) in the same commit."""
    from vivary_git.store.format import TreeSummary

    tree = ws.source.tree_id
    assert tree is not None  # recording() checked
    pending.changes.trees = {pending.tkey: TreeSummary(
        tree=tree, checked=counts.checked, errors=counts.errors, warnings=counts.warnings, nodes=counts.nodes,
        edges=counts.edges, broken=counts.broken, private=pending.private, written=int(time.time()),
    )}
    changes = pending.changes
    message = f"vivary cache: tree {tree[:12]}, {len(changes.parse)} parse(s), {len(changes.facts)} facts"
    if also is not None:
        for kind in ("parse", "facts", "vectors"):
            changes.of(kind).update(also.of(kind))
        changes.trees.update(also.trees)
        changes.states.update(also.states)
        message += f", {what}"
    # Staged objects are those of the tree's own entries: with more to write, `write` computes them all.
    return pending.ref.write(changes, message, pending.staged if also is None else None)


Flushes = list[tuple["SegmentCache[Any]", Callable[[], Iterable[str]]]]


def write_flushes(flushes: Flushes) -> None:
    """Write local cache entries that were left pending (see parses.py `Parses._flush`)."""
    for cache, keep in flushes:
        cache.flush(keep=keep)


def alongside(ws: Workspace, keyed: Keyed, flushes: Flushes) -> Callable[[Counts, Callable[[], None]], None]:
    """Record this tree in the ref while the graph is being built: a forked child decides privacy,
    encodes the entries and writes the objects (~0.25 s for 10,000 new notes) on the core the build
    leaves idle, then takes the graph's counts through a pipe for the summary and commits. The
    returned call sends the counts, runs `then` (caching the graph) and writes the local caches
    (`flushes`) while the child commits, and waits for it: the caches and the ref are written
    when the command returns, as when all is done inline (which is what small trees, or systems
    without fork, get)."""
    from vivary_git import parallel

    def inline(counts: Counts, then: Callable[[], None]) -> None:
        then()
        record(ws, lambda: counts, keyed)

    # Held back (`one_commit`), the recording waits in this process for what the command records next.
    if len(keyed) < parallel.MIN_BLOBS or not parallel.can_fork() or ws.held is not None or recording(ws) is None:
        write_flushes(flushes)
        return inline
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        r, w = os.pipe()
        pid = os.fork()
    except OSError:
        write_flushes(flushes)
        return inline
    if pid == 0:  # the child: never returns
        code = 1
        try:
            os.close(w)
            ws.reopen_after_fork()
            pending = prepare(ws, keyed)
            if pending is not None:  # the chunks' objects now, while the graph is built: only the commit waits
                pending.staged = pending.ref.stage(pending.changes)
            with os.fdopen(r, "rb") as pipe:
                data = pipe.read()
            if pending is not None and data:  # no data: the parent failed before the build ended
                finish(ws, pending, msgspec.msgpack.decode(data, type=Counts))
            code = 0
        except Exception as err:  # a cache write must not turn into a traceback
            print(f"vivary: could not record this tree in the ref cache: {text(str(err))}", file=sys.stderr)
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(r)
    ws.drop_shared_parses()  # the child has them: the build gets their room

    def done(counts: Counts, then: Callable[[], None]) -> None:
        try:
            with os.fdopen(w, "wb") as pipe:
                pipe.write(msgspec.msgpack.encode(counts))
        except OSError:
            pass  # the child is gone: it said why on stderr
        then()
        write_flushes(flushes)
        parallel.reap(pid)

    return done
