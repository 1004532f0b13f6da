"""What a clone lacks of a tree it is asked to read: the blobs a partial clone has not fetched, or a damaged
repository's.

A partial clone (`git clone --filter=blob:none`, actions/checkout's `filter: blob:none`) holds the blobs of the
commit it checked out; Git fetches any other from the clone's promisor remote when a `git` command reads it.
libgit2, which reads our trees, never fetches, and no command of ours goes to the network unasked. So a blob a
tree names and the clone lacks (`git.MissingObject`) is refused once, where the command stops (exit 2): the
revision, the first missing file and how many are missing under the workspace, why, and the one Git command
that fetches them all in a single batch (`fetch_command`). A repository that is not a partial clone and lacks
an object is damaged: `git fsck` is the fix named then.

Only what the privacy boundary admits is named: the caller says which paths are public (`public`); a private
note missing is counted, never named. Blob contents are never read here (they are not there).
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from typing import Any

from vivary_git.git import PROMISOR_FETCH as _FETCH
from vivary_git.git import MissingObject


def missing_blobs(repo: Any, tree_id: str) -> list[tuple[str, str]]:
    """(path, id) of every blob under tree `tree_id` (of pygit2 repository `repo`) that its object store lacks,
    and of every folder whose tree it lacks (its path ends in `/`), by path. Submodules are other repositories:
    not looked into."""
    odb = repo.odb
    out: list[tuple[str, str]] = []
    todo = [("", tree_id)]
    while todo:
        base, oid = todo.pop()
        try:
            tree = repo[oid]
        except KeyError:  # pygit2.NotFoundError: a treeless clone's folder
            out.append((base, str(oid)))
            continue
        for entry in tree:
            kind = entry.type_str
            if kind == "tree":
                todo.append((f"{base}{entry.name}/", entry.id))
            elif kind == "blob" and entry.id not in odb:
                out.append((f"{base}{entry.name}", str(entry.id)))
    return sorted(out)


def promisor(repo: Any) -> str | None:
    """The remote a partial clone fetches what it lacks from (`remote.NAME.promisor`, `git -c` included as Git
    reads it, or the older `extensions.partialClone`, which Git reads from the config file alone), or None for a
    clone that is not partial. With several, `origin` if it is one."""
    import pygit2

    from vivary_git.git import setting_of

    unread = (KeyError, ValueError, TypeError, pygit2.GitError)
    config = repo.config
    names: list[str] = []
    try:
        remotes = [name for name in repo.remotes.names() if name]
    except unread:
        remotes = []
    for name in remotes:
        try:
            if setting_of(repo, f"remote.{name}.promisor", boolean=True) == "true":
                names.append(name)
        except unread:  # not a boolean Git would read as true
            continue
    try:
        older = str(config["extensions.partialClone"])
    except unread:
        older = ""
    if older and older not in names:
        names.append(older)
    if not names:
        return None
    return "origin" if "origin" in names else sorted(names)[0]


def fetch_command(tree_id: str, remote: str, *, whole: bool = False) -> str:
    """The shell command that fetches every object tree `tree_id` names and the clone lacks, from `remote`, in
    one batch: Git lists them (`--missing=print` marks each with `?`, and fetches none itself), and one `fetch`
    asks the promisor remote for all of them by id, as Git's own lazy fetch does. `whole`: the clone lacks the
    tree itself, which is then fetched with everything under it. Works with Git 2.29 and newer."""
    guard = "-- " if remote.startswith("-") else ""
    if whole:
        return f"{_FETCH} {guard}{shlex.quote(remote)} {tree_id}"
    return (f"git rev-list --objects --missing=print {tree_id} | sed -n 's/^?//p' | {_FETCH} --stdin "
            f"{guard}{shlex.quote(remote)}")


def refusal(
    repo: Any,
    *,
    tree_id: str,
    where: str,
    oid: str,
    path: str | None = None,
    prefix: str = "",
    public: Callable[[Sequence[str]], list[bool]] | None = None,
    sparse: bool = False,
) -> MissingObject:
    """The error for blob `oid`, missing, met while reading tree `tree_id` (the workspace's, whose folder in the
    repository is `prefix`) of pygit2 repository `repo`; `where` says which tree that is (`--rev HEAD~1`, `the
    working tree`). `path` (tree-relative) is the file it is, when the reader knows and may name it (a config
    file); otherwise the first missing file `public` admits is named, and none without it. `sparse`: the tree is
    a sparse checkout's working tree, whose files outside the checkout a partial clone may lack."""
    missing = missing_blobs(repo, tree_id)
    paths = [p for p, _ in missing]
    whole = paths == [""]  # the tree itself (a treeless clone's, `--filter=tree:0`): not even the list of its files
    if whole:
        path = None
    elif path is None:
        path = next((p for p, o in missing if o == oid), None)
        if path is not None:
            named = [p for p, ok in zip(paths, _verdicts(public, paths), strict=True) if ok]
            path = path if path in named else (named[0] if named else None)
    elif path not in paths:
        paths.append(path)  # fetched since, or outside the walk: it is still the one missing
    count = max(len(paths), 1)
    folder = f" under {prefix}/" if prefix else ""
    if whole:
        what = "its tree (the list of its files) is"
    elif path is not None:
        full = f"{prefix}/{path}" if prefix else path
        what = f"{full} is" if count == 1 else f"{full} and {_count(count - 1, 'other file')}{folder} are"
    else:  # none may be named: said as a count
        noun = "file or folder" if any(p.endswith("/") for p in paths) else "file"
        what = f"{_count(count, noun)}{folder} (none named: only a note the privacy boundary admits is) {_be(count)}"
    said = f"{where}: {what} not in this clone"
    remote = promisor(repo)
    if remote is None:
        return MissingObject(oid, message=(
            f"{said}, which is not a partial clone: the repository is damaged (blob {oid[:12]} is gone). `git fsck` "
            "lists what else is missing; copy the objects back from another clone, or clone the repository again"
        ), paths=paths)
    then = (" (or check a folder inside the sparse checkout, which needs none of the missing files, with "
            "`--root DIR`)" if sparse else
            " (in CI: the vivary Action fetches them itself; other steps, check out without `filter:`)")
    them = "it" if count == 1 else "them"
    return MissingObject(oid, message=(
        f"{said}: it is a partial clone, whose promisor remote `{remote}` has {them}, and vivary reads objects "
        f"itself, never fetching (Git does, for its own commands). Fetch {them} in one batch with "
        f"`{fetch_command(tree_id, remote, whole=whole)}`, then run this again{then}"
    ), paths=paths)


def _verdicts(public: Callable[[Sequence[str]], list[bool]] | None, paths: list[str]) -> list[bool]:
    """Which of `paths` may be named: none when nobody decides, or the decision cannot be made."""
    from vivary_git.errors import VivaryError

    if public is None or not paths:
        return [False] * len(paths)
    try:
        return public(paths)
    except VivaryError:  # Git cannot decide, or a memory.toml is missing too: name nothing
        return [False] * len(paths)


def _count(n: int, noun: str) -> str:
    return f"1 {noun}" if n == 1 else f"{n:,} {noun.replace('file', 'files').replace('folder', 'folders')}"


def _be(n: int) -> str:
    return "is" if n == 1 else "are"
