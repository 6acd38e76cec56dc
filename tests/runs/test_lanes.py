"""When a queued run may start (runs/lanes.py): the sub-agent lane's maxConcurrent, and the
deferred runs a finish starts."""

from __future__ import annotations

import pytest
from django.db import transaction

from sessions_app.models import Run
from sessions_app.runs import engine, lanes
from tests.conftest import make_agent, make_session, set_config

SLOW = [
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    {"match": ".*", "on": ["spawn"], "reply": "done"},
]


@pytest.fixture
def children(agent_main, agents):
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent("research", backend={"type": "scripted", "rules": SLOW})
    make_session("main")
    set_config(max_concurrent=2, max_children_per_agent=10)
    runs = []
    for i in range(4):
        details = agent_main.details("sessions_spawn", {"agentId": "research", "task": f"t{i}"})
        runs.append(Run.objects.get(pk=details["runId"]))
    return runs


def test_sub_agent_runs_are_sub_agent_lane(children):
    assert {r.lane for r in children} == {Run.SUBAGENT_LANE}


def test_the_lane_admits_max_concurrent_runs(children):
    assert lanes.claim(children[0].pk, worker="w", lane=Run.SUBAGENT_LANE)
    assert lanes.claim(children[1].pk, worker="w", lane=Run.SUBAGENT_LANE)
    assert lanes.claim(children[2].pk, worker="w", lane=Run.SUBAGENT_LANE) is None
    # The main lane is not capped by it.
    assert Run.objects.filter(status=Run.RUNNING).count() == 2


def test_a_finish_in_the_lane_starts_the_oldest_deferred_run(children):
    for run in children[:2]:
        assert lanes.claim(run.pk, worker="w", lane=Run.SUBAGENT_LANE)
    assert engine.execute_run(str(children[2].pk), Run.SUBAGENT_LANE) == "deferred"
    assert Run.objects.get(pk=children[2].pk).deferred_at is not None
    first = Run.objects.select_related("session", "session__agent").get(pk=children[0].pk)
    with transaction.atomic():
        ready = lanes.kick(first, first.session)
    assert [r.pk for r in ready] == [children[2].pk]
