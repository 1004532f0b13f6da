"""vivary-local: the offline semantic-memory provider (embeddings + hnswlib + BM25, fingerprint-gated).

Public modules (what `commands/` and `mcp/` may import):

- `provider`: `LocalMemory`, index / recall / forget for one workspace at one tree;
- `recall`: `RecallSession`, a verified, loaded index for many queries;
- `writethrough`: the index brought up to a snapshot a few notes away by a process that has the model loaded;
- `runtime`: what the provider needs installed, `preload_runtime` (recall's head start);
- `embed`: the verified offline embedder (model id, status, loading);
- `files`: the index's files and formats, `embed_text` (what is embedded for a packet);
- `vectors`: vectors keyed by content in `refs/vivary/cache`;
- `vectorvalue`: a stored vector's value and its check, for the shared cache's own checks.
- `folders`: which workspace each state folder under `.git/vivary/memory/` is for, and which are dead (`cache gc`);
- `autoindex`: whether auto-indexing is approved here (`vivary.autoIndex` in the user's own Git config).

Its own: `index` (an index run), `assemble` (recall of a tree the index was not built from), `bm25` and
`lexical_update` (the keyword index), `siblings` (this repository's other state folders, whose vectors `index`
takes), `signals` (what the notes' frontmatter and names add to hybrid's fused
ranking). Like every provider it imports only the seam (`memory/`'s own
modules) and the package's shared modules. Nothing here imports numpy, hnswlib or onnxruntime at the top.
"""
