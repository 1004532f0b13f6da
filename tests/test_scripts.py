"""scripts/test, run for real in a copy of its folder whose tools are stand-ins that record how they were
called (the real ones are the suite itself): `--quick` leaves out the Cognee extra and its end-to-end
tests, and passes the rest of the command line to pytest."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

RECORDER = """#!/bin/sh
printf '%s|%s|%s\\n' "$(basename "$0")" "$*" "${VIVARY_COGNEE_UNAVAILABLE:-}" >> "$RECORD"
"""


def _tool(path: Path, text: str = RECORDER) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    shutil.copy2(ROOT / "scripts" / "test", project / "scripts" / "test")
    for tool in ("python", "ruff", "mypy", "pytest"):
        _tool(project / ".venv" / "test" / "bin" / tool)
    _tool(project / ".venv" / "peer" / "bin" / "python")
    # The interpreter scripts/test makes new virtualenvs with: only the cognee one is missing.
    _tool(tmp_path / "base-python", RECORDER + "exit 1\n")
    record = tmp_path / "record"
    env = dict(os.environ, RECORD=str(record), PYTHON=str(tmp_path / "base-python"))
    env.pop("VIVARY_COGNEE_UNAVAILABLE", None)
    r = subprocess.run(["bash", str(project / "scripts" / "test"), *args], cwd=tmp_path, env=env,
                       capture_output=True, text=True, check=False)
    return r, record.read_text().splitlines() if record.exists() else []


def test_quick_mode_leaves_out_cognee_and_passes_the_rest_to_pytest(tmp_path: Path) -> None:
    r, calls = _run(tmp_path, "--quick", "-k", "wikilink")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not any(c.startswith("base-python|") for c in calls), calls  # no .venv/cognee is made
    [pytest_call] = [c for c in calls if c.startswith("pytest|")]
    assert pytest_call == "pytest|-q -k wikilink|scripts/test --quick leaves out the cognee extra"
    assert "quick mode" in r.stdout and "all steps passed" in r.stdout


def test_the_full_run_installs_cognee(tmp_path: Path) -> None:
    r, calls = _run(tmp_path, "-k", "wikilink")
    assert any(c.startswith("base-python|-m venv") for c in calls), calls  # it tries to make .venv/cognee
    [pytest_call] = [c for c in calls if c.startswith("pytest|")]
    assert pytest_call.startswith("pytest|-q -k wikilink|the cognee extra failed to install")
    assert "quick mode" not in r.stdout
