"""Agent memory as Git: every write is one note and one commit, made beside the user's own work.

Public modules (what `commands/` and `mcp/` may import):

- `remember`: add, update, link and unlink on a `View` (one workspace at one tree, privacy-filtered);
- `lifecycle`: edit, retire, forget and move a memory, each one commit;
- `commits`: a note, or several, as one commit on the branch by compare-and-swap, signed when the user's are;
- `history`: `git log` of a note with its `Vivary-*` trailers (a memory followed by its id, also once gone), and
  `recent`: the memory commits of a time window;
- `probe`, `probe_loader`: the near-duplicate probe run before every add, and the one a workspace asks for.

Its own: `notefile` (the smallest edit of a note's bytes), `renames` (the links to a moved note, rewritten),
`secrets` (the secret scan every write passes) and `surface` (an option named as the caller spells it: a CLI
flag, or an MCP tool's argument).
"""
