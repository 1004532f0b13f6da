"""A memory after it is written: edit, retire, forget and move, each one commit (docs/remember.md).

The library form of `git vivary edit`, `retire` (`--delete`: forget) and `move`, and of the MCP server's
`edit`, `retire`, `forget` and `move`. Each acts on a memory only: a note of type `memory` in the memory
folder (`[memory.remember] folder`); a note of yours, anywhere else, is refused whatever its type, so your
own notes stay read-only to these tools. Like every memory write (remember.py): the arguments are scanned
for secrets before anything can echo them, the note passes the workspace's rules (`remember.check_note`),
and the commit carries `Vivary-Op` and `Vivary-Node` trailers (`Vivary-Reason` for retire and forget,
`Vivary-From` for move), so `git revert` undoes it and `git vivary log ID` follows the memory.

- `edit`: append to the end or to one heading's section, replace a passage that occurs once (else refused,
  with the candidates), set `expires`, `durability` and tags; every other byte as it was.
- `retire`: `archived: DATE-TIME` and `archived_reason` set: hidden from search and recall as a memory a
  dream compacted is, kept as a note with its history.
- `forget`: the note deleted in a commit (`git revert` brings it back).
- `move`: renamed or moved within the memory folder; links to it in other memories rewritten in the same
  commit (in your notes too with `rewrite_user_links`), the others listed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import msgspec

from vivary_git.config import MEMORY_TYPE
from vivary_git.errors import RefusedError, UsageError
from vivary_git.memory.writes import commits, notefile
from vivary_git.memory.writes.remember import (
    MAX_TEXT,
    Remembered,
    View,
    _answered,
    _base_bytes,
    _check_durability,
    _check_tags,
    _check_text,
    _commit,
    _logged,
    _refuse_private_target,
    check_note,
)
from vivary_git.memory.writes.secrets import refuse_secrets
from vivary_git.portable import systems, windows_refuses

if TYPE_CHECKING:
    from vivary_git.memory.snapshot import MemoryNode

__all__ = ["ARCHIVED_REASON", "MAX_REASON", "Moved", "edit", "forget", "move", "retire"]

ARCHIVED_REASON = "archived_reason"
MAX_REASON = 200
MAX_PASSAGE = 5_000
_BAD_NAME = frozenset('[]|#^\\:*?"<>')


class Moved(msgspec.Struct, frozen=True, omit_defaults=True):
    """What a move did: the memory's new id and path, and the notes whose links to it were rewritten (and
    those of yours left pointing at the old name)."""

    ok: bool
    op: str
    changed: bool
    id: str
    path: str
    moved_from: str
    old_path: str
    rewritten: list[str]  # ids of the notes whose links now name the new path
    not_rewritten: list[str]  # ids of your notes still linking to the old name
    commit: str | None = None
    ref: str | None = None
    blob: str | None = None
    message: str | None = None
    dream_due: str | None = None


def _memory(view: View, ref: str, op: str) -> MemoryNode:
    """The memory `ref` names: a public note of type memory in the memory folder, else refused."""
    node = view.require(ref, "memory")
    folder = view.cfg.memory.remember.folder
    if node.type != MEMORY_TYPE or not node.path.startswith(f"{folder}/"):
        raise RefusedError(f"{node.id!r} is not a memory (a note of type memory in {folder}/); {op} changes only "
                           "memories, so your own notes stay yours: edit them yourself")
    return node


def _reason(reason: str | None, op: str) -> str:
    if not isinstance(reason, str) or not reason.strip():
        raise UsageError(f"say why: {op} takes a reason (one line), kept in the commit" +
                         (" and the note" if op == "retire" else ""))
    flat = commits.one_line(reason, 10_000)
    if len(flat) > MAX_REASON:
        raise UsageError(f"the reason is {len(flat)} characters, over {MAX_REASON}; one line will do")
    return flat


def _expires(value: str) -> str | None:
    """An `expires` value as written to the note (None: remove it)."""
    from vivary_git.memory.dream import durability

    text = value.strip()
    if not text:
        return None
    when = durability.parse_when(text)
    if when is None or len(text) > 40:
        raise UsageError(f"expires {value!r} is not an ISO date or date-time (2026-07-01, 2026-07-01T09:00:00Z; "
                         "UTC when no zone is given); \"\" removes it")
    return text if len(text) == 10 else durability.stamp(when)


def edit(
    view: View,
    ref: str,
    *,
    append: str | None = None,
    heading: str | None = None,
    replace: str | None = None,
    with_text: str | None = None,
    expires: str | None = None,
    durability: str | None = None,
    tags: Sequence[str] | None = None,
    source: str = "agent",
) -> Remembered:
    """Change a memory in place: one commit, the rest of the file byte for byte."""
    refuse_secrets([("id", ref), ("append", append), ("heading", heading), ("replace", replace),
                    ("with", with_text), ("expires", expires), ("durability", durability),
                    *(("tag", t) for t in tags or ())])
    if heading is not None and append is None:
        raise UsageError("heading says where to append: give the text to append too")
    if all(v is None for v in (append, replace, expires, durability, tags)):
        raise UsageError("nothing to edit: give text to append, a passage to replace, expires, durability or tags")
    if (replace is None) != (with_text is None):
        raise UsageError("replace a passage with new text: give both (with \"\" to delete the passage)")
    if append is not None:
        append = _check_text(append, "the text to append", MAX_TEXT)
    if replace is not None:
        if not replace.strip():
            raise UsageError("the passage to replace is empty; give the exact text the note has")
        if len(replace) > MAX_PASSAGE or len(with_text or "") > MAX_TEXT or "\x00" in replace + (with_text or ""):
            raise UsageError(f"a passage is at most {MAX_PASSAGE:,} characters and its replacement {MAX_TEXT:,}, "
                             "plain text")
    tag_list = _check_tags(tags) if tags is not None else None
    _check_durability(durability)
    until = _expires(expires) if expires is not None else None
    node = _memory(view, ref, "edit")
    what = node.path

    def plan(base: commits.Base) -> commits.Planned | None:
        from vivary_git.memory.dream import durability as tiers
        from vivary_git.parse import parse_blob

        data = before = _base_bytes(view, base, node)
        if replace is not None:
            data = notefile.replace_passage(data, replace, with_text or "", what=what)
        if append is not None:
            data = notefile.append_text(data, append, what=what, heading=heading)
        if data != before:
            grown, had = len(parse_blob(data).body), len(parse_blob(before).body)
            if grown > max(MAX_TEXT, had):
                raise UsageError(f"{what} would be {grown:,} characters, over the {MAX_TEXT:,} a memory may hold; "
                                 "keep memories short and link them instead")
        if tag_list is not None:
            data = notefile.set_field(data, "tags", tag_list, what=what, remove=not tag_list)
        if durability is not None:
            data = notefile.set_field(data, "durability", durability, what=what)
        if expires is not None:
            tier = durability or tiers.tier(parse_blob(data).fields)
            if until is not None and tier != "ephemeral":
                raise RefusedError(f"{node.id!r} is {tier}: expires applies to ephemeral memories only (give "
                                   "durability ephemeral too, or leave expires out)")
            data = notefile.set_field(data, tiers.EXPIRES, until, what=what, remove=until is None)
        if data == before:
            return None
        return commits.Planned(view.repo_path(node.path), data)

    changes = ", ".join(k for k, v in (("append", append), ("replace", replace), ("expires", expires),
                                       ("durability", durability), ("tags", tags)) if v is not None)
    result = _commit(view, plan, lambda p: commits.message("edit", node.id, changes, source),
                     write="commit this edit to")
    return _answered(view, "edit", node, result)


def retire(view: View, ref: str, *, reason: str, source: str = "agent") -> Remembered:
    """Archive a memory with a reason: hidden from search and recall, kept with its history; one commit."""
    from vivary_git.memory.dream import durability as tiers

    refuse_secrets([("id", ref), ("reason", reason)])
    why = _reason(reason, "retire")
    node = _memory(view, ref, "retire")
    what = node.path

    def plan(base: commits.Base) -> commits.Planned | None:
        from vivary_git.parse import parse_blob

        data = _base_bytes(view, base, node)
        if tiers.is_archived(parse_blob(data).fields):
            return None
        edited = notefile.set_field(data, tiers.ARCHIVED, tiers.stamp(tiers.now()), what=what)
        edited = notefile.set_field(edited, ARCHIVED_REASON, why, what=what)
        return commits.Planned(view.repo_path(node.path), edited)

    result = _commit(view, plan, lambda p: commits.message("retire", node.id, why, source,
                                                           extra=((commits.TRAILER_REASON, why),)),
                     write="commit this retirement to")
    return _answered(view, "retire", node, result, "already archived")


def forget(view: View, ref: str, *, reason: str, source: str = "agent") -> Remembered:
    """Delete a memory's note in one commit (`git revert` brings it back; `git vivary log ID` still answers)."""
    refuse_secrets([("id", ref), ("reason", reason)])
    why = _reason(reason, "forget")
    node = _memory(view, ref, "forget")
    path = view.repo_path(node.path)

    def plan(base: commits.Base) -> commits.Planned | None:
        _base_bytes(view, base, node)
        return commits.Planned(path, b"")

    result = _commit(view, plan, lambda p: commits.message("forget", node.id, why, source,
                                                           extra=((commits.TRAILER_REASON, why),)),
                     write="delete this memory from", remove=True)
    assert result is not None
    from vivary_git.memory.writes.renames import sources

    linked = sources(view.graph, view.nodes, node.id)
    said = (f"{len(linked)} note(s) still link to it: {', '.join(linked[:10])}" if linked else None)
    return _logged(view, Remembered(ok=True, op="forget", changed=True, id=node.id, path=node.path,
                                    commit=result.commit, ref=result.ref, message=said), [])


def _destination(view: View, node: MemoryNode, to: str) -> str:
    """The workspace-relative path `to` names: a bare name, beside the note (a rename); a path, in the memory
    folder (`ops/deploy-days`, or `memories/ops/deploy-days` from the workspace's root)."""
    from vivary_git.source import is_note

    if not isinstance(to, str) or not to.strip():
        raise UsageError("say where to: a new name, or a path in the memory folder")
    text = to.strip().replace("\\", "/")
    folder = view.cfg.memory.remember.folder
    if text.startswith("/"):
        raise UsageError(f"{to!r}: give a name, or a path in the memory folder, e.g. ops/deploy-days")
    if "/" not in text:
        text = f"{node.path.rsplit('/', 1)[0]}/{text}"
    elif not text.startswith(f"{folder}/"):
        text = f"{folder}/{text}"
    if not is_note(text):
        if "." in text.rsplit("/", 1)[-1] and text.rsplit(".", 1)[-1].isalnum() and len(text.rsplit(".", 1)[-1]) <= 5:
            raise UsageError(f"{to!r}: a memory is a Markdown note; its name ends in .md")
        text += ".md"
    elif text.lower().endswith(".markdown") and not view.ws.config.links.markdown_files:
        editor = view.ws.config.links.dialect.capitalize()
        raise UsageError(f"{to!r}: this vault is read as {editor} reads it, and {editor} reads only .md files as "
                         f"notes: a memory at {text} would be a file, not a note; name it "
                         f"{text.rsplit('/', 1)[-1][:-9]}.md")
    parts = text.split("/")
    bad = [p for p in parts if p in ("", ".", "..") or p.startswith(".") or any(c in _BAD_NAME or c < " " for c in p)]
    if bad:
        raise UsageError(f"{to!r}: {bad[0]!r} cannot be part of a memory's path (no empty, `.` or `..` parts, no "
                         "leading dot, none of [ ] | # ^ \\ : * ? \" < > or control characters)")
    refused = [p for p in parts if windows_refuses(p)]
    if refused:
        raise UsageError(f"{to!r}: {refused[0]!r} is a name Windows refuses (a device name such as con, aux or "
                         "com1, or a name ending in a dot or a space), which Git for Windows cannot check out; "
                         "choose another name")
    if len(text.encode("utf-8")) > 400:
        raise UsageError(f"{to!r} is too long for a path")
    return text


def _refuse_unread_destination(view: View, node: MemoryNode, dest: str, to: str) -> None:
    """A memory moved where the workspace reads no note (an `exclude`, a template folder, …) could never be
    read, searched or moved back: refused, naming the rule and a destination that is read."""
    from vivary_git.graph import node_id
    from vivary_git.memory.writes.remember import unread_because

    why = unread_because(view, dest)
    if why is None:
        return
    folder = view.cfg.memory.remember.folder
    stem = dest.rsplit("/", 1)[-1][:-3]
    ws = view.ws
    works = None
    for n in range(1, 10):
        candidate = f"{folder}/{stem}.md" if n == 1 else f"{folder}/{stem}-{n}.md"
        if candidate == node.path:
            continue
        cid = node_id(candidate, ws.root_name, ws.config.links.ids)
        if unread_because(view, candidate) is None and (cid == node.id or cid not in view.ids):
            works = candidate[:-3]
            break
    hint = (f"choose another, e.g. {works!r}" if works is not None
            else "choose a name and folder none of those rules leave out")
    raise RefusedError(f"{to!r}: {dest} would not be read as a note ({why}), so the memory could never be found "
                       f"there again (not by read, search or move); {hint}; nothing was committed")


def move(view: View, ref: str, to: str, *, rewrite_user_links: bool | None = None, source: str = "agent") -> Moved:
    """Rename or move a memory within the memory folder, rewriting the links to it in one commit: in other
    memories always, in your notes when `rewrite_user_links` (default: `[memory.remember] rewrite_user_links`,
    off); the notes of yours left linking to the old name are listed."""
    from vivary_git.graph import node_id
    from vivary_git.memory.writes.renames import Renamer, sources

    refuse_secrets([("id", ref), ("to", to)])
    node = _memory(view, ref, "move")
    dest = _destination(view, node, to)
    if dest == node.path:
        return Moved(ok=True, op="move", changed=False, id=node.id, path=node.path, moved_from=node.id,
                     old_path=node.path, rewritten=[], not_rewritten=[], message="already there: nothing was committed")
    ws = view.ws
    new_id = node_id(dest, ws.root_name, ws.config.links.ids)
    if new_id != node.id and new_id in view.ids:
        raise RefusedError(f"{dest} would be the node {new_id!r}, which is taken; choose another name")
    other = view.same_file(dest)
    if other is not None and other != node.path:
        raise RefusedError(f"{dest} is the same file as {other} on {systems(dest, other)} (their names "
                           "differ only in case or Unicode form), so a checkout there could not hold both; choose "
                           "another name")
    _refuse_unread_destination(view, node, dest, to)
    _refuse_private_target(view, dest, source=source, named="its file name is the one given; choose another name")
    users = view.cfg.memory.remember.rewrite_user_links if rewrite_user_links is None else rewrite_user_links
    folder = view.cfg.memory.remember.folder
    graph = view.graph
    renamer = Renamer(graph, ws.config, node.path, dest, node.id, new_id)
    linking = [view.nodes[i] for i in sources(graph, view.nodes, node.id)]
    mine = [n for n in linking if n.path.startswith(f"{folder}/") or users]
    left = sorted(n.id for n in linking if n not in mine)
    rewritten: list[str] = []
    old_repo, new_repo = view.repo_path(node.path), view.repo_path(dest)

    def plan(base: commits.Base) -> list[commits.Change] | None:
        if base.taken(new_repo):
            raise RefusedError(f"{dest} is taken (in the branch, your index or your work tree); choose another name")
        data = _base_bytes(view, base, node)
        moved = renamer.rewrite(node.path, data, node.type)
        changes = [commits.Change(old_repo, None), commits.Change(new_repo, moved)]
        rewritten.clear()
        for other in mine:
            path = view.repo_path(other.path)
            before = base.read(path)
            if before is None:
                raise RefusedError(f"{other.path} links to {node.id!r} but is not committed on the memory branch; "
                                   "commit it first, then move; nothing was committed")
            after = renamer.rewrite(other.path, before, other.type)
            if after != before:
                changes.append(commits.Change(path, after))
                rewritten.append(other.id)
        for change in changes:
            check_note(view, base, change.path, change.content)
        return changes

    def message(changes: list[commits.Change]) -> str:
        return commits.message("move", new_id, f"from {node.path} to {dest}", source,
                               extra=((commits.TRAILER_FROM, node.id),))

    repo = ws.source.repo
    if repo is None or repo.workdir is None:
        raise RefusedError(f"{ws.source.root} is not in a Git work tree: memories are commits; run `git init`")
    target, checked_out = commits.target_ref(repo, view.cfg.memory.remember.branch, write="commit this move to")
    result = commits.commit_changes(repo, ref=target, checked_out=checked_out, plan=plan, make_message=message)
    assert result is not None
    said = (f"{len(left)} note(s) of yours still link to the old name (rewrite them with rewrite_user_links): "
            f"{', '.join(left[:10])}" if left else None)
    moved = Moved(ok=True, op="move", changed=True, id=new_id, path=dest, moved_from=node.id, old_path=node.path,
                  commit=result.commit, ref=result.ref, blob=result.blobs.get(new_repo), rewritten=sorted(rewritten),
                  not_rewritten=left, message=said)
    hint = _logged(view, Remembered(ok=True, op="move", changed=True), [new_id]).dream_due
    return msgspec.structs.replace(moved, dream_due=hint) if hint else moved
