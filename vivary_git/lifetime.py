"""What a `git vivary` process keeps until it exits, and how it exits.

A cold `check` of 10,000 notes ends holding millions of small objects (parses, facts, the graph, the
caches' entries). Freeing them one by one when the command returns, then collecting cycles as the
interpreter shuts down, took ~0.2 s of CPU (measured: 0.12-0.14 s to free the workspace, 0.07-0.08 s
for the last collection), all of it after the answer was printed. The console script (`main.cli`)
keeps each opened workspace until the end and then leaves with `os._exit`, after flushing its output
and running the `atexit` handlers: the system takes the whole address space back at once. The cyclic
collector, off while a command runs (`main.main`), stays off until then: turned back on, its first pass
walked every object the command had allocated (~0.12 s after a first recall of 10,000 notes). Callers that
run commands in-process (tests, the MCP server) keep nothing: `keep` is a no-op for them.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import sys
import threading
from typing import NoReturn

_kept: list[object] | None = None
_LIMIT = 8  # a command opens one or two workspaces; a long-lived process never piles them up


def keep_until_exit(obj: object) -> None:
    """Hold `obj` until the process exits, when `leave` will end it (no-op in-process)."""
    if _kept is not None and len(_kept) < _LIMIT:
        _kept.append(obj)


def start() -> None:
    """From here on this process ends through `leave`: what `keep_until_exit` is given is never freed."""
    global _kept
    _kept = []


def leaving() -> bool:
    """Whether this process ends through `leave` (the console script), freeing nothing before it exits."""
    return _kept is not None


def leave(code: int) -> NoReturn:
    """Exit with `code` without tearing the interpreter down: output flushed, `atexit` handlers run.
    When a thread that is not a daemon still runs (one loading a model, say), exit as usual instead,
    so the interpreter waits for it (with the cyclic collector back on, as a usual exit has it)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # the reader left, or the stream is closed
            stream.flush()
    main = threading.main_thread()
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not main):
        gc.enable()  # the interpreter's usual end: its last collection as well
        sys.exit(code)
    atexit._run_exitfuncs()
    os._exit(code)
