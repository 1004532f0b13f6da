"""Plan and write a workspace scaffold: the seed graph, agent guidance, private files, memory policy.

Planning reads only; `apply` writes what the plan says and nothing else. A file that exists is never
overwritten unless `force` is set, and private files (`USER.md`, `MEMORY.md`, `memory/…`) are never
overwritten at all: they hold a person's own words. `.gitignore` is merged, not replaced: the private
rules live in one marked block that is appended when missing.

Whether the private files really are private is decided by Git, not by reading `.gitignore`:
`verify_private` asks `git check-ignore` about each one after writing, and `commit` refuses to run
when any of them would be committed.
"""

from __future__ import annotations

import datetime
import errno
import json
import os
import re
import stat
from importlib import resources
from pathlib import Path
from string import Template
from typing import Literal

import msgspec

from vivary_git import git
from vivary_git.config import BUILTIN_EXCLUDES, Excluder
from vivary_git.errors import GitError, RefusedError, UsageError
from vivary_git.scaffold.presets import PROVIDER_OF, STARTERS, Host, Memory, Preset, Storage

Action = Literal["create", "overwrite", "append", "update", "same", "keep"]

GITIGNORE_START = "# >>> vivary private >>>"
GITIGNORE_END = "# <<< vivary private <<<"
DECISION_ID = "0001-typed-graph-is-the-truth"
MEMORY_TOML = ".vivary/memory.toml"
MEMORY_DOC = "docs/memory.md"  # how to turn the memory on; in a vault, VAULT_MEMORY_DOC
VAULT_MEMORY_DOC = ".vivary/memory.md"
# Files the scaffold writes that must stay out of Git; `verify_private` proves it for each.
PRIVATE_FILES = ("USER.md", "MEMORY.md", "memory/README.md", "heartbeat-reports/README.md")
# The generated tropo.toml's `exclude`: the scaffold's own non-notes and private files. An entry that would
# hide a note already in the folder is left out (`plan_scaffold`): init never hides existing notes.
EXCLUDE = (".strato", ".cursor", "docs", "memory", "heartbeat-reports", "README.md", "AGENTS.md", "CLAUDE.md",
           "GEMINI.md", "USER.md", "MEMORY.md")
# The folders the generated tropo.toml makes type folders: notes already there must carry the type's fields.
TYPE_FOLDERS = ("modules", "changes", "decisions", "verification", "gates")

_HOST_FILES: dict[Host, tuple[tuple[str, str], ...]] = {
    "claude-code": (("CLAUDE.md", "CLAUDE.md"),),
    "gemini-cli": (("GEMINI.md", "GEMINI.md"),),
    "cursor": ((".cursor/rules/vivary.mdc", "cursor-rule.mdc"),),
    "codex": (),
    "vscode": (),
    "kiro": (),
    "roo-code": (),
    "zed": (),
    "opencode": (),
    "continue": (),
    "windsurf": (),
    "claude-desktop": (),
    "generic": (),
}
_HOST_NOTE: dict[Host, str] = {
    "claude-code": "Claude Code reads this file through `CLAUDE.md`.",
    "gemini-cli": "Gemini CLI reads this file through `GEMINI.md`.",
    "cursor": "Cursor reads this file, and `.cursor/rules/vivary.mdc` points here.",
    "codex": "Codex reads this file directly.",
    "vscode": "VS Code's agent mode reads this file directly (its `chat.useAgentsMdFile` setting, on by default).",
    "kiro": "Kiro reads this file directly (its steering supports `AGENTS.md`).",
    "roo-code": "Roo Code reads this file directly (its `roo-cline.useAgentRules` setting, on by default).",
    "zed": "Zed reads this file directly, unless the workspace has a file it reads first (`.rules`, `.cursorrules`, "
    "`.windsurfrules`, `.clinerules`, `.github/copilot-instructions.md`, `AGENT.md`): it reads only one.",
    "opencode": "opencode reads this file directly (and `CLAUDE.md` only in a folder without one).",
    "continue": "Continue reads this file as a rule that is always applied (current versions; "
    "`git vivary bootstrap-host --host-kind continue` adds its own rule file, `.continue/rules/vivary.md`).",
    "windsurf": "Windsurf reads this file directly, as a rule that is always on.",
    "claude-desktop": "Claude Desktop reads no instructions file of a workspace: this file is for the agents that "
    "open the folder.",
    "generic": "",
}
_INSTALL_STEP: dict[Memory, str] = {
    "none": "",
    "local": "    pip install 'vivary-git[embed]'\n\nThis adds the offline embedding model and the vector index. "
    "It needs no account or server,\nand nothing it does goes over the network.",
    "cognee": "    pip install 'vivary-git[cognee]'\n\nThis adds the Cognee library (large); vivary-git imports it "
    "only to index, recall or forget,\nafter the gates below. Cognee's model settings are its own (LLM_*, "
    "EMBEDDING_*).",
}
_ACTIVATION_EXTRA: dict[Memory, str] = {
    "none": "",
    "local": "",
    "cognee": "\nCognee talks to a model: provider calls also need `allow_network = true` (a separate,\n"
    "explicit choice) and either `api_key_env` naming an environment variable that holds the\n"
    "key, or `allow_without_api_key = true` for a local model. Telemetry stays off unless you\n"
    "set `allow_telemetry = true`.\n",
}


class Choices(msgspec.Struct, frozen=True):
    preset: Preset
    memory: Memory
    storage: Storage
    host: Host
    project: str


class PlannedFile(msgspec.Struct, frozen=True):
    """One file of the plan. `path` is relative to the workspace directory."""

    path: str
    action: Action
    private: bool
    note: str = ""


class ExistingNotes(msgspec.Struct, frozen=True):
    """Notes already in the folder (the scaffold's own paths aside), and what the scaffold does about them."""

    count: int
    typed: dict[str, int]  # type folder -> notes already in it (they must carry that type's fields)
    exclude_dropped: dict[str, int]  # exclude entry left out -> notes it would have hidden


class KeptDialect(msgspec.Struct, frozen=True):
    """A vault init keeps reading as its editor does: no `tropo.toml`, no typed seed graph."""

    dialect: str  # obsidian | dendron | foam | logseq
    reason: str  # how it was recognised (`.obsidian/ found`, `named in .vivary/graph.toml`)


class ScaffoldPlan(msgspec.Struct):
    target: Path
    choices: Choices
    files: list[PlannedFile]
    contents: dict[str, bytes]  # what each path will hold after `apply` (only for writing actions)
    git_init: bool  # the target is not inside a Git work tree yet
    force: bool
    non_empty: bool = False  # the folder already held something besides `.git`
    existing: ExistingNotes = ExistingNotes(0, {}, {})
    kept_dialect: KeptDialect | None = None  # a vault's dialect, kept: the typed seed graph is left out

    def writes(self) -> list[PlannedFile]:
        return [f for f in self.files if f.action in ("create", "overwrite", "append", "update")]


def _template(name: str) -> Template:
    text = resources.files("vivary_git.scaffold").joinpath("templates", name).read_text(encoding="utf-8")
    return Template(text)


def project_name(target: Path) -> str:
    """A readable project name from the directory name (kept as written, only trimmed)."""
    name = target.resolve().name.strip()
    return name or "workspace"


def _render(choices: Choices, today: str, exclude: tuple[str, ...] = EXCLUDE) -> dict[str, tuple[str, bool]]:
    """Every file of the scaffold: path -> (text, private)."""
    s = STARTERS[choices.preset]
    values: dict[str, str] = {
        "exclude": "exclude = [\n" + "".join(f"  {json.dumps(e)},\n" for e in exclude) + "]",
        "project": choices.project, "preset": choices.preset, "purpose": s.purpose,
        "module_id": s.module_id, "module_title": s.module_title, "module_body": s.module_body,
        "change_id": s.change_id, "change_title": s.change_title, "change_body": s.change_body,
        "verification_id": s.verification_id, "verification_title": s.verification_title,
        "verification_body": s.verification_body, "decision_id": DECISION_ID, "today": today,
        "provider": PROVIDER_OF[choices.memory], "install_step": _INSTALL_STEP[choices.memory],
        "activation_extra": _ACTIVATION_EXTRA[choices.memory],
        "host_note": f"{_HOST_NOTE[choices.host]}\n" if _HOST_NOTE[choices.host] else "",
    }
    # Frontmatter values go in as JSON strings: always valid YAML, whatever the text holds.
    for key in ("project", "module_area", "change_slice", "change_id", "verification_command"):
        values[f"q_{key}"] = json.dumps(values.get(key) or getattr(s, key), ensure_ascii=False)

    def t(name: str) -> str:
        return _template(name).substitute(values)

    files: dict[str, tuple[str, bool]] = {
        "tropo.toml": (t("tropo.toml"), False),
        ".gitignore": (_template("gitignore-block.txt").template, False),
        "AGENTS.md": (t("AGENTS.md"), False),
        "modules/index.md": (t("modules-index.md"), False),
        f"modules/{s.module_id}/index.md": (t("module.md"), False),
        f"changes/{s.change_id}.md": (t("change.md"), False),
        f"verification/{s.verification_id}.md": (t("verification.md"), False),
        f"decisions/{DECISION_ID}.md": (t("decision.md"), False),
        "gates/human-gates.md": (t("gate.md"), False),
    }
    for path, template in _HOST_FILES[choices.host]:
        files[path] = (t(template), False)
    if choices.memory != "none":
        files[MEMORY_TOML] = (t(f"memory-{choices.memory}.toml"), False)
        files[MEMORY_DOC] = (t("memory-doc.md"), False)
    if choices.storage == "git-cache":
        files["docs/cache.md"] = (t("cache-doc.md"), False)
    for path, template in (("USER.md", "USER.md"), ("MEMORY.md", "MEMORY.md"),
                           ("memory/README.md", "memory-README.md"),
                           ("heartbeat-reports/README.md", "heartbeat-README.md")):
        files[path] = (t(template), True)
    return files


def _typed_seed(choices: Choices) -> set[str]:
    """The files that make a folder a typed `tropo.toml` workspace: the config and the seed graph."""
    s = STARTERS[choices.preset]
    return {"tropo.toml", "modules/index.md", f"modules/{s.module_id}/index.md", f"changes/{s.change_id}.md",
            f"verification/{s.verification_id}.md", f"decisions/{DECISION_ID}.md", "gates/human-gates.md"}


class _DiskProbe:
    """What dialect detection may look at in a folder on disk (dialects.Probe): regular files only, never
    waiting on a FIFO, at most 16 MiB."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def read(self, path: str) -> bytes | None:
        try:
            st = (self.root / path).lstat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > 16 << 20:
                return None
            return (self.root / path).read_bytes()
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.lexists(self.root / path)

    def names(self) -> list[str]:
        try:
            return sorted(os.listdir(self.root))
        except OSError:
            return []


def vault_dialect(target: Path) -> KeptDialect | None:
    """The dialect a folder of notes is read in today, when it is a vault's: named in `.vivary/graph.toml`,
    or found by its editor's configuration or its notes' shape (docs/vaults.md). None for a workspace with
    its own `tropo.toml` (or thin `.vivary/workspace.toml`), a `vivary` dialect, and a folder nothing names
    (Obsidian's rules only by default): a typed workspace reads those the same or better."""
    from vivary_git import dialects

    probe = _DiskProbe(target)
    if probe.exists("tropo.toml") or probe.exists(".vivary/workspace.toml"):
        return None  # its own rules decide (a symlink there is refused when the plan looks at it)
    graph = probe.read(".vivary/graph.toml")
    if graph is not None:
        import tomllib

        try:
            named = tomllib.loads(graph.decode("utf-8")).get("dialect")
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            named = None  # `check` says what is wrong with it; init only asks what it names
        if isinstance(named, str) and named in dialects.DIALECTS:
            return None if named == "vivary" else KeptDialect(named, "named in .vivary/graph.toml")
    dialect, reason = dialects.detect(probe)
    if reason == dialects.DEFAULT_REASON:
        return None
    return KeptDialect(dialect, reason)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise RefusedError(f"{path}: a parent of this path is a file, not a folder; move it aside and run again") \
            from None


def _check_place(target: Path, rel: str) -> os.stat_result | None:
    """The file's lstat (None when absent). Refuses symbolic links on the way and non-files: writing
    through a link could change a file outside the workspace."""
    parts = rel.split("/")
    here = target
    for part in parts[:-1]:
        here = here / part
        st = _lstat(here)
        if st is None:
            return None
        if stat.S_ISLNK(st.st_mode):
            raise RefusedError(f"{here}: is a symbolic link; the scaffold never writes through links: replace it "
                               "with a real folder or move it aside")
        if not stat.S_ISDIR(st.st_mode):
            raise RefusedError(f"{here}: is a file where the scaffold needs a folder; move it aside and run again")
    st = _lstat(target / rel)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        raise RefusedError(f"{target / rel}: is a symbolic link; the scaffold never writes through links: replace "
                           "it with the file itself or move it aside")
    if not stat.S_ISREG(st.st_mode):
        raise RefusedError(f"{target / rel}: exists and is not a regular file; move it aside and run again")
    return st


_BLOCK = re.compile(re.escape(GITIGNORE_START) + r".*?" + re.escape(GITIGNORE_END) + r"\n?", re.DOTALL)


def _merge_gitignore(existing: bytes | None, block: str, force: bool) -> tuple[Action, bytes | None, str]:
    if existing is None:
        return "create", block.encode(), ""
    text = existing.decode("utf-8", "surrogateescape")
    found = _BLOCK.search(text)
    if found is None:
        sep = "" if not text or text.endswith("\n\n") else ("\n" if text.endswith("\n") else "\n\n")
        return "append", (text + sep + block).encode("utf-8", "surrogateescape"), "private rules appended"
    if found.group(0).rstrip("\n") == block.rstrip("\n"):
        return "same", None, ""
    if not force:
        return "keep", None, "its vivary block differs from this version's; --force replaces the block"
    merged = text[: found.start()] + block + text[found.end():]
    return "update", merged.encode("utf-8", "surrogateescape"), "vivary block replaced"


def _notes_in(target: Path, skip: set[str]) -> list[str]:
    """Notes (`.md`/`.markdown`) under `target`, as `check` would see them before any `exclude`: built-in
    excluded folders and nested repositories are not entered, links are not followed; `skip` paths aside."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(target, followlinks=False):
        rel_dir = Path(dirpath).relative_to(target).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir + "/"
        dirnames[:] = sorted(d for d in dirnames if d not in BUILTIN_EXCLUDES
                             and not os.path.lexists(os.path.join(dirpath, d, ".git")))
        found.extend(rel_dir + n for n in filenames
                     if n.endswith((".md", ".markdown")) and rel_dir + n not in skip)
    return sorted(found)


def _existing_notes(notes: list[str]) -> ExistingNotes:
    dropped: dict[str, int] = {}
    for entry in EXCLUDE:
        hidden = sum(1 for n in notes if Excluder({entry}, [])(n))
        if hidden:
            dropped[entry] = hidden
    typed: dict[str, int] = {}
    for folder in TYPE_FOLDERS:
        inside = sum(1 for n in notes if folder in n.split("/")[:-1])
        if inside:
            typed[folder] = inside
    return ExistingNotes(count=len(notes), typed=typed, exclude_dropped=dropped)


def _read_as_notes(target: Path, found: list[str], written: dict[str, bytes] | None = None) -> list[str]:
    """The Markdown files `found` in the folder at `target` that its graph reads as notes once `written` (path ->
    content) is there beside them, by the rules `check` applies (`excluder`, `leaves_out`): not host guidance
    files (`AGENTS.md`, `CLAUDE.md`, `.cursor/rules/…`), nor in a vault a Dendron vault's Markdown files outside
    its vaults' folders, `.markdown` files, `.`-named folders or templates where the editor reads none. All of
    them when its configuration cannot be read (`check` says why)."""
    from vivary_git.config import excluder, leaves_out
    from vivary_git.errors import VivaryError
    from vivary_git.source import load_config

    probe = _DiskProbe(target)
    ours = written or {}

    def read(path: str) -> bytes | None:
        return ours[path] if path in ours else probe.read(path)

    try:
        config, _ = load_config(read, probe)
        skip, left_out = excluder(config), leaves_out(config)
    except VivaryError:
        return found
    return [p for p in found if not skip(p) and (left_out is None or not left_out(p))]


def plan_scaffold(target: Path, choices: Choices, *, force: bool = False, today: str | None = None) -> ScaffoldPlan:
    """What `apply` would do in `target` (which need not exist yet). Reads only."""
    target = target.absolute()
    st = _lstat(target)
    if st is not None and not stat.S_ISDIR(st.st_mode):
        raise UsageError(f"{target}: exists and is not a folder; name a folder (new or existing) to scaffold in")
    existing_dir = target
    while not existing_dir.is_dir() and existing_dir.parent != existing_dir:
        existing_dir = existing_dir.parent  # a new folder inside a repository needs no `git init`
    git_init = not _inside_work_tree(existing_dir)
    day = today or datetime.date.today().isoformat()
    rendered = _render(choices, day)
    non_empty = st is not None and any(p.name != ".git" for p in target.iterdir())
    markdown = _notes_in(target, set(rendered)) if non_empty else []
    kept = vault_dialect(target) if markdown else None
    if kept is not None:
        # A tropo.toml would switch the vault to the `vivary` dialect (slug ids, other link rules): its notes
        # would read differently, and its findings change. The vault keeps its editor's reading instead.
        seed = _typed_seed(choices)
        rendered = {path: v for path, v in rendered.items() if path not in seed}
        if MEMORY_DOC in rendered:
            # A page about vivary-git is no note of the vault's: in `docs/` it would be one (in the graph, first
            # in a search for "memory", in the editor's file list); `.vivary/` is read by no editor, nor indexed.
            rendered[VAULT_MEMORY_DOC] = rendered.pop(MEMORY_DOC)
            policy, private = rendered[MEMORY_TOML]
            rendered[MEMORY_TOML] = (policy.replace(f"see {MEMORY_DOC}.", f"see {VAULT_MEMORY_DOC}.", 1), private)
        notes = ExistingNotes(len(_read_as_notes(target, markdown)), {}, {})
    elif markdown:
        # The notes the graph reads under the scaffold's files with no `exclude` of ours (guidance files are
        # none of them): an entry of EXCLUDE that would hide one of those is left out.
        bare = {path: text.encode() for path, (text, _) in _render(choices, day, ()).items()}
        notes = _existing_notes(_read_as_notes(target, markdown, bare))
        if notes.exclude_dropped:
            rendered = _render(choices, day, tuple(e for e in EXCLUDE if e not in notes.exclude_dropped))
    else:
        notes = ExistingNotes(0, {}, {})
    files: list[PlannedFile] = []
    contents: dict[str, bytes] = {}
    for rel, (text, private) in rendered.items():
        found = _check_place(target, rel) if st is not None else None
        existing = (target / rel).read_bytes() if found is not None else None
        data: bytes | None = text.encode()
        note = ""
        action: Action
        if rel == ".gitignore":
            action, data, note = _merge_gitignore(existing, text, force)
        elif existing is None:
            action = "create"
        elif existing == data:
            action, data = "same", None
        elif private:
            action, data, note = "keep", None, "private file: never overwritten, not even with --force"
        elif force:
            action = "overwrite"
        else:
            action, data, note = "keep", None, "exists with other content; --force overwrites it"
        files.append(PlannedFile(path=rel, action=action, private=private, note=note))
        if data is not None:
            contents[rel] = data
    if any(f.path == "tropo.toml" and f.action == "keep" for f in files):
        notes = ExistingNotes(0, {}, {})  # the folder's own tropo.toml stays: its rules, not ours, decide
    return ScaffoldPlan(target=target, choices=choices, files=files, contents=contents, git_init=git_init,
                        force=force, non_empty=non_empty, existing=notes, kept_dialect=kept)


def _git_env(target: Path) -> dict[str, str]:
    """For `git` run in `target`: never a hook's GIT_DIR/GIT_INDEX_FILE (Git exports them for *its* repository),
    and the repository `git.Repo` finds there named, so a folder a commit laid out as a Git directory is never
    the one Git reads, runs the config of, or commits into (`git.pinned_env`)."""
    return git.pinned_env(target, git.env_for_other_repo())


def _inside_work_tree(path: Path) -> bool:
    env = _git_env(path)
    proc = git.run(["rev-parse", "--is-inside-work-tree"], cwd=path, env=env, check=False)
    if proc.returncode == 0 and proc.stdout.strip() == b"true":
        return True
    inside_git_dir = git.run(["rev-parse", "--is-inside-git-dir"], cwd=path, env=env, check=False)
    if inside_git_dir.returncode == 0 and inside_git_dir.stdout.strip() == b"true":
        raise UsageError(f"{path}: is inside a Git directory (or a bare repository); scaffold in a work tree instead")
    return False


def _write_file(path: Path, data: bytes) -> None:
    # O_NOFOLLOW: the plan refused links, and a link swapped in since then is refused here.
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise RefusedError(f"{path}: became a symbolic link while scaffolding; nothing was written to it") \
                from None
        raise RefusedError(f"{path}: cannot write ({err.strerror}); fix permissions and run again") from None
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def apply(plan: ScaffoldPlan) -> None:
    """Write the plan: make the folder, `git init` when needed, then every create/overwrite/append."""
    target = plan.target
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise RefusedError(f"{target}: cannot create the folder ({err.strerror})") from None
    if plan.git_init and not _inside_work_tree(target):
        git.run(["init", "-q"], cwd=target, env=git.env_for_other_repo())
    for f in plan.writes():
        _check_place(target, f.path)  # again: the tree may have changed since planning
        path = target / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_file(path, plan.contents[f.path])


def verify_private(target: Path, paths: tuple[str, ...] = PRIVATE_FILES) -> list[str]:
    """The paths (relative to `target`) that exist and that Git would NOT keep out of a commit.

    Git answers, not our reading of `.gitignore`: `git check-ignore` without `--no-index`, so a
    file that is already tracked counts as not ignored (it is in history). Every level of
    `.gitignore`, `info/exclude`, `core.excludesFile` and negations count exactly as Git counts them.
    """
    existing = [p for p in paths if (target / p).exists()]
    if not existing:
        return []
    stdin = b"".join(p.encode() + b"\0" for p in existing)
    proc = git.run(["check-ignore", "-z", "--stdin"], cwd=target, env=_git_env(target), input=stdin, check=False)
    if proc.returncode not in (0, 1):
        said = proc.stderr.decode("utf-8", "replace").strip()
        raise RefusedError(f"{target}: Git could not say whether the private files are ignored ({said}); "
                           "nothing was committed")
    ignored = {os.fsdecode(p) for p in proc.stdout.split(b"\0") if p}
    return [p for p in existing if p not in ignored]


def leak_message(leaks: list[str]) -> str:
    return (
        f"private file(s) {', '.join(leaks)} would be committed: Git does not ignore them "
        "(see `git check-ignore -v --no-index " + leaks[0] + "`). Restore the vivary block in .gitignore "
        "(`git vivary init --force` rewrites it), remove any rule that re-includes them, and "
        "`git rm --cached` any that are already tracked"
    )


def commit(plan: ScaffoldPlan, message: str) -> str | None:
    """Commit the scaffold's public files (only those, never anything else the user staged).
    Returns the new commit id, or None when there was nothing new to commit."""
    target = plan.target
    leaks = verify_private(target)
    if leaks:
        raise RefusedError(leak_message(leaks) + "; nothing was committed")
    paths = [f.path for f in plan.files if not f.private and f.action != "keep"]
    env = _git_env(target)
    git.run(["add", "--", *paths], cwd=target, env=env)
    # On an unborn branch this compares with the empty tree, so a first commit always has changes.
    staged = git.run(["diff", "--cached", "--quiet", "--", *paths], cwd=target, env=env, check=False)
    if staged.returncode == 0:
        return None
    # `-- paths` commits only these paths, so changes the user had staged elsewhere stay staged.
    proc = git.run(["commit", "-q", "-m", message, "--", *paths], cwd=target, env=env, check=False)
    if proc.returncode != 0:
        said = proc.stderr.decode("utf-8", "replace")
        if "Please tell me who you are" in said or "user.email" in said:
            raise GitError("cannot commit: Git does not know who you are; run `git config user.name \"Your Name\"` "
                           "and `git config user.email you@example.com`, then `git vivary init --yes` again "
                           "(the files are already written)")
        raise GitError(f"`git commit` failed: {said.strip() or f'exit code {proc.returncode}'}")
    return git.out(["rev-parse", "HEAD"], cwd=target, env=env)
