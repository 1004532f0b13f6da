"""`check` and `graph` against a second, independent resolver written from docs/vaults.md#obsidian alone
(tests/vault_oracle.py), on generated Obsidian vaults with every link kind: they must agree on every
broken link and on the note every other link reaches (so a tie-break that picks the wrong one of two
notes of one name shows, not only a link that reaches none)."""

from __future__ import annotations

import random
import re
import urllib.parse
from typing import Any

import pytest
from conftest import Repo
from vault_oracle import read

NAMES = ["Kyoto", "Japan Trip", "内部链接", "Русский", "Anhänge", "C++ string", "Bash &", "e^itheta", "Notes 2024",
         "Security", "Overview", "Ünïcode", "a.b.c"]
# `deep/er/` and `a/b/` have more folders than `longfoldername/` but shorter paths: the tie-break counts
# folders first. `.trash/` and `.github/` are hidden: their notes are neither nodes nor link targets.
FOLDERS = ["", "Notes/", "References/", "Obsidian Sync/", "Obsidian Publish/", "deep/er/", "a/b/", "longfoldername/"]
HIDDEN = [".trash/", ".github/ISSUE_TEMPLATE/"]
FILES = ["pic.png", "Albums.base", "board.canvas", "paper.pdf"]


def _vault(seed: int) -> dict[str, str | bytes]:
    rng = random.Random(seed)
    files: dict[str, str | bytes] = {".obsidian/app.json": "{}"}
    paths: list[str] = []
    for name in NAMES:
        for folder in rng.sample(FOLDERS, rng.randint(1, 3)):
            paths.append(f"{folder}{name}")
        if rng.random() < 0.3:
            files[f"{rng.choice(HIDDEN)}{name}.md"] = f"[[{rng.choice(NAMES)}]] [[Nowhere]]\n"
    for f in rng.sample(FILES, 3):
        files[f"{rng.choice(FOLDERS)}Attachments/{f}"] = b""
    missing = ["Nowhere", "Gone note", "缺失"]
    for path in paths:
        lines: list[str] = []
        props = []
        for _ in range(rng.randint(0, 2)):
            props.append(f'  - "[[{rng.choice(NAMES + missing)}]]"')
        for _ in range(rng.randint(3, 8)):
            target = rng.choice(NAMES + missing + FILES + ["missing.png"])
            folder = rng.choice(FOLDERS).rstrip("/")
            kind = rng.randrange(12)
            shown = rng.choice(["", "|shown", "|300", "#Heading", "#^blk|x"])
            if kind == 0:
                lines.append(f"See [[{target}{shown}]] here.")
            elif kind == 1:
                lines.append(f"![[{target}{shown}]]")
            elif kind == 2:
                lines.append(f"[[{target.upper() if target.isascii() else target}]]")
            elif kind == 3 and folder:
                lines.append(f"[[{folder}/{target}]]")
            elif kind == 4:
                dest = urllib.parse.quote(f"{target}.md" if "." not in target[-5:] else target)
                lines.append(f"A [link]({dest}) and [other](<{target}.md>).")
            elif kind == 5:
                lines.append(f"| cell | [[{target}\\|alias]] |")
            elif kind == 6:
                lines.append(f"```\n[[{target}]]\n```")
            elif kind == 7:
                lines.append(f"Code `[[{target}]]` here.")
            elif kind == 9:  # display math opened mid-line, closed on a later line, then a real link
                lines.append(f"The generating functions$$\nG(x) = [[{target}]]\n$$ give [[{rng.choice(NAMES)}]].")
            elif kind == 10:  # a placeholder in the shown text: the target still counts
                lines.append(f"[[{target}|Text {{{{expand}}}}]] and [[{{{{title}}}}]]")
            elif kind == 11 and folder:  # a Markdown link from a folder, read beside the note first
                dest = urllib.parse.quote(target)
                lines.append(f"[there]({dest}.md) [root](/{folder}/{dest}.md)")
            else:
                lines.append(f"[[{target}.md]]" if "." not in target else f"[[{target}]]")
        front = "---\nup:\n" + "\n".join(props) + "\n---\n" if props else ""
        if props and rng.random() < 0.15:
            front = "---\nbad: [1\nup:\n" + "\n".join(props) + "\n---\n"  # E001: the body's links still count
        files[f"{path}.md"] = front + "# T\n\n" + "\n\n".join(lines) + "\n"
    return files


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_check_agrees_with_the_independent_resolver(repo: Repo, cli: Any, seed: int) -> None:
    files = _vault(seed)
    repo.commit(files=files)
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path)
    ours = set()
    for f in r.json()["findings"]:
        if f["code"] == "E001":
            continue
        assert f["code"] in ("W221", "W223"), f
        m = re.search(r"looked for '(.*)' from ", f["message"])
        assert m is not None, f
        ours.add((f["path"], f["line"], m.group(1)))
    expected = read(repo.path)
    assert expected.breaks, "the generated vault has broken links"
    assert ours == expected.breaks
    g = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).json()
    reached = {(e["from"], e["field"], e["to"]) for e in g["edges"] if not e["broken"]}
    assert reached == expected.edges
    assert not any(n["path"].startswith(".") for n in g["nodes"])


# --- Logseq: the graph's edges against tests/vault_oracle.py's reading of docs/vaults.md#logseq -------------

PAGES = ["Alpha", "Project___Beta", "gamma ray", "Δelta", "Kyoto", "Reading List", "Books___Fiction"]
TITLES = ["Project Alpha Plan", "Gamma", "京都"]
ALIASES = ["PAP", "Beta Project", "GR", "kyoto city"]
MISSING = ["Nowhere", "someday", "Not Yet Written"]
ORG_PAGES = ["Meeting notes", "Area___Ops"]  # pages Logseq reads from `.org` files: targets, not nodes


def _logseq_graph(seed: int) -> dict[str, str | bytes]:
    rng = random.Random(seed)
    files: dict[str, str | bytes] = {"logseq/config.edn": "{}\n", "logseq/bak/pages/Alpha.md": "[[Gone]]\n"}
    names = [p.replace("___", "/") for p in PAGES + ORG_PAGES] + TITLES + ALIASES + MISSING
    for page in PAGES:
        props = []
        if rng.random() < 0.4:
            props.append(f"title:: {rng.choice(TITLES)}")
        if rng.random() < 0.4:
            a = rng.sample(ALIASES, rng.randint(1, 2))
            props.append("alias:: " + ", ".join(f"[[{x}]]" if rng.random() < 0.5 else x for x in a))
        if rng.random() < 0.5:
            t = rng.sample(names, rng.randint(1, 3))
            props.append("tags:: " + ", ".join(rng.choice([x, f"[[{x}]]", f"#[[{x}]]"]) for x in t))
        if rng.random() < 0.3:
            props.append(f"type:: [[{rng.choice(names)}]]")
        blocks = []
        for _ in range(rng.randint(2, 6)):
            target = rng.choice(names)
            one_word = " " not in target
            kind = rng.randrange(5)
            if kind == 0:
                blocks.append(f"- see [[{target.upper() if rng.random() < 0.3 else target}]] here")
            elif kind == 1:
                blocks.append(f"- tagged #[[{target}]] and more")
            elif kind == 2 and one_word:
                blocks.append(f"- a #{target}, then text")
            elif kind == 3:
                blocks.append(f"- ```\n  [[{target}]] #{target.split()[0]}\n  ```")
            elif kind == 4 and rng.random() < 0.5:  # an Org block: verbatim (no links) or Markdown
                name = rng.choice(["SRC", "EXAMPLE", "QUERY", "QUOTE", "NOTE"])
                end = "" if rng.random() < 0.2 else f"  #+END_{name}"
                blocks.append(f"- #+BEGIN_{name}\n  [[{target}]] and #{target.split()[0]}\n{end}")
            else:
                blocks.append(f"- # A heading with [[{target}]]")
        head = "\n".join(props) + "\n\n" if props else ""
        files[f"pages/{page}.md"] = head + "\n".join(blocks) + "\n"
    for page in ORG_PAGES:
        files[f"pages/{page}.org"] = "#+title: x\n* heading\n"
    files["journals/2024_01_01.md"] = "- " + " ".join(f"[[{rng.choice(names)}]]" for _ in range(4)) + "\n"
    return files


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6])
def test_logseq_edges_agree_with_the_independent_reading(repo: Repo, cli: Any, seed: int) -> None:
    from vault_oracle import logseq_edges

    repo.commit(files=_logseq_graph(seed))
    r = cli("graph", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    ours = {(e["from"], e["field"], e["to"], e["broken"]) for e in r.json()["edges"]}
    expected = logseq_edges(repo.path)
    assert any(not broken for *_, broken in expected) and any(broken for *_, broken in expected)
    assert ours == expected
    check = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert check.json()["findings"] == []  # Logseq makes the pages a link names
