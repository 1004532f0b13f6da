"""`graph --format dot`: every label is drawn as written, in DOT's own quoting, and no value can break the picture or
a CI log line. The references are what a note's author wrote (a target that names no note is drawn as it is), so
are type and field names in tropo.toml."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from typing import Any

import pytest
from conftest import Repo
from graph_labels import hostile

# What authors wrote: broken references, each drawn as a node labelled with the reference itself.
WRITTEN = [
    "::set-output name=x::1",
    'say "hi"',
    "line\n::one",
    "##[error]x ###[y",
    "back\\nslash \\N \\G \\l",
    "a<b>c & d &amp; &#35; &quot;",
    "esc\x1b tab\t rlo\u202e é 日本",
    "trail\\",
]

# One DOT quoted string: `\"` a quote, `\\` a backslash, `\n` a line break (Graphviz's escString), `&…;` entities.
QUOTED = r'"((?:[^"\\]|\\.)*)"'


def drawn(quoted: str) -> str:
    """A label as Graphviz draws it: its backslash escapes, then its character entities."""
    return html.unescape(re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), quoted))


def test_dot_labels_are_the_values_as_written_in_dots_quoting(repo: Repo, cli: Any) -> None:
    hostile(repo, WRITTEN)
    r = cli("graph", "--format", "dot", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0].startswith("digraph ") and lines[-1] == "}"
    assert '  "a" [label="a\\n(a::b \\"q\\")"];' in lines
    assert '  "::set-output name=x::1" [label="::set-output name=x::1"];' in lines
    assert '  "line\\n::one" [label="line\\n::one"];' in lines
    assert '  "back\\\\nslash \\\\N \\\\G \\\\l" [label="back\\\\nslash \\\\N \\\\G \\\\l"];' in lines
    assert '  "#&#35;[error]x ##&#35;[y" [label="#&#35;[error]x ##&#35;[y"];' in lines
    assert '  "a" -> "b" [label="::x|y"];' in lines
    # Nothing a CI runner reads as a command, nothing that ends a line, no `\x3a` for a reader to puzzle over.
    for line in lines[1:-1]:
        assert line.startswith("  ") and not line.lstrip().startswith("::"), line
        assert "##[" not in line and "\\x3a" not in line and line.isprintable(), repr(line)
    labels = [drawn(m.group(1)) for line in lines for m in [re.search(r"\[label=" + QUOTED, line)] if m]
    shown = {w.replace("\x1b", "\\x1b").replace("\t", "\\t").replace("\u202e", "\\u202e") for w in WRITTEN}
    assert shown | {"  ::lead", "::x|y", "depends", "a\n(a::b \"q\")"} <= set(labels)
    # Each node's name is one quoted string: every edge's ends are declared nodes, so no label comes from `\N`.
    declared = {m.group(1) for line in lines for m in [re.match(r"  " + QUOTED + r" \[label=", line)] if m}
    for line in lines:
        if m := re.match(r"  " + QUOTED + " -> " + QUOTED + " ", line):
            assert {m.group(1), m.group(2)} <= declared, line


def test_graphviz_draws_each_label_as_written(repo: Repo, cli: Any) -> None:
    graphviz = shutil.which("dot")
    if graphviz is None:
        pytest.skip("Graphviz is not installed, so it cannot draw the picture")
    hostile(repo, WRITTEN)
    picture = cli("graph", "--format", "dot", "--rev", "HEAD", cwd=repo.path).out
    proc = subprocess.run([graphviz, "-Tsvg"], input=picture, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    # Graphviz writes each line of a label as one <text>.
    texts = [t.text or "" for t in ET.fromstring(proc.stdout).iter("{http://www.w3.org/2000/svg}text")]
    assert texts.count('(a::b "q")') == 2 and "::x|y" in texts
    shown = [w.replace("\x1b", "\\x1b").replace("\t", "\\t").replace("\u202e", "\\u202e") for w in WRITTEN]
    for line in (x for w in shown for x in w.split("\n")):
        assert line in texts, (line, texts)
    assert "\xa0::lead" in " ".join(texts)  # Graphviz keeps a label's leading spaces, as no-break spaces
