"""The pure parts of recall: state store, BM25, fusion, k rules, the embedded text. No model needed."""

from __future__ import annotations

import importlib.util
import itertools
import re
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from vivary_git.errors import UsageError
from vivary_git.memory.provider import MAX_K, RecallFilters, fetch_size, normalise_k
from vivary_git.memory.snapshot import MemoryEdge, MemoryNode
from vivary_git.memory.state import LocalStateStore, check_name

needs_numpy = pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="needs the [embed] extra")


def test_local_state_store(tmp_path: Path) -> None:
    store = LocalStateStore(tmp_path / "memory" / "ds")
    assert store.get("manifest.json") is None and store.names() == [] and not store.delete_all()
    store.put("a.bin", b"one")
    store.put("a.bin", b"two")  # replaced whole
    store.put("b.msgpack", b"")
    assert store.get("a.bin") == b"two" and store.names() == ["a.bin", "b.msgpack"]
    assert store.local_path("a.bin") == tmp_path / "memory" / "ds" / "a.bin"
    assert not [p for p in (tmp_path / "memory" / "ds").iterdir() if p.name.endswith(".tmp")]
    assert store.delete_all() and not (tmp_path / "memory").exists()  # an emptied parent goes too
    for bad in ("../x", "a/b", "", ".hidden", "x" * 200):
        with pytest.raises(ValueError):
            check_name(bad)


def test_k_rules() -> None:
    assert normalise_k(1) == 1 and normalise_k(10_000) == MAX_K == 250
    for bad in (0, -3):
        with pytest.raises(UsageError):
            normalise_k(bad)
    assert fetch_size(10, False) == 10
    assert fetch_size(1, True) == 50 and fetch_size(10, True) == 50 and fetch_size(20, True) == 100
    assert fetch_size(100, True) == 250 and fetch_size(250, True) == 250


def test_filters() -> None:
    node = MemoryNode(id="a", type="decision", path="decisions/a.md", title="A", blob="0" * 40, fields={})
    out = [MemoryEdge("a", "related", "b")]
    assert RecallFilters().keep(node, out) and not RecallFilters().active
    assert RecallFilters(types=["decision"]).keep(node, out)
    assert not RecallFilters(types=[""]).keep(node, out)
    assert RecallFilters(paths=["decisions/*"]).keep(node, out)
    assert not RecallFilters(paths=["notes/*"]).keep(node, out)
    assert RecallFilters(edges=["related", "related:b", ":b"]).keep(node, out)
    assert not RecallFilters(edges=["related:c"]).keep(node, out)


@needs_numpy
def test_bm25_stems_scores_and_round_trips() -> None:
    from vivary_git.memory.local import bm25

    tok = bm25.Tokenizer()
    assert tok("The Fractures were FRACTURED") == ["fractur", "fractur"]
    docs = ["hip fractures in older women", "vitamin d and bone density", "fracture risk after falls", "x"]
    index = bm25.build([tok.counts(d) for d in docs])
    top = index.top(tok("fracture"), 10)
    # one "fractur" each; doc 2 is shorter (3 terms against 4: "in" is a stopword), so it ranks first
    assert [d for d, _ in top] == [2, 0] and top[0][1] > top[1][1]
    assert index.top(tok("nothing matches"), 10) == []
    data = index.encode()
    again = bm25.decode(data)
    assert again is not None and again.top(tok("fracture"), 10) == top
    assert bm25.decode(data[:-3]) is None and bm25.decode(b"junk") is None
    assert bm25.decode(data[:10] + b"\xff" * (len(data) - 10)) is None


def _okapi(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    """Lucene's BM25, written out independently: idf = ln(1 + (N - df + 0.5) / (df + 0.5))."""
    import math

    n = len(docs)
    avgdl = sum(map(len, docs)) / n
    out = []
    for d in docs:
        total = 0.0
        for term in query:
            df = sum(term in x for x in docs)
            if not df:
                continue
            tf = d.count(term)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            total += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(d) / avgdl))
        out.append(total)
    return out


@needs_numpy
def test_bm25_rare_terms_outweigh_common_ones() -> None:
    from vivary_git.memory.local import bm25

    # "signing" is in every document but one; "rotation" only in doc 3. Doc 0 repeats the common term,
    # doc 3 has the rare one once: with real IDF the rare match wins, with IDF = 1 term frequency would.
    docs = [["key", "signing", "signing", "signing"], ["signing", "policy"], ["signing", "audit"],
            ["rotation", "signing", "schedule", "owner"], ["garden", "soil"]]
    index = bm25.build([dict(Counter(d)) for d in docs])
    query = ["signing", "rotation"]
    assert [d for d, _ in index.top(query, 10)] == [3, 0, 1, 2]
    want = _okapi(docs, query, bm25.K1, bm25.B)
    got = index.scores(query).tolist()
    assert got == pytest.approx(want, rel=1e-5)


@needs_numpy
def test_bm25_built_in_bulk_is_the_index_built_note_by_note() -> None:
    """Recall of a fetched tree tokenises every note at once (`build_texts`): the index must be the one
    `build` makes from each note's `Tokenizer.counts`, byte for byte, whatever the text: every ASCII
    character, digits (their own stems), `_`, one-letter words, stopwords, non-ASCII Latin, Cyrillic,
    Greek, CJK, empty notes, term counts given instead of text, and more notes than one block holds."""
    import random

    import numpy as np

    from vivary_git.memory.local import bm25

    rng = random.Random(7)
    vocab = ["Fractures", "fractured", "the", "a", "x", "2024", "007", "x1_y", "__init__", "API", "naïve",
             "café", "Straße", "ссылки", "бегущие", "λόγος", "λόγοι", "API设计", "内部链接", "链", "ＡＰＩ", "ﬁsh",
             "running", "runs", "ran", "it's", "e-mail", "C++", "3.14", "\t", "\x00", "—", "“quoted”"]
    docs: list[str] = ["", " ", "".join(map(chr, range(128))) * 2, "the a of", "内部链接", "ένα δύο"]
    docs += [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 40))) for _ in range(1200)]
    docs += [f"note-{i:06d} links to [[note-{rng.randint(0, 999999):06d}]]." for i in range(300)]
    tok = bm25.Tokenizer()
    counts = [tok.counts(d) for d in docs]
    want = bm25.build(counts).encode()
    assert bm25.build_texts(docs).encode() == want
    assert bm25.build_texts(docs, bm25.Tokenizer()).encode() == want  # a fresh memo: nothing carried over
    pairs = enumerate(zip(docs, counts, strict=True))
    mixed: list[str | dict[str, int]] = [c if i % 3 == 0 else d for i, (d, c) in pairs]
    assert bm25.build_texts(mixed).encode() == want
    assert bm25.build_texts(counts).encode() == want
    assert bm25.build_texts([]).encode() == bm25.build([]).encode()
    assert bm25.build_texts(["", "the of"]).encode() == bm25.build([{}, {}]).encode()
    # The notes' own counts (`term_bags`, the first recall's notes child) are each note's `Tokenizer.counts`
    # too, whatever the text; ASCII text is lowered and cleared in one pass over its bytes, which must cut
    # exactly the words `\w` finds (every ASCII character, above, and NUL, `_`, digits, upper case here).
    bags = bm25.term_bags([f"k{i}" for i in range(len(docs))], docs)
    assert _bag_counts(bags) == counts
    # Counted in blocks (more texts here than one holds): each term listed once, each text's term numbers
    # ascending, as `TermBags` promises.
    assert len(set(bags.terms)) == len(bags.terms)
    ids = np.frombuffer(bags.ids, dtype="<i4")
    assert all((np.diff(ids[lo:hi]) > 0).all() for lo, hi in itertools.pairwise(np.frombuffer(bags.indptr, "<i8")))
    for text in ("".join(map(chr, range(128))), "A_b\x00C9 d\x7fé", "MiXeD_Case42 and\ttabs\nnew-lines"):
        assert bm25.Tokenizer.raw_words(text) == re.findall(r"\w+", text.lower())
    # Query terms are still cut by `Tokenizer.__call__`: they meet the bulk index's terms.
    index = bm25.decode(want)
    query = tok("fracture 2024")
    assert index is not None and index.top(query, 3) == bm25.build_texts(docs).top(query, 3) != []


@needs_numpy
def test_an_index_built_from_frames_and_term_bags_is_the_index_of_the_whole_packets() -> None:
    """The first recall of a fetched tree counts each note's words in one process (`term_bags`, while the
    graph is built) and adds each packet's frame (id, type, path, title, edges) in another (`build_framed`).
    The index must be `build_texts` of the whole packets, byte for byte, whatever is on either side of the
    line break between the halves: ASCII and not, combining marks and Hangul jamo that NFKC would join
    across a boundary, CJK, stopwords, a word in both halves, empty halves. Notes may be used by two packets
    or by none (a private note's words must not reach the vocabulary), and in any order."""
    import random

    from vivary_git.memory.local import bm25

    rng = random.Random(11)
    vocab = ["Fractures", "fractured", "the", "a", "x", "2024", "x1_y", "naïve", "café", "Straße", "ссылки",
             "λόγοι", "API设计", "内部链接", "ＡＰＩ", "ﬁsh", "\u0301accent", "e\u0301", "\u1100", "\u1161\u11a8",
             "C++", "—", "\t", "\\n", "vivary_node_id:", "- related:", "shared", "outbound_edges:"]

    def text(words: int) -> str:
        return "\n".join(" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 6))) for _ in range(words))

    notes = [text(rng.randint(0, 12)) for _ in range(700)] + ["\u0301", "\u1161", "", "secretcanary only here"]
    frames = [text(rng.randint(0, 6)) + rng.choice(["", "\u1100", "e", "\u0301"]) for _ in range(900)]
    rows = [rng.randrange(len(notes) - 1) for _ in frames]  # never the last: nobody's packet holds it
    rows[:5] = [len(notes) - 2, len(notes) - 2, len(notes) - 3, len(notes) - 4, 0]  # an empty note, twice
    keys = [f"blob-{i}" for i in range(len(notes))]
    whole = [f"{frame}\n{notes[r]}" for frame, r in zip(frames, rows, strict=True)]
    want = bm25.build_texts(whole).encode()
    bags = bm25.term_bags(keys, notes)
    tok = bm25.Tokenizer()
    assert _bag_counts(bags) == [tok.counts(note) for note in notes]  # NFKC, CJK, combining marks: as note by note
    shipped = msgspec.msgpack.decode(msgspec.msgpack.encode(bags), type=bm25.TermBags)
    for given in (frames, bm25.frame_terms(frames)):
        built = bm25.build_framed(given, shipped, rows)
        assert built is not None and built.encode() == want
        (canary,) = bm25.Tokenizer()("secretcanary")
        assert canary in bags.terms and canary not in built.vocab
    # The ASCII frames are cut in one pass, a random marker word between them; a frame that happens to hold
    # that word is still counted right (all frames are then cut one by one).
    import secrets

    real_hex = secrets.token_hex
    try:
        secrets.token_hex = lambda n=None: "0" * 24  # type: ignore[assignment]
        ascii_at = next(i for i, f in enumerate(frames) if f.isascii())
        other_at = next(i for i, f in enumerate(frames) if not f.isascii())
        for at, word in ((ascii_at, "vivary" + "0" * 24), (other_at, "vivary" + "0" * 24),
                         (other_at, "ｖｉｖａｒｙ" + "０" * 24)):  # folds to the marker
            marked = list(frames)
            marked[at] += f" {word}"
            whole_marked = [f"{f}\n{notes[r]}" for f, r in zip(marked, rows, strict=True)]
            want_marked = bm25.build_texts(whole_marked).encode()
            built = bm25.build_framed(bm25.frame_terms(marked), bags, rows)
            assert built is not None and built.encode() == want_marked != want
    finally:
        secrets.token_hex = real_hex
    assert bm25.build_framed([], bags, []) is not None
    assert bm25.build_framed([], bags, []).encode() == bm25.build_texts([]).encode()  # type: ignore[union-attr]
    # Bags that do not add up are refused (the caller then tokenises the packets), never indexed.
    for broken in (msgspec.structs.replace(bags, keys=keys[:-1]), msgspec.structs.replace(bags, ids=bags.ids[:-4]),
                   msgspec.structs.replace(bags, terms=bags.terms[:1])):
        assert bm25.build_framed(frames, broken, rows) is None
    assert bm25.build_framed(frames, bags, [*rows[:-1], len(notes)]) is None  # a row nobody counted


def _bag_counts(bags: object) -> list[dict[str, int]]:
    """Each text's term counts, as `term_bags` packed them."""
    import numpy as np

    from vivary_git.memory.local import bm25

    assert isinstance(bags, bm25.TermBags)
    indptr = np.frombuffer(bags.indptr, dtype="<i8").tolist()
    ids = np.frombuffer(bags.ids, dtype="<i4").tolist()
    counts = np.frombuffer(bags.counts, dtype="<i4").tolist()
    return [{bags.terms[ids[k]]: counts[k] for k in range(lo, hi)} for lo, hi in itertools.pairwise(indptr)]


@needs_numpy
def test_fusion_is_deterministic_and_weighted() -> None:
    from vivary_git.memory.local.files import RRF_K
    from vivary_git.memory.local.recall import fuse

    lexical = [(1, 9.0), (2, 5.0)]
    vector = [(2, 0.9), (3, 0.8)]
    fused = fuse(lexical, vector, weights=(0.5, 0.5))
    assert [d for d, _, _ in fused] == [2, 1, 3]  # in both lists beats first in one
    assert fused[0][2] == "hybrid: vector rank 1 (cosine 0.900), keyword rank 2"
    assert abs(fused[0][1] - (0.5 / (RRF_K + 2) + 0.5 / (RRF_K + 1))) < 1e-12
    assert abs(fuse(lexical, vector, weights=(0.5, 0.5), k=60)[0][1] - (0.5 / 62 + 0.5 / 61)) < 1e-12
    assert [d for d, _, _ in fuse(lexical, vector, weights=(1.0, 0.0))][:2] == [1, 2]
    # Equal scores: the better vector rank first, then the document number.
    assert [d for d, _, _ in fuse([(5, 1.0)], [(4, 1.0)], weights=(0.5, 0.5))] == [4, 5]


@needs_numpy
def test_embed_text_drops_identity_lines() -> None:
    from vivary_git.memory.local.files import embed_text

    packet = ("vivary_node_id: d1\nvivary_type: decision\nvivary_path: decisions/d1.md\nvivary_title: Use tokens\n"
              '{"status":"accepted"}\noutbound_edges:\n- related: keys\n\n# Use tokens\n\nThey expire.\n')
    assert embed_text(packet) == 'type: decision\n{"status":"accepted"}\n# Use tokens\n\nThey expire.'
    bare = "vivary_node_id: n\nvivary_type: \nvivary_path: n.md\nvivary_title: N\n{}\noutbound_edges:\n\nbody\n"
    assert embed_text(bare) == "N\nbody"


@pytest.mark.parametrize("name", ["hnswlib", "numpy"])
def test_a_module_another_thread_is_importing_is_not_missing(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """recall imports the runtime in a thread (`preload_runtime`) while the main thread asks whether it is
    installed: an extension module sits in sys.modules without `__spec__` for a moment during its import,
    where `find_spec` raises ValueError. That once made recall say "needs hnswlib" under load."""
    import sys
    import types

    from vivary_git.memory.local import runtime
    from vivary_git.memory.local.embed import module_present

    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed here (the embed extra)")
    half = types.ModuleType(name)
    half.__spec__ = None
    monkeypatch.setitem(sys.modules, name, half)
    assert module_present(name)
    runtime.require_extra()  # no EmbedderError
    monkeypatch.setitem(sys.modules, "vivary_no_such_module", None)
    assert not module_present("vivary_no_such_module") and not module_present("vivary_surely_absent_module")
