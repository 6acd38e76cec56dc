"""Channels and the delivery outbox: where messages for a channel leave the service, and one row
per outbound message.

Every outbound message is a `Delivery` row written in the same transaction as the change that
caused it (transactional outbox, stack.md §8.2); its status changes only through the methods
below. The send policy that decides whether it may go is policies_app's.

The tables keep the names they had when these models lived in policies_app (`db_table`), so
moving them here moved no data (migrations sessions_app 0009 / policies_app 0004).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.validators import URLValidator
from django.db import models
from django.db.models import F, Q
from django.db.models.functions import Lower
from django.utils import timezone

from policies_app import policy

# --- Channels -------------------------------------------------------------------------------


class ChannelConfig(models.Model):
    """How messages for one channel leave the service. A channel without a row uses
    `webchat` when it is the webchat channel and `log` otherwise (see `for_channel`)."""

    # Adapters this model names itself: the defaults of for_channel(), and the webhook's URL.
    WEBCHAT, WEBHOOK, LOG = "webchat", "webhook", "log"
    DEFAULT_MAX_ATTEMPTS = 5

    channel = models.CharField(max_length=64, unique=True)
    # The name of a registered adapter (delivery/adapters/). Checked by save_channel() and the
    # admin's form, not by choices or a check constraint: both are frozen into migrations, and
    # a new adapter should need none.
    adapter = models.CharField(max_length=16, default=LOG)
    webhook_url = models.URLField(
        max_length=2000, blank=True, validators=[URLValidator(schemes=["http", "https"])]
    )
    max_attempts = models.PositiveSmallIntegerField(default=DEFAULT_MAX_ATTEMPTS)

    class Meta:
        db_table = "policies_app_channelconfig"
        verbose_name = "channel"
        ordering = ["channel"]
        constraints = [
            models.CheckConstraint(
                condition=Q(channel=Lower("channel")), name="channelconfig_channel_lowercase"
            ),
            models.CheckConstraint(
                condition=~Q(adapter="webhook") | ~Q(webhook_url=""),
                name="channelconfig_webhook_has_url",
            ),
            models.CheckConstraint(
                condition=Q(max_attempts__gte=1), name="channelconfig_max_attempts_positive"
            ),
        ]

    def __str__(self):
        return f"{self.channel} → {self.adapter}"

    def save(self, *args, **kwargs):
        self.channel = self.channel.strip().lower()
        super().save(*args, **kwargs)

    @classmethod
    def for_channel(cls, channel: str) -> ChannelConfig:
        """The channel's row, or an unsaved default when it has none."""
        name = (channel or "").strip().lower()
        found = cls.objects.filter(channel=name).first()
        if found is not None:
            return found
        return cls(channel=name, adapter=cls.WEBCHAT if name == "webchat" else cls.LOG)


# --- The outbox -----------------------------------------------------------------------------


def backoff_seconds(attempts: int) -> int:
    """Wait before the next attempt after `attempts` failed ones: 2, 4, 8, 16 … capped at 300."""
    return min(2 ** max(attempts, 1), 300)


class DeliveryQuerySet(models.QuerySet):
    def pending(self):
        return self.filter(status=Delivery.PENDING)

    def failed(self):
        return self.filter(status=Delivery.FAILED)

    def due(self, now: datetime):
        return self.pending().filter(next_attempt_at__lte=now).order_by("next_attempt_at", "id")

    def claim(self, delivery_id: int, *, now: datetime) -> bool:
        """Take one attempt at a pending, due delivery; False when someone else has it or it is
        done. The lease pushes `next_attempt_at` ahead so a redelivered task (or the sweep) does
        not send it again while this attempt is in flight; if the worker dies, it comes back
        when the lease runs out."""
        return bool(
            self.filter(pk=delivery_id, status=Delivery.PENDING, next_attempt_at__lte=now).update(
                attempts=F("attempts") + 1,
                next_attempt_at=now + timedelta(seconds=Delivery.CLAIM_LEASE_SECONDS),
                updated_at=now,
            )
        )


class Delivery(models.Model):
    """One outbound message to a channel: pending → sent | failed, or blocked from the start."""

    PENDING, SENT, FAILED, BLOCKED = "pending", "sent", "failed", "blocked"
    STATUSES = [(s, s) for s in (PENDING, SENT, FAILED, BLOCKED)]
    # webhook_event: a finished send or spawn, POSTed to the requester agent's webhook.
    KINDS = [(k, k) for k in ("announce", "reply", "subagent_announce", "message", "webhook_event")]
    # Longer than the webhook timeout (10 s), so an attempt in flight is never claimed twice.
    CLAIM_LEASE_SECONDS = 60
    MAX_ERROR = 2000

    session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.CASCADE, related_name="deliveries"
    )
    run = models.ForeignKey(
        "sessions_app.Run",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="deliveries",
    )
    kind = models.CharField(max_length=20, choices=KINDS)
    channel = models.CharField(max_length=64, blank=True)
    to = models.CharField(max_length=600, blank=True)
    account_id = models.CharField(max_length=200, blank=True)
    thread_id = models.CharField(max_length=200, blank=True)
    text = models.TextField(blank=True)
    status = models.CharField(max_length=8, choices=STATUSES, default=PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    max_attempts = models.PositiveSmallIntegerField(default=ChannelConfig.DEFAULT_MAX_ATTEMPTS)
    # Set while pending (when the next attempt is due); null once sent, failed or blocked.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    # The send-policy decision's reason, e.g. "rule 1 denies (channel=discord, chatType=group)".
    decided_by = models.TextField(blank=True)
    adapter = models.CharField(max_length=16, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    sent_at = models.DateTimeField(null=True, blank=True)

    objects = DeliveryQuerySet.as_manager()

    class Meta:
        db_table = "policies_app_delivery"
        verbose_name_plural = "deliveries"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "next_attempt_at"], name="delivery_status_due"),
            models.Index(fields=["session", "-created_at"], name="delivery_session_recent"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["pending", "sent", "failed", "blocked"]),
                name="delivery_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(
                    kind__in=[
                        "announce",
                        "reply",
                        "subagent_announce",
                        "message",
                        "webhook_event",
                    ]
                ),
                name="delivery_kind_valid",
            ),
        ]

    def __str__(self):
        return f"delivery {self.pk} {self.kind} → {self.channel or '?'}:{self.to} ({self.status})"

    def _transition(self, *, expect: dict, **changes) -> bool:
        """A conditional UPDATE from the expected state; False (and no change) if it moved on."""
        changes.setdefault("updated_at", timezone.now())
        updated = Delivery.objects.filter(pk=self.pk, **expect).update(**changes)
        if updated:
            for name, value in changes.items():
                setattr(self, name, value)
        return bool(updated)

    def mark_sent(self, *, now: datetime | None = None) -> bool:
        now = now or timezone.now()
        return self._transition(
            expect={"status": self.PENDING},
            status=self.SENT,
            sent_at=now,
            next_attempt_at=None,
            updated_at=now,
        )

    def mark_failed_attempt(
        self, error: str, *, now: datetime | None = None, final: bool = False
    ) -> bool:
        """Record a failed attempt: schedule the next one with backoff, or end as failed once
        `max_attempts` attempts have been made, or at once when `final` (no later attempt can
        succeed). The error stays visible in `last_error`."""
        now = now or timezone.now()
        error = (error or "delivery failed")[: self.MAX_ERROR]
        expect = {"status": self.PENDING, "attempts": self.attempts}
        if final or self.attempts >= self.max_attempts:
            return self._transition(
                expect=expect,
                status=self.FAILED,
                last_error=error,
                next_attempt_at=None,
                updated_at=now,
            )
        return self._transition(
            expect=expect,
            last_error=error,
            next_attempt_at=now + timedelta(seconds=backoff_seconds(self.attempts)),
            updated_at=now,
        )

    def mark_blocked(self, reason: str, *, now: datetime | None = None) -> bool:
        """The send policy refused it; nothing will be sent."""
        return self._transition(
            expect={"status__in": [self.PENDING, self.FAILED]},
            status=self.BLOCKED,
            decided_by=reason,
            last_error=policy.BLOCKED_TEXT,
            next_attempt_at=None,
            updated_at=now or timezone.now(),
        )

    def reopen(self, *, decided_by: str, now: datetime | None = None) -> bool:
        """A failed delivery becomes pending and due now (a manual retry), with the policy
        decision that allowed it again; attempts are kept, so a delivery that used them all
        gets one more before it fails again."""
        now = now or timezone.now()
        return self._transition(
            expect={"status": self.FAILED},
            status=self.PENDING,
            decided_by=decided_by,
            next_attempt_at=now,
            updated_at=now,
        )
