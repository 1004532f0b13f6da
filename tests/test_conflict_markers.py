"""A note committed with a merge's conflict markers in its body (W225): real `git merge` conflicts, checked in the
staged tree, the working tree and a revision, refused by the pre-commit hook, and what is not a conflict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

from vivary_git.body import MAX_CONFLICTS
from vivary_git.gates.sarif import RULES

FIX = "resolve the conflict: keep one side or combine them, and delete the marker lines"
PLAN = "# Plan\n\nWe ship on Monday.\n\nSee [[Other]].\n"


def said(path: str, start: int, end: int, level: str = "error") -> str:
    return (f"{path}:{start}: {level} W225: merge conflict markers left in the note from line {start} to line "
            f"{end}: {FIX}")


def listed(r: Any) -> list[str]:
    """The finding lines of a text report (the summary line after them left out)."""
    return [line for line in r.out.splitlines() if line and not line.startswith("vivary: ")]


def conflicted(repo: Repo, path: str, base: str, ours: str, theirs: str, style: str | None = None) -> str:
    """`path` as `git merge` leaves it when both branches edited the same lines of `base`, then `git add`ed as it
    is (markers in), the way a hurried `git add -A` after a pull does. Returns the file's text."""
    if style is not None:
        repo.git("config", "merge.conflictStyle", style)
    repo.commit("base", {path: base, "Other.md": "# Other\n"})
    repo.git("switch", "-q", "-c", "side")
    repo.commit("theirs", {path: theirs})
    repo.git("switch", "-q", "main")
    repo.commit("ours", {path: ours})
    merge = subprocess.run(["git", "merge", "-q", "side"], cwd=repo.path, capture_output=True, text=True)
    assert merge.returncode == 1 and "CONFLICT" in merge.stdout + merge.stderr, merge.stdout + merge.stderr
    repo.git("add", path)
    return (repo.path / path).read_text()


def commit(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """A real `git commit` (its hooks' output on stdout); PATH without our venv, as tests/test_gates_hooks.py."""
    return subprocess.run(["git", "commit", "-q", "--no-edit", *args], cwd=repo.path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PATH="/usr/bin:/bin"), check=False)


def test_a_conflict_added_as_git_left_it_is_found_staged_in_the_working_tree_and_committed(repo: Repo,
                                                                                            cli: Any) -> None:
    text = conflicted(repo, "Plan.md", PLAN, PLAN.replace("Monday", "Tuesday"), PLAN.replace("Monday", "Friday"))
    assert text.splitlines()[2:7] == ["<<<<<<< HEAD", "We ship on Tuesday.", "=======", "We ship on Friday.",
                                      ">>>>>>> side"]
    for args, where in ((("--staged",), "staged"), ((), "working tree")):
        r = cli("check", *args, cwd=repo.path)
        assert (r.code, listed(r)) == (1, [said("Plan.md", 3, 7)]), (args, r.out, r.err)
        assert f"vivary: 2 document(s), 1 error(s), 0 warning(s) in {where}\n" in r.out + r.err, args
    r = cli("check", "--staged", "--json", cwd=repo.path)
    assert r.json() == {"checked": 2, "clean": 1, "errors": 1, "warnings": 0, "findings": [{
        "path": "Plan.md", "line": 3, "level": "error", "code": "W225",
        "message": f"merge conflict markers left in the note from line 3 to line 7: {FIX}"}]}
    assert commit(repo).returncode == 0  # no hook installed: it goes in
    for _ in range(2):  # cold, then from the caches the first run wrote
        r = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path)
        assert (r.code, listed(r)) == (0, [said("Plan.md", 3, 7, "warning")]), r.err
    # The link inside the note's text still reads: a conflict is a finding, not a reason to stop reading the note.
    assert cli("check", "--rev", "HEAD", "--json", cwd=repo.path).json()["findings"][0]["code"] == "W225"


@pytest.mark.parametrize(("style", "span"), [("merge", (3, 7)), ("diff3", (3, 9)), ("zdiff3", (3, 9))])
def test_each_conflict_style_is_one_finding_spanning_its_markers(repo: Repo, cli: Any, style: str,
                                                                  span: tuple[int, int]) -> None:
    """diff3 and zdiff3 put the base between `|||||||` and `=======`: still one conflict, to its `>>>>>>>`."""
    text = conflicted(repo, "Plan.md", PLAN, PLAN.replace("Monday", "Tuesday"), PLAN.replace("Monday", "Friday"),
                      style)
    assert ("||||||| " in text) == (style != "merge"), text
    assert text.splitlines()[span[1] - 1] == ">>>>>>> side"
    r = cli("check", "--staged", cwd=repo.path)
    assert (r.code, listed(r)) == (1, [said("Plan.md", *span)]), r.err


def test_two_conflicts_in_one_note_are_two_findings(repo: Repo, cli: Any) -> None:
    base = "# Plan\n\nOwner: Ann.\n" + "".join(f"\nStep {i}.\n" for i in range(8)) + "\nShip on Monday.\n"
    ours = base.replace("Ann", "Bea").replace("Monday", "Tuesday")
    theirs = base.replace("Ann", "Cid").replace("Monday", "Friday")
    lines = conflicted(repo, "Plan.md", base, ours, theirs).splitlines()
    opened = [i + 1 for i, line in enumerate(lines) if line.startswith("<<<<<<< ")]
    closed = [i + 1 for i, line in enumerate(lines) if line.startswith(">>>>>>> ")]
    assert len(opened) == len(closed) == 2
    r = cli("check", "--staged", "--json", cwd=repo.path)
    assert [(f["line"], f["message"].split(":")[0]) for f in r.json()["findings"]] == [
        (o, f"merge conflict markers left in the note from line {o} to line {c}")
        for o, c in zip(opened, closed, strict=True)]


def test_the_pre_commit_hook_refuses_a_conflicted_note(repo: Repo, cli: Any) -> None:
    """Strict by default: the merge commit is refused and the merge stays in progress; `--lenient` (or
    `base.strict = false`) reports it as a warning."""
    assert cli("hooks", "install", cwd=repo.path).code == 0
    conflicted(repo, "Plan.md", PLAN, PLAN.replace("Monday", "Tuesday"), PLAN.replace("Monday", "Friday"))
    head = repo.git("rev-parse", "HEAD")
    refused = commit(repo)
    assert refused.returncode == 1, refused.stdout
    assert said("Plan.md", 3, 7) in refused.stdout
    assert repo.git("rev-parse", "HEAD") == head and (repo.path / ".git" / "MERGE_HEAD").is_file()
    r = cli("check", "--staged", "--lenient", cwd=repo.path)
    assert (r.code, listed(r)) == (0, [said("Plan.md", 3, 7, "warning")])
    # Resolved (one side kept, the markers deleted): the commit goes in.
    repo.write({"Plan.md": PLAN.replace("Monday", "Tuesday")})
    repo.git("add", "Plan.md")
    ok = commit(repo)
    assert ok.returncode == 0, ok.stdout


def test_a_workspace_that_is_not_strict_lets_the_hook_commit_it_with_a_warning(repo: Repo, cli: Any) -> None:
    repo.commit("config", {"tropo.toml": "version = 1\n[base]\nstrict = false\n"})
    assert cli("hooks", "install", cwd=repo.path).code == 0
    conflicted(repo, "notes/plan.md", PLAN, PLAN.replace("Monday", "Tuesday"), PLAN.replace("Monday", "Friday"))
    ok = commit(repo)
    assert ok.returncode == 0, ok.stdout
    assert said("notes/plan.md", 3, 7, "warning") in ok.stdout


def test_markers_that_are_not_a_conflict_are_no_finding(repo: Repo, cli: Any) -> None:
    """A Setext heading's `=======`, a quoted `>>>>>>>`, markers in fenced code (a note about Git) and indented."""
    example = "<<<<<<< HEAD\nours\n||||||| base\nbase\n=======\ntheirs\n>>>>>>> feature\n"
    repo.commit("notes", {
        "Setext.md": "Title\n=======\n\nText.\n\n>>>>>>> not a quote of anything\n\nMore\n=======\n",
        "Git.md": f"# Merging\n\nGit writes:\n\n```text\n{example}```\n\nor\n\n~~~~\n{example}~~~~\n\nEnd.\n",
        "Indented.md": "# Indented\n\n" + "".join(f"    {line}\n" for line in example.splitlines()),
        "Half.md": "# Half\n\n<<<<<<< HEAD\nopened, never separated\n>>>>>>> side\n\n=======\n",
        "Eight.md": "# Eight\n\n<<<<<<<< HEAD\nx\n=======\ny\n>>>>>>>> side\n",
    })
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert (r.code, r.json()["findings"]) == (0, []), r.out


def test_a_conflict_after_fenced_code_is_found_and_one_over_a_fence_keeps_the_code_after_it(repo: Repo,
                                                                                            cli: Any) -> None:
    """A fence closed before the conflict does not hide it; a conflict over a fence's opening line (both sides
    changed its language) is found, and the code after it is still code (its example is no second finding)."""
    text = ("# Code\n\n```\n<<<<<<< quoted\n=======\n>>>>>>> quoted\n```\n\n"  # 3-7: an example
            "<<<<<<< HEAD\n```python\n=======\n```ruby\n>>>>>>> side\n"  # 9-13: a real conflict
            "<<<<<<< quoted\n=======\n>>>>>>> quoted\n```\n")  # 14-17: inside the code the conflict opened
    repo.commit("code", {"Code.md": text})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert listed(r) == [said("Code.md", 9, 13)], r.out


def test_crlf_notes_and_unlabelled_markers_are_found(repo: Repo, cli: Any) -> None:
    """Git writes a CRLF file's markers with CRLF; `git merge-file` without labels writes bare markers."""
    repo.commit("notes", {"Crlf.md": "# C\r\n\r\n<<<<<<< HEAD\r\na\r\n=======\r\nb\r\n>>>>>>> side\r\n",
                          "Bare.md": "# B\n<<<<<<<\na\n|||||||\no\n=======\nb\n>>>>>>>\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert listed(r) == [said("Bare.md", 2, 8), said("Crlf.md", 3, 7)], r.out


def test_conflict_markers_in_frontmatter_stay_e001_and_the_bodys_are_w225(repo: Repo, cli: Any) -> None:
    """In the frontmatter YAML cannot be read: E001 names the markers (not YAML's words about the line after).
    Markers before the frontmatter are that E001's, not a second finding for the same conflict."""
    repo.commit("notes", {
        "Both.md": "---\nstatus: a\n<<<<<<< HEAD\nowner: x\n=======\nowner: y\n>>>>>>> side\n---\n# Both\n\n"
                   "<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> side\n",
        "Start.md": "<<<<<<< HEAD\n---\na: 1\n---\n=======\n---\na: 2\n---\n>>>>>>> side\n",
    })
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert listed(r) == [
        "Both.md:3: error E001: merge conflict markers left in the frontmatter (line 3): resolve the conflict (keep "
        "one side, delete the `<<<<<<<`, `=======` and `>>>>>>>` lines)",
        said("Both.md", 11, 15),
        "Start.md:1: error E001: merge conflict markers left in the file (line 1), before its frontmatter: resolve "
        "the conflict (keep one side, delete the `<<<<<<<`, `=======` and `>>>>>>>` lines)",
    ], r.out


def test_vivary_ignore_silences_a_conflict(repo: Repo, cli: Any) -> None:
    conflict = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> side\n"
    repo.commit("notes", {
        "Line.md": f"# Line\n\n<!-- vivary-ignore W225 -->\n{conflict}\n{conflict}",  # the first (line 4) only
        "Note.md": f"---\nvivary-ignore: W225\n---\n# Note\n\n{conflict}",
    })
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert listed(r) == [said("Line.md", 10, 14)], r.out


def test_text_added_above_a_committed_conflict_is_no_new_finding(repo: Repo, cli: Any) -> None:
    """`--new-since` (the hook's) matches a conflict by code, path and message without its line numbers."""
    conflict = "<<<<<<< HEAD\na\n=======\nb\n>>>>>>> side\n"
    repo.commit("conflicted", {"Plan.md": f"# Plan\n\n{conflict}"})
    repo.write({"Plan.md": f"# Plan\n\nA new paragraph.\n\n{conflict}"})
    repo.git("add", "Plan.md")
    r = cli("check", "--staged", "--new-since", "HEAD", cwd=repo.path)
    assert (r.code, listed(r)) == (0, []), r.out + r.err
    assert "1 error(s) and 0 warning(s) it already had are not shown" in r.out + r.err


def test_a_note_lists_at_most_its_first_conflicts(repo: Repo, cli: Any) -> None:
    """An 8 MiB note of three-line conflicts is 350,000 of them: the first `MAX_CONFLICTS` are listed, then one more
    W225 says where they stop being listed."""
    repo.commit("many", {"Many.md": "# Many\n" + "<<<<<<< a\n=======\n>>>>>>> b\n" * (MAX_CONFLICTS + 50)})
    findings = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).json()["findings"]
    assert [f["code"] for f in findings] == ["W225"] * (MAX_CONFLICTS + 1)
    assert findings[-2]["line"] == 2 + 3 * (MAX_CONFLICTS - 1)
    line = 2 + 3 * MAX_CONFLICTS
    assert findings[-1] == {"path": "Many.md", "line": line, "level": "error", "code": "W225", "message": (
        f"more merge conflict markers left in the note from line {line} on are not listed: at most 1,000 conflicts "
        "are listed a note; resolve them, and delete the marker lines")}


def test_a_conflict_read_from_a_fetched_cache_is_still_found(repo: Repo, cli: Any) -> None:
    """The shared cache keeps a note's parse without its body: the conflicts go with it. (Rules changed since the
    cache was recorded, so the note's facts are derived again, from its shared parse.)"""
    repo.commit("conflicted", {"Plan.md": "# Plan\n\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> side\n"})
    repo.git("config", "vivary.cacheTrust", "any")
    cli("check", "--rev", "HEAD", cwd=repo.path)  # records refs/vivary/cache
    assert repo.git("for-each-ref", "refs/vivary/cache")
    repo.commit("rules", {".vivary/graph.toml": '[links]\nanchors = true\n'})
    want = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path)
    shutil.rmtree(repo.path / ".git" / "vivary")
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert (r.code, r.out) == (want.code, want.out) and "W225" in r.out, r.err


def test_sarif_has_the_rule(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit("conflicted", {"Plan.md": "# Plan\n\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> side\n"})
    out = tmp_path / "vivary.sarif"
    cli("ci", "--sarif", str(out), cwd=repo.path)
    run = json.loads(out.read_text())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    [result] = run["results"]
    rule = rules[result["ruleIndex"]]
    assert (result["ruleId"], rule["id"], rule["name"]) == ("W225", "W225", RULES["W225"].name)
    assert rule["help"]["text"].endswith(f"Fix: {FIX[0].upper()}{FIX[1:]}.")
