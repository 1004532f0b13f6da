"""What the memory commands say about the privacy boundary where others read it: a CI job's log (a CI-built index
is the documented way to share one, `git vivary index --yes` in a job) or `--json` for a program. A rule of the
user's is named by its place alone there (`private_paths in .vivary/memory.toml`), never by its pattern, which names
what the user keeps private; at the owner's terminal in full. A private file's path is said as `ci` says it
(`(private: PATH)`), where the command is about that path; exit codes are the same either way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from test_ci_privacy import LAYOUTS

# Glob characters keep each pattern's text out of the paths it matches: a pattern found in what was said is the rule
# quoted, never the path echoed.
PATTERN = "cli[e]nts/ac?e-*"
TARGETS = "memori[e]s/ac?e-*"
FILE = "zqfile"  # in the private file's name
TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\n'
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
PRIVATE = f'{MEMORY}\n[memory.privacy]\nprivate_paths = ["{PATTERN}", "{TARGETS}"]\n'


def workspace(repo: Repo, cli: Any, layout: str) -> tuple[Path, tuple[str, ...], str]:
    """A workspace whose `clients/acme-zqfile/plan.md` was anchored while it was public, and then made private by
    a `private_paths` pattern, as was every memory titled `acme-…`. The folder to run in, the arguments naming the
    workspace, and the private file's path as given from there."""
    ws, cwd, extra = LAYOUTS[layout]
    at = f"{ws}/" if ws else ""
    repo.commit("init", {f"{at}{k}": v for k, v in {
        "tropo.toml": TROPO, ".vivary/memory.toml": MEMORY, "notes/bread.md": "# Bread\n\nBake it hot.\n",
        f"clients/acme-{FILE}/plan.md": "# Plan\n\nThe acquisition closes in May.\n",
        f"clients/acme-{FILE}/bread.md": "# Bread\n\nA second note named as the first.\n"}.items()})
    where = repo.path / cwd
    given = f"{'' if cwd else at}clients/acme-{FILE}/plan.md"
    anchored = cli("remember", "--file", given, *extra, cwd=where)
    assert anchored.code == 0, anchored.err
    repo.commit("private", {f"{at}.vivary/memory.toml": PRIVATE})
    return where, extra, given


def said(repo: Repo, cli: Any, where: Path, extra: tuple[str, ...], given: str, *more: str) -> list[Any]:
    """Each command that refuses or reports a private path, run once."""
    folder = given.rpartition("/")[0]
    return [cli("remember", "--file", given, *extra, *more, cwd=where),
            cli("remember", "--folder", folder, *extra, *more, cwd=where),
            cli("remember", "The deal closes in May.", "--title", f"acme-{FILE}-deal", *extra, *more, cwd=where),
            cli("refresh", "--check", *extra, *more, cwd=where)]


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_refusal_names_a_private_paths_rule_by_its_place_in_ci_and_in_full_at_the_terminal(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    where, extra, given = workspace(repo, cli, layout)
    at = f"{LAYOUTS[layout][0]}/" if LAYOUTS[layout][0] else ""
    own = said(repo, cli, where, extra, given)
    assert [r.code for r in own] == [3, 3, 3, 1], [r.err for r in own]
    terminal = "\n".join(r.out + r.err for r in own)
    assert f"(config: {PATTERN}" in terminal and f"(config: {TARGETS}" in terminal, terminal

    monkeypatch.setenv("CI", "true")
    ci = said(repo, cli, where, extra, given)
    monkeypatch.delenv("CI")
    machine = said(repo, cli, where, extra, given, "--json")
    for runs in (ci, machine):
        assert [r.code for r in runs] == [r.code for r in own], [r.err for r in runs]
        joined = "\n".join(r.out + r.err for r in runs)
        assert PATTERN not in joined and TARGETS not in joined and "config:" not in joined, joined
        assert "Traceback" not in joined
        rule = f"(private_paths in {at}.vivary/memory.toml)"
        assert f"{given} is private {rule}; a private file is never remembered" in runs[0].err, runs[0].err
        assert f"is private {rule}; a private folder is never remembered" in runs[1].err, runs[1].err
        assert f"acme-{FILE}-deal.md would be private {rule}" in runs[2].err, runs[2].err
        assert "the rule's pattern is not shown here" in runs[2].err
        assert rule in runs[3].out and f"acme-{FILE}/plan.md" in runs[3].out, runs[3].out  # the path, as `ci`
    assert machine[3].json()[0]["state"] == "private"


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_index_and_doctor_in_ci_quote_no_private_rule(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """`index` names a public note it leaves out (a duplicate id) and counts the private notes sharing the id;
    `doctor` lists a private file Git would commit by its path (as `ci` says `(private: PATH)`): neither quotes
    a rule, at the terminal or in CI."""
    where, extra, _given = workspace(repo, cli, layout)
    monkeypatch.setenv("CI", "true")
    dry = cli("index", "--dry-run", *extra, cwd=where)
    assert dry.code == 0, dry.err
    assert "left out     notes/bread.md: 2 notes share the id 'bread': notes/bread.md and 1 private note(s)" \
        in dry.out, dry.out
    assert FILE not in dry.out + dry.err  # the private note is counted, not named
    doctor = cli("doctor", *extra, cwd=where)
    assert doctor.code == 1
    assert f"clients/acme-{FILE}/plan.md" in doctor.out  # tracked though private: its path, as `ci` names it
    for r in (dry, doctor):
        assert PATTERN not in r.out + r.err and TARGETS not in r.out + r.err, r.out + r.err


def test_privacy_explain_names_the_rule_in_full_in_ci_too(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """`privacy explain` is the owner's own question (the refusals above point to it): it answers in full wherever
    it runs, as docs/privacy.md says, so it is no step for a job whose log others read."""
    where, extra, given = workspace(repo, cli, "top")
    monkeypatch.setenv("CI", "true")
    r = cli("privacy", "explain", given, *extra, cwd=where)
    assert r.code == 0 and r.out == f"private  {given}  (config: {PATTERN})\n", r.out + r.err
