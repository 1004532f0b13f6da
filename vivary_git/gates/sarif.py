"""SARIF 2.1.0 for code-scanning tools (GitHub's `upload-sarif`, GitLab, Azure DevOps)."""

from __future__ import annotations

from typing import Any

from vivary_git.gates.review import Review

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# A rule's long description: the same words as docs/check.md, short enough for a tooltip.
_RULES = {
    "E000": "The file cannot be a note (not UTF-8, binary, too large, or a symbolic link).",
    "E001": "The frontmatter is not valid YAML or not a mapping.",
    "E101": "A required field is missing.",
    "E102": "A required field is empty.",
    "E103": "A value violates its field spec.",
    "E130": "Two files derive the same document ID.",
    "W201": "An untyped document where untyped documents are not allowed.",
    "W202": "A field that neither the type nor [base] declares.",
    "W210": "A derived field declared with the value it would derive anyway.",
    "W220": "A ref / ref-list value names no document ID.",
    "W221": "A [[wikilink]] resolves to no document ID.",
}


def render_sarif(r: Review) -> dict[str, Any]:
    from vivary_git import __version__

    findings = [a for a in r.annotations if a.level != "notice"]
    codes = sorted({a.title.removeprefix("vivary ") for a in findings})
    rules = [
        {"id": code, "name": code, "shortDescription": {"text": _RULES.get(code, code)}}
        for code in codes
    ]
    index = {code: i for i, code in enumerate(codes)}
    results = []
    for a in findings:
        code = a.title.removeprefix("vivary ")
        results.append({
            "ruleId": code,
            "ruleIndex": index[code],
            "level": "error" if a.level == "error" else "warning",
            "message": {"text": a.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": {"uri": a.path, "uriBaseId": "%SRCROOT%"},
                "region": {"startLine": a.line},
            }}],
            "properties": {"why": a.why},
        })
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "vivary-git", "version": __version__, "semanticVersion": __version__,
                            "rules": rules}},
        "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository root"}}},
        "results": results,
        "properties": {"head": r.head, "base": r.base, "checked": r.check.checked,
                       "impacted": len(r.change.impacted) if r.change is not None else None},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
