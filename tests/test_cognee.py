"""The Cognee provider's gates, environment binding and doctor states, through the CLI in-process.

These run without the Cognee library (it is not in the test virtualenv): every gate refuses before Cognee
would be imported, and doctor never imports it. Where a test needs Cognee to look installed, a stand-in
package named `cognee` is put on sys.path whose import fails the test, which proves that nothing imported
it. The real library runs in tests/test_cognee_e2e.py.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import msgspec
import pytest

from vivary_git.memory import cognee as provider
from vivary_git.memory.cognee import CogneeManifest, runtime_env
from vivary_git.memory.config import CogneeConfig
from vivary_git.memory.snapshot import dataset_name

TROPO = 'version = 1\n\n[base]\nderive = ["id", "title"]\nallow_untyped = true\n'
# The contract's layout: provider state under .vivary/memory/, which Git ignores (memory/statefolder.py).
GITIGNORE = "USER.md\nMEMORY.md\n/memory/\n/heartbeat-reports/\n/.strato/private/\n/.vivary/memory/\n"
NOTES = {"notes/a.md": "# A\n\nAlpha.\n", "notes/b.md": "# B\n\nBeta.\n"}


def memory(**cognee: Any) -> str:
    lines = ['[memory]', 'enabled = true', 'provider = "cognee"', '', '[memory.cognee]']
    lines += [f"{k} = {json.dumps(v)}" for k, v in cognee.items()]
    return "\n".join(lines) + "\n"


OPEN = {"allow_network": True, "api_key_env": "VIVARY_TEST_KEY"}


@pytest.fixture
def ws(repo: Any) -> Any:
    repo.write({"tropo.toml": TROPO, ".gitignore": GITIGNORE, **NOTES})
    repo.commit("init")
    return repo


def configure(ws: Any, **cognee: Any) -> None:
    ws.commit("memory", {".vivary/memory.toml": memory(**cognee)})


class _Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Sequence[str] | None, target: ModuleType | None = None,
                  ) -> importlib.machinery.ModuleSpec | None:
        if name == "cognee" or name.startswith("cognee."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@pytest.fixture
def no_cognee(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cognee not installed, whatever this virtualenv holds."""
    monkeypatch.setattr(sys, "meta_path", [_Hide(), *sys.meta_path])


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A package `cognee` that find_spec finds and whose import fails the test."""
    pkg = tmp_path / "stand-in" / "cognee"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise AssertionError('cognee was imported')\n")
    monkeypatch.syspath_prepend(str(pkg.parent))
    monkeypatch.delitem(sys.modules, "cognee", raising=False)
    yield pkg
    assert "cognee" not in sys.modules


# --- environment ----------------------------------------------------------------------------------------


def test_runtime_env_binds_every_root_to_state_path_and_passes_only_the_named_key(tmp_path: Path) -> None:
    state = tmp_path / "ws" / ".vivary" / "memory" / "cognee"
    ambient = {"LLM_API_KEY": "ambient-key", "EMBEDDING_API_KEY": "other-key", "VECTOR_DB_URL": "postgres://far",
               "LANGFUSE_PUBLIC_KEY": "pk", "OTEL_EXPORTER_OTLP_ENDPOINT": "https://collector", "MY_KEY": "the-key",
               "DATA_ROOT_DIRECTORY": "/elsewhere"}
    put, drop = runtime_env(state, CogneeConfig(api_key_env="MY_KEY"), ambient)
    for var in ("DATA_ROOT_DIRECTORY", "SYSTEM_ROOT_DIRECTORY", "CACHE_ROOT_DIRECTORY", "COGNEE_LOGS_DIR",
                "COGNEE_REPOS_DIR", "COGNEE_ENV_FILE"):
        assert Path(put[var]).is_relative_to(state), var
    assert put["LLM_API_KEY"] == "the-key"
    assert {"EMBEDDING_API_KEY", "VECTOR_DB_URL", "LANGFUSE_PUBLIC_KEY", "OTEL_EXPORTER_OTLP_ENDPOINT"} <= set(drop)
    assert put["TELEMETRY_DISABLED"] == "1" and put["COGNEE_TRACING_ENABLED"] == "false"
    assert put["VECTOR_DB_PROVIDER"] == "lancedb" and put["GRAPH_EXTRACTOR"] == "llm"
    assert put["LITELLM_LOCAL_MODEL_COST_MAP"] == "True"


def test_runtime_env_keyless_and_telemetry_opt_in(tmp_path: Path) -> None:
    put, drop = runtime_env(tmp_path, CogneeConfig(allow_without_api_key=True, allow_telemetry=True),
                            {"LLM_API_KEY": "ambient-key", "LANGFUSE_PUBLIC_KEY": "pk"})
    assert put["LLM_API_KEY"] == provider.KEYLESS_PLACEHOLDER  # never the ambient key
    assert "TELEMETRY_DISABLED" not in put and "LANGFUSE_PUBLIC_KEY" not in drop
    put, drop = runtime_env(tmp_path, CogneeConfig(), {"LLM_API_KEY": "ambient-key"})
    assert "LLM_API_KEY" not in put and "LLM_API_KEY" in drop


# --- gates ----------------------------------------------------------------------------------------------


def test_index_needs_approval(ws: Any, cli: Any) -> None:
    configure(ws, **OPEN)
    r = cli("index", cwd=ws.path)
    assert r.code == 3 and "--yes" in r.err


def test_require_explicit_index_false_is_the_approval(ws: Any, cli: Any) -> None:
    configure(ws, require_explicit_index=False)
    r = cli("index", cwd=ws.path)
    assert r.code == 3 and "allow_network = true" in r.err  # past the approval gate, at the network one


@pytest.mark.parametrize("args", [["index", "--yes"], ["recall", "alpha"], ["forget", "--yes"]])
def test_network_gate_is_closed_by_default(ws: Any, cli: Any, args: list[str]) -> None:
    configure(ws, api_key_env="VIVARY_TEST_KEY")
    r = cli(*args, cwd=ws.path)
    assert r.code == 3 and "allow_network = true" in r.err
    assert not (ws.path / ".vivary" / "memory" / "cognee").exists()


@pytest.mark.parametrize("args", [["index", "--yes"], ["recall", "alpha"], ["forget", "--yes"]])
def test_key_route_is_required(ws: Any, cli: Any, args: list[str]) -> None:
    configure(ws, allow_network=True)
    r = cli(*args, cwd=ws.path)
    assert r.code == 3 and "api_key_env" in r.err and "allow_without_api_key" in r.err


def test_named_key_variable_must_be_set(ws: Any, cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(ws, **OPEN)
    monkeypatch.delenv("VIVARY_TEST_KEY", raising=False)
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 3 and "VIVARY_TEST_KEY" in r.err


def test_forget_needs_yes(ws: Any, cli: Any) -> None:
    configure(ws, **OPEN)
    r = cli("forget", cwd=ws.path)
    assert r.code == 3 and "--yes" in r.err


def test_literal_key_in_the_file_is_refused(ws: Any, cli: Any) -> None:
    ws.commit("memory", {".vivary/memory.toml": memory(**OPEN) + 'api_key = "sk-live-0123456789abcdefXYZ"\n'})
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 2 and "literal secret" in r.err and "sk-live" not in r.err


def test_gates_open_but_cognee_missing_names_the_extra(ws: Any, cli: Any, no_cognee: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    configure(ws, **OPEN)
    monkeypatch.setenv("VIVARY_TEST_KEY", "k")
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 2 and "vivary-git[cognee]" in r.err


def test_recall_refuses_without_an_index_or_with_a_stale_one(ws: Any, cli: Any, stand_in: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    configure(ws, **OPEN)
    monkeypatch.setenv("VIVARY_TEST_KEY", "k")
    r = cli("recall", "alpha", cwd=ws.path)
    assert r.code == 3 and "no Cognee index" in r.err
    manifest = write_manifest(ws.path, fingerprint="0" * 64)
    r = cli("recall", "alpha", cwd=ws.path)
    assert r.code == 3 and "stale" in r.err
    manifest.write_bytes(b"{not json")
    r = cli("recall", "alpha", cwd=ws.path)
    assert r.code == 3 and "damaged" in r.err


@pytest.mark.parametrize("sub", ["system", "data", "home"])
def test_a_symlinked_state_folder_is_refused_before_cognee_is_imported(
        ws: Any, cli: Any, stand_in: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, sub: str) -> None:
    # A clone could carry state_path/<sub> as a link: Cognee would write the notes' copies wherever it points.
    configure(ws, **OPEN)
    monkeypatch.setenv("VIVARY_TEST_KEY", "k")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    state = ws.path / ".vivary" / "memory" / "cognee"
    state.mkdir(parents=True)
    (state / sub).symlink_to(elsewhere)
    r = cli("index", "--yes", cwd=ws.path)
    assert r.code == 3 and f"{state / sub} is a symbolic link" in r.err
    assert list(elsewhere.iterdir()) == []


def test_dry_run_reports_the_cognee_dataset(ws: Any, cli: Any) -> None:
    configure(ws)
    r = cli("index", "--dry-run", "--json", cwd=ws.path)
    assert r.code == 0
    report = r.json()
    assert report["provider"] == "cognee" and report["would_index"] == 2
    assert report["dataset"] == dataset_name(ws.path)


# --- doctor ---------------------------------------------------------------------------------------------


def write_manifest(root: Path, fingerprint: str, **overrides: Any) -> Path:
    """A manifest as `index` on this machine writes it (through the state store, which records it)."""
    import os

    from vivary_git import open_workspace
    from vivary_git.memory.config import load_memory_config

    fields: dict[str, Any] = dict(
        provider="cognee", dataset=dataset_name(root), fingerprint=fingerprint, nodes=2, edges=0, format=1,
        packet_format=1, cognee_version=provider.TESTED_COGNEE, embedding=provider._embedding_settings(os.environ),
        documents={}, tree=None, source="worktree")
    fields.update(overrides)
    ws = open_workspace(root)
    store = provider.state_store(ws, load_memory_config(ws))
    store.put(provider.MANIFEST, msgspec.json.encode(CogneeManifest(**fields)))
    return store.directory / provider.MANIFEST


def adapter_status(ws: Any) -> str:
    from vivary_git import open_workspace

    return provider.doctor(open_workspace(ws.path)).status


def doctor_memory(cli: Any, ws: Any) -> dict[str, Any]:
    r = cli("doctor", "--json", cwd=ws.path)
    memory: dict[str, Any] = r.json()["memory"]
    return memory


def test_doctor_disabled_and_not_cognee(ws: Any, cli: Any, stand_in: Path) -> None:
    assert adapter_status(ws) == "disabled"
    ws.commit("local", {".vivary/memory.toml": '[memory]\nenabled = true\nprovider = "vivary-local"\n'})
    assert adapter_status(ws) == "not-cognee"


def test_doctor_unavailable_without_the_library(ws: Any, cli: Any, no_cognee: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    configure(ws, **OPEN)
    monkeypatch.setenv("VIVARY_TEST_KEY", "k")
    assert adapter_status(ws) == "unavailable"
    m = doctor_memory(cli, ws)
    assert m["status"] == "unavailable" and m["provider"] == "cognee"


def test_doctor_misconfigured_key_routes(ws: Any, cli: Any, stand_in: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(ws, allow_network=True)
    assert adapter_status(ws) == "misconfigured"
    assert doctor_memory(cli, ws)["status"] == "misconfigured"
    configure(ws, **OPEN)
    monkeypatch.delenv("VIVARY_TEST_KEY", raising=False)
    assert adapter_status(ws) == "misconfigured"
    r = cli("doctor", "--json", cwd=ws.path)
    assert r.code == 1 and "VIVARY_TEST_KEY" in r.out


def test_doctor_stale_and_healthy_without_importing_cognee(ws: Any, cli: Any, stand_in: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    configure(ws, **OPEN)
    monkeypatch.setenv("VIVARY_TEST_KEY", "k")
    assert adapter_status(ws) == "stale"  # no index yet: the adapter's word
    assert doctor_memory(cli, ws)["status"] == "configured"  # the workspace doctor's, as for vivary-local
    current = cli("index", "--dry-run", "--json", cwd=ws.path).json()["fingerprint"]
    write_manifest(ws.path, fingerprint=current)
    assert adapter_status(ws) == "healthy"
    assert doctor_memory(cli, ws)["status"] == "healthy"
    write_manifest(ws.path, fingerprint=current, embedding="EMBEDDING_PROVIDER=other")
    assert adapter_status(ws) == "stale"
    write_manifest(ws.path, fingerprint=current)
    ws.commit("edit", {"notes/a.md": "# A\n\nAlpha, edited.\n"})
    assert adapter_status(ws) == "stale"
    r = cli("doctor", "--json", cwd=ws.path)
    assert r.code == 1 and r.json()["memory"]["status"] == "stale"
    assert any(p["area"] == "memory" and "index --yes" in p["fix"] for p in r.json()["problems"])
