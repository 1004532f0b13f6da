"""The job summary: every finding in a Markdown table, the blast radius, and a Mermaid picture.

Paths, IDs and messages come from the pull request, so every cell is escaped: a `|` would split the
table, `<`/`>` would be HTML and `[`…`](…)` a link someone else wrote into our report.
"""

from __future__ import annotations

import re

from vivary_git.gates.review import Review, headline, repo_path

# GitHub refuses a step summary over 1 MiB; a pathological head tree must not lose the whole report.
MAX_ROWS = 1000
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!~])")


def md(text: str) -> str:
    text = " ".join(text.split())  # line breaks would end the table row
    return _MD_SPECIAL.sub(r"\\\1", text.replace("&", "&amp;"))


def render_summary(r: Review) -> str:
    from vivary_git.render import mermaid

    c = r.check
    icon = "❌" if c.errors else ("⚠️" if c.warnings else "✅")
    out = [f"## {icon} vivary: {c.errors} error(s), {c.warnings} warning(s) in {md(r.head)}\n\n"]
    out.append(f"{md(headline(r))}\n\n")
    if r.note:
        out.append(f"> {md(r.note)}\n\n")
    findings = [a for a in r.annotations if a.level != "notice"]
    if findings:
        out.append("### Findings\n\n| level | where | code | message | why |\n|---|---|---|---|---|\n")
        for a in findings[:MAX_ROWS]:
            out.append(f"| {a.level} | {md(a.path)}:{a.line} | {md(a.title.removeprefix('vivary '))} | "
                       f"{md(a.message)} | {a.why} |\n")
        if len(findings) > MAX_ROWS:
            out.append(f"\n…and {len(findings) - MAX_ROWS} more: run `git vivary check --rev {md(r.head)}`.\n")
        out.append("\n")
    ch = r.change
    if ch is not None:
        out.append(f"### Blast radius of {md(r.base or '')}..{md(r.head)}\n\n")
        if not (ch.changed or ch.broken_edges or ch.fixed_edges or ch.impacted):
            out.append("No note changed.\n\n")
        if ch.changed:
            out.append("| change | note | type | path |\n|---|---|---|---|\n")
            out += [f"| {x.change} | {md(x.id)} | {md(x.type or '-')} | {md(repo_path(r.prefix, x.path))} |\n"
                    for x in ch.changed[:MAX_ROWS]]
            out.append("\n")
        if ch.broken_edges or ch.fixed_edges:
            out.append("| edge | from | field | to |\n|---|---|---|---|\n")
            out += [f"| broken | {md(e.from_)} | {md(e.field)} | {md(e.to)} |\n" for e in ch.broken_edges[:MAX_ROWS]]
            out += [f"| fixed | {md(e.from_)} | {md(e.field)} | {md(e.to)} |\n" for e in ch.fixed_edges[:MAX_ROWS]]
            out.append("\n")
        if ch.impacted:
            out.append(f"<details><summary>{len(ch.impacted)} impacted note(s): they reach a changed note"
                       "</summary>\n\n| note | type | distance | via |\n|---|---|---|---|\n")
            out += [f"| {md(i.id)} | {md(i.type or '-')} | {i.distance} | {md(i.via)} |\n"
                    for i in ch.impacted[:MAX_ROWS]]
            out.append("\n</details>\n\n")
    p = r.picture
    if p is not None and p.nodes:
        out.append("### Impacted neighbourhood\n\nChanged notes are highlighted; dashed arrows are broken "
                   "references.\n\n```mermaid\n")
        out.append(mermaid(p.nodes, p.edges, p.highlight))
        out.append("```\n\n")
        if p.omitted:
            out.append(f"{p.omitted} more impacted note(s) not drawn.\n\n")
    return "".join(out)
