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
MEMORY = '[memory]\nenabled = true\nmode = "semantic-provider"\nprovider = "vivary-local"\n'


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
    none of the entries: a new chain with an empty manifest. Now that gc keeps every workspace it finds, such a
    --root would still lose the entries of the folder meant, when it has no tropo.toml or .vivary/."""
    ws.write({"scratch/s.md": "# Scratch\n"})
    err = refused(ws, cli, "--root", "scratch")
    assert "--root scratch: no branch gc reads holds a folder 'scratch' (refs/heads/main, refs/heads/side)" in err
    assert "gc would keep none of the entries of the workspace it names; nothing was written" in err, err
    assert "Name the workspace folder as the branches hold it" in err and "or leave --root out" in err, err
    assert counts(ws, cli) == (2, 4, 4)
    (ws.path / "vault" / "scratch").mkdir()
    err = refused(ws, cli, "--root", "scratch", cwd=ws.path / "vault")  # relative to where it runs
    assert "no branch gc reads holds a folder 'vault/scratch'" in err, err
    ws.git("checkout", "-q", "--detach", "side")  # HEAD detached is read too, and named
    assert "(HEAD, refs/heads/main, refs/heads/side)" in refused(ws, cli, "--root", "scratch")


def test_a_root_some_branches_lack_keeps_what_the_others_need(ws: Repo, cli: Any) -> None:
    """A branch without the workspace folder (a site branch, an old one) needs none of its entries: said; the folder
    the other branches hold keeps theirs."""
    ws.git("checkout", "-q", "--orphan", "pages")
    ws.git("rm", "-rqf", ".")
    ws.commit("site", {"index.html": "<p>site</p>\n"})
    ws.git("checkout", "-q", "main")
    r = cli("cache", "gc", "--root", "vault", cwd=ws.path)
    assert r.code == 0, r.err
    assert "vivary: gc: refs/heads/pages holds no folder 'vault' (--root vault): it needs none of" in r.err, r.err
    out = "(for refs/heads/main, refs/heads/pages, refs/heads/side; refs/heads/pages holds no folder 'vault')"
    assert out in r.out, r.out  # pages is read all the same: its top is a workspace too
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


WIKI = {
    "wiki/.vivary/workspace.toml": 'contract = "thin-v0.3"\n',
    "wiki/pages/a.md": "# Page A\n\nlinks [[b]]\n",
    "wiki/pages/b.md": "# Page B\n",
}


def test_gc_from_the_top_keeps_a_subfolder_workspace(ws: Repo, cli: Any) -> None:
    """Run from the top, gc read the top as a zero-config workspace and dropped every fact and tree summary of
    `vault` (exit 0): every clone then ran cold."""
    r = cli("cache", "gc", cwd=ws.path)
    assert r.code == 0, r.err
    assert counts(ws, cli) == (2, 4, 4)
    assert "4 of 4 parses, 4 of 4 facts, 2 of 2 trees" in r.out, r.out


def test_gc_keeps_every_workspace_a_branch_holds(ws: Repo, cli: Any) -> None:
    """Two workspaces in one repository (a folder with tropo.toml, one with .vivary/): gc run in either, or at the
    top, kept only one workspace's entries."""
    ws.git("checkout", "-q", "side")
    ws.commit("wiki", WIKI)
    assert cli("check", "--rev", "side", cwd=ws.path / "wiki").code == 0
    assert counts(ws, cli) == (3, 6, 6)
    for where in (ws.path / "vault", ws.path / "wiki", ws.path, ws.path / "vault" / "notes"):
        r = cli("cache", "gc", cwd=where)
        assert r.code == 0, (where, r.err)
        assert counts(ws, cli) == (3, 6, 6), where
    ws.git("checkout", "-q", "main")
    ws.git("branch", "-D", "side")  # the wiki was on side only: its entries go, main's stay
    assert cli("cache", "gc", cwd=ws.path).code == 0
    assert counts(ws, cli) == (1, 3, 3)


def test_a_folder_with_dot_vivary_is_a_workspace_gc_keeps(ws: Repo, cli: Any) -> None:
    """A folder holding `.vivary/` (only a memory.toml, say) is a workspace, as the privacy boundary knows it
    (docs/privacy.md): what `check --root` recorded for it is kept wherever gc runs."""
    ws.commit("journal", {"journal/.vivary/memory.toml": "", "journal/day.md": "# Day one\n"})
    assert cli("check", "--rev", "main", "--root", "journal", cwd=ws.path).code == 0
    assert counts(ws, cli) == (3, 5, 5)
    assert cli("cache", "gc", cwd=ws.path / "vault").code == 0
    assert counts(ws, cli) == (3, 5, 5)


def test_root_adds_a_folder_gc_cannot_find(ws: Repo, cli: Any) -> None:
    """A folder with no tropo.toml or .vivary/ is a workspace only where `--root` names it: gc cannot find it, so
    `--root` keeps its entries, and never narrows gc to it (the other workspaces' entries stay)."""
    ws.commit("docs", {"docs/guide.md": "# Guide\n"})
    assert cli("check", "--rev", "main", "--root", "docs", cwd=ws.path).code == 0
    assert counts(ws, cli) == (3, 5, 5)
    r = cli("cache", "gc", "--root", "docs", cwd=ws.path)
    assert r.code == 0, r.err
    assert counts(ws, cli) == (3, 5, 5)
    assert cli("cache", "gc", cwd=ws.path).code == 0  # without it, docs' fact and summary go
    assert counts(ws, cli) == (2, 5, 4)


def test_a_detached_head_of_another_worktree_is_read(ws: Repo, cli: Any, tmp_path: Path) -> None:
    """A commit checked out in another worktree is under work, branch or not."""
    ws.git("worktree", "add", "-q", "--detach", str(tmp_path / "other"), "side")
    ws.git("branch", "-D", "side")
    r = cli("cache", "gc", cwd=ws.path / "vault")
    assert r.code == 0, r.err
    assert counts(ws, cli) == (2, 4, 4)
    assert f"HEAD of worktree {tmp_path / 'other'}" in r.out, r.out
    ws.git("worktree", "remove", str(tmp_path / "other"))
    assert cli("cache", "gc", cwd=ws.path / "vault").code == 0
    assert counts(ws, cli) == (1, 3, 3)


def test_the_workspaces_gc_opens_in_one_tree_are_bounded(ws: Repo, cli: Any) -> None:
    """Folders are many and cheap to look through; only those with tropo.toml or .vivary/ are opened, and past
    MAX_WORKSPACES in one tree gc refuses rather than keep some workspaces' entries and drop the rest's."""
    from vivary_git.commands.cache import MAX_WORKSPACES

    ws.commit("folders", {f"plain/f{i}/n.md": f"# Plain {i}\n" for i in range(MAX_WORKSPACES + 50)})
    r = cli("cache", "gc", cwd=ws.path)
    assert r.code == 0, r.err
    assert counts(ws, cli) == (2, 4, 4)
    ws.git("checkout", "-q", "side")
    ws.commit("fixtures", {f"fixtures/f{i}/tropo.toml": "version = 1\n" for i in range(MAX_WORKSPACES)})  # + top, vault
    ws.git("checkout", "-q", "main")
    err = refused(ws, cli)
    assert (f"refs/heads/side: it holds {MAX_WORKSPACES + 2:,} workspaces (folders with tropo.toml or .vivary/), "
            f"more than gc reads in one tree ({MAX_WORKSPACES})") in err, err
    assert "`git vivary cache drop` removes the whole cache instead" in err, err


def test_a_nested_workspace_whose_rules_do_not_load_is_named(ws: Repo, cli: Any) -> None:
    ws.git("checkout", "-q", "side")
    ws.commit("wiki", {**WIKI, "wiki/tropo.toml": "version = [\n"})
    ws.git("checkout", "-q", "main")
    err = refused(ws, cli, cwd=ws.path / "vault")
    assert "gc cannot tell which entries refs/heads/side needs" in err, err
    assert "refs/heads/side: workspace wiki/: " in err and "tropo.toml" in err, err


def test_an_overlay_that_leans_on_its_workspace_is_kept_with_it_not_refused(repo: Repo, cli: Any) -> None:
    """A nested tropo.toml that names a pack of the workspace above it (`.tropo/packs` there) is an overlay that
    loads only as one; gc opened it as a workspace of its own and refused the branch, advising to delete it. The
    workspace above read it, so its notes' entries are kept there; a line on stderr says so."""
    repo.commit("overlay", {
        "vault/tropo.toml": TROPO,
        "vault/.tropo/packs/strict.toml": "[types.module]\nrequired = { owner = \"string\" }\n",
        "vault/modules/m1.md": "---\nstatus: live\n---\n# Module one\n",
        "vault/team/tropo.toml": 'packs = ["strict"]\n',
        "vault/team/modules/m2.md": "---\nstatus: live\nowner: ana\n---\n# Module two\n",
    })
    assert cli("check", "--rev", "HEAD", cwd=repo.path / "vault").code == 0
    assert cli("check", "--rev", "HEAD", cwd=repo.path / "vault" / "team").code == 2  # not a workspace on its own
    before = counts(repo, cli)
    r = cli("cache", "gc", cwd=repo.path)
    assert r.code == 0, r.err
    assert counts(repo, cli) == before
    assert ("vivary: gc: refs/heads/main: vault/team/ is an overlay of workspace vault/, whose entries are kept (as "
            "a workspace of its own its rules do not load: tropo.toml: pack 'strict' not found") in r.err, r.err


def test_a_detached_head_of_another_worktree_that_cannot_be_read_is_refused(ws: Repo, cli: Any,
                                                                             tmp_path: Path) -> None:
    other = tmp_path / "other"
    ws.git("worktree", "add", "-q", "--detach", str(other), "side")
    ws.git("branch", "-D", "side")
    missing_object(ws, f"{git(other, 'rev-parse', 'HEAD').strip()}^{{tree}}")
    err = refused(ws, cli)
    assert f"gc cannot tell which entries HEAD of worktree {other} needs" in err, err
    assert f"`git worktree remove {other}`" in err, err


def test_gc_finds_the_workspaces_without_reading_their_memory_toml(ws: Repo, cli: Any, monkeypatch: Any) -> None:
    """gc found a tree's workspaces by reading (and size-checking, and refusing as a symbolic link) every
    memory.toml there, only to throw it away: one read more of each, and one that cannot be read refused the branch
    without naming its workspace, or even when nothing gc keeps depends on it (in a folder the workspace above
    reads as an overlay, whose entries are that workspace's). Finding them reads nothing now: a workspace's own
    memory.toml is read only when it is opened, and one that cannot be read still refuses its branch, named."""
    import os

    from vivary_git import source

    reads: list[str] = []
    real = source.read_config_blob

    def counting(repo_: Any, oid: str, name: str, **kw: Any) -> bytes:
        reads.append(name)
        return real(repo_, oid, name, **kw)

    monkeypatch.setattr(source, "read_config_blob", counting)
    ws.git("checkout", "-q", "side")
    ws.commit("wiki", {**WIKI, "wiki/.vivary/memory.toml": ""})
    assert cli("cache", "gc", "--dry-run", cwd=ws.path).code == 0
    # Only as the workspace is opened: its memory folder (`source.load_config`), then its memory settings.
    assert reads.count("wiki/.vivary/memory.toml") == 2

    (ws.path / "wiki" / ".vivary" / "memory.toml").unlink()
    os.symlink("../pages/a.md", ws.path / "wiki" / ".vivary" / "memory.toml")
    ws.commit("link the wiki's memory settings")
    ws.git("checkout", "-q", "main")
    err = refused(ws, cli)
    assert ("refs/heads/side: workspace wiki/: wiki/.vivary/memory.toml: is a symbolic link in the tree; commit the "
            "file itself instead; fix that on the branch, or delete it (`git branch -D side`)") in err, err

    ws.git("checkout", "-q", "side")
    ws.git("rm", "-q", "-r", "wiki")
    ws.commit("an overlay of the vault that cannot stand alone, its memory.toml a link", {
        "vault/.tropo/packs/strict.toml": "[types.module]\nrequired = { owner = \"string\" }\n",
        "vault/team/tropo.toml": 'packs = ["strict"]\n',
        "vault/team/modules/m3.md": "---\nstatus: live\nowner: ana\n---\n# Module three\n",
    })
    (ws.path / "vault" / "team" / ".vivary").mkdir()
    os.symlink("../modules/m3.md", ws.path / "vault" / "team" / ".vivary" / "memory.toml")
    ws.commit("link")
    ws.git("checkout", "-q", "main")
    r = cli("cache", "gc", "--dry-run", cwd=ws.path)
    assert r.code == 0, r.err
    assert "vivary: gc: refs/heads/side: vault/team/ is an overlay of workspace vault/, whose entries are kept" in r.err


def test_gc_records_nothing_in_the_cache_while_it_reads_the_branches(ws: Repo, cli: Any) -> None:
    """A workspace with vivary-local on is opened down to its graph (for the vectors gc keeps), and building a graph
    recorded its tree: `--dry-run` wrote to refs/vivary/cache, a real gc then found the ref moved under it and
    refused ("changed while gc ran", gc itself the other writer), and a tree whose privacy could not be decided
    printed "not recording this tree in refs/vivary/cache" just before gc's own refusal, though gc records nothing."""
    import os

    ws.git("checkout", "-q", "side")
    ws.commit("memory on", {"vault/.vivary/memory.toml": MEMORY})
    ws.git("checkout", "-q", "main")
    before = refs(ws)
    r = cli("cache", "gc", "--dry-run", cwd=ws.path)
    assert r.code == 0 and "not recording" not in r.err, r.err
    assert refs(ws) == before
    r = cli("cache", "gc", cwd=ws.path)
    assert r.code == 0 and "new chain" in r.out, r.err
    assert counts(ws, cli)[0] == 1  # main's summary; side's new tree was never recorded, by gc least of all

    ws.git("checkout", "-q", "side")
    ws.commit("a team folder", {"vault/team/notes/t.md": "# Team\n"})
    (ws.path / "vault" / "team" / ".vivary").mkdir()
    os.symlink("../notes/t.md", ws.path / "vault" / "team" / ".vivary" / "memory.toml")
    ws.commit("link the team's memory settings")
    ws.git("checkout", "-q", "main")
    err = refused(ws, cli)
    assert "not recording" not in err, err
    assert err.count("vault/team/.vivary/memory.toml: is a symbolic link in the tree") == 1, err
