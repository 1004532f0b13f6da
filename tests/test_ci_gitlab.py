"""`git vivary ci` as a GitLab CI job runs it: a shallow fetch (`GIT_DEPTH`) of the merge request's head into a fresh
repository, a detached HEAD, `--base "$CI_MERGE_REQUEST_DIFF_BASE_SHA"`, and the Code Quality report
(`artifacts:reports:codequality`) that every GitLab tier shows in the merge request.

The shape checked here is GitLab's documented one: a JSON array of issues with `description`, `check_name`,
`fingerprint`, `severity` (info, minor, major, critical, blocker), `location.path` and `location.lines.begin`.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
from conftest import Repo, git, run_git_vivary

TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list", uses = "ref" }
"""

GIT_DEPTH = 20  # GitLab's default for new projects

# GitLab's Code Quality report as its documentation describes it: the fields it reads, each required.
CODEQUALITY_SCHEMA: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "pattern": "^[0-9a-f]{32}$"},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": "^(/|\\./)"}},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1}}},
                },
            },
        },
    },
}


@dataclass
class MergeRequest:
    job: Path  # the runner's build folder: a shallow fetch of the merge request's head, HEAD detached
    diff_base: str  # CI_MERGE_REQUEST_DIFF_BASE_SHA: where the source branch left the target
    head: str  # CI_COMMIT_SHA
    target: str  # the target branch's tip, which moved on after the branch point


def merge_request(repo: Repo, tmp_path: Path, commits: int = 25) -> MergeRequest:
    """main holds an old broken wikilink; the merge request makes `auth` depend on a missing `sessions` and then
    adds `commits` more commits, so its base is deeper than GIT_DEPTH; main moves on meanwhile. The server is a
    bare repository with GitLab's `refs/merge-requests/1/head`; the job fetches it as the runner does."""
    repo.commit("base", files={"tropo.toml": TROPO, "modules/auth.md": "---\n---\n# Auth\n",
                               "modules/checkout.md": "---\ndepends: [auth]\n---\n# Checkout\n",
                               "notes/old.md": "# Old\n\n[[ghost]]\n"})
    diff_base = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("auth needs sessions", files={"modules/auth.md": "---\ndepends: [sessions]\n---\n# Auth\n"})
    for i in range(commits):
        repo.commit(f"feature {i}", files={"notes/feature.md": f"# Feature\n\nstep {i}\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    repo.git("checkout", "-q", "main")
    target = repo.commit("main moves on", files={"notes/main.md": "# Main\n"})
    server = tmp_path / "server.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo.path), str(server))
    git(server, "update-ref", "refs/merge-requests/1/head", head)
    return MergeRequest(runner_job(tmp_path / "job", server, "refs/merge-requests/1/head", head), diff_base, head,
                        target)


def runner_job(job: Path, server: Path, ref: str, sha: str) -> Path:
    """A job's checkout as GitLab's runner makes it: a new repository, `ref` fetched GIT_DEPTH deep, `sha` checked
    out detached."""
    git(job.parent, "init", "-q", str(job))
    git(job, "remote", "add", "origin", f"file://{server}")
    git(job, "fetch", "-q", f"--depth={GIT_DEPTH}", "--no-tags", "origin",
        f"+{ref}:refs/remotes/origin/{ref.removeprefix('refs/')}")
    git(job, "checkout", "-q", "-f", sha)
    return job


def named_command(stderr: str, starting: str) -> str:
    """The one command of that kind the message names between backquotes."""
    [command] = [part for part in stderr.split("`")[1::2] if part.startswith(starting)]
    return command


def test_a_merge_request_deeper_than_git_depth_is_refused_with_the_gitlab_fix(repo: Repo, tmp_path: Path) -> None:
    mr = merge_request(repo, tmp_path)
    assert git(mr.job, "rev-parse", "--is-shallow-repository").strip() == "true"
    assert git(mr.job, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # detached, as the runner leaves it
    args = ["ci", "--base", mr.diff_base, "--head", "HEAD", "--codequality", "gl-code-quality-report.json"]
    r = run_git_vivary(args, mr.job)
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
    assert f"--base {mr.diff_base}: not in this shallow clone" in r.stderr
    assert "GIT_DEPTH: 0" in r.stderr and "fetch-depth: 0" in r.stderr
    assert not (mr.job / "gl-code-quality-report.json").exists()  # nothing for GitLab to take as the result
    git(mr.job, *shlex.split(named_command(r.stderr, "git fetch"))[1:])
    # The base is there now, but not the history between it and the head: the clone cannot tell that the diff
    # base is an ancestor (it is: GitLab computed it as the merge base), so it must not say it is not one.
    r = run_git_vivary(args, mr.job)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "not an ancestor" not in r.stderr
    assert f"the history of HEAD in this shallow clone reaches neither {mr.diff_base} nor their merge base" \
        in r.stderr and "GIT_DEPTH: 0" in r.stderr
    git(mr.job, *shlex.split(named_command(r.stderr, "git fetch"))[1:])
    r = run_git_vivary(args, mr.job)
    assert r.returncode == 1, r.stderr  # the merge request's own error fails the job
    assert "modules/auth.md:2: error W220: field 'depends': ref 'sessions'" in r.stdout
    assert "not an ancestor" not in r.stdout  # the diff base is the branch point itself
    report = json.loads((mr.job / "gl-code-quality-report.json").read_text())
    jsonschema.Draft202012Validator(CODEQUALITY_SCHEMA).validate(report)
    assert [(i["location"]["path"], i["severity"]) for i in report] == [("modules/auth.md", "major"),
                                                                      ("notes/old.md", "info")]


def test_with_git_depth_zero_the_job_runs_at_once(repo: Repo, tmp_path: Path) -> None:
    """`GIT_DEPTH: 0` (the fix the message names): the runner fetches the whole history."""
    mr = merge_request(repo, tmp_path)
    git(mr.job, "fetch", "-q", "--unshallow", "--no-tags", "origin")
    r = run_git_vivary(["ci", "--base", mr.diff_base, "--head", "HEAD", "--format", "codequality"], mr.job)
    assert r.returncode == 1, r.stderr
    jsonschema.Draft202012Validator(CODEQUALITY_SCHEMA).validate(json.loads(r.stdout))


def test_deepening_the_head_alone_reaches_the_diff_base(repo: Repo, tmp_path: Path) -> None:
    """What docs/ci.md says to run in the script to keep GitLab's shallow fetch: the diff base is an ancestor of the
    head, so more of the head's history brings it."""
    mr = merge_request(repo, tmp_path)
    git(mr.job, "fetch", "-q", "--no-tags", "--deepen=200", "origin", mr.head)
    r = run_git_vivary(["ci", "--base", mr.diff_base, "--head", "HEAD"], mr.job)
    assert r.returncode == 1 and "W220" in r.stdout, r.stderr


def test_a_merge_request_within_git_depth_needs_no_fetch(repo: Repo, tmp_path: Path) -> None:
    mr = merge_request(repo, tmp_path, commits=3)
    r = run_git_vivary(["ci", "--base", mr.diff_base, "--head", "HEAD"], mr.job)
    assert r.returncode == 1 and "W220" in r.stdout, r.stderr


def test_a_merged_results_pipeline_compares_with_the_target_branch(repo: Repo, tmp_path: Path) -> None:
    """In a merged results pipeline HEAD is GitLab's merge of the source into the target's tip, and
    CI_MERGE_REQUEST_TARGET_BRANCH_SHA is that tip (its first parent): the change is target..merge."""
    mr = merge_request(repo, tmp_path, commits=3)
    repo.git("checkout", "-q", "main")
    repo.git("merge", "-q", "--no-ff", "-m", "merged result", mr.head)
    merged = repo.git("rev-parse", "HEAD").strip()
    git(tmp_path / "server.git", "fetch", "-q", str(repo.path), f"{merged}:refs/merge-requests/1/merge")
    job = runner_job(tmp_path / "merged-job", tmp_path / "server.git", "refs/merge-requests/1/merge", merged)
    r = run_git_vivary(["ci", "--base", mr.target, "--head", "HEAD"], job)
    assert r.returncode == 1, r.stderr
    assert "modified\tauth" in r.stdout and "notes/main.md" not in r.stdout  # main's own commit is not the change's


def test_codequality_fingerprints_match_the_target_branch_report(repo: Repo, tmp_path: Path) -> None:
    """GitLab compares the merge request's report with the target branch's by fingerprint. A finding the base
    already had is in the report (left out, GitLab would call it resolved) with the fingerprint the target
    branch's own run gives it, and says it was there; the change's own finding is new."""
    mr = merge_request(repo, tmp_path, commits=3)
    r = run_git_vivary(["ci", "--base", mr.diff_base, "--format", "codequality"], mr.job)
    report = json.loads(r.stdout)
    jsonschema.Draft202012Validator(CODEQUALITY_SCHEMA).validate(report)
    new, old = report
    assert new["check_name"] == "vivary/W220" and new["severity"] == "major"
    assert new["description"] == "field 'depends': ref 'sessions' matches no document id (vivary W220)"
    assert old["check_name"] == "vivary/W221" and old["severity"] == "info"
    assert old["description"].endswith("(vivary W221, already in the base)")
    assert old["location"] == {"path": "notes/old.md", "lines": {"begin": 3}}
    # The target branch's pipeline (a branch pipeline, no base): every finding at its level, same fingerprints.
    repo.git("checkout", "-q", "--detach", mr.diff_base)
    target = run_git_vivary(["ci", "--format", "codequality"], repo.path)
    assert target.returncode == 1, target.stderr
    [there] = json.loads(target.stdout)
    assert there["fingerprint"] == old["fingerprint"] and there["severity"] == "major"
    # Under --fail-on all the old error fails the job, and says so at its level.
    r = run_git_vivary(["ci", "--base", mr.diff_base, "--format", "codequality", "--fail-on", "all"], mr.job)
    assert [i["severity"] for i in json.loads(r.stdout)] == ["major", "major"]


def test_codequality_fingerprints_follow_the_finding_not_its_line(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", files={"tropo.toml": TROPO, "Meeting notes.md": "# M\n\n[[gone]]\n\n[[gone]]\n"})
    out = tmp_path / "cq.json"
    r = run_git_vivary(["ci", "--codequality", str(out)], repo.path)
    assert r.returncode == 1, r.stderr
    first = json.loads(out.read_text())
    jsonschema.Draft202012Validator(CODEQUALITY_SCHEMA).validate(first)
    assert [i["location"] for i in first] == [{"path": "Meeting notes.md", "lines": {"begin": 3}},
                                              {"path": "Meeting notes.md", "lines": {"begin": 5}}]
    assert len({i["fingerprint"] for i in first}) == 2  # two identical findings in one file still differ
    repo.commit("move", files={"Meeting notes.md": "# M\n\nintro\n\n[[gone]]\n\n[[gone]]\n"})
    run_git_vivary(["ci", "--codequality", str(out)], repo.path)
    moved = json.loads(out.read_text())
    assert [i["location"]["lines"]["begin"] for i in moved] == [5, 7]
    assert [i["fingerprint"] for i in moved] == [i["fingerprint"] for i in first]


def test_a_clean_tree_writes_an_empty_report(repo: Repo, tmp_path: Path) -> None:
    repo.commit("base", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n"})
    r = run_git_vivary(["ci", "--codequality", "report.json", "--format", "codequality"], repo.path)
    assert r.returncode == 0 and r.stdout == "[]\n" and (repo.path / "report.json").read_text() == "[]\n"


def test_a_run_that_stops_early_leaves_no_report(repo: Repo) -> None:
    """A report left from before (or committed) must never pass for this run's: as `--sarif`, it is removed first."""
    repo.commit("base", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n",
                               "gl-code-quality-report.json": "[]\n"})
    r = run_git_vivary(["ci", "--base", "no-such-rev", "--codequality", "gl-code-quality-report.json"], repo.path)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert not (repo.path / "gl-code-quality-report.json").exists()


def test_the_report_says_what_sarif_says_and_names_no_ignored_file(repo: Repo) -> None:
    """The same findings, paths and words as `--sarif` (no more leaves the job), and a note Git ignores, on disk in
    the job's folder, is in no tree the review reads: not even its name is in the report."""
    repo.commit("base", files={"tropo.toml": TROPO, ".gitignore": "drafts/\n",
                               "modules/a.md": "---\n---\n# A\n\n[[public-gone]]\n\n[[drafts/canary]]\n"})
    repo.write({"drafts/canary.md": "# canary-secret-text\n\n[[canary-secret-link]]\n"})
    r = run_git_vivary(["ci", "--format", "codequality", "--codequality", "cq.json", "--sarif", "ci.sarif"],
                       repo.path)
    assert r.returncode == 1, r.stderr
    assert (repo.path / "cq.json").read_text() == r.stdout
    report = json.loads(r.stdout)
    [run] = json.loads((repo.path / "ci.sarif").read_text())["runs"]
    said = [(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"], res["message"]["text"],
             res["partialFingerprints"]["vivaryFinding/v1"]) for res in run["results"]]
    assert [(i["location"]["path"], i["description"].rsplit(" (vivary ", 1)[0], i["fingerprint"]) for i in report] \
        == said
    assert "canary-secret" not in r.stdout and "drafts/canary.md" not in r.stdout


def test_the_before_sha_of_a_new_branch_is_refused_in_words(repo: Repo) -> None:
    """A branch pipeline's CI_COMMIT_BEFORE_SHA is all zeros on a new branch (and in merge-request pipelines)."""
    repo.commit("base", files={"tropo.toml": TROPO, "modules/a.md": "---\n---\n# A\n"})
    r = run_git_vivary(["ci", "--base", "0" * 40, "--codequality", "cq.json"], repo.path)
    assert r.returncode == 2 and "Traceback" not in r.stderr and "\n" not in r.stderr.strip(), r.stderr
    assert f"--base {'0' * 40}: the all-zero commit id" in r.stderr
    assert "$CI_MERGE_REQUEST_DIFF_BASE_SHA" in r.stderr and "leave the option out" in r.stderr
    assert not (repo.path / "cq.json").exists()
