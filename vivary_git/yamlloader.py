"""PyYAML's SafeLoader (the C one when libyaml is there, ~7x faster) with the plain-scalar rules of scalars.py.

Imported only when a note's frontmatter needs the full parser (parse.loader_class): most notes take the fast path
and never import PyYAML. A module of its own, not a class made inside a function, so that parse.py is plain enough
for mypyc, which compiles no class defined in a function.
"""

from __future__ import annotations

from typing import Any

import yaml

from vivary_git.scalars import BOOL, FLOAT, INT, whole_number

_BASE: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Loader(_BASE):  # type: ignore[valid-type,misc]
    """Plain scalars as scalars.py resolves them, keys as the text written, a duplicate key an error."""

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int | str:
        return whole_number(self.construct_scalar(node))

    def construct_yaml_float(self, node: yaml.ScalarNode) -> float:
        return float(self.construct_scalar(node))

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        # A value its explicit tag cannot read (`!!bool maybe`, `!!int x`, `!!timestamp soon`): PyYAML's
        # constructors fail with Python's own errors and no place; this names the value, the tag and its line.
        try:
            return super().construct_object(node, deep)
        except (ValueError, LookupError, TypeError, AttributeError, ArithmeticError):
            tag = str(node.tag).rsplit(":", 1)[-1]
            value = node.value if isinstance(node.value, str) else "this value"
            raise yaml.constructor.ConstructorError(
                None, None,
                f"{value[:80]!r} cannot be read as the tag `!!{tag}` says; remove the tag or fix the value",
                node.start_mark) from None

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[str, Any]:
        # A key is the text written (`~`, `true`, `1.0` stay those words; PyYAML would make them None, True
        # and 1.0, and `str()` of those "None", "True", "1.0"), as Obsidian shows a property. Two keys YAML
        # reads as one (the same text, or the same null, boolean or number: `~` and `null`, `0` and `-0`,
        # `1.0` and `1`) are a duplicate, at the second (a dict would keep one value and drop the other).
        if not isinstance(node, yaml.MappingNode):
            return dict(super().construct_mapping(node, deep))  # (raises, saying what it found instead)
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge" or not isinstance(key_node, yaml.ScalarNode):
                continue
            for same in {("str", key_node.value), _key_identity(key_node)}:
                first = seen.get(same)
                if first is not None:
                    err = yaml.constructor.ConstructorError(
                        None, first.start_mark, "duplicate key", key_node.start_mark)
                    err.duplicate = (first.value, key_node.value)  # type: ignore[attr-defined]  # (said by `_marked_words`)
                    raise err
                seen[same] = key_node
        self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark)
            mapping[key_node.value] = self.construct_object(value_node, deep=deep)
        return mapping


Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
_REPLACED = {
    "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp",
}
Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _REPLACED]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()
}
Loader.add_implicit_resolver("tag:yaml.org,2002:bool", BOOL, list("tTfF"))
Loader.add_implicit_resolver("tag:yaml.org,2002:int", INT, list("-+0123456789"))
Loader.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT, list("-+0123456789."))


def _key_identity(node: yaml.ScalarNode) -> tuple[str, Any]:
    """What a scalar key is to YAML: the null, the boolean, the number (`1.0` and `1` are one), else its text."""
    tag, text = node.tag, node.value
    if tag == "tag:yaml.org,2002:null":
        return ("null", None)
    if tag == "tag:yaml.org,2002:bool" and BOOL.match(text):
        return ("bool", text[0] in "tT")
    if tag == "tag:yaml.org,2002:int" and INT.match(text):
        number = whole_number(text)
        return ("number", number) if isinstance(number, int) else ("str", text)
    if tag == "tag:yaml.org,2002:float" and FLOAT.match(text):
        return ("number", float(text))
    return ("str", text)
