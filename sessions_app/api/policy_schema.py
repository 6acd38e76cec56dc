"""The send policy's shapes in the API schema (/api/v1/policies/ and session.sendPolicy)."""

from __future__ import annotations

from typing import Any

from ..manage.send_policy_api import DRY_RUN_MAX_LIMIT
from ..tools.shapes import BOOLEAN, INTEGER, STRING, array, obj

JSON = dict[str, Any]

ACTION = {"type": "string", "enum": ["allow", "deny"]}
MATCH = obj(
    {
        "channel": {"type": "string", "maxLength": 64},
        "chatType": {
            "type": "string",
            "enum": ["direct", "dm", "group", "supergroup", "channel"],
        },
        "keyPrefix": {"type": "string", "maxLength": 512},
        "rawKeyPrefix": {"type": "string", "maxLength": 512},
    },
    description="Every field given must match; none matches every session.",
)
RULE_INPUT = obj(
    {
        "action": ACTION,
        "match": MATCH,
        "position": {"type": "integer", "minimum": 0, "description": "Evaluation order."},
        "note": {"type": "string", "maxLength": 300},
    },
    ("action",),
)
RULE = obj(
    {"id": INTEGER, **RULE_INPUT["properties"]},
    ("id", "position", "action", "match", "note"),
)
RULES_INPUT = array(
    obj({"id": INTEGER, **RULE_INPUT["properties"]}, ("action",)),
    "The whole ordered list: a rule with an id updates that rule.",
)
POLICY = obj(
    {
        "enabled": {
            "type": "boolean",
            "description": "false: no session.sendPolicy (everything may be sent).",
        },
        "default": ACTION,
        "rules": array({"$ref": "#/components/schemas/SendPolicyRule"}),
        "updatedAt": INTEGER,
        "warnings": array(STRING, "After a write: rules that block everything."),
    },
    ("enabled", "default", "rules", "updatedAt"),
)
PATCH = obj(
    {
        "enabled": BOOLEAN,
        "default": ACTION,
        "rules": RULES_INPUT,
        "changeNote": {"type": "string", "maxLength": 300},
    },
    description="At least one field.",
)
DRY_RUN = obj(
    {
        "enabled": BOOLEAN,
        "default": ACTION,
        "rules": RULES_INPUT,
        "limit": {"type": "integer", "minimum": 1, "maximum": DRY_RUN_MAX_LIMIT},
    },
)
DRY_RUN_RESULT = obj(
    {
        "enabled": BOOLEAN,
        "default": ACTION,
        "blockedCount": INTEGER,
        "activeCount": INTEGER,
        "truncated": BOOLEAN,
        "blocked": array(
            obj(
                {
                    "key": STRING,
                    "reason": STRING,
                    "ruleNumber": {"type": ["integer", "null"]},
                    "channel": STRING,
                    "chatType": STRING,
                },
                ("key", "reason", "ruleNumber"),
            )
        ),
    },
    ("enabled", "default", "blockedCount", "activeCount", "truncated", "blocked"),
)
OPENCLAW_VALUE: JSON = {
    "anyOf": [
        obj(
            {
                "default": ACTION,
                "rules": array(obj({"action": ACTION, "match": MATCH}, ("action",))),
            },
        ),
        {"type": "null"},
    ],
    "description": "OpenClaw's session.sendPolicy (the same rows as /api/v1/policies/); null: "
    "none, everything may be sent.",
}

COMPONENTS: dict[str, JSON] = {
    "SendPolicy": POLICY,
    "SendPolicyRule": RULE,
    "SendPolicyRuleInput": RULE_INPUT,
    "SendPolicyPatch": PATCH,
    "SendPolicyDryRun": DRY_RUN,
    "SendPolicyDryRunResult": DRY_RUN_RESULT,
}
