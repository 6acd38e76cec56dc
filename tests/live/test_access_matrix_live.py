"""The authorization matrix over the live ways in: SSE (`history/?follow=1`) and the WebSocket
(`/ws/`, header auth and first-frame `connect`), with the oracle of
tests/access/test_access_matrix.py."""

from __future__ import annotations

import pytest
from django.test import AsyncClient

from tests.access.test_access_matrix import (  # noqa: F401  (fixtures: principals, world)
    ACTING,
    CRON,
    PRINCIPALS,
    SESSIONS,
    acts_as,
    configure,
    may_read,
    principals,
    url,
    world,
)

from .conftest import Client, db, ws

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def sse_outcome(token: str, acting: str | None, target: str) -> str:
    headers = {"Authorization": f"Bearer {token}"}
    if acting:
        headers["X-OpenClaw-Session-Key"] = acting
    response = await AsyncClient().get(url(target, "history/") + "?follow=1", headers=headers)
    if response.status_code == 200:
        await response.streaming_content.__aiter__().aclose()
        return "ok"
    return {403: "forbidden"}.get(response.status_code, str(response.status_code))


# The session RPCs that read or manage one session (9.6 §2.4), each with a harmless call.
SESSION_RPCS = {
    "sessions.get": lambda target: {"key": target, "limit": 1},
    "chat.history": lambda target: {"sessionKey": target, "limit": 1},
    "sessions.preview": lambda target: {"keys": [target]},
    "sessions.patch": lambda target: {"key": target, "pinned": False},
}


async def rpc_outcomes(client: Client, target: str) -> dict[str, str]:
    out = {}
    for method, params in SESSION_RPCS.items():
        res = await client.request(method, params(target))
        if method == "sessions.preview" and res["ok"]:
            # A session the caller may not see is `missing`, as one that does not exist.
            (preview,) = res["payload"]["previews"]
            out[method] = "forbidden" if preview["status"] == "missing" else "ok"
        else:
            out[method] = "ok" if res["ok"] else res["error"]["code"]
    return out


async def ws_outcomes(
    token: str, acting: str | None, *, first_frame: bool, rpcs: bool = False
) -> dict | str:
    """{target: "ok" | "forbidden"}, or "refused" when the connection may not act as `acting`."""
    headers = []
    if acting and not first_frame:
        headers.append((b"x-openclaw-session-key", acting.encode()))
    communicator = ws(None if first_frame else token, headers=headers)
    accepted, _ = await communicator.connect()
    if not accepted:
        return "refused"
    client = Client(communicator)
    try:
        if first_frame:
            params = {"auth": {"token": token}, **({"sessionKey": acting} if acting else {})}
            hello = await client.request("connect", params)
            if not hello["ok"]:
                assert hello["error"]["code"] == "forbidden", hello
                return "refused"
        out = {}
        for target in SESSIONS:
            res = await client.request("sessions.messages.subscribe", {"key": target})
            out[target] = "ok" if res["ok"] else res["error"]["code"]
            if res["ok"]:
                await client.request("sessions.messages.unsubscribe", {"key": target})
            if rpcs:
                out.update(
                    {(target, m): o for m, o in (await rpc_outcomes(client, target)).items()}
                )
        return out
    finally:
        await communicator.disconnect()


@pytest.mark.parametrize("config", ["tree", "all"])
async def test_live_ways_in_follow_the_matrix(principals, world, config):  # noqa: F811
    await db(configure)(config)
    failures, count = [], 0
    for principal in PRINCIPALS:
        token = principals[principal].token
        for acting in ACTING:
            act = acts_as(principal, acting)
            expected = {
                t: "ok" if act and may_read(principal, act, t, config) else "forbidden"
                for t in SESSIONS
            }
            for target in SESSIONS:
                got = await sse_outcome(token, acting, target)
                count += 1
                if got != expected[target]:
                    failures.append(("sse", principal, acting, target, got))
            for first_frame in (False, True):
                # The session RPCs on the header-authenticated connection (a refused one has
                # none to call: it is closed at the handshake, or its `connect` refused).
                got = await ws_outcomes(
                    token, acting, first_frame=first_frame, rpcs=not first_frame
                )
                want = "refused" if act is None else dict(expected)
                if act is not None and not first_frame:
                    want.update({(t, m): expected[t] for t in SESSIONS for m in SESSION_RPCS})
                    if principal == "operator":  # the gateway's owner manages any session
                        want.update({(t, "sessions.patch"): "ok" for t in SESSIONS})
                count += 1 if got == "refused" else len(got)  # the answers received
                if got != want:
                    failures.append(("ws", first_frame, principal, acting, repr(got)))
    assert not failures, failures
    pairs = len(PRINCIPALS) * len(ACTING)
    allowed = sum(1 for p in PRINCIPALS for a in ACTING if acts_as(p, a) is not None)
    # SSE: one answer per target. The WebSocket, twice (header auth, first frame): one refusal,
    # or a subscribe per target, and on the header-authenticated one each session RPC per target.
    assert count == (
        pairs * len(SESSIONS)
        + (pairs - allowed) * 2
        + allowed * (2 * len(SESSIONS) + len(SESSIONS) * len(SESSION_RPCS))
    )


async def test_a_key_sandboxed_while_acting_as_another_session_is_closed(principals, world):  # noqa: F811
    """Sandboxing applies to open connections too: one acting as the cron session (allowed
    when it opened) is closed, as a new connection would be refused."""
    from sessions_app.models import ApiKey

    from .conftest import connected

    token = principals["agent"].token
    async with connected(token, headers=[(b"x-openclaw-session-key", CRON.encode())]) as client:
        res = await client.request("sessions.messages.subscribe", {"key": CRON})
        assert res["ok"], res
        await db(
            lambda: ApiKey.objects.filter(
                scope="agent", agent_id="main", session_key="", sandboxed=False
            ).update(sandboxed=True)
        )()
        closed = await client.ws.receive_output(timeout=3)
    assert closed["code"] == 4403 and closed["reason"] == "access revoked: sandboxed"


async def test_a_connection_newer_than_the_access_check_is_not_closed(principals, world):  # noqa: F811
    """The periodic access check reads keys from a snapshot of the connections; one that
    authenticated after the snapshot is checked next time, not taken for revoked."""
    from sessions_app.access.identity import requester_for
    from sessions_app.live.hub import _access, _recheck
    from sessions_app.live.subscribers import Subscriber
    from sessions_app.models import ApiKey

    def build():
        key = ApiKey.objects.get(scope="agent", agent_id="main", sandboxed=False, session_key="")
        subscriber = Subscriber(requester_for(key), api_key_id=key.pk)
        return subscriber, _access(set(), set(), set())  # a snapshot taken before it connected

    subscriber, access = await db(build)()
    _recheck(subscriber, access)
    assert subscriber.closing is None


# --- MCP (/mcp/ over HTTP, in-process) ----------------------------------------------------------

MCP_VERSION = "2026-07-28"  # one POST per call, no MCP session to open first


async def mcp_history(http, token: str, acting: str | None, target: str) -> str:
    """A tools/call of sessions_history: "ok", "forbidden" (the tool's refusal), or "refused"
    (the key may not act as `acting`)."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": MCP_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "sessions_history",
    }
    if acting:
        headers["X-OpenClaw-Session-Key"] = acting
    meta = {
        "io.modelcontextprotocol/protocolVersion": MCP_VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "sessions_history",
            "arguments": {"sessionKey": target, "limit": 1},
            "_meta": meta,
        },
    }
    response = await http.post("/mcp/", json=body, headers=headers)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    if not result["isError"]:
        return "ok"
    details = result["structuredContent"]
    if details.get("type") == "forbidden":
        return "refused"
    return "forbidden" if details.get("status") == "forbidden" else repr(details)


@pytest.mark.parametrize("config", ["tree", "all"])
async def test_mcp_follows_the_matrix(principals, world, config):  # noqa: F811
    import httpx2

    from openclaw_site.asgi import application

    await db(configure)(config)
    transport = httpx2.ASGITransport(app=application)
    failures, count = [], 0
    async with httpx2.AsyncClient(transport=transport, base_url="http://localhost") as http:
        for principal in PRINCIPALS:
            token = principals[principal].token
            for acting in ACTING:
                act = acts_as(principal, acting)
                for target in SESSIONS:
                    if act is None:
                        want = "refused"
                    else:
                        want = "ok" if may_read(principal, act, target, config) else "forbidden"
                    got = await mcp_history(http, token, acting, target)
                    count += 1
                    if got != want:
                        failures.append((principal, acting, target, got))
    assert not failures, failures
    assert count == len(PRINCIPALS) * len(ACTING) * len(SESSIONS)
