"""Reset and delete while a run is active, across real processes: an HTTP server, a django-q2
worker running a slow scripted turn, and the test as client.

What happens (docs/sessions-admin.md): a reset is refused while a run of the session is queued
or running (its reply would land in the fresh transcript); abort first, then reset. A delete
archives first, which aborts the session's work, then deletes; the worker's turn ends without
writing anything back."""

from __future__ import annotations

import time

import pytest

from sessions_app.models import Message, Run, Session
from tests.conftest import make_agent, make_session, set_config
from tests.servers import wait_until

pytestmark = pytest.mark.django_db(transaction=True)

WORK = "agent:main:work"
RULES = [
    {"match": "slow", "on": ["ingest"], "delayMs": 60_000, "reply": "late"},
    {"match": ".*", "on": ["ingest"], "reply": "fast reply"},
]


@pytest.fixture
def worker_processes() -> int:
    return 1


@pytest.fixture
def main_alone():
    # Particular: main alone, scripted for ingest, with two sessions of its own.
    set_config(visibility="agent")  # the operator's abort goes through the send guard
    make_agent("main", backend={"type": "scripted", "rules": RULES})
    make_session(WORK)
    make_session("agent:main:other")


@pytest.fixture
def world(main_alone, running_server, running_worker, operator_token, ingest_token):
    # The data first, then the processes (tests/worlds.py).
    return {"server": running_server, "operator": operator_token, "ingest": ingest_token}


def ingest(w, key: str, text: str) -> Run:
    response = w["server"].request(
        "POST",
        f"/api/v1/sessions/{key}/messages/",
        body={"messages": [{"role": "user", "content": text}], "run": True},
        token=w["ingest"],
    )
    assert response.status == 201, response.body
    return Run.objects.get(pk=response.json()["run"]["runId"])


def call(w, method: str, path: str, body=None):
    return w["server"].request(method, path, body=body, token=w["operator"])


def test_reset_while_a_run_is_active_is_refused_then_works_after_abort(world):
    slow = ingest(world, WORK, "slow please")
    wait_until(lambda: Run.objects.filter(pk=slow.pk, status=Run.RUNNING).exists())
    old_id = Session.objects.get(key=WORK).session_id

    refused = call(world, "POST", f"/api/v1/sessions/{WORK}/reset/", {})
    assert refused.status == 400
    assert refused.json()["error"]["message"] == (
        f"Session {WORK} has a run in progress. Abort it first, then reset it."
    )
    assert call(world, "POST", f"/api/v1/sessions/{WORK}/abort/", {}).status == 200
    wait_until(lambda: Run.objects.get(pk=slow.pk).status == Run.ABORTED)

    reset = call(world, "POST", f"/api/v1/sessions/{WORK}/reset/", {})
    assert reset.status == 200, reset.body
    assert reset.json()["previousSessionId"] == old_id

    fast = ingest(world, WORK, "hello again")
    wait_until(lambda: Run.objects.get(pk=fast.pk).status == Run.OK)
    session = Session.objects.get(key=WORK)
    texts = [m.to_transcript()["content"] for m in session.messages.order_by("seq")]
    assert texts[0] == "hello again" and len(texts) == 2  # the new transcript only
    old = Session.objects.get(session_id=old_id)
    assert old.archived and old.messages.filter(role="user").first().to_transcript()["content"] == (
        "slow please"
    )
    assert Run.objects.get(pk=slow.pk).session_id == old.pk


def test_delete_while_a_run_is_active_aborts_it_then_deletes(world):
    slow = ingest(world, WORK, "slow please")
    wait_until(lambda: Run.objects.filter(pk=slow.pk, status=Run.RUNNING).exists())
    session = Session.objects.get(key=WORK)
    response = call(
        world,
        "POST",
        "/tools/invoke",
        {
            "tool": "sessions",
            "args": {
                "action": "delete",
                "sessionKey": WORK,
                "expectedSessionId": session.session_id,
            },
        },
    )
    assert response.status == 200, response.body
    assert response.json()["result"]["details"]["deleted"] is True
    assert not Session.objects.filter(key=WORK).exists()
    assert not Run.objects.filter(pk=slow.pk).exists()
    # The worker's turn noticed and ended; nothing came back, and the worker goes on working.
    time.sleep(1.5)
    assert not Session.objects.filter(key=WORK).exists()
    assert not Message.objects.filter(session_id=session.pk).exists()
    fast = ingest(world, "agent:main:other", "next")
    wait_until(lambda: Run.objects.get(pk=fast.pk).status == Run.OK)
