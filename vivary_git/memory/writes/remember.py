"""Agent memory as Git: add, update, link and unlink, each one note and one commit.

The library form of `git vivary remember` and of the MCP server's `add`/`update`/`link`/`unlink`.
Every operation works on a `View` (one workspace at one tree, with its privacy-filtered snapshot):
only nodes the snapshot admits can be read, edited or linked, and a refusal about a node that is
private reads exactly like one about a node that does not exist. Writes go through `commits.commit_note`.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git import portable
from vivary_git.config import DURABILITY, MEMORY_EDGE_FIELDS, MEMORY_TYPE
from vivary_git.dialects import fold_stem
from vivary_git.errors import RefusedError, UsageError
from vivary_git.memory.writes import commits, notefile
from vivary_git.memory.writes.probe import MAX_RELATED, Candidate, Duplicate, Match, Probe, Verdict, memory_text
from vivary_git.memory.writes.secrets import refuse_secrets
from vivary_git.portable import windows_refuses

if TYPE_CHECKING:
    from vivary_git.graph import Graph
    from vivary_git.memory.config import MemoryConfig
    from vivary_git.memory.snapshot import MemoryNode, MemorySnapshot
    from vivary_git.models import Finding, Note
    from vivary_git.workspace import Workspace

__all__ = ["EdgeRef", "Remembered", "View", "add", "link", "open_view", "unlink", "update"]

MAX_TEXT = 20_000
ADD = "add this memory to"  # an add's `write` (`commits.target_ref`)
MAX_TITLE = 200
MAX_TAGS = 32
MAX_TAG = 64
_TAG = re.compile(r"\A[^\s\x00-\x1f,\[\]{}#\"'`]+\Z")
_SLUG_ID = re.compile(r"\A[a-z0-9][a-z0-9._-]*\Z")
_STEM = re.compile(r"[^a-z0-9]+")
_DASHES = re.compile(r"-{2,}")
_FIELD = re.compile(r"\A[A-Za-z_][A-Za-z0-9_.-]{0,63}\Z")
_LINK_UNSAFE = re.compile(r"[\[\]|#^\x00-\x1f]")
# Keys `link` and `unlink` never write, whatever a config types them as: what a note is, and whether it is
# read at all. (`link` once rewrote a note's `title: Ideas` as `title: [Ideas, "[[notes/deploy]]"]`.)
_NOT_LINKS = frozenset({"type", "title", "id", "archived", "expires", "vivary-ignore"})
ARCHIVED = "archived"  # as memory/dream/durability.py reads it
SUPERSEDES = "supersedes"


class EdgeRef(msgspec.Struct, frozen=True):
    source: str = msgspec.field(name="from")
    field: str = ""
    to: str = ""


class Remembered(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a memory write did. An add says the probe's `verdict` (duplicate, update, related, new) and the
    `matches` it found; `ok` false with `duplicate`: the same claim is remembered; `ok` false with verdict
    `update`: an existing memory says otherwise (update it, or add with supersede)."""

    ok: bool
    op: str
    changed: bool  # whether a commit was made
    id: str | None = None
    path: str | None = None  # workspace-relative
    title: str | None = None
    commit: str | None = None
    ref: str | None = None
    probe: str | None = None  # how duplicates were looked for: "cosine" or "exact"
    verdict: str | None = None  # add: "duplicate" | "update" | "related" | "new" (none with force)
    duplicate: Duplicate | None = None
    matches: list[Match] | None = None  # add: what the probe found, best first, with its evidence
    archived: list[str] | None = None  # add with supersede: the memory it replaces, archived in the same commit
    edge: EdgeRef | None = None
    links: list[EdgeRef] | None = None  # add: the edges the new memory starts with
    blob: str | None = None  # the note's new Git blob id
    message: str | None = None
    dream_due: str | None = None  # said when a dream is due (docs/dream.md)


class View:
    """One workspace at one tree, as memory operations see it: only admitted nodes exist."""

    def __init__(self, ws: Workspace, cfg: MemoryConfig, snapshot: MemorySnapshot, *,
                 others_read: bool = False) -> None:
        self.ws = ws
        self.cfg = cfg
        self.snapshot = snapshot
        # Whether others read what the owner's own command says (`gates.private.masking`: a CI job's log, --json).
        self.others_read = others_read
        self.nodes: dict[str, MemoryNode] = {n.id: n for n in snapshot.nodes}
        self.by_path: dict[str, MemoryNode] = {n.path: n for n in snapshot.nodes}
        self._by_nfc_path: dict[str, MemoryNode] | None = None  # `by_path` in NFC, built on a miss that needs it
        self._ids: set[str] | None = None
        self._folded: dict[str, str] | None = None  # each note's path as macOS and Windows tell names apart -> it

    @property
    def graph(self) -> Graph:
        return self.ws.graph()

    @property
    def ids(self) -> set[str]:
        """Every node id of the graph, private ones included (a new note must not take one)."""
        if self._ids is None:
            self._ids = {n.id for n in self.graph.nodes}
        return self._ids

    def masks(self, source: str) -> bool:
        """Whether a refusal names a rule of the user's by its place alone (`PrivacyDecision.told`): always to an
        agent; to the owner's own command (`source` "cli") only where others read it (`others_read`)."""
        return source != "cli" or self.others_read

    def put(self, node: MemoryNode) -> None:
        """Record a node this process has just committed (the MCP server's view after its own write)."""
        old = self.nodes.get(node.id)
        if old is not None and old.path != node.path:
            self.by_path.pop(old.path, None)
        self.nodes[node.id] = node
        self.by_path[node.path] = node
        self._by_nfc_path = None
        self.ids.add(node.id)
        if self._folded is not None:
            _fold(self._folded, node.path)

    def same_file(self, path: str) -> str | None:
        """The note that `path` (workspace-relative) is the same file as on macOS or on Windows, or None (W226:
        `Deploy.md` for `deploy.md`, `λογος.md` for `λογοσ.md`; `path` itself when a note has it)."""
        if self._folded is None:
            self._folded = {}
            for n in self.graph.nodes:
                _fold(self._folded, n.path)
        mac, win = portable.keys(path)
        return self._folded.get(f"m{mac}") or self._folded.get(f"w{win}")

    def free(self, path: str, nid: str) -> bool:
        """Whether a new note may take `path` (workspace-relative) and its id `nid`: no note has the id, and none
        is the same file on macOS or on Windows (`same_file`)."""
        return nid not in self.ids and self.same_file(path) is None

    def repo_path(self, path: str) -> str:
        prefix = self.ws.source.prefix
        return f"{prefix}/{path}" if prefix else path

    def find(self, ref: str) -> MemoryNode | None:
        """An admitted node by id, or by workspace-relative path (with or without `.md`), in either Unicode form:
        ids are NFC, and a path typed composed (`Café.md`) is the one macOS committed decomposed."""
        got = self.nodes.get(ref)
        if got is not None:
            return got
        path = ref.lstrip("/")
        for candidate in (path, f"{path}.md", f"{path}.markdown"):
            got = self.by_path.get(candidate)
            if got is not None:
                return got
        if ref.isascii():
            return None
        spelt = unicodedata.normalize("NFC", ref)
        got = self.nodes.get(spelt)
        if got is not None:
            return got
        if self._by_nfc_path is None:
            self._by_nfc_path = {}
            for p, node in self.by_path.items():
                self._by_nfc_path.setdefault(unicodedata.normalize("NFC", p), node)
        spelt = spelt.lstrip("/")
        for candidate in (spelt, f"{spelt}.md", f"{spelt}.markdown"):
            got = self._by_nfc_path.get(candidate)
            if got is not None:
                return got
        return None

    def named(self, name: str) -> MemoryNode | None:
        """The admitted node a wikilink `[[name]]` written at the vault root reaches (`graph.resolve_node`, as
        `blast` and `--edge` read a name), or None. A name of several notes, or of a private one, is None too:
        the ids `resolve_node` would list may be private ones."""
        from vivary_git.graph import resolve_node

        try:
            node = resolve_node(self.graph, name, prefix=self.ws.source.prefix)
        except UsageError:
            return None
        return self.nodes.get(node.id)

    def require(self, ref: str, role: str = "node") -> MemoryNode:
        if role == "link target":  # written as a person names the note, as in the `[[link]]` it becomes
            got = self.find(ref) or self.named(ref)
            if got is None:
                raise UsageError(f"no public link target {ref!r} in this workspace: give its id, its path or its "
                                 "name as a wikilink writes it (`git vivary query` or the MCP `search` finds them; "
                                 "private notes are never shown)")
            return got
        got = self.find(ref)
        if got is None:
            raise UsageError(f"no public {role} {ref!r} in this workspace (ids come from `search`; private notes "
                             "are never shown)")
        return got

    def note(self, node: MemoryNode) -> Note:
        return self.note_of(node.blob)

    def note_of(self, blob: str) -> Note:
        """The parsed note of a blob, also one committed after this view's tree was read."""
        try:
            return self.ws.note(blob)
        except KeyError:
            from vivary_git.parse import parse_read

            return parse_read(self.ws.source.read, blob)

    def memories(self) -> list[MemoryNode]:
        return [n for n in self.nodes.values() if n.type == MEMORY_TYPE]


def _fold(folded: dict[str, str], path: str) -> None:
    """Put `path` in `View._folded` under its names on macOS and on Windows (`portable.keys`), each marked with
    its system, unless a note has that name there already."""
    mac, win = portable.keys(path)
    folded.setdefault(f"m{mac}", path)
    folded.setdefault(f"w{win}", path)


def open_view(ws: Workspace, cfg: MemoryConfig | None = None, *, known: Mapping[str, bool] | None = None,
              machine: bool = False) -> View:
    """`known`: privacy verdicts already decided for unchanged paths (`snapshot.build_snapshot`). `machine`: the
    command's output is for programs (`--json`); with a CI runner's log, others read it (`View.others_read`)."""
    from vivary_git.gates.private import masking
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import build_snapshot

    cfg = cfg if cfg is not None else load_memory_config(ws)
    snap = build_snapshot(ws, cfg.policy(), provider=cfg.provider, model=cfg.model,
                          dataset_label=cfg.dataset_label, with_fields=False, known=known)
    return View(ws, cfg, snap, others_read=masking(None, machine=machine))


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _check_text(text: str, what: str, limit: int) -> str:
    if not isinstance(text, str) or not text.strip():
        raise UsageError(f"{what} is empty; say what to remember")
    if len(text) > limit:
        raise UsageError(f"{what} is {len(text):,} characters, over the {limit:,} a memory may hold; keep memories "
                         "short and link them instead")
    if "\x00" in text:
        raise UsageError(f"{what} contains a NUL character; send plain text")
    return text


def _check_tags(tags: Sequence[str]) -> list[str]:
    out: list[str] = []
    if len(tags) > MAX_TAGS:
        raise UsageError(f"{len(tags)} tags, over the {MAX_TAGS} a memory may have")
    for tag in tags:
        tag = tag.strip().lstrip("#")
        if not tag or len(tag) > MAX_TAG or not _TAG.match(tag):
            raise UsageError(f"tag {tag!r} must be one word of at most {MAX_TAG} characters (no spaces, commas, "
                             "brackets or quotes), e.g. \"deploy\"")
        if tag not in out:
            out.append(tag)
    return out


def _check_durability(value: str | None) -> str | None:
    if value is not None and value not in DURABILITY:
        raise UsageError(f"durability {value!r} is not one of {', '.join(DURABILITY)}")
    return value


def _check_expires(value: str | None, durability: str | None) -> str | None:
    """`expires` as the note says it (a UTC date-time), for an ephemeral memory, still to come."""
    if value is None:
        return None
    from vivary_git.memory.dream import durability as tiers

    if durability not in (None, "ephemeral"):
        raise UsageError(f"expires is for ephemeral memories, not {durability} ones: leave durability out, or "
                         "give ephemeral")
    when = tiers.parse_when(value)
    if when is None:
        raise UsageError(f"expires {value!r} is not an ISO date or date-time, e.g. 2026-07-01 or 2026-07-01T09:00Z")
    if when <= tiers.now():
        raise UsageError(f"expires {value!r} has passed: give a moment still to come")
    return tiers.stamp(when)


_FROM_TITLE = "its file name comes from the title; give it another title (--title, or `title` over MCP)"


def _refuse_private_target(view: View, path: str, *, source: str, named: str = _FROM_TITLE) -> None:
    """The note being written must be public, and a note the workspace reads (no `exclude` or other rule
    leaves it out), or it could never be searched, read or moved again (nor should it exist). A refusal names a
    rule of the user's in full at the owner's terminal, by its place alone where others read it (`View.masks`).
    `named`: where the file's name came from and how to choose another, when the name alone is the trouble."""
    from vivary_git.memory.snapshot import decide_for_source

    folder = path.rpartition("/")[0]
    beside = f"{folder}/memory.md" if folder else "memory.md"
    verdict, neighbour = decide_for_source(view.ws, [view.repo_path(path), view.repo_path(beside)],
                                           view.cfg.policy())
    masked = view.masks(source)
    reason = verdict.told(masked=masked)
    hidden = verdict.unsaid(masked=masked)
    if verdict.private and not neighbour.private:
        # The folder is public: the file name, made from the title, is one the privacy floor keeps out
        # (`secrets.md`, `credentials.md`).
        raise RefusedError(
            f"{path} would be private ({reason}), so a memory written there could never be found: {named}{hidden}"
        )
    if verdict.private:
        raise RefusedError(
            f"{path} would be private ({reason}), so a memory written there could never be found; set "
            f"[memory.remember] folder in .vivary/memory.toml to a public folder (default \"memories\"){hidden}"
        )
    why = view.ws.source.left_out_because(path)
    if why is None:
        return
    if view.ws.source.left_out_because(f"{folder}/note.md" if folder else "note.md") is None:
        raise RefusedError(
            f"{path} would not be read as a note ({why}), so a memory written there could never be found: "
            f"{named}; nothing was committed")
    raise RefusedError(
        f"{path} would not be read as a note ({why}), so a memory written there could never be found; set "
        "[memory.remember] folder in .vivary/memory.toml (or the type's folder) to a folder the workspace reads; "
        "nothing was committed")


def unread_because(view: View, path: str) -> str | None:
    """Why a note written at `path` would be no node (an `exclude`, a template folder, …), or None."""
    return view.ws.source.left_out_because(path)


_TEXTS: dict[str, str] = {}  # blob id -> memory text ("" when archived): a blob's text never changes


def _archived(fields: Mapping[str, Any]) -> bool:
    value = fields.get(ARCHIVED)
    return value is not None and value is not False and value != ""


def _candidates(view: View) -> list[Candidate]:
    """The memories an add is compared with: archived ones (superseded, or compacted by a dream) are not."""
    out = []
    for n in view.memories():
        text = _TEXTS.get(n.blob)
        if text is None:
            note = view.note(n)
            text = _TEXTS[n.blob] = "" if _archived(note.fields) else memory_text(note)
        if text:
            out.append(Candidate(n.id, n.path, n.title, text))
    if len(_TEXTS) > 100_000:
        _TEXTS.clear()
    return out


def _title_of(text: str) -> str:
    """The first line of `text` that has a word in it (a `---` rule or a line of `***` names nothing), its
    `#` marks dropped, cut at a word within 80 characters."""
    lines = [line.strip().lstrip("#").strip() for line in text.splitlines()]
    first = next((line for line in lines if any(c.isalnum() for c in line)), next((x for x in lines if x), ""))
    words = first.split()
    title = ""
    for w in words:
        if len(title) + len(w) + 1 > 80:
            break
        title = f"{title} {w}".strip()
    return title or first[:80] or "Memory"


_LATIN_LETTERS = str.maketrans({"ß": "ss", "æ": "ae", "œ": "oe", "ø": "o", "ł": "l", "đ": "d", "ð": "d",
                                "þ": "th", "ı": "i"})


def _ascii_letters(low: str) -> str:
    """Lowercase `low` with accents folded (NFKD, combining marks dropped) and the Latin letters NFKD keeps
    whole spelt in ASCII: what a slug keeps of `Tomás`, `Ærø`, `Łódź` instead of a dash."""
    if low.isascii():
        return low
    folded = unicodedata.normalize("NFKD", low.translate(_LATIN_LETTERS))
    return "".join(c for c in folded if not unicodedata.combining(c))


_STEM_CHARS = 60  # a memory's file name, without `.md`: at most this many characters
_STEM_BYTES = 180  # and bytes in UTF-8 (file systems count bytes: 255 at most)


def _stem(title: str, ids: str) -> str:
    """The file name (without `.md`) of a note titled `title`: its lowercase words joined by `-`.
    Where ids are the contract's slugs (`ids = "slug"`), ASCII letters and digits only, a Latin letter's
    accent dropped (`Tomás` is `tomas`, `Straße` `strasse`; letters of other scripts are left out). Where the id
    is the path (a vault), the letters, marks and digits of every script stay, in NFC: a memory
    titled `Деплой по вторникам` is `деплой-по-вторникам.md`, not `memory-3.md`, since a vault's
    file names are what its editor shows. At most 60 characters and 180 bytes, cut after the last whole word
    that fits (a single word longer than that is cut); "memory" when none are left (`🚀🚀🚀`), `-memory` after a
    device name Windows reserves (`con-memory`). Lowercased as the editor lowercases a link with its `.md`
    (`fold_stem`): a `Σ` ending the name is `σ`, so `[[ΛΟΓΟΣ]]` reaches the memory titled `ΛΟΓΟΣ`, `λογοσ.md`
    (`str.lower` alone spells it `λογος.md`, which Obsidian's `[[ΛΟΓΟΣ]]`, `λογοσ.md` lowercased, does not reach)."""
    # Σ is lowercased last, where the stem ends: whether it is final depends on what follows it there.
    low = title.lower() if "\u03a3" not in title else "".join(c if c == "\u03a3" else c.lower() for c in title)
    if ids != "path" or low.isascii():
        stem = _STEM.sub("-", _ascii_letters(low))
    else:
        low = unicodedata.normalize("NFC", low)
        stem = _DASHES.sub("-", "".join(
            c if ("a" <= c <= "z" or "0" <= c <= "9") or (not c.isascii() and unicodedata.category(c)[0] in "LMN")
            else "-" for c in low))
    stem = stem.strip("-")
    end = min(len(stem), _STEM_CHARS)
    while len(stem[:end].encode("utf-8")) > _STEM_BYTES:
        end -= 1
    # Mid-word (`...-always-happens-o`): back to the last word's end, unless the first word alone is longer.
    if end < len(stem) and stem[end] != "-" and (cut := stem.rfind("-", 0, end)) > 0:
        end = cut
    stem = stem[:end].strip("-") or "memory"
    if "\u03a3" in stem:
        stem = fold_stem(stem, "insensitive")
    # A device name Windows reserves (`con.md`, `aux.md`, `com1.md`) is a path Git for Windows will not check out:
    # one such memory would stop every Windows clone of the repository.
    return f"{stem}-memory" if windows_refuses(stem) else stem


def _folder_for(view: View, type_name: str) -> str:
    if type_name == MEMORY_TYPE:
        return view.cfg.memory.remember.folder
    tdef = view.ws.config.types.get(type_name)
    if tdef is None:
        known = ", ".join(sorted(view.ws.config.types)) or "none"
        raise UsageError(f"type {type_name!r} is not a type of this workspace (types: {known})")
    return tdef.folders[0]


def _declared(view: View, type_name: str, field: str) -> bool:
    cfg = view.ws.config
    tdef = cfg.types.get(type_name)
    return tdef is None or tdef.open or cfg.field_spec(type_name, field) is not None


def _parse_links(links: Sequence[str]) -> list[tuple[str, str]]:
    out = []
    for spec in links:
        field, sep, target = spec.partition(":")
        if not sep or not field.strip() or not target.strip():
            raise UsageError(f"link {spec!r} must be FIELD:ID, e.g. related:deploy-runbook")
        out.append((field.strip(), target.strip()))
    return out


def add(
    view: View,
    text: str,
    *,
    title: str | None = None,
    tags: Sequence[str] = (),
    type_name: str = MEMORY_TYPE,
    durability: str | None = None,
    links: Sequence[str] = (),
    force: bool = False,
    supersede: bool = False,
    source: str = "agent",
    probe: Probe | None = None,
    expires: str | None = None,
) -> Remembered:
    """Remember `text`: a new note in the memory folder, committed, after the probe's verdict (probe.py).
    Refused (ok false) when an existing memory makes the same claim (`duplicate`), or says otherwise about the
    same thing (`update`) unless `supersede`: then that memory is archived in the same commit, and the new one
    `supersedes` it. A `related` add is linked to the related memories. `force` skips the probe.
    `expires` (an ISO date or date-time, UTC when no zone is given) makes it an ephemeral memory that stops
    mattering then (docs/dream.md#durability)."""
    refuse_secrets([("text", text), ("title", title), *(("tag", t) for t in tags), *(("link", x) for x in links),
                    ("type", type_name), ("durability", durability)])
    text = _check_text(text, "the memory text", MAX_TEXT)
    title = " ".join((title or _title_of(text)).split())
    if len(title) > MAX_TITLE:
        raise UsageError(f"the title is {len(title)} characters, over {MAX_TITLE}")
    tag_list = _check_tags(tags)
    until = _check_expires(expires, durability)
    tier = "ephemeral" if until is not None else _check_durability(durability) or view.cfg.memory.remember.durability
    edges = _parse_links(links)
    folder = _folder_for(view, type_name)
    targets = []
    for field, target in edges:
        node = view.require(target, "link target")
        targets.append((field, node.id))
    probe = probe or Probe(view.cfg.memory.remember.similarity)
    seen = None if force else _folder_blobs(view, folder)
    found = None if force else probe.check(text, _candidates(view))
    refused = _refusal(found, supersede, source)
    if refused is not None:
        return _logged(view, refused, [])
    old: MemoryNode | None = None
    if found is not None and found.verdict == "update" and found.top is not None:
        old = view.require(found.top.id, "memory")
        targets.append((SUPERSEDES, old.id))
    elif found is not None and found.verdict == "related":
        for m in found.matches[:MAX_RELATED]:
            if ("related", m.id) not in targets and _linkable(view, type_name, "related", m.id):
                targets.append(("related", m.id))
    cfg = view.ws.config
    from vivary_git.graph import node_id

    stem = _stem(title, cfg.links.ids)
    _refuse_private_target(view, f"{folder}/{stem}.md", source=source)
    stamp = _now()
    fields: list[tuple[str, Any]] = []
    for key, value in (("type", type_name), ("title", title), ("tags", tag_list), ("durability", tier),
                       ("expires", until), ("observed_at", stamp), ("source", source)):
        if key == "title" and "title" in cfg.derive:
            continue  # derived from the `# title` line: writing it would be W210 noise
        if (key == "tags" and not tag_list) or (key == "expires" and until is None):
            continue
        if _declared(view, type_name, key):
            fields.append((key, value))
        elif key == "expires":
            raise UsageError(f"type {type_name} has no `expires` field, so the memory could not expire; leave "
                             "expires out, or declare the field for the type")
    _add_links(view, type_name, fields, targets)
    content = notefile.render_note(fields, title, text)
    chosen: dict[str, str] = {}

    def place(base: commits.Base) -> commits.Planned:
        if seen is not None:  # under the write lock: a memory another process committed since the probe
            landed = _landed(view, base, folder, seen)
            again = probe.check(text, landed) if landed else None
            late = _refusal(again, False, source) if again is not None else None
            if late is not None:
                raise _Refused(late)
        n = 1
        while True:
            name = stem if n == 1 else f"{stem}-{n}"
            path = f"{folder}/{name}.md"
            nid = node_id(path, view.ws.root_name, cfg.links.ids)
            if view.free(path, nid) and not base.taken(view.repo_path(path)):
                chosen.update(path=path, id=nid)
                return commits.Planned(view.repo_path(path), content)
            n += 1

    try:
        if old is None:
            result = _commit(view, place, lambda p: commits.message("add", chosen["id"], title, source),
                             write=ADD)
            assert result is not None
            commit, ref, blob = result.commit, result.ref, result.blob
        else:
            done = _supersede(view, old, place, stamp, title, source, chosen)
            commit, ref, blob = done.commit, done.ref, done.blobs[view.repo_path(chosen["path"])]
    except _Refused as late:
        return _logged(view, late.answer, [])
    answer = Remembered(ok=True, op="add", changed=True, id=chosen["id"], path=chosen["path"], title=title,
                        commit=commit, ref=ref, probe=found.method if found is not None else None,
                        verdict=found.verdict if found is not None else None,
                        matches=found.matches or None if found is not None else None,
                        archived=[old.id] if old is not None else None, blob=blob,
                        links=[EdgeRef(chosen["id"], f, t) for f, t in targets] or None)
    return _logged(view, answer, [chosen["id"]] if type_name == MEMORY_TYPE else [])


class _Refused(Exception):
    """An add refused under the write lock, after its probe: the answer to give."""

    def __init__(self, answer: Remembered) -> None:
        super().__init__(answer.message)
        self.answer = answer


def _folder_blobs(view: View, folder: str) -> frozenset[str] | None:
    """The notes' blobs in the memory folder at the tip of the branch memories go to, as the probe runs; None
    outside a work tree (there is no commit to make). On the checked-out branch too: the view is the working
    tree, where the user may have deleted or changed a committed memory, and a memory the read tools no longer
    show is no duplicate (only one committed after this, by another process, is taken as landed)."""
    repo = view.ws.source.repo
    if repo is None or repo.workdir is None:
        return None
    ref, _ = commits.target_ref(repo, view.cfg.memory.remember.branch, write=ADD)
    at = commits.tip(repo, ref)
    return frozenset(b for _, b in _folder_notes(commits.Base(repo, at, False), view.repo_path(folder)))


def _folder_notes(base: commits.Base, folder: str) -> list[tuple[str, str]]:
    """(name, blob) of the notes directly in `folder` (a repository path) of the base tree."""
    try:
        tree = base.tree[folder] if base.tree is not None else None
    except (KeyError, ValueError):
        return []
    if tree is None or int(tree.filemode) != 0o040000:
        return []
    entries: Any = base.repo.repo[tree.id]
    return [(e.name, str(e.id)) for e in entries if int(e.filemode) in (0o100644, 0o100755) and e.name.endswith(".md")]


def _landed(view: View, base: commits.Base, folder: str, seen: frozenset[str]) -> list[Candidate]:
    """The public memories in `folder` on the tip a write is planned on that its probe did not see: committed
    by another process meanwhile (two agents adding one fact at once both probe before either commits). The
    probe saw the view's notes, and the blobs `seen` at the tip as it ran are not new (the user may have deleted
    one from the working tree the view reads)."""
    from vivary_git.graph import node_id
    from vivary_git.memory.snapshot import decide_for_source

    known = {n.path: n.blob for n in view.nodes.values()}
    new = [(f"{folder}/{name}", blob) for name, blob in _folder_notes(base, view.repo_path(folder))
           if blob not in seen and known.get(f"{folder}/{name}") != blob]
    if not new:
        return []
    verdicts = decide_for_source(view.ws, [view.repo_path(path) for path, _ in new], view.cfg.policy())
    out = []
    for (path, blob), verdict in zip(new, verdicts, strict=True):
        if verdict.private:
            continue
        note = view.note_of(blob)
        text = "" if _archived(note.fields) else memory_text(note)
        if text:
            nid = node_id(path, view.ws.root_name, view.ws.config.links.ids)
            out.append(Candidate(nid, path, note.title or nid, text))
    return out


def _refusal(found: Verdict | None, supersede: bool, source: str) -> Remembered | None:
    """The answer to an add the probe refuses, or None when it goes ahead; its options named as `source`'s caller
    spells them (`--force` on the command line, `force: true` for the MCP `add`)."""
    from vivary_git.memory.writes.surface import flag

    top = found.top if found is not None else None
    if found is None or top is None:
        return None
    how = f"similarity {top.score:.2f} by {top.method}"
    if found.verdict == "duplicate":
        return Remembered(ok=False, op="add", changed=False, probe=found.method, verdict="duplicate", duplicate=top,
                          matches=found.matches, message=(
                              f"not added: memory {top.id!r} already says this ({how}); update that one, or add "
                              f"with {flag(source, 'force')} to keep both"))
    if found.verdict == "update" and not supersede:
        why = "; ".join(top.evidence)
        return Remembered(ok=False, op="add", changed=False, probe=found.method, verdict="update",
                          matches=found.matches, message=(
                              f"not added: memory {top.id!r} is about the same thing but says otherwise ({why}; "
                              f"{how}); update {top.id} instead, or add with {flag(source, 'supersede')} to archive "
                              "it and keep this one"))
    return None


def _linkable(view: View, type_name: str, field: str, target: str) -> bool:
    """Can a new note of `type_name` link `target` in `field` in this workspace?"""
    try:
        _edge_value(view, _FakeNode(type_name), field, target)
    except (UsageError, RefusedError):
        return False
    return True


def _supersede(view: View, old: MemoryNode, place: Callable[[commits.Base], commits.Planned], stamp: str,
               title: str, source: str, chosen: dict[str, str]) -> commits.ChangesResult:
    """The new memory and the one it supersedes archived (`archived: DATE-TIME`), as one commit."""
    old_path = view.repo_path(old.path)

    def plan(base: commits.Base) -> list[commits.Change]:
        data = _base_bytes(view, base, old)
        archived = notefile.set_field(data, ARCHIVED, stamp, what=old.path)
        new = place(base)
        for path, content in ((new.path, new.content), (old_path, archived)):
            check_note(view, base, path, content)
        return [commits.Change(new.path, new.content), commits.Change(old_path, archived)]

    repo = view.ws.source.repo
    if repo is None or repo.workdir is None:
        raise RefusedError(f"{view.ws.source.root} is not in a Git work tree: memories are commits; run `git init`")
    ref, checked_out = commits.target_ref(repo, view.cfg.memory.remember.branch, write=ADD)
    result = commits.commit_changes(
        repo, ref=ref, checked_out=checked_out, plan=plan,
        make_message=lambda changes: commits.message("add", chosen["id"], title, source,
                                                     extra=[(commits.TRAILER_SUPERSEDES, old.id)]))
    assert result is not None
    return result


def _answered(view: View, op: str, node: MemoryNode, result: commits.CommitResult | None,
              unchanged: str = "already so") -> Remembered:
    """The answer of a write on one memory's note: nothing committed (`unchanged` says why), or its commit,
    counted toward the next dream."""
    if result is None:
        return _logged(view, Remembered(ok=True, op=op, changed=False, id=node.id, path=node.path,
                                        message=f"{unchanged}: nothing was committed"), [])
    return _logged(view, Remembered(ok=True, op=op, changed=True, id=node.id, path=node.path,
                                    commit=result.commit, ref=result.ref, blob=result.blob), [node.id])


def _logged(view: View, result: Remembered, ids: Sequence[str]) -> Remembered:
    """Count a memory event toward the next dream (docs/dream.md) and say when one is due."""
    from vivary_git.memory.dream.accesslog import log_for

    log = log_for(view.ws)
    if ids:
        log.record(result.op, ids)
    hint = log.due().hint
    return msgspec.structs.replace(result, dream_due=hint) if hint else result


class _FakeNode:
    """The type of a note not yet written, for choosing how its links are written."""

    def __init__(self, type_name: str) -> None:
        self.type: str | None = type_name
        self.id = ""


def _commit(view: View, plan: Callable[[commits.Base], commits.Planned | None],
            make_message: Callable[[commits.Planned], str], *, write: str,
            remove: bool = False) -> commits.CommitResult | None:
    """Commit the one note `plan` writes; `write` says what that is, as a refusal's "there is no branch to ..."
    ends (`commits.target_ref`)."""
    repo = view.ws.source.repo
    if repo is None or repo.workdir is None:
        raise RefusedError(f"{view.ws.source.root} is not in a Git work tree: memories are commits; run `git init`")
    ref, checked_out = commits.target_ref(repo, view.cfg.memory.remember.branch, write=write)

    def checked(base: commits.Base) -> commits.Planned | None:
        planned = plan(base)
        if planned is not None and not remove:
            check_note(view, base, planned.path, planned.content)
        return planned

    return commits.commit_note(repo, ref=ref, checked_out=checked_out, plan=checked, make_message=make_message,
                             remove=remove)


def check_note(view: View, base: commits.Base, repo_path: str, content: bytes | None) -> None:
    """The workspace's rules on the one note a memory write commits (what `git vivary check` says of that
    note alone): refused when the write gives it an error it did not have on the base. A memory commit runs
    none of the user's hooks (`git commit-tree`), so this stands in for their `vivary-check`; links to other
    notes are checked where they are written (`View.require`)."""
    if content is None:
        return
    from vivary_git import check
    from vivary_git.graph import facts
    from vivary_git.parse import parse_blob

    prefix = view.ws.source.prefix
    path = repo_path[len(prefix) + 1:] if prefix and repo_path.startswith(f"{prefix}/") else repo_path
    cfg = view.ws.config
    for folder, overlay in sorted(view.ws.source.overlays.items(), key=lambda fc: len(fc[0]), reverse=True):
        if path.startswith(f"{folder}/"):
            cfg = overlay  # the nested tropo.toml in force there
            break
    folder_types = cfg.folder_types()

    def errors(data: bytes) -> dict[check.BaselineKey, Finding]:
        got = facts(path, "0" * 40, parse_blob(data), cfg, folder_types, view.ws.root_name)
        found = check.apply_strictness(check.suppress(got.findings, got.ignores), cfg.strict)
        return {check.baseline_key(f): f for f in found if f.level == "error"}

    before = base.read(repo_path)
    had = errors(before) if before is not None else {}
    new = [f for key, f in errors(content).items() if key not in had]
    if new:
        first = new[0]
        more = f" (and {len(new) - 1} more)" if len(new) > 1 else ""
        raise RefusedError(f"{path}:{first.line}: {first.code} {first.message}{more}: this write would break the "
                           "workspace's rules for the note, so nothing was committed; `git vivary check` lists "
                           "the rules")


def _base_bytes(view: View, base: commits.Base, node: MemoryNode) -> bytes:
    rel = view.repo_path(node.path)
    data = base.read(rel)
    if data is None:
        if base.checked_out and base.repo.workdir is not None and not os.path.lexists(base.repo.workdir / rel):
            # Found when this write began, gone from the branch and the work tree by the time it is planned: another
            # write (a `move`, a `retire --delete`) took it meanwhile. It is not "new in your working tree".
            raise RefusedError(f"{node.id!r} is no longer at {node.path}: another write moved or removed it while "
                               "this one ran, so nothing was committed; `git vivary recent` says where it went")
        raise RefusedError(f"{node.id!r} is not committed on the memory branch yet ({node.path} is new in your "
                           "working tree); commit it first, then edit it here")
    return data


def update(
    view: View,
    ref: str,
    *,
    text: str | None = None,
    tags: Sequence[str] | None = None,
    durability: str | None = None,
    title: str | None = None,
    source: str = "agent",
) -> Remembered:
    """Revise a memory's text, title, tags or durability: one commit, the rest of the file byte for byte. The
    `# title` line (and a `title:` field) stays as it was unless `title` is given: new text does not change it.
    The id and the file name stay too (`move` renames)."""
    refuse_secrets([("id", ref), ("text", text), ("title", title), *(("tag", t) for t in tags or ()),
                    ("durability", durability)])
    node = view.require(ref, "memory")
    if node.type != MEMORY_TYPE:
        raise RefusedError(f"{node.id!r} is a {node.type or 'untyped'} note, not a memory; update edits only "
                           "memories (notes in the memory folder), so your own notes stay yours")
    if text is None and tags is None and durability is None and title is None:
        raise UsageError("nothing to update: give the new text, title, tags or durability")
    if text is not None:
        text = _check_text(text, "the memory text", MAX_TEXT)
    if title is not None:
        title = " ".join(title.split())
        if not title:
            raise UsageError("the title is empty: give the memory's new title in words, or leave title out to "
                             "keep the one it has")
        if len(title) > MAX_TITLE:
            raise UsageError(f"the title is {len(title)} characters, over {MAX_TITLE}")
    tag_list = _check_tags(tags) if tags is not None else None
    _check_durability(durability)
    what = node.path

    def plan(base: commits.Base) -> commits.Planned | None:
        data = before = _base_bytes(view, base, node)
        if tag_list is not None:
            data = notefile.set_field(data, "tags", tag_list, what=what, remove=not tag_list)
        if durability is not None:
            data = notefile.set_field(data, "durability", durability, what=what)
        if text is not None:
            data = notefile.replace_body(data, text, what=what)
        if title is not None:
            data = notefile.set_title(data, title, what=what)
        if data == before:
            return None
        return commits.Planned(view.repo_path(node.path), data)

    changes = ", ".join(k for k, v in (("text", text), ("title", title), ("tags", tags), ("durability", durability))
                        if v is not None)
    result = _commit(view, plan, lambda p: commits.message("update", node.id, changes, source),
                     write="commit this update to")
    answer = _answered(view, "update", node, result)
    return msgspec.structs.replace(answer, title=title) if title is not None and result is not None else answer


def _spec(view: View, node: MemoryNode | _FakeNode, field: str) -> Any:
    return view.ws.config.field_spec(node.type, field)



def _add_links(view: View, type_name: str, fields: list[tuple[str, Any]],
               targets: Iterable[tuple[str, str]]) -> None:
    """Append each `FIELD:ID` link of a new note to `fields`: a list field gathers them, a single-link
    field takes one (a second is refused)."""
    probe_node = _FakeNode(type_name)
    for field, target in targets:
        value = _edge_value(view, probe_node, field, target)
        existing = next((i for i, (k, _) in enumerate(fields) if k == field), None)
        if existing is None:
            fields.append((field, [value] if _is_list_field(view, type_name, field) else value))
        elif isinstance(fields[existing][1], list):
            fields[existing][1].append(value)
        else:
            raise UsageError(f"field {field!r} takes one link; give only one {field}:ID")

def _is_list_field(view: View, type_name: str | None, field: str) -> bool:
    spec = view.ws.config.field_spec(type_name, field)
    return spec is None or spec.kind != "ref"


def _edge_value(view: View, node: MemoryNode | _FakeNode, field: str, target: str) -> str:
    """How `target` is written in `field` so the workspace reads it as an edge: a bare id in a field
    whose spec is `ref`/`ref-list` (the contract's ids), else `[[id]]` in one of the memory edge fields
    (`related`, `about`, ...) where the vault's dialect reads links in frontmatter properties. Any other
    field is refused: `link` and `unlink` edit a note's links, never its title, type, flags or other keys."""
    if not _FIELD.match(field):
        raise UsageError(f"field name {field!r} must be a plain frontmatter key (letters, digits, `_`, `.`, `-`)")
    cfg = view.ws.config
    spec = _spec(view, node, field)
    if field not in _NOT_LINKS:
        if spec is not None and spec.is_ref:
            if not _SLUG_ID.match(target):
                raise RefusedError(f"{target!r} cannot be written in the ref field {field!r} (refs are lowercase "
                                   "slugs)")
            return target
        if cfg.links.properties and field in MEMORY_EDGE_FIELDS and (spec is None or spec.kind in ("list", "any")):
            if _LINK_UNSAFE.search(target):
                raise RefusedError(f"{target!r} cannot be written as a [[link]] (it holds [, ], |, # or ^)")
            return f"[[{target}]]"
    raise RefusedError(f"{field!r} is not a link field of {node.type or 'an untyped note'} in this workspace "
                       f"(dialect {cfg.dialect}); {_link_fields_hint(view, node)}")


def _link_fields_hint(view: View, node: MemoryNode | _FakeNode) -> str:
    cfg = view.ws.config
    tdef = cfg.types.get(node.type) if node.type is not None else None
    declared = set(cfg.base_required) | set(cfg.base_optional) | (set(tdef.required) | set(tdef.optional) if tdef
                                                                   else set())
    fields = {f for f in declared if f not in _NOT_LINKS and (s := cfg.field_spec(node.type, f)) is not None
              and s.is_ref}
    if cfg.links.properties:
        fields |= {f for f in MEMORY_EDGE_FIELDS
                   if (s := cfg.field_spec(node.type, f)) is None or s.kind in ("list", "any") or s.is_ref}
    if fields:
        return f"link fields of {node.type or 'untyped notes'} here: {', '.join(sorted(fields))}"
    return "this workspace has no frontmatter link fields for it (declare a ref-list field in tropo.toml)"


def _entry_target(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    text = value.strip()
    if text.startswith("[[") and text.endswith("]]"):
        text = text[2:-2].split("|", 1)[0].split("#", 1)[0].strip()
    return text


def link(view: View, source_ref: str, field: str, target_ref: str, *, source: str = "agent") -> Remembered:
    """Add an edge `field` from one node to another: the target's id in the source note's frontmatter."""
    return _relink(view, source_ref, field, target_ref, add=True, source=source)


def unlink(view: View, source_ref: str, field: str, target_ref: str, *, source: str = "agent") -> Remembered:
    """Remove the edge `field` between two nodes (the value in the source note's frontmatter)."""
    return _relink(view, source_ref, field, target_ref, add=False, source=source)


def _relink(view: View, source_ref: str, field: str, target_ref: str, *, add: bool, source: str) -> Remembered:
    refuse_secrets([("source", source_ref), ("field", field), ("target", target_ref)])
    node = view.require(source_ref, "node")
    target = view.require(target_ref, "link target")
    value = _edge_value(view, node, field, target.id)
    spec = _spec(view, node, field)
    single = spec is not None and spec.kind == "ref"
    op = "link" if add else "unlink"
    what = node.path

    def plan(base: commits.Base) -> commits.Planned | None:
        from vivary_git.parse import parse_blob

        data = _base_bytes(view, base, node)
        current = parse_blob(data).fields.get(field)
        items: list[Any] = [] if current is None else list(current) if isinstance(current, list) else [current]
        present = [i for i, v in enumerate(items) if _entry_target(v) == target.id]
        if add:
            if present:
                return None
            new: Any = value if single else [*items, value]
            return commits.Planned(view.repo_path(node.path), notefile.set_field(data, field, new, what=what))
        if not present:
            return None
        kept = [v for i, v in enumerate(items) if i not in present]
        edited = notefile.set_field(data, field, kept if not single else None, what=what,
                                    remove=not kept or single)
        return commits.Planned(view.repo_path(node.path), edited)

    result = _commit(view, plan, lambda p: commits.message(op, node.id, f"{field} -> {target.id}", source),
                     write="add this link to" if add else "remove this link from")
    edge = EdgeRef(node.id, field, target.id)
    if result is None:
        return _logged(view, Remembered(ok=True, op=op, changed=False, id=node.id, path=node.path, edge=edge,
                                        message="already so: nothing was committed"), [])
    memories = [n.id for n in (node, target) if n.type == MEMORY_TYPE]
    return _logged(view, Remembered(ok=True, op=op, changed=True, id=node.id, path=node.path, edge=edge,
                                    commit=result.commit, ref=result.ref, blob=result.blob), memories)
