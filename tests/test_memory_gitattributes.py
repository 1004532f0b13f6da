"""Memory writes into notes whose bytes on disk are not their blob's (.gitattributes): `working-tree-encoding`,
`eol=crlf`, an encrypting clean/smudge `filter`. The blob is what `git add` would store, the file what `git
checkout` would write, and `git status` reads clean after every write."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

UTF16 = "memories/*.md text working-tree-encoding=UTF-16LE-BOM eol=crlf\n"
ROT13 = "tr A-Za-z N-ZA-Mn-za-m"  # an "encryption" both ways, as git-crypt's clean and smudge are to each other
CANARY = "QUOKKA-CANARY-7731"


def _blob(repo: Repo, rev_path: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", rev_path], cwd=repo.path, capture_output=True,
                          check=True).stdout


def _utf16_crlf(text: str) -> bytes:
    return b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le")


def _clean(repo: Repo) -> None:
    assert repo.git("status", "--porcelain") == ""


def test_a_memory_in_a_utf16_folder_is_utf16_on_disk_and_utf8_in_its_blob(repo: Repo, cli: Any) -> None:
    repo.commit("init", {".gitattributes": UTF16, "README.md": "# Home\n"})
    r = cli("remember", "We deploy on Tuesdays.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    path = r.json()["path"]
    blob = _blob(repo, f"HEAD:{path}")
    assert blob.startswith(b"---\ntype: memory\n") and b"\r" not in blob
    assert (repo.path / path).read_bytes() == _utf16_crlf(blob.decode())  # what `git checkout` writes
    _clean(repo)

    r = cli("edit", path[:-3], "--append", "Never on Fridays.", cwd=repo.path)
    assert r.code == 0, r.err
    blob = _blob(repo, f"HEAD:{path}")
    assert blob.endswith(b"Never on Fridays.\n") and b"\r" not in blob
    assert (repo.path / path).read_bytes() == _utf16_crlf(blob.decode())
    _clean(repo)
    assert cli("check", cwd=repo.path).code == 0


def test_a_utf16_or_crlf_note_git_added_is_edited_not_taken_for_the_users_change(repo: Repo, cli: Any) -> None:
    note = "---\ntype: memory\ntitle: Deploy day\n---\n# Deploy day\n\nWe deploy on Tuesdays.\n"
    repo.commit("init", {".gitattributes": UTF16 + "memories/crlf/*.md text eol=crlf\n",
                         "memories/deploy-day.md": _utf16_crlf(note),
                         "memories/crlf/release.md": note.replace("Deploy day", "Release").replace("\n", "\r\n")})
    _clean(repo)
    r = cli("edit", "memories/deploy-day", "--replace", "Tuesdays", "--with", "Wednesdays", cwd=repo.path)
    assert r.code == 0, r.err
    assert (repo.path / "memories/deploy-day.md").read_bytes() == _utf16_crlf(note.replace("Tues", "Wednes"))
    r = cli("edit", "memories/crlf/release", "--append", "Tag it first.", cwd=repo.path)
    assert r.code == 0, r.err
    on_disk = (repo.path / "memories/crlf/release.md").read_bytes()
    assert on_disk.endswith(b"We deploy on Tuesdays.\r\n\r\nTag it first.\r\n") and b"\r\n" * 2 in on_disk
    assert b"\r" not in _blob(repo, "HEAD:memories/crlf/release.md")
    _clean(repo)


def test_findings_in_a_crlf_note_name_its_lines(repo: Repo, cli: Any) -> None:
    body = "# A\r\n\r\nline three\r\n\r\nSee [[nowhere]].\r\n"
    repo.commit("init", {".gitattributes": "a/*.md text eol=crlf\n", "a/x.md": body, "b/y.md": body})
    for args in ((), ("--staged",), ("--rev", "HEAD")):
        r = cli("check", *args, cwd=repo.path)
        assert r.code == 1
        assert "a/x.md:5: error W221" in r.out and "b/y.md:5: error W221" in r.out, (args, r.out)


def _encrypting(repo: Repo, *, secret: bool = True) -> None:
    repo.git("config", "filter.crypt.clean", ROT13)
    repo.git("config", "filter.crypt.smudge", ROT13)
    repo.git("config", "filter.crypt.required", "true")
    repo.commit("init", {".gitattributes": "memories/** filter=crypt\nsecret/** filter=crypt\n",
                         "README.md": "# Home\n\nSee [[secret/plan]].\n",
                         **({"secret/plan.md": f"# Plan\n\n{CANARY} lives here.\n"} if secret else {})})


def _reachable_text(repo: Repo, refs: str) -> bytes:
    """Every object (blob, tree, commit) reachable from `refs` (`--all`: every ref), as one byte string."""
    listed = repo.git("rev-list", "--objects", refs).split("\n")
    ids = "".join(line.split(" ")[0] + "\n" for line in listed if line)
    return subprocess.run(["git", "cat-file", "--batch"], cwd=repo.path, input=ids.encode(), capture_output=True,
                          check=True).stdout


def _every_blob(repo: Repo) -> bytes:
    listed = repo.git("cat-file", "--batch-all-objects", "--batch-check=%(objectname) %(objecttype)").split("\n")
    ids = "".join(line.split(" ")[0] + "\n" for line in listed if line.endswith(" blob"))
    return subprocess.run(["git", "cat-file", "--batch"], cwd=repo.path, input=ids.encode(), capture_output=True,
                          check=True).stdout


def test_an_encrypting_filter_keeps_the_plaintext_out_of_every_blob_and_the_shared_cache(repo: Repo,
                                                                                            cli: Any) -> None:
    _encrypting(repo)
    assert CANARY.encode() not in _blob(repo, "HEAD:secret/plan.md")
    r = cli("remember", f"The {CANARY} deploy fact is kept here.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    path = r.json()["path"]
    r = cli("edit", path[:-3], "--append", f"More about {CANARY}.", cwd=repo.path)
    assert r.code == 0, r.err
    _clean(repo)
    plain = (repo.path / path).read_text()
    assert plain.startswith("---\ntype: memory\n") and plain.endswith(f"More about {CANARY}.\n")  # edited, not its
    cipher = _blob(repo, f"HEAD:{path}")  # ciphertext
    rot13 = subprocess.run(ROT13.split(), input=cipher, capture_output=True, check=True).stdout
    assert rot13.decode() == plain
    assert CANARY.encode() not in _every_blob(repo)  # committed or not: no blob ever held the plaintext

    for args in (("check",), ("graph", "--json"), ("find", CANARY), ("query", CANARY), ("blast", path[:-3])):
        assert cli(*args, cwd=repo.path).code in (0, 1)
    assert repo.git("for-each-ref", "refs/vivary/cache")
    assert CANARY.encode() not in _reachable_text(repo, "--glob=refs/vivary/*")
    held = [f for f in (repo.path / ".git/vivary").rglob("*") if f.is_file() and CANARY.encode() in f.read_bytes()]
    assert held == []


def test_a_filter_that_fails_commits_nothing(repo: Repo, cli: Any) -> None:
    _encrypting(repo, secret=False)  # no file of the work tree behind it: Git has none to clean as it is read
    head = repo.git("rev-parse", "HEAD")
    repo.git("config", "filter.crypt.clean", "no-such-vivary-filter")
    r = cli("remember", f"The {CANARY} deploy fact.", cwd=repo.path)
    assert r.code == 2
    assert "memories/the-quokka-canary-7731-deploy-fact.md: Git could not make the blob it commits" in r.err
    assert "fix the filter in your Git config" in r.err and "Traceback" not in r.err
    assert repo.git("rev-parse", "HEAD") == head and not (repo.path / "memories").exists()

    # Not `required`: Git itself would store the text unfiltered, with a warning. A memory write refuses instead.
    repo.git("config", "--unset", "filter.crypt.required")
    r = cli("remember", f"The {CANARY} deploy fact.", cwd=repo.path)
    assert r.code == 2 and "external filter 'no-such-vivary-filter' failed" in r.err
    assert repo.git("rev-parse", "HEAD") == head and not (repo.path / "memories").exists()
    _clean(repo)

    repo.git("config", "filter.crypt.required", "true")
    repo.write({"secret/plan.md": "# Plan\n\nChanged, so Git must clean it to read it.\n"})
    r = cli("check", cwd=repo.path)  # reading a work tree Git cannot store: Git's words, no traceback
    assert r.code == 2 and "secret/plan.md: clean filter 'crypt' failed" in r.err and "Traceback" not in r.err


def test_the_memory_branch_of_its_own_is_filtered_too(repo: Repo, cli: Any, tmp_path: Path) -> None:
    _encrypting(repo)
    repo.commit("memory branch", {".vivary/memory.toml": '[memory.remember]\nbranch = "vivary/memory"\n'})
    r = cli("remember", f"The {CANARY} fact on its branch.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["ref"] == "refs/heads/vivary/memory" and not (repo.path / got["path"]).exists()
    assert CANARY.encode() not in _blob(repo, f"vivary/memory:{got['path']}")
    _clean(repo)


def test_mcp_writes_and_reads_a_utf16_memory_as_git_stores_it(repo: Repo) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import Client
    from test_mcp import _data, _run, _stdio

    repo.commit("init", {".gitattributes": UTF16, "README.md": "# Home\n"})

    async def session() -> dict[str, Any]:
        got: dict[str, Any] = {}
        async with Client(_stdio(repo)) as client:
            async def call(tool: str, **args: Any) -> Any:
                return _data(await client.call_tool(tool, args))

            mem = (await call("add", text="Deploys happen on Tuesdays."))["id"]
            got["edit"] = await call("edit", id=mem, append="Never on Fridays: the quokka freeze.")
            got["read"] = await call("read", id=mem, include_content=True)
            got["found"] = [r["id"] for r in (await call("search", query="quokka freeze", top_k=3))["results"]]
            got["id"] = mem
        return got

    got = _run(session)
    path = f"{got['id']}.md"
    blob = _blob(repo, f"HEAD:{path}")
    assert blob.endswith(b"Never on Fridays: the quokka freeze.\n") and b"\r" not in blob
    assert (repo.path / path).read_bytes() == _utf16_crlf(blob.decode())
    assert got["read"]["content"].endswith("the quokka freeze.\n") and got["found"][0] == got["id"]
    _clean(repo)


def test_mcp_reads_and_searches_an_encrypted_note_as_its_ciphertext(repo: Repo) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from mcp import Client
    from test_mcp import _data, _run, _stdio

    _encrypting(repo)

    async def session() -> dict[str, Any]:
        async with Client(_stdio(repo)) as client:
            async def call(tool: str, **args: Any) -> Any:
                return _data(await client.call_tool(tool, args))

            return {"read": await call("read", id="secret/plan", include_content=True),
                    "search": await call("search", query=CANARY, top_k=5)}

    got = _run(session)
    assert got["read"]["path"] == "secret/plan.md" and CANARY not in str(got["read"])
    assert CANARY not in str(got["search"]["results"])
    assert CANARY.encode() not in _reachable_text(repo, "--glob=refs/vivary/*")
