"""Where `check` runs: the one list of the variables CI runners set (gates/runner.py), which makes `check` a gate."""

from __future__ import annotations

from vivary_git.gates.runner import CI_MARKERS, marker

# What each runner sets in every job (gates/runner.py says where each is documented).
RUNNERS = {"CI": "true", "GITHUB_ACTIONS": "true", "GITLAB_CI": "true", "BUILDKITE": "true", "CIRCLECI": "true",
           "TF_BUILD": "True", "JENKINS_URL": "https://jenkins.example.invalid/"}


def test_the_runner_list_is_the_one_the_tests_know() -> None:
    assert set(RUNNERS) == set(CI_MARKERS)
    assert marker({}) is None
    assert marker({"CI": "false", "TF_BUILD": "0", "JENKINS_URL": ""}) is None
    assert marker({"TF_BUILD": "True"}) == "TF_BUILD"
    assert all(marker({name: value}) == name for name, value in RUNNERS.items())
