"""The pure parts of bench/bench_locomo.py: a LoCoMo turn as a note (and back from its path), the evidence
and dates the dataset writes, recall@k and hit@k, and the post-processing its `--analyse` estimates use.
The conversations here are made up in the shape of the dataset's (which is not in this repository)."""

from __future__ import annotations

import datetime as dt
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))
try:
    import bench_locomo as bench
finally:
    sys.path.remove(str(BENCH))


def conversation(a: str, b: str) -> dict[str, Any]:
    return {
        "speaker_a": a, "speaker_b": b,
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": a, "dia_id": "D1:1", "text": "I went to a support group yesterday."},
            {"speaker": b, "dia_id": "D1:2", "text": "How was it?", "blip_caption": "a photo of a lake",
             "img_url": ["https://example.invalid/x.jpg"]},
            {"speaker": a, "dia_id": "D1:3", "text": "Powerful. I want to study counseling."},
        ],
        "session_2_date_time": "12:48 am on 1 February, 2024",
        "session_2": [{"speaker": b, "dia_id": "D2:1", "text": "I ran a charity race on Sunday."}],
        "session_3_date_time": "9:00 am on 2 March, 2024",  # a date without turns, as the dataset has
        "qa": [
            {"question": f"When did {a} go to the support group?", "answer": "7 May 2023", "evidence": ["D1:1"],
             "category": 2},
            {"question": f"What does {a} want to study?", "answer": "counseling", "evidence": ["D1:3; D1:01"],
             "category": 4},
            {"question": "What did they adopt?", "evidence": ["D1:2"], "category": 5, "adversarial_answer": "a dog"},
            {"question": "What race?", "answer": "charity", "evidence": ["D9:9", "D2:1"], "category": 1},
        ],
    }


def test_the_dates_and_evidence_the_dataset_writes() -> None:
    assert bench.parse_when("1:56 pm on 8 May, 2023") == dt.date(2023, 5, 8)
    assert bench.parse_when("12:48 am on 1 February, 2023") == dt.date(2023, 2, 1)
    with pytest.raises(ValueError):
        bench.parse_when("yesterday")
    assert bench.parse_evidence(["D8:6; D9:17"]) == ["D8:6", "D9:17"]
    assert bench.parse_evidence(["D9:1 D4:4 D4:6", "D4:04"]) == ["D9:1", "D4:4", "D4:6"]
    assert bench.parse_evidence(["D30:05"]) == ["D30:5"]


def test_turns_and_questions_of_a_conversation() -> None:
    data = conversation("Caroline", "Melanie")
    turns = bench.turns_of("26", data)
    assert [(t.dia_id, t.session, t.date) for t in turns] == [
        ("D1:1", 1, dt.date(2023, 5, 8)), ("D1:2", 1, dt.date(2023, 5, 8)), ("D1:3", 1, dt.date(2023, 5, 8)),
        ("D2:1", 2, dt.date(2024, 2, 1))]
    assert turns[1].caption == "a photo of a lake" and turns[0].caption == ""
    questions = bench.questions_of("26", data, {t.dia_id for t in turns})
    assert [(q.number, q.category, q.evidence, q.dropped) for q in questions] == [
        (0, 2, ("D1:1",), ()), (1, 4, ("D1:3", "D1:1"), ()), (3, 1, ("D2:1",), ("D9:9",))]  # category 5 left out
    assert questions[0].key == "26/0"


def test_a_turn_as_a_note_and_back() -> None:
    turn = bench.turns_of("26", conversation("Caroline", "Melanie"))[1]
    assert bench.note_path(turn) == "memories/locomo-26/26-D1-2.md"
    assert bench.dia_of(bench.note_path(turn)) == ("26", "D1:2")
    assert bench.dia_of("memories/locomo-30/30-D12-104.md") == ("30", "D12:104")
    assert bench.dia_of("memories/locomo-30/26-D1-2.md") is None  # not a note the bench wrote
    assert bench.dia_of("notes/D1-2.md") is None
    assert bench.note_text(turn) == (
        '---\nspeaker: "Melanie"\nsession: 1\ndate: 2023-05-08\ndia_id: "D1:2"\n---\n'
        "How was it?\n\n[image: a photo of a lake]\n")
    assert 'when: "1:56 pm on 8 May, 2023"\n---' in bench.note_text(turn, date_words=True)


def test_context_turns_stay_in_their_session() -> None:
    turns = bench.turns_of("26", conversation("Caroline", "Melanie"))
    near = bench.contexts(turns, 1)
    assert [t.dia_id for t in near[turns[0]]] == ["D1:2"]
    assert [t.dia_id for t in near[turns[1]]] == ["D1:1", "D1:3"]
    assert near[turns[3]] == []  # D2:1 is alone in its session; D1:3 before it is another session
    assert bench.note_text(turns[0], context=near[turns[0]]).endswith(
        "I went to a support group yesterday.\n\n> Melanie: How was it?\n")


def test_two_conversations_are_two_folders_of_distinct_notes(repo: Any, cli: Any) -> None:
    """The dataset numbers turns the same way in every conversation: each turn must still be its own note
    (a note's file name is its ID), or the index keeps one of each pair and recall@k is wrong."""
    turns = bench.turns_of("26", conversation("Caroline", "Melanie")) + \
        bench.turns_of("30", conversation("Jon", "Gina"))
    assert bench.materialise(repo.path, turns) == len(turns) + 2  # the notes, tropo.toml, .vivary/memory.toml
    dry = cli("index", "--dry-run", "--json", cwd=repo.path)
    assert dry.code == 0, dry.err
    assert dry.json()["would_index"] == len(turns)
    found = cli("query", "charity race", "--path", bench.scope("30"), "--json", cwd=repo.path).json()["results"]
    assert [bench.dia_of(h["path"]) for h in found] == [("30", "D2:1")]
    assert bench.materialise(repo.path, turns) == 0  # a second run writes and commits nothing


def test_recall_and_hit_at_k() -> None:
    ranked = ["D1:1", "D1:2", "D1:3", "D1:4", "D1:5", "D1:6", "D1:7"]
    assert bench.recall_at(ranked, ["D1:2", "D1:7"], 5) == 0.5
    assert bench.recall_at(ranked, ["D1:2", "D1:7"], 10) == 1.0
    assert bench.hit_at(ranked, ["D1:7"], 5) == 0.0 and bench.hit_at(ranked, ["D1:7"], 7) == 1.0
    assert bench.recall_at(ranked, [], 10) == 0.0
    q = [bench.Question("26", 0, "a?", 1, ("D1:2", "D1:9")), bench.Question("26", 1, "b?", 4, ("D1:6",)),
         bench.Question("26", 2, "c?", 4, ())]  # no evidence: not scored
    s = bench.scores({"26/0": ranked, "26/1": ranked, "26/2": ranked}, q, 5)
    assert (s.r5, s.rk, s.hit, s.n) == (0.25, 0.25, 0.5, 2)


def test_what_the_estimates_rest_on() -> None:
    assert bench.rrf([(["a", "b"], 1.0), (["b", "c"], 1.0)], 1) == {"a": 0.5, "b": 1 / 3 + 0.5, "c": 1 / 3}
    assert bench.order({"a": 1.0, "b": 2.0, "c": 1.0}, ["c"]) == ["b", "c", "a"]
    hits = [bench.Hit("D1:3", 0.1, "hybrid: vector rank 40 (cosine 0.412), keyword rank 2"),
            bench.Hit("D1:1", 0.1, "hybrid: vector rank 3 (cosine 0.612)"),
            bench.Hit("D2:1", 0.1, "hybrid: keyword rank 7")]
    assert bench.fused_lists(hits) == (["D1:3", "D2:1"], ["D1:1", "D1:3"])
    known = {"D1:1", "D1:2", "D1:3", "D2:1"}
    assert bench.neighbours("D1:2", known) == ["D1:1", "D1:3"] and bench.neighbours("D2:1", known) == []
    assert bench.with_neighbours(["D1:2", "D2:1", "D1:1"], known, top=1, k=3) == ["D1:2", "D1:1", "D1:3"]
    assert bench.smooth({"D1:1": 1.0}, known, 0.5) == {"D1:1": 1.0, "D1:2": 0.5}
    assert bench.month_years("What did Mel do in May 2023?") == {(5, 2023)}
    assert bench.month_years("What happened in 2022?") == {(None, 2022)}
    assert bench.month_years("When did she go?") == set()
    assert bench.expansion("What did she paint?", ["She painted a sunrise over the lake lake"],
                           {"lake": 1, "sunrise": 1, "painted": 3}, 10, 2) == ["lake", "sunrise"]
