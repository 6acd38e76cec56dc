"""Send policy (reference §6): a pure `evaluate()` and the `/send` command parser. No ORM.

`evaluate()` gives the decision and the rule that decided it, so the admin preview, the API and
every delivery point explain a block the same way.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from openclaw_common import keys

ALLOW, DENY = "allow", "deny"
BLOCKED_TEXT = "send blocked by session policy"
CHAT_TYPES = {
    "direct": "direct",
    "dm": "direct",
    "group": "group",
    "supergroup": "group",
    "channel": "channel",
}


@dataclass(frozen=True)
class Rule:
    action: str
    channel: str = ""
    chat_type: str = ""
    key_prefix: str = ""
    raw_key_prefix: str = ""
    note: str = ""

    @property
    def is_empty_match(self) -> bool:
        return not (self.channel or self.chat_type or self.key_prefix or self.raw_key_prefix)


@dataclass(frozen=True)
class Target:
    key: str
    channel: str = ""
    chat_type: str = ""
    override: str = ""  # the session's sendPolicy: "allow", "deny" or "" (inherit)


@dataclass(frozen=True)
class Decision:
    action: str
    rule_index: int | None  # index into the rules that decided, None otherwise
    reason: str
    channel: str = ""
    chat_type: str = ""

    @property
    def allowed(self) -> bool:
        return self.action == ALLOW


def normalize_action(value: str | None) -> str | None:
    text = (value or "").strip().lower()
    return text if text in (ALLOW, DENY) else None


def normalize_chat_type(value: str | None) -> str:
    return CHAT_TYPES.get((value or "").strip().lower(), "")


def _stripped_key(key: str) -> str:
    """The lowercased key without its `agent:<id>:` prefix."""
    parsed = keys.parse_agent_key(key)
    return parsed[1] if parsed else key.strip().lower()


def channel_of(target: Target) -> str:
    explicit = target.channel.strip().lower()
    if explicit:
        return explicit
    parts = _stripped_key(target.key).split(":")
    if len(parts) >= 3 and parts[1] in ("group", "channel") and parts[0]:
        return parts[0]
    return ""


def chat_type_of(target: Target) -> str:
    explicit = normalize_chat_type(target.chat_type)
    if explicit:
        return explicit
    stripped = _stripped_key(target.key)
    tokens = stripped.split(":")
    if "group" in tokens:
        return "group"
    if "channel" in tokens:
        return "channel"
    if "direct" in tokens or "dm" in tokens:
        return "direct"
    # legacy shapes: WhatsApp group JIDs, Discord guild channels
    if stripped.endswith("@g.us"):
        return "group"
    if re.search(r"(^|:)guild-[^:]+:channel-", stripped):
        return "channel"
    return ""


def _rule_matches(
    rule: Rule, *, raw_key: str, stripped_key: str, channel: str, chat_type: str
) -> bool:
    if rule.channel and rule.channel.strip().lower() != channel:
        return False
    if rule.chat_type and normalize_chat_type(rule.chat_type) != chat_type:
        return False
    if rule.raw_key_prefix and not raw_key.startswith(rule.raw_key_prefix.strip().lower()):
        return False
    if rule.key_prefix:
        prefix = rule.key_prefix.strip().lower()
        if not (raw_key.startswith(prefix) or stripped_key.startswith(prefix)):
            return False
    return True


def evaluate(
    *, default: str | None, rules: Sequence[Rule], target: Target, configured: bool = True
) -> Decision:
    """Decide whether `target` may be sent to.

    A session override wins; with no policy configured everything is allowed; otherwise a
    matching deny rule wins whatever its position, then a matching allow, then the default.
    """
    override = normalize_action(target.override)
    channel, chat_type = channel_of(target), chat_type_of(target)
    if override:
        return Decision(override, None, f"session override: {override}", channel, chat_type)
    if not configured:
        return Decision(ALLOW, None, "no send policy is configured", channel, chat_type)
    raw_key = target.key.strip().lower()
    stripped = _stripped_key(target.key)
    first_allow = None
    for index, rule in enumerate(rules):
        if not _rule_matches(
            rule, raw_key=raw_key, stripped_key=stripped, channel=channel, chat_type=chat_type
        ):
            continue
        action = normalize_action(rule.action) or ALLOW
        if action == DENY:
            return Decision(
                DENY, index, f"rule {index + 1} denies ({describe(rule)})", channel, chat_type
            )
        if first_allow is None:
            first_allow = index
    if first_allow is not None:
        rule = rules[first_allow]
        return Decision(
            ALLOW,
            first_allow,
            f"rule {first_allow + 1} allows ({describe(rule)})",
            channel,
            chat_type,
        )
    fallback = normalize_action(default) or ALLOW
    return Decision(fallback, None, f"no rule matched; default is {fallback}", channel, chat_type)


def describe(rule: Rule) -> str:
    parts = [
        f"{name}={value}"
        for name, value in (
            ("channel", rule.channel),
            ("chatType", rule.chat_type),
            ("keyPrefix", rule.key_prefix),
            ("rawKeyPrefix", rule.raw_key_prefix),
        )
        if value
    ]
    return ", ".join(parts) if parts else "matches everything"


# --- the /send command (src/auto-reply/send-policy.ts) --------------------------------------

SEND_COMMAND = re.compile(r"^/send(?:\s+([a-zA-Z]+))?\s*$", re.IGNORECASE)
USAGE_REPLY = "⚙️ Usage: /send on|off|inherit"
_TOKENS = {
    "on": ("allow", "on"),
    "allow": ("allow", "on"),
    "off": ("deny", "off"),
    "deny": ("deny", "off"),
    "inherit": ("", "inherit"),
    "default": ("", "inherit"),
    "reset": ("", "inherit"),
}


@dataclass(frozen=True)
class SendCommand:
    policy: str | None  # "allow", "deny", "" (inherit); None when the command was malformed
    reply: str


def parse_send_command(text: str) -> SendCommand | None:
    """None when `text` is not a standalone /send message; else what to set and what to reply."""
    match = SEND_COMMAND.match(text.strip())
    if not match:
        return None
    token = (match.group(1) or "").lower()
    if token not in _TOKENS:
        return SendCommand(None, USAGE_REPLY)
    policy, word = _TOKENS[token]
    return SendCommand(policy, f"⚙️ Send policy set to {word}.")
