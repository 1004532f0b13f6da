"""`check` prints no byte of a private file where others read what it prints: in CI (a job log), as JSON (a
program), for the range the pre-commit framework names (CI, pre-push), in the server's pre-receive gate (the pusher,
the server's logs). The findings still count: same codes, paths, lines, exit code. At the owner's terminal, with
no CI marker, it shows everything; `--show-private` / `--mask-private` choose explicitly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest
from conftest import Repo, git
from test_ci_privacy import CANARY, LAYOUTS, vault
from test_gates_prereceive import _hook, _vivary, push

from vivary_git.gates.private import NAMES_PRIVATE, PRIVATE_FINDING, mask_findings, naming_private
from vivary_git.gates.runner import CI_MARKERS, marker
from vivary_git.models import Finding
from vivary_git.privacy import PATTERN_NOT_SHOWN
from vivary_git.workspace import open_workspace

# What each runner sets in every job (gates/runner.py says where each is documented).
RUNNERS = {"CI": "true", "GITHUB_ACTIONS": "true", "GITLAB_CI": "true", "BUILDKITE": "true", "CIRCLECI": "true",
           "TF_BUILD": "True", "JENKINS_URL": "https://jenkins.example.invalid/",
           "TEAMCITY_VERSION": "2025.07 (build 197242)",
           "CODEBUILD_BUILD_ARN": "arn:aws:codebuild:eu-west-1:123456789012:build/notes:b1e6661e",
           "bamboo_planKey": "NOTES-CHECK", "GO_PIPELINE_LABEL": "12"}


def canaries(*texts: str) -> list[str]:
    return [line for text in texts for line in text.splitlines() if CANARY.search(line)]


def places(r: Any) -> list[tuple[str, int, str, str]]:
    return [(f["path"], f["line"], f["level"], f["code"]) for f in r.json()["findings"]]


def test_the_runner_list_is_the_one_the_tests_know() -> None:
    assert set(RUNNERS) == set(CI_MARKERS)
    assert marker({}) is None
    assert marker({"CI": "false", "TF_BUILD": "0", "JENKINS_URL": ""}) is None
    assert marker({"TF_BUILD": "True"}) == "TF_BUILD"
    assert all(marker({name: value}) == name for name, value in RUNNERS.items())


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_check_in_ci_masks_private_findings_and_counts_them(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                            layout: str) -> None:
    ws, cwd, extra = LAYOUTS[layout]
    vault(repo, ws)
    where = repo.path / cwd
    own = cli("check", "--rev", "HEAD", *extra, cwd=where)
    assert own.code == 1 and "canary-link-2" in own.out and "canary-draft-link" in own.out, own.out + own.err
    own_json = cli("check", "--rev", "HEAD", "--json", "--show-private", *extra, cwd=where)
    for name, value in RUNNERS.items():
        monkeypatch.setenv(name, value)
        r = cli("check", "--rev", "HEAD", *extra, cwd=where)
        assert (r.code, canaries(r.out, r.err)) == (1, []), (name, r.out, r.err)
        assert r.out.splitlines()[-1] == own.out.splitlines()[-1]  # `N document(s), N error(s), ...`
        assert "USER.md:10: error W221: " + PRIVATE_FINDING in r.out
        assert "drafts/plan.md:3: error W221: " + PRIVATE_FINDING in r.out
        masked = cli("check", "--rev", "HEAD", "--json", *extra, cwd=where)
        assert masked.code == 1 and not canaries(masked.out, masked.err)
        assert places(masked) == places(own_json)
        assert {k: v for k, v in masked.json().items() if k != "findings"} == \
            {k: v for k, v in own_json.json().items() if k != "findings"}
        # The owner chooses: their own CI, a log only they read.
        shown = cli("check", "--rev", "HEAD", "--show-private", *extra, cwd=where)
        assert shown.out == own.out
        monkeypatch.delenv(name)
    # A marker set to "false" (or "0", "no", "") is no CI.
    monkeypatch.setenv("CI", "false")
    assert cli("check", "--rev", "HEAD", *extra, cwd=where).out == own.out


def test_json_is_masked_at_the_terminal_too_unless_the_owner_asks(repo: Repo, cli: Any) -> None:
    vault(repo, "")
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 1 and not canaries(r.out, r.err)
    assert {f["message"] for f in r.json()["findings"] if f["path"] in ("USER.md", "drafts/plan.md")} == \
        {PRIVATE_FINDING}
    shown = cli("check", "--rev", "HEAD", "--json", "--show-private", cwd=repo.path)
    assert "canary-link-2" in shown.out and places(shown) == places(r)
    masked = cli("check", "--rev", "HEAD", "--mask-private", cwd=repo.path)
    assert masked.code == 1 and not canaries(masked.out, masked.err)
    both = cli("check", "--show-private", "--mask-private", cwd=repo.path)
    assert both.code == 2 and "not allowed with" in both.err


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_pre_commit_range_is_masked(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """`pre-commit run --from-ref A --to-ref B` (the vivary-check hook's entry): CI or pre-push, no marker needed."""
    ws, cwd, extra = LAYOUTS[layout]
    vault(repo, ws)
    where = repo.path / cwd
    hook = ("check", "--staged", "--gate", "--new-since", "HEAD", "--pre-commit-range", *extra)
    monkeypatch.setenv("PRE_COMMIT_FROM_REF", repo.git("rev-parse", "HEAD~2").strip())
    monkeypatch.setenv("PRE_COMMIT_TO_REF", "HEAD")
    r = cli(*hook, cwd=where)
    assert r.code == 1 and not canaries(r.out, r.err), r.out + r.err
    assert "USER.md:10: error W221: " + PRIVATE_FINDING in r.out
    shown = cli(*hook, "--show-private", cwd=where)
    assert shown.code == 1 and "canary-link-2" in shown.out
    assert shown.out.splitlines()[-1] == r.out.splitlines()[-1]  # the same new errors counted


def test_the_plain_pre_commit_hook_in_ci(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A commit made in a CI job (a bot's): the hook's graph check prints what the job's log may show."""
    vault(repo, "")
    repo.write({"USER.md": "# Me\n\nSee [[canary-staged-link]].\n"})
    repo.git("add", "-f", "USER.md")
    own = cli("hooks", "run", "pre-commit", cwd=repo.path)
    assert own.code == 1 and "canary-staged-link" in own.out
    monkeypatch.setenv("CI", "true")
    r = cli("hooks", "run", "pre-commit", cwd=repo.path)
    assert r.code == 1 and not canaries(r.out, r.err), r.out + r.err
    assert "USER.md:3: error W221: " + PRIVATE_FINDING in r.out
    assert "commit refused" in r.err


@pytest.mark.parametrize("ws", ["", "vault"])
def test_the_privacy_guard_in_ci_names_a_private_paths_rule_by_its_place(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch, ws: str) -> None:
    """A pattern is the text of `.vivary/memory.toml` (private by the floor): a CI job's log gets the rule's place,
    `private_paths in FILE`, as every verdict told where others read it (`PrivacyDecision.told`)."""
    at = f"{ws}/" if ws else ""
    repo.commit("rules", files={f"{at}tropo.toml": "version = 1\n",
                                f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["**/[Mm]erger-*"]\n'})
    repo.write({f"{at}deals/merger-acme.md": "# Deal\n"})
    repo.git("add", f"{at}deals/merger-acme.md")
    own = cli("hooks", "privacy-guard", cwd=repo.path)
    where = f" (in {at}.vivary/memory.toml)" if ws else ""
    assert own.code == 1 and f"private file staged (config: **/[Mm]erger-*{where}); unstage it" in own.out, own.out
    assert "not shown here" not in own.out
    monkeypatch.setenv("BUILDKITE", "true")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and "[Mm]erger" not in r.out + r.err, r.out + r.err
    assert (f"{at}deals/merger-acme.md:1: error P101: private file staged (private_paths in {at}.vivary/memory.toml);"
            f" unstage it with `git restore --staged -- {at}deals/merger-acme.md` and list it in .gitignore"
            f"{PATTERN_NOT_SHOWN}\n") in r.out, r.out


@pytest.mark.parametrize("ws", ["", "vault"])
def test_a_link_to_an_ignored_private_file_names_its_rules_by_place_where_others_read(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch, ws: str) -> None:
    """`check` says which ignore rule leaves out the file a broken link names (ignoredlinks.py), and why it is
    private. Where others read it, each rule is named by its place alone: a pattern is the text of
    `.git/info/exclude` or of `.vivary/memory.toml`, both private by the floor."""
    at = f"{ws}/" if ws else ""  # a vault (no tropo.toml): run below its top, it names paths from the top
    repo.commit("start", files={f"{at}a.md": "# A\n\nSee [[diary]].\n"})
    repo.write({f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["d*ary.md"]\n',
                f"{at}diary.md": "# D\n"})
    (repo.path / ".git" / "info" / "exclude").write_text("di*ry.md\n")
    where = repo.path / ws
    own = cli("check", cwd=where)
    in_ws = f" (in {at}.vivary/memory.toml)" if ws else ""
    assert own.code == 1 and f"(.git/info/exclude:1:di*ry.md) and it is private (config: d*ary.md{in_ws})" in own.out, \
        own.out
    said = (f"'{at}diary.md' is on disk, but Git ignores it (.git/info/exclude:1) and it is private "
            f"(private_paths in {at}.vivary/memory.toml): link another note")
    masked = [cli("check", "--json", cwd=where), cli("check", "--mask-private", cwd=where)]
    monkeypatch.setenv("CI", "true")
    repo.write({f"{at}b.md": "# B\n\nSee [[diary]].\n"})
    repo.git("add", f"{at}b.md")
    masked += [cli("check", cwd=where), cli("hooks", "run", "pre-commit", cwd=repo.path)]
    for r in masked:
        assert r.code == 1 and said in r.out, r.out + r.err
        assert "di*ry" not in r.out + r.err and "d*ary" not in r.out + r.err, r.out + r.err


@pytest.mark.parametrize("layout", ["top", "subfolder"])
def test_the_pre_receive_gate_masks_private_findings(tmp_path: Path, repo: Repo, layout: str) -> None:
    """What the server's gate prints goes to whoever pushed and into the server's logs; it still refuses the push.
    The bare repository has no work tree: privacy is decided from the pushed tree's own rules (its .gitignore,
    its private_paths), as a clone's `check --rev` decides."""
    ws = LAYOUTS[layout][0]
    bare = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    repo.git("remote", "add", "origin", str(bare))
    vault(repo, ws)
    repo.git("push", "-q", "origin", "HEAD~2:refs/heads/main")  # the base, with its own debt, before the gate
    _hook(bare, f"exec {_vivary()} hooks run pre-receive" + (f" --root {ws}" if ws else ""))
    r = push(repo, "main")
    assert r.returncode == 1, r.stdout
    assert not canaries(r.stdout), r.stdout
    assert "remote: USER.md:10: error W221: " + PRIVATE_FINDING in r.stdout
    assert "push refused: refs/heads/main would gain the errors above" in r.stdout
    assert "[remote rejected] main -> main (pre-receive hook declined)" in r.stdout


def test_pre_receive_decides_from_the_pushed_tree_alone(tmp_path: Path, repo: Repo) -> None:
    """A public note's finding keeps its words on the server; a file private only by the pushed .gitignore (new in
    the same push, still in quarantine) is masked."""
    bare = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    _hook(bare, f"exec {_vivary()} hooks run pre-receive")
    repo.git("remote", "add", "origin", str(bare))
    repo.commit("start", files={"tropo.toml": "version = 1\n", "a.md": "# A\n"})
    assert push(repo, "main").returncode == 0
    repo.commit("more", files={".gitignore": "journal.md\n", "pub.md": "# Pub\n\nSee [[public-gone]].\n"})
    repo.write({"journal.md": "# J\n\nSee [[canary-journal]].\n"})
    repo.git("add", "-f", "journal.md")
    repo.commit("journal, tracked anyway")
    r = push(repo, "main")
    assert r.returncode == 1 and not canaries(r.stdout), r.stdout
    assert "remote: journal.md:3: error W221: " + PRIVATE_FINDING in r.stdout
    assert "remote: pub.md:3: error W221: wikilink [[public-gone]] matches no document id" in r.stdout
    assert "2 new error(s)" in r.stdout



@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_graph_and_blast_in_ci_show_private_notes_by_path_alone(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                                layout: str) -> None:
    """A docs recipe runs `blast --base ... --json` in CI (docs/blast.md); `graph` can be run there too."""
    ws, cwd, extra = LAYOUTS[layout]
    vault(repo, ws)
    where = repo.path / cwd
    runs = [("graph", "--rev", "HEAD", *extra), *[("graph", "--rev", "HEAD", "--format", f, *extra)
                                                  for f in ("json", "dot", "mermaid")],
            ("blast", "target", "--rev", "HEAD", *extra), ("blast", "target", "--rev", "HEAD", "--json", *extra),
            ("blast", "--base", "HEAD~1", "--head", "HEAD", *extra),
            ("blast", "--base", "HEAD~1", "--head", "HEAD", "--json", *extra)]
    own = [cli(*run, "--show-private", cwd=where) for run in runs]
    assert all(r.code == 0 for r in own), [r.err for r in own]
    assert all(canaries(r.out) for r in own[:4] + own[6:]), [r.out for r in own]
    monkeypatch.setenv("GITLAB_CI", "true")
    for run, shown in zip(runs, own, strict=True):
        r = cli(*run, cwd=where)
        assert r.code == 0 and not canaries(r.out, r.err), (run, r.out, r.err)
        if run[run.index("--format") + 1] in ("dot", "mermaid") if "--format" in run else False:
            continue  # a picture draws the links that reach nothing as one: how many is the private note's
        assert r.out.count("\n") == shown.out.count("\n"), run  # the same nodes, edges and rows
    graph = cli("graph", "--rev", "HEAD", "--json", *extra, cwd=where).json()
    at = f"{ws}/" if ws else ""  # a private note's ID names its path from the repository's top, as in `ci`
    assert {"id": f"(private: {at}USER.md)", "type": None, "path": "USER.md"} in graph["nodes"]
    assert graph["counts"] == json.loads(own[1].out)["counts"]
    change = cli("blast", "--base", "HEAD~1", "--head", "HEAD", "--json", *extra, cwd=where).json()
    assert {"id": f"(private: {at}memory/old.md)", "type": None, "path": "memory/old.md", "change": "removed",
            "renamed": None} in change["changed"]
    monkeypatch.delenv("GITLAB_CI")
    # At the owner's terminal every view of the graph shows everything (`--mask-private` masks it).
    assert [cli(*run, cwd=where).out for run in runs] == [r.out for r in own]
    assert not canaries(cli(*runs[1], "--mask-private", cwd=where).out)


def test_masking_that_cannot_decide_privacy_prints_nothing(tmp_path: Path, cli: Any) -> None:
    """Outside Git, `private_paths` cannot be matched exactly: a masked `check` stops (exit 3) rather than guess,
    and says how to go on; the owner's own view still works."""
    (tmp_path / ".vivary").mkdir()
    (tmp_path / ".vivary" / "memory.toml").write_text('[memory.privacy]\nprivate_paths = ["drafts/**"]\n')
    (tmp_path / "tropo.toml").write_text("version = 1\n")
    (tmp_path / "a.md").write_text("# A\n\nSee [[gone]].\n")
    r = cli("check", "--json", cwd=tmp_path)
    assert (r.code, r.out) == (3, "") and "run `git init` there" in r.err
    assert cli("check", "--json", "--show-private", cwd=tmp_path).code == 1


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_name_of_several_notes_counts_the_private_ones_where_others_read(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch, layout: str) -> None:
    """`blast NAME` naming several notes lists them, as every command does; where others read it the private ones
    are counted, not named (a vault's IDs are paths: `clients/acme-canary/plan`). At the owner's terminal, as
    `check` there, all are named."""
    ws, cwd, extra = LAYOUTS[layout]
    at = f"{ws}/" if ws else ""
    repo.commit("init", {  # a vault: no tropo.toml, so IDs are paths and `plan` is a name of both notes
        f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["clients/acme-*"]\n',
        f"{at}notes/plan.md": "# Plan\n", f"{at}clients/acme-canary/plan.md": "# Plan\n\ncanary\n"})
    where = repo.path / cwd
    ids = f"{at}" if layout == "subfolder" else ""  # run below a vault's top: its IDs are paths from the top
    named = f"'plan' names 2 notes: '{ids}clients/acme-canary/plan', '{ids}notes/plan'; give one"
    counted = f"'plan' names 2 notes: '{ids}notes/plan', and 1 private note(s), not named here; give one"
    for run in ((), ("--json",)):
        own = cli("blast", "plan", *run, *extra, cwd=where)
        assert own.code == 2 and named in own.err, own.err
        r = cli("blast", "plan", *run, "--mask-private", *extra, cwd=where)
        assert (r.code, r.out) == (2, "") and counted in r.err and not canaries(r.err), r.err
        monkeypatch.setenv("CI", "true")
        r = cli("blast", "plan", *run, *extra, cwd=where)
        assert (r.code, r.out) == (2, "") and counted in r.err and not canaries(r.err), r.err
        assert named in cli("blast", "plan", *run, "--show-private", *extra, cwd=where).err
        monkeypatch.delenv("CI")


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_a_public_files_finding_naming_a_private_file_is_masked(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                                                layout: str) -> None:
    """A name clash or a duplicate ID is reported on the public file of the pair, naming the other: a private
    file's path (`clients/Acme-Canary/...`, spelt as only it spells it) or a private folder's. Where others read
    it the message is in fixed words; the finding keeps its code, path and line, and counts as before."""
    ws, cwd, extra = LAYOUTS[layout]
    at = f"{ws}/" if ws else ""
    repo.commit("init", {
        f"{at}tropo.toml": "version = 1\n",
        f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["clients/Acme-*", "data/Secret-*/"]\n',
        f"{at}clients/Acme-Canary/Twin.md": "# T\n", f"{at}clients/acme-canary/twin.md": "# T\n",  # E130
        f"{at}clients/Acme-Canary/plan.md": "# P\n", f"{at}notes/plan.md": "# P\n",  # E130
        f"{at}data/Secret-Canary/n.md": "# S\n", f"{at}data/secret-canary": "x"})  # W226: a file, a folder's name
    where = repo.path / cwd
    own = cli("check", "--json", "--show-private", *extra, cwd=where)
    assert {m for f in own.json()["findings"] for m in ("Acme-Canary", "Secret-Canary") if m in f["message"]} \
        == {"Acme-Canary", "Secret-Canary"}, own.out
    expected = [("clients/acme-canary/twin.md", 1, "error", "E130"), ("data/secret-canary", 1, "error", "W226"),
                ("notes/plan.md", 1, "error", "E130")]
    assert places(own) == expected

    def clean(r: Any) -> None:
        said = r.out + r.err
        assert "Acme-Canary" not in said and "Secret-Canary" not in said, said

    r = cli("check", "--json", *extra, cwd=where)
    assert r.code == own.code == 1 and places(r) == expected
    assert {f["message"] for f in r.json()["findings"]} == {NAMES_PRIVATE}
    clean(r)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    clean(r := cli("check", *extra, cwd=where))
    assert r.code == 1 and r.out.count(NAMES_PRIVATE) == 3
    clean(r := cli("ci", *extra, cwd=where))
    assert r.code == 1 and r.out.count(NAMES_PRIVATE) == 3


@pytest.mark.parametrize("layout", ["top", "subfolder", "root"])
def test_case_twins_in_a_vault_name_no_private_twin_where_others_read(repo: Repo, cli: Any, layout: str) -> None:
    """W226 in a vault (IDs are paths, so twins are two notes): the public twin's finding names the private
    one as only it spells it."""
    at = "" if layout == "top" else "vault/"
    repo.commit("init", {f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["Acme-*"]\n',
                         f"{at}Acme-Canary.md": "# A\n", f"{at}acme-canary.md": "# a\n"})
    where = repo.path / "vault" if layout == "subfolder" else repo.path
    extra = ["--root", "vault"] if layout == "root" else []
    ids = at if layout == "subfolder" else ""  # run below a vault's top: paths from the top
    own = cli("check", *extra, cwd=where)
    assert own.code == 1 and f"'{ids}Acme-Canary.md' are one file on macOS and Windows" in own.out, own.out
    r = cli("check", "--mask-private", *extra, cwd=where)
    assert r.code == 1 and "Acme-Canary" not in r.out + r.err, r.out
    assert f"{ids}acme-canary.md:1: error W226: {NAMES_PRIVATE}" in r.out, r.out  # a vault is strict


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_whether_a_duplicate_id_names_a_private_file_is_not_read_from_its_words(repo: Repo, layout: str) -> None:
    """E130 names the note that has the id already. Masking learns which note that is from the graph that made the
    finding (`Graph.duplicates`), not by reading the message: reworded, a finding naming a private note is still
    masked, and one naming a public note still shown. A graph that does not say (an older cache) masks every E130."""
    ws_dir, cwd, extra = LAYOUTS[layout]
    at = f"{ws_dir}/" if ws_dir else ""
    repo.commit("init", {
        f"{at}tropo.toml": "version = 1\n",
        f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["clients/Acme-*"]\n',
        f"{at}clients/Acme-Canary/plan.md": "# P\n", f"{at}notes/plan.md": "# P\n",  # E130 naming a private note
        f"{at}pub/idea.md": "# I\n", f"{at}zz/idea.md": "# I\n"})  # E130 naming a public note
    ws = open_workspace(repo.path / cwd, rev="HEAD", root=extra[1] if extra else None)
    graph = ws.graph()
    found = {f.path: f for f in graph.findings if f.code == "E130"}
    assert sorted(found) == ["notes/plan.md", "zz/idea.md"], graph.findings

    def reworded(f: Finding, old: str, new: str) -> Finding:
        assert old in f.message, f.message
        return msgspec.structs.replace(f, message=f.message.replace(old, new))

    for words in ((), ("has it already", "owns it already"), ("duplicate document id", "an id taken twice,"),
                  (": ", " -> ")):
        naming = [reworded(f, *words) if words else f for f in (found["notes/plan.md"], found["zz/idea.md"])]
        assert [f.message == NAMES_PRIVATE for f in mask_findings(ws, naming)] == [True, False], words
    older = msgspec.structs.replace(graph, duplicates={})
    assert naming_private(ws, older, found.values()) == frozenset(found.values())
