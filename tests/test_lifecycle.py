"""A memory after it is written, on the command line: `git vivary edit`, `retire` (`--delete`), `move`, `recent`,
`context`, and `log` following a memory by its id (docs/remember.md). Each change is one commit with its
trailers, made beside the user's own work, on memories only."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest
from conftest import TROPO, Repo

RUNBOOK = "# Deploy runbook\n\nHow we deploy.\n"


def _seed(repo: Repo, extra: dict[str, str] | None = None) -> None:
    repo.commit("init", {"notes/deploy.md": RUNBOOK, "README.md": "# Home\n", **(extra or {})})


def _remember(repo: Repo, cli: Any, text: str, *args: str) -> dict[str, Any]:
    r = cli("remember", text, *args, "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got: dict[str, Any] = r.json()
    return got


def _trailers(repo: Repo, rev: str = "HEAD") -> str:
    msg = repo.git("log", "-1", "--format=%B", rev)
    return subprocess.run(["git", "interpret-trailers", "--parse"], input=msg, capture_output=True, text=True,
                          check=True).stdout


def _body(repo: Repo, path: str) -> str:
    return (repo.path / path).read_text(encoding="utf-8")


# --- edit -----------------------------------------------------------------------------------------------------


SECTIONS = ("---\ntype: memory\ntitle: Deploy days\ndurability: working\n---\n\n# Deploy days\n\nTuesdays only.\n\n"
            "## Exceptions\n\n- holidays\n\n## Owners\n\nThe release captain.\n")


def test_edit_appends_replaces_and_sets_fields_in_one_commit_each(repo: Repo, cli: Any) -> None:
    _seed(repo, {"memories/deploy-days.md": SECTIONS})
    repo.write({"staged.md": "# Staged\n"})
    repo.git("add", "staged.md")
    status = repo.git("status", "--porcelain=v1")
    head = repo.git("rev-parse", "HEAD").strip()

    r = cli("edit", "memories/deploy-days", "--append", "- freezes", "--heading", "exceptions", "--json",
            cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["changed"] is True and r.json()["op"] == "edit"
    assert "## Exceptions\n\n- holidays\n- freezes\n\n## Owners" in _body(repo, "memories/deploy-days.md")
    assert _trailers(repo) == "Vivary-Op: edit\nVivary-Node: memories/deploy-days\nVivary-Source: cli\n"
    assert cli("edit", "memories/deploy-days", "--append", "Ask first.", cwd=repo.path).code == 0
    assert _body(repo, "memories/deploy-days.md").endswith("The release captain.\n\nAsk first.\n")
    assert cli("edit", "memories/deploy-days", "--replace", "Tuesdays only.", "--with", "Tuesdays and Wednesdays.",
               cwd=repo.path).code == 0
    assert cli("edit", "memories/deploy-days", "--tag", "ops", "--tag", "deploy", "--durability", "durable",
               cwd=repo.path).code == 0
    text = _body(repo, "memories/deploy-days.md")
    assert text == ("---\ntype: memory\ntitle: Deploy days\ndurability: durable\ntags: [ops, deploy]\n---\n\n"
                    "# Deploy days\n\nTuesdays and Wednesdays.\n\n## Exceptions\n\n- holidays\n- freezes\n\n"
                    "## Owners\n\nThe release captain.\n\nAsk first.\n")
    assert repo.git("rev-list", "--count", f"{head}..HEAD").strip() == "4"
    assert repo.git("status", "--porcelain=v1") == status  # the user's staged file is still staged, alone
    assert cli("check", cwd=repo.path).code == 0
    same = cli("edit", "memories/deploy-days", "--durability", "durable", "--json", cwd=repo.path)
    assert same.code == 0 and same.json()["changed"] is False
    assert repo.git("rev-list", "--count", f"{head}..HEAD").strip() == "4"


def test_a_passage_found_twice_or_not_at_all_is_refused_with_the_candidates(repo: Repo, cli: Any) -> None:
    _seed(repo, {"memories/deploy-days.md": SECTIONS + "\nTuesdays only, said the captain.\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("edit", "memories/deploy-days", "--replace", "Tuesdays only", "--with", "x", cwd=repo.path)
    assert r.code == 3 and "2 times (lines 9, 19)" in r.err, r.err
    r = cli("edit", "memories/deploy-days", "--replace", "The release captian.", "--with", "x", cwd=repo.path)
    assert r.code == 3 and 'the closest: line 17: "The release captain."' in r.err, r.err
    r = cli("edit", "memories/deploy-days", "--append", "x", "--heading", "Nope", cwd=repo.path)
    assert r.code == 3 and 'no heading "Nope"; its headings: line 7: "# Deploy days"' in r.err, r.err
    r = cli("edit", "memories/deploy-days", "--expires", "2027-01-01", cwd=repo.path)
    assert r.code == 3 and "ephemeral memories only" in r.err, r.err
    r = cli("edit", "memories/deploy-days", "--heading", "Owners", cwd=repo.path)
    assert r.code == 2 and "give the text to append" in r.err
    r = cli("edit", "memories/deploy-days", cwd=repo.path)
    assert r.code == 2 and "nothing to edit" in r.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    r = cli("edit", "memories/deploy-days", "--expires", "2027-01-01", "--durability", "ephemeral", cwd=repo.path)
    assert r.code == 0, r.err
    assert 'expires: "2027-01-01"' in _body(repo, "memories/deploy-days.md")


def test_your_own_notes_are_read_only_to_every_lifecycle_command(repo: Repo, cli: Any) -> None:
    """Refused for a note outside the memory folder, even one typed memory by its frontmatter."""
    _seed(repo, {"notes/typed.md": "---\ntype: memory\n---\n# Typed as a memory, but mine\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    for ref in ("notes/deploy", "notes/typed"):
        for args in (("edit", ref, "--append", "x"), ("retire", ref, "--reason", "x"),
                     ("retire", ref, "--reason", "x", "--delete"), ("move", ref, "elsewhere")):
            r = cli(*args, cwd=repo.path)
            assert r.code == 3 and "is not a memory" in r.err and "your own notes stay yours" in r.err, (args, r.err)
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == ""


# --- retire and forget -------------------------------------------------------------------------------------------


def test_retire_archives_with_a_reason_and_delete_forgets(repo: Repo, cli: Any) -> None:
    _seed(repo)
    mem = _remember(repo, cli, "The quokka freeze starts in December.")
    r = cli("retire", mem["id"], "--reason", "the freeze was called off", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["op"] == "retire" and r.json()["changed"] is True
    text = _body(repo, mem["path"])
    assert "archived: " in text and 'archived_reason: the freeze was called off' in text
    assert "Vivary-Op: retire\n" in _trailers(repo) and "Vivary-Reason: the freeze was called off\n" in _trailers(repo)
    again = cli("retire", mem["id"], "--reason", "twice", "--json", cwd=repo.path)
    assert again.code == 0 and again.json()["changed"] is False
    assert cli("retire", mem["id"], cwd=repo.path).code == 2  # --reason is required
    r = cli("retire", mem["id"], "--reason", "wrong all along", "--delete", cwd=repo.path)
    assert r.code == 0 and r.out.startswith(f"forgot {mem['id']}"), r.err
    assert not (repo.path / mem["path"]).exists()
    assert repo.git("status", "--porcelain") == ""
    assert "Vivary-Op: forget\n" in _trailers(repo)
    log = cli("log", mem["id"], "--json", cwd=repo.path)
    assert log.code == 0, log.err
    assert [e["op"] for e in log.json()] == ["forget", "retire", "add"]


def test_the_history_of_a_memory_whose_add_was_reverted_stays_reachable(repo: Repo, cli: Any) -> None:
    """`git revert` of an add was the only way to drop a memory, and then `git vivary log ID` answered "no
    public node". Its history is found by its id, in a vault and in a tropo.toml workspace (slug ids)."""
    _seed(repo)
    mem = _remember(repo, cli, "Office coffee routine: beans on the first of the month.")
    add = repo.git("rev-parse", "HEAD").strip()
    repo.git("revert", "--no-edit", add)
    r = cli("log", mem["id"], "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert [(e["op"], e["commit"]) for e in r.json()] == [("revert", repo.git("rev-parse", "HEAD").strip()),
                                                          ("add", add)]
    assert cli("log", f"{mem['id']}.md", "--json", cwd=repo.path).json() == r.json()  # by its old path too
    r = cli("log", "memories/never-was", cwd=repo.path)
    assert r.code == 2 and "no public node" in r.err

    repo.commit("tropo", {"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'})
    slug = _remember(repo, cli, "Tropo memories have slug ids.")
    assert slug["id"] == "tropo-memories-have-slug-ids"
    assert cli("retire", slug["id"], "--reason", "slugs are documented", "--delete", cwd=repo.path).code == 0
    r = cli("log", slug["id"], "--json", cwd=repo.path)
    assert r.code == 0 and [e["op"] for e in r.json()] == ["forget", "add"], r.err


def test_a_gone_memory_the_boundary_now_holds_back_has_no_history_here(repo: Repo, cli: Any) -> None:
    _seed(repo)
    mem = _remember(repo, cli, "The walrus password hint lives in the vault.")
    assert cli("retire", mem["id"], "--reason", "moved to the vault", "--delete", cwd=repo.path).code == 0
    repo.commit("private", {".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["memories/the-walrus-*"]\n'})
    r = cli("log", mem["id"], cwd=repo.path)
    assert r.code == 2 and "no public node" in r.err
    r = cli("recent", "--since", "3650d", "--json", cwd=repo.path)
    assert r.code == 0 and mem["id"] not in r.out and "walrus" not in r.out


# --- move -----------------------------------------------------------------------------------------------------


def test_move_rewrites_the_links_to_it_in_memories_and_lists_your_notes(repo: Repo, cli: Any) -> None:
    """Every way a vault writes a link (a property, a wikilink with a heading and shown text, a name alone, a
    relative Markdown link) is rewritten in the other memories; your note is listed, unchanged, unless you ask."""
    _seed(repo)
    target = _remember(repo, cli, "Deploys happen on Tuesdays.", "--link", "related:notes/deploy")
    tid = target["id"]
    other = ("---\ntype: memory\nrelated: [\"[[" + tid + "]]\"]\n---\n# Links to it\n\n"
             "See [[" + tid + "#Deploys happen on Tuesdays.|the day]], [[deploys-happen-on-tuesdays]] and "
             "[the note](deploys-happen-on-tuesdays.md).\n")
    mine = "# Mine\n\nMy link: [[" + tid + "]].\n"
    repo.commit("links", {"memories/links-to-it.md": other, "notes/mine.md": mine})
    head = repo.git("rev-parse", "HEAD").strip()

    r = cli("move", tid, "ops/deploy-days", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["id"] == "memories/ops/deploy-days" and got["moved_from"] == tid
    assert got["rewritten"] == ["memories/links-to-it"] and got["not_rewritten"] == ["notes/mine"]
    assert repo.git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert _trailers(repo) == (f"Vivary-Op: move\nVivary-Node: memories/ops/deploy-days\nVivary-Source: cli\n"
                               f"Vivary-From: {tid}\n")
    assert _body(repo, "memories/links-to-it.md") == (
        "---\ntype: memory\nrelated: [\"[[memories/ops/deploy-days]]\"]\n---\n# Links to it\n\n"
        "See [[memories/ops/deploy-days#Deploys happen on Tuesdays.|the day]], [[deploy-days]] and "
        "[the note](ops/deploy-days.md).\n")
    assert _body(repo, "notes/mine.md") == mine
    assert not (repo.path / target["path"]).exists()
    moved = _body(repo, "memories/ops/deploy-days.md")
    assert "related: [\"[[notes/deploy]]\"]" in moved  # its own link still reaches the runbook
    graph = cli("graph", "--json", cwd=repo.path).json()
    edges = {(e["from"], e["to"]) for e in graph["edges"] if not e["broken"]}
    assert ("memories/links-to-it", "memories/ops/deploy-days") in edges
    assert ("memories/ops/deploy-days", "notes/deploy") in edges
    assert repo.git("status", "--porcelain") == ""

    r = cli("move", "memories/ops/deploy-days", "deploy-days-2", "--rewrite-user-links", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["rewritten"] == ["memories/links-to-it"]  # notes/mine's link was broken by the first move
    repo.commit("mine again", {"notes/mine.md": "# Mine\n\nMy link: [[memories/ops/deploy-days-2]].\n"})
    r = cli("move", "memories/ops/deploy-days-2", "deploy-days-3", "--rewrite-user-links", "--json", cwd=repo.path)
    assert r.json()["rewritten"] == ["memories/links-to-it", "notes/mine"] and r.json()["not_rewritten"] == []
    assert _body(repo, "notes/mine.md") == "# Mine\n\nMy link: [[memories/ops/deploy-days-3]].\n"
    assert cli("check", cwd=repo.path).code == 0
    log = cli("log", "memories/ops/deploy-days-3", "--json", cwd=repo.path).json()
    assert [e["op"] for e in log] == ["move", "move", "move", "add"]


def test_the_setting_rewrites_your_notes_for_every_move(repo: Repo, cli: Any) -> None:
    _seed(repo, {".vivary/memory.toml": "[memory.remember]\nrewrite_user_links = true\n"})
    target = _remember(repo, cli, "Walruses are fed at noon.")
    repo.commit("mine", {"notes/mine.md": f"# Mine\n\n[[{target['id']}]]\n"})
    r = cli("move", target["id"], "feeding", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["rewritten"] == ["notes/mine"], r.err
    assert _body(repo, "notes/mine.md") == "# Mine\n\n[[memories/feeding]]\n"  # a path stays a path


def test_move_in_a_tropo_workspace_rewrites_ref_fields(repo: Repo, cli: Any) -> None:
    _seed(repo, {"tropo.toml": 'version = 1\n[types.decision]\nfolder = "decisions"\n'})
    target = _remember(repo, cli, "Slug memories move too.")
    other = _remember(repo, cli, "This one points at it.", "--link", f"related:{target['id']}")
    r = cli("move", target["id"], "moved-slug", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["id"] == "moved-slug" and r.json()["rewritten"] == [other["id"]]
    assert "related: [moved-slug]" in _body(repo, other["path"])
    graph = cli("graph", "--json", cwd=repo.path).json()
    assert {"from": other["id"], "field": "related", "to": "moved-slug", "broken": False} in graph["edges"]
    assert cli("check", cwd=repo.path).code == 0


def test_move_refuses_a_taken_name_a_path_out_of_the_folder_and_a_private_one(repo: Repo, cli: Any) -> None:
    _seed(repo, {".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["memories/secret/**"]\n'})
    a = _remember(repo, cli, "Alpha memory.")
    b = _remember(repo, cli, "Beta memory.")
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("move", a["id"], b["path"].rsplit("/", 1)[1], cwd=repo.path)
    assert r.code == 3 and "taken" in r.err, r.err
    for to in ("../notes/alpha", "ops/../../x", "/abs/alpha", "a|b", "alpha.txt"):
        r = cli("move", a["id"], to, cwd=repo.path)
        assert r.code == 2, (to, r.err)
    r = cli("move", a["id"], "secret/alpha", cwd=repo.path)
    assert r.code == 3 and "private" in r.err, r.err
    # A name the privacy floor keeps out in a public folder: the name is the one given to move, not a title.
    r = cli("move", a["id"], "credentials", cwd=repo.path)
    assert r.code == 3 and "private" in r.err and "its file name is the one given; choose another name" in r.err, r.err
    assert "title" not in r.err
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_move_refuses_a_name_macos_and_windows_hold_as_another_note_s(repo: Repo, cli: Any) -> None:
    """`memories/Beta-memory.md` beside `memories/beta-memory.md` is two files to Git and one on macOS and Windows
    (W226): refused, naming the note. A memory renamed to its own name in another case is no clash."""
    _seed(repo)
    a = _remember(repo, cli, "Alpha memory.")
    b = _remember(repo, cli, "Beta memory.")
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("move", a["id"], b["path"].rsplit("/", 1)[1][:-3].upper(), cwd=repo.path)
    assert r.code == 3 and f"is the same file as {b['path']} on macOS and Windows" in r.err, r.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    r = cli("move", a["id"], "Alpha-Memory", "--json", cwd=repo.path)
    assert r.code == 0 and r.json()["path"] == "memories/Alpha-Memory.md", r.out + r.err


@pytest.mark.parametrize(("files", "to", "rule", "works"), [
    ({"tropo.toml": TROPO.replace('exclude = ["README.md"]', 'exclude = ["README.md", "memory"]')},
     "memory/coffee", "`exclude` in tropo.toml has 'memory', a bare name", "memories/coffee"),
    ({"tropo.toml": TROPO.replace('exclude = ["README.md"]', 'exclude = ["README.md", "memories/old/**"]')},
     "old/coffee", "`exclude` in tropo.toml has 'memories/old/**'", "memories/coffee"),
    ({".vivary/graph.toml": 'exclude = ["memories/drafts/**"]\n'},
     "drafts/coffee", "`exclude` in .vivary/graph.toml has 'memories/drafts/**'", "memories/coffee"),
    ({}, "AGENTS", "AGENTS.md is an agent host's guidance file", "memories/AGENTS-2"),
    ({".obsidian/app.json": "{}\n", ".obsidian/templates.json": '{"folder": "memories/tpl"}\n'},
     "tpl/coffee", "memories/tpl/ is the editor's template folder", "memories/coffee"),
    ({"tropo.toml": TROPO, "memories/ops/tropo.toml": 'exclude = ["hidden"]\n'},
     "ops/hidden/coffee", "`exclude` in memories/ops/tropo.toml leaves it out", "memories/coffee"),
])
def test_move_refuses_a_destination_the_workspace_does_not_read(repo: Repo, cli: Any, files: dict[str, str], to: str,
                                                                 rule: str, works: str) -> None:
    """A memory moved where an `exclude` (or a template folder, a guidance name) leaves notes out would be
    committed and then found by nothing, not even `move` back: refused like a private destination, naming the
    rule and a destination that is read."""
    _seed(repo, files)
    a = _remember(repo, cli, "The coffee machine is descaled on Fridays.")
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("move", a["id"], to, cwd=repo.path)
    assert r.code == 3, r.err
    assert rule in r.err and "would not be read as a note" in r.err, r.err
    assert f"e.g. {works!r}; nothing was committed" in r.err, r.err
    assert repo.git("rev-parse", "HEAD").strip() == head
    done = cli("move", a["id"], works, "--json", cwd=repo.path)
    assert done.code == 0, done.err
    moved = done.json()["id"]
    assert moved in {n["id"] for n in cli("graph", "--json", cwd=repo.path).json()["nodes"]}


# --- recent and context ----------------------------------------------------------------------------------------


def test_recent_lists_the_window_newest_first_with_ops(repo: Repo, cli: Any,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    _seed(repo)
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-01T10:00:00Z")
    old = _remember(repo, cli, "An old memory about walruses.")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T10:00:00Z")
    new = _remember(repo, cli, "A new memory about quokkas.")
    assert cli("edit", new["id"], "--append", "They are small.", cwd=repo.path).code == 0
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2026-11-29T11:00:00Z")
    repo.commit("by hand", {new["path"]: _body(repo, new["path"]) + "\nBy hand.\n"})
    r = cli("recent", "--since", "2026-11-20", "--until", "2026-11-29", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["since"] == "2026-11-20T00:00:00Z" and got["until"] == "2026-11-30T00:00:00Z"
    assert [(e["op"], e["nodes"]) for e in got["entries"]] == [
        ("commit", [new["id"]]), ("edit", [new["id"]]), ("add", [new["id"]])]
    everything = cli("recent", "--since", "2026-10-01", "--op", "add", "--json", cwd=repo.path).json()
    assert [e["nodes"] for e in everything["entries"]] == [[new["id"]], [old["id"]]]
    text = cli("recent", "--since", "2026-10-01", "-n", "1", cwd=repo.path).out
    assert text.splitlines()[0].split()[2] == "commit" and "more than 1" in text
    r = cli("recent", "--since", "yesterday-ish", cwd=repo.path)
    assert r.code == 2 and "is not a date" in r.err


def test_context_gives_the_neighbourhood_with_typed_edges_within_the_budget(repo: Repo, cli: Any) -> None:
    _seed(repo, {".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["notes/private.md"]\n',
                 "notes/private.md": "# Private\n\nSee [[notes/deploy]]. canary-c0ffee\n"})
    a = _remember(repo, cli, "Deploys happen on Tuesdays. " * 20, "--link", "related:notes/deploy")
    b = _remember(repo, cli, "The captain approves deploys. " * 20, "--link", f"related:{a['id']}")
    r = cli("context", a["id"], "--depth", "2", "--budget", "0", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert [(n["id"], n["distance"]) for n in got["nodes"]] == [(a["id"], 0), (b["id"], 1), ("notes/deploy", 1)]
    assert {(e["from"], e["field"], e["to"]) for e in got["edges"]} == {
        (a["id"], "related", "notes/deploy"), (b["id"], "related", a["id"])}
    assert "canary-c0ffee" not in r.out and "private" not in r.out
    small = cli("context", a["id"], "--depth", "2", "--budget", "560", "--json", cwd=repo.path).json()
    assert small["estimated_tokens"] <= 560 and small["trimmed"] == 2 and small["dropped"] == 0
    assert small["nodes"][0]["content"] == got["nodes"][0]["content"]  # the note's body is the last thing cut
    assert all("content" not in n and n["snippet"] for n in small["nodes"][1:])
    tiny = cli("context", a["id"], "--depth", "2", "--budget", "200", "--json", cwd=repo.path).json()
    assert tiny["estimated_tokens"] <= 200 and tiny["dropped"] == 2 and tiny["edges"] == []
    assert [n["id"] for n in tiny["nodes"]] == [a["id"]] and tiny["nodes"][0]["content"].endswith("…")
    r = cli("context", "notes/private", cwd=repo.path)
    assert r.code == 2 and "canary" not in r.err


# --- what an agent may ask of edit, retire, forget and move: each refusal word for word, nothing committed -----

_NOT_A_MEMORY = ("{id!r} is not a memory (a note of type memory in memories/); {op} changes only memories, so your own "
                 "notes stay yours: edit them yourself")
_BAD_PART = ("{to!r}: {part!r} cannot be part of a memory's path (no empty, `.` or `..` parts, no leading dot, none "
             "of [ ] | # ^ \\ : * ? \" < > or control characters)")
_NOT_MD = "{to!r}: a memory is a Markdown note; its name ends in .md"
_WINDOWS = ("{to!r}: {part!r} is a name Windows refuses (a device name such as con, aux or com1, or a name ending in a "
            "dot or a space), which Git for Windows cannot check out; choose another name")


def _service(repo: Repo) -> Any:
    from vivary_git.mcp.service import MemoryService

    return MemoryService(repo.path)


def _refused(call: Any, *args: Any, kind: type[Exception] | None = None, **kwargs: Any) -> str:
    from vivary_git.errors import RefusedError, UsageError

    with pytest.raises((RefusedError, UsageError)) as err:
        call(*args, **kwargs)
    if kind is not None:
        assert type(err.value) is kind, err.value
    return str(err.value)


def test_only_a_memory_in_the_memory_folder_is_changed(repo: Repo) -> None:
    """A note typed memory outside the folder (in a folder whose name only starts like it, too) is the user's own:
    refused by each tool, word for word; so is an id that names no memory."""
    from vivary_git.errors import RefusedError, UsageError

    _seed(repo, {"notes/typed.md": "---\ntype: memory\n---\n# Mine\n",
                 "memories-old/kept.md": "---\ntype: memory\n---\n# Mine too\n",
                 "memories/fine.md": "---\ntype: memory\n---\n# A memory\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    service = _service(repo)
    try:
        for ref in ("notes/typed", "memories-old/kept"):
            for op, call, args, kwargs in (("edit", service.edit, (ref,), {"append": "x"}),
                                           ("retire", service.retire, (ref,), {"reason": "x"}),
                                           ("forget", service.forget, (ref,), {"reason": "x"}),
                                           ("move", service.move, (ref, "elsewhere"), {})):
                said = _refused(call, *args, kind=RefusedError, **kwargs)
                assert said == _NOT_A_MEMORY.format(id=ref, op=op), (ref, op)
        for call, args, kwargs in ((service.edit, ("memories/none",), {"append": "x"}),
                                   (service.retire, ("memories/none",), {"reason": "x"}),
                                   (service.forget, ("memories/none",), {"reason": "x"}),
                                   (service.move, ("memories/none", "elsewhere"), {})):
            assert _refused(call, *args, kind=UsageError, **kwargs) == (
                "no public memory 'memories/none' in this workspace (ids come from `search`; private notes are never "
                "shown)")
        assert repo.git("rev-parse", "HEAD").strip() == head
        assert service.edit("memories/fine", append="Still mine to change.").changed
    finally:
        service.close()


def test_a_memory_type_the_workspace_gives_another_folder_is_still_the_users(repo: Repo) -> None:
    """A tropo.toml that declares its own `memory` type for another folder types those notes memory, outside the
    memory folder: they are the user's. A note left in the memory folder is then of no type, and no memory."""
    from vivary_git.errors import RefusedError

    _seed(repo, {"tropo.toml": 'version = 1\n[types.memory]\nfolder = "notes"\n', "notes/typed.md": "# Mine\n",
                 "memories/left.md": "# Left here\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    service = _service(repo)
    try:
        for ref in ("typed", "left"):
            for op, call, args, kwargs in (("edit", service.edit, (ref,), {"append": "x"}),
                                           ("retire", service.retire, (ref,), {"reason": "x"}),
                                           ("forget", service.forget, (ref,), {"reason": "x"}),
                                           ("move", service.move, (ref, "elsewhere"), {})):
                said = _refused(call, *args, kind=RefusedError, **kwargs)
                assert said == _NOT_A_MEMORY.format(id=ref, op=op), (ref, op)
    finally:
        service.close()
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_a_reason_is_one_line_of_at_most_200_characters(repo: Repo) -> None:
    from vivary_git.errors import UsageError

    _seed(repo, {"memories/a.md": "---\ntype: memory\n---\n# A\n", "memories/b.md": "---\ntype: memory\n---\n# B\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    service = _service(repo)
    try:
        for reason in ("", "  \n\t ", None):
            assert _refused(service.retire, "memories/a", reason=reason, kind=UsageError) == (
                "say why: retire takes a reason (one line), kept in the commit and the note")
            assert _refused(service.forget, "memories/a", reason=reason, kind=UsageError) == (
                "say why: forget takes a reason (one line), kept in the commit")
        assert _refused(service.retire, "memories/a", reason="r" * 201, kind=UsageError) == (
            "the reason is 201 characters, over 200; one line will do")
        assert _refused(service.forget, "memories/a", reason="r" * 20_000, kind=UsageError) == (
            "the reason is 10000 characters, over 200; one line will do")
        assert repo.git("rev-parse", "HEAD").strip() == head
        # 200 characters once on one line: taken, and written flat into the commit and the note
        reason = "  the freeze\nwas called\x00off " + "r" * 174 + "  "
        flat = "the freeze was called off " + "r" * 174
        assert len(flat) == 200
        assert service.retire("memories/a", reason=reason).changed
        assert _trailers(repo).endswith(f"Vivary-Reason: {flat}\n")
        assert f"archived_reason: {flat}\n" in _body(repo, "memories/a.md")
        assert service.forget("memories/b", reason="gone\r\nfor good").changed
        assert _trailers(repo) == ("Vivary-Op: forget\nVivary-Node: memories/b\nVivary-Source: agent\n"
                                   "Vivary-Reason: gone for good\n")
        assert repo.git("log", "-1", "--format=%s").strip() == "vivary: forget memories/b: gone for good"
    finally:
        service.close()


def test_expires_is_an_iso_date_or_date_time_written_as_given_or_in_utc(repo: Repo) -> None:
    from vivary_git.errors import UsageError

    _seed(repo, {"memories/a.md": "---\ntype: memory\ndurability: ephemeral\n---\n# A\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    service = _service(repo)
    try:
        for value in ("tomorrow", "2027-13-01", "2027-01-01T09:00:00.12345678901234+00:00:00", "2027-01-0"):
            assert _refused(service.edit, "memories/a", expires=value, kind=UsageError) == (
                f"expires {value!r} is not an ISO date or date-time (2026-07-01, 2026-07-01T09:00:00Z; UTC when no "
                "zone is given); \"\" removes it")
        assert repo.git("rev-parse", "HEAD").strip() == head
        for value, written in ((" 2027-01-01 ", '"2027-01-01"'), ("2099-01-01T09:30+02:00", '"2099-01-01T07:30:00Z"'),
                               ("2027-01-02T09:00:00.12345678901234+00:00", '"2027-01-02T09:00:00Z"'),
                               ("2027-01-01T09:00", '"2027-01-01T09:00:00Z"')):
            assert service.edit("memories/a", expires=value).changed, value
            assert f"expires: {written}\n" in _body(repo, "memories/a.md"), value
        assert service.edit("memories/a", expires=" ").changed  # blank: removed
        assert "expires" not in _body(repo, "memories/a.md")
    finally:
        service.close()


def test_where_a_memory_may_move_to(repo: Repo) -> None:
    """A bare name stays beside the note, a path is in the memory folder (with or without it in front); every
    other destination is refused word for word, nothing committed."""
    from vivary_git.errors import UsageError

    _seed(repo, {"memories/ops/a.md": "---\ntype: memory\n---\n# A\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    long_ok = "a" * 190 + "/" + "b" * 197  # memories/ + this + .md: 400 bytes
    accented = "é" * 100 + "/" + "b" * 188  # memories/ + this + .md: 301 characters, 401 bytes
    refused = [
        ("", "say where to: a new name, or a path in the memory folder"),
        (None, "say where to: a new name, or a path in the memory folder"),
        ("   ", "say where to: a new name, or a path in the memory folder"),
        ("/abs/alpha", "'/abs/alpha': give a name, or a path in the memory folder, e.g. ops/deploy-days"),
        ("\\abs\\alpha", "'\\\\abs\\\\alpha': give a name, or a path in the memory folder, e.g. ops/deploy-days"),
        ("alpha.txt", _NOT_MD.format(to="alpha.txt")),
        ("ops/v1.2", _NOT_MD.format(to="ops/v1.2")),
        ("ops/a.bcdef", _NOT_MD.format(to="ops/a.bcdef")),
        ("ops/v1.2.3", _NOT_MD.format(to="ops/v1.2.3")),  # what follows the last dot is the extension
        ("ops/a.bcdef.txt", _NOT_MD.format(to="ops/a.bcdef.txt")),
        ("v1.0/notes.txt", _NOT_MD.format(to="v1.0/notes.txt")),
        # Obsidian reads only `.md` as notes: a `.markdown` memory would be a file, out of the graph and of recall
        ("ops/f.markdown", "'ops/f.markdown': this vault is read as Obsidian reads it, and Obsidian reads only .md "
                           "files as notes: a memory at memories/ops/f.markdown would be a file, not a note; name it "
                           "f.md"),
        ("../notes/alpha", _BAD_PART.format(to="../notes/alpha", part="..")),
        ("ops/./x", _BAD_PART.format(to="ops/./x", part=".")),
        ("ops//x", _BAD_PART.format(to="ops//x", part="")),
        (".hidden", _BAD_PART.format(to=".hidden", part=".hidden.md")),
        ("ops/.git/x", _BAD_PART.format(to="ops/.git/x", part=".git")),
        ("a|b", _BAD_PART.format(to="a|b", part="a|b.md")),
        ("a:b", _BAD_PART.format(to="a:b", part="a:b.md")),
        ("a\x01b", _BAD_PART.format(to="a\x01b", part="a\x01b.md")),
        # Git for Windows refuses these names, so a commit holding one stops every Windows checkout
        ("con", _WINDOWS.format(to="con", part="con.md")),
        ("ops/AUX.md", _WINDOWS.format(to="ops/AUX.md", part="AUX.md")),
        ("ops./x", _WINDOWS.format(to="ops./x", part="ops.")),
        ("ops /x", _WINDOWS.format(to="ops /x", part="ops ")),
        ("lpt1", _WINDOWS.format(to="lpt1", part="lpt1.md")),
        (long_ok + "b", f"{long_ok + 'b'!r} is too long for a path"),
        (accented, f"{accented!r} is too long for a path"),
    ]
    service = _service(repo)
    try:
        for to, said in refused:
            assert _refused(service.move, "memories/ops/a", to, kind=UsageError) == said, to
        assert repo.git("rev-parse", "HEAD").strip() == head
        moves = [("b", "memories/ops/b.md"), ("  c  ", "memories/ops/c.md"), ("team\\d", "memories/team/d.md"),
                 ("memories/ops/e", "memories/ops/e.md"),
                 ("ops/notes.about-it", "memories/ops/notes.about-it.md"), ("ops/g.abcdef", "memories/ops/g.abcdef.md"),
                 ("memoriesx/h", "memories/memoriesx/h.md"), ("deploy days", "memories/memoriesx/deploy days.md"),
                 ("console", "memories/memoriesx/console.md"), (long_ok, f"memories/{long_ok}.md")]
        at, was = "memories/ops/a", "memories/ops/a.md"
        for to, path in moves:
            got = service.move(at, to)
            assert (got.changed, got.path, got.old_path) == (True, path, was), (to, got)
            assert set(repo.git("diff", "--no-renames", "--name-status", "HEAD~1", "HEAD").splitlines()) == {
                f"D\t{was}", f"A\t{path}"}
            at, was = got.id, got.path
        assert repo.git("ls-tree", "-r", "--name-only", "HEAD", "memories").split() == [f"memories/{long_ok}.md"]
    finally:
        service.close()


def test_an_edit_racing_a_move_of_its_memory_says_it_moved_not_that_it_is_yours(
        repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """An edit finds the memory, then another process moves it before the edit plans its commit on the branch's
    tip (two agents, or an agent and the user, at once). The edit said the memory was "new in your working tree;
    commit it first", which was false and sent the user to commit nothing. It now says another write moved it, and
    commits nothing: the moved memory is as the move left it."""
    from conftest import run_git_vivary

    from vivary_git.memory.writes import remember

    _seed(repo)
    tid = _remember(repo, cli, "Deploys happen on Tuesdays.")["id"]
    real = remember.open_view

    def then_moved(*args: Any, **kwargs: Any) -> Any:
        view = real(*args, **kwargs)
        moved = run_git_vivary(["move", tid, "ops/deploy-days"], repo.path)  # the other process, in between
        assert moved.returncode == 0, moved.stderr
        return view

    monkeypatch.setattr(remember, "open_view", then_moved)
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("edit", tid, "--append", "Never on Fridays.", cwd=repo.path)
    assert r.code == 3
    assert r.err == (f"git vivary edit: {tid!r} is no longer at {tid}.md: another write moved or removed it "
                     "while this one ran, so nothing was committed; `git vivary recent` says where it went\n")
    assert repo.git("log", "--format=%s", f"{head}..HEAD").startswith("vivary: move ")  # the move's, alone
    assert repo.git("rev-list", "--count", f"{head}..HEAD").strip() == "1"
    assert repo.git("status", "--porcelain") == ""
    assert "Never on Fridays." not in _body(repo, "memories/ops/deploy-days.md")
