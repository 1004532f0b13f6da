"""Differential test against the published reference tool `tropo` (vivary-tropo 0.5.4).

The same workspace goes through `tropo … --json` (a subprocess, the peer) and `git vivary … --json`
(in-process); where tropo is right the answers must be identical, finding for finding, in the same
order. Where the contract (/work/shared/reference/vivary-contract.md, **fix** items) or the tropo notes
(§8 "things to do differently") say tropo is wrong, the difference itself is asserted, both sides
spelled out, in `KNOWN_DIFFERENCES`. Mismatches nobody has documented yet are parity cases marked
`xfail(strict=True)`: fixing ours (or documenting the difference and moving the case) makes them pass.

The peer: `$VIVARY_TROPO`, else `tropo` on PATH; with neither the test skips (fails under `CI`).

Speed: tropo runs `git log` once per file to derive created/updated dates, which appear in no output
unless `derive` lists them (no workspace here does). The peer therefore runs with a PATH holding only
its own bin directory and this interpreter's, so `git` is not found and tropo takes its documented
mtime fallback: same answers, ~3x faster.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from conftest import Repo, git, write

MAKE_VAULT = Path(__file__).resolve().parents[2] / "shared/bench/make_vault.py"

Finding = tuple[str, int, str, str, str]  # (path, line, level, code, message)


# --------------------------------------------------------------------------- the peer


@pytest.fixture(scope="session")
def tropo() -> str:
    peer = os.environ.get("VIVARY_TROPO") or shutil.which("tropo")
    if not peer or not Path(peer).exists():
        msg = "tropo (vivary-tropo 0.5.4) not found: set VIVARY_TROPO=/path/to/tropo or put tropo on PATH"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return str(Path(peer).absolute())


def run_tropo(peer: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """tropo's positionals must come before its flags (`tropo query --json foo` is a usage error)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join(dict.fromkeys([str(Path(peer).parent), str(Path(sys.executable).parent)]))
    proc = subprocess.run([peer, *args], cwd=cwd, capture_output=True, text=True, env=env, check=False, timeout=120)
    assert proc.returncode in (0, 1), f"tropo {' '.join(args)} failed ({proc.returncode}): {proc.stderr}"
    return proc


def tropo_json(peer: str, cwd: Path, *args: str) -> tuple[int, Any]:
    proc = run_tropo(peer, cwd, *args)
    return proc.returncode, json.loads(proc.stdout)


def findings(doc: Mapping[str, Any]) -> list[Finding]:
    return [(f["path"], f["line"], f["level"], f["code"], f["message"]) for f in doc["findings"]]


def summary(doc: Mapping[str, Any]) -> dict[str, int]:
    return {k: doc[k] for k in ("checked", "clean", "errors", "warnings")}


def edges(doc: Mapping[str, Any], *, drop_fields: Sequence[str] = ()) -> list[tuple[str, str, str, bool]]:
    """Sorted, de-duplicated (tropo repeats an edge when a list repeats a target; we keep one)."""
    kept = {(e["from"], e["field"], e["to"], e["broken"]) for e in doc["edges"] if e["field"] not in drop_fields}
    return sorted(kept)


# --------------------------------------------------------------------------- hand-made workspaces

CONFIG = """version = 1
exclude = ["drafts", "a/b", "c/**", "d/"]

[base]
derive = ["id", "title"]
allow_untyped = true
optional = { tags = "string-list" }

[types.spec]
folder = "specs"
required = { s = "string" }

[types.spec.optional]
d = "date"
dt = "datetime"
sl = "slug"
r = "ref"
u = "url"
b = "bool"
n = "number"
l = "list"
sli = "string-list"
rl = "ref-list"
e = "enum:a|b"
en = "enum:1|2"
an = "any"
yn = "enum:yes|no"
oc = "enum:10|x"
sx = "enum:1:30|x"
"""
NO_UNTYPED = CONFIG.replace("allow_untyped = true", "allow_untyped = false")
LENIENT_CONFIG = CONFIG.replace("[base]\n", "[base]\nstrict = false\n")
BASE_REQUIRED = CONFIG.replace('optional = { tags = "string-list" }',
                               'required = { owner = "string" }\noptional = { tags = "string-list" }')
UNKNOWN_SPEC = CONFIG.replace('an = "any"\n', 'an = "any"\nx = "strng"\n')
WITH_RL = CONFIG.replace('optional = { tags = "string-list" }', 'optional = { tags = "string-list", rl = "ref-list" }')
X = "specs/x.md"
assert "created" not in CONFIG and "updated" not in CONFIG  # see the module docstring: dates are not compared


def fm(body: str, rest: str = "# T\n") -> str:
    return f"---\n{body}\n---\n{rest}"


def spec(body: str) -> dict[str, str | bytes]:
    """One typed note with the required `s` present, plus `body` lines (for the difference table)."""
    return {X: fm(f"s: a\n{body}")}


@dataclass(frozen=True)
class Case:
    """A parity case. Its files share one workspace with the other cases of the same (config, args),
    so tropo starts once per group, not once per case: `@` in a path or content is the case id, which
    keeps every case's paths and IDs its own. `alone` cases get a workspace of their own."""

    id: str  # lowercase: it is also the note's ID
    files: Mapping[str, str]
    codes: tuple[str, ...]  # the codes tropo reports for these files, in order: proves the case exercises its rule
    config: str = CONFIG
    args: tuple[str, ...] = ()
    alone: bool = False
    undocumented: str = ""  # a known, not yet documented mismatch: the test is xfail(strict) with this reason

    def materialise(self) -> dict[str, str]:
        return {k.replace("@", self.id): v.replace("@", self.id) for k, v in self.files.items()}

    def group(self) -> tuple[str, tuple[str, ...], str]:
        return self.config, self.args, (self.id if self.alone else "undocumented" if self.undocumented else "")


def note(body: str) -> dict[str, str]:
    """`specs/<id>.md` with the required `s` present, plus `body` lines."""
    return {"specs/@.md": fm(f"s: a\n{body}")}


def raw(text: str, path: str = "specs/@.md") -> dict[str, str]:
    return {path: text}



PARITY = [
    # E103, one spec kind at a time (messages from the notes' spec table)
    Case("string-list-value", raw(fm("s: [x]")), ("E103",)),
    Case("string-dict-value", raw(fm("s: {}")), ("E103",)),
    Case("string-accepts-number-and-bool", raw(fm("s: 5\ntags: [true, 3]")), ()),
    Case("date-slashes", note("d: 2026/01/02"), ("E103",)),
    Case("date-list", note("d: [x]"), ("E103",)),
    Case("date-number", note("d: 20260102"), ("E103",)),
    Case("date-ok", note("d: 2026-01-02"), ()),
    Case("datetime-date-only", note("dt: 2026-01-02"), ("E103",)),
    Case("datetime-list", note("dt: [x]"), ("E103",)),
    Case("datetime-ok", note("dt: 2026-01-02T10:00:00Z"), ()),
    Case("datetime-ok-space-offset", note("dt: '2026-01-02 10:00+02:00'"), ()),
    Case("slug-space", note("sl: My Slug"), ("E103",)),
    Case("slug-number", note("sl: 5"), ("E103",)),
    Case("ref-space", note("r: Bad Ref"), ("E103", "W220")),
    Case("ref-number", note("r: 5"), ("E103",)),
    Case("url-ftp", note("u: ftp://x"), ("E103",)),
    Case("url-number", note("u: 12"), ("E103",)),
    Case("url-ok", note("u: https://example.org/x?y=1"), ()),
    Case("bool-one", note("b: 1"), ("E103",)),
    Case("bool-quoted", note('b: "true"'), ("E103",)),
    Case("bool-ok", note("b: False"), ()),
    Case("number-quoted", note('n: "3"'), ("E103",)),
    Case("number-bool", note("n: true"), ("E103",)),
    Case("number-ok", note("n: -3.5"), ()),
    Case("number-underscore-plus", note("n: 1_000\ntags: [+5]"), ()),
    Case("list-string", note("l: notalist"), ("E103",)),
    Case("list-dict", note("l: {}"), ("E103",)),
    Case("list-int", note("l: 5"), ("E103",)),
    Case("string-list-string", note("sli: x"), ("E103",)),
    Case("ref-list-string", note("rl: nope"), ("E103", "W220")),
    Case("ref-list-bad-items", note("rl: [Bad Ref, worse one]"), ("E103", "W220", "W220")),
    Case("ref-list-uppercase", note("rl: [Tw3]"), ("E103", "W220")),
    Case("ref-list-block-with-inline-item", note("rl:\n  - [a]\n  - b"), ("E103", "W220")),
    Case("enum-other", note("e: c"), ("E103",)),
    Case("enum-list", note("e: [a]"), ("E103",)),
    Case("enum-ok", note("e: b"), ()),
    Case("enum-number-by-text", note("en: 1"), ()),
    Case("any", note("an: {x: 1}"), ()),
    # E101/E102
    Case("e101-missing", raw(fm("d: 2026-01-01")), ("E101",)),
    Case("e101-no-frontmatter", raw("# T\n"), ("E101",)),
    Case("e101-empty-block", raw("---\n---\n# T\n"), ("E101",)),
    Case("e101-blank-block", raw("---\n\n---\n# T\n"), ("E101",)),
    Case("e101-untyped-base-required", raw("# U\n", "notes/@.md"), ("E101",), BASE_REQUIRED),
    Case("e102-null", raw(fm("s:")), ("E102",)),
    Case("e102-empty-string", raw(fm('s: ""')), ("E102",)),
    Case("e102-tilde", raw(fm("s: ~")), ("E102",)),
    # W201/W202/W210/W220 and strictness
    Case("w201-strict", {"notes/@.md": "# U\n", "specs/@-typed.md": fm("s: a")}, ("W201",), NO_UNTYPED),
    Case("w210-untyped-when-untyped-disallowed", raw(fm("id: @"), "notes/@.md"), ("W201", "W210"), NO_UNTYPED),
    Case("w202-unknown-field", note("zz: 1"), ("W202",)),
    Case("w202-never-on-untyped", raw(fm("zz: 1"), "notes/@.md"), ()),
    Case("w210-id", note("id: @"), ("W210",)),
    Case("w210-title", note("title: T"), ("W210",)),
    Case("w210-wrong-id-ignored", note("id: wrong"), ()),
    Case("w210-untyped-allowed-ignored", raw(fm("id: @\ntitle: U"), "notes/@.md"), ()),
    Case("w220-ref-missing", note("r: missing"), ("W220",)),
    Case("w220-ref-list-missing", note("rl: [nope, @]"), ("W220",)),
    Case("lenient-flag", note("zz: 1\nr: nope\nid: @"), ("W202", "W210", "W220"), args=("--lenient",)),
    Case("strict-false-config", note("zz: 1"), ("W202",), LENIENT_CONFIG),
    Case("strict-flag-over-config", note("zz: 1"), ("W202",), LENIENT_CONFIG, ("--strict",)),
    # frontmatter block detection
    Case("bom", raw("\ufeff---\ns: a\nzz: 1\n---\n# T\n"), ("W202",)),
    Case("crlf", raw("---\r\ns: a\r\nzz: 1\r\nd: 2026/1/2\r\n---\r\n# T\r\n"), ("W202", "E103")),
    Case("cr-line-ends", raw("---\rs: a\rzz: 1\rd: 2026/1/2\r---\r# T\r"), ("W202", "E103")),
    Case("trailing-blanks-no-eol", raw("--- \ns: a\nzz: 1\n---  "), ("W202",)),
    # walk order of findings: files before subfolders, code-point order
    Case("document-order", {
        "specs/z.md": fm("zz: 1"), "specs/a/b2.md": fm("zz: 1"), "specs/B.md": fm("zz: 1"), "specs/_x.md": fm("zz: 1"),
        "specs/A/c.md": fm("zz: 1"), "specs/a.md": fm("zz: 1"), "specs/a b.md": fm("zz: 1"),
        "specs/a.b/c2.md": fm("s: 1"), "top.md": fm("s: 1\nzz: 2"),
    }, ("E101", "W202") * 7, alone=True),
    # (where full YAML and CommonMark part ways with tropo, see KNOWN_DIFFERENCES: docs/check.md documents them)
    Case("e001-duplicate-key", raw(fm("s: a\ns: b")), ("E001",)),
    Case("e001-tab-indent", raw(fm("s: a\nl:\n\t- x")), ("E001",)),
    Case("e001-not-a-mapping", raw(fm("- a\n- b")), ("E001",)),
    Case("yaml11-bool-yes", note("b: yes"), ("E103",)),
    Case("yaml11-bool-on", note("b: on"), ("E103",)),
    Case("yaml11-enum-yes", note("yn: yes"), ()),
    Case("yaml11-octal", note("oc: 010"), ()),
    Case("yaml11-sexagesimal", note("sx: 1:30"), ()),
    Case("yaml11-hex", note("n: 0x10"), ("E103",)),
    Case("yaml11-float-exponent", note("n: 1e3"), ()),
    Case("yaml11-dot-inf", note("n: .inf"), ("E103",)),
]


@dataclass
class GroupRun:
    tropo_rc: int
    tropo: dict[str, Any]
    ours: dict[tuple[str, ...], tuple[int, dict[str, Any]]]  # by tree args: (exit code, JSON)


_GROUPS: dict[tuple[str, tuple[str, ...], str], GroupRun] = {}


def run_group(key: tuple[str, tuple[str, ...], str], peer: str, tmp: pytest.TempPathFactory, cli: Any) -> GroupRun:
    """Both tools over one workspace holding every case of the group (computed once, inside a test,
    so Git runs under conftest's hermetic environment)."""
    if key not in _GROUPS:
        config, args, _ = key
        ws = tmp.mktemp("group") / "ws"
        ws.mkdir()
        git(ws, "init", "-q", "-b", "main")
        files: dict[str, str] = {"tropo.toml": config}
        for case in PARITY:
            if case.group() == key:
                files.update(case.materialise())
        write(ws, files)
        git(ws, "add", "-A")
        git(ws, "commit", "-q", "-m", "cases")
        rc, theirs = tropo_json(peer, ws, "check", *args, "--json")
        ours: dict[tuple[str, ...], tuple[int, dict[str, Any]]] = {}
        trees: tuple[tuple[str, ...], ...] = ((), ("--rev", "HEAD"))
        for tree in trees:
            got = cli("check", *tree, *args, "--json", cwd=ws)
            ours[tree] = (got.code, got.json())
        _GROUPS[key] = GroupRun(rc, theirs, ours)
    return _GROUPS[key]


def _param(case: Case) -> Any:
    marks = [pytest.mark.xfail(strict=True, reason=case.undocumented)] if case.undocumented else []
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in PARITY])
def test_check_parity(case: Case, tropo: str, tmp_path_factory: pytest.TempPathFactory, cli: Any) -> None:
    run = run_group(case.group(), tropo, tmp_path_factory, cli)
    paths = set(case.materialise())
    theirs = [f for f in findings(run.tropo) if f[0] in paths]
    assert tuple(f[3] for f in theirs) == case.codes, "the case no longer exercises its rule"
    for tree, (_, doc) in run.ours.items():
        assert [f for f in findings(doc) if f[0] in paths] == theirs, tree


GROUPS = sorted({c.group() for c in PARITY if not c.undocumented}, key=repr)


@pytest.mark.parametrize("key", GROUPS, ids=[f"group{i}" for i in range(len(GROUPS))])
def test_check_parity_totals(key: Any, tropo: str, tmp_path_factory: pytest.TempPathFactory, cli: Any) -> None:
    """Per workspace: the whole finding list (order across cases), the counts and the exit code."""
    run = run_group(key, tropo, tmp_path_factory, cli)
    for tree, (code, doc) in run.ours.items():
        assert findings(doc) == findings(run.tropo), tree
        assert summary(doc) == summary(run.tropo), tree
        assert code == run.tropo_rc, tree


def _setup(repo: Repo, files: Mapping[str, str | bytes], config: str) -> None:
    repo.commit(files={"tropo.toml": config, **files})


def test_index_documents_and_excludes(tropo: str, repo: Repo, cli: Any) -> None:
    """IDs of index documents (README/index/_index/folder-named), slugs, and every exclude form."""
    files = {
        "README.md": "# root\n", "specs/README.md": fm("s: a"), "projects/Alpha/README.md": "# A\n",
        "projects/beta/Index.md": "# b\n", "projects/gamma/_INDEX.md": "#g\n", "projects/delta/Delta.md": "# d\n",
        "projects/index.md": "# p\n", "Über Straße.md": "x", "___.md": "x", "y.tmp.md": "x", ".hidden/hid.md": "x",
        ".dot.md": "x", "A.MD": "x", "x.Markdown": "x", "n.markdown": "# N\n", "notes.txt": "x",
        # excludes: bare name (any segment), prefix with a slash, trailing /**, trailing /
        "drafts/a.md": "x", "sub/drafts/b.md": "x", "a/b/c.md": "x", "a/bb/c2.md": "x", "c/e.md": "x",
        "cc/e2.md": "x", "d/g.md": "x", "sub/d/h.md": "x", "node_modules/n.md": "x", ".obsidian/o.md": "x",
        ".tropo/t.md": "x", ".claude/c3.md": "x",
        "specs/deep/er/y.md": fm("s: a\nrl: [specs, alpha, beta, gamma, delta, projects, ws, ber-stra-e, ghost, g, h]"),
    }
    _setup(repo, files, CONFIG)
    rc, theirs = tropo_json(tropo, repo.path, "check", "--json")
    ours = cli("check", "--json", cwd=repo.path)
    assert (ours.code, summary(ours.json()), findings(ours.json())) == (rc, summary(theirs), findings(theirs))
    assert [f[4] for f in findings(theirs)] == [
        "field 'rl': ref 'ghost' matches no document id", "field 'rl': ref 'g' matches no document id",
        "field 'rl': ref 'h' matches no document id",
    ]
    _, tg = tropo_json(tropo, repo.path, "graph", "--json")
    og = cli("graph", "--json", cwd=repo.path).json()
    assert og["nodes"] == tg["nodes"]
    assert edges(og) == edges(tg)
    assert og["root"] == tg["root"] == str(repo.path)


# --------------------------------------------------------------------------- documented differences


@dataclass(frozen=True)
class Known:
    """Both sides of a documented difference: tropo's (wrong) answer and ours."""

    id: str
    why: str  # where it is documented
    files: Mapping[str, str | bytes]
    tropo: list[Finding]
    tropo_rc: int
    ours: list[Finding]
    ours_rc: int
    config: str = CONFIG
    args: tuple[str, ...] = ()
    ours_stderr: str = ""  # for an exit 2: a substring of our message
    graph: dict[str, Any] = field(default_factory=dict)  # optional: {"tropo": edges, "ours": edges}


def E(code: str, line: int, message: str, path: str = X, level: str = "error") -> Finding:
    return (path, line, level, code, message)


KNOWN_DIFFERENCES = [
    Known("calendar-date", "contract: date is a real calendar date (tropo accepts 2026-13-45, **fix**)",
          spec("d: 2026-13-45"), [], 0,
          [E("E103", 3, "field 'd': expected a real calendar date (YYYY-MM-DD), got '2026-13-45'")], 1),
    Known("calendar-datetime", "contract: date is a real calendar date (same rule for datetime)",
          spec("dt: 2026-02-30T10:00"), [], 0,
          [E("E103", 3, "field 'dt': expected a real ISO-8601 datetime, got '2026-02-30T10:00'")], 1),
    Known("non-utf8", "contract E000: non-UTF-8 content (tropo skips such files silently, **fix**)",
          {X: b"---\ns: caf\xe9\n---\n# T\n"}, [], 0,
          [E("E000", 2, "not valid UTF-8 (byte 0xe9 at offset 10); re-save the file as UTF-8")], 1),
    Known("binary", "contract E000: binary content (tropo skips such files silently, **fix**)",
          {"notes/b.md": b"\x00\x01\x02\n"}, [], 0,
          [E("E000", 1, "file looks binary (it contains NUL bytes); exclude it or give it another extension",
             path="notes/b.md")], 1),
    Known("malformed-inline-list", "contract: `a: [1` must be E001 (**fix**: tropo reads it as a string)",
          {X: fm("s: [1")}, [], 0,
          [E("E001", 2, "frontmatter is not valid YAML: did not find expected ',' or ']'")], 1),
    Known("inline-nested-list", "notes §8: `[[a],b]` nesting becomes strings",
          spec("sli: [[a], b]"), [], 0, [E("E103", 3, "field 'sli': expected a flat list")], 1),
    Known("number-nan", "notes §8: `nan`/`inf` are numbers in tropo", spec("n: nan"), [], 0,
          [E("E103", 3, "field 'n': expected a number, got 'nan'")], 1),
    Known("number-inf", "notes §8: `nan`/`inf` are numbers in tropo", spec("n: inf"), [], 0,
          [E("E103", 3, "field 'n': expected a number, got 'inf'")], 1),
    Known("unclosed-frontmatter", "docs/check.md: E001 (not silence) for an unclosed frontmatter block",
          {X: "---\ns: a\n# T\n"}, [E("E101", 1, "missing required field 's' for type 'spec'")], 1,
          [E("E001", 1, "frontmatter opened with `---` on line 1 is never closed; add a `---` line after it")], 1),
    Known("h1-closing-hashes", "docs/check.md: H1 detection strips closing #s (tropo keeps 'Real Title ##')",
          {X: fm("s: a\ntitle: Real Title", "# Real Title ##\n")}, [], 0,
          [E("W210", 3, "field 'title' equals its derived value (noise)")], 1),
    Known("h1-in-fence", "docs/check.md: H1 detection ignores fenced code (tropo takes '# In Fence')",
          {X: fm("s: a\ntitle: Real", "```\n# In Fence\n```\n# Real\n")}, [], 0,
          [E("W210", 3, "field 'title' equals its derived value (noise)")], 1),
    Known("h1-across-lines", "notes §3/§8: tropo's heading whitespace run crosses newlines (`#\\n\\nNext line`)",
          {X: fm("s: a\ntitle: Next line", "#\n\nNext line\n")},
          [E("W210", 3, "field 'title' equals its derived value (noise)")], 1, [], 0),
    Known("W201-lenient", "notes §4/§8: W201 is created at level error, so it fails even under --lenient",
          {"notes/u.md": "# U\n", X: fm("s: a\nid: x")},
          [E("W201", 1, "untyped document (no ancestor folder is a registered type)", path="notes/u.md"),
           E("W210", 3, "field 'id' equals its derived value (noise)", level="warning")], 1,
          [E("W201", 1, "untyped document (no ancestor folder is a registered type)", path="notes/u.md",
             level="warning"),
           E("W210", 3, "field 'id' equals its derived value (noise)", level="warning")], 0,
          config=NO_UNTYPED, args=("--lenient",)),
    Known("wikilinks", "contract Edges: [[wikilinks]] are edges of field `wikilink` (beyond tropo); "
          "broken ones are W221 (docs/check.md)",
          {X: fm("s: a\nrl: [y]", "# T\nSee [[ghost]], [[y|alias]] and [[notes/y#h]], not `[[code]]`.\n"),
           "notes/y.md": "# Y\n"}, [], 0,
          [E("W221", 6, "wikilink [[ghost]] matches no document id (looked for 'ghost')")], 1,
          graph={"tropo": [("x", "rl", "y", False)],
                 "ours": [("x", "rl", "y", False), ("x", "wikilink", "ghost", True), ("x", "wikilink", "y", False)]}),
    Known("duplicate-ids", "contract Nodes: tropo lets duplicate IDs collide silently (**fix**: report them); "
          "notes §2/§8: its graph keeps the first and merges both documents' edges (a false self-loop)",
          {"x/dup.md": fm("rl: [a]"), "y/dup.md": fm("rl: [dup]"), "a.md": "x"}, [], 0,
          [E("E130", 1, "duplicate document id 'dup': x/dup.md has it already; rename one of the two files",
             path="y/dup.md")], 1, config=WITH_RL,
          graph={"tropo": [("dup", "rl", "a", False), ("dup", "rl", "dup", False)],
                 "ours": [("dup", "rl", "a", False)]}),
    Known("yaml-cannot-parse-line", "docs/check.md (Frontmatter is real YAML): a line YAML cannot parse is "
          "reported where libyaml notices it (often the next line; here, the frontmatter's last, that line), "
          "in libyaml's words",
          spec("just a string"),
          [E("E001", 3, "frontmatter is not valid YAML: cannot parse line: 'just a string'")], 1,
          [E("E001", 3, "frontmatter is not valid YAML: could not find expected ':'")], 1),
    Known("frontmatter-after-blank-line", "docs/check.md (E001): frontmatter that is there but not read (after a "
          "blank line) is named as such; tropo reports each required field missing",
          {X: "\n---\ns: a\n---\n"}, [E("E101", 1, "missing required field 's' for type 'spec'")], 1,
          [E("E001", 1, "frontmatter not recognised: its opening `---` is on line 2, and frontmatter is read only "
                        "when `---` is the file's first line; remove the blank lines above it")], 1),
    Known("h1-indented", "docs/check.md: an H1 indented by up to three spaces counts (CommonMark); tropo needs "
          "`#` in column 1, so its title falls back to the ID and `title: Ind` is no W210 there",
          {X: fm("s: a\ntitle: Ind", "   # Ind\n")}, [], 0,
          [E("W210", 3, "field 'title' equals its derived value (noise)")], 1),
    Known("block-nested-list", "docs/check.md (Frontmatter is real YAML): nested block lists are read, and a "
          "string-list holding one is E103 on the key's line; tropo reports E001 on the nested line",
          spec("sli:\n  -\n    - a\n  - b"),
          [E("E001", 5, "frontmatter is not valid YAML: unexpected indentation")], 1,
          [E("E103", 3, "field 'sli': expected a flat list")], 1),
    Known("mapping-inside-list", "docs/check.md (Frontmatter is real YAML): mappings inside lists are read, "
          "and a string-list holding one is E103 on the key's line; tropo reports E001 on the nested line",
          spec("sli:\n  - a: 1"),
          [E("E001", 4, "frontmatter is not valid YAML: mapping inside list is not supported in frontmatter")], 1,
          [E("E103", 3, "field 'sli': expected a flat list")], 1),
    Known("unknown-field-spec", "brief/contract exit codes: an unknown spec is a config error for us (exit 2); "
          "tropo reports each value as E103", spec("x: 1"),
          [E("E103", 3, "field 'x': unknown field spec 'strng'")], 1, [], 2, config=UNKNOWN_SPEC,
          ours_stderr="unknown field spec 'strng'"),
]


@pytest.mark.parametrize("known", [pytest.param(k, id=k.id) for k in KNOWN_DIFFERENCES])
def test_known_difference(known: Known, tropo: str, repo: Repo, cli: Any) -> None:
    _setup(repo, known.files, known.config)
    rc, theirs = tropo_json(tropo, repo.path, "check", *known.args, "--json")
    assert (rc, findings(theirs)) == (known.tropo_rc, known.tropo), "tropo changed: re-read the notes"
    ours = cli("check", *known.args, "--json", cwd=repo.path)
    assert ours.code == known.ours_rc
    if known.ours_rc == 2:
        assert ours.out == ""
        assert known.ours_stderr in ours.err
    else:
        assert findings(ours.json()) == known.ours
        assert ours.json()["checked"] == theirs["checked"]
    if known.graph:
        _, tg = tropo_json(tropo, repo.path, "graph", "--json")
        og = cli("graph", "--json", cwd=repo.path).json()
        assert og["nodes"] == tg["nodes"]
        assert edges(tg) == known.graph["tropo"]
        assert edges(og) == known.graph["ours"]


# --------------------------------------------------------------------------- generated vaults


def make_vault(dest: Path, notes: int, seed: int, *, wikilinks: bool) -> Path:
    if not MAKE_VAULT.exists():
        pytest.skip(f"{MAKE_VAULT} not found")
    env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull)
    cmd = [sys.executable, str(MAKE_VAULT), str(dest), "--notes", str(notes), "--seed", str(seed)]
    subprocess.run([*cmd, *(["--wikilinks"] if wikilinks else [])], check=True, env=env, capture_output=True)
    return dest


SEEDS = (1, 2)


@pytest.fixture(scope="module", params=SEEDS, ids=[f"seed{s}" for s in SEEDS])
def wiki_vault(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_vault(tmp_path_factory.mktemp("vault") / "vault", 240, request.param, wikilinks=True)


@pytest.fixture(scope="module")
def plain_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """No [[wikilinks]]: our wikilink edges would add outbound-edge text (query) and dependents (blast)."""
    return make_vault(tmp_path_factory.mktemp("plain") / "vault", 210, 5, wikilinks=False)


def test_vault_check_and_graph(wiki_vault: Path, tropo: str, cli: Any) -> None:
    rc, theirs = tropo_json(tropo, wiki_vault, "check", "--json")
    assert theirs["checked"] == 240 and Counter(f[3] for f in findings(theirs))["W220"] > 0
    for tree in ((), ("--rev", "HEAD")):
        ours = cli("check", *tree, "--json", cwd=wiki_vault)
        got = ours.json()
        # Our W221 (broken wikilinks) is documented; make_vault only links existing notes, so expect none.
        assert [f for f in findings(got) if f[3] != "W221"] == findings(theirs), tree
        assert summary(got) == summary(theirs), tree
        assert ours.code == rc
    _, tg = tropo_json(tropo, wiki_vault, "graph", "--json")
    og = cli("graph", "--rev", "HEAD", "--json", cwd=wiki_vault).json()
    assert og["nodes"] == tg["nodes"] and og["counts"]["nodes"] == tg["counts"]["nodes"]
    assert edges(og, drop_fields=("wikilink",)) == edges(tg)
    assert og["root"] == tg["root"]
    # wikilinks only add edges: whoever depends on a node for tropo depends on it for us, no farther away
    target = Counter(e[2] for e in edges(tg) if not e[3]).most_common(1)[0][0]
    _, tb = tropo_json(tropo, wiki_vault, "blast", target, "--json")
    ob = cli("blast", target, "--json", cwd=wiki_vault).json()
    ours_dist = {i["id"]: i["distance"] for i in ob["impacted"]}
    assert all(i["id"] in ours_dist and ours_dist[i["id"]] <= i["distance"] for i in tb["impacted"])


QUERIES = [("graph", "memory"), ("the", "of"), ("status", "blocked"), ("module-000015",), ("related_modules",)]
QUERY_FLAGS = [("--k", "25", "--type", "module", "--type", "gate"), ("--path", "decisions/*"),
               ("--edge", "related_modules"), ("--edge", ":module-000015", "--k", "3")]


def _hits(doc: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["id"], r["score"], r["type"], r["path"], r["title"]) for r in doc["results"]]


@pytest.mark.parametrize("words", QUERIES, ids=["-".join(q) for q in QUERIES])
def test_vault_query(words: tuple[str, ...], plain_vault: Path, tropo: str, cli: Any) -> None:
    rc, theirs = tropo_json(tropo, plain_vault, "query", *words, "--json")
    ours = cli("query", *words, "--rev", "HEAD", "--json", cwd=plain_vault)
    assert ours.code == rc == 0
    assert _hits(ours.json()) == _hits(theirs)
    assert ours.json()["results"] == theirs["results"]  # snippets too


@pytest.mark.parametrize("flags", QUERY_FLAGS, ids=["".join(f) for f in QUERY_FLAGS])
def test_vault_query_filters(flags: tuple[str, ...], plain_vault: Path, tropo: str, cli: Any) -> None:
    _, theirs = tropo_json(tropo, plain_vault, "query", "graph", "memory", *flags, "--explain", "--json")
    ours = cli("query", "graph", "memory", *flags, "--explain", "--json", cwd=plain_vault).json()
    assert _hits(ours) == _hits(theirs)
    assert ours["filters"] == theirs["filters"]
    # tropo lists an edge twice when a list repeats its target; we keep one (see test_duplicate_edge_query)
    assert [(r["reasons"], r.get("edges")) for r in ours["results"]] == \
        [(r["reasons"], _unique(r.get("edges"))) for r in theirs["results"]]


@pytest.mark.parametrize("flags", QUERY_FLAGS[2:], ids=["".join(f) for f in QUERY_FLAGS[2:]])
def test_vault_query_with_edge_filters_and_no_text(flags: tuple[str, ...], plain_vault: Path, tropo: str,
                                                   cli: Any) -> None:
    """"Everything that links to X": tropo answers `query "" --edge ...` with every node the filters pass (the edge
    bonus alone, ordered by path); we answer it, and the same with no TEXT at all."""
    _, theirs = tropo_json(tropo, plain_vault, "query", "", *flags, "--k", "250", "--explain", "--json")
    assert theirs["results"], theirs
    for text in ([""], []):
        ours = cli("query", *text, *flags, "--k", "250", "--explain", "--json", cwd=plain_vault)
        assert ours.code == 0, ours.err
        got = ours.json()
        assert _hits(got) == _hits(theirs) and got["filters"] == theirs["filters"] and got["query"] == ""
        assert [(r["reasons"], r.get("edges")) for r in got["results"]] == \
            [(r["reasons"], _unique(r.get("edges"))) for r in theirs["results"]]
        assert [r["snippet"] for r in got["results"]] == [r["snippet"] for r in theirs["results"]]


def test_query_k_zero_is_a_usage_error(plain_vault: Path, tropo: str, cli: Any) -> None:
    """Documented in docs/query.md: `--k 0` asks for nothing; tropo answers no results (exit 0), we exit 2."""
    rc, theirs = tropo_json(tropo, plain_vault, "query", "graph", "memory", "--k", "0", "--json")
    assert (rc, theirs["k"], theirs["results"]) == (0, 0, [])
    ours = cli("query", "graph", "memory", "--k", "0", "--json", cwd=plain_vault)
    assert ours.code == 2 and ours.out == ""
    assert "argument --k: must be a whole number of at least 1, got '0'" in ours.err


def _unique(items: list[Any] | None) -> list[Any] | None:
    return None if items is None else [x for i, x in enumerate(items) if x not in items[:i]]


def test_duplicate_edge_query(tropo: str, repo: Repo, cli: Any) -> None:
    """Documented in docs/check.md (edges are a set): `rl: [y, y]` is two edges for tropo, one for us, so
    tropo's outbound-edge text 'rl y rl y' scores the term twice (30 + 8 + 8 against our 30 + 8) and its
    --explain lists the edge twice. Everything else about the two hits is the same."""
    _setup(repo, {"x.md": fm("rl: [y, y]"), "y.md": "# Y\n"}, WITH_RL)
    _, theirs = tropo_json(tropo, repo.path, "query", "y", "--explain", "--json")
    ours = cli("query", "y", "--explain", "--json", cwd=repo.path).json()
    y = {"id": "y", "type": None, "path": "y.md", "title": "Y", "score": 326, "snippet": "# Y",
         "reasons": ["title/id match", "path match", "body match"], "edges": []}
    x = {"id": "x", "type": None, "path": "x.md", "title": "T", "snippet": "# T",
         "reasons": ["frontmatter match", "edge context match"]}
    edge = {"field": "rl", "to": "y"}
    assert theirs["results"] == [y, {**x, "score": 174, "edges": [edge, edge]}]
    assert ours["results"] == [y, {**x, "score": 166, "edges": [edge]}]


def _targets(tropo_graph: Mapping[str, Any]) -> list[str]:
    indeg = Counter(e[2] for e in edges(tropo_graph) if not e[3])
    leaf = next(n["id"] for n in tropo_graph["nodes"] if n["id"] not in indeg)
    return [indeg.most_common(1)[0][0], leaf]


def test_vault_blast(plain_vault: Path, tropo: str, cli: Any) -> None:
    _, tg = tropo_json(tropo, plain_vault, "graph", "--json")
    og = cli("graph", "--json", cwd=plain_vault).json()
    assert (og["nodes"], edges(og)) == (tg["nodes"], edges(tg))
    for target in _targets(tg):
        for depth in ((), ("--depth", "1"), ("--depth", "3")):
            _, tb = tropo_json(tropo, plain_vault, "blast", target, *depth, "--json")
            ob = cli("blast", target, *depth, "--rev", "HEAD", "--json", cwd=plain_vault).json()
            assert (ob["target"], ob["depth"], ob["counts"]) == (tb["target"], tb["depth"], tb["counts"]), target
            assert ob["impacted"] == tb["impacted"], (target, depth)
            assert ob["root"] == tb["root"] == str(plain_vault)
