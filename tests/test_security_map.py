"""docs/security.md names, for each trust boundary, the tests that act out its attacks. A map that names a
test that is gone (renamed, deleted) no longer proves its row: every name it gives must exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAP = ROOT / "docs" / "security.md"


def _named() -> list[tuple[str, str | None]]:
    """(test file, test name or None for the whole file) for every test the map's table names. A
    `::name` right after another test keeps that test's file, as the table writes it."""
    out: list[tuple[str, str | None]] = []
    for line in MAP.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| **"):
            continue
        tests = line.rstrip(" |").rsplit(" | ", 1)[-1]
        current = None
        for token in re.findall(r"`([^`]+)`", tests):
            file, _, name = token.partition("::")
            if file:
                current = file
            assert current is not None, f"{token!r}: a test name with no file before it"
            out.append((current, name or None))
    return out


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}


def test_every_boundary_names_tests() -> None:
    rows = [line for line in MAP.read_text(encoding="utf-8").splitlines() if line.startswith("| **")]
    assert len(rows) >= 10
    for row in rows:
        assert "test_" in row.rsplit(" | ", 1)[-1], row[:80]


def test_every_test_the_map_names_exists() -> None:
    named = _named()
    assert len(named) > 40
    missing = []
    for file, name in named:
        path = ROOT / "tests" / file
        if not path.is_file():
            missing.append(file)
        elif name is not None and name not in _tests_in(path):
            missing.append(f"{file}::{name}")
    assert not missing, f"docs/security.md names tests that do not exist: {missing}"


def test_the_readme_links_the_map() -> None:
    assert "docs/security.md" in (ROOT / "README.md").read_text(encoding="utf-8")
