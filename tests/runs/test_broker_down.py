"""The broker is down (issue 16, item 10): a send, an ingest with a run and a delivery still
answer as usual, since what they stored has committed; the failed enqueue is logged, never an
HTML 500. Once the broker is back, the watchdog hands the run to the workers, and the minute
sweep sends the delivery (its row is pending and due)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone
from django_q.brokers.orm import ORM

from openclaw_common import taskqueue
from sessions_app.delivery import enqueue_delivery
from sessions_app.models import Delivery, Run
from sessions_app.runs import sweeper, watchdog
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


def test_a_delivery_made_while_the_broker_is_down_goes_out_when_it_is_back(
    agents, broker_down, monkeypatch, caplog
):
    """An outbox row is committed with the change that made it; its task is only a hint. With
    the broker down the enqueue fails after commit (logged), the row stays pending and due,
    and the sweep sends it once the broker is back: nothing is lost."""
    session = make_session("agent:main:main", channel="webchat")
    with transaction.atomic():
        delivery = enqueue_delivery(session=session, text="the answer", kind="reply")
    assert "Connection refused" in caplog.text  # the enqueue after commit failed, logged
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.PENDING, 0)
    monkeypatch.undo()  # the broker is back
    assert sweeper.sweep()["deliveries"] == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == (Delivery.SENT, 1)


def test_a_run_whose_reply_is_delivered_finishes_with_the_broker_down(
    ingest, agents, broker_down, monkeypatch
):
    """ingest run=true: the run's finish enqueues its reply's delivery on the broker, which is
    down; the run still ends ok with its reply, and the delivery goes out after."""
    make_session("agent:main:main", channel="webchat")
    response = ingest.post(
        "/api/v1/sessions/main/messages/", {"messages": [user("hi")], "run": True}
    )
    assert response.status_code == 201, response.content
    drain()  # a worker runs it (its own enqueues fail too)
    run = Run.objects.get(pk=response.json()["run"]["runId"])
    assert run.status == Run.OK and run.reply
    (delivery,) = Delivery.objects.filter(run=run)
    assert (delivery.kind, delivery.status, delivery.text) == ("reply", Delivery.PENDING, run.reply)
    monkeypatch.undo()
    sweeper.sweep()
    delivery.refresh_from_db()
    assert delivery.status == Delivery.SENT
