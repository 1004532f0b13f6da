"""The vault the picture tests (test_graph_dot.py, test_graph_mermaid.py) draw: a type and a field named with `::`,
quotes and `|`, and one note whose refs are what an author wrote, each a broken reference drawn as a node labelled
with the reference itself. Each format's test gives the values its own escaping must carry."""

from __future__ import annotations

import json

from conftest import Repo

TROPO = """version = 1
[types.'a::b "q"']
folder = "modules"
optional = { depends = "ref-list", '::x|y' = "ref" }
"""


def hostile(repo: Repo, written: list[str]) -> None:
    """Commit the vault, note `modules/a.md` referring to each of `written`."""
    repo.commit(files={
        "tropo.toml": TROPO,
        "modules/a.md": "---\ndepends: " + json.dumps(written) + "\n'::x|y': b\n---\n# A\n",
        "modules/b.md": "---\ndepends: ['  ::lead']\n---\n# B\n",
    })
