"""Vault dialects: how each editor reads a link, and which note or file it means.

A vault is written for one editor, and its links mean what that editor makes of them: in Obsidian
`[[a|b]]` points at `a`, in Dendron at `b`; Obsidian finds `[[Kyoto]]` by file name anywhere in the
vault, Dendron by its dotted hierarchy name. Each dialect is a module here with the same small
interface, and nothing else in the code branches on the dialect:

- `read(note_link, rules) -> Target | None`: what one link, as written, asks for (per document, so it
  is cached with the document's facts); None when it is not a link to anything (a placeholder);
- `Resolver.resolve(target, source_path) -> Resolution`: the vault path it reaches, or a miss and
  what was looked for (built once per graph from every path in the tree);
- `Resolver.candidates(target) -> paths`: every path it could mean, written at the root, before the
  editor's tie-break (how a name a person types is looked up: `graph.resolve_node`);
- `Resolver.missing_code(target) -> code`: what a link that reaches nothing names as its editor reads it:
  a missing note (W221, which the editor offers to create) or a missing file (W223).

`detect` picks the dialect a zero-config vault is written in; docs/vaults.md is the reference for
each dialect's rules, written from the editors' own documentation and behaviour.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Protocol

import msgspec

DIALECTS = ("obsidian", "dendron", "foam", "logseq", "vivary")
# Why `detect` chose Obsidian when nothing in the tree names an editor: a guess, not the vault's own word.
DEFAULT_REASON = ("no editor configuration found (.obsidian/, dendron.yml, .foam/, logseq/); "
                  "Obsidian's rules are the default")

# Files a link may name that are not notes: a miss on a name with one of these extensions is a missing
# attachment (W223), not a missing note. The formats Obsidian opens itself (its "Accepted file formats":
# images, audio, video, PDF, canvas, base) and those people keep in a vault that Obsidian links to and hands
# to the system (office documents, e-books, archives, design and data files). A closed list, not "any
# extension": in a link a dot does not make a file name (`[[Node.js]]`, `[[v1.2]]`, Dendron's `[[dev.process.qa]]`
# are notes; docs/vaults.md).
ATTACHMENT_SUFFIXES = frozenset((
    # images
    "png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "avif", "ico", "tif", "tiff", "heic", "heif", "jxl",
    # audio and video
    "mp3", "wav", "m4a", "ogg", "oga", "opus", "flac", "aac", "aiff", "3gp", "webm", "mp4", "m4v", "mov", "mkv",
    "ogv", "avi", "wmv", "mpg", "mpeg",
    # Obsidian's own formats and drawings
    "canvas", "base", "excalidraw", "drawio",
    # documents and e-books
    "pdf", "doc", "docx", "odt", "rtf", "xls", "xlsx", "ods", "ppt", "pptx", "odp", "key", "numbers", "pages",
    "epub", "mobi", "azw3", "djvu",
    # design files
    "psd", "ai", "eps", "sketch", "fig", "xd", "indd", "afdesign", "afphoto", "xcf", "kra",
    # archives
    "zip", "7z", "rar", "tar", "gz", "tgz",
    # data and the web
    "csv", "tsv", "json", "txt", "html", "htm", "ipynb", "ics", "vcf", "gpx", "kml", "geojson", "sqlite",
))
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class Rules(msgspec.Struct, frozen=True):
    """The link and id rules in force: a dialect's defaults, each overridable in `.vivary/graph.toml`."""

    dialect: str = "obsidian"
    reason: str = ""  # why this dialect was chosen, for `doctor` and `check --verbose`
    alias: str = "first"  # where the target sits in [[a|b]]: "first", "last" (Dendron), "auto" (legacy)
    ids: str = "path"  # "path": the vault-relative path without extension; "slug": the contract's ids
    case: str = "insensitive"  # how names are matched: "insensitive" or "sensitive"
    markdown: bool = True  # [text](path.md) links are edges
    properties: bool = True  # "[[x]]" in frontmatter values are edges (field = the property name)
    attachments: bool = True  # links to files that are not notes are checked (W223)
    anchors: bool = False  # [[note#heading]] / [[note#^block]] to a missing heading or block: W222
    unresolved: bool = True  # a link to no note is a finding (Logseq makes such pages itself: false)
    templates: bool = True  # the editor's template folders are left out of the graph
    tags: bool = False  # `#name` is a link to the page `name` (Logseq)
    # Files and folders whose names start with `.` are part of the vault. Obsidian indexes none of them
    # (`.github/`, `.trash/`): false there, and `.vivary/graph.toml`'s `include` names those read anyway.
    dotfiles: bool = True
    # `.markdown` files are notes beside `.md` ones. Obsidian reads only `.md` (false there): a `.markdown` file is
    # a file a link names with its extension. A `tropo.toml` workspace's notes are the contract's: both.
    markdown_files: bool = True
    # `.md` files in any folder are notes. Dendron's notes are the `.md` files directly in a vault's folder, not
    # named with a leading `.` (false there): a Markdown file elsewhere is a file a link names by its path. A
    # `tropo.toml` workspace's notes are the contract's: any folder.
    nested_notes: bool = True
    # Dendron's vaults (`dendron.yml`, else `dendron.code-workspace`'s first folder): (name, the folder its notes
    # are in), in the file's order; empty: the workspace folder is the one vault. Read from the tree, never from
    # `.vivary/graph.toml`.
    vaults: tuple[tuple[str, str], ...] = ()
    # The folders `dendron.code-workspace` opens (VS Code's workspace folders; `..` for one outside this tree), in
    # its order: a Dendron Markdown link's leading `/` is read from the one that holds the note. Empty: the workspace
    # folder alone. Read from the tree, never from `.vivary/graph.toml`.
    folders: tuple[str, ...] = ()


def defaults(dialect: str, reason: str = "") -> Rules:
    """Each dialect's own rules (docs/vaults.md)."""
    if dialect == "dendron":
        return Rules("dendron", reason, alias="last", properties=False, markdown_files=False, nested_notes=False)
    if dialect == "foam":
        return Rules("foam", reason, properties=False)
    if dialect == "logseq":
        return Rules("logseq", reason, unresolved=False, tags=True)
    if dialect == "vivary":
        # A tropo.toml workspace: the contract's slug ids, and wikilinks read as vivary-git always has.
        return Rules("vivary", reason, alias="auto", ids="slug", markdown=False, properties=False,
                     attachments=False, templates=False)
    return Rules("obsidian", reason, dotfiles=False, markdown_files=False)


# gc=False: text and numbers only, as `models.Link`: no collector's header (16 of 88 bytes) on one a link.
class Target(msgspec.Struct, frozen=True, array_like=True, gc=False):
    """One link of a document as its dialect reads it, before it is resolved."""

    line: int
    kind: str  # "w" wikilink, "e" embed, "m" Markdown link, "i" image, "r" reference definition, "p" property,
    # "t" tag
    field: str  # the edge field it makes
    written: str  # the link text as written (inside [[ ]], or the destination), for messages
    name: str  # what it names, as the dialect reads it ("" = this same note)
    anchor: str = ""  # "#heading" / "#^block" part, without the "#"
    vault: str = ""  # Dendron's `dendron://VAULT/` prefix


class Resolution(msgspec.Struct, frozen=True, array_like=True):
    path: str | None  # the vault path the link reaches (a note or another file); None: a miss
    looked_for: str  # what was looked for, for messages and a broken edge's target


class Resolver(Protocol):
    def resolve(self, target: Target, source: str) -> Resolution: ...

    def candidates(self, target: Target) -> list[str]:
        """Every path `target` could mean when written at the vault root, before the editor's
        tie-break picks one (a name a person types: `graph.resolve_node`)."""
        ...

    def missing_code(self, target: Target) -> str:
        """W221 when `target`, reaching nothing, names a note the editor would create; W223 when it names a file
        (an attachment) that is not there."""
        ...


def nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def path_matches(path: str, globs: Sequence[str]) -> bool:
    """Whether `path` matches any of the `--path` globs (`fnmatch`, case-sensitive), both in NFC: a glob
    typed composed (`Дневник/*`) matches a folder written decomposed (as macOS writes names), and the reverse."""
    from fnmatch import fnmatchcase

    name = nfc(path)
    return any(fnmatchcase(name, nfc(glob)) for glob in globs)


# Obsidian spells every vault path as its `normalizePath` does: in NFC, and with a no-break space (U+00A0) and a
# narrow no-break space (U+202F, which macOS puts before AM/PM in a screenshot's name) as a plain space.
_SPACES = str.maketrans({"\u00a0": " ", "\u202f": " "})


def fold(text: str, case: str) -> str:
    """A name as it is matched: NFC, no-break spaces as spaces, and lowercased unless matching is case-sensitive.

    Lowercased, not case-folded: the editors (Obsidian, Foam, Dendron, Logseq: all JavaScript) match names by
    `toLowerCase()`, Unicode's full lowercase mapping with the final-sigma rule, which is `str.lower()`.
    `casefold()` equates more (`Masse` and `Maße`, `file` and `ﬁle`, `μ` and `µ`), so a link reached a note the
    editor does not open, or resolved where the editor shows it unresolved. The spaces: a screenshot macOS named
    `… at 9.41.12<U+202F>AM.png` is the file `![[… at 9.41.12 AM.png]]` names, as Obsidian lists it."""
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
        if "\u00a0" in text or "\u202f" in text:
            text = text.translate(_SPACES)
    return text.lower() if case == "insensitive" else text


def fold_stem(stem: str, case: str) -> str:
    """A note's name or path without its `.md` as it is matched where the editor lowercases it with its `.md`
    (Obsidian compares `(link + ".md").toLowerCase()` with `file.name.toLowerCase()`, and Foam its identifier
    plus `.md` with the file's path): `fold`, but for the final-sigma rule. A `Σ` ending a name lowercases to `ς`
    alone and to `σ` before `.md`, so `[[ΑΣ]]` is `ασ.md`, and `[[λογος]]` is not `ΛΟΓΟΣ.md` (its name is
    `λογοσ.md` lowercased). Dendron and Logseq lowercase names without an extension: `fold`."""
    if case != "insensitive" or "\u03a3" not in stem:
        return fold(stem, case)
    return fold(stem + ".md", case)[:-3]


def split_target(text: str, alias: str) -> tuple[str, str | None]:
    """(target, shown text) of `[[text]]`: split at the first `|` (written `\\|` in a table cell, where
    a bare `|` would end the cell), the target before it (`alias = "first"`) or after the last one
    (`"last"`, Dendron)."""
    if "\\|" in text:
        text = text.replace("\\|", "|")
    if "|" not in text:
        return text, None
    if alias == "last":
        shown, _, target = text.rpartition("|")
        return target.strip(), shown
    target, _, shown = text.partition("|")
    return target, shown


def is_placeholder(text: str) -> bool:
    """A template placeholder (`{{date}}`, Templater's `<% tp.file.title %>`), not a link yet."""
    return "{{" in text or "<%" in text


def is_url(text: str) -> bool:
    """A destination with a scheme (`https:`, `mailto:`, `obsidian:`): not a path in the vault."""
    return bool(_SCHEME.match(text)) and not re.match(r"^[A-Za-z]:[\\/]", text)


def suffix(name: str) -> str:
    base = name.rsplit("/", 1)[-1]
    return base.rsplit(".", 1)[-1].lower() if "." in base else ""


def is_attachment_name(name: str) -> bool:
    return suffix(name) in ATTACHMENT_SUFFIXES


def anchor_key(text: str) -> str:
    """The `#heading` or `#^block` of a link as it is matched (`[[note#Heading#Sub]]` names the last heading): a
    block id keeps its `^`; a heading is read as `heading_key` reads a note's."""
    text = text.rsplit("#", 1)[-1]
    return block_key(text) if text.startswith("^") else heading_key(text)


def heading_key(text: str) -> str:
    """A heading as a link names it: lowercased as names are (`fold`), without the characters Obsidian drops
    from heading links (`# | ^ : % [ ]`), spaces collapsed. A `#` in the heading is dropped like the others, not
    a separator: Obsidian links `# Issue #42 fix` as `[[Note#Issue 42 fix]]`."""
    cleaned = re.sub(r"[#|:%\[\]^]", " ", nfc(text))
    return " ".join(cleaned.split()).lower()


def block_key(text: str) -> str:
    """A block id (`^id`) as links match it, with its `^`."""
    return "^" + nfc(text[1:].strip()).lower()


def anchor_keys(anchors: Sequence[str]) -> list[str]:
    """A note's headings and block ids (`Note.anchors`: a block id with its `^`) as links match them."""
    return sorted({block_key(a) if a.startswith("^") else heading_key(a) for a in anchors})


def missing_code(target: Target) -> str:
    """W223 for a missing attachment, W221 for a missing note, by the name's extension (`ATTACHMENT_SUFFIXES`):
    how Obsidian and Foam tell a file from a note (Dendron and Logseq, only in Markdown links: their wikilinks name
    notes and pages). A dialect's `Resolver.missing_code` decides."""
    return "W223" if is_attachment_name(target.name) else "W221"


def describe(target: Target) -> str:
    """The link as its writer wrote it, for messages."""
    if target.kind == "w":
        return f"wikilink [[{target.written}]]"
    if target.kind == "e":
        return f"embed ![[{target.written}]]"
    if target.kind == "p":
        return f"property '{target.field}': [[{target.written}]]"
    if target.kind == "t":
        return f"tag #{target.written}"
    if target.kind == "i":
        return f"image ({target.written})"
    if target.kind == "r":
        return f"reference definition ({target.written})"
    return f"link ({target.written})"


class Probe(Protocol):
    """What detection may look at in the tree: a file's bytes, whether a path exists, the root's names."""

    def read(self, path: str) -> bytes | None: ...

    def exists(self, path: str) -> bool: ...

    def names(self) -> list[str]: ...


def detect(probe: Probe) -> tuple[str, str]:
    """(dialect, reason) of a vault without a `tropo.toml`, from its editor's configuration, else
    from the notes' own shape, else Obsidian (the most common vault)."""
    if probe.read("dendron.yml") is not None:
        return "dendron", "dendron.yml found"
    if probe.read("dendron.code-workspace") is not None:
        return "dendron", "dendron.code-workspace found"
    if probe.read("logseq/config.edn") is not None:
        return "logseq", "logseq/config.edn found"
    if probe.exists(".obsidian"):
        return "obsidian", ".obsidian/ found"
    if probe.exists(".foam"):
        return "foam", ".foam/ found"
    settings = probe.read(".vscode/settings.json")
    if settings is not None and b'"foam.' in settings:
        return "foam", ".vscode/settings.json has Foam settings"
    shape = _dendron_shape(probe)
    if shape:
        return "dendron", shape
    return "obsidian", DEFAULT_REASON


def template_folders(probe: Probe, dialect: str) -> tuple[str, ...]:
    """Folders the editor keeps templates (or backups) in: notes there are not part of the graph.
    Obsidian's core Templates plugin (`.obsidian/templates.json` "folder"), Templater
    (`.obsidian/plugins/templater-obsidian/data.json` "templates_folder"), Foam's `.foam/templates`,
    Logseq's `logseq/` (its backups), and Obsidian's `.trash/`."""
    found: list[str] = []
    if dialect == "obsidian":
        from vivary_git.dialects.obsidian_settings import read_settings

        found += read_settings(probe.read).templates
        found.append(".trash")
    elif dialect == "foam":
        found.append(".foam/templates")
    elif dialect == "logseq":
        found.append("logseq")
    return tuple(dict.fromkeys(found))


_DENDRON_KEYS = (b"\nid:", b"\nupdated:", b"\ncreated:")


def _dendron_shape(probe: Probe) -> str:
    """A Dendron vault copied without its `dendron.yml`: most notes at the root have dotted hierarchy
    names (`a.b.c.md`), and those notes carry Dendron's `id`/`updated`/`created` frontmatter."""
    notes = [n for n in probe.names() if n.endswith(".md")]
    dotted = sorted(n for n in notes if "." in n[:-3])
    if len(notes) < 3 or len(dotted) * 2 < len(notes):
        return ""
    sample = dotted[:: max(1, len(dotted) // 5)][:5]
    for name in sample:
        data = probe.read(name)
        head = (data or b"")[:2000].replace(b"\r\n", b"\n")
        if not head.startswith(b"---") or not all(k in head for k in _DENDRON_KEYS):
            return ""
    return (f"no editor configuration, but {len(dotted)} of {len(notes)} notes at the root have Dendron's dotted "
            "names and id/updated/created frontmatter")
