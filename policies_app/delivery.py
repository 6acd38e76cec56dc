"""Outbound messages: where they go, the outbox row, and the task that sends them.

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

import functools
import json
import logging
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone
from django_q.tasks import async_task

from sessions_app import keys

from .models import ChannelConfig, Delivery
from .send_policy import check_send, send_blocked_error

logger = logging.getLogger("openclaw.delivery")

TASK = "policies_app.delivery.deliver"
NO_ROUTE = "no delivery route for this session"
WEBHOOK_TIMEOUT_SECONDS = 10
SWEEP_BATCH = 20  # × the webhook timeout stays below the task timeout (300 s)

# --- Announce target (reference §4.6) -------------------------------------------------------

_THREAD_SUFFIX = re.compile(r"^(?P<id>.+):(?:topic|thread):(?P<thread>\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class DeliveryTarget:
    channel: str
    to: str
    account_id: str = ""
    thread_id: str = ""


def target_from_key(key: str) -> DeliveryTarget | None:
    """`resolveAnnounceTargetFromKey`: `<channel>:<group|channel>:<id>[:topic|thread:<n>]`.

    Only group and channel keys name a place to post; direct, main, cron … keys give None.
    """
    parts = keys.rest_of(key).split(":")
    if len(parts) < 3 or parts[1] not in ("group", "channel") or not parts[0]:
        return None
    channel, kind, peer = parts[0], parts[1], ":".join(parts[2:])
    thread_id = ""
    match = _THREAD_SUFFIX.match(peer)
    if match:
        peer, thread_id = match.group("id"), match.group("thread")
    if not peer:
        return None
    if channel in ("discord", "slack") or kind == "channel":
        to = f"channel:{peer}"
    else:
        to = f"group:{peer}"
    return DeliveryTarget(channel=channel, to=to, thread_id=thread_id)


def target_from_context(session) -> DeliveryTarget | None:
    """The session's delivery context (`last*` fields over `deliveryContext`, then `origin`);
    None unless it names both a channel and a recipient."""
    context = (
        keys.normalize_delivery_context(
            session.delivery_context,
            last_channel=session.last_channel,
            last_to=session.last_to,
            last_account_id=session.last_account_id,
            last_thread_id=session.last_thread_id,
        )
        or {}
    )
    origin = session.origin if isinstance(session.origin, dict) else {}

    def text(value) -> str:
        return str(value).strip() if isinstance(value, str | int) else ""

    channel = text(context.get("channel")) or text(origin.get("provider"))
    to = text(context.get("to"))
    if not channel or not to:
        return None
    return DeliveryTarget(
        channel=channel.lower(),
        to=to,
        account_id=text(context.get("accountId")) or text(origin.get("accountId")),
        thread_id=text(context.get("threadId")),
    )


def announce_target(session) -> DeliveryTarget | None:
    """Where a message for `session` goes: its delivery context if that names a channel and a
    recipient, else what its key names (group and channel keys), else None.

    Simplified from the reference, which prefers the key unless the channel plugin asks for a
    session lookup: the stored context is tried first because it also carries the account.
    """
    for target in (target_from_context(session), target_from_key(session.key)):
        if target is not None and _fits(target):
            return target
    return None


def _fits(target: DeliveryTarget) -> bool:
    # A recipient cut to fit its column would route elsewhere, so one that does not fit is no
    # route at all (and a DataError on PostgreSQL would break the caller's transaction).
    return all(
        len(getattr(target, name)) <= Delivery._meta.get_field(name).max_length
        for name in ("channel", "to", "account_id", "thread_id")
    )


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


def _enqueue_on_commit(delivery_id: int) -> None:
    # robust: a broker that is down must not fail the caller's request after its commit; the
    # row is pending and due, so the sweep sends it.
    transaction.on_commit(functools.partial(_enqueue_task, delivery_id), robust=True)


def _enqueue_task(delivery_id: int) -> None:
    from sessions_app.runs.engine import task_broker  # this process's one broker (why: there)

    async_task(
        TASK,
        delivery_id,
        q_options={"task_name": f"deliver-{delivery_id}", "broker": task_broker()},
    )


# --- Sending --------------------------------------------------------------------------------


class DeliveryFailed(Exception):
    """An adapter could not hand the message over; the attempt is retried with backoff."""


def _send_webchat(delivery: Delivery) -> None:
    # The message is already in the session's transcript; live clients are pushed from there.
    return None


def _send_log(delivery: Delivery) -> None:
    logger.info(
        "delivery %s (%s) to %s:%s%s for %s: %s",
        delivery.pk,
        delivery.kind,
        delivery.channel,
        delivery.to,
        f" thread {delivery.thread_id}" if delivery.thread_id else "",
        delivery.session.key,
        delivery.text,
    )


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    # urllib would follow a 301/302 by re-sending the POST as a GET without the body, and the
    # 200 of that GET would count as delivered. A redirect is a failed attempt instead.
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def _send_webhook(delivery: Delivery) -> None:
    url = ChannelConfig.for_channel(delivery.channel).webhook_url
    if not url.lower().startswith(("http://", "https://")):
        raise DeliveryFailed(f"no webhook URL configured for channel {delivery.channel!r}")
    body = json.dumps(
        {
            "deliveryId": delivery.pk,
            "sessionKey": delivery.session.key,
            "channel": delivery.channel,
            "to": delivery.to,
            "accountId": delivery.account_id or None,
            "threadId": delivery.thread_id or None,
            "text": delivery.text,
            "kind": delivery.kind,
        }
    ).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "openclaw-sessions"},
    )
    try:
        with _opener.open(request, timeout=WEBHOOK_TIMEOUT_SECONDS) as response:
            status = response.status
    except urllib.error.HTTPError as exc:
        with exc:  # it holds the open response
            detail = exc.read(200).decode("utf-8", "replace").strip()
        raise DeliveryFailed(f"HTTP {exc.code}" + (f": {detail}" if detail else "")) from None
    except (OSError, ValueError) as exc:  # URLError, timeouts, refused connections, bad URLs
        reason = getattr(exc, "reason", exc)
        raise DeliveryFailed(f"webhook unreachable: {reason}") from None
    if not 200 <= status < 300:
        raise DeliveryFailed(f"HTTP {status}")


ADAPTERS = {
    ChannelConfig.WEBCHAT: _send_webchat,
    ChannelConfig.LOG: _send_log,
    ChannelConfig.WEBHOOK: _send_webhook,
}


def deliver(delivery_id: int, *, now: datetime | None = None) -> str | None:
    """The django-q2 task: make one attempt at a pending delivery that is due.

    Idempotent: the attempt is claimed with a conditional UPDATE, so a redelivered task, a
    second worker or the sweep find nothing to do while it is in flight or once it is done.
    A failed attempt is scheduled again with backoff (never a sleep in the worker) until
    `max_attempts`, then the row ends `failed`. Returns the row's status, or None if the
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
        adapter(delivery)
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
