"""Where each agent host reads its MCP servers and its guidance (sources in docs/hosts.md)."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from vivary_git.errors import UsageError

HostKind = Literal["generic", "claude-code", "codex", "cursor", "gemini-cli", "vscode", "kiro", "roo-code", "zed",
                   "opencode", "continue", "windsurf", "claude-desktop"]
HOST_KINDS: tuple[HostKind, ...] = ("generic", "claude-code", "codex", "cursor", "gemini-cli", "vscode", "kiro",
                                    "roo-code", "zed", "opencode", "continue", "windsurf", "claude-desktop")
Format = Literal["json", "jsonc", "toml"]

# Hosts expand environment variables inside the strings of their config: a workspace path holding such a
# pattern would be rewritten by the host, and none of them has an escape for it.
# Claude Code: ${VAR}, ${VAR:-default}; Cursor: ${env:NAME}, ${workspaceFolder}; VS Code: ${workspaceFolder},
# ${userHome}, ${env:NAME}, ${input:ID}, ${config:NAME}, ${command:ID}, ${/} ...; Kiro: ${VAR}; Roo Code:
# ${workspaceFolder}, ${env:NAME}, replaced in the whole entry.
_BRACE = re.compile(r"\$\{")
_DOLLAR = re.compile(r"\$(?:\w|\{)")  # Gemini CLI: $VAR and ${VAR}
# opencode replaces {env:NAME} and {file:PATH} in the file's raw text before parsing it; `[^}]+` runs on past the
# string to the next `}` of the file, so any `{env:` or `{file:` is refused, closed or not.
_OPENCODE = re.compile(r"\{(?:env|file):")


@dataclass(frozen=True)
class ConfigSpec:
    format: Format
    container: str  # the table of servers: mcpServers / servers (VS Code) / mcp_servers
    project: str | None  # path under the workspace root, when the host reads a project-level file
    user: bool  # the host (also) reads a user-level file, written only with --user
    expands: re.Pattern[str] | None = None
    extra: dict[str, str] = field(default_factory=dict)  # fixed members of the entry
    # The host takes the command and its arguments as one list, `command: [cmd, *args]` (opencode): entries are
    # read into, and merged as, the `command` + `args` form every other host has.
    argv: bool = False
    # Another name the host reads the project's file under: written when it is a file and `project` is not.
    project_alt: str | None = None
    # The `$schema` the host writes first into any file it reads without one (opencode: into the raw text, on
    # every start). A file we create holds it already, so the host leaves the file as we wrote it; a file left
    # holding only it once our entry is gone is deleted with the entry, as a file of ours alone would be.
    schema: str | None = None
    # The host's docs show the file as plain JSON without saying whether it reads comments (Windsurf): a file that
    # holds them is still refused, but not with the claim that the host cannot read it.
    comments_unsaid: bool = False
    # A "jsonc" host that takes comments but nothing else JSON does not (Gemini CLI: strip-json-comments, then
    # `JSON.parse`, which stops on a trailing comma or a byte order mark, exit 52): such a file is reported, never
    # written around.
    comments_only: bool = False


@dataclass(frozen=True)
class HostSpec:
    kind: HostKind
    label: str
    config: ConfigSpec | None
    guidance: str | None  # the file the host reads its instructions from
    imports: bool = False  # the guidance file can import AGENTS.md (`@AGENTS.md`), so it may only point there
    # The host reads only the first of these files at the workspace root that is a file (a folder of that name is
    # passed over); `guidance` is where the block goes when there is none.
    reads_first: tuple[str, ...] = ()


# Zed's RULES_FILE_NAMES (crates/prompt_store/src/prompts.rs), in its order.
ZED_RULES = (".rules", ".cursorrules", ".windsurfrules", ".clinerules", ".github/copilot-instructions.md", "AGENT.md",
             "AGENTS.md", "CLAUDE.md", "GEMINI.md")

# opencode reads the first of these names found from the folder it starts in up to the top of the work tree
# (packages/opencode/src/session/instruction.ts, FILES): a new AGENTS.md would hide the user's CLAUDE.md from it.
OPENCODE_RULES = ("AGENTS.md", "CLAUDE.md")


HOSTS: dict[HostKind, HostSpec] = {
    "generic": HostSpec("generic", "any MCP host (AGENTS.md only; configure the server by hand)", None, "AGENTS.md"),
    "claude-code": HostSpec(
        "claude-code", "Claude Code",
        ConfigSpec("json", "mcpServers", ".mcp.json", False, _BRACE, {"type": "stdio"}), "CLAUDE.md", True),
    "codex": HostSpec("codex", "Codex", ConfigSpec("toml", "mcp_servers", ".codex/config.toml", True), "AGENTS.md"),
    "cursor": HostSpec("cursor", "Cursor", ConfigSpec("jsonc", "mcpServers", ".cursor/mcp.json", False, _BRACE),
                       "AGENTS.md"),
    "gemini-cli": HostSpec(
        "gemini-cli", "Gemini CLI", ConfigSpec("jsonc", "mcpServers", ".gemini/settings.json", False, _DOLLAR,
                                            comments_only=True),
        "GEMINI.md", True),
    # VS Code's own format (`servers`, not `mcpServers`), read by Copilot's agent mode; the profile's mcp.json
    # is per profile (and per edition: Insiders, VSCodium), so no one user-level file is the user's.
    "vscode": HostSpec(
        "vscode", "VS Code",
        ConfigSpec("jsonc", "servers", ".vscode/mcp.json", False, _BRACE, {"type": "stdio"}),
        ".github/copilot-instructions.md"),
    # Kiro's IDE reads comments in mcp.json, its CLI (which reads the same file) does not: we never add one, and
    # keep the user's. One user-level file, ~/.kiro/settings/mcp.json, merged under the workspace's.
    "kiro": HostSpec("kiro", "Kiro", ConfigSpec("jsonc", "mcpServers", ".kiro/settings/mcp.json", True, _BRACE),
                     "AGENTS.md"),
    # Roo Code parses .roo/mcp.json with JSON.parse; its global mcp_settings.json lives in the editor's extension
    # storage (one per editor and edition), so no one user-level file is the user's.
    "roo-code": HostSpec("roo-code", "Roo Code", ConfigSpec("json", "mcpServers", ".roo/mcp.json", False, _BRACE),
                         "AGENTS.md"),
    # Zed's project settings: `context_servers`, each custom server a flat {command, args, env}. Neither its docs
    # nor its settings types show variables expanded there. The user's settings.json is Zed's settings UI's file
    # too: not written.
    "zed": HostSpec("zed", "Zed", ConfigSpec("jsonc", "context_servers", ".zed/settings.json", False), "AGENTS.md",
                    reads_first=ZED_RULES),
    # opencode reads opencode.jsonc and opencode.json from the workspace up to the top of the work tree, each with
    # jsonc-parser (comments, trailing commas), and merges them; a server is {type: "local", command: [..]}.
    "opencode": HostSpec("opencode", "opencode",
                         ConfigSpec("jsonc", "mcp", "opencode.json", False, _OPENCODE, {"type": "local"}, argv=True,
                                    project_alt="opencode.jsonc", schema="https://opencode.ai/config.json"),
                         "AGENTS.md", reads_first=OPENCODE_RULES),
    # Continue reads every *.json file of the workspace's .continue/mcpServers/ (comment-json) holding
    # {mcpServers: {...}}: the file is ours alone, and so is the rule file of .continue/rules/ (a rule with no
    # front matter is always applied). Its ~/.continue/mcpServers/ is every workspace's: not written.
    "continue": HostSpec("continue", "Continue",
                         ConfigSpec("jsonc", "mcpServers", ".continue/mcpServers/vivary.json", False, _BRACE),
                         ".continue/rules/vivary.md"),
    # Windsurf reads its servers from one user-level file only, every workspace's; it interpolates ${env:NAME} and
    # ${file:PATH} in command, args and env. It reads a root AGENTS.md as an always-on rule. Whether it reads
    # comments in mcp_config.json is not documented: strict JSON, so a commented file is reported, never guessed at.
    "windsurf": HostSpec("windsurf", "Windsurf", ConfigSpec("json", "mcpServers", None, True, _BRACE,
                                                        comments_unsaid=True), "AGENTS.md"),
    "claude-desktop": HostSpec("claude-desktop", "Claude Desktop",
                               ConfigSpec("json", "mcpServers", None, True), None),
}


def home_folder(env: dict[str, str] | None = None) -> Path:
    """The user's home folder as the hosts find it: `HOME`, else Windows' `USERPROFILE`, else the system's answer."""
    env = dict(os.environ) if env is None else env
    return Path(env.get("HOME") or env.get("USERPROFILE") or Path.home())


def user_config_path(kind: HostKind, *, platform: str | None = None, env: dict[str, str] | None = None) -> Path:
    """The host's user-level config file on this machine (`HOME` and the platform's variables decide)."""
    env = dict(os.environ) if env is None else env
    platform = sys.platform if platform is None else platform
    home = home_folder(env)
    if kind == "codex":
        codex_home = env.get("CODEX_HOME")
        if codex_home and not Path(codex_home).is_absolute():
            # Taken from the current folder, it would put a user-level file (this machine's paths) in the
            # workspace, and Codex, started elsewhere, would not read it.
            raise UsageError(f"CODEX_HOME={codex_home} is a relative path, so which folder it names depends on "
                             "where a program starts; set it to an absolute path (or unset it for ~/.codex) and "
                             "run again")
        return (Path(codex_home) if codex_home else home / ".codex") / "config.toml"
    if kind == "kiro":
        return home / ".kiro" / "settings" / "mcp.json"  # on every platform, as Kiro's docs give it
    if kind == "windsurf":
        return home / ".codeium" / "windsurf" / "mcp_config.json"  # %USERPROFILE%\.codeium\windsurf on Windows
    if kind == "claude-desktop":
        if platform == "darwin":
            return home / "Library" / "Application Support" / "Claude" / "claude_desktop_config.json"
        if platform.startswith("win"):
            appdata = env.get("APPDATA")
            base = Path(appdata) if appdata else home / "AppData" / "Roaming"
            return base / "Claude" / "claude_desktop_config.json"
        xdg = env.get("XDG_CONFIG_HOME")  # a relative value is ignored, as the XDG Base Directory spec says
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
        return base / "Claude" / "claude_desktop_config.json"
    raise ValueError(f"{kind} has no user-level config file that bootstrap-host writes")


def user_files_read(kind: HostKind, *, env: dict[str, str] | None = None) -> tuple[Path, ...]:
    """User-level files a host merges into a project's by server name, which bootstrap-host never writes:
    opencode's global config folder (xdg-basedir's, ~/.config on every platform), its three names all read; Gemini
    CLI's ~/.gemini/settings.json (`GEMINI_CLI_HOME` stands for the home folder)."""
    if kind not in ("opencode", "gemini-cli"):
        return ()
    env = dict(os.environ) if env is None else env
    home = home_folder(env)
    if kind == "gemini-cli":
        return ((Path(env["GEMINI_CLI_HOME"]) if env.get("GEMINI_CLI_HOME") else home) / ".gemini" / "settings.json",)
    xdg = env.get("XDG_CONFIG_HOME")
    base = (Path(xdg) if xdg else home / ".config") / "opencode"
    return tuple(base / name for name in ("config.json", "opencode.json", "opencode.jsonc"))
