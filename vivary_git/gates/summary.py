"""The job summary: every finding in a Markdown table, the blast radius, and a Mermaid picture.

Paths, IDs and messages come from the pull request, so every cell is escaped: a `|` would split the
table, `<`/`>` would be HTML and `[`…`](…)` a link someone else wrote into our report.
"""

from __future__ import annotations

import re

from vivary_git.blast import Changed
from vivary_git.gates.review import Review, headline, repo_path

# GitHub refuses a step summary over 1 MiB; a pathological head tree must not lose the whole report. Rows stop at
# `MAX_ROWS` a table and the whole at `MAX_BYTES` (1,000 rows of long paths and messages were 1-4 MB).
MAX_ROWS = 1000
MAX_BYTES = 1_000_000
_RESERVE = 2048  # kept for the lines that close what is open when the budget is reached


class _Out:
    """The summary's parts and their size in bytes, so that no table takes it past `MAX_BYTES`."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text.encode("utf-8", "surrogateescape"))

    def fits(self, text: str) -> bool:
        return self.size + len(text.encode("utf-8", "surrogateescape")) + _RESERVE <= MAX_BYTES

    def rows(self, rows: list[str], total: int, more: str = "") -> None:
        """As many of `rows` (of `total`) as `MAX_ROWS` and the byte budget allow, then how many were left out."""
        shown = 0
        for row in rows[:MAX_ROWS]:
            if not self.fits(row):
                break
            self.add(row)
            shown += 1
        if total > shown:
            cut = "" if shown == len(rows[:MAX_ROWS]) else " (the summary stops short of GitHub's 1 MiB limit)"
            self.add(f"\n…and {total - shown} more{cut}{more}.\n")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|#!~])")


def md(text: str) -> str:
    text = " ".join(text.split())  # line breaks would end the table row
    return _MD_SPECIAL.sub(r"\\\1", text.replace("&", "&amp;"))


def _what(x: Changed) -> str:
    return f"{x.change} (renamed to {md(x.renamed)})" if x.change == "removed" and x.renamed else x.change


def render_summary(r: Review) -> str:
    """What broke first (the references this change broke, by the note they name), then the findings,
    the changed notes, the impacted notes within the search depth (folded), and a picture of what a
    reviewer must look at."""
    from vivary_git.render import mermaid

    c = r.check
    icon = "❌" if c.errors else ("⚠️" if c.warnings else "✅")
    out = _Out()
    out.add(f"## {icon} vivary: {c.errors} error(s), {c.warnings} warning(s) in {md(r.head)}\n\n")
    out.add(f"{md(headline(r))}\n\n")
    if r.note:
        out.add(f"> {md(r.note)}\n\n")
    if r.broke:
        out.add("### What broke\n\n")
        for k, b in enumerate(r.broke[:MAX_ROWS]):
            n = len(b.referrers)
            if b.change == "removed":
                head = f"**{md(b.target)}** ({md(b.path or '')}) was **removed**; {n} note(s) still reference it:\n\n"
            elif b.change == "renamed":
                head = (f"**{md(b.target)}** ({md(b.path or '')}) was **renamed** to **{md(b.renamed_to or '')}** "
                        f"({md(b.renamed_path or '')}); {n} note(s) still reference it:\n\n")
            else:
                head = f"**{md(b.target)}** is not the ID of any note; {n} note(s) reference it:\n\n"
            head += "| note | path | field |\n|---|---|---|\n"
            if not out.fits(head):
                out.add(f"…and {len(r.broke) - k} more (the summary stops short of GitHub's 1 MiB limit).\n\n")
                break
            out.add(head)
            out.rows([f"| {md(x.id)} | {md(x.path)} | {md(x.field)} |\n" for x in b.referrers[:MAX_ROWS]], n)
            out.add("\n")
    findings = [a for a in r.annotations if a.level != "notice"]
    if findings:
        out.add("### Findings\n\n| level | where | code | message | why |\n|---|---|---|---|---|\n")
        out.rows([f"| {a.level} | {md(a.path)}:{a.line} | {md(a.title.removeprefix('vivary '))} | "
                  f"{md(a.message)} | {a.why} |\n" for a in findings[:MAX_ROWS]], len(findings),
                 f": run `git vivary check --rev {md(r.head)}`")
        out.add("\n")
    ch = r.change
    if ch is not None:
        if not (ch.changed or ch.broken_edges or ch.fixed_edges or ch.impacted):
            out.add(f"### Blast radius of {md(r.base or '')}..{md(r.head)}\n\nNo note changed.\n\n")
        if ch.changed:
            out.add(f"### Changed notes ({md(r.base or '')}..{md(r.head)})\n\n"
                    "| change | note | type | path |\n|---|---|---|---|\n")
            out.rows([f"| {_what(x)} | {md(x.id)} | {md(x.type or '-')} | {md(repo_path(r.prefix, x.path))} |\n"
                      for x in ch.changed[:MAX_ROWS]], len(ch.changed))
            out.add("\n")
        if ch.fixed_edges:
            out.add("| fixed reference | field | to |\n|---|---|---|\n")
            out.rows([f"| {md(e.from_)} | {md(e.field)} | {md(e.to)} |\n" for e in ch.fixed_edges[:MAX_ROWS]],
                     len(ch.fixed_edges))
            out.add("\n")
        further = ch.counts.get("further", 0)
        if ch.impacted or further:
            within = f" within {ch.depth} hops" if ch.depth is not None else ""
            more = (f" ({further} more further away: `git vivary blast --base {md(r.base or '')} --head {md(r.head)} "
                    "--depth all`)") if further else ""
            out.add(f"<details><summary>{len(ch.impacted)} impacted note(s){within}{more}</summary>\n\n"
                    "They reference a changed note, directly (distance 1) or through others.\n\n"
                    "| note | type | distance | via |\n|---|---|---|---|\n")
            out.rows([f"| {md(i.id)} | {md(i.type or '-')} | {i.distance} | {md(i.via)} |\n"
                      for i in ch.impacted[:MAX_ROWS]], len(ch.impacted))
            out.add("\n</details>\n\n")
    p = r.picture
    picture = mermaid(p.nodes, p.edges, p.highlight) if p is not None and p.nodes else ""
    if p is not None and picture and not out.fits(picture):
        out.add("The picture of what to look at is left out: the summary stops short of GitHub's 1 MiB limit.\n")
    elif p is not None and picture:
        out.add("### What to look at\n\nHighlighted: the changed notes (a removed one shows as missing). "
                "Dashed arrows: references this change broke. Also drawn: every note whose reference broke, "
                "and the notes that reference a changed note directly.\n\n```mermaid\n")
        out.add(picture)
        out.add("```\n\n")
        if p.omitted:
            out.add(f"{p.omitted} more note(s) not drawn (they are in the lists above).\n\n")
    return "".join(out.parts)
