"""`git vivary remember`: write a memory as a note and commit it, beside your own work."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json, index_after_write
from vivary_git.errors import EXIT_OK, EXIT_REFUSED


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "remember", help="add a memory: a note in the memory folder, committed with a Vivary-Op trailer",
        description="Write TEXT as a Markdown note in the workspace's memory folder (default memories/, "
        "[memory.remember] in .vivary/memory.toml) and commit it on the checked-out branch without touching your "
        "staged changes or other edits: `git status` and `git diff --cached` read as before. Refused when the text "
        "looks like a credential; refused when an existing memory makes the same claim (duplicate) or says otherwise "
        "about the same thing (update: another number, date, name, a negation), unless --force; with --supersede an "
        "update is added and the old memory archived in the same commit. A related memory is linked. Exit 0 added; "
        "2 usage or config error; 3 refused (duplicate, update, secret, the note's path changed by you). "
        "With the semantic memory on and an index built, the index is brought up to the new tree before it returns "
        "(within [memory] max_unindexed), so recall finds the memory at once. docs/remember.md. "
        "With --file, --folder or --url the memory is a source anchor: where something is, not a copy (a file's "
        "path, blob id and bounded text; a folder's top-level summary; a web page's readable text, fetched only with "
        "allow_network = true under [memory.sources] and --allow-network). TEXT is then an optional description. "
        "A private file or folder is refused by name. `git vivary refresh ID` re-reads an anchor.",
    )
    p.add_argument("text", nargs="*", metavar="TEXT", help="what to remember (words are joined by spaces); with an "
                   "anchor, its description")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--file", metavar="PATH", help="remember where a file of the repository is (and its text)")
    src.add_argument("--folder", metavar="PATH", help="remember a folder: a summary of its top level")
    src.add_argument("--url", metavar="URL", help="remember a web page: its readable text, fetched once")
    p.add_argument("--allow-network", action="store_true",
                   help="allow --url to fetch (also needs allow_network = true under [memory.sources])")
    p.add_argument("--title", metavar="T", help="its title (default: the first words of TEXT)")
    p.add_argument("--tag", action="append", default=[], metavar="T", help="a tag; repeatable")
    p.add_argument("--type", default="memory", metavar="TYPE", help="its type (default memory)")
    p.add_argument("--durability", choices=("working", "durable", "pinned", "ephemeral"),
                   help="how long it should matter (default: [memory.remember] durability, working)")
    p.add_argument("--expires", metavar="WHEN", help="when it stops mattering, an ISO date or date-time (UTC when "
                   "no zone is given): an ephemeral memory")
    p.add_argument("--link", action="append", default=[], metavar="FIELD:ID",
                   help="an edge from the new memory, e.g. related:deploy-runbook; repeatable")
    p.add_argument("--force", action="store_true", help="add even when a near-duplicate exists; for an anchor "
                   "already remembered, refresh it in place")
    p.add_argument("--supersede", action="store_true", help="when an existing memory says otherwise about the same "
                   "thing (verdict update), add this one and archive that one in the same commit")
    p.add_argument("--scope", choices=("workspace", "user"), default="workspace",
                   help="user: commit it in your own memory repository (git config --global vivary.userMemory PATH), "
                   "searched beside every workspace by `git vivary mcp` (docs/remember.md#your-own-memory)")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.memory.writes import remember
    from vivary_git.memory.writes.probe_loader import probe_for
    from vivary_git.workspace import open_workspace

    if args.file is not None or args.folder is not None or args.url is not None:
        if args.scope == "user":
            from vivary_git.mcp.usermem import refuse_anchor

            refuse_anchor()
        return _anchor(args)
    if not args.text:
        from vivary_git.errors import UsageError

        raise UsageError("say what to remember (TEXT), or give --file, --folder or --url")
    ws = open_workspace(_user_memory(args), root=None) if args.scope == "user" else open_workspace(args.cwd,
                                                                                                  root=args.root)
    view = remember.open_view(ws, machine=args.json)
    probe = probe_for(view)
    result = remember.add(
        view, " ".join(args.text), title=args.title, tags=args.tag, type_name=args.type,
        durability=args.durability, links=args.link, force=args.force, supersede=args.supersede, source="cli",
        probe=probe, expires=args.expires,
    )
    from vivary_git.escape import text as shown

    # Every value is escaped: an id, a path and a matching memory's text are a note's, which anyone who can commit
    # wrote, and this may print in a CI log (a line starting `::` is a command there).
    if args.json:
        emit_json(result)
    elif result.ok:
        where = f" of {shown(str(ws.source.root))}" if args.scope == "user" else ""
        print(f"remembered {shown(result.id)} ({shown(result.path)}) in "
              f"{result.commit[:12] if result.commit else '-'} on {shown(result.ref)}{where}")
        for old in result.archived or ():
            print(f"    supersedes {shown(old)}, now archived")
        if result.verdict == "related":
            print(f"    related: {shown(', '.join(m.id for m in result.matches or ()))}")
    else:
        print(f"vivary remember: {shown(result.message)}")
        if result.matches:
            print(f"    {shown(result.matches[0].text[:200])}")
    if result.ok and args.scope != "user":
        index_after_write(args, "remember", probe.loaded)
    if result.dream_due and not args.json:
        print(f"vivary remember: {shown(result.dream_due)}")
    return EXIT_OK if result.ok else EXIT_REFUSED


def _user_memory(args: argparse.Namespace) -> str:
    """The user memory repository (`vivary.userMemory` in the user's global config only), or a usage error."""
    from pathlib import Path

    from vivary_git import git
    from vivary_git.errors import UsageError
    from vivary_git.mcp.usermem import HOW, locate

    if args.root is not None:
        raise UsageError("--root names a folder of this workspace; --scope user writes to your own memory repository")
    where = locate(git.try_open(Path(args.cwd or ".").resolve()))
    if not where.configured:
        raise UsageError(f"no user memory is configured: {HOW}")
    if where.problem is not None or where.path is None:
        raise UsageError(f"the user memory is off: {where.problem}")
    return where.path


def _anchor(args: argparse.Namespace) -> int:
    import sys
    from pathlib import Path

    from vivary_git.escape import text as shown
    from vivary_git.memory.sources import anchors
    from vivary_git.memory.writes import remember
    from vivary_git.workspace import open_workspace

    ws = open_workspace(args.cwd, root=args.root)
    view = remember.open_view(ws, machine=args.json)
    base = Path(args.cwd or ".")
    common = {"title": args.title, "description": " ".join(args.text) or None, "tags": args.tag,
              "durability": args.durability, "links": args.link, "force": args.force, "source": "cli"}
    if args.supersede:
        from vivary_git.errors import UsageError

        raise UsageError("--supersede does not apply to --file, --folder or --url")
    if args.type != "memory" or args.expires is not None:
        from vivary_git.errors import UsageError

        raise UsageError(f"{'--type' if args.type != 'memory' else '--expires'} does not apply to --file, --folder "
                         "or --url: anchors are memories, kept current by `refresh`")
    if args.file is not None:
        result = anchors.remember_file(view, args.file, base=base, **common)
    elif args.folder is not None:
        result = anchors.remember_folder(view, args.folder, base=base, **common)
    else:
        result = anchors.remember_url(view, args.url, allow_network=args.allow_network, **common)
    if result.warning:
        print(f"vivary remember: warning: {shown(result.warning)}", file=sys.stderr)
    if args.json:
        emit_json(result)
    elif result.changed:
        verb = "refreshed" if result.op == "refresh" else "remembered"
        print(f"{verb} {result.anchor} {shown(result.target)} as {shown(result.id)} ({shown(result.path)}) in "
              f"{result.commit[:12] if result.commit else '-'} on {result.ref}")
    elif result.message:
        print(f"vivary remember: {shown(result.message)}")
    if result.changed:
        index_after_write(args, "remember")
    return EXIT_OK
