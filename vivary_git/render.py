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


# Mermaid's own escaping: `#NNN;` (a decimal character code) is drawn as that character. Each ASCII character
# that means something inside a label is written so: `"` (ends it), `#` (starts a code), `&` `<` `>` (HTML),
# `$` (maths), `%` `{` `}` (directives), `` ` `` (Markdown strings; a fence around the picture), `\` (Mermaid
# draws `\n` as a line break), `|` `[` `]` `(` `)` `;` (syntax). `:` too, so no `::` (a workflow command at a
# line's start) is ever in the picture, and `##[` cannot be either.
_MERMAID_SPECIAL = re.compile(r'["#$%&():;<>\[\\\]`{|}]')


def _mermaid_label(value: str) -> str:
    """A value as Mermaid draws it, exactly as written: its special characters as `#NNN;` codes, then escaped as
    all text output (docs/output.md), which leaves nothing else to change (no `:` or `#` remains) but a line break
    and the control characters. Each becomes a backslash escape, the only `\\` left: Mermaid draws `\\n` as the
    line break it stands for, the others (`\\t`, `\\xNN`, `\\u202e`) as they read."""
    return text(_MERMAID_SPECIAL.sub(lambda m: f"#{ord(m.group())};", value)) or "?"


def mermaid(nodes: Sequence[Node], edges: Iterable[Edge], highlight: Iterable[str] = ()) -> str:
    """A `flowchart LR`; node keys are n0, n1… so no ID can break the syntax."""
    key: dict[str, str] = {}
    lines = ["flowchart LR"]
    for i, n in enumerate(nodes):
        key[n.id] = f"n{i}"
        label = _mermaid_label(n.id) if n.type is None else f"{_mermaid_label(n.id)}<br/>{_mermaid_label(n.type)}"
        lines.append(f'  n{i}["{label}"]')
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
