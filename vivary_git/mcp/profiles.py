"""What each profile of `git vivary mcp` may do: its tools and its resources. A module of its own, with no
imports, so that `git vivary mcp -h` lists them (commands/mcp.py) without loading the server."""

from __future__ import annotations

__all__ = ["PROFILES", "RESOURCES", "listed"]

# Tool names by profile (CognitiveOS's host-core: search, read, add, update, link, unlink, dream).
PROFILES: dict[str, tuple[str, ...]] = {
    "host-core": ("search", "read", "add", "update", "link", "unlink", "dream", "status", "onboard", "edit", "retire",
                  "forget", "move", "recent", "context"),
    "read-only": ("search", "read", "status", "recent", "context"),
}
# Resources by profile. The digest holds the private MEMORY.md's block and USER.md's profile (name, role):
# a read-only host (a CI runner, an untrusted host) is served no private file's content.
RESOURCES: dict[str, tuple[str, ...]] = {
    "host-core": ("node", "memory-digest"),
    "read-only": ("node",),
}


def listed(names: tuple[str, ...]) -> str:
    """Names as a sentence lists them: `a, b and c`."""
    return f"{', '.join(names[:-1])} and {names[-1]}" if len(names) > 1 else "".join(names)
