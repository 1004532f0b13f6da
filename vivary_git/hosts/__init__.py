"""Agent hosts: write the `git vivary mcp` server entry into each host's own config file, a managed
guidance block into AGENTS.md / CLAUDE.md / GEMINI.md, and the user's onboarding profile into USER.md.

`kinds` says where each host reads what (docs/hosts.md cites the sources); `install` edits and reads one
host's files (install, again, uninstall: byte-identical to the start) and says their state; `merged` what the
files a host merges with ours by server name do to our entry; `trust` whether the host starts the project's
servers at all (Codex's and Gemini CLI's trust in the folder, Claude Code's approval of the server); `bootstrap`
plans and applies the changes;
`jsonedit` and `blocks` are the byte-preserving editors; `onboard` keeps the private profile.
"""
