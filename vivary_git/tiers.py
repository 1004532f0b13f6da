"""How a check is answered from what was cached, tier by tier: the first tier that has the answer gives
it, so a warm run reads one file and a run after an edit does work in proportion to the edit.

Every tier is filed under the tree's graph key (`graph_key`: the root tree id plus a digest of the package
version and the root folder's name, and of HEAD's commit and today's date when `created`/`updated` are
derived). A graph built with anything read from the shared cache is filed under a key of its own
(`shared=True`), which gates never look up (docs/cache.md, "Trust").

`check` (`findings`):

1. the cached check (`checks-vN/<key>`): this tree's findings and counts, read without decoding its graph;
2. the patched check, for `check --staged` a few edits away from the last graph computed here: that
   graph's cached findings with only the edited notes re-derived (`graph.patch_findings`), no graph decoded
   or written; its findings are kept (`findings-vN/`), as the hook's next baseline (this tree, once
   committed, is HEAD);
3. the graph, below, and its findings.

`graph`:

1. the cached graph (`graph-vN/<key>`);
2. the patched graph: the last graph computed here (`last`; for a run that may read the shared cache, then
   the last one built with its entries, `last-shared`) with only the edited notes re-derived (`graph.patch`),
   when libgit2's tree diff shows only note contents and files no link names changed; cached unless it is a
   staged tree close to its base (`_CACHE_STAGED_AFTER`);
3. the whole build from every document's facts (parses.py: this run, the local cache, the shared cache, or
   parsed), recorded in the shared cache alongside (record.py) and cached, with its check.

A baseline (`check --new-since`, the hook's HEAD) is the cached check's findings, else the findings
cache's, else a patched check of any source, else the graph's. The query index (`search_index`) is kept
beside the graph under the same key.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git import graph as graph_mod
from vivary_git import lifetime, record
from vivary_git.config import Config, excluder, leaves_out
from vivary_git.localcache import ObjectCache
from vivary_git.models import Finding
from vivary_git.source import Entry, Source, is_note
from vivary_git.version import __version__

if TYPE_CHECKING:
    from vivary_git.git import Repo as Git
    from vivary_git.parses import Parses, Stats
    from vivary_git.searchindex import SearchIndex


_LAST = "last"  # graph cache entry naming the key of the last graph computed: the base for patching
# The same for the last graph built with entries read from the shared cache (filed under its shared key):
# the base only for runs that may read the shared cache themselves, never for a gate.
_LAST_SHARED = "last-shared"
# A cache key (`graph_key`): a tree id and a digest. What a `last` pointer names is checked against it before it
# becomes a file name: nothing outside the cache folder is read whatever the pointer says.
_KEY = re.compile(r"[0-9a-f]{40,64}-[0-9a-f]{12}")
_PATCH_AT_MOST = 500  # beyond this many edited notes, a whole build costs about the same
# A staged tree's patched graph is cached only once it is this many notes away from its base: below,
# re-deriving those notes on the next hook run costs less than writing the graph (6 MB at 10,000
# notes) on every one; above, the cached graph becomes the next base and patches stay small.
_CACHE_STAGED_AFTER = 64
_RULE_FILES = ("tropo.toml", "workspace.toml", "graph.toml", "memory.toml")


class Tiers:
    """The cached answers of one workspace at one tree (`workspace.Workspace` holds one)."""

    def __init__(self, ws: record.Workspace, parses: Parses, *, vdir: Path | None, enabled: bool, root_name: str,
                 stats: Stats, reads_ref: Callable[[], bool]) -> None:
        self._ws = ws  # what recording is handed
        self._parses = parses
        self.source: Source = ws.source
        self.config: Config = ws.config
        self._vdir = vdir
        self._enabled = enabled
        self.root_name = root_name
        self.stats = stats
        self._reads_ref = reads_ref
        self._graph_cache = ObjectCache(vdir, "graph")
        self._check_cache = ObjectCache(vdir, "checks")  # findings and counts by graph key: `check` warm
        # findings alone by graph key, of trees checked without a graph: a staged tree (the next HEAD) or a
        # baseline, so the hook's `--new-since HEAD` finds HEAD's findings without re-deriving them
        self._findings_cache = ObjectCache(vdir, "findings", keep=8)
        self._graph: graph_mod.Graph | None = None
        self._shared_graph = False  # the graph in hand was built with entries read from the ref
        self._patched_shared = False  # the graph in hand was patched from a graph built with them
        self._patch_size = 0  # notes re-derived by the last patch
        self._base: tuple[str, graph_mod.Graph] | None = None  # the last graph decoded as a patch base, by key

    def graph_key(self, *, shared: bool = False) -> str | None:
        """The local cache key of this tree's graph. `shared`: a graph built with entries read from the
        shared ref cache is filed apart, where a gate never looks (docs/cache.md, "Trust")."""
        if not self._enabled or self.source.tree_id is None:
            return None
        # The workspace's folder in the repository, not only its name: a path's length on Windows counts it (W228).
        salt = f"{__version__}\0{self.root_name}\0{self.source.prefix}"
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
        key = self.graph_key()
        if key is None:
            return []
        shared = self.graph_key(shared=True) if self._reads_ref() else None
        return [(key, False)] + ([(shared, True)] if shared is not None else [])

    # --- the graph ----------------------------------------------------------------------------------------

    def graph(self) -> graph_mod.Graph:
        if self._graph is not None:
            return self._graph
        ws = self._ws
        for k, shared in self._keys():
            cached = self._graph_cache.get(k, msgspec.msgpack.Decoder(graph_mod.Graph))
            if cached is not None:
                self.stats.graph_cached = True
                self._graph, self._shared_graph = cached, shared
                # a tree first computed while it could not be recorded is recorded now
                record.record(ws, functools.partial(record.counts_of, cached), None)
                return cached
        key = self.graph_key()
        dates = self._parses.dates()
        patched = self._patched(key) if dates is None else None
        if patched is not None:
            self._graph = patched
            if key is not None and (self.source.kind != "staged" or self._patch_size > _CACHE_STAGED_AFTER):
                # A staged tree is checked by the pre-commit hook and then committed or replaced: its
                # graph is cached only when the base it was patched from has grown far behind.
                self._cache_graph(patched)
            record.record(ws, lambda: record.counts_of(patched), None)
            return patched
        keyed, flushes = self._parses.gather(dates)
        # Every document's facts, which nothing holds once the graph is built: freeing them one by one as this
        # returns cost ~0.12 CPU-seconds at 100,000 notes; a console run leaves them to the system (lifetime.py).
        lifetime.keep_until_exit(keyed)
        recorder = record.alongside(ws, keyed, flushes) if dates is None else None
        if recorder is None:
            record.write_flushes(flushes)
        self._graph = graph_mod.build(
            self.root_name, self.source.tree_id, self.config, [(e.path, e.oid, f) for e, _, f in keyed],
            unreadable=self.source.problems, others=self.source.others, prefix=self.source.prefix,
        )
        self._graph.rules = _rules_digest(self.config, self.source.overlays, self.source.prefix)
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
        self._shared_graph = self._patched_shared or bool(self._parses.not_computed_here())
        key = self.graph_key(shared=self._shared_graph)
        if key is None:
            return
        self._graph_cache.put(key, g)
        self._graph_cache.put(_LAST_SHARED if self._shared_graph else _LAST, key)
        self._check_cache.put(key, _Checked(g.findings, counts or record.counts_of(g), g.root, g.tree, g.rules,
                                            g.homes, [(n.id, n.path) for n in g.nodes], g.others, g.names,
                                            g.page_names, g.home_links))

    def _patched(self, key: str | None) -> graph_mod.Graph | None:
        """The graph of this tree as the last graph computed here (often HEAD's, or the previous staged
        tree's) with only the edited notes re-derived: what keeps a pre-commit check proportional to
        the commit. None whenever patching could differ from a full build (see `graph.patch`)."""
        if key is None:
            return None
        for base, shared in self._patch_bases(key):
            # Only workspaces without nested overlays: then the rules are the root config's, known without
            # walking the tree, and any overlay appearing shows up in the diff below.
            if base.rules != _rules_digest(self.config, {}, self.source.prefix):
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
            if last is None or not _KEY.fullmatch(last) or last in (key, self.graph_key(shared=True)):
                continue
            base = self._graph_cache.get(last, msgspec.msgpack.Decoder(graph_mod.Graph))
            if base is not None and base.tree is not None and base.root == self.root_name:
                self._base = (last, base)  # the query index's base too, when a query follows (`_patched_index`)
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
        return self._parses.changed_facts(changed_entries), others

    def _changed_notes(self, base_tree: str) -> tuple[list[Entry], list[str], list[str]] | None:
        """Notes whose content differs between `base_tree` and this tree, from Git's tree diff (which
        skips unchanged subtrees: no walk of the whole tree), and the other files (not notes, not
        excluded) added and removed, where links may name files. None when anything else changed: a
        note added, removed, renamed or made a link, a file's kind, or any config file (root, overlay,
        pack, graph.toml) touched."""
        repo, tree = self.source.repo, self.source.tree_id
        if repo is None or tree is None:
            return None
        changes = _tree_changes(repo, base_tree, tree)
        if changes is None:
            return None
        excluded = excluder(self.config)
        left_out = leaves_out(self.config)
        files_matter = self.config.links.dialect != "vivary"  # links may name any file: one added or removed counts
        regular = (0o100644, 0o100755)
        blobs = (0o100644, 0o100755, 0o120000)  # what the tree walk lists as other files
        out: list[Entry] = []
        added: list[str] = []
        removed: list[str] = []
        for old_mode, new_mode, new_id, status, path in changes:
            name = path.rsplit("/", 1)[-1]
            if name in _RULE_FILES or path.startswith((".tropo/", ".vivary/")):
                return None
            if files_matter and status != "M" and not excluded(path):
                if is_note(path):
                    return None
                if status == "A" and new_mode in blobs:
                    added.append(path)
                elif status == "D" and old_mode in blobs:
                    removed.append(path)
                else:
                    return None
                continue
            if not is_note(path) or excluded(path) or (left_out is not None and left_out(path)):
                continue
            if status != "M" or new_mode not in regular or old_mode not in regular:
                return None
            out.append(Entry(path, new_id, new_mode))
        return out, added, removed

    # --- the check ----------------------------------------------------------------------------------------

    def findings(self) -> tuple[list[Finding], int, list[str]]:
        """This tree's findings (strictness not applied), the documents checked and the other files (attachments,
        and the templates and drafts left out of the graph: no documents, though a name's finding may be on one),
        from the first tier that has them."""
        cached = self._cached_check()
        patched = self._patched_check() if cached is None else None
        if cached is not None:
            return cached.findings, cached.counts.checked, cached.others
        if patched is not None:
            found, checked, others = patched
            key = self.graph_key()
            if key is not None:  # once committed, this tree is HEAD: the hook's next baseline
                self._findings_cache.put(key, found)
            return found, checked, others
        g = self.graph()
        return g.findings, g.checked, g.others

    def _cached_check(self) -> _Checked | None:
        """This tree's findings and counts without decoding its graph (a warm `check` needs no
        nodes or edges: ~0.04 s less at 10,000 notes)."""
        if self._graph is not None:
            return None
        for key, _shared in self._keys():
            got = self._check_cache.get(key, msgspec.msgpack.Decoder(_Checked))
            if got is not None:
                self.stats.graph_cached = True
                record.record(self._ws, functools.partial(_counts_of_checked, got), None)  # as graph() does
                return got
        return None

    def baseline_findings(self) -> list[Finding]:
        """This tree's findings (strictness not applied) as cheaply as they can be had, for comparing
        another tree with (`check --new-since`): its cached check, else the last cached graph's findings
        with the edited notes re-derived (nothing written), else its graph."""
        key = self.graph_key() if self._graph is None else None
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

    def _patched_check(self, *, any_kind: bool = False) -> tuple[list[Finding], int, list[str]] | None:
        """`check --staged` after a few edits: the last cached graph's findings with the edited notes
        re-derived, from its cached findings and IDs alone (no graph decoded, no graph written: the
        staged tree is checked once, then committed or replaced). None when the full way is needed:
        the tree could be recorded in the ref (it is HEAD's), the base is missing or has other rules,
        more than `_CACHE_STAGED_AFTER` notes changed (then the graph is patched and cached), or
        patching could differ from a full build. With `any_kind`, for any source (a baseline's)."""
        if (self.source.kind != "staged" and not any_kind) or self._graph is not None \
                or self._parses.dates() is not None:
            return None
        key = self.graph_key()
        last = self._graph_cache.get(_LAST, msgspec.msgpack.Decoder(str)) if key is not None else None
        if key is None or last is None or last == key or not _KEY.fullmatch(last) \
                or (not any_kind and record.recordable_root(self.source) is not None):
            return None
        base = self._check_cache.get(last, msgspec.msgpack.Decoder(_Checked))
        if base is None or base.tree is None or base.root != self.root_name \
                or base.rules != _rules_digest(self.config, {}, self.source.prefix) \
                or len(base.nodes) != base.counts.checked:
            return None
        diff = self._changed_facts(base.tree, _CACHE_STAGED_AFTER, base.names, base.others)
        if diff is None:
            return None
        changed, others = diff
        paths_by_id = dict(base.nodes)  # whose ID is whose (links resolve to them): built in C, one pass
        findings = graph_mod.patch_findings(base.findings, {path: nid for nid, path in base.nodes}, paths_by_id,
                                            self.config, changed, None, others, base.page_names, paths_by_id,
                                            base.homes, base.home_links)
        if findings is None:
            return None
        if others is not base.others and others != base.others:
            findings = graph_mod.names_anew(findings, self.config, (path for _, path in base.nodes), others,
                                            self.source.prefix)
            if findings is None:
                return None
        self.stats.reused += base.counts.checked - len(changed)
        self.stats.patched = True
        return findings, base.counts.checked, others

    # --- the query index ----------------------------------------------------------------------------------

    def search_index(self) -> SearchIndex:
        """The query index of this tree: the cached one, else the last one made here patched with the notes
        that changed (`_patched_index`), else built from the graph and notes; then cached (apart, when made
        with anything read from the shared cache, as the graph is)."""
        from vivary_git import searchindex

        graph = self.graph()
        ids = [n.id for n in graph.nodes]
        cache = ObjectCache(self._vdir, "search", keep=4)
        for key, _shared in self._keys():
            cached = cache.get(key, msgspec.msgpack.Decoder(searchindex.SearchIndex))
            if cached is not None and cached.ids == ids:
                return cached
        patched = self._patched_index(cache, graph, ids)
        index = patched[0] if patched is not None else searchindex.build(graph, self._parses.all_notes())
        # shared when the graph was (a cached one built with shared entries leaves not_computed_here empty),
        # or the index it was patched from
        shared = self._shared_graph or bool(self._parses.not_computed_here()) or (patched is not None and patched[1])
        put = self.graph_key(shared=shared)
        if put is not None:
            cache.put(put, index)
            cache.put(_LAST_SHARED if shared else _LAST, f"{__version__}\0{put}")  # a release's words: its own base
        return index

    def _patched_index(self, cache: ObjectCache, graph: graph_mod.Graph,
                       ids: list[str]) -> tuple[SearchIndex, bool] | None:
        """This tree's query index as the last one built here with the documents that changed since put in
        place (`searchindex.patch`), and whether that one was built with shared entries; None when there is
        none, its graph is gone from the cache, or the two graphs differ in more than content: a note edited
        no longer costs a build over every note (~14 s and 1.5 GB at 100,000 notes)."""
        from vivary_git import searchindex

        for pointer, shared in ((_LAST, False), (_LAST_SHARED, True)):
            if shared and not self._reads_ref():
                return None
            pointed = cache.get(pointer, msgspec.msgpack.Decoder(str))
            version, _, last = (pointed or "").partition("\0")
            if version != __version__ or not _KEY.fullmatch(last):
                continue  # another release may split words otherwise: what it indexed is not patched
            base_graph = self._base[1] if self._base is not None and self._base[0] == last else \
                self._graph_cache.get(last, msgspec.msgpack.Decoder(graph_mod.Graph))
            if base_graph is None or base_graph.root != graph.root:
                continue
            changed = searchindex.changed_documents(base_graph, graph)
            if changed is None:
                continue
            base = cache.get(last, msgspec.msgpack.Decoder(searchindex.SearchIndex))
            if base is None or base.ids != ids:
                continue
            nodes = {i: graph.nodes[i] for i in changed}
            notes = self._parses.notes_for(list(dict.fromkeys(n.blob for n in nodes.values())))
            sources = {i: searchindex.node_sources(n, notes[n.blob], searchindex.outgoing_of(graph, n.id))
                       for i, n in nodes.items()}
            try:
                return searchindex.patch(base, sources), shared
            except ValueError:  # a cached index that does not hold what its graph says: build anew
                continue
        return None


_Counts = record.Counts  # the same record (array-like, same fields), cached in checks-vN


class _Checked(msgspec.Struct, frozen=True, array_like=True):
    """What `check` needs of a graph (cached beside it): its findings and counts, and, to re-check a
    staged tree a few edits away, what `graph.patch_findings` needs besides."""

    findings: list[Finding]
    counts: _Counts
    root: str
    tree: str | None
    rules: str
    homes: list[str]  # graph.Graph.homes
    nodes: list[tuple[str, str]]  # (id, path) of every node
    others: list[str] = []  # the other files a link may name (graph.Graph.others)
    names: list[str] | None = None  # what links look for (graph.Graph.names)
    page_names: dict[str, list[str]] = {}  # graph.Graph.page_names
    home_links: dict[str, list[str]] = {}  # graph.Graph.home_links


def _tree_changes(repo: Git, old: str, new: str) -> list[tuple[int, int, str, str, str]] | None:
    """(old mode, new mode, new blob id, status letter, path) of every file that differs between two trees,
    from `git diff-tree` (raw, no rename detection), or None when Git cannot tell. Git compares the raw
    tree objects: at 300,000 notes, 15,000 to a folder, it took 0.01-0.02 CPU-seconds to libgit2's 0.15
    for ten edited notes (a third of the pre-commit hook). Replace refs are not followed: the trees are
    the ones this run read. Nor is the index read: `git diff-tree` loads it (30 MB at 300,000 notes, 0.03 s
    of the hook) though a raw diff of two trees uses nothing in it, so it is pointed at a file that is not
    there (an absent index is an empty one)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(repo.vivary_dir / "tmp" / "no-index")}
    proc = repo.git(["--no-replace-objects", "diff-tree", "-r", "-z", "--raw", "--no-renames", "--no-ext-diff",
                     "--end-of-options", old, new], check=False, env=env)
    if proc.returncode != 0:
        return None
    fields = proc.stdout.split(b"\0")
    out: list[tuple[int, int, str, str, str]] = []
    try:
        for head, path in zip(fields[0:-1:2], fields[1::2], strict=True):
            old_mode, new_mode, _old_id, new_id, status = head.decode("ascii").lstrip(":").split(" ")
            out.append((int(old_mode, 8), int(new_mode, 8), new_id, status[:1],
                        path.decode("utf-8", "surrogateescape")))
    except ValueError:  # not what `--raw -z` writes: read nothing from it
        return None
    return out


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


def _rules_digest(config: Config, overlays: Mapping[str, Config], prefix: str) -> str:
    """Every rule source a graph depends on besides the notes: root config, nested overlays, and the workspace's
    folder in the repository (a path's length on Windows counts it: W228), so no graph of a workspace elsewhere
    is patched into this one's."""
    parts = [config.digest(), *(f"{d}\0{c.digest()}" for d, c in sorted(overlays.items())), f"prefix\0{prefix}"]
    return hashlib.sha256("\0".join(parts).encode("utf-8", "surrogateescape")).hexdigest()[:16]
