"""What a long MCP session leaves in the repository: its memory commits, and nothing that grows with its calls.

The server's own writes are not recorded in `refs/vivary/cache` (each recorded tree was two cache commits, whose
objects went unreachable, and stayed loose for two weeks, once the chain restarted); the next command that reads
the tree records what the cache lacks, so nothing is lost to other clones (docs/mcp.md, "A session that lasts all
day")."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from conftest import Repo

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("mcp") is None or importlib.util.find_spec("hnswlib") is None,
    reason="needs the mcp and embed extras",
)

LOCAL = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
    "README.md": "# Home\n\nSee [[notes/deploy]].\n",
}
ANIMALS = ["quokka", "wombat", "walrus", "heron", "otter", "lynx", "ibis", "marmot", "tapir", "okapi"]
PLACES = ["harbour", "orchard", "quarry", "glacier", "meadow", "lagoon", "canyon", "delta", "tundra", "atoll"]


def _not_the_users(repo: Repo) -> int:
    """Objects in the repository that no branch, tag or HEAD reaches: the cache's, and what is unreachable."""
    every = set(repo.git("cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())
    users = {line.split()[0] for line in repo.git("rev-list", "--objects", "--branches", "--tags", "HEAD").splitlines()}
    return len(every - users)


def _cache_tip(repo: Repo) -> str:
    return repo.git("rev-parse", "-q", "--verify", "refs/vivary/cache", check=False).strip()


def test_the_servers_own_writes_leave_nothing_that_grows_with_the_calls(repo: Repo, cli: Any) -> None:
    from vivary_git.mcp.service import MemoryService

    repo.commit("init", {**NOTES, ".vivary/memory.toml": LOCAL})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    service = MemoryService(repo.path)
    assert service.search("how do we deploy").mode == "hybrid"
    ids: list[str] = []

    def writes(n: int) -> None:
        for _ in range(n):
            i = len(ids)
            added = service.add(f"The {ANIMALS[i % 10]} of the {PLACES[i // 10 % 10]} counts {i} {PLACES[i % 10]} "
                                f"stones on day {i * 7}.")
            assert added.ok, added
            ids.append(added.id)
            assert service.edit(added.id, append=f"Seen again at the {PLACES[(i + 3) % 10]}.").ok

    writes(3)
    tip, after_few = _cache_tip(repo), _not_the_users(repo)
    writes(22)  # 50 writes in all
    assert _not_the_users(repo) <= after_few + 4, "the server's writes left objects of their own"
    assert _cache_tip(repo) == tip
    assert service.search("which animal counts stones").mode == "hybrid"
    service.close()

    # Nothing is lost: the next commands that read the tree record what the session wrote.
    assert cli("check", cwd=repo.path).code == 0
    assert _cache_tip(repo) != tip
    head_tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    assert f"tree {head_tree[:12]}, 25 parse(s)" in repo.git("log", "-1", "--format=%s", "refs/vivary/cache")
    report = cli("index", "--yes", "--json", cwd=repo.path).json()
    assert (report["embedded"], report["recorded"]) == (0, 25)
