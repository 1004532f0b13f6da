"""The BM25 index of an edited snapshot from the index of the last one (`update`), for `index`'s lexical half.

`bm25.build` takes every document's term counts; after an edit of a few notes, all but those counts are
already in the last index, as postings. `update` keeps the postings of the documents that did not change
(renumbered: documents are the snapshot's nodes in id order), adds those of the new documents, and sorts
once, in numpy: no term-count cache of the whole vault is read, no dictionary per document is built. The
result is byte for byte what `build` gives for the same documents (tests/test_index_incremental.py):
the same vocabulary (sorted, only terms some document has), postings grouped by term with documents in
ascending order, the same lengths and so the same average length.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vivary_git.memory.bm25 import LexicalIndex

__all__ = ["update"]


def update(old: LexicalIndex, old_of_new: Sequence[int | None], fresh: Mapping[int, Mapping[str, int]],
           ) -> LexicalIndex | None:
    """The index `bm25.build` would give for documents 0..n-1 (n = len(old_of_new)), where document j is
    `old`'s document `old_of_new[j]`, or, where that is None, the document with term counts `fresh[j]`.

    None when the inputs cannot describe such documents (an old document used twice or out of range, a
    document neither kept nor fresh, or `old` built with other parameters): the caller builds instead."""
    import numpy as np

    from vivary_git.memory.bm25 import from_postings

    if not old.same_parameters():
        return None
    n = len(old_of_new)
    kept_new = [j for j, i in enumerate(old_of_new) if i is not None]
    kept_old = np.fromiter((i for i in old_of_new if i is not None), dtype=np.int64, count=len(kept_new))
    if len(kept_new) + len(fresh) != n or any(old_of_new[j] is not None or not 0 <= j < n for j in fresh):
        return None
    if kept_old.size and (int(kept_old.min()) < 0 or int(kept_old.max()) >= old.n_docs
                          or np.unique(kept_old).size != kept_old.size):
        return None
    indptr, docs, tfs, old_lengths = old.postings()
    old_vocab = old.vocab

    # The kept documents' postings, under their new numbers.
    new_of_old = np.full(old.n_docs, -1, dtype=np.int64)
    new_of_old[kept_old] = np.asarray(kept_new, dtype=np.int64)
    term_of = np.repeat(np.arange(len(old_vocab), dtype=np.int64), np.diff(indptr))
    mapped = new_of_old[docs]
    keep = mapped >= 0
    k_term, k_doc, k_tf = term_of[keep], mapped[keep], tfs[keep]

    # The vocabulary: the old terms some kept document still has, and the new documents' terms, sorted.
    used = np.bincount(k_term, minlength=len(old_vocab)) > 0
    new_terms = set().union(*fresh.values()) if fresh else set()
    if bool(used.all()) and new_terms.issubset(old_vocab):
        vocab = list(old_vocab)
        remap = np.arange(len(old_vocab), dtype=np.int64)
    else:
        vocab = sorted({t for t, u in zip(old_vocab, used.tolist(), strict=True) if u} | new_terms)
        position = {t: k for k, t in enumerate(vocab)}
        remap = np.fromiter((position.get(t, -1) for t in old_vocab), dtype=np.int64, count=len(old_vocab))
    term_id = {t: k for k, t in enumerate(vocab)} if fresh else {}

    f_term: list[int] = []
    f_doc: list[int] = []
    f_tf: list[int] = []
    lengths = np.zeros(n, dtype=np.float32)
    if kept_new:
        lengths[np.asarray(kept_new, dtype=np.int64)] = old_lengths[kept_old]
    for j in sorted(fresh):
        counts = fresh[j]
        f_term.extend(term_id[t] for t in counts)
        f_doc.extend([j] * len(counts))
        f_tf.extend(counts.values())
        lengths[j] = np.float32(sum(counts.values()))  # as `build` does: the int sum, then float32

    # Postings grouped by term, documents ascending within a term (`build`'s stable sort of postings in
    # document order), as one key: term * n + document.
    k_key = remap[k_term] * n + k_doc
    f_key = np.asarray(f_term, dtype=np.int64) * n + np.asarray(f_doc, dtype=np.int64)
    f_tf_arr = np.asarray(f_tf, dtype=np.float32)
    if kept_old.size < 2 or bool((np.diff(kept_old) > 0).all()):
        # The kept documents keep their order (the index's documents are nodes in id order) and the term
        # order is the vocabulary's: the kept postings are sorted already; the new ones are merged in.
        order = np.argsort(f_key, kind="stable")
        at = np.searchsorted(k_key, f_key[order])
        keys = np.insert(k_key, at, f_key[order])
        tf_all = np.insert(k_tf.astype(np.float32), at, f_tf_arr[order])
    else:
        keys = np.concatenate([k_key, f_key])
        order = np.argsort(keys, kind="stable")
        keys = keys[order]
        tf_all = np.concatenate([k_tf.astype(np.float32), f_tf_arr])[order]
    terms = keys // n if n else keys
    doc_ids = (keys % n if n else keys).astype(np.int32)
    new_indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(np.bincount(terms, minlength=len(vocab)), out=new_indptr[1:])
    return from_postings(vocab, new_indptr, doc_ids, tf_all, lengths)
