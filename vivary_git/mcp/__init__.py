"""The MCP server (`git vivary mcp`): agent hosts search, read and remember through Git.

`service.py` is the whole behaviour as a plain Python API (no MCP SDK needed); `server.py` exposes it
over MCP with the official SDK (the `mcp` extra), imported only by `git vivary mcp`.
"""
