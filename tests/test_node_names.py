"""A node named the way a person names it: `blast "2023 Japan Trip"`, `query --edge up:Kyoto`. Every
command and API that takes a node id also takes what the vault's dialect resolves a link to (the
note's name, a path with or without its extension, any case where the dialect ignores case), and
refuses a name that means several notes, listing them (docs/vaults.md, "Naming a note")."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from conftest import Repo

from vivary_git import open_workspace
from vivary_git.blast import blast
from vivary_git.errors import UsageError
from vivary_git.query import search

OBSIDIAN: dict[str, str | bytes] = {
    ".obsidian/app.json": "{}\n",
    "Notes/2023 Japan Trip.md": "# Japan\n\nWe went to [[Kyoto]].\n",
    "References/Kyoto.md": "# Kyoto\n",
    "Obsidian Sync/Security.md": "[[Kyoto]]\n",
    "Obsidian Publish/Security.md": "[[Kyoto]]\n",
    "Index.md": "[[2023 Japan Trip]]\n",
    "Attachments/map.png": b"",
}


def blast_target(repo: Repo, cli: Any, name: str, *extra: str) -> str:
    r = cli("blast", name, "--rev", "HEAD", "--json", *extra, cwd=repo.path)
    assert r.code == 0, r.err
    target: str = r.json()["target"]
    return target


@pytest.mark.parametrize("name", [
    "Notes/2023 Japan Trip",  # the id
    "2023 Japan Trip",  # the name a wikilink writes
    "2023 japan trip",  # Obsidian ignores case
    "Notes/2023 Japan Trip.md",  # the path
    "notes/2023 JAPAN trip",  # a path, any case
    "2023 Japan Trip.md",  # the name with its extension
    "2023 Japan Trip#Japan",  # a heading of it
])
def test_obsidian_names_a_note_as_a_wikilink_does(repo: Repo, cli: Any, name: str) -> None:
    repo.commit(files=OBSIDIAN)
    assert blast_target(repo, cli, name) == "Notes/2023 Japan Trip"


def test_blast_by_name_reports_what_depends_on_it(repo: Repo, cli: Any) -> None:
    repo.commit(files=OBSIDIAN)
    r = cli("blast", "kyoto", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["target"] == "References/Kyoto"
    assert [(i["id"], i["distance"]) for i in got["impacted"]] == [
        ("Notes/2023 Japan Trip", 1), ("Obsidian Publish/Security", 1), ("Obsidian Sync/Security", 1), ("Index", 2),
    ]
    text = cli("blast", "kyoto", "--rev", "HEAD", cwd=repo.path)
    assert text.out.startswith("vivary blast: References/Kyoto [untyped]")


def test_a_name_of_two_notes_is_refused_with_both_listed(repo: Repo, cli: Any) -> None:
    repo.commit(files=OBSIDIAN)
    r = cli("blast", "Security", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2
    assert r.out == ""
    assert "'Security' names 2 notes: 'Obsidian Publish/Security', 'Obsidian Sync/Security'" in r.err
    # The path settles it.
    assert blast_target(repo, cli, "Obsidian Sync/Security") == "Obsidian Sync/Security"


def test_a_name_of_no_note_is_refused(repo: Repo, cli: Any) -> None:
    repo.commit(files=OBSIDIAN)
    for name in ("Nowhere", "map.png", "Attachments/map.png", ""):
        r = cli("blast", name, "--rev", "HEAD", cwd=repo.path)
        assert r.code == 2, name
        assert f"no node named {name!r}" in r.err


def test_query_edge_target_is_a_name(repo: Repo, cli: Any) -> None:
    repo.commit(files=OBSIDIAN)
    r = cli("query", "japan", "--rev", "HEAD", "--edge", "wikilink:kyoto", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    linking = ["Notes/2023 Japan Trip", "Obsidian Publish/Security", "Obsidian Sync/Security"]
    assert [h["id"] for h in got["results"]] == linking  # Index links no Kyoto: filtered out
    assert got["filters"]["edge"] == ["wikilink:References/Kyoto"]  # what was applied
    r = cli("find", "japan", "--rev", "HEAD", "--edge", "wikilink:KYOTO", "--json", cwd=repo.path)
    assert [h["id"] for h in r.json()["results"]] == linking
    # A bare field is no name to look up.
    r = cli("query", "kyoto", "--rev", "HEAD", "--edge", "wikilink", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["filters"]["edge"] == ["wikilink"]
    r = cli("query", "japan", "--rev", "HEAD", "--edge", "wikilink:Security", cwd=repo.path)
    assert r.code == 2 and "'Security' names 2 notes" in r.err
    r = cli("query", "japan", "--rev", "HEAD", "--edge", "wikilink:Nowhere", cwd=repo.path)
    assert r.code == 2 and "no node named 'Nowhere'" in r.err


def test_library_api_takes_names(repo: Repo) -> None:
    repo.commit(files=OBSIDIAN)
    ws = open_workspace(repo.path, rev="HEAD")
    assert ws.resolve_node("2023 japan trip").path == "Notes/2023 Japan Trip.md"
    g = ws.graph()
    assert blast(g, "Kyoto").target == "References/Kyoto"
    hits = search(g, ws.notes(), "japan", edges=["wikilink:Kyoto"], hidden=frozenset())
    assert hits.results[0].id == "Notes/2023 Japan Trip"
    assert "Index" not in [h.id for h in hits.results]
    with pytest.raises(UsageError, match="names 2 notes"):
        blast(g, "security")


def test_a_path_from_the_repository_top_names_a_note_of_a_subfolder_workspace(repo: Repo, cli: Any) -> None:
    repo.commit(files={f"vault/{p}": v for p, v in OBSIDIAN.items()})
    assert blast_target(repo, cli, "vault/References/Kyoto.md", "--root", "vault") == "References/Kyoto"
    assert blast_target(repo, cli, "References/Kyoto.md", "--root", "vault") == "References/Kyoto"


def test_dendron_names_are_hierarchies_any_case(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "dendron.yml": "version: 5\n",
        "root.md": "# Root\n",
        "dendron.topic.md": "[[dendron.topic.links]]\n",
        "dendron.topic.links.md": "# Links\n",
    })
    assert blast_target(repo, cli, "Dendron.Topic.Links") == "dendron.topic.links"
    assert blast_target(repo, cli, "dendron.topic.links.md") == "dendron.topic.links"
    r = cli("blast", "links", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "no node named 'links'" in r.err  # a Dendron name is the whole hierarchy


def test_foam_identifiers_are_path_suffixes_and_folders(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        ".foam/config.json": "{}\n",
        "user/index.md": "# User\n",
        "user/features/wikilinks.md": "# W\n[[user]]\n",
        "dev/wikilinks.md": "# Dev\n",
    })
    assert blast_target(repo, cli, "features/wikilinks") == "user/features/wikilinks"
    assert blast_target(repo, cli, "user") == "user/index"  # a folder: its index
    r = cli("blast", "WikiLinks", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "'WikiLinks' names 2 notes: 'dev/wikilinks', 'user/features/wikilinks'" in r.err


@pytest.mark.parametrize("editor", [{".obsidian/app.json": "{}\n"}, {".foam/config.json": "{}\n"}])
def test_a_greek_name_ending_in_sigma_is_lowercased_with_its_md(repo: Repo, cli: Any, editor: dict[str, str]) -> None:
    """Obsidian matches `(name + ".md").toLowerCase()` with `file.name.toLowerCase()`, and Foam its identifier plus
    `.md` with the file's path alike: a capital `Σ` ending a name is `σ` there (`ΑΣ.md` is `ασ.md`), not the final
    `ς` it is alone. So `[[ΑΣ]]` (and `blast ΑΣ`) is `Δ/ασ.md`, and `[[λογος]]` is not `ΛΟΓΟΣ.md` but a broken link,
    as the editors show it; in a folder's name a `Σ` before `/` is final in both."""
    repo.commit(files={**editor, "Δ/ασ.md": "# as\n", "ΛΟΓΟΣ.md": "# Logos\n", "ΟΔΟΣ/Χ.md": "# x\n",
                       "Home.md": "[[ΑΣ]]\n[[λογος]]\n[[ΛΟΓΟΣ]]\n[[οδος/χ]]\n"})
    assert blast_target(repo, cli, "ΑΣ") == "Δ/ασ"
    assert blast_target(repo, cli, "λογοσ") == "ΛΟΓΟΣ"
    r = cli("blast", "λογος", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "no node named 'λογος'" in r.err
    r = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    got = {(e["to"], e["broken"]) for e in r.json()["edges"] if e["from"] == "Home"}
    assert got == {("Δ/ασ", False), ("λογος", True), ("ΛΟΓΟΣ", False), ("ΟΔΟΣ/Χ", False)}


def test_a_dendron_name_ending_in_sigma_is_lowercased_alone(repo: Repo, cli: Any) -> None:
    """Dendron's names have no extension (`fname`), lowercased alone: `[[λογος]]` is `ΛΟΓΟΣ.md`."""
    repo.commit(files={"dendron.yml": "version: 5\n", "ΛΟΓΟΣ.md": "# Logos\n", "root.md": "[[λογος]]\n"})
    assert blast_target(repo, cli, "λογος") == "ΛΟΓΟΣ"
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.out + r.err


def test_logseq_page_names_keep_their_namespace(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "logseq/config.edn": "{}\n",
        "pages/Project___Alpha.md": "- alpha\n",
        "pages/Other.md": "- [[project/alpha]]\n",
    })
    assert blast_target(repo, cli, "Project/Alpha") == "pages/Project___Alpha"


def test_vivary_workspace_names_are_slugged(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n',
        "decisions/0001-use-sqlite.md": "# Use SQLite\n",
        "decisions/0002-other.md": "[[0001-use-sqlite]]\n",
    })
    assert blast_target(repo, cli, "0001 Use SQLite") == "0001-use-sqlite"
    assert blast_target(repo, cli, "decisions/0001-use-sqlite.md") == "0001-use-sqlite"


def test_a_vivary_link_in_another_script_reaches_the_note_of_that_name_not_its_lossy_slug(repo: Repo, cli: Any) -> None:
    """The contract's ids are ASCII slugs: `Über.md` is `ber` and `заметка.md` is `untitled`. A link
    `[[Über]]` slugged the same way reached `ber.md`, another note, and `[[日本語]]` the Cyrillic one,
    with no finding. A name its slug would lose letters of is looked for as a file's name."""
    repo.commit(files={
        "tropo.toml": "version = 1\n[base]\nallow_untyped = true\n",
        "ber.md": "beer\n",
        "заметка.md": "a note\n",
        "links.md": "[[Über]] [[日本語]] [[ЗАМЕТКА]] [[ber]] [[Zettel|заметка]]\n",
    })
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    broken = [(f["path"], f["code"], f["message"]) for f in r.json()["findings"]]
    assert broken == [
        ("links.md", "W221", "wikilink [[Über]] matches no document id (looked for 'Über')"),
        ("links.md", "W221", "wikilink [[日本語]] matches no document id (looked for '日本語')"),
    ], broken
    g = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert sorted((e["to"], e["broken"]) for e in g["edges"] if e["from"] == "links") == [
        ("ber", False), ("untitled", False), ("Über", True), ("日本語", True),
    ]
    # The name a link writes names the note on the command line too.
    assert blast_target(repo, cli, "заметка") == "untitled"


def test_a_name_reaches_the_note_a_link_to_it_reaches(repo: Repo, cli: Any) -> None:
    """A vivary link in another script reaches the first note of that name in document order: `a/Über.md`,
    written decomposed as macOS writes names (its id `u-ber`), before `b/Über.md` (`ber`). The command line looked
    names up among the nodes in id order, and `blast Über` answered `ber`, a note the link never reaches."""
    decomposed = unicodedata.normalize("NFD", "Über")
    repo.commit(files={
        "tropo.toml": "version = 1\n[base]\nallow_untyped = true\n",
        f"a/{decomposed}.md": "# Über, written on a Mac\n",
        "b/Über.md": "# Über\n",
        "notes/home.md": "[[Über]]\n",
    })
    g = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert [(e["from"], e["to"]) for e in g["edges"]] == [("home", "u-ber")]
    assert blast_target(repo, cli, "Über") == "u-ber"


def test_a_name_a_duplicate_answers_to_is_not_taken_for_the_note_that_owns_its_id(repo: Repo, cli: Any) -> None:
    """With the contract's ids two notes of one name are one id (E130): the first in document order keeps it and
    the other is in no graph. A link still reaches the other one where the editor picks it (the shorter path, or
    the one spelt as the link), and the command line silently answered with the note that owns the id. It says
    what the name names now: both notes, or the duplicate alone, each with how to settle it."""
    repo.commit(files={
        ".obsidian/app.json": "{}\n", ".vivary/graph.toml": '[links]\nids = "slug"\n',
        "a/c/Some Note.md": "# Some Note, filed deep\n", "b/Some Note.md": "# Some Note\n",
        "Notes/foo.md": "# Foo\n", "notes/foo.md": "# foo\n",
        "home.md": "[[Some Note]] [[notes/foo]] [[Notes/foo]]\n",
    })
    g = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert [(e["from"], e["to"]) for e in g["edges"]] == [("home", "foo")]  # [[Notes/foo]]; the others reach duplicates
    r = cli("blast", "Some Note", "--rev", "HEAD", cwd=repo.path)
    assert (r.code, r.out) == (2, "")
    assert r.err == ("git vivary blast: 'Some Note' names 2 notes: 'some-note', 'b/Some Note.md' (its id is another "
                     "note's, E130: in no graph); give one of these IDs (or its path)\n")
    r = cli("blast", "notes/foo", "--rev", "HEAD", cwd=repo.path)
    assert (r.code, r.out) == (2, "")
    assert r.err == ("git vivary blast: 'notes/foo' names 'notes/foo.md', whose id another note has (E130), so it "
                     "is in no graph: rename one of the two files (`git vivary check` names them)\n")
    assert blast_target(repo, cli, "Notes/foo") == "foo"
    assert blast_target(repo, cli, "some-note") == "some-note"
    assert blast_target(repo, cli, "a/c/Some Note") == "some-note"


def test_a_logseq_file_name_that_is_no_page_name_names_nothing(repo: Repo, cli: Any) -> None:
    """pages/bar.md with `title:: Foo` is the page Foo: `[[bar]]` is broken (Logseq makes a new page `bar`). The
    command line still found `bar` by its file name and answered with the page Foo. Its name, its path and its id
    still name it."""
    repo.commit(files={
        "logseq/config.edn": "{}\n", ".vivary/graph.toml": "[links]\nunresolved = true\n",
        "pages/bar.md": "title:: Foo\n\n- the page called Foo\n",
        "journals/2024_01_01.md": "- see [[bar]] and [[Foo]]\n",
    })
    g = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert sorted((e["to"], e["broken"]) for e in g["edges"]) == [("bar", True), ("pages/bar", False)]
    r = cli("blast", "bar", "--rev", "HEAD", cwd=repo.path)
    assert (r.code, r.out) == (2, "")
    assert "no node named 'bar'" in r.err
    for name in ("Foo", "foo", "pages/bar", "Pages/Bar", "pages/bar.md"):
        assert blast_target(repo, cli, name) == "pages/bar", name


def test_mcp_read_takes_an_id_as_it_is_spelt_and_a_path_in_either_unicode_form(repo: Repo) -> None:
    """An id is read as given: `Meeting ` (a file name with a trailing space, legal on Linux and macOS) is its own
    note, not `Meeting` (the id with the space stripped off). A path is matched in NFC as names are: `Café.md`
    typed composed is the note macOS committed decomposed (`Cafe\\u0301.md`), as its id `Café` already was."""
    from vivary_git.mcp.service import MemoryService

    decomposed = unicodedata.normalize("NFD", "Café.md")
    repo.commit(files={".obsidian/app.json": "{}\n", "Meeting .md": "# The spaced one\n",
                       "Meeting.md": "# The plain one\n", decomposed: "# Café\n"})
    service = MemoryService(repo.path)
    assert service.read("Meeting ").title == "The spaced one"
    assert service.read("Meeting").title == "The plain one"
    assert service.read(" Meeting\n").title == "The plain one"  # surrounding blanks no id has are still forgiven
    for asked in ("Café", "Café.md", decomposed, unicodedata.normalize("NFC", "Café.md")):
        got = service.read(asked)
        assert (got.id, got.path) == ("Café", decomposed), asked
    assert service.context("Meeting ").nodes[0].id == "Meeting "


def test_a_name_two_root_notes_answer_to_in_other_cases_names_both(repo: Repo, cli: Any) -> None:
    """`USER.md` (private by the floor, tracked) beside `user.md` at the root of a plain vault (legal on Linux):
    each id and each path names its own note, and so does a name spelt as one of them. `blast User`, spelt as
    neither, silently answered the private `USER` (the file Obsidian happens to index first), as `x/FOO` answered
    `x/Foo` where `FOO` alone listed both. Such a name now names both notes, as a name several folders share does."""
    repo.commit(files={
        "USER.md": "# Me\n", "user.md": "# User guide\n", "x/Foo.md": "# F\n", "x/foo.md": "# f\n",
        "a.md": "[[user]] [[USER]]\n",
    })
    for name, want in (("user", "user"), ("USER", "USER"), ("user.md", "user"), ("USER.md", "USER"),
                       ("x/Foo", "x/Foo"), ("x/foo.md", "x/foo")):
        assert blast_target(repo, cli, name) == want, name
    for name, ids in (("User", "'USER', 'user'"), ("User.md", "'USER', 'user'"), ("x/FOO", "'x/Foo', 'x/foo'")):
        r = cli("blast", name, "--rev", "HEAD", cwd=repo.path)
        assert (r.code, r.out) == (2, ""), name
        assert r.err == f"git vivary blast: {name!r} names 2 notes: {ids}; give one of these IDs (or its path)\n", name
