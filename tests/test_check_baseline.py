"""Debt a vault already has: `check --new-since REV`, `ci --fail-on new|all` (and the Action's `fail-on`),
the pre-commit hook failing only on what a commit introduces, and `vivary-ignore` suppression."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from conftest import Repo

TROPO = """version = 1
[base]
allow_untyped = true
optional = { related = "ref-list" }

[types.module]
folder = "modules"
required = { status = "enum:draft|done" }
optional = { depends = "ref-list" }
"""
# Debt already committed: a broken ref (W220), broken wikilinks (W221), a bad enum (E103).
DEBT = {
    "tropo.toml": TROPO,
    "notes/a.md": "---\nrelated: [nope]\n---\n# A\n\nSee [[missing]].\n",
    "notes/b.md": "# B\n\nAlso [[gone]].\n",
    "modules/m.md": "---\nstatus: wip\n---\n# M\n",
}


def debt(repo: Repo) -> str:
    return repo.commit("debt", files=DEBT)


def check_json(cli: Any, repo: Repo, *args: str) -> tuple[int, Any]:
    r = cli("check", *args, "--json", cwd=repo.path)
    assert r.code in (0, 1), r.err
    return r.code, r.json()


def found(doc: Any) -> list[tuple[str, int, str]]:
    return [(f["path"], f["line"], f["code"]) for f in doc["findings"]]


def test_new_since_reports_only_what_rev_did_not_have(repo: Repo, cli: Any) -> None:
    debt(repo)
    code, doc = check_json(cli, repo, "--new-since", "HEAD")
    assert (code, doc["findings"], doc["existing_errors"], doc["new_since"]) == (0, [], 4, "HEAD")
    # Lines added above every finding move them; a second, new broken link is the only new finding.
    moved = "---\nrelated: [nope]\n---\n# A\n\nNew text.\n\nMore.\n\nSee [[missing]] and [[other]].\n"
    repo.write({"notes/a.md": moved,
                "modules/m.md": "---\nowner: me\nstatus: wip\n---\n# M\n"})
    code, doc = check_json(cli, repo, "--new-since", "HEAD")
    assert found(doc) == [("modules/m.md", 2, "W202"), ("notes/a.md", 10, "W221")]
    assert (code, doc["errors"], doc["warnings"], doc["existing_errors"]) == (1, 2, 0, 4)  # strict: W is error
    # The same run without --new-since reports everything.
    _, everything = check_json(cli, repo)
    assert len(everything["findings"]) == 6
    text = cli("check", "--new-since", "HEAD", cwd=repo.path)
    assert text.code == 1
    assert text.out.splitlines()[:2] == [
        "modules/m.md:2: error W202: unknown field 'owner' for type 'module'",
        "notes/a.md:10: error W221: wikilink [[other]] matches no document id (looked for 'other')",
    ]
    assert "2 new error(s), 0 new warning(s) in working tree since HEAD; 4 error(s) and 0 warning(s) it " \
           "already had are not shown" in text.out


def test_new_warnings_alone_pass_and_a_repeated_target_counts(repo: Repo, cli: Any) -> None:
    debt(repo)
    # A second [[missing]] in the same note: the baseline had one, so one of the two is new.
    repo.write({"notes/a.md": DEBT["notes/a.md"] + "\nAgain [[missing]].\n"})
    code, doc = check_json(cli, repo, "--new-since", "HEAD", "--lenient")
    assert (code, found(doc), doc["warnings"]) == (0, [("notes/a.md", 8, "W221")], 1)  # a warning: exit 0
    code, doc = check_json(cli, repo, "--new-since", "HEAD")  # strict (the default): W221 is an error
    assert (code, doc["errors"]) == (1, 1)


def test_a_renamed_note_keeps_its_findings(repo: Repo, cli: Any) -> None:
    debt(repo)
    repo.git("mv", "notes/b.md", "notes/c.md")
    repo.git("mv", "notes/a.md", "notes/d.md")
    repo.write({"notes/d.md": DEBT["notes/a.md"] + "\nAn edit too.\n"})
    repo.git("add", "-A")
    code, doc = check_json(cli, repo, "--staged", "--new-since", "HEAD")
    assert (code, doc["findings"], doc["existing_errors"]) == (0, [], 4)
    # Without rename detection they would all be new: the paths differ.
    _, everything = check_json(cli, repo, "--staged")
    assert {f["path"] for f in everything["findings"]} == {"notes/c.md", "notes/d.md", "modules/m.md"}


def test_a_renamed_note_in_a_vault_keeps_its_findings(repo: Repo, cli: Any) -> None:
    """A vault's W221 and W223 name the note they were resolved from (`… from notes/a.md)`), which a rename
    changes: the renamed note's broken links were all new, and `ci` failed a change that only moved a note.
    Odd names (a tab, a byte that is not UTF-8) are renamed the same way."""
    a = "# A\n\nA note long enough to be found again: [[gone]], ![[gone.png]].\n"
    # (A tab in a name is one Git for Windows refuses, W227: new with the rename, and not what this is about.)
    base = repo.commit("vault", {"notes/a.md": a, ".vivary/graph.toml": "[portable]\nwindows = false\n",
                                 "b.md": "# B\n\nAnother note with [[nowhere]] in it, renamed to an odd name.\n"})
    (repo.path / "notes" / "moved").mkdir()
    repo.git("mv", "notes/a.md", "notes/moved/z.md")
    (repo.path / "b.md").rename(repo.path / "b\tn\udcff.md".encode("utf-8", "surrogateescape").decode(
        "utf-8", "surrogateescape"))
    repo.git("add", "-A")
    code, doc = check_json(cli, repo, "--staged", "--new-since", "HEAD")
    assert (code, doc["findings"], doc["existing_errors"]) == (0, [], 3), doc
    repo.commit("rename")
    r = cli("ci", "--base", base, "--format", "json", cwd=repo.path)
    assert r.code == 0 and r.json()["new"]["errors"] == 0, r.out
    # A link broken by the change is still new, in the renamed note too.
    repo.commit("break", {"notes/moved/z.md": a + "\n[[fresh]]\n"})
    code, doc = check_json(cli, repo, "--new-since", base)
    new = [f["message"].split(" (")[0] for f in doc["findings"]]
    assert code == 1 and new == ["wikilink [[fresh]] matches no note"], new


def test_a_repository_without_commits_has_everything_new(repo: Repo, cli: Any) -> None:
    repo.write(DEBT)
    repo.git("add", "-A")
    code, doc = check_json(cli, repo, "--staged", "--new-since", "HEAD")
    assert (code, len(doc["findings"]), doc["existing_errors"]) == (1, 4, 0)
    assert doc["note"] == "no commits yet: every finding is new"


def test_a_rev_that_does_not_resolve_is_a_git_error(repo: Repo, cli: Any) -> None:
    debt(repo)
    r = cli("check", "--new-since", "no-such-branch", cwd=repo.path)
    assert r.code == 2 and "--new-since no-such-branch: no such revision" in r.err
    r = cli("check", "--new-since", "HEAD:tropo.toml", cwd=repo.path)  # a file's blob is no tree to compare with
    assert r.code == 2 and "--new-since HEAD:tropo.toml: names a file's content (blob " in r.err, r.err
    assert "git_object" not in r.err
    code, doc = check_json(cli, repo, "--new-since", "HEAD^{tree}")  # a tree, not a commit, will do
    assert (code, doc["findings"], doc["existing_errors"]) == (0, [], 4)


def test_a_workspace_folder_the_rev_lacks_makes_everything_new(repo: Repo, cli: Any) -> None:
    repo.commit("start", files={"README.md": "hello\n"})
    repo.write({f"vault/{k}": v for k, v in DEBT.items()})
    code, doc = check_json(cli, repo, "--root", "vault", "--new-since", "HEAD")
    assert (code, len(doc["findings"])) == (1, 4)
    assert doc["note"] == "HEAD has no folder vault: every finding is new"


# --------------------------------------------------------------------------- the pre-commit hook


def commit(repo: Repo, *args: str) -> subprocess.CompletedProcess[str]:
    """A real `git commit` through the installed hook (its stdout goes to stderr: both are kept)."""
    return subprocess.run(["git", "commit", "-q", "-m", "change", *args], cwd=repo.path, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, env=dict(os.environ, PATH="/usr/bin:/bin"),
                          check=False)


def test_pre_commit_fails_only_on_findings_the_commit_introduces(repo: Repo, cli: Any) -> None:
    repo.write(DEBT)
    repo.git("add", "-A")
    assert cli("hooks", "install", cwd=repo.path).code == 0
    first = commit(repo)  # no commits yet: every finding is new
    assert first.returncode == 1 and "notes/b.md:3: error W221" in first.stdout, first.stdout
    assert commit(repo, "--no-verify").returncode == 0  # the debt is in
    repo.write({"notes/b.md": "# B\n\nA line above.\n\nAlso [[gone]].\n", "notes/e.md": "# E\n"})
    repo.git("add", "-A")
    ok = commit(repo)
    assert ok.returncode == 0, ok.stdout
    assert "W221" not in ok.stdout and "0 new error(s)" in ok.stdout
    # The staged tree's findings were kept: the next commit's baseline (this HEAD) is read, not re-derived.
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    cached = repo.path / ".git" / "vivary"
    assert list(cached.glob(f"findings-v*/{tree}-*.msgpack")) + list(cached.glob(f"checks-v*/{tree}-*.msgpack"))
    repo.write({"notes/b.md": "# B\n\nA line above.\n\nAlso [[gone]], edited.\n"})  # an edit: no graph is built
    repo.git("add", "-A")
    assert commit(repo).returncode == 0
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert list(cached.glob(f"findings-v*/{tree}-*.msgpack"))
    repo.write({"notes/e.md": "# E\n\n[[nowhere]]\n"})
    repo.git("add", "-A")
    refused = commit(repo)
    assert refused.returncode == 1
    assert [line for line in refused.stdout.splitlines() if ": error " in line] == [
        "notes/e.md:3: error W221: wikilink [[nowhere]] matches no document id (looked for 'nowhere')"]
    assert "commit refused" in refused.stdout


def test_the_commit_that_fixes_a_broken_config_is_not_refused_for_it(repo: Repo, cli: Any) -> None:
    """HEAD's tropo.toml does not load; the staged one does. The hook compared with HEAD and exited 2 on HEAD's
    config, so the fix itself needed `--no-verify`. Nothing is known of a base whose config cannot be read: every
    finding counts as new, as `ci` reads such a base, and the reason is said."""
    repo.commit("init", {"tropo.toml": TROPO, "notes/a.md": "# A\n"})
    assert cli("hooks", "install", cwd=repo.path).code == 0
    repo.write({"tropo.toml": "version = 1\n[types.module\n"})
    repo.git("add", "-A")
    assert commit(repo, "--no-verify").returncode == 0
    repo.write({"tropo.toml": TROPO})
    repo.git("add", "-A")
    fixed = commit(repo)
    assert fixed.returncode == 0, fixed.stdout
    assert "HEAD's configuration cannot be read" in fixed.stdout and "every finding is new" in fixed.stdout
    repo.write({"tropo.toml": "version = 1\n[types.module\n", "notes/b.md": "# B\n\n[[nowhere]]\n"})
    repo.git("add", "-A")
    r = cli("check", "--staged", "--new-since", "HEAD", cwd=repo.path)
    assert r.code == 2 and "invalid TOML" in r.err  # the staged tree's own config is still the commit's to fix


# --------------------------------------------------------------------------- ci and the Action


def test_ci_fails_on_new_errors_by_default(repo: Repo, cli: Any) -> None:
    base = debt(repo)
    repo.commit("unrelated", files={"notes/b.md": "# B\n\nA line above.\n\nAlso [[gone]].\n"})
    r = cli("ci", "--base", base, cwd=repo.path)
    assert r.code == 0, r.out  # four errors, none of them new
    assert f"already in {base} (not counted against this change):" in r.out
    assert f"4 error(s), 0 warning(s) in HEAD (0 error(s) and 0 warning(s) new since {base})" in r.out
    assert cli("ci", "--base", base, "--fail-on", "all", cwd=repo.path).code == 1
    assert cli("ci", cwd=repo.path).code == 1  # no base: every error is new
    repo.commit("new debt", files={"notes/e.md": "# E\n\n[[nowhere]]\n"})
    r = cli("ci", "--base", base, "--format", "json", cwd=repo.path)
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["new"] == {"errors": 1, "warnings": 0, "existing_errors": 4, "existing_warnings": 0}
    whys = {(a["path"], a["why"]) for a in doc["annotations"] if a["level"] == "error"}
    assert ("notes/e.md", "changed file") in whys and ("notes/b.md", "already in the base") in whys
    gh = cli("ci", "--base", base, "--format", "github", cwd=repo.path).out.splitlines()
    assert gh[0].startswith("::error file=notes/e.md,line=3,")  # the new finding first


def test_ci_reads_a_base_that_moved_on_from_the_branch_point(repo: Repo, cli: Any) -> None:
    """pull_request_target checks the head itself, and `ci --base main` runs on a branch main has gone past: the
    base's tip is then no ancestor of the head. Compared with that tip, main's own fix of an old finding counted
    as the change's new error, and main's edit as a note the change touched. The change is branch point..head."""
    repo.commit("init", files={"tropo.toml": TROPO, "notes/glossary.md": "# Glossary\n\nOld debt [[zzz]].\n"})
    main = repo.git("rev-parse", "--abbrev-ref", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("pr", files={"notes/clean.md": "# Clean\n\nSee [[glossary]].\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", main)
    repo.commit("main fixes the debt", files={"notes/glossary.md": "# Glossary\n\nFixed.\n"})
    base = repo.git("rev-parse", "HEAD").strip()
    point = repo.git("merge-base", base, head).strip()
    r = cli("ci", "--base", base, "--head", head, "--format", "json", cwd=repo.path)
    assert r.code == 0, r.out + r.err  # the old finding is the base's (at the branch point), not the change's
    doc = json.loads(r.out)
    assert doc["new"]["errors"] == 0 and doc["new"]["existing_errors"] == 1
    assert [c["id"] for c in doc["change"]["changed"]] == ["clean"]  # not glossary: main changed that
    assert f"compared with their merge base {point[:12]}" in doc["note"]
    r = cli("ci", "--base", point, "--head", head, "--format", "json", cwd=repo.path)  # an ancestor: as before
    assert json.loads(r.out)["note"] == ""


def test_ci_follows_renamed_notes(repo: Repo, cli: Any) -> None:
    base = debt(repo)
    repo.git("mv", "notes/b.md", "notes/c.md")
    repo.commit("rename")
    doc = json.loads(cli("ci", "--base", base, "--format", "json", cwd=repo.path).out)
    assert doc["new"] == {"errors": 0, "warnings": 0, "existing_errors": 4, "existing_warnings": 0}
    assert {a["why"] for a in doc["annotations"] if a["path"] == "notes/c.md"} == {"already in the base"}


def test_action_fail_on_input(repo: Repo, tmp_path: Path) -> None:
    from test_gates_action import pr_event, run_action, tool_inputs

    base = debt(repo)
    head = repo.commit("unrelated", files={"notes/b.md": "# B\n\nA line above.\n\nAlso [[gone]].\n"})
    r = run_action(repo.path, tmp_path, tool_inputs(), pr_event(base, head))
    assert r.code == 0, r.log
    assert r.outputs["errors"] == "4"
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "fail-on": "all"}, pr_event(base, head))
    assert r.code == 1, r.log
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "fail-on": "some"}, pr_event(base, head))
    assert r.code == 2 and "invalid choice: 'some'" in r.log


# --------------------------------------------------------------------------- suppression


def test_vivary_ignore_comments_and_key(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "tropo.toml": TROPO,
        # The comment on the link's line, and a comment alone on the line above a link.
        "notes/a.md": "# A\n\nSee [[missing]] <!-- vivary-ignore W221 -->\n\n<!-- vivary-ignore w221, W220 -->\n"
                      "- [[gone]]\n- [[still-reported]]\n",
        # Another code does not silence W221; a comment in fenced code is an example, not a directive.
        "notes/b.md": "# B\n\n[[x]] <!-- vivary-ignore W220 -->\n\n```\n<!-- vivary-ignore W221 -->\n```\n[[y]]\n",
        # The key silences its codes in the whole note and is no unknown field (W202) itself.
        "modules/m.md": "---\nstatus: wip\nowner: me\nvivary-ignore: [E103, W202]\n---\n# M\n\n[[z]]\n",
        "modules/n.md": "---\nstatus: done\nvivary-ignore: W221\n---\n# N\n\n[[z]]\n",
        # A note that cannot be read is reported whatever it says.
        "notes/bad.md": "---\nkey: [1\n---\n<!-- vivary-ignore E001 -->\n",
    })
    _, doc = check_json(cli, repo, "--rev", "HEAD")
    assert found(doc) == [
        ("modules/m.md", 8, "W221"),
        ("notes/a.md", 7, "W221"),
        ("notes/b.md", 3, "W221"),
        ("notes/b.md", 8, "W221"),
        ("notes/bad.md", 2, "E001"),
    ]
    # The per-tree caches hold the same answer: a warm run, the working tree, a staged edit.
    assert found(check_json(cli, repo, "--rev", "HEAD")[1]) == found(doc)
    repo.write({"notes/b.md": "# B\n\n[[x]] <!-- vivary-ignore W221 -->\n"})
    repo.git("add", "-A")
    staged = found(check_json(cli, repo, "--staged")[1])
    assert ("notes/b.md", 3, "W221") not in staged and ("notes/a.md", 7, "W221") in staged


def test_a_column_is_no_part_of_what_makes_a_finding_the_same() -> None:
    """An E001 names the column of a control character: text added before it on its line does not make it new."""
    from vivary_git.check import baseline_key
    from vivary_git.models import Finding

    said = "frontmatter is not valid YAML: control character U+000C (form feed) in column {} is not allowed in YAML"
    assert baseline_key(Finding("a.md", 2, "error", "E001", said.format(16))) == \
        baseline_key(Finding("a.md", 5, "error", "E001", said.format(3)))


HOOK = ("check", "--staged", "--gate", "--new-since", "HEAD", "--pre-commit-range")  # .pre-commit-hooks.yaml's


def test_the_hook_judges_the_range_pre_commit_names(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    """`pre-commit run --from-ref A --to-ref B` and the pre-push stage: B's tree against A, whatever the index
    holds (in CI it equals HEAD, and `new since HEAD` found nothing). Without the variables: the staged tree."""
    base = debt(repo)
    repo.commit("break", files={"modules/n.md": "---\nstatus: done\ndepends: [nowhere]\n---\n# N\n"})
    r = cli(*HOOK, cwd=repo.path)
    assert r.code == 0, r.out  # a commit with nothing staged adds nothing
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", base)
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "HEAD")
    r = cli(*HOOK, cwd=repo.path)
    assert r.code == 1, r.out
    assert "modules/n.md:3: error W220: field 'depends': ref 'nowhere' matches no document id" in r.out
    assert f"1 new error(s), 0 new warning(s) in HEAD since {base}; 4 error(s)" in r.out
    monkeypatch.setenv("PRE_COMMIT_TO_REF", base)  # the range's end is the tree judged, not the checkout
    assert cli(*HOOK, cwd=repo.path).code == 0


def test_a_range_pre_commit_could_not_have_named_is_a_usage_error(repo: Repo, cli: Any, monkeypatch: Any) -> None:
    debt(repo)
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "HEAD")
    r = cli(*HOOK, cwd=repo.path)
    assert r.code == 2 and "PRE_COMMIT_TO_REF is set but PRE_COMMIT_FROM_REF is not" in r.err, r.err
    for bad, said in (("--output=x", "--output=x"), ("HEAD\n::error::x", "HEAD\\n::error::x"), (" HEAD", " HEAD")):
        monkeypatch.setenv("PRE_COMMIT_FROM_REF", bad)
        r = cli(*HOOK, cwd=repo.path)
        assert r.code == 2 and f"PRE_COMMIT_FROM_REF={said}: not a revision" in r.err, r.err
        assert "Traceback" not in r.err
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "no-such-branch")
    r = cli(*HOOK, cwd=repo.path)
    assert r.code == 2 and "PRE_COMMIT_FROM_REF no-such-branch: no such revision" in r.err, r.err
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", "HEAD")
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "no-such-branch")
    r = cli(*HOOK, cwd=repo.path)
    assert r.code == 2 and "PRE_COMMIT_TO_REF no-such-branch: no such revision" in r.err, r.err
