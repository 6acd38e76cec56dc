"""Queries per send and per run, pinned (speed itself is measured in bench/send_bench.py).

The set-up is the send benchmark's: `main` sends to `echo`, which answers at once; step and
announce turns answer REPLY_SKIP / ANNOUNCE_SKIP. Counts are as the test sees them: inside the
test's transaction every atomic block adds a SAVEPOINT and its RELEASE.
"""

import pytest

from policies_app.models import SendPolicy
from sessions_app.access.identity import requester_for
from sessions_app.models import Run
from sessions_app.runs import webhooks
from sessions_app.runs.engine import execute_run
from sessions_app.tools.sessions_send import start_send
from tests.conftest import set_config
from tests.runs.helpers import SEND_TO_ECHO, SILENT_FOLLOW_UPS, echo_setup


@pytest.fixture(autouse=True)
def webhooks_read_once(monkeypatch):
    """Which agents have a webhook is cached for 5 s; on a loaded machine a run can take longer
    and read it twice, which is not what these counts pin."""
    monkeypatch.setattr(webhooks, "CACHE_SECONDS", 3600.0)


@pytest.fixture
def key(agents):
    set_config(visibility="all", a2a_enabled=True)
    key = echo_setup(SILENT_FOLLOW_UPS)
    SendPolicy.load()  # the settings row exists from the first use on
    return key


def requester(key, *, turns: int):
    set_config(max_ping_pong_turns=turns)
    return requester_for(key)  # reads the settings


def next_run(kind: str) -> str:
    return str(Run.objects.get(status=Run.QUEUED, kind=kind).pk)


def test_starting_a_send_takes_eight_queries(key, django_assert_num_queries):
    sender = requester(key, turns=0)
    # target, send policy, requester's channel; the transaction (savepoint and release); the
    # input message (one UPDATE of the target: seq, run status; insert); the run
    with django_assert_num_queries(8):
        plan = start_send(requester=sender, args=SEND_TO_ECHO)
    assert plan.result is None and Run.objects.get(pk=plan.run_id).status == Run.QUEUED


def test_a_send_without_reply_loop_takes_14_queries_then_11_for_the_announce(
    key, django_assert_num_queries
):
    plan = start_send(requester=requester(key, turns=0), args=SEND_TO_ECHO)
    # claim, load, the queued notifications (sessions_send mode=notify: one DELETE … RETURNING),
    # context; the transaction (savepoint, release); lock (reading the sessions);
    # the run's finish with its reply's seq; the reply (one UPDATE of the session: seqs, run
    # status, usage; insert); the state log's run_completed (one INSERT); the announce run
    # (input message: UPDATE, insert; run)
    with django_assert_num_queries(14):
        assert execute_run(plan.run_id) == Run.OK
    announce = next_run("announce")
    with django_assert_num_queries(11):  # the same without starting anything
        assert execute_run(announce) == Run.OK
    assert not Run.objects.filter(status=Run.QUEUED).exists()


def test_with_the_reply_loop_a_step_and_the_announce_follow(key, django_assert_num_queries):
    plan = start_send(requester=requester(key, turns=5), args=SEND_TO_ECHO)
    # as above, plus the chain's turn count and the settings before starting the step on the
    # requester's session (read by the lock)
    with django_assert_num_queries(16):
        assert execute_run(plan.run_id) == Run.OK
    # the step answers REPLY_SKIP: the announce starts on the target (read by the lock too)
    step = next_run("step")
    with django_assert_num_queries(14):
        assert execute_run(step) == Run.OK
    announce = next_run("announce")
    with django_assert_num_queries(11):
        assert execute_run(announce) == Run.OK
    assert Run.objects.get(pk=plan.run_id).reply == "pong"
