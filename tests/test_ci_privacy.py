"""`git vivary ci` prints no byte of a private file: its outputs leave the machine (a pull request's annotations,
the job summary, SARIF for code scanning, GitLab's report), while the gate still counts a private file's errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from test_gates_action import pr_event, run_action, tool_inputs

from vivary_git.gates.private import PRIVATE_FINDING

TROPO = 'version = 1\n[types.module]\nfolder = "modules"\noptional = { depends = "ref-list" }\n'
CANARY = re.compile("canary", re.IGNORECASE)
FORMATS = ("text", "github", "json", "sarif", "codequality")


def private_note(n: int) -> str:
    """A private note whose every part is a canary: frontmatter `id:`, `title:`, an unknown field, the heading,
    the body, a wikilink that reaches nothing and one to the public note `target`."""
    return (f"---\nid: canary-fm-id-{n}\ntitle: canary-fm-title-{n}\ncanary_field: canary-value\n---\n"
            f"# canary-heading-{n}\n\ncanary-body-{n}\n\nSee [[target]] and [[canary-link-{n}]].\n")


def vault(repo: Repo, ws: str) -> None:
    """base: a public note links the private notes, drafts/ is private by `private_paths`; head: the change edits
    USER.md (a new broken link), removes the private memory/old.md, and edits target.md (USER.md references it)."""
    at = f"{ws}/" if ws else ""
    repo.commit("base", files={
        f"{at}tropo.toml": TROPO,
        f"{at}.gitignore": "USER.md\n",
        f"{at}target.md": "# Target\n",
        f"{at}pub.md": "# Pub\n\nSee [[user]] and [[old]].\n",
        f"{at}memory/old.md": "# canary-old-heading\n\ncanary-old-body [[target]]\n",
        # Private by the workspace's own rule, not by name: the same decision `find` and the index make.
        f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["drafts/**"]\n',
        f"{at}drafts/plan.md": "# canary-draft-heading\n\nSee [[canary-draft-link]].\n",
    })
    repo.write({f"{at}USER.md": private_note(1)})
    repo.git("add", "-f", f"{at}USER.md")
    repo.commit("USER.md, tracked anyway")
    repo.git("rm", "-q", f"{at}memory/old.md")
    repo.write({f"{at}USER.md": private_note(2), f"{at}target.md": "# Target\n\nEdited.\n"})
    repo.git("add", "-f", f"{at}USER.md")
    repo.commit("head")


LAYOUTS = {  # name: (workspace folder, folder run from, extra arguments)
    "top": ("", "", ()),
    "subfolder": ("vault", "vault", ()),
    "root": ("vault", "", ("--root", "vault")),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_no_private_byte_in_any_ci_output(repo: Repo, cli: Any, tmp_path: Path, layout: str) -> None:
    ws, cwd, extra = LAYOUTS[layout]
    vault(repo, ws)
    at = f"{ws}/" if ws else ""
    where = repo.path / cwd
    # The owner's own view still shows them: the canaries are really in what the review reads.
    own = cli("check", "--rev", "HEAD", *extra, cwd=where)
    assert "canary-link-2" in own.out, own.out + own.err
    for fail_on in ("new", "all"):
        files = {name: tmp_path / f"{layout}-{fail_on}.{name}"
                 for name in ("summary", "outputs", "sarif", "codequality", "output")}
        printed = []
        for fmt in FORMATS:
            r = cli("ci", "--base", "HEAD~1", "--format", fmt, "--fail-on", fail_on, "--summary",
                    str(files["summary"]), "--github-output", str(files["outputs"]), "--sarif", str(files["sarif"]),
                    "--codequality", str(files["codequality"]), *extra, cwd=where)
            # USER.md's new broken link is an error in the head: the gate counts it whichever way it fails.
            assert r.code == 1, (fmt, r.out, r.err)
            printed.append(r.out + r.err)
            written = cli("ci", "--base", "HEAD~1", "--format", fmt, "--output", str(files["output"]), *extra,
                          cwd=where)
            assert written.code == 1
            printed.append(files["output"].read_text() + written.out + written.err)
        reports = [files[n].read_text() for n in ("summary", "outputs", "sarif", "codequality")]
        everything = "\n".join(printed + reports)
        assert not CANARY.findall(everything), [line for line in everything.splitlines() if CANARY.search(line)][:5]
    # What the outputs still say: the private file's findings by level, code, path and line, in fixed words.
    r = cli("ci", "--base", "HEAD~1", "--format", "json", *extra, cwd=where).json()
    private = [f for f in r["check"]["findings"] if f["path"] == "USER.md" or f["path"].endswith("/USER.md")]
    assert {(f["level"], f["code"], f["line"]) for f in private} >= {("error", "W221", 10)}
    assert {f["message"] for f in private} == {PRIVATE_FINDING}
    [draft] = [f for f in r["check"]["findings"] if f["path"] == "drafts/plan.md"]
    assert (draft["level"], draft["code"], draft["line"], draft["message"]) == ("error", "W221", 3, PRIVATE_FINDING)
    assert r["check"]["errors"] == len([f for f in r["check"]["findings"] if f["level"] == "error"])
    assert r["new"]["errors"] >= 1
    gone = next(c for c in r["change"]["changed"] if c["change"] == "removed")
    assert gone == {"id": f"(private: {at}memory/old.md)", "type": None, "path": "memory/old.md", "change": "removed",
                    "renamed": None}
    # pub.md's own link to the removed private note broke: named by its path, never by what the note held.
    [broke] = [b for b in r["broke"] if b["change"] == "removed"]
    assert (broke["target"], [x["id"] for x in broke["referrers"]]) == (f"(private: {at}memory/old.md)", ["pub"])
    assert {n["title"] for n in r["picture"]["nodes"] if n["id"].startswith("(private: ")} == {""}
    github = cli("ci", "--base", "HEAD~1", "--format", "github", *extra, cwd=where).out
    assert (f"::error file={at}USER.md,line=10,title=vivary W221::{PRIVATE_FINDING}") in github
    # target.md changed: USER.md references it, counted rather than named.
    assert "1 note(s) reference 'target' (modified): 1 private note(s)." in github
    assert f"::notice file={at}USER.md,line=1,title=vivary%3A private file committed::" in github


def test_a_private_file_the_change_does_not_touch_gets_no_notice(repo: Repo, cli: Any) -> None:
    vault(repo, "")
    repo.commit("later", files={"pub.md": "# Pub\n\nSee [[user]].\n"})
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=repo.path)
    assert "private file committed" not in r.out
    assert f"::error file=USER.md,line=10,title=vivary W221 (already in the base)::{PRIVATE_FINDING}" in r.out \
        or f"title=vivary W221 (already in the base)::{PRIVATE_FINDING}" in r.out
    assert not CANARY.search(r.out)
    plain = json.loads(cli("ci", "--format", "json", cwd=repo.path).out)  # without --base: the check alone
    assert not CANARY.search(json.dumps(plain))


def test_the_action_outputs_no_private_byte(repo: Repo, tmp_path: Path) -> None:
    """The GitHub Action runs `ci`: its log (annotations), job summary, SARIF and step outputs follow."""
    vault(repo, "vault")
    base = repo.git("rev-parse", "HEAD~1").strip()
    head = repo.git("rev-parse", "HEAD").strip()
    sarif = tmp_path / "vivary.sarif"
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "root": "vault", "sarif": str(sarif)}, pr_event(base, head))
    assert r.code == 1, r.log  # USER.md's new broken link fails the step
    assert f"::error file=vault/USER.md,line=10,title=vivary W221::{PRIVATE_FINDING}" in r.log
    assert r.outputs["errors"] == "3"  # with pub.md's link to the removed memory/old.md and drafts/plan.md's
    everything = "\n".join([r.log, r.summary, sarif.read_text(), json.dumps(r.outputs), json.dumps(r.steps)])
    assert not CANARY.search(everything), [line for line in everything.splitlines() if CANARY.search(line)][:5]


def test_a_head_whose_privacy_rules_cannot_be_read_prints_nothing_of_its_notes(repo: Repo, cli: Any) -> None:
    """Without its `private_paths` ci cannot tell what to hide: it stops (exit 2) rather than guess."""
    vault(repo, "")
    repo.commit("broken rules", files={".vivary/memory.toml": "[memory.privacy]\nprivate_paths = [oops\n"})
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=repo.path)
    assert r.code == 2
    assert r.out == ("::error title=vivary%3A config error::git vivary ci: .vivary/memory.toml: invalid TOML: "
                     "Invalid value (at line 2, column 18)\n")
    assert not CANARY.search(r.out + r.err)


def test_a_private_file_that_is_no_note_gets_the_notice_too(repo: Repo, cli: Any) -> None:
    """`.env` is no note, so nothing else in the review names it; committing it is what the notice is for."""
    repo.commit("base", files={"tropo.toml": TROPO, "a.md": "# A\n"})
    repo.commit("head", files={".env": "TOKEN=canary-token\n", "config/secrets.yaml": "canary: 1\n", "b.md": "# B\n"})
    repo.git("rm", "-q", "a.md")
    repo.commit("a.md gone")
    r = cli("ci", "--base", "HEAD~2", "--format", "github", cwd=repo.path)
    assert r.code == 0, r.err
    notices = [line.split("::")[1] for line in r.out.splitlines() if "private file committed" in line]
    assert notices == ["notice file=.env,line=1,title=vivary%3A private file committed",
                       "notice file=config/secrets.yaml,line=1,title=vivary%3A private file committed"]
    assert not CANARY.search(r.out + r.err)
