"""A message the hub cannot encode (nested past orjson's limit, stored before the depth limit
existed) becomes a placeholder event; the other sessions' events keep flowing (issue 16)."""

from __future__ import annotations

import pytest

from sessions_app import store
from sessions_app.live.hub import NOT_ENCODABLE_PLACEHOLDER
from sessions_app.models import Message
from tests.conftest import add_messages, make_session, set_config, user

from .conftest import connected, db

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]

DEEP = "agent:main:cron:deep"
OTHER = "agent:main:cron:other"


def nested(depth: int) -> dict:
    value: dict = {"leaf": True}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


def append_unencodable(session) -> None:
    """What an older version let in: written past read_message, so nothing flattens it."""
    message = Message(role="user", content=[{"type": "text", "text": "x", "data": nested(400)}])
    message.timestamp = 1
    store.append_to_session(session, [message])


@pytest.fixture
def sessions(agents):
    set_config(visibility="agent")
    return make_session(DEEP), make_session(OTHER)


async def test_an_unencodable_message_does_not_stall_other_sessions(operator, sessions):
    deep, other = sessions
    async with (
        connected(operator.token) as deep_follower,
        connected(operator.token) as other_follower,
    ):
        for client, key in ((deep_follower, DEEP), (other_follower, OTHER)):
            res = await client.request("sessions.messages.subscribe", {"key": key})
            assert res["ok"], res
        await db(append_unencodable)(deep)
        await db(add_messages)(other, user("still flowing"))
        got = await other_follower.events_until(
            lambda e: e.get("event") == "session.message", timeout=5
        )
        assert got[-1]["payload"]["message"]["content"] == "still flowing"
        placeholder = await deep_follower.events_until(
            lambda e: e.get("event") == "session.message", timeout=5
        )
        message = placeholder[-1]["payload"]
        assert message["messageSeq"] == 1
        assert message["message"]["content"] == NOT_ENCODABLE_PLACEHOLDER
        # and the deep session's next message arrives normally
        await db(add_messages)(deep, user("next"))
        nxt = await deep_follower.events_until(
            lambda e: e.get("event") == "session.message", timeout=5
        )
        assert nxt[-1]["payload"]["message"]["content"] == "next"
