"""`.vivary/memory.toml`: the semantic-memory policy, typed strictly and read from the workspace's tree.

A missing file means memory is disabled with the default privacy policy. The file is meant to be
committed, so it must never hold a secret: a literal key, token or password anywhere in it is refused
before the rest is even type-checked (keys come from an environment variable named in `api_key_env`).
Error messages name the key and line, never the value, so a refused secret is not echoed to a terminal
or a CI log.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import msgspec

from vivary_git.config import DEFAULT_MEMORY_FOLDER, MEMORY_FILE, conflict_marker_line, folder_problem, toml_conflict
from vivary_git.errors import ConfigError

if TYPE_CHECKING:
    from vivary_git.source import Source

__all__ = [
    "MEMORY_FILE",
    "CogneeConfig",
    "DreamConfig",
    "LocalConfig",
    "MemoryConfig",
    "MemoryFile",
    "MemorySection",
    "PrivacyConfig",
    "PrivacyPolicy",
    "RememberConfig",
    "SourcesConfig",
    "load_memory_config",
    "parse_memory_config",
]

DEFAULT_LOCAL_MODEL = "minilm-l6-int8"  # = memory.embed.DEFAULT_EMBEDDER; not imported, embed is not ours to load

Provider = Literal["none", "vivary-local", "cognee"]
Mode = Literal["none", "semantic-provider"]


class PrivacyPolicy(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[memory.privacy]` as far as path decisions go (the floor is not configurable): what
    `privacy.py` decides with (it re-exports this name)."""

    private_paths: tuple[str, ...] = ()
    respect_gitignore: bool = True


class Opened(Protocol):
    """What reading the memory config needs of an open workspace (`workspace.Workspace`): its source.
    A protocol, so this module does not import the workspace, which reaches it through `privacy`."""

    @property
    def source(self) -> Source: ...


class PrivacyConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    respect_gitignore: bool = True
    respect_vivary_private: bool = True
    private_paths: list[str] = []
    fail_closed: bool = True


class LocalConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    state_path: str = ""  # "" = the provider's default, under .git/vivary/ (never in the work tree)
    model: str = DEFAULT_LOCAL_MODEL
    require_explicit_index: bool = True
    auto_index: bool = False
    allow_network: bool = False


class CogneeConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    state_path: str = ".vivary/memory/cognee"
    allow_network: bool = False
    require_explicit_index: bool = True
    api_key_env: str = ""
    allow_without_api_key: bool = False
    allow_telemetry: bool = False
    dataset: str = ""  # a label; the dataset name always adds the workspace path hash


Durability = Literal["working", "durable", "pinned", "ephemeral"]
DEFAULT_SIMILARITY = 0.75  # set on half of tests/data/probe_pairs.jsonl (bench/bench_probe.py)


class RememberConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[memory.remember]`: where agent memories are written (`git vivary remember`, the MCP `add`)."""

    folder: str = DEFAULT_MEMORY_FOLDER  # workspace-relative; never a private floor folder
    branch: str = ""  # "" = the checked-out branch; else a branch name such as "vivary/memory"
    similarity: float = DEFAULT_SIMILARITY  # cosine at or above which an add making the same claim is a duplicate
    durability: Durability = "working"  # the default tier of a new memory
    # `move` rewrites links to the moved memory in your own notes too (default: only in other memories; yours
    # that still name the old path are listed). `git vivary move --rewrite-user-links` does it once.
    rewrite_user_links: bool = False


class DreamConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[memory.dream]`: the optional chat provider that can resolve dream tasks (`dream --use-chat`). Off by
    default; it sends the task's source memories to `url`, so it also needs `allow_network = true`."""

    chat: Literal["none", "openai-compatible"] = "none"
    url: str = ""  # the API base, e.g. "http://127.0.0.1:11434/v1" (POST {url}/chat/completions)
    model: str = ""
    api_key_env: str = ""  # the NAME of the variable holding the key ("" for none)
    allow_network: bool = False
    timeout: float = 60.0


class SourcesConfig(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """`[memory.sources]`: source anchors (`remember --file/--folder/--url`, docs/remember.md)."""

    allow_network: bool = False  # URLs are fetched only with this and `--allow-network`
    allow_private_addresses: bool = False  # loopback, private and link-local addresses (an intranet)
    timeout: float = 20.0  # seconds for one whole fetch, redirects included
    max_fetch_bytes: int = 10 * 1024 * 1024  # a page's body, read no further
    max_redirects: int = 5
    max_text: int = 50_000  # characters of extracted text kept in an anchor note


DEFAULT_MAX_UNINDEXED = 32


class MemorySection(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    enabled: bool = False
    mode: Mode = "none"
    provider: Provider = "none"
    # Notes changed since the index was built that the MCP server, and a memory write on the command line, embed
    # themselves (write-through); past this many the server's hybrid search answers with keywords and a write
    # leaves the index to `index --yes`, and both say so (docs/mcp.md, docs/remember.md).
    max_unindexed: int = DEFAULT_MAX_UNINDEXED
    privacy: PrivacyConfig = PrivacyConfig()
    local: LocalConfig = LocalConfig()
    cognee: CogneeConfig = CogneeConfig()
    remember: RememberConfig = RememberConfig()
    dream: DreamConfig = DreamConfig()
    sources: SourcesConfig = SourcesConfig()


class MemoryFile(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    memory: MemorySection = MemorySection()


class MemoryConfig(msgspec.Struct, frozen=True):
    """The validated file plus where it came from (`source` is None when there was no file)."""

    memory: MemorySection
    source: str | None = None
    # When there is no file: what stands at its path instead ("a submodule", "a folder"; docs/config.md#limits),
    # and that path in the repository, for a message that says so.
    in_the_way: str = ""
    path: str = ""

    @property
    def enabled(self) -> bool:
        return self.memory.enabled and self.memory.provider != "none"

    @property
    def provider(self) -> Provider:
        """The provider in force: "none" unless memory is enabled."""
        return self.memory.provider if self.enabled else "none"

    @property
    def model(self) -> str:
        """What the provider embeds with, as far as the snapshot fingerprint is concerned."""
        if self.provider == "vivary-local":
            return self.memory.local.model
        return ""  # Cognee's models are its own settings (env), "none" embeds nothing

    @property
    def auto_index(self) -> bool:
        """Whether the file asks the hooks to index (`auto_index = true` for the vivary-local provider): the team's
        wish, which the user's own Git config approves or not (memory/local/autoindex.py)."""
        return self.provider == "vivary-local" and self.memory.local.auto_index

    @property
    def dataset_label(self) -> str:
        return self.memory.cognee.dataset if self.provider == "cognee" else ""

    def in_the_way_fix(self) -> tuple[str, str]:
        """When a submodule or a folder stands where the file would be: what is there (`X is a submodule, not a
        config file`) and the first step of the fix (`remove the submodule (...), then `); empty otherwise."""
        if not self.in_the_way:
            return "", ""
        what = f"{self.path} is {self.in_the_way}, not a config file"
        if self.in_the_way == "a submodule":
            return what, f"remove the submodule (`git rm -- {self.path}` at the top of the repository), then "
        return what, f"move the folder {self.path} out of the way, then "

    def in_the_way_said(self) -> str:
        """What stands where the file would be and how to enable memory anyway, in the words `recall` uses
        (`provider.require_local`): for the reports that say memory is off (`index --dry-run`, doctor)."""
        there, clear = self.in_the_way_fix()
        return (f"{there}; to enable the local provider, {clear}write [memory] enabled = true and provider = "
                f"\"vivary-local\" in {self.path} (docs/memory.md)") if there else ""

    def policy(self) -> PrivacyPolicy:
        p = self.memory.privacy
        return PrivacyPolicy(private_paths=tuple(p.private_paths), respect_gitignore=p.respect_gitignore)


DISABLED = MemoryConfig(memory=MemorySection())

# --- secrets ------------------------------------------------------------------------------------------

# Key names that only ever hold a secret. `api_key_env` holds the *name* of a variable and is the fix.
_SECRET_KEY = re.compile(r"api[-_]?key|apikey|token|secret|passw(?:or)?d|credential|private[-_]?key|access[-_]?key",
                         re.IGNORECASE)
_NOT_SECRET_KEYS = frozenset({"api_key_env", "allow_without_api_key"})
# Values shaped like keys whatever their key is called: vendor prefixes, long hex, long mixed-case base64.
_KEY_PREFIX = re.compile(
    r"\A(?:sk-|sk_live_|sk_test_|rk_live_|pk_live_|ghp_|gho_|ghu_|ghs_|github_pat_|glpat-|xox[abpr]-|hf_|AKIA|ASIA|AIza)"
    r"[A-Za-z0-9_\-]{12,}\Z"
)
_LONG_HEX = re.compile(r"\A[0-9a-fA-F]{32,}\Z")
_LONG_B64 = re.compile(r"\A[A-Za-z0-9+_\-]{32,}={0,2}\Z")  # no `/` or `.`: paths and globs never look like this
_ENV_NAME = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")


def _looks_like_key(value: str) -> bool:
    if _KEY_PREFIX.match(value) or _LONG_HEX.match(value):
        return True
    # A random token mixes cases and digits; a long slug such as `my-very-long-dataset-name-2024` does not.
    return bool(_LONG_B64.match(value)) and any(c.isupper() for c in value) and any(c.islower() for c in value) \
        and any(c.isdigit() for c in value)


def _find_secret(value: Any, path: list[str]) -> tuple[list[str], str] | None:
    """The dotted key path of the first literal secret and why it is one, or None."""
    if isinstance(value, dict):
        for k, v in value.items():
            hit = _find_secret(v, [*path, str(k)])
            if hit is not None:
                return hit
            if str(k) not in _NOT_SECRET_KEYS and _SECRET_KEY.search(str(k)) and v not in ("", None, False, True):
                return [*path, str(k)], "its name says it holds a secret"
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            hit = _find_secret(v, [*path[:-1], f"{path[-1]}[{i}]"] if path else [f"[{i}]"])
            if hit is not None:
                return hit
        return None
    if isinstance(value, str) and _looks_like_key(value):
        return path, "its value looks like an API key or token"
    return None


def _line_of(text: str, key: str) -> int | None:
    """Best effort: the 1-based line that sets `key` (TOML tables do not keep line numbers)."""
    bare = re.sub(r"\[\d+\]\Z", "", key)
    pattern = re.compile(rf"""^\s*(?:[\w.\-"']*\.)?["']?{re.escape(bare)}["']?\s*=""")
    for n, line in enumerate(text.splitlines(), 1):
        if pattern.match(line):
            return n
    return None


def _where(name: str, text: str, key: str) -> str:
    line = _line_of(text, key)
    return f"{name}:{line}" if line is not None else name


# --- parsing ------------------------------------------------------------------------------------------


def parse_memory_config(data: bytes, name: str = MEMORY_FILE) -> MemoryConfig:
    """Validate the bytes of a memory.toml (`name` is how errors refer to the file)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError(f"{name}: not valid UTF-8 ({err.reason}); re-save it as UTF-8") from None
    import tomllib  # here: `privacy` imports this module for PrivacyPolicy alone

    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        conflict = conflict_marker_line(text)
        raise ConfigError(toml_conflict(name, conflict) if conflict is not None
                          else f"{name}: invalid TOML: {err}") from None
    except RecursionError:
        raise ConfigError(f"{name}: invalid TOML: arrays or tables are nested too deeply; flatten them") from None
    hit = _find_secret(raw, [])
    if hit is not None:
        keys, why = hit
        dotted = ".".join(keys)
        raise ConfigError(
            f"{_where(name, text, keys[-1])}: `{dotted}` holds a literal secret ({why}); this file is meant to be "
            "committed, so never put a key in it: remove the value, export the key in an environment variable "
            "and name that variable in `api_key_env` (for example api_key_env = \"LLM_API_KEY\")"
        )
    try:
        parsed = msgspec.convert(raw, MemoryFile, strict=True)
    except msgspec.ValidationError as err:
        raise ConfigError(_type_error(name, text, str(err))) from None
    _check_semantics(parsed.memory, name, text)
    return MemoryConfig(memory=parsed.memory, source=name)


_CHOICES = {"$.memory.provider": '"none", "vivary-local", "cognee"', "$.memory.mode": '"none", "semantic-provider"'}


def _type_error(name: str, text: str, said: str) -> str:
    # msgspec says e.g. "Expected `bool`, got `str` - at `$.memory.enabled`" or
    # "Object contains unknown field `foo` - at `$.memory`".
    m = re.search(r" - at `(\$[^`]*)`\Z", said)
    path = m.group(1) if m else "$"
    what = said[: m.start()] if m else said
    unknown = re.match(r"Object contains unknown field `([^`]*)`", what)
    if unknown:
        key = unknown.group(1)
        table = f"`{path}`" if path != "$" else "the top level"
        return (f"{_where(name, text, key)}: unknown key `{key}` in {table}; check the spelling against "
                "docs/index.md (the memory.toml reference) or remove it")
    last = path.rsplit(".", 1)[-1] if path != "$" else ""
    loc = _where(name, text, last) if last else name
    what = what[:1].lower() + what[1:] if what else "invalid value"
    if path in _CHOICES:
        what += f" (expected one of {_CHOICES[path]})"
    return f"{loc}: `{path}`: {what}; fix the value (see docs/index.md, the memory.toml reference)"


def _check_semantics(m: MemorySection, name: str, text: str) -> None:
    if not m.privacy.fail_closed:
        raise ConfigError(
            f"{_where(name, text, 'fail_closed')}: `memory.privacy.fail_closed = false` is not supported: the "
            "privacy boundary always fails closed (when Git cannot decide, nothing is admitted); remove the key"
        )
    if not m.privacy.respect_vivary_private:
        raise ConfigError(
            f"{_where(name, text, 'respect_vivary_private')}: `memory.privacy.respect_vivary_private = false` is "
            "not supported: the private floor (USER.md, MEMORY.md, memory/**, …) always applies; remove the key"
        )
    for i, pattern in enumerate(m.privacy.private_paths):
        if not pattern.strip() or any(c in pattern for c in "\n\r\0"):
            raise ConfigError(
                f"{_where(name, text, 'private_paths')}: `memory.privacy.private_paths[{i}]` must be one "
                "non-empty gitignore-style pattern per entry (no line breaks); split or remove it"
            )
    if not 0 <= m.max_unindexed <= 100_000:
        raise ConfigError(f"{_where(name, text, 'max_unindexed')}: `memory.max_unindexed = {m.max_unindexed}` must be "
                          f"0 to 100,000 notes (default {DEFAULT_MAX_UNINDEXED}; 0: the server never embeds itself)")
    _check_remember(m.remember, name, text)
    _check_dream(m.dream, name, text)
    _check_sources(m.sources, name, text)
    env = m.cognee.api_key_env
    if env and not _ENV_NAME.match(env):
        raise ConfigError(
            f"{_where(name, text, 'api_key_env')}: `memory.cognee.api_key_env` must be the NAME of an environment "
            "variable (letters, digits, `_`), for example \"LLM_API_KEY\", not the key itself"
        )
    for table, state in (("local", m.local.state_path), ("cognee", m.cognee.state_path)):
        if not state:
            continue
        parts = state.replace("\\", "/").split("/")
        if state.startswith(("/", "~")) or ":" in parts[0] or ".." in parts or parts[0] != ".vivary":
            raise ConfigError(
                f"{_where(name, text, 'state_path')}: `memory.{table}.state_path = {state!r}` must be a relative "
                "path under `.vivary/` (for example \".vivary/memory/" + table + "\"), where the privacy floor keeps "
                "provider state out of every index; leave it empty for the default"
            )


_BRANCH = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9._/-]*\Z")


def _check_remember(r: RememberConfig, name: str, text: str) -> None:
    problem = folder_problem(r.folder)
    if problem is not None:
        raise ConfigError(f"{_where(name, text, 'folder')}: `memory.remember.folder = {r.folder!r}` {problem}")
    if r.branch and (not _BRANCH.match(r.branch) or ".." in r.branch or r.branch.endswith((".lock", "/", "."))
                     or "//" in r.branch or "/." in r.branch or "@{" in r.branch):
        raise ConfigError(
            f"{_where(name, text, 'branch')}: `memory.remember.branch = {r.branch!r}` must be a plain branch name such "
            "as \"vivary/memory\" (or \"\" for the checked-out branch)"
        )
    if not 0.0 < r.similarity <= 1.0:
        raise ConfigError(
            f"{_where(name, text, 'similarity')}: `memory.remember.similarity = {r.similarity}` must be a cosine "
            "above 0 and at most 1 (default 0.75; 1 blocks only identical memories)"
        )


def _check_dream(d: DreamConfig, name: str, text: str) -> None:
    if d.api_key_env and not _ENV_NAME.match(d.api_key_env):
        raise ConfigError(
            f"{_where(name, text, 'api_key_env')}: `memory.dream.api_key_env` must be the NAME of an environment "
            "variable (letters, digits, `_`), for example \"LLM_API_KEY\", not the key itself"
        )
    if d.url and not re.match(r"\Ahttps?://[^\s/@]+(?:/[^\s]*)?\Z", d.url):
        raise ConfigError(f"{_where(name, text, 'url')}: `memory.dream.url` must be an http(s) URL without "
                          "credentials, e.g. \"http://127.0.0.1:11434/v1\"")
    if d.chat != "none" and (not d.url or not d.model):
        raise ConfigError(f"{_where(name, text, 'chat')}: `memory.dream.chat = {d.chat!r}` needs `url` and `model`")
    if not 0 < d.timeout <= 600:
        raise ConfigError(f"{_where(name, text, 'timeout')}: `memory.dream.timeout` must be 1 to 600 seconds")


_SOURCE_BOUNDS = (("timeout", 0.1, 300.0), ("max_fetch_bytes", 1024, 256 * 1024 * 1024),
                  ("max_redirects", 0, 20), ("max_text", 1000, 1_000_000))


def _check_sources(s: SourcesConfig, name: str, text: str) -> None:
    for key, low, high in _SOURCE_BOUNDS:
        value = getattr(s, key)
        if not low <= value <= high:
            raise ConfigError(f"{_where(name, text, key)}: `memory.sources.{key} = {value}` must be between "
                              f"{low:,} and {high:,}")


def load_memory_config(ws: Opened) -> MemoryConfig:
    """The memory config in the workspace's tree (the same tree as the notes), or `DISABLED`."""
    source = ws.source
    display = f"{source.prefix}/{MEMORY_FILE}" if source.prefix else MEMORY_FILE
    data: bytes | None
    if source.repo is not None and source.tree_id is not None:
        data = _read_tree_file(ws, display)
        if data is None and source.kind == "worktree":
            # The working tree's tree holds only what `git add -A` would: an ignored memory.toml is left
            # out, and silently running without its private_paths would admit files the user meant private.
            refuse_ignored_policy(source.root / MEMORY_FILE, display)
    elif source.repo is None:
        data = _read_plain(source.root / MEMORY_FILE, display)
    else:
        data = None  # the workspace root is not in this tree at all
    if data is None:
        in_the_way = _in_the_way(ws)
        return MemoryConfig(memory=MemorySection(), in_the_way=in_the_way, path=display) if in_the_way else DISABLED
    return parse_memory_config(data, display)


def _in_the_way(ws: Opened) -> str:
    """What the workspace holds where its memory.toml would be, when that is no config file: a submodule (a
    gitlink) or a folder; "" when nothing is there."""
    source = ws.source
    if source.repo is not None and source.tree_id is not None:
        from vivary_git.source import entry_type

        return {"commit": "a submodule", "tree": "a folder"}.get(entry_type(source.repo, source.tree_id, MEMORY_FILE)
                                                                 or "", "")
    path = source.root / MEMORY_FILE
    return "a folder" if source.repo is None and not path.is_symlink() and path.is_dir() else ""


def _read_tree_file(ws: Opened, display: str) -> bytes | None:
    """The memory.toml blob, by the rule every config file in a tree is read by (`source.config_blob_id`): a
    symbolic link (or a `.vivary` folder that is one) is refused, a folder or a submodule of its name is none."""
    from vivary_git.source import config_blob_id, read_config_blob

    repo, tree_id = ws.source.repo, ws.source.tree_id
    assert repo is not None and tree_id is not None
    oid = config_blob_id(repo, tree_id, MEMORY_FILE, display)
    return None if oid is None else read_config_blob(repo, oid, display, file=MEMORY_FILE)


def _read_plain(path: Path, display: str) -> bytes | None:
    if path.is_symlink():
        raise ConfigError(f"{display}: is a symbolic link; replace it with the file itself")
    from vivary_git.source import read_config_file

    return read_config_file(path, display)  # a FIFO or a device is an error, not "no policy"


def refuse_ignored_policy(path: Path, name: str) -> None:
    """`ConfigError` when the working tree's tree holds no memory.toml `name` but the disk holds a file `path` of
    that name: Git ignores it, and running without its `private_paths` would admit files the user meant private.
    A folder there (a submodule's checkout, an empty folder) is no config file, on disk as in the tree."""
    if os.path.lexists(path) and not path.is_dir():
        raise ConfigError(
            f"{name}: exists but Git ignores it, so it is not part of the tree vivary reads; memory "
            f"policy must be visible to Git: un-ignore it (add `!{MEMORY_FILE}` to .gitignore after the rule "
            f"that ignores it) or `git add -f {name}`"
        )
