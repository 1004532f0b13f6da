"""Source anchors: a memory that says *where* something is — a file, a folder or a web page.

`git vivary remember --file/--folder/--url` and the MCP `add` tool write one note per anchor under
`<memory folder>/anchors/` (typed `memory` like every memory; `kind: source_document` for a file or a
page, `source_collection` for a folder), committed as `remember` commits are (`commits.commit_note`).
`git vivary refresh ID` re-reads the source and commits the change in place; `refresh --check` says
which anchors are stale without writing anything. docs/remember.md describes the note shapes.

Privacy: a file or folder is decided by the one boundary (`snapshot.decide_for_source`, i.e.
`privacy.decide_scoped`) before a byte of it is read, and refused by name when private; a folder's
private entries are never listed, only counted. Files outside the repository are refused: Git's
ignore rules cannot speak for them and their absolute paths describe someone's machine. Extracted
text goes through the same secret scan as any memory (`memory/writes/secrets.py`). The copied text is
written inside a code fence, so its links and headings never become edges or findings of the graph.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from vivary_git.config import MEMORY_TYPE
from vivary_git.errors import ConfigError, RefusedError, UsageError
from vivary_git.memory.sources.extract import Extracted, extract, format_of, media_format
from vivary_git.memory.writes import commits, notefile
from vivary_git.memory.writes.remember import (
    EdgeRef,
    View,
    _add_links,
    _check_durability,
    _check_tags,
    _commit,
    _declared,
    _now,
    _parse_links,
    _refuse_private_target,
    _stem,
)
from vivary_git.memory.writes.secrets import refuse_secrets
from vivary_git.safeio import describe_size

if TYPE_CHECKING:
    from vivary_git.memory.config import SourcesConfig
    from vivary_git.memory.snapshot import MemoryNode

__all__ = [
    "ANCHOR_FOLDER",
    "AnchorState",
    "Anchored",
    "check",
    "fetch_page",
    "known_url",
    "refresh",
    "remember_file",
    "remember_folder",
    "remember_page",
    "remember_url",
]

ANCHOR_FOLDER = "anchors"  # under the memory folder: <memory folder>/anchors/
DOCUMENT = "source_document"
COLLECTION = "source_collection"
MAX_ENTRIES = 10_000  # a folder's top-level entries looked at; more are counted as "more than"
MAX_SAMPLE = 40
MAX_SIDECAR = 64 * 1024
MAX_DESCRIPTION = 400
_PROBE = "vivary-anchor-probe"  # a child name decided for a folder: `dir/**` makes the folder itself private

MARKERS = (
    ".git", "pyproject.toml", "setup.py", "requirements.txt", "package.json", "Cargo.toml", "go.mod", "pom.xml",
    "build.gradle", "Gemfile", "CMakeLists.txt", "Makefile", "Dockerfile", "README", "README.md", "README.rst",
    "README.txt", "LICENSE", "LICENSE.md", "tropo.toml", ".vivary", ".obsidian", ".foam", "dendron.yml",
    "AGENTS.md", "CLAUDE.md", "mkdocs.yml",
)
_REPOSITORY = {".git", "pyproject.toml", "setup.py", "package.json", "Cargo.toml", "go.mod", "pom.xml",
               "build.gradle", "Gemfile", "CMakeLists.txt"}
_WORKSPACE = {"tropo.toml", ".vivary", ".obsidian", ".foam", "dendron.yml", "AGENTS.md", "CLAUDE.md"}
_MEDIA = {"png", "jpg", "jpeg", "gif", "webp", "svg", "heic", "tif", "tiff", "bmp", "raw", "mp3", "wav", "flac",
          "ogg", "m4a", "aac", "mp4", "mov", "mkv", "webm", "avi"}
_DOCUMENTS = {"pdf", "doc", "docx", "odt", "rtf", "txt", "md", "markdown", "epub", "ppt", "pptx", "odp", "xls",
              "xlsx", "ods", "csv", "pages", "key", "numbers", "tex", "html", "htm"}


class Anchored(msgspec.Struct, frozen=True, omit_defaults=True):
    """What remembering or refreshing an anchor did. `changed` false: nothing was committed (already
    anchored, see `warning`; or the source is unchanged)."""

    ok: bool
    op: str  # "add" | "refresh"
    changed: bool
    id: str
    path: str  # the anchor note, workspace-relative
    title: str
    kind: str  # source_document | source_collection
    anchor: str  # file | folder | url
    target: str  # the repository-relative path, or the URL
    commit: str | None = None
    ref: str | None = None
    blob: str | None = None  # the note's new blob id
    source_blob: str | None = None  # a file's blob id as it was read
    final_url: str | None = None
    status: int | None = None
    truncated: bool = False
    links: list[EdgeRef] | None = None
    warning: str | None = None
    message: str | None = None


class AnchorState(msgspec.Struct, frozen=True, omit_defaults=True):
    """One anchor as `refresh --check` sees it. `state`: fresh, stale (the source changed since it was
    read), missing, private (now held back by the privacy boundary), or unchecked (a web page: looking
    would take the network)."""

    id: str
    path: str
    anchor: str
    target: str
    state: str
    detail: str = ""
    recorded: str | None = None  # the blob id / folder digest / fetch time in the note
    current: str | None = None


class _Data(msgspec.Struct):
    """A source as read now: the anchor fields, the title it gives itself, the body under the H1."""

    kind: str
    anchor: str
    target: str
    fields: list[tuple[str, Any]]
    doc_title: str
    fallback_title: str
    description: str
    body: str
    scan: list[tuple[str, str]]  # what the secret scan reads
    auto_tags: list[str]
    source_blob: str | None = None
    final_url: str | None = None
    status: int | None = None
    truncated: bool = False


# --- where things are ------------------------------------------------------------------------------


def _workdir(view: View) -> Path:
    repo = view.ws.source.repo
    if repo is None or repo.workdir is None:
        raise RefusedError(f"{view.ws.source.root} is not in a Git work tree: anchors are commits and privacy needs "
                           "Git's ignore rules; run `git init`")
    return repo.workdir


def _locate(view: View, given: str, base: Path, want: str) -> tuple[str, Path]:
    """(repository-relative path, absolute path) of the file or folder `given` (relative to `base`).
    Refused: outside the repository, behind or being a symbolic link, in a nested repository."""
    top = _workdir(view)
    if not isinstance(given, str) or not given.strip() or "\x00" in given:
        raise UsageError(f"give the {want} to remember (a path)")
    full = Path(os.path.abspath(base.resolve() / os.path.expanduser(given)))
    try:
        rel_parts = full.relative_to(top).parts
    except ValueError:
        raise RefusedError(
            f"{given} is outside this repository ({top}); an anchor records a {want} of the repository, whose "
            "privacy Git's ignore rules can decide: copy it in, or remember a web page with --url"
        ) from None
    for part in rel_parts:
        try:
            part.encode("utf-8")
            plain = part.isprintable()
        except UnicodeEncodeError:
            plain = False
        if not plain:
            from vivary_git.escape import text as shown

            raise UsageError(f"{shown(given)}: the name {shown(part)!s} is not plain UTF-8 text (it has bytes that are "
                             "not UTF-8, or a line break or control character); an anchor records its path in a note: "
                             "rename it")
    here = top
    for n, part in enumerate(rel_parts):
        here = here / part
        try:
            st = here.lstat()
        except FileNotFoundError:
            raise UsageError(f"{given}: no such {want}") from None
        except OSError as err:
            raise RefusedError(f"{given}: cannot read it ({err.strerror or err})") from None
        last = n == len(rel_parts) - 1
        if stat.S_ISLNK(st.st_mode):
            where = "is" if last else f"lies behind {'/'.join(rel_parts[:n + 1])}, which is"
            raise RefusedError(f"{given} {where} a symbolic link; anchors never follow links: name the real {want}")
        if not last and (here / ".git").exists():
            raise RefusedError(f"{given} is inside the nested repository {'/'.join(rel_parts[:n + 1])}; remember it "
                               "from that repository, or anchor the whole folder with --folder")
        if last:
            if want == "file" and not stat.S_ISREG(st.st_mode):
                raise UsageError(f"{given} is not a regular file" + ("; use --folder for a folder"
                                                                      if stat.S_ISDIR(st.st_mode) else ""))
            if want == "folder" and not stat.S_ISDIR(st.st_mode):
                raise UsageError(f"{given} is not a folder" + ("; use --file" if stat.S_ISREG(st.st_mode) else ""))
    if want == "file" and not rel_parts:
        raise UsageError(f"{given} is the repository's top folder; use --folder")
    return "/".join(rel_parts), full


def _refuse_private(view: View, rel: str, want: str, display: str, *, source: str) -> None:
    """Refuse by name when the boundary holds `rel` back (a folder: also when everything in it is); a rule of the
    user's in full at the owner's terminal (`source` "cli"), by its place alone to an agent."""
    from vivary_git.memory.snapshot import decide_for_source

    if not rel:
        return  # the repository top: the floor and every rule live below it
    asked = [rel, f"{rel}/{_PROBE}"] if want == "folder" else [rel]
    for verdict in decide_for_source(view.ws, asked, view.cfg.policy()):
        if verdict.private:
            raise RefusedError(
                f"{display} is private ({verdict.told(masked=source != 'cli')}); a private {want} is never "
                "remembered, so none of it can reach a commit, an index or an agent: `git vivary privacy explain` "
                "shows the rule"
            )


# --- reading -------------------------------------------------------------------------------------


def _object_format(view: View) -> str:
    repo = view.ws.source.repo
    assert repo is not None
    proc = repo.git(["rev-parse", "--show-object-format"], check=False)
    got = proc.stdout.decode().strip() if proc.returncode == 0 else "sha1"
    return "sha256" if got == "sha256" else "sha1"


def _read_file(view: View, rel: str, keep: int) -> tuple[str, int, bytes]:
    """(blob id as Git would store the bytes, size, the first `keep` bytes), reading the file once.
    Refused unless it is a singly linked regular file reached through real folders."""
    from vivary_git import privacy

    top = _workdir(view)
    privacy.check_snapshot_files(top, [rel])
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(top / rel, flags)
    except OSError as err:
        raise RefusedError(f"{rel}: cannot open it ({err.strerror or err})") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise RefusedError(f"{rel}: not a regular file")
        digest = hashlib.new(_object_format(view))
        digest.update(f"blob {st.st_size}\0".encode())
        head = bytearray()
        size = 0
        while True:
            chunk = fh.read(1 << 20)
            if not chunk:
                break
            size += len(chunk)
            digest.update(chunk)
            if len(head) < keep:
                head += chunk[: keep - len(head)]
    if size != st.st_size:
        raise RefusedError(f"{rel} changed while it was being read; try again")
    return digest.hexdigest(), size, bytes(head)


def _fence(text: str) -> str:
    """`text` in a code fence no line of it can close: its links and headings stay text."""
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}text\n{text}\n{ticks}"


_WIKILINK = re.compile(r"!?\[\[([^\]|#^]*)(?:[#^][^\]|]*)?(?:\|([^\]]*))?\]\]")
_MDLINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")


def _plain(text: str) -> str:
    """`text` without link syntax: a title or description is a frontmatter property, and a vault reads
    `[[links]]` in properties as edges; a copied document's links must not become the anchor's."""
    text = _WIKILINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), text)
    text = _MDLINK.sub(lambda m: m.group(1), text)
    return text.replace("[[", "[ [").replace("]]", "] ]")


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(_plain(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _lead(text: str) -> str:
    """The first words of a document that are not markup, for the description."""
    lines = []
    body = text.splitlines()
    if body and body[0].strip() == "---":  # a Markdown file's own frontmatter is not its words
        end = next((i for i in range(1, len(body)) if body[i].strip() in ("---", "...")), 0)
        body = body[end + 1:]
    seen_h1 = False
    for line in body:
        s = line.strip()
        if not s or s == "---" or s.startswith(("```", "~~~", "<!--", "|")):
            continue
        if s.startswith("# ") and not seen_h1:  # the title, which the description names already
            seen_h1 = True
            continue
        lines.append(s.lstrip("#>*- ").strip())
        if sum(len(x) for x in lines) > 240:
            break
    return _one_line(" ".join(lines), 240)


_FORMAT_NAMES = {"markdown": "Markdown", "text": "Text", "code": "Code", "html": "HTML", "pdf": "PDF",
                 "binary": "Binary"}


def _text_body(intro: str, ex: Extracted, limit: int) -> str:
    if not ex.text:
        return intro
    cut = f"\n\nThe text was cut at {limit:,} characters ([memory.sources] max_text)." if ex.truncated else ""
    return f"{intro}{cut}\n\n{_fence(ex.text)}"


def _read_document(view: View, rel: str, display: str, source: str) -> _Data:
    sources = view.cfg.memory.sources
    fmt_guess = format_of(rel, b"")
    keep = sources.max_fetch_bytes if fmt_guess in ("html", "pdf") else sources.max_text * 4 + 4
    keep = max(keep, 8192)
    blob, size, head = _read_file(view, rel, keep)
    fmt = format_of(rel, head)
    too_big = fmt in ("html", "pdf") and size > sources.max_fetch_bytes
    sidecar = _sidecar(view, rel, source) if fmt in ("html", "markdown") else None
    if too_big:
        ex = Extracted("", fmt, "none", True)
    else:
        ex = extract(head, fmt, limit=sources.max_text, what=display, url=sidecar.get("url") if sidecar else None)
        if fmt in ("markdown", "text", "code") and size > len(head):
            ex = msgspec.structs.replace(ex, truncated=True)
    name = rel.rsplit("/", 1)[-1]
    if sidecar is not None:
        return _export_data(rel, blob, size, ex, sidecar, sources.max_text)
    fields: list[tuple[str, Any]] = [
        ("anchor", "file"), ("anchor_path", rel), ("anchor_blob", blob), ("anchor_size", size),
        ("anchor_format", fmt), ("anchor_extractor", ex.extractor), ("anchor_truncated", ex.truncated),
        ("anchor_read_at", _now()),
    ]
    what = _FORMAT_NAMES.get(fmt, fmt)
    intro = f"{what} file `{rel}` ({describe_size(size)}), Git blob `{blob[:12]}` when read."
    if too_big:
        intro += (f" Its text was not extracted: over the {describe_size(sources.max_fetch_bytes)} "
                  "max_fetch_bytes of [memory.sources].")
    elif fmt == "binary":
        intro += " A binary file: only where it is, and its blob id, are kept."
    lead = _lead(ex.text)
    description = _one_line(f"{what} file {rel}" + (f": {ex.title}" if ex.title else "") + (f". {lead}" if lead
                                                                                             else ""), MAX_DESCRIPTION)
    return _Data(kind=DOCUMENT, anchor="file", target=rel, fields=fields, doc_title=ex.title, fallback_title=name,
                 description=description, body=_text_body(intro, ex, sources.max_text),
                 scan=[(f"the text of {rel}", ex.text)], auto_tags=["source", fmt], source_blob=blob,
                 truncated=ex.truncated)


def _sidecar(view: View, rel: str, source: str) -> dict[str, Any] | None:
    """A browser export's `<stem>.source.json` beside `rel` (its URL and when it was saved), or None."""
    folder, _, name = rel.rpartition("/")
    stem = name.rsplit(".", 1)[0]
    side = f"{folder}/{stem}.source.json" if folder else f"{stem}.source.json"
    top = _workdir(view)
    try:
        st = (top / side).lstat()
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    _refuse_private(view, side, "file", side, source=source)
    from vivary_git.safeio import FileRefused, read_regular

    try:
        raw = json.loads(read_regular(top / side, MAX_SIDECAR, follow_symlinks=False))
    except FileRefused as err:
        raise UsageError(f"{side} {err}") from None
    except (OSError, ValueError) as err:
        raise UsageError(f"{side}: not a JSON object ({err}); it should hold {{\"url\": \"https://…\"}}") from None
    if not isinstance(raw, dict) or not isinstance(raw.get("url"), str):
        raise UsageError(f"{side}: needs a \"url\" string, e.g. {{\"url\": \"https://example.org/page\"}}")
    from vivary_git.memory.sources.fetch import check_url

    check_url(raw["url"])
    out: dict[str, Any] = {"url": raw["url"], "sidecar": side}
    for key in ("final_url", "title"):
        if isinstance(raw.get(key), str) and raw[key].strip():
            out[key] = raw[key].strip()[:2048]
    if isinstance(out.get("final_url"), str):
        check_url(out["final_url"])
    for key in ("fetched_at", "saved_at", "captured_at", "date"):
        if isinstance(raw.get(key), str) and raw[key].strip():
            out["fetched_at"] = _one_line(raw[key], 40)
            break
    if isinstance(raw.get("status"), int) and not isinstance(raw.get("status"), bool):
        out["status"] = raw["status"]
    return out


def _export_data(rel: str, blob: str, size: int, ex: Extracted, side: dict[str, Any], limit: int) -> _Data:
    url = side["url"]
    final = side.get("final_url", url)
    fields: list[tuple[str, Any]] = [("anchor", "url"), ("url", url), ("final_url", final)]
    if "status" in side:
        fields.append(("status", side["status"]))
    if "fetched_at" in side:
        fields.append(("fetched_at", side["fetched_at"]))
    fields += [("anchor_export", rel), ("anchor_blob", blob), ("anchor_size", size), ("anchor_format", ex.format),
               ("anchor_extractor", ex.extractor), ("anchor_truncated", ex.truncated), ("anchor_read_at", _now())]
    title = side.get("title") or ex.title
    intro = (f"Web page <{final}>, saved from a browser as `{rel}` ({describe_size(size)}, Git blob `{blob[:12]}`)"
             + (f" at {side['fetched_at']}" if "fetched_at" in side else "") + ".")
    lead = _lead(ex.text)
    description = _one_line(f"Web page {final}" + (f": {title}" if title else "") + (f". {lead}" if lead else ""),
                            MAX_DESCRIPTION)
    return _Data(kind=DOCUMENT, anchor="url", target=url, fields=fields, doc_title=title,
                 fallback_title=_url_title(final), description=description, body=_text_body(intro, ex, limit),
                 scan=[("the URL", url), ("the final URL", final), (f"the text of {rel}", ex.text)],
                 auto_tags=["source", "web"], source_blob=blob, final_url=final, status=side.get("status"),
                 truncated=ex.truncated)


def _url_title(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    path = parts.path.rstrip("/")
    return f"{parts.hostname or ''}{path}"[:120] or url[:120]


def _normal_url(url: str) -> str:
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port
    except ValueError:  # a note edited by hand: compared as written
        return url.strip()
    netloc = (parts.hostname or "").lower()
    if port and port != {"http": 80, "https": 443}.get(parts.scheme.lower()):
        netloc += f":{port}"
    return urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def fetch_page(sources: SourcesConfig, url: str, *, allow_network: bool = False) -> _Data:
    """The page at `url`, fetched within `sources`' bounds and read. No workspace state: the MCP server
    runs it outside its lock, so other calls are answered while a slow page arrives."""
    from vivary_git.memory.sources.fetch import fetch

    _network_gate(sources, allow_network)
    got = fetch(url, timeout=sources.timeout, max_bytes=sources.max_fetch_bytes, max_redirects=sources.max_redirects,
                allow_private=sources.allow_private_addresses)
    fmt = media_format(got.content_type)
    if fmt is None:
        raise RefusedError(f"{got.final}: {got.content_type} is not a page whose text can be kept (HTML, Markdown, "
                           "plain text or PDF); download it into the repository and remember it with --file")
    ex = extract(got.body, fmt, limit=sources.max_text, what=got.final, charset=got.charset, url=got.final)
    digest = hashlib.sha256(got.body).hexdigest()
    fields: list[tuple[str, Any]] = [
        ("anchor", "url"), ("url", got.requested), ("final_url", got.final), ("status", got.status),
        ("fetched_at", got.fetched_at), ("content_type", got.content_type), ("anchor_size", len(got.body)),
        ("anchor_digest", digest), ("anchor_format", ex.format), ("anchor_extractor", ex.extractor),
        ("anchor_truncated", ex.truncated),
    ]
    moved = f", redirected to <{got.final}>" if got.final != got.requested else ""
    intro = (f"Web page <{got.requested}>{moved}: HTTP {got.status}, {got.content_type}, "
             f"{describe_size(len(got.body))}, fetched {got.fetched_at}.")
    lead = _lead(ex.text)
    description = _one_line(f"Web page {got.final}" + (f": {ex.title}" if ex.title else "")
                            + (f". {lead}" if lead else ""), MAX_DESCRIPTION)
    return _Data(kind=DOCUMENT, anchor="url", target=got.requested, fields=fields, doc_title=ex.title,
                 fallback_title=_url_title(got.final), description=description,
                 body=_text_body(intro, ex, sources.max_text),
                 scan=[("the URL", got.requested), ("the final URL", got.final), ("the page's text", ex.text)],
                 auto_tags=["source", "web"], final_url=got.final, status=got.status, truncated=ex.truncated)


def _network_gate(sources: SourcesConfig, allow_network: bool) -> None:
    enabled = sources.allow_network
    if enabled and allow_network:
        return
    missing = []
    if not enabled:
        missing.append("allow_network = true under [memory.sources] in .vivary/memory.toml (the workspace's consent)")
    if not allow_network:
        missing.append("--allow-network on the command (allow_network in the MCP add tool)")
    raise RefusedError("fetching a web page reaches the network, which takes both " + " and ".join(missing)
                       + "; nothing was fetched")


# --- folders -------------------------------------------------------------------------------------


def _suffix(name: str) -> str:
    base = name.lstrip(".")
    return base.rsplit(".", 1)[-1].lower() if "." in base else ""


def _printable(name: str) -> str:
    from vivary_git import escape

    shown = escape.name(name)
    return shown if shown.isprintable() else json.dumps(shown)


def _folder_data(view: View, rel: str, full: Path, display: str) -> _Data:
    from vivary_git.memory.snapshot import decide_for_source

    entries: list[tuple[str, bool]] = []  # (name, is a folder)
    more = False
    markers: set[str] = set()
    try:
        with os.scandir(full) as it:
            for entry in it:
                if entry.name in MARKERS:
                    markers.add(entry.name)  # a fixed name's presence, never its content
                if entry.name == ".git":
                    continue
                if len(entries) >= MAX_ENTRIES:
                    more = True
                    break
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    is_dir = False
                entries.append((entry.name, is_dir))
    except OSError as err:
        raise RefusedError(f"{display}: cannot list it ({err.strerror or err})") from None
    prefix = f"{rel}/" if rel else ""
    asked: list[str] = []
    index: list[tuple[int, int]] = []
    for i, (name, is_dir) in enumerate(entries):
        if "\n" in name or "\r" in name or "\x00" in name:
            index.append((i, -1))
            continue
        index.append((i, len(asked)))
        asked.append(prefix + name)
        if is_dir:
            asked.append(f"{prefix}{name}/{_PROBE}")
    verdicts = decide_for_source(view.ws, asked, view.cfg.policy()) if asked else []
    public: list[tuple[str, bool]] = []
    held = 0
    for i, k in index:
        name, is_dir = entries[i]
        private = k < 0 or verdicts[k].private or (is_dir and verdicts[k + 1].private)
        if private:
            held += 1
        else:
            public.append((name, is_dir))
    public.sort(key=lambda e: e[0])
    counts: dict[str, int] = {}
    for name, is_dir in public:
        key = "folder" if is_dir else (_suffix(name) or "(no extension)")
        counts[key] = counts.get(key, 0) + 1
    files = [n for n, d in public if not d]
    klass = _classify(markers, files)
    # A marker is named only when it is a public entry (or `.git`, never an entry): a private one (`.vivary`, on
    # the floor) is counted with the others, as every private entry is (it still tells the folder's class).
    listed = {n for n, _ in public}
    markers = {m for m in markers if m == ".git" or m in listed}
    digest = hashlib.sha256(json.dumps([[n, d] for n, d in public] + [sorted(markers), held, more])
                            .encode("utf-8", "surrogateescape")).hexdigest()
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    summary = ", ".join(f"{n} folder{'s' if n != 1 else ''}" if k == "folder" else
                        f"{n} without extension" if k == "(no extension)" else f"{n} .{k}" for k, n in ordered)
    name = rel.rsplit("/", 1)[-1] if rel else _workdir(view).name
    where = f"Folder `{rel}`" if rel else "The repository's top folder"
    total = (f"more than {len(public):,}" if more else f"{len(public):,}") + \
        (" entry" if len(public) == 1 and not more else " entries")
    intro = f"{where} ({klass}): {total} at its top" + (f" — {summary}" if summary else "") + "."
    if markers:
        intro += " Markers: " + ", ".join(f"`{m}`" for m in sorted(markers)) + "."
    if held:
        intro += f" {held} private entr{'y is' if held == 1 else 'ies are'} not listed."
    intro += " Only the top level is summarised; nothing in it is copied."
    sample = [f"{_printable(n)}/" if d else _printable(n) for n, d in public[:MAX_SAMPLE]]
    if len(public) > MAX_SAMPLE:
        sample.append(f"… and {len(public) - MAX_SAMPLE:,} more")
    body = intro + ("\n\n" + _fence("\n".join(sample)) if sample else "")
    fields: list[tuple[str, Any]] = [
        ("anchor", "folder"), ("anchor_path", rel or "."), ("anchor_class", klass), ("anchor_entries", len(public)),
        ("anchor_markers", sorted(markers)), ("anchor_digest", digest), ("anchor_read_at", _now()),
    ]
    description = _one_line(f"{klass.capitalize()} folder {rel or name}: {total}"
                            + (f" ({summary})" if summary else "")
                            + (f"; markers {', '.join(sorted(markers))}" if markers else ""), MAX_DESCRIPTION)
    return _Data(kind=COLLECTION, anchor="folder", target=rel or ".", fields=fields, doc_title="",
                 fallback_title=name, description=description, body=body,
                 scan=[("the folder's entries", "\n".join(sample))], auto_tags=["source", "folder"], truncated=more)


def _classify(markers: set[str], files: list[str]) -> str:
    if ".git" in markers:
        return "repository"
    if markers & _WORKSPACE:
        return "workspace bundle"
    if markers & _REPOSITORY:
        return "repository"
    if files:
        kinds = [_suffix(f) for f in files]
        if sum(k in _MEDIA for k in kinds) * 10 >= len(kinds) * 6:
            return "media"
        if sum(k in _DOCUMENTS for k in kinds) * 10 >= len(kinds) * 6:
            return "documents"
    return "mixed"


# --- writing -------------------------------------------------------------------------------------


def _anchor_fields(view: View, node: MemoryNode) -> dict[str, Any]:
    if node.type != MEMORY_TYPE:
        return {}
    fields = view.note(node).fields
    return fields if isinstance(fields, dict) and isinstance(fields.get("anchor"), str) else {}


def _anchors(view: View) -> list[tuple[MemoryNode, dict[str, Any]]]:
    out = []
    for node in view.memories():
        fields = _anchor_fields(view, node)
        if fields.get("anchor") in ("file", "folder", "url"):
            out.append((node, fields))
    return sorted(out, key=lambda nf: nf[0].id)


def _existing(view: View, anchor: str, target: str) -> MemoryNode | None:
    for node, fields in _anchors(view):
        if fields.get("anchor") != anchor:
            continue
        if anchor == "url":
            known = {_normal_url(str(fields.get(k, ""))) for k in ("url", "final_url") if fields.get(k)}
            if _normal_url(target) in known:
                return node
        elif str(fields.get("anchor_path", "")) == target:
            return node
    return None


def _refuse_secrets_in_args(what: str, given: str, title: str | None, description: str | None,
                            tags: Sequence[str], durability: str | None, links: Sequence[str]) -> None:
    """What the caller gave, before anything is read or can echo it (a refusal names the field only)."""
    refuse_secrets([(what, given), ("title", title), ("description", description), *(("tag", t) for t in tags),
                    ("durability", durability), *(("link", x) for x in links)])


def _refuse_secrets_in(data: _Data, title: str, description: str, tags: Sequence[str]) -> None:
    refuse_secrets([*data.scan, ("title", title), ("description", description), *(("tag", t) for t in tags)])


def _result(data: _Data, op: str, node_id: str, path: str, title: str, **kw: Any) -> Anchored:
    return Anchored(ok=True, op=op, id=node_id, path=path, title=title, kind=data.kind, anchor=data.anchor,
                    target=data.target, source_blob=data.source_blob, final_url=data.final_url, status=data.status,
                    truncated=data.truncated, **kw)


def _already(view: View, node: MemoryNode, anchor: str, target: str) -> Anchored:
    fields = _anchor_fields(view, node)
    kind = str(fields.get("kind", DOCUMENT))
    return Anchored(ok=True, op="add", changed=False, id=node.id, path=node.path, title=node.title, kind=kind,
                    anchor=anchor, target=target,
                    warning=f"{target} is already remembered as {node.id}; nothing was added (`git vivary refresh "
                            f"{node.id}` re-reads it; --force refreshes it in place)")


def _add(view: View, data: _Data, *, title: str | None, description: str | None, tags: Sequence[str],
         durability: str | None, links: Sequence[str], source: str) -> Anchored:
    from vivary_git.graph import node_id, node_type

    title = _one_line(title or data.doc_title or data.fallback_title, 200) or "Source"
    desc = _one_line(description, MAX_DESCRIPTION * 2) if description else data.description
    tag_list = _check_tags([*tags, *(t for t in data.auto_tags if t not in tags)])
    tier = _check_durability(durability) or view.cfg.memory.remember.durability
    _refuse_secrets_in(data, title, desc, tag_list)
    edges = _parse_links(links)
    targets = [(field, view.require(target, "link target").id) for field, target in edges]
    cfg = view.ws.config
    folder = f"{view.cfg.memory.remember.folder}/{ANCHOR_FOLDER}"
    stem = _stem(title, cfg.links.ids)
    got_type = node_type(f"{folder}/{stem}.md", cfg.folder_types(), view.ws.root_name)
    if got_type != MEMORY_TYPE:
        raise ConfigError(
            f"notes in {folder}/ are typed {got_type or 'untyped'} in this workspace, not memory, so anchors written "
            f"there would break its rules; rename that type's folder or set [memory.remember] folder in "
            ".vivary/memory.toml"
        )
    _refuse_private_target(view, f"{folder}/{stem}.md", source=source)
    fields: list[tuple[str, Any]] = []
    for key, value in (("type", MEMORY_TYPE), ("kind", data.kind), ("title", title), ("description", desc),
                       ("tags", tag_list), ("durability", tier), ("observed_at", _now()), ("source", source)):
        if key == "title" and "title" in cfg.derive:
            continue
        if _declared(view, MEMORY_TYPE, key):
            fields.append((key, value))
    fields += data.fields
    _add_links(view, MEMORY_TYPE, fields, targets)
    content = notefile.render_note(fields, title, data.body)
    chosen: dict[str, str] = {}

    def plan(base: commits.Base) -> commits.Planned:
        n = 1
        while True:
            name = stem if n == 1 else f"{stem}-{n}"
            path = f"{folder}/{name}.md"
            nid = node_id(path, view.ws.root_name, cfg.links.ids)
            if view.free(path, nid) and not base.taken(view.repo_path(path)):
                chosen.update(path=path, id=nid)
                return commits.Planned(view.repo_path(path), content)
            n += 1

    summary = f"{data.anchor} {data.target}"
    result = _commit(view, plan, lambda p: commits.message("add", chosen["id"], summary, source),
                     write="add this memory to")
    assert result is not None
    return _result(data, "add", chosen["id"], chosen["path"], title, changed=True, commit=result.commit,
                   ref=result.ref, blob=result.blob, links=[EdgeRef(chosen["id"], f, t) for f, t in targets] or None)


def _rewrite(view: View, node: MemoryNode, data: _Data, source: str) -> Anchored:
    """Refresh `node` in place: its anchor fields and the body under its title; every other byte (the
    title, tags, links and fields someone added) unchanged. No commit when nothing changed."""
    title = node.title
    current = _anchor_fields(view, node)
    _refuse_secrets_in(data, title, "", [])
    what = node.path
    timestamp = {"anchor_read_at", "fetched_at"}

    def plan(base: commits.Base) -> commits.Planned | None:
        from vivary_git.memory.writes.remember import _base_bytes

        raw = before = _base_bytes(view, base, node)
        same = all(current.get(k) == v for k, v in data.fields if k not in timestamp) and \
            set(current) >= {k for k, _ in data.fields}
        body_before = _body_after_title(raw)
        if same and body_before == data.body.strip("\n"):
            return None
        for key, value in data.fields:
            if current.get(key) != value:
                raw = notefile.set_field(raw, key, value, what=what)
        raw = notefile.replace_body(raw, data.body, what=what)
        return None if raw == before else commits.Planned(view.repo_path(node.path), raw)

    result = _commit(view, plan, lambda p: commits.message("update", node.id, f"refresh {data.anchor} {data.target}",
                                                         source), write="commit this refresh to")
    if result is None:
        return _result(data, "refresh", node.id, node.path, title, changed=False,
                       message="unchanged: the source reads as it did; nothing was committed")
    return _result(data, "refresh", node.id, node.path, title, changed=True, commit=result.commit, ref=result.ref,
                   blob=result.blob)


def _body_after_title(raw: bytes) -> str:
    """The note's body below its first `# H1` (what `replace_body` replaces), for comparison."""
    text = raw.decode("utf-8", "replace")
    if text.startswith("---"):
        end = text.find("\n---", 3)
        text = text[end + 4:] if end >= 0 else text
    lines = text.split("\n")
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i < len(lines) and lines[i].startswith("# "):
        i += 1
    return "\n".join(lines[i:]).strip("\n")


# --- the API -------------------------------------------------------------------------------------


def remember_file(view: View, given: str, *, base: Path, title: str | None = None, description: str | None = None,
                  tags: Sequence[str] = (), durability: str | None = None, links: Sequence[str] = (),
                  force: bool = False, source: str = "agent") -> Anchored:
    """Anchor a file of the repository (`given`, relative to `base`). A Markdown or HTML file with a
    `<stem>.source.json` sidecar is a saved web page: anchored as its URL."""
    _refuse_secrets_in_args("the path", given, title, description, tags, durability, links)
    rel, _full = _locate(view, given, base, "file")
    _refuse_private(view, rel, "file", given, source=source)
    data = _read_document(view, rel, given, source)
    existing = _existing(view, data.anchor, data.target)
    if existing is not None:
        return _rewrite(view, existing, data, source) if force else _already(view, existing, data.anchor, data.target)
    return _add(view, data, title=title, description=description, tags=tags, durability=durability, links=links,
                source=source)


def remember_folder(view: View, given: str, *, base: Path, title: str | None = None,
                    description: str | None = None, tags: Sequence[str] = (), durability: str | None = None,
                    links: Sequence[str] = (), force: bool = False, source: str = "agent") -> Anchored:
    """Anchor a folder of the repository: a summary of its top level, never a copy."""
    _refuse_secrets_in_args("the path", given, title, description, tags, durability, links)
    rel, full = _locate(view, given, base, "folder")
    _refuse_private(view, rel, "folder", given, source=source)
    existing = _existing(view, "folder", rel or ".")
    if existing is not None and not force:
        return _already(view, existing, "folder", rel or ".")
    data = _folder_data(view, rel, full, given)
    if existing is not None:
        return _rewrite(view, existing, data, source)
    return _add(view, data, title=title, description=description, tags=tags, durability=durability, links=links,
                source=source)


def remember_url(view: View, url: str, *, allow_network: bool = False, title: str | None = None,
                 description: str | None = None, tags: Sequence[str] = (), durability: str | None = None,
                 links: Sequence[str] = (), force: bool = False, source: str = "agent") -> Anchored:
    """Anchor a web page: fetched (only with the network allowed twice, see `fetch.py`), its readable
    text kept as a Markdown snapshot in the note. The same URL again is not fetched: it warns, and
    `force` refreshes the existing anchor in place. `known_url`, `fetch_page` and `remember_page` are
    its three steps."""
    known = known_url(view, url, force=force, title=title, description=description, tags=tags,
                      durability=durability, links=links)
    if known is not None:
        return known
    data = fetch_page(view.cfg.memory.sources, url, allow_network=allow_network)
    return remember_page(view, url, data, title=title, description=description, tags=tags, durability=durability,
                         links=links, force=force, source=source)


def known_url(view: View, url: str, *, force: bool = False, title: str | None = None,
              description: str | None = None, tags: Sequence[str] = (), durability: str | None = None,
              links: Sequence[str] = ()) -> Anchored | None:
    """Before any fetch: `url` and the anchor's other arguments checked (a usage error, a credential
    refused), and the answer when it is already anchored and not `force`d; None: fetch it."""
    from vivary_git.memory.sources.fetch import check_url

    _refuse_secrets_in_args("the URL", "", title, description, tags, durability, links)
    check_url(url)  # first: its refusals (a user name or password in it) say more, and never echo the URL
    refuse_secrets([("the URL", url)])
    existing = _existing(view, "url", url)
    return _already(view, existing, "url", url) if existing is not None and not force else None


def remember_page(view: View, url: str, data: _Data, *, title: str | None = None, description: str | None = None,
                  tags: Sequence[str] = (), durability: str | None = None, links: Sequence[str] = (),
                  force: bool = False, source: str = "agent") -> Anchored:
    """The page `fetch_page` read for `url`, committed as a new anchor, or into the one already holding
    `url` or the URL it ended at (with `force`; else that one is said)."""
    existing = _existing(view, "url", url) or _existing(view, "url", data.final_url or url)
    if existing is not None:
        if not force:
            return _already(view, existing, "url", url)
        return _rewrite(view, existing, data, source)
    return _add(view, data, title=title, description=description, tags=tags, durability=durability, links=links,
                source=source)


def _anchor_of(view: View, ref: str) -> tuple[MemoryNode, dict[str, Any]]:
    node = view.require(ref, "anchor")
    fields = _anchor_fields(view, node)
    if fields.get("anchor") not in ("file", "folder", "url"):
        raise UsageError(f"{node.id!r} is not a source anchor (no `anchor: file|folder|url` in its frontmatter); "
                         "anchors are made with `git vivary remember --file/--folder/--url`")
    return node, fields


def _target_path(fields: dict[str, Any], key: str, node: MemoryNode) -> str:
    value = fields.get(key)
    if not isinstance(value, str) or not value or value.startswith("/") or "\x00" in value \
            or any(p in ("..",) for p in value.split("/")):
        raise UsageError(f"{node.id}: its `{key}` is missing or not a repository path; remember the source again")
    return "" if value == "." else value


def refresh(view: View, ref: str, *, allow_network: bool = False, source: str = "agent") -> Anchored:
    """Re-read the source of anchor `ref` and commit what changed (no commit when nothing did)."""
    node, fields = _anchor_of(view, ref)
    top = _workdir(view)
    anchor = fields["anchor"]
    if anchor == "url" and not fields.get("anchor_export"):
        url = fields.get("url")
        if not isinstance(url, str):
            raise UsageError(f"{node.id}: its `url` is missing; remember the page again")
        from vivary_git.memory.sources.fetch import check_url

        check_url(url)
        return _rewrite(view, node, fetch_page(view.cfg.memory.sources, url, allow_network=allow_network), source)
    key = "anchor_export" if anchor == "url" else "anchor_path"
    rel = _target_path(fields, key, node)
    if rel and not os.path.lexists(top / rel):
        raise RefusedError(f"{node.id}: {rel} is gone; restore it, or remove the anchor ({node.path})")
    want = "folder" if anchor == "folder" else "file"
    rel, full = _locate(view, rel or ".", top, want)
    _refuse_private(view, rel, want, rel or ".", source=source)
    data = _folder_data(view, rel, full, rel or ".") if anchor == "folder" else _read_document(view, rel, rel, source)
    if anchor == "url" and data.anchor != "url":
        raise RefusedError(f"{node.id}: {rel} no longer has its .source.json sidecar; restore it to refresh")
    return _rewrite(view, node, data, source)


def check(view: View, refs: Sequence[str] = (), *, source: str = "agent") -> list[AnchorState]:
    """Which anchors are stale, without writing anything or reaching the network. A file is compared by
    its blob id, a folder by the digest of its top level; a web page is `unchecked` (its saved export
    file, when it came from one, is compared as a file)."""
    chosen = [_anchor_of(view, r) for r in refs] if refs else _anchors(view)
    top = _workdir(view)
    out: list[AnchorState] = []
    for node, fields in chosen:
        anchor = str(fields["anchor"])
        if anchor == "url" and not fields.get("anchor_export"):
            out.append(AnchorState(node.id, node.path, anchor, str(fields.get("url", "")), "unchecked",
                                   "a web page: `git vivary refresh ID --allow-network` fetches it again",
                                   recorded=str(fields.get("fetched_at", "")) or None))
            continue
        key = "anchor_export" if anchor == "url" else "anchor_path"
        target = str(fields.get(key, ""))
        out.append(_check_one(view, top, node, fields, anchor, key, target, source))
    return out


def _check_one(view: View, top: Path, node: MemoryNode, fields: dict[str, Any], anchor: str, key: str,
               target: str, source: str) -> AnchorState:
    def state(s: str, detail: str, current: str | None = None) -> AnchorState:
        recorded = fields.get("anchor_digest" if anchor == "folder" else "anchor_blob")
        return AnchorState(node.id, node.path, anchor, target, s, detail,
                           recorded=str(recorded) if recorded else None, current=current)

    try:
        rel = _target_path(fields, key, node)
    except UsageError as err:
        return state("missing", str(err))
    if rel and not os.path.lexists(top / rel):
        return state("missing", f"{rel} is gone")
    want = "folder" if anchor == "folder" else "file"
    try:
        rel, full = _locate(view, rel or ".", top, want)
        _refuse_private(view, rel, want, rel or ".", source=source)
    except RefusedError as err:
        return state("private" if "private" in str(err) else "missing", str(err))
    except UsageError as err:
        return state("missing", str(err))
    if anchor == "folder":
        digest = _folder_data(view, rel, full, rel or ".").fields
        now = next(v for k, v in digest if k == "anchor_digest")
        if now != fields.get("anchor_digest"):
            return state("stale", f"the top level of {rel or '.'} changed since {fields.get('anchor_read_at', '?')}",
                         str(now))
        return state("fresh", "", str(now))
    blob, _size, _head = _read_file(view, rel, 0)
    if blob != fields.get("anchor_blob"):
        return state("stale", f"{rel} changed since it was read ({str(fields.get('anchor_blob', '?'))[:12]} → "
                              f"{blob[:12]})", blob)
    return state("fresh", "", blob)
