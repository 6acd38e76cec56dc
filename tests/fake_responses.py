"""A small OpenAI Responses API server (`POST /v1/responses`, streamed) on 127.0.0.1, scripted
per test, for harnesses that speak only that API (Codex: `wire_api = "responses"`).

    fake = FakeResponses().start()
    fake.reply("Looking at the file.", chunks=3)              # text deltas, then the message
    fake.function_call("shell", {"command": ["cat", "a.txt"]})  # a function call
    fake.function_call("sessions_list", {}, namespace="mcp__openclaw")  # an MCP server's tool
    fake.reply("Done.")                                      # the final message
    ... base_url = fake.base_url  (http://127.0.0.1:<port>/v1)
    assert fake.requests[1].body["input"][-1]["type"] == "function_call_output"

Each POST to `.../responses` takes the next queued answer and streams it as server-sent events
the way the API does (`response.created`, `response.output_item.added`, `…output_text.delta` per
chunk, `…output_item.done`, `response.completed` with usage). An empty queue is a 500 that says
so, so a harness asking more than the test scripted shows up as an error, not a hang. Any other
path is a 404, recorded like every request (a harness reaching for something unexpected is
visible in `requests`).
"""

from __future__ import annotations

import collections
import json
import threading
import traceback
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {
    "input_tokens": 10,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 5,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 15,
}


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


def chunks_of(text: str, count: int) -> list[str]:
    """`text` in about `count` pieces, cut at spaces where possible."""
    if count <= 1 or len(text) < 2:
        return [text]
    size = max(1, -(-len(text) // count))
    pieces, start = [], 0
    while start < len(text):
        end = min(len(text), start + size)
        space = text.rfind(" ", start + 1, end)
        if end < len(text) and space > start:
            end = space + 1
        pieces.append(text[start:end])
        start = end
    return pieces


@dataclass
class FakeResponses:
    model: str = "fake-codex"
    requests: list[Recorded] = field(default_factory=list)

    def __post_init__(self):
        self._queue: collections.deque[list[tuple[str, dict]]] = collections.deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- scripting ----------------------------------------------------------------------------

    def reply(self, text: str, *, chunks: int = 1) -> None:
        """Queue an answer that streams `text` in `chunks` deltas, then ends the response."""
        self._queue_items(self._message(text, chunks))

    def function_call(
        self, name: str, arguments: Any, *, text: str = "", namespace: str = ""
    ) -> str:
        """Queue an answer that calls `name` (arguments: a dict is JSON-encoded, a str is sent as
        it is), after streaming `text` when given. `namespace`: the tool namespace the function
        is in (Codex offers an MCP server's tools as the namespace `mcp__<server>`). Returns the
        call_id."""
        call_id = f"call_{uuid.uuid4().hex[:12]}"
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        item = {
            "type": "function_call",
            "id": f"fc_{uuid.uuid4().hex[:12]}",
            "call_id": call_id,
            "name": name,
            **({"namespace": namespace} if namespace else {}),
            "arguments": arguments,
            "status": "completed",
        }
        events: list[tuple[str, dict]] = []
        if text:
            events += self._message(text, 1)
        events += [
            ("response.output_item.added", {"item": {**item, "arguments": ""}}),
            ("response.function_call_arguments.delta", {"item_id": item["id"], "delta": arguments}),
            (
                "response.function_call_arguments.done",
                {"item_id": item["id"], "arguments": arguments},
            ),
            ("response.output_item.done", {"item": item}),
        ]
        self._queue_items(events)
        return call_id

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def posts(self) -> list[Recorded]:
        """The requests for answers (POST …/responses)."""
        return [r for r in self.requests if r.method == "POST" and r.path.endswith("/responses")]

    def _message(self, text: str, chunks: int) -> list[tuple[str, dict]]:
        item_id = f"msg_{uuid.uuid4().hex[:12]}"
        empty = {"type": "message", "id": item_id, "role": "assistant", "status": "in_progress"}
        part = {"type": "output_text", "text": "", "annotations": []}
        events: list[tuple[str, dict]] = [
            ("response.output_item.added", {"item": {**empty, "content": []}}),
            ("response.content_part.added", {"item_id": item_id, "content_index": 0, "part": part}),
        ]
        for piece in chunks_of(text, chunks):
            events.append(
                (
                    "response.output_text.delta",
                    {"item_id": item_id, "content_index": 0, "delta": piece},
                )
            )
        done_part = {**part, "text": text}
        events += [
            ("response.output_text.done", {"item_id": item_id, "content_index": 0, "text": text}),
            (
                "response.content_part.done",
                {"item_id": item_id, "content_index": 0, "part": done_part},
            ),
            (
                "response.output_item.done",
                {"item": {**empty, "status": "completed", "content": [done_part]}},
            ),
        ]
        return events

    def _queue_items(self, events: list[tuple[str, dict]]) -> None:
        with self._lock:
            self._queue.append(events)

    def _stream(self, events: list[tuple[str, dict]]) -> list[bytes]:
        """The SSE frames of one response: created, the scripted events (numbered, with their
        output_index), completed."""
        response_id = f"resp_{uuid.uuid4().hex[:12]}"
        base = {"id": response_id, "object": "response", "model": self.model, "created_at": 0}
        frames = [("response.created", {"response": {**base, "status": "in_progress"}})]
        output: list[dict] = []
        index = -1
        for kind, data in events:
            if kind == "response.output_item.added":
                index += 1
            if kind == "response.output_item.done":
                output.append(data["item"])
            frames.append((kind, {**data, "output_index": max(index, 0)}))
        done = {**base, "status": "completed", "output": output, "usage": USAGE}
        frames.append(("response.completed", {"response": done}))
        return [
            f"event: {kind}\ndata: {json.dumps({'type': kind, 'sequence_number': n, **data})}\n\n".encode()
            for n, (kind, data) in enumerate(frames)
        ]

    # --- serving ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None, "fake server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> FakeResponses:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def record(self, body: Any) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                fake.requests.append(Recorded(self.command, self.path, headers, body))

            def do_GET(self):
                self.record(None)
                self.send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                self.record(body)
                if not self.path.rstrip("/").endswith("/responses"):
                    return self.send_json(404, {"error": {"message": f"no route {self.path}"}})
                with fake._lock:
                    scripted = fake._queue.popleft() if fake._queue else None
                if scripted is None:
                    message = "fake_responses: nothing queued"
                    return self.send_json(500, {"error": {"message": message}})
                frames = fake._stream(scripted)
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Cache-Control", "no-cache")
                    self.send_header("Content-Length", str(sum(len(f) for f in frames)))
                    self.end_headers()
                    for frame in frames:
                        self.wfile.write(frame)
                        self.wfile.flush()
                except OSError:
                    self.close_connection = True

            def send_json(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    self.close_connection = True

            def log_message(self, format, *args):
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            block_on_close = False

            def handle_error(self, request, client_address):
                traceback.print_exc()  # a bug in the fake, seen in the test's captured stderr

        self._server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.02},
            name="fake-responses",
            daemon=True,
        ).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
