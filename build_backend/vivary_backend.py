"""vivary-git's build backend: setuptools' own, with one repair for editable installs.

`git vivary --help` is `git help vivary`: Git runs `man git-vivary` before vivary-git ever starts, and
`man` finds the page only where an install put it (`share/man/man1/`, beside the `bin/` on PATH). The
wheel carries it as a data file (`[tool.setuptools.data-files]`), but setuptools' editable wheels leave
data files out (its editable_wheel asks the distribution for `has_data`, a method distributions do not
have), so after `pip install -e .` man said "No manual entry for git-vivary". `build_editable` adds the
data files to the editable wheel the way the wheel holds them, so an editable install lays out the page
too. Everything else is setuptools.build_meta unchanged.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403 - the PEP 517/660 hooks, unchanged but for build_editable

_PROJECT = Path(__file__).resolve().parent.parent


def build_editable(wheel_directory: str, config_settings: dict[str, Any] | None = None,
                   metadata_directory: str | None = None) -> str:
    name: str = _setuptools.build_editable(wheel_directory, config_settings, metadata_directory)
    add_data_files(Path(wheel_directory) / name, data_files(_PROJECT))
    return name


def data_files(project: Path) -> dict[str, Path]:
    """`[tool.setuptools.data-files]` of `project`'s pyproject.toml: the path under the install prefix
    (`share/man/man1/git-vivary.1`) -> the file in the project."""
    config = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    table = config.get("tool", {}).get("setuptools", {}).get("data-files", {})
    return {f"{target}/{Path(src).name}": project / src for target, sources in table.items() for src in sources}


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode("ascii")
    return f"sha256={digest}"


def add_data_files(wheel: Path, files: dict[str, Path]) -> None:
    """Add `files` to `wheel` under `<name>.data/data/` (where pip installs them into the prefix) and to its
    RECORD, unless the wheel has them already. The wheel is rewritten, RECORD last."""
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist()]
    record_name = next(i.filename for i, _ in entries if i.filename.endswith(".dist-info/RECORD"))
    data_dir = record_name.split("/")[0].removesuffix(".dist-info") + ".data/data/"
    have = {i.filename for i, _ in entries}
    added = {data_dir + rel: src.read_bytes() for rel, src in files.items() if data_dir + rel not in have}
    if not added:
        return
    record = next(data for i, data in entries if i.filename == record_name).decode("utf-8")
    lines = [line for line in record.splitlines() if line and not line.startswith(record_name + ",")]
    lines += [f"{arc},{_record_hash(data)},{len(data)}" for arc, data in added.items()]
    lines.append(f"{record_name},,")
    tmp = wheel.with_name(wheel.name + ".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as new:
        for info, data in entries:
            if info.filename != record_name:
                new.writestr(info, data)
        for arc, data in added.items():
            info = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            new.writestr(info, data)
        new.writestr(record_name, "\n".join(lines) + "\n")
    os.replace(tmp, wheel)
