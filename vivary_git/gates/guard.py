"""The pre-commit privacy guard: refuse a commit that stages a private file or a literal secret.

The guard asks the same privacy boundary as the memory snapshot and the cache
(`privacy.decide_scoped`), over the index Git hands the hook, with every workspace in it (each
folder holding `tropo.toml` or `.vivary/`) getting the floor at its root and its own
`.vivary/memory.toml` `private_paths`, whatever folder the commit is made from. It refuses:

* `P101`: a file the floor or a `private_paths` makes private;
* `P104`: a file with a sensitive name (`.env*`, `*.pem`, `*.key`, `id_rsa*`, `secrets.*`,
  `credentials.*`, …: `privacy.SENSITIVE_NAMES`), unless its exact path is allowed (`git config --add
  vivary.guardAllow PATH`, or `--allow PATH`): a novel's chapter called `secrets.md` is one line of config away;
* `P102`/`P103`: a staged `.vivary/memory.toml` holding a literal secret, or one that cannot be read (read
  from the index's tree as every config file is, `source.config_blob_id`: a symbolic link refused, a
  submodule of that name no config file): one P103 at each such file, the staged files still decided
  beside it (its workspace without its `private_paths`, as the commit is refused anyway).

Git ignore rules are left out on purpose: a force-added ignored file is a deliberate commit (it still
stays out of the semantic memory and the shared cache). The floor's `.vivary/**` is exempt too: that
folder holds the workspace's committed config (`workspace.toml`, `graph.toml`, `memory.toml`),
private only in the sense that it is never embedded.

A submodule (a gitlink) is decided by its name, like a file: it has no bytes here, but the name is
committed (doctor calls the same path a leak).

Everything is read from the index Git hands the hook (`GIT_INDEX_FILE` included, as `git commit -a`
uses a temporary one), so the guard judges exactly what the commit would contain.
"""

from __future__ import annotations

import importlib.util
import re
import tomllib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from vivary_git import git
from vivary_git.errors import ConfigError, GitError
from vivary_git.models import Finding

MEMORY_TOML = ".vivary/memory.toml"
CODE_PRIVATE = "P101"
CODE_SECRET = "P102"
CODE_CONFIG = "P103"
CODE_SENSITIVE = "P104"
ALLOW_KEY = "vivary.guardAllow"

# Key names that hold a credential when their value is a string (`api_key_env` names a variable: fine).
_SECRET_KEY = re.compile(
    r"api[-_]?key|token|secret|password|passwd|credential|private[-_]?key|(?:\A|[-_])auth(?:\Z|[-_])", re.IGNORECASE
)
# Values that are credentials whatever the key is called (common vendor formats).
_SECRET_VALUE = re.compile(
    r"\A(?:sk-[A-Za-z0-9_-]{16,}|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|AKIA[0-9A-Z]{16}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{20,}|AIza[0-9A-Za-z_-]{30,})"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----"
)


# ACMR: added, copied, modified, renamed; a deletion stages nothing private. A submodule (a gitlink) has no
# bytes here but its name is committed, so it is decided like a file: `--ignore-submodules=none`, or an
# `ignore = all` in .gitmodules (any commit can write one) or `diff.ignoreSubmodules` would hide it.
_STAGED = ["diff", "--cached", "--name-only", "-z", "--diff-filter=ACMR", "--no-ext-diff", "--ignore-submodules=none"]
# Unquoted pathspec `*` matches across `/`: every workspace's config, at any depth.
_CONFIGS = ["ls-files", "-z", "--cached", "--", MEMORY_TOML, f"*/{MEMORY_TOML}"]


def _names(raw: bytes) -> list[str]:
    return [p for p in raw.decode("utf-8", "surrogateescape").split("\0") if p]


def guard(top: Path, allow: Sequence[str] = (), *, masked: bool = False) -> list[Finding]:
    """Findings (all at level error) for what the index would commit; empty when the commit may go on.
    `allow`: exact repository-relative paths whose sensitive name is not a reason to refuse (added to
    those in `git config vivary.guardAllow`). `masked`: others read the findings (a CI job's log), so a
    `private_paths` rule is named by its place alone (`PrivacyDecision.told`), never by its pattern, the text of a
    `.vivary/memory.toml`."""
    from vivary_git.privacy import Scope, decide_scoped, find_scopes

    staged_proc, configs_proc, allowed_proc = git.run_all(
        [_STAGED, _CONFIGS, ["config", "--get-all", ALLOW_KEY]], cwd=top, check=False)
    for proc in (staged_proc, configs_proc):
        if proc.returncode != 0:
            said = proc.stderr.decode("utf-8", "replace").strip()
            raise GitError(f"the privacy guard cannot read the index: {said or 'git failed'}")
    staged = _names(staged_proc.stdout)
    if not staged:
        return []
    allowed = set(allow) | set(allowed_proc.stdout.decode("utf-8", "surrogateescape").splitlines())
    tree = git.run(["write-tree"], cwd=top, check=False)
    if tree.returncode != 0:
        said = tree.stderr.decode("utf-8", "replace").strip()
        raise GitError(f"the privacy guard cannot write the index as a tree: {said}; resolve conflicts first")
    tree_id = tree.stdout.decode().strip()
    from vivary_git.git import Repo
    from vivary_git.source import tree_config

    repo = Repo(top)
    findings: list[Finding] = []
    patterns: dict[str, tuple[str, ...]] = {}
    staged_set = set(staged)
    # Each memory.toml is read from the index's tree by the rule every reader of a config file follows
    # (`source.config_blob_id`): a symbolic link is refused, a submodule of that name is no config file. Once:
    # `find_scopes` below is handed what this loop read, not left to read it again. One that cannot be read
    # (including one the listing cannot name, in a `.vivary` that is a symbolic link) is one P103 at its own
    # file, and its workspace is decided without its private_paths, as for one that is not valid TOML: the
    # commit is refused either way, with every other finding beside it.
    read: dict[str, bytes | None] = {}

    def read_config(name: str) -> bytes | None:
        if name not in read:
            try:
                read[name] = tree_config(repo, tree_id, name)
            except ConfigError as err:
                read[name] = None
                findings.append(_unreadable(name, err))
        return read[name]

    for cfg in sorted(_names(configs_proc.stdout)):
        data = read_config(cfg)
        if data is None:
            continue
        private, problems = read_memory_config(cfg, data, cfg in staged_set)
        patterns[cfg.removesuffix(MEMORY_TOML).rstrip("/")] = tuple(private)
        findings += problems
    scopes = find_scopes(repo, tree_id, staged, read=lambda folder, _data: Scope(folder, patterns.get(folder, ())),
                         read_config=read_config)
    decided = [d for d in decide_scoped(top, staged, scopes, trees=(), gitignore=False, git_dir=repo.pinned_git_dir)
               if d.private and not d.reason.startswith("floor: .vivary/**")]
    ignored = _ignored(top, [d.path for d in decided if d.reason.startswith(("floor:", "config:"))])
    for d in decided:
        where = _sh_quote(d.path)
        if d.reason.startswith(("floor:", "config:")):
            # As every verdict is told: in full at the owner's terminal, a `private_paths` rule by its place alone
            # where others read it (`private_paths in .vivary/memory.toml`: its pattern names what is kept private).
            rule = d.told(masked=masked)
            # Telling someone whose .gitignore already lists it to list it there sends them looking for a
            # rule that is not missing: it was staged with `git add -f`.
            then = (" (Git already ignores it; `git add -f` stages it anyway)" if d.path in ignored
                    else " and list it in .gitignore")
            findings.append(Finding(d.path, 1, "error", CODE_PRIVATE,
                                    f"private file staged ({rule}); unstage it with "
                                    f"`git restore --staged -- {where}`{then}{d.unsaid(masked=masked)}"))
        elif d.reason.startswith("sensitive name:") and d.path not in allowed:
            findings.append(Finding(d.path, 1, "error", CODE_SENSITIVE,
                                    f"file with a sensitive name staged ({d.reason}); unstage it with "
                                    f"`git restore --staged -- {where}`, or, if it holds no secret, allow this "
                                    f"path: `git config --add {ALLOW_KEY} {where}`"))
    return sorted(findings)


def _ignored(top: Path, paths: Sequence[str]) -> set[str]:
    """Which of `paths` Git's ignore rules match (`--no-index`: staged ones too), for the fix a finding
    names. Only a hint: when Git cannot answer, none."""
    if not paths:
        return set()
    asked = "".join(f"./{p}\0" for p in paths).encode("utf-8", "surrogateescape")
    proc = git.run(["check-ignore", "--no-index", "-z", "--stdin"], cwd=top, input=asked, check=False)
    if proc.returncode not in (0, 1):
        return set()
    return {p.removeprefix("./") for p in _names(proc.stdout)}


def _unreadable(name: str, err: ConfigError) -> Finding:
    """P103 for a memory.toml the shared reader refused, at the file or the folder its message names."""
    said = str(err)
    where = [name, *(name[:i] for i in range(len(name)) if name[i] == "/")]
    shown = next((w for w in where if said.startswith(f"{w}: ")), "")
    return Finding(shown or name, 1, "error", CODE_CONFIG, said[len(shown) + 2:] if shown else said)


def read_memory_config(name: str, data: bytes, staged: bool) -> tuple[list[str], list[Finding]]:
    """A memory.toml's `private_paths`, and findings that refuse the commit. Uses the memory config's own
    strict parser when this vivary-git has it; the minimal reading below is the fallback."""
    if importlib.util.find_spec("vivary_git.memory.config") is None:
        return _read_minimal(name, data, staged)
    from vivary_git.memory.config import parse_memory_config

    try:
        cfg = parse_memory_config(data, name)
    except ConfigError as err:
        # Its messages start `name:line: `; a config we cannot read leaves private paths unknown: refuse.
        said = str(err)
        m = re.match(rf"{re.escape(name)}(?::(\d+))?: ", said)
        line = int(m.group(1)) if m and m.group(1) else 1
        message = said[m.end():] if m else said
        code = CODE_SECRET if "literal secret" in message else CODE_CONFIG
        return [], [Finding(name, line, "error", code, message)]
    return list(cfg.memory.privacy.private_paths), []


def _read_minimal(name: str, data: bytes, staged: bool) -> tuple[list[str], list[Finding]]:
    text = data.decode("utf-8", "replace")
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        line = int(m.group(1)) if (m := re.search(r"line (\d+)", str(err))) else 1
        return [], [Finding(name, line, "error", CODE_CONFIG,
                            f"not valid TOML ({err}); the guard cannot know which paths are private: "
                            "fix the file and stage it again")]
    except RecursionError:
        return [], [Finding(name, 1, "error", CODE_CONFIG,
                            "not valid TOML (arrays or tables nested too deeply); the guard cannot know which "
                            "paths are private: flatten them and stage the file again")]
    findings: list[Finding] = []
    private, problem = _private_paths(raw)
    if problem:
        findings.append(Finding(name, _line_of(text, "private_paths"), "error", CODE_CONFIG, problem))
    if staged:
        findings += [Finding(name, _line_of(text, key.rsplit(".", 1)[-1]), "error", CODE_SECRET,
                             f"'{key}' holds a literal secret, and secrets never go in this file: put the value "
                             f"in an environment variable and name that variable instead "
                             f"(`{key.rsplit('.', 1)[-1]}_env = \"NAME\"`), then stage the file again")
                     for key in _secrets(raw)]
    return private, findings


def _private_paths(data: dict[str, Any]) -> tuple[list[str], str]:
    memory = data.get("memory", {})
    privacy = memory.get("privacy", {}) if isinstance(memory, dict) else {}
    value = privacy.get("private_paths", []) if isinstance(privacy, dict) else []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return [], "[memory.privacy] private_paths must be a list of strings (gitignore patterns)"
    return value, ""


def _secrets(data: dict[str, Any]) -> Iterator[str]:
    for key, value in _walk(data, ""):
        name = key.rsplit(".", 1)[-1]
        if not isinstance(value, str) or not value.strip():
            continue
        if (_SECRET_KEY.search(name) and not name.lower().endswith("_env")) or _SECRET_VALUE.search(value):
            yield key


def _walk(value: Any, key: str) -> Iterator[tuple[str, Any]]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, f"{key}.{k}" if key else str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


def _line_of(text: str, key: str) -> int:
    pattern = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=", re.MULTILINE)
    m = pattern.search(text)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def _sh_quote(path: str) -> str:
    import shlex

    return shlex.quote(path)
