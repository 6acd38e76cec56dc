"""A client that stops reading: its outbox stays bounded, it stops being fed, and it is cut off
with a reason naming the seq to resume from. Driven at the ASGI level with a socket whose
writes block, which is what a full TCP send buffer looks like to the app under uvicorn."""

from __future__ import annotations

import asyncio
import json

import pytest

from sessions_app.live.consumer import websocket_app
from sessions_app.live.hub import Hub
from tests.conftest import add_messages, make_session, user

from .conftest import db

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


class StuckSocket:
    """ASGI receive/send for one WebSocket whose writes block once `stuck` is set."""

    def __init__(self, token):
        self.token = token
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.sent: list[dict] = []
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.scope = {
            "type": "websocket",
            "path": "/ws/",
            "headers": [(b"authorization", f"Bearer {token}".encode())],
        }

    async def receive(self):
        return await self.inbox.get()

    async def send(self, message):
        await self.flowing.wait()
        self.sent.append(message)


async def subscribed(token) -> tuple[StuckSocket, asyncio.Task]:
    """The app serving one socket that has subscribed to agent:main:main."""
    sock = StuckSocket(token)
    await sock.inbox.put({"type": "websocket.connect"})
    app = asyncio.create_task(websocket_app(sock.scope, sock.receive, sock.send))
    frame = {"type": "req", "id": "1", "method": "sessions.messages.subscribe"}
    frame["params"] = {"key": "agent:main:main"}
    await sock.inbox.put({"type": "websocket.receive", "text": json.dumps(frame)})
    while len(sock.sent) < 2:  # accept, then the subscribe response
        await asyncio.sleep(0.01)
    return sock, app


async def test_a_stalled_reader_is_bounded_then_cut_off_with_a_resume_point(settings, operator):
    settings.LIVE_OUTBOX_FRAMES = 5
    settings.LIVE_STALL_SECONDS = 0.3
    session = await db(make_session)("agent:main:main")
    sock, app = await subscribed(operator.token)

    sock.flowing.clear()  # the client stops reading
    await db(add_messages)(session, *[user(f"m{i}") for i in range(1, 41)])
    await asyncio.sleep(0.2)
    (subscriber,) = Hub.current().subscribers
    assert subscriber.outbox.qsize() <= 5  # bounded, whatever was appended
    await asyncio.sleep(0.6)
    assert subscriber.closing is not None  # stalled longer than STALL_SECONDS

    sock.flowing.set()  # the socket drains: what is written next is the close
    for _ in range(100):
        if any(m["type"] == "websocket.close" for m in sock.sent):
            break
        await asyncio.sleep(0.02)
    events = [json.loads(m["text"]) for m in sock.sent if m["type"] == "websocket.send"]
    seqs = [e["payload"]["messageSeq"] for e in events if e.get("type") == "event"]
    close = sock.sent[-1]
    assert close["type"] == "websocket.close" and close["code"] == 4008
    # It received a prefix with no gap, and the reason says where to resume.
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) < 40
    assert close["reason"] == f"slow consumer; resume from seq {seqs[-1] if seqs else 0}"
    await sock.inbox.put({"type": "websocket.disconnect", "code": 4008})
    await asyncio.wait_for(app, 5)


async def test_a_reader_that_catches_up_is_fed_again(settings, operator):
    settings.LIVE_OUTBOX_FRAMES = 5
    settings.LIVE_STALL_SECONDS = 30
    session = await db(make_session)("agent:main:main")
    sock, app = await subscribed(operator.token)
    sock.flowing.clear()
    await db(add_messages)(session, *[user(f"m{i}") for i in range(1, 41)])
    await asyncio.sleep(0.3)
    sock.flowing.set()
    for _ in range(200):
        events = [m for m in sock.sent if m["type"] == "websocket.send"][1:]
        if len(events) == 40:
            break
        await asyncio.sleep(0.02)
    seqs = [json.loads(m["text"])["payload"]["messageSeq"] for m in events]
    assert seqs == list(range(1, 41))  # nothing lost, nothing twice, in order
    await sock.inbox.put({"type": "websocket.disconnect", "code": 1000})
    await asyncio.wait_for(app, 5)
    assert not any(m["type"] == "websocket.close" for m in sock.sent)  # it was never cut off
