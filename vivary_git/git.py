"""All Git plumbing in one place: repository discovery, `git` subprocesses, environment hygiene.

Inside a hook Git exports `GIT_INDEX_FILE`, `GIT_DIR` and `GIT_WORK_TREE`. We honour the index Git
hands us for the repository we were started in, and strip those variables from any `git` we run
against another repository (a scratch repo, a remote), where they would point at the wrong place.

When `GIT_DIR` is set, the repository and its work tree are the ones Git itself would use (`GIT_DIR`,
then `GIT_WORK_TREE`, `core.worktree` or the current directory): libgit2's discovery ignores the
variable, and reading one repository with libgit2 while `git` writes into another wrote this work
tree's files into the other's object store.

A folder a commit laid out as a Git directory (`docs/HEAD`, `docs/config`, `docs/objects/`) is a folder of
the repository that tracks it, never a repository: Git's discovery from inside it would take it for one,
and run the commands its config names (`core.fsmonitor`, filters). Callers never look for a repository from
a folder the user named (`--root`): see `source.open_source`.

Every look for a repository goes through `discover`, which stops where Git stops: at a folder of
`GIT_CEILING_DIRECTORIES`, and at a file-system boundary unless `GIT_DISCOVERY_ACROSS_FILESYSTEM` is set
(libgit2 reads neither from the environment).
"""

from __future__ import annotations

import itertools
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from vivary_git.errors import GitError
from vivary_git.escape import text as shown

# Inherited from a hook or a caller, these would make a `git` look at another repository, index or
# pathspec mode (or, LANGUAGE, translate messages we match). GIT_CONFIG_PARAMETERS (`git -c` given to
# `git vivary`) is deliberately kept.
_REPO_SCOPED_VARS = (
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_PREFIX", "GIT_COMMON_DIR", "GIT_NAMESPACE", "GIT_QUARANTINE_PATH", "GIT_LITERAL_PATHSPECS",
    "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS", "LANGUAGE",
)


class BlobTooLarge(Exception):
    """A blob over the size its reader takes, refused unread: `size` is what its object header says."""

    def __init__(self, size: int) -> None:
        super().__init__(f"is {size:,} bytes")
        self.size = size


# The fetch Git itself makes for a partial clone's missing objects (promisor-remote.c): one request for the object
# ids that follow (or, with `--stdin`, are read from stdin), with no negotiation over the clone's history.
# `--no-filter`: a folder's tree the clone lacks (`--filter=tree:0`) comes with everything under it; a blob is itself
# either way. The commands vivary names for a clone that lacks objects (`partial.fetch_command`) start with it.
PROMISOR_FETCH = ("git -c fetch.negotiationAlgorithm=noop fetch --no-tags --no-write-fetch-head "
                  "--recurse-submodules=no --no-filter")


class MissingObject(GitError):
    """A blob (or a folder's tree) a tree names that the object store lacks: a partial clone's (`git clone
    --filter=blob:none`, `--filter=tree:0`), which Git fetches from the promisor remote when a `git` command reads
    it and libgit2 never does, or a damaged repository's. `oid` is its hex id. A workspace's reader names the file
    and the fetch that brings every missing one (`partial.refusal`); this message is for a reader that cannot."""

    def __init__(self, oid: str, *, message: str | None = None, paths: Sequence[str] = ()) -> None:
        super().__init__(message or (
            f"object {oid} is not in this repository: a partial clone has not fetched it (`{PROMISOR_FETCH} origin "
            f"{oid}` does), or the repository is damaged (`git fsck` says what else is missing)"
        ))
        self.oid = oid
        self.paths = tuple(paths)  # every file missing under the tree read, when a reader looked (tree-relative)


def blob_size(odb: Any, oid: Any) -> int:
    """The size blob `oid` (a pygit2 Oid) says it has, from its header; `MissingObject` when `odb` lacks it."""
    try:
        size: int = odb.read_header(oid)[1]
    except KeyError:  # pygit2.NotFoundError
        raise MissingObject(str(oid)) from None
    return size


def read_blob(odb: Any, oid: Any, limit: int | None) -> bytes:
    """The bytes of blob `oid` (a pygit2 Oid) in `odb`; over `limit` bytes, `BlobTooLarge`; `MissingObject` when
    `odb` lacks it (never fetched: libgit2 does not). The size comes from the object's header (libgit2 inflates
    only its first bytes, and reads a packed delta's result size from the delta): a 2 GB note committed by
    mistake costs a lookup, not 2 GB of memory in every reader."""
    if limit is not None:
        size = blob_size(odb, oid)
        if size > limit:
            raise BlobTooLarge(size)
    try:
        data: bytes = odb.read(oid)[1]
    except KeyError:  # pygit2.NotFoundError
        raise MissingObject(str(oid)) from None
    return data


def discover(start: Path | str) -> str | None:
    """The Git directory Git would find looking up from `start` (a `.git` folder or file, or a bare repository),
    or None: the search stops below a folder `GIT_CEILING_DIRECTORIES` names and at a file-system boundary
    unless `GIT_DISCOVERY_ACROSS_FILESYSTEM` is true, as in Git (setup.c). A value of the latter Git cannot
    read as a boolean is a GitError, as Git refuses it too."""
    import pygit2

    return pygit2.discover_repository(str(start), _across_filesystems(), _ceilings())


def _ceilings() -> str:
    """`GIT_CEILING_DIRECTORIES` as Git reads it, for libgit2 (which resolves each entry's symbolic links):
    relative entries are ignored, and after an empty entry symbolic links are no longer resolved, so an entry
    that goes through one can never be above the (resolved) current directory and is left out."""
    kept: list[str] = []
    literal = False
    for entry in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep):
        if not entry:
            literal = True
        elif os.path.isabs(entry) and (not literal or os.path.realpath(entry) == os.path.normpath(entry)):
            kept.append(entry)
    return os.pathsep.join(kept)


def _across_filesystems() -> bool:
    value = os.environ.get("GIT_DISCOVERY_ACROSS_FILESYSTEM")
    if value is None:
        return False
    word = value.strip().lower()
    if word in ("true", "yes", "on"):
        return True
    if word in ("", "false", "no", "off"):
        return False
    try:
        return int(word, 0) != 0
    except ValueError:
        raise GitError(f"GIT_DISCOVERY_ACROSS_FILESYSTEM={value!r} is not a boolean Git reads (true or false); "
                       "set it to one of those, or unset it") from None


ObjectDirs = tuple[str | None, tuple[str, ...]]


def object_dirs() -> ObjectDirs | None:
    """Where Git reads and writes objects when the environment says (else None: the repository's own
    `objects/`): `GIT_OBJECT_DIRECTORY`, in place of `objects/` (its `info/alternates` included), and the
    folders `GIT_ALTERNATE_OBJECT_DIRECTORIES` adds, read only. A relative path is the current folder's."""
    own = os.environ.get("GIT_OBJECT_DIRECTORY") or None
    alternates = tuple(os.path.abspath(entry)
                       for entry in os.environ.get("GIT_ALTERNATE_OBJECT_DIRECTORIES", "").split(os.pathsep) if entry)
    if own is None and not alternates:
        return None
    return (os.path.abspath(own) if own else None), alternates


def quarantined() -> bool:
    """Whether Git runs us inside a push's quarantine (a `pre-receive` hook: GIT_QUARANTINE_PATH). The pushed
    objects are readable there, but Git forbids ref updates and discards whatever else is written into the
    quarantine when the push is refused, so nothing derived is written at all: the one place that decides it
    (`workspace.Workspace`, as `--no-cache` does)."""
    return bool(os.environ.get("GIT_QUARANTINE_PATH"))


def with_objects(handle: Any, objects: ObjectDirs | None) -> Any:
    """The libgit2 repository `handle` reading (and writing) objects where Git would (`object_dirs`)."""
    if objects is None:
        return handle
    import pygit2

    own, alternates = objects
    if own is not None:
        try:
            handle.set_odb(pygit2.Odb(own))
        except pygit2.GitError as err:
            # Git finds no repository at all then ("not a git repository").
            raise GitError(f"GIT_OBJECT_DIRECTORY={own} is not a folder Git can keep objects in ({err}); point it "
                           "at one, or unset it") from None
    odb = handle.odb
    for folder in alternates:
        odb.add_disk_alternate(folder)
    return handle


def git_executable() -> str:
    exe = shutil.which("git")
    if exe is None:
        raise GitError("`git` is not on PATH; install Git (2.30 or newer) and try again")
    return exe


def env_for_other_repo(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a `git` that must not see the hook's repository-scoped variables."""
    env = {k: v for k, v in os.environ.items() if k not in _REPO_SCOPED_VARS}
    if extra:
        env.update(extra)
    return env


def _child_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment a `git` child is started with: always given explicitly. A child started without one
    reads the process's own environment array as it execs, while the other threads run on (the system forks
    it sharing our memory); one that changes the environment meanwhile (numpy sets and clears a variable
    as it is first imported, which the model's thread does) can free that array under it, and the start
    fails with "[Errno 14] Bad address"."""
    return dict(env) if env is not None else dict(os.environ)


def git_said(stderr: bytes, returncode: int) -> str:
    """What Git said on stderr, as one line: its lines joined with "; " (one ending in ":" runs on into the next),
    each line once. Kept whole, a broken `~/.gitconfig` or Git's dubious-ownership refusal reached the user as
    one line full of escaped `\\n`s, the same warning twice."""
    lines: list[str] = []
    for line in stderr.decode("utf-8", "replace").splitlines():
        line = line.strip()
        if line and line not in lines:
            lines.append(line)
    if not lines:
        return f"exit code {returncode}"
    said = lines[0]
    for before, line in itertools.pairwise(lines):
        said += f" {line}" if before.endswith(":") else f"; {line}"
    return said


def run(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | None = None,
    check: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """Run `git ARGS`; on failure raise `GitError` carrying Git's own words."""
    cmd = [git_executable(), *args]
    try:
        proc = subprocess.run(
            cmd, cwd=cwd, env=_child_env(env), input=input,
            capture_output=True, check=False,
        )
    except OSError as err:
        raise GitError(f"could not run git: {err}") from err
    if check and proc.returncode != 0:
        said = git_said(proc.stderr, proc.returncode)
        raise GitError(f"`git {' '.join(args[:3])}` failed: {said}")
    return proc


def run_all(
    commands: Sequence[Sequence[str]],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    check: bool = True,
) -> list[subprocess.CompletedProcess[bytes]]:
    """Run independent `git` commands at once, results in order (each start costs milliseconds, and
    the pre-commit hook and every privacy decision run several); as `run` for failures."""
    exe = git_executable()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for args in commands:
            procs.append(subprocess.Popen(
                [exe, *args], cwd=cwd, env=_child_env(env), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            ))
    except OSError as err:
        for proc in procs:
            proc.kill()
        raise GitError(f"could not run git: {err}") from err
    done = []
    for args, proc in zip(commands, procs, strict=True):
        stdout, stderr = proc.communicate()
        if check and proc.returncode != 0:
            said = git_said(stderr, proc.returncode)
            raise GitError(f"`git {' '.join(args[:3])}` failed: {said}")
        done.append(subprocess.CompletedProcess([exe, *args], proc.returncode, stdout, stderr))
    return done


def out(args: Sequence[str], **kwargs: Any) -> str:
    return run(args, **kwargs).stdout.decode("utf-8", "surrogateescape").strip()


# --- commits made for the user: signed as Git would sign them ---------------------------------------------

SIGN_SETTING = "commit.gpgSign"


class SigningFailed(GitError):
    """Git was asked to sign a commit and could not (`git commit-tree -S`): no commit was made. `why` is
    the last line Git (or its signing program) said."""

    def __init__(self, why: str) -> None:
        super().__init__(f"Git could not sign the commit: {why}")
        self.why = why


def commit_signing(repo: Repo) -> bool:
    """`commit.gpgSign` as Git reads it (`git -c`, includes, the environment): whether the user's commits
    are signed. `git commit` honours it; the plumbing `git commit-tree` does not, so a commit made for the
    user with `commit-tree` asks here and signs with `-S`. A value Git cannot read as a boolean is a
    `GitError`, as it is to `git commit`."""
    proc = repo.git(["config", "--type=bool", "--get", SIGN_SETTING], check=False)
    if proc.returncode == 1:
        return False  # not set
    if proc.returncode != 0:
        said = git_said(proc.stderr, proc.returncode)
        raise GitError(f"{SIGN_SETTING} cannot be read: {said}; fix it with `git config {SIGN_SETTING} true|false`")
    return proc.stdout.strip() == b"true"


def commit_tree(repo: Repo, tree: str, parents: Sequence[str], message: str, *, sign: bool,
                env: Mapping[str, str] | None = None) -> str:
    """The id of a new commit of `tree` on `parents` (`git commit-tree`, the message on stdin). With `sign`
    it is signed as `git commit -S` signs it (`gpg.format`, `user.signingKey`, `gpg.program` or
    `gpg.ssh.program`); a commit Git cannot sign is `SigningFailed`, never made unsigned."""
    args = ["commit-tree", *(["-S"] if sign else []), *(a for p in parents for a in ("-p", p)), tree]
    proc = repo.git(args, input=message.encode("utf-8"), check=False, env=env)
    if proc.returncode != 0:
        # Git prints a bare "error:" for a signing program that fails without a word.
        said = [line.strip() for line in proc.stderr.decode("utf-8", "replace").splitlines()
                if line.strip() not in ("", "error:", "fatal:")]
        why = said[-1] if said else f"`git commit-tree` exit code {proc.returncode}"
        if sign:
            raise SigningFailed(why)
        raise GitError(f"`git commit-tree` failed: {why}")
    return proc.stdout.decode().strip()


class Repo:
    """A Git repository opened with pygit2, plus the paths plumbing needs."""

    def __init__(self, start: Path, *, environment: bool = True) -> None:
        """The repository Git finds from `start`; `environment` False: as if GIT_DIR and GIT_WORK_TREE were not set
        (a hook's, when the command works on another repository: `env_for_other_repo`)."""
        import pygit2

        # Reads do not re-hash every object, as Git's own reads do not (`git fsck` is the tool for
        # that): libgit2's check was a fifth of the time spent reading 10,000 loose blobs.
        pygit2.settings.enable_strict_hash_verification(False)
        self.pygit2 = pygit2
        # What every `git` run on this repository must see: set only when GIT_DIR was (made absolute,
        # since our `git` runs in the work tree's top, not where a relative GIT_DIR was meant).
        self.pins: dict[str, str] = {}
        # A work tree that lies inside another repository's (GIT_DIR names this one): whose it is.
        self.foreign: Path | None = None
        if environment and (os.environ.get("GIT_DIR") or os.environ.get("GIT_WORK_TREE")):
            # `git --work-tree=…` sets GIT_WORK_TREE alone: Git then finds the repository as usual, but not
            # the work tree, which libgit2 would not know of. Git says what both are.
            git_dir, top = _from_environment(start)
            try:
                self.repo = pygit2.Repository(git_dir)
            except pygit2.GitError as err:  # a SHA-256 repository, say, which this libgit2 cannot read
                raise GitError(f"cannot open the Git repository {git_dir} ({err}); "
                               f"{_owner_hint(err) or 'check it with `git status`'}") from None
            self.bare: bool = top is None
            self.workdir: Path | None = top
            self.pins = {"GIT_DIR": git_dir, **({"GIT_WORK_TREE": str(top)} if top is not None else {})}
            own = discover(top) if top is not None else None
            if own is not None and Path(own).resolve() != Path(git_dir).resolve():
                self.foreign = Path(own).resolve()
        else:
            found = discover(start)
            if found is None:
                raise NotARepository(f"{start} is not inside a Git repository")
            opened_from = start
            holder = _committed_git_dir(Path(found), start)
            if holder is not None:
                found, opened_from = holder
            # Opened from where it was found, not by its git dir: when a `.git` file names the repository
            # (`git init --separate-git-dir`, a submodule without core.worktree) only that file says where the
            # work tree is, and libgit2 opening the git dir itself takes the git dir's parent instead.
            try:
                self.repo = pygit2.Repository(str(opened_from))
            except pygit2.GitError as err:
                # Found, yet not opened: its work tree (core.worktree) names a folder that is gone, say.
                worktree = _config_value(found, "core.worktree")
                hint = _owner_hint(err) or (
                    f"core.worktree names {worktree!r}, which is not a folder: fix it or unset it "
                    "(`git config --unset core.worktree`)" if worktree is not None else "check it with `git status`")
                raise GitError(f"cannot open the Git repository {found} ({err}); {hint}") from None
            self.bare = bool(self.repo.is_bare)
            self.workdir = None if self.bare else Path(self.repo.workdir).resolve()
            if self.workdir is not None:
                # A work tree set elsewhere (core.worktree): Git run there would find whatever repository
                # holds that folder, or none, so every `git` run for this one names it.
                own = discover(self.workdir)
                if own is None or Path(own).resolve() != Path(found).resolve():
                    self.pins = {"GIT_DIR": str(Path(found).resolve()), "GIT_WORK_TREE": str(self.workdir)}
        # Objects kept elsewhere (GIT_OBJECT_DIRECTORY, GIT_ALTERNATE_OBJECT_DIRECTORIES): libgit2 ignores both.
        self.objects = object_dirs() if environment else None
        self.repo = with_objects(self.repo, self.objects)
        self.git_dir = Path(self.repo.path).resolve()
        # Linked worktrees share objects and refs with the main repository: keep our cache there.
        common = Path(self.repo.path)
        commondir_file = self.git_dir / "commondir"
        if commondir_file.is_file():
            common = (self.git_dir / commondir_file.read_text().strip()).resolve()
        self.common_dir = common.resolve()
        self.cwd = start

    def reopen(self) -> Any:
        """A new libgit2 handle on this repository (a forked child's: one must not be shared across a fork),
        reading and writing objects where this one does."""
        return with_objects(self.pygit2.Repository(str(self.git_dir)), self.objects)

    def setting(self, key: str, *, boolean: bool = False) -> str | None:
        """`key` as Git reads it for this repository (`setting_of`)."""
        return setting_of(self.repo, key, boolean=boolean, run_git=self.git)

    @property
    def unused_worktree(self) -> str | None:
        """The folder `core.worktree` names in a repository that is bare all the same (`core.bare = true`, as a
        bare clone made for dotfiles keeps): Git uses no work tree then ("core.bare and core.worktree do not make
        sense"), and neither does vivary. None otherwise."""
        if not self.bare:
            return None
        try:
            return str(self.repo.config["core.worktree"])
        except (KeyError, ValueError, self.pygit2.GitError):
            return None

    @property
    def pinned_git_dir(self) -> Path | None:
        """The Git directory every `git` for this work tree must be told (`pins`), or None when Git run in the
        work tree finds it: what `privacy.decide_scoped(git_dir=…)` needs for a work tree set elsewhere."""
        pinned = self.pins.get("GIT_DIR")
        return Path(pinned) if pinned else None

    def git(self, args: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
        kwargs.setdefault("cwd", self.workdir or self.git_dir)
        if self.pins:
            kwargs["env"] = {**(kwargs.get("env") or os.environ), **self.pins}
        return run(args, **kwargs)

    def read_blob(self, oid: str, limit: int | None = None) -> bytes:
        """A blob's bytes by hex id, through the object database (no prefix search). With a `limit`, a
        bigger blob is `BlobTooLarge`, refused before it is inflated."""
        return read_blob(self.repo.odb, self.pygit2.Oid(hex=oid), limit)

    def holds(self, path: Path, oid: str) -> bool:
        """Whether the file at `path` is a regular file (not a symbolic link) whose bytes are blob `oid`'s. It is
        read no further than the blob's size (from its header): a bigger file is not it, and stays unread."""
        from vivary_git.safeio import FileRefused, read_regular

        pygit2 = self.pygit2
        try:
            size: int = self.repo.odb.read_header(pygit2.Oid(hex=oid))[1]
            data = read_regular(path, size, follow_symlinks=False)
        except (OSError, FileRefused, KeyError, ValueError, pygit2.GitError):
            return False
        return str(pygit2.hash(data)) == oid

    def stores(self, path: Path, rel: str, oid: str) -> bool:
        """Whether the file at `path` (the work tree's `rel`) is what `git status` reads as blob `oid`: its bytes
        (`holds`), or, when they differ, what Git makes of them at `rel` (`git hash-object --path`: an `eol=crlf`
        note's CRLF, a `working-tree-encoding` note's UTF-16, a `filter` note's plaintext on disk)."""
        if self.holds(path, oid):
            return True
        if path.is_symlink() or not path.is_file():
            return False
        proc = self.git(["hash-object", f"--path={rel}", "--", str(path)], check=False)
        return proc.returncode == 0 and proc.stdout.decode().strip() == oid

    def lookup(self, tree_id: str, path: str) -> str | None:
        """The id of the entry at `path` inside tree `tree_id`, or None."""
        try:
            tree = self.repo[tree_id]
            entry = tree[path]  # type: ignore[index]
        except (KeyError, ValueError, TypeError):
            return None
        return str(entry.id)

    def held_ref(self, ref: str) -> str:
        """Why `ref` cannot be moved when Git's lock file beside it is there, or "" when none is: a Git command
        moving it holds `REF.lock` for an instant, but one killed meanwhile leaves it, and Git never removes
        another's, so every move of the ref fails until someone does. The text names the file and the fix."""
        for top in (self.git_dir, self.common_dir):  # HEAD and a worktree's own refs, then the shared ones
            lock = top / f"{ref}.lock"
            if os.path.lexists(lock):
                return (f"{shown(ref)} is locked: {shown(str(lock))} is there (a Git command moving it now, or one "
                        "killed while it did, which leaves it behind); when no Git command is running in this "
                        "repository, remove that file and try again")
        return ""

    @property
    def vivary_dir(self) -> Path:
        """Local, never-pushed derived data (the hot cache): `.git/vivary/`, never in the work tree."""
        return self.common_dir / "vivary"


def _owner_hint(err: Exception) -> str | None:
    """The fix for a repository libgit2 refuses because another user owns it (Git's `safe.directory` check, which
    libgit2 makes too), or None for any other failure. "check it with `git status`" sent the user to a command
    that only repeats the refusal, when Git's own fix is one line."""
    found = re.search(r"repository path '(.*)' is not owned by current user", str(err))
    if found is None:
        return None
    return (f"another user owns {found[1]}, and Git refuses such a repository; if you trust it, run "
            f"`git config --global --add safe.directory {shlex.quote(found[1])}`")


class NotARepository(GitError):
    """No repository holds the folder (`try_open` then reads it as a plain folder); one that is found and
    cannot be opened is a GitError of its own, never read as a folder."""


def _from_environment(start: Path) -> tuple[str, Path | None]:
    """The git dir and work tree top (None when there is none) Git uses here, GIT_DIR or GIT_WORK_TREE being
    set. Asked of Git itself: its rules (relative paths, core.worktree, linked worktrees, core.bare) have
    corners."""
    proc = run(["rev-parse", "--absolute-git-dir", "--is-bare-repository", "--show-toplevel"], cwd=start,
               check=False)
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if len(lines) < 2:
        said = git_said(proc.stderr, proc.returncode)
        if not os.environ.get("GIT_DIR"):
            raise NotARepository(f"{start} is not inside a Git repository ({said})")
        raise GitError(f"GIT_DIR={os.environ.get('GIT_DIR')} does not name a Git repository ({said}); point it "
                       "at one, or unset it (a hook or a script may have left it set)")
    top = Path(lines[2]).resolve() if proc.returncode == 0 and len(lines) == 3 and lines[1] == "false" else None
    return lines[0], top


def _committed_git_dir(found: Path, start: Path) -> tuple[str, Path] | None:
    """The repository to open instead of `found` when `found` is a folder a commit planted: Git's discovery
    takes a folder holding `HEAD`, `objects/` and `refs/` for a (bare) repository, with no `.git` naming it,
    and that folder's `config` may name commands Git runs (`core.fsmonitor`, a filter) and a `core.worktree`.
    When the repository around it tracks that folder's files, the folder is part of that repository's work
    tree, and the repository around it is the one read: its git dir, and the folder to open it from. None
    for every other repository (a `.git` found, a bare repository nobody committed, a `.git` file's)."""
    import pygit2

    here = found.resolve()
    where = start.resolve()
    if ".git" in here.parts or (here != where and here not in where.parents):
        return None  # a `.git` (or inside one: modules/, worktrees/), or named by a `.git` file elsewhere
    for holder in here.parents:
        if not os.path.lexists(holder / ".git"):
            continue
        outer = discover(holder)
        try:
            repo = pygit2.Repository(str(holder))
        except pygit2.GitError:
            return None
        if outer is None or repo.is_bare or repo.workdir is None:
            return None
        try:
            rel = here.relative_to(Path(repo.workdir).resolve()).as_posix()
            index = repo.index
        except (ValueError, pygit2.GitError):
            return None
        if any(f"{rel}/{name}" in index for name in ("HEAD", "config")):
            return outer, holder
        return None
    return None


def _config_value(git_dir: str, key: str) -> str | None:
    """`key` in the repository's own config file (not the user's or the system's), or None: for messages."""
    import pygit2

    try:
        value = pygit2.Config(str(Path(git_dir) / "config"))[key]
    except (KeyError, ValueError, OSError, pygit2.GitError):
        return None
    return str(value)


def setting_of(repo: Any, key: str, *, boolean: bool = False,
               run_git: Callable[..., subprocess.CompletedProcess[bytes]] | None = None) -> str | None:
    """`key` as Git reads it for pygit2 repository `repo`, or None when it is not set. libgit2 reads the config
    files (their includes too) but not what `git -c` gave the command (GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT):
    with either set, Git itself is asked, through `run_git` (`Repo.git`; by default `git --git-dir=` the
    repository's own). With `boolean`, "true" or "false"; a value that is no boolean is a ValueError. Not for
    `extensions.*`, which Git reads from the repository's config file alone (a `git -c` of one is ignored)."""
    import pygit2

    if os.environ.get("GIT_CONFIG_PARAMETERS") or os.environ.get("GIT_CONFIG_COUNT"):
        args = ["config", *(["--type=bool"] if boolean else []), "--get", key]
        if run_git is None:
            proc = run([f"--git-dir={repo.path}", *args], cwd=repo.path, check=False)
        else:
            proc = run_git(args, check=False)
        if proc.returncode == 1:
            return None
        if proc.returncode != 0:
            raise ValueError(proc.stderr.decode("utf-8", "replace").strip())
        return proc.stdout.decode("utf-8", "surrogateescape").rstrip("\n")
    config = repo.config
    try:
        if boolean:
            return "true" if config.get_bool(key) else "false"
        return str(config[key])
    except KeyError:
        return None
    except pygit2.GitError as err:
        raise ValueError(str(err)) from None


def pinned_env(start: Path, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a `git` run in `start` that reaches the repository `Repo(start)` opens and no other:
    GIT_DIR and GIT_WORK_TREE named, so Git does not look for one itself, and a folder a commit laid out as a Git
    directory (`docs/HEAD`, `docs/config` naming `core.fsmonitor`, a `core.hooksPath`, a remote's `uploadpack`) is
    never the repository it reads, whatever folder of the work tree the command runs in. Outside any repository
    the environment as it is (Git then says so). Raises GitError for a repository found that cannot be opened."""
    base = dict(env if env is not None else os.environ)
    try:
        repo = Repo(start, environment=bool(base.get("GIT_DIR") or base.get("GIT_WORK_TREE")))
    except NotARepository:
        return base
    base["GIT_DIR"] = str(repo.git_dir)
    if repo.workdir is not None:
        base["GIT_WORK_TREE"] = str(repo.workdir)
    else:
        base.pop("GIT_WORK_TREE", None)
    return base


def try_open(start: Path) -> Repo | None:
    """The repository at `start`, or None outside one. A GIT_DIR that names no repository is an error,
    not a plain folder: Git would refuse too."""
    if os.environ.get("GIT_DIR"):
        return Repo(start)
    try:
        return Repo(start)
    except NotARepository:
        return None


# --- a note as Git stores it, and as Git checks it out: .gitattributes conversions --------------------------


def _filter_failed(rel: str, action: str, proc: subprocess.CompletedProcess[bytes]) -> GitError | None:
    """Git's own words when a filter or conversion of `rel` failed; None when it did not. A filter that is not
    `required` fails with an `error:` line and exit 0, and Git then keeps the text unfiltered: a failure too."""
    said = proc.stderr.decode("utf-8", "replace").splitlines()
    if proc.returncode == 0 and not any(line.startswith(("error:", "fatal:")) for line in said):
        return None
    return GitError(f"{rel}: Git could not make {action} with the attributes .gitattributes gives it (a `filter` "
                    "whose program failed or is missing, or a `working-tree-encoding` the text is not in), so "
                    f"nothing was written; fix the filter in your Git config (`git check-attr -a -- {rel}` names "
                    f"it; `git add {rel}` fails the same way until it works), then write it again",
                    detail=said or (f"exit code {proc.returncode}",))


def filtered(repo: Repo, rel: str) -> bool:
    """Does .gitattributes put `rel` behind a `filter` (`filter=NAME`): its blob is what that filter's clean
    command made of the file (git-crypt's ciphertext, git-lfs's pointer), not the note's text?"""
    return isinstance(repo.repo.get_attr(rel, "filter"), str)


def blob_of(repo: Repo, rel: str, text: bytes) -> str:
    """Write `text`, a note as vivary reads notes (UTF-8, as the tree holds it), as the blob Git would store at
    `rel`: itself, unless `rel` is behind a `filter` (an encrypting one, git-crypt's or transcrypt's: `text` is
    then its plaintext), which Git runs as `git add` would (`hash-object --path`), so the blob is what the filter
    makes and the plaintext never reaches a commit."""
    if not filtered(repo, rel):
        return str(repo.repo.create_blob(text))
    proc = repo.git(["hash-object", "-w", "--stdin", f"--path={rel}"], input=text, check=False)
    failed = _filter_failed(rel, "the blob it commits", proc)
    if failed is not None:
        raise failed
    return proc.stdout.decode().strip()


def checkout_bytes(repo: Repo, rel: str, oid: str) -> bytes:
    """Blob `oid` as `git checkout` would put it on disk at `rel`: with its `eol`, `working-tree-encoding`,
    `ident` and `filter` (smudge) applied (`git cat-file --filters`)."""
    proc = repo.git(["cat-file", "--filters", f"--path={rel}", oid], check=False)
    failed = _filter_failed(rel, "the file it checks out", proc)
    if failed is not None:
        raise failed
    return proc.stdout
