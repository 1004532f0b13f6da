"""The trees of the working tree and of the index, made with Git as `git add -A` and `git write-tree` would
make them, into a scratch copy of the index (the user's index is never touched), with files too large to be
notes hashed once and remembered by their stat; and the refusals that keep Git from being pointed elsewhere
(a foreign `core.fsmonitor`, a `.git` file that is not this repository's)."""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec

from vivary_git import derived, git
from vivary_git.errors import GitError, RefusedError
from vivary_git.escape import text as shown
from vivary_git.models import NOTE_MAX_BYTES
from vivary_git.safeio import FileRefused, read_regular

# Git reads a file of up to core.bigFileThreshold (512 MiB) whole into memory to hash it: `git add`, and any
# command that writes an index (`write-tree`, `update-index`), which compares a racily clean entry's file
# with its blob. A file over the note limit is streamed instead (and `add` writes it into a pack, as Git
# stores any big file): hashing a 2 GB `.md` costs Git a pass over it, not its size in memory.
BOUNDED_HASH = ("-c", f"core.bigFileThreshold={NOTE_MAX_BYTES}")



# Above this many differences between the index and HEAD, `git write-tree` builds the staged tree.
_STAGED_PATCH_AT_MOST = 1024


def staged_tree(repo: git.Repo) -> str:
    """The id of the tree the index holds (what `git write-tree` would name): HEAD's tree with the index's
    differences written in when they are few (`_staged_from_head`), else `git write-tree`."""
    patched = _staged_from_head(repo)
    if patched is not None:
        return patched
    proc = repo.git([*BOUNDED_HASH, "write-tree"], check=False)
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace")
        if "unmerged" in said:
            raise GitError(f"the index has unmerged paths{_unmerged(repo)}; resolve the conflicts (`git status` lists "
                           f"them) and `git add` each{_abort(repo)}, before --staged")
        raise GitError(f"could not write the index as a tree: {said.strip()}")
    return proc.stdout.decode().strip()


def _unmerged(repo: git.Repo, *, named: int = 3) -> str:
    """` (PATH, PATH and N more)`: the paths a merge left in conflict, for the message; "" when Git cannot say."""
    proc = repo.git(["ls-files", "--unmerged", "-z"], check=False)
    paths = list(dict.fromkeys(entry.partition(b"\t")[2].decode("utf-8", "surrogateescape")
                               for entry in proc.stdout.split(b"\0") if b"\t" in entry))
    if proc.returncode != 0 or not paths:
        return ""
    more = f" and {len(paths) - named} more" if len(paths) > named else ""
    return f" ({', '.join(shown(path) for path in paths[:named])}{more})"


# What left the conflict, by the file Git keeps in the worktree's Git folder while it lasts, and how to undo it.
_IN_PROGRESS = (("rebase-merge", "rebase"), ("rebase-apply", "rebase"), ("CHERRY_PICK_HEAD", "cherry-pick"),
                ("REVERT_HEAD", "revert"), ("MERGE_HEAD", "merge"))


def _abort(repo: git.Repo) -> str:
    """`, or abort the merge (`git merge --abort`)`, naming what is in progress; "" for a conflict no command
    undoes (`git stash pop`, `git checkout -m`)."""
    doing = next((what for name, what in _IN_PROGRESS if (repo.git_dir / name).exists()), None)
    return f", or abort the {doing} (`git {doing} --abort`)" if doing else ""


def _staged_from_head(repo: git.Repo) -> str | None:
    """The staged tree as HEAD's tree with the paths the index changes (`git diff-index --cached`) written in:
    only the trees on those paths are written. `git write-tree` reads the whole index and writes it back to
    refresh its cache of trees; at 300,000 notes that is 0.2 s of a 0.6 s pre-commit check, where this takes
    0.05 s. The tree has the index's bytes at every path either way. None, for `git write-tree` to decide (and
    to name what is wrong), when there is no HEAD, a path is unmerged or a submodule, the changes are many, or
    Git or libgit2 answers anything unexpected."""
    pygit2 = repo.pygit2
    try:
        if repo.repo.head_is_unborn:
            return None
        head = repo.repo.head.peel(pygit2.Tree)
    except (KeyError, ValueError, pygit2.GitError):
        return None
    # Replacement refs are not followed (libgit2 does not follow them either), so Git compares the index
    # with the very tree the patch starts from. Intent-to-add paths are left out, as `git write-tree` does.
    proc = repo.git(["--no-replace-objects", "diff-index", "--cached", "--ita-invisible-in-index", "-z", "--raw",
                     "--no-renames", str(head.id), "--"], check=False)
    fields = proc.stdout.split(b"\0")
    if proc.returncode != 0 or len(fields) > 2 * _STAGED_PATCH_AT_MOST + 1 or fields[-1] != b"":
        return None
    changes: dict[str, tuple[int, str] | None] = {}
    for meta, raw_path in zip(fields[:-1:2], fields[1::2], strict=True):
        parts = meta.split()
        # Only files: a submodule (160000) or a sparse index's folder entry (040000, `dir/`) is Git's to write.
        if len(parts) != 5 or parts[4] not in (b"A", b"M", b"D", b"T") \
                or not {parts[0][1:], parts[1]} <= {b"000000", b"100644", b"100755", b"120000"}:
            return None
        path = raw_path.decode("utf-8", "surrogateescape")
        if not path or any(part in ("", ".", "..") for part in path.split("/")):
            return None
        changes[path] = None if parts[4] == b"D" else (int(parts[1], 8), parts[3].decode("ascii"))
    if not changes:
        return str(head.id)
    try:
        tree = _patch_tree(repo.repo, head, changes)
        return str(tree if tree is not None else repo.repo.TreeBuilder().write())
    except (KeyError, ValueError, TypeError, pygit2.GitError):
        return None


def _patch_tree(r: Any, base: Any, changes: dict[str, tuple[int, str] | None]) -> Any:
    """The id of tree `base` (a pygit2 Tree, or None for none) with `changes` (a path below it: its new mode
    and blob id, or None for removed) written in; None when nothing is left in it (Git writes no empty
    folder). Removals first, then the folders below, then the files added: a file that became a folder, or a
    folder that became a file, lands right."""
    import pygit2

    builder = r.TreeBuilder(base) if base is not None else r.TreeBuilder()
    below: dict[str, dict[str, tuple[int, str] | None]] = {}
    here: dict[str, tuple[int, str]] = {}
    for path, new in changes.items():
        name, slash, rest = path.partition("/")
        if slash:
            below.setdefault(name, {})[rest] = new
        elif new is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            here[name] = new
    for name, sub_changes in below.items():
        entry = builder.get(name)
        sub_base = r[entry.id] if entry is not None and entry.filemode == pygit2.GIT_FILEMODE_TREE else None
        sub = _patch_tree(r, sub_base, sub_changes)
        if sub is not None:
            builder.insert(name, sub, pygit2.GIT_FILEMODE_TREE)
        elif sub_base is not None:
            builder.remove(name)
    for name, (mode, oid) in here.items():
        builder.insert(name, pygit2.Oid(hex=oid), mode)
    return builder.write() if len(builder) else None


def skip_worktree(repo: git.Repo, *paths: str) -> set[str]:
    """The paths the index marks skip-worktree (a sparse checkout's files outside its cone, or `git update-index
    --skip-worktree`), of `paths` when given: Git neither writes them to the work tree nor reads them from it, so
    the working tree's tree holds their index blobs. Empty when Git cannot list them."""
    proc = repo.git(["--literal-pathspecs", "ls-files", "-z", "-t", "--full-name", "--", *paths], check=False)
    if proc.returncode != 0:
        return set()
    return {entry[2:].decode("utf-8", "surrogateescape") for entry in proc.stdout.split(b"\0")
            if entry.startswith(b"S ")}


def sparse_checkout(repo: git.Repo) -> bool:
    """Whether the work tree is a sparse checkout (`core.sparseCheckout`, `git -c` included, as Git reads it): a
    partial clone then lacks the blobs of the files outside it, which the working tree's tree still names."""
    try:
        return repo.setting("core.sparseCheckout", boolean=True) == "true"
    except ValueError:  # not a boolean: Git refuses every command then, and says so
        return False


def ignore_rules_off_disk(repo: git.Repo) -> bool:
    """Whether Git may read some `.gitignore` of the work tree from its index blob rather than the disk: in a sparse
    checkout (outside the cone it is not written) or when one is marked `git update-index --skip-worktree`. Git reads
    a skip-worktree `.gitignore` missing from the disk from the index (dir.c), so its rules still apply there; the
    working tree's tree holds that blob. A listing Git refuses counts as yes (the caller then asks both)."""
    if sparse_checkout(repo):
        return True
    proc = repo.git(["ls-files", "-z", "-t", "--", ":(glob).gitignore", ":(glob)**/.gitignore"], check=False)
    return proc.returncode != 0 or any(entry.startswith(b"S ") for entry in proc.stdout.split(b"\0"))


def worktree_tree(repo: git.Repo) -> str:
    refuse_foreign(repo)
    assert repo.workdir is not None
    index = Path(repo.git(["rev-parse", "--git-path", "index"]).stdout.decode("utf-8", "surrogateescape").strip())
    if not index.is_absolute():
        index = repo.workdir / index
    with _scratch_index(repo, index) as scratch:
        env = {**os.environ, **repo.pins, "GIT_INDEX_FILE": str(scratch)}
        add_all(repo, env)
        return repo.git([*BOUNDED_HASH, "write-tree"], env=env).stdout.decode().strip()


@contextlib.contextmanager
def _scratch_index(repo: git.Repo, index: Path) -> Iterator[Path]:
    """A copy of the index to `git add -A` into (the real one is never touched), removed afterwards: in
    `.git/vivary/tmp/`, or, when that cannot be written (a read-only repository, a full disk, no permission),
    in a private folder of the system's temporary directory. Neither: a `GitError` naming both and the fix. The
    folders made for it go with it: a command that only reads (`recall` with memory off) leaves no state behind."""
    import tempfile

    scratch_dir = repo.vivary_dir / "tmp"
    needs = "for the working tree's snapshot"
    derived.refuse(repo.vivary_dir, scratch_dir, needs=needs)  # a file, or a link out of the Git folder
    made = [p for p in (scratch_dir, repo.vivary_dir) if not os.path.lexists(p)]  # deepest first
    try:
        scratch_dir.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as err:  # put in the way since `refuse` looked
        raise GitError(derived.damage(repo.vivary_dir, scratch_dir, needs=needs) or (
            f"{shown(str(scratch_dir))}: cannot be made a folder {needs} ({err.strerror or err}); {derived.FIX}"
        )) from None
    except OSError as err:
        first: OSError | None = err
    else:
        first = None
    if first is None:
        scratch = scratch_dir / f"index.{os.getpid()}"
        try:
            _copy_index(index, scratch)
        except OSError as err:
            first = err
        else:
            try:
                yield scratch
            finally:
                with contextlib.suppress(OSError):
                    scratch.unlink()
                _remove_empty(made)
            return
    _remove_empty(made)  # none could be made, or the copy could not be written there
    try:
        elsewhere = Path(tempfile.mkdtemp(prefix="vivary-index-"))
    except OSError as err:
        raise GitError(_no_scratch(scratch_dir, first, Path(tempfile.gettempdir()), err)) from None
    try:
        scratch = elsewhere / "index"
        try:
            _copy_index(index, scratch)
        except OSError as err:
            raise GitError(_no_scratch(scratch_dir, first, elsewhere, err)) from None
        yield scratch
    finally:
        # Made mode 000 under `umask 0777`, it could not be listed, so rmtree left it: one more in /tmp every run.
        with contextlib.suppress(OSError):
            elsewhere.chmod(0o700)
        shutil.rmtree(elsewhere, ignore_errors=True)


def _remove_empty(folders: list[Path]) -> None:
    """Remove these folders (deepest first) when they are empty: one another process writes in stays, as `rmdir`
    removes no other. One that cannot be removed (not there, or not to be looked into: the deeper one, when making it
    failed) is no reason to keep the others: under `umask 0777`, `.git/vivary` was made mode 000 and left, and every
    later run, whatever its umask, found it in the way."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _copy_index(index: Path, scratch: Path) -> None:
    """`index` copied to `scratch` (none there: an empty place for Git to write one, checked writable). A partial copy
    is removed."""
    try:
        if index.is_file():
            # copy2 keeps the index's mtime: Git trusts a file's cached stat only when the file is older
            # than the index (racy-Git). A copy stamped "now" would make a note rewritten to the same size
            # in the second of the last commit look unchanged, and its old text would be read.
            shutil.copy2(index, scratch)
        else:
            scratch.touch()
            scratch.unlink()
    except OSError:
        with contextlib.suppress(OSError):
            scratch.unlink()
        raise


def _no_scratch(scratch_dir: Path, first: OSError, other: Path, err: OSError) -> str:
    return (f"cannot read the working tree: its snapshot needs a copy of the index, and neither {scratch_dir} "
            f"({first.strerror or first}) nor {other} ({err.strerror or err}) can hold one. Free some space or make "
            f"{scratch_dir} writable, or read a commit with --rev")


def refuse_foreign(repo: git.Repo) -> None:
    """Refuse to snapshot a working tree that belongs to another repository than the one GIT_DIR names."""
    if repo.foreign is not None:
        # Snapshotting writes every file of the work tree as an object of the repository: never another's.
        named = "GIT_DIR names" if os.environ.get("GIT_DIR") else "Git found"
        raise RefusedError(
            f"{named} the repository {repo.git_dir}, but the working tree {repo.workdir} belongs to the "
            f"repository {repo.foreign}: reading it would copy its files into the other one. Unset GIT_DIR and "
            "GIT_WORK_TREE (a hook or a script may have left them set), set GIT_WORK_TREE to its own work tree, "
            "or read a commit with --rev"
        )


_WATCH_AFTER = 2.0  # seconds of `git add -A` before looking for a file Git could be blocked on


def add_all(repo: git.Repo, env: dict[str, str]) -> None:
    """`git add -A` into the scratch index. Git opens every `.gitignore` it meets (and `info/exclude`,
    `core.excludesFile`) with a blocking open, so a FIFO in that place stops it forever (`git status`
    hangs too). A run that takes a while has the work tree searched for such a file, alongside, and is
    stopped with an error naming it; one that is merely slow goes on, and the notes over the size limit
    Git is hashing meanwhile are remembered (`_Oversized`): while unchanged, they are not hashed again."""
    import subprocess

    remembered = _Oversized.load(repo)
    standins = _not_ignored(repo, env, [e for e in remembered if e.holds(repo)])
    args = ["-c", "advice.addEmbeddedRepo=false", "-c", "core.safecrlf=false", *BOUNDED_HASH,
            "add", "-A", "--ignore-errors", "--", ":/", *(f":(top,literal,exclude){e.path}" for e in standins)]
    seen: list[tuple[str, tuple[int, ...]]] = []
    try:
        proc = subprocess.Popen([git.git_executable(), *args], cwd=repo.workdir, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    except OSError as err:
        raise GitError(f"could not run git: {err}") from None
    try:
        try:
            _, said = proc.communicate(timeout=_WATCH_AFTER)
        except subprocess.TimeoutExpired:
            found = _special_git_file(repo)
            if found is not None:
                name, why = found
                raise GitError(f"{name}: {why}; Git waits forever reading it (`git status` would hang too): "
                               "remove it or replace it with a regular file") from None
            seen = _oversized_now(repo, env)
            _, said = proc.communicate()
        # --ignore-errors: a file Git cannot add is left out (exit code 1) and the rest is added. A fatal
        # error (128) leaves the scratch index as it was, whose tree is not the working tree's: never use it.
        if proc.returncode not in (0, 1):  # Git's lines under ours, one each, as every message Git refused
            lines = [line.rstrip() for line in said.decode("utf-8", "replace").splitlines() if line.strip()]
            raise GitError(f"could not read the working tree: `git add -A` into a scratch index failed (exit code "
                           f"{proc.returncode}); fix what Git names, then run it again. Git said:",
                           detail=lines or ["(no message)"])
        if proc.returncode == 1:
            _objects_writable(repo)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if standins:  # the blobs Git made of them before, where `add` left their index entries alone
        info = b"".join(f"{e.mode:o} {e.oid}\t".encode() + os.fsencode(e.path) + b"\0" for e in standins)
        repo.git([*BOUNDED_HASH, "update-index", "-z", "--index-info"], env=env, input=info)
    new = _hashed(repo, env, seen)
    if new or len(standins) != len(remembered):
        _Oversized.save(repo, [*standins, *new])


def _objects_writable(repo: git.Repo) -> None:
    """After `git add -A --ignore-errors` left files out: if that is because Git cannot write its object database
    (a read-only repository, a full disk), every new or changed file was left out, and the snapshot would be the
    index's old text, not the working tree's; raise a `GitError` naming the folder and the fix. A file Git cannot
    read is still left out (the point of --ignore-errors)."""
    import tempfile

    objects = Path(repo.git(["rev-parse", "--git-path", "objects"]).stdout.decode("utf-8", "surrogateescape").strip())
    if not objects.is_absolute():
        objects = (repo.workdir or repo.git_dir) / objects
    try:
        fd, probe = tempfile.mkstemp(prefix="vivary_probe_", dir=objects)
    except OSError as err:
        problem: OSError | None = err
    else:
        problem = None
        try:
            os.write(fd, b"\0" * 4096)
        except OSError as err:
            problem = err
        finally:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(probe)
    if problem is not None:
        raise GitError(f"cannot read the working tree: Git cannot write its object database {objects} "
                       f"({problem.strerror or problem}), so new and changed files would be left out. Free some space "
                       "or make it writable, or read a commit with --rev")


_OVERSIZED_FILE = "oversized.json"


class _Oversized(msgspec.Struct, frozen=True):
    """A note over the size limit that Git hashed for a working-tree snapshot, with the `lstat` it had then.
    While the file's `lstat` is the same (size, times, inode, mode: what Git's own stat cache trusts), its
    blob is that one: the next snapshot keeps it out of `git add` and enters the blob itself, unread. Kept
    in `.git/vivary/` (local, rebuildable): a 3 GB log dump cost every run half a minute of Git's time."""

    path: str  # repository-relative, `/`-separated
    oid: str
    mode: int
    stat: tuple[int, ...]

    @staticmethod
    def load(repo: git.Repo) -> list[_Oversized]:
        """What was remembered: every run without a huge note pays one failed `stat` here."""
        path = repo.vivary_dir / _OVERSIZED_FILE
        if not os.path.lexists(path):
            return []
        try:
            return msgspec.json.decode(read_regular(path, 1 << 20, follow_symlinks=False), type=list[_Oversized])
        except (OSError, FileRefused, msgspec.DecodeError, msgspec.ValidationError):
            return []

    def holds(self, repo: git.Repo) -> bool:
        """Whether the file is as it was when Git hashed it, and its blob is still there (not pruned)."""
        top = repo.workdir
        assert top is not None
        try:
            return (self.stat[0] > NOTE_MAX_BYTES and _stat_key(os.lstat(top / self.path)) == self.stat
                    and repo.repo.odb.exists(repo.pygit2.Oid(hex=self.oid)))
        except (OSError, ValueError):
            return False

    @staticmethod
    def save(repo: git.Repo, entries: list[_Oversized]) -> None:
        path = repo.vivary_dir / _OVERSIZED_FILE
        with contextlib.suppress(OSError, ValueError):  # ValueError: a name that is not UTF-8 is not kept
            if entries:
                from vivary_git.localcache import write_atomic

                write_atomic(path, msgspec.json.encode(sorted({e.path: e for e in entries}.values(),
                                                              key=lambda e: e.path)))
            else:
                path.unlink(missing_ok=True)


def _not_ignored(repo: git.Repo, env: dict[str, str], entries: list[_Oversized]) -> list[_Oversized]:
    """The entries `git add -A` would take: tracked, or not ignored (an ignore rule may be new since)."""
    if not entries:
        return []
    proc = repo.git(["check-ignore", "-z", "--stdin"], env=env, check=False,
                    input=b"".join(os.fsencode(e.path) + b"\0" for e in entries))
    if proc.returncode not in (0, 1):
        return []
    ignored = {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}
    return [e for e in entries if e.path not in ignored]


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev, st.st_mode)


def _oversized_now(repo: git.Repo, env: dict[str, str]) -> list[tuple[str, tuple[int, ...]]]:
    """Notes over the size limit that `git add -A` is about to hash, or hashing (new or changed in the work
    tree, not ignored), with their `lstat`, for a slow snapshot. Files changed in the last seconds are left
    out: their blob may not be the one Git is making (its racy-file rule, kept)."""
    import time

    proc = repo.git(["ls-files", "-z", "--others", "--modified", "--exclude-standard", "--",
                     ":(top,glob)**/*.md", ":(top,glob)**/*.markdown"], env=env, check=False)
    if proc.returncode != 0:
        return []
    top = repo.workdir
    assert top is not None
    settled = time.time_ns() - 2_000_000_000
    out = []
    for raw in dict.fromkeys(proc.stdout.split(b"\0")):
        if not raw:
            continue
        path = os.fsdecode(raw)
        with contextlib.suppress(OSError):
            st = os.lstat(top / path)
            if stat.S_ISREG(st.st_mode) and st.st_size > NOTE_MAX_BYTES and st.st_mtime_ns < settled:
                out.append((path, _stat_key(st)))
    return out


def _hashed(repo: git.Repo, env: dict[str, str], seen: list[tuple[str, tuple[int, ...]]]) -> list[_Oversized]:
    """The blobs `git add` made of the files `seen` (in the scratch index now), each kept only when its file
    has the same `lstat` as before Git read it."""
    if not seen:
        return []
    top = repo.workdir
    assert top is not None
    proc = repo.git(["ls-files", "-z", "--stage", "--", *(f":(top,literal){p}" for p, _ in seen)], env=env,
                    check=False)
    staged: dict[str, tuple[int, str]] = {}
    for line in proc.stdout.split(b"\0"):
        head, _, raw = line.partition(b"\t")
        fields = head.split()
        if len(fields) == 3 and fields[2] == b"0":
            staged[os.fsdecode(raw)] = (int(fields[0], 8), fields[1].decode())
    out = []
    for path, before in seen:
        got = staged.get(path)
        with contextlib.suppress(OSError):
            if got is not None and _stat_key(os.lstat(top / path)) == before:
                out.append(_Oversized(path, got[1], got[0], before))
    return out


def _special_git_file(repo: git.Repo) -> tuple[str, str] | None:
    """The first ignore file Git reads that is not a regular file (a FIFO, a device), with what it is;
    None when there is none. Walks the work tree, skipping `.git` folders."""
    from vivary_git.safeio import FileRefused, check_regular

    top = repo.workdir
    assert top is not None

    def special(path: Path) -> str | None:
        try:
            if path.is_symlink():
                return None  # Git does not follow a symbolic link in these places
            check_regular(path)  # regular (or missing): fine
        except FileRefused as err:
            return str(err)
        except OSError:
            return None
        return None

    why = special(repo.common_dir / "info" / "exclude")
    if why is not None:
        return ".git/info/exclude", why
    for key in ("core.excludesFile",):
        proc = repo.git(["config", "--type=path", "--get", key], check=False)
        value = proc.stdout.decode("utf-8", "surrogateescape").strip()
        if proc.returncode == 0 and value:
            why = special(Path(value))
            if why is not None:
                return value, why
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        if ".gitignore" in filenames:
            why = special(Path(dirpath) / ".gitignore")
            if why is not None:
                return (Path(dirpath) / ".gitignore").relative_to(top).as_posix(), why
    return None
