"""`git vivary onboard`: the first-start questions, answered into the private USER.md profile."""

from __future__ import annotations

import argparse
import sys

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json
from vivary_git.errors import EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "onboard", help="answer the first-start questions (name, role, language, style, goal) into USER.md",
        description="Record who you are for the agents in this workspace, as a pinned profile in USER.md: private "
        "to this machine (Git ignores it: a rule is added to .git/info/exclude when none does), never indexed, "
        "never in a cache ref. Keys: name, role, language, style (response style), goal. With --answer, writes "
        "those answers (an empty value removes one); on a terminal without --answer, asks the questions still "
        "open; otherwise lists them. Output names the questions, never the answers. Exit 0; 2 on an unknown "
        "key; 3 when USER.md is tracked by Git or its profile markers make no one block. See docs/hosts.md.",
    )
    p.add_argument("--answer", action="append", default=[], metavar="KEY=VALUE",
                   help="an answer; repeatable (keys: name, role, language, style, goal)")
    add_json_arg(p)
    add_workspace_args(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.hosts import install, onboard

    root = install.find_root(args.cwd, args.root)
    answers = onboard.parse_answers(args.answer)
    if not answers and not args.json and sys.stdin.isatty():
        answers = onboard.ask(sys.stdin, sys.stderr, onboard.status(root).missing)
    report = onboard.record(root, answers) if answers else onboard.status(root)
    if args.json:
        emit_json({"ok": True, "file": report.file, "done": report.done, "written": report.written,
                   "removed": report.removed, "answered": report.answered, "missing": report.missing,
                   "excluded": report.excluded,
                   "questions": [{"key": k, "question": onboard.QUESTIONS[k]} for k in report.missing]})
        return EXIT_OK
    w = sys.stdout.write
    if report.written:
        w(f"wrote {', '.join(report.written)} to {report.file} (private: never committed, never indexed)\n")
    if report.removed:
        w(f"removed {', '.join(report.removed)} from {report.file}\n")
    if answers and not report.written and not report.removed:
        w(f"{report.file} unchanged: the profile was already as given\n")
    if report.excluded:
        w(f"added {report.file} to .git/info/exclude so Git ignores it\n")
    if report.done:
        w("onboarding done\n")
    else:
        w("still to answer (git vivary onboard --answer KEY=VALUE):\n")
        for k in report.missing:
            w(f"  {k}: {onboard.QUESTIONS[k]}\n")
    return EXIT_OK
