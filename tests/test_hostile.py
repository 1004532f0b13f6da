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

    from vivary_git.git import Repo as GitRepo
    from vivary_git.refnames import CACHE_REF
    from vivary_git.store.format import ChunkRef
    from vivary_git.store.read import Snapshot

    r = GitRepo(path)
    snap = Snapshot.load(r)
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
    chunks[chunk_path] = ChunkRef(hashlib.sha256(data).hexdigest(), len(data), m.chunks[chunk_path].count)
    manifest = msgspec.msgpack.encode(msgspec.structs.replace(m, chunks=chunks))
    parse_tree = r.repo.TreeBuilder(snap.tree / "parse")
    parse_tree.insert(chunk_path.split("/")[1], r.repo.create_blob(data), 0o100644)
    root = r.repo.TreeBuilder(snap.tree)
    root.insert("parse", parse_tree.write(), 0o040000)
    root.insert("manifest.msgpack", r.repo.create_blob(manifest), 0o100644)
    sig = pygit2.Signature("Forger", "forger@example.invalid")
    commit = r.repo.create_commit(None, sig, sig, "forged", root.write(), [snap.commit])
    r.git(["update-ref", CACHE_REF, str(commit)])


def _cold(repo: Repo, cli: Any, *args: str) -> Any:
    import shutil

    shutil.rmtree(repo.path / ".git" / "vivary", ignore_errors=True)
    return cli(*args, cwd=repo.path)


def test_deeply_nested_shared_cache_entry_is_ignored_and_recomputed(repo: Repo, cli: Any) -> None:
    repo.commit(files=NOTES)
    repo.git("config", "vivary.cacheTrust", "any")  # a clone that reads whatever the ref holds: still validated
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
    repo.git("config", "vivary.cacheTrust", "any")  # a clone that reads whatever the ref holds: still validated
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


# --- FIFOs, devices and kernel files where a file is expected --------------------------------------------


def _run(args: list[str], cwd: Any, input: str | None = None) -> Any:
    """`git vivary ARGS` in a subprocess. The timeout only turns a hang into a failure instead of a stuck
    test run; it is not a speed target (the commands here answer in about a second)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return subprocess.run(["git", "vivary", *args], cwd=cwd, capture_output=True, text=True, env=env,
                          input=input, timeout=300, check=False)


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def test_ci_outputs_refuse_fifos_devices_and_kernel_files(repo: Repo) -> None:
    import os

    repo.commit(files={"a.md": "# A\n"})
    fifo = repo.path.parent / "fifo"
    os.mkfifo(fifo)
    for option in ("--summary", "--output", "--sarif", "--codequality", "--github-output"):
        for target, what in ((str(fifo), "FIFO"), ("/proc/self/mem", "kernel interface"),
                             ("/dev/null", "character device")):
            r = _run(["ci", option, target], repo.path)
            assert r.returncode == 2, (option, target, r.stderr)
            assert _one_line(r.stderr) and target in r.stderr and what in r.stderr, (option, target, r.stderr)
    ok = repo.path.parent / "summary.md"
    r = _run(["ci", "--summary", str(ok), "--output", str(ok.with_suffix(".txt"))], repo.path)
    assert r.returncode == 0 and ok.read_text().strip() and ok.with_suffix(".txt").read_text().strip()


def test_recall_queries_refuse_devices_fifos_and_floods(repo: Repo) -> None:
    import os

    repo.commit(files={"a.md": "# A\n"})
    fifo = repo.path.parent / "queries.jsonl"
    os.mkfifo(fifo)
    for target, what in (("/dev/zero", "character device"), (str(fifo), "FIFO"),
                         ("/proc/self/mem", "kernel interface")):
        r = _run(["recall", "--queries", target], repo.path)
        assert r.returncode == 2 and _one_line(r.stderr), (target, r.stderr)
        assert target in r.stderr and what in r.stderr, r.stderr
    flood = '{"id": 1, "query": "x"}\n' * 800_000  # ~19 MB on standard input
    r = _run(["recall", "--queries", "-"], repo.path, input=flood)
    assert r.returncode == 2 and _one_line(r.stderr) and "limit" in r.stderr, r.stderr
    deep = repo.path.parent / "deep.jsonl"
    deep.write_text('{"id": ' + "[" * 100_000 + "]" * 100_000 + ', "query": "x"}\n')
    r = _run(["recall", "--queries", str(deep)], repo.path)
    assert r.returncode == 2 and _one_line(r.stderr) and f"{deep}:1" in r.stderr, r.stderr


def test_plain_folder_refuses_special_config_files_and_reports_special_notes(tmp_path: Any) -> None:
    import os

    ws = tmp_path / "folder"
    (ws / "sub").mkdir(parents=True)
    (ws / "a.md").write_text("# A\n")
    os.mkfifo(ws / "sub" / "pipe.md")
    r = _run(["check", "--json"], ws)
    assert r.returncode == 1, r.stderr
    found = [(f["path"], f["code"]) for f in __import__("json").loads(r.stdout)["findings"]]
    assert found == [("sub/pipe.md", "E000")]
    assert "FIFO" in __import__("json").loads(r.stdout)["findings"][0]["message"]
    big = ws / "big.md"
    big.write_bytes(b"# Big\n" + b"x" * (9 << 20))
    r = _run(["check", "--json"], ws)
    findings = __import__("json").loads(r.stdout)["findings"]
    assert {(f["path"], f["code"]) for f in findings} == {("sub/pipe.md", "E000"), ("big.md", "E000")}
    assert any("over the 8 MiB limit" in f["message"] for f in findings)
    big.unlink()
    for name in ("tropo.toml", ".vivary/graph.toml", ".vivary/memory.toml"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(ws / name)
        args = ["index", "--dry-run"] if name.endswith("memory.toml") else ["check"]
        r = _run(args, ws)
        last = r.stderr.splitlines()[-1]  # index first says the folder is not in Git
        assert r.returncode == 2 and "Traceback" not in r.stderr and name in last and "FIFO" in last, \
            (name, r.stderr)
        os.unlink(ws / name)


def test_oversized_config_files_are_config_errors(repo: Repo, tmp_path: Any) -> None:
    from vivary_git.source import MAX_CONFIG_BYTES

    huge = "version = 1\n" + "# padding\n" * (MAX_CONFIG_BYTES // 10 + 1)
    repo.commit(files={"a.md": "# A\n", "tropo.toml": huge})
    r = _run(["check", "--rev", "HEAD"], repo.path)
    assert r.returncode == 2 and _one_line(r.stderr) and "tropo.toml" in r.stderr and "limit" in r.stderr, r.stderr
    repo.commit(files={"tropo.toml": "version = 1\n", ".vivary/memory.toml": huge})
    r = _run(["index", "--dry-run", "--rev", "HEAD"], repo.path)
    assert r.returncode == 2 and _one_line(r.stderr) and "memory.toml" in r.stderr and "limit" in r.stderr, \
        r.stderr


def test_local_cache_files_replaced_by_fifos_are_ignored(repo: Repo) -> None:
    import os

    repo.commit(files=NOTES)
    want = _run(["check", "--json", "--rev", "HEAD", "--no-cache"], repo.path)
    _run(["check", "--json", "--rev", "HEAD"], repo.path)
    replaced = 0
    for f in (repo.path / ".git" / "vivary").glob("*-v*/*.msgpack"):
        f.unlink()
        os.mkfifo(f)
        replaced += 1
    assert replaced
    r = _run(["check", "--json", "--rev", "HEAD"], repo.path)
    assert (r.returncode, r.stdout) == (want.returncode, want.stdout), r.stderr
    assert "ignored cache file" in r.stderr and "FIFO" in r.stderr and "Traceback" not in r.stderr


def test_ignore_files_that_are_fifos_are_named_not_waited_for(repo: Repo) -> None:
    """Git itself blocks reading a FIFO .gitignore (`git status` hangs too); the snapshot of the working
    tree must end with an error naming the file instead."""
    import os

    repo.commit(files={"a.md": "# A\n", "sub/b.md": "# B\n"})
    for name in (".gitignore", "sub/.gitignore", ".git/info/exclude"):
        target = repo.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        saved = target.read_bytes() if target.exists() else None
        if saved is not None:
            target.unlink()
        os.mkfifo(target)
        r = _run(["check"], repo.path)
        assert r.returncode == 2 and _one_line(r.stderr) and name in r.stderr and "FIFO" in r.stderr, \
            (name, r.stderr)
        target.unlink()
        if saved is not None:
            target.write_bytes(saved)
    assert _run(["check"], repo.path).returncode == 0


def test_hook_files_that_are_fifos_do_not_hang_hooks_commands(repo: Repo) -> None:
    import os

    repo.commit(files={"a.md": "# A\n"})
    hooks = repo.path / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    os.mkfifo(hooks / "pre-commit")
    r = _run(["hooks", "status"], repo.path)
    assert r.returncode in (0, 1, 2) and "Traceback" not in r.stderr, r.stderr
    r = _run(["hooks", "install"], repo.path)
    assert r.returncode in (0, 1, 2, 3) and "Traceback" not in r.stderr, r.stderr
    assert _run(["doctor"], repo.path).returncode in (0, 1)


# --- huge notes: refused before they are read -----------------------------------------------------------

_HUGE = 64 << 20
_PEAK = """import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True)
sys.stdout.buffer.write(p.stdout)
sys.stderr.write(p.stderr.decode("utf-8", "replace"))
sys.stderr.write(f"\\n{p.returncode} {resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}\\n")
"""


def _peak(args: list[str], cwd: Any) -> tuple[int, int, list[dict[str, Any]], str]:
    """(exit code, peak resident memory in KiB of `git vivary ARGS` and every process it waited for, its
    findings, stderr), measured by a fresh parent whose only child it is (RUSAGE_CHILDREN of this test process
    would hold the largest child any test ever had)."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    r = subprocess.run([sys.executable, "-c", _PEAK, "git", "vivary", *args, "--json"], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=600, check=True)
    code, kib = map(int, r.stderr.splitlines()[-1].split())
    findings = json.loads(r.stdout)["findings"] if code in (0, 1) else []
    return code, kib, findings, r.stderr


def _huge_finding(path: str, size: int) -> dict[str, Any]:
    return {"path": path, "line": 1, "level": "error", "code": "E000",
            "message": f"file is {size:,} bytes, over the 8 MiB limit for a note; split it, or add it to `exclude` "
                       "(in tropo.toml; in a vault, .vivary/graph.toml)"}


def _write_huge(path: Any, size: int) -> None:
    """`size` bytes of text (lines of `x`), written in pieces: the test itself never holds the file."""
    line = b"x" * 1023 + b"\n"
    with open(path, "wb") as fh:
        for _ in range(size // len(line)):
            fh.write(line)
        fh.write(b"x" * (size % len(line)))


def _age(path: Any) -> None:
    """Date a file back, so that Git's stat cache trusts the index entry written after it (no racy re-read)."""
    import os
    import time

    then = time.time() - 60
    os.utime(path, (then, then))


def test_huge_committed_note_is_e000_without_being_read(repo: Repo) -> None:
    """A note just over the limit and one of 64 MiB, committed: `check` of the commit, the index and the working
    tree reports each as E000 on line 1, in today's words, and never holds either in memory (peak memory against
    a control run of the same vault without them; a read inflates the blob, and the bytes object besides)."""
    from vivary_git.parse import MAX_BYTES

    repo.write({"a.md": "# A\n\n[[b]]\n", "b.md": "# B\n"})
    _age(repo.path / "a.md")
    _age(repo.path / "b.md")
    repo.commit()
    controls = {t: _peak(["check", "--no-cache", *t], repo.path) for t in ((), ("--staged",), ("--rev", "HEAD"))}
    for code, _, findings, err in controls.values():
        assert code == 0 and findings == [], err
    _write_huge(repo.path / "edge.md", MAX_BYTES + 1)
    _write_huge(repo.path / "huge.md", _HUGE)
    _age(repo.path / "edge.md")
    _age(repo.path / "huge.md")
    repo.commit()
    for t, (_, control, _, _) in controls.items():
        code, kib, findings, err = _peak(["check", "--no-cache", *t], repo.path)
        assert code == 1 and "Traceback" not in err, err
        assert findings == [_huge_finding("edge.md", MAX_BYTES + 1), _huge_finding("huge.md", _HUGE)]
        assert kib < control + (_HUGE >> 10) // 3, (t, kib, control)


def test_huge_new_note_in_the_working_tree_is_hashed_by_git_in_bounded_memory(repo: Repo) -> None:
    """A 64 MiB note new in the working tree: Git hashes it to snapshot the working tree (it must, to know the
    tree), streaming it (core.bigFileThreshold at the note limit) instead of mapping it whole; vivary refuses
    the blob unread. Peak memory of the whole run stays near the control's."""
    repo.commit(files={"a.md": "# A\n", "b.md": "# B\n"})
    code, control, findings, err = _peak(["check", "--no-cache"], repo.path)
    assert code == 0 and findings == [], err
    _write_huge(repo.path / "huge.md", _HUGE)
    code, kib, findings, err = _peak(["check", "--no-cache"], repo.path)
    assert code == 1 and findings == [_huge_finding("huge.md", _HUGE)], err
    assert kib < control + (_HUGE >> 10) // 3, (kib, control)


def test_huge_and_sparse_notes_in_a_plain_folder_are_not_read(tmp_path: Any) -> None:
    """Outside Git, `stat` decides before a file is opened, and no more than the limit is read whatever it said:
    a 3 GiB sparse file is one finding, and memory stays near the control's."""
    import os

    ws = tmp_path / "folder"
    ws.mkdir()
    (ws / "a.md").write_text("# A\n")
    code, control, findings, err = _peak(["check"], ws)
    assert code == 0 and findings == [], err
    _write_huge(ws / "huge.md", _HUGE)
    with open(ws / "sparse.md", "wb") as fh:
        fh.truncate(3 << 30)
    code, kib, findings, err = _peak(["check"], ws)
    assert code == 1, err
    assert [(f["path"], f["line"], f["code"]) for f in findings] == [("huge.md", 1, "E000"), ("sparse.md", 1, "E000")]
    assert f"is {3 << 30:,} bytes, over the 8 MiB limit" in findings[1]["message"]
    assert kib < control + (_HUGE >> 10) // 3, (kib, control)
    os.unlink(ws / "sparse.md")


def test_huge_note_parsed_by_a_worker_is_not_read_there_either(repo: Repo) -> None:
    """Past `parallel.MIN_BLOBS` notes a cold parse is shared with forked workers, which read blobs through their
    own repository handles: the note sorted last (a worker's share) is refused unread there too."""
    from vivary_git.parallel import MIN_BLOBS, can_fork

    if not can_fork():
        import pytest

        pytest.skip("no worker processes here (one core, or not Linux)")
    repo.commit(files={f"n/{i:05}.md": f"# N{i}\n" for i in range(MIN_BLOBS + 100)})
    code, control, findings, err = _peak(["check", "--no-cache", "--rev", "HEAD"], repo.path)
    assert code == 0 and findings == [], err
    _write_huge(repo.path / "zz.md", _HUGE)
    repo.commit()
    code, kib, findings, err = _peak(["check", "--no-cache", "--rev", "HEAD"], repo.path)
    assert code == 1 and findings == [_huge_finding("zz.md", _HUGE)], err
    assert kib < control + (_HUGE >> 10) // 3, (kib, control)


def test_a_huge_note_is_not_edited(repo: Repo) -> None:
    """`link` (MCP, `remember`) rewrites a note's frontmatter from its committed bytes: a note over the limit
    is refused with the limit and the fix, before its blob is read."""
    import pytest

    from vivary_git.errors import RefusedError
    from vivary_git.mcp.service import MemoryService
    from vivary_git.parse import MAX_BYTES

    repo.write({"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'
                              '[types.decision.optional]\nrelated = "ref-list"\n',
                "decisions/deploy.md": "# Deploy\n"})
    _write_huge(repo.path / "decisions" / "huge.md", MAX_BYTES + 1)
    repo.commit()
    service = MemoryService(repo.path)
    try:
        with pytest.raises(RefusedError, match=r"decisions/huge\.md: is 8,388,609 bytes, over the 8 MiB limit "
                                               r"for a note, so it is not edited; split it"):
            service.link("huge", "related", "deploy")
        assert service.link("deploy", "related", "huge").ok  # a link *to* it is the small note's edit
    finally:
        service.close()


# --- deep Markdown nesting ------------------------------------------------------------------------------------


def _scan_work(body: str) -> int:
    """Lines of `vivary_git/body.py` run to read `body`'s block structure (`body.prose`): a count of work that
    does not depend on the machine's speed."""
    import sys

    from vivary_git import body as scanner

    count = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if frame.f_code.co_filename != scanner.__file__:
            return None
        if event == "line":
            count += 1
        return trace

    sys.settrace(trace)
    try:
        scanner.prose(body)
    finally:
        sys.settrace(None)
    return count


def test_deep_nesting_is_read_in_bounded_work_and_its_links_still_count(repo: Repo, cli: Any) -> None:
    """Every open list item or quote was tested again by each later line, and each level of `- - - … x` ran a
    regular expression over the rest of its line: a 200 kB note of nested items, or a staircase of them,
    took minutes in every command. Containers now nest at most `MAX_NESTING` deep (markdown-it's bound),
    deeper markers are text, and a line is followed through its containers by position."""
    from vivary_git.body import MAX_NESTING

    def staircase(n: int) -> str:
        return "`code`\n" + "\n".join("  " * i + f"- [[s{i}]]" for i in range(n)) + "\n"

    def one_line(n: int) -> str:
        return "`code`\n" + "- " * n + "[[deep]]\n"

    # Work grows with the text, not with its square: twice the staircase is about twice the work.
    assert _scan_work(staircase(800)) < 2.5 * _scan_work(staircase(400))
    assert _scan_work(one_line(2 * MAX_NESTING * 10)) < 1.1 * _scan_work(one_line(MAX_NESTING * 10))
    # Through the CLI, the links of a hostile note are still read, on their lines.
    note = ("# Deep\n\n`code`\n" + "- " * 50_000 + "[[nested]]\n" + "> " * 50_000 + "[[quoted]]\n"
            + "\n".join("  " * i + f"- [[step{i}]]" for i in range(MAX_NESTING + 20)) + "\n")
    repo.commit(files={"deep.md": note})
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 1, r.err
    found = {(f["line"], f["message"].split(" matches")[0]) for f in r.json()["findings"]}
    assert {(4, "wikilink [[nested]]"), (5, "wikilink [[quoted]]"), (6, "wikilink [[step0]]"),
            (6 + MAX_NESTING - 1, f"wikilink [[step{MAX_NESTING - 1}]]")} <= found, sorted(found)[:5]


# --- a note of a million links ----------------------------------------------------------------------------------


def test_a_note_of_many_links_costs_little_memory_a_link(repo: Repo) -> None:
    """A 7.8 MB note of 1.3 million wikilinks took a check to 0.6-1 GB: besides a finding for each broken one (now
    at most `MAX_LINK_FINDINGS`, then one W224), each link was a record of its text, line and kind and one of how
    the dialect reads it, each with a collector's header, a number object for its line, a copy of its text however
    often the note repeats it, and a tuple in a list of every link sorted once. Measured here as the check's peak
    of Python memory for a note of 200,000 links (40 names, half of them notes, two a line), above the same note
    with its brackets turned to parentheses (no links): ~140 bytes a link, mostly the two records; 254 with the
    findings cut alone, 199 with a copy of each repeated text, 173 with the collector's headers."""
    import tracemalloc

    from vivary_git import open_workspace
    from vivary_git.check import MAX_LINK_FINDINGS

    links = 200_000
    rows = "\n".join(f"- [[topic-{i % 40:03}]] and [[topic-{i * 7 % 40:03}]]" for i in range(links // 2))
    repo.commit(files={"a.md": "# A\n", **{f"topic-{i:03}.md": f"# Topic {i}\n" for i in range(20)},
                       "big.md": "# Big\n\n" + rows.replace("[[", "((").replace("]]", "))") + "\n"})
    repo.commit(files={"big.md": "# Big\n\n" + rows + "\n"})

    def peak(rev: str) -> tuple[int, list[str]]:
        tracemalloc.start()
        try:
            report = open_workspace(repo.path, rev=rev, cache=False).check()
            return tracemalloc.get_traced_memory()[1], [f.code for f in report.findings]
        finally:
            tracemalloc.stop()

    peak("HEAD~1")  # (what the command imports is then imported: neither run below counts it)
    control, none = peak("HEAD~1")
    held, codes = peak("HEAD")
    assert none == [] and codes == ["W221"] * MAX_LINK_FINDINGS + ["W224"]
    assert (held - control) / links < 160, (held, control)
