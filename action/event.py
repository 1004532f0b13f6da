"""Read the GitHub event payload and print the revisions to review, as `name=value` lines.

Run by action/review.sh with the runner's Python (standard library only). Values are validated
here (commit ids are 40 or 64 hex digits) so that nothing from the payload reaches a shell unchecked.

    base=<sha or empty>   the tree the change starts from (empty: just check the head)
    head=<sha or HEAD>    the tree to check
    fork=true|false       the pull request comes from another repository (read-only token)
"""

from __future__ import annotations

import json
import os
import re
import sys

_SHA = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
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
    return {"base": base, "head": head, "fork": fork}


def main() -> int:
    path = os.environ.get("GITHUB_EVENT_PATH", "")
    payload: dict[str, object] = {}
    if path and os.path.isfile(path):
        with open(path, encoding="utf-8") as f:
            loaded = json.load(f)
        payload = loaded if isinstance(loaded, dict) else {}
    got = revisions(os.environ.get("GITHUB_EVENT_NAME", ""), payload, os.environ.get("GITHUB_REPOSITORY", ""))
    for k, v in got.items():
        print(f"{k}={v}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
