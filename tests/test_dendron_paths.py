"""Dendron finds a note by its whole name in a vault's folder and a file by its path, never by name anywhere
(docs/vaults.md#dendron): what its editor shows, in one vault and in a workspace of several."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Repo

FIVE = "version: 5\n"
VAULTS = """version: 5
workspace:
  vaults:
    - fsPath: notes
      name: main
    - fsPath: other/vault
      name: other
    - fsPath: sc
      selfContained: true
    - fsPath: remote
      name: remote
"""


def check(repo: Repo, cli: Any, files: dict[str, str | bytes]) -> list[tuple[str, int, str, str]]:
    repo.commit(files=files)
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path)
    assert r.code in (0, 1), r.err
    return [(f["path"], f["line"], f["code"], f["message"]) for f in r.json()["findings"]]


def edges(repo: Repo, cli: Any) -> set[tuple[str, str, bool]]:
    r = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    return {(e["from"], e["to"], e["broken"]) for e in r.json()["edges"]}


def test_a_note_is_its_name_in_the_vault_folder_not_a_file_of_that_name_elsewhere(repo: Repo, cli: Any) -> None:
    """`[[proj]]` is `proj.md` in the vault's folder: `deep/folder/proj.md` is no note of that name to Dendron,
    and `[[example.py]]` is no file link to `assets/example.py` (a file link is its path)."""
    got = check(repo, cli, {
        "dendron.yml": FIVE, "deep/folder/proj.md": "x\n", "assets/example.py": "print()\n",
        "root.md": "[[proj]]\n[[example.py]]\n[[assets/example.py]]\n[[/assets/example.py]]\n",
    })
    assert [(p, line, code) for p, line, code, _ in got] == [("root.md", 1, "W221"), ("root.md", 2, "W221")], got
    assert got[0][3] == "wikilink [[proj]] matches no note (looked for 'proj' from root.md)"
    assert edges(repo, cli) == {("root", "proj", True), ("root", "example.py", True)}


def test_a_missing_path_without_a_file_format_is_a_note_dendron_would_create(repo: Repo, cli: Any) -> None:
    """Dendron shows `[[assets/example]]` with nothing there as any broken wikilink, and its Go to Note creates
    it as a note: W221. A file without an extension is reached by its path (`[[assets/scripts/build]]`); a path
    with a file format's extension that is not there is a missing file (W223)."""
    got = check(repo, cli, {
        "dendron.yml": FIVE, "assets/scripts/build": "#!/bin/sh\n",
        "root.md": "[[assets/example]]\n[[assets/scripts/build]]\n[[assets/plan.pdf]]\n",
    })
    assert [(line, code) for _, line, code, _ in got] == [(1, "W221"), (3, "W223")], got
    assert got[0][3] == "wikilink [[assets/example]] matches no note (looked for 'assets/example' from root.md)"


def test_a_name_ending_in_a_note_extension_is_the_whole_name(repo: Repo, cli: Any) -> None:
    """`[[dendron.topic.markdown]]` is the note `dendron.topic.markdown.md`, not `dendron.topic.md` with its
    `.markdown` taken for a file extension (the shared Dendron docs link it so from 20 notes)."""
    check(repo, cli, {"dendron.yml": FIVE, "dendron.topic.md": "x\n", "dendron.topic.markdown.md": "x\n",
                      "root.md": "[[dendron.topic.markdown]]\n"})
    assert edges(repo, cli) == {("root", "dendron.topic.markdown", False)}


def test_each_vault_of_dendron_yml_holds_its_notes(repo: Repo, cli: Any) -> None:
    """A name is looked for in each vault's folder (a self-contained vault's `notes/`), the linking note's own
    vault first; `dendron://VAULT/` picks the vault. A note in a vault's subfolder is no note of that name."""
    files: dict[str, str | bytes] = {
        "dendron.yml": VAULTS,
        "notes/a.md": "[[b]]\n[[dendron://other/b]]\n[[dendron://main/b]]\n[[c]]\n[[stray]]\n[[dup]]\n"
                      "[[dendron://remote/x]]\n[[dendron://elsewhere/y]]\n[[dendron://sc/c]]\n",
        "notes/dup.md": "x\n", "notes/sub/stray.md": "x\n",
        "other/vault/b.md": "[[dup]]\n", "other/vault/dup.md": "x\n",
        "sc/notes/c.md": "x\n", "sc/root.md": "no note of the vault: its notes are in notes/\n",
    }
    got = check(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [("notes/a.md", 3, "W221"), ("notes/a.md", 5, "W221")]
    assert got[0][3] == "wikilink [[dendron://main/b]] matches no note (looked for 'b' from notes/a.md)"
    assert edges(repo, cli) == {
        ("notes/a", "other/vault/b", False), ("notes/a", "sc/notes/c", False), ("notes/a", "notes/dup", False),
        ("notes/a", "b", True), ("notes/a", "stray", True), ("other/vault/b", "other/vault/dup", False)}


def test_a_file_link_is_a_path_from_the_vaults_assets_the_note_s_vault_or_the_workspace(repo: Repo,
                                                                                        cli: Any) -> None:
    """`[[assets/…]]` is looked for in each vault's folder, another path from the linking note's vault, then
    from the folder `dendron.yml` is in; nowhere else."""
    files: dict[str, str | bytes] = {
        "dendron.yml": VAULTS, "other/vault/assets/pic.png": b"", "notes/local.txt": "x\n", "src/index.js": "x\n",
        "notes/deep/far.txt": "x\n",
        "notes/a.md": "![[assets/pic.png]]\n[[local.txt]]\n[[src/index.js]]\n[[far.txt]]\n[[index.js]]\n",
    }
    got = check(repo, cli, files)
    assert [(line, code) for _, line, code, _ in got] == [(4, "W221"), (5, "W221")], got


def nodes(repo: Repo, cli: Any) -> list[str]:
    r = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    return [n["path"] for n in r.json()["nodes"]]


def test_only_the_md_files_directly_in_a_vault_s_folder_are_notes(repo: Repo, cli: Any) -> None:
    """Dendron reads as notes the `*.md` files directly in a vault's folder, none named with a leading `.`: a
    Markdown file in a subfolder, outside every vault, or named `.x.md` is a file a link names by its path, with
    no node, no edges and no findings of its own; `include` in graph.toml (and the memory folder) read a folder as
    notes anyway; `[[.hidden.md]]` is that file by its name."""
    files: dict[str, str | bytes] = {
        "dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: vault\n",
        "vault/root.md": "[[docs/guide.md]]\n[[guide]]\n[[.hidden]]\n[[proj]]\n[[.hidden.md]]\n",
        "vault/proj.md": "x\n", "vault/.hidden.md": "[[gone.one]]\n",
        "vault/docs/guide.md": "[[gone.two]]\n", "README.md": "[[gone.three]]\n",
        "memories/m.md": "# A memory\n[[gone.four]]\n", "kept/k.md": "[[gone.five]]\n",
    }
    got = check(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [
        ("memories/m.md", 2, "W221"), ("vault/root.md", 2, "W221"), ("vault/root.md", 3, "W221")], got
    assert nodes(repo, cli) == ["memories/m.md", "vault/proj.md", "vault/root.md"]
    assert edges(repo, cli) == {("vault/root", "vault/proj", False), ("vault/root", "guide", True),
                                ("vault/root", ".hidden", True), ("memories/m", "gone.four", True)}
    files[".vivary/graph.toml"] = 'include = ["kept"]\n'
    assert [(p, code) for p, _, code, _ in check(repo, cli, files)][:2] == [("kept/k.md", "W221"),
                                                                          ("memories/m.md", "W221")]
    assert "kept/k.md" in nodes(repo, cli)


def test_a_markdown_file_is_no_note_in_dendron(repo: Repo, cli: Any) -> None:
    """Dendron reads only `*.md` as notes: `old.style.markdown` is a file, named by its whole file name, and the
    note `old.style` that `[[old.style]]` names is missing."""
    got = check(repo, cli, {"dendron.yml": FIVE, "old.style.markdown": "[[gone]]\n",
                            "root.md": "[[old.style]]\n[[old.style.markdown]]\n"})
    assert [(p, line, code) for p, line, code, _ in got] == [("root.md", 1, "W221")], got
    assert nodes(repo, cli) == ["root.md"]


def test_a_tropo_workspace_read_with_dendron_links_keeps_its_notes(repo: Repo, cli: Any) -> None:
    """A `tropo.toml` workspace's notes are the contract's, in any folder and `.markdown` too, whichever dialect
    reads its links."""
    repo.commit(files={"tropo.toml": "version = 1\n", ".vivary/graph.toml": 'dialect = "dendron"\n',
                       "a.md": "x\n", "decisions/b.md": "x\n", "c.markdown": "x\n"})
    assert sorted(nodes(repo, cli)) == ["a.md", "c.markdown", "decisions/b.md"]


def test_a_memory_is_a_note_outside_the_vault_s_folder(repo: Repo, cli: Any) -> None:
    """The memory folder is read wherever it is: `remember` in a Dendron workspace writes a note the graph holds,
    and a move to a `.markdown` name, which Dendron reads as a file, is refused naming the `.md` name."""
    repo.commit(files={"dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: vault\n",
                       "vault/root.md": "# Root\n"})
    r = cli("remember", "The coffee machine is descaled on Fridays.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    made = r.json()["id"]
    assert made.startswith("memories/") and made in {n["id"] for n in cli("graph", "--json", cwd=repo.path).json()
                                                     ["nodes"]}
    r = cli("move", made, "ops/f.markdown", cwd=repo.path)
    assert r.code == 2 and "read as Dendron reads it, and Dendron reads only .md files as notes" in r.err, r.err


def test_a_file_link_is_spelt_as_the_file_system_spells_it(repo: Repo, cli: Any) -> None:
    """Dendron opens a file link's path on the file system: in a checkout on Linux (CI), `[[assets/Data.CSV]]`
    does not open `assets/data.csv`. Note names stay case-insensitive (`[[Proj]]` is `proj.md`)."""
    got = check(repo, cli, {"dendron.yml": FIVE, "assets/data.csv": "a,b\n", "src/Index.js": "x\n", "proj.md": "x\n",
                            "root.md": "[[assets/Data.CSV]]\n[[assets/data.csv]]\n[[src/index.js]]\n"
                                       "[[src/Index.js]]\n[[Proj]]\n"})
    assert [(line, code) for _, line, code, _ in got] == [(1, "W223"), (3, "W221")], got
    assert got[0][3] == "wikilink [[assets/Data.CSV]] matches no file (looked for 'assets/Data.CSV' from root.md)"


def test_an_absolute_path_the_tree_does_not_have_is_a_file_on_the_writer_s_machine(repo: Repo, cli: Any) -> None:
    """Dendron opens an absolute path on the file system before reading it from the workspace: `[[/home/me/f.txt]]`
    names a file outside the repository (not checked, as `[[/src/gone.txt]]` is: the writer's machine may have
    `/src`), unless the tree has `home/me/f.txt`. `/assets/…` is `assets/…`, and a name at the file system's top
    (`[[/gone.txt]]`) is read from the workspace: both checked."""
    got = check(repo, cli, {
        "dendron.yml": FIVE, "src/index.js": "x\n",
        "root.md": "[[/home/me/f.txt]]\n[[C:\\Users\\me\\f.txt]]\n[[C:/Users/me/f.txt]]\n[[/src/index.js]]\n"
                   "[[/assets/gone.png]]\n[[/gone.txt]]\n[[/src/gone.txt]]\n",
    })
    assert [(line, code) for _, line, code, _ in got] == [(5, "W223"), (6, "W223")], got
    assert edges(repo, cli) == set()


CODE_WORKSPACE = """{
    // Dendron's workspace file: VS Code's JSON, with comments and trailing commas
    "folders": [
        {"path": "vault", "name": "Notes", /* shown in VS Code */},
        {"path": "other"},
    ],
    "settings": {"dendron.rootDir": "."},
}
"""


def test_a_code_workspace_without_vaults_in_dendron_yml_opens_its_first_folder_as_the_vault(repo: Repo,
                                                                                          cli: Any) -> None:
    """Dendron takes the first folder `dendron.code-workspace` opens as the vault when `dendron.yml` lists none (or
    is missing): its notes are that folder's, and `[[proj]]` is `vault/proj.md`. Vaults `dendron.yml` lists win."""
    files: dict[str, str | bytes] = {"dendron.code-workspace": CODE_WORKSPACE, "README.md": "[[gone]]\n",
                                     "vault/root.md": "[[proj]]\n[[other]]\n", "vault/proj.md": "x\n",
                                     "other/other.md": "x\n"}
    assert [(p, line, code) for p, line, code, _ in check(repo, cli, files)] == [("vault/root.md", 2, "W221")]
    assert nodes(repo, cli) == ["vault/proj.md", "vault/root.md"]
    assert edges(repo, cli) == {("vault/root", "vault/proj", False), ("vault/root", "other", True)}
    r = cli("check", "--rev", "HEAD", "--verbose", "--lenient", cwd=repo.path)
    assert r.err.startswith("vivary: dialect dendron: dendron.code-workspace found\n"), r.err
    files["dendron.yml"] = FIVE
    assert len(check(repo, cli, files)) == 1
    assert nodes(repo, cli) == ["vault/proj.md", "vault/root.md"]
    files["dendron.yml"] = "version: 5\nworkspace:\n  vaults:\n    - fsPath: other\n"
    check(repo, cli, files)
    assert nodes(repo, cli) == ["other/other.md"]


@pytest.mark.parametrize("text", [
    "[" * 100_000, '{"folders": [{"path": "vault"}', '{"folders": "vault"}', '{"folders": [{"path": "/abs"}]}',
    '{"folders": [{"path": "../up"}]}', '{"folders": [{"path": "C:\\\\notes"}]}', "/* open", '"\\"' * 50_000,
])
def test_a_code_workspace_dendron_cannot_read_opens_no_vault(repo: Repo, cli: Any, text: str) -> None:
    """A committed `dendron.code-workspace` is a stranger's input: one that is not VS Code's JSON, nests past any
    parser's depth, or names a folder outside this tree leaves the workspace folder the vault, without a
    traceback."""
    got = check(repo, cli, {"dendron.code-workspace": text, "root.md": "[[proj]]\n", "proj.md": "x\n",
                            "vault/proj.md": "x\n"})
    assert got == []
    assert edges(repo, cli) == {("root", "proj", False)}


def test_check_verbose_says_which_files_are_notes(repo: Repo, cli: Any) -> None:
    """A Markdown file that is no note leaves the graph silently otherwise: `--verbose` names the vaults' folders
    and counts the Markdown files that are only files."""
    repo.commit(files={"dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: vault\n    - fsPath: b\n",
                       "vault/a.md": "x\n", "vault/docs/g.md": "x\n", "README.md": "x\n", "b/c.markdown": "x\n",
                       "memories/m.md": "x\n"})
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert r.err.splitlines()[:2] == [
        "vivary: dialect dendron: dendron.yml found",
        "vivary: notes are the .md files directly in vault/, b/; 3 other Markdown file(s) are files, not notes"], r.err


def test_a_markdown_link_is_a_path_from_the_note_as_vs_code_opens_it(repo: Repo, cli: Any) -> None:
    """Dendron records no Markdown link of its own and leaves `[x](dest)` to VS Code, which opens `dest` on the
    file system: relative to the linking note (`.md` may be left out), a leading `/` from the workspace folder,
    spelt as the tree spells it, and never found by name elsewhere (as Obsidian does)."""
    got = check(repo, cli, {
        "dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: vault\n",
        "vault/proj.md": "x\n", "vault/Data.md": "x\n", "docs/guide.md": "x\n", "vault/assets/a.png": b"",
        "vault/root.md": "[rel](proj.md)\n[no extension](proj)\n[case](data.md)\n[slash](/proj.md)\n"
                         "[by name](guide.md)\n[from the workspace](/vault/proj.md)\n[up](../docs/guide.md)\n"
                         "![img](assets/a.png)\n![img case](assets/A.png)\n[ref]: ./Data.md\n",
    })
    assert [(line, code) for _, line, code, _ in got] == [(3, "W221"), (4, "W221"), (5, "W221"), (9, "W223")], got
    assert got[0][3] == "link (data.md) matches no note (looked for 'vault/data.md' from vault/root.md)"
    assert got[2][3] == "link (guide.md) matches no note (looked for 'vault/guide.md' from vault/root.md)"
    assert edges(repo, cli) == {("vault/root", "vault/proj", False), ("vault/root", "vault/Data", False),
                                ("vault/root", "vault/data.md", True), ("vault/root", "proj.md", True),
                                ("vault/root", "vault/guide.md", True)}


def test_a_markdown_link_s_leading_slash_is_the_code_workspace_folder_that_holds_the_note(repo: Repo,
                                                                                          cli: Any) -> None:
    """In a code workspace VS Code has one workspace folder per vault (`dendron.code-workspace`'s `folders`) and
    reads `[x](/plan.md)` from the one that holds the note: `work/plan.md` from `work/`, nothing from `personal/`.
    Without that file VS Code opens the workspace folder alone, and `/` is its top."""
    files: dict[str, str | bytes] = {
        "dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: work\n    - fsPath: personal\n",
        "dendron.code-workspace": '{"folders": [{"path": "work"}, {"path": "./personal/"},],}\n',
        "work/plan.md": "x\n", "personal/other.md": "x\n",
        "work/root.md": "[plan](/plan.md)\n[across](/personal/other.md)\n",
        "personal/home.md": "[plan](/plan.md)\n[own](/other)\n",
    }
    got = check(repo, cli, files)
    assert [(p, line, code) for p, line, code, _ in got] == [("personal/home.md", 1, "W221"),
                                                             ("work/root.md", 2, "W221")], got
    assert got[1][3] == ("link (/personal/other.md) matches no note (looked for 'work/personal/other.md' from "
                         "work/root.md)")
    assert edges(repo, cli) == {("work/root", "work/plan", False), ("work/root", "work/personal/other.md", True),
                                ("personal/home", "personal/plan.md", True),
                                ("personal/home", "personal/other", False)}
    (repo.path / "dendron.code-workspace").unlink()
    repo.commit()
    assert edges(repo, cli) == {("work/root", "plan.md", True), ("work/root", "personal/other", False),
                                ("personal/home", "plan.md", True), ("personal/home", "other", True)}


def test_vault_folders_that_hold_no_notes_are_named_with_the_fix(repo: Repo, cli: Any) -> None:
    """A `dendron.yml` whose vault folders the tree does not have (or holds no note in) reads as an empty graph:
    correct, but silent. `check --verbose` names the folders and the fix; `doctor` warns when no vault holds a
    note (one vault kept in its own repository is a usual multi-vault workspace: `--verbose` alone names it).
    Exit codes are unchanged."""
    files: dict[str, str | bytes] = {
        "dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: notes\n    - fsPath: work/vault\n"
                       "      name: work\n",
        "elsewhere/a.md": "[[b]]\n", "README.md": "x\n", "work/vault/sub/deep.md": "x\n",
    }
    assert check(repo, cli, files) == []
    said = ("vivary: vault folder(s) notes/, work/vault/ hold no note in this tree (missing, or no .md file "
            "directly in them); fix: set each vault's fsPath in dendron.yml to the folder its notes are in, or "
            "commit the vault folders")
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert r.code == 0 and said in r.err.splitlines(), r.err
    r = cli("doctor", cwd=repo.path)
    assert r.code == 0, r.out
    assert ("warning: workspace: Dendron's vault folder(s) notes/, work/vault/ hold no note in this tree (missing, "
            "or no .md file directly in them), so the graph holds none of their notes") in r.out, r.out
    assert ("  fix: set each vault's fsPath in dendron.yml to the folder its notes are in, or commit the vault "
            "folders") in r.out
    files["notes/a.md"] = "x\n"
    check(repo, cli, files)
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert "vivary: vault folder(s) work/vault/ hold no note in this tree" in r.err, r.err
    assert "vault folder(s)" not in cli("doctor", cwd=repo.path).out


@pytest.mark.parametrize("fs_path", ["/home/me/private", "C:\\\\Users\\\\me\\\\private", "../private"])
def test_a_vault_outside_the_workspace_folder_is_no_vault_here(repo: Repo, cli: Any, fs_path: str) -> None:
    """A vault whose `fsPath` names a folder on the writer's machine (or leaves the workspace folder) is not in this
    tree: no vault here, so never a folder "with no note" (an absolute path once read as `home/me/private/`), and a
    `dendron://` link into it is not checked; the vaults here keep their notes and links."""
    files: dict[str, str | bytes] = {
        "dendron.yml": f'version: 5\nworkspace:\n  vaults:\n    - fsPath: notes\n    - fsPath: "{fs_path}"\n'
                       "      name: priv\n",
        "notes/a.md": "see [[b]] and [[dendron://priv/x]]\n", "notes/b.md": "x\n",
        "home/me/private/x.md": "a folder of that name in the tree is no vault\n",
    }
    assert check(repo, cli, files) == []
    assert edges(repo, cli) == {("notes/a", "notes/b", False)}
    r = cli("check", "--rev", "HEAD", "--verbose", cwd=repo.path)
    assert r.code == 0 and "hold no note" not in r.err, r.err
    assert "notes are the .md files directly in notes/;" in r.err, r.err
