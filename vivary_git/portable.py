"""Names every checkout can hold: pure, returns `Finding`s.

A vault shared between Linux, macOS and Windows holds, in Git, names one of those file systems cannot: two
notes macOS and Windows see as one file (`Note.md` beside `note.md`, or one name composed and decomposed),
W226; and a name Git for Windows refuses to check out (its `is_valid_win32_path`: a device name such as `aux`
with any extension, a name ending in a dot or a space, the characters `< > : " | ? * \\` and control
characters), W227, which stops every Windows clone. One pass over the paths the check already has; both are
warnings (a Linux-only team may not care), off with `.vivary/graph.toml` `[portable]` (docs/config.md).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping, Sequence

from vivary_git.models import Finding

CODES = frozenset(("W226", "W227"))  # findings of a document's name, not of its content

# The device names Git for Windows refuses as a file or folder name, with any extension and spaces before it
# (its `is_valid_win32_path`): `con`, `aux.md`, `COM1 .txt`.
_WINDOWS_DEVICE = re.compile(r"(con|prn|aux|nul|com[1-9]|lpt[1-9]|conin\$|conout\$) *(\..*)?", re.IGNORECASE)
# What Git for Windows refuses anywhere in a name: these characters and the controls U+0001-U+001F (a path
# holds no NUL). `\` is a folder separator there, so a Linux name holding one is not the path Git stored.
_WINDOWS_CHARS = re.compile(r'[<>:"|?*\\\x01-\x1f]')
# Any of the three, anywhere in a path: one search decides the common case.
_WINDOWS_ANY = re.compile(r'[<>:"|?*\\\x01-\x1f]|[. ](?:/|$)|(?:^|/)(?:con|prn|aux|nul|com[1-9]|lpt[1-9]|conin\$|'
                          r'conout\$) *(?:\.[^/]*)?(?:/|$)', re.IGNORECASE)
# The same in lowercased paths, each between line breaks (a line break in a name is looked for apart): three
# searches, each quicker than one of their alternatives.
_WINDOWS_LINES = (re.compile(r'[<>:"|?*\\\x01-\x09\x0b-\x1f]'), re.compile(r"[. ][/\n]"),
                  re.compile(r"[/\n](?:con|prn|aux|nul|com[1-9]|lpt[1-9]|conin\$|conout\$) *(?:\.[^/\n]*)?[/\n]"))

def windows_refuses(part: str) -> bool:
    """Whether Git for Windows refuses `part` as a file or folder name, so a commit holding it stops every Windows
    checkout: a device name (`con`, `aux.md`) or a name ending in a dot or a space (Windows drops them)."""
    return part.endswith((".", " ")) or bool(_WINDOWS_DEVICE.fullmatch(part))


def windows_problem(path: str) -> tuple[str, str] | None:
    """What in `path` Git for Windows refuses to check out, and the file or folder to rename (its path), or None:
    the first name in it that holds a character Windows refuses, is a device name, or ends in a dot or a space."""
    if _WINDOWS_ANY.search(path) is None:
        return None  # the common case, one search over the whole path
    parts = path.split("/")
    for at, part in enumerate(parts):
        where = "/".join(parts[:at + 1])
        bad = _WINDOWS_CHARS.search(part)
        if bad is not None:
            char = bad.group()
            seen = " (Obsidian refuses it too, and macOS Finder shows it as '/')" if char == ":" else ""
            return f"'{char}' in '{part}' is a character Windows refuses in a name{seen}", where
        if _WINDOWS_DEVICE.fullmatch(part):
            return (f"'{part}' is a device name Windows reserves (con, prn, aux, nul, com1-com9, lpt1-lpt9, conin$, "
                    "conout$, with any extension)"), where
        if part.endswith((".", " ")):
            end = "a dot" if part.endswith(".") else "a space"
            return f"'{part}' ends in {end}, which Windows drops from a name", where
    return None


def fold(path: str) -> str:
    """`path` as a case-insensitive, normalising file system tells names apart: in NFC (macOS stores names
    decomposed and matches either form), lowercased, with `ς` as `σ` (both are `Σ` uppercased)."""
    return path.lower() if path.isascii() else _fold_nonascii(path)


def _fold_nonascii(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower().replace("\u03c2", "\u03c3")


def findings(paths: Sequence[str], *, collisions: bool = True, windows: bool = True,
             duplicates: Mapping[str, str] | None = None) -> list[Finding]:
    """W226 for each path that is the same file as an earlier one on macOS or Windows, naming that one; W227 for
    each path Git for Windows refuses. `paths` in document order; `duplicates`: each path reported as a duplicate
    id (E130) and the path that has the id, a pair that finding names already (`Café.md` in two Unicode forms in
    a vault, `Alpha.md` and `alpha.md` with the contract's ids)."""
    duplicates = duplicates or {}
    # The common case, a vault with neither, is decided over all paths at once, joined by line breaks into one
    # string folded and searched whole (a path per call was 0.1 s of a 100,000-note check; this is a tenth of it).
    # A name holding a line break (W227 itself) is looked at path by path.
    joined = "\n".join(paths)
    keys: list[str] | None = None
    if joined.count("\n") == len(paths) - 1:
        low = joined.lower() if joined.isascii() else _fold_nonascii(joined)
        if collisions and paths:
            keys = low.split("\n")
            collisions = len(set(keys)) != len(keys)
        if windows:
            lines = f"\n{low}\n"
            windows = any(r.search(lines) for r in _WINDOWS_LINES)
    if not (collisions or windows):
        return []
    out: list[Finding] = []
    first: dict[str, str] = {}
    for at, path in enumerate(paths):
        if collisions:
            seen = first.setdefault(keys[at] if keys is not None else fold(path), path)
            if seen != path and duplicates.get(path) != seen:
                out.append(collision(path, seen))
        if windows:
            refused = windows_problem(path)
            if refused is not None:
                problem, where = refused
                out.append(Finding(path, 1, "warning", "W227",
                                   f"Git for Windows cannot check out '{path}': {problem}; every Windows clone "
                                   f"stops at it: rename it (git mv '{where}' NEW-NAME)"))
    return out


def collision(path: str, other: str) -> Finding:
    """W226: `path` and `other` are two paths to Git and one file on macOS and Windows."""
    if _nfc(path) == _nfc(other):
        why = "the same name in two Unicode forms (composed and decomposed, as macOS writes it)"
    elif (_nfc(path) == path) != (_nfc(other) == other):
        why = "names that differ in case and in Unicode form"
    else:
        why = "names that differ only in case"
    return Finding(path, 1, "warning", "W226",
                   f"'{path}' and '{other}' are one file on macOS and Windows ({why}): a checkout there keeps "
                   f"one of them, shows it in place of the other and reports it modified; rename one "
                   f"(git mv '{path}' NEW-NAME)")


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)
