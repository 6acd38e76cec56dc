"""The per-session state-version log's rows (state_log.py records and reads them)."""

from __future__ import annotations

from django.db import models
from django.db.models import Max, Q

from .core import Session, now_ms

KINDS = (
    "created",
    "human_direct_message",
    "upstream_missing",
    "goal_changed",
    "child_spawned",
    "run_completed",
    "run_failed",
    "compacted",
    "adopted",
)
ACTOR_TYPES = ("human", "agent", "system")
SUMMARY_CHARS = 200


class SessionEvent(models.Model):
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="state_events", db_index=False
    )
    sequence = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=32)
    actor_type = models.CharField(max_length=8)
    actor_id = models.CharField(max_length=200, blank=True)
    run_id = models.UUIDField(null=True, blank=True)
    summary = models.CharField(max_length=SUMMARY_CHARS)
    payload = models.JSONField(null=True, blank=True)
    occurred_at = models.BigIntegerField(default=now_ms)

    class Meta:
        app_label = "sessions_app"
        constraints = [
            models.UniqueConstraint(
                fields=["session", "sequence"], name="session_event_sequence_unique"
            ),
            models.CheckConstraint(condition=Q(kind__in=KINDS), name="session_event_kind_valid"),
            models.CheckConstraint(
                condition=Q(actor_type__in=ACTOR_TYPES), name="session_event_actor_valid"
            ),
        ]

    def __str__(self):
        return f"{self.session_id}@{self.sequence} {self.kind}"


def version_of(session_pk: int) -> int:
    """The log head: the newest sequence, 0 before any event."""
    head = SessionEvent.objects.filter(session_id=session_pk).aggregate(v=Max("sequence"))["v"]
    return head or 0
