"""Semantic memory: a folder per job, and at the top the seam every job and provider shares.

The seam (what a provider may import, besides the package's shared top-level modules):

- `config`: `.vivary/memory.toml`, typed strictly, literal secrets refused;
- `snapshot`: the privacy-filtered snapshot, packets, fingerprint, dataset name;
- `provider`: the records every provider returns (`RecallHit`, `IndexReport`, ...) and the rules they share;
- `state`, `statefolder`: where a provider keeps its derived state, and which folder it may use;
- `lock`: one index writer per dataset, one memory write per repository.

The jobs, each naming its public modules (what `commands/` and `mcp/` may import) in its `__init__`:

- `local/`: the vivary-local provider (embeddings, HNSW, BM25; vectors in the shared cache);
- `cognee.py`: the Cognee provider, behind the same seam;
- `writes/`: add, update, link and unlink, each one commit; the near-duplicate probe, the secret scan, history;
- `dream/`: compaction runs and resolutions, the MEMORY.md digest, durability tiers, the access log;
- `sources/`: source anchors (a file, a folder, a web page), their text, the one network fetch.

Providers import the seam, never each other (tests/test_layout.py). Nothing heavy is imported here: see
`local/embed.py` for the embedder.
"""
