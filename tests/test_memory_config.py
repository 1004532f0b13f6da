"""`.vivary/memory.toml`: strict types, no literal secrets, read from the same tree as the notes."""

from __future__ import annotations

from typing import Any

import pytest
from conftest import Repo

from vivary_git import open_workspace
from vivary_git.errors import ConfigError
from vivary_git.memory.config import DISABLED, load_memory_config, parse_memory_config
from vivary_git.privacy import PrivacyPolicy

FULL = b"""# Activated optional semantic memory.
[memory]
enabled = true
mode = "semantic-provider"
provider = "cognee"

[memory.privacy]
respect_gitignore = true
respect_vivary_private = true
private_paths = ["drafts/**", "journal/*.md"]
fail_closed = true

[memory.local]
state_path = ".vivary/memory/local"
model = "minilm-l6-int8"
require_explicit_index = true
auto_index = false
allow_network = false

[memory.cognee]
state_path = ".vivary/memory/cognee"
require_explicit_index = true
allow_network = false
api_key_env = "LLM_API_KEY"
allow_without_api_key = false
allow_telemetry = false
dataset = "team-notes"
"""


def refused(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_memory_config(text.encode())
    return str(info.value)


def test_full_file_round_trips() -> None:
    cfg = parse_memory_config(FULL)
    assert cfg.enabled and cfg.provider == "cognee" and cfg.model == ""
    assert cfg.memory.cognee.api_key_env == "LLM_API_KEY"
    assert cfg.dataset_label == "team-notes"
    assert cfg.policy() == PrivacyPolicy(private_paths=("drafts/**", "journal/*.md"), respect_gitignore=True)


def test_defaults_are_disabled_and_closed() -> None:
    cfg = parse_memory_config(b"")
    assert not cfg.enabled and cfg.provider == "none"
    m = cfg.memory
    assert (m.privacy.respect_gitignore, m.privacy.fail_closed, m.privacy.private_paths) == (True, True, [])
    assert (m.local.model, m.local.require_explicit_index, m.local.auto_index, m.local.allow_network) == (
        "minilm-l6-int8", True, False, False)
    assert (m.cognee.allow_network, m.cognee.allow_telemetry, m.cognee.allow_without_api_key) == (False, False, False)


def test_provider_is_none_unless_enabled() -> None:
    assert parse_memory_config(b'[memory]\nprovider = "vivary-local"\n').provider == "none"
    local = parse_memory_config(b'[memory]\nenabled = true\nprovider = "vivary-local"\n')
    assert (local.provider, local.model) == ("vivary-local", "minilm-l6-int8")
    assert parse_memory_config(b"[memory]\nenabled = true\n").provider == "none"


@pytest.mark.parametrize(("text", "where", "says"), [
    ('[memory]\nenabled = true\ncolour = "red"\n', ":3:", "unknown key `colour` in `$.memory`"),
    ("[memory.privacy]\nrespect_gitignore = true\nprivate_path = []\n", ":3:", "unknown key `private_path`"),
    ("[memories]\nenabled = true\n", "", "unknown key `memories` in the top level"),
    ('[memory]\nenabled = "yes"\n', ":2:", "`$.memory.enabled`: expected `bool`, got `str`"),
    ("[memory.privacy]\nprivate_paths = [3]\n", ":2:", "`$.memory.privacy.private_paths[0]`: expected `str`"),
    ('[memory]\nprovider = "openai"\n', ":2:", '"none", "vivary-local", "cognee"'),
    ("[memory.local]\nallow_network = 1\n", ":2:", "`$.memory.local.allow_network`: expected `bool`, got `int`"),
])
def test_type_errors_name_file_line_and_key(text: str, where: str, says: str) -> None:
    msg = refused(text)
    assert msg.startswith(".vivary/memory.toml" + where)
    assert says in msg


def test_invalid_toml_names_the_file() -> None:
    assert refused("[memory\n").startswith(".vivary/memory.toml: invalid TOML")


@pytest.mark.parametrize(("text", "key"), [
    ('[memory.cognee]\napi_key = "hunter2-not-a-real-key"\n', "memory.cognee.api_key"),
    ('[memory.cognee]\ntoken = "tok-abc-789"\n', "memory.cognee.token"),
    ('[memory.cognee]\npassword = "correct horse"\n', "memory.cognee.password"),
    ('[memory.cognee]\nOPENAI_API_KEY = "x1-unique-q"\n', "memory.cognee.OPENAI_API_KEY"),
    ('[memory.cognee]\napi_key_env = "sk-proj-AbCdEf0123456789xyz"\n', "memory.cognee.api_key_env"),
    ('[memory.cognee]\ndataset = "ghp_0123456789abcdefABCDEF0123"\n', "memory.cognee.dataset"),
    ('[memory.local]\nmodel = "0123456789abcdef0123456789abcdef01234567"\n', "memory.local.model"),
    ('[memory.privacy]\nprivate_paths = ["ok/**", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRg"]\n',
     "memory.privacy.private_paths[1]"),
    ('[memory.cognee.extra]\nsecret = "sv-unique-zz"\n', "memory.cognee.extra.secret"),
])
def test_literal_secrets_are_refused_without_echoing_them(text: str, key: str) -> None:
    msg = refused(text)
    assert f"`{key}` holds a literal secret" in msg
    assert msg.startswith(".vivary/memory.toml:2:")
    assert "api_key_env" in msg and "environment variable" in msg
    value = text.split('"')[-2]
    assert value not in msg


@pytest.mark.parametrize("text", [
    '[memory.cognee]\napi_key_env = "LLM_API_KEY"\n',
    '[memory.cognee]\napi_key_env = ""\nallow_without_api_key = true\n',
    '[memory.cognee]\ndataset = "my-very-long-team-knowledge-base-2026"\n',
    '[memory.privacy]\nprivate_paths = ["Projects/Client2026/MeetingNotesArchive/**"]\n',
])
def test_env_var_names_and_ordinary_values_are_accepted(text: str) -> None:
    parse_memory_config(text.encode())


def test_api_key_env_must_be_a_variable_name() -> None:
    assert "must be the NAME of an environment variable" in refused('[memory.cognee]\napi_key_env = "my key"\n')


@pytest.mark.parametrize(("text", "says"), [
    ("[memory.privacy]\nfail_closed = false\n", "always fails closed"),
    ("[memory.privacy]\nrespect_vivary_private = false\n", "private floor"),
    ('[memory.privacy]\nprivate_paths = [""]\n', "private_paths[0]"),
    ('[memory.local]\nstate_path = "/var/lib/x"\n', "under `.vivary/`"),
    ('[memory.cognee]\nstate_path = ".vivary/../notes"\n', "under `.vivary/`"),
    ('[memory.cognee]\nstate_path = "state"\n', "under `.vivary/`"),
])
def test_unsafe_settings_are_refused(text: str, says: str) -> None:
    assert says in refused(text)


def test_not_utf8_is_refused() -> None:
    with pytest.raises(ConfigError, match="not valid UTF-8"):
        parse_memory_config(b"[memory]\nmode = \"\xff\"\n")


# --- read from the workspace's tree ---------------------------------------------------------------------


def test_missing_file_is_disabled(repo: Any) -> None:
    repo.commit(files={"a.md": "# A\n"})
    assert load_memory_config(open_workspace(repo.path)) == DISABLED


def test_read_from_the_same_tree_as_the_notes(repo: Any) -> None:
    repo.commit(files={"a.md": "# A\n", ".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["old/**"]\n'})
    repo.write({".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["new/**"]\n'})
    assert load_memory_config(open_workspace(repo.path, rev="HEAD")).policy().private_paths == ("old/**",)
    assert load_memory_config(open_workspace(repo.path)).policy().private_paths == ("new/**",)
    assert load_memory_config(open_workspace(repo.path, staged=True)).policy().private_paths == ("old/**",)


def test_workspace_below_the_top_reads_its_own_file(repo: Any) -> None:
    repo.commit(files={
        "vault/tropo.toml": "version = 1\n",
        "vault/.vivary/memory.toml": "[memory]\nenabled = 3\n",
        "vault/a.md": "# A\n",
    })
    with pytest.raises(ConfigError, match=r"^vault/\.vivary/memory\.toml:2: `\$\.memory\.enabled`"):
        load_memory_config(open_workspace(repo.path / "vault"))


def test_an_ignored_config_is_refused_not_skipped(repo: Any) -> None:
    # Silently running without its private_paths would admit what the user meant to keep private.
    repo.commit(files={".gitignore": ".vivary/\n", "a.md": "# A\n"})
    repo.write({".vivary/memory.toml": '[memory.privacy]\nprivate_paths = ["a.md"]\n'})
    with pytest.raises(ConfigError, match="Git ignores it"):
        load_memory_config(open_workspace(repo.path))


def test_plain_folder_reads_the_file(tmp_path: Any) -> None:
    (tmp_path / ".vivary").mkdir()
    (tmp_path / ".vivary/memory.toml").write_text('[memory.privacy]\nprivate_paths = ["x/**"]\n')
    (tmp_path / "a.md").write_text("# A\n")
    assert load_memory_config(open_workspace(tmp_path)).policy().private_paths == ("x/**",)


def test_cli_reports_a_bad_config_with_exit_2(repo: Any, cli: Any) -> None:
    repo.commit(files={"a.md": "# A\n", ".vivary/memory.toml": '[memory.cognee]\napi_key = "sk-live-123"\n'})
    r = cli("index", "--dry-run", "--json", cwd=repo.path)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("git vivary index: .vivary/memory.toml:2: `memory.cognee.api_key` holds a literal secret")
    assert "sk-live-123" not in r.err and "Traceback" not in r.err


def _submodules_at_memory_toml(repo: Repo) -> None:
    """A workspace at the top and one in `vault/`, each with a submodule (and its checkout folder) committed where
    its `.vivary/memory.toml` would be."""
    repo.commit(files={"a.md": "# A\n", "vault/tropo.toml": "version = 1\n", "vault/b.md": "# B\n"})
    head = repo.git("rev-parse", "HEAD").strip()
    for cfg in (".vivary/memory.toml", "vault/.vivary/memory.toml"):
        repo.git("update-index", "--add", "--cacheinfo", f"160000,{head},{cfg}")
        (repo.path / cfg).mkdir(parents=True)  # where Git checks the submodule out
    repo.git("commit", "-q", "-m", "submodules")


def test_recall_says_a_submodule_stands_where_the_memory_toml_would_be(repo: Repo, cli: Any) -> None:
    """A submodule at `.vivary/memory.toml` is no config file (docs/config.md), and recall said "no
    .vivary/memory.toml", a fix (write the file) that cannot be done with the submodule there: it names what is
    there and how to clear it, for every tree and for `--root`."""
    _submodules_at_memory_toml(repo)
    enable = ('write [memory] enabled = true and provider = "vivary-local" in {0} (docs/memory.md) and run '
              "`git vivary index --yes`")
    for root, cfg in (([], ".vivary/memory.toml"), (["--root", "vault"], "vault/.vivary/memory.toml")):
        said = (f"semantic memory is disabled ({cfg} is a submodule, not a config file); to enable the local "
                f"provider, remove the submodule (`git rm -- {cfg}` at the top of the repository), then "
                + enable.format(cfg))
        for where in (("--rev", "HEAD"), ("--staged",), ()):
            r = cli("recall", "x", *root, *where, cwd=repo.path)
            assert r.code == 2 and r.err == f"git vivary recall: {said}\n", (root, where, r.err)
        r = cli("index", "--yes", *root, cwd=repo.path)
        assert r.code == 2 and f"({cfg} is a submodule, not a config file); remove the submodule" in r.err, r.err
    # With nothing there, the message is as before.
    repo.git("rm", "-q", "--cached", ".vivary/memory.toml")
    r = cli("recall", "x", "--staged", cwd=repo.path)
    assert r.code == 2 and "semantic memory is disabled (no .vivary/memory.toml)" in r.err, r.err


def test_a_memory_toml_submodule_is_no_config_file_in_the_working_tree_either(repo: Repo, cli: Any) -> None:
    """A submodule (or a folder) named `.vivary/memory.toml` is no config file, as for `tropo.toml`: memory is
    not enabled, in every tree. In the working tree its checkout folder was taken for an ignored memory.toml
    ("exists but Git ignores it ... `git add -f`"), a refusal naming a fix that does not apply."""
    import os

    repo.commit(files={"a.md": "# A\n"})
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{'1' * 40},.vivary/memory.toml")
    repo.git("commit", "-q", "-m", "submodule")
    (repo.path / ".vivary" / "memory.toml").mkdir(parents=True)  # where Git checks the submodule out
    for where in (("--rev", "HEAD"), ("--staged",), ()):
        r = cli("index", "--dry-run", "--json", *where, cwd=repo.path)
        assert r.code == 0 and r.json()["enabled"] is False, (where, r.err)
        r = cli("recall", "x", *where, cwd=repo.path)
        assert r.code == 2 and "semantic memory is disabled" in r.err and "ignores" not in r.err, (where, r.err)
    # A symbolic link of that name is refused by the rule every config file in a tree is read by.
    repo.git("rm", "-q", "--cached", ".vivary/memory.toml")
    (repo.path / ".vivary" / "memory.toml").rmdir()
    os.symlink("../a.md", repo.path / ".vivary" / "memory.toml")
    repo.commit("link")
    for where in (("--rev", "HEAD"), ("--staged",), ()):
        r = cli("index", "--dry-run", *where, cwd=repo.path)
        assert r.code == 2 and r.err == ("git vivary index: .vivary/memory.toml: is a symbolic link in the tree; "
                                         "commit the file itself instead\n"), (where, r.err)


def test_index_dry_run_and_doctor_say_a_submodule_stands_where_the_memory_toml_would_be(repo: Repo,
                                                                                         cli: Any) -> None:
    """recall says a submodule (or a folder) stands at `.vivary/memory.toml`; `index --dry-run` said "no
    .vivary/memory.toml, or …", and doctor said the file was "not a regular file" (its fix: replace it with the
    file) and that privacy could not be decided. Both say what recall says; privacy is decided, as by every reader
    of a tree (a submodule there is no config file)."""
    _submodules_at_memory_toml(repo)
    for root, cfg in (([], ".vivary/memory.toml"), (["--root", "vault"], "vault/.vivary/memory.toml")):
        said = (f"{cfg} is a submodule, not a config file; to enable the local provider, remove the submodule "
                f"(`git rm -- {cfg}` at the top of the repository), then write [memory] enabled = true and "
                f"provider = \"vivary-local\" in {cfg} (docs/memory.md)")
        r = cli("index", "--dry-run", *root, cwd=repo.path)
        assert r.code == 0 and (f"provider     none (memory is disabled: {said}; this is what an index would hold "
                                "once it is enabled)\n") in r.out, r.out
        r = cli("doctor", *root, cwd=repo.path)
        assert f"memory     disabled (provider none): {said}\n" in r.out, r.out
        assert "privacy    ok" in r.out and "\nerror:" not in r.out, r.out
        assert r.code == 0, r.out
    # A folder there (no submodule): moved out of the way first.
    repo.git("rm", "-q", "--cached", ".vivary/memory.toml")
    repo.write({".vivary/memory.toml/x.txt": "x\n"})
    repo.git("add", "-A")
    repo.git("commit", "-q", "-m", "a folder")
    r = cli("doctor", cwd=repo.path)
    assert ("memory     disabled (provider none): .vivary/memory.toml is a folder, not a config file; to enable the "
            "local provider, move the folder .vivary/memory.toml out of the way, then write") in r.out, r.out
    r = cli("index", "--dry-run", cwd=repo.path)
    assert "memory is disabled: .vivary/memory.toml is a folder, not a config file;" in r.out, r.out
