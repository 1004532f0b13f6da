"""Agent hosts: write the `git vivary mcp` server entry into each host's own config file, a managed
guidance block into AGENTS.md / CLAUDE.md / GEMINI.md, and the user's onboarding profile into USER.md.

`kinds` says where each host reads what (docs/hosts.md cites the sources); `install` plans and applies
the changes (install, again, uninstall: byte-identical to the start); `jsonedit` and `blocks` are the
byte-preserving editors; `onboard` keeps the private profile.
"""
