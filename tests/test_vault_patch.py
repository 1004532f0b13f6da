"""`check --staged` in a vault re-derives only the edited notes from the last graph, also when
attachments were added or removed: a file no link names cannot change how any link resolves. A file
some link names can (a broken embed is fixed, a working one breaks): then the whole graph is built.
Each answer must equal a full build (`--no-cache`)."""

from __future__ import annotations

import os
import random
from typing import Any

import pytest
from conftest import Repo

VAULT: dict[str, str | bytes] = {
    ".obsidian/app.json": "{}\n",
    "Notes/Kyoto.md": "# Kyoto\n![[temple.png]]\n[[Japan]]\n",
    "Notes/Japan.md": "# Japan\n![[missing.png]]\n[map](../Attachments/map.pdf)\n",
    "Attachments/temple.png": b"png",
    "Attachments/map.pdf": b"pdf",
    "Attachments/old.gif": b"gif",
}


def staged(repo: Repo, cli: Any) -> tuple[str, str, bool]:
    """(check --staged --json, the same from a full build, whether the first was patched)."""
    fast = cli("check", "--staged", "--json", "--lenient", cwd=repo.path)
    full = cli("check", "--staged", "--json", "--lenient", "--no-cache", cwd=repo.path)
    return fast.out, full.out, '"patched":true' in fast.err


def staged_as_built(repo: Repo, cli: Any, step: int) -> bool:
    """`check --staged` and `graph --staged` each equal a full build (`--no-cache`) at `step`; whether the check was
    patched."""
    fast, full, patched = staged(repo, cli)
    assert fast == full, step
    g_fast = cli("graph", "--staged", "--json", cwd=repo.path).out
    g_full = cli("graph", "--staged", "--json", "--no-cache", cwd=repo.path).out
    assert g_fast == g_full, step
    return patched


@pytest.fixture
def vault(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> Repo:
    repo.commit(files=VAULT)
    monkeypatch.setenv("VIVARY_STATS", "1")
    cli("check", "--staged", cwd=repo.path)  # the base later checks are patched from
    return repo


def test_an_attachment_no_link_names_is_patched(vault: Repo, cli: Any) -> None:
    vault.write({"Attachments/new photo.jpg": b"jpg", "Notes/Kyoto.md": "# Kyoto\n![[temple.png]]\n"})
    vault.git("rm", "-q", "Attachments/old.gif")  # ... nor one no note links by its name
    vault.write({"Attachments/other.pdf": b"x", "Notes/plain.txt": b"x"})
    vault.git("add", "-A")
    fast, full, patched = staged(vault, cli)
    assert fast == full
    assert patched


def test_adding_a_file_a_link_names_fixes_the_link(vault: Repo, cli: Any) -> None:
    """Why not every added file can be patched: the unchanged Japan.md's broken embed now resolves."""
    before, _, _ = staged(vault, cli)
    assert "missing.png" in before
    vault.write({"Attachments/missing.png": b"png"})
    vault.git("add", "-A")
    fast, full, patched = staged(vault, cli)
    assert fast == full
    assert "missing.png" not in fast
    assert not patched


def test_removing_a_file_a_link_names_breaks_the_link(vault: Repo, cli: Any) -> None:
    vault.git("rm", "-q", "Attachments/temple.png")
    fast, full, patched = staged(vault, cli)
    assert fast == full
    assert "W223" in fast and "temple.png" in fast
    assert not patched


def test_a_path_link_counts_by_its_last_segment(vault: Repo, cli: Any) -> None:
    vault.git("rm", "-q", "Attachments/map.pdf")
    vault.write({"elsewhere/map.pdf": b"pdf"})  # same name, another folder: Japan.md's link still breaks
    vault.git("add", "-A")
    fast, full, patched = staged(vault, cli)
    assert fast == full
    assert "../Attachments/map.pdf" in fast
    assert not patched


def test_editing_a_heading_changes_another_notes_anchor_findings(repo: Repo, cli: Any,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Why W222 takes the full build: a heading removed from one note breaks a link in another."""
    repo.commit(files={".obsidian/app.json": "{}\n", ".vivary/graph.toml": "[links]\nanchors = true\n",
                       "A.md": "# A\n## Part\n", "B.md": "[[A#Part]]\n"})
    monkeypatch.setenv("VIVARY_STATS", "1")
    cli("check", "--staged", cwd=repo.path)
    repo.write({"A.md": "# A\n## Other\n"})
    repo.git("add", "-A")
    fast, full, patched = staged(repo, cli)
    assert fast == full
    assert '"path":"B.md"' in fast and "W222" in fast
    assert not patched


NAMES = ["pic.png", "Map.pdf", "board.canvas", "Album.base", "scan.jpg", "Kyoto", "notes.txt"]
FOLDERS = ["", "Attachments/", "Notes/", "deep/er/"]


def test_patched_vault_equals_a_full_build(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Random edits, links of every kind, and attachments added and removed (named by links or not):
    the patched answer always equals a full build, and most steps are patched."""
    rng = random.Random(7)
    notes = [f"{rng.choice(FOLDERS)}N{i}.md" for i in range(12)]
    linked = NAMES[:4]  # links name only these; the others come and go unnamed

    def note() -> str:
        lines = []
        for _ in range(rng.randint(0, 4)):
            target = rng.choice([*linked, "N1", "N5", "Nowhere"])
            kind = rng.randrange(3)
            lines.append(f"![[{target}]]" if kind == 0 else f"[[{target}]]" if kind == 1 else f"[x]({target})")
        return "# T\n" + "\n".join(lines) + "\n"

    repo.commit(files={".obsidian/app.json": "{}\n", **{n: note() for n in notes},
                       **{f"{rng.choice(FOLDERS)}{n}": b"x" for n in NAMES}})
    monkeypatch.setenv("VIVARY_STATS", "1")
    cli("check", "--staged", cwd=repo.path)
    unnamed_only = 0
    for step in range(24):
        repo.write({rng.choice(notes): note() for _ in range(rng.randint(1, 2))})
        touched = set()
        for _ in range(rng.randint(0, 2)):
            name = rng.choice(NAMES)
            path = f"{rng.choice(FOLDERS)}{name}"
            touched.add(name)
            if (repo.path / path).exists():
                (repo.path / path).unlink()
            else:
                repo.write({path: bytes([step])})
        repo.git("add", "-A")
        patched = staged_as_built(repo, cli, step)
        if touched and not touched & set(linked):
            unnamed_only += 1
            assert patched, step  # only files no link names came and went
    assert unnamed_only >= 4, unnamed_only


def test_adding_a_logseq_org_page_a_link_names_is_built_again(repo: Repo, cli: Any) -> None:
    """An Org page is named by its file name, `___` for `/`: `pages/Project___Alpha.org` is the page a
    `[[project/alpha]]` names, though no link names the file `project___alpha.org`."""
    repo.commit(files={"logseq/config.edn": "{}", "pages/A.md": "- [[project/alpha]]\n", "pages/B.md": "- b\n"})
    cli("graph", "--staged", "--json", cwd=repo.path)  # the base a patch would start from
    repo.write({"pages/Project___Alpha.org": "* alpha\n", "pages/B.md": "- b, edited\n"})
    repo.git("add", "-A")
    fast = cli("graph", "--staged", "--json", cwd=repo.path).json()
    full = cli("graph", "--staged", "--json", "--no-cache", cwd=repo.path).json()
    assert fast == full
    assert not any(e["from"] == "pages/A" for e in fast["edges"])  # an Org page: a file, not a node


def test_notes_with_odd_names_are_patched_as_a_full_build_reads_them(vault: Repo, cli: Any) -> None:
    """Git's tree diff names the edited notes byte for byte: a name that is not UTF-8, one with a tab and a
    quote, one in another script. The patched answer is the full build's, and it was patched."""
    odd = [os.fsdecode(b"Notes/caf\xe9 latin1.md"), 'Notes/tab\there "q".md', "Notes/東京.md"]
    for name in odd:
        (vault.path / name).write_text("# Odd\n[[Kyoto]]\n")
    vault.git("add", "-A")
    vault.git("commit", "-q", "-m", "odd names")
    cli("check", "--staged", cwd=vault.path)  # the base: these notes in the last graph
    for name in odd:
        (vault.path / name).write_text("# Odd\n[[Kyoto]] [[gone]]\n")
    vault.git("add", "-A")
    fast, full, patched = staged(vault, cli)
    assert fast == full
    assert patched
    assert fast.count("wikilink [[gone]] matches no note") == 3  # one for each odd name


DENDRON_VAULTS = """version: 5
workspace:
  vaults:
    - fsPath: notes
      name: main
    - fsPath: other
      name: other
"""


def dendron_note(rng: random.Random) -> str:
    """Links within the vault, across vaults with `dendron://`, to a vault outside the repository, and
    to notes nobody wrote."""
    near = ["a", "b.c", "b", "x", "nowhere"]
    far = ["dendron://other/x", "dendron://other/gone", "dendron://main/a", "dendron://elsewhere/y"]
    return "# T\n" + "".join(f"[[{rng.choice(far if rng.random() < 0.15 else near)}]]\n"
                              for _ in range(rng.randint(0, 3)))


def test_a_dendron_workspace_whose_vaults_dendron_yml_lists_is_patched(repo: Repo, cli: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Home vaults named in `dendron.yml` are homes whatever a note links to, so an edit keeps them: the
    staged check is patched, and equals a full build (a link into `elsewhere`, no vault here, stays unreported)."""
    rng = random.Random(3)
    notes = ["notes/a.md", "notes/b.c.md", "notes/b.md", "other/x.md", "other/y.z.md"]
    repo.commit(files={"dendron.yml": DENDRON_VAULTS, **{n: dendron_note(rng) for n in notes}})
    monkeypatch.setenv("VIVARY_STATS", "1")
    cli("check", "--staged", cwd=repo.path)
    patched_steps = 0
    for step in range(20):
        edits = {rng.choice(notes): dendron_note(rng) for _ in range(rng.randint(1, 2))}
        cross = any("dendron://" in text for text in edits.values())
        repo.write(edits)
        repo.git("add", "-A")
        patched = staged_as_built(repo, cli, step)
        if not cross:
            assert patched, step  # an edit with no cross-vault link, in vaults dendron.yml lists
            patched_steps += 1
    assert patched_steps >= 8, patched_steps


def test_a_home_vault_a_link_made_is_patched_until_that_link_is_edited(repo: Repo, cli: Any,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """`dendron://site/...` resolving here makes `site` a home vault (its broken links are reported): an edit
    elsewhere keeps it one (patched); the edit that removes the only such link makes it none, and the broken
    `dendron://site/gone` in another note is then a link outside the repository, not reported."""
    repo.commit(files={"dendron.yml": "version: 5\n", "a.md": "[[dendron://site/b]]\n", "b.md": "# B\n",
                       "c.md": "[[dendron://site/gone]]\n", "d.md": "# D\n"})
    monkeypatch.setenv("VIVARY_STATS", "1")
    before, _, _ = staged(repo, cli)
    assert "dendron://site/gone" in before
    repo.write({"d.md": "# D\n[[b]] [[nowhere]]\n"})  # another note's edit keeps a.md's link, and `site` a home
    repo.git("add", "-A")
    fast, full, patched = staged(repo, cli)
    assert fast == full
    assert "dendron://site/gone" in fast and "nowhere" in fast
    assert patched
    repo.write({"a.md": "no links now\n"})
    repo.git("add", "-A")
    fast, full, patched = staged(repo, cli)
    assert fast == full
    assert "dendron://site/gone" not in fast
    assert not patched


def dendron_file_links(rng: random.Random) -> str:
    """Notes' links to files: by path, spelt in another case, absolute, and to Markdown files that are no notes."""
    links = ["a", "sub/s.md", "old.markdown", "assets/data.csv", "assets/Data.CSV", "/home/me/f.txt", "/assets/x.png",
             "notes/sub/s.md", "s", "old"]
    return "# T\n" + "".join(f"[[{rng.choice(links)}]]\n" for _ in range(rng.randint(0, 3)))


def test_a_dendron_workspace_s_files_outside_its_vault_are_patched_as_a_full_build_reads_them(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Markdown files that are no notes to Dendron (in a subfolder, beside `dendron.yml`, `.markdown`), edited,
    added and removed beside file links spelt in another case or from `/`: each staged check equals a full build."""
    rng = random.Random(5)
    texts = ["notes/a.md", "notes/b.md", "notes/sub/s.md", "README.md", "notes/old.markdown"]
    repo.commit(files={"dendron.yml": DENDRON_VAULTS, "notes/assets/data.csv": "a\n",
                       **{n: dendron_file_links(rng) for n in texts}})
    monkeypatch.setenv("VIVARY_STATS", "1")
    cli("check", "--staged", cwd=repo.path)
    patched = 0
    for step in range(16):
        repo.write({rng.choice(texts): dendron_file_links(rng) for _ in range(rng.randint(1, 2))})
        extra = rng.choice(["home/me/f.txt", "notes/assets/x.png", "notes/sub/t.md"])
        if (repo.path / extra).exists():
            (repo.path / extra).unlink()
        elif rng.random() < 0.5:
            repo.write({extra: "x\n"})
        repo.git("add", "-A")
        fast, full, was = staged(repo, cli)
        assert fast == full, step
        assert cli("graph", "--staged", "--json", cwd=repo.path).out == \
            cli("graph", "--staged", "--json", "--no-cache", cwd=repo.path).out, step
        patched += was
    assert patched >= 4, patched  # edits to files that are no notes are patched, not built again
