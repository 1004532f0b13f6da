"""The MCP server's trust boundaries, as an attacker would try them: a web page that rebinds its name to
the server's loopback address, a wrong or oddly written bearer token, a read-only host asking for private
files, a read-only service asked to write, and a page that trickles its answer to hold the server.

Everything runs on loopback: the MCP server (a `git vivary mcp` process, or in-process for the SDK's own
client) and the web pages (a server in a thread of this process).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import urllib.parse
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp import Client
from test_mcp import _start_http, _stop

NOTES = {
    "notes/deploy.md": "# Deploy runbook\n\nHow we deploy: blue green, smoke tests first.\n",
    "notes/keys.md": "# Key rotation\n\nSigning keys rotate every quarter.\n",
}
TOKEN = "t0ken-for-trust-tests-0123456789"
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}})


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def _post(url: str, headers: dict[str, str]) -> tuple[int, http.client.HTTPMessage]:
    """POST an MCP initialize to `url` with exactly these headers (Host among them when given)."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
    try:
        conn.putrequest("POST", parts.path, skip_host=True, skip_accept_encoding=True)
        sent = {"Host": parts.netloc, "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream", "Content-Length": str(len(INITIALIZE)), **headers}
        for key, value in sent.items():
            conn.putheader(key, value)
        conn.endheaders(INITIALIZE.encode())
        resp = conn.getresponse()
        return resp.status, resp.headers
    finally:
        conn.close()


# --- HTTP: DNS rebinding, the bind address, the bearer token -----------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.2", "::1", "[::1]"])
def test_http_on_any_loopback_address_refuses_a_rebound_host_or_origin(repo: Repo, host: str) -> None:
    """A page on attacker.example whose name now resolves to the server's address sends its own Host and
    Origin: refused (421, 403) whatever loopback address the server listens on. The token is right in every
    request but the last ones: the Host check holds by itself. The address is printed as a URL writes it."""
    if ":" in host and not _ipv6_loopback():
        pytest.skip("this machine has no IPv6 loopback (::1 cannot be bound)")
    repo.commit("init", NOTES)
    proc, url = _start_http(repo, {"VIVARY_MCP_TOKEN": TOKEN}, "--host", host)
    try:
        netloc = urllib.parse.urlsplit(url).netloc
        assert url.startswith(f"http://{'[::1]' if ':' in host else host}:"), url
        port = netloc.rsplit(":", 1)[1]
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert _post(url, auth)[0] == 200
        assert _post(url, {**auth, "Origin": f"http://{netloc}"})[0] == 200
        assert _post(url, {**auth, "Host": "attacker.example"})[0] == 421
        assert _post(url, {**auth, "Host": f"attacker.example:{port}"})[0] == 421
        assert _post(url, {**auth, "Origin": "http://attacker.example"})[0] == 403
        assert _post(url, {**auth, "Host": f"attacker.example:{port}",
                           "Origin": f"http://attacker.example:{port}"})[0] == 421
        # the scheme in any case (RFC 7235); a wrong or missing token is said as RFC 6750 says it
        assert _post(url, {"Authorization": f"bearer {TOKEN}"})[0] == 200
        assert _post(url, {"Authorization": f"BEARER  {TOKEN}"})[0] == 200
        for headers in ({"Authorization": "Bearer wrong-token"}, {"Authorization": f"Basic {TOKEN}"}, {}):
            status, said = _post(url, headers)
            assert status == 401, headers
            assert said["WWW-Authenticate"].startswith('Bearer error="invalid_token"'), said["WWW-Authenticate"]
    finally:
        _stop(proc)


def test_a_lower_case_bearer_scheme_serves_the_sdks_client(repo: Repo) -> None:
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    repo.commit("init", NOTES)
    proc, url = _start_http(repo, {"VIVARY_MCP_TOKEN": TOKEN}, "--host", "127.0.0.2")
    try:
        async def session() -> Any:
            http = create_mcp_http_client(headers={"Authorization": f"bearer {TOKEN}"})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return (await client.call_tool("search", {"query": "deploy"})).structured_content

        assert asyncio.run(session())["results"][0]["id"] == "notes/deploy"
    finally:
        _stop(proc)


def test_an_allowed_host_name_is_served_and_only_it(repo: Repo) -> None:
    """`--allow-host` names another way clients reach the server (here a name the test gives itself)."""
    repo.commit("init", NOTES)
    proc, url = _start_http(repo, {}, "--allow-host", "mcp.internal.test")
    try:
        port = urllib.parse.urlsplit(url).port
        assert _post(url, {"Host": f"mcp.internal.test:{port}", "Origin": f"http://mcp.internal.test:{port}"})[0] \
            == 200
        assert _post(url, {"Host": f"localhost:{port}"})[0] == 200
        assert _post(url, {"Host": f"other.internal.test:{port}"})[0] == 421
    finally:
        _stop(proc)


@pytest.mark.parametrize(("args", "said"), [
    (["--host", "[::1"], "--host '[::1': brackets hold an IPv6 address, e.g. [::1]"),
    (["--host", "[localhost]"], "brackets hold an IPv6 address"),
    (["--host", "127.0.0.1:8765"], "give the port with --port, e.g. --host 127.0.0.1 --port 8765"),
    (["--host", "local host"], "is not a host name or an address"),
    (["--allow-host", "http://evil.example/"], "--allow-host 'http://evil.example/' is not an address"),
])
def test_a_host_that_is_not_an_address_is_a_usage_error(repo: Repo, cli: Any, args: list[str], said: str) -> None:
    repo.commit("init", NOTES)
    r = cli("mcp", "--transport", "streamable-http", *args, cwd=repo.path)
    assert r.code == 2 and said in r.err, r.err
    assert "Traceback" not in r.err and r.err.count("\n") == 1


def test_an_address_that_cannot_be_bound_is_a_usage_error(repo: Repo, cli: Any) -> None:
    repo.commit("init", NOTES)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        r = cli("mcp", "--transport", "streamable-http", "--port", str(port), cwd=repo.path)
    assert r.code == 2 and f"cannot listen on 127.0.0.1:{port}:" in r.err, r.err
    assert "Traceback" not in r.err and r.err.count("\n") == 1
    if not _ipv6_loopback():
        r = cli("mcp", "--transport", "streamable-http", "--host", "[::1]", "--port", "0", cwd=repo.path)
        assert r.code == 2 and "cannot listen on [::1]:0:" in r.err and "Traceback" not in r.err, r.err
