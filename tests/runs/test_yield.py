"""sessions_yield (9.6 §1.7): every status and text, one successor turn per frozen batch, a child
that ended before the yield joining the batch, a nested orchestrator's task waiting for its
children, and a paused child resumed by a plain sessions_send."""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from django.db import connection, connections, transaction

from sessions_app.access.identity import requester_for_session
from sessions_app.models import Completion, Message, Run, Session
from sessions_app.runs import engine
from sessions_app.runs.chain import Chain, current_run
from sessions_app.tools.sessions_spawn import sessions_spawn
from sessions_app.tools.sessions_yield import NOTHING_PENDING, sessions_yield
from tests.conftest import make_agent, make_session, set_config, user
from tests.runs.helpers import completion_turns, drain

SPAWN = {"name": "sessions_spawn", "arguments": {"agentId": "research", "task": "dig"}}
RESEARCH = {
    "type": "scripted",
    "rules": [
        {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
        {
            "match": "pause",
            "on": ["spawn"],
            "toolCalls": [{"name": "sessions_yield", "arguments": {"waitFor": "message"}}],
        },
        {"match": ".*", "on": ["send"], "reply": "Resumed and done: {input}"},
        {"match": ".*", "on": ["spawn"], "reply": "Found it."},
    ],
}


@pytest.fixture
def home(agents):
    make_agent(
        "main",
        subagents={"allowAgents": ["research"]},
        backend={
            "type": "scripted",
            "rules": [
                {
                    "match": "three",
                    "on": ["ingest"],
                    "toolCalls": [
                        SPAWN,
                        SPAWN,
                        SPAWN,
                        {
                            "name": "sessions_yield",
                            "arguments": {
                                "acknowledgment": "Waiting for three researchers.",
                                "message": "compare them",
                            },
                        },
                    ],
                },
                {"match": ".*", "on": ["completion"], "reply": "All three agree."},
            ],
        },
    )
    make_agent("research", backend=RESEARCH)
    return make_session("main", lastChannel="webchat")


def ingest_turn(ingest, text: str) -> Run:
    response = ingest.post(
        "/api/v1/sessions/main/messages/", {"messages": [user(text)], "run": True}
    )
    assert response.status_code == 201, response.content
    return Run.objects.get(pk=response.json()["run"]["runId"])


def test_a_yield_gets_one_successor_turn_with_every_result(ingest, home):
    turn = ingest_turn(ingest, "research three things")
    drain()
    turn.refresh_from_db()
    assert turn.yielded == Run.YIELDED_FOR_CHILDREN and turn.status == Run.OK
    assert turn.reply == "Waiting for three researchers."  # the acknowledgment ends the turn
    (successor,) = completion_turns(home)
    text = Message.objects.get(session=home, seq=successor.input_seq).content
    assert text.startswith("The background tasks this session yielded for have all completed.")
    assert "Your note when you yielded: compare them" in text
    assert text.count("source: subagent") == 3 and text.count("Found it.") == 3
    assert "sourceTool=subagent_settle" in text
    assert successor.parent_run_id == turn.pk and successor.reply == "All three agree."
    completions = Completion.objects.all()
    assert [c.status for c in completions] == [Completion.DELIVERED] * 3
    assert {c.batch_run_id for c in completions} == {turn.pk}
    assert {c.turn_run_id for c in completions} == {successor.pk}


def call_yield(run: Run, **args) -> dict:
    token = current_run.set(run)
    try:
        return sessions_yield(requester=requester_for_session(run.session), args=args)
    finally:
        current_run.reset(token)


def call_spawn(run: Run, **args) -> dict:
    token = current_run.set(run)
    try:
        return sessions_spawn(
            requester=requester_for_session(run.session),
            args={"agentId": "research", "task": "dig", **args},
        )
    finally:
        current_run.reset(token)


def running_turn(session: Session) -> Run:
    with transaction.atomic():
        run = engine.start_run(
            session=session,
            kind="ingest",
            message="hello",
            chain=Chain(uuid.uuid4(), (session.agent_id,)),
        )
    assert Run.claim(run.pk, worker="test")
    return Run.objects.select_related("session", "session__agent").get(pk=run.pk)


def test_yield_texts(operator, home):
    turn = running_turn(home)
    assert call_yield(turn, waitFor="children") == {
        "status": "error",
        "error": 'waitFor must be "message" when provided.',
    }
    assert call_yield(turn) == {"status": "error", "error": NOTHING_PENDING}
    # Not in a turn (a REST caller): there is no turn to end.
    assert operator.details("sessions_yield") == {
        "status": "error",
        "error": "Yield not supported in this context",
    }


def test_children_of_an_earlier_turn_are_already_pending(home):
    first = running_turn(home)
    child = call_spawn(first, label="older")
    engine.finish_run(first, Run.OK)
    second = running_turn(home)
    result = call_yield(second)
    assert result["status"] == "already_pending"
    assert result["message"] == (
        "An earlier turn of this session already spawned 1 child session(s) whose completion "
        f"is still pending: {child['childSessionKey']}. This turn owns no new claim, so no yield "
        "is needed: end this turn normally."
    )
    assert result["pendingChildren"] == [
        {
            "childSessionKey": child["childSessionKey"],
            "label": "older",
            "state": "running",
            "wakeArmed": False,
        }
    ]


def test_a_child_that_ended_before_the_yield_joins_the_batch(home):
    turn = running_turn(home)
    fast = call_spawn(turn)
    slow = call_spawn(turn)
    engine.execute_run(fast["runId"])  # ends while the turn still runs: its turn must wait
    own = Run.objects.get(kind="completion", session=home)
    assert own.status == Run.QUEUED
    assert call_yield(turn)["status"] == "yielded"
    own.refresh_from_db()
    assert own.status == Run.ABORTED and "batch" in own.error  # withdrawn, never started
    engine.finish_run(turn, Run.OK)
    engine.execute_run(slow["runId"])
    drain()
    (successor,) = [r for r in completion_turns(home) if r.status == Run.OK]
    text = Message.objects.get(session=home, seq=successor.input_seq).content
    assert text.count("source: subagent") == 2
    assert set(Completion.objects.values_list("status", flat=True)) == {Completion.DELIVERED}


def test_a_nested_orchestrator_waits_for_its_children_before_its_task_ends(ingest, home):
    set_config(max_spawn_depth=2)
    make_agent(
        "research",
        subagents={"allowAgents": ["research"]},
        backend={
            "type": "scripted",
            "rules": [
                {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
                {
                    "match": "orchestrate",
                    "on": ["spawn"],
                    "toolCalls": [
                        {
                            "name": "sessions_spawn",
                            "arguments": {"agentId": "research", "task": "leaf a"},
                        },
                        {
                            "name": "sessions_spawn",
                            "arguments": {"agentId": "research", "task": "leaf b"},
                        },
                        {"name": "sessions_yield", "arguments": {}},
                    ],
                },
                {"match": ".*", "on": ["completion"], "reply": "Both leaves done."},
                {"match": ".*", "on": ["spawn"], "reply": "leaf result"},
            ],
        },
    )
    make_agent("main", subagents={"allowAgents": ["research"]})
    requester = requester_for_session(home)
    details = sessions_spawn(
        requester=requester, args={"agentId": "research", "task": "orchestrate"}
    )
    drain()
    orchestrator = Session.objects.get(key=details["childSessionKey"])
    (settle,) = completion_turns(orchestrator)
    assert settle.task_run_id == Run.objects.get(pk=details["runId"]).pk
    # The orchestrator's task ended with its successor turn: main heard that reply, once.
    (heard,) = completion_turns(home)
    text = Message.objects.get(session=home, seq=heard.input_seq).content
    assert "Both leaves done." in text and "leaf result" not in text
    task_completion = Completion.objects.get(child_session=orchestrator)
    assert task_completion.child_run_id == settle.pk


def test_a_paused_child_is_resumed_by_a_plain_send(agent_main, home):
    # A child under another agent is reachable as any session of that agent is (reference §7:
    # visibility all and agent-to-agent; the demo's settings).
    set_config(visibility="all", a2a_enabled=True)
    details = agent_main.details("sessions_spawn", {"agentId": "research", "task": "pause here"})
    drain()
    spawn_run = Run.objects.get(pk=details["runId"])
    assert spawn_run.yielded == Run.YIELDED_FOR_MESSAGE and not completion_turns(home)
    listed = agent_main.details("subagents", {"action": "list"})
    row = listed["tasks"][0]
    assert row["status"] == "running" and row["execution"] == {
        "state": "waiting",
        "wait": {"kind": "agent_messages"},
    }
    resumed = agent_main.details(
        "sessions_send", {"sessionKey": details["childSessionKey"], "message": "go on"}
    )
    assert resumed["status"] == "accepted" and resumed["mode"] == "resume"
    assert resumed["taskRunId"] == details["runId"] and resumed["completion"] == "task"
    drain()
    (heard,) = completion_turns(home)
    text = Message.objects.get(session=home, seq=heard.input_seq).content
    assert "Resumed and done: go on" in text
    completion = Completion.objects.get()
    assert str(completion.task_run_id) == details["runId"]
    assert json.loads(json.dumps(completion.outcome))["status"] == "ok"


@pytest.mark.django_db(transaction=True)
def test_a_child_ending_while_its_parent_yields_joins_the_batch(home):
    """PostgreSQL: the child's finishing transaction and the yield's run at once. The yield
    holds the requester's row lock, so the child waits and then sees the yield; before, each
    missed the other and the child's result went to a turn of its own, outside the batch."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite's IMMEDIATE transactions serialise the two anyway")
    turn = running_turn(home)
    fast = call_spawn(turn)
    slow = call_spawn(turn)

    def finish_child() -> None:
        try:
            engine.execute_run(fast["runId"])
        finally:
            connection.close()

    child = threading.Thread(target=finish_child)
    with transaction.atomic():
        assert call_yield(turn)["status"] == "yielded"
        child.start()
        # Commit only once the child's finish waits on a lock (or, without one, has ended).
        deadline = time.monotonic() + 30
        while child.is_alive() and time.monotonic() < deadline and not waiting_on_a_lock():
            time.sleep(0.02)
    child.join(timeout=30)
    assert not child.is_alive()
    engine.finish_run(turn, Run.OK)
    engine.execute_run(slow["runId"])
    drain()
    (successor,) = completion_turns(home)
    assert successor.status == Run.OK
    text = Message.objects.get(session=home, seq=successor.input_seq).content
    assert text.count("source: subagent") == 2


def waiting_on_a_lock() -> bool:
    with connections["default"].cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND datname = current_database()"
        )
        return cursor.fetchone()[0] > 0
