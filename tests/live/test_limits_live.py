"""The per-key request limit counts WebSocket authentications and each request frame of a
key's connection (issue 16; an open socket is no way round the key's rate)."""

from __future__ import annotations

import pytest

from .conftest import connected, ws

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_websocket_authentication_counts_against_the_rate_limit(settings, operator):
    settings.OPENCLAW_API_RATE_LIMIT = 3
    async with connected(operator.token) as client:  # 1: header auth
        assert (await client.request("sessions.list", {"limit": 1}))["ok"]  # 2: a frame
    async with connected() as client:
        hello = await client.request("connect", {"auth": {"token": operator.token}})  # 3
        assert hello["ok"]
    accepted, _ = await ws(operator.token).connect()  # 4: refused at the handshake
    assert not accepted
    async with connected() as client:
        refused = await client.request("connect", {"auth": {"token": operator.token}})
    assert refused["error"]["code"] == "rate_limited"
    assert "at most 3 requests per 60 s" in refused["error"]["message"]


async def test_each_request_frame_counts_and_the_connection_stays(settings, operator):
    settings.OPENCLAW_API_RATE_LIMIT = 3
    async with connected(operator.token) as client:  # 1: the upgrade's authentication
        first = await client.request("sessions.list", {"limit": 1})  # 2
        second = await client.request("sessions.groups.list", {})  # 3
        refused = await client.request("sessions.list", {"limit": 1})  # 4: past the rate
        again = await client.request("sessions.list", {"limit": 1})  # still refused, still open
    assert first["ok"] and second["ok"]
    for res in (refused, again):
        assert res["error"]["code"] == "rate_limited"
        assert res["error"]["message"].startswith(
            "rate limit exceeded: at most 3 requests per 60 s for this API key"
        )
