"""Secrets never become memories: text that looks like a credential is refused before it is written.

The patterns are detect-secrets' plugins (a well-kept scanner: AWS, GitHub, GitLab, Slack, Stripe,
private key blocks, JWTs, `password = ...` keywords, ...), run as on a config file so an unquoted
`password=hunter2` counts. Its entropy plugins are left out (a commit id or a checksum in a memory is
not a secret) and so is the public-IP one. Without the library (it comes with the `mcp` extra), a short
list of the same most common patterns stands in. A refusal names the pattern, the field and the line,
never the value, so the secret is not echoed into an agent's context or a log.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any

from vivary_git.errors import RefusedError

__all__ = ["SecretError", "find_secret", "refuse_secrets", "scanner_name"]

# detect-secrets plugins that flag what is normal in notes (hashes, ids, addresses).
_NOISY = frozenset({"Base64 High Entropy String", "Hex High Entropy String", "Public IP (ipv4)"})
# As a config file: KeywordDetector then reads `key = value` and `key: value` without quotes.
_AS_FILE = "memory.ini"

_FALLBACK = (
    ("Private Key", re.compile(r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY( BLOCK)?-----")),
    ("AWS Access Key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}\b")),
    ("GitHub Token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b|\bgithub_pat_[A-Za-z0-9_]{22,}")),
    ("GitLab Token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20}\b")),
    ("Slack Token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("Stripe Access Key", re.compile(r"\b(?:sk|rk)_live_[0-9a-zA-Z]{24,}")),
    ("OpenAI Token", re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")),
    ("Secret Keyword", re.compile(
        r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|apikey|auth[_-]?token|access[_-]?token|private[_-]?key)"
        r"\s*[:=]\s*['\"]?[^\s'\"]{3,}")),
)


class SecretError(RefusedError):
    """The text of a memory matches a credential pattern."""


@functools.cache
def _plugins() -> tuple[Any, ...] | None:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:
        return None
    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    return tuple(cls() for name, cls in sorted(mapping.items()) if name not in _NOISY)


def scanner_name() -> str:
    return "detect-secrets" if _plugins() is not None else "built-in patterns (install vivary-git[mcp] for more)"


def _scan_line(line: str) -> str | None:
    plugins = _plugins()
    if plugins is None:
        for name, pattern in _FALLBACK:
            if pattern.search(line):
                return name
        return None
    for plugin in plugins:
        for found in plugin.analyze_line(filename=_AS_FILE, line=line, line_number=1):
            return str(found.type)
    return None


def find_secret(fields: Iterable[tuple[str, str]]) -> tuple[str, int, str] | None:
    """(field, 1-based line, pattern name) of the first credential-looking line, or None."""
    for field, text in fields:
        for n, line in enumerate(text.splitlines() or [""], 1):
            if not line.strip():
                continue
            name = _scan_line(line)
            if name is not None:
                return field, n, name
    return None


def refuse_secrets(fields: Iterable[tuple[str, str]]) -> None:
    hit = find_secret(fields)
    if hit is not None:
        field, line, name = hit
        raise SecretError(
            f"refusing to remember this: {field} line {line} looks like a credential ({name}, found by "
            f"{scanner_name()}); memories are committed to Git and shown to agents, so they must never hold a secret: "
            "remove it (say where the secret lives instead, e.g. \"the deploy key is in the team vault\")"
        )
