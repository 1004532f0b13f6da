"""lefthook (evilmartians/lefthook) as a hook manager: its config files, its scripts in the hooks folder, whether its
config runs vivary, and the lines to add to it.

`lefthook install` writes one script per hook its config names into Git's hooks folder, each calling `lefthook run
NAME`; a script already there is renamed `NAME.old`, and lefthook never runs that one. Its next install (its npm
package runs one when it is installed) would do that to a script of ours, and the gate would stop without a word
(seen with lefthook 2.2.4). So vivary writes nothing there and says what to add to lefthook's config.

Which config lefthook reads (its `internal/config/loader.go`, seen with 2.2.4): the first file that exists of
`lefthook`, `.lefthook`, `.config/lefthook`, tried with `.yml`, then `.yaml`, `.json`, `.jsonc`, `.toml` (every name
with one extension before the next extension), and over it the first `-local` one found the same way (alone, the
`-local` one is the config), unless `LEFTHOOK_CONFIG` names the main one (`config_files`). Any other config file there
is never read, so it runs nothing. `.json` is strict JSON;
`.jsonc` takes comments and trailing commas.

How lefthook merges the `-local` config over the main one, hook by hook (its `loader.go`, `addHook` and
`mergeJobsSlice`; seen with `lefthook dump` 2.2.4): maps are merged key by key, the local value winning (so a
`skip: true` there skips a command, a job or the whole hook, and a `run` there replaces the main one's); `{cmd}` in
a local command's `run` stands for the main config's `run` of the command of that name (and for nothing when there
is none); a local job with the `name` of a main one is merged into it the same way (`{cmd}` its main `run`, groups'
jobs merged alike), any other local job is added after the main ones. A config lefthook cannot load stops it: it
runs nothing. `extends` and `remotes` (other files, other repositories) are not followed.

The config is a committed file, a stranger's input: read up to a size limit, parsed by a safe loader, walked only
along the few keys lefthook runs commands from, a bounded number of nodes, never executed.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# What `lefthook install` writes (lefthook 1.x and 2.x): a shell function that finds the binary, then this call.
SCRIPT_MARKER = re.compile(r'^call_lefthook run "[\w-]+"', re.MULTILINE)
_FORMATS = (".yml", ".yaml", ".json", ".jsonc", ".toml")
# In the order lefthook tries them: by format first, then by name (module docstring).
MAIN = tuple(f"{stem}{ext}" for ext in _FORMATS for stem in ("lefthook", ".lefthook", ".config/lefthook"))
LOCAL = tuple(f"{stem}{ext}" for ext in _FORMATS
              for stem in ("lefthook-local", ".lefthook-local", ".config/lefthook-local"))
_LIMIT = 1 << 20  # a hook manager's config is a page or two; a bigger file is not read
_NODES = 10_000  # entries looked at per config, whatever aliases and nesting make of it
# What lefthook hands `run` for what Git gave the hook: {1} {2} {3} are Git's arguments, each shell-quoted.
ARGS = {"post-checkout": " {1} {2} {3}", "post-merge": " {1}", "post-rewrite": " {1}"}


def config_files(top: Path) -> list[Path]:
    """The lefthook config files at the top of the work tree that lefthook reads: the main one, then the `-local`
    one (module docstring). `LEFTHOOK_CONFIG` in this environment names the main one instead (a relative path from
    the top; one that is not there: lefthook stops, reading none), and when it names a `-local` one, that one
    alone, as lefthook 2.2.4 does (the hooks run with the environment of the `git commit` that starts them)."""
    override = os.environ.get("LEFTHOOK_CONFIG")
    local = next((top / name for name in LOCAL if (top / name).is_file()), None)
    if override:
        main = Path(os.path.normpath(top / override))
        if not main.is_file():
            return []
        return [main] if any(main == top / name for name in LOCAL) or local is None else [main, local]
    found = (next((top / name for name in MAIN if (top / name).is_file()), None), local)
    return [path for path in found if path is not None]


def is_script(text: str) -> bool:
    """Whether a hook script's text is one `lefthook install` wrote."""
    return "call_lefthook" in text and bool(SCRIPT_MARKER.search(text))


_UNREAD = object()  # a config that cannot be read or parsed


def _load(path: Path) -> Any:
    """The parsed config; None when it cannot be read or parsed (lefthook cannot load it either: it runs nothing)."""
    data = _parsed(path)
    return None if data is _UNREAD else data


def _parsed(path: Path) -> Any:
    """The parsed config (None: an empty YAML file), `_UNREAD` when it cannot be read or parsed."""
    from vivary_git.hosts.jsonedit import parse, to_python
    from vivary_git.safeio import FileRefused, read_regular

    try:
        text = read_regular(path, _LIMIT).decode("utf-8", "replace")
    except (OSError, FileRefused):
        return _UNREAD
    import yaml

    try:
        if path.suffix in (".yml", ".yaml"):
            return yaml.safe_load(text)
        if path.suffix == ".toml":
            return tomllib.loads(text)
        # lefthook reads .json as strict JSON, .jsonc with comments and trailing commas.
        return to_python(parse(text, comments=path.suffix == ".jsonc"))
    except (yaml.YAMLError, ValueError, RecursionError):  # (tomllib's and jsonedit's errors are ValueErrors)
        return _UNREAD


def _runs(hook: Any, budget: list[int], depth: int = 0) -> Iterator[str]:
    """The `run` lines of one hook's commands and jobs (groups of jobs included), leaving out what `skip: true` marks
    (a conditional `skip`, a list of when, still runs at other times)."""
    if not isinstance(hook, dict) or depth > 8 or hook.get("skip") is True:  # a whole hook or group skipped
        return
    entries: list[Any] = []
    commands = hook.get("commands")
    if isinstance(commands, dict):
        entries += list(commands.values())
    jobs = hook.get("jobs")
    if isinstance(jobs, list):
        entries += jobs
    for entry in entries:
        budget[0] -= 1
        if budget[0] < 0 or not isinstance(entry, dict) or entry.get("skip") is True:
            continue
        run = entry.get("run")
        if isinstance(run, str):
            yield run
        yield from _runs(entry.get("group"), budget, depth + 1)


def _kept(hook: Any, budget: list[int], depth: int = 0) -> dict[str, Any]:
    """What of a hook (or a group) says what runs: its `skip`, and its commands' and jobs' `name`, `run`, `skip` and
    `group`, within `budget` entries (a fresh tree: merging it never touches, nor walks, the rest of the file)."""
    if not isinstance(hook, dict) or depth > 8:
        return {}
    out: dict[str, Any] = {"skip": hook["skip"]} if "skip" in hook else {}
    commands = hook.get("commands")
    if isinstance(commands, dict):
        out["commands"] = {}
        for name, entry in commands.items():
            budget[0] -= 1
            if budget[0] < 0:
                break
            out["commands"][str(name)] = _kept_entry(entry, budget, depth)
    jobs = hook.get("jobs")
    if isinstance(jobs, list):
        out["jobs"] = []
        for entry in jobs:
            budget[0] -= 1
            if budget[0] < 0:
                break
            out["jobs"].append(_kept_entry(entry, budget, depth))
    return out


def _kept_entry(entry: Any, budget: list[int], depth: int) -> Any:
    if not isinstance(entry, dict):
        return None
    out = {k: entry[k] for k in ("name", "run", "skip") if k in entry}
    if "group" in entry:
        out["group"] = _kept(entry["group"], budget, depth + 1)
    return out


def _merge(src: dict[str, Any], dest: dict[str, Any]) -> None:
    """`src` merged into `dest` key by key, `src` winning but where both hold a map (koanf's `maps.Merge`)."""
    for key, value in src.items():
        if isinstance(value, dict) and isinstance(dest.get(key), dict):
            _merge(value, dest[key])
        else:
            dest[key] = value


def _merge_jobs(src: list[Any], dest: list[Any]) -> list[Any]:
    """The local jobs `src` merged into the main ones `dest`: by `name`, else added after (lefthook's
    `mergeJobsSlice`)."""
    named = {job["name"]: job for job in dest if isinstance(job, dict) and isinstance(job.get("name"), str)}
    out = [job for job in dest if isinstance(job, dict)]
    for job in src:
        if not isinstance(job, dict):
            continue
        into = named.get(job["name"]) if isinstance(job.get("name"), str) else None
        if into is None:
            out.append(job)
            continue
        sub = [_group_jobs(job), _group_jobs(into)]
        merged_sub = _merge_jobs(sub[0], sub[1]) if sub[0] and sub[1] else sub[1]
        if isinstance(job.get("run"), str) and isinstance(into.get("run"), str):
            job = {**job, "run": job["run"].replace("{cmd}", into["run"])}
        _merge(job, into)
        if merged_sub and isinstance(into.get("group"), dict) and isinstance(into["group"].get("jobs"), list):
            into["group"]["jobs"] = merged_sub
    return out


def _group_jobs(job: dict[str, Any]) -> list[Any]:
    group = job.get("group")
    jobs = group.get("jobs") if isinstance(group, dict) else None
    return jobs if isinstance(jobs, list) else []


def _merge_hook(main: dict[str, Any], local: dict[str, Any]) -> dict[str, Any]:
    """The hook lefthook runs: `local` (the `-local` config's) merged over `main` (lefthook's `addHook`)."""
    runs = {name: entry["run"] for name, entry in main.get("commands", {}).items()
            if isinstance(entry, dict) and isinstance(entry.get("run"), str)}
    jobs = _merge_jobs(local.get("jobs", []), main.get("jobs", []))
    _merge(local, main)
    if runs:
        for name, entry in main.get("commands", {}).items():
            if isinstance(entry, dict) and isinstance(entry.get("run"), str):
                entry["run"] = entry["run"].replace("{cmd}", runs.get(name, ""))
    if jobs:
        main["jobs"] = jobs
    return main


def merged_hook(top: Path, hook: str) -> dict[str, Any] | None:
    """`hook` as lefthook runs it: the main config's, the `-local` one merged over it (module docstring), as much of
    it as says what runs; None when a config cannot be read or parsed (lefthook runs nothing then)."""
    hooks = []
    for path in config_files(top):
        data = _parsed(path)
        if data is _UNREAD:
            return None
        hooks.append(_kept(data.get(hook) if isinstance(data, dict) else None, [_NODES]))
    if not hooks:
        return {}
    return hooks[0] if len(hooks) == 1 else _merge_hook(hooks[0], hooks[1])


def runs_vivary(top: Path, hook: str, pattern: re.Pattern[str]) -> Path | None:
    """The lefthook config at `top` whose command runs vivary for `hook` (a command matching `pattern`), when
    lefthook, its configs merged, runs it: the main one, else the `-local` one where only it says so; None when
    the merged hook runs no such command."""
    merged = merged_hook(top, hook)
    if merged is None or not any(pattern.search(run) for run in _runs(merged, [_NODES])):
        return None
    configs = config_files(top)
    for path in configs:
        data = _parsed(path)
        if isinstance(data, dict) and any(pattern.search(run) for run in _runs(data.get(hook), [_NODES])):
            return path
    return configs[0]


def local_turns_off(top: Path, hook: str, pattern: re.Pattern[str]) -> str | None:
    """The `-local` config (repository-relative) when the main config alone runs vivary for `hook` and the two merged
    do not: that file skips it or replaces its `run`."""
    configs = config_files(top)
    if len(configs) < 2 or runs_vivary(top, hook, pattern):
        return None
    main = _parsed(configs[0])
    if not isinstance(main, dict) or not any(pattern.search(run) for run in _runs(main.get(hook), [_NODES])):
        return None
    return configs[1].relative_to(top).as_posix()


def _hook_entries(data: Any, hook: str) -> tuple[str | None, set[str]]:
    """How the config lists `hook`'s entries already ("commands", "jobs"; "hook": the hook is there with neither,
    where a hook of its own would be a second key of that name, which lefthook refuses to load; None: it has no such
    hook), and the command names taken there."""
    if not isinstance(data, dict) or hook not in data:
        return None, set()
    entry = data[hook]
    if entry is None:  # YAML's `pre-commit:` with nothing under it
        return "hook", set()
    if not isinstance(entry, dict):
        return None, set()
    if isinstance(entry.get("jobs"), list):
        return "jobs", set()
    commands = entry.get("commands")
    if isinstance(commands, dict):
        return "commands", {str(k) for k in commands}
    return ("hook", set()) if "commands" not in entry and "jobs" not in entry else (None, set())


def _scalar(text: str) -> str:
    """`text` as a YAML value: plain when it is only words, paths and lefthook's {N}, else double-quoted (a root
    named `a #b` would start a comment, one named `a: b` a mapping)."""
    return text if re.fullmatch(r"[\w./{} -]+", text) else json.dumps(text)


def snippet(top: Path, config: str, hooks: list[str], names: dict[str, str], args: str) -> str:
    """What to add to lefthook's config `config` (repository-relative) so that it runs vivary for `hooks`: under a
    hook it lists already, an entry in its own style; else a hook of its own. `names`: the entry's name per hook."""
    path = top / config
    data = _load(path) if path.is_file() else None
    toml = path.suffix == ".toml"
    as_json = path.suffix in (".json", ".jsonc") and isinstance(data, dict)
    fresh: list[str] = []
    blocks: list[str] = []
    for hook in hooks:
        run = f"git vivary hooks run {hook}{args}{ARGS.get(hook, '')}"
        style, taken = _hook_entries(data, hook)
        entry = data.get(hook) if isinstance(data, dict) else None
        skipped = " (and remove its `skip: true`, which skips all of it)" if isinstance(entry, dict) and \
            entry.get("skip") is True else ""
        name = names[hook]
        for n in range(2, 2 + len(taken)):  # a name the config has already would be a duplicate key
            if name not in taken:
                break
            name = f"{names[hook]}-{n}"
        if toml:  # a TOML table adds to what is there whatever the file lists already
            fresh.append(f"[{hook}.commands.{name}]\nrun = {json.dumps(run)}")
        elif as_json and style == "jobs":  # YAML lines pasted into a JSON file would break all of it
            blocks.append(f"# {config}: in `{hook}`'s `jobs` list, after a comma{skipped}\n"
                          f"{json.dumps({'name': name, 'run': run})}")
        elif as_json and style == "commands":
            blocks.append(f"# {config}: in `{hook}`'s `commands` object, after a comma{skipped}\n"
                          f"{json.dumps(name)}: {json.dumps({'run': run})}")
        elif as_json and style == "hook" and isinstance(entry, dict):
            comma = ", after a comma" if entry else ""
            blocks.append(f"# {config}: in `{hook}`'s object{comma}{skipped}\n"
                          f'"commands": {json.dumps({name: {"run": run}})}')
        elif as_json:
            fresh.append(f"{json.dumps(hook)}: {json.dumps({'commands': {name: {'run': run}}})}")
        elif style == "jobs":
            blocks.append(f"# {config}: under `{hook}:`, in its `jobs:` list{skipped}\n    - name: {name}\n"
                          f"      run: {_scalar(run)}")
        elif style == "commands":
            blocks.append(f"# {config}: under `{hook}:`, in its `commands:`{skipped}\n    {name}:\n"
                          f"      run: {_scalar(run)}")
        elif style == "hook":
            blocks.append(f"# {config}: under `{hook}:`{skipped}\n  commands:\n    {name}:\n"
                          f"      run: {_scalar(run)}")
        else:
            fresh.append(f"{hook}:\n  commands:\n    {name}:\n      run: {_scalar(run)}")
    if fresh:
        new = "" if path.is_file() else " (a new file)"
        where = "" if toml or path.suffix in (".yml", ".yaml") or not path.is_file() else \
            (", after a comma" if data else "") if as_json else \
            f" (in YAML; write the same in {path.suffix.lstrip('.').upper()})"
        blocks.append(f"# {config}{new}: add at the top level{where}\n" + (",\n" if as_json else "\n").join(fresh))
    return "\n\n".join(blocks) + "\n\n# then: lefthook install\n"
