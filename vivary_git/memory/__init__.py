"""Optional local semantic memory. Nothing heavy is imported here: see `embed` for the embedder."""
