"""The broker is down (issue 16, item 10): a send, an ingest with a run and a delivery still
answer as usual, since what they stored has committed; the failed enqueue is logged, never an
HTML 500, and the watchdog hands the run to the workers once the broker is back."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_q.brokers.orm import ORM

from openclaw_common import taskqueue
from sessions_app.models import Run
from sessions_app.runs import watchdog
from tests.conftest import make_session, set_config, user
from tests.runs.helpers import drain

pytestmark = pytest.mark.django_db(transaction=True)


class DownBroker(ORM):
    """A broker whose server does not answer (Redis down, the queue table unreachable)."""

    def enqueue(self, task):
        raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")


@pytest.fixture
def broker_down(monkeypatch):
    monkeypatch.setattr(taskqueue, "broker", lambda: DownBroker())


@pytest.fixture
def research_main(agents):
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=0)
    make_session("agent:main:main")
    return make_session("agent:research:main")


def test_a_send_is_accepted_and_runs_once_the_broker_is_back(
    agent_main, research_main, broker_down, monkeypatch, caplog
):
    result = agent_main.details(
        "sessions_send",
        {"sessionKey": "agent:research:main", "message": "hello", "timeoutSeconds": 0},
    )
    assert result["status"] == "accepted"
    run = Run.objects.get(pk=result["runId"])
    assert run.status == Run.QUEUED
    assert "Connection refused" in caplog.text  # logged, not raised
    monkeypatch.undo()  # the broker is back
    later = timezone.now() + timedelta(seconds=watchdog.orphan_after() + 1)
    assert watchdog.requeue_orphans(later) >= 1
    drain()
    assert Run.objects.get(pk=run.pk).status == Run.OK


def test_an_ingested_message_with_a_run_is_stored_and_answered_201(
    ingest, research_main, broker_down
):
    response = ingest.post(
        "/api/v1/sessions/main/messages/", {"messages": [user("hi")], "run": True}
    )
    assert response.status_code == 201, response.content
    assert response.json()["run"]["status"] == "accepted"
    assert Run.objects.get(pk=response.json()["run"]["runId"]).status == Run.QUEUED
