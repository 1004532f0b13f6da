"""`git vivary remember` and `git vivary log`: memory writes are commits made beside the user's work."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import Repo

NOTE = "---\ntags: [ops]\n---\n# Deploy runbook\n\nHow we deploy.\n"


def _seed(repo: Repo) -> None:
    repo.commit("init", {"notes/deploy.md": NOTE, "USER.md": "private canary-user\n", "README.md": "# Home\n"})


def _trailers(repo: Repo, rev: str = "HEAD") -> str:
    msg = repo.git("log", "-1", "--format=%B", rev)
    return subprocess.run(["git", "interpret-trailers", "--parse"], input=msg, capture_output=True, text=True,
                          check=True).stdout


def test_remember_commits_one_note_and_leaves_the_users_work_alone(repo: Repo, cli) -> None:
    _seed(repo)
    repo.write({"staged.txt": "staged work\n"})
    repo.git("add", "staged.txt")
    repo.write({"notes/deploy.md": NOTE + "unstaged edit\n", "untracked.md": "# Scratch\n"})
    status_before = repo.git("status", "--porcelain=v1")
    cached_before = repo.git("diff", "--cached")
    diff_before = repo.git("diff")
    head_before = repo.git("rev-parse", "HEAD").strip()

    r = cli("remember", "We deploy on Tuesdays, never on Fridays.", "--tag", "deploy", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["ok"] is True and got["op"] == "add"
    assert got["path"].startswith("memories/") and got["id"] == got["path"][:-3]
    # one commit on top of the old HEAD, holding exactly the new note
    assert repo.git("rev-parse", "HEAD~1").strip() == head_before
    assert repo.git("diff", "--name-only", "HEAD~1", "HEAD").split() == [got["path"]]
    assert _trailers(repo) == f"Vivary-Op: add\nVivary-Node: {got['id']}\nVivary-Source: cli\n"
    # the user's staging, edits and untracked files read exactly as before
    assert repo.git("status", "--porcelain=v1") == status_before
    assert repo.git("diff", "--cached") == cached_before
    assert repo.git("diff") == diff_before
    assert repo.git("show", ":staged.txt") == "staged work\n"
    # the note is in the work tree and index, identical to the commit
    assert (repo.path / got["path"]).read_text() == repo.git("show", f"HEAD:{got['path']}")
    staged_blob = repo.git("ls-files", "-s", "--", got["path"]).split()[1]
    assert staged_blob == repo.git("rev-parse", f"HEAD:{got['path']}").strip()
    text = (repo.path / got["path"]).read_text()
    assert "type: memory" in text and "durability: working" in text and "source: cli" in text
    assert "tags: [deploy]" in text


def test_remembered_notes_are_typed_memory_in_zero_config_and_tropo_workspaces(repo: Repo, cli) -> None:
    _seed(repo)
    assert cli("remember", "Zero config memory", cwd=repo.path).code == 0
    nodes = {n["path"]: n for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]}
    assert nodes["memories/zero-config-memory.md"]["type"] == "memory"
    assert cli("check", cwd=repo.path).code == 0

    repo.commit("tropo", {"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n',
                          "decisions/use-git.md": "# Use Git\n"})
    r = cli("remember", "Tropo memory linked to a decision", "--link", "related:use-git", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["id"] == "tropo-memory-linked-to-a-decision"  # the contract's slug ids
    graph = cli("graph", "--json", cwd=repo.path).json()
    types = {n["id"]: n["type"] for n in graph["nodes"]}
    assert types["tropo-memory-linked-to-a-decision"] == "memory"
    assert {"from": "tropo-memory-linked-to-a-decision", "field": "related", "to": "use-git",
            "broken": False} in graph["edges"]
    assert cli("check", cwd=repo.path).code == 0


def test_a_memory_in_another_script_keeps_its_words_as_its_file_name_in_a_vault(repo: Repo, cli) -> None:
    """A vault's file names are what its editor lists: `Деплой по вторникам` was `memories/memory.md`, the
    next one `memory-2.md`, and so on for every memory not written in ASCII. Where ids are the
    contract's slugs (a `tropo.toml` workspace) the file name stays ASCII, as the slug is."""
    _seed(repo)
    got = {}
    for text in ("Деплой только по вторникам.", "部署只在星期三进行", "Ελληνικά: ΣΟΦΙΑ", "नमस्ते दुनिया",
                 "Zwölf Äpfel, naïve café", "🚀🚀 launch", "🚀🚀🚀"):
        r = cli("remember", text, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got[text] = r.json()["path"]
    assert got == {
        "Деплой только по вторникам.": "memories/деплой-только-по-вторникам.md",
        "部署只在星期三进行": "memories/部署只在星期三进行.md",
        "Ελληνικά: ΣΟΦΙΑ": "memories/ελληνικά-σοφια.md",
        "नमस्ते दुनिया": "memories/नमस्ते-दुनिया.md",
        "Zwölf Äpfel, naïve café": "memories/zwölf-äpfel-naïve-café.md",
        "🚀🚀 launch": "memories/launch.md",
        "🚀🚀🚀": "memories/memory.md",  # nothing left to name it by
    }
    long = cli("remember", "𠀀" * 100, "--json", cwd=repo.path).json()["path"]  # 4 bytes each in UTF-8
    assert long == "memories/" + "𠀀" * 45 + ".md"  # 180 bytes: a file name stays far below 255
    r = cli("remember", "Деплой только по вторникам.", "--force", "--json", cwd=repo.path)
    assert r.json()["path"] == "memories/деплой-только-по-вторникам-2.md"
    assert cli("check", cwd=repo.path).code == 0
    repo.commit("tropo", {"tropo.toml": "version = 1\n"})
    r = cli("remember", "Ключи ротируются ежеквартально", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["path"] == "memories/memory-2.md", r.out + r.err


def test_a_memory_is_not_named_as_a_device_windows_reserves(repo: Repo, cli) -> None:
    """`memories/con.md` (or `aux.md`, `com1.md`, `nul.md`) is a path Git for Windows refuses to check out, with
    any extension: one such memory stopped every Windows clone. Its name gets `-memory`; a longer one is kept."""
    _seed(repo)
    got = {}
    for text in ("Con", "AUX", "com1.", "Nul", "Console cables", "com10"):
        r = cli("remember", text, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got[text] = r.json()["path"]
    assert got == {"Con": "memories/con-memory.md", "AUX": "memories/aux-memory.md", "com1.": "memories/com1-memory.md",
                   "Nul": "memories/nul-memory.md", "Console cables": "memories/console-cables.md",
                   "com10": "memories/com10.md"}
    assert cli("check", cwd=repo.path).code == 0


def test_a_memory_titled_with_a_final_sigma_is_reached_by_a_link_to_its_title(repo: Repo, cli) -> None:
    """Obsidian lowercases a link with its `.md`: `[[ΛΟΓΟΣ]]` looks for `λογοσ.md`, its Σ before `.md` no final
    sigma. A memory titled `ΛΟΓΟΣ` was `λογος.md` (Python's lower of the title alone), which that link never
    reached. A title typed with its final `ς` keeps it, and its own link reaches it; a Σ before a dash is `ς` to
    the editor too."""
    _seed(repo)
    got = {}
    said = {"ΛΟΓΟΣ": "The word means reason.", "μυθος": "A story told of the gods.",
            "ΛΟΓΟΣ ΚΑΙ ΜΥΘΟΣ": "Plato set the two against each other."}
    for text, body in said.items():
        r = cli("remember", "--title", text, body, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got[text] = r.json()["path"]
    assert got == {"ΛΟΓΟΣ": "memories/λογοσ.md", "μυθος": "memories/μυθος.md",
                   "ΛΟΓΟΣ ΚΑΙ ΜΥΘΟΣ": "memories/λογος-και-μυθοσ.md"}
    repo.commit("links", {"Home.md": "# Home\n\n[[ΛΟΓΟΣ]] [[μυθος]] [[ΛΟΓΟΣ-ΚΑΙ-ΜΥΘΟΣ]]\n"})
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.json()["findings"] == [], r.out
    edges = {e["to"] for e in cli("graph", "--json", cwd=repo.path).json()["edges"] if e["from"] == "Home"}
    assert edges == {"memories/λογοσ", "memories/μυθος", "memories/λογος-και-μυθοσ"}


def test_a_memory_is_not_named_as_a_note_macos_and_windows_hold_as_the_same_file(repo: Repo, cli) -> None:
    """`memories/deploy.md` beside a person's `memories/Deploy.md` is two files to Git and one on macOS and Windows
    (W226): a checkout there shows one in place of the other. So is `λογος.md` beside `λογοσ.md` (`ς` and `σ` are
    both `Σ` uppercased). A memory takes the next free name instead."""
    _seed(repo)
    repo.commit("mine", {"memories/Deploy.md": "# Deploy\n\nMy own deploy checklist.\n"})
    got = []
    for title, body in (("deploy", "Deploys need a green CI."), ("λογος", "Heraclitus wrote of it first."),
                        ("ΛΟΓΟΣ", "The word means reason.")):
        r = cli("remember", "--title", title, body, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got.append(r.json()["path"])
    assert got == ["memories/deploy-2.md", "memories/λογος.md", "memories/λογοσ-2.md"]
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert [f["code"] for f in r.json()["findings"]] == [], r.out


def test_a_memory_is_not_named_as_a_note_one_system_alone_holds_as_the_same_file(repo: Repo, cli) -> None:
    """`memories/straße.md` beside `memories/STRASSE.md` is one file on macOS (which folds `ß` as `ss`), and
    `memories/ıd.md` (a dotless i) beside `memories/id.md` one on Windows (which uppercases both to `I`): a memory
    takes the next free name there too."""
    _seed(repo)
    repo.commit("mine", {"memories/STRASSE.md": "# Strasse\n\nMine.\n", "memories/id.md": "# id\n\nMine.\n"})
    got = []
    for title, body in (("straße", "Streets are named."), ("\u0131d", "Dotless.")):
        r = cli("remember", "--title", title, body, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got.append(r.json()["path"])
    assert got == ["memories/straße-2.md", "memories/\u0131d-2.md"], got
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert [f["code"] for f in r.json()["findings"]] == [], r.out


def test_a_link_in_a_vault_is_a_property_link_the_graph_reads(repo: Repo, cli) -> None:
    _seed(repo)
    r = cli("remember", "Deploys need a green CI", "--link", "related:notes/deploy", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    mid = r.json()["id"]
    edges = cli("graph", "--json", cwd=repo.path).json()["edges"]
    assert {"from": mid, "field": "related", "to": "notes/deploy", "broken": False} in edges


def test_a_link_names_its_note_as_a_wikilink_does(repo: Repo, cli) -> None:
    """In a vault a person names a note as they link it, `[[Деплой]]`, not by its path: `--link` takes what
    `blast` takes, and writes the note's id. A private note is no target, named or not, and its name is not
    shown back."""
    _seed(repo)
    repo.commit("more", {"Заметки/Деплой.md": "# Деплой\n", "MEMORY.md": "private canary-memory\n"})
    r = cli("remember", "Deploys need a green CI", "--link", "related:деплой", "--link", "about:Deploy",
            "--json", cwd=repo.path)
    assert r.code == 0, r.err
    mid = r.json()["id"]
    edges = cli("graph", "--json", cwd=repo.path).json()["edges"]
    assert {"from": mid, "field": "related", "to": "Заметки/Деплой", "broken": False} in edges
    assert {"from": mid, "field": "about", "to": "notes/deploy", "broken": False} in edges
    for name in ("USER", "MEMORY", "no such note"):
        r = cli("remember", f"Something about {name}", "--link", f"related:{name}", cwd=repo.path)
        assert r.code == 2 and f"no public link target {name!r} in this workspace: give its id" in r.err, r.err
        assert "canary" not in r.out + r.err


def test_a_memory_says_recall_needs_an_index_run_when_memory_is_on(repo: Repo, cli) -> None:
    """A memory is committed without `git commit`, so no post-commit hook indexes it; with no index built yet
    (nobody approved one) the line after `remembered` says what to run. Without memory on there is no index.
    With one built, the write brings it up to date (tests/test_cli_writethrough.py)."""
    _seed(repo)
    r = cli("remember", "Deploys need a green CI", cwd=repo.path)
    assert r.code == 0 and "index" not in r.out, r.out
    repo.commit("memory on", {".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n'})
    r = cli("remember", "Releases are tagged on Mondays", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.out.splitlines()[1:] == ["    recall finds it after `git vivary index --yes` (there is no semantic "
                                      "index yet)"], r.out


def test_exact_duplicate_is_blocked_unless_forced(repo: Repo, cli) -> None:
    _seed(repo)
    assert cli("remember", "Rotate the signing key every 90 days.", cwd=repo.path).code == 0
    head = repo.git("rev-parse", "HEAD")
    r = cli("remember", "rotate the signing key, every 90 days", "--json", cwd=repo.path)
    assert r.code == 3
    got = r.json()
    assert got["ok"] is False and got["probe"] == "exact"
    assert got["duplicate"]["id"] == "memories/rotate-the-signing-key-every-90-days"
    assert got["duplicate"]["text"] == "Rotate the signing key every 90 days."
    assert repo.git("rev-parse", "HEAD") == head  # nothing committed
    forced = cli("remember", "rotate the signing key, every 90 days", "--force", "--json", cwd=repo.path)
    assert forced.code == 0 and forced.json()["id"] == "memories/rotate-the-signing-key-every-90-days-2"


def test_a_refused_add_names_the_option_as_its_caller_spells_it(repo: Repo, cli) -> None:
    # The CLI said "add with force" / "add with supersede": the flags are `--force` and `--supersede`; the MCP
    # `add` (and the Python API) take `force: true` and `supersede: true`.
    mcp = pytest.importorskip("vivary_git.mcp.service")
    _seed(repo)
    assert cli("remember", "Deploys happen on Tuesdays and never on Fridays.", cwd=repo.path).code == 0
    dup = cli("remember", "Deploys happen on Tuesdays and never on Fridays.", cwd=repo.path)
    assert dup.code == 3 and "update that one, or add with `--force` to keep both" in dup.out
    other = cli("remember", "Deploys happen on Thursdays and never on Fridays.", cwd=repo.path)
    assert other.code == 3 and "or add with `--supersede` to archive it and keep this one" in other.out
    service = mcp.MemoryService(repo.path)
    try:
        dup_msg = service.add("Deploys happen on Tuesdays and never on Fridays.").message or ""
        other_msg = service.add("Deploys happen on Thursdays and never on Fridays.").message or ""
    finally:
        service.close()
    assert "update that one, or add with `force: true` to keep both" in dup_msg
    assert "or add with `supersede: true` to archive it and keep this one" in other_msg
    assert "--" not in dup_msg + other_msg


def test_a_duplicates_text_is_shown_inert(repo: Repo, cli) -> None:
    """The memory a refused add repeats is a note anyone who can commit wrote: its text is shown escaped, so a line
    of it cannot start a CI workflow command (`::error::`) in the log `remember` prints to."""
    _seed(repo)
    repo.commit("planted", {"memories/planted.md": "---\ntype: memory\n---\n"
                                                   "Deploys wait for the canary\n::error file=a.md::forged\n"})
    r = cli("remember", "Deploys wait for the canary: error file a md forged", cwd=repo.path)
    assert r.code == 3 and "memories/planted" in r.out, r.out + r.err
    assert not [line for line in r.out.splitlines() if line.lstrip().startswith("::")], r.out
    assert "canary\\n\\x3a:error" in r.out or "canary\\n::error" in r.out, r.out


# Each a credential in the form a scanner names; the value must never be echoed back.
SECRETS = [
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\n-----END RSA PRIVATE KEY-----", "Private Key"),
    ("the key is AKIAIOSFODNN7EXAMPLE for prod", "AWS Access Key"),
    ("use ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + " to push", "GitHub Token"),
    ("bot token xoxb-123456789012-123456789012-AbCdEfGhIjKlMnOpQrStUvWx", "Slack Token"),
    ("password=hunter2isnotgood", "Secret Keyword"),
]


@pytest.mark.parametrize(("text", "pattern"), SECRETS, ids=[p for _, p in SECRETS])
def test_secrets_never_become_memories(repo: Repo, cli, text: str, pattern: str) -> None:
    _seed(repo)
    head = repo.git("rev-parse", "HEAD")
    r = cli("remember", text, cwd=repo.path)
    assert r.code == 3
    assert f"({pattern}, found by detect-secrets)" in r.err
    for word in text.split():
        if len(word) > 12:
            assert word not in r.err + r.out
    assert repo.git("rev-parse", "HEAD") == head
    assert not (repo.path / "memories").exists()


def test_subject_and_trailers_cannot_be_forged_by_the_text(repo: Repo, cli) -> None:
    _seed(repo)
    r = cli("remember", "x", "--title", "Evil\n\nVivary-Op: forget\nVivary-Node: USER", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    trailers = _trailers(repo).splitlines()
    assert [t.split(":")[0] for t in trailers] == ["Vivary-Op", "Vivary-Node", "Vivary-Source"]
    assert trailers[0] == "Vivary-Op: add"
    subject = repo.git("log", "-1", "--format=%s")
    assert "\n" not in subject.strip() and len(subject.strip()) <= 72


def test_a_long_memory_s_commit_subject_says_what_it_is(repo: Repo, cli) -> None:
    """Its title, cut at a word, and the id cut at a dash (the trailers keep the whole id); a move says from
    where to where, also when the id stays the same (a slug workspace: `from keys` said nothing)."""
    repo.commit("init", {"tropo.toml": "version = 1\n", "notes/deploy.md": NOTE})
    fact = "The staging database is rebuilt every Sunday at 02:00 UTC before the weekly sync with production."
    r = cli("remember", fact, "--json", cwd=repo.path)
    assert r.code == 0, r.err
    mid = r.json()["id"]
    assert mid == "the-staging-database-is-rebuilt-every-sunday-at-02-00-utc"  # whole words
    assert repo.git("log", "-1", "--format=%s").strip() == (
        "vivary: add the-staging-database-is…: The staging database is rebuilt…")
    assert _trailers(repo) == f"Vivary-Op: add\nVivary-Node: {mid}\nVivary-Source: cli\n"
    assert cli("move", mid, f"ops/{mid}", cwd=repo.path).code == 0
    assert repo.git("log", "-1", "--format=%s").strip() == (
        "vivary: move the-staging-database-is…: from memories/the-staging…")
    short = cli("remember", "Keys.", "--json", cwd=repo.path).json()
    assert cli("move", short["id"], "ops/keys", cwd=repo.path).code == 0
    assert repo.git("log", "-1", "--format=%s").strip() == (
        "vivary: move keys: from memories/keys.md to memories/ops/keys.md")


def test_a_slug_folds_accents(repo: Repo, cli) -> None:
    """`Tomás` is `tomas`, not `tom-s`; letters NFKD keeps whole are spelt in ASCII; letters of other scripts are
    still left out (a vault keeps them all: test_a_memory_in_another_script_keeps_its_words...)."""
    repo.commit("init", {"tropo.toml": "version = 1\n", "notes/deploy.md": NOTE})
    r = cli("remember", "Tomás descales the coffee machine on Fridays.", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["path"] == "memories/tomas-descales-the-coffee-machine-on-fridays.md", r.out
    assert r.json()["id"] == "tomas-descales-the-coffee-machine-on-fridays"
    r = cli("remember", "Straße und Łódź: Ключи Ærø", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["path"] == "memories/strasse-und-lodz-aero.md", r.out
    assert cli("check", cwd=repo.path).code == 0



def test_a_long_titles_file_name_ends_with_a_whole_word(repo: Repo, cli) -> None:
    """The name was cut at 60 characters wherever that fell (`...-always-happens-o.md`): it ends after the last whole
    word that fits (`memory-2` and so on when that is taken; in any script; one word longer than the limit is still
    cut, and a word that ends exactly at the limit stays whole)."""
    _seed(repo)
    text = "The quarterly infrastructure review meeting always happens on the second Thursday afternoon."
    names = []
    for args in ((text,), (text, "--force"), ("Деплой только по вторникам и четвергам, никогда не по пятницам, даже "
                                              "в праздники.",), ("a" * 55 + " bcde fg",), ("x" * 70,)):
        r = cli("remember", *args, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        names.append(r.json()["path"])
    assert names == [
        "memories/the-quarterly-infrastructure-review-meeting-always-happens.md",
        "memories/the-quarterly-infrastructure-review-meeting-always-happens-2.md",  # taken: the next number
        "memories/деплой-только-по-вторникам-и-четвергам-никогда-не-по.md",
        "memories/" + "a" * 55 + "-bcde.md",  # 60 characters, ending with a word
        "memories/" + "x" * 60 + ".md",
    ]
    repo.commit("tropo", {"tropo.toml": "version = 1\n"})
    r = cli("remember", "Tomás reviews the quarterly infrastructure budget with the finance team.", "--json",
            cwd=repo.path)
    assert r.code == 0 and r.json()["id"] == "tomas-reviews-the-quarterly-infrastructure-budget-with-the", r.out
    assert cli("check", cwd=repo.path).code == 0

def test_a_text_opening_with_a_rule_is_titled_by_its_first_line_with_words(repo: Repo, cli) -> None:
    _seed(repo)
    r = cli("remember", "---\n---\nThe kettle is in the cupboard.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["title"] == "The kettle is in the cupboard."
    assert r.json()["path"] == "memories/the-kettle-is-in-the-cupboard.md"


def test_the_memory_folder_is_configurable_and_never_the_private_floor(repo: Repo, cli) -> None:
    _seed(repo)
    repo.commit("cfg", {".vivary/memory.toml": '[memory.remember]\nfolder = "agent/notes"\n'})
    r = cli("remember", "Configured folder", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["path"] == "agent/notes/configured-folder.md"
    nodes = {n["path"]: n["type"] for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]}
    assert nodes["agent/notes/configured-folder.md"] == "memory"

    repo.commit("cfg2", {".vivary/memory.toml": '[memory.remember]\nfolder = "memory/agent"\n'})
    bad = cli("remember", "Into the floor", cwd=repo.path)
    assert bad.code == 2
    assert ".vivary/memory.toml:2: `memory.remember.folder = 'memory/agent'` is inside the private floor" in bad.err


def test_an_ignored_memory_folder_is_refused(repo: Repo, cli) -> None:
    _seed(repo)
    repo.commit("ignore", {".gitignore": "memories/\n"})
    r = cli("remember", "Would be ignored", cwd=repo.path)
    assert r.code == 3
    assert r.err == ("git vivary remember: memories/would-be-ignored.md would be private (.gitignore:1:memories/), "
                     "so a memory written there could never be found; set [memory.remember] folder in "
                     ".vivary/memory.toml to a public folder (default \"memories\")\n"), r.err


def test_a_sensitive_title_is_refused_naming_the_title_not_the_folder(repo: Repo, cli) -> None:
    """The folder is public; the file name made from the title is one the privacy floor keeps out (`secrets.md`):
    the fix is another title (moving the folder, which the message said, would not help)."""
    _seed(repo)
    r = cli("remember", "Where the vault keys are kept.", "--title", "secrets", cwd=repo.path)
    assert r.code == 3 and "memories/secrets.md would be private" in r.err, r.err
    assert "give it another title" in r.err and "[memory.remember] folder" not in r.err, r.err
    assert cli("remember", "Where the vault keys are kept.", "--title", "Vault keys", cwd=repo.path).code == 0


def test_a_memory_the_workspace_would_not_read_is_refused(repo: Repo, cli) -> None:
    """A title whose file name an `exclude` leaves out, or a memory folder it leaves out, would be a memory nothing
    finds: refused, naming the rule and what to change, before anything is committed."""
    _seed(repo)
    repo.commit("cfg", {".vivary/graph.toml": 'exclude = ["memories/draft-*.md"]\n'})
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("remember", "The plan is still open.", "--title", "Draft plan", cwd=repo.path)
    assert r.code == 3, r.err
    assert r.err == ("git vivary remember: memories/draft-plan.md would not be read as a note (`exclude` in "
                     ".vivary/graph.toml has 'memories/draft-*.md'), so a memory written there could never be "
                     "found: its file name comes from the title; give it another title (--title, or `title` over "
                     "MCP); nothing was committed\n"), r.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    repo.commit("cfg2", {".vivary/graph.toml": 'exclude = ["memories/**"]\n'})
    r = cli("remember", "The plan is still open.", cwd=repo.path)
    assert r.code == 3 and "set [memory.remember] folder" in r.err, r.err
    assert "`exclude` in .vivary/graph.toml has 'memories/**'" in r.err, r.err


def test_detached_head_is_refused_with_the_fix(repo: Repo, cli) -> None:
    _seed(repo)
    repo.git("checkout", "-q", "--detach")
    r = cli("remember", "Detached", cwd=repo.path)
    assert r.code == 3 and "HEAD is detached" in r.err and 'branch = "vivary/memory"' in r.err


def test_a_dedicated_memory_branch_leaves_head_and_work_tree_alone(repo: Repo, cli) -> None:
    _seed(repo)
    repo.commit("cfg", {".vivary/memory.toml": '[memory.remember]\nbranch = "vivary/memory"\n'})
    head = repo.git("rev-parse", "HEAD")
    r = cli("remember", "On its own branch", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["ref"] == "refs/heads/vivary/memory"
    assert repo.git("rev-parse", "HEAD") == head
    assert repo.git("status", "--porcelain") == ""
    # the branch holds the memories only (read as an overlay by the MCP server)
    assert repo.git("ls-tree", "-r", "--name-only", "vivary/memory").split() == ["memories/on-its-own-branch.md"]
    assert _trailers(repo, "vivary/memory").startswith("Vivary-Op: add\n")


@pytest.mark.parametrize("target", ["main", "release", "elsewhere"])
def test_a_memory_branch_that_is_a_symbolic_ref_is_refused(repo: Repo, cli, target: str) -> None:
    """`refs/heads/vivary/memory` made a symbolic ref by someone else: `git update-ref` followed it and the memory
    commit landed on the branch it named (the checked-out `main`, whose index then showed the memory as staged for
    deletion; a `release` branch), while the answer said `refs/heads/vivary/memory`; a symbolic ref to no branch
    was a traceback. The write is refused, naming the ref, where it points and the fix, and no branch moves."""
    _seed(repo)
    repo.commit("cfg", {".vivary/memory.toml": '[memory.remember]\nbranch = "vivary/memory"\n'})
    repo.git("branch", "release")
    repo.git("symbolic-ref", "refs/heads/vivary/memory", f"refs/heads/{target}")
    refs = repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads")
    r = cli("remember", "The loading dock closes at six.", cwd=repo.path)
    assert r.code == 3, r.err
    assert r.err == (
        f"git vivary remember: refs/heads/vivary/memory is a symbolic ref to refs/heads/{target}, so Git would move "
        "that branch instead and the memory would land there; memories go to their own branch: remove the symbolic "
        "ref (`git symbolic-ref --delete refs/heads/vivary/memory`), or name the branch to use in [memory.remember] "
        "branch in .vivary/memory.toml; nothing was committed\n")
    assert repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads") == refs
    assert repo.git("status", "--porcelain") == ""
    repo.git("symbolic-ref", "--delete", "refs/heads/vivary/memory")  # the fix the message names
    r = cli("remember", "The loading dock closes at six.", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["ref"] == "refs/heads/vivary/memory", r.err
    assert repo.git("ls-tree", "-r", "--name-only", "vivary/memory", "memories").split() == [
        "memories/the-loading-dock-closes-at-six.md"]
    assert repo.git("for-each-ref", "--format=%(refname) %(symref) %(objectname)", "refs/heads/main",
                    "refs/heads/release") == "".join(line + "\n" for line in refs.splitlines()
                                                    if not line.startswith("refs/heads/vivary/"))


def test_the_checked_out_branch_is_followed_as_git_commit_follows_it(repo: Repo, cli) -> None:
    """With no memory branch of its own, a memory goes where `git commit` would put it: HEAD followed to the branch
    it names, through a branch alias too (`master` a symbolic ref to `main`), and the index and work tree hold it."""
    _seed(repo)
    repo.git("symbolic-ref", "refs/heads/master", "refs/heads/main")
    repo.git("symbolic-ref", "HEAD", "refs/heads/master")
    r = cli("remember", "Aliases lead to the same branch.", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert repo.git("rev-parse", "main").strip() == r.json()["commit"]
    assert repo.git("symbolic-ref", "refs/heads/master").strip() == "refs/heads/main"
    assert repo.git("status", "--porcelain") == ""


def test_log_shows_a_nodes_memory_history(repo: Repo, cli) -> None:
    _seed(repo)
    mid = cli("remember", "Log me", "--json", cwd=repo.path).json()["id"]
    assert cli("remember", "Another one", cwd=repo.path).code == 0
    one = cli("log", mid, "--json", cwd=repo.path).json()
    assert [(e["op"], e["node"], e["source"]) for e in one] == [("add", mid, "cli")]
    every = cli("log", "--json", cwd=repo.path).json()
    assert [e["op"] for e in every] == ["add", "add"]
    assert cli("log", "USER.md", cwd=repo.path).code == 2  # private: no history here


def test_eight_concurrent_adds_all_land(repo: Repo) -> None:
    _seed(repo)
    repo.write({"staged.txt": "staged\n"})
    repo.git("add", "staged.txt")
    # Eight facts about different things: "memory number 3" after "memory number 0" is an update the probe
    # refuses (a changed number), whenever the first has landed before the second probes.
    facts = ["The kettle descales on Mondays.", "Badges open the loading dock.", "Printer toner sits in cupboard B.",
             "Visitors sign in at reception.", "The bike shed locks at dusk.", "Plants get watered by Priya.",
             "Fire drills start from the atrium.", "Spare chargers live in the blue drawer."]
    procs = [
        subprocess.Popen([sys.executable, "-m", "vivary_git.main", "remember", fact,
                          "--title", "Same title", "--json"], cwd=repo.path, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for fact in facts
    ]
    results = [(p.wait(timeout=300), p.stdout.read(), p.stderr.read()) for p in procs]  # type: ignore[union-attr]
    failed = [(code, err) for code, _, err in results if code != 0]
    assert not failed, failed
    paths = {json.loads(out)["path"] for _, out, _ in results}
    assert len(paths) == 8
    log = repo.git("log", "--format=%(trailers:key=Vivary-Op,valueonly)", "-8").split()
    assert log == ["add"] * 8
    tree = set(repo.git("ls-tree", "-r", "--name-only", "HEAD", "memories").split())
    assert tree == paths
    # each note is in the index and work tree, nothing else changed
    assert repo.git("status", "--porcelain=v1") == "A  staged.txt\n"
    for p in paths:
        assert (repo.path / p).is_file()



# --- what an agent sends is checked before anything is written, and each refusal says why, word for word ----

_LONG_TAG = "t" * 64


@pytest.mark.parametrize(("kwargs", "said"), [
    ({"text": "   "}, "the memory text is empty; say what to remember"),
    ({"text": "x" * 20_001}, "the memory text is 20,001 characters, over the 20,000 a memory may hold; keep memories "
                             "short and link them instead"),
    ({"text": "a\x00b"}, "the memory text contains a NUL character; send plain text"),
    ({"tags": [f"t{n}" for n in range(33)]}, "33 tags, over the 32 a memory may have"),
    ({"tags": [_LONG_TAG + "u"]}, f"tag '{_LONG_TAG}u' must be one word of at most 64 characters (no spaces, commas, "
                                  "brackets or quotes), e.g. \"deploy\""),
    ({"tags": ["two words"]}, "tag 'two words' must be one word of at most 64 characters (no spaces, commas, "
                              "brackets or quotes), e.g. \"deploy\""),
    ({"tags": ["#"]}, "tag '' must be one word of at most 64 characters (no spaces, commas, brackets or quotes), "
                      "e.g. \"deploy\""),
    ({"durability": "forever"}, "durability 'forever' is not one of working, durable, pinned, ephemeral"),
    ({"links": ["related"]}, "link 'related' must be FIELD:ID, e.g. related:deploy-runbook"),
    ({"links": [" :notes/deploy"]}, "link ' :notes/deploy' must be FIELD:ID, e.g. related:deploy-runbook"),
    ({"links": ["related: "]}, "link 'related: ' must be FIELD:ID, e.g. related:deploy-runbook"),
], ids=["empty", "too-long", "nul", "too-many-tags", "long-tag", "spaced-tag", "bare-hash", "durability",
        "link-without-colon", "link-without-field", "link-without-target"])
def test_an_agents_bad_input_is_refused_word_for_word_and_nothing_is_written(repo: Repo, kwargs: dict[str, object],
                                                                            said: str) -> None:
    from vivary_git.errors import UsageError
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    head = repo.git("rev-parse", "HEAD")
    service = MemoryService(repo.path)
    try:
        with pytest.raises(UsageError) as refused:
            service.add(**{"text": "Deploys happen on Tuesdays.", **kwargs})  # type: ignore[arg-type]
        assert str(refused.value) == said
    finally:
        service.close()
    assert repo.git("rev-parse", "HEAD") == head


def test_an_agents_input_at_each_bound_is_taken(repo: Repo) -> None:
    """At the limits (20,000 characters, 32 tags, a 64-character tag), and a tag written `#deploy` is `deploy`."""
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    service = MemoryService(repo.path)
    try:
        text = ("Deploys happen on Tuesdays. " * 800)[:20_000]
        long = service.add(text, tags=["#deploy", "deploy", "Xray", _LONG_TAG], durability="pinned")
        assert long.ok and long.id is not None, long
        assert service.read(long.id).frontmatter["tags"] == ["deploy", "Xray", _LONG_TAG]
        many = service.add("Signing keys rotate every quarter.", tags=[f"t{n}" for n in range(32)])
        assert many.ok and many.id is not None, many
        assert service.read(many.id).frontmatter["tags"] == [f"t{n}" for n in range(32)]
    finally:
        service.close()


def test_expires_writes_an_ephemeral_memory_that_stops_mattering_then(repo: Repo, cli) -> None:
    _seed(repo)
    r = cli("remember", "The staging box is down until the new year.", "--expires", "2099-01-01T09:30+02:00",
            "--json", cwd=repo.path)
    assert r.code == 0, r.err
    note = (repo.path / r.json()["path"]).read_text()
    assert "durability: ephemeral\n" in note and 'expires: "2099-01-01T07:30:00Z"\n' in note
    head = repo.git("rev-parse", "HEAD")
    for args, said in [(["--expires", "2001-01-01"], "has passed"),
                       (["--expires", "soon"], "is not an ISO date or date-time"),
                       (["--expires", "2099-01-01", "--durability", "durable"], "not durable ones"),
                       (["--expires", "2099-01-01", "--file", "README.md"], "--expires does not apply")]:
        r = cli("remember", "Something else to remember for a while.", *args, cwd=repo.path)
        assert r.code == 2 and said in r.err, (args, r.err)
    assert repo.git("rev-parse", "HEAD") == head


def _lock_waiters(lock: Path) -> int:
    """How many processes wait for the flock on `lock` (Linux's /proc/locks marks a blocked request `->`)."""
    inode = f":{lock.stat().st_ino} "
    return sum(1 for line in Path("/proc/locks").read_text().splitlines() if "->" in line and inode in line)


def test_a_memory_write_refuses_when_a_file_is_in_the_place_of_the_locks_folder(repo: Repo, cli) -> None:
    """The write lock could not be made there, and the write went on without it (another writer could then take
    the memory for a change of the user's): it refuses (exit 2), naming the file, and changes nothing."""
    _seed(repo)
    locks = repo.path / ".git" / "vivary" / "locks"
    locks.parent.mkdir(parents=True, exist_ok=True)
    locks.write_text("not a folder\n")
    head = repo.git("rev-parse", "HEAD")
    r = cli("remember", "The loading dock closes at 6pm on Fridays.", cwd=repo.path)
    assert r.code == 2 and r.err.startswith(f"git vivary remember: {locks}: ") and "remove it" in r.err, r.err
    assert repo.git("rev-parse", "HEAD") == head and repo.git("status", "--porcelain=v1") == ""
    locks.unlink()
    assert cli("remember", "The loading dock closes at 6pm on Fridays.", cwd=repo.path).code == 0

@pytest.mark.parametrize("branch", ["", "vivary/memory"])
def test_two_processes_adding_the_same_fact_at_once_commit_it_once(repo: Repo, branch: str) -> None:
    """Both probe before either holds the write lock (the test holds it until both wait for it): the one that
    commits second must see the first's memory under the lock and refuse, as a duplicate of it. On the
    checked-out branch and on a memory branch of its own."""
    fcntl = pytest.importorskip("fcntl")
    if not Path("/proc/locks").is_file():
        pytest.skip("no /proc/locks to see the two processes wait for the lock")
    from vivary_git.memory.lock import LOCKS

    _seed(repo)
    if branch:
        repo.commit("cfg", {".vivary/memory.toml": f'[memory.remember]\nbranch = "{branch}"\n'})
    lock = repo.path / ".git" / "vivary" / LOCKS / "memory-write.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    fact = "The loading dock closes at 6pm on Fridays."
    with lock.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        procs = [subprocess.Popen([sys.executable, "-m", "vivary_git.main", "remember", fact, "--json"],
                                  cwd=repo.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
        while _lock_waiters(lock) < 2:  # each has probed (no memory yet: new) and waits to commit
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.05)
        fcntl.flock(held, fcntl.LOCK_UN)
    results = [(p.wait(), json.loads(p.communicate()[0])) for p in procs]
    assert sorted(code for code, _ in results) == [0, 3], results
    added = next(got for code, got in results if code == 0)
    refused = next(got for code, got in results if code != 0)
    assert refused["verdict"] == "duplicate" and refused["duplicate"]["id"] == added["id"], refused
    assert repo.git("ls-tree", "-r", "--name-only", branch or "HEAD", "memories").split() == [added["path"]]
    assert repo.git("status", "--porcelain=v1") == ""
