"""Real vaults read as their owners see them in their editor: one test per thing a new user saw go
wrong on public vaults (docs/vaults.md is the reference for each dialect's rules)."""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
from conftest import Repo

OBSIDIAN = {".obsidian/app.json": "{}\n"}


def findings(repo: Repo, cli: Any, files: dict[str, str | bytes], *extra: str) -> list[tuple[str, int, str, str]]:
    repo.commit(files=files)
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", *extra, cwd=repo.path)
    assert r.code in (0, 1), r.err
    return [(f["path"], f["line"], f["code"], f["message"]) for f in r.json()["findings"]]


def graph(repo: Repo, cli: Any) -> dict[str, Any]:
    r = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    result: dict[str, Any] = r.json()
    return result


def edges(repo: Repo, cli: Any) -> set[tuple[str, str, str, bool]]:
    return {(e["from"], e["field"], e["to"], e["broken"]) for e in graph(repo, cli)["edges"]}


# --- the target is before the first `|` ------------------------------------------------------------------

def test_obsidian_target_is_before_the_pipe_sizes_and_classes_after(repo: Repo, cli: Any) -> None:
    files: dict[str, str | bytes] = {
        **OBSIDIAN,
        "Attachments/Style-guide.png": b"", "Attachments/pic.webp": b"", "img/profile.jpg": b"",
        "Note.md": "![[Style-guide.png#interface|300]]\n![[pic.webp|522]]\n![[pic.webp|300x200]]\n"
                   "[[profile.jpg | rounded-full | 64x64]]\n",
    }
    assert findings(repo, cli, files) == []


def test_display_text_is_not_the_target(repo: Repo, cli: Any) -> None:
    """`[[Electric Potential Difference|Voltage]]` must not resolve to Voltage.md: it names the target."""
    got = findings(repo, cli, {"Voltage.md": "# V\n", "Physics.md": "[[Electric Potential Difference|Voltage]]\n"})
    assert got == [("Physics.md", 1, "W221", "wikilink [[Electric Potential Difference|Voltage]] matches no note "
                    "(looked for 'Electric Potential Difference' from Physics.md)")]
    assert ("Physics", "wikilink", "Voltage", False) not in edges(repo, cli)


def test_a_note_titled_with_md_is_named_as_obsidian_links_it(repo: Repo, cli: Any) -> None:
    """A note titled `README.md` in Obsidian is the file `README.md.md`, which Obsidian links `[[README.md]]`: it
    looks a name up as written, then with `.md` after it. Where a file is named `x.md`, that one is the link's."""
    files: dict[str, str | bytes] = {
        **OBSIDIAN, "README.md.md": "# About the readme\n", "docs/CLAUDE.md.md": "# About CLAUDE.md\n",
        "x.md": "# x\n", "x.md.md": "# x.md\n",
        "Home.md": "[[README.md]]\n[about](README.md)\n![[CLAUDE.md#About CLAUDE.md]]\n[[docs/CLAUDE.md]]\n[[x.md]]\n"
                   "[[gone.md]]\n",
    }
    got = findings(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [("Home.md", 6, "W221")]
    assert "looked for 'gone.md'" in got[0][3]
    assert {(fld, t) for f, fld, t, broken in edges(repo, cli) if f == "Home" and not broken} == {
        ("wikilink", "README.md"), ("link", "README.md"), ("wikilink", "docs/CLAUDE.md"), ("wikilink", "x")}
    r = cli("blast", "claude.md", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["target"] == "docs/CLAUDE.md", r.err


def test_names_are_not_normalised_into_other_notes(repo: Repo, cli: Any) -> None:
    got = findings(repo, cli, {
        "CSS-kodestykker.md": "x\n", "C String.md": "x\n",
        "Index.md": "[[CSS kodestykker]]\n[[C++ string]]\n[[css-KODESTYKKER]] [[c string]]\n",
    })
    assert [(line, code) for _, line, code, _ in got] == [(1, "W221"), (2, "W221")]
    assert "looked for 'CSS kodestykker'" in got[0][3] and "looked for 'C++ string'" in got[1][3]
    # Case does not matter to Obsidian: the last two resolve.
    assert {("Index", "CSS-kodestykker"), ("Index", "C String")} <= {(f, t) for f, _, t, _ in edges(repo, cli)}


# Pairs `str.casefold()` equates and Obsidian's match does not: (file, link). Obsidian lowercases a name with its
# `.md` (`(link + ".md").toLowerCase()` against `file.name.toLowerCase()`), where a `Σ` ending the name is not final:
# `ΛΟΓΟΣ.md` is `λογοσ.md`, which `[[λογος]]` is not, and `[[ΛΟΓΟΣ]]` is not `λόγος.md`.
CASEFOLD_ONLY = [
    ("Straße", "STRASSE"), ("file", "\ufb01le"), ("ff", "\ufb00"), ("οδος", "οδοσ"), ("ΛΟΓΟΣ", "λογος"),
    ("λόγος", "ΛΌΓΟΣ"), ("μ-Meson", "\u00b5-Meson"), ("s-Laut", "\u017f-Laut"), ("β-Zerfall", "\u03d0-Zerfall"),
    ("մն", "\ufb13"),
]
# Pairs Obsidian's `toLowerCase()` with `.md` matches (node v20): `ΑΣ.md` is `ασ.md`, ẞ, title-case digraphs,
# Cherokee, dotted I.
LOWERCASE_SAME = [
    ("ασ", "ΑΣ"), ("Straße", "STRA\u1e9eE"), ("\u01c4EMAL", "\u01c5emal"), ("\u13a0CHEROKEE", "\uab70cherokee"),
    ("\u0130zmir", "i\u0307zmir"),
]


def test_case_is_obsidians_lowercase_not_case_folding(repo: Repo, cli: Any) -> None:
    """Obsidian matches names by JavaScript's `toLowerCase()`: `[[Masse]]` is `Physik/Masse.md`, not the
    shorter `Maße.md` that case folding (ß is ss) also equates, and `[[STRASSE]]` alone is unresolved."""
    files: dict[str, str | bytes] = {
        **OBSIDIAN, "Maße.md": "Maße und Gewichte\n", "Physik/Masse.md": "träge Masse\n", "Busse.md": "x\n",
        "Recht/Buße.md": "x\n", "src.md": "[[Masse]] [[Buße]] [x](Masse.md)\n",
        "Folder ς/Note.md": "x\n", "İstanbul.md": "x\n",
        **{f"{name}.md": "x\n" for name, _ in CASEFOLD_ONLY + LOWERCASE_SAME},
        "misses.md": "".join(f"[[{link}]]\n" for _, link in CASEFOLD_ONLY) + "[[Folder σ/Note]]\n[[istanbul]]\n",
        "hits.md": "".join(f"[[{link}]]\n" for _, link in LOWERCASE_SAME),
    }
    got = findings(repo, cli, files)
    assert [(path, line, code) for path, line, code, _ in got] == \
        [("misses.md", n, "W221") for n in range(1, len(CASEFOLD_ONLY) + 3)]
    reached = edges(repo, cli)
    assert {(f, fld, t) for f, fld, t, broken in reached if f == "src"} == {
        ("src", "wikilink", "Physik/Masse"), ("src", "wikilink", "Recht/Buße"), ("src", "link", "Physik/Masse")}
    assert {t for f, _, t, broken in reached if f == "hits" and not broken} == {name for name, _ in LOWERCASE_SAME}
    assert not any(f == "misses" and not broken for f, _, _, broken in reached)


def test_a_tab_in_a_link_is_kept(repo: Repo, cli: Any) -> None:
    """A tab is text inside a link, not indentation: `[[tab<TAB>name]]` names `tab<TAB>name.md`, in a list or a
    quote too, and a missing one is named as written."""
    files = {"tab\tname.md": "x\n", "A.md": "[[tab\tname]]\n-\t[[tab\tname]]\n>\t- [[gone\tnote]]\n\n\tcode [[x]]\n"}
    got = findings(repo, cli, files)
    # (a tab is a character Git for Windows refuses in a name: W227)
    assert [(p, line, code) for p, line, code, _ in got] == [("A.md", 3, "W221"), ("tab\tname.md", 1, "W227")]
    assert "wikilink [[gone\tnote]] matches no note (looked for 'gone\tnote'" in got[0][3]
    assert ("A", "wikilink", "tab\tname", False) in edges(repo, cli)


def test_escaped_pipe_in_a_table(repo: Repo, cli: Any) -> None:
    files: dict[str, str | bytes] = {
        "Engelbart.jpg": b"",
        "People.md": "| who | pic |\n|---|---|\n| Doug | ![[Engelbart.jpg\\|100]] |\n| Ted | [[Ted Nelson\\|Ted]] |\n",
        "Ted Nelson.md": "# Ted\n",
    }
    assert findings(repo, cli, files) == []
    assert ("People", "wikilink", "Ted Nelson", False) in edges(repo, cli)


def test_caret_without_hash_is_part_of_the_name(repo: Repo, cli: Any) -> None:
    files = {"Proving e^itheta = 1.md": "# Proof\n",
             "Math.md": "[[Proving e^itheta = 1]] [[Proving e^itheta = 1#^blk]]\n"}
    assert findings(repo, cli, files) == []
    assert ("Math", "wikilink", "Proving e^itheta = 1", False) in edges(repo, cli)


def test_heading_links_to_this_note_and_others(repo: Repo, cli: Any) -> None:
    files = {"A.md": "# A\n## Part\n[[#Part]] [[B#Intro]] [[B#Nowhere]] [[B#^blockid]]\n", "B.md": "## Intro\n"}
    assert findings(repo, cli, files) == []  # a missing heading is W222, off by default
    got = findings(repo, cli, {**files, ".vivary/graph.toml": "[links]\nanchors = true\n"})
    assert [(p, code) for p, _, code, _ in got] == [("A.md", "W222"), ("A.md", "W222")]
    assert "B.md has no heading 'Nowhere'" in got[0][3] and "B.md has no block '^blockid'" in got[1][3]


def test_a_heading_with_a_hash_is_linked_as_obsidian_writes_it(repo: Repo, cli: Any) -> None:
    """Obsidian drops a heading's own `#` from its link (`# Issue #42 fix` is `[[Note#Issue 42 fix]]`): the `#` is
    no separator in the heading, as it is in a link's `[[Note#Part#Sub]]`."""
    files = {".vivary/graph.toml": "[links]\nanchors = true\n", "Note.md": "# Issue #42 fix\n\n## C# и F#\n",
             "src.md": "[[Note#Issue 42 fix]]\n[[Note#C и F]]\n[[Note#42 fix]]\n[[Note#Issue 42 fix#C и F]]\n"}
    got = findings(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [("src.md", 3, "W222")]
    assert "Note.md has no heading '42 fix'" in got[0][3]


def test_a_code_span_inside_a_wikilink_is_its_text(repo: Repo, cli: Any) -> None:
    """Backticks inside `[[…]]` are the link's text (the heading `` `код` и *курсив* `` is linked as written); a
    wikilink inside a code span is still no link."""
    files = {".vivary/graph.toml": "[links]\nanchors = true\n", "Note.md": "## `код` и *курсив*\n",
             "src.md": "[[Note#`код` и *курсив*]]\n[[Note#`нет` и *курсив*]]\n`[[Gone]]` and `[[Gone` x]]\n"}
    got = findings(repo, cli, files)
    assert [(p, line, code, msg) for p, line, code, msg in got] == [
        ("src.md", 2, "W222", "wikilink [[Note#`нет` и *курсив*]]: Note.md has no heading '`нет` и *курсив*'")]


def test_heading_case_is_lowercase_not_case_folding(repo: Repo, cli: Any) -> None:
    files = {".vivary/graph.toml": "[links]\nanchors = true\n", "B.md": "## Maße\n## ΛΟΓΟΣ\n",
             "A.md": "[[B#MASSE]] [[B#maße]] [[B#λογος]]\n"}
    got = findings(repo, cli, files)
    assert [(p, code) for p, _, code, _ in got] == [("A.md", "W222")]
    assert "B.md has no heading 'MASSE'" in got[0][3]


# --- attachments ----------------------------------------------------------------------------------------

def test_attachments_that_exist_are_fine_and_missing_ones_are_reported(repo: Repo, cli: Any) -> None:
    got = findings(repo, cli, {
        **OBSIDIAN, "Templates/Bases/Albums.base": b"", "board.canvas": b"{}", "docs/paper.pdf": b"",
        "Home.md": "![[Albums.base]]\n![[Albums.base#Table]]\n![[board.canvas]]\n[[paper.pdf]]\n![[missing.png]]\n"
                   "![alt](docs/paper.pdf) ![gone](img/none.png)\n",
    })
    assert got == [
        ("Home.md", 5, "W223", "embed ![[missing.png]] matches no file (looked for 'missing.png' from Home.md)"),
        ("Home.md", 6, "W223", "image (img/none.png) matches no file (looked for 'img/none.png' from Home.md)"),
    ]
    # Attachments are files, not nodes: no edges to them.
    assert edges(repo, cli) == set()


def test_files_obsidian_hands_to_the_system_are_attachments_and_dotted_names_stay_notes(repo: Repo, cli: Any) -> None:
    """A design file, an office document, an archive or an e-book is linked like a picture: a missing one is a
    missing file (W223), no broken edge. A dot alone does not make a file name: `[[Node.js]]` and `[[v1.2]]`
    are notes, missing ones W221 with their edges."""
    names = ["mock.psd", "logo.ai", "screen.sketch", "backup.zip", "spec.docx", "budget.xlsx", "talk.pptx",
             "book.epub", "archive.7z", "data.tsv"]
    home = "".join(f"[[{n}]]\n" for n in names) + "[[found.psd]]\n[[Node.js]] [[v1.2]]\n"
    got = findings(repo, cli, {**OBSIDIAN, "found.psd": b"8BPS", "Home.md": home})
    assert [(line, code) for _, line, code, _ in got] == \
        [(i + 1, "W223") for i in range(len(names))] + [(12, "W221"), (12, "W221")], got
    assert "wikilink [[mock.psd]] matches no file (looked for 'mock.psd' from Home.md)" in got[0][3]
    assert edges(repo, cli) == {("Home", "wikilink", "Node.js", True), ("Home", "wikilink", "v1.2", True)}


DOTTED = "[[deck.key]]\n[[proj.data.csv]]\n![[deck.slides.pdf]]\n[[Slides|deck.talk.pptx]]\n[[lang.python]]\n" \
    "[[missing.pdf]]\n[[assets/plan.pdf]]\n![gone](assets/none.png)\n"


def test_dendron_missing_dotted_names_are_notes_it_would_create(repo: Repo, cli: Any) -> None:
    """Dendron's names are dotted hierarchies: `[[deck.key]]`, `[[proj.data.csv]]` and `![[deck.slides.pdf]]`
    name notes, and a missing one is a note Dendron's Go to Note creates (W221, with its broken edge), not a
    missing file. Its file links are paths (`[[assets/plan.pdf]]`), and images Markdown links: those stay W223."""
    got = findings(repo, cli, {"dendron.yml": "version: 5\n", "deck.md": DOTTED})
    assert [(line, code) for _, line, code, _ in got] == \
        [(1, "W221"), (2, "W221"), (3, "W221"), (4, "W221"), (5, "W221"), (6, "W221"), (7, "W223"), (8, "W223")], got
    assert got[0][3] == "wikilink [[deck.key]] matches no note (looked for 'deck.key' from deck.md)"
    assert got[6][3] == "wikilink [[assets/plan.pdf]] matches no file (looked for 'assets/plan.pdf' from deck.md)"
    assert edges(repo, cli) == {("deck", "wikilink", n, True) for n in
                                ("deck.key", "proj.data.csv", "deck.slides.pdf", "deck.talk.pptx", "lang.python",
                                 "missing.pdf")}


def test_logseq_missing_names_with_a_file_extension_are_pages_it_would_create(repo: Repo, cli: Any) -> None:
    """In Logseq `[[report.pdf]]` is a page reference like any other: Logseq makes the page when it is linked, so
    a missing one is no finding but an edge to a page without a file, as `[[Not yet written]]` is. Its assets
    are Markdown links: a missing one of those is a missing file (W223)."""
    got = findings(repo, cli, {"logseq/config.edn": "{}", "pages/Home.md":
                               "- [[deck.key]] [[proj.data.csv]] [[report.pdf]] #[[slides.pptx]]\n"
                               "- ![report](../assets/gone.pdf)\n"})
    assert got == [("pages/Home.md", 2, "W223",
                    "image (../assets/gone.pdf) matches no file (looked for 'assets/gone.pdf' from pages/Home.md)")]
    assert edges(repo, cli) == {("pages/Home", "wikilink", n, True)
                                for n in ("deck.key", "proj.data.csv", "report.pdf", "slides.pptx")}


@pytest.mark.parametrize("config", [OBSIDIAN, {".foam/x": ""}], ids=["obsidian", "foam"])
def test_obsidian_and_foam_missing_names_with_a_file_extension_are_files(repo: Repo, cli: Any,
                                                                        config: dict[str, str]) -> None:
    """The same links in Obsidian (and Foam, which reads names as it does): a name ending in a file format's
    extension is a file, a missing one W223 with no edge; `[[lang.python]]` is a note, and so is `Slides` (the
    target before the `|`)."""
    got = findings(repo, cli, {**config, "deck.md": DOTTED})
    assert [(line, code) for _, line, code, _ in got] == \
        [(1, "W223"), (2, "W223"), (3, "W223"), (4, "W221"), (5, "W221"), (6, "W223"), (7, "W223"), (8, "W223")], got
    assert got[5][3] == "wikilink [[missing.pdf]] matches no file (looked for 'missing.pdf' from deck.md)"
    assert edges(repo, cli) == {("deck", "wikilink", "lang.python", True), ("deck", "wikilink", "Slides", True)}


# --- what is not a link -----------------------------------------------------------------------------------

def test_code_math_and_comments_hold_no_links(repo: Repo, cli: Any) -> None:
    body = (
        "> [!example]\n> ```md\n> [[in-callout-fence]]\n> ```\n"
        "- item\n  ```\n  [[in-list-fence]]\n  ```\n\n"
        "Paragraph.\n\n    [[indented-code]]\n\n"
        "Inline $x = [[a]]$ and $$[[b]]$$ and `[[c]]` and <!-- [[d]] --> and %%[[e]]%%.\n"
        "$$\n[[display-math]]\n$$\n%%\n[[comment-block]]\n%%\n<!--\n[[html-comment]]\n-->\n"
        "~~~\n[[tilde]]\n~~~\n[[real]]\n"
    )
    got = findings(repo, cli, {"Note.md": body})
    assert [(line, code, msg.split(" matches")[0]) for _, line, code, msg in got] == [
        (len(body.split("\n")) - 1, "W221", "wikilink [[real]]")]


# --- ids keep the name; no note is dropped -----------------------------------------------------------------

def test_same_name_in_two_folders_is_legal_and_both_are_nodes(repo: Repo, cli: Any) -> None:
    got = findings(repo, cli, {
        **OBSIDIAN,
        "Obsidian Sync/Security.md": "# Sync security\n", "Obsidian Publish/Security.md": "# Publish security\n",
        "Obsidian Sync/Overview.md": "[[Security]]\n", "Obsidian Publish/Overview.md": "[[Security]]\n",
        "Home.md": "[[Obsidian Publish/Security]] [[Security]]\n",
        "Bash &.md": "x\n", "Bash ;.md": "x\n", "Bash.md": "x\n",
    })
    assert got == []
    ids = [n["id"] for n in graph(repo, cli)["nodes"]]
    assert ids == sorted([
        "Bash &", "Bash ;", "Bash", "Home", "Obsidian Publish/Overview", "Obsidian Publish/Security",
        "Obsidian Sync/Overview", "Obsidian Sync/Security"])
    e = edges(repo, cli)
    # each Overview links the Security beside it; from elsewhere the shortest path wins
    assert ("Obsidian Sync/Overview", "wikilink", "Obsidian Sync/Security", False) in e
    assert ("Obsidian Publish/Overview", "wikilink", "Obsidian Publish/Security", False) in e
    assert {("Home", "wikilink", "Obsidian Publish/Security", False),
            ("Home", "wikilink", "Obsidian Sync/Security", False)} <= e
    r = cli("blast", "Obsidian Publish/Security", "--rev", "HEAD", "--json", cwd=repo.path)
    assert [i["id"] for i in r.json()["impacted"]] == ["Home", "Obsidian Publish/Overview"]


def test_names_differing_only_in_case_link_the_one_spelt_as_the_link(repo: Repo, cli: Any) -> None:
    """`Foo.md` and `foo.md` side by side (legal on Linux): `[[foo]]` is `foo.md`, as the path it spells exists, and
    from `Foo.md` it is a link to `foo`, not to itself; a spelling neither has takes the usual tie-break. The pair
    is one file on macOS and Windows: W226, and nothing else."""
    got = findings(repo, cli, {**OBSIDIAN, "Foo.md": "# Upper\n[[foo]]\n", "foo.md": "# lower\n",
                               "r.md": "[[foo]] [[Foo]]\n", "sub/s.md": "[[foo]] [[FOO]]\n"})
    assert [(p, code) for p, _, code, _ in got] == [("foo.md", "W226")]
    e = edges(repo, cli)
    assert {("Foo", "wikilink", "foo", False), ("r", "wikilink", "foo", False), ("r", "wikilink", "Foo", False),
            ("sub/s", "wikilink", "foo", False)} <= e
    assert ("sub/s", "wikilink", "Foo", False) in e  # [[FOO]]: the shortest, then the first alphabetically
    r = cli("blast", "foo", "--rev", "HEAD", "--json", cwd=repo.path)
    assert [i["id"] for i in r.json()["impacted"]] == ["Foo", "r", "sub/s"]


def test_a_true_duplicate_is_reported_and_both_stay(repo: Repo, cli: Any) -> None:
    # Foam reads `.markdown` notes too (Obsidian does not: below).
    got = findings(repo, cli, {".vivary/graph.toml": 'dialect = "foam"\n', "a.md": "# one\n", "a.markdown": "# two\n"})
    assert [(p, code) for p, _, code, _ in got] == [("a.md", "E130")]  # `a.markdown` sorts first
    assert "this one as 'a (2)'" in got[0][3]
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["a", "a (2)"]


def test_one_name_in_two_unicode_forms_says_so(repo: Repo, cli: Any) -> None:
    """`Café.md` composed beside `Café.md` decomposed (macOS) print alike: E130 must say why they are two."""
    import unicodedata

    got = findings(repo, cli, {unicodedata.normalize("NFC", "Café.md"): "# one\n",
                               unicodedata.normalize("NFD", "Café.md"): "# two\n", "Home.md": "[[café]]\n",
                               ".vivary/graph.toml": 'dialect = "foam"\n', "a.md": "# one\n", "a.markdown": "# two\n"})
    assert sorted((code, "in two Unicode forms" in msg) for _, _, code, msg in got) == \
        [("E130", False), ("E130", True)], got  # `a.md` beside `a.markdown` is another duplicate


def test_obsidian_reads_only_md_files_as_notes(repo: Repo, cli: Any) -> None:
    """Obsidian opens `.md` files as notes; a `.markdown` file is a file, named with its extension as a `.pdf` is:
    no node, no duplicate of `a.md`, no edge to it, and `[[Notes]]` does not reach `Notes.markdown`."""
    got = findings(repo, cli, {**OBSIDIAN, "a.md": "# one\n", "a.markdown": "# two [[nowhere]]\n",
                               "Notes.markdown": "# Notes\n",
                               "Home.md": "[[a]] [[Notes.markdown]] [x](Notes.markdown) ![[a.markdown]]\n[[Notes]]\n"})
    assert [(p, line, code) for p, line, code, _ in got] == [("Home.md", 2, "W221")], got
    assert "(looked for 'Notes' from Home.md)" in got[0][3]
    g = graph(repo, cli)
    assert sorted(n["id"] for n in g["nodes"]) == ["Home", "a"]
    assert {(e["from"], e["to"], e["broken"]) for e in g["edges"]} == {("Home", "a", False), ("Home", "Notes", True)}
    # A tropo.toml workspace's notes are the contract's: `.markdown` ones too, whatever dialect reads its links.
    repo.commit(files={"tropo.toml": "version = 1\n", ".vivary/graph.toml": 'dialect = "obsidian"\n'})
    ids = {n["id"] for n in graph(repo, cli)["nodes"]}
    assert "Notes" in ids and "a (2)" in ids


@pytest.mark.parametrize("name", ["内部链接", "Русский язык", "Anhänge", "Ελληνικά"])
def test_non_latin_names_are_ids_titles_and_link_targets(repo: Repo, cli: Any, name: str) -> None:
    got = findings(repo, cli, {f"笔记/{name}.md": "正文 text\n", "Home.md": f"[[{name}]] [[{name.upper()}]]\n"})
    assert got == []
    nodes = {n["id"]: n for n in graph(repo, cli)["nodes"]}
    assert f"笔记/{name}" in nodes
    assert ("Home", "wikilink", f"笔记/{name}", False) in edges(repo, cli)
    q = cli("query", name, "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert q["results"] and q["results"][0]["title"] == name


def test_decomposed_unicode_names_match_composed_links(repo: Repo, cli: Any) -> None:
    """macOS writes `é` as e + U+0301 in file names; links are typed composed (NFC)."""
    got = findings(repo, cli, {"Cafe\u0301.md": "x\n", "Home.md": "[[Caf\u00e9]]\n"})
    assert got == []
    assert ("Home", "wikilink", "Caf\u00e9", False) in edges(repo, cli)



def test_no_break_spaces_in_a_name_are_the_spaces_obsidian_reads(repo: Repo, cli: Any) -> None:
    """A screenshot macOS named `… at 9.41.12<U+202F>AM.png` (a narrow no-break space), or a title pasted with a
    no-break space (U+00A0), is listed by Obsidian with a plain space (its `normalizePath`), which is how its links
    name it. Each was a W223 or W221 whose message printed the very name of the file beside it."""
    shot = "Attachments/Screenshot 2024-05-01 at 9.41.12\u202fAM.png"
    files: dict[str, str | bytes] = {
        **OBSIDIAN, shot: b"png", "Meeting\u00a0notes.md": "# Meeting\n",
        "Home.md": "![[Screenshot 2024-05-01 at 9.41.12 AM.png]]\n[[meeting notes]]\n"
                   "![shot](Attachments/Screenshot%202024-05-01%20at%209.41.12%20AM.png)\n"
                   "[[Meeting\u202fnotes]]\n[[Meeting\u2009notes]]\n",
    }
    got = findings(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [("Home.md", 5, "W221")]  # a thin space is no space
    assert {(fld, t) for f, fld, t, broken in edges(repo, cli) if f == "Home" and not broken} == {
        ("wikilink", "Meeting\u00a0notes")}
    r = cli("blast", "Meeting notes", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["target"] == "Meeting\u00a0notes", r.err


# --- every link kind is an edge ----------------------------------------------------------------------------

def test_properties_are_edges_named_by_the_property(repo: Repo, cli: Any) -> None:
    files = {
        **OBSIDIAN,
        "Places/Japan.md": "# Japan\n",
        "Places/Kyoto.md": '---\nup: "[[Japan]]"\nloc:\n  - "[[Japan]]"\n  - "[[Kansai]]"\n---\n# Kyoto\n',
        "Places/Osaka.md": "---\nup: [[Japan]]\nrating: 7\n---\n",
    }
    got = findings(repo, cli, files)
    assert got == [("Places/Kyoto.md", 3, "W221",
                    "property 'loc': [[Kansai]] matches no note (looked for 'Kansai' from Places/Kyoto.md)")]
    e = edges(repo, cli)
    assert {("Places/Kyoto", "up", "Places/Japan", False), ("Places/Kyoto", "loc", "Places/Japan", False),
            ("Places/Kyoto", "loc", "Kansai", True), ("Places/Osaka", "up", "Places/Japan", False)} <= e
    r = cli("blast", "Places/Japan", "--rev", "HEAD", "--json", cwd=repo.path)
    assert [i["id"] for i in r.json()["impacted"]] == ["Places/Kyoto", "Places/Osaka"]


def test_unquoted_links_in_a_block_list_property_are_edges_and_single_brackets_are_not(repo: Repo, cli: Any) -> None:
    """`- [[Japan]]` in a block list is `[["Japan"]]` to YAML (a list in a list, as `up: [[Japan]]` is):
    it was missed, while `- [Kansai]` (a list holding a word, no link anywhere but in YAML) was read as
    `[[Kansai]]` and reported broken."""
    files = {
        **OBSIDIAN,
        "Places/Japan.md": "# Japan\n",
        "Places/Kyoto.md": "---\nloc:\n  - [[Japan]]\n  - [[Honshu]]\n  - [Kansai]\n  - \"[[Japan]]\"\n"
                           "near: [[[Japan]], [Osaka]]\n---\n# Kyoto\n",
    }
    got = findings(repo, cli, files)
    assert [(line, msg) for _, line, _, msg in got] == [
        (2, "property 'loc': [[Honshu]] matches no note (looked for 'Honshu' from Places/Kyoto.md)")]
    e = edges(repo, cli)
    assert {("Places/Kyoto", "loc", "Places/Japan", False), ("Places/Kyoto", "loc", "Honshu", True),
            ("Places/Kyoto", "near", "Places/Japan", False)} == {x for x in e if x[0] == "Places/Kyoto"}


def test_markdown_links_are_edges_and_broken_ones_found(repo: Repo, cli: Any) -> None:
    files = {
        "docs/user/publishing.md": "# Publishing\n", "docs/My Note.md": "# Mine\n", "docs/a b.md": "x\n",
        "docs/dev/guide.md": "[text](../user/publishing.md) [x](<../My Note.md>) [y](../a%20b.md#sec)\n"
                             "[web](https://example.com/x.md) [mail](mailto:a@b.c) [here](#top)\n"
                             "[gone](../user/publish.md)\n\n[ref]: ../user/missing.md 'Missing'\n",
    }
    got = findings(repo, cli, files)
    assert [(line, code, msg) for _, line, code, msg in got] == [
        (3, "W221", "link (../user/publish.md) matches no note (looked for 'docs/user/publish.md' from "
                    "docs/dev/guide.md)"),
        (5, "W221", "reference definition (../user/missing.md) matches no note (looked for 'docs/user/missing.md' "
                    "from docs/dev/guide.md)"),
    ]
    e = edges(repo, cli)
    assert {("docs/dev/guide", "link", "docs/user/publishing", False),
            ("docs/dev/guide", "link", "docs/My Note", False), ("docs/dev/guide", "link", "docs/a b", False)} <= e


# --- hidden folders ----------------------------------------------------------------------------------------

HUB: dict[str, str | bytes] = {
    **OBSIDIAN,
    ".github/ISSUE_TEMPLATE/bug.md": "---\nname: Bug\n---\n[[Steps to reproduce]] [[Home]]\n",
    ".github/PULL_REQUEST_TEMPLATE.md": "[[Checklist]]\n",
    ".trash/Old plan.md": "# Old plan\n",
    ".hidden note.md": "[[Nowhere]]\n",
    "Home.md": "[[Old plan]] [[bug]] [[Plugins]]\n",
    "Plugins.md": "# Plugins\n",
}


def test_obsidian_hidden_folders_and_files_are_no_notes_and_no_targets(repo: Repo, cli: Any) -> None:
    """obsidian-hub's `.github/` test fixtures gave all of its findings and extra nodes, and `.trash/`
    notes were link targets: Obsidian indexes no folder or file whose name starts with `.`."""
    got = findings(repo, cli, HUB)
    assert [(p, msg.split(" matches")[0]) for p, _, _, msg in got] == [
        ("Home.md", "wikilink [[Old plan]]"), ("Home.md", "wikilink [[bug]]")]
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["Home", "Plugins"]


def test_a_hidden_folder_the_user_includes_is_read(repo: Repo, cli: Any) -> None:
    got = findings(repo, cli, {**HUB, ".vivary/graph.toml": 'include = [".github/ISSUE_TEMPLATE/**"]\n'})
    assert sorted((p, msg.split(" matches")[0]) for p, _, _, msg in got) == [
        (".github/ISSUE_TEMPLATE/bug.md", "wikilink [[Steps to reproduce]]"), ("Home.md", "wikilink [[Old plan]]")]
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == [".github/ISSUE_TEMPLATE/bug", "Home", "Plugins"]
    repo.commit(files={".vivary/graph.toml": 'include = ["../x"]\n'})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "include: '../x' is not a path from the vault root" in r.err


def test_hidden_memory_folder_and_other_dialects_keep_their_dotted_notes(repo: Repo, cli: Any) -> None:
    """The memory folder is read wherever the user put it; Foam (VS Code) and `tropo.toml` workspaces read
    dotted folders as before: only Obsidian leaves them out."""
    repo.commit(files={**HUB, ".vivary/memory.toml": '[memory.remember]\nfolder = ".memories"\n',
                       ".memories/m.md": "# A memory\n"})
    assert ".memories/m" in [n["id"] for n in graph(repo, cli)["nodes"]]
    (repo.path / ".obsidian" / "app.json").unlink()
    repo.commit(files={".foam/x": ""})
    assert ".github/PULL_REQUEST_TEMPLATE" in [n["id"] for n in graph(repo, cli)["nodes"]]


# --- math and placeholders ---------------------------------------------------------------------------------

def test_display_math_opened_mid_line_pairs_with_the_next(repo: Repo, cli: Any) -> None:
    """A `$$` that opens mid-line (`…functions$$`) closes at the next `$$`: it used to be taken for a
    closer, so every math region after it was mis-paired and the links between them went unchecked."""
    body = ("The generating functions$$\nG(x) = \\sum [[not a link]]\n$$\nsee [[Gone one]]\n\n"
            "$$\nx [[nor this]]\n\n$$\nthen [[Gone two]]\n\n$$y$$ and [[Gone three]]\n"
            "Cost `$$` in code, then [[Gone four]] and $$z [[inline display]]$$.\n")
    got = findings(repo, cli, {"Note.md": body})
    assert [msg.split(" matches")[0] for *_, msg in got] == [
        "wikilink [[Gone one]]", "wikilink [[Gone two]]", "wikilink [[Gone three]]", "wikilink [[Gone four]]"]


def test_a_placeholder_in_the_shown_text_keeps_the_link(repo: Repo, cli: Any) -> None:
    """`[[mrj-text-expand|Text {{expand}}]]`: the `{{` is in the shown text, so the target is a link."""
    got = findings(repo, cli, {"mrj-text-expand.md": "x\n",
                               "Plugins.md": "[[mrj-text-expand|Text {{expand}}]] [[gone|Text {{x}}]] [[{{title}}]]\n"})
    assert [msg.split(" matches")[0] for *_, msg in got] == ["wikilink [[gone|Text {{x}}]]"]
    assert ("Plugins", "wikilink", "mrj-text-expand", False) in edges(repo, cli)


# --- invalid frontmatter ----------------------------------------------------------------------------------

def test_invalid_frontmatter_still_has_its_links_checked_and_drawn(repo: Repo, cli: Any) -> None:
    """Obsidian indexes a note's body whatever its YAML: `check` reported nothing of its links while
    `graph` drew them broken. E001 names the character libyaml found (`'@'`)."""
    got = findings(repo, cli, {"Real.md": "x\n", "Note.md": "---\ntags: [a]\nby: @me\n---\n[[Real]] [[Gone]]\n"})
    assert [(line, code, msg) for _, line, code, msg in got] == [
        (3, "E001", "frontmatter is not valid YAML: found character '@' that cannot start any token"),
        (5, "W221", "wikilink [[Gone]] matches no note (looked for 'Gone' from Note.md)")]
    assert {("Note", "wikilink", "Real", False), ("Note", "wikilink", "Gone", True)} <= edges(repo, cli)


@pytest.mark.parametrize("folder,config", [
    ("Templates", {}), ("Extras/_templates", {}), ("meta", {".obsidian/templates.json": '{"folder": "Meta"}'}),
    ("Mode\u0300les", {".obsidian/templates.json": '{"folder": "modèles"}'}),  # decomposed (macOS), other case
])
def test_a_templater_placeholder_in_the_templates_folder_is_no_error(repo: Repo, cli: Any, folder: str,
                                                                     config: dict[str, str]) -> None:
    """A vault shared without its `.obsidian/` (or whose folder differs in case) still keeps templates in a
    templates folder: their `<% … %>` frontmatter is no error there; elsewhere it is E001, named."""
    template = "---\n<%* const day = tp.date.now() %>\ncreated: <% tp.file.creation_date() %>\n---\n[[Home]]\n"
    got = findings(repo, cli, {**OBSIDIAN, **config, f"{folder}/Daily.md": template, "Loose.md": template,
                               "Home.md": "x\n"})
    assert [(p, line, code) for p, line, code, _ in got] == [("Loose.md", 2, "E001")]
    assert "is a Templater command (<%* … %>)" in got[0][3]


# --- templates ---------------------------------------------------------------------------------------------

def test_templates_are_left_out_and_placeholders_named(repo: Repo, cli: Any) -> None:
    files = {
        **OBSIDIAN, ".obsidian/templates.json": '{"folder": "Templates"}',
        "Templates/Album.md": "---\ncreated: {{date}}\n---\n[[<% tp.file.title %>]]\n",
        "Templates/Bases/Albums.base": "",
        "Albums.md": "![[Albums.base]] [[Album]]\n",
        "Loose template.md": "---\ncategories: []\ncreated: {{date}}\n---\n[[<% tp.file.title %>]] [[{{title}}]]\n",
    }
    got = findings(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [("Loose template.md", 3, "E001")]
    assert "is a template placeholder ({{date}})" in got[0][3] and "unhashable" not in got[0][3]
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["Albums", "Loose template"]


def test_graph_toml_exclude_globs_without_tropo(repo: Repo, cli: Any) -> None:
    files = {".vivary/graph.toml": 'exclude = ["drafts/**", "*.tmp.md"]\n', "drafts/idea.md": "[[nowhere]]\n",
             "x.tmp.md": "[[nowhere]]\n", "Home.md": "[[idea]]\n"}
    assert findings(repo, cli, files) == []  # an excluded note is no node, but a link to it is not broken
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["Home"]


@pytest.mark.parametrize("disk,config", [("NFD", "NFC"), ("NFC", "NFD")])
def test_template_folders_and_exclude_globs_compare_in_nfc(repo: Repo, cli: Any, disk: str, config: str) -> None:
    """A folder macOS wrote decomposed is the one a configuration names composed (and the reverse): Templater's
    `templates_folder` and a graph.toml `exclude` glob leave it out as they do the same name typed alike."""
    import json
    import unicodedata

    def on(form: str, text: str) -> str:
        return unicodedata.normalize(form, text)

    files: dict[str, str | bytes] = {
        **OBSIDIAN,
        ".obsidian/plugins/templater-obsidian/data.json": json.dumps({"templates_folder": on(config, "Modèles")},
                                                                     ensure_ascii=False),
        ".vivary/graph.toml": f'exclude = ["{on(config, "Й")}/**"]\n',
        on(disk, "Modèles/Daily.md"): "---\ncreated: {{date}}\n---\n[[Nowhere]]\n",
        on(disk, "Й/draft.md"): "[[Missing]]\n",
        "Home.md": "[[Daily]] [[draft]]\n",
    }
    assert findings(repo, cli, files) == []  # left out, and a link to either still resolves
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["Home"]


# --- dialects ----------------------------------------------------------------------------------------------

DENDRON_NOTE = "---\nid: {id}\ntitle: {title}\ndesc: ''\nupdated: 1\ncreated: 1\n---\n{body}"


@pytest.mark.parametrize("marker,dialect", [
    ({".obsidian/app.json": "{}"}, "obsidian"), ({"dendron.yml": "version: 5\n"}, "dendron"),
    ({".foam/templates/t.md": "# t\n"}, "foam"), ({".vscode/settings.json": '{"foam.edit.x": 1}'}, "foam"),
    ({"logseq/config.edn": "{}"}, "logseq"), ({}, "obsidian"),
])
def test_dialect_is_detected_and_said(repo: Repo, cli: Any, marker: dict[str, str], dialect: str) -> None:
    repo.commit(files={**marker, "a.md": "# A\n"})
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert r.err.startswith(f"vivary: dialect {dialect}: "), r.err
    d = cli("doctor", "--json", cwd=repo.path).json()
    assert d["workspace"]["dialect"] == dialect


def test_dendron_without_its_config_is_known_by_its_notes(repo: Repo, cli: Any) -> None:
    files = {f"{n}.md": DENDRON_NOTE.format(id=n, title=n, body=body) for n, body in [
        ("root", "[[Topic|dendron.topic]]\n"), ("dendron", "x\n"), ("dendron.topic", "[[gone|dendron.nope]]\n"),
        ("dendron.topic.links", "[[Up|dendron.topic]]\n")]}
    got = findings(repo, cli, files, "--verbose")
    assert [(p, code) for p, _, code, _ in got] == [("dendron.topic.md", "W221")]
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert "vivary: dialect dendron: no editor configuration, but 2 of 4 notes" in r.err


def test_graph_toml_names_the_dialect_and_overrides_a_rule(repo: Repo, cli: Any) -> None:
    files = {".obsidian/app.json": "{}", ".vivary/graph.toml": 'dialect = "dendron"\n', "b.md": "x\n",
             "a.md": "[[shown|b]]\n"}
    assert findings(repo, cli, files) == []
    files[".vivary/graph.toml"] = 'dialect = "dendron"\n[wikilinks]\nalias = "first"\n'
    assert [code for _, _, code, _ in findings(repo, cli, files)] == ["W221"]
    files[".vivary/graph.toml"] = '[links]\nbogus = 1\n'
    repo.commit(files=files)
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "unknown key links.bogus" in r.err


@pytest.mark.parametrize(("toml", "said"), [
    ('# the vault\nexclude = [\n  "x = 1",\n]\nexlcude = ["draft.md"]\n', "5: unknown key exlcude"),
    ('[wikilinks]\nalias = "first"\nenabeld = false\n', "3: unknown key wikilinks.enabeld"),
    ('dialect = """\n[linkz]\n"""\n[linkz]\n', "4: unknown key linkz"),
    ('wikilinks.enabeld = false\n', "1: unknown key wikilinks.enabeld"),
])
def test_a_misspelt_graph_toml_key_is_a_config_error_not_a_default(repo: Repo, cli: Any, toml: str, said: str) -> None:
    """docs/config.md: an unknown key is a configuration error (exit 2), named with its line. A typo left silent
    would keep the note it meant to exclude, or the links it meant to turn off. (A key-like line inside a
    multi-line array or string is not the key.)"""
    repo.commit(files={".obsidian/app.json": "{}", ".vivary/graph.toml": toml, "a.md": "# A\n", "draft.md": "# D\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and f".vivary/graph.toml:{said}; known:" in r.err, r.err


def test_foam_identifiers_and_folder_links(repo: Repo, cli: Any) -> None:
    files = {
        ".foam/x": "", "projects/house/todo.md": "x\n", "work/todo.md": "x\n", "projects/index.md": "# P\n",
        "a.md": "[[house/todo]] [[todo]] [[projects]] [Projects](projects/) [[./work/todo]] [[/work/todo]]\n",
    }
    assert findings(repo, cli, files) == []
    e = {t for f, _, t, _ in edges(repo, cli) if f == "a"}
    assert e == {"projects/house/todo", "projects/index", "work/todo"}


def test_logseq_pages_and_namespaces(repo: Repo, cli: Any) -> None:
    files = {"logseq/config.edn": "{}", "logseq/bak/pages/A.md": "old\n", "pages/Project___Alpha.md": "x\n",
             "pages/Home.md": "[[project/alpha]] [[Not yet written]]\n"}
    assert findings(repo, cli, files) == []  # Logseq makes a page for a link to a page with no file
    assert ("pages/Home", "wikilink", "pages/Project___Alpha", False) in edges(repo, cli)
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["pages/Home", "pages/Project___Alpha"]


LOGSEQ: dict[str, str | bytes] = {
    "logseq/config.edn": "{}",
    "pages/plan.md": "title:: Project Alpha Plan\nalias:: PAP, [[Alpha]]\ntags:: planning, [[big work]], #q3\n"
                     "type:: [[book]]\n\n- the plan #urgent and #[[two words]]\n- ```\n  #notatag [[notalink]]\n  ```\n"
                     "- # A heading is not a tag; nor is https://x.org/#frag or [a](#frag)\n",
    "pages/Planning.md": "- plans\n",
    "pages/two words.md": "- yes\n",
    "journals/2024_01_01.md": "- [[project alpha plan]], [[pap]], [[ALPHA]] and #planning\n- [[plan]]\n",
}


def test_logseq_title_and_alias_name_a_page(repo: Repo, cli: Any) -> None:
    """`title::` is the page's name (not the file's), `alias::` values name it too, any case."""
    assert findings(repo, cli, LOGSEQ) == []
    got = {(t, broken) for f, fld, t, broken in edges(repo, cli) if f == "journals/2024_01_01"}
    assert got == {("pages/plan", False), ("pages/Planning", False), ("plan", True)}
    assert {n["id"]: n for n in graph(repo, cli)["nodes"]}["pages/plan"]["path"] == "pages/plan.md"
    r = cli("blast", "PAP", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.json()["target"] == "pages/plan" and [i["id"] for i in r.json()["impacted"]] == ["journals/2024_01_01"]
    r = cli("query", "plan", "--rev", "HEAD", "--json", cwd=repo.path)
    assert {h["id"]: h["title"] for h in r.json()["results"]}["pages/plan"] == "Project Alpha Plan"


def test_logseq_tags_and_properties_link_pages(repo: Repo, cli: Any) -> None:
    """`#tag`, `#[[two words]]` and the comma-separated values of `tags::` link pages; a link on a property
    line is named by its property (none from `alias::`); code, headings and URLs hold no tags."""
    assert findings(repo, cli, LOGSEQ) == []
    got = {(fld, t, broken) for f, fld, t, broken in edges(repo, cli) if f == "pages/plan"}
    assert got == {("tags", "pages/Planning", False), ("tags", "big work", True), ("tags", "q3", True),
                   ("type", "book", True), ("wikilink", "urgent", True), ("wikilink", "pages/two words", False)}


def test_logseq_front_matter_is_the_page_properties(repo: Repo, cli: Any) -> None:
    files: dict[str, str | bytes] = {
        "logseq/config.edn": "{}", "pages/b.md": "---\ntitle: Bee\nalias: [Buzz]\ntags: [x, y]\n---\n- b\n",
        "pages/a.md": "- [[bee]] [[buzz]]\n",
    }
    assert findings(repo, cli, files) == []
    e = edges(repo, cli)
    assert ("pages/a", "wikilink", "pages/b", False) in e and ("pages/a", "wikilink", "bee", True) not in e
    assert {("pages/b", "tags", "x", True), ("pages/b", "tags", "y", True)} <= e


def test_logseq_org_blocks_are_no_tags_and_verbatim_ones_hold_no_links(repo: Repo, cli: Any) -> None:
    """logseq/docs: `#+BEGIN_NOTE` / `#+END_QUOTE` lines were read as tags (100 bogus edges), and links
    inside `#+BEGIN_SRC` / `#+BEGIN_EXAMPLE` (or an advanced query's Datalog) as links. A quote or note
    block holds Markdown."""
    files: dict[str, str | bytes] = {
        "logseq/config.edn": "{}", "pages/Real.md": "- x\n",
        "pages/A.md": "- #+BEGIN_NOTE\n  a note on [[Real]]\n  #+END_NOTE\n- #+BEGIN_QUOTE\n  quoted #quoted\n"
                      "  #+END_QUOTE\n- #+BEGIN_SRC clojure\n  (str \"[[in code]]\") #notatag\n  #+END_SRC\n"
                      "- #+begin_example\n  [[in example]]\n  #+end_example\n"
                      "- #+BEGIN_QUERY\n  {:inputs [[[in a query]]]}\n  #+END_QUERY\n"
                      "- #+BEGIN_SRC\n  never closed [[open]]\n",
    }
    assert findings(repo, cli, files) == []
    assert {(t, broken) for f, _, t, broken in edges(repo, cli) if f == "pages/A"} == {
        ("pages/Real", False), ("quoted", True), ("open", True)}


def test_logseq_pages_of_org_files_are_link_targets(repo: Repo, cli: Any) -> None:
    """Logseq reads `.org` pages: a link to one is no page without a file (no broken edge), and no node."""
    files: dict[str, str | bytes] = {
        "logseq/config.edn": "{}", "pages/Meeting notes.org": "* notes\n", "pages/Project___Alpha.org": "* a\n",
        "logseq/bak/pages/Old.org": "* old\n", "pages/A.md": "- [[meeting notes]] [[project/alpha]] [[Old]]\n",
    }
    assert findings(repo, cli, files) == []
    assert {(t, broken) for f, _, t, broken in edges(repo, cli) if f == "pages/A"} == {("Old", True)}
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["pages/A"]


def test_tropo_workspace_keeps_the_contract_ids(repo: Repo, cli: Any) -> None:
    files = {"tropo.toml": "version = 1\n", "notes/Core Module.md": "# Core\n", "notes/b.md": "[[core module]] x\n"}
    assert findings(repo, cli, files) == []
    assert [n["id"] for n in graph(repo, cli)["nodes"]] == ["b", "core-module"]
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert "vivary: dialect vivary: tropo.toml workspace" in r.err


# --- many notes share one name -------------------------------------------------------------------------------

@pytest.mark.parametrize("dialect", ["obsidian", "foam"])
def test_a_name_many_notes_share_resolves_without_a_pass_over_them(dialect: str) -> None:
    """A docs tree with an `index.md` per folder, each linking `[[index]]`: every link used to scan every
    same-named note for the one beside it (3,000 such notes took 40 s to check). Each resolution must
    cost about the same however many notes share the name, and pick what the editor picks."""
    import time

    from vivary_git.dialects import Target, defaults
    from vivary_git.dialects.registry import make_resolver

    n = 4000
    # Obsidian opens a root `index.md` for every `[[index]]` (the path from the root comes first): the one in
    # `site/` leaves the tie-break to be worked out for each folder.
    notes = [f"site/d{i:04}/index.md" for i in range(n)] + ["index.md" if dialect == "foam" else "site/index.md"]
    resolver = make_resolver(defaults(dialect), notes, [], dict)
    start = time.perf_counter()
    picked = [resolver.resolve(Target(1, "w", "wikilink", "index", "index"), p).path for p in notes]
    tails = [resolver.resolve(Target(1, "w", "wikilink", f"d{i:04}/index", f"d{i:04}/index"), "x.md").path
             for i in range(n)]
    took = time.perf_counter() - start
    # Obsidian: the note beside the link (from `site/`, the shortest path); Foam: the first alphabetically
    assert picked == (notes if dialect == "obsidian" else ["index.md"] * (n + 1))
    assert tails == notes[:n]  # `[[d0007/index]]`: the one path ending so
    assert took < 2.0, f"{2 * n + 1} resolutions took {took:.1f} s"


# --- every resolution rule docs/vaults.md states, each with the note that must lose present ----------------

class Rule(NamedTuple):
    """`source` links once; it must reach `to` (a node id, None: nothing, "" : a file that is no node),
    though `files` also hold the candidate a wrong rule would pick."""

    rule: str
    files: dict[str, str | bytes]
    source: str
    to: str | None


def _rule(rule: str, source: str, link: str, to: str | None, *others: str, **extra: str) -> Rule:
    files: dict[str, str | bytes] = {p: "# x\n" for p in others}
    files.update(extra)
    files[source] = link + "\n"
    return Rule(rule, files, source, to)


OBSIDIAN_RULES = [
    _rule("the target is before the first |", "A.md", "[[Real|Shown]]", "Real", "Real.md", "Shown.md"),
    _rule("a table cell writes the | as \\|", "A.md", "| x | [[Real\\|Shown]] |", "Real", "Real.md", "Shown.md"),
    _rule("#heading after the name points inside it", "A.md", "[[Real#Part]]", "Real", "Real.md", "Part.md"),
    _rule("a ^ without # is part of the name", "A.md", "[[e^x]]", "e^x", "e^x.md", "e.md"),
    _rule("a note is named by its file name anywhere, any case", "A.md", "[[kyoto]]", "References/Kyoto",
          "References/Kyoto.md", "References/Kyoto City.md"),
    _rule("any case is JavaScript's lowercase, not case folding", "A.md", "[[Masse]]", "Physik/Masse", "Maße.md",
          "Physik/Masse.md"),
    _rule("a Markdown link's case compares the same way", "A.md", "[x](Masse.md)", "Physik/Masse", "Maße.md",
          "Physik/Masse.md"),
    _rule(".md may be written", "A.md", "[[Kyoto.md]]", "Kyoto", "Kyoto.md", "Kyoto md.md"),
    _rule("a name is a file's whole name before a note's", "A.md", "[[photo.png]]", "", "photo.png.md",
          **{"photo.png": ""}),
    _rule("a name without a dot is a file's whole name first too", "A.md", "[[LICENSE]]", "", "LICENSE.md",
          **{"LICENSE": ""}),
    _rule("a folder part's name is a file's whole name first too", "A.md", "[[x/photo.png]]", "",
          "x/photo.png.md", **{"y/x/photo.png": ""}),
    _rule("another file is named with its extension", "A.md", "![[Albums.base]]", "", "Albums.md",
          **{"Bases/Albums.base": ""}),
    _rule("names compare in NFC", "A.md", "[[Caf\u00e9]]", "Caf\u00e9", "Cafe\u0301.md", "Cafe.md"),
    _rule("no other normalisation", "A.md", "[[CSS kodestykker]]", None, "CSS-kodestykker.md"),
    _rule("[[folder/name]] is a path from the root first", "sub/A.md", "[[x/N]]", "x/N", "x/N.md", "sub/x/N.md"),
    _rule("[[folder/name]] is relative to the note next", "sub/A.md", "[[x/N]]", "sub/x/N", "sub/x/N.md",
          "ab/x/N.md"),
    _rule("[[folder/name]] is any path ending so last, the shortest", "A.md", "[[x/N]]", "p/q/x/N", "p/q/x/N.md",
          "long/x/N.md", "N.md"),
    _rule("[[folder/name]] ends so as a string, not at a folder", "A.md", "[[b/N]]", "ab/N", "ab/N.md", "N.md"),
    _rule("[[folder/name]] relative to the note is no step of its own", "sub/A.md", "[[x/N]]", "subx/N",
          "sub/x/N.md", "subx/N.md"),
    _rule("[[/folder/name]] is from the root only", "sub/A.md", "[[/x/N]]", None, "sub/x/N.md", "y/x/N.md"),
    _rule("[[/folder/name]] reaches the root's", "sub/A.md", "[[/x/N]]", "x/N", "sub/x/N.md", "x/N.md"),
    _rule("[[./x]] is relative only", "sub/A.md", "[[./N]]", None, "N.md", "other/N.md"),
    _rule("[[../x]] is relative", "sub/A.md", "[[../N]]", "N", "N.md", "sub/N.md"),
    _rule("one name, several files: the one at the root first", "deep/er/A.md", "[[Sec]]", "Sec", "Sec.md",
          "deep/er/Sec.md"),
    _rule("then the one beside the linking note", "deep/er/A.md", "[[Sec]]", "deep/er/Sec", "x/Sec.md",
          "deep/er/Sec.md"),
    _rule("then one below the note's folder, before a shorter path", "deep/A.md", "[[Sec]]", "deep/er/Sec",
          "deep/er/Sec.md", "x/Sec.md"),
    _rule("below the folder is a string test: a sibling sharing its start", "src/A.md", "[[Sec]]",
          "srcother/Sec", "srcother/Sec.md", "x/Sec.md"),
    _rule("else the shortest path, however many folders", "z/A.md", "[[Sec]]", "a/b/Sec", "a/b/Sec.md",
          "longfoldername/Sec.md"),
    _rule("then the shortest path", "A.md", "[[Sec]]", "zz/Sec", "aaa/Sec.md", "zz/Sec.md"),
    _rule("then the first alphabetically", "A.md", "[[Sec]]", "aa/Sec", "bb/Sec.md", "aa/Sec.md"),
    _rule("a Markdown link is relative to the note first", "sub/A.md", "[x](B.md)", "sub/B", "B.md", "sub/B.md"),
    _rule("a Markdown link is from the root next", "sub/A.md", "[x](c/B.md)", "c/B", "c/B.md", "z/c/B.md"),
    _rule("a Markdown link is by name last", "sub/A.md", "[x](B.md)", "far/B", "far/B.md", "far/deeper/B.md"),
    _rule("a Markdown link by name: fewest folders", "sub/A.md", "[x](y/B.md)", "p/y/B", "s/q/y/B.md", "p/y/B.md"),
    _rule("a Markdown destination is URL-decoded", "A.md", "[x](My%20Note.md)", "My Note", "My Note.md",
          "My%20Note.md"),
    _rule("a Markdown destination may be written <…>", "A.md", "[x](<My Note.md>)", "My Note", "My Note.md", "My.md"),
    _rule("a leading / is the vault root", "sub/A.md", "[x](/B.md)", "B", "B.md", "sub/B.md"),
    _rule("a path that leaves the workspace is not checked", "sub/A.md", "[x](../../C.md)", "", "C.md"),
    _rule("a property's link resolves as a wikilink", "deep/er/A.md", '---\nup: "[[Sec]]"\n---', "deep/er/Sec",
          "x/Sec.md", "deep/er/Sec.md"),
    _rule("the templates folder is left out, a link to it still resolves", "A.md", "[[Daily]]", "",
          "Templates/Daily.md", **{".obsidian/templates.json": '{"folder": "Templates"}'}),
    _rule("a hidden folder's note is neither a node nor a target", "A.md", "[[Sec]]", None, ".trash/Sec.md",
          ".github/ISSUE_TEMPLATE/Sec.md"),
    _rule("a hidden folder the user includes is read", "A.md", "[[Sec]]", ".github/Sec", ".github/Sec.md",
          ".trash/Sec.md", **{".vivary/graph.toml": 'include = [".github"]\n'}),
]
DENDRON_RULES = [
    _rule("a note's name is its dotted hierarchy, any case", "root.md", "[[Topic.Links]]", "topic.links",
          "topic.links.md", "links.md"),
    _rule("any case is JavaScript's lowercase, not case folding", "root.md", "[[masse]]", None, "maße.md"),
    _rule("in [[shown|target]] the target is last", "root.md", "[[b|a]]", "a", "a.md", "b.md"),
    _rule("^block after the name points inside it", "root.md", "[[a^blk]]", "a", "a.md", "blk.md"),
    _rule("a wildcard reference names no note", "root.md", "![[a.*]]", "", "a.b.md"),
    _rule("a link into another vault is not checked", "root.md", "[[dendron://other/a]]", "", "b.md"),
    _rule("a Markdown link is a path, never a name found elsewhere", "root.md", "[x](b.md)", None, "far/b.md"),
    _rule("a Markdown link is spelt as the tree spells it", "root.md", "[x](Data.md)", None, "data.md"),
    _rule("a Markdown link may leave out .md", "root.md", "[x](a)", "a", "a.md", "a.b.md"),
]
FOAM_RULES = [
    _rule("an identifier is any path suffix; the first alphabetically wins", "A.md", "[[wikilinks]]",
          "a/x/wikilinks", "b/wikilinks.md", "a/x/wikilinks.md"),
    _rule("any case is JavaScript's lowercase, not case folding", "A.md", "[[masse]]", "b/Masse", "Maße.md",
          "b/Masse.md"),
    _rule("[[./x]] is a path relative to the note", "sub/A.md", "[[./todo]]", "sub/todo", "todo.md", "sub/todo.md"),
    _rule("[[/x]] is a path from the workspace root", "sub/A.md", "[[/todo]]", "todo", "a/todo.md", "todo.md",
          "sub/todo.md"),
    _rule("a folder link opens its index.md", "A.md", "[[projects]]", "projects/index", "projects/index.md",
          "other/projects/x.md"),
    _rule("a folder.md beside the folder wins", "A.md", "[[projects]]", "projects", "projects.md",
          "projects/index.md"),
    _rule("a Markdown link is a path relative to the note", "sub/A.md", "[x](todo.md)", "sub/todo", "todo.md",
          "sub/todo.md"),
]
LOGSEQ_RULES = [
    _rule("a page's title:: is its name, not its file's", "pages/A.md", "- [[Plan]]", None, "pages/x.md",
          **{"pages/Plan.md": "title:: Other\n"}),
    _rule("any case is JavaScript's lowercase, not case folding", "pages/A.md", "- [[masse]]", None,
          "pages/Maße.md"),
    _rule("title:: names the page", "pages/A.md", "- [[my plan]]", "pages/x", **{"pages/x.md": "title:: My Plan\n"}),
    _rule("___ is a namespace's /", "pages/A.md", "- [[project/alpha]]", "pages/Project___Alpha",
          "pages/Project___Alpha.md", "pages/alpha.md"),
    _rule("a page's own name wins over another's alias", "pages/A.md", "- [[beta]]", "pages/beta",
          "pages/beta.md", **{"pages/aa.md": "alias:: beta\n"}),
]


def _reached(repo: Repo, cli: Any, r: Rule, marker: dict[str, str]) -> tuple[set[tuple[str, bool]], list[str]]:
    repo.commit(files={**marker, **r.files})
    g = graph(repo, cli)
    nodes = {n["path"]: n["id"] for n in g["nodes"]}
    src = nodes[r.source]
    reached = {(e["to"], e["broken"]) for e in g["edges"] if e["from"] == src}
    check = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path).json()
    return reached, [f["code"] for f in check["findings"] if f["path"] == r.source]


def _holds(repo: Repo, cli: Any, r: Rule, marker: dict[str, str], unresolved: bool = True) -> None:
    reached, codes = _reached(repo, cli, r, marker)
    if r.to:
        assert reached == {(r.to, False)}, r.rule
        assert codes == [], r.rule
    elif r.to == "":
        assert reached == set() and codes == [], r.rule  # a file, not a node: no edge, nothing broken
    else:
        assert {broken for _, broken in reached} == {True}, r.rule
        assert codes == (["W221"] if unresolved else []), r.rule


@pytest.mark.parametrize("r", OBSIDIAN_RULES, ids=[r.rule for r in OBSIDIAN_RULES])
def test_obsidian_rule_holds_with_its_loser_present(repo: Repo, cli: Any, r: Rule) -> None:
    _holds(repo, cli, r, OBSIDIAN)


@pytest.mark.parametrize("r", DENDRON_RULES, ids=[r.rule for r in DENDRON_RULES])
def test_dendron_rule_holds_with_its_loser_present(repo: Repo, cli: Any, r: Rule) -> None:
    _holds(repo, cli, r, {"dendron.yml": "version: 5\n"})


@pytest.mark.parametrize("r", FOAM_RULES, ids=[r.rule for r in FOAM_RULES])
def test_foam_rule_holds_with_its_loser_present(repo: Repo, cli: Any, r: Rule) -> None:
    _holds(repo, cli, r, {".foam/x": ""})


@pytest.mark.parametrize("r", LOGSEQ_RULES, ids=[r.rule for r in LOGSEQ_RULES])
def test_logseq_rule_holds_with_its_loser_present(repo: Repo, cli: Any, r: Rule) -> None:
    _holds(repo, cli, r, {"logseq/config.edn": "{}"}, unresolved=False)
