"""No import cycle in vivary_git: every `import` a module makes (at the top, under TYPE_CHECKING or
inside a function) is an edge, and the module graph has no cycle. A cycle hidden behind a lazy or
type-only import still ties the modules together: one cannot be read, tested or imported alone,
and moving an import to the top turns it into a crash at start-up."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "vivary_git"


def module_imports(package: Path) -> dict[str, set[str]]:
    """Module name -> the package's modules it imports, from the source (nothing is imported)."""
    names: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = ("vivary_git", *path.relative_to(package).with_suffix("").parts)
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        is_package = path.name == "__init__.py"
        found: set[str] = set()

        def add(target: str, *, name: str = name, found: set[str] = found) -> None:
            while target and target not in names:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)

        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    here = name.split(".") if is_package else name.split(".")[:-1]
                    here = here[: len(here) - node.level + 1]
                    base = ".".join(here + ([base] if base else []))
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    add(full if full in names else base)  # `from pkg import module` names the module
        graph[name] = found
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each strongly connected group of more than one module (Tarjan), as one cycle through it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group: list[str] = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(_one_cycle(graph, set(group)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return groups


def _one_cycle(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A shortest path from the group's first module back to itself, for the message."""
    start = min(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & group):
            if w == start:
                return [*paths[v], start]
            if w not in paths:
                paths[w] = [*paths[v], w]
                queue.append(w)
    return sorted(group)


def test_no_import_cycle() -> None:
    found = cycles(module_imports(PACKAGE))
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_a_cycle_through_a_lazy_or_type_only_import_is_found(tmp_path: Path) -> None:
    pkg = tmp_path / "vivary_git"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vivary_git.b import B\n")
    (pkg / "b.py").write_text("def f():\n    from vivary_git.sub import c\n")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "c.py").write_text("from .. import a\n")
    (pkg / "d.py").write_text("import vivary_git.a\n")
    graph = module_imports(pkg)
    assert graph["vivary_git.d"] == {"vivary_git.a"}
    assert cycles(graph) == [["vivary_git.a", "vivary_git.b", "vivary_git.sub.c", "vivary_git.a"]]
