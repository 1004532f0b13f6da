"""Dream: memories compacted into reviewable tasks, resolved as commits, and what they feed (docs/dream.md).

Public modules (what `commands/` and `mcp/` may import):

- `dream`: runs (expiry, clustering, compaction tasks) and resolutions (one commit each);
- `digest`: the private MEMORY.md digest an agent host reads at start-up;
- `durability`: the tiers (working, durable, pinned, ephemeral) and archived memories, for search and recall;
- `accesslog`: the local memory access log and the due policy;
- `corpus`: the public memories of a workspace with their frontmatter and text.

Its own: `chat` (the opt-in OpenAI-compatible chat provider for resolving tasks).
"""
