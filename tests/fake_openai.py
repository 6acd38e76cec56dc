"""A small OpenAI-compatible chat.completions server on 127.0.0.1, scripted per test.

    def test_something(fake_openai):
        fake_openai.reply("hello")                             # a text answer
        fake_openai.tool_calls(("sessions_list", {"limit": 5}))  # then a tool call round
        fake_openai.error(500, "boom")                         # an HTTP error
        backend = {"type": "openai", "baseUrl": fake_openai.base_url, "model": "fake-model"}
        ...
        assert fake_openai.requests[0].body["messages"][-1]["role"] == "user"

Each POST to `.../chat/completions` takes the next queued response (an empty queue is a 500 that
says so). Requests are recorded with their path, headers (lower-case names) and JSON body. Like
the real API, a request whose tool messages do not answer the assistant tool_calls just before
them is a 400, so conversion bugs show up as they would in production.
"""

from __future__ import annotations

import collections
import json
import threading
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

DEFAULT_USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Scripted:
    status: int = 200
    body: Any = None
    delay: float = 0.0


@dataclass
class FakeOpenAI:
    model: str = "fake-model"
    requests: list[Recorded] = field(default_factory=list)
    # What GET /v1/models lists (OpenAI's {"object": "list", "data": [{"id", ...}]}).
    models: list[str] = field(default_factory=lambda: ["fake-model"])
    # How many answers were sent: a turn stopped during a delayed answer leaves it at 0.
    answered: int = 0

    def __post_init__(self):
        self._queue: collections.deque[Scripted] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None

    # --- scripting ----------------------------------------------------------------------------

    def respond(self, body: Any, *, status: int = 200, delay: float = 0.0) -> None:
        """Queue a raw response body (a dict is sent as JSON, bytes/str as they are)."""
        with self._lock:
            self._queue.append(Scripted(status=status, body=body, delay=delay))

    def reply(
        self,
        text: str | None,
        *,
        finish_reason: str = "stop",
        usage: dict | None = None,
        model: str | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue an assistant text answer."""
        message = {"role": "assistant", "content": text}
        self.respond(self.completion(message, finish_reason, usage, model), delay=delay)

    def tool_calls(
        self,
        *calls: tuple[str, Any] | dict,
        text: str | None = None,
        usage: dict | None = None,
        delay: float = 0.0,
    ) -> list[str]:
        """Queue an answer with tool calls: (name, arguments) pairs (a dict of arguments is
        JSON-encoded, a string is sent as it is) or ready-made tool_call dicts. Returns the ids."""
        tool_calls = []
        for call in calls:
            if isinstance(call, dict):
                tool_calls.append(call)
                continue
            name, arguments = call
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments)
            tool_calls.append(
                {
                    "id": f"call_{uuid.uuid4().hex[:12]}",
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }
            )
        message = {"role": "assistant", "content": text, "tool_calls": tool_calls}
        self.respond(self.completion(message, "tool_calls", usage, None), delay=delay)
        return [c["id"] for c in tool_calls]

    def error(self, status: int, message: str = "fake error", *, delay: float = 0.0) -> None:
        """Queue an HTTP error with OpenAI's error body."""
        body = {"error": {"message": message, "type": "fake_error", "code": None}}
        self.respond(body, status=status, delay=delay)

    def completion(self, message: dict, finish_reason: str, usage, model) -> dict:
        return {
            "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
            "object": "chat.completion",
            "created": 0,
            "model": model or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
            "usage": DEFAULT_USAGE if usage is None else usage,
        }

    @property
    def pending(self) -> int:
        """Queued responses not yet taken."""
        with self._lock:
            return len(self._queue)

    # --- serving ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "fake server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeOpenAI:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append(Recorded(path=self.path, headers=headers, body=None))
                if self.path.rstrip("/") != "/v1/models":
                    return self.send(404, {"error": {"message": f"no route {self.path}"}})
                data = [{"id": m, "object": "model", "owned_by": "fake"} for m in fake.models]
                return self.send(200, {"object": "list", "data": data})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append(Recorded(path=self.path, headers=headers, body=body))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self.send(404, {"error": {"message": f"no route {self.path}"}})
                problem = check_request(body)
                if problem:
                    return self.send(400, {"error": {"message": problem, "type": "invalid"}})
                with fake._lock:
                    scripted = fake._queue.popleft() if fake._queue else None
                if scripted is None:
                    return self.send(500, {"error": {"message": "fake_openai: nothing queued"}})
                if scripted.delay and fake._stopping.wait(scripted.delay):
                    self.close_connection = True
                    return None  # the test is over: hang up without an answer
                return self.send(scripted.status, scripted.body)

            def send(self, status: int, body: Any) -> None:
                if isinstance(body, dict | list):
                    data = json.dumps(body).encode()
                elif isinstance(body, str):
                    data = body.encode()
                else:
                    data = body or b""
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    fake.answered += 1
                except OSError:
                    self.close_connection = True  # the client gave up (timeout, abort)

            def log_message(self, format, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False  # a handler still in its delay must not hold up teardown

            def handle_error(self, request, client_address):
                pass  # a client that hung up early is expected in abort/timeout tests

        self._server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},  # shutdown() waits up to one poll
            name="fake-openai",
            daemon=True,
        ).start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()


def check_request(body: Any) -> str:
    """What the real API would refuse with a 400, for the shapes our backend produces."""
    if not isinstance(body, dict) or not isinstance(body.get("model"), str):
        return "model is required"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty array"
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "user", "assistant", "tool"):
            return f"messages[{i}].role is invalid"
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                return f"messages[{i}]: tool message does not answer a preceding tool_calls"
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            return f"messages[{i}]: tool_calls {sorted(pending)} have no tool message"
        if role == "assistant":
            pending = {c["id"] for c in message.get("tool_calls") or []}
    if pending:
        return f"tool_calls {sorted(pending)} have no tool message"
    if "tool_choice" in body and not body.get("tools"):
        return "tool_choice is only allowed when tools are specified"
    return ""


@pytest.fixture
def fake_openai():
    server = FakeOpenAI().start()
    yield server
    server.stop()
