"""The library entry point: open a workspace at one tree, get its graph, notes and findings.

    from vivary_git import open_workspace
    ws = open_workspace("path/to/repo", rev="HEAD")
    report = ws.check()
    for finding in report.findings: print(finding.render())

Each parse is a pure function of its blob id and each graph a pure function of its tree id, so both
are cached (locally under `.git/vivary/`) and a run does work in proportion to what changed.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git import check as check_mod
from vivary_git import graph as graph_mod
from vivary_git.check import DateLookup
from vivary_git.config import Config
from vivary_git.localcache import ObjectCache, SegmentCache, parse_cache
from vivary_git.models import Finding, Note
from vivary_git.source import Source, open_source

if TYPE_CHECKING:
    from vivary_git.history import Dates
    from vivary_git.searchindex import SearchIndex


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


_LOAD_PARSE_CACHE_ABOVE = 300


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
        digest = self._for(path)[2]
        raw = f"{blob}\0{digest}\0{root_name}\0{path}".encode("utf-8", "surrogateescape")
        return hashlib.sha1(raw, usedforsecurity=False).hexdigest()


class Workspace:
    """One workspace at one tree. Cheap to create; work happens on first use and is cached."""

    def __init__(self, source: Source, *, cache: bool = True) -> None:
        self.source = source
        self.config = source.config
        self.cache_enabled = cache and source.caching
        vdir = source.repo.vivary_dir if (self.cache_enabled and source.repo is not None) else None
        self._vdir = vdir
        self._parse_cache = parse_cache(vdir)
        self._fact_cache = SegmentCache(vdir, "facts", graph_mod.Facts)
        self._graph_cache = ObjectCache(vdir, "graph")
        self._history_cache = ObjectCache(vdir, "history")
        self._graph: graph_mod.Graph | None = None
        self._notes: dict[str, Note] | None = None
        self.stats = Stats()

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
                return cached
        entries = self.source.entries
        rules = _Rules(self.config, self.source.overlays)
        dates = self._date_lookup()
        # Facts depend on history only when `derive` names created/updated; then they are not cached.
        fact_cache = self._fact_cache if dates is None else None
        keyed = [(e, rules.fact_key(e.path, e.oid, self.root_name)) for e in entries]
        found: dict[str, graph_mod.Facts] = {}
        missing: list[str] = []
        for e, k in keyed:
            f = fact_cache.get(k) if fact_cache is not None else None
            if f is None:
                missing.append(e.oid)
            else:
                found[k] = f
        self.stats.reused += len(keyed) - len(missing)
        notes = self._notes_for(missing)
        docs: list[tuple[str, str, graph_mod.Facts]] = []
        for e, k in keyed:
            f = found.get(k)
            if f is None:
                cfg, folder_types = rules.at(e.path)
                f = graph_mod.facts(e.path, e.oid, notes[e.oid], cfg, folder_types, self.root_name, dates)
                found[k] = f
                if fact_cache is not None:
                    fact_cache.put(k, f)
            docs.append((e.path, e.oid, f))
        if fact_cache is not None:
            fact_cache.flush(keep=(k for _, k in keyed))
        self._graph = graph_mod.build(
            self.root_name, self.source.tree_id, self.config, docs, unreadable=self.source.problems,
        )
        if key is not None:
            self._graph_cache.put(key, self._graph)
        return self._graph

    def _notes_for(self, oids: list[str], *, remember: bool = True) -> dict[str, Note]:
        """Parses of these blobs: from the parse cache when many are wanted (loading it is cheaper
        than parsing thousands), else straight from Git; new parses are added to the cache."""
        if not oids:
            return {}
        if self._notes is not None:
            return {oid: self._notes[oid] for oid in oids}
        cache = self._parse_cache
        out: dict[str, Note] = {}
        todo = list(dict.fromkeys(oids))
        if len(todo) > _LOAD_PARSE_CACHE_ABOVE or cache.loaded:
            for oid in todo:
                note = cache.get(oid)
                if note is not None:
                    out[oid] = note
            self.stats.reused += len(out)
            todo = [oid for oid in todo if oid not in out]
        parsed = None
        repo = self.source.repo
        if todo and repo is not None:
            from vivary_git.parallel import parse_many

            parsed = parse_many(str(repo.git_dir), todo)
        if parsed is None:
            from vivary_git.parse import parse_blob  # YAML is imported only when something is parsed

            parsed = [(oid, parse_blob(self.source.read(oid))) for oid in todo]
        for oid, note in parsed:
            out[oid] = note
            if remember:
                cache.put(oid, note)
        self.stats.parsed += len(parsed)
        if remember:
            cache.flush(keep=(e.oid for e in self.source.entries))
        return out

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
        g = self.graph()
        findings = check_mod.apply_strictness(g.findings, self.config.strict if strict is None else strict)
        errors = sum(f.level == "error" for f in findings)
        checked = g.checked
        return CheckReport(
            checked=checked,
            clean=checked - len({f.path for f in findings}),
            errors=errors,
            warnings=len(findings) - errors,
            findings=findings,
        )

    def report_stats(self) -> None:
        if os.environ.get("VIVARY_STATS"):
            print(f"vivary: stats {msgspec.json.encode(self.stats).decode()}", file=sys.stderr)


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
) -> Workspace:
    """Open the workspace containing `path` (default: the current directory) at one tree."""
    start = Path(path) if path is not None else None
    return Workspace(open_source(start, rev=rev, staged=staged, root=root), cache=cache)
