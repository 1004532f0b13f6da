"""The change the pre-commit framework hands a hook, for `check --pre-commit-range` (the `vivary-check` hook).

Inside `git commit` there is nothing to read here: the hook judges the staged tree against HEAD. But
`pre-commit run --from-ref A --to-ref B` (how CI runs pre-commit on a pull request) and the pre-push stage
(A: what the remote has, B: the commit pushed) judge a range, and there the index is whatever the checkout
holds: in CI it equals HEAD, so "new since HEAD" could never find anything. pre-commit says which range in
PRE_COMMIT_FROM_REF and PRE_COMMIT_TO_REF (both or neither; pre-commit/commands/run.py), and this is the one
place they are read. The check then reads B's tree and counts only the findings A did not have, as
`git vivary ci --base A --head B` does: an A that is not an ancestor of B is read as their merge base.
A push whose commits the remote has none of (a new remote, an unrelated history) names no A: pre-commit runs
it as `--all-files` and says only which local ref is pushed (PRE_COMMIT_LOCAL_BRANCH, with
PRE_COMMIT_REMOTE_NAME); that ref's tree is checked with no base, every finding new, as a first commit's.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

import msgspec

from vivary_git.errors import UsageError
from vivary_git.escape import text

if TYPE_CHECKING:
    from vivary_git.baseline import NewReport
    from vivary_git.workspace import CheckReport, Workspace

FROM_VAR = "PRE_COMMIT_FROM_REF"
TO_VAR = "PRE_COMMIT_TO_REF"
PUSHED_VAR = "PRE_COMMIT_LOCAL_BRANCH"
REMOTE_VAR = "PRE_COMMIT_REMOTE_NAME"


class Range(msgspec.Struct, frozen=True):
    # As pre-commit named them: commit ids (pre-push) or what `--from-ref`/`--to-ref` were given. No
    # `from_ref`: a push the remote has none of the commits of, whose every finding is new.
    from_ref: str | None
    to_ref: str
    to_var: str = TO_VAR  # the variable that named `to_ref`, for messages


def from_env(environ: Mapping[str, str] = os.environ) -> Range | None:
    """The range pre-commit is judging, or None when it names none (a plain `git commit`, `run --all-files`).
    A value that cannot be a revision is a usage error naming the variable: it comes from the environment,
    and it reaches only libgit2's revision parser (never a `git` command line)."""
    got = {name: environ.get(name, "") for name in (FROM_VAR, TO_VAR)}
    if not any(got.values()):
        pushed = environ.get(PUSHED_VAR, "")
        if not (pushed and environ.get(REMOTE_VAR)):
            return None
        return Range(None, _revision(PUSHED_VAR, pushed), PUSHED_VAR)
    for name, value in got.items():
        other = TO_VAR if name == FROM_VAR else FROM_VAR
        if not value:
            raise UsageError(f"{other} is set but {name} is not: pre-commit sets both (`pre-commit run --from-ref "
                             f"A --to-ref B`, the pre-push stage); set both, or unset {other} to check the staged "
                             "tree")
    return Range(_revision(FROM_VAR, got[FROM_VAR]), _revision(TO_VAR, got[TO_VAR]))


def _revision(name: str, value: str) -> str:
    if value.startswith("-") or not value.isprintable() or value != value.strip():
        raise UsageError(f"{name}={text(value)}: not a revision (a commit id, branch or tag; no leading '-', "
                         "spaces or control characters); pass one to `pre-commit run --from-ref/--to-ref`")
    return value


def new_in_range(ws: Workspace, report: CheckReport, span: Range) -> NewReport | None:
    """`report` (the check of `ws`, opened at `span.to_ref`) cut down to what the change added since
    `span.from_ref`, or since their merge base when the range's start is not an ancestor of its end (the base
    branch moved on: its own fixes and debt are not the change's). None when the range has no start: every
    finding is the change's."""
    from vivary_git.baseline import new_since
    from vivary_git.gates.review import branch_point
    from vivary_git.source import rev_object

    if span.from_ref is None:
        return None
    repo = ws.source.repo
    assert repo is not None  # opened at a revision
    rev_object(repo, span.from_ref, FROM_VAR)  # one that does not resolve is named by its variable
    point = branch_point(repo, span.from_ref, span.to_ref, option=FROM_VAR)
    note = ""
    base = span.from_ref
    if point is False:
        note = f"shares no commit with {span.to_ref}: compared with it as it is, not with a branch point"
    elif point is not None:
        note = (f"not an ancestor of {span.to_ref}: compared with their merge base {point[:12]}, where the change "
                "starts")
        base = point
    new = new_since(ws, report, base)
    said = "; ".join(n for n in (note, new.note) if n)
    return msgspec.structs.replace(new, new_since=span.from_ref, note=said)
