"""How a plain YAML scalar resolves in a note's frontmatter: the rules parse.py's fast path and the PyYAML loader
(yamlloader.py) share. No PyYAML here: most notes are read without importing it."""

from __future__ import annotations

import re

# How plain scalars resolve: YAML 1.2-style, as Vivary workspaces are written and read. Only
# true/false are booleans (`yes`, `on` stay text), integers are decimal (`010` is 10, `1:30` and
# `0x10` stay text), `.inf`/`.nan` stay text, and dates stay the strings the user wrote, so
# `2026-13-45` is a finding about one field rather than a crash of the whole parse. The fast path
# (parse.py) applies these rules itself, so most notes are read without importing PyYAML at all (a
# pre-commit hook then starts ~20 ms sooner); the loader (yamlloader.py) gives PyYAML the same rules.
BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
INT = re.compile(r"^[-+]?[0-9](?:_?[0-9])*$")
FLOAT = re.compile(
    r"^[-+]?(?:[0-9](?:_?[0-9])*(?:\.(?:[0-9](?:_?[0-9])*)?)?|\.[0-9](?:_?[0-9])*)(?:[eE][-+]?[0-9]+)?$"
)
_NULL = frozenset(("", "~", "null", "Null", "NULL"))  # PyYAML's null resolver, kept
_YAML_ONLY = frozenset(("<<", "="))  # PyYAML's merge and value resolvers, kept: left to PyYAML


def plain_kind(text: str) -> str:
    """What a plain scalar resolves to under our loader: "null", "bool", "int", "float", "str", or
    "yaml" (a merge/value key, for PyYAML to handle). The first matching resolver wins, as in PyYAML."""
    if text in _NULL:
        return "null"
    if text in _YAML_ONLY:
        return "yaml"
    if BOOL.match(text):
        return "bool"
    if INT.match(text):
        return "int"
    if FLOAT.match(text):
        return "float"
    return "str"


# The whole numbers a note's value may hold as a number: what msgpack (the caches) and msgspec hold. A longer
# one (a 25-digit identifier, 5,000 nines) is kept as the text written: Python refuses int() of over 4,300
# digits, and the caches any integer past 64 bits.
_WHOLE_MIN, _WHOLE_MAX = -(2**63), 2**64 - 1


def whole_number(text: str) -> int | str:
    """A YAML integer (`INT`) as a number, or as the text written when it is outside 64 bits."""
    if len(text) > 24:  # (no 64-bit number takes more, with sign and underscores)
        digits = text.lstrip("+-").replace("_", "")
        if len(digits.lstrip("0")) > 20:
            return text
    value = int(text)
    return value if _WHOLE_MIN <= value <= _WHOLE_MAX else text
