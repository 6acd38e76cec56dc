"""What the worker knows of an ACP child (acp/facts.py records it, docs/acp.md): its harness
process and ACP session as of its last turn, and each permission request `permissionMode`
answered.

Kept in rows of their own, not only in the transcript's system notes: a transcript can go cold
(its rows moved to a file), and the admin and the browser show these on every page load.
"""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from .core import Run, Session

PERMISSION_MODES = ("deny", "read-only", "allow-all")  # acp/harnesses.py's, which sits above
# How a turn reached its ACP session (client.py's start event): a new one, the one kept in a warm
# process, or session/load in a new process.
REACHED = ("new", "warm", "load")


class AcpChild(models.Model):
    """One ACP child session's harness facts: the harness and cwd from its spawn; the ACP session,
    process and user of its latest turn; whether that process was kept warm after it."""

    session = models.OneToOneField(
        Session, primary_key=True, on_delete=models.CASCADE, related_name="acp"
    )
    harness = models.CharField(max_length=64)
    # The spawn's resolved cwd; each turn resolves it again (turn_cwd).
    cwd = models.CharField(max_length=4096, blank=True)
    acp_session_id = models.CharField(max_length=512, blank=True)
    turn_cwd = models.CharField(max_length=4096, blank=True)
    reached = models.CharField(max_length=8, blank=True)
    # The latest turn was served by a process kept warm (else it started one).
    warm_start = models.BooleanField(null=True, blank=True)
    # A continuation was asked for and could not be had (its process ended, no loadSession):
    # the ACP session it wanted.
    not_continued = models.CharField(max_length=512, blank=True)
    uid = models.BigIntegerField(null=True, blank=True)
    # The worker process (engine.worker_name) and the harness's pid in it, as of the latest turn.
    worker = models.CharField(max_length=100, blank=True)
    pid = models.IntegerField(null=True, blank=True)
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    turn_started_at = models.DateTimeField(null=True, blank=True)
    turn_ended_at = models.DateTimeField(null=True, blank=True)
    # The worker kept the process idle for the next turn, until this time at the latest (its
    # warmSeconds); None: it ended with the turn, or since (another turn in it failed).
    warm_until = models.DateTimeField(null=True, blank=True)
    warm_seconds = models.PositiveIntegerField(null=True, blank=True)

    class Meta:
        app_label = "sessions_app"
        indexes = [
            # A process's end reaches every child whose ACP session lived in it (facts.py).
            models.Index(fields=["worker", "pid"], name="acp_child_process"),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(reached__in=["", *REACHED]), name="acp_child_reached_valid"
            ),
        ]

    def __str__(self):
        return f"{self.session_id} ({self.harness})"


class AcpPermission(models.Model):
    """One `session/request_permission` and how `permissionMode` answered it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    session = models.ForeignKey(
        Session, on_delete=models.CASCADE, related_name="acp_permissions", db_index=False
    )
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    acp_session_id = models.CharField(max_length=512, blank=True)
    tool_call_id = models.CharField(max_length=200, blank=True)
    tool_kind = models.CharField(max_length=32, blank=True)
    title = models.CharField(max_length=500, blank=True)
    # What the harness offered: [{"optionId", "name", "kind"}], as it sent them (at most 20).
    options = models.JSONField(default=list, blank=True)
    mode = models.CharField(max_length=16)
    option_id = models.CharField(max_length=200, blank=True)  # chosen; blank: cancelled
    allowed = models.BooleanField()
    decided_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "sessions_app"
        indexes = [models.Index(fields=["session", "-decided_at"], name="acp_permission_recent")]
        constraints = [
            models.CheckConstraint(
                condition=Q(mode__in=PERMISSION_MODES), name="acp_permission_mode_valid"
            ),
        ]

    def __str__(self):
        verdict = "allowed" if self.allowed else "denied"
        return f"{self.session_id} {self.title or self.tool_kind}: {verdict} ({self.mode})"
