"""The optional chat provider for dream tasks: an OpenAI-compatible `/chat/completions` endpoint.

Off by default: `[memory.dream] chat = "openai-compatible"` with `url`, `model`, and `allow_network =
true` (network is opt-in, as for every provider; a loopback server such as a local model counts too).
The key, when one is needed, comes from the environment variable `api_key_env` names; it is never
read from a file or printed. Only the task's sources (public memories) are sent.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Sequence
from typing import TYPE_CHECKING

from vivary_git.errors import RefusedError, UsageError

if TYPE_CHECKING:
    from vivary_git.memory.config import MemoryConfig

__all__ = ["summarise"]

MAX_ANSWER = 1 << 20
_SYSTEM = ("You compact an agent's memories. Answer with JSON only: {\"title\": \"...\", \"content\": \"...\"}: one "
           "short title and one memory in plain sentences that keeps every fact, decision and reason that is still "
           "true, without repetition.")


APPROVE_KEY = "vivary.dreamChat"


def summarise(cfg: MemoryConfig, prompt: str, sources: Sequence[tuple[str, str]],
              approved: Sequence[str] = ()) -> tuple[str, str]:
    """One compacted memory (title, content) for a dream task's `prompt` and its `sources` (title, text).
    `approved`: the endpoints the user's own Git config names (`vivary.dreamChat`): the committed file's `url`
    and `api_key_env` are a stranger's choice in a clone, so the memories and the key go only where the user
    said."""
    d = cfg.memory.dream
    if d.chat == "none":
        raise UsageError("no chat provider is configured: set [memory.dream] chat = \"openai-compatible\", url, "
                         "model and allow_network = true in .vivary/memory.toml, or resolve with --title/--content "
                         "or --use-heuristic")
    if not d.allow_network:
        raise RefusedError("[memory.dream] allow_network is false: the chat provider would send memories over the "
                           "network; set allow_network = true to allow it, or use --use-heuristic")
    if d.url.rstrip("/") not in {a.strip().rstrip("/") for a in approved}:
        key = f" and the value of ${d.api_key_env} as its key" if d.api_key_env else ""
        raise RefusedError(f"the chat endpoint {d.url} is named by .vivary/memory.toml, a committed file; it would "
                           f"be sent the task's memories{key}. Approve it in your own Git config: "
                           f"`git config {APPROVE_KEY} {d.url}`; nothing was sent")
    headers = {"Content-Type": "application/json"}
    if d.api_key_env:
        key = os.environ.get(d.api_key_env, "")
        if not key:
            raise UsageError(f"${d.api_key_env} is not set (named by [memory.dream] api_key_env)")
        headers["Authorization"] = f"Bearer {key}"
    memories = "\n\n".join(f"## {title}\n{text}" for title, text in sources)
    body = {"model": d.model, "temperature": 0,
            "messages": [{"role": "system", "content": _SYSTEM},
                         {"role": "user", "content": f"{prompt}\n\nMemories:\n\n{memories}"}]}
    req = urllib.request.Request(d.url.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
                                 headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=d.timeout) as resp:  # http(s) only: checked in config
            raw = resp.read(MAX_ANSWER + 1)
    except (urllib.error.URLError, OSError, TimeoutError) as err:
        raise RefusedError(f"the chat provider at {d.url} did not answer ({err}); nothing was written") from None
    try:
        text = json.loads(raw[:MAX_ANSWER])["choices"][0]["message"]["content"]
        start, end = text.find("{"), text.rfind("}")
        got = json.loads(text[start:end + 1])
        title, content = got["title"], got["content"]
        if not isinstance(title, str) or not isinstance(content, str):
            raise TypeError
    except (ValueError, KeyError, IndexError, TypeError):
        raise RefusedError(f"the chat provider at {d.url} answered something that is not a title and content; "
                           "nothing was written") from None
    return title, content
