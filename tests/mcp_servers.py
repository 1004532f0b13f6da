"""A `git vivary mcp` server on a seeded repository, started over stdio or streamable HTTP on loopback, and spoken
to raw as well: JSON-RPC lines on its pipe and POSTs to its HTTP, which no SDK client sends. Shared by the MCP test
files (test_mcp.py, test_mcp_wire.py, test_mcp_http_bodies.py, test_trust_mcp.py, test_mcp_surface.py)."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import select
import subprocess
import sys
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from conftest import Repo

NOTES = {
    "notes/deploy.md": "---\ntags: [ops]\n---\n# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
    "README.md": "# Home\n\nSee [[notes/deploy]].\n",
}


def _seed(repo: Repo) -> None:
    repo.commit("init", NOTES)


def _start_http(repo: Repo, env: dict[str, str] | None = None, *extra: str) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "vivary_git.main", "mcp", "--transport", "streamable-http", "--port", "0", *extra],
        cwd=repo.path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        env=dict(os.environ, **(env or {})),
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        m = re.search(r"listening on (http://\S+)", line)
        if m:
            return proc, m.group(1)
    proc.kill()
    raise AssertionError(f"the server did not start (exit {proc.wait()})")


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


# The initialize request every raw client here sends first (a session of MCP 2025-06-18).
_INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})


class _RawPipe:
    """The stdio server spoken to in raw lines (no SDK client sends what these tests send). Unbuffered, stderr to a
    file: answers that arrive together must not wait in a buffer select() cannot see (a test once sat 394 s under
    load until some later write woke it), nor the server on a full pipe."""

    def __init__(self, repo: Repo) -> None:
        self.log = repo.path.parent / "mcp-stderr.log"
        with self.log.open("wb") as err:
            self.proc = subprocess.Popen([sys.executable, "-m", "vivary_git.main", "mcp"], cwd=repo.path,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, bufsize=0)

    def send(self, line: str | bytes) -> None:
        """One line: text as UTF-8, bytes as they are."""
        assert self.proc.stdin is not None
        self.proc.stdin.write((line.encode() if isinstance(line, str) else line) + b"\n")
        self.proc.stdin.flush()

    def line(self) -> str:
        """The next answer's line, as the server wrote it."""
        ready, _, _ = select.select([self.proc.stdout], [], [], 600)  # a failure mode (no answer), not a time limit
        assert ready, f"no answer; server said: {self.log.read_text(errors='replace')}"
        return self.proc.stdout.readline().decode()  # type: ignore[union-attr]

    def initialise(self) -> None:
        self.send(_INITIALIZE)
        self.line()
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))


@contextlib.contextmanager
def _raw_pipe(repo: Repo) -> Iterator[_RawPipe]:
    """A `_RawPipe` to a server on `repo`, initialised; its input closed and the server waited for on leaving."""
    pipe = _RawPipe(repo)
    try:
        pipe.initialise()
        yield pipe
    finally:
        assert pipe.proc.stdin is not None
        pipe.proc.stdin.close()
        pipe.proc.wait(timeout=60)


def _spelled(text: str) -> tuple[str, Any]:
    """An answer's id as written (its JSON text: `1.5` is not `1.50`, nor 5,000 digits anything Python reads), and
    the answer. No answer at all (HTTP 202's empty body) is "no answer"."""
    if not text:
        return "no answer", {}
    got = json.loads(text, parse_float=lambda t: ("spelled", t),
                     parse_int=lambda t: ("spelled", t) if len(t) > 18 else int(t))
    rid = got.get("id")
    return (rid[1] if isinstance(rid, tuple) else json.dumps(rid)), got


def _http(url: str, body: str | bytes, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """POST `body` (text as UTF-8, bytes as they are) to the server at `url` on loopback as a client writes it: the
    status and the body (an SSE stream's one message, or JSON). A session's id, when the answer opens one, is kept
    in `headers`."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=600)  # a failure mode, no limit
    try:
        conn.request("POST", parts.path, body=body.encode() if isinstance(body, str) else body, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **(headers or {})})
        resp = conn.getresponse()
        said = resp.read().decode()
    finally:
        conn.close()
    if headers is not None and resp.headers["Mcp-Session-Id"]:
        headers["Mcp-Session-Id"] = resp.headers["Mcp-Session-Id"]
    data = [line[len("data: "):] for line in said.splitlines() if line.startswith("data: ")]
    return resp.status, data[0] if data else said


def _stdio_answers(repo: Repo, lines: Sequence[str | bytes]) -> list[Any]:
    """What a stdio server on `repo` answers each of `lines`, sent one at a time, each answer read as JSON."""
    with _raw_pipe(repo) as pipe:
        answers = []
        for line in lines:
            pipe.send(line)
            answers.append(json.loads(pipe.line()))
    return answers


@contextlib.contextmanager
def _http_session(repo: Repo) -> Iterator[Callable[[str | bytes], tuple[int, str]]]:
    """A streamable HTTP server on `repo` with a session open (initialised, MCP 2025-06-18): what POSTs a body in
    that session (`_http`); the server stopped on leaving."""
    proc, url = _start_http(repo)
    try:
        session = {"Mcp-Protocol-Version": "2025-06-18"}
        assert _http(url, _INITIALIZE, session)[0] == 200
        yield lambda body: _http(url, body, session)
    finally:
        _stop(proc)
