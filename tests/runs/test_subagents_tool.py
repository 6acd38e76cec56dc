"""The `subagents` tool (9.6 §1.8): list, wait (on completion, on timeout, on attention, for
unknown ids), cancel with its texts; and stopping a three-level tree (cascade, 9.6 §1.11)."""

from __future__ import annotations

import pytest

from sessions_app.models import Completion, Run, Session
from sessions_app.runs import control
from tests.conftest import make_agent, make_session, set_config
from tests.runs.helpers import drain

ORCHESTRATE = [
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    # Orchestrators: spawn the next level and wait for it (sessions_yield).
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
    {"match": "level three|slow", "on": ["spawn"], "delayMs": 60_000, "reply": "too late"},
    {"match": ".*", "on": ["spawn"], "reply": "done"},
]


@pytest.fixture
def home(agents):
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent(
        "research",
        subagents={"allowAgents": ["research"]},
        backend={"type": "scripted", "rules": ORCHESTRATE},
    )
    return make_session("main")


def spawn(api, task: str, **args) -> dict:
    details = api.details("sessions_spawn", {"agentId": "research", "task": task, **args})
    assert details["status"] == "accepted", details
    return details


def test_list_shows_tasks_in_flight_and_recent(agent_main, home):
    done = spawn(agent_main, "quick", label="first")
    drain()
    going = spawn(agent_main, "slow", label="second")
    listed = agent_main.details("subagents", {})
    assert listed["status"] == "ok" and listed["action"] == "list"
    assert listed["callerSessionKey"] == "agent:main:main" and listed["callerIsSubagent"] is False
    assert listed["total"] == 2
    rows = {r["taskId"]: r for r in listed["tasks"]}
    assert rows[going["runId"]]["status"] == "queued"
    assert rows[going["runId"]]["execution"] == {"state": "queued"}
    assert rows[done["runId"]]["status"] == "completed"
    assert rows[done["runId"]]["deliveryStatus"] == "delivered"
    assert [r["label"] for r in listed["active"]] == ["second"]
    assert [r["label"] for r in listed["recent"]] == ["first"]
    assert listed["text"].splitlines()[0].startswith("1. task: second (")


def test_wait_returns_on_completion_and_on_timeout(agent_main, home):
    slow = spawn(agent_main, "slow")
    quick = spawn(agent_main, "quick")
    timed_out = agent_main.details(
        "subagents", {"action": "wait", "taskIds": [slow["runId"]], "timeoutSeconds": 0}
    )
    assert timed_out["reason"] == "timeout" and timed_out["completed"] == []
    Run.objects.filter(pk=slow["runId"]).delete()  # the slow one never runs here
    drain()
    waited = agent_main.details(
        "subagents",
        {
            "action": "wait",
            "taskIds": [quick["childSessionKey"], "no-such-task"],
            "timeoutSeconds": 5,
        },
    )
    assert waited["reason"] == "completed"
    assert [t["taskId"] for t in waited["completed"]] == [quick["runId"]]
    assert waited["unavailable"] == ["no-such-task"]


def test_wait_refuses_more_than_32_tasks(agent_main, home):
    response = agent_main.invoke("subagents", {"action": "wait", "taskIds": ["x"] * 33})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == "subagents wait supports at most 32 taskIds."


def test_unsupported_action(agent_main, home):
    assert agent_main.details("subagents", {"action": "kill"}) == {
        "status": "error",
        "error": "Unsupported action.",
    }


def test_cancel_texts(agent_main, operator, home):
    assert agent_main.details("subagents", {"action": "cancel", "taskId": "someone-else"}) == {
        "status": "forbidden",
        "error": "Task outside session tree.",
    }
    done = spawn(agent_main, "quick")
    drain()
    assert agent_main.details("subagents", {"action": "cancel", "taskId": done["runId"]}) == {
        "status": "error",
        "taskId": done["runId"],
        "found": True,
        "cancelled": False,
        "reason": "the task already ended (completed)",
    }
    # A leaf (at maxSpawnDepth) may not cancel.
    leaf = make_session("agent:main:subagent:leaf", spawnedBy="agent:main:main", spawnDepth=1)
    refused = operator.details(
        "subagents", {"action": "cancel", "taskId": "x"}, sessionKey=leaf.key
    )
    assert refused == {
        "status": "forbidden",
        "error": "Leaf subagents cannot cancel other sessions.",
    }


def grow_tree(agent_main) -> list[Session]:
    """main → level one → level two → level three (still running)."""
    set_config(max_spawn_depth=3)
    top = spawn(agent_main, "level one")
    drain_until_level_three()
    one = Session.objects.get(key=top["childSessionKey"])
    two = Session.objects.get(spawned_by=one.key)
    three = Session.objects.get(spawned_by=two.key)
    return [one, two, three]


def drain_until_level_three():
    for _ in range(20):
        queued = Run.objects.filter(status=Run.QUEUED).exclude(message="level three")
        if not queued.exists():
            return
        drain_one(queued.order_by("created_at").first())


def drain_one(run):
    from sessions_app.runs.engine import execute_run

    execute_run(str(run.pk))


def test_cancel_cascades_through_a_three_level_tree(agent_main, home):
    one, two, three = grow_tree(agent_main)
    task = Run.objects.get(session=one, kind="spawn")
    result = agent_main.details("subagents", {"action": "cancel", "taskId": str(task.pk)})
    assert result == {
        "status": "cancelled",
        "taskId": str(task.pk),
        "found": True,
        "cancelled": True,
    }
    assert not Run.objects.in_flight().filter(session__in=[one, two, three]).exists()
    leaf = Run.objects.get(session=three, kind="spawn")
    assert leaf.status == Run.ABORTED and leaf.error.startswith("cancelled by its requester")
    # Nobody in the stopped tree is woken, and the requester asked for it: no completion turns.
    assert not Run.objects.filter(kind="completion").exclude(status=Run.ABORTED).exists()
    assert set(Completion.objects.values_list("status", flat=True)) <= {
        Completion.DISMISSED,
        Completion.DELIVERED,  # the levels that had ended before (they reported their spawn)
    }
    listed = agent_main.details("subagents", {})
    assert listed["tasks"][0]["status"] == "cancelled"


def test_stopping_a_middle_session_tells_its_requester_and_cancels_below(agent_main, home):
    one, two, three = grow_tree(agent_main)
    stopped = control.stop_session(two, reason="stopped by an operator", clear_queued=True)
    assert stopped.ended_tasks >= 1 and stopped.descendants == 1
    assert Run.objects.get(session=three, kind="spawn").status == Run.ABORTED
    # Level one waited for level two: it hears that level two was cancelled (its batch settles).
    (heard,) = Run.objects.filter(session=one, kind="completion")
    assert "status: cancelled: stopped by an operator" in heard.message
    # Nothing below level two wakes up.
    assert not Run.objects.filter(session__in=[two, three], kind="completion").exists()
    assert Completion.objects.get(child_session=three).status == Completion.DISMISSED
