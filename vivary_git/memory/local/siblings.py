"""Vectors this repository's other local indexes already hold: a moved or copied folder, another work tree.

The local index's state folder is named by the workspace's absolute path (snapshot.py `dataset_name`: a committed
label must never aim at another workspace's data), so a repository moved or copied to another folder, or a linked
work tree (whose `.git/vivary/` is the common one), starts an empty folder beside the ones the repository already
has under the memory state root. Their vector caches are keyed by packet digest like this one's: a row stored
under the same model and embed format (`VectorMeta.key`) for a packet this run needs is the vector the model
would give, and `index` takes it instead of computing it (vectors.py `borrow`).

A sibling is read as the index's own cache is (vectors.py `local_rows`): its key and dimension, the size of its
vectors file and their sha256 must agree, or none of its rows is used (a damaged or half-written sibling, or one
of another model, costs model time, never a wrong vector). A folder that is a symbolic link is not followed, and
in a work-tree state folder (`state_path`) only what this machine wrote there, at that path, is read (state.py
`Written`): a folder it wrote nothing in (the copy of one written at the original's path) is not read at all.
A row the sibling took from the shared cache keeps the `vivary.cacheTrust` it was taken under and is used only
while the trust in force allows that level; a sibling whose record of such rows is damaged is not used at all.

Privacy: a packet digest identifies the packet's content, and a row is only ever taken for a digest this run asks
for, which are those of the notes this workspace's privacy boundary admits. No other row of a sibling is read
into this index: a note private here never gets a vector from there, whatever that workspace decided.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vivary_git.memory.state import LocalStateStore, Written, check_name

if TYPE_CHECKING:
    from vivary_git.memory.state import StateStore

__all__ = ["siblings"]


def siblings(store: StateStore) -> list[LocalStateStore]:
    """The other state folders beside `store`'s under the memory state root, by name; none for a store that is
    not a folder."""
    if not isinstance(store, LocalStateStore):
        return []
    own = store.directory
    try:
        found = sorted(p for p in own.parent.iterdir() if p.name != own.name)
    except OSError:
        return []
    out: list[LocalStateStore] = []
    for path in found:
        try:
            name = check_name(path.name)
        except ValueError:
            continue  # a temporary file or a name no index is kept under
        if path.is_symlink() or not path.is_dir():
            continue
        written = None
        if store.written is not None:
            written = Written(store.written.folder.parent / name)
            if not written.folder.is_dir():
                continue  # this machine wrote nothing in that folder at this path (a copy of another's): not read
        out.append(LocalStateStore(path, written))
    return out

