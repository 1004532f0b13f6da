"""`git vivary mcp`: the MemoryService over MCP, with the official SDK (`pip install 'vivary-git[mcp]'`).

Tools and resources by profile (`warm.PROFILES`, `warm.RESOURCES`), each tool with a title and its hints
(`TOOLS`) and answering compact JSON, as text and as structured content; a refusal is a tool error whose text
says why and what to do. A call that made a commit is followed by `notifications/resources/list_changed`. Resources:
`vivary://node/{id}` for every public node and, for host-core hosts only, `vivary://memory/digest` (the
private MEMORY.md, served only here, to the host that asked).
Transports: stdio (default) and streamable HTTP, on loopback unless told otherwise; off loopback a bearer
token from an environment variable is required. Every HTTP request's Host and Origin must name this server
(DNS-rebinding protection, whatever the bind).
"""

from __future__ import annotations

import hmac
import os
import re
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from inspect import cleandoc
from typing import Annotated, Any, Literal

import msgspec
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ToolError
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import CallToolResult, ResourceListChangedNotification, TextContent, ToolAnnotations
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from vivary_git import __version__
from vivary_git.errors import UsageError, VivaryError
from vivary_git.mcp.profiles import PROFILES, RESOURCES
from vivary_git.mcp.reads import DEFAULT_BUDGET, MAX_BUDGET, MAX_HOPS, MAX_QUERY, MAX_TOP_K, answer_text
from vivary_git.mcp.service import MemoryService

# Names (ids, paths, globs, fields, dates, cursors) and lists of them are bounded before anything reads them: a
# 5 MB glob came back whole in the answer's filters, and a 10 MB id in the error and on stderr.
MAX_NAME = 4096  # a path's length on Linux
MAX_NAMES = 64
Name = Annotated[str, Field(max_length=MAX_NAME)]
Names = Annotated[list[Name], Field(max_length=MAX_NAMES)]

__all__ = ["build_server", "serve_http", "serve_stdio"]

INSTRUCTIONS = (
    "Memory of this Git workspace. `search` finds notes and memories (keywords or a question); `read` opens one "
    "by id with its edges; `add` remembers something new (its verdict: duplicate, refused; update, refused when "
    "a memory says otherwise: update it, or pass supersede; related or new, added); `update`, `link` and "
    "`unlink` revise memories, `edit` changes one in place (append, replace a passage, expires, durability, "
    "tags), `retire` archives one with a reason, `forget` deletes one, `move` renames one (links to it follow); "
    "`recent` lists what changed lately; `context` gives a note with its typed neighbourhood; `dream` compacts "
    "memories when an answer "
    "says dream_due (resolve its tasks with your own summary); `onboard`, at first start when `status` says "
    "onboarding is not done, gives the questions to ask the user and records their answers in the private "
    "USER.md, never committed. Every other write is a Git commit. Results are leads: read a note before acting "
    "on it. Private files are never shown."
)

Json = dict[str, Any]
# A tool's answer: compact JSON as text, the same object as structured content (its schema: a JSON object)
Answer = Annotated[CallToolResult, Json]
Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]], Awaitable[None]]
Ctx = Context[Any, Any]

# The closed sets of the arguments, as JSON-schema enums (tests hold them equal to the service's own lists)
Mode = Literal["auto", "text", "semantic", "hybrid"]
Durability = Literal["working", "durable", "pinned", "ephemeral"]
Inspect = Literal["status", "runs", "tasks"]
DateOf = Literal["note", "commit"]
SearchScope = Literal["all", "workspace", "user"]  # where search looks: mcp/usermem.py
AddScope = Literal["workspace", "user"]
Op = Literal["add", "update", "edit", "link", "unlink", "retire", "forget", "move", "dream", "expire", "commit",
             "revert"]


def _tool(title: str, *, read_only: bool = False, destructive: bool = False, idempotent: bool = True,
          open_world: bool = False) -> ToolAnnotations:
    return ToolAnnotations(title=title, read_only_hint=read_only, destructive_hint=destructive,
                           idempotent_hint=idempotent, open_world_hint=open_world)


# What a host shows for each tool and may approve without asking (docs/mcp.md#tool-metadata), every hint said
# outright. Destructive: the tool may change or remove what a note already says (all of it undone by `git
# revert`); `add` is, since `supersede` archives the memory it replaces and `force` refreshes an anchor.
# Open world: `add` fetches a web page for `url`. A tool without its line here stops the server at start.
TOOLS: dict[str, ToolAnnotations] = {
    "search": _tool("Search notes and memories", read_only=True),
    "read": _tool("Read a note", read_only=True),
    "add": _tool("Remember", destructive=True, idempotent=False, open_world=True),
    "update": _tool("Update a memory", destructive=True),
    "link": _tool("Link two notes"),
    "unlink": _tool("Unlink two notes", destructive=True),
    "dream": _tool("Dream: compact memories", destructive=True, idempotent=False),
    "status": _tool("Memory status", read_only=True),
    "onboard": _tool("Onboard the user", destructive=True),
    "edit": _tool("Edit a memory", destructive=True, idempotent=False),
    "retire": _tool("Retire a memory", destructive=True),
    "forget": _tool("Forget a memory", destructive=True),
    "move": _tool("Move a memory", destructive=True),
    "recent": _tool("Recent memory changes", read_only=True),
    "context": _tool("A note in its context", read_only=True),
}


def _out(value: Any) -> Json:
    out: Json = msgspec.to_builtins(value)
    return out


def _answer(value: Any) -> CallToolResult:
    """`value` as a host receives it: compact JSON text (what `search`'s budget counts, docs/mcp.md#budgets) and
    the same object as structured content, so whichever a host hands its model, it is counted once."""
    return CallToolResult(content=[TextContent(type="text", text=answer_text(value).decode())],
                          structured_content=_out(value))


def _call(fn: Callable[[], Any], ctx: Ctx | None = None) -> CallToolResult:
    """The tool's answer, or its refusal as a tool error. With `ctx` (a write), a commit is told to the host, and
    a commit that is made but not yet in the user's index (`commits.unsynced`) is a `warning` of the answer: the
    write succeeded, and an agent told it failed would write it again."""
    from vivary_git.memory.writes import commits

    commits.unsynced()  # (nothing a call before this one left)
    try:
        value = fn()
    except VivaryError as err:
        raise ToolError(" ".join([str(err), *err.detail, *commits.unsynced()])) from None  # detail: Git's lines
    said = commits.unsynced()
    if said:
        value = _out(value)
        if isinstance(value, dict):
            value["warning"] = " ".join(said)
    answer = _answer(value)
    if ctx is not None and _committed(answer.structured_content or {}):
        import anyio.from_thread

        anyio.from_thread.run(_resources_changed, ctx)  # tools run in a worker thread: this goes out first
    return answer


def _committed(out: Json) -> bool:
    """Whether a write's answer says it made a commit (a note written, moved, archived or removed)."""
    resolution, run = out.get("resolution"), out.get("run")
    return bool(out.get("commit") or (isinstance(resolution, dict) and resolution.get("commit"))
                or (isinstance(run, dict) and run.get("expire_commit")))


async def _resources_changed(ctx: Ctx) -> None:
    """`notifications/resources/list_changed`: the notes `vivary://node/{id}` reaches are not what they were. On a
    2026-07-28 connection the event goes to the `subscriptions/listen` streams that asked for it."""
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        await ctx.notify_resources_changed()
    else:
        await ctx.request_context.session.send_notification(ResourceListChangedNotification(),
                                                            related_request_id=ctx.request_id)


def _capabilities(server: MCPServer[Any]) -> None:
    """Advertise what the server has: `resources.listChanged` (a commit is told, `_resources_changed`), and no
    `prompts`, as there are none. The SDK derives capabilities from its handlers and takes the listChanged flags
    only as an argument at each connection's start, so both are set on its low-level server here."""
    low = server._lowlevel_server
    for method in ("prompts/list", "prompts/get"):
        low._request_handlers.pop(method, None)
    opening = low.create_initialization_options
    setattr(low, "create_initialization_options",  # noqa: B010 (a method replaced on this instance)
            lambda options=None, *args, **kwargs: opening(options or NotificationOptions(resources_changed=True),
                                                          *args, **kwargs))


class _Server(MCPServer[Any]):
    """The SDK's server, with a tool's arguments checked before the call and refused in a sentence of our own
    (`_refusal`) rather than pydantic's report, which ends in a link to pydantic's documentation."""

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            try:
                tool.fn_metadata.validate_arguments(arguments)
            except ValidationError as err:
                # `from err`: the SDK logs the names of the arguments refused, never the values given
                raise ToolError(_refusal(name, err, tool.fn_metadata.arg_model)) from err
        return await super().call_tool(name, arguments, context)


def _strict(server: MCPServer[Any], name: str) -> None:
    """Make tool `name`'s arguments strict, in its input schema and in the check of each call: an unknown
    argument is refused (a mistyped `k` no longer gets `top_k`'s default in silence; the schema says
    `additionalProperties: false`), and no value is coerced (`true` is no integer, `"5"` no number)."""
    tool = server._tool_manager.get_tool(name)
    assert tool is not None
    loose = tool.fn_metadata.arg_model
    strict: type[Any] = type(loose.__name__, (loose,), {"__module__": __name__, "model_config": ConfigDict(
        extra="forbid", strict=True, arbitrary_types_allowed=True)})
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)


MAX_REFUSED = 5  # wrong arguments said in one refusal
_SUBJECT = re.compile(r"\A(?:Input|String|List|Dictionary|Object|Value error,)\s+")  # pydantic's, as the argument


def _refusal(tool: str, err: ValidationError, model: type[BaseModel]) -> str:
    """Each wrong argument of a call to `tool` in words: which argument, what was given, what is expected."""
    known = ", ".join(f.alias or n for n, f in model.model_fields.items()) or "no arguments"
    said = []
    for e in err.errors(include_url=False):
        where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p))
                        for i, p in enumerate(e.get("loc", ())))
        if e["type"] == "extra_forbidden":
            said.append(f"unknown argument {where!r}; {tool} takes {known}")
        elif e["type"] == "missing":
            said.append(f"the argument {where!r} is required")
        else:
            wanted = _SUBJECT.sub("", str(e.get("msg", "")), count=1)
            said.append(f"{where!r} {wanted}, given {_given(e.get('input'))}")
    more = len(said) - MAX_REFUSED
    return f"{tool}: " + "; ".join(said[:MAX_REFUSED]) + (f"; and {more} more" if more > 0 else "")


def _given(value: Any) -> str:
    """A value a caller gave, as a refusal says it: short, never the whole of a long one."""
    if isinstance(value, bool) or value is None:
        return f"{msgspec.json.encode(value).decode()} ({'a boolean' if value is not None else 'null'})"
    if isinstance(value, str):
        return f"{msgspec.json.encode(value).decode()} (a string)" if len(value) <= 40 else \
            f"a string of {len(value)} characters"
    if isinstance(value, int | float):
        text = repr(value)
        return text if len(text) <= 40 else f"a number of {len(text)} digits"
    if isinstance(value, list):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def build_server(service: MemoryService) -> MCPServer[Any]:
    server: MCPServer[Any] = _Server("vivary-git", version=__version__, instructions=INSTRUCTIONS)
    tools = PROFILES[service.profile]
    _capabilities(server)

    def search(
        query: Annotated[str, Field(max_length=MAX_QUERY, description="keywords and/or a natural-language question")],
        top_k: Annotated[int, Field(ge=1, le=MAX_TOP_K, description="how many results (1-50)")] = 5,
        type: Annotated[Names | None, Field(description="only these node types ('' = untyped)")] = None,
        path: Annotated[Names | None, Field(description="only paths matching these globs")] = None,
        edge: Annotated[Names | None, Field(description="only nodes with these outbound edges, FIELD[:ID]")]
        = None,
        include_neighbors: Annotated[int, Field(ge=0, le=MAX_HOPS, description="neighbours within N hops")] = 0,
        include_content: Annotated[bool, Field(description="include each note's body")] = False,
        budget: Annotated[int, Field(ge=0, le=MAX_BUDGET, description="tokens of the whole answer's text (its "
                                                                       "UTF-8 bytes / 4); 0: none")]
        = DEFAULT_BUDGET,
        mode: Annotated[Mode, Field(description="auto (hybrid when the semantic index is fresh), text (keywords), "
                                                "semantic, hybrid")]
        = "auto",
        include_archived: Annotated[bool, Field(description="also archived memories: retired (retire), "
                                                            "superseded (add with supersede) or compacted by a "
                                                            "dream into a super node")]
        = False,
        since: Annotated[Name | None, Field(description="only nodes dated from then: an ISO date or date-time, or an "
                                                       "age such as 24h, 7d, 2w")] = None,
        until: Annotated[Name | None, Field(description="only nodes dated before then (a date: through that day)")]
        = None,
        date: Annotated[DateOf, Field(description="what since/until compare: note (its observed_at, updated, date "
                                                  "or created) or commit (its last commit)")] = "note",
        cursor: Annotated[Name | None, Field(description="next_cursor of the previous answer: its next page")] = None,
        scope: Annotated[SearchScope, Field(description="all (the workspace and the user memory, when one is "
                                                        "configured), workspace, or user (only the user's own memory)")]
        = "all",
    ) -> Answer:
        """Search the workspace's notes and memories. Answers say whether they are keyword (text), semantic or
        hybrid; with next_cursor when there are more results (pass it back as cursor, with the same arguments)."""
        return _call(lambda: service.search(query, top_k=top_k, type=type or (), path=path or (), edge=edge or (),
                                            include_neighbors=include_neighbors, include_content=include_content,
                                            budget=budget, mode=mode, include_archived=include_archived, since=since,
                                            until=until, date=date, cursor=cursor, scope=scope))

    def read(
        id: Annotated[Name, Field(description="a node id from search, or a note's path")],
        include_content: Annotated[bool, Field(description="include the note's body")] = False,
        neighbors: Annotated[int, Field(ge=0, le=MAX_HOPS, description="neighbours within N hops")] = 1,
    ) -> Answer:
        """One node: type, title, frontmatter, outbound and inbound edges, neighbours, and its body when asked."""
        return _call(lambda: service.read(id, include_content=include_content, neighbors=neighbors))

    def add(
        text: Annotated[str, Field(description="what to remember, in plain words (with file/folder/url: an "
                                               "optional description)")] = "",
        title: Annotated[str | None, Field(description="a short title (default: the first words)")] = None,
        tags: Annotated[Names | None, Field(description="one-word tags")] = None,
        durability: Annotated[Durability | None, Field(description="how long it matters")] = None,
        links: Annotated[Names | None, Field(description="edges from the new memory, FIELD:ID")] = None,
        force: Annotated[bool, Field(description="add even when a near-duplicate exists; for a source already "
                                                 "remembered, refresh it")] = False,
        supersede: Annotated[bool, Field(description="when an existing memory says otherwise about the same thing "
                                                     "(verdict update), add this one and archive that one in the "
                                                     "same commit")] = False,
        file: Annotated[Name | None, Field(description="remember where a file is (path from the repository top), "
                                                      "with its bounded text")] = None,
        folder: Annotated[Name | None, Field(description="remember a folder: a summary of its top level")] = None,
        url: Annotated[str | None, Field(description="remember a web page: its readable text")] = None,
        allow_network: Annotated[bool, Field(description="allow fetching url (the workspace must allow it too)")]
        = False,
        expires: Annotated[Name | None, Field(description="when it stops mattering, an ISO date or date-time (UTC "
                                                         "when no zone is given): an ephemeral memory")] = None,
        scope: Annotated[AddScope, Field(description="workspace, or user: the user's own memory repository (ids "
                                                     "user:...)")] = "workspace",
        ctx: Ctx | None = None,
    ) -> Answer:
        """Remember something: a new memory note, committed to Git. Every answer has the probe's verdict and the
        matching memories with the evidence: duplicate (refused: the same claim is remembered; update that one, or
        pass force), update (refused: a memory says otherwise about the same thing; update it, or pass supersede
        to archive it and add this one), related (added, linked to them) or new. With file, folder or url: a
        source anchor, where something is (private files and folders are refused)."""
        if file is not None or folder is not None or url is not None:
            if supersede or expires is not None:
                raise ToolError(f"{'supersede' if supersede else 'expires'} does not apply to file, folder or url: "
                                "a source anchor is not a memory that expires or supersedes, `refresh` keeps it "
                                "current")
            return _call(lambda: service.anchor(file=file, folder=folder, url=url, allow_network=allow_network,
                                                description=text or None, title=title, tags=tags or (),
                                                durability=durability, links=links or (), force=force,
                                                scope=scope), ctx)
        return _call(lambda: service.add(text, title=title, tags=tags or (), durability=durability,
                                         links=links or (), force=force, supersede=supersede, expires=expires,
                                         scope=scope), ctx)

    def update(
        id: Annotated[Name, Field(description="the memory's id")],
        text: Annotated[str | None, Field(description="its new text")] = None,
        tags: Annotated[Names | None, Field(description="its new tags (replaces them)")] = None,
        durability: Annotated[Durability | None, Field(description="how long it matters")] = None,
        title: Annotated[str | None, Field(description="its new title (the `# title` line); without it the title "
                                                       "stays as it was, even when the text changes")] = None,
        ctx: Ctx | None = None,
    ) -> Answer:
        """Revise a memory's text, title, tags or durability (one commit; the rest of the file unchanged). The
        title stays as it was unless title is given, even when new text contradicts it: when the text changes
        what the title says, pass the new title too. The id stays (move renames)."""
        return _call(lambda: service.update(id, text=text, tags=tags, durability=durability, title=title), ctx)

    def edit(
        id: Annotated[Name, Field(description="the memory's id")],
        append: Annotated[str | None, Field(description="text to add at the end (or of the heading's section)")]
        = None,
        heading: Annotated[Name | None, Field(description="append under this heading (its text), at its end")] = None,
        replace: Annotated[str | None, Field(description="a passage of the memory, exactly as written; it must "
                                                         "occur once")] = None,
        with_text: Annotated[str | None, Field(description="what replaces the passage (\"\" deletes it)")] = None,
        expires: Annotated[Name | None, Field(description="for an ephemeral memory: an ISO date or date-time; \"\" "
                                                         "removes it")] = None,
        durability: Annotated[Durability | None, Field(description="how long it matters")] = None,
        tags: Annotated[Names | None, Field(description="its new tags (replaces them)")] = None,
        ctx: Ctx | None = None,
    ) -> Answer:
        """Change a memory in place (one commit; the rest of the file unchanged): append to its end or to a
        heading's section, replace a passage that occurs once (else refused, naming the candidates), set expires,
        durability or tags."""
        return _call(lambda: service.edit(id, append=append, heading=heading, replace=replace, with_text=with_text,
                                          expires=expires, durability=durability, tags=tags), ctx)

    def retire(
        id: Annotated[Name, Field(description="the memory's id")],
        reason: Annotated[str, Field(description="why, in one line (kept in the note and the commit)")],
        ctx: Ctx | None = None,
    ) -> Answer:
        """Archive a memory with a reason: hidden from search (include_archived shows it), kept with its history;
        one commit that `git revert` undoes."""
        return _call(lambda: service.retire(id, reason=reason), ctx)

    def forget(
        id: Annotated[Name, Field(description="the memory's id")],
        reason: Annotated[str, Field(description="why, in one line (kept in the commit)")],
        ctx: Ctx | None = None,
    ) -> Answer:
        """Delete a memory's note in one commit (memories only; `git revert` brings it back). Prefer retire,
        which keeps it readable."""
        return _call(lambda: service.forget(id, reason=reason), ctx)

    def move(
        id: Annotated[Name, Field(description="the memory's id")],
        to: Annotated[Name, Field(description="a new name, or a path in the memory folder (ops/deploy-days)")],
        ctx: Ctx | None = None,
    ) -> Answer:
        """Rename or move a memory within the memory folder; links to it in other memories are rewritten in the
        same commit, and the user's notes still linking to the old name are listed."""
        return _call(lambda: service.move(id, to), ctx)

    def recent(
        since: Annotated[Name | None, Field(description="from: an ISO date or date-time, or an age such as 24h, "
                                                       "7d, 2w")] = "7d",
        until: Annotated[Name | None, Field(description="before (a date: through that day)")] = None,
        ops: Annotated[list[Op] | None, Field(description="only these ops")]
        = None,
        limit: Annotated[int, Field(ge=1, le=500, description="at most this many commits (1-500)")] = 50,
    ) -> Answer:
        """What changed in the memories in a time window, from Git history, newest first: each commit's op, the
        memories it changed, a retirement's reason, a move's old id."""
        return _call(lambda: service.recent(since=since, until=until, ops=ops or (), limit=limit))

    def context(
        id: Annotated[Name, Field(description="a node id from search, or a note's path")],
        depth: Annotated[int, Field(ge=0, le=MAX_HOPS, description="neighbours within N edges (0-3)")] = 1,
        budget: Annotated[int, Field(ge=0, le=MAX_BUDGET, description="tokens of the whole answer's text (its "
                                                                       "UTF-8 bytes / 4); 0: none")] = 2000,
        include_content: Annotated[bool, Field(description="bodies (else snippets)")] = True,
    ) -> Answer:
        """One note and its typed neighbourhood: every node within depth edges (either direction) with every edge
        between them and its field, cut to the budget (neighbours' bodies first, then the farthest ones)."""
        return _call(lambda: service.context(id, depth=depth, budget=budget, include_content=include_content))

    def link(
        source: Annotated[Name, Field(description="the node the edge starts at")],
        field: Annotated[Name, Field(description="the edge's field, e.g. related")],
        target: Annotated[Name, Field(description="the node it points to")],
        ctx: Ctx | None = None,
    ) -> Answer:
        """Add a typed edge between two nodes (the target's id in the source's frontmatter field)."""
        return _call(lambda: service.link(source, field, target), ctx)

    def unlink(
        source: Annotated[Name, Field(description="the node the edge starts at")],
        field: Annotated[Name, Field(description="the edge's field")],
        target: Annotated[Name, Field(description="the node it points to")],
        ctx: Ctx | None = None,
    ) -> Answer:
        """Remove a typed edge between two nodes."""
        return _call(lambda: service.unlink(source, field, target), ctx)

    def dream(
        inspect: Annotated[Inspect | None, Field(description="list instead: status, runs or tasks")] = None,
        task_id: Annotated[Name | None, Field(description="the task to resolve (from inspect=tasks)")] = None,
        title: Annotated[str | None, Field(description="your compacted memory's title")] = None,
        content: Annotated[str | None, Field(description="your compacted memory's text")] = None,
        use_heuristic: Annotated[bool, Field(description="resolve with the extractive summary")] = False,
        force: Annotated[bool, Field(description="run even when a dream is not due")] = False,
        ctx: Ctx | None = None,
    ) -> Answer:
        """Compact memories. No arguments: a dream run (when due) that proposes compaction tasks (sources, a
        prepared digest, a prompt). task_id with title and content (or use_heuristic): resolve one as a super node
        memory that compacts its sources, which are archived; one commit. inspect: status, runs or tasks."""
        return _call(lambda: service.dream(inspect=inspect, task_id=task_id, title=title, content=content,
                                           use_heuristic=use_heuristic, force=force), ctx)

    def status() -> Answer:
        """Workspace, tree, node counts, memory and search state."""
        return _call(service.status)

    def onboard(
        answers: Annotated[dict[str, str] | None, Field(description="the user's own answers, KEY: VALUE with KEY "
                                                                    "one of name, role, language, style, goal; "
                                                                    "an empty value takes one back")] = None,
    ) -> Answer:
        """First start: the questions to ask the user (name, role, language, response style, goal for this
        workspace) and which are answered. With answers: writes them to the private USER.md profile (never
        committed, never indexed) and says which were written; the answers are never repeated back."""
        return _call(lambda: service.onboard(answers))

    for fn in (search, read, add, update, link, unlink, dream, status, onboard, edit, retire, forget, move, recent,
               context):
        if fn.__name__ not in TOOLS:
            raise RuntimeError(f"the MCP tool {fn.__name__!r} has no line in TOOLS (its title and hints)")
        if fn.__name__ in tools:
            notes = TOOLS[fn.__name__]
            server.add_tool(fn, name=fn.__name__, title=notes.title, description=cleandoc(fn.__doc__ or ""),
                            annotations=notes, structured_output=True)
            _strict(server, fn.__name__)

    @server.resource("vivary://node/{+id}", name="node", mime_type="application/json",
                     description="A public node: its packet, edges and body")
    def node(id: str) -> str:
        try:
            return service.node_resource(id)
        except VivaryError as err:
            raise ResourceError(" ".join([str(err), *err.detail])) from None

    if "memory-digest" in RESOURCES[service.profile]:
        @server.resource("vivary://memory/digest", name="memory-digest", mime_type="text/markdown",
                         description="MEMORY.md: the digest of pinned and durable memories, for this host only")
        def digest() -> str:
            return service.digest()

    return server


def serve_stdio(service: MemoryService) -> None:
    service.warm_up()
    import anyio

    anyio.run(_stdio, build_server(service))


async def _stdio(server: MCPServer[Any]) -> None:
    """`server.run("stdio")`, with each line the SDK could not read, or read as what it is not, mended or answered
    (`wire.py`) instead of dropped: a tool call whose text was cut in the middle of an emoji, a request without a
    method or with an object for its id, a batch got no answer, and the host waited."""
    from typing import cast

    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    from vivary_git.mcp import wire

    with wire.claimed_stdin() as stdin:
        lines = wire.Lines(stdin)
        async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

            async def forward() -> None:
                async with send:
                    async for item in read_stream:
                        served, answers = wire.screened(lines.next(), item)
                        for answer in answers:
                            await write_stream.send(answer)
                        if served is not None:
                            await send.send(served)

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(forward)
                lowlevel = server._lowlevel_server  # what `run_stdio_async` runs, given the screened stream
                await lowlevel.run(receive, write_stream, lowlevel.create_initialization_options())


# Names a request's Host header may carry whatever the bind: `localhost` and the loopback addresses are
# never an attacker's (a browser resolves them to this machine), unlike any name a DNS-rebinding page uses.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")


def url_host(address: str) -> str:
    """An address as a URL or a Host header writes it: an IPv6 address in brackets."""
    return f"[{address}]" if ":" in address and not address.startswith("[") else address


def allowed_hosts(bind: str, also: Sequence[str] = ()) -> list[str]:
    """The host names this server answers to (the Host header's name, any port): the address it listens
    on, `LOOPBACK_HOSTS`, and `also` (`--allow-host`: the names remote clients reach it by). An address
    literal is safe to allow: a rebinding page's Host is its own domain name."""
    return list(dict.fromkeys(url_host(n).lower() for n in (bind, *LOOPBACK_HOSTS, *also)))


def transport_security(names: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection, on for every bind (the SDK turns it on by itself only for the exact hosts
    127.0.0.1, localhost and ::1): a request whose Host is not one of `names` gets 421, one from a page whose
    Origin is not one of them 403. Any port: an SSH tunnel or a proxy may change it, never the name."""
    hosts = [h for n in names for h in (n, f"{n}:*")]
    origins = [f"{scheme}://{h}" for scheme in ("http", "https") for h in hosts]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def _unauthorized(why: bytes) -> tuple[dict[str, Any], dict[str, Any]]:
    # RFC 6750: `error="invalid_token"` says the token is the problem. A bare `Bearer` challenge is read by
    # MCP clients (the Inspector) as "this server wants OAuth", and they start a flow it does not serve.
    body = b'{"error": "invalid_token", "error_description": "' + why + b'"}'
    challenge = b'Bearer error="invalid_token", error_description="' + why + b'"'
    return ({"type": "http.response.start", "status": 401,
             "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                         (b"www-authenticate", challenge)]},
            {"type": "http.response.body", "body": body})


def _bearer(app: ASGIApp, token: str) -> ASGIApp:
    """`app` behind `Authorization: Bearer TOKEN`. The scheme is matched in any case (RFC 7235: `bearer`
    is `Bearer`); the token byte for byte, in constant time."""
    expected = token.encode()

    async def guarded(scope: Scope, receive: Callable[[], Awaitable[Any]],
                      send: Callable[[Any], Awaitable[None]]) -> None:
        if scope.get("type") == "http":
            given = [v for k, v in scope.get("headers") or [] if k.lower() == b"authorization"]
            scheme, _, credentials = (given[0] if len(given) == 1 else b"").strip().partition(b" ")
            if scheme.lower() != b"bearer" or not hmac.compare_digest(credentials.strip(), expected):
                why = b"no bearer token" if not given else b"wrong bearer token"
                for message in _unauthorized(why):
                    await send(message)
                return
        await app(scope, receive, send)

    return guarded


def _listen(host: str, port: int) -> list[socket.socket]:
    """Sockets bound to every address `host` names, on one port (`port`, or the one the first bind got
    for 0). A host that does not resolve or an address that cannot be bound is a usage error, said in
    one line, not uvicorn's traceback."""
    where = f"{url_host(host)}:{port}"
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (OSError, UnicodeError) as err:
        raise UsageError(f"--host {host}: cannot resolve it ({getattr(err, 'strerror', None) or err}); give an "
                         "address of this machine, e.g. 127.0.0.1 or [::1]") from None
    socks: list[socket.socket] = []
    failed: OSError | None = None
    for family, kind, proto, _name, address in dict.fromkeys(infos):
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((address[0], socks[0].getsockname()[1] if socks else port, *address[2:]))
        except OSError as err:  # e.g. localhost's ::1 where IPv6 is off: the other address serves
            sock.close()
            failed = failed or err
            continue
        socks.append(sock)
    if not socks:
        said = (failed.strerror if failed is not None else None) or "no address"
        raise UsageError(f"cannot listen on {where}: {said}; pick another --port (0: any free port) or --host")
    return socks


def serve_http(service: MemoryService, *, host: str, port: int, path: str, token_env: str | None,
               allow_hosts: Sequence[str] = (), ready: Callable[[int], None] | None = None) -> None:
    """Streamable HTTP with uvicorn, on `host` (an address without brackets, or a name). With `token_env`,
    every request needs `Authorization: Bearer $TOKEN_ENV`. Every request's Host header must name this
    server (`allowed_hosts`). Port 0 picks a free port; `ready(port)` is called once it listens."""
    import anyio
    import uvicorn

    from vivary_git.mcp import wire

    token = os.environ.get(token_env, "") if token_env else ""
    socks = _listen(host, port)
    bound = socks[0].getsockname()[1]
    server = build_server(service)
    security = transport_security(allowed_hosts(host, allow_hosts))
    # each request the SDK would read as a notification for its id (`1.5`, `true`) answered, not met with 202
    app: Any = wire.answering(server.streamable_http_app(streamable_http_path=path, host=host,
                                                         transport_security=security), path, security)
    if token:
        app = _bearer(app, token)
    try:
        service.warm_up()
    except BaseException:
        for sock in socks:
            sock.close()
        raise
    config = uvicorn.Config(app, host=host, port=bound, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: userver.serve(sockets=socks))
            while not userver.started:
                await anyio.sleep(0.02)
            print(f"vivary mcp: listening on http://{url_host(host)}:{bound}{path}", file=sys.stderr, flush=True)
            if ready is not None:
                ready(bound)

    anyio.run(main)
