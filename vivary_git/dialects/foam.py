"""Foam's link rules (docs/vaults.md#foam), from Foam's own documentation (docs/user/features/wikilinks.md).

`[[name]]` and `[[folder/name]]` are identifiers: any path suffix naming a note; when several notes
match, Foam takes the first alphabetically. `[[./x]]`, `[[../x]]` and `[[/x]]` are paths. A link to
a folder opens its `index.md` or `README.md` (a `folder.md` beside it wins). Markdown links are
paths relative to the note. The target is before the `|`.
"""

from __future__ import annotations

from vivary_git.dialects import Resolution, Target, obsidian

read = obsidian.read


class Resolver(obsidian.Resolver):
    def resolve(self, target: Target, source: str) -> Resolution:
        name = target.name
        if not name:
            return Resolution(source, source)
        index = self.index
        if target.kind in ("m", "i", "r") or name.startswith(("/", "./", "../")):
            rel = obsidian.relative(source, name)
            if rel.startswith("../") or rel == "..":
                return Resolution(source, rel)  # leaves the workspace folder: not ours to check
            return Resolution(index.exact(rel) or self._folder(rel), rel)
        first = index.first(name)
        if first is not None:
            return Resolution(first, name)
        return Resolution(self._folder(name.strip("/")), name)

    def candidates(self, target: Target) -> list[str]:
        name = target.name
        if not name:
            return []
        if name.startswith(("/", "./", "../")):
            rel = obsidian.relative("", name)
            hit = self.index.exact(rel) or self._folder(rel)
            return [hit] if hit is not None else []
        found = self.index.named(name)
        if found:
            return sorted(found)
        folder = self._folder(name.strip("/"))
        return [folder] if folder is not None else []

    def _folder(self, path: str) -> str | None:
        path = path.rstrip("/")
        for index_name in ("index", "README"):
            hit = self.index.exact(f"{path}/{index_name}" if path else index_name)
            if hit is not None:
                return hit
        return None
