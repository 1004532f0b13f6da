"""action.yml: validated against the published schema, and its steps executed locally.

GitHub's runners and servers cannot exist here. The harness below does what the runner does for a
composite action, as far as this action needs it: it sets the `GITHUB_*` environment (a
`pull_request` event payload, `GITHUB_OUTPUT` and `GITHUB_STEP_SUMMARY` files per step,
`GITHUB_ACTION_PATH`, `GITHUB_WORKSPACE`), evaluates the only expressions the action uses
(`inputs.*`, `steps.ID.outputs.*`) in `env:` values, runs each `run:` with `bash -e`, collects step
outputs from the output file (both the `name=value` and the `name<<DELIMITER` forms) and maps the
action's `outputs:`. The two `uses: actions/cache/*` steps talk to GitHub's cache service, which
cannot exist here either: a folder of copies stands in for it (`fake_cache`). It then checks a real
two-commit repository: annotation lines, summary, outputs.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import Repo, git

ROOT = Path(__file__).resolve().parents[1]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
_EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
TROPO = """version = 1
[types.module]
folder = "modules"
optional = { depends = "ref-list", uses = "ref" }
"""


def test_action_yml_matches_the_published_schema() -> None:
    exe = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent)) or shutil.which("check-jsonschema")
    if exe is None:
        pytest.skip("check-jsonschema is not installed (it is in the dev extra)")
    r = subprocess.run([exe, "--builtin-schema", "vendor.github-actions", str(ROOT / "action.yml")],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr


def test_no_run_script_interpolates_expressions() -> None:
    """Script injection: `${{ }}` in a `run:` would paste PR-controlled text into bash."""
    for step in ACTION["runs"]["steps"]:
        if "uses" in step:
            assert step["uses"].startswith("actions/cache/"), step["name"]  # GitHub's own, pinned to a major
            continue
        assert "${{" not in step.get("run", ""), step["name"]
        assert step.get("shell") == "bash"
    for name in ("install.sh", "sign.sh", "review.sh", "index.sh", "cache_key.py"):
        assert "${{" not in (ROOT / "action" / name).read_text()


@dataclass
class Run:
    code: int
    log: str
    outputs: dict[str, str]
    summary: str
    steps: dict[str, dict[str, str]] = field(default_factory=dict)


def parse_output_file(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
        i += 1
    return out


def condition(text: str, evaluate: Any) -> bool:
    """The `if:` forms action.yml uses: `steps.X.outputs.Y != ''` terms joined by `&&`."""
    ok = True
    for term in text.split("&&"):
        got = re.fullmatch(r"\s*(steps\.[\w-]+\.outputs\.[\w-]+)\s*(==|!=)\s*'([^']*)'\s*", term)
        assert got, f"the harness does not evaluate `if: {text}`; keep action.yml simple"
        value = evaluate("${{ " + got.group(1) + " }}")
        ok = ok and ((value == got.group(3)) == (got.group(2) == "=="))
    return ok


def fake_cache(step: dict[str, Any], store: Path, evaluate: Any) -> dict[str, str]:
    """actions/cache/restore and actions/cache/save, with a folder standing in for GitHub's cache
    service (which cannot exist here): entries are whole copies of `path`, found by exact `key`."""
    path, key = Path(evaluate(step["with"]["path"])), evaluate(step["with"]["key"])
    entry = store / hashlib.sha256(key.encode()).hexdigest()
    if step["uses"].startswith("actions/cache/restore@"):
        if not entry.is_dir():
            return {"cache-hit": "false"}
        shutil.rmtree(path, ignore_errors=True)
        shutil.copytree(entry, path, symlinks=True)
        return {"cache-hit": "true", "cache-primary-key": key, "cache-matched-key": key}
    assert step["uses"].startswith("actions/cache/save@"), step["uses"]
    if not entry.exists() and path.is_dir():  # a key is written once, as GitHub's cache does
        shutil.copytree(path, entry, symlinks=True)
    return {}


def run_action(workspace: Path, tmp: Path, inputs: dict[str, str], event: dict[str, Any],
               event_name: str = "pull_request", cache: Path | None = None,
               env_extra: dict[str, str] | None = None) -> Run:
    values = {name: spec.get("default", "") for name, spec in ACTION["inputs"].items()}
    values.update(inputs)
    event_path = tmp / "event.json"
    event_path.write_text(json.dumps(event))
    summary = tmp / "step_summary.md"
    summary.write_text("")
    steps: dict[str, dict[str, str]] = {}

    def expr(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            e = m.group(1)
            if e.startswith("inputs."):
                return str(values[e.removeprefix("inputs.")])
            got = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", e)
            if got:
                return steps.get(got.group(1), {}).get(got.group(2), "")
            raise AssertionError(f"the harness does not evaluate ${{{{ {e} }}}}; keep action.yml simple")
        return _EXPR.sub(one, text)

    base_env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    base_env.update({
        "GITHUB_ACTIONS": "true", "CI": "true", "GITHUB_EVENT_NAME": event_name,
        "GITHUB_EVENT_PATH": str(event_path), "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_ACTION_PATH": str(ROOT), "GITHUB_REPOSITORY": "owner/notes", "GITHUB_STEP_SUMMARY": str(summary),
        "RUNNER_TEMP": str(tmp), "PATH": "/usr/bin:/bin", "RUNNER_OS": "Linux",
    })
    base_env.update(env_extra or {})
    log: list[str] = []
    code = 0
    for n, step in enumerate(ACTION["runs"]["steps"]):
        if "if" in step and not condition(step["if"], expr):
            continue
        if "uses" in step:
            got = fake_cache(step, cache or tmp / "no-cache-service", expr)
            if "id" in step:
                steps[step["id"]] = got
            continue
        output = tmp / f"output_{n}"
        output.write_text("")
        env = dict(base_env, GITHUB_OUTPUT=str(output))
        env.update({k: expr(str(v)) for k, v in step.get("env", {}).items()})
        script = tmp / f"step_{n}.sh"
        script.write_text(step["run"])
        # What the runner runs for `shell: bash`.
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        log.append(proc.stdout)
        if "id" in step:
            steps[step["id"]] = parse_output_file(output.read_text())
        if proc.returncode != 0:
            code = proc.returncode
            break  # a composite stops at its first failing step
    outputs = {name: expr(spec["value"]) for name, spec in ACTION["outputs"].items()}
    return Run(code, "".join(log), outputs, summary.read_text(), steps)


def pr_repo(repo: Repo) -> tuple[str, str]:
    base = repo.commit("base", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\n---\n# A\n",
        "modules/b.md": "---\ndepends: [a]\n---\n# B\n",
        "modules/c.md": "---\ndepends: [b]\nuses: a\n---\n# C\n",
        "notes/free.md": "# Free\n\nSee [[b]].\n",
    })
    repo.git("rm", "-q", "modules/b.md")
    head = repo.commit("head", files={"modules/a.md": "---\ndepends: [x]\n---\n# A2\n"})
    return base, head


def pr_event(base: str, head: str, fork: bool = False) -> dict[str, Any]:
    return {"action": "synchronize", "number": 7, "pull_request": {
        "number": 7,
        "base": {"sha": base, "ref": "main", "repo": {"full_name": "owner/notes"}},
        "head": {"sha": head, "ref": "feature", "repo": {"full_name": "fork/notes" if fork else "owner/notes"}},
    }}


def tool_inputs() -> dict[str, str]:
    # The install step's pip path needs PyPI; the pre-commit tests prove the package installs. Here the
    # action is pointed at this environment's git-vivary, which the same step then reports.
    return {"vivary-git": str(Path(sys.executable).parent / "git-vivary"), "python": sys.executable}


def test_pull_request_review_end_to_end(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "sarif": str(tmp_path / "vivary.sarif")},
                   pr_event(base, head, fork=True))
    assert r.code == 1, r.log  # fail-on-error: the head tree has errors
    annotations = [line for line in r.log.splitlines() if line.startswith("::")]
    assert annotations == [
        "::error file=modules/a.md,line=2,title=vivary W220::field 'depends': ref 'x' matches no document id",
        "::error file=modules/c.md,line=2,title=vivary W220::field 'depends': ref 'b' matches no document id",
        "::error file=notes/free.md,line=3,title=vivary W221::wikilink [[b]] matches no document id (looked for 'b')",
        "::notice file=modules/a.md,line=1,title=vivary%3A referenced note changed::1 note(s) reference 'a' "
        "(modified): c. `git vivary blast a` lists everything that reaches it.",
    ]
    assert r.outputs == {"errors": "3", "warnings": "0", "impacted": "2", "changed": "2", "broken-edges": "3",
                         "sarif": str(tmp_path / "vivary.sarif"), "fork": "true"}
    assert r.summary.startswith("## ❌ vivary: 3 error(s), 0 warning(s) in HEAD\n")
    assert f"### Changed notes ({base}..HEAD)" in r.summary
    assert "| removed | b | module | modules/b.md |" in r.summary
    assert "```mermaid\nflowchart LR\n" in r.summary
    assert json.loads((tmp_path / "vivary.sarif").read_text())["version"] == "2.1.0"


def test_fail_on_error_false_and_clean_change(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "fail-on-error": "false", "summary": "false"},
                   pr_event(base, head))
    assert r.code == 0 and r.outputs["errors"] == "3" and r.summary == ""
    fixed = repo.commit("fix", files={"modules/a.md": "---\n---\n# A\n", "modules/c.md": "---\nuses: a\n---\n# C\n",
                                      "notes/free.md": "# Free\n"})
    r = run_action(repo.path, tmp_path, tool_inputs(), pr_event(base, fixed))
    assert r.code == 0, r.log
    assert r.outputs["errors"] == "0" and r.summary.startswith("## ✅ vivary: 0 error(s)")


def test_shallow_checkout_fetches_the_base(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--depth=1", f"file://{repo.path}", str(clone))  # as actions/checkout does
    assert git(clone, "cat-file", "-e", f"{base}^{{commit}}", check=False) == ""
    r = run_action(clone, tmp_path, tool_inputs(), pr_event(base, head))
    assert f"vivary: {base} is not in this checkout; fetching it" in r.log
    assert r.outputs["impacted"] == "2", r.log
    assert "fetching with --deepen" not in r.log  # the head records the base as its parent: nothing to deepen


def test_shallow_checkout_deepens_to_the_merge_base(repo: Repo, tmp_path: Path) -> None:
    """A base that moved on after the branch point is read as their merge base, which a depth-1 checkout lacks:
    the action deepens the history in steps until Git finds it, so the pull request is not blamed for the typo
    the base fixed since (and `git vivary ci` never compares with the base's tip)."""
    from test_gates_ci import diverged

    base, head = diverged(repo, main_moves=12)  # the branch point is 12 commits below the base's tip
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{repo.path}", str(clone))
    r = run_action(clone, tmp_path, tool_inputs(), pr_event(base, head))
    assert r.code == 0, r.log
    assert f"vivary: the merge base of {base} and HEAD is not in this checkout; fetching with --deepen=10" in r.log
    assert "fetching with --deepen=100\n" in r.log and "--deepen=1000" not in r.log and "--unshallow" not in r.log
    assert f"::warning title=vivary::{base} is not an ancestor of HEAD: compared with their merge base" in r.log
    assert r.outputs["changed"] == "1", r.log  # only b: main's fix is not the pull request's edit


def _move_on(repo: Repo, branch: str, commits: int) -> str:
    """`commits` more commits on `branch` (no file changes), written by `git fast-import` in one go: a history
    deep enough for the action's last deepening steps costs a second, not a thousand `git commit`s."""
    stream = "".join(
        f"commit refs/heads/{branch}\ncommitter Dev <dev@example.com> {1_700_000_000 + i} +0000\ndata 9\nmoves on\n"
        + (f"from refs/heads/{branch}^0\n" if i == 0 else "") + "\n"
        for i in range(commits)
    )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.path, input=stream.encode(), check=True)
    return repo.git("rev-parse", f"refs/heads/{branch}").strip()


@pytest.mark.parametrize(("moves", "last_step"), [(150, "--deepen=1000"), (1_200, "--unshallow")])
def test_a_long_way_to_the_merge_base_takes_the_last_steps(repo: Repo, tmp_path: Path, moves: int,
                                                          last_step: str) -> None:
    """The steps after --deepen=100: a base 150 commits past the branch point needs --deepen=1000, one 1,200 past it
    (more than the 1,110 the steps fetch) the whole history; each is logged and the change is still read against
    the merge base."""
    from test_gates_ci import diverged

    _, head = diverged(repo)
    base = _move_on(repo, "main", moves)
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--depth=1", "--branch", "feature", f"file://{repo.path}", str(clone))
    r = run_action(clone, tmp_path, tool_inputs(), pr_event(base, head))
    assert r.code == 0, r.log
    steps = re.findall(r"fetching with (--deepen=\d+|--unshallow)", r.log)
    assert steps == ["--deepen=10", "--deepen=100", "--deepen=1000", "--unshallow"][:steps.index(last_step) + 1], r.log
    assert steps[-1] == last_step
    assert git(clone, "merge-base", base, head).strip(), r.log
    assert r.outputs["changed"] == "1", r.log  # only b: main's fix is not the pull request's edit


def test_unfetchable_base_says_what_to_set(repo: Repo, tmp_path: Path) -> None:
    _, head = pr_repo(repo)
    missing = "0123456789abcdef0123456789abcdef01234567"
    r = run_action(repo.path, tmp_path, tool_inputs(), pr_event(missing, head))
    assert r.code == 2
    assert f"::error title=vivary::commit {missing} is not in this checkout and could not be fetched; " \
           "set 'fetch-depth: 0' on actions/checkout" in r.log


def test_hostile_inputs_and_payload_stay_data(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    event = pr_event(base, head)
    event["pull_request"]["base"]["sha"] = "$(touch pwned)"  # not a commit id: ignored
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "root": "$(touch pwned2)"}, event)
    assert not (repo.path / "pwned").exists() and not (repo.path / "pwned2").exists()
    assert r.code == 2, r.log  # the hostile root reached vivary as a plain (unknown) folder name
    assert "--root $(touch pwned2): there is no folder '$(touch pwned2)' in HEAD" in r.log and "Traceback" not in r.log
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "base": "--output=/tmp/x"}, event)
    assert r.code == 2 and "starts with '-'" in r.log


def test_push_event_and_opt_in_index_step(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    repo.git("remote", "add", "origin", str(origin))
    inputs = {**tool_inputs(), "fail-on-error": "false", "build-index": "true", "push-refs": "true"}
    r = run_action(repo.path, tmp_path, inputs, {"before": base, "after": head}, event_name="push")
    assert r.code == 0, r.log
    assert r.outputs["impacted"] == "2"
    # Memory is not enabled in this workspace: index refuses (exit 2), the job says so and goes on.
    assert "::warning title=vivary::build-index: git vivary index --yes exited 2" in r.log
    local = repo.git("for-each-ref", "--format=%(refname) %(objectname)", "refs/vivary/")
    assert "refs/vivary/cache " in local, "the review recorded the checked tree"
    assert git(origin, "for-each-ref", "--format=%(refname) %(objectname)", "refs/vivary/") == local
    fork = run_action(repo.path, tmp_path, inputs, pr_event(base, head, fork=True))
    assert "push-refs: skipped for a pull request from a fork" in fork.log, fork.log


def test_sarif_output_names_only_a_file_this_run_wrote(repo: Repo, tmp_path: Path) -> None:
    """A run that stops before writing SARIF must not tell upload-sarif to upload a missing (or a stale,
    pull-request-supplied) file: the `sarif` output is set only after `git vivary ci` wrote it."""
    base, head = pr_repo(repo)
    sarif = repo.path / "vivary.sarif"
    sarif.write_text('{"forged": true}\n')  # e.g. committed by the pull request
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "sarif": str(sarif), "root": "nowhere"},
                   pr_event(base, head))
    assert r.code == 2, r.log  # usage error: --root names no folder of the head tree
    assert r.outputs["sarif"] == "" and "sarif" not in r.steps["review"]
    assert not sarif.exists()  # the stale file is gone, so no later step can upload it
    r = run_action(repo.path, tmp_path, {**tool_inputs(), "sarif": str(sarif)}, pr_event(base, head))
    assert r.code == 1 and r.outputs["sarif"] == str(sarif)
    assert json.loads(sarif.read_text())["version"] == "2.1.0"


def test_fork_output_lets_a_workflow_skip_the_sarif_upload(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    inputs = {**tool_inputs(), "fail-on-error": "false"}
    assert run_action(repo.path, tmp_path, inputs, pr_event(base, head, fork=True)).outputs["fork"] == "true"
    assert run_action(repo.path, tmp_path, inputs, pr_event(base, head)).outputs["fork"] == "false"


def test_docs_sample_grants_what_upload_sarif_needs() -> None:
    """docs/action.md's workflow uploads SARIF: the job must grant `security-events: write` and skip forks."""
    text = (ROOT / "docs" / "action.md").read_text()
    sample = yaml.safe_load(text.split("```yaml\n", 1)[1].split("```", 1)[0])
    steps = sample["jobs"]["vivary"]["steps"]
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif")]
    assert uploads, "the sample shows the SARIF upload"
    perms = sample.get("permissions") or sample["jobs"]["vivary"].get("permissions")
    assert perms == {"contents": "read", "security-events": "write"}
    assert "steps.vivary.outputs.fork" in uploads[0]["if"]
    assert "## Fork pull requests" in text


def stub_wheel(folder: Path, version: str) -> Path:
    """A wheel whose `git-vivary` runs this environment's vivary-git: the install step's pip path,
    offline (PIP_NO_INDEX), in seconds, without PyPI."""
    import zipfile

    name = f"vivary_git_stub-{version}-py3-none-any.whl"
    dist = f"vivary_git_stub-{version}.dist-info"
    files = {
        "vivary_git_stub.py": f"import os, sys\ndef main():\n    os.execv({sys.executable!r}, "
                              f"[{sys.executable!r}, '-m', 'vivary_git.main', *sys.argv[1:]])\n",
        f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: vivary-git-stub\nVersion: {version}\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": "[console_scripts]\ngit-vivary = vivary_git_stub:main\n",
    }
    path = folder / name
    with zipfile.ZipFile(path, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{dist}/RECORD", "".join(f"{rel},,\n" for rel in files) + f"{dist}/RECORD,,\n")
    return path


def test_install_is_cached_between_runs(repo: Repo, tmp_path: Path) -> None:
    base, head = pr_repo(repo)
    store, wheels = tmp_path / "cache-service", tmp_path / "wheels"
    store.mkdir()
    wheels.mkdir()
    wheel = stub_wheel(wheels, "1.0")
    offline = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    inputs = {"python": sys.executable, "install": str(wheel), "fail-on-error": "false"}
    first = run_action(repo.path, tmp_path, inputs, pr_event(base, head), cache=store, env_extra=offline)
    assert first.code == 0, first.log
    key = first.steps["cache-key"]["key"]
    assert key.startswith("vivary-git-venv-v1-Linux-") and first.steps["cache-restore"]["cache-hit"] == "false"
    assert "using the cached vivary-git install" not in first.log and first.outputs["errors"] == "3"
    venv = tmp_path / "vivary-git-venv"
    assert first.steps["install"]["bin"] == str(venv / "bin" / "git-vivary")
    assert len(list(store.iterdir())) == 1  # saved right after the install, although the review failed

    # A new runner: nothing in RUNNER_TEMP, and pip could not install (the wheel is gone).
    shutil.rmtree(venv)
    wheel.unlink()
    second = run_action(repo.path, tmp_path, inputs, pr_event(base, head), cache=store, env_extra=offline)
    assert second.code == 0, second.log
    assert second.steps["cache-key"]["key"] == key and second.steps["cache-restore"]["cache-hit"] == "true"
    assert f"vivary: using the cached vivary-git install ({key})" in second.log
    assert second.outputs["errors"] == "3"

    # What pip installs is part of the key: another install value builds (and caches) a new venv.
    other = stub_wheel(wheels, "2.0")
    third = run_action(repo.path, tmp_path, {**inputs, "install": str(other)}, pr_event(base, head), cache=store,
                       env_extra=offline)
    assert third.code == 0, third.log
    assert third.steps["cache-key"]["key"] != key and "using the cached" not in third.log
    assert len(list(store.iterdir())) == 2
    # No cache with `cache: false`, or when `vivary-git` names an executable (nothing is installed).
    off = run_action(repo.path, tmp_path, {**inputs, "cache": "false"}, pr_event(base, head), cache=store,
                     env_extra=offline)
    assert off.steps["cache-key"]["key"] == "" and "cache-restore" not in off.steps
    assert run_action(repo.path, tmp_path, tool_inputs(), pr_event(base, head)).steps["cache-key"]["key"] == ""


def test_cache_key_follows_the_action_source(tmp_path: Path) -> None:
    """With the default `install` (the action's own source) the key is a digest of that source, so a
    moving ref such as @main never reuses a venv built from older code."""
    src = tmp_path / "action-src"
    (src / "vivary_git").mkdir(parents=True)
    (src / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (src / "vivary_git" / "a.py").write_text("A = 1\n")

    def key() -> str:
        env = dict(os.environ, GITHUB_ACTION_PATH=str(src), RUNNER_TEMP=str(tmp_path), RUNNER_OS="Linux")
        env.pop("VIVARY_INSTALL", None)
        env.pop("VIVARY_GIT", None)
        out = subprocess.run([sys.executable, str(ROOT / "action" / "cache_key.py")], env=env, text=True,
                             capture_output=True, check=True).stdout
        return parse_output_file(out)["key"]

    before = key()
    assert before == key()
    (src / "vivary_git" / "a.py").write_text("A = 2\n")
    assert key() != before


def _ssh_key(tmp_path: Path) -> tuple[str, str]:
    key = tmp_path / "keys" / "vivary-ci"
    key.parent.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vivary-ci", "-f", str(key)], check=True)
    return key.read_text(), (tmp_path / "keys" / "vivary-ci.pub").read_text().strip()


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (OpenSSH)")
def test_sign_cache_signs_what_the_run_records_and_pushes(repo: Repo, tmp_path: Path) -> None:
    """`sign-cache` with a `signing-key` (on GitHub, `${{ secrets.… }}`; here the harness passes the key
    text as the input value, since GitHub's secret store cannot exist here): the cache commits this run
    writes are signed with Git's SSH signing, the checkout's config and files are left as they were, and
    a clone that allows the key reads the pushed cache under `vivary.cacheTrust signed`."""
    private, public = _ssh_key(tmp_path)
    base, head = pr_repo(repo)
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    repo.git("remote", "add", "origin", str(origin))
    repo.git("push", "-q", "origin", "main")
    config_before = (repo.path / ".git" / "config").read_text()
    inputs = {**tool_inputs(), "fail-on-error": "false", "push-refs": "true", "sign-cache": "true",
              "signing-key": private}
    for d in ("run1", "run2"):
        (tmp_path / d).mkdir()
    r = run_action(repo.path, tmp_path / "run1", inputs, {"before": base, "after": head}, event_name="push")
    assert r.code == 0, r.log
    assert "PRIVATE KEY" not in r.log
    first = repo.git("rev-parse", "refs/vivary/cache").strip()
    assert "gpgsig" in repo.git("cat-file", "commit", first), "the recorded cache commit is signed"
    assert git(origin, "rev-parse", "refs/vivary/cache").strip() == first
    assert (repo.path / ".git" / "config").read_text() == config_before, "nothing is set in the checkout"
    assert repo.git("status", "--porcelain") == ""
    # The next run (a new tree) builds on its own signed commit: the key verifies its own signatures.
    repo.commit("more", {"modules/d.md": "---\ndepends: [a]\n---\n# D\n"})
    later = repo.git("rev-parse", "HEAD").strip()
    r = run_action(repo.path, tmp_path / "run2", inputs, {"before": head, "after": later}, event_name="push")
    assert r.code == 0, r.log
    second = repo.git("rev-parse", "refs/vivary/cache").strip()
    assert second != first and repo.git("rev-parse", f"{second}^").strip() == first
    # A clone that lists the key in its allowed-signers file trusts what the action pushed.
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", str(origin), str(me))
    allowed = tmp_path / "allowed_signers"
    allowed.write_text(f'vivary-ci namespaces="git" {public}\n')
    git(me, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    git(me, "config", "vivary.cacheTrust", "signed")
    vivary = tool_inputs()["vivary-git"]
    assert subprocess.run([vivary, "sync", "fetch"], cwd=me, capture_output=True, check=False).returncode == 0
    said = subprocess.run([vivary, "cache", "verify"], cwd=me, capture_output=True, text=True, check=False).stdout
    assert f"read {second[:12]}" in said, said


@pytest.mark.parametrize(("inputs", "says"), [
    ({"sign-cache": "true", "signing-key": "not a key"}, "signing-key is not an unencrypted SSH private key"),
    ({"signing-key": "-----BEGIN OPENSSH PRIVATE KEY-----"}, "signing-key is set but sign-cache is not 'true'"),
    ({"sign-cache": "yes"}, "sign-cache must be 'true' or 'false'"),
])
def test_sign_cache_refuses_what_it_cannot_use(repo: Repo, tmp_path: Path, inputs: dict[str, str], says: str) -> None:
    base, head = pr_repo(repo)
    r = run_action(repo.path, tmp_path, {**tool_inputs(), **inputs}, pr_event(base, head))
    assert r.code == 2 and f"::error title=vivary::{says}" in r.log, r.log
    assert "BEGIN OPENSSH" not in r.log


def _monorepo(repo: Repo) -> tuple[str, str, str]:
    """A workspace in `docs/` next to another team's `other/`; the pull request edits a note of the branch point and
    the other folder, and main moves on (a fix in docs/, an edit in other/): the base is no ancestor of the head.
    (base, head, their merge base), with the source serving partial clones."""
    repo.git("config", "uploadpack.allowFilter", "true")
    point = repo.commit("branch point", files={
        "docs/tropo.toml": TROPO, "docs/modules/core.md": "---\n---\n# Core\n",
        "docs/modules/a.md": "---\ndepends: [corr]\n---\n# A\n", "other/x.md": "x0\n", "other/deep/y.md": "y0\n",
    })
    repo.git("checkout", "-q", "-b", "feature")
    head = repo.commit("pr", files={"docs/modules/core.md": "---\ndepends: [gone]\n---\n# Core 2\n",
                                    "docs/modules/b.md": "---\ndepends: [a]\n---\n# B\n", "other/x.md": "x1\n"})
    repo.git("checkout", "-q", "main")
    base = repo.commit("main moves on", files={"docs/modules/a.md": "---\ndepends: [core]\n---\n# A\n",
                                               "other/x.md": "x2\n", "other/deep/y.md": "y2\n"})
    return base, head, point


def _objects(where: Path, *revs: str) -> dict[str, str]:
    """Every object the repository at `where` has (no rev), or the objects of `revs` there: id -> type."""
    listed = (git(where, "rev-list", "--objects", "--no-walk", *revs) if revs else
              git(where, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)"))
    out = subprocess.run(["git", "cat-file", "--batch-check=%(objectname) %(objecttype)"], cwd=where, text=True,
                         input="".join(line.split()[0] + "\n" for line in listed.splitlines()), capture_output=True,
                         check=True).stdout
    return dict(line.split() for line in out.splitlines())


def _fetches(trace: Path) -> list[str]:
    return [line.split("built-in: ", 1)[1] for line in trace.read_text().splitlines() if "built-in: git fetch" in line]


@pytest.mark.parametrize("tree_filter", ["blob:none", "tree:0"])
def test_a_partial_checkout_fetches_what_the_review_reads_in_one_batch(repo: Repo, tmp_path: Path,
                                                                       tree_filter: str) -> None:
    """actions/checkout with `filter: blob:none` (or `tree:0`): the commits the action fetches come without their
    files, which `git vivary ci` reads and never fetches. The action fetches, in one batch, the files of the workspace
    folder of the head and of the merge base it is compared with, and nothing of the other folders: the review is the
    full clone's."""
    base, head, point = _monorepo(repo)
    runs: dict[str, Run] = {}
    before: set[str] = set()
    for kind in ("full", "partial"):
        clone, run = tmp_path / kind, tmp_path / f"run-{kind}"
        run.mkdir()
        extra = [f"--filter={tree_filter}"] if kind == "partial" else []
        git(tmp_path, "clone", "-q", "--no-local", "--depth=1", *extra, "--branch", "feature", f"file://{repo.path}",
            str(clone))
        before = set(_objects(clone))
        runs[kind] = run_action(clone, run, {**tool_inputs(), "root": "docs"}, pr_event(base, head),
                                env_extra={"GIT_TRACE": str(run / "trace")})
    full, partial = runs["full"], runs["partial"]
    assert partial.code == full.code == 1, partial.log
    assert [a for a in partial.log.splitlines() if a.startswith("::")] == \
           [a for a in full.log.splitlines() if a.startswith("::")]
    assert partial.outputs == full.outputs and partial.summary == full.summary
    assert f"compared with their merge base {point[:12]}" in partial.log
    assert "is a partial clone" not in full.log and "Traceback" not in partial.log
    said = re.findall(r"vivary: this checkout is a partial clone that lacks (\d+) file\(s\) or folder\(s\) the review "
                      r"reads under docs; fetching them from origin in one batch", partial.log)
    assert len(said) == 1 and int(said[0]) > 0, partial.log
    # The full clone's fetches (the base, the deepening), then one for the files (a treeless clone's first asks for
    # the folders on the way to docs/, alone), and it is the last: `git vivary ci` started no lazy fetch of Git's.
    fetches, before_ours = _fetches(tmp_path / "run-partial" / "trace"), _fetches(tmp_path / "run-full" / "trace")
    assert fetches[:len(before_ours)] == before_ours and any("--deepen=10" in f for f in before_ours), fetches
    ours = fetches[len(before_ours):]
    assert [f.split(" --stdin")[0].rsplit(" ", 1)[1] for f in ours] == \
           ["--filter=tree:0", "--no-filter"][tree_filter == "blob:none":], fetches
    # Nothing outside docs/: what came is commits, folders (a treeless clone's: only those on the way to docs/) and
    # what docs/ holds; none of other/'s files (nor, in a treeless clone, its folders), which differ from the head's.
    clone = tmp_path / "partial"
    commits = git(repo.path, "rev-list", "--all").split()
    everywhere = _objects(repo.path, *commits)
    folders = ({git(repo.path, "rev-parse", f"{c}^{{tree}}").strip() for c in commits} if tree_filter == "tree:0"
               else {oid for oid, kind in everywhere.items() if kind == "tree"})
    docs = _objects(repo.path, *(f"{c}:docs" for c in commits))
    other = (_objects(repo.path, *(f"{c}:other" for c in commits)).keys() - folders
             - _objects(repo.path, f"{head}:other").keys())
    assert other and not other & _objects(clone).keys()
    came = (_objects(clone).keys() - before) & everywhere.keys()  # not what the review wrote (refs/vivary/cache)
    assert came <= set(commits) | folders | docs.keys()
    for rev in (head, point):  # as `git rev-list --objects --missing=print` sees them: nothing of docs/ missing
        assert not [line for line in git(clone, "rev-list", "--objects", "--missing=print", f"{rev}:docs").splitlines()
                    if line.startswith("?")], rev


def test_a_partial_checkout_fetches_the_base_alone_not_its_history(repo: Repo, tmp_path: Path) -> None:
    """Asked whether it has a commit, `git cat-file -e` in a partial clone fetches the commit it lacks with the whole
    history below it (every commit and folder): the action asks without fetching, and fetches the base at depth 1."""
    repo.git("config", "uploadpack.allowFilter", "true")
    repo.commit("start", files={"README.md": "hi\n"})
    _move_on(repo, "main", 30)
    repo.git("reset", "-q", "--hard")
    base, head = pr_repo(repo)
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--no-local", "--depth=1", "--filter=blob:none", f"file://{repo.path}", str(clone))
    r = run_action(clone, tmp_path, tool_inputs(), pr_event(base, head))
    assert r.code == 1 and r.outputs["impacted"] == "2", r.log
    assert f"vivary: {base} is not in this checkout; fetching it" in r.log
    history = set(git(repo.path, "rev-list", "--all").split())
    assert history & _objects(clone).keys() == {base, head}, "none of the 31 commits below the base came"


def test_a_partial_checkout_whose_fetch_fails_is_refused_by_ci_naming_what_is_missing(repo: Repo,
                                                                                      tmp_path: Path) -> None:
    """The files cannot be fetched (here the remote is gone): the step goes on, and `git vivary ci` says what is
    missing and how to fetch it, with exit 2, never a verdict on a tree it could not read."""
    repo.git("config", "uploadpack.allowFilter", "true")
    base, head = pr_repo(repo)
    clone = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", "--no-local", "--filter=blob:none", f"file://{repo.path}", str(clone))
    repo.path.rename(tmp_path / "gone")
    r = run_action(clone, tmp_path, tool_inputs(), pr_event(base, head))
    assert r.code == 2, r.log
    assert "vivary: this checkout is a partial clone that lacks 2 file(s) or folder(s) the review reads; fetching " \
           "them from origin in one batch" in r.log
    assert f"git vivary ci: --base {base}: modules/a.md and 1 other file are not in this clone: it is a partial " \
           "clone" in r.log
    assert "Traceback" not in r.log and r.outputs["errors"] == ""


def test_merge_group_event_reviews_the_queued_change_against_its_base(repo: Repo, tmp_path: Path) -> None:
    """A merge queue (GitHub's `merge_group` event) runs the required checks on the queued merge: a base that had
    errors already must not fail a change that adds none, as the pull request's own run passed it."""
    old = repo.commit("base", files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\ndepends: [gone]\n---\n# A\n",  # an error the base has already
    })
    queued = repo.commit("queued", files={"modules/b.md": "---\ndepends: [a]\n---\n# B\n"})
    event = {"merge_group": {"head_sha": queued, "head_ref": "refs/heads/gh-readonly-queue/main/pr-7-" + old,
                             "base_sha": old, "base_ref": "refs/heads/main"}}
    r = run_action(repo.path, tmp_path, tool_inputs(), event, event_name="merge_group")
    assert r.code == 0, r.log
    assert f"new since {old}" in r.log, r.log
    assert r.outputs["changed"] == "1" and r.outputs["errors"] == "1"
    assert "::notice file=modules/a.md,line=2,title=vivary W220 (already in the base)::" in r.log, r.log
