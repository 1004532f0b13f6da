"""Non-Latin text in `query`, `find` and the lexical (BM25) side of `recall`: Chinese, Japanese,
Russian and German notes, mixed-script queries, one-character queries.

File names are ASCII so these tests do not depend on how IDs are derived from other names."""

from __future__ import annotations

import importlib.util
import random
import unicodedata
from typing import Any

import pytest
from conftest import Repo

NOTES = {
    "zh.md": "# 内部链接\n\n这是关于内部链接的说明。API设计文档。\n",
    "ja.md": "# 内部リンクの使い方\n\nノート同士をリンクでつなぎます。\n",
    "ru.md": "---\ntags: [ссылки, заметки]\n---\n# Внутренние ссылки\n\nСсылки между заметками.\n",
    "de.md": "# Anhänge\n\nDie Größe der Dateien im Ordner.\n",
    "en.md": "# Internal links\n\nHow notes link to each other; the API design.\n",
}


def vault(repo: Repo) -> None:
    repo.commit(files=NOTES)


def ids(cli: Any, repo: Repo, *args: str) -> list[str]:
    r = cli(*args, "--json", cwd=repo.path)
    assert r.code == 0, r.err
    return [h["id"] for h in r.json()["results"]]


def top(cli: Any, repo: Repo, *args: str) -> dict[str, Any]:
    r = cli("query", *args, "--json", "--explain", cwd=repo.path)
    assert r.code == 0, r.err
    results: list[dict[str, Any]] = r.json()["results"]
    assert results, args
    return results[0]


@pytest.mark.parametrize(("query", "expected"), [
    ("链接 内部", "zh"),  # words in another order: no phrase match, the bigrams still meet
    ("如何使用内部链接", "zh"),  # a question around the title's words
    ("使い方 リンク", "ja"),
    ("заметками ссылки", "ru"),
    ("Größe Anhänge", "de"),
    ("GRÖSSE", "de"),  # case-folded: ß is ss
    (unicodedata.normalize("NFD", "Anhänge Größe"), "de"),  # a decomposed ä (macOS) is the same word
    ("ＡＰＩ 设计", "zh"),  # full-width Latin, and a Latin word written against Han characters
])
def test_query_finds_notes_in_any_script(repo: Repo, cli: Any, query: str, expected: str) -> None:
    vault(repo)
    assert ids(cli, repo, "query", query)[0] == expected
    assert ids(cli, repo, "find", query)[0] == expected


def test_scores_of_cjk_terms(repo: Repo, cli: Any) -> None:
    vault(repo)
    # One Han character: a term of its own. id+title "zh 内部链接": phrase 120 + one hit 40; body
    # (H1 included) phrase 40 + two hits 2x10.
    one = top(cli, repo, "链")
    assert (one["id"], one["score"], one["reasons"]) == ("zh", 220, ["title/id match", "body match"])
    # Mixed script: `api` is a whole word in "API设计文档", `设计` a bigram of it (no phrase match):
    # body 10 + 10. The English note has `api` (10) but not 设计.
    mixed = cli("query", "API 设计", "--json", cwd=repo.path).json()["results"]
    assert [(h["id"], h["score"]) for h in mixed] == [("zh", 20), ("en", 10)]
    # Frontmatter in Cyrillic: `tags: ссылки, заметки` is matched as words, case-folded.
    ru = top(cli, repo, "ЗАМЕТКИ")
    assert ru["id"] == "ru" and "frontmatter match" in ru["reasons"]


def test_find_in_chinese_and_russian(repo: Repo, cli: Any) -> None:
    vault(repo)
    r = cli("find", "怎样添加内部链接", "--json", cwd=repo.path).json()
    assert [h["id"] for h in r["results"]][:2] == ["zh", "ja"]  # ja shares only 内部
    assert "title/id match" in r["results"][0]["reason"]
    assert ids(cli, repo, "find", "ссылки между заметками") == ["ru"]


def test_index_and_direct_scan_agree_on_any_script(repo: Repo) -> None:
    import vivary_git
    from vivary_git import searchindex
    from vivary_git.query import search

    rng = random.Random(7)
    words = ["内部链接", "链接", "の", "リンク", "내부 링크", "ссылки", "Ссылка", "Größe", "GRÖSSE", "naïve",
             unicodedata.normalize("NFD", "naïve"), "API设计", "api", "ＡＰＩ", "token_id", "λόγος", "हिन्दी", "the"]
    files: dict[str, str] = {}
    for i in range(30):
        body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 20)))
        files[f"notes/n{i}.md"] = f"---\ntags: [{rng.choice(words)}]\n---\n# {body[:12]}\n{body}\n"
    repo.commit(files=files)
    ws = vivary_git.open_workspace(repo.path, rev="HEAD")
    graph, notes = ws.graph(), ws.notes()
    index = searchindex.build(graph, notes)
    for q in ["链", "内部链接", "链接 内部", "リンク", "링크", "ссылка", "ССЫЛКИ", "grösse", "naïve", "api 设计",
              "token_id", "λόγος", "हिन्दी", "the", "内部 api ссылки"]:
        for kw in ({}, {"explain": True, "snippet": 20}):
            assert search(graph, notes, q, index=index, hidden=frozenset(), **kw) == search(
                graph, notes, q, hidden=frozenset(), **kw), q  # type: ignore[arg-type]


@pytest.mark.skipif(importlib.util.find_spec("numpy") is None, reason="needs the [embed] extra")
def test_bm25_reads_any_script() -> None:
    from vivary_git.memory.local import bm25

    tok = bm25.Tokenizer()
    # ASCII as before: stemmed English, one-letter words and stopwords dropped.
    assert tok("The Fractures were FRACTURED a b") == ["fractur", "fractur"]
    # Cyrillic gets the Russian stemmer: ссылки and ссылка meet.
    assert tok("ссылки") == tok("Ссылка") != []
    docs = [NOTES[p] for p in sorted(NOTES)]
    names = [p[:2] for p in sorted(NOTES)]
    index = bm25.build([tok.counts(d) for d in docs])
    for query, expected in [("链", "zh"), ("链接 内部", "zh"), ("リンク", "ja"), ("ссылка", "ru"),
                            ("anhänge", "de"), ("API设计", "zh")]:
        hits = index.top(tok(query), 3)
        assert hits and names[hits[0][0]] == expected, (query, hits)


def test_recall_keyword_side_finds_notes_in_any_script(repo: Repo, cli: Any) -> None:
    from vivary_git.memory.local.embed import embedder_status

    if embedder_status() != "available" or importlib.util.find_spec("hnswlib") is None:
        pytest.skip("needs the [embed] extra")
    memory = '[memory]\nenabled = true\nprovider = "vivary-local"\n'
    repo.commit(files={**NOTES, ".vivary/memory.toml": memory})
    assert cli("index", "--yes", cwd=repo.path).code == 0
    for query, expected in [("链接 内部", "zh"), ("链", "zh"), ("ссылка", "ru"), ("GRÖSSE", "de")]:
        r = cli("recall", query, "--json", cwd=repo.path)
        assert r.code == 0, r.err
        hits = {h["node_id"]: h["reason"] for h in r.json()}
        assert "keyword rank 1" in hits[expected], (query, hits)
