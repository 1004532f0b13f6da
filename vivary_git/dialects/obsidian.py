"""Obsidian's link rules (docs/vaults.md#obsidian), and the path index other dialects share.

A wikilink names a file by name, anywhere in the vault, case-insensitively: `[[Kyoto]]` is
`References/Kyoto.md`; `.md` may be left out, any other file is named with its extension
(`![[Albums.base]]`, `[[paper.pdf]]`), a file's whole name before a note's. `[[folder/name]]` is a path
from the vault root, else any path ending so as a string. When several files share the name, the one at
the root wins, else the shortest under the linking note's folder, else the shortest (Obsidian's
`getLinkpathDest`: `Index.linkpath`). The target is what stands before the first `|` that is
not escaped (`\\|` in a table cell); a `#heading` or `#^block` suffix points inside it. A Markdown
link's destination is URL-decoded and read relative to the linking note, then from the vault root,
then by name, as Obsidian does.
"""

from __future__ import annotations

import posixpath
import urllib.parse
from bisect import bisect_left
from collections.abc import Sequence

import msgspec

from vivary_git.dialects import (
    Resolution,
    Rules,
    Target,
    fold,
    fold_stem,
    is_placeholder,
    is_url,
    missing_code,
    nfc,
    split_target,
)
from vivary_git.models import Link

NOTE_SUFFIXES = (".md", ".markdown")
# Obsidian reads only `.md` as notes (its accepted file formats): a `.markdown` file is a file, named with its
# extension, as a `.pdf` is.
OBSIDIAN_NOTE_SUFFIXES = (".md",)


def strip_note_suffix(name: str, suffixes: tuple[str, ...] = NOTE_SUFFIXES) -> str:
    low = name.lower()
    for s in suffixes:
        if low.endswith(s):
            return name[: -len(s)]
    return name


def read_wikilink(link: Link, rules: Rules, field: str) -> Target | None:
    """`[[target#anchor|shown]]` (and `![[…]]`, and a property's `[[…]]`) as Obsidian reads it."""
    text = link.text
    target, _ = split_target(text, rules.alias)
    if is_placeholder(target):
        return None  # `[[{{title}}]]`; a placeholder in the shown text (`[[note|Text {{x}}]]`) leaves the target
    name, _, anchor = target.partition("#")
    name = nfc(name.strip())
    anchor = anchor.strip()
    if not name and not anchor:
        return None  # `[[]]`, `[[|x]]`
    if is_url(name) and not name.startswith("dendron://"):
        return None  # `[[label|https://…]]`: a web address, not a file of the vault
    return Target(link.line, link.kind, field, text, name, anchor)


def read_markdown(link: Link, rules: Rules, field: str) -> Target | None:
    """`[shown](dest)`, `![shown](dest)` and `[label]: dest`: URLs left out, the path URL-decoded."""
    dest = link.text.strip()
    if not dest or is_url(dest) or is_placeholder(dest) or dest.startswith("//"):
        return None
    path, _, anchor = dest.partition("#")
    path = path.split("?", 1)[0]
    name = nfc(urllib.parse.unquote(path)) if "%" in path else nfc(path)
    return Target(link.line, link.kind, "link", dest, name, urllib.parse.unquote(anchor))


def read(link: Link, rules: Rules, field: str) -> Target | None:
    if link.kind in ("w", "e"):
        return read_wikilink(link, rules, field)
    return read_markdown(link, rules, field)


class Index:
    """Every note and file path of the tree, looked up by path and by name."""

    def __init__(self, notes: Sequence[str], files: Sequence[str], case: str,
                 suffixes: tuple[str, ...] = NOTE_SUFFIXES, with_extension: bool = False) -> None:
        self.case = case
        self.suffixes = suffixes  # the extensions of notes, which a link may leave out
        # How a note's name without its `.md` is lowercased: with its `.md` after it where the editor lowercases
        # names so (Obsidian, Foam: `fold_stem`), else alone (Dendron's and Logseq's names have no extension).
        self._fold_stem = fold_stem if with_extension else fold
        self.note_paths: dict[str, str] = {}  # folded path without its .md -> path
        self.note_names: dict[str, list[str]] = {}  # folded name without .md -> paths
        self.file_paths: dict[str, str] = {}  # folded path -> path (attachments, and notes with their .md)
        self.file_names: dict[str, list[str]] = {}
        for p in notes:
            key = self._fold_stem(self._stem(p), case)
            self.note_paths.setdefault(key, p)
            self.note_names.setdefault(key.rsplit("/", 1)[-1], []).append(p)
            self.file_paths.setdefault(fold(p, case), p)
        for p in files:
            key = fold(p, case)
            if key.endswith(suffixes):  # a note left out of the graph (a template): still a note to link
                stem = self._fold_stem(self._stem(p), case)
                self.note_paths.setdefault(stem, p)
                self.note_names.setdefault(stem.rsplit("/", 1)[-1], []).append(p)
            self.file_paths.setdefault(key, p)
            self.file_names.setdefault(key.rsplit("/", 1)[-1], []).append(p)
        # Built on first use: a `folder/name` lookup's candidates (by the last two segments), and each
        # name's tie-break. Without them every link to a name many notes share (`index`, `README`)
        # scanned all of them: 3,000 `index.md` linking `[[index]]` took 40 s.
        self._tails: tuple[dict[str, list[str]], dict[str, list[str]]] | None = None
        self._groups: dict[str, Group] = {}
        # Paths as they are spelt (NFC; a note's without `.md`), for names that match several paths differing only
        # in case (`Foo.md` and `foo.md`, legal on Linux): the one spelt as the link is the one it names.
        self._spelt: dict[str, str] | None = None
        self._notes, self._files = notes, files
        # Obsidian's own lookup (`linkpath`): every note and file by its whole name folded (`.md` included), and the
        # tie-break of each link path, built on first use.
        self._whole_names: dict[str, list[str]] | None = None
        self._nearest: dict[str, Nearest] = {}
        self._backwards: dict[str, tuple[list[str], list[str]]] = {}

    def _stem(self, name: str) -> str:
        return strip_note_suffix(name, self.suffixes)

    def exact(self, path: str) -> str | None:
        """The note at `path` (`.md` optional) or the file at `path` (its full name), from the root; of paths that
        differ only in case, the one spelt as `path`."""
        if not path or path.startswith("../") or path == "..":
            return None
        key = fold(path, self.case)
        found = self.note_paths.get(self._fold_stem(self._stem(path), self.case)) or self.file_paths.get(key)
        if found is not None and found != path and self._stem(found) != path:
            return self._as_spelt(path) or found
        return found

    def _as_spelt(self, path: str) -> str | None:
        """The note or file whose path is `path` as spelt (NFC, a note's `.md` optional), or None."""
        if self._spelt is None:
            spelt: dict[str, str] = {}
            for p in self._notes:
                spelt.setdefault(nfc(self._stem(p)), p)
            for p in self._files:
                spelt.setdefault(nfc(p), p)
            self._spelt = spelt
        path = nfc(path)
        return self._spelt.get(path) or self._spelt.get(self._stem(path))

    def named(self, name: str) -> list[str]:
        """Notes named `name` (`.md` optional; a `folder/name` matches paths ending so), else files."""
        return self._named(name.strip("/"))

    def _named(self, name: str) -> list[str]:
        """Notes named `name` (stripped of `/`s at its ends), else files; the name is folded here, not before: a
        note's name is folded as its `.md` follows it (`fold_stem`)."""
        key = fold(name, self.case)
        stem = self._fold_stem(self._stem(name), self.case)
        if "/" not in key:
            return self.note_names.get(stem) or self.file_names.get(key, [])
        note_tails, file_tails = self._tail_index()
        tail, t = "/" + key, "/" + stem
        found = [p for p in note_tails.get(_last_two(t), ())
                 if ("/" + self._fold_stem(self._stem(p), self.case)).endswith(t)]
        if not found:
            found = [p for p in file_tails.get(_last_two(key), ()) if ("/" + fold(p, self.case)).endswith(tail)]
        return found

    def nearest(self, name: str, source: str) -> str | None:
        """Of the paths `name` names, the one in the folder of `source`, else the shortest (the path index's
        tie-break, for the dialects built on it and for ignored files; Obsidian's own is `linkpath`); None when it
        names none."""
        key = fold(name.strip("/"), self.case)
        found = self._named(name.strip("/"))
        if len(found) < 2:
            return found[0] if found else None
        pick = self._group(key, found).nearest(source)
        # Beside it, a path differing only in case and spelt as the link: that one (`[[foo]]` is `foo.md`, not
        # `Foo.md`, and from `Foo.md` it is no link to itself).
        twin = self._as_spelt(posixpath.join(posixpath.dirname(pick), posixpath.basename(name.strip("/"))))
        return twin if twin is not None and twin in found else pick

    def linkpath(self, name: str, source: str) -> str | None:
        """The note or file Obsidian opens for a wikilink's `name` written in `source` (no `/`, `./` or `../` in
        front: those are paths), or None: `name` looked up as written, then with a note's extension after it."""
        got = self._linkpath(fold(name, self.case), name)
        if got is None:
            for suffix in self.suffixes:
                got = self._linkpath(fold(name + suffix, self.case), name + suffix)
                if got is not None:
                    name += suffix
                    break
            else:
                return None
        if isinstance(got, str):
            return got
        return self._spelt_beside(got.pick(fold(posixpath.dirname(source), self.case)), name, got)

    def linkpaths(self, name: str) -> list[str]:
        """Every path `linkpath` could open for `name`, as written at the vault root (the first first)."""
        for n in (name, *(name + s for s in self.suffixes)):
            key = fold(n, self.case)
            got = self._linkpath(key, n)
            if isinstance(got, str):
                return self._case_twins(key, n, got)
            if got is not None:
                return list(got.by_length)
        return []

    def _case_twins(self, key: str, name: str, got: str) -> list[str]:
        """`got`, the path `name` names from the root, with the paths that differ from it only in case (`USER.md`
        beside `user.md`, legal on Linux) when `name` spells none of them: the editor opens whichever it indexed
        first, so a command must not pick one (`blast User` answered the private `USER` for `user`)."""
        spelt = self._as_spelt(name)
        if spelt is not None and fold(spelt, self.case) == key:
            return [spelt]
        twins = [p for p in (self._whole_names or {}).get(key.rsplit("/", 1)[-1], ()) if fold(p, self.case) == key]
        return sorted(twins) if len(twins) > 1 else [got]

    def _linkpath(self, key: str, name: str) -> str | Nearest | None:
        """For one folded name: the path it is from the root, else the paths whose folded path ends with it (a
        plain string test, as Obsidian's: `[[b/note]]` reaches `ab/note.md`), else None."""
        if self._whole_names is None:
            whole: dict[str, list[str]] = {}
            for p in (*self._notes, *self._files):
                whole.setdefault(fold(p, self.case).rsplit("/", 1)[-1], []).append(p)
            self._whole_names = whole
        paths = self._whole_names.get(key if "/" not in key else key.rsplit("/", 1)[-1])
        if not paths:
            return None
        if len(paths) == 1:  # most names: no tie to break, nor a twin spelt otherwise
            only = paths[0]
            return only if "/" not in key or fold(only, self.case).endswith(key) else None
        hit = self.file_paths.get(key)
        if hit is not None:
            spelt = self._as_spelt(name)
            return spelt if spelt is not None and fold(spelt, self.case) == key else hit
        got = self._nearest.get(key)
        if got is None:
            ending = paths if "/" not in key else self._ending(key, paths)
            if not ending:
                return None
            got = self._nearest[key] = Nearest(ending, self.case)
        return got

    def _ending(self, key: str, paths: list[str]) -> list[str]:
        """Of `paths` (one name's), those whose folded path ends with `key`: found by bisecting the name's paths
        spelt backwards, not by testing each (a docs tree's 3,000 `index.md` linked as `[[d0007/index]]`)."""
        base = key.rsplit("/", 1)[-1]
        backwards = self._backwards.get(base)
        if backwards is None:
            pairs = sorted((fold(p, self.case)[::-1], p) for p in paths)
            backwards = self._backwards[base] = ([b for b, _ in pairs], [p for _, p in pairs])
        spelt, found = backwards
        yek = key[::-1]
        return found[bisect_left(spelt, yek):bisect_left(spelt, yek + "\U0010ffff")]

    def _spelt_beside(self, pick: str, name: str, group: Nearest) -> str:
        """Beside the one picked, a path differing only in case and spelt as the link: that one."""
        twin = self._as_spelt(posixpath.join(posixpath.dirname(pick), posixpath.basename(name)))
        return twin if twin is not None and twin in group.members else pick

    def first(self, name: str) -> str | None:
        """Of the paths `name` names, the first alphabetically (Foam); None when it names none."""
        key = fold(name.strip("/"), self.case)
        found = self._named(name.strip("/"))
        if len(found) < 2:
            return found[0] if found else None
        return self._group(key, found).first

    def _group(self, key: str, found: list[str]) -> Group:
        """The tie-breaks of the paths one name matches, worked out once (a vault links one name many
        times)."""
        got = self._groups.get(key)
        if got is None:
            got = self._groups[key] = Group(found)
        return got

    def _tail_index(self) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """Notes by the last two segments of their folded path without `.md`, other files by those of
        their folded path: a path ending with `/b/name` is among those keyed `b/name`. In the order
        `note_names` and `file_names` list them, so a filtered list is the same as filtering those."""
        if self._tails is None:
            notes: dict[str, list[str]] = {}
            files: dict[str, list[str]] = {}
            for paths in self.note_names.values():
                for p in paths:
                    notes.setdefault(_last_two(self._fold_stem(self._stem(p), self.case)), []).append(p)
            for paths in self.file_names.values():
                for p in paths:
                    files.setdefault(_last_two(fold(p, self.case)), []).append(p)
            self._tails = (notes, files)
        return self._tails


def _last_two(path: str) -> str:
    """`a/b/c` -> `b/c`; `/c` and `c` -> `c`."""
    return "/".join(path.rsplit("/", 2)[-2:]).lstrip("/")


class Group:
    """Several paths one name matches, with the editors' tie-breaks computed once: the first path in
    each folder (`Index.nearest`: the one beside the linking note), the shortest path, the first
    alphabetically (Foam)."""

    __slots__ = ("by_folder", "first", "shortest")

    def __init__(self, paths: list[str]) -> None:
        self.by_folder: dict[str, str] = {}
        for p in paths:
            self.by_folder.setdefault(posixpath.dirname(p), p)
        self.shortest = min(paths, key=lambda p: (p.count("/"), len(p), p))
        self.first = min(paths)

    def nearest(self, source: str) -> str:
        """The one in the linking note's folder, else the shortest (fewest folders, then shortest, then
        alphabetical)."""
        return self.by_folder.get(posixpath.dirname(source), self.shortest)


class Nearest:
    """The paths one link path reaches in Obsidian (`_getLinkpathDest`), with its tie-break: of those whose
    lowercased path starts with the linking note's lowercased folder as a plain string (so its subfolders, and
    `src2/` beside `src/`), the shortest path; else the shortest of all. Equal lengths: alphabetical (Obsidian
    keeps the order it indexed the files in, which a tree does not tell)."""

    __slots__ = ("by_length", "folded", "members", "paths", "picks")

    def __init__(self, paths: list[str], case: str) -> None:
        self.by_length = sorted(paths, key=_length)
        self.members = frozenset(paths)
        pairs = sorted((fold(p, case), p) for p in paths)
        self.folded = [f for f, _ in pairs]
        self.paths = [p for _, p in pairs]
        self.picks: dict[str, str] = {}

    def pick(self, folder: str) -> str:
        """The one a link from a note in the (folded) `folder` opens."""
        if not folder:
            return self.by_length[0]
        got = self.picks.get(folder)
        if got is None:
            # The paths starting with `folder` sit together in sorted order: look at those alone, not at every one
            # (3,000 `index.md` each linking `[[index]]`).
            under = self.paths[bisect_left(self.folded, folder):bisect_left(self.folded, folder + "\U0010ffff")]
            got = self.picks[folder] = min(under, key=_length) if under else self.by_length[0]
        return got


def _length(path: str) -> tuple[int, str]:
    """A path's length as JavaScript counts it (UTF-16 code units, of its NFC spelling), then the path."""
    if path.isascii():
        return len(path), path
    return len(nfc(path).encode("utf-16-le")) // 2, path


def relative(source: str, name: str) -> str:
    """`name` read relative to the folder of `source` (a leading `/` is the vault root)."""
    if name.startswith("/"):
        return posixpath.normpath(name.lstrip("/"))
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(source), name))
    return "" if joined == "." else joined


def lowers_with_extension(rules: Rules) -> bool:
    """Whether the editor lowercases a note's name with its `.md` after it (`fold_stem`): Obsidian and Foam do."""
    return rules.dialect in ("obsidian", "foam")


class Resolver:
    def __init__(self, rules: Rules, notes: Sequence[str], files: Sequence[str]) -> None:
        self.index = Index(notes, files, rules.case, NOTE_SUFFIXES if rules.markdown_files else OBSIDIAN_NOTE_SUFFIXES,
                           lowers_with_extension(rules))
        # Obsidian looks a name up as written, then with `.md` after it: a note titled `README.md` is the file
        # `README.md.md`, which Obsidian links as `[[README.md]]` (no file being named `README.md`).
        self._md_again = rules.dialect == "obsidian"
        # A name that is no `/`, `./` or `../` path is looked up as Obsidian's `getLinkpathDest` does
        # (`Index.linkpath`); the dialects built on this one keep the path index's rules.
        self._obsidian_lookup = rules.dialect == "obsidian"

    def resolve(self, target: Target, source: str) -> Resolution:
        got = self._resolve(target, source)
        if got.path is None and self._md_again and target.name.lower().endswith(".md"):
            again = self._resolve(msgspec.structs.replace(target, name=target.name + ".md"), source)
            if again.path is not None:
                return Resolution(again.path, got.looked_for)
        return got

    def _resolve(self, target: Target, source: str) -> Resolution:
        name = target.name
        if not name:
            return Resolution(source, source)  # [[#heading]]: this same note
        index = self.index
        if target.kind in ("m", "i", "r"):
            rel = relative(source, name)
            if rel.startswith("../") or rel == "..":
                return Resolution(source, rel)  # leaves the workspace folder: not ours to check
            for path in (rel, name.lstrip("/")) if not name.startswith("/") else (rel,):
                hit = index.exact(path)
                if hit is not None:
                    return Resolution(hit, rel)
            hit = self._reached_by_name(name, source) if not name.startswith(("./", "../", "/")) else None
            return Resolution(hit, rel)
        if name.startswith("/") or name.startswith("./") or name.startswith("../"):
            rel = relative(source, name)
            return Resolution(index.exact(rel), rel)
        if self._obsidian_lookup:
            return Resolution(index.linkpath(name, source), name)
        if "/" in name:
            hit = index.exact(name) or index.exact(relative(source, name))
            if hit is not None:
                return Resolution(hit, name)
        return Resolution(index.nearest(name, source), name)

    def _reached_by_name(self, name: str, source: str) -> str | None:
        return self.index.linkpath(name, source) if self._obsidian_lookup else self.index.nearest(name, source)

    def candidates(self, target: Target) -> list[str]:
        found = self._candidates(target)
        if not found and self._md_again and target.name.lower().endswith(".md"):
            return self._candidates(msgspec.structs.replace(target, name=target.name + ".md"))
        return found

    def _candidates(self, target: Target) -> list[str]:
        name = target.name
        if not name:
            return []
        index = self.index
        if name.startswith(("/", "./", "../")) or target.kind in ("m", "i", "r"):
            hit = index.exact(relative("", name))
            if hit is not None or name.startswith(("/", "./", "../")):
                return [hit] if hit is not None else []
            return index.linkpaths(name) if self._obsidian_lookup else index.named(name)
        if self._obsidian_lookup:
            return index.linkpaths(name)
        if "/" in name:
            hit = index.exact(name)
            if hit is not None:
                return [hit]
        return index.named(name)

    def missing_code(self, target: Target) -> str:
        """A name with the extension of a file format (`[[paper.pdf]]`, `![[missing.png]]`) is a file; any other
        name is a note, which Obsidian creates when the link is followed (`[[Node.js]]`)."""
        return missing_code(target)
