"""The library entry point: open a workspace at one tree, get its graph, notes and findings.

    from vivary_git import open_workspace
    ws = open_workspace("path/to/repo", rev="HEAD")
    report = ws.check()
    for finding in report.findings: print(finding.render())

Each parse is a pure function of its blob id and each graph a pure function of its tree id, so both
are cached (locally under `.git/vivary/`) and a run does work in proportion to what changed.
"""

from __future__ import annotations

import functools
import hashlib
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from vivary_git import check as check_mod
from vivary_git import graph as graph_mod
from vivary_git.check import DateLookup
from vivary_git.config import Config, excluder
from vivary_git.localcache import ObjectCache, SegmentCache, parse_cache
from vivary_git.models import Finding, Note
from vivary_git.source import Entry, Source, is_note, open_source

if TYPE_CHECKING:
    from vivary_git import privacy, store
    from vivary_git.history import Dates
    from vivary_git.searchindex import SearchIndex


T = TypeVar("T")


class CheckReport(msgspec.Struct, frozen=True):
    """The contract's `check --json` shape. `clean` counts documents with no finding (as tropo)."""

    checked: int
    clean: int
    errors: int
    warnings: int
    findings: list[Finding]


class Stats(msgspec.Struct):
    parsed: int = 0  # blobs parsed this run
    reused: int = 0  # blobs whose parse came from a cache
    graph_cached: bool = False
    patched: bool = False  # the graph was the last one with only the edited notes re-derived


_LOAD_PARSE_CACHE_ABOVE = 300
_LAST = "last"  # graph cache entry naming the key of the last graph computed: the base for patching
_PATCH_AT_MOST = 500  # beyond this many edited notes, a whole build costs about the same
# A staged tree's patched graph is cached only once it is this many notes away from its base: below,
# re-deriving those notes on the next hook run costs less than writing the graph (6 MB at 10,000
# notes) on every one; above, the cached graph becomes the next base and patches stay small.
_CACHE_STAGED_AFTER = 64
_RULE_FILES = ("tropo.toml", "workspace.toml", "graph.toml", "memory.toml")


class _Rules:
    """The config in force for each folder (nested overlays tighten the root's), with what the
    per-document facts are keyed by."""

    def __init__(self, root: Config, overlays: Mapping[str, Config]) -> None:
        self._by_dir = sorted(((d + "/", c) for d, c in overlays.items()), key=lambda dc: len(dc[0]), reverse=True)
        self._prepared: dict[int, tuple[Config, dict[str, str], str]] = {}
        self._root = root

    def _prep(self, cfg: Config) -> tuple[Config, dict[str, str], str]:
        got = self._prepared.get(id(cfg))
        if got is None:
            got = self._prepared[id(cfg)] = (cfg, cfg.folder_types(), cfg.digest())
        return got

    def _for(self, path: str) -> tuple[Config, dict[str, str], str]:
        for prefix, cfg in self._by_dir:
            if path.startswith(prefix):
                return self._prep(cfg)
        return self._prep(self._root)

    def at(self, path: str) -> tuple[Config, dict[str, str]]:
        cfg, folder_types, _ = self._for(path)
        return cfg, folder_types

    def fact_key(self, path: str, blob: str, root_name: str) -> str:
        _, folder_types, digest = self._for(path)
        # issue 4: the workspace folder's name shapes a document's facts only through its id (a root-level
        # index file) or type (a type whose folder has that name); elsewhere it is left out of the key, so
        # clones in differently named folders share the facts in refs/vivary/cache.
        if root_name not in folder_types and (
                "/" in path or graph_mod.node_id(path, root_name) != graph_mod.slug(root_name)):
            root_name = ""
        raw = f"{blob}\0{digest}\0{root_name}\0{path}".encode("utf-8", "surrogateescape")
        return hashlib.sha1(raw, usedforsecurity=False).hexdigest()


class Workspace:
    """One workspace at one tree. Cheap to create; work happens on first use and is cached."""

    def __init__(self, source: Source, *, cache: bool = True, shared_cache: bool = True) -> None:
        self.source = source
        self.config = source.config
        self.cache_enabled = cache and source.caching
        vdir = source.repo.vivary_dir if (self.cache_enabled and source.repo is not None) else None
        self._vdir = vdir
        self._parse_cache = parse_cache(vdir)
        self._fact_cache = SegmentCache(vdir, "facts", graph_mod.Facts)
        self._graph_cache = ObjectCache(vdir, "graph")
        self._history_cache = ObjectCache(vdir, "history")
        self._check_cache = ObjectCache(vdir, "checks")  # findings and counts by graph key: `check` warm
        # findings alone by graph key, of trees checked without a graph: a staged tree (the next HEAD) or a
        # baseline, so the hook's `--new-since HEAD` finds HEAD's findings without re-deriving them
        self._findings_cache = ObjectCache(vdir, "findings", keep=8)
        self._graph: graph_mod.Graph | None = None
        self._notes: dict[str, Note] | None = None
        self.stats = Stats()
        # --- issue 4: the shared ref cache (store.py), second level behind the local hot cache ---
        self._ref: store.RefCache | None = None
        self._ref_checked = not shared_cache  # without the shared cache: neither read nor recorded
        self._from_ref: set[str] = set()  # parse (blob ids) and facts (keys) read from the ref this run
        self._computed_notes: dict[str, Note] = {}  # parsed in this process this run
        self._encoded_notes: dict[str, msgspec.Raw] = {}  # parsed by worker processes, still msgpack
        # local cache writes left until the graph is built (see _record_alongside): (cache, what to keep)
        self._deferred: list[tuple[SegmentCache[Any], Callable[[], Iterable[str]]]] | None = None
        self._patch_size = 0  # notes re-derived by the last patch

    @property
    def root_name(self) -> str:
        return self.source.root.name or "root"

    @property
    def tree_id(self) -> str | None:
        return self.source.tree_id

    def _graph_key(self) -> str | None:
        if not self.cache_enabled or self.source.tree_id is None:
            return None
        from vivary_git import __version__

        salt = f"{__version__}\0{self.root_name}"
        if {"created", "updated"} & set(self.config.derive):
            # W210 on created/updated also depends on history (and, for new files, on today's date).
            from vivary_git.history import head_commit, today

            repo = self.source.repo
            commit = head_commit(repo, self.source.label if self.source.kind == "rev" else None) if repo else None
            salt += f"\0{commit}\0{today()}"
        digest = hashlib.sha256(salt.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return f"{self.source.tree_id}-{digest}"

    def graph(self) -> graph_mod.Graph:
        if self._graph is not None:
            return self._graph
        key = self._graph_key()
        if key is not None:
            cached = self._graph_cache.get(key, msgspec.msgpack.Decoder(graph_mod.Graph))
            if cached is not None:
                self.stats.graph_cached = True
                self._graph = cached
                # issue 4: a tree first computed while it could not be recorded is recorded now
                self._record(lambda: _counts(cached), None)
                return cached
        dates = self._date_lookup()
        patched = self._patched(key) if dates is None else None
        if patched is not None:
            self._graph = patched
            if key is not None and (self.source.kind != "staged" or self._patch_size > _CACHE_STAGED_AFTER):
                # A staged tree is checked by the pre-commit hook and then committed or replaced: its
                # graph is cached only when the base it was patched from has grown far behind.
                self._cache_graph(key, patched)
            self._record(lambda: _counts(patched), None)
            return patched
        self._deferred = []
        try:
            keyed = self._all_facts(dates)
        finally:
            flushes, self._deferred = self._deferred, None
        record = self._record_alongside(keyed, flushes) if dates is None else None
        if record is None:
            _write(flushes)
        self._graph = graph_mod.build(
            self.root_name, self.source.tree_id, self.config, [(e.path, e.oid, f) for e, _, f in keyed],
            unreadable=self.source.problems,
        )
        self._graph.rules = self._rules_digest()
        graph = self._graph

        def cache_it() -> None:
            if key is not None:
                self._cache_graph(key, graph)

        if record is not None:
            record(graph, cache_it)  # the counts go to the recording child first, then this is cached
        else:
            cache_it()
        return graph

    def _cache_graph(self, key: str, g: graph_mod.Graph) -> None:
        self._graph_cache.put(key, g)
        self._graph_cache.put(_LAST, key)
        self._check_cache.put(key, _Checked(g.findings, _counts(g), g.root, g.tree, g.rules, bool(g.homes),
                                            [(n.id, n.path) for n in g.nodes]))

    def _cached_check(self) -> _Checked | None:
        """This tree's findings and counts without decoding its graph (a warm `check` needs no
        nodes or edges: ~0.04 s less at 10,000 notes)."""
        key = self._graph_key() if self._graph is None else None
        got = self._check_cache.get(key, msgspec.msgpack.Decoder(_Checked)) if key is not None else None
        if got is not None:
            self.stats.graph_cached = True
            self._record(lambda: got.counts, None)  # as graph() does for a cached graph
        return got

    def _rules_digest(self) -> str:
        return _rules_digest(self.config, self.source.overlays)

    def _patched(self, key: str | None) -> graph_mod.Graph | None:
        """The graph of this tree as the last graph computed here (often HEAD's, or the previous staged
        tree's) with only the edited notes re-derived: what keeps a pre-commit check proportional to
        the commit. None whenever patching could differ from a full build (see `graph.patch`)."""
        if key is None:
            return None
        last = self._graph_cache.get(_LAST, msgspec.msgpack.Decoder(str))
        if last is None or last == key:
            return None
        base = self._graph_cache.get(last, msgspec.msgpack.Decoder(graph_mod.Graph))
        if base is None or base.tree is None or base.root != self.root_name:
            return None
        # Only workspaces without nested overlays: then the rules are the root config's, known without
        # walking the tree, and any overlay appearing shows up in the diff below.
        if base.rules != _rules_digest(self.config, {}):
            return None
        changed = self._changed_facts(base.tree, _PATCH_AT_MOST)
        patched = graph_mod.patch(base, self.source.tree_id, changed) if changed is not None else None
        if patched is not None and changed is not None:
            self.stats.reused += patched.checked - len(changed)
            self.stats.patched = True
            self._patch_size = len(changed)
        return patched

    def _changed_facts(self, base_tree: str, at_most: int) -> dict[str, tuple[str, graph_mod.Facts]] | None:
        """(blob, facts) by path of the notes whose content differs from `base_tree`; None when more than
        `at_most` did, or anything but content edits changed (see `_changed_notes`)."""
        changed_entries = self._changed_notes(base_tree)
        if changed_entries is None or len(changed_entries) > at_most:
            return None
        rules = _Rules(self.config, {})  # no overlays: the callers checked, without walking the tree
        notes = self._notes_for([e.oid for e in changed_entries])
        changed: dict[str, tuple[str, graph_mod.Facts]] = {}
        for e in changed_entries:
            k = rules.fact_key(e.path, e.oid, self.root_name)
            f = self._fact_cache.get(k) if self._fact_cache.loaded else None
            if f is None:
                cfg, folder_types = rules.at(e.path)
                f = graph_mod.facts(e.path, e.oid, notes[e.oid], cfg, folder_types, self.root_name)
                self._fact_cache.put(k, f)
            changed[e.path] = (e.oid, f)
        self._fact_cache.flush()
        return changed

    def baseline_findings(self) -> list[Finding]:
        """This tree's findings (strictness not applied) as cheaply as they can be had, for comparing
        another tree with (`check --new-since`): its cached check, else the last cached graph's findings
        with the edited notes re-derived (nothing written), else its graph."""
        key = self._graph_key() if self._graph is None else None
        if key is not None:
            cached = self._check_cache.get(key, msgspec.msgpack.Decoder(_Checked))
            if cached is not None:
                return cached.findings
            found = self._findings_cache.get(key, msgspec.msgpack.Decoder(list[Finding]))
            if found is not None:
                return found
        patched = self._patched_check(any_kind=True)
        if patched is not None:
            if key is not None:
                self._findings_cache.put(key, patched[0])
            return patched[0]
        return self.graph().findings

    def _patched_check(self, *, any_kind: bool = False) -> tuple[list[Finding], int] | None:
        """`check --staged` after a few edits: the last cached graph's findings with the edited notes
        re-derived, from its cached findings and IDs alone (no graph decoded, no graph written: the
        staged tree is checked once, then committed or replaced). None when the full way is needed:
        the tree could be recorded in the ref (it is HEAD's), the base is missing or has other rules,
        more than `_CACHE_STAGED_AFTER` notes changed (then the graph is patched and cached), or
        patching could differ from a full build. With `any_kind`, for any source (a baseline's)."""
        if (self.source.kind != "staged" and not any_kind) or self._graph is not None \
                or self._date_lookup() is not None:
            return None
        key = self._graph_key()
        last = self._graph_cache.get(_LAST, msgspec.msgpack.Decoder(str)) if key is not None else None
        if key is None or last is None or last == key or (not any_kind and self._recordable_root() is not None):
            return None
        base = self._check_cache.get(last, msgspec.msgpack.Decoder(_Checked))
        if base is None or base.tree is None or base.root != self.root_name or base.homes \
                or base.rules != _rules_digest(self.config, {}) or len(base.nodes) != base.counts.checked:
            return None
        changed = self._changed_facts(base.tree, _CACHE_STAGED_AFTER)
        if changed is None:
            return None
        owner = dict.fromkeys(nid for nid, _ in base.nodes)
        findings = graph_mod.patch_findings(base.findings, {path: nid for nid, path in base.nodes}, owner,
                                            self.config, changed)
        if findings is None:
            return None
        self.stats.reused += base.counts.checked - len(changed)
        self.stats.patched = True
        return findings, base.counts.checked

    def _changed_notes(self, base_tree: str) -> list[Entry] | None:
        """Notes whose content differs between `base_tree` and this tree, from libgit2's tree diff
        (which skips unchanged subtrees: no walk of the whole tree). None when anything but content
        edits of existing, included notes changed: a note added, removed, renamed or made a link, or
        any config file (root, overlay, pack, graph.toml) touched."""
        repo, tree = self.source.repo, self.source.tree_id
        if repo is None or tree is None:
            return None
        pygit2 = repo.pygit2
        try:
            old, new = repo.repo[base_tree], repo.repo[tree]
            diff = old.diff_to_tree(new)  # type: ignore[attr-defined]  # old -> new
        except (KeyError, ValueError, pygit2.GitError):
            return None
        excluded = excluder(self.config)
        modified, regular = pygit2.enums.DeltaStatus.MODIFIED, (0o100644, 0o100755)
        out: list[Entry] = []
        for delta in diff.deltas:
            path = delta.new_file.path
            name = path.rsplit("/", 1)[-1]
            if name in _RULE_FILES or path.startswith((".tropo/", ".vivary/")):
                return None
            if not is_note(path) or excluded(path):
                continue
            if delta.status != modified or delta.new_file.mode not in regular or delta.old_file.mode not in regular:
                return None
            out.append(Entry(path, str(delta.new_file.id), delta.new_file.mode))
        return out

    def _all_facts(self, dates: DateLookup | None) -> list[tuple[Entry, str, graph_mod.Facts]]:
        """Every document's facts with its fact key: from the local cache, the shared ref cache, or computed."""
        entries = self.source.entries
        rules = _Rules(self.config, self.source.overlays)
        # Facts depend on history only when `derive` names created/updated; then they are not cached.
        fact_cache = self._fact_cache if dates is None else None
        keyed = [(e, rules.fact_key(e.path, e.oid, self.root_name)) for e in entries]
        found: dict[str, graph_mod.Facts] = {}
        missing: list[str] = []
        for _, k in keyed:
            f = fact_cache.get(k) if fact_cache is not None else None
            if f is None:
                missing.append(k)
            else:
                found[k] = f
        # issue 4: facts the local cache lacks may be in the shared ref cache.
        ref = self._refcache() if fact_cache is not None and missing else None
        shared: dict[str, graph_mod.Facts] = ref.get("facts", missing) if ref is not None else {}
        for k, f in shared.items():
            found[k] = f
            fact_cache.put(k, f)  # type: ignore[union-attr]  # a ref is only consulted with a fact cache
        self._from_ref.update(shared)
        self.stats.reused += len(keyed) - len(missing) + len(shared)
        todo = [(e, k) for e, k in keyed if k not in found]
        computed = self._derive([e for e, _ in todo], rules, dates)
        for (_, k), f in zip(todo, computed, strict=True):
            found[k] = f
            if fact_cache is not None:
                fact_cache.put(k, f)
        out: list[tuple[Entry, str, graph_mod.Facts]] = [(e, k, found[k]) for e, k in keyed]
        if fact_cache is not None:
            self._flush(fact_cache, lambda: (k for _, k in keyed))
        return out

    def _derive(self, entries: list[Entry], rules: _Rules, dates: DateLookup | None) -> list[graph_mod.Facts]:
        """The facts of these documents, whose facts no cache had. Blobs whose parse no cache has
        either are parsed and derived in worker processes when there are many (a cold run): the
        workers hand back each parse still encoded, for the caches, and its facts; this process
        never rebuilds those notes."""
        if not entries:
            return []
        root_name = self.root_name

        def derive(path: str, oid: str, note: Note) -> graph_mod.Facts:
            cfg, folder_types = rules.at(path)
            return graph_mod.facts(path, oid, note, cfg, folder_types, root_name, dates)

        notes = self._cached_notes([e.oid for e in entries])
        rest = [e for e in entries if e.oid not in notes]
        derived: dict[tuple[str, str], graph_mod.Facts] = {}
        repo = self.source.repo
        results = None
        if rest and repo is not None and dates is None:  # dates (history) are looked up lazily, in this process
            from vivary_git.parallel import derive_many

            items = [(e.oid, e.path) for e in rest]
            results = derive_many(str(repo.git_dir), items, self.source.read, derive, graph_mod.Facts)
        if results is not None:
            for (oid, note, f), e in zip(results, rest, strict=True):
                derived[e.oid, e.path] = f
                if isinstance(note, Note):
                    self._computed_notes[oid] = note
                    self._parse_cache.put(oid, note)
                elif oid not in self._encoded_notes:
                    self._encoded_notes[oid] = note
                    self._parse_cache.put_encoded(oid, note)
            self.stats.parsed += len({e.oid for e in rest})
            self._flush(self._parse_cache, lambda: (e.oid for e in self.source.entries))
        elif rest:
            notes.update(self._parse(list(dict.fromkeys(e.oid for e in rest))))
        return [derived.get((e.oid, e.path)) or derive(e.path, e.oid, notes[e.oid]) for e in entries]

    # --- issue 4: recording in the shared ref cache (refs/vivary/cache, see store.py) ---------------------

    def _refcache(self) -> store.RefCache | None:
        if not self._ref_checked:
            self._ref_checked = True
            repo = self.source.repo
            if self.cache_enabled and repo is not None:
                from vivary_git import store

                if store.enabled(repo):
                    self._ref = store.RefCache(repo)
        return self._ref

    def _recordable_root(self) -> str | None:
        """The root tree to decide privacy with, when this source may be recorded at all: a `--rev`,
        or a working tree / index identical to HEAD's. Uncommitted content never enters the ref."""
        repo, source = self.source.repo, self.source
        if repo is None or source.tree_id is None or repo.workdir is None:
            return None  # bare: Git decides privacy only in a work tree, so nothing could be admitted
        if source.kind == "rev":
            return source.root_tree  # the tree read; its subtree at the prefix is source.tree_id
        if source.kind not in ("worktree", "staged") or repo.repo.head_is_unborn:
            return None
        pygit2 = repo.pygit2
        try:
            root = str(repo.repo.head.peel(pygit2.Tree).id)
        except (KeyError, ValueError, pygit2.GitError):
            return None
        sub = repo.lookup(root, source.prefix) if source.prefix else root
        return root if sub == source.tree_id else None

    def _privacy_policy(self) -> privacy.PrivacyPolicy:
        """The rules recording decides privacy by (raises VivaryError when they cannot be read)."""
        from vivary_git import privacy

        extra: tuple[str, ...] = ()
        try:
            from vivary_git.memory.config import load_memory_config
        except ImportError:
            pass
        else:
            extra = tuple(load_memory_config(self).memory.privacy.private_paths)
        # Ignored files stay private here whatever memory.toml says about respect_gitignore.
        return privacy.PrivacyPolicy(private_paths=extra, respect_gitignore=True)

    def _private_paths(self, paths: list[str], root: str, policy: privacy.PrivacyPolicy) -> set[int]:
        """Indices of `paths` the privacy boundary keeps out of the ref cache (raises VivaryError when
        it cannot decide: then nothing is recorded). Only Git is asked: safe in a thread."""
        from vivary_git import privacy

        repo = self.source.repo
        assert repo is not None
        if repo.workdir is None:
            raise privacy.PrivacyError("a bare repository has no work tree for Git to decide privacy in")
        out = {i for i, d in enumerate(privacy.decide(repo.workdir, paths, policy, tree=root)) if d.private}
        if self.source.kind != "rev":
            # The working tree's ignore rules may be ahead of HEAD's; either one making a path private wins.
            out |= {i for i, d in enumerate(privacy.decide(repo.workdir, paths, policy)) if d.private}
        return out

    def _record(self, counts: Callable[[], _Counts], keyed: list[tuple[Entry, str, graph_mod.Facts]] | None) -> None:
        """Add what this tree needed (parses, facts, a counts-only summary) to the ref cache, once per
        tree, for the privacy-admitted documents only; one commit per recorded tree."""
        pending = self._record_prepare(keyed)
        if pending is not None:
            self._record_finish(pending, counts())

    def _recording(self) -> tuple[store.RefCache, str, str] | None:
        """(ref cache, tree summary key, root tree to decide privacy in) when this tree is to be
        recorded: cheap checks only, nothing read or parsed."""
        if {"created", "updated"} & set(self.config.derive):
            return None  # facts depend on history; the ref cache holds pure functions of content only
        ref = self._refcache()
        tree = self.source.tree_id
        if ref is None or tree is None:
            return None
        root = self._recordable_root()
        if root is None:
            return None
        from vivary_git import store

        tkey = store.tree_key(tree, self.config.digest())
        if ref.has_tree(tkey) or ref.damaged:
            return None
        return ref, tkey, root

    def _record_prepare(self, keyed: list[tuple[Entry, str, graph_mod.Facts]] | None) -> _Pending | None:
        """Everything recording needs but the graph: the privacy decision and the encoded entries."""
        recording = self._recording()
        if recording is None:
            return None
        ref, tkey, root = recording
        from vivary_git import store
        from vivary_git.errors import VivaryError

        if keyed is None:
            counted = (self.stats.parsed, self.stats.reused)
            keyed = self._all_facts(None)
            # Stats describe the answer's work; gathering facts to record them is bookkeeping.
            self.stats.parsed, self.stats.reused = counted
        prefix = f"{self.source.prefix}/" if self.source.prefix else ""
        paths = [prefix + e.path for e, _, _ in keyed]
        try:
            policy = self._privacy_policy()  # reads memory.toml through this thread's repository handle
        except VivaryError as err:
            print(f"vivary: not recording this tree in {store.CACHE_REF}: {err}", file=sys.stderr)
            return None
        # Git decides privacy (a few subprocesses, ~0.07 s at 10,000 notes) in a thread while this one
        # encodes every candidate entry; only the admitted ones are then kept. Nothing is written
        # before the decision.
        from vivary_git.parallel import Background

        deciding = Background(lambda: self._private_paths(paths, root, policy) if paths else set())
        fact_keys = [k for _, k, _ in keyed if k not in self._from_ref]
        blobs = list(dict.fromkeys(e.oid for e, _, _ in keyed if e.oid not in self._from_ref))
        new_facts = set(ref.missing("facts", fact_keys))
        new_blobs = ref.missing("parse", blobs)
        facts = {k: f for _, k, f in keyed if k in new_facts}
        # One note at a time from its parse (this run's, or a worker's still encoded) to its shared
        # encoding: at 100,000 notes, holding them all decoded at once was ~200 MB.
        parse: dict[str, bytes] = {}
        rest: list[str] = []
        for oid in new_blobs:
            note = self._computed_notes.get(oid)
            encoded = self._encoded_notes.get(oid) if note is None else None
            if note is None and encoded is not None:
                note = msgspec.msgpack.decode(encoded, type=Note)
            if note is None:
                rest.append(oid)
            else:
                parse[oid] = store.encode_shared(note)
        for oid, note in self._notes_for(rest).items():  # neither: from the local cache, or parsed
            parse[oid] = store.encode_shared(note)
        encoded_facts = store.encode_entries(facts)
        try:
            private = deciding.result()
        except VivaryError as err:
            print(f"vivary: not recording this tree in {store.CACHE_REF}: {err}", file=sys.stderr)
            return None
        # A blob is admitted only if every path holding it is public.
        private_blobs = {keyed[i][0].oid for i in private}
        admitted = {k for i, (e, k, _) in enumerate(keyed) if i not in private and e.oid not in private_blobs}
        changes = store.Changes(
            parse={oid: data for oid, data in parse.items() if oid not in private_blobs},
            facts={k: data for k, data in encoded_facts.items() if k in admitted},
        )
        return _Pending(ref, tkey, changes, len(keyed) - len(admitted))

    def _record_finish(self, pending: _Pending, counts: _Counts) -> None:
        from vivary_git import store

        tree = self.source.tree_id
        assert tree is not None  # _recording() checked
        pending.changes.trees = {pending.tkey: store.TreeSummary(
            tree=tree, checked=counts.checked, errors=counts.errors, warnings=counts.warnings, nodes=counts.nodes,
            edges=counts.edges, broken=counts.broken, private=pending.private, written=int(time.time()),
        )}
        changes = pending.changes
        pending.ref.write(
            changes, f"vivary cache: tree {tree[:12]}, {len(changes.parse)} parse(s), {len(changes.facts)} facts")

    def _record_alongside(self, keyed: list[tuple[Entry, str, graph_mod.Facts]],
                          flushes: list[tuple[SegmentCache[Any], Callable[[], Iterable[str]]]],
                          ) -> Callable[[graph_mod.Graph, Callable[[], None]], None]:
        """Record this tree in the ref while the graph is being built: a forked child decides privacy,
        encodes the entries and writes the objects (~0.25 s for 10,000 new notes) on the core the build
        leaves idle, then takes the graph's counts through a pipe for the summary and commits. The
        returned call sends the counts, runs `then` (caching the graph) and writes the local caches
        (`flushes`) while the child commits, and waits for it: the caches and the ref are written
        when the command returns, as when all is done inline (which is what small trees, or systems
        without fork, get)."""
        from vivary_git import parallel

        def inline(g: graph_mod.Graph, then: Callable[[], None]) -> None:
            then()
            self._record(lambda: _counts(g), keyed)

        if len(keyed) < parallel.MIN_BLOBS or not parallel.can_fork() or self._recording() is None:
            _write(flushes)
            return inline
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            r, w = os.pipe()
            pid = os.fork()
        except OSError:
            _write(flushes)
            return inline
        if pid == 0:  # the child: never returns
            code = 1
            try:
                os.close(w)
                self._reopen()
                pending = self._record_prepare(keyed)
                with os.fdopen(r, "rb") as pipe:
                    data = pipe.read()
                if pending is not None and data:  # no data: the parent failed before the build ended
                    self._record_finish(pending, msgspec.msgpack.decode(data, type=_Counts))
                code = 0
            except Exception as err:  # a cache write must not turn into a traceback
                print(f"vivary: could not record this tree in the ref cache: {err}", file=sys.stderr)
            finally:
                sys.stderr.flush()
                os._exit(code)
        os.close(r)

        def finish(g: graph_mod.Graph, then: Callable[[], None]) -> None:
            try:
                with os.fdopen(w, "wb") as pipe:
                    pipe.write(msgspec.msgpack.encode(_counts(g)))
            except OSError:
                pass  # the child is gone: it said why on stderr
            then()
            _write(flushes)
            parallel.reap(pid)

        return finish

    def _reopen(self) -> None:
        """In a forked child: a libgit2 handle of its own (one must not be shared across a fork), and no
        local cache writes (the parent writes what is pending; a second copy would only waste time)."""
        repo = self.source.repo
        if repo is not None:
            repo.repo = repo.pygit2.Repository(str(repo.git_dir))
        self._ref, self._ref_checked = None, False
        for cache in (self._parse_cache, self._fact_cache):
            cache.discard()

    def cache_keys(self) -> tuple[str | None, set[str], set[str]]:
        """issue 4 (`cache gc`): this tree's summary key, blob ids and fact keys, computed without parsing."""
        from vivary_git import store

        rules = _Rules(self.config, self.source.overlays)
        entries = self.source.entries
        tree = self.source.tree_id
        tkey = store.tree_key(tree, self.config.digest()) if tree is not None else None
        return tkey, {e.oid for e in entries}, {rules.fact_key(e.path, e.oid, self.root_name) for e in entries}

    def _record_verdict(self, report: CheckReport) -> None:
        """issue 4: with `git config vivary.notes true`, `check --rev COMMIT` notes its counts on COMMIT."""
        repo = self.source.repo
        if repo is None or self.source.kind != "rev" or self.source.tree_id is None or not self.cache_enabled:
            return
        from vivary_git import store

        if not store.notes_enabled(repo):
            return
        try:
            commit = str(repo.repo.revparse_single(self.source.label).peel(repo.pygit2.Commit).id)
        except (KeyError, ValueError, repo.pygit2.GitError):
            return  # a tree, not a commit: nothing to note it on
        verdict = store.Verdict(tree=self.source.tree_id, checked=report.checked, errors=report.errors,
                                warnings=report.warnings, clean=report.clean)
        if not store.write_note(repo, commit, verdict):
            print(f"vivary: could not write the verdict note in {store.NOTES_REF}: it kept moving", file=sys.stderr)

    def _notes_for(self, oids: list[str], *, remember: bool = True) -> dict[str, Note]:
        """Parses of these blobs: from the parse cache when many are wanted (loading it is cheaper
        than parsing thousands), else straight from Git; new parses are added to the cache."""
        if not oids:
            return {}
        if self._notes is not None:
            return {oid: self._notes[oid] for oid in oids}
        out = self._cached_notes(oids, remember=remember)
        todo = [oid for oid in dict.fromkeys(oids) if oid not in out]
        out.update(self._parse(todo, remember=remember))
        return out

    def _cached_notes(self, oids: list[str], *, remember: bool = True) -> dict[str, Note]:
        """The parses of these blobs that a cache has: the local one (when many are wanted, or it is
        loaded already) or the shared ref. Nothing is parsed."""
        cache = self._parse_cache
        out: dict[str, Note] = {}
        todo = list(dict.fromkeys(oids))
        if self._computed_notes or self._encoded_notes:  # parsed earlier in this run
            for oid in todo:
                note = self._computed_notes.get(oid)
                if note is None and oid in self._encoded_notes:
                    note = msgspec.msgpack.decode(self._encoded_notes[oid], type=Note)
                if note is not None:
                    out[oid] = note
            todo = [oid for oid in todo if oid not in out]
        if todo and (len(todo) > _LOAD_PARSE_CACHE_ABOVE or cache.loaded):
            found = 0
            for oid in todo:
                note = cache.get(oid)
                if note is not None:
                    out[oid] = note
                    found += 1
            self.stats.reused += found
            todo = [oid for oid in todo if oid not in out]
        ref = self._refcache() if todo else None
        if ref is not None:  # issue 4: parses the local cache lacks may be in the shared ref cache
            from vivary_git.store import unshare

            for oid, shared in ref.get("parse", todo).items():
                note = unshare(shared, functools.partial(self.source.read, oid))
                if note is None:
                    continue  # the body does not fit the blob: parse it
                out[oid] = note
                self._from_ref.add(oid)
                self.stats.reused += 1
                if remember:
                    cache.put(oid, note)
        return out

    def _parse(self, todo: list[str], *, remember: bool = True) -> dict[str, Note]:
        """Parse these blobs (across processes when there are many); added to the parse cache."""
        if not todo:
            if remember:  # entries a cache handed over (the ref's) may still be pending
                self._flush(self._parse_cache, lambda: (e.oid for e in self.source.entries))
            return {}
        cache = self._parse_cache
        out: dict[str, Note] = {}
        parsed = None
        repo = self.source.repo
        if todo and repo is not None:
            from vivary_git.parallel import parse_many

            parsed = parse_many(str(repo.git_dir), todo, self.source.read)
        if parsed is None:
            from vivary_git.parse import parse_blob  # YAML is imported only when something is parsed

            parsed = [(oid, parse_blob(self.source.read(oid))) for oid in todo]
        for oid, note in parsed:
            out[oid] = note
            self._computed_notes[oid] = note
            if remember:
                cache.put(oid, note)
        self.stats.parsed += len(parsed)
        if remember:
            self._flush(cache, lambda: (e.oid for e in self.source.entries))
        return out

    def _flush(self, cache: SegmentCache[T], keep: Callable[[], Iterable[str]]) -> None:
        """Write a local cache's new entries now, or, while a cold graph is computed, after the build,
        while the recording child commits (see `_record_alongside`)."""
        if self._deferred is not None:
            self._deferred.append((cache, keep))
        else:
            cache.flush(keep=keep)

    def _date_lookup(self) -> DateLookup | None:
        if not {"created", "updated"} & set(self.config.derive):
            return None
        dates: Dates | None = None

        def lookup(path: str, field: str) -> str | None:
            nonlocal dates
            if dates is None:
                from vivary_git.history import file_dates, head_commit

                repo = self.source.repo
                commit = head_commit(repo, self.source.label if self.source.kind == "rev" else None) \
                    if repo is not None else None
                dates = file_dates(repo, commit, self._history_cache) if repo is not None and commit else {}
            full = f"{self.source.prefix}/{path}" if self.source.prefix else path
            got = dates.get(full)
            if got is None:
                from vivary_git.history import today

                return today()
            return got[0] if field == "created" else got[1]

        return lookup

    def notes(self) -> Mapping[str, Note]:
        """Parsed notes (bodies included) by blob id, for every note in the tree."""
        if self._notes is None:
            self._notes = self._notes_for([e.oid for e in self.source.entries])
        return self._notes

    def note(self, blob: str) -> Note:
        # A single note (a snippet, a packet) is cheaper to parse again than to cache.
        return self._notes[blob] if self._notes is not None else self._notes_for([blob], remember=False)[blob]

    def lazy_notes(self) -> Mapping[str, Note]:
        """Notes by blob id, parsed (or read from the cache) only when looked up."""
        return _LazyNotes(self)

    def search_index(self) -> SearchIndex:
        """The query index of this tree: built once from the graph and notes, then cached."""
        from vivary_git import searchindex

        key = self._graph_key()
        cache = ObjectCache(self._vdir, "search", keep=4)
        if key is not None:
            cached = cache.get(key, msgspec.msgpack.Decoder(searchindex.SearchIndex))
            if cached is not None and cached.ids == [n.id for n in self.graph().nodes]:
                return cached
        index = searchindex.build(self.graph(), self.notes())
        if key is not None:
            cache.put(key, index)
        return index

    def check(self, *, strict: bool | None = None) -> CheckReport:
        cached = self._cached_check()
        patched = self._patched_check() if cached is None else None
        if cached is not None:
            found, checked = cached.findings, cached.counts.checked
        elif patched is not None:
            found, checked = patched
            key = self._graph_key()
            if key is not None:  # once committed, this tree is HEAD: the hook's next baseline
                self._findings_cache.put(key, found)
        else:
            g = self.graph()
            found, checked = g.findings, g.checked
        findings = check_mod.apply_strictness(found, self.config.strict if strict is None else strict)
        errors = sum(f.level == "error" for f in findings)
        report = CheckReport(
            checked=checked,
            clean=checked - len({f.path for f in findings}),
            errors=errors,
            warnings=len(findings) - errors,
            findings=findings,
        )
        self._record_verdict(report)
        return report

    def report_stats(self) -> None:
        if os.environ.get("VIVARY_STATS"):
            print(f"vivary: stats {msgspec.json.encode(self.stats).decode()}", file=sys.stderr)


class _Counts(msgspec.Struct, frozen=True, array_like=True):
    """A graph's counts, for the summary of a recorded tree."""

    checked: int
    errors: int
    warnings: int
    nodes: int
    edges: int
    broken: int


class _Checked(msgspec.Struct, frozen=True, array_like=True):
    """What `check` needs of a graph (cached beside it): its findings and counts, and, to re-check a
    staged tree a few edits away, what `graph.patch_findings` needs besides."""

    findings: list[Finding]
    counts: _Counts
    root: str
    tree: str | None
    rules: str
    homes: bool
    nodes: list[tuple[str, str]]  # (id, path) of every node


def _counts(g: graph_mod.Graph) -> _Counts:
    errors = sum(f.level == "error" for f in g.findings)
    counts = g.counts()
    return _Counts(g.checked, errors, len(g.findings) - errors, counts["nodes"], counts["edges"], counts["broken"])


class _Pending:
    """Entries ready to record, waiting for the graph's counts."""

    def __init__(self, ref: store.RefCache, tkey: str, changes: store.Changes, private: int) -> None:
        self.ref, self.tkey, self.changes, self.private = ref, tkey, changes, private


def _write(flushes: Iterable[tuple[SegmentCache[Any], Callable[[], Iterable[str]]]]) -> None:
    """Write local cache entries that were left pending (see `Workspace._flush`)."""
    for cache, keep in flushes:
        cache.flush(keep=keep)


def _rules_digest(config: Config, overlays: Mapping[str, Config]) -> str:
    """Every rule source a graph depends on besides the notes: root config and nested overlays."""
    parts = [config.digest(), *(f"{d}\0{c.digest()}" for d, c in sorted(overlays.items()))]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]


class _LazyNotes(Mapping[str, Note]):
    def __init__(self, ws: Workspace) -> None:
        self._ws = ws

    def __getitem__(self, blob: str) -> Note:
        return self._ws.note(blob)

    def __iter__(self) -> Iterator[str]:
        return iter(self._ws.notes())

    def __len__(self) -> int:
        return len(self._ws.source.entries)


def open_workspace(
    path: str | os.PathLike[str] | None = None,
    *,
    rev: str | None = None,
    staged: bool = False,
    root: str | None = None,
    cache: bool = True,
    shared_cache: bool = True,
) -> Workspace:
    """Open the workspace containing `path` (default: the current directory) at one tree. With
    `shared_cache=False`, `refs/vivary/cache` is neither read nor written."""
    start = Path(path) if path is not None else None
    return Workspace(open_source(start, rev=rev, staged=staged, root=root), cache=cache, shared_cache=shared_cache)
