"""Nodes and edges from parsed notes: pure functions of (paths, notes, config)."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterable, Mapping, Sequence

import msgspec

from vivary_git import check
from vivary_git.config import Config
from vivary_git.models import Edge, Finding, Ignore, Node, Note

_ID_RUNS = re.compile(r"[^a-z0-9._-]+")
INDEX_STEMS = ("readme", "index", "_index")
_ASSET_SUFFIXES = (
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".pdf", ".mp3", ".mp4", ".webm", ".mov", ".wav",
    ".ogg", ".canvas", ".excalidraw", ".csv", ".zip",
)
_DENDRON_VAULT = re.compile(r"^dendron://[^/]*/")


def slug(text: str) -> str:
    """Lowercase; runs outside `[a-z0-9._-]` become `-`; trimmed; empty → `untitled`."""
    out = _ID_RUNS.sub("-", text.lower()).strip("-")
    return out or "untitled"


def _stem(name: str) -> str:
    low = name.lower()
    for suffix in (".markdown", ".md"):
        if low.endswith(suffix):
            return name[: -len(suffix)]
    return name


def node_id(path: str, root_name: str) -> str:
    """The ID a path derives: its stem, or its folder's name for an index document."""
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
    links: list[tuple[int, str, tuple[str, ...]]]  # (line, text, candidate target IDs) of every [[wikilink]]
    problem: bool  # E000/E001: the document's fields are unknown
    ignores: tuple[Ignore, ...] = ()  # codes its `vivary-ignore` comments and key silence (check.suppress)


def facts(path: str, blob: str, note: Note, config: Config, folder_types: Mapping[str, str], root_name: str,
          dates: check.DateLookup | None = None) -> Facts:
    nid = node_id(path, root_name)
    node = Node(id=nid, type=node_type(path, folder_types, root_name), path=path,
                title=note.title or derived_title(nid), blob=blob)
    found, refs = check.validate_local(node, note, config, dates)
    links = [(link.line, link.text, wikilink_target(link.text, config.alias)) for link in note.links] \
        if config.wikilinks else []
    return Facts(nid, node.type, node.title, found, refs, links, note.problem is not None, check.ignores_of(note))


def build(
    root_name: str,
    tree: str | None,
    config: Config,
    docs: Sequence[tuple[str, str, Facts]],
    *,
    unreadable: Sequence[Finding] = (),
) -> Graph:
    """Assemble the graph from each document's `Facts` ((path, blob, facts), any order): claim IDs in
    document order (the first path keeps a duplicated ID: E130), resolve refs and wikilinks, and
    put findings in document order (`walk_key`) and rule order within a document, as tropo's JSON."""
    order = {path: walk_key(path) for path, _, _ in docs}
    order.update((f.path, walk_key(f.path)) for f in unreadable)
    ordered = sorted(docs, key=lambda d: order[d[0]])
    owner: dict[str, Node] = {}
    owned: list[bool] = []
    for path, blob, f in ordered:
        first = f.id not in owner
        if first:
            owner[f.id] = Node(id=f.id, type=f.type, path=path, title=f.title, blob=blob)
        owned.append(first)
    homes = _homes((f.links for (_, _, f), own in zip(ordered, owned, strict=True) if own), owner)
    # Every edge starts at the node of the one document owning that ID: collected per source as
    # (field, to, broken) tuples, deduplicated and sorted per source (cheap tuple hashing and
    # comparison), the whole list comes out in order and each Edge is made once.
    outgoing: dict[str, set[_Out]] = {}
    unused: set[_Out] = set()  # a duplicate's edges: it owns no ID, so it contributes none
    findings: list[Finding] = sorted(unreadable, key=lambda f: order[f.path])
    for (path, _, f), own in zip(ordered, owned, strict=True):
        if not own:
            findings.append(Finding(
                path, 1, "error", "E130",
                f"duplicate document id '{f.id}': {owner[f.id].path} has it already; rename one of the two files",
            ))
        _contribute(path, f, own, owner, homes, config, outgoing.setdefault(f.id, set()) if own else unused, findings)
    findings.sort(key=lambda f: order[f.path])  # stable: keeps rule order within a document
    nodes = sorted(owner.values(), key=lambda n: n.id)
    edges = [Edge(n.id, fld, to, broken) for n in nodes for fld, to, broken in sorted(outgoing[n.id])]
    return Graph(root=root_name, tree=tree, config=config, nodes=nodes, edges=edges, findings=findings,
                 checked=len(docs) + len(unreadable), homes=sorted(homes))


_Out = tuple[str, str, bool]  # an outgoing edge of a known source: (field, to, broken)


def _contribute(path: str, f: Facts, own: bool, owner: Mapping[str, object], homes: frozenset[str],
                config: Config, edges: set[_Out], findings: list[Finding]) -> None:
    """One document's findings (its own, then W220, then W221, less those it silences) and, if it owns
    its ID, its edges."""
    start = len(findings)
    findings.extend(f.findings)
    for ref in f.refs:
        target = ref[2]
        if target not in owner:
            findings.append(check.broken_ref(path, ref))
        if own and target:
            edges.add((ref[0], target, target not in owner))
    for line, text, candidates in f.links:
        if not candidates:
            continue
        linked = None
        for c in candidates:
            if c in owner:
                linked = c
                break
        if linked is None and is_external(text, homes):
            continue
        if linked is None and not f.problem:
            findings.append(check.broken_link(path, line, text, candidates[0]))
        target = linked or candidates[0]
        if own and target != f.id:
            edges.add((config.wikilink_field, target, linked is None))
    if f.ignores:
        findings[start:] = check.suppress(findings[start:], f.ignores)


def patch(base: Graph, tree: str | None, changed: Mapping[str, tuple[str, Facts]]) -> Graph | None:
    """`base` with the documents at `changed` paths (path -> (new blob, new facts)) edited in place,
    or None when that would not equal a full `build`: only content edits of documents that own their
    ID, with the same paths, rules and root, and no cross-vault links in play, keep every other
    document's ID resolution, edges and findings unchanged."""
    if base.homes or len(base.nodes) != base.checked:
        return None  # dendron home vaults or duplicates/unreadable files: ownership could shift
    owner = {n.id: n for n in base.nodes}
    outgoing: dict[str, set[_Out]] = {}
    merged = patch_findings(base.findings, {n.path: n.id for n in base.nodes}, owner, base.config, changed,
                            outgoing)
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
        lo = bisect.bisect_left(base.edges, Edge(nid), at)
        hi = bisect.bisect_left(base.edges, Edge(nid + "\0"), lo)
        all_edges += base.edges[at:lo]
        all_edges += new_by_source[nid]
        at = hi
    all_edges += base.edges[at:]
    # `owner` kept the base's id order; replacing a value does not move its key.
    return Graph(root=base.root, tree=tree, config=base.config, nodes=list(owner.values()), edges=all_edges,
                 findings=merged, checked=base.checked, homes=[], rules=base.rules)


def patch_findings(findings: Sequence[Finding], ids_by_path: Mapping[str, str], owner: Mapping[str, object],
                   config: Config, changed: Mapping[str, tuple[str, Facts]],
                   outgoing: dict[str, set[_Out]] | None = None) -> list[Finding] | None:
    """A graph's findings with the documents at `changed` paths re-derived (see `patch`), from just
    its findings and its documents' IDs: what `check --staged` needs, without the graph's edges.
    None when patching could differ from a full build. With `outgoing`, the edited documents'
    outgoing edges are collected there too."""
    new: list[Finding] = []
    for path, (_, f) in changed.items():
        if ids_by_path.get(path) != f.id or any("dendron://" in text for _, text, _ in f.links):
            return None
        sink = outgoing.setdefault(f.id, set()) if outgoing is not None else set()
        _contribute(path, f, True, owner, frozenset(), config, sink, new)
    kept = [x for x in findings if x.path not in changed]
    order: dict[str, str] = {}

    def key(x: Finding) -> str:
        got = order.get(x.path)
        if got is None:
            got = order[x.path] = walk_key(x.path)
        return got

    return sorted(kept + new, key=key)  # stable: rule order within a document is kept


@functools.lru_cache(maxsize=65536)
def wikilink_target(text: str, alias: str) -> tuple[str, ...]:
    """Candidate targets of `[[text]]`, best first; empty when it points at no note (an asset, a heading)."""
    parts = [p.strip() for p in text.split("|")]
    if len(parts) == 1:
        ordered = parts
    elif alias == "first":
        ordered = [parts[0]]
    elif alias == "last":
        ordered = [parts[-1]]
    else:
        ordered = [parts[-1], parts[0]]
    if any("{{" in p for p in parts):
        return ()  # a template placeholder (`[[journal.{{CURRENT_DAY}}]]`), not a link yet
    if any(_DENDRON_VAULT.sub("", p).startswith(("#", "^")) for p in parts):
        return ()  # a link to a heading or block of this same note
    out: list[str] = []
    for raw in ordered:
        t = _DENDRON_VAULT.sub("", raw)
        t = re.split(r"[#^]", t, maxsplit=1)[0].strip()
        if not t or t.lower().endswith(_ASSET_SUFFIXES):
            continue
        t = t.rstrip("/").rsplit("/", 1)[-1]
        out.append(slug(_stem(t)))
    return tuple(out)


def wikilink_vault(text: str) -> str | None:
    """The vault a Dendron cross-vault link names (`dendron://VAULT/note`), if any."""
    for part in text.split("|"):
        m = _DENDRON_VAULT.match(part.strip())
        if m:
            return m.group(0)[len("dendron://"):-1]
    return None


def _homes(link_lists: Iterable[list[tuple[int, str, tuple[str, ...]]]], known: Mapping[str, object]) -> frozenset[str]:
    """Vault names whose `dendron://` links resolve here: this workspace is (one of) those vaults.
    An unresolved link into any other vault points outside this repository and is not reported."""
    homes: set[str] = set()
    for links in link_lists:
        for _, text, candidates in links:
            if "dendron://" not in text:
                continue
            vault = wikilink_vault(text)
            if vault and any(c in known for c in candidates):
                homes.add(vault)
    return frozenset(homes)


def is_external(text: str, homes: frozenset[str]) -> bool:
    if "dendron://" not in text:
        return False
    vault = wikilink_vault(text)
    return vault is not None and vault not in homes
