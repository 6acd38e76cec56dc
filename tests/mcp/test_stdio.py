"""`manage.py mcp` on stdio, started by the SDK's own stdio client as a desktop client would."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.live import ROOT, child_env
from tests.mcp.helpers import db, key, revoke, stdio_parameters, texts


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
    assert texts(after) == "Invalid or missing API key: send Authorization: Bearer <api key>"


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
    assert "Invalid or missing API key" in done.stderr
    assert done.stdout == ""


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
