"""Dream, durability and the MEMORY.md digest: memory that stays small, every change a reviewable commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, killed_at

from vivary_git.memory.dream import dream as dream_mod
from vivary_git.memory.dream.accesslog import Log

DEPLOY = [
    "Deploys happen on Tuesdays, never on Fridays, so the release train leaves Tuesday morning.",
    "The deploy pipeline runs smoke tests before switching blue green traffic.",
    "A failed deploy is rolled back with the release rollback script in under ten minutes.",
    "Deploy freezes start two days before a holiday release.",
    "Only the release captain may approve a production deploy.",
    "Canary deploys get ten percent of traffic for an hour before the full release.",
]
COFFEE = [
    "The espresso machine in the office kitchen needs descaling every Monday.",
    "Office coffee beans are ordered from the roaster on the first of the month.",
    "Oat milk for the office coffee lives in the second fridge.",
    "The kitchen espresso grinder is set to fine grind for office coffee.",
    "Decaf coffee beans are in the blue tin in the office kitchen.",
    "Whoever empties the espresso machine drip tray refills the office coffee beans.",
]
HOST_TITLE = "Office coffee routine"
HOST_TEXT = ("Coffee beans, decaf in the blue tin, are ordered from the roaster monthly; the espresso machine is "
             "descaled on Mondays and its grinder set fine; oat milk is in the second fridge.")


def _seed(repo: Repo) -> None:
    repo.commit("init", {"notes/deploy.md": "# Deploy runbook\n\nHow we deploy.\n", ".gitignore": "USER.md\n",
                         "README.md": "# Home\n"})


def _trailers(repo: Repo, rev: str = "HEAD") -> list[str]:
    msg = repo.git("log", "-1", "--format=%B", rev)
    out = subprocess.run(["git", "interpret-trailers", "--parse"], input=msg, capture_output=True, text=True,
                         check=True).stdout
    return out.splitlines()


def _remember_all(repo: Repo, cli: Any, texts: list[str]) -> list[dict[str, Any]]:
    got = []
    for text in texts:
        r = cli("remember", text, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got.append(r.json())
    return got


def test_dream_compacts_two_topics_into_two_tasks_resolved_as_commits(repo: Repo, cli: Any) -> None:
    """The proof: 12 memories on two topics, dream_due, two tasks, one resolved by the host and one by the
    heuristic; the commits, the links, the digest, and search ranking the super node first."""
    mcp = pytest.importorskip("vivary_git.mcp.service")
    _seed(repo)
    added = _remember_all(repo, cli, [t for pair in zip(DEPLOY, COFFEE, strict=True) for t in pair])
    assert [a.get("dream_due") is not None for a in added] == [False] * 9 + [True] * 3
    assert "dream due" in added[-1]["dream_due"]
    deploy_ids = {a["id"] for a in added[0::2]}
    coffee_ids = {a["id"] for a in added[1::2]}

    r = cli("dream", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    run = r.json()
    assert run["action"] == "run" and run["run"]["method"] == "lexical"
    tasks = run["run"]["tasks"]
    assert sorted({s["id"] for s in t["sources"]} == deploy_ids for t in tasks) == [False, True]
    assert sorted({s["id"] for s in t["sources"]} == coffee_ids for t in tasks) == [False, True]
    for t in tasks:
        assert t["digest"] and t["prompt"] and t["id"] in t["prompt"]
    deploy_task = next(t for t in tasks if {s["id"] for s in t["sources"]} == deploy_ids)
    coffee_task = next(t for t in tasks if {s["id"] for s in t["sources"]} == coffee_ids)
    # a completed dream resets the due count
    assert cli("remember", "Lunch is at noon.", "--json", cwd=repo.path).json().get("dream_due") is None
    status = cli("dream", "--inspect", "status", "--json", cwd=repo.path).json()
    assert {t["id"] for t in status["tasks"]} == {deploy_task["id"], coffee_task["id"]}

    head = repo.git("rev-parse", "HEAD").strip()
    host = cli("dream", "--task-id", coffee_task["id"], "--title", HOST_TITLE, "--content", HOST_TEXT, "--json",
               cwd=repo.path)
    assert host.code == 0, host.err
    heur = cli("dream", "--task-id", deploy_task["id"], "--use-heuristic", "--json", cwd=repo.path)
    assert heur.code == 0, heur.err
    host_res, heur_res = host.json()["resolution"], heur.json()["resolution"]
    assert (host_res["by"], heur_res["by"]) == ("host", "heuristic")

    # two commits, each holding the super node and its six archived sources, with trailers
    assert repo.git("rev-parse", "HEAD~2").strip() == head
    for rev, res, ids in (("HEAD~1", host_res, coffee_ids), ("HEAD", heur_res, deploy_ids)):
        changed = set(repo.git("diff", "--name-only", f"{rev}~1", rev).split())
        assert changed == {f"{i}.md" for i in ids} | {res["path"]}
        trailers = _trailers(repo, rev)
        assert "Vivary-Op: dream" in trailers and f"Vivary-Node: {res['super_node']}" in trailers
        assert f"Vivary-Task: {res['task']}" in trailers
        assert {t.split(": ", 1)[1] for t in trailers if t.startswith("Vivary-Compacts: ")} == ids
    assert repo.git("status", "--porcelain") == ""  # MEMORY.md is ignored (.git/info/exclude), nothing else moved

    # the links: the super node compacts its sources; the sources are archived
    graph = cli("graph", "--json", cwd=repo.path).json()
    for res, ids in ((host_res, coffee_ids), (heur_res, deploy_ids)):
        edges = {e["to"] for e in graph["edges"] if e["from"] == res["super_node"] and e["field"] == "compacts"}
        assert edges == ids
    source = (repo.path / f"{sorted(coffee_ids)[0]}.md").read_text()
    assert "archived: " in source and "durability: working" in source
    super_note = (repo.path / host_res["path"]).read_text()
    assert "kind: super_node" in super_note and "durability: durable" in super_note and HOST_TEXT in super_note
    assert cli("check", cwd=repo.path).code == 0

    # the digest: both super nodes, fresh
    digest = (repo.path / "MEMORY.md").read_text()
    assert HOST_TITLE in digest and heur.json()["resolution"]["super_node"] in digest
    assert cli("digest", "--check", cwd=repo.path).code == 0
    assert repo.git("check-ignore", "MEMORY.md").strip() == "MEMORY.md"

    # search ranks the super node first for each topic; archived sources only when asked for
    service = mcp.MemoryService(repo.path)
    for query, res, ids in (("office coffee espresso", host_res, coffee_ids), ("deploy release", heur_res,
                                                                                deploy_ids)):
        ans = service.search(query, top_k=10)
        assert ans.results[0].id == res["super_node"], [h.id for h in ans.results]
        assert not ids & {h.id for h in ans.results}
        assert ans.hidden == 12
        wide = service.search(query, top_k=10, include_archived=True)
        assert wide.results[0].id == res["super_node"] and ids & {h.id for h in wide.results}
    assert HOST_TITLE in service.digest()
    service.close()
    done = cli("dream", "--inspect", "tasks", "--json", cwd=repo.path).json()["tasks"]
    assert {t["status"] for t in done} == {"resolved"}


def test_the_heuristic_summary_is_a_pure_function_of_the_sources() -> None:
    sources = [dream_mod.TaskSource(f"m{i}", f"m{i}.md", t, f"{i:040x}", "working", t) for i, t in enumerate(DEPLOY)]
    first = dream_mod.heuristic(sources)
    assert all(dream_mod.heuristic(sources) == first for _ in range(3))
    title, content, topic = first
    assert title == "Deploy, release, ten: what 6 memories say"
    assert topic == ["deploy", "release", "ten", "traffic"]
    lines = content.splitlines()
    assert lines and all(line.startswith("- ") and line[2:] in DEPLOY for line in lines)
    assert lines == sorted(lines, key=lambda line: DEPLOY.index(line[2:]))  # in the sources' order
    # the same in another process (no hash seed, clock or set order leaks in)
    code = ("import json; from vivary_git.memory.dream import dream as d; from test_dream import DEPLOY; "
            "s=[d.TaskSource(f'm{i}', f'm{i}.md', t, f'{i:040x}', 'working', t) for i, t in enumerate(DEPLOY)]; "
            "print(json.dumps(d.heuristic(s)))")
    env = dict(os.environ, PYTHONHASHSEED="12345", PYTHONPATH=str(Path(__file__).parent))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    assert json.loads(out) == [title, content, topic]


def test_clustering_is_deterministic_whatever_the_order(repo: Repo, cli: Any) -> None:
    _seed(repo)
    _remember_all(repo, cli, COFFEE + DEPLOY)
    first = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"]
    log = next((repo.path / ".git" / "vivary" / "dream").iterdir())
    for sub in ("runs", "state.json"):
        target = log / sub
        if target.is_dir():
            for p in target.iterdir():
                p.unlink()
        else:
            target.unlink()
    again = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"]
    assert [(t["id"], [s["id"] for s in t["sources"]], t["digest"]) for t in again] == \
        [(t["id"], [s["id"] for s in t["sources"]], t["digest"]) for t in first]


def test_due_policy(tmp_path: Path) -> None:
    log = Log(tmp_path / "log")
    t0 = 1_700_000_000.0
    for i in range(9):
        log.record("add", [f"m{i}"], when=t0 + i)
    assert not log.due(t0 + 60).due
    assert "due after 1 more" in log.due(t0 + 60).reason
    log.record("hit", ["m1", "m2"], when=t0 + 10)
    assert log.due(t0 + 60).due and log.due(t0 + 60).hint
    log.completed(t0 + 100)
    assert not log.due(t0 + 200).due and log.due(t0 + 200).events == 0
    for i in range(4):
        log.record("update", [f"m{i}"], when=t0 + 200 + i)
    day = 24 * 3600
    assert not log.due(t0 + 100 + day + 1).due  # 24 h passed, but only 4 events
    log.record("update", ["m9"], when=t0 + 300)
    assert not log.due(t0 + 100 + day - 1).due  # 5 events, not yet 24 h
    assert log.due(t0 + 100 + day + 1).due
    assert log.touched() == ["m9", "m3", "m2", "m1", "m0"]


def test_the_access_log_survives_a_torn_line_and_stays_bounded(tmp_path: Path) -> None:
    log = Log(tmp_path / "log")
    log.record("add", ["a"], when=1.0)
    assert log.events_path is not None
    with open(log.events_path, "ab") as fh:
        fh.write(b'{"t": 2.0, "op": "ad')  # a kill mid-write
    log.record("add", ["b"], when=3.0)  # lands on the torn line: that line is lost, nothing else
    log.record("add", ["c"], when=4.0)
    assert [e.ids for e in log.events()] == [["a"], ["c"]]
    for i in range(6000):
        log.record("hit", [f"memories/some-rather-long-memory-id-{i}"], when=10.0 + i)
    assert log.events_path.stat().st_size <= 256 * 1024 + 200
    assert log.events(limit=1)[0].ids == ["memories/some-rather-long-memory-id-5999"]


def test_a_killed_run_or_resolution_leaves_no_partial_commit_or_record(repo: Repo, cli: Any) -> None:
    _seed(repo)
    _remember_all(repo, cli, DEPLOY + COFFEE)
    head = repo.git("rev-parse", "HEAD").strip()
    # killed while recording the run: no run, the dream is still due
    killed_at(repo.path, ["dream"], "dream-record")
    assert cli("dream", "--inspect", "runs", "--json", cwd=repo.path).json()["runs"] == []
    assert cli("dream", "--inspect", "status", "--json", cwd=repo.path).json()["due"]["due"] is True
    tasks = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"]
    assert len(tasks) == 2
    # killed with the resolution's commit made but the branch not yet moved: nothing happened
    killed_at(repo.path, ["dream", "--task-id", tasks[0]["id"], "--use-heuristic"], "before-ref")
    assert repo.git("rev-parse", "HEAD").strip() == head
    assert repo.git("status", "--porcelain") == ""
    assert "archived" not in repo.git("grep", "-l", "archived", "--", "memories", check=False)
    assert {t["status"] for t in cli("dream", "--inspect", "tasks", "--json", cwd=repo.path).json()["tasks"]} \
        == {"open"}
    again = cli("dream", "--task-id", tasks[0]["id"], "--use-heuristic", "--json", cwd=repo.path)
    assert again.code == 0, again.err
    assert repo.git("rev-parse", "HEAD~1").strip() == head


def test_a_stale_or_resolved_task_is_refused(repo: Repo, cli: Any) -> None:
    _seed(repo)
    _remember_all(repo, cli, DEPLOY + COFFEE)
    tasks = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"]
    first, second = tasks
    assert cli("dream", "--task-id", first["id"], "--use-heuristic", cwd=repo.path).code == 0
    r = cli("dream", "--task-id", first["id"], "--use-heuristic", cwd=repo.path)
    assert r.code == 3 and "already resolved" in r.err
    path = repo.path / second["sources"][0]["path"]
    path.write_text(path.read_text() + "\nAn edit.\n")
    repo.git("commit", "-qam", "edit a memory")
    r = cli("dream", "--task-id", second["id"], "--use-heuristic", cwd=repo.path)
    assert r.code == 3 and "stale" in r.err
    r = cli("dream", "--task-id", "t-000000000000", "--use-heuristic", cwd=repo.path)
    assert r.code == 2 and "no dream task" in r.err
    r = cli("dream", "--task-id", second["id"], "--title", "T", cwd=repo.path)
    assert r.code == 2


def test_host_content_with_a_secret_is_refused(repo: Repo, cli: Any) -> None:
    _seed(repo)
    _remember_all(repo, cli, DEPLOY + COFFEE)
    task = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"][0]
    head = repo.git("rev-parse", "HEAD").strip()
    r = cli("dream", "--task-id", task["id"], "--title", "Keys", "--content",
            "The deploy key is AKIAIOSFODNN7EXAMPLE for the release.", cwd=repo.path)
    assert r.code == 3, r.err
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_not_due_is_a_deferred_reminder(repo: Repo, cli: Any) -> None:
    _seed(repo)
    _remember_all(repo, cli, DEPLOY[:3])
    r = cli("dream", "--json", cwd=repo.path)
    assert r.code == 0
    got = r.json()
    assert got["action"] == "deferred" and got["due"]["events"] == 3 and "due after 7 more" in got["message"]
    assert cli("dream", "--inspect", "runs", "--json", cwd=repo.path).json()["runs"] == []


def test_expired_ephemeral_memories_leave_search_and_are_removed_by_dream(repo: Repo, cli: Any) -> None:
    mcp = pytest.importorskip("vivary_git.mcp.service")
    _seed(repo)
    repo.commit("memories", {
        "memories/old-standup.md": "---\ntype: memory\ndurability: ephemeral\nexpires: \"2020-01-01\"\n---\n"
                                   "# The standup moved to the blue room today\n",
        "memories/soon-standup.md": "---\ntype: memory\ndurability: ephemeral\nexpires: \"2999-01-01\"\n---\n"
                                    "# The standup is in the green room this week\n",
    })
    service = mcp.MemoryService(repo.path)
    ids = [h.id for h in service.search("standup room").results]
    assert ids == ["memories/soon-standup"]
    service.close()
    r = cli("dream", "--force", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    run = r.json()["run"]
    assert run["expired"] == ["memories/old-standup"] and run["expire_commit"]
    assert not (repo.path / "memories/old-standup.md").exists()
    assert repo.git("diff", "--name-status", "HEAD~1", "HEAD").split() == ["D", "memories/old-standup.md"]
    assert "Vivary-Op: expire" in _trailers(repo)
    assert repo.git("status", "--porcelain") == ""


def test_dream_counts_only_the_expired_memories_its_commit_removes(repo: Repo, cli: Any) -> None:
    # The count came from the expired list, not the commit: a memory the user had edited was left alone (rightly)
    # and still counted as removed ("removed 4", the commit "removes 2").
    _seed(repo)
    expired = "---\ntype: memory\ndurability: ephemeral\nexpires: \"2020-01-01\"\n---\n"
    repo.commit("memories", {f"memories/e{i}.md": f"{expired}old {i}\n" for i in range(1, 5)})
    with (repo.path / "memories/e2.md").open("a") as f:
        f.write("edit\n")
    repo.write({"memories/e5.md": f"{expired}never committed\n"})
    r = cli("dream", "--force", cwd=repo.path)
    assert r.code == 0, r.err
    assert "removed 3 expired memories in" in r.out
    assert ("memories/e2.md: expired, left in place: has changes of yours that are not committed: commit or stash "
            "them") in r.out
    assert "memories/e5.md: expired, left in place: not committed: delete the file" in r.out
    assert repo.git("log", "-1", "--format=%s") == "vivary: dream removes 3 expired memories\n"
    assert repo.git("diff", "--name-only", "HEAD~1", "HEAD").split() == [f"memories/e{i}.md" for i in (1, 3, 4)]
    assert (repo.path / "memories/e2.md").read_text().endswith("edit\n")
    with (repo.path / "memories/e2.md").open("a") as f:
        f.write("more\n")
    run = cli("dream", "--force", "--json", cwd=repo.path).json()["run"]
    assert "expired" not in run and "expire_commit" not in run
    assert [(k["id"], k["path"]) for k in run["expired_kept"]] == [("memories/e2", "memories/e2.md"),
                                                                   ("memories/e5", "memories/e5.md")]
    (repo.path / "memories/e5.md").unlink()
    repo.git("checkout", "--", "memories/e2.md")
    r = cli("dream", "--force", cwd=repo.path)
    assert "removed 1 expired memory in" in r.out and "left in place" not in r.out
    assert repo.git("log", "-1", "--format=%s") == "vivary: dream removes 1 expired memory\n"


def test_each_surface_names_its_own_dream_options(repo: Repo, cli: Any) -> None:
    # The MCP tool answered with the CLI's flags ("--title and --content…, --use-heuristic, or --use-chat"):
    # its arguments are `title`, `content` and `use_heuristic`, and it has no chat.
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import asyncio

    from mcp import Client

    from vivary_git.mcp.server import build_server
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    tid = "t-000000000000"

    async def session() -> list[Any]:
        async with Client(build_server(MemoryService(repo.path))) as client:
            return [await client.call_tool("dream", args) for args in (
                {"task_id": tid}, {"task_id": tid, "title": "T"}, {"task_id": tid, "title": "T", "content": "C"},
                {})]

    no_way, half, unknown, deferred = asyncio.run(session())
    said = [" ".join(getattr(c, "text", "") for c in r.content) for r in (no_way, half, unknown)]
    assert no_way.is_error and half.is_error and unknown.is_error
    assert "resolve a task one way: `title` and `content` (your own summary) or `use_heuristic: true`" in said[0]
    assert "give both `title` and `content` (your compacted memory), or `use_heuristic: true`" in said[1]
    assert f"no dream task '{tid}' (see the `dream` tool with `inspect: \"tasks\"`)" in said[2]
    assert deferred.structured_content["message"].endswith("(run with `force: true` to dream now)")
    for text in [*said, deferred.structured_content["message"]]:
        assert "--" not in text and "chat" not in text, text

    r = cli("dream", "--task-id", tid, cwd=repo.path)
    assert r.code == 2
    assert ("resolve a task one way: `--title` and `--content` (your own summary), `--use-heuristic` or "
            "`--use-chat`") in r.err
    r = cli("dream", "--task-id", tid, "--title", "T", "--content", "C", cwd=repo.path)
    assert r.code == 2 and "(see `git vivary dream --inspect tasks`)" in r.err
    r = cli("dream", "--json", cwd=repo.path)
    assert r.json()["message"].endswith("(run with `--force` to dream now)")


def test_pinned_memories_are_never_compacted(repo: Repo, cli: Any) -> None:
    _seed(repo)
    for text in DEPLOY:
        assert cli("remember", text, "--durability", "pinned", cwd=repo.path).code == 0
    _remember_all(repo, cli, COFFEE)
    tasks = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"]
    assert len(tasks) == 1 and all("coffee" in s["text"].lower() or "espresso" in s["text"].lower()
                                   for s in tasks[0]["sources"])


def test_source_anchors_are_never_compacted(repo: Repo, cli: Any) -> None:
    """Anchors hold a source's text and are kept current by `refresh`: a dream leaves them alone however
    alike they are."""
    _seed(repo)
    for i, text in enumerate(DEPLOY):
        repo.write({f"docs/deploy-{i}.md": f"# Deploy {i}\n\n{text}\n"})
        repo.git("add", f"docs/deploy-{i}.md")
        repo.git("commit", "-qm", f"deploy {i}")
        r = cli("remember", "--file", f"docs/deploy-{i}.md", cwd=repo.path)
        assert r.code == 0, r.err
    _remember_all(repo, cli, COFFEE)
    run = cli("dream", "--json", "--force", cwd=repo.path).json()["run"]
    assert run["considered"] == len(COFFEE)  # the anchors are not candidates at all
    assert len(run["tasks"]) == 1 and all("coffee" in s["text"].lower() or "espresso" in s["text"].lower()
                                          for s in run["tasks"][0]["sources"])


# --- the digest ---------------------------------------------------------------------------------


def _memory(title: str, tier: str, when: str = "2026-01-01T00:00:00Z", **extra: str) -> str:
    more = "".join(f"{k}: {v}\n" for k, v in extra.items())
    return f"---\ntype: memory\ndurability: {tier}\nobserved_at: \"{when}\"\n{more}---\n# {title}\n\nBody of {title}.\n"


def test_the_digest_is_bounded_and_most_important_first(repo: Repo, cli: Any) -> None:
    files = {f"memories/durable-{i:03d}.md": _memory(f"Durable fact number {i:03d} about the service", "durable",
                                                    f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}Z")
             for i in range(300)}
    files["memories/pinned-one.md"] = _memory("Pinned rule", "pinned")
    files["memories/working.md"] = _memory("Working note", "working")
    files["memories/archived.md"] = _memory("Archived durable", "durable", archived='"2026-02-01T00:00:00Z"')
    repo.commit("memories", files)
    r = cli("digest", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["state"] == "written" and got["omitted"] > 0 and got["entries"] + got["omitted"] == 301
    text = (repo.path / "MEMORY.md").read_text()
    block = text[text.index("<!-- >>> vivary digest"):]
    assert len(block.splitlines()) <= 200 and len(block.encode()) <= 12 * 1024
    assert block.index("Pinned rule") < block.index("Durable fact number 299")  # pinned first, newest first
    assert block.index("number 299") < block.index("number 298")
    assert "Working note" not in block and "Archived durable" not in block
    assert f"… and {got['omitted']} more" in block
    assert text.startswith("# Memory (private)")
    assert cli("digest", "--check", cwd=repo.path).code == 0
    assert repo.git("status", "--porcelain") == ""  # kept out of Git by .git/info/exclude
    # the user's own text outside the markers is kept; a new pinned memory makes it stale
    (repo.path / "MEMORY.md").write_text(text + "\nMy own line.\n")
    repo.commit("more", {"memories/pinned-two.md": _memory("Second pinned rule", "pinned")})
    r = cli("digest", "--check", cwd=repo.path)
    assert r.code == 1 and "stale" in r.out
    assert cli("digest", cwd=repo.path).code == 0
    after = (repo.path / "MEMORY.md").read_text()
    assert "Second pinned rule" in after and after.endswith("\nMy own line.\n")


def test_the_digest_names_the_memories_whose_frontmatter_could_not_be_read(repo: Repo, cli: Any) -> None:
    # Their fields were read as empty, so a pinned one was silently "working" and left out: ok, 0 entries, no hint.
    canary = "canary-77b2-frontmatter"
    repo.commit("memories", {"memories/a.md": f"---\ntitle: [unclosed {canary}\ndurability: pinned\n---\nbody\n",
                             "memories/b.md": _memory("Readable rule", "pinned")})
    r = cli("digest", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["entries"] == 1 and got["unreadable"] == [{"path": "memories/a.md", "line": 2}]
    r = cli("digest", cwd=repo.path)
    assert r.code == 0
    assert ("memories/a.md:2: frontmatter could not be read, so this memory is not in the digest (it may be pinned "
            "or durable); `git vivary check` names the problem") in r.err
    r = cli("digest", "--check", cwd=repo.path)
    assert r.code == 0 and "memories/a.md:2: frontmatter could not be read" in r.err
    for r in (cli("digest", "--json", cwd=repo.path), cli("digest", "--check", cwd=repo.path)):
        assert canary not in r.out + r.err  # where, never what the file says
    repo.commit("fixed", {"memories/a.md": f"---\ntitle: closed {canary}\ndurability: pinned\n---\nbody\n"})
    got = cli("digest", "--json", cwd=repo.path).json()
    assert got["entries"] == 2 and got["unreadable"] == []


def test_a_tracked_memory_md_is_refused(repo: Repo, cli: Any) -> None:
    repo.commit("init", {"MEMORY.md": "# mine\n", "memories/a.md": _memory("A", "pinned")})
    r = cli("digest", cwd=repo.path)
    assert r.code == 3 and "tracked" in r.err
    assert (repo.path / "MEMORY.md").read_text() == "# mine\n"
    # --check said "missing … run `git vivary digest` to write it" (exit 1), sending the user to that refusal.
    for args in (["--check"], ["--check", "--json"]):
        r = cli("digest", *args, cwd=repo.path)
        assert r.code == 3 and r.out == "", r.out
        assert ("MEMORY.md is tracked by Git, so the digest (your pinned and durable memories and your profile) "
                "would reach the next commit and `git vivary digest` refuses to write it; untrack it "
                "(`git rm --cached -- MEMORY.md`, and keep it ignored), then run `git vivary digest`") in r.err
        assert "missing" not in r.err
    repo.git("rm", "-q", "--cached", "MEMORY.md")
    r = cli("digest", "--check", cwd=repo.path)
    assert r.code == 1 and "holds no digest block" in r.out


def test_a_symlinked_memory_md_is_refused_naming_digest_and_its_fix(repo: Repo, cli: Any, tmp_path: Path) -> None:
    # It said "bootstrap-host edits only real files … (… or configure this host by hand)": another command's fix.
    target = tmp_path / "elsewhere.md"
    target.write_text("# not mine to change\n")
    repo.commit("init", {".gitignore": "MEMORY.md\n", "memories/a.md": _memory("A", "pinned")})
    (repo.path / "MEMORY.md").symlink_to(target)
    for args in ([], ["--check"]):
        r = cli("digest", *args, cwd=repo.path)
        assert r.code == 3
        assert r.err == (f"git vivary digest: {repo.path / 'MEMORY.md'} is a symlink; digest edits only real files "
                         "inside the workspace (a link could point anywhere); remove the link (its target is kept) "
                         "and run `git vivary digest` again: it writes a new MEMORY.md\n")
    assert target.read_text() == "# not mine to change\n"


def test_digest_check_tells_a_memory_md_of_yours_without_a_digest_from_a_missing_one(repo: Repo, cli: Any) -> None:
    repo.commit("init", {".gitignore": "MEMORY.md\n", "memories/a.md": _memory("A", "pinned")})
    r = cli("digest", "--check", "--json", cwd=repo.path)
    assert r.code == 1 and r.json()["state"] == "missing"
    assert "MEMORY.md is missing (1 memories); run `git vivary digest` to write it" in cli(
        "digest", "--check", cwd=repo.path).out
    (repo.path / "MEMORY.md").write_text("# My own notes\n")
    r = cli("digest", "--check", "--json", cwd=repo.path)
    assert r.code == 1 and r.json()["state"] == "no-block"
    r = cli("digest", "--check", cwd=repo.path)
    assert r.code == 1
    assert r.out == ("vivary digest: MEMORY.md holds no digest block, only text of yours (1 memories); run "
                     "`git vivary digest` to add it (your text is kept)\n")
    assert cli("digest", cwd=repo.path).code == 0
    assert (repo.path / "MEMORY.md").read_text().startswith("# My own notes\n")
    assert cli("digest", "--check", cwd=repo.path).out.startswith("vivary digest: MEMORY.md is fresh (1 memories)")


def test_the_profile_is_in_the_digest_and_nowhere_else(repo: Repo, cli: Any) -> None:
    """The onboarding profile (private USER.md) reaches MEMORY.md and the digest resource, for the host, but no
    search answer, status, log, index or cache ref."""
    mcp = pytest.importorskip("vivary_git.mcp.service")
    canary = "canary-5d1e-profile"
    _seed(repo)
    assert cli("onboard", "--answer", f"name={canary}", cwd=repo.path).code == 0
    _remember_all(repo, cli, DEPLOY + COFFEE)
    cli("check", cwd=repo.path)
    assert cli("digest", cwd=repo.path).code == 0
    assert canary in (repo.path / "MEMORY.md").read_text()
    service = mcp.MemoryService(repo.path)
    assert canary in service.digest()
    said = [json.dumps(service.search(q, top_k=50, include_content=True, budget=0).results, default=str)
            for q in ("name profile canary", canary, "deploy")]
    said.append(json.dumps(service.dream(inspect="status"), default=str))
    run = service.dream()
    said.append(json.dumps(run, default=str))
    said.append(json.dumps(service.status(), default=str))
    said.append(str(service.read("notes/deploy", include_content=True)))
    service.close()
    import msgspec

    assert not [s for s in said if canary in s]
    assert canary not in json.dumps(msgspec.to_builtins(run))
    for path in (repo.path / ".git" / "vivary").rglob("*"):
        if path.is_file():
            assert canary.encode() not in path.read_bytes(), path
    refs = repo.git("for-each-ref", "--format=%(objectname)").split()
    assert repo.git("grep", "-l", canary, *refs, check=False) == ""
    assert "MEMORY.md" not in repo.git("ls-files") and "USER.md" not in repo.git("ls-files")


def test_status_lists_open_dream_tasks(repo: Repo, cli: Any) -> None:
    mcp = pytest.importorskip("vivary_git.mcp.service")
    _seed(repo)
    _remember_all(repo, cli, DEPLOY + COFFEE)
    service = mcp.MemoryService(repo.path)
    st = service.status()
    assert st.dream is not None and st.dream["due"] is True and st.dream["open_task_count"] == 0
    ans = service.dream()
    assert len(ans.run.tasks) == 2
    st = service.status()
    assert st.dream is not None and st.dream["due"] is False and st.dream["open_task_count"] == 2
    task = ans.run.tasks[0]
    res = service.dream(task_id=task.id, title="Compacted", content="One memory for the six.")
    assert res.resolution is not None
    assert service.search("compacted six").results[0].id == res.resolution.super_node
    assert service.status().dream["open_task_count"] == 1  # type: ignore[index]
    service.close()
    with pytest.raises(Exception, match="not available in the read-only profile"):
        mcp.MemoryService(repo.path, profile="read-only").dream()


def test_the_chat_provider_is_off_unless_allowed(repo: Repo, cli: Any) -> None:
    _seed(repo)
    _remember_all(repo, cli, DEPLOY + COFFEE)
    task = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"][0]
    r = cli("dream", "--task-id", task["id"], "--use-chat", cwd=repo.path)
    assert r.code == 2 and "no chat provider is configured" in r.err
    repo.commit("chat", {".vivary/memory.toml": '[memory.dream]\nchat = "openai-compatible"\n'
                         'url = "http://127.0.0.1:9/v1"\nmodel = "m"\n'})
    r = cli("dream", "--task-id", task["id"], "--use-chat", cwd=repo.path)
    assert r.code == 3 and "allow_network is false" in r.err


def test_recall_leaves_archived_and_expired_memories_out(repo: Repo, cli: Any) -> None:
    pytest.importorskip("hnswlib", reason="the embed extra is not installed")
    repo.commit("init", {
        ".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n',
        "memories/rotation.md": _memory("Signing keys rotate every ninety days", "durable"),
        "memories/rotation-old.md": _memory("Signing keys rotated every thirty days", "working",
                                            archived='"2026-02-01T00:00:00Z"'),
        "memories/rotation-today.md": "---\ntype: memory\ndurability: ephemeral\nexpires: \"2020-01-01\"\n---\n"
                                      "# Signing keys are rotating today\n",
        "notes/garden.md": "# Garden\n\nTomatoes need sun.\n",
    })
    assert cli("index", "--yes", cwd=repo.path).code == 0
    r = cli("recall", "signing keys rotation", "--k", "3", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    ids = [h["node_id"] for h in r.json()]
    assert ids[0] == "memories/rotation" and "notes/garden" in ids
    assert "memories/rotation-old" not in ids and "memories/rotation-today" not in ids


def test_the_chat_provider_resolves_a_task_when_allowed(repo: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat model cannot exist here: a loopback stub speaks the OpenAI-compatible API in its place."""
    import http.server
    import threading

    seen: list[dict[str, Any]] = []

    class Stub(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
            answer = {"title": "Deploy rules", "content": "Deploy on Tuesdays with canaries; the captain approves."}
            data = json.dumps({"choices": [{"message": {"content": json.dumps(answer)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Stub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _seed(repo)
        repo.commit("chat", {".vivary/memory.toml": '[memory.dream]\nchat = "openai-compatible"\n'
                             f'url = "http://127.0.0.1:{server.server_port}/v1"\nmodel = "stub"\n'
                             'api_key_env = "VIVARY_TEST_CHAT_KEY"\nallow_network = true\n'})
        _remember_all(repo, cli, DEPLOY + COFFEE)
        task = next(t for t in cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"]
                    if "deploy" in t["topic"])
        monkeypatch.setenv("VIVARY_TEST_CHAT_KEY", "k-123")
        # The committed file names the endpoint and the key's variable: nothing is sent until the user approves it.
        r = cli("dream", "--task-id", task["id"], "--use-chat", "--json", cwd=repo.path)
        assert r.code == 3 and "git config vivary.dreamChat http://127.0.0.1:" in r.err and not seen, r.err
        assert "k-123" not in r.out + r.err
        git(repo.path, "config", "vivary.dreamChat", f"http://127.0.0.1:{server.server_port}/v1")
        r = cli("dream", "--task-id", task["id"], "--use-chat", "--json", cwd=repo.path)
        assert r.code == 0, r.err
    finally:
        server.shutdown()
    res = r.json()["resolution"]
    assert res["by"] == "chat" and res["super_node"] == "memories/deploy-rules"
    assert seen[0]["path"] == "/v1/chat/completions" and seen[0]["auth"] == "Bearer k-123"
    assert seen[0]["body"]["model"] == "stub" and DEPLOY[0] in seen[0]["body"]["messages"][1]["content"]
    assert "source: dream" in (repo.path / res["path"]).read_text()


def test_a_reverted_resolution_opens_its_task_again_and_the_next_run_proposes_it(repo: Repo, cli: Any) -> None:
    """After `git revert` of a resolution the task said `resolved` and `dream --force` proposed nothing: the
    cluster was blocked for good. Its state now comes from history: open again, proposed once more, resolvable;
    and a resolution stays one without the local record (a clone knows what another resolved)."""
    _seed(repo)
    _remember_all(repo, cli, DEPLOY + COFFEE)
    first = cli("dream", "--json", cwd=repo.path).json()["run"]["tasks"][0]
    res = cli("dream", "--task-id", first["id"], "--use-heuristic", "--json", cwd=repo.path).json()["resolution"]
    repo.git("revert", "--no-edit", res["commit"])
    tasks = {t["id"]: t for t in cli("dream", "--inspect", "tasks", "--json", cwd=repo.path).json()["tasks"]}
    assert tasks[first["id"]]["status"] == "open"
    assert tasks[first["id"]]["reverted"]["commit"] == res["commit"]
    forced = cli("dream", "--force", "--json", cwd=repo.path).json()["run"]
    assert first["id"] in [t["id"] for t in forced["tasks"]]
    again = cli("dream", "--force", "--json", cwd=repo.path).json()["run"]
    assert first["id"] in again["skipped"] and first["id"] not in [t["id"] for t in again["tasks"]]
    redo = cli("dream", "--task-id", first["id"], "--use-heuristic", "--json", cwd=repo.path)
    assert redo.code == 0, redo.err
    for record in repo.path.joinpath(".git/vivary/dream").rglob("resolved/*.json"):
        record.unlink()
    tasks = {t["id"]: t for t in cli("dream", "--inspect", "tasks", "--json", cwd=repo.path).json()["tasks"]}
    assert tasks[first["id"]]["status"] == "resolved"
    assert tasks[first["id"]]["resolution"]["commit"] == redo.json()["resolution"]["commit"]
    assert tasks[first["id"]]["resolution"]["by"] == "heuristic"


def test_dream_leaves_a_memory_whose_frontmatter_cannot_be_read_alone_and_names_it(repo: Repo, cli: Any) -> None:
    """Its fields read as empty, so dream took it for `working`: a pinned memory was compacted and archived, and
    the digest written after the run did not say it left it out. Now the run leaves it alone and names it (where,
    never what it says), and so does the digest it writes."""
    _seed(repo)
    _remember_all(repo, cli, COFFEE)
    canary = "canary-51c9-frontmatter"
    broken = f"---\ntype: memory\ndurability: pinned\ntitle: [unclosed {canary}\n---\n# Coffee rule\n\n{COFFEE[0]}\n"
    repo.commit("a pinned memory with broken frontmatter", {"memories/coffee-rule.md": broken})
    r = cli("dream", "--force", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    got = r.json()
    assert got["run"]["unreadable"] == [{"path": "memories/coffee-rule.md", "line": 4}]
    assert got["run"]["considered"] == len(COFFEE)
    assert all(s["path"] != "memories/coffee-rule.md" for t in got["run"]["tasks"] for s in t["sources"])
    assert got["digest"] == "written" and got["digest_unreadable"] == [{"path": "memories/coffee-rule.md", "line": 4}]
    assert "1 unreadable memory alone" in got["message"]
    r = cli("dream", "--force", cwd=repo.path)
    assert r.code == 0, r.err
    assert ("vivary dream: memories/coffee-rule.md:4: frontmatter could not be read, so dream leaves this memory "
            "alone") in r.err and "`git vivary check` names the problem" in r.err
    assert "vivary dream: memories/coffee-rule.md:4: frontmatter could not be read, so this memory is not in the " \
        "digest" in r.err
    task = got["run"]["tasks"][0]["id"]
    r = cli("dream", "--task-id", task, "--use-heuristic", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["digest_unreadable"] == [{"path": "memories/coffee-rule.md", "line": 4}]
    assert (repo.path / "memories/coffee-rule.md").read_text() == broken  # never archived
    assert canary not in r.out + r.err
