"""Pictures of a graph for people: Graphviz DOT and Mermaid, deterministic and safely quoted."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from vivary_git.escape import controls, text
from vivary_git.models import Edge, Node

# DOT's quoted strings: `\"` is a quote, `\\` a backslash, `\n` a line break (Graphviz reads `\N`, `\G`, `\l`…
# in a label as its own codes, so every backslash is doubled). Graphviz also reads `&name;` / `&#NNN;` in a label as
# the character, so `&` is written `&amp;`, and `##[` (a legacy CI command anywhere in a line) as `#&#35;[`. Every
# value is inside quotes on a line that starts with spaces and a quote, so `::` never starts a line.
_DOT_SPECIAL = re.compile(r'["\\&\n]|##\[')
_DOT_CODES = {'"': '\\"', "\\": "\\\\", "&": "&amp;", "\n": "\\n", "##[": "#&#35;["}


def _dot_quote(value: str) -> str:
    """A value in DOT's quoting, drawn by Graphviz exactly as written: a line break is drawn as one; other controls
    (and bytes that are not UTF-8) are shown as all text output shows them (docs/output.md), `\\xNN` and so on."""
    return '"' + _DOT_SPECIAL.sub(lambda m: _DOT_CODES[m.group()], controls(value)) + '"'


def dot(nodes: Sequence[Node], edges: Iterable[Edge], name: str = "vivary") -> str:
    lines = [f"digraph {_dot_quote(name)} {{", "  rankdir=LR;", "  node [shape=box, fontsize=10];"]
    known = {n.id for n in nodes}
    for n in nodes:
        label = n.id if n.type is None else f"{n.id}\n({n.type})"
        lines.append(f"  {_dot_quote(n.id)} [label={_dot_quote(label)}];")
    for e in edges:
        style = ", style=dashed, color=red" if e.broken else ""
        for end in (e.from_, e.to):  # a broken reference's target: labelled with the reference as written
            if end not in known:
                known.add(end)
                lines.append(f"  {_dot_quote(end)} [label={_dot_quote(end)}];")
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
