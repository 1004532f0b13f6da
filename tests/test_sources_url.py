"""`remember --url` and `refresh` of web pages, against a real HTTP server on loopback (in a thread).

Every other address is blocked in this test process (`_loopback_only`): a connection or a name lookup that
is not loopback raises, so nothing here can reach the Internet whatever the code under test does.
"""

from __future__ import annotations

import http.server
import ipaddress
import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from conftest import Repo
from test_sources import _assert_nowhere, _note, make_pdf

pytest.importorskip("trafilatura", reason="the sources extra is not installed")

COOKIE = "cookie-canary-91e2"
ARTICLE = ("<html><head><title>Field guide</title></head><body><nav>Home | Shop | Login</nav><article>"
           "<h1>Field guide to herons</h1><p>" + "Herons wait motionless at the water's edge before they strike. " * 6
           + "</p><p>The grey heron nests in colonies.</p></article><footer>Copyright</footer></body></html>")
BIG = 50 * 1024 * 1024


def _loopback(host: Any) -> bool:
    try:
        return ipaddress.ip_address(str(host).split("%", 1)[0]).is_loopback
    except ValueError:
        return str(host) == "localhost"


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Refuse every connection and name lookup that is not loopback, for the whole test."""
    blocked: list[Any] = []
    real_connect = socket.socket.connect
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):
            blocked.append(address)
            raise OSError(f"blocked by the test: {address[0]} is not loopback")
        real_connect(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host is not None and not _loopback(host):
            try:
                ipaddress.ip_address(str(host))
            except ValueError:
                blocked.append(host)
                raise socket.gaierror(socket.EAI_NONAME, f"blocked by the test: {host}") from None
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return blocked


@dataclass
class Site:
    base: str
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    sent: dict[str, int] = field(default_factory=dict)
    done: dict[str, threading.Event] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    counter: list[int] = field(default_factory=lambda: [0])

    def url(self, path: str) -> str:
        return self.base + path

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]


def _handler(site: Site) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def _stream(self, name: str, declared: bool) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            if declared:
                self.send_header("Content-Length", str(BIG))
            self.end_headers()
            sent = 0
            chunk = b"<p>" + b"x" * 65530 + b"</p>"
            try:
                while sent < BIG:
                    self.wfile.write(chunk)
                    sent += len(chunk)
            except OSError:
                pass
            finally:
                site.sent[name] = sent
                site.done.setdefault(name, threading.Event()).set()

        def do_GET(self) -> None:
            site.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            path = self.path
            if path == "/page":
                self._send(200, ARTICLE.encode(), "text/html; charset=utf-8")
            elif path == "/latin1":
                body = ("<html><head><title>Caf\xe9</title></head><body><article><p>"
                        + "Le caf\xe9 cr\xe8me est servi au comptoir, tr\xe8s chaud. " * 6
                        + "</p></article></body></html>").encode("latin-1")
                self._send(200, body, "text/html; charset=ISO-8859-1")
            elif path == "/sjis":
                body = ('<html><head><meta charset="shift_jis"><title>鳥の本</title></head><body><article><p>'
                        + "サギは水辺で静かに待ちます。" * 12 + "</p></article></body></html>").encode("shift_jis")
                self._send(200, body, "text/html")
            elif path == "/r1":
                self._send(302, b"", "text/plain", {"Location": "/r2", "Set-Cookie": f"session={COOKIE}; Path=/"})
            elif path == "/r2":
                self._send(301, b"", "text/plain", {"Location": site.url("/page")})
            elif path == "/loop":
                self._send(302, b"", "text/plain", {"Location": "/loop"})
            elif path == "/to-file":
                self._send(302, b"", "text/plain", {"Location": "file:///etc/passwd"})
            elif path == "/huge-declared":
                self._stream("declared", declared=True)
            elif path == "/huge":
                self._stream("streamed", declared=False)
            elif path == "/slow":
                site.release.wait(30)
                self._send(200, ARTICLE.encode(), "text/html")
            elif path == "/doc.pdf":
                self._send(200, make_pdf("Heron migration routes", title="Migration report"), "application/pdf")
            elif path == "/logo.png":
                self._send(200, b"\x89PNG\r\n\x1a\n", "image/png")
            elif path == "/notes.md":
                self._send(200, b"# Notes\n\nHerons [[fly]] south.\n", "text/markdown; charset=utf-8")
            elif path == "/leaky":
                self._send(200, b"<html><body><article><p>Deploy with key AKIAZ7QW3XK2M9PL4NB8 today.</p>"
                                b"</article></body></html>", "text/html")
            elif path == "/counter":
                site.counter[0] += 1
                self._send(200, f"# Counter\n\nVisit number {site.counter[0]}.\n".encode(), "text/plain")
            else:
                self._send(404, b"<h1>Not found</h1>", "text/html")

    return Handler


@pytest.fixture
def site() -> Iterator[Site]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)
    server.daemon_threads = True
    s = Site(base=f"http://127.0.0.1:{server.server_address[1]}")
    server.RequestHandlerClass = _handler(s)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.release.set()
        server.shutdown()
        server.server_close()
        thread.join(10)


CONFIG = ("[memory.sources]\nallow_network = true\nallow_private_addresses = true\ntimeout = 10\n"
          "max_fetch_bytes = 1048576\nmax_redirects = 3\n")


def _seed(repo: Repo, config: str | None = CONFIG) -> None:
    files: dict[str, str | bytes] = {"notes/a.md": "# A\n"}
    if config is not None:
        files[".vivary/memory.toml"] = config
    repo.commit("init", files)


def _remember(cli: Any, repo: Repo, url: str, *extra: str) -> Any:
    return cli("remember", "--url", url, "--allow-network", "--json", *extra, cwd=repo.path)


def test_a_page_is_fetched_once_and_kept_as_a_markdown_snapshot(repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo)
    r = _remember(cli, repo, site.url("/page"), "--tag", "birds")
    assert r.code == 0, r.err
    got = r.json()
    assert got["anchor"] == "url" and got["kind"] == "source_document" and got["status"] == 200
    assert got["path"] == "memories/anchors/field-guide-to-herons.md"
    fields, text = _note(repo, got)
    assert fields["url"] == fields["final_url"] == site.url("/page") and fields["status"] == 200
    assert fields["content_type"] == "text/html" and fields["anchor_extractor"] == "trafilatura"
    assert fields["fetched_at"].endswith("Z") and fields["title"] == "Field guide to herons"
    assert fields["tags"] == ["birds", "source", "web"]
    assert "Herons wait motionless" in text and "grey heron nests in colonies" in text
    assert "Home | Shop" not in text  # the menu is boilerplate
    assert site.paths() == ["/page"]
    assert cli("check", cwd=repo.path).code == 0


def test_redirects_are_followed_and_recorded_and_no_cookie_or_credential_is_sent(
        repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo)
    r = _remember(cli, repo, site.url("/r1"))
    assert r.code == 0, r.err
    fields, _text = _note(repo, r.json())
    assert fields["url"] == site.url("/r1") and fields["final_url"] == site.url("/page")
    assert site.paths() == ["/r1", "/r2", "/page"]
    for _path, headers in site.requests:
        assert "cookie" not in headers and "authorization" not in headers and "proxy-authorization" not in headers
        assert headers["accept-encoding"] == "identity"
    _assert_nowhere(repo, COOKIE, r.out, r.err)


@pytest.mark.parametrize(("path", "code", "said"), [
    ("/missing", 2, "HTTP 404 Not Found"),
    ("/loop", 2, "more than 3 redirects"),
    ("/to-file", 2, "only http and https URLs are fetched, not file:"),
    ("/logo.png", 3, "image/png is not a page whose text can be kept"),
    ("/huge-declared", 3, "the page is 52,428,800 bytes, over the 1 MiB cap"),
    ("/leaky", 3, "the page's text line 1 looks like a credential"),
])
def test_fetch_failures_commit_nothing_and_say_why(repo: Repo, cli: Any, site: Site, path: str, code: int,
                                                   said: str) -> None:
    _seed(repo)
    head = repo.git("rev-parse", "HEAD").strip()
    r = _remember(cli, repo, site.url(path))
    assert r.code == code and said in r.err, r.err
    assert "Traceback" not in r.err and "AKIAZ7QW3XK2M9PL4NB8" not in r.err
    assert repo.git("rev-parse", "HEAD").strip() == head


def test_a_50_mb_body_is_never_read_past_the_cap(repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo)
    r = _remember(cli, repo, site.url("/huge"))
    assert r.code == 3 and "over the 1 MiB cap" in r.err and "only that much was read" in r.err
    assert site.done.setdefault("streamed", threading.Event()).wait(30)
    assert site.sent["streamed"] < BIG // 4  # the server could not send it all: we stopped reading


def test_a_slow_server_times_out(repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo, CONFIG.replace("timeout = 10", "timeout = 0.5"))
    r = _remember(cli, repo, site.url("/slow"))
    assert r.code == 2 and "no answer within 0.5 s" in r.err


@pytest.mark.parametrize(("path", "title", "words"), [
    ("/latin1", "Café", "Le café crème est servi au comptoir"),
    ("/sjis", "鳥の本", "サギは水辺で静かに待ちます。"),
])
def test_pages_that_are_not_utf8_are_read_in_their_own_charset(repo: Repo, cli: Any, site: Site, path: str,
                                                              title: str, words: str) -> None:
    _seed(repo)
    r = _remember(cli, repo, site.url(path))
    assert r.code == 0, r.err
    fields, text = _note(repo, r.json())
    assert words in text and fields["title"] == title


def test_a_pdf_and_a_markdown_page(repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo)
    pdf = _remember(cli, repo, site.url("/doc.pdf"))
    assert pdf.code == 0, pdf.err
    fields, text = _note(repo, pdf.json())
    assert fields["anchor_extractor"] == "pypdf" and fields["title"] == "Migration report"
    assert "Heron migration routes" in text
    md = _remember(cli, repo, site.url("/notes.md"))
    assert md.code == 0, md.err
    assert "Herons [[fly]] south." in _note(repo, md.json())[1]
    assert cli("check", cwd=repo.path).code == 0  # the page's [[fly]] is text, not a broken link


def test_the_network_takes_the_workspace_and_the_caller(repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo, config=None)
    r = _remember(cli, repo, site.url("/page"))
    assert r.code == 3 and "allow_network = true under [memory.sources]" in r.err and "nothing was fetched" in r.err
    repo.commit("allow", {".vivary/memory.toml": CONFIG})
    r = cli("remember", "--url", site.url("/page"), cwd=repo.path)
    assert r.code == 3 and "--allow-network on the command" in r.err
    assert site.requests == []


def test_loopback_and_private_addresses_need_their_own_consent(repo: Repo, cli: Any, site: Site,
                                                               _loopback_only: list[Any]) -> None:
    _seed(repo, CONFIG.replace("allow_private_addresses = true", "allow_private_addresses = false"))
    for url in (site.url("/page"), "http://169.254.169.254/latest/meta-data/", "http://10.0.0.8/"):
        r = _remember(cli, repo, url)
        assert r.code == 3 and "not a public Internet address" in r.err, r.err
    assert site.requests == [] and _loopback_only == []  # refused before any connection


def test_the_test_process_reaches_nothing_but_loopback(repo: Repo, cli: Any, _loopback_only: list[Any]) -> None:
    _seed(repo)
    r = _remember(cli, repo, "http://198.51.100.7/page")  # allowed by config, stopped by this test's guard
    assert r.code == 2
    r = _remember(cli, repo, "https://example.invalid/page")
    assert r.code == 2 and "cannot resolve example.invalid" in r.err
    assert _loopback_only == [("198.51.100.7", 80), "example.invalid"]


@pytest.mark.parametrize(("url", "code", "said"), [
    ("ftp://example.org/x", 2, "only http and https"),
    ("https://user:hunter2@example.org/", 3, "holds a user name or password"),
    ("https://example.org/?access_token=ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", 3, "the URL line 1 looks like"),
    ("example.org/page", 2, "not a URL without a scheme"),
])
def test_urls_we_never_fetch(repo: Repo, cli: Any, url: str, code: int, said: str,
                             _loopback_only: list[Any]) -> None:
    _seed(repo)
    r = _remember(cli, repo, url)
    assert r.code == code and said in r.err, r.err
    assert "hunter2" not in r.err and "ghp_" not in r.err
    assert _loopback_only == []


def test_the_same_url_again_warns_without_fetching_and_force_refreshes_in_place(
        repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo)
    first = _remember(cli, repo, site.url("/counter")).json()
    assert "Visit number 1." in _note(repo, first)[1]
    again = _remember(cli, repo, site.url("/counter"))
    assert again.code == 0 and again.json()["changed"] is False
    assert f"{site.url('/counter')} is already remembered as {first['id']}" in again.err
    assert site.paths() == ["/counter"]
    forced = _remember(cli, repo, site.url("/counter"), "--force")
    assert forced.code == 0 and forced.json()["op"] == "refresh" and forced.json()["path"] == first["path"]
    assert "Visit number 2." in _note(repo, first)[1]
    assert repo.git("ls-files", "memories/anchors").split() == [first["path"]]


def test_refresh_refetches_a_page_only_with_the_network_allowed(repo: Repo, cli: Any, site: Site) -> None:
    _seed(repo)
    got = _remember(cli, repo, site.url("/counter")).json()
    check = cli("refresh", "--check", "--json", cwd=repo.path)
    assert check.code == 0 and check.json()[0]["state"] == "unchecked"
    assert site.paths() == ["/counter"]  # --check never fetches
    r = cli("refresh", got["id"], cwd=repo.path)
    assert r.code == 3 and "--allow-network" in r.err
    r = cli("refresh", got["id"], "--allow-network", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert json.loads(r.out)[0]["changed"] is True
    assert "Visit number 2." in _note(repo, got)[1]


def test_mcp_add_fetches_a_url_only_when_the_agent_asks(repo: Repo, site: Site) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    from vivary_git.mcp.service import MemoryService

    _seed(repo)
    service = MemoryService(repo.path)
    with pytest.raises(Exception, match="allow_network in the MCP add tool"):
        service.anchor(url=site.url("/page"))
    got = service.anchor(url=site.url("/page"), allow_network=True)
    assert got.changed and got.final_url == site.url("/page")
    assert got.id in [h.id for h in service.search("grey heron colonies").results]
    service.close()


def test_https_certificates_are_verified(repo: Repo, cli: Any, site: Site, tmp_path: Any) -> None:
    import shutil
    import ssl
    import subprocess

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl program to make a certificate")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"], check=True, capture_output=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
    server.daemon_threads = True
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(str(cert), str(key))
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    server.handle_error = lambda *a: None  # type: ignore[method-assign]  # the refused handshake, expected
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        _seed(repo)
        head = repo.git("rev-parse", "HEAD").strip()
        r = _remember(cli, repo, f"https://127.0.0.1:{server.server_address[1]}/page")
        assert r.code == 2 and "TLS failed (CERTIFICATE_VERIFY_FAILED)" in r.err, r.err
        assert repo.git("rev-parse", "HEAD").strip() == head and site.requests == []
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)
