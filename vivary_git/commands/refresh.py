"""`git vivary refresh`: re-read a source anchor (a file, a folder, a web page) and commit the change."""

from __future__ import annotations

import argparse

from vivary_git.commands._common import add_json_arg, add_workspace_args, emit_json, index_after_write
from vivary_git.errors import EXIT_FINDINGS, EXIT_OK


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "refresh", help="re-read source anchors (remember --file/--folder/--url) and commit what changed",
        description="Re-read the file, folder or web page each anchor ID points to and commit the change to its note "
        "in place (one commit per anchor that changed; none when the source reads as before). --stale refreshes "
        "every anchor that --check finds stale. With --check nothing is written and nothing reaches the network: "
        "each anchor is fresh, stale (its file's blob id or its folder's top level changed), missing, private "
        "(now held back by the privacy boundary) or unchecked (a web page). A web page is fetched again only with "
        "allow_network = true under [memory.sources] and --allow-network. Exit 0 done (--check: all fresh or "
        "unchecked); 1 --check found stale, missing or private anchors; 2 usage, config or fetch error; 3 refused "
        "(private, a secret in the text, the network not allowed). docs/remember.md.",
    )
    p.add_argument("ids", nargs="*", metavar="ID", help="anchor ids or note paths (--check: default all anchors)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--check", action="store_true", help="only say which anchors are stale; write nothing")
    mode.add_argument("--stale", action="store_true", help="refresh every anchor --check finds stale")
    p.add_argument("--allow-network", action="store_true",
                   help="allow re-fetching web pages (also needs allow_network = true under [memory.sources])")
    add_workspace_args(p)
    add_json_arg(p)
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from vivary_git.errors import UsageError
    from vivary_git.escape import text as shown
    from vivary_git.memory.sources import anchors
    from vivary_git.memory.writes import remember
    from vivary_git.workspace import open_workspace

    view = remember.open_view(open_workspace(args.cwd, root=args.root))
    if args.check:
        states = anchors.check(view, args.ids, source="cli")
        if args.json:
            emit_json(states)
        else:
            if not states:
                print("vivary refresh: no source anchors")
            for s in states:
                print(f"{s.state:<9} {shown(s.id)}  {s.anchor} {shown(s.target)}"
                      + (f"  ({shown(s.detail)})" if s.detail and s.state != "fresh" else ""))
        bad = [s for s in states if s.state in ("stale", "missing", "private")]
        return EXIT_FINDINGS if bad else EXIT_OK
    ids = list(args.ids)
    if args.stale:
        if ids:
            raise UsageError("--stale refreshes every stale anchor; give no IDs with it (or drop --stale)")
        ids = [s.id for s in anchors.check(view, source="cli") if s.state == "stale"]
    elif not ids:
        raise UsageError("name the anchors to refresh (ids from `git vivary refresh --check`), or use --stale")
    results = []
    for ref in ids:
        result = anchors.refresh(view, ref, allow_network=args.allow_network, source="cli")
        results.append(result)
        if not args.json:
            if result.changed:
                print(f"refreshed {shown(result.id)} ({result.anchor} {shown(result.target)}) in "
                      f"{result.commit[:12] if result.commit else '-'} on {result.ref}")
            else:
                print(f"unchanged {shown(result.id)} ({result.anchor} {shown(result.target)})")
    if args.json:
        emit_json(results)
    if any(r.changed for r in results):
        index_after_write(args, "refresh")
    return EXIT_OK
