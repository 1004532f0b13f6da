"""The shared cache, refs/vivary/cache, and the verdict notes, refs/notes/vivary."""
