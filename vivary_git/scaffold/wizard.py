"""The interactive part of `git vivary init`: two plain-English questions, nothing else.

Asked only when stdin is a terminal, `--no-wizard`/`--auto` are absent and neither `--memory` nor
`--storage` was given (flags always win, so an agent never meets a prompt). Prompts go to stderr so
`--json` output on stdout stays a clean document. A blank answer or end of input takes the default,
which is always the smallest setup for the first question; Cognee is only ever chosen by an answer.
"""

from __future__ import annotations

from typing import TextIO

from vivary_git.scaffold.presets import Memory, Storage

CAPABILITIES_QUESTION = "Which optional capabilities should this workspace offer?"
CAPABILITIES_OPTIONS = (
    ("Typed graph only", "Smallest setup. Use git vivary graph, git vivary query, and files."),
    ("Local database/search", "Keep derived graph and search data cached in Git for larger graphs. "
     "No account or server."),
    ("Local semantic memory", "Add semantic recall policy and local provider hooks. No Cognee, no network."),
    ("Cognee semantic memory", "Add Cognee provider policy and verification docs. Install and indexing remain "
     "explicit gates."),
)
RECALL_QUESTION = "Do you want extra recall beyond the typed graph?"
RECALL_OPTIONS = (
    ("No semantic memory", "Smallest setup. Use the typed graph and text search only."),
    ("Local Vivary search only", "Keep everything local. No embeddings, account, server, or Cognee."),
    ("Optional semantic memory provider", "Add provider policy files, but do not install or index yet."),
    ("Cognee provider", "Add Cognee provider policy and verification docs. Install and indexing remain "
     "explicit later gates."),
)
_RECALL_MEMORY: dict[int, Memory] = {1: "none", 2: "none", 3: "local", 4: "cognee"}
_TRIES = 3


def _ask(question: str, options: tuple[tuple[str, str], ...], default: int, stdin: TextIO, out: TextIO) -> int:
    """The 1-based option chosen. Re-asks on an answer that is not an option number."""
    out.write(f"\n{question}\n\n")
    for n, (label, explain) in enumerate(options, 1):
        out.write(f"{n}) {label}\n   {explain}\n\n")
    for _ in range(_TRIES):
        out.write(f"Your choice [{default}]: ")
        out.flush()
        line = stdin.readline()
        if not line:  # end of input: nobody is there to answer
            out.write("\n")
            return default
        answer = line.strip()
        if not answer:
            return default
        if answer.isdecimal() and 1 <= int(answer) <= len(options):
            return int(answer)
        out.write(f"Please answer with a number from 1 to {len(options)}.\n")
    out.write(f"Using {default}) {options[default - 1][0]}.\n")
    return default


def ask(stdin: TextIO, out: TextIO) -> tuple[Storage, Memory]:
    """Ask the two questions; returns the storage and memory choices."""
    first = _ask(CAPABILITIES_QUESTION, CAPABILITIES_OPTIONS, 1, stdin, out)
    if first == 1:
        return "file", "none"
    if first == 2:
        return "git-cache", "none"
    # A semantic option: confirm it with the approval-oriented question. Enter keeps the first answer.
    second = _ask(RECALL_QUESTION, RECALL_OPTIONS, 3 if first == 3 else 4, stdin, out)
    return "file", _RECALL_MEMORY[second]
