"""Watchers and queued notifications (send_modes.py registers, notifies and consumes them)."""

from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from openclaw_common import keys

from .core import Session


class SessionWatcher(models.Model):
    """`watcher_key` watches `session` from state version `cursor` on (9.6 §2.2). No unwatch."""

    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="watchers")
    watcher_key = models.CharField(max_length=keys.MAX_KEY_LENGTH)
    cursor = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "sessions_app"
        constraints = [
            models.UniqueConstraint(
                fields=["session", "watcher_key"], name="session_watcher_unique"
            ),
        ]

    def __str__(self):
        return f"{self.watcher_key} watches {self.session_id}@{self.cursor}"


class SessionNotification(models.Model):
    """Context queued for a session's next turn without waking it (`mode: "notify"`)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4)
    session = models.ForeignKey(Session, on_delete=models.CASCADE, related_name="notifications")
    source_key = models.CharField(max_length=keys.MAX_KEY_LENGTH, blank=True)
    text = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        app_label = "sessions_app"
        indexes = [models.Index(fields=["session", "created_at"], name="notification_session")]

    def __str__(self):
        return f"notification {self.id} for {self.session_id}"
