"""A local OpenAI-compatible HTTP server for tests: the real ``openai`` client talks real HTTP to it.

Behaviour is scripted per test through ``responses``: a queue of (status, body) to answer with
before falling back to the default answer (deterministic embeddings of ``dimension`` values).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def fake_vector(text: str, dimension: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 128) / 128.0 for i in range(dimension)]


@dataclass
class FakeOpenAI:
    dimension: int = 8
    responses: deque[tuple[int, Any]] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        self.requests.append({"path": path, "body": body})
        if self.responses:
            return self.responses.popleft()
        if path.endswith("/embeddings"):
            inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
            return 200, {
                "object": "list", "model": body.get("model", "fake"),
                "data": [{"object": "embedding", "index": i, "embedding": fake_vector(t, self.dimension)}
                         for i, t in enumerate(inputs)],
                "usage": {"prompt_tokens": 1, "total_tokens": 1},
            }
        return 404, {"error": {"message": f"no route {path}", "type": "invalid_request_error"}}


@contextmanager
def running_fake_openai(dimension: int = 8) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(dimension=dimension)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            status, payload = fake.answer(self.path, body)
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
