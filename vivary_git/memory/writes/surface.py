"""How a memory operation names its options to whoever called it: the command line's flags (`source`
"cli"), or the arguments of the MCP tools, which are the Python API's keyword arguments too (any other
source). A refusal that tells an agent to pass `--supersede` names an option its tool does not have."""

from __future__ import annotations

import json

__all__ = ["arg", "call", "flag"]


def arg(source: str, name: str) -> str:
    """An option that takes a value: `--content` / `content`."""
    return f"`--{name.replace('_', '-')}`" if source == "cli" else f"`{name}`"


def flag(source: str, name: str) -> str:
    """An on/off option, turned on: `--use-heuristic` / `use_heuristic: true`."""
    return f"`--{name.replace('_', '-')}`" if source == "cli" else f"`{name}: true`"


def call(source: str, command: str, **options: str | bool) -> str:
    """A whole call: `git vivary dream --inspect tasks` / the `dream` tool with `inspect: "tasks"`."""
    if source == "cli":
        words = [f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in options.items()]
        return f"`git vivary {' '.join([command, *words])}`"
    said = ", ".join(f"`{k}: {json.dumps(v)}`" for k, v in options.items())
    return f"the `{command}` tool" + (f" with {said}" if said else "")
