"""What the send policy would decide: for one session key (the admin preview) and over every
active session (how many it would block). Both go through the pure `policy.evaluate()`, so
they explain a decision exactly as a delivery would. It reads sessions, so it lives here rather
than in policies_app, which decides without knowing what a session row is.
"""

from __future__ import annotations

from openclaw_common import keys
from policies_app import policy
from policies_app.models import SendPolicy

from ..models import GatewayConfig, Session

COUNT_CHUNK = 2000


def _decide(config: SendPolicy, rules, *, key, channel, last_channel, chat_type, override):
    # The same target check_send() builds from a session row.
    return policy.evaluate(
        default=config.default_action,
        rules=rules,
        configured=config.enabled,
        target=policy.Target(
            key=key,
            channel=channel or last_channel,
            chat_type=chat_type,
            override=override,
        ),
    )


def preview(key_or_session: str | Session, config: SendPolicy) -> dict:
    """The decision for a session (or a key, stored or not) under `config` as saved.

    Returns a dict for the template: `key`, `session` (the row, or None for a key with no
    session), `action`, `allowed`, `rule_index` / `rule_number` / `rule` / `note` (the rule that
    decided, or None), `reason`, `channel`, `chat_type`; or just `key` and `error` when the key
    is not a valid session key.
    """
    session: Session | None
    if isinstance(key_or_session, Session):
        session, key = key_or_session, key_or_session.key
    else:
        raw = (key_or_session or "").strip()
        try:
            key = keys.canonical_key(raw, settings=GatewayConfig.load().key_settings)
        except keys.InvalidKey as exc:
            return {"key": raw, "error": str(exc)}
        session = Session.objects.filter(key=key).first()
    rules = config.rules_for_evaluate()
    decision = _decide(
        config,
        rules,
        key=key,
        channel=session.channel if session else "",
        last_channel=session.last_channel if session else "",
        chat_type=session.chat_type if session else "",
        override=session.send_policy if session else "",
    )
    rule = rules[decision.rule_index] if decision.rule_index is not None else None
    return {
        "key": key,
        "session": session,
        "action": decision.action,
        "allowed": decision.allowed,
        "rule_index": decision.rule_index,
        "rule_number": decision.rule_index + 1 if rule else None,
        "rule": policy.describe(rule) if rule else None,
        "note": rule.note if rule else "",
        "reason": decision.reason,
        "channel": decision.channel,
        "chat_type": decision.chat_type,
    }


def count_blocked(config: SendPolicy) -> int:
    """How many active (not archived) sessions `config` would block right now."""
    return blocked_sessions(config, limit=0)[0]


def blocked_sessions(
    config: SendPolicy, rules: list[policy.Rule] | None = None, *, limit: int
) -> tuple[int, list[dict]]:
    """How many active (not archived) sessions `config` would block, and the first `limit` of
    them (by key) with the rule that blocks each. `rules` replaces the saved rules (a dry run
    of an unsaved rule set: `config` may then be an unsaved SendPolicy too).

    One pass over five columns with a server-side cursor where the database has one; the rules
    are loaded once. With the policy disabled only session overrides can deny, so SQL counts it.
    """
    active = Session.objects.active()
    if not config.enabled and limit == 0:
        return active.filter(send_policy=policy.DENY).count(), []
    rules = config.rules_for_evaluate() if rules is None else rules
    if limit:
        active = active.order_by("key")  # the listed ones are the first by key
    rows = active.values_list("key", "channel", "last_channel", "chat_type", "send_policy")
    blocked = 0
    listed: list[dict] = []
    for key, channel, last_channel, chat_type, override in rows.iterator(chunk_size=COUNT_CHUNK):
        decision = _decide(
            config,
            rules,
            key=key,
            channel=channel,
            last_channel=last_channel,
            chat_type=chat_type,
            override=override,
        )
        if decision.allowed:
            continue
        blocked += 1
        if len(listed) < limit:
            index = decision.rule_index
            listed.append(
                {
                    "key": key,
                    "reason": decision.reason,
                    "ruleNumber": index + 1 if index is not None else None,
                    "channel": decision.channel,
                    "chatType": decision.chat_type,
                }
            )
    return blocked, listed


def count_active() -> int:
    return Session.objects.active().count()
