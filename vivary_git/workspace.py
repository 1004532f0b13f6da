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
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git import check as check_mod
from vivary_git import graph as graph_mod
from vivary_git.check import DateLookup
from vivary_git.localcache import ObjectCache, ParseCache
from vivary_git.models import Finding, Note
from vivary_git.parse import parse_blob
from vivary_git.source import Source, open_source

if TYPE_CHECKING:
    from vivary_git.history import Dates


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


class Workspace:
    """One workspace at one tree. Cheap to create; work happens on first use and is cached."""

    def __init__(self, source: Source, *, cache: bool = True) -> None:
        self.source = source
        self.config = source.config
        self.cache_enabled = cache and source.caching
        vdir = source.repo.vivary_dir if (self.cache_enabled and source.repo is not None) else None
        self._parse_cache = ParseCache(vdir)
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
        notes = self.notes()
        entries = self.source.entries
        self._graph = graph_mod.build(
            self.root_name, self.source.tree_id, self.config,
            [(e.path, e.oid) for e in entries], notes, unreadable=self.source.problems, dates=self._date_lookup(),
            overlays=self.source.overlays,
        )
        if key is not None:
            self._graph_cache.put(key, self._graph)
        return self._graph

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
        """Parsed notes by blob id, for every note in the tree."""
        if self._notes is not None:
            return self._notes
        notes: dict[str, Note] = {}
        cache = self._parse_cache
        missing: list[str] = []
        for entry in self.source.entries:
            if entry.oid in notes:
                continue
            note = cache.get(entry.oid)
            if note is None:
                missing.append(entry.oid)
                notes[entry.oid] = None  # type: ignore[assignment]  # placeholder, filled below
            else:
                self.stats.reused += 1
                notes[entry.oid] = note
        parsed = None
        repo = self.source.repo
        if missing and repo is not None:
            from vivary_git.parallel import parse_many

            parsed = parse_many(str(repo.git_dir), missing)
        if parsed is None:
            parsed = [(oid, parse_blob(self.source.read(oid))) for oid in missing]
        for oid, note in parsed:
            notes[oid] = note
            cache.put(oid, note)
        self.stats.parsed += len(parsed)
        cache.flush(keep=notes)
        self._notes = notes
        return notes

    def note(self, blob: str) -> Note:
        return self.notes()[blob]

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
