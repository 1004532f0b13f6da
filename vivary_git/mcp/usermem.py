"""The user's own memory repository, searched beside the workspace: one memory for one person across repositories.

Where it is: `git config --global vivary.userMemory PATH` (or the system config), read from those scopes only.
A repository's own `.git/config`, a committed file or `git -c` never name it: a cloned repository is a
stranger's input, and a memory repository it could name would receive what the agent remembers about the
user (docs/security.md). PATH is the top of a Git work tree (`~` is expanded); anything else is said in
`status` and once on stderr when the server starts, and the workspace is served as before.

The repository is served by a second `MemoryService` over its own tree, so everything it answers is decided
by its own rules: its own snapshot, `.gitignore`, private floor and `.vivary/memory.toml` (the one privacy
function, `privacy.decide_scoped`, run in that repository), its own search index and mode (hybrid or keyword),
its own probe, secret scan and commits. Nothing crosses from one repository into the other: a user-scope
`add` is a commit in the user repository only, and source anchors (a workspace file, folder or page) are
refused there.

Ids: a user-scope node's id is `user:` and its id in the user repository (`user:memories/tabs-over-spaces`),
everywhere it is named in an answer (hits, packets, edges, neighbours); `read` of such an id reads it there.
Search merges the two ranked lists by rank: the first of each, then the second of each, and so on, the
workspace's first on a tie (reciprocal-rank fusion with equal weights); each hit keeps its own repository's
score, since two indexes' scores are not comparable.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import msgspec

from vivary_git import git
from vivary_git.errors import GitError, RefusedError, UsageError, VivaryError
from vivary_git.memory.writes.remember import Remembered

__all__ = ["HOW", "KEY", "PREFIX", "SCOPES", "Service", "UserMemory", "UserRemembered", "UserStatus", "Where",
           "locate", "merge"]

KEY = "vivary.userMemory"
PREFIX = "user:"
SCOPES = ("all", "workspace", "user")
HOW = f"git config --global {KEY} PATH (a Git repository of your own)"
_HOOK_VARS = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY")


class Service(Protocol):
    """What the user memory asks of its `MemoryService` (this module imports none of mcp/: the service makes
    the user memory, and hands it a way to open one)."""

    def state(self) -> Any: ...
    def close(self) -> None: ...
    def status(self) -> Any: ...
    def read(self, id: str, *, include_content: bool = False, neighbors: int = 1) -> Any: ...
    def add(self, text: str, *, title: str | None = None, tags: Any = (), durability: str | None = None,
            links: Any = (), force: bool = False, supersede: bool = False, expires: str | None = None,
            scope: str = "workspace") -> Remembered: ...
    def beside(self, query: str, k: int, types: list[str], paths: list[str], edges: list[str], mode: str,
               include_archived: bool, window: Any) -> tuple[list[Any], str, str, int]: ...
    def fill_hit(self, hit: Any, nid: str, include_content: bool, include_neighbors: int) -> None: ...
    def hits_seen_here(self, hits: list[Any]) -> None: ...


class Where(msgspec.Struct, frozen=True, omit_defaults=True):
    """Where the user memory is: `path` (the configured value) and, when it cannot be used, why."""

    configured: bool
    path: str | None = None
    problem: str | None = None


class UserStatus(msgspec.Struct, frozen=True, omit_defaults=True):
    """`status`'s `user_memory`: whether a user memory is configured and used, and what it holds."""

    configured: bool
    ok: bool
    path: str | None = None
    problem: str | None = None
    how: str | None = None  # how to configure one, when none is
    memories: int | None = None
    public: int | None = None
    private: int | None = None
    tree: str | None = None
    search: str | None = None  # "hybrid" | "text": the user repository's own search mode


class UserRemembered(Remembered, frozen=True, omit_defaults=True):
    """A user-scope write's answer: `Remembered` with its ids in the user scope."""

    scope: str | None = None  # "user" (a default would be left out of the answer)


def _config_value() -> tuple[str | None, str | None]:
    """(`vivary.userMemory` from the user's global config, else the system config; why it cannot be read).
    `git config` runs in an empty folder with no repository above it reachable (GIT_CEILING_DIRECTORIES), with
    the hook's repository variables and `GIT_CONFIG` dropped: no repository's config is read, and no
    `includeIf` that depends on one matches."""
    env = git.env_for_other_repo()
    for k in (*_HOOK_VARS, "GIT_CONFIG", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"):
        env.pop(k, None)
    scopes = ["--global"]
    if env.get("GIT_CONFIG_NOSYSTEM", "").strip().lower() not in ("1", "true", "yes", "on"):
        scopes.append("--system")
    with tempfile.TemporaryDirectory(prefix="vivary-usermem-") as tmp:
        env["GIT_CEILING_DIRECTORIES"] = str(Path(tmp).parent)
        for scope in scopes:
            try:
                proc = git.run(["config", scope, "--includes", "--type=path", "--get", KEY], cwd=tmp, env=env,
                               check=False)
            except GitError as err:
                return None, f"cannot read {KEY}: {err}"
            if proc.returncode == 0:
                value = proc.stdout.decode("utf-8", "replace").strip()
                return (value, None) if value else (None, None)
            if proc.returncode != 1:  # 1: not set in this scope
                said = proc.stderr.decode("utf-8", "replace").strip().splitlines()
                return None, f"cannot read {KEY} ({scope[2:]} config): {said[0] if said else proc.returncode}"
    return None, None


def locate(workspace: git.Repo | None = None) -> Where:
    """The user memory the user's own config names, checked: the top of a Git work tree, not `workspace`."""
    raw, problem = _config_value()
    if problem is not None:
        return Where(configured=True, problem=problem)
    if raw is None:
        return Where(configured=False)
    shown = raw if len(raw) <= 300 else raw[:300] + "…"
    path = Path(raw)
    if not path.is_absolute():
        return Where(True, shown, f"{KEY} = {shown!r} is not an absolute path; set it to one: {HOW}")
    if not path.is_dir():
        what = "does not exist" if not path.exists() else "is not a folder"
        return Where(True, shown, f"{KEY} = {shown!r} {what}; create it (git init) or set another: {HOW}")
    if any(os.environ.get(k) for k in _HOOK_VARS):
        return Where(True, shown, f"{KEY} is not used while GIT_DIR or GIT_WORK_TREE is set (inside a Git hook): "
                                  "every git run would go to that repository")
    try:
        repo = git.try_open(path)
    except (GitError, OSError, ValueError):
        repo = None
    top = path.resolve()
    if repo is None or repo.workdir is None or repo.workdir != top:
        return Where(True, shown, f"{KEY} = {shown!r} is not the top of a Git work tree; run `git init` there, or "
                                  f"set another: {HOW}")
    if workspace is not None and repo.common_dir == workspace.common_dir:
        return Where(True, shown, f"{KEY} = {shown!r} is this workspace's own repository: its memories are the "
                                  "workspace's (scope workspace)")
    return Where(True, shown)


def user_id(nid: str) -> str:
    return PREFIX + nid


def strip(ref: str) -> str:
    return ref[len(PREFIX):] if ref.startswith(PREFIX) else ref


class UserMemory:
    """The user memory for one workspace's server: located once, served by its own `MemoryService`."""

    def __init__(self, workspace: git.Repo | None, opener: Callable[[str], Service], *, enabled: bool = True) -> None:
        self.where = locate(workspace) if enabled else Where(configured=False)
        self._opener = opener  # PATH -> the service of the repository there, with no user memory of its own
        self._lock = threading.Lock()
        self._service: Service | None = None
        self._problem: str | None = self.where.problem

    @property
    def problem(self) -> str | None:
        """Why a configured user memory is not used (None: it is, or none is configured)."""
        return self._problem

    @property
    def on(self) -> bool:
        return self.where.configured and self._problem is None

    def owns(self, ref: str) -> bool:
        """Whether `ref` names a node of the user memory (read there, or refused with why it is off)."""
        return self.where.configured and ref.startswith(PREFIX)

    def announce(self) -> None:
        """Open the user memory at server start; one line on stderr when a configured one cannot be used."""
        if self.where.configured and self._problem is None:
            with contextlib.suppress(UsageError):
                self.service()
        if self.where.configured and self._problem is not None:
            from vivary_git.escape import text as shown

            print(f"vivary mcp: user memory is off: {shown(self._problem)}", file=sys.stderr, flush=True)

    def service(self) -> Service:
        """The user repository's service (opened on first use); a usage error saying why when there is none."""
        if not self.where.configured:
            raise UsageError(f"no user memory is configured: {HOW}")
        with self._lock:
            if self._service is None and self._problem is None:
                assert self.where.path is not None
                service = self._opener(self.where.path)
                try:
                    service.state()
                except VivaryError as err:
                    service.close()
                    self._problem = f"{KEY} = {self.where.path!r} cannot be read: {err}"
                else:
                    self._service = service
            if self._service is None:
                raise UsageError(f"the user memory is off: {self._problem}")
            return self._service

    def close(self) -> None:
        if self._service is not None:
            self._service.close()
            self._service = None

    def status(self) -> UserStatus:
        if not self.where.configured:
            return UserStatus(configured=False, ok=False, how=HOW)
        try:
            service = self.service()
        except UsageError:
            return UserStatus(configured=True, ok=False, path=self.where.path, problem=self._problem)
        got = service.status()
        return UserStatus(configured=True, ok=True, path=self.where.path, memories=got.nodes["memories"],
                          public=got.nodes["public"], private=got.nodes["private"], tree=got.tree["id"],
                          search=got.memory["search"])

    # -- the read side -------------------------------------------------------------------------------------

    def ranked(self, query: str, k: int, types: list[str], paths: list[str], edges: list[str], mode: str,
               include_archived: bool, window: Any) -> tuple[list[Any], str, str, int]:
        """The user repository's top `k` hits (ids in the user scope), its mode and why, and how many of its
        memories were left out (archived, expired)."""
        hits, used, why, left_out = self.service().beside(query, k, types, paths, edges, mode, include_archived,
                                                          window)
        return [_hit(h) for h in hits], used, why, left_out

    def seen(self, hits: list[Any]) -> None:
        """Log the user-scope memories a search returned in the user memory's own access log (docs/dream.md):
        never in the workspace's, which holds only its own."""
        if hits:
            self.service().hits_seen_here([msgspec.structs.replace(h, id=strip(h.id)) for h in hits])

    def fill(self, hit: Any, include_content: bool, include_neighbors: int) -> None:
        """A user-scope hit's body and neighbours, from the user repository."""
        self.service().fill_hit(hit, strip(hit.id), include_content, include_neighbors)
        if hit.neighbors:
            hit.neighbors = [msgspec.structs.replace(n, id=user_id(n.id)) for n in hit.neighbors]

    def read(self, ref: str, *, include_content: bool, neighbors: int) -> Any:
        got = self.service().read(strip(ref), include_content=include_content, neighbors=neighbors)
        return msgspec.structs.replace(
            got, id=user_id(got.id), scope="user",
            outbound=[msgspec.structs.replace(e, to=user_id(e.to)) for e in got.outbound],
            inbound=[msgspec.structs.replace(e, source=user_id(e.source)) for e in got.inbound],
            neighbors=[msgspec.structs.replace(n, id=user_id(n.id)) for n in got.neighbors])

    # -- the write side ------------------------------------------------------------------------------------

    def add(self, text: str, *, title: str | None, tags: Any, durability: str | None, links: Any, force: bool,
            supersede: bool, expires: str | None = None) -> UserRemembered:
        """`add` in the user repository: its probe, its secret scan, one commit there with the usual trailers.
        Links name user-scope ids (`user:` optional); a workspace id there is refused as the user repository
        would refuse any id it does not have."""
        got = self.service().add(text, title=title, tags=tags, durability=durability,
                                 links=[_user_link(link) for link in links], force=force, supersede=supersede,
                                 expires=expires)
        fields = {f: getattr(got, f) for f in got.__struct_fields__}
        if got.id is not None:
            fields["id"] = user_id(got.id)
        if got.matches:
            fields["matches"] = [msgspec.structs.replace(m, id=user_id(m.id)) for m in got.matches]
        if got.duplicate is not None:
            fields["duplicate"] = msgspec.structs.replace(got.duplicate, id=user_id(got.duplicate.id))
        if got.archived:
            fields["archived"] = [user_id(a) for a in got.archived]
        if got.links:
            fields["links"] = [msgspec.structs.replace(e, source=user_id(e.source), to=user_id(e.to))
                               for e in got.links]
        return UserRemembered(**fields, scope="user")


def _hit(h: Any) -> Any:
    """A user memory's search hit (mcp/reads.py: `SearchHit`) with its ids in the user scope."""
    return msgspec.structs.replace(h, id=user_id(h.id), scope="user",
                                   edges=[msgspec.structs.replace(e, source=user_id(e.source), to=user_id(e.to))
                                          for e in h.edges] if h.edges else None)


def merge(workspace: list[Any], user: list[Any]) -> list[Any]:
    """Two ranked lists as one, by rank: the first of each, then the second of each, ..., the workspace's first
    on a tie (reciprocal-rank fusion with equal weights). Scores stay each repository's own."""
    out: list[Any] = []
    for i in range(max(len(workspace), len(user))):
        out += workspace[i:i + 1] + user[i:i + 1]
    return out


def _user_link(link: str) -> str:
    field, sep, target = link.partition(":")
    return f"{field}{sep}{strip(target)}" if sep else link


def refuse_anchor() -> None:
    raise RefusedError("file, folder and url are remembered in the workspace only: a user-scope memory never "
                       "copies a workspace's files (add the text itself with scope user)")
