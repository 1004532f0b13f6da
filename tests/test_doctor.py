"""`git vivary doctor`: a read-only report whose every problem names its fix, exit 0 ok / 1 not."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, run_git_vivary

MEMORY_KEYS = {"enabled", "provider", "mode", "status", "config", "privacy", "detail"}
ENABLE_LOCAL = """[memory]
enabled = true
mode = "semantic-provider"
provider = "vivary-local"
"""
ENABLE_COGNEE = """[memory]
enabled = true
mode = "semantic-provider"
provider = "cognee"
"""


@pytest.fixture
def ws(repo: Repo, cli: Any) -> Repo:
    """A committed second-brain scaffold with a disabled local memory policy."""
    r = cli("init", ".", "--no-wizard", "--memory", "local", "--yes", cwd=repo.path)
    assert r.code == 0, r.err
    return repo


def doctor(cli: Any, cwd: Path) -> tuple[int, dict[str, Any]]:
    r = cli("doctor", "--json", cwd=cwd)
    return r.code, json.loads(r.out)


def fingerprint_tree(*roots: Path) -> dict[str, str]:
    """Every file's bytes and every folder and link under the roots: what "wrote nothing" means."""
    out: dict[str, str] = {}
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames:
                out[os.path.join(dirpath, name)] = "dir"
            for name in filenames:
                path = os.path.join(dirpath, name)
                if os.path.islink(path):
                    out[path] = "link:" + os.readlink(path)
                else:
                    with open(path, "rb") as fh:
                        out[path] = hashlib.sha256(fh.read()).hexdigest()
    return out


def test_doctor_is_read_only(ws: Repo, cli: Any) -> None:
    # Make every section do real work: an index to compare (doctor builds the snapshot, privacy decided for
    # HEAD's tree), dirty and untracked notes, private files.
    ws.commit("enable memory", {".vivary/memory.toml": ENABLE_LOCAL})
    indexed = run_git_vivary(["index", "--yes", "--rev", "HEAD"], ws.path)
    assert indexed.returncode == 0, indexed.stderr
    ws.write({"changes/new-idea.md": "# New idea\n", "MEMORY.md": "private\n", "memory/today.md": "private\n"})
    with open(ws.path / "modules/index.md", "a") as fh:
        fh.write("\nedited\n")
    before = fingerprint_tree(ws.path)
    proc = run_git_vivary(["doctor", "--json"], ws.path)
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["graph"]["worktree_changes"] == 2 and report["memory"]["status"] == "healthy"
    run_git_vivary(["doctor"], ws.path)
    assert fingerprint_tree(ws.path) == before
    # The comparison has teeth: reading the working tree (as `check` does) writes to .git.
    run_git_vivary(["check"], ws.path)
    assert fingerprint_tree(ws.path) != before


def test_healthy_scaffold_report_shape(ws: Repo, cli: Any) -> None:
    code, d = doctor(cli, ws.path)
    assert code == 0 and d["ok"] is True
    assert set(d) == {"ok", "repo", "workspace", "graph", "privacy", "hooks", "cache", "memory", "problems"}
    assert set(d["memory"]) == MEMORY_KEYS
    assert d["memory"] == {"enabled": False, "provider": "vivary-local", "mode": "semantic-provider",
                           "status": "disabled", "config": ".vivary/memory.toml", "privacy": "not-indexed",
                           "detail": d["memory"]["detail"]}
    assert d["repo"]["head"] == ws.git("rev-parse", "HEAD").strip()
    assert d["workspace"] == {"root": str(ws.path.resolve()), "config": "tropo.toml", "source": "HEAD",
                              "dialect": "vivary",
                              "dialect_reason": "tropo.toml workspace: the contract's ids and rules"}
    assert d["graph"]["nodes"] == 6 and d["graph"]["broken"] == 0 and d["graph"]["errors"] == 0
    assert d["cache"]["ref"] == "refs/vivary/cache"
    assert d["cache"]["present"] is (ws.git("rev-parse", "-q", "--verify", "refs/vivary/cache", check=False) != "")
    hooks = [p for p in d["problems"] if p["area"] == "hooks"]
    assert hooks and hooks[0]["level"] == "warning" and "git vivary hooks install" in hooks[0]["fix"]
    text = cli("doctor", cwd=ws.path)
    assert text.code == 0 and "memory     disabled" in text.out and "fix: git vivary hooks install" in text.out


def test_no_config_means_memory_disabled_exactly_as_the_contract(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"a.md": "# A\n"})
    code, d = doctor(cli, repo.path)
    assert code == 0
    assert d["memory"] == {"enabled": False, "provider": "none", "mode": "none", "status": "disabled",
                           "config": None, "privacy": "not-indexed", "detail": ""}
    assert d["workspace"]["config"] == "zero-config"


def test_tracked_private_file_fails_privacy_and_memory(ws: Repo, cli: Any) -> None:
    ws.write({"USER.md": "secret me\n", ".vivary/memory.toml": ENABLE_LOCAL})
    ws.git("add", "-f", "USER.md")
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["ok"] is False
    assert d["privacy"]["status"] == "failed" and d["privacy"]["leaks"] == ["USER.md"]
    assert d["memory"]["status"] == "privacy-failed" and d["memory"]["privacy"] == "failed"
    fixes = [p["fix"] for p in d["problems"] if p["area"] == "privacy"]
    assert fixes and "git rm --cached" in fixes[0]


def test_untracked_private_file_without_ignore_rule_fails(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"a.md": "# A\n"})
    repo.write({"memory/diary.md": "dear diary\n"})
    code, d = doctor(cli, repo.path)
    assert code == 1
    assert d["privacy"]["leaks"] == ["memory/diary.md"]
    # Ignored by a rule Git honours (here info/exclude, not .gitignore): no longer a leak.
    (repo.path / ".git/info").mkdir(exist_ok=True)
    (repo.path / ".git/info/exclude").write_text("/memory/\n")
    code, d = doctor(cli, repo.path)
    assert code == 0 and d["privacy"]["status"] == "ok"


def test_unguarded_private_paths_are_a_warning(ws: Repo, cli: Any) -> None:
    (ws.path / ".gitignore").write_text("node_modules/\n")
    ws.git("commit", "-q", "-m", "drop the privacy block", "--", ".gitignore")
    code, d = doctor(cli, ws.path)
    # USER.md and friends exist and are now untracked-not-ignored: that is a leak, not just a warning.
    assert code == 1 and "USER.md" in d["privacy"]["leaks"]
    for rel in ("USER.md", "MEMORY.md"):
        (ws.path / rel).unlink()
    for folder in ("memory", "heartbeat-reports"):
        for f in (ws.path / folder).iterdir():
            f.unlink()
        (ws.path / folder).rmdir()
    code, d = doctor(cli, ws.path)
    assert code == 0 and d["privacy"]["status"] == "ok"
    assert "USER.md" in d["privacy"]["unguarded"]
    assert any(p["area"] == "privacy" and p["level"] == "warning" for p in d["problems"])


def test_invalid_memory_config_is_misconfigured(ws: Repo, cli: Any) -> None:
    ws.write({".vivary/memory.toml": "[memory]\nenabled = \"yes\"\n"})
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["memory"]["status"] == "misconfigured"
    assert ".vivary/memory.toml" in d["memory"]["detail"]
    ws.write({".vivary/memory.toml": "[memory]\nenabled = true\nprovider = \"cognee\"\n[memory.cognee]\n"
              "api_key = \"sk-abcdefghijklmnopqrstuvwx\"\n"})
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["memory"]["status"] == "misconfigured" and "sk-abc" not in json.dumps(d)


def test_cognee_enabled_without_the_library_is_unavailable(ws: Repo, cli: Any) -> None:
    if importlib.util.find_spec("cognee") is not None:
        pytest.skip("the Cognee library is installed here (tests/test_cognee.py hides it instead)")
    ws.write({".vivary/memory.toml": ENABLE_COGNEE})
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["memory"]["status"] == "unavailable"
    assert any("pip install 'vivary-git[cognee]'" in p["fix"] for p in d["problems"] if p["area"] == "memory")


def test_local_memory_configured_healthy_and_stale(ws: Repo, cli: Any) -> None:
    ws.commit("enable memory", {".vivary/memory.toml": ENABLE_LOCAL})
    code, d = doctor(cli, ws.path)
    assert code == 0 and d["memory"]["status"] == "configured" and "git vivary index --yes" in d["memory"]["detail"]
    # Healthy after a real index of the (clean) working tree, which is HEAD's tree.
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 0, r.err
    code, d = doctor(cli, ws.path)
    assert code == 0 and d["memory"]["status"] == "healthy", d["memory"]
    # A commit after the index makes it stale.
    ws.commit("edit", {"modules/index.md": (ws.path / "modules/index.md").read_text() + "\nA new line.\n"})
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["memory"]["status"] == "stale"
    assert any(p["fix"].startswith("git vivary index --yes") for p in d["problems"])


def test_a_file_in_the_place_of_the_memory_folder_is_named_not_no_index_yet(ws: Repo, cli: Any) -> None:
    """Doctor said "no index yet" (ok) while `.git/vivary/memory` was a file; it names the file and the fix, as
    `index` and `recall` do (tests/test_memory_local.py), and leaves it alone."""
    if importlib.util.find_spec("hnswlib") is None or importlib.util.find_spec("onnxruntime") is None:
        pytest.skip("needs the [embed] extra: without it doctor stops at `unavailable`")
    ws.commit("enable memory", {".vivary/memory.toml": ENABLE_LOCAL})
    memory = ws.path / ".git" / "vivary" / "memory"
    memory.parent.mkdir(parents=True, exist_ok=True)
    memory.write_text("not a folder\n")
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["memory"]["status"] == "misconfigured", d["memory"]
    assert d["memory"]["detail"].startswith(f"{memory}: a file is in the place of a folder")
    assert any(p["area"] == "memory" and "remove it" in p["message"] for p in d["problems"])
    assert memory.read_text() == "not a folder\n"

def test_local_memory_without_the_extra_is_unavailable(ws: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.commit("enable memory", {".vivary/memory.toml": ENABLE_LOCAL})
    # An install without the [embed] extra, as test_memory_local simulates it: find_spec says the runtime
    # modules are absent (doctor never imports them).
    real = importlib.util.find_spec

    def find_spec(name: str, package: str | None = None) -> Any:
        return None if name.split(".")[0] in ("hnswlib", "onnxruntime") else real(name, package)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["memory"]["status"] == "unavailable"
    assert any("vivary-git[embed]" in p["fix"] for p in d["problems"])



@pytest.mark.parametrize("damage", ["tag", "garbage"])
def test_a_cache_ref_every_command_reads_as_damaged_is_damaged_in_doctor(ws: Repo, cli: Any, damage: str) -> None:
    """Doctor read the cache ref as `refs/vivary/cache^{commit}`, which peels an annotated tag: a ref naming a tag was
    "at <commit>" and ok, while every other command calls it damage (store/read.py never peels); a ref file that
    does not parse was "absent". Both are now the damage `cache status` names, with `cache drop` as the fix."""
    assert cli("check", "--rev", "HEAD", cwd=ws.path).code == 0
    if damage == "tag":
        ws.git("tag", "-a", "-m", "not a cache", "cachetag", "refs/vivary/cache")
        ws.git("update-ref", "refs/vivary/cache", ws.git("rev-parse", "cachetag").strip())
        said = "it names an annotated tag"
    else:
        (ws.path / ".git" / "refs" / "vivary" / "cache").write_text("garbage\n")
        said = "the ref itself is unreadable"
    assert said in cli("cache", "status", cwd=ws.path).out  # the store's reading, which doctor agrees with
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["cache"] == {"ref": "refs/vivary/cache", "present": True, "commit": None}, d["cache"]
    problem = next(p for p in d["problems"] if p["area"] == "cache")
    assert problem["level"] == "error" and said in problem["message"] and "git vivary cache drop" in problem["fix"]
    r = cli("doctor", cwd=ws.path)
    assert "cache      refs/vivary/cache damaged" in r.out, r.out
    assert cli("cache", "drop", cwd=ws.path).code == 0
    code, d = doctor(cli, ws.path)
    assert d["cache"]["present"] is False and not any(p["area"] == "cache" for p in d["problems"])

def test_findings_and_hooks(ws: Repo, cli: Any) -> None:
    ws.commit("broken ref", {"changes/oops.md": "---\nproject: x\nstatus: planned\nslice: s\n"
                             "related_modules: [nowhere]\n---\n# Oops\n"})
    assert cli("hooks", "install", cwd=ws.path).code == 0
    code, d = doctor(cli, ws.path)
    assert code == 1 and d["graph"]["errors"] == 1 and d["graph"]["codes"] == {"W220": 1}
    assert d["graph"]["broken"] == 1
    assert d["hooks"]["installed"] is True and d["hooks"]["vivary_hooks"] == ["pre-commit", "pre-merge-commit"]
    assert next(p["fix"] for p in d["problems"] if p["area"] == "graph").startswith("git vivary check")


def test_pre_commit_config_needs_the_framework_hook(ws: Repo, cli: Any) -> None:
    ws.commit("pre-commit", {".pre-commit-config.yaml": "repos:\n- repo: local\n  hooks:\n  - id: vivary-check\n"})
    code, d = doctor(cli, ws.path)
    assert code == 0  # a missing hook is a warning
    assert d["hooks"] == {"installed": False, "hooks_dir": str(ws.path / ".git/hooks"), "vivary_hooks": [],
                          "pre_commit_config": True}
    assert any(p["fix"].startswith("pre-commit install") for p in d["problems"])
    installed = subprocess.run([str(Path(sys.executable).parent / "pre-commit"), "install"], cwd=ws.path,
                               capture_output=True, text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    _, d = doctor(cli, ws.path)
    assert d["hooks"]["installed"] is True and d["hooks"]["vivary_hooks"] == []
    assert not any(p["area"] == "hooks" for p in d["problems"])



def test_the_frameworks_hook_is_not_ours_when_its_python_path_says_vivary(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """The pre-commit framework's script names the Python that installed it (`INSTALL_PYTHON=...`): from a
    clone called `vivary-git` that path holds the word. Our hooks are known by their marker line, or by a
    line calling the gate, never by the word."""
    venv = Path(sys.prefix)
    clone = tmp_path / "vivary-git"  # a clone of this project, as a newcomer names it
    clone.mkdir()
    (clone / ".venv").symlink_to(venv, target_is_directory=True)
    python = clone / ".venv" / "bin" / Path(sys.executable).name
    ws.commit("pre-commit", {".pre-commit-config.yaml": "repos: []\n"})
    installed = subprocess.run([str(python), "-m", "pre_commit", "install"], cwd=ws.path, capture_output=True,
                               text=True, check=False)
    assert installed.returncode == 0, installed.stderr
    assert f"INSTALL_PYTHON={python}" in (ws.path / ".git/hooks/pre-commit").read_text()
    _, d = doctor(cli, ws.path)
    assert d["hooks"]["installed"] is False and d["hooks"]["vivary_hooks"] == []
    assert any(p["area"] == "hooks" for p in d["problems"])
    # A hand-written hook that calls the gate runs vivary; so does ours.
    (ws.path / ".git/hooks/post-commit").write_text("#!/bin/sh\nexec git vivary hooks run post-commit\n")
    _, d = doctor(cli, ws.path)
    assert d["hooks"]["installed"] is True and d["hooks"]["vivary_hooks"] == ["post-commit"]

def test_unborn_and_not_a_repository(tmp_path: Path, cli: Any) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    code, d = doctor(cli, plain)
    assert code == 1 and d["problems"][0]["area"] == "repo" and "git vivary init" in d["problems"][0]["fix"]
    assert set(d["memory"]) == MEMORY_KEYS
    r = cli("init", "fresh", "--no-wizard", cwd=tmp_path)
    assert r.code == 0
    code, d = doctor(cli, tmp_path / "fresh")
    assert code == 0 and d["graph"] is None and d["repo"]["head"] is None
    assert any("no commits yet" in p["message"] for p in d["problems"])
    assert d["privacy"]["status"] == "ok"  # the scaffold's private files are ignored even before a commit
    assert git(tmp_path / "fresh", "rev-parse", "-q", "--verify", "HEAD", check=False) == ""


def test_leaks_are_decided_by_the_privacy_boundary(repo: Repo, cli: Any) -> None:
    """Doctor's leaks are what the one privacy decision (and so the commit guard) calls private: the
    `.markdown` twins, the floor at every workspace root, `private_paths`, sensitive names; not the
    committed config under `.vivary/`."""
    repo.commit("notes", {"a.md": "# A\n", "vault/tropo.toml": "version = 1\n", "vault/b.md": "# B\n",
                          ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["journal/**"]\n',
                          ".gitignore": "USER.md\nMEMORY.md\n/memory/\n/heartbeat-reports/\n/.strato/private/\n"})
    repo.write({"notes/USER.markdown": "me\n", "vault/memory/x.md": "diary\n", "journal/day.md": "day\n",
                "notes/credentials.json": "{}\n"})
    code, d = doctor(cli, repo.path)
    assert code == 1 and d["privacy"]["status"] == "failed"
    assert d["privacy"]["leaks"] == ["journal/day.md", "notes/USER.markdown", "notes/credentials.json",
                                     "vault/memory/x.md"]
    # From the nested workspace, its own leak, named relative to it.
    code, d = doctor(cli, repo.path / "vault")
    assert code == 1 and d["privacy"]["leaks"] == ["memory/x.md"]
    # A sensitive name the guard is told to allow is not a leak either.
    repo.git("config", "--add", "vivary.guardAllow", "notes/credentials.json")
    for rel in ("notes/USER.markdown", "vault/memory/x.md", "journal/day.md"):
        (repo.path / rel).unlink()
    code, d = doctor(cli, repo.path)
    assert code == 0 and d["privacy"] == {"status": "ok", "leaks": [], "unguarded": d["privacy"]["unguarded"],
                                          "detail": ""}


def test_a_repository_nested_in_the_work_tree_is_one_path_to_the_privacy_check(repo: Repo, cli: Any) -> None:
    """Git lists an untracked repository inside the work tree as its folder, `emb/`, without looking inside
    (`git add` would add it as one gitlink, `emb`): doctor decides privacy for that path as the commit guard
    would, not "privacy cannot be decided" over the slash."""
    repo.commit("notes", {"a.md": "# A\n", ".gitignore": "USER.md\nMEMORY.md\n/memory/\n"})
    for folder in ("emb", "notes/clone"):
        nested = repo.path / folder
        nested.mkdir(parents=True)
        git(nested, "init", "-q")
        (nested / "USER.md").write_text("not ours\n")
        git(nested, "add", "-A")
        git(nested, "commit", "-q", "-m", "nested")
    code, d = doctor(cli, repo.path)
    assert d["privacy"]["status"] == "ok", d["problems"]
    assert not [p for p in d["problems"] if p["area"] == "privacy"]
    assert code == 0
    # A private file beside them is still found.
    repo.write({"journal/USER.markdown": "me\n"})
    code, d = doctor(cli, repo.path)
    assert code == 1 and d["privacy"]["leaks"] == ["journal/USER.markdown"]


def test_unguarded_probes_come_from_the_floor(repo: Repo, cli: Any) -> None:
    repo.commit("notes", {"a.md": "# A\n", ".gitignore": "USER.md\nMEMORY.md\n/memory/\n"})
    repo.write({"memory/.keep": ""})  # a private folder exists: doctor probes where new files would land
    _, d = doctor(cli, repo.path)
    assert set(d["privacy"]["unguarded"]) == {"USER.markdown", "MEMORY.markdown", "heartbeat-reports/",
                                              ".strato/private/"}


def test_the_example_passes_its_own_privacy_check(tmp_path: Path, cli: Any) -> None:
    """examples/field-notes as scripts/demo lays it out (`git add -A`, then a commit): its .gitignore keeps
    every private file out, so doctor finds no leak."""
    ws = tmp_path / "field-notes"
    shutil.copytree(Path(__file__).resolve().parents[1] / "examples" / "field-notes", ws)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "example"]):
        git(ws, *args)
    tracked = git(ws, "ls-files").splitlines()
    assert "USER.md" not in tracked and "MEMORY.md" not in tracked and not any(p.startswith("memory/") for p in tracked)
    _, d = doctor(cli, ws)
    assert d["privacy"] == {"status": "ok", "leaks": [], "unguarded": [], "detail": ""}
    assert not [p for p in d["problems"] if p["area"] == "privacy"]


def test_doctor_and_index_agree_about_a_leak(repo: Repo, cli: Any) -> None:
    """A private file Git tracks is a leak (Git pushes it); the index holds it back all the same. Doctor says
    exactly that, and `index --yes` does it."""
    repo.commit("notes", {"tropo.toml": "version = 1\n", "notes/a.md": "# Alpha\n\nrotate the keys\n",
                          "USER.md": "# me\n\nzqxleakcanary\n", ".vivary/memory.toml": ENABLE_LOCAL})
    code, d = doctor(cli, repo.path)
    assert code == 1 and d["privacy"]["leaks"] == ["USER.md"] and d["memory"]["status"] == "privacy-failed"
    [said] = [p for p in d["problems"] if p["area"] == "memory"]
    assert "nothing may be indexed" not in said["fix"]
    assert "holds every private file back" in said["message"]
    r = cli("index", "--yes", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["indexed"] == 1 and r.json()["private"] == 1  # notes/a.md in; USER.md held back
    hits = cli("recall", "zqxleakcanary me", "--json", cwd=repo.path).json()
    assert [h["path"] for h in hits] == ["notes/a.md"]


def test_a_rev_that_names_no_commit_is_said_to_name_what_it_does(repo: Repo, cli: Any) -> None:
    """`--rev` with a tag that points at a file's content (or at a tree) said "no such commit", as if nothing
    were there: it names what the revision is instead. A name that is nowhere is still "no such commit"."""
    repo.commit("notes", {"notes/a.md": "# A\n"})
    blob = repo.git("rev-parse", "HEAD:notes/a.md").strip()
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    notes = repo.git("rev-parse", "HEAD:notes").strip()
    repo.git("tag", "blobtag", blob)
    repo.git("tag", "-a", "-m", "a file", "annotated", blob)
    repo.git("tag", "treetag", tree)
    for rev, what in (("blobtag", f"a file's content (blob {blob[:12]})"),
                      ("annotated", f"a file's content (blob {blob[:12]})"),
                      ("treetag", f"a tree ({tree[:12]})"), ("HEAD:notes", f"a tree ({notes[:12]})"), ("nope", "")):
        r = cli("doctor", "--json", "--rev", rev, cwd=repo.path)
        said = [p["message"] for p in r.json()["problems"] if p["area"] == "graph"]
        want = f"--rev {rev}: names {what}, not a commit, and doctor reports a commit" if what else \
            f"--rev {rev}: no such commit"
        assert r.code == 1, (rev, r.out)
        assert said == [want], rev


def test_a_root_that_is_a_symbolic_link_in_the_commit_alone_is_refused_as_check_refuses_it(repo: Repo,
                                                                                            cli: Any) -> None:
    """Doctor decides `--root` as every command does: the folder on disk, then the commit it reports. A link the
    commit holds where the working tree has the folder was a `workspace` problem whose fix was to fix a file."""
    repo.commit("notes", {"vault/a.md": "# A\n"})
    os.symlink("vault", repo.path / "linked")
    repo.commit("link")
    os.remove(repo.path / "linked")
    shutil.copytree(repo.path / "vault", repo.path / "linked")
    r = cli("doctor", "--root", "linked", cwd=repo.path)
    assert r.code == 2 and r.out == "", r.out
    assert r.err == cli("check", "--rev", "HEAD", "--root", "linked", cwd=repo.path).err.replace("check", "doctor")
    assert "'linked' is a symbolic link to 'vault' in HEAD" in r.err and r.err.endswith("--root vault\n"), r.err


def test_a_root_that_is_a_symbolic_link_is_named_in_the_tree_that_holds_it(repo: Repo, cli: Any) -> None:
    """A link committed (and checked out) is refused in the commit doctor reports, in `check --rev`'s words: it
    said "in working tree" for it. One only on disk is the working tree's, whatever the commit holds there."""
    repo.commit("notes", {"vault/a.md": "# A\n"})
    os.symlink("vault", repo.path / "linked")
    repo.commit("link")
    os.symlink("vault", repo.path / "loose")
    for rev in ((), ("--rev", "HEAD"), ("--rev", "main")):
        r = cli("doctor", *rev, "--root", "linked", cwd=repo.path)
        label = rev[1] if rev else "HEAD"
        assert r.code == 2 and f"'linked' is a symbolic link to 'vault' in {label}, not a folder" in r.err, r.err
        assert r.err == cli("check", "--rev", label, "--root", "linked", cwd=repo.path).err.replace("check", "doctor")
        r = cli("doctor", *rev, "--root", "loose", cwd=repo.path)
        assert r.code == 2 and "'loose' is a symbolic link to 'vault' in working tree, not a folder" in r.err, r.err
    r = cli("doctor", "--rev", "HEAD~1", "--root", "linked", cwd=repo.path)
    assert r.code == 2 and "'linked' is a symbolic link to 'vault' in working tree, not a folder" in r.err, r.err


def test_a_rev_that_is_a_range_is_said_to_be_one(repo: Repo, cli: Any) -> None:
    """`--rev A..B` said "no such commit" (and `^A` passed Git's check, to fail later as a workspace problem whose
    fix was to fix a file): a range is said to be one, not one revision, with the commit to name instead."""
    repo.commit("one", {"notes/a.md": "# A\n"})
    repo.commit("two", {"notes/b.md": "# B\n"})
    for rev, end in (("HEAD~1..HEAD", "HEAD"), ("HEAD~1...main", "main"), ("HEAD~1..", "HEAD"), ("^HEAD~1", None)):
        r = cli("doctor", "--json", "--rev", rev, cwd=repo.path)
        problems = [p for p in r.json()["problems"] if p["level"] == "error"]
        assert r.code == 1 and [p["area"] for p in problems] == ["graph"], (rev, r.out)
        assert problems[0]["message"] == (f"--rev {rev}: names a range of commits, not one revision, and doctor "
                                          "reports one commit"), rev
        assert problems[0]["fix"] == (f"git vivary doctor --rev {end}   # the commit at the end of the range"
                                      if end else "name one commit, branch or tag"), rev
    assert cli("doctor", "--rev", "HEAD~1", cwd=repo.path).code == 0


def test_an_exact_refspec_an_earlier_sync_setup_wrote_is_named_with_its_fix(ws: Repo, cli: Any) -> None:
    # Git's own `git fetch origin` stops at a refspec naming one ref the remote lacks; `sync setup` once wrote two.
    ws.git("remote", "add", "origin", str(ws.path))
    ws.git("config", "--add", "remote.origin.fetch", "+refs/notes/vivary:refs/vivary-fetch/origin/notes")
    _, d = doctor(cli, ws.path)
    found = [p for p in d["problems"] if p["area"] == "cache"]
    assert len(found) == 1 and found[0]["level"] == "warning"
    assert "remote.origin.fetch holds +refs/notes/vivary:refs/vivary-fetch/origin/notes" in found[0]["message"]
    assert found[0]["fix"].startswith("git vivary sync setup origin")
    assert cli("sync", "setup", "origin", cwd=ws.path).code == 0  # the fix replaces it with a pattern
    _, d = doctor(cli, ws.path)
    assert [p for p in d["problems"] if p["area"] == "cache"] == []
