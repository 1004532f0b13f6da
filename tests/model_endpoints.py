"""Model endpoints on loopback for the Cognee tests and bench: what a model server would be, answering
deterministically, so the real Cognee library runs without the internet.

* `POST /v1/embeddings`: OpenAI-compatible, vectors from this project's packaged embedder
  (memory/local/embed.py, all-MiniLM-L6-v2 int8; 384 dimensions). Honours `encoding_format = "base64"`.
* `POST /v1/chat/completions`: OpenAI-compatible. Cognee asks for structured output by putting a JSON
  schema in the prompt (or in `response_format`); the answer is the smallest instance of that schema, with
  strings taken from the last paragraph of the user's text. Cognee's connection check ("respond with the
  string X") gets X. Nothing is generated: the same request always gets the same answer.
* `trap`: a second loopback listener meant to be every proxy variable's target, so a client in any process
  (Python or not) that tries to reach another host through a proxy is seen there and refused.

Every request is recorded (`requests`: path and body) so tests can check what was sent.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DIMENSIONS = 384
MODEL = "vivary-minilm-l6-int8"


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    fmt = body.get("response_format") or {}
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        schema = fmt.get("json_schema", {}).get("schema")
        return schema if isinstance(schema, dict) else None
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str) and "```json" in content:
            start = content.index("```json") + len("```json")
            end = content.find("```", start)
            try:
                found = json.loads(content[start:end])
            except ValueError:
                continue
            if isinstance(found, dict):
                return found
    return None


def _user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages", [])):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def _instance(schema: dict[str, Any], defs: dict[str, Any], text: str) -> Any:
    if "$ref" in schema:
        return _instance(defs[schema["$ref"].rsplit("/", 1)[-1]], defs, text)
    if "anyOf" in schema:
        return _instance(schema["anyOf"][0], defs, text)
    if "default" in schema:
        return schema["default"]
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        required = schema.get("required", [])
        return {k: _instance(v, defs, text) for k, v in schema.get("properties", {}).items() if k in required}
    if kind == "array":
        return []
    if kind == "string":
        return text.strip().split("\n\n")[-1][:200]
    if kind in ("integer", "number"):
        return 0
    if kind == "boolean":
        return False
    return None


def chat_answer(body: dict[str, Any]) -> str:
    schema = _schema(body)
    if schema is None:
        first = body.get("messages", [{}])[0].get("content", "")
        said = re.search(r'Respond to me with the following string: "([^"]*)"', str(first))
        return said.group(1) if said else _user_text(body)[:200]
    return json.dumps(_instance(schema, schema.get("$defs", {}), _user_text(body)))


class _Server(ThreadingHTTPServer):
    # Clients keep connections alive: never wait for their handler threads when shutting down.
    daemon_threads = True
    block_on_close = False


@dataclass
class Endpoints:
    url: str  # http://127.0.0.1:PORT/v1
    trap: str  # http://127.0.0.1:PORT, for HTTP(S)_PROXY
    requests: list[tuple[str, Any]] = field(default_factory=list)
    trapped: list[str] = field(default_factory=list)

    def paths(self) -> list[str]:
        return [p for p, _ in self.requests]

    def env(self) -> dict[str, str]:
        """Cognee's model settings for these endpoints, and every proxy variable aimed at the trap."""
        return {
            "LLM_PROVIDER": "openai", "LLM_MODEL": "openai/vivary-deterministic", "LLM_ENDPOINT": self.url,
            "EMBEDDING_PROVIDER": "openai_compatible", "EMBEDDING_MODEL": MODEL, "EMBEDDING_ENDPOINT": self.url,
            "EMBEDDING_DIMENSIONS": str(DIMENSIONS),
            # A model id is not a Hugging Face repo: count tokens without asking the Hub.
            "HF_HUB_OFFLINE": "1",
            **{k: self.trap for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                                      "all_proxy")},
            "NO_PROXY": "127.0.0.1,localhost,::1", "no_proxy": "127.0.0.1,localhost,::1",
        }


@contextmanager
def serve() -> Iterator[Endpoints]:
    from vivary_git.memory.local.embed import load_embedder

    embedder = load_embedder()
    lock = threading.Lock()
    box: list[Endpoints] = []

    class Model(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, code: int, payload: Any) -> None:
            raw = json.dumps(payload).encode()
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            self.end_headers()
            self.wfile.write(raw)

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
            box[0].requests.append((self.path, body))
            if self.path.endswith("/embeddings"):
                texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
                with lock:  # one onnxruntime session, many handler threads
                    vectors = embedder.embed([str(t) for t in texts])
                data = []
                for i, v in enumerate(vectors):
                    emb: Any = (base64.b64encode(v.astype("<f4").tobytes()).decode()
                                if body.get("encoding_format") == "base64" else [float(x) for x in v])
                    data.append({"object": "embedding", "index": i, "embedding": emb})
                self._send(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": 0, "total_tokens": 0}})
            elif self.path.endswith("/chat/completions"):
                self._send(200, {
                    "id": "vivary-test", "object": "chat.completion", "created": 0, "model": body.get("model"),
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": chat_answer(body)}}],
                    "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
                })
            else:
                self._send(404, {"error": {"message": f"no such endpoint {self.path}"}})

        def do_GET(self) -> None:
            box[0].requests.append((self.path, None))
            self._send(404, {"error": {"message": f"no such endpoint {self.path}"}})

    class Trap(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _refuse(self) -> None:
            box[0].trapped.append(f"{self.command} {self.path}")
            self.send_response(403)
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = do_POST = do_CONNECT = do_PUT = do_HEAD = _refuse

    model = _Server(("127.0.0.1", 0), Model)
    trap = _Server(("127.0.0.1", 0), Trap)
    box.append(Endpoints(url=f"http://127.0.0.1:{model.server_address[1]}/v1",
                         trap=f"http://127.0.0.1:{trap.server_address[1]}"))
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in (model, trap)]
    for t in threads:
        t.start()
    try:
        yield box[0]
    finally:
        for s in (model, trap):
            s.shutdown()
            s.server_close()
