"""Whose derived data may decide what (docs/cache.md, "Trust"): a forged refs/vivary/cache or verdict
note never passes a gate, fetched data is read only under `vivary.cacheTrust`, and a signed cache is
trusted only when its signer is in Git's allowed-signers file.

The forgeries are made for real with Git plumbing (hash-object, mktree, commit-tree, update-ref) and
msgspec for the msgpack, the way anyone who can push the ref could make them."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from pathlib import Path

import msgspec
import pytest
from conftest import TROPO, Repo, git, run_git_vivary
from test_store import objects_reachable, stats, tip

from vivary_git.git import Repo as GitRepo
from vivary_git.refnames import CACHE_REF, NOTES_REF
from vivary_git.store.read import Snapshot

NOTES = {
    "tropo.toml": TROPO,
    "decisions/d1.md": "---\nstatus: accepted\ndate: 2026-01-02\nrelated: [m1]\n---\n# Use Git\n",
    "decisions/bad.md": "---\nstatus: maybe\ndate: 2026-01-03\n---\n# Bad status\n",
    "modules/m1.md": "---\nstatus: live\n---\n# Module one\n",
}


def bare(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(path))
    return path


def _cat(cwd: Path, obj: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", obj], cwd=cwd, capture_output=True, check=True).stdout


def _blob(cwd: Path, data: bytes) -> str:
    return subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=cwd, input=data, capture_output=True,
                          check=True).stdout.decode().strip()


def _mktree(cwd: Path, entries: list[str]) -> str:
    text = "".join(e + "\n" for e in entries).encode()
    return subprocess.run(["git", "mktree"], cwd=cwd, input=text, capture_output=True,
                          check=True).stdout.decode().strip()


def forge(cwd: Path) -> str:
    """Rewrite every facts entry of the cache at `cwd` to have no findings, fix each chunk's sha256 and
    size in the manifest, and commit that on top of the cache: a consistent forgery, made with Git
    plumbing only. Returns the forged commit (refs/vivary/cache is moved to it)."""
    manifest = msgspec.msgpack.decode(_cat(cwd, f"{CACHE_REF}:manifest.msgpack"))
    facts_entries = []
    changed = 0
    for line in git(cwd, "ls-tree", f"{CACHE_REF}:facts").splitlines():
        mode, kind, oid, name = line.split(None, 3)
        data = _cat(cwd, oid)
        items = msgspec.msgpack.decode(data)
        for item in items:
            facts = item[1]  # Facts, array-like: [id, type, title, findings, refs, links, problem]
            if facts[3]:
                facts[3] = []
                changed += 1
        new = msgspec.msgpack.encode(items)
        manifest["chunks"][f"facts/{name}"] = [hashlib.sha256(new).hexdigest(), len(new), len(items)]
        facts_entries.append(f"{mode} {kind} {_blob(cwd, new)}\t{name}")
    assert changed, "there was a finding to forge away"
    root = []
    for line in git(cwd, "ls-tree", CACHE_REF).splitlines():
        mode, kind, oid, name = line.split(None, 3)
        if name == "facts":
            oid = _mktree(cwd, facts_entries)
        elif name == "manifest.msgpack":
            oid = _blob(cwd, msgspec.msgpack.encode(manifest))
        root.append(f"{mode} {kind} {oid}\t{name}")
    tree = _mktree(cwd, root)
    commit = git(cwd, "commit-tree", tree, "-p", CACHE_REF, "-m", "vivary cache: tree (nothing to see)").strip()
    git(cwd, "update-ref", CACHE_REF, commit)
    return commit


@pytest.fixture
def published(repo: Repo, tmp_path: Path) -> tuple[Path, str]:
    """origin holds the notes and a forged cache pushed by someone with push access to the ref."""
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1
    forged = forge(repo.path)
    repo.git("push", "-q", "--force", f"file://{origin}", f"{CACHE_REF}:{CACHE_REF}")
    return origin, forged


def _fresh_clone(tmp_path: Path, origin: Path, name: str) -> Path:
    clone = tmp_path / name
    git(tmp_path, "clone", "-q", f"file://{origin}", str(clone))
    return clone


def test_a_forged_cache_never_passes_a_gate(published: tuple[Path, str], tmp_path: Path) -> None:
    origin, forged = published
    me = _fresh_clone(tmp_path, origin, "me")
    r = run_git_vivary(["sync", "fetch"], me)
    assert r.returncode == 0 and tip(me) == forged, r.stderr
    assert "no command reads it until this clone trusts it" in r.stderr
    verify = run_git_vivary(["cache", "verify"], me)
    assert verify.returncode == 0 and "ok:" in verify.stdout  # well-formed: verification cannot see a forgery
    assert "not read by any command" in verify.stdout, verify.stdout
    # By default nothing reads it.
    assert run_git_vivary(["check", "--rev", "HEAD"], me).returncode == 1
    # A clone that chose to trust whoever writes the ref is fooled outside gates: the forgery is real.
    git(me, "config", "vivary.cacheTrust", "any")
    shutil.rmtree(me / ".git" / "vivary")
    fooled = run_git_vivary(["check", "--rev", "HEAD"], me, env={"VIVARY_STATS": "1"})
    assert fooled.returncode == 0 and stats(fooled.stderr)["parsed"] == 0, fooled.stdout + fooled.stderr
    # Gates never are, even then, and even right after that run filled the local cache.
    for args, env in ((["check", "--rev", "HEAD", "--gate"], {}), (["check", "--rev", "HEAD"], {"CI": "true"}),
                      (["ci", "--head", "HEAD"], {}), (["ci", "--head", "HEAD", "--format", "github"], {})):
        r = run_git_vivary(args, me, env={**env, "VIVARY_STATS": "1"})
        assert r.returncode == 1, (args, env, r.stdout, r.stderr)
        assert "E103" in r.stdout or "error" in r.stdout
    shutil.rmtree(me / ".git" / "vivary")
    r = run_git_vivary(["ci", "--head", "HEAD"], me)
    assert r.returncode == 1, r.stdout


def test_the_pre_commit_hook_ignores_a_forged_cache(published: tuple[Path, str], tmp_path: Path) -> None:
    origin, _ = published
    me = _fresh_clone(tmp_path, origin, "me")
    git(me, "config", "vivary.cacheTrust", "any")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    assert run_git_vivary(["hooks", "install"], me).returncode == 0
    (me / "modules" / "m2.md").write_text("---\nstatus: live\n---\n# Module two\n")
    git(me, "add", "-A")
    r = subprocess.run(["git", "commit", "-q", "-m", "m2"], cwd=me, capture_output=True, text=True, check=False)
    # The hook fails only on findings the commit introduces (`--new-since HEAD`); bad.md's error was already
    # there, so the commit lands. The forged cache says bad.md is clean: the hook counting its error proves
    # that neither the staged tree nor HEAD was read from it.
    said = r.stdout + r.stderr
    assert r.returncode == 0 and "1 error(s) and 0 warning(s) it already had" in said, said


def test_a_gate_run_records_only_what_it_computed(published: tuple[Path, str], tmp_path: Path) -> None:
    """CI fetches a forged cache and checks a new tree: what it records on top holds its own entries,
    computed from the blobs, never the forged ones read back."""
    origin, forged = published
    ci = _fresh_clone(tmp_path, origin, "ci")
    git(ci, "config", "vivary.cacheTrust", "any")
    assert run_git_vivary(["sync", "fetch"], ci).returncode == 0
    (ci / "decisions" / "bad2.md").write_text("---\nstatus: nope\ndate: 2026-01-04\n---\n# Also bad\n")
    git(ci, "add", "-A")
    git(ci, "commit", "-q", "-m", "bad2")
    assert run_git_vivary(["check", "--rev", "HEAD"], ci, env={"CI": "true"}).returncode == 1
    assert tip(ci) != forged
    r = Snapshot.load(GitRepo(ci))
    assert r is not None
    summary = [t for t in r.manifest.trees.values() if t.tree != git(origin, "rev-parse", "HEAD^{tree}").strip()]
    assert summary and summary[0].errors == 2


def test_fetch_refuses_a_cache_holding_a_source_blob(repo: Repo, tmp_path: Path) -> None:
    """A cache commit whose state file is the blob of USER.md is refused, never adopted or pushed on."""
    repo.commit("notes", {**NOTES, "USER.md": "# Me\n\nPRIVATE-CANARY-user\n"})
    run_git_vivary(["check", "--rev", "HEAD"], repo.path)
    user_blob = git(repo.path, "rev-parse", "HEAD:USER.md").strip()
    key = "0" * 40 + "-" + "0" * 16
    size = int(git(repo.path, "cat-file", "-s", user_blob))
    digest = hashlib.sha256(_cat(repo.path, user_blob)).hexdigest()
    manifest = msgspec.msgpack.decode(_cat(repo.path, f"{CACHE_REF}:manifest.msgpack"))
    manifest["states"] = {f"state/vivary-local/{key}/index.bin": [digest, size, 1]}
    leaf = _mktree(repo.path, [f"100644 blob {user_blob}\tindex.bin"])
    state = _mktree(repo.path, [f"040000 tree {leaf}\t{key}"])
    state = _mktree(repo.path, [f"040000 tree {state}\tvivary-local"])
    root = [line for line in git(repo.path, "ls-tree", CACHE_REF).splitlines()
            if not line.endswith("\tmanifest.msgpack")]
    root += [f"100644 blob {_blob(repo.path, msgspec.msgpack.encode(manifest))}\tmanifest.msgpack",
             f"040000 tree {state}\tstate"]
    commit = git(repo.path, "commit-tree", _mktree(repo.path, root), "-p", CACHE_REF, "-m", "x").strip()
    git(repo.path, "update-ref", CACHE_REF, commit)
    assert run_git_vivary(["cache", "verify"], repo.path).returncode == 0  # well-formed
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", CACHE_REF)
    me = _fresh_clone(tmp_path, origin, "me")
    r = run_git_vivary(["sync", "fetch"], me)
    assert r.returncode == 3 and "Traceback" not in r.stderr, r.stderr
    assert "memory-provider state files" in r.stderr
    assert not tip(me), "nothing adopted"
    assert b"PRIVATE-CANARY" not in objects_reachable(me, CACHE_REF)


def test_forged_verdict_notes_are_not_adopted(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    first, first_tree = repo.git("rev-parse", "HEAD").strip(), repo.git("rev-parse", "HEAD^{tree}").strip()
    second = repo.commit("more", {"x.md": "# x\n"})

    def lie(tree: str) -> str:
        return f'{{"tree":"{tree}","checked":3,"errors":0,"warnings":0,"clean":3,"tool":"vivary-git","format":4}}'

    repo.git("notes", "--ref", "vivary", "add", "-m", lie(first_tree), first)
    repo.git("notes", "--ref", "vivary", "add", "-m", lie(first_tree), second)  # not the tree of `second`
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", NOTES_REF)
    me = _fresh_clone(tmp_path, origin, "me")
    r = run_git_vivary(["sync", "fetch"], me)
    assert r.returncode == 0 and "stay in refs/vivary-fetch/origin/notes" in r.stderr, r.stderr
    assert not tip(me, NOTES_REF), "not adopted"
    # Trusting everyone adopts verdicts, re-encoded by us, and only those naming their commit's tree.
    git(me, "config", "vivary.cacheTrust", "any")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    adopted = git(me, "notes", "--ref", "vivary", "list").split()
    assert first in adopted and second not in adopted, adopted
    assert git(me, "rev-parse", NOTES_REF) != git(me, "rev-parse", "refs/vivary-fetch/origin/notes")


def _ssh_key(tmp_path: Path, name: str) -> tuple[Path, str]:
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    key = keys / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return key, (keys / f"{name}.pub").read_text().strip()


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (OpenSSH)")
def test_a_signed_cache_is_trusted_only_when_its_signer_is_allowed(repo: Repo, tmp_path: Path) -> None:
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    ci_key, ci_pub = _ssh_key(tmp_path, "ci")
    _, other_pub = _ssh_key(tmp_path, "someone")
    # CI signs its cache commits with Git's own SSH signing.
    ci = _fresh_clone(tmp_path, origin, "ci")
    for k, v in (("gpg.format", "ssh"), ("user.signingKey", f"{ci_key}.pub"), ("vivary.cacheSign", "true")):
        git(ci, "config", k, v)
    assert run_git_vivary(["check", "--rev", "HEAD"], ci, env={"CI": "true"}).returncode == 1
    signed = tip(ci)
    assert "gpgsig" in git(ci, "cat-file", "commit", signed)
    assert run_git_vivary(["sync", "push"], ci).returncode == 0
    # A clone that trusts signed caches, with an allowed-signers file.
    me = _fresh_clone(tmp_path, origin, "me")
    allowed = tmp_path / "allowed_signers"
    git(me, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    git(me, "config", "vivary.cacheTrust", "signed")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0

    def parsed() -> int:
        shutil.rmtree(me / ".git" / "vivary", ignore_errors=True)
        r = run_git_vivary(["check", "--rev", "HEAD"], me, env={"VIVARY_STATS": "1"})
        assert r.returncode == 1, r.stdout
        return int(stats(r.stderr)["parsed"])

    allowed.write_text(f'someone namespaces="git" {other_pub}\n')  # CI's key is not in it
    assert parsed() == len(NOTES) - 1, "a signature by a key not allowed is not trusted"
    assert "not read" in run_git_vivary(["cache", "verify"], me).stdout
    allowed.write_text(f'ci namespaces="git" {ci_pub}\n')
    assert parsed() == 0, "a signature by an allowed signer is trusted"
    assert f"read {signed[:12]}" in run_git_vivary(["cache", "verify"], me).stdout
    # A forgery on top of the signed chain, unsigned: the signed commit under it is what is read.
    forge(me)
    assert parsed() == 0  # the signed commit's entries, and the check still fails: the forgery is not read
    # Gates read none of it, signed or not, nor what the trusted runs just read from it: they parse...
    r = run_git_vivary(["check", "--rev", "HEAD", "--gate"], me, env={"VIVARY_STATS": "1"})
    assert r.returncode == 1 and stats(r.stderr)["parsed"] == len(NOTES) - 1
    # ... and then use what they computed.
    r = run_git_vivary(["check", "--rev", "HEAD", "--gate"], me, env={"VIVARY_STATS": "1"})
    assert r.returncode == 1 and stats(r.stderr)["graph_cached"]


@pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (OpenSSH)")
def test_a_signing_writer_never_signs_entries_it_did_not_compute(published: tuple[Path, str],
                                                                 tmp_path: Path) -> None:
    origin, forged = published
    ci = _fresh_clone(tmp_path, origin, "ci")
    key, pub = _ssh_key(tmp_path, "ci")
    for k, v in (("gpg.format", "ssh"), ("user.signingKey", f"{key}.pub"), ("vivary.cacheSign", "true"),
                 ("gpg.ssh.allowedSignersFile", str(tmp_path / "allowed"))):
        git(ci, "config", k, v)
    (tmp_path / "allowed").write_text(f'ci namespaces="git" {pub}\n')
    assert run_git_vivary(["sync", "fetch"], ci).returncode == 0 and tip(ci) == forged
    (ci / "modules" / "m2.md").write_text("---\nstatus: live\n---\n# Module two\n")
    git(ci, "add", "-A")
    git(ci, "commit", "-q", "-m", "m2")
    assert run_git_vivary(["check", "--rev", "HEAD"], ci, env={"CI": "true"}).returncode == 1
    mine = tip(ci)
    assert git(ci, "log", "--format=%P", "-1", mine).strip() == "", "a new chain, not one on the forgery"
    git(ci, "verify-commit", mine)
    # Its facts are its own: a clone trusting the signer checks the forged-away finding again.
    r = Snapshot.load(GitRepo(ci))
    assert r is not None and all(t.errors == 1 for t in r.manifest.trees.values())


def test_a_trusting_clone_patches_from_its_shared_graph_but_a_gate_never_does(published: tuple[Path, str],
                                                                               tmp_path: Path) -> None:
    """After an edit, a clone that reads the shared cache re-derives only the edited note on top of the graph
    it last built with shared entries (no full rebuild from every fetched entry), and files the result apart
    as shared; a gate still computes from the blobs and never starts from that graph."""
    origin, _ = published
    me = _fresh_clone(tmp_path, origin, "me")
    git(me, "config", "vivary.cacheTrust", "any")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    assert run_git_vivary(["check"], me).returncode == 0  # fooled: the trusted forgery says bad.md is clean
    (me / "modules" / "m1.md").write_text("---\nstatus: live\n---\n# Module one\n\nNow with a body.\n")
    r = run_git_vivary(["check", "--json"], me, env={"VIVARY_STATS": "1"})
    got = stats(r.stderr)
    assert r.returncode == 0 and got["patched"] and got["parsed"] == 1, r.stderr
    # What a full build from the same shared entries says, byte for byte.
    shutil.rmtree(me / ".git" / "vivary")
    full = run_git_vivary(["check", "--json"], me, env={"VIVARY_STATS": "1"})
    assert not stats(full.stderr)["patched"] and full.stdout == r.stdout
    # Gates, right after those runs filled the local cache, compute from the blobs and see bad.md's error.
    assert run_git_vivary(["check"], me).returncode == 0
    (me / "modules" / "m1.md").write_text("---\nstatus: live\n---\n# Module one\n\nAnd another edit.\n")
    for args, env in ((["check", "--gate"], {}), (["check"], {"CI": "true"})):
        r = run_git_vivary(args, me, env={**env, "VIVARY_STATS": "1"})
        assert r.returncode == 1 and not stats(r.stderr)["patched"], (args, r.stdout, r.stderr)


def _forge_titles(cwd: Path, title: str) -> None:
    """Give every shared parse and facts entry of the cache at `cwd` the title `title` (chunk digests fixed,
    as `forge` does). Both are array-like with the title third: SharedNote [fields, key_lines, title, ...],
    Facts [id, type, title, ...]."""
    manifest = msgspec.msgpack.decode(_cat(cwd, f"{CACHE_REF}:manifest.msgpack"))
    trees = {}
    for kind in ("parse", "facts"):
        entries = []
        for line in git(cwd, "ls-tree", f"{CACHE_REF}:{kind}").splitlines():
            mode, otype, oid, name = line.split(None, 3)
            items = msgspec.msgpack.decode(_cat(cwd, oid))
            for item in items:
                item[1][2] = title
            new = msgspec.msgpack.encode(items)
            manifest["chunks"][f"{kind}/{name}"] = [hashlib.sha256(new).hexdigest(), len(new), len(items)]
            entries.append(f"{mode} {otype} {_blob(cwd, new)}\t{name}")
        trees[kind] = _mktree(cwd, entries)
    root = []
    for line in git(cwd, "ls-tree", CACHE_REF).splitlines():
        mode, otype, oid, name = line.split(None, 3)
        if name in trees:
            oid = trees[name]
        elif name == "manifest.msgpack":
            oid = _blob(cwd, msgspec.msgpack.encode(manifest))
        root.append(f"{mode} {otype} {oid}\t{name}")
    commit = git(cwd, "commit-tree", _mktree(cwd, root), "-p", CACHE_REF, "-m", "vivary cache").strip()
    git(cwd, "update-ref", CACHE_REF, commit)


def test_a_search_index_built_from_a_trusted_graph_is_never_read_by_a_run_that_trusts_nothing(
        repo: Repo, tmp_path: Path) -> None:
    """A clone that trusted a forged cache once (its graph cached as built with shared entries) builds the
    search index from that graph on a later run: filed as shared too, so a run that trusts nothing never
    answers from it."""
    repo.commit("notes", NOTES)
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main")
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1
    _forge_titles(repo.path, "Forged zebra title")
    repo.git("push", "-q", "--force", f"file://{origin}", f"{CACHE_REF}:{CACHE_REF}")
    me = _fresh_clone(tmp_path, origin, "me")
    git(me, "config", "vivary.cacheTrust", "any")
    assert run_git_vivary(["sync", "fetch"], me).returncode == 0
    run_git_vivary(["check", "--rev", "HEAD"], me)  # the graph, built from the forged parses, is cached
    fooled = run_git_vivary(["query", "zebra", "--rev", "HEAD", "--json"], me)  # from the cached graph
    assert [h["title"] for h in json.loads(fooled.stdout)["results"]] == ["Forged zebra title"] * 3, fooled.stdout
    git(me, "config", "vivary.cacheTrust", "none")
    honest = run_git_vivary(["query", "zebra", "--rev", "HEAD", "--json"], me)
    assert honest.returncode == 0 and json.loads(honest.stdout)["results"] == [], honest.stdout
    module = run_git_vivary(["query", "module", "--rev", "HEAD", "--json"], me)
    assert [h["title"] for h in json.loads(module.stdout)["results"]] == ["Module one"], module.stdout

