"""Nodes and edges from parsed notes: pure functions of (paths, notes, config)."""

from __future__ import annotations

import bisect
import functools
import posixpath
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence, Set
from typing import NamedTuple

import msgspec

from vivary_git import check, dialects, escape, portable
from vivary_git.config import Config
from vivary_git.dialects import Target, logseq, registry, vivary
from vivary_git.errors import UsageError
from vivary_git.models import Edge, Finding, Ignore, Link, Node, Note

INDEX_STEMS = ("readme", "index", "_index")
slug = vivary.slug


def _stem(name: str) -> str:
    low = name.lower()
    for suffix in (".markdown", ".md"):
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def node_id(path: str, root_name: str, ids: str = "slug") -> str:
    """The ID a path derives. `ids = "path"` (a zero-config vault): the vault-relative path without its
    extension, NFC, so it is unique and keeps the name as written. `"slug"` (the contract's): the
    slugged stem, or the folder's name for an index document."""
    if ids == "path":
        return dialects.nfc(_stem(path))
    parts = path.split("/")
    stem = _stem(parts[-1])
    folder = parts[-2] if len(parts) > 1 else root_name
    if stem.lower() in INDEX_STEMS or stem.lower() == folder.lower():
        return slug(folder)
    return slug(stem)


def node_type(path: str, folder_types: Mapping[str, str], root_name: str) -> str | None:
    """The type of the nearest ancestor folder (the root included) named like some type's folder."""
    parts = [root_name, *path.split("/")[:-1]]
    for name in reversed(parts):
        t = folder_types.get(name)
        if t is not None:
            return t
    return None


def walk_key(path: str) -> str:
    """Document order: in each folder its files (sorted) come before its subfolders (sorted).
    As a string (a flag byte per level, NUL-terminated segments) it sorts like the tuples
    ((1, folder), ..., (0, file)) would, several times faster."""
    parts = path.split("/")
    return "".join(f"\x01{p}\x00" for p in parts[:-1]) + f"\x00{parts[-1]}"


def derived_title(nid: str) -> str:
    return nid.replace("-", " ").title()


class Graph(msgspec.Struct):
    """A workspace's typed graph at one tree: nodes by id, edges sorted, and every finding."""

    root: str
    tree: str | None
    config: Config
    nodes: list[Node]
    edges: list[Edge]
    findings: list[Finding]
    checked: int = 0  # documents read, unreadable ones included
    homes: list[str] = []  # Dendron vaults found to be this workspace (wikilink resolution)
    rules: str = ""  # digest of every rule source (config, overlays) this graph was built under
    others: list[str] = []  # paths of the other files a link may name (attachments, templates)
    # The last path segment of every name a document's link looks for, folded as the dialect matches
    # names: a file added or removed whose name is not among them cannot change how any link resolves
    # (`files_reach`). None: not known (an older cache), so any such file counts.
    names: list[str] | None = None
    page_names: dict[str, list[str]] = {}  # path -> the names it answers to besides its path (Facts.names)
    # Each home vault `dendron.yml` does not list -> the first documents whose links made it one (`_homes`): while
    # one of them is unedited, an edit keeps it a home (`patch`). Empty in an older cache: then none is known.
    home_links: dict[str, list[str]] = {}
    # The workspace's folder in the repository ('' at its top): a checkout writes it before every path (W228).
    prefix: str = ""
    # Each path reported as a duplicate id (E130) -> the path that has that id already, which its message names: what
    # masking reads to tell whether the finding names a private file (gates/private.py), never the message's words.
    # Empty in an older cache: then an E130 may name any file.
    duplicates: dict[str, str] = {}

    def by_id(self) -> dict[str, Node]:
        return {n.id: n for n in self.nodes}

    def counts(self) -> dict[str, int]:
        return {"nodes": len(self.nodes), "edges": len(self.edges), "broken": sum(e.broken for e in self.edges)}


class Facts(msgspec.Struct, frozen=True, array_like=True):
    """What one document contributes before IDs are resolved: a pure function of (blob, path,
    the config in force for its folder, the root's name), so it is cached by those and a run after
    an edit recomputes only the edited documents."""

    id: str
    type: str | None
    title: str
    findings: list[Finding]  # rules that need no other document, in tropo's per-document order
    refs: list[check.Ref]  # (field, line, target) of every ref value: W220 and edges
    links: list[Target]  # every link, as the vault's dialect reads it
    problem: bool  # E000/E001: the document's fields are unknown
    anchors: list[str] = []  # its headings and block ids, folded (only when anchors are checked)
    ignores: tuple[Ignore, ...] = ()  # codes its `vivary-ignore` comments and key silence (check.suppress)
    names: tuple[str, ...] = ()  # names it answers to besides its path (Logseq: title:: or "", alias::)


def facts(path: str, blob: str, note: Note, config: Config, folder_types: Mapping[str, str], root_name: str,
          dates: check.DateLookup | None = None) -> Facts:
    rules = config.links
    if note.problem is not None and note.problem.template and in_templates_folder(path, config):
        note = msgspec.structs.replace(note, problem=None)  # a template where templates are kept: no error
    nid = node_id(path, root_name, rules.ids)
    names = registry.page_names(note, rules)
    title = (names[0] if names and names[0] else None) or note.title or \
        (derived_title(nid) if rules.ids == "slug" else nid.rsplit("/", 1)[-1])
    node = Node(id=nid, type=node_type(path, folder_types, root_name), path=path, title=title, blob=blob)
    found, refs = check.validate_local(node, note, config, dates)
    links = registry.read_links(note, rules, config.wikilink_field, config.wikilinks)
    anchors = dialects.anchor_keys(note.anchors) if rules.anchors else []
    return Facts(nid, node.type, node.title, found, refs, links, note.problem is not None, anchors,
                 check.ignores_of(note), names)


def in_templates_folder(path: str, config: Config) -> bool:
    """Whether a vault keeps `path` among its templates: in a folder the editor's configuration names
    (any case: the vault may have been written on a case-insensitive disk), or, as a vault copied without
    that configuration keeps them, in a folder named like one (`Templates`, `_templates`, `99 Templates`).
    Never in a `tropo.toml` workspace, whose frontmatter is the contract's."""
    if not config.zero_config:
        return False
    folder = dialects.nfc(path.rsplit("/", 1)[0]).casefold() if "/" in path else ""
    kept = (dialects.nfc(t).casefold() for t in config.templates)
    if any(folder == t or folder.startswith(t + "/") for t in kept):
        return True
    return any(part.endswith(("template", "templates")) for part in folder.split("/"))


def build(
    root_name: str,
    tree: str | None,
    config: Config,
    docs: Sequence[tuple[str, str, Facts]],
    *,
    unreadable: Sequence[Finding] = (),
    others: Sequence[str] = (),
    prefix: str = "",
) -> Graph:
    """Assemble the graph from each document's `Facts` ((path, blob, facts), any order): claim IDs in
    document order, resolve refs and links, and put findings in document order (`walk_key`) and rule
    order within a document, as tropo's JSON. With the contract's ids the first path keeps a
    duplicated ID (E130) and the other contributes nothing, as tropo; with path ids no note is
    dropped: a true duplicate (`a.md` beside `a.markdown`) is reported and kept under `ID (2)`. `prefix`: the
    workspace's folder in the repository, which a path's length on Windows counts (W228)."""
    order = {path: walk_key(path) for path, _, _ in docs}
    order.update((f.path, walk_key(f.path)) for f in unreadable)
    ordered = sorted(docs, key=lambda d: order[d[0]])
    keep_all = config.links.ids == "path"
    owner: dict[str, Node] = {}
    owned: list[bool] = []
    ids: list[str] = []
    duplicates: dict[str, str] = {}  # E130: a path -> the path that has its id already
    for path, blob, f in ordered:
        nid = f.id
        first = nid not in owner
        if not first:
            duplicates[path] = owner[nid].path
        if not first and keep_all:
            n = 2
            while f"{nid} ({n})" in owner:
                n += 1
            nid = f"{nid} ({n})"
        if nid not in owner:
            owner[nid] = Node(id=nid, type=f.type, path=path, title=f.title, blob=blob)
        owned.append(first or keep_all)
        ids.append(nid)
    by_path = {n.path: n.id for n in owner.values()}
    anchors = {path: f.anchors for path, _, f in ordered} if config.links.anchors else {}
    page_names = {path: list(f.names) for path, _, f in ordered if f.names}
    resolver = _resolver(config, [p for p, _, _ in ordered], others, by_path, page_names)
    homes, home_links = _homes([(p, f.links) for (p, _, f), own in zip(ordered, owned, strict=True) if own], resolver)
    # Every edge starts at the node of the one document owning that ID: collected per source as
    # (field, to, broken) tuples, deduplicated and sorted per source (cheap tuple hashing and
    # comparison), the whole list comes out in order and each Edge is made once.
    outgoing: dict[str, set[_Out]] = {}
    unused: set[_Out] = set()  # a duplicate's edges: it owns no ID, so it contributes none
    same = _Same({nid: nid for nid in owner}, {})
    findings: list[Finding] = sorted(unreadable, key=lambda f: order[f.path])
    findings += _names(config, ordered, findings, duplicates, order, others, prefix)
    for (path, _, f), own, nid in zip(ordered, owned, ids, strict=True):
        if nid != f.id or not own:
            first_path = owner[f.id].path
            fix = "rename one of the two files" if not keep_all else \
                f"both stay in the graph, this one as '{nid}'; rename one of the two files"
            if path != first_path and dialects.nfc(path) == dialects.nfc(first_path):
                # Both names print alike: say why they are two (a file written on macOS is decomposed).
                fix = f"the same name in two Unicode forms (composed and decomposed, as macOS writes it); {fix}"
            findings.append(Finding(
                path, 1, "error", "E130",
                f"duplicate document id {f.id!r}: {escape.text(first_path)} has it already; {fix}",
            ))
        sink = outgoing.setdefault(nid, set()) if own else unused
        _contribute(path, nid, f, own, owner, by_path, resolver, homes, config, sink, findings, anchors, same)
    findings.sort(key=lambda f: order[f.path])  # stable: keeps rule order within a document
    nodes = sorted(owner.values(), key=lambda n: n.id)
    edges = [Edge(n.id, fld, to, broken) for n in nodes for fld, to, broken in sorted(outgoing.get(n.id, ()))]
    return Graph(root=root_name, tree=tree, config=config, nodes=nodes, edges=edges, findings=findings,
                 checked=len(docs) + len(unreadable), homes=sorted(homes), others=list(others),
                 names=link_names((f for _, _, f in ordered), config), page_names=page_names,
                 home_links=home_links, prefix=prefix, duplicates=duplicates)


def _names(config: Config, ordered: Sequence[tuple[str, str, Facts]], unreadable: Sequence[Finding],
           duplicates: Mapping[str, str], order: dict[str, str], others: Sequence[str],
           prefix: str) -> list[Finding]:
    """Each file's name that a checkout on macOS or Windows cannot hold (W226, W227, W228: `portable`), notes and
    the other files a link may reach (attachments, templates) alike, before the document's own findings; in one
    pass over the paths. A finding on another file joins `order` (document order)."""
    notes = [p for p, _, _ in ordered]
    paths = [*notes, *(f.path for f in unreadable), *others] if unreadable or others else notes
    if unreadable:  # a symbolic link is an unreadable note and one of the others
        paths = list(dict.fromkeys(paths))
    return _portable(config, paths, duplicates, order, prefix)


def _portable(config: Config, paths: Sequence[str], duplicates: Mapping[str, str],
              order: dict[str, str], prefix: str) -> list[Finding]:
    if not (config.portable_collisions or config.portable_windows):
        return []

    def key(path: str) -> str:
        got = order.get(path)
        if got is None:
            got = order[path] = walk_key(path)
        return got

    return portable.findings(paths, collisions=config.portable_collisions, windows=config.portable_windows,
                             duplicates=duplicates, order=key, prefix=prefix)


def names_anew(findings: Sequence[Finding], config: Config, notes: Iterable[str],
               others: Sequence[str], prefix: str = "") -> list[Finding] | None:
    """`findings` (in document order) with the names' findings (W226-W228) decided anew over these paths: files
    added or removed beside the notes (an attachment) change which names collide. None when a duplicate id
    (E130) is among them: which pair it names already is the full build's to decide (`duplicates`). `prefix`:
    the workspace's folder in the repository (W228)."""
    if any(f.code == "E130" for f in findings):
        return None
    order: dict[str, str] = {}
    found = _portable(config, [*notes, *others], {}, order, prefix)
    return sorted(found + [f for f in findings if f.code not in portable.CODES],
                  key=lambda f: order.get(f.path) or walk_key(f.path))


def _name_key(name: str, case: str) -> str:
    """The last segment of a name a link looks for (`a/b/../pic.png` -> `pic.png`), folded."""
    return dialects.fold(posixpath.basename(posixpath.normpath(name.strip("/") or ".")), case)


def link_names(docs: Iterable[Facts], config: Config) -> list[str] | None:
    """`Graph.names` of these documents: the folded last segments of every name their links look for
    (empty in a `tropo.toml` workspace, whose links resolve to IDs, never to files)."""
    if config.links.dialect == "vivary":
        return []
    case = config.links.case
    return sorted({_name_key(t.name, case) for f in docs for t in f.links if t.name})


def files_reach(names: Sequence[str] | None, files: Iterable[str], config: Config) -> bool:
    """Whether adding or removing these non-note files could change how some link resolves: a link
    finds a file by its name (or a path ending in it), so only a file whose last segment some link
    looks for can; in Foam a folder link also finds its `index` or `README`. Notes always win over
    other files of the same name, and a link reaching another file makes no edge or finding, so
    nothing else can change."""
    if config.links.dialect == "vivary":
        return False  # links resolve to IDs
    if names is None:
        return True
    known = set(names)
    case = config.links.case
    for path in files:
        if config.links.dialect == "logseq" and logseq.is_org_page(path):
            return True  # a page's name is its file's, `___` for `/`: any Org page may be one a link names
        base = dialects.fold(path.rsplit("/", 1)[-1], case)
        if base in known or (config.links.dialect == "foam" and base.split(".", 1)[0] in ("index", "readme")):
            return True
    return False


_Out = tuple[str, str, bool]  # an outgoing edge of a known source: (field, to, broken)


class _Same(NamedTuple):
    """One string object for each id (the node's own: an id maps to itself) and each field name the edges
    hold, instead of one copy per ref as the facts were decoded: sorting, caching and fingerprinting tens of
    thousands of edges then compare strings by identity and read few of them, which stay in the processor's
    cache (a third of the time of those steps at 10,000 notes)."""

    ids: dict[str, str]
    fields: dict[str, str]


def _first(name: str, _: str) -> str:
    return name


def _resolver(config: Config, notes: Sequence[str], others: Sequence[str], by_path: Mapping[str, str],
              page_names: Mapping[str, Sequence[str]], paths_by_id: dict[str, str] | None = None) -> dialects.Resolver:
    def ids() -> dict[str, str]:
        if paths_by_id is not None:
            return paths_by_id
        return {nid: path for path, nid in by_path.items()}

    return registry.resolver(config.links, notes, others, ids, page_names)


def link_resolver(graph: Graph) -> dialects.Resolver:
    """The resolver `build` resolved `graph`'s links with, made again from what the graph keeps: the same notes (its
    nodes' and those of duplicates that own no id, in document order), other files, ids and Logseq page names.
    Whatever looks a link up again (`check`'s hint on a link to an ignored file) asks it, so it cannot name another
    note than the graph did."""
    by_path = {n.path: n.id for n in graph.nodes}
    notes = sorted(by_path.keys() | {f.path for f in graph.findings if f.code == "E130"}, key=walk_key)
    return _resolver(graph.config, notes, graph.others, by_path, graph.page_names)


def _contribute(path: str, nid: str, f: Facts, own: bool, known: Mapping[str, object], by_path: Mapping[str, str],
                resolver: dialects.Resolver, homes: frozenset[str], config: Config, edges: set[_Out],
                findings: list[Finding], anchors: Mapping[str, list[str]], same: _Same | None = None) -> None:
    """One document's findings (its own, then W220, then its links', less those it silences) and, if it owns
    its ID, its edges, their ids and field names taken from `same` when given (`build`)."""
    start = len(findings)
    findings.extend(f.findings)
    add = edges.add
    if same is None:
        for ref in f.refs:
            target = ref[2]
            missing = target not in known
            if missing:
                findings.append(check.broken_ref(path, ref))
            if own and target:
                add((ref[0], target, missing))
        one: Callable[[str, str], str] = _first
    else:
        ids, one = same.ids.get, same.fields.setdefault
        for ref in f.refs:
            target = ref[2]
            node = ids(target)
            if node is None:
                findings.append(check.broken_ref(path, ref))
                if own and target:
                    add((one(ref[0], ref[0]), target, True))
            elif own and target:
                add((one(ref[0], ref[0]), node, False))
    rules = config.links
    anchored = rules.anchors
    resolve = resolver.resolve
    listing = check.LinkFindings(f.ignores)
    for t in f.links:
        res = resolve(t, path)
        reached = res.path
        if reached is not None:
            to = by_path.get(reached)
            if to is None:
                continue  # an attachment, a template, an excluded note: a file, not a node
            checked = anchored and t.anchor and (reached != path or not t.name)  # (leaving: itself)
            if checked and dialects.anchor_key(t.anchor) not in anchors.get(reached, ()) and \
                    listing.room("W222", t.line):
                findings.append(check.missing_anchor(path, t, reached))
            if own and to != nid:
                add((one(t.field, t.field), to, False))
            continue
        if t.vault and t.vault not in homes:
            continue  # a link into another Dendron vault: outside this repository
        code = resolver.missing_code(t)  # a missing note or a missing file, as the dialect's editor reads the name
        attachment = rules.attachments and code == "W223"
        # (bad frontmatter too: the editor reads its body's links all the same)
        if (attachment or rules.unresolved) and listing.room(check.broken_link_code(rules.dialect, code), t.line):
            findings.append(check.broken_link(path, t, res.looked_for, rules.dialect, code))
        if own and not attachment and res.looked_for != nid:
            add((one(t.field, t.field), res.looked_for, True))
    if listing.cut:
        findings.append(check.links_cut(path, listing.cut_line, listing.cut))
    if f.ignores:
        findings[start:] = check.suppress(findings[start:], f.ignores)


def edge_run(edges: Sequence[Edge], node_id: str, start: int = 0) -> tuple[int, int]:
    """Where the outgoing edges of `node_id` are in a graph's edge list, which is sorted by source: the run
    [lo, hi), found by bisection from `start` on."""
    lo = bisect.bisect_left(edges, Edge(node_id), start)
    return lo, bisect.bisect_left(edges, Edge(node_id + "\0"), lo)


def patch(base: Graph, tree: str | None, changed: Mapping[str, tuple[str, Facts]],
          others: Sequence[str] | None = None) -> Graph | None:
    """`base` with the documents at `changed` paths (path -> (new blob, new facts)) edited in place,
    or None when that would not equal a full `build`: only content edits of documents that own their
    ID, with the same paths, rules and root, and no cross-vault links in play, keep every other
    document's ID resolution, edges and findings unchanged. `others`: the tree's other files when
    they differ from the base's, by files no link names (`files_reach`)."""
    others = base.others if others is None else others
    if len(base.nodes) != base.checked or any(f.code == "E130" for f in base.findings):
        return None  # duplicates/unreadable files: ownership could shift
    owner = {n.id: n for n in base.nodes}
    outgoing: dict[str, set[_Out]] = {}
    merged = patch_findings(base.findings, {n.path: n.id for n in base.nodes}, owner, base.config, changed,
                            outgoing, others, base.page_names, homes=base.homes, home_links=base.home_links)
    if merged is None:
        return None
    if others is not base.others and others != base.others:
        merged = names_anew(merged, base.config, [n.path for n in base.nodes], others, base.prefix)
        if merged is None:
            return None
    for path, (blob, f) in changed.items():
        owner[f.id] = Node(id=f.id, type=f.type, path=path, title=f.title, blob=blob)  # same ID, new content
    ids = {f.id for _, f in changed.values()}
    # The base's edges are sorted by source, so each edited node's outgoing edges are one run of them:
    # found by bisection and replaced by its new ones, the rest copied in slices (no pass over every
    # edge in Python, no sort of the whole list).
    new_by_source = {nid: [Edge(nid, fld, to, broken) for fld, to, broken in sorted(outgoing[nid])] for nid in ids}
    all_edges: list[Edge] = []
    at = 0
    for nid in sorted(ids):
        lo, hi = edge_run(base.edges, nid, at)
        all_edges += base.edges[at:lo]
        all_edges += new_by_source[nid]
        at = hi
    all_edges += base.edges[at:]
    # `owner` kept the base's id order; replacing a value does not move its key.
    names = base.names
    if names is not None:  # names of links now gone stay: a superset only makes `files_reach` more careful
        names = sorted(set(names).union(link_names((f for _, f in changed.values()), base.config) or ()))
    return Graph(root=base.root, tree=tree, config=base.config, nodes=list(owner.values()), edges=all_edges,
                 findings=merged, checked=base.checked, homes=base.homes, rules=base.rules, others=list(others),
                 names=names, page_names=base.page_names, home_links=base.home_links, prefix=base.prefix,
                 duplicates=base.duplicates)


def patch_findings(findings: Sequence[Finding], ids_by_path: Mapping[str, str], owner: Mapping[str, object],
                   config: Config, changed: Mapping[str, tuple[str, Facts]],
                   outgoing: dict[str, set[_Out]] | None = None, others: Sequence[str] = (),
                   page_names: Mapping[str, Sequence[str]] | None = None,
                   paths_by_id: dict[str, str] | None = None, homes: Sequence[str] = (),
                   home_links: Mapping[str, Sequence[str]] | None = None) -> list[Finding] | None:
    """A graph's findings with the documents at `changed` paths re-derived (see `patch`), from just
    its findings and its documents' IDs: what `check --staged` needs, without the graph's edges.
    None when patching could differ from a full build. With `outgoing`, the edited documents'
    outgoing edges are collected there too. `paths_by_id`, when the caller has it: each ID's path (the
    last document's, in `ids_by_path` order), which links resolve to. `homes`, `home_links`: the graph's
    Dendron home vaults and, for those `dendron.yml` does not list, the documents whose links made them homes
    (`_homes`): patched only while each such home keeps one of those unedited (an edited document with a
    `dendron://` link is never patched), so the homes, and every link into them, stay as they were."""
    if config.links.anchors:
        return None  # anchors of the other notes are not at hand
    page_names = page_names or {}
    new: list[Finding] = []
    resolver = _resolver(config, list(ids_by_path), others, ids_by_path, page_names, paths_by_id)
    listed: frozenset[str] = getattr(resolver, "vaults_here", frozenset())
    links = home_links or {}
    if any(h not in listed and all(p in changed for p in links.get(h, ())) for h in homes):
        return None  # a home only edited documents' links made one: the edit may have taken those links away
    for path, (_, f) in changed.items():
        if ids_by_path.get(path) != f.id or any(t.vault for t in f.links):
            return None
        if tuple(page_names.get(path, ())) != f.names:
            return None  # its title:: or alias:: changed: other documents' links may now find it, or not
        sink = outgoing.setdefault(f.id, set()) if outgoing is not None else set()
        _contribute(path, f.id, f, True, owner, ids_by_path, resolver, frozenset(homes), config, sink, new, {})
    # A name's findings (W226, W227) stay: an edit keeps the paths.
    kept = [x for x in findings if x.path not in changed or x.code in portable.CODES]
    order: dict[str, str] = {}

    def key(x: Finding) -> str:
        got = order.get(x.path)
        if got is None:
            got = order[x.path] = walk_key(x.path)
        return got

    return sorted(kept + new, key=key)  # stable: rule order within a document is kept


def _homes(docs: Iterable[tuple[str, list[Target]]],
           resolver: dialects.Resolver) -> tuple[frozenset[str], dict[str, list[str]]]:
    """Vault names whose `dendron://` links resolve here: this workspace is (one of) those vaults.
    An unresolved link into any other vault points outside this repository and is not reported. A vault
    `dendron.yml` lists whose folder holds notes here is one too (`Resolver.vaults_here`). With, for each
    home only links made, the first two documents whose links did (`Graph.home_links`)."""
    listed: frozenset[str] = getattr(resolver, "vaults_here", frozenset())
    made: dict[str, list[str]] = {}
    for path, links in docs:
        for t in links:
            if not t.vault or t.vault in listed:
                continue
            by = made.get(t.vault)
            if by is not None and (len(by) == 2 or by[-1] == path):
                continue
            if resolver.resolve(t, path).path is not None:
                made.setdefault(t.vault, []).append(path)
    return listed | frozenset(made), made


_LISTED = 10  # candidates named in an ambiguity error


def resolve_node(graph: Graph, name: str, *, prefix: str = "",
                 private: Callable[[Collection[str]], Set[str]] | None = None) -> Node:
    """The node a person means by `name`: its id, else whatever a wikilink `[[name]]` written at the
    vault root names, looked up by the graph's own resolver (`link_resolver`: a name reaches the note a link
    to it reaches), else a path from the repository's top when the workspace is the folder `prefix`. Every
    command and API that takes a node id looks it up here. Raises `UsageError` (exit 2) when it names no
    node, or several notes (listing them: the editor would pick one silently, a command must not), or a
    duplicate that owns no id (E130: a link to that name reaches a note the graph leaves out). `private`, where
    others read the refusal (search, a masked `blast`), says which of the workspace-relative paths it is asked
    about are private: those notes are counted, not named (their ids are paths, or a private file's text).
    Only a refusal asks it."""
    nodes = graph.by_id()
    got = nodes.get(name)
    if got is not None:
        return got
    by_path = {n.path: n for n in graph.nodes}
    resolver = functools.cache(lambda: link_resolver(graph))  # made once, and only for a name that is no path
    paths = _named(graph, name, by_path, resolver)
    if prefix and name.startswith(prefix.rstrip("/") + "/") and not any(p in by_path for p in paths):
        paths = _named(graph, name[len(prefix.rstrip("/")) + 1:], by_path, resolver) or paths
    found = [by_path[p] for p in paths if p in by_path]
    others = [p for p in paths if p not in by_path]  # attachments, templates, and duplicates that own no id
    unowned = sorted(_duplicates(graph).intersection(others)) if others else []
    if len(found) == 1 and not unowned:
        return found[0]
    if not found and not unowned:
        raise UsageError(f"no node named {name!r} in this tree (an id, a path, or a name as a wikilink writes "
                         "it); `git vivary graph` lists the IDs")
    hidden = private([n.path for n in found] + unowned) if private is not None else frozenset()
    found, unowned = [n for n in found if n.path not in hidden], [p for p in unowned if p not in hidden]
    unnamed = f"{len(hidden)} private note(s), not named here" if hidden else ""
    if not found and not unowned:
        raise UsageError(f"{name!r} names {unnamed}; give the ID or path of the one you mean")
    if not found:
        raise UsageError(f"{name!r} names {', '.join(repr(p) for p in unowned)}, whose id another note has (E130), "
                         f"{f'and {unnamed}, ' if unnamed else ''}so it is in no graph: rename one of the two files "
                         "(`git vivary check` names them)")
    ids = [repr(i) for i in sorted(n.id for n in found)] + [f"{p!r} (its id is another note's, E130: in no graph)"
                                                             for p in unowned]
    more = f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else ""
    also = f", and {unnamed}" if unnamed else ""
    raise UsageError(f"{name!r} names {len(ids) + len(hidden)} notes: {', '.join(ids[:_LISTED])}{more}{also}; "
                     "give one of these IDs (or its path)")


def resolve_edge_specs(graph: Graph, specs: Iterable[str], *, prefix: str = "",
                       hidden: Callable[[Collection[str]], Set[str]] | None = None) -> list[str]:
    """`FIELD:TARGET` edge filters (query, find, recall) with each TARGET resolved by `resolve_node`
    to its node's id; a bare `FIELD` (or `FIELD:`) is kept as it is. A TARGET naming a node `hidden` says is
    hidden (a private note, for search) is kept as written: a search answer echoes its filters, and the
    private note's ID (`USER` for a typed `user`) is no part of it; no edge to such a note passes anyway. A
    TARGET naming several notes is refused naming none that `hidden` hides (nor a file that owns no id, which
    `hidden`, asked by id, cannot vouch for)."""
    private = None
    if hidden is not None:
        ask = hidden
        by_path = {n.path: n.id for n in graph.nodes}

        def private(paths: Collection[str]) -> Set[str]:
            said = ask([by_path[p] for p in paths if p in by_path])
            return {p for p in paths if p not in by_path or by_path[p] in said}
    out: list[str] = []
    for spec in specs:
        field, sep, target = spec.partition(":")
        if target.strip():
            node_id = resolve_node(graph, target.strip(), prefix=prefix, private=private).id
            target = target.strip() if hidden is not None and node_id in hidden([node_id]) else node_id
        out.append(f"{field.strip()}{sep}{target}")
    return out


def _named(graph: Graph, name: str, by_path: Mapping[str, Node],
           resolver: Callable[[], dialects.Resolver]) -> list[str]:
    """The paths `name` names: a node's path, else every path `[[name]]` written at the root could mean."""
    text = name.strip()
    if not text:
        return []
    if text in by_path:
        return [text]
    rules = graph.config.links
    target = registry.reader(rules.dialect)(Link(text, 1, "w"), rules, graph.config.wikilink_field)
    if target is None:
        return []
    return list(dict.fromkeys(resolver().candidates(target)))


def _duplicates(graph: Graph) -> set[str]:
    """The paths of documents whose id another document has (E130) and that own none: with the contract's ids
    they are in no graph, though a link may reach them."""
    return {f.path for f in graph.findings if f.code == "E130"} - {n.path for n in graph.nodes}
