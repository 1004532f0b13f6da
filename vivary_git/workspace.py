"""The library entry point: open a workspace at one tree, get its graph, notes and findings.

    from vivary_git import open_workspace
    ws = open_workspace("path/to/repo", rev="HEAD")
    report = ws.check()
    for finding in report.findings: print(finding.render())

Each parse is a pure function of its blob id and each graph a pure function of its tree id, so both
are cached (locally under `.git/vivary/`) and a run does work in proportion to what changed.
`Workspace` is the facade a command uses; how a graph or a check is answered from what was cached, tier
by tier, is tiers.py's, and where each note and document's facts come from (this run, the local cache,
the shared cache, or parsed across forked children) is parses.py's.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git import check as check_mod
from vivary_git import git, portable
from vivary_git import graph as graph_mod
from vivary_git.models import Finding, Node, Note
from vivary_git.parses import Parses, Stats
from vivary_git.source import Source, open_source
from vivary_git.tiers import Tiers

if TYPE_CHECKING:
    from vivary_git import privacy
    from vivary_git.record import Held, Keyed
    from vivary_git.searchindex import SearchIndex
    from vivary_git.store.refcache import RefCache


class CheckReport(msgspec.Struct, frozen=True):
    """The contract's `check --json` shape. `clean` counts documents with no finding (as tropo)."""

    checked: int
    clean: int
    errors: int
    warnings: int
    findings: list[Finding]


class Workspace:
    """One workspace at one tree. Cheap to create; work happens on first use and is cached."""

    def __init__(self, source: Source, *, cache: bool = True, gate: bool = False, shared_cache: bool = True) -> None:
        self.source = source
        if source.repo is not None and source.public is None:
            # A file a tree lacks (a partial clone's) is named in the refusal only when it is no private note.
            source.public = functools.partial(_public, source)
        self.gate = gate
        self.config = source.config
        # Inside a push's quarantine (a pre-receive hook) every cache is off, read and write, as with --no-cache:
        # derived state is never written where Git forbids refs and throws away what was written (git.py).
        self.cache_enabled = cache and source.caching and not git.quarantined()
        vdir = source.repo.vivary_dir if (self.cache_enabled and source.repo is not None) else None
        self.stats = Stats()
        # --- issue 4: the shared ref cache (store/), second level behind the local hot cache ---
        self._ref: RefCache | None = None
        self._ref_checked = not shared_cache  # without the shared cache: neither read nor recorded
        # privacy questions answered during the command that set it (`privacy.PrivacyMemo`); None: ask every time
        self.privacy_memo: privacy.PrivacyMemo | None = None
        self.held: Held | None = None  # this tree's recording, held back for one cache commit (`record.one_commit`)
        self._others: list[str] | None = None  # the tree's files that are no documents, once a check asked
        self._parses = Parses(source, self.root_name, vdir, self.stats, self.refcache)
        self._tiers = Tiers(self, self._parses, vdir=vdir, enabled=self.cache_enabled, root_name=self.root_name,
                            stats=self.stats, reads_ref=self._reads_ref)

    @property
    def root_name(self) -> str:
        return self.source.root.name or "root"

    @property
    def tree_id(self) -> str | None:
        return self.source.tree_id

    # --- answers ------------------------------------------------------------------------------------------

    def graph(self) -> graph_mod.Graph:
        """This tree's typed graph, from the first tier that has it (tiers.py)."""
        return self._tiers.graph()

    def check(self, *, strict: bool | None = None) -> CheckReport:
        found, checked, self._others = self._tiers.findings()
        findings = check_mod.apply_strictness(found, self.config.strict if strict is None else strict)
        errors = sum(f.level == "error" for f in findings)
        report = CheckReport(
            checked=checked,
            clean=checked - len(self.documents(findings)),
            errors=errors,
            warnings=len(findings) - errors,
            findings=findings,
        )
        self._record_verdict(report)
        return report

    def documents(self, findings: Iterable[Finding]) -> set[str]:
        """The documents among the paths of these findings of this tree (what `clean` does not count): a name's
        finding on an attachment, a template or a draft left out of the graph is on no document."""
        if self._others is None:
            self._others = self._tiers.findings()[2]
        return portable.documents(findings, self._others)

    def baseline_findings(self) -> list[Finding]:
        """This tree's findings (strictness not applied) as cheaply as they can be had, for comparing
        another tree with (`check --new-since`): see tiers.py."""
        return self._tiers.baseline_findings()

    def search_index(self) -> SearchIndex:
        """The query index of this tree: built once from the graph and notes, then cached beside the graph."""
        return self._tiers.search_index()

    def resolve_node(self, name: str, *, private: Callable[[Collection[str]], Set[str]] | None = None) -> Node:
        """The node `name` means: its id, or the note's name or path as a link in this workspace's
        dialect writes it, or its path from the repository's top (`graph.resolve_node`). Raises
        `UsageError` for a name that means no node or several (listing them; those `private` says are private,
        `hidden.private_paths` where others read the refusal, counted instead)."""
        return graph_mod.resolve_node(self.graph(), name, prefix=self.source.prefix, private=private)

    def resolve_edge_specs(self, specs: Iterable[str], *,
                           hidden: Callable[[Collection[str]], Set[str]] | None = None) -> list[str]:
        """`--edge FIELD:TARGET` filters with each TARGET resolved to its node's id (`resolve_node`); for search,
        `hidden` (`hidden.PrivateNodes`) keeps a TARGET naming a private note as written and a refusal from
        naming one (`graph.resolve_edge_specs`)."""
        return graph_mod.resolve_edge_specs(self.graph(), specs, prefix=self.source.prefix, hidden=hidden)

    # --- notes --------------------------------------------------------------------------------------------

    def notes(self) -> Mapping[str, Note]:
        """Parsed notes (bodies included) by blob id, for every note in the tree."""
        return self._parses.all_notes()

    def notes_for(self, blobs: list[str]) -> dict[str, Note]:
        """Parsed notes of these blobs of the tree, at once: from the parse cache when there are many."""
        return self._parses.notes_for(blobs)

    def note(self, blob: str) -> Note:
        return self._parses.note(blob)

    def lazy_notes(self) -> Mapping[str, Note]:
        """Notes by blob id, parsed (or read from the cache) only when looked up."""
        return self._parses.lazy()

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
        return self._parses.not_computed_here()

    def facts_for_recording(self) -> Keyed:
        """Every document's facts with its fact key, as `graph()` gathers them (for record.py)."""
        return self._parses.facts_for_recording()

    def shared_parses(self, oids: list[str]) -> dict[str, bytes]:
        """The shared encoding of these blobs' parses (parses.py)."""
        return self._parses.shared_parses(oids)

    def drop_shared_parses(self) -> None:
        """Forget the shared encodings kept for recording (parses.py), once a forked child records."""
        self._parses.drop_shared()

    def reopen_after_fork(self) -> None:
        """In a forked child: a libgit2 handle of its own (one must not be shared across a fork), and no
        local cache writes (the parent writes what is pending; a second copy would only waste time)."""
        repo = self.source.repo
        if repo is not None:
            repo.repo = repo.reopen()
        self._ref, self._ref_checked = None, False
        self._parses.discard_writes()

    def cache_keys(self) -> tuple[str | None, set[str], set[str]]:
        """issue 4 (`cache gc`): this tree's summary key, blob ids and fact keys, computed without parsing."""
        return self._parses.cache_keys()

    def _record_verdict(self, report: CheckReport) -> None:
        """issue 4: with `git config vivary.notes true`, `check --rev COMMIT` notes its counts on COMMIT, as the
        verdict of this workspace's folder (store/notes.py: the other folders' verdicts stay)."""
        repo = self.source.repo
        if repo is None or self.source.kind != "rev" or self.source.tree_id is None or not self.cache_enabled:
            return
        from vivary_git.store.notes import Verdict, notes_enabled, unwritten, write_note

        if not notes_enabled(repo):
            return
        try:
            commit = str(repo.repo.revparse_single(self.source.label).peel(repo.pygit2.Commit).id)
        except (KeyError, ValueError, repo.pygit2.GitError):
            return  # a tree, not a commit: nothing to note it on
        verdict = Verdict(tree=self.source.tree_id, checked=report.checked, errors=report.errors,
                          warnings=report.warnings, clean=report.clean, folder=self.source.prefix)
        if not write_note(repo, commit, verdict):
            print(f"vivary: could not write the verdict note: {unwritten(repo)}", file=sys.stderr)

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


def _public(source: Source, paths: Sequence[str]) -> list[bool]:
    """Which of `source`'s workspace-relative `paths` the privacy boundary admits (`privacy.deciding_for_tree`)."""
    from vivary_git import privacy

    prefix = f"{source.prefix}/" if source.prefix else ""
    return [not d.private for d in privacy.deciding_for_tree(source, [prefix + p for p in paths])()]
