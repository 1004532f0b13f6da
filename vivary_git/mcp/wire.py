"""A request the SDK cannot read is answered, not dropped.

The SDK's stdio transport hands a line it cannot validate to the server as an exception, and the server
only logs it: the host's request then waits for an answer that never comes. Two such lines are common
and harmless: a string cut in the middle of an emoji (a host's JavaScript writes the lone surrogate half
as `\\ud83d`, which the SDK's JSON parser refuses), and arguments nested deeper than its parser goes.
`mended` reads the line with Python's own parser, puts U+FFFD for each lone surrogate (as undecodable
bytes already are on this transport), cuts what is nested deeper than `MAX_DEPTH` to null, and hands the
request on; a line that is still no message is answered with a JSON-RPC error carrying the request's id
when it can be found, so the host's call ends.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from mcp import types
from mcp.shared.message import SessionMessage

MAX_DEPTH = 64  # nesting kept in a request's JSON; deeper values read as null (the tools take flat arguments)
MAX_LINE = 1 << 24  # characters of a line read again: a larger one is answered as unreadable, not parsed twice
_LONE = re.compile(r"[\ud800-\udfff]")
_ID = re.compile(r'\A\s*\{.{0,4096}?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\\n]|\\.){0,256}")', re.DOTALL)


def mended(err: Exception) -> SessionMessage | None:
    """What the server should get for a line the SDK could not read (`err`, its validation error): the
    request mended, or an error answer to send back (`is_answer`), or None when no line is known."""
    line = _line_of(err)
    if line is None:
        return None
    if len(line) > MAX_LINE:
        return _answer(_found_id(line), types.INVALID_REQUEST, "the request is too large to read")
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return _answer(_found_id(line), types.PARSE_ERROR, "the request is not valid JSON")
    if not isinstance(data, dict):
        return _answer(None, types.INVALID_REQUEST, "a request must be a JSON object")
    fixed = _plain(data, 0)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(fixed, by_name=False))
    except ValueError as again:
        rid = fixed.get("id")
        return _answer(rid if isinstance(rid, int | str) and not isinstance(rid, bool) else None,
                       types.INVALID_REQUEST, f"the request is not a JSON-RPC message ({_first(again)})")


def is_answer(message: SessionMessage) -> bool:
    """Whether `mended` gave an error answer (to write back) rather than a request (to serve)."""
    return isinstance(message.message, types.JSONRPCError)


def _line_of(err: Exception) -> str | None:
    errors: Callable[[], list[dict[str, Any]]] | None = getattr(err, "errors", None)
    if errors is None:
        return None
    try:
        found = errors()
    except Exception:  # not a validation error after all
        return None
    got = found[0].get("input") if found else None
    return got if isinstance(got, str) else None


def _plain(value: Any, depth: int) -> Any:
    """`value` with each lone surrogate as U+FFFD and what is nested deeper than MAX_DEPTH as None."""
    if isinstance(value, str):
        return _LONE.sub("\ufffd", value) if _LONE.search(value) else value
    if isinstance(value, dict | list) and depth >= MAX_DEPTH:
        return None
    if isinstance(value, dict):
        return {_plain(k, depth + 1): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v, depth + 1) for v in value]
    return value


def _found_id(line: str) -> int | str | None:
    """The id of a request whose line is no JSON (cut short, say), when it stands near its start."""
    m = _ID.match(line[:8192])
    if m is None:
        return None
    raw = m.group(1)
    try:
        got = json.loads(raw)
    except ValueError:
        return None
    return got if isinstance(got, int | str) else None


def _answer(rid: int | str | None, code: int, message: str) -> SessionMessage:
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=types.ErrorData(code=code, message=message)))


def _first(err: ValueError) -> str:
    errors = getattr(err, "errors", None)
    if errors is not None:
        found = errors()
        if found:
            return f"{'.'.join(str(p) for p in found[0].get('loc', ()))}: {found[0].get('msg', '')}".strip(": ")
    return str(err).splitlines()[0][:200]
