"""Fetching one web page for a source anchor (`git vivary remember --url`): opt-in, bounded, anonymous.

This is the only code in vivary-git that reaches the network, and only when both the workspace
(`[memory.sources] allow_network = true` in `.vivary/memory.toml`) and the caller (`--allow-network`,
the MCP `add` tool's `allow_network`) say so. It sends one GET per hop and nothing else: no telemetry.

* Only `http` and `https`; a URL holding a user name or password is refused (it would be a credential
  in a commit). Redirects are followed by hand, at most `max_redirects`, each hop checked again.
* No cookie is sent or kept, no `Authorization` or proxy header is sent, proxies from the environment
  are not used (so no proxy credentials either); the request carries only Host, User-Agent, Accept,
  `Accept-Encoding: identity` (the size cap counts real bytes: no compressed bomb) and
  `Connection: close`.
* The host name is resolved once and the connection goes to that address (a second lookup cannot
  swap it); addresses that are not globally routable (loopback, private networks, link-local, the
  cloud metadata address) are refused unless `allow_private_addresses = true`, so an agent cannot be
  talked into reading an intranet page into a commit.
* One deadline (`timeout` seconds) covers the whole fetch: the name lookup, the connection, the TLS
  handshake, the headers and the body, redirects included. `http.client`'s own timeout holds for each
  read alone, so a server sending a byte just inside it would hold the fetch for ever; here a timer
  shuts the connection when the deadline passes. The body is read in chunks and reading stops one byte
  past `max_fetch_bytes` (a declared `Content-Length` over the cap is refused before the body is read).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import http.client
import ipaddress
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar

import msgspec

from vivary_git import __version__
from vivary_git.errors import RefusedError, UsageError, VivaryError
from vivary_git.safeio import describe_size

__all__ = ["FetchError", "Fetched", "check_url", "fetch"]

MAX_URL = 2048
_CHUNK = 65536
_REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = f"vivary-git/{__version__} (+source anchor; no cookies)"
_T = TypeVar("_T")


class FetchError(VivaryError):
    """The page could not be fetched (network, HTTP status, timeout): exit 2."""


class Fetched(msgspec.Struct, frozen=True):
    requested: str
    final: str
    status: int
    content_type: str  # the media type, lower case, without parameters
    charset: str | None
    body: bytes
    fetched_at: str
    redirects: int


def check_url(url: str) -> urllib.parse.SplitResult:
    """`url` split, or a `UsageError` saying why it is not a URL we fetch."""
    if not isinstance(url, str) or not url.strip():
        raise UsageError("the URL is empty")
    if len(url) > MAX_URL:
        raise UsageError(f"the URL is {len(url):,} characters, over {MAX_URL:,}")
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
        raise UsageError("the URL contains spaces or control characters; percent-encode them")
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as err:
        said = str(err).split(" as ", 1)[0]  # Python quotes a bad port as given: not echoed, it may be anything
        raise UsageError(f"not a valid URL ({said})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise UsageError(f"only http and https URLs are fetched, not {parts.scheme or 'a URL without a scheme'}:"
                         " (give the full address, e.g. https://example.org/page)")
    if not parts.hostname:
        raise UsageError("the URL has no host name")
    if parts.username is not None or parts.password is not None:
        raise RefusedError("the URL holds a user name or password; a source anchor never stores credentials: "
                           "remove them from the URL")
    if port == 0:
        raise UsageError("the URL's port is 0")
    return parts


class _Deadline:
    """The one deadline of a fetch. When it passes, a timer shuts the socket the fetch is using: a
    connect, handshake or read waiting on it ends at once, and `passed` says why (a read that ends
    then may look like a short answer; it is not one)."""

    def __init__(self, timeout: float) -> None:
        self.at = time.monotonic() + timeout
        self.passed = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(timeout, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        """Seconds to go; `TimeoutError` when none are left."""
        left = self.at - time.monotonic()
        if left <= 0 or self.passed:
            raise TimeoutError
        return left

    def hold(self, sock: socket.socket) -> None:
        """`sock` is the one to shut when the deadline passes (shut now if it has)."""
        with self._lock:
            self._sock = sock
            if self.passed:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.passed = True
            if self._sock is not None:
                _shut(self._sock)

    def cancel(self) -> None:
        self._timer.cancel()

    def within(self, fn: Callable[[], _T]) -> _T:
        """`fn()` (a call no socket of ours can interrupt: the name lookup), given up on at the deadline:
        its thread is left to finish on its own."""
        done = threading.Event()
        out: dict[str, Any] = {}

        def run() -> None:
            try:
                out["value"] = fn()
            except BaseException as err:  # handed to the caller below
                out["error"] = err
            finally:
                done.set()

        threading.Thread(target=run, name="vivary-fetch-resolve", daemon=True).start()
        if not done.wait(self.left()):
            raise TimeoutError
        if "error" in out:
            raise out["error"]
        value: _T = out["value"]
        return value


def _shut(sock: socket.socket) -> None:
    # The socket's own shutdown, under a TLS one too (SSLSocket.shutdown would drop its TLS state while
    # another thread reads it): the descriptor's reads see end of file. Not connected yet, or closed: an
    # OSError, and a connect under way ends on its own timeout (the time left when it began).
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _address(host: str, port: int, allow_private: bool, deadline: _Deadline) -> tuple[int, str]:
    """(family, address) to connect to for `host`, refusing addresses that are not global."""
    try:
        infos = deadline.within(lambda: socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
    except (OSError, UnicodeError) as err:
        if isinstance(err, TimeoutError):
            raise
        raise FetchError(f"cannot resolve {host}: {getattr(err, 'strerror', None) or err}") from None
    if not infos:
        raise FetchError(f"cannot resolve {host}: no address")
    for family, _type, _proto, _name, sockaddr in infos:
        addr = str(sockaddr[0])
        ip = ipaddress.ip_address(addr.split("%", 1)[0])
        mapped = getattr(ip, "ipv4_mapped", None)
        if mapped is not None:
            ip = mapped
        if not ip.is_global and not allow_private:
            raise RefusedError(
                f"{host} is {addr}, not a public Internet address (loopback, private network or link-local); "
                "pages on such addresses are fetched only with allow_private_addresses = true under "
                "[memory.sources] in .vivary/memory.toml"
            )
        return family, addr
    raise FetchError(f"cannot resolve {host}")  # pragma: no cover - the loop returns or raises


def _connect(family: int, addr: str, port: int, deadline: _Deadline) -> socket.socket:
    sock = socket.socket(family, socket.SOCK_STREAM)
    deadline.hold(sock)
    try:
        sock.settimeout(deadline.left())
        sock.connect((addr, port))
    except BaseException:
        sock.close()
        raise
    return sock


class _Pinned(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, family: int, addr: str, deadline: _Deadline) -> None:
        super().__init__(host, port, timeout=deadline.left())
        self._family, self._addr, self._deadline = family, addr, deadline

    def connect(self) -> None:
        self.sock = _connect(self._family, self._addr, self.port, self._deadline)


class _PinnedTLS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, family: int, addr: str, deadline: _Deadline) -> None:
        self._ctx = ssl.create_default_context()
        super().__init__(host, port, timeout=deadline.left(), context=self._ctx)
        self._family, self._addr, self._deadline = family, addr, deadline

    def connect(self) -> None:
        raw = _connect(self._family, self._addr, self.port, self._deadline)
        tls = self._ctx.wrap_socket(raw, server_hostname=self.host, do_handshake_on_connect=False)
        self.sock = tls
        self._deadline.hold(tls)  # `raw` gave its descriptor to `tls`: shut that one now
        tls.do_handshake()


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _media(header: str | None) -> tuple[str, str | None]:
    if not header:
        return "application/octet-stream", None
    media, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            charset = value.strip().strip("\"'")[:40]
    return media.strip().lower(), charset


def fetch(url: str, *, timeout: float, max_bytes: int, max_redirects: int, allow_private: bool) -> Fetched:
    """GET `url` within the bounds above. Raises `FetchError` (exit 2) for network and HTTP failures,
    `RefusedError` (exit 3) for a body over the cap, an address that is not public or a credential in
    the URL, `UsageError` for a URL that is not http(s)."""
    current = url
    check_url(url)
    deadline = _Deadline(timeout)
    late = f"{url}: no answer within {timeout:g} s (timeout under [memory.sources])"
    try:
        for hop in range(max_redirects + 1):
            parts = check_url(current)
            got = _get(parts, current, url, deadline, max_bytes, allow_private)
            if isinstance(got, Fetched):
                return msgspec.structs.replace(got, redirects=hop)
            if hop == max_redirects:
                raise FetchError(f"{url}: more than {max_redirects} redirects (max_redirects under [memory.sources])")
            current = urllib.parse.urldefrag(urllib.parse.urljoin(current, got.strip()))[0]
    except (OSError, http.client.HTTPException) as err:  # TimeoutError, and any error the deadline's shut caused
        if deadline.passed or isinstance(err, TimeoutError):
            raise FetchError(late) from None
        if isinstance(err, ssl.SSLError):
            raise FetchError(f"{current}: TLS failed ({err.reason or err})") from None
        said = getattr(err, "strerror", None) or type(err).__name__
        raise FetchError(f"{current}: {said}") from None
    finally:
        deadline.cancel()
    raise FetchError(f"{url}: too many redirects")  # pragma: no cover - the loop returns or raises


def _get(parts: urllib.parse.SplitResult, current: str, url: str, deadline: _Deadline, max_bytes: int,
         allow_private: bool) -> Fetched | str:
    """One GET: the page, or a redirect's Location."""
    https = parts.scheme.lower() == "https"
    host = parts.hostname or ""
    port = parts.port or (443 if https else 80)
    family, addr = _address(host, port, allow_private, deadline)
    conn: http.client.HTTPConnection = (_PinnedTLS if https else _Pinned)(host, port, family, addr, deadline)
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    try:
        conn.putrequest("GET", target, skip_accept_encoding=True)
        conn.putheader("User-Agent", USER_AGENT)
        conn.putheader("Accept", "text/html,application/xhtml+xml,text/markdown,text/plain,application/pdf;q=0.9,"
                                 "*/*;q=0.1")
        conn.putheader("Accept-Encoding", "identity")
        conn.putheader("Connection", "close")
        conn.endheaders()
        resp = conn.getresponse()
        deadline.left()  # headers cut short by the deadline read like complete ones
        status = resp.status
        if status in _REDIRECTS:
            location = resp.getheader("Location")
            if not location:
                raise FetchError(f"{current}: HTTP {status} redirect without a Location")
            return location
        if status != 200:
            reason = " ".join((resp.reason or "").split())[:80]
            raise FetchError(f"{current}: HTTP {status} {reason}".rstrip() + "; check the address")
        declared = resp.getheader("Content-Length")
        if declared is not None and declared.strip().isdecimal() and int(declared) > max_bytes:
            raise RefusedError(f"{current}: the page is {int(declared):,} bytes, over the "
                               f"{describe_size(max_bytes)} cap (max_fetch_bytes under [memory.sources])")
        media, charset = _media(resp.getheader("Content-Type"))
        body = _read_capped(resp, current, deadline, max_bytes)
        return Fetched(requested=url, final=current, status=status, content_type=media, charset=charset,
                       body=body, fetched_at=_now(), redirects=0)
    finally:
        conn.close()


def _read_capped(resp: http.client.HTTPResponse, where: str, deadline: _Deadline, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = resp.read1(min(_CHUNK, max_bytes + 1 - size))
        deadline.left()  # a body cut short by the deadline ends like a whole one
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise RefusedError(f"{where}: the page is over the {describe_size(max_bytes)} cap (max_fetch_bytes under "
                               "[memory.sources]); only that much was read")
