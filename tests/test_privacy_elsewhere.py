"""Privacy for a work tree set elsewhere: a notes folder whose Git directory lives somewhere else
(`git --git-dir=~/.notes.git --work-tree=~/notes`, a dotfile-style bare repository, `core.worktree`,
`git --work-tree` alone). Git run in the notes folder finds no repository there, so the privacy boundary
names the Git directory to every `git` it runs: the work tree's `.gitignore`, that Git directory's
`info/exclude` and the private floor decide exactly as in a clone, and no byte of a private note reaches
`recall`, `index`, `privacy explain`, the Git directory's `vivary/` folder or any object in the store.

Private notes are left untracked on purpose: then no object in the whole store may hold a canary
(`git cat-file --batch-all-objects`), which also covers anything reachable from refs/vivary/*."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git

from vivary_git.memory.local.embed import embedder_status

CANARY = "zqxcanary"  # one token: survives lower-casing and stemming, so a scan finds any copy of it
TROPO = "version = 1\n\n[base]\nderive = [\"id\", \"title\"]\nallow_untyped = true\n"
MEMORY = '[memory]\nenabled = true\nprovider = "vivary-local"\n\n[memory.privacy]\nprivate_paths = ["journal/**"]\n'

PUBLIC = {
    "notes/keys.md": "# Key rotation\n\nWe rotate the signing keys every ninety days.\n",
    "notes/garden.md": "# Garden\n\nTomatoes need six hours of sun and deep watering.\n",
}
# vault-relative path -> (its canary's tag, the reason `privacy explain` must give: `{at}` the vault folder)
PRIVATE = {
    "USER.md": ("user", "floor: USER.md"),
    "memory/m.md": ("memdir", "floor: memory/**{ws}"),
    "journal/day.md": ("journal", "config: journal/**{cfg}"),
    "drafts/plan.md": ("ignored", "{at}.gitignore:1:drafts/"),
    "excluded/x.md": ("excluded", "info/exclude"),
}
# Notes Git ignores are never read at all: not even the local hot cache or the object store may hold them.
# (Docs/privacy.md: `.git/vivary/` may hold the parses of other private notes, and a working-tree snapshot
# writes their blobs to the object store as `git add -A` would; neither ever leaves the machine.)
IGNORED = ("ignored", "excluded")

# Run in the notes folder (Git is told the Git directory), or from the clone whose work tree is set elsewhere.
INSIDE = ["git-dir-and-work-tree", "git-dir-and-core.worktree"]
OUTSIDE = ["work-tree-alone", "core.worktree"]
# From outside, a vault in a subfolder is named with --root: the repository is still the one Git finds from
# where the command runs (the clone), and --root a folder of its work tree (docs/sources.md).
CASES = [(how, where) for how in INSIDE + OUTSIDE for where in ("top", "subfolder", "root")]


class Layout:
    """A notes folder (`tree`) whose Git directory (`gitdir`) is elsewhere, and how `git vivary` is run
    on it: the environment Git would hand it and the folder it runs in."""

    def __init__(self, tmp: Path, how: str, where: str) -> None:
        self.tree = tmp / "notes"
        self.tree.mkdir()
        self.at = "" if where == "top" else "vault/"
        if how == "git-dir-and-work-tree":  # dotfile style: a bare repository and --work-tree
            self.gitdir = tmp / "notes.git"
            git(tmp, "init", "-q", "--bare", "-b", "main", str(self.gitdir))
            self.env = {"GIT_DIR": str(self.gitdir), "GIT_WORK_TREE": str(self.tree)}
        elif how == "git-dir-and-core.worktree":  # `git --git-dir=…`, the work tree in the config
            self.gitdir = tmp / "notes.git"
            git(tmp, "init", "-q", "--bare", "-b", "main", str(self.gitdir))
            git(tmp, "config", "--file", str(self.gitdir / "config"), "core.bare", "false")
            git(tmp, "config", "--file", str(self.gitdir / "config"), "core.worktree", str(self.tree))
            self.env = {"GIT_DIR": str(self.gitdir)}
        else:  # run from a clone whose work tree is the notes folder
            holder = tmp / "holder"
            holder.mkdir()
            git(holder, "init", "-q", "-b", "main")
            self.gitdir = holder / ".git"
            if how == "core.worktree":
                git(holder, "config", "core.worktree", str(self.tree))
                self.env = {}
            else:
                self.env = {"GIT_WORK_TREE": str(self.tree)}
        self.outside = how in OUTSIDE
        self.cwd = self.gitdir.parent if self.outside else self.tree
        self.root: list[str] = []
        if where == "subfolder":
            if self.outside:  # the vault cannot be the current folder: Git would find no repository there
                self.root = ["--root", str(self.tree / "vault")]
            else:
                self.cwd = self.tree / "vault"
        elif where == "root":
            self.root = ["--root", str(self.tree / "vault") if self.outside else "vault"]

    def git(self, *args: str, check: bool = True) -> str:
        return git(self.tree, f"--git-dir={self.gitdir}", f"--work-tree={self.tree}", *args, check=check)

    def populate(self, where: str) -> None:
        at = self.at
        files = {f"{at}{p}": f"# {CANARY}{tag} {p}\n\n{CANARY}{tag} rotate the signing keys, tomatoes\n"
                 for p, (tag, _) in PRIVATE.items()}
        files |= {f"{at}{p}": text for p, text in PUBLIC.items()}
        files[f"{at}.gitignore"] = "drafts/\n"
        if where == "root":  # a folder without tropo.toml inside the top workspace, whose rules reach into it
            files["tropo.toml"] = TROPO
            files[".vivary/memory.toml"] = MEMORY.replace("journal/**", "vault/journal/**")
            files["vault/.vivary/memory.toml"] = MEMORY.replace("journal/**", "elsewhere/**")
        else:
            files[f"{at}tropo.toml"] = TROPO
            files[f"{at}.vivary/memory.toml"] = MEMORY
        for rel, text in files.items():
            (self.tree / rel).parent.mkdir(parents=True, exist_ok=True)
            (self.tree / rel).write_text(text, encoding="utf-8")
        exclude = self.gitdir / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        exclude.write_text(f"{at}excluded/\n", encoding="utf-8")
        # Only what is public (and the rules) is committed: any object holding a canary is a leak.
        self.git("add", "--", *[f for f in files if not any(f.endswith(p) for p in PRIVATE)])
        self.git("commit", "-q", "-m", "public notes")

    def reasons(self, where: str) -> dict[str, str]:
        at = self.at
        ws = "" if where == "top" else " (workspace vault/)"  # --root makes its folder a workspace too
        cfg = " (in vault/.vivary/memory.toml)" if where == "subfolder" else ""
        out = {f"{at}{p}": r.format(at=at, ws=ws, cfg=cfg) for p, (_, r) in PRIVATE.items()}
        if where == "root":  # the rule comes from the top workspace's memory.toml
            out["vault/journal/day.md"] = "config: vault/journal/**"
        return out


def _run(cli: Any, lay: Layout, monkeypatch: pytest.MonkeyPatch, *args: str) -> Any:
    with monkeypatch.context() as m:
        for k, v in lay.env.items():
            m.setenv(k, v)
        return cli(*args, cwd=lay.cwd)


@pytest.mark.parametrize(("how", "where"), CASES)
def test_privacy_explain_decides_as_in_a_clone(tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch,
                                              how: str, where: str) -> None:
    lay = Layout(tmp_path, how, where)
    lay.populate(where)
    paths = [str(lay.tree / lay.at / p) for p in [*PUBLIC, *PRIVATE]]
    r = _run(cli, lay, monkeypatch, "privacy", "explain", "--json", *lay.root, "--", *paths)
    assert r.code == 0, r.err
    got = {d["path"]: d for d in r.json()}
    for p in PUBLIC:
        assert got[lay.at + p] == {"path": lay.at + p, "private": False, "reason": ""}
    for p, reason in lay.reasons(where).items():
        assert got[p]["private"], (p, got[p])
        if reason == "info/exclude":  # named by where Git found it: the Git directory, wherever that is
            assert got[p]["reason"] == f"{lay.gitdir / 'info' / 'exclude'}:1:{lay.at}excluded/", got[p]
        else:
            assert got[p]["reason"] == reason, got[p]
    assert CANARY not in r.out + r.err
    # Search hides what the boundary holds back, with the same decision.
    for query in (CANARY, "rotate the signing keys"):
        found = _run(cli, lay, monkeypatch, "find", query, *lay.root)
        assert found.code == 0, found.err
        said = (found.out + found.err).replace(f"'{query}'", "")  # the query is echoed back
        assert CANARY not in said and not any(p in said for p in PRIVATE), said
    assert "notes/keys.md" in found.out


needs_embed = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)


@needs_embed
@pytest.mark.parametrize(("how", "where"), CASES)
def test_no_private_byte_reaches_index_recall_or_the_store(tmp_path: Path, cli: Any,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           how: str, where: str) -> None:
    lay = Layout(tmp_path, how, where)
    lay.populate(where)
    for args in (["check"], ["check", "--rev", "HEAD"]):  # these record parses in refs/vivary/cache
        assert _run(cli, lay, monkeypatch, *args, *lay.root).code in (0, 1)
    r = _run(cli, lay, monkeypatch, "index", "--yes", "--json", *lay.root)
    assert r.code == 0, r.err
    # Ignored notes (drafts/, excluded/) are not read at all; the floor and private_paths ones are refused.
    assert (r.json()["indexed"], r.json()["private"]) == (len(PUBLIC), len(PRIVATE) - 2), r.out
    outputs = [r.out + r.err]
    for query in (CANARY, f"{CANARY}user rotate the signing keys", "tomatoes"):
        r = _run(cli, lay, monkeypatch, "recall", query, "--json", "--k", "50", *lay.root)
        assert r.code == 0, r.err
        assert {h["path"] for h in r.json()} <= set(PUBLIC), r.out  # relative to the vault
        outputs.append(r.out + r.err)
    assert "keys" in outputs[-2] and "garden" in outputs[-1], "admitted notes are indexed and found"
    for text in outputs:
        assert CANARY not in text.lower()
        assert not any(p in text for p in PRIVATE)
    # Committed private notes (floor, private_paths): recording that tree leaves them out.
    lay.git("add", "--", *[lay.at + p for p, (tag, _) in PRIVATE.items() if tag not in IGNORED])
    lay.git("commit", "-q", "-m", "private notes, tracked anyway")
    assert _run(cli, lay, monkeypatch, "check", "--rev", "HEAD", *lay.root).code in (0, 1)
    # The derived data lives in the Git directory, not in the notes folder.
    assert not (lay.tree / ".git").exists()
    files = [p for p in (lay.gitdir / "vivary").rglob("*") if p.is_file()]
    memory = [p for p in files if "memory" in p.relative_to(lay.gitdir / "vivary").parts[:1]]
    assert any(p.name == "vectors.f32" for p in memory), files
    for p in files:
        data = p.read_bytes().lower()
        for tag in IGNORED:
            assert f"{CANARY}{tag}".encode() not in data, (p, tag)
        if p in memory:  # the memory index: no private note at all
            assert CANARY.encode() not in data, p
            assert not any(path.encode().lower() in data for path in PRIVATE), p
    every = _objects(lay, ["cat-file", "--batch-all-objects", "--batch"])
    assert b"rotate the signing keys every ninety days" in every, "the scan sees the committed notes"
    for tag in IGNORED:
        assert f"{CANARY}{tag}".encode() not in every.lower(), tag
    refs = lay.git("for-each-ref", "--format=%(refname)", "refs/vivary").split()
    assert lay.git("rev-list", "--count", "refs/vivary/cache").strip() == "2", "both trees were recorded"
    ids = "".join(line.split()[0] + "\n" for line in lay.git("rev-list", "--objects", *refs).splitlines())
    shared = _objects(lay, ["cat-file", "--batch"], ids.encode())
    assert b"Key rotation" in shared, "the public notes' parses were recorded"
    assert CANARY.encode() not in shared.lower()
    assert not any(path.encode() in shared for path in PRIVATE)


def _objects(lay: Layout, args: list[str], stdin: bytes | None = None) -> bytes:
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    return subprocess.run(["git", f"--git-dir={lay.gitdir}", *args], input=stdin, capture_output=True, check=True,
                          env=env).stdout


@pytest.mark.parametrize("how", INSIDE + OUTSIDE)
def test_the_commit_guard_decides_in_a_work_tree_set_elsewhere(tmp_path: Path, how: str) -> None:
    """The pre-commit hook, run by a real `git commit` in each layout: a staged floor note is refused by
    name, a public one commits (it used to refuse every commit: privacy could not be decided)."""
    lay = Layout(tmp_path, how, "top")
    (lay.tree / "a.md").write_text("# A\n", encoding="utf-8")
    (lay.tree / "USER.md").write_text(f"# {CANARY}user\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
    env |= lay.env | {"PATH": str(Path(sys.executable).parent) + os.pathsep + env["PATH"]}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=lay.cwd, env=env, capture_output=True, text=True, check=False)

    assert run("git", "vivary", "hooks", "install").returncode == 0
    lay.git("add", "--", "a.md", "USER.md")
    refused = run("git", "commit", "-q", "-m", "with USER.md")
    assert refused.returncode != 0
    said = refused.stdout + refused.stderr  # Git sends a hook's output to its stderr
    assert "USER.md:1: error P101: private file staged (floor: USER.md)" in said, said
    assert CANARY not in refused.stdout + refused.stderr
    lay.git("rm", "-q", "--cached", "--", "USER.md")
    done = run("git", "commit", "-q", "-m", "public only")
    assert done.returncode == 0, done.stdout + done.stderr
    assert lay.git("ls-files").split() == ["a.md"]


@pytest.mark.parametrize("how", INSIDE)
def test_doctor_names_the_leaks_in_a_work_tree_set_elsewhere(tmp_path: Path, cli: Any,
                                                             monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    """`doctor` decides with the same boundary: the private notes Git would add are named, not
    "privacy cannot be decided"."""
    lay = Layout(tmp_path, how, "top")
    lay.populate("top")
    r = _run(cli, lay, monkeypatch, "doctor", "--json")
    got = r.json()["privacy"]
    assert (got["status"], got["leaks"]) == ("failed", ["USER.md", "journal/day.md", "memory/m.md"]), r.out
    assert CANARY not in r.out + r.err


@pytest.mark.parametrize("how", ["linked-worktree", "gitdir-file"])
def test_a_repository_found_through_a_git_file_needs_nothing_special(tmp_path: Path, cli: Any, how: str) -> None:
    """A linked worktree (`git worktree add`) and a `.git` file naming the repository (a submodule,
    `git init --separate-git-dir`): Git finds the repository from the top, and its info/exclude applies."""
    tree = tmp_path / "notes"
    if how == "linked-worktree":
        main = tmp_path / "main"
        main.mkdir()
        git(main, "init", "-q", "-b", "main")
        git(main, "commit", "-q", "--allow-empty", "-m", "start")
        git(main, "worktree", "add", "-q", str(tree))
        exclude = main / ".git" / "info" / "exclude"  # shared by every worktree
    else:
        (tmp_path / "modules").mkdir()
        git(tmp_path, "init", "-q", "-b", "main", f"--separate-git-dir={tmp_path / 'modules' / 'notes'}", str(tree))
        exclude = tmp_path / "modules" / "notes" / "info" / "exclude"
    assert (tree / ".git").is_file()
    exclude.parent.mkdir(exist_ok=True)
    exclude.write_text("excluded/\n", encoding="utf-8")
    (tree / ".gitignore").write_text("drafts/\n", encoding="utf-8")
    r = cli("privacy", "explain", "--json", "a.md", "USER.md", "drafts/d.md", "excluded/x.md", cwd=tree)
    assert r.code == 0, r.err
    assert {d["path"]: d["reason"] for d in r.json()} == {
        "a.md": "", "USER.md": "floor: USER.md", "drafts/d.md": ".gitignore:1:drafts/",
        "excluded/x.md": f"{exclude.resolve()}:1:excluded/",
    }
