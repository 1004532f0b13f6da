"""`graph.build` from documents' facts, as the shared cache hands them over: every ref a string of its own."""

from __future__ import annotations

from vivary_git import graph as graph_mod
from vivary_git.config import build_config
from vivary_git.dialects import Target


def fresh(text: str) -> str:
    """An equal string that is another object, as each decoded fact's strings are."""
    return "".join(list(text))


def test_edges_hold_each_id_and_field_name_once() -> None:
    # Sorting, caching and fingerprinting ~70,000 edges at 10,000 notes compare these strings: the node's
    # own id and one object per field name, instead of one copy per ref, are a third of that time.
    config = build_config({"types": {}}, None)
    docs = []
    for name in ("a", "b", "c"):
        refs = [(fresh("related"), 1, fresh(other)) for other in ("a", "b", "c", "gone") if other != name]
        links = [Target(2, "w", fresh("wikilink"), fresh(other), fresh(other)) for other in ("a", "b", "c")]
        docs.append((f"{name}.md", "0" * 40, graph_mod.Facts(fresh(name), None, name.upper(), [], refs, links,
                                                              False)))
    g = graph_mod.build("root", None, config, docs)
    ids = {n.id: n.id for n in g.nodes}
    assert [(e.from_, e.field, e.to, e.broken) for e in g.edges] == [
        ("a", "related", "b", False), ("a", "related", "c", False), ("a", "related", "gone", True),
        ("a", "wikilink", "b", False), ("a", "wikilink", "c", False),
        ("b", "related", "a", False), ("b", "related", "c", False), ("b", "related", "gone", True),
        ("b", "wikilink", "a", False), ("b", "wikilink", "c", False),
        ("c", "related", "a", False), ("c", "related", "b", False), ("c", "related", "gone", True),
        ("c", "wikilink", "a", False), ("c", "wikilink", "b", False),
    ]
    assert all(e.from_ is ids[e.from_] for e in g.edges)
    assert all(e.to is ids[e.to] for e in g.edges if not e.broken)
    assert len({id(e.field) for e in g.edges}) == 2
    assert [f.code for f in g.findings] == ["W220"] * 3  # each note's ref to `gone`, reported as before
