"""Real vaults nobody here wrote, held to broken-link lists established by reading their files against
docs/vaults.md (tests/data/corpora/*.txt, each with how it was established): every finding must be a
true break and every true break found. Skipped with a reason when the bundles are not there."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
DATA = Path(__file__).parent / "data" / "corpora"


@pytest.fixture(scope="module")
def clones(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for name in ("dendron-vault", "kepano-obsidian", "foam-docs"):
        bundle = CORPORA / f"{name}.bundle"
        if not bundle.is_file():
            pytest.skip(f"{bundle} is not here (the shared corpora sit beside the worktree)")
        dest = tmp_path_factory.mktemp(name) / name
        subprocess.run(["git", "clone", "-q", str(bundle), str(dest)], check=True, capture_output=True)
        out[name] = dest
    return out


def _expected(name: str) -> set[str]:
    lines = (DATA / f"{name}.txt").read_text(encoding="utf-8").splitlines()
    return {line for line in lines if line and not line.startswith("#")}


@pytest.mark.parametrize("name,args,dialect", [
    ("dendron-vault", [], "dendron"), ("kepano-obsidian", [], "obsidian"), ("foam-docs", ["--root", "docs"], "foam"),
])
def test_every_finding_true_and_every_break_found(clones: dict[str, Path], cli: Any, name: str, args: list[str],
                                                  dialect: str) -> None:
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", "--verbose", *args, cwd=clones[name])
    assert r.err.startswith(f"vivary: dialect {dialect}: ")
    got = set()
    for f in r.json()["findings"]:
        m = re.search(r"looked for '(.*)' from ", f["message"])
        assert m is not None, f
        got.add(f"{f['path']}:{f['line']}: {f['code']} {m.group(1)}")
    expected = _expected(name)
    assert sorted(got - expected) == [], "findings that are not true breaks"
    assert sorted(expected - got) == [], "true breaks not found"


def test_kepano_properties_are_edges(clones: dict[str, Path], cli: Any) -> None:
    g = cli("graph", "--json", "--rev", "HEAD", cwd=clones["kepano-obsidian"]).json()
    edges = {(e["from"], e["field"], e["to"]) for e in g["edges"]}
    assert ("Notes/2023 Japan Trip", "loc", "References/Kyoto") in edges
    assert not any(n["path"].startswith("Templates/") for n in g["nodes"])
    r = cli("blast", "References/Kyoto", "--rev", "HEAD", "--json", cwd=clones["kepano-obsidian"])
    assert "Notes/2023 Japan Trip" in [i["id"] for i in r.json()["impacted"]]
