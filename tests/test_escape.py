"""Values printed by any command stay on their line and inert (docs/output.md): no note, file name,
revision or Git message can end a line, start a CI runner's workflow command or steer a terminal."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import TROPO, Repo

from vivary_git.escape import json_text, name, text

FORGED = "a\n::error file=README.md,line=1,title=Forged::boom"
# Everything a console or a runner may read as a line break or a command, in one frontmatter string.
HOSTILE_YAML = (r'"a\n::error file=README.md,line=1,title=Forged::boom\r::add-mask::m\u2028::stop-commands::t'
                r'\u2029\x85z\e[31m##[warning]legacy"')


def assert_inert(output: str, *, own_commands: int = 0) -> None:
    """No line of `output` is read as a workflow command (`::` after spaces at its start; the legacy
    `##[` anywhere) or carries a character that consoles take as a line break or an instruction,
    except the `own_commands` annotations a `--format github` run prints on purpose."""
    lines = output.split("\n")
    commands = [line for line in lines if line.lstrip().startswith("::")]
    assert len(commands) == own_commands, commands
    for line in lines:
        if line in commands:  # ours: the runner parses the whole line as that one command
            continue
        assert "##[" not in line, line
        assert not any(c in line for c in "\r\x85\u2028\u2029\x1b\x00\x07"), repr(line)


def test_text_escapes_line_breaks_controls_and_command_starts() -> None:
    assert text("plain – ünïcode ok") == "plain – ünïcode ok"
    assert text("a\nb\rc\td") == "a\\nb\\rc\\td"
    assert text("x\x1b[31m\x00\x7f\x85\u2028\u2029") == "x\\x1b[31m\\x00\\x7f\\x85\\u2028\\u2029"
    assert text("::error::x") == "\\x3a:error::x"
    assert text("  ::error::x") == "  \\x3a:error::x"
    assert text("see ::this::") == "see ::this::"  # only a value's start can be a line's start


def test_text_shows_bidi_controls_and_invisible_characters_escaped_and_keeps_the_joiners() -> None:
    """A bidirectional override shows the rest of a terminal line reversed (`invoice<U+202E>dm.exe.md` reads as an
    .exe; "Trojan Source"), and a zero-width space makes two names print alike: escaped. The joiners that
    Persian, Indic scripts and emoji sequences need are not."""
    assert text("invoice\u202edm.exe.md") == "invoice\\u202edm.exe.md"
    assert text("a\u2066b\u2069c\u200fd\u061ce") == "a\\u2066b\\u2069c\\u200fd\\u061ce"
    assert text("zero\u200bwidth\u2060\ufeff") == "zero\\u200bwidth\\u2060\\ufeff"
    assert text("می\u200cخواهم 👩\u200d💻") == "می\u200cخواهم 👩\u200d💻"


def test_check_shows_a_reversing_file_name_escaped(repo: Repo, cli: Any) -> None:
    repo.commit(files={"invoice\u202edm.exe.md": "x\n", "src.md": "[[nope\u202etxt.exe]]\n",
                       ".obsidian/app.json": "{}"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert "\u202e" not in r.out + r.err and "[[nope\\u202etxt.exe]]" in r.out, r.out
    assert text("tell ##[error]x") == "tell ##\\x5berror]x"
    assert text("n\udcffame.md") == "n\\xffame.md"  # a byte that is not UTF-8
    assert text(3) == "3"



@pytest.mark.parametrize("path", ["notes/a.md", "  lead.md", ":x.md", "::x.md", "a:.md", "n\udcffame.md",
                                  "tab\there.md", "caf\u00e9 \u7b14\u8bb0.md"])
@pytest.mark.parametrize("message", ["plain message", "::error::forged", "x ##[warning]y", "a\nb", "ends with :",
                                     " :lead", "see ::this::", "\u2028"])
def test_a_finding_line_is_each_field_escaped(path: str, message: str) -> None:
    """A finding renders as its fields, each through `text()`, whichever way render takes (a plain line
    is tested once as a whole)."""
    from vivary_git.models import Finding

    f = Finding(path=path, line=3, level="error", code="E001", message=message)
    assert f.render() == f"{text(path)}:3: error E001: {text(message)}"
    assert_inert(f.render())

def test_name_and_json_keep_valid_text_as_it_is() -> None:
    assert name("n\udcffame.md") == "n\\xffame.md"
    assert name("plain/ü.md") == "plain/ü.md"
    value = {"path": "n\udcffame.md", "m": "a\u2028b\x85c ##[error]d\x7f", "ok": "é"}
    out = json_text(value)
    assert "\n" not in out and "##[" not in out and "\u2028" not in out and "\x85" not in out
    assert json.loads(out) == {"path": "n\\xffame.md", "m": "a\u2028b\x85c ##[error]d\x7f", "ok": "é"}


@pytest.fixture
def hostile(repo: Repo) -> Repo:
    """Two commits; the second adds notes whose values, titles, bodies and file names are hostile."""
    repo.commit("base", files={
        "tropo.toml": TROPO,
        "modules/core.md": "---\nstatus: ok\n---\n# Core\n",
    })
    repo.commit("hostile", files={
        "decisions/d1.md": (
            f"---\nstatus: {HOSTILE_YAML}\ndate: 2024-01-01\n"
            'related: ["b\\n::error::ref", "::warning::x"]\nowner: core\n---\n'
            "# Title ##[error]h1 \x1b]0;t\x07\n\nbody word ##[error]body \x1b[2J\u2028::error::b2\n\n[[core]]\n"
        ),
        "decisions/::error title=Name::n.md": "---\nstatus: accepted\ndate: 2024-01-01\nowner: core\n---\nword\n",
        "decisions/n\n::warning::forged.md": "---\nstatus: nope\ndate: 2024-01-01\n---\nword\n",
    })
    return repo


@pytest.mark.parametrize("args", [
    ["check"], ["check", "--rev", "HEAD"], ["graph"], ["blast", "core"], ["blast", "--base", "HEAD~1"],
    ["query", "word", "--explain"], ["find", "word"], ["ci", "--base", "HEAD~1"], ["graph", "--format", "dot"],
    ["graph", "--format", "mermaid"],
])
def test_text_output_of_every_command_is_inert(hostile: Repo, cli: Any, args: list[str]) -> None:
    r = cli(*args, cwd=hostile.path)
    assert r.code in (0, 1), r.err
    assert r.out.strip()
    assert_inert(r.out)
    assert_inert(r.err)


def test_check_shows_the_hostile_values_escaped(hostile: Repo, cli: Any) -> None:
    out = cli("check", cwd=hostile.path).out
    assert "field 'related': ref 'b\\n::error::ref' matches no document id" in out
    assert "decisions/n\\n::warning::forged.md:2: error E103" in out
    graph = cli("graph", cwd=hostile.path).out
    assert "\n    --related--> \\x3a:warning::x  (broken)\n" in graph


def test_github_annotations_carry_hostile_text_inside_them(hostile: Repo, cli: Any) -> None:
    r = cli("ci", "--base", "HEAD~1", "--format", "github", cwd=hostile.path)
    own = [line for line in r.out.split("\n") if line.startswith("::")]
    assert own and all(line.split(" ", 1)[0] in ("::error", "::warning", "::notice") for line in own)
    assert_inert(r.out, own_commands=len(own))


def test_errors_and_usage_errors_are_one_inert_line(hostile: Repo, cli: Any) -> None:
    r = cli("check", "--rev", FORGED, cwd=hostile.path)
    assert r.code == 2
    assert r.err.count("\n") == 1 and "a\\n::error file=README.md" in r.err
    assert_inert(r.err)
    r = cli("graph", "--format", "x\n::error::forged", cwd=hostile.path)
    assert r.code == 2
    assert_inert(r.err)
    assert "x\\n::error::forged" in r.err


def test_privacy_explain_shows_a_hostile_path_inert(hostile: Repo, cli: Any) -> None:
    r = cli("privacy", "explain", "memory/::error::x\n##[error]y.md", "n\n::warning::z.md", cwd=hostile.path)
    assert r.code == 0, r.err
    assert_inert(r.out)
    # Names a line cannot carry are quoted as JSON strings, as Git quotes them (docs/privacy.md).
    assert r.out.splitlines() == [
        'private  "memory/::error::x\\n##\\u005berror]y.md"  (floor: memory/**)',
        'public   "n\\n::warning::z.md"',
    ]


# --- file names that are not UTF-8 --------------------------------------------------------------------

BAD_NAME = b"n\xffame.md"


@pytest.fixture
def latin1_name(repo: Repo) -> Repo:
    """A committed note whose file name is not UTF-8, with a finding of its own (E001, derived before IDs
    are resolved and so cached and shared with its path) and one that needs the graph (W221)."""
    repo.write({"ok.md": "---\ntitle: ok\n---\n# Ok\n", ".vivary/memory.toml":
                '[memory]\nenabled = true\nprovider = "vivary-local"\n'})
    with open(bytes(repo.path) + b"/" + BAD_NAME, "wb") as fh:
        fh.write(b"---\ntitle: [x\n---\n# Bad\n\n[[nothere]] word\n")
    with open(bytes(repo.path) + b"/linked.md", "wb") as fh:
        fh.write(b"---\ntitle: fine\n---\n[[nothere]]\n")
    repo.commit("odd name")
    return repo


@pytest.mark.parametrize("args", [
    ["check"], ["check", "--rev", "HEAD"], ["graph"], ["query", "word"], ["find", "word"],
    ["ci"], ["ci", "--format", "github"], ["index", "--dry-run"],
])
def test_a_name_that_is_not_utf8_is_shown_with_its_byte_escaped(latin1_name: Repo, cli: Any,
                                                                 args: list[str]) -> None:
    for run in ("cold", "warm"):  # the second run reads what the first one cached
        r = cli(*args, cwd=latin1_name.path)
        assert r.code in (0, 1), (run, r.err)
        # (`check` in a vault says on stderr where links to notes not written yet are allowed)
        err = "".join(line for line in r.err.splitlines(keepends=True) if "(W221). If they are notes" not in line)
        assert "Traceback" not in r.err and err == "", (run, r.err)
        if args[0] not in ("index", "graph"):  # graph's text lists IDs (`n-ame`), not paths
            assert "n\\xffame.md" in r.out, (run, r.out)


@pytest.mark.parametrize("args", [
    ["check", "--json"], ["graph", "--json"], ["query", "word", "--json"], ["ci", "--format", "json"],
    ["ci", "--format", "sarif"],
])
def test_json_names_the_byte_that_is_not_utf8_as_backslash_x(latin1_name: Repo, cli: Any, args: list[str]) -> None:
    r = cli(*args, cwd=latin1_name.path)
    assert r.code in (0, 1), r.err

    def strings(value: Any) -> list[str]:
        if isinstance(value, dict):
            return [s for k, v in value.items() for s in [k, *strings(v)]]
        if isinstance(value, list):
            return [s for v in value for s in strings(v)]
        return [value] if isinstance(value, str) else []

    # The JSON string reads n\xffame.md; SARIF's artifact URIs percent-encode the byte itself (RFC 3986).
    wanted = "n%FFame.md" if args[-1] == "sarif" else "n\\xffame.md"
    assert any(s.endswith(wanted) for s in strings(r.json()))


def test_the_cache_holds_the_exact_name(latin1_name: Repo, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    first = cli("check", "--rev", "HEAD", cwd=latin1_name.path)
    monkeypatch.setenv("VIVARY_STATS", "1")
    warm = cli("check", "--rev", "HEAD", cwd=latin1_name.path)
    assert '"graph_cached":true' in warm.err
    assert warm.out == first.out
    assert "n\\xffame.md:2: error E001" in warm.out
    # The shared cache keeps the notes it can share; the odd name's facts stay local.
    assert cli("cache", "verify", cwd=latin1_name.path).code == 0


def test_ci_files_carry_the_name_escaped(latin1_name: Any, cli: Any, tmp_path: Any) -> None:
    summary, sarif, out = tmp_path / "summary.md", tmp_path / "v.sarif", tmp_path / "outputs"
    r = cli("ci", "--summary", str(summary), "--sarif", str(sarif), "--github-output", str(out),
            "--format", "github", cwd=latin1_name.path)
    assert r.code == 1, r.err
    assert "::error file=n\\xffame.md,line=2,title=vivary E001::" in r.out
    assert "n\\xffame.md:2" in summary.read_text(encoding="utf-8")
    uris = [loc["physicalLocation"]["artifactLocation"]["uri"]
            for res in json.loads(sarif.read_text(encoding="utf-8"))["runs"][0]["results"] for loc in res["locations"]]
    assert "n%FFame.md" in uris  # SARIF URIs percent-encode the byte (RFC 3986)


def test_an_annotation_is_one_line_wherever_it_is_shown() -> None:
    """A message holding U+2028, U+2029 or U+0085 stays on the annotation's one line in a log viewer that breaks
    lines there (the runner reads only CR and LF, so this is no command for it either way); `file=` keeps the name as
    it is, so GitHub finds the file."""
    from vivary_git.gates.github import command

    line = command("error", "ref 'a\u2028::error::x\u0085y'", {"file": "a\u2029b.md", "line": 3})
    head, _, message = line.partition("::")[2].partition("::")
    assert head == "error file=a\u2029b.md,line=3" and "\n" not in line, line  # the file as it is named
    assert message == "ref 'a\\u2028::error::x\\x85y'", repr(message)


def test_a_value_is_shown_the_same_way_by_every_code_in_every_format(repo: Repo, cli: Any) -> None:
    """A value with a line break or `::` in it is shown as tropo shows it, a Python literal (`'x\\n::y'`), by every
    code: the message is one line, the same in text, JSON and annotations; the annotation's own `%0A` never
    appears inside a value."""
    repo.commit(files={"tropo.toml": TROPO, "modules/core.md": "---\nstatus: a\n---\n",
                       "modules/v.md": '---\nstatus: [x]\ndepends: ["a\\n::error::b"]\n"k\\n::warning::z": 1\n---\n',
                       "modules/d.md": '---\nstatus: a\n"q\\n::x": 1\n"q\\n::x": 2\n---\n'})
    found = cli("check", "--rev", "HEAD", "--json", cwd=repo.path).json()["findings"]
    messages = sorted((f["path"], f["code"], f["message"]) for f in found)
    assert messages == [
        ("modules/d.md", "E001", "frontmatter is not valid YAML: duplicate key 'q\\n::x'"),
        ("modules/v.md", "E103", "field 'depends': expected a list of refs (slugs), got item 'a\\n::error::b'"),
        ("modules/v.md", "E103", "field 'status': expected a string, got a list"),
        ("modules/v.md", "W202", "unknown field 'k\\n::warning::z' for type 'module'"),
        ("modules/v.md", "W220", "field 'depends': ref 'a\\n::error::b' matches no document id"),
    ], messages
    text = cli("check", "--rev", "HEAD", cwd=repo.path).out
    annotations = cli("ci", "--head", "HEAD", "--format", "github", cwd=repo.path).out
    assert_inert(annotations, own_commands=len(found))
    for _, code, message in messages:
        assert f"{code}: {message}" in text, (message, text)
        assert f"title=vivary {code}::{message}" in annotations, (message, annotations)
    assert "%0A" not in annotations


@pytest.mark.parametrize("encoding", ["ascii", "cp1252", "latin-1"])
def test_a_stream_that_cannot_spell_a_name_gets_its_escape_not_a_traceback(repo: Repo, encoding: str) -> None:
    """Output redirected on Windows is in the code page, a Linux box may run `LANG=en_US.ISO-8859-1`: names in
    other scripts (and an emoji) printed there raised UnicodeEncodeError, a traceback, from every command. What
    the stream cannot spell is written as its JSON escape: `--json` still reads back the exact names, text
    output shows `\\u0414`, and the exit codes are those of a UTF-8 terminal."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    repo.commit(files={"Дневник/запись 😀.md": "# День\n\nСм. [[нет-такой]].\n"})

    def run(*args: str, io: str) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, "PYTHONIOENCODING": io, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        return subprocess.run([sys.executable, "-m", "vivary_git", *args], cwd=repo.path, env=env,
                              capture_output=True, check=False)

    for args in (["check"], ["check", "--json"], ["graph", "--format", "mermaid"], ["find", "день"],
                 ["query", "день", "--json"], ["check", "--nope", "Дневник"]):
        utf8, narrow = run(*args, io="utf-8"), run(*args, io=encoding)
        assert b"Traceback" not in narrow.stderr, (args, narrow.stderr.decode(encoding))
        assert narrow.returncode == utf8.returncode, args
        if "--json" in args:
            assert json.loads(narrow.stdout.decode(encoding)) == json.loads(utf8.stdout.decode()), args
    shown = run("check", io=encoding).stdout.decode(encoding)
    assert "\\u0414\\u043d\\u0435\\u0432\\u043d\\u0438\\u043a/" in shown and "\\ud83d\\ude00" in shown, shown
