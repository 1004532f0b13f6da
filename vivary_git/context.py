"""One note and its typed graph neighbourhood, cut to a token budget: what an agent reads before it acts.

basic-memory's `build_context`, here over typed edges: the note, every node within `depth` edges of it in
either direction (nearest first, then by id), and every edge between them with its field. Pure: it takes
the nodes, the edges by node and a way to read a node's body, and returns values; the callers
(`git vivary context`, the MCP `context` tool) hand it only what the privacy boundary admits.

The budget (tokens, as the answer's JSON length / 4) is met by cutting, in this order: the neighbours' bodies
to a snippet (the farthest first), the note's own body to its first 1,000 characters, the farthest neighbours
with their edges, then the note's own body to a snippet. The answer says what was cut; a budget too small for
the note's snippet alone is exceeded by that much.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Protocol, TypeVar

import msgspec

__all__ = ["MAX_DEPTH", "MAX_NODES", "Context", "ContextEdge", "ContextNode", "adjacency", "build"]

MAX_DEPTH = 3
MAX_NODES = 200
CONTENT = 20_000  # characters of one body at most
SNIPPET = 200
OWN_FLOOR = 1_000  # characters of the note's own body kept before neighbours are left out


class NodeLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def type(self) -> str | None: ...
    @property
    def title(self) -> str: ...
    @property
    def path(self) -> str: ...


class ContextNode(msgspec.Struct, omit_defaults=True):
    id: str
    type: str | None
    title: str
    path: str
    distance: int  # edges from the note (0: the note itself)
    content: str | None = None  # its body, bounded
    snippet: str | None = None  # its first words, when the budget left no room for the body


class ContextEdge(msgspec.Struct, frozen=True, order=True):
    source: str = msgspec.field(name="from")
    field: str = ""
    to: str = ""


class Context(msgspec.Struct, frozen=True, omit_defaults=True):
    id: str
    depth: int
    budget: int
    estimated_tokens: int
    nodes: list[ContextNode]  # the note first, then by distance and id
    edges: list[ContextEdge]  # every edge between those nodes, with its field
    dropped: int  # neighbours left out for the budget (or past MAX_NODES)
    trimmed: int  # bodies cut to a snippet or shortened for the budget


def adjacency(edges: Iterable[tuple[str, str, str]]) -> tuple[dict[str, list[tuple[str, str]]],
                                                               dict[str, list[tuple[str, str]]]]:
    """(outbound `{from: [(field, to)]}`, inbound `{to: [(from, field)]}`) of `(from, field, to)` edges."""
    out: dict[str, list[tuple[str, str]]] = {}
    inn: dict[str, list[tuple[str, str]]] = {}
    for source, field, to in edges:
        out.setdefault(source, []).append((field, to))
        inn.setdefault(to, []).append((source, field))
    return out, inn


def _size(value: object) -> int:
    return len(msgspec.json.encode(value))


def _snippet(body: str) -> str:
    flat = " ".join(body.split())
    return flat if len(flat) <= SNIPPET else flat[: SNIPPET - 1].rstrip() + "…"


def _bounded(body: str) -> str:
    return body if len(body) <= CONTENT else body[:CONTENT] + "\n…(truncated)"


def build(start: str, nodes: Mapping[str, NodeLike], out: Mapping[str, Sequence[tuple[str, str]]],
          inn: Mapping[str, Sequence[tuple[str, str]]], body: Callable[[str], str], *, depth: int = 1,
          budget: int = 2000, include_content: bool = True) -> Context:
    """The context of node `start` (which must be in `nodes`): see the module docstring. `budget` 0: no cut
    (but MAX_NODES neighbours at most)."""
    order: list[tuple[str, int]] = [(start, 0)]
    seen = {start}
    queue: deque[tuple[str, int]] = deque([(start, 0)])
    dropped = 0
    while queue:
        nid, dist = queue.popleft()
        if dist >= depth:
            continue
        near = sorted({to for _, to in out.get(nid, ())} | {src for src, _ in inn.get(nid, ())})
        for other in near:
            if other in seen or other not in nodes:
                continue
            seen.add(other)
            if len(order) >= MAX_NODES:
                dropped += 1
                continue
            order.append((other, dist + 1))
            queue.append((other, dist + 1))
    picked = []
    for nid, dist in order:
        n = nodes[nid]
        text = body(nid)
        picked.append(ContextNode(id=n.id, type=n.type, title=n.title, path=n.path, distance=dist,
                                  content=_bounded(text) if include_content else None,
                                  snippet=None if include_content else _snippet(text) or None))
    kept = {n.id for n in picked}
    edges = sorted({ContextEdge(src, f, to) for src in kept for f, to in out.get(src, ()) if to in kept})
    trimmed = 0
    shell = _size(Context(id=start, depth=depth, budget=budget, estimated_tokens=10**9, nodes=[], edges=[],
                          dropped=10**6, trimmed=10**6))
    sizes = [_size(n) + 1 for n in picked]
    edge_sizes = {e: _size(e) + 1 for e in edges}
    total = shell + sum(sizes) + sum(edge_sizes.values())
    limit = budget * 4
    if budget > 0:
        for i in range(len(picked) - 1, 0, -1):  # the neighbours' bodies, farthest first
            if total <= limit:
                break
            n = picked[i]
            if n.content is not None:
                n.snippet, n.content = (_snippet(n.content) or None), None
                trimmed += 1
                total += _size(n) + 1 - sizes[i]
                sizes[i] = _size(n) + 1
        own = picked[0]
        for floor in (OWN_FLOOR, SNIPPET):  # the note's body down to a floor, then the farthest neighbours
            if total > limit and own.content and len(own.content) > floor:
                room = max(floor, len(own.content) - (total - limit) - 1)
                own.content = own.content[:room].rstrip() + "…"
                trimmed += 1
                total += _size(own) + 1 - sizes[0]
                sizes[0] = _size(own) + 1
            while floor == OWN_FLOOR and total > limit and len(picked) > 1:
                gone = picked.pop()
                total -= sizes.pop()
                dropped += 1
                for e in [e for e in edges if gone.id in (e.source, e.to)]:
                    total -= edge_sizes.pop(e)
                    edges.remove(e)
    answer = Context(id=start, depth=depth, budget=budget, estimated_tokens=0, nodes=picked, edges=edges,
                     dropped=dropped, trimmed=trimmed)
    return with_own_size(answer)


Sized = TypeVar("Sized", bound=msgspec.Struct)


def with_own_size(answer: Sized) -> Sized:
    """`answer` with its `estimated_tokens` the tokens of its compact JSON (UTF-8 bytes / 4, rounded up), that
    number's own digits included: sized with itself in place until it holds (a one-digit placeholder left it one
    short in a quarter of the answers). `context` and MCP `search` answers both."""
    tokens = 0
    while (got := (_size(msgspec.structs.replace(answer, estimated_tokens=tokens)) + 3) // 4) > tokens:
        tokens = got
    return msgspec.structs.replace(answer, estimated_tokens=tokens)
