"""How a value is shown: one escaping for lines of text, one for JSON, one for a file name.

Notes, file names, config values, revision names and Git's own messages are a stranger's input,
and what we print is read by terminals (control bytes are instructions to them) and by CI runners:
GitHub's takes a line that starts with `::name` (after spaces) as a workflow command, and its
legacy `##[name]` anywhere in a line. A value is therefore never printed raw: `text()` keeps it on
its line and inert, `json_text()` does the same inside JSON strings without changing what a JSON
reader gets, and `name()` gives a file name that is not UTF-8 a form every encoder accepts.
docs/output.md documents all three; tests hold them to it.
"""

from __future__ import annotations

import re
from typing import Any

# File names are decoded with `surrogateescape` (exact: the bytes Git gave us come back); a byte
# that is not UTF-8 is then one of U+DC80..U+DCFF, which no encoder or terminal accepts.
_SURROGATE = re.compile(r"[\ud800-\udfff]")
# C0 and C1 controls, DEL, and the separators some consoles break lines at (U+0085 is C1); the bidirectional
# controls, which make a terminal show the rest of a line reversed (a name `invoice<U+202E>dm.exe.md` reads as
# ending in `.exe`; "Trojan Source", CVE-2021-42574); and the invisible zero-width space, word joiner and BOM,
# which make two names that print alike differ. The joiners U+200C and U+200D are kept: Persian, Indic
# scripts and emoji sequences need them.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060\u2066-\u2069"
                      r"\ufeff\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_COMMAND_START = re.compile(r"\s*:(?=:)")
_LEGACY_COMMAND = "##["
_JSON_TRIGGERS = (b"\xc2", b"\xe2\x80\xa8", b"\xe2\x80\xa9")
_JSON_UNSAFE = re.compile(rb"\x7f|\xc2[\x80-\x9f]|\xe2\x80[\xa8\xa9]|##\[")


def _byte_or_code(ch: str) -> str:
    c = ord(ch)
    if 0xDC80 <= c <= 0xDCFF:
        return f"\\x{c - 0xDC00:02x}"  # the byte that was not UTF-8
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def name(value: str) -> str:
    """A file name (or any text holding one) as valid Unicode: each byte that is not UTF-8 becomes
    `\\xNN`, everything else is unchanged. For JSON, SARIF and annotations; `text()` for lines."""
    if value.isascii() or not _SURROGATE.search(value):
        return value
    return _SURROGATE.sub(lambda m: _byte_or_code(m.group()), value)


def text(value: object) -> str:
    """One value for a line of text output: it can neither end the line nor start a command.

    `\\n`, `\\r`, `\\t` as such; other controls (C0, DEL, C1), U+2028, U+2029, the bidirectional controls,
    the zero-width space, word joiner and BOM, and bytes that are not UTF-8 as `\\xNN` / `\\uNNNN`; `##[` as
    `##\\x5b`; and a value that begins (after spaces) with `::` shows its first colon as `\\x3a`.
    A plain value comes back unchanged."""
    s = value if isinstance(value, str) else str(value)
    if s.isprintable() and _LEGACY_COMMAND not in s and not (s[:1] == ":" or s[:1].isspace()):
        return s
    s = _CONTROL.sub(lambda m: _NAMED.get(m.group()) or _byte_or_code(m.group()), s)
    s = s.replace(_LEGACY_COMMAND, "##\\x5b")
    m = _COMMAND_START.match(s)
    if m is not None:
        s = s[:m.end() - 1] + "\\x3a" + s[m.end():]
    return s


def controls(value: str) -> str:
    """Only `text()`'s escaping of control and invisible characters (and bytes that are not UTF-8), a line
    break kept: for a format that quotes values its own way and draws a line break as one (DOT)."""
    return _CONTROL.sub(lambda m: m.group() if m.group() == "\n" else _NAMED.get(m.group()) or _byte_or_code(m.group()),
                        value)


def _valid(obj: Any) -> Any:
    if isinstance(obj, str):
        return name(obj)
    if isinstance(obj, list | tuple):
        return [_valid(v) for v in obj]
    if isinstance(obj, dict):
        return {_valid(k): _valid(v) for k, v in obj.items()}
    return obj


def _json_escape(m: re.Match[bytes]) -> bytes:
    found = m.group()
    if found == b"##[":
        return b"##\\u005b"
    return f"\\u{ord(found.decode()):04x}".encode()


def json_text(value: Any) -> str:
    """`value` as one line of JSON. A JSON reader gets every string back as it was, except that a byte
    that is not UTF-8 in a file name reads `\\xNN` (JSON strings are Unicode); DEL, C1 controls,
    U+2028/U+2029 and the `[` of `##[` are written as `\\uNNNN` escapes, so no console or CI runner
    reads the line as more than one line or as a command."""
    import msgspec

    try:
        data = msgspec.json.encode(value)
    except UnicodeEncodeError:  # a file name that is not UTF-8
        data = msgspec.json.encode(_valid(msgspec.to_builtins(value)))
    # JSON's own syntax is printable ASCII without `#`: these bytes can only be inside strings.
    # `#` first: a byte search is fast, a three-byte one over a big graph is not.
    if (b"#" in data and b"##[" in data) or b"\x7f" in data \
            or (not data.isascii() and any(t in data for t in _JSON_TRIGGERS)):
        data = _JSON_UNSAFE.sub(_json_escape, data)
    return data.decode()


_SPELLS_ALL = ("utf-8", "utf-8-sig", "utf-16", "utf-32", "gb18030")
_ESCAPES = "vivary-json-escapes"


def _json_escapes(err: UnicodeError) -> tuple[str, int]:
    """A character the stream's encoding cannot spell, as its JSON escape: `\\u0414`, an emoji as a surrogate
    pair. Inside a JSON string that is the same character to a JSON reader; on a line of text it is readable."""
    if not isinstance(err, UnicodeEncodeError):
        raise err
    out = []
    for ch in err.object[err.start:err.end]:
        code = ord(ch)
        if code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "".join(out), err.end


def spell_everything(*streams: Any) -> None:
    """Let each text stream write any character: one whose encoding cannot spell them all (a Windows code page when
    output is redirected, `LANG=en_US.ISO-8859-1`, `PYTHONIOENCODING=ascii`) writes what it cannot as a JSON escape
    (`_json_escapes`) instead of raising: a note named in another script is normal input, never a traceback, and
    `--json` output stays valid JSON that reads back the same names."""
    import codecs

    for stream in streams:
        encoding = getattr(stream, "encoding", None)
        if not encoding or not hasattr(stream, "reconfigure"):
            continue
        try:
            if codecs.lookup(encoding).name in _SPELLS_ALL:
                continue
        except LookupError:
            pass
        try:
            codecs.lookup_error(_ESCAPES)
        except LookupError:
            codecs.register_error(_ESCAPES, _json_escapes)
        stream.reconfigure(errors=_ESCAPES)
