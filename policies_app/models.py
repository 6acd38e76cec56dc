"""The send policy (reference §6): what `policy.py` decides on, and who changed it when.

Where messages go and what came of each send (channels, the delivery outbox) is sessions_app's:
see sessions_app/delivery/.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone

from . import policy
from .policy import Rule

ACTIONS = [(policy.ALLOW, "allow"), (policy.DENY, "deny")]
CHAT_TYPES = [("", "any"), ("direct", "direct"), ("group", "group"), ("channel", "channel")]


# --- Send policy ----------------------------------------------------------------------------


class SendPolicy(models.Model):
    """OpenClaw's `session.sendPolicy`: a default and ordered rules. One row (id=1).

    `enabled=False` is "no session.sendPolicy in the config": everything may be sent, whatever
    the default and rules say (a session's own override still applies).
    """

    default_action = models.CharField(max_length=8, choices=ACTIONS, default=policy.ALLOW)
    enabled = models.BooleanField(default=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "send policy"
        verbose_name_plural = "send policy"
        constraints = [
            models.CheckConstraint(condition=Q(id=1), name="sendpolicy_singleton"),
            models.CheckConstraint(
                condition=Q(default_action__in=[policy.ALLOW, policy.DENY]),
                name="sendpolicy_default_action_valid",
            ),
        ]

    def __str__(self):
        state = "enabled" if self.enabled else "disabled"
        return f"Send policy ({state}, default {self.default_action})"

    @classmethod
    def load(cls) -> SendPolicy:
        config, _ = cls.objects.get_or_create(id=1)
        return config

    def rules_for_evaluate(self) -> list[policy.Rule]:
        """The rules in evaluation order, as `policy.evaluate()` takes them."""
        return [rule.to_rule() for rule in self.rules.all()]


class SendPolicyRule(models.Model):
    """One `rules[]` entry: `action` when every non-blank match field matches."""

    policy = models.ForeignKey(SendPolicy, on_delete=models.CASCADE, related_name="rules")
    position = models.PositiveIntegerField(default=0)
    action = models.CharField(max_length=8, choices=ACTIONS)
    channel = models.CharField(max_length=64, blank=True)
    chat_type = models.CharField(max_length=16, choices=CHAT_TYPES, blank=True)
    key_prefix = models.CharField(max_length=512, blank=True)
    raw_key_prefix = models.CharField(max_length=512, blank=True)
    note = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["position", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(action__in=[policy.ALLOW, policy.DENY]),
                name="sendpolicyrule_action_valid",
            ),
            models.CheckConstraint(
                condition=Q(chat_type__in=["", "direct", "group", "channel"]),
                name="sendpolicyrule_chat_type_valid",
            ),
        ]

    def __str__(self):
        return f"{self.action} ({policy.describe(self.to_rule())})"

    def to_rule(self) -> Rule:  # not policy.Rule: `policy` is the foreign key in this class
        return policy.Rule(
            action=self.action,
            channel=self.channel,
            chat_type=self.chat_type,
            key_prefix=self.key_prefix,
            raw_key_prefix=self.raw_key_prefix,
            note=self.note,
        )


# --- History --------------------------------------------------------------------------------


class SendPolicyChange(models.Model):
    """One saved edit of the send policy: who, when, and what changed (see `history.py`)."""

    user = models.ForeignKey(
        "auth.User", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Kept as text too, so the history still names a user who has since been deleted.
    username = models.CharField(max_length=150, blank=True)
    changed_at = models.DateTimeField(default=timezone.now)
    summary = models.TextField()
    # Why, in the editor's words (optional).
    note = models.CharField(max_length=300, blank=True)
    before = models.JSONField(default=dict)
    after = models.JSONField(default=dict)

    class Meta:
        verbose_name = "send policy change"
        ordering = ["-changed_at", "-id"]

    def __str__(self):
        return f"{self.changed_at:%Y-%m-%d %H:%M} {self.username or '?'}: {self.summary}"
