"""Dendron's link rules (docs/vaults.md#dendron).

A note's name is its dotted hierarchy (`dendron.topic.links` is `dendron.topic.links.md`), matched
case-insensitively. In `[[shown|target]]` the target comes *last*. `#heading`, `#^block` (and
`^block`) point inside a note; a wildcard reference (`![[tags.*]]`) names a pattern, not a note.
`dendron://VAULT/target` names another vault: a link into a vault that is not this one points
outside the repository and is not checked. A Markdown link `[x](dest)` is no link to Dendron, which leaves it
to VS Code: a path from the linking note (a leading `/` from the workspace folder that holds it: in a code
workspace, the note's vault), `.md` optional, spelt as the tree spells it, never a name looked for elsewhere.

A name is looked for in a vault's folder only (`dendron.yml`'s vaults, else `dendron.code-workspace`'s first
folder, else the workspace folder), never anywhere in the tree; a name no note has is a file link, a path
(`[[assets/plan.pdf]]`), never a file found by name elsewhere. A wikilink that reaches nothing names a note,
whatever its last dotted part: `[[deck.key]]`, `[[proj.data.csv]]` and `![[deck.slides.pdf]]` are hierarchy
names, and Dendron's Go to Note creates them; a missing path with a file format's extension is a missing file as
in Obsidian.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence

from vivary_git.dialects import Resolution, Rules, Target, fold, nfc, obsidian
from vivary_git.models import Link

_VAULT = re.compile(r"^dendron://([^/]*)/")
_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")


def read(link: Link, rules: Rules, field: str) -> Target | None:
    if link.kind not in ("w", "e"):
        return obsidian.read_markdown(link, rules, field)
    t = obsidian.read_wikilink(link, rules, field)
    if t is None:
        return None
    m = _VAULT.match(t.name)
    name, vault = (t.name[m.end():], m.group(1)) if m is not None else (t.name, "")
    anchor = t.anchor
    if "^" in name:  # a Dendron name has no `^`: `[[note^block]]` is a block anchor
        name, _, block = name.partition("^")
        anchor = anchor or "^" + block
    if "*" in name:
        return None  # a wildcard note reference (`![[tags.feature.*]]`) names a pattern, not a note
    if not name and not anchor:
        return None
    return Target(t.line, t.kind, t.field, t.written, name.strip(), anchor, vault)


def vaults(config: bytes | None, workspace: bytes | None = None) -> tuple[tuple[str, str], ...]:
    """The vaults `dendron.yml` lists (`workspace.vaults`, or the older top-level `vaults`): (name, the folder
    its notes are in), in the file's order. A vault's name is its `name`, else its folder's last part; a
    self-contained vault (`selfContained: true`) keeps its notes in its `notes/` folder. When the file lists
    none, is missing or cannot be read, Dendron takes the first of the folders `dendron.code-workspace`
    (`workspace`) opens as the one vault (and writes it to `dendron.yml`); without that, the workspace folder is
    the one vault (empty)."""
    listed = _listed(config) or _first_folder(workspace)
    out: dict[str, str] = {}
    for vault in listed:
        fs_path = vault.get("fsPath") if isinstance(vault, dict) else None
        if not isinstance(vault, dict) or not isinstance(fs_path, str):
            continue
        folder = posixpath.normpath(fs_path.replace("\\", "/").strip("/") or ".")
        if folder == ".." or folder.startswith("../") or _absolute(fs_path):
            continue  # a vault outside the workspace folder (`../x`, `/home/me/x`, `C:\\x`): not in this tree
        folder = "" if folder == "." else folder
        name = vault.get("name")
        name = name if isinstance(name, str) and name else posixpath.basename(folder)
        if vault.get("selfContained") is True:
            folder = posixpath.join(folder, "notes")
        out.setdefault(nfc(name), nfc(folder))
    return tuple(out.items())


def without_notes(vaults: Sequence[tuple[str, str]], notes: Sequence[str]) -> list[str]:
    """The folders of `vaults` (`Rules.vaults`) no note of `notes` (the graph's note paths) is directly in: missing
    from the tree, or holding no `.md` file of their own (a vault kept in its own repository)."""
    held = {posixpath.dirname(p) for p in notes}
    return [folder for _, folder in vaults if folder not in held]


def folders_said(folders: Sequence[str]) -> str:
    """Vault folders as messages name them: `notes/, work/vault/`, the workspace folder for "" (and for none)."""
    return ", ".join(f"{f}/" if f else "the workspace folder" for f in folders) or "the workspace folder"


def without_notes_said(folders: Sequence[str]) -> tuple[str, str]:
    """(what, fix) for vault folders that hold no note here (`without_notes`), as `check --verbose` and `doctor`
    say it."""
    named = folders_said(folders)
    return (f"vault folder(s) {named} hold no note in this tree (missing, or no .md file directly in them)",
            "set each vault's fsPath in dendron.yml to the folder its notes are in, or commit the vault folders")


def _listed(config: bytes | None) -> list[object]:
    """The vault entries `dendron.yml` lists; empty when it lists none or cannot be read."""
    if config is None or len(config) > 1 << 20:
        return []
    import yaml

    try:
        data = yaml.safe_load(config.decode("utf-8", "replace"))
    except (yaml.YAMLError, RecursionError, ValueError):
        return []
    if not isinstance(data, dict):
        return []
    workspace = data.get("workspace")
    listed = workspace.get("vaults") if isinstance(workspace, dict) else None
    if not isinstance(listed, list):
        listed = data.get("vaults")
    return listed if isinstance(listed, list) else []


def folders(workspace: bytes | None) -> tuple[str, ...]:
    """The folders `dendron.code-workspace` opens (`folders[].path`, from the file's folder), in its order: VS Code's
    workspace folders, a Markdown link's leading `/` read from the one that holds the note. `..` for a folder
    outside this tree (an absolute path, one that leaves the workspace folder, a `uri`). Empty without the file (or
    when it cannot be read): VS Code opens the workspace folder alone."""
    out = []
    for entry in _opened_folders(workspace):
        path = entry.get("path") if isinstance(entry, dict) else None
        if isinstance(path, str):
            out.append(_in_tree(path))
        elif isinstance(entry, dict) and isinstance(entry.get("uri"), str):
            out.append("..")  # a folder VS Code opens by URI (a remote one): not in this tree
    return tuple(out)


def _first_folder(workspace: bytes | None) -> list[object]:
    """The first folder `dendron.code-workspace` opens (`folders[0].path`, from the file's folder), as the vault
    Dendron makes of it; empty without one, or when it is an absolute path (no folder of this tree)."""
    listed = _opened_folders(workspace)
    first = listed[0] if listed else None
    path = first.get("path") if isinstance(first, dict) else None
    if not isinstance(path, str) or _absolute(path):
        return []
    return [{"fsPath": path}]


def _opened_folders(workspace: bytes | None) -> list[object]:
    """The entries of `dendron.code-workspace`'s `folders`; empty when it has none or cannot be read."""
    data = _json_with_comments(workspace) if workspace is not None and len(workspace) <= 1 << 20 else None
    listed = data.get("folders") if isinstance(data, dict) else None
    return listed if isinstance(listed, list) else []


def _absolute(path: str) -> bool:
    """Whether a folder's path names it on the writer's machine (`/home/me/notes`, `~/notes`, `C:\\notes`)."""
    return path.startswith(("/", "\\", "~")) or _DRIVE.match(path) is not None


def _in_tree(path: str) -> str:
    """A folder's path from the workspace folder, as the tree spells it (NFC, "" for the top); `..` when the folder
    is not in this tree."""
    if _absolute(path):
        return ".."
    folder = posixpath.normpath(path.replace("\\", "/").strip("/") or ".")
    if folder == ".." or folder.startswith("../"):
        return ".."
    return "" if folder == "." else nfc(folder)


def _json_with_comments(data: bytes) -> object:
    """A `.code-workspace` file as VS Code reads it: JSON with `//` and `/* */` comments and trailing commas. None
    when it is not that. One pass over the text: its size bounds the time, whatever it holds."""
    text = data.decode("utf-8-sig", "replace")
    out: list[str] = []
    at, end = 0, len(text)
    while at < end:
        c = text[at]
        if c == '"':
            close = at + 1
            while close < end and text[close] != '"':
                close += 2 if text[close] == "\\" else 1
            out.append(text[at:close + 1])
            at = close + 1
            continue
        if text.startswith("//", at):
            close = text.find("\n", at)
            at = end if close < 0 else close
            continue
        if text.startswith("/*", at):
            close = text.find("*/", at + 2)
            at = end if close < 0 else close + 2
            continue
        if c in "]}":
            back = len(out) - 1
            while back >= 0 and out[back].isspace():
                back -= 1
            if back >= 0 and out[back] == ",":
                del out[back]  # a trailing comma
        out.append(c)
        at += 1
    import json

    try:
        return json.loads("".join(out))
    except (ValueError, RecursionError):
        return None


class Resolver(obsidian.Resolver):
    """Dendron's own lookup: a wikilink names a note by its whole file name less `.md` (its `fname`), in a
    vault's folder only (the workspace folder when `dendron.yml` lists no vaults): `[[proj]]` is `proj.md`
    there, never `deep/folder/proj.md`. `dendron://VAULT/` narrows that to the vault so named. A name no
    note has is a file link: a path (`assets/…` in each vault's folder, then from the linking note's vault,
    then from the workspace folder), never a file found by name elsewhere. A Markdown link is a path VS Code opens
    (`_opened`)."""

    def __init__(self, rules: Rules, notes: Sequence[str], files: Sequence[str]) -> None:
        super().__init__(rules, notes, files)
        self.case = rules.case
        self.vaults: tuple[tuple[str, str], ...] = rules.vaults or (("", ""),)
        self.folders = rules.folders
        self._by_name: dict[str, str] = {fold(name, rules.case): folder for name, folder in self.vaults}
        # The vaults `dendron.yml` lists whose folder holds a note in this tree: a `dendron://` link into one
        # that reaches nothing is a broken link here (a listed vault without notes is cloned elsewhere).
        empty = set(without_notes(rules.vaults, notes))
        self.vaults_here = frozenset(name for name, folder in rules.vaults if folder not in empty)
        # Every path as spelt (NFC): a file link is a path the file system opens, and the tree's, like Linux's, tells
        # `Data.csv` from `data.csv`.
        self._spelt: dict[str, str] = {}
        for p in (*notes, *files):
            self._spelt.setdefault(nfc(p), p)

    def resolve(self, target: Target, source: str) -> Resolution:
        if target.kind in ("m", "i", "r") and target.name:
            return self._opened(target.name, source)
        if target.kind not in ("w", "e", "p") or not target.name:
            return super().resolve(target, source)
        name = target.name
        notes = self._notes(name, target.vault)
        if notes:
            home = self._vault_of(source)
            return Resolution(next((p for p in notes if posixpath.dirname(p) == home), notes[0]), name)
        path = self._path(name)
        if path.startswith("../") or path == "..":
            return Resolution(source, path)  # leaves the workspace folder: not ours to check
        hit = self._file(path, self._vault_of(source))
        if hit is None and _on_the_machine(name, path):
            return Resolution(source, path)  # a file on the writer's machine, outside the repository
        return Resolution(hit, name)

    def candidates(self, target: Target) -> list[str]:
        if target.kind not in ("w", "e", "p") or not target.name:
            return super().candidates(target)
        notes = self._notes(target.name, target.vault)
        if notes:
            return notes
        hit = self._file(self._path(target.name), None)
        return [hit] if hit is not None else []

    def _opened(self, name: str, source: str) -> Resolution:
        """A Markdown link's destination as VS Code opens it (Dendron records no Markdown link and hands its click
        to VS Code): a path from the linking note's folder, a leading `/` from the workspace folder that holds the
        note (`dendron.code-workspace`'s `folders`, else the top), `name.md` when `name` has no extension and is not
        there, spelt as the tree spells it (the file system on Linux, as on CI). Never a name looked for elsewhere."""
        if name.startswith("/") and self.folders:
            # VS Code reads a leading `/` from the workspace folder that holds the note (the deepest), else its first:
            # in a Dendron code workspace, the note's vault.
            root = _holding(self.folders, source)
            root = self.folders[0] if root is None else root
            path = posixpath.normpath(posixpath.join(root, name.lstrip("/")))
        else:
            path = obsidian.relative(source, name)
        if path.startswith("../") or path == "..":
            return Resolution(source, path)  # leaves the workspace folder (or is outside this tree): not ours to check
        hit = self._spelt.get(nfc(path))
        if hit is None and "." not in posixpath.basename(path):
            hit = self._spelt.get(nfc(path + ".md"))
        return Resolution(hit, path)

    def _notes(self, name: str, vault: str) -> list[str]:
        """The notes whose name is `name`: `name.md` in each vault's folder (only `vault`'s, when it names a
        vault `dendron.yml` lists), in the order the vaults are listed."""
        if "/" in name or "\\" in name or name.startswith("."):
            return []  # a Dendron name has no folders (a path is a file link), and no note's starts with `.`
        folder = self._by_name.get(fold(vault, self.case)) if vault else None
        folders = (folder,) if folder is not None else tuple(f for _, f in self.vaults)
        found = []
        for f in folders:
            hit = self.index.note_paths.get(fold(posixpath.join(f, name), self.case))
            if hit is not None and hit.endswith(".md") and hit not in found:
                found.append(hit)
        return found

    def _file(self, path: str, home: str | None) -> str | None:
        """The file a file link's `path` names, as Dendron looks for it: `assets/…` in each vault's folder (the
        last listed first), then from the linking note's vault, then from the workspace folder. Spelt as the tree
        spells it: Dendron asks the file system, which on Linux (and in a checkout on CI) opens `data.csv` for
        `[[assets/data.csv]]` only, never for `[[assets/Data.CSV]]`."""
        tries: list[str] = []
        if path.startswith("assets"):
            tries += [posixpath.join(f, path) for _, f in reversed(self.vaults)]
        if home:
            tries.append(posixpath.join(home, path))
        tries.append(path)
        for p in tries:
            hit = self._spelt.get(nfc(p))
            if hit is not None and not self._is_note(hit):
                return hit
        return None

    def _is_note(self, path: str) -> bool:
        """A note of a vault (`a.b.md` in a vault's folder, not named with a leading `.`): named by its name
        (`[[a.b]]`), never by its file name (`[[a.b.md]]` names the note `a.b.md`, docs/vaults.md)."""
        folder, _, name = path.rpartition("/")
        return name.endswith(".md") and not name.startswith(".") and any(folder == f for _, f in self.vaults)

    @staticmethod
    def _path(name: str) -> str:
        """A file link's path from its vault, a leading `/` dropped (Dendron reads `/assets` as `assets`, and any
        absolute path the writer's machine does not have as one from the workspace)."""
        path = posixpath.normpath(name.replace("\\", "/").strip("/"))
        return "" if path == "." else path

    def _vault_of(self, source: str) -> str:
        """The folder of the vault the note at `source` is in (the deepest that holds it), "" for none."""
        return _holding([f for _, f in self.vaults], source) or ""

    def missing_code(self, target: Target) -> str:
        """A wikilink's (an embed's, a property's) name without a `/` is a hierarchy name: a missing note (W221),
        even when its last part is a file format's extension (`[[deck.key]]`, `[[proj.data.csv]]`). A path and a
        Markdown link name files as in Obsidian: a missing path without a file format's extension
        (`[[assets/example]]`) is a missing note too, as Dendron shows it (a broken wikilink, which its Go to Note
        creates as a note)."""
        if target.kind in ("w", "e", "p") and "/" not in target.name:
            return "W221"
        return super().missing_code(target)


def _holding(folders: Sequence[str], path: str) -> str | None:
    """The deepest of `folders` (tree paths, "" for the top) that holds the file at `path`; None for none."""
    held = [f for f in folders if not f or path.startswith(f + "/")]
    return max(held, key=len) if held else None


def _on_the_machine(name: str, path: str) -> bool:
    """Whether a file link the tree does not have names a file outside the repository: an absolute path into a
    folder (`/home/me/f.txt`, `C:\\Users\\me\\f.txt`), which Dendron opens on the writer's machine when it is there,
    so no checkout can tell it broken. Not `/assets/…` (to Dendron `/assets` and `assets` are one place), nor a
    name at the file system's top (`[[/proj]]`), which no machine has."""
    if _DRIVE.match(name):
        return True
    return name.startswith(("/", "\\")) and "/" in path and not path.startswith("assets")
