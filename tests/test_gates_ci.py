"""`git vivary ci`: the review engine (check the head, blast radius of base..head) and its formats."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from conftest import Repo, git, run_git_vivary

from vivary_git.gates.github import command, escape_data, escape_property, write_outputs
from vivary_git.gates.review import Annotation, select

TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list", uses = "ref" }
"""


def two_commits(repo: Repo) -> None:
    """base: a <- b <- c (c also uses a), free links [[b]]; head: b deleted, a now depends on x."""
    repo.commit("base", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# B\n",
        "modules/c.md": "---\ndepends: [b]\nuses: a\n---\n# C\n",
        "notes/free.md": "# Free\n\nSee [[b]].\n",
    })
    repo.git("rm", "-q", "modules/b.md")
    repo.commit("head", files={"modules/a.md": "---\ndepends: [x]\n---\n# A2\n"})


def test_text_report_and_exit_code(repo: Repo, cli: Any) -> None:
    two_commits(repo)
    r = cli("ci", "--base", "HEAD~1", cwd=repo.path)
    assert r.code == 1, r.err
    assert r.out.splitlines()[:3] == [
        "modules/a.md:2: error W220: field 'depends': ref 'x' matches no document id",
        "modules/c.md:2: error W220: field 'depends': ref 'b' matches no document id",
        "notes/free.md:3: error W221: wikilink [[b]] matches no document id (looked for 'b')",
    ]
    assert "removed\tb\tmodule\tmodules/b.md" in r.out
    assert "broke\tc -[depends]-> b" in r.out
    assert r.out.rstrip().endswith("HEAD~1..HEAD: 2 changed, 3 broken edge(s), 0 fixed, 2 impacted")
    assert cli("ci", "--base", "HEAD~2", cwd=repo.path).code == 2  # no such revision: usage error
    assert cli("ci", "--head", "HEAD~1", cwd=repo.path).code == 0  # the base tree alone is clean


def test_github_format_ranks_changed_files_first(repo: Repo, cli: Any) -> None:
    two_commits(repo)
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=repo.path)
    lines = r.out.splitlines()
    assert lines[0] == ("::error file=modules/a.md,line=2,title=vivary W220::"
                        "field 'depends': ref 'x' matches no document id")  # the changed file comes first
    assert lines[1].startswith("::error file=modules/c.md,line=2,")  # then what the change broke
    assert lines[3] == ("::notice file=modules/a.md,line=1,title=vivary%3A referenced note changed::"
                        "1 note(s) reference 'a' (modified): c. `git vivary blast a` lists everything that reaches it.")
    assert r.code == 1


def test_caps_keep_the_most_important_annotations(repo: Repo, cli: Any) -> None:
    files = {"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n"}
    files |= {f"modules/old{i:02}.md": "---\ndepends: [nowhere]\n---\n" for i in range(12)}
    repo.commit("base", files=files)
    repo.commit("head", files={f"modules/new{i:02}.md": "---\ndepends: [ghost]\n---\n" for i in range(3)})
    r = cli("ci", "--base", "HEAD~1", "--format", "github", "--lenient", cwd=repo.path)
    annotations = [line for line in r.out.splitlines() if line.startswith("::")]
    assert len(annotations) == 13  # the 3 new warnings, and 10 of the 12 old ones as notices
    assert [a.split(",")[0] for a in annotations[:3]] == [f"::warning file=modules/new{i:02}.md" for i in range(3)]
    assert all(a.startswith("::notice ") and "(already in the base)::" in a for a in annotations[3:])
    assert "vivary: 2 more finding(s) and notice(s) not annotated" in r.out
    assert r.code == 0  # --lenient: warnings do not fail
    few = cli("ci", "--base", "HEAD~1", "--format", "github", "--lenient", "--max-annotations", "2", cwd=repo.path)
    assert sum(line.startswith("::warning") for line in few.out.splitlines()) == 2
    # The log line names the cap that left them out, and a job summary only when one is written.
    assert "vivary: 11 more finding(s) and notice(s) not annotated (at most 2 of each type: --max-annotations 2)\n" \
        in few.out
    assert ("vivary: 2 more finding(s) and notice(s) not annotated (at most 10 of each type: GitHub shows 10 of "
            "each type per step)\n") in r.out
    summary = repo.path.parent / "summary.md"
    many = cli("ci", "--base", "HEAD~1", "--format", "github", "--lenient", "--max-annotations", "11", "--summary",
               str(summary), cwd=repo.path)
    assert sum(line.startswith("::notice") for line in many.out.splitlines()) == 10
    assert ("vivary: 2 more finding(s) and notice(s) not annotated (at most 10 of each type: GitHub shows 10 of "
            "each type per step, so --max-annotations 11 annotates 10); the job summary lists them all\n") in many.out


def test_findings_the_base_had_are_marked_not_errors(repo: Repo, cli: Any) -> None:
    """An error the base already had was an `::error` like any other on a green run: reviewers could not tell
    old debt from what the change did. It is a notice saying so (an error still, when --fail-on all counts it),
    after the change's own notices."""
    repo.commit("base", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n",
                               "modules/c.md": "---\nuses: a\n---\n# C\n", "old.md": "[[ghost]]\n"})
    repo.commit("pr", files={"modules/a.md": "---\n---\n# A, edited\n", "new.md": "fine\n"})
    old = ("file=old.md,line=1,title=vivary W221 (already in the base)::"
           "wikilink [[ghost]] matches no document id (looked for 'ghost')")
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=repo.path)
    assert r.code == 0, r.err
    lines = [line for line in r.out.splitlines() if line.startswith("::")]
    assert lines == ["::notice file=modules/a.md,line=1,title=vivary%3A referenced note changed::1 note(s) reference "
                     "'a' (modified): c. `git vivary blast a` lists everything that reaches it.", f"::notice {old}"]
    r = cli("ci", "--base", "HEAD~1", "--format", "github", "--fail-on", "all", cwd=repo.path)
    assert r.code == 1 and f"::error {old}" in r.out.splitlines()
    r = cli("ci", "--format", "github", cwd=repo.path)  # without a base every finding is new
    assert r.code == 1 and r.out.startswith("::error file=old.md,line=1,title=vivary W221::")


def test_select_caps_each_type_separately() -> None:
    def a(level: str, n: int) -> Annotation:
        return Annotation(level, f"f{n}.md", 1, "t", "m", "changed file")

    got, left = select([a("error", i) for i in range(12)] + [a("warning", i) for i in range(3)], 10)
    assert [x.level for x in got].count("error") == 10 and [x.level for x in got].count("warning") == 3
    assert left == 2


def test_escaping_follows_github_toolkit() -> None:
    assert escape_data("100%\r\nnext") == "100%25%0D%0Anext"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    # A hostile message cannot start a workflow command of its own.
    line = command("error", "x\n::add-mask::secret", {"file": "a,b:c.md", "line": 3, "title": None})
    assert line == "::error file=a%2Cb%3Ac.md,line=3::x%0A::add-mask::secret"
    assert "\n" not in line


def test_hostile_note_text_stays_inside_its_annotation(repo: Repo, cli: Any) -> None:
    repo.commit("base", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n"})
    repo.commit("head", files={"modules/b.md": "---\ndepends: ['x%0A::warning::pwned']\n---\n"})
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=repo.path)
    assert "ref 'x%250A::warning::pwned'" in r.out
    assert all(line.startswith(("::error", "::notice", "vivary:")) for line in r.out.splitlines())


def test_summary_outputs_sarif_and_json(repo: Repo, cli: Any, tmp_path: Path) -> None:
    two_commits(repo)
    summary, out, sarif = tmp_path / "summary.md", tmp_path / "out", tmp_path / "r.sarif"
    summary.write_text("earlier step\n")
    r = cli("ci", "--base", "HEAD~1", "--format", "json", "--summary", str(summary), "--github-output", str(out),
            "--sarif", str(sarif), cwd=repo.path)
    data = r.json()
    assert data["check"]["errors"] == 3 and data["change"]["counts"]["impacted"] == 2
    assert [a["why"] for a in data["annotations"][:3]] == ["changed file", "broken by this change",
                                                           "broken by this change"]
    md = summary.read_text()
    assert md.startswith("earlier step\n## ❌ vivary: 3 error(s), 0 warning(s) in HEAD")  # appended
    assert "| error | modules/c.md:2 | W220 | field 'depends': ref 'b' matches no document id | broken by this" in md
    assert "wikilink \\[\\[b\\]\\]" in md  # Markdown escaped
    assert "```mermaid\nflowchart LR\n" in md and "-.->|depends|" in md
    assert "class n0,m1 changed;" in md and '  m1["b (missing)"]' in md  # a (edited) and b (deleted)
    assert out.read_text() == "errors=3\nwarnings=0\nimpacted=2\nchanged=2\nbroken-edges=3\n"
    s = json.loads(sarif.read_text())
    assert s["version"] == "2.1.0" and s["$schema"].endswith("sarif-2.1.0.json")
    res = s["runs"][0]["results"]
    assert res[0]["ruleId"] == "W220" and res[0]["level"] == "error"
    assert res[0]["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "modules/a.md", "uriBaseId": "%SRCROOT%"}, "region": {"startLine": 2}}
    rules = s["runs"][0]["tool"]["driver"]["rules"]
    assert [rules[x["ruleIndex"]]["id"] for x in res] == [x["ruleId"] for x in res]
    same = cli("ci", "--base", "HEAD~1", "--format", "sarif", cwd=repo.path)
    assert json.loads(same.out) == s


def test_multiline_output_uses_a_delimiter(tmp_path: Path) -> None:
    out = tmp_path / "o"
    write_outputs(out, {"one": 1, "many": "a\nb"})
    lines = out.read_text().splitlines()
    assert lines[0] == "one=1" and lines[1].startswith("many<<ghadelimiter_")
    assert lines[2:4] == ["a", "b"] and lines[4] == lines[1].split("<<")[1]


def test_workspace_in_a_subfolder_annotates_repository_paths(repo: Repo, cli: Any) -> None:
    repo.commit("base", files={"docs/tropo.toml": TROPO, "docs/modules/a.md": "---\n---\n# A\n"})
    repo.commit("head", files={"docs/modules/b.md": "---\ndepends: [zz]\n---\n"})
    r = cli("ci", "--base", "HEAD~1", "--root", "docs", "--format", "github", cwd=repo.path)
    assert r.out.startswith("::error file=docs/modules/b.md,line=2,")


def test_shallow_clone_names_the_fetch(repo: Repo, tmp_path: Path) -> None:
    two_commits(repo)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{repo.path}", str(clone))
    base = repo.git("rev-parse", "HEAD~1").strip()
    r = run_git_vivary(["ci", "--base", base], cwd=clone)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"`git fetch --no-tags --depth=1 origin {base}`" in r.stderr and "fetch-depth: 0" in r.stderr
    git(clone, "fetch", "-q", "--no-tags", "--depth=1", "origin", base)
    assert run_git_vivary(["ci", "--base", base], cwd=clone).returncode == 1


def test_shallow_clone_names_a_fetch_that_works_for_a_remote_tracking_name(repo: Repo, tmp_path: Path) -> None:
    """`--base origin/main` in a single-branch shallow clone: the fetch the message named (`git fetch … origin
    origin/main`) failed, the remote has no such ref. It names the branch, into the remote-tracking ref, quoted."""
    two_commits(repo)
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("feature", files={"notes/more.md": "# More\n"})
    for remote in ("origin", "up$tream"):
        clone = tmp_path / f"shallow-{len(remote)}"
        git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{repo.path}", str(clone))
        if remote != "origin":
            git(clone, "remote", "rename", "origin", remote)
        r = run_git_vivary(["ci", "--base", f"{remote}/main"], cwd=clone)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        fetch = re.search(r"`(git fetch [^`]*)`", r.stderr)
        assert fetch is not None and fetch.group(1) == f"git fetch --no-tags --depth=1 {shlex.quote(remote)} " \
            f"{shlex.quote(f'main:refs/remotes/{remote}/main')}", r.stderr
        git(clone, *shlex.split(fetch.group(1))[1:])  # the command the message names works
        r = run_git_vivary(["ci", "--base", f"{remote}/main"], cwd=clone)
        assert r.returncode == 0, r.stdout + r.stderr  # every error is main's own
        assert f"already in {remote}/main (not counted against this change):" in r.stdout


def test_shallow_clone_names_a_fetch_that_works_for_a_branch_name(repo: Repo, tmp_path: Path) -> None:
    """`--base main` in a single-branch shallow clone with no local `main`: the fetch the message named (`git fetch
    … origin main`) landed in FETCH_HEAD, `main` stayed unknown and the same message came back. It names a fetch
    into `origin/main` and the `--base` to pass after it."""
    two_commits(repo)
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("feature", files={"notes/more.md": "# More\n"})
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{repo.path}", str(clone))
    for base in ("main", "refs/heads/main"):
        r = run_git_vivary(["ci", "--base", base], cwd=clone)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        fetch = re.search(r"`(git fetch [^`]*)` \(then pass `--base ([^`]*)`\)", r.stderr)
        assert fetch is not None and fetch.group(1) == "git fetch --no-tags --depth=1 origin " \
            "main:refs/remotes/origin/main" and fetch.group(2) == "origin/main", r.stderr
    git(clone, *shlex.split(fetch.group(1))[1:])  # the command the message names works
    assert run_git_vivary(["ci", "--base", "main"], cwd=clone).returncode == 2  # still no local `main`
    r = run_git_vivary(["ci", "--base", fetch.group(2)], cwd=clone)
    assert r.returncode == 0, r.stdout + r.stderr


def diverged(repo: Repo, main_moves: int = 1) -> tuple[str, str]:
    """main has a typo (`a` depends on `corr`); the branch `feature` adds `b`; then main fixes the typo and moves
    on `main_moves` commits in all. The main tip is no ancestor of the feature tip: (main tip, feature tip)."""
    repo.commit("base with typo", files={"tropo.toml": TROPO, "modules/core.md": "---\n---\n# Core\n",
                                         "modules/a.md": "---\ndepends: [corr]\n---\n# A\n"})
    repo.git("checkout", "-q", "-b", "feature")
    head = repo.commit("pr adds b", files={"modules/b.md": "---\n---\nunrelated\n"})
    repo.git("checkout", "-q", "main")
    repo.commit("fix the typo", files={"modules/a.md": "---\ndepends: [core]\n---\n# A\n"})
    for i in range(main_moves - 1):
        repo.commit(f"main moves on {i}", files={f"notes/n{i}.md": f"# N{i}\n"})
    return repo.git("rev-parse", "HEAD").strip(), head


def test_shallow_clone_without_the_merge_base_refuses(repo: Repo, tmp_path: Path) -> None:
    """Compared with main's tip, main's fix counted as the pull request's edit and its typo as the pull request's
    new error (exit 1, for someone else's mistake). A depth-1 clone cannot find where the change starts: refuse,
    say what to fetch, and once it is fetched compare with the merge base."""
    base, head = diverged(repo)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{repo.path}", str(clone))
    git(clone, "fetch", "-q", "--no-tags", "--depth=1", "origin", base)  # what the docs said to run
    r = run_git_vivary(["ci", "--base", base], cwd=clone)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stdout + r.stderr
    assert r.stdout == ""  # no verdict computed against the wrong tree
    assert f"--base {base}: the history of HEAD in this shallow clone reaches neither {base} nor their merge " \
        "base" in r.stderr
    assert "fetch-depth: 0" in r.stderr and "GIT_DEPTH: 0" in r.stderr
    fetch = re.search(r"`(git fetch [^`]*)`", r.stderr)
    assert fetch is not None and fetch.group(1) == f"git fetch --no-tags --deepen=100 origin {base} {head}"
    git(clone, *shlex.split(fetch.group(1))[1:])  # the command the message names works
    r = run_git_vivary(["ci", "--base", base], cwd=clone)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "added\tb\tmodule\tmodules/b.md" in r.stdout and "modified\ta" not in r.stdout
    assert f"vivary: {base} is not an ancestor of HEAD: compared with their merge base" in r.stdout


def test_histories_with_no_common_commit_say_so(repo: Repo, cli: Any) -> None:
    one = repo.commit("one", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n"})
    repo.git("checkout", "-q", "--orphan", "other")
    repo.commit("unrelated", files={"modules/b.md": "---\n---\n# B\n"})
    r = cli("ci", "--base", one, "--format", "json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["note"] == f"{one} and HEAD share no commit: compared with {one} as it is, not with a branch point"


def test_bad_base_config_still_checks_head(repo: Repo, cli: Any) -> None:
    repo.commit("base", files={"tropo.toml": "version = [", "modules/a.md": "# A\n"})
    repo.commit("head", files={"tropo.toml": TROPO})
    r = cli("ci", "--base", "HEAD~1", cwd=repo.path)
    assert r.code == 0, r.err
    assert "blast radius not computed: the base tree HEAD~1 cannot be read" in r.out


def test_a_config_error_at_the_head_is_annotated_on_its_file(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """A pull request that broke tropo.toml got exit 2 and a line on stderr only: nothing on the pull request's
    file. With --format github it is an ::error on that file and line (repository-relative), escaped."""
    repo.commit("base", files={"tropo.toml": TROPO, "docs/tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n",
                               "docs/a.md": "# A\n"})
    repo.commit("broken", files={"tropo.toml": "version = 1\nbase = [\n"})
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=repo.path)
    assert r.code == 2
    assert r.out == ("::error file=tropo.toml,line=2,title=vivary%3A config error::git vivary ci: tropo.toml: "
                     "invalid TOML: Invalid value (at end of document)\n")
    assert r.err == "git vivary ci: tropo.toml: invalid TOML: Invalid value (at end of document)\n"
    assert cli("ci", "--base", "HEAD~1", cwd=repo.path).out == ""  # other formats: stderr only, as before
    repo.commit("hostile", files={"docs/tropo.toml": 'version = 1\n[types.x]\nfolder = "x"\n'
                                  'required = { a = "x%0A::warning::pwned" }\n'})
    out = tmp_path / "annotations.txt"
    r = cli("ci", "--base", "HEAD~1", "--root", "docs", "--format", "github", "--output", str(out), cwd=repo.path)
    assert r.code == 2 and r.out == ""
    line = out.read_text()
    assert line.startswith("::error file=docs/tropo.toml,line=4,title=vivary%3A config error::git vivary ci: "
                           "tropo.toml:4: [types.x] required.a: unknown field spec 'x%250A::warning::pwned'")
    assert line.count("\n") == 1



def test_a_config_file_over_the_size_limit_is_annotated_on_its_file(repo: Repo, cli: Any) -> None:
    """A tropo.toml over the size limit stopped the review with an ::error on the run only: the size refusal named
    no file, where a symbolic link in its place did. It is on the file now, repository-relative."""
    from vivary_git.source import MAX_CONFIG_BYTES

    repo.commit("base", files={"docs/tropo.toml": TROPO, "docs/a.md": "# A\n"})
    repo.commit("huge", files={"docs/tropo.toml": TROPO + "#" * MAX_CONFIG_BYTES + "\n"})
    r = cli("ci", "--base", "HEAD~1", "--root", "docs", "--format", "github", cwd=repo.path)
    assert r.code == 2
    assert r.out.startswith("::error file=docs/tropo.toml,title=vivary%3A config error::git vivary ci: "
                            "docs/tropo.toml: is "), r.out
    assert r.out.endswith(" bytes, over the 16 MiB limit for a config file; shorten it\n"), r.out

def test_usage_errors_exit_2(repo: Repo, cli: Any, tmp_path: Path) -> None:
    two_commits(repo)
    assert cli("ci", "--format", "xml", cwd=repo.path).code == 2
    r = cli("ci", "--summary", str(tmp_path / "no" / "such" / "file.md"), cwd=repo.path)
    assert r.code == 2 and "does not exist" in r.err


def deleted_hub(repo: Repo) -> None:
    """199 notes at base. The change deletes `billing` (8 notes reference it) and edits `core`, which
    40 notes reference directly, 120 through those, and 25 more a hop further."""
    files = {"tropo.toml": TROPO, "modules/billing.md": "---\n---\n# Billing\n",
             "modules/core.md": "---\n---\n# Core\n"}
    files |= {f"modules/r{i}.md": "---\ndepends: [billing]\n---\n" for i in range(8)}
    files |= {f"modules/c1-{i:02}.md": "---\ndepends: [core]\n---\n" for i in range(40)}
    files |= {f"modules/c2-{i:03}.md": f"---\ndepends: [c1-{i % 40:02}]\n---\n" for i in range(120)}
    files |= {f"modules/c3-{i:02}.md": f"---\ndepends: [c2-{i:03}]\n---\n" for i in range(25)}
    files |= {f"modules/other{i}.md": "---\n---\n" for i in range(4)}
    assert len(files) == 200  # tropo.toml and 199 notes
    repo.commit("base", files=files)
    repo.git("rm", "-q", "modules/billing.md")
    repo.commit("head", files={"modules/core.md": "---\n---\n# Core v2\n"})


def test_summary_leads_with_what_broke_and_draws_its_sources(repo: Repo, cli: Any, tmp_path: Path) -> None:
    deleted_hub(repo)
    summary, out = tmp_path / "summary.md", tmp_path / "out"
    r = cli("ci", "--base", "HEAD~1", "--summary", str(summary), "--github-output", str(out), cwd=repo.path)
    assert r.code == 1
    md = summary.read_text()
    broke = md.index("### What broke")
    assert broke < md.index("### Findings") < md.index("### Changed notes") < md.index("impacted note(s)")
    section = md[broke:md.index("### Findings")]
    assert "**billing** (modules/billing.md) was **removed**; 8 note(s) still reference it:" in section
    assert all(f"| r{i} | modules/r{i}.md | depends |" in section for i in range(8))
    # Impact stops at 2 hops by default; the full list is folded; what lies further is counted.
    assert "<details><summary>168 impacted note(s) within 2 hops (25 more further away: " \
           "`git vivary blast --base HEAD\\~1 --head HEAD --depth all`)</summary>" in md
    assert "| c3-" not in md and "impacted=168\n" in out.read_text()
    assert "0 fixed, 168 impacted (+25 further than 2 hops)" in r.out
    # The picture shows every note whose reference broke, and the deleted note highlighted.
    picture = md[md.index("```mermaid"):]
    keys = {line.split('["')[1].split("<br/>")[0].split(" (missing)")[0]: line.split('["')[0].strip()
            for line in picture.splitlines() if '["' in line}
    assert all(f"r{i}" in keys for i in range(8)) and "core" in keys and "billing" in keys
    marked = next(line for line in picture.splitlines() if line.startswith("  class "))
    assert keys["billing"] in marked.split()[1].split(",") and keys["core"] in marked.split()[1].split(",")
    assert not any(k.startswith("c2-") for k in keys)  # further notes are in the list, not the picture
    everything = cli("ci", "--base", "HEAD~1", "--depth", "all", "--format", "json", cwd=repo.path).json()
    assert everything["change"]["counts"]["impacted"] == 193 and everything["change"]["depth"] is None


def test_summary_names_a_renamed_note_and_a_missing_target(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit("base", files={"tropo.toml": TROPO, "modules/billing.md": "---\n---\n# Billing\n",
                               "modules/checkout.md": "---\ndepends: [billing]\n---\n"})
    repo.git("mv", "modules/billing.md", "modules/payments.md")
    repo.commit("head", files={"modules/auth.md": "---\ndepends: [sessions]\n---\n"})
    summary = tmp_path / "summary.md"
    cli("ci", "--base", "HEAD~1", "--summary", str(summary), cwd=repo.path)
    md = summary.read_text()
    assert "**billing** (modules/billing.md) was **renamed** to **payments** (modules/payments.md); " \
           "1 note(s) still reference it:" in md
    assert "**sessions** is not the ID of any note; 1 note(s) reference it:" in md


def test_blast_base_stops_at_two_hops_unless_asked(repo: Repo, cli: Any) -> None:
    files = {"tropo.toml": TROPO, "modules/n0.md": "---\n---\n# N0\n"}
    files |= {f"modules/n{i}.md": f"---\ndepends: [n{i - 1}]\n---\n" for i in range(1, 7)}
    repo.commit("base", files=files)
    repo.commit("head", files={"modules/n0.md": "---\n---\n# N0 v2\n"})
    r = cli("blast", "--base", "HEAD~1", "--head", "HEAD", cwd=repo.path)
    assert [line.split("\t")[1] for line in r.out.splitlines() if line.startswith("impacted")] == ["n1", "n2"]
    assert r.err.strip() == "HEAD~1..HEAD: 1 changed, 0 broken edge(s), 2 impacted (+4 further than 2 hops: " \
                            "--depth all)"
    data = cli("blast", "--base", "HEAD~1", "--head", "HEAD", "--json", cwd=repo.path).json()
    assert data["depth"] == 2 and data["counts"]["impacted"] == 2 and data["counts"]["further"] == 4
    full = cli("blast", "--base", "HEAD~1", "--head", "HEAD", "--depth", "all", "--json", cwd=repo.path).json()
    assert full["depth"] is None and full["counts"]["impacted"] == 6 and full["counts"]["further"] == 0
    # ID mode keeps its default (everything) and takes `all` too.
    assert cli("blast", "n0", "--rev", "HEAD", "--json", cwd=repo.path).json()["counts"]["impacted"] == 6
    assert cli("blast", "n0", "--rev", "HEAD", "--depth", "all", "--json", cwd=repo.path).json()["depth"] is None
    for bad in ("-1", "two"):
        wrong = cli("blast", "--base", "HEAD~1", "--depth", bad, cwd=repo.path)
        assert wrong.code == 2 and "--depth" in wrong.err
        assert cli("ci", "--base", "HEAD~1", "--depth", bad, cwd=repo.path).code == 2


def _cells(row: str) -> list[str]:
    """A GFM table row's cells as GitHub reads them: split at each `|` no backslash escapes, then each
    cell's backslash escapes undone (cmark-gfm's table extension, then CommonMark)."""
    import re

    parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
    return [re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", p).strip() for p in parts]


def test_summary_rows_hold_a_pipe_in_a_message(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """`[[b|alias]]` (and a table cell's `[[c\\|x]]`) in a finding's message: a bare `|` would end the cell."""
    repo.commit("base", files={".obsidian/app.json": "{}", "a.md": "# A\n"})
    repo.commit("head", files={"a.md": "# A\n[[b|alias]]\n| t |\n|---|\n| [[c\\|x]] |\n"})
    summary = tmp_path / "summary.md"
    cli("ci", "--base", "HEAD~1", "--summary", str(summary), cwd=repo.path)
    rows = [line for line in summary.read_text().splitlines() if line.startswith("| error ")]
    assert [_cells(r) for r in rows] == [
        ["error", "a.md:2", "W221", "wikilink [[b|alias]] matches no note (looked for 'b' from a.md)", "changed file"],
        ["error", "a.md:5", "W221", "wikilink [[c\\|x]] matches no note (looked for 'c' from a.md)", "changed file"],
    ]


def test_a_summary_stays_under_githubs_1_mib_limit(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """1,000 rows a table kept ordinary summaries small, but long paths and link targets made 1-4 MB, which GitHub
    refuses whole: the rows stop short of the limit and say how many are left out."""
    folder = "notes/projects/2024/acme-corporation-northern-region/weekly-engineering-sync"
    target = "Migration plan for the northern region data warehouse and the reporting pipeline " * 8
    repo.commit("base", files={".obsidian/app.json": "{}", "a.md": "# A\n"})
    repo.commit("head", files={f"{folder}/meeting-notes-about-the-migration-plan-{i:04d}.md":
                               f"# N{i}\n\nSee [[{target}phase {i}]].\n" for i in range(1100)})
    summary = tmp_path / "summary.md"
    r = cli("ci", "--base", "HEAD~1", "--summary", str(summary), cwd=repo.path)
    assert r.code == 1, r.err
    data = summary.read_bytes()
    assert len(data) <= 1_000_000, len(data)
    text = data.decode()
    assert "the summary stops short of GitHub's 1 MiB limit" in text
    assert text.count("| note | path | field |") > 100  # what fits is there: what broke comes first
    assert len(data) > 900_000
