"""`git vivary sync`: share `refs/vivary/cache` (and `refs/notes/vivary`) through a Git remote.

`fetch` never lets a remote write our cache directly: it fetches into `refs/vivary-fetch/REMOTE/`,
verifies every chunk there, and only then adopts it (fast-forward, or a merge commit on top of the
remote's that keeps our own entries). `push` verifies before publishing, folds in what the remote
gained since, and pushes with `--force-with-lease`, so it never overwrites an update it has not seen. It
publishes only what `fetch` adopts: a cache holding provider state files goes out as a commit of the
same entries without them (`store/write.py` `publishable`).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from vivary_git.errors import EXIT_OK, GitError, RefusedError, UsageError
from vivary_git.escape import text as shown
from vivary_git.refnames import CACHE_REF, NOTES_REF, STAGING_PREFIX

if TYPE_CHECKING:
    import subprocess

    from vivary_git.git import Repo
    from vivary_git.store.read import Snapshot

_PUSH_ATTEMPTS = 3
_REMOTE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sync", help="push or fetch the shared cache (refs/vivary/cache) through a remote",
        description="`setup` adds fetch refspecs for the cache to a remote (idempotent); `fetch` gets the "
        "remote's cache, verifies it and adopts it; `push` publishes ours. Only refs/vivary/cache and "
        "refs/notes/vivary move; branches are never touched. docs/sync.md has the details.",
    )
    p.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")
    actions = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    for name, text in (("setup", "add the cache's fetch refspecs to REMOTE's config"),
                       ("fetch", "fetch, verify and adopt REMOTE's cache"),
                       ("push", "publish our cache to REMOTE")):
        a = actions.add_parser(name, help=text)
        a.add_argument("remote", nargs="?", default="origin", metavar="REMOTE",
                       help="remote name or URL (default origin)")
        if name == "push":
            a.add_argument("--force", action="store_true",
                           help="replace the remote's cache with ours instead of merging its entries in (after gc, or "
                           "when the remote's cannot be merged: damaged); only a remote cache this clone has seen is "
                           "replaced")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.git import Repo

    start = Path(args.cwd or ".").resolve()
    if args.action == "fetch":
        return _fetch_command(start, args.remote)
    repo = Repo(start)
    if args.action == "setup":
        return setup(repo, args.remote)
    push(repo, args.remote, force=args.force)
    return EXIT_OK


def _fetch_command(start: Path, remote: str) -> int:
    """`sync fetch`: Git lists and fetches the remote's refs in a thread while this one imports pygit2 and
    the store, so that the fetch, not the imports, is what the command waits for."""
    from vivary_git.git import Repo
    from vivary_git.parallel import Background

    # With GIT_DIR or GIT_WORK_TREE set, the repository opens through Git anyway (`git.Repo`): no head start.
    early = Background(lambda: _stage_early(start, remote), name="vivary-sync-fetch") \
        if not (os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE")) else None
    try:
        repo = Repo(start)
    except BaseException:
        if early is not None:
            with contextlib.suppress(Exception):
                early.result()  # no thread left behind; the repository's own error is the one to show
        raise
    # What verifying the fetched cache reads with, imported while Git fetches it.
    from vivary_git import graph, parse  # noqa: F401
    from vivary_git.memory.local import vectorvalue  # noqa: F401
    from vivary_git.store import notes, read, refcache, trust, write  # noqa: F401

    staged: _Staged | None = None
    head: set[str] | None = None
    if early is not None:
        head = _head_blobs(repo)  # what a fetched cache is checked against, read while Git fetches it
        at, got = early.result()
        # Git ran on this repository where `repo.git` runs it, unless Git and libgit2 found different
        # repositories: then again.
        if at is not None and at == (_At.of(repo).cwd, repo.git_dir):
            if isinstance(got, GitError):
                raise _with_unreadable_ours(repo, got)
            staged = got
    fetch(repo, remote, staged=staged, head=head)
    return EXIT_OK


class _At(NamedTuple):
    """Where `git` runs for a repository and with what environment: as `Repo.git` runs it."""

    cwd: Path
    env: dict[str, str] | None

    @classmethod
    def of(cls, repo: Repo) -> _At:
        return cls((repo.workdir or repo.git_dir).resolve(), {**os.environ, **repo.pins} if repo.pins else None)

    def git(self, args: list[str], *, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        from vivary_git.git import run

        return run(args, cwd=self.cwd, env=self.env, check=check)


class _Staged(NamedTuple):
    """What `_stage` found: the remote's refs, where they were staged, and whether any was fetched."""

    remote_refs: dict[str, str]
    staging: str
    fetched: bool


def _stage_early(start: Path, remote: str) -> tuple[tuple[Path, Path] | None, _Staged | GitError]:
    """`_stage` before the repository is opened, on the repository Git finds from `start` (named to every
    Git run, so that a work tree set elsewhere cannot lead Git into another one) and in the folder `repo.git`
    will run Git in (the work tree's top, or the git dir of a bare repository). Returns that folder and the
    git dir, or None when Git finds no repository; a `GitError` is returned, to be raised once the
    repository has opened."""
    from vivary_git.git import pinned_env, run_all

    # The repository `git.Repo` finds, named to Git: Git's own search from `start` would take a folder a commit
    # laid out as a Git directory, and run its remote's `uploadpack` or its `core.sshCommand`.
    try:
        env = pinned_env(start)
    except GitError as err:
        return None, err
    # The two questions `_stage` asks of the repository have the same answers anywhere in it.
    proc, *local = run_all([["rev-parse", "--absolute-git-dir", "--is-bare-repository", "--show-toplevel"],
                            ["remote"], ["rev-parse", "--is-shallow-repository"]], cwd=start, env=env, check=False)
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    git_dir = Path(lines[0]).resolve() if lines else None
    if git_dir is not None and lines[1:2] == ["true"]:
        at = _At(git_dir, {**os.environ, "GIT_DIR": str(git_dir)})
    elif git_dir is not None and proc.returncode == 0 and len(lines) == 3 and lines[1] == "false":
        top = Path(lines[2]).resolve()
        at = _At(top, {**os.environ, "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(top)})
    else:
        return None, GitError("no repository")
    try:
        return (at.cwd, git_dir), _stage(at, remote, local=(local[0], local[1]))
    except GitError as err:
        return (at.cwd, git_dir), err


def _staging_for(remote: str, names: list[str]) -> str:
    label = remote if remote in names and _REMOTE_NAME.match(remote) else \
        "url-" + hashlib.sha1(remote.encode(), usedforsecurity=False).hexdigest()[:12]
    return f"{STAGING_PREFIX}{label}"


def _staging(repo: Repo, remote: str) -> str:
    """Where a remote's refs land before they are verified: by remote name, or a digest of a URL."""
    return _staging_for(remote, repo.git(["remote"]).stdout.decode().split())


def _exact_refspecs(staging: str) -> dict[str, str]:
    """The exact fetch refspecs an earlier `setup` wrote, cache first, each with the ref it names: Git's own fetch
    stops at one while the remote lacks that ref."""
    return {f"+{CACHE_REF}:{staging}/cache": CACHE_REF, f"+{NOTES_REF}:{staging}/notes": NOTES_REF}


def setup(repo: Repo, remote: str) -> int:
    """Make plain `git fetch REMOTE` stage the cache refs too. No push refspec is added: a
    `remote.NAME.push` entry would change what a bare `git push` sends.

    The refspecs are patterns (`refs/vivary/cache*`), because Git dies on a configured refspec that names one
    ref the remote lacks (`fatal: couldn't find remote ref refs/notes/vivary`), and most remotes lack one of the
    two: one whose CI writes no verdict notes, one set up before CI pushed a cache. A pattern that matches nothing
    fetches nothing. The exact refspecs an earlier setup wrote are replaced, each said once."""
    if remote not in repo.git(["remote"]).stdout.decode().split():
        raise UsageError(f"no remote named {remote!r}; `git remote -v` lists them (setup needs a name, not a URL)")
    staging = _staging(repo, remote)
    want = [f"+{CACHE_REF}*:{staging}/cache*", f"+{NOTES_REF}*:{staging}/notes*"]
    old = list(_exact_refspecs(staging))
    key = f"remote.{remote}.fetch"
    have = repo.git(["config", "--get-all", key], check=False).stdout.decode().splitlines()
    for spec in old:
        if spec in have:
            # As a regex (`--fixed-value` needs Git 2.30): every character that could mean more in one is in brackets.
            pattern = "".join(f"[{c}]" if c in ".+*?[](){}|$" else c for c in spec)
            repo.git(["config", "--unset-all", key, f"^{pattern}$"])
    added = [spec for spec in want if spec not in have]
    for spec in added:
        repo.git(["config", "--add", key, spec])
    for spec, was in zip(want, old, strict=True):
        said = "  (already there)" if spec not in added else f"  (replaces {shown(was)})" if was in have else ""
        print(f"{shown(key)} {shown(spec)}{said}")
    r = shown(remote)
    print(f"`git fetch {r}` now stages the cache; `git vivary sync fetch {r}` verifies and adopts it, "
          f"`git vivary sync push {r}` publishes ours")
    return EXIT_OK


def _ls_remote(repo: Repo, remote: str) -> dict[str, str]:
    return _listed(_At.of(repo).git(["ls-remote", "--", remote, CACHE_REF, NOTES_REF], check=False), remote)


def _listed(proc: subprocess.CompletedProcess[bytes], remote: str) -> dict[str, str]:
    """The refs `git ls-remote` listed, or the `GitError` saying why it could not."""
    if proc.returncode != 0:
        raise GitError(f"cannot reach remote {remote!r}; check `git remote -v` and your access. Git said:",
                       detail=_said(proc.stderr))
    out: dict[str, str] = {}
    for line in proc.stdout.decode().splitlines():
        oid, _, ref = line.partition("\t")
        out[ref] = oid
    return out


def _stage(at: _At, remote: str, *, local: tuple[subprocess.CompletedProcess[bytes], ...] = ()) -> _Staged:
    """List REMOTE's cache refs and fetch those it has into staging (nothing is verified or adopted).
    `local`: what `git remote` and `git rev-parse --is-shallow-repository` said, when they ran already."""
    from vivary_git.git import run_all

    remote_refs = _listed(at.git(["ls-remote", "--", remote, CACHE_REF, NOTES_REF], check=False), remote)
    names, shallow = local or run_all([["remote"], ["rev-parse", "--is-shallow-repository"]], cwd=at.cwd,
                                      env=at.env, check=False)
    if names.returncode != 0:
        names = at.git(["remote"])  # raises what Git said, as a lone `git remote` would
    staging = _staging_for(remote, names.stdout.decode().split())
    specs = []
    if CACHE_REF in remote_refs:
        specs.append(f"+{CACHE_REF}:{staging}/cache")
    if NOTES_REF in remote_refs:
        specs.append(f"+{NOTES_REF}:{staging}/notes")
    if not specs:
        return _Staged(remote_refs, staging, fetched=False)
    if shallow.returncode != 0:
        shallow = at.git(["rev-parse", "--is-shallow-repository"])
    # In a shallow clone (CI), take just the tip of the chain: it holds the whole cache. In a full
    # clone, --depth would make the repository shallow, so the chain comes whole (it is bounded).
    depth = ["--depth", "1"] if shallow.stdout.strip() == b"true" else []
    proc = at.git(["fetch", "--quiet", "--no-tags", "--no-write-fetch-head", *depth, "--", remote, *specs],
                  check=False)
    if proc.returncode != 0:
        raise GitError(f"`git fetch {remote}` of the cache refs failed. Git said:", detail=_said(proc.stderr))
    return _Staged(remote_refs, staging, fetched=True)


def fetch(repo: Repo, remote: str, *, quiet: bool = False, staged: _Staged | None = None,
          head: set[str] | None = None) -> dict[str, str]:
    """Fetch REMOTE's cache refs into staging, verify, adopt. Returns what the remote had. `staged`:
    what `_stage` did already, if it did; `head`: `_head_blobs`, if it was read already."""
    from vivary_git.refnames import CACHE_REF, NOTES_REF

    try:
        remote_refs, staging, fetched = staged if staged is not None else _stage(_At.of(repo), remote)
    except GitError as err:
        raise _with_unreadable_ours(repo, err) from None
    if not quiet:
        _say_old_refspecs(repo, remote, remote_refs, staging)
    if not fetched:
        if not quiet:
            print(f"{shown(remote)} has no vivary cache yet; after a run, `git vivary sync push {shown(remote)}` "
                  "publishes ours")
        return remote_refs
    if CACHE_REF in remote_refs:
        _adopt_cache(repo, remote, f"{staging}/cache", quiet=quiet, head=head)
    if NOTES_REF in remote_refs:
        _adopt_notes(repo, remote, f"{staging}/notes", quiet=quiet)
    return remote_refs


def _say_old_refspecs(repo: Repo, remote: str, remote_refs: dict[str, str], staging: str) -> None:
    """Say so when an earlier `setup` left a refspec naming a ref the remote lacks: Git's own `git fetch REMOTE` (and
    `git pull`) stops at it (`fatal: couldn't find remote ref refs/notes/vivary`); `setup` replaces it."""
    old = _exact_refspecs(staging)
    have = repo.git(["config", "--get-all", f"remote.{remote}.fetch"], check=False).stdout.decode().splitlines()
    for spec in have:
        ref = old.get(spec)
        if ref is not None and ref not in remote_refs:
            print(f"vivary: remote.{shown(remote)}.fetch holds {shown(spec)}, which an earlier `git vivary sync setup` "
                  f"wrote: `git fetch {shown(remote)}` and `git pull` stop at it while {shown(remote)} has no "
                  f"{ref}; `git vivary sync setup {shown(remote)}` replaces it", file=sys.stderr)


def _with_unreadable_ours(repo: Repo, err: GitError) -> GitError:
    """`err` (Git's fetch failed), saying so when our own cache ref does not parse: Git's fetch reads every local ref
    and stops at that one ("bad object refs/vivary/cache"), so `cache drop` is the fix."""
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import ref_tip

    try:
        ref_tip(repo, CACHE_REF)
    except StoreDamaged as damaged:
        return GitError(f"{CACHE_REF} is damaged ({damaged.what}), and Git's fetch stops at it; "
                        "`git vivary cache drop` removes it, then fetch again. Git said:", detail=err.detail)
    return err


def _adopt_cache(repo: Repo, remote: str, staged: str, *, quiet: bool, head: set[str] | None = None) -> None:
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import Snapshot, ref_tip, written_by
    from vivary_git.store.trust import TRUST_KEY, newest_verified, trust
    from vivary_git.store.write import delete_unreadable_ref, merge_into, update_ref

    try:
        theirs = Snapshot.load(repo, staged)
        problems = theirs.verify() if theirs is not None else []
    except StoreDamaged as err:
        theirs, problems = None, [err.what]
    if problems:
        raise RemoteCacheRefused(
            f"the cache fetched from {remote} into {staged} is damaged ({problems[0]}); ours is unchanged. "
            f"`git vivary cache verify --ref {staged}` lists every problem. {replace_hint(remote)}",
            remote, staged, f"damaged ({problems[0]})")
    if theirs is None:
        other = written_by(repo, staged)
        if other is not None:
            then = ("our `sync push` leaves it there; upgrade vivary-git to use it" if other.newer() else
                    "our next `sync push` replaces it with ours")
            print(f"vivary: {shown(remote)}'s cache was {shown(other.describe())}; not adopted, and {then}",
                  file=sys.stderr)
        return
    foreign = _not_derived(repo, theirs, _head_blobs(repo) if head is None else head)
    if foreign:
        raise RemoteCacheRefused(
            f"the cache fetched from {remote} into {staged} holds {foreign}; ours is unchanged. A shared cache "
            f"holds parses, facts and vectors only. {replace_hint(remote)}", remote, staged, f"holds {foreign}")
    try:
        ours_tip = ref_tip(repo, CACHE_REF)
    except StoreDamaged:
        # Ours does not even parse (Git refuses to update it): a damaged copy of our own, which theirs replaces
        # (as below), once it is removed.
        if not delete_unreadable_ref(repo, CACHE_REF):
            raise GitError(f"{CACHE_REF} does not parse and Git would not remove it, so {shown(remote)}'s cache was "
                           "not adopted; `git vivary cache drop` removes it (or says what to remove by hand)") from None
        ours_tip = None
    new = theirs.commit
    how = "adopted"
    if ours_tip == theirs.commit:
        how = "already up to date"
    elif ours_tip is not None and _descends(repo, ours_tip, theirs.commit):
        how, new = "ours is ahead; kept", ours_tip
    elif ours_tip is not None and not _descends(repo, theirs.commit, ours_tip):
        try:
            ours = Snapshot.load(repo)
        except StoreDamaged:
            ours = None  # our own copy is damaged: theirs replaces it
        if ours is not None:
            # Named by its staging ref, never by the URL: one with a token in it would be pushed with the cache.
            merged = merge_into(repo, theirs, ours, f"vivary cache: merged with {staged}")
            new, how = (merged, "merged with ours") if merged else (theirs.commit, "adopted (ours had nothing more)")
    if new != ours_tip and not update_ref(repo, CACHE_REF, new, ours_tip):
        # A lock file left beside the ref fails every run: named with its fix, never "run again" alone.
        raise GitError(repo.held_ref(CACHE_REF)
                       or f"{CACHE_REF} changed while the fetch was adopted; run `git vivary sync fetch` again")
    if not quiet:
        m = Snapshot.load(repo)
        blobs = sum(c.count for p, c in m.manifest.chunks.items() if p.startswith("parse/")) if m else 0
        vectors = sum(c.count for p, c in m.manifest.chunks.items() if p.startswith("vectors/")) if m else 0
        print(f"{CACHE_REF}: {how} from {shown(remote)} ({new[:12]}, {blobs} parsed notes, "
              f"{len(m.manifest.trees) if m else 0} trees" + (f", {vectors} vectors)" if vectors else ")"))
        level = trust(repo)
        if level == "none":
            print(f"vivary: no command reads it until this clone trusts it ({TRUST_KEY} is none; "
                  "`git config vivary.cacheTrust signed` trusts cache commits signed by allowed signers, "
                  "docs/cache.md#trust); gates never do", file=sys.stderr)
        elif level == "signed" and newest_verified(repo) is None:
            print(f"vivary: no commit of it is signed by an allowed signer, so {TRUST_KEY} = signed reads "
                  "none of it (`git verify-commit` says why)", file=sys.stderr)


def _not_derived(repo: Repo, snap: Snapshot, head: set[str]) -> str:
    """What in a fetched cache is not a parse, facts or vector entry vivary can check ("" when all is):
    provider state files (opaque bytes) in any commit of its chain we received (adopting the chain would
    keep them reachable, and `vivary.cacheTrust signed` may read an older commit), or any object of the
    tip that is also a blob of HEAD's tree, `head` (a source file, maybe a private one, dressed up as
    cache data)."""
    from vivary_git.store.write import chain_states

    if snap.manifest.states:
        return f"memory-provider state files ({sorted(snap.manifest.states)[0]}, …), which it cannot check"
    if chain_states(repo, snap.commit, snap.ref):
        return "memory-provider state files in an older commit of its chain, which it cannot check"
    if not head:
        return ""
    stack = [snap.tree]
    while stack:
        for entry in stack.pop():
            if entry.type_str == "tree":
                stack.append(repo.repo[entry.id])
            elif str(entry.id) in head:
                return f"{entry.name}, which is a file of HEAD's tree, not cache data"
    return ""


def _head_blobs(repo: Repo) -> set[str]:
    """The ids of every blob of HEAD's tree (none without a HEAD)."""
    pygit2 = repo.pygit2
    try:
        head = repo.repo.head.peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        return set()
    ours: set[str] = set()
    stack = [head]
    while stack:
        for entry in stack.pop():
            if entry.type_str == "tree":
                stack.append(repo.repo[entry.id])
            elif entry.type_str == "blob":
                ours.add(str(entry.id))
    return ours


class RemoteCacheRefused(RefusedError):
    """A remote's cache that `fetch` will not adopt (damaged, or holding what is not a derived entry)."""

    def __init__(self, message: str, remote: str, staged: str, what: str) -> None:
        super().__init__(message)
        self.remote, self.staged, self.what = remote, staged, what


def replace_hint(remote: str) -> str:
    """What fixes a remote's cache that cannot be adopted. Dropping our own cache does not: the next push meets the
    same remote cache, and the one after. Replacing it does, and risks nothing: `push --force` publishes only a
    cache that verifies here, only the cache refs move, and its lease fails if the remote's cache changes after
    we looked: a remote cache this clone has never seen is never replaced (a sound cache pushed meanwhile)."""
    return (f"It stays there until replaced: `git vivary sync push --force {remote}`, from a clone whose own cache "
            "verifies (`git vivary cache verify`), publishes that one in its place (only the cache refs move, and "
            "only a remote cache that clone has seen is replaced); `git vivary cache drop` does not fix it")


def _descends(repo: Repo, commit: str, ancestor: str) -> bool:
    pygit2 = repo.pygit2
    try:
        return bool(repo.repo.descendant_of(pygit2.Oid(hex=commit), pygit2.Oid(hex=ancestor)))
    except (KeyError, ValueError, pygit2.GitError):
        return False  # a shallow chain cannot say: treated as diverged, so entries are merged, not lost


def _adopt_notes(repo: Repo, remote: str, staged: str, *, quiet: bool) -> None:
    """Verdict notes are someone else's claims about commits: adopted only under `vivary.cacheTrust = any`,
    and then as a union of verdicts we re-encode ourselves (ours win on the same commit and folder), each one
    decoded as a `Verdict` and naming the tree its commit has at its folder. Their notes commit is never
    adopted as is: a notes tree can hold any blob."""
    from vivary_git.store.notes import Verdict, folder_tree, read_verdicts, unwritten, write_note
    from vivary_git.store.read import _tip
    from vivary_git.store.trust import TRUST_KEY, trust

    if trust(repo) != "any":
        if not quiet:
            print(f"vivary: verdict notes from {remote} stay in {staged} (not adopted: they are claims no gate "
                  f"uses, adopted only with {TRUST_KEY} = any)", file=sys.stderr)
        return
    if _tip(repo, staged) is None:
        return
    for note in repo.repo.notes(staged):  # type: ignore[call-arg]  # stub lacks ref
        commit = str(note.annotated_id)
        have = {v.folder for v in read_verdicts(repo, commit)}
        adopted = [Verdict(tree=v.tree, checked=v.checked, errors=v.errors, warnings=v.warnings, clean=v.clean,
                           format=v.format, folder=v.folder)
                   for v in read_verdicts(repo, commit, staged)
                   if v.folder not in have and folder_tree(repo, commit, v.folder) == v.tree]
        if adopted and not write_note(repo, commit, *adopted):
            # The rest would wait on the same lock: they stay in staging, adopted by the next fetch.
            print(f"vivary: verdict notes from {remote} not all adopted: {unwritten(repo)}; the rest stay in "
                  f"{staged}", file=sys.stderr)
            return


def push(repo: Repo, remote: str, *, force: bool = False) -> None:
    """Publish refs/vivary/cache (and verdict notes) to REMOTE."""
    from vivary_git.refnames import CACHE_REF, NOTES_REF
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import Snapshot, _tip, ref_tip, written_by
    from vivary_git.store.write import chain_states, publishable

    said: list[str] = []
    for _attempt in range(_PUSH_ATTEMPTS):
        try:
            ours = ref_tip(repo, CACHE_REF)
        except StoreDamaged as err:
            raise RefusedError(f"{CACHE_REF} is damaged ({err.what}); not pushed. "
                               "`git vivary cache drop` and a fresh run make a sound one") from None
        if ours is None:
            raise UsageError(f"there is no {CACHE_REF} to push; `git vivary check --rev HEAD` records one")
        written = None
        try:
            snap = Snapshot.load(repo)
            written = written_by(repo) if snap is None else None
            problems = snap.verify() if snap is not None else []
        except StoreDamaged as err:
            problems = [err.what]
        if written is not None:  # another vivary-git's cache, in this clone: no damage, and not this one's to publish
            print(f"vivary: {CACHE_REF} was {shown(written.describe())}; nothing was pushed: {written.fate()}",
                  file=sys.stderr)
            return
        if problems:
            raise RefusedError(f"{CACHE_REF} is damaged ({problems[0]}); not pushed. "
                               "`git vivary cache drop` and a fresh run make a sound one")
        remote_refs = _ls_remote(repo, remote)
        theirs = remote_refs.get(CACHE_REF)
        if force and theirs is not None and theirs != ours and theirs not in repo.repo:
            # The lease of --force is what this clone has seen: a cache pushed since (perhaps the sound one that
            # replaced a damaged one) is looked at first, never overwritten blind.
            raise RefusedError(
                f"{remote}'s cache is now {theirs[:12]}, which this clone has never seen, so --force does not replace "
                f"it; nothing was pushed. `git vivary sync fetch {remote}` looks at it first (it adopts a sound cache, "
                "or says what is wrong with it); then push again")
        if theirs is not None and theirs != ours and not force and not _descends(repo, ours, theirs):
            try:
                fetch(repo, remote, quiet=True)  # folds the remote's entries into ours first
            except RemoteCacheRefused as err:
                # Ours verified above: replacing theirs is the fix, and a stranger's cache has no say in it.
                raise RefusedError(
                    f"{remote}'s cache ({theirs[:12]}, fetched into {err.staged}) is {err.what}, so it cannot be "
                    f"merged into ours; nothing was pushed. `git vivary sync push --force {remote}` replaces it "
                    f"with ours ({CACHE_REF} {ours[:12]}, which verifies): only the cache refs move, and only "
                    f"while {remote} holds {theirs[:12]} or a cache this clone has seen. `git vivary cache verify "
                    f"--ref {err.staged}` lists what is wrong with it") from None
            other = written_by(repo, f"{_staging(repo, remote)}/cache")
            if other is not None and other.newer():
                # Newest wins: replacing it would leave the newer installs cold until they replace ours again.
                print(f"vivary: {shown(remote)}'s cache was {shown(other.describe())}; left in place, nothing "
                      "was pushed: upgrade vivary-git to publish to it (`--force` replaces it)", file=sys.stderr)
                return
            ours = _tip(repo, CACHE_REF)
            assert ours is not None
            snap = Snapshot.load(repo)
        assert snap is not None
        # Provider state files stay here: `sync fetch` refuses a cache holding any (docs/cache.md#trust).
        kept = chain_states(repo, snap.commit)
        publish = publishable(repo, snap, theirs)
        refs = [(CACHE_REF, publish, theirs)]
        notes = _tip(repo, NOTES_REF)
        if notes is not None:
            refs.append((NOTES_REF, notes, remote_refs.get(NOTES_REF)))
        todo = [(ref, mine, old) for ref, mine, old in refs if mine != old]
        if not todo:
            print(f"{shown(remote)} already has {CACHE_REF} {publish[:12]}")
            _said_kept(kept)
            return
        leases = [f"--force-with-lease={ref}:{old or ''}" for ref, _, old in todo]
        # --no-verify: this push carries derived data only, never a branch a pre-push gate protects.
        proc = repo.git(["push", "--quiet", "--no-verify", "--porcelain", *leases, "--", remote,
                         *(f"{mine}:{ref}" for ref, mine, _ in todo)], check=False)
        if proc.returncode == 0:
            for ref, mine, old in todo:
                print(f"{ref}: {(old or '(none)')[:12]} -> {mine[:12]} on {shown(remote)}")
            _said_kept(kept)
            return
        said = _said(proc.stderr + proc.stdout)
        reasons = _rejections(proc.stdout)
        if not reasons or not reasons <= _RACED:
            raise GitError(f"`git push {remote}` of the cache refs failed{_hint(reasons)}. Git said:", detail=said)
        # Someone pushed in between: fold their entries in and try again.
    raise GitError(f"{remote}'s cache kept changing during {_PUSH_ATTEMPTS} attempts; run `git vivary sync push` "
                   "again. Git said:", detail=said)


def _said_kept(states: int) -> None:
    if states:
        print(f"vivary: {states} memory-provider state file(s) stay in this clone: `sync fetch` refuses them, so "
              "the cache was published without them (docs/cache.md#for-memory-providers)", file=sys.stderr)


# `git push --porcelain` reasons that mean the remote moved since we looked: fetch, fold in, retry.
_RACED = {"stale info", "fetch first", "non-fast-forward"}


def _rejections(porcelain: bytes) -> set[str]:
    """The reasons of the refs the remote refused: `!<TAB>src:dst<TAB>[rejected] (reason)` lines."""
    reasons = set()
    for line in porcelain.decode("utf-8", "replace").splitlines():
        flag, _, rest = line.partition("\t")
        if flag == "!":
            summary = rest.partition("\t")[2]
            reasons.add(summary[summary.find("(") + 1:summary.rfind(")")] if "(" in summary else summary)
    return reasons


def _hint(reasons: set[str]) -> str:
    if "shallow update not allowed" in reasons:
        return (": the cache's history reaches into commits this shallow clone lacks, and the remote will not "
                "take an incomplete history. `git vivary cache gc` starts a new chain without that history; "
                "then push again")
    return ""


def _said(output: bytes) -> list[str]:
    """Git's own words, every line of them (escaped when shown: a remote's message is a stranger's text)."""
    return [line.rstrip() for line in output.decode("utf-8", "replace").splitlines() if line.strip()] \
        or ["(no message)"]
