"""The MCP service's write side: `add` (with source anchors), `update`, `link`, `unlink`, `edit`, `retire`,
`forget`, `move`, `dream` and `onboard`.

Every write but `onboard` is one commit (memory/writes/, memory/dream/, memory/sources/); a read-only
profile refuses them all. After a write the warm state is patched with the note just committed and keyed
by the tree the working tree now has, so a memory is searchable right after `add`; a web page is fetched
outside the service's lock.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.errors import RefusedError, UsageError
from vivary_git.mcp.profiles import PROFILES
from vivary_git.mcp.warm import State, Warm
from vivary_git.memory.writes.remember import Remembered

if TYPE_CHECKING:
    from vivary_git.memory.sources.anchors import Anchored
    from vivary_git.memory.writes.lifecycle import Moved
    from vivary_git.memory.writes.probe import Probe


class Question(msgspec.Struct, frozen=True):
    key: str
    question: str
    answered: bool


class Onboarded(msgspec.Struct, frozen=True):
    """The `onboard` tool's answer: which questions are answered, never the answers (docs/hosts.md)."""

    ok: bool
    file: str  # the profile, relative to the workspace root: private, never committed, never indexed
    done: bool
    written: list[str]  # answers set or changed by this call
    removed: list[str]  # answers taken back by this call (they were there)
    answered: list[str]
    missing: list[str]
    excluded: bool  # USER.md was added to .git/info/exclude just now
    questions: list[Question]


class Writes(Warm):
    """The memory writes, each patching the warm state with what it committed."""

    def dream(self, *, inspect: str | None = None, task_id: str | None = None, title: str | None = None,
              content: str | None = None, use_heuristic: bool = False, force: bool = False) -> Any:
        """The `dream` tool: a run (when due, or `force`), a task resolved, or `inspect` status|runs|tasks."""
        from vivary_git.memory.dream import dream

        resolving = title is not None or content is not None or use_heuristic
        if inspect is not None and (task_id or resolving or force):
            raise UsageError("inspect lists: give it alone")
        if resolving and not task_id:
            raise UsageError("title/content or use_heuristic resolve a task: give task_id (dream with inspect=tasks)")
        if inspect is None:
            self._writable("dream")
        with self._lock:
            st = self.state()
            if inspect is not None:
                return dream.inspect(st.view, inspect)
            if task_id:
                answer = dream.resolve(st.view, task_id, title=title, content=content, use_heuristic=use_heuristic,
                                       source=self.source)
            else:
                answer = dream.run(st.view, force=force, source=self.source)
            if answer.resolution is not None or (answer.run is not None and answer.run.expire_commit):
                self._state = None  # several notes changed in one commit: read the tree again
            return answer

    def onboard(self, answers: Mapping[str, str] | None = None) -> Onboarded:
        """The first-start questions and which are answered; with `answers`, those written into the
        private USER.md profile as `git vivary onboard --answer` writes them (`hosts/onboard.py`)."""
        from vivary_git.hosts import onboard

        self._writable("onboard")
        checked = onboard.check_answers(answers or {}, what="answers key")
        with self._lock:
            root = self.state().view.ws.source.root
            report = onboard.record(root, checked) if checked else onboard.status(root)
            answered = set(report.answered)
            return Onboarded(ok=True, file=report.file, done=report.done, written=report.written,
                             removed=report.removed, answered=report.answered, missing=report.missing,
                             excluded=report.excluded,
                             questions=[Question(k, q, k in answered) for k, q in onboard.QUESTIONS.items()])

    def _fresh(self) -> State:
        """The state read anew from the tree: a patched state's graph is the one its search index was built on,
        without the links this process has written since, and a move must see every link to the memory."""
        if self._state is not None and (self._state.delta or self._state.gone):
            self._state = None
        return self.state()

    def _writable(self, tool: str) -> None:
        if tool not in PROFILES[self.profile]:
            raise RefusedError(f"`{tool}` is not available in the {self.profile} profile (read-only hosts can "
                               "search, read and ask for status)")

    def _probe_for(self, st: State) -> Probe:
        if self._probe is None:
            from vivary_git.memory.writes.probe_loader import probe_for

            self._probe = probe_for(st.view, lambda: self._model(st))  # the server's one model
        return self._probe

    def add(self, text: str, *, title: str | None = None, tags: Sequence[str] = (),
            durability: str | None = None, links: Sequence[str] = (), force: bool = False,
            supersede: bool = False, expires: str | None = None, scope: str = "workspace") -> Remembered:
        from vivary_git.memory.writes import remember

        self._writable("add")
        if scope not in ("workspace", "user"):
            raise UsageError(f"scope must be workspace or user (got {scope!r})")
        if scope == "user":  # a commit in the user's own memory repository, never here (mcp/usermem.py)
            return self.usermem().add(text, title=title, tags=tags, durability=durability, links=links, force=force,
                                      supersede=supersede, expires=expires)
        with self._lock:
            st = self.state()
            result = remember.add(st.view, text, title=title, tags=tags, durability=durability, links=links,
                                  force=force, supersede=supersede, source=self.source, probe=self._probe_for(st),
                                  expires=expires)
            if result.ok and result.commit is not None:
                self._after_write(st, result, add=[(e.field, e.to) for e in result.links or ()])
                for old in result.archived or ():
                    self._after_archive(st, result, old)
                self._written(st)
            return result

    def _after_archive(self, st: State, result: Remembered, old: str) -> None:
        """Patch the warm state with a memory an add superseded: archived in the add's own commit."""
        node = st.view.nodes[old]
        repo = self._repo
        assert repo is not None and result.commit is not None
        tree = repo.repo[result.commit].peel(repo.pygit2.Tree)
        blob = str(tree[st.view.repo_path(node.path)].id)
        self._after_write(st, Remembered(ok=True, op="update", changed=True, id=node.id, path=node.path,
                                         commit=result.commit, ref=result.ref, blob=blob))

    def update(self, id: str, *, text: str | None = None, tags: Sequence[str] | None = None,
               durability: str | None = None, title: str | None = None) -> Remembered:
        from vivary_git.memory.writes import remember

        self._writable("update")
        with self._lock:
            st = self.state()
            result = remember.update(st.view, id, text=text, tags=tags, durability=durability, title=title,
                                     source=self.source)
            if result.commit is not None:
                self._after_write(st, result)
                self._written(st)
            return result

    def edit(self, id: str, *, append: str | None = None, heading: str | None = None, replace: str | None = None,
             with_text: str | None = None, expires: str | None = None, durability: str | None = None,
             tags: Sequence[str] | None = None) -> Remembered:
        """`lifecycle.edit`: append (to a heading's section), replace a passage, set expires, durability, tags."""
        from vivary_git.memory.writes import lifecycle

        self._writable("edit")
        with self._lock:
            st = self.state()
            result = lifecycle.edit(st.view, id, append=append, heading=heading, replace=replace, with_text=with_text,
                                    expires=expires, durability=durability, tags=tags, source=self.source)
            if result.commit is not None:
                self._after_write(st, result)
                self._written(st)
            return result

    def retire(self, id: str, *, reason: str) -> Remembered:
        """`lifecycle.retire`: archived with a reason, hidden from search, kept with its history."""
        from vivary_git.memory.writes import lifecycle

        self._writable("retire")
        with self._lock:
            st = self.state()
            result = lifecycle.retire(st.view, id, reason=reason, source=self.source)
            if result.commit is not None:
                self._after_write(st, result)
                self._written(st)
            return result

    def forget(self, id: str, *, reason: str) -> Remembered:
        """`lifecycle.forget`: the memory's note deleted in a commit."""
        from vivary_git.memory.writes import lifecycle

        self._writable("forget")
        with self._lock:
            result = lifecycle.forget(self._fresh().view, id, reason=reason, source=self.source)
            if result.changed:
                self._state = None  # a note gone: read the tree again
                self._written(self.state())
            return result

    def move(self, id: str, to: str) -> Moved:
        """`lifecycle.move`: renamed or moved in the memory folder, links to it rewritten in other memories (in
        the user's notes only when their `rewrite_user_links` setting says so: an agent cannot ask for it)."""
        from vivary_git.memory.writes import lifecycle

        self._writable("move")
        with self._lock:
            result = lifecycle.move(self._fresh().view, id, to, source=self.source)
            if result.changed:
                self._state = None  # several notes changed in one commit: read the tree again
                self._written(self.state())
            return result

    def link(self, source: str, field: str, target: str) -> Remembered:
        return self._relink("link", source, field, target)

    def unlink(self, source: str, field: str, target: str) -> Remembered:
        return self._relink("unlink", source, field, target)

    def _relink(self, tool: str, source: str, field: str, target: str) -> Remembered:
        from vivary_git.memory.writes import remember

        self._writable(tool)
        with self._lock:
            st = self.state()
            fn = remember.link if tool == "link" else remember.unlink
            result = fn(st.view, source, field, target, source=self.source)
            if result.commit is not None and result.edge is not None:
                edge = (result.edge.field, result.edge.to)
                self._after_write(st, result, add=[edge] if tool == "link" else [],
                                  remove=[edge] if tool == "unlink" else [])
                self._written(st)
            return result

    def anchor(self, *, file: str | None = None, folder: str | None = None, url: str | None = None,
               allow_network: bool = False, description: str | None = None, title: str | None = None,
               tags: Sequence[str] = (), durability: str | None = None, links: Sequence[str] = (),
               force: bool = False, scope: str = "workspace") -> Anchored:
        """`add` with a source anchor (memory/sources/anchors.py): a file or folder (paths relative to the
        repository top) or a web page (fetched only with the network allowed by both the workspace and
        `allow_network`). Never in the user memory: `scope` user is refused."""
        from vivary_git.memory.sources import anchors

        self._writable("add")
        if scope != "workspace":
            from vivary_git.mcp.usermem import refuse_anchor

            refuse_anchor()
        given = [k for k, v in (("file", file), ("folder", folder), ("url", url)) if v is not None]
        if len(given) != 1:
            raise UsageError("give one of file, folder or url to remember a source")
        common: dict[str, Any] = {"title": title, "description": description, "tags": tags,
                                  "durability": durability, "links": links, "force": force, "source": self.source}
        if url is not None:
            return self._anchor_url(url, allow_network, common)
        with self._lock:
            st = self.state()
            repo = st.view.ws.source.repo
            base = repo.workdir if repo is not None and repo.workdir is not None else self._cwd
            if file is not None:
                result = anchors.remember_file(st.view, file, base=base, **common)
            else:
                assert folder is not None
                result = anchors.remember_folder(st.view, folder, base=base, **common)
            self._after_anchor(st, result)
            return result

    def _anchor_url(self, url: str, allow_network: bool, common: dict[str, Any]) -> Anchored:
        """`anchors.remember_url` in its three steps, the fetch (up to `timeout` seconds) outside the lock:
        other calls are answered while a slow page arrives. The write decides again under the lock (the
        tree may have moved meanwhile)."""
        from vivary_git.memory.sources import anchors

        with self._lock:
            st = self.state()
            known = anchors.known_url(st.view, url, **{k: v for k, v in common.items() if k != "source"})
            limits = st.view.cfg.memory.sources
        if known is not None:
            return known
        page = anchors.fetch_page(limits, url, allow_network=allow_network)
        with self._lock:
            st = self.state()
            result = anchors.remember_page(st.view, url, page, **common)
            self._after_anchor(st, result)
            return result

    def _after_anchor(self, st: State, result: Anchored) -> None:
        if result.changed and result.commit is not None:
            self._after_write(st, Remembered(ok=True, op=result.op, changed=True, id=result.id, path=result.path,
                                             commit=result.commit, ref=result.ref, blob=result.blob),
                              add=[(e.field, e.to) for e in result.links or ()])
            self._written(st)

    def _after_write(self, st: State, result: Remembered, *, add: Sequence[tuple[str, str]] = (),
                     remove: Sequence[tuple[str, str]] = ()) -> None:
        """Patch the warm state with the note this process just committed, and key it by the tree the
        working tree now has (that tree with the one blob changed): a search right after sees the note,
        and any other change on disk still rebuilds everything."""
        from vivary_git import graph as graph_mod
        from vivary_git.memory.snapshot import MemoryNode
        from vivary_git.memory.writes.commits import _tree_with
        from vivary_git.models import Node

        view = st.view
        ws = view.ws
        assert result.path is not None and result.blob is not None and result.id is not None
        note = view.note_of(result.blob)
        config = ws.config
        facts = graph_mod.facts(result.path, result.blob, note, config, config.folder_types(), ws.root_name)
        node = Node(id=result.id, type=facts.type, path=result.path, title=facts.title, blob=result.blob)
        st.nodes[node.id] = node
        st.delta[node.id] = node
        view.put(MemoryNode(id=node.id, type=node.type, path=node.path, title=node.title, blob=node.blob, fields={}))
        out = st.out.setdefault(node.id, [])
        for field, to in add:
            if (field, to) not in out:
                out.append((field, to))
                st.inn.setdefault(to, []).append((node.id, field))
        for field, to in remove:
            if (field, to) in out:
                out.remove((field, to))
                with contextlib.suppress(ValueError):
                    st.inn.get(to, []).remove((node.id, field))
        out.sort()
        st.hybrid, st.hybrid_reason, st.current = None, None, False
        repo = self._repo
        key = list(st.key)
        if repo is not None and st.root_tree is not None and result.ref is not None:
            if self._checked_out(result.ref):
                path = view.repo_path(result.path)
                tree = _tree_with(repo, repo.repo[st.root_tree], path.split("/"), result.blob)
                assert tree is not None
                key[0] = st.root_tree = tree
                if self._worktree is not None:
                    # Tells the watcher these events are ours (when they are exactly that): no `git add`.
                    self._worktree.wrote(path, result.blob, tree)
            head = repo.repo.references.get("HEAD")
            key[1] = str(head.resolve().target) if head is not None else None
            if view.cfg.memory.remember.branch:
                key[2] = result.commit
        st.key = tuple(key)

    def _written(self, st: State) -> None:
        """Write-through: with the local memory on and an index to keep current, the tree this process has just
        written is read again (a current snapshot: privacy decided for the written paths) and the semantic index
        brought up to it (warm.py `_hybrid`), before the write answers: the next hybrid search finds the note."""
        from vivary_git.memory.local.provider import LocalMemory

        cfg = st.view.cfg
        if cfg.provider != "vivary-local" or cfg.memory.max_unindexed < 0:
            return
        if LocalMemory(st.view.ws, cfg).manifest() is None:
            return  # nothing indexed yet: `index --yes` is the user's to run first
        fresh = self._patched(st, st.key, reread=True)
        if fresh is None:
            return  # the state stays as patched: its searches say the index is stale, and why
        self._state = fresh
        self._hybrid(fresh)

    def _checked_out(self, ref: str) -> bool:
        repo = self._repo
        if repo is None:
            return False
        head = repo.repo.references.get("HEAD")
        return head is not None and head.target == ref
