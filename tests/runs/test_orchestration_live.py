"""Orchestration across real processes (issue 13): an HTTP server, django-q2 worker clusters, and
the test as client and operator. Runs on both backends (the suite runs on SQLite and on
PostgreSQL + Redis)."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.delivery import retry_due_deliveries
from sessions_app.models import ApiKey, Completion, Delivery, Message, Run, Session
from sessions_app.runs.sweeper import sweep
from tests.conftest import make_agent, make_session, set_config
from tests.runs.helpers import completion_turns
from tests.runs.test_completion_webhooks import Receiver, verify
from tests.servers import start_server, start_worker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

MAIN_RULES = [
    {"match": "busy", "on": ["ingest"], "delayMs": 4000, "reply": "busy done"},
    {
        "match": "three",
        "on": ["ingest"],
        "toolCalls": [
            *[
                {
                    "name": "sessions_spawn",
                    "arguments": {"agentId": "research", "task": f"dig {ms}"},
                }
                for ms in (300, 1200, 2400)
            ],
            {"name": "sessions_yield", "arguments": {"acknowledgment": "waiting"}},
        ],
    },
    {"match": ".*", "on": ["completion"], "reply": "noted"},
]
RESEARCH_RULES = [
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    {
        "match": "level one",
        "on": ["spawn"],
        "toolCalls": [
            {"name": "sessions_spawn", "arguments": {"agentId": "research", "task": "level two"}},
            {"name": "sessions_yield", "arguments": {}},
        ],
    },
    {
        "match": "level two",
        "on": ["spawn"],
        "toolCalls": [
            {"name": "sessions_spawn", "arguments": {"agentId": "research", "task": "level three"}},
            {"name": "sessions_yield", "arguments": {}},
        ],
    },
    {"match": "level three|slow", "on": ["spawn"], "delayMs": 60_000, "reply": "late"},
    {"match": "dig 300", "on": ["spawn"], "delayMs": 300, "reply": "result A"},
    {"match": "dig 1200", "on": ["spawn"], "delayMs": 1200, "reply": "result B"},
    {"match": "dig 2400", "on": ["spawn"], "delayMs": 2400, "reply": "result C"},
    {"match": "quick", "on": ["spawn"], "delayMs": 700, "reply": "child result"},
    {"match": ".*", "on": ["spawn"], "reply": "child result"},
]


@pytest.fixture
def world():
    # Its own: its data is particular, and composed from running_server/running_worker (data
    # after the processes) test_a_worker_killed_between_the_child_and_the_parent_turn failed
    # 3 of 3 on PostgreSQL + Redis (the old order passed); to be understood before it moves.
    set_config(max_spawn_depth=3, max_children_per_agent=20)
    make_agent(
        "main",
        subagents={"allowAgents": ["research"]},
        backend={"type": "scripted", "rules": MAIN_RULES},
    )
    make_agent(
        "research",
        subagents={"allowAgents": ["research"]},
        backend={"type": "scripted", "rules": RESEARCH_RULES},
    )
    home = make_session("main")
    _, agent_token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
    _, ingest_token = ApiKey.generate(scope=ApiKey.INGEST)
    server = start_server()
    workers = [start_worker(workers=2)]
    yield {
        "server": server,
        "workers": workers,
        "token": agent_token,
        "ingest": ingest_token,
        "home": home,
    }
    for worker in workers:
        worker.stop()
    server.stop()


def tool(w, name: str, args: dict) -> dict:
    response = w["server"].request(
        "POST", "/tools/invoke", body={"tool": name, "args": args}, token=w["token"]
    )
    assert response.status == 200, response.body
    return response.json()["result"]["details"]


def ingest(w, text: str) -> Run:
    response = w["server"].request(
        "POST",
        "/api/v1/sessions/main/messages/",
        body={"messages": [{"role": "user", "content": text}], "run": True},
        token=w["ingest"],
    )
    assert response.status == 201, response.body
    return Run.objects.get(pk=response.json()["run"]["runId"])


def test_a_child_ending_mid_turn_is_heard_after_that_turn_once(world):
    busy = ingest(world, "busy for a while")
    wait_until(lambda: Run.objects.filter(pk=busy.pk, status=Run.RUNNING).exists())
    tool(world, "sessions_spawn", {"agentId": "research", "task": "quick"})
    wait_until(lambda: Completion.objects.filter(status=Completion.DELIVERED).exists(), timeout=40)
    busy.refresh_from_db()
    (turn,) = completion_turns(world["home"])
    assert turn.status == Run.OK and turn.started_at >= busy.finished_at
    assert turn.input_seq > busy.reply_seq  # it saw the busy turn's reply


def test_a_worker_killed_between_the_child_and_the_parent_turn(world):
    busy = ingest(world, "busy for a while")
    wait_until(lambda: Run.objects.filter(pk=busy.pk, status=Run.RUNNING).exists())
    tool(world, "sessions_spawn", {"agentId": "research", "task": "quick"})
    # The child has ended; its completion turn waits behind the busy turn.
    wait_until(
        lambda: Run.objects.filter(
            kind="completion", status=Run.QUEUED, deferred_at__isnull=False
        ).exists(),
        timeout=30,
    )
    world["workers"][0].kill()  # every process of the cluster, mid-turn
    # The sweep ends the killed turn (the asserts below check how); on a loaded machine that
    # can take a few rounds, and the round that ended it may not be the last one looked at.
    wait_until(
        lambda: (
            sweep(heartbeat_timeout=1) is not None
            and not Run.objects.filter(pk=busy.pk, status=Run.RUNNING).exists()
        ),
        timeout=60,
        interval=0.5,
    )
    world["workers"].append(start_worker(workers=2))
    try:
        # (90 s: a fresh worker cluster on a loaded CI machine; 14 s is usual.)
        wait_until(
            lambda: Completion.objects.filter(status=Completion.DELIVERED).exists(), timeout=90
        )
    except AssertionError:
        # Once in three PostgreSQL CI runs of 25 Nov this was not delivered in 40 s: say what
        # the runs and completions were, for whoever sees it next.
        runs = list(Run.objects.values_list("kind", "status", "lane", "deferred_at", "error"))
        completions = list(Completion.objects.values_list("status", "attempts"))
        raise AssertionError(f"not delivered: runs {runs}, completions {completions}") from None
    turns = completion_turns(world["home"])
    assert [t.status for t in turns] == [Run.OK]  # it ran, once
    assert Run.objects.get(pk=busy.pk).status == Run.ERROR


def test_cancel_stops_a_three_level_tree(world):
    top = tool(world, "sessions_spawn", {"agentId": "research", "task": "level one"})
    wait_until(
        lambda: Run.objects.filter(message="level three", status=Run.RUNNING).exists(), timeout=30
    )
    result = tool(world, "subagents", {"action": "cancel", "taskId": top["runId"]})
    assert result == {
        "status": "cancelled",
        "taskId": top["runId"],
        "found": True,
        "cancelled": True,
    }
    tree = [s for s in Session.objects.filter(spawn_depth__gt=0)]
    assert len(tree) == 3
    assert not Run.objects.in_flight().filter(session__in=tree).exists()
    time.sleep(1.5)  # the level-three worker notices within half a second and stores nothing
    leaf = Run.objects.get(message="level three")
    assert leaf.status == Run.ABORTED and not leaf.reply
    assert not Run.objects.filter(kind="completion").exclude(status=Run.ABORTED).exists()


def test_subagents_wait_returns_on_completion_and_on_timeout(world):
    slow = tool(world, "sessions_spawn", {"agentId": "research", "task": "slow"})
    quick = tool(world, "sessions_spawn", {"agentId": "research", "task": "quick"})
    timed_out = tool(
        world, "subagents", {"action": "wait", "taskIds": [slow["runId"]], "timeoutSeconds": 1}
    )
    assert timed_out["reason"] == "timeout"
    done = tool(
        world, "subagents", {"action": "wait", "taskIds": [quick["runId"]], "timeoutSeconds": 30}
    )
    assert done["reason"] == "completed" and done["completed"][0]["status"] == "completed"


def test_a_yield_for_three_children_gets_one_turn_with_all_results(world):
    turn = ingest(world, "research three things")
    wait_until(
        lambda: Completion.objects.filter(status=Completion.DELIVERED).count() == 3, timeout=40
    )
    turns = completion_turns(world["home"])
    # Under load "dig 300" can end before the parent yields: its own turn, queued behind the
    # parent's, is then withdrawn unstarted (aborted) and its result joins the batch.
    (successor,) = [t for t in turns if t.status == Run.OK]
    assert all(t.status == Run.ABORTED and "batch" in t.error for t in turns if t != successor)
    text = Message.objects.get(session=world["home"], seq=successor.input_seq).content
    assert all(r in text for r in ("result A", "result B", "result C"))
    assert Run.objects.get(pk=turn.pk).yielded == Run.YIELDED_FOR_CHILDREN
    assert set(Completion.objects.values_list("turn_run_id", flat=True)) == {successor.pk}


def test_max_concurrent_holds_across_two_worker_processes(world):
    set_config(max_concurrent=2)
    world["workers"].append(start_worker(workers=2))  # two clusters, four worker processes
    for i in range(10):
        assert (
            tool(world, "sessions_spawn", {"agentId": "research", "task": f"quick {i}"})["status"]
            == "accepted"
        )
    peak = 0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        running = Run.objects.filter(lane=Run.SUBAGENT_LANE, status=Run.RUNNING).count()
        peak = max(peak, running)
        if Run.objects.filter(kind="spawn", status=Run.OK).count() == 10:
            break
        time.sleep(0.03)
    assert Run.objects.filter(kind="spawn", status=Run.OK).count() == 10
    assert 1 <= peak <= 2


def test_completion_webhook_through_a_worker(world):
    receiver = Receiver(failures=2)
    try:
        response = world["server"].request(
            "PUT",
            "/api/v1/agents/main/",
            body={
                "subagents": {"allowAgents": ["research"]},
                "backend": {"type": "scripted", "rules": MAIN_RULES},
                "webhook": {"url": receiver.url},
            },
            token=operator_token(),
        )
        assert response.status == 200, response.body
        secret = response.json()["webhook"]["secret"]
        # (No run has finished in the workers yet, so they read the webhook on the first one.)
        tool(world, "sessions_spawn", {"agentId": "research", "task": "quick"})
        wait_until(lambda: receiver.received, timeout=30)  # the worker's first attempt: 500
        wait_until(lambda: Delivery.objects.filter(kind="webhook_event", attempts=1).exists())
        later = timezone.now()
        for minutes in (1, 2):
            retry_due_deliveries(later + timedelta(minutes=minutes))
        assert Delivery.objects.get(kind="webhook_event").status == Delivery.SENT
        headers, body = receiver.received[-1]
        verify(headers, body, secret)
    finally:
        receiver.close()


def operator_token() -> str:
    return ApiKey.generate(scope=ApiKey.OPERATOR)[1]
