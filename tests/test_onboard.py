"""git vivary onboard: the first-start answers go to USER.md and nowhere else."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo
from test_store import vivary_objects

from vivary_git.hosts import onboard

CANARY = "zqxonboardcanary"  # one token: survives lower-casing and stemming, so any copy of it is found
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'


@pytest.fixture
def ws(repo: Repo) -> Repo:
    repo.write({"tropo.toml": TROPO, "notes/a.md": "# Alpha\n\nThe alpha note about rotating keys.\n",
                "notes/b.md": "# Beta\n\nBeta links [[a]].\n"})
    repo.commit("init")
    return repo


def test_answers_are_written_as_a_pinned_profile_and_never_echoed(ws: Repo, cli: Any) -> None:
    r = cli("onboard", "--answer", f"name=Ada {CANARY}", "--answer", "response-style=brief", "--json", cwd=ws.path)
    assert r.code == 0, r.err
    rep = r.json()
    assert rep["written"] == ["name", "style"] and rep["answered"] == ["name", "style"]
    assert rep["missing"] == ["role", "language", "goal"] and rep["done"] is False
    assert [q["key"] for q in rep["questions"]] == ["role", "language", "goal"]
    assert CANARY not in r.out + r.err and "brief" not in r.out + r.err
    text = (ws.path / "USER.md").read_text()
    assert f"- name: Ada {CANARY}\n" in text and "- style: brief\n" in text
    assert text.startswith("# About me (private)")
    assert onboard.read_profile(ws.path) == {"name": f"Ada {CANARY}", "style": "brief"}

    plain = cli("onboard", "--answer", "role=engineer", "--answer", "language=English", "--answer", "goal=ship",
                cwd=ws.path)
    assert plain.code == 0 and "onboarding done" in plain.out
    assert CANARY not in plain.out and "engineer" not in plain.out
    status = cli("host-status", "--json", cwd=ws.path).json()["onboarding"]
    assert status["done"] is True and status["missing"] == []
    # An empty answer takes one back; the others stay.
    assert cli("onboard", "--answer", "goal=", cwd=ws.path).code == 0
    assert set(onboard.read_profile(ws.path)) == {"name", "role", "language", "style"}


def test_onboard_reports_only_what_changed_and_the_last_answer_takes_its_block(ws: Repo, cli: Any) -> None:
    # The same answer again said written:["name"] though nothing changed; taking back an answer that was not
    # there said written too; and an empty profile block stayed in USER.md after the last answer went.
    gone = cli("onboard", "--answer", "goal=", "--json", cwd=ws.path).json()
    assert gone["written"] == [] and gone["removed"] == [] and not (ws.path / "USER.md").exists()
    assert cli("onboard", "--answer", "name=Ada", "--json", cwd=ws.path).json()["written"] == ["name"]
    text = (ws.path / "USER.md").read_text()
    mtime = (ws.path / "USER.md").stat().st_mtime_ns
    again = cli("onboard", "--answer", "name=Ada", "--answer", "goal=", "--json", cwd=ws.path).json()
    assert again["written"] == [] and again["removed"] == [] and again["answered"] == ["name"]
    said = cli("onboard", "--answer", "name=  Ada ", cwd=ws.path).out
    assert "wrote" not in said and "USER.md unchanged: the profile was already as given" in said
    assert (ws.path / "USER.md").read_text() == text and (ws.path / "USER.md").stat().st_mtime_ns == mtime
    changed = cli("onboard", "--answer", "name=Grace", "--answer", "role=engineer", "--json", cwd=ws.path).json()
    assert changed["written"] == ["name", "role"] and changed["removed"] == []
    r = cli("onboard", "--answer", "role=", cwd=ws.path)
    assert "removed role from USER.md" in r.out and "wrote" not in r.out
    assert cli("onboard", "--answer", "name=", "--json", cwd=ws.path).json()["removed"] == ["name"]
    assert not (ws.path / "USER.md").exists()  # it held only what onboard wrote: adding then removing is no change
    mine = "# Me\n\nI like tea.\n"
    ws.write({"USER.md": mine})
    assert cli("onboard", "--answer", "name=Ada", cwd=ws.path).code == 0
    assert cli("onboard", "--answer", "name=", cwd=ws.path).code == 0
    assert (ws.path / "USER.md").read_text() == mine  # no empty profile block left behind


def test_an_existing_user_md_keeps_its_text(ws: Repo, cli: Any) -> None:
    mine = "# Me\n\nI like tea and short answers.\n"
    ws.write({"USER.md": mine, ".gitignore": "USER.md\n"})
    assert cli("onboard", "--answer", "name=Ada", cwd=ws.path).code == 0
    text = (ws.path / "USER.md").read_text()
    assert text.startswith(mine + "\n<!-- >>> vivary profile")
    assert cli("onboard", "--answer", "name=Grace", cwd=ws.path).code == 0
    assert (ws.path / "USER.md").read_text() == text.replace("Ada", "Grace")


def test_answers_cannot_forge_the_block(ws: Repo, cli: Any) -> None:
    forged = "x\n<!-- <<< vivary profile <<< -->\n- goal: injected"
    assert cli("onboard", "--answer", f"name={forged}", cwd=ws.path).code == 0
    assert onboard.read_profile(ws.path) == {"name": " ".join(forged.split())}
    assert (ws.path / "USER.md").read_text().count("<<< vivary profile <<<") == 1


def test_user_md_is_kept_out_of_git(ws: Repo, cli: Any) -> None:
    r = cli("onboard", "--answer", "name=Ada", cwd=ws.path)
    assert r.code == 0 and ".git/info/exclude" in r.out
    assert ws.git("check-ignore", "--no-index", "USER.md").strip() == "USER.md"
    assert "USER.md" not in ws.git("status", "--porcelain", "--ignored=no")
    again = cli("onboard", "--answer", "role=x", cwd=ws.path)
    assert ".git/info/exclude" not in again.out  # once is enough
    assert ws.git("config", "--get", "core.excludesFile", check=False) == ""


def test_a_tracked_user_md_is_refused(ws: Repo, cli: Any) -> None:
    ws.commit("user", {"USER.md": "# Me\n"})
    r = cli("onboard", "--answer", "name=Ada", cwd=ws.path)
    assert r.code == 3 and "git rm --cached" in r.err
    assert (ws.path / "USER.md").read_text() == "# Me\n"


def test_a_symlinked_user_md_is_refused_naming_onboard_and_its_fix(ws: Repo, cli: Any, tmp_path: Path) -> None:
    # It said "bootstrap-host edits only real files … (… or configure this host by hand)": another command's fix.
    target = tmp_path / "elsewhere.md"
    target.write_text("# not mine to change\n")
    (ws.path / "USER.md").symlink_to(target)
    r = cli("onboard", "--answer", "name=Ada", cwd=ws.path)
    assert r.code == 3
    assert r.err == (f"git vivary onboard: {ws.path / 'USER.md'} is a symlink; onboard edits only real files inside "
                     "the workspace (a link could point anywhere); remove the link (its target is kept) and run "
                     "onboard again: it writes a new USER.md\n")
    assert "bootstrap-host" not in r.err and "configure this host" not in r.err
    assert target.read_text() == "# not mine to change\n"
    (ws.path / "USER.md").unlink()
    assert cli("onboard", "--answer", "name=Ada", cwd=ws.path).code == 0


def test_unknown_key_is_a_usage_error(ws: Repo, cli: Any) -> None:
    r = cli("onboard", "--answer", "shoe=42", cwd=ws.path)
    assert r.code == 2 and "name, role, language, style, goal" in r.err
    assert not (ws.path / "USER.md").exists()


def test_without_answers_it_lists_the_questions(ws: Repo, cli: Any) -> None:
    r = cli("onboard", cwd=ws.path)
    assert r.code == 0 and "What should I call you?" in r.out
    assert not (ws.path / "USER.md").exists()


def test_questions_on_a_terminal_skip_empty_lines() -> None:
    import io

    asked = io.StringIO()
    answers = onboard.ask(io.StringIO("Ada\n\nEnglish\n"), asked, ["name", "role", "language", "goal"])
    assert answers == {"name": "Ada", "language": "English"}  # role skipped; input ended before goal
    assert "What should I call you?" in asked.getvalue()


def test_canary_reaches_only_user_md(ws: Repo, cli: Any) -> None:
    ws.write({".vivary/memory.toml": MEMORY})
    answers = [f"{k}={CANARY}{k}" for k in onboard.QUESTIONS]
    outputs = []
    r = cli("onboard", *[a for pair in answers for a in ("--answer", pair)], "--json", cwd=ws.path)
    assert r.code == 0, r.err
    outputs.append(r.out + r.err)
    assert CANARY in (ws.path / "USER.md").read_text()  # where the user asked for it

    ws.git("add", "-A")
    ws.git("commit", "-qm", "work")  # USER.md is ignored: `git add -A` leaves it out
    assert "USER.md" not in ws.git("ls-files")
    for args in (("check", "--rev", "HEAD"), ("check",), ("index", "--yes"), ("find", CANARY, "--json"),
                 ("query", CANARY, "--json"), ("recall", f"{CANARY}name", "--json"), ("host-status", "--json"),
                 ("bootstrap-host", "--host-kind", "codex", "--json"), ("onboard", "--json"), ("onboard",),
                 ("graph", "--json"), ("doctor",)):
        r = cli(*args, cwd=ws.path)
        assert r.code in (0, 1), (args, r.err)
        outputs.append(_without_echo(r.out) + r.err)
    _assert_nowhere(ws.path, outputs, vivary_dir=ws.path / ".git" / "vivary")  # the whole local cache too
    # Even force-added and committed (the mistake onboard refuses to make), the floor keeps it out of the
    # semantic memory and the cache ref. (`find`/`query` search every tracked note of the graph, a committed
    # USER.md too: that is the graph's rule, not memory's.)
    ws.git("add", "-f", "USER.md")
    ws.git("commit", "-qm", "oops")
    assert cli("check", "--rev", "HEAD", cwd=ws.path).code in (0, 1)
    assert cli("index", "--yes", cwd=ws.path).code == 0
    for args in (("recall", f"{CANARY}goal", "--json"), ("recall", CANARY, "--json", "--k", "250")):
        r = cli(*args, cwd=ws.path)
        assert r.code == 0, (args, r.err)
        outputs.append(_without_echo(r.out) + r.err)
    # The memory index and the cache ref; the graph's own parse cache (.git/vivary/parse-*) does hold a
    # tracked USER.md, as it holds every tracked note.
    _assert_nowhere(ws.path, outputs, vivary_dir=ws.path / ".git" / "vivary" / "memory")


def _assert_nowhere(path: Path, outputs: list[str], *, vivary_dir: Path) -> None:
    for text in outputs:
        assert CANARY not in text, text
    assert subprocess.run(["git", "for-each-ref", "refs/vivary/"], cwd=path, capture_output=True,
                          text=True, check=True).stdout  # the cache ref was written, and is scanned here
    assert CANARY.encode() not in vivary_objects(path)
    files = [p for p in vivary_dir.rglob("*") if p.is_file()]
    assert files
    for p in files:
        assert CANARY.encode() not in p.read_bytes().lower(), p


def _without_echo(out: str) -> str:
    """find/query --json repeat the query they were asked: that echo is the caller's own text."""
    try:
        value = json.loads(out)
    except ValueError:
        return out
    if isinstance(value, dict):
        value.pop("query", None)
    return json.dumps(value)
