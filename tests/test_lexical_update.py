"""`lexical_update.update` gives, byte for byte, the BM25 index `bm25.build` gives for the same documents."""

from __future__ import annotations

import random

import pytest

from vivary_git.memory.local import lexical_update
from vivary_git.memory.local.bm25 import build, build_iter, from_postings
from vivary_git.memory.local.lexical_update import update


def _doc(rnd: random.Random, words: list[str]) -> dict[str, int]:
    return {w: rnd.randint(1, 5) for w in rnd.sample(words, rnd.randint(0, 30))}


@pytest.mark.parametrize("one_by_one", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_update_is_build_of_the_edited_documents(seed: int, one_by_one: bool, monkeypatch: pytest.MonkeyPatch,
                                                 ) -> None:
    # Both ways of placing the new postings: one by one (few), or by sorting every posting (many).
    monkeypatch.setattr(lexical_update, "_PLACED_ONE_BY_ONE", 10**9 if one_by_one else 0)
    rnd = random.Random(seed)
    words = [f"w{i:03d}" for i in range(300)] + ["é", "日本", "zz"]
    for _ in range(150):
        docs = [_doc(rnd, words) for _ in range(rnd.randint(0, 40))]
        old = build(docs)
        # Documents kept, dropped, replaced and added; sometimes in a new order.
        new: list[tuple[int | None, dict[str, int]]] = []
        for i, d in enumerate(docs):
            r = rnd.random()
            if r < 0.2:
                continue
            new.append((None, _doc(rnd, words)) if r < 0.3 else (i, d))
            if rnd.random() < 0.1:
                new.append((None, _doc(rnd, words)))
        if rnd.random() < 0.2:
            rnd.shuffle(new)
        got = update(old, [i for i, _ in new], {j: d for j, (i, d) in enumerate(new) if i is None})
        assert got is not None
        assert got.encode() == build([d for _, d in new]).encode()


@pytest.mark.parametrize("seed", range(4))
def test_an_index_built_one_document_at_a_time_is_build_byte_for_byte(seed: int) -> None:
    # An index run builds its first keyword index from a stream of term counts (`build_iter`), holding one
    # document's map at a time: the file must be the one `build` makes of them all, byte for byte.
    rnd = random.Random(seed)
    words = [f"w{i:03d}" for i in range(300)] + ["é", "日本", "zz", "a"]
    for _ in range(100):
        docs = [_doc(rnd, words) for _ in range(rnd.randint(0, 40))]
        assert build_iter(iter(docs)).encode() == build(docs).encode()
    long = [{"w": 10**6, "x": 1}, {}, {"x": 3}]
    assert build_iter(d for d in long).encode() == build(long).encode()


def test_update_refuses_what_cannot_be_the_same_documents() -> None:
    old = build([{"a": 1}, {"b": 2}])
    assert update(old, [0, 0], {}) is None  # an old document twice
    assert update(old, [5], {}) is None  # out of range
    assert update(old, [0, None], {}) is None  # a document neither kept nor given
    assert update(old, [0], {0: {"c": 1}}) is None  # both
    assert update(build([{"a": 1}], k1=2.0), [0], {}) is None  # other BM25 parameters


def test_an_index_is_its_postings() -> None:
    old = build([{"a": 1, "b": 2}, {}, {"b": 3, "c": 1}])
    assert old.vocab == ["a", "b", "c"] and old.same_parameters() and not old.same_parameters(k1=2.0)
    assert from_postings(old.vocab, *old.postings()).encode() == old.encode()
    assert from_postings([], *build([]).postings()).encode() == build([]).encode()


def test_a_few_edits_of_a_large_index_are_build_of_the_edited_documents() -> None:
    # The post-commit case: thousands of documents, a few edited in place (first, last, middle), so that a
    # term only an edited document had goes, a term it had comes back with it, and new terms sort first, last
    # and between the old ones.
    rnd = random.Random(7)
    words = [f"w{i:04d}" for i in range(3000)]
    docs = [_doc(rnd, words) for _ in range(2000)]
    docs[0]["w0000only"] = 2
    docs[1999]["w2999only"] = 1
    old = build(docs)
    edited = {0: {"w0000only": 1, "aaa": 3, "w1500x": 1}, 1999: {"zzz": 2, "w0001": 4}, 1000: {}}
    new = [edited.get(j, d) for j, d in enumerate(docs)]
    got = update(old, [None if j in edited else j for j in range(len(docs))], edited)
    assert got is not None and "w2999only" not in got.vocab and {"aaa", "zzz", "w1500x", "w0000only"} <= set(got.vocab)
    assert got.encode() == build(new).encode()
    # The same with a document added before the edited ones' neighbours and one removed.
    new = [*new[:10], {"w0003": 1, "new": 1}, *new[10:500], *new[501:]]
    old_of_new = [None if j in edited else j for j in range(10)] + [None] + \
                 [None if j in edited else j for j in range(10, 2000) if j != 500]
    fresh = {j: d for j, (i, d) in enumerate(zip(old_of_new, new, strict=True)) if i is None}
    got = update(old, old_of_new, fresh)
    assert got is not None and got.encode() == build(new).encode()
