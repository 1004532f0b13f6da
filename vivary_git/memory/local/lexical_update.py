"""The BM25 index of an edited snapshot from the index of the last one (`update`), for `index`'s lexical half.

`bm25.build` takes every document's term counts; after an edit of a few notes, all but those counts are
already in the last index, as postings. `update` keeps the postings of the documents that did not change
(renumbered: documents are the snapshot's nodes in id order) and adds those of the new documents, in numpy:
no term-count cache of the whole vault is read, no dictionary per document is built. When the kept documents
keep their order (an edit, an addition, a removal) the old postings are patched in place: the dropped
documents' deleted, each new one inserted where a binary search in its term's postings puts it, new terms
found by binary search in the vocabulary; otherwise every posting is sorted once. The result is byte for
byte what `build` gives for the same documents (tests/test_lexical_update.py, tests/test_index_incremental.py):
the same vocabulary (sorted, only terms some document has), postings grouped by term with documents in
ascending order, the same lengths and so the same average length.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from vivary_git.memory.local.bm25 import LexicalIndex

__all__ = ["update"]


def update(old: LexicalIndex, old_of_new: Sequence[int | None], fresh: Mapping[int, Mapping[str, int]],
           ) -> LexicalIndex | None:
    """The index `bm25.build` would give for documents 0..n-1 (n = len(old_of_new)), where document j is
    `old`'s document `old_of_new[j]`, or, where that is None, the document with term counts `fresh[j]`.

    None when the inputs cannot describe such documents (an old document used twice or out of range, a
    document neither kept nor fresh, or `old` built with other parameters): the caller builds instead."""
    import numpy as np

    if not old.same_parameters():
        return None
    n = len(old_of_new)
    kept_new = [j for j, i in enumerate(old_of_new) if i is not None]
    kept_old = np.fromiter((i for i in old_of_new if i is not None), dtype=np.int64, count=len(kept_new))
    if len(kept_new) + len(fresh) != n or any(old_of_new[j] is not None or not 0 <= j < n for j in fresh):
        return None
    ascending = kept_old.size < 2 or bool((np.diff(kept_old) > 0).all())  # then no document is used twice
    if kept_old.size and (int(kept_old.min()) < 0 or int(kept_old.max()) >= old.n_docs
                          or (not ascending and np.unique(kept_old).size != kept_old.size)):
        return None
    indptr, docs, tfs, old_lengths = old.postings()
    lengths = np.zeros(n, dtype=np.float32)
    if kept_new:
        lengths[np.asarray(kept_new, dtype=np.int64)] = old_lengths[kept_old]
    for j in fresh:
        lengths[j] = np.float32(sum(fresh[j].values()))  # as `build` does: the int sum, then float32
    new_of_old = np.full(old.n_docs, -1, dtype=np.int32)  # int32 as the index's documents: half the bytes to move
    new_of_old[kept_old] = np.asarray(kept_new, dtype=np.int32)
    mapped = new_of_old[docs]  # each posting's new document, -1 where its document is dropped
    if ascending:
        found = _patched(old.vocab, indptr, mapped, tfs, fresh, lengths)
        if found is not None:
            return found
    return _sorted(old.vocab, indptr, mapped, tfs, fresh, lengths)


def _vocabulary(old_vocab: list[str], used: npt.NDArray[np.bool_], fresh: Mapping[int, Mapping[str, int]],
                ) -> tuple[list[str], npt.NDArray[np.int64]]:
    """The new vocabulary (the old terms some kept document still has and the new documents' terms, sorted)
    and each old term's number in it (-1: gone)."""
    import numpy as np

    size = len(old_vocab)
    new_terms = set().union(*fresh.values()) if fresh else set()
    # Each new document's term found by binary search in the sorted vocabulary (a few new words among tens of
    # thousands of terms: no map of the whole vocabulary is built): an old term stays when a new document has
    # it, whether or not a kept one does; the others are added.
    kept_term = used.copy()
    added: list[str] = []
    for t in new_terms:
        at = bisect_left(old_vocab, t)
        if at < size and old_vocab[at] == t:
            kept_term[at] = True
        else:
            added.append(t)
    added.sort()
    gone = ~kept_term
    if not added and not bool(gone.any()):
        return list(old_vocab), np.arange(size, dtype=np.int64)
    kept = [t for t, u in zip(old_vocab, kept_term.tolist(), strict=True) if u] if bool(gone.any()) else old_vocab
    vocab = sorted(kept + added)  # two sorted runs: one merge
    # Old term t's number: t, less the gone terms before it, plus the added terms that sort before it.
    slots = np.fromiter((bisect_left(old_vocab, t) for t in added), dtype=np.int64, count=len(added))
    numbers = np.arange(size, dtype=np.int64)
    remap = numbers - (np.cumsum(gone) - gone) + np.searchsorted(slots, numbers, side="right")
    remap[gone] = -1
    return vocab, remap


def _fresh_postings(vocab: list[str], fresh: Mapping[int, Mapping[str, int]],
                    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.float32]]:
    """The new documents' postings (term number, document, term frequency), by term, then document."""
    import numpy as np

    term_id = {t: bisect_left(vocab, t) for t in set().union(*fresh.values())} if fresh else {}
    f_term: list[int] = []
    f_doc: list[int] = []
    f_tf: list[int] = []
    for j in sorted(fresh):
        counts = fresh[j]
        f_term.extend(term_id[t] for t in counts)
        f_doc.extend([j] * len(counts))
        f_tf.extend(counts.values())
    terms = np.asarray(f_term, dtype=np.int64)
    order = np.argsort(terms, kind="stable")  # documents stay ascending within a term
    return terms[order], np.asarray(f_doc, dtype=np.int64)[order], np.asarray(f_tf, dtype=np.float32)[order]


# Up to this many new postings are placed one by one (a binary search in their term's postings each); more
# are merged by one sort of every posting's key.
_PLACED_ONE_BY_ONE = 20_000


def _patched(old_vocab: list[str], indptr: npt.NDArray[np.int64], mapped: npt.NDArray[np.int32],
             tfs: npt.NDArray[np.float32], fresh: Mapping[int, Mapping[str, int]], lengths: npt.NDArray[np.float32],
             ) -> LexicalIndex | None:
    """`update` when the kept documents keep their order (an edit, an addition, a removal: documents are the
    snapshot's nodes in id order): the old postings minus the dropped documents' (`mapped`, each posting's new
    document number, is -1 there), the new documents' inserted where they belong. A few array copies, no sort
    of the whole index. None when there are too many new postings for that to pay."""
    import numpy as np

    from vivary_git.memory.local.bm25 import from_postings

    if sum(map(len, fresh.values())) > _PLACED_ONE_BY_ONE:
        return None
    dropped = np.flatnonzero(mapped < 0)
    kept_per_term = np.diff(indptr)
    if dropped.size:
        kept_per_term = kept_per_term - np.bincount(np.searchsorted(indptr, dropped, side="right") - 1,
                                                    minlength=len(old_vocab))
        k_doc, k_tf = np.delete(mapped, dropped), np.delete(tfs, dropped)
    else:
        k_doc, k_tf = mapped, tfs
    vocab, remap = _vocabulary(old_vocab, kept_per_term > 0, fresh)
    kept = np.zeros(len(vocab), dtype=np.int64)
    live = remap >= 0
    kept[remap[live]] = kept_per_term[live]
    start = np.zeros(len(vocab) + 1, dtype=np.int64)  # where each term's kept postings begin in k_doc
    np.cumsum(kept, out=start[1:])
    f_term, f_doc, f_tf = _fresh_postings(vocab, fresh)
    # Each new posting goes before the kept postings of a later term, or of its term with a later document.
    at = np.fromiter((lo + np.searchsorted(k_doc[lo:hi], d)
                      for lo, hi, d in zip(start[f_term].tolist(), start[f_term + 1].tolist(), f_doc.tolist(),
                                           strict=True)),
                     dtype=np.int64, count=len(f_term))
    doc_ids = np.insert(k_doc, at, f_doc.astype(np.int32))
    tf_all = np.insert(k_tf.astype(np.float32, copy=False), at, f_tf)
    new_indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(kept + np.bincount(f_term, minlength=len(vocab)), out=new_indptr[1:])
    return from_postings(vocab, new_indptr, doc_ids, tf_all, lengths)


def _sorted(old_vocab: list[str], indptr: npt.NDArray[np.int64], mapped: npt.NDArray[np.int32],
            tfs: npt.NDArray[np.float32], fresh: Mapping[int, Mapping[str, int]], lengths: npt.NDArray[np.float32],
            ) -> LexicalIndex:
    """`update` in any case: every posting's key (term * n + document) sorted once."""
    import numpy as np

    from vivary_git.memory.local.bm25 import from_postings

    n = len(lengths)
    term_of = np.repeat(np.arange(len(old_vocab), dtype=np.int64), np.diff(indptr))
    keep = mapped >= 0
    k_term, k_doc, k_tf = term_of[keep], mapped[keep].astype(np.int64), tfs[keep]
    vocab, remap = _vocabulary(old_vocab, np.bincount(k_term, minlength=len(old_vocab)) > 0, fresh)
    f_term, f_doc, f_tf = _fresh_postings(vocab, fresh)
    # Postings grouped by term, documents ascending within a term (`build`'s stable sort of postings in
    # document order), as one key: term * n + document.
    keys = np.concatenate([remap[k_term] * n + k_doc, f_term * n + f_doc])
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    tf_all = np.concatenate([k_tf.astype(np.float32), f_tf])[order]
    terms = keys // n if n else keys
    doc_ids = (keys % n if n else keys).astype(np.int32)
    new_indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=new_indptr[1:])
    return from_postings(vocab, new_indptr, doc_ids, tf_all, lengths)
