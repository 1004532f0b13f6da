"""Source anchors: memories that say where something is — a file, a folder or a web page (docs/remember.md).

Public modules (what `commands/` and `mcp/` may import):

- `anchors`: `remember --file/--folder/--url` and `refresh`, one note and one commit per anchor.

Its own: `extract` (a file's or page's readable text, bounded) and `fetch` (the one network fetch in
vivary-git: opt-in, bounded, anonymous).
"""
