"""`graph --format mermaid` (and the picture in `ci --summary`): every label is drawn as written, with Mermaid's own
escaping, and no value can break the diagram or a CI log line. The references are what a note's author wrote (a
target that names no note is drawn as it is), so are type and field names in tropo.toml."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo
from graph_labels import hostile
from npm_tools import npm_home, npm_install

# What authors wrote: broken references, each drawn as a `(missing)` node labelled with the reference itself.
WRITTEN = [
    "::set-output name=x::1",
    'say "hi"',
    "a[b](c){d}",
    "x|y",
    "a<b>c & d #quot; #35;",
    "line\n::one",
    "##[error]x `code` $$x^2$$ %%{init: {}}%%",
    "semi;colon %25",
    "back\\nslash",
    "esc\x1b tab\t rlo\u202e é 日本",
]


def drawn(label: str) -> str:
    """A label as Mermaid draws it: `#NNN;` is that character, `\\n` a line break (`<br/>` one too)."""
    return re.sub(r"#(\d+);", lambda m: chr(int(m.group(1))), label.replace("<br/>", "\n").replace("\\n", "\n"))


def test_mermaid_labels_are_the_values_as_written_in_mermaids_escaping(repo: Repo, cli: Any) -> None:
    hostile(repo, WRITTEN)
    r = cli("graph", "--format", "mermaid", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert lines[0] == "flowchart LR"
    assert '  n0["a<br/>a#58;#58;b #34;q#34;"]' in lines
    assert '["#58;#58;set-output name=x#58;#58;1 (missing)"]\n' in r.out
    assert '["line\\n#58;#58;one (missing)"]\n' in r.out and '["back#92;nslash (missing)"]\n' in r.out
    assert '["  #58;#58;lead (missing)"]\n' in r.out
    assert "  n0 -->|#58;#58;x#124;y| n1" in lines
    # Nothing a CI runner reads as a command, nothing that ends a line, no `\x3a` for a reader to puzzle over.
    for line in lines:
        assert not line.lstrip().startswith("::") and "##[" not in line and "\\x3a" not in line, line
        assert line.isprintable(), repr(line)
    labels = [m.group(1) for line in lines for m in [re.search(r'\["(.*)"\]$', line)] if m]
    missing = {drawn(x).removesuffix(" (missing)") for x in labels if x.endswith(" (missing)")}
    shown = {w.replace("\x1b", "\\x1b").replace("\t", "\\t").replace("\u202e", "\\u202e") for w in WRITTEN}
    assert missing == shown | {"  ::lead"}


# Mermaid draws labels in a browser; jsdom stands in for one, with text measured by its length.
RENDER = r"""
import { createRequire } from 'module';
import { pathToFileURL } from 'url';
import fs from 'fs';
const [mermaidModules, jsdomModules] = process.argv.slice(2);
const { JSDOM } = createRequire(jsdomModules + '/')('jsdom');
const dom = new JSDOM('<!doctype html><html><body></body></html>', { pretendToBeVisual: true });
for (const k of ['window', 'document', 'navigator', 'DOMParser', 'Element', 'HTMLElement', 'SVGElement', 'Node',
                 'CSSStyleSheet', 'MutationObserver', 'getComputedStyle']) {
  if (!(k in globalThis)) globalThis[k] = k === 'window' ? dom.window : dom.window[k];
}
globalThis.window = dom.window; globalThis.document = dom.window.document;
dom.window.SVGElement.prototype.getBBox = function () {
  return { x: 0, y: 0, width: 8 * (this.textContent || '').length + 1, height: 16 };
};
dom.window.SVGElement.prototype.getComputedTextLength = function () { return 8 * (this.textContent || '').length; };
const entry = mermaidModules + '/mermaid/dist/mermaid.core.mjs';
const { default: mermaid } = await import(pathToFileURL(entry).href);
mermaid.initialize({ startOnLoad: false });
const { svg } = await mermaid.render('g', fs.readFileSync(0, 'utf8'));
const doc = new JSDOM(svg).window.document;
const texts = [];
for (const el of doc.querySelectorAll('foreignObject')) {
  for (const br of el.querySelectorAll('br')) br.replaceWith('\n');
  if (el.textContent) texts.push(el.textContent);
}
console.log(JSON.stringify(texts));
"""


@pytest.fixture(scope="session")
def mermaid_render(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed, so Mermaid cannot draw the picture")
    home = npm_home(tmp_path_factory)
    script = tmp_path_factory.mktemp("mermaid") / "render.mjs"
    script.write_text(RENDER)
    return [node, str(script), str(npm_install(home, "mermaid@11.17.2")), str(npm_install(home, "jsdom@29.1.1"))]


def test_mermaid_draws_each_label_as_written(repo: Repo, cli: Any, mermaid_render: list[str], tmp_path: Path) -> None:
    hostile(repo, WRITTEN)
    picture = cli("graph", "--format", "mermaid", "--rev", "HEAD", cwd=repo.path).out
    proc = subprocess.run(mermaid_render, input=picture, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    texts = json.loads(proc.stdout)
    assert "a\na::b \"q\"" in texts and "b\na::b \"q\"" in texts
    assert "::x|y" in texts  # the field's name, on its arrow
    missing = {t.removesuffix(" (missing)") for t in texts if t.endswith(" (missing)")}
    # A control character stays visible as text output shows it (docs/output.md); a line break is one.
    assert missing == {w.replace("\x1b", "\\x1b").replace("\t", "\\t").replace("\u202e", "\\u202e")
                       for w in WRITTEN} | {"::lead"}  # Mermaid trims a label's leading spaces
