"""Why a broken link is broken when the file it names is on disk: Git ignores that file.

A link to a note `.gitignore` leaves out is `W221` (`W220` for a ref, `W223` for an attachment): the note
is in no tree Git keeps, so it is in no graph. An editor shows that same link resolved (Obsidian does not
read `.gitignore`), so the finding alone reads as a false alarm. `check` says, after such a finding, which
file the link would reach and the ignore rule that leaves it out (`.gitignore:3:drafts/`), so the fix is
plain: un-ignore it, or link something else.

Only the links already broken are looked up, and only in a working-tree or staged check (the files on disk
are that tree's neighbours; a `--rev` tree has none): one `git ls-files --others --ignored --directory` and
one `git check-ignore -v` for the paths found, nothing at all when no link is broken. What a broken link looked
for is found again in its note (parsed, or from the parse cache) and resolved by the graph's own resolver, never
read back out of the finding's message.
An ignored folder is walked for names, up to `WALK_BUDGET` entries (`node_modules/` is not a vault). Only
paths and rules are named, never a byte of an ignored file; a file on the privacy floor (`USER.md`,
`memory/**`) is said to be private, not offered to be un-ignored.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import msgspec

from vivary_git.dialects import Target, obsidian
from vivary_git.errors import GitError, PrivacyError
from vivary_git.models import Finding

if TYPE_CHECKING:
    from vivary_git.workspace import Workspace

WALK_BUDGET = 20_000  # entries read below ignored folders, at most, per check
_SKIPPED = frozenset((".git", "node_modules", "__pycache__"))


def explain(ws: Workspace, findings: Sequence[Finding], *, masked: bool = False) -> list[Finding]:
    """`findings` with each broken link whose target Git ignores told so (the rest unchanged, in order).
    Never fails the check: when Git cannot say, the findings are returned as they were. `masked`: others read
    the findings (`gates.private.masking`), so each rule is named by its place alone: its pattern is the text of
    `.git/info/exclude` or a `.vivary/memory.toml`'s `private_paths`, files on the privacy floor."""
    wanted = [i for i, f in enumerate(findings) if f.code in ("W220", "W221", "W223")]
    source = ws.source
    if not wanted or source.kind not in ("worktree", "staged") or source.repo is None \
            or source.repo.workdir is None:
        return list(findings)
    try:
        ignored = _ignored_paths(ws)
        if not ignored:
            return list(findings)
        hits = _targets(ws, [findings[i] for i in wanted], ignored)
        if not hits:
            return list(findings)
        rules = _rules(ws, sorted(set(hits.values())), masked)
    except (GitError, PrivacyError, OSError):
        return list(findings)
    out = list(findings)
    for n, path in hits.items():
        said = rules.get(path)
        if said:
            i = wanted[n]
            out[i] = msgspec.structs.replace(out[i], message=f"{out[i].message}; {said}")
    return out


def _ignored_paths(ws: Workspace) -> list[str]:
    """The files Git ignores in the workspace folder on disk (workspace-relative), those below an ignored
    folder included as far as `WALK_BUDGET` goes."""
    source = ws.source
    repo = source.repo
    assert repo is not None and repo.workdir is not None
    top = repo.workdir
    prefix = f"{source.prefix}/" if source.prefix else ""
    spec = f":(top,literal){source.prefix}" if source.prefix else ":(top)"
    proc = repo.git(["ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory", "--", spec],
                    check=False)
    if proc.returncode != 0:
        return []
    files: list[str] = []
    folders: list[str] = []
    for raw in proc.stdout.split(b"\0"):
        if raw:
            path = os.fsdecode(raw)
            if path.startswith(prefix):
                (folders if path.endswith("/") else files).append(path[len(prefix):])
    budget = WALK_BUDGET
    for folder in folders:
        for here, dirs, names in os.walk(top / prefix / folder):
            budget -= len(dirs) + len(names)
            if budget < 0:
                return files
            dirs[:] = sorted(d for d in dirs if d not in _SKIPPED)
            rel = Path(here).relative_to(top / prefix).as_posix()
            files += [f"{rel}/{n}" for n in sorted(names)]
    return files


def _targets(ws: Workspace, broken: Sequence[Finding], ignored: list[str]) -> dict[int, str]:
    """For each broken finding (by its index in `broken`) whose link an ignored file would answer: that file."""
    rules = ws.config.links
    index = obsidian.Index([], ignored, rules.case,
                           obsidian.NOTE_SUFFIXES if rules.markdown_files else obsidian.OBSIDIAN_NOTE_SUFFIXES,
                           obsidian.lowers_with_extension(rules))
    ids: dict[str, str] | None = None  # id -> the ignored note that would have it, were it not ignored
    out: dict[int, str] = {}
    for n, (by_id, looked_for) in _looked_for(ws, broken).items():
        if not by_id:
            hit = _lookup(index, looked_for, broken[n].path)
        else:
            if ids is None:
                from vivary_git.graph import node_id

                ids = {}
                for p in ignored:
                    if p.lower().endswith((".md", ".markdown")):
                        ids.setdefault(node_id(p, ws.root_name, rules.ids), p)
            hit = ids.get(looked_for)
        if hit is not None:
            out[n] = hit
    return out


def _looked_for(ws: Workspace, broken: Sequence[Finding]) -> dict[int, tuple[bool, str]]:
    """What each broken finding's link or ref looked for (by its index in `broken`), and whether it looked for a
    document id (a ref, or a link in a `tropo.toml` workspace's own dialect) rather than a name: found again from
    its note (the link as its dialect reads it, resolved in this tree) and recognised by the finding it makes,
    never read back out of a message, which a note's name or a link's text could make say anything."""
    from vivary_git import check
    from vivary_git.dialects import registry
    from vivary_git.graph import link_resolver

    config = ws.config
    rules = config.links
    wanted = {f.path for f in broken}
    blobs = {e.path: e.oid for e in ws.source.entries if e.path in wanted}
    notes = ws.notes_for(sorted(set(blobs.values())))
    resolver = link_resolver(ws.graph())  # the graph's own: a link it found broken is looked up as it was
    by_id = rules.dialect == "vivary"
    targets: dict[str, list[Target]] = {}
    out: dict[int, tuple[bool, str]] = {}
    for n, f in enumerate(broken):
        note = notes.get(blobs.get(f.path, ""))
        if note is None:
            continue
        if f.code == "W220":
            out.update((n, (True, target)) for key, value in note.fields.items() if note.key_lines.get(key, 1) == f.line
                       for target in check.ref_targets(value)
                       if check.broken_ref(f.path, (key, f.line, target)).message == f.message)
            continue
        if f.path not in targets:  # every wikilink read, whatever the folder's `wikilinks`: a match is by finding
            targets[f.path] = registry.read_links(note, rules, config.wikilink_field, True)
        for t in targets[f.path]:
            if t.line != f.line:
                continue
            res = resolver.resolve(t, f.path)
            if res.path is None and check.broken_link(f.path, t, res.looked_for, rules.dialect,
                                                      resolver.missing_code(t)).message == f.message:
                out[n] = (by_id, res.looked_for)
                break
    return out


def _lookup(index: obsidian.Index, looked_for: str, source: str) -> str | None:
    """The ignored file a link reaches as the vault's editor reads names: the path from the root, then
    from the linking note, then by name anywhere."""
    name = looked_for.strip()
    if not name or name.startswith("../"):
        return None
    rooted = name.startswith(("/", "./"))
    hit = index.exact(name.lstrip("/")) or index.exact(obsidian.relative(source, name))
    return hit if hit is not None or rooted else index.nearest(name, source)


def _rules(ws: Workspace, paths: list[str], masked: bool = False) -> dict[str, str]:
    """What to say of each ignored file (workspace-relative): the rule that ignores it, and, when it is
    private by the floor or its name, that it stays out of the graph."""
    from vivary_git.checkignore import display_source
    from vivary_git.privacy import decide_scoped, scopes_on_disk

    source = ws.source
    repo = source.repo
    assert repo is not None and repo.workdir is not None
    prefix = f"{source.prefix}/" if source.prefix else ""
    asked = [prefix + p for p in paths]
    proc = repo.git(["check-ignore", "-v", "-n", "-z", "--stdin"], check=False,
                    input=b"".join(os.fsencode(p) + b"\0" for p in asked))
    if proc.returncode not in (0, 1):
        return {}
    fields = proc.stdout.split(b"\0")
    # Private by the floor, a workspace's `private_paths` or a sensitive name (Git's ignore rules aside: every
    # path here is ignored): decided as the commit guard and `doctor` decide files on disk, with Git matching
    # `private_paths` (deciding without Git refuses a workspace that lists them, and the hint was lost).
    top = repo.workdir
    private = {d.path: d for d in decide_scoped(top, asked, scopes_on_disk(top, asked), trees=(), gitignore=False,
                                                 git_dir=repo.pinned_git_dir) if d.private}
    out: dict[str, str] = {}
    for k in range(0, len(fields) - 3, 4):
        where, line, pattern, path = (os.fsdecode(x) for x in fields[k:k + 4])
        if not where or pattern.startswith("!") or path not in asked:
            continue
        rule = f"{display_source(where, repo.workdir)}:{line}" + ("" if masked else f":{pattern}")
        rel = path[len(prefix):]
        if path in private:
            out[rel] = (f"'{rel}' is on disk, but Git ignores it ({rule}) and it is private "
                        f"({private[path].told(masked=masked)}): link another note")
        else:
            out[rel] = (f"'{rel}' is on disk, but Git ignores it ({rule}), so it is in no tree and no graph "
                        "(an editor that does not read .gitignore shows the link resolved): un-ignore it, "
                        "or link another note")
    return out
