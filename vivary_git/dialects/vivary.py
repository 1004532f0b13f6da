"""The rules of a `tropo.toml` workspace (docs/vaults.md#vivary): the contract's ids (lowercase
slugs of file stems) and wikilinks resolved to those ids as vivary-git always has: each part of
`[[a|b]]` reduced to an id the way a path is (anchors, a `dendron://vault/` prefix and folders
dropped, the stem slugged), the last part first (`alias = "auto"`), and links to assets, headings
of the same note and template placeholders left out."""

from __future__ import annotations

import functools
import posixpath
import re
import unicodedata
from collections.abc import Callable, Sequence

from vivary_git.dialects import Resolution, Rules, Target, missing_code
from vivary_git.models import Link

_ID_RUNS = re.compile(r"[^a-z0-9._-]+")
_DENDRON_VAULT = re.compile(r"^dendron://[^/]*/")
_ANCHOR = re.compile(r"[#^]")
_ASSET_SUFFIXES = (
    ".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".bmp", ".pdf", ".mp3", ".mp4", ".webm", ".mov", ".wav",
    ".ogg", ".canvas", ".excalidraw", ".csv", ".zip",
)


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


def names(text: str, alias: str) -> tuple[str, ...]:
    """The names `[[text]]` may mean, best first, as written (each part's stem, without anchor, vault or
    folders); empty when it points at no note (an asset, a heading of this note, a template placeholder)."""
    parts = [p.strip() for p in text.split("|")]
    if len(parts) == 1:
        ordered = parts
    elif alias == "first":
        ordered = [parts[0]]
    elif alias == "last":
        ordered = [parts[-1]]
    else:
        ordered = [parts[-1], parts[0]]
    if "{{" in text:
        return ()  # a template placeholder (`[[journal.{{CURRENT_DAY}}]]`), not a link yet
    if "dendron://" in text:
        parts = [_DENDRON_VAULT.sub("", p) for p in parts]
        ordered = [_DENDRON_VAULT.sub("", p) for p in ordered]
    if any(p.startswith(("#", "^")) for p in parts):
        return ()  # a link to a heading or block of this same note
    out: list[str] = []
    for raw in ordered:
        t = _ANCHOR.split(raw, maxsplit=1)[0].strip() if "#" in raw or "^" in raw else raw.strip()
        if not t or t.lower().endswith(_ASSET_SUFFIXES):
            continue
        out.append(_stem(t.rstrip("/").rsplit("/", 1)[-1]))
    return tuple(out)


@functools.lru_cache(maxsize=65536)
def candidates(text: str, alias: str) -> tuple[str, ...]:
    """Candidate ids of `[[text]]`, best first; empty when it points at no note (an asset, a heading)."""
    return tuple(slug(n) for n in names(text, alias))


def lossy(name: str) -> bool:
    """Whether slugging `name` drops a letter or digit: `Über` is `ber` and `日本語` is `untitled`, ids
    that belong to other notes or to none. Such a name is looked for as a file's name instead."""
    return not name.isascii() and any(ch.isalnum() and not ch.isascii() for ch in name)


def _name_key(name: str) -> str:
    return unicodedata.normalize("NFC", name).lower()


def vault_of(text: str) -> str:
    for part in text.split("|"):
        m = _DENDRON_VAULT.match(part.strip())
        if m:
            return m.group(0)[len("dendron://"):-1]
    return ""


def read(link: Link, rules: Rules, field: str) -> Target | None:
    if link.kind not in ("w", "e"):
        return None
    found = candidates(link.text, rules.alias)
    if not found:
        return None
    vault = vault_of(link.text) if "dendron://" in link.text else ""
    return Target(link.line, link.kind, field, link.text, found[0], "", vault)


class Resolver:
    def __init__(self, rules: Rules, notes: Sequence[str], ids: Callable[[], dict[str, str]]) -> None:
        self.alias = rules.alias
        self.notes = notes
        self.ids = ids()
        self._by_name: dict[str, str] | None = None
        # A resolution depends on the text as written alone (when it has candidates): many notes link
        # the same note, and each text is resolved once per graph.
        self._resolved: dict[str, Resolution] = {}

    def _path_named(self, name: str) -> str | None:
        """The first note (in walk order) whose file is called `name` (any case, either Unicode form)."""
        if self._by_name is None:
            self._by_name = {}
            for path in self.notes:
                self._by_name.setdefault(_name_key(_stem(posixpath.basename(path))), path)
        return self._by_name.get(_name_key(name))

    def _lookup(self, written: str, found: Sequence[str]) -> Resolution:
        """Each candidate in turn: an id, or, for a name its slug would lose letters of (a name in another
        script), the note whose file has that name."""
        named = names(written, self.alias) if not written.isascii() else ()
        if len(named) != len(found) or not any(lossy(n) for n in named):
            named = ()
        for i, c in enumerate(found):
            if named and lossy(named[i]):
                path = self._path_named(named[i])
                if path is not None:
                    return Resolution(path, c)
                continue
            path = self.ids.get(c)
            if path is not None:
                return Resolution(path, c)
        return Resolution(None, named[0] if named and lossy(named[0]) else found[0])

    def resolve(self, target: Target, source: str) -> Resolution:
        written = target.written
        got = self._resolved.get(written)
        if got is not None:
            return got
        # A text without `|` has one candidate, the name `read` found for it (a worker's parse may have
        # read it in another process, whose `candidates` cache this one never sees).
        found = (target.name,) if target.name and "|" not in written else candidates(written, self.alias)
        if not found:
            return Resolution(None, target.name)
        got = self._lookup(written, found)
        self._resolved[written] = got
        return got

    def candidates(self, target: Target) -> list[str]:
        got = self._lookup(target.written, candidates(target.written, self.alias))
        return [got.path] if got.path is not None else []

    def missing_code(self, target: Target) -> str:
        """The contract's links name documents (links to assets are left out when read), and a miss is worded as
        W221 in any case (`check.broken_link`); with `[links] attachments = true`, a name with a file format's
        extension makes no broken edge, as elsewhere."""
        return missing_code(target)


def resolver(rules: Rules, notes: Sequence[str], files: Sequence[str], ids: Callable[[], dict[str, str]]) -> Resolver:
    return Resolver(rules, notes, ids)
