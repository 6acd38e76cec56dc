"""The run watchdog (issue 16, item 12): runs a dead worker left behind are dealt with within
seconds. In-process for the rules; across real processes for a worker killed with SIGKILL and
for a task the broker lost."""

from __future__ import annotations

import os
import signal
import time
import uuid
from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from openclaw_common import taskqueue
from sessions_app.models import Run
from sessions_app.runs import engine, watchdog
from sessions_app.runs.chain import Chain
from tests.conftest import make_session
from tests.servers import start_worker, wait_until
from tests.worlds import ANNOUNCE_SKIP, send_to_research


def queued_run(session, *, age: int = 60) -> Run:
    with transaction.atomic():
        run = engine.start_run(
            session=session, kind="ingest", message="hi", chain=Chain(uuid.uuid4(), ("main",))
        )
    Run.objects.filter(pk=run.pk).update(created_at=timezone.now() - timedelta(seconds=age))
    return run


@pytest.fixture
def session(agents):
    return make_session("agent:main:main")


def test_a_lost_queued_run_is_enqueued_again_once_per_interval(session, monkeypatch):
    enqueued = []
    monkeypatch.setattr(engine, "enqueue", enqueued.append)
    old = queued_run(session)
    young = queued_run(session, age=1)
    now = timezone.now()
    assert watchdog.requeue_orphans(now) == 1
    assert [r.pk for r in enqueued] == [old.pk]
    # A second watchdog (another worker process) looking at once finds it stamped.
    assert watchdog.requeue_orphans(now + timedelta(seconds=1)) == 0
    # Still unclaimed an interval later: once more (and the young one, now old enough).
    assert watchdog.requeue_orphans(now + timedelta(seconds=11)) == 2
    assert {r.pk for r in enqueued[1:]} == {old.pk, young.pk}


def test_a_run_waiting_on_purpose_is_left_alone(session, monkeypatch):
    monkeypatch.setattr(engine, "enqueue", lambda run: pytest.fail("deferred runs wait"))
    run = queued_run(session)
    Run.defer(run.pk)
    assert watchdog.requeue_orphans(timezone.now()) == 0


def test_a_running_run_without_heartbeat_is_ended_with_the_reason(session):
    run = queued_run(session)
    assert Run.claim(run.pk, worker="gone:1")
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=11))
    fresh = queued_run(session)
    assert Run.claim(fresh.pk, worker="alive:2")
    assert watchdog.end_dead_runs(timezone.now()) == 1
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error.startswith("the worker running this run stopped (no heartbeat for 10s)")
    assert Run.objects.get(pk=fresh.pk).status == Run.RUNNING


def test_no_heartbeat_is_judged_until_the_database_has_been_back_a_while(session, monkeypatch):
    run = queued_run(session)
    assert Run.claim(run.pk, worker="w:1")
    Run.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(seconds=30))
    dog = watchdog.Watchdog()
    assert dog.once()["dead"] == 0  # just (re)connected: the run's beats may be unwritten
    dog.healthy_since = time.monotonic() - watchdog.dead_after()
    assert dog.once()["dead"] == 1


# --- across real processes ------------------------------------------------------------------


@pytest.fixture
def research_rules() -> list[dict]:
    # A turn that outlasts the test, and a quick one (tests/worlds.py: the rest of the world).
    return [
        {"match": "slow", "delayMs": 60000, "reply": "never"},
        ANNOUNCE_SKIP,
        {"match": ".*", "reply": "here"},
    ]


def send(server, token, message: str) -> str:
    return send_to_research(server, token, message)["runId"]


def test_a_worker_killed_mid_run_is_noticed_within_seconds(two_agents, running_server, main_token):
    """SIGKILL of the worker process running a turn: another worker process's watchdog ends the
    run, with the true reason, well before the minute sweep would (it is not called here)."""
    server, token = running_server, main_token  # the worker: started by the test
    worker = start_worker(workers=2)
    try:
        run_id = send(server, token, "slow please")
        wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.RUNNING).exists(), timeout=20)
        pid = int(Run.objects.get(pk=run_id).worker.rsplit(":", 1)[1])
        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.ERROR).exists(), timeout=25)
        assert "no heartbeat for 10s" in Run.objects.get(pk=run_id).error
    finally:
        worker.stop()


def test_a_task_the_broker_lost_is_run_within_seconds(two_agents, running_server, main_token):
    server, token = running_server, main_token  # the worker: started by the test
    run_id = send(server, token, "quick one")  # no worker yet: its task waits in the broker
    taskqueue.broker().purge_queue()  # ...and is lost, as a killed worker's prefetched task is
    worker = start_worker(workers=1)
    try:
        wait_until(lambda: Run.objects.filter(pk=run_id, status=Run.OK).exists(), timeout=30)
        assert Run.objects.get(pk=run_id).attempts == 1  # run once
    finally:
        worker.stop()
