"""`git vivary mcp`: serve this workspace's memory to agent hosts over MCP (stdio or streamable HTTP)."""

from __future__ import annotations

import argparse
import gc
import importlib.util
import ipaddress
import os
import re
import sys

from vivary_git.commands._common import add_workspace_args, between
from vivary_git.errors import EXIT_OK, PrivacyError, RefusedError, UsageError
from vivary_git.mcp.profiles import PROFILES, listed

_LOOPBACK_NAMES = ("localhost",)
_HOST_NAME = re.compile(r"(?i)[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,62}[a-z0-9])?)*\.?")
TOKEN_ENV = "VIVARY_MCP_TOKEN"


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    host_core, read_only = PROFILES["host-core"], PROFILES["read-only"]
    p = sub.add_parser(
        "mcp", help=f"MCP server for agent hosts: {', '.join(host_core)}",
        description="Serve the workspace over the Model Context Protocol (docs/mcp.md): tools "
        f"{listed(host_core)} (profile host-core), or {listed(read_only)} only (read-only); resources "
        "vivary://node/{id} and, for host-core, vivary://memory/digest. Every memory "
        "write is a Git commit (onboard's answers go to the private USER.md, never committed); private files are "
        "never shown. "
        "Needs the mcp extra: pip install 'vivary-git[mcp]'. Exit 2 on a usage error or a missing extra; 3 when "
        "refused (binding beyond loopback without --allow-remote and a token). Over HTTP, requests must name "
        "the server in their Host and Origin (DNS-rebinding protection): its address, localhost, or an "
        "--allow-host name.",
    )
    p.add_argument("--transport", choices=("stdio", "streamable-http"), default="stdio",
                   help="stdio (default; the host starts the server) or streamable-http")
    p.add_argument("--host", default="127.0.0.1",
                   help="HTTP address to bind (default 127.0.0.1, loopback; IPv6 as ::1 or [::1])")
    p.add_argument("--port", type=between(0, 65535), default=8765, metavar="N",
                   help="HTTP port (default 8765; 0: any free port)")
    p.add_argument("--path", default="/mcp", help="HTTP path of the endpoint (default /mcp)")
    p.add_argument("--profile", choices=("host-core", "read-only"), default="host-core",
                   help=f"host-core (default): all tools; read-only: {listed(read_only)}, and no private "
                   "file's content (CI, untrusted hosts)")
    p.add_argument("--allow-remote", action="store_true",
                   help=f"allow binding an address other than loopback (needs a bearer token in ${TOKEN_ENV})")
    p.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="another name clients reach the HTTP server by (a DNS name, this machine's address); "
                   "requests whose Host or Origin names anything else are refused (DNS-rebinding protection). "
                   "Repeatable")
    p.add_argument("--token-env", default=TOKEN_ENV, metavar="NAME",
                   help=f"environment variable holding the HTTP bearer token (default {TOKEN_ENV}); when set, "
                   "every HTTP request must send `Authorization: Bearer TOKEN`")
    add_workspace_args(p)
    p.set_defaults(run=run)


def is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _address(given: str, option: str) -> str:
    """An address or host name as a socket takes it: an IPv6 address without its brackets. No port, no
    scheme, no spaces: a usage error says what to give instead."""
    host = given.strip()
    if host.startswith("[") or host.endswith("]"):
        inner = host[1:-1] if host.startswith("[") and host.endswith("]") else ""
        try:
            return str(ipaddress.IPv6Address(inner))
        except ValueError:
            raise UsageError(f"{option} {given!r}: brackets hold an IPv6 address, e.g. [::1]") from None
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        pass
    if ":" in host:
        raise UsageError(f"{option} {given!r} is not an address: give the port with --port, e.g. "
                         f"{option} {host.rsplit(':', 1)[0]} --port {host.rsplit(':', 1)[1]}")
    if not _HOST_NAME.fullmatch(host):
        raise UsageError(f"{option} {given!r} is not a host name or an address, e.g. 127.0.0.1, [::1] or "
                         "host.example.org")
    return host.lower()


def run(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("mcp") is None:
        raise UsageError("the MCP server needs the official MCP SDK: pip install 'vivary-git[mcp]'")
    if not args.path.startswith("/") or any(c.isspace() for c in args.path):
        raise UsageError(f"--path {args.path!r} must start with / and hold no spaces, e.g. /mcp")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port {args.port} is not a TCP port (0-65535)")
    token = os.environ.get(args.token_env, "")
    host = _address(args.host, "--host")
    also = [_address(name, "--allow-host") for name in args.allow_host]
    if args.transport == "streamable-http" and not is_loopback(host):
        if not args.allow_remote:
            raise RefusedError(f"--host {args.host} is not loopback: anyone who reaches it could read and write "
                               "this workspace's memory; pass --allow-remote and set a bearer token in "
                               f"${args.token_env}, or bind 127.0.0.1")
        if len(token) < 16:
            raise RefusedError(f"--host {args.host} needs a bearer token of at least 16 characters in "
                               f"${args.token_env} (e.g. export {args.token_env}=$(openssl rand -hex 32)); "
                               "refusing to serve memory to the network without one")
    from vivary_git.mcp.service import MemoryService

    service = MemoryService(args.cwd, root=args.root, profile=args.profile)
    try:
        service.state()  # a workspace or config error is said now, as a usage error, not at the first request
    except PrivacyError as err:
        # Something in the tree the snapshot refuses (a note that is a symbolic link, say): the user fixes it while
        # the server runs, so it starts, and every tool and resource answers with this refusal until it is fixed,
        # as when it appears while the server runs. Stopping here left a host only "Connection closed".
        print(f"vivary mcp: {err}; serving anyway: every tool answers this refusal until it is fixed",
              file=sys.stderr, flush=True)
    service.usermem().announce()  # a configured user memory that cannot be used: one line, and served without it
    # main.main turns the cyclic collector off for a command's run, which a command that returns soon can afford. A
    # server lives for hours: without the collector every cycle a request leaves behind (a write's snapshot and
    # index session, with the native buffers they hold) stayed until the host closed it, ~1 MB more RSS per call
    # over a soak of 600 writes and searches (bench/bench_mcp_soak.py).
    gc.enable()
    try:
        if args.transport == "stdio":
            from vivary_git.mcp.server import serve_stdio

            serve_stdio(service)
        else:
            from vivary_git.mcp.server import serve_http

            serve_http(service, host=host, port=args.port, path=args.path,
                       token_env=args.token_env if token else None, allow_hosts=also)
    finally:
        service.close()
    return EXIT_OK
