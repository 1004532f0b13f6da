"""`git vivary init` and `git vivary capabilities`: scaffolds that check, pass doctor, satisfy the
published tropo, and keep private files private (proved with Git, not by reading .gitignore)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, run_git_vivary

from vivary_git.memory.config import parse_memory_config
from vivary_git.scaffold.presets import HOSTS, MEMORY_CHOICES, PRESETS, STARTERS

CANARY = "CANARY-7f3a-private-do-not-index"
PRIVATE_CANARY_FILES = {
    "USER.md": f"# Me\n\n{CANARY} user\n",
    "MEMORY.md": f"# Memory\n\n{CANARY} memory\n",
    "memory/session.md": f"---\nstatus: x\n---\n# Session\n\n{CANARY} session\n",
    "heartbeat-reports/today.md": f"# Beat\n\n{CANARY} beat\n",
}


@pytest.fixture(scope="session")
def tropo() -> str | None:
    peer = os.environ.get("VIVARY_TROPO") or shutil.which("tropo")
    if not peer or not Path(peer).exists():
        if os.environ.get("CI"):
            pytest.fail("tropo (vivary-tropo 0.5.4) not found: set VIVARY_TROPO=/path/to/tropo")
        return None
    return str(Path(peer).absolute())


def init(cli: Any, cwd: Path, *args: str) -> Any:
    return cli("init", *args, cwd=cwd)


# Every preset with every memory choice; hosts rotate so each host is covered too.
MATRIX = [(p, m, HOSTS[(i * 3 + j) % len(HOSTS)]) for i, p in enumerate(PRESETS) for j, m in enumerate(MEMORY_CHOICES)]


def test_init_takes_every_host_kind_bootstrap_host_does(tmp_path: Path, cli: Any) -> None:
    """One list: `init --host` accepts each `bootstrap-host --host-kind` (Continue and Claude Desktop too), and its
    AGENTS.md says how that host reads it."""
    from vivary_git.hosts.kinds import HOST_KINDS

    for kind in HOST_KINDS:
        r = init(cli, tmp_path, kind, "--host", kind, "--dry-run", "--json")
        assert r.code == 0, (kind, r.err)
        assert r.json()["choices"]["host"] == kind
    for kind, said in (("continue", "Continue reads this file as a rule that is always applied"),
                       ("claude-desktop", "Claude Desktop reads no instructions file of a workspace")):
        r = init(cli, tmp_path, f"ws-{kind}", "--host", kind, "--yes", "--no-wizard")
        assert r.code == 0, r.err
        assert said in (tmp_path / f"ws-{kind}" / "AGENTS.md").read_text("utf-8")


@pytest.mark.parametrize(("preset", "memory", "host"), MATRIX, ids=[f"{p}-{m}-{h}" for p, m, h in MATRIX])
def test_scaffold_checks_commits_and_keeps_private(
    tmp_path: Path, cli: Any, tropo: str | None, preset: str, memory: str, host: str
) -> None:
    r = init(cli, tmp_path, "ws", "--preset", preset, "--memory", memory, "--host", host, "--yes", "--no-wizard",
             "--json")
    assert r.code == 0, r.err
    report = r.json()
    ws = tmp_path / "ws"
    assert report["git_init"] is True and report["committed"]
    assert report["choices"] == {"preset": preset, "memory": memory, "storage": "file", "host": host,
                                 "project": "ws"}
    assert sorted(report["private_verified"]) == sorted(
        ["USER.md", "MEMORY.md", "memory/README.md", "heartbeat-reports/README.md"])
    starter = STARTERS[preset]  # type: ignore[index]
    assert (ws / "modules" / starter.module_id / "index.md").is_file()
    assert (ws / "gates/human-gates.md").is_file() and (ws / "decisions/0001-typed-graph-is-the-truth.md").is_file()
    host_file = {"claude-code": "CLAUDE.md", "gemini-cli": "GEMINI.md", "cursor": ".cursor/rules/vivary.mdc"}
    if host in host_file:
        assert (ws / host_file[host]).is_file()
    assert "git vivary find" in (ws / "AGENTS.md").read_text()

    # Committed: the tree is clean, and no private file is in the commit.
    assert git(ws, "status", "--porcelain") == ""
    committed = git(ws, "ls-tree", "-r", "--name-only", "HEAD").split()
    assert not {"USER.md", "MEMORY.md"} & set(committed)
    assert not [p for p in committed if p.startswith(("memory/", "heartbeat-reports/"))]

    # Memory: a disabled policy with closed gates, or nothing at all.
    toml = ws / ".vivary/memory.toml"
    if memory == "none":
        assert not toml.exists() and not (ws / "docs/memory.md").exists()
    else:
        cfg = parse_memory_config(toml.read_bytes())
        assert cfg.memory.enabled is False and cfg.enabled is False
        assert cfg.memory.provider == {"local": "vivary-local", "cognee": "cognee"}[memory]
        table = cfg.memory.local if memory == "local" else cfg.memory.cognee
        assert table.require_explicit_index is True and table.allow_network is False
        doc = (ws / "docs/memory.md").read_text()
        assert "pip install" in doc and "git vivary index --yes" in doc and "enabled = true" in doc

    # Private canaries, written after the fact, never reach a snapshot.
    for rel, text in PRIVATE_CANARY_FILES.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(text)
    assert git(ws, "status", "--porcelain") == ""  # Git ignores every one of them
    _assert_no_canary_in_snapshot(ws)

    check = cli("check", cwd=ws)
    assert check.code == 0, check.out + check.err
    doctor = cli("doctor", "--json", cwd=ws)
    assert doctor.code == 0, doctor.out
    d = doctor.json()
    assert d["ok"] is True and d["privacy"]["status"] == "ok" and d["graph"]["errors"] == 0
    assert d["memory"]["status"] == "disabled"
    assert d["memory"]["provider"] == {"none": "none", "local": "vivary-local", "cognee": "cognee"}[memory]

    if tropo is not None:
        proc = subprocess.run([tropo, "check", "--root", str(ws)], cwd=ws, capture_output=True, text=True,
                              check=False, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert " 0 error(s), 0 warning(s)" in proc.stdout + proc.stderr


def _assert_no_canary_in_snapshot(ws: Path) -> None:
    from vivary_git import privacy
    from vivary_git.memory.config import load_memory_config
    from vivary_git.memory.snapshot import build_snapshot, packets
    from vivary_git.workspace import open_workspace

    decisions = privacy.decide(ws, list(PRIVATE_CANARY_FILES))
    assert all(d.private for d in decisions), decisions
    w = open_workspace(ws, cache=False)
    cfg = load_memory_config(w)
    snap = build_snapshot(w, cfg.policy(), provider="vivary-local", model=cfg.model)
    assert snap.nodes, "the public seed notes are admitted"
    for node, text in packets(w, snap):
        assert CANARY not in text, node.path
        assert node.path not in PRIVATE_CANARY_FILES


def test_dry_run_writes_nothing_and_lists_files(tmp_path: Path, cli: Any) -> None:
    r = init(cli, tmp_path, "new", "--preset", "writing", "--memory", "cognee", "--dry-run", "--json")
    assert r.code == 0, r.err
    doc = r.json()
    assert not (tmp_path / "new").exists()
    assert doc["dry_run"] is True and doc["private_verified"] is None and doc["committed"] is None
    assert doc["choices"]["memory"] == "cognee" and doc["choices"]["preset"] == "writing"
    paths = {f["path"]: f for f in doc["files"]}
    assert {"tropo.toml", ".gitignore", "AGENTS.md", ".vivary/memory.toml", "docs/memory.md",
            "modules/manuscript-system/index.md", "USER.md"} <= set(paths)
    assert all(f["action"] == "create" for f in doc["files"])
    assert paths["USER.md"]["private"] is True and paths["AGENTS.md"]["private"] is False
    text = init(cli, tmp_path, "new", "--dry-run", "--no-wizard")
    assert "dry run: nothing was written" in text.out and "create" in text.out
    assert not (tmp_path / "new").exists()


def test_rerun_never_clobbers_and_force_lists_overwrites(repo: Repo, cli: Any) -> None:
    assert init(cli, repo.path, ".", "--no-wizard").code == 0
    (repo.path / "AGENTS.md").write_text("my own agent rules\n")
    (repo.path / "USER.md").write_text("my private self\n")
    again = init(cli, repo.path, ".", "--no-wizard", "--json")
    assert again.code == 0
    actions = {f["path"]: f["action"] for f in again.json()["files"]}
    assert actions["AGENTS.md"] == "keep" and actions["USER.md"] == "keep" and actions["tropo.toml"] == "same"
    assert actions[".gitignore"] == "same"
    assert (repo.path / "AGENTS.md").read_text() == "my own agent rules\n"

    # Overwriting in a folder that holds files needs approval: without it nothing is written.
    refused = init(cli, repo.path, ".", "--no-wizard", "--force")
    assert refused.code == 3 and "overwrite  AGENTS.md" in refused.err and "--yes" in refused.err
    assert (repo.path / "AGENTS.md").read_text() == "my own agent rules\n"
    forced = init(cli, repo.path, ".", "--no-wizard", "--force", "--yes")
    assert forced.code == 0
    assert "overwrite  AGENTS.md" in forced.out
    assert "keep       USER.md  [private]  (private file: never overwritten" in forced.out
    assert "git vivary find" in (repo.path / "AGENTS.md").read_text()
    assert (repo.path / "USER.md").read_text() == "my private self\n"


def test_existing_gitignore_is_merged_and_privacy_proved_by_git(repo: Repo, cli: Any) -> None:
    repo.write({".gitignore": "node_modules/\n*.log"})
    r = init(cli, repo.path, ".", "--no-wizard", "--json", "--yes")
    assert r.code == 0, r.err
    assert {f["path"]: f["action"] for f in r.json()["files"]}[".gitignore"] == "append"
    text = (repo.path / ".gitignore").read_text()
    assert text.startswith("node_modules/\n*.log\n\n# >>> vivary private >>>")
    # Git, not string matching, says the private files are ignored.
    out = git(repo.path, "check-ignore", "USER.md", "MEMORY.md", "memory/README.md", "heartbeat-reports/README.md")
    assert len(out.split()) == 4


def test_refuses_to_commit_a_private_file_git_would_track(repo: Repo, cli: Any) -> None:
    repo.write({"USER.md": "already tracked, oops\n"})
    repo.git("add", "USER.md")
    r = init(cli, repo.path, ".", "--no-wizard", "--yes")
    assert r.code == 3
    assert "USER.md" in r.err and "git rm --cached" in r.err and "Traceback" not in r.err
    assert repo.git("rev-parse", "-q", "--verify", "HEAD", check=False) == ""  # nothing was committed


def test_yes_commits_only_the_scaffold(repo: Repo, cli: Any) -> None:
    repo.commit("base", {"notes/keep.md": "# keep\n"})
    repo.write({"staged.txt": "mine\n"})
    repo.git("add", "staged.txt")
    r = init(cli, repo.path, ".", "--no-wizard", "--yes", "--storage", "git-cache")
    assert r.code == 0, r.err
    files = repo.git("show", "--name-only", "--format=", "HEAD").split()
    assert "staged.txt" not in files and "tropo.toml" in files and "docs/cache.md" in files
    assert repo.git("diff", "--cached", "--name-only").split() == ["staged.txt"]


def test_auto_and_non_interactive_never_pick_cognee(tmp_path: Path) -> None:
    for args in (["init", "a", "--auto", "--json"], ["init", "b", "--json"]):
        proc = subprocess.run([sys.executable, "-m", "vivary_git.main", *args], cwd=tmp_path, capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, check=False)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        assert doc["choices"]["memory"] == "none" and doc["wizard"] is False
        assert not (tmp_path / args[1] / ".vivary").exists()
        assert "?" not in proc.stderr  # no question was asked


def test_symlinked_target_file_is_refused(repo: Repo, cli: Any, tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("do not touch\n")
    (repo.path / "AGENTS.md").symlink_to(outside)
    r = init(cli, repo.path, ".", "--no-wizard", "--force")
    assert r.code == 3 and "symbolic link" in r.err
    assert outside.read_text() == "do not touch\n"


def test_scaffold_in_a_subfolder_of_an_existing_repo(repo: Repo, cli: Any) -> None:
    repo.commit("base", {"README.md": "# project\n"})
    r = init(cli, repo.path, "notes", "--preset", "knowledge-work", "--no-wizard", "--yes", "--json")
    assert r.code == 0, r.err
    assert r.json()["git_init"] is False and not (repo.path / "notes/.git").exists()
    assert cli("check", cwd=repo.path / "notes").code == 0
    d = cli("doctor", "--json", cwd=repo.path / "notes")
    assert d.code == 0, d.out
    assert d.json()["workspace"]["root"] == str((repo.path / "notes").resolve())


def test_capabilities_json_is_truthful(cli: Any) -> None:
    from vivary_git.memory.local.embed import embedder_status

    r = cli("capabilities", "--json", "--preset", "knowledge-work", cwd=Path.cwd())
    assert r.code == 0
    doc = r.json()
    assert doc["ok"] is True and doc["preset"] == "knowledge-work"
    assert doc["default_capabilities"] == ["storage:file", "memory:none"]
    caps = {c["id"]: c for c in doc["available_capabilities"]}
    assert {"storage:file", "storage:git-cache", "memory:local", "memory:cognee"} <= set(caps)
    for c in caps.values():
        assert {"id", "label", "default", "requires_install", "requires_approval", "network"} <= set(c)
    assert caps["storage:file"]["default"] is True and caps["memory:cognee"]["default"] is False
    cognee = caps["memory:cognee"]
    assert cognee["requires_install"] == ["vivary-git[cognee]"] and cognee["requires_approval"] is True
    assert cognee["network"] == "configurable, default false" and cognee["requires_explicit_index"] is True
    assert cognee["adapter_status"] in ("optional-extra", "installed")
    local = caps["memory:local"]
    assert local["requires_install"] == ["vivary-git[embed]"] and local["network"] is False
    import importlib.util

    have_local = embedder_status() == "available" and importlib.util.find_spec("hnswlib") is not None
    assert local["installed"] is (embedder_status() == "available")
    assert have_local or local["missing_install"] == ["vivary-git[embed]"]
    assert cli("capabilities", cwd=Path.cwd()).code == 0


def test_capabilities_and_doctor_import_no_heavy_runtime(tmp_path: Path, cli: Any) -> None:
    assert init(cli, tmp_path, "ws", "--no-wizard", "--memory", "local", "--yes").code == 0
    code = (
        "import sys, io, contextlib\n"
        "from vivary_git.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['capabilities', '--json']); main(['doctor', '--json'])\n"
        "heavy = [m for m in ('onnxruntime', 'tokenizers', 'numpy', 'hnswlib', 'cognee', 'vivary_cognee')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path / "ws", capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr


def test_git_vivary_init_through_git(tmp_path: Path) -> None:
    proc = run_git_vivary(["init", "ws", "--preset", "coding", "--no-wizard", "--dry-run"], tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "modules/codebase/index.md" in proc.stdout


def test_usage_errors(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "file").write_text("x")
    r = init(cli, tmp_path, "file", "--no-wizard")
    assert r.code == 2 and "is not a folder" in r.err
    assert init(cli, tmp_path, "--preset", "nope").code == 2


EXISTING_VAULT = {
    "README.md": "# Project\n", "docs/guide.md": "# Guide\n", "docs/api/README.md": "# API\n",
    "docs/api/auth.md": "# Auth\n\nSee [[guide]].\n", "notes/idea.md": "# Idea\n",
    "decisions/old.md": "# An old decision without frontmatter\n", "src/lib.py": "x = 1\n",
}


def test_init_never_hides_existing_notes(repo: Repo, cli: Any) -> None:
    repo.commit("a vault", EXISTING_VAULT)
    before = {n["path"] for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]}
    assert len(before) == 6
    r = init(cli, repo.path, ".", "--no-wizard", "--yes", "--json")
    assert r.code == 0, r.err
    assert r.json()["existing_notes"] == {"count": 6, "typed": {"decisions": 1},
                                          "exclude_dropped": {"docs": 3, "README.md": 2}}
    tropo = tomllib.loads((repo.path / "tropo.toml").read_text())
    assert "docs" not in tropo["exclude"] and "README.md" not in tropo["exclude"]
    assert {"memory", "AGENTS.md", "USER.md", "MEMORY.md", ".cursor"} <= set(tropo["exclude"])
    after = {n["path"] for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]}
    assert before <= after, "every note that was there is still seen"
    # The old decision now sits in a type folder: check says what it lacks, not nothing.
    findings = cli("check", "--json", cwd=repo.path).json()["findings"]
    assert {f["path"] for f in findings} == {"decisions/old.md"}
    text = init(cli, repo.path, ".", "--no-wizard", "--dry-run")
    assert "6 note(s) already here stay visible to `git vivary check`" in text.out
    assert "left out of tropo.toml's exclude so they stay visible: docs (3), README.md (2)" in text.out
    assert "already in type folders, now checked against those types' fields: decisions/ (1)" in text.out


def test_init_in_a_folder_with_files_lists_changes_and_needs_yes(repo: Repo, cli: Any) -> None:
    repo.commit("a vault", {"notes/idea.md": "# Idea\n"})
    for args in (("--no-wizard",), ("--auto",), ()):  # () : stdin is no terminal here
        r = init(cli, repo.path, ".", *args)
        assert r.code == 3 and r.out == "", args
        head = f"{repo.path.resolve()} already holds files; init would change:\n  create     tropo.toml\n"
        assert r.err.startswith(head), r.err
        assert "1 note(s) already here stay visible" in r.err and "run again with --yes" in r.err
        assert sorted(p.name for p in repo.path.iterdir()) == [".git", "notes"], "nothing was written"
    assert init(cli, repo.path, ".", "--no-wizard", "--dry-run").code == 0
    assert not (repo.path / "tropo.toml").exists()
    assert init(cli, repo.path, ".", "--no-wizard", "--yes").code == 0
    assert (repo.path / "tropo.toml").is_file()
    # Nothing left to write: a re-run needs no approval.
    assert init(cli, repo.path, ".", "--no-wizard").code == 0
    # A tropo.toml of the folder's own is kept: init claims nothing about what its rules let check see.
    (repo.path / "tropo.toml").write_text('version = 1\nexclude = ["notes"]\n')
    kept = init(cli, repo.path, ".", "--no-wizard", "--dry-run", "--json").json()
    assert {f["path"]: f["action"] for f in kept["files"]}["tropo.toml"] == "keep"
    assert kept["existing_notes"] == {"count": 0, "typed": {}, "exclude_dropped": {}}


# An Obsidian vault shaped like obsidian-hub: the same note name in two folders (two nodes in Obsidian's
# path ids; one slug, E130, in the `vivary` dialect), links by name, a templates folder.
OBSIDIAN_VAULT = {
    ".obsidian/app.json": "{}\n",
    ".obsidian/templates.json": '{"folder": "Templates"}\n',
    "Plugins/Calendar.md": "# Calendar plugin\n\nPairs with [[Periodic Notes]] and [[Missing Plugin]].\n",
    "Themes/Calendar.md": "# Calendar theme\n\nSee [[Plugins/Calendar]].\n",
    "Plugins/Periodic Notes.md": "# Periodic Notes\n\nBack to [[Calendar]].\n",
    "Templates/Plugin.md": "---\ncreated: {{date}}\n---\n# {{title}}\n",
}


def _check_counts(cli: Any, cwd: Path) -> tuple[str, dict[str, int]]:
    r = cli("check", "--json", "--verbose", cwd=cwd)
    codes: dict[str, int] = {}
    for f in r.json()["findings"]:
        codes[f["code"]] = codes.get(f["code"], 0) + 1
    return r.err.splitlines()[0], codes


def test_init_in_a_vault_keeps_its_dialect_and_its_findings(repo: Repo, cli: Any) -> None:
    repo.commit("vault", OBSIDIAN_VAULT)
    dialect, codes = _check_counts(cli, repo.path)
    assert dialect == "vivary: dialect obsidian: .obsidian/ found" and codes == {"W221": 1}
    nodes = cli("graph", "--json", cwd=repo.path).json()["nodes"]
    r = init(cli, repo.path, ".", "--no-wizard", "--yes", "--memory", "local")
    assert r.code == 0, r.err
    # How to turn the memory on is a page about vivary-git, no note of the vault's: not in its graph or search.
    assert cli("graph", "--json", cwd=repo.path).json()["nodes"] == nodes
    assert not (repo.path / "docs").exists() and (repo.path / ".vivary/memory.md").is_file()
    assert (repo.path / ".vivary/memory.toml").read_text().startswith(
        "# Semantic memory policy for this workspace; see .vivary/memory.md.\n")
    assert ".vivary/memory.md explains activation, install and index as separate steps" in r.out, r.out
    said = cli("doctor", cwd=repo.path).out
    assert "policy is written but disabled; .vivary/memory.md explains activation" in said, said
    assert "kept the obsidian dialect (.obsidian/ found): no tropo.toml and no typed seed graph" in r.out
    assert "findings of the notes here: 1 error(s), 0 warning(s) before init, 1 error(s), 0 warning(s) after" in r.out
    assert "warning: init raised" not in r.err
    assert not (repo.path / "tropo.toml").exists() and not (repo.path / "modules").exists()
    assert (repo.path / "AGENTS.md").is_file() and (repo.path / ".vivary/memory.toml").is_file()
    assert _check_counts(cli, repo.path) == (dialect, codes)  # no E130, no template placeholders
    again = init(cli, repo.path, ".", "--no-wizard", "--dry-run", "--json").json()
    assert again["kept_dialect"] == {"dialect": "obsidian", "reason": ".obsidian/ found"}
    assert again["findings"] == {"before": {"errors": 1, "warnings": 0, "codes": {"W221": 1}}, "after": None}


def test_a_dialect_named_in_graph_toml_is_kept_too(repo: Repo, cli: Any) -> None:
    repo.commit("vault", {".vivary/graph.toml": 'dialect = "foam"\n', "a.md": "# A\n\n[[b]]\n", "b.md": "# B\n"})
    r = init(cli, repo.path, ".", "--no-wizard", "--yes", "--json")
    assert r.code == 0, r.err
    assert r.json()["kept_dialect"] == {"dialect": "foam", "reason": "named in .vivary/graph.toml"}
    assert not (repo.path / "tropo.toml").exists()


@pytest.mark.parametrize("files", [
    {"dendron.yml": "version: 5\nworkspace:\n  vaults:\n    - fsPath: vault\n", "vault/a.md": "# A\n",
     "vault/a.b.md": "# B\n", "vault/docs/g.md": "x\n", "vault/.draft.md": "x\n", "vault/old.markdown": "x\n",
     "README.md": "x\n"},
    OBSIDIAN_VAULT,
], ids=["dendron", "obsidian"])
def test_init_in_a_vault_counts_the_notes_check_reads(repo: Repo, cli: Any, files: dict[str, str]) -> None:
    """The notes init says stay visible are the graph's, by the vault's own rules: not a Dendron vault's Markdown
    files outside its vault's folder, `.`-named or `.markdown`, nor an Obsidian template."""
    repo.commit("vault", files)
    nodes = len(cli("graph", "--json", cwd=repo.path).json()["nodes"])
    assert nodes == (2 if "dendron.yml" in files else 3)
    r = init(cli, repo.path, ".", "--no-wizard", "--dry-run", "--json")
    assert r.code == 0, r.err
    assert r.json()["existing_notes"]["count"] == nodes
    text = init(cli, repo.path, ".", "--no-wizard", "--dry-run").out
    assert f"\n{nodes} note(s) already here stay visible to `git vivary check`\n" in text, text


GUIDED = {"notes/a.md": "# A\n", "docs/guide.md": "# Guide\n", "CLAUDE.md": "Be brief.\n",
          "team/GEMINI.md": "Run the tests.\n", ".cursor/rules/style.md": "Tabs.\n"}


@pytest.mark.parametrize("include_guidance", [False, True])
def test_init_outside_a_vault_counts_the_notes_its_graph_reads(repo: Repo, cli: Any, include_guidance: bool) -> None:
    """Where init writes a tropo.toml, the notes it says stay visible are those the graph reads, by the same rule:
    agent guidance files (AGENTS.md, CLAUDE.md, GEMINI.md, .cursor/rules) are left out of the graph unless
    `.vivary/graph.toml` says `include_guidance = true`, so they are no notes to keep visible either."""
    files = dict(GUIDED, **{".vivary/graph.toml": "include_guidance = true\n"} if include_guidance else {})
    repo.commit("notes and guidance", files)
    r = init(cli, repo.path, ".", "--no-wizard", "--yes", "--json")
    assert r.code == 0, r.err
    existing = r.json()["existing_notes"]
    read = {n["path"] for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]} & set(files)
    assert existing["count"] == len(read)
    if include_guidance:
        assert read == set(GUIDED)
        assert existing["exclude_dropped"] == {".cursor": 1, "docs": 1, "CLAUDE.md": 1, "GEMINI.md": 1}
    else:
        assert read == {"notes/a.md", "docs/guide.md"}
        assert existing["exclude_dropped"] == {"docs": 1}
        assert {".cursor", "AGENTS.md", "CLAUDE.md", "GEMINI.md"} <= set(
            tomllib.loads((repo.path / "tropo.toml").read_text())["exclude"])
    text = init(cli, repo.path, ".", "--no-wizard", "--dry-run").out
    assert f"\n{len(read)} note(s) already here stay visible to `git vivary check`\n" in text, text


def test_init_says_when_it_raises_the_findings(repo: Repo, cli: Any) -> None:
    """A folder no editor names becomes a typed workspace, as before; a note already in a type folder now
    owes that type's fields, and init says so instead of raising the count silently."""
    repo.commit("notes", {"notes/idea.md": "# Idea\n", "decisions/old.md": "# An old decision\n"})
    r = init(cli, repo.path, ".", "--no-wizard", "--yes")
    assert r.code == 0, r.err
    assert (repo.path / "tropo.toml").is_file()
    assert "findings of the notes here: 0 error(s), 0 warning(s) before init, " in r.out
    assert "warning: init raised the findings of the notes already here (E101 +3): 0 error(s)" in r.err
    report = init(cli, repo.path, ".", "--no-wizard", "--dry-run", "--json").json()
    assert report["kept_dialect"] is None and report["findings"]["before"]["errors"] > 0


def test_init_says_what_a_shared_name_becomes(repo: Repo, cli: Any) -> None:
    """Two notes of one name in two folders read as two nodes before init; under tropo.toml's slug ids they share
    one, and init says that the second (E130) is out of the graph until one is renamed."""
    repo.commit("notes", {"A/Security.md": "# sec a\n", "B/Security.md": "# sec b\n\n[[My Page]]\n",
                          "My Page.md": "# My page\n"})
    r = init(cli, repo.path, ".", "--no-wizard", "--yes")
    assert r.code == 0, r.err
    assert "(E130 +1)" in r.err and "each E130 note is left out of the graph, with its links, until" in r.err, r.err


def test_init_keeps_a_real_obsidian_vaults_reading(tmp_path: Path, cli: Any) -> None:
    bundle = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "kepano-obsidian.bundle"
    if not bundle.is_file():
        pytest.skip(f"{bundle} is not here (the shared corpora sit beside the worktree)")
    vault = tmp_path / "kepano-obsidian"
    subprocess.run(["git", "clone", "-q", str(bundle), str(vault)], check=True, capture_output=True)
    git(vault, "config", "user.name", "Test")
    git(vault, "config", "user.email", "test@example.invalid")
    before = _check_counts(cli, vault)
    r = init(cli, vault, ".", "--no-wizard", "--yes", "--json")
    assert r.code == 0, r.err
    found = r.json()["findings"]
    assert found["before"] == found["after"] and found["before"]["codes"] == before[1]
    assert _check_counts(cli, vault) == before
