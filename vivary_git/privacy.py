"""The privacy boundary: which paths may ever leave the graph for a semantic provider, the shared cache
(`refs/vivary/cache`) or a commit (the guard). `decide_scoped` is the one decision all of them make:
every workspace on the way to a path (`find_scopes`: the top and each folder holding `tropo.toml` or
`.vivary/`, found in the tree decided, never from the folder a command runs in) contributes the
anchored floor at its root and its own `private_paths`; `decide` is its one-policy form.

A path (repository-root-relative, ``/``-separated, as in a Git tree) is private when any of these
holds; they are checked in this order and the first one is the reported reason:

1. **Floor or config** — the built-in floor (`FLOOR`) or a configured ``private_paths`` glob. Both
   use gitignore syntax with the literal text as written (config globs and the paths they are
   matched against in Unicode NFC, so a composed pattern covers a decomposed macOS name):
   ``USER.md`` has no slash, so like any such gitignore pattern it matches ``USER.md`` at every
   depth (and everything under a directory of that name); ``memory/**`` contains a slash, so it is
   anchored at the root. The floor is matched twice: by an exact Python rendering of those seven
   fixed patterns, and by Git itself, which also evaluates the config globs. For Git, we make a
   scratch repository with no ``.gitignore`` files whose ``info/exclude`` holds the floor and whose
   ``core.excludesFile`` holds the config globs. ``info/exclude`` outranks ``core.excludesFile``
   (gitignore(5), "precedence"), so a ``!`` pattern in the config can re-include a config match but
   never a floor match. Both use the repository's ``core.ignoreCase``.
2. **Git would ignore it** — with ``--no-index`` semantics, so a tracked (force-added) ignored file
   stays private. Git decides, not us: one ``git check-ignore --no-index`` batch for the whole set
   (checkignore.py, which also tells how a tree other than the working tree and a work tree set elsewhere
   are asked about), so every ``.gitignore`` level, ``info/exclude``, ``core.excludesFile``,
   ``core.ignoreCase``, negation and the "cannot re-include under an excluded directory" rule are
   exactly Git's.
3. **Sensitive name** — any path component (not just the basename: a directory called
   ``secrets/`` or ``certs.pem/`` taints what is in it) is, as a whole name, one of `SENSITIVE_NAMES`:
   a file of a kind that holds secrets (``.env*``, ``*.pem``, ``*.key``, ``id_rsa*``, ``.netrc``, …)
   or a file that keeps them by name (``secrets``/``secrets.*``, ``passwords.*``, ``credentials.*``,
   ``apikey.*``, …); case-insensitive. A word inside a longer title is not a name:
   ``password-audit.md``, ``ring-a-secretary.md`` and ``tokenizer.md`` are notes like any other.

**Fails closed.** If Git cannot answer — not a work tree, a bare repository, ``git`` missing, a
path beyond a symbolic link, an exit code other than 0/1 (a crash included), a warning that a pattern
file could not be read, no answer within the time limit (a FIFO named ``.gitignore`` blocks Git for
ever), output that does not line up with the input — we raise `PrivacyError`; nothing is ever
admitted by default. Paths are only names here: nothing is read or stat'ed by us (Git itself
``lstat``s a path only to tell whether a directory-only pattern such as ``build/`` applies).
`check_snapshot_files` is the separate gate for the files a snapshot will actually read.
"""

from __future__ import annotations

import os
import re
import stat
import sys
import tempfile
import threading
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.checkignore import (
    UNNAMED_CONFIG,
    UNNAMED_IGNORE,
    Batch,
    Located,
    Match,
    collect_all,
    depth_groups,
    display_source,
    ignore_setup,
    leading_dirs,
    locate,
)
from vivary_git.errors import PrivacyError
from vivary_git.memory.config import PrivacyPolicy, refuse_ignored_policy

if TYPE_CHECKING:
    from vivary_git import git
    from vivary_git.source import Source

__all__ = [
    "FLOOR",
    "SENSITIVE_NAMES",
    "PrivacyDecision",
    "PrivacyPolicy",
    "Scope",
    "check_snapshot_files",
    "decide",
    "decide_scoped",
    "decide_without_git",
    "deciding_for_tree",
    "find_scopes",
    "find_workspaces",
    "git_ignores",
    "scopes_on_disk",
    "sensitive_name",
    "source_work_tree",
]

FLOOR: tuple[str, ...] = (
    "USER.md",
    "MEMORY.md",
    "USER.markdown",
    "MEMORY.markdown",
    "memory/**",
    "heartbeat-reports/**",
    ".strato/private/**",
    ".vivary/**",
    ".git/**",
)

# The same patterns as FLOOR, as a regex over a validated path (group fN ⇔ FLOOR[N]); the
# lower-case twin is for core.ignoreCase and runs on `path.lower()`.
_FLOOR_RE = (
    r"(?P<f0>(?:\A|/)USER\.md(?:/|\Z))|(?P<f1>(?:\A|/)MEMORY\.md(?:/|\Z))"
    r"|(?P<f2>(?:\A|/)USER\.markdown(?:/|\Z))|(?P<f3>(?:\A|/)MEMORY\.markdown(?:/|\Z))|(?P<f4>\Amemory/)"
    r"|(?P<f5>\Aheartbeat-reports/)|(?P<f6>\A\.strato/private/)|(?P<f7>\A\.vivary/)|(?P<f8>\A\.git/)"
)
_FLOOR = re.compile(_FLOOR_RE)
_FLOOR_LOWER = re.compile(_FLOOR_RE.replace("USER", "user").replace("MEMORY", "memory"))
# Cheap pre-filters: a regex per path costs more than Git's whole batch at 100,000 paths.
_FLOOR_PREFIXES = ("memory/", "heartbeat-reports/", ".strato/private/", ".vivary/", ".git/")

# Whole names (of a file or a folder on the way to it), as globs where `*` is any run of characters within
# the name; matched case-insensitively. Files whose kind holds secrets, then the names of files that keep
# them: each `NAME` also as `NAME.*` (any extension: `secrets.yaml`, `credentials.json`). Never a word
# inside a longer name, and not the singular a note is titled by: `password-audit.md`, `tokenizer.md` and
# `Secret.md` are notes (a floor of names, not a guess at content; tests/data/sensitive-lookalikes.txt).
_SENSITIVE_STEMS = ("secrets", "passwords", "passwd", "credentials", "apikey", "apikeys", "api_key", "api_keys",
                    "api-key", "api-keys")
SENSITIVE_NAMES: tuple[str, ...] = (
    ".env*", "*.pem", "*.key", "*.p12", "*.pfx", "*.ppk",
    "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    ".netrc", "_netrc", ".pgpass", ".pypirc", ".git-credentials", ".htpasswd",
    *(g for stem in _SENSITIVE_STEMS for g in (stem, stem + ".*")),
)
# Runs on `path.lower()`: group sN matches SENSITIVE_NAMES[N] as one whole component.
_SENSITIVE = re.compile(
    "|".join(f"(?P<s{i}>(?:\\A|/){re.escape(g).replace(chr(92) + '*', '[^/]*')}(?:/|\\Z))"
             for i, g in enumerate(SENSITIVE_NAMES))
)
# Cheap pre-filter: every sensitive name holds one of these (a regex per path costs more at 100,000 paths).
_SENSITIVE_NEEDLES = (".env", ".pem", ".key", ".p12", ".pfx", ".ppk", "id_", "netrc", ".pgpass", ".pypirc",
                      "credential", "secrets", "passw", "api")

# Empty, absolute, empty/`.`/`..` component, trailing slash, NUL: never a path in a Git tree.
_BAD_PATH = re.compile(r"\A(?:/|\Z)|//|/\Z|(?:\A|/)\.\.?(?:/|\Z)|\x00")
# The `.`/`..` part of _BAD_PATH over NUL-joined paths; starting with a literal keeps it fast.
_BAD_DOT_JOINED = re.compile(r"\.(?<![^\0/]\.)\.?(?![^\0/])")


class Scope(msgspec.Struct, frozen=True):
    """A workspace inside the repository, as privacy sees it: its folder (`""` for the top; a folder
    holding `tropo.toml` or `.vivary/`) and the rules of its `.vivary/memory.toml`, as written there."""

    prefix: str
    private_paths: tuple[str, ...] = ()
    respect_gitignore: bool = True


# Said after a verdict `told` by its place, as check's PRIVATE_FINDING says where the finding can be read.
PATTERN_NOT_SHOWN = "; the rule's pattern is not shown here (run `git vivary privacy explain` where the file is yours)"


class PrivacyDecision(msgspec.Struct, frozen=True):
    """One path's verdict. `reason` names the rule: "floor: memory/**", "config: drafts/**",
    ".gitignore:3:*.log", "sensitive name: *.pem"; it is "" when the path is public. `place` names a rule of the
    user's own by where it lives alone ("private_paths in .vivary/memory.toml", ".gitignore:3"), for wherever
    others read the verdict (`told`); "" when `reason` quotes no pattern of the user's."""

    path: str
    private: bool
    reason: str
    place: str = ""

    def told(self, *, masked: bool) -> str:
        """The reason as it may be said: in full at the owner's terminal; where others read it (an agent, a CI
        log), a user's rule by its place alone, since its pattern names private things (`clients/acme-*`) and is
        the text of `.vivary/memory.toml` or `.git/info/exclude`, files on the privacy floor."""
        return (self.place or self.reason) if masked else self.reason

    def unsaid(self, *, masked: bool) -> str:
        """What follows a reason `told` by its place: that the pattern is left out, and where to read it; "" when
        `told` said the reason whole."""
        return PATTERN_NOT_SHOWN if masked and self.place else ""


def decide(
    repo: Path,
    paths: Sequence[str],
    policy: PrivacyPolicy = PrivacyPolicy(),  # noqa: B008 - frozen, so one shared default is safe
    *,
    tree: str | None = None,
    git_dir: Path | None = None,
) -> list[PrivacyDecision]:
    """Decide privacy for `paths` (root-relative), in input order, with one policy at the top.

    `repo` is the top of a work tree (a linked worktree is fine; `git_dir` as for `decide_scoped`). With
    `tree` (any tree-ish), the `.gitignore` files are that tree's; otherwise the working tree's. Raises
    `PrivacyError` when Git cannot answer. Commands decide through `decide_scoped` (every workspace in the
    tree, see there); this is the single-policy form it is built on.
    """
    scope = Scope("", tuple(policy.private_paths), policy.respect_gitignore)
    return decide_scoped(repo, paths, [scope], trees=(tree,), gitignore=policy.respect_gitignore, git_dir=git_dir)


_Question = tuple[str, str, tuple[str, ...], tuple[Scope, ...], tuple[str | None, ...], bool | None]


class PrivacyMemo:
    """The privacy questions Git answered during one command (`decide_scoped(memo=...)`), so the same question
    is asked of Git once: an index run of a commit decides every note of the tree for its snapshot, for
    recording the tree's parses and for recording its vectors. A thread asking a question another thread is
    asking waits for that answer. Keep one only as long as nothing Git reads could change: one command."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._answers: dict[_Question, _Answer] = {}

    def answer(self, question: _Question, ask: Callable[[], list[PrivacyDecision]]) -> list[PrivacyDecision]:
        with self._lock:
            pending = self._answers.get(question)
            mine = pending is None
            if pending is None:
                pending = self._answers[question] = _Answer()
        if mine:
            try:
                pending.decisions = ask()
            except BaseException as err:  # the same error for whoever asked the same question
                pending.error = err
                raise
            finally:
                pending.done.set()
        pending.done.wait()
        if pending.error is not None:
            raise pending.error
        assert pending.decisions is not None
        return list(pending.decisions)


class _Answer:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.decisions: list[PrivacyDecision] | None = None
        self.error: BaseException | None = None


def _question(repo: Path, git_dir: Path | None, paths: Sequence[str], scopes: Sequence[Scope],
              trees: Sequence[str | None], gitignore: bool | None) -> _Question:
    # gitignore=None applies each path's nearest workspace's respect_gitignore: when every workspace respects
    # it, that is gitignore=True (the top, added when missing, respects it by default).
    if gitignore is None and all(s.respect_gitignore for s in scopes):
        gitignore = True
    return str(repo), str(git_dir or ""), tuple(paths), tuple(scopes), tuple(trees), gitignore


def decide_scoped(
    repo: Path,
    paths: Sequence[str],
    scopes: Sequence[Scope],
    *,
    trees: Sequence[str | None] = (None,),
    gitignore: bool | None = None,
    memo: PrivacyMemo | None = None,
    git_dir: Path | None = None,
) -> list[PrivacyDecision]:
    """The privacy boundary for every consumer (snapshot, cache recording, guard, `privacy explain`):
    `paths` (repository-relative) decided with the floor at the top **and at every workspace root** in
    `scopes`, each workspace's `private_paths` anchored at its own folder, Git's ignore rules of every
    tree in `trees` (None: the working tree's; private if any says so), and sensitive names.

    `gitignore`: True applies Git's ignore rules to every path, False to none (the commit guard),
    None as the path's nearest workspace says (`respect_gitignore`). Each workspace's `private_paths`
    are matched on their own, so a `!pattern` re-includes only what the same file made private.
    Only Git is asked (no pygit2 handle is shared): safe to run in a thread. Raises `PrivacyError`.

    `memo`: the questions Git answered earlier in this command (`PrivacyMemo`): the very same question (the
    repository, the paths in order, the workspaces, the trees, gitignore) takes that answer.

    `git_dir`: the repository's Git directory (absolute), for a work tree set elsewhere (`git --work-tree`,
    `GIT_DIR`, `core.worktree`: `git.Repo.pinned_git_dir`), where Git run in `repo` would find another
    repository or none. Every `git` is then told `--git-dir` and `--work-tree=repo`, so the same rules
    decide as in a clone: the work tree's `.gitignore` files, that git dir's `info/exclude` and config.
    """
    if memo is not None:
        return memo.answer(_question(repo, git_dir, paths, scopes, trees, gitignore),
                           lambda: decide_scoped(repo, paths, scopes, trees=trees, gitignore=gitignore,
                                                 git_dir=git_dir))
    paths = list(paths)
    _check_paths_syntax(paths)
    ordered = sorted(scopes, key=lambda s: (s.prefix.count("/") + bool(s.prefix), s.prefix))
    if not ordered or ordered[0].prefix != "":
        ordered.insert(0, Scope(""))
    for scope in ordered:
        for i, pattern in enumerate(scope.private_paths):
            if any(c in pattern for c in "\n\r\0"):
                # Named by its place, not quoted: the pattern is the text of a private file (.vivary/**), and
                # this message may reach a CI log.
                raise PrivacyError(
                    f"{f'{scope.prefix}/' if scope.prefix else ''}.vivary/memory.toml: private_paths[{i}] "
                    "contains a line break or NUL; a gitignore pattern is one line: split it into separate entries"
                )
    if not paths:
        return []
    info = locate(repo, git_dir)
    nested = [s for s in ordered if s.prefix]
    # Per path: its workspaces, outermost first (indices into `ordered`); the nearest decides gitignore.
    under: list[list[int]] = [[0] for _ in paths]
    if nested:
        fold = str.lower if info.ignorecase else None
        for k, scope in enumerate(ordered[1:], 1):
            start = (fold(scope.prefix) if fold else scope.prefix) + "/"
            for i, path in enumerate(paths):
                if (fold(path) if fold else path).startswith(start):
                    under[i].append(k)
    use_ignore = [ordered[u[-1]].respect_gitignore if gitignore is None else gitignore for u in under]
    # Sorted input lets Git reuse its per-directory pattern stack (about twice as fast); answers are
    # mapped back to input order by index.
    order = sorted(range(len(paths)), key=paths.__getitem__)
    # `private_paths` are matched in Unicode NFC, paths and patterns alike: a person types `Мой дневник/**`
    # composed, while a folder written on macOS (or synced from it) is decomposed, and byte-wise the
    # pattern would miss it and show that diary to search and to the index.
    configs = [(k, tuple(_nfc(p) for p in _anchored(s))) for k, s in enumerate(ordered) if k == 0 or s.private_paths]
    composed = [_nfc(p) for p in paths]
    batches: list[Batch] = []
    with tempfile.TemporaryDirectory(prefix="vivary-privacy-") as tmp_name:
        tmp = Path(tmp_name)
        layers: list[tuple[str, list[str], Path, str, list[int]]] = []
        scratch = _floor_scratch(tmp)
        sources: dict[str, tuple[int, str]] = {}  # config layer -> (scope index, its excludes file)
        for k, patterns in configs:
            args, where = _config_setup(info, patterns, scratch, tmp / f"private_paths{k}")
            sources[f"config{k}"] = (k, where)
            layers.append((f"config{k}", args, scratch, "floor and private_paths",
                           [i for i in order if k in under[i]]))
        wanted = [i for i in order if use_ignore[i]]
        if wanted:
            for t, tree in enumerate(dict.fromkeys(trees)):
                args_t, cwd_t, what_t = ignore_setup(info, [paths[i] for i in wanted], tree, tmp, f"tree{t}")
                layers.append((f"ignore{t}", args_t, cwd_t, what_t, wanted))
        try:
            # All batches run at once.
            for layer, args, cwd, what, indices in layers:
                asked = composed if layer.startswith("config") else paths
                for g, (group, verbose) in enumerate(depth_groups(paths, indices)):
                    batches.append(Batch.start(layer, args, cwd, what, asked, group, verbose, tmp / f"{layer}-{g}"))
        finally:
            collect_all(batches)
    config_hits: dict[int, list[tuple[int, Match]]] = {}
    ignore_hits: dict[int, Match] = {}
    for batch in sorted(batches, key=lambda b: b.layer):
        found = batch.answers()
        if batch.layer.startswith("config"):
            k = sources[batch.layer][0]
            for i, match in found.items():
                config_hits.setdefault(i, []).append((k, match))
        else:
            for i, match in found.items():
                ignore_hits.setdefault(i, match)

    decisions: list[PrivacyDecision] = []
    for i, path in enumerate(paths):
        reason = _floor_reason(path, info.ignorecase)
        if not reason and len(under[i]) > 1:
            reason = _workspace_floor_reason(path, [ordered[k].prefix for k in under[i][1:]], info.ignorecase)
        place = ""
        if not reason and i in config_hits:
            k, match = min(config_hits[i], key=lambda km: km[0])
            reason = _floor_or_config_reason(match, ".git/info/exclude", sources[f"config{k}"][1], ordered[k])
            if not reason.startswith("floor:"):
                at = f"{ordered[k].prefix}/" if ordered[k].prefix else ""
                place = f"private_paths in {at}.vivary/memory.toml"
        if not reason and i in ignore_hits:
            source, line, pattern = ignore_hits[i]
            reason = f"{display_source(source, info.top)}:{line}:{pattern}" if source else UNNAMED_IGNORE
            place = f"{display_source(source, info.top)}:{line}" if source else ""
        if not reason:
            reason = _sensitive_reason(path)
        decisions.append(PrivacyDecision(path=path, private=bool(reason), reason=reason, place=place))
    return decisions


def source_work_tree(source: Source) -> Path:
    """The top of the work tree privacy is decided in for `source`'s tree; `PrivacyError` when there is none."""
    repo = source.repo
    if repo is None or repo.workdir is None:
        where = source.root if repo is None else repo.git_dir
        raise PrivacyError(
            f"cannot decide privacy for {where}: semantic memory needs a Git work tree, because Git's own ignore "
            "rules decide what is private; run it inside a clone (`git init` for a plain folder)"
        )
    return repo.workdir


def deciding_for_tree(source: Source, paths: Sequence[str], policy: PrivacyPolicy | None = None, *,
                      memo: PrivacyMemo | None = None) -> Callable[[], list[PrivacyDecision]]:
    """What decides privacy for repository-relative `paths` against `source`'s tree: the one decision every
    consumer makes (`decide_scoped`), with every workspace on the way to a path (its floor, its anchored
    `private_paths`) found in that tree, plus the source's root. Raises `PrivacyError` (or `ConfigError` for an
    unreadable memory.toml).

    Git's ignore rules: the working tree's for a working-tree source (and its tree's too when Git may read a
    `.gitignore` from the index: a sparse checkout's outside the cone, a skip-worktree one), the tree's own for
    `--rev`, both for `--staged` (see memory/snapshot.py). `policy`, when given, stands for the root workspace's
    memory.toml (the caller read it from the same tree).

    The workspaces' rules are read now (through this thread's repository handle); the returned call asks
    only Git, so it may run in another thread while this one goes on."""
    import functools

    git_dir = source.repo.pinned_git_dir if source.repo is not None else None
    if source.kind == "rev" and source.repo is not None and source.repo.workdir is None:
        # A bare repository (a server's, where the pre-receive gate reads a pushed commit): a tree's verdicts need
        # no work tree, only its own `.gitignore` blobs (written into a scratch folder) and the repository's
        # `info/exclude` and config, so Git is told the repository and given it as the (unread) work tree too.
        top = git_dir = source.repo.git_dir
    else:
        top = source_work_tree(source)
    assert source.repo is not None
    root = source.root_tree
    assert root is not None  # a Git source: rev, staged or the working tree
    trees: tuple[str | None, ...] = {"worktree": (None,), "rev": (root,)}.get(source.kind, (root, None))
    if source.kind == "worktree":
        from vivary_git.worktree import ignore_rules_off_disk

        if ignore_rules_off_disk(source.repo):
            # Outside its cone a sparse checkout leaves the `.gitignore` files off the disk too (and `git update-index
            # --skip-worktree` may), while the working tree's tree keeps their index blobs and the notes under them:
            # Git still applies their rules, so must we (a force-added ignored note there was embedded): that tree's
            # rules are asked as well.
            trees = (root, None)
    scopes = find_scopes(source.repo, root, paths, also=[source.prefix],
                         work_tree=top if source.kind == "worktree" else None)
    if policy is not None:
        scopes = [Scope(s.prefix, tuple(policy.private_paths), policy.respect_gitignore)
                  if s.prefix == source.prefix else s for s in scopes]
    return functools.partial(decide_scoped, top, list(paths), scopes, trees=trees, memo=memo, git_dir=git_dir)


def git_ignores(repo: Path, folders: Sequence[str], *, git_dir: Path | None = None) -> list[str]:
    """For each of `folders` (repository-relative, as `paths` above), the working tree's rule by which Git
    ignores it as a folder (`.gitignore:3:/.vivary/memory/`), or "" when Git does not ignore it: Git's own
    rules alone, without the floor or `private_paths`, asked with the same `check-ignore` as `decide_scoped`
    (`--no-index`: a folder holding tracked files can still be ignored; whether it does is `git ls-files`'
    question). Each is asked as `folder/`, so a folder-only pattern matches whether or not the folder exists
    yet. The memory state folders' rule (memory/statefolder.py). Raises `PrivacyError` when Git cannot answer."""
    folders = list(folders)
    _check_paths_syntax(folders)
    if not folders:
        return []
    info = locate(repo, git_dir)
    asked = [f + "/" for f in folders]
    batches: list[Batch] = []
    with tempfile.TemporaryDirectory(prefix="vivary-privacy-") as tmp_name:
        tmp = Path(tmp_name)
        args, cwd, what = ignore_setup(info, folders, None, tmp)
        order = sorted(range(len(asked)), key=asked.__getitem__)
        try:
            for g, (group, verbose) in enumerate(depth_groups(asked, order)):
                batches.append(Batch.start("ignore0", args, cwd, what, asked, group, verbose, tmp / f"ignore-{g}"))
        finally:
            collect_all(batches)
    hits: dict[int, Match] = {}
    for batch in batches:
        hits.update(batch.answers())
    out = []
    for i in range(len(folders)):
        source, line, pattern = hits.get(i, ("", "", ""))
        out.append("" if i not in hits else f"{display_source(source, info.top)}:{line}:{pattern}" if source
                   else UNNAMED_IGNORE)
    return out


def decide_without_git(folder: Path, paths: Sequence[str]) -> list[PrivacyDecision]:
    """The part of the boundary that needs no Git, for a plain folder outside any repository (search
    there, `hidden.py`): the floor at the top and at every workspace root on the way to a path (found on
    disk, `scopes_on_disk`), and sensitive names; there are no Git ignore rules to apply. A workspace
    whose `.vivary/memory.toml` lists `private_paths` raises `PrivacyError`: only Git matches gitignore
    patterns exactly, and guessing would fail open. `ConfigError` for a bad memory.toml."""
    paths = list(paths)
    _check_paths_syntax(paths)
    scopes = scopes_on_disk(folder, paths)
    for scope in scopes:
        if scope.private_paths:
            name = f"{scope.prefix}/{MEMORY_CONFIG}" if scope.prefix else MEMORY_CONFIG
            raise PrivacyError(
                f"cannot decide privacy in {folder}: {name} lists private_paths, gitignore patterns only Git "
                "matches exactly, and this folder is not in a Git work tree; run `git init` there (nothing "
                "needs to be committed) and try again"
            )
    ignorecase = sys.platform in ("darwin", "win32")  # what `git init` would find on such a file system
    workspaces = [s.prefix for s in scopes if s.prefix]
    out: list[PrivacyDecision] = []
    for path in paths:
        inside = [d for d in workspaces if path.startswith(d + "/")]
        reason = (_floor_reason(path, ignorecase) or _workspace_floor_reason(path, inside, ignorecase)
                  or _sensitive_reason(path))
        out.append(PrivacyDecision(path=path, private=bool(reason), reason=reason))
    return out


def scopes_on_disk(folder: Path, paths: Iterable[str], *, also: Iterable[str] = ()) -> list[Scope]:
    """`find_scopes` for the files on disk under `folder` (a work tree's top, or a plain folder): the top,
    every folder on the way to a path holding `tropo.toml` or `.vivary/`, and the folders in `also`, each
    with the rules of its `.vivary/memory.toml` as it is on disk (`ConfigError` when it cannot be read)."""
    dirs = leading_dirs(paths)
    wanted = set(also)
    out: list[Scope] = []
    for d in sorted(dirs | wanted, key=lambda d: (d.count("/") + bool(d), d)):
        base = folder / d if d else folder
        if d and d not in wanted and not any(os.path.lexists(base / m) for m in WORKSPACE_MARKERS):
            continue
        config = base / MEMORY_CONFIG
        name = f"{d}/{MEMORY_CONFIG}" if d else MEMORY_CONFIG
        # A folder there (a submodule's checkout) is no config file, as in a tree (`find_scopes`).
        if not os.path.lexists(config) or (config.is_dir() and not config.is_symlink()):
            out.append(Scope(d))
            continue
        if config.is_symlink() or not config.is_file():
            from vivary_git.errors import ConfigError

            raise ConfigError(f"{name}: is not a regular file; replace it with the file itself")
        try:
            data = config.read_bytes()
        except OSError as err:
            from vivary_git.errors import ConfigError

            raise ConfigError(f"{name}: cannot be read ({err.strerror or err}); fix its permissions") from err
        out.append(_read_scope(d, name, data))
    return out


WORKSPACE_MARKERS = ("tropo.toml", ".vivary")  # a folder holding either is a workspace (docs/privacy.md)
MEMORY_CONFIG = ".vivary/memory.toml"


def find_scopes(
    repo: git.Repo,
    tree: str,
    paths: Iterable[str],
    *,
    also: Iterable[str] = (),
    read: Callable[[str, bytes], Scope] | None = None,
    read_config: Callable[[str], bytes | None] | None = None,
    work_tree: Path | None = None,
) -> list[Scope]:
    """The workspaces that hold any of `paths` in `tree` (a tree id): the top, every folder on the way to a
    path that holds `tropo.toml` or `.vivary/`, and the folders in `also` (a `--root`), each with the rules
    of its own `.vivary/memory.toml` in that tree. The answer depends on the tree and the paths, never on
    the folder a command runs from.

    Each memory.toml is read by the rule every config file in a tree is read by (`source.tree_config`:
    `source.config_blob_id`, `source.read_config_blob`): a symbolic link, or a `.vivary` folder that is one, is a
    `ConfigError`, as is a file over the size limit; a folder or a submodule of its name is no config file.
    `read(prefix, data)` turns a memory.toml into a `Scope` (default: the strict memory config parser, raising
    `ConfigError`). `read_config(path)` reads a memory.toml by that rule for a caller that has read them already
    (the privacy guard): its bytes, None for none, the same `ConfigError` when it cannot be read. With `work_tree`,
    a memory.toml that is on disk but not in the tree (Git ignores it) is refused rather than skipped: its
    `private_paths` would silently not apply."""
    from vivary_git.source import tree_config

    out: list[Scope] = []
    for folder in find_workspaces(repo, tree, paths, also=also):
        name = f"{folder}/{MEMORY_CONFIG}" if folder else MEMORY_CONFIG
        data = read_config(name) if read_config is not None else tree_config(repo, tree, name)
        if data is not None:
            out.append(read(folder, data) if read is not None else _read_scope(folder, name, data))
            continue
        if work_tree is not None:
            refuse_ignored_policy(work_tree / name, name)
        out.append(Scope(folder))
    return out


def find_workspaces(repo: git.Repo, tree: str, paths: Iterable[str], *, also: Iterable[str] = ()) -> list[str]:
    """The folders `find_scopes` reads the rules of, found without reading them: the top, every folder on the way
    to one of `paths` that holds `tropo.toml` or `.vivary/` in `tree` (a tree id), and the folders in `also`;
    shallowest first. Two lookups a folder, no file read: for a caller that only needs to know where the
    workspaces are (`cache gc`, which reads each workspace's rules when it opens it)."""
    import pygit2

    try:
        root = repo.repo[tree]
    except (KeyError, ValueError, pygit2.GitError) as err:
        raise PrivacyError(f"cannot decide privacy: {tree!r} does not name a tree ({err})") from err
    wanted = set(also)
    return [folder for folder in sorted(leading_dirs(paths) | wanted, key=lambda d: (d.count("/") + bool(d), d))
            if not folder or folder in wanted
            or any(_entry(root, f"{folder}/{m}") is not None for m in WORKSPACE_MARKERS)]


def _entry(root: Any, path: str) -> Any:
    try:
        return root[path]
    except (KeyError, ValueError, TypeError):
        return None


def _read_scope(folder: str, name: str, data: bytes) -> Scope:
    from vivary_git.memory.config import parse_memory_config  # tomllib, only when a scope has a memory.toml

    privacy = parse_memory_config(data, name).memory.privacy
    return Scope(folder, tuple(privacy.private_paths), privacy.respect_gitignore)


def _floor_reason(path: str, ignorecase: bool) -> str:
    lower = path.lower()
    if ignorecase:
        candidate = lower.startswith(_FLOOR_PREFIXES) or "user.m" in lower or "memory.m" in lower
    else:
        candidate = path.startswith(_FLOOR_PREFIXES) or "USER.m" in path or "MEMORY.m" in path
    m = (_FLOOR_LOWER.search(lower) if ignorecase else _FLOOR.search(path)) if candidate else None
    return "floor: " + FLOOR[int(str(m.lastgroup)[1:])] if m is not None else ""


# The anchored floor patterns, as prefixes of a workspace-relative path (`dir/**` matches all below dir/).
_ANCHORED_FLOOR = {"memory/": "memory/**", "heartbeat-reports/": "heartbeat-reports/**",
                   ".strato/private/": ".strato/private/**", ".vivary/": ".vivary/**"}


def _workspace_floor_reason(path: str, prefixes: Sequence[str], ignorecase: bool) -> str:
    """The anchored floor at a workspace below the top: `vault/memory/x.md` is private as
    `floor: memory/** (workspace vault/)`."""
    for prefix in prefixes:
        inner = path[len(prefix) + 1:]
        probe = inner.lower() if ignorecase else inner
        for start, pattern in _ANCHORED_FLOOR.items():
            if probe.startswith(start):
                return f"floor: {pattern} (workspace {prefix}/)"
    return ""


def _sensitive_reason(path: str) -> str:
    lower = path.lower()
    if any(needle in lower for needle in _SENSITIVE_NEEDLES):
        s = _SENSITIVE.search(lower)
        if s is not None:
            return "sensitive name: " + SENSITIVE_NAMES[int(str(s.lastgroup)[1:])]
    return ""


def sensitive_name(path: str) -> str:
    """The sensitive-name rule that makes `path` private ("sensitive name: *.pem"), or ""."""
    return _sensitive_reason(path)


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def _glob_escape(text: str) -> str:
    out = "".join("\\" + c if c in "*?[]\\" else c for c in text)
    return "\\" + out if out.startswith(("#", "!")) else out


def _anchored(scope: Scope) -> tuple[str, ...]:
    """A workspace's `private_paths` as patterns of the repository top, with the same gitignore meaning:
    with a slash at the start or in the middle anchored at the workspace folder, without one matching
    at any depth *below it* (never in another workspace)."""
    if not scope.prefix:
        return scope.private_paths
    base = _glob_escape(scope.prefix)
    out: list[str] = []
    for pattern in scope.private_paths:
        neg, body = ("!", pattern[1:]) if pattern.startswith("!") else ("", pattern)
        if body.startswith("/"):
            out.append(f"{neg}{base}{body}")
        elif "/" in body.rstrip("/"):
            out.append(f"{neg}{base}/{body}")
        else:
            out.append(f"{neg}{base}/**/{body}")
    return tuple(out)


def check_snapshot_files(root: Path, paths: Iterable[str]) -> None:
    """Refuse (raise `PrivacyError`) unless every path is a plain, singly linked regular file under
    `root` reached through real directories only. Run before reading any working-tree file for a
    snapshot; open the files with `O_NOFOLLOW` afterwards, since this check cannot stop a later swap.
    """
    try:
        real_root = root.resolve(strict=True)
    except OSError as err:
        raise PrivacyError(f"cannot resolve the snapshot root {root}: {err.strerror or err}") from err
    paths = list(paths)
    _check_paths_syntax(paths)
    root_text = str(real_root)
    # By folder: each folder is checked once and opened once, and its files are stat'ed relative to
    # that descriptor (one name to look up each, not the whole path again): a third less time per
    # note than `lstat` of full paths, which recall pays on every call.
    by_dir: dict[str, list[str]] = {}
    for path in paths:
        folder, _, name = path.rpartition("/")
        by_dir.setdefault(folder, []).append(name)
    good_dirs: set[str] = {""}
    for folder, names in by_dir.items():
        first = f"{folder}/{names[0]}" if folder else names[0]
        parts = folder.split("/") if folder else []
        for depth in range(1, len(parts) + 1):
            leading = "/".join(parts[:depth])
            if leading in good_dirs:
                continue
            st = _lstat(root_text, leading, first)
            if stat.S_ISLNK(st.st_mode):
                raise PrivacyError(
                    f"refusing {first!r}: it is behind the symbolic link {leading!r}; snapshots never"
                    " follow symlinks: replace the link with a real directory or remove the file"
                )
            if not stat.S_ISDIR(st.st_mode):
                raise PrivacyError(f"refusing {first!r}: {leading!r} is not a directory")
            good_dirs.add(leading)
        # No component is a symlink and none is `.`/`..`, so this is where the folder really is; the
        # check guards that reasoning against a future change to the syntax rules.
        where = os.path.normpath(os.path.join(root_text, folder)) if folder else root_text
        if folder and not where.startswith(root_text.rstrip(os.sep) + os.sep):
            raise PrivacyError(f"refusing {first!r}: it resolves outside {real_root}")
        for name, st in _stat_names(where, folder, names):
            path = f"{folder}/{name}" if folder else name
            if stat.S_ISLNK(st.st_mode):
                raise PrivacyError(
                    f"refusing {path!r}: it is a symbolic link; snapshots never follow symlinks:"
                    " replace it with the file itself or remove it"
                )
            if not stat.S_ISREG(st.st_mode):
                raise PrivacyError(f"refusing {path!r}: not a regular file")
            if st.st_nlink > 1:
                raise PrivacyError(
                    f"refusing {path!r}: it has {st.st_nlink} hard links, so its content may be shared with a"
                    " file outside the workspace: replace it with an independent copy"
                )


def _stat_names(where: str, folder: str, names: list[str]) -> Iterator[tuple[str, os.stat_result]]:
    """lstat of each name in the folder `where`, through one descriptor of it where the OS allows."""
    if os.stat not in os.supports_dir_fd or not hasattr(os, "O_DIRECTORY"):  # pragma: no cover - not Linux
        for name in names:
            yield name, _lstat(where, name, f"{folder}/{name}" if folder else name)
        return
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    first = f"{folder}/{names[0]}" if folder else names[0]
    try:
        fd = os.open(where, flags)
    except OSError as err:
        raise PrivacyError(f"refusing {first!r}: cannot open {folder or '.'!r}: {err.strerror or err}") from err
    try:
        for name in names:
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except OSError as err:
                path = f"{folder}/{name}" if folder else name
                raise PrivacyError(f"refusing {path!r}: cannot stat {path!r}: {err.strerror or err}") from err
            yield name, st
    finally:
        os.close(fd)




def _check_path_syntax(path: str) -> None:
    if not isinstance(path, str) or _BAD_PATH.search(path):
        raise PrivacyError(
            f"not a repository-relative path: {path!r}; paths are `/`-separated, relative to the"
            " repository root, without empty, `.` or `..` components"
        )


def _check_paths_syntax(paths: Sequence[str]) -> None:
    if not all(isinstance(p, str) for p in paths):
        bad = next(p for p in paths if not isinstance(p, str))
        raise PrivacyError(f"not a repository-relative path: {bad!r}; paths are strings")
    joined = "\0".join(paths)
    if (
        joined.count("\0") == len(paths) - 1
        and not any(s in joined for s in ("//", "\0/", "/\0", "\0\0"))
        and not joined.startswith(("/", "\0"))
        and not joined.endswith(("/", "\0"))
        and (joined or not paths)
        and not _BAD_DOT_JOINED.search(joined)
    ):
        return
    for path in paths:
        _check_path_syntax(path)


def _lstat(root: str, rel: str, path: str) -> os.stat_result:
    # Plain strings, not pathlib: this runs for every note of a snapshot (pathlib was 0.1 s per 5,000).
    try:
        return os.lstat(os.path.join(root, rel))
    except OSError as err:
        raise PrivacyError(f"refusing {path!r}: cannot stat {rel!r}: {err.strerror or err}") from err


def _floor_scratch(tmp: Path) -> Path:
    # An empty repository whose only rules are ours. Made by hand rather than by `git init` (10 ms
    # of every hook and recall): what makes a directory a repository to Git is HEAD, objects/ and
    # refs/, and with no config file every setting is its default.
    scratch = tmp / "floor"
    git_dir = scratch / ".git"
    try:
        (git_dir / "objects").mkdir(parents=True)
        (git_dir / "refs").mkdir()
        (git_dir / "info").mkdir()
        (git_dir / "HEAD").write_text("ref: refs/heads/main\n", encoding="ascii")
        (git_dir / "info" / "exclude").write_text("".join(p + "\n" for p in FLOOR), encoding="utf-8")
    except OSError as err:
        raise PrivacyError(f"cannot decide privacy: could not make a scratch repository ({err})") from err
    return scratch


def _config_setup(info: Located, patterns: Sequence[str], scratch: Path, config_file: Path) -> tuple[list[str], str]:
    """`check-ignore` arguments matching the floor (info/exclude) and `patterns` (core.excludesFile)."""
    config_file.write_bytes(b"".join(os.fsencode(p) + b"\n" for p in patterns))
    ignorecase = "true" if info.ignorecase else "false"
    return ["-c", f"core.excludesFile={config_file}", "-c", f"core.ignoreCase={ignorecase}"], str(config_file)


def _floor_or_config_reason(match: Match, floor_source: str, config_source: str, scope: Scope) -> str:
    source, line, _ = match
    if not source:
        return UNNAMED_CONFIG  # the Python floor check came first, so it was a private_paths glob
    index = int(line) - 1
    if source == floor_source and 0 <= index < len(FLOOR):
        return "floor: " + FLOOR[index]
    if source == config_source and 0 <= index < len(scope.private_paths):
        where = f" (in {scope.prefix}/.vivary/memory.toml)" if scope.prefix else ""
        return f"config: {scope.private_paths[index]}{where}"
    raise PrivacyError(
        f"cannot decide privacy: the floor check matched an unexpected rule ({source}:{line});"
        " nothing was admitted"
    )
