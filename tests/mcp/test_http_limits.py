"""/mcp/ answers to the API's limits as every other way in does: the key's request rate, the body
size, and what a column can store (NUL characters, nesting depth) in tool arguments."""

from __future__ import annotations

import asyncio

import pytest

from sessions_app.models import ApiKey, Session
from tests.conftest import make_session
from tests.mcp.asgi import Session as McpSession
from tests.mcp.asgi import post

pytestmark = pytest.mark.django_db(transaction=True)

DEV = "agent:main:discord:group:dev"


def run(coro):
    return asyncio.run(coro)


def agent_key(agents) -> str:
    return ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])[1]


def invoke_headers(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}", "content-type": "application/json"}


def assert_rate_limited(answer, limit: int) -> None:
    assert answer.status == 429
    assert answer.headers["content-type"] == "application/json"
    assert 1 <= int(answer.headers["retry-after"]) <= 60  # the rest of the 60 s window
    error = answer.json()["error"]
    assert answer.json()["ok"] is False and error["type"] == "rate_limited"
    assert f"at most {limit} requests per 60 s for this API key" in error["message"]


# --- the key's request rate -------------------------------------------------------------------


def test_mcp_requests_count_against_the_keys_request_rate(settings, agents):
    settings.OPENCLAW_API_RATE_LIMIT = 3
    token = agent_key(agents)

    async def scenario():
        mcp = McpSession(token)
        opened = await mcp.initialize()  # 1, and notifications/initialized: 2
        listed = await mcp.call_tool("sessions_list", {})  # 3
        refused = await mcp.call_tool("sessions_list", {})  # 4: past the limit
        # One count per key, whichever way in: /tools/invoke is past it too.
        invoked = await post("/tools/invoke", {"tool": "agents_list"}, invoke_headers(token))
        return opened, listed, refused, invoked

    opened, listed, refused, invoked = run(scenario())
    assert opened.status == 200 and listed.status == 200
    assert listed.messages[-1]["result"]["isError"] is False
    assert_rate_limited(refused, 3)
    assert_rate_limited(invoked, 3)


def test_a_key_past_its_rate_on_tools_invoke_is_refused_on_mcp_alike(settings, agents):
    settings.OPENCLAW_API_RATE_LIMIT = 2
    token = agent_key(agents)

    async def scenario():
        invoked = [
            await post("/tools/invoke", {"tool": "agents_list"}, invoke_headers(token))
            for _ in range(3)
        ]
        opened = await McpSession(token).initialize()
        return invoked, opened

    invoked, opened = run(scenario())
    assert [answer.status for answer in invoked] == [200, 200, 429]
    assert_rate_limited(opened, 2)
    assert opened.json() == invoked[-1].json()  # the API's words, not the SDK's


def test_unauthenticated_mcp_requests_are_401_and_not_counted(settings, agents):
    settings.OPENCLAW_API_RATE_LIMIT = 1
    token = agent_key(agents)

    async def scenario():
        bad = [await McpSession("not-a-key").initialize() for _ in range(3)]
        return bad, await McpSession(token).initialize()

    bad, opened = run(scenario())
    assert {answer.status for answer in bad} == {401}
    assert opened.status == 200


# --- the body size ---------------------------------------------------------------------------


def test_a_body_over_the_upload_limit_is_413_as_on_tools_invoke(settings, agents):
    token = agent_key(agents)
    pad = "x" * 5000

    async def scenario():
        mcp = McpSession(token)
        await mcp.initialize()
        # Lowered after the session (and the SDK's session manager) started: the limit is the
        # setting as it is now, as on the API.
        settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 2000
        declared = await mcp.call_tool("sessions_list", {"search": pad})
        streamed = await mcp.call_tool(
            "sessions_list", {"search": pad}, chunk=700, declare_length=False
        )
        fits = await mcp.call_tool(
            "sessions_list", {"search": "x" * 100}, chunk=50, declare_length=False
        )
        invoked = await post(
            "/tools/invoke",
            {"tool": "sessions_list", "args": {"search": pad}},
            invoke_headers(token),
        )
        return declared, streamed, fits, invoked

    declared, streamed, fits, invoked = run(scenario())
    assert invoked.status == 413
    for refused in (declared, streamed):
        assert refused.status == 413
        assert (
            refused.json()
            == invoked.json()
            == {
                "ok": False,
                "error": {
                    "type": "payload_too_large",
                    "message": "request body is larger than the limit",
                },
            }
        )
    assert fits.status == 200 and fits.messages[-1]["result"]["isError"] is False


def test_a_body_under_the_upload_limit_is_not_refused_by_the_sdks_own_4_mib(settings, agents):
    """The SDK refuses bodies over 4 MiB of its own; the API takes up to MAX_BODY_BYTES (8 MiB
    by default), and so does /mcp/."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 6 * 1024 * 1024
    token = agent_key(agents)
    many = ["x" * 1000] * 5000  # ~5 MB of arguments

    async def scenario():
        mcp = McpSession(token)
        await mcp.initialize()
        return await mcp.call_tool("sessions_list", {"kinds": many})

    answer = run(scenario())
    assert answer.status == 200
    result = answer.messages[-1]["result"]
    # Read and answered by the tool (which names its own complaint), not refused at the door.
    assert result["isError"] is True and "kinds" in result["structuredContent"]["error"]


# --- what a column can store ------------------------------------------------------------------


def test_nul_characters_and_over_deep_arguments_are_tool_errors_and_nothing_is_stored(
    agents, operator
):
    make_session(DEV, label="before")
    deep: list = []
    for _ in range(100):
        deep = [deep]

    async def scenario():
        mcp = McpSession(operator.token)
        await mcp.initialize()
        nul = await mcp.call_tool(
            "sessions", {"action": "patch", "sessionKey": DEV, "label": "a\u0000b"}
        )
        nul_name = await mcp.call_tool(
            "sessions", {"action": "patch", "sessionKey": DEV, "label\u0000": "x"}
        )
        too_deep = await mcp.call_tool("sessions_list", {"kinds": deep})
        return nul, nul_name, too_deep

    nul, nul_name, too_deep = run(scenario())
    expected = [
        (nul, "arguments.label must not contain NUL characters"),
        (nul_name, "field name arguments.label\x00 must not contain NUL characters"),
        (too_deep, "arguments nests objects and arrays deeper than 64 levels (the limit is 64)"),
    ]
    for answer, text in expected:
        # An input error is a tool result with isError (a model can read it and correct
        # itself), as the tools' own argument errors are.
        assert answer.status == 200
        result = answer.messages[-1]["result"]
        assert result["isError"] is True
        assert result["structuredContent"] == {
            "status": "error",
            "error": text,
            "type": "tool_error",
        }
        assert result["content"] == [{"type": "text", "text": text}]
    assert Session.objects.get(key=DEV).label == "before"
