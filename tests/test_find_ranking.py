"""`find` puts the note a question is about before the pages that only list it (docs/find.md), on a vault
shaped like obsidian-hub and on the shared corpora's labelled questions (tests/data/find/queries.tsv).
`query` keeps the contract's scores and order (tests/test_commands.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo

BENCH = Path(__file__).resolve().parents[1] / "bench"
# MRR@10 of `find` over the 43 labelled questions: 0.578 with `query`'s order, 0.8779 with findrank's. A
# change may raise it; one that lowers it must say why in the labelled set, not here.
MRR_FLOOR = 0.877


def _plugin(name: str, body: str) -> str:
    return f"---\ntags: [plugin]\n---\n# {name}\n\n{body} Ask in the forum for help.\n"


HUB: dict[str, str | bytes] = {
    ".obsidian/app.json": "{}\n",
    # The hub lists every plugin page, with a line of text each: it says every word of the question.
    "🗂️ Plugins.md": "# 🗂️ Plugins\n\nAll the plugins of the hub, by what they help with.\n\n" + "\n".join(
        f"- [[{n}]]: plugins that help with {what}; see the {what} plugins" for n, what in [
            ("Spaced Repetition Plugins", "spaced repetition flashcards"), ("Flashcards Plugins", "flashcards"),
            ("Tasks Plugins", "tasks"), ("Calendar Plugins", "calendar and daily notes"),
            ("Publishing Plugins", "publishing"), ("Spaced Writing Plugins", "spaced writing sessions")]
    ) + "\n" + "\nMore plugins help with spaced repetition and flashcards in other ways.\n" * 3,
    "Spaced Repetition Plugins.md": _plugin("Spaced Repetition Plugins",
                                            "Review flashcards at growing intervals: [[Obsidian Spaced Repetition]]."),
    "Flashcards Plugins.md": _plugin("Flashcards Plugins", "Make flashcards from notes."),
    "Tasks Plugins.md": _plugin("Tasks Plugins", "Track tasks."),
    "Calendar Plugins.md": _plugin("Calendar Plugins", "A calendar of daily notes."),
    "Publishing Plugins.md": _plugin("Publishing Plugins", "Publish notes."),
    "Spaced Writing Plugins.md": _plugin("Spaced Writing Plugins", "Write in spaced sessions."),
    "Obsidian Spaced Repetition.md": _plugin("Obsidian Spaced Repetition", "A plugin."),
}


def test_a_note_titled_with_the_question_outranks_the_hub_that_lists_it(repo: Repo, cli: Any) -> None:
    """obsidian-hub: "which plugins help with spaced repetition flashcards" put the hub `🗂️ Plugins`
    first (it says every word, many times) and `Spaced Repetition Plugins` fifth."""
    repo.commit(files=HUB)
    question = "which plugins help with spaced repetition flashcards"
    r = cli("find", question, "--rev", "HEAD", "--json", cwd=repo.path)
    ids = [h["id"] for h in r.json()["results"]]
    assert ids[0] == "Spaced Repetition Plugins", ids
    assert ids.index("Spaced Repetition Plugins") < ids.index("🗂️ Plugins")
    q = cli("query", question, "--rev", "HEAD", "--json", cwd=repo.path).json()
    assert q["results"][0]["id"] == "🗂️ Plugins"  # `query` keeps the contract's scores and order


def test_find_keeps_its_filters_reasons_and_budget(repo: Repo, cli: Any) -> None:
    repo.commit(files=HUB)
    r = cli("find", "spaced repetition", "--rev", "HEAD", "--json", "--path", "Spaced*", "--k", "2",
            cwd=repo.path).json()
    assert [h["id"] for h in r["results"]] == ["Spaced Repetition Plugins", "Spaced Writing Plugins"]
    assert r["results"][0]["reason"].startswith("title/id match")
    tight = cli("find", "spaced repetition", "--rev", "HEAD", "--json", "--budget", "20", cwd=repo.path).json()
    assert [h["id"] for h in tight["results"]] == ["Spaced Repetition Plugins"]


def test_find_mrr_on_the_labelled_questions_does_not_fall(tmp_path: Path) -> None:
    """The labelled questions on the shared corpora (`python bench/bench_find_mrr.py` prints the figure)."""
    sys.path.insert(0, str(BENCH))
    try:
        import bench_find_mrr as bench
    finally:
        sys.path.remove(str(BENCH))
    if not all((bench.CORPORA / f"{c}.bundle").is_file() for c in ("foam-docs", "kepano-obsidian")):
        pytest.skip(f"{bench.CORPORA} is not here (the shared corpora sit beside the worktree)")
    asked = bench.questions()
    assert len(asked) >= 30 and {c for c, _, _ in asked} == {"foam-docs", "kepano-obsidian"}
    clones = {c: bench.clone(bench.CORPORA, c, tmp_path) for c in ("foam-docs", "kepano-obsidian")}
    ranked = bench.ranks(clones, 10)
    assert bench.mrr(ranked) >= MRR_FLOOR, [(q, r) for _, q, r in ranked if r != 1]
