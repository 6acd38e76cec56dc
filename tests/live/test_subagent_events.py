"""Sub-agent state changes reach the live followers of their parent session (issue 13, item 5):
queued, started, waiting and finished or cancelled, as `session.subagent` WebSocket events and
`event: subagent` SSE frames, across real processes (a server, a worker cluster). On SQLite the
hub's poll finds the worker's changes; on PostgreSQL + Redis the hints do."""

from __future__ import annotations

import json
import time

import pytest
from websockets.sync.client import connect

from tests.live.test_across_processes import SSE, request, ws_url
from tests.worlds import ANNOUNCE_SKIP

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def research_rules() -> list[dict]:
    # A spawned research child that pauses (sessions_yield) on "pause", else answers.
    return [
        ANNOUNCE_SKIP,
        {
            "match": "pause",
            "on": ["spawn"],
            "toolCalls": [{"name": "sessions_yield", "arguments": {"waitFor": "message"}}],
        },
        {"match": ".*", "on": ["spawn"], "reply": "Found it."},
    ]


@pytest.fixture
def main_agent() -> dict:
    return {"subagents": {"allowAgents": ["research"]}}


def invoke(server, token, tool: str, args: dict) -> dict:
    response = server.request(
        "POST", "/tools/invoke", token=token, body={"tool": tool, "args": args}
    )
    assert response.status == 200, response.body
    return response.json()["result"]["details"]


def states_until(read_event, child: str, last: str, *, timeout: float = 20) -> list[str]:
    """The states announced for `child`, in order, up to and including `last`."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        payload = read_event()
        if payload is None or payload["childSessionKey"] != child:
            continue
        seen.append(payload["state"])
        if payload["state"] == last:
            return seen
    raise AssertionError(f"no {last!r} for {child}; saw {seen}")


def in_order(seen: list[str], states: list[str]) -> bool:
    """Each state at most once, in this order. States are read from the database, so one that
    lasted less than a hub round (a fast child's start, on SQLite's poll) may be folded into
    the next; the last one never is."""
    return seen == [s for s in states if s in seen] and seen[-1] == states[-1]


def test_websocket_followers_of_the_parent_hear_a_child_start_and_finish(live_world):
    server, token = live_world.server, live_world.token
    with connect(ws_url(server), additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        assert request(ws, "1", "sessions.messages.subscribe", {"key": "agent:main:main"})["ok"]
        spawned = invoke(server, token, "sessions_spawn", {"agentId": "research", "task": "dig"})
        child = spawned["childSessionKey"]

        def read_event():
            frame = json.loads(ws.recv(timeout=15))
            if frame.get("event") != "session.subagent":
                return None
            assert frame["payload"]["sessionKey"] == "agent:main:main"
            return frame["payload"]

        seen = states_until(read_event, child, "finished")
    assert in_order(seen, ["queued", "started", "finished"])


def test_sse_followers_hear_a_child_wait_and_get_cancelled(live_world):
    server, token = live_world.server, live_world.token
    stream = SSE(server, token, "/api/v1/sessions/agent:main:main/history/?follow=1")
    try:
        spawned = invoke(
            server, token, "sessions_spawn", {"agentId": "research", "task": "pause here"}
        )
        child = spawned["childSessionKey"]

        def read_event():
            frame = stream.frame()
            if frame.get("event") != "subagent":
                return None
            assert "id" not in frame  # a state, not a message to resume from
            return frame["data"]

        assert in_order(
            states_until(read_event, child, "waiting"), ["queued", "started", "waiting"]
        )
        cancelled = invoke(server, token, "subagents", {"action": "cancel", "taskId": child})
        assert cancelled["cancelled"] is True, cancelled
        assert states_until(read_event, child, "cancelled") == ["cancelled"]
    finally:
        stream.close()
