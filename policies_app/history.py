"""Who changed the send policy, when, and what changed.

`snapshot()` takes the policy as plain data before and after an edit; `record_change()` writes
one `SendPolicyChange` row with a readable summary of the difference. `editing.save_send_policy`
calls it once per save, after the policy and its rules are written, in the same transaction.
"""

from __future__ import annotations

from . import policy
from .models import SendPolicy, SendPolicyChange, SendPolicyRule

RULE_FIELDS = ("position", "action", "channel", "chat_type", "key_prefix", "raw_key_prefix", "note")


def snapshot(config: SendPolicy) -> dict:
    """The policy as JSON-ready data: the switch, the default, and the rules in order by id."""
    rules = SendPolicyRule.objects.filter(policy_id=config.pk).order_by("position", "id")
    return {
        "enabled": config.enabled,
        "default_action": config.default_action,
        "rules": [
            {"id": rule.pk, **{name: getattr(rule, name) for name in RULE_FIELDS}} for rule in rules
        ],
    }


def _describe(rule: dict) -> str:
    text = f"{rule['action']} ({policy.describe(policy.Rule(**_match(rule)))})"
    return f"{text} “{rule['note']}”" if rule.get("note") else text


def _match(rule: dict) -> dict:
    return {
        name: rule.get(name, "")
        for name in ("action", "channel", "chat_type", "key_prefix", "raw_key_prefix")
    }


def summarize(before: dict, after: dict) -> list[str]:
    """What changed from `before` to `after`, one line per change; empty when nothing did."""
    lines = []
    if before.get("enabled") != after.get("enabled"):
        lines.append("enabled" if after.get("enabled") else "disabled")
    if before.get("default_action") != after.get("default_action"):
        lines.append(f"default: {before.get('default_action')} → {after.get('default_action')}")
    old = {rule["id"]: rule for rule in before.get("rules", [])}
    new = {rule["id"]: rule for rule in after.get("rules", [])}
    for rule_id, rule in old.items():
        if rule_id not in new:
            lines.append(f"rule removed: {_describe(rule)}")
    for rule_id, rule in new.items():
        if rule_id not in old:
            lines.append(f"rule added: {_describe(rule)}")
            continue
        previous = old[rule_id]
        if _match(previous) != _match(rule) or previous.get("note") != rule.get("note"):
            lines.append(f"rule changed: {_describe(previous)} → {_describe(rule)}")
        elif previous.get("position") != rule.get("position"):
            lines.append(
                f"rule moved: {_describe(rule)} {previous.get('position')} → {rule.get('position')}"
            )
    return lines


def record_change(
    *, user, before: dict, after: dict, note: str = "", actor_name: str = ""
) -> SendPolicyChange | None:
    """Record one edit of the send policy by `user` (a staff user, or None for a script or an
    API key, which `actor_name` then names), with the editor's `note` on why.

    `before` and `after` are `snapshot()`s. A save that changed nothing records nothing and
    returns None.
    """
    lines = summarize(before, after)
    if not lines:
        return None
    username = user.get_username() if user is not None and user.is_authenticated else ""
    return SendPolicyChange.objects.create(
        user=user if username else None,
        username=username or actor_name[:150],
        summary="; ".join(lines),
        note=note,
        before=before,
        after=after,
    )


def recent_changes(limit: int = 20) -> list[SendPolicyChange]:
    return list(SendPolicyChange.objects.order_by("-changed_at", "-id")[:limit])
