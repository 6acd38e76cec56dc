"""The per-key request limit also counts WebSocket authentications (issue 16)."""

from __future__ import annotations

import pytest

from .conftest import connected, ws

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.asyncio]


async def test_websocket_authentication_counts_against_the_rate_limit(settings, operator):
    settings.OPENCLAW_API_RATE_LIMIT = 2
    async with connected(operator.token) as client:  # 1: header auth
        assert (await client.request("sessions.list", {"limit": 1}))["ok"]
    async with connected() as client:  # 2: first-frame auth
        hello = await client.request("connect", {"auth": {"token": operator.token}})
        assert hello["ok"]
    accepted, _ = await ws(operator.token).connect()  # 3: refused at the handshake
    assert not accepted
    async with connected() as client:
        refused = await client.request("connect", {"auth": {"token": operator.token}})
    assert refused["error"]["code"] == "rate_limited"
    assert "at most 2 requests per 60 s" in refused["error"]["message"]
