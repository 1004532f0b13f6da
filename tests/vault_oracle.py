"""A second, independent reading of vaults, written from docs/vaults.md alone (not from vivary_git's
code): used to hold `check` and `graph` to the dialect page on generated vaults. For Obsidian it names
every broken link and, for every link that reaches a note, the note it reaches (`read`)."""

from __future__ import annotations

import posixpath
import re
import unicodedata
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ATTACHMENT = {"png", "jpg", "jpeg", "gif", "svg", "webp", "pdf", "mp3", "mp4", "canvas", "base"}


def _key(s: str) -> str:
    """A name as the page compares it: NFC, no-break spaces (U+00A0, U+202F) as spaces, lowercased."""
    return unicodedata.normalize("NFC", s).replace("\u00a0", " ").replace("\u202f", " ").lower()


def _stem_key(stem: str) -> str:
    """A note's path without `.md` lowercased as the page says: with its `.md` after it."""
    return _key(stem + ".md")[:-3]


def _blank(text: str) -> str:
    return re.sub(r"[^\n]", " ", text)


def _prose(body: str) -> list[tuple[int, str]]:
    """(line number, text) of a body's lines as links are read in them: fenced code gone, and inline
    code, `$$` math (from a `$$` to the next, wherever each stands, across lines; one no other closes
    runs to the end) and `$…$` math blanked. (Generated vaults use only these, at the top level.)"""
    lines, fence = [], None
    for line in body.split("\n"):
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            lines.append("")
            continue
        if m:
            fence = m.group(1)
            lines.append("")
            continue
        lines.append(re.sub(r"`[^`\n]*`", _blank_match, line))
    text = "\n".join(lines)
    out, at, inside = [], 0, False
    for m in re.finditer(r"\$\$", text):
        out.append(_blank(text[at:m.start()] + "$$") if inside else text[at:m.start()] + "  ")
        at, inside = m.end(), not inside
    out.append(_blank(text[at:]) if inside else text[at:])
    text = "".join(out)
    text = re.sub(r"\$[^$\s\n][^$\n]*?(?<=\S)\$", _blank_match, text)
    return list(enumerate(text.split("\n"), 1))


def _blank_match(m: re.Match[str]) -> str:
    return _blank(m.group(0))


@dataclass
class Reading:
    """What the page says of a vault: every broken link (note path, line, what was looked for) and every
    link that reaches another note (from id, field, to id)."""

    breaks: set[tuple[str, int, str]] = field(default_factory=set)
    edges: set[tuple[str, str, str]] = field(default_factory=set)


def _hidden(path: str) -> bool:
    """Obsidian indexes no folder or file whose name starts with `.`."""
    return any(part.startswith(".") for part in path.split("/"))


def read(root: Path) -> Reading:
    """The Obsidian page's reading of the vault at `root`."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    files = [f for f in files if not _hidden(f)]
    notes = [f for f in files if f.endswith(".md")]
    note_by_path = {_stem_key(f[:-3]): f for f in notes}
    file_by_path = {_key(f): f for f in files if not f.endswith(".md")}

    def exact(path: str) -> str | None:
        """A note by its path from the root (`.md` optional), else another file by its full path."""
        stem = path[:-3] if path.lower().endswith(".md") else path
        return note_by_path.get(_stem_key(stem)) or file_by_path.get(_key(path))

    by_name: dict[str, list[str]] = {}
    for f in files:
        by_name.setdefault(_key(f).rsplit("/", 1)[-1], []).append(f)

    def js_length(f: str) -> int:
        return len(unicodedata.normalize("NFC", f).encode("utf-16-le")) // 2

    def by_name_from(name: str, src: str) -> str | None:
        """A name that is no `/`, `./` or `../` path: looked up as written, then with `.md` after it. Each time
        the file whose path from the root it is; else, of the files whose lowercased path ends with it (as a
        plain string), those whose path starts with the linking note's folder (as a string), shortest first,
        then the others, shortest first (equal lengths: alphabetical)."""
        for n in (name, name + ".md"):
            key = _key(n)
            found = by_name.get(key.rsplit("/", 1)[-1], [])
            if not found:
                continue
            rooted = [f for f in found if _key(f) == key]
            if rooted:
                return rooted[0]
            ending = [f for f in found if _key(f).endswith(key)]
            if ending:
                folder = _key(posixpath.dirname(src))
                return min(ending, key=lambda f: (not _key(f).startswith(folder), js_length(f), f))
        return None

    def relative(src: str, name: str) -> str:
        return posixpath.normpath(posixpath.join(posixpath.dirname(src), name))

    def wikilink(name: str, src: str) -> str | None:
        hit = _wikilink(name, src)
        if hit is None and name.lower().endswith(".md"):
            hit = _wikilink(name + ".md", src)  # looked for as written, then with `.md` after it
        return hit

    def _wikilink(name: str, src: str) -> str | None:
        if name.startswith("/"):
            return exact(name.lstrip("/"))
        if name.startswith(("./", "../")):
            return exact(relative(src, name))
        return by_name_from(name, src)

    def markdown(path: str, src: str) -> str | None:
        hit = _markdown(path, src)
        if hit is None and path.lower().endswith(".md"):
            hit = _markdown(path + ".md", src)
        return hit

    def _markdown(path: str, src: str) -> str | None:
        rel = posixpath.normpath(path.lstrip("/")) if path.startswith("/") else relative(src, path)
        hit = exact(rel) or (None if path.startswith("/") else exact(path))
        if hit is None and not path.startswith(("/", "./", "../")):
            hit = by_name_from(path, src)
        return hit

    out = Reading()

    def reached(src: str, line: int, fld: str, looked: str, hit: str | None) -> None:
        if hit is None:
            out.breaks.add((src, line, looked))
        elif hit.endswith(".md") and hit != src:
            out.edges.add((src[:-3], fld, hit[:-3]))

    for src in notes:
        text = (root / src).read_text(encoding="utf-8")
        body = text
        if text.startswith("---\n"):
            end = text.index("\n---\n", 4)
            try:
                fields = yaml.safe_load(text[4:end])
            except yaml.YAMLError:
                fields = None  # invalid YAML (E001): no properties, the body's links as always
            if isinstance(fields, dict):
                for n, line in enumerate(text[4:end].split("\n"), 2):
                    key = line.split(":", 1)[0].strip() if ":" in line and not line.startswith(" ") else None
                    for m in re.finditer(r"\[\[([^\]|#]*)[^\]]*\]\]", line):
                        at = n if key else _owner_line(text, n)
                        prop = text.split("\n")[at - 1].split(":", 1)[0].strip()
                        reached(src, at, prop, m.group(1).strip(), wikilink(m.group(1).strip(), src))
            body = "\n" * (text[:end + 5].count("\n")) + text[end + 5:]
        for n, line in _prose(body):
            for m in re.finditer(r"!?\[\[([^\]]+)\]\]", line):
                target = m.group(1).replace("\\|", "|").split("|", 1)[0]
                if "{{" in target:
                    continue  # a template placeholder: not a link yet (a `{{` after the `|` is shown text)
                name = unicodedata.normalize("NFC", target.split("#", 1)[0].strip())
                if name:
                    reached(src, n, "wikilink", name, wikilink(name, src))
            for m in re.finditer(r"!?\[[^\]]*\]\((<[^>]*>|[^)\s]+)\)", line):
                dest = m.group(1).strip("<>")
                if re.match(r"[a-z]+:", dest) or dest.startswith("#"):
                    continue
                path = unicodedata.normalize("NFC", urllib.parse.unquote(dest.split("#", 1)[0]))
                rel = posixpath.normpath(path.lstrip("/")) if path.startswith("/") else relative(src, path)
                if rel.startswith("../"):
                    continue  # leaves the vault: not checked
                reached(src, n, "link", rel, markdown(path, src))
    return out


def breaks(root: Path) -> set[tuple[str, int, str]]:
    """(note path, line, what was looked for) of every link that reaches nothing, per the page."""
    return read(root).breaks


def _owner_line(text: str, n: int) -> int:
    """The line of the property key a `  - "[[x]]"` list item belongs to."""
    lines = text.split("\n")
    while n > 1 and lines[n - 1].startswith((" ", "-")):
        n -= 1
    return n


# --- Logseq, written from docs/vaults.md#logseq alone --------------------------------------------------

_TAG_CHARS = r"[^\s#\[\],;!?\"'`()<>{}]+"
VERBATIM = ("src", "example", "export", "comment", "query")  # Org blocks that are not Markdown


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
    names += [m.group(1).rstrip(".:") for m in re.finditer(r"(?:^|(?<=\s))#(" + _TAG_CHARS + ")", rest)
              if not m.group(1).startswith("+")]  # `#+BEGIN_QUOTE`: an Org block line, not a tag
    if plain:
        rest = re.sub(r"(?:^|(?<=\s))#" + _TAG_CHARS, ",", rest)
        names += [p.strip() for p in rest.split(",") if p.strip()]
    return [n.strip() for n in names if n.strip()]


def logseq_edges(root: Path) -> set[tuple[str, str, str, bool]]:
    """(from, field, to, broken) of every link of a Logseq graph: a page is named by its title:: or
    its file name (`___` for `/`), and by its alias:: values, any case; [[x]], #x, #[[x y]] and
    tags:: values link pages; links on a property line are named by the property (none from alias::);
    a link to no page is a broken edge to the name as written; code fences and closed `#+BEGIN_SRC`,
    `EXAMPLE`, `EXPORT`, `COMMENT` and `QUERY` blocks hold no links; a page of an `.org` file is a target,
    not a node."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.md") if ".git" not in p.parts
                   and p.relative_to(root).parts[0] != "logseq")
    orgs = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.org")
                  if p.relative_to(root).parts[0] not in ("logseq", ".git"))
    texts = {f: (root / f).read_text(encoding="utf-8") for f in files}
    own: dict[str, str] = {}
    aliases: dict[str, str] = {}
    for f in orgs:
        own.setdefault(_key(urllib.parse.unquote(f.rsplit("/", 1)[-1][:-4].replace("___", "/"))), "")
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
        verbatim: set[int] = set()
        opened: tuple[str, int] | None = None
        for n, line in enumerate(lines, 1):
            m = re.match(r"\s*(?:- )?#\+(begin|end)_(\w+)", line, re.IGNORECASE)
            if m and opened is None and m.group(1).lower() == "begin" and m.group(2).lower() in VERBATIM:
                opened = (m.group(2).lower(), n)
            elif m and opened is not None and m.group(1).lower() == "end" and m.group(2).lower() == opened[0]:
                verbatim.update(range(opened[1], n + 1))
                opened = None
        for n, line in enumerate(lines, 1):
            if re.match(r"\s*(?:- )?```", line):  # a fence, also one a list item opens
                fence = not fence
                continue
            if fence or n in verbatim:
                continue
            field = prop_lines.get(n, "wikilink")
            if field == "alias":
                continue
            for name in _logseq_refs(line.split("::", 1)[1] if n in prop_lines else line, plain=field == "tags"):
                to = pages.get(_key(name))
                if to is None:
                    edges.add((f[:-3], field, name, True))
                elif to and to != f[:-3]:
                    edges.add((f[:-3], field, to, False))
    return edges
