"""`git vivary cache`: look at, check, shrink or remove the shared cache in `refs/vivary/cache`."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from vivary_git.commands._common import add_json_arg, emit_json
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK, UsageError
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from vivary_git.git import Repo
    from vivary_git.workspace import Workspace


class CacheStatus(msgspec.Struct, frozen=True):
    ref: str
    exists: bool
    commit: str | None = None
    chain: int = 0
    chain_limit: int = 0
    bytes: int = 0  # manifest + chunks + state files, uncompressed
    trees: int = 0  # source trees with a summary
    blobs: int = 0  # parsed notes (by blob id)
    facts: int = 0  # per-document facts
    vectors: int = 0  # note embeddings (memory/local/vectors.py)
    states: int = 0  # memory-provider state files
    writer: str = ""
    written: int = 0
    notes: bool = False  # `vivary.notes`: verdict notes on `check --rev COMMIT`
    problem: str = ""  # why the cache cannot be read, when it cannot
    store: int = 0  # the layout (`STORE_FORMAT`) and parse format (`FORMAT_VERSION`) it was written with: another
    format: int = 0  # vivary-git's cache is not read by this one, and is no damage (docs/cache.md)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "cache", help="the shared cache in refs/vivary/cache: status, verify, gc, drop, notes",
        description="Commands that write a graph record what they computed in refs/vivary/cache (docs/cache.md). "
        "`status` sizes it, `verify` reads every part of it, `gc` keeps only what the current branches "
        "need (a new chain) and removes the memory state folders of workspaces that are gone, `drop` deletes it, "
        "`notes on|off` switches verdict notes (refs/notes/vivary).",
    )
    p.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    st = actions.add_parser("status", help="size, chain length, trees and blobs covered, last writer")
    add_json_arg(st)
    ve = actions.add_parser("verify", help="check every chunk against the manifest (exit 1 when damaged)")
    ve.add_argument("--ref", default=None, metavar="REF",
                    help="another cache ref, e.g. a fetched one in refs/vivary-fetch/")
    gc = actions.add_parser("gc", help="restart the chain with only the entries current branches' trees need, and "
                                       "remove the memory state folders of workspaces that are gone")
    gc.add_argument("--root", metavar="DIR",
                    help="also keep this folder's entries, read as a workspace (as `check --root DIR` reads it); "
                         "gc keeps every workspace it finds anyway (folders with tropo.toml or .vivary/, and the top)")
    gc.add_argument("--dry-run", action="store_true", help="say what would be kept and removed, change nothing")
    actions.add_parser("drop", help="delete refs/vivary/cache (and fetched copies in refs/vivary-fetch/)")
    no = actions.add_parser("notes", help="write verdict notes on `check --rev COMMIT` runs (on) or not (off)")
    no.add_argument("state", choices=("on", "off", "show"), help="on, off, or show the current setting")
    p.set_defaults(run=run)


def _repo(args: argparse.Namespace) -> Repo:
    from vivary_git.git import Repo

    return Repo(Path(args.cwd or ".").resolve())


def run(args: argparse.Namespace) -> int:
    repo = _repo(args)
    action: str = args.action
    if action == "status":
        return _status(repo, args)
    if action == "verify":
        return _verify(repo, args.ref)
    if action == "gc":
        return _gc(repo, args)
    if action == "drop":
        return _drop(repo)
    return _notes(repo, args.state)


def status(repo: Repo) -> CacheStatus:
    """The library form of `cache status`."""
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store.format import CHAIN_LIMIT, StoreDamaged
    from vivary_git.store.notes import notes_enabled
    from vivary_git.store.read import Snapshot, _tip, written_by

    notes = notes_enabled(repo)
    try:
        snap = Snapshot.load(repo)
        other = written_by(repo) if snap is None else None
    except StoreDamaged as err:
        return CacheStatus(ref=CACHE_REF, exists=True, notes=notes,
                           problem=f"{err.what}; `git vivary cache drop` removes it")
    if snap is None:
        if other is None:
            return CacheStatus(ref=CACHE_REF, exists=False, notes=notes)
        return CacheStatus(ref=CACHE_REF, exists=True, commit=_tip(repo, CACHE_REF), writer=other.writer,
                           written=other.written, notes=notes, store=other.store, format=other.format,
                           problem=f"{other.describe()}; {other.fate()}")
    m = snap.manifest
    size = sum(c.size for c in m.chunks.values()) + sum(s.size for s in m.states.values())
    return CacheStatus(
        ref=CACHE_REF, exists=True, commit=snap.commit, chain=m.chain, chain_limit=CHAIN_LIMIT,
        bytes=size, trees=len(m.trees), blobs=sum(c.count for p, c in m.chunks.items() if p.startswith("parse/")),
        facts=sum(c.count for p, c in m.chunks.items() if p.startswith("facts/")), states=len(m.states),
        vectors=sum(c.count for p, c in m.chunks.items() if p.startswith("vectors/")),
        writer=m.writer, written=m.written, notes=notes, store=m.store, format=m.format,
    )



def _status(repo: Repo, args: argparse.Namespace) -> int:
    s = status(repo)
    if args.json:
        emit_json(s)
        return EXIT_OK
    if not s.exists:
        print(f"{s.ref}: none yet (`git vivary check --rev HEAD` records one; `git vivary sync fetch` gets one)")
    elif s.problem and s.format:  # another vivary-git's cache
        print(f"{s.ref}: {s.commit}: not read: {shown(s.problem)}")
    elif s.problem:
        print(f"{s.ref}: unreadable: {shown(s.problem)}")
    else:
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(s.written))
        print(f"{s.ref}: {s.commit}")
        print(f"  chain     {s.chain} of {s.chain_limit} commit(s) before it restarts")
        print(f"  size      {s.bytes:,} bytes in chunks and state files (before Git's compression)")
        print(f"  trees     {s.trees} source tree(s) with a summary")
        print(f"  blobs     {s.blobs} parsed note(s), {s.facts} document facts")
        print(f"  vectors   {s.vectors} note embedding(s) (`git vivary index` records them)")
        print(f"  states    {s.states} memory-provider state file(s)")
        print(f"  written   {when} by {shown(s.writer)}")
    print(f"  notes     {'on' if s.notes else 'off'} (refs/notes/vivary verdicts; `git vivary cache notes on|off`)")
    return EXIT_OK


def _verify(repo: Repo, ref: str | None) -> int:
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import Snapshot, ref_tip, written_by

    ref = ref or CACHE_REF
    snap = None
    try:
        if ref_tip(repo, ref) is None:
            print(f"{shown(ref)}: no such ref; nothing to verify")
            return EXIT_OK
        snap = Snapshot.load(repo, ref)
        if snap is None:
            other = written_by(repo, ref)
            assert other is not None  # the ref names a cache commit this one does not read
            # Another version's layout is that version's to check: not damage, and nothing to drop.
            print(f"{shown(ref)}: not verified: {shown(other.describe())}; {other.fate()}")
            return EXIT_OK
        problems = snap.verify()
    except StoreDamaged as err:
        problems = [err.what]
    if problems:
        for p in problems:
            print(f"{shown(ref)}: {shown(p)}")
        print(f"{shown(ref)}: damaged; it is ignored by every command. Fix: {shown(_verify_fix(ref))}",
              file=sys.stderr)
        return EXIT_FINDINGS
    assert snap is not None
    m = snap.manifest
    print(f"{shown(ref)}: ok: {len(m.chunks)} chunk(s), {len(m.states)} state file(s), {len(m.trees)} tree(s) verified")
    print(f"{shown(ref)}: {shown(_trust_line(repo, ref))}")
    return EXIT_OK


def _verify_fix(ref: str) -> str:
    """What fixes the damaged `ref` that was verified: `cache drop` removes our own refs/vivary/cache only, and does
    nothing to a remote's cache staged by `sync fetch` (refs/vivary-fetch/REMOTE/cache), which lives on the remote."""
    from vivary_git.refnames import CACHE_REF, STAGING_PREFIX

    if ref == CACHE_REF:
        return "`git vivary cache drop` (or `git vivary cache gc`), then a run records a fresh one"
    if ref.startswith(STAGING_PREFIX) and ref.endswith("/cache"):
        name = ref.removeprefix(STAGING_PREFIX).removesuffix("/cache")
        remote = "URL" if name.startswith("url-") else name  # a URL's staging name is a digest of it
        where = " (the URL it was fetched from)" if remote == "URL" else ""
        return (f"this is {remote}'s cache{where} as `git vivary sync fetch` staged it; it was not adopted, and "
                f"our {CACHE_REF} is not affected (`git vivary cache drop` would delete ours as well as this copy, "
                "and the next fetch stages the remote's again). "
                f"`git vivary sync push --force {remote}`{where}, from a clone whose own cache verifies, replaces "
                f"the remote's; the next fetch stages that one here")
    return (f"it is not {CACHE_REF}, so no command reads it; `git update-ref -d {ref}` removes it "
            f"(`git vivary cache drop` removes {CACHE_REF} only)")


def _trust_line(repo: Repo, ref: str) -> str:
    """Whether commands read this cache: well-formed is not trusted (docs/cache.md#trust)."""
    from vivary_git.store.trust import TRUST_KEY, newest_verified, trust

    level = trust(repo)
    if level == "none":
        return (f"trust: not read by any command ({TRUST_KEY} is none: a well-formed cache can still be a "
                "forgery; `signed` reads cache commits signed by allowed signers); gates never read it")
    if level == "any":
        return (f"trust: read by commands other than gates whoever wrote it ({TRUST_KEY} = any); "
                "gates never read it")
    commit = newest_verified(repo, ref)
    if commit is None:
        return (f"trust: not read: no commit of this chain has a signature `git verify-commit` accepts "
                f"({TRUST_KEY} = signed); gates never read it")
    return f"trust: commands other than gates read {commit[:12]}, whose signature verifies; gates never read it"


def _gc(repo: Repo, args: argparse.Namespace) -> int:
    """The shared cache's gc, then the memory state folders': a gc that refuses (nothing written) removes none."""
    code = _gc_ref(repo, args)
    _gc_state_folders(repo, dry_run=args.dry_run)
    return code


def _gc_ref(repo: Repo, args: argparse.Namespace) -> int:
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import Snapshot, ref_tip, written_by
    from vivary_git.store.write import rebuild, update_ref

    if args.root is not None and repo.workdir is not None:
        from vivary_git.source import root_folder

        # Decided as every command decides it, before any branch is read: a `--root` each branch is skipped for
        # (a symbolic link to the folder) would keep none of the workspace's entries.
        root_folder(Path(args.cwd or ".").resolve(), args.root)
    heads = _branches(repo)  # first: a packed-refs file that does not parse is not a damaged cache
    worktrees = _worktree_heads(repo)
    try:
        tip = ref_tip(repo, CACHE_REF)
        if tip is None:
            print(f"{CACHE_REF}: none; nothing to collect")
            return EXIT_OK
        snap = Snapshot.load(repo)
    except StoreDamaged as err:
        raise UsageError(f"{CACHE_REF} is damaged ({err.what}); `git vivary cache drop` removes it") from None
    if snap is None:
        other = written_by(repo)
        assert other is not None
        print(f"{CACHE_REF}: not collected: {shown(other.describe())}; {other.fate()}")
        return EXIT_OK
    keep: dict[str, set[str]] = {"parse": set(), "facts": set(), "vectors": set()}
    trees: set[str] = set()
    tree_ids: set[str] = set()
    read: list[str] = []  # the branches whose needs are kept
    skipped: dict[str, _Skip] = {}
    lacking: dict[str, str] = {}  # branch -> the `--root` folder it does not hold
    unreadable: list[_Unreadable] = []
    known: dict[str, _Needs] = {}  # by tree id: branches at one tree (new ones, merged ones) need the same
    for head in [*heads, *worktrees]:
        try:
            needs = _needs(repo, args, head, worktrees.get(head), known)
        except _Unreadable as err:
            unreadable.append(err)
            continue
        if isinstance(needs, _Skip):
            skipped[head] = needs
            continue
        read.append(head)
        if needs.lacking is not None:
            lacking[head] = needs.lacking
        keep["parse"] |= needs.blobs
        keep["facts"] |= needs.facts
        keep["vectors"] |= needs.vectors
        trees |= needs.trees
        tree_ids |= {t.split("-")[0] for t in needs.trees}
    if unreadable:
        # A branch whose needs are unknown is never taken as needing nothing: a real run would drop its entries,
        # which CI built and every clone fetched.
        names = ", ".join(e.head for e in unreadable)
        raise UsageError(f"gc cannot tell which entries {names} need{'s' if len(unreadable) == 1 else ''}, and "
                         f"would drop them; nothing was written. Fix or delete "
                         f"{'that branch' if len(unreadable) == 1 else 'those branches'}, then run `git vivary cache "
                         "gc` again:", detail=[f"{e.head}: {e.why}; {e.fix}" for e in unreadable])
    if lacking and len(lacking) == len(read):
        folder = next(iter(lacking.values()))
        raise UsageError(f"--root {args.root}: no branch gc reads holds a folder {folder!r} ({', '.join(lacking)}), "
                         "so gc would keep none of the entries of the workspace it names; nothing was written. "
                         "Name the workspace folder as the branches hold it (a folder only in the working tree has "
                         "nothing recorded until it is committed), or leave --root out: gc keeps every workspace "
                         "with tropo.toml or .vivary/ it finds anyway")
    for head, skip in skipped.items():
        print(f"vivary: gc: skipped {shown(head)}: {shown(skip.said)}", file=sys.stderr)
    for head, folder in lacking.items():
        print(f"vivary: gc: {shown(head)} holds no folder {shown(folder)!r} (--root {shown(args.root)}): it needs "
              "none of that workspace's entries", file=sys.stderr)
    # A provider's state is kept for the kept trees, and its newest state whatever its tree.
    states = {p for p in snap.manifest.states if p.split("/")[2].split("-")[0] in tree_ids}
    newest: dict[str, tuple[int, str]] = {}
    for p, ref in snap.manifest.states.items():
        prov = p.split("/")[1]
        if ref.written >= newest.get(prov, (-1, ""))[0]:
            newest[prov] = (ref.written, p.rsplit("/", 1)[0])
    states |= {p for p in snap.manifest.states if p.rsplit("/", 1)[0] in {d for _, d in newest.values()}}
    m = snap.manifest
    before = (sum(c.count for p, c in m.chunks.items() if p.startswith("parse/")),
              sum(c.count for p, c in m.chunks.items() if p.startswith("facts/")), len(m.trees), len(m.states),
              sum(c.count for p, c in m.chunks.items() if p.startswith("vectors/")))
    if args.dry_run:
        print(f"gc would keep entries for {len(read)} head(s): of {before[0]} parses, {before[1]} facts, "
              f"{before[2]} trees, {before[3]} state files, {before[4]} vectors, at most {len(keep['parse'])}, "
              f"{len(keep['facts'])}, {len(trees)}, {len(states)}, {len(keep['vectors'])}")
        return EXIT_OK
    commit = rebuild(repo, snap, keep, trees, states, "vivary cache: gc (new chain)")
    if not update_ref(repo, CACHE_REF, commit, tip):
        raise UsageError(repo.held_ref(CACHE_REF)
                         or f"{CACHE_REF} changed while gc ran (another writer); run `git vivary cache gc` again")
    after = status(repo)
    without = "".join(f"; {shown(h)} holds no folder {shown(f)!r}" for h, f in lacking.items())
    print(f"{CACHE_REF}: new chain {commit[:12]}: {after.blobs} of {before[0]} parses, {after.facts} of "
          f"{before[1]} facts, {after.trees} of {before[2]} trees, {after.states} of {before[3]} state files, "
          f"{after.vectors} of {before[4]} vectors kept "
          f"(for {', '.join(shown(h) for h in read) or 'no branch'}{without})")
    print("  to shrink the shared copy too: `git vivary sync push --force`", file=sys.stderr)
    return EXIT_OK


def _gc_state_folders(repo: Repo, *, dry_run: bool) -> None:
    """Remove the memory state folders whose workspace is gone (memory/local/folders.py), saying which and why."""
    from vivary_git.memory.local.folders import dead_folders, remove, unowned

    for dead in dead_folders(repo.common_dir):
        if dry_run:
            print(f"gc would remove {shown(dead.folder)} (the index of {shown(dead.workspace)}: {shown(dead.why)})")
        elif remove(repo.common_dir, dead):
            print(f"removed {shown(dead.folder)} (the index of {shown(dead.workspace)}: {shown(dead.why)})")
    kept = unowned(repo.common_dir)
    if kept:
        print(f"vivary: gc: kept {len(kept)} memory state folder(s) that name no workspace (written before "
              f"vivary-git recorded it; the next `git vivary index` in a live one records it): "
              f"{', '.join(shown(k) for k in kept)}", file=sys.stderr)


class _Unreadable(Exception):
    """A branch `cache gc` cannot tell the needs of: `why`, and the `fix` for that branch."""

    def __init__(self, head: str, why: str, fix: str) -> None:
        super().__init__(f"{head}: {why}")
        self.head, self.why, self.fix = head, why, fix


def _branches(repo: Repo) -> list[str]:
    """The refs whose trees `gc` keeps entries for: every branch (`refs/heads/*`), those that do not parse included
    (Git and libgit2 leave them out of every listing, and what they need is unknown), plus `HEAD` when detached (a
    CI checkout: the commit under test is no branch)."""
    try:
        heads = [str(r) for r in repo.repo.references if str(r).startswith("refs/heads/")]
        if repo.repo.head_is_detached:
            heads.append("HEAD")
    except repo.pygit2.GitError as err:  # libgit2: "corrupted packed references file"; Git itself cannot list refs
        raise UsageError(f"cannot list this repository's branches ({err}): {repo.common_dir / 'packed-refs'} (or a "
                         "ref file) does not parse, and Git cannot read it either (`git for-each-ref` says where); "
                         "fix or remove the line it names, then run `git vivary cache gc` again; nothing was written"
                         ) from None
    return sorted(set(heads) | set(_loose_refs(repo, "refs/heads/")))


_OTHER_HEAD = "HEAD of worktree "


def _worktree_heads(repo: Repo) -> dict[str, str]:
    """The detached HEADs of the other worktrees (`git worktree list`), named `HEAD of worktree PATH`, with the
    commit each is at: commits under work, branch or not (a rebase stopped half-way, a bisect, a CI checkout).
    A worktree on a branch is read as that branch; one whose folder is gone (`prunable`) is no work."""
    proc = repo.git(["worktree", "list", "--porcelain"], check=False)
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise UsageError(f"cannot list this repository's worktrees (`git worktree list`: "
                         f"{said[0] if said else 'it failed'}); fix what Git names, then run `git vivary cache gc` "
                         "again; nothing was written")
    here = {repo.workdir, repo.git_dir}
    found: dict[str, str] = {}
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\n\n"):
        lines = record.splitlines()
        fields = dict(line.partition(" ")[::2] for line in lines[1:])
        path = lines[0].removeprefix("worktree ") if lines and lines[0].startswith("worktree ") else ""
        if not path or "detached" not in fields or "prunable" in fields or Path(path).resolve() in here:
            continue
        commit = fields.get("HEAD", "")
        if len(commit) in (40, 64) and commit.strip("0"):
            found[_OTHER_HEAD + path] = commit
    return found


class _Needs(NamedTuple):
    """What one branch's tree needs of the cache, summed over its workspaces: tree summary keys, blob ids, fact
    keys and vector keys; `lacking`, the `--root` folder it does not hold (None when it holds it, or no --root)."""

    trees: set[str]
    blobs: set[str]
    facts: set[str]
    vectors: set[str]
    lacking: str | None


class _Skip(NamedTuple):
    """A branch that needs nothing, and why: it leads to no commit."""

    said: str


# The most workspaces gc opens in one tree. Finding them is cheap (a walk of the tree's folders, two lookups each);
# each one opened loads its rules and lists its files again (no parsing). Past this gc refuses rather than read some
# and drop the others' entries. 256: as many tree summaries as a cache holds (the oldest go past that).
MAX_WORKSPACES = 256


def _needs(repo: Repo, args: argparse.Namespace, head: str, commit: str | None = None,
           known: dict[str, _Needs] | None = None) -> _Needs | _Skip:
    """What the tree `head` names (a ref; or, with `commit`, another worktree's detached HEAD at that commit) needs
    of the cache: the entries of every workspace it holds (`_workspaces`) and of the folder `--root` names; a
    `_Skip` when it needs none. Raises `_Unreadable` when that cannot be told. `known`: the needs of the trees
    read so far, by tree id, looked up and added to."""
    from vivary_git.errors import ConfigError, VivaryError
    from vivary_git.source import MissingRoot, NestedRoot
    from vivary_git.workspace import open_workspace

    pygit2 = repo.pygit2
    name = head.removeprefix("refs/heads/")
    worktree = head.removeprefix(_OTHER_HEAD)
    delete = ("check out a branch (`git switch BRANCH`)" if head == "HEAD"
              else f"check out a branch there, or remove it (`git worktree remove {worktree}`)" if commit is not None
              else f"delete it (`git branch -D {name}`)")
    missing = f"`git fsck` names what is missing: fetch it again, or {delete}"
    unparsed = (f"remove the file {repo.common_dir / head} by hand (Git neither reads nor deletes a ref that does not "
                "parse), or write a commit id in it")
    if commit is not None:
        oid = pygit2.Oid(hex=commit)
    else:
        try:
            ref = repo.repo.references.get(head)
        except pygit2.GitError as err:
            said = str(err).replace(f"{head}: ", "", 1)
            raise _Unreadable(head, f"it does not parse ({said})", unparsed) from None
        if ref is None:
            return _Skip("it is gone")  # since it was listed
        try:
            oid = ref.resolve().target
        except KeyError:  # a symbolic ref to no branch (pygit2's NotFoundError): it holds nothing
            return _Skip(f"a symbolic ref to {ref.target}, which is no branch")
        except pygit2.GitError as err:  # a symbolic ref that loops
            raise _Unreadable(head, f"it does not parse ({err})", unparsed) from None
    obj = repo.repo.get(oid)
    if obj is None:
        raise _Unreadable(head, f"it names {str(oid)[:12]}, which is not in this repository", missing)
    if obj.type_str not in ("commit", "tag", "tree"):
        raise _Unreadable(head, f"it names a {obj.type_str} ({str(oid)[:12]}), not a commit",
                          f"delete it (`git update-ref -d {head}`)")
    try:
        tree = obj.peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):  # libgit2's words name object types by number
        raise _Unreadable(head, f"it names {obj.type_str} {str(oid)[:12]}, whose tree is not in this repository",
                          missing) from None
    known = {} if known is None else known
    if str(tree.id) in known:
        return known[str(tree.id)]
    rev = commit or head

    def opening(root: str) -> Workspace:
        # Without the shared cache, neither read nor recorded in: building a tree's graph (for its vectors) recorded
        # that tree, so `--dry-run` wrote to the ref, a real gc found the ref moved under it ("changed while gc
        # ran"), and a tree whose privacy could not be decided printed "not recording this tree" before gc's refusal.
        return open_workspace(args.cwd, rev=rev, root=root, rev_option="branch", shared_cache=False)

    needs = _Needs(set(), set(), set(), set(), None)
    where = ""  # the workspace being read, for the message when it cannot be
    try:
        folders = _workspaces(repo, str(tree.id))
        if len(folders) > MAX_WORKSPACES:
            raise _Unreadable(head, f"it holds {len(folders):,} workspaces (folders with tropo.toml or .vivary/), "
                              f"more than gc reads in one tree ({MAX_WORKSPACES})",
                              "gc would have to leave some out and drop their entries; `git vivary cache drop` "
                              "removes the whole cache instead (the next runs record afresh)")
        opened = []
        if args.root is not None:
            where = f"--root {args.root}: "
            try:
                opened.append(opening(root=args.root))
            except MissingRoot as err:
                needs = needs._replace(lacking=err.prefix or ".")
            except NestedRoot as err:  # a submodule there: none of this repository's folders
                needs = needs._replace(lacking=err.folder)
        held = {ws.source.prefix for ws in opened}
        failed: dict[str, tuple[str, ConfigError]] = {}
        for folder in folders:
            if folder in held:
                continue
            where = f"workspace {folder}/: " if folder else ""
            # By its place in the tree, pinned as `--root` pins it: the folder a command runs in plays no part.
            root = str(repo.workdir / folder) if repo.workdir is not None else folder or "."
            try:
                opened.append(opening(root=root))
            except ConfigError as err:
                if not folder:
                    raise
                failed[folder] = (where, err)  # an overlay of a workspace above it, or refused: told below
        for ws in opened:
            where = f"workspace {ws.source.prefix}/: " if ws.source.prefix else ""
            tkey, blobs, facts = ws.cache_keys()
            needs.blobs.update(blobs)
            needs.facts.update(facts)
            needs.vectors.update(_vector_keys(ws))
            if tkey is not None:
                needs.trees.add(tkey)
        for folder, (said, problem) in failed.items():
            # A nested `tropo.toml` is also an overlay of the workspace above it, whose rules it may lean on (a pack
            # in that workspace's `.tropo/packs`). When that workspace read it as one, its notes' entries are that
            # workspace's, kept above, and rules that do not load on their own recorded nothing of their own.
            above = [ws for ws in opened if _overlay_of(ws, folder)]
            if not above:
                where = said
                raise problem
            print(f"vivary: gc: {shown(head)}: {shown(folder)}/ is an overlay of workspace "
                  f"{shown(above[0].source.prefix or '.')}/, whose entries are kept (as a workspace of its own its "
                  f"rules do not load: {shown(str(problem))})", file=sys.stderr)
    except VivaryError as err:
        raise _Unreadable(head, f"{where}{err}", f"fix that on the branch, or {delete}") from None
    except (KeyError, ValueError, pygit2.GitError) as err:  # an object of its tree is missing, or does not parse
        raise _Unreadable(head, f"an object of its tree cannot be read ({err})", missing) from None
    known[str(tree.id)] = needs
    return needs


def _overlay_of(ws: Workspace, folder: str) -> bool:
    """Whether `ws` read the nested `tropo.toml` of `folder` (from the repository's top) as one of its overlays."""
    prefix = ws.source.prefix
    inside = folder[len(prefix) + 1:] if prefix else folder
    return (not prefix or folder.startswith(prefix + "/")) and inside in ws.source.overlays


def _workspaces(repo: Repo, tree: str) -> list[str]:
    """The workspace folders of `tree`, as the privacy boundary finds them (`privacy.find_workspaces`): the top
    (read zero-config when it has no tropo.toml) and every folder holding `tropo.toml` or `.vivary/`."""
    from vivary_git.privacy import find_workspaces
    from vivary_git.source import _entry_name

    tree_type = repo.pygit2.GIT_OBJECT_TREE
    paths: list[str] = []
    todo = [(repo.repo[tree], "")]
    while todo:
        folder, base = todo.pop()
        for entry in folder:  # type: ignore[attr-defined]
            path = base + _entry_name(entry)
            if entry.type == tree_type:
                todo.append((entry, path + "/"))
            else:  # a file, a link or a submodule: every folder has one below it
                paths.append(path)
    # Which folders are workspaces is all gc asks here, so no memory.toml is read (nor refused) yet: each is read
    # when its workspace is opened (`_vector_keys`), and one that cannot be read refuses the branch there, named.
    return find_workspaces(repo, tree, paths)


def _vector_keys(ws: Workspace) -> set[str]:
    """The vector keys of a tree's admitted notes when its workspace enables vivary-local (none otherwise):
    what `gc` keeps of the vectors. No model is loaded: a key needs only the model's id."""
    from vivary_git.memory.config import load_memory_config

    cfg = load_memory_config(ws)
    if cfg.provider != "vivary-local":
        return set()
    from vivary_git.memory.local.embed import model_id
    from vivary_git.memory.local.files import EMBED_FORMAT, embed_text
    from vivary_git.memory.local.vectors import vector_key
    from vivary_git.memory.snapshot import build_snapshot, packets

    model = model_id(cfg.memory.local.model)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model, dataset_label=cfg.dataset_label,
                          with_fields=False)
    return {vector_key(model, EMBED_FORMAT, embed_text(p)) for _, p in packets(ws, snap)}


def _drop(repo: Repo) -> int:
    from vivary_git.refnames import CACHE_REF, STAGING_PREFIX
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import ref_tip
    from vivary_git.store.write import delete_dangling_ref, delete_ref, delete_unreadable_ref

    try:
        staged = [str(r) for r in repo.repo.references if str(r).startswith(STAGING_PREFIX)]
    except repo.pygit2.GitError as err:  # libgit2: "corrupted packed references file"; Git itself cannot list refs
        raise UsageError(f"cannot list this repository's refs ({err}): {repo.common_dir / 'packed-refs'} (or a ref "
                         "file) does not parse, and Git cannot read it either (`git for-each-ref` says where); "
                         f"remove or fix the line it names, then run `git vivary cache drop` again") from None
    staged += [ref for ref in _loose_refs(repo, STAGING_PREFIX) if ref not in staged]
    dropped: list[str] = []
    stuck: list[str] = []
    held: list[str] = []
    for ref in [CACHE_REF, *sorted(staged)]:
        try:
            tip = ref_tip(repo, ref)
        except StoreDamaged:  # a ref file that does not parse: Git's `update-ref -d` refuses it
            if delete_unreadable_ref(repo, ref):
                dropped.append(f"{shown(ref)} (it did not parse)")
            else:
                stuck.append(ref)
            continue
        if tip is None:
            if delete_dangling_ref(repo, ref):
                dropped.append(f"{shown(ref)} (a symbolic ref to no ref)")
        elif delete_ref(repo, ref, tip):
            dropped.append(shown(ref))
        else:  # its lock file left by a writer killed mid-write (or another writer moved it): was left out unsaid
            held.append(repo.held_ref(ref) or f"{shown(ref)} moved while it was being dropped (another writer); run "
                                              "`git vivary cache drop` again")
    if dropped or not (stuck or held):
        print(f"dropped {', '.join(dropped)}" if dropped else f"{CACHE_REF}: none; nothing to drop")
    if dropped:
        print("  the next check/graph/query run records a fresh cache; the remote's copy is untouched "
              "(`git vivary sync push --force` replaces it)", file=sys.stderr)
    if stuck:
        ref = stuck[0]
        more = f" (and {len(stuck) - 1} more: {', '.join(shown(r) for r in stuck[1:])})" if len(stuck) > 1 else ""
        raise UsageError(f"{shown(ref)} does not parse and could not be removed{more}; Git refused (a "
                         f"{shown(ref)}.lock file of a Git command at work, or left by one that died?). Remove the "
                         f"file {shown(str(repo.common_dir / ref))} (or its line in "
                         f"{shown(str(repo.common_dir / 'packed-refs'))}) by hand, then run `git vivary cache drop` "
                         "again")
    if held:
        raise UsageError(f"not dropped: {'; '.join(held)}")
    return EXIT_OK


def _loose_refs(repo: Repo, prefix: str) -> list[str]:
    """The loose refs under `prefix` (`refs/vivary-fetch/`) by their files, those that do not parse included: Git
    and libgit2 leave such a ref out of every listing (`warning: ignoring broken ref`), so `cache drop` left one
    there for good. Only names Git could give a ref (never a `.lock` file of a writer at work)."""
    top = repo.common_dir
    found = []
    for folder, _, files in os.walk(top / prefix):
        for name in files:
            ref = (Path(folder) / name).relative_to(top).as_posix()
            if repo.pygit2.reference_is_valid_name(ref):
                found.append(ref)
    return found


def _notes(repo: Repo, state: str) -> int:
    from vivary_git.refnames import NOTES_REF
    from vivary_git.store.notes import notes_enabled

    if state != "show":
        repo.git(["config", "vivary.notes", "true" if state == "on" else "false"])
    on = notes_enabled(repo)
    print(f"verdict notes ({NOTES_REF}) are {'on' if on else 'off'} in this repository"
          + (": `git vivary check --rev COMMIT` notes its counts on COMMIT" if on else ""))
    return EXIT_OK
