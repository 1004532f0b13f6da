"""Names a checkout on another system cannot hold (vivary_git/portable.py): two notes that are one file on macOS and
Windows (W226), a name Git for Windows refuses (W227). Real commits in temp repos, checked through the CLI."""

from __future__ import annotations

import unicodedata
from typing import Any

import pytest
from conftest import Repo

from vivary_git import escape
from vivary_git.gates.sarif import RULES

NFD = unicodedata.normalize("NFD", "Café.md")


def findings(cli: Any, repo: Repo, *args: str) -> list[tuple[str, str, str]]:
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", *args, cwd=repo.path)
    assert r.code in (0, 1), r.err
    return [(f["path"], f["code"], f["message"]) for f in r.json()["findings"]]


def test_two_notes_that_are_one_file_on_macos_and_windows_are_named_both(repo: Repo, cli: Any) -> None:
    """`Note.md` and `note.md` both resolve in the graph; only one survives a checkout on a case-insensitive file
    system. The second in document order is reported, naming the first; a folder spelt in two cases collides only
    where the whole path does."""
    repo.commit("notes", {"Note.md": "# Upper\n", "note.md": "# lower\n\n[[Note]]\n",
                          "Ideas/a.md": "# a\n", "ideas/A.md": "# A\n", "ideas/b.md": "# b\n",
                          "Σοφία/ΛΟΓΟΣ.md": "# upper\n", "σοφία/λογος.md": "# lower\n"})
    got = findings(cli, repo)
    assert [(p, c) for p, c, _ in got] == [("note.md", "W226"), ("ideas/A.md", "W226"), ("σοφία/λογος.md", "W226")]
    assert got[0][2] == ("'note.md' and 'Note.md' are one file on macOS and Windows (names that differ only in "
                         "case): a checkout there keeps one of them, shows it in place of the other and reports it "
                         "modified; rename one (git mv 'note.md' NEW-NAME)")
    assert "'ideas/A.md' and 'Ideas/a.md' are one file" in got[1][2]
    text = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert text.code == 1, text.out  # a warning, an error under `strict` (the default), as every W…
    assert "note.md:1: error W226: 'note.md' and 'Note.md' are one file on macOS and Windows" in text.out


def test_one_name_in_two_unicode_forms_is_one_finding(repo: Repo, cli: Any) -> None:
    """`Café.md` composed and decomposed are two paths to Git and one file on macOS. In a vault that is already an
    E130 naming both (ids are paths in NFC), so no W226 repeats it; a third spelling in another case is W226 for
    each of them, naming it: on macOS and Windows for the composed one, on macOS alone for the decomposed one
    (Windows normalises no name)."""
    repo.commit("cafe", {"Café.md": "# composed\n", NFD: "# decomposed\n", "CAFÉ.md": "# upper\n"})
    got = findings(cli, repo)
    assert [(p, c) for p, c, _ in got] == [(NFD, "W226"), ("Café.md", "W226"), ("Café.md", "E130")], got
    assert got[0][2].startswith(f"'{NFD}' and 'CAFÉ.md' are one file on macOS (names that differ in case and in "
                                "Unicode form)")
    assert got[1][2].startswith("'Café.md' and 'CAFÉ.md' are one file on macOS and Windows (names that differ only "
                                "in case)")
    repo.git("rm", "-q", "CAFÉ.md")
    repo.commit("pair")
    assert [(p, c) for p, c, _ in findings(cli, repo)] == [("Café.md", "E130")]


def test_a_pair_the_contract_ids_already_report_is_not_reported_twice(repo: Repo, cli: Any) -> None:
    """With the contract's ids (`tropo.toml`) `Alpha.md` and `alpha.md` are one id: E130 names both."""
    repo.commit("tropo", {"tropo.toml": "version = 1\n", "notes/Alpha.md": "# A\n", "notes/alpha.md": "# a\n"})
    assert [c for _, c, _ in findings(cli, repo)] == ["E130"]


@pytest.mark.parametrize(("path", "problem", "rename"), [
    ("aux/a.md", "'aux' is a device name Windows reserves (con, prn, aux, nul, com1-com9, lpt1-lpt9, conin$, "
                 "conout$, with any extension)", "aux"),
    ("notes/Con.md", "'Con.md' is a device name Windows reserves", "notes/Con.md"),
    ("notes/CONOUT$.md", "'CONOUT$.md' is a device name Windows reserves (con, prn, aux, nul, com1-com9, lpt1-lpt9, "
                         "conin$, conout$, with any extension)", "notes/CONOUT$.md"),
    ("notes/LPT1 .txt.md", "'LPT1 .txt.md' is a device name Windows reserves", "notes/LPT1 .txt.md"),
    ("What?.md", "'?' in 'What?.md' is a character Windows refuses in a name", "What?.md"),
    ("Meeting: Q3.md", "':' in 'Meeting: Q3.md' is a character Windows refuses in a name (Obsidian refuses it too, "
                       "and macOS Finder shows it as '/')", "Meeting: Q3.md"),
    ('a "quote".md', "'\"' in 'a \"quote\".md' is a character Windows refuses", 'a "quote".md'),
    ("back\\slash.md", "'\\' in 'back\\slash.md' is a character Windows refuses", "back\\slash.md"),
    ("tab\there.md", "'\t' in 'tab\there.md' is a character Windows refuses", "tab\there.md"),
    ("v1./notes.md", "'v1.' ends in a dot, which Windows drops from a name", "v1."),
    ("draft /notes.md", "'draft ' ends in a space, which Windows drops from a name", "draft "),
])
def test_a_name_git_for_windows_refuses_is_named_with_its_fix(repo: Repo, cli: Any, path: str, problem: str,
                                                              rename: str) -> None:
    repo.commit("names", {path: "# x\n", "console.md": "# fine\n", "com10.md": "# fine\n", "nul-pointer.md": "# ok\n",
                          "a.b/c.md": "# fine\n"})
    got = findings(cli, repo)
    assert [(p, c) for p, c, _ in got] == [(path, "W227")], got
    message = got[0][2]
    assert message.startswith(f"Git for Windows cannot check out '{path}': {problem}"), message
    assert message.endswith(f"every Windows clone stops at it: rename it (git mv '{rename}' NEW-NAME)"), message
    text = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path).out  # a tab as `\t`: one line, inert
    assert f"{escape.text(path)}:1: warning W227: {escape.text(message)}\n" in text, text


def test_portable_in_graph_toml_turns_each_off(repo: Repo, cli: Any) -> None:
    """A team whose clones are all on Linux may not care: `[portable]` turns each finding off for the vault;
    `vivary-ignore` in the note does not (its name is no line of it, as E130)."""
    repo.commit("names", {"Note.md": "# A\n", "note.md": "---\nvivary-ignore: [W226, W227]\n---\n# a\n",
                          "aux.md": "<!-- vivary-ignore W227 -->\n# aux\n"})
    assert sorted(c for _, c, _ in findings(cli, repo)) == ["W226", "W227"]
    repo.commit("linux", {".vivary/graph.toml": "[portable]\ncollisions = false\n"})
    assert [c for _, c, _ in findings(cli, repo)] == ["W227"]
    repo.commit("linux", {".vivary/graph.toml": "[portable]\ncollisions = false\nwindows = false\n"})
    assert findings(cli, repo) == []
    repo.commit("bad", {".vivary/graph.toml": "[portable]\nwindows = \"no\"\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and ".vivary/graph.toml:2: portable.windows must be true or false, got 'no'" in r.err, r.err
    repo.commit("typo", {".vivary/graph.toml": "[portable]\ncase = false\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "unknown key portable.case; known: collisions, windows" in r.err, r.err


def test_an_edit_of_a_colliding_note_keeps_its_finding_in_a_warm_staged_check(repo: Repo, cli: Any) -> None:
    """`check --staged` re-derives only the edited notes from the cached graph: a name's findings stay with the
    path, whose name an edit does not change."""
    repo.commit("notes", {"Note.md": "# A\n", "note.md": "# a\n", "aux.md": "# aux\n", "Other.md": "# o\n"})
    assert sorted(c for _, c, _ in findings(cli, repo)) == ["W226", "W227"]
    repo.write({"note.md": "# a\n\nMore text, [[Other]].\n", "aux.md": "# aux\n\nEdited.\n"})
    repo.git("add", "-A")
    r = cli("check", "--staged", "--json", "--lenient", cwd=repo.path)
    assert sorted((f["path"], f["code"]) for f in r.json()["findings"]) == [("aux.md", "W227"), ("note.md", "W226")]


def test_each_code_has_its_sarif_rule() -> None:
    assert (RULES["W226"].name, RULES["W227"].name) == ("CaseCollision", "WindowsRefusedName")


def test_the_whole_vault_answer_agrees_with_each_path_s() -> None:
    """`findings` decides a vault with neither over all its paths at once; a name that is one of them, anywhere
    among harmless ones, is found as path by path (a line break in a name, too)."""
    from vivary_git import portable

    harmless = ["a.md", "concepts/config.md", "com10.md", "x.y/z.md", "Ünïcode/σ.md", "nul-pointer.md"]
    assert portable.findings(harmless) == []
    for bad in ("aux", "b/Con.txt.md", "c/lpt9 .md", "d /e.md", "f./g.md", "h|i.md", "j\nk.md", "l\x1fm.md",
                "conin$.md", "A.md", "Concepts/Config.md", "ünïcode/Σ.md", "Ünïcode/ς.md"):
        for at in (0, 3, len(harmless)):
            paths = [*harmless[:at], bad, *harmless[at:]]
            got = portable.findings(paths)
            one = [f for p in paths for f in portable.findings([p])]
            assert got and all(bad in (f.path, *f.message.split("'")) for f in got), (bad, got)
            assert [f for f in got if f.code == "W227"] == one, (bad, got)


def test_attachments_and_a_file_named_as_a_folder_collide_and_are_refused_as_notes_are(repo: Repo, cli: Any) -> None:
    """Every file a link may reach is checked out too: `Photo.png` beside `photo.png`, `aux.png` or `a:b.pdf`
    stop a macOS or Windows checkout as a note's name does, and so does a file `Assets` beside a folder `assets/`.
    `Notes.md` beside `notes/` is two names there too. A finding on a file that is no note carries its path and
    line 1 and leaves the count of clean documents alone."""
    repo.commit("vault", {"index.md": "# i\n\n![[Photo.png]] ![[a:b.pdf]]\n", "Photo.png": "p", "photo.png": "q",
                          "aux.png": "x", "a:b.pdf": "x", "Assets": "x", "assets/pic.png": "x",
                          "Notes.md": "# N\n", "notes/a.md": "# a\n", "Board.canvas": "{}", "board.canvas": "{}"})
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path)
    doc = r.json()
    got = [(f["path"], f["line"], f["code"]) for f in doc["findings"]]
    assert got == [("Assets", 1, "W226"), ("a:b.pdf", 1, "W227"), ("aux.png", 1, "W227"),
                   ("board.canvas", 1, "W226"), ("photo.png", 1, "W226")], got
    assert (doc["checked"], doc["clean"]) == (3, 3), doc
    messages = {f["path"]: f["message"] for f in doc["findings"]}
    assert messages["Assets"] == ("'Assets' and the folder 'assets/' are one name on macOS and Windows: a checkout "
                                  "there cannot hold both and leaves one out; rename one (git mv 'Assets' NEW-NAME)")
    assert messages["photo.png"].startswith("'photo.png' and 'Photo.png' are one file on macOS and Windows")
    repo.commit("linux", {".vivary/graph.toml": "[portable]\ncollisions = false\nwindows = false\n"})
    assert findings(cli, repo) == []


def test_a_folder_named_as_a_file_in_another_case_is_reported_on_the_file_wherever_it_sorts(repo: Repo,
                                                                                             cli: Any) -> None:
    repo.commit("vault", {"a/readme": "x", "a/README/b.md": "# b\n", "z.md": "# z\n"})
    assert [(p, c) for p, c, _ in findings(cli, repo)] == [("a/readme", "W226")]


@pytest.mark.parametrize(("path", "code"), [
    ("a/" + "x" * 194 + ".md", None),  # 199 characters: the longest a path may have
    ("a/" + "x" * 195 + ".md", "W228"),
    ("a/" + "x" * 193 + "\U0001f600.md", "W228"),  # an emoji is two UTF-16 units: 200 to Windows
    ("f" * 187 + "/a.png", None),  # a folder of 187 characters: the longest a folder may have
    ("f" * 188 + "/a.png", "W228"),
])
def test_a_path_too_long_for_a_windows_checkout_is_w228(repo: Repo, cli: Any, path: str, code: str | None) -> None:
    """Git for Windows writes a file only within MAX_PATH (260 with the NUL) and a folder within 248, counting the
    checkout's own folder, unless core.longPaths is set: with 60 characters allowed that folder, a path over 199
    or a folder over 187 is left out of a checkout."""
    repo.commit("long", {path: "# x\n", "index.md": "# i\n"})
    got = findings(cli, repo)
    assert [c for _, c, _ in got] == ([code] if code else []), got
    if code is None:
        return
    assert got[0][0] == path
    folder = path.rpartition("/")[0]
    shorten = folder if len(folder) > 187 else path
    assert got[0][2].endswith(f"unless core.longPaths is set; shorten it (git mv '{shorten}' NEW-NAME) or set "
                              "`git config core.longPaths true` in each Windows clone"), got
    repo.commit("off", {".vivary/graph.toml": "[portable]\nwindows = false\n"})
    assert findings(cli, repo) == []


def test_an_attachment_added_beside_its_twin_is_found_in_a_warm_staged_check(repo: Repo, cli: Any) -> None:
    """`check --staged` patches the cached graph when only files no link names were added: the names those files
    make collide with are decided anew, and a removed twin takes its finding with it."""
    repo.commit("vault", {"index.md": "# i\n", "Photo.png": "p", "Other.md": "# o\n"})
    assert findings(cli, repo) == []
    repo.write({"photo.png": "q"})
    repo.git("add", "-A")
    r = cli("check", "--staged", "--json", "--lenient", cwd=repo.path)
    assert [(f["path"], f["code"]) for f in r.json()["findings"]] == [("photo.png", "W226")], r.out
    repo.commit("twin")
    repo.git("rm", "-q", "--cached", "Photo.png")
    r = cli("check", "--staged", "--json", "--lenient", cwd=repo.path)
    assert r.json()["findings"] == [], r.out


def test_a_finding_on_an_attachment_is_new_since_a_base_and_annotated_by_ci(repo: Repo, cli: Any) -> None:
    repo.commit("vault", {"index.md": "# i\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.commit("scan", {"aux.png": "x"})
    r = cli("check", "--rev", "HEAD", "--new-since", base, "--json", "--lenient", cwd=repo.path)
    assert [(f["path"], f["code"]) for f in r.json()["findings"]] == [("aux.png", "W227")], r.out
    r = cli("check", "--rev", "HEAD", "--new-since", "HEAD", "--json", "--lenient", cwd=repo.path)
    assert r.json()["findings"] == [], r.out
    gh = cli("ci", "--base", base, "--format", "github", cwd=repo.path)
    line = next(x for x in gh.out.splitlines() if "W227" in x)
    assert line.startswith("::error file=aux.png,line=1,") and "Git for Windows cannot check out" in line, gh.out


def test_a_file_added_beside_a_pair_e130_names_repeats_nothing_in_a_staged_check(repo: Repo, cli: Any) -> None:
    """A vault keeps both of `Café.md` composed and decomposed (E130 names the pair, so no W226 repeats it): a
    staged check that adds an attachment does not report the pair again."""
    repo.commit("cafe", {"Café.md": "# composed\n", NFD: "# decomposed\n", "index.md": "# i\n"})
    assert [c for _, c, _ in findings(cli, repo)] == ["E130"]
    repo.write({"pic.png": "x"})
    repo.git("add", "-A")
    r = cli("check", "--staged", "--json", "--lenient", cwd=repo.path)
    assert [f["code"] for f in r.json()["findings"]] == ["E130"], r.out


def test_a_template_left_out_of_the_graph_leaves_the_count_of_clean_documents_alone(repo: Repo, cli: Any) -> None:
    """A template where templates are kept is no document (no node, not checked), as an attachment is: a name's
    finding on it is reported and lowers no count of clean documents, in a check, a warm one and a --new-since."""
    repo.commit("vault", {".obsidian/templates.json": '{"folder": "Templates"}', "index.md": "# i\n",
                          "b.md": "# b\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    repo.commit("templates", {"Templates/aux.md": "# {{title}}\n", "Templates/Day.md": "# day\n",
                              "Templates/day.md": "# day\n"})
    for _ in range(2):  # cold, then from the cached check
        doc = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path).json()
        assert [(f["path"], f["code"]) for f in doc["findings"]] == [("Templates/aux.md", "W227"),
                                                                      ("Templates/day.md", "W226")], doc
        assert (doc["checked"], doc["clean"]) == (2, 2), doc
    new = cli("check", "--rev", "HEAD", "--new-since", base, "--json", "--lenient", cwd=repo.path).json()
    assert (new["checked"], new["clean"], len(new["findings"])) == (2, 2, 2), new
    repo.commit("note", {"aux.md": "# aux\n"})  # a note of that name is a document: it is not clean
    doc = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path).json()
    assert (doc["checked"], doc["clean"]) == (3, 2), doc


def test_a_path_s_length_on_windows_counts_the_workspace_s_folder_from_the_repository_s_top(repo: Repo,
                                                                                          cli: Any) -> None:
    """A checkout writes every path from the repository's top: in a workspace in a subfolder (`--root`, or one a
    `tropo.toml` marks) that folder's name counts. The same notes under a shorter folder are within the limit (and
    that graph, of the same tree, is not taken for this one's); the message names the path from the workspace, as
    every finding does."""
    name = "x" * 190 + ".md"  # 193 characters in the workspace
    folder = "f" * 180  # 186 characters with 'notes/', within the 187 a folder may have; 188 with 'a/notes/'
    files = {name: "# x\n", "index.md": "# i\n", f"{folder}/b.png": "x"}
    repo.commit("long", {f"{where}/{path}": text for where in ("notes", "a/notes") for path, text in files.items()})
    assert findings(cli, repo, "--root", "notes") == []  # 199 characters: the longest a path may have
    got = findings(cli, repo, "--root", "a/notes")
    assert [(p, c) for p, c, _ in got] == [(name, "W228"), (f"{folder}/b.png", "W228")], got
    assert (f"'{name}' is too long for a Windows checkout: it has 201 characters from the repository's top (the "
            "workspace's folder 'a/notes/' counts), over the 199 a path may have") in got[0][2]
    assert f"shorten it (git mv '{name}' NEW-NAME)" in got[0][2]
    assert ("its folder's path has 188 characters from the repository's top (the workspace's folder 'a/notes/' "
            "counts), over the 187 a folder's may have") in got[1][2]
    assert got[1][2].endswith(f"shorten it (git mv '{folder}' NEW-NAME) or set `git config core.longPaths true` "
                              "in each Windows clone")
    repo.commit("marked", {"a/notes/tropo.toml": "version = 1\n"})
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path / "a" / "notes")
    assert [f["path"] for f in r.json()["findings"] if f["code"] == "W228"] == [name, f"{folder}/b.png"], r.out


def test_names_one_file_on_one_system_are_named_with_it_and_names_that_only_look_alike_are_not(repo: Repo,
                                                                                                cli: Any) -> None:
    """A Mac (APFS, case-insensitive as macOS formats it) compares names decomposed and case-folded; Windows (NTFS)
    uppercases each character alone by its table and normalises nothing. So a name in two Unicode forms, `K` (the
    Kelvin sign) beside `k`, `ẞ` beside `ß` and `straße` beside `STRASSE` are one file on macOS alone; `ı` (a dotless
    i) beside `i` on Windows alone, and a file `ı` beside a folder `i/` too. Names that only look alike (a Cyrillic
    `а`, a full-width `Ａ`, a dotted `İ`) are two files everywhere, and are not reported."""
    pairs = [(unicodedata.normalize("NFD", "Résumé.png"), "Résumé.png", "macOS"), ("\u212a.png", "k.png", "macOS"),
             ("\u1e9e.png", "\u00df.png", "macOS"), ("straße.png", "STRASSE.png", "macOS"),
             ("\u0131.png", "i.png", "Windows"), ("Note.png", "note.png", "macOS and Windows")]
    alike = ["\u0430.png", "a.png", "\uff21.png", "\u0130.png", "I.txt"]
    files = {p: p for pair in pairs for p in pair[:2]} | {p: p for p in alike}
    repo.commit("vault", {"index.md": "# i\n", **files, "\u0131": "file", "i/c.png": "x"})
    got = {p: m for p, c, m in findings(cli, repo) if c == "W226"}
    assert len(got) == len(pairs) + 1, got
    for one, two, where in pairs:
        path, other = (one, two) if one in got else (two, one)
        assert got[path].startswith(f"'{path}' and '{other}' are one file on {where} ("), got[path]
    assert got["\u0131"] == ("'\u0131' and the folder 'i/' are one name on Windows: a checkout there cannot hold "
                             "both and leaves one out; rename one (git mv '\u0131' NEW-NAME)")


def test_each_system_s_comparison_of_names() -> None:
    """Windows uppercases each character of the Basic Multilingual Plane alone, as its table holds one character
    for each, in a path of any length; macOS folds case in full and compares names decomposed."""
    from vivary_git.portable import macos_key, windows_key

    long = "x/" * 500 + "straße ᾀ ǰ ﬁ \U0001f600 \U00010428 ı ς.md"
    assert windows_key(long) == "X/" * 500 + "STRAßE ᾈ ǰ ﬁ \U0001f600 \U00010428 I Σ.MD"
    assert windows_key("ı") == windows_key("i") != windows_key("İ")
    assert windows_key(NFD) != windows_key("Café.md") and windows_key("\u212a") != windows_key("k")
    assert macos_key(NFD) == macos_key("CAFÉ.md") and macos_key("\u212a") == macos_key("k")
    assert macos_key("ﬁ") == macos_key("FI") and macos_key("straße") == macos_key("STRASSE")
    assert macos_key("ı") != macos_key("i") and macos_key("а") != macos_key("a")  # a Cyrillic а
