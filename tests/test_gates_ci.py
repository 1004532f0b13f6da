"""`git vivary ci`: the review engine (check the head, blast radius of base..head) and its formats."""

from __future__ import annotations

import json
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
    assert len(annotations) == 10
    assert [a.split(",")[0] for a in annotations[:3]] == [f"::warning file=modules/new{i:02}.md" for i in range(3)]
    assert "vivary: 5 more finding(s) and notice(s) not annotated" in r.out
    assert r.code == 0  # --lenient: warnings do not fail
    few = cli("ci", "--base", "HEAD~1", "--format", "github", "--lenient", "--max-annotations", "2", cwd=repo.path)
    assert sum(line.startswith("::warning") for line in few.out.splitlines()) == 2


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
    assert "```mermaid\nflowchart LR\n" in md and "-.->|depends|" in md and "class n0 changed;" in md
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


def test_bad_base_config_still_checks_head(repo: Repo, cli: Any) -> None:
    repo.commit("base", files={"tropo.toml": "version = [", "modules/a.md": "# A\n"})
    repo.commit("head", files={"tropo.toml": TROPO})
    r = cli("ci", "--base", "HEAD~1", cwd=repo.path)
    assert r.code == 0, r.err
    assert "blast radius not computed: the base tree HEAD~1 cannot be read" in r.out


def test_usage_errors_exit_2(repo: Repo, cli: Any, tmp_path: Path) -> None:
    two_commits(repo)
    assert cli("ci", "--format", "xml", cwd=repo.path).code == 2
    r = cli("ci", "--summary", str(tmp_path / "no" / "such" / "file.md"), cwd=repo.path)
    assert r.code == 2 and "does not exist" in r.err
