"""Waiting holds no database connection (issue 16, item 14), against a real server on
PostgreSQL with a pool of 2: four waits and four SSE followers are open, and another client's
requests still get a connection. Before: each wait kept the connection its key lookup had
checked out (asgiref runs each request's sync steps on a thread of its own, and a thread keeps
its connection until the request ends), the pool emptied, and the other client got 503 after
the pool's timeout."""

from __future__ import annotations

import threading
import urllib.request

import pytest
from django.db import connection

from tests.servers import wait_until

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql",
        reason="the connection pool is PostgreSQL's (SQLite opens a file per thread)",
    ),
]

HELD = 4  # twice the pool


@pytest.fixture
def server_env() -> dict[str, str]:
    # A pool of 2 for the server; no worker: the run stays queued and every wait runs to its
    # timeout (tests/worlds.py queued_send).
    return {"DB_POOL_MAX": "2", "DB_POOL_TIMEOUT": "3"}


def open_sse(server, token: str, opened: list) -> None:
    request = urllib.request.Request(
        server.url + "/api/v1/sessions/agent:research:main/history/?follow=1",
        headers={"Authorization": f"Bearer {token}", "Accept": "text/event-stream"},
    )
    reply = urllib.request.urlopen(request, timeout=30)
    reply.readline()  # "retry: 1000": the view has run and the stream is open
    opened.append(reply)


def test_waits_and_followers_leave_the_pool_to_other_clients(
    queued_send, running_server, main_token
):
    server, token, run_id = running_server, main_token, queued_send
    waits = [
        threading.Thread(
            target=server.request,
            args=("GET", f"/api/v1/runs/{run_id}/wait/?timeout=8"),
            kwargs={"token": token},
        )
        for _ in range(HELD)
    ]
    for thread in waits:
        thread.start()
    streams: list = []
    for _ in range(HELD):
        open_sse(server, token, streams)
    wait_until(lambda: len(streams) == HELD)
    try:
        # Each of these needs a pooled connection for its key lookup and its query; with the
        # pool held by the waits and the streams it would wait 3 s and answer 503.
        for _ in range(3):
            response = server.request("GET", "/api/v1/sessions/?limit=5", token=token)
            assert response.status == 200, response.body
    finally:
        for stream in streams:
            stream.close()
        for thread in waits:
            thread.join(timeout=30)
