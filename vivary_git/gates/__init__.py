"""The gates Git already has, wired to the graph: hooks (pre-commit, post-commit, a server's
pre-receive) and CI review.

- `review`: base..head → one `Review` (the head tree's check plus the change's blast radius), pure
  apart from reading the two trees; `github`, `sarif` and `summary` render it for CI.
- `install`: plain Git hook scripts, installed next to (never over) hooks a repository already has; where a
  hook manager owns the hooks, the lines to add to its file instead. `lefthook`: that manager's config and scripts.
- `guard`: the staged-files privacy guard run by the pre-commit hook.
- `precommit`: the range the pre-commit framework names (CI, pre-push), for `check --pre-commit-range`.
- `prereceive`: the server's gate, a bare repository's pre-receive hook: the pushed refs read from stdin.
- `private`: what `ci` (and `check`, `graph`, `blast` where others read them) may say about private files.
- `runner`: whether a CI runner runs us (the one list of the variables runners set).
- `indexlog`: `.git/vivary/index.log`, where the hooks' background index runs write, each line said once.
- `autoindexing`: whether those runs index this clone (the hooks, the committed `auto_index`, the user's approval),
  for `hooks status`.
- `serverhook`: installs that hook on a server (hooks/pre-receive, or pre-receive.d/ for Gitea and Forgejo),
  and reports GitLab's custom_hooks.

Everything here imports lazily: the hook runs on every commit.
"""
