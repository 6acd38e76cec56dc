"""A sub-agent task's result owed to its requester (OpenClaw 9.6 §1.2–1.6; docs/orchestration.md).

One row per ended task, written in the transaction that ends it, so a result is never lost
between the child's finish and the parent's turn. It is delivered as a turn in the requester's
session (`turn_run`); its status says where that stands, in 9.6's deliveryStatus words. Status
changes only through the methods below (conditional updates, like Run's).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from openclaw_common import keys

from .core import Run, Session


class CompletionQuerySet(models.QuerySet["Completion"]):
    def owed(self) -> CompletionQuerySet:
        """Not delivered yet, and still to be."""
        return self.filter(status__in=[Completion.PENDING, Completion.SESSION_QUEUED])

    def due(self, now: datetime) -> CompletionQuerySet:
        """Pending attempts whose backoff is over (a held batch member has no due time)."""
        return self.filter(status=Completion.PENDING, next_attempt_at__lte=now)


class Completion(models.Model):
    PENDING = "pending"  # waiting for its turn to be started (a retry's backoff, or its batch)
    SESSION_QUEUED = "session_queued"  # its turn exists, queued behind the requester's work
    DELIVERED = "delivered"  # the requester's turn with it ended ok (or it was ANNOUNCE_SKIP)
    FAILED = "failed"  # every attempt failed until the retry window closed: last_error says why
    DISMISSED = "dismissed"  # cancelled with its requester (a Stop, subagents cancel)
    PARENT_MISSING = "parent_missing"  # no requester session left to receive it
    NOT_APPLICABLE = "not_applicable"  # spawned with expectsCompletionMessage: false
    STATUSES = [
        (s, s)
        for s in (
            PENDING,
            SESSION_QUEUED,
            DELIVERED,
            FAILED,
            DISMISSED,
            PARENT_MISSING,
            NOT_APPLICABLE,
        )
    ]
    FINAL = frozenset({DELIVERED, FAILED, DISMISSED, PARENT_MISSING, NOT_APPLICABLE})

    # The turn that ended the task (one completion per ending turn: the handoff is idempotent).
    child_run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="completion")
    # The task's first run (its spawn): what `subagents` calls the task.
    task_run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="task_completions")
    child_session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="+")
    # The session that receives it: the spawner, or the spawner's own requester when that
    # session is gone (9.6 §1.2).
    requester_key = models.CharField(max_length=keys.MAX_KEY_LENGTH)
    status = models.CharField(max_length=16, choices=STATUSES, default=PENDING)
    # completionTarget "parent": a private turn, never delivered to a channel.
    private = models.BooleanField(default=False)
    # The yielded turn whose frozen batch of children this belongs to: one successor turn
    # carries the whole batch once every child has settled.
    batch_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="batch_completions"
    )
    # The requester turn that carries it (the latest attempt).
    turn_run = models.ForeignKey(
        Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="carried_completions"
    )
    # How the task ended: {status, error, result, runtimeMs, usage, label, task}.
    outcome = models.JSONField(default=dict, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    delivered_at = models.DateTimeField(null=True, blank=True)

    objects = CompletionQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["requester_key", "status"], name="completion_requester"),
            models.Index(
                fields=["next_attempt_at"],
                condition=Q(status="pending"),
                name="completion_due",
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "pending",
                        "session_queued",
                        "delivered",
                        "failed",
                        "dismissed",
                        "parent_missing",
                        "not_applicable",
                    ]
                ),
                name="completion_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"completion of {self.child_session_id} → {self.requester_key} ({self.status})"

    @property
    def final(self) -> bool:
        return self.status in self.FINAL

    def _move(self, *, expect: list[str], **changes: Any) -> bool:
        """A conditional UPDATE from one of `expect`; False (and no change) if it moved on."""
        changes.setdefault("updated_at", timezone.now())
        updated = Completion.objects.filter(pk=self.pk, status__in=expect).update(**changes)
        if updated:
            for name, value in changes.items():
                if not hasattr(value, "resolve_expression"):
                    setattr(self, name, value)
        return bool(updated)

    def mark_queued(self, turn: Run) -> bool:
        """Its requester turn exists (queued): one more attempt."""
        ok = self._move(
            expect=[self.PENDING],
            status=self.SESSION_QUEUED,
            turn_run=turn,
            attempts=F("attempts") + 1,
            next_attempt_at=None,
        )
        if ok:
            self.attempts += 1
        return ok

    def mark_delivered(self, *, note: str = "") -> bool:
        now = timezone.now()
        return self._move(
            expect=[self.PENDING, self.SESSION_QUEUED],
            status=self.DELIVERED,
            delivered_at=now,
            next_attempt_at=None,
            last_error=note,
        )

    def retry_later(self, error: str, *, at: datetime) -> bool:
        return self._move(
            expect=[self.SESSION_QUEUED],
            status=self.PENDING,
            last_error=error[:2000],
            next_attempt_at=at,
        )

    def mark_failed(self, error: str) -> bool:
        return self._move(
            expect=[self.PENDING, self.SESSION_QUEUED],
            status=self.FAILED,
            last_error=error[:2000],
            next_attempt_at=None,
        )

    def dismiss(self, reason: str) -> bool:
        return self._move(
            expect=[self.PENDING, self.SESSION_QUEUED],
            status=self.DISMISSED,
            last_error=reason[:2000],
            next_attempt_at=None,
        )

    def retry_window_closed(self, now: datetime, *, window_seconds: int) -> bool:
        return now >= self.created_at + timedelta(seconds=window_seconds)
