"""`git vivary hooks`: install plain Git hooks, and the entry points the hooks run."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from vivary_git.errors import EXIT_FINDINGS, EXIT_OK
from vivary_git.escape import text as shown

if TYPE_CHECKING:
    from vivary_git.gates.install import AutoIndex

# What the post-commit hook runs; .pre-commit-hooks.yaml and docs/hooks.md name the same command.
POST_COMMIT = ("index", "--auto", "--rev", "HEAD")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hooks", help="Git hooks: install/uninstall/status, and what the hooks run",
        description="Plain Git hooks for repositories without a hook manager. `install` puts them where Git "
        "looks (core.hooksPath and worktrees respected) and keeps an existing hook as NAME.local, run first; "
        "`uninstall` restores it byte for byte. Where husky, the pre-commit framework, lefthook or a "
        "core.hooksPath folder inside the work tree owns the hooks, `install` writes nothing: it prints the lines "
        "to add to that manager's file and exits 3. On a server, `install pre-receive` (the default in a bare "
        "repository) writes the hook that checks every push. Exit 0 ok, 1 refused commit or push (run, privacy-guard), "
        "2 usage error, 3 refused install (docs/hooks.md).",
    )
    hs = p.add_subparsers(dest="hooks_command", metavar="ACTION", required=True)
    from vivary_git.gates.install import HOOKS as names

    i = hs.add_parser("install", help="install the hooks (default: pre-commit and pre-merge-commit; post-commit is "
                      "opt-in and brings post-checkout, post-merge and post-rewrite; in a bare repository: "
                      "pre-receive)",
                      description="Install plain Git hooks. pre-commit checks the staged tree and refuses "
                      "private files, and pre-merge-commit does the same for a merge that commits by itself (Git "
                      "runs that one, not pre-commit, for `git merge`); post-commit (opt-in) refreshes the memory "
                      "index, and post-checkout, post-merge and post-rewrite, installed with it, refresh it when a "
                      "switch, a pull, a merge or a rebase moves HEAD without a commit of its own. pre-receive, "
                      "for the repository a server takes pushes into, refuses a push that gives a branch or a tag "
                      "a graph error: hooks/pre-receive, or hooks/pre-receive.d/vivary where that folder is (Gitea, "
                      "Forgejo).")
    i.add_argument("hooks", nargs="*", metavar="HOOK",
                   help="pre-commit, pre-merge-commit, post-commit (with post-checkout, post-merge, post-rewrite) "
                   "and/or pre-receive (default: pre-commit and pre-merge-commit; in a bare repository: pre-receive)")
    i.add_argument("--python", metavar="PATH", help="the Python the hooks run vivary-git with (default: this one)")
    i.add_argument("--root", action="append", metavar="DIR",
                   help="a workspace folder the hooks check (repeat for several; `.` is the top; default: what an "
                   "earlier install chose, else the top); for pre-receive a folder of each pushed tree")
    u = hs.add_parser("uninstall", help="remove vivary's hooks and restore the ones they replaced")
    u.add_argument("hooks", nargs="*", metavar="HOOK",
                   help="pre-commit, pre-merge-commit, post-commit, post-checkout, post-merge, post-rewrite "
                   "and/or pre-receive (default: all of them)")
    s = hs.add_parser("status", help="say which hooks are installed, what they run, and whether their auto-index "
                      "indexes this clone (auto_index = true and your vivary.autoIndex; exit 0)")
    s.add_argument("--json", action="store_true", help="print JSON for programs and agents")
    r = hs.add_parser("run", help="what an installed hook runs (the line to put in a husky or shared hook file, "
                      "or in a bare repository's pre-receive hook: docs/hooks.md)")
    r.add_argument("hook", choices=(*names, "pre-receive"))
    r.add_argument("--root", action="append", default=[], metavar="DIR",
                   help="a workspace folder to check, relative to the top of the work tree, or for pre-receive of "
                   "each tree pushed (repeatable; default: the top)")
    r.add_argument("hook_args", nargs="*", help=argparse.SUPPRESS)
    g = hs.add_parser("privacy-guard", help="refuse staged private files and literal secrets in .vivary/memory.toml",
                  description="Check the files staged for commit: refuse any that the privacy floor or a "
                  "memory.toml's private_paths makes private, and a staged .vivary/memory.toml holding a literal "
                  "secret, and files with sensitive names (.env*, *.pem, secrets.*, …) unless allowed with --allow or "
                  "`git config --add vivary.guardAllow PATH`. Prints `path:line: error CODE: message`; exit 1 "
                  "when anything is refused.")
    g.add_argument("--allow", action="append", default=[], metavar="PATH",
                   help="a repository-relative path whose sensitive name is fine to commit (repeatable)")
    hs.add_parser("post-commit", help="run `git vivary index --auto --rev HEAD` (indexes only when auto_index = true "
                  "and your own Git config sets vivary.autoIndex = true)")
    for q in (i, u, s, r, g):
        q.add_argument("-C", dest="cwd", metavar="PATH", help="run as if started in PATH")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    cwd = Path(getattr(args, "cwd", None) or ".").resolve()
    action = args.hooks_command
    if action == "install":
        from vivary_git.gates import install, serverhook

        if (args.hooks and serverhook.HOOK in args.hooks) or (not args.hooks and serverhook.bare(cwd)):
            return _install_server(cwd, args)
        # By default both gates; where a hook manager owns the hooks, pre-commit as before, and a word on merges
        # (adding pre-merge-commit there is the user's edit of the manager's file).
        managed = not args.hooks and install.detect_manager(cwd) is not None
        names = install.check_hook_names(list(dict.fromkeys(args.hooks or (["pre-commit"] if managed
                                                                             else list(install.GATES)))))
        if "post-commit" in names:  # auto-indexing follows HEAD, which more than a commit moves
            names = list(dict.fromkeys([*names, *install.FOLLOW]))
        roots = hook_roots(cwd, args.root) if args.root else None
        if args.python is not None and any(ord(c) < 32 or ord(c) == 127 for c in args.python):
            from vivary_git.errors import UsageError

            raise UsageError(f"--python {shown(args.python)}: a path with a control character cannot be written "
                             "into a hook script; give the path of a Python whose path has none")
        try:
            lines = install.install(cwd, names, args.python, roots)
            if managed:
                lines.append("merges: Git runs pre-merge-commit, not pre-commit, for a `git merge` that commits by "
                             "itself; `git vivary hooks install pre-merge-commit` prints what to add for it")
        except install.ManagedHooks as err:
            if err.snippet:  # on stdout, to copy; the refusal itself goes to stderr (exit 3)
                sys.stdout.write(err.snippet)
                sys.stdout.flush()
            raise
        if not managed and any(n in install.GATES for n in names):
            hint = install.status(cwd).unchecked
            if hint:
                lines.append(f"note: {hint}")
        if "post-commit" in names:  # installing the hooks approves nothing: say what does
            from vivary_git.memory.local.autoindex import APPROVE

            lines.append("note: these hooks index a clone only where its .vivary/memory.toml sets auto_index = true "
                         f"and you approve it: `{APPROVE}` there (with --global, in every clone of yours; "
                         "docs/memory.md#5-auto-index-after-each-commit-optional)")
        for line in lines:
            print(f"vivary: {shown(line)}")
        return EXIT_OK
    if action == "uninstall":
        from vivary_git.gates import install, serverhook

        names = install.check_hook_names(list(dict.fromkeys(args.hooks or [*install.HOOKS, serverhook.HOOK])))
        client = [n for n in names if n != serverhook.HOOK]
        lines = install.uninstall(cwd, client) if client else []
        if serverhook.HOOK in names:
            lines += serverhook.uninstall_hook(cwd)
        for line in lines:
            print(f"vivary: {shown(line)}")
        return EXIT_OK
    if action == "status":
        return _status(cwd, args.json)
    if action == "privacy-guard":
        return privacy_guard(cwd, args.allow)
    if action == "run" and args.hook == "pre-receive":
        from vivary_git.gates import prereceive

        # On the server, in a bare repository: the pushed refs on stdin, the tree top of each is where --root starts.
        return prereceive.run(cwd, prereceive.bounded_lines(sys.stdin.buffer), list(dict.fromkeys(args.root)))
    workspaces = _run_roots(cwd, args.root) if action == "run" else []
    if action == "post-commit" or (action == "run" and args.hook == "post-commit"):
        return post_commit(workspaces)
    if action == "run" and args.hook in FOLLOW_ENV:
        return after_head_moved(args.hook, args.hook_args, workspaces)
    # `run pre-commit` (and `run pre-merge-commit`, the same for a merge): both gates in one process (one
    # interpreter start per commit), both reported. For a merge the index holds the merged tree, and HEAD is the
    # branch merged into: what the merge brings in is what is new. The guard reads the whole repository (every
    # workspace's private paths); the graph check runs once per workspace the hook names (`--root`).
    guard_code = privacy_guard(cwd)
    from vivary_git.main import main

    check_code = EXIT_OK
    for where in [["-C", str(top), "--root", rel] for top, rel in workspaces] or [[]]:
        if where:
            print(f"vivary: workspace {shown(where[-1])}/ (paths below are relative to it)", flush=True)
        check_code = max(check_code, main(["check", "--staged", "--gate", "--new-since", "HEAD", *where]))
    if check_code == EXIT_FINDINGS:
        print("vivary: commit refused: fix the findings above (`git commit --no-verify` skips the hook once)",
              file=sys.stderr)
    return max(guard_code, check_code)


def _install_server(cwd: Path, args: argparse.Namespace) -> int:
    """`hooks install pre-receive`: the server's hook alone (a client hook never runs where pushes land)."""
    from vivary_git.errors import UsageError
    from vivary_git.gates import install, serverhook

    names = install.check_hook_names(list(dict.fromkeys(args.hooks or [serverhook.HOOK])))
    if names != [serverhook.HOOK]:
        raise UsageError(f"install {' '.join(names)}: pre-receive runs where pushes land and the others where "
                         "commits are made; install them apart (`git vivary hooks install pre-receive` on the "
                         "server)")
    if args.python is not None and any(ord(c) < 32 or ord(c) == 127 for c in args.python):
        raise UsageError(f"--python {shown(args.python)}: a path with a control character cannot be written into a "
                         "hook script; give the path of a Python whose path has none")
    roots = serverhook.check_roots(args.root) if args.root else None
    for line in serverhook.install_hook(cwd, args.python, roots):
        print(f"vivary: {shown(line)}")
    return EXIT_OK


def hook_roots(cwd: Path, roots: list[str]) -> list[str]:
    """`hooks install --root DIR...`: each DIR checked as `--root` is everywhere (a folder inside the work tree of
    the repository Git finds here, exit 2 otherwise), and not another repository inside it; returned relative to
    the top of the work tree ("." for the top), as the installed script passes them."""
    from vivary_git.errors import UsageError
    from vivary_git.gates.install import _toplevel
    from vivary_git.source import NestedRoot, root_folder

    top = _toplevel(cwd)
    if top is None:
        raise UsageError("--root: this repository has no work tree, so there is no workspace folder to check; "
                         "install the hooks from a clone with a working tree")
    out: list[str] = []
    for root in roots:
        try:
            folder = root_folder(cwd, root)
        except NestedRoot as err:
            raise UsageError(f"--root {root}: {err.folder} is another repository (a submodule, or a clone inside this "
                             f"work tree), whose commits this repository's hooks never see; install its hooks there "
                             f"(git vivary hooks install -C {err.where})") from None
        rel = folder.relative_to(top.resolve()).as_posix() if folder != top.resolve() else "."
        if any(ord(c) < 32 or ord(c) == 127 for c in rel):
            raise UsageError(f"--root {root}: a folder name with a control character cannot be written into a hook "
                             "script; rename the folder")
        out.append(rel)
    return list(dict.fromkeys(out))


def _run_roots(cwd: Path, roots: list[str]) -> list[tuple[Path, str]]:
    """`hooks run HOOK --root DIR...`: each DIR is relative to the top of the work tree (where Git runs hooks)."""
    if not roots:
        return []
    from vivary_git.errors import UsageError
    from vivary_git.gates.install import _toplevel

    top = _toplevel(cwd)
    if top is None:
        raise UsageError("--root: this repository has no work tree, so there is no workspace folder to check")
    return [(top, r) for r in dict.fromkeys(roots)]


def privacy_guard(cwd: Path, allow: list[str] | None = None) -> int:
    from vivary_git import git
    from vivary_git.gates.guard import guard
    from vivary_git.gates.private import masking

    top = Path(git.out(["rev-parse", "--show-toplevel"], cwd=cwd, env=git.pinned_env(cwd)))
    findings = guard(top, allow or (), masked=masking(None))  # in a CI job, others read what it says
    for f in findings:
        print(f.render())
    if findings:
        print(f"\nvivary: commit refused: {len(findings)} privacy problem(s) in the staged files "
              "(docs/hooks.md#privacy-guard)", file=sys.stderr)
        return EXIT_FINDINGS
    return EXIT_OK


def post_commit(roots: list[tuple[Path, str]] | None = None, hook: str = "post-commit") -> int:
    """Refresh the memory index for the commit just made, when the user asked for that, in the background.

    `index --auto` indexes only when `[memory.local] auto_index = true` asks for it and the user's own Git config
    approves it (`vivary.autoIndex`: the committed file is anyone's word, memory/local/autoindex.py), and is
    silent otherwise but for one line in the log saying what to run when only the first holds, written once while
    it stays the log's last line (gates/indexlog.py): the hook runs after every commit, and a refusal printed
    each time would teach people to ignore it. It reads the tree just
    committed (`--rev` with the commit's id, so a second commit made meanwhile does not change what this run
    indexes), not the working tree. It runs detached from the commit, which returns at once; its messages go to
    `.git/vivary/index.log`. Index runs of one workspace wait for each other (memory/lock.py), so commits in a
    row queue rather than embed twice."""
    from vivary_git.main import build_parser

    options = _index_options(build_parser())
    if "--auto" not in options:
        print(f"vivary: {hook}: nothing to do (this vivary-git has no `index --auto`)")
        return EXIT_OK
    return _index_in_background(roots or [], hook)


# Where the pre-commit framework puts what Git hands each hook (it passes no arguments to a hook's entry).
FOLLOW_ENV = {"post-checkout": ("PRE_COMMIT_FROM_REF", "PRE_COMMIT_TO_REF", "PRE_COMMIT_CHECKOUT_TYPE"),
              "post-merge": ("PRE_COMMIT_IS_SQUASH_MERGE",),
              "post-rewrite": ("PRE_COMMIT_REWRITE_COMMAND",)}


def moves_head(hook: str, hook_args: list[str]) -> bool:
    """Whether what Git ran before `hook` (post-checkout, post-merge, post-rewrite) left HEAD at a commit the
    post-commit hook did not see, so the auto-index has to follow it. Not: a file checkout (`git checkout -- FILE`,
    flag 0) or a checkout that stays at the same commit, since the index is of HEAD's tree (recall of a working
    tree that differs from HEAD is stale whatever the hooks do, and uncommitted edits are never indexed behind the
    user's back); a squash merge, which makes no commit; an amend, whose post-commit run already follows it."""
    import os

    given = hook_args or [os.environ.get(name, "") for name in FOLLOW_ENV[hook]]
    if hook == "post-checkout":
        old, new, branch = [*given, "", "", "1"][:3]
        return branch != "0" and not (old and old == new)
    if hook == "post-merge":
        return given[0] != "1"
    return given[0] != "amend"


def after_head_moved(hook: str, hook_args: list[str], roots: list[tuple[Path, str]] | None = None) -> int:
    """post-checkout, post-merge, post-rewrite: the post-commit hook's background index, at the commit HEAD is at
    now, when the Git command moved HEAD there (`moves_head`). The same approval (`auto_index = true` and the
    user's `vivary.autoIndex`), the same silence, the same rule: a run whose commit is no longer HEAD when its
    turn comes does nothing, so a burst of checkouts leaves the work of the last one."""
    return post_commit(roots, hook) if moves_head(hook, hook_args) else EXIT_OK


def _index_in_background(roots: list[tuple[Path, str]], hook: str = "post-commit") -> int:
    import os
    import subprocess

    from vivary_git.errors import VivaryError
    from vivary_git.gates import indexlog
    from vivary_git.git import Repo

    try:
        repo = Repo(Path.cwd())
        if repo.repo.head_is_unborn:
            return EXIT_OK
        commit = str(repo.repo.head.target)
        log = indexlog.open_for_run(repo)  # handed to the child, closed here once it has it
    except (VivaryError, OSError) as err:
        print(f"vivary: {hook}: the memory index was not refreshed ({shown(str(err))})", file=sys.stderr)
        return EXIT_OK
    args = [*POST_COMMIT[:-1], commit] if POST_COMMIT[-1] == "HEAD" else list(POST_COMMIT)
    # The commit's temporary index (`git commit -a`, `git commit PATH`) is gone once the hook returns.
    env = {k: v for k, v in os.environ.items() if k != "GIT_INDEX_FILE"}
    runs = [[*args, "-C", str(top), "--root", rel] for top, rel in roots] or [args]
    with log:
        try:
            for run_args in runs:  # one run per workspace the hook names; they queue on the index lock
                subprocess.Popen([sys.executable, "-m", "vivary_git.main", *run_args], stdin=subprocess.DEVNULL,
                                 stdout=log, stderr=log, env=env, start_new_session=True, close_fds=True)
        except OSError as err:  # the Python running this cannot be run again (moved, no longer executable)
            why = f"{err.filename}: {err.strerror}" if err.filename and err.strerror else str(err)
            print(f"vivary: {hook}: could not start the memory index ({shown(why)})", file=sys.stderr)
    return EXIT_OK


def _index_options(parser: argparse.ArgumentParser) -> set[str]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and "index" in action.choices:
            return set(action.choices["index"]._option_string_actions)
    return set()


def _status(cwd: Path, as_json: bool) -> int:
    from vivary_git.gates import install, serverhook

    report = serverhook.report(cwd)
    if as_json:
        from vivary_git.commands._common import emit_json

        emit_json(report)
        return EXIT_OK
    # Every value once through `shown`: a pinned Python, a hook folder or a manager's file may hold any character.
    where = f" (core.hooksPath = {shown(report.hooks_path_config)})" if report.hooks_path_config else ""
    print(f"hooks folder: {shown(report.hooks_dir)}{where}")
    m = report.manager
    if m is not None:
        name = install.MANAGER_NAMES.get(m.kind, m.kind)
        print(f"managed by {shown(name)} ({shown(m.detail)}): vivary writes none of its files")
    if report.bare:
        print(f"a bare repository: client hooks ({', '.join(install.HOOKS)}) do not apply, since Git runs them "
              "where commits are made; pre-receive checks every push")
    # One column for every hook name (pre-merge-commit), in a bare repository as elsewhere.
    width = max(len(n) for n in (*install.HOOKS, serverhook.HOOK))
    for h in report.hooks:
        name = f"{h.hook:<{width}}"
        gate = "runs vivary" if h.vivary_runs else "does not run vivary"
        note = f"; {shown(h.note)}" if h.note else ""
        runs = shown(h.runs)
        if h.state == "vivary":
            py = f"python {shown(h.python)}" if h.python else "git-vivary on PATH"
            if h.python and not h.python_ok:
                py = f"python {shown(h.python)} is gone: falls back to git-vivary on PATH; run install again"
            chained = f"; runs {shown(Path(h.chained).name)} first" if h.chained else ""
            checks = f"; checks {shown(install.named(h.roots))}" if h.roots else ""
            at = f"; {shown(h.path)}" if h.hook == "pre-receive" else ""  # hooks/ or a pre-receive.d/ folder
            print(f"  {name}  vivary ({py}{checks}{chained}{at}){note}")
        elif h.state == "absent":
            print(f"  {name}  not installed{note}")
        elif h.state == "pre-commit-framework":
            print(f"  {name}  the pre-commit framework's hook: {runs} {gate}{note}")
        elif h.state == "lefthook":
            print(f"  {name}  lefthook's hook: {runs} {gate}{note}")
        elif h.state == "husky":
            print(f"  {name}  husky's hook: runs {runs}, which {gate}{note}")
        elif m is not None and m.kind == "shared-folder":
            print(f"  {name}  your hook ({runs}), which {gate}{note}")
        elif m is not None:
            print(f"  {name}  another hook (not vivary's){note}")
        elif h.vivary_runs:
            print(f"  {name}  your hook ({shown(h.path)}), which runs vivary{note}")
        elif h.state == "other" and h.note:
            print(f"  {name}  another hook (not vivary's){note}")
        else:
            print(f"  {name}  another hook (not vivary's); `install` would keep it as {h.hook}.local")
    if report.auto_index is not None:
        print(f"auto-index: {auto_index_said(report.auto_index)}")
    if report.unchecked:
        print(f"note: {shown(report.unchecked)}")
    return EXIT_OK


def auto_index_said(a: AutoIndex) -> str:
    """The `auto-index:` line of `hooks status`, escaped: whether the hooks index this clone, and if not, what is
    missing. The approval in the words doctor uses (`autoindex.verdict`)."""
    from vivary_git.memory.local.autoindex import Approval, verdict

    found = Approval(a.approved, a.said, a.declined)
    if a.unread:
        return f"the hooks' index run fails here: {'; '.join(shown(u) for u in a.unread)}"
    if not a.asked:
        # "no committed X sets" rather than "the committed X does not set": X may be committed, not committed yet
        # (HEAD's tree is what the run reads), or nowhere at all, as when only a hook runs `index --auto`.
        files = " or ".join(shown(n) for n in a.files)
        return (f"the hooks index nothing: no committed {files} sets auto_index = true (under "
                f"[memory.local], provider \"vivary-local\"); {shown(found.said)}")
    said = f"auto_index = true in {', '.join(shown(n) for n in a.asked)}, {shown(verdict(found))}"
    if not a.hooks:
        said += "; no installed hook runs `index --auto` yet (`git vivary hooks install post-commit`)"
    return said
