"""The findings a tree already had, to report only the new ones: `check --new-since REV`, `ci` and
the pre-commit hook.

A finding is the same one in two trees when its code, its note's path and its target match (the
message without line numbers; `check.baseline_key`), so an edit above a finding does not make it new.
A renamed note keeps its findings: the base's paths are mapped through Git's rename detection
between the two trees. Both trees' findings come from the same code, so their messages compare.
"""

from __future__ import annotations

import msgspec

from vivary_git import check
from vivary_git.errors import GitError, UsageError, VivaryError
from vivary_git.models import Finding
from vivary_git.workspace import CheckReport, Workspace


class Baseline(msgspec.Struct, frozen=True):
    rev: str  # as the user named it
    findings: list[Finding]
    renamed: dict[str, str]  # a renamed note's path in the baseline -> its path in the tree compared
    note: str = ""  # why the baseline is empty, when it is for a reason the user should know


def load(ws: Workspace, rev: str) -> Baseline:
    """The findings of the workspace `ws` shows, at `rev` (same workspace folder), and the notes renamed
    since. `HEAD` of a repository without commits, or a `rev` without the workspace folder, is an empty
    baseline: every finding is new. Neither reads nor writes `refs/vivary/cache`, and writes no graph
    unless it had to build one."""
    repo = ws.source.repo
    if repo is None:
        raise UsageError(f"--new-since {rev}: {ws.source.root} is not in a Git repository, so there is no "
                         "revision to compare with")
    pygit2 = repo.pygit2
    if repo.repo.head_is_unborn and rev.split("~")[0].split("^")[0] in ("HEAD", "@"):
        return Baseline(rev, [], {}, "no commits yet: every finding is new")
    from vivary_git.source import rev_object

    obj, peeled = rev_object(repo, rev, "--new-since")
    tree = str(peeled.id)
    try:  # a commit keeps its identity (created/updated dates derive from its history); a tree is a tree
        oid = str(obj.peel(pygit2.Commit).id)
    except (ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        oid = tree
    prefix = ws.source.prefix
    sub = repo.lookup(tree, prefix) if prefix else tree
    if sub is None or repo.repo[sub].type_str != "tree":
        return Baseline(rev, [], {}, f"{rev} has no folder {prefix}: every finding is new")
    from vivary_git.source import open_source

    start = repo.workdir if repo.workdir is not None else repo.git_dir
    try:
        base = Workspace(open_source(start, rev=oid, root=prefix or ".", rev_option="--new-since"),
                         cache=ws.cache_enabled, gate=ws.gate, shared_cache=False)
        findings = base.baseline_findings()
    except GitError:
        raise
    except VivaryError as err:
        # The commit that fixes a broken tropo.toml must not be refused for the config it fixes (as `ci` reads a
        # base whose config no longer loads): nothing is known of the base, so every finding counts as new.
        return Baseline(rev, [], {}, f"{rev}'s configuration cannot be read ({err}): every finding is new")
    return Baseline(rev, findings, renamed_notes(ws, sub))


def renamed_notes(ws: Workspace, base_tree: str) -> dict[str, str]:
    """Notes renamed from `base_tree` to this workspace's tree (both at the workspace folder), by Git's
    rename detection (50% similar); only looked for when notes were both added and removed."""
    repo, tree = ws.source.repo, ws.source.tree_id
    if repo is None or tree is None or tree == base_tree:
        return {}
    pygit2 = repo.pygit2
    try:
        diff = repo.repo[base_tree].diff_to_tree(repo.repo[tree])  # type: ignore[attr-defined]
    except (KeyError, ValueError, pygit2.GitError):
        return {}
    status = pygit2.enums.DeltaStatus
    kinds = {d.status for d in diff.deltas}
    if status.ADDED not in kinds or status.DELETED not in kinds:
        return {}
    diff.find_similar()
    return {d.old_file.path: d.new_file.path for d in diff.deltas if d.status == status.RENAMED}


def split(findings: list[Finding], baseline: Baseline) -> tuple[list[Finding], list[Finding]]:
    """(new, existing): `findings` split by whether `baseline` had them."""
    new: list[Finding] = []
    existing: list[Finding] = []
    for f, is_new in zip(findings, check.new_findings(findings, baseline.findings, baseline.renamed), strict=True):
        (new if is_new else existing).append(f)
    return new, existing


class NewReport(msgspec.Struct, frozen=True):
    """`check --new-since REV --json`: the check's shape, over the new findings only, plus what was left out."""

    checked: int
    clean: int  # documents with no new finding
    errors: int  # new ones
    warnings: int
    findings: list[Finding]  # new ones
    new_since: str
    existing_errors: int  # findings REV had too: not listed
    existing_warnings: int
    note: str = ""


def new_since(ws: Workspace, report: CheckReport, rev: str) -> NewReport:
    """`report` (the check of `ws`) cut down to the findings `rev` did not have."""
    base = load(ws, rev)
    fresh, existing = split(report.findings, base)
    errors = sum(f.level == "error" for f in fresh)
    old_errors = sum(f.level == "error" for f in existing)
    return NewReport(
        checked=report.checked, clean=report.checked - len(ws.documents(fresh)), errors=errors,
        warnings=len(fresh) - errors, findings=fresh, new_since=rev, existing_errors=old_errors,
        existing_warnings=len(existing) - old_errors, note=base.note,
    )
