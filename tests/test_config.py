"""config.py: the exclude rule, held to the contract's wording on random paths and patterns; where in a config
file a bad value is."""

from __future__ import annotations

import random
import tomllib
from typing import Any

import pytest
from conftest import Repo

from vivary_git.config import BUILTIN_EXCLUDES, Config, excluder, toml_line


def contract_rule(patterns: list[str], path: str) -> bool:
    """The rule as vivary-contract.md states it, written for clarity, not speed: a bare name excludes
    any path segment with that name; a pattern with a slash is a prefix; a trailing `/**` is stripped."""
    for raw in [*BUILTIN_EXCLUDES, *patterns]:
        pat = raw.strip()
        if pat.endswith("/**"):
            pat = pat[:-3]
        pat = pat.strip("/") if "/" in pat.strip("/") else pat.rstrip("/")
        if not pat:
            continue
        if "/" in pat:
            if path == pat or path.startswith(pat + "/"):
                return True
        elif pat in path.split("/"):
            return True
    return False


SEGMENTS = ["a", "b", "ab", "a.md", "b.md", "node_modules", ".git", "x y", "é"]


def _pattern(rng: random.Random) -> str:
    body = "/".join(rng.choice(SEGMENTS) for _ in range(rng.randint(1, 3)))
    return rng.choice(["", "/", " "]) + body + rng.choice(["", "/", "/**", " ", "/**/", "//"])


def test_excluder_is_the_contract_rule() -> None:
    rng = random.Random(20261201)
    for _ in range(400):
        patterns = [_pattern(rng) for _ in range(rng.randint(0, 6))]
        excluded = excluder(Config(source="tropo.toml", exclude=tuple(patterns)))
        for _ in range(25):
            path = "/".join(rng.choice(SEGMENTS) for _ in range(rng.randint(1, 4)))
            assert excluded(path) == contract_rule(patterns, path), (patterns, path)
            name = path.rsplit("/", 1)[-1]
            parent = path.rsplit("/", 1)[0] if "/" in path else ""
            if not parent or not contract_rule(patterns, parent):  # `entry`: the ancestors have passed
                assert excluded.entry(name, path) == contract_rule(patterns, path), (patterns, path)


def test_a_long_exclude_list_keeps_its_meaning(repo: Repo, cli: Any) -> None:
    """Thousands of entries from the root, a pack and an overlay (bench/bench_config.py times 200,000)."""
    noise = [f"n{i}" if i % 2 else f"d{i}/s{i}/**" for i in range(5000)]
    toml = lambda items: "version = 1\nexclude = [" + ", ".join(f'"{x}"' for x in items) + "]\n"  # noqa: E731
    files = {
        "keep.md": "# Keep\n", "skip/x.md": "# X\n", "a/b/y.md": "# Y\n", "a/c/z.md": "# Z\n",
        "sub/q/w.md": "# W\n", "sub/r.md": "# R\n", "p/v.md": "# V\n",
        ".tropo/packs/big.toml": toml([*noise, "p"]),
        "sub/tropo.toml": toml([*noise, "q"]),
    }
    repo.commit(files={**files, "tropo.toml": toml(["skip", "a/b/**"]).replace("version = 1", "version = 1\npacks = []")
                       .replace("packs = []", 'packs = ["big"]')})
    short = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()["nodes"]
    repo.commit(files={"tropo.toml": toml([*noise, "skip", *noise, "a/b/**"]).replace(
        "version = 1", 'version = 1\npacks = ["big"]')})
    long = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()["nodes"]
    assert long == short
    assert sorted(n["path"] for n in long) == ["a/c/z.md", "keep.md", "sub/r.md"]


def test_guidance_files_are_known_by_name_and_by_path_at_any_depth() -> None:
    """`is_guidance` (the tree walk asks it of every path): by file name in any folder, and by a guidance path at
    the top or below it; a folder merely named like one, or a path that holds one only as part of a name, is not."""
    from vivary_git.config import is_guidance

    yes = ["AGENTS.md", "sub/CLAUDE.md", ".github/copilot-instructions.md", "sub/.github/copilot-instructions.md",
           ".cursor/rules/x.mdc", "a/b/.cursor/rules/x.md", ".github/instructions/x.md", "a/.github/instructions/y.md",
           ".kiro/steering/tech.md", "a/.kiro/steering/product.md", ".roo/rules/01-general.md", "a/.roo/rules/x.md",
           "AGENT.md", "sub/AGENT.md", ".continue/rules/vivary.md", "a/.continue/rules/x.md"]
    no = ["notes/agents.md", "my.github/copilot-instructions.md", "a/x.cursor/rules/x.md", "a/.github/other.md",
          "a/.cursor/x.md", ".github/instructionsx.md", "AGENTS.mdx", "a/github/instructions/x.md",
          ".kiro/specs/x/requirements.md", "a/.kiro/steeringx.md", ".roo/notes.md", "a/roo/rules/x.md",
          ".continue/mcpServers/x.md", "a/continue/rules/x.md"]
    assert [p for p in yes if not is_guidance(p)] == []
    assert [p for p in no if is_guidance(p)] == []


_TOML = """\
# a config with every way TOML names a key
dialect = "obsidian"          # [links] in a comment is no table
exclude = [
  "case = 1",                 # an item that looks like a key
  "[links]",
]
note = \"\"\"
[wikilinks]
field = "x"
\"\"\"
wikilinks.enabled = true

[links]
"case" = "upper"
ids = { kind = "path" }

[types."my type"]
folder = ["a",
  "b"]
required = { title = "strnig", status = "enum:a" }

[[overlays]]
name = "x"
"""


@pytest.mark.parametrize(("key", "line"), [
    (("dialect",), 2), (("exclude",), 3), (("wikilinks", "enabled"), 11), (("wikilinks",), 11),
    (("links",), 13), (("links", "case"), 14), (("links", "ids"), 15), (("links", "ids", "kind"), 15),
    (("types", "my type"), 17), (("types", "my type", "folder"), 18),
    (("types", "my type", "required", "status"), 20), (("overlays", "name"), 23),
    (("types",), 17), (("nowhere",), None), (("links", "markdown"), 13),
])
def test_a_value_is_found_on_the_line_that_sets_it(key: tuple[str, ...], line: int | None) -> None:
    """A config error names its file's line (STYLE: file, line and fix): the key's own line, else the line of
    the nearest key or table that holds it; never a line inside an array or a multi-line string."""
    assert tomllib.loads(_TOML)  # the text is TOML, as the files it reads are
    assert toml_line(_TOML, key) == line


def test_a_bad_spec_in_tropo_toml_names_its_line(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": 'version = 1\n\n[types.note]\nfolder = "notes"\nrequired = { title = "strnig" }\n',
                       "notes/a.md": "# A\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2 and r.err.startswith("git vivary check: tropo.toml:5: [types.note] required.title: unknown "
                                            "field spec 'strnig'"), r.err


def test_a_config_file_that_is_a_link_or_a_submodule_is_said_so(repo: Repo, cli: Any, tmp_path: Any) -> None:
    """A tree holds a symbolic link as a blob of the path it points to: `tropo.toml -> real/tropo.toml` was read
    as TOML ("invalid TOML: Expected '=' after a key"), and a submodule entry named `tropo.toml` or
    `.vivary/graph.toml` (a commit this repository need not have) was a traceback. A link is refused by name, as
    `.vivary/memory.toml` is; a folder or submodule of a config file's name is no config file."""
    import os

    repo.commit(files={"a.md": "# A\n", "real/tropo.toml": "version = 1\n", "real/graph.toml": "dialect = 5\n"})
    link = "is a symbolic link in the tree; commit the file itself instead"
    for name, target in (("tropo.toml", "real/tropo.toml"), (".vivary/graph.toml", "../real/graph.toml"),
                         ("sub/tropo.toml", "../real/tropo.toml")):
        (repo.path / name).parent.mkdir(exist_ok=True)
        os.symlink(target, repo.path / name)
        if name.startswith("sub/"):
            repo.write({"tropo.toml": "version = 1\n", "sub/s.md": "# S\n"})
        repo.commit(f"link {name}")
        for where in (("--rev", "HEAD"), ("--staged",), ()):
            r = cli("check", *where, cwd=repo.path)
            assert r.code == 2 and r.err == f"git vivary check: {name}: {link}\n", (name, where, r.err)
        repo.git("rm", "-q", "-r", "--", name, *(["tropo.toml", "sub"] if name.startswith("sub/") else []))
        repo.commit(f"unlink {name}")
    # A submodule (gitlink) or a folder where a config file would be: not one, and no traceback.
    fake = "1234567890123456789012345678901234567890"
    for name in ("tropo.toml", ".vivary/graph.toml"):
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{fake},{name}")
        repo.git("commit", "-q", "-m", f"submodule {name}")
        for args in (("check", "--rev", "HEAD"), ("check", "--staged"), ("graph", "--json", "--rev", "HEAD"),
                     ("ci",), ("doctor",)):
            r = cli(*args, cwd=repo.path)
            assert r.code in (0, 1) and "Traceback" not in r.err, (name, args, r.err)
        assert cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()["counts"]["nodes"] == 1
        repo.git("rm", "-q", "--cached", "--", name)
        repo.commit(f"drop {name}")
    # A folder of config files that is a link is refused by name too: the tree does not follow it to the files.
    (repo.path / "real" / "packs").mkdir()
    (repo.path / "real" / "packs" / "mine.toml").write_text('[types.x]\nfolder = "x"\n')
    for folder, target in ((".vivary", "real"), (".tropo", "real")):
        os.symlink(target, repo.path / folder)
        repo.commit(f"link {folder}", {"tropo.toml": 'version = 1\npacks = ["mine"]\n'} if folder == ".tropo" else {})
        r = cli("check", "--rev", "HEAD", cwd=repo.path)
        assert r.code == 2 and r.err == (f"git vivary check: {folder}: is a symbolic link in the tree, so no config "
                                         "file in it can be read; commit the folder itself instead\n"), r.err
        repo.git("rm", "-q", "--", folder, *(["tropo.toml"] if folder == ".tropo" else []))
        repo.commit(f"unlink {folder}")
    repo.commit("a folder", {"tropo.toml/x": "x\n"})
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
    # An editor's settings file may be a link (to a dotfiles repository): it is read as before, not refused.
    (repo.path / ".vscode").mkdir()
    os.symlink("/nonexistent/settings.json", repo.path / ".vscode" / "settings.json")
    repo.commit("settings link")
    assert cli("check", "--rev", "HEAD", cwd=repo.path).code == 0
    # In a plain folder, the same link is refused too, not read as zero-config.
    plain = tmp_path / "plain"
    (plain / "real").mkdir(parents=True)
    (plain / "a.md").write_text("# A\n")
    (plain / "real" / "tropo.toml").write_text("version = 1\n")
    os.symlink("real/tropo.toml", plain / "tropo.toml")
    r = cli("check", cwd=plain)
    assert r.code == 2 and "git vivary check: tropo.toml: is a symbolic link; replace it with the file itself" in r.err


_THIN_RULES = '[types.decision]\nfolder = "decisions"\nrequired = { status = "enum:proposed|accepted" }\n'


def test_a_thin_workspace_is_known_by_its_contract_where_vivary_writes_it(repo: Repo, cli: Any) -> None:
    """The published Vivary tools write the contract in the `[workspace]` table; such a workspace was read as
    zero-config (its types and rules ignored, its root not found from a subfolder)."""
    repo.commit(files={"ws/.vivary/workspace.toml": f'version = 1\n[workspace]\ncontract = "thin-v0.3"\n{_THIN_RULES}',
                       "ws/decisions/a.md": "---\nstatus: maybe\n---\n# A\n"})
    for cwd in (repo.path / "ws", repo.path / "ws" / "decisions"):
        r = cli("check", "--rev", "HEAD", cwd=cwd)
        assert r.code == 1 and "decisions/a.md:2: error E103: field 'status'" in r.out, (cwd, r.out, r.err)
    # A file that names no contract marks no workspace, as before.
    repo.commit(files={"ws/.vivary/workspace.toml": f"version = 1\n{_THIN_RULES}"})
    assert cli("check", "--rev", "HEAD", cwd=repo.path / "ws").code == 0


@pytest.mark.parametrize(("text", "said"), [
    (f"version = 1\ncontract = 5\n{_THIN_RULES}", ":2: contract = 5 (not a string) is not a Vivary workspace contract"),
    (f'version = 1\n\n[workspace]\ncontract = "thin-v3"\n{_THIN_RULES}',
     ":4: [workspace] contract = 'thin-v3' is not a Vivary workspace contract"),
])
def test_a_contract_no_workspace_has_is_a_config_error(repo: Repo, cli: Any, tmp_path: Any, text: str,
                                                       said: str) -> None:
    """`contract = 5` or an unknown contract was read as no contract at all: zero-config, every rule of the file
    silently dropped. It names the file, the line and the contracts that exist, wherever the file is found from."""
    fix = '; the contracts that exist: "thin-v0.3"; write contract = "thin-v0.3"'
    repo.commit(files={"ws/.vivary/workspace.toml": text, "ws/decisions/a.md": "---\nstatus: maybe\n---\n# A\n"})
    for cwd in (repo.path / "ws", repo.path / "ws" / "decisions"):
        for where in (("--rev", "HEAD"), ("--staged",), ()):
            r = cli("check", *where, cwd=cwd)
            assert r.code == 2 and r.err.startswith(f"git vivary check: ws/.vivary/workspace.toml{said}{fix}"), \
                (cwd, where, r.err)
    plain = tmp_path / "plain"
    (plain / ".vivary").mkdir(parents=True)
    (plain / ".vivary" / "workspace.toml").write_text(text)
    r = cli("check", cwd=plain)
    assert r.code == 2 and r.err.startswith(f"git vivary check: .vivary/workspace.toml{said}{fix}"), r.err


@pytest.mark.parametrize(("file", "text", "said"), [
    ("tropo.toml", 'version = 1\n\n[types.note]\nfolder = "/"\n',
     "tropo.toml:4: [types.note]: folder '/' is absolute, so no folder has that name"),
    ("tropo.toml", 'version = 1\n[types.note]\nfolder = ["notes", "../notes"]\n',
     "tropo.toml:3: [types.note]: folder '../notes' leaves the workspace through `..`"),
    ("tropo.toml", 'version = 1\nexclude = ["drafts", "../.."]\n',
     "tropo.toml:2: exclude: '../..' leaves the workspace through `..`, so it names nothing in it; write a path "
     "from the workspace root"),
    (".vivary/graph.toml", 'exclude = ["Templates/**", "a/../../b/*.md"]\n',
     ".vivary/graph.toml:1: exclude: 'a/../../b/*.md' leaves the workspace through `..`"),
])
def test_a_path_out_of_the_workspace_is_a_config_error(repo: Repo, cli: Any, file: str, text: str, said: str) -> None:
    """`folder = "/"` or `exclude = ["../.."]` was taken and matched nothing: a rule silently doing nothing. A
    path that is absolute or leaves the workspace names nothing in it: the file, the line and the fix."""
    repo.commit(files={file: text, "notes/a.md": "# A\n"})
    for where in (("--rev", "HEAD"), ()):
        r = cli("check", *where, cwd=repo.path)
        assert r.code == 2 and r.err.startswith(f"git vivary check: {said}"), (where, r.err)


def test_paths_from_the_workspace_root_are_kept(repo: Repo, cli: Any) -> None:
    """What a path rule does mean is not refused: a leading `/` is the workspace root in an exclude (and a
    gitignore glob), a bare name may start with `~` or hold dots."""
    repo.commit(files={"tropo.toml": 'version = 1\nexclude = ["/archive/2024", "~tmp", "a..b"]\n'
                                     '[types.note]\nfolder = "notes"\n',
                       ".vivary/graph.toml": 'exclude = ["/drafts/**"]\n',
                       "notes/a.md": "# A\n", "archive/2024/b.md": "# B\n", "drafts/c.md": "# C\n",
                       "~tmp/d.md": "# D\n"})
    nodes = cli("graph", "--json", "--rev", "HEAD", cwd=repo.path).json()["nodes"]
    assert [(n["id"], n["type"]) for n in nodes] == [("a", "note")]
