"""A pull request's review: the head tree's check, the change's blast radius, and ranked annotations.

`review()` reads the two trees (the only I/O); everything after it is a pure function of the
`Review` it returns, so the CLI, the Action and tests all render the same value.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Literal

import msgspec

from vivary_git import lifetime
from vivary_git.blast import ChangeReport, change_impact
from vivary_git.check import new_findings
from vivary_git.errors import ConfigError, GitError, VivaryError
from vivary_git.escape import text
from vivary_git.gates.private import decide
from vivary_git.git import MissingObject, Repo
from vivary_git.graph import Graph
from vivary_git.models import Edge, Finding, Node
from vivary_git.source import Source, rev_tree
from vivary_git.workspace import CheckReport, Workspace, open_workspace

if TYPE_CHECKING:
    from pygit2 import Oid

# The picture in the job summary stays readable (and under GitHub's 50,000-character Mermaid limit).
PICTURE_MAX_NODES = 40
LEVEL_RANK = {"error": 0, "warning": 1, "notice": 2}
WHY_CHANGED = "changed file"
WHY_BROKEN = "broken by this change"
WHY_ELSEWHERE = "not in this change"
WHY_EXISTING = "already in the base"
PRIVATE_COMMITTED = "vivary: private file committed"
# The fix for a shallow clone in the CI systems whose checkout is one by default.
FULL_HISTORY = "check out with full history (actions/checkout: `fetch-depth: 0`; GitLab CI: `GIT_DEPTH: 0`)"


class Annotation(msgspec.Struct, frozen=True):
    """One line-level remark for a CI system. `path` is relative to the repository root."""

    level: str  # "error" | "warning" | "notice"
    path: str
    line: int
    title: str
    message: str
    why: str  # WHY_CHANGED | WHY_BROKEN | WHY_ELSEWHERE


class Picture(msgspec.Struct, frozen=True):
    """The impacted neighbourhood: changed and impacted nodes, the edges among them, newly broken edges."""

    nodes: list[Node]
    edges: list[Edge]
    highlight: list[str]
    omitted: int  # nodes left out to keep the picture readable


class Referrer(msgspec.Struct, frozen=True):
    id: str
    path: str  # repository-relative
    field: str


class Broke(msgspec.Struct, frozen=True):
    """A note references no longer reach, and the notes whose references broke."""

    target: str  # the ID the references name
    change: str  # "removed" | "renamed" | "missing" (no note had that ID at base either)
    path: str | None  # where the note was at base (repository-relative)
    renamed_to: str | None
    renamed_path: str | None
    referrers: list[Referrer]


class NewFindings(msgspec.Struct, frozen=True):
    """The head's findings split by whether the base tree had them (`check.new_findings`)."""

    errors: int  # new in head
    warnings: int
    existing_errors: int  # the base had them too
    existing_warnings: int


class Review(msgspec.Struct, frozen=True):
    base: str | None
    head: str
    prefix: str  # the workspace root, relative to the repository root ("" at the top)
    check: CheckReport
    change: ChangeReport | None
    changed_files: list[str]  # repository-relative, base..head, under the workspace folder
    annotations: list[Annotation]  # every finding and notice, most important first
    picture: Picture | None
    note: str = ""  # why there is no blast radius, when there is none
    broke: list[Broke] = []  # what this change broke, grouped by the note the references name
    new: NewFindings | None = None  # None without a base tree: then every finding counts as new


def fails(r: Review, fail_on: str = "new") -> bool:
    """The gate's verdict: whether the head has an error that is new (`fail_on="new"`, the default: the
    base had none like it) or any error at all (`"all"`). Without a base every error is new."""
    if fail_on == "all" or r.new is None:
        return r.check.errors > 0
    return r.new.errors > 0


def repo_path(prefix: str, path: str) -> str:
    return f"{prefix}/{path}" if prefix else path


def review(
    cwd: str | os.PathLike[str] | None,
    *,
    base: str | None,
    head: str,
    root: str | None = None,
    cache: bool = True,
    depth: int | None = None,
    strict: bool | None = None,
) -> Review:
    """Check `head` and, with `base`, compute what the change base..head touches."""
    # A --root the tree lacks is a UsageError from open_source: the gate must not pass over nothing.
    # A gate: computed from the trees' blobs and this machine's caches, never a fetched cache (docs/cache.md).
    head_ws = open_workspace(cwd, rev=head, root=root, cache=cache, gate=True, rev_option="--head")
    lifetime.keep_until_exit(head_ws)  # freed by the system at exit, not object by object
    try:
        report = head_ws.check(strict=strict)
        head_graph = head_ws.graph()
    except ConfigError as err:  # a nested tropo.toml: its file is the workspace's
        if err.prefix is None:
            err.prefix = head_ws.source.prefix
        raise
    prefix = head_ws.source.prefix
    change: ChangeReport | None = None
    note = ""
    changed_files: list[str] = []
    is_new: list[bool] | None = None
    base_ws: Workspace | None = None
    base_graph: Graph | None = None
    if base is not None:
        repo = head_ws.source.repo
        assert repo is not None  # a --rev source always has one
        point = branch_point(repo, base, head)
        if point is False:
            # Two histories with no commit in common (a full clone: the shallow case was refused): there is no
            # branch point to start from, so the change is read as everything from the base tree to the head's.
            note = f"{base} and {head} share no commit: compared with {base} as it is, not with a branch point"
        elif point is not None:
            # The base moved on after the branch point (pull_request_target checks the head itself, and `ci --base
            # main` on a branch main has gone past): compared with the base's tip, what main did since would
            # count as the change's, a finding main fixed as one the change made. The change is branch point..head.
            note = (f"{base} is not an ancestor of {head}: compared with their merge base {point[:12]}, where the "
                    "change starts")
            base = point
        try:
            base_ws = _open_base(cwd, base, root, cache, repo)
            base_graph = base_ws.graph()
        except GitError:
            raise  # a base that does not resolve is a usage error
        except VivaryError as err:
            # A base whose config no longer loads must not hide the head's findings.
            said = f"blast radius not computed: the base tree {base} cannot be read: {err}"
            note = f"{note}; {said}" if note else said
            base_ws = base_graph = None
        else:
            change = change_impact(base_graph, head_graph, base, head, depth)
            is_new = _new_in_head(report.findings, base_graph, base_ws.source, head_ws)
        changed_files = _changed_files(repo, rev_tree(repo, base), head_ws.source.root_tree, prefix)
    # Everything below is what leaves the machine: private notes are masked before it is built (docs/privacy.md).
    mask = decide(head_ws, head_graph, report.findings, prefix, base_ws, base_graph, change,
                  files=_in_tree(head_ws.source, changed_files))
    findings = [mask.finding(f) for f in report.findings]
    nodes = [mask.node(n) for n in head_graph.nodes]
    edges = [mask.edge(e) for e in head_graph.edges]
    if change is not None:
        change = mask.change(change)
    report = msgspec.structs.replace(report, findings=findings)
    ranked = rank(findings, change, nodes, edges, prefix, changed_files, is_new, hidden=mask.masked,
                  private_files=[repo_path(prefix, p) for p in mask.paths])
    picture = neighbourhood(change, nodes, edges) if change is not None else None
    broke = what_broke(change, nodes, prefix) if change is not None else []
    new: NewFindings | None = None
    if is_new is not None:
        levels = [(f.level == "error", fresh) for f, fresh in zip(report.findings, is_new, strict=True)]
        new = NewFindings(errors=levels.count((True, True)), warnings=levels.count((False, True)),
                          existing_errors=levels.count((True, False)), existing_warnings=levels.count((False, False)))
    return Review(base=base, head=head, prefix=prefix, check=report, change=change, changed_files=changed_files,
                  annotations=ranked, picture=picture, note=note, broke=broke, new=new)


def what_broke(change: ChangeReport, nodes: list[Node], prefix: str) -> list[Broke]:
    """The change's broken references grouped by the ID they name: a removed or renamed note first
    (most referrers first), then IDs no note ever had."""
    by_id = {n.id: n for n in nodes}
    gone = {c.id: c for c in change.changed if c.change == "removed"}
    added = {c.id: c for c in change.changed if c.change == "added"}
    groups: dict[str, list[Referrer]] = {}
    for e in change.broken_edges:
        src = by_id.get(e.from_)
        groups.setdefault(e.to, []).append(Referrer(e.from_, repo_path(prefix, src.path) if src else "", e.field))
    out: list[Broke] = []
    for target, refs in groups.items():
        c = gone.get(target)
        new = added.get(c.renamed) if c is not None and c.renamed else None
        out.append(Broke(
            target, "missing" if c is None else "renamed" if new is not None else "removed",
            repo_path(prefix, c.path) if c is not None else None,
            new.id if new is not None else None, repo_path(prefix, new.path) if new is not None else None,
            refs,
        ))
    return sorted(out, key=lambda b: (b.change == "missing", -len(b.referrers), b.target))


def _new_in_head(findings: list[Finding], base_graph: Graph, base_source: Source, head_ws: Workspace) -> list[bool]:
    """Which head findings the base tree did not have (its graph was built from its own blobs, as the
    head's), a renamed note's findings following it."""
    from vivary_git.baseline import renamed_notes

    base_tree = base_source.tree_id
    same_root = base_source.prefix == head_ws.source.prefix
    renamed = renamed_notes(head_ws, base_tree) if same_root and base_tree is not None else {}
    return new_findings(findings, base_graph.findings, renamed)


_WALK_LIMIT = 100_000  # commits _records_ancestor reads before it gives up (then: not known)


def branch_point(repo: Repo, base: str, head: str, *, option: str = "--base") -> str | Literal[False] | None:
    """The merge base of `base` and `head` when `base` is a commit that is not an ancestor of `head`; None when
    `base` is an ancestor (the usual pull request) or a tree; False when the two histories share no commit.
    A shallow clone may lack the commits that say which: when it cannot tell, this refuses (GitError), since
    compared with the base's tip what the base did since the branch point would count as the change's."""
    pygit2 = repo.pygit2
    try:
        b = repo.repo.revparse_single(base).peel(pygit2.Commit).id
        h = repo.repo.revparse_single(head).peel(pygit2.Commit).id
        if b == h or repo.repo.descendant_of(h, b):
            return None
        shallow = repo.repo.is_shallow
        # In a shallow clone libgit2 reads the cut commits as parentless, so a base fetched at depth 1 is no
        # ancestor of a head checked out at depth 1 even when it is the head's parent: their own records say.
        if shallow and _records_ancestor(repo, h, b):
            return None
        found: Oid | None = repo.repo.merge_base(b, h)  # None when they share no commit (not in the stub)
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        return None
    if found is not None:
        return str(found) if found != b else None
    if not shallow:
        return False
    # Not "not an ancestor": a GitLab merge request's CI_MERGE_REQUEST_DIFF_BASE_SHA is one, deeper than GIT_DEPTH.
    raise GitError(
        f"{option} {base}: the history of {head} in this shallow clone reaches neither {base} nor their merge base, "
        f"so where the change starts cannot be told (compared with {base} itself, what {base} did since the "
        f"branch point would count as the change's). Fetch more history with "
        f"`git fetch --no-tags --deepen=100 origin {b} {h}` until `git merge-base {b} {h}` names a commit, "
        f"or {FULL_HISTORY}"
    )


def _records_ancestor(repo: Repo, start: Oid, target: Oid) -> bool:
    """Whether `target` is `start` or an ancestor of it as the commits themselves record their parents, over the
    commits this clone has (a shallow clone's cut hides those parents from libgit2's own walk). False when the
    walk reaches a commit the clone lacks or `_WALK_LIMIT` commits first without meeting `target`."""
    pygit2 = repo.pygit2
    seen = {start}
    todo = [start]
    while todo and len(seen) <= _WALK_LIMIT:
        oid = todo.pop()
        if oid == target:
            return True
        obj = repo.repo.get(oid)
        if obj is None or obj.type != pygit2.GIT_OBJECT_COMMIT:
            continue
        for line in obj.read_raw().split(b"\n"):
            if not line:
                break  # the headers end at the first empty line
            if line.startswith(b"parent "):
                parent = pygit2.Oid(hex=line[7:].decode("ascii", "replace").strip())
                if parent not in seen:
                    seen.add(parent)
                    todo.append(parent)
    return False


def _open_base(cwd: str | os.PathLike[str] | None, base: str, root: str | None, cache: bool, repo: Repo) -> Workspace:
    try:
        ws = open_workspace(cwd, rev=base, root=root, cache=cache, gate=True, rev_option="--base")
        lifetime.keep_until_exit(ws)
    except MissingObject:
        raise  # the commit is here, a file of it is not (a partial clone's): its own fetch, not a deeper history
    except GitError as err:
        if (repo.common_dir / "shallow").exists():
            fetch, then = _fetch_command(repo, base)
            raise GitError(
                f"--base {base}: not in this shallow clone. Fetch it with `{fetch}`{then}, or {FULL_HISTORY}"
            ) from None
        raise err from None
    return ws


def _fetch_command(repo: Repo, base: str) -> tuple[str, str]:
    """The fetch that brings `base` into a shallow clone, quoted for a shell, and what to pass as `--base` after
    it when that is not `base` (" (then ...)", or ""). A remote-tracking name (`origin/main`,
    `refs/remotes/origin/main`, of a configured remote) is fetched into that very ref: the remote has no ref
    `origin/main`, and a fetch of `main` alone would land in FETCH_HEAD, not in `origin/main`. A branch name
    (`main`, `refs/heads/main`) is fetched from `origin` (or the one remote there is) into its remote-tracking ref,
    and `--base` then names that: a fetch of `main` alone would leave `main` unknown. A commit id is asked of the
    remote as it is: fetched, it is found."""
    import re

    name = next((base[len(p):] for p in ("refs/remotes/", "remotes/") if base.startswith(p)), base)
    try:
        remotes = sorted(r for r in repo.repo.remotes.names() if r)
    except repo.pygit2.GitError:
        remotes = []

    def fetch(remote: str, what: str) -> str:
        return (f"git fetch --no-tags --depth=1 {'-- ' if remote.startswith('-') else ''}{shlex.quote(remote)} "
                f"{shlex.quote(what)}")

    for remote in sorted((r for r in remotes if name.startswith(f"{r}/")), key=len, reverse=True):
        branch = name[len(remote) + 1:]
        if branch:
            return fetch(remote, f"{branch}:refs/remotes/{remote}/{branch}"), ""
    source = "origin" if "origin" in remotes or len(remotes) != 1 else remotes[0]
    branch = base.removeprefix("refs/heads/")
    if source in remotes and re.fullmatch(r"[0-9a-fA-F]{7,64}", branch) is None \
            and not branch.startswith(("refs/", "-")) and repo.pygit2.reference_is_valid_name(f"refs/heads/{branch}"):
        return fetch(source, f"{branch}:refs/remotes/{source}/{branch}"), \
            f" (then pass `--base {shlex.quote(f'{source}/{branch}')}`)"
    return fetch(source, base), ""


def _changed_files(repo: Repo, base_tree: str, head_tree: str | None, prefix: str = "") -> list[str]:
    """The repository-relative paths under the workspace folder `prefix` that differ between the two trees."""
    # Tree ids, never the revisions as typed: a ref named `--output=x` would be an option to Git.
    # --no-renames: a renamed file is its new path (annotated) plus its old one (gone).
    # Only the workspace's folder, whose files are all that is ranked: Git then reads no other folder's tree, which a
    # treeless clone (`--filter=tree:0`) lacks and Git would fetch, a request at a time, outside the workspace.
    if head_tree is None:
        return []
    folder = ["--", f":(top,literal){prefix}"] if prefix else []
    proc = repo.git(["diff-tree", "-r", "--name-only", "-z", "--no-renames", base_tree, head_tree, *folder],
                    check=False)
    if proc.returncode != 0:
        return []
    return sorted(p for p in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if p)


def _in_tree(source: Source, paths: Iterable[str]) -> list[str]:
    """Which of the repository-relative `paths` are files of the workspace's tree, workspace-relative (the
    change's own files: a `.env` it adds is no note, and still private)."""
    repo = source.repo
    if repo is None or source.tree_id is None:
        return []
    lead = f"{source.prefix}/" if source.prefix else ""
    try:
        tree = repo.repo[source.tree_id].peel(repo.pygit2.Tree)
        return [p[len(lead):] for p in paths if p.startswith(lead) and p[len(lead):] in tree]
    except (KeyError, ValueError, repo.pygit2.GitError):
        return []  # a tree the clone lacks: the notes are still decided, these files go without their notice


def rank(
    findings: Iterable[Finding],
    change: ChangeReport | None,
    nodes: list[Node],
    edges: list[Edge],
    prefix: str,
    changed_files: Iterable[str],
    is_new: Sequence[bool] | None = None,
    *,
    hidden: Collection[str] = (),
    private_files: Collection[str] = (),
) -> list[Annotation]:
    """Every finding as an annotation plus a notice per changed note that others reference, ordered
    so that whatever fits GitHub's per-type cap is what a reviewer needs: within a level, findings
    on files this change touched first, then findings this change caused elsewhere (a reference
    broken by deleting or renaming its target), then findings in files it did not touch, then findings
    the base already had (`is_new` False). `hidden`: the IDs that stand for private notes (`gates.private`),
    counted rather than named; `private_files` (repository-relative): a notice on each the change touched, first
    among the notices, since a private file in a commit is in every clone of it."""
    changed = set(changed_files)
    by_id = {n.id: n for n in nodes}
    broke: set[str] = set()
    if change is not None:
        broke = {by_id[e.from_].path for e in change.broken_edges if e.from_ in by_id}
    out: list[tuple[tuple[int, int, str, int], Annotation]] = []
    for i, f in enumerate(findings):
        path = repo_path(prefix, f.path)
        if is_new is not None and not is_new[i]:
            tier, why = 3, WHY_EXISTING
        elif path in changed:
            tier, why = 0, WHY_CHANGED
        else:
            tier, why = (1, WHY_BROKEN) if f.path in broke else (2, WHY_ELSEWHERE)
        a = Annotation(f.level, path, max(f.line, 1), f"vivary {f.code}", f.message, why)
        out.append(((LEVEL_RANK.get(f.level, 1), tier, path, f.line), a))
    if change is not None:
        referrers: dict[str, set[str]] = {}
        for e in edges:
            if not e.broken:
                referrers.setdefault(e.to, set()).add(e.from_)
        notices: list[tuple[int, str, Annotation]] = []
        for c in change.changed:
            everyone = referrers.get(c.id, set())
            if c.change == "removed" or not everyone:
                continue
            who = sorted(everyone - set(hidden))
            private = len(everyone) - len(who)
            shown = ", ".join(who[:8]) + (f" (+{len(who) - 8} more)" if len(who) > 8 else "")
            if private:
                shown += f"{' and ' if who else ''}{private} private note(s)"
            if c.id in hidden:
                message = (f"{len(everyone)} note(s) reference a private note ({c.change}): {shown}. "
                           "`git vivary blast` on it, where the file is yours, lists everything that reaches it.")
            else:
                message = (f"{len(everyone)} note(s) reference '{c.id}' ({c.change}): {shown}. "
                           f"`git vivary blast {c.id}` lists everything that reaches it.")
            path = repo_path(prefix, c.path)
            notices.append((len(who), path, Annotation("notice", path, 1, "vivary: referenced note changed",
                                                       message, WHY_CHANGED)))
        for i, (_, _path, a) in enumerate(sorted(notices, key=lambda t: (-t[0], t[1]))):
            out.append(((2, 0, "", i), a))
    for path in sorted(changed.intersection(private_files)):
        quoted = shlex.quote(path)
        out.append(((2, -1, path, 0), Annotation(
            "notice", path, 1, PRIVATE_COMMITTED,
            f"{path} is private (docs/privacy.md) and this change commits it: every clone holds what it says. CI "
            f"output shows none of its text. From the repository's top, `git vivary privacy explain {quoted}` says "
            f"which rule makes it private; `git rm --cached {quoted}` keeps it out of the next commit (history "
            "still has it); the `privacy-guard` hook refuses such a commit (docs/hooks.md).", WHY_CHANGED)))
    return [a for _, a in sorted(out, key=lambda t: t[0])]


def select(annotations: Iterable[Annotation], per_type: int) -> tuple[list[Annotation], int]:
    """The first `per_type` annotations of each level (input order kept) and how many were left out."""
    taken: dict[str, int] = {}
    chosen: list[Annotation] = []
    left = 0
    for a in annotations:
        if taken.get(a.level, 0) < per_type:
            taken[a.level] = taken.get(a.level, 0) + 1
            chosen.append(a)
        else:
            left += 1
    return chosen, left


def neighbourhood(change: ChangeReport, nodes: list[Node], edges: list[Edge]) -> Picture:
    """What a reviewer must look at: the changed notes, every note whose reference this change broke,
    then the notes that reference a changed note directly, up to PICTURE_MAX_NODES. Notes further away
    are in the impacted list, not the picture. Removed notes show as their broken references' targets,
    highlighted with the changed ones."""
    by_id = {n.id: n for n in nodes}
    changed = [c.id for c in change.changed if c.id in by_id]
    sources = [e.from_ for e in change.broken_edges if e.from_ in by_id]
    direct = [i.id for i in change.impacted if i.distance == 1 and i.id in by_id]
    wanted = list(dict.fromkeys(changed + sources + direct))
    keep = wanted[:PICTURE_MAX_NODES]
    kept = set(keep)
    broken = {(e.from_, e.field, e.to) for e in change.broken_edges}
    shown = [e for e in edges if e.from_ in kept and (e.to in kept if not e.broken else (e.from_, e.field, e.to)
                                                       in broken)]
    removed = [c.id for c in change.changed if c.change == "removed"]
    return Picture(nodes=[by_id[i] for i in keep], edges=shown,
                   highlight=[i for i in changed if i in kept] + removed, omitted=len(wanted) - len(keep))


def render_text(r: Review) -> str:
    t = text

    def line(a: Annotation) -> str:
        return f"{t(a.path)}:{a.line}: {t(a.level)} {t(a.title.removeprefix('vivary '))}: {t(a.message)}"

    shown = sorted((a for a in r.annotations if a.level != "notice"), key=lambda a: (a.path, a.line))
    lines = [line(a) for a in shown if a.why != WHY_EXISTING]
    existing = [line(a) for a in shown if a.why == WHY_EXISTING]
    if existing:
        lines += ["", f"already in {t(r.base)} (not counted against this change):", *existing]
    if r.change is not None:
        c = r.change
        lines.append("")
        lines += [f"{ch.change}\t{t(ch.id)}\t{t(ch.type or '-')}\t{t(repo_path(r.prefix, ch.path))}"
                  for ch in c.changed]
        lines += [f"broke\t{t(e.from_)} -[{t(e.field)}]-> {t(e.to)}" for e in c.broken_edges]
        lines += [f"fixed\t{t(e.from_)} -[{t(e.field)}]-> {t(e.to)}" for e in c.fixed_edges]
        lines += [f"impacted\t{t(i.id)}\t{t(i.type or '-')}\tdistance {i.distance} via {t(i.via)}"
                  for i in c.impacted]
    lines.append("")
    lines.append(headline(r))
    if r.note:
        lines.append(f"vivary: {t(r.note)}")
    return "\n".join(lines) + "\n"


def headline(r: Review) -> str:
    """One line of text: the revision names in it are escaped (docs/output.md)."""
    s = (f"vivary: {r.check.checked} document(s), {r.check.errors} error(s), {r.check.warnings} warning(s) "
         f"in {text(r.head)}")
    if r.new is not None:
        s += f" ({r.new.errors} error(s) and {r.new.warnings} warning(s) new since {text(r.base)})"
    if r.change is not None:
        c = r.change.counts
        s += (f"; {text(r.base or '')}..{text(r.head)}: {c['changed']} changed, {c['broken_edges']} broken edge(s), "
              f"{c['fixed_edges']} fixed, {c['impacted']} impacted")
        if c.get("further"):
            s += f" (+{c['further']} further than {r.change.depth} hops)"
    return s
