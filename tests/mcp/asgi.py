"""MCP over streamable HTTP through the project's ASGI application in the test's own process, so
a test can change a setting (a limit) and see /mcp/ follow it. The SDK's client cannot send what
these tests need (an oversized or chunked body, raw arguments), so this speaks the wire itself.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from openclaw_site.asgi import application

HANDSHAKE_VERSION = "2025-06-18"
ACCEPT = "application/json, text/event-stream"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    messages: list[dict] = field(default_factory=list)  # the JSON-RPC messages in the body

    def json(self) -> Any:
        return json.loads(self.body)


async def post(
    path: str,
    body: bytes | dict,
    headers: dict[str, str],
    *,
    chunk: int | None = None,
    declare_length: bool = True,
) -> Answer:
    """One POST through the ASGI app. `chunk`: send the body in pieces of that many bytes;
    `declare_length=False`: no Content-Length (a chunked upload)."""
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent_headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
    sent_headers.append((b"host", b"testserver"))
    if declare_length:
        sent_headers.append((b"content-length", str(len(raw)).encode()))
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "server": ("testserver", 80),
        "client": ("127.0.0.1", 1234),
        "headers": sent_headers,
    }
    size = chunk or max(1, len(raw))
    pieces = [raw[i : i + size] for i in range(0, len(raw), size)] or [b""]
    incoming = [
        {"type": "http.request", "body": piece, "more_body": i < len(pieces) - 1}
        for i, piece in enumerate(pieces)
    ]
    done = asyncio.Event()
    start: dict = {}
    chunks: list[bytes] = []

    async def receive():
        if incoming:
            return incoming.pop(0)
        await done.wait()  # the client stays until the answer is complete
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                done.set()

    task = asyncio.ensure_future(application(scope, receive, send))
    await asyncio.wait_for(done.wait(), 20)
    await asyncio.wait_for(task, 5)
    raw_answer = b"".join(chunks)
    return Answer(
        status=start["status"],
        headers={k.decode().lower(): v.decode() for k, v in start["headers"]},
        body=raw_answer,
        messages=_messages(raw_answer),
    )


def _messages(body: bytes) -> list[dict]:
    """The JSON-RPC messages of an SSE or JSON answer (none for an error envelope)."""
    text = body.decode("utf-8", "replace")
    found = [
        json.loads(line[len("data:") :])
        for line in text.splitlines()
        if line.startswith("data:") and line[len("data:") :].strip()
    ]
    if found:
        return found
    try:
        decoded = json.loads(text)
    except ValueError:
        return []
    return [decoded] if isinstance(decoded, dict) and "jsonrpc" in decoded else []


class Session:
    """One handshake-era MCP session of `token` (initialize, then initialized)."""

    def __init__(self, token: str):
        self.headers = {
            "authorization": f"Bearer {token}",
            "content-type": "application/json",
            "accept": ACCEPT,
        }
        self.next_id = 1

    async def initialize(self) -> Answer:
        answer = await self.send(
            "initialize",
            {
                "protocolVersion": HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "tests", "version": "1"},
            },
        )
        if answer.status == 200:
            self.headers["mcp-session-id"] = answer.headers["mcp-session-id"]
            self.headers["mcp-protocol-version"] = HANDSHAKE_VERSION
            await self.notify("notifications/initialized")
        return answer

    async def send(self, method: str, params: dict, **options) -> Answer:
        self.next_id += 1
        body = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return await post("/mcp/", body, self.headers, **options)

    async def notify(self, method: str) -> Answer:
        return await post("/mcp/", {"jsonrpc": "2.0", "method": method}, self.headers)

    async def call_tool(self, name: str, arguments: Any, **options) -> Answer:
        return await self.send("tools/call", {"name": name, "arguments": arguments}, **options)
