"""The send policy over the API: OpenClaw's `session.sendPolicy` shape and rule by rule.

Both ways in (`PATCH /api/v1/config/ {"session.sendPolicy": …}` and `/api/v1/policies/`) and the
admin write the same rows through policies_app's one write, `editing.save_send_policy()`, so
the change history records every edit whoever made it. Here the API's JSON is read into the
rule dicts that function takes, and the saved rows are rendered back:

    {"default": "allow"|"deny",
     "rules": [{"action": "allow"|"deny",
                "match": {"channel"?, "chatType"?, "keyPrefix"?, "rawKeyPrefix"?}}]}

plus, in /api/v1/policies/, each rule's `id`, `position` and `note`, and `enabled` (OpenClaw's
"is there a session.sendPolicy at all"; in the config it is the value being null or not).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from openclaw_common.errors import InvalidArgument, NotFound
from policies_app import editing, policy
from policies_app.models import SendPolicy, SendPolicyRule

from ..delivery import configured_channels
from ..models import ApiKey
from ..store import require_scope
from . import send_policy_preview

MATCH_FIELDS = {  # API name → column
    "channel": "channel",
    "chatType": "chat_type",
    "keyPrefix": "key_prefix",
    "rawKeyPrefix": "raw_key_prefix",
}
RULE_FIELDS = frozenset({"id", "action", "match", "position", "note"})
POLICY_FIELDS = frozenset({"enabled", "default", "rules", "changeNote"})
OPENCLAW_FIELDS = frozenset({"default", "rules"})
DRY_RUN_FIELDS = frozenset({"enabled", "default", "rules", "limit"})
DRY_RUN_LIMIT, DRY_RUN_MAX_LIMIT = 100, 1000
MAX_RULES = 500


# --- rendering ------------------------------------------------------------------------------


def rule_as_dict(rule: SendPolicyRule | Mapping[str, Any]) -> dict:
    def get(name):
        return rule[name] if isinstance(rule, Mapping) else getattr(rule, name)

    match = {api: get(column) for api, column in MATCH_FIELDS.items() if get(column)}
    return {
        "id": get("id") if isinstance(rule, Mapping) else rule.pk,
        "position": get("position"),
        "action": get("action"),
        "match": match,
        "note": get("note"),
    }


def as_resource(config: SendPolicy | None = None) -> dict:
    """The policy as /api/v1/policies/ shows it: the switch, the default, the rules in order."""
    config = config or SendPolicy.load()
    rules = SendPolicyRule.objects.filter(policy=config).order_by("position", "id")
    return {
        "enabled": config.enabled,
        "default": config.default_action,
        "rules": [rule_as_dict(rule) for rule in rules],
        "updatedAt": int(config.updated_at.timestamp() * 1000),
    }


def as_openclaw(config: SendPolicy | None = None) -> dict | None:
    """`session.sendPolicy` as OpenClaw's config holds it; None when there is none."""
    resource = as_resource(config)
    if not resource["enabled"]:
        return None
    rules = [{"action": r["action"], "match": r["match"]} for r in resource["rules"]]
    return {"default": resource["default"], "rules": rules}


# --- reading --------------------------------------------------------------------------------


def _object(value: Any, where: str, allowed: frozenset[str]) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{where} must be an object")
    unknown = sorted(str(k) for k in value if k not in allowed)
    if unknown:
        raise InvalidArgument(
            f"{where}: unknown field(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})"
        )
    return value


def read_rule(raw: Any, where: str) -> dict:
    """One API rule → the dict save_send_policy takes (it checks the values, naming `where`)."""
    body = _object(raw, where, RULE_FIELDS)
    match = _object(body.get("match") or {}, f"{where}.match", frozenset(MATCH_FIELDS))
    rule: dict[str, Any] = {"action": body.get("action")}
    for api, column in MATCH_FIELDS.items():
        if match.get(api) is not None:
            rule[column] = match[api]
    for name in ("id", "position", "note"):
        if body.get(name) is not None:
            rule[name] = body[name]
    return rule


def read_rules(raw: Any, where: str = "rules") -> list[dict]:
    if not isinstance(raw, list):
        raise InvalidArgument(f"{where} must be an array of rules")
    if len(raw) > MAX_RULES:
        raise InvalidArgument(f"{where} must have at most {MAX_RULES} rules")
    return [read_rule(rule, f"{where}[{i}]") for i, rule in enumerate(raw)]


def read_default(raw: Any, where: str = "default") -> str:
    action = policy.normalize_action(raw) if isinstance(raw, str) else None
    if action is None:
        raise InvalidArgument(f'{where} must be "allow" or "deny"')
    return action


def read_enabled(raw: Any) -> bool:
    if not isinstance(raw, bool):
        raise InvalidArgument("enabled must be true or false")
    return raw


def read_openclaw(value: Any) -> dict[str, Any]:
    """A `session.sendPolicy` config value → {enabled, default, rules}; null resets it."""
    if value is None:
        return {"enabled": False, "default": policy.ALLOW, "rules": []}
    body = _object(value, "session.sendPolicy", OPENCLAW_FIELDS)
    return {
        "enabled": True,
        "default": read_default(body.get("default", policy.ALLOW), "session.sendPolicy.default"),
        "rules": read_rules(body.get("rules", []), "session.sendPolicy.rules"),
    }


# --- writing (operator keys only) -----------------------------------------------------------


def _saved_rules(config: SendPolicy) -> list[dict]:
    return [
        {"id": rule.pk, **{name: getattr(rule, name) for name in editing.RULE_FIELDS}}
        for rule in SendPolicyRule.objects.filter(policy=config).order_by("position", "id")
    ]


def save(
    *,
    api_key: ApiKey | None,
    enabled: bool | None = None,
    default: str | None = None,
    rules: list[dict] | None = None,
    note: str = "",
) -> editing.PolicySave:
    """Write the policy; what is None stays as saved. The one write is policies_app's."""
    if api_key is not None:
        require_scope(api_key, ApiKey.OPERATOR)
    config = SendPolicy.load()
    return editing.save_send_policy(
        enabled=config.enabled if enabled is None else enabled,
        default_action=config.default_action if default is None else default,
        rules=_saved_rules(config) if rules is None else rules,
        actor_name=f"API key {api_key}" if api_key is not None else "",
        note=note,
        configured_channels=configured_channels(),
    )


def write_openclaw(*, api_key: ApiKey | None, value: dict) -> None:
    """Store what read_openclaw() gave (the config endpoint's part of a PATCH)."""
    save(api_key=api_key, **value)


def update_policy(*, api_key: ApiKey, body: Any) -> editing.PolicySave:
    """PATCH /api/v1/policies/: any of enabled, default, rules (the whole list), changeNote."""
    require_scope(api_key, ApiKey.OPERATOR)
    body = _object(body, "body", POLICY_FIELDS)
    if not body:
        raise InvalidArgument(f"body must set one of: {', '.join(sorted(POLICY_FIELDS))}")
    return save(
        api_key=api_key,
        enabled=read_enabled(body["enabled"]) if "enabled" in body else None,
        default=read_default(body["default"]) if "default" in body else None,
        rules=read_rules(body["rules"]) if "rules" in body else None,
        note=_note(body),
    )


def _note(body: Mapping[str, Any]) -> str:
    note = body.get("changeNote", "")
    if not isinstance(note, str):
        raise InvalidArgument("changeNote must be text")
    return note


def _rule_row(rule_id: int) -> SendPolicyRule:
    rule = SendPolicyRule.objects.filter(pk=rule_id, policy_id=SendPolicy.load().pk).first()
    if rule is None:
        raise NotFound(f"No send-policy rule with id {rule_id}")
    return rule


def get_rule(*, api_key: ApiKey, rule_id: int) -> dict:
    require_scope(api_key, ApiKey.OPERATOR)
    return rule_as_dict(_rule_row(rule_id))


def create_rule(*, api_key: ApiKey, body: Any) -> dict:
    """POST /api/v1/policies/: one rule, added after the others unless it gives a position."""
    require_scope(api_key, ApiKey.OPERATOR)
    rule = read_rule(body, "rule")
    if "id" in rule:
        raise InvalidArgument("rule: id is given by the server; leave it out")
    saved = _saved_rules(SendPolicy.load())
    rule.setdefault("position", max((r["position"] for r in saved), default=0) + 1)
    before = {r["id"] for r in saved}
    result = save(api_key=api_key, rules=[*saved, rule])
    added = SendPolicyRule.objects.filter(policy=result.policy).exclude(pk__in=before)
    created = added.order_by("-id").first()
    assert created is not None  # save() inserts a rule given without an id
    return rule_as_dict(created)


def update_rule(*, api_key: ApiKey, rule_id: int, body: Any) -> dict:
    """PATCH /api/v1/policies/{id}/: the fields given; `match`, when given, is replaced whole."""
    require_scope(api_key, ApiKey.OPERATOR)
    _rule_row(rule_id)
    _object(body, "rule", RULE_FIELDS - {"id"})
    if not body:
        raise InvalidArgument("rule: set at least one of action, match, position, note")
    saved = _saved_rules(SendPolicy.load())
    current = next(r for r in saved if r["id"] == rule_id)
    merged = {**rule_as_dict(current), **body}
    changed = read_rule({**merged, "id": rule_id}, "rule")
    save(api_key=api_key, rules=[changed if r["id"] == rule_id else r for r in saved])
    return rule_as_dict(_rule_row(rule_id))


def delete_rule(*, api_key: ApiKey, rule_id: int) -> None:
    require_scope(api_key, ApiKey.OPERATOR)
    _rule_row(rule_id)
    saved = _saved_rules(SendPolicy.load())
    save(api_key=api_key, rules=[r for r in saved if r["id"] != rule_id])


# --- dry run --------------------------------------------------------------------------------


def dry_run(*, api_key: ApiKey, body: Any) -> dict:
    """Which active sessions a rule set would block, without saving it (trial(), which the
    admin's preview of its unsaved form calls too). What the body leaves out is taken from the
    saved policy."""
    require_scope(api_key, ApiKey.OPERATOR)
    body = _object(body, "body", DRY_RUN_FIELDS)
    limit = body.get("limit", DRY_RUN_LIMIT)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= DRY_RUN_MAX_LIMIT:
        raise InvalidArgument(f"limit must be an integer from 1 to {DRY_RUN_MAX_LIMIT}")
    return trial(
        enabled=read_enabled(body["enabled"]) if "enabled" in body else None,
        default_action=read_default(body["default"]) if "default" in body else None,
        rules=read_rules(body["rules"]) if "rules" in body else None,
        limit=limit,
    )


def trial(
    *,
    enabled: bool | None,
    default_action: str | None,
    rules: Sequence[Mapping[str, Any]] | None,
    limit: int = DRY_RUN_LIMIT,
) -> dict:
    """The dry run: which active sessions the policy would block with this switch, default and
    rule list (each rule as save_send_policy takes it, checked as it checks them), none of
    them saved; None takes the saved one. The first `limit` blocked sessions are listed by key,
    each with the rule that blocks it (`ruleNumber`: its place in evaluation order, as the
    editor numbers rules once saved)."""
    saved = SendPolicy.load()
    trial_policy = SendPolicy(
        enabled=saved.enabled if enabled is None else enabled,
        default_action=saved.default_action if default_action is None else default_action,
    )
    evaluated = saved.rules_for_evaluate()
    if rules is not None:
        known = editing.known_channels(configured_channels())
        cleaned = editing.numbered(editing.clean_rules(rules, known=known))
        evaluated = [
            policy.Rule(**{k: v for k, v in r.items() if k not in ("id", "position")})
            for r in cleaned
        ]
    count, blocked = send_policy_preview.blocked_sessions(trial_policy, evaluated, limit=limit)
    return {
        "enabled": trial_policy.enabled,
        "default": trial_policy.default_action,
        "blockedCount": count,
        "activeCount": send_policy_preview.count_active(),
        "blocked": blocked,
        "truncated": count > len(blocked),
    }
