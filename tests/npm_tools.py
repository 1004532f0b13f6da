"""npm packages the tests run for real (husky, the SARIF Multitool, the MCP Inspector, the agent hosts' own CLIs),
installed once per session.

They come from the npm registry with the ordinary client, into a folder of their own (never the
repository): a temporary one, or VIVARY_TEST_NPM_HOME to keep them across sessions. A test that
needs one skips, saying why, only when npm is missing or cannot install the package. A registry that does not
answer is waited for once: after one install runs out of time, every later one skips at once with the same
reason, so a slow registry costs the suite one wait, not one per package.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

_UNANSWERED: list[str] = []  # the install that ran out of time, once one has


def npm_install(home: Path, spec: str) -> Path:
    """`npm install SPEC` into `home/<spec>`; returns that folder's node_modules."""
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"npm is not installed, so {spec} cannot be fetched from the npm registry")
    folder = home / spec.replace("/", "_").replace("@", "")
    modules = folder / "node_modules"
    name = spec.rsplit("@", 1)[0] if spec.count("@") > (1 if spec.startswith("@") else 0) else spec
    if (modules / name / "package.json").is_file():
        return modules
    if _UNANSWERED:
        pytest.skip(f"npm could not install {_UNANSWERED[0]} within 10 minutes, so {spec} is not tried "
                    "(is the npm registry reachable?)")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "package.json").write_text('{"name": "vivary-test-tools", "private": true}\n')
    # A registry mirror can be caught between two releases of a dependency (`ETARGET`: a version its index
    # names is not there yet): seen here once, and the next install worked. So three tries before a skip, all
    # within 10 minutes.
    deadline = time.monotonic() + 600
    for _ in range(3):
        try:
            proc = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-save", spec], cwd=folder,
                                  capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic()),
                                  check=False,
                                  env=dict(os.environ, npm_config_cache=str(home / "npm-cache")))
        except subprocess.TimeoutExpired:
            _UNANSWERED.append(spec)
            pytest.skip(f"npm could not install {spec} within 10 minutes (is the npm registry reachable?)")
        if proc.returncode == 0 and (modules / name / "package.json").is_file():
            break
    if proc.returncode != 0 or not (modules / name / "package.json").is_file():
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"npm could not install {spec} (exit {proc.returncode}): {last}")
    return modules


def npm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    kept = os.environ.get("VIVARY_TEST_NPM_HOME")
    return Path(kept) if kept else tmp_path_factory.getbasetemp() / "npm-home"


# The MCP Inspector's last release that runs on Node 20 (later ones need Node 22), pinned so a test of it is the
# same wherever it runs.
INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"


def inspector_cli(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """The command that runs the MCP Inspector CLI (`INSPECTOR`): append `--cli`, the server's command and a
    `--method`."""
    modules = npm_install(npm_home(tmp_path_factory), INSPECTOR)
    node = shutil.which("node")
    script = modules / "@modelcontextprotocol" / "inspector" / "cli" / "build" / "cli.js"
    if node is None or not script.is_file():
        pytest.skip(f"{INSPECTOR} installed, but node or its CLI script is missing")
    return [node, str(script)]


# The agent hosts' own command-line tools that test_hosts_real.py runs (`mcp list`, `mcp get`): the versions
# docs/hosts.md says the set-up is proven against. Claude Code's package is a native binary: its `engines` asks for
# Node 22, yet its install script and the binary run on Node 20 (seen with 2.1.332). opencode's package is a native
# binary too, chosen by its optional dependencies.
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.332"
CODEX = "@openai/codex@0.171.0"
GEMINI_CLI = "@google/gemini-cli@0.61.0"
OPENCODE = "opencode-ai@1.18.33"


def npm_bin(tmp_path_factory: pytest.TempPathFactory, spec: str, name: str) -> Path:
    """The executable `name` of the npm package `spec` (installed once per session), checked to start."""
    exe = npm_install(npm_home(tmp_path_factory), spec) / ".bin" / name
    if not exe.is_file():
        pytest.skip(f"{spec} installed, but without its {name} command (another platform?)")
    home = tmp_path_factory.mktemp("home")  # a host's first start writes into its home: never the real one
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OPENCODE_")) and k != "CODEX_HOME"}
    proc = subprocess.run([str(exe), "--version"], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          env=dict(env, HOME=str(home)), timeout=300, check=False)
    if proc.returncode != 0:
        last = ((proc.stderr or proc.stdout).strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"{spec} installed, but `{name} --version` exits {proc.returncode}: {last}")
    return exe
