"""A worker task executes the follow-up runs its run started (reply steps, announce) itself while
it is young, and enqueues them past FOLLOW_UP_INLINE_SECONDS. Committed transactions here (the
follow-ups are collected on commit), the ORM broker's queue read through the ORM."""

import pytest
from django.conf import settings
from django_q.models import OrmQ

from sessions_app.access.identity import requester_for
from sessions_app.models import Message, Run
from sessions_app.runs import engine
from sessions_app.tools.sessions_send import start_send
from tests.conftest import make_agent, set_config
from tests.runs.helpers import SEND_TO_ECHO, SILENT_FOLLOW_UPS, echo_setup

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def sender(agents):
    if "orm" not in settings.Q_CLUSTER:
        pytest.skip("reads the queue through the ORM broker")
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=5)
    return requester_for(echo_setup([{"match": ".*", "on": ["step"], "reply": "ok"}]))


def queued_tasks() -> list[str]:
    return [task.args()[0] for task in OrmQ.objects.all()]


def test_the_task_runs_the_reply_loop_and_the_announce_itself(sender, django_assert_num_queries):
    plan = start_send(requester=sender, args=SEND_TO_ECHO)
    assert queued_tasks() == [plan.run_id]  # the send's own task, enqueued by the web process
    OrmQ.objects.all().delete()

    # The follow-ups are neither enqueued nor read back: 13–15 queries per run (the first one
    # is loaded with its session and agent; each step reads its speaker's agent; each turn
    # takes its session's queued notifications, sessions_send mode=notify).
    with django_assert_num_queries(56):
        assert engine.execute_run(plan.run_id) == Run.OK

    # main answers "ok" on turn 1, echo REPLY_SKIP on turn 2, then the announce: all done by
    # this one call, in order, and nothing went through the broker.
    runs = list(Run.objects.order_by("created_at").values_list("kind", "status"))
    assert runs == [("send", "ok"), ("step", "ok"), ("step", "ok"), ("announce", "ok")]
    assert queued_tasks() == []
    workers = set(Run.objects.values_list("worker", flat=True))
    assert workers == {engine.worker_name()}
    seqs = list(
        Message.objects.filter(session__key="agent:echo:main").values_list("seq", flat=True)
    )
    assert seqs == list(range(1, len(seqs) + 1))


def test_past_the_budget_follow_ups_are_enqueued_as_tasks(sender, monkeypatch):
    monkeypatch.setattr(engine, "FOLLOW_UP_INLINE_SECONDS", 0)
    plan = start_send(requester=sender, args=SEND_TO_ECHO)
    OrmQ.objects.all().delete()

    assert engine.execute_run(plan.run_id) == Run.OK

    step = Run.objects.get(kind="step")
    assert step.status == Run.QUEUED
    assert queued_tasks() == [str(step.pk)]


def test_a_follow_up_claimed_elsewhere_first_is_left_to_that_worker(sender, monkeypatch):
    """A redelivered task or the sweeper's re-enqueue may claim a follow-up first: the claim is
    conditional, so the run executes once, by whoever claimed it."""
    plan = start_send(requester=sender, args=SEND_TO_ECHO)
    claim = Run.claim.__func__

    def another_worker_is_faster(cls, run_id, *, worker):
        if Run.objects.filter(pk=run_id, kind="step").exists():
            assert claim(cls, run_id, worker="elsewhere:1")
        return claim(cls, run_id, worker=worker)

    monkeypatch.setattr(Run, "claim", classmethod(another_worker_is_faster))
    assert engine.execute_run(plan.run_id) == Run.OK

    step = Run.objects.get(kind="step")
    assert (step.status, step.worker, step.attempts) == (Run.RUNNING, "elsewhere:1", 1)
    assert not Run.objects.filter(kind="announce").exists()


def test_a_run_a_turn_starts_with_a_tool_call_is_enqueued_at_once(sender):
    """Only the finishing transaction's follow-ups wait for the task: a sub-agent the turn spawns
    runs beside it, on another worker."""
    make_agent(
        "echo",
        backend={
            "type": "scripted",
            "rules": [
                *SILENT_FOLLOW_UPS,
                {
                    "match": ".*",
                    "toolCalls": [{"name": "sessions_spawn", "arguments": {"task": "dig"}}],
                    "reply": "spawned",
                },
            ],
        },
    )
    plan = start_send(requester=sender, args={**SEND_TO_ECHO, "timeoutSeconds": 0})
    OrmQ.objects.all().delete()

    assert engine.execute_run(plan.run_id) == Run.OK

    child = Run.objects.get(session__key__contains=":subagent:")
    assert child.status == Run.QUEUED
    assert queued_tasks() == [str(child.pk)]
    assert Run.objects.get(kind="announce").status == Run.OK  # the send's own follow-up
