"""Git's own ignore decision for the privacy boundary (privacy.py): `git check-ignore`, batched, and read
back exactly. Git decides, not us: libgit2's and pathspec's matchers disagree with Git on real patterns.

A path is ignored with ``--no-index`` semantics, so a tracked (force-added) ignored file stays private: one
``git check-ignore --no-index -v -n --stdin -z`` call for a whole batch of paths (`Batch`), so every
``.gitignore`` level, ``info/exclude``, ``core.excludesFile``, ``core.ignoreCase``, negation and the "cannot
re-include under an excluded directory" rule are exactly Git's. ``-v`` also reports ``!`` matches; those
mean *not* ignored. Paths are sent sorted (Git reuses its per-directory pattern stack) and prefixed with
``./`` (a leading ``:`` would be pathspec magic, and check-ignore refuses ``--literal-pathspecs``). Paths
below more than `VERBOSE_MAX_DIRS` directories go to a second batch without ``-v`` (see there for the Git
bug); for those the reason says Git ignored them but cannot name the rule.

**A tree other than the working tree** (``tree=``, e.g. for ``--rev`` or the staged index written
as a tree) must use *that tree's* ``.gitignore`` files. Git reads ``.gitignore`` only in the
directories leading to a path, so we look up ``<dir>/.gitignore`` in the tree (pygit2) for every
leading directory of the paths asked about, write those blobs into an otherwise empty temporary
directory, and run the same ``check-ignore`` with ``--git-dir`` set to the real repository and
``--work-tree`` set to that directory. The real Git directory means the real config
(``core.ignoreCase``, ``core.excludesFile``, a worktree's own config) and the real
``info/exclude`` apply unchanged; only the per-directory files come from the tree. A ``.gitignore``
that is a symlink in the tree is skipped, because Git (2.32+) does not follow a symlinked
``.gitignore`` in a working tree either (gitignore(5), "NOTES").

**A work tree set elsewhere** (``git --work-tree``, ``GIT_DIR``/``GIT_WORK_TREE``, ``core.worktree``; a
dotfile-style repository): Git run in its top finds another repository, or none. The caller names the
Git directory (``git_dir=``, from `git.Repo.pinned_git_dir`) and every ``git`` asked about the working
tree is told ``--git-dir`` and ``--work-tree``, so the work tree's ``.gitignore`` files and that Git
directory's ``info/exclude`` and config decide exactly as in a clone.

**Fails closed.** If Git cannot answer — not a work tree, a bare repository, ``git`` missing, an exit code
other than 0/1 (a crash included), a warning that a pattern file could not be read, no answer within the
time limit (a FIFO named ``.gitignore`` blocks Git for ever), output that does not line up with the input
— `PrivacyError` is raised; nothing is ever admitted by default.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import IO

import msgspec

from vivary_git import git
from vivary_git.errors import GitError, PrivacyError

# Git 2.39 keeps pointers into its growable array of per-directory pattern lists; a path below more
# than 23 directories makes it reallocate, and from then on `-v` reads freed memory for that path and
# every later one in the batch (garbage rule names, or SIGSEGV). Deeper paths go to a batch without
# `-v`, which decides from the pattern itself and never follows that pointer.
VERBOSE_MAX_DIRS = 20
UNNAMED_IGNORE = f"ignored by Git (rule not named for paths over {VERBOSE_MAX_DIRS} directories deep)"
UNNAMED_CONFIG = f"config: (rule not named for paths over {VERBOSE_MAX_DIRS} directories deep)"
# Git blocks for ever on a `.gitignore` that is a FIFO, or on a hung file system; fail closed instead.
_TIMEOUT_SECONDS = 60.0
_TIMEOUT_SECONDS_PER_PATH = 0.001
_SYMLINKED_GITIGNORE_WARNING = re.compile(
    r"\Awarning: unable to access '.*\.gitignore': Too many levels of symbolic links\Z", re.DOTALL
)


class Located(msgspec.Struct, frozen=True):
    top: Path
    git_dir: Path
    ignorecase: bool
    # `--git-dir`/`--work-tree` for every `git` asked about this work tree, when the caller named its git dir
    # (a work tree set elsewhere); empty when Git finds the repository from `top` itself.
    named: tuple[str, ...] = ()


# A pattern match as Git reports it: (source, line number, pattern).
Match = tuple[str, str, str]


def depth_groups(paths: Sequence[str], indices: list[int]) -> list[tuple[list[int], bool]]:
    """`indices` split into the paths Git may name a rule for (`-v`) and the deeper ones (see
    `VERBOSE_MAX_DIRS`); empty groups left out."""
    shallow = [i for i in indices if paths[i].count("/") <= VERBOSE_MAX_DIRS]
    deep = [i for i in indices if paths[i].count("/") > VERBOSE_MAX_DIRS]
    return [(group, verbose) for group, verbose in ((shallow, True), (deep, False)) if group]


def _env() -> dict[str, str]:
    # Our `git` names its repository itself (its working directory, or --git-dir/--work-tree): none of
    # a hook's repository-scoped or pathspec variables may redirect it. C messages so the warning filter below is
    # reliable; no per-path flush (we read a file).
    return git.env_for_other_repo({"LC_ALL": "C", "GIT_FLUSH": "0"})


def _git(args: Sequence[str], cwd: Path, what: str) -> subprocess.CompletedProcess[bytes]:
    return _git_all([args], cwd, what)[0]


def _git_all(commands: Sequence[Sequence[str]], cwd: Path, what: str) -> list[subprocess.CompletedProcess[bytes]]:
    """`git.run_all` in the scrubbed environment, any failure to run Git a `PrivacyError` (fail closed);
    exit codes are the caller's to judge."""
    try:
        return git.run_all(commands, cwd=cwd, env=_env(), check=False)
    except GitError as err:
        raise PrivacyError(f"cannot decide privacy for {what}: {err}") from err


def _said(proc: subprocess.CompletedProcess[bytes]) -> str:
    return proc.stderr.decode("utf-8", "replace").strip() or f"exit code {proc.returncode}"


def locate(repo: Path, git_dir: Path | None = None) -> Located:
    where = str(repo)
    # Told rather than found: Git run in a work tree set elsewhere finds another repository, or none.
    named = (f"--git-dir={git_dir}", f"--work-tree={repo}") if git_dir is not None else ()
    if git_dir is not None:
        where = f"{repo} (Git directory {git_dir})"
    proc, config = _git_all([[*named, "rev-parse", "--is-bare-repository", "--absolute-git-dir", "--show-toplevel"],
                             [*named, "config", "--type=bool", "--get", "core.ignorecase"]], repo, where)
    lines = proc.stdout.decode("utf-8", "surrogateescape").split("\n")
    if lines[:1] == ["true"]:
        raise PrivacyError(f"cannot decide privacy in {where}: it is a bare repository; use a work tree")
    if proc.returncode != 0 or len(lines) != 4 or lines[0] != "false":
        raise PrivacyError(f"cannot decide privacy in {where}: not a Git work tree ({_said(proc)})")
    found, top = Path(lines[1]), Path(lines[2])
    if top.resolve() != repo.resolve():
        raise PrivacyError(f"cannot decide privacy in {where}: pass the top of the work tree, {top}")
    # Read in `repo`, which is `top` (checked just above), at the same time as rev-parse.
    if config.returncode not in (0, 1):
        raise PrivacyError(f"cannot decide privacy in {where}: bad core.ignoreCase ({_said(config)})")
    return Located(top=top, git_dir=found, ignorecase=config.stdout.strip() == b"true", named=named)


# -v -n -z: four NUL-terminated fields per path, in input order: source, line, pattern, path (the first
# three empty when nothing matched). Without -v: just the ignored paths, in input order.
_VERBOSE = ("check-ignore", "--no-index", "-v", "-n", "--stdin", "-z")
_QUIET = ("check-ignore", "--no-index", "--stdin", "-z")


class Batch:
    """One running `git check-ignore` over some of the paths; stdin, stdout and stderr are files, so
    there is no pipe to deadlock on and Git does not flush after every path."""

    def __init__(self, layer: str, what: str, indices: list[int], asked: list[bytes], verbose: bool) -> None:
        self.layer, self.what, self.indices, self.asked, self.verbose = layer, what, indices, asked, verbose
        self.proc: subprocess.Popen[bytes] | None = None
        self.files: list[IO[bytes]] = []
        self.code: int | None = None
        self.stdout = b""
        self.stderr = b""

    @classmethod
    def start(
        cls,
        layer: str,
        args: Sequence[str],
        cwd: Path,
        what: str,
        paths: Sequence[str],
        indices: list[int],
        verbose: bool,
        stem: Path,
    ) -> Batch:
        # `./` keeps Git from reading a leading `:` as pathspec magic (check-ignore refuses
        # --literal-pathspecs); Git normalises it away before matching.
        stdin = ("./" + "\0./".join([paths[i] for i in indices]) + "\0").encode("utf-8", "surrogateescape")
        batch = cls(layer, what, indices, stdin.split(b"\0")[:-1], verbose)
        stem.with_suffix(".in").write_bytes(stdin)
        batch.files = [open(stem.with_suffix(s), "w+b") for s in (".out", ".err")]  # noqa: SIM115
        try:
            with open(stem.with_suffix(".in"), "rb") as fh:
                batch.proc = subprocess.Popen(
                    ["git", *args, *(_VERBOSE if verbose else _QUIET)],
                    cwd=cwd,
                    env=_env(),
                    stdin=fh,
                    stdout=batch.files[0],
                    stderr=batch.files[1],
                )
        except OSError as err:
            for f in batch.files:
                f.close()
            cause = "`git` is not on PATH; install Git" if isinstance(err, FileNotFoundError) else str(err)
            raise PrivacyError(f"cannot decide privacy ({what}): {cause}") from err
        return batch

    def collect(self) -> None:
        try:
            if self.proc is not None and self.code is None:
                timeout = _TIMEOUT_SECONDS + _TIMEOUT_SECONDS_PER_PATH * len(self.asked)
                try:
                    self.code = self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired as err:
                    raise PrivacyError(
                        f"cannot decide privacy ({self.what}): git check-ignore gave no answer in"
                        f" {timeout:.0f}s; is an ignore file a FIFO or on a hung file system?"
                        " Nothing was admitted"
                    ) from err
                for f in self.files:
                    f.seek(0)
                self.stdout, self.stderr = (f.read() for f in self.files)
        finally:
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for f in self.files:
                f.close()

    def answers(self) -> dict[int, Match]:
        """The ignoring (not `!`) matches, keyed by input index; ("", "", "") when Git did not say
        which rule matched."""
        said = self.stderr.decode("utf-8", "replace").strip()
        if self.code not in (0, 1):
            raise PrivacyError(
                f"cannot decide privacy ({self.what}): git check-ignore failed with exit code {self.code}:"
                f" {said or 'no message'}; nothing was admitted"
            )
        for line in said.splitlines():
            if line.startswith(("warning:", "error:", "fatal:")) and not _SYMLINKED_GITIGNORE_WARNING.match(line):
                raise PrivacyError(
                    f"cannot decide privacy ({self.what}): Git could not use every ignore rule: {line};"
                    " fix the file (permissions, encoding) and try again; nothing was admitted"
                )
        if self.verbose:
            return _parse_verbose(self.stdout, self.asked, self.indices, self.what)
        return _parse_quiet(self.stdout, self.asked, self.indices, self.what)


def collect_all(batches: list[Batch]) -> None:
    # Every process is reaped and every file closed, even when one batch fails.
    failure: PrivacyError | None = None
    for batch in batches:
        try:
            batch.collect()
        except PrivacyError as err:
            failure = failure or err
    if failure is not None:
        raise failure


def ignore_setup(info: Located, paths: Sequence[str], tree: str | None, tmp: Path,
                  name: str = "tree") -> tuple[list[str], Path, str]:
    if tree is None:
        return list(info.named), info.top, f"Git ignore rules in {info.top}"
    work = tmp / name
    work.mkdir()
    _materialise_gitignores(info, tree, paths, work)
    args = [f"--git-dir={info.git_dir}", f"--work-tree={work}"]
    excludes = _git([*info.named, "config", "--type=path", "--get", "core.excludesFile"], info.top, str(info.top))
    if excludes.returncode not in (0, 1):
        raise PrivacyError(f"cannot decide privacy: bad core.excludesFile ({_said(excludes)})")
    value = os.fsdecode(excludes.stdout.rstrip(b"\n"))
    if excludes.returncode == 0 and value and not os.path.isabs(value):
        # Git resolves a relative core.excludesFile against the work tree top; keep it the real one.
        args = ["-c", f"core.excludesFile={info.top / value}", *args]
    return args, work, f"Git ignore rules of tree {tree}"


def leading_dirs(paths: Iterable[str]) -> set[str]:
    """The top (`""`) and every folder on the way to each of `paths` (repository- or workspace-relative)."""
    dirs: set[str] = {""}
    for path in paths:
        cut = path.rfind("/")
        while cut > 0 and path[:cut] not in dirs:  # a folder in the set has its own leading folders there too
            dirs.add(path[:cut])
            cut = path.rfind("/", 0, cut)
    return dirs


def _materialise_gitignores(info: Located, tree: str, paths: Sequence[str], work: Path) -> None:
    import pygit2  # only tree mode needs it; keep `decide` on the working tree light

    try:
        # From the top, libgit2 would find another repository, or none, when the work tree is set elsewhere.
        repo = git.with_objects(pygit2.Repository(str(info.git_dir if info.named else info.top)), git.object_dirs())
        root = repo.revparse_single(tree).peel(pygit2.Tree)
    except (KeyError, ValueError, TypeError, pygit2.GitError) as err:
        raise PrivacyError(f"cannot decide privacy: {tree!r} does not name a tree ({err})") from err
    dirs = leading_dirs(paths)
    blob_modes = (pygit2.enums.FileMode.BLOB, pygit2.enums.FileMode.BLOB_EXECUTABLE)
    for leading in dirs:
        name = f"{leading}/.gitignore" if leading else ".gitignore"
        if name not in root:
            continue
        entry = root[name]
        if entry.filemode not in blob_modes:
            continue  # a symlink (Git will not follow it), a directory or a submodule
        target = work / name
        try:
            data = repo.odb.read(entry.id)[1]
        except KeyError:  # pygit2.NotFoundError: a partial clone's, not fetched (or a damaged repository's)
            from vivary_git.partial import refusal

            raise refusal(repo, tree_id=str(root.id), where=f"tree {root.id}", oid=str(entry.id), path=name) from None
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as err:
            raise PrivacyError(f"cannot decide privacy: could not stage {name!r} from {tree}: {err}") from err


def _parse_verbose(out: bytes, asked: list[bytes], indices: list[int], what: str) -> dict[int, Match]:
    fields = out.split(b"\0")
    if len(fields) != 4 * len(asked) + 1 or fields[-1] != b"" or fields[3::4] != asked:
        raise PrivacyError(
            f"cannot decide privacy ({what}): git check-ignore's answer does not line up with the"
            f" {len(asked)} paths asked; nothing was admitted"
        )
    sources, lines, patterns = fields[0:-1:4], fields[1::4], fields[2::4]
    unmatched = sources.count(b"")
    if lines.count(b"") != unmatched or patterns.count(b"") != unmatched:
        raise PrivacyError(f"cannot decide privacy ({what}): malformed answer from git check-ignore")
    matches: dict[int, Match] = {}
    for k, source in enumerate(sources):
        if not source:
            continue
        line, pattern = lines[k], patterns[k]
        if not line.isdigit() or not pattern:
            raise PrivacyError(f"cannot decide privacy ({what}): malformed answer for {asked[k][2:]!r}")
        # `-v` also reports the `!pattern` that re-included a path; Git prints `!` only for those
        # (a literal leading `!` stays escaped as `\!`).
        if not pattern.startswith(b"!"):
            matches[indices[k]] = (os.fsdecode(source), line.decode("ascii"), os.fsdecode(pattern))
    return matches


def _parse_quiet(out: bytes, asked: list[bytes], indices: list[int], what: str) -> dict[int, Match]:
    ignored = out.split(b"\0")
    if ignored.pop() != b"":
        raise PrivacyError(f"cannot decide privacy ({what}): malformed answer from git check-ignore")
    matches: dict[int, Match] = {}
    k = 0
    for path in ignored:
        while k < len(asked) and asked[k] != path:
            k += 1
        if k == len(asked):
            raise PrivacyError(
                f"cannot decide privacy ({what}): git check-ignore's answer does not line up with the"
                f" {len(asked)} paths asked; nothing was admitted"
            )
        matches[indices[k]] = ("", "", "")
        k += 1
    return matches


def display_source(source: str, top: Path) -> str:
    # Same text in both modes: tree mode names info/exclude by its absolute path.
    if os.path.isabs(source):
        try:
            return Path(source).relative_to(top).as_posix()
        except ValueError:
            return source
    return source
