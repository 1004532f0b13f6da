"""The graph gate on the server: `git vivary hooks run pre-receive`, in a bare repository's `pre-receive` hook.

Git runs the hook before any ref moves, with one `OLD NEW REFNAME` line per ref pushed on stdin and the pushed
objects in a quarantine (docs/hooks.md, "On the server: pre-receive"). Every line comes from whoever pushed:
it is read within bounds and checked (ids of 40 or 64 hex digits, a ref name Git accepts) before anything is
done with it, and a line that is not is refused, the push with it. For each branch pushed:

* an update (a fast-forward or a force push) is checked against what the branch had (OLD): the push is refused
  when NEW has an error OLD did not have;
* a new branch is checked against the repository's default branch (HEAD), from where the two histories meet
  (their merge base), or, when there is none, with nothing to compare with: every error counts;
* a deletion, a tag and any other ref (notes, `refs/vivary/*`, a pull request's) are not checked.

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


class Plan(NamedTuple):
    """What the gate does with one update: `skip` says why nothing is checked; else NEW against `base` (None:
    against nothing), and `note`, how that base was chosen."""
    update: Update
    skip: str | None
    base: str | None
    note: str


def plan(cwd: Path, update: Update) -> Plan:
    """The check one pushed ref gets (module docstring)."""
    if _absent(update.new):
        return Plan(update, "deleted: nothing to check", None, "")
    if not update.ref.startswith("refs/heads/"):
        kind = "a tag" if update.ref.startswith("refs/tags/") else "not a branch"
        return Plan(update, f"{kind}: not checked (branches are)", None, "")
    if not _absent(update.old):
        return Plan(update, None, update.old, "")
    from vivary_git.git import Repo

    repo = Repo(cwd)
    pygit2 = repo.pygit2
    try:
        head = repo.repo.references.get("HEAD")
        target = head.resolve() if head is not None else None
    except (KeyError, pygit2.GitError):
        target = None
    if target is None or target.name == update.ref:
        return Plan(update, None, None, "a new branch, and no default branch to compare with: every error counts")
    default = target.name.removeprefix("refs/heads/")
    try:
        found: Oid | None = repo.repo.merge_base(target.target, pygit2.Oid(hex=update.new))  # None: no shared commit
    except (KeyError, ValueError, pygit2.GitError):
        return Plan(update, None, None, "a new branch, not found in this repository")  # `check` says so, exit 2
    if found is None:
        return Plan(update, None, None, f"a new branch sharing no commit with {default}: every error counts")
    return Plan(update, None, str(found),
                f"a new branch: compared with where it leaves {default} ({str(found)[:12]})")


def run(cwd: Path, lines: Iterable[bytes], roots: Sequence[str] = ()) -> int:
    """Check every branch a push updates (module docstring); exit 1 when any gains an error, 2 for a line that
    is not a ref update (the whole push refused: nothing is checked until every line is read and valid)."""
    from vivary_git.errors import EXIT_FINDINGS, EXIT_OK
    from vivary_git.main import main

    code = EXIT_OK
    refused: list[str] = []
    unchecked: list[str] = []
    for step in [plan(cwd, u) for u in read_updates(lines)]:
        name = step.update.ref
        if step.skip is not None:
            print(f"vivary: {shown(name)}: {shown(step.skip)}", flush=True)
            continue
        print(f"vivary: {shown(name)}: checking {step.update.new[:12]}"
              + (f"; {shown(step.note)}" if step.note else ""), flush=True)
        since = ["--new-since", step.base] if step.base is not None else []
        ref_code = EXIT_OK
        for where in [["--root", r] for r in roots] or [[]]:
            if where:
                print(f"vivary: workspace {shown(where[-1])}/ (paths below are relative to it)", flush=True)
            ref_code = max(ref_code, main(["check", "--rev", step.update.new, "--gate", *since, "-C", str(cwd),
                                           *where]))
        if ref_code == EXIT_FINDINGS:
            refused.append(name)
        elif ref_code != EXIT_OK:
            unchecked.append(name)
        code = max(code, ref_code)
    if refused:
        print(f"vivary: push refused: {', '.join(shown(r) for r in refused)} would gain the errors above; fix "
              "them and push again", file=sys.stderr)
    if unchecked:  # a gate that cannot run lets nothing through
        print(f"vivary: push refused: {', '.join(shown(r) for r in unchecked)} could not be checked (the error "
              "above says why)", file=sys.stderr)
    return code
