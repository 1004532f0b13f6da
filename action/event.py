"""Read the GitHub event payload and print the revisions to review, as `name=value` lines.

Run by action/review.sh with the runner's Python (standard library only). Values are validated
here (commit ids are 40 or 64 hex digits) so that nothing from the payload reaches a shell unchecked.

    base=<sha or empty>   the tree the change starts from (empty: just check the head): a pull request's base,
                          a push's commit before, a merge queue's (`merge_group`) base
    head=<sha or HEAD>    the tree to check
    fork=true|false       the pull request comes from another repository (read-only token)
    default=true|false    a push to the repository's default branch

With `--memory` (the `index` input), it prints instead what the memory-index steps need: `index=true`
and the actions/cache `dir`, `key` and `restore` prefix of `.git/vivary/memory` on a push to the default
branch when VIVARY_INDEX is "true", else `index=false`.
"""

from __future__ import annotations

import json
import os
import re
import sys

_SHA = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
_BRANCH = re.compile(r"\A[A-Za-z0-9._/-]{1,200}\Z")
_ZERO = re.compile(r"\A0+\Z")


def _sha(value: object) -> str:
    return value if isinstance(value, str) and _SHA.match(value) and not _ZERO.match(value) else ""


def revisions(event_name: str, payload: dict[str, object], repository: str) -> dict[str, str]:
    base, head, fork = "", "HEAD", "false"
    pr = payload.get("pull_request")
    if isinstance(pr, dict):
        base = _sha((pr.get("base") or {}).get("sha"))
        pr_head = pr.get("head") or {}
        if event_name == "pull_request_target":
            # That event checks out the base branch: the change is the PR's head commit.
            head = _sha(pr_head.get("sha")) or "HEAD"
        repo = (pr_head.get("repo") or {}).get("full_name")
        fork = "true" if isinstance(repo, str) and repo != repository else "false"
    elif event_name == "push":
        base = _sha(payload.get("before"))  # all zeros for a new branch: nothing to compare with
    elif event_name == "merge_group":
        # A merge queue checks the queued merge (checked out: HEAD) against the branch it will land on. Without
        # this base every error that branch has already would fail the queue, which the pull request's run passed.
        group = payload.get("merge_group")
        base = _sha(group.get("base_sha")) if isinstance(group, dict) else ""
    default = "false"
    branch = (payload.get("repository") or {}).get("default_branch") \
        if isinstance(payload.get("repository"), dict) else None
    ref = payload.get("ref")
    if event_name == "push" and isinstance(branch, str) and _BRANCH.match(branch) and ref == f"refs/heads/{branch}":
        default = "true"
    return {"base": base, "head": head, "fork": fork, "default": default}


def memory_plan(got: dict[str, str], requested: str, workspace: str, runner_os: str, sha: str) -> dict[str, str]:
    """The memory-index steps' plan: build and push only on a push to the default branch (a pull request
    from a fork has a read-only token; other branches would fill the cache with trees nobody recalls)."""
    if requested != "true" or got["default"] != "true":
        return {"index": "false"}
    prefix = f"vivary-memory-{re.sub(r'[^A-Za-z0-9]', '', runner_os) or 'runner'}-"
    return {"index": "true", "dir": os.path.join(workspace, ".git", "vivary", "memory"),
            "key": prefix + (_sha(sha) or "unknown"), "restore": prefix}


def main() -> int:
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    payload: dict[str, object] = {}
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            loaded = json.load(f)
        payload = loaded if isinstance(loaded, dict) else {}
    got = revisions(os.environ.get("GITHUB_EVENT_NAME", ""), payload, os.environ.get("GITHUB_REPOSITORY", ""))
    if sys.argv[1:] == ["--memory"]:
        got = memory_plan(got, os.environ.get("VIVARY_INDEX", ""), os.environ.get("GITHUB_WORKSPACE", "."),
                          os.environ.get("RUNNER_OS", ""), os.environ.get("GITHUB_SHA", ""))
    for k, v in got.items():
        print(f"{k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
