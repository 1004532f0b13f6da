"""Pictures of a graph for people: Graphviz DOT and Mermaid, deterministic and safely quoted."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from vivary_git.escape import text
from vivary_git.models import Edge, Node


def _dot_quote(value: str) -> str:
    # Escaped as all text output (docs/output.md) before DOT's own quoting: no value can end a line.
    return '"' + text(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def dot(nodes: Sequence[Node], edges: Iterable[Edge], name: str = "vivary") -> str:
    lines = [f"digraph {_dot_quote(name)} {{", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    for n in nodes:
        label = n.id if n.type is None else f"{n.id}\\n({n.type})"
        lines.append(f"  {_dot_quote(n.id)} [label={_dot_quote(label).replace(chr(92) * 2 + 'n', chr(92) + 'n')}];")
    for e in edges:
        style = ", style=dashed, color=red" if e.broken else ""
        lines.append(f"  {_dot_quote(e.from_)} -> {_dot_quote(e.to)} [label={_dot_quote(e.field)}{style}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


_MERMAID_UNSAFE = re.compile(r'["<>{}\[\]()|`#;]')


def _mermaid_label(value: str) -> str:
    return _MERMAID_UNSAFE.sub(" ", text(value)).strip() or "?"


def mermaid(nodes: Sequence[Node], edges: Iterable[Edge], highlight: Iterable[str] = ()) -> str:
    """A `flowchart LR`; node keys are n0, n1… so no ID can break the syntax."""
    key: dict[str, str] = {}
    lines = ["flowchart LR"]
    for i, n in enumerate(nodes):
        key[n.id] = f"n{i}"
        label = n.id if n.type is None else f"{n.id}<br/>{n.type}"
        lines.append(f'  n{i}["{_mermaid_label(label).replace(" br/ ", "<br/>")}"]')
    missing = 0
    for e in edges:
        if e.to not in key:
            key[e.to] = f"m{missing}"
            lines.append(f'  m{missing}["{_mermaid_label(e.to)} (missing)"]')
            missing += 1
        if e.from_ not in key:
            continue
        arrow = "-.->" if e.broken else "-->"
        lines.append(f"  {key[e.from_]} {arrow}|{_mermaid_label(e.field)}| {key[e.to]}")
    marked = [key[h] for h in highlight if h in key]
    if marked:
        lines.append("  classDef changed fill:#fde68a,stroke:#b45309;")
        lines.append(f"  class {','.join(marked)} changed;")
    return "\n".join(lines) + "\n"
