"""A second, independent reading of Obsidian vaults, written from docs/vaults.md#obsidian alone (not
from vivary_git's code): used to hold `check` to the dialect page on generated vaults."""

from __future__ import annotations

import posixpath
import re
import unicodedata
import urllib.parse
from pathlib import Path

ATTACHMENT = {"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "mp3", "mp4", "canvas", "base"}


def _key(s: str) -> str:
    return unicodedata.normalize("NFC", s).casefold()


def _prose_lines(text: str) -> list[tuple[int, str]]:
    """Lines outside fenced code, with inline code removed (generated vaults use only these)."""
    out, fence = [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        out.append((n, re.sub(r"`[^`]*`", "", line)))
    return out


def breaks(root: Path) -> set[tuple[str, int, str]]:
    """(note path, line, what was looked for) of every link that reaches nothing, per the page."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
                   and ".obsidian" not in p.parts)
    notes = [f for f in files if f.endswith(".md")]
    # Notes are named without their `.md`; every other file by its full name.
    named = [f[:-3] if f.endswith(".md") else f for f in files]
    note_names = {_key(f[:-3]) for f in notes}
    by_path = {_key(n) for n in named}
    by_name: dict[str, list[str]] = {}
    for n in named:
        by_name.setdefault(_key(n.rsplit("/", 1)[-1]), []).append(n)

    def exists(name: str, src: str) -> bool:
        name = name.strip()
        if not name:
            return True
        if name.lower().endswith(".md"):  # `.md` written out: only a note by that name will do
            stem = name[:-3]
            return any(("/" + c).endswith("/" + _key(stem.lstrip("/"))) or c == _key(stem) for c in note_names) \
                or _key(posixpath.normpath(posixpath.join(posixpath.dirname(src), stem))) in note_names
        for stem in [name]:
            if "/" in stem:
                if _key(stem.lstrip("/")) in by_path:
                    return True
                rel = posixpath.normpath(posixpath.join(posixpath.dirname(src), stem))
                if _key(rel) in by_path:
                    return True
            base = stem.rsplit("/", 1)[-1]
            tail = _key("/" + stem) if "/" in stem else ""
            if any(("/" + _key(c)).endswith(tail) for c in by_name.get(_key(base), [])):
                return True
        return False

    found: set[tuple[str, int, str]] = set()
    for src in notes:
        text = (root / src).read_text(encoding="utf-8")
        body = text
        if text.startswith("---\n"):
            end = text.index("\n---\n", 4)
            for n, line in enumerate(text[4:end].split("\n"), 2):
                key = line.split(":", 1)[0].strip() if ":" in line and not line.startswith(" ") else None
                for m in re.finditer(r"\[\[([^\]|#]*)[^\]]*\]\]", line):
                    if not exists(m.group(1), src):
                        found.add((src, n if key else _owner_line(text, n), m.group(1).strip()))
            body = "\n" * (text[:end + 5].count("\n")) + text[end + 5:]
        for n, line in _prose_lines(body):
            for m in re.finditer(r"!?\[\[([^\]]+)\]\]", line):
                target = m.group(1).replace("\\|", "|").split("|", 1)[0].split("#", 1)[0]
                if not exists(target, src):
                    found.add((src, n, target.strip()))
            for m in re.finditer(r"!?\[[^\]]*\]\((<[^>]*>|[^)\s]+)\)", line):
                dest = m.group(1).strip("<>")
                if re.match(r"[a-z]+:", dest) or dest.startswith("#"):
                    continue
                path = urllib.parse.unquote(dest.split("#", 1)[0])
                rel = posixpath.normpath(posixpath.join(posixpath.dirname(src), path))
                if _key(rel[:-3] if rel.endswith(".md") else rel) not in by_path and not exists(path, src):
                    found.add((src, n, rel))
                    continue
                if False:
                    found.add((src, n, rel))
    return found


def _owner_line(text: str, n: int) -> int:
    """The line of the property key a `  - "[[x]]"` list item belongs to."""
    lines = text.split("\n")
    while n > 1 and lines[n - 1].startswith((" ", "-")):
        n -= 1
    return n


# --- Logseq, written from docs/vaults.md#logseq alone --------------------------------------------------

_TAG_CHARS = r"[^\s#\[\],;!?\"'`()<>{}]+"


def _logseq_properties(lines: list[str]) -> list[tuple[int, str, str]]:
    """(line number, name, value) of the `key:: value` lines a page starts with."""
    out = []
    for n, line in enumerate(lines, 1):
        m = re.fullmatch(r"([^\s:0-9][^\s:]*)::(?: +(.*?))? *", line.strip())
        if m is None:
            break
        out.append((n, m.group(1).lower().replace("_", "-"), (m.group(2) or "").strip()))
    return out


def _logseq_refs(text: str, plain: bool) -> list[str]:
    """Pages a text names: [[a]], #[[a b]], #a; with `plain`, also its comma-separated words."""
    names = re.findall(r"\[\[([^\[\]]+)\]\]", text)
    rest = re.sub(r"#?\[\[[^\[\]]+\]\]", ",", text)
    names += [m.group(1).rstrip(".:") for m in re.finditer(r"(?:^|(?<=\s))#(" + _TAG_CHARS + ")", rest)]
    if plain:
        rest = re.sub(r"(?:^|(?<=\s))#" + _TAG_CHARS, ",", rest)
        names += [p.strip() for p in rest.split(",") if p.strip()]
    return [n.strip() for n in names if n.strip()]


def logseq_edges(root: Path) -> set[tuple[str, str, str, bool]]:
    """(from, field, to, broken) of every link of a Logseq graph: a page is named by its title:: or
    its file name (`___` for `/`), and by its alias:: values, any case; [[x]], #x, #[[x y]] and
    tags:: values link pages; links on a property line are named by the property (none from alias::);
    a link to no page is a broken edge to the name as written; code fences hold no links."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if ".git" not in p.parts
                   and p.relative_to(root).parts[0] != "logseq")
    texts = {f: (root / f).read_text(encoding="utf-8") for f in files}
    own: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for f in files:
        props = _logseq_properties(texts[f].split("\n"))
        title = next((v for _, k, v in props if k == "title" and v), None)
        name = title or urllib.parse.unquote(f.rsplit("/", 1)[-1][:-3].replace("___", "/"))
        own.setdefault(_key(name), f[:-3])
        for _, k, v in props:
            if k == "alias":
                for a in _logseq_refs(v, plain=True):
                    aliases.setdefault(_key(a), f[:-3])
    pages = {**aliases, **own}
    edges: set[tuple[str, str, str, bool]] = set()
    for f in files:
        lines = texts[f].split("\n")
        prop_lines = {n: k for n, k, _ in _logseq_properties(lines)}
        fence = False
        for n, line in enumerate(lines, 1):
            if re.match(r"\s*(?:- )?```", line):  # a fence, also one a list item opens
                fence = not fence
                continue
            if fence:
                continue
            field = prop_lines.get(n, "wikilink")
            if field == "alias":
                continue
            for name in _logseq_refs(line.split("::", 1)[1] if n in prop_lines else line, plain=field == "tags"):
                to = pages.get(_key(name))
                if to is None:
                    edges.add((f[:-3], field, name, True))
                elif to != f[:-3]:
                    edges.add((f[:-3], field, to, False))
    return edges
