"""Derived data in Git: the `refs/vivary/cache` commit chain, shared by `git push` and `git fetch`, and
the verdict notes in `refs/notes/vivary`. docs/cache.md tells the whole story.

- `format`: the layout of a cache commit's tree, its chunks and their codecs, the manifest and its checks;
- `read`: one cache commit (`Snapshot`), read lazily and verified as it is read;
- `write`: cache commits by compare-and-swap, merging two caches, rebuilding one (gc), publishing;
- `trust`: what may read the cache (`vivary.cacheTrust`), signed cache commits and their verification;
- `refcache`: the cache as one run uses it (`RefCache`), and the state API for memory providers;
- `notes`: the per-commit verdict notes.

A cache may come from someone else's clone: reading it is reading untrusted input (read.py), and deciding
what may be written is record.py's job, not this package's.
"""
