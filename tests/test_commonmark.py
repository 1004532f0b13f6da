"""What is not a link, held to the CommonMark spec's own examples (0.31.2; tests/data, CC-BY-SA 4.0).

For every example of the spec's sections on tabs, block quotes, list items, indented code, fenced
code and code spans, the words our link scan reads as prose (`body.prose`) must be exactly the
words the spec's HTML shows outside `<code>`: then a `[[link]]` anywhere in those examples is read
or skipped as a CommonMark reader would.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from vivary_git import parse
from vivary_git.body import prose

SPEC = json.loads((Path(__file__).parent / "data" / "commonmark-code.json").read_text(encoding="utf-8"))

# Raw HTML and autolinks take precedence over code spans; vivary-git does not read either (a link is
# never inside one), so a backtick inside them still opens a span here. Neither can hide a [[link]].
NOT_READ = {344: "a backtick inside a raw HTML tag", 346: "a backtick inside an autolink"}


def _spec_words(expected: str) -> list[str]:
    text = re.sub(r"<code[^>]*>.*?</code>", " ", expected, flags=re.S)
    text = re.sub(r"<[^>]+>", " ", text)
    return sorted(re.findall(r"\w+", html.unescape(text)))


def _our_words(markdown: str) -> list[str]:
    return sorted(re.findall(r"\w+", " ".join(prose(markdown.rstrip("\n")))))


@pytest.mark.parametrize("example", SPEC, ids=lambda x: f"{x['example']}-{x['section'].replace(' ', '-')}")
def test_prose_is_what_the_spec_renders_outside_code(example: dict[str, object]) -> None:
    markdown, expected, number = str(example["markdown"]), str(example["html"]), int(str(example["example"]))
    if number in NOT_READ:
        assert _our_words(markdown) != _spec_words(expected)  # stays a known difference: see NOT_READ
        return
    assert _our_words(markdown) == _spec_words(expected)


def test_the_spec_sections_are_all_there() -> None:
    sections = {str(x["section"]) for x in SPEC}
    assert sections == {"Tabs", "Block quotes", "List items", "Indented code blocks", "Fenced code blocks",
                        "Code spans"}
    assert len(SPEC) == 147


@pytest.mark.parametrize("body,links", [
    ("> ```md\n> [[a]]\n> ```\n> [[b]]\n", ["b"]),  # a fence in a callout
    ("- x\n\n      [[a]]\n\n  [[b]]\n", ["b"]),  # indented code inside a list item
    ("1. x\n   ```\n   [[a]]\n   ```\n[[b]]\n", ["b"]),
    ("Text\n    [[a]] is a continuation, not code\n", ["a"]),  # indented code cannot interrupt a paragraph
    ("$x = [[a]]$ $5 and [[b]] $6\n", ["b"]),  # `$5 … $6`: a closing `$` before a digit is not math
    ("``[[a]]`` `[[b]]`` [[c]]\n", ["b", "c"]),  # an unmatched run is literal
    ("\\`[[a]]`\n", ["a"]),  # an escaped backtick opens nothing
    ("%%\n[[a]]\n%%\n<!--\n[[b]]\n-->\n[[c]] <!-- [[d]] --> %%[[e]]%%\n", ["c"]),
    ("- step\n- ```\n  [[a]]\n  ```\n- [[b]]\n", ["b"]),  # a fence opened by the next list item
    ("1. one\n2. ```\n   [[a]]\n   ```\n", []),
])
def test_links_are_read_only_in_prose(body: str, links: list[str]) -> None:
    assert [link.text for link in parse.parse_blob(body.encode()).links] == links
