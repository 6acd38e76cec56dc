"""The API keys' noted uses are written at a request's end without keeping a connection (issue
28, found by bench/soak.py). Under Django's handler a sync view's request_finished receivers run
on the request's own thread, after Django's close_old_connections: the UPDATE that writes
`last_used_at` opened a connection there that nobody closed, and the thread ended with it. With
the PostgreSQL pool that lost one of its places for good, once a minute per key: the soak's
server (a pool of 10) answered every request 503 after 10 minutes."""

from __future__ import annotations

import threading

import pytest
from django.core.signals import request_finished
from django.db import connection

from sessions_app.access import key_cache
from sessions_app.models import ApiKey


@pytest.mark.django_db(transaction=True)
def test_the_noted_uses_written_at_a_requests_end_leave_no_connection_open(agents):
    key, token = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])
    assert key_cache.authenticate(token) is not None
    assert key_cache.touches_due()  # its first use: to be written at the request's end
    seen: dict[str, object] = {}

    def request_thread() -> None:
        # What Django's handler does on a sync view's thread once the response has gone.
        request_finished.send(sender=None)
        seen["connection left open"] = connection.connection is not None
        connection.close()

    thread = threading.Thread(target=request_thread)
    thread.start()
    thread.join()
    assert seen == {"connection left open": False}
    key.refresh_from_db()
    assert key.last_used_at is not None  # written all the same
