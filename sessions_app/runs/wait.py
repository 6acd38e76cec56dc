"""Waiting for a run in async code, holding no thread and no database connection between reads.

The database is the truth; a hint only says "read it now". With REDIS_URL, each event loop keeps
one Redis connection subscribed to every run's finish channel (`openclaw:run:*`) and wakes the
waits of this process from it: no connection or SUBSCRIBE per wait, and a wait reads the run
when its hint arrives (and every second, in case a hint was lost). Without Redis, on SQLite, the
hint is a version file beside the database that each event loop reads every 5 ms while it has
waits (TokenHub). On PostgreSQL without Redis, or while Redis is unreachable, a wait reads the
run after 50 ms, then 1.5× less often, at least every 0.5 s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError

from openclaw_common.dbstep import release_connection

from ..lib import rawsql
from ..lib.shared_version import RUNS_FINISHED
from ..models import Run
from . import outage
from .notify import RUN_CHANNEL_PREFIX

log = logging.getLogger("openclaw.runs")

POLL_SECONDS = 0.05  # without hints: the first reads, then slower (a long wait costs less)
MAX_POLL_SECONDS = 0.5
HINTED_POLL_SECONDS = 1.0  # with hints: a lost one costs at most this
TOKEN_POLL_SECONDS = 0.005  # without Redis, on SQLite: how often the finish version is read
CONNECT_TIMEOUT_SECONDS = 2
RETRY_AFTER_SECONDS = 5  # after Redis failed, poll for this long before connecting again
UNAVAILABLE_RETRY_SECONDS = 0.5  # the database unreachable during a wait: read again after


def _load(run_id: uuid.UUID | str, fields: tuple[str, ...] | None = None) -> Run | None:
    try:
        if fields:
            # A caller that needs a few columns (a send's wait reads status, reply and error)
            # skips the session join, most of the model building and the queryset: plain SQL.
            return rawsql.first(Run, "t.id = %s", [rawsql.prep(Run, "id", run_id)], fields=fields)
        return Run.objects.filter(pk=run_id).select_related("session").first()
    finally:
        # A wait may last minutes; it must not hold a database connection (with the pool this
        # hands it back, so a thousand waiters need no thousand connections).
        release_connection()


class WaitUnavailable(Exception):
    """The run could not be read (the database is unreachable): the API answers 503 with the
    run's id, so the client can rejoin it with GET /api/v1/runs/{id}/wait/."""

    def __init__(self, run_id: uuid.UUID | str) -> None:
        super().__init__(str(run_id))
        self.run_id = str(run_id)


def _read(run_id: uuid.UUID | str, fields: tuple[str, ...] | None = None) -> Run | None:
    try:
        return _load(run_id, fields)
    except DatabaseError as exc:
        if not outage.is_connection_lost(exc):
            raise
        raise WaitUnavailable(run_id) from exc


class HintHub:
    """The finish hints of one event loop: one pub/sub connection, pattern-subscribed, whose
    reader task sets the asyncio.Event of every wait registered for the run."""

    def __init__(self) -> None:
        self.waiters: dict[str, set[asyncio.Event]] = {}
        self.task: asyncio.Task[None] | None = None
        self.ready: asyncio.Future[bool] | None = None  # set with `task`: is it subscribed?
        self.retry_at = 0.0

    async def subscribe(self, run_id: str) -> asyncio.Event | None:
        """An event set when the run's finish hint arrives; None when there are no hints (call
        unsubscribe() either way). Registered before it returns, so a hint published after
        this call is never missed."""
        event = asyncio.Event()
        self.waiters.setdefault(run_id, set()).add(event)
        if await self._connected():
            return event
        self.unsubscribe(run_id, event)
        return None

    def unsubscribe(self, run_id: str, event: asyncio.Event | None) -> None:
        events = self.waiters.get(run_id)
        if events is not None and event is not None:
            events.discard(event)
            if not events:
                del self.waiters[run_id]

    async def stop(self) -> None:
        """Close the connection (the hub starts again on the next wait)."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done()

    async def _connected(self) -> bool:
        loop = asyncio.get_running_loop()
        if not self.alive:
            if loop.time() < self.retry_at:
                return False
            self.ready = loop.create_future()
            self.task = loop.create_task(self._listen(self.ready), name="openclaw-run-hints")
        ready = self.ready
        assert ready is not None  # alive: started with its `ready` above or before
        try:
            return await asyncio.wait_for(asyncio.shield(ready), CONNECT_TIMEOUT_SECONDS)
        except TimeoutError:
            return False

    async def _listen(self, ready: asyncio.Future[bool]) -> None:
        import redis.asyncio as aioredis

        loop = asyncio.get_running_loop()
        client = aioredis.Redis.from_url(
            settings.REDIS_URL, socket_connect_timeout=CONNECT_TIMEOUT_SECONDS
        )
        pubsub = client.pubsub()
        prefix = RUN_CHANNEL_PREFIX.encode()
        try:
            await pubsub.psubscribe(RUN_CHANNEL_PREFIX + "*")
            async for message in pubsub.listen():
                if message["type"] == "pmessage":
                    run_id = message["channel"][len(prefix) :].decode()
                    for event in self.waiters.get(run_id, ()):
                        event.set()
                elif message["type"] == "psubscribe" and not ready.done():
                    ready.set_result(True)
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("run finish hints unavailable; waits poll the database", exc_info=True)
            self.retry_at = loop.time() + RETRY_AFTER_SECONDS
        finally:
            if not ready.done():
                ready.set_result(False)
            # Wake every wait: each reads its run once more, then polls (the hub is gone).
            for events in self.waiters.values():
                for event in events:
                    event.set()
            with contextlib.suppress(Exception):
                await pubsub.aclose()
                await client.aclose()


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, HintHub] = weakref.WeakKeyDictionary()


def hint_hub() -> HintHub:
    """The hub of the running event loop (a Redis connection belongs to one loop)."""
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = HintHub()
    return hub


class TokenHub:
    """The finish hints of one event loop without Redis, on SQLite: one task reads the
    run-finish version (a file beside the database, lib/shared_version.RUNS_FINISHED: one
    `pread`, no database) every TOKEN_POLL_SECONDS while waits are registered, and wakes all of
    them when it moved; each then reads its run. So a reply is reported milliseconds after it
    is stored, where the database polls of a wait were up to half a second apart."""

    def __init__(self) -> None:
        self.waiters: set[asyncio.Event] = set()
        self.task: asyncio.Task[None] | None = None
        self.last: bytes | None = None

    async def subscribe(self, run_id: str) -> asyncio.Event | None:
        token = RUNS_FINISHED.read_shared()
        if not token:  # PostgreSQL without Redis, or a database of this process alone
            return None
        event = asyncio.Event()
        self.waiters.add(event)
        if not self.alive:
            self.last = token  # before the caller goes on: a finish from now on is a change
            self.task = asyncio.get_running_loop().create_task(
                self._watch(), name="openclaw-run-token"
            )
        return event

    def unsubscribe(self, run_id: str, event: asyncio.Event | None) -> None:
        if event is not None:
            self.waiters.discard(event)

    @property
    def alive(self) -> bool:
        return self.task is not None and not self.task.done()

    async def _watch(self) -> None:
        while self.waiters:
            await asyncio.sleep(TOKEN_POLL_SECONDS)
            token = RUNS_FINISHED.read_shared()
            if token != self.last:
                self.last = token
                for event in list(self.waiters):
                    event.set()


_token_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, TokenHub] = (
    weakref.WeakKeyDictionary()
)


def token_hub() -> TokenHub:
    loop = asyncio.get_running_loop()
    hub = _token_hubs.get(loop)
    if hub is None:
        hub = _token_hubs[loop] = TokenHub()
    return hub


@contextlib.asynccontextmanager
async def _hint(
    run_id: str,
) -> AsyncIterator[tuple[HintHub | TokenHub | None, asyncio.Event | None]]:
    hub: HintHub | TokenHub = hint_hub() if settings.REDIS_URL else token_hub()
    event = None
    try:
        event = await hub.subscribe(run_id)
        yield hub, event
    finally:
        hub.unsubscribe(run_id, event)


async def wait_for_run(
    run_id: uuid.UUID | str,
    timeout: float,
    *,
    fields: tuple[str, ...] | None = None,
    just_started: bool = False,
    listening: Callable[[], Awaitable[None]] | None = None,
) -> Run | None:
    """The run once finished, or as it stands when `timeout` seconds have passed.

    `fields` limits what is read (see _load). `just_started`: the caller created the run a
    moment ago, so the first read is skipped and the wait starts on the hint (a hint that came
    before the subscription costs one safety-poll interval, never a wrong answer).
    `listening`: called once the wait listens for the run's hint (a send enqueues its run
    then, so the reply cannot come before the wait hears of it).
    """
    load = partial(_read, run_id, fields)
    if timeout <= 0:
        if listening is not None:
            await listening()
        return await sync_to_async(load)()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    poll = POLL_SECONDS
    async with _hint(str(run_id)) as (hub, event):
        if listening is not None:
            await listening()
        skip_read = just_started and event is not None
        while True:
            if not skip_read:
                try:
                    run = await sync_to_async(load)()
                except WaitUnavailable:
                    # The database is away: keep waiting (it may be back before the
                    # deadline); at the deadline, say so with the run to rejoin.
                    if loop.time() >= deadline:
                        raise
                    await asyncio.sleep(min(UNAVAILABLE_RETRY_SECONDS, deadline - loop.time()))
                    continue
                if run is None or run.finished or loop.time() >= deadline:
                    return run
            skip_read = False
            remaining = deadline - loop.time()
            if event is not None and hub is not None and hub.alive:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), min(HINTED_POLL_SECONDS, remaining))
                event.clear()
            else:
                # No hints (SQLite, or Redis away): 50 ms at first, then 1.5× longer each time
                # up to 0.5 s, so 10,000 waiters do not read the run 200,000 times a second.
                await asyncio.sleep(min(poll, remaining))
                poll = min(poll * 1.5, MAX_POLL_SECONDS)
