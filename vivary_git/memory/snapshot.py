"""The memory snapshot: the privacy-filtered part of a workspace's graph that a provider may see.

Nothing leaves the graph without passing here. A node is admitted when `privacy.decide` (one batch,
Git-exact) calls its repository path public; edges survive only between admitted nodes, so a
reference to a private note is dropped, never leaked as an id or a title. What a provider embeds is
the node's *packet* (`packet`), built from the same parsed blob the graph was built from, so the
content that was privacy-checked is the content that is sent.

Which `.gitignore` files decide, by source:

* working tree: the working tree's (Git's own view); every admitted file must also pass
  `check_snapshot_files` (no symlink on the way, no hard link, a regular file inside the root), and a
  public note that is a symbolic link refuses the whole snapshot;
* `--rev REV`: that tree's own, so CI and every clone decide alike;
* `--staged`: the index's own *and* the working tree's, private if either says so. The index's rules
  are what the commit will carry; the working tree's cover a rule the user has written but not yet
  staged, because a privacy rule must protect from the moment it is written.

The fingerprint (`fingerprint`) identifies exactly what a provider would be given; see docs/index.md.
"""

from __future__ import annotations

import hashlib
import itertools
import operator
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

import msgspec

from vivary_git import escape, privacy
from vivary_git.config import FORMAT_VERSION
from vivary_git.errors import PrivacyError
from vivary_git.models import Note
from vivary_git.privacy import PrivacyDecision, PrivacyPolicy

if TYPE_CHECKING:
    from vivary_git.graph import Graph
    from vivary_git.workspace import Workspace

__all__ = [
    "PACKET_FORMAT",
    "LeftOut",
    "MemoryEdge",
    "MemoryNode",
    "MemorySnapshot",
    "Packets",
    "build_snapshot",
    "dataset_name",
    "decide_for_source",
    "fingerprint",
    "frame_parts",
    "packet",
    "packet_key",
    "packets",
    "work_tree",
]

# Bump whenever `packet` renders anything differently: the fingerprint changes with it, so every
# index built from the old packets is reported stale instead of silently mixing two formats.
PACKET_FORMAT = 1


class MemoryNode(msgspec.Struct, frozen=True):
    id: str
    type: str | None
    path: str  # relative to the workspace root, as in the graph
    title: str
    blob: str  # Git blob id: the content that was privacy-checked and that `packet` renders
    fields: dict[str, Any]  # the frontmatter as written; {} when it could not be parsed (E000/E001)


class MemoryEdge(msgspec.Struct, frozen=True, order=True):
    source_id: str
    field: str
    target_id: str


class LeftOut(msgspec.Struct, frozen=True):
    """A public note the snapshot could not admit, and why: it shares its document id with another note
    (E130), and a recall result is a node id, so the graph keeps only the first path's note under it."""

    path: str
    id: str
    code: str
    reason: str  # one line naming the notes that share the id (public ones only) and the fix


class MemorySnapshot(msgspec.Struct, frozen=True):
    root: str  # the resolved workspace directory
    dataset: str
    fingerprint: str
    nodes: list[MemoryNode]  # admitted only, sorted by id
    edges: list[MemoryEdge]  # between admitted nodes only, sorted
    private_count: int  # graph nodes held back by the privacy boundary
    packet_format: int = PACKET_FORMAT
    provider: str = "none"
    model: str = ""
    left_out: list[LeftOut] = []  # public notes not admitted because another note has their id, by path


def dataset_name(root: Path, label: str = "") -> str:
    """`vivary-<slug>-<first 12 hex of sha256(resolved root)>`: the hash binds a dataset to one
    workspace even when a committed label is shared, so config cannot aim at another workspace's data."""
    resolved = str(root.resolve())
    digest = hashlib.sha256(resolved.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    return f"vivary-{_slug(label or root.resolve().name)}-{digest}"


def _slug(text: str) -> str:
    out: list[str] = []
    for c in text.lower():
        out.append(c if ("a" <= c <= "z" or "0" <= c <= "9") else "-")
    slug = "-".join(part for part in "".join(out).split("-") if part)
    return slug[:48].strip("-") or "workspace"


def fingerprint(provider: str, model: str, nodes: Iterable[MemoryNode], edges: Iterable[MemoryEdge]) -> str:
    """sha256 over a canonical JSON array. Blob ids already are content hashes, so no note text is
    hashed again; the parse format is in because a parser change changes packets of the same blob."""
    payload = [
        "vivary-memory-snapshot",
        PACKET_FORMAT,
        FORMAT_VERSION,
        provider,
        model,
        # Tuples: they compare several times faster than lists, and encode as the same JSON arrays.
        sorted((n.id, n.type or "", n.type is None, n.path, n.blob) for n in nodes),
        sorted((e.source_id, e.field, e.target_id) for e in edges),
    ]
    return hashlib.sha256(msgspec.json.encode(payload)).hexdigest()


def work_tree(ws: Workspace) -> Path:
    """The top of the work tree privacy is decided in; `PrivacyError` when there is none."""
    return privacy.source_work_tree(ws.source)


def decide_for_source(ws: Workspace, paths: Sequence[str], policy: PrivacyPolicy | None = None, *,
                      memo: privacy.PrivacyMemo | None = None) -> list[PrivacyDecision]:
    """Privacy verdicts for repository-relative `paths`; see `privacy.deciding_for_tree`."""
    return deciding_for_source(ws, paths, policy, memo=memo)()


def deciding_for_source(ws: Workspace, paths: Sequence[str], policy: PrivacyPolicy | None = None, *,
                        memo: privacy.PrivacyMemo | None = None) -> Callable[[], list[PrivacyDecision]]:
    """What decides privacy for repository-relative `paths` against the workspace's source tree:
    `privacy.deciding_for_tree` (the one decision every consumer makes)."""
    return privacy.deciding_for_tree(ws.source, paths, policy, memo=memo)


def build_snapshot(
    ws: Workspace, policy: PrivacyPolicy, *, provider: str, model: str, dataset_label: str = "",
    with_fields: bool = True, known: Mapping[str, bool] | None = None, overlap: bool | None = None,
    memo: privacy.PrivacyMemo | None = None,
) -> MemorySnapshot:
    """The admitted nodes and edges of `ws` at its tree. Raises `PrivacyError` (exit 3) when privacy
    cannot be decided or a working-tree file is unsafe to read; nothing is skipped silently.

    `with_fields=False` leaves `MemoryNode.fields` empty: the fingerprint does not depend on them and
    packets read them from the notes, so recall need not load every parsed note.

    `known`: repository path -> public, for notes an earlier snapshot of this workspace decided under
    the same rules (the same ignore files, configs and memory.toml) and whose files have not changed
    since: the MCP server's warm state after an edit. Those are neither decided nor checked again.

    `overlap`: decide privacy for every note of the tree (the graph's nodes are among them) in a thread
    while the graph is built (Git does the deciding, in its own processes). By default only when forking is
    off anyway (`parallel.can_fork`: another thread runs, say the embedder loading): a cold graph parses
    on every core through forked workers, which a running thread would stop.

    `memo`: privacy questions answered in this command, and where this snapshot's are added
    (`privacy.decide_scoped`)."""
    source = ws.source
    prefix = f"{source.prefix}/" if source.prefix else ""
    # A symbolic link is not a graph node (check reports E000), but in the working tree a public one
    # would be indexed under a name whose content lives elsewhere: ask about it too, and refuse below.
    links = [f.path for f in source.problems if f.code == "E000"] if source.kind == "worktree" else []
    if overlap is None:
        from vivary_git.parallel import can_fork

        overlap = not can_fork()
    early: dict[str, bool] = {}
    if overlap and not known:
        from vivary_git.parallel import Background

        candidates = list(dict.fromkeys([prefix + e.path for e in source.entries] + [prefix + p for p in links]))
        deciding = Background(deciding_for_source(ws, candidates, policy, memo=memo), name="vivary-privacy") \
            if candidates else None
        graph = ws.graph()
        verdicts = deciding.result() if deciding is not None else []
        early = dict(zip(candidates, (not v.private for v in verdicts), strict=True))
    else:
        graph = ws.graph()
    # A note whose id another note owns (E130) is no node: ask about it too, to name it when it is public.
    dups = _duplicates(graph)
    asked = [prefix + n.path for n in graph.nodes] + [prefix + p for p in links] + [prefix + p for p, _ in dups]
    if known or early:
        given = known or early
        unknown = [p for p in asked if p not in given]
        decided = dict(zip(unknown, (not v.private for v in decide_for_source(ws, unknown, policy, memo=memo)),
                           strict=True)) \
            if unknown else {}
        public = [given[p] if p in given else decided[p] for p in asked]
    else:
        verdicts = decide_for_source(ws, asked, policy, memo=memo) if asked else []
        public = [not v.private for v in verdicts]
    n_nodes = len(graph.nodes)
    n_asked = n_nodes + len(links)
    for path, ok in zip(links, public[n_nodes:n_asked], strict=True):
        if ok:
            raise PrivacyError(
                f"refusing {prefix + path!r}: it is a symbolic link; snapshots never follow symlinks: replace it "
                "with the file itself, or make it private (memory.privacy.private_paths in .vivary/memory.toml)"
            )
    admitted = [node for node, ok in zip(graph.nodes, public[:n_nodes], strict=True) if ok]
    left_out = _left_out(graph, public[:n_nodes], dups, public[n_asked:]) if dups else []
    if source.kind == "worktree" and admitted:
        assert source.repo is not None and source.repo.workdir is not None
        on_disk = [p for p in (prefix + n.path for n in admitted) if not known or p not in known]
        try:
            privacy.check_snapshot_files(source.repo.workdir, on_disk)
        except PrivacyError:
            # A sparse checkout leaves the files outside its cone off the disk, and the working tree's tree keeps
            # their index blobs (`git add -A` does not touch a skip-worktree entry): no file of theirs is read, so
            # there is none to check. Asked only when the check fails, so a full checkout pays nothing for it.
            from vivary_git.worktree import skip_worktree

            outside = skip_worktree(source.repo)
            if not outside.intersection(on_disk):
                raise
            privacy.check_snapshot_files(source.repo.workdir, [p for p in on_disk if p not in outside])
    notes = ws.notes() if with_fields else {}
    # Privacy was decided on the exact name above; memory keeps the name's text form (docs/output.md), as a
    # name that is not UTF-8 has no other form in JSON, msgpack or an embedding.
    # Zero-config ids and titles come from file names, so they take the same text form.
    nodes = sorted(
        (MemoryNode(id=escape.name(n.id), type=n.type, path=escape.name(n.path), title=escape.name(n.title),
                    blob=n.blob, fields=_fields(notes[n.blob]) if with_fields else {})
         for n in admitted),
        key=lambda n: n.id,
    )
    # graph.edges is sorted and unique by (from, field, to) (`broken` follows from `to`), so the
    # filtered list is too: no set, no second sort (unless a name's text form moved it).
    make = MemoryEdge
    if len(admitted) == n_nodes and all(escape.name(n.id) == n.id for n in admitted):
        # Every node admitted, every id its own text form: an edge that is not broken starts and ends at a
        # node (graph.py: a resolved target is a node's id), so it is between admitted nodes.
        edges = [make(e.from_, e.field, e.to) for e in graph.edges if not e.broken]
    else:
        ids = {n.id for n in admitted}
        edges = [
            make(escape.name(e.from_), e.field, escape.name(e.to))
            for e in graph.edges
            if not e.broken and e.from_ in ids and e.to in ids
        ]
        if any(e.source_id not in ids or e.target_id not in ids for e in edges):
            edges.sort(key=lambda e: (e.source_id, e.field, e.target_id))
    return MemorySnapshot(
        root=str(source.root.resolve()),
        dataset=dataset_name(source.root, dataset_label),
        fingerprint=fingerprint(provider, model, nodes, edges),
        nodes=nodes,
        edges=edges,
        private_count=n_nodes - len(nodes),
        provider=provider,
        model=model,
        left_out=left_out,
    )


def _duplicates(graph: Graph) -> list[tuple[str, str]]:
    """(path, id) of every note the graph reported as E130 and holds no node for: the id's first path owns
    it (graph.build), so this note is in no snapshot. With path ids a duplicate is kept as `ID (2)`: none."""
    from vivary_git.graph import node_id

    paths = {n.path for n in graph.nodes}
    found = dict.fromkeys(f.path for f in graph.findings if f.code == "E130" and f.path not in paths)
    return [(p, node_id(p, graph.root, graph.config.links.ids)) for p in found]


def _left_out(graph: Graph, node_public: Sequence[bool], dups: Sequence[tuple[str, str]],
              dup_public: Sequence[bool]) -> list[LeftOut]:
    """A `LeftOut` for each public duplicate (`dups`, `_duplicates`): the reason names the public notes that
    share its id and counts the private ones without naming them (their paths stay behind the boundary)."""
    owners = {n.id: (n.path, ok) for n, ok in zip(graph.nodes, node_public, strict=True)}
    total: dict[str, int] = {}
    named: dict[str, list[str]] = {}
    for (path, nid), ok in zip(dups, dup_public, strict=True):
        total[nid] = total.get(nid, 1) + 1
        owner, owner_public = owners.get(nid, ("", False))
        shown = named.setdefault(nid, [owner] if owner_public else [])
        if ok:
            shown.append(path)
    out = []
    for (path, nid), ok in zip(dups, dup_public, strict=True):
        if not ok:
            continue
        shown = named[nid]
        hidden = total[nid] - len(shown)
        more = f" and {hidden} private note(s)" if hidden else ""
        reason = (f"{total[nid]} notes share the id '{escape.name(nid)}': "
                  f"{', '.join(escape.name(p) for p in shown)}{more}; give each its own id (E130)")
        out.append(LeftOut(path=escape.name(path), id=escape.name(nid), code="E130", reason=reason))
    return sorted(out, key=lambda o: o.path)


# --- packets ------------------------------------------------------------------------------------------


def _fields(note: Note) -> dict[str, Any]:
    return {} if note.problem is not None else note.fields


def _one_line(value: str) -> str:
    # A file name may hold a line break; it must not be able to forge a header line.
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")


def _frontmatter_json(fields: dict[str, Any]) -> str:
    try:
        return msgspec.json.encode(fields, order="sorted").decode()
    except (TypeError, msgspec.EncodeError):
        # YAML allows non-string keys (`1: x`, mixed with strings they cannot be sorted): render them as text.
        return msgspec.json.encode(_string_keys(fields), order="sorted").decode()


def _string_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_string_keys(v) for v in value]
    return value


def packet(node: MemoryNode, note: Note, edges: Iterable[MemoryEdge]) -> str:
    """What a provider embeds for one node (format `PACKET_FORMAT`, documented in docs/index.md).
    `edges` may be the whole snapshot's: only this node's outbound ones are rendered."""
    return packet_of(node, *note_parts(note), edges)


def note_parts(note: Note) -> tuple[str, str]:
    """What a packet takes from a note: its frontmatter (as the packet writes it) and its body."""
    return _frontmatter_json(_fields(note)), note.body


def packet_of(node: MemoryNode, frontmatter: str, body: str, edges: Iterable[MemoryEdge]) -> str:
    """`packet(node, note, edges)` from the note's `note_parts`."""
    return _packet(_frame(node, edges), frontmatter, body)


def _packet(frame: tuple[str, str], frontmatter: str, body: str) -> str:
    """A packet from its frame (`_frame`'s head and tail) and its note's `note_parts`."""
    head, tail = frame
    return f"{head}\n{frontmatter}\n{tail}\n\n{body}"


def packet_frame(node: MemoryNode, edges: Iterable[MemoryEdge]) -> str:
    """The lines of `packet_of(node, frontmatter, body, edges)` that the snapshot gives (id, type, path,
    title, outbound edges), one per line: the packet is these and `note_text(frontmatter, body)`'s lines."""
    return "\n".join(_frame(node, edges))


def note_text(frontmatter: str, body: str) -> str:
    """The lines of a packet that the note gives (see `packet_frame`)."""
    return f"{frontmatter}\n{body}"


def _frame(node: MemoryNode, edges: Iterable[MemoryEdge]) -> tuple[str, str]:
    return _own_frame(node, sorted(e for e in edges if e.source_id == node.id))


def _own_frame(node: MemoryNode, edges: list[MemoryEdge]) -> tuple[str, str]:
    """`_frame` of a node given its own outbound edges, sorted. Each value is written as `_one_line` makes
    it; most hold no backslash or line break, which one look at the lines joined tells: then they are
    written as they are, without `_one_line`'s three passes over each of them."""
    head = (f"vivary_node_id: {node.id}\nvivary_type: {node.type or ''}\nvivary_path: {node.path}\n"
            f"vivary_title: {node.title}")
    if "\\" in head or "\r" in head or head.count("\n") != 3:
        head = "\n".join([
            f"vivary_node_id: {_one_line(node.id)}",
            f"vivary_type: {_one_line(node.type or '')}",
            f"vivary_path: {_one_line(node.path)}",
            f"vivary_title: {_one_line(node.title)}",
        ])
    tail = "\n".join(["outbound_edges:", *[f"- {e.field}: {e.target_id}" for e in edges]])
    if "\\" in tail or "\r" in tail or tail.count("\n") != len(edges):
        tail = "\n".join(["outbound_edges:", *[f"- {_one_line(e.field)}: {_one_line(e.target_id)}" for e in edges]])
    return head, tail


def packets(ws: Workspace, snapshot: MemorySnapshot, parts: Mapping[str, tuple[str, str]] | None = None,
            frames: Sequence[tuple[str, str]] | None = None) -> Iterator[tuple[MemoryNode, str]]:
    """(node, packet) for every admitted node, in id order, from the same blobs the snapshot checked.
    `parts`: the `note_parts` of notes already read (by blob id, in another process, say); any other
    note is read here. `frames`: the snapshot's `frame_parts`, when the caller has them already."""
    notes = ws.lazy_notes() if parts is not None or len(snapshot.nodes) < 64 else ws.notes()
    if frames is None:
        frames = frame_parts(snapshot)
    for node, frame in zip(snapshot.nodes, frames, strict=True):
        part = parts.get(node.blob) if parts is not None else None
        yield node, _packet(frame, *(part or note_parts(notes[node.blob])))


def frame_parts(snapshot: MemorySnapshot) -> list[tuple[str, str]]:
    """Each admitted node's frame, in id order, as the two pieces a packet puts its frontmatter between: what
    `packets` renders the packets from and `packet_frames` the frames (the first recall of a fetched tree
    needs both, in two processes: made once, before the second forks)."""
    outbound = _by_source(snapshot.edges)
    return [_own_frame(node, sorted(outbound.get(node.id, ()))) for node in snapshot.nodes]  # own edges only


def packet_frames(snapshot: MemorySnapshot, frames: Sequence[tuple[str, str]] | None = None) -> list[str]:
    """`packet_frame` of every admitted node, in id order (as `packets` renders them); from the snapshot's
    `frame_parts`, when given."""
    return ["\n".join(frame) for frame in (frame_parts(snapshot) if frames is None else frames)]


def _by_source(edges: Sequence[MemoryEdge]) -> dict[str, list[MemoryEdge]]:
    """Each node's outbound edges, in the snapshot's order (by source, then field and target)."""
    by_source: dict[str, list[MemoryEdge]] = {}
    # The snapshot's edges are sorted by source: one step per node that has any, not per edge.
    for source, run in itertools.groupby(edges, key=operator.attrgetter("source_id")):
        got = by_source.get(source)
        if got is None:
            by_source[source] = list(run)
        else:
            got.extend(run)
    return by_source


def packet_key(node: MemoryNode, edges: Iterable[MemoryEdge]) -> str:
    """sha256 of everything `packet(node, note, edges)` is a function of: the packet and parse formats, the
    node's id, type, path, title and blob (which fixes the parsed note), and its outbound edges (`edges` may
    be the whole snapshot's). Equal keys render equal packets, so an index run renders again only the nodes
    whose key it has not seen (an edited, renamed or retyped note, or one whose links now resolve
    differently). No text of the note is hashed: the blob id already is a content hash."""
    return _packet_key(node, sorted((e.field, e.target_id) for e in edges if e.source_id == node.id))


_KEY_ENCODER = msgspec.json.Encoder()


def _packet_key(node: MemoryNode, outbound: list[tuple[str, str]]) -> str:
    """`packet_key` of a node whose outbound edges, as sorted (field, target id) pairs, are `outbound`."""
    payload = ["vivary-packet", PACKET_FORMAT, FORMAT_VERSION, node.id, node.type, node.path, node.title, node.blob,
               outbound]
    return hashlib.sha256(_KEY_ENCODER.encode(payload)).hexdigest()


class Packets(Sequence[tuple[MemoryNode, str]]):
    """`packets(ws, snapshot)` as a sequence whose items are rendered when first asked for, so a run that
    needs a few packets (the edited notes') reads and renders only those. `render(indices)` renders many
    at once, reading their notes in one batch (from the parse cache when there are many)."""

    def __init__(self, ws: Workspace, snapshot: MemorySnapshot) -> None:
        self._ws = ws
        self._nodes = snapshot.nodes
        self._edges = snapshot.edges
        self._by_source: dict[str, list[MemoryEdge]] | None = None
        self._done: dict[int, str] = {}

    @property
    def _outbound(self) -> dict[str, list[MemoryEdge]]:
        """Each node's outbound edges, in the snapshot's order (by source, then field and target)."""
        if self._by_source is None:
            self._by_source = _by_source(self._edges)
        return self._by_source

    def __len__(self) -> int:
        return len(self._nodes)

    @overload
    def __getitem__(self, i: int) -> tuple[MemoryNode, str]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[MemoryNode, str]]: ...

    def __getitem__(self, i: int | slice) -> tuple[MemoryNode, str] | list[tuple[MemoryNode, str]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self._nodes)))]
        node = self._nodes[i]  # IndexError for a position out of range, as a list would
        i %= len(self._nodes)
        text = self._done.get(i)
        if text is None:
            self.render([i])
            text = self._done[i]
        return node, text

    def key(self, i: int) -> str:
        """`packet_key` of node `i`."""
        node = self._nodes[i]
        return packet_key(node, self._outbound.get(node.id, ()))

    def keys(self) -> list[str]:
        """`packet_key` of every node, in order (one pass over the edges for all of them)."""
        outbound = self._outbound
        out = []
        for node in self._nodes:
            edges = outbound.get(node.id)
            out.append(_packet_key(node, [(e.field, e.target_id) for e in sorted(edges)] if edges else []))
        return out

    def render(self, indices: Iterable[int]) -> None:
        """Render these nodes' packets now (those not rendered yet), their notes read in one batch."""
        todo = sorted({i for i in indices if i not in self._done})
        if not todo:
            return
        blobs = list(dict.fromkeys(self._nodes[i].blob for i in todo))
        notes = self._ws.notes_for(blobs) if len(blobs) > 1 else {blobs[0]: self._ws.note(blobs[0])}
        for i in todo:
            node = self._nodes[i]
            self._done[i] = packet(node, notes[node.blob], self._outbound.get(node.id, ()))

    def forget(self) -> None:
        """Let go of the packets rendered so far (a packet asked for again is rendered again): an index run
        holds every packet only while it needs them all, not while its model embeds and its graph is built."""
        self._done = {}

    @property
    def rendered(self) -> int:
        """How many packets have been rendered."""
        return len(self._done)
