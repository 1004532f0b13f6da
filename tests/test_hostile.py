"""Hostile input through the public CLI: alias bombs, deep nesting, huge configs, FIFOs and devices where
files are expected. Each must end in a finding or one clear error line with a documented exit code."""

from __future__ import annotations

from typing import Any

from conftest import Repo


def _laughs(levels: int = 9, width: int = 9) -> str:
    lines = ["---", "a0: &a0 [" + ", ".join(["lol"] * width) + "]"]
    for n in range(1, levels):
        lines.append(f"a{n}: &a{n} [" + ", ".join([f"*a{n - 1}"] * width) + "]")
    return "\n".join([*lines, "---", "# Laughs", "", "bomb body [[ok]]", ""])


def test_alias_bomb_is_one_finding_and_every_command_goes_on(repo: Repo, cli: Any) -> None:
    repo.commit(files={"bomb.md": _laughs(), "ok.md": "---\nrelated: [nowhere]\n---\n# OK\n",
                       "tropo.toml": 'version = 1\n[base]\noptional = { related = "ref-list" }\n'})
    r = cli("check", "--json", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1, r.err
    found = {(f["path"], f["code"]) for f in r.json()["findings"]}
    assert ("bomb.md", "E001") in found and ("ok.md", "W220") in found
    bomb = next(f for f in r.json()["findings"] if f["path"] == "bomb.md")
    assert bomb["line"] == 6 and "10,000 values" in bomb["message"]
    assert cli("graph", "--json", cwd=repo.path).json()["counts"]["nodes"] == 2
    assert cli("query", "bomb body", "--json", cwd=repo.path).json()["results"][0]["path"] == "bomb.md"
    assert cli("find", "laughs", "--json", cwd=repo.path).code == 0
    assert cli("index", "--dry-run", "--json", cwd=repo.path).json()["would_index"] == 2
    assert cli("ci", "--format", "json", cwd=repo.path).code == 1


# --- deep nesting ---------------------------------------------------------------------------------------

NOTES = {
    "tropo.toml": 'version = 1\n[base]\noptional = { related = "ref-list" }\n',
    "a.md": "---\nrelated: [b]\ntags:\n  nested: {x: 1}\n---\n# Alpha\n\nalpha body words\n",
    "b.md": "# Beta\n\nbeta body words\n",
}


def _deep(n: int) -> bytes:
    """msgpack: `n` nested one-element arrays around a nil."""
    return b"\x91" * n + b"\xc0"


def _forge_parse_chunk(path: Any, value: bytes) -> None:
    """Rewrite refs/vivary/cache so the parse of a.md holds `value` (raw msgpack) as its `tags` field, with
    the chunk's digest and size fixed in the manifest: a consistent forgery, as a fetched cache could be."""
    import hashlib

    import msgspec
    import pygit2

    from vivary_git import store
    from vivary_git.git import Repo as GitRepo

    r = GitRepo(path)
    snap = store.Snapshot.load(r)
    assert snap is not None
    oid = r.repo.revparse_single("HEAD:a.md").id
    chunk_path = f"parse/{str(oid)[:2]}.msgpack"
    items = msgspec.msgpack.decode(r.repo[snap.tree[chunk_path].id].data)
    raw_items = []
    for key, shared in items:
        if key == str(oid):
            head = b"\x82" + msgspec.msgpack.encode("related") + msgspec.msgpack.encode(shared[0]["related"])
            fields = head + msgspec.msgpack.encode("tags") + value
            rest = b"".join(msgspec.msgpack.encode(x) for x in shared[1:])
            raw_items.append(b"\x92" + msgspec.msgpack.encode(key) + bytes([0x90 + len(shared)]) + fields + rest)
        else:
            raw_items.append(msgspec.msgpack.encode([key, shared]))
    data = bytes([0x90 + len(raw_items)]) + b"".join(raw_items)
    m = snap.manifest
    chunks = dict(m.chunks)
    chunks[chunk_path] = store.ChunkRef(hashlib.sha256(data).hexdigest(), len(data), m.chunks[chunk_path].count)
    manifest = msgspec.msgpack.encode(msgspec.structs.replace(m, chunks=chunks))
    parse_tree = r.repo.TreeBuilder(snap.tree / "parse")
    parse_tree.insert(chunk_path.split("/")[1], r.repo.create_blob(data), 0o100644)
    root = r.repo.TreeBuilder(snap.tree)
    root.insert("parse", parse_tree.write(), 0o040000)
    root.insert("manifest.msgpack", r.repo.create_blob(manifest), 0o100644)
    sig = pygit2.Signature("Forger", "forger@example.invalid")
    commit = r.repo.create_commit(None, sig, sig, "forged", root.write(), [snap.commit])
    r.git(["update-ref", store.CACHE_REF, str(commit)])


def _cold(repo: Repo, cli: Any, *args: str) -> Any:
    import shutil

    shutil.rmtree(repo.path / ".git" / "vivary", ignore_errors=True)
    return cli(*args, cwd=repo.path)


def test_deeply_nested_shared_cache_entry_is_ignored_and_recomputed(repo: Repo, cli: Any) -> None:
    repo.commit(files=NOTES)
    args = ("query", "alpha body", "--json", "--rev", "HEAD")
    want = cli(*args, "--no-cache", cwd=repo.path)
    cli("check", "--rev", "HEAD", cwd=repo.path)  # records refs/vivary/cache
    _forge_parse_chunk(repo.path, _deep(200_000))
    r = _cold(repo, cli, *args)
    assert (r.code, r.out) == (want.code, want.out)
    assert "refs/vivary/cache" in r.err and "Traceback" not in r.err


def test_oversized_shared_frontmatter_is_refused(repo: Repo, cli: Any) -> None:
    import msgspec

    repo.commit(files=NOTES)
    args = ("query", "zzforged", "--json", "--rev", "HEAD")
    cli("check", "--rev", "HEAD", cwd=repo.path)
    # Bounded in bytes (the chunk limit) but more values than any parse could make: not ours to expand.
    _forge_parse_chunk(repo.path, msgspec.msgpack.encode(["zzforged"] * 20_001))
    r = _cold(repo, cli, *args)
    assert r.code == 0 and r.json()["results"] == [], r.out
    assert "refs/vivary/cache" in r.err


def test_deeply_nested_local_cache_file_is_ignored_and_recomputed(repo: Repo, cli: Any) -> None:
    import shutil

    # Enough notes that a run loads the whole local parse cache rather than asking the shared one.
    repo.commit(files={**NOTES, **{f"many/n{i}.md": f"# N{i}\n\n[[a]]\n" for i in range(320)}})
    args = ("check", "--json", "--rev", "HEAD")
    want = cli(*args, "--no-cache", cwd=repo.path)
    cli(*args, cwd=repo.path)
    repo.git("update-ref", "-d", "refs/vivary/cache")
    vivary = repo.path / ".git" / "vivary"
    segments = sorted(vivary.glob("parse-v*/seg-*.msgpack"))
    assert segments
    for seg in segments:  # one entry whose note's `fields` nests 200,000 deep
        seg.write_bytes(b"VVG1" + b"\x91\x92" + b"\xd9\x28" + b"f" * 40 + b"\x97\x81\xa1x" + _deep(200_000))
    for d in vivary.iterdir():
        if d.is_dir() and not d.name.startswith("parse-"):
            shutil.rmtree(d)
    r = cli(*args, cwd=repo.path)
    assert (r.code, r.out) == (want.code, want.out), r.err
    assert "ignored cache file" in r.err and "Traceback" not in r.err


DEEP_TOML = "version = 1\nexclude = " + "[" * 50_000 + "]" * 50_000 + "\n"


def test_deeply_nested_config_files_are_config_errors(repo: Repo, cli: Any) -> None:
    cases = {
        "tropo.toml": DEEP_TOML,
        ".vivary/graph.toml": "[wikilinks]\nfield = " + "[" * 50_000 + "]" * 50_000 + "\n",
        ".tropo/packs/p.toml": DEEP_TOML,
        "sub/tropo.toml": DEEP_TOML,
        ".vivary/memory.toml": "[memory]\nenabled = " + "[" * 50_000 + "]" * 50_000 + "\n",
    }
    for name, text in cases.items():
        base = {"tropo.toml": 'version = 1\npacks = ["p"]\n' if name.endswith("p.toml") else "version = 1\n",
                "a.md": "# A\n", "sub/b.md": "# B\n", name: text}
        repo.git("rm", "-rq", "--ignore-unmatch", ".")
        repo.commit(files=base)
        for args in (("check", "--rev", "HEAD"), ("index", "--dry-run", "--rev", "HEAD")):
            if (name == ".vivary/memory.toml") != (args[0] == "index"):
                continue  # check does not read memory.toml; index reads the rest as check does
            r = cli(*args, cwd=repo.path)
            assert r.code == 2, (name, r.err)
            assert r.err.count("\n") == 1 and name in r.err and "nested too deeply" in r.err, (name, r.err)
