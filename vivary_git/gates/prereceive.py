"""The graph gate on the server: `git vivary hooks run pre-receive`, in a bare repository's `pre-receive` hook.

Git runs the hook before any ref moves, with one `OLD NEW REFNAME` line per ref pushed on stdin and the pushed
objects in a quarantine (docs/hooks.md, "On the server: pre-receive"). Every line comes from whoever pushed:
it is read within bounds and checked (ids of 40 or 64 hex digits, a ref name Git accepts) before anything is
done with it, and a line that is not is refused, the push with it. Every commit that enters the repository under
a name is judged, whatever the name, except data refs; for each ref pushed:

* a branch, a tag (an annotated tag peeled to the commit it names) or any other ref (`refs/pull/*`,
  `refs/remotes/*` of a `--mirror` push) that is updated (a fast-forward, a force push, a tag moved) is
  checked against what it named before (OLD, peeled): the push is refused when NEW has an error OLD did not have;
* a new one is checked against the repository's default branch (HEAD), from where the two histories meet
  (their merge base: a tag on a commit the default branch already has gains nothing), or, when there is none,
  with nothing to compare with: every error counts;
* a deletion, a ref naming a tree or a blob (no commit, no history), and data refs (`refs/notes/*`, and
  `refs/vivary/*` that `git vivary sync` pushes) are not checked: accepted unread, never parsed as notes.

Push options (`git push -o`) and who pushes (`GL_USERNAME`, `GITEA_PUSHER_NAME`) decide nothing: the gate reads
only the ref lines and the repository. Refs naming the same commit from the same base are checked once.
Inside the quarantine nothing derived is written (`git.quarantined`).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, NamedTuple

from vivary_git.errors import UsageError
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from pygit2 import Oid

_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_MAX_LINES = 10_000  # refs one push may update before the hook refuses to read on
_MAX_LINE = 4_096 + 2 * 64 + 2  # a ref name Git accepts is at most 4,096 bytes here


class Update(NamedTuple):
    """One line Git hands the hook: the ref `ref` moves from `old` to `new` (all zeros: absent)."""
    old: str
    new: str
    ref: str


def _absent(oid: str) -> bool:
    return set(oid) == {"0"}


def bounded_lines(stream: BinaryIO) -> Iterator[bytes]:
    """`stream`'s lines, none read past `_MAX_LINE + 1` bytes (a longer one is then refused by its length)."""
    return iter(lambda: stream.readline(_MAX_LINE + 1), b"")


def read_updates(lines: Iterable[bytes]) -> list[Update]:
    """The hook's stdin, each line checked; a line that is not `OLD NEW REFNAME` as Git writes it is exit 2,
    named by its number."""
    import pygit2

    out: list[Update] = []
    for number, raw in enumerate(lines, 1):
        if number > _MAX_LINES:
            raise UsageError(f"pre-receive: more than {_MAX_LINES} refs in one push; push them in parts")
        where = f"pre-receive: stdin line {number}"
        if len(raw) > _MAX_LINE:
            raise UsageError(f"{where}: {len(raw)} bytes, longer than any line Git writes; not a ref update")
        try:
            line = raw.decode("utf-8").rstrip("\n")
        except UnicodeDecodeError:
            raise UsageError(f"{where}: not UTF-8; a ref update is `OLD NEW REFNAME`") from None
        parts = line.split(" ")
        if len(parts) != 3:
            raise UsageError(f"{where}: {shown(line)}: not `OLD NEW REFNAME` (three fields, one space apart)")
        old, new, ref = parts
        for name, oid in (("OLD", old), ("NEW", new)):
            if not _ID.fullmatch(oid):
                raise UsageError(f"{where}: {name} {shown(oid)}: not an object id (40 or 64 lower-case hex digits)")
        if len(old) != len(new) or (_absent(old) and _absent(new)):
            raise UsageError(f"{where}: {shown(old)} {shown(new)}: not a pair of ids Git writes for one ref")
        if (not ref.startswith("refs/") or not ref.isprintable() or ref.startswith("-")
                or not pygit2.reference_is_valid_name(ref)):
            raise UsageError(f"{where}: {shown(ref)}: not a ref name Git accepts")
        out.append(Update(old, new, ref))
    return out


# Refs whose commits are data, not a tree of documents: Git's notes (`git notes`, vivary's verdict notes) and what
# `git vivary sync` pushes (`refs/vivary/*`). They are accepted unread: never parsed as a workspace, never as notes.
DATA_REFS = ("refs/notes/", "refs/vivary/")


class Plan(NamedTuple):
    """What the gate does with one update: `skip` says why nothing is checked; else `commit` (NEW, a tag peeled to
    the commit it names) against `base` (None: against nothing), and `note`, how that base was chosen."""
    update: Update
    skip: str | None
    base: str | None
    note: str
    commit: str = ""


def kind(ref: str) -> str:
    """What a ref is, in the words the gate prints."""
    if ref.startswith("refs/heads/"):
        return "branch"
    if ref.startswith("refs/tags/"):
        return "tag"
    return "ref"


class _Peeled(NamedTuple):
    commit: str | None  # the commit the object names (a tag peeled, through tags of tags); None: it names none
    what: str  # "commit", "tag", or the type it ends at ("tree", "blob"); "missing": not in this repository


def _peel(repo: object, oid: str) -> _Peeled:
    import pygit2

    handle: pygit2.Repository = repo  # type: ignore[assignment]
    try:
        obj = handle[oid]
    except (KeyError, ValueError, pygit2.GitError):
        return _Peeled(None, "missing")
    first = obj.type_str
    for _ in range(64):  # a chain of tags is bounded: a pusher's objects decide its length
        if not isinstance(obj, pygit2.Tag):
            break
        try:
            obj = handle[obj.target]
        except (KeyError, ValueError, pygit2.GitError):
            return _Peeled(None, "missing")
    else:
        return _Peeled(None, "missing")  # deeper than any tag a person makes: left to `check`, which refuses it
    if obj.type_str != "commit":
        return _Peeled(None, obj.type_str)
    return _Peeled(str(obj.id), first)


def plan(cwd: Path, update: Update, repo: object | None = None) -> Plan:
    """The check one pushed ref gets (module docstring). `repo`: the `git.Repo` of `cwd`, opened once per push."""
    if _absent(update.new):
        return Plan(update, "deleted: nothing to check", None, "")
    if update.ref.startswith(DATA_REFS):
        return Plan(update, "notes or vivary's own data, not documents: accepted unread", None, "")
    from vivary_git.git import Repo

    opened: Repo = repo if isinstance(repo, Repo) else Repo(cwd)
    pygit2 = opened.pygit2
    name = kind(update.ref)
    new = _peel(opened.repo, update.new)
    if new.what == "missing":  # `check` says so in its words, and the push is refused (exit 2)
        return Plan(update, None, None, f"a {name} whose commit is not in this repository", update.new)
    if new.commit is None:
        return Plan(update, f"names a {new.what}, not a commit: no history of documents to check", None, "")
    via = f"the commit tag {update.new[:12]} names; " if new.what == "tag" else ""
    if not _absent(update.old):
        old = _peel(opened.repo, update.old)
        if old.commit is not None:
            return Plan(update, None, old.commit, via.removesuffix("; "), new.commit)
    try:
        head = opened.repo.references.get("HEAD")
        target = head.resolve() if head is not None else None
    except (KeyError, pygit2.GitError):
        target = None
    if target is None or target.name == update.ref:
        return Plan(update, None, None,
                    f"{via}a new {name}, and no default branch to compare with: every error counts", new.commit)
    default = target.name.removeprefix("refs/heads/")
    try:
        found: Oid | None = opened.repo.merge_base(target.target, pygit2.Oid(hex=new.commit))  # None: no shared commit
    except (KeyError, ValueError, pygit2.GitError):
        return Plan(update, None, None, f"{via}a new {name}, not found in this repository", new.commit)
    if found is None:
        return Plan(update, None, None, f"{via}a new {name} sharing no commit with {default}: every error counts",
                    new.commit)
    if str(found) == new.commit:  # a tag on a commit the default branch has (`git push --tags` of old releases)
        return Plan(update, f"{via}a new {name} on a commit {default} already has: nothing new to check", None, "")
    return Plan(update, None, str(found),
                f"{via}a new {name}: compared with where it leaves {default} ({str(found)[:12]})", new.commit)


def run(cwd: Path, lines: Iterable[bytes], roots: Sequence[str] = ()) -> int:
    """Check every branch and tag a push updates (module docstring); exit 1 when any gains an error, 2 for a line
    that is not a ref update (the whole push refused: nothing is checked until every line is read and valid).
    The cost is one check per distinct (commit, base) pushed, never one per commit: refs that name the same
    commit from the same base (`git push --mirror`, a tag on a branch's tip) share one check."""
    from vivary_git.errors import EXIT_FINDINGS, EXIT_OK
    from vivary_git.main import main

    updates = read_updates(lines)
    repo = None
    if any(not _absent(u.new) and not u.ref.startswith(DATA_REFS) for u in updates):
        from vivary_git.git import Repo

        repo = Repo(cwd)
    code = EXIT_OK
    refused: list[str] = []
    unchecked: list[str] = []
    results: list[tuple[Update, int]] = []  # each ref checked, and its exit
    done: dict[tuple[str, str | None], tuple[str, int]] = {}  # (commit, base) -> the first ref checked, its exit
    for step in [plan(cwd, u, repo) for u in updates]:
        name = step.update.ref
        if step.skip is not None:
            print(f"vivary: {shown(name)}: {shown(step.skip)}", flush=True)
            continue
        key = (step.commit, step.base)
        if key in done:
            first, ref_code = done[key]
            print(f"vivary: {shown(name)}: {step.commit[:12]}, as checked for {shown(first)} above", flush=True)
        else:
            print(f"vivary: {shown(name)}: checking {step.commit[:12]}"
                  + (f"; {shown(step.note)}" if step.note else ""), flush=True)
            since = ["--new-since", step.base] if step.base is not None else []
            ref_code = EXIT_OK
            for where in [["--root", r] for r in roots] or [[]]:
                if where:
                    print(f"vivary: workspace {shown(where[-1])}/ (paths below are relative to it)", flush=True)
                # What the gate prints goes to whoever pushed and into the server's logs: a private file's
                # findings are counted, their text masked (docs/privacy.md).
                ref_code = max(ref_code, main(["check", "--rev", step.commit, "--gate", "--mask-private", *since,
                                               "-C", str(cwd), *where]))
            done[key] = (name, ref_code)
        results.append((step.update, ref_code))
        if ref_code == EXIT_FINDINGS:
            refused.append(name)
        elif ref_code != EXIT_OK:
            unchecked.append(name)
        code = max(code, ref_code)
    if refused:
        print(f"vivary: push refused: {', '.join(shown(r) for r in refused)} would gain the errors above (each "
              "under the ref's `checking` line, as path:line); fix them in a new commit"
              + (" (or point the tag at a commit without them)" if any(kind(r) == "tag" for r in refused) else "")
              + " and push again", file=sys.stderr)
    passed = [u.ref for u, c in results if c == EXIT_OK]
    if passed and (refused or unchecked):
        print(f"vivary: {', '.join(shown(r) for r in passed)} passed; Git takes or refuses a push whole: push "
              f"{'it' if len(passed) == 1 else 'them'} without {', '.join(shown(r) for r in refused + unchecked)}",
              file=sys.stderr)
    if unchecked:  # a gate that cannot run lets nothing through
        print(f"vivary: push refused: {', '.join(shown(r) for r in unchecked)} could not be checked (the error "
              "above says why)", file=sys.stderr)
    return code
