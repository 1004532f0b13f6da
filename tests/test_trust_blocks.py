"""The files vivary shares with the user (AGENTS.md / CLAUDE.md / GEMINI.md, MEMORY.md, USER.md): only one
well-formed block of vivary's is ever rewritten, and the bytes a rewrite replaces are kept.

Each case is what a user (or a cloned workspace) leaves in the file, then the command they run:
`bootstrap-host [--uninstall]`, `digest`, `onboard`. A file whose markers make no one block (a begin marker
with no end, two begins, an end before a begin, a block twice) is refused with exit 3 naming the file and the
line, and stays byte-identical: pairing the first begin marker with the end of a block vivary appended later
handed the user's text between them to the next rewrite, and MEMORY.md and USER.md are never in Git."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git

from vivary_git.errors import RefusedError
from vivary_git.hosts import blocks, files
from vivary_git.hosts.install import GUIDANCE_MARKERS, guidance_text
from vivary_git.hosts.onboard import MARKERS as PROFILE_MARKERS
from vivary_git.memory.dream.digest import MARKERS as DIGEST_MARKERS

MINE = "# My notes\n\nKeep the build green; never force-push main.\n"
BOM = "\ufeff"


@pytest.fixture
def ws(repo: Repo) -> Repo:
    repo.commit("init", {"tropo.toml": TROPO, "notes/a.md": "# A\n", ".gitignore": "USER.md\nMEMORY.md\n"})
    return repo


def backups(repo: Path, name: str) -> list[Path]:
    folder = repo / ".git" / "vivary" / "backups" / name
    return sorted(folder.iterdir()) if folder.is_dir() else []


# -- removing a block keeps every byte of the user's around it -----------------------------------------------

def _guidance(nl: str = "\n") -> str:
    return blocks.render(GUIDANCE_MARKERS, guidance_text(), nl)


_B = _guidance()
_BC = _guidance("\r\n")
# (case, AGENTS.md before `bootstrap-host --uninstall`, after; None: the file is gone)
LAYOUTS = [
    ("top, the user's text below", _B + MINE, MINE),
    ("top, a blank line then the user's text", _B + "\n" + MINE, "\n" + MINE),
    ("top, the user's text without a final newline", _B + "# Mine", "# Mine"),
    ("middle, after a blank line", "# Above\n\n" + _B + "# Below\n", "# Above\n# Below\n"),
    ("middle, right under a line", "# Above\n" + _B + "# Below\n", "# Above\n# Below\n"),
    ("bottom", MINE + "\n" + _B, MINE),
    ("bottom, without a final newline", MINE + "\n" + _B.rstrip("\n"), MINE),
    ("bottom, after text without a final newline", "# Mine\n" + _B, "# Mine"),
    ("the only content", _B, None),
    ("the only content, without a final newline", _B.rstrip("\n"), None),
    ("CRLF, top", _BC + "# Below\r\n", "# Below\r\n"),
    ("CRLF, middle", "# Above\r\n\r\n" + _BC + "# Below\r\n", "# Above\r\n# Below\r\n"),
    ("CRLF, bottom", "# Above\r\n\r\n" + _BC, "# Above\r\n"),
    ("CRLF, the only content", _BC, None),
    ("BOM, top", BOM + _B + MINE, BOM + MINE),
    ("BOM, bottom", BOM + MINE + "\n" + _B, BOM + MINE),
    ("BOM, the only content", BOM + _B, None),
]


@pytest.mark.parametrize(("text", "want"), [c[1:] for c in LAYOUTS], ids=[c[0] for c in LAYOUTS])
def test_uninstall_removes_the_block_and_keeps_the_users_text(ws: Repo, cli: Any, text: str,
                                                              want: str | None) -> None:
    agents = ws.path / "AGENTS.md"
    agents.write_bytes(text.encode())
    r = cli("bootstrap-host", "--host-kind", "generic", "--uninstall", cwd=ws.path)
    assert r.code == 0, r.err
    if want is None:
        assert not agents.exists()
    else:
        assert agents.read_bytes() == want.encode()


def test_a_file_uninstall_deletes_is_kept_as_a_backup(ws: Repo, cli: Any) -> None:
    agents = ws.path / "AGENTS.md"
    assert cli("bootstrap-host", "--host-kind", "generic", cwd=ws.path).code == 0
    created = agents.read_bytes()
    assert backups(ws.path, "AGENTS.md") == []  # a new file replaced nothing
    assert cli("bootstrap-host", "--host-kind", "generic", "--uninstall", cwd=ws.path).code == 0
    assert not agents.exists()
    assert [b.read_bytes() for b in backups(ws.path, "AGENTS.md")] == [created]


@pytest.mark.parametrize("mine", [MINE, "# Mine", "# A\r\nB\r\n", BOM + MINE, ""], ids=["lf", "no-final-newline",
                                                                                        "crlf", "bom", "empty"])
def test_install_then_uninstall_gives_back_the_same_bytes(ws: Repo, cli: Any, mine: str) -> None:
    agents = ws.path / "AGENTS.md"
    agents.write_bytes(mine.encode())
    assert cli("bootstrap-host", "--host-kind", "generic", cwd=ws.path).code == 0
    nl = "\r\n" if "\r\n" in mine else "\n"  # the block is added in the file's own line endings
    assert agents.read_bytes() == (mine + nl + _guidance(nl)).encode()
    assert cli("bootstrap-host", "--host-kind", "generic", "--uninstall", cwd=ws.path).code == 0
    assert agents.read_bytes() == mine.encode()


# -- markers that make no one block are refused -------------------------------------------------------------

def _malformed(m: blocks.Markers) -> list[tuple[str, str, int]]:
    """(case, file, the line the refusal names)."""
    b, e = m.begin, m.end
    return [
        ("a begin marker and no end", f"# Mine\n{b}\nMy precious notes\nMore of mine\n", 2),
        ("two begin markers (a stray one, then a block appended after it)",
         f"# Mine\n{b}\nMy precious notes\n\n{b}\nbody\n{e}\n", 5),
        ("an end before a begin", f"# Mine\n{e}\nMy precious notes\n{b}\nbody\n{e}\n", 2),
        ("an end alone", f"{e}\n# Mine\n", 1),
        ("the block repeated", f"{b}\nbody\n{e}\n# Mine\n{b}\nbody\n{e}\nbelow\n", 5),
        ("CRLF, a begin marker and no end", f"# Mine\r\n\r\n{b}\r\nMy precious notes\r\n", 3),
        ("BOM, a begin marker first and no end", f"{BOM}{b}\nMy precious notes\n", 1),
        ("an indented stray end marker inside the block", f"# Mine\n{b}\nbody\n  {e}\nnotes\n{e}\n", 6),
    ]


def _refused(r: Any, name: str, line: int) -> None:
    assert r.code == 3, (r.code, r.out, r.err)
    assert f"{name}:{line}: " in r.err and "by hand" in r.err and "nothing was written" in r.err
    assert "Traceback" not in r.err


_GUIDES = [("generic", "AGENTS.md"), ("claude-code", "CLAUDE.md"), ("gemini-cli", "GEMINI.md")]


@pytest.mark.parametrize(("kind", "name"), _GUIDES, ids=[g[1] for g in _GUIDES])
@pytest.mark.parametrize(("text", "line"), [c[1:] for c in _malformed(GUIDANCE_MARKERS)],
                         ids=[c[0] for c in _malformed(GUIDANCE_MARKERS)])
@pytest.mark.parametrize("uninstall", [True, False], ids=["uninstall", "install"])
def test_bootstrap_host_refuses_a_guidance_file_without_one_block(ws: Repo, cli: Any, kind: str, name: str,
                                                                  text: str, line: int, uninstall: bool) -> None:
    guide = ws.path / name
    guide.write_bytes(text.encode())
    r = cli("bootstrap-host", "--host-kind", kind, *(["--uninstall"] if uninstall else []), cwd=ws.path)
    _refused(r, name, line)
    assert guide.read_bytes() == text.encode()
    assert not (ws.path / ".mcp.json").exists() and not (ws.path / ".gemini").exists()
    assert backups(ws.path, name) == []


# What a refusal says after FILE:LINE, by case of `_malformed`: the stray marker, and the line of the block it
# clashes with.
_BEGIN_ALONE = "vivary's begin marker line, with no end marker line after it"
_END_ALONE = "vivary's end marker line, with no begin marker line before it"
_WHY = {
    "a begin marker and no end": _BEGIN_ALONE,
    "two begin markers (a stray one, then a block appended after it)":
        "a second begin marker line, inside the block that begins at line 2",
    "an end before a begin": _END_ALONE,
    "an end alone": _END_ALONE,
    "the block repeated": "a second vivary block (the first begins at line 1)",
    "CRLF, a begin marker and no end": _BEGIN_ALONE,
    "BOM, a begin marker first and no end": _BEGIN_ALONE,
    "an indented stray end marker inside the block": _END_ALONE,
}


@pytest.mark.parametrize(("case", "text", "line"), _malformed(GUIDANCE_MARKERS),
                         ids=[c[0] for c in _malformed(GUIDANCE_MARKERS)])
def test_a_refusal_names_the_stray_marker_word_for_word(ws: Repo, cli: Any, case: str, text: str,
                                                        line: int) -> None:
    (ws.path / "AGENTS.md").write_bytes(text.encode())
    r = cli("bootstrap-host", "--host-kind", "generic", cwd=ws.path)
    assert r.code == 3, r.err
    assert (f"AGENTS.md:{line}: {_WHY[case]}, so which lines are vivary's is not clear; remove the stray marker "
            "line (or the whole block) by hand and run again; nothing was written") in r.err


def test_a_marker_with_more_on_its_line_is_the_users_text(ws: Repo, cli: Any) -> None:
    """Only spaces, tabs and the line end may stand around a marker: with anything else (a no-break space, a
    letter) the line is the user's, and the block is added below it."""
    b, e = GUIDANCE_MARKERS.begin, GUIDANCE_MARKERS.end
    mine = f"# Mine\n{b}\u00a0\nX{e}X\n"
    agents = ws.path / "AGENTS.md"
    agents.write_bytes(mine.encode())
    r = cli("bootstrap-host", "--host-kind", "generic", cwd=ws.path)
    assert r.code == 0, r.err
    assert agents.read_bytes() == (mine + "\n" + _B).encode()


def test_removing_a_block_from_a_file_without_one_names_the_file() -> None:
    text = f"# Mine\n{GUIDANCE_MARKERS.begin}\nMy precious notes\n"
    with pytest.raises(RefusedError, match=r"^notes/AGENTS\.md:2: vivary's begin marker line"):
        blocks.remove(text, GUIDANCE_MARKERS, "notes/AGENTS.md")


@pytest.mark.parametrize(("text", "line"), [c[1:] for c in _malformed(DIGEST_MARKERS)],
                         ids=[c[0] for c in _malformed(DIGEST_MARKERS)])
def test_digest_refuses_a_memory_md_without_one_block(ws: Repo, cli: Any, text: str, line: int) -> None:
    memory = ws.path / "MEMORY.md"
    memory.write_bytes(text.encode())
    for _ in range(2):  # the second run is where the text between the markers used to go
        _refused(cli("digest", cwd=ws.path), "MEMORY.md", line)
        assert memory.read_bytes() == text.encode()
    _refused(cli("digest", "--check", cwd=ws.path), "MEMORY.md", line)
    assert backups(ws.path, "MEMORY.md") == []


@pytest.mark.parametrize(("text", "line"), [c[1:] for c in _malformed(PROFILE_MARKERS)],
                         ids=[c[0] for c in _malformed(PROFILE_MARKERS)])
def test_onboard_refuses_a_user_md_without_one_block(ws: Repo, cli: Any, text: str, line: int) -> None:
    user = ws.path / "USER.md"
    user.write_bytes(text.encode())
    for _ in range(2):
        _refused(cli("onboard", "--answer", "name=Ada", cwd=ws.path), "USER.md", line)
        assert user.read_bytes() == text.encode()
    assert backups(ws.path, "USER.md") == []


def test_host_status_says_unreadable_and_writes_nothing(ws: Repo, cli: Any) -> None:
    text = f"# Mine\n{GUIDANCE_MARKERS.begin}\nMy precious notes\n"
    (ws.path / "AGENTS.md").write_text(text)
    r = cli("host-status", "--host-kind", "generic", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    guidance = r.json()["hosts"][0]["guidance"]
    assert guidance["path"] == "AGENTS.md" and guidance["state"] == "unreadable"
    assert guidance["detail"].startswith("AGENTS.md:2: "), guidance  # where and why, not only that
    assert (ws.path / "AGENTS.md").read_text() == text


# -- well-formed: only the block is rewritten ----------------------------------------------------------------

def _outside(text: str, m: blocks.Markers) -> tuple[str, str]:
    span = m.span(text, "f")
    assert span is not None
    return text[:span[0]], text[span[1]:]


Writer = Callable[[Repo, Any, int], None]


def _onboard(ws: Repo, cli: Any, n: int) -> None:
    assert cli("onboard", "--answer", f"name=Ada {n}", cwd=ws.path).code == 0


def _digest(ws: Repo, cli: Any, n: int) -> None:
    ws.commit("memory", {f"memories/m{n}.md": f"---\ntype: memory\ndurability: pinned\n---\n# Rule {n}\n\nText.\n"})
    assert cli("digest", cwd=ws.path).code == 0


WRITERS: list[tuple[str, blocks.Markers, Writer]] = [("USER.md", PROFILE_MARKERS, _onboard),
                                                     ("MEMORY.md", DIGEST_MARKERS, _digest)]


@pytest.mark.parametrize(("name", "markers", "run"), WRITERS, ids=[w[0] for w in WRITERS])
def test_a_rewrite_changes_only_the_block_and_keeps_the_last_five(ws: Repo, cli: Any, name: str,
                                                                  markers: blocks.Markers, run: Writer) -> None:
    path = ws.path / name
    above, below = f"{BOM}# Above\r\n\r\nmine, line 1\r\n", "\r\n<!-- my own comment -->\r\nmine, last line"
    path.write_bytes((above + blocks.render(markers, "old\n", "\r\n") + below).encode())
    os.chmod(path, 0o640)
    seen = [path.read_bytes()]
    for n in range(7):
        run(ws, cli, n)
        text = path.read_bytes().decode()
        assert _outside(text, markers) == (above, below)
        assert stat.S_IMODE(path.stat().st_mode) == 0o640  # the file's mode is kept
        seen.append(path.read_bytes())
    kept = backups(ws.path, name)
    assert [k.read_bytes() for k in kept] == seen[-6:-1]  # the last five, oldest first: what each write replaced
    for k in kept:
        assert stat.S_IMODE(k.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept[0].parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(kept[0].parent.parent.stat().st_mode) == 0o700
    assert git(ws.path, "status", "--porcelain", "--ignored") == f"!! {name}\n"  # nothing else in the work tree


def test_bootstrap_host_updates_only_its_block_and_keeps_what_it_replaced(ws: Repo, cli: Any) -> None:
    agents = ws.path / "AGENTS.md"
    outdated = "# Above\n\n" + blocks.render(GUIDANCE_MARKERS, "old guidance\n", "\n") + "# Below\n"
    agents.write_text(outdated)
    assert cli("bootstrap-host", "--host-kind", "generic", cwd=ws.path).code == 0
    text = agents.read_text()
    assert _outside(text, GUIDANCE_MARKERS) == ("# Above\n\n", "# Below\n")
    assert GUIDANCE_MARKERS.inner(text, "AGENTS.md") == guidance_text()
    assert [b.read_text() for b in backups(ws.path, "AGENTS.md")] == [outdated]


def test_backups_go_to_the_common_git_dir_of_a_linked_worktree(ws: Repo, cli: Any, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    ws.git("worktree", "add", "-q", str(linked))
    (linked / "USER.md").write_text("# Me\n")
    assert cli("onboard", "--answer", "name=Ada", cwd=linked).code == 0
    assert [b.read_text() for b in backups(ws.path, "USER.md@linked")] == ["# Me\n"]  # not the main tree's
    assert backups(ws.path, "USER.md") == []
    assert not any(p.name == "backups" for p in linked.rglob("*"))


def test_a_file_in_a_subfolder_is_named_by_its_path(ws: Repo, cli: Any) -> None:
    sub = ws.path / "team" / "space"
    sub.mkdir(parents=True)
    (sub / "tropo.toml").write_text(TROPO)
    (sub / "USER.md").write_text("# Me\n")
    assert cli("onboard", "--answer", "name=Ada", cwd=sub).code == 0
    assert [b.read_text() for b in backups(ws.path, "team%2Fspace%2FUSER.md")] == ["# Me\n"]


def test_a_plain_folder_is_written_without_backups(cli: Any, tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "USER.md").write_text("# Me\n")
    assert cli("onboard", "--answer", "name=Ada", cwd=folder).code == 0
    text = (folder / "USER.md").read_text()
    assert text.startswith("# Me\n\n") and "- name: Ada" in text
    assert sorted(p.name for p in folder.iterdir()) == ["USER.md"]


def test_a_backup_that_cannot_be_kept_stops_the_write(ws: Repo, cli: Any) -> None:
    (ws.path / "USER.md").write_text("# Me\n")
    (ws.path / ".git" / "vivary").mkdir()
    (ws.path / ".git" / "vivary" / "backups").write_text("a file where the folder goes\n")
    r = cli("onboard", "--answer", "name=Ada", cwd=ws.path)
    assert r.code == 3 and "USER.md: cannot keep a copy" in r.err and "nothing was written" in r.err
    assert (ws.path / "USER.md").read_text() == "# Me\n"


@pytest.mark.parametrize("place", ["vivary", "vivary/backups", "vivary/backups/USER.md"])
def test_a_backup_is_never_written_through_a_link_out_of_the_git_folder(ws: Repo, cli: Any, tmp_path: Path,
                                                                       place: str) -> None:
    """A link at `.git/vivary` had the copy of USER.md (a private profile) written wherever it led; the folders on
    the way are what derived.py allows for all of `.git/vivary/`, and the write stops (exit 3) before any is kept."""
    (ws.path / "USER.md").write_text("# Me\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    link = ws.path / ".git" / place
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    r = cli("onboard", "--answer", "name=Ada", cwd=ws.path)
    assert r.code == 3 and r.err.count("\n") == 1, r.err
    assert "USER.md: cannot keep a copy" in r.err
    assert f"{link}: a symbolic link that leads out of the Git folder" in r.err
    assert (ws.path / "USER.md").read_text() == "# Me\n" and list(outside.iterdir()) == []


def test_a_file_turned_into_a_symlink_is_never_replaced(ws: Repo, tmp_path: Path) -> None:
    """`files.write` is handed a path it read; a symlink put there since is refused, not written through and
    not replaced by a regular file."""
    victim = tmp_path / "victim.txt"
    victim.write_text("do not touch\n")
    path = ws.path / "AGENTS.md"
    path.write_text("# Mine\n")
    before = files.read(path, "AGENTS.md")
    path.unlink()
    path.symlink_to(victim)
    with pytest.raises(RefusedError, match="became a symlink"):
        files.write(path, "AGENTS.md", "# Theirs\n", before=before)
    assert path.is_symlink() and victim.read_text() == "do not touch\n"


def test_a_symlinked_user_or_memory_file_is_refused(ws: Repo, cli: Any, tmp_path: Path) -> None:
    victim = tmp_path / "victim.md"
    victim.write_text("do not touch\n")
    for name in ("USER.md", "MEMORY.md"):
        (ws.path / name).symlink_to(victim)
    assert cli("onboard", "--answer", "name=Ada", cwd=ws.path).code == 3
    assert cli("digest", cwd=ws.path).code == 3
    assert victim.read_text() == "do not touch\n"
    assert (ws.path / "USER.md").is_symlink() and (ws.path / "MEMORY.md").is_symlink()


def test_the_digest_resource_serves_only_the_digest_when_memory_md_is_malformed(ws: Repo, cli: Any) -> None:
    """A read writes nothing and never serves the user's text: with no one block in MEMORY.md, the MCP resource
    is the digest as `digest` would write it."""
    mcp = pytest.importorskip("vivary_git.mcp.service")
    text = f"# Mine\n{DIGEST_MARKERS.begin}\nMy precious notes\n"
    (ws.path / "MEMORY.md").write_text(text)
    served = mcp.MemoryService(ws.path).digest()
    assert served.startswith("# Memory digest\n") and "My precious notes" not in served
    assert (ws.path / "MEMORY.md").read_text() == text
