"""History follow over SSE, in-process (Django's AsyncClient drives the ASGI handler)."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import AsyncClient

from sessions_app.access import key_cache
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user

from .conftest import db

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

PATH = "/api/v1/sessions/agent:main:main/history/"


@pytest.fixture
def main_session(agents):
    return make_session("agent:main:main")


class Stream:
    """Reads SSE frames from a streaming response."""

    def __init__(self, response):
        self.response = response
        self.chunks = response.streaming_content.__aiter__()
        self.buffer = b""

    async def frame(self, timeout=5) -> dict:
        while b"\n\n" not in self.buffer:
            self.buffer += await asyncio.wait_for(self.chunks.__anext__(), timeout)
        raw, self.buffer = self.buffer.split(b"\n\n", 1)
        out = {}
        for line in raw.decode().split("\n"):
            name, _, value = line.partition(": ") if not line.startswith(":") else ("", "", line)
            if line.startswith(":"):
                out["comment"] = line[1:].strip()
            elif line.startswith("retry:"):
                out["retry"] = line.split(":", 1)[1].strip()
            else:
                out[name] = json.loads(value) if name == "data" else value
        return out

    async def close(self):
        await self.chunks.aclose()


def get(path, token=None, **headers):
    # Per request: AsyncClient(headers=...) would send them under WSGI-style names.
    if token:
        headers["Authorization"] = f"Bearer {token}"
    return AsyncClient().get(path, headers=headers)


async def open_stream(token, path=PATH, **headers) -> Stream:
    response = await get(path, token, **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/event-stream"
    assert response["Cache-Control"] == "no-cache"
    return Stream(response)


async def test_history_then_appended_messages(operator, main_session):
    await db(add_messages)(main_session, user("hi"), assistant("hello"))
    stream = await open_stream(operator.token, PATH + "?follow=1")
    try:
        assert (await stream.frame()) == {"retry": "1000"}
        history = await stream.frame()
        assert history["event"] == "history"
        assert history["data"]["sessionKey"] == "agent:main:main"
        assert [m["__openclaw"]["seq"] for m in history["data"]["messages"]] == [1, 2]
        await db(add_messages)(main_session, user("more"), tool_result("x"), assistant("done"))
        first, second = await stream.frame(), await stream.frame()
    finally:
        await stream.close()
    # Without includeTools the toolResult (seq 4) is left out, as in the page.
    assert (first["id"], first["event"], first["data"]["messageSeq"]) == ("3", "message", 3)
    assert (second["id"], second["data"]["messageSeq"]) == ("5", 5)
    assert second["data"]["message"]["role"] == "assistant"


async def test_accept_header_chooses_the_stream(operator, main_session):
    stream = await open_stream(operator.token, PATH + "?limit=1", Accept="text/event-stream")
    try:
        await stream.frame()
        assert (await stream.frame())["event"] == "history"
    finally:
        await stream.close()


async def test_last_event_id_resumes_at_exactly_the_next_seq(operator, main_session):
    await db(add_messages)(main_session, *[user(f"m{i}") for i in range(1, 6)])
    stream = await open_stream(operator.token, PATH + "?follow=1", **{"Last-Event-ID": "3"})
    try:
        assert "retry" in await stream.frame()
        got = [await stream.frame() for _ in range(2)]  # no history event on resume
        await db(add_messages)(main_session, user("m6"))
        got.append(await stream.frame())
    finally:
        await stream.close()
    assert [f["id"] for f in got] == ["4", "5", "6"]
    assert all(f["event"] == "message" for f in got)


async def test_keepalive_comment(settings, operator, main_session):
    settings.LIVE_KEEPALIVE_SECONDS = 0.2
    stream = await open_stream(operator.token, PATH + "?follow=1")
    try:
        await stream.frame(), await stream.frame()
        assert (await stream.frame())["comment"] == "keepalive"
    finally:
        await stream.close()


async def test_revoking_the_key_ends_the_stream(operator, main_session):
    stream = await open_stream(operator.token, PATH + "?follow=1")
    try:
        await stream.frame(), await stream.frame()
        await db(lambda: key_cache.authenticate(operator.token).revoke())()
        error = await stream.frame()
        assert error["event"] == "error"
        assert error["data"] == {"code": 4401, "reason": "access revoked"}
        with pytest.raises(StopAsyncIteration):
            await stream.chunks.__anext__()
    finally:
        await stream.close()


async def test_narrowed_visibility_ends_the_stream(outsider, main_session):
    await db(set_config)(visibility="all", a2a_enabled=True)
    stream = await open_stream(outsider.token, PATH + "?follow=1")
    try:
        await stream.frame(), await stream.frame()
        await db(set_config)(a2a_enabled=False)
        error = await stream.frame()
        assert error["event"] == "error"
        assert error["data"] == {"code": 4403, "reason": "access revoked: visibility changed"}
    finally:
        await stream.close()


async def test_a_disconnected_stream_leaves_the_hub(operator, main_session):
    from sessions_app.live.hub import Hub

    stream = await open_stream(operator.token, PATH + "?follow=1")
    await stream.frame(), await stream.frame()
    hub = Hub.current()
    assert len(hub.subscribers) == 1
    # When the client goes away, the server cancels the task that drives the stream.
    reading = asyncio.create_task(stream.frame())
    await asyncio.sleep(0.05)
    reading.cancel()
    with pytest.raises(asyncio.CancelledError):
        await reading
    assert not hub.subscribers and not hub.by_session


@pytest.mark.parametrize(
    "query, headers, status, message",
    [
        ("?follow=maybe", {}, 400, "follow must be a boolean"),
        ("?follow=1", {"Last-Event-ID": "x"}, 400, "Last-Event-ID must be a non-negative integer"),
        ("?follow=1&bogus=1", {}, 400, None),
    ],
)
async def test_bad_follow_requests(operator, main_session, query, headers, status, message):
    response = await get(PATH + query, operator.token, **headers)
    assert response.status_code == status
    body = json.loads(response.content)
    if message:
        assert message in json.dumps(body)


async def test_forbidden_and_anonymous(agents, outsider, main_session):
    response = await get(PATH + "?follow=1")
    assert response.status_code == 401
    response = await get(PATH + "?follow=1", outsider.token, Accept="text/event-stream")
    assert response.status_code == 403
    assert "visibility" in response.content.decode()
