"""What a reader copies from README.md and docs/*.md works as written: every relative link and `#anchor` lands
(as GitHub renders the page), every `git vivary COMMAND --option` names a real command and option, every TOML
example is a config the readers accept, and the VIVARY_ variables the pages name are the ones the code reads."""

from __future__ import annotations

import argparse
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def _lines(page: Path) -> Iterator[tuple[int, str, bool]]:
    """(line number, text, inside a fenced block) for every line of a page, fence lines left out."""
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        yield number, line, fenced


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub makes it: the text shown, lowercased, punctuation but `-` and `_` dropped,
    spaces made `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text.replace("`", ""))
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    found: set[str] = set()
    seen: dict[str, int] = {}
    for _, line, fenced in _lines(page):
        if fenced:
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)(?:\s+#+)?\s*$", line)
        if heading:
            slug = _slug(heading.group(1))
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
        found.update(re.findall(r'<a (?:id|name)="([^"]+)"', line))
    return found


def test_the_slug_is_githubs() -> None:
    assert _slug("`git vivary ci`") == "git-vivary-ci"
    assert _slug("Summary (`--summary FILE`)") == "summary---summary-file"
    assert _slug("Differences from the published `tropo` (vivary-tropo 0.5.4)") == \
        "differences-from-the-published-tropo-vivary-tropo-054"
    assert _slug("`.vivary/memory.toml`") == "vivarymemorytoml"


def test_every_relative_link_and_anchor_lands() -> None:
    anchors = {page: _anchors(page) for page in PAGES}
    broken = []
    for page in PAGES:
        for number, line, fenced in _lines(page):
            if fenced:
                continue
            for target in re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", CODE_SPAN.sub("", line)):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                    continue
                path, _, fragment = target.partition("#")
                dest = (page.parent / path).resolve() if path else page
                where = f"{page.relative_to(ROOT)}:{number}: {target}"
                if not dest.exists():
                    broken.append(f"{where} (no such file)")
                elif fragment and dest.suffix == ".md" and fragment not in (anchors.get(dest) or _anchors(dest)):
                    broken.append(f"{where} (no such heading)")
    assert not broken, "\n".join(broken)


def _commands() -> dict[tuple[str, ...], argparse.ArgumentParser]:
    from vivary_git.main import build_parser

    out: dict[tuple[str, ...], argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        out[path] = parser
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    walk(child, (*path, name))

    walk(build_parser(), ())
    return out


# Shown on purpose as a mistake (docs/exit-codes.md: how an unknown option is said).
MEANT_WRONG = {("sync", "setup", "-x")}
INVOCATION = re.compile(r"git[ -]vivary((?:[ \t]+[^\s|;&`#>]+)*)")


def _unbar(text: str) -> str:
    """`[--mode hybrid|semantic]`, `[--rev REV | --staged]`: a synopsis's alternatives, not a pipe."""
    depth, out = 0, []
    for char in text:
        depth += {"[": 1, "{": 1, "]": -1, "}": -1}.get(char, 0)
        out.append(" " if char == "|" and depth > 0 else char)
    return "".join(out)


def _invocations() -> Iterator[tuple[str, list[str]]]:
    """(where, the words after `git vivary`) for every command a page shows: in fenced blocks (a synopsis
    may go on on indented lines), in code spans."""
    for page in PAGES:
        found: list[tuple[str, list[str]]] = []
        open_ended = False  # the last fenced line ended in a command line, which the next may continue
        for number, line, fenced in _lines(page):
            if fenced and open_ended and re.match(r"\s+[\[-]", line):
                found[-1][1].extend(_unbar(line).split())
                continue
            open_ended = False
            texts = [line.lstrip("$ ")] if fenced else [m.group(2) for m in CODE_SPAN.finditer(line)]
            for text in map(_unbar, texts):
                for match in INVOCATION.finditer(text):
                    found.append((f"{page.relative_to(ROOT)}:{number}: {match.group(0)[:120]}", match.group(1).split()))
                    open_ended = fenced and match.end() == len(text.rstrip())
        yield from found


def test_every_command_and_option_the_docs_name_exists() -> None:
    commands = _commands()
    wrong = []
    checked = 0
    for where, words in _invocations():
        path: tuple[str, ...] = ()
        skip_value = False
        for word in words:
            if word.endswith(":"):
                break  # `git vivary hooks: ...`: a message the command printed, not a command line
            word = word.strip("[](){},.:;'\"")
            if skip_value or not word or word in ("…", "...") or word.startswith("$"):
                skip_value = False
                continue
            if word == "-C" and not path:
                skip_value = True
                continue
            parser = commands[path]
            has_sub = any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
            if not word.startswith("-"):
                if not has_sub:
                    continue  # an argument
                if (*path, word) in commands:
                    path = (*path, word)
                    continue
                if not re.fullmatch(r"[a-z][a-z-]*", word):
                    break  # a placeholder: COMMAND, ARGS, `git vivary X`
                wrong.append(f"{where}: no command `git vivary {' '.join((*path, word))}`")
                break
            if word in ("-", "--") or re.fullmatch(r"-\d.*", word):
                break
            option = word.split("=", 1)[0]
            checked += 1
            if option not in {o for a in parser._actions for o in a.option_strings} and \
                    (*path, option) not in MEANT_WRONG:
                wrong.append(f"{where}: `git vivary {' '.join(path)}` has no option {option}")
    assert checked > 200
    assert not wrong, "\n".join(wrong)


def _toml_examples() -> Iterator[tuple[str, str]]:
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        start = None
        for number, line in enumerate(lines):
            if start is None and line.strip().startswith("```toml"):
                start = number + 1
            elif start is not None and line.strip().startswith("```"):
                yield f"{page.relative_to(ROOT)}:{start}", textwrap.dedent("\n".join(lines[start:number])) + "\n"
                start = None


def test_every_toml_example_is_a_config_the_readers_accept() -> None:
    """A `[memory…]` example is `.vivary/memory.toml`, one with `version` is `tropo.toml`, any other
    `.vivary/graph.toml`: each is read by the reader of that file (unknown keys are errors in all three)."""
    from vivary_git.config import build_config, load_toml
    from vivary_git.memory.config import parse_memory_config

    examples = list(_toml_examples())
    assert len(examples) >= 8
    for where, text in examples:
        try:
            if re.search(r"^\[memory", text, re.MULTILINE):
                parse_memory_config(text.encode())
            elif re.search(r"^version\s*=", text, re.MULTILINE):
                build_config(load_toml(text.encode(), "tropo.toml"), None)
            else:
                build_config(None, load_toml(text.encode(), ".vivary/graph.toml"), name=".vivary/graph.toml")
        except Exception as err:  # the example's own words say what is wrong
            pytest.fail(f"{where}: {err}")


VARIABLE = re.compile(r"\bVIVARY_[A-Z0-9_]+\b")


def _named_in(paths: list[Path]) -> set[str]:
    return {name for path in paths if path.is_file() for name in VARIABLE.findall(path.read_text(encoding="utf-8"))}


def test_the_environment_variables_the_docs_name_are_read_and_the_reverse() -> None:
    """A variable the docs name is read by vivary-git, its scripts, tests or Action (a secret's name counts:
    the Action's workflow passes it); one vivary-git reads is named in the docs, test seams aside."""
    named = _named_in(PAGES)
    code = _named_in(sorted((ROOT / "vivary_git").rglob("*.py")))
    elsewhere = _named_in([*sorted((ROOT / "scripts").iterdir()), *sorted((ROOT / "tests").rglob("*.py")),
                           *sorted((ROOT / "bench").glob("*.py")), *sorted((ROOT / "action").rglob("*")),
                           ROOT / "action.yml"])
    assert {"VIVARY_JOBS", "VIVARY_STATS"} <= named & code
    assert not named - code - elsewhere, f"named in the docs, read nowhere: {sorted(named - code - elsewhere)}"
    unnamed = {v for v in code - named if not v.startswith("VIVARY_TEST_")}
    assert not unnamed, f"read by vivary-git, named in no page: {sorted(unnamed)}"
