"""A tree's notes and per-document facts for one run, each taken from the cheapest place that has it.

A note is a pure function of its blob id; a document's facts of (blob id, the rules in force for its
folder, the root's name, its path), hashed into its fact key (`_Rules.fact_key`). Each is looked for:

1. in this run: parsed here, or handed back still encoded by a worker process;
2. in the local cache under `.git/vivary/` (`parse-vN/`, `facts-vN/`), which holds only what this machine
   computed; the parse cache is loaded only when many notes are wanted (loading it costs more than parsing
   a few hundred);
3. in the shared cache, `refs/vivary/cache`, as far as `vivary.cacheTrust` lets it be read (never in a
   gate): what is read there is never written to the local cache, and facts derived from a parse read there
   are tainted: neither is recorded again (`not_computed_here`), and a graph built with either is filed
   apart (tiers.py);
4. parsed: above 1,500 blobs with nothing cached, in forked children, one share per core, whose parses come
   back still encoded (`parallel.parse_many`, `derive_many`), so this process never rebuilds those notes.

While a cold graph is built, the local cache writes wait until the build is done (`gather`), and are made
while the recording child commits (record.alongside). Facts depend on history only when `derive` names
`created`/`updated`: then dates come from one history walk (`dates`) and facts are not cached.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from vivary_git import graph as graph_mod
from vivary_git.check import DateLookup
from vivary_git.config import Config
from vivary_git.localcache import ObjectCache, SegmentCache, parse_cache
from vivary_git.models import Note
from vivary_git.source import Entry, Source

if TYPE_CHECKING:
    from vivary_git.history import Dates
    from vivary_git.record import Flushes, Keyed
    from vivary_git.store.refcache import RefCache


T = TypeVar("T")

_LOAD_PARSE_CACHE_ABOVE = 300
# Above this many blobs parsed at once, with a local cache, each parsing process writes its parses to the cache
# as it goes and keeps none (`Parses._derive_parsing`): later look-ups of many load them back from there.
_STREAM_ABOVE = _LOAD_PARSE_CACHE_ABOVE


class Stats(msgspec.Struct):
    parsed: int = 0  # blobs parsed this run
    reused: int = 0  # blobs whose parse came from a cache
    graph_cached: bool = False
    patched: bool = False  # the graph was the last one with only the edited notes re-derived
    redone: int = 0  # blobs a worker process failed at, parsed again in this one (parallel.py)


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


class Parses:
    """The notes and facts of one workspace at one tree, for one run (`workspace.Workspace` holds one)."""

    def __init__(self, source: Source, root_name: str, vdir: Path | None, stats: Stats,
                 refcache: Callable[[], RefCache | None]) -> None:
        self.source = source
        self.config = source.config
        self.root_name = root_name
        self.stats = stats
        self._refcache = refcache  # the shared cache, as far as this run may read it
        self._parse_cache = parse_cache(vdir)
        self._fact_cache = SegmentCache(vdir, "facts", graph_mod.Facts)
        self._history_cache = ObjectCache(vdir, "history")
        self._notes: dict[str, Note] | None = None
        self._from_ref: set[str] = set()  # parse (blob ids) and facts (keys) read from the ref this run
        self._tainted: set[str] = set()  # fact keys derived here from a parse read from the ref
        self._computed_notes: dict[str, Note] = {}  # parsed in this process this run
        self._encoded_notes: dict[str, msgspec.Raw] = {}  # parsed by worker processes, still msgpack
        # parsed this run and written to the parse cache where they were parsed: their shared encoding
        self._shared: dict[str, bytes] = {}
        # local cache writes left until the graph is built (see record.alongside): (cache, what to keep)
        self._deferred: Flushes | None = None

    # --- notes -------------------------------------------------------------------------------------------

    def all_notes(self) -> Mapping[str, Note]:
        """Parsed notes (bodies included) by blob id, for every note in the tree."""
        if self._notes is None:
            self._notes = self.notes_for([e.oid for e in self.source.entries])
        return self._notes

    def note(self, blob: str) -> Note:
        # A single note (a snippet, a packet) is cheaper to parse again than to cache.
        return self._notes[blob] if self._notes is not None else self.notes_for([blob], remember=False)[blob]

    def lazy(self) -> Mapping[str, Note]:
        """Notes by blob id, parsed (or read from the cache) only when looked up."""
        return _LazyNotes(self)

    def notes_for(self, oids: list[str], *, remember: bool = True) -> dict[str, Note]:
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

            parsed = parse_many(repo.reopen, todo, self.source.read, self._count_redone)
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

    # --- facts -------------------------------------------------------------------------------------------

    def gather(self, dates: DateLookup | None) -> tuple[Keyed, Flushes]:
        """Every document's facts with its fact key (`all_facts`), with the local cache writes they cause
        left pending, for the caller to make once the graph is built (see `record.alongside`)."""
        self._deferred = []
        try:
            keyed = self.all_facts(dates)
        finally:
            flushes, self._deferred = self._deferred, None
        return keyed, flushes

    def all_facts(self, dates: DateLookup | None) -> Keyed:
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
        ref = self._refcache() if fact_cache is not None and missing else None
        shared: dict[str, graph_mod.Facts] = ref.get("facts", missing) if ref is not None else {}
        found.update(shared)
        self._from_ref.update(shared)
        self.stats.reused += len(keyed) - len(missing) + len(shared)
        todo = [(e, k) for e, k in keyed if k not in found]
        computed = self._derive(todo, rules, dates)
        for (e, k), (f, written) in zip(todo, computed, strict=True):
            found[k] = f
            if e.oid in self._from_ref:
                self._tainted.add(k)  # derived from a parse read from the shared cache
            elif fact_cache is not None and not written:
                fact_cache.put(k, f)
        out: Keyed = [(e, k, found[k]) for e, k in keyed]
        if fact_cache is not None:
            self._flush(fact_cache, lambda: (k for _, k in keyed))
        return out

    def _derive(self, todo: list[tuple[Entry, str]], rules: _Rules,
                dates: DateLookup | None) -> list[tuple[graph_mod.Facts, bool]]:
        """The facts of these documents (with their fact keys), whose facts no cache had, and whether
        they are in the fact cache already. Blobs whose parse no cache has either are parsed and
        derived in one go (`_work`), in worker processes when there are many (a cold run)."""
        if not todo:
            return []
        root_name = self.root_name

        def derive(path: str, oid: str, note: Note) -> graph_mod.Facts:
            cfg, folder_types = rules.at(path)
            return graph_mod.facts(path, oid, note, cfg, folder_types, root_name, dates)

        notes = self._cached_notes([e.oid for e, _ in todo])
        rest = [(e.oid, e.path, k) for e, k in todo if e.oid not in notes]
        derived: dict[tuple[str, str], tuple[graph_mod.Facts, bool]] = {}
        if rest and dates is None:  # dates (history) are looked up lazily, in this process
            derived = self._derive_parsing(rest, derive)
        elif rest:
            notes.update(self._parse(list(dict.fromkeys(oid for oid, _, _ in rest))))
        return [derived.get((e.oid, e.path)) or (derive(e.path, e.oid, notes[e.oid]), False) for e, _ in todo]

    def _derive_parsing(self, rest: list[tuple[str, str, str]], derive: Callable[[str, str, Note], graph_mod.Facts],
                        ) -> dict[tuple[str, str], tuple[graph_mod.Facts, bool]]:
        """Parse these (blob, path, fact key) and derive their facts, across processes when there are many.
        With a local cache, each process writes the parses and facts it made to segments of its own as
        it goes, and keeps of each note only its shared encoding (for recording, store/format.py): no
        process holds every note (at 100,000 notes they were ~340 MB as objects, half that encoded);
        later look-ups read them back from the parse cache. Without one, or for a few hundred notes, the
        notes are kept, a worker's still encoded, so this process never rebuilds them."""
        streamed = len(rest) > _STREAM_ABOVE and self._parse_cache.dir is not None and self._fact_cache.dir is not None
        work = self._work(derive, streamed=streamed, shared=streamed and self._refcache() is not None)
        repo = self.source.repo
        results: list[tuple[Any, graph_mod.Facts]] | None = None  # Any: a Note, or bytes, or a Note encoded
        if repo is not None:
            from vivary_git.parallel import derive_many

            facts_t = graph_mod.Facts
            kept = (Note | bytes) if streamed else msgspec.Raw
            results = derive_many(repo.reopen, rest, self.source.read, work,
                                  list[tuple[kept, facts_t]], list[tuple[Note | bytes, facts_t]],  # type: ignore[valid-type]
                                  self._count_redone)
        if results is None:
            results = work(self.source.read, rest)
        derived: dict[tuple[str, str], tuple[graph_mod.Facts, bool]] = {}
        for (oid, path, _), (note, f) in zip(rest, results, strict=True):
            if isinstance(note, Note):  # not written by the worker: cached here, as a note parsed here
                self._computed_notes[oid] = note
                self._parse_cache.put(oid, note)
            elif streamed:  # written by the worker: only its shared encoding is kept
                derived[oid, path] = (f, True)
                if note:
                    self._shared[oid] = bytes(note)
                continue
            elif oid not in self._encoded_notes:
                self._encoded_notes[oid] = note
                self._parse_cache.put_encoded(oid, note)
            derived[oid, path] = (f, False)
        self.stats.parsed += len({oid for oid, _, _ in rest})
        self._flush(self._parse_cache, lambda: (e.oid for e in self.source.entries))
        return derived

    def _work(self, derive: Callable[[str, str, Note], graph_mod.Facts], *, streamed: bool,
              shared: bool) -> Callable[[Callable[[str], bytes], Sequence[tuple[str, str, str]]],
                                        list[tuple[Note | bytes, graph_mod.Facts]]]:
        """What one process does with its share of (blob, path, fact key): parse, derive, and, `streamed`,
        write both to the local caches' new segments, handing back the note's shared encoding (empty
        unless `shared`) in its place; a note or facts a segment could not take comes back as the note."""
        parse_cache, fact_cache = self._parse_cache, self._fact_cache

        def work(read: Callable[[str], bytes],
                 share: Sequence[tuple[str, str, str]]) -> list[tuple[Note | bytes, graph_mod.Facts]]:
            from vivary_git.parse import parse_read
            from vivary_git.store.format import encode_shared

            notes = parse_cache.writer() if streamed else None
            facts = fact_cache.writer() if notes is not None else None
            out: list[tuple[Note | bytes, graph_mod.Facts]] = []
            written: set[str] = set()
            try:
                for oid, path, key in share:
                    note = parse_read(read, oid)
                    f = derive(path, oid, note)
                    if notes is not None and facts is not None and (oid in written or notes.add(oid, note)) \
                            and facts.add(key, f):
                        written.add(oid)
                        out.append((encode_shared(note) if shared else b"", f))
                    else:
                        out.append((note, f))
            except BaseException:
                for w in (notes, facts):
                    if w is not None:
                        w.abandon()
                raise
            for w in (notes, facts):
                if w is not None:
                    w.close()
            return out

        return work

    def changed_facts(self, entries: list[Entry]) -> dict[str, tuple[str, graph_mod.Facts]]:
        """(blob, facts) by path of these edited documents, for patching (tiers.py): the fact cache's when
        it is loaded, else derived under the root config's rules (a patch is tried only without overlays)."""
        rules = _Rules(self.config, {})  # no overlays: the callers checked, without walking the tree
        notes = self.notes_for([e.oid for e in entries])
        changed: dict[str, tuple[str, graph_mod.Facts]] = {}
        for e in entries:
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
        return changed

    def dates(self) -> DateLookup | None:
        """`created`/`updated` of a path, from one history walk, when `derive` names them; else None."""
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

    # --- what recording and `cache gc` need ---------------------------------------------------------------

    def not_computed_here(self) -> set[str]:
        """Blob ids and fact keys whose entries this run read from the shared cache, or derived from a
        parse read there: never written to the local caches, never recorded again."""
        return self._from_ref | self._tainted

    def facts_for_recording(self) -> Keyed:
        """Every document's facts with its fact key, as a graph build gathers them (for record.py)."""
        counted = (self.stats.parsed, self.stats.reused)
        keyed = self.all_facts(None)
        # Stats describe the answer's work; gathering facts to record them is bookkeeping.
        self.stats.parsed, self.stats.reused = counted
        return keyed

    def shared_parses(self, oids: list[str]) -> dict[str, bytes]:
        """The shared encoding (`store/format.py` `encode_shared`) of these blobs' parses. One note at a time
        from its parse (this run's, or a worker's still encoded, which is re-encoded without being decoded):
        at 100,000 notes, holding them all decoded at once was ~200 MB."""
        from vivary_git.store.format import encode_shared, encode_shared_encoded

        parse: dict[str, bytes] = {}
        rest: list[str] = []
        for oid in oids:
            note = self._computed_notes.get(oid)
            encoded = self._encoded_notes.get(oid) if note is None else None
            if oid in self._shared:
                parse[oid] = self._shared[oid]
            elif note is not None:
                parse[oid] = encode_shared(note)
            elif encoded is not None:
                parse[oid] = encode_shared_encoded(encoded)  # never decoded into a Note
            else:
                rest.append(oid)
        for oid, note in self.notes_for(rest).items():  # neither: from the local cache, or parsed
            if oid not in self._from_ref:
                parse[oid] = encode_shared(note)
        return parse

    def drop_shared(self) -> None:
        """Forget the shared encodings kept for recording: the recording child has its copy (record.alongside)."""
        self._shared = {}

    def discard_writes(self) -> None:
        """In a forked child: no local cache writes (the parent writes what is pending)."""
        for cache in (self._parse_cache, self._fact_cache):
            cache.discard()

    def cache_keys(self) -> tuple[str | None, set[str], set[str]]:
        """issue 4 (`cache gc`): this tree's summary key, blob ids and fact keys, computed without parsing."""
        from vivary_git.store.format import tree_key

        rules = _Rules(self.config, self.source.overlays)
        entries = self.source.entries
        tree = self.source.tree_id
        tkey = tree_key(tree, self.config.digest(), self.source.prefix) if tree is not None else None
        return tkey, {e.oid for e in entries}, {rules.fact_key(e.path, e.oid, self.root_name) for e in entries}

    def _count_redone(self, blobs: int) -> None:
        self.stats.redone += blobs

    def _flush(self, cache: SegmentCache[T], keep: Callable[[], Iterable[str]]) -> None:
        """Write a local cache's new entries now, or, while a cold graph is computed, after the build,
        while the recording child commits (see `record.alongside`)."""
        if self._deferred is not None:
            self._deferred.append((cache, keep))
        else:
            cache.flush(keep=keep)


class _LazyNotes(Mapping[str, Note]):
    def __init__(self, parses: Parses) -> None:
        self._parses = parses

    def __getitem__(self, blob: str) -> Note:
        return self._parses.note(blob)

    def __iter__(self) -> Iterator[str]:
        return iter(self._parses.all_notes())

    def __len__(self) -> int:
        return len(self._parses.source.entries)
