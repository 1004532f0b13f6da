"""`git vivary privacy explain`: the answer to "why was my note not indexed?"."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import run_git_vivary


@pytest.fixture
def vault(repo: Any) -> Any:
    repo.commit(files={
        ".gitignore": "*.log\nbuild/\n",
        "notes/.gitignore": "scratch.md\n",
        ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n',
        "notes/idea.md": "# Idea\n",
        "USER.md": "# me\n",
    })
    return repo


def test_explain_text(vault: Any, cli: Any) -> None:
    r = cli("privacy", "explain", "notes/idea.md", "USER.md", "memory/m.md", "drafts/d.md", "notes/scratch.md",
            "x.log", "keys/server.pem", "config/secrets.yaml", "api-token-notes.md", cwd=vault.path)
    assert r.code == 0, r.err
    assert r.out == (
        "public   notes/idea.md\n"
        "private  USER.md  (floor: USER.md)\n"
        "private  memory/m.md  (floor: memory/**)\n"
        "private  drafts/d.md  (config: drafts/**)\n"
        "private  notes/scratch.md  (notes/.gitignore:1:scratch.md)\n"
        "private  x.log  (.gitignore:1:*.log)\n"
        "private  keys/server.pem  (sensitive name: *.pem)\n"
        "private  config/secrets.yaml  (sensitive name: secrets.*)\n"
        "public   api-token-notes.md\n"
    )


def test_explain_json(vault: Any, cli: Any) -> None:
    r = cli("privacy", "explain", "--json", "notes/idea.md", "build/x.md", cwd=vault.path)
    assert r.code == 0
    assert r.json() == [
        {"path": "notes/idea.md", "private": False, "reason": ""},
        {"path": "build/x.md", "private": True, "reason": ".gitignore:2:build/"},
    ]


def test_paths_are_relative_to_the_current_directory_like_git(vault: Any, cli: Any) -> None:
    r = cli("privacy", "explain", "scratch.md", "idea.md", "../USER.md", ":/notes/idea.md", "./sub/../idea.md",
            str(vault.path / "x.log"), cwd=vault.path / "notes")
    assert r.code == 0, r.err
    assert r.out.splitlines() == [
        "private  notes/scratch.md  (notes/.gitignore:1:scratch.md)",
        "public   notes/idea.md",
        "private  USER.md  (floor: USER.md)",
        "public   notes/idea.md",
        "public   notes/idea.md",
        "private  x.log  (.gitignore:1:*.log)",
    ]


def test_dash_c_is_the_directory_paths_are_relative_to(vault: Any, cli: Any, tmp_path: Path) -> None:
    r = cli("privacy", "explain", "-C", str(vault.path / "notes"), "scratch.md", cwd=tmp_path)
    assert r.code == 0 and r.out.startswith("private  notes/scratch.md")


@pytest.mark.parametrize("bad", ["../outside.md", "/etc/passwd", ".", ""])
def test_paths_outside_or_at_the_top_are_usage_errors(vault: Any, cli: Any, bad: str) -> None:
    r = cli("privacy", "explain", bad, cwd=vault.path)
    assert r.code == 2 and r.out == "" and "Traceback" not in r.err


def test_rev_uses_that_trees_gitignore(vault: Any, cli: Any) -> None:
    vault.write({".gitignore": "build/\n"})  # *.log no longer ignored in the working tree
    assert cli("privacy", "explain", "x.log", cwd=vault.path).out == "public   x.log\n"
    r = cli("privacy", "explain", "--rev", "HEAD", "x.log", cwd=vault.path)
    assert r.out == "private  x.log  (.gitignore:1:*.log)\n"


def test_rev_uses_that_trees_memory_config(vault: Any, cli: Any) -> None:
    vault.write({".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["journal/**"]\n'})
    assert cli("privacy", "explain", "drafts/d.md", cwd=vault.path).out == "public   drafts/d.md\n"
    r = cli("privacy", "explain", "--rev", "HEAD", "drafts/d.md", cwd=vault.path)
    assert r.out == "private  drafts/d.md  (config: drafts/**)\n"


def test_staged_is_private_if_the_index_or_the_working_tree_says_so(vault: Any, cli: Any) -> None:
    # A rule written but not yet staged already protects; a rule staged but since removed on disk too.
    vault.write({".gitignore": "*.log\nbuild/\n*.tmp.md\n"})
    assert cli("privacy", "explain", "--staged", "a.tmp.md", cwd=vault.path).out.startswith("private  a.tmp.md")
    vault.git("add", ".gitignore")
    vault.write({".gitignore": "build/\n"})
    r = cli("privacy", "explain", "--staged", "a.tmp.md", "x.log", cwd=vault.path)
    assert r.out.splitlines() == ["private  a.tmp.md  (.gitignore:3:*.tmp.md)", "private  x.log  (.gitignore:1:*.log)"]


def test_stdin_lines(vault: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"notes/idea.md\r\nUSER.md\n\n")))
    r = cli("privacy", "explain", "--stdin", "--json", cwd=vault.path)
    assert [(d["path"], d["private"]) for d in r.json()] == [("notes/idea.md", False), ("USER.md", True)]


ODD = [
    "with space.md", "new\nline.md", ":colon.md", "-dash.md", "#hash.md", "!bang.md", "tab\there.md",
    "ünïcödé.md", 'quote".md', "back\\slash.md", "notes/scratch.md", "star*.md",
]


def test_stdin_z_with_odd_names(vault: Any) -> None:
    vault.write({".gitignore": "*.log\nbuild/\n\\#hash.md\n\\!bang.md\nnew?line.md\n"})
    proc = run_git_vivary(["privacy", "explain", "--stdin", "-z"], vault.path, input="\0".join(ODD) + "\0")
    assert proc.returncode == 0, proc.stderr
    fields = proc.stdout.split("\0")
    assert fields.pop() == ""
    records = [tuple(fields[i:i + 3]) for i in range(0, len(fields), 3)]
    assert [r[1] for r in records] == ODD
    private = {r[1]: r[2] for r in records if r[0] == "private"}
    assert private == {
        "#hash.md": ".gitignore:3:\\#hash.md",
        "!bang.md": ".gitignore:4:\\!bang.md",
        "new\nline.md": ".gitignore:5:new?line.md",
        "notes/scratch.md": "notes/.gitignore:1:scratch.md",
    }
    assert all(r[0] in ("private", "public") for r in records)


def test_text_output_quotes_names_a_line_cannot_carry(vault: Any, cli: Any) -> None:
    r = cli("privacy", "explain", "new\nline.md", 'q"x.md', cwd=vault.path)
    assert r.out == 'public   "new\\nline.md"\npublic   "q\\"x.md"\n'


def test_non_utf8_names_round_trip_with_z(vault: Any) -> None:
    name = b"secrets.caf\xe9.md"
    bindir = str(Path(sys.executable).parent)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ["PATH"])
    import subprocess

    proc = subprocess.run(["git", "vivary", "privacy", "explain", "--stdin", "-z"], cwd=vault.path, env=env,
                          input=name + b"\0", capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"private\0" + name + b"\0sensitive name: secrets.*\0"


def test_usage_errors(vault: Any, cli: Any) -> None:
    assert cli("privacy", "explain", cwd=vault.path).code == 2
    assert cli("privacy", "explain", "-z", "a.md", cwd=vault.path).code == 2
    assert cli("privacy", "explain", "--stdin", "a.md", cwd=vault.path).code == 2
    assert cli("privacy", cwd=vault.path).code == 2


def test_bad_memory_config_is_exit_2(vault: Any, cli: Any) -> None:
    vault.write({".vivary/memory.toml": "[memory.privacy]\nprivate_paths = \"drafts/**\"\n"})
    r = cli("privacy", "explain", "a.md", cwd=vault.path)
    assert r.code == 2 and "`$.memory.privacy.private_paths`: expected `array`, got `str`" in r.err


def test_fails_closed_with_exit_3(vault: Any, cli: Any, tmp_path: Path) -> None:
    os.symlink(tmp_path, vault.path / "linked")
    r = cli("privacy", "explain", "linked/a.md", cwd=vault.path)
    assert r.code == 3 and r.out == "" and "beyond a symbolic link" in r.err and "Traceback" not in r.err
    plain = tmp_path / "plain"
    plain.mkdir()
    r = cli("privacy", "explain", "a.md", cwd=plain)
    assert r.code == 3 and "needs a Git work tree" in r.err


def test_through_git_dispatch(vault: Any) -> None:
    proc = run_git_vivary(["privacy", "explain", "USER.md"], vault.path)
    assert (proc.returncode, proc.stdout) == (0, "private  USER.md  (floor: USER.md)\n")


@pytest.mark.parametrize(("folder", "pattern"), [("NFD", "NFC"), ("NFC", "NFD")])
def test_private_paths_match_a_name_in_either_unicode_form(repo: Any, cli: Any, folder: str, pattern: str) -> None:
    """`Мой дневник/**` typed on a keyboard is composed (NFC); the same folder written on macOS, or synced
    from it, is decomposed (NFD: `й` is `и` + U+0306). Byte-wise the pattern missed the folder, and
    `find` (what agents are given) showed the diary. Either form of one name is the same name."""
    import unicodedata

    def form(kind: str, text: str) -> str:
        return unicodedata.normalize(kind, text)

    diary = form(folder, "Мой дневник/Секрет.md")
    assert diary != form("NFC", diary) or diary != form("NFD", diary)
    repo.commit(files={
        ".vivary/memory.toml": f'[memory.privacy]\nprivate_paths = ["{form(pattern, "Мой дневник/**")}"]\n',
        diary: "# Секрет\n\nPRIVATE-CANARY bank pin 4242\n",
        "Home.md": "# Home\n\nbank\n",
    })
    r = cli("privacy", "explain", diary, form("NFC", diary), cwd=repo.path)
    assert r.code == 0, r.err
    assert [line.split()[0] for line in r.out.splitlines()] == ["private", "private"], r.out
    for cmd in (["find", "bank pin", "--json"], ["query", "bank pin", "--json"]):
        r = cli(*cmd, cwd=repo.path)
        assert r.code in (0, 1), r.err
        assert "Home" in r.out and "CANARY" not in r.out and "Секрет" not in form("NFC", r.out), (cmd, r.out)
    assert cli("graph", "--json", cwd=repo.path).json()["nodes"][-1]["id"] == "Мой дневник/Секрет"  # still in the graph
