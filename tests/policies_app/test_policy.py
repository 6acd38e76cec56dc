"""Send-policy evaluation and the /send parser (reference §6, seeds "Security / Send Policy")."""

import pytest

from policies_app.policy import (
    USAGE_REPLY,
    Rule,
    Target,
    channel_of,
    chat_type_of,
    evaluate,
    parse_send_command,
)

DISCORD_GROUPS = Rule(action="deny", channel="discord", chat_type="group")  # the seeds' example


def decide(key, *, rules=(DISCORD_GROUPS,), default="allow", **target):
    return evaluate(default=default, rules=list(rules), target=Target(key=key, **target))


def test_the_seed_example_blocks_discord_groups_only():
    assert decide("agent:main:discord:group:dev").action == "deny"
    assert decide("agent:main:discord:channel:general").action == "allow"
    assert decide("agent:main:telegram:group:-100").action == "allow"
    assert decide("agent:main:main").action == "allow"


def test_the_decision_names_the_rule():
    decision = decide("agent:main:discord:group:dev")
    assert decision.rule_index == 0 and "channel=discord" in decision.reason


def test_session_override_wins():
    assert decide("agent:main:discord:group:dev", override="allow").action == "allow"
    assert decide("agent:main:main", override=" DENY ").action == "deny"
    assert decide("agent:main:discord:group:dev", override="bogus").action == "deny"


def test_no_policy_configured_allows_everything():
    decision = evaluate(
        default="deny",
        rules=[DISCORD_GROUPS],
        target=Target("agent:main:discord:group:x"),
        configured=False,
    )
    assert decision.action == "allow"


def test_a_matching_deny_wins_over_an_earlier_allow():
    rules = [Rule(action="allow", channel="discord"), DISCORD_GROUPS]
    assert decide("agent:main:discord:group:dev", rules=rules).action == "deny"


def test_allow_rule_beats_deny_default():
    rules = [Rule(action="allow", key_prefix="cron:")]
    assert decide("agent:main:cron:nightly", rules=rules, default="deny").action == "allow"
    assert decide("agent:main:main", rules=rules, default="deny").action == "deny"


def test_empty_match_matches_everything():
    assert decide("agent:main:main", rules=[Rule(action="deny")]).action == "deny"


def test_unknown_action_counts_as_allow_and_unknown_default_as_allow():
    assert decide("agent:main:main", rules=[Rule(action="maybe")], default="deny").action == "allow"
    assert decide("agent:main:main", rules=[], default="bogus").action == "allow"


@pytest.mark.parametrize(
    ("rule", "key", "matches"),
    [
        (Rule(action="deny", key_prefix="cron:"), "agent:main:cron:x", True),  # agent-stripped
        (Rule(action="deny", key_prefix="agent:main:cron"), "agent:main:cron:x", True),  # raw
        (Rule(action="deny", key_prefix="CRON:"), "agent:main:cron:x", True),  # lowercased
        (Rule(action="deny", raw_key_prefix="cron:"), "agent:main:cron:x", False),  # raw only
        (Rule(action="deny", raw_key_prefix="agent:main:"), "agent:main:cron:x", True),
        (Rule(action="deny", chat_type="dm"), "agent:main:whatsapp:direct:+1", True),
        (Rule(action="deny", chat_type="supergroup"), "agent:main:telegram:group:-1", True),
    ],
)
def test_rule_match_fields(rule, key, matches):
    assert (decide(key, rules=[rule]).action == "deny") is matches


def test_entry_channel_and_chat_type_take_precedence_over_the_key():
    assert decide("agent:main:ops-room", channel="Discord", chat_type="group").action == "deny"
    assert decide("agent:main:discord:group:dev", chat_type="direct").action == "allow"


@pytest.mark.parametrize(
    ("key", "channel", "chat_type"),
    [
        ("agent:main:discord:group:dev", "discord", "group"),
        ("agent:main:slack:channel:c01", "slack", "channel"),
        ("agent:main:whatsapp:direct:+1", "", "direct"),
        ("agent:main:whatsapp:dm:+1", "", "direct"),
        ("discord:group:dev", "discord", "group"),
        ("agent:main:120363@g.us", "", "group"),
        ("agent:main:discord:guild-1:channel-2", "", "channel"),
        ("agent:main:main", "", ""),
    ],
)
def test_channel_and_chat_type_from_the_key(key, channel, chat_type):
    target = Target(key=key)
    assert channel_of(target) == channel and chat_type_of(target) == chat_type


@pytest.mark.parametrize(
    ("text", "policy", "reply"),
    [
        ("/send on", "allow", "⚙️ Send policy set to on."),
        ("/send allow", "allow", "⚙️ Send policy set to on."),
        ("/SEND Off", "deny", "⚙️ Send policy set to off."),
        ("/send deny ", "deny", "⚙️ Send policy set to off."),
        ("/send inherit", "", "⚙️ Send policy set to inherit."),
        ("/send default", "", "⚙️ Send policy set to inherit."),
        ("/send reset", "", "⚙️ Send policy set to inherit."),
        ("/send", None, USAGE_REPLY),
        ("/send maybe", None, USAGE_REPLY),
    ],
)
def test_send_command(text, policy, reply):
    command = parse_send_command(text)
    assert command.policy == policy and command.reply == reply


@pytest.mark.parametrize(
    "text", ["hello", "/sender on", "please /send on", "/send on now", "/send 1"]
)
def test_not_a_send_command(text):
    assert parse_send_command(text) is None
