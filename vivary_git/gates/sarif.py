"""SARIF 2.1.0 for code-scanning tools (GitHub's `upload-sarif`, Azure DevOps' SARIF SAST Scans Tab).

Checked by the OASIS schema and by Microsoft's SARIF Multitool `validate` with GitHub's rules
(tests/test_gates_sarif.py): file names are percent-encoded URIs (SARIF1002: Obsidian vaults are full
of spaces), every rule has a name, a full description and help (GH2012), and every result a
fingerprint that survives the finding moving to another line, so code scanning tracks one alert
across pushes instead of closing and reopening it.
"""

from __future__ import annotations

import hashlib
from typing import Any, NamedTuple

from vivary_git.gates.review import Annotation, Review

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/vivary-git/"
FINGERPRINT = "vivaryFinding/v1"  # bump the version when what the digest covers changes


class Rule(NamedTuple):
    name: str
    short: str
    meaning: str
    fix: str


# The same words as docs/check.md: short for a tooltip, full for the rule page, help says the fix. One rule
# a code `check` can emit, no more: tests/test_gates_sarif.py holds these codes to the table in check.md.
RULES: dict[str, Rule] = {
    "E000": Rule("NotANote", "The file cannot be a note.",
                 "The file is not valid UTF-8, is binary (a NUL byte in its first 8000 bytes), is larger than "
                 "8 MiB (refused by its size, unread), is a Git LFS pointer (its text is in LFS storage, which "
                 "vivary does not read), is a symbolic link, or (in a plain folder) is a FIFO or a device.",
                 "Re-save it as UTF-8, split a huge file, keep Markdown out of Git LFS, commit the file itself "
                 "instead of a link, or add it to `exclude` (in tropo.toml; in a vault, .vivary/graph.toml)."),
    "E001": Rule("InvalidFrontmatter", "The frontmatter is not valid YAML or not a mapping.",
                 "The YAML between the opening and closing `---` cannot be read as a mapping: a malformed inline "
                 "list (`a: [1`), a duplicate key, a tab used for indentation, an opening `---` that is never "
                 "closed, merge conflict markers left in it, frontmatter that is there but not read (its `---` "
                 "after blank lines), a lone CR inside it in a file whose lines end with LF, a control character "
                 "YAML allows nowhere, nesting too deep to read, or YAML aliases that expand past 10,000 values "
                 "or 1 MiB of text (or more than 10,000 values written out).",
                 "Fix the YAML at the line given (the message says what YAML found there)."),
    "E101": Rule("MissingRequiredField", "A required field is missing.",
                 "A field required by `[base] required` or by the note's type is not in its frontmatter.",
                 "Add the field."),
    "E102": Rule("EmptyRequiredField", "A required field is empty.",
                 "A required field is present but has no value (`status:` or `status: \"\"`).",
                 "Give the field a value."),
    "E103": Rule("InvalidFieldValue", "A value violates its field spec.",
                 "A value does not match the spec its field declares in tropo.toml, e.g. `date: 2026-13-45` is "
                 "not a real calendar date.",
                 "Correct the value, or change the field's spec in tropo.toml."),
    "E130": Rule("DuplicateDocumentId", "Two files derive the same document ID.",
                 "Two files derive the same document ID (e.g. notes/alpha.md and decisions/alpha.md). The first "
                 "in document order keeps the ID; this one contributes no node or edges.",
                 "Rename one of the two files."),
    "W201": Rule("UntypedDocument", "An untyped document where untyped documents are not allowed.",
                 "No ancestor folder of the note is a type's folder, and `base.allow_untyped = false`.",
                 "Move the file into a type's folder, add a type for its folder, or set `allow_untyped = true`."),
    "W202": Rule("UndeclaredField", "A field that neither the type nor [base] declares.",
                 "A typed note has a frontmatter field that neither its type nor `[base]` declares.",
                 "Declare the field under the type's (or base's) `optional`, or remove it."),
    "W210": Rule("RedundantDerivedField", "A derived field declared with the value it would derive anyway.",
                 "A field listed in `base.derive` (id, slug, title, created, updated) holds exactly the value it "
                 "would be derived with: noise that can drift.",
                 "Delete the field from the frontmatter."),
    "W220": Rule("BrokenReference", "A ref / ref-list value names no document ID.",
                 "A `ref` or `ref-list` field names a document ID that no note in the tree has: the note was "
                 "deleted or renamed, or the ID is mistyped.",
                 "Fix the ID (IDs are lowercase file stems) or create the missing note."),
    "W221": Rule("BrokenWikilink", "A link resolves to no note.",
                 "A link names a note that does not exist in the tree: a `[[wikilink]]`, an embed `![[...]]`, a "
                 "Markdown link or reference definition, or a `[[link]]` in a frontmatter property.",
                 "Fix the link target, create the note, or turn wikilinks off in .vivary/graph.toml."),
    "W222": Rule("BrokenAnchor", "A link points at a heading or block the note does not have.",
                 "A link names a heading or block (`[[Note#Part]]`, `[[Note#^id]]`, `[[#Part]]`) that the note "
                 "does not have. Off by default: `[links] anchors = true` in .vivary/graph.toml turns it on.",
                 "Fix the heading text or block id, or add the `^id` to the block."),
    "W223": Rule("MissingAttachment", "A link names an attachment that is not in the vault.",
                 "A link names an attachment (a file that is not a note, named with the extension of a file "
                 "format: `.png`, `.pdf`, `.canvas`, ...) that is not in the vault.",
                 "Add the file, or fix its name (attachments are named with their extension)."),
    "W224": Rule("TooManyLinkFindings", "A note has more link findings than are listed.",
                 "A note has more link findings (W221, W222, W223) than the 10,000 one note lists: the first "
                 "10,000 are listed and this one finding counts the rest. Every link is still read and every "
                 "edge kept.",
                 "Fix or remove those links (a generated list: generate links that resolve), split the note, or "
                 "add it to `exclude`."),
    "W225": Rule("MergeConflictLeft", "A merge conflict is left in the note.",
                 "A merge conflict's markers are left in the note's body, as Git writes them when a merge, rebase, "
                 "pull or stash cannot combine two edits of the same lines: a `<<<<<<<` line, the first side, "
                 "optionally a `|||||||` line and the base, a `=======` line, the second side and a `>>>>>>>` line. "
                 "Markers in fenced code, a lone `=======` (a heading's underline) and a lone `>>>>>>>` are not "
                 "a conflict. At most 1,000 conflicts are listed a note.",
                 "Resolve the conflict: keep one side or combine them, and delete the marker lines."),
    "W226": Rule("CaseCollision", "Two notes are one file on macOS or Windows.",
                 "Two paths differ only in case (`Note.md` and `note.md`), one file on macOS and Windows, or in "
                 "Unicode form (a name composed and decomposed), one file on macOS alone, whose file system compares "
                 "names normalised: two files to Git, and where they are one a checkout keeps one of them and "
                 "reports it modified. Off with "
                 "`[portable] collisions = false` in .vivary/graph.toml.",
                 "Rename one of the two with `git mv`."),
    "W227": Rule("WindowsRefusedName", "A name Git for Windows refuses to check out.",
                 "A folder or file name is a device name Windows reserves (con, prn, aux, nul, com1-com9, "
                 "lpt1-lpt9, with any extension), ends in a dot or a space, or holds one of `< > : \" | ? * \\` or "
                 "a control character: Git for Windows refuses the path, and every Windows clone stops at it. Off "
                 "with `[portable] windows = false` in .vivary/graph.toml.",
                 "Rename the file or folder with `git mv`."),
    "W228": Rule("WindowsLongPath", "A path too long for a Windows checkout.",
                 "Git for Windows writes a file only when the checkout's folder and its path make at most 259 "
                 "characters (MAX_PATH), and a folder within 247, unless `core.longPaths` is set. A path over 199 "
                 "characters, or in a folder over 187, is left out of a checkout in a folder of 60 characters "
                 "(`C:\\Users\\name\\Documents\\vault\\` is 30). Off with `[portable] windows = false` in "
                 ".vivary/graph.toml.",
                 "Shorten the file's or folder's name with `git mv`, or set `core.longPaths` in each Windows clone."),
}

# RFC 3986 unreserved characters, plus "/" between segments; every other byte is percent-encoded.
_KEEP = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~/")


def uri(path: str) -> str:
    """A repository-relative path as a relative URI reference (RFC 3986): each byte of the name as Git
    stores it (a non-UTF-8 byte, carried as a surrogate escape, is that byte) outside the unreserved set
    is percent-encoded, so spaces, `#`, `%`, `?`, `:` and non-ASCII names all survive the round trip."""
    raw = path.encode("utf-8", "surrogateescape")
    return "".join(chr(b) if b in _KEEP else f"%{b:02X}" for b in raw)


def _rule(code: str) -> dict[str, Any]:
    r = RULES.get(code) or Rule(f"Vivary{code}", f"vivary finding {code}.", f"vivary finding {code}.",
                                "See docs/check.md.")
    return {
        "id": code,
        "name": r.name,
        "shortDescription": {"text": r.short},
        "fullDescription": {"text": r.meaning},
        "help": {"text": f"{r.meaning} Fix: {r.fix}", "markdown": f"{r.meaning}\n\n**Fix:** {r.fix}"},
        "defaultConfiguration": {"level": "error" if code.startswith("E") else "warning"},
    }


def fingerprints(findings: list[Annotation]) -> dict[int, str]:
    """Each finding's fingerprint, by `id()`: a digest of its code, path and message, never its line, so a
    finding that moves within its file keeps it; identical findings in one file are told apart by their order
    there. The base tree's run gives an unchanged finding the same value, whatever its `why`."""
    out: dict[int, str] = {}
    seen: dict[str, int] = {}
    for a in sorted(findings, key=lambda a: (a.path, a.line, a.title, a.message)):
        key = "\0".join((a.title.removeprefix("vivary "), a.path, a.message))
        seen[key] = seen.get(key, 0) + 1
        out[id(a)] = hashlib.sha256(f"{key}\0{seen[key]}".encode("utf-8", "surrogateescape")).hexdigest()[:32]
    return out


def render_sarif(r: Review) -> dict[str, Any]:
    from vivary_git.version import __version__

    findings = [a for a in r.annotations if a.level != "notice"]
    codes = sorted(set(RULES) | {a.title.removeprefix("vivary ") for a in findings})
    index = {code: i for i, code in enumerate(codes)}
    results = []
    prints = fingerprints(findings)
    for a in findings:
        code = a.title.removeprefix("vivary ")
        results.append((a, {
            "ruleId": code,
            "ruleIndex": index[code],
            "level": "error" if a.level == "error" else "warning",
            "message": {"text": a.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": uri(a.path), "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": a.line},
            }}],
            "partialFingerprints": {FINGERPRINT: prints[id(a)]},
            "properties": {"why": a.why},
        }))
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "vivary-git", "version": __version__, "semanticVersion": __version__,
                            "informationUri": INFORMATION_URI, "rules": [_rule(c) for c in codes]}},
        # One code-scanning category per workspace: two workspaces of one repository must not
        # replace each other's alerts (upload-sarif's `category` input overrides this).
        "automationDetails": {"id": f"vivary/{r.prefix}/" if r.prefix else "vivary/"},
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository root"}}},
        "results": [res for _, res in results],
        "properties": {"head": r.head, "base": r.base, "checked": r.check.checked,
                       "impacted": len(r.change.impacted) if r.change is not None else None},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
