"""Dialect name -> its module's `read` and `Resolver`."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vivary_git.dialects import Resolver, Rules, Target, dendron, foam, logseq, obsidian, vivary
from vivary_git.models import Link

Reader = Callable[[Link, Rules, str], Target | None]

_READERS: dict[str, Reader] = {
    "obsidian": obsidian.read, "dendron": dendron.read, "foam": foam.read, "logseq": logseq.read,
    "vivary": vivary.read,
}


def reader(dialect: str) -> Reader:
    return _READERS[dialect]


def make_resolver(rules: Rules, notes: Sequence[str], files: Sequence[str],
                  ids: Callable[[], dict[str, str]]) -> Resolver:
    if rules.dialect == "vivary":
        return vivary.resolver(rules, notes, files, ids)
    cls = {"dendron": dendron.Resolver, "foam": foam.Resolver, "logseq": logseq.Resolver}.get(rules.dialect,
                                                                                            obsidian.Resolver)
    return cls(rules, notes, files)
