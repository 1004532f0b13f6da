"""The server's hook: `git vivary hooks install pre-receive`, for a bare repository that people push to.

Where the script goes (docs/hooks.md, "On the server: pre-receive"):

* a plain bare repository (and a work tree that takes pushes): `hooks/pre-receive`, where Git looks
  (`core.hooksPath` respected). A hook already there is kept as `pre-receive.local` and run first, as
  `install` does for the client hooks; both read the pushed refs, which Git writes on stdin once, so the
  script keeps them in a temporary file for that hook, and then reads them from there itself.
* a repository whose hooks folder has a `pre-receive.d/` folder (Gitea and Forgejo write their own
  `hooks/pre-receive`, which runs every script in `pre-receive.d/`, and rewrite it when an admin resyncs the
  hooks): `pre-receive.d/vivary`, beside the server's own script, which is left alone.

GitLab keeps server hooks out of reach of a repository's files (an admin sets them with `gitaly hooks set`):
`status` reports the `custom_hooks/` folder it finds next to the repository, `install` refuses where it sees GitLab
(that folder, or `gitlab.fullpath` in the config), and the docs give the steps.
`uninstall pre-receive` removes exactly the script `install` wrote, and restores what it kept.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path, PurePosixPath

from vivary_git.errors import RefusedError, UsageError
from vivary_git.gates import install

HOOK = "pre-receive"
DROP_IN = "vivary"  # the file name in a `pre-receive.d/` folder

# Git writes the pushed refs on stdin once, and our command reads them from there. A hook that was here before reads
# them first from a copy in a temporary file, which is unlinked before our command starts (its open stdin keeps the
# bytes); never a shell variable, which held every ref in memory several times over (a 41 MB push of 10,000 long
# ref names: 121 MB in dash, 203 MB in bash) and reached the next command as one argument, more than Linux passes
# to a program (128 KiB) wherever printf is not built into the shell. An empty stdin (no ref: Git never runs the
# hook so) checks nothing.
_TEMPLATE = """#!/bin/sh
{marker} pre-receive. Installed by `git vivary hooks install pre-receive`; `git vivary hooks uninstall
# pre-receive` removes it and restores the hook it replaced (pre-receive.local). Docs: docs/hooks.md.
# Refuses a push that would give a branch or a tag a graph error. Who pushes, and push options, decide nothing.
{python_line}
hook=pre-receive
here=$(dirname "$0")
# The hook that was here before runs first; when it fails we stop with its exit code, as it did alone. Git writes
# the pushed refs (OLD NEW REFNAME, one a line) on stdin once: that hook reads a copy, and we read it after.
if [ -x "$here/$hook.local" ]; then
    refs=$(mktemp) || {{ echo "vivary: cannot make a temporary file for the pushed refs; push refused" >&2; exit 1; }}
    trap 'rm -f "$refs"' EXIT
    trap 'exit 1' HUP INT TERM
    cat >"$refs" || exit 1
    [ -s "$refs" ] || exit 0
    "$here/$hook.local" "$@" <"$refs" || exit $?
    exec <"$refs" || exit 1
    rm -f "$refs"
fi
if [ -n "$vivary_python" ] && [ -x "$vivary_python" ]; then
    exec "$vivary_python" -m vivary_git.main hooks run "$hook"{roots}
fi
if command -v git-vivary >/dev/null 2>&1; then
    exec git-vivary hooks run "$hook"{roots}
fi
echo "vivary: git-vivary is not on the server's PATH and the Python that installed this hook is gone, so no" >&2
echo "vivary: push can be checked and every push is refused; an admin reinstalls vivary-git and runs" >&2
echo "vivary: \\`git vivary hooks install pre-receive\\` again (or \\`git vivary hooks uninstall pre-receive\\`)." >&2
exit 1
"""


def script(python: str | None, roots: list[str] | None = None) -> str:
    """The hook script; `roots`: folders of each pushed tree to check (`--root`), none: the top."""
    line = "vivary_python=''" if python is None else f"vivary_python={shlex.quote(python)}"
    args = "".join(f" --root {shlex.quote(r)}" for r in roots or ())
    return _TEMPLATE.format(marker=install.MARKER, python_line=line, roots=args)


def check_roots(roots: list[str]) -> list[str]:
    """`install pre-receive --root DIR`: a folder of each pushed tree, written into the script as given: relative,
    inside the tree, and free of what a shell script or a command line would read otherwise."""
    out: list[str] = []
    for root in roots:
        parts = PurePosixPath(root).parts
        if (not root or root.startswith(("/", "-")) or ".." in parts or "\\" in root
                or any(ord(c) < 32 or ord(c) == 127 for c in root)):
            raise UsageError(f"--root {root!r}: for pre-receive, a folder of each pushed tree, relative to its top "
                             "(e.g. `--root notes`; `.` is the top), with no `..`, no leading `-` or `/` and no "
                             "control character")
        out.append(PurePosixPath(root).as_posix())
    return list(dict.fromkeys(out))


def where(cwd: Path) -> tuple[Path, str]:
    """The file `install` writes, and how that place was chosen, for people."""
    d = install.hooks_dir(cwd)
    folder = d / f"{HOOK}.d"
    if folder.is_dir() and not folder.is_symlink():
        return folder / DROP_IN, f"{folder.name}/ is there (Gitea and Forgejo run every script in it)"
    return d / HOOK, "the hooks folder"


def bare(cwd: Path) -> bool:
    """Whether the repository found from `cwd` has no work tree (a server's bare repository)."""
    return install._toplevel(cwd) is None


def install_hook(cwd: Path, python: str | None = None, roots: list[str] | None = None) -> list[str]:
    """Write the pre-receive script (module docstring); one line per action for the user. `roots`: None keeps
    what an earlier install chose, ["."] checks the top. In a GitLab repository nothing is written: Gitaly runs
    its own hooks there, never the repository's `hooks/`, so a script there would refuse no push."""
    path, why = where(cwd)  # outside a repository: the hooks' own message, before Git is asked anything else
    sign = gitlab_sign(cwd)
    if sign is not None:
        raise RefusedError(f"{_common_dir(cwd)}: cannot install: a GitLab repository ({sign}), whose pushes run the "
                           "server hooks an admin sets through Gitaly, never a script in hooks/; docs/hooks.md "
                           "(\"Installing it on a server\") gives the steps (`gitaly hooks set`)")
    local = path.with_name(f"{HOOK}.local")
    ours = install._is_ours(path)
    if not ours and install._exists(path) and path.name == DROP_IN:
        raise RefusedError(f"{path}: cannot install: a script named {DROP_IN} that is not vivary's is there; rename "
                           "it, then run install again")
    if not ours and install._exists(path) and install._exists(local):
        raise RefusedError(f"{path}: cannot install: both {HOOK} and {HOOK}.local exist and neither is vivary's; "
                           f"merge them into {HOOK}.local (it runs first) and remove {HOOK}, then run install again")
    install._writable(path.parent)  # before the hook there is moved aside
    before = install.pinned_roots(install._read(path)) if ours else []
    chosen = before if roots is None else [] if roots == ["."] else roots
    checks = f"; checks {install.named(chosen)} of each pushed tree" if chosen else ""
    if ours:
        action = f"{HOOK}: updated {path}{checks}"
    elif install._exists(path):
        path.rename(local)
        action = f"{HOOK}: installed {path}{checks}; your previous hook is now {local.name} and runs first"
    else:
        action = f"{HOOK}: installed {path} ({why}){checks}"
    tmp = path.with_name(f".{path.name}.vivary-tmp")
    tmp.write_text(script(python or sys.executable, chosen), encoding="utf-8")
    tmp.chmod(0o755)
    os.replace(tmp, path)  # atomic: a push arriving now runs the old hook or the new one
    return [action]


def uninstall_hook(cwd: Path) -> list[str]:
    """Remove the script `install_hook` wrote, wherever it is, and put back the hook it kept."""
    d = install.hooks_dir(cwd)
    done: list[str] = []
    for path in (d / HOOK, d / f"{HOOK}.d" / DROP_IN):
        local = path.with_name(f"{HOOK}.local")
        if not install._is_ours(path):
            continue
        path.unlink()
        if path.name == HOOK and install._exists(local):
            local.rename(path)
            done.append(f"{HOOK}: removed; restored your previous hook from {local.name}")
        else:
            done.append(f"{HOOK}: removed {path}")
    if not done:
        other = d / HOOK
        done.append(f"{HOOK}: {other} is not vivary's; left alone" if install._exists(other) and not
                    (d / f"{HOOK}.d").is_dir() else f"{HOOK}: not installed")
    return done


def _common_dir(cwd: Path) -> Path:
    from vivary_git import git

    return Path(git.out(["rev-parse", "--path-format=absolute", "--git-common-dir"], cwd=cwd,
                        env=git.pinned_env(cwd)))


def gitlab_sign(cwd: Path) -> str | None:
    """What shows the repository is GitLab's, for a message, or None: a `custom_hooks/` folder beside it (its
    server hooks), or the project path GitLab writes into the repository's config (`gitlab.fullpath`)."""
    from vivary_git import git

    common = _common_dir(cwd)
    if (common / "custom_hooks").is_dir():
        return "custom_hooks/ is there"
    fullpath = git._config_value(str(common), "gitlab.fullpath")
    return None if fullpath is None else f"its config names the GitLab project: gitlab.fullpath = {fullpath!r}"


def custom_hooks(cwd: Path) -> list[Path]:
    """GitLab's server hooks for this repository, when they sit beside it (`custom_hooks/pre-receive`,
    `custom_hooks/pre-receive.d/*`): reported, never written."""
    folder = _common_dir(cwd) / "custom_hooks"
    found = [folder / HOOK] if (folder / HOOK).is_file() else []
    drop_ins = folder / f"{HOOK}.d"
    if drop_ins.is_dir():
        found += sorted(p for p in drop_ins.iterdir() if p.is_file() and not p.name.endswith("~"))
    return found


def status(cwd: Path) -> install.HookStatus | None:
    """The pre-receive line of `hooks status`: shown for a bare repository, or wherever one is installed."""
    path, why = where(cwd)
    gitlab = custom_hooks(cwd)
    gitlab_runs = [p for p in gitlab if install.runs_vivary(p)]
    if not bare(cwd) and not install._exists(path) and not gitlab:
        return None
    local = path.with_name(f"{HOOK}.local")
    chained = str(local) if path.name == HOOK and install._exists(local) else None
    if install._is_ours(path):
        text = install._read(path)
        py = install._pinned_python(text)
        return install.HookStatus(HOOK, str(path), "vivary", chained, py, py is not None and os.access(py, os.X_OK),
                                  None, True, None, install.pinned_roots(text))
    if gitlab:
        names = ", ".join(str(p) for p in gitlab)
        note = (f"GitLab's server hooks ({names}) {'run' if gitlab_runs else 'do not run'} vivary" + (
            "" if gitlab_runs else "; docs/hooks.md says how an admin adds it (`gitaly hooks set`)"))
        return install.HookStatus(HOOK, str(path), "other" if install._exists(path) else "absent", None, None,
                                  False, None, bool(gitlab_runs), note)
    if install._exists(path):
        return install.HookStatus(HOOK, str(path), "other", None, None, False, None, install.runs_vivary(path))
    note = f"`git vivary hooks install {HOOK}` writes {path.parent.name}/{path.name} ({why})"
    return install.HookStatus(HOOK, str(path), "absent", None, None, False, None, False, note)


def report(cwd: Path) -> install.HooksReport:
    """`hooks status`: the client hooks (`install.status`), pre-receive where it belongs, and whether the hooks'
    auto-index indexes this clone (`autoindexing`)."""
    import msgspec

    out = install.status(cwd)
    server = status(cwd)
    if bare(cwd):  # Git makes no commit here, so runs no client hook: one that is absent is no news
        out = msgspec.structs.replace(out, hooks=[h for h in out.hooks if h.state != "absent"], bare=True)
    else:
        from vivary_git.gates import autoindexing

        out = msgspec.structs.replace(out, auto_index=autoindexing.state(cwd, out.hooks))
    return out if server is None else msgspec.structs.replace(out, hooks=[*out.hooks, server])
