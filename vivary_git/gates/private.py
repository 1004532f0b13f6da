"""What `ci` may say about private notes: their paths, lines and finding codes, never a byte they hold.

`ci`'s annotations, step summary, SARIF and Code Quality reports leave the machine (a pull request, code scanning,
a merge request), so by the house rule no byte of a private file may reach them (docs/privacy.md). A private file
that Git tracks anyway (`git add -f USER.md`) is still checked, and its findings still count for the gate; what
`review()` hands to every renderer is masked here first:

- a finding in a private file keeps its level, code, path and line; its message becomes `PRIVATE_FINDING`;
- a private note's ID (which its own frontmatter or heading may give) becomes `(private: PATH)`, its title, type,
  blob and fields are dropped, and so are the field names and unresolved link texts of its references.

Which notes are private is the one decision every consumer makes (`hidden.private_paths`, the memory snapshot's),
taken on the head tree for its notes and on the base tree for the notes the change removed.

`check`, `graph` and `blast` mask the same way when their output is read by others (`masking`, the one decision:
in CI, as machine output, for a pre-commit range, on a server), and show everything at the owner's terminal; the
memory commands' refusals (`remember`, `refresh`, `move`, `dream`) name a rule of the user's by its place alone there.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import msgspec

from vivary_git.blast import Changed, ChangeReport, Impacted
from vivary_git.models import Edge, Finding, Node

if TYPE_CHECKING:
    from vivary_git.graph import Graph
    from vivary_git.workspace import Workspace

PRIVATE_FINDING = ("a finding in a private file; its text is not shown here "
                   "(run `git vivary check --show-private` where the file is yours)")
# A public file's finding whose message names a private file beside it (case twins, W226; a duplicate id, E130).
NAMES_PRIVATE = ("a finding naming a private file beside this one; its text is not shown here "
                 "(run `git vivary check --show-private` where the files are yours)")
# The codes whose message names another file than the finding's own (portable.collision, graph's E130).
NAMING = frozenset(("W226", "E130"))
# A private note's reference that reaches no public note: its link text is the private file's.
HIDDEN_LINK = "(a reference in a private note)"


def private_id(repo_path: str) -> str:
    """What stands for a private note's ID: its path, which the pull request's file list shows anyway."""
    return f"(private: {repo_path})"


class Mask:
    """Replaces what private notes hold in the values a review is rendered from."""

    def __init__(self, paths: Iterable[str], ids: dict[str, str], public_ids: Iterable[str],
                 naming: Iterable[Finding] = ()) -> None:
        self.paths = frozenset(paths)  # workspace-relative paths of private files (findings are keyed by them)
        self.ids = ids  # a private note's ID -> what stands for it
        self.masked = frozenset(ids.values())
        self.public_ids = frozenset(public_ids) - ids.keys()
        self.naming = frozenset(naming)  # public files' findings that name a private file (`naming_private`)

    def __bool__(self) -> bool:
        return bool(self.paths or self.ids or self.naming)

    def id(self, node_id: str) -> str:
        return self.ids.get(node_id, node_id)

    def finding(self, f: Finding) -> Finding:
        if f.path in self.paths:
            return msgspec.structs.replace(f, message=PRIVATE_FINDING)
        return msgspec.structs.replace(f, message=NAMES_PRIVATE) if f in self.naming else f

    def node(self, n: Node) -> Node:
        if n.id not in self.ids:
            return n
        return Node(id=self.ids[n.id], type=None, path=n.path, title="", blob="")

    def edge(self, e: Edge) -> Edge:
        if e.from_ not in self.ids:
            return msgspec.structs.replace(e, to=self.id(e.to)) if e.to in self.ids else e
        # A public note's ID (one the change removed or renamed too) is not the private file's text; any other
        # target is the link as the private file spells it.
        to = self.ids.get(e.to) or (e.to if e.to in self.public_ids else HIDDEN_LINK)
        return Edge(self.ids[e.from_], "", to, e.broken)

    def change(self, c: ChangeReport) -> ChangeReport:
        def changed(x: Changed) -> Changed:
            if x.id not in self.ids and x.renamed not in self.ids:
                return x
            private = x.id in self.ids
            return Changed(self.id(x.id), None if private else x.type, x.path, x.change,
                           self.id(x.renamed) if x.renamed is not None else None)

        return msgspec.structs.replace(
            c, changed=[changed(x) for x in c.changed], broken_edges=[self.edge(e) for e in c.broken_edges],
            fixed_edges=[self.edge(e) for e in c.fixed_edges], impacted=[self.impacted(i) for i in c.impacted])

    def impacted(self, i: Impacted) -> Impacted:
        # `via` is the field of the private note's own edge: its text.
        return Impacted(self.ids[i.id], None, i.distance, "") if i.id in self.ids else i


def masking(show: bool | None, *, machine: bool = False) -> bool:
    """Whether `check`, `graph` and `blast` mask what private files hold (docs/privacy.md#what-each-command-shows).
    `show` is the owner's explicit choice (`--show-private`: True, `--mask-private`: False) and wins; without one
    they mask when a CI runner runs them (`gates.runner.CI_MARKERS`: its log is read by others) or when `machine`
    says the output is for programs or leaves the machine (`--json`, a range the pre-commit framework names)."""
    if show is not None:
        return not show
    from vivary_git.gates.runner import marker

    return machine or marker() is not None


def mask_findings(ws: Workspace, found: Iterable[Finding]) -> list[Finding]:
    """`found` with the message of each finding in a private file replaced (`Mask.finding`); one privacy batch,
    the size of the files with findings. Raises `PrivacyError` (exit 3) when privacy cannot be decided."""
    from vivary_git.hidden import private_paths

    found = list(found)
    private = private_paths(ws, {f.path for f in found})
    mask = Mask(private, {}, (), naming_private(ws, ws.graph(), [f for f in found if f.path not in private]))
    return [mask.finding(f) for f in found] if mask else found


def naming_private(ws: Workspace, graph: Graph, found: Iterable[Finding]) -> frozenset[Finding]:
    """The findings of `found` (public files' findings of `graph`) whose message names a private file beside their
    own: a case twin or a file whose name is a private folder's (W226), the note that has the id already (E130).
    One privacy batch over the files each may name, only when there is such a finding. Raises `PrivacyError`
    (exit 3) when privacy cannot be decided."""
    from vivary_git.hidden import private_paths

    wanted = [f for f in found if f.code in NAMING]
    if not wanted:
        return frozenset()
    from vivary_git.portable import keys

    folded = [(p, keys(p)) for p in [n.path for n in graph.nodes] + list(graph.others)]
    named = {f: _named_by(graph, folded, f) for f in wanted}
    private = private_paths(ws, {p for paths in named.values() for p in paths})
    return frozenset(f for f, paths in named.items() if not private.isdisjoint(paths))


def _named_by(graph: Graph, folded: list[tuple[str, tuple[str, str]]], f: Finding) -> set[str]:
    """The files `f`'s message may name besides its own (a superset: more only masks more), of the graph's files
    `folded` (each path, and its names as macOS and as Windows tell names apart: `portable.keys`). W226: the files
    one on macOS or on Windows with its path, and those in a folder of its name there; E130: the note whose id it
    repeats, as the graph recorded making it (`Graph.duplicates`), never as its message reads."""
    from vivary_git.portable import keys

    if f.code == "E130":
        owner = graph.duplicates.get(f.path)
        # Not known (a graph from an older cache): any file may be the one named.
        return {owner} if owner is not None else {p for p, _ in folded} - {f.path}
    own = keys(f.path)
    return {p for p, names in folded if p != f.path
            and any(k == key or k.startswith(f"{key}/") for k, key in zip(names, own, strict=True))}


def of_notes(ws: Workspace, ids: Iterable[str] | None = None) -> Mask:
    """The mask for the notes of `ws.graph()` with these IDs (None: every note, as `graph` shows them all), in one
    privacy batch; a private note's ID stands as `(private: PATH)`, PATH from the repository's top as in `ci`.
    Raises `PrivacyError` (exit 3) when privacy cannot be decided."""
    from vivary_git.hidden import private_paths

    nodes = ws.graph().nodes
    wanted = None if ids is None else set(ids)
    private = private_paths(ws, {n.path for n in nodes if wanted is None or n.id in wanted})
    at = f"{ws.source.prefix}/" if ws.source.prefix else ""
    return Mask(private, {n.id: private_id(at + n.path) for n in nodes if n.path in private}, {n.id for n in nodes})


def decide(head_ws: Workspace, head_graph: Graph, findings: Iterable[Finding], prefix: str,
           base_ws: Workspace | None = None, base_graph: Graph | None = None,
           change: ChangeReport | None = None, files: Iterable[str] = ()) -> Mask:
    """The mask for a review: the head tree's notes it names and the files its findings are in, decided under the head
    tree's rules, with the head tree's `files` (workspace-relative: the change's, notes or not); the notes the change
    removed, under the base tree's. Raises `PrivacyError` (exit 3) when privacy cannot be decided: `ci` then prints
    nothing it could not vouch for."""
    from vivary_git.hidden import private_paths

    def repo_path(prefix: str, path: str) -> str:  # as review.repo_path, which imports this module
        return f"{prefix}/{path}" if prefix else path

    # Only what a review can name is decided (one batch the size of the change, not of the vault): the files with
    # findings, the changed and impacted notes, the ends of broken and fixed edges, and the notes that reference a
    # changed note (its notice, the picture).
    named: set[str] = set()
    if change is not None:
        changed = {c.id for c in change.changed}
        named = changed | {i.id for i in change.impacted}
        named |= {x for e in (*change.broken_edges, *change.fixed_edges) for x in (e.from_, e.to)}
        named |= {e.from_ for e in head_graph.edges if e.to in changed}
    findings = list(findings)
    paths = {n.path for n in head_graph.nodes if n.id in named} | {f.path for f in findings} | set(files)
    private = private_paths(head_ws, paths)
    naming = naming_private(head_ws, head_graph, [f for f in findings if f.path not in private])
    ids = {n.id: private_id(repo_path(prefix, n.path)) for n in head_graph.nodes if n.path in private}
    public = {n.id for n in head_graph.nodes}
    if base_ws is not None and base_graph is not None:
        public |= {n.id for n in base_graph.nodes}
        if change is not None:
            removed = {c.path: c.id for c in change.changed if c.change == "removed"}
            gone = private_paths(base_ws, removed)
            base_prefix = base_ws.source.prefix
            ids.update({removed[p]: private_id(repo_path(base_prefix, p)) for p in sorted(gone)})
    return Mask(private, ids, public, naming)
