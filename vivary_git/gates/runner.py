"""Whether a CI runner runs us: the one list of the variables runners set in every job.

Two decisions read it: `check --gate`'s default (CI decides from the tree's own blobs, docs/cache.md#trust), and
whether `check`, `graph` and `blast` show what private files hold (a CI log is read by others: docs/privacy.md).

What each runner sets (its own documentation): GitHub Actions `CI=true` and `GITHUB_ACTIONS=true`; GitLab
`CI=true` and `GITLAB_CI=true`; Buildkite `CI=true` and `BUILDKITE=true`; CircleCI `CI=true` and `CIRCLECI=true`;
Azure Pipelines `TF_BUILD=True` (no `CI`); Jenkins `JENKINS_URL` (its address; no `CI`); TeamCity
`TEAMCITY_VERSION` (no `CI`); AWS CodeBuild `CODEBUILD_BUILD_ARN` (no `CI`); Bamboo `bamboo_planKey` (its plan
variables exported with a `bamboo_` prefix; no `CI`); GoCD `GO_PIPELINE_LABEL` (no `CI`). Google Cloud Build sets
none by default: a job there sets `CI=true` (docs/privacy.md#ci-runners).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

CI_MARKERS = ("CI", "GITHUB_ACTIONS", "GITLAB_CI", "BUILDKITE", "CIRCLECI", "TF_BUILD", "JENKINS_URL",
              "TEAMCITY_VERSION", "CODEBUILD_BUILD_ARN", "bamboo_planKey", "GO_PIPELINE_LABEL")


def marker(env: Mapping[str, str] | None = None) -> str | None:
    """The first of `CI_MARKERS` set to anything but "", "0", "false" or "no" (any case), or None: not in CI."""
    env = os.environ if env is None else env
    for name in CI_MARKERS:
        if env.get(name, "").strip().lower() not in ("", "0", "false", "no"):
            return name
    return None
