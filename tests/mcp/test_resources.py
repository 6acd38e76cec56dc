"""Transcripts as resources (session://<key>) and their update notifications, both eras."""

from __future__ import annotations

import asyncio
import json
import warnings

import mcp_types as types
from mcp.shared.exceptions import MCPError

from sessions_app.models import ApiKey
from tests.mcp.helpers import db, http_client, key, revoke

DEV = "agent:main:discord:group:dev"
DEV_URI = f"session://{DEV}"


def append(server, token, text, session=DEV):
    response = server.request(
        "POST",
        f"/api/v1/sessions/{session}/messages/",
        body={"messages": [{"role": "user", "content": text}]},
        token=token,
    )
    assert response.status in (200, 201), response.body


def test_list_read_and_refuse(demo_server):
    token = key()
    pinned = key(session_key="agent:main:main", sandboxed=True)

    async def scenario():
        async with http_client(demo_server, token) as client:
            listed = await client.list_resources()
            templates = await client.list_resource_templates()
            read = await client.read_resource(DEV_URI)
            try:
                await client.read_resource("file:///etc/passwd")
            except MCPError as exc:
                wrong_scheme = exc
        async with http_client(demo_server, pinned) as client:
            try:
                await client.read_resource("session://agent:research:main")
            except MCPError as exc:
                hidden = exc
        return listed, templates, read, wrong_scheme, hidden

    listed, templates, read, wrong_scheme, hidden = asyncio.run(scenario())
    uris = {r.uri for r in listed.resources}
    assert {"session://agent:main:main", DEV_URI} <= uris
    assert templates.resource_templates[0].uri_template == "session://{sessionKey}"
    details = json.loads(read.contents[0].text)
    assert details["sessionKey"] == DEV and details["messages"]
    assert "session://" in wrong_scheme.message
    assert "agent:research:main" in hidden.message


def test_a_subscribed_transcript_notifies_on_new_messages_in_the_handshake_era(demo_server):
    token = key()
    ingest = key(ApiKey.INGEST)
    updated: asyncio.Queue = asyncio.Queue()

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            await updated.put(message.params.uri)

    async def scenario():
        async with http_client(
            demo_server, token, mode="legacy", message_handler=on_message
        ) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # resources/subscribe is the 2025 era's way
                await client.subscribe_resource(DEV_URI)
            await asyncio.sleep(0.5)
            await asyncio.to_thread(append, demo_server, ingest, "a new message")
            first = await asyncio.wait_for(updated.get(), 10)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await client.unsubscribe_resource(DEV_URI)
            await asyncio.to_thread(append, demo_server, ingest, "after unsubscribing")
            try:
                late = await asyncio.wait_for(updated.get(), 2)
            except TimeoutError:
                late = None
            return first, late

    first, late = asyncio.run(scenario())
    assert first == DEV_URI
    assert late is None


def test_a_listen_stream_carries_updates_in_the_2026_era(demo_server):
    token = key()
    ingest = key(ApiKey.INGEST)

    async def scenario():
        async with http_client(demo_server, token) as client:
            assert client.protocol_version == "2026-07-28"
            async with client.listen(resource_subscriptions=[DEV_URI]) as subscription:
                await asyncio.to_thread(append, demo_server, ingest, "listen to this")
                async with asyncio.timeout(10):
                    async for event in subscription:
                        return event

    event = asyncio.run(scenario())
    assert event.uri == DEV_URI


def test_a_revoked_key_ends_its_listen_stream(demo_server):
    token = key()

    async def scenario():
        async with (
            http_client(demo_server, token) as client,
            client.listen(resource_subscriptions=[DEV_URI]) as subscription,
        ):
            await db(revoke, token)
            async with asyncio.timeout(10):
                return [event async for event in subscription]

    assert asyncio.run(scenario()) == []
