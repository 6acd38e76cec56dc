"""sessions_send across real processes: an HTTP server, a django-q2 worker cluster, and the test
as the client. Both backends (the suite runs on SQLite and on PostgreSQL + Redis)."""

import threading

import pytest

from sessions_app.models import Message, Run
from sessions_app.runs.sweeper import sweep
from tests.conftest import make_agent, set_config
from tests.servers import wait_until
from tests.worlds import ANNOUNCE_SKIP

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def research_rules() -> list[dict]:
    # The research agent is slow on "slow", answers "capital" (tests/worlds.py: the live world).
    return [
        {"match": "slow", "delayMs": 30000, "reply": "finally"},
        {"match": "capital", "reply": "Paris."},
        ANNOUNCE_SKIP,
    ]


def send(server, token, message, timeout=30, **extra):
    body = {
        "tool": "sessions_send",
        "args": {
            "sessionKey": "agent:research:main",
            "message": message,
            "timeoutSeconds": timeout,
        },
        **extra,
    }
    response = server.request("POST", "/tools/invoke", body=body, token=token)
    assert response.status == 200, response.body
    return response.json()["result"]["details"]


def test_a_send_waits_for_the_reply_from_a_worker_process(live_world):
    server, token = live_world.server, live_world.token
    details = send(server, token, "What is the capital of France?")
    assert details["status"] == "ok" and details["reply"] == "Paris."
    assert details["sessionKey"] == "agent:research:main"
    run = Run.objects.get(pk=details["runId"])
    assert run.status == "ok" and run.worker  # executed by the cluster, not by us


def test_a_wait_that_times_out_leaves_the_run_going_and_can_be_rejoined(live_world):
    server, token = live_world.server, live_world.token
    set_config(max_ping_pong_turns=0)
    make_agent(
        "research",
        backend={
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["send"], "delayMs": 2500, "reply": "late but here"}],
        },
    )
    details = send(server, token, "take your time", timeout=1)
    assert details["status"] == "timeout" and "the run continues" in details["error"]
    # Delivered, not replied: the message is there and the target's run is under way.
    assert details["delivered"] is True and details["sentBeforeError"] is True
    # (Queued or already running: on a loaded machine the worker may take longer than the
    # 1-second wait to pick the run up; either way it goes on without the client.)
    target_run = details["targetRun"]
    assert target_run["status"] in ("queued", "running")
    assert target_run["status"] == "queued" or target_run["startedAt"]
    # the client went away; it comes back and joins the same run
    joined = server.request("GET", f"/api/v1/runs/{details['runId']}/wait/?timeout=20", token=token)
    assert joined.status == 200 and joined.json()["status"] == "ok"
    assert joined.json()["reply"] == "late but here"
    # the announce step still ran after the late reply
    wait_until(
        lambda: Run.objects.filter(
            chain_id=Run.objects.get(pk=details["runId"]).chain_id, kind="announce", status="ok"
        ).exists()
    )


def test_a_send_to_a_target_whose_run_fails_says_why(live_world):
    server, token = live_world.server, live_world.token
    make_agent(
        "research",
        backend={"type": "scripted", "rules": [{"match": ".*", "error": "model overloaded"}]},
    )
    details = send(server, token, "anything", timeout=20)
    assert details["status"] == "error" and details["error"] == "model overloaded"
    assert details["delivered"] is True and details["sentBeforeError"] is True
    assert details["targetRun"]["status"] == "error"
    assert details["targetRun"]["error"] == "model overloaded"


def test_a_send_queued_behind_a_stopped_worker_says_it_waits(live_world):
    server, worker, token = live_world.server, live_world.worker, live_world.token
    worker.stop()  # nothing takes the run: it stays queued
    details = send(server, token, "capital?", timeout=1)
    assert details["status"] == "timeout" and details["delivered"] is True
    assert details["targetRun"]["status"] == "queued"
    assert details["targetRun"]["queuedSeconds"] > 0.5  # the whole wait, at least
    assert "startedAt" not in details["targetRun"]
    # The message is in the target's transcript although no run has answered it.
    assert Message.objects.filter(session__key="agent:research:main", role="user").exists()


def test_idempotency_key_returns_the_same_run(live_world):
    server, token = live_world.server, live_world.token
    first = send(server, token, "capital?", idempotencyKey="req-1")
    again = send(server, token, "capital?", idempotencyKey="req-1")
    assert first["runId"] == again["runId"] and again["status"] == "ok"
    assert Run.objects.filter(kind="send").count() == 1


def test_a_worker_killed_mid_run_is_ended_by_the_sweeper_and_its_waiter_told(live_world):
    server, worker, token = live_world.server, live_world.worker, live_world.token
    started = send(server, token, "slow please", timeout=0)
    run_id = started["runId"]
    wait_until(lambda: Run.objects.filter(pk=run_id, status="running").exists())
    result = {}
    waiter = threading.Thread(
        target=lambda: result.update(
            r=server.request("GET", f"/api/v1/runs/{run_id}/wait/?timeout=60", token=token)
        )
    )
    waiter.start()
    worker.kill()
    wait_until(lambda: sweep(heartbeat_timeout=1)["dead"] == 1, timeout=20, interval=0.5)
    waiter.join(timeout=30)
    assert result["r"].status == 200
    body = result["r"].json()
    assert body["status"] == "error" and "the worker running this run stopped" in body["error"]
    assert not Message.objects.filter(session__key="agent:research:main", role="assistant").exists()


def test_twenty_concurrent_sends_leave_contiguous_seqs(live_world):
    server, token = live_world.server, live_world.token
    results = []
    threads = [
        threading.Thread(target=lambda i=i: results.append(send(server, token, f"capital {i}?")))
        for i in range(20)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r["status"] for r in results] == ["ok"] * 20
    seqs = list(
        Message.objects.filter(session__key="agent:research:main")
        .order_by("seq")
        .values_list("seq", flat=True)
    )
    assert seqs == list(range(1, len(seqs) + 1)) and len(seqs) >= 40
    assert len(set(r["runId"] for r in results)) == 20


def test_a_spawned_sub_agent_reports_back_through_a_worker(live_world):
    server, token = live_world.server, live_world.token
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent(
        "research",
        backend={
            "type": "scripted",
            "rules": [
                {"match": ".*", "on": ["announce"], "reply": "Nothing else to add."},
                {"match": ".*", "on": ["spawn"], "reply": "Three papers found."},
            ],
        },
    )
    body = {"tool": "sessions_spawn", "args": {"task": "Find papers", "agentId": "research"}}
    details = server.request("POST", "/tools/invoke", body=body, token=token).json()["result"][
        "details"
    ]
    assert details["status"] == "accepted"
    report = wait_until(
        lambda: Message.objects.filter(
            session__key="agent:main:main", provenance__sourceTool="sessions_spawn"
        ).first()
    )
    assert report.content.splitlines()[:3] == [
        "Status: success",
        "Result: Three papers found.",
        "Notes: Nothing else to add.",
    ]
    assert Run.objects.get(pk=details["runId"]).worker  # the child ran in the worker process
