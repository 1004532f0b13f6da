"""Every request is answered or served, never dropped: each line on stdio, each POST over streamable HTTP.

The SDK's stdio transport reads each line itself: a line it cannot validate reaches the server as an exception,
which it only logs, and a request whose `id` is not a string or an integer (`{"a": 1}`, `null`, `true`) reads as
a notification, which gets no answer: the host's request then waits for an answer that never comes. So the
server reads stdin through `Lines`, which keeps each raw line, and `screened` looks at the line again wherever
the SDK's reading of it is not a plain request:

- a line the SDK's parser refuses but Python's reads is mended and served: a string cut in the middle of an
  emoji (a host's JavaScript writes the lone surrogate half as `\\ud83d`) gets U+FFFD for each lone half (as
  undecodable bytes already do on this transport), arguments nested deeper than `MAX_DEPTH` are cut to null;
- a line that is still no request is answered with a JSON-RPC error: -32700 when it is not JSON, -32600 when
  it is JSON nested deeper than Python reads (`too_deep`: valid JSON all the same) or JSON but no request (no
  `method`, `jsonrpc` not "2.0", `params` not an object, an `id` of the wrong type, an integer of more digits
  than Python reads), carrying the request's id when it has one JSON-RPC allows: a string or an integer (an
  MCP id), or a number MCP does not allow (`1.5`, `2.0`, `1e400`, 5,000 digits), written back as the request
  spelled it, since JSON-RPC wants the answer's id the same as the request's and the call waits for that id;
  else (an object, an array, a boolean, null, or an id that cannot be found) null;
- a batch (a JSON array: MCP 2025-06-18 removed JSON-RPC batching) is served in no part (`batch_refusal`):
  each request in it with such an id gets its own -32600 error saying so, so no call waits; a batch with none
  gets one, id null.

Over HTTP the SDK reads each POST's body itself and makes the same mistakes: a request whose id is `1.5` or
`true` is a notification to it, answered 202 with no body; a batch, JSON that is no object and an object that
is no request got its -32602, a body nested deeper than its parser goes (about 200 levels) or holding a lone
surrogate half its -32700, id null. `answering` puts the same questions (`refusal`, `batch_refusal`,
`too_deep`, `mended`) to each body before the SDK reads it: a body only Python reads is mended and given to
the SDK written again; the ones they refuse are answered with their -32600 errors: 400, and a batch's errors
as one JSON array, as JSON-RPC answers a batch.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from io import TextIOWrapper
from typing import IO, Any

from mcp import types
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.message import SessionMessage
from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_DEPTH = 64  # nesting kept in a request's JSON; deeper values read as null (the tools take flat arguments)
MAX_LINE = 1 << 24  # characters of a line read again: a larger one is answered as unreadable, not parsed twice
_LONE = re.compile(r"[\ud800-\udfff]")
# A request's id near the start of a line that is no JSON: a string, or a whole JSON number (one the line goes on
# after: a number at the end of a line cut short may be cut too, and a wrong id could answer another call).
_ID = re.compile(r'\A\s*\{.{0,4096}?"id"\s*:\s*(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][-+]?\d+)?(?=\s*[,}])'
                 r'|"(?:[^"\\\n]|\\.){0,256}")', re.DOTALL)
_INTEGER = re.compile(r"-?\d+")
BATCH = ("batches are not supported (MCP 2025-06-18 removed JSON-RPC batching): send each request as its own "
         "JSON object (on its own line on stdio, in its own POST over HTTP)")

Served = tuple[SessionMessage | None, list[SessionMessage]]


@contextmanager
def claimed_stdin() -> Iterator[IO[bytes]]:
    """The process's stdin as a binary file of its own, with fd 0 pointed at the null device meanwhile (as the
    SDK's `stdio_server` does for the stdin it reads): a handler or a child that reads stdin reads EOF, never the
    host's requests. Where fd 0 cannot be moved, stdin itself."""
    try:
        private = os.dup(0)
    except OSError:
        yield sys.stdin.buffer
        return
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
    except OSError:
        os.close(private)
        yield sys.stdin.buffer
        return
    try:
        # closefd=False: a worker thread may still block reading it when the server exits
        yield os.fdopen(private, "rb", closefd=False)
    finally:
        os.dup2(private, 0)


class Lines:
    """The lines of `stream` as the SDK's stdio transport reads them (UTF-8, an undecodable byte U+FFFD), each
    kept until `next` takes it: the transport turns every line into exactly one message or exception, in order,
    so `next` is the line of the item the server receives next."""

    def __init__(self, stream: IO[bytes]) -> None:
        import anyio

        self._file = anyio.wrap_file(TextIOWrapper(stream, encoding="utf-8", errors="replace"))
        self._read: deque[str] = deque()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._file:
            self._read.append(line)
            yield line

    def next(self) -> str | None:
        return self._read.popleft() if self._read else None


def screened(line: str | None, item: SessionMessage | Exception) -> Served:
    """What the server serves for one line (`item`, the SDK's reading of it) and the answers to write back
    for it: the SDK's message when it is one, else the request mended, else a JSON-RPC error."""
    if isinstance(item, SessionMessage):
        if isinstance(item.message, types.JSONRPCNotification) and line is not None and len(line) <= MAX_LINE:
            try:
                data = _read(line)
            except (ValueError, RecursionError):
                return item, []
            refused = refusal(data)  # an id the SDK could not read: a request, not served
            if refused is not None:
                return None, [refused]
        return item, []
    if line is None:
        line = _line_of(item)
    if line is None:
        return None, [_answer(None, types.INVALID_REQUEST, "the request could not be read: send one JSON-RPC "
                                                           "request as a JSON object on one line")]
    if len(line) > MAX_LINE:
        return None, [_answer(_found_id(line), types.INVALID_REQUEST,
                              f"the request is too large to read (over {MAX_LINE} characters)")]
    try:
        data = _read(line)
    except RecursionError:
        return None, [too_deep(line)]
    except ValueError:
        return None, [_answer(_found_id(line), types.PARSE_ERROR, "the request is not valid JSON")]
    return mended(data)


def mended(data: Any) -> Served:
    """What is served for JSON the SDK could not read as a message (`data`, read by `_read` from one line or one
    HTTP body), and the answers to write back for it: the request mended (`_plain`) when it is one, else its
    -32600 error(s): a batch's, one for JSON that is no object, one saying what is wrong with an object that is
    no request. One decision for both transports."""
    if isinstance(data, list):
        said = batch_refusal(data)
        return None, said if isinstance(said, list) else [said]
    if not isinstance(data, dict):
        return None, [_answer(None, types.INVALID_REQUEST, f"a request must be a JSON object, not {_kind(data)}")]
    refused = refusal(data)
    if refused is not None:
        return None, [refused]
    fixed = _plain(data, 0)
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_python(fixed, by_name=False)), []
    except ValueError as again:
        return None, [_answer(_mcp_id(fixed.get("id")), types.INVALID_REQUEST, _why(fixed, again))]


def refusal(data: Any) -> SessionMessage | None:
    """The -32600 answer to a JSON object (`data`, read by `_read` from one line, or one HTTP body) that
    the SDK reads as a notification (served, never answered) or cannot read at all for a number in it: an id MCP
    does not accept (not a string nor an integer, or an integer of more digits than Python reads), or such an
    integer anywhere else. None for anything else, and for an error answering a request whose id could not be
    read (`"id": null` is JSON-RPC's own word for that). One decision for both transports."""
    if not isinstance(data, dict):
        return None
    if "id" in data and _mcp_id(data["id"]) is None and not (data["id"] is None and "error" in data
                                                               and "method" not in data):
        return _bad_id(data["id"])
    long = _long_in(data)
    if long is not None:
        return _answer(_mcp_id(data.get("id")), types.INVALID_REQUEST,
                       f"the request holds {_kind(long)}: send a shorter number")
    return None


def batch_refusal(batch: list[Any]) -> list[SessionMessage] | SessionMessage:
    """The answer to a batch (`batch`, a JSON array read by `_read`), served in no part: a -32600 error for each
    request in it with an id JSON-RPC allows, so no call waits, as a list (JSON-RPC answers a batch with an array
    of its answers); one error with id null when it holds no such request (`[]`, notifications only), as
    JSON-RPC answers an empty batch. One decision for both transports: stdio writes each error on its own line,
    HTTP writes the list as one JSON array."""
    said = [_answer(rid, types.INVALID_REQUEST, BATCH) for rid in
            (_reply_id(e.get("id")) for e in batch if isinstance(e, dict) and "method" in e) if rid is not None]
    return said or _answer(None, types.INVALID_REQUEST, BATCH)


def too_deep(text: str) -> SessionMessage:
    """The -32600 answer to a request (`text`) that is JSON nested deeper than Python's reader goes (it raised
    RecursionError): valid JSON, not a parse error. With the request's id when it stands near the start."""
    # Python's reader counts each level against the recursion limit, less the calls the server is inside
    return _answer(_found_id(text), types.INVALID_REQUEST,
                   f"the request is nested too deep to read: Python reads JSON to about {sys.getrecursionlimit():,} "
                   f"levels of arrays and objects (its recursion limit), and this server's tools take arguments "
                   f"nested at most {MAX_DEPTH}: send it nested less deep")


def is_answer(message: SessionMessage) -> bool:
    """Whether a message is a JSON-RPC error (to write back) rather than a request (to serve)."""
    return isinstance(message.message, types.JSONRPCError)


def _mcp_id(value: Any) -> int | str | None:
    """`value` when it is an id MCP allows (a string or an integer Python reads), else None."""
    return value if isinstance(value, int | str) and not isinstance(value, bool | _Number) else None


class _Number(str):
    """A JSON number as a request wrote it (`1.5`, `2.0`, `1e400`, an integer of more digits than Python reads):
    an id JSON-RPC allows and MCP does not, written back in the answer exactly so."""


class _Long(_Number):
    """A JSON integer of more digits than Python reads (`sys.get_int_max_str_digits()`, 4,300), as written: the
    SDK's parser refuses it as out of range, Python's as no JSON, though the JSON is valid."""


class _Float(float):
    """A JSON number with a fraction or an exponent (`1.5`, `2.0`, `1e400`) as Python reads it, keeping the text the
    request wrote it with (`_read`): an id MCP does not allow is answered with that text (`_reply_id`)."""

    text: str

    def __new__(cls, text: str) -> _Float:
        number = super().__new__(cls, text)
        number.text = text
        return number


class _Echoed(types.JSONRPCError):
    """A JSON-RPC error whose id is a `_Number`: the SDK's models hold only MCP ids, so it is written in here."""

    _spelled: str = ""

    def model_dump_json(self, **kwargs: Any) -> str:
        return f'{{"jsonrpc":"2.0","id":{self._spelled},"error":{self.error.model_dump_json(**kwargs)}}}'


def _read(text: str) -> Any:
    """`text` as JSON, each number with a fraction or an exponent a `_Float` (its spelling kept for an answer's id,
    with no second reading: one nested just short of what Python reads at the first had a second one, deeper,
    raise out of the stdio server) and each integer of more digits than Python reads a `_Long`; ValueError when it
    is no JSON."""
    try:
        return json.loads(text, parse_float=_Float)
    except ValueError:  # no JSON, or an integer too long to read: read again to tell which
        return json.loads(text, parse_float=_Float, parse_int=_integer)


def _integer(text: str) -> int | _Long:
    try:
        return int(text)
    except ValueError:
        return _Long(text)


def _long_in(data: Any) -> _Long | None:
    """The first integer in `data` too long for Python to read, if any (looked for without recursion: `data` may
    be nested as deep as `json` reads)."""
    todo = [data]
    while todo:
        value = todo.pop()
        if isinstance(value, _Long):
            return value
        if isinstance(value, dict):
            todo.extend(value.values())
        elif isinstance(value, list):
            todo.extend(value)
    return None


def _reply_id(value: Any) -> int | str | None:
    """The id to answer a request with (`value`, as `_read` read it): an MCP id as it is; a number that is none (a
    `_Float`, a `_Long`) as the request wrote it; anything else (an object, an array, a boolean, null) None, as
    JSON-RPC says when the id cannot be read."""
    if isinstance(value, _Long):
        return value
    if isinstance(value, _Float):
        return _Number(value.text)
    return _mcp_id(value)


def _bad_id(value: Any) -> SessionMessage:
    rid = _reply_id(value)
    fix = ("send a shorter one, or a string" if isinstance(value, _Long)
           else "an MCP request id is a string or an integer (a notification has no id)")
    return _answer(rid, types.INVALID_REQUEST, f'the request\'s "id" is {_kind(value)}; {fix}')


def _kind(value: Any) -> str:
    if isinstance(value, _Long):
        digits = len(value.lstrip("-"))
        return f"an integer of {digits:,} digits, more than the {sys.get_int_max_str_digits():,} this server reads"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):  # a `_Float` too
        return "a number with a fraction or an exponent"
    kinds: dict[type, str] = {dict: "an object", list: "an array", str: "a string"}
    return kinds.get(type(value), "a number")


def _why(data: dict[str, Any], err: ValueError) -> str:
    """What is wrong with a JSON object that is no JSON-RPC message, and what it should be."""
    if data.get("jsonrpc") != "2.0":
        return f'the request\'s "jsonrpc" must be "2.0" (got {json.dumps(data.get("jsonrpc"))[:40]})'
    if not any(k in data for k in ("method", "result", "error")):
        return 'the request has no "method": a JSON-RPC request names the method it calls'
    if not isinstance(data.get("method", ""), str):
        return f'the request\'s "method" must be a string, not {_kind(data["method"])}'
    if "params" in data and not isinstance(data["params"], dict):
        return f'the request\'s "params" must be an object, not {_kind(data["params"])}'
    return f"the request is not a JSON-RPC message ({_first(err)})"


def _line_of(err: Exception) -> str | None:
    """The line a validation error was raised for, when the SDK's parser could not read it as JSON."""
    errors: Callable[[], list[dict[str, Any]]] | None = getattr(err, "errors", None)
    if errors is None:
        return None
    try:
        found = errors()
    except Exception:  # not a validation error after all
        return None
    got = found[0].get("input") if found and found[0].get("type") == "json_invalid" else None
    return got if isinstance(got, str) else None


def _plain(value: Any, depth: int) -> Any:
    """`value` with each lone surrogate as U+FFFD, what is nested deeper than MAX_DEPTH as None and each `_Float` a
    plain float (what is served holds the numbers as Python reads them)."""
    if isinstance(value, _Float):
        return float(value)
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
    if not raw.startswith('"'):  # a whole JSON number (the pattern's): an integer Python reads, else as spelled
        if _INTEGER.fullmatch(raw):
            with contextlib.suppress(ValueError):  # more digits than Python reads (4,300)
                return int(raw)
        return _Number(raw)
    try:
        got = json.loads(raw)
    except ValueError:
        return None
    return got if isinstance(got, str) else None


def _answer(rid: int | str | None, code: int, message: str) -> SessionMessage:
    error = types.ErrorData(code=code, message=message)
    if isinstance(rid, _Number):
        echoed = _Echoed(jsonrpc="2.0", id=None, error=error)
        echoed._spelled = str(rid)
        return SessionMessage(echoed)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=rid, error=error))


def _first(err: ValueError) -> str:
    """The first thing pydantic found wrong, without the name of the union member it tried."""
    errors = getattr(err, "errors", None)
    if errors is not None:
        found = errors()
        if found:
            loc = [str(p) for p in found[0].get("loc", ()) if not str(p).startswith("JSONRPC")]
            return f"{'.'.join(loc)}: {found[0].get('msg', '')}".strip(": ")
    return str(err).splitlines()[0][:200]


def answering(app: ASGIApp, path: str, security: TransportSecuritySettings) -> ASGIApp:
    """`app` (the SDK's streamable HTTP app) with each POST to `path` that stdio would refuse answered with the
    same JSON-RPC error (HTTP 400) instead of passed on, and each that stdio would mend passed on mended: the SDK
    reads a request whose id is `1.5` or `true` as a notification, answers 202 with no body and serves it, and
    the client waits for ever; it answers a batch or JSON that is no request with a -32602 validation error, and
    JSON nested deeper than its parser goes, a body cut short and one with a byte that is not UTF-8 as not JSON,
    all with id null. A body is read as `Lines` reads a stdio line (U+FFFD for a byte that is not UTF-8), and
    answered as that line is; the SDK given it so read. A batch's errors are one JSON array
    (one error object when it holds no request with an id). Only after the checks
    the SDK makes before it reads a body, with its settings, which answer first as they did: a body over its
    size limit 413, a Host or Origin it refuses 421 or 403 (DNS rebinding), a Content-Type that is not JSON
    400; a client that does not accept JSON is left to the SDK (406). A session's id is not needed for the
    error, as for the SDK's own answer to a body that is not JSON."""
    from mcp.server.streamable_http import check_accept_headers
    from mcp.server.transport_security import (
        DEFAULT_MAX_REQUEST_BODY_SIZE,
        RequestBodyLimitMiddleware,
        TransportSecurityMiddleware,
    )
    from starlette.requests import Request
    from starlette.responses import Response

    checks = TransportSecurityMiddleware(security)

    async def screen(scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        refused = await checks.validate_request(request, is_post=True)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if not check_accept_headers(request)[0]:
            await app(scope, receive, send)
            return
        body = await request.body()
        text = body.decode("utf-8", errors="replace")  # as `Lines` reads a stdio line
        said: list[SessionMessage] | SessionMessage | bytes
        try:
            data = _read(text)
        except RecursionError:
            said = too_deep(text)
        except ValueError:
            said = _answer(_found_id(text), types.PARSE_ERROR, "the request is not valid JSON")
        else:
            read = body if text.encode() == body else text.encode()  # each byte that is not UTF-8 given as U+FFFD
            said = batch_refusal(data) if isinstance(data, list) else _posted(read, data, limit)
        if isinstance(said, bytes):
            await app(_sized(scope, said) if said is not body else scope, _replayed(said, receive), send)
            return
        answer = ("[" + ",".join(_written(s) for s in said) + "]" if isinstance(said, list) else _written(said))
        await Response(answer, status_code=400, media_type="application/json")(scope, receive, send)

    limit = DEFAULT_MAX_REQUEST_BODY_SIZE  # the SDK's, which it checks again on a body mended here
    limited = RequestBodyLimitMiddleware(screen, limit)  # before the read

    async def served(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"] == path:
            await limited(scope, receive, send)
        else:
            await app(scope, receive, send)

    return served


def _posted(body: bytes, data: Any, limit: int) -> bytes | SessionMessage:
    """What to give the SDK for a POST's `body` (read by `_read` as `data`, no batch), or the answer to send instead,
    as stdio decides for a line: the body as it came when the SDK reads it as a message (`refusal` still asked:
    the SDK reads a request whose id MCP does not allow as a notification); else `mended`'s answer, or its
    mended request written again as JSON for the SDK to read (nested at most MAX_DEPTH, no lone surrogate). A
    mended request can be longer than the body (`[]` cut to `null`, `1e15` written as Python writes it): one
    over the SDK's `limit` would be refused 413 though the client sent less, so it gets a -32600 error saying so;
    as does a `body` over it for the U+FFFD (3 bytes) written for each byte the client sent that is not UTF-8."""
    import pydantic_core

    try:  # the SDK's own reading of a POST, as `StreamableHTTPServerTransport` does it
        types.jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
    except ValueError:
        served, said = mended(data)
        if served is None:
            return said[0]
        message = served.message.model_dump(by_alias=True, exclude_unset=True)
        written = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()
        if len(written) > limit:
            return _answer(_mcp_id(data.get("id")), types.INVALID_REQUEST,
                           f"the request is too large to serve mended: with what is nested deeper than {MAX_DEPTH} "
                           f"levels cut to null and its numbers as Python writes them it is over the {limit:,} "
                           f"bytes a POST may hold: send it nested less deep")
        return written
    refused = refusal(data)
    if refused is not None:
        return refused
    if len(body) > limit:  # grown by the U+FFFD (3 bytes) written for each byte that was not UTF-8
        return _answer(_mcp_id(data.get("id")), types.INVALID_REQUEST,
                       f"the request is too large to serve: with each byte that is not UTF-8 written as U+FFFD it is "
                       f"over the {limit:,} bytes a POST may hold: send it as UTF-8")
    return body


def _sized(scope: Scope, body: bytes) -> Scope:
    """`scope` with its Content-Length that of `body`, the body given in place of the one the client sent."""
    headers = [(k, v) for k, v in scope["headers"] if k.lower() != b"content-length"]
    return {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}


def _written(answer: SessionMessage) -> str:
    return answer.message.model_dump_json(by_alias=True, exclude_unset=True)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body already read from it given once more, first."""
    told = False

    async def again() -> Message:
        nonlocal told
        if told:
            return await receive()
        told = True
        return {"type": "http.request", "body": body, "more_body": False}

    return again
