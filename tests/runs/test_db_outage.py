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
from django.test import Client

from sessions_app.models import Run
from tests.conftest import Api, make_agent
from tests.servers import database_refuses_connections, start_worker, wait_until
from tests.worlds import ANNOUNCE_SKIP, send_to_research

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="an outage of a database server (SQLite has none)"
    ),
]


@pytest.fixture
def research_rules() -> list[dict]:
    # A turn long enough for the outage to fall inside it, and one that ends during it.
    return [
        {"match": "long", "delayMs": 9000, "reply": "made it through"},
        {"match": "short", "delayMs": 2000, "reply": "finished in the dark"},
        ANNOUNCE_SKIP,
    ]


def start(server, token, message: str) -> str:
    return send_to_research(server, token, message)["runId"]


@pytest.mark.parametrize(
    ("message", "seconds", "reply"),
    [
        ("a long turn", 5, "made it through"),  # the outage falls inside the turn
        ("a short turn", 6, "finished in the dark"),  # the turn ends during it: the finish waits
    ],
)
def test_a_run_rides_out_a_database_outage(live_world, message, seconds, reply):
    server, token = live_world.server, live_world.token
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


def test_the_heartbeat_beats_again_after_the_outage(live_world):
    server, token = live_world.server, live_world.token
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


# --- an outage longer than the bound (RUN_DB_OUTAGE_SECONDS) ----------------------------------


@pytest.fixture
def short_bound(two_agents, main_token):
    """A worker that rides out outages of 1 s only; no server (the send is made here)."""
    # research scripted again: shorter turns than the module's, and a warm-up.
    research = [
        {"match": "long", "delayMs": 6000, "reply": "never said"},
        {"match": "short", "delayMs": 500, "reply": "never stored"},
        {"match": "warm", "reply": "warm"},
        ANNOUNCE_SKIP,
    ]
    make_agent("research", backend={"type": "scripted", "rules": research})
    api = Api(Client(), main_token)
    worker = start_worker(workers=1, env={"RUN_DB_OUTAGE_SECONDS": "1"})
    # A first turn imports what a turn needs: the measured one is then in its model call, not
    # in a second of imports, when the database goes.
    warm = send(api, "warm")
    wait_until(lambda: Run.objects.filter(pk=warm, status=Run.OK).exists(), timeout=30)
    yield api
    worker.stop()


def send(api: Api, message: str) -> str:
    details = api.details(
        "sessions_send",
        {"sessionKey": "agent:research:main", "message": message, "timeoutSeconds": 0},
    )
    return details["runId"]


@pytest.mark.parametrize(
    ("message", "during"),
    [
        ("a long turn", "during the turn"),  # the abort check gives up
        ("a short turn", "while the run finished"),  # the finishing transaction gives up
    ],
)
def test_a_run_failing_past_the_bound_says_the_database_was_unreachable(
    short_bound, message, during
):
    """Away for 4 s, four times the bound and past the failure's own try at being written: the
    run ends `error` saying the database was unreachable, once it is back, never that its
    worker stopped (the worker's watchdog writes the ending it kept)."""
    run_id = send(short_bound, message)
    wait_until(
        lambda: Run.objects.filter(pk=run_id, status=Run.RUNNING).exists(),
        timeout=20,
        interval=0.01,
    )
    with database_refuses_connections():
        time.sleep(4)
    wait_until(
        lambda: Run.objects.filter(pk=run_id).exclude(status__in=["queued", "running"]).exists(),
        timeout=30,
    )
    run = Run.objects.get(pk=run_id)
    assert run.status == Run.ERROR, (run.status, run.reply)
    assert run.error.startswith(f"the database was unreachable for 1s {during}: "), run.error
    assert "heartbeat" not in run.error and run.reply in ("", None)
