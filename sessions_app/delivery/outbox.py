"""The outbox: one row per outbound message, and the task that sends it.

    enqueue_delivery()  inside the caller's transaction: policy check → Delivery row → task on commit
    deliver(id)         the django-q2 task: claim one attempt, run the channel's adapter, record it
    retry_due_deliveries()  the periodic sweep: attempts whose backoff has run out (and lost tasks)
    retry_delivery(id)  an operator's retry of a failed delivery

Nothing is dropped: a blocked send is a `blocked` row, a session with no route a `failed` row,
and a delivery that keeps failing ends `failed` with its last error. Attempts are
at-least-once: a worker that dies after the webhook answered but before the row was updated
sends again after the claim lease, so webhook receivers get `deliveryId` to drop repeats.
"""

from __future__ import annotations

import json
import logging
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from openclaw_common import keys, taskqueue
from policies_app.send_policy import check_send, send_blocked_error

from ..models import ChannelConfig, Delivery
from .adapters import ADAPTERS, DeliveryFailed, DeliveryRefused
from .targets import DeliveryTarget, announce_target

logger = logging.getLogger("openclaw.delivery")

# The package's public name rather than this module's, so the task name stays put if the package
# is reorganised again. Tasks queued under the old name (policies_app.delivery.deliver) fail to
# import in the worker; their rows stay pending and due, so the sweep sends them (migration
# sessions_app 0009 says why that is enough).
TASK = "sessions_app.delivery.deliver"
NO_ROUTE = "no delivery route for this session"
SWEEP_BATCH = 20  # × the webhook timeout stays below the task timeout (300 s)

# --- Enqueue --------------------------------------------------------------------------------


def enqueue_delivery(*, session, text: str, kind: str, run=None) -> Delivery:
    """Record one outbound message for `session` and send it after commit.

    Call inside the transaction that produced the message. The send policy decides first: a
    deny gives a `blocked` row (nothing is sent; the caller reports `send_blocked_error()`).
    Allowed messages go to the announce target; a webchat session without one is delivered to
    webchat; any other session without one gives a `failed` row ("no delivery route for this
    session"). Pending rows are handed to the `deliver` task once the transaction commits.
    """
    assert transaction.get_connection().in_atomic_block, "enqueue_delivery needs a transaction"
    now = timezone.now()
    decision = check_send(session)
    target = announce_target(session)
    if target is None and session.row_channel == "webchat":
        target = DeliveryTarget(channel="webchat", to="")
    row = Delivery(
        session=session,
        run=run,
        kind=kind,
        text=text,
        decided_by=decision.reason,
        created_at=now,
        updated_at=now,
    )
    if target is not None:
        row.channel, row.to = target.channel, target.to
        row.account_id, row.thread_id = target.account_id, target.thread_id
    else:
        row.channel = "" if session.row_channel == keys.UNKNOWN_CHANNEL else session.row_channel

    if not decision.allowed:
        row.status, row.last_error = Delivery.BLOCKED, send_blocked_error()
    elif target is None:
        row.status, row.last_error = Delivery.FAILED, NO_ROUTE
    else:
        config = ChannelConfig.for_channel(target.channel)
        row.adapter, row.max_attempts = config.adapter, config.max_attempts
        row.status, row.next_attempt_at = Delivery.PENDING, now
    row.save()
    if row.status == Delivery.PENDING:
        _enqueue_on_commit(row.pk)
    return row


def enqueue_webhook_event(*, session, agent_id: str, event: dict, run=None) -> Delivery:
    """Record one event for agent `agent_id`'s webhook (adapters/agent_webhook.py) and send it
    after commit, with the outbox's retries and a visible final state. No send policy: the
    webhook is an operator's integration, not a chat. Call inside the producing transaction."""
    assert transaction.get_connection().in_atomic_block, "enqueue_webhook_event needs a transaction"
    now = timezone.now()
    row = Delivery.objects.create(
        session=session,
        run=run,
        kind="webhook_event",
        channel="webhook",
        to=agent_id,
        text=json.dumps(event, separators=(",", ":"), default=str),
        adapter="agent_webhook",
        max_attempts=ChannelConfig.DEFAULT_MAX_ATTEMPTS,
        status=Delivery.PENDING,
        next_attempt_at=now,
        decided_by="agent webhook",
        created_at=now,
        updated_at=now,
    )
    _enqueue_on_commit(row.pk)
    return row


def _enqueue_on_commit(delivery_id: int) -> None:
    # A broker that is down must not fail the caller's request after its commit: the row is
    # pending and due, so the sweep sends it.
    taskqueue.enqueue_after_commit(TASK, delivery_id, name=f"deliver-{delivery_id}")


# --- Sending --------------------------------------------------------------------------------


def deliver(delivery_id: int, *, now: datetime | None = None) -> str | None:
    """The django-q2 task: make one attempt at a pending delivery that is due.

    Idempotent: the attempt is claimed with a conditional UPDATE, so a redelivered task, a
    second worker or the sweep find nothing to do while it is in flight or once it is done.
    A failed attempt is scheduled again with backoff (never a sleep in the worker) until
    `max_attempts`, then the row ends `failed`; a refused one (DeliveryRefused: the outbound
    policy) ends `failed` at once. Returns the row's status, or None if the
    attempt was not ours to make.
    """
    now = now or timezone.now()
    if not Delivery.objects.claim(delivery_id, now=now):
        return None
    delivery = Delivery.objects.select_related("session").get(pk=delivery_id)
    adapter = ADAPTERS.get(delivery.adapter)
    try:
        if adapter is None:
            raise DeliveryFailed(f"unknown adapter {delivery.adapter!r}")
        adapter().send(delivery)
    except DeliveryRefused as exc:
        logger.warning("delivery %s refused, not retried: %s", delivery.pk, exc)
        delivery.mark_failed_attempt(str(exc), now=now, final=True)
    except DeliveryFailed as exc:
        logger.warning("delivery %s attempt %s failed: %s", delivery.pk, delivery.attempts, exc)
        delivery.mark_failed_attempt(str(exc), now=now)
    except Exception as exc:  # a bug in an adapter must still leave the row visible
        logger.exception("delivery %s attempt %s crashed", delivery.pk, delivery.attempts)
        delivery.mark_failed_attempt(f"{type(exc).__name__}: {exc}", now=now)
    else:
        delivery.mark_sent(now=now)
    return delivery.status


def retry_due_deliveries(now: datetime | None = None, *, limit: int = SWEEP_BATCH) -> int:
    """The periodic sweep: one attempt at each pending delivery that is due (backoff over, or a
    task that never ran). Returns how many attempts it made; the rest wait for the next sweep."""
    now = now or timezone.now()
    due = list(Delivery.objects.due(now).values_list("pk", flat=True)[:limit])
    return sum(1 for delivery_id in due if deliver(delivery_id, now=now) is not None)


def retry_delivery(delivery_id: int) -> Delivery:
    """An operator's retry of a failed delivery: pending again (attempts kept), sent by the task
    after commit. The send policy is asked again, so a session since denied ends `blocked`; a
    delivery that had no route looks for one again. Other statuses are left as they are."""
    with transaction.atomic():
        delivery = (
            Delivery.objects.select_for_update().select_related("session").get(pk=delivery_id)
        )
        if delivery.status != Delivery.FAILED:
            return delivery
        decision = check_send(delivery.session)
        if not decision.allowed:
            delivery.mark_blocked(decision.reason)
            return delivery
        if not delivery.adapter:
            target = announce_target(delivery.session)
            if target is None:
                return delivery
            config = ChannelConfig.for_channel(target.channel)
            Delivery.objects.filter(pk=delivery.pk).update(
                channel=target.channel,
                to=target.to,
                account_id=target.account_id,
                thread_id=target.thread_id,
                adapter=config.adapter,
                max_attempts=config.max_attempts,
            )
            delivery.refresh_from_db()
        delivery.reopen(decided_by=decision.reason)
        _enqueue_on_commit(delivery.pk)
    return delivery
