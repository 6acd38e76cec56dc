"""The authorization matrix over the live ways in: SSE (`history/?follow=1`) and the WebSocket
(`/ws/`, header auth and first-frame `connect`), with the oracle of
tests/sessions_app/test_access_matrix.py."""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

from tests.sessions_app.test_access_matrix import (  # noqa: F401  (fixtures: principals, world)
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


async def ws_outcomes(token: str, acting: str | None, *, first_frame: bool) -> dict | str:
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
                got = await ws_outcomes(token, acting, first_frame=first_frame)
                count += len(SESSIONS)
                want = "refused" if act is None else expected
                if got != want:
                    failures.append(("ws", first_frame, principal, acting, json.dumps(got)))
    assert not failures, failures
    assert count == len(PRINCIPALS) * len(ACTING) * len(SESSIONS) * 3


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
    from sessions_app.identity import requester_for
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
