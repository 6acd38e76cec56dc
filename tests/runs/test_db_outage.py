"""A run rides out a short database outage (issue 16, item 11): PostgreSQL refuses every
connection to the test database for a few seconds (ALLOW_CONNECTIONS false, and every other
backend terminated, as a restart does) while a real worker runs a turn. The run finishes ok,
with its reply, not "worker stopped (no heartbeat)". Before, the turn's abort check raised on
the dead connection, the run could not even record the error, and the sweep later ended it with
a false reason."""

from __future__ import annotations

import time

import pytest
from django.db import connection

from sessions_app.models import Run
from tests.live import (
    database_refuses_connections,
    start_server,
    start_worker,
    wait_until,
)
from tests.live_world import ANNOUNCE_SKIP, main_and_research, send_to_research

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def world():
    if connection.vendor != "postgresql":
        pytest.skip("an outage of a database server (SQLite has none)")
    token = main_and_research(
        [
            {"match": "long", "delayMs": 9000, "reply": "made it through"},
            {"match": "short", "delayMs": 2000, "reply": "finished in the dark"},
            ANNOUNCE_SKIP,
        ]
    )
    server = start_server()
    worker = start_worker()
    yield server, token
    worker.stop()
    server.stop()


def start(server, token, message: str) -> str:
    return send_to_research(server, token, message)["runId"]


@pytest.mark.parametrize(
    ("message", "seconds", "reply"),
    [
        ("a long turn", 5, "made it through"),  # the outage falls inside the turn
        ("a short turn", 6, "finished in the dark"),  # the turn ends during it: the finish waits
    ],
)
def test_a_run_rides_out_a_database_outage(world, message, seconds, reply):
    server, token = world
    run_id = start(server, token, message)
    wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.RUNNING).exists(), timeout=20)
    with database_refuses_connections():
        time.sleep(seconds)
    wait_until(
        lambda: Run.objects.filter(pk=run_id).exclude(status__in=["queued", "running"]).exists(),
        timeout=60,
    )
    run = Run.objects.get(pk=run_id)
    assert (run.status, run.error) == ("ok", "")
    assert run.reply == reply


def test_the_heartbeat_beats_again_after_the_outage(world):
    server, token = world
    run_id = start(server, token, "a long turn")
    wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.RUNNING).exists(), timeout=20)
    with database_refuses_connections():
        time.sleep(2)
    back = Run.objects.get(pk=run_id).heartbeat_at
    # The next beat (every 2 s) lands while the 9-second turn still runs: the sweep would not
    # take the worker for dead.
    wait_until(
        lambda: Run.objects.filter(pk=run_id, status=Run.RUNNING, heartbeat_at__gt=back).exists(),
        timeout=15,
    )
    wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.OK).exists(), timeout=60)
