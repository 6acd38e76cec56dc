"""Tools that start runs, over MCP HTTP, with a real worker cluster: a send that waits for the
reply, a spawn, and a client that goes away while its wait is held."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from sessions_app.models import Run
from tests.mcp.helpers import http_client
from tests.servers import wait_until
from tests.worlds import ANNOUNCE_SKIP

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def research_rules() -> list[dict]:
    # Replies slow enough for a client to go away during the wait (tests/worlds.py: the rest).
    return [
        {"match": "very slow", "delayMs": 6500, "reply": "at last"},
        {"match": "slow", "delayMs": 3000, "reply": "finally"},
        {"match": "capital", "reply": "Paris."},
        ANNOUNCE_SKIP,
    ]


@pytest.fixture
def main_agent() -> dict:
    return {"subagents": {"allowAgents": ["research"]}}


def test_a_send_waits_for_the_workers_reply_and_a_spawn_is_accepted(live_world):
    server, token = live_world.server, live_world.token

    async def scenario():
        async with http_client(server, token) as client:
            sent = await client.call_tool(
                "sessions_send",
                {"sessionKey": "agent:research:main", "message": "The capital of France?"},
            )
            spawned = await client.call_tool(
                "sessions_spawn", {"task": "Summarise the inbox", "agentId": "research"}
            )
            return sent, spawned

    sent, spawned = asyncio.run(scenario())
    assert not sent.is_error, sent.content
    assert sent.structured_content["status"] == "ok"
    assert sent.structured_content["reply"] == "Paris."
    assert not spawned.is_error, spawned.content
    assert spawned.structured_content["status"] == "accepted"
    assert spawned.structured_content["childSessionKey"].startswith("agent:research:subagent:")
    child_run = spawned.structured_content["runId"]
    wait_until(lambda: Run.objects.get(pk=child_run).status == "ok", timeout=30)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_client_that_leaves_during_a_wait_leaves_the_run_and_the_server_fine(live_world, mode):
    server, token = live_world.server, live_world.token

    async def scenario():
        async with http_client(server, token, mode=mode) as client:
            wait = asyncio.create_task(
                client.call_tool(
                    "sessions_send",
                    {"sessionKey": "agent:research:main", "message": "slow please"},
                )
            )
            await asyncio.sleep(1.0)
            wait.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await wait
        # A new client on the same server: it still answers.
        async with http_client(server, token, mode=mode) as client:
            return await client.call_tool("agents_list", {})

    after = asyncio.run(scenario())
    assert not after.is_error
    run = wait_until(lambda: Run.objects.filter(message="slow please").first(), timeout=10)
    wait_until(lambda: Run.objects.get(pk=run.pk).status == "ok", timeout=30)


def test_a_held_send_reports_progress_to_a_client_that_asked(live_world):
    server, token = live_world.server, live_world.token
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value, total, message):
        progress.append((value, message))

    async def scenario():
        async with http_client(server, token) as client:
            return await client.call_tool(
                "sessions_send",
                {"sessionKey": "agent:research:main", "message": "very slow, please"},
                progress_callback=on_progress,
            )

    sent = asyncio.run(scenario())
    assert sent.structured_content["status"] == "ok"
    assert sent.structured_content["reply"] == "at last"
    assert progress and progress[0][0] == 5.0 and "still waiting" in progress[0][1]
