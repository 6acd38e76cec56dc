"""The stored send policy and channel settings, and check_send() over them (reference §6)."""

import pytest
from django.db import IntegrityError, transaction

from policies_app import policy
from policies_app.models import SendPolicy, SendPolicyRule
from policies_app.send_policy import check_send, send_blocked_error
from sessions_app import store
from sessions_app.models import ChannelConfig
from tests.conftest import make_session


def seed_policy(*, default="allow", enabled=True) -> SendPolicy:
    """The seeds' example: deny discord groups."""
    config = SendPolicy.load()
    config.default_action, config.enabled = default, enabled
    config.save()
    SendPolicyRule.objects.create(
        policy=config, position=1, action="deny", channel="discord", chat_type="group"
    )
    return config


def test_send_policy_is_one_row_created_disabled_on_first_load(db):
    first = SendPolicy.load()
    assert (first.pk, first.enabled, first.default_action) == (1, False, "allow")
    assert SendPolicy.load().pk == 1 and SendPolicy.objects.count() == 1


def test_a_second_send_policy_row_is_refused(db):
    SendPolicy.load()
    with pytest.raises(IntegrityError), transaction.atomic():
        SendPolicy.objects.create(id=2)


def test_rules_for_evaluate_follow_position_then_creation_order(db):
    config = SendPolicy.load()
    SendPolicyRule.objects.create(policy=config, position=2, action="deny", key_prefix="cron:")
    SendPolicyRule.objects.create(policy=config, position=1, action="allow", channel="slack")
    SendPolicyRule.objects.create(policy=config, position=1, action="deny", chat_type="group")
    assert config.rules_for_evaluate() == [
        policy.Rule(action="allow", channel="slack"),
        policy.Rule(action="deny", chat_type="group"),
        policy.Rule(action="deny", key_prefix="cron:"),
    ]


def test_rule_actions_other_than_allow_or_deny_are_refused(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        SendPolicyRule.objects.create(policy=SendPolicy.load(), action="maybe")


def test_rule_chat_types_other_than_direct_group_or_channel_are_refused(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        SendPolicyRule.objects.create(policy=SendPolicy.load(), action="deny", chat_type="room")


def test_the_seed_policy_denies_a_discord_group_and_names_the_rule(agents):
    seed_policy()
    decision = check_send(make_session("agent:main:discord:group:dev", channel="discord"))
    assert decision.action == "deny"
    assert decision.rule_index == 0
    assert decision.reason == "rule 1 denies (channel=discord, chatType=group)"


def test_the_seed_policy_allows_other_sessions(agents):
    seed_policy()
    for key in ("agent:main:discord:channel:general", "agent:main:telegram:group:-100", "main"):
        assert check_send(make_session(key)).allowed, key


def test_a_session_override_allow_wins_over_a_deny_rule(agents):
    seed_policy()
    session = make_session("agent:main:discord:group:dev")
    store.set_send_policy(session=session, policy="allow")
    decision = check_send(session)
    assert decision.allowed and decision.reason == "session override: allow"


def test_a_session_override_deny_blocks_even_without_a_policy(agents):
    session = make_session("agent:main:main", sendPolicy="deny")
    assert check_send(session).action == "deny"


def test_with_no_policy_enabled_everything_is_allowed(agents):
    seed_policy(default="deny", enabled=False)
    decision = check_send(make_session("agent:main:discord:group:dev"))
    assert decision.allowed and decision.reason == "no send policy is configured"


def test_an_enabled_policy_falls_back_to_its_default(agents):
    seed_policy(default="deny")
    decision = check_send(make_session("agent:main:main"))
    assert decision.action == "deny" and decision.reason == "no rule matched; default is deny"


def test_check_send_reads_channel_and_chat_type_from_the_session(agents):
    seed_policy()
    session = make_session("agent:main:room-42", channel="Discord", chatType="group")
    assert check_send(session).action == "deny"


def test_check_send_falls_back_to_the_last_channel(agents):
    seed_policy()
    session = make_session("agent:main:room-42", lastChannel="discord", chatType="group")
    assert check_send(session).action == "deny"


def test_check_send_takes_two_queries(agents, django_assert_num_queries):
    seed_policy()
    session = make_session("agent:main:discord:group:dev")
    with django_assert_num_queries(2):
        check_send(session)


def test_the_blocked_error_is_openclaws_text():
    assert send_blocked_error() == "send blocked by session policy"


def test_channels_without_a_row_use_webchat_or_log(db):
    assert ChannelConfig.for_channel("webchat").adapter == "webchat"
    assert ChannelConfig.for_channel("discord").adapter == "log"
    assert ChannelConfig.for_channel("discord").max_attempts == 5


def test_channel_names_are_stored_lowercase(db):
    ChannelConfig.objects.create(channel=" Discord ", adapter="log")
    assert ChannelConfig.for_channel("DISCORD").channel == "discord"
    with pytest.raises(IntegrityError), transaction.atomic():
        ChannelConfig.objects.bulk_create([ChannelConfig(channel="Slack", adapter="log")])


def test_a_webhook_channel_needs_a_url(db):
    with pytest.raises(IntegrityError), transaction.atomic():
        ChannelConfig.objects.create(channel="discord", adapter="webhook")
