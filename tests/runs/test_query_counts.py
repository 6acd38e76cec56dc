"""Queries per send and per run, pinned (speed itself is measured in bench/send_bench.py).

The set-up is the send benchmark's: `main` sends to `echo`, which answers at once; step and
announce turns answer REPLY_SKIP / ANNOUNCE_SKIP. Counts are as the test sees them: inside the
test's transaction every atomic block adds a SAVEPOINT and its RELEASE.
"""

import pytest

from policies_app.models import SendPolicy
from sessions_app.identity import requester_for
from sessions_app.models import ApiKey, Run
from sessions_app.runs.engine import execute_run
from sessions_app.tools.sessions_send import start_send
from tests.conftest import make_agent, make_session, set_config

SKIP = [
    {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
]
SEND = {"sessionKey": "agent:echo:main", "message": "ping", "timeoutSeconds": 30}


@pytest.fixture
def key(agents):
    set_config(visibility="all", a2a_enabled=True)
    make_agent("main", backend={"type": "scripted", "rules": SKIP})
    make_agent(
        "echo", backend={"type": "scripted", "rules": [*SKIP, {"match": ".*", "reply": "pong"}]}
    )
    make_session("main")
    make_session("agent:echo:main")
    SendPolicy.load()  # the settings row exists from the first use on
    key, _ = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])
    return key


def requester(key, *, turns: int):
    set_config(max_ping_pong_turns=turns)
    return requester_for(key)  # reads the settings


def next_run(kind: str) -> str:
    return str(Run.objects.get(status=Run.QUEUED, kind=kind).pk)


def test_starting_a_send_takes_eleven_queries(key, django_assert_num_queries):
    sender = requester(key, turns=0)
    # target, send policy, requester's channel; the input message (savepoint, seq returned by
    # its UPDATE, insert); the run; the target's run status; the two savepoints' releases
    with django_assert_num_queries(11):
        plan = start_send(requester=sender, args=SEND)
    assert plan.result is None and Run.objects.get(pk=plan.run_id).status == Run.QUEUED


def test_a_send_without_reply_loop_takes_20_queries_then_14_for_the_announce(
    key, django_assert_num_queries
):
    plan = start_send(requester=requester(key, turns=0), args=SEND)
    # claim, load, context; lock; finish + session status; the reply (savepoint, seq, insert,
    # release) and its seq on the run; usage; the announce run (input message, run, status)
    with django_assert_num_queries(20):
        assert execute_run(plan.run_id) == Run.OK
    announce = next_run("announce")
    with django_assert_num_queries(14):  # the same without starting anything
        assert execute_run(announce) == Run.OK
    assert not Run.objects.filter(status=Run.QUEUED).exists()


def test_with_the_reply_loop_a_step_and_the_announce_follow(key, django_assert_num_queries):
    plan = start_send(requester=requester(key, turns=5), args=SEND)
    # as above, plus the chain's turn count, the settings and the requester's session before
    # starting the step there
    with django_assert_num_queries(23):
        assert execute_run(plan.run_id) == Run.OK
    # the step answers REPLY_SKIP: the announce starts on the target (looked up: the step ran
    # on the requester's session)
    step = next_run("step")
    with django_assert_num_queries(21):
        assert execute_run(step) == Run.OK
    announce = next_run("announce")
    with django_assert_num_queries(14):
        assert execute_run(announce) == Run.OK
    assert Run.objects.get(pk=plan.run_id).reply == "pong"
