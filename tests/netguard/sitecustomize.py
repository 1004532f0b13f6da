"""Loaded by every Python process of the Cognee end-to-end tests (their PYTHONPATH holds this folder).

With VIVARY_NETGUARD_LOG set: any socket connection or name lookup to anything but loopback is refused and
recorded in that file (one line each), in this process and in every Python process it starts.
With VIVARY_MODULES_LOG set: at exit, whether `cognee` was imported is appended to that file.
"""

from __future__ import annotations

import os

_LOG = os.environ.get("VIVARY_NETGUARD_LOG")
_MODULES = os.environ.get("VIVARY_MODULES_LOG")

if _LOG:
    import ipaddress
    import socket

    def _record(line: str) -> None:
        with open(_LOG, "a", encoding="utf-8") as fh:
            fh.write(f"{line} (pid {os.getpid()})\n")

    def _loopback(host: object) -> bool:
        if isinstance(host, bytes):
            host = host.decode("ascii", "replace")
        if not isinstance(host, str):
            return False
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
        except ValueError:
            return False

    _connect = socket.socket.connect
    _connect_ex = socket.socket.connect_ex
    _getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: object) -> None:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):  # type: ignore[index]
            _record(f"connect {address!r}")
            raise ConnectionRefusedError(f"blocked by the test: {address!r} is not loopback")
        _connect(self, address)  # type: ignore[arg-type]

    def connect_ex(self: socket.socket, address: object) -> int:
        if self.family in (socket.AF_INET, socket.AF_INET6) and not _loopback(address[0]):  # type: ignore[index]
            _record(f"connect {address!r}")
            return 111
        return _connect_ex(self, address)  # type: ignore[arg-type]

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        if host is not None and not _loopback(host):
            _record(f"getaddrinfo {host!r}")
            raise socket.gaierror(socket.EAI_NONAME, f"blocked by the test: {host!r} is not loopback")
        return _getaddrinfo(host, *args, **kwargs)  # type: ignore[arg-type]

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]

if _MODULES:
    import atexit
    import sys

    def _report() -> None:
        with open(_MODULES, "a", encoding="utf-8") as fh:
            fh.write(f"cognee imported: {'cognee' in sys.modules}\n")

    atexit.register(_report)
