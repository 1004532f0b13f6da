"""The library entry point: open a workspace at one tree, get its graph, notes and findings.

    from vivary_git import open_workspace
    ws = open_workspace("path/to/repo", rev="HEAD")
    report = ws.check()
    for finding in report.findings: print(finding.render())

Each parse is a pure function of its blob id and each graph a pure function of its tree id, so both
are cached (locally under `.git/vivary/`) and a run does work in proportion to what changed.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from vivary_git import check as check_mod
from vivary_git import graph as graph_mod
from vivary_git import record
from vivary_git.check import DateLookup
from vivary_git.config import Config, excluder, leaves_out
from vivary_git.localcache import ObjectCache, SegmentCache, parse_cache
from vivary_git.models import Finding, Node, Note
from vivary_git.source import Entry, Source, is_note, open_source

if TYPE_CHECKING:
    from vivary_git import privacy
    from vivary_git.history import Dates
    from vivary_git.searchindex import SearchIndex
    from vivary_git.store.refcache import RefCache


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
    redone: int = 0  # blobs a worker process failed at, parsed again in this one (parallel.py)


_LOAD_PARSE_CACHE_ABOVE = 300
_LAST = "last"  # graph cache entry naming the key of the last graph computed: the base for patching
# The same for the last graph built with entries read from the shared cache (filed under its shared key):
# the base only for runs that may read the shared cache themselves, never for a gate.
_LAST_SHARED = "last-shared"
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

    def __init__(self, source: Source, *, cache: bool = True, gate: bool = False, shared_cache: bool = True) -> None:
        self.source = source
        self.gate = gate
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
        # --- issue 4: the shared ref cache (store/), second level behind the local hot cache ---
        self._ref: RefCache | None = None
        self._ref_checked = not shared_cache  # without the shared cache: neither read nor recorded
        self._from_ref: set[str] = set()  # parse (blob ids) and facts (keys) read from the ref this run
        self._tainted: set[str] = set()  # fact keys derived here from a parse read from the ref
        self._shared_graph = False  # the graph in hand was built with entries read from the ref
        self._patched_shared = False  # the graph in hand was patched from a graph built with them
        self._computed_notes: dict[str, Note] = {}  # parsed in this process this run
        self._encoded_notes: dict[str, msgspec.Raw] = {}  # parsed by worker processes, still msgpack
        # local cache writes left until the graph is built (see record.alongside): (cache, what to keep)
        self._deferred: list[tuple[SegmentCache[Any], Callable[[], Iterable[str]]]] | None = None
        self._patch_size = 0  # notes re-derived by the last patch
        # privacy questions answered during the command that set it (`privacy.PrivacyMemo`); None: ask every time
        self.privacy_memo: privacy.PrivacyMemo | None = None

    @property
    def root_name(self) -> str:
        return self.source.root.name or "root"

    @property
    def tree_id(self) -> str | None:
        return self.source.tree_id

    def _graph_key(self, *, shared: bool = False) -> str | None:
        """The local cache key of this tree's graph. `shared`: a graph built with entries read from the
        shared ref cache is filed apart, where a gate never looks (docs/cache.md, "Trust")."""
        if not self.cache_enabled or self.source.tree_id is None:
            return None
        from vivary_git.version import __version__

        salt = f"{__version__}\0{self.root_name}"
        if {"created", "updated"} & set(self.config.derive):
            # W210 on created/updated also depends on history (and, for new files, on today's date).
            from vivary_git.history import head_commit, today

            repo = self.source.repo
            commit = head_commit(repo, self.source.label if self.source.kind == "rev" else None) if repo else None
            salt += f"\0{commit}\0{today()}"
        if shared:
            salt += "\0shared"
        digest = hashlib.sha256(salt.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        return f"{self.source.tree_id}-{digest}"

    def _keys(self) -> list[tuple[str, bool]]:
        """Where this tree's graph may be found: its own key, and, when this run may read the shared
        cache, the key of one built with shared entries."""
        key = self._graph_key()
        if key is None:
            return []
        shared = self._graph_key(shared=True) if self._reads_ref() else None
        return [(key, False)] + ([(shared, True)] if shared is not None else [])

    def graph(self) -> graph_mod.Graph:
        if self._graph is not None:
            return self._graph
        for k, shared in self._keys():
            cached = self._graph_cache.get(k, msgspec.msgpack.Decoder(graph_mod.Graph))
            if cached is not None:
                self.stats.graph_cached = True
                self._graph, self._shared_graph = cached, shared
                # a tree first computed while it could not be recorded is recorded now
                record.record(self, functools.partial(record.counts_of, cached), None)
                return cached
        key = self._graph_key()
        dates = self._date_lookup()
        patched = self._patched(key) if dates is None else None
        if patched is not None:
            self._graph = patched
            if key is not None and (self.source.kind != "staged" or self._patch_size > _CACHE_STAGED_AFTER):
                # A staged tree is checked by the pre-commit hook and then committed or replaced: its
                # graph is cached only when the base it was patched from has grown far behind.
                self._cache_graph(patched)
            record.record(self, lambda: record.counts_of(patched), None)
            return patched
        self._deferred = []
        try:
            keyed = self._all_facts(dates)
        finally:
            flushes, self._deferred = self._deferred, None
        recorder = record.alongside(self, keyed, flushes) if dates is None else None
        if recorder is None:
            record.write_flushes(flushes)
        self._graph = graph_mod.build(
            self.root_name, self.source.tree_id, self.config, [(e.path, e.oid, f) for e, _, f in keyed],
            unreadable=self.source.problems, others=self.source.others,
        )
        self._graph.rules = self._rules_digest()
        graph = self._graph
        counts = record.counts_of(graph)  # for the ref's summary and the check cache: one pass over the edges

        def cache_it() -> None:
            self._cache_graph(graph, counts)

        if recorder is not None:
            recorder(counts, cache_it)  # the counts go to the recording child first, then this is cached
        else:
            cache_it()
        return graph

    def _cache_graph(self, g: graph_mod.Graph, counts: record.Counts | None = None) -> None:
        """File the graph just computed under this tree's key; one built with anything read from the
        shared cache under the shared key, and never as the base later runs patch from."""
        self._shared_graph = self._patched_shared or bool(self.not_computed_here())
        key = self._graph_key(shared=self._shared_graph)
        if key is None:
            return
        self._graph_cache.put(key, g)
        self._graph_cache.put(_LAST_SHARED if self._shared_graph else _LAST, key)
        self._check_cache.put(key, _Checked(g.findings, counts or record.counts_of(g), g.root, g.tree, g.rules,
                                            bool(g.homes), [(n.id, n.path) for n in g.nodes], g.others, g.names,
                                            g.page_names))

    def _cached_check(self) -> _Checked | None:
        """This tree's findings and counts without decoding its graph (a warm `check` needs no
        nodes or edges: ~0.04 s less at 10,000 notes)."""
        if self._graph is not None:
            return None
        for key, _shared in self._keys():
            got = self._check_cache.get(key, msgspec.msgpack.Decoder(_Checked))
            if got is not None:
                self.stats.graph_cached = True
                record.record(self, functools.partial(_counts_of_checked, got), None)  # as graph() does
                return got
        return None

    def _rules_digest(self) -> str:
        return _rules_digest(self.config, self.source.overlays)

    def _patched(self, key: str | None) -> graph_mod.Graph | None:
        """The graph of this tree as the last graph computed here (often HEAD's, or the previous staged
        tree's) with only the edited notes re-derived: what keeps a pre-commit check proportional to
        the commit. None whenever patching could differ from a full build (see `graph.patch`)."""
        if key is None:
            return None
        for base, shared in self._patch_bases(key):
            # Only workspaces without nested overlays: then the rules are the root config's, known without
            # walking the tree, and any overlay appearing shows up in the diff below.
            if base.rules != _rules_digest(self.config, {}):
                continue
            assert base.tree is not None
            diff = self._changed_facts(base.tree, _PATCH_AT_MOST, base.names, base.others)
            patched = graph_mod.patch(base, self.source.tree_id, diff[0], diff[1]) if diff is not None else None
            if patched is not None and diff is not None:
                self.stats.reused += patched.checked - len(diff[0])
                self.stats.patched = True
                self._patch_size = len(diff[0])
                self._patched_shared = shared
                return patched
        return None

    def _patch_bases(self, key: str) -> Iterator[tuple[graph_mod.Graph, bool]]:
        """The last graph computed here; then, when this run may read the shared cache, the last one built
        with its entries (a graph patched from it is filed as shared too, see `_cache_graph`). With whether
        it is the shared one."""
        for pointer, shared in ((_LAST, False), (_LAST_SHARED, True)):
            if shared and not self._reads_ref():
                return
            last = self._graph_cache.get(pointer, msgspec.msgpack.Decoder(str))
            if last is None or last in (key, self._graph_key(shared=True)):
                continue
            base = self._graph_cache.get(last, msgspec.msgpack.Decoder(graph_mod.Graph))
            if base is not None and base.tree is not None and base.root == self.root_name:
                yield base, shared

    def _changed_facts(self, base_tree: str, at_most: int, names: list[str] | None,
                       others: list[str]) -> tuple[dict[str, tuple[str, graph_mod.Facts]], list[str]] | None:
        """(blob, facts) by path of the notes whose content differs from `base_tree`, and this tree's
        other files (the base's `others`, with files added or removed); None when more than `at_most`
        notes changed, or anything but content edits and files no link names (`graph.files_reach`,
        over the base's link `names`) changed (see `_changed_notes`)."""
        diff = self._changed_notes(base_tree)
        if diff is None or len(diff[0]) > at_most:
            return None
        changed_entries, added, removed = diff
        if added or removed:
            if graph_mod.files_reach(names, added + removed, self.config):
                return None  # some link may name one of them: its document's resolution could change
            others = _others_after(others, added, removed)
        rules = _Rules(self.config, {})  # no overlays: the callers checked, without walking the tree
        notes = self._notes_for([e.oid for e in changed_entries])
        changed: dict[str, tuple[str, graph_mod.Facts]] = {}
        for e in changed_entries:
            k = rules.fact_key(e.path, e.oid, self.root_name)
            f = self._fact_cache.get(k) if self._fact_cache.loaded else None
            if f is None:
                cfg, folder_types = rules.at(e.path)
                f = graph_mod.facts(e.path, e.oid, notes[e.oid], cfg, folder_types, self.root_name)
                if e.oid in self._from_ref:
                    self._tainted.add(k)  # from a parse read from the shared cache: not this machine's
                else:
                    self._fact_cache.put(k, f)
            changed[e.path] = (e.oid, f)
        self._fact_cache.flush()
        return changed, others

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
        if key is None or last is None or last == key \
                or (not any_kind and record.recordable_root(self.source) is not None):
            return None
        base = self._check_cache.get(last, msgspec.msgpack.Decoder(_Checked))
        if base is None or base.tree is None or base.root != self.root_name or base.homes \
                or base.rules != _rules_digest(self.config, {}) or len(base.nodes) != base.counts.checked:
            return None
        diff = self._changed_facts(base.tree, _CACHE_STAGED_AFTER, base.names, base.others)
        if diff is None:
            return None
        changed, others = diff
        owner = dict.fromkeys(nid for nid, _ in base.nodes)
        findings = graph_mod.patch_findings(base.findings, {path: nid for nid, path in base.nodes}, owner,
                                            self.config, changed, None, others, base.page_names)
        if findings is None:
            return None
        self.stats.reused += base.counts.checked - len(changed)
        self.stats.patched = True
        return findings, base.counts.checked

    def _changed_notes(self, base_tree: str) -> tuple[list[Entry], list[str], list[str]] | None:
        """Notes whose content differs between `base_tree` and this tree, from libgit2's tree diff
        (which skips unchanged subtrees: no walk of the whole tree), and the other files (not notes,
        not excluded) added and removed, where links may name files. None when anything else
        changed: a note added, removed, renamed or made a link, a file's kind, or any config file
        (root, overlay, pack, graph.toml) touched."""
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
        left_out = leaves_out(self.config)
        files_matter = self.config.links.dialect != "vivary"  # links may name any file: one added or removed counts
        status = pygit2.enums.DeltaStatus
        modified, regular = status.MODIFIED, (0o100644, 0o100755)
        blobs = (0o100644, 0o100755, 0o120000)  # what the tree walk lists as other files
        out: list[Entry] = []
        added: list[str] = []
        removed: list[str] = []
        for delta in diff.deltas:
            path = delta.new_file.path
            name = path.rsplit("/", 1)[-1]
            if name in _RULE_FILES or path.startswith((".tropo/", ".vivary/")):
                return None
            if files_matter and delta.status != modified and not excluded(path):
                if is_note(path):
                    return None
                if delta.status == status.ADDED and delta.new_file.mode in blobs:
                    added.append(path)
                elif delta.status == status.DELETED and delta.old_file.mode in blobs:
                    removed.append(delta.old_file.path)
                else:
                    return None
                continue
            if not is_note(path) or excluded(path) or (left_out is not None and left_out(path)):
                continue
            if delta.status != modified or delta.new_file.mode not in regular or delta.old_file.mode not in regular:
                return None
            out.append(Entry(path, str(delta.new_file.id), delta.new_file.mode))
        return out, added, removed

    def _all_facts(self, dates: DateLookup | None) -> list[tuple[Entry, str, graph_mod.Facts]]:
        """Every document's facts with its fact key: from the local cache, the shared ref cache, or computed."""
        entries = self.source.entries
        rules = _Rules(self.config, self.source.overlays)
        # Facts depend on history only when `derive` names created/updated; then they are not cached.
        fact_cache = self._fact_cache if dates is None else None
        root_name, fact_key = self.root_name, rules.fact_key
        keyed = [(e, fact_key(e.path, e.oid, root_name)) for e in entries]
        found: dict[str, graph_mod.Facts] = {}
        missing: list[str] = []
        for _, k in keyed:
            f = fact_cache.get(k) if fact_cache is not None else None
            if f is None:
                missing.append(k)
            else:
                found[k] = f
        # issue 4: facts the local cache lacks may be in the shared ref cache.
        # Facts read there stay out of the local cache, which holds only what this machine computed.
        ref = self.refcache() if fact_cache is not None and missing else None
        shared: dict[str, graph_mod.Facts] = ref.get("facts", missing) if ref is not None else {}
        found.update(shared)
        self._from_ref.update(shared)
        self.stats.reused += len(keyed) - len(missing) + len(shared)
        todo = [(e, k) for e, k in keyed if k not in found]
        computed = self._derive([e for e, _ in todo], rules, dates)
        for (e, k), f in zip(todo, computed, strict=True):
            found[k] = f
            if e.oid in self._from_ref:
                self._tainted.add(k)  # derived from a parse read from the shared cache
            elif fact_cache is not None:
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
            results = derive_many(str(repo.git_dir), items, self.source.read, derive, graph_mod.Facts,
                                  self._count_redone)
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

    # --- the shared ref cache (refs/vivary/cache, store/); recording is record.py's -------------------------

    def refcache(self) -> RefCache | None:
        """The shared cache for this run, or None when it is off. What it may be *read* for follows the
        trust setting (docs/cache.md, "Trust"): never in a gate, and otherwise only as far as
        `vivary.cacheTrust` says; writing (recording) is record.py's decision."""
        if not self._ref_checked:
            self._ref_checked = True
            repo = self.source.repo
            if self.cache_enabled and repo is not None:
                from vivary_git.store.refcache import RefCache, enabled

                if enabled(repo):
                    self._ref = RefCache(repo, read=not self.gate)
        return self._ref

    def _reads_ref(self) -> bool:
        ref = self.refcache()
        return ref is not None and ref.reads()

    def not_computed_here(self) -> set[str]:
        """Blob ids and fact keys whose entries this run read from the shared cache, or derived from a
        parse read there: never written to the local caches, never recorded again."""
        return self._from_ref | self._tainted

    def facts_for_recording(self) -> list[tuple[Entry, str, graph_mod.Facts]]:
        """Every document's facts with its fact key, as `graph()` gathers them (for record.py)."""
        counted = (self.stats.parsed, self.stats.reused)
        keyed = self._all_facts(None)
        # Stats describe the answer's work; gathering facts to record them is bookkeeping.
        self.stats.parsed, self.stats.reused = counted
        return keyed

    def shared_parses(self, oids: list[str]) -> dict[str, bytes]:
        """The shared encoding (`store/format.py` `encode_shared`) of these blobs' parses. One note at a time from
        its parse (this run's, or a worker's still encoded, which is re-encoded without being decoded):
        at 100,000 notes, holding them all decoded at once was ~200 MB."""
        from vivary_git.store.format import encode_shared, encode_shared_encoded

        parse: dict[str, bytes] = {}
        rest: list[str] = []
        for oid in oids:
            note = self._computed_notes.get(oid)
            encoded = self._encoded_notes.get(oid) if note is None else None
            if note is not None:
                parse[oid] = encode_shared(note)
            elif encoded is not None:
                parse[oid] = encode_shared_encoded(encoded)  # never decoded into a Note
            else:
                rest.append(oid)
        for oid, note in self._notes_for(rest).items():  # neither: from the local cache, or parsed
            if oid not in self._from_ref:
                parse[oid] = encode_shared(note)
        return parse

    def reopen_after_fork(self) -> None:
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
        from vivary_git.store.format import tree_key

        rules = _Rules(self.config, self.source.overlays)
        entries = self.source.entries
        tree = self.source.tree_id
        tkey = tree_key(tree, self.config.digest()) if tree is not None else None
        return tkey, {e.oid for e in entries}, {rules.fact_key(e.path, e.oid, self.root_name) for e in entries}

    def _record_verdict(self, report: CheckReport) -> None:
        """issue 4: with `git config vivary.notes true`, `check --rev COMMIT` notes its counts on COMMIT."""
        repo = self.source.repo
        if repo is None or self.source.kind != "rev" or self.source.tree_id is None or not self.cache_enabled:
            return
        from vivary_git.refnames import NOTES_REF
        from vivary_git.store.notes import Verdict, notes_enabled, write_note

        if not notes_enabled(repo):
            return
        try:
            commit = str(repo.repo.revparse_single(self.source.label).peel(repo.pygit2.Commit).id)
        except (KeyError, ValueError, repo.pygit2.GitError):
            return  # a tree, not a commit: nothing to note it on
        verdict = Verdict(tree=self.source.tree_id, checked=report.checked, errors=report.errors,
                                warnings=report.warnings, clean=report.clean)
        if not write_note(repo, commit, verdict):
            print(f"vivary: could not write the verdict note in {NOTES_REF}: it kept moving", file=sys.stderr)

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
        ref = self.refcache() if todo else None
        if ref is not None:  # parses the local cache lacks may be in the shared ref cache, if trusted
            from vivary_git.store.format import unshare

            for oid, shared in ref.get("parse", todo).items():
                note = unshare(shared, functools.partial(self.source.read, oid))
                if note is None:
                    continue  # the body does not fit the blob: parse it
                out[oid] = note
                self._from_ref.add(oid)  # never written to the local cache: it holds what was computed here
                self.stats.reused += 1
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

            parsed = parse_many(str(repo.git_dir), todo, self.source.read, self._count_redone)
        if parsed is None:
            from vivary_git.parse import parse_read  # YAML is imported only when something is parsed

            parsed = [(oid, parse_read(self.source.read, oid)) for oid in todo]
        for oid, note in parsed:
            out[oid] = note
            self._computed_notes[oid] = note
            if remember:
                cache.put(oid, note)
        self.stats.parsed += len(parsed)
        if remember:
            self._flush(cache, lambda: (e.oid for e in self.source.entries))
        return out

    def _count_redone(self, blobs: int) -> None:
        self.stats.redone += blobs

    def _flush(self, cache: SegmentCache[T], keep: Callable[[], Iterable[str]]) -> None:
        """Write a local cache's new entries now, or, while a cold graph is computed, after the build,
        while the recording child commits (see `record.alongside`)."""
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

    def notes_for(self, blobs: list[str]) -> dict[str, Note]:
        """Parsed notes of these blobs of the tree, at once: from the parse cache when there are many."""
        return self._notes_for(blobs)

    def note(self, blob: str) -> Note:
        # A single note (a snippet, a packet) is cheaper to parse again than to cache.
        return self._notes[blob] if self._notes is not None else self._notes_for([blob], remember=False)[blob]

    def lazy_notes(self) -> Mapping[str, Note]:
        """Notes by blob id, parsed (or read from the cache) only when looked up."""
        return _LazyNotes(self)

    def search_index(self) -> SearchIndex:
        """The query index of this tree: built once from the graph and notes, then cached (apart, when
        built with anything read from the shared cache, as the graph is)."""
        from vivary_git import searchindex

        ids = [n.id for n in self.graph().nodes]
        cache = ObjectCache(self._vdir, "search", keep=4)
        for key, _shared in self._keys():
            cached = cache.get(key, msgspec.msgpack.Decoder(searchindex.SearchIndex))
            if cached is not None and cached.ids == ids:
                return cached
        index = searchindex.build(self.graph(), self.notes())
        # shared when the graph was (a cached one built with shared entries leaves not_computed_here empty)
        put = self._graph_key(shared=self._shared_graph or bool(self.not_computed_here()))
        if put is not None:
            cache.put(put, index)
        return index

    def resolve_node(self, name: str) -> Node:
        """The node `name` means: its id, or the note's name or path as a link in this workspace's
        dialect writes it, or its path from the repository's top (`graph.resolve_node`). Raises
        `UsageError` for a name that means no node or several (listing them)."""
        return graph_mod.resolve_node(self.graph(), name, prefix=self.source.prefix)

    def resolve_edge_specs(self, specs: Iterable[str]) -> list[str]:
        """`--edge FIELD:TARGET` filters with each TARGET resolved to its node's id (`resolve_node`)."""
        return graph_mod.resolve_edge_specs(self.graph(), specs, prefix=self.source.prefix)

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


_Counts = record.Counts  # the same record (array-like, same fields), cached in checks-vN


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
    others: list[str] = []  # the other files a link may name (graph.Graph.others)
    names: list[str] | None = None  # what links look for (graph.Graph.names)
    page_names: dict[str, list[str]] = {}  # graph.Graph.page_names


def _tree_order(path: str) -> tuple[bytes, ...]:
    """Where a tree walk meets `path`: Git orders a tree's entries by name, a folder's as if it ended
    in `/`, and the walk goes depth first."""
    parts = path.encode("utf-8", "surrogateescape").split(b"/")
    return (*(p + b"/" for p in parts[:-1]), parts[-1])


def _others_after(others: list[str], added: list[str], removed: list[str]) -> list[str]:
    """A tree's `Source.others` (its other files in walk order, then the notes left out of the graph)
    with these files added and removed, as walking the new tree would list them."""
    gone = set(removed)
    files = [p for p in others if p not in gone and not is_note(p)]
    for path in added:
        bisect.insort(files, path, key=_tree_order)
    return files + [p for p in others if is_note(p)]


def _counts_of_checked(checked: _Checked) -> record.Counts:
    return checked.counts


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
    gate: bool = False,
    rev_option: str = "--rev",
    shared_cache: bool = True,
    worktree: str | None = None,
) -> Workspace:
    """Open the workspace containing `path` (default: the current directory) at one tree. `gate=True`
    computes every answer from the tree's blobs and the caches this machine wrote, never from a
    fetched cache (docs/cache.md, "Trust"): what `ci`, the hooks and `check --gate` use. Errors about
    `rev` name it as `rev_option` (the command-line option it came from). With `shared_cache=False`,
    `refs/vivary/cache` is neither read nor written. `worktree`: the working tree already written as
    this tree id (`source.open_source`)."""
    start = Path(path) if path is not None else None
    return Workspace(open_source(start, rev=rev, staged=staged, root=root, rev_option=rev_option,
                                 worktree=worktree), cache=cache,
                     gate=gate, shared_cache=shared_cache)
