"""The blob parser: frontmatter, key lines, titles, wikilinks, and bad bytes."""

from __future__ import annotations

import itertools

import pytest
import yaml

from vivary_git import body as note_body
from vivary_git import parse
from vivary_git.parse import parse_blob

FAST_CASES = [
    "a: b", "a: [x, y, z]", "a: true", "a: 1", "a: 1.5", "a: null", "a: ~", "a: 2026-11-30", "a: [1, true, x]",
    "a: hello world", "a: http://x.com/a#b", "a: x #c", "a: 'q'", "a: b: c", "a: [a, [b]]", "a: -x", "a: - x",
    "a:b", "a: x\nb: y", "a: yes", "a: Off", "a: 0x10", "a: 1_000", "a: .inf", "a: [ ]", "a: []", "a: x,y",
    "a: %x", "true: x", "a: @x", "a: [a b, c]", "a: [a,b]", "a: 12:30", "a: 1:20", "a: 010", "a: +5",
    "a: x\r", "a: [x, ]", "a: [x,,y]", "a: é", "a: [é]", "a: <<", "a: =", "a: x\n# c\nb: 2", "a: !x", "a: ? x",
    "a: x]", "a: [.nan]", "a: 1e3", "a: [x]y", "a: a#b", "a: a #b", "a: 'a' b", "on: x", "a.b-c_d: 1", "-a: 1",
    "a: nope", "a: Nullx", "a: ~x", "a: tRuE", "a: fals", "a: +x", "a: .x", "a: <x", "a: =x", "a: x-1:2", "a: 1-2",
    "a: [nope, Nul, tr, fa, .x, =x]", "# a\tb\na: c", "a: b\tc", "a: x\\ud83d\\ude00", "a: [\\ud83d]",
]


# The cases the fast path hands to PyYAML: anything it is not sure to read as PyYAML would. Each case
# asserts one side: a case moves from here when the fast path learns to read it (and then must agree).
DECLINED = {
    "a: 1.5", "a: x #c", "a: 'q'", "a: b: c", "a: [a, [b]]", "a: -x", "a: - x", "a:b", "a: x,y", "a: %x",
    "true: x", "a: @x", "a: [x, ]", "a: [x,,y]", "a: <<", "a: =", "a: !x", "a: ? x", "a: x]", "a: 1e3",
    "a: [x]y", "a: a #b", "a: 'a' b", "-a: 1", "a: b\tc",
}


@pytest.mark.parametrize("text", FAST_CASES)
def test_fast_frontmatter_agrees_with_pyyaml(text: str) -> None:
    """The fast path may decline a document, but what it accepts must equal PyYAML's reading."""
    fast = parse._fast_frontmatter(text, 2)
    if text in DECLINED:
        assert fast is None, "the fast path now reads this case: move it out of DECLINED"
    else:
        assert fast is not None, "the fast path declines this case: add it to DECLINED"
        full = yaml.load(text, Loader=parse.loader_class())
        assert fast[0] == full
        assert all(type(fast[0][k]) is type(full[k]) for k in full)


def test_scalars_resolve_as_the_plain_pattern_and_resolvers_say() -> None:
    """`_resolve_scalar` takes shortcuts (a scalar without `:` or `#`, one whose first character no resolver but
    the string's takes): every short text over the characters that matter reads as the full rules read it."""
    chars = "aZ0- _.:#,[]{}&*!|>'\"%@`?~<=+tTfFnNeE\t/\\é"
    texts = ["", "~", "null", "Null", "NULL", "<<", "=", "true", "False", ".inf", "-.5", "1_0", "0x10", "1:30"]
    texts += ["".join(t) for n in (1, 2, 3) for t in itertools.product(chars, repeat=n)]
    for text in texts:
        want: tuple[bool, object] = (False, None)
        if parse._FAST_PLAIN.fullmatch(text):
            kind = parse.plain_kind(text)
            want = {"str": (True, text), "null": (True, None), "bool": (True, text[0] in "tT"),
                    "int": (True, int(text) if kind == "int" else None)}.get(kind, (False, None))
        got = parse._resolve_scalar(text)
        assert got == want and type(got[1]) is type(want[1]), text


def test_declined_cases_are_all_cases() -> None:
    assert set(FAST_CASES) >= DECLINED


def test_fast_path_covers_the_common_shapes() -> None:
    assert parse._fast_frontmatter("status: active\ntags: [a, b]\ncount: 3\ndraft: false", 2) == (
        {"status": "active", "tags": ["a", "b"], "count": 3, "draft": False},
        {"status": 2, "tags": 3, "count": 4, "draft": 5},
    )


def test_dates_stay_strings_and_bad_dates_do_not_crash() -> None:
    note = parse_blob(b"---\ndate: 2026-13-45\nwhen: 2026-11-30 10:00\n---\n")
    assert note.fields == {"date": "2026-13-45", "when": "2026-11-30 10:00"}
    assert note.problem is None


def test_title_is_first_h1_outside_code_fences() -> None:
    note = parse_blob(b"---\na: 1\n---\n```\n# Not this\n```\n## H2\n# Real Title ##\n")
    assert note.title == "Real Title"


def test_headings_of_a_note_without_code() -> None:
    # The common note (no code, math or indentation) is read without the block scan: the same
    # headings, title and anchors as CommonMark, whichever line they sit on.
    body = b"## Intro\ntext # not\n####### seven\n#nospace\n# Title ##\n# Second\n   ### Deep ###\r\n"
    note = parse_blob(b"---\na: 1\n---\n" + body)
    assert note.title == "Title"
    assert note.anchors == ("Deep", "Intro", "Second", "Title")
    assert note.anchors == parse_blob(body + b"\n```\ncode\n```\n").anchors  # the block scan agrees


def test_wikilinks_skip_code_and_keep_lines() -> None:
    note = parse_blob(b"# T\n\nSee [[a.b.c]] and `[[code]]`.\n~~~\n[[fenced]]\n~~~\n![[embed#x]] [[l|t]]\n")
    assert [(link.text, link.line) for link in note.links] == [("a.b.c", 3), ("embed#x", 7), ("l|t", 7)]


def test_bom_and_crlf() -> None:
    note = parse_blob(b"\xef\xbb\xbf---\r\nstatus: ok\r\n---\r\n# Title\r\n")
    assert note.fields == {"status": "ok"} and note.title == "Title" and note.key_lines == {"status": 2}


@pytest.mark.parametrize("sep", ["\x85", "\u2028", "\u2029"])
def test_nel_ls_ps_are_characters_not_line_breaks(sep: str) -> None:
    """YAML 1.2 (js-yaml: Obsidian), editors and GitHub do not break lines at NEL, LS or PS; PyYAML (YAML 1.1)
    does. They are read as characters: kept in strings, a comment holding one stays a comment, and no key or
    E001 after one moves to another line."""
    quoted = parse_blob(f'---\nowner: "te{sep}am"\n\'k{sep}\': [\'v{sep}\', x]\ndepends: [ghost]\n---\n'.encode())
    assert quoted.problem is None
    assert quoted.fields == {"owner": f"te{sep}am", f"k{sep}": [f"v{sep}", "x"], "depends": ["ghost"]}
    assert quoted.key_lines == {"owner": 2, f"k{sep}": 3, "depends": 4}
    comment = parse_blob(f"---\nowner: team # c{sep}omment\ndepends: [x]\n---\n".encode())
    assert (comment.problem, comment.fields, comment.key_lines) == (
        None, {"owner": "team", "depends": ["x"]}, {"owner": 2, "depends": 3})
    for text, line in ((f'---\nowner: "a{sep}b"\nx: @\n---\n', 3), (f'---\no: "a{sep}{sep}b"\nbad: [1\nc: 2\n---\n', 3),
                       (f'---\no: "a{sep}b"\no: 2\n---\n', 3)):
        problem = parse_blob(text.encode()).problem
        assert problem is not None and (problem.code, problem.line) == ("E001", line), (text, problem)


def test_placeholders_for_nel_ls_ps_never_change_a_value() -> None:
    """The stand-in a line separator is read through is a character the text neither holds nor writes as an
    escape: those come back as written."""
    note = parse_blob('---\na: "\\ue000 \ue001 \\U0000E002 \u2028"\n---\n'.encode())
    assert note.problem is None and note.fields == {"a": "\ue000 \ue001 \ue002 \u2028"}


@pytest.mark.parametrize(("text", "line", "column"), [
    ('---\na: "x\ry"\nb: 1\nc: @\n---\n', 2, 6),  # in a quoted value
    ("---\ntitle: a\rb: c\n---\n", 2, 9),  # libyaml read two keys
    ("---\ntitle: te\ram\n---\n", 2, 10),  # the fast path read 'te\ram', libyaml 'te am'
    ("---\na: 1\n# c\rd: 2\n---\n", 3, 4),  # in a comment: YAML would read a key after it
    ("---\r\na: 1\r\r\n---\r\n", 2, 5),  # in a CRLF file
    ("---\ntitle: a\ntags: [x]\r---\nbody\n", 3, 10),  # before the closing `---`: not "never closed"
    ("---\ntitle: a\rtags: [x]\r---\r\nbody\n", 2, 9),
])
def test_a_lone_cr_in_frontmatter_is_e001_at_its_line(text: str, line: int, column: int) -> None:
    """Lines end at "\n" for Git, GitHub and editors; YAML (libyaml, js-yaml) and tropo also end one at a lone CR:
    the same frontmatter reads as one line here and two there, and the fast and full paths read it apart. It is
    E001 on its line, naming the lone CR, its column and the fix, on both paths, wherever it stands."""
    problem = parse_blob(text.encode()).problem
    assert problem == parse.ParseProblem(
        "E001", line, f"frontmatter holds a lone CR (an old Mac line end) in column {column}, in a file whose lines "
        "end with LF: YAML would end a line there, Git and editors do not; convert its line ends to LF "
        "(`mac2unix FILE`, or the editor's line-ending setting)"), problem
    split = parse._split_frontmatter(text)
    assert split is not None
    if split[0] is not None:
        assert parse._fast_frontmatter(split[0], 2) is None  # (it said nothing, and read `te\ram` as written)


def test_crlf_and_an_unclosed_block_with_a_lone_cr_are_as_before() -> None:
    assert parse_blob(b"---\r\na: x\r\nb: 1\r\n---\r\n").fields == {"a": "x", "b": 1}
    assert parse._fast_frontmatter("a: x\r\nb: 1\r", 2) == ({"a": "x", "b": 1}, {"a": 2, "b": 3})
    problem = parse_blob(b"---\na: 1\rb: 2\nbody\n").problem  # no `---` after it either: never closed
    assert problem is not None and (problem.line, "never closed" in problem.message) == (1, True)


def test_a_control_character_is_named_at_its_line_and_column() -> None:
    """PyYAML names a control character by an offset in bytes from the frontmatter's start, after a line break
    and `in "<unicode string>"`: the finding says which character, on the file's line, in which column."""
    problem = parse_blob(b"---\nowner: team # c\x0comment\ndepends: [x]\n---\n").problem
    assert problem == parse.ParseProblem("E001", 2, "frontmatter is not valid YAML: control character U+000C (form "
                                                    "feed) in column 16 is not allowed in YAML; remove it")
    later = parse_blob("---\nowner: \"é\u2028\"\nnote: 'ü \x1b[31m'\n---\n".encode()).problem
    assert later is not None and later.line == 3 and "U+001B (escape) in column 10" in later.message, later
    # The fast path reads no character YAML refuses: the same E001 whichever path a note takes.
    for text in ("---\na: te\x0bam\n---\n", "---\na: [x, y\x7f]\n---\n", "---\n# c\x1b\na: 1\n---\n",
                 "---\na: \ufffe\n---\n"):
        got = parse_blob(text.encode()).problem
        assert got is not None and (got.code, got.line) == ("E001", 2), (text, got)
        assert "is not allowed in YAML; remove it" in got.message, got


@pytest.mark.parametrize("yaml_text", [
    "a: 'x\x0cy'", "a: \"\\q\"", "a: *nope", "a: &x 1\nb: &x 2", "? [a]\n: b", "a: !foo!bar x", "a: [1", "a: {b: 1",
    "%YAML 1.1\n---\na: 1", "a: b: c", "a: !!python/object:os.system x", "a: !!map [a]", "- a",
])
def test_e001_says_what_in_plain_words_on_one_line(yaml_text: str) -> None:
    problem = parse_blob(f"---\n{yaml_text}\n---\n".encode()).problem
    assert problem is not None and problem.code == "E001", problem
    said = problem.message
    assert "\n" not in said and "<unicode string>" not in said and "position" not in said and "#x" not in said, said
    assert len(said.removeprefix("frontmatter is not valid YAML: ")) > 10, said


def test_aliases_and_anchors_libyaml_does_not_name_are_named() -> None:
    assert parse_blob(b"---\na: 1\nb: *nope\n---\n").problem == parse.ParseProblem(
        "E001", 3, "frontmatter is not valid YAML: found undefined alias '*nope': define the anchor `&nope` before "
        "it, or quote the value")
    assert parse_blob(b"---\na: &x 1\nb: &x 2\n---\n").problem == parse.ParseProblem(
        "E001", 3, "frontmatter is not valid YAML: found duplicate anchor (first on line 2): rename one of the two "
        "anchors")


def test_merge_conflict_markers_in_frontmatter_are_named_at_their_line() -> None:
    said = ("merge conflict markers left in the frontmatter (line {}): resolve the conflict (keep one side, delete "
            "the `<<<<<<<`, `=======` and `>>>>>>>` lines)")
    for text, line in (("---\nowner: t\n<<<<<<< HEAD\ndepends: [a]\n=======\ndepends: [b]\n>>>>>>> branch\n---\n", 3),
                       ("---\ntags:\n<<<<<<< HEAD\n  - a\n||||||| base\n=======\n  - b\n>>>>>>> x\n---\n", 3),
                       ("---\r\na: 1\r\n=======\r\nb: 2\r\n>>>>>>> x\r\n---\r\n", 3)):
        assert parse_blob(text.encode()).problem == parse.ParseProblem("E001", line, said.format(line)), text
    start = parse_blob(b"<<<<<<< HEAD\n---\na: 1\n---\n=======\n---\na: 2\n---\n>>>>>>> x\n").problem
    assert start is not None and (start.code, start.line) == ("E001", 1) and "merge conflict markers" in start.message
    assert parse_blob(b"---\na: '<<<<<<< not a marker'\n---\n").problem is None


def test_frontmatter_where_it_is_not_read_is_named_not_missing() -> None:
    """Frontmatter after blank lines (tropo and Obsidian do not read it either), or with old Mac line ends (a lone
    CR) in a file whose other lines end with LF, is not read: E001 says so and how to fix it, rather than each
    required field being reported missing."""
    blank = parse_blob(b"\n\n---\nowner: team\n---\n# T\n").problem
    assert blank == parse.ParseProblem("E001", 1, "frontmatter not recognised: its opening `---` is on line 3, and "
                                                  "frontmatter is read only when `---` is the file's first line; "
                                                  "remove the blank lines above it")
    assert parse_blob(b" \r\n---\r\nowner: team\r\n---\r\n").problem == parse.ParseProblem(
        "E001", 1, blank.message.replace("line 3", "line 2"))
    cr = parse_blob(b"---\rowner: team\rdepends: [x]\r---\r# T\r\nmore\n").problem
    assert cr is not None and (cr.code, cr.line) == ("E001", 1) and "lone CR" in cr.message and "LF" in cr.message
    # Old Mac line ends throughout: read as line ends, as tropo (universal newlines) and js-yaml read them.
    mac = parse_blob(b"---\rowner: team\rdepends: [x]\r---\r# T\r\r[[y]]\r")
    assert (mac.problem, mac.fields, mac.key_lines, mac.title) == (
        None, {"owner": "team", "depends": ["x"]}, {"owner": 2, "depends": 3}, "T")
    assert [(link.text, link.line) for link in mac.links] == [("y", 7)]
    for text in (b"\n---\n\nA paragraph.\n---\n", b"\n# T\n", b"\n---\n", b"<<<<<<< x\n# T\n"):
        assert parse_blob(text).problem is None, text  # a thematic break, no frontmatter at all


@pytest.mark.parametrize("sep", ["\x85", "\u2028", "\u2029", "\r", "\x0b", "\x0c", "\x1c"])
def test_body_links_after_a_separator_keep_githubs_line(sep: str) -> None:
    for text in (f"a{sep}b [[x]]\n\n[[y]]\n", f"a{sep}b [[x]]\n\n`c`\n[[y]]\n"):  # whole-text scan, line scan
        note = parse_blob(f"---\na: 1\n---\n{text}".encode())
        assert [(link.text, link.line) for link in note.links][::2] == [("x", 4), ("y", 6 + text.count("`c`"))][::2]


@pytest.mark.parametrize("data,code,line", [
    (b"---\na: [1\nb: 2\n---\n", "E001", 2),
    (b"---\na: 1\na: 2\n---\n", "E001", 3),
    (b"---\na:\n\t- x\n---\n", "E001", 3),
    (b"---\n- a\n---\n", "E001", 2),
    (b"---\njust text\n---\n", "E001", 2),
    (b"---\na: 1\n", "E001", 1),
    (b"ok\n\xff\n", "E000", 2),
    (b"\x00\x01binary", "E000", 1),
])
def test_problems_have_codes_and_lines(data: bytes, code: str, line: int) -> None:
    problem = parse_blob(data).problem
    assert problem is not None and (problem.code, problem.line) == (code, line)


def test_alias_bombs_stay_bounded() -> None:
    bomb = b"---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n---\n"
    note = parse_blob(bomb)
    assert note.problem is None and len(note.fields["d"]) == 9


BODIES = [
    "# T\n[[a]] x [[b|c]]\n\n[[d#e]]", "no title [[x]]\n# Later\n", "   # Indented three\n", "    # four spaces\n",
    "#NoSpace\n# Yes\r\n", "# Closed ##  \r\n[[a\rb]]", "#\ttab title\t#\n", "[[x]][[y]]\n\n\n[[z]]\r\n",
    "## H2\n# H1 #\n", "# a\rb\n", "[[ ]] [[a\n]] [[[b]]]", "", "\n\n# t", "# é ü\n[[ü]]", "[[a|b|c]]\r\r\n# t\r\r",
    "[a](b.md) ![i](c%20d.png) [e](<f g.md>)\n\n[r]: h.md 'T'\n", "> quote [[q]]\n- list [[l]]\n  1. [[n]]\n",
    "## Head\npara ^block-1\n### Sub ###\n", "[[p]](q) [x]([[y]])\n", "# T\n> # not a title\n",
    "- item\n  # a heading inside the item: not the title\n", "1. x\n   # H1 in the item\n# Title\n",
]


@pytest.mark.parametrize("body", BODIES)
def test_whole_text_scan_equals_the_line_scan(body: str) -> None:
    """Bodies without code take a whole-text path; it must read titles and links as the line scan does."""
    assert "`" not in body and "~~~" not in body
    fast = note_body.scan_body(body, 5)
    slow = note_body._scan_lines(body.split("\n"), 5)
    assert fast == slow


SCALARS = [
    "", "~", "null", "Null", "NULL", "nULL", "true", "True", "TRUE", "tRUE", "false", "yes", "on", "off", "0", "-0",
    "+5", "010", "1_000", "1__0", "_1", "1_", "0x10", "0o7", "1:30", "1.5", "-.5", ".5", "5.", "1e3", "1E-3", "1.5e+3",
    ".inf", "-.inf", ".nan", "<<", "=", "==", "2026-11-30", "2026-11-30T10:00:00Z", "x", "-x", "a b", "1 2", "١٢",
]


@pytest.mark.parametrize("text", SCALARS)
def test_plain_kind_is_the_loaders_resolution(text: str) -> None:
    """The fast path resolves scalars without PyYAML; it must pick the tag our PyYAML loader picks."""
    tag = parse.loader_class()("").resolve(yaml.ScalarNode, text, (True, False)).rsplit(":", 1)[-1]
    kind = parse.plain_kind(text)
    assert (kind if kind != "yaml" else {"<<": "merge", "=": "value"}[text]) == tag


def _laughs(levels: int, width: int = 9) -> bytes:
    """A "billion laughs" frontmatter: `levels` anchors, each a list of `width` aliases of the one before."""
    lines = ["---", "a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * width) + "]")
    return ("\n".join([*lines, "---", "# Laughs", ""])).encode()


def test_alias_bomb_is_e001_on_the_key_that_crosses_the_limit() -> None:
    note = parse_blob(_laughs(9))
    assert note.problem is not None and note.problem.code == "E001"
    # a0..a3 expand to 7,380 values; a4 alone to 66,430: the limit is crossed in a4, on line 6.
    assert note.problem.line == 6
    assert "10,000 values" in note.problem.message and "a4" in note.problem.message
    assert note.fields == {} and note.title == "Laughs"


def test_frontmatter_of_many_values_without_aliases_is_not_blamed_on_aliases() -> None:
    """Over 10,000 values written out (`k: [[link]]` is a list in a list: three values a key) crosses the same
    bound as an alias bomb, but "write the values out" is no fix for values already written out."""
    data = ("---\n" + "".join(f"k{i}: [[z{i}]]\n" for i in range(4000)) + "---\n# Many\n").encode()
    note = parse_blob(data)
    assert note.problem is not None and note.problem.code == "E001" and note.problem.line == 3335
    assert note.problem.message == ("frontmatter holds more than 10,000 values at key 'k3333'; move them out of "
                                    "the frontmatter (into the body, or a note of their own)")
    assert "alias" not in note.problem.message and note.fields == {}


def test_aliases_of_long_text_are_bounded_by_characters() -> None:
    big = "x" * 200_000
    data = ("---\ns: &s " + big + "\nt: [" + ", ".join(["*s"] * 9) + "]\n---\n").encode()
    note = parse_blob(data)
    assert note.problem is not None and note.problem.code == "E001" and note.problem.line == 3
    assert "characters" in note.problem.message
    # The same text written out is not an expansion: it is read.
    plain = ("---\ns: " + big + "\nt: " + big + "\n---\n").encode()
    assert parse_blob(plain).problem is None


def test_value_limit_is_the_same_on_the_fast_and_the_full_path() -> None:
    from vivary_git.parse import MAX_VALUES

    items = ", ".join(["x"] * (MAX_VALUES - 1))
    at_limit = f"---\nk: [{items}]\n---\n".encode()  # 1 list + 9,999 items
    assert parse_blob(at_limit).problem is None
    quoted = f"---\nk: [{items}]\nq: 'x'\n---\n".encode()  # one more value, and a quote: the full parser
    over = f"---\nk: [{items}]\nq: x\n---\n".encode()  # one more value, all flat
    for data in (quoted, over):
        problem = parse_blob(data).problem
        assert problem is not None and (problem.code, problem.line) == ("E001", 3), problem


def test_self_referencing_alias_is_bounded() -> None:
    note = parse_blob(b"---\na: &a [*a, *a]\n---\n")
    assert note.problem is not None and note.problem.code == "E001"


def test_deep_nesting_is_e001() -> None:
    deep = b"---\na: " + b"[" * 100_000 + b"]" * 100_000 + b"\n---\n# T\n"
    note = parse_blob(deep)
    assert note.problem is not None and note.problem.code == "E001" and note.title == "T"


FRONTMATTER_TEXTS = [
    "---\na: 1\n---\nbody", "---", "---\n", "---\n---", "---\n---\n", "---\n...\nx", "--- \r\na: 1\r\n--- \r\n# T\r\n",
    "---\na: 1\n", "---\na: 1\n----\nb\n--- x\n---\nbody\n", "---\n ---\n---\n", "----\na\n---\n", " ---\na\n---\n",
    "---\na: 1\n...", "---\na\n---\u2028\nb", "---\u00a0\na\n---\n", "---x\n---\n", "---\n\n\n---\n\nz",
    "x\n---\n---\n", "---\na: '---'\n--- trailing\n...  \t\nrest\n---\n", "---\r\n---\r\n", "---\n.... \n--\n---",
]


@pytest.mark.parametrize("text", FRONTMATTER_TEXTS)
def test_frontmatter_is_found_as_splitting_into_lines_finds_it(text: str) -> None:
    """parse_blob finds the closing `---` by searching the text, not by splitting it into lines: the
    two must agree on the frontmatter, the body and the line the body starts on."""
    expected = parse._split_lines(text)
    assert parse._split_frontmatter(text) == expected
    note = parse_blob(text.encode())
    assert note.has_frontmatter == (expected is not None)
    if expected is not None:
        assert note.body == expected[2]


@pytest.mark.parametrize("body", [*BODIES, "a ~~ b", "a ~~~ b", "<! --", "<!-- x", "% %", "%%", "   x", "    x",
                                  "\tx", "$", "`", "~", "<", "%"])
def test_not_plain_is_any_marker(body: str) -> None:
    assert note_body._not_plain(body) == any(marker in body for marker in note_body._NOT_PLAIN)


TAG_TEXTS = [
    "#a", "# a", "#a #b", "a#b #c", "#a#b #c#d", "x #a.b: #c. #", "##a #", "#[[x]] #y", "\t#t\n#u,v #w!",
    "# Title\n\ntext #tag and #another-one, #x;y", "#é #日本", "#a\n#b\r\n #c", "(#no) #yes", "#", "a #",
    "## H\n#tag\n### x #y ###",
]


@pytest.mark.parametrize("text", TAG_TEXTS)
def test_tags_are_those_a_whole_text_search_finds(text: str) -> None:
    """Tags are looked for only where a `#` starts the text or follows a space: the same as searching
    the whole text for the tag pattern and keeping those matches."""
    expected = []
    for m in note_body._TAG.finditer(text):
        at = m.start()
        if (at == 0 or text[at - 1] in " \t\n") and m.group(1).rstrip(".:"):
            expected.append((text.count("\n", 0, at) + 1, m.group(1).rstrip(".:")))
    got = [(link.line, link.text) for link in note_body._links(text, 1) if link.kind == "t"]
    assert got == expected


MIXED_LINKS = [
    "[[a]] ![[b.png]] [t](c.md) ![i](d.png) #tag\n[r]: e.md\n[[a]][[a]] #tag [x](<f g.md>)",
    "#t [[w]]\n\n\n[m](x.md)#no [[w|shown]] ![[w#h]]\n   [ref]: <y z.md>\n#end",
    "[[x]](not-md) [y]([[z]]) ![[e]](f.md) [[#h]]\n[d]: [[u]]",
    *TAG_TEXTS,
]


@pytest.mark.parametrize("big", [False, True])
@pytest.mark.parametrize("text", MIXED_LINKS)
def test_links_of_every_kind_come_in_document_order_with_their_lines(text: str, big: bool,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Each kind of link is searched for on its own; in a big note the searches are merged as they run (a note of
    a million links no longer holds a sorted list of them all) and repeated texts kept once: the same links, in the
    same order, as one sort of every match."""
    if big:
        monkeypatch.setattr(note_body, "_BIG", 0)
    found = []
    for m in note_body._WIKILINK.finditer(text):
        bang = m.start() > 0 and text[m.start() - 1] == "!"
        found.append((m.start() - bang, m.group(1), "e" if bang else "w"))
    for m in note_body._MDLINK.finditer(text):
        dest = m.group(1) if m.group(1) is not None else m.group(2)
        if dest and "[[" not in dest and not text.startswith("[[", m.start()):
            bang = m.start() > 0 and text[m.start() - 1] == "!"
            found.append((m.start() - bang, dest, "i" if bang else "m"))
    for m in note_body._TAG.finditer(text):
        if (m.start() == 0 or text[m.start() - 1] in " \t\n") and m.group(1).rstrip(".:"):
            found.append((m.start(), m.group(1).rstrip(".:"), "t"))
    for m in note_body._REFDEF.finditer(text):
        dest = m.group(1) if m.group(1) is not None else m.group(2)
        if dest:
            found.append((m.start(), dest, "r"))
    expected = [(dest, text.count("\n", 0, at) + 3, kind) for at, dest, kind in sorted(found)]
    assert [(link.text, link.line, link.kind) for link in note_body._links(text, 3)] == expected


@pytest.mark.parametrize("body", [*BODIES, " #a", "  # a\n", "   #", "    # code", "x\n # y", "a # b\n  ## c",
                                  "# a\n\t# b", "#\n #", "\n\n   ### Deep ###\r\n", "a\r\n # b", "# one\n## two"])
def test_headings_give_up_where_a_heading_is_indented(body: str) -> None:
    """The whole-text path leaves a body to the block scan when a line's `#` follows one to three
    spaces (it may sit in a list item), as `_INDENTED_HEADING` says."""
    assert (note_body._headings(body) is None) == bool(note_body._INDENTED_HEADING.search(body))


def _within_bounds_by_value(fields: dict[str, object]) -> bool:
    """`parse.within_bounds` as it was first written, value by value: what the level-by-level one must agree with."""
    left = [parse.MAX_VALUES]

    def walk(value: object, depth: int) -> bool:
        left[0] -= 1
        if left[0] < 0 or depth > parse.MAX_DEPTH + 1:
            return False
        if isinstance(value, dict):
            return all(isinstance(k, str) and walk(v, depth + 1) for k, v in value.items())
        if isinstance(value, list):
            return all(walk(v, depth + 1) for v in value)
        return value is None or isinstance(value, (str, int, float, bool))

    return all(isinstance(k, str) and walk(v, 0) for k, v in fields.items())


class _Text(str):
    pass


class _List(list[object]):
    pass


def _nested(depth: int, leaf: object = "x") -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


@pytest.mark.parametrize("fields", [
    {}, {"a": "b", "n": 1, "f": 1.5, "t": True, "z": None}, {"a": []}, {"a": {}},
    {"a": _nested(parse.MAX_DEPTH + 1)}, {"a": _nested(parse.MAX_DEPTH + 2)},
    {"a": _nested(parse.MAX_DEPTH + 1, [])}, {"a": _nested(parse.MAX_DEPTH + 1, {})},
    {"a": _nested(parse.MAX_DEPTH + 1, [1])}, {"a": _nested(parse.MAX_DEPTH, {"k": [None]})},
    {"a": list(range(parse.MAX_VALUES - 1))}, {"a": list(range(parse.MAX_VALUES))},
    {f"k{i}": i for i in range(parse.MAX_VALUES)}, {f"k{i}": i for i in range(parse.MAX_VALUES + 1)},
    {"a": [list(range(5000)), list(range(4998))]}, {"a": [list(range(5000)), list(range(4999))]},
    {"a": {1: "x"}}, {1: "x"}, {"a": [{"b": {2.5: None}}]}, {"a": ("x",)}, {"a": b"x"}, {"a": {"x"}},
    {"a": [1, "x", 2.0, False, None, [], {}, ("t",)]}, {"a": __import__("datetime").date(2026, 1, 1)},
    {"a": ["x"] * 3, "b": {"c": {"d": [1, [2, [3, {"e": "f"}]]]}}},
    # Plain values and lists of them, which are checked as a whole: at, and one over, the bound.
    {"a": ["x", 1, 2.5, True, None], "b": "y", "c": []}, {"a": ["x"] * (parse.MAX_VALUES - 2), "b": "y"},
    {"a": ["x"] * (parse.MAX_VALUES - 1), "b": "y"}, {"a": ["x"] * 5000, "b": [1] * 4998},
    {"a": ["x"] * 5000, "b": [1] * 4999}, {"a": ["x", b"y"]}, {"a": ["x", ("t",)]}, {"a": ["x", [1]]},
    {"a": ["x", {}]}, {"a": [], "b": {"c": "d"}},
    # Subclasses of the plain types, the lists and the keys are what they subclass.
    {_Text("a"): ["x"]}, {"a": _List(["x", 1])}, {"a": [_Text("x")]}, {"a": _Text("x")}, {"a": [True, _List()]},
])
def test_frontmatter_bounds_are_checked_level_by_level_as_value_by_value(fields: dict[str, object]) -> None:
    assert parse.within_bounds(fields) is _within_bounds_by_value(fields)


def test_frontmatter_bounds_are_those_a_parse_keeps() -> None:
    # The edges themselves: the deepest and the largest frontmatter a parse can make are within bounds.
    deepest = "a:\n" + "".join("  " * i + "- \n" for i in range(1, parse.MAX_DEPTH + 3))
    note = parse_blob(f"---\n{deepest}---\nbody\n".encode())
    assert note.problem is None and parse.within_bounds(note.fields)
    assert not parse.within_bounds({"a": _nested(parse.MAX_DEPTH + 2)})
    assert parse.within_bounds({"a": list(range(parse.MAX_VALUES - 1))})
    assert not parse.within_bounds({"a": list(range(parse.MAX_VALUES))})


def test_a_blob_refused_unread_is_the_e000_its_bytes_would_be() -> None:
    """`parse_read` over a bounded reader that refuses the blob says what `parse_blob` says of the same bytes."""
    from vivary_git.git import BlobTooLarge

    size = parse.MAX_BYTES + 1

    def refuse(oid: str) -> bytes:
        raise BlobTooLarge(size)

    assert parse.parse_read(refuse, "ab" * 20) == parse_blob(b"x" * size)
    assert parse.parse_read(lambda oid: b"# T\n", "ab" * 20) == parse_blob(b"# T\n")


@pytest.mark.parametrize("written", ["99999999999999999999999", "-9223372036854775809", "1" * 5000,
                                     "18_446_744_073_709_551_616"])
def test_a_whole_number_past_64_bits_is_kept_as_written(written: str) -> None:
    """Python refuses int() of over 4,300 digits and the caches any integer past 64 bits: both were a
    traceback for the whole check. Such a value is the text written, on both parsing paths."""
    for text in (f"---\nbig: {written}\n---\n", f"---\nbig: {written}\nflow: {{a: 1}}\n---\n"):
        note = parse_blob(text.encode())
        assert note.problem is None and note.fields["big"] == written, (text[:60], note.problem)


@pytest.mark.parametrize("written", ["18446744073709551615", "-9223372036854775808", "0"])
def test_a_whole_number_within_64_bits_is_a_number(written: str) -> None:
    note = parse_blob(f"---\nn: {written}\nflow: {{a: 1}}\n---\n".encode())
    assert note.fields["n"] == int(written)


@pytest.mark.parametrize(("value", "tag"), [("!!bool x", "bool"), ("!!int x", "int"), ("!!timestamp soon", "timestamp"),
                                            ("[1, !!float nope]", "float")])
def test_a_value_its_tag_cannot_read_is_named_at_its_line(value: str, tag: str) -> None:
    """PyYAML's constructors failed with Python's own words (`'x'`, a KeyError) at the frontmatter's first line,
    or raised past the parser (`!!timestamp`: a traceback)."""
    note = parse_blob(f"---\nok: 1\nv: {value}\n---\n".encode())
    assert note.problem is not None and note.problem.code == "E001"
    assert note.problem.line == 3
    assert f"cannot be read as the tag `!!{tag}` says" in note.problem.message, note.problem.message


def test_a_key_is_the_text_written() -> None:
    """PyYAML made `~`, `true` and `1e999` keys None, True and inf, and `str()` of those the field names "None",
    "True", "inf": a key is the text written, at every depth, as Obsidian shows a property."""
    note = parse_blob(b"---\n~: a\ntrue: b\n1.0: c\n1e999: d\n-0: e\nn:\n  Null: f\n  False: g\nl: [{~: h}]\n---\n")
    assert note.problem is None, note.problem
    assert note.fields == {"~": "a", "true": "b", "1.0": "c", "1e999": "d", "-0": "e", "n": {"Null": "f", "False": "g"},
                           "l": [{"~": "h"}]}
    assert note.key_lines == {"~": 2, "true": 3, "1.0": 4, "1e999": 5, "-0": 6, "n": 7, "l": 10}


@pytest.mark.parametrize(("first", "second"), [("~", "null"), ("0", "-0"), ("1e999", "2e999"), ("true", "True"),
                                               ("1.0", "1"), ("1_000", "1000"), ("FALSE", "false"), ("1", '"1"')])
def test_two_spellings_of_one_key_are_a_duplicate_at_the_second(first: str, second: str) -> None:
    """Keys YAML reads as one (the same null, boolean or number) were merged silently, one value lost: a
    duplicate key at the second one's line, at the top and nested, in block and flow mappings."""
    for text, line, first_line in ((f"---\n{first}: a\n{second}: b\n---\n", 3, 2),
                                   (f"---\nx: 1\nouter:\n  {first}: a\n  {second}: b\n---\n", 5, 4),
                                   (f"---\nouter: {{{first}: a, {second}: b}}\n---\n", 2, 2)):
        problem = parse_blob(text.encode()).problem
        assert problem is not None and (problem.code, problem.line) == ("E001", line), (text, problem)
        shown = second.strip('"')
        said = (f"duplicate key {shown!r}" if shown == first else  # (tropo's words for a key written twice)
                f"duplicate key {shown!r}: YAML reads it as the same key as {first!r} on line {first_line}; "
                "remove one of them")
        assert problem.message == f"frontmatter is not valid YAML: {said}", problem.message


def test_keys_of_different_kinds_are_different_keys() -> None:
    """Python's True == 1 and False == 0 are no YAML equality: `true` and `1` are two keys (as js-yaml reads them);
    so are a merged key and the one written after it, which overrides it."""
    note = parse_blob(b"---\ntrue: a\n1: b\nfalse: c\n0: d\nx: &x {k: 1, j: 2}\ny:\n  <<: *x\n  k: 3\n---\n")
    assert note.problem is None, note.problem
    assert note.fields == {"true": "a", "1": "b", "false": "c", "0": "d", "x": {"k": 1, "j": 2}, "y": {"k": 3, "j": 2}}


@pytest.mark.parametrize(("written", "read"), [
    ('"\\ud83d\\ude00 smile"', "\U0001F600 smile"), ('"\\uD83D\\uDE00\\ud83d\\ude01"', "\U0001F600\U0001F601"),
    ('"a\\\\ud83d"', "a\\ud83d"), ("x\\ud83d\\ude00", "x\\ud83d\\ude00"), ("'\\ud83d'", "\\ud83d"),
    ('[a, "\\ud83d\\ude00"]', ["a", "\U0001F600"]), ('"\\ud83d\\ude00\u2028"', "\U0001F600\u2028"),
    ('"\\ud83d\\ude00\\U0001F600\\u00e9"', "\U0001F600\U0001F600\u00e9"),
])
def test_a_surrogate_pair_escape_is_the_character_it_spells(written: str, read: object) -> None:
    """YAML 1.2 (js-yaml) and JSON write a character past U+FFFF as its UTF-16 surrogate pair; libyaml refused each
    half ("found invalid Unicode character 'd' escape code"). In a plain or single-quoted scalar a backslash is
    text, on both paths; so is an escaped backslash's `u` after it."""
    note = parse_blob(f'---\nv: {written}\n"\\ud83d\\ude01": 1\nn: 2\n---\n'.encode())
    assert note.problem is None, note.problem
    assert note.fields == {"v": read, "\U0001F601": 1, "n": 2}
    assert note.key_lines == {"v": 2, "\U0001F601": 3, "n": 4}


@pytest.mark.parametrize(("written", "line", "column"), [
    ('a: "\\ud83d x"', 3, 5), ('a: "ok \\uDE00"', 3, 8), ('a: ["x", "\\ud83d\\ud83d"]', 3, 11),
    ('a: "\\U0000D83D"', 3, 5), ('a: "x\n  \\ude00\\ud83d"', 4, 3), ('"\\udbff": 1', 3, 2),
])
def test_a_lone_surrogate_escape_is_e001_at_its_line_and_column(written: str, line: int, column: int) -> None:
    note = parse_blob(f"---\nok: 1\n{written}\n---\n".encode())
    escape = written[written.index("\\"):][:10 if written[written.index("\\") + 1] == "U" else 6]
    assert note.problem == parse.ParseProblem(
        "E001", line, f"frontmatter is not valid YAML: the escape `{escape}` in column {column} is a lone surrogate "
        "(half of a UTF-16 pair, no character on its own); write the character itself, or its `\\UXXXXXXXX` escape"
    ), note.problem
