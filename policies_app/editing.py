"""Editing the send policy: the one function that writes it (STYLE.md rule 1).

`save_send_policy()` checks the switch, the default and every rule, writes the policy row and its
rules in one transaction, and records who changed what (`history.record_change`). The admin's
change form calls it; so would a command or an API. The field checks are also used one field at
a time by the admin's rule form, so a bad value is reported on its own field there, with the
same words.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Field, Model

from openclaw_common.errors import InvalidArgument

from . import history, policy
from .models import SendPolicy, SendPolicyChange, SendPolicyRule

# Channels OpenClaw knows; a channel configured in sessions_app (a channel row) is known too,
# when the caller passes it in (see known_channels).
KNOWN_CHANNELS = (
    "whatsapp",
    "telegram",
    "discord",
    "signal",
    "imessage",
    "webchat",
    "slack",
    "matrix",
    "msteams",
    "googlechat",
    "internal",
    "unknown",
)
CHAT_TYPE_WORDS = ("direct", "dm", "group", "supergroup", "channel")
EVERYTHING_WARNING = "This deny rule matches every session: it blocks everything."
RULE_FIELDS = history.RULE_FIELDS  # the columns of a rule an editor sets
RULE_KEYS = {"id", *RULE_FIELDS}
MAX_POSITION = 2**31 - 1  # PositiveIntegerField on every backend


def _max_length(model: type[Model], name: str) -> int:
    """A text column's own limit."""
    field = model._meta.get_field(name)
    assert isinstance(field, Field) and field.max_length is not None, name
    return field.max_length


MAX_CHANGE_NOTE = _max_length(SendPolicyChange, "note")


def known_channels(configured: Iterable[str] = ()) -> list[str]:
    """OpenClaw's channels and the `configured` ones. The channel rows belong to sessions_app,
    which this app does not import (STYLE.md: arrows point one way), so a caller that has them
    passes their names in (the admin passes sessions_app.delivery.configured_channels())."""
    return sorted(set(KNOWN_CHANNELS) | set(configured))


# --- one field at a time (the rule form uses these too) ------------------------------------


def clean_action(value: Any) -> str:
    action = policy.normalize_action(value) if isinstance(value, str) else None
    if action is None:
        raise InvalidArgument('Action: must be "allow" or "deny".')
    return action


def clean_channel(value: Any, *, known: Sequence[str] | None = None) -> str:
    channel = _text("Channel", "channel", value).lower()
    if channel:
        known = known_channels() if known is None else known
        if channel not in known:
            raise InvalidArgument(
                f"Channel: “{channel}” is not a known channel. Use one of: {', '.join(known)}"
                " (or add a channel row first)."
            )
    return channel


def clean_chat_type(value: Any) -> str:
    text = _text("Chat type", "chat_type", value).lower()
    if not text:
        return ""
    normalized = policy.normalize_chat_type(text)
    if not normalized:
        raise InvalidArgument(
            f"Chat type: “{text}” is not a chat type. Use one of: {', '.join(CHAT_TYPE_WORDS)}."
        )
    return normalized


def clean_prefix(label: str, name: str, value: Any) -> str:
    return _text(label, name, value)


def clean_position(value: Any) -> int:
    # bool is an int in Python; True is not a position.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_POSITION:
        raise InvalidArgument(f"Position: must be a whole number from 0 to {MAX_POSITION}.")
    return value


def _text(label: str, name: str, value: Any) -> str:
    """A rule's text field: a string, stripped, without NUL, within the column's length."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidArgument(f"{label}: must be text.")
    if "\x00" in value:
        raise InvalidArgument(f"{label}: must not contain NUL characters.")
    text = value.strip()
    limit = _max_length(SendPolicyRule, name)
    if len(text) > limit:
        raise InvalidArgument(f"{label}: at most {limit} characters (got {len(text)}).")
    return text


def blocks_everything(rule: SendPolicyRule) -> bool:
    """A deny rule with no match fields: legal, but it blocks every session without an override."""
    return rule.action == policy.DENY and rule.to_rule().is_empty_match


# --- the whole policy -----------------------------------------------------------------------


@dataclass
class PolicySave:
    """What `save_send_policy` did: the policy as saved, the history row (None when nothing
    changed) and warnings to show the person who saved it."""

    policy: SendPolicy
    change: SendPolicyChange | None
    warnings: list[str] = field(default_factory=list)


def clean_rules(rules: Any, *, known: Sequence[str]) -> list[dict]:
    """Every rule checked, in the order given; errors name the rule as `rules[i]`."""
    if isinstance(rules, (str, bytes)) or not isinstance(rules, Sequence):
        raise InvalidArgument("rules must be a list of rules")
    cleaned, seen_ids = [], set()
    for index, raw in enumerate(rules):
        where = f"rules[{index}]"
        if not isinstance(raw, Mapping):
            raise InvalidArgument(f"{where} must be an object")
        unknown = sorted(str(k) for k in raw if k not in RULE_KEYS)
        if unknown:
            raise InvalidArgument(f"{where}: unknown field(s) {', '.join(unknown)}")
        rule_id = raw.get("id")
        if rule_id is not None:
            if isinstance(rule_id, bool) or not isinstance(rule_id, int) or rule_id in seen_ids:
                raise InvalidArgument(f"{where}.id must be the id of a different saved rule")
            seen_ids.add(rule_id)
        try:
            cleaned.append(
                {
                    "id": rule_id,
                    "position": clean_position(raw.get("position", index + 1)),
                    "action": clean_action(raw.get("action")),
                    "channel": clean_channel(raw.get("channel"), known=known),
                    "chat_type": clean_chat_type(raw.get("chat_type")),
                    "key_prefix": clean_prefix("Key prefix", "key_prefix", raw.get("key_prefix")),
                    "raw_key_prefix": clean_prefix(
                        "Raw key prefix", "raw_key_prefix", raw.get("raw_key_prefix")
                    ),
                    "note": clean_prefix("Note", "note", raw.get("note")),
                }
            )
        except InvalidArgument as exc:
            raise InvalidArgument(f"{where}: {exc.message}") from None
    return cleaned


def numbered(cleaned: list[dict]) -> list[dict]:
    """The rules in evaluation order (position, then saved before new, then as listed), with
    positions renumbered 1, 2, 3…: the number the editor shows is the one the preview and the
    warnings say ("rule 1"), whatever positions were typed."""
    order = sorted(
        enumerate(cleaned),
        key=lambda item: (
            item[1]["position"],
            item[1]["id"] is None,
            item[1]["id"] or 0,
            item[0],
        ),
    )
    return [{**rule, "position": number} for number, (_, rule) in enumerate(order, start=1)]


def save_send_policy(
    *,
    enabled: bool,
    default_action: str,
    rules: Sequence[Mapping[str, Any]],
    actor=None,
    actor_name: str = "",
    note: str = "",
    configured_channels: Iterable[str] = (),
) -> PolicySave:
    """Replace the send policy: the switch, the default action and the whole ordered rule list.

    Each rule is a mapping with `action` and optional `channel`, `chat_type` (dm/supergroup are
    stored as direct/group), `key_prefix`, `raw_key_prefix`, `note` and `position` (default: its
    1-based place in the list; rules are evaluated by position, then by id, and saved renumbered
    1, 2, 3… in that order). A rule with `id`
    updates that saved rule, one without is added, and saved rules left out are deleted, so the
    history can tell a changed rule from a new one. `actor` is the Django user who made the
    change (None for a script; `actor_name` then names who, e.g. an API key); `note` says why, for the history. A rule's channel must be one
    of OpenClaw's or of `configured_channels` (the names of the channel rows).

    Raises InvalidArgument naming the field when anything is off; nothing is written then.
    Records one SendPolicyChange when something changed, in the same transaction.
    """
    if not isinstance(enabled, bool):
        raise InvalidArgument("enabled must be true or false")
    default = policy.normalize_action(default_action) if isinstance(default_action, str) else None
    if default is None:
        raise InvalidArgument('default_action must be "allow" or "deny"')
    if not isinstance(note, str) or "\x00" in note or len(note.strip()) > MAX_CHANGE_NOTE:
        raise InvalidArgument(f"note must be text of at most {MAX_CHANGE_NOTE} characters")
    cleaned = numbered(clean_rules(rules, known=known_channels(configured_channels)))

    SendPolicy.load()  # the row exists before it is locked
    with transaction.atomic():
        # The lock orders concurrent edits, so each history row's `before` is what it replaced.
        config = SendPolicy.objects.select_for_update().get(pk=1)
        before = history.snapshot(config)
        saved = {rule.pk: rule for rule in SendPolicyRule.objects.filter(policy=config)}
        stale = [r["id"] for r in cleaned if r["id"] is not None and r["id"] not in saved]
        if stale:
            raise InvalidArgument(
                f"rule id {stale[0]} is not a rule of the send policy (deleted meanwhile?)"
            )
        kept = {r["id"] for r in cleaned}
        SendPolicyRule.objects.filter(pk__in=[pk for pk in saved if pk not in kept]).delete()
        for values in cleaned:
            rule = saved.get(values["id"]) or SendPolicyRule(policy=config)
            for name, value in values.items():
                if name != "id":
                    setattr(rule, name, value)
            rule.save()
        config.enabled, config.default_action = enabled, default
        config.save(update_fields=["enabled", "default_action", "updated_at"])
        change = history.record_change(
            user=actor,
            actor_name=actor_name,
            before=before,
            after=history.snapshot(config),
            note=note.strip(),
        )
    ordered = SendPolicyRule.objects.filter(policy=config).order_by("position", "id")
    warnings = [
        f"Rule {number}: {EVERYTHING_WARNING}"
        for number, rule in enumerate(ordered, start=1)
        if blocks_everything(rule)
    ]
    return PolicySave(policy=config, change=change, warnings=warnings)
