"""Waiting for a run in async code, holding no thread and no database connection: poll the run by
primary key, and wake early on a Redis pub/sub hint when REDIS_URL is set. On the embedded
default the poll (50 ms doubling to 250 ms) carries it; with Redis the hint arrives in
milliseconds."""

from __future__ import annotations

import asyncio
import contextlib

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connection

from ..models import Run
from .notify import run_channel

MAX_POLL_SECONDS = 0.25


def _load(run_id):
    try:
        return Run.objects.select_related("session").filter(pk=run_id).first()
    finally:
        # A wait may last minutes; it must not hold a database connection (with the pool this
        # hands it back, so a thousand waiters need no thousand connections).
        connection.close()


@contextlib.asynccontextmanager
async def _hints(run_id):
    """A subscription to the run's finish hint, or None without Redis (or if Redis is down)."""
    if not settings.REDIS_URL:
        yield None
        return
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
    pubsub = client.pubsub()
    try:
        await pubsub.subscribe(run_channel(run_id))
    except Exception:
        await client.aclose()
        yield None
        return
    try:
        yield pubsub
    finally:
        with contextlib.suppress(Exception):
            await pubsub.aclose()
            await client.aclose()


async def wait_for_run(run_id, timeout: float) -> Run | None:
    """The run once finished, or as it stands when `timeout` seconds have passed."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(0.0, timeout)
    async with _hints(run_id) as hints:
        interval = 0.05
        while True:
            run = await sync_to_async(_load)(run_id)
            remaining = deadline - loop.time()
            if run is None or run.finished or remaining <= 0:
                return run
            pause = min(interval, remaining)
            hint = None
            if hints is not None:
                try:
                    hint = await hints.get_message(ignore_subscribe_messages=True, timeout=pause)
                except Exception:
                    hints = None  # Redis went away: keep polling
            if hint is None:
                if hints is None:
                    await asyncio.sleep(pause)
                interval = min(interval * 2, MAX_POLL_SECONDS)
