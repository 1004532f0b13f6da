"""`git vivary check` through the CLI, on real Git repositories."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from conftest import TROPO, Repo

GOOD_DECISION = "---\nstatus: accepted\ndate: 2026-11-01\nrelated: [core]\n---\n# Use Git trees\n\nBody.\n"
GOOD_MODULE = "---\nstatus: active\n---\n# Core\n"


def base_files(**extra: str | bytes) -> dict[str, str | bytes]:
    files: dict[str, str | bytes] = {
        "tropo.toml": TROPO,
        "decisions/use-git.md": GOOD_DECISION,
        "modules/core.md": GOOD_MODULE,
    }
    files.update(extra)
    return files


def test_clean_workspace_exits_zero(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files())
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json() == {"checked": 2, "clean": 2, "errors": 0, "warnings": 0, "findings": []}


def test_every_finding_names_path_and_key_line(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{
        "decisions/bad.md": "---\nstatus: maybe\ndate: 2026-13-45\nrelated: [core, nowhere]\nowner: Not A Slug\n"
                            "link: ftp://x\nextra: 1\n---\n# Bad\n",
        "decisions/missing.md": "---\nstatus:\n---\n# Missing\n",
    }))
    r = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path)
    assert r.code == 1
    assert r.out.splitlines()[:9] == [
        "decisions/bad.md:2: error E103: field 'status': expected one of [proposed, accepted], got 'maybe'",
        "decisions/bad.md:3: error E103: field 'date': expected a real calendar date (YYYY-MM-DD), got '2026-13-45'",
        "decisions/bad.md:4: warning W220: field 'related': ref 'nowhere' matches no document id",
        "decisions/bad.md:5: error E103: field 'owner': expected a ref (lowercase a-z 0-9 . _ -), got 'Not A Slug'",
        "decisions/bad.md:5: warning W220: field 'owner': ref 'Not A Slug' matches no document id",
        "decisions/bad.md:6: error E103: field 'link': expected a URL (http/https), got 'ftp://x'",
        "decisions/bad.md:7: warning W202: unknown field 'extra' for type 'decision'",
        "decisions/missing.md:1: error E101: missing required field 'date' for type 'decision'",
        "decisions/missing.md:2: error E102: required field 'status' is empty",
    ]


def test_strict_default_reports_warnings_as_errors_keeping_codes(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{"modules/x.md": "---\nstatus: ok\ndepends: [ghost]\n---\n"}))
    strict = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert [(f["level"], f["code"]) for f in strict["findings"]] == [("error", "W220")]
    assert strict["errors"] == 1 and strict["warnings"] == 0
    lenient = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path).json()
    assert [(f["level"], f["code"]) for f in lenient["findings"]] == [("warning", "W220")]


def test_malformed_frontmatter_is_e001_with_the_line(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{
        "notes/inline.md": "---\ntitle: x\ntags: [a\nother: 1\n---\n",
        "notes/dup.md": "---\na: 1\nb: 2\na: 3\n---\n",
        "notes/tab.md": "---\na:\n\t- x\n---\n",
        "notes/list.md": "---\n- a\n- b\n---\n",
        "notes/open.md": "---\na: 1\n",
    }))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1
    for expected in ("notes/inline.md:3: error E001",
                     "notes/dup.md:4: error E001: frontmatter is not valid YAML: duplicate key 'a'",
                     "notes/tab.md:3: error E001", "notes/list.md:2: error E001", "notes/open.md:1: error E001"):
        assert expected in r.out, (expected, r.out)
    assert "Traceback" not in r.err


def test_an_unclosed_quote_is_e001_where_it_opened(repo: Repo, cli: Any) -> None:
    """A quoted value may run over lines, so YAML stops only at the end of the frontmatter; the line to fix
    is the one where the quote opened, and the message says to close it."""
    repo.commit(files=base_files(**{
        "notes/dq.md": '---\ntitle: x\nsummary: "Draft of the plan\ntags: [a]\nstatus: open\n---\n# Dq\n',
        "notes/sq.md": "---\nsummary: 'it''s\n  still open\n---\n",
        "notes/ok.md": "---\nsummary: \"runs over\n  two lines\"\n---\n",
    }))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1
    assert ("notes/dq.md:3: error E001: frontmatter is not valid YAML: the quoted value opened by `\"` in column 10 "
            "is never closed (found unexpected end of stream): add the closing `\"`") in r.out, r.out
    assert "notes/sq.md:2: error E001: frontmatter is not valid YAML: the quoted value opened by `'` in column 10" \
        in r.out, r.out
    assert "notes/ok.md" not in r.out, r.out


def test_line_separators_in_frontmatter_move_no_finding(repo: Repo, cli: Any) -> None:
    """U+2028 (LS) is no line break for GitHub, editors or YAML 1.2 (Obsidian): a finding after one keeps the
    line `grep -n` gives, and a comment holding one is still a comment."""
    repo.commit(files=base_files(**{
        "modules/m.md": '---\nstatus: "act\u2028ive"\ndepends: [ghost]\n---\n',
        "modules/c.md": "---\nstatus: active # c\u2028omment\ndepends: [ghost2]\n---\n",
    }))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert "modules/m.md:3: error W220: field 'depends': ref 'ghost' matches no document id" in r.out, r.out
    assert "modules/c.md:3: error W220: field 'depends': ref 'ghost2' matches no document id" in r.out, r.out
    assert "E001" not in r.out, r.out


def test_a_control_character_in_frontmatter_is_one_plain_line(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{"modules/k.md": "---\nstatus: team # c\x0comment\ndepends: [x]\n---\n"}))
    for fmt in ("text", "github"):
        r = cli("check", "--rev", "HEAD", cwd=repo.path) if fmt == "text" else \
            cli("ci", "--head", "HEAD", "--format", "github", cwd=repo.path)
        line = next(x for x in r.out.splitlines() if "modules/k.md" in x)
        assert line.endswith("E001::frontmatter is not valid YAML: control character U+000C (form feed) in "
                             "column 17 is not allowed in YAML; remove it" if fmt == "github" else
                             "modules/k.md:2: error E001: frontmatter is not valid YAML: control character U+000C "
                             "(form feed) in column 17 is not allowed in YAML; remove it"), line
        assert fmt == "text" or "file=modules/k.md,line=2," in line, line


def test_frontmatter_not_recognised_or_conflicted_is_e001_not_e101(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{
        "modules/cm.md": "---\nstatus: a\n<<<<<<< HEAD\ndepends: [a]\n=======\ndepends: [b]\n>>>>>>> branch\n---\n",
        "modules/cr.md": b"---\rstatus: a\rdepends: [core]\r---\rbody\r",
        "modules/bl.md": "\n\n---\nstatus: a\n---\n",
    }))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert "E101" not in r.out and "modules/cr.md" not in r.out, r.out  # old Mac line ends: read as line ends
    for expected in ("modules/cm.md:3: error E001: merge conflict markers left in the frontmatter (line 3): resolve",
                     "modules/bl.md:1: error E001: frontmatter not recognised: its opening `---` is on line 3"):
        assert expected in r.out, (expected, r.out)


def test_unreadable_content_is_e000_never_a_traceback(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{
        "notes/latin1.md": b"---\ntitle: caf\xe9\n---\n",
        "notes/binary.md": b"\x89PNG\r\n\x1a\n\x00\x00\x00",
        "notes/huge.md": b"x" * (8 * 1024 * 1024 + 1),
    }))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 1
    assert "notes/latin1.md:2: error E000: not valid UTF-8" in r.out
    assert "notes/binary.md:1: error E000: file looks binary" in r.out
    assert "notes/huge.md:1: error E000: file is 8,388,609 bytes" in r.out


def test_duplicate_ids_are_reported(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{"notes/core.md": "# Another core\n", "notes/Core!.md": "# And another\n"}))
    r = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path)
    assert r.code == 1
    assert "duplicate document id 'core': modules/core.md has it already" in r.out
    assert r.out.count("E130") == 2, r.out


def test_symlinked_note_is_reported_not_followed(repo: Repo, cli: Any) -> None:
    repo.write(base_files())
    (repo.path / "notes").mkdir()
    (repo.path / "notes" / "link.md").symlink_to("../modules/core.md")
    repo.commit()
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert "notes/link.md:1: error E000: is a symbolic link" in r.out


def test_a_link_to_a_symlinked_note_is_not_also_broken(repo: Repo, cli: Any) -> None:
    """The symbolic link is E000, once. The file is there, so a note linking it is not "matches no note"
    too (Obsidian opens it): it is a file, like a template, not a node, in a plain folder as in a tree."""
    repo.write({".obsidian/app.json": "{}\n", "Target.md": "# Target\n",
                "Home.md": "[[Sym]] [x](Sym.md) [[Missing]]\n"})
    (repo.path / "Sym.md").symlink_to("Target.md")
    repo.commit()
    for where in (["--rev", "HEAD"], []):
        r = cli("check", *where, cwd=repo.path)
        assert r.code == 1
        assert [line.split(": ")[1] for line in r.out.splitlines() if ": error " in line] == \
            ["error W221", "error E000"], r.out  # [[Missing]] only
        assert "'Missing'" in r.out and "'Sym'" not in r.out
    git_dir = repo.path / ".git"
    git_dir.rename(repo.path.parent / "hidden-git")  # a plain folder: the walk, not a tree
    try:
        r = cli("check", cwd=repo.path)
        assert r.code == 1 and "'Sym'" not in r.out and "Sym.md:1: error E000" in r.out, r.out
    finally:
        (repo.path.parent / "hidden-git").rename(git_dir)


def test_a_symlink_with_a_huge_target_is_reported_in_one_short_line(repo: Repo, cli: Any, tmp_path: Path) -> None:
    repo.commit(files=base_files())
    target = tmp_path / "target"  # Git stores a link's target of any length; no file system resolves this one
    target.write_text("../" + "very-long-folder-name/" * 20_000 + "core.md")
    oid = repo.git("hash-object", "-w", "--", str(target)).strip()
    repo.git("update-index", "--add", "--cacheinfo", f"120000,{oid},notes/far.md")
    repo.git("commit", "-qm", "a symlink no file system can follow")
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    (line,) = [x for x in r.out.splitlines() if x.startswith("notes/far.md:")]
    assert line.startswith("notes/far.md:1: error E000: is a symbolic link (to a target of 440,010 bytes); ")
    assert len(line) < 200, line[:500]


def test_bad_config_exits_2_with_file_and_fix(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{"tropo.toml": TROPO.replace('status = "string"', 'status = "strng"')}))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2
    assert "tropo.toml" in r.err and "unknown field spec 'strng'" in r.err
    repo.commit(files={"tropo.toml": "version = 1\n[base\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and "invalid TOML" in r.err and "line 2" in r.err


def test_usage_errors_exit_2(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files())
    r = cli("check", "--rev", "no-such-branch", cwd=repo.path)
    assert r.code == 2 and "no such revision" in r.err
    r = cli("check", "--bogus", cwd=repo.path)
    assert r.code == 2


def test_a_revision_that_names_no_tree_is_said_in_plain_words(repo: Repo, cli: Any) -> None:
    """A file's blob (`HEAD:notes/x.md`, or a tag of one), an empty name or a range is not a tree: each is exit 2
    saying what was named and the fix, not libgit2's "can not be successfully peeled into a tree
    (git_object_t=2)" or "failed to parse revision specifier"."""
    repo.commit(files=base_files())
    blob = repo.git("rev-parse", "HEAD:tropo.toml").strip()
    repo.git("tag", "config-blob", blob)
    said = f"names a file's content (blob {blob[:12]}), not a commit or tree; name a commit, branch, tag or tree"
    for args in (["check", "--rev", "HEAD:tropo.toml"], ["check", "--rev", "config-blob"],
                 ["graph", "--rev", "config-blob"], ["blast", "--base", "HEAD", "--head", "HEAD:tropo.toml"],
                 ["ci", "--base", "config-blob"]):
        r = cli(*args, cwd=repo.path)
        option = "--head" if "--head" in args else args[-2]
        assert r.code == 2 and f"{option} {args[-1]}: {said}" in r.err, (args, r.err)
        assert "git_object" not in r.err and "peeled" not in r.err, r.err
    r = cli("check", "--rev", "", cwd=repo.path)
    assert r.code == 2 and "--rev '': an empty revision; name a commit" in r.err, r.err
    r = cli("check", "--rev", "HEAD..HEAD", cwd=repo.path)
    assert r.code == 2 and "--rev HEAD..HEAD: not one revision (a malformed name, or a range such as A..B)" in r.err
    assert "failed to parse" not in r.err


def test_same_tree_gives_byte_identical_output(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{"modules/x.md": "---\nstatus: ok\ndepends: [ghost]\n---\n"}))
    first = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).out
    second = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).out  # from the graph cache
    third = cli("check", "--rev", "HEAD", "--json", "--no-cache", cwd=repo.path).out
    staged = cli("check", "--staged", "--json", cwd=repo.path).out
    work = cli("check", "--json", cwd=repo.path).out
    assert first == second == third == staged == work


def test_nested_overlay_tightens_rules_for_its_folder(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{
        "team/tropo.toml": 'exclude = ["drafts"]\n[base]\nallow_untyped = false\n'
                           '[types.decision]\nrequired = { reviewer = "string" }\n',
        "team/decisions/d.md": "---\nstatus: accepted\ndate: 2026-11-02\n---\n# D\n",
        "team/loose.md": "# Loose\n",
        "team/drafts/skip.md": "---\n- not even a mapping\n---\n",
        "drafts/kept.md": "# Kept: the overlay's bare exclude applies only under team/\n",
    }))
    r = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path)
    assert "team/decisions/d.md:1: error E101: missing required field 'reviewer' for type 'decision'" in r.out
    assert "team/loose.md:1: warning W201" in r.out
    assert "skip.md" not in r.out
    assert "decisions/use-git.md" not in r.out  # the root's own decisions keep the root's rules
    g = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()
    assert "kept" in [n["id"] for n in g["nodes"]]


def test_loosening_overlay_is_e120_exit_2(repo: Repo, cli: Any) -> None:
    repo.commit(files=base_files(**{"team/tropo.toml": '[types.decision]\noptional = { status = "string" }\n'}))
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2
    assert r.err.startswith("git vivary check: E120: team/tropo.toml:2: type 'decision' field 'status'")
    assert "Traceback" not in r.err


DATETIMES_OK = [
    "2026-02-28T23:59:59", "2024-02-29T00:00", "2026-01-02T10:00:00Z", "2026-01-02 10:00+02:00",
    "2026-01-02T10:00:00.123-0530", "2026-01-02t10:00z", "2026-01-02T10:00+23:59", "2026-01-02T10:00-12:00",
]
DATETIMES_BAD = [
    "2026-03-01T25:00",  # a real date, an hour that is not on the clock
    "2026-03-01T24:00", "2026-03-01T10:60", "2026-03-01T10:00:60", "2026-03-01T10:00+24:00",
    "2026-03-01T10:00+05:60", "2026-03-01T10:00-9960", "2026-02-30T10:00", "2026-13-01T10:00", "2025-02-29T10:00",
]


def test_datetimes_must_be_real_calendar_and_clock_values(repo: Repo, cli: Any) -> None:
    tropo = 'version = 1\n[types.event]\nfolder = "events"\nrequired = { at = "datetime" }\n'
    notes = {f"events/e{i:02d}.md": f"---\nat: '{v}'\n---\n" for i, v in enumerate(DATETIMES_OK + DATETIMES_BAD)}
    repo.commit(files={"tropo.toml": tropo, **notes})
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    got = [(f["path"], f["line"], f["code"], f["message"]) for f in r.json()["findings"]]
    want = [(f"events/e{i:02d}.md", 2, "E103", f"field 'at': expected a real ISO-8601 datetime, got {v!r}")
            for i, v in enumerate(DATETIMES_OK + DATETIMES_BAD) if v in DATETIMES_BAD]
    assert got == want
    assert r.code == 1


def test_each_folders_rules_check_the_same_values_whichever_note_comes_first(repo: Repo, cli: Any) -> None:
    """A field's checks are worked out once per config and type (check.py): the same values under a nested
    overlay's stricter rules and the root's, in lists and alone, repeated, each get their own folder's answer."""
    repo.commit(files=base_files(**{
        "team/tropo.toml": '[types.decision]\nrequired = { reviewer = "ref" }\n',
        "decisions/a.md": "---\nstatus: accepted\ndate: 2026-11-01\nreviewer: Not A Slug\n"
                          "related: [core, Bad Ref, 1]\ntags: [x, [y]]\n---\n",
        "decisions/b.md": "---\nstatus: accepted\ndate: 2026-11-01\nreviewer: Not A Slug\nrelated: [core, core]\n---\n",
        "team/decisions/c.md": "---\nstatus: maybe\ndate: 2026-11-01\nreviewer: Not A Slug\n"
                               "related: [core, Bad Ref]\n---\n",
        "team/decisions/d.md": "---\nstatus: accepted\ndate: 2026-02-30\nreviewer: core\nrelated: core\n---\n",
        "zz/e.md": "---\nreviewer: Not A Slug\ntags: x\n---\n",
    }))
    r = cli("check", "--rev", "HEAD", "--lenient", cwd=repo.path)
    assert r.out.splitlines()[:-2] == [
        "decisions/a.md:4: warning W202: unknown field 'reviewer' for type 'decision'",
        "decisions/a.md:5: error E103: field 'related': expected a list of refs (slugs), got item 'Bad Ref'",
        "decisions/a.md:5: warning W220: field 'related': ref 'Bad Ref' matches no document id",
        "decisions/a.md:6: error E103: field 'tags': expected a flat list",
        "decisions/b.md:4: warning W202: unknown field 'reviewer' for type 'decision'",
        "team/decisions/c.md:2: error E103: field 'status': expected one of [proposed, accepted], got 'maybe'",
        "team/decisions/c.md:4: error E103: field 'reviewer': expected a ref (lowercase a-z 0-9 . _ -), "
        "got 'Not A Slug'",
        "team/decisions/c.md:4: warning W220: field 'reviewer': ref 'Not A Slug' matches no document id",
        "team/decisions/c.md:5: error E103: field 'related': expected a list of refs (slugs), got item 'Bad Ref'",
        "team/decisions/c.md:5: warning W220: field 'related': ref 'Bad Ref' matches no document id",
        "team/decisions/d.md:3: error E103: field 'date': expected a real calendar date (YYYY-MM-DD), got '2026-02-30'",
        "team/decisions/d.md:5: error E103: field 'related': expected a list, got str 'core'",
        "zz/e.md:3: error E103: field 'tags': expected a list, got str 'x'",
    ]


def test_a_link_to_a_note_git_ignores_says_so_and_names_the_rule(repo: Repo, cli: Any) -> None:
    """Obsidian does not read .gitignore, so it shows `[[Idea]]` resolved; the graph (what Git keeps) has no
    such note. The W221 says the file is there and which rule ignores it, never a byte of it; a private file
    (the floor) is not offered to be un-ignored; a link to nothing on disk keeps its plain message."""
    repo.write({".obsidian/app.json": "{}\n", ".gitignore": "# drafts stay local\ndrafts/\nUSER.md\n",
                "Home.md": "[[Idea]] [x](drafts/plan.md) ![[drafts/sketch.png]] [[USER]] [[Missing]]\n"})
    repo.commit()
    repo.write({"drafts/Idea.md": "# Idea\nsecret-canary-1\n", "drafts/plan.md": "secret-canary-2\n",
                "drafts/sketch.png": b"\x89PNG secret-canary-3", "USER.md": "secret-canary-4\n"})
    for where in ([], ["--staged"]):
        r = cli("check", *where, cwd=repo.path)
        assert r.code == 1, r.out
        lines = {line.split("looked for ", 1)[1].split("'")[1]: line for line in r.out.splitlines()
                 if "looked for" in line}
        assert set(lines) == {"Idea", "drafts/plan.md", "drafts/sketch.png", "USER", "Missing"}, r.out
        assert "W221" in lines["Idea"] and \
            "'drafts/Idea.md' is on disk, but Git ignores it (.gitignore:2:drafts/)" in lines["Idea"], r.out
        assert "un-ignore it" in lines["Idea"]
        assert "'drafts/plan.md' is on disk, but Git ignores it (.gitignore:2:drafts/)" in lines["drafts/plan.md"]
        assert "W223" in lines["drafts/sketch.png"] and "Git ignores it" in lines["drafts/sketch.png"]
        assert "Git ignores it (.gitignore:3:USER.md) and it is private (floor: USER.md)" in lines["USER"]
        assert "un-ignore" not in lines["USER"]
        assert lines["Missing"].endswith("(looked for 'Missing' from Home.md)")
        assert "canary" not in r.out + r.err
    r = cli("check", "--json", cwd=repo.path)
    assert any("Git ignores it" in f["message"] for f in r.json()["findings"])
    r = cli("check", "--rev", "HEAD", cwd=repo.path)  # a commit's tree: the disk is not its neighbour
    assert "Git ignores" not in r.out


def test_the_ignored_link_hint_holds_for_notes_named_like_its_message(repo: Repo, cli: Any) -> None:
    """The hint was found by reading the finding's message back (`looked for '…' from …`): a note whose name
    holds `' from ` or a whole `(looked for '…' from …)` was read as another target and source, and its
    broken link to an ignored note lost the hint. The link is now found again in the note itself."""
    names = ["notes/Quote' from Dad.md", "notes/x (looked for 'y' from z).md", "Home.md"]
    repo.write({".obsidian/app.json": "{}\n", ".gitignore": "drafts/\n", **{n: "# N\n\n[[Idea]]\n" for n in names}})
    repo.commit()
    repo.write({"drafts/Idea.md": "# Idea\n"})
    for where in ([], ["--staged"]):
        r = cli("check", "--lenient", *where, cwd=repo.path)
        assert r.code == 0, r.err
        lines = [line for line in r.out.splitlines() if "W221" in line]
        assert sorted(line.split(":3: ", 1)[0] for line in lines) == sorted(names), r.out
        for line in lines:
            assert line.endswith("; 'drafts/Idea.md' is on disk, but Git ignores it (.gitignore:1:drafts/), so it is "
                                 "in no tree and no graph (an editor that does not read .gitignore shows the link "
                                 "resolved): un-ignore it, or link another note"), line


def test_the_ignored_link_hint_reads_a_link_as_the_graph_does(repo: Repo, cli: Any) -> None:
    """In a Logseq graph a page with `title:: Foo` is the page Foo, not `bar`: the graph finds `[[bar]]` broken.
    The hint looked the link up again with a resolver of its own, without page names, which took `[[bar]]` to
    pages/bar.md, so the ignored drafts/bar.md went unsaid. It asks the graph's resolver now: in a first check,
    a warm one (its findings cached) and a staged one."""
    repo.write({"logseq/config.edn": "{}\n", ".vivary/graph.toml": "[links]\nunresolved = true\n",
                ".gitignore": "drafts/\n", "pages/bar.md": "title:: Foo\n\n- the page called Foo\n",
                "journals/2024_01_01.md": "- see [[bar]] and [[Foo]]\n"})
    repo.commit()
    repo.write({"drafts/bar.md": "- a draft\n"})
    for where in ([], [], ["--staged"]):
        r = cli("check", "--lenient", *where, cwd=repo.path)
        assert r.code == 0, r.err
        assert r.out.splitlines()[0] == (
            "journals/2024_01_01.md:1: warning W221: wikilink [[bar]] matches no note (looked for 'bar' from "
            "journals/2024_01_01.md); 'drafts/bar.md' is on disk, but Git ignores it (.gitignore:1:drafts/), so it "
            "is in no tree and no graph (an editor that does not read .gitignore shows the link resolved): "
            "un-ignore it, or link another note"), r.out
    edges = cli("graph", "--json", cwd=repo.path).json()["edges"]
    assert {(e["to"], e["broken"]) for e in edges} == {("bar", True), ("pages/bar", False)}


def test_a_workspace_with_private_paths_keeps_the_ignored_link_hint(repo: Repo, cli: Any) -> None:
    """Any `private_paths` in `.vivary/memory.toml` turned the hint off: privacy was decided as in a folder
    outside Git, which refuses `private_paths` (only Git matches them exactly), and the refusal hid the hint."""
    repo.write({".gitignore": "ign.md\ndrafts/\n", "Home.md": "[[ign]] [[drafts/plan]]\n",
                ".vivary/memory.toml": '[memory]\nenabled = false\n[memory.privacy]\nprivate_paths = ["drafts/**"]\n'})
    repo.commit()
    repo.write({"ign.md": "# I\n", "drafts/plan.md": "secret-canary\n"})
    r = cli("check", cwd=repo.path)
    lines = {line.split("looked for ", 1)[1].split("'")[1]: line for line in r.out.splitlines() if "looked for" in line}
    assert "'ign.md' is on disk, but Git ignores it (.gitignore:1:ign.md)" in lines["ign"], r.out
    assert "un-ignore it" in lines["ign"]
    assert "and it is private (config: drafts/**)" in lines["drafts/plan"], r.out
    assert "un-ignore" not in lines["drafts/plan"] and "canary" not in r.out + r.err


def test_a_ref_to_a_note_git_ignores_says_so(repo: Repo, cli: Any) -> None:
    """In a tropo.toml workspace the W220 of a ref (and the W221 of a wikilink) to an ignored note says so too."""
    repo.write(base_files(**{".gitignore": "private/\n", "notes/a.md": "# A\n[[plans]]\n",
                             "decisions/use-git.md": GOOD_DECISION.replace("[core]", "[core, plans]")}))
    repo.commit()
    repo.write({"private/plans.md": "# Plans\n"})
    r = cli("check", cwd=repo.path)
    found = [line for line in r.out.splitlines() if "plans" in line]
    assert len(found) == 2 and all("'private/plans.md' is on disk, but Git ignores it (.gitignore:1:private/)" in line
                                   for line in found), r.out


def test_the_ignored_note_hint_reads_ids_as_the_workspace_derives_them(repo: Repo, cli: Any) -> None:
    """With `ids = "path"` a note's id is its path without the extension. The hint derived the ids of ignored
    notes as slugs of their names whatever the setting: the ref `drafts/idea` (what the ignored drafts/idea.md would
    be) went unsaid, and `[[plans]]` was told to un-ignore private/plans.md, whose id would be `private/plans`,
    which leaves the link as broken as it was."""
    repo.write(base_files(**{".vivary/graph.toml": '[links]\nids = "path"\n', ".gitignore": "private/\ndrafts/\n",
                             "notes/a.md": "# A\n[[plans]]\n",
                             "decisions/use-git.md": GOOD_DECISION.replace("[core]", "[drafts/idea]")}))
    repo.commit()
    repo.write({"private/plans.md": "# Plans\n", "drafts/idea.md": "# Idea\n"})
    for where in ([], ["--staged"]):
        r = cli("check", "--lenient", *where, cwd=repo.path)
        lines = {line.split(":", 1)[0]: line for line in r.out.splitlines() if " W22" in line}
        assert lines["decisions/use-git.md"].endswith(
            "warning W220: field 'related': ref 'drafts/idea' matches no document id; 'drafts/idea.md' is on disk, "
            "but Git ignores it (.gitignore:2:drafts/), so it is in no tree and no graph (an editor that does not "
            "read .gitignore shows the link resolved): un-ignore it, or link another note"), r.out
        assert lines["notes/a.md"] == \
            "notes/a.md:2: warning W221: wikilink [[plans]] matches no document id (looked for 'plans')", r.out
    repo.git("add", "-f", "private/plans.md", "drafts/idea.md")  # un-ignored: the ref resolves, the link not
    r = cli("check", "--lenient", "--staged", cwd=repo.path)
    assert "ref 'drafts/idea'" not in r.out and "wikilink [[plans]] matches no document id" in r.out, r.out


def test_a_note_lists_at_most_max_link_findings_then_one_w224_says_how_many_more(repo: Repo, cli: Any) -> None:
    """A generated note of 1.3 million broken links was 1.3 million findings (120 MB of text) and took a check
    to a gigabyte of memory. A note now lists its first `MAX_LINK_FINDINGS` link findings, then one W224 on the
    line of the first left out, with their number; links it silences do not count, and every edge is kept."""
    from vivary_git.check import MAX_LINK_FINDINGS

    more = 25
    gone = [f"[[gone{i}]]" for i in range(MAX_LINK_FINDINGS + more)]  # on lines 4, 5, …
    repo.commit(files={"a.md": "# A\n", "big.md": "# Big\n\n[[quiet]] <!-- vivary-ignore W221 -->\n"
                       + "\n".join(gone) + "\n[[a]]\n"})
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path)
    assert r.code == 0, r.err
    doc = r.json()
    codes = [f["code"] for f in doc["findings"]]
    assert codes == ["W221"] * MAX_LINK_FINDINGS + ["W224"] and doc["warnings"] == MAX_LINK_FINDINGS + 1
    assert doc["findings"][-2]["line"] == 3 + MAX_LINK_FINDINGS
    first_cut = 4 + MAX_LINK_FINDINGS
    assert doc["findings"][-1] == {
        "path": "big.md", "line": first_cut, "level": "warning", "code": "W224",
        "message": f"{more} more link finding(s) (W221, W222, W223) from line {first_cut} on are not listed: at "
                   f"most {MAX_LINK_FINDINGS:,} are listed a note; fix or remove those links, or split the note"}
    counts = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()["counts"]
    assert counts == {"nodes": 2, "edges": len(gone) + 2, "broken": len(gone) + 1}
    # One more broken link past the cap is a new finding for the hook: the W224 that counts it.
    repo.commit(files={"big.md": (repo.path / "big.md").read_text() + "[[one-more]]\n"})
    r = cli("check", "--rev", "HEAD", "--new-since", "HEAD~1", "--json", cwd=repo.path)
    assert r.code == 1, r.err
    assert [(f["code"], f["message"].split(" more")[0]) for f in r.json()["findings"]] == [("W224", str(more + 1))]


def test_a_vaults_links_to_notes_not_written_yet_say_how_to_allow_them(repo: Repo, cli: Any) -> None:
    """In Obsidian a link to a note not written yet is a way of working; `check` fails on it by default
    (`base.strict`), and says where that is turned off, on stderr so the findings stay as they are."""
    repo.commit(files={"Home.md": "# Home\n[[Someday]] and ![[gone.png]]\n", "Someday later.md": "# S\n"})
    r = cli("check", cwd=repo.path)
    assert r.code == 1
    assert r.err == ("vivary: 1 error(s) are links to notes that do not exist (W221). If they are notes you mean to "
                     "write, as an editor's unresolved links are, `[links] unresolved = false` in .vivary/graph.toml "
                     "stops reporting them, and `check --lenient` reports them as warnings "
                     "(docs/config.md#vivarygraphtoml)\n"), r.err
    for args in (("--lenient",), ("--strict",), ("--json",)):
        assert cli("check", *args, cwd=repo.path).err == "", args
    repo.commit(files={".vivary/graph.toml": "[links]\nunresolved = false\n"})
    r = cli("check", cwd=repo.path)
    assert r.code == 1 and "W223" in r.out and "W221" not in r.out and r.err == "", r.out + r.err
    repo.git("rm", "-q", ".vivary/graph.toml")
    repo.commit(files=base_files(**{"modules/m.md": "---\nstatus: active\n---\n# M\n[[ghost]]\n"}))
    r = cli("check", cwd=repo.path)
    assert r.code == 1 and "W221" in r.out and r.err == "", r.out + r.err  # a tropo.toml workspace's own rules
