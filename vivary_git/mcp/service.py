"""What the MCP server does, as a plain Python API: search, read, status and the memory writes, over
one workspace kept warm and always as fresh as the working tree.

`MemoryService` is that API: the read side (reads.py: `search`, `read`, `status`, `recent`, `context`, the node
and digest resources) and the write side (writes.py: `add`, `update`, `link`, `unlink`, `edit`, `retire`,
`forget`, `move`, `dream`, `onboard`) over one
warm state (warm.py: the working tree's tree kept current, the state patched when only notes changed,
`PROFILES` and `RESOURCES`). The server (server.py) is thin over it.

Freshness: no answer comes from an older tree than the one on disk; the server's own writes patch the state
without looking, so a memory is searchable right after `add`.

Privacy: every node, edge, search hit and neighbour comes from the privacy-filtered snapshot
(`memory/snapshot.py`); a private node is absent, never named, and asking for a private file by
path is refused with the reason.
"""

from __future__ import annotations

from vivary_git.mcp.reads import Reads
from vivary_git.mcp.writes import Writes

__all__ = ["MemoryService"]


class MemoryService(Reads, Writes):
    """One workspace for one agent host: `MemoryService(cwd, root=, profile=, source=)`. Thread-safe: one
    request at a time (a web page is fetched outside the lock, so a slow page holds up no other request)."""
