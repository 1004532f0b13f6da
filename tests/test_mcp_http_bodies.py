"""`git vivary mcp` over streamable HTTP answers a POST's body as stdio answers the same bytes on a line: one cut
short, one that is not UTF-8. Raw POSTs on loopback and raw lines, since no SDK client sends these."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp_servers import _http_session, _seed, _stdio_answers


def test_a_body_cut_short_is_answered_as_the_same_stdio_line(repo: Repo) -> None:
    """Over HTTP the SDK answered a body cut short `-32700 "Parse error: EOF while parsing…"` with id null, so the
    call waited for ever; stdio answers it `-32700 "the request is not valid JSON"` with the id found near its
    start (`wire._found_id`). HTTP now answers that too, status 400, and goes on serving."""
    sent = [b'{"jsonrpc":"2.0","id":"cut","method":"tools/ca',
            b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search","arguments":{"query":"deploy',
            b'{"jsonrpc":"2.0","method":"ping","id":12',  # a number it ends on may be cut too: null
            b'{"jsonrpc":"2.0","id":16,"method":"ping"}']
    _seed(repo)
    stdio = _stdio_answers(repo, sent)
    with _http_session(repo) as post:
        said = [post(body) for body in sent]
    assert [status for status, _ in said] == [400, 400, 400, 200]
    assert [json.loads(answer) for _, answer in said] == stdio
    not_json = {"code": -32700, "message": "the request is not valid JSON"}
    assert stdio[:3] == [{"jsonrpc": "2.0", "id": rid, "error": not_json} for rid in ("cut", 7, None)]
    assert stdio[3] == {"jsonrpc": "2.0", "id": 16, "result": {}}


def test_a_body_not_utf8_is_read_as_stdio_reads_the_line(repo: Repo) -> None:
    """Over HTTP the SDK answered a body holding a byte that is not UTF-8 `-32700 "Parse error: invalid unicode
    code point…"`, id null; stdio reads the line with U+FFFD for each such byte (`errors="replace"`) and serves
    it, or answers it as it would the line so read. HTTP now decodes the same way and decides the same, giving
    the SDK the body as decoded; one that grows past the 4 MiB a POST may hold is said to, not refused 413."""
    sent = [b'{"jsonrpc":"2.0","id":"bad\xff","method":"ping"}',
            b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":"deploy '
            b'\xfe"}}}',
            b'{"jsonrpc":"2.0","id":"c\xff","method":"tools/ca',  # cut short too: its id as read
            b'{"jsonrpc":"2.0","id":\xff1,"method":"ping"}',  # no JSON with the byte read as U+FFFD
            b'{"jsonrpc":"2.0","id":16,"method":"ping"}']
    _seed(repo)
    stdio = _stdio_answers(repo, sent)
    with _http_session(repo) as post:
        said = [post(body) for body in sent]
        # 1.5 MB as sent, over the SDK's 4 MiB with each byte written as U+FFFD (3 bytes): said, not refused 413
        grown = post(b'{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"' + b"\xff" * 1_500_000 + b'"}}')
    assert [status for status, _ in said] == [200, 200, 400, 400, 200]
    assert [json.loads(answer) for _, answer in said] == stdio
    assert stdio[0] == {"jsonrpc": "2.0", "id": "bad\ufffd", "result": {}}
    assert stdio[1]["result"]["structuredContent"]["query"] == "deploy \ufffd"
    not_json = {"code": -32700, "message": "the request is not valid JSON"}
    assert stdio[2:4] == [{"jsonrpc": "2.0", "id": rid, "error": not_json} for rid in ("c\ufffd", None)]
    assert stdio[4] == {"jsonrpc": "2.0", "id": 16, "result": {}}
    assert grown[0] == 400 and json.loads(grown[1])["id"] == 9, grown
    message = json.loads(grown[1])["error"]["message"]
    assert message.startswith("the request is too large to serve: with each byte that is not UTF-8"), grown
