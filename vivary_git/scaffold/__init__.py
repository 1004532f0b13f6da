"""Workspaces people start from: `init` presets, capability discovery, and the workspace doctor.

`plan` lays down a seed graph (per preset), agent guidance (per host), private files kept out of Git
and a disabled memory policy; `capabilities` says truthfully what optional power is installed right
now; `doctor` is one read-only health report. Each is a plain Python API; `commands/init.py`,
`commands/capabilities.py` and `commands/doctor.py` only parse arguments and print.
"""

from __future__ import annotations

from vivary_git.scaffold.presets import HOSTS, MEMORY_CHOICES, PRESETS, STORAGE_CHOICES

__all__ = ["HOSTS", "MEMORY_CHOICES", "PRESETS", "STORAGE_CHOICES"]
