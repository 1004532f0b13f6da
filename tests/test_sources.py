"""Source anchors for files and folders (`remember --file/--folder`, `refresh`), on real files in real
repositories. Web pages are in test_sources_url.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

CANARY = "canary-5b1d0c"
DOC = (
    "---\ntags: [ops]\n---\n# Deploy runbook\n\nHow we deploy: blue green. Read [[notes/keys]] and "
    "[the other page](other.md) first.\n\n## Rollback\n\nRevert the release commit.\n"
)


def _seed(repo: Repo, extra: dict[str, str | bytes] | None = None) -> None:
    repo.commit("init", {
        "notes/keys.md": "# Key rotation\n\nKeys rotate every quarter.\n",
        "docs/deploy.md": DOC,
        "docs/other.md": "# Other\n",
        ".gitignore": "drafts/\n*.log\n",
        **(extra or {}),
    })


def make_pdf(text: str, title: str = "") -> bytes:
    """A one-page PDF whose page shows `text` in Helvetica (offsets computed, so any reader opens it)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    info = f"<< /Title ({title}) >>".encode("latin-1") if title else None
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if info is not None:
        objs.append(info)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    trailer = b"/Size %d /Root 1 0 R" % (len(objs) + 1) + (b" /Info %d 0 R" % len(objs) if info else b"")
    out += b"trailer\n<< " + trailer + b" >>\nstartxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


def _frontmatter(text: str) -> dict[str, Any]:
    import yaml

    assert text.startswith("---\n")
    got: dict[str, Any] = yaml.safe_load(text[4:text.index("\n---\n", 4)])
    return got


def _note(repo: Repo, got: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = repo.git("show", f"HEAD:{got['path']}")
    return _frontmatter(text), text


def _reachable_bytes(repo: Repo) -> bytes:
    """Every object reachable from any ref (branches, refs/vivary/cache, notes), as one blob of bytes."""
    ids = subprocess.run(["git", "rev-list", "--all", "--objects"], cwd=repo.path, capture_output=True,
                         check=True).stdout
    listing = b"\n".join(line.split(b" ", 1)[0] for line in ids.splitlines()) + b"\n"
    return subprocess.run(["git", "cat-file", "--batch"], cwd=repo.path, input=listing, capture_output=True,
                          check=True).stdout


# The local graph caches under .git/vivary/ hold every note's parse, private ones too, by design: `check`
# and `graph` see private notes (docs/architecture.md#caches); they are never shared. Everything else is
# scanned: every object any ref reaches (branches, refs/vivary/cache), the index, the memory and probe state.
_GRAPH_CACHES = ("parse-", "facts-", "graph-", "checks-", "findings-", "search-", "history-")


def _assert_nowhere(repo: Repo, needle: str, *outputs: str) -> None:
    for out in outputs:
        assert needle not in out
    assert needle.encode() not in _reachable_bytes(repo)
    git_dir = repo.path / ".git"
    for path in git_dir.rglob("*"):
        parts = path.relative_to(git_dir).parts
        if not path.is_file() or parts[0] == "objects":
            continue
        if parts[0] == "vivary" and len(parts) > 1 and parts[1].startswith(_GRAPH_CACHES):
            continue
        assert needle.encode() not in path.read_bytes(), path


# --- files ---------------------------------------------------------------------------------------


def test_a_file_anchor_records_path_blob_and_the_text_fenced(repo: Repo, cli: Any) -> None:
    _seed(repo)
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("remember", "--file", "docs/deploy.md", "--tag", "ops", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["ok"] and got["changed"] and got["anchor"] == "file" and got["kind"] == "source_document"
    assert got["path"] == "memories/anchors/deploy-runbook.md" and got["target"] == "docs/deploy.md"
    # one commit, beside the user's work, holding only the anchor note
    assert repo.git("rev-parse", "HEAD~1").strip() == head
    assert repo.git("diff", "--name-only", "HEAD~1", "HEAD").split() == [got["path"]]
    fields, text = _note(repo, got)
    blob = repo.git("hash-object", "docs/deploy.md").strip()
    assert fields["anchor_blob"] == blob == got["source_blob"] == repo.git("rev-parse", "HEAD:docs/deploy.md").strip()
    assert fields["type"] == "memory" and fields["kind"] == "source_document" and fields["anchor"] == "file"
    assert fields["anchor_path"] == "docs/deploy.md" and fields["anchor_size"] == len(DOC.encode())
    assert fields["anchor_format"] == "markdown" and fields["anchor_truncated"] is False
    assert fields["title"] == "Deploy runbook" and fields["tags"] == ["ops", "source", "markdown"]
    assert fields["description"].startswith("Markdown file docs/deploy.md: Deploy runbook. How we deploy")
    assert "[[" not in fields["description"]  # a property link would be an edge of the anchor
    assert "Revert the release commit." in text and "```text\n---\ntags: [ops]" in text
    # the copied text's links are text: no edge from the anchor, and check stays clean
    graph = cli("graph", "--json", cwd=repo.path).json()
    assert [e for e in graph["edges"] if e["from"] == "memories/anchors/deploy-runbook"] == []
    assert {n["id"]: n["type"] for n in graph["nodes"]}["memories/anchors/deploy-runbook"] == "memory"
    r = cli("check", cwd=repo.path)
    assert r.code == 0, r.out


def test_the_same_file_again_warns_and_force_refreshes_in_place(repo: Repo, cli: Any) -> None:
    _seed(repo)
    first = cli("remember", "--file", "docs/deploy.md", "--json", cwd=repo.path).json()
    head = repo.git("rev-parse", "HEAD").strip()
    again = cli("remember", "--file", "docs/deploy.md", "--json", cwd=repo.path)
    assert again.code == 0
    assert again.json()["changed"] is False and again.json()["id"] == first["id"]
    assert "already remembered as memories/anchors/deploy-runbook" in again.err and "--force" in again.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    (repo.path / "docs/deploy.md").write_text(DOC + "\nA new step.\n")
    forced = cli("remember", "--file", "docs/deploy.md", "--force", "--json", cwd=repo.path)
    assert forced.code == 0, forced.err
    assert forced.json()["op"] == "refresh" and forced.json()["path"] == first["path"]
    assert repo.git("ls-files", "memories/anchors").split() == [first["path"]]
    assert "A new step." in repo.git("show", f"HEAD:{first['path']}")


def test_refresh_check_says_which_anchors_are_stale_and_refresh_commits_the_change(repo: Repo, cli: Any) -> None:
    _seed(repo, {"src/tool.py": "print('v1')\n"})
    doc = cli("remember", "--file", "docs/deploy.md", "--json", cwd=repo.path).json()
    code = cli("remember", "--file", "src/tool.py", "--json", cwd=repo.path).json()
    ok = cli("refresh", "--check", "--json", cwd=repo.path)
    assert ok.code == 0 and {s["state"] for s in ok.json()} == {"fresh"}

    (repo.path / "src/tool.py").write_text("print('v2')\n")
    stale = cli("refresh", "--check", cwd=repo.path)
    assert stale.code == 1
    assert f"stale     {code['id']}  file src/tool.py" in stale.out and f"fresh     {doc['id']}" in stale.out
    user_blob = repo.git("hash-object", "src/tool.py").strip()
    refreshed = cli("refresh", code["id"], "--json", cwd=repo.path)
    assert refreshed.code == 0, refreshed.err
    fields, text = _note(repo, code)
    assert fields["anchor_blob"] == user_blob and "print('v2')" in text
    assert fields["observed_at"] == _note(repo, code)[0]["observed_at"]
    assert repo.git("log", "-1", "--format=%(trailers:key=Vivary-Op,valueonly)").strip() == "update"
    # the user's own edit to src/tool.py is still only theirs: not staged, not committed
    assert repo.git("status", "--porcelain", "src/tool.py").strip() == "M src/tool.py"
    assert cli("refresh", "--check", cwd=repo.path).code == 0
    # nothing changed: no commit
    head = repo.git("rev-parse", "HEAD").strip()
    again = cli("refresh", code["id"], cwd=repo.path)
    assert again.code == 0 and again.out.startswith("unchanged")
    assert repo.git("rev-parse", "HEAD").strip() == head

    os.remove(repo.path / "src/tool.py")
    gone = cli("refresh", "--check", "--json", cwd=repo.path)
    assert gone.code == 1
    assert {s["id"]: s["state"] for s in gone.json()}[code["id"]] == "missing"
    r = cli("refresh", code["id"], cwd=repo.path)
    assert r.code == 3 and "src/tool.py is gone" in r.err


def test_refresh_stale_refreshes_every_stale_anchor(repo: Repo, cli: Any) -> None:
    _seed(repo, {"a.txt": "one\n", "b.txt": "two\n"})
    a = cli("remember", "--file", "a.txt", "--json", cwd=repo.path).json()
    b = cli("remember", "--file", "b.txt", "--json", cwd=repo.path).json()
    (repo.path / "b.txt").write_text("two, edited\n")
    r = cli("refresh", "--stale", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert [x["id"] for x in r.json()] == [b["id"]]
    assert "two, edited" in repo.git("show", f"HEAD:{b['path']}")
    assert "one" in repo.git("show", f"HEAD:{a['path']}")
    assert cli("refresh", "not-an-anchor", cwd=repo.path).code == 2
    assert cli("refresh", cwd=repo.path).code == 2


def test_a_file_that_became_private_is_reported_and_never_re_read(repo: Repo, cli: Any) -> None:
    _seed(repo, {"notes/plan.md": "# Plan\n\nPublic for now.\n"})
    got = cli("remember", "--file", "notes/plan.md", "--json", cwd=repo.path).json()
    repo.commit("ignore it", {".gitignore": "drafts/\n*.log\nnotes/plan.md\n"})
    (repo.path / "notes/plan.md").write_text(f"# Plan\n\n{CANARY}\n")
    check = cli("refresh", "--check", "--json", cwd=repo.path)
    assert check.code == 1 and check.json()[0]["state"] == "private"
    r = cli("refresh", got["id"], cwd=repo.path)
    assert r.code == 3 and "notes/plan.md is private (.gitignore:3:notes/plan.md)" in r.err
    _assert_nowhere(repo, CANARY, check.out, check.err, r.out, r.err)


@pytest.mark.parametrize(("path", "setup", "reason", "unlisted"), [
    ("drafts/secret-plan.md", {}, ".gitignore:1:drafts/", "drafts/"),
    ("build.log", {}, ".gitignore:2:*.log", "build.log"),
    (".env", {}, "sensitive name: .env*", ".env"),
    ("USER.md", {}, "floor: USER.md", "USER.md"),
    ("memory/today.md", {}, "floor: memory/**", "memory/"),
    ("notes/wip/idea.md", {".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["notes/wip/**"]\n'},
     "config: notes/wip/**", None),
    ("keys/server.pem", {}, "sensitive name: *.pem", None),
])
def test_a_private_file_is_refused_by_name_and_its_text_goes_nowhere(
        repo: Repo, cli: Any, path: str, setup: dict[str, str], reason: str, unlisted: str | None) -> None:
    _seed(repo, setup)  # type: ignore[arg-type]
    repo.write({path: f"# Private\n\n{CANARY} password in here\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("remember", "--file", path, "--json", cwd=repo.path)
    assert r.code == 3
    assert f"{path} is private ({reason})" in r.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    _assert_nowhere(repo, CANARY, r.out, r.err)
    s = cli("remember", "--folder", ".", "--json", cwd=repo.path)  # its folder: listed without it
    assert s.code == 0, s.err
    _assert_nowhere(repo, CANARY, s.out, s.err)
    note = repo.git("show", f"HEAD:{s.json()['path']}")
    assert "\ndocs/\n" in note  # the listing is there...
    if unlisted is not None:
        assert f"\n{unlisted}\n" not in note  # ...without the private entry


def test_a_secret_in_a_files_text_is_refused_naming_the_line_not_the_value(repo: Repo, cli: Any) -> None:
    key = "AKIA" + "Z7QW3XK2M9PL4NB8"
    _seed(repo, {"docs/setup.md": f"# Setup\n\nStep one.\nexport AWS_ACCESS_KEY_ID={key}\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("remember", "--file", "docs/setup.md", cwd=repo.path)
    assert r.code == 3
    assert "the text of docs/setup.md line 4 looks like a credential" in r.err
    assert key not in r.out + r.err
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_a_file_outside_the_repository_is_refused(repo: Repo, cli: Any, tmp_path: Path) -> None:
    _seed(repo)
    outside = tmp_path / "elsewhere.md"
    outside.write_text(f"# Elsewhere\n\n{CANARY}\n")
    for given in (str(outside), "../elsewhere.md"):
        r = cli("remember", "--file", given, cwd=repo.path)
        assert r.code == 3 and "is outside this repository" in r.err
        _assert_nowhere(repo, CANARY, r.out, r.err)


def test_links_fifos_and_missing_files_are_refused_without_a_traceback(repo: Repo, cli: Any, tmp_path: Path) -> None:
    _seed(repo)
    secret = tmp_path / "outside.md"
    secret.write_text(CANARY)
    os.symlink(secret, repo.path / "docs" / "link.txt")  # a .md link would stop every memory command (a note)
    os.symlink(tmp_path, repo.path / "linked-dir")
    os.mkfifo(repo.path / "docs" / "pipe.md")
    cases = [
        (["--file", "docs/link.txt"], 3, "docs/link.txt is a symbolic link"),
        (["--file", "linked-dir/outside.md"], 3, "lies behind linked-dir, which is a symbolic link"),
        (["--folder", "linked-dir"], 3, "linked-dir is a symbolic link"),
        (["--file", "docs/pipe.md"], 2, "docs/pipe.md is not a regular file"),
        (["--file", "docs/nope.md"], 2, "docs/nope.md: no such file"),
        (["--file", "docs"], 2, "use --folder"),
        (["--folder", "docs/deploy.md"], 2, "use --file"),
    ]
    for args, code, said in cases:
        r = cli("remember", *args, cwd=repo.path)
        assert (r.code, said in r.err) == (code, True), (args, r.err)
        assert "Traceback" not in r.err
        _assert_nowhere(repo, CANARY, r.out, r.err)


def test_paths_are_relative_to_the_current_folder_as_in_git(repo: Repo, cli: Any) -> None:
    _seed(repo)
    r = cli("remember", "--file", "deploy.md", "--json", cwd=repo.path / "docs")
    assert r.code == 0, r.err
    assert r.json()["target"] == "docs/deploy.md"


def test_pdf_html_binary_and_non_utf8_files(repo: Repo, cli: Any) -> None:
    html = ("<html><head><title>Release notes</title></head><body><nav>Home | About</nav><article><h1>Release 4.2"
            "</h1><p>" + "The release adds offline sync for every workspace. " * 8 + "</p></article></body></html>")
    _seed(repo, {
        "docs/guide.pdf": make_pdf("Quarterly storage plan", title="Storage plan"),
        "docs/release.html": html,
        "img/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
        "docs/latin.txt": "Caf\xe9 cr\xe8me, na\xefve r\xe9sum\xe9.\n".encode("latin-1"),
    })
    pdf = cli("remember", "--file", "docs/guide.pdf", "--json", cwd=repo.path)
    assert pdf.code == 0, pdf.err
    fields, text = _note(repo, pdf.json())
    assert fields["anchor_format"] == "pdf" and fields["anchor_extractor"] == "pypdf"
    assert fields["title"] == "Storage plan" and "Quarterly storage plan" in text

    page = cli("remember", "--file", "docs/release.html", "--json", cwd=repo.path)
    assert page.code == 0, page.err
    fields, text = _note(repo, page.json())
    assert fields["anchor_extractor"] == "trafilatura" and "offline sync for every workspace" in text
    assert "<article>" not in text

    png = cli("remember", "--file", "img/logo.png", "--json", cwd=repo.path)
    assert png.code == 0, png.err
    fields, text = _note(repo, png.json())
    assert fields["anchor_format"] == "binary" and fields["anchor_blob"] == repo.git("hash-object",
                                                                                    "img/logo.png").strip()
    assert "```" not in text

    latin = cli("remember", "--file", "docs/latin.txt", "--json", cwd=repo.path)
    assert latin.code == 0, latin.err
    assert "Café crème" in _note(repo, latin.json())[1]
    assert cli("check", cwd=repo.path).code == 0


def test_a_long_file_keeps_a_bounded_text(repo: Repo, cli: Any) -> None:
    lines = "".join(f"Line {i} of a very long log of decisions.\n" for i in range(5000))
    _seed(repo, {".vivary/memory.toml": "[memory.sources]\nmax_text = 2000\n", "docs/long.txt": lines})
    r = cli("remember", "--file", "docs/long.txt", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    fields, text = _note(repo, r.json())
    assert fields["anchor_truncated"] is True and fields["anchor_size"] == len(lines)
    assert "Line 10 of" in text and "Line 4999" not in text
    assert "The text was cut at 2,000 characters" in text
    assert len(text) < 4000


def test_without_the_sources_extra_html_and_pdf_name_the_extra(repo: Repo, cli: Any,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(repo, {"docs/page.html": "<html><body><p>Hi</p></body></html>", "docs/a.pdf": make_pdf("x")})
    monkeypatch.setitem(sys.modules, "trafilatura", None)  # an import of it now fails, as when not installed
    monkeypatch.setitem(sys.modules, "pypdf", None)
    for path in ("docs/page.html", "docs/a.pdf"):
        r = cli("remember", "--file", path, cwd=repo.path)
        assert r.code == 2
        assert "pip install 'vivary-git[sources]'" in r.err and "Traceback" not in r.err
    assert cli("remember", "--file", "docs/deploy.md", cwd=repo.path).code == 0  # text needs no extra


def test_a_saved_page_with_a_source_json_sidecar_is_that_url(repo: Repo, cli: Any) -> None:
    html = "<html><head><title>Pricing</title></head><body><article><p>" + "Plans start at ten euros. " * 10 + \
        "</p></article></body></html>"
    _seed(repo, {"clips/pricing.html": html, "clips/pricing.source.json": json.dumps(
        {"url": "https://example.org/pricing", "saved_at": "2026-11-02T10:00:00Z", "title": "Example pricing"})})
    r = cli("remember", "--file", "clips/pricing.html", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["anchor"] == "url" and got["target"] == "https://example.org/pricing"
    fields, text = _note(repo, got)
    assert fields["url"] == fields["final_url"] == "https://example.org/pricing"
    assert fields["fetched_at"] == "2026-11-02T10:00:00Z" and fields["anchor_export"] == "clips/pricing.html"
    assert fields["title"] == "Example pricing" and "Plans start at ten euros." in text
    # the same URL, asked for as a URL: already remembered, nothing fetched (the network is not even allowed)
    again = cli("remember", "--url", "https://example.org/pricing", cwd=repo.path)
    assert again.code == 0 and "already remembered as" in again.err
    # a saved page is refreshed from its file, offline
    (repo.path / "clips/pricing.html").write_text(html.replace("ten", "twelve"))
    assert cli("refresh", "--check", cwd=repo.path).code == 1
    assert cli("refresh", got["id"], cwd=repo.path).code == 0
    assert "twelve euros" in repo.git("show", f"HEAD:{got['path']}")


def test_a_sidecar_that_is_not_json_or_names_no_url_is_a_usage_error(repo: Repo, cli: Any) -> None:
    _seed(repo, {"clips/a.md": "# A\n", "clips/a.source.json": "{not json", "clips/b.md": "# B\n",
                 "clips/b.source.json": '{"href": "https://x.org"}', "clips/c.md": "# C\n",
                 "clips/c.source.json": '{"url": "file:///etc/passwd"}'})
    for name, said in (("a", "not a JSON object"), ("b", 'needs a "url" string'), ("c", "only http and https")):
        r = cli("remember", "--file", f"clips/{name}.md", cwd=repo.path)
        assert r.code == 2 and said in r.err, r.err


def test_anchors_in_a_tropo_workspace_have_slug_ids_and_keep_check_clean(repo: Repo, cli: Any) -> None:
    _seed(repo, {"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'
                               '[types.decision.optional]\nrelated = "ref-list"\n',
                 "decisions/use-git.md": "# Use Git\n"})
    r = cli("remember", "--file", "docs/deploy.md", "--link", "related:use-git", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["id"] == "deploy-runbook"
    graph = cli("graph", "--json", cwd=repo.path).json()
    assert {"from": "deploy-runbook", "field": "related", "to": "use-git", "broken": False} in graph["edges"]
    assert cli("check", cwd=repo.path).code == 0


# --- folders -------------------------------------------------------------------------------------


def test_a_folder_anchor_summarises_its_top_level_only(repo: Repo, cli: Any) -> None:
    files: dict[str, str | bytes] = {f"vendor/lib/src/mod{i}.py": "# nested-marker\n" for i in range(3)}
    files.update({"vendor/lib/pyproject.toml": "[project]\nname = 'lib'\n", "vendor/lib/README.md": "# Lib\n",
                  "vendor/lib/setup.cfg": ""})
    _seed(repo, files)
    repo.write({"vendor/lib/.env.local": f"TOKEN={CANARY}\n", "vendor/lib/notes.log": f"{CANARY}\n"})
    r = cli("remember", "--folder", "vendor/lib", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["kind"] == "source_collection" and got["anchor"] == "folder" and got["target"] == "vendor/lib"
    fields, text = _note(repo, got)
    assert fields["anchor_class"] == "repository" and fields["anchor_entries"] == 4
    assert fields["anchor_markers"] == ["README.md", "pyproject.toml"]
    assert "```text\nREADME.md\npyproject.toml\nsetup.cfg\nsrc/\n```" in text
    assert "2 private entries are not listed" in text
    assert ".env.local" not in text and "notes.log" not in text  # private: counted, never named
    assert "mod0.py" not in text and "nested-marker" not in text  # the top level only, never a copy
    _assert_nowhere(repo, CANARY, r.out, r.err)

    assert cli("refresh", "--check", cwd=repo.path).code == 0
    (repo.path / "vendor/lib/src/mod9.py").write_text("x = 1\n")  # below the top: not part of the summary
    assert cli("refresh", "--check", cwd=repo.path).code == 0
    (repo.path / "vendor/lib/CHANGES.md").write_text("# Changes\n")
    stale = cli("refresh", "--check", cwd=repo.path)
    assert stale.code == 1 and "the top level of vendor/lib changed" in stale.out
    assert cli("refresh", got["id"], cwd=repo.path).code == 0
    assert "CHANGES.md" in repo.git("show", f"HEAD:{got['path']}")
    assert cli("check", cwd=repo.path).code == 0


@pytest.mark.parametrize(("files", "klass"), [
    ({"a.png": b"\x89PNG", "b.jpg": b"\xff\xd8", "c.mp4": b"\x00", "notes.txt": "x"}, "media"),
    ({"a.pdf": b"%PDF-1.4", "b.docx": b"PK", "c.md": "# C\n", "d.txt": "d"}, "documents"),
    ({"AGENTS.md": "# Agents\n", "tropo.toml": "version = 1\n", "notes.md": "# N\n"}, "workspace bundle"),
    ({"a.py": "x", "b.png": b"\x89PNG", "c.zip": b"PK"}, "mixed"),
])
def test_a_folder_is_classed_by_its_markers_and_file_types(repo: Repo, cli: Any, files: dict[str, Any],
                                                           klass: str) -> None:
    _seed(repo, {f"box/{k}": v for k, v in files.items()})
    r = cli("remember", "--folder", "box", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert _note(repo, r.json())[0]["anchor_class"] == klass


def test_a_private_marker_is_counted_not_named(repo: Repo, cli: Any) -> None:
    """`.vivary/` is on the privacy floor: a folder's summary named it among its markers, where every other
    private entry is counted and never named (docs/remember.md)."""
    _seed(repo, {"box/tropo.toml": "version = 1\n", "box/notes.md": "# N\n", "box/.vivary/graph.toml": ""})
    r = cli("remember", "--folder", "box", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    fields, text = _note(repo, r.json())
    assert fields["anchor_markers"] == ["tropo.toml"] and fields["anchor_class"] == "workspace bundle"
    assert ".vivary" not in text and "1 private entry is not listed" in text, text


def test_a_nested_repository_folder_is_a_repository_and_its_files_are_not_anchored_one_by_one(
        repo: Repo, cli: Any) -> None:
    _seed(repo)
    sub = repo.path / "ext" / "tool"
    sub.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(sub)], check=True)
    (sub / "main.go").write_text("package main\n")
    (sub / "go.mod").write_text("module tool\n")
    r = cli("remember", "--folder", "ext/tool", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    fields, _text = _note(repo, r.json())
    assert fields["anchor_class"] == "repository" and ".git" in fields["anchor_markers"]
    f = cli("remember", "--file", "ext/tool/main.go", cwd=repo.path)
    assert f.code == 3 and "inside the nested repository ext/tool" in f.err


def test_a_big_folder_lists_a_bounded_sample(repo: Repo, cli: Any) -> None:
    _seed(repo, {f"data/f{i:03}.csv": "a,b\n" for i in range(120)})
    r = cli("remember", "--folder", "data", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    fields, text = _note(repo, r.json())
    assert fields["anchor_entries"] == 120
    assert "f039.csv\n… and 80 more\n```" in text and "f040.csv" not in text


@pytest.mark.parametrize(("folder", "reason"), [
    ("drafts", ".gitignore:1:drafts/"),
    ("memory", "floor: memory/**"),
    ("secrets", "sensitive name: secrets"),
])
def test_a_private_folder_is_refused_by_name(repo: Repo, cli: Any, folder: str, reason: str) -> None:
    _seed(repo)
    repo.write({f"{folder}/a-{CANARY}.md": f"{CANARY}\n"})
    r = cli("remember", "--folder", folder, cwd=repo.path)
    assert r.code == 3 and f"{folder} is private ({reason})" in r.err, r.err
    _assert_nowhere(repo, CANARY, r.out, r.err)


def test_sources_config_is_checked(repo: Repo, cli: Any) -> None:
    _seed(repo, {".vivary/memory.toml": "[memory.sources]\nmax_text = 5\n"})
    r = cli("remember", "--file", "docs/deploy.md", cwd=repo.path)
    assert r.code == 2 and "memory.sources.max_text = 5` must be between 1,000 and 1,000,000" in r.err
    repo.commit("typo", {".vivary/memory.toml": "[memory.sources]\nallow_netwrok = true\n"})
    r = cli("remember", "--file", "docs/deploy.md", cwd=repo.path)
    assert r.code == 2 and "unknown key `allow_netwrok`" in r.err


def test_mcp_add_remembers_a_file_and_search_finds_it_at_once(repo: Repo) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    service = MemoryService(repo.path / "docs")  # paths are from the repository top, wherever it runs
    got = service.anchor(file="docs/deploy.md")
    assert got.changed and got.id == "memories/anchors/deploy-runbook"
    hits = service.search("blue green rollback", top_k=3).results
    assert got.id in [h.id for h in hits]
    with pytest.raises(Exception, match=r"drafts/x\.md is private"):
        repo.write({"drafts/x.md": CANARY})
        service.anchor(file="drafts/x.md")
    with pytest.raises(Exception, match="give one of file, folder or url"):
        service.anchor()
    service.close()


def test_the_mcp_add_tool_takes_a_file_or_folder(repo: Repo) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import asyncio

    from mcp import Client

    from vivary_git.mcp.server import build_server
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    repo.write({"drafts/plan.md": f"# Plan\n\n{CANARY}\n"})
    server = build_server(MemoryService(repo.path))

    async def session() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            doc = await client.call_tool("add", {"file": "docs/deploy.md", "text": "How we ship releases"})
            folder = await client.call_tool("add", {"folder": "docs", "tags": ["docs"]})
            private = await client.call_tool("add", {"file": "drafts/plan.md"})
            return doc, folder, private

    doc, folder, private = asyncio.run(session())
    assert not doc.is_error and doc.structured_content["anchor"] == "file"
    assert _note(repo, doc.structured_content)[0]["description"] == "How we ship releases"
    assert not folder.is_error and folder.structured_content["kind"] == "source_collection"
    assert private.is_error
    said = " ".join(getattr(c, "text", "") for c in private.content)
    # To an agent a rule of the user's is named by its place (its pattern names private things); at the owner's
    # terminal (the tests above) in full.
    assert "drafts/plan.md is private (.gitignore:1); a private file is never remembered" in said
    assert "drafts/)" not in said
    _assert_nowhere(repo, CANARY, said, json.dumps(doc.structured_content), json.dumps(folder.structured_content))


def test_private_text_reaches_no_commit_cache_ref_memory_index_or_recall(repo: Repo, cli: Any) -> None:
    """End to end: anchors made and refused, then the tree recorded in refs/vivary/cache and indexed by
    the local semantic memory; the private files' canary is in none of it."""
    import importlib.util

    from vivary_git.memory.local.embed import embedder_status

    if embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None:
        pytest.skip("needs the [embed] extra")
    word = "zqxanchorcanary"  # one token, so a BM25 or packet copy of it would be found
    _seed(repo, {".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n'})
    repo.write({"drafts/plan.md": f"# Plan\n\n{word} rotate keys\n", ".env": f"TOKEN={word}\n",
                "USER.md": f"# Me\n\n{word}\n", "build.log": f"{word}\n"})
    said = []
    for args in (("--file", "drafts/plan.md"), ("--file", ".env"), ("--file", "USER.md"), ("--file", "build.log"),
                 ("--folder", "drafts")):
        r = cli("remember", *args, cwd=repo.path)
        assert r.code == 3, (args, r.err)
        said += [r.out, r.err]
    for args in (("--folder", "."), ("--file", "docs/deploy.md")):
        r = cli("remember", *args, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        said += [r.out, r.err]
    assert cli("graph", "--rev", "HEAD", "--json", cwd=repo.path).code == 0
    assert repo.git("rev-parse", "--verify", "-q", "refs/vivary/cache").strip()  # the shared cache was written
    r = cli("index", "--yes", cwd=repo.path)
    assert r.code == 0, r.err
    found = cli("recall", "blue green deploy rollback", "--json", cwd=repo.path)
    assert found.code == 0, found.err
    assert "memories/anchors/deploy-runbook" in [h["node_id"] for h in found.json()]  # anchors are indexed
    hits = cli("recall", f"{word} rotate keys", "--json", cwd=repo.path)
    assert hits.code == 0, hits.err
    said += [r.out, r.err, hits.out, hits.err]
    _assert_nowhere(repo, word, *said)


def test_odd_names_are_refused_as_targets_and_escaped_in_a_folder_listing(repo: Repo, cli: Any) -> None:
    _seed(repo)
    odd = os.fsencode(str(repo.path / "odd")) + b"/caf\xe9.txt"
    os.makedirs(repo.path / "odd")
    with open(odd, "wb") as fh:
        fh.write(b"latin name\n")
    (repo.path / "odd" / "two\nlines.txt").write_text("x\n")
    head = repo.git("rev-parse", "HEAD").strip()
    for given in (os.fsdecode(b"odd/caf\xe9.txt"), "odd/two\nlines.txt"):
        r = cli("remember", "--file", given, cwd=repo.path)
        assert r.code == 2 and "is not plain UTF-8 text" in r.err and "Traceback" not in r.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    r = cli("remember", "--folder", "odd", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    text = _note(repo, r.json())[1]
    assert "```text\ncaf\\xe9.txt\n```" in text  # a byte that is not UTF-8, escaped as Git would
    assert "lines.txt" not in text and "1 private entry is not listed" in text  # a line break: held back
