"""Live-update tests: the ASGI app in-process (Channels' WebsocketCommunicator) and, where the
behaviour crosses processes, a real server and worker (tests/servers.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json

import pytest
import pytest_asyncio
from channels.testing import WebsocketCommunicator
from django.db import connections

from openclaw_site.asgi import application
from sessions_app.live.consumer import in_thread
from sessions_app.live.hub import Hub


@pytest_asyncio.fixture(autouse=True)
async def _stop_hubs():
    """Each test has its own event loop, so its own hub: stop it with the loop."""
    yield
    for loop, hub in list(Hub._hubs.items()):
        if loop is asyncio.get_running_loop():
            await hub.stop()
    # Threads of the live endpoints hand their connections back to the PostgreSQL pool: close
    # it (no-op without a pool).
    for connection in connections.all(initialized_only=True):
        if getattr(connection, "close_pool", None):
            connection.close_pool()


@pytest.fixture(scope="session", autouse=True)
def _no_leftover_sessions(django_db_setup, django_db_blocker):
    """Django's async test client runs each request's sync code on a thread that ends with the
    request while its database connection stays open. Before the test database is dropped,
    end whatever sessions are left (PostgreSQL; nothing to do on SQLite)."""
    yield
    from django.db import connection

    with django_db_blocker.unblock():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture(autouse=True)
def _fast_live(settings):
    settings.LIVE_POLL_SECONDS = 0.1
    settings.LIVE_POLL_SECONDS_WITH_REDIS = 0.5
    settings.LIVE_AUTH_RECHECK_SECONDS = 0.2


def ws(token: str | None = None, *, headers=None, path="/ws/") -> WebsocketCommunicator:
    all_headers = list(headers or [])
    if token:
        all_headers.append((b"authorization", f"Bearer {token}".encode()))
    return WebsocketCommunicator(application, path, headers=all_headers)


class Client:
    """A connected WebsocketCommunicator with request/response helpers."""

    def __init__(self, communicator: WebsocketCommunicator):
        self.ws = communicator
        self.next_id = 0
        self.events: list[dict] = []

    async def request(self, method: str, params: dict | None = None, *, timeout=5) -> dict:
        self.next_id += 1
        request_id = f"r{self.next_id}"
        frame = {"type": "req", "id": request_id, "method": method}
        if params is not None:
            frame["params"] = params
        await self.ws.send_to(text_data=json.dumps(frame))
        while True:
            frame = json.loads(await self.ws.receive_from(timeout=timeout))
            if frame["type"] == "res" and frame["id"] == request_id:
                return frame
            self.events.append(frame)

    async def event(self, *, timeout=5) -> dict:
        if self.events:
            return self.events.pop(0)
        return json.loads(await self.ws.receive_from(timeout=timeout))

    async def events_until(self, predicate, *, timeout=5) -> list[dict]:
        seen = []
        while True:
            frame = await self.event(timeout=timeout)
            seen.append(frame)
            if predicate(frame):
                return seen

    async def nothing(self, timeout=0.3) -> bool:
        return not self.events and await self.ws.receive_nothing(timeout=timeout)


@contextlib.asynccontextmanager
async def connected(token: str | None = None, **kwargs):
    communicator = ws(token, **kwargs)
    accepted, code = await communicator.connect()
    assert accepted, code
    try:
        yield Client(communicator)
    finally:
        await communicator.disconnect()


def db(fn):
    """Run ORM code from an async test (a pool thread, committed: the hub reads it), closing
    the thread's connection after, as the live endpoints do."""
    return in_thread(fn)
