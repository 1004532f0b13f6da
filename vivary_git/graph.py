"""Nodes and edges from parsed notes: pure functions of (paths, notes, config)."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import msgspec

from vivary_git import check
from vivary_git.config import Config
from vivary_git.models import Edge, Finding, Node, Note

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


def walk_key(path: str) -> tuple[tuple[int, str], ...]:
    """Document order: in each folder its files (sorted) come before its subfolders (sorted)."""
    parts = path.split("/")
    return (*((1, p) for p in parts[:-1]), (0, parts[-1]))


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

    def by_id(self) -> dict[str, Node]:
        return {n.id: n for n in self.nodes}

    def counts(self) -> dict[str, int]:
        return {"nodes": len(self.nodes), "edges": len(self.edges), "broken": sum(e.broken for e in self.edges)}


def build(
    root_name: str,
    tree: str | None,
    config: Config,
    paths: Sequence[tuple[str, str]],
    notes: Mapping[str, Note],
    *,
    unreadable: Sequence[Finding] = (),
    dates: check.DateLookup | None = None,
    overlays: Mapping[str, Config] | None = None,
) -> Graph:
    """`paths` is (path, blob id); `notes` maps blob id → parsed note.

    Findings come out in document order (`walk_key`), per document in rule order, as tropo's JSON.
    """
    folder_types = {"": config.folder_types()}
    nested = sorted((overlays or {}).items(), key=lambda kv: len(kv[0]), reverse=True)
    folder_types.update((d, c.folder_types()) for d, c in nested)

    def config_dir(path: str) -> str:
        for d, _ in nested:
            if path.startswith(d + "/"):
                return d
        return ""

    configs = {"": config, **dict(nested)}
    docs: list[tuple[Node, bool]] = []  # (node, owns its ID)
    owner: dict[str, Node] = {}
    duplicate: dict[str, Finding] = {}
    order = {path: walk_key(path) for path, _ in paths}
    order.update((f.path, walk_key(f.path)) for f in unreadable)
    for path, blob in sorted(paths, key=lambda pb: order[pb[0]]):
        note = notes[blob]
        nid = node_id(path, root_name)
        node = Node(id=nid, type=node_type(path, folder_types[config_dir(path)], root_name), path=path,
                    title=note.title or derived_title(nid), blob=blob)
        first = owner.get(nid)
        if first is not None:
            duplicate[path] = Finding(
                path, 1, "error", "E130",
                f"duplicate document id '{nid}': {first.path} has it already; rename one of the two files",
            )
            docs.append((node, False))
            continue
        owner[nid] = node
        docs.append((node, True))
    homes = home_vaults((notes[n.blob] for n, owns in docs if owns), owner, config.alias) \
        if config.wikilinks else frozenset()
    edges: set[Edge] = set()
    for node, owns in docs:
        if not owns:
            continue
        note = notes[node.blob]
        cfg = configs[config_dir(node.path)]
        for field, value in note.fields.items():
            if field in cfg.derive or value is None:
                continue
            spec = cfg.field_spec(node.type, field)
            if spec is None or not spec.is_ref:
                continue
            for target in _ref_values(value):
                edges.add(Edge(node.id, field, target, target not in owner))
        if config.wikilinks:
            for link in note.links:
                linked = resolve_wikilink(link.text, owner, config.alias)
                if linked is not None and linked not in owner and is_external(link.text, homes):
                    continue
                if linked is not None and linked != node.id:
                    edges.add(Edge(node.id, config.wikilink_field, linked, linked not in owner))
    findings: list[Finding] = sorted(unreadable, key=lambda f: order[f.path])
    for node, _ in docs:
        if node.path in duplicate:
            findings.append(duplicate[node.path])
        findings.extend(check.validate(node, notes[node.blob], configs[config_dir(node.path)], owner, dates, homes))
    findings.sort(key=lambda f: order[f.path])  # stable: keeps rule order within a document
    nodes = sorted(owner.values(), key=lambda n: n.id)
    return Graph(root=root_name, tree=tree, config=config, nodes=nodes, edges=sorted(edges), findings=findings,
                 checked=len(paths) + len(unreadable))


def _ref_values(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str) and v]
    return []


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


def home_vaults(notes: Iterable[Note], known: Mapping[str, object], alias: str) -> frozenset[str]:
    """Vault names whose `dendron://` links resolve here: this workspace is (one of) those vaults.
    An unresolved link into any other vault points outside this repository and is not reported."""
    homes: set[str] = set()
    for note in notes:
        for link in note.links:
            vault = wikilink_vault(link.text) if "dendron://" in link.text else None
            if vault and any(c in known for c in wikilink_target(link.text, alias)):
                homes.add(vault)
    return frozenset(homes)


def is_external(text: str, homes: frozenset[str]) -> bool:
    if "dendron://" not in text:
        return False
    vault = wikilink_vault(text)
    return vault is not None and vault not in homes


def resolve_wikilink(text: str, known: Mapping[str, object], alias: str) -> str | None:
    candidates = wikilink_target(text, alias)
    for c in candidates:
        if c in known:
            return c
    return candidates[0] if candidates else None
