"""Live hints leave a process even when it exits right after its commit (a management command, a
script): the publisher flushes at exit. Needs Redis (without it hints never leave a process)."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import get_channel_layer
from django.conf import settings

from sessions_app.lib import hints
from tests.servers import manage

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.skipif(not settings.REDIS_URL, reason="hints cross processes through Redis"),
]


async def _received(layer, channel) -> list:
    message = await asyncio.wait_for(layer.receive(channel), 10)
    return [tuple(h) for h in message["hints"]]


async def test_a_process_that_exits_after_its_commit_still_sends_its_hints():
    layer = get_channel_layer()
    channel = await layer.new_channel("test-hints.")
    await layer.group_add(hints.GROUP, channel)
    try:
        code = "from sessions_app.lib.hints import publish; publish([(424242, 'messages', 7)])"
        await asyncio.to_thread(manage, "shell", "-c", code)
        assert await _received(layer, channel) == [(424242, "messages", 7)]
    finally:
        await layer.group_discard(hints.GROUP, channel)


async def test_flush_waits_until_what_was_put_is_published():
    layer = get_channel_layer()
    channel = await layer.new_channel("test-hints.")
    await layer.group_add(hints.GROUP, channel)
    try:
        publisher = hints._Publisher.get()
        publisher.put([(424243, "run", None)])
        assert await asyncio.to_thread(publisher.flush, 10)
        assert await _received(layer, channel) == [(424243, "run", None)]
    finally:
        await layer.group_discard(hints.GROUP, channel)
