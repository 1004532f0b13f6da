"""The readable text of a file or a fetched page, for a source anchor: bounded, and never a traceback.

Text-like files (Markdown, plain text, code, configuration) are read as they are. HTML goes through
`trafilatura` (main-content extraction, boilerplate such as menus and footers left out) and PDF through
`pypdf` (pure Python, no C library or external program, maintained by the py-pdf project). Both come
with the `sources` extra (`pip install 'vivary-git[sources]'`) and are imported only here, only when a
file of that kind is remembered; without them the message names the extra (exit 2).

A binary file (an image, an archive) keeps no text: its anchor records where it is and its blob id.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from vivary_git.errors import RefusedError, UsageError

__all__ = ["EXTRA", "Extracted", "MissingExtra", "extract", "format_of", "media_format"]

EXTRA = "sources"
MAX_PDF_PAGES = 500
_SNIFF = 8192

MARKDOWN = frozenset({".md", ".markdown", ".mdown", ".mkd", ".mdx"})
TEXT = frozenset({
    ".txt", ".text", ".rst", ".adoc", ".asciidoc", ".org", ".tex", ".csv", ".tsv", ".log", ".ini", ".cfg", ".conf",
    ".toml", ".yaml", ".yml", ".json", ".jsonl", ".xml", ".svg", ".sql", ".graphql", ".proto",
})
CODE = frozenset({
    ".py", ".pyi", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".go", ".rs", ".java", ".kt", ".kts", ".scala",
    ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".m", ".mm", ".swift", ".rb", ".php", ".pl", ".pm", ".lua",
    ".r", ".jl", ".hs", ".ml", ".mli", ".ex", ".exs", ".erl", ".clj", ".cs", ".fs", ".dart", ".zig", ".nim", ".sh",
    ".bash", ".zsh", ".fish", ".ps1", ".bat", ".css", ".scss", ".sass", ".less", ".vue", ".svelte", ".el", ".vim",
    ".tf", ".nix", ".cmake", ".gradle",
})
CODE_NAMES = frozenset({"Makefile", "Dockerfile", "Justfile", "Rakefile", "Gemfile", "Procfile", "Containerfile"})
HTML = frozenset({".html", ".htm", ".xhtml"})
PDF = frozenset({".pdf"})


class MissingExtra(UsageError):
    """An extractor library of the `sources` extra is not installed."""


class Extracted(msgspec.Struct, frozen=True):
    text: str  # "" for a binary file
    format: str  # markdown | text | code | html | pdf | binary
    extractor: str  # text | trafilatura | pypdf | none
    truncated: bool  # the text was longer than the limit and was cut
    title: str = ""  # what the document calls itself (H1, <title>, PDF metadata), when it says


def format_of(name: str, head: bytes) -> str:
    """What kind of file `name` is, from its suffix and its first bytes."""
    lower = name.lower()
    suffix = lower[lower.rfind("."):] if "." in lower.rsplit("/", 1)[-1] else ""
    if suffix in MARKDOWN:
        return "markdown"
    if suffix in HTML:
        return "html"
    if suffix in PDF or head.startswith(b"%PDF-"):
        return "pdf"
    if suffix in CODE or name.rsplit("/", 1)[-1] in CODE_NAMES:
        return "code"
    if suffix in TEXT:
        return "text"
    sample = head[:_SNIFF]
    if b"\x00" in sample:
        return "binary"
    if re.match(rb"\s*(<!doctype html|<html)", sample[:512], re.IGNORECASE):
        return "html"
    try:
        sample.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(sample) - 4:  # not just a character cut at the sniff boundary
            return "binary"
    return "text"


def media_format(content_type: str) -> str | None:
    """The format of a fetched body by its media type, or None when it is not a page we keep as text."""
    if content_type in ("text/html", "application/xhtml+xml"):
        return "html"
    if content_type == "application/pdf":
        return "pdf"
    if content_type in ("text/markdown", "text/x-markdown"):
        return "markdown"
    if content_type.startswith("text/") or content_type in ("application/json", "application/xml"):
        return "text"
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _clean(text: str) -> str:
    return _CONTROL.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))


def _bound(text: str, limit: int) -> tuple[str, bool]:
    text = _clean(text).strip("\n")
    if len(text) <= limit:
        return text, False
    cut = text[:limit]
    newline = cut.rfind("\n")
    if newline > limit * 0.8:
        cut = cut[:newline]
    return cut.rstrip(), True


def _need(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(
            f"reading {what} needs the `{module}` library, which comes with the `{EXTRA}` extra: "
            f"pip install 'vivary-git[{EXTRA}]'"
        ) from None


def _decode(data: bytes, charset: str | None) -> str:
    for encoding in (charset, "utf-8"):
        if not encoding:
            continue
        try:
            return data.decode(encoding)
        except (UnicodeDecodeError, LookupError):
            continue
    return data.decode("cp1252", errors="replace")


_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_HTML_TITLE = re.compile(rb"<title[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)


def _markdown_title(text: str) -> str:
    m = _H1.search(text[:20_000])
    return m.group(1).strip() if m else ""


def extract(data: bytes, fmt: str, *, limit: int, what: str, charset: str | None = None,
            url: str | None = None) -> Extracted:
    """The bounded text of `data` read as `fmt` (see `format_of`/`media_format`). `what` names the
    file or URL in messages."""
    if fmt == "binary":
        return Extracted("", "binary", "none", False)
    if fmt in ("markdown", "text", "code"):
        text, cut = _bound(_decode(data, charset), limit)
        return Extracted(text, fmt, "text", cut, _markdown_title(text) if fmt == "markdown" else "")
    if fmt == "html":
        return _html(data, limit=limit, what=what, charset=charset, url=url)
    if fmt == "pdf":
        return _pdf(data, limit=limit, what=what)
    raise UsageError(f"{what}: no extractor for {fmt!r}")  # pragma: no cover - formats are ours


def _html(data: bytes, *, limit: int, what: str, charset: str | None, url: str | None) -> Extracted:
    trafilatura = _need("trafilatura", f"HTML ({what})")
    import logging

    for name in ("trafilatura", "htmldate", "courlan", "justext"):  # their notes on odd pages are not ours to print
        logging.getLogger(name).setLevel(logging.ERROR)
    # A charset the server declared wins; otherwise trafilatura reads the bytes (meta tag, detection).
    source: str | bytes = _decode(data, charset) if charset else data
    try:
        text = trafilatura.extract(source, url=url, output_format="markdown", include_links=False,
                                   include_images=False, include_comments=False, with_metadata=False,
                                   favor_recall=True)
        meta = trafilatura.extract_metadata(source, default_url=url)
    except Exception as err:  # a third-party parser on a stranger's bytes: any failure is "unreadable"
        raise RefusedError(f"{what}: the HTML could not be read ({type(err).__name__}); save it as text instead") \
            from None
    title = ""
    if meta is not None and getattr(meta, "title", None):
        title = str(meta.title)
    if not title:
        m = _HTML_TITLE.search(data[:200_000])
        if m:
            title = " ".join(_decode(m.group(1), charset).split())
    body, cut = _bound(text or "", limit)
    return Extracted(body, "html", "trafilatura", cut, " ".join(title.split())[:200])


def _pdf(data: bytes, *, limit: int, what: str) -> Extracted:
    pypdf = _need("pypdf", f"PDF ({what})")
    import io
    import logging

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings about odd files are not ours to print
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted:
            raise RefusedError(f"{what}: the PDF is encrypted; decrypt it first, or remember it without its text")
        parts: list[str] = []
        size = 0
        for n, page in enumerate(reader.pages):
            if n >= MAX_PDF_PAGES or size > limit:
                break
            got = page.extract_text() or ""
            parts.append(got)
            size += len(got)
        title = ""
        meta = reader.metadata
        if meta is not None and meta.title:
            title = " ".join(str(meta.title).split())[:200]
    except RefusedError:
        raise
    except Exception as err:  # a third-party parser on a stranger's bytes
        raise RefusedError(f"{what}: the PDF could not be read ({type(err).__name__}: it may be damaged)") from None
    text, cut = _bound("\n\n".join(p.strip() for p in parts if p.strip()), limit)
    return Extracted(text, "pdf", "pypdf", cut or len(reader.pages) > MAX_PDF_PAGES, title)
