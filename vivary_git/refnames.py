"""The names of the refs vivary shares, in a module that imports nothing: `sync fetch` starts Git on them
while the store (and msgspec) is still being imported."""

CACHE_REF = "refs/vivary/cache"
NOTES_REF = "refs/notes/vivary"
STAGING_PREFIX = "refs/vivary-fetch/"  # `sync fetch` lands here, is verified, then adopted
