"""chat.history's deltaCursor (9.6 §2.4): a tail carries one; passing it back as `cursor` gives
only what came since, or {kind:"reset"} when the cursor no longer applies."""

from __future__ import annotations

import pytest

from sessions_app.manage import session_admin
from sessions_app.models import Session
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user
from tests.live.conftest import connected, db

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

DEV = "agent:main:dev"


def make_dev():
    set_config(visibility="agent")
    session = make_session(DEV)
    add_messages(session, user("one"), assistant("two"))
    return session


def append(*messages):
    add_messages(Session.objects.get(key=DEV), *messages)


def texts(messages):
    out = []
    for m in messages:
        content = m["content"]
        out.append(content if isinstance(content, str) else content[0]["text"])
    return out


async def test_a_tail_then_deltas(operator):
    await db(make_dev)()
    async with connected(operator.token) as client:
        tail = await client.request("chat.history", {"sessionKey": DEV})
        cursor = tail["payload"]["deltaCursor"]
        empty = await client.request("chat.history", {"sessionKey": DEV, "cursor": cursor})
        assert empty["payload"]["kind"] == "delta" and empty["payload"]["messages"] == []
        await db(append)(user("three"), tool_result("hidden"), assistant("four"))
        delta = await client.request("chat.history", {"sessionKey": DEV, "cursor": cursor})
        again = await client.request(
            "chat.history", {"sessionKey": DEV, "cursor": delta["payload"]["deltaCursor"]}
        )
    payload = delta["payload"]
    assert payload["kind"] == "delta" and texts(payload["messages"]) == ["three", "four"]
    assert payload["sessionInfo"] == {
        "sessionKey": DEV,
        "sessionId": payload["sessionInfo"]["sessionId"],
        "lastSeq": 5,
        "archived": False,
    }
    assert again["payload"]["messages"] == []


async def test_reset_and_foreign_cursors(operator):
    await db(make_dev)()
    await db(make_session)("agent:main:other")
    async with connected(operator.token) as client:
        tail = await client.request("chat.history", {"sessionKey": DEV})
        cursor = tail["payload"]["deltaCursor"]
        foreign = await client.request(
            "chat.history", {"sessionKey": "agent:main:other", "cursor": cursor}
        )
        garbage = await client.request("chat.history", {"sessionKey": DEV, "cursor": "zzz"})
        await db(lambda: session_admin.reset(Session.objects.get(key=DEV)))()
        after_reset = await client.request("chat.history", {"sessionKey": DEV, "cursor": cursor})
    assert foreign["payload"] == garbage["payload"] == after_reset["payload"] == {"kind": "reset"}


async def test_more_than_200_behind_is_a_reset(operator):
    await db(make_dev)()
    async with connected(operator.token) as client:
        cursor = (await client.request("chat.history", {"sessionKey": DEV}))["payload"][
            "deltaCursor"
        ]
        await db(append)(*[user(f"m{i}") for i in range(201)])
        res = await client.request("chat.history", {"sessionKey": DEV, "cursor": cursor})
    assert res["payload"] == {"kind": "reset"}


async def test_cursor_errors(operator):
    await db(make_dev)()
    async with connected(operator.token) as client:
        with_offset = await client.request(
            "chat.history", {"sessionKey": DEV, "cursor": "x", "offset": 1}
        )
        unknown = await client.request("chat.history", {"sessionKey": DEV, "cursor": "x", "y": 1})
        no_key = await client.request("chat.history", {"cursor": "x"})
    assert with_offset["error"]["message"] == "cursor cannot be used with offset or messageId"
    assert unknown["error"]["message"] == "Unknown argument for chat.history: y"
    assert no_key["error"]["message"] == "sessionKey required"


async def test_snake_case_names_and_no_cursor_for_an_anchored_read(operator):
    """9.6 §0's snake_case spellings, a cursor included; a read around a messageId is not a
    tail, so it carries no deltaCursor."""
    await db(make_dev)()
    async with connected(operator.token) as client:
        tail = await client.request("chat.history", {"session_key": DEV})
        delta = await client.request(
            "chat.history", {"session_key": DEV, "cursor": tail["payload"]["deltaCursor"]}
        )
        anchored = await client.request(
            "chat.history", {"session_key": DEV, "message_id": "00000001"}
        )
    assert texts(tail["payload"]["messages"]) == ["one", "two"]
    assert delta["payload"]["kind"] == "delta" and delta["payload"]["messages"] == []
    assert texts(anchored["payload"]["messages"]) == ["one", "two"]
    assert "deltaCursor" not in anchored["payload"]
