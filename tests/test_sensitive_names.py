"""Sensitive names (docs/privacy.md, step 4): a whole file or folder name of a kind that holds secrets
(`.env*`, `*.pem`, `id_rsa*`, `secrets.*`, …) is private; a word inside a longer title is not. Zero false
positives on real names: the shared corpora's every path in their whole history, and a list of real note
titles that hold the same letters (tests/data/sensitive-lookalikes.txt)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

from vivary_git.privacy import FLOOR, SENSITIVE_NAMES, decide, sensitive_name

CORPORA = Path(__file__).resolve().parents[2] / "shared" / "corpora"
LOOKALIKES = Path(__file__).parent / "data" / "sensitive-lookalikes.txt"


def _lookalikes() -> list[str]:
    lines = LOOKALIKES.read_text(encoding="utf-8").splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_the_lookalike_list_is_real_and_long_enough() -> None:
    titles = _lookalikes()
    assert len(titles) >= 50 and len(set(titles)) == len(titles)
    for word in ("secret", "password", "token", "credential", "key", "api", "env", "pem"):
        assert any(word in t.lower() for t in titles), word


def test_no_real_note_title_is_a_sensitive_name(repo: Repo) -> None:
    titles = _lookalikes()
    assert [(t, sensitive_name(t)) for t in titles if sensitive_name(t)] == []
    repo.commit("notes", {t: "# note\n" for t in titles})
    assert [d.path for d in decide(repo.path, titles) if d.private] == []


@pytest.mark.parametrize("name", ["dendron-vault", "kepano-obsidian", "foam-docs"])
def test_no_path_of_the_shared_corpora_is_a_sensitive_name(name: str, tmp_path: Path) -> None:
    bundle = CORPORA / f"{name}.bundle"
    if not bundle.is_file():
        pytest.skip(f"{bundle} is not here (the shared corpora sit beside the worktree)")
    clone = tmp_path / name
    subprocess.run(["git", "clone", "-q", str(bundle), str(clone)], check=True, capture_output=True)
    # Every path the vault ever had, not just today's: dendron-vault's history holds `…github-token.md` notes.
    out = subprocess.run(["git", "log", "--all", "--name-only", "-z", "--format="], cwd=clone, check=True,
                         capture_output=True).stdout
    paths = sorted({p.strip("\n") for p in out.decode("utf-8", "surrogateescape").split("\0")} - {""})
    assert len(paths) > 100
    assert [(p, sensitive_name(p)) for p in paths if sensitive_name(p)] == []


def _example(glob: str) -> str:
    return glob.replace("*", "x")


@pytest.mark.parametrize("glob", SENSITIVE_NAMES)
def test_every_sensitive_name_is_caught_as_a_file_and_as_a_folder(glob: str) -> None:
    name = _example(glob)
    assert sensitive_name(name) == f"sensitive name: {glob}"
    assert sensitive_name(f"notes/{name.upper()}") == f"sensitive name: {glob}"  # case-insensitive
    # A folder of that name taints everything in it, at any depth.
    assert sensitive_name(f"a/{name}/readme.md") == f"sensitive name: {glob}"
    # Inside a longer name it is a word, not the name.
    assert sensitive_name(f"notes/my {name} audit.md") == ""


def test_a_pattern_matches_a_folder_too(repo: Repo, cli: Any) -> None:
    """`*.pem` names a folder as well as a file: `certs.pem/readme.md` is private, by the boundary every
    consumer asks and by the commit guard."""
    repo.commit("start", {"notes/a.md": "# A\n"})
    paths = ["certs.pem/readme.md", "keys.key/deep/x.md", "secrets/plan.md", ".env.d/local.md", "certs/readme.md"]
    got = {d.path: d.reason for d in decide(repo.path, paths)}
    assert got == {"certs.pem/readme.md": "sensitive name: *.pem", "keys.key/deep/x.md": "sensitive name: *.key",
                   "secrets/plan.md": "sensitive name: secrets", ".env.d/local.md": "sensitive name: .env*",
                   "certs/readme.md": ""}
    repo.write({"certs.pem/readme.md": "# not a key, but its folder says it may be\n"})
    repo.git("add", "certs.pem/readme.md")
    r = cli("hooks", "privacy-guard", cwd=repo.path)
    assert r.code == 1 and "certs.pem/readme.md:1: error P104" in r.out


def test_every_floor_canary_is_still_caught(repo: Repo) -> None:
    repo.commit("start", {"notes/a.md": "# A\n"})
    probes = [p[:-2] + "canary.md" if p.endswith("/**") else p for p in FLOOR]
    probes += [f"team/{p}" for p in ("USER.md", "MEMORY.md", "USER.markdown", "MEMORY.markdown")]
    decided = decide(repo.path, probes)
    assert [d.path for d in decided if not d.reason.startswith("floor: ")] == []
