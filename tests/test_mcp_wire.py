"""`git vivary mcp` answers every JSON-RPC line on stdio and every POST over streamable HTTP, by one decision for
both (vivary_git/mcp/wire.py): lines the SDK's parser refuses or misreads, request ids JSON-RPC allows and MCP does
not, batches, JSON nested deeper than Python reads. Raw lines and POSTs: no SDK client sends them."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp_servers import (
    _INITIALIZE,
    _http,
    _http_session,
    _raw_pipe,
    _seed,
    _spelled,
    _start_http,
    _stdio_answers,
    _stop,
)


def test_a_line_the_sdk_cannot_read_is_answered_not_dropped(repo: Repo) -> None:
    """Over stdio, a request the SDK's parser refuses got no answer and the host waited for ever: a query cut in
    the middle of an emoji (JavaScript writes the lone half as `\\ud83d`), arguments nested 300 deep, a line cut
    short. Each is answered now: mended and served (U+FFFD for the lone half; the deep value a wrong argument),
    or a JSON-RPC error carrying the request's id. Raw lines on a pipe: no SDK client can send them."""
    _seed(repo)
    with _raw_pipe(repo) as pipe:
        def answers(count: int) -> dict[Any, Any]:
            got: dict[Any, Any] = {}
            while len(got) < count:
                message = json.loads(pipe.line())
                got[message.get("id")] = message
            return got

        call = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":%s}}}'
        pipe.send(call % (2, '"deploy \\ud83d"'))
        pipe.send(call % (3, "[" * 300 + "]" * 300))
        pipe.send('{"jsonrpc":"2.0","id":"cut","method":"tools/ca')
        pipe.send(call % (4, '"deploy"'))
        got = answers(4)
    assert got[2]["result"]["structuredContent"]["query"] == "deploy \ufffd"
    assert got[2]["result"]["structuredContent"]["results"][0]["id"] == "notes/deploy"
    assert got[3]["result"]["isError"] and "query" in got[3]["result"]["content"][0]["text"]
    assert got["cut"]["error"] == {"code": -32700, "message": "the request is not valid JSON"}
    assert got[4]["result"]["structuredContent"]["results"][0]["id"] == "notes/deploy"
    assert pipe.proc.returncode == 0


def test_every_json_rpc_line_on_stdio_gets_its_answer(repo: Repo) -> None:
    """Lines the SDK reads as something they are not got no answer (a host's call waited for ever) or the wrong
    one: no method, a batch, an object for the id (read as a notification), params a string and jsonrpc "1.0"
    (both answered "not valid JSON" with id null). Each gets a -32600 error now, with the request's id when it
    is an MCP id (a string or an integer), and the server goes on serving. Raw lines: no SDK client sends them."""
    _seed(repo)
    with _raw_pipe(repo) as pipe:
        got = []
        for line in ('{"jsonrpc":"2.0","id":13}',
                     '[{"jsonrpc":"2.0","id":12,"method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"},'
                     '{"jsonrpc":"2.0","method":"notifications/initialized"}]',
                     '[]',
                     '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
                     '{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
                     '{"jsonrpc":"2.0","id":15,"method":"tools/call","params":"search"}',
                     '{"jsonrpc":"1.0","id":14,"method":"tools/list"}',
                     '{"jsonrpc":"2.0","id":16,"method":"tools/list"}'):
            pipe.send(line)
            got.append(json.loads(pipe.line()))
            if line.startswith("[{"):
                got.append(json.loads(pipe.line()))  # a batch: one error for each request in it with an id
    *errors, served = got
    assert [(e["id"], e["error"]["code"]) for e in errors] == [
        (13, -32600), (12, -32600), ("b", -32600), (None, -32600), (None, -32600), (None, -32600), (15, -32600),
        (14, -32600)]
    said = [e["error"]["message"] for e in errors]
    assert 'no "method"' in said[0]
    assert all("batches are not supported" in m for m in said[1:4])
    assert 'the request\'s "id" is an object' in said[4] and "string or an integer" in said[4]
    assert 'the request\'s "id" is null' in said[5]
    assert said[6] == 'the request\'s "params" must be an object, not a string'
    assert said[7] == 'the request\'s "jsonrpc" must be "2.0" (got "1.0")'
    assert served["id"] == 16 and "search" in {t["name"] for t in served["result"]["tools"]}
    assert pipe.proc.returncode == 0


def test_every_request_id_json_rpc_allows_is_answered_with_that_id(repo: Repo) -> None:
    """JSON-RPC wants an answer's id the same as its request's: the host's call waits for that id. A number MCP does
    not allow (`1.5`, `2.0`, `1e400`) was answered with id null, so the call waited for ever; a line cut short had
    `"id":1.5` answered as request 1 (another call's id) and a 30-digit id as its first 18 digits; a batch left its
    `1.5` call unanswered. Each is answered now with the id as the request spelled it; an id that cannot be read (an
    object, an array, a boolean, a number the cut may have shortened) with null. An id of 5,000 digits (more than
    Python reads) was answered "not valid JSON": it is valid, and now said to be too long, with that id.
    Raw lines: no SDK client sends them."""
    _seed(repo)

    def answer() -> tuple[str, Any]:
        return _spelled(pipe.line())

    big = "123456789012345678901234567890"
    ping = '{"jsonrpc":"2.0","id":%s,"method":"ping"}'
    with _raw_pipe(repo) as pipe:
        got = []
        for rid in ("1.5", "2.0", "1e2", "-1.5e-7", "1.0e400", "-3", "0", big, "-" + big, '"s"', "true", "[1]"):
            pipe.send(ping % rid)
            got.append((rid, *answer()))
        for line in ('{"jsonrpc":"2.0","id":1.5,"method":"tools/ca',
                     '{"jsonrpc":"2.0","id":' + big + ',"method":"tools/',
                     '{"jsonrpc":"2.0","id":12'):
            pipe.send(line)
            got.append((line, *answer()))
        pipe.send(f"[{ping % '2.5'},{ping % '7'}]")
        batch = [answer(), answer()]
        pipe.send(ping % HUGE)
        huge = answer()
        pipe.send(_SEARCH % ("17", HUGE))
        argument = answer()
        pipe.send(ping % "16")
        last = answer()
    assert [(sent, rid) for sent, rid, _ in got] == [
        ("1.5", "1.5"), ("2.0", "2.0"), ("1e2", "1e2"), ("-1.5e-7", "-1.5e-7"), ("1.0e400", "1.0e400"), ("-3", "-3"),
        ("0", "0"), (big, big), ("-" + big, "-" + big), ('"s"', '"s"'), ("true", "null"), ("[1]", "null"),
        (got[12][0], "1.5"), (got[13][0], big), (got[14][0], "null")]
    codes = [a.get("error", {}).get("code") for _, _, a in got]
    assert codes == [-32600] * 5 + [None] * 5 + [-32600] * 2 + [-32700] * 3
    assert 'the request\'s "id" is a number with a fraction or an exponent' in got[1][2]["error"]["message"]
    assert [(rid, a["error"]["code"]) for rid, a in batch] == [("2.5", -32600), ("7", -32600)]
    assert huge[0] == HUGE and huge[1]["error"] == {"code": -32600, "message": _TOO_LONG_ID}
    assert argument[0] == "17" and argument[1]["error"] == {"code": -32600, "message": _TOO_LONG_ARGUMENT}
    assert last[0] == "16" and last[1]["result"] == {}
    assert pipe.proc.returncode == 0


HUGE = "9" * 5000  # an integer of more digits than Python reads (4,300): valid JSON all the same
_SEARCH = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":"deploy",' \
          '"top_k":%s}}}'
_TOO_LONG_ID = ('the request\'s "id" is an integer of 5,000 digits, more than the 4,300 this server reads; send a '
                "shorter one, or a string")
_TOO_LONG_ARGUMENT = ("the request holds an integer of 5,000 digits, more than the 4,300 this server reads: send a "
                      "shorter number")


def test_over_http_too_every_request_id_json_rpc_allows_is_answered_with_that_id(repo: Repo) -> None:
    """Over streamable HTTP the SDK took a request whose id MCP does not allow (`1.5`, `true`, null) for a
    notification: 202, no body, and the client waited for ever; an id of 5,000 digits was "Parse error: number
    out of range" with id null. Each gets stdio's answer now (`wire.refusal`, one decision): 400 and a -32600
    error with the id as written, null where it cannot be; a session's requests, the SDK's 2026 single POSTs and
    an error a client posts with id null (JSON-RPC's own) are served as before. The token, Host, Origin,
    Content-Type and the SDK's body limit are checked first. Raw POSTs on loopback: no SDK client sends them."""
    _seed(repo)
    token = "t0ken-for-the-id-tests-0123456789"
    proc, url = _start_http(repo, {"VIVARY_MCP_TOKEN": token})
    auth = {"Authorization": f"Bearer {token}"}
    try:
        session = {**auth, "Mcp-Protocol-Version": "2025-06-18"}
        status, said = _http(url, _INITIALIZE, session)
        assert status == 200 and "Mcp-Session-Id" in session, said
        assert _http(url, '{"jsonrpc":"2.0","method":"notifications/initialized"}', session)[0] == 202
        ping = '{"jsonrpc":"2.0","id":%s,"method":"ping"}'
        long = "8" * 4300  # as many digits as Python reads: served
        got = []
        for rid in ("1.5", "2.0", "1e2", "-1.5e-7", "1.0e400", HUGE, "-" + HUGE, "true", "null", '{"a":1}', "[1]",
                    "7", '"s"', long):
            status, said = _http(url, ping % rid, session)
            got.append((rid, status, *_spelled(said)))
        status, said = _http(url, _SEARCH % ("17", HUGE), session)
        argument = (status, *_spelled(said))
        modern = _http(url, ping % "1.5", {**auth, "Mcp-Protocol-Version": "2026-07-28"})
        posted_error = _http(url, '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"no JSON"}}', session)
        first = [_http(url, ping % "1.5", headers)[0] for headers in (
            {}, {**session, "Host": "attacker.example"}, {**session, "Origin": "http://attacker.example"},
            {**session, "Content-Type": "text/plain"})]
        padded = '{"jsonrpc":"2.0","id":1.5,"method":"ping","params":{"pad":"%s"}}' % ("x" * (5 << 20))
        first.append(_http(url, padded, session)[0])
        last = _http(url, ping % "16", session)
    finally:
        _stop(proc)
    assert [(sent, status, rid) for sent, status, rid, _ in got] == [
        ("1.5", 400, "1.5"), ("2.0", 400, "2.0"), ("1e2", 400, "1e2"), ("-1.5e-7", 400, "-1.5e-7"),
        ("1.0e400", 400, "1.0e400"), (HUGE, 400, HUGE), ("-" + HUGE, 400, "-" + HUGE), ("true", 400, "null"),
        ("null", 400, "null"), ('{"a":1}', 400, "null"), ("[1]", 400, "null"), ("7", 200, "7"), ('"s"', 200, '"s"'),
        (long, 200, long)]
    codes = [a.get("error", {}).get("code") for *_, a in got]
    assert codes == [-32600] * 11 + [None] * 3
    said = [a["error"]["message"] for *_, a in got[:11]]
    assert said[0] == ('the request\'s "id" is a number with a fraction or an exponent; an MCP request id is a '
                       "string or an integer (a notification has no id)")
    assert said[5] == _TOO_LONG_ID and said[7].startswith('the request\'s "id" is a boolean')
    assert argument == (400, "17", {"jsonrpc": "2.0", "id": 17,
                                    "error": {"code": -32600, "message": _TOO_LONG_ARGUMENT}})
    assert modern[0] == 400 and _spelled(modern[1])[0] == "1.5" and '"code":-32600' in modern[1]
    assert posted_error == (202, "")
    assert first == [401, 421, 403, 400, 413]  # no token, a rebound Host or Origin, no JSON, over 4 MiB: as before
    assert last[0] == 200 and _spelled(last[1]) == ("16", {"jsonrpc": "2.0", "id": 16, "result": {}})


def test_a_number_id_is_kept_from_the_one_reading_of_a_deep_line(repo: Repo) -> None:
    """A request with an id MCP does not allow (`1.5`) was read twice, the second time to keep the id's spelling, one
    call deeper: params nested just short of what Python reads (976 deep over stdio) passed the first reading and
    raised out of the second, and the stdio server stopped. The spelling is kept from the one reading now: every
    depth is answered -32600 with id 1.5 (past what Python reads, said to be nested too deep) and the server goes
    on serving."""
    from vivary_git.mcp import wire

    _seed(repo)
    line = '{"jsonrpc":"2.0","id":1.5,"method":"ping","params":{"a":%s}}'
    for depth in range(1, sys.getrecursionlimit() + 50):  # in process first: where the depth falls here, at once
        served, answers = wire.screened(line % ("[" * depth + "]" * depth), ValueError("not read"))
        said = [a.message.model_dump_json() for a in answers]
        assert served is None and len(said) == 1 and said[0].startswith('{"jsonrpc":"2.0","id":1.5,"error":'), depth
    with _raw_pipe(repo) as pipe:
        codes = set()
        for depth in range(1, sys.getrecursionlimit() + 50):
            pipe.send(line % ("[" * depth + "]" * depth))
            said = pipe.line()
            assert said.startswith('{"jsonrpc":"2.0","id":1.5,"error":{"code":-32'), (depth, said[:200])
            codes.add((json.loads(said)["error"]["code"], json.loads(said)["error"]["message"] == _TOO_DEEP))
        pipe.send('{"jsonrpc":"2.0","id":16,"method":"ping"}')
        assert json.loads(pipe.line()) == {"jsonrpc": "2.0", "id": 16, "result": {}}
    assert codes == {(-32600, False), (-32600, True)}
    assert pipe.proc.returncode == 0


_BATCH = ('[{"jsonrpc":"2.0","id":12,"method":"ping"},{"jsonrpc":"2.0","id":"b","method":"tools/list"},'
          '{"jsonrpc":"2.0","method":"notifications/initialized"},{"jsonrpc":"2.0","id":2.5,"method":"ping"},'
          '{"jsonrpc":"2.0","id":true,"method":"ping"}]')
_DEEP = ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":'
         + "[" * 5000 + "]" * 5000 + "}}}")  # valid JSON, deeper than Python's reader goes
_TOO_DEEP = ("the request is nested too deep to read: Python reads JSON to about 1,000 levels of arrays and objects "
             "(its recursion limit), and this server's tools take arguments nested at most 64: send it nested less "
             "deep")


def test_over_http_a_batch_gets_the_errors_stdio_gives_it_as_one_json_array(repo: Repo) -> None:
    """A batch (MCP 2025-06-18 removed JSON-RPC batching) got stdio's answer on stdio, an error for each request in it
    with an id, so no call waits; over HTTP the SDK's `-32602 "Validation error: 4 validation errors for union[...]"`,
    id null, for the whole batch. It gets stdio's errors now (`wire.batch_refusal`, one decision), 400 and, as
    JSON-RPC answers a batch, one JSON array of them; a batch with no request with an id (`[]`, notifications only)
    gets the one error, id null, as JSON-RPC answers an empty batch. Raw lines and POSTs: no SDK client sends them."""
    _seed(repo)
    with _raw_pipe(repo) as pipe:
        pipe.send(_BATCH)
        stdio = [pipe.line().strip() for _ in range(3)]
        pipe.send("[]")
        stdio_empty = pipe.line().strip()
    with _http_session(repo) as post:
        batch = post(_BATCH)
        empty = post("[]")
        notes = post('[{"jsonrpc":"2.0","method":"notifications/initialized"}]')
        last = post('{"jsonrpc":"2.0","id":16,"method":"ping"}')
    assert batch == (400, "[" + ",".join(stdio) + "]")
    assert [(_spelled(line)[0], _spelled(line)[1]["error"]["code"]) for line in stdio] == [
        ("12", -32600), ('"b"', -32600), ("2.5", -32600)]
    said = json.loads(batch[1])[0]["error"]["message"]
    assert said.startswith("batches are not supported (MCP 2025-06-18 removed JSON-RPC batching)"), said
    assert empty == notes == (400, stdio_empty)
    assert json.loads(stdio_empty)["id"] is None and json.loads(stdio_empty)["error"]["code"] == -32600
    assert last[0] == 200 and json.loads(last[1]) == {"jsonrpc": "2.0", "id": 16, "result": {}}


def test_json_nested_deeper_than_python_reads_is_said_to_be_too_deep_not_invalid(repo: Repo) -> None:
    """Valid JSON nested deeper than Python's reader goes (its RecursionError) was answered -32700 "the request is
    not valid JSON" on stdio and the SDK's "-32700 Parse error: recursion limit exceeded", id null, over HTTP. It is
    valid, and on both transports now answered -32600, said to be nested too deep and the limit given, with the
    request's id when it stands near the line's start; the server goes on serving. Raw lines and POSTs."""
    _seed(repo)
    lost_id = '{"jsonrpc":"2.0","method":"ping","params":{"a":%s},"id":3}' % ("[" * 5000 + "]" * 5000)
    sent = (_DEEP % "7", _DEEP % '"s"', lost_id, '{"jsonrpc":"2.0","id":16,"method":"ping"}')
    stdio = _stdio_answers(repo, sent)
    with _http_session(repo) as post:
        http = [post(body) for body in sent]
    assert [status for status, _ in http] == [400, 400, 400, 200]
    assert [json.loads(said) for _, said in http] == stdio
    deep = {"code": -32600, "message": _TOO_DEEP}
    assert stdio[:3] == [{"jsonrpc": "2.0", "id": rid, "error": deep} for rid in (7, "s", None)]
    assert stdio[3] == {"jsonrpc": "2.0", "id": 16, "result": {}}


def test_over_http_a_body_only_python_reads_is_mended_and_served_and_no_request_is_answered_as_on_stdio(
        repo: Repo) -> None:
    """Over stdio a line the SDK's parser refuses but Python's reads is mended and served (arguments nested 300
    deep cut to null at 64, a lone surrogate half U+FFFD) and JSON that is no request is answered -32600 saying
    what is wrong; over HTTP the SDK answered the first `-32700 "Parse error: recursion limit exceeded ..."` and
    `"... unexpected end of hex escape ..."` and the second `-32602 "Validation error: ..."`, all with id null.
    Each POST gets stdio's answer now (`wire.mended`, one decision): the mended request is served (the SDK given
    it re-encoded), the rest 400 with stdio's error and id. Raw lines and POSTs: no SDK client sends them."""
    _seed(repo)
    call = '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"search","arguments":{"query":%s}}}'
    sent = (call % (3, "[" * 300 + "]" * 300), call % (4, '"deploy \\ud83d"'), "42", '"x"', "null",
            '{"jsonrpc":"2.0","id":13}', '{"jsonrpc":"2.0","id":"p","method":"ping","params":"x"}',
            '{"jsonrpc":"2.0","id":16,"method":"ping"}')
    stdio = _stdio_answers(repo, sent)
    with _http_session(repo) as post:
        http = [post(body) for body in sent]
        # 3.5 MB as sent, over the SDK's 4 MiB mended (each 1e15 written 1000000000000000.0): said, not served
        numbers = ",".join(["1e15"] * 700_000)
        grown = post(call % (9, '{"n":[' + numbers + '],"deep":' + "[" * 300 + "]" * 300 + "}"))
    assert [status for status, _ in http] == [200, 200, 400, 400, 400, 400, 400, 200]
    assert [json.loads(said) for _, said in http] == stdio
    assert stdio[0]["result"]["isError"] and "query" in stdio[0]["result"]["content"][0]["text"]
    assert stdio[1]["result"]["structuredContent"]["query"] == "deploy \ufffd"
    assert [(a["id"], a["error"]["code"], a["error"]["message"]) for a in stdio[2:7]] == [
        (None, -32600, "a request must be a JSON object, not a number"),
        (None, -32600, "a request must be a JSON object, not a string"),
        (None, -32600, "a request must be a JSON object, not null"),
        (13, -32600, 'the request has no "method": a JSON-RPC request names the method it calls'),
        ("p", -32600, 'the request\'s "params" must be an object, not a string')]
    assert stdio[7] == {"jsonrpc": "2.0", "id": 16, "result": {}}
    assert grown[0] == 400 and json.loads(grown[1])["id"] == 9, grown
    assert json.loads(grown[1])["error"]["message"].startswith("the request is too large to serve mended"), grown
