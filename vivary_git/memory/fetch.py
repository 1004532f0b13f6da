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
* One deadline (`timeout` seconds) covers the whole fetch, redirects included; the body is read in
  chunks and reading stops one byte past `max_fetch_bytes` (a declared `Content-Length` over the cap
  is refused before the body is read).
"""

from __future__ import annotations

import datetime as dt
import http.client
import ipaddress
import socket
import ssl
import time
import urllib.parse

import msgspec

from vivary_git import __version__
from vivary_git.errors import RefusedError, UsageError, VivaryError
from vivary_git.safeio import describe_size

__all__ = ["FetchError", "Fetched", "check_url", "fetch"]

MAX_URL = 2048
_CHUNK = 65536
_REDIRECTS = (301, 302, 303, 307, 308)
USER_AGENT = f"vivary-git/{__version__} (+source anchor; no cookies)"


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


def _address(host: str, port: int, allow_private: bool) -> tuple[int, str]:
    """(family, address) to connect to for `host`, refusing addresses that are not global."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as err:
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


class _Pinned(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, addr: str, timeout: float) -> None:
        super().__init__(host, port, timeout=timeout)
        self._addr = addr

    def connect(self) -> None:
        self.sock = socket.create_connection((self._addr, self.port), self.timeout)


class _PinnedTLS(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, addr: str, timeout: float) -> None:
        self._ctx = ssl.create_default_context()
        super().__init__(host, port, timeout=timeout, context=self._ctx)
        self._addr = addr

    def connect(self) -> None:
        raw = socket.create_connection((self._addr, self.port), self.timeout)
        self.sock = self._ctx.wrap_socket(raw, server_hostname=self.host)


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
    deadline = time.monotonic() + timeout
    current = url
    check_url(url)
    for hop in range(max_redirects + 1):
        parts = check_url(current)
        https = parts.scheme.lower() == "https"
        host = parts.hostname or ""
        port = parts.port or (443 if https else 80)
        _family, addr = _address(host, port, allow_private)
        left = deadline - time.monotonic()
        if left <= 0:
            raise FetchError(f"{url}: no answer within {timeout:g} s (timeout under [memory.sources])")
        conn: http.client.HTTPConnection = (_PinnedTLS if https else _Pinned)(host, port, addr, left)
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
            status = resp.status
            if status in _REDIRECTS:
                location = resp.getheader("Location")
                if not location:
                    raise FetchError(f"{current}: HTTP {status} redirect without a Location")
                if hop == max_redirects:
                    raise FetchError(f"{url}: more than {max_redirects} redirects (max_redirects under "
                                     "[memory.sources])")
                current = urllib.parse.urljoin(current, location.strip())
                current = urllib.parse.urldefrag(current)[0]
                continue
            if status != 200:
                reason = " ".join((resp.reason or "").split())[:80]
                raise FetchError(f"{current}: HTTP {status} {reason}".rstrip() + "; check the address")
            declared = resp.getheader("Content-Length")
            if declared is not None and declared.strip().isdigit() and int(declared) > max_bytes:
                raise RefusedError(f"{current}: the page is {int(declared):,} bytes, over the "
                                   f"{describe_size(max_bytes)} cap (max_fetch_bytes under [memory.sources])")
            media, charset = _media(resp.getheader("Content-Type"))
            body = _read_capped(conn, resp, current, deadline, timeout, max_bytes)
            return Fetched(requested=url, final=current, status=status, content_type=media, charset=charset,
                           body=body, fetched_at=_now(), redirects=hop)
        except TimeoutError:
            raise FetchError(f"{url}: no answer within {timeout:g} s (timeout under [memory.sources])") from None
        except ssl.SSLError as err:
            raise FetchError(f"{current}: TLS failed ({err.reason or err})") from None
        except (OSError, http.client.HTTPException) as err:
            said = getattr(err, "strerror", None) or type(err).__name__
            raise FetchError(f"{current}: {said}") from None
        finally:
            conn.close()
    raise FetchError(f"{url}: too many redirects")  # pragma: no cover - the loop returns or raises


def _read_capped(conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, where: str, deadline: float,
                 timeout: float, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        if conn.sock is not None:
            conn.sock.settimeout(left)
        chunk = resp.read1(min(_CHUNK, max_bytes + 1 - size))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        size += len(chunk)
        if size > max_bytes:
            raise RefusedError(f"{where}: the page is over the {describe_size(max_bytes)} cap (max_fetch_bytes under "
                               "[memory.sources]); only that much was read")
