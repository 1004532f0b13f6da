"""Names every checkout can hold: pure, returns `Finding`s.

A vault shared between Linux, macOS and Windows holds, in Git, names one of those file systems cannot: two
files macOS or Windows sees as one (`Note.md` beside `note.md`, `Photo.png` beside `photo.png`, or a file `Assets`
beside a folder `assets/`, on both; one name composed and decomposed on macOS alone, which compares names
normalised, and `ı` beside `i` on Windows alone, which uppercases each character by itself), W226; a name Git
for Windows refuses to check out (its `is_valid_win32_path`: a device name such as `aux` with any extension, a
name ending in a dot or a space, the characters `< > : " | ? * \\` and control characters), W227, which stops
every Windows clone; and a path too long for a Windows checkout without `core.longPaths`, W228. Every file a link
may reach is looked at, notes and attachments alike, in one pass over the paths the check already has; all are
warnings (a Linux-only team may not care), off with `.vivary/graph.toml` `[portable]` (docs/config.md).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence

from vivary_git.models import Finding

CODES = frozenset(("W226", "W227", "W228"))  # findings of a document's name, not of its content

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

def documents(findings: Iterable[Finding], others: Collection[str] = ()) -> set[str]:
    """The paths of these findings that are documents (a check's `clean` counts the others): a name's finding
    (W226, W227, W228) may be on an attachment, or on a note left out of the graph (a template, an excluded
    draft: among `others`, the files that are no documents), which no check reads."""
    out: set[str] = set()
    names: list[str] = []
    for f in findings:
        if f.code not in CODES:
            out.add(f.path)
        elif f.path.endswith((".md", ".markdown")):  # is_note
            names.append(f.path)
    if names:
        left_out = set(others)
        out.update(p for p in names if p not in left_out)
    return out


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


def keys(path: str) -> tuple[str, str]:
    """`path` as macOS and as Windows tell names apart (`macos_key`, `windows_key`): two paths are one file on
    a system whose key of them is one."""
    return macos_key(path), windows_key(path)


def macos_key(text: str) -> str:
    """`text` as a Mac's file system (APFS, case-insensitive as macOS formats it) compares names: canonically
    decomposed and case-folded, then decomposed again (Unicode's canonical caseless match), so a name composed
    and decomposed is one, `ẞ`, `ß` and `ss` are one and `K` (the Kelvin sign) is `K`."""
    return text.lower() if text.isascii() else _nfd(_nfd(text).casefold())


def windows_key(text: str) -> str:
    """`text` as NTFS compares names: each character of the Basic Multilingual Plane uppercased alone by the
    volume's upcase table (one character for one: `ß` stays `ß` and `ı` is `I`, as `i` is), nothing normalised
    (a name composed and decomposed is two), and a character past U+FFFF (an emoji) as it is."""
    up = text.upper()
    if len(up) == len(text) and (text.isascii() or _ASTRAL.search(text) is None):
        return up  # every character uppercased to one: as the table does
    parts = _otherwise().split(text)  # the characters the table keeps or uppercases otherwise, at odd places
    parts[0::2] = [p.upper() for p in parts[0::2]]
    parts[1::2] = [_upcase(c) for c in parts[1::2]]
    return "".join(parts)


_ASTRAL = re.compile("[\U00010000-\U0010ffff]")  # a character past U+FFFF: an emoji, a Deseret letter


@functools.cache
def _otherwise() -> re.Pattern[str]:
    """The characters NTFS uppercases otherwise than `str.upper` does: each one `str.upper` makes several (`ß`,
    `ǰ`, `ﬁ`) and each past U+FFFF (the table holds none)."""
    several = "".join(re.escape(chr(c)) for c in range(0x80, 0x10000) if len(chr(c).upper()) != 1)
    return re.compile(f"([{several}\U00010000-\U0010ffff])")


def _upcase(char: str) -> str:
    """`char` as NTFS uppercases it alone (`windows_key`)."""
    if char > "\uffff":
        return char
    up = char.upper()
    if len(up) == 1:
        return up
    title = char.title()  # a Greek letter with ypogegrammeni: its one-character uppercase is its titlecase
    return title if len(title) == 1 else char


def _nfd(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _fold_nonascii(text: str) -> str:
    return unicodedata.normalize("NFC", text).lower().replace("\u03c2", "\u03c3")


def findings(paths: Sequence[str], *, collisions: bool = True, windows: bool = True,
             duplicates: Mapping[str, str] | None = None,
             order: Callable[[str], str] | None = None, prefix: str = "") -> list[Finding]:
    """W226 for each path that is the same file as an earlier one on macOS or Windows, naming that one, and for
    each file whose name is a folder's there; W227 for each path Git for Windows refuses; W228 for each path too
    long for a Windows checkout (`windows` turns both off). `paths`: every file a link may reach, notes and
    attachments alike, in document order, or in any order with `order` its sort key (sorted only when there is a
    finding); `duplicates`: each path reported as a duplicate id (E130) and the path that has the id, a pair
    that finding names already (`Café.md` in two Unicode forms in a vault, `Alpha.md` and `alpha.md` with the
    contract's ids); `prefix`: the workspace's folder in the repository ('' at its top), which a checkout writes
    before each path (W228)."""
    duplicates = duplicates or {}
    lengths = windows
    # The common case, a vault with none, is decided over all paths at once, joined by line breaks into one
    # string folded and searched whole (a path per call was 0.1 s of a 100,000-note check; this is a tenth of it).
    # A name holding a line break (W227 itself) is looked at path by path.
    joined = "\n".join(paths)
    macs: list[str] | None = None  # each path's `macos_key`
    wins: list[str] | None = None  # and its `windows_key`
    folders = collisions
    if joined.count("\n") == len(paths) - 1:
        plain = joined.isascii()
        low = joined.lower() if plain else _fold_nonascii(joined)
        if collisions and paths:
            macs = low.split("\n") if plain else macos_key(joined).split("\n")
            wins = macs if plain else windows_key(joined).split("\n")
            dirs = "\n".join(_folders(paths))  # every folder once, spelt by each system below
            spelt = [(macs, dirs.lower())] if plain else [(macs, macos_key(dirs)), (wins, windows_key(dirs))]
            collisions = folders = False
            for got, names in spelt:
                unique = set(got)
                collisions = collisions or len(unique) != len(got)
                folders = folders or (bool(dirs) and not unique.isdisjoint(names.split("\n")))
        if windows:
            lines = f"\n{low}\n"
            windows = any(r.search(lines) for r in _WINDOWS_LINES)
    # A path is too long only when it has more characters than half what a folder may have past the workspace's
    # own folder: one pass over the lengths, and a look at those few.
    limit = _shortest_long(prefix)
    long = {} if not lengths or not paths or max(map(len, paths)) <= limit else \
        {p: f for p in paths if len(p) > limit and (f := long_path(p, prefix)) is not None}
    if not (collisions or folders or windows):
        return sorted(long.values(), key=lambda f: order(f.path)) if order is not None else list(long.values())
    if order is not None:
        paths = sorted(paths, key=order)
        macs = wins = None
    if (collisions or folders) and (macs is None or wins is None):
        macs, wins = [macos_key(p) for p in paths], [windows_key(p) for p in paths]
    # Each system's files named as a folder there, by key
    folder_of = [_folder_names(paths, k) for k in (macs, wins)] if folders and macs and wins else []
    out: list[Finding] = []
    first: tuple[dict[str, str], dict[str, str]] = ({}, {})
    for at, path in enumerate(paths):
        if collisions and macs is not None and wins is not None:
            seen = (first[0].setdefault(macs[at], path), first[1].setdefault(wins[at], path))
            for other in dict.fromkeys(seen):  # the earlier path each system takes it for, each once
                if other != path and duplicates.get(path) != other:
                    out.append(collision(path, other))
        if folder_of and macs is not None and wins is not None:
            named = (folder_of[0].get(macs[at]), folder_of[1].get(wins[at]))
            for folder in dict.fromkeys(f for f in named if f is not None):
                where = _systems(folder == named[0], folder == named[1])
                out.append(Finding(path, 1, "warning", "W226",
                                   f"'{path}' and the folder '{folder}/' are one name on {where}: a checkout "
                                   f"there cannot hold both and leaves one out; rename one "
                                   f"(git mv '{path}' NEW-NAME)"))
        if windows:
            refused = windows_problem(path)
            if refused is not None:
                problem, where = refused
                out.append(Finding(path, 1, "warning", "W227",
                                   f"Git for Windows cannot check out '{path}': {problem}; every Windows clone "
                                   f"stops at it: rename it (git mv '{where}' NEW-NAME)"))
        if path in long:
            out.append(long[path])
    return out


# Git for Windows writes a file only when the checkout's folder, a separator and the path make at most 259
# UTF-16 units (MAX_PATH, 260, holds the closing NUL), and makes a folder only within 247 (CreateDirectoryW: 248),
# unless `core.longPaths` is set (compat/mingw.c `handle_long_path`). A checkout's own folder is allowed 60 of
# them with its separator: `C:\Users\name\Documents\vault\` is 30, a OneDrive folder of a company account 60.
CHECKOUT_FOLDER = 60
LONGEST_PATH = 259 - CHECKOUT_FOLDER  # 199
_LONGEST_FOLDER = 247 - CHECKOUT_FOLDER  # 187


def _units(text: str) -> int:
    """`text`'s length in UTF-16 units, as Windows counts it: a character past U+FFFF (an emoji) is two."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


def _lead(prefix: str) -> int:
    """The UTF-16 units a checkout writes before a workspace-relative path: the workspace's folder and its `/`."""
    return _units(prefix) + 1 if prefix else 0


def _shortest_long(prefix: str) -> int:
    """The most characters a workspace-relative path may have and never be too long, whatever they are (each is
    at most two UTF-16 units): half what a folder may have past the workspace's folder and its separator."""
    return (_LONGEST_FOLDER - _lead(prefix)) // 2


def long_path(path: str, prefix: str = "") -> Finding | None:
    """W228 when a checkout of `path` (workspace-relative) in a typical folder passes what Git for Windows writes
    without `core.longPaths`: the file's path, or the folder holding it (named as the one to shorten), counted
    from the repository's top, where `prefix` is the workspace's folder ('' at the top): a checkout writes it
    too (`--root notes`, or a workspace a `tropo.toml` marks in a subfolder)."""
    if len(path) <= _shortest_long(prefix):
        return None
    folder = path.rpartition("/")[0]
    lead = _lead(prefix)
    size = lead + _units(path)
    folder_size = lead + _units(folder) if folder else max(lead - 1, 0)
    if size <= LONGEST_PATH and folder_size <= _LONGEST_FOLDER:
        return None
    counted = f" from the repository's top (the workspace's folder '{prefix}/' counts)" if prefix else ""
    if folder_size > _LONGEST_FOLDER:
        shorten = f"git mv '{folder}' NEW-NAME" if folder else \
            f"git mv '{prefix}' NEW-NAME from the repository's top"
        why = f"its folder's path has {folder_size} characters{counted}, over the {_LONGEST_FOLDER} a folder's may have"
    else:
        shorten = f"git mv '{path}' NEW-NAME"
        why = f"it has {size} characters{counted}, over the {LONGEST_PATH} a path may have"
    return Finding(path, 1, "warning", "W228",
                   f"'{path}' is too long for a Windows checkout: {why} in a checkout folder of up to "
                   f"{CHECKOUT_FOLDER} characters (Windows' MAX_PATH is 260), so Git for Windows leaves it out "
                   f"unless core.longPaths is set; shorten it ({shorten}) or set "
                   "`git config core.longPaths true` in each Windows clone")


def _folders(keys: Iterable[str]) -> set[str]:
    """Every folder of these paths and its parents."""
    out: set[str] = set()
    for parent in {k.rpartition("/")[0] for k in keys}:
        while parent and parent not in out:
            out.add(parent)
            parent = parent.rpartition("/")[0]
    return out


def _folder_names(paths: Sequence[str], keys: Sequence[str]) -> dict[str, str]:
    """The files whose folded path is a folder's, each (its key) to that folder as the first path holding it spells
    it: `Assets` beside `assets/pic.png` -> {'assets': 'assets'}."""
    files = set(keys)
    out: dict[str, str] = {}
    for path, key in zip(paths, keys, strict=True):
        parts, folded = path.split("/"), key.split("/")
        if len(parts) != len(folded):
            continue  # folding changed a separator: no name to match
        for depth in range(1, len(parts)):
            at = "/".join(folded[:depth])
            if at in files and at not in out:
                out[at] = "/".join(parts[:depth])
    return out


def _systems(macos: bool, windows: bool) -> str:
    return "macOS and Windows" if macos and windows else "macOS" if macos else "Windows"


def systems(path: str, other: str) -> str:
    """Where `path` and `other` are one file, in words: `macOS and Windows`, `macOS` or `Windows`."""
    return _systems(macos_key(path) == macos_key(other), windows_key(path) == windows_key(other))


def collision(path: str, other: str) -> Finding:
    """W226: `path` and `other` are two paths to Git and one file on macOS, on Windows, or on both (named)."""
    where = systems(path, other)
    if _nfc(path) == _nfc(other):
        why = "the same name in two Unicode forms (composed and decomposed, as macOS writes it)"
    elif (_nfc(path) == path) != (_nfc(other) == other):
        why = "names that differ in case and in Unicode form"
    else:
        why = "names that differ only in case"
    return Finding(path, 1, "warning", "W226",
                   f"'{path}' and '{other}' are one file on {where} ({why}): a checkout there keeps "
                   f"one of them, shows it in place of the other and reports it modified; rename one "
                   f"(git mv '{path}' NEW-NAME)")


def _nfc(text: str) -> str:
    return text if text.isascii() else unicodedata.normalize("NFC", text)
