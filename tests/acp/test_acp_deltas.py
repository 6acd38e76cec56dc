"""An ACP child's reply reaches live followers as it streams: `session.delta` events (not rows)
before the one stored message (issue 27). The turn runs in the test process (drain, on a
thread) beside an in-process /ws/ client, so the deltas go hub-to-hub without Redis."""

from __future__ import annotations

import asyncio

import pytest

from sessions_app.models import Message, Run, Session
from tests.acp.harness_fixtures import echo, register
from tests.conftest import make_session
from tests.live.conftest import _fast_live, _stop_hubs, connected, db  # noqa: F401
from tests.runs.helpers import drain

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.asyncio,
    pytest.mark.usefixtures("no_heartbeat"),
]

TASK = "Say this back to me, in a few pieces, slowly."


def spawn(api, **args) -> tuple[str, str]:
    make_session("main")
    result = api.details("sessions_spawn", {"task": TASK, "runtime": "acp", **args})
    assert result["status"] == "accepted", result
    return result["childSessionKey"], result["runId"]


def reply_text(message: dict) -> str:
    content = message.get("content")
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


async def follow_the_turn(client, key: str) -> list[dict]:
    """Subscribe, run the turn on a thread, and collect events until the reply is stored."""
    subscribed = await client.request("sessions.messages.subscribe", {"key": key})
    assert subscribed["ok"], subscribed
    turn = asyncio.ensure_future(db(drain)())
    try:
        events = await client.events_until(
            lambda f: (
                f["event"] == "session.message"
                and f["payload"]["message"]["role"] == "assistant"
                and reply_text(f["payload"]["message"]) == TASK
            ),
            timeout=30,
        )
    finally:
        await turn
    return events


async def test_a_follower_gets_deltas_then_the_one_stored_reply(operator, agent_main, tmp_path):
    await db(register)(echo=echo(tmp_path, args=("--chunks", "4", "--delay", "0.3")))
    key, run_id = await db(spawn)(agent_main)
    async with connected(operator.token) as client:
        events = await follow_the_turn(client, key)
    deltas = [e["payload"] for e in events if e["event"] == "session.delta"]
    assert len(deltas) >= 2  # the text as it came, in several events
    # Applied in order, the deltas spell the reply; each says where its segment will be stored.
    draft = ""
    for delta in deltas:
        assert delta["sessionKey"] == key and delta["type"] == "text"
        draft = draft[: delta["offset"]] + delta["delta"]
    assert draft == TASK
    stored = events[-1]["payload"]
    assert stored["messageSeq"] > deltas[-1]["afterSeq"]
    assert stored["message"]["stopReason"] == "stop"
    # Deltas are no rows: the transcript has the reply once, and the run ended with it.
    assistant = await db(
        lambda: [
            m.content
            for m in Message.objects.filter(session__key=key, role="assistant").order_by("seq")
        ]
    )()
    assert [c for c in assistant if c[0]["type"] == "text"] == [[{"type": "text", "text": TASK}]]
    assert (await db(Run.objects.get)(pk=run_id)).reply == TASK


async def test_with_stream_to_the_parent_its_followers_get_the_deltas_too(
    operator, agent_main, tmp_path
):
    await db(register)(echo=echo(tmp_path, args=("--chunks", "4", "--delay", "0.3")))
    key, _ = await db(spawn)(agent_main, streamTo="parent")
    async with connected(operator.token) as client:
        subscribed = await client.request("sessions.messages.subscribe", {"key": "agent:main:main"})
        assert subscribed["ok"], subscribed
        events = await follow_the_turn(client, key)
    to_parent = [
        e["payload"]
        for e in events
        if e["event"] == "session.delta" and e["payload"]["sessionKey"] == "agent:main:main"
    ]
    assert to_parent and all(d["childSessionKey"] == key for d in to_parent)
    draft = ""
    for delta in to_parent:
        draft = draft[: delta["offset"]] + delta["delta"]
    assert draft == TASK
    main = await db(Session.objects.get)(key="agent:main:main")
    notes = await db(
        lambda: [
            reply_text({"content": m.content})
            for m in Message.objects.filter(session=main, extra__acpProgress__isnull=False)
        ]
    )()
    assert f"[{key}] {TASK}" in notes  # the stored note: the whole reply, once
