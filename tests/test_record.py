"""What may be recorded in refs/vivary/cache (record.py): no byte of a private file, whatever the
workspace layout (top level, a subfolder, `--root`), locally and through `sync push` to a remote; and every
workspace of a tree recorded as its own, whatever other folder holds the same tree.

Every object reachable from refs/vivary/* and refs/notes/vivary is scanned (`git rev-list --objects`
+ `git cat-file --batch`) for canary strings planted in every kind of private file."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git, run_git_vivary
from test_store import objects_reachable

from vivary_git.config import FORMAT_VERSION
from vivary_git.git import Repo as GitRepo
from vivary_git.refnames import CACHE_REF
from vivary_git.store.format import TreeSummary
from vivary_git.store.read import Snapshot
from vivary_git.store.write import Changes, write
from vivary_git.workspace import open_workspace


def _private_files(at: str) -> dict[str, str]:
    """Every kind of private file for a workspace at `at` ("" or "vault/"), each holding a canary in its
    title, frontmatter, wikilinks and (for a name) its path."""
    def note(tag: str) -> str:
        return (f"---\nstatus: PRIVATE-CANARY-{tag}-status\nid_hint: PRIVATE-CANARY-{tag}-field\n---\n"
                f"# PRIVATE-CANARY-{tag}-title\n\n[[PRIVATE-CANARY-{tag}-link]]\n")
    return {
        f"{at}USER.md": note("user"),
        f"{at}MEMORY.md": note("memory-file"),
        f"{at}notes/USER.markdown": note("user-markdown"),
        f"{at}memory/x.md": note("memory"),
        f"{at}heartbeat-reports/r.md": note("heartbeat"),
        f"{at}.strato/private/p.md": note("strato"),
        f"{at}journal/day.md": note("private-paths"),
        f"{at}notes/credentials.md": note("sensitive"),
        f"{at}notes/passwords.md": note("password"),
        f"{at}drafts/plan.md": note("ignored"),
        f"{at}.vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["journal/**"]\n',
        f"{at}public/open.md": "# PUBLIC-MARKER title\n\nPUBLIC-MARKER body [[plan]] [[x]]\n",
        f"{at}tropo.toml": TROPO,
    }


PRIVATE = ("USER.md", "MEMORY.md", "USER.markdown", "memory/x.md", "heartbeat-reports", ".strato", "journal/day",
           "notes/credentials", "notes/passwords", "drafts/plan")


def _scan(path: Path) -> bytes:
    refs = git(path, "for-each-ref", "--format=%(refname)", "refs/vivary", "refs/notes/vivary").split()
    return objects_reachable(path, *refs)


def _assert_clean(blob: bytes) -> None:
    assert b"PUBLIC-MARKER" in blob, "the scan sees what was written"
    assert b"PRIVATE-CANARY" not in blob
    for private in PRIVATE:
        assert private.encode() not in blob, private


@pytest.mark.parametrize("layout", ["top", "subfolder", "root"])
def test_no_private_byte_reaches_the_refs_in_any_layout(repo: Repo, cli: Any, tmp_path: Path, layout: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    at = "" if layout == "top" else "vault/"
    files = _private_files(at)
    if layout == "root":
        # --root names a plain folder inside a workspace: the enclosing workspace's rules still apply.
        del files["vault/tropo.toml"]
        files["vault/.vivary/memory.toml"] = '[memory.privacy]\nprivate_paths = ["journal/**"]\n'
        files[".vivary/memory.toml"] = '[memory.privacy]\nprivate_paths = ["vault/elsewhere/**"]\n'
        files["vault/elsewhere/e.md"] = "# PRIVATE-CANARY-enclosing-title\n"
        files["tropo.toml"] = TROPO
    files[".gitignore"] = "drafts/\n"
    repo.write(files)
    repo.git("add", "-A")
    repo.git("add", "-f", f"{at}drafts/plan.md")  # ignored, yet tracked: still private
    repo.git("commit", "-q", "-m", "canaries")
    repo.git("config", "vivary.notes", "true")
    root = ["--root", "vault"] if layout == "root" else []
    cwd = repo.path / "vault" if layout == "subfolder" else repo.path
    for args in (["check", "--rev", "HEAD"], ["check"], ["graph", "--format", "json"], ["query", "PRIVATE"],
                 ["blast", "open"], ["check", "--staged"], ["blast", "--base", "HEAD", "--head", "HEAD"]):
        r = cli(*args, *root, cwd=cwd)
        assert "Traceback" not in r.err, (args, r.err)
    assert git(repo.path, "rev-parse", "-q", "--verify", CACHE_REF).strip(), "something was recorded"
    _assert_clean(_scan(repo.path))
    # And through `sync push` to a bare remote, every ref it has.
    origin = tmp_path / "origin.git"
    git(tmp_path, "init", "-q", "--bare", str(origin))
    assert run_git_vivary(["sync", "push", f"file://{origin}"], repo.path).returncode == 0
    _assert_clean(_scan(origin))


def test_recording_is_decided_in_one_place() -> None:
    """The recording code lives beside the shared cache, not in Workspace."""
    from vivary_git import workspace

    leftovers = [name for name in vars(workspace.Workspace) if "record" in name and name != "facts_for_recording"
                 and name != "_record_verdict"]
    assert leftovers == []


# Two workspace folders holding the same tree: one Git tree id, one config. The type whose folder is named like the
# first makes every fact key of `a/` differ from `b/`'s (graph.node_type), as a root-level index note's does.
TWINS_TOML = """version = 1
[base]
derive = ["id", "title"]
allow_untyped = true

[types.project]
folder = "a"
"""
TWIN = {"tropo.toml": TWINS_TOML, "index.md": "# Index\n\n[[one]]\n", "one.md": "# One\n\n[[two]]\n",
        "two.md": "# Two\n\n[[nowhere]]\n"}


def _twins(repo: Repo) -> None:
    repo.commit("twins", {f"{folder}/{name}": text for folder in "ab" for name, text in TWIN.items()})
    assert repo.git("rev-parse", "HEAD:a") == repo.git("rev-parse", "HEAD:b")


def _recorded(path: Path, folder: str) -> tuple[bool, int, int]:
    """Whether the cache at `path` holds the summary of workspace `folder`, and how many of its facts it holds of
    how many it needs."""
    snap = Snapshot.load(GitRepo(path))
    assert snap is not None
    tkey, _, facts = open_workspace(path / folder, rev="HEAD", shared_cache=False).cache_keys()
    return tkey in snap.manifest.trees, len(snap.get("facts", facts)), len(facts)


def _graph(cli: Any, cwd: Path) -> list[tuple[str, str | None]]:
    r = cli("graph", "--rev", "HEAD", "--format", "json", cwd=cwd)
    assert r.code == 0, r.err
    return sorted((n["id"], n.get("type")) for n in r.json()["nodes"])


def test_two_workspaces_holding_one_tree_are_each_recorded(repo: Repo, cli: Any, tmp_path: Path) -> None:
    """The summary key names the workspace folder: `b/`'s run did not take `a/`'s summary as its own and record
    nothing, which left every fact of `b/` to be derived again in each clone the cache was fetched into."""
    _twins(repo)
    for folder in "ab":
        r = cli("check", "--rev", "HEAD", cwd=repo.path / folder)
        assert r.code == 1 and "3 document(s), 1 error(s), 0 warning(s)" in r.out + r.err, r.err
    assert _recorded(repo.path, "a") == (True, 3, 3)
    assert _recorded(repo.path, "b") == (True, 3, 3)
    # A clone reading the cache gets each workspace's own figures.
    me = tmp_path / "me"
    git(tmp_path, "clone", "-q", str(repo.path), str(me))
    assert run_git_vivary(["sync", "setup"], me).returncode == 0
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    git(me, "config", "vivary.cacheTrust", "any")
    assert _graph(cli, me / "a") == [("a", "project"), ("one", "project"), ("two", "project")]
    assert _graph(cli, me / "b") == [("b", None), ("one", None), ("two", None)]
    for folder in "ab":
        r = cli("check", "--rev", "HEAD", cwd=me / folder)
        assert r.code == 1 and "3 document(s), 1 error(s), 0 warning(s)" in r.out + r.err, r.err


def test_a_summary_keyed_without_its_folder_is_not_taken_for_a_workspace_s(repo: Repo, cli: Any) -> None:
    """A cache recorded before summaries named the workspace folder: its summaries match no key now, so each
    workspace records its entries once more, rather than trusting a summary that may be another folder's."""
    _twins(repo)
    tree = repo.git("rev-parse", "HEAD:b").strip()
    digest = open_workspace(repo.path / "b", rev="HEAD", shared_cache=False).config.digest()
    raw = f"{FORMAT_VERSION}\0{digest}".encode()  # the key as it was: no workspace folder in it
    old = f"{tree}-{hashlib.sha256(raw).hexdigest()[:16]}"
    summary = TreeSummary(tree=tree, checked=3, errors=1, warnings=0, nodes=3, edges=2, broken=1, private=0, written=1)
    assert write(GitRepo(repo.path), Changes(trees={old: summary})) is not None
    assert _recorded(repo.path, "b") == (False, 0, 3)
    r = cli("check", "--rev", "HEAD", cwd=repo.path / "b")
    assert r.code == 1 and "3 document(s), 1 error(s), 0 warning(s)" in r.out + r.err, r.err
    assert _recorded(repo.path, "b") == (True, 3, 3)
