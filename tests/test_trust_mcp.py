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
import threading
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra is not installed")

from conftest import Repo
from mcp import Client
from mcp_servers import _start_http, _stop

from vivary_git.errors import RefusedError, UsageError
from vivary_git.mcp.profiles import PROFILES
from vivary_git.mcp.server import build_server
from vivary_git.mcp.service import MemoryService

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
        assert _post(url, {**auth, "Origin": f"https://{netloc}"})[0] == 200  # a page served over TLS, same host
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


def test_a_missing_or_wrong_token_gets_rfc_6750s_answer_word_for_word(repo: Repo) -> None:
    """401, a JSON body and a `Bearer error="invalid_token"` challenge saying which: no token, or a wrong one
    (a token with another scheme, or two Authorization headers, is no token)."""
    repo.commit("init", NOTES)
    proc, url = _start_http(repo, {"VIVARY_MCP_TOKEN": TOKEN})
    try:
        for headers, why in (({}, "no bearer token"), ({"Authorization": "Bearer wrong-token"}, "wrong bearer token"),
                             ({"Authorization": f"Token {TOKEN}"}, "wrong bearer token")):
            parts = urllib.parse.urlsplit(url)
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=60)
            try:
                conn.request("POST", parts.path, body=INITIALIZE, headers={
                    "Content-Type": "application/json", "Accept": "application/json, text/event-stream", **headers})
                resp = conn.getresponse()
                body = resp.read()
            finally:
                conn.close()
            assert resp.status == 401, headers
            assert json.loads(body) == {"error": "invalid_token", "error_description": why}
            assert resp.headers["Content-Type"] == "application/json"
            assert resp.headers["Content-Length"] == str(len(body))
            assert resp.headers["WWW-Authenticate"] == f'Bearer error="invalid_token", error_description="{why}"'
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
        assert _post(url, {"Host": f"[::1]:{port}"})[0] == 200  # a loopback name, whatever the bind
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


# --- the read-only profile ------------------------------------------------------------------------------

CANARY = "canary-5be0c4"


def _private_canaries(repo: Repo) -> None:
    """A workspace whose private USER.md profile and MEMORY.md hold canaries, and a pinned memory."""
    repo.commit("init", NOTES)
    writer = MemoryService(repo.path)
    writer.onboard({"name": f"{CANARY}-name", "role": f"{CANARY}-role", "goal": "ship the deploy runbook"})
    writer.add("Deploys happen on Tuesdays.", durability="pinned")
    writer.close()
    (repo.path / "MEMORY.md").write_text(f"# {CANARY}-memory-md\n\nMy own notes: {CANARY}-outside.\n")


def _everything_a_host_can_read(service: MemoryService) -> list[str]:
    """Every tool the profile offers, called as a reader would, and every resource listed, read."""
    said: list[str] = []

    async def session() -> None:
        async with Client(build_server(service)) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            said.append(json.dumps(sorted(tools)))
            calls = [("search", {"query": q, "top_k": 50, "include_neighbors": 3, "include_content": True,
                                 "budget": 0, "include_archived": True})
                     for q in ("deploy", "name role goal profile", "canary memory digest USER MEMORY")]
            calls += [("read", {"id": i, "include_content": True, "neighbors": 3})
                      for i in ("notes/deploy", "USER.md", "USER", "MEMORY.md", "MEMORY")]
            calls += [("context", {"id": i, "depth": 3, "budget": 0})
                      for i in ("notes/deploy", "USER.md", "USER", "MEMORY.md", "MEMORY")]
            calls += [("status", {}), ("recent", {"since": "3650d", "limit": 500})]
            for name, args in calls:
                if name in tools:
                    result = await client.call_tool(name, args)
                    said.append(json.dumps(result.structured_content) if not result.is_error
                                else " ".join(getattr(c, "text", "") for c in result.content))
            uris = [str(r.uri) for r in (await client.list_resources()).resources]
            templates = [str(t.uri_template) for t in (await client.list_resource_templates()).resource_templates]
            said.append(json.dumps([uris, templates]))
            uris += [t.replace("{+id}", i) for t in templates for i in ("notes/deploy", "USER", "MEMORY", "memory")]
            for uri in [*uris, "vivary://memory/digest"]:
                try:
                    got = await client.read_resource(uri)
                    said.append(" ".join(getattr(c, "text", "") for c in got.contents))
                except Exception as err:  # a refusal is an answer too: scanned as well
                    said.append(str(err))

    try:
        asyncio.run(session())
    finally:
        service.close()
    return said


def test_a_read_only_host_is_served_no_private_files_content(repo: Repo) -> None:
    _private_canaries(repo)
    control = "\n".join(_everything_a_host_can_read(MemoryService(repo.path)))
    assert f"{CANARY}-name" in control  # a host-core host reads its user's profile in the digest, by design
    said = _everything_a_host_can_read(MemoryService(repo.path, profile="read-only"))
    leaks = [s[max(0, s.find(CANARY) - 200):s.find(CANARY) + 60] for s in said if CANARY in s]
    assert not leaks, "\n".join(leaks)
    assert json.loads(said[0]) == sorted(PROFILES["read-only"])
    uris, templates = json.loads(next(s for s in said if s.startswith("[[")))
    assert uris == [] and templates == ["vivary://node/{+id}"]
    reader = MemoryService(repo.path, profile="read-only")
    with pytest.raises(RefusedError, match="not served in the read-only profile"):
        reader.digest()
    reader.close()


# --- a private file asked for by path -----------------------------------------------------------------------


@pytest.mark.parametrize("asked", ["X-files/plan.md", "/X-files/plan.md", "X-files/plan", "/X-files/plan"])
def test_a_private_file_asked_for_by_path_is_named_private(repo: Repo, asked: str) -> None:
    """With or without a leading `/` (a host writing a path from the repository's top) or `.md`: told it is
    private, and by which rule (by its place: its pattern is the user's text), never that it does not exist."""
    repo.commit("init", {**NOTES, ".gitignore": "/X-files/plan.md\n"})
    repo.write({"X-files/plan.md": "# Plan\n\nThe acquisition closes in May.\n"})
    service = MemoryService(repo.path)
    try:
        with pytest.raises(RefusedError) as refused:
            service.read(asked)
        assert str(refused.value) == (f"{asked!r} is private (.gitignore:1): vivary never shows private files to "
                                      "agents; the rule's pattern is not shown here (run `git vivary privacy "
                                      "explain` where the file is yours)")
    finally:
        service.close()


PATTERN = "clients/acme-*"  # a private_paths pattern names private things: no answer may quote it


@pytest.mark.parametrize("layout", ["top", "subfolder", "root"])
def test_a_refusal_names_a_private_paths_rule_by_its_file_never_its_pattern(repo: Repo, layout: str) -> None:
    """An agent asking for a file a `private_paths` pattern covers (to read it, to anchor it, to write a memory
    under it) is told which file holds the rule, never the pattern: it is the text of `.vivary/memory.toml`, a
    file on the privacy floor, and names what the user keeps private (`clients/acme-*`)."""
    at = "" if layout == "top" else "vault/"
    repo.commit("init", {f"{at}{k}": v for k, v in {
        **NOTES, "tropo.toml": "version = 1\n",
        ".vivary/memory.toml": f'[memory.privacy]\nprivate_paths = ["{PATTERN}", "drafts/"]\n',
        "clients/acme-zq/plan.md": "# Plan\n\nThe acquisition closes in May.\n"}.items()})
    top = {"top": MemoryService(repo.path), "subfolder": MemoryService(repo.path / "vault"),
           "root": MemoryService(repo.path, root="vault")}[layout]
    said: list[str] = []

    async def session() -> None:
        async with Client(build_server(top)) as client:
            for name, args in (("read", {"id": "clients/acme-zq/plan.md"}), ("read", {"id": "clients/acme-zq/plan"}),
                               ("context", {"id": "/clients/acme-zq/plan.md"}),
                               ("add", {"file": f"{at}clients/acme-zq/plan.md"}),
                               ("add", {"folder": f"{at}clients/acme-zq"})):
                result = await client.call_tool(name, args)
                assert result.is_error, (name, args)
                said.append(" ".join(getattr(c, "text", "") for c in result.content))

    try:
        asyncio.run(session())
    finally:
        top.close()
    joined = "\n".join(said)
    assert PATTERN not in joined and "drafts/" not in joined, joined
    rule = f"(private_paths in {at}.vivary/memory.toml)"
    assert said[0].endswith(f"'clients/acme-zq/plan.md' is private {rule}: vivary never shows private files to "
                            "agents; the rule's pattern is not shown here (run `git vivary privacy explain` where "
                            "the file is yours)"), said[0]
    assert all(rule in s for s in said), joined
    assert f"{at}clients/acme-zq is private {rule}; a private folder is never remembered" in said[4]


def test_a_private_rule_on_a_longer_name_never_refuses_a_path(repo: Repo) -> None:
    """A path that names no note, asked under `*.md.md` and `*.markdown.md` rules: only that path (and `.md`
    added to a path without an extension of a note) is asked about, so it is not found, never private."""
    repo.commit("init", {**NOTES, ".gitignore": "*.md.md\n*.markdown.md\n"})
    service = MemoryService(repo.path)
    try:
        for asked in ("notes/gone.md", "notes/gone.markdown"):
            with pytest.raises(UsageError, match="no public node"):
                service.read(asked)
    finally:
        service.close()


def test_a_write_refused_by_the_profile_says_what_a_read_only_host_can_do(repo: Repo) -> None:
    repo.commit("init", NOTES)
    reader = MemoryService(repo.path, profile="read-only")
    try:
        with pytest.raises(RefusedError) as refused:
            reader.add("Keys rotate every quarter.")
        assert str(refused.value) == ("`add` is not available in the read-only profile (read-only hosts can search, "
                                      "read and ask for status)")
    finally:
        reader.close()


def test_the_digest_refusal_says_what_it_would_hold(repo: Repo) -> None:
    repo.commit("init", NOTES)
    reader = MemoryService(repo.path, profile="read-only")
    try:
        with pytest.raises(RefusedError) as refused:
            reader.digest()
        assert str(refused.value) == ("the memory digest is not served in the read-only profile: it holds private "
                                      "files' content (MEMORY.md, the USER.md profile)")
    finally:
        reader.close()


# --- the read-only profile, in the service itself ----------------------------------------------------------


def test_the_read_only_service_refuses_every_write_itself(repo: Repo) -> None:
    """The service API refuses each write under the read-only profile: not only the tool list MCP offers.
    Each call is one that succeeds under host-core (run after, on the same tree), so the refusal is the
    profile's, not the arguments'."""
    repo.commit("init", {**NOTES, ".vivary/memory.toml": "[memory.sources]\nallow_network = true\n"})
    writer = MemoryService(repo.path)
    mem = writer.add("Deploys happen on Tuesdays.", durability="pinned").id
    assert mem is not None
    writer.link(mem, "related", "notes/keys")
    writer.close()
    writes: dict[str, Any] = {
        "add": lambda s: s.add("Keys rotate every quarter, on the first Monday."),
        "add:file": lambda s: s.anchor(file="notes/keys.md"),
        "add:url": lambda s: s.anchor(url="http://127.0.0.1:9/page", allow_network=True),
        "update": lambda s: s.update(mem, text="Deploys happen on Wednesdays."),
        "link": lambda s: s.link(mem, "related", "notes/deploy"),
        "unlink": lambda s: s.unlink(mem, "related", "notes/keys"),
        "edit": lambda s: s.edit(mem, append="Never on Fridays."),
        "retire": lambda s: s.retire(mem, reason="the deploy day moved"),
        "forget": lambda s: s.forget(mem, reason="the deploy day moved"),
        "move": lambda s: s.move(mem, "deploy-days"),
        "dream": lambda s: s.dream(force=True),
        "dream:resolve": lambda s: s.dream(task_id="t-000000000000", use_heuristic=True),
        "onboard": lambda s: s.onboard({"name": "Ada"}),
        "onboard:ask": lambda s: s.onboard(),
    }
    offered = set(PROFILES["host-core"]) - set(PROFILES["read-only"])
    assert offered == {name.split(":")[0] for name in writes}, "a new write needs its line here"
    before = [repo.git(*cmd) for cmd in (["rev-parse", "HEAD"], ["for-each-ref"], ["status", "--porcelain=v1",
                                                                                      "--ignored"])]
    reader = MemoryService(repo.path, profile="read-only")
    for name, call in writes.items():
        with pytest.raises(RefusedError, match=f"`{name.split(':')[0]}` is not available in the read-only"):
            call(reader)
    reader.close()
    after = [repo.git(*cmd) for cmd in (["rev-parse", "HEAD"], ["for-each-ref"], ["status", "--porcelain=v1",
                                                                                     "--ignored"])]
    assert after == before and not (repo.path / "USER.md").exists()
    writer = MemoryService(repo.path)
    for name in ("add", "add:file", "update", "link", "unlink", "edit", "retire", "move", "onboard"):
        writes[name](writer)
    writer.forget("memories/deploy-days", reason="the deploy day moved")
    writer.close()
    assert repo.git("rev-list", "--count", f"{before[0].strip()}..HEAD").strip() == "9"
    assert (repo.path / "USER.md").exists()


# --- a slow page ------------------------------------------------------------------------------------------

BODY = b"# Slow page\n\nAt last.\n"
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(BODY)


class Trickle:
    """A loopback HTTP server that answers every request one byte every `every` seconds (the headers,
    or only the body), and counts the bytes it sent before the client went away."""

    def __init__(self, every: float, what: str) -> None:
        self.every, self.what = every, what
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/slow"
        self.requested = threading.Event()
        self.gone = threading.Event()  # the client closed the connection before the page was sent
        self.release = threading.Event()  # send the rest at once
        self.sent = 0
        self.stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        # Accepts in short waits and stops before `close` closes the socket: an accept still waiting on
        # a closed socket's number would take the connections of the next test's server, given that number.
        self.sock.settimeout(0.1)
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.recv(65536)
            self.requested.set()
            page = HEAD + BODY
            at = 0 if self.what == "headers" else len(HEAD)
            try:
                conn.sendall(page[:at])
                while at < len(page):
                    if self.release.is_set():
                        conn.sendall(page[at:])
                        return
                    conn.sendall(page[at:at + 1])
                    at = self.sent = at + 1
                    self.release.wait(self.every)
            except OSError:  # a send after the client closed: the second one fails
                self.gone.set()

    def close(self) -> None:
        self.stop.set()
        self.release.set()
        self._thread.join()
        self.sock.close()


@pytest.fixture
def trickle() -> Iterator[Any]:
    made: list[Trickle] = []

    def make(what: str, every: float = 0.5) -> Trickle:
        made.append(Trickle(every, what))
        return made[-1]

    yield make
    for t in made:
        t.close()


SOURCES = "[memory.sources]\nallow_network = true\nallow_private_addresses = true\ntimeout = {timeout}\n"


@pytest.mark.parametrize("what", ["headers", "body"])
def test_a_page_trickling_its_answer_ends_at_the_one_deadline(repo: Repo, cli: Any, trickle: Any,
                                                              what: str) -> None:
    """One byte every 0.5 s is inside `timeout = 2` for every read, so a timeout per read never fires: the
    deadline for the whole fetch does. The page would take 44 s; the fetch ends while it is still being
    sent (the server counts what it sent before we went away), with exit 2 and nothing committed."""
    repo.commit("init", {**NOTES, ".vivary/memory.toml": SOURCES.format(timeout=2)})
    head = repo.git("rev-parse", "HEAD")
    site = trickle(what)
    r = cli("remember", "--url", site.url, "--allow-network", cwd=repo.path)
    assert r.code == 2 and f"{site.url}: no answer within 2 s (timeout under [memory.sources])" in r.err, r.err
    assert "Traceback" not in r.err and repo.git("rev-parse", "HEAD") == head
    assert site.gone.wait(60)
    quick = 0 if what == "headers" else len(HEAD)
    assert site.sent - quick < (len(HEAD) + len(BODY) - quick) // 2, site.sent  # well before the page was sent


def test_a_name_lookup_that_hangs_ends_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lookup is inside the deadline too. A resolver that never answers cannot exist on loopback: this
    one is a stand-in that waits until the test ends."""
    from vivary_git.memory.sources import fetch

    hang = threading.Event()

    def never(*args: Any, **kwargs: Any) -> Any:
        hang.wait(120)
        raise socket.gaierror(socket.EAI_AGAIN, "gave up")

    monkeypatch.setattr(socket, "getaddrinfo", never)
    try:
        with pytest.raises(fetch.FetchError, match=r"no answer within 0\.5 s"):
            fetch.fetch("http://pages.example/slow", timeout=0.5, max_bytes=1024, max_redirects=0,
                        allow_private=False)
    finally:
        hang.set()


def test_a_slow_fetch_holds_up_no_other_client(repo: Repo, trickle: Any) -> None:
    """While one host's `add` waits for a slow page, another host's search on the same server is answered;
    the page then arrives and is committed."""
    repo.commit("init", {**NOTES, ".vivary/memory.toml": SOURCES.format(timeout=20)})
    site = trickle("headers", every=60)
    service = MemoryService(repo.path)
    server = build_server(service)

    async def session() -> tuple[bool, Any, Any]:
        async with Client(server) as fetching, Client(server) as other:
            adding = asyncio.ensure_future(fetching.call_tool("add", {"url": site.url, "allow_network": True}))
            while not site.requested.is_set() and not adding.done():
                await asyncio.sleep(0.05)
            assert not adding.done(), (await adding).content
            found = await other.call_tool("search", {"query": "deploy runbook"})
            pending = not adding.done()
            site.release.set()
            return pending, found, await adding

    try:
        pending, found, added = asyncio.run(session())
    finally:
        service.close()
    assert not found.is_error and found.structured_content["results"][0]["id"] == "notes/deploy"
    assert pending, "the search waited for the page"
    assert not added.is_error, added.content
    assert added.structured_content["changed"] is True and added.structured_content["anchor"] == "url"
