"""A note asked for by its name comes first (titlematch.py): in `find`, in `recall` and `query --mode hybrid`
in every mode, and in the MCP server's `search`, on a vault of names in eleven scripts where other notes share
the name's words (tests/data/find/exact-titles.json, its provenance inside). `query --mode text` keeps the
contract's scoring."""

from __future__ import annotations

import importlib.util
import json
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

from vivary_git.memory.local.embed import embedder_status
from vivary_git.titlematch import key, names_of

DATA = Path(__file__).resolve().parent / "data" / "find" / "exact-titles.json"

needs_index = pytest.mark.skipif(
    embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None,
    reason="needs the [embed] extra",
)


def _vault(repo: Repo) -> list[dict[str, str]]:
    """The labelled vault committed; its questions (`query`, `asked_as`, the right `note`)."""
    data = json.loads(DATA.read_text(encoding="utf-8"))
    repo.commit("vault", data["notes"])
    questions: list[dict[str, str]] = data["questions"]
    # The file holds the forms the editor treats as one name: a rewrite that normalised it would test nothing.
    nfd = [q["query"] for q in questions if q["asked_as"] == "nfd"]
    assert nfd and all(unicodedata.normalize("NFC", q) != q for q in nfd)
    return questions


def test_names_are_compared_folded() -> None:
    title = "Café crème"
    for asked in ("CAFÉ CRÈME", unicodedata.normalize("NFD", title), "Ｃａｆé ｃｒèｍｅ", "  café\tcrème "):
        assert key(asked) == key(title), asked
    assert key("ｺｰﾋｰ豆") == key("コーヒー豆")  # half-width katakana
    assert key("Москва-река") != key("Москва") and key("  ") == ""
    assert names_of("notes/Москва", "notes/Москва.md", "Столица", {"aliases": ["Первопрестольная", 3],
                                                                    "alias": "Moscow"}) == {
        "москва", "notes/москва", "столица", "первопрестольная", "moscow"}


def test_find_puts_the_note_a_question_names_first(repo: Repo, cli: Any) -> None:
    questions = _vault(repo)
    wrong = []
    for q in questions:
        r = cli("find", q["query"], "--k", "10", "--json", cwd=repo.path)
        assert r.code == 0, r.err
        got = [h["path"] for h in r.json()["results"]]
        if got[:1] != [q["note"]]:
            wrong.append((q["query"], q["asked_as"], got[:3]))
    assert not wrong
    # `query --mode text` keeps the contract's scoring: the phrase and its hits put Москва-река first.
    r = cli("query", "Москва", "--json", cwd=repo.path)
    assert [h["path"] for h in r.json()["results"]][:2] == ["Москва-река.md", "Москва.md"]


@needs_index
def test_recall_and_search_put_the_note_a_question_names_first(repo: Repo, cli: Any, tmp_path: Path) -> None:
    from vivary_git.mcp.service import MemoryService

    questions = _vault(repo)
    assert cli("index", "--yes", cwd=repo.path).code == 0
    asked = tmp_path / "questions.jsonl"
    asked.write_text("".join(json.dumps({"id": i, "query": q["query"]}) + "\n" for i, q in enumerate(questions)),
                     encoding="utf-8")
    wrong = []
    for mode in ("semantic", "hybrid"):
        r = cli("recall", "--queries", str(asked), "--k", "10", "--mode", mode, cwd=repo.path)
        assert r.code == 0, r.err
        for line in r.out.splitlines():
            answer = json.loads(line)
            q = questions[answer["id"]]
            if [h["path"] for h in answer["hits"]][:1] != [q["note"]]:
                wrong.append((mode, q["query"], q["asked_as"]))
    service = MemoryService(repo.path)
    try:
        for mode in ("text", "semantic", "hybrid", "auto"):
            for q in questions:
                ans = service.search(q["query"], top_k=10, mode=mode, budget=0)
                assert mode != "text" or "BM25" in ans.mode_reason, ans.mode_reason
                if [h.path for h in ans.results][:1] != [q["note"]]:
                    wrong.append((f"mcp {mode}", q["query"], q["asked_as"]))
    finally:
        service.close()
    assert not wrong
    r = cli("query", "Москва", "--mode", "hybrid", "--json", cwd=repo.path)
    first = r.json()["results"][0]
    assert first["path"] == "Москва.md" and first["reason"].endswith("named by the query")
    # A name lifts only within the filters: a scope without the note is ranked as before.
    r = cli("recall", "Москва", "--path", "Москва-*", "--json", cwd=repo.path)
    assert [h["path"] for h in r.json()] == ["Москва-река.md"]


def test_aliases_written_as_one_string_are_split_at_commas_as_obsidian_reads_them(repo: Repo, cli: Any) -> None:
    """`aliases: Big Apple, NYC` is two aliases in Obsidian (its quick switcher offers each), so either names the
    note; an item of a list is one alias, commas and all."""
    repo.commit("vault", {".obsidian/app.json": "{}",
                          "New York.md": "---\naliases: Big Apple, NYC\n---\nA city on the Hudson.\n",
                          "Other.md": "---\nalias: [\"Gotham, NJ\"]\n---\nBig Apple, Big Apple, NYC NYC, Gotham NJ.\n"})
    for asked, note in (("NYC", "New York.md"), ("big apple", "New York.md"), ("Gotham, NJ", "Other.md")):
        r = cli("find", asked, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        assert [h["path"] for h in r.json()["results"]][:1] == [note], (asked, r.out)
    assert names_of("a", "a.md", "A", {"aliases": " x ,, y,", "alias": ["p, q"]}) == {"a", "x", "y", "p, q"}
