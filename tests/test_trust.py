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
import time
from pathlib import Path

import msgspec
import pytest
from conftest import TROPO, Repo, git, run_git_vivary
from test_store import objects_reachable, stats, tip

from vivary_git.git import Repo as GitRepo
from vivary_git.refnames import CACHE_REF, NOTES_REF
from vivary_git.store import format as fmt
from vivary_git.store import notes as store_notes
from vivary_git.store import refcache, trust
from vivary_git.store import write as store_write
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
    # Azure Pipelines and Jenkins set no `CI`: their own variables make `check` a gate too, from a cold cache.
    for env in ({"TF_BUILD": "True"}, {"JENKINS_URL": "https://jenkins.example.invalid/"}):
        shutil.rmtree(me / ".git" / "vivary")
        r = run_git_vivary(["check", "--rev", "HEAD"], me, env=env)
        assert r.returncode == 1, (env, r.stdout, r.stderr)
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



# --- signing and verifying cache commits, through store's API -----------------------------------------------

NEEDS_SSH = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen (OpenSSH)")


def _signs(path: Path, tmp_path: Path, name: str = "ci") -> str:
    """Sign with a new SSH key in `path` (Git's own SSH signing); the key's allowed-signers line."""
    key, pub = _ssh_key(tmp_path, name)
    git(path, "config", "gpg.format", "ssh")
    git(path, "config", "user.signingKey", f"{key}.pub")
    return f'{name} namespaces="git" {pub}\n'


def _state(n: int) -> store_write.Changes:
    return store_write.Changes(states={f"state/local/k{n}/index.bin": f"state {n}".encode()})


@NEEDS_SSH
def test_cache_commits_are_vivary_gits_own_signed_or_not(repo: Repo, tmp_path: Path) -> None:
    """A cache commit is pushed to every clone: signed or not it is made by `vivary-git`, never under the
    name and address of the user whose run wrote it (Git's signing reads them from the environment)."""
    repo.commit("notes", NOTES)
    _signs(repo.path, tmp_path)
    r = GitRepo(repo.path)
    unsigned = store_write.write(r, _state(1))
    signed = store_write.write(r, _state(2), sign=True)
    assert unsigned is not None and signed is not None
    stamp = git(repo.path, "log", "-1", "--format=%ad", "--date=raw", unsigned.commit).split()
    assert abs(int(stamp[0]) - time.time()) < 3600 and stamp[1] == "+0000", stamp  # written now, in UTC
    for commit, gpgsig in ((unsigned.commit, False), (signed.commit, True)):
        who = git(repo.path, "log", "-1", "--format=%an <%ae>|%cn <%ce>", commit).strip()
        assert who == "vivary-git <vivary-git@localhost>|vivary-git <vivary-git@localhost>", who
        assert git(repo.path, "log", "-1", "--format=%B", commit) == "vivary cache\n"
        assert ("gpgsig" in git(repo.path, "cat-file", "commit", commit)) is gpgsig


@NEEDS_SSH
def test_a_cache_commit_git_cannot_sign_is_not_recorded_and_the_line_says_why(
        repo: Repo, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit("notes", NOTES)
    _signs(repo.path, tmp_path)
    git(repo.path, "config", "user.signingKey", str(tmp_path / "keys" / "gone.pub"))
    git(repo.path, "config", "vivary.cacheSign", "true")
    cache = refcache.RefCache(GitRepo(repo.path))
    assert cache.sign and cache.write(_state(1), "vivary cache: test") is None
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1, err
    assert err.startswith("vivary: vivary.cacheSign is on but Git could not sign the cache commit: "), err
    assert "gone.pub" in err and err.endswith(" (check user.signingKey and gpg.format); this tree was not recorded\n")
    assert tip(repo.path) == ""
    # Git itself gone: said the same way, never a traceback.
    tree = git(repo.path, "rev-parse", "HEAD^{tree}").strip()
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(trust.SigningError) as failed:
        trust._signed_commit(GitRepo(repo.path), tree, [], "vivary cache: test")
    assert str(failed.value) == ("cannot sign the cache commit (`git` is not on PATH; install Git (2.30 or newer) "
                                 "and try again)")


def test_provider_state_is_read_only_from_a_cache_this_clone_trusts(
        repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    """`get_state`/`list_states` (what a memory provider loads) follow `vivary.cacheTrust` as every read does:
    nothing by default, the tip with `any`; a state file that does not match the manifest reads as absent,
    said in one line on stderr."""
    repo.commit("notes", NOTES)
    r = GitRepo(repo.path)
    assert store_write.put_state(r, "local", "k1", {"index.bin": b"vectors", "manifest.json": b"{}"}) is not None
    assert refcache.get_state(r, "local", "k1", "index.bin") is None
    assert refcache.list_states(r, "local") == {}
    git(repo.path, "config", "vivary.cacheTrust", "any")
    assert refcache.get_state(r, "local", "k1", "index.bin") == b"vectors"
    assert refcache.get_state(r, "local", "k1", "gone.bin") is None
    assert refcache.list_states(r, "local") == {"k1": ["index.bin", "manifest.json"]}
    assert refcache.list_states(r, "cognee") == {}
    assert capsys.readouterr() == ("", "")
    # Someone swaps the state file's bytes and leaves the manifest as it was (Git plumbing, a scratch index).
    index = {"GIT_INDEX_FILE": str(repo.path / ".git" / "forge-index")}
    git(repo.path, "read-tree", CACHE_REF, env=index)
    swapped = _blob(repo.path, b"VECTORS")  # the same size
    git(repo.path, "update-index", "--cacheinfo", f"100644,{swapped},state/local/k1/index.bin", env=index)
    forged = git(repo.path, "commit-tree", git(repo.path, "write-tree", env=index).strip(), "-p", CACHE_REF,
                 "-m", "vivary cache").strip()
    git(repo.path, "update-ref", CACHE_REF, forged)
    assert refcache.get_state(r, "local", "k1", "index.bin") is None
    assert capsys.readouterr() == ("", "vivary: ignored the cache in refs/vivary/cache (state/local/k1/index.bin does "
                                       "not match its sha256 in the manifest (modified?)); results are recomputed. "
                                       "`git vivary cache verify` shows the damage, `git vivary cache drop` removes "
                                       "it\n")


@NEEDS_SSH
def test_a_signature_is_judged_by_each_repositorys_allowed_signers_and_checked_once(
        repo: Repo, tmp_path: Path) -> None:
    """The same signed cache commit in two clones of one process (an MCP server serves several workspaces):
    trusted where its signer is allowed, not where it is not; the answer is kept per repository, and Git
    verifies a commit once per repository."""
    repo.commit("notes", NOTES)
    allowed = _signs(repo.path, tmp_path)
    written = store_write.write(GitRepo(repo.path), _state(1), sign=True)
    assert written is not None
    origin = bare(tmp_path, "origin.git")
    repo.git("push", "-q", f"file://{origin}", "main", f"{CACHE_REF}:{CACHE_REF}")
    trusting, other = (_fresh_clone(tmp_path, origin, name) for name in ("trusting", "other"))
    calls = tmp_path / "verify-calls"
    program = tmp_path / "counting-ssh-keygen"
    program.write_text(f'#!/bin/sh\necho "$@" >> {calls}\nexec ssh-keygen "$@"\n')
    program.chmod(0o755)
    for clone, signers in ((trusting, allowed), (other, "")):
        git(clone, "fetch", "-q", "origin", f"{CACHE_REF}:{CACHE_REF}")
        (clone / ".git" / "allowed").write_text(signers)
        git(clone, "config", "gpg.ssh.allowedSignersFile", str(clone / ".git" / "allowed"))
        git(clone, "config", "gpg.ssh.program", str(program))
    assert trust.verified(GitRepo(trusting), written.commit)
    assert not trust.verified(GitRepo(other), written.commit)
    assert trust.verified(GitRepo(trusting), written.commit) and not trust.verified(GitRepo(other), written.commit)
    asked = [line for line in calls.read_text().splitlines() if line.startswith("-Y find-principals")]
    assert len(asked) == 2, calls.read_text()  # once in each clone
    assert trust.newest_verified(GitRepo(trusting)) == written.commit
    assert trust.newest_verified(GitRepo(other)) is None


@NEEDS_SSH
def test_the_newest_verified_commit_is_looked_for_as_far_back_as_a_chain_goes(repo: Repo, tmp_path: Path) -> None:
    """A chain holds at most `CHAIN_LIMIT` commits after its root: a signed root under that many unsigned
    commits is found; one more commit on top, and it is not looked for (a longer chain is not ours)."""
    repo.commit("notes", NOTES)
    (tmp_path / "allowed").write_text(_signs(repo.path, tmp_path))
    git(repo.path, "config", "gpg.ssh.allowedSignersFile", str(tmp_path / "allowed"))
    r = GitRepo(repo.path)
    root = store_write.write(r, _state(1), sign=True)
    assert root is not None
    tree = git(repo.path, "rev-parse", f"{root.commit}^{{tree}}").strip()
    commit = root.commit
    for n in range(fmt.CHAIN_LIMIT):
        commit = git(repo.path, "commit-tree", tree, "-p", commit, "-m", f"vivary cache {n}").strip()
    git(repo.path, "update-ref", CACHE_REF, commit)
    assert trust.newest_verified(r) == root.commit
    git(repo.path, "update-ref", CACHE_REF,
        git(repo.path, "commit-tree", tree, "-p", commit, "-m", "vivary cache: one too many").strip())
    assert trust.newest_verified(r) is None


def _swap_blob(cwd: Path, path: str, data: bytes) -> None:
    """Put `data` at `path` in the cache's tree, its manifest left as it was (Git plumbing, a scratch index)."""
    index = {"GIT_INDEX_FILE": str(cwd / ".git" / "forge-index")}
    git(cwd, "read-tree", CACHE_REF, env=index)
    git(cwd, "update-index", "--cacheinfo", f"100644,{_blob(cwd, data)},{path}", env=index)
    forged = git(cwd, "commit-tree", git(cwd, "write-tree", env=index).strip(), "-p", CACHE_REF,
                 "-m", "vivary cache").strip()
    git(cwd, "update-ref", CACHE_REF, forged)


def test_a_run_writes_nothing_on_a_cache_it_found_damaged(repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    """Damage found by a read turns the cache off for the run: its writes build nothing on top of it (a
    writer would keep the damaged entries it did not replace, under a new commit). Damage a write finds
    itself is said once and the write is dropped; a ref that stays locked is said too, and results stand."""
    repo.commit("notes", NOTES)
    r = GitRepo(repo.path)
    keys = ["ab" + "1" * 38, "ab" + "2" * 38]
    assert store_write.write(r, store_write.Changes(parse={keys[0]: msgspec.msgpack.encode("one")})) is not None
    assert refcache.RefCache(r).missing("parse", [keys[1], keys[0]]) == [keys[1]]
    git(repo.path, "config", "vivary.cacheTrust", "any")
    _swap_blob(repo.path, "parse/ab.msgpack", b"\x00" * len(_cat(repo.path, f"{CACHE_REF}:parse/ab.msgpack")))
    before = tip(repo.path)
    cache = refcache.RefCache(r)
    assert cache.get("parse", keys[:1]) == {} and cache.damaged
    assert cache.write(_state(1), "vivary cache: test") is None
    assert tip(repo.path) == before
    assert capsys.readouterr().err.count("vivary: ignored the cache in refs/vivary/cache (parse/ab.msgpack") == 1
    # The manifest itself damaged: the write finds it, says so once, and writes nothing.
    _swap_blob(repo.path, "manifest.msgpack", b"not a manifest")
    before = tip(repo.path)
    cache = refcache.RefCache(r, read=False)
    assert cache.write(_state(2), "vivary cache: test") is None and cache.damaged
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("vivary: ignored the cache in refs/vivary/cache (") and err.count("\n") == 1
    assert tip(repo.path) == before
    # Another ref, as asked; and a ref whose lock stays taken: the run says so and goes on.
    other = refcache.RefCache(r, "refs/vivary/other", read=False).write(_state(3), "vivary cache: test")
    assert other is not None and git(repo.path, "rev-parse", "refs/vivary/other").strip() == other.commit
    assert tip(repo.path) == before
    (repo.path / ".git" / "refs" / "vivary" / "other.lock").write_text("")
    assert refcache.RefCache(r, "refs/vivary/other", read=False).write(_state(4), "vivary cache: test") is None
    out, err = capsys.readouterr()
    lock = (repo.path / ".git" / "refs" / "vivary" / "other.lock").resolve()
    assert out == "" and err == (f"vivary: refs/vivary/other is locked: {lock} is there (a Git command moving it now, "
                                 "or one killed while it did, which leaves it behind); when no Git command is running "
                                 "in this repository, remove that file and try again; this run's entries were not "
                                 "recorded; results are unaffected\n")


def test_the_trust_setting_is_read_as_git_writes_it_and_an_unknown_level_trusts_nothing(
        repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("notes", NOTES)
    r = GitRepo(repo.path)
    assert trust.trust(r) == "none" and capsys.readouterr() == ("", "")
    for written, level in ((" Signed ", "signed"), ("ANY", "any"), ("none", "none")):
        git(repo.path, "config", "vivary.cacheTrust", written)
        assert trust.trust(r) == level
    assert capsys.readouterr() == ("", "")
    git(repo.path, "config", "vivary.cacheTrust", "everything " + "x" * 60)
    assert trust.trust(r) == "none"
    assert capsys.readouterr() == ("", "vivary: vivary.cacheTrust = 'everything " + "x" * 29 + "' is not one of none, "
                                       "signed, any; the shared cache is not read (`git config vivary.cacheTrust "
                                       "signed|any` to read it)\n")
    # The switches: off unless set to a boolean Git reads as true; the cache itself on unless set false.
    assert (trust.signing(r), store_notes.notes_enabled(r), refcache.enabled(r)) == (False, False, True)
    for key in ("vivary.cacheSign", "vivary.notes", "vivary.cache"):
        git(repo.path, "config", key, "not a boolean")
    assert (trust.signing(r), store_notes.notes_enabled(r), refcache.enabled(r)) == (False, False, True)
    for key, value in (("vivary.cacheSign", "yes"), ("vivary.notes", "on"), ("vivary.cache", "off")):
        git(repo.path, "config", key, value)
    assert (trust.signing(r), store_notes.notes_enabled(r), refcache.enabled(r)) == (True, True, False)


def test_one_run_reads_one_cache_commit_until_it_writes_its_own(repo: Repo) -> None:
    """A run's reads (`snapshot`) and what its writes build on (`base`) are each loaded once: another writer's
    commit meanwhile is not read half-way through; the run's own write is read next."""
    repo.commit("notes", NOTES)
    r = GitRepo(repo.path)
    first = store_write.write(r, _state(1))
    assert first is not None
    git(repo.path, "config", "vivary.cacheTrust", "any")
    cache = refcache.RefCache(r)
    snap, base = cache.snapshot(), cache.base()
    assert snap is not None and base is not None and snap.commit == base.commit == first.commit
    other = store_write.write(r, _state(2))  # another process
    assert other is not None
    assert cache.snapshot() is snap and cache.base() is base
    mine = cache.write(_state(3), "vivary cache: test")
    assert mine is not None and mine.parent == other.commit
    assert cache.snapshot().commit == cache.base().commit == mine.commit  # type: ignore[union-attr]
    assert cache.has_tree("0" * 40 + "-" + "0" * 16) is False
    # Trusting nothing: no commit is read, though there is one to build on.
    git(repo.path, "config", "vivary.cacheTrust", "none")
    cache = refcache.RefCache(r)
    assert cache.snapshot() is None and not cache.reads() and cache.base() is not None
    assert refcache.RefCache(r, read=False).trust == "none"
    # Signed: only a commit whose signature verifies, and none here is signed.
    git(repo.path, "config", "vivary.cacheTrust", "signed")
    cache = refcache.RefCache(r)
    assert cache.snapshot() is None and cache.reads()


def test_a_run_knows_the_trees_its_cache_holds(repo: Repo) -> None:
    repo.commit("notes", NOTES)
    assert run_git_vivary(["check", "--rev", "HEAD"], repo.path).returncode == 1
    r = GitRepo(repo.path)
    snap = Snapshot.load(r)
    assert snap is not None and len(snap.manifest.trees) == 1
    [key] = snap.manifest.trees
    cache = refcache.RefCache(r, read=False)
    assert cache.has_tree(key) and not cache.has_tree("0" * 40 + "-" + "0" * 16)


def test_damage_found_where_a_write_would_build_names_the_ref_and_turns_the_cache_off(
        repo: Repo, capsys: pytest.CaptureFixture[str]) -> None:
    repo.commit("notes", NOTES)
    r = GitRepo(repo.path)
    for ref in (CACHE_REF, "refs/vivary/other"):
        written = store_write.write(r, _state(1), ref=ref)
        assert written is not None
    git(repo.path, "update-ref", "refs/vivary/other", git(
        repo.path, "commit-tree", _mktree(repo.path, [f"100644 blob {_blob(repo.path, b'junk')}\tmanifest.msgpack"]),
        "-m", "vivary cache").strip())
    cache = refcache.RefCache(r, "refs/vivary/other", read=False)
    assert cache.base() is None and cache.damaged and cache.missing("parse", ["ab" * 20]) == ["ab" * 20]
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("vivary: ignored the cache in refs/vivary/other (manifest.msgpack is not a "
                                        "valid manifest (") and err.count("\n") == 1, err


def test_a_verification_git_cannot_run_trusts_nothing(repo: Repo, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    repo.commit("notes", NOTES)
    if shutil.which("ssh-keygen") is None:
        pytest.skip("needs ssh-keygen (OpenSSH)")
    (tmp_path / "allowed").write_text(_signs(repo.path, tmp_path))
    git(repo.path, "config", "gpg.ssh.allowedSignersFile", str(tmp_path / "allowed"))
    written = store_write.write(GitRepo(repo.path), _state(1), sign=True)
    assert written is not None
    r = GitRepo(repo.path)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    assert trust.verified(r, written.commit) is False
    assert trust.verified(r, "0" * 40) is False  # not there at all


@NEEDS_SSH
def test_a_signing_writer_builds_on_the_commit_it_verified_even_when_the_ref_moves_meanwhile(
        repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`base` reads the tip, verifies it, then loads it: by its id, so an unsigned commit pushed in between is
    not what a signing writer builds on. The race is made certain by handing `base` the tip as it was."""
    repo.commit("notes", NOTES)
    (tmp_path / "allowed").write_text(_signs(repo.path, tmp_path))
    git(repo.path, "config", "gpg.ssh.allowedSignersFile", str(tmp_path / "allowed"))
    git(repo.path, "config", "vivary.cacheSign", "true")
    r = GitRepo(repo.path)
    signed = store_write.write(r, _state(1), sign=True)
    assert signed is not None
    pushed = store_write.write(r, _state(2))  # unsigned, on top
    assert pushed is not None and tip(repo.path) == pushed.commit
    monkeypatch.setattr(refcache, "ref_tip", lambda repo, ref: signed.commit)
    base = refcache.RefCache(r).base()
    assert base is not None and base.commit == signed.commit
