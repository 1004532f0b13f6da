"""The one family of errors a user can cause, and the exit codes they map to.

Every message names what went wrong, where (file and line when there is one) and how to fix it.
`main` turns a `VivaryError` into that message on stderr and its exit code; nothing else is caught
there, so a bug still shows its traceback instead of hiding behind a friendly line.
"""

from __future__ import annotations

from collections.abc import Sequence

# Documented in docs/exit-codes.md; keep the two in step.
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as Git and coreutils report a reader that went away


class VivaryError(Exception):
    """A problem the user can fix. `str(err)` is the whole message; `detail` holds another program's
    own words (Git's error, line by line), shown under it."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, *, detail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.detail = tuple(detail)


class UsageError(VivaryError):
    """Bad command-line arguments or an unknown node, revision or path."""


class ConfigError(VivaryError):
    """`tropo.toml`, a pack or `.vivary/*.toml` is invalid (includes E120, loosening a rule). `file` and
    `key` (the TOML key path, `("links", "case")`) say where, when it is one value: whoever holds the
    file's text puts its line in the message (`config.located`) and in `line`. `file` is relative to the
    workspace; `prefix`, once known, is the workspace's folder in the repository (`ci` annotates the file)."""

    def __init__(self, message: str, *, detail: Sequence[str] = (), file: str | None = None,
                 key: tuple[str, ...] = (), line: int | None = None) -> None:
        super().__init__(message, detail=detail)
        self.file = file
        self.key = key
        self.line = line
        self.prefix: str | None = None


class GitError(VivaryError):
    """Git could not answer: not a repository, a bad revision, an unmerged index, a tree whose files the clone
    lacks (`git.MissingObject`: a partial clone's, or a damaged repository's)."""


class RefusedError(VivaryError):
    """The command could run but refuses to, to keep a promise (stale index, privacy)."""

    exit_code = EXIT_REFUSED


class PrivacyError(RefusedError):
    """Git could not decide privacy, or a snapshot file is unsafe to read; nothing was admitted (privacy.py)."""
