"""OpenClaw's `mcp serve` tools (spec 9.6 §7) over MCP HTTP against the demo."""

from __future__ import annotations

import asyncio
import json

from sessions_app.models import ApiKey, Delivery, Message
from tests.mcp.helpers import http_client, key, texts


def run(coro):
    return asyncio.run(coro)


def test_conversations_messages_and_attachments(demo_server):
    token = key()
    ingest = key(ApiKey.INGEST)
    image = {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="}
    appended = demo_server.request(
        "POST",
        "/api/v1/sessions/agent:main:discord:group:dev/messages/",
        body={"messages": [{"role": "user", "content": [{"type": "text", "text": "look"}, image]}]},
        token=ingest,
    )
    assert appended.status in (200, 201), appended.body
    seq = appended.json()["lastSeq"]

    async def scenario():
        async with http_client(demo_server, token) as client:
            return (
                await client.call_tool("conversations_list", {"limit": 50}),
                await client.call_tool("conversations_list", {"channel": "DISCORD"}),
                await client.call_tool("conversation_get", {"session_key": "main"}),
                await client.call_tool(
                    "conversation_get", {"session_key": "agent:main:cron:daily-briefing"}
                ),
                await client.call_tool(
                    "messages_read", {"session_key": "agent:main:discord:group:dev", "limit": 2}
                ),
                await client.call_tool(
                    "attachments_fetch",
                    {"session_key": "agent:main:discord:group:dev", "message_id": f"{seq:08x}"},
                ),
                await client.call_tool(
                    "attachments_fetch",
                    {"session_key": "agent:main:discord:group:dev", "message_id": "zz"},
                ),
                await client.call_tool("messages_read", {"session_key": "main", "limit": 0}),
            )

    listed, discord, main, cron, read, attachments, missing, bad = run(scenario())
    conversations = listed.structured_content["conversations"]
    assert conversations and all(c["channel"] and c["to"] for c in conversations)
    assert "agent:main:cron:daily-briefing" not in {c["sessionKey"] for c in conversations}
    assert texts(listed).startswith(f"conversations: {len(conversations)}\n\n")
    assert json.loads(texts(listed).split("\n\n", 1)[1]) == listed.structured_content
    dev = next(c for c in conversations if c["sessionKey"] == "agent:main:discord:group:dev")
    assert (
        dev["channel"] == "discord" and dev["to"] == "channel:dev" and dev["accountId"] == "bot-1"
    )
    assert dev["lastMessagePreview"] == "look" and dev["derivedTitle"]
    assert [c["channel"] for c in discord.structured_content["conversations"]] == ["discord"]

    assert texts(main) == "conversation agent:main:main"
    assert main.structured_content["conversation"]["to"] == "user:alice"
    assert cron.is_error and texts(cron) == "conversation not found: agent:main:cron:daily-briefing"

    assert len(read.structured_content["messages"]) == 2
    assert texts(read).startswith("messages: 2\n\n")
    assert read.structured_content["messages"][-1]["__openclaw"]["seq"] == seq

    assert texts(attachments) == "attachments: 1"
    assert attachments.structured_content["attachments"][0]["type"] == "image"
    assert missing.is_error and texts(missing) == "message not found: zz"
    assert bad.is_error and texts(bad) == "limit must be a positive integer"


def test_events_poll_pages_by_cursor_and_a_wait_is_woken_by_a_new_message(demo_server):
    token = key()
    ingest = key(ApiKey.INGEST)

    def append(text):
        return demo_server.request(
            "POST",
            "/api/v1/sessions/agent:main:slack:channel:c0general/messages/",
            body={"messages": [{"role": "user", "content": text}]},
            token=ingest,
        )

    async def scenario():
        async with http_client(demo_server, token) as client:
            first = await client.call_tool("events_poll", {"limit": 3})
            cursor = first.structured_content["next_cursor"]
            second = await client.call_tool("events_poll", {"after_cursor": cursor, "limit": 3})
            timed_out = await client.call_tool("events_wait", {"timeout_ms": 300})
            waiting = asyncio.create_task(client.call_tool("events_wait", {"timeout_ms": 20_000}))
            await asyncio.sleep(1.0)
            assert not waiting.done()
            started = asyncio.get_running_loop().time()
            await asyncio.to_thread(append, "wake up")
            woken = await waiting
            latency = asyncio.get_running_loop().time() - started
            return first, second, timed_out, woken, latency

    first, second, timed_out, woken, latency = run(scenario())
    events = first.structured_content["events"]
    assert texts(first) == "events: 3" and len(events) == 3
    assert [e["cursor"] for e in events] == sorted(e["cursor"] for e in events)
    assert first.structured_content["next_cursor"] == events[-1]["cursor"]
    assert second.structured_content["events"][0]["cursor"] > events[-1]["cursor"]
    assert {"cursor", "type", "sessionKey", "messageId", "messageSeq", "role", "raw"} <= set(
        events[0]
    )

    assert texts(timed_out) == "timeout" and timed_out.structured_content["event"] is None
    event = woken.structured_content["event"]
    assert texts(woken) == f"event {event['cursor']}"
    assert (
        event["text"] == "wake up" and event["sessionKey"] == "agent:main:slack:channel:c0general"
    )
    assert event["conversation"]["channel"] == "slack"
    assert latency < 5


def test_messages_send_goes_over_the_stored_route_and_refuses_without_one(demo_server):
    token = key()

    async def scenario():
        async with http_client(demo_server, token) as client:
            sent = await client.call_tool(
                "messages_send",
                {"session_key": "agent:main:telegram:group:-1001234567890", "text": "hello group"},
            )
            no_route = await client.call_tool(
                "messages_send", {"session_key": "agent:main:cron:daily-briefing", "text": "x"}
            )
            empty = await client.call_tool("messages_send", {"session_key": "main", "text": "  "})
            return sent, no_route, empty

    sent, no_route, empty = run(scenario())
    assert not sent.is_error, sent.content
    assert texts(sent) == "sent"
    result = sent.structured_content["result"]
    assert result["channel"] == "telegram" and result["to"] == "group:-1001234567890"
    delivery = Delivery.objects.get(pk=result["deliveryId"])
    assert delivery.text == "hello group" and delivery.kind == "message"
    stored = Message.objects.get(
        session__key="agent:main:telegram:group:-1001234567890", seq=result["messageSeq"]
    )
    assert stored.role == "assistant"
    assert no_route.is_error
    assert texts(no_route) == "Conversation not found for session agent:main:cron:daily-briefing"
    assert empty.is_error and texts(empty) == "text required"
