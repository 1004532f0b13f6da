"""Field and structure rules for one node: pure, returns `Finding`s.

Messages follow the published tropo word for word where tropo is right (scripts parse them), values from a
note shown as tropo shows them, as Python literals (`'x'`; a line break as `\n`): so a message is one line,
the same in text, JSON and annotations, whatever a value holds. The
codes it lacks (E130 duplicate IDs, W221 broken wikilinks) and its fixes (real calendar dates,
E000 for unreadable bytes, E001 for a malformed inline list) are documented in docs/check.md.
"""

from __future__ import annotations

import datetime as dt
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from vivary_git.body import MAX_CONFLICTS
from vivary_git.config import Config, FieldSpec
from vivary_git.dialects import Target, describe
from vivary_git.models import Conflict, Finding, Ignore, Node, Note

_SLUG = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$", re.IGNORECASE
)
_URL = re.compile(r"^https?://\S+$")
# A tuple, not `list | dict`: isinstance with a union builds nothing but is markedly slower on this hot path.
_CONTAINERS = (list, dict)

# (path, field) → derived value of `created`/`updated`; supplied lazily because it needs history.
DateLookup = Callable[[str, str], str | None]


Ref = tuple[str, int, str]  # (field, key line, target) for each ref value, in order


def validate_local(
    node: Node,
    note: Note,
    config: Config,
    dates: DateLookup | None = None,
) -> tuple[list[Finding], list[Ref]]:
    """Every rule that needs no other document, in tropo's per-document order (W201, E101/E102, then
    per key W210/W202/E103) after the merge conflicts left in the body (W225, which tropo lacks), and the refs
    whose targets the caller resolves (W220 and edges)."""
    path = node.path
    out = merge_conflicts(path, note.conflicts) if note.conflicts else []
    if note.problem is not None:
        p = note.problem
        return [Finding(path, p.line, "error", p.code, p.message), *out], []
    fields = note.fields
    lines = note.key_lines
    tdef = config.types.get(node.type) if node.type is not None else None
    typed = tdef is not None
    if not typed and not config.allow_untyped and not config.zero_config:
        out.append(Finding(path, 1, "warning", "W201", "untyped document (no ancestor folder is a registered type)"))
    required = dict(config.base_required)
    if tdef is not None:
        required.update(tdef.required)
    for name in required:
        if name not in fields:
            out.append(Finding(path, 1, "error", "E101", f"missing required field {name!r} for type {node.type!r}"))
        elif fields[name] is None or fields[name] == "":
            out.append(Finding(path, lines.get(name, 1), "error", "E102", f"required field {name!r} is empty"))
    refs: list[Ref] = []
    for name, value in fields.items():
        if name == IGNORE_KEY:
            continue  # suppression for this note (`ignores`), not a field of its type
        line = lines.get(name, 1)
        if name in config.derive:
            derived = _derived(name, node, dates)
            if value == derived and (typed or not config.allow_untyped):
                out.append(Finding(path, line, "warning", "W210", f"field {name!r} equals its derived value (noise)"))
            continue
        spec = config.field_spec(node.type, name)
        if spec is None:
            if typed and not (tdef is not None and tdef.open):
                out.append(Finding(path, line, "warning", "W202", f"unknown field {name!r} for type {node.type!r}"))
            continue
        if spec.is_ref and value is not None:
            refs += [(name, line, target) for target in ref_targets(value)]
        if value is None:
            continue
        problem = spec_problem(spec, value)
        if problem is not None:
            out.append(Finding(path, line, "error", "E103", f"field {name!r}: {problem}"))
    return out, refs


def merge_conflicts(path: str, conflicts: Sequence[Conflict]) -> list[Finding]:
    """W225 for each merge conflict Git left in the note's body, from its `<<<<<<<` line to its `>>>>>>>` line;
    past `MAX_CONFLICTS` (the parse stops at the first conflict past them), one W225 says where they stop being
    listed."""
    out = [Finding(path, c.line, "warning", "W225",
                   f"merge conflict markers left in the note from line {c.line} to line {c.end}: resolve the "
                   "conflict: keep one side or combine them, and delete the marker lines")
           for c in conflicts[:MAX_CONFLICTS]]
    if len(conflicts) > MAX_CONFLICTS:
        line = conflicts[MAX_CONFLICTS].line
        out.append(Finding(path, line, "warning", "W225",
                           f"more merge conflict markers left in the note from line {line} on are not listed: at "
                           f"most {MAX_CONFLICTS:,} conflicts are listed a note; resolve them, and delete the "
                           "marker lines"))
    return out


def broken_ref(path: str, ref: Ref) -> Finding:
    name, line, target = ref
    return Finding(path, line, "warning", "W220", f"field {name!r}: ref {target!r} matches no document id")


def broken_link_code(dialect: str, code: str) -> str:
    """The code `broken_link` reports a link with, given the code its dialect's resolver decided."""
    return "W221" if dialect == "vivary" else code


def broken_link(path: str, target: Target, looked_for: str, dialect: str, code: str) -> Finding:
    """`code`, W221 (no such note) or W223 (no such attachment) as the dialect's resolver decided
    (`Resolver.missing_code`), naming the link as written and where it was looked for, and from which note."""
    if dialect == "vivary":  # the contract's ids: tropo-era wording, kept for scripts that parse it
        return Finding(path, target.line, "warning", broken_link_code(dialect, code),
                       f"wikilink [[{target.written}]] matches no document id (looked for '{looked_for}')")
    what = "file" if code == "W223" else "note"
    return Finding(path, target.line, "warning", code,
                   f"{describe(target)} matches no {what} (looked for '{looked_for}' from {path})")


# A note lists at most this many link findings (W221, W222, W223: those its `vivary-ignore` silences do not
# count); past it, one W224 says how many more there are and from which line. An 8 MiB note can hold 1.6
# million links, generated or pasted: a finding for each (~200 bytes, 120 MB of text for 1.3 million) took a
# check to a gigabyte of memory, and no one reads them. Links and edges are all kept: only findings are cut.
MAX_LINK_FINDINGS = 10_000


class LinkFindings:
    """Which of one note's link findings are listed: those its `ignores` do not silence, up to
    `MAX_LINK_FINDINGS`; the rest are counted (`cut`, the first of them on `cut_line`) and never made."""

    __slots__ = ("cut", "cut_line", "left", "silences")

    def __init__(self, ignores: Sequence[Ignore]) -> None:
        self.silences = silencer(ignores) if ignores else None
        self.left = MAX_LINK_FINDINGS
        self.cut = self.cut_line = 0

    def room(self, code: str, line: int) -> bool:
        """Whether to list a finding of `code` on `line` (else it is silenced, or counted as cut)."""
        if self.silences is not None and self.silences(code, line):
            return False
        if self.left:
            self.left -= 1
            return True
        self.cut += 1
        self.cut_line = self.cut_line or line
        return False


def links_cut(path: str, line: int, more: int) -> Finding:
    """W224: the note's link findings past `MAX_LINK_FINDINGS`, the first of them on `line`, are not listed."""
    return Finding(path, line, "warning", "W224",
                   f"{more:,} more link finding(s) (W221, W222, W223) from line {line} on are not listed: at most "
                   f"{MAX_LINK_FINDINGS:,} are listed a note; fix or remove those links, or split the note")


def missing_anchor(path: str, target: Target, resolved: str) -> Finding:
    """W222: the note exists, the heading or block the link points into does not."""
    kind = "block" if target.anchor.startswith("^") else "heading"
    return Finding(path, target.line, "warning", "W222",
                   f"{describe(target)}: {resolved} has no {kind} '{target.anchor}'")


def _derived(name: str, node: Node, dates: DateLookup | None) -> Any:
    if name in ("id", "slug"):
        return node.id
    if name == "title":
        return node.title
    if name in ("created", "updated"):
        return dates(node.path, name) if dates is not None else None
    return None


def ref_targets(value: Any) -> list[str]:
    """The targets a ref field's value names: the string, or each string of a list."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return []


def _kind(value: Any) -> str:
    return {"list": "a list", "dict": "a dict"}.get(type(value).__name__, type(value).__name__)


def _real_datetime(m: re.Match[str]) -> bool:
    """A date on the calendar, a time on the clock (00:00:00–23:59:59) and a UTC offset under 24 hours."""
    try:
        dt.date.fromisoformat(m.group(1))
        dt.time(int(m.group(2)), int(m.group(3)), int(m.group(4) or 0))
    except ValueError:
        return False
    zone = m.group(5)
    if zone is None or zone in "Zz":
        return True
    digits = zone[1:].replace(":", "")
    return int(digits[:2]) < 24 and int(digits[2:]) < 60


def spec_problem(spec: FieldSpec, value: Any) -> str | None:
    """Why a non-null `value` violates `spec`; None when it conforms."""
    kind = spec.kind
    if kind == "any":
        return None
    if kind == "string":
        return f"expected a string, got {_kind(value)}" if isinstance(value, _CONTAINERS) else None
    if kind == "date":
        if isinstance(value, _CONTAINERS):
            return f"expected a date (YYYY-MM-DD), got {_kind(value)}"
        text = value if isinstance(value, str) else str(value)
        if not _DATE.match(text):
            return f"expected YYYY-MM-DD, got {value!r}"
        try:
            dt.date.fromisoformat(text)
        except ValueError:
            return f"expected a real calendar date (YYYY-MM-DD), got {value!r}"
        return None
    if kind == "datetime":
        m = _DATETIME.match(value) if isinstance(value, str) else None
        if m is None:
            return f"expected ISO-8601 datetime, got {value!r}"
        if not _real_datetime(m):
            return f"expected a real ISO-8601 datetime, got {value!r}"
        return None
    if kind in ("slug", "ref"):
        if isinstance(value, str) and _SLUG.match(value):
            return None
        return f"expected a {kind} (lowercase a-z 0-9 . _ -), got {value!r}"
    if kind == "url":
        return None if isinstance(value, str) and _URL.match(value) else f"expected a URL (http/https), got {value!r}"
    if kind == "bool":
        return None if isinstance(value, bool) else f"expected true/false, got {value!r}"
    if kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"expected a number, got {value!r}"
    if kind in ("list", "string-list", "ref-list"):
        if not isinstance(value, list):
            return f"expected a list, got {type(value).__name__} {value!r}"
        if kind == "list":
            return None
        for v in value:  # (a loop, not any() over a generator: this runs for every list of every note)
            if isinstance(v, _CONTAINERS):
                return "expected a flat list"
        if kind == "ref-list":
            for v in value:
                if not (isinstance(v, str) and _SLUG.match(v)):
                    return f"expected a list of refs (slugs), got item {v!r}"
        return None
    if kind == "enum":
        shown = "[" + ", ".join(spec.choices) + "]"
        ok = not isinstance(value, _CONTAINERS) and _text(value) in spec.choices
        return None if ok else f"expected one of {shown}, got {value!r}"
    return None


def _text(value: Any) -> str:
    # YAML `true` reads as True; tropo compares enums by the value's text form, so do we.
    return str(value)


def apply_strictness(findings: Sequence[Finding], strict: bool) -> list[Finding]:
    """`base.strict` (or `--strict`) reports warnings at level error; codes keep their W."""
    if not strict:
        return list(findings)
    return [f if f.level == "error" else Finding(f.path, f.line, "error", f.code, f.message) for f in findings]


# --- suppression: `<!-- vivary-ignore CODE -->` (body.ignore_comments) and the `vivary-ignore` key -----------

IGNORE_KEY = "vivary-ignore"
_CODE = re.compile(r"^[EW][0-9]{3}$")
# The note could not be read: nothing else about it was checked, so this is never silenced.
UNSUPPRESSIBLE = frozenset(("E000", "E001"))


def ignores_of(note: Note) -> tuple[Ignore, ...]:
    """What `note` silences: its `vivary-ignore` comments (by line) and its frontmatter key (line 0:
    the whole note; a code or a list of codes, as `W221` or `[W202, W221]`)."""
    value = note.fields.get(IGNORE_KEY)
    if value is None:
        return note.ignores
    items = value if isinstance(value, list) else re.split(r"[\s,]+", str(value))
    codes = tuple(dict.fromkeys(c for c in (str(v).strip().upper() for v in items) if _CODE.match(c)))
    return (Ignore(0, codes), *note.ignores) if codes else note.ignores


def silencer(ignores: Sequence[Ignore]) -> Callable[[str, int], bool]:
    """Whether one note's `ignores` silence a finding of this code on this line (line 0 silences on every line)."""
    silenced: dict[int, set[str]] = {}
    for ig in ignores:
        silenced.setdefault(ig.line, set()).update(ig.codes)
    everywhere = silenced.get(0, set())

    def silences(code: str, line: int) -> bool:
        return code not in UNSUPPRESSIBLE and (code in everywhere or code in silenced.get(line, ()))

    return silences


def suppress(findings: Sequence[Finding], ignores: Sequence[Ignore]) -> list[Finding]:
    """`findings` of one note without those its `ignores` silence."""
    silences = silencer(ignores)
    return [f for f in findings if not silences(f.code, f.line)]


# --- a baseline: which findings a tree already had (`check --new-since`, `ci`, the pre-commit hook) ---------

_NUMBERED = re.compile(r"\b(line|lines|offset|column) [0-9]+")

BaselineKey = tuple[str, str, str]  # (code, path, message without line numbers)


def baseline_key(f: Finding, path: str | None = None) -> BaselineKey:
    """What makes a finding the same one in another tree: its code, its note's path and its target. A
    target (the ref, the wikilink, the field) is in the message, which the same code writes in both
    trees; line numbers are not part of it, so an edit above a finding does not make it new. Nor is the note's own
    path, which a vault's W221 and W223 name (`from PATH`): a rename changes it, and a renamed note keeps its
    findings."""
    message = f.message
    own = f" from {f.path})"
    if message.endswith(own):
        message = message[: -len(own)] + ")"
    return f.code, f.path if path is None else path, _NUMBERED.sub(r"\1 N", message)


def new_findings(findings: Sequence[Finding], baseline: Sequence[Finding],
                 renamed: Mapping[str, str] | None = None) -> list[bool]:
    """For each of `findings`, whether it is new: not matched by one of `baseline`'s (the findings of
    the tree it is compared with; `renamed` maps that tree's paths of renamed notes to their paths
    here, so a renamed note's findings are not new). Findings with the same key are matched in order,
    as many as the baseline has: a second broken link to the same target is new."""
    moved = renamed or {}
    have: Counter[BaselineKey] = Counter(baseline_key(f, moved.get(f.path, f.path)) for f in baseline)
    out: list[bool] = []
    for f in findings:
        k = baseline_key(f)
        if have[k] > 0:
            have[k] -= 1
            out.append(False)
        else:
            out.append(True)
    return out
