"""Every rule of the gate on every way in (sessions_app/api/gate.py, STYLE.md rule 14).

Each entrance is a small adapter of its own protocol (REST through DRF, the async send view,
`/tools/invoke`, a `/ws/` request frame, `/mcp/` over HTTP, `manage.py mcp`'s stdio server, a
model's own tool call) that turns its answer into a `Refusal(kind, text)`. Each rule builds one bad request; every entrance that can
carry it must refuse it the same way. A new entrance is one more row here, and one that forgets a
step fails its column.

The stdio server runs here over the MCP SDK's in-memory transport instead of a subprocess's
pipes (a subprocess per rule would cost a minute; tests/mcp/test_stdio.py runs the real one):
the server and its per-call admission are the ones `manage.py mcp` serves. Not here: a key's
revocation on an open `/ws/` connection, which has a test of its own below.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import connections
from django.test import Client
from mcp import Client as McpClient

from sessions_app.access import source_limit
from sessions_app.api import ratelimit
from sessions_app.lib.client_address import UNKNOWN
from sessions_app.live.hub import Hub
from sessions_app.mcp.server import build_server
from sessions_app.mcp.stdio import stdio_caller
from sessions_app.models import ApiKey, Run
from sessions_app.tools import offer
from tests.conftest import make_session, set_config
from tests.live.conftest import Client as WsClient
from tests.live.conftest import db as in_db
from tests.live.conftest import ws
from tests.mcp.asgi import Session as McpSession

pytestmark = pytest.mark.django_db(transaction=True)


def run(coro: Awaitable[Any]) -> Any:
    """`coro` on a loop of its own, whose live hub (started by a /ws/ connection: with Redis, a
    reader task) is stopped before the loop closes, as tests/live/conftest.py does per test."""

    async def main() -> Any:
        try:
            return await coro
        finally:
            for loop, hub in list(Hub._hubs.items()):
                if loop is asyncio.get_running_loop():
                    await hub.stop()

    try:
        return asyncio.run(main())
    finally:
        for connection in connections.all(initialized_only=True):
            if getattr(connection, "close_pool", None):
                connection.close_pool()  # (the live endpoints' threads' pooled connections)


TARGET = "agent:main:discord:group:dev"
DEEP_LEVELS = 300  # past the depth limit (64) and orjson's (255)


@dataclass(frozen=True)
class Refusal:
    kind: str  # unauthorized, rate_limited, too_large, invalid
    text: str = ""


KIND_OF_STATUS = {401: "unauthorized", 429: "rate_limited", 413: "too_large", 400: "invalid"}
KIND_OF_CODE = {"invalid_request": "invalid"}


def refusal_of_http(status: int, body: bytes) -> Refusal | None:
    if status < 400:
        return None
    try:
        message = json.loads(body)["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = body.decode(errors="replace")
    return Refusal(KIND_OF_STATUS.get(status, str(status)), message)


# --- the entrances --------------------------------------------------------------------------
# Each: (token, what) -> Refusal | None, where `what` is ("value", v): v in one of its string
# arguments; ("raw", bytes): the whole body; ("extra", name): a valid call plus an unknown name.


def _http(path: str, body_of: Callable[[Any], dict]) -> Callable[..., Awaitable[Refusal | None]]:
    async def call(token: str, what: tuple[str, Any]) -> Refusal | None:
        mode, value = what
        if mode == "raw":
            raw = value
        elif mode == "extra":
            raw = json.dumps({**body_of("ok"), value: 1}).encode()
        else:
            raw = json.dumps(body_of(value)).encode()

        def post():
            client = Client()
            return client.post(
                path, raw, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
            )

        response = await in_db(post)()
        return refusal_of_http(response.status_code, response.content)

    return call


rest_drf = _http("/api/v1/spawn/", lambda v: {"task": v})
rest_async = _http(
    f"/api/v1/sessions/{TARGET}/send/", lambda v: {"message": v, "timeoutSeconds": 0}
)
tools_invoke = _http("/tools/invoke", lambda v: {"tool": "sessions_list", "args": {"label": v}})


async def websocket(token: str, what: tuple[str, Any]) -> Refusal | None:
    """A connection that authenticates with its `connect` frame (an upgrade refused for its
    header can only say 403, or 429 where the server may answer HTTP: tests/access/
    test_limits.py), then one request frame."""
    mode, value = what
    communicator = ws()
    accepted, code = await communicator.connect()
    assert accepted, code
    try:
        client = WsClient(communicator)
        hello = await client.request("connect", {"auth": {"token": token}})
        if mode == "raw":
            await communicator.send_to(text_data=value.decode())
            frame = json.loads(await communicator.receive_from(timeout=5))
        elif hello["ok"]:
            params = {"label": value} if mode == "value" else {"label": "ok", value: 1}
            frame = await client.request("sessions.list", params)
        else:
            frame = hello
        if frame.get("ok"):
            return None
        error = frame["error"]
        return Refusal(KIND_OF_CODE.get(error["code"], error["code"]), error["message"])
    finally:
        await communicator.disconnect()


async def mcp_http(token: str, what: tuple[str, Any]) -> Refusal | None:
    mode, value = what
    session = McpSession(token)
    opened = await session.initialize()
    refused = refusal_of_http(opened.status, opened.body)
    if refused is not None:
        return refused
    if mode == "raw":
        return None  # (a JSON-RPC body is the SDK's to judge; the body rules are below)
    arguments = {"label": value} if mode == "value" else {"label": "ok", value: 1}
    answer = await session.call_tool("sessions_list", arguments)
    refused = refusal_of_http(answer.status, answer.body)
    if refused is not None:
        return refused
    result = answer.messages[-1]["result"]
    if not result.get("isError"):
        return None
    return Refusal("invalid", result["content"][0]["text"])


STDIO_KIND = {"unauthorized": "unauthorized", "rate_limited": "rate_limited"}


async def mcp_stdio(token: str, what: tuple[str, Any]) -> Refusal | None:
    """`manage.py mcp --key <token>`: its server and caller (mcp/stdio.py), in process."""
    mode, value = what
    if mode == "raw":
        return None  # (the stdio transport reads JSON-RPC lines: no body of ours to judge)
    arguments = {"label": value} if mode == "value" else {"label": "ok", value: 1}
    async with McpClient(build_server(stdio_caller(token, None, token))) as client:
        result = await client.call_tool("sessions_list", arguments)
    if not result.is_error:
        return None
    kind = STDIO_KIND.get((result.structured_content or {}).get("type"), "invalid")
    return Refusal(kind, result.content[0].text)


async def model_call(token: str, what: tuple[str, Any]) -> Refusal | None:
    """A run's own tool call (tools/offer.call_tool), as a model backend makes it."""
    mode, value = what
    arguments = {"label": value} if mode == "value" else {"label": "ok", value: 1}

    def call():
        run = Run.objects.filter(session__key=TARGET).first()
        return offer.call_tool(run, "sessions_list", arguments)

    details = await in_db(call)()
    if details.get("status") in (None, "ok") and "error" not in details:
        return None
    return Refusal("invalid", details["error"])


ENTRANCES = {
    "rest (DRF)": rest_drf,
    "rest (async)": rest_async,
    "/tools/invoke": tools_invoke,
    "/ws/": websocket,
    "/mcp/": mcp_http,
    "/mcp/ over stdio": mcp_stdio,
    "a model's tool call": model_call,
}
HTTP = {"rest (DRF)", "rest (async)", "/tools/invoke", "/mcp/"}
REST = {"rest (DRF)", "rest (async)"}
KEYED = set(ENTRANCES) - {"a model's tool call"}  # a run's calls carry no key of their own


def deep(levels: int) -> Any:
    value: Any = "x"
    for _ in range(levels):
        value = [value]
    return value


# --- the rules ------------------------------------------------------------------------------
# name -> (the entrances it applies to, prepare(key, settings) -> what, the expected refusal)


def revoked(api_key: ApiKey, settings) -> tuple[str, Any]:
    api_key.revoke()
    return ("value", "ok")


def over_rate(api_key: ApiKey, settings) -> tuple[str, Any]:
    settings.OPENCLAW_API_RATE_LIMIT = 5
    # Windows are aligned to the clock: one this long has no edge for the test to cross.
    settings.OPENCLAW_API_RATE_WINDOW_SECONDS = 10**9
    for _ in range(5):
        ratelimit.check_rate(api_key.pk)
    return ("value", "ok")


def failed_source(api_key: ApiKey, settings) -> tuple[str, Any]:
    """The address the request comes from has failed its key checks: the (valid, but never
    served here) key is not even looked up."""
    settings.OPENCLAW_SOURCE_AUTH_FAILURES = 2
    settings.OPENCLAW_SOURCE_WINDOW_SECONDS = 10**9  # (no window edge to cross)
    # Django's test client and MCP's come from 127.0.0.1; channels' WebsocketCommunicator sets
    # no client address, which counts as the unknown source (a real server always has one).
    for source in ("127.0.0.1", UNKNOWN):
        for _ in range(2):
            source_limit.failed(source)
    return ("value", "ok")


def oversize(api_key: ApiKey, settings) -> tuple[str, Any]:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 4096
    return ("value", "x" * 8000)


RULES: dict[str, tuple[set[str], Callable[..., tuple[str, Any]], Refusal]] = {
    "a revoked key": (KEYED, revoked, Refusal("unauthorized")),
    "a key over its rate": (KEYED, over_rate, Refusal("rate_limited")),
    "a source over its failed key checks": (
        # A stdio server is a local process its user started: it has no address to count by.
        KEYED - {"/mcp/ over stdio"},
        failed_source,
        Refusal("rate_limited", "too many failed API key checks from"),
    ),
    "an oversize body": (HTTP, oversize, Refusal("too_large")),
    "a NUL": (
        set(ENTRANCES),
        lambda key, settings: ("value", "a\u0000b"),
        Refusal("invalid", "NUL"),
    ),
    # (The MCP SDK's in-memory client cannot serialize 300 levels, so the stdio column takes
    # the next rule only: past our limit, within every parser's.)
    "a 300-deep value": (
        set(ENTRANCES) - {"/mcp/ over stdio"},
        lambda key, settings: ("value", deep(DEEP_LEVELS)),
        Refusal("invalid", "deeper than 64 levels"),
    ),
    "a 100-deep value": (
        set(ENTRANCES),
        lambda key, settings: ("value", deep(100)),
        Refusal("invalid", "deeper than 64 levels"),
    ),
    "an unknown field in a REST body": (
        REST,
        lambda key, settings: ("extra", "bogus"),
        Refusal("invalid", "bogus"),
    ),
    "a body that is not a JSON object": (
        REST | {"/tools/invoke", "/ws/"},
        lambda key, settings: ("raw", b"[1, 2]"),
        Refusal("invalid", "object"),
    ),
}

# Where an entrance's own protocol refuses first, with its own text, before the gate sees it.
PROTOCOL_TEXT = {
    # The MCP SDK parses the JSON-RPC body itself, and refuses nesting past its parser's limit
    # (a 100-deep argument reaches the gate: tests/mcp/test_http_limits.py).
    ("a 300-deep value", "/mcp/"): "recursion limit exceeded",
}

CASES = [
    pytest.param(rule, entrance, id=f"{rule} | {entrance}")
    for rule, (entrances, _, _) in RULES.items()
    for entrance in ENTRANCES
    if entrance in entrances
]


@pytest.fixture
def world(agents):
    # Particular: a running run on the target (the model-call entrance calls tools as that run).
    make_session(TARGET)
    Run.objects.create(session=make_session(TARGET), kind="send", status=Run.RUNNING)
    api_key, token = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])
    return api_key, token


@pytest.mark.parametrize(("rule", "entrance"), CASES)
def test_every_rule_on_every_entrance(rule, entrance, world, settings):
    api_key, token = world
    _, prepare, expected = RULES[rule]
    what = prepare(api_key, settings)
    refused = run(ENTRANCES[entrance](token, what))
    assert refused is not None, f"{entrance} let {rule} through"
    assert refused.kind == expected.kind, (entrance, rule, refused)
    assert PROTOCOL_TEXT.get((rule, entrance), expected.text) in refused.text, (entrance, refused)


def test_the_table_covers_every_entrance_with_every_rule_it_can_carry():
    carried = {
        entrance: {r for r, (es, _, _) in RULES.items() if entrance in es} for entrance in ENTRANCES
    }
    assert all(len(rules) >= 2 for rules in carried.values()), carried
    assert carried["rest (DRF)"] == set(RULES)


def test_an_open_connection_is_admitted_again_for_each_request(world, settings):
    """A `/ws/` connection authenticated once: its key's revocation and rate still hold on the
    next frame (the hub's periodic recheck closes it later; the frame does not wait for that)."""
    api_key, token = world
    settings.OPENCLAW_API_RATE_WINDOW_SECONDS = 10**9  # (no window edge to cross)

    async def frames():
        communicator = ws(token)
        accepted, code = await communicator.connect()
        assert accepted, code
        client = WsClient(communicator)
        try:
            served = await client.request("sessions.list", {})
            settings.OPENCLAW_API_RATE_LIMIT = 2  # the upgrade and the frame above were 2
            over = await client.request("sessions.list", {})
            settings.OPENCLAW_API_RATE_LIMIT = 0
            await in_db(api_key.revoke)()
            revoked = await client.request("sessions.list", {})
            return served, over, revoked
        finally:
            await communicator.disconnect()

    served, over, revoked = run(frames())
    assert served["ok"] is True
    assert over["error"]["code"] == "rate_limited"
    assert revoked["error"] == {"code": "unauthorized", "message": revoked["error"]["message"]}
    assert "API key" in revoked["error"]["message"]


# --- the argument policy of a tool call ---------------------------------------------------------


def test_an_unknown_argument_answers_as_without_it_on_every_way_a_tool_is_called(world):
    """OpenClaw 2026.9.6 ignores a tool call's unknown argument, so a client written against a
    newer OpenClaw keeps working (tools/declaration.Declaration.known logs it once); a REST body
    stays a closed object (the table above)."""
    set_config(visibility="agent")  # (so the list holds the target session)
    _, token = world
    with_it = {"limit": 5, "fromANewerOpenClaw": True}
    without = {"limit": 5}

    async def rows(entrance, args) -> list[str]:
        if entrance == "/tools/invoke":

            def post():
                body = json.dumps({"tool": "sessions_list", "args": args})
                response = Client().post(
                    "/tools/invoke",
                    body,
                    content_type="application/json",
                    HTTP_AUTHORIZATION=f"Bearer {token}",
                )
                return response.json()["result"]["details"]

            details = await in_db(post)()
        elif entrance == "/ws/":
            communicator = ws(token)
            await communicator.connect()
            try:
                details = (await WsClient(communicator).request("sessions.list", args))["payload"]
            finally:
                await communicator.disconnect()
        elif entrance == "/mcp/":
            session = McpSession(token)
            await session.initialize()
            answer = await session.call_tool("sessions_list", args)
            details = answer.messages[-1]["result"]["structuredContent"]
        elif entrance == "/mcp/ over stdio":
            async with McpClient(build_server(stdio_caller(token, None, token))) as client:
                details = (await client.call_tool("sessions_list", args)).structured_content
        else:

            def call():
                run = Run.objects.filter(session__key=TARGET).first()
                return offer.call_tool(run, "sessions_list", args)

            details = await in_db(call)()
        return [row["key"] for row in details["sessions"]]

    for entrance in ("/tools/invoke", "/ws/", "/mcp/", "/mcp/ over stdio", "a model's tool call"):
        listed = run(rows(entrance, with_it))
        assert listed == run(rows(entrance, without)), entrance
        assert TARGET in listed, entrance
