"""The ORM broker woken by an enqueue (sessions_app/runs/broker.py): a worker whose queue is
empty waits for an announcement instead of looking every `poll` seconds. Both backends of the
suite: SQLite (the version file beside the database) and PostgreSQL + Redis (pub/sub)."""

import pytest
from django.conf import settings
from django.db import connection, transaction

from sessions_app.lib import wakeups
from sessions_app.runs import broker as wake
from tests.servers import start_worker
from tests.worlds import ANNOUNCE_SKIP, send_to_research

pytestmark = pytest.mark.django_db(transaction=True)

needs_wake_channel = pytest.mark.skipif(
    connection.vendor != "sqlite" and not settings.REDIS_URL,
    reason="PostgreSQL without Redis has no wake channel: the broker polls there",
)


class Ear:
    """Hears the announcements the way a waiting pusher does."""

    def __init__(self):
        if settings.REDIS_URL:
            import redis

            self.pubsub = redis.Redis.from_url(settings.REDIS_URL).pubsub()
            self.pubsub.subscribe(wake.channel())
            self.pubsub.get_message(timeout=2)  # the subscription's confirmation
        else:
            self.pubsub = None
            self.token = wake.QUEUE_VERSION.read_shared()

    def heard(self, timeout: float = 0.0) -> bool:
        if self.pubsub is not None:
            return (
                self.pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout) is not None
            )
        return wake.QUEUE_VERSION.read_shared() != self.token

    def close(self):
        if self.pubsub is not None:
            self.pubsub.close()


@needs_wake_channel
def test_an_enqueue_in_a_transaction_is_announced_at_its_commit_not_before():
    ear = Ear()
    broker = wake.WakingORM(list_key="wake-test")
    try:
        with transaction.atomic():
            broker.enqueue("a task")
            # A pusher woken now would find no visible row and go back to its wait.
            assert not ear.heard(timeout=0.2)
        assert ear.heard(timeout=2)
    finally:
        broker.purge_queue()
        ear.close()


@needs_wake_channel
def test_an_enqueue_outside_a_transaction_is_announced_at_once():
    ear = Ear()
    broker = wake.WakingORM(list_key="wake-test")
    try:
        broker.enqueue("a task")
        assert ear.heard(timeout=2)
        assert broker.queue_size() == 1
    finally:
        broker.purge_queue()
        ear.close()


@pytest.fixture
def research_rules() -> list[dict]:
    return [{"match": "capital", "reply": "Paris."}, ANNOUNCE_SKIP]


@needs_wake_channel
def test_a_waiting_worker_takes_each_send_when_it_is_enqueued(
    two_agents, running_server, main_token
):
    """The worker's idle wait is two minutes here, each send waits 30 s for its reply: only an
    announcement can have woken the worker for it."""
    worker = start_worker(env={"OPENCLAW_QUEUE_IDLE_SECONDS": "120"})
    try:
        for n in range(3):
            details = send_to_research(running_server, main_token, f"capital {n}?", timeout=30)
            assert details["status"] == "ok", details
            assert details["reply"] == "Paris."
    finally:
        worker.stop()


def test_an_announcement_redis_refuses_is_skipped_for_a_while_and_logged(settings, caplog):
    """A Redis that is down costs one failed attempt, not a timeout per enqueue; the tasks stay
    in the table for the pusher's next look (within IDLE_SECONDS)."""
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    wakeups.forget()
    try:
        with caplog.at_level("WARNING", logger="openclaw.wakeups"):
            wake.announce()
            wake.announce()
        assert len(caplog.records) == 1  # the second one did not try
        assert "could not publish the wake-up of a queued task" in caplog.records[0].getMessage()
        assert wakeups._down_until > 0
    finally:
        wakeups.forget()
