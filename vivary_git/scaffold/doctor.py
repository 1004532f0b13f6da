"""The workspace doctor: one read-only health report, each problem with the command that fixes it.

Read-only is a promise, not a habit: doctor writes nothing to the work tree or to `.git`. That is why
the graph is read from a commit (`HEAD` by default) with every cache off: reading the *working* tree
would mean `git add -A` into a scratch index, which writes blobs into the object database. Uncommitted
changes are counted (`git --no-optional-locks status`, which does not even refresh the index) and
pointed at `git vivary check`. Git commands used: `rev-parse`, `cat-file -t`, `ls-files`, `check-ignore`,
`status`, `config` — all readers. No provider runtime is imported and no model is called: the local embedder is
probed by `embedder_status()`, Cognee by `find_spec` (memory/cognee.py `status`).

Privacy is proved with Git: a path that `git ls-files --cached --others --exclude-standard` lists is one
Git tracks or would add; it is a leak when the one privacy decision (`privacy.decide_scoped`, the commit
guard's reading: the floor at the top and at every workspace root, each workspace's `private_paths`,
sensitive names not allowed by `vivary.guardAllow`; the committed config under `.vivary/` excepted)
calls it private. Where a new private file would not be ignored is probed at the floor's own patterns.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import msgspec

from vivary_git import git
from vivary_git.errors import GitError, RefusedError, VivaryError
from vivary_git.privacy import FLOOR

if TYPE_CHECKING:
    from vivary_git.graph import Graph
    from vivary_git.memory.config import MemoryConfig
    from vivary_git.workspace import Workspace

Level = Literal["error", "warning"]
MemoryStatus = Literal["disabled", "privacy-failed", "healthy", "configured", "unavailable", "misconfigured", "stale"]
MEMORY_OK: frozenset[str] = frozenset({"disabled", "healthy", "configured"})
MEMORY_FILE = ".vivary/memory.toml"
CACHE_REF = "refs/vivary/cache"
_MANIFEST_MAX_BYTES = 1 << 20
# Hypothetical private paths, one per floor pattern: what `.gitignore` must cover before anyone creates
# them. `.vivary/` holds the committed config, and `.git/` is never in a tree.
_PROBE = "doctor-probe.md"
_FLOOR_KEPT_OUT = tuple(p for p in FLOOR if p not in (".vivary/**", ".git/**"))
_PROBES = tuple(p[:-2] + _PROBE if p.endswith("/**") else p for p in _FLOOR_KEPT_OUT)
_GITIGNORE_LINES = ", ".join("/" + p[:-2] if p.endswith("/**") else p for p in _FLOOR_KEPT_OUT)


class Problem(msgspec.Struct, frozen=True):
    area: str  # repo | workspace | graph | privacy | hooks | cache | memory
    level: Level
    message: str
    fix: str


class RepoInfo(msgspec.Struct, frozen=True):
    top: str | None
    git_dir: str | None
    head: str | None  # commit id, None when unborn or not a repository
    branch: str | None


class WorkspaceInfo(msgspec.Struct, frozen=True):
    root: str | None
    config: str | None  # "tropo.toml", ".vivary/workspace.toml" or "zero-config"
    source: str | None  # the tree the graph was read from, e.g. "HEAD"
    dialect: str | None = None  # the vault dialect links are read in (docs/vaults.md)
    dialect_reason: str | None = None  # why that dialect was chosen


class GraphInfo(msgspec.Struct, frozen=True):
    tree: str | None
    nodes: int
    edges: int
    broken: int
    checked: int
    errors: int
    warnings: int
    codes: dict[str, int]  # findings per code
    worktree_changes: int  # paths under the workspace that differ from the tree read


class PrivacyInfo(msgspec.Struct, frozen=True):
    status: Literal["ok", "failed", "unknown"]
    leaks: list[str]  # private paths Git tracks or would add (workspace-relative)
    unguarded: list[str]  # private paths a new file would not be ignored at
    detail: str = ""


class HooksInfo(msgspec.Struct, frozen=True):
    installed: bool
    hooks_dir: str | None
    vivary_hooks: list[str]  # hook scripts that run vivary: ours (the marker line), or a line calling the gate
    pre_commit_config: bool  # .pre-commit-config.yaml names a vivary hook


class CacheInfo(msgspec.Struct, frozen=True):
    ref: str
    present: bool
    commit: str | None


class MemoryInfo(msgspec.Struct, frozen=True):
    """The contract's workspace-doctor `memory` block."""

    enabled: bool
    provider: str
    mode: str
    status: MemoryStatus
    config: str | None
    privacy: str  # not-indexed | private-paths-filtered | failed | unknown
    detail: str


class DoctorReport(msgspec.Struct, frozen=True):
    ok: bool
    repo: RepoInfo
    workspace: WorkspaceInfo
    graph: GraphInfo | None
    privacy: PrivacyInfo
    hooks: HooksInfo
    cache: CacheInfo
    memory: MemoryInfo
    problems: list[Problem]


_NO_MEMORY = MemoryInfo(enabled=False, provider="none", mode="none", status="disabled", config=None,
                        privacy="not-indexed", detail="")


def _git(args: list[str], cwd: Path, stdin: bytes | None = None) -> tuple[int, bytes]:
    """`git ARGS` in `cwd`, on the repository `git.Repo` finds there (never a folder a commit laid out as a Git
    directory, whose config could name a command: `git.pinned_env`)."""
    try:
        env = git.pinned_env(cwd)
    except GitError:
        return 128, b""
    proc = git.run(args, cwd=cwd, env=env, input=stdin, check=False)
    return proc.returncode, proc.stdout


def _text(out: bytes) -> str:
    return out.decode("utf-8", "surrogateescape").strip()


def doctor(path: str | os.PathLike[str] | None = None, *, rev: str = "HEAD", root: str | None = None) -> DoctorReport:
    """Diagnose the workspace containing `path` (default: the current directory), reading `rev`."""
    start = Path(path or ".").absolute()
    problems: list[Problem] = []
    code, out = _git(["rev-parse", "--show-toplevel"], start)
    if code != 0:
        try:  # a repository found that cannot be opened (another user's, say) is no reason to `git init`
            git.pinned_env(start)
        except GitError as err:
            problems.append(Problem("repo", "error", str(err), "fix what the message names, then run "
                                    "`git vivary doctor` again"))
        else:
            problems.append(Problem("repo", "error", f"{start} is not inside a Git work tree",
                                    "git vivary init   # or `git init`, then commit your notes"))
        return DoctorReport(
            ok=False, repo=RepoInfo(None, None, None, None), workspace=WorkspaceInfo(None, None, None), graph=None,
            privacy=PrivacyInfo("unknown", [], [], "no Git work tree"), hooks=HooksInfo(False, None, [], False),
            cache=CacheInfo(CACHE_REF, False, None), memory=_NO_MEMORY, problems=problems,
        )
    top = Path(_text(out))
    git_dir = _text(_git(["rev-parse", "--path-format=absolute", "--git-common-dir"], start)[1])
    head_code, head_out = _git(["rev-parse", "-q", "--verify", "--end-of-options", f"{rev}^{{commit}}"], start)
    # `^A` passes `--verify` as the negative revision `^<id>`: a range's side, not a commit to report.
    head = _text(head_out) if head_code == 0 and not head_out.startswith(b"^") else None
    branch_code, branch_out = _git(["symbolic-ref", "-q", "--short", "HEAD"], start)
    repo = RepoInfo(str(top), git_dir, head, _text(branch_out) if branch_code == 0 else None)

    # `--root` decided as every command decides it (source.root_folder): a folder of the work tree, never a
    # symbolic link followed to one; a usage error otherwise, as there.
    from vivary_git.source import root_folder

    pinned = root_folder(start, root, rev if head is not None else None) if root is not None else None
    ws_root, config_name, graph, ws = _graph(start, rev, root, pinned, head, problems)
    privacy = _privacy(ws_root, top, root, problems)
    hooks = _hooks(start, top, problems)
    cache = _cache(start, problems)
    _exact_refspecs(start, problems)
    memory = _memory(ws_root, Path(git_dir), privacy, ws, problems)
    _dead_state_folders(Path(git_dir), problems)
    _left_out_writes(start, problems)
    rules = ws.config.links if ws is not None else None
    report_ws = WorkspaceInfo(str(ws_root), config_name, rev if graph is not None else None,
                              rules.dialect if rules else None, rules.reason if rules else None)
    ok = not any(p.level == "error" for p in problems)
    return DoctorReport(ok=ok, repo=repo, workspace=report_ws, graph=graph, privacy=privacy, hooks=hooks,
                        cache=cache, memory=memory, problems=problems)


def _dead_state_folders(common_dir: Path, problems: list[Problem]) -> None:
    """A warning naming the memory state folders of workspaces that are gone (memory/local/folders.py), if any."""
    from vivary_git.memory.local.folders import dead_folders

    dead = dead_folders(common_dir)
    if dead:
        size = sum(p.stat().st_size for d in dead for p in Path(d.folder).rglob("*") if p.is_file())
        problems.append(Problem(
            "memory", "warning", f"{len(dead)} memory state folder(s) under .git/vivary/memory/ are of workspaces "
            f"that are gone ({size / 2**20:.1f} MiB), {dead[0].workspace} first",
            "git vivary cache gc   # removes them; --dry-run names them"))


def _left_out_writes(start: Path, problems: list[Problem]) -> None:
    """An error naming the paths a memory write committed and, killed before it could, did not put into the user's
    index (memory/writes/commits.py `recover`): the user's next `git commit` would delete each of them."""
    from vivary_git.git import try_open
    from vivary_git.memory.writes.commits import left_out

    repo = try_open(start)
    branch, paths = left_out(repo) if repo is not None else ("", [])
    if not paths:
        return
    more = f" (and {len(paths) - 1} more)" if len(paths) > 1 else ""
    problems.append(Problem(
        "memory", "error", f"{paths[0]}{more}: committed on {branch} by a memory write that was stopped "
        "before it reached your index, so your next `git commit` would undo it",
        f"git restore --source=HEAD --staged --worktree -- {' '.join(shlex.quote(p) for p in paths)}   # or any "
        "memory write puts it in"))


def _find_root_on_disk(start: Path, top: Path) -> Path:
    """Nearest folder from `start` up to `top` holding tropo.toml; `top` (zero-config) when none."""
    here = start
    while True:
        if (here / "tropo.toml").is_file() or (here / ".vivary" / "workspace.toml").is_file():
            return here
        if here == top or here.parent == here:
            return top
        here = here.parent


def _graph(start: Path, rev: str, root: str | None, pinned: Path | None, head: str | None,
           problems: list[Problem]) -> tuple[Path, str | None, GraphInfo | None, Workspace | None]:
    from vivary_git.source import LinkedRoot
    from vivary_git.workspace import open_workspace

    top = Path(_text(_git(["rev-parse", "--show-toplevel"], start)[1]))
    if head is None:
        ws_root = pinned or _find_root_on_disk(start.resolve(), top)
        if rev == "HEAD":
            problems.append(Problem(
                "graph", "warning",
                "no commits yet, so doctor has no tree to read (it never writes to .git to make one)",
                "git vivary check   # checks the working tree now; commit the workspace, then run doctor again",
            ))
        else:
            ranged = _is_a_range(rev, start)
            problems.append(Problem("graph", "error", f"--rev {rev}: {_not_a_commit(rev, start, ranged)}",
                                    _one_commit(rev, ranged)))
        return ws_root, _config_name(ws_root), None, None
    try:
        ws = open_workspace(start, rev=rev, root=root, cache=False)
        report = ws.check()
        g = ws.graph()
    except LinkedRoot:
        raise  # a link in the commit where the working tree has the folder: refused as `check --rev` refuses it
    except VivaryError as err:
        ws_root = pinned or _find_root_on_disk(start.resolve(), top)
        fix = ("run the `git` command it names, then `git vivary doctor` again" if isinstance(err, git.MissingObject)
               else "fix the file it names, then `git vivary check`")
        problems.append(Problem("workspace", "error", str(err), fix))
        return ws_root, _config_name(ws_root), None, None
    ws_root = ws.source.root
    codes: dict[str, int] = {}
    for f in report.findings:
        codes[f.code] = codes.get(f.code, 0) + 1
    counts = g.counts()
    changes = _worktree_changes(ws_root)
    graph = GraphInfo(tree=ws.source.tree_id, nodes=counts["nodes"], edges=counts["edges"], broken=counts["broken"],
                      checked=report.checked, errors=report.errors, warnings=report.warnings,
                      codes=dict(sorted(codes.items())), worktree_changes=changes)
    if report.errors:
        problems.append(Problem("graph", "error", f"{report.errors} finding(s) at level error in {rev}",
                                "git vivary check   # lists each as path:line: level CODE: message"))
    _empty_vaults(ws, g, problems)
    _settings_warnings(ws, problems)
    if changes:
        problems.append(Problem("graph", "warning", f"{changes} path(s) in the working tree differ from {rev}; "
                                "this report describes the commit", "git vivary check   # checks the working tree"))
    return ws_root, _config_name(ws_root), graph, ws


def _empty_vaults(ws: Workspace, g: Graph, problems: list[Problem]) -> None:
    """A Dendron workspace none of whose vault folders holds a note here reads as an empty graph, without a
    finding: say which folders, and the fix (one vault of several without notes is usually kept in its own
    repository: `check --verbose` names it)."""
    from vivary_git.dialects import dendron

    vaults = ws.config.links.vaults
    empty = dendron.without_notes(vaults, [n.path for n in g.nodes]) if vaults else []
    if empty and len(empty) == len(vaults):
        what, fix = dendron.without_notes_said(empty)
        problems.append(Problem("workspace", "warning", f"Dendron's {what}, so the graph holds none of their notes",
                                fix))


def _settings_warnings(ws: Workspace, problems: list[Problem]) -> None:
    """The editor's settings files (or entries) the commit holds and that are left unused, as every command that
    reads the working tree warns of them (`open_ws`): a note missing from search, or a template folder read as
    notes, is explained there."""
    for warning in dict.fromkeys(ws.config.settings_warnings):
        problems.append(Problem("workspace", "warning", warning,
                                "correct the settings file it names, or let Obsidian write it again, then commit "
                                "it (until then its defaults apply, as in Obsidian)"))


def _is_a_range(rev: str, start: Path) -> bool:
    """Whether `rev` names several revisions, as Git reads it: `A..B` is `B ^A`, `A...B` adds their merge base,
    `^A` is one side of a range."""
    code, out = _git(["rev-parse", "--revs-only", "--end-of-options", rev], start)
    names = out.split()
    return code == 0 and (len(names) > 1 or any(n.startswith(b"^") for n in names))


def _one_commit(rev: str, ranged: bool) -> str:
    """The fix for a `--rev` that names no commit: for a range (`_is_a_range`), the commit at its end."""
    if not ranged:
        return "name a commit, branch or tag"
    end = (rev.rsplit("..", 1)[1].lstrip(".") or "HEAD") if ".." in rev else None  # `A..` ends at HEAD
    return f"git vivary doctor --rev {end}   # the commit at the end of the range" if end else \
        "name one commit, branch or tag"


def _not_a_commit(rev: str, start: Path, ranged: bool) -> str:
    """What `rev` names when it names no commit (a tag can point at a tree or at a file's content, `A..B` is a
    range, `ranged`): said, not "no such commit" for an object that is there."""
    if ranged:
        return "names a range of commits, not one revision, and doctor reports one commit"
    code, out = _git(["rev-parse", "-q", "--verify", "--end-of-options", rev], start)
    oid = _text(out)
    if code == 0 and _text(_git(["cat-file", "-t", oid], start)[1]) == "tag":
        code, out = _git(["rev-parse", "-q", "--verify", "--end-of-options", f"{oid}^{{}}"], start)
        oid = _text(out)
    kind = _text(_git(["cat-file", "-t", oid], start)[1]) if code == 0 else ""
    what = {"blob": f"a file's content (blob {oid[:12]})", "tree": f"a tree ({oid[:12]})"}.get(kind)
    return f"names {what}, not a commit, and doctor reports a commit" if what else "no such commit"


def _config_name(ws_root: Path) -> str:
    if (ws_root / "tropo.toml").is_file():
        return "tropo.toml"
    if (ws_root / ".vivary" / "workspace.toml").is_file():
        return ".vivary/workspace.toml"
    return "zero-config"


def _worktree_changes(ws_root: Path) -> int:
    # --no-optional-locks: plain `git status` refreshes and rewrites the index, which is a write.
    code, out = _git(["--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=all", "--", "."],
                     ws_root)
    if code != 0:
        return 0
    n = 0
    entries = out.split(b"\0")
    i = 0
    while i < len(entries):
        entry = entries[i]
        if entry:
            n += 1
            if entry[:1] in (b"R", b"C"):  # a rename/copy carries its source path as the next entry
                i += 1
        i += 1
    return n


def _private_listed(top: Path, ws_root: Path, listed: list[str], root: str | None) -> list[str]:
    """The repository-relative `listed` paths the privacy boundary calls private as the commit guard
    reads it (no Git ignore rules: these are paths Git does not ignore; `.vivary/` is committed config;
    `vivary.guardAllow` lifts a sensitive name). Raises VivaryError when it cannot decide."""
    from vivary_git.gates.guard import ALLOW_KEY
    from vivary_git.privacy import decide_scoped, scopes_on_disk

    if not listed:
        return []
    prefix = ws_root.resolve().relative_to(top.resolve()).as_posix()
    also = [prefix] if root is not None and prefix != "." else []
    allowed = set(_text(_git(["config", "--get-all", ALLOW_KEY], top)[1]).splitlines())
    # The repository Git uses here (GIT_DIR may name it: a work tree set elsewhere), told to privacy, which
    # would otherwise look for one from the top and find another, or none.
    code, git_dir = _git(["rev-parse", "--absolute-git-dir"], ws_root)
    scopes = scopes_on_disk(top, listed, also=also)
    return [d.path for d in decide_scoped(top, listed, scopes, trees=(), gitignore=False,
                                          git_dir=Path(_text(git_dir)) if code == 0 else None)
            if d.private and not d.reason.startswith("floor: .vivary/**")
            and not (d.reason.startswith("sensitive name:") and d.path in allowed)]


def _privacy(ws_root: Path, top: Path, root: str | None, problems: list[Problem]) -> PrivacyInfo:
    if not ws_root.is_dir():
        return PrivacyInfo("unknown", [], [], "the workspace folder is not in the working tree")
    code, out = _git(["ls-files", "-z", "--full-name", "--cached", "--others", "--exclude-standard", "--", "."],
                     ws_root)
    if code != 0:
        problems.append(Problem("privacy", "error", "Git could not list the working tree, so privacy is unproven",
                                "git status   # shows what Git cannot read"))
        return PrivacyInfo("unknown", [], [], "git ls-files failed")
    # An untracked repository inside the work tree is listed as its folder, `emb/`: Git does not look
    # inside it, and `git add` would add it as one gitlink at `emb`, the path the guard would then decide.
    listed = sorted({os.fsdecode(p).removesuffix("/") for p in out.split(b"\0") if p})
    try:
        private = _private_listed(top, ws_root, listed, root)
    except VivaryError as err:
        problems.append(Problem("privacy", "error", f"privacy cannot be decided: {err}",
                                "fix what the message names, then run `git vivary doctor` again"))
        return PrivacyInfo("unknown", [], [], str(err))
    prefix = ws_root.resolve().relative_to(top.resolve()).as_posix()
    cut = 0 if prefix == "." else len(prefix) + 1
    leaks = [p[cut:] for p in private]
    unguarded: list[str] = []
    memory_configured = (ws_root / MEMORY_FILE).exists()
    if memory_configured or any((ws_root / p.split("/")[0]).exists() for p in _PROBES):
        stdin = b"".join(p.encode() + b"\0" for p in _PROBES)
        code, out = _git(["check-ignore", "--no-index", "-z", "--stdin"], ws_root, stdin)
        if code in (0, 1):
            ignored = {os.fsdecode(p) for p in out.split(b"\0") if p}
            unguarded = [p.removesuffix(_PROBE) for p in _PROBES if p not in ignored]
    if leaks:
        shown = ", ".join(leaks[:5]) + (f" and {len(leaks) - 5} more" if len(leaks) > 5 else "")
        problems.append(Problem(
            "privacy", "error", f"private file(s) not ignored by Git (tracked or would be added): {shown}",
            f"add {_GITIGNORE_LINES} to .gitignore (and any private_paths you configured), then "
            "`git rm --cached -- PATH` for any that are tracked (and rewrite history if they were pushed); "
            "`git vivary privacy explain PATH` names the rule",
        ))
    elif unguarded:
        problems.append(Problem(
            "privacy", "warning", f"Git would not ignore new private files at: {', '.join(unguarded)}",
            f"add {_GITIGNORE_LINES} to .gitignore",
        ))
    return PrivacyInfo("failed" if leaks else "ok", leaks, unguarded)


def _hooks(start: Path, top: Path, problems: list[Problem]) -> HooksInfo:
    from vivary_git.gates.install import GATES, _is_ours, pinned_roots, runs_vivary, unchecked_hint

    code, out = _git(["rev-parse", "--path-format=absolute", "--git-path", "hooks"], start)
    hooks_dir = Path(_text(out)) if code == 0 else None
    ours: list[str] = []
    framework = False
    if hooks_dir is not None and hooks_dir.is_dir():
        for entry in sorted(hooks_dir.iterdir()):
            if entry.name.endswith(".sample") or not entry.is_file():
                continue
            if runs_vivary(entry):
                ours.append(entry.name)
            elif entry.name == "pre-commit" and "pre-commit.com" in _head(entry):
                framework = True
    config = top / ".pre-commit-config.yaml"
    in_config = config.is_file() and "vivary-check" in _head(config, 1 << 20)
    installed = bool(ours) or (in_config and framework)
    gates = [hooks_dir / g for g in GATES if g in ours and hooks_dir is not None and _is_ours(hooks_dir / g)]
    hint = unchecked_hint(top, pinned_roots(_head(gates[0]))) if gates else None
    if hint is not None:  # the hook checks the top (or other folders), and a workspace below has its own rules
        problems.append(Problem("hooks", "warning", hint[0],
                                f"{hint[1]}   # checks that workspace before every commit"))
    if not installed:
        fix = ("pre-commit install   # .pre-commit-config.yaml names vivary-check, but the framework's hook is not "
               "installed") if in_config else "git vivary hooks install   # check the graph before every commit"
        problems.append(Problem("hooks", "warning", "no Git hook runs vivary, so a broken graph can be committed", fix))
    return HooksInfo(installed, str(hooks_dir) if hooks_dir else None, ours, in_config)


def _head(path: Path, limit: int = 64 * 1024) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def _exact_refspecs(start: Path, problems: list[Problem]) -> None:
    """A warning for each remote whose fetch refspecs an earlier `sync setup` wrote as exact refs
    (`+refs/vivary/cache:refs/vivary-fetch/R/cache`): Git's own `git fetch R` and `git pull` stop at such a refspec
    whenever R lacks that ref (`fatal: couldn't find remote ref refs/notes/vivary`). Read from the config only: no
    remote is asked."""
    from vivary_git.refnames import NOTES_REF, STAGING_PREFIX

    code, out = _git(["config", "--get-regexp", r"^remote\..*\.fetch$"], start)
    if code != 0:
        return
    ends = {f"+{CACHE_REF}": "/cache", f"+{NOTES_REF}": "/notes"}  # where `sync setup` put each, exact
    for line in _text(out).splitlines():
        key, _, spec = line.partition(" ")
        source, sep, dest = spec.partition(":")
        end = ends.get(source)
        if not sep or end is None or not (dest.startswith(STAGING_PREFIX) and dest.endswith(end)):
            continue
        remote = key[len("remote."):-len(".fetch")]
        problems.append(Problem(
            "cache", "warning", f"remote.{remote}.fetch holds {spec}, written by an earlier "
            f"`git vivary sync setup`: `git fetch {remote}` and `git pull` stop at it whenever "
            f"{remote} has no {source[1:]}",
            f"git vivary sync setup {remote}   # replaces it with a pattern that fetches nothing when nothing "
            "matches"))


def _cache(start: Path, problems: list[Problem]) -> CacheInfo:
    """Whether `refs/vivary/cache` exists and the commit it names, read as every command reads it (store/read.py):
    the ref itself, never peeled (`REF^{commit}` took a tag of a commit for a cache), and the manifest it holds.
    Damage is a problem naming `cache drop`; `commit` is then none."""
    from vivary_git.store.format import StoreDamaged
    from vivary_git.store.read import Snapshot, _tip, written_by

    try:
        repo = git.try_open(start)
    except GitError:
        repo = None  # the repo section says why
    if repo is None:
        return CacheInfo(CACHE_REF, False, None)
    try:
        snap = Snapshot.load(repo, CACHE_REF)
    except StoreDamaged as err:
        problems.append(Problem("cache", "error", f"{CACHE_REF} is damaged: {err.what}; every command ignores it "
                                "and records nothing on it",
                                "git vivary cache drop   # the next check/graph/query run records a fresh cache"))
        return CacheInfo(CACHE_REF, True, None)
    tip = snap.commit if snap is not None else _tip(repo, CACHE_REF)
    other = written_by(repo, CACHE_REF) if snap is None and tip is not None else None
    if other is not None:  # another vivary-git's cache: no damage, but said, with who wrote it
        fix = ("upgrade vivary-git to the version that wrote it   # this one computes as if there were no cache"
               if other.newer() else "git vivary check --rev HEAD   # records this version's cache in its place")
        problems.append(Problem("cache", "warning", f"{CACHE_REF} was {other.describe()}; {other.fate()}", fix))
    return CacheInfo(CACHE_REF, tip is not None, tip)


def _memory(ws_root: Path, common_dir: Path, privacy: PrivacyInfo, ws: Workspace | None,
            problems: list[Problem]) -> MemoryInfo:
    from vivary_git.errors import ConfigError
    from vivary_git.memory.config import parse_memory_config

    path = ws_root / MEMORY_FILE
    display = MEMORY_FILE
    if not path.exists() and not path.is_symlink():
        return _NO_MEMORY

    def bad(detail: str, fix: str) -> MemoryInfo:
        problems.append(Problem("memory", "error", detail, fix))
        return MemoryInfo(enabled=False, provider="unknown", mode="unknown", status="misconfigured", config=display,
                          privacy="unknown", detail=detail)

    if path.is_dir() and not path.is_symlink():  # a submodule's checkout, a folder: no config file, memory is off
        return _in_the_way(ws_root)
    if path.is_symlink() or not path.is_file():
        return bad(f"{display} is not a regular file", f"replace {display} with the file itself")
    code, _ = _git(["check-ignore", "-q", "--", MEMORY_FILE], ws_root)
    if code == 0:
        return bad(f"{display} exists but Git ignores it, so no tree carries the memory policy",
                   f"add `!{MEMORY_FILE}` to .gitignore after the rule that ignores it, or `git add -f {display}`")
    try:
        cfg = parse_memory_config(path.read_bytes(), display)
    except ConfigError as err:
        return bad(str(err), f"fix {display} as the message says (docs/memory.md)")
    except OSError as err:
        return bad(f"{display} cannot be read ({err.strerror})", f"fix the permissions of {display}")
    section = cfg.memory

    def info(status: MemoryStatus, detail: str, fix: str = "") -> MemoryInfo:
        if status not in MEMORY_OK:
            problems.append(Problem("memory", "error", detail, fix))
        shown = {"disabled": "not-indexed", "privacy-failed": "failed"}.get(status, "private-paths-filtered")
        return MemoryInfo(enabled=cfg.enabled, provider=section.provider, mode=section.mode, status=status,
                          config=display, privacy=shown, detail=detail)

    if not cfg.enabled:
        from vivary_git.scaffold.plan import MEMORY_DOC, VAULT_MEMORY_DOC

        guide = VAULT_MEMORY_DOC if (ws_root / VAULT_MEMORY_DOC).is_file() else MEMORY_DOC  # where init wrote it
        return info("disabled", "" if section.provider == "none" else (
            f"{section.provider} policy is written but disabled; {guide} explains activation, install and "
            "index as separate steps"))
    # Say what `index` and `recall` do meanwhile, and no more: a leak is Git's (the files get committed and
    # pushed); the privacy boundary still holds every private file back from the index.
    if privacy.status == "unknown":
        return info("privacy-failed", "privacy could not be checked; `git vivary index` and `recall` refuse "
                    "wherever privacy cannot be decided (they fail closed)", "fix the privacy problem above first")
    if privacy.status != "ok":
        return info("privacy-failed", "private workspace paths are not ignored by Git, so Git commits and pushes "
                    "them; `git vivary index` still holds every private file back (privacy boundary)",
                    "fix the privacy problem above: memory is no reason to keep private files in Git")
    if section.provider == "cognee":
        return _cognee_memory(info, cfg, ws_root, ws)
    return _auto_index(_local_memory(info, cfg, ws_root, common_dir, ws, problems), cfg, ws_root, ws)


def _in_the_way(ws_root: Path) -> MemoryInfo:
    """Memory with a submodule or a folder where the workspace's memory.toml would be: off, said as `recall` says
    it (`MemoryConfig.in_the_way_said`). Which of the two, from what the index holds there."""
    from vivary_git.memory.config import MemoryConfig, MemorySection

    code, out = _git(["rev-parse", "--show-prefix"], ws_root)
    name = (_text(out) if code == 0 else "") + MEMORY_FILE
    code, out = _git(["ls-files", "-s", "--", MEMORY_FILE], ws_root)
    what = "a submodule" if code == 0 and out.startswith(b"160000 ") else "a folder"
    said = MemoryConfig(memory=MemorySection(), in_the_way=what, path=name).in_the_way_said()
    return msgspec.structs.replace(_NO_MEMORY, config=MEMORY_FILE, detail=said)


def _cognee_memory(info: Callable[..., MemoryInfo], cfg: MemoryConfig, ws_root: Path,
                   ws: Workspace | None) -> MemoryInfo:
    # memory/cognee.py imports Cognee only to run it; its status asks find_spec and reads the manifest.
    from vivary_git.memory.cognee import status

    st = status(cfg, ws_root, lambda: _current_fingerprint(cfg, ws), ws=ws)
    if st.status == "stale" and not st.indexed:
        gate = "" if st.gates_open else "; index and recall refuse until allow_network = true (a human gate)"
        return info("configured", f"Cognee is installed; no index yet: `git vivary index --yes` builds it{gate}")
    if st.status == "healthy" and not st.gates_open:
        return info("healthy", f"{st.detail}; recall refuses until allow_network = true")
    return info(st.status, st.detail, st.fix)


def _module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _local_memory(info: Callable[..., MemoryInfo], cfg: MemoryConfig, ws_root: Path, common_dir: Path,
                  ws: Workspace | None, problems: list[Problem]) -> MemoryInfo:
    from vivary_git.memory.local.embed import INSTALL_HINT, embedder_status

    status = embedder_status(cfg.memory.local.model)
    if status == "available" and not _module_present("hnswlib"):
        status = f"unavailable: missing hnswlib; {INSTALL_HINT}"
    if status != "available":
        detail = status.removeprefix("unavailable: ")
        return info("unavailable", f"local memory is enabled but cannot run: {detail}",
                    f"{INSTALL_HINT}   # a human gate")
    try:
        manifest = _find_manifest(cfg, ws_root, common_dir, ws)
    except (RefusedError, GitError) as err:
        return info("misconfigured", str(err), "fix the state folder as the detail says (docs/memory.md#where-the-"
                    "state-lives); then `git vivary index --yes`")
    if manifest is None:
        return info("configured", "local memory is ready; no index yet: `git vivary index --yes` builds it (approval)")
    where, recorded = manifest
    left_out: list[str] = []
    current = _current_fingerprint(cfg, ws, left_out)
    if left_out:
        problems.append(Problem("memory", "warning", f"{len(left_out)} public note(s) cannot be in the index: "
                                + "; ".join(left_out),
                                "give each note its own id (`git vivary check` lists every E130); then "
                                "`git vivary index --yes`"))
    if current is None:
        return info("configured", f"index manifest at {where}; no commit to compare it with yet")
    if recorded != current:
        return info("stale", f"the index ({where}) was built from other notes than the workspace holds now",
                    "git vivary index --yes   # rebuild it; recall refuses a stale index")
    return info("healthy", f"index matches the current snapshot ({current[:12]})")


def _auto_index(found: MemoryInfo, cfg: MemoryConfig, ws_root: Path, ws: Workspace | None) -> MemoryInfo:
    """The memory line, saying whether the hooks' auto-index runs here when the file asks for it: the committed
    `auto_index = true` is the team's wish, the user's own `vivary.autoIndex` the approval
    (memory/local/autoindex.py), so a clone that only has the first indexes nothing in the background."""
    if not cfg.memory.local.auto_index:
        return found
    from vivary_git.memory.local.autoindex import approval, verdict

    try:
        repo = ws.source.repo if ws is not None else git.try_open(ws_root)
    except GitError:
        repo = None
    got = approval(repo)
    said = f"{'auto-index' if got.approved else 'auto_index = true,'} {verdict(got)}"
    return msgspec.structs.replace(found, detail=f"{found.detail}; {said}" if found.detail else said)


def _find_manifest(cfg: MemoryConfig, ws_root: Path, common_dir: Path,
                   ws: Workspace | None) -> tuple[str, str] | None:
    """(where, fingerprint) of the manifest `git vivary index --yes` wrote for this workspace (memory/provider.py's
    `state_store`: `<state_path>/<dataset>/` when `[memory.local] state_path` is set, read only as this machine
    wrote it, else `.git/vivary/memory/<dataset>/`); None when there is none. `RefusedError` when the state folder
    may not be used, `GitError` when a file is in the place of a folder on the way to it."""
    from vivary_git.memory.snapshot import dataset_name

    dataset = dataset_name(ws_root, cfg.dataset_label)
    data: bytes | None = None
    if cfg.memory.local.state_path:
        if ws is None:
            return None  # no workspace to decide the folder with: nothing in it is read
        from vivary_git.memory.provider import state_store

        store = state_store(ws, cfg, dataset)
        candidate = store.directory / "manifest.json"
        data = store.get("manifest.json")
        if data is None:
            return (str(candidate), "") if candidate.exists() or candidate.is_symlink() else None
    else:
        from vivary_git.memory.state import git_dir_store

        candidate = git_dir_store(common_dir / "vivary", dataset).directory / "manifest.json"
        if candidate.is_symlink() or not candidate.is_file():
            return None
        try:
            if candidate.stat().st_size > _MANIFEST_MAX_BYTES:
                return str(candidate), ""
            data = candidate.read_bytes()
        except OSError:
            return str(candidate), ""  # unreadable counts as stale: recall would refuse it too
    try:
        found = json.loads(data)
    except (ValueError, RecursionError):
        return str(candidate), ""
    value = found.get("fingerprint") if isinstance(found, dict) else None
    return str(candidate), value if isinstance(value, str) else ""


def _current_fingerprint(cfg: MemoryConfig, ws: Workspace | None, left_out: list[str] | None = None) -> str | None:
    """The fingerprint of the snapshot `index` would build now; `left_out` gets `PATH: why` for each public note
    the snapshot cannot admit (a duplicate id)."""
    if ws is None:
        return None
    from vivary_git.memory.snapshot import build_snapshot

    try:
        snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model,
                              dataset_label=cfg.dataset_label)
    except VivaryError:
        return ""  # no snapshot can be built: whatever the manifest records, it does not match
    if left_out is not None:
        left_out.extend(f"{o.path}: {o.reason}" for o in snap.left_out)
    return snap.fingerprint
