"""`git vivary cache gc` (commands/cache.py): it keeps what the branches it reads need, and never takes a branch it
could not read, or a `--root` no branch holds, as needing nothing: either would throw away entries that CI built and
every clone fetched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import TROPO, Repo, git

from vivary_git.refnames import CACHE_REF

VAULT = {
    "vault/tropo.toml": TROPO,
    "vault/modules/m1.md": "---\nstatus: live\ndepends: [m2]\n---\n# Module one\n",
    "vault/modules/m2.md": "---\nstatus: live\n---\n# Module two\n",
    "vault/notes/free.md": "# Free note\n\nlinks [[m1]]\n",
}


@pytest.fixture
def ws(repo: Repo, cli: Any) -> Repo:
    """A workspace folder `vault` on `main` and on `side` (which adds a note), both trees recorded in the cache."""
    repo.commit("notes", VAULT)
    repo.git("checkout", "-q", "-b", "side")
    repo.commit("side", {"vault/notes/side.md": "# Side only\n\nSIDE-ONLY-NOTE\n"})
    repo.git("checkout", "-q", "main")
    for rev in ("main", "side"):
        assert cli("check", "--rev", rev, cwd=repo.path / "vault").code == 0
    assert counts(repo, cli) == (2, 4, 4)
    return repo


def counts(repo: Repo, cli: Any) -> tuple[int, int, int]:
    """Trees, parses and facts in the cache."""
    s = cli("cache", "status", "--json", cwd=repo.path).json()
    return s["trees"], s["blobs"], s["facts"]


def refs(repo: Repo) -> str:
    return git(repo.path, "for-each-ref", "refs/vivary")


def refused(repo: Repo, cli: Any, *args: str, cwd: Path | None = None) -> str:
    """Run `cache gc ARGS` with and without --dry-run; both refuse (exit 2) and leave the cache as it was."""
    before = refs(repo)
    said = []
    for dry in (("--dry-run",), ()):
        r = cli("cache", "gc", *dry, *args, cwd=cwd or repo.path)
        assert r.code == 2 and "Traceback" not in r.err, (dry, r.out, r.err)
        assert refs(repo) == before, dry
        said.append(r.err)
    assert said[0] == said[1]
    return said[0]


def test_a_root_that_no_branch_holds_is_refused(ws: Repo, cli: Any) -> None:
    """A folder only in the working tree (or a typo of one that is there): every branch was skipped, and gc kept
    none of the entries: a new chain with an empty manifest."""
    ws.write({"scratch/s.md": "# Scratch\n"})
    err = refused(ws, cli, "--root", "scratch")
    assert "--root scratch: no branch gc reads holds a folder 'scratch' (refs/heads/main, refs/heads/side)" in err
    assert "gc would keep none of refs/vivary/cache" in err, err
    assert "Name the workspace folder as the branches hold it" in err and "`git vivary cache drop`" in err, err
    assert counts(ws, cli) == (2, 4, 4)
    (ws.path / "vault" / "scratch").mkdir()
    err = refused(ws, cli, "--root", "scratch", cwd=ws.path / "vault")  # relative to where it runs
    assert "no branch gc reads holds a folder 'vault/scratch'" in err, err
    ws.git("checkout", "-q", "--detach", "side")  # HEAD detached is read too, and named
    assert "(HEAD, refs/heads/main, refs/heads/side)" in refused(ws, cli, "--root", "scratch")


def test_a_root_some_branches_lack_keeps_what_the_others_need(ws: Repo, cli: Any) -> None:
    """A branch without the workspace folder (a site branch, an old one) needs none of its entries: said, and
    skipped, as before; the folder the other branches hold keeps theirs."""
    ws.git("checkout", "-q", "--orphan", "pages")
    ws.git("rm", "-rqf", ".")
    ws.commit("site", {"index.html": "<p>site</p>\n"})
    ws.git("checkout", "-q", "main")
    r = cli("cache", "gc", "--root", "vault", cwd=ws.path)
    assert r.code == 0, r.err
    assert "vivary: gc: skipped refs/heads/pages: --root vault: there is no folder 'vault' in refs/heads/pages" in r.err
    assert "(for refs/heads/main, refs/heads/side; refs/heads/pages holds no folder 'vault')" in r.out, r.out
    assert counts(ws, cli) == (2, 4, 4)
    ws.git("branch", "-D", "side")
    assert cli("cache", "gc", "--root", "vault", cwd=ws.path).code == 0
    assert counts(ws, cli) == (1, 3, 3)


def missing_object(repo: Repo, rev: str) -> None:
    """Remove the loose object `rev` names, as a clone damaged by a disk, a partial copy or a prune can lack it."""
    oid = git(repo.path, "rev-parse", rev).strip()
    (repo.path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()


@pytest.mark.parametrize("lost", ["side:vault/notes", "side^{tree}", "side"])
def test_a_branch_whose_tree_cannot_be_read_is_refused_never_taken_as_needing_nothing(
        ws: Repo, cli: Any, lost: str) -> None:
    """A missing object under a branch was a traceback (a folder of its tree) or a skipped branch, whose entries a
    real run then dropped (its tree, its commit)."""
    missing_object(ws, lost)
    err = refused(ws, cli)
    assert "gc cannot tell which entries refs/heads/side needs" in err, err
    assert "`git fsck` names what is missing" in err and "git branch -D side" in err, err
    assert "nothing was written" in err, err
    ws.git("branch", "-D", "side")
    assert cli("cache", "gc", cwd=ws.path / "vault").code == 0
    assert counts(ws, cli) == (1, 3, 3)


def test_odd_branch_refs(ws: Repo, cli: Any) -> None:
    """A branch ref that does not parse (left out of every listing), one naming a commit this clone lacks, or a blob,
    cannot say what it needs: refused, each named with its fix. A symbolic ref to no branch holds nothing, and one
    naming a tree or an annotated tag holds that tree: read as before."""
    heads = ws.path / ".git" / "refs" / "heads"
    (heads / "broken").write_text("garbage\n")
    err = refused(ws, cli)
    assert "refs/heads/broken: it does not parse" in err and f"remove the file {heads / 'broken'}" in err, err
    (heads / "broken").unlink()
    ws.git("symbolic-ref", "refs/heads/loop", "refs/heads/loop")
    assert "refs/heads/loop: it does not parse" in refused(ws, cli)
    (heads / "loop").unlink()
    (heads / "gone").write_text("12" * 20 + "\n")
    err = refused(ws, cli)
    assert "refs/heads/gone: it names 121212121212, which is not in this repository" in err, err
    assert "git branch -D gone" in err, err
    (heads / "gone").unlink()
    (heads / "blob").write_text(git(ws.path, "rev-parse", "main:vault/tropo.toml"))
    err = refused(ws, cli)
    assert "refs/heads/blob: it names a blob" in err and "not a commit" in err, err
    (heads / "blob").unlink()
    assert counts(ws, cli) == (2, 4, 4)

    ws.git("symbolic-ref", "refs/heads/dangling", "refs/heads/nowhere")
    ws.git("tag", "-a", "-m", "side", "kept", "side")
    (heads / "tagged").write_text(git(ws.path, "rev-parse", "kept"))
    ws.git("branch", "-D", "side")
    r = cli("cache", "gc", cwd=ws.path / "vault")
    assert r.code == 0, r.err
    assert "vivary: gc: skipped refs/heads/dangling: a symbolic ref to refs/heads/nowhere, which is no branch" in r.err
    assert counts(ws, cli) == (2, 4, 4)  # refs/heads/tagged holds side's tree


def test_a_branch_whose_workspace_rules_do_not_load_is_refused(ws: Repo, cli: Any) -> None:
    ws.git("checkout", "-q", "side")
    ws.commit("break the rules", {"vault/tropo.toml": "version = [\n"})
    ws.git("checkout", "-q", "main")
    err = refused(ws, cli, cwd=ws.path / "vault")
    assert "gc cannot tell which entries refs/heads/side needs" in err and "tropo.toml" in err, err
    assert CACHE_REF not in git(ws.path, "for-each-ref", "refs/heads")


def test_a_branch_whose_memory_settings_do_not_load_is_refused(ws: Repo, cli: Any) -> None:
    """Its vectors were said to be "kept no vectors for" and dropped."""
    ws.git("checkout", "-q", "side")
    ws.commit("break memory", {"vault/.vivary/memory.toml": "provider = [\n"})
    ws.git("checkout", "-q", "main")
    err = refused(ws, cli, cwd=ws.path / "vault")
    assert "gc cannot tell which entries refs/heads/side needs" in err and "memory.toml" in err, err


def test_a_packed_refs_file_that_does_not_parse_is_named(ws: Repo, cli: Any) -> None:
    """libgit2 cannot list the refs then (Git itself stops at the line): a traceback before."""
    ws.git("pack-refs", "--all")
    packed = ws.path / ".git" / "packed-refs"
    sound = packed.read_text()
    packed.write_text("\n".join("zzzz refs/heads/side" if line.endswith(" refs/heads/side") else line
                                for line in sound.splitlines()) + "\n")
    for dry in (("--dry-run",), ()):
        r = cli("cache", "gc", *dry, cwd=ws.path)
        assert r.code == 2 and "Traceback" not in r.err, r.err
        assert "cannot list this repository's branches" in r.err and str(packed) in r.err, r.err
    packed.write_text(sound)
    assert counts(ws, cli) == (2, 4, 4)
