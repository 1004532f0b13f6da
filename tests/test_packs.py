"""Packs, nested overlays and the tighten-only merge (`vivary_git.packs`)."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable, Mapping
from typing import Any

import pytest
from conftest import Repo

from vivary_git.config import build_config
from vivary_git.errors import ConfigError
from vivary_git.packs import BUNDLED_PACKS, EXCLUDE_UNDER, excluder_for, merge, merge_packs, overlay_configs

ReadFile = Callable[[str], bytes | None]


def toml(text: str) -> dict[str, Any]:
    return tomllib.loads(text)


def reader(files: Mapping[str, str] | None = None) -> ReadFile:
    """A `read_file` over an in-memory tree, like the one `source.py` builds over a Git tree."""
    data = {k: v.encode() for k, v in (files or {}).items()}
    return data.get


def layered(*layers: str) -> dict[str, Any]:
    """Merge TOML layers in order; the first is named `a.toml`, the next `b.toml`, …"""
    out: dict[str, Any] = {}
    for i, text in enumerate(layers):
        out = merge(out, toml(text), source=f"{'abcdef'[i]}.toml")
    return out


def refused(*layers: str) -> str:
    with pytest.raises(ConfigError) as info:
        layered(*layers)
    return str(info.value)


DECISION = """
[types.decision]
folder = "decisions"
required = { status = "enum:proposed|accepted|superseded", date = "date" }
optional = { supersedes = "ref", note = "string" }
"""


# --- allowed: every tightening in the table --------------------------------------------------------


def test_adding_a_type_and_fields_is_allowed() -> None:
    out = layered(DECISION, """
        [types.decision]
        required = { owner = "string" }
        optional = { deciders = "string-list" }
        [types.runbook]
        folder = ["runbooks", "ops"]
        [types.spec]
    """)
    d = out["types"]["decision"]
    assert d["required"] == {"status": "enum:proposed|accepted|superseded", "date": "date", "owner": "string"}
    assert d["optional"] == {"supersedes": "ref", "note": "string", "deciders": "string-list"}
    assert out["types"]["runbook"]["folder"] == ["runbooks", "ops"]
    assert out["types"]["spec"]["folder"] == ["spec"]  # a NEW type without `folder` is named by its type


def test_optional_to_required_is_allowed_and_leaves_optional() -> None:
    out = layered(DECISION, '[types.decision]\nrequired = { supersedes = "ref" }\n')
    d = out["types"]["decision"]
    assert d["required"]["supersedes"] == "ref"
    assert "supersedes" not in d["optional"]


def test_optional_to_required_may_narrow_an_enum() -> None:
    out = layered('[base.optional]\nlevel = "enum:a|b|c"\n', '[base.required]\nlevel = "enum:a|b"\n')
    assert out["base"]["required"] == {"level": "enum:a|b"} and out["base"]["optional"] == {}


@pytest.mark.parametrize("table", ["required", "optional"])
def test_narrowing_an_enum_is_allowed(table: str) -> None:
    first = f'[types.t]\n{table} = {{ s = "enum:a|b|c" }}\n'
    out = layered(first, f'[types.t]\n{table} = {{ s = "enum:c|a" }}\n')
    assert out["types"]["t"][table]["s"] == "enum:c|a"


def test_repeating_the_same_spec_is_allowed_and_compared_by_meaning() -> None:
    out = layered(DECISION, """
        [types.decision]
        required = { status = "enum: superseded | accepted | proposed", date = "date" }
        optional = { supersedes = "ref" }
    """)
    assert out["types"]["decision"]["required"]["date"] == "date"


def test_excludes_derive_and_folders_are_unioned_in_first_seen_order() -> None:
    out = layered(
        'exclude = ["drafts", "README.md"]\n[base]\nderive = ["id"]\n'
        '[types.decision]\nfolder = "decisions"\n',
        'exclude = ["README.md", "archive/**"]\n[base]\nderive = ["title", "id"]\n'
        '[types.decision]\nfolder = ["adr", "decisions"]\n',
    )
    assert out["exclude"] == ["drafts", "README.md", "archive/**"]
    assert out["base"]["derive"] == ["id", "title"]
    assert out["types"]["decision"]["folder"] == ["decisions", "adr"]


def test_existing_type_without_folder_adds_no_folder() -> None:
    # Deliberate difference: tropo would add a folder `decision` here.
    out = layered(DECISION, '[types.decision]\nrequired = { owner = "string" }\n')
    assert out["types"]["decision"]["folder"] == ["decisions"]


def test_allow_untyped_may_tighten_and_last_value_wins() -> None:
    def allow(*layers: str) -> object:
        return layered(*layers)["base"]["allow_untyped"]

    assert allow("[base]\nallow_untyped = true\n", "[base]\nallow_untyped = false\n") is False
    assert allow("[base]\nallow_untyped = false\n", "[base]\nallow_untyped = false\n") is False
    assert "allow_untyped" not in layered(DECISION)["base"]  # absent = build_config's default


def test_strict_false_over_the_default_is_allowed() -> None:
    # The default (true) is not in the dict, so only an explicit `strict = true` binds later layers.
    assert layered("[base]\n", "[base]\nstrict = false\n")["base"]["strict"] is False
    assert layered("[base]\nstrict = false\n", "[base]\nstrict = true\n")["base"]["strict"] is True


def test_timezone_last_layer_wins() -> None:
    assert layered('[base]\ntimezone = "UTC"\n', '[base]\ntimezone = "Europe/Paris"\n')["base"]["timezone"] \
        == "Europe/Paris"


def test_merge_does_not_mutate_its_inputs() -> None:
    current = layered(DECISION)
    add = toml('exclude = ["x"]\n[types.decision]\nfolder = "adr"\nrequired = { supersedes = "ref" }\n')
    before_current, before_add = copy.deepcopy(current), copy.deepcopy(add)
    merge(current, add, source="x.toml")
    assert current == before_current and add == before_add


# --- refused: every loosening, E120 naming file, field, old and new spec -----------------------------


def test_widening_a_required_enum_is_e120_with_the_documented_message() -> None:
    msg = refused(DECISION, '[types.decision]\nrequired = { status = "enum:accepted|weird" }\n')
    assert msg.startswith(
        "E120: b.toml: type 'decision' field 'status': 'enum:accepted|weird' loosens "
        "'enum:proposed|accepted|superseded'; an overlay may only tighten rules"
    )
    assert "keep 'enum:proposed|accepted|superseded' or a subset of its values" in msg


@pytest.mark.parametrize(("old", "new"), [
    ("enum:proposed|accepted|superseded", "string"),  # enum → string
    ("string", "enum:a|b"),  # string → enum: "any change except an enum subset"
    ("ref", "string"),
    ("string-list", "ref-list"),
    ("date", "datetime"),
])
@pytest.mark.parametrize("table", ["required", "optional"])
def test_changing_a_spec_is_e120(old: str, new: str, table: str) -> None:
    msg = refused(f'[types.t]\n{table} = {{ f = "{old}" }}\n', f'[types.t]\n{table} = {{ f = "{new}" }}\n')
    assert msg.startswith(f"E120: b.toml: type 't' field 'f': {new!r} loosens {old!r}; ")


def test_required_to_optional_is_e120() -> None:
    msg = refused(DECISION, '[types.decision]\noptional = { date = "date" }\n')
    assert msg.startswith(
        "E120: b.toml: type 'decision' field 'date': optional 'date' loosens required 'date'"
    )
    assert "required->optional" in msg and "remove 'date' from this optional table" in msg


def test_optional_to_required_cannot_also_loosen_the_spec() -> None:
    msg = refused(DECISION, '[types.decision]\nrequired = { supersedes = "string" }\n')
    assert msg.startswith("E120: b.toml: type 'decision' field 'supersedes': 'string' loosens 'ref'")


def test_base_fields_follow_the_same_rules() -> None:
    msg = refused('[base.optional]\nassignee = "enum:a|b"\n', '[base.optional]\nassignee = "string"\n')
    assert msg.startswith("E120: b.toml: base field 'assignee': 'string' loosens 'enum:a|b'")
    msg = refused('[base.required]\nowner = "string"\n', '[base.optional]\nowner = "string"\n')
    assert msg.startswith("E120: b.toml: base field 'owner': optional 'string' loosens required 'string'")


def test_allow_untyped_false_to_true_is_e120() -> None:
    msg = refused("[base]\nallow_untyped = false\n", "[base]\nallow_untyped = true\n")
    assert msg.startswith("E120: b.toml: base.allow_untyped: true loosens an inherited false; ")
    assert "set it to false" in msg


def test_explicit_strict_true_to_false_is_e120() -> None:
    msg = refused("[base]\nstrict = true\n", "[base]\nstrict = false\n")
    assert msg.startswith("E120: b.toml: base.strict: false loosens an inherited true; ")


def test_the_refusal_names_the_layer_that_loosens_not_the_first() -> None:
    msg = refused(DECISION, '[types.x]\n', '[types.decision]\nrequired = { date = "string" }\n')
    assert msg.startswith("E120: c.toml: ")


@pytest.mark.parametrize(("text", "expected"), [
    ('[types.t]\nrequired = { f = "strng" }\n', "b.toml: [types.t] required.f: unknown field spec 'strng'"),
    ('[types.t]\nrequired = { f = 3 }\n', "b.toml: [types.t] required.f: field spec must be a string"),
    ("types = 3\n", "b.toml: [types] must be a table"),
    ('[types]\nt = "x"\n', "b.toml: [types.t] must be a table"),
    ('[base]\nallow_untyped = "no"\n', "b.toml: base.allow_untyped must be true or false"),
    ("exclude = [1]\n", "b.toml: exclude must be a string or a list of strings"),
])
def test_invalid_layers_are_config_errors_naming_the_file(text: str, expected: str) -> None:
    msg = refused("", text)
    assert msg.startswith(expected)
    assert not msg.startswith("E120")


# --- packs --------------------------------------------------------------------------------------------


def test_bundled_dev_project_pack() -> None:
    out = merge_packs(toml('version = 1\npacks = ["dev-project"]\n'), reader())
    assert set(out["types"]) == {"decision", "runbook", "spec"}
    d = out["types"]["decision"]
    assert d["folder"] == ["decisions"]
    assert d["required"] == {"status": "enum:proposed|accepted|superseded", "date": "date"}
    assert d["optional"] == {"supersedes": "ref", "superseded_by": "ref", "deciders": "string-list"}
    assert out["types"]["runbook"]["folder"] == ["runbooks"] and out["types"]["spec"]["folder"] == ["specs"]
    assert "packs" not in out and out["version"] == 1


def test_bundled_coordination_and_repo_graph_packs() -> None:
    coord = merge_packs(toml('packs = ["coordination"]\n'), reader())
    assert coord["base"]["optional"] == {"assignee": "string"}
    graph = merge_packs(toml('packs = ["repo-graph"]\n'), reader())
    assert set(graph["types"]) == {"module", "implementation_slice", "decision", "verification", "gate"}
    assert graph["types"]["implementation_slice"]["folder"] == ["changes"]
    # The published schema keeps related_* as plain strings, so they make no edges.
    assert graph["types"]["module"]["optional"]["related_modules"] == "string-list"


@pytest.mark.parametrize("name", BUNDLED_PACKS)
def test_every_bundled_pack_builds_a_valid_config(name: str) -> None:
    config = build_config(merge_packs(toml(f'packs = ["{name}"]\n'), reader()), None)
    assert config.source == "tropo.toml"


def test_workspace_pack_beats_bundled_pack() -> None:
    files = {".tropo/packs/dev-project.toml": '[types.adr]\nrequired = { status = "string" }\n'}
    out = merge_packs(toml('packs = ["dev-project"]\n'), reader(files))
    assert set(out["types"]) == {"adr"}


def test_unknown_pack_names_the_pack_where_it_looked_and_the_fix() -> None:
    with pytest.raises(ConfigError) as info:
        merge_packs(toml('packs = ["nope"]\n'), reader())
    msg = str(info.value)
    assert msg.startswith("tropo.toml: pack 'nope' not found: looked for .tropo/packs/nope.toml")
    assert "bundled packs (coordination, dev-project, repo-graph)" in msg
    assert "add .tropo/packs/nope.toml" in msg and "remove 'nope' from packs" in msg


@pytest.mark.parametrize("name", ["../secrets", ".hidden", "a/b", ""])
def test_pack_names_cannot_be_paths(name: str) -> None:
    with pytest.raises(ConfigError, match="is not a pack name"):
        merge_packs({"packs": [name]}, reader({f".tropo/packs/{name}.toml": ""}))


def test_packs_must_be_a_list() -> None:
    with pytest.raises(ConfigError, match=r"tropo.toml: packs must be a list of pack names"):
        merge_packs({"packs": "dev-project"}, reader())


def test_a_pack_cannot_list_packs() -> None:
    files = {".tropo/packs/a.toml": 'packs = ["coordination"]\n'}
    with pytest.raises(ConfigError, match=r"^\.tropo/packs/a\.toml: a pack cannot list other packs"):
        merge_packs(toml('packs = ["a"]\n'), reader(files))


def test_a_pack_with_invalid_toml_is_named() -> None:
    with pytest.raises(ConfigError, match=r"^\.tropo/packs/a\.toml: invalid TOML"):
        merge_packs(toml('packs = ["a"]\n'), reader({".tropo/packs/a.toml": "[types\n"}))


def test_merge_order_is_packs_in_order_then_the_root() -> None:
    files = {
        ".tropo/packs/one.toml": '[types.t]\nfolder = "one"\noptional = { s = "enum:a|b|c" }\n',
        ".tropo/packs/two.toml": '[types.t]\nfolder = "two"\noptional = { s = "enum:a|b" }\n',
    }
    out = merge_packs(toml('packs = ["one", "two"]\n[types.t]\nrequired = { s = "enum:a" }\n'), reader(files))
    assert out["types"]["t"] == {"folder": ["one", "two"], "required": {"s": "enum:a"}, "optional": {}}
    # Reversed, `two` is loosened by `one`: the later pack is the one named.
    with pytest.raises(ConfigError, match=r"^E120: \.tropo/packs/one\.toml: type 't' field 's'"):
        merge_packs(toml('packs = ["two", "one"]\n'), reader(files))


def test_the_root_config_cannot_loosen_its_packs() -> None:
    root = toml('packs = ["dev-project"]\n[types.decision]\nrequired = { status = "string" }\n')
    with pytest.raises(ConfigError) as info:
        merge_packs(root, reader())
    assert str(info.value).startswith(
        "E120: tropo.toml: type 'decision' field 'status': 'string' loosens "
        "'enum:proposed|accepted|superseded'"
    )


def test_merge_packs_keeps_other_root_keys_and_is_idempotent() -> None:
    root = toml('version = 1\nname = "ws"\npacks = ["coordination"]\n[workspace]\ncontract = "thin-v0.3"\n')
    out = merge_packs(root, reader())
    assert out["name"] == "ws" and out["workspace"] == {"contract": "thin-v0.3"}
    assert merge_packs(out, reader()) == out


# --- nested overlays ----------------------------------------------------------------------------------

ROOT = """version = 1
exclude = ["README.md"]
[types.decision]
folder = "decisions"
required = { status = "enum:proposed|accepted" }
"""


def test_overlay_tightens_and_rebases_excludes() -> None:
    # The notes' tw6 example.
    files = {"sub/tropo.toml": 'exclude = ["skip", "deep/s2.md", "./drafts/**", "/x/"]\n'
                               "[base]\nallow_untyped = false\n"
                               '[types.decision]\nrequired = { owner = "string" }\n'}
    out = overlay_configs(toml(ROOT), ["sub/tropo.toml"], reader(files))
    assert list(out) == ["sub"]
    sub = out["sub"]
    assert sub["exclude"] == ["README.md", "sub/deep/s2.md", "sub/drafts/**", "sub/x/"]
    assert sub[EXCLUDE_UNDER] == {"sub": ["skip"]}
    assert sub["base"]["allow_untyped"] is False
    assert sub["types"]["decision"]["required"] == {"status": "enum:proposed|accepted", "owner": "string"}
    assert sub["types"]["decision"]["folder"] == ["decisions"]
    excluded = excluder_for(sub)
    assert excluded("sub/skip/s.md") and excluded("sub/a/skip/t.md") and excluded("sub/deep/s2.md")
    assert excluded("sub/drafts/d.md") and excluded("sub/x/y.md") and excluded("README.md")
    assert not excluded("skip.md") and not excluded("skip/s.md") and not excluded("sub/deep/s3.md")
    assert build_config(sub, None).allow_untyped is False


def test_bare_overlay_names_do_not_match_above_the_overlay() -> None:
    files = {"notes/tropo.toml": 'exclude = ["notes"]\n'}
    excluded = excluder_for(overlay_configs(toml(ROOT), ["notes"], reader(files))["notes"])
    assert not excluded("notes/a.md") and excluded("notes/notes/a.md")


def test_overlays_chain_top_down() -> None:
    files = {
        "sub/tropo.toml": '[types.decision]\nrequired = { owner = "string" }\n',
        "sub/deep/tropo.toml": '[types.decision]\nrequired = { status = "enum:accepted" }\nfolder = "adr"\n',
        "other/tropo.toml": "[base]\nstrict = true\n",
    }
    out = overlay_configs(toml(ROOT), ["sub/deep/tropo.toml", "./other/tropo.toml", "sub/tropo.toml"],
                          reader(files))
    assert sorted(out) == ["other", "sub", "sub/deep"]
    deep = out["sub/deep"]["types"]["decision"]
    assert deep["required"] == {"status": "enum:accepted", "owner": "string"}
    assert deep["folder"] == ["decisions", "adr"]
    assert "owner" not in out["other"]["types"]["decision"]["required"]


def test_overlay_loosening_is_e120_naming_the_overlay() -> None:
    files = {"sub/tropo.toml": "",
             "sub/deep/tropo.toml": '[types.decision]\nrequired = { status = "enum:accepted|weird" }\n'}
    with pytest.raises(ConfigError) as info:
        overlay_configs(toml(ROOT), ["sub", "sub/deep"], reader(files))
    assert str(info.value).startswith(
        "E120: sub/deep/tropo.toml: type 'decision' field 'status': 'enum:accepted|weird' loosens "
        "'enum:proposed|accepted'; an overlay may only tighten rules"
    )


def test_overlay_cannot_loosen_the_root_base() -> None:
    root = toml(ROOT + "[base]\nallow_untyped = false\n")
    with pytest.raises(ConfigError, match=r"^E120: sub/tropo\.toml: base\.allow_untyped"):
        overlay_configs(root, ["sub"], reader({"sub/tropo.toml": "[base]\nallow_untyped = true\n"}))


def test_overlay_packs_are_honoured_and_scoped() -> None:
    files = {
        "sub/tropo.toml": 'packs = ["coordination", "local"]\n',
        ".tropo/packs/local.toml": 'exclude = ["tmp", "gen/out"]\n',
    }
    root = toml('packs = ["dev-project"]\n')
    out = overlay_configs(root, ["sub/tropo.toml"], reader(files))
    assert out["sub"]["base"]["optional"] == {"assignee": "string"}
    assert "decision" in out["sub"]["types"]  # the root's packs still apply below
    assert out["sub"]["exclude"] == ["sub/gen/out"] and out["sub"][EXCLUDE_UNDER] == {"sub": ["tmp"]}
    assert merge_packs(root, reader(files))["base"]["optional"] == {}


def test_overlay_pack_loosening_names_pack_and_overlay() -> None:
    files = {"sub/tropo.toml": 'packs = ["loose"]\n',
             ".tropo/packs/loose.toml": '[types.decision]\nrequired = { status = "string" }\n'}
    expected = r"^E120: \.tropo/packs/loose\.toml \(listed in sub/tropo\.toml\): type 'decision' field"
    with pytest.raises(ConfigError, match=expected):
        overlay_configs(toml(ROOT), ["sub/tropo.toml"], reader(files))


def test_nested_thin_workspace_is_a_config_error() -> None:
    files = {"sub/.vivary/workspace.toml": 'version = 1\n[workspace]\ncontract = "thin-v0.3"\n'}
    for listed in ("sub/.vivary/workspace.toml", "sub/tropo.toml"):
        with pytest.raises(ConfigError) as info:
            overlay_configs(toml(ROOT), [listed], reader({**files, "sub/tropo.toml": ""}))
        msg = str(info.value)
        assert msg.startswith("sub/.vivary/workspace.toml: a nested Vivary workspace")
        assert "--root sub" in msg


def test_overlays_in_excluded_folders_are_skipped() -> None:
    files = {"archive/tropo.toml": "[base]\nallow_untyped = true\nstrict = false\n",
             "archive/old/.vivary/workspace.toml": "",
             ".obsidian/tropo.toml": "[types\n"}
    root = toml(ROOT + "[base]\nallow_untyped = false\n") | {"exclude": ["archive"]}
    out = overlay_configs(root, ["archive/tropo.toml", "archive/old", ".obsidian/tropo.toml"], reader(files))
    assert out == {}


def test_root_and_missing_overlays_are_ignored() -> None:
    assert overlay_configs(toml(ROOT), ["tropo.toml", "", "gone/tropo.toml"], reader()) == {}


def test_overlay_errors_name_the_overlay() -> None:
    with pytest.raises(ConfigError, match=r"^sub/tropo\.toml: invalid TOML"):
        overlay_configs(toml(ROOT), ["sub"], reader({"sub/tropo.toml": "[base\n"}))
    with pytest.raises(ConfigError, match=r"^sub/tropo\.toml: version = 2 is not supported"):
        overlay_configs(toml(ROOT), ["sub"], reader({"sub/tropo.toml": "version = 2\n"}))


# --- end to end through the CLI on a real Git repository ---------------------------------------------

GOOD = "---\nstatus: accepted\ndate: 2026-11-01\n---\n# Use packs\n"


def test_cli_dev_project_pack_types_decisions(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "tropo.toml": 'version = 1\npacks = ["dev-project"]\n',
        "decisions/0001-use-packs.md": GOOD,
        "decisions/0002-undated.md": "---\nstatus: weird\n---\n# Undated\n",
        "notes/free.md": "# Untyped is fine\n",
    })
    r = cli("check", "--rev", "HEAD", "--json", "--lenient", cwd=repo.path)
    assert r.code == 1, r.err
    found = {(f["path"], f["code"]) for f in r.json()["findings"]}
    assert found == {("decisions/0002-undated.md", "E101"), ("decisions/0002-undated.md", "E103")}
    assert r.json()["checked"] == 3


def test_cli_workspace_pack_overrides_bundled(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "tropo.toml": 'version = 1\npacks = ["dev-project"]\n',
        ".tropo/packs/dev-project.toml":
            '[types.decision]\nfolder = "decisions"\nrequired = { status = "string" }\n',
        "decisions/0001.md": "---\nstatus: anything\n---\n# Local pack\n",
    })
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 0, r.err
    assert r.json()["findings"] == []


def test_cli_loosening_pack_exits_2_with_e120(repo: Repo, cli: Any) -> None:
    repo.commit(files={
        "tropo.toml": 'version = 1\npacks = ["dev-project", "loose"]\n',
        ".tropo/packs/loose.toml": '[types.decision]\nrequired = { status = "string" }\n',
        "decisions/0001.md": GOOD,
    })
    r = cli("check", "--rev", "HEAD", "--json", cwd=repo.path)
    assert r.code == 2
    assert r.out == ""
    assert "E120: .tropo/packs/loose.toml:2: type 'decision' field 'status': 'string' loosens " \
           "'enum:proposed|accepted|superseded'" in r.err
    assert "Traceback" not in r.err


def test_cli_unknown_pack_exits_2(repo: Repo, cli: Any) -> None:
    repo.commit(files={"tropo.toml": 'version = 1\npacks = ["nope"]\n', "a.md": "# A\n"})
    r = cli("check", "--rev", "HEAD", cwd=repo.path)
    assert r.code == 2
    assert "pack 'nope' not found: looked for .tropo/packs/nope.toml" in r.err
