"""The duplicate probe of `add` sees the tree the read tools see: the working tree as it is on disk. A memory the
user deleted (or rewrote) there, not yet committed, is no duplicate of a new one, over MCP and on the command line."""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp import Client
from mcp.client.stdio import StdioServerParameters

FACT = "Parking spot 17 belongs to the night shift."


def _seed(repo: Repo) -> None:
    repo.commit("init", {"notes/garage.md": "# Garage\n\nThe garage opens at six.\n", "README.md": "# Home\n"})


def test_a_memory_deleted_on_disk_is_no_duplicate_over_mcp(repo: Repo) -> None:
    _seed(repo)
    params = StdioServerParameters(command=sys.executable, args=["-m", "vivary_git.main", "mcp"],
                                   cwd=str(repo.path), env=dict(os.environ))

    async def session() -> tuple[Any, ...]:
        async with Client(params) as client:
            first = (await client.call_tool("add", {"text": FACT})).structured_content
            (repo.path / first["path"]).unlink()  # the user deletes it, and commits nothing
            read = await client.call_tool("read", {"id": first["id"]})
            again = (await client.call_tool("add", {"text": FACT})).structured_content
            update = await client.call_tool("update", {"id": first["id"], "text": FACT})
            return first, read, again, update

    first, read, again, update = asyncio.run(session())
    assert first["ok"] is True
    assert read.is_error and "no public node" in read.content[0].text
    assert update.is_error and "no public memory" in update.content[0].text
    assert again["ok"] is True and again.get("verdict") in ("new", None), again
    assert again["id"] != first["id"] and (repo.path / again["path"]).is_file()
    assert not (repo.path / first["path"]).exists()  # the user's deletion stays theirs


def test_a_memory_rewritten_on_disk_is_compared_as_it_is_there(repo: Repo, cli: Any) -> None:
    _seed(repo)
    r = cli("remember", FACT, "--json", cwd=repo.path)
    assert r.code == 0, r.err
    path = repo.path / r.json()["path"]
    path.write_text(path.read_text("utf-8").replace(FACT, "The garage roof is repaired in May."), "utf-8")
    again = cli("remember", FACT, "--json", cwd=repo.path)
    assert again.code == 0, again.out + again.err
    assert again.json()["ok"] is True
    dup = cli("remember", "The garage roof is repaired in May.", "--json", cwd=repo.path)
    assert dup.code == 3 and dup.json()["verdict"] == "duplicate", dup.out
    assert dup.json()["duplicate"]["id"] == r.json()["id"]
