"""save_send_policy(): the one write of the send policy. The admin's change form goes through
it, so the admin and a direct call leave the same policy and the same history row."""

from __future__ import annotations

import pytest
from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.messages import get_messages
from django.test import Client

from openclaw_common.errors import InvalidArgument
from policies_app import editing, history
from policies_app.editing import EVERYTHING_WARNING, save_send_policy
from policies_app.models import SendPolicy, SendPolicyChange, SendPolicyRule
from tests.conftest import admin_groups
from tests.policies_app.test_admin_policy import POLICY_URL, policy_post, rule, seed_policy

DISCORD_GROUPS = {"action": "deny", "channel": "discord", "chat_type": "group"}


@pytest.fixture
def olivia(agents) -> User:
    """An operator: staff in the Operators group (not a superuser)."""
    person = User.objects.create_user("olivia", password="x", is_staff=True)
    person.groups.add(admin_groups()["Operators"])
    return person


@pytest.fixture
def olivia_client(olivia) -> Client:
    client = Client()
    client.force_login(olivia)
    return client


def stored() -> dict:
    """The policy as saved, without ids (two saves of the same edit compare equal)."""
    data = history.snapshot(SendPolicy.load())
    return {**data, "rules": [{k: v for k, v in r.items() if k != "id"} for r in data["rules"]]}


def reset_policy():
    SendPolicyRule.objects.all().delete()
    SendPolicyChange.objects.all().delete()
    SendPolicy.objects.filter(pk=1).update(enabled=False, default_action="allow")


# --- the function ---------------------------------------------------------------------------


def test_save_writes_the_policy_its_rules_and_one_history_row(olivia):
    result = save_send_policy(
        enabled=True,
        default_action="allow",
        rules=[
            DISCORD_GROUPS,
            {"action": "allow", "channel": "Slack", "chat_type": "dm", "note": "  DMs ok "},
        ],
        actor=olivia,
        note="no bots in discord groups",
    )
    config = SendPolicy.load()
    assert result.policy == config and config.enabled and config.default_action == "allow"
    assert [(r.position, r.action, r.channel, r.chat_type, r.note) for r in config.rules.all()] == [
        (1, "deny", "discord", "group", ""),
        (2, "allow", "slack", "direct", "DMs ok"),  # lowercased, aliases stored normalized
    ]
    change = SendPolicyChange.objects.get()
    assert result.change == change
    assert (change.user, change.username) == (olivia, "olivia")
    assert change.note == "no bots in discord groups"
    assert change.summary == (
        "enabled; rule added: deny (channel=discord, chatType=group); "
        "rule added: allow (channel=slack, chatType=direct) “DMs ok”"
    )
    assert result.warnings == []


def test_a_rule_with_its_id_is_changed_in_place_and_one_left_out_is_deleted(olivia):
    config = seed_policy()
    kept = config.rules.get()
    gone = SendPolicyRule.objects.create(policy=config, position=2, action="allow", channel="slack")
    save_send_policy(
        enabled=True,
        default_action="allow",
        rules=[{**DISCORD_GROUPS, "id": kept.pk, "chat_type": "channel"}],
        actor=olivia,
    )
    assert list(config.rules.values_list("pk", "chat_type")) == [(kept.pk, "channel")]
    assert not SendPolicyRule.objects.filter(pk=gone.pk).exists()
    assert SendPolicyChange.objects.get().summary == (
        "rule removed: allow (channel=slack); rule changed: deny (channel=discord, "
        "chatType=group) → deny (channel=discord, chatType=channel)"
    )


def test_a_save_that_changes_nothing_records_nothing(olivia):
    config = seed_policy()
    same = [{**DISCORD_GROUPS, "id": config.rules.get().pk, "position": 1}]
    result = save_send_policy(enabled=True, default_action="allow", rules=same, actor=olivia)
    assert result.change is None and not SendPolicyChange.objects.exists()


def test_an_empty_match_deny_rule_is_saved_with_a_warning(olivia):
    result = save_send_policy(
        enabled=True,
        default_action="allow",
        rules=[{"action": "allow", "channel": "slack"}, {"action": "deny"}],
        actor=olivia,
    )
    assert result.warnings == [f"Rule 2: {EVERYTHING_WARNING}"]
    assert SendPolicyRule.objects.count() == 2


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"enabled": "yes"}, "enabled must be true or false"),
        ({"default_action": "block"}, 'default_action must be "allow" or "deny"'),
        ({"rules": "deny discord"}, "rules must be a list of rules"),
        ({"rules": [["deny"]]}, "rules[0] must be an object"),
        ({"rules": [{"action": "deny", "match": {}}]}, "rules[0]: unknown field(s) match"),
        ({"rules": [{"action": "block"}]}, 'rules[0]: Action: must be "allow" or "deny".'),
        (
            {"rules": [DISCORD_GROUPS, {"action": "deny", "channel": "myspace"}]},
            "rules[1]: Channel: “myspace” is not a known channel.",
        ),
        (
            {"rules": [{"action": "deny", "chat_type": "room"}]},
            "rules[0]: Chat type: “room” is not a chat type.",
        ),
        ({"rules": [{"action": "deny", "key_prefix": 7}]}, "rules[0]: Key prefix: must be text."),
        (
            {"rules": [{"action": "deny", "note": "a\x00b"}]},
            "rules[0]: Note: must not contain NUL characters.",
        ),
        (
            {"rules": [{"action": "deny", "channel": "x" * 65}]},
            "rules[0]: Channel: at most 64 characters (got 65).",
        ),
        ({"rules": [{"action": "deny", "position": -1}]}, "rules[0]: Position: must be a whole"),
        ({"rules": [{"action": "deny", "position": True}]}, "rules[0]: Position: must be a whole"),
        ({"rules": [{"action": "deny", "id": 999}]}, "rule id 999 is not a rule of the send"),
        ({"note": "n" * 301}, "note must be text of at most 300 characters"),
    ],
)
def test_bad_input_is_refused_with_a_message_and_nothing_is_written(olivia, changes, message):
    config = seed_policy()
    before = stored()
    arguments = {"enabled": True, "default_action": "deny", "rules": [], "actor": olivia}
    with pytest.raises(InvalidArgument) as refused:
        save_send_policy(**{**arguments, **changes})
    assert refused.value.message.startswith(message)
    assert stored() == before and config.rules.count() == 1
    assert not SendPolicyChange.objects.exists()


def test_the_same_rule_id_twice_is_refused(olivia):
    rule_id = seed_policy().rules.get().pk
    twice = [{**DISCORD_GROUPS, "id": rule_id}, {**DISCORD_GROUPS, "id": rule_id}]
    with pytest.raises(InvalidArgument, match=r"rules\[1\]\.id"):
        save_send_policy(enabled=True, default_action="allow", rules=twice, actor=olivia)


# --- the admin goes through it --------------------------------------------------------------


def test_the_admin_and_the_function_leave_the_same_policy_and_history(olivia, olivia_client):
    SendPolicy.load()
    data = policy_post(
        default="deny",
        rules=[
            rule("allow", 2, channel="slack", note="team"),
            rule("deny", 1, channel="discord", chat_type="supergroup"),
        ],
    )
    data["change_note"] = "lock down discord"
    response = olivia_client.post(POLICY_URL, data)
    assert response.status_code == 302
    through_admin, admin_change = stored(), SendPolicyChange.objects.get()

    reset_policy()
    save_send_policy(
        enabled=True,
        default_action="deny",
        rules=[
            {"action": "allow", "position": 2, "channel": "slack", "note": "team"},
            {"action": "deny", "position": 1, "channel": "discord", "chat_type": "supergroup"},
        ],
        actor=olivia,
        note="lock down discord",
    )
    direct_change = SendPolicyChange.objects.get()
    assert stored() == through_admin
    assert through_admin["rules"][0]["chat_type"] == "group"
    for name in ("user", "username", "summary", "note"):
        assert getattr(admin_change, name) == getattr(direct_change, name), name
    assert admin_change.username == "olivia" and admin_change.note == "lock down discord"


def test_the_admin_save_calls_save_send_policy(olivia, olivia_client, monkeypatch):
    calls = []
    real = editing.save_send_policy
    monkeypatch.setattr(editing, "save_send_policy", lambda **kw: calls.append(kw) or real(**kw))
    config = seed_policy()
    kept = config.rules.get().pk
    data = policy_post(rules=[rule("allow", 2, channel="slack")])
    assert olivia_client.post(POLICY_URL, data).status_code == 302
    [call] = calls
    assert call["actor"] == olivia and call["enabled"] is True
    assert [(r["id"], r["action"], r["channel"]) for r in call["rules"]] == [
        (kept, "deny", "discord"),
        (None, "allow", "slack"),
    ]


def test_the_admin_page_shows_who_what_and_why(olivia_client):
    seed_policy()
    data = policy_post(default="deny")
    data["change_note"] = "quiet weekend"
    assert olivia_client.post(POLICY_URL, data).status_code == 302
    body = olivia_client.get(POLICY_URL).content.decode()
    assert "<td>olivia</td><td>default: allow → deny</td><td>quiet weekend</td>" in body
    # Django's own admin log says the same as the history.
    entry = LogEntry.objects.get(object_id="1", content_type__model="sendpolicy")
    assert entry.get_change_message() == "default: allow → deny"


def test_a_rule_deleted_by_someone_else_meanwhile_is_a_message_not_an_error(
    olivia_client, monkeypatch
):
    config = seed_policy()
    rule_id = config.rules.get().pk
    real = editing.save_send_policy

    def another_operator_deletes_the_rule_first(**kwargs):
        SendPolicyRule.objects.filter(pk=rule_id).delete()
        return real(**kwargs)

    monkeypatch.setattr(editing, "save_send_policy", another_operator_deletes_the_rule_first)
    response = olivia_client.post(POLICY_URL, policy_post(default="deny"))
    assert response.status_code == 302 and response["Location"] == POLICY_URL
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    assert texts == [
        f"Not saved: rule id {rule_id} is not a rule of the send policy (deleted meanwhile?)"
    ]
    # The whole save was rolled back, the other delete included (it ran in the same request).
    assert SendPolicy.load().default_action == "allow"
    assert not SendPolicyChange.objects.exists()
