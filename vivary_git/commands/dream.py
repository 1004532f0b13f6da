"""`git vivary dream`: compact recent memories into reviewable tasks, resolve them as commits, inspect runs."""

from __future__ import annotations

import argparse
import sys

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json, index_after_write
from vivary_git.errors import EXIT_OK, UsageError
from vivary_git.escape import text as shown


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "dream", help="compact recent memories: tasks for the host, resolved as one reviewable commit each",
        description="Without options: a dream run, when due (10 memory events since the last dream, or 24 h and 5 "
        "events; --force runs anyway): expired ephemeral memories are removed (one commit) and recently touched "
        "memories are clustered into compaction tasks (sources, a prepared digest, a prompt). --task-id ID with "
        "--title and --content (your summary), --use-heuristic (an extractive summary, no model) or --use-chat "
        "(an opt-in chat provider) resolves a task: one commit adds a super node memory that `compacts` its "
        "sources and archives them. --inspect status|runs|tasks lists. Exit 0; 2 usage or config error; 3 "
        "refused (a stale or resolved task, a secret, your changes on a path). docs/dream.md.",
    )
    p.add_argument("--inspect", choices=("status", "runs", "tasks"), help="list the due state, runs or tasks")
    p.add_argument("--task-id", metavar="ID", help="the task to resolve (from --inspect tasks)")
    p.add_argument("--title", metavar="T", help="the compacted memory's title")
    p.add_argument("--content", metavar="C", help="the compacted memory's text")
    p.add_argument("--use-heuristic", action="store_true", help="resolve with the extractive summary (no model)")
    p.add_argument("--use-chat", action="store_true",
                   help="resolve with the chat provider of [memory.dream] (off by default; network is opt-in)")
    p.add_argument("--force", action="store_true", help="run even when a dream is not due")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.dream import dream
    from vivary_git.memory.writes.remember import open_view
    from vivary_git.workspace import open_workspace

    resolving = args.title is not None or args.content is not None or args.use_heuristic or args.use_chat
    if resolving and not args.task_id:
        raise UsageError("--title/--content, --use-heuristic and --use-chat resolve a task: give --task-id ID "
                         "(see `git vivary dream --inspect tasks`)")
    if args.inspect and (args.task_id or resolving or args.force):
        raise UsageError("--inspect lists; give it alone")
    ws = open_workspace(args.cwd, root=args.root)
    view = open_view(ws, machine=args.json)
    if args.inspect:
        answer = dream.inspect(view, args.inspect)
    elif args.task_id:
        answer = dream.resolve(view, args.task_id, title=args.title, content=args.content,
                               use_heuristic=args.use_heuristic, use_chat=args.use_chat, source="cli")
    else:
        answer = dream.run(view, force=args.force, source="cli")
    if args.json:
        emit_json(answer)
    else:
        _print(answer)
    wrote = (answer.run is not None and answer.run.expire_commit) or \
        (answer.resolution is not None and answer.resolution.commit)
    if wrote:
        index_after_write(args, "dream")
    return EXIT_OK


def _print(a: object) -> None:
    from vivary_git.memory.dream.dream import DreamAnswer

    assert isinstance(a, DreamAnswer)
    say = "vivary dream:"
    if a.action in ("deferred", "status") and a.due is not None:
        print(f"{say} {shown(a.due.reason)}")
    if a.action == "run" and a.run is not None:
        r = a.run
        print(f"{say} run {r.id} ({r.method}): {r.considered} live memories, {r.seeds} recently touched; "
              f"{len(r.tasks)} task(s)" + (f", {len(r.skipped)} already open" if r.skipped else ""))
        if r.expired:
            n = len(r.expired)
            print(f"{say} removed {n} expired memor{'y' if n == 1 else 'ies'} in {(r.expire_commit or '')[:12]}")
        for k in r.expired_kept:
            print(f"{say} {shown(k.path)}: expired, left in place: {shown(k.reason)}")
        for u in r.unreadable:
            print(f"{say} {shown(u.path)}:{u.line}: frontmatter could not be read, so dream leaves this memory "
                  "alone (it is not compacted, archived or expired; it may be pinned); `git vivary check` names the "
                  "problem: fix it and dream again", file=sys.stderr)
    if a.action == "resolve" and a.resolution is not None:
        res = a.resolution
        print(f"{say} {shown(res.super_node)} ({shown(res.path)}) compacts {len(res.archived)} memories, "
              f"now archived; commit {res.commit[:12]} ({res.by})")
    for t in a.tasks or (a.run.tasks if a.run is not None else []):
        print(f"  {t.id} [{t.status}] {len(t.sources)} memories, cohesion {t.cohesion:.2f}, topic: "
              f"{shown(', '.join(t.topic))}")
        for s in t.sources:
            print(f"      - {shown(s.id)}: {shown(s.title[:80])}")
    for r in a.runs or []:
        print(f"  {r.id} {r.finished} {r.method}: {len(r.tasks)} task(s), {len(r.expired)} expired removed")
    if a.digest:
        print(f"{say} MEMORY.md {shown(a.digest)}")
    if a.digest_unreadable:
        from vivary_git.commands.digest import say_unreadable

        say_unreadable(a.digest_unreadable, say[:-1])
    if a.action == "run" and a.run is not None and a.run.tasks:
        print(f"{say} resolve each: `git vivary dream --task-id ID --title T --content C` (your summary) or "
              "`--use-heuristic`; see `--inspect tasks --json` for sources, digest and prompt")
