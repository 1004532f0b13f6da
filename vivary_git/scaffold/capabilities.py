"""Capability discovery: what optional power a workspace can have, and what is installed right now.

Truthful without being heavy: packages are found with `importlib.util.find_spec` and
`importlib.metadata` (neither imports the package), and the local embedder with
`memory.embed.embedder_status()`, which hashes the model files but never imports onnxruntime.
Nothing here touches the network, and a capability being available never turns anything on.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from typing import Literal

import msgspec

from vivary_git.scaffold.presets import Preset

DEFAULT_CAPABILITIES = ["storage:file", "memory:none"]
COGNEE_EXTRA = "vivary-git[cognee]"
COGNEE_DIST = "cognee"
COGNEE_MODULE = "cognee"
EMBED_EXTRA = "vivary-git[embed]"

InstallStatus = Literal["built-in", "installed", "not-installed"]


class Capability(msgspec.Struct, frozen=True, omit_defaults=True):
    """One entry of `available_capabilities` (the contract's fields, then the install truth)."""

    id: str
    label: str
    default: bool
    requires_install: list[str]
    requires_approval: bool
    network: bool | str
    installed: bool
    install_status: InstallStatus
    missing_install: list[str]
    detail: str
    requires_explicit_index: bool | None = None
    adapter_status: str | None = None


class CapabilityReport(msgspec.Struct, frozen=True):
    ok: bool
    preset: str | None
    default_capabilities: list[str]
    available_capabilities: list[Capability]


def _module_present(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # a broken parent package, or a module with no spec
        return False


def _dist_present(name: str) -> bool:
    try:
        importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def _git_cache() -> Capability:
    # The cache is built into vivary-git; what can be missing is this version's `cache` command.
    have = _module_present("vivary_git.commands.cache")
    return Capability(
        id="storage:git-cache", label="Derived data cached in Git (refs/vivary/cache)", default=False,
        requires_install=[], requires_approval=False, network=False, installed=have,
        install_status="built-in" if have else "not-installed", missing_install=[],
        adapter_status="built-in" if have else "not-in-this-version",
        detail="graph, parse and memory state kept under refs/vivary/cache, shared only by an explicit "
        "`git vivary sync`" + ("" if have else "; this vivary-git version has no `cache` command yet"),
    )


def _local_memory() -> Capability:
    from vivary_git.memory.local.embed import INSTALL_HINT, embedder_status

    status = embedder_status()
    have = status == "available"
    return Capability(
        id="memory:local", label="Local semantic memory (vivary-local)", default=False,
        requires_install=[EMBED_EXTRA], requires_approval=True, network=False, installed=have,
        install_status="installed" if have else "not-installed", missing_install=[] if have else [EMBED_EXTRA],
        requires_explicit_index=True, adapter_status="installed" if have else "optional-extra",
        detail="offline embedder and vector index; indexing is a separate, explicit step"
        if have else f"{status.removeprefix('unavailable: ')}" if INSTALL_HINT in status
        else f"{status.removeprefix('unavailable: ')}; {INSTALL_HINT}",
    )


def _cognee_memory() -> Capability:
    # Both halves: the distribution must be installed *and* its module importable by this interpreter
    # (find_spec only: the library is never imported to find out).
    have = _dist_present(COGNEE_DIST) and _module_present(COGNEE_MODULE)
    return Capability(
        id="memory:cognee", label="Cognee semantic memory", default=False,
        requires_install=[COGNEE_EXTRA], requires_approval=True, network="configurable, default false",
        installed=have, install_status="installed" if have else "not-installed",
        missing_install=[] if have else [COGNEE_EXTRA], requires_explicit_index=True,
        adapter_status="installed" if have else "optional-extra",
        detail="the Cognee library; imported only to index, recall or forget, after the gates"
        if have else f"install the extra: pip install '{COGNEE_EXTRA}'",
    )


def capability_report(preset: Preset | None = None) -> CapabilityReport:
    """The capability discovery document (the same for every preset: no preset implies a provider)."""
    builtin: InstallStatus = "built-in"
    caps = [
        Capability(id="storage:file", label="File-backed typed graph", default=True, requires_install=[],
                   requires_approval=False, network=False, installed=True, install_status=builtin,
                   missing_install=[], detail="Markdown notes in Git are the source of truth; always on"),
        _git_cache(),
        Capability(id="memory:none", label="No semantic memory", default=True, requires_install=[],
                   requires_approval=False, network=False, installed=True, install_status=builtin,
                   missing_install=[], detail="typed graph plus text search (find, query)"),
        _local_memory(),
        _cognee_memory(),
    ]
    return CapabilityReport(ok=True, preset=preset, default_capabilities=list(DEFAULT_CAPABILITIES),
                            available_capabilities=caps)
