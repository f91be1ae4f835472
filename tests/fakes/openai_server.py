"""A local OpenAI-compatible HTTP server for tests: the real ``openai`` client talks real HTTP to it.

Routes: ``POST …/embeddings`` (deterministic vectors of ``dimension`` values) and
``POST …/chat/completions`` (the message content is ``fake.chat_answer(request_body)``).

Behaviour is scripted per test:

- ``responses``: a queue of ``(status, body)`` or ``(status, body, headers)`` answered, in order,
  before the default answers — queue a 429 and the next request gets the default answer;
  :func:`chat_completion` builds the body of a chat answer with a given content;
- ``delays``: a queue of seconds to wait before answering the next requests (to provoke client
  timeouts); the answer is chosen when the request arrives, so a retry that comes in while an
  earlier request is still waiting gets the next answer in the queue.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ScriptedResponse = tuple[int, Any] | tuple[int, Any, dict[str, str]]


def fake_vector(text: str, dimension: int) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [(digest[i % len(digest)] - 128) / 128.0 for i in range(dimension)]


def chat_completion(content: str | None, model: str = "fake-chat", finish_reason: str = "stop") -> dict[str, Any]:
    """The body of a chat completion whose one choice says ``content``."""
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1_700_000_000, "model": model,
        "choices": [{"index": 0, "finish_reason": finish_reason,
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def api_error(message: str, kind: str = "invalid_request_error", code: str | None = None) -> dict[str, Any]:
    """An error body the way OpenAI sends it."""
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


@dataclass
class FakeOpenAI:
    dimension: int = 8
    responses: deque[ScriptedResponse] = field(default_factory=deque)
    delays: deque[float] = field(default_factory=deque)
    requests: list[dict[str, Any]] = field(default_factory=list)
    base_url: str = ""
    # The default chat answer: request body in, message content out.
    chat_answer: Callable[[dict[str, Any]], str] = field(default=lambda body: "{}")
    stopping: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat completion requests received so far."""
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def answer(self, path: str, body: dict[str, Any]) -> ScriptedResponse:
        with self._lock:  # handler threads run concurrently
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
        if path.endswith("/chat/completions"):
            return 200, chat_completion(self.chat_answer(body), model=body.get("model", "fake-chat"))
        return 404, api_error(f"no route {path}")

    def next_delay(self) -> float:
        with self._lock:
            return self.delays.popleft() if self.delays else 0.0


@contextmanager
def running_fake_openai(dimension: int = 8) -> Iterator[FakeOpenAI]:
    fake = FakeOpenAI(dimension=dimension)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            delay = fake.next_delay()
            status, payload, *rest = fake.answer(self.path, body)
            headers: dict[str, str] = rest[0] if rest else {}
            if delay and fake.stopping.wait(delay):
                return  # the test is over; nobody is listening any more
            data = payload.encode() if isinstance(payload, str) else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up waiting (a provoked timeout)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    # A short poll interval: shutdown() waits up to one interval, and every test shuts a server down.
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        fake.stopping.set()
        server.shutdown()
        server.server_close()
