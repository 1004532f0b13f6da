"""Logseq's link rules (docs/vaults.md#logseq).

A page is a file in `pages/` (or a journal in `journals/`); its name is the file name, with `___`
(or the older `%2F`) for the `/` of a namespace (`a___b.md` is the page `a/b`), matched
case-insensitively. A `[[page]]` with no file is not broken: Logseq creates that page when it is
first linked, so it is an edge to a page without a file, not a finding.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence

from vivary_git.dialects import Resolution, Rules, Target, fold, obsidian

read = obsidian.read


def page_name(path: str) -> str:
    stem = obsidian.strip_note_suffix(path.rsplit("/", 1)[-1])
    return urllib.parse.unquote(stem.replace("___", "/").replace("%2F", "/").replace("%2f", "/"))


class Resolver(obsidian.Resolver):
    def __init__(self, rules: Rules, notes: Sequence[str], files: Sequence[str]) -> None:
        super().__init__(rules, notes, files)
        self.pages: dict[str, str] = {}
        for p in sorted(notes):
            self.pages.setdefault(fold(page_name(p), rules.case), p)
        self.case = rules.case

    def resolve(self, target: Target, source: str) -> Resolution:
        if target.kind in ("w", "e", "p") and target.name:
            hit = self.pages.get(fold(target.name, self.case))
            if hit is not None:
                return Resolution(hit, target.name)
        return super().resolve(target, source)

    def candidates(self, target: Target) -> list[str]:
        if target.name:
            hit = self.pages.get(fold(target.name, self.case))
            if hit is not None:
                return [hit]
        return super().candidates(target)
