"""The delivery outbox: policy enforcement, routing, adapters, retries (reference §4.6, §6)."""

from __future__ import annotations

import json
import logging
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django_q.models import OrmQ

from policies_app.models import SendPolicy, SendPolicyRule
from sessions_app.delivery import (
    DeliveryTarget,
    announce_target,
    deliver,
    enqueue_delivery,
    retry_delivery,
    retry_due_deliveries,
)
from sessions_app.models import ChannelConfig, Delivery, Run, Session
from tests.conftest import make_session

DISCORD_GROUP = "agent:main:discord:group:dev"
LATER = timedelta(hours=1)


class Webhook:
    """A receiver on 127.0.0.1 that records each POST and can be told to fail the next N."""

    def __init__(self):
        self.requests: list[dict] = []
        self.failures_left = 0
        self.url = ""

    def fail_next(self, count: int) -> None:
        self.failures_left = count


@pytest.fixture
def webhook():
    hook = Webhook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            hook.requests.append(json.loads(body))
            if hook.failures_left > 0:
                hook.failures_left -= 1
                status, reply = 500, b"receiver is down"
            else:
                status, reply = 200, b"ok"
            self.send_response(status)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hook.url = f"http://127.0.0.1:{server.server_port}/hook"
    yield hook
    server.shutdown()
    server.server_close()
    thread.join()


def seed_policy() -> None:
    """The seeds' example: deny discord groups, default allow."""
    config = SendPolicy.load()
    config.enabled = True
    config.save()
    SendPolicyRule.objects.create(
        policy=config, action="deny", channel="discord", chat_type="group"
    )


def webhook_channel(url: str, *, channel: str = "discord", max_attempts: int = 5) -> None:
    ChannelConfig.objects.create(
        channel=channel, adapter="webhook", webhook_url=url, max_attempts=max_attempts
    )


def routed_session(key: str = "agent:main:main") -> Session:
    return make_session(
        key,
        deliveryContext={"channel": "discord", "to": "channel:123", "accountId": "bot-1"},
    )


def enqueue(session: Session, text: str = "hello", *, kind: str = "announce", run=None):
    with transaction.atomic():
        return enqueue_delivery(session=session, text=text, kind=kind, run=run)


# --- policy at the delivery point -----------------------------------------------------------


def test_the_seed_policy_blocks_an_announce_to_a_discord_group(
    agents, django_capture_on_commit_callbacks
):
    seed_policy()
    session = make_session(DISCORD_GROUP, channel="discord")
    with django_capture_on_commit_callbacks() as callbacks:
        delivery = enqueue(session)
    delivery.refresh_from_db()
    assert delivery.status == "blocked"
    assert delivery.decided_by == "rule 1 denies (channel=discord, chatType=group)"
    assert delivery.last_error == "send blocked by session policy"
    assert (delivery.channel, delivery.to, delivery.attempts) == ("discord", "channel:dev", 0)
    assert callbacks == []  # nothing is sent


def test_a_session_override_allow_delivers_despite_a_deny_rule(
    agents, django_capture_on_commit_callbacks
):
    seed_policy()
    session = make_session(DISCORD_GROUP, sendPolicy="allow")
    with django_capture_on_commit_callbacks() as callbacks:
        delivery = enqueue(session)
    assert delivery.status == "pending" and delivery.decided_by == "session override: allow"
    assert len(callbacks) == 1


def test_with_no_policy_enabled_a_discord_group_is_delivered(agents):
    SendPolicy.load()  # disabled: as OpenClaw without session.sendPolicy
    delivery = enqueue(make_session(DISCORD_GROUP))
    assert delivery.status == "pending" and delivery.decided_by == "no send policy is configured"
    assert deliver(delivery.pk) == "sent"


@pytest.mark.django_db(transaction=True)
def test_enqueue_delivery_refuses_to_run_outside_a_transaction(agents):
    session = make_session("agent:main:main", channel="webchat")
    with pytest.raises(AssertionError, match="needs a transaction"):
        enqueue_delivery(session=session, text="x", kind="reply")
    assert not Delivery.objects.exists()


def test_the_task_is_queued_only_after_commit(agents, django_capture_on_commit_callbacks):
    if "orm" not in settings.Q_CLUSTER:
        pytest.skip("reads the queue through the ORM broker")
    session = make_session("agent:main:main", channel="webchat")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        delivery = enqueue(session)
        assert OrmQ.objects.count() == 0
    # The enqueue, then the broker's announcement of it at that commit (runs/broker.py).
    assert len(callbacks) == 2
    queued = OrmQ.objects.get()
    assert queued.func() == "sessions_app.delivery.deliver" and queued.args() == (delivery.pk,)


# --- adapters -------------------------------------------------------------------------------


def test_a_webchat_delivery_is_marked_sent(agents):
    delivery = enqueue(make_session("agent:main:main", channel="webchat"), kind="reply")
    assert (delivery.channel, delivery.adapter) == ("webchat", "webchat")
    assert deliver(delivery.pk) == "sent"
    delivery.refresh_from_db()
    assert delivery.status == "sent" and delivery.attempts == 1 and delivery.sent_at is not None
    assert delivery.next_attempt_at is None


def test_the_log_adapter_logs_the_message_and_marks_it_sent(agents, caplog):
    delivery = enqueue(
        make_session("agent:main:telegram:group:-100:topic:7"), text="build is green"
    )
    assert delivery.adapter == "log"
    with caplog.at_level(logging.INFO, logger="openclaw.delivery"):
        assert deliver(delivery.pk) == "sent"
    (record,) = [r for r in caplog.records if r.name == "openclaw.delivery"]
    assert "telegram:group:-100 thread 7" in record.getMessage()
    assert "build is green" in record.getMessage()


def test_a_webhook_delivery_posts_the_message_and_is_marked_sent(agents, webhook):
    webhook_channel(webhook.url)
    session = routed_session()
    delivery = enqueue(session, text="the answer", kind="subagent_announce")
    assert deliver(delivery.pk) == "sent"
    assert webhook.requests == [
        {
            "deliveryId": delivery.pk,
            "sessionKey": "agent:main:main",
            "channel": "discord",
            "to": "channel:123",
            "accountId": "bot-1",
            "threadId": None,
            "text": "the answer",
            "kind": "subagent_announce",
        }
    ]
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("sent", 1, "")


def test_a_webhook_failure_schedules_the_next_attempt_with_backoff(agents, webhook):
    webhook_channel(webhook.url)
    webhook.fail_next(2)
    delivery = enqueue(routed_session())
    start = timezone.now()
    assert deliver(delivery.pk, now=start) == "pending"
    delivery.refresh_from_db()
    assert delivery.next_attempt_at == start + timedelta(seconds=2)
    assert delivery.last_error == "HTTP 500 (no content type, 16 bytes)"  # never the body
    retry_due_deliveries(now=start + timedelta(seconds=2))
    delivery.refresh_from_db()
    assert delivery.attempts == 2
    assert delivery.next_attempt_at == start + timedelta(seconds=2 + 4)


def test_a_webhook_failing_twice_then_succeeding_is_sent_on_the_third_attempt(agents, webhook):
    webhook_channel(webhook.url)
    webhook.fail_next(2)
    delivery = enqueue(routed_session())
    start = timezone.now()
    assert deliver(delivery.pk, now=start) == "pending"
    assert retry_due_deliveries(now=start + timedelta(seconds=1)) == 0  # backoff not over
    assert retry_due_deliveries(now=start + LATER) == 1
    assert retry_due_deliveries(now=start + 2 * LATER) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("sent", 3)
    assert len(webhook.requests) == 3
    assert retry_due_deliveries(now=start + 3 * LATER) == 0


def test_a_webhook_that_keeps_failing_ends_failed_with_the_error_visible(agents, webhook):
    webhook_channel(webhook.url, max_attempts=3)
    webhook.fail_next(100)
    delivery = enqueue(routed_session())
    start = timezone.now()
    deliver(delivery.pk, now=start)
    for hour in range(1, 6):
        retry_due_deliveries(now=start + hour * LATER)
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert delivery.last_error == "HTTP 500 (no content type, 16 bytes)"  # never the body
    assert delivery.next_attempt_at is None
    assert len(webhook.requests) == 3
    assert list(Delivery.objects.failed()) == [delivery]


def test_an_unreachable_webhook_is_a_failed_attempt(agents, webhook):
    webhook_channel("http://127.0.0.1:9/nothing-listens-here")
    delivery = enqueue(routed_session())
    assert deliver(delivery.pk) == "pending"
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.last_error.startswith("webhook unreachable")


def test_a_redelivered_task_sends_once(agents, webhook):
    webhook_channel(webhook.url)
    delivery = enqueue(routed_session())
    assert deliver(delivery.pk) == "sent"
    assert deliver(delivery.pk) is None
    assert len(webhook.requests) == 1
    delivery.refresh_from_db()
    assert delivery.attempts == 1


def test_an_attempt_in_flight_is_not_claimed_again(agents, webhook):
    webhook_channel(webhook.url)
    delivery = enqueue(routed_session())
    now = timezone.now()
    assert Delivery.objects.claim(delivery.pk, now=now)  # a worker has it
    assert deliver(delivery.pk, now=now) is None
    assert retry_due_deliveries(now=now + timedelta(seconds=30)) == 0
    assert webhook.requests == []
    # the worker died: once the lease runs out the sweep sends it
    assert retry_due_deliveries(now=now + timedelta(seconds=61)) == 1
    assert len(webhook.requests) == 1


def test_the_sweep_sends_a_delivery_whose_task_was_lost(agents, webhook):
    webhook_channel(webhook.url)
    delivery = enqueue(routed_session())  # its on_commit task never runs in this test
    assert retry_due_deliveries() == 1
    delivery.refresh_from_db()
    assert delivery.status == "sent" and len(webhook.requests) == 1


# --- no route, manual retry -----------------------------------------------------------------


def test_a_session_with_no_route_gets_a_failed_row_not_nothing(
    agents, django_capture_on_commit_callbacks
):
    session = make_session("agent:main:discord:direct:42", channel="discord")
    with django_capture_on_commit_callbacks() as callbacks:
        delivery = enqueue(session, kind="reply")
    delivery.refresh_from_db()
    assert delivery.status == "failed"
    assert delivery.last_error == "no delivery route for this session"
    assert delivery.channel == "discord" and delivery.text == "hello"
    assert callbacks == []


def test_a_manual_retry_of_a_failed_delivery_sends_it(
    agents, webhook, django_capture_on_commit_callbacks
):
    webhook_channel(webhook.url, max_attempts=1)
    webhook.fail_next(1)
    delivery = enqueue(routed_session())
    assert deliver(delivery.pk) == "failed"
    with django_capture_on_commit_callbacks() as callbacks:
        retried = retry_delivery(delivery.pk)
    assert retried.status == "pending" and retried.attempts == 1
    assert len(callbacks) == 1
    assert deliver(delivery.pk) == "sent"
    delivery.refresh_from_db()
    assert delivery.attempts == 2 and len(webhook.requests) == 2


def test_a_manual_retry_asks_the_policy_again(agents, webhook):
    webhook_channel(webhook.url, max_attempts=1)
    webhook.fail_next(1)
    session = routed_session(DISCORD_GROUP)
    delivery = enqueue(session)
    assert deliver(delivery.pk) == "failed"
    seed_policy()
    retried = retry_delivery(delivery.pk)
    assert retried.status == "blocked"
    assert retried.decided_by == "rule 1 denies (channel=discord, chatType=group)"


def test_a_manual_retry_finds_a_route_the_session_has_gained(agents):
    session = make_session("agent:main:main")
    delivery = enqueue(session)
    assert delivery.status == "failed"
    session.last_channel, session.last_to = "slack", "channel:C1"
    session.save()
    retried = retry_delivery(delivery.pk)
    assert (retried.status, retried.channel, retried.to, retried.adapter) == (
        "pending",
        "slack",
        "channel:C1",
        "log",
    )
    assert deliver(delivery.pk) == "sent"


def test_deleting_a_run_keeps_its_deliveries(agents):
    session = make_session("agent:main:main", channel="webchat")
    run = Run.objects.create(session=session)
    delivery = enqueue(session, run=run)
    run.delete()
    delivery.refresh_from_db()
    assert delivery.run_id is None


# --- announce target (reference §4.6) -------------------------------------------------------


def test_announce_target_comes_from_the_delivery_context():
    session = Session(
        key="agent:main:main",
        delivery_context={"channel": "discord", "to": "channel:dev", "accountId": "bot-1"},
        last_thread_id="99",
    )
    assert announce_target(session) == DeliveryTarget("discord", "channel:dev", "bot-1", "99")


def test_announce_target_prefers_last_fields_over_the_stored_context():
    session = Session(
        key="agent:main:discord:group:dev",
        delivery_context={"channel": "discord", "to": "channel:old", "accountId": "bot-1"},
        last_channel="telegram",
        last_to="group:-100",
    )
    assert announce_target(session) == DeliveryTarget("telegram", "group:-100")


@pytest.mark.parametrize(
    "key, expected",
    [
        ("agent:main:discord:group:dev", DeliveryTarget("discord", "channel:dev")),
        ("agent:main:slack:channel:c123", DeliveryTarget("slack", "channel:c123")),
        ("agent:main:slack:group:g1", DeliveryTarget("slack", "channel:g1")),
        (
            "agent:main:telegram:group:-100123:topic:42",
            DeliveryTarget("telegram", "group:-100123", thread_id="42"),
        ),
        (
            "agent:main:discord:channel:dev:thread:77",
            DeliveryTarget("discord", "channel:dev", thread_id="77"),
        ),
        ("agent:main:whatsapp:channel:news", DeliveryTarget("whatsapp", "channel:news")),
        ("agent:work:signal:group:abc:def", DeliveryTarget("signal", "group:abc:def")),
    ],
)
def test_announce_target_from_a_group_or_channel_key(key, expected):
    assert announce_target(Session(key=key)) == expected


@pytest.mark.parametrize(
    "key",
    [
        "agent:main:discord:direct:123",
        "agent:main:main",
        "agent:main:cron:nightly",
        "agent:main:telegram:group",
        "global",
    ],
)
def test_announce_target_is_none_for_keys_that_name_no_place(key):
    assert announce_target(Session(key=key)) is None


def test_a_recipient_too_long_to_store_is_no_route():
    session = Session(key="agent:main:main", last_channel="discord", last_to="x" * 300)
    session.delivery_context = {"channel": "discord", "to": "y" * 700}
    assert announce_target(session) == DeliveryTarget("discord", "x" * 300)
    session.last_to = ""
    assert announce_target(session) is None


def test_a_context_without_a_recipient_falls_back_to_the_key():
    session = Session(key="agent:main:discord:group:dev", last_channel="discord")
    assert announce_target(session) == DeliveryTarget("discord", "channel:dev")
