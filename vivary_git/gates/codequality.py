"""GitLab's Code Quality report (`artifacts:reports:codequality`): what every GitLab tier shows in a merge request.

A JSON array of issues, each with `description`, `check_name`, `fingerprint`, `severity` and `location` (`path`
relative to the repository root, `lines.begin`): the subset of the Code Climate issue format GitLab reads.

GitLab compares the merge request's report with the target branch's itself, by fingerprint: an issue in both is
unchanged, one only in the head is new, one only in the target's is resolved. So every finding of the head tree
goes in, those the base already had too (left out, they would read as resolved), with the fingerprint SARIF
uses: the code, path and message, never the line or whether the base had it, so the target branch's own run
gives an unchanged finding the same value. The base's findings are told apart in their words and severity, as
the GitHub annotations tell them.
"""

from __future__ import annotations

from typing import Any

from vivary_git.gates.review import WHY_EXISTING, Review
from vivary_git.gates.sarif import fingerprints

# Code Quality's scale is info, minor, major, critical, blocker. An error fails the gate and a warning does not;
# a finding the base already had fails it only under --fail-on all.
SEVERITY = {"error": "major", "warning": "minor"}
EXISTING = "info"


def render_codequality(r: Review, fail_on: str = "new") -> list[dict[str, Any]]:
    """The review's findings as Code Quality issues, in the review's ranked order (notices are no findings)."""
    findings = [a for a in r.annotations if a.level != "notice"]
    prints = fingerprints(findings)
    issues: list[dict[str, Any]] = []
    for a in findings:
        code = a.title.removeprefix("vivary ")
        existing = a.why == WHY_EXISTING
        severity = EXISTING if existing and fail_on != "all" else SEVERITY.get(a.level, "minor")
        issues.append({
            "description": f"{a.message} (vivary {code}{', already in the base' if existing else ''})",
            "check_name": f"vivary/{code}",
            "fingerprint": prints[id(a)],
            "severity": severity,
            "location": {"path": a.path, "lines": {"begin": a.line}},
        })
    return issues
