"""The MCP server (`git vivary mcp`): agent hosts search, read and remember through Git.

- `service`: `MemoryService`, the whole behaviour as a plain Python API (no MCP SDK needed);
- `warm`: the one workspace it keeps warm and as fresh as the working tree, and what each profile may do;
- `reads`: search, read, status, recent, context and the resources (`paging`: search's time window and cursor);
- `writes`: add (and source anchors), update, link, unlink, edit, retire, forget, move, dream and onboard;
- `usermem`: the user's own memory repository (`vivary.userMemory` in the global config), searched beside the
  workspace, read and added to with scope user;
- `freshness`: the working tree's tree kept current from folder watches;
- `server`: the service over MCP with the official SDK (the `mcp` extra), imported only by `git vivary mcp`.
"""
