"""The choices `git vivary init` offers: presets (what the starter graph is about), capabilities
(storage and memory, installed and approved separately) and agent hosts (where guidance goes).

Presets and capabilities are separate axes: any preset combines with any memory choice, and no preset
implies a provider. The starter texts follow the published create-vivary presets so a workspace made by
either tool reads the same.
"""

from __future__ import annotations

from typing import Literal

import msgspec

from vivary_git.hosts.kinds import HOST_KINDS, HostKind

Preset = Literal["second-brain", "knowledge-work", "writing", "coding"]
Memory = Literal["none", "local", "cognee"]
Storage = Literal["file", "git-cache"]
# One list: every host bootstrap-host sets up (hosts/kinds.py) is a choice of init's too.
Host = HostKind

PRESETS: tuple[Preset, ...] = ("second-brain", "knowledge-work", "writing", "coding")
MEMORY_CHOICES: tuple[Memory, ...] = ("none", "local", "cognee")
STORAGE_CHOICES: tuple[Storage, ...] = ("file", "git-cache")
HOSTS: tuple[Host, ...] = HOST_KINDS

DEFAULT_PRESET: Preset = "second-brain"
DEFAULT_MEMORY: Memory = "none"
DEFAULT_STORAGE: Storage = "file"
DEFAULT_HOST: Host = "generic"

# `--memory` names the capability; `.vivary/memory.toml` names the provider.
PROVIDER_OF: dict[Memory, str] = {"none": "none", "local": "vivary-local", "cognee": "cognee"}



class Starter(msgspec.Struct, frozen=True):
    """The part of the seed graph that differs by preset."""

    purpose: str
    module_id: str
    module_title: str
    module_area: str
    module_body: str
    change_id: str
    change_title: str
    change_slice: str
    change_body: str
    verification_id: str
    verification_title: str
    verification_command: str
    verification_body: str


STARTERS: dict[Preset, Starter] = {
    "second-brain": Starter(
        purpose="Personal knowledge base: notes, sources, concepts, memory and retrieval routines.",
        module_id="knowledge-base",
        module_title="Knowledge Base",
        module_area="personal knowledge system",
        module_body="Captured notes, sources, decisions, and retrieval paths for a thinking workspace.",
        change_id="capture-routine",
        change_title="Capture Routine",
        change_slice="knowledge capture loop",
        change_body="Start with one reliable path for capture, triage, retrieval, and promotion.",
        verification_id="retrieval-smoke",
        verification_title="Retrieval Smoke",
        verification_command="git vivary find \"capture routine\" --json",
        verification_body="Prove the workspace can find a saved note and its related context through the typed graph.",
    ),
    "knowledge-work": Starter(
        purpose="Agent-operable workbench for research, decisions, artifacts, proof, and publish readiness.",
        module_id="workbench",
        module_title="Knowledge Workbench",
        module_area="research, decisions, artifacts, and proof",
        module_body="A routed workbench for sources, decisions, artifacts, verification, and publish-ready proof.",
        change_id="workbench-first-artifact",
        change_title="Workbench First Artifact",
        change_slice="first proof-backed knowledge artifact",
        change_body="Produce or locate one useful artifact, link its sources, and verify the proof path that "
        "makes it trustworthy.",
        verification_id="workbench-proof",
        verification_title="Workbench Proof",
        verification_command="git vivary check && git vivary blast workbench-first-artifact",
        verification_body="Prove the workbench can route from source material to a durable artifact with "
        "inspectable evidence, checked by a local gate.",
    ),
    "writing": Starter(
        purpose="Drafts, research, editorial passes, publication gates, and release copy.",
        module_id="manuscript-system",
        module_title="Manuscript System",
        module_area="writing project",
        module_body="Drafts, research, editorial passes, and publication gates for a writing workspace.",
        change_id="draft-review-loop",
        change_title="Draft Review Loop",
        change_slice="draft to review workflow",
        change_body="Set up the first repeatable loop from draft to critique to revision.",
        verification_id="editorial-review",
        verification_title="Editorial Review",
        verification_command="review one draft against the workspace editorial criteria and its linked sources",
        verification_body="Prove a draft can move through review with evidence and next actions.",
    ),
    "coding": Starter(
        purpose="Code, docs, tests, and release gates for a software project.",
        module_id="codebase",
        module_title="Codebase",
        module_area="software project",
        module_body="Code, docs, tests, and release gates for a software workspace.",
        change_id="local-ci-baseline",
        change_title="Local CI Baseline",
        change_slice="local verification baseline",
        change_body="Define the local checks that stand in for remote CI while the project is early.",
        verification_id="local-checks",
        verification_title="Local Checks",
        verification_command="git vivary check && run the project-local tests and build",
        verification_body="Run the checks that prove a code slice is ready to review.",
    ),
}
