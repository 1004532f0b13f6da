"""Secrets never become memories: text that looks like a credential is refused before it is written.

Two detectors run on every line, always: vivary-git's own patterns for today's token formats (GitHub
`ghp_`/`gho_`/`ghu_`/`ghs_`/`ghr_`/`github_pat_`, GitLab `glpat-`, Anthropic `sk-ant-`, OpenAI `sk-proj-`
and the older forms, Google `AIza`, Hugging Face `hf_`, npm `npm_`, Slack `xox?-`, Stripe live keys, AWS
access keys, JWTs, PEM private keys, an `Authorization: Bearer` header, `password = ...` keywords), and,
when it is installed (it comes with the `mcp` extra), detect-secrets' plugins, run as on a config file
so an unquoted `password=hunter2` counts. Installing detect-secrets only adds rules: it once replaced the
built-in patterns, and tokens it does not know (`github_pat_`, `sk-ant-`, `hf_`) were committed. Its
entropy plugins are left out (a commit id or a checksum in a memory is not a secret) and so is the
public-IP one.

A refusal names the rule, the field and the line, never the value, so the secret is not echoed into an
agent's context, a log, a file name or a commit.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from typing import Any, NamedTuple

from vivary_git.errors import RefusedError

__all__ = ["SecretError", "SecretHit", "find_secret", "refuse_secrets", "scan", "scanner_name"]

# detect-secrets plugins that flag what is normal in notes (hashes, ids, addresses).
_NOISY = frozenset({"Base64 High Entropy String", "Hex High Entropy String", "Public IP (ipv4)"})
# As a config file: KeywordDetector then reads `key = value` and `key: value` without quotes.
_AS_FILE = "memory.ini"
BUILTIN = "vivary-git's own patterns"

# Not preceded by a letter, digit or `_`: a prefix inside a longer word is not a token's start.
_START = r"(?<![A-Za-z0-9_])"
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((name, re.compile(rx)) for name, rx in (
    ("Private Key", r"-----BEGIN[ A-Z0-9_-]*PRIVATE KEY( BLOCK)?-----|PuTTY-User-Key-File-\d+:"),
    ("AWS Access Key", _START + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}(?![A-Za-z0-9])"),
    ("GitHub Token", _START + r"(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("GitLab Token", _START + r"gl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_-]{20,}"),
    ("Anthropic API Key", _START + r"sk-ant-[a-z]{2,8}\d{2}-[A-Za-z0-9_-]{20,}"),
    ("OpenAI API Key", _START + r"(?:sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}"
                       r"|sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|sk-[A-Za-z0-9]{48}(?![A-Za-z0-9]))"),
    ("Google API Key", _START + r"(?:AIza[0-9A-Za-z_-]{35}|GOCSPX-[0-9A-Za-z_-]{28}|ya29\.[0-9A-Za-z_-]{30,})"),
    ("Hugging Face Token", _START + r"hf_[A-Za-z0-9]{30,}"),
    ("npm Token", _START + r"npm_[A-Za-z0-9]{36}(?![A-Za-z0-9])"),
    ("Slack Token", _START + r"(?:xox[abposre]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{20,})"
                    r"|hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]{8,}"),
    ("Stripe Access Key", _START + r"(?:sk|rk)_live_[0-9a-zA-Z]{20,}"),
    ("JSON Web Token", _START + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
    # A header as curl, HTTP or a config file writes it; `Bearer <token>` and `Bearer $TOKEN` are
    # placeholders. A bare `Bearer X` needs a digit in X, so prose ("the bearer of this letter") passes.
    ("Bearer Token", r"(?i)\b(?:proxy-)?authorization\s*[:=]\s*[\"']?(?:bearer|token|basic)\s+[A-Za-z0-9._~+/=-]{8,}"
                     r"|\bbearer\s+(?=[A-Za-z0-9._~+/-]*[0-9])[A-Za-z0-9._~+/-]{20,}"),
    # A value that is a placeholder (`${DB_PASSWORD}`, `<your key>`, `%(secret)s`) is not one, as to detect-secrets.
    ("Secret Keyword", r"(?i)\b(?:password|passwd|pwd|secret|api[_-]?key|apikey|auth[_-]?token|access[_-]?token"
                       r"|private[_-]?key|client[_-]?secret)\s*[:=]\s*['\"]?(?![$<{%])[^\s'\"]{3,}"),
))


class SecretError(RefusedError):
    """The text of a memory matches a credential pattern."""


class SecretHit(NamedTuple):
    field: str  # which part of the write: "text", "title", "tag", ...
    line: int  # 1-based line of that field
    rule: str  # the pattern's name, e.g. "GitHub Token"
    scanner: str  # BUILTIN or "detect-secrets"


@functools.cache
def _plugins() -> tuple[Any, ...] | None:
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except ImportError:
        return None
    mapping: dict[str, Any] = get_mapping_from_secret_type_to_class()
    return tuple(cls() for name, cls in sorted(mapping.items()) if name not in _NOISY)


def scanner_name() -> str:
    return f"detect-secrets and {BUILTIN}" if _plugins() is not None else BUILTIN


def _scan_line(line: str) -> tuple[str, str] | None:
    """(rule, scanner) of the first rule `line` matches: detect-secrets' first (its names are the ones
    users know), then the built-in patterns, which run whether or not it is installed."""
    for plugin in _plugins() or ():
        for found in plugin.analyze_line(filename=_AS_FILE, line=line, line_number=1):
            return str(found.type), "detect-secrets"
    for name, pattern in _PATTERNS:
        if pattern.search(line):
            return name, BUILTIN
    return None


def scan(fields: Iterable[tuple[str, str | None]]) -> SecretHit | None:
    """The first credential-looking line of the (field, text) pairs, or None. None texts are skipped."""
    for field, text in fields:
        if not isinstance(text, str) or not text:
            continue
        for n, line in enumerate(text.splitlines() or [""], 1):
            if not line.strip():
                continue
            got = _scan_line(line)
            if got is not None:
                return SecretHit(field, n, *got)
    return None


def find_secret(fields: Iterable[tuple[str, str]]) -> tuple[str, int, str] | None:
    """(field, 1-based line, rule name) of the first credential-looking line, or None."""
    hit = scan(fields)
    return None if hit is None else (hit.field, hit.line, hit.rule)


def refuse_secrets(fields: Iterable[tuple[str, str | None]]) -> None:
    """Raise `SecretError` when any line of the (field, text) pairs looks like a credential. The message
    holds the field's label, the line and the rule: callers label fields by role, never by value."""
    hit = scan(fields)
    if hit is not None:
        raise SecretError(
            f"refusing to remember this: {hit.field} line {hit.line} looks like a credential ({hit.rule}, found by "
            f"{hit.scanner}); memories are committed to Git and shown to agents, so they must never hold a secret: "
            "remove it (say where the secret lives instead, e.g. \"the deploy key is in the team vault\")"
        )
