"""The body of a note as its editor reads it: its title (the first ATX H1), its links (wikilinks, embeds,
Markdown links and reference definitions, Logseq tags), its heading and block anchors, and its
`vivary-ignore` comments, all outside code, math and comments, with the 1-based line of each. Pure text in,
values out; `parse.parse_blob` reads the frontmatter and hands the rest here."""

from __future__ import annotations

import heapq
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence

from vivary_git.models import Conflict, Ignore, Link

# An ATX heading read where a line starts (`$` is that line's end): `_headings` tries it only on lines
# whose first `#` follows at most three spaces, rather than a `^` search trying every position.
_ATX_LINE = re.compile(r" {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*\r*$", re.MULTILINE)
_ATX = re.compile(r" {0,3}(#{1,6})[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*\r*$")
# A block id ends its line and follows a space (or starts it): `block_ids` looks at the character
# before each match, so the pattern starts with a literal and is searched for as one.
_BLOCK_ID = re.compile(r"\^([A-Za-z0-9-]+)[ \t]*\r*$", re.MULTILINE)
# The `!` of an embed or image is looked at before each match rather than matched: a pattern that starts
# with a literal is searched for as one (several times faster over long text than trying `!?` at
# every position).
_WIKILINK = re.compile(r"\[\[([^\[\]\n]+?)\]\]")
# A Markdown inline link or image, CommonMark's shape: link text with at most one level of nested
# brackets, then a destination (in <…>, or without spaces, with balanced parentheses) and an optional title.
# The link text is read in runs, possessively: giving any of it back could never end it at a `](`.
_MDLINK = re.compile(
    r"\[(?:[^\[\]\n]++|\[[^\[\]\n]*+\])*+\]\([ \t]*(?:<([^<>\n]*)>|((?:[^\s()\\<]|\\.|\((?:[^\s()\\]|\\.)*\))+))"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?[ \t]*\)"
)
# A tag `#name` (Logseq reads it as a link to the page `name`; `#[[two words]]` is a wikilink already):
# `#` after a space or at a line's start, then no space, `#` or `[`; it ends at a space or punctuation.
# `links` keeps only those whose `#` starts the text or follows a space.
_TAG = re.compile(r"#([^\s#\[\],;!?\"'`()<>{}]+)")
_REFDEF = re.compile(r"^ {0,3}\[(?!\^)(?:[^\[\]\\\n]|\\.)+\]:[ \t]*(?:<([^<>\n]*)>|(\S+))", re.MULTILINE)
# Anything that may hide a link from a reader (code, math, comments) sends a body down the full scan.
_NOT_PLAIN = ("`", "~~~", "$", "<!--", "%%", "    ", "\t")


def _not_plain(body: str) -> bool:
    """Whether `body` holds one of `_NOT_PLAIN`. A one-character search is several times faster than a
    longer one, so each longer marker is looked for only when its first character is there."""
    return ("`" in body or "$" in body or "\t" in body or ("~" in body and "~~~" in body)
            or ("<" in body and "<!--" in body) or ("%" in body and "%%" in body) or "    " in body)
# A heading indented 1-3 spaces may sit inside a list item (then it is neither the title nor an anchor):
# only the block scan knows. (`_headings` finds such lines on its way; the tests hold it to this pattern.)
_INDENTED_HEADING = re.compile(r"^ {1,3}#", re.MULTILINE)


def scan_body(body: str, first_line: int) -> tuple[str | None, list[Link], tuple[str, ...]]:
    """The first ATX H1, every link, and the heading and block anchors, outside code, math and comments."""
    heads = _headings(body) if "#" in body else []
    if heads is None or _not_plain(body):  # an indented heading, code, math or a comment: read block by block
        return _scan_lines(body.split("\n"), first_line)
    # No code at all (most notes): a few searches over the whole text, no per-line loop.
    links = _links(body, first_line) if "[" in body or "#" in body else []
    title: str | None = None
    anchors: list[str] = []
    for hashes, text in heads:
        if title is None and hashes == 1:
            title = text
        anchors.append(text)
    if "^" in body:
        anchors.extend(_block_ids(body))
    return title, links, tuple(sorted(set(anchors)))


def _headings(text: str) -> list[tuple[int, str]] | None:
    """(level, text) of every ATX heading of `text` (a body with no code, so every such line is one):
    a line is tried only where its first `#` follows at most three spaces. None when a line's first `#`
    follows one to three spaces (`_INDENTED_HEADING`): such a heading may sit inside a list item (then it
    is neither the title nor an anchor), which only the block scan knows."""
    out: list[tuple[int, str]] = []
    at = text.find("#")
    while at != -1:
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if at - start <= 3 and text.startswith(" " * (at - start), start):
            if at > start:
                return None
            line = text[at:] if end == -1 else text[at:end]
            rest = line.lstrip("#")
            level = len(line) - len(rest)
            if level <= 6 and len(rest) > 1 and rest[0] in " \t" and "#" not in rest and "\r" not in rest:
                out.append((level, rest.strip()))  # no closing #s, no \r: what the pattern would give
            else:
                m = _ATX_LINE.match(text, start)
                if m is not None:
                    out.append((len(m.group(1)), m.group(2).strip()))
        if end == -1:
            break
        at = text.find("#", end + 1)
    return out


def _block_ids(text: str) -> list[str]:
    """`^id` at the end of a line, after a space or tab or alone on it."""
    return ["^" + m.group(1) for m in _BLOCK_ID.finditer(text) if m.start() == 0 or text[m.start() - 1] in " \t\n"]


# A note of more characters than this may hold many thousand links: its searches for each kind of link are merged
# as they run rather than sorted together once (which holds every link's position, text and kind at once, ~100
# bytes a link), and the texts its links repeat are kept once. A smaller note saves its ~1 µs.
_BIG = 1 << 16


def _links(text: str, first_line: int) -> list[Link]:
    """Every wikilink, embed, Markdown link and reference definition in `text` (prose only), in order.

    Each kind is found in order by its own search, and a link's line is counted on from the one before (the
    links of a line share its number): an 8 MiB note can hold 1.6 million links, and a number object of its
    own for each link's line, a copy of each repeated text and one sorted list of them all (`_BIG`) doubled
    what holding them costs."""
    streams: list[Iterator[tuple[int, str, str]]] = []
    if "[[" in text:
        streams.append(_wikilinks(text))
    if "(" in text and "](" in text:  # (a one-character search first: several times faster)
        streams.append(_markdown_links(text))
    if "#" in text:
        streams.append(_tags(text))
    if ":" in text and "]:" in text:
        streams.append(_refdefs(text))
    if not streams:
        return []
    big = len(text) > _BIG
    if len(streams) == 1:
        found: Iterable[tuple[int, str, str]] = streams[0]
    elif big:
        found = heapq.merge(*streams)
    else:
        found = sorted(itertools.chain.from_iterable(streams))  # (faster for the few links of most notes)
    same: dict[str, str] | None = {} if big else None  # one string for each link text a big note repeats
    out: list[Link] = []
    line, at = first_line, 0
    for pos, dest, kind in found:
        n = text.count("\n", at, pos)
        if n:
            line += n
        at = pos
        out.append(Link(dest if same is None else same.setdefault(dest, dest), line, kind))
    return out


def _wikilinks(text: str) -> Iterator[tuple[int, str, str]]:
    for m in _WIKILINK.finditer(text):
        at = m.start()
        if at and text[at - 1] == "!":
            yield at - 1, m.group(1), "e"
        else:
            yield at, m.group(1), "w"


def _markdown_links(text: str) -> Iterator[tuple[int, str, str]]:
    for m in _MDLINK.finditer(text):
        dest = m.group(1) if m.group(1) is not None else m.group(2)
        at = m.start()
        if dest and "[[" not in dest and not text.startswith("[[", at):
            if at and text[at - 1] == "!":
                yield at - 1, dest, "i"
            else:
                yield at, dest, "m"


def _tags(text: str) -> Iterator[tuple[int, str, str]]:
    at = text.find("#")
    tag: re.Match[str] | None
    while at != -1:  # most `#`s open headings: the pattern is tried only where a tag may start
        tag = _TAG.match(text, at) if at == 0 or text[at - 1] in " \t\n" else None
        if tag is not None:
            name = tag.group(1).rstrip(".:")
            if name:
                yield at, name, "t"
            at = tag.end()  # (a match holds no `#`: the next one is at or after its end)
        at = text.find("#", at + 1 if tag is None else at)


def _refdefs(text: str) -> Iterator[tuple[int, str, str]]:
    for m in _REFDEF.finditer(text):
        dest = m.group(1) if m.group(1) is not None else m.group(2)
        if dest:
            yield m.start(), dest, "r"


_FENCE_OPEN = re.compile(r" {0,3}(`{3,}(?=[^`]*$)|~{3,})")
_QUOTE = re.compile(r" {0,3}> ?")
_SPACES = re.compile(r" *")
_LIST_ITEM = re.compile(r"( {0,3})([-+*]|[0-9]{1,9}[.)])( *)")
_THEMATIC = re.compile(r" {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_SETEXT = re.compile(r" {0,3}(?:=+|-+)[ \t]*$")
_CODE_RUN = re.compile(r"`+")
# `$$` opens display math and the next `$$` closes it, wherever each stands: at the start of a line,
# or mid-line (`…functions$$`), across lines and blank lines. A `\$` is a literal dollar.
_MATH_MARK = re.compile(r"(?<!\\)\$\$")
_DISPLAY_MATH = re.compile(r"(?<!\\)\$\$.*?(?<!\\)\$\$", re.DOTALL)
_INLINE_MATH = re.compile(r"(?<![\\$])\$(?=[^\s$])(?:[^$\\]|\\.)*?(?<=[^\s\\])\$(?![0-9$])", re.DOTALL)
_COMMENTS = re.compile(r"<!--.*?-->|%%.*?%%", re.DOTALL)
# The first characters a line may open a block with (a quote, list item, heading, fence, thematic
# break, setext underline or comment): a line starting with anything else, and not with a space, is
# paragraph text (a `$$` line too: its math is paired with the others in `_math_after`).
_BLOCK_STARTS = frozenset(">-+*0123456789#`~_=<%")
_LIST_STARTS = frozenset("-+*0123456789")
# Containers (quotes, list items) open inside one another at most this deep, as markdown-it's `maxNesting`:
# deeper markers are read as the text of the innermost. Every open container is tested again by each line
# after it, so without a bound a note of 200 kB of `- - - …` (or a staircase of nested items) took minutes.
MAX_NESTING = 100


# A line's indentation and container markers (`>`, `-`, `1.`): where a tab counts as spaces to the next stop of 4.
_LEAD = re.compile(r"[ \t>+*\-0-9.)]*")


def _expand_lead(line: str) -> str:
    """`line` with the tabs of its indentation and container markers expanded to stops of 4, as CommonMark counts
    them for block structure; a tab after them is text, kept as written (a link may name `tab<TAB>name.md`)."""
    m = _LEAD.match(line)
    end = m.end() if m is not None else 0
    return line[:end].expandtabs(4) + line[end:] if end else line


def _indent(text: str) -> int:
    return len(text) - len(text.lstrip(" "))


class _Container:
    __slots__ = ("quote", "width")

    def __init__(self, quote: bool, width: int) -> None:
        self.quote, self.width = quote, width  # a blockquote, or a list item whose content starts `width` in


def prose(body: str) -> list[str]:
    """The text of `body` that can hold links, one string per paragraph or heading, code spans, math
    and comments blanked: what the link scan reads (tests hold it to the CommonMark spec's examples)."""
    sink: list[str] = []
    _scan_lines(body.split("\n"), 1, sink)
    return sink


def _scan_lines(lines: list[str], first_line: int,
                sink: list[str] | None = None) -> tuple[str | None, list[Link], tuple[str, ...]]:
    """The block structure CommonMark gives these lines, as far as links care: blockquotes (callouts)
    and list items hold blocks; fenced code (at any indentation inside them), indented code, HTML
    comment blocks and `%%` comments hold no links. Paragraphs and headings are then read inline (code
    spans, math, comments blanked) for their links. Display math runs from a `$$` to the next one, as
    Obsidian pairs them: once a paragraph opens one (at a line's start or mid-line), every line up to
    the closing `$$` is part of that paragraph, blank lines and block starts included."""
    title: str | None = None
    anchors: list[str] = []
    stack: list[_Container] = []
    fence: tuple[str, int, int] | None = None  # (char, length, depth) of the open fenced code block
    closer: str | None = None  # "-->" or "%%": the end of an open comment block
    math = False  # the open paragraph has opened a `$$` that no `$$` has closed yet
    para: list[tuple[int, str]] = []  # the open paragraph's lines: (index into `lines`, text)
    # Each line's prose (code spans, math and comments blanked), "" for a line that holds none: links
    # and block ids are then found by one search over the whole, with their line numbers as they stand
    # (none of those patterns crosses a line break), instead of one search per paragraph.
    masked = [""] * len(lines)

    def flush() -> None:
        nonlocal math
        if para:
            _inline(para, masked, sink)
            para.clear()
        math = False

    for i, raw in enumerate(lines):
        line = raw.rstrip("\r")
        if "\t" in line:
            line = _expand_lead(line)
        rest = line
        matched = 0
        if stack:  # which open containers does this line continue? By position: no copy of the line per container
            pos, spaces, blank_from = 0, -1, len(line.rstrip())  # spaces: leading spaces at pos, once counted
            for c in stack:
                if c.quote:
                    q = _QUOTE.match(line, pos)
                    if q is None:
                        break
                    pos, spaces = q.end(), -1
                elif pos >= blank_from:
                    pos = len(line)
                else:
                    if spaces < 0:
                        spaces = _SPACES.match(line, pos).end() - pos  # type: ignore[union-attr]
                    if spaces < c.width:
                        break
                    pos, spaces = pos + c.width, spaces - c.width
                matched += 1
            rest = line[pos:] if pos else line
        if matched < len(stack):
            lazy = para and fence is None and closer is None and rest.strip() and not _starts_block(rest)
            if lazy:
                para.append((i, rest))
                if "$$" in rest:
                    math = _math_after(rest, math)
                continue
            del stack[matched:]
            flush()
            if fence is not None and fence[2] > matched:
                fence = None
        if fence is not None:
            m = _FENCE_OPEN.match(rest) if fence[0] in rest[:4] else None  # ` {0,3}` then the fence
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= fence[1] and not rest[m.end():].strip():
                fence = None
            continue
        if closer is not None:
            if closer in rest:
                closer = None
            continue
        if math:  # inside `$$` math: the paragraph goes on to the closing `$$`, whatever the lines hold
            para.append((i, rest))
            if "$$" in rest:
                math = _math_after(rest, True)
            continue
        if not rest.strip():
            if para:
                flush()
            continue
        plain = False
        tails: dict[str, int] = {}  # marker -> where the line's last run of that marker, spaces and tabs starts
        while rest:  # new containers opened on this line
            if rest[0] not in _BLOCK_STARTS and not rest[0].isspace():
                plain = True  # most lines: text that opens no block, so paragraph text
                break
            if len(stack) >= MAX_NESTING:
                break
            lead = rest.lstrip(" ")
            if len(rest) - len(lead) >= 4 or not lead:
                break
            if lead[0] == ">":
                q = _QUOTE.match(rest)
                if q is None:
                    break  # (cannot happen: `>` after at most 3 spaces is a quote)
                flush()
                stack.append(_Container(True, 0))
                rest = rest[q.end():]
                continue
            if lead[0] not in _LIST_STARTS:
                break
            m = _LIST_ITEM.match(rest)
            if m is None:
                break
            mark = m.group(2)
            if mark in ("-", "*"):  # a thematic break (`- - -`) is no list item: the rest of the line is that run
                start = tails.get(mark)
                if start is None:
                    start = tails[mark] = len(line.rstrip(mark + " \t"))
                if len(line) - len(rest) >= start and _THEMATIC.match(rest):
                    break
            after = rest[m.end():]
            empty = not after.strip()
            if para and (empty or (m.group(2)[0].isdigit() and m.group(2)[:-1] != "1")):
                break  # cannot interrupt a paragraph
            if not m.group(3) and not empty:
                break  # `-x` is text
            spaces = len(m.group(3))
            width = len(m.group(1)) + len(m.group(2)) + (1 if empty or spaces > 4 else spaces)
            flush()
            stack.append(_Container(False, width))
            rest = rest[width:] if len(rest) >= width else ""
        if plain:
            para.append((i, rest))
            if "$$" in rest:
                math = _math_after(rest, False)
            continue
        if not rest.strip():
            flush()
            continue
        if _indent(rest) >= 4:
            if not para:
                continue  # indented code
            para.append((i, rest))
            continue
        m = _FENCE_OPEN.match(rest)
        if m is not None:
            flush()
            fence = (m.group(1)[0], len(m.group(1)), len(stack))
            continue
        body = rest.lstrip(" ")
        if body.startswith(("<!--", "%%")):
            flush()
            mark = "-->" if body.startswith("<") else body[:2]
            if mark not in body[len(mark) if mark != "-->" else 4:]:
                closer = mark
            continue
        h = _ATX.match(rest)
        if h is not None:
            flush()
            text = h.group(2).strip()
            if not stack:  # as the whole-text path: headings of the top level (not in a quote or list)
                anchors.append(text)
                if title is None and len(h.group(1)) == 1:
                    title = text
            para.append((i, rest))
            flush()
            continue
        if para and _SETEXT.match(rest):
            flush()
            continue
        if _THEMATIC.match(rest):
            flush()
            continue
        para.append((i, rest))
        if "$$" in rest:
            math = _math_after(rest, False)
    flush()
    doc = "\n".join(masked)
    links = _links(doc, first_line) if "[" in doc or "#" in doc else []
    if "^" in doc:
        anchors.extend(_block_ids(doc))
    return title, links, tuple(sorted(set(anchors)))


def _math_after(line: str, inside: bool) -> bool:
    """Whether a `$$` math region is open after `line`, given whether it was open before it: each `$$`
    opens or closes one (one in a code span outside math does neither)."""
    text = _blank_code_spans(line) if not inside and "`" in line else line
    return inside ^ (len(_MATH_MARK.findall(text)) % 2 == 1)


def _starts_block(text: str) -> bool:
    """Whether a line that no open container continues starts a block of its own (not a lazy line):
    a quote, fence, heading, thematic break or list item, told apart by their first character."""
    body = text.lstrip(" ")
    if len(text) - len(body) >= 4 or not body:
        return False
    c = body[0]
    if c == ">":
        return True
    if c in "`~":
        return _FENCE_OPEN.match(text) is not None
    if c == "#":
        return _ATX.match(text) is not None
    if c in "-*_" and _THEMATIC.match(text):
        return True
    if c in _LIST_STARTS:
        # A list item (a marker then a space, or alone): `- a` after an item's paragraph is the next
        # item, not a lazy line of that paragraph (so a fence it opens is code).
        m = _LIST_ITEM.match(text)
        return m is not None and (bool(m.group(3)) or not text[m.end():])
    return False


def _inline(para: list[tuple[int, str]], masked: list[str], sink: list[str] | None) -> None:
    """One paragraph's text, with code spans, math and comments blanked, into `masked` by line."""
    text = para[0][1] if len(para) == 1 else "\n".join(t for _, t in para)
    blanked = text
    if "`" in blanked:
        # Backticks inside a wikilink are the link's text (`[[Note#`code` heading]]`), as the editors read it.
        blanked = _blank_code_spans(blanked, [m.span() for m in _WIKILINK.finditer(text)] if "[[" in text else ())
    if "$" in blanked:
        blanked = _DISPLAY_MATH.sub(_blank, blanked)
        unclosed = _MATH_MARK.search(blanked) if "$$" in blanked else None
        if unclosed is not None:  # a `$$` no other closes: math to the end (the paragraph ran on to it)
            blanked = blanked[:unclosed.start()] + _spaces(blanked[unclosed.start():])
        blanked = _INLINE_MATH.sub(_blank, blanked)
    if "<!--" in blanked or "%%" in blanked:
        blanked = _COMMENTS.sub(_blank, blanked)
    if sink is not None:
        sink.append(blanked)
    if "[" not in blanked and "^" not in blanked and "#" not in blanked:
        return  # no link, tag or block id
    if blanked is text:
        for i, t in para:
            masked[i] = t
    else:
        for (i, _), t in zip(para, blanked.split("\n"), strict=True):
            masked[i] = t


_NOT_NEWLINE = re.compile(r"[^\n]")


def _spaces(text: str) -> str:
    """`text` as spaces, its line breaks kept (so offsets and line numbers stay)."""
    return _NOT_NEWLINE.sub(" ", text) if "\n" in text else " " * len(text)


def _blank(m: re.Match[str]) -> str:
    return _spaces(m.group(0))


def _blank_code_spans(text: str, keep: Sequence[tuple[int, int]] = ()) -> str:
    """CommonMark code spans: a run of N backticks up to the next run of exactly N; those inside one of the `keep`
    spans (the wikilinks) are left as they are."""
    runs = list(_CODE_RUN.finditer(text))
    out: list[str] = []
    at = 0
    i = 0
    while i < len(runs):
        opener = runs[i]
        if opener.start() > 0 and text[opener.start() - 1] == "\\" and _escaped(text, opener.start() - 1):
            # An escaped backtick is literal; the rest of the run may still open a span.
            i += 1
            continue
        close = next((j for j in range(i + 1, len(runs)) if len(runs[j].group(0)) == len(opener.group(0))), None)
        if close is None:
            i += 1
            continue
        end = runs[close].end()
        i = close + 1
        if keep and any(start < opener.start() and end <= stop for start, stop in keep):
            continue
        out.append(text[at:opener.start()])
        out.append(_spaces(text[opener.start():end]))
        at = end
    out.append(text[at:])
    return "".join(out)


def _escaped(text: str, backslash: int) -> bool:
    """Whether the backslash at `backslash` is itself unescaped (an odd run of backslashes ends there)."""
    n = 0
    while backslash - n >= 0 and text[backslash - n] == "\\":
        n += 1
    return n % 2 == 1


IGNORE_MARK = "vivary-ignore"
_IGNORE_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_IGNORE = re.compile(r"<!--\s*vivary-ignore\s+([^>]*?)\s*-->")
_IGNORE_CODE = re.compile(r"^[EW][0-9]{3}$")


def ignore_comments(body: str, first_line: int) -> tuple[Ignore, ...]:
    """`<!-- vivary-ignore CODE... -->` comments outside fenced code (codes split by spaces or commas,
    case-insensitive; anything that is not a code is skipped). Each silences its codes on its own line
    and, when nothing else is on that line, on the next line too (a comment above a list item)."""
    out: list[Ignore] = []
    fence: str | None = None
    for i, raw in enumerate(body.split("\n")):
        line = raw.rstrip("\r")
        m = _IGNORE_FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        if IGNORE_MARK not in line:
            continue
        for c in _IGNORE.finditer(line):
            codes = tuple(dict.fromkeys(t.upper() for t in re.split(r"[\s,]+", c.group(1))
                                        if _IGNORE_CODE.match(t.upper())))
            if not codes:
                continue
            out.append(Ignore(first_line + i, codes))
            if not _IGNORE.sub("", line).strip():
                out.append(Ignore(first_line + i + 1, codes))
    return tuple(out)


# Git's merge conflict markers: seven characters at a line's start, as Git writes them by default (a
# `conflict-marker-size` attribute, which is read by path, is not: a note is a function of its bytes alone).
CONFLICT_MARK = "<<<<<<<"
_MARKS = {"<": "<<<<<<<", "|": "|||||||", "=": "=======", ">": ">>>>>>>"}
# The only lines that can open or close a conflict or fenced code: the scan jumps from one to the next.
_CONFLICT_OR_FENCE = re.compile(r"^(?:<{7}|\|{7}|={7}|>{7}| {0,3}(?:`{3}|~{3}))", re.MULTILINE)
# A note lists at most this many conflicts; one more is where they stop being listed (`check.merge_conflicts`). An
# 8 MiB note of three-line conflicts is 350,000 of them: as many findings (80 MB of JSON) that no one reads.
MAX_CONFLICTS = 1_000


def _mark(line: str) -> str:
    """Which conflict marker `line` is (its first character), or "": `<<<<<<<`, `|||||||` and `>>>>>>>` alone
    or followed by a space and a label, `=======` alone on its line."""
    mark = _MARKS.get(line[:1])
    if mark is None or not line.startswith(mark):
        return ""
    rest = line[7:]
    if mark[0] == "=":
        return "=" if not rest.strip(" \t") else ""
    return mark[0] if not rest or rest[0] == " " else ""


def conflict_blocks(body: str, first_line: int) -> tuple[Conflict, ...]:
    """The merge conflicts Git left in `body` (at most `MAX_CONFLICTS` + 1), as `git diff --check` finds their
    markers but each conflict whole: a `<<<<<<<` line, later a `=======` line (after a `|||||||` line of the base,
    in diff3 and zdiff3 style), later a `>>>>>>>` line. A lone `=======` (a Setext heading's underline) or
    `>>>>>>>` is no conflict; nor are markers in fenced code (a note showing what Git writes) or indented
    (indented code: Git writes them at a line's start). The two sides are alternatives, not text: only the
    first (`HEAD`'s) opens or closes fenced code, so after a conflict over a fence's opening line the code is
    as that side has it."""
    out: list[Conflict] = []
    fence: tuple[str, int] | None = None  # (character, length) of the open fenced code block
    opened = -1  # the `<<<<<<<` line of the open conflict, -1 when none is open
    side = 0  # where the open conflict is: 0 the first side, 1 the base (diff3), 2 the second side
    i, at = 0, 0  # the 0-based line at offset `at`
    for m in _CONFLICT_OR_FENCE.finditer(body):
        start = m.start()
        i += body.count("\n", at, start)
        at = start
        end = body.find("\n", start)
        line = body[start:] if end == -1 else body[start:end]
        if line.endswith("\r"):
            line = line[:-1]
        mark = _mark(line) if line[0] in _MARKS else ""
        if opened >= 0:
            if mark == "<":  # a new conflict: the one open had no `=======` and `>>>>>>>` of its own
                opened, side, fence = i, 0, None
            elif mark == "|" and side == 0:
                side = 1
            elif mark == "=" and side < 2:
                side = 2
            elif mark == ">":
                if side == 2:
                    out.append(Conflict(first_line + opened, first_line + i))
                    if len(out) > MAX_CONFLICTS:
                        break
                else:
                    fence = None  # no conflict after all: its lines are as they were before it
                opened = -1
            elif side == 0:
                fence = _fence_after(line, fence)
            continue
        if mark == "<" and fence is None:
            opened, side = i, 0
            continue
        fence = _fence_after(line, fence)
    return tuple(out)


def _fence_after(line: str, fence: tuple[str, int] | None) -> tuple[str, int] | None:
    """The fenced code block open after `line`, given the one open before it (CommonMark's fences, at most three
    spaces in: a closing fence as long as its opening or longer, with nothing after it)."""
    m = _FENCE_OPEN.match(line)
    if m is None:
        return fence
    run = m.group(1)
    if fence is None:
        return run[0], len(run)
    return None if run[0] == fence[0] and len(run) >= fence[1] and not line[m.end():].strip() else fence
