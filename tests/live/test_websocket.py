"""/ws/ in-process: frames, methods, visibility, limits and resume (WebsocketCommunicator)."""

from __future__ import annotations

import asyncio
import json

import pytest

from openclaw_common.errors import Unauthenticated
from sessions_app.access import key_cache
from sessions_app.models import Agent, ApiKey, Session
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user

from .conftest import Client, connected, db, ws

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


@pytest.fixture
def main_session(agents):
    return make_session("agent:main:main")


async def test_messages_stream_in_seq_order(operator, main_session):
    async with connected(operator.token) as client:
        res = await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        assert res["ok"] and res["payload"] == {"key": "agent:main:main", "lastSeq": 0}
        await db(add_messages)(main_session, user("one"), assistant("two"))
        await db(add_messages)(main_session, user("three"))
        got = [await client.event() for _ in range(3)]
    assert [e["event"] for e in got] == ["session.message"] * 3
    assert [e["payload"]["messageSeq"] for e in got] == [1, 2, 3]
    assert [e["seq"] for e in got] == [1, 2, 3]  # the connection's own event counter
    first = got[0]["payload"]
    assert first["sessionKey"] == "agent:main:main"
    assert first["message"]["role"] == "user"
    assert first["message"]["__openclaw"] == {"seq": 1}


async def test_resume_from_since_has_no_gap_and_no_duplicate(operator, main_session):
    await db(add_messages)(main_session, *[user(f"m{i}") for i in range(1, 6)])
    async with connected(operator.token) as client:
        res = await client.request(
            "sessions.messages.subscribe", {"key": "agent:main:main", "since": 2}
        )
        assert res["payload"]["lastSeq"] == 5
        replayed = [await client.event() for _ in range(3)]
        await db(add_messages)(main_session, user("m6"))
        live = await client.event()
        assert await client.nothing()
    assert [e["payload"]["messageSeq"] for e in [*replayed, live]] == [3, 4, 5, 6]


async def test_tool_results_can_be_left_out(operator, main_session):
    async with connected(operator.token) as client:
        await client.request(
            "sessions.messages.subscribe", {"key": "agent:main:main", "includeTools": False}
        )
        await db(add_messages)(main_session, user("run it"), tool_result("ok"), assistant("done"))
        got = [await client.event() for _ in range(2)]
        assert await client.nothing()
    assert [e["payload"]["messageSeq"] for e in got] == [1, 3]


async def test_messages_are_sanitised_like_history(operator, main_session):
    secret = "sk-" + "a" * 40
    async with connected(operator.token) as client:
        await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        await db(add_messages)(main_session, user("x" * 5000), user(f"key {secret}"))
        long, redacted = await client.event(), await client.event()
    assert len(long["payload"]["message"]["content"]) < 4100
    assert secret not in json.dumps(redacted)


async def test_session_lifecycle_events(operator, main_session):
    await db(set_config)(visibility="agent")
    async with connected(operator.token) as client:
        assert (await client.request("sessions.subscribe"))["ok"]
        other = await db(make_session)("agent:main:discord:group:g1")
        created = await client.event()
        await db(add_messages)(other, user("hello"))
        messages = await client.event()
        await db(Session.archive)(other)
        archived = await client.event()
    assert created["event"] == "sessions.changed"
    assert created["payload"]["key"] == "agent:main:discord:group:g1"
    assert created["payload"]["reason"] == "created"
    assert created["payload"]["session"]["kind"] == "group"
    assert messages["payload"]["reason"] == "messages"
    assert archived["payload"]["reason"] == "archived"


async def test_lifecycle_events_respect_visibility(agents, outsider, agent_main):
    await db(set_config)(visibility="agent")
    async with connected(outsider.token) as other, connected(agent_main.token) as main:
        await other.request("sessions.subscribe")
        await main.request("sessions.subscribe")
        await db(make_session)("agent:main:telegram:group:t1")
        seen = await main.event()
        assert seen["payload"]["key"] == "agent:main:telegram:group:t1"
        assert await other.nothing(0.5)  # agent "other" may not see agent main's sessions


async def test_forbidden_subscription_has_openclaw_text(agents, outsider, main_session):
    async with connected(outsider.token) as client:
        res = await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
    assert res["ok"] is False
    assert res["error"]["code"] == "forbidden"
    assert res["error"]["message"].startswith("Session history visibility is restricted")


async def test_unknown_session_is_not_found(operator, agents):
    await db(set_config)(visibility="agent")
    async with connected(operator.token) as client:
        res = await client.request("sessions.messages.subscribe", {"key": "agent:main:nope"})
    assert res["error"]["code"] == "not_found"
    assert res["error"]["message"].startswith("Session not found: agent:main:nope")


async def test_first_frame_authentication(operator, main_session):
    async with connected() as client:
        refused = await client.request("sessions.list")
        assert refused["error"]["code"] == "unauthorized"
        bad = await client.request("connect", {"auth": {"token": "ocs_nope_nope"}})
        assert bad["error"]["code"] == "unauthorized"
        missing = await client.request("connect", {"auth": {}})
        # Issue 17.6: one 401 text everywhere, the HTTP API's included.
        texts = {refused["error"]["message"], bad["error"]["message"], missing["error"]["message"]}
        assert texts == {Unauthenticated.TEXT}
        hello = await client.request("connect", {"auth": {"token": operator.token}})
        assert hello["ok"] and hello["payload"]["type"] == "hello-ok"
        listed = await client.request("sessions.list", {"limit": 5})
    assert [row["key"] for row in listed["payload"]["sessions"]] == ["agent:main:main"]


async def test_unauthenticated_connection_is_closed_after_the_timeout(settings, agents):
    settings.LIVE_AUTH_TIMEOUT_SECONDS = 0.2
    communicator = ws()
    assert (await communicator.connect())[0]
    closed = await communicator.receive_output(timeout=3)
    assert closed == {"type": "websocket.close", "code": 4401, "reason": "authentication timed out"}


async def test_bad_key_in_header_is_refused_at_the_handshake(agents):
    communicator = ws("ocs_bad_bad")
    accepted, code = await communicator.connect()
    assert not accepted and code == 4403


async def test_ingest_keys_cannot_subscribe(ingest):
    accepted, _ = await ws(ingest.token).connect()
    assert not accepted


async def test_revoked_key_closes_the_connection(operator, main_session):
    async with connected(operator.token) as client:
        await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        await db(lambda: ApiKey.objects.get(pk=operator_key_pk(operator)).revoke())()
        closed = await client.ws.receive_output(timeout=3)
    assert closed["type"] == "websocket.close" and closed["code"] == 4401
    assert closed["reason"] == "access revoked"


async def test_narrowed_visibility_closes_a_subscription_it_no_longer_allows(
    agents, outsider, main_session
):
    await db(set_config)(visibility="all", a2a_enabled=True)
    async with connected(outsider.token) as client:
        res = await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        assert res["ok"], res
        await db(set_config)(visibility="tree")
        closed = await client.ws.receive_output(timeout=3)
        assert closed == {
            "type": "websocket.close",
            "code": 4403,
            "reason": "access revoked: visibility changed",
        }
    async with connected(outsider.token) as client:
        again = await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
    assert again["error"]["message"].startswith("Session history visibility is restricted")


async def test_a_settings_change_that_keeps_access_keeps_the_subscription(
    agents, agent_main, main_session
):
    await db(set_config)(visibility="all", a2a_enabled=True)
    async with connected(agent_main.token) as client:
        await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        await db(set_config)(visibility="self")  # its own session stays readable
        await policies_become(lambda policy: policy.visibility == "self")
        await db(add_messages)(main_session, user("still here"))
        got = await client.event()
    assert got["payload"]["message"]["content"] == "still here"


async def test_lifecycle_events_follow_a_narrowed_visibility(agents, outsider):
    await db(set_config)(visibility="all", a2a_enabled=True)
    async with connected(outsider.token) as client:
        await client.request("sessions.subscribe")
        await db(make_session)("agent:main:telegram:group:t1")
        assert (await client.event())["payload"]["key"] == "agent:main:telegram:group:t1"
        await db(set_config)(a2a_enabled=False)
        await policies_become(lambda policy: not policy.a2a_enabled)
        await db(make_session)("agent:main:telegram:group:t2")
        await db(make_session)("agent:other:telegram:group:t3")
        seen = await client.event()
        assert seen["payload"]["key"] == "agent:other:telegram:group:t3"
        assert await client.nothing()


async def policies_become(predicate, timeout=5.0):
    """Until every connection of this test's hub has a visibility policy matching `predicate`."""
    from sessions_app.live.hub import Hub

    hub = Hub.current()
    deadline = asyncio.get_running_loop().time() + timeout
    while not all(predicate(s.policy) for s in hub.subscribers):
        assert asyncio.get_running_loop().time() < deadline, "the new policy was not applied"
        await asyncio.sleep(0.05)


async def test_sandboxing_an_agent_closes_what_it_may_no_longer_read(agents, agent_main):
    await db(set_config)(visibility="agent")
    group = await db(make_session)("agent:main:discord:group:g1")
    async with connected(agent_main.token) as client:
        res = await client.request("sessions.messages.subscribe", {"key": group.key})
        assert res["ok"], res
        await db(lambda: Agent.objects.filter(pk="main").update(sandboxed=True))()
        closed = await client.ws.receive_output(timeout=3)
    assert closed["code"] == 4403


def operator_key_pk(api) -> int:
    return key_cache.authenticate(api.token).pk


async def test_oversized_frame_closes_with_1009(settings, operator):
    settings.LIVE_MAX_FRAME_BYTES = 1024
    async with connected(operator.token) as client:
        await client.ws.send_to(text_data=json.dumps({"type": "req", "id": "1", "x": "y" * 2000}))
        closed = await client.ws.receive_output(timeout=3)
    assert closed == {
        "type": "websocket.close",
        "code": 1009,
        "reason": "frame too large (max 1024 bytes)",
    }


async def test_binary_frames_are_refused(operator):
    async with connected(operator.token) as client:
        await client.ws.send_to(bytes_data=b"\x00\x01")
        closed = await client.ws.receive_output(timeout=3)
    assert closed["code"] == 1003


async def test_subscription_cap(settings, operator, agents):
    settings.LIVE_MAX_SUBSCRIPTIONS = 2
    await db(set_config)(visibility="agent")
    for key in ("agent:main:a", "agent:main:b", "agent:main:c"):
        await db(make_session)(key)
    async with connected(operator.token) as client:
        assert (await client.request("sessions.messages.subscribe", {"key": "agent:main:a"}))["ok"]
        assert (await client.request("sessions.subscribe"))["ok"]
        full = await client.request("sessions.messages.subscribe", {"key": "agent:main:c"})
        assert full["error"] == {
            "code": "limit",
            "message": "too many subscriptions on this connection (max 2)",
        }
        # Re-subscribing to what it already follows is not a new subscription.
        assert (await client.request("sessions.messages.subscribe", {"key": "agent:main:a"}))["ok"]
        await client.request("sessions.messages.unsubscribe", {"key": "agent:main:a"})
        assert (await client.request("sessions.messages.subscribe", {"key": "agent:main:c"}))["ok"]


@pytest.mark.parametrize(
    "frame, message",
    [
        ("not json", "frame must be JSON"),
        ("[1]", "frame must be a JSON object"),
        ('{"type": "req", "method": "sessions.list"}', "id must be a string of 1 to 128 characters"),
        ('{"type": "event", "id": "1", "method": "x"}', 'type must be "req"'),
        ('{"type": "req", "id": "1", "method": 5}', "method must be a string"),
        ('{"type": "req", "id": "1", "method": "sessions.list", "params": []}', "params must be an object"),
    ],
)  # fmt: skip
async def test_malformed_frames_get_an_error_response(operator, frame, message):
    async with connected(operator.token) as client:
        await client.ws.send_to(text_data=frame)
        res = json.loads(await client.ws.receive_from())
        # The connection stays usable.
        assert (await client.request("sessions.list"))["ok"]
    assert res["type"] == "res" and res["ok"] is False
    assert res["error"] == {"code": "invalid_request", "message": message}


@pytest.mark.parametrize(
    "params, message",
    [
        ({}, "key must be a non-empty string"),
        ({"key": 5}, "key must be a non-empty string"),
        ({"key": "main", "since": -1}, "since must be a non-negative integer"),
        ({"key": "main", "since": "3"}, "since must be a non-negative integer"),
        ({"key": "main", "includeTools": "yes"}, "includeTools must be a boolean"),
        ({"key": "main", "bogus": 1}, "Unknown field: bogus"),
    ],
)
async def test_bad_subscribe_params(operator, main_session, params, message):
    async with connected(operator.token) as client:
        res = await client.request("sessions.messages.subscribe", params)
    assert res["error"] == {"code": "invalid_request", "message": message}


async def test_unknown_method(operator):  # (sessions.delete is a method now: issue 14)
    async with connected(operator.token) as client:
        res = await client.request("sessions.explode", {})
    assert res["error"] == {"code": "unknown_method", "message": "unknown method: sessions.explode"}


async def test_chat_history_and_sessions_list(operator, main_session):
    await db(add_messages)(main_session, user("hi"), assistant("hello"))
    async with connected(operator.token) as client:
        history = await client.request("chat.history", {"sessionKey": "main", "limit": 1})
        listed = await client.request("sessions.list", {"messageLimit": 1})
    assert [m["content"][0]["text"] for m in history["payload"]["messages"]] == ["hello"]
    assert listed["payload"]["sessions"][0]["key"] == "agent:main:main"


async def test_many_subscribers_all_receive_everything(operator, main_session):
    clients = []
    for _ in range(20):
        communicator = ws(operator.token)
        assert (await communicator.connect())[0]
        client = Client(communicator)
        await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        clients.append(client)
    try:
        await db(add_messages)(main_session, *[user(f"m{i}") for i in range(30)])
        for client in clients:
            got = [(await client.event())["payload"]["messageSeq"] for _ in range(30)]
            assert got == list(range(1, 31))
    finally:
        await asyncio.gather(*(c.ws.disconnect() for c in clients))
