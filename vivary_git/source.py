"""Where the notes come from: one tree, named by `--rev`, `--staged`, or the working tree.

Every source resolves to a Git tree id (the identity of the input, the key of every cache) and the
list of Markdown blobs under the workspace root. The working tree becomes a tree the way
`git stash` makes one: `git add -A` into a throw-away copy of the index (so Git's stat cache
spares unchanged files and its ignore rules decide what is untracked-but-ignored), then
`git write-tree`. Outside Git, a plain folder is read directly and nothing is cached.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from vivary_git import dialects, git
from vivary_git.config import (
    CONFIG_FILE,
    GRAPH_FILE,
    MEMORY_FILE,
    Config,
    Detected,
    Excluder,
    at,
    build_config,
    excluder,
    leaves_out,
    load_toml,
    located,
    memory_folder,
)
from vivary_git.dialects import dendron
from vivary_git.errors import ConfigError, GitError, UsageError
from vivary_git.models import NOTE_MAX_BYTES, Finding
from vivary_git.safeio import FileRefused, describe_size, read_regular
from vivary_git.worktree import sparse_checkout, staged_tree, worktree_tree

THIN_FILE = ".vivary/workspace.toml"
THIN_CONTRACTS = ("thin-v0.3",)  # the workspace contracts a `.vivary/workspace.toml` may name
ROOT_MARKERS = (CONFIG_FILE, THIN_FILE)
# Largest config file read (tropo.toml, a pack, an overlay, .vivary/*.toml): 200,000 excludes are ~4 MB.
MAX_CONFIG_BYTES = 16 << 20
_MD_SUFFIXES = (".md", ".markdown")
_LINK_MODE = 0o120000
_TARGET_SHOWN = 4096  # PATH_MAX: a longer symbolic link target resolves nowhere


class Entry(NamedTuple):
    path: str  # relative to the workspace root, `/`-separated
    oid: str  # blob id
    mode: int


class Source:
    """One tree's worth of workspace files, with the config read from that same tree."""

    def __init__(
        self,
        *,
        kind: str,
        label: str,
        root: Path,
        prefix: str,
        tree_id: str | None,
        repo: git.Repo | None,
        reader: Callable[[str], bytes],
        config: Config,
        files: Callable[[], tuple[list[Entry], list[str], list[str]]],
        raw: dict[str, Any] | None = None,
        read_file: Callable[[str], bytes | None] | None = None,
        root_tree: str | None = None,
        problems: list[Finding] | None = None,
        where: str = "",
    ) -> None:
        self.kind = kind  # "rev" | "staged" | "worktree" | "folder"
        self.label = label
        self.root = root
        self.prefix = prefix
        self.tree_id = tree_id  # the workspace root's subtree: the identity of what was read
        self.root_tree = root_tree  # the whole repository tree it came from (--rev, the index, the work tree)
        self.repo = repo
        self.config = config
        self.where = where or label  # the tree as messages name it: `--rev HEAD~1`, `the working tree`
        # Which of some workspace-relative paths a message may name (the privacy boundary's verdict), set by
        # whoever can decide (`Workspace`); without it no note is named where naming is a choice.
        self.public: Callable[[Sequence[str]], list[bool]] | None = None
        self._reader = reader
        self._list_files = files
        self._raw = raw
        self._read_file = read_file
        self._entries: list[Entry] | None = None
        self._others: list[str] = []
        self._problems: list[Finding] = list(problems or ())  # files that cannot be notes at all
        self._overlays: dict[str, Config] = {}
        self._keep: Callable[[str], bool] = lambda path: True  # what the overlays keep (`_apply_overlays`)
        # A plain folder's walk stops at nested Git repositories, as Git's does: their folders, root-relative.
        self.nested_repos: list[str] = []

    def _scan(self) -> list[Entry]:
        # Lazy: when the graph for this tree id is cached, the tree is never walked at all.
        if self._entries is None:
            try:
                notes, overlay_files, others = self._list_files()
            except git.MissingObject as err:
                raise self.unfetched(err.oid) from None
            self._entries = []
            keep = self._apply_overlays(overlay_files)
            self._keep = keep
            left_out = leaves_out(self.config)
            self._others = others
            for entry in sorted(notes):
                if not keep(entry.path):
                    continue
                if left_out is not None and left_out(entry.path):
                    others.append(entry.path)  # a template or an excluded draft: links to it still resolve
                    continue
                if entry.mode == _LINK_MODE:
                    # The file is there, only not read: a link to it resolves (as to a template), so the
                    # E000 here is the one finding, not also a "matches no note" in every note linking it.
                    others.append(entry.path)
                    self._problems.append(Finding(
                        entry.path, 1, "error", "E000",
                        f"is a symbolic link (to {self._link_target(entry.oid)}); notes must be regular files: "
                        "commit the file itself or add the link to `exclude`",
                    ))
                else:
                    self._entries.append(entry)
        return self._entries

    def _link_target(self, oid: str) -> str:
        """A symbolic link's target as a finding shows it. Git stores a target of any length: one longer
        than any path a system resolves is named by its size, never read into a message."""
        try:
            size = git.blob_size(self.repo.repo.odb, self.repo.pygit2.Oid(hex=oid)) if self.repo is not None else 0
        except git.MissingObject as err:
            raise self.unfetched(err.oid) from None
        if size > _TARGET_SHOWN:
            return f"a target of {size:,} bytes"
        return repr(self._reader(oid).decode("utf-8", "replace"))

    def _apply_overlays(self, overlay_files: list[str]) -> Callable[[str], bool]:
        """Nested `tropo.toml` files tighten the rules for their folder; returns the exclusion filter."""
        if not overlay_files or self._raw is None or self._read_file is None:
            return lambda path: True
        from vivary_git.packs import excluder_for, overlay_configs

        graph_bytes = self._read_file(GRAPH_FILE)
        graph = load_toml(graph_bytes, GRAPH_FILE) if graph_bytes is not None else None
        excluders: list[tuple[str, Callable[[str], bool]]] = []
        with _lines_of(self._read_file):
            merged = overlay_configs(self._raw, overlay_files, self._read_file)
            for d in sorted(merged, key=len, reverse=True):
                self._overlays[d] = build_config(merged[d], graph, name=f"{d}/{CONFIG_FILE}",
                                                 memory_folder=_memory_folder(self._read_file))
                excluders.append((d + "/", excluder_for(merged[d])))

        def keep(path: str) -> bool:
            for prefix, excluded in excluders:
                if path.startswith(prefix):
                    return not excluded(path)
            return True

        return keep

    def left_out_because(self, path: str) -> str | None:
        """Why a note at workspace-relative `path` would be no node of this tree's graph, naming the rule;
        None when it would be one. The decisions the walk and `_scan` make: `exclude` (tropo.toml, a
        nested tropo.toml's, the built-in names, a vault's dot-folders), then `leaves_out` (template
        folders, `.vivary/graph.toml` excludes, guidance files, `.markdown` in an Obsidian vault)."""
        from vivary_git.config import left_out_because

        if not is_note(path):
            return "it is not a Markdown note (a note's name ends in .md)"
        why = left_out_because(self.config, path)
        if why is not None:
            return why
        self._scan()
        for folder in sorted(self._overlays, key=len, reverse=True):
            if path.startswith(folder + "/"):
                if not self._keep(path):
                    return f"`exclude` in {folder}/{CONFIG_FILE} leaves it out"
                break
        return None

    @property
    def overlays(self) -> dict[str, Config]:
        """Folder → the config in force there, for folders below a nested `tropo.toml`."""
        self._scan()
        return self._overlays

    @property
    def entries(self) -> list[Entry]:
        """The note blobs under the root, sorted by path (symbolic links excluded)."""
        return self._scan()

    @property
    def others(self) -> list[str]:
        """Every other file under the root (attachments, templates, excluded notes): what a link may
        name without naming a node."""
        self._scan()
        return self._others

    @property
    def problems(self) -> list[Finding]:
        """E000 findings for tree entries that cannot be notes (symbolic links)."""
        self._scan()
        return self._problems

    @property
    def caching(self) -> bool:
        return self.repo is not None

    def read(self, oid: str) -> bytes:
        """A note's bytes. In a repository a blob over `NOTE_MAX_BYTES` is `git.BlobTooLarge`, refused
        unread (`parse.parse_read` makes it E000); a plain folder never holds one (it is a problem). A blob the
        clone lacks (a partial clone's) is `git.MissingObject`, saying which files and how to fetch them."""
        try:
            return self._reader(oid)
        except git.MissingObject as err:
            raise self.unfetched(err.oid) from None

    def unfetched(self, oid: str) -> git.MissingObject:
        """The refusal of this tree, whose blob `oid` the clone lacks: every missing file counted, the first
        the privacy boundary admits named (`public`), and the fetch that brings them all (partial.py)."""
        from vivary_git import partial

        if self.repo is None or self.tree_id is None:
            return git.MissingObject(oid)
        public = self.public

        def named(paths: Sequence[str]) -> list[bool]:  # a note the boundary admits: notes are what is read
            notes = [p for p in paths if is_note(p)]
            admitted = dict(zip(notes, public(notes), strict=True)) if notes and public is not None else {}
            return [admitted.get(p, False) for p in paths]

        return partial.refusal(self.repo.repo, tree_id=self.tree_id, where=self.where, oid=oid, prefix=self.prefix,
                               public=named, sparse=self.kind == "worktree" and sparse_checkout(self.repo))


def load_config(read_file: Callable[[str], bytes | None],
                probe: dialects.Probe | None = None) -> tuple[Config, dict[str, Any] | None]:
    """The workspace's rules, from `tropo.toml` (+ packs), a thin `.vivary/workspace.toml`, and
    `.vivary/graph.toml`, all read from the same tree. Returns the config and the merged raw table
    (None in zero-config mode) that nested overlays build on."""
    graph_bytes = read_file(GRAPH_FILE)
    graph = load_toml(graph_bytes, GRAPH_FILE) if graph_bytes is not None else None
    folder = _memory_folder(read_file)
    tropo_bytes = read_file(CONFIG_FILE)
    thin_bytes = read_file(THIN_FILE)
    thin = load_toml(thin_bytes, THIN_FILE) if thin_bytes is not None else None
    with _lines_of(read_file):
        if thin is not None and not thin_contract(thin, THIN_FILE):
            thin = None
    if tropo_bytes is None and thin is None:
        detected = None
        if probe is not None:
            name, reason = dialects.detect(probe)
            named = (graph or {}).get("dialect")
            dialect = named if isinstance(named, str) else name
            vaults: tuple[tuple[str, str], ...] = ()
            folders: tuple[str, ...] = ()
            if dialect == "dendron":
                code_workspace = probe.read("dendron.code-workspace")
                vaults = dendron.vaults(probe.read("dendron.yml"), code_workspace)
                folders = dendron.folders(code_workspace)
            excluded: tuple[str, ...] = ()
            warnings: tuple[str, ...] = ()
            if dialect == "obsidian":
                from vivary_git.dialects.obsidian_settings import read_settings

                settings = read_settings(probe.read)
                excluded, warnings = settings.excluded, settings.warnings
            detected = Detected(name, reason, dialects.template_folders(probe, dialect), vaults, folders, excluded,
                                warnings)
        with _lines_of(read_file):
            return build_config(None, graph, detected=detected, memory_folder=folder), None
    from vivary_git.packs import merge, merge_packs

    with _lines_of(read_file):
        if thin is not None:
            # A thin workspace file is the root config; a tropo.toml beside it is an overlay on it.
            raw = merge_packs(thin, read_file, source=THIN_FILE)
            if tropo_bytes is not None:
                raw = merge(raw, load_toml(tropo_bytes, CONFIG_FILE), source=CONFIG_FILE)
            name = THIN_FILE
        else:
            assert tropo_bytes is not None
            raw = merge_packs(load_toml(tropo_bytes, CONFIG_FILE), read_file)
            name = CONFIG_FILE
        return build_config(raw, graph, name=name, memory_folder=folder), raw


@contextlib.contextmanager
def _lines_of(read_file: Callable[[str], bytes | None]) -> Iterator[None]:
    """A config error about one value of a file `read_file` reads, given that value's line (`config.located`)."""
    try:
        yield
    except ConfigError as err:
        raise located(err, read_file) from err.__cause__


def _memory_folder(read_file: Callable[[str], bytes | None]) -> str:
    """Where agent memories live (`[memory.remember] folder`): their notes are typed `memory`. Read leniently:
    a `.vivary/memory.toml` that is a symbolic link is refused where memory is used (`memory/config.py`)."""
    try:
        data = read_file(MEMORY_FILE)
    except LinkedConfig:
        data = None
    return memory_folder(data)


def is_note(path: str) -> bool:
    # Case-sensitive like tropo: `NOTES.MD` is not a note there, so it is not one here either.
    return path.endswith(_MD_SUFFIXES)


def open_source(
    start: Path | None = None,
    *,
    rev: str | None = None,
    staged: bool = False,
    root: str | None = None,
    rev_option: str = "--rev",
    worktree: str | None = None,
) -> Source:
    """Resolve the tree to read. `root` pins the workspace directory (relative to `start`).
    `rev_option` is the option the user gave `rev` with (`--base`, `--head`): messages name it.
    `worktree`: the working tree already written as this tree id (by a process that keeps it current,
    `mcp/freshness.py`); read as the working tree, not snapshotted again."""
    if rev is not None and staged:
        raise UsageError("--rev and --staged name different trees; pass one of them")
    start = (start or Path.cwd()).resolve()
    # The repository is the one Git finds from where the command runs (or -C, GIT_DIR), never one looked for
    # from --root: a folder a commit laid out as a Git directory (HEAD, config, objects/) would be opened, and
    # its config names commands Git runs (core.fsmonitor, a filter) and the tree a gate reads.
    repo = git.try_open(start if start.exists() else start.parent)
    if repo is None:
        if root is not None:
            start = _plain_root(start, root, rev)
        if rev is not None or staged:
            given = f"{rev_option} {rev}" if rev is not None else "--staged"
            raise GitError(f"{given}: {start} is not inside a Git repository, so there is no tree to read; "
                           "run it inside a repository (or -C PATH), or drop the option to read the folder")
        return _folder_source(start, pinned=root is not None)
    pinned_prefix = _root_prefix(repo, start, root, rev) if root is not None else None
    if rev is not None:
        tree_id, label = rev_tree(repo, rev, rev_option), rev
        kind = "rev"
    elif repo.bare:
        unused = repo.unused_worktree
        if unused is not None:
            raise UsageError(f"this repository is bare (core.bare = true), so Git uses no work tree, although "
                             f"core.worktree names {unused}: to use that folder as its work tree, `git --git-dir="
                             f"{repo.git_dir} config core.bare false` (or run `git --work-tree={unused} vivary ...`); "
                             "--rev REV reads a commit meanwhile")
        raise UsageError("this is a bare repository (no working tree): check, graph, query, find, index and recall "
                         "read a tree named with --rev REV (blast with --base/--head); the other commands need a "
                         "clone with a working tree")
    elif staged:
        tree_id, label, kind = staged_tree(repo), "staged", "staged"
    else:
        tree_id = worktree if worktree is not None else worktree_tree(repo)
        label, kind = "working tree", "worktree"
    top = repo.workdir
    if pinned_prefix is not None:
        prefix = pinned_prefix
    else:
        rel = ""
        if top is not None:
            with contextlib.suppress(ValueError):
                rel = start.relative_to(top).as_posix()
            if rel == ".":
                rel = ""
        prefix = _find_root(repo, tree_id, rel)
    sub_id = _subtree(repo, tree_id, prefix)
    if sub_id is None and root is not None:
        parts = prefix.split("/")
        nested = next((lead for lead in ("/".join(parts[:n]) for n in range(1, len(parts) + 1))
                       if entry_type(repo, tree_id, lead) == "commit"), None)
        if nested is not None:  # the folder, or one on the way to it (`--root vault/notes`)
            raise NestedRoot(root, nested, os.path.relpath(top / nested, start) if top is not None else nested)
        _refuse_a_link(repo, tree_id, label, root, prefix, start)
        raise MissingRoot(root, prefix, label)

    where = f"{rev_option} {rev}" if rev is not None else "--staged" if staged else "the working tree"

    def unfetched(err: git.MissingObject, path: str | None) -> git.MissingObject:
        from vivary_git import partial

        assert sub_id is not None
        return partial.refusal(repo.repo, tree_id=sub_id, where=where, oid=err.oid, path=path, prefix=prefix,
                               sparse=kind == "worktree" and sparse_checkout(repo))

    def read_file(path: str) -> bytes | None:
        name = f"{prefix}/{path}" if prefix else path
        oid = config_blob_id(repo, sub_id, path, name) if sub_id is not None else None
        try:
            return None if oid is None else read_config_blob(repo, oid, name, file=path)
        except git.MissingObject as err:
            raise unfetched(err, path) from None

    def probe_file(path: str) -> bytes | None:  # an editor's files, a note: any blob, a link's too, as before
        entry = _entry(repo, sub_id, path) if sub_id is not None else None
        if entry is None or entry.type_str != "blob":
            return None
        try:
            return read_config_blob(repo, str(entry.id), f"{prefix}/{path}" if prefix else path, file=path)
        except git.MissingObject as err:  # a note (which may be private) is not named: a config file is
            raise unfetched(err, None if is_note(path) else path) from None

    try:
        config, raw = load_config(read_file, _TreeProbe(repo, sub_id, probe_file))
    except ConfigError as err:
        err.prefix = prefix  # the file is the workspace's: where it is in the repository
        raise
    return Source(
        kind=kind, label=label, root=(top / prefix) if top is not None else Path(prefix or "."), prefix=prefix,
        tree_id=sub_id, repo=repo, reader=functools.partial(repo.read_blob, limit=NOTE_MAX_BYTES), config=config,
        raw=raw, read_file=read_file, root_tree=tree_id, where=where,
        files=lambda: _walk_tree(repo, sub_id, excluder(config)) if sub_id is not None else ([], [], []),
    )


def root_folder(start: Path, root: str, rev: str | None = None) -> Path:
    """The folder on disk `--root` names, checked as the commands that read the working tree check it: a
    folder inside the work tree of the repository Git finds from `start` (a usage error otherwise, exit 2),
    or, outside any repository, a folder in none; a symbolic link there (or on the way) is refused in the words
    the tree readers use (`LinkedRoot`). For the commands that write files there (bootstrap-host, onboard): a
    folder outside the work tree would be written with this workspace's paths. With `rev`, the commit a command
    reads besides the folder (doctor): a link that commit holds too is named in it, as `check --rev` names it."""
    start = start.resolve()
    repo = git.try_open(start)
    if repo is None:
        return _plain_root(start, root, None)
    top = repo.workdir
    if top is None:
        raise UsageError(f"--root {root}: this is a bare repository, with no work tree to hold the folder; run "
                         "the command in a clone with a working tree")
    prefix = _root_prefix(repo, start, root, None)
    # Refused as the commands that read a tree refuse it, with the same words: the working tree holds a link
    # there, which the hook's `check --staged` and the server's reads never follow.
    link = _link_on_disk(top, prefix)
    if link is not None:
        if rev is not None:
            with contextlib.suppress(GitError):  # a revision that names no tree is the reader's to report
                _refuse_a_link(repo, rev_tree(repo, rev), rev, root, prefix, start)
        raise LinkedRoot(_root_is_a_link(root, prefix, link, os.readlink(top / link), "working tree", top, start,
                                         lambda path: _link_on_disk(top, path) is None and (top / path).is_dir()))
    nested = _nested_on_disk(top, prefix)
    if nested is not None:
        raise NestedRoot(root, nested, os.path.relpath(top / nested, start))
    return (top / prefix).resolve()


def _nested_on_disk(top: Path, prefix: str) -> str | None:
    """The first folder on the way to `prefix` (itself included) that holds a `.git`: a submodule's checkout or a
    clone kept inside the work tree, whose files are another repository's; None when there is none."""
    parts = prefix.split("/") if prefix else []
    for n in range(1, len(parts) + 1):
        folder = "/".join(parts[:n])
        if os.path.lexists(top / folder / ".git"):
            return folder
    return None


def _root_prefix(repo: git.Repo, start: Path, root: str, rev: str | None) -> str:
    """The folder `--root` names, as a path in the repository's tree: `root` is taken relative to `start`
    (the current directory or -C) and must lie inside the repository's work tree. It is read from the tree
    (a symbolic link there is no folder, a nested repository is not entered), never looked at for a
    repository of its own. In a bare repository, `root` is a folder of the tree."""
    top = repo.workdir
    if top is None:
        rel = os.path.normpath(root).replace(os.sep, "/")
        if os.path.isabs(root) or rel == ".." or rel.startswith("../"):
            raise UsageError(f"--root {root}: a bare repository has no work tree, so --root names a folder of the "
                             "tree read, relative to its top (such as `docs`)")
        return "" if rel == "." else rel
    # As written (`..` takes away the folder before it, as in Git's paths); through a symbolic link outside
    # the work tree (a user's /tmp -> /private/tmp), as resolved.
    named = Path(os.path.normpath(start / root))
    for where in (named, named.resolve()):
        with contextlib.suppress(ValueError):
            rel = where.relative_to(top).as_posix()
            break
    else:
        raise UsageError(f"--root {root}: {named} is not inside {top}, the work tree of the repository Git finds "
                         "here; name a folder inside it, or run from inside the repository that holds the folder "
                         "(cd there, or -C DIR)")
    # os.path's, not Path's: a name longer than the system allows (ENAMETOOLONG) is no folder either, where
    # Path.is_dir raised it, a traceback.
    if rev is None and not os.path.isdir(top / rel):
        raise UsageError(_not_a_folder(root, top / rel))
    return "" if rel == "." else rel


def _link_on_the_way(repo: git.Repo, tree_id: str, prefix: str) -> str | None:
    """The symbolic link in the tree at `prefix` or at a folder on the way to it, if there is one."""
    return next((p for p in _on_the_way(prefix)
                 if (entry := _entry(repo, tree_id, p)) is not None and entry.filemode == _LINK_MODE), None)


def _link_on_disk(top: Path, prefix: str) -> str | None:
    """The symbolic link in the work tree at `prefix` or at a folder on the way to it, if there is one."""
    return next((p for p in _on_the_way(prefix) if (top / p).is_symlink()), None)


def _on_the_way(prefix: str) -> Iterator[str]:
    """The folders on the way to `prefix`, from the top, then `prefix`: `a`, `a/b`, `a/b/c`."""
    parts = prefix.split("/") if prefix else []
    return ("/".join(parts[:n]) for n in range(1, len(parts) + 1))


def _refuse_a_link(repo: git.Repo, tree_id: str, label: str, root: str, prefix: str, start: Path) -> None:
    """A `LinkedRoot` when the tree `label` names holds a symbolic link at `prefix` (the folder `--root ROOT` names)
    or on the way to it."""
    link = _link_on_the_way(repo, tree_id, prefix)
    if link is not None:
        target = repo.read_blob(str(_entry(repo, tree_id, link).id)).decode("utf-8", "surrogateescape")
        raise LinkedRoot(_root_is_a_link(root, prefix, link, target, label, repo.workdir, start,
                                         lambda path: entry_type(repo, tree_id, path) == "tree"))


class MissingRoot(UsageError):
    """The tree `label` names holds no folder at `prefix`, the folder `--root ROOT` names: `cache gc` tells a branch
    that lacks the workspace (it needs none of its entries) from one it could not read."""

    def __init__(self, root: str, prefix: str, label: str) -> None:
        super().__init__(f"--root {root}: there is no folder {prefix or '.'!r} in {label}; name a folder of that tree")
        self.root, self.prefix, self.label = root, prefix, label


class NestedRoot(UsageError):
    """`--root` names a folder of another repository (a submodule, a clone inside the work tree), or one inside
    it, which Git run here does not read into: in the tree read (`open_source`), or on disk (`root_folder`, for
    the commands that work on the folder). `folder` is that repository's path in this tree, `where` the path to
    give `-C`."""

    def __init__(self, root: str, folder: str, where: str) -> None:
        super().__init__(f"--root {root}: {folder!r} is another repository (a submodule, or a clone inside this work "
                         f"tree), which Git does not read into from here; run the command inside it (-C {where})")
        self.folder, self.where = folder, where


class LinkedRoot(UsageError):
    """`--root` is, or goes through, a symbolic link (`_root_is_a_link` says it): every command that takes `--root`
    refuses it, doctor too, which reports most other problems of the workspace instead of refusing."""


def _root_is_a_link(root: str, prefix: str, link: str, target: str, label: str, top: Path | None, start: Path,
                    is_folder: Callable[[str], bool]) -> str:
    """What `--root` names when it is (or goes through) a symbolic link to `target` in the tree `label` names,
    and the folder to name instead (`is_folder` says whether a path of that tree is one): the tree holds the
    link as the path it points to, and Git never reads through it."""
    what = f"{link!r}" if link == prefix else f"{link!r}, on the way to {prefix!r},"
    what += " is a symbolic link"
    said = (f"--root {root}: {what} to {target!r} in {label}, not a folder, and a tree is read as Git keeps it, "
            "without following links")
    inside = os.path.normpath(os.path.join(os.path.dirname(link), target)).replace(os.sep, "/")
    real = inside + prefix[len(link):] if inside != "." else prefix[len(link) + 1:]
    if (os.path.isabs(target) or inside == ".." or inside.startswith("../") or top is None
            or (real and not is_folder(real))):
        return f"{said}; name a folder of that tree instead"
    return f"{said}; name the folder itself: --root {os.path.relpath(top / real, start)}"


def _not_a_folder(root: str, path: Path) -> str:
    if os.path.islink(path):
        return (f"--root {root}: is a symbolic link to {os.readlink(path)!r}, which is no folder; name the folder "
                "the workspace is in")
    if os.path.lexists(path):
        return f"--root {root}: is a file, not a folder; --root names the folder the workspace is in"
    return f"--root {root}: no such directory"


def _plain_root(start: Path, root: str, rev: str | None) -> Path:
    """The folder `--root` names outside any repository (read as a plain folder). One inside a repository
    the current directory is not in is refused: whether it is one is looked up only to say so, since reading
    it as a plain folder would read what Git ignores, and opening it would let the folder choose."""
    folder = (start / root).resolve()
    if not os.path.isdir(folder):
        if rev is not None:
            return folder
        raise UsageError(_not_a_folder(root, folder))
    found = git.discover(folder)
    if found is not None:
        held = Path(found).resolve()
        raise UsageError(f"--root {root}: {folder} is inside the Git repository "
                         f"{held.parent if held.name == '.git' else held}, and "
                         f"{start} is not: run the command from inside that repository (cd there, or -C DIR)")
    return folder


def rev_tree(repo: git.Repo, rev: str, option: str = "--rev") -> str:
    """The tree id REV names (through libgit2: a revision never reaches a `git` command line as typed);
    errors name it as `option`, the command-line option it came from."""
    return str(rev_object(repo, rev, option)[1].id)


def rev_object(repo: git.Repo, rev: str, option: str) -> tuple[Any, Any]:
    """The object REV names and the tree it peels to; a GitError naming `option` and the fix when there
    is none, said in plain words (libgit2's own text names object types by number)."""
    pygit2 = repo.pygit2
    fix = "name a commit, branch, tag or tree"
    if rev.strip("0") == "" and len(rev) in (40, 64):
        # What CI passes for "before" when there was none: GitLab's CI_COMMIT_BEFORE_SHA in a new branch's first
        # pipeline (and in every merge-request pipeline), a push event's `before` on GitHub.
        raise GitError(
            f"{option} {rev}: the all-zero commit id, which CI systems pass as the commit before a push that "
            "created the branch: there is no such commit to compare with; name the commit the change starts from "
            "(in a GitLab merge request, $CI_MERGE_REQUEST_DIFF_BASE_SHA; on a new branch, the branch it starts "
            "from, such as origin/main), or leave the option out"
        )
    try:
        obj = repo.repo.revparse_single(rev)
    except KeyError:
        if repo.repo.head_is_unborn and rev.split("~")[0].split("^")[0] in ("HEAD", "@"):
            raise GitError(
                f"{option} {rev}: this repository has no commits yet; check the working tree (no flag) "
                "or the index (--staged)"
            ) from None
        where = repo.workdir or repo.git_dir
        if repo.repo.is_shallow:
            # A CI checkout (`actions/checkout`'s default depth 1) or a `git clone --depth N` has no commit
            # behind its cut: `HEAD~1` there is a revision Git knows of but this clone does not hold.
            raise GitError(
                f"{option} {rev}: no such revision in {where}, a shallow clone whose history stops at the commits "
                f"in .git/shallow; if {rev} is older, fetch more history (`git fetch --deepen=N`, or "
                "`git fetch --unshallow`) and run this again"
            ) from None
        raise GitError(f"{option} {rev}: no such revision in {where}") from None
    except pygit2.InvalidSpecError:
        what = (f"{rev}: not one revision (a malformed name, or a range such as A..B)" if rev
                else "'': an empty revision")
        raise GitError(f"{option} {what}; {fix}") from None
    except (ValueError, pygit2.GitError) as err:
        raise GitError(f"{option} {rev}: {err}; {fix}") from None
    try:
        return obj, obj.peel(pygit2.Tree)
    except (ValueError, pygit2.GitError, pygit2.InvalidSpecError) as err:
        lacked = _lacked_tree(repo, obj)
        if lacked is not None:
            from vivary_git import partial

            raise partial.refusal(repo.repo, tree_id=lacked, where=f"{option} {rev}", oid=lacked) from None
        with contextlib.suppress(ValueError, pygit2.GitError, pygit2.InvalidSpecError):
            blob = obj.peel(pygit2.Blob)
            raise GitError(f"{option} {rev}: names a file's content (blob {str(blob.id)[:12]}), not a commit or "
                           f"tree; {fix}") from None
        raise GitError(f"{option} {rev}: {err}; {fix}") from None


def _lacked_tree(repo: git.Repo, obj: Any) -> str | None:
    """The id of the tree of commit `obj` (or of the commit a tag names) when the clone lacks it (a treeless
    clone's, `--filter=tree:0`), else None."""
    pygit2 = repo.pygit2
    try:
        tree = obj.peel(pygit2.Commit).tree_id
    except (ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None
    return None if tree in repo.repo.odb else str(tree)


def _find_root(repo: git.Repo, tree_id: str, rel: str) -> str:
    parts = [p for p in rel.split("/") if p]
    for n in range(len(parts), -1, -1):
        prefix = "/".join(parts[:n])
        for marker in ROOT_MARKERS:
            name = f"{prefix}/{marker}" if prefix else marker
            blob = config_blob_id(repo, tree_id, name, name)
            if blob is None:
                continue
            if marker == CONFIG_FILE:
                return prefix
            text = read_config_blob(repo, blob, name, file=name)
            try:
                if thin_contract(load_toml(text, name), name):
                    return prefix
            except ConfigError as err:
                raise located(err, {name: text}.get) from None
    return ""


def thin_contract(data: dict[str, Any], name: str) -> bool:
    """Whether a `.vivary/workspace.toml` (`data`, the file `name`) marks a thin workspace root: its `contract`
    names one of `THIN_CONTRACTS`, at the top (`contract = "thin-v0.3"`) or in its `[workspace]` table (as the
    published Vivary tools write it). A file that names no contract marks nothing, as before. A contract that is
    no contract's name (a number, a misspelling, one this version does not know) cannot mean zero-config: it is a
    `ConfigError` at that key (`config.located` adds its line)."""
    workspace = data.get("workspace")
    places = [("contract",), ("workspace", "contract")] if isinstance(workspace, dict) else [("contract",)]
    named = False
    for key in places:
        value = data.get(key[0]) if len(key) == 1 else data[key[0]].get(key[1])
        if value is None:
            continue
        if not isinstance(value, str) or value not in THIN_CONTRACTS:
            known = ", ".join(f'"{c}"' for c in THIN_CONTRACTS)
            where = "contract" if len(key) == 1 else "[workspace] contract"
            raise at(name, *key).error(
                f"{name}: {where} = {_shown(value)} is not a Vivary workspace contract; the contracts that exist: "
                f"{known}; write contract = \"{THIN_CONTRACTS[-1]}\" (or remove the key: then the file marks no "
                "workspace)")
        named = True
    return named


def _shown(value: object) -> str:
    """A TOML value as a message shows it: a string quoted, anything else by its type."""
    return repr(value) if isinstance(value, str) else f"{value!r} (not a string)"


class LinkedConfig(ConfigError):
    """A config file that is a symbolic link in the tree."""


def config_blob_id(repo: git.Repo, tree_id: str, path: str, name: str) -> str | None:
    """The blob id of the config file at `path` in the tree, from its tree entry; None when there is none,
    and when a folder or a submodule has that name (no config file, as for `.vivary/memory.toml`). A
    symbolic link is a `ConfigError` naming `name`: its blob holds the path it points to, not the rules; so is
    a folder on its way that is one (`.vivary` -> elsewhere), which the tree does not follow to the file."""
    entry = _entry(repo, tree_id, path)
    if entry is None:
        folder = path
        while "/" in folder:
            folder = folder.rsplit("/", 1)[0]
            above = _entry(repo, tree_id, folder)
            if above is not None and above.filemode == 0o120000:
                shown = name[: len(name) - len(path) + len(folder)]
                raise LinkedConfig(f"{shown}: is a symbolic link in the tree, so no config file in it can be read; "
                                   "commit the folder itself instead", file=path)
        return None
    if entry.filemode == 0o120000:
        raise LinkedConfig(f"{name}: is a symbolic link in the tree; commit the file itself instead", file=path)
    if entry.type_str != "blob":
        return None
    return str(entry.id)


def tree_config(repo: git.Repo, tree_id: str, path: str) -> bytes | None:
    """The config file at `path` in the tree, named by its path: `config_blob_id`, then `read_config_blob`."""
    oid = config_blob_id(repo, tree_id, path, path)
    return None if oid is None else read_config_blob(repo, oid, path, file=path)


def read_config_blob(repo: git.Repo, oid: str, name: str, *, file: str) -> bytes:
    """A config file's blob, refused (`ConfigError`) past `MAX_CONFIG_BYTES` before it is inflated. `name` is the
    file as the message names it, `file` its path in the tree it was found in (`ConfigError.file`), as for
    `config_blob_id`: the refusal is annotated on the file, as a symbolic link there is."""
    size = git.blob_size(repo.repo.odb, repo.pygit2.Oid(hex=oid))
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{name}: is {size:,} bytes, over the {describe_size(MAX_CONFIG_BYTES)} limit for a "
                          "config file; shorten it", file=file)
    return repo.read_blob(oid)


def read_config_file(path: Path, name: str) -> bytes | None:
    """A file in a plain folder, read as a config file: None when there is none (or it is a symbolic link:
    the workspace's own config files are refused before, `LinkedConfig`); `ConfigError` for a FIFO, a device
    or a file over `MAX_CONFIG_BYTES`."""
    if path.is_symlink() or not os.path.lexists(path) or path.is_dir():
        return None
    try:
        return read_regular(path, MAX_CONFIG_BYTES, follow_symlinks=False)
    except FileRefused as err:
        raise ConfigError(f"{name}: {err}; a config file must be a regular file") from None
    except OSError as err:
        raise ConfigError(f"{name}: cannot be read ({err.strerror or err}); fix its permissions") from None


def _lookup(repo: git.Repo, tree_id: str, path: str) -> str | None:
    return repo.lookup(tree_id, path)


def _subtree(repo: git.Repo, tree_id: str, prefix: str) -> str | None:
    if not prefix:
        return tree_id
    sub = _lookup(repo, tree_id, prefix)
    if sub is None or entry_type(repo, tree_id, prefix) != "tree":
        return None
    return sub


def _entry(repo: git.Repo, tree_id: str, path: str) -> Any:
    """The tree entry at `path` (a pygit2 object: its `filemode`, `type_str` and `id`), or None."""
    try:
        return repo.repo[tree_id][path]  # type: ignore[index]
    except (KeyError, ValueError, TypeError):
        return None


def entry_type(repo: git.Repo, tree_id: str, path: str) -> str | None:
    """What the tree holds at `path`: "tree", "blob" (a file or a symbolic link), "commit" (a submodule, whose
    commit this repository need not have), or None. From the tree entry, never by loading the object."""
    entry = _entry(repo, tree_id, path)
    kind: str | None = entry.type_str if entry is not None else None
    return kind


class _TreeProbe:
    """What dialect detection may look at in a tree."""

    def __init__(self, repo: git.Repo, tree_id: str | None, read_file: Callable[[str], bytes | None]) -> None:
        self.repo, self.tree_id, self._read = repo, tree_id, read_file

    def read(self, path: str) -> bytes | None:
        return self._read(path)

    def exists(self, path: str) -> bool:
        return self.tree_id is not None and _lookup(self.repo, self.tree_id, path) is not None

    def names(self) -> list[str]:
        if self.tree_id is None:
            return []
        return [_entry_name(obj) for obj in self.repo.repo[self.tree_id]]  # type: ignore[attr-defined]


class _FolderProbe:
    def __init__(self, root: Path, read_file: Callable[[str], bytes | None]) -> None:
        self.root, self._read = root, read_file

    def read(self, path: str) -> bytes | None:
        return self._read(path)

    def exists(self, path: str) -> bool:
        return (self.root / path).exists()

    def names(self) -> list[str]:
        try:
            return sorted(os.listdir(self.root))
        except OSError:
            return []


def _walk_tree(repo: git.Repo, tree_id: str, excluded: Excluder) -> tuple[list[Entry], list[str], list[str]]:
    """Every note blob under the tree (skipping excluded folders without descending into them),
    the nested config files (overlays) found on the way, and the paths of every other file."""
    pygit2 = repo.pygit2
    blob_type, tree_type = pygit2.GIT_OBJECT_BLOB, pygit2.GIT_OBJECT_TREE
    found: list[Entry] = []
    overlays: list[str] = []
    others: list[str] = []

    skip = excluded.entry  # ancestors have passed already: only the entry's own name and prefixes

    def walk(tree: object, prefix: str) -> None:
        for obj in tree:  # type: ignore[attr-defined]
            name = _entry_name(obj)
            path = prefix + name
            t = obj.type
            if t == tree_type:
                if not skip(name, path):
                    walk(obj, path + "/")
            elif t == blob_type:
                if is_note(path):
                    if not skip(name, path):
                        found.append(Entry(path, str(obj.id), obj.filemode))
                else:
                    if "/" in path and (path.endswith("/" + CONFIG_FILE) or path.endswith("/" + THIN_FILE)):
                        overlays.append(path)
                    if not skip(name, path):
                        others.append(path)

    try:
        walk(repo.repo[tree_id], "")
    except KeyError:  # pygit2.NotFoundError: a folder's tree a partial clone lacks (`--filter=tree:1`)
        from vivary_git.partial import missing_blobs

        lacked = [oid for path, oid in missing_blobs(repo.repo, tree_id) if path.endswith("/") or not path]
        raise git.MissingObject(lacked[0] if lacked else tree_id) from None
    return found, overlays, others


def _entry_name(obj: object) -> str:
    try:
        return str(obj.name)  # type: ignore[attr-defined]
    except UnicodeDecodeError:
        raw: bytes = obj.raw_name  # type: ignore[attr-defined]
        return raw.decode("utf-8", "surrogateescape")


def _folder_source(start: Path, *, pinned: bool) -> Source:
    """A plain folder outside Git: read files directly; ids are Git blob ids, caching is off."""
    import pygit2

    root = start
    if not pinned:
        for candidate in (start, *start.parents):
            if any((candidate / m).is_file() for m in ROOT_MARKERS):
                root = candidate
                break
    if not root.is_dir():
        raise UsageError(f"{root}: no such directory")
    contents: dict[str, bytes] = {}

    def read_file(path: str) -> bytes | None:
        if (root / path).is_symlink():
            raise LinkedConfig(f"{path}: is a symbolic link; replace it with the file itself", file=path)
        return read_config_file(root / path, path)

    def probe_file(path: str) -> bytes | None:  # an editor's files, a note: a link is no file here
        return read_config_file(root / path, path)

    config, raw = load_config(read_file, _FolderProbe(root, probe_file))
    excluded = excluder(config)
    files: list[Entry] = []
    overlays: list[str] = []
    others: list[str] = []
    nested: list[str] = []
    problems: list[Finding] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        kept = []
        for d in sorted(dirnames):
            if excluded(rel_dir + d):
                continue
            # Another repository's notes are its own (a folder of clones held 22k notes): Git stops at a
            # nested `.git` (folder, or file for a worktree or submodule), and so do we.
            if os.path.lexists(os.path.join(dirpath, d, ".git")):
                nested.append(rel_dir + d)
                continue
            kept.append(d)
        dirnames[:] = kept
        for name in filenames:
            rel = rel_dir + name
            if rel_dir and (name == CONFIG_FILE or rel.endswith("/" + THIN_FILE)):
                overlays.append(rel)
            if excluded(rel):
                continue
            if not is_note(rel):
                others.append(rel)
                continue
            full = base / name
            try:
                if full.is_symlink():
                    data, mode = os.readlink(full).encode("utf-8", "surrogateescape"), _LINK_MODE
                else:
                    # Read no more than a note may hold: a FIFO would block, a device never end.
                    data, mode = read_regular(full, NOTE_MAX_BYTES, follow_symlinks=False), 0o100644
            except FileRefused as err:
                problems.append(Finding(rel, 1, "error", "E000", f"{err}; notes must be regular files of at most "
                                        f"{describe_size(NOTE_MAX_BYTES)}: remove it or add it to `exclude`"))
                continue
            except OSError as err:
                raise UsageError(f"{rel}: cannot be read ({err.strerror}); fix its permissions or remove it") \
                    from None
            oid = str(pygit2.hash(data))
            contents[oid] = data
            files.append(Entry(rel, oid, mode))
    source = Source(
        kind="folder", label=f"folder {root}", root=root, prefix="", tree_id=None, repo=None,
        reader=contents.__getitem__, config=config, files=lambda: (files, overlays, others), raw=raw,
        read_file=read_file, problems=sorted(problems, key=lambda f: f.path),
    )
    source.nested_repos = nested
    return source
