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
    """What broke first (the references this change broke, by the note they name), then the findings,
    the changed notes, the impacted notes within the search depth (folded), and a picture of what a
    reviewer must look at."""
    from vivary_git.render import mermaid

    c = r.check
    icon = "❌" if c.errors else ("⚠️" if c.warnings else "✅")
    out = [f"## {icon} vivary: {c.errors} error(s), {c.warnings} warning(s) in {md(r.head)}\n\n"]
    out.append(f"{md(headline(r))}\n\n")
    if r.note:
        out.append(f"> {md(r.note)}\n\n")
    if r.broke:
        out.append("### What broke\n\n")
        for b in r.broke[:MAX_ROWS]:
            n = len(b.referrers)
            if b.change == "removed":
                out.append(f"**{md(b.target)}** ({md(b.path or '')}) was **removed**; "
                           f"{n} note(s) still reference it:\n\n")
            elif b.change == "renamed":
                out.append(f"**{md(b.target)}** ({md(b.path or '')}) was **renamed** to **{md(b.renamed_to or '')}** "
                           f"({md(b.renamed_path or '')}); {n} note(s) still reference it:\n\n")
            else:
                out.append(f"**{md(b.target)}** is not the ID of any note; {n} note(s) reference it:\n\n")
            out.append("| note | path | field |\n|---|---|---|\n")
            out += [f"| {md(x.id)} | {md(x.path)} | {md(x.field)} |\n" for x in b.referrers[:MAX_ROWS]]
            if n > MAX_ROWS:
                out.append(f"\n…and {n - MAX_ROWS} more.\n")
            out.append("\n")
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
        if not (ch.changed or ch.broken_edges or ch.fixed_edges or ch.impacted):
            out.append(f"### Blast radius of {md(r.base or '')}..{md(r.head)}\n\nNo note changed.\n\n")
        if ch.changed:
            out.append(f"### Changed notes ({md(r.base or '')}..{md(r.head)})\n\n"
                       "| change | note | type | path |\n|---|---|---|---|\n")
            for x in ch.changed[:MAX_ROWS]:
                what = f"{x.change} (renamed to {md(x.renamed)})" if x.change == "removed" and x.renamed else x.change
                out.append(f"| {what} | {md(x.id)} | {md(x.type or '-')} | {md(repo_path(r.prefix, x.path))} |\n")
            out.append("\n")
        if ch.fixed_edges:
            out.append("| fixed reference | field | to |\n|---|---|---|\n")
            out += [f"| {md(e.from_)} | {md(e.field)} | {md(e.to)} |\n" for e in ch.fixed_edges[:MAX_ROWS]]
            out.append("\n")
        further = ch.counts.get("further", 0)
        if ch.impacted or further:
            within = f" within {ch.depth} hops" if ch.depth is not None else ""
            more = (f" ({further} more further away: `git vivary blast --base {md(r.base or '')} --head {md(r.head)} "
                    "--depth all`)") if further else ""
            out.append(f"<details><summary>{len(ch.impacted)} impacted note(s){within}{more}</summary>\n\n"
                       "They reference a changed note, directly (distance 1) or through others.\n\n"
                       "| note | type | distance | via |\n|---|---|---|---|\n")
            out += [f"| {md(i.id)} | {md(i.type or '-')} | {i.distance} | {md(i.via)} |\n"
                    for i in ch.impacted[:MAX_ROWS]]
            if len(ch.impacted) > MAX_ROWS:
                out.append(f"\n…and {len(ch.impacted) - MAX_ROWS} more.\n")
            out.append("\n</details>\n\n")
    p = r.picture
    if p is not None and p.nodes:
        out.append("### What to look at\n\nHighlighted: the changed notes (a removed one shows as missing). "
                   "Dashed arrows: references this change broke. Also drawn: every note whose reference broke, "
                   "and the notes that reference a changed note directly.\n\n```mermaid\n")
        out.append(mermaid(p.nodes, p.edges, p.highlight))
        out.append("```\n\n")
        if p.omitted:
            out.append(f"{p.omitted} more note(s) not drawn (they are in the lists above).\n\n")
    return "".join(out)
