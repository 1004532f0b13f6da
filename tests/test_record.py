"""What may be recorded in refs/vivary/cache (record.py): no byte of a private file, whatever the
workspace layout (top level, a subfolder, `--root`), locally and through `sync push` to a remote.

Every object reachable from refs/vivary/* and refs/notes/vivary is scanned (`git rev-list --objects`
+ `git cat-file --batch`) for canary strings planted in every kind of private file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git, run_git_vivary
from test_store import objects_reachable

from vivary_git.refnames import CACHE_REF


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
