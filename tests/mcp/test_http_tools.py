"""/mcp/ over streamable HTTP with the SDK's own client: the registry's tools, the key's rules."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from django.conf import settings
from mcp.shared.exceptions import MCPError

from sessions_app.models import ApiKey
from sessions_app.tools import TOOLS
from tests.mcp.helpers import db, http_client, key, revoke, texts


def run(coro):
    return asyncio.run(coro)


def test_lists_every_registry_tool_with_its_declared_schemas_and_calls_them(demo_server):
    token = key()

    async def scenario():
        async with http_client(demo_server, token) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            for tool in TOOLS:
                assert tools[tool.name].input_schema == tool.declaration.parameters()
                assert tools[tool.name].output_schema == tool.declaration.result
            listed = await client.call_tool(
                "sessions_list", {"kinds": ["group"], "messageLimit": 1}
            )
            history = await client.call_tool("sessions_history", {"sessionKey": "main"})
            # 9.6 §0: the snake_case spelling too, though the schema names only sessionKey.
            snake = await client.call_tool("sessions_history", {"session_key": "main"})
            agents = await client.call_tool("agents_list", {})
            return client.protocol_version, listed, history, agents, snake

    version, listed, history, agents, snake = run(scenario())
    assert not snake.is_error and snake.structured_content == history.structured_content
    assert not listed.is_error
    rows = listed.structured_content["sessions"]
    assert rows and {row["kind"] for row in rows} == {"group"}
    # The text is what /tools/invoke's envelope carries: the details as pretty JSON.
    assert json.loads(texts(listed)) == listed.structured_content
    assert history.structured_content["messages"]
    assert [a["id"] for a in agents.structured_content["agents"]] == ["main", "research"]
    assert version  # whichever era the client and server agreed on


def test_the_legacy_handshake_era_works_too(demo_server):
    token = key()

    async def scenario():
        async with http_client(demo_server, token, mode="legacy") as client:
            listed = await client.call_tool("sessions_list", {"limit": 1})
            return client.protocol_version, listed

    version, listed = run(scenario())
    assert version.startswith("2025")
    assert (
        listed.structured_content["limitApplied"] == 1
        or len(listed.structured_content["sessions"]) == 1
    )


def test_bad_arguments_and_refusals_are_error_results_naming_the_problem(demo_server):
    pinned = key(session_key="agent:main:main", sandboxed=True)
    outsider_agent = key(agent_id="research")
    plain = key()

    async def scenario():
        async with http_client(demo_server, plain) as client:
            bad = await client.call_tool("sessions_list", {"activeMinutes": -3})
            unknown_arg = await client.call_tool("sessions_list", {"nope": 1})
            missing = await client.call_tool("sessions_send", {"sessionKey": "main"})
        async with http_client(demo_server, pinned) as client:
            hidden = await client.call_tool(
                "sessions_history", {"sessionKey": "agent:research:main"}
            )
        async with http_client(demo_server, outsider_agent) as client:
            as_main = await client.call_tool("sessions_list", {})
        async with http_client(
            demo_server, outsider_agent, headers={"X-OpenClaw-Session-Key": "agent:main:main"}
        ) as client:
            not_mine = await client.call_tool("sessions_list", {})
        return bad, unknown_arg, missing, hidden, as_main, not_mine

    bad, unknown_arg, missing, hidden, as_main, not_mine = run(scenario())
    assert bad.is_error and texts(bad) == "activeMinutes must be a positive integer"
    # A name the tool does not take is ignored, as by every way a tool is called (OpenClaw 9.6).
    assert not unknown_arg.is_error and unknown_arg.structured_content["sessions"] is not None
    assert missing.is_error and texts(missing) == "message required"
    assert hidden.is_error and hidden.structured_content["status"] == "forbidden"
    assert not as_main.is_error
    assert not_mine.is_error and "may not act as session agent:main:main" in texts(not_mine)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_a_key_revoked_mid_session_stops_on_the_next_call(demo_server, mode):
    token = key()

    async def scenario():
        async with http_client(demo_server, token, mode=mode) as client:
            first = await client.call_tool("agents_list", {})
            await db(revoke, token)
            try:
                await client.call_tool("agents_list", {})
            except Exception as exc:  # the transport reports the 401
                return first, exc
            return first, None

    first, error = run(scenario())
    assert not first.is_error
    assert error is not None, "the call after the revocation went through"
    assert isinstance(error, MCPError)  # the transport's report of the 401


def test_no_key_or_a_bad_key_is_401_with_the_api_text(demo_server):
    for token in (None, "ocs_nope_nope"):
        response = demo_server.request(
            "POST",
            "/mcp/",
            body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            token=token,
        )
        assert response.status == 401
        assert response.json()["error"]["message"] == (
            "Invalid or missing API key: send Authorization: Bearer <api key>"
        )
        headers = {name.lower(): value for name, value in response.headers.items()}
        assert headers["www-authenticate"].startswith("Bearer")


def test_malformed_requests_get_4xx_never_a_500(demo_server):
    token = key()
    accept = {"Accept": "application/json, text/event-stream"}
    modern = {**accept, "MCP-Protocol-Version": "2026-07-28"}
    cases = [
        (b"not json", accept),
        (b"[]", accept),
        (b'{"jsonrpc": "2.0"}', accept),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5}}', accept),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call"}', modern),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "nope/nope", "params": {}}', modern),
        (b"\xff\xfe", modern),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}', {}),  # no Accept
    ]
    for body, headers in cases:
        response = demo_server.request("POST", "/mcp/", body=body, token=token, headers=headers)
        assert 400 <= response.status < 500, (body[:80], response.status, response.body[:300])
    stale = demo_server.request(
        "POST",
        "/mcp/",
        body={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        token=token,
        headers={**accept, "Mcp-Session-Id": "0" * 32},
    )
    assert stale.status == 404
    assert demo_server.request("GET", "/mcp/elsewhere", token=token).status == 404
    # A body past the API's limit (MAX_BODY_BYTES; the server process reads the same
    # environment) is refused from its declared length, unread.
    too_large = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1
    host, port = demo_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\n"
            + f"Authorization: Bearer {token}\r\nContent-Length: {too_large}\r\n\r\n".encode()
        )
        assert sock.recv(64).startswith(b"HTTP/1.1 413")


def test_an_unknown_tool_is_a_protocol_error(demo_server):
    token = key()

    async def scenario():
        async with http_client(demo_server, token) as client:
            try:
                await client.call_tool("no_such_tool", {})
            except MCPError as exc:
                return exc
        return None

    error = run(scenario())
    assert error is not None and "Tool not available: no_such_tool" in error.message


def test_a_session_is_bound_to_the_key_that_opened_it(demo_server):
    """Another valid key presenting a legacy session's id is told the session does not exist."""
    first, second = key(), key(agent_id="research")
    accept = {"Accept": "application/json, text/event-stream"}
    opened = demo_server.request(
        "POST",
        "/mcp/",
        body={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"},
            },
        },
        token=first,
        headers=accept,
    )
    assert opened.status == 200
    session_id = {k.lower(): v for k, v in opened.headers.items()}["mcp-session-id"]
    stolen = demo_server.request(
        "POST",
        "/mcp/",
        body={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        token=second,
        headers={**accept, "Mcp-Session-Id": session_id},
    )
    assert stolen.status == 404


def test_an_ingest_key_may_not_act_as_a_session(demo_server):
    token = key(ApiKey.INGEST)

    async def scenario():
        async with http_client(demo_server, token) as client:
            return await client.call_tool("sessions_list", {})

    result = run(scenario())
    assert result.is_error
    assert texts(result) == "An ingest key cannot act as a session; use an agent or operator key"
