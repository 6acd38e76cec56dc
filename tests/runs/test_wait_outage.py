"""A wait across a database outage (issue 16, item 13), against a real server on PostgreSQL: a
wait rides out a blip shorter than its timeout, and one the database is still away for at its
end is a JSON 503 with Retry-After and the runId to rejoin (not an HTML 500). (A read in the
web process waits up to 10 s for a pooled connection, so short outages are ridden out there.)"""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection

from tests.servers import database_refuses_connections

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="an outage of a database server (SQLite has none)"
    ),
]


def wait_during_outage(server, token, run_id, *, timeout: int, outage: float):
    result = {}

    def wait():
        result["response"] = server.request(
            "GET", f"/api/v1/runs/{run_id}/wait/?timeout={timeout}", token=token
        )

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.5)  # the wait has read the run once and is waiting
    with database_refuses_connections():
        time.sleep(outage)
    waiter.join(timeout=timeout + 30)
    return result["response"]


def test_a_wait_rides_out_a_blip_shorter_than_its_timeout(queued_send, running_server, main_token):
    # No worker: the run stays queued, the wait runs to its timeout.
    server, token, run_id = running_server, main_token, queued_send
    response = wait_during_outage(server, token, run_id, timeout=6, outage=2)
    assert response.status == 202 and response.json()["runId"] == run_id


def test_a_wait_that_ends_during_an_outage_is_a_503_with_the_run(
    queued_send, running_server, main_token
):
    # No worker: the run stays queued, the wait runs to its timeout.
    server, token, run_id = running_server, main_token, queued_send
    # Longer than the pool's 10-second wait for a connection, which rides out shorter ones.
    response = wait_during_outage(server, token, run_id, timeout=2, outage=13)
    assert response.status == 503
    assert response.headers["retry-after"] == "1"
    assert response.json() == {
        "ok": False,
        "error": {
            "type": "unavailable",
            "message": "the database is busy or unreachable; retry shortly",
        },
        "runId": run_id,
    }
