"""vivary-git as a newcomer installs it, before it is on PyPI: `python -m build` makes a wheel and an sdist
that hold the manual page and every package-data file, `twine check` passes, and the wheel installs into a
fresh virtualenv whose `git vivary --help` shows the manual page and whose `check` reads the bundled example.
An editable install (`pip install -e`, what scripts/demo and scripts/test do) lays out the manual page too.

Marked `install`: these build in isolated environments and install vivary-git's dependencies from PyPI
into virtualenvs under tmp_path, so they take a minute or more (`-m "not install"` leaves them out).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import GIT_ENV

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.install
PAGE = "share/man/man1/git-vivary.1"


def _env(bindir: Path | None = None) -> dict[str, str]:
    """This process's environment without the test virtualenv's hold on Python, `bindir` first on PATH;
    no pager and a wide page, so man prints the page as text."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "MANPATH", "MANPAGER", "PAGER", "GIT_PAGER")}
    if bindir is not None:
        env["PATH"] = f"{bindir}{os.pathsep}{env['PATH']}"
    env["MANWIDTH"] = "200"
    return env


def _run(args: list[str | Path], cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env or _env(), capture_output=True, text=True,
                          check=False)


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build`: the sdist, then the wheel built from it."""
    out = tmp_path_factory.mktemp("dist")
    r = _run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=ROOT)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def _package_data() -> set[str]:
    """Every tracked file the package-data globs of pyproject.toml name, as `vivary_git/...` paths."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    tracked = set(subprocess.run(["git", "ls-files", "-z", "vivary_git"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.split("\0"))
    found: set[str] = set()
    for pattern in config["tool"]["setuptools"]["package-data"]["vivary_git"]:
        for path in (ROOT / "vivary_git").glob(pattern):
            rel = path.relative_to(ROOT).as_posix()
            if path.is_file() and rel in tracked:
                found.add(rel)
    assert "vivary_git/memory/data/all-MiniLM-L6-v2.tokenizer.json" in found
    assert "vivary_git/memory/data/antonyms.txt" in found
    assert "vivary_git/scaffold/templates/tropo.toml" in found and "vivary_git/py.typed" in found
    return found


def test_the_wheel_and_the_sdist_hold_the_manual_page_and_every_package_data_file(dist: Path) -> None:
    [wheel] = dist.glob("vivary_git-*.whl")
    [sdist] = dist.glob("vivary_git-*.tar.gz")
    data = _package_data()
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    assert f"vivary_git-0.1.0.data/data/{PAGE}" in in_wheel
    assert sorted(data - in_wheel) == []
    with tarfile.open(sdist) as tar:
        in_sdist = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    assert sorted((data | {"man/git-vivary.1", "build_backend/vivary_backend.py", "pyproject.toml"}) - in_sdist) == []


def test_twine_check_passes(dist: Path) -> None:
    r = _run([sys.executable, "-m", "twine", "check", "--strict", *sorted(dist.iterdir())], cwd=dist)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("PASSED") == 2


def _fresh_venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, env=_env())
    return where / "bin"


def _field_notes(tmp_path: Path) -> Path:
    """examples/field-notes in a fresh Git repository, committed, as scripts/demo lays it out."""
    ws = tmp_path / "field-notes"
    shutil.copytree(ROOT / "examples" / "field-notes", ws)
    env = dict(_env(), **GIT_ENV)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        subprocess.run(["git", *args], cwd=ws, env=env, check=True, capture_output=True)
    return ws


def _assert_manual_page(bindir: Path, cwd: Path) -> None:
    if shutil.which("man") is None:
        pytest.skip("no `man` on this machine: `git help` cannot show any manual page here")
    r = _run(["git", "vivary", "--help"], cwd=cwd, env=_env(bindir))
    assert r.returncode == 0, r.stderr
    assert "No manual entry" not in r.stderr and "GIT-VIVARY(1)" in r.stdout
    assert "git vivary check" in r.stdout


def test_the_wheel_installs_into_a_fresh_venv_and_checks_the_example(dist: Path, tmp_path: Path) -> None:
    [wheel] = dist.glob("vivary_git-*.whl")
    bindir = _fresh_venv(tmp_path / "venv")
    r = _run([bindir / "python", "-m", "pip", "install", "-q", wheel], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert (tmp_path / "venv" / PAGE).is_file()
    ws = _field_notes(tmp_path)
    checked = _run(["git", "vivary", "check"], cwd=ws, env=_env(bindir))
    assert checked.returncode == 1, checked.stderr  # the example's one deliberately broken reference
    assert ("decisions/0003-self-hosted-vector-tiles.md:5: error W220: field 'related': ref 'tile-cache' matches "
            "no document id") in checked.stdout
    assert "vivary: 18 document(s), 1 error(s), 0 warning(s) in working tree" in checked.stdout
    # The installed copy ran, not this checkout's editable one.
    where = _run([bindir / "python", "-c", "import vivary_git; print(vivary_git.__file__)"], cwd=tmp_path)
    assert str(tmp_path / "venv") in where.stdout
    _assert_manual_page(bindir, ws)


def test_an_editable_install_lays_out_the_manual_page(tmp_path: Path) -> None:
    """setuptools leaves data files out of editable wheels; build_backend/vivary_backend.py puts them back,
    so `git vivary --help` after `pip install -e` shows the page instead of "No manual entry"."""
    bindir = _fresh_venv(tmp_path / "venv")
    r = _run([bindir / "python", "-m", "pip", "install", "-q", "--no-deps", "-e", ROOT], cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    page = tmp_path / "venv" / PAGE
    assert page.is_file() and page.read_bytes() == (ROOT / "man" / "git-vivary.1").read_bytes()
    _assert_manual_page(bindir, tmp_path)
    # Uninstalling takes the page away again (it is in the install's RECORD).
    r = _run([bindir / "python", "-m", "pip", "uninstall", "-q", "-y", "vivary-git"], cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert not page.exists()
