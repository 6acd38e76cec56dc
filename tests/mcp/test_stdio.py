"""`manage.py mcp` on stdio, started by the SDK's own stdio client as a desktop client would."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import warnings
from pathlib import Path

import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from sessions_app.models import Session
from tests.mcp.helpers import db, key, revoke, stdio_parameters, texts
from tests.servers import ROOT, child_env


def test_stdio_lists_and_calls_tools_with_the_key_from_an_env_var_and_stops_when_revoked(demo):
    token = key()

    async def scenario():
        parameters = stdio_parameters("OPENCLAW_TEST_KEY", env={"OPENCLAW_TEST_KEY": token})
        async with Client(parameters) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            listed = await client.call_tool("sessions_list", {"limit": 3})
            await db(revoke, token)
            after = await client.call_tool("sessions_list", {"limit": 3})
            return names, listed, after

    names, listed, after = asyncio.run(scenario())
    assert {"sessions_list", "sessions_history", "sessions_send", "agents_list"} <= names
    assert not listed.is_error and len(listed.structured_content["sessions"]) == 3
    assert json.loads(texts(listed)) == listed.structured_content
    assert after.is_error
    # Issue 29.6: what a stdio client can change is the variable, not an HTTP header.
    assert texts(after) == (
        "Invalid or missing API key: the environment variable OPENCLAW_TEST_KEY "
        "(--key OPENCLAW_TEST_KEY) does not hold a usable API key; set it to one "
        "(`manage.py create_api_key`)"
    )


def test_a_bad_key_refuses_to_start_with_a_message_on_stderr(demo):
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--key", "ocs_nope_nope"],
        cwd=ROOT,
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "Invalid or missing API key: --key is not a usable API key" in done.stderr
    assert "OPENCLAW_API_KEY" in done.stderr and "Authorization" not in done.stderr
    assert done.stdout == ""


def test_a_variable_without_a_usable_key_is_named_at_start(demo):
    done = subprocess.run(
        [sys.executable, "manage.py", "mcp", "--key", "OPENCLAW_TEST_KEY"],
        cwd=ROOT,
        env=child_env(OPENCLAW_TEST_KEY="ocs_nope_nope"),
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode != 0
    assert "the environment variable OPENCLAW_TEST_KEY (--key OPENCLAW_TEST_KEY)" in done.stderr
    assert "Authorization" not in done.stderr and done.stdout == ""


def test_the_console_script_serves_from_any_directory(demo, tmp_path):
    token = key()
    script = Path(sys.executable).parent / "openclaw-sessions-mcp"

    async def scenario():
        parameters = StdioServerParameters(
            command=str(script),
            args=["--key", "OPENCLAW_TEST_KEY"],
            cwd=str(tmp_path),
            env=child_env(OPENCLAW_TEST_KEY=token),
        )
        async with Client(parameters) as client:
            return await client.call_tool("agents_list", {})

    agents = asyncio.run(scenario())
    assert [a["id"] for a in agents.structured_content["agents"]] == ["main", "research"]


def test_stdio_resource_updates_hear_another_process_write_in_both_eras(demo):
    """The stdio process has its own live hub: it finds a write made by another process (here,
    this test) by polling, or through Redis when REDIS_URL is set."""
    token = key()
    uri = "session://agent:main:main"
    updated: asyncio.Queue = asyncio.Queue()

    async def on_message(message):
        if isinstance(message, types.ResourceUpdatedNotification):
            await updated.put(message.params.uri)

    def write(text):
        from tests.conftest import add_messages, user

        add_messages(Session.objects.get(key="agent:main:main"), user(text))

    async def handshake_era():
        parameters = stdio_parameters(token)
        async with Client(parameters, mode="legacy", message_handler=on_message) as client:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # resources/subscribe: the 2025 era's way
                await client.subscribe_resource(uri)
            await db(write, "from elsewhere")
            return await asyncio.wait_for(updated.get(), 10)

    async def listen_era():
        async with (
            Client(stdio_parameters(token)) as client,
            client.listen(resource_subscriptions=[uri]) as subscription,
        ):
            await db(write, "and again")
            async with asyncio.timeout(10):
                async for event in subscription:
                    return event.uri

    assert asyncio.run(handshake_era()) == uri
    assert asyncio.run(listen_era()) == uri
