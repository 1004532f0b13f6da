"""Bytes of one blob → `Note`. Pure: the same blob id always gives the same `Note`.

We split frontmatter ourselves (rather than through python-frontmatter) because every finding
needs the exact 1-based line of its key, and YAML is read with PyYAML's C parser through a
loader that keeps dates as the strings the user wrote: a date like `2026-13-45` must be a
finding about that field, not a crash of the whole parse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from itertools import chain
from typing import TYPE_CHECKING, Any

from vivary_git.body import CONFLICT_MARK, IGNORE_MARK, conflict_blocks, ignore_comments, scan_body
from vivary_git.git import BlobTooLarge
from vivary_git.models import NOTE_MAX_BYTES, Note, ParseProblem
from vivary_git.scalars import plain_kind, whole_number

if TYPE_CHECKING:
    import yaml

MAX_BYTES = NOTE_MAX_BYTES
_BINARY_SNIFF = 8000
# A Git LFS pointer (https://github.com/git-lfs/git-lfs/blob/main/docs/spec.md) is what Git holds for a file
# stored in LFS: under 1024 bytes, its first line exactly this, then sorted `key value` lines, `oid` and `size`
# among them. Only a blob that small and starting so is looked at further, so other notes pay one comparison.
_LFS_MAX = 1024
_LFS_VERSION = b"version https://git-lfs.github.com/spec/v1\n"
_LFS_LINE = re.compile(rb"([a-z0-9.-]+) ([^\r\n]*)")
_LFS_VALUES = {b"oid": re.compile(rb"sha256:[0-9a-f]{64}"), b"size": re.compile(rb"[0-9]+")}
_EXCLUDE_HINT = "add it to `exclude` (in tropo.toml; in a vault, .vivary/graph.toml)"
# A YAML alias (`*name`) repeats what its anchor holds without repeating its text: nine lines of
# anchors and aliases expand to 9^9 values (the "billion laughs"). One frontmatter may expand to at
# most MAX_VALUES values (every scalar, list and mapping below the top-level keys counts one) and to at
# most MAX_EXTRA_CHARS characters of text beyond its own length; past either it is E001. Without
# aliases neither can be reached by a note under MAX_BYTES that is not a wall of values.
MAX_VALUES = 10_000
MAX_EXTRA_CHARS = 1 << 20
MAX_DEPTH = 32  # nesting kept; deeper values read as null


def loader_class() -> type[yaml.SafeLoader]:
    """PyYAML's SafeLoader with the plain-scalar rules of scalars.py (imported on first use, with PyYAML)."""
    from vivary_git.yamlloader import Loader

    return Loader


def parse_blob(data: bytes) -> Note:
    """Parse one Markdown file's bytes. Never raises for bad input: problems become E000/E001."""
    if len(data) > MAX_BYTES:
        return too_large(len(data))
    if b"\x00" in data[:_BINARY_SNIFF]:
        return _unreadable(1, "file looks binary (it contains NUL bytes); exclude it or give it another extension")
    if len(data) < _LFS_MAX and data.startswith(_LFS_VERSION) and is_lfs_pointer(data):
        return _unreadable(
            1, "file is a Git LFS pointer: the note's text is in LFS storage, which vivary does not read (it is not "
            "in the Git tree, and vivary does not fetch it); keep Markdown out of LFS (`git lfs untrack '*.md'`, "
            "then `git lfs migrate export --include='*.md' --everything`, which rewrites history), or " + _EXCLUDE_HINT
        )
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        return _unreadable(
            line, f"not valid UTF-8 (byte 0x{data[err.start]:02x} at offset {err.start}); re-save the file as UTF-8"
        )
    fields: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    problem: ParseProblem | None = None
    has_frontmatter = False
    body_start = 0  # the body's first line, 0-based
    body = text
    if text.startswith("---\r") and text[4:5] != "\n" and "\n" not in text:
        # Old Mac line ends (a lone CR) throughout: read as line ends, as tropo (Python's universal newlines),
        # js-yaml and the editors that open such a file read them.
        text = text.replace("\r", "\n")
    split = _split_frontmatter(text) if text.startswith("---") else None
    if split is not None:
        has_frontmatter = True
        source, body_start, body = split
        if source is None:
            # A `---` after a lone CR closes it for YAML, tropo and js-yaml, not for Git, editors and us: that CR
            # is what to fix, not a missing `---`.
            problem = (_lone_cr(text, 1) if "\r" in text and _CLOSING_AFTER_CR.search(text) else None) or ParseProblem(
                "E001", 1, "frontmatter opened with `---` on line 1 is never closed; add a `---` line after it"
            )
        else:
            fields, key_lines, problem = _frontmatter(source, first_line=2)
    elif text and text[0] in _UNRECOGNISED_STARTS:
        problem = _unrecognised_frontmatter(text)
    title, links, anchors = scan_body(body, first_line=body_start + 1)
    conflicts = conflict_blocks(body, body_start + 1) if CONFLICT_MARK in body else ()
    if conflicts and problem is not None and conflicts[0].line == problem.line:
        conflicts = conflicts[1:]  # markers before the frontmatter: its E001 names that conflict already
    return Note(
        fields=fields,
        key_lines=key_lines,
        title=title,
        body=body,
        links=tuple(links),
        problem=problem,
        has_frontmatter=has_frontmatter,
        anchors=anchors,
        ignores=ignore_comments(body, first_line=body_start + 1) if IGNORE_MARK in body else (),
        conflicts=conflicts,
    )


def parse_read(read: Callable[[str], bytes], oid: str) -> Note:
    """The note in blob `oid`, read by `read`. A reader given the bound (`git.Repo.read_blob(oid, MAX_BYTES)`)
    refuses a bigger blob unread; it is the same E000 `parse_blob` would find in its bytes."""
    try:
        data = read(oid)
    except BlobTooLarge as err:
        return too_large(err.size)
    return parse_blob(data)


def too_large(size: int) -> Note:
    """The note a file of `size` bytes, over `MAX_BYTES`, is: E000 on line 1, nothing else read."""
    return _unreadable(
        1, f"file is {size:,} bytes, over the {MAX_BYTES // (1024 * 1024)} MiB limit for a note; "
        "split it, or " + _EXCLUDE_HINT
    )


def is_lfs_pointer(data: bytes) -> bool:
    """Whether `data` is a Git LFS pointer, by the spec's rules: under 1024 bytes, the v1 version line first,
    then `key value` lines (keys of `a-z 0-9 . -`, sorted, each once) ending in a newline, among them
    `oid sha256:<64 hex>` and `size <digits>`. A note that quotes a pointer has other lines, so stays a note."""
    if len(data) >= _LFS_MAX or not data.startswith(_LFS_VERSION) or not data.endswith(b"\n"):
        return False
    values: dict[bytes, bytes] = {}
    last = b""
    for line in data[len(_LFS_VERSION):-1].split(b"\n"):
        m = _LFS_LINE.fullmatch(line)
        if m is None or m[1] <= last or m[1] == b"version":
            return False
        last = m[1]
        values[last] = m[2]
    return all(key in values and rule.fullmatch(values[key]) for key, rule in _LFS_VALUES.items())


def _split_frontmatter(text: str) -> tuple[str | None, int, str] | None:
    """(frontmatter source, the body's first line (0-based), body) of a text whose first line is `---`
    (trailing whitespace allowed); source None when no later line closes it with `---` or `...` (then
    the body is empty and starts after the last line). None when the first line is not `---`. Found by
    searching for the closing line rather than splitting the whole text into lines (`_split_lines`
    is the same by lines, for the tests)."""
    eol = text.find("\n")
    if (text if eol == -1 else text[:eol]).rstrip() != "---":
        return None
    if eol != -1:
        at = eol  # a "\n" that ends a line: is the next one the closing line?
        while True:
            dash, dots = text.find("\n---", at), text.find("\n...", at)
            at = dash if dots == -1 or (dash != -1 and dash < dots) else dots
            if at == -1:
                break
            end = text.find("\n", at + 1)
            if (text[at + 1:] if end == -1 else text[at + 1:end]).rstrip() in ("---", "..."):
                body_start = text.count("\n", 0, at + 1) + 1
                return text[eol + 1:at], body_start, ("" if end == -1 else text[end + 1:])
            at += 1
    return None, text.count("\n") + 1, ""


# Frontmatter that is there but not where it is read (line 1, lines ending at "\n"): what a file that
# does not open with a `---` line starts with when it may be one of those.
_UNRECOGNISED_STARTS = frozenset("-\n\r \t<")
_CR_OPENING = re.compile(r"---[ \t]*\r(?!\n)")
_CR_CLOSING = re.compile(r"\r(?:---|\.\.\.)[ \t]*(?:\r|$)")
_BLANK_LINES_THEN_OPENING = re.compile(r"(?:[ \t]*\r?\n)+(?=---[ \t]*\r?\n)")
_KEY_LINE = re.compile(r"[ \t]*(?:[^\s#:\-][^:\n]*|\"[^\"\n]*\"|'[^'\n]*'):(?:[ \t\r]|$)")
_CONFLICT_START = re.compile(r"<{7}(?: [^\n]*)?\r?\n---[ \t]*\r?\n")


def _unrecognised_frontmatter(text: str) -> ParseProblem | None:
    """E001 for a file that holds frontmatter where no reader looks for it (Obsidian, tropo and we read it only
    from a `---` first line, lines ending at "\n"): after blank lines, with old Mac line ends (a lone CR, which
    Git, GitHub and tropo read as no line end), or after a merge conflict's first marker. Its fields would
    otherwise be read as missing (`E101`), which says nothing about why."""
    if text[0] == "-":
        eol = text.find("\n")
        first = text if eol == -1 else text[:eol]
        if _CR_OPENING.match(first) and _CR_CLOSING.search(first):  # (a file with no LF at all is read as CR lines)
            return ParseProblem(
                "E001", 1, "frontmatter not recognised: its lines end with a lone CR (old Mac line ends) while the "
                "file's other lines end with LF; convert its line ends to LF (`mac2unix FILE`, or the editor's "
                "line-ending setting)")
        return None
    if text[0] == "<":
        m = _CONFLICT_START.match(text)
        if m is not None:
            return ParseProblem(
                "E001", 1, "merge conflict markers left in the file (line 1), before its frontmatter: resolve the "
                "conflict (keep one side, delete the `<<<<<<<`, `=======` and `>>>>>>>` lines)")
        return None
    m = _BLANK_LINES_THEN_OPENING.match(text)
    if m is None:
        return None
    split = _split_frontmatter(text[m.end():])
    if split is None or split[0] is None:
        return None
    content = next((line for line in split[0].split("\n") if line.strip() and not line.lstrip().startswith("#")), "")
    if not _KEY_LINE.match(content):
        return None  # a thematic break and a paragraph, not frontmatter
    opening = text.count("\n", 0, m.end()) + 1
    return ParseProblem(
        "E001", 1, f"frontmatter not recognised: its opening `---` is on line {opening}, and frontmatter is read "
        "only when `---` is the file's first line; remove the blank lines above it")


# A CR that ends no line: not followed by "\n" (and not the last character of frontmatter, which a "\n" follows).
_LONE_CR = re.compile(r"\r(?!\n|\Z)")
_CLOSING_AFTER_CR = re.compile(r"\r(?:---|\.\.\.)[ \t]*(?:\r|\n|$)")


def _lone_cr(text: str, first_line: int) -> ParseProblem | None:
    """E001 for a lone CR (an old Mac line end) in frontmatter whose lines end with LF, at its line and column:
    YAML (libyaml, PyYAML, js-yaml) and tropo end a line there, while Git, GitHub, editors and our line numbers
    do not, so the same text would read as one line here and two there. None when `text` holds none."""
    m = _LONE_CR.search(text)
    if m is None:
        return None
    at = m.start()
    column = at - (text.rfind("\n", 0, at) + 1) + 1
    return ParseProblem(
        "E001", first_line + _line_of(text, at),
        f"frontmatter holds a lone CR (an old Mac line end) in column {column}, in a file whose lines end with LF: "
        "YAML would end a line there, Git and editors do not; convert its line ends to LF (`mac2unix FILE`, or the "
        "editor's line-ending setting)")


_CONFLICT_MARKER = re.compile(r"^(?:<{7}|>{7}|\|{7})(?:[ \r]|$)|^={7}\r?$", re.MULTILINE)


def _conflict_line(source: str, first_line: int) -> ParseProblem | None:
    """E001 for merge conflict markers in frontmatter, at the first one's line (Git writes them at a line's
    start; YAML would stop at the line after, in its own words)."""
    if "<<<<<<<" not in source and ">>>>>>>" not in source:
        return None
    m = _CONFLICT_MARKER.search(source)
    if m is None:
        return None
    line = first_line + _line_of(source, m.start())
    return ParseProblem(
        "E001", line, f"merge conflict markers left in the frontmatter (line {line}): resolve the conflict (keep "
        "one side, delete the `<<<<<<<`, `=======` and `>>>>>>>` lines)")


def _split_lines(text: str) -> tuple[str | None, int, str] | None:
    """`_split_frontmatter` by splitting `text` into lines: the reference it is tested against."""
    lines = text.split("\n")
    if lines[0].rstrip("\r").rstrip() != "---":
        return None
    close = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r").rstrip() in ("---", "...")), None)
    if close is None:
        return None, len(lines), ""
    return "\n".join(lines[1:close]), close + 1, "\n".join(lines[close + 1:])


def _unreadable(line: int, message: str) -> Note:
    return Note(fields={}, key_lines={}, title=None, body="", problem=ParseProblem("E000", line, message))


_FAST_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")
# A plain scalar we can read without YAML's full grammar: no indicator first, no `: `/` #`/flow chars.
_FAST_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`]([^:#,\[\]{}]|:(?=[^\s,\[\]{}])|(?<=\S)#)*")


# `_FAST_PLAIN` without `:` or `#` inside: most scalars, matched without its lookarounds (it matches them too).
_SIMPLE_PLAIN = re.compile(r"[^\s\-?:,\[\]{}#&*!|>'\"%@`][^:#,\[\]{}]*")
# What a plain scalar must start with for a resolver but the string's to take it (`_NULL`, `_YAML_ONLY`,
# `_BOOL`, `_INT`, `_FLOAT`).
_RESOLVED_STARTS = frozenset("nN~<=tTfF-+.0123456789")


# Frontmatter repeats itself across a workspace (the same keys, statuses, tags and ref targets in
# thousands of notes), so each distinct text is resolved once per process. Values are immutable
# (str, int, bool, None): sharing them is safe. Bounded: cleared when full.
_SCALARS: dict[str, tuple[bool, Any]] = {}
_KEYS: dict[str, bool] = {}
_MEMO_MAX = 100_000


def _fast_scalar(text: str) -> tuple[bool, Any]:
    """(ok, value) for a plain scalar, resolved exactly as PyYAML resolves it; ok False to fall back."""
    got = _SCALARS.get(text)
    if got is None:
        if len(_SCALARS) >= _MEMO_MAX:
            _SCALARS.clear()
        got = _SCALARS[text] = _resolve_scalar(text)
    return got


def _resolve_scalar(text: str) -> tuple[bool, Any]:
    if not (_SIMPLE_PLAIN.fullmatch(text) or _FAST_PLAIN.fullmatch(text)) or _NOT_YAML.search(text):
        return False, None  # (a control character: the full parser says where it is)
    # Text that starts as no null, bool, int, float, merge or value does (a ref, a word) is a string.
    kind = "str" if text[0] not in _RESOLVED_STARTS else plain_kind(text)
    if kind == "str":
        return True, text
    if kind == "null":
        return True, None
    if kind == "bool":
        return True, text[0] in "tT"
    if kind == "int":
        return True, whole_number(text)
    return False, None  # floats (NaN/inf need the slow path's JSON-safe handling), merge/value keys


def _fast_key(key: str) -> bool:
    """Whether `key` is a plain key the fast path may take: a name YAML reads as a string."""
    ok = _KEYS.get(key)
    if ok is None:
        if len(_KEYS) >= _MEMO_MAX:
            _KEYS.clear()
        ok = _KEYS[key] = bool(_FAST_KEY.fullmatch(key)) and plain_kind(key) == "str"
    return ok


def _fast_frontmatter(source: str, first_line: int) -> tuple[dict[str, Any], dict[str, int]] | None:
    """Most frontmatter is flat `key: scalar` and `key: [a, b]` lines; read those without the YAML
    machinery (~10x faster), with PyYAML's own resolver deciding each scalar's type so the result is
    identical. Anything else (nesting, quotes, block scalars, anchors, odd keys) returns None and
    takes the full parser."""
    tabbed = "\t" in source
    fields: dict[str, Any] = {}
    key_lines: dict[str, int] = {}
    values = 0
    keys, scalars = _KEYS, _SCALARS  # (the memos looked up here first: most keys and values are there)
    for i, raw in enumerate(source.split("\n")):
        if "\r" in raw:
            if "\r" in raw[:-1]:
                return None  # a lone CR: the full path says where
            line = raw[:-1].rstrip(" ")
        else:
            line = raw.rstrip(" ")
        if not line or line[0] == "#":
            if line and _NOT_YAML.search(line):
                return None
            continue
        key, sep, rest = line.partition(": ")
        if not sep or key in fields or (tabbed and "\t" in line) or not (keys.get(key) or _fast_key(key)):
            return None
        rest = rest.strip(" ")
        if rest[:1] == "[" and rest[-1:] == "]":
            inner = rest[1:-1].strip(" ")
            items: list[Any] = []
            if inner:
                for part in inner.split(","):
                    text = part.strip(" ")
                    got = scalars.get(text) or _fast_scalar(text)
                    if not got[0]:
                        return None
                    items.append(got[1])
            fields[key] = items
            values += len(items)
        else:
            got = scalars.get(rest) or _fast_scalar(rest)
            if not got[0]:
                return None
            fields[key] = got[1]
        key_lines[key] = first_line + i
    if values + len(fields) > MAX_VALUES:
        return None  # the full parser says where the limit was crossed
    return fields, key_lines


def _frontmatter(source: str, first_line: int) -> tuple[dict[str, Any], dict[str, int], ParseProblem | None]:
    fast = _fast_frontmatter(source, first_line)
    if fast is not None:
        return fast[0], fast[1], None
    if "\r" in source:
        lone = _lone_cr(source, first_line)
        if lone is not None:
            return {}, {}, lone
    conflict = _conflict_line(source, first_line)
    if conflict is not None:
        return {}, {}, conflict
    for i, raw in enumerate(source.split("\n")):
        stripped = raw.lstrip(" ")
        if stripped.startswith("\t") and stripped.strip():
            return {}, {}, ParseProblem(
                "E001", first_line + i, "frontmatter is not valid YAML: tab character used for indentation"
            )
    import yaml
    import yaml.reader

    if "\\" in source and _SURROGATE_ESCAPE.search(source):
        source, lone = _join_surrogates(source, first_line)
        if lone is not None:
            return {}, {}, lone
    shielded, restore = _shield_breaks(source)
    loader = loader_class()(shielded)
    try:
        node = loader.get_single_node()
        if node is None:
            return {}, {}, None
        if not isinstance(node, yaml.MappingNode):
            return {}, {}, ParseProblem("E001", first_line, "frontmatter must be a mapping of key: value")
        key_lines: dict[str, int] = {}
        line, at = first_line, 0
        for key_node, _ in node.value:  # (in document order: each key's line counted on from the last)
            key = _key_text(key_node)
            if restore is not None:
                key = key.translate(restore)
            index = key_node.start_mark.index
            line += source.count("\n", at, index)
            at = index
            key_lines.setdefault(key, line)  # (a duplicate is said by the loader's construct_mapping)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as err:
        # An unclosed `[1` is reported by libyaml where the file ends; the line the user must fix is
        # where the flow collection opened, which libyaml keeps as the context mark.
        opened_flow = err.context is not None and "flow" in err.context and err.context_mark is not None
        # So is a quote never closed (`title: "Draft`): a quoted value may run over lines, so libyaml reads
        # on to the end of the frontmatter and names that line, where nothing is wrong.
        unclosed_quote = (err.context == "while scanning a quoted scalar" and err.context_mark is not None
                          and err.problem == "found unexpected end of stream")
        mark = err.context_mark if opened_flow or unclosed_quote else (err.problem_mark or err.context_mark)
        line = first_line + (_line_of(source, mark.index) if mark is not None else 0)
        placeholder = _placeholder_line(source, first_line)
        if placeholder is not None:
            return {}, {}, placeholder
        said = _marked_words(err, source, first_line)
        if unclosed_quote and mark is not None:
            quote = source[mark.index] if mark.index < len(source) else '"'
            said = (f"the quoted value opened by `{quote}` in column {mark.column + 1} is never closed "
                    f"(found unexpected end of stream): add the closing `{quote}`")
        if restore is not None:
            said = said.translate(restore)
        return {}, {}, ParseProblem("E001", line, f"frontmatter is not valid YAML: {said}")
    except RecursionError:
        return {}, {}, ParseProblem(
            "E001", first_line, "frontmatter is nested too deeply to read; flatten its lists and mappings"
        )
    except yaml.reader.ReaderError as err:  # a character YAML does not allow in a stream: no mark, an offset in bytes
        return {}, {}, _bad_character(source, first_line, err.character)
    except (yaml.YAMLError, ValueError, TypeError, LookupError, AttributeError, ArithmeticError) as err:
        # None is expected here (each known shape is handled above or in the loader's constructors): the
        # first line of what was said, without the parser's "in <unicode string>, position N".
        said = (str(err).split("\n", 1)[0].split(' in "<unicode string>"', 1)[0].strip() or type(err).__name__)[:200]
        return {}, {}, ParseProblem("E001", first_line, f"frontmatter is not valid YAML: {said}")
    finally:
        loader.dispose()
    budget = [MAX_VALUES, len(source) + MAX_EXTRA_CHARS]
    fields: dict[str, Any] = {}
    for k, v in data.items():
        key = str(k) if restore is None else str(k).translate(restore)
        try:
            fields[key] = _jsonable(v, 0, budget) if restore is None else _restored(_jsonable(v, 0, budget), restore)
        except _TooBig as err:
            line = key_lines.get(key, first_line)
            if err.values and not ("&" in source and "*" in source):  # no alias (`*name` names an `&name`)
                return {}, {}, ParseProblem(
                    "E001", line, f"frontmatter holds more than {MAX_VALUES:,} values at key {key[:80]!r}; move "
                    "them out of the frontmatter (into the body, or a note of their own)")
            what = f"{MAX_VALUES:,} values" if err.values else f"{MAX_EXTRA_CHARS:,} more characters than it holds"
            return {}, {}, ParseProblem(
                "E001", line,
                f"frontmatter expands to more than {what} at key {key[:80]!r} (YAML aliases like `*name` repeat "
                "what their anchor holds); write the values out, or move them out of the frontmatter",
            )
    return fields, key_lines, None


# YAML 1.1 (PyYAML and libyaml follow it) reads NEL, LS and PS (U+0085, U+2028, U+2029) as line breaks;
# YAML 1.2 (js-yaml: Obsidian) reads them as ordinary characters, as the fast path does and as every
# editor and GitHub number lines (at "\n" only). So the full parser is handed the text with each of them
# replaced by a private-use character that neither the text holds nor an escape in it (`\uE000`) writes,
# one character for one (every offset stays), and the values it reads get the originals back: a string
# keeps its LS, a comment holding one stays a comment, and no line after it moves.
_ODD_BREAKS = ("\x85", "\u2028", "\u2029")
_ESCAPED_CODE = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8}))")
_PRIVATE_USE = (range(0xE000, 0xF900), range(0xF0000, 0xFFFFE), range(0x100000, 0x10FFFE))


def _shield_breaks(source: str) -> tuple[str, dict[int, str] | None]:
    """(`source` with NEL, LS and PS replaced by placeholders, the table that restores them), or
    (`source`, None) when it holds none of them."""
    odd = [c for c in _ODD_BREAKS if c in source]
    if not odd:
        return source, None
    taken = set(source)
    for short, long in _ESCAPED_CODE.findall(source):
        code = int(short or long, 16)
        if code <= 0x10FFFF:
            taken.add(chr(code))
    # At most len(taken) + 3 candidates are looked at: bounded by the text's length.
    free = (ch for ch in map(chr, chain.from_iterable(_PRIVATE_USE)) if ch not in taken)
    shield = {c: next(free) for c in odd}
    return source.translate({ord(c): p for c, p in shield.items()}), {ord(p): c for c, p in shield.items()}


# YAML 1.2 (js-yaml) and JSON write a character past U+FFFF in a double-quoted scalar as its UTF-16 surrogate pair,
# `\uD83D\uDE00` for 😀; libyaml refuses each half ("found invalid Unicode character escape code").
_SURROGATE_ESCAPE = re.compile(r"\\(?:u|U0000)[dD][89a-fA-F][0-9a-fA-F]{2}")
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|.)", re.DOTALL)


def _join_surrogates(source: str, first_line: int) -> tuple[str, ParseProblem | None]:
    """(`source` with each surrogate pair escaped in a double-quoted scalar written as the one `\\UXXXXXXXX`
    escape it spells, None), or (`source`, E001 for the first lone surrogate escape, at its line and column).
    Lines stay where they are. In a plain or single-quoted scalar, or a comment, a backslash is text: the
    double-quoted scalars are found by libyaml's scanner, over a copy with each surrogate escape made a letter's
    (as long), up to the first thing it cannot read (the full parse then says what that is)."""
    import yaml

    copy = _SURROGATE_ESCAPE.sub(lambda m: m.group(0)[:-4] + "0041", source)
    copy = copy.translate({ord(c): "x" for c in _ODD_BREAKS})  # (characters, as the full parse reads them)
    spans: list[tuple[int, int]] = []
    try:
        for token in yaml.scan(copy, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            if isinstance(token, yaml.ScalarToken) and token.style == '"':
                spans.append((token.start_mark.index, token.end_mark.index))
    except (yaml.YAMLError, ValueError, RecursionError):
        pass
    out: list[str] = []
    at = 0
    for start, end in spans:
        escapes = list(_ESCAPE.finditer(source, start, end))
        for i, m in enumerate(escapes):
            code = int(m.group(1) or m.group(2) or "0", 16)
            if not 0xD800 <= code <= 0xDFFF or m.start() < at:
                continue
            after = escapes[i + 1] if i + 1 < len(escapes) else None
            low = int(after.group(1), 16) if after is not None and after.group(1) else 0
            if code <= 0xDBFF and after is not None and after.start() == m.end() and 0xDC00 <= low <= 0xDFFF:
                out += (source[at:m.start()], f"\\U{0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00):08X}")
                at = after.end()
                continue
            column = m.start() - (source.rfind("\n", 0, m.start()) + 1) + 1
            return source, ParseProblem(
                "E001", first_line + _line_of(source, m.start()),
                f"frontmatter is not valid YAML: the escape `{m.group(0)}` in column {column} is a lone surrogate "
                "(half of a UTF-16 pair, no character on its own); write the character itself, or its `\\UXXXXXXXX` "
                "escape")
    out.append(source[at:])
    return "".join(out), None


def _restored(value: Any, restore: dict[int, str]) -> Any:
    """A JSON-safe value (`_jsonable`'s) with the placeholders of `_shield_breaks` turned back."""
    if isinstance(value, str):
        return value.translate(restore)
    if isinstance(value, dict):
        return {k.translate(restore): _restored(v, restore) for k, v in value.items()}
    if isinstance(value, list):
        return [_restored(v, restore) for v in value]
    return value


def _line_of(source: str, index: int) -> int:
    """The 0-based line of character `index` of `source`, lines ending at "\n" (libyaml's own line
    count also breaks at a lone "\r")."""
    return source.count("\n", 0, index)


_PLACEHOLDER = re.compile(r"\{\{[^{}\n]*\}\}|<%[^\n]*?%>")
_TEMPLATER = re.compile(r"<%[-_*+]?")  # a Templater command opening, `<%* … %>` across lines too


def _placeholder_line(source: str, first_line: int) -> ParseProblem | None:
    """A template's frontmatter (`created: {{date}}`, Templater's `<% tp.date.now() %>`, a `<%* … %>`
    command) is not YAML a parser can read, and its words ("found unhashable key") say nothing useful:
    name what it is."""
    for i, raw in enumerate(source.split("\n")):
        key, sep, value = raw.partition(":")
        m = _PLACEHOLDER.search(value) if sep else None
        if m is not None and not value.strip().startswith(("'", '"')):
            return ParseProblem(
                "E001", first_line + i,
                f"frontmatter: `{key.strip()}: {value.strip()}` is a template placeholder ({m.group(0)}), not a "
                "value: this file looks like a template. Put the placeholder in quotes, or leave the templates "
                "folder out of the graph (`exclude` in .vivary/graph.toml)", template=True,
            )
        c = _TEMPLATER.search(raw) if not sep or _TEMPLATER.match(raw.lstrip()) else None
        if c is not None:
            return ParseProblem(
                "E001", first_line + i,
                f"frontmatter: line `{raw.strip()[:80]}` is a Templater command ({c.group(0)} … %>), not YAML: this "
                "file looks like a template. Leave the templates folder out of the graph (`exclude` in "
                ".vivary/graph.toml)", template=True,
            )
    return None


# What YAML allows in a stream (YAML 1.2's c-printable, as PyYAML's reader and libyaml check it).
_NOT_YAML = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_CONTROL_NAMES = {
    "\x00": "NUL", "\x07": "bell", "\x08": "backspace", "\x0b": "vertical tab", "\x0c": "form feed",
    "\x1b": "escape", "\x7f": "delete", "\ufffe": "not a character", "\uffff": "not a character",
}


def _bad_character(source: str, first_line: int, character: object) -> ParseProblem:
    """E001 for a character YAML does not allow anywhere (a control character, U+FFFE), at its line and
    column: PyYAML names it with an offset in bytes from the frontmatter's start, which no editor shows."""
    m = _NOT_YAML.search(source)
    at = m.start() if m is not None else -1
    if at == -1 and isinstance(character, int) and 0 <= character <= 0x10FFFF:
        at = source.find(chr(character))
    if at == -1:
        return ParseProblem("E001", first_line, "frontmatter is not valid YAML: it holds a character YAML does not "
                            "allow; remove it")
    ch = source[at]
    column = at - (source.rfind("\n", 0, at) + 1) + 1
    kind = "control character" if ch < "\xa0" else "character"
    name = _CONTROL_NAMES.get(ch)
    shown = f"U+{ord(ch):04X}" + (f" ({name})" if name else "")
    return ParseProblem("E001", first_line + _line_of(source, at),
                        f"frontmatter is not valid YAML: {kind} {shown} in column {column} is not allowed in YAML; "
                        "remove it")


_ALIAS = re.compile(r"\*([^\s,\[\]{}]+)")


def _marked_words(err: yaml.MarkedYAMLError, source: str, first_line: int) -> str:
    """What a parser error says, in plain words on one line: its problem (or its context), the character it
    names, and for the two libyaml says least about, the name (an undefined alias) or the other line (a
    duplicate anchor)."""
    what = " ".join((err.problem or err.context or "invalid YAML").split())
    mark = err.problem_mark
    if what == "found undefined alias" and mark is not None:
        alias = _ALIAS.match(source, mark.index)
        if alias is not None:
            return (f"found undefined alias '*{alias.group(1)[:80]}': define the anchor `&{alias.group(1)[:80]}` "
                    "before it, or quote the value")
    duplicate = getattr(err, "duplicate", None)
    if duplicate is not None and err.context_mark is not None:
        # A key written twice, or two spellings YAML reads as one key (`~` and `null`, `1.0` and `1`).
        first, second = duplicate
        line = first_line + _line_of(source, err.context_mark.index)
        if first == second:
            return f"duplicate key {second!r}"  # (tropo's words, kept)
        return (f"duplicate key {second[:80]!r}: YAML reads it as the same key as {first[:80]!r} on line {line}; "
                "remove one of them")
    if what == "second occurrence" and err.context_mark is not None:
        first = first_line + _line_of(source, err.context_mark.index)
        return f"found duplicate anchor (first on line {first}): rename one of the two anchors"
    return _with_character(what, source, mark)


def _with_character(what: str, source: str, mark: yaml.Mark | None) -> str:
    """libyaml's message with the character it names: "found character that cannot start any token" does
    not say which (PyYAML's own parser does: `found character '@' that cannot start any token`)."""
    if mark is None or "character" not in what:
        return what
    at = mark.index + (1 if what.startswith("found unknown escape") else 0)  # the mark is on the backslash
    if not 0 <= at < len(source) or source[at] == "\n":
        return what
    ch = source[at]
    shown = f"'{ch}'" if ch.isprintable() and ch != "'" else repr(ch)
    if what.startswith("found unknown escape"):
        shown = f"'\\{ch}'" if ch.isprintable() and ch != "'" else repr("\\" + ch)
    return what.replace("character", f"character {shown}", 1)


def _key_text(node: yaml.Node) -> str:
    value = node.value
    return value if isinstance(value, str) else str(value)


class _TooBig(Exception):
    def __init__(self, values: bool) -> None:
        self.values = values  # True: too many values; False: too much text


def _jsonable(value: Any, depth: int, budget: list[int]) -> Any:
    """Make a YAML value JSON-safe: string keys, no NaN, bounded depth, and bounded size: `budget` is
    [values left, characters left], shared by the whole frontmatter (aliases repeat objects, so this
    expansion, not the YAML text, is what an alias bomb inflates). Raises `_TooBig` past either."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig(True)
    if depth > MAX_DEPTH:
        return None
    if isinstance(value, str):
        budget[1] -= len(value)
        if budget[1] < 0:
            raise _TooBig(False)
        return value
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = str(k)
            budget[1] -= len(key)
            if budget[1] < 0:
                raise _TooBig(False)
            out[key] = _jsonable(v, depth + 1, budget)
        return out
    if isinstance(value, (list, tuple, set)):
        return [_jsonable(v, depth + 1, budget) for v in value]
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return str(value)
    if value is None or isinstance(value, (int, float, bool)):
        return value
    text = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    budget[1] -= len(text)
    if budget[1] < 0:
        raise _TooBig(False)
    return text


_PLAIN_TYPES = frozenset((str, int, float, bool, type(None)))
_TEXT = frozenset((str,))
_PLAIN_OR_LIST = _PLAIN_TYPES | {list}


def within_bounds(fields: Mapping[str, Any]) -> bool:
    """Whether `fields` (a note's frontmatter, as a cache holds it) is no bigger and no deeper than a
    parse can make it: for frontmatter that was decoded from a cache someone else may have written.
    Every value counts one (the top-level ones too), at most MAX_VALUES; a value nested more than
    MAX_DEPTH + 1 levels below a top-level key, a key that is not text or a value that is not a mapping,
    list, text, number, boolean or null makes it out of bounds.

    Level by level, not value by value: `sync fetch` and the first `recall` of a fetched tree check
    every note's, and a level of plain scalars (most frontmatter is one) is checked in C. Frontmatter of
    plain values and lists of them (most of it) is checked in C as a whole, without building the levels."""
    if type(fields) is dict and set(map(type, fields)) <= _TEXT:
        types = set(map(type, fields.values()))
        if types <= _PLAIN_TYPES:
            return len(fields) <= MAX_VALUES
        if types <= _PLAIN_OR_LIST:
            lists = [v for v in fields.values() if type(v) is list]
            if len(fields) + sum(map(len, lists)) > MAX_VALUES:
                return False
            if set(map(type, chain.from_iterable(lists))) <= _PLAIN_TYPES:
                return True
    left = MAX_VALUES
    level: list[Any] = [fields]  # the mappings and lists whose items are at `depth`
    depth = 0
    while level:
        keys: list[Any] = []
        items: list[Any] = []
        for holder in level:
            if isinstance(holder, list):
                items.extend(holder)
            else:  # the frontmatter itself, or a mapping in it
                keys.extend(holder)
                items.extend(holder.values())
        if not set(map(type, keys)) <= _TEXT and not all(isinstance(k, str) for k in keys):
            return False
        left -= len(items)
        if left < 0 or (items and depth > MAX_DEPTH + 1):
            return False
        if set(map(type, items)) <= _PLAIN_TYPES:
            return True  # nothing nested deeper
        level = []
        for v in items:
            if isinstance(v, dict | list):
                level.append(v)
            elif not (v is None or isinstance(v, str | int | float | bool)):
                return False
        depth += 1
    return True
