"""An OpenAI-compatible upstream whose replies a test computes from each request.

For GUI harnesses the dev engine cannot drive (the right action depends on the page or
the screen, and some harnesses send no assistant turns to count): the test's ``reply``
function returns the assistant's text, and the server answers the way vLLM does, with
``token_ids``, ``logprobs`` and ``prompt_token_ids`` (the proxy records nothing else as a
trainable call), from a byte-level "tokenizer". It keeps every request body it got.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar


class ScriptedUpstream(ThreadingHTTPServer):
    def __init__(self, reply: Callable[[dict[str, Any]], str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.reply = reply
        self.bodies: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_port}"


class _Handler(BaseHTTPRequestHandler):
    server: ScriptedUpstream

    def do_GET(self) -> None:
        self._json({"object": "list", "data": [{"id": "scripted-model", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.bodies.append(body)
        content = self.server.reply(body)
        tokens = list(content.encode())
        prompt = list(json.dumps(body["messages"]).encode()[:4096])
        choice = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "token_ids": tokens,
            "logprobs": {"content": [{"token": chr(t), "logprob": 0.0} for t in tokens]},
        }
        usage = {"prompt_tokens": len(prompt), "completion_tokens": len(tokens), "total_tokens": len(prompt + tokens)}
        self._json({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [choice], "usage": usage, "prompt_token_ids": prompt})  # fmt: skip

    def _json(self, data: dict[str, Any]) -> None:
        raw = json.dumps(data).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass


_Server = TypeVar("_Server", bound=ThreadingHTTPServer)


@contextmanager
def serving(server: _Server) -> Iterator[_Server]:
    """``server`` answering on a thread of its own until the block ends."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def scripted_upstream(reply: Callable[[dict[str, Any]], str]) -> AbstractContextManager[ScriptedUpstream]:
    return serving(ScriptedUpstream(reply))
