"""The admin for the send policy and the delivery outbox: rules, validation, preview, blocked
count, history, the retry action, and who may reach which page."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.contrib.messages import get_messages
from django.db import connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from policies_app import history
from policies_app.editing import EVERYTHING_WARNING
from policies_app.models import SendPolicy, SendPolicyChange, SendPolicyRule
from sessions_app.delivery import NO_ROUTE, deliver, enqueue_delivery
from sessions_app.manage import send_policy_preview as preview
from sessions_app.models import ChannelConfig, Delivery
from tests.conftest import make_session

DISCORD_GROUP = "agent:main:discord:group:dev"
POLICY_URL = "/admin/policies_app/sendpolicy/1/change/"
DELIVERIES_URL = "/admin/sessions_app/delivery/"
RULE_FIELDS = ("position", "action", "channel", "chat_type", "key_prefix", "raw_key_prefix", "note")


@pytest.fixture
def staff_operator(agents) -> Client:
    """A superuser called operator (the lead's "Operators" group will hold the same rights)."""
    user = User.objects.create_superuser("operator", "operator@example.com", "pw-operator")
    client = Client()
    client.force_login(user)
    client.user = user
    return client


@pytest.fixture
def staff_viewer(agents) -> Client:
    """Staff with only the view permission on deliveries."""
    user = User.objects.create_user("viewer", "viewer@example.com", "pw-viewer", is_staff=True)
    user.user_permissions.add(Permission.objects.get(codename="view_delivery"))
    client = Client()
    client.force_login(user)
    return client


def seed_policy(**rule) -> SendPolicy:
    """The seeds' example: enabled, default allow, deny discord groups."""
    config = SendPolicy.load()
    config.enabled = True
    config.save()
    SendPolicyRule.objects.create(
        policy=config,
        position=1,
        **(rule or {"action": "deny", "channel": "discord", "chat_type": "group"}),
    )
    return config


def policy_post(*, enabled=True, default="allow", rules=(), keep=True, delete=()) -> dict:
    """The change form as the browser posts it: the policy fields and every rule row.

    `keep` resends the rules already saved (with their ids); `rules` are new rows (dicts);
    `delete` names saved rule ids to delete.
    """
    config = SendPolicy.load()
    saved = list(config.rules.all()) if keep else []
    data = {"default_action": default, "_save": "Save"}
    if enabled:
        data["enabled"] = "on"
    rows = [
        {"id": str(rule.pk), **{name: getattr(rule, name) for name in RULE_FIELDS}}
        for rule in saved
    ] + [{"id": "", **row} for row in rules]
    for index, row in enumerate(rows):
        prefix = f"rules-{index}-"
        data[prefix + "policy"] = str(config.pk)
        for name in ("id", *RULE_FIELDS):
            data[prefix + name] = str(row.get(name, ""))
        if row["id"] and int(row["id"]) in delete:
            data[prefix + "DELETE"] = "on"
    data.update(
        {
            "rules-TOTAL_FORMS": str(len(rows)),
            "rules-INITIAL_FORMS": str(len(saved)),
            "rules-MIN_NUM_FORMS": "0",
            "rules-MAX_NUM_FORMS": "1000",
        }
    )
    return data


def rule(action="deny", position=1, **match) -> dict:
    return {"action": action, "position": position, **match}


def inline_errors(response) -> list[dict]:
    return response.context["inline_admin_formsets"][0].formset.errors


# --- the policy page ------------------------------------------------------------------------


def test_the_policy_list_is_the_change_page_of_the_one_row(staff_operator):
    response = staff_operator.get("/admin/policies_app/sendpolicy/")
    assert response.status_code == 302 and response["Location"] == POLICY_URL
    assert staff_operator.get("/admin/policies_app/sendpolicy/add/").status_code == 403
    assert staff_operator.get("/admin/policies_app/sendpolicy/1/delete/").status_code == 403


def test_rules_save_in_the_order_of_their_positions(staff_operator):
    SendPolicy.load()
    data = policy_post(
        rules=[
            rule("allow", 2, channel="slack"),
            rule("deny", 1, key_prefix="cron:"),
            rule("deny", 3, channel="Discord", chat_type="group", note="no groups"),
        ]
    )
    response = staff_operator.post(POLICY_URL, data)
    assert response.status_code == 302, inline_errors(response)
    config = SendPolicy.load()
    assert config.enabled and config.default_action == "allow"
    assert [(r.action, r.channel, r.key_prefix) for r in config.rules.all()] == [
        ("deny", "", "cron:"),
        ("allow", "slack", ""),
        ("deny", "discord", ""),  # lowercased
    ]
    assert [r.action for r in config.rules_for_evaluate()] == ["deny", "allow", "deny"]


def test_an_unknown_channel_is_an_error_on_the_channel_field(staff_operator):
    SendPolicy.load()
    response = staff_operator.post(POLICY_URL, policy_post(rules=[rule(channel="myspace")]))
    assert response.status_code == 200
    errors = inline_errors(response)
    assert list(errors[0]) == ["channel"]
    assert "Channel: “myspace” is not a known channel" in errors[0]["channel"][0]
    assert not SendPolicyRule.objects.exists()


def test_a_channel_with_a_config_row_is_known(staff_operator):
    ChannelConfig.objects.create(channel="myspace", adapter="log")
    SendPolicy.load()
    response = staff_operator.post(POLICY_URL, policy_post(rules=[rule(channel="myspace")]))
    assert response.status_code == 302
    assert SendPolicyRule.objects.get().channel == "myspace"


def test_an_unknown_chat_type_is_an_error_on_the_chat_type_field(staff_operator):
    SendPolicy.load()
    response = staff_operator.post(POLICY_URL, policy_post(rules=[rule(chat_type="room")]))
    assert response.status_code == 200
    errors = inline_errors(response)
    assert list(errors[0]) == ["chat_type"]
    assert errors[0]["chat_type"][0].startswith("Chat type: “room” is not a chat type")


def test_chat_type_aliases_are_stored_normalized(staff_operator):
    SendPolicy.load()
    data = policy_post(
        rules=[rule(chat_type="dm", position=1), rule(chat_type="Supergroup", position=2)]
    )
    assert staff_operator.post(POLICY_URL, data).status_code == 302
    assert [r.chat_type for r in SendPolicyRule.objects.all()] == ["direct", "group"]


def test_an_empty_match_deny_rule_saves_with_a_warning(staff_operator):
    SendPolicy.load()
    response = staff_operator.post(POLICY_URL, policy_post(rules=[rule("deny", note="stop")]))
    assert response.status_code == 302
    assert SendPolicyRule.objects.get().note == "stop"
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    assert f"Rule 1: {EVERYTHING_WARNING}" in texts


def test_an_empty_match_allow_rule_saves_without_a_warning(staff_operator):
    SendPolicy.load()
    response = staff_operator.post(POLICY_URL, policy_post(rules=[rule("allow")]))
    assert response.status_code == 302
    assert not any(EVERYTHING_WARNING in str(m) for m in get_messages(response.wsgi_request))


# --- preview and blocked count --------------------------------------------------------------


def test_preview_of_a_discord_group_shows_the_deny_and_the_rule(staff_operator):
    seed_policy()
    make_session(DISCORD_GROUP, channel="discord")
    response = staff_operator.get(POLICY_URL, {"preview_key": DISCORD_GROUP})
    assert response.status_code == 200
    result = response.context["preview"]
    assert (result["action"], result["rule_index"], result["rule_number"]) == ("deny", 0, 1)
    assert result["rule"] == "channel=discord, chatType=group"
    assert result["reason"] == "rule 1 denies (channel=discord, chatType=group)"
    assert result["session"].key == DISCORD_GROUP
    body = response.content.decode()
    assert "rule 1: channel=discord, chatType=group" in body
    assert "rule 1 denies (channel=discord, chatType=group)" in body


def test_preview_of_a_key_without_a_session_reads_the_key(agents):
    config = seed_policy()
    result = preview.preview("discord:group:other", config)  # canonicalized like the API does
    assert result["key"] == "agent:main:discord:group:other" and result["session"] is None
    assert result["action"] == "deny" and result["rule_number"] == 1
    allowed = preview.preview("agent:main:telegram:group:x", config)
    assert allowed["action"] == "allow" and allowed["rule"] is None
    assert allowed["reason"] == "no rule matched; default is allow"


def test_preview_shows_a_session_override(agents):
    config = seed_policy()
    session = make_session(DISCORD_GROUP, sendPolicy="allow")
    result = preview.preview(session, config)
    assert result["action"] == "allow" and result["reason"] == "session override: allow"


def test_preview_of_a_malformed_key_is_an_error(agents):
    result = preview.preview("agent::", seed_policy())
    assert result["error"]


def test_blocked_count_over_active_sessions(staff_operator):
    config = seed_policy()
    make_session(DISCORD_GROUP)
    make_session("agent:main:discord:group:ops")
    make_session("agent:main:telegram:group:ops")
    make_session("agent:main:discord:group:ok", sendPolicy="allow")
    make_session("agent:main:main", sendPolicy="deny")
    archived = make_session("agent:main:discord:group:old")
    Session = type(archived)
    Session.objects.filter(pk=archived.pk).update(archived_at=timezone.now())

    assert preview.count_blocked(config) == 3
    assert preview.count_active() == 5
    response = staff_operator.get(POLICY_URL)
    assert "3 of 5 active sessions would be blocked" in response.content.decode()

    config.enabled = False
    config.save()
    assert preview.count_blocked(config) == 1  # only the session's own deny


def test_blocked_count_takes_a_fixed_number_of_queries(agents, django_assert_num_queries):
    config = seed_policy()
    for index in range(30):
        make_session(f"agent:main:discord:group:g{index}")
    with django_assert_num_queries(2):  # the rules, then the sessions
        assert preview.count_blocked(config) == 30


# --- history --------------------------------------------------------------------------------


def test_saving_records_who_changed_what(staff_operator):
    config = seed_policy()
    old_rule = config.rules.get()
    data = policy_post(
        default="deny", rules=[rule("allow", 2, channel="slack")], delete=[old_rule.pk]
    )
    assert staff_operator.post(POLICY_URL, data).status_code == 302

    change = SendPolicyChange.objects.get()
    assert change.user == staff_operator.user and change.username == "operator"
    assert change.summary == (
        "default: allow → deny; "
        "rule removed: deny (channel=discord, chatType=group); "
        "rule added: allow (channel=slack)"
    )
    assert change.before["default_action"] == "allow" and change.after["default_action"] == "deny"

    # A save that changes nothing adds nothing; the page lists what was recorded.
    assert staff_operator.post(POLICY_URL, policy_post(default="deny")).status_code == 302
    assert SendPolicyChange.objects.count() == 1
    response = staff_operator.get(POLICY_URL)
    assert list(response.context["policy_history"]) == [change]
    assert "rule added: allow (channel=slack)" in response.content.decode()


def test_a_changed_rule_is_summarized_before_and_after(agents):
    config = seed_policy()
    before = history.snapshot(config)
    config.rules.update(chat_type="channel")
    change = history.record_change(user=None, before=before, after=history.snapshot(config))
    assert change.summary == (
        "rule changed: deny (channel=discord, chatType=group) → "
        "deny (channel=discord, chatType=channel)"
    )
    assert change.user is None and change.username == ""


# --- deliveries -----------------------------------------------------------------------------


def failed_delivery() -> Delivery:
    """A delivery that failed for want of a route; the session then gets one on telegram."""
    session = make_session("agent:main:main")
    with transaction.atomic():
        delivery = enqueue_delivery(session=session, text="hello", kind="announce")
    assert delivery.status == "failed" and delivery.last_error == NO_ROUTE
    make_session("agent:main:main", deliveryContext={"channel": "telegram", "to": "user:42"})
    ChannelConfig.objects.create(channel="telegram", adapter="log")
    return delivery


def test_the_retry_action_requeues_a_failed_delivery(staff_operator):
    delivery = failed_delivery()
    response = staff_operator.post(
        DELIVERIES_URL, {"action": "retry_failed", "_selected_action": [str(delivery.pk)]}
    )
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert (delivery.status, delivery.channel, delivery.to) == ("pending", "telegram", "user:42")
    assert delivery.adapter == "log"
    assert "Retry: 1 queued again." in [str(m) for m in get_messages(response.wsgi_request)]
    assert deliver(delivery.pk) == "sent"  # what the task does after commit


def test_the_retry_action_skips_deliveries_that_did_not_fail(staff_operator):
    delivery = failed_delivery()
    Delivery.objects.filter(pk=delivery.pk).update(status="sent")
    response = staff_operator.post(
        DELIVERIES_URL, {"action": "retry_failed", "_selected_action": [str(delivery.pk)]}
    )
    assert response.status_code == 302
    delivery.refresh_from_db()
    assert delivery.status == "sent"
    texts = [str(m) for m in get_messages(response.wsgi_request)]
    assert "Retry: 0 queued again, 1 skipped (not failed)." in texts


def test_the_delivery_list_filters_by_status_kind_and_channel(staff_operator):
    failed = failed_delivery()
    response = staff_operator.get(
        DELIVERIES_URL, {"status": "failed", "kind": "announce", "channel": ""}
    )
    assert response.status_code == 200
    assert [row.pk for row in response.context["cl"].result_list] == [failed.pk]
    assert response.context["cl"].result_count == 1
    assert staff_operator.get(DELIVERIES_URL, {"status": "sent"}).context["cl"].result_count == 0
    assert staff_operator.get(DELIVERIES_URL + "add/").status_code == 403
    # The change page is read only: a view, not a form that saves.
    page = staff_operator.get(f"{DELIVERIES_URL}{failed.pk}/change/")
    assert page.status_code == 200 and not page.context["has_change_permission"]


def test_the_delivery_list_takes_the_same_queries_for_more_rows(staff_operator):
    failed_delivery()
    with CaptureQueriesContext(connection) as one_row:
        assert staff_operator.get(DELIVERIES_URL).status_code == 200
    for index in range(5):
        session = make_session(f"agent:main:telegram:group:g{index}")
        with transaction.atomic():
            enqueue_delivery(session=session, text="hi", kind="reply")
    with CaptureQueriesContext(connection) as six_rows:
        response = staff_operator.get(DELIVERIES_URL)
    assert response.context["cl"].result_count == 6
    assert len(six_rows) == len(one_row)


def test_the_channel_admin_requires_a_url_for_a_webhook(staff_operator):
    url = "/admin/sessions_app/channelconfig/add/"
    data = {"channel": "Slack", "adapter": "webhook", "webhook_url": "", "max_attempts": "5"}
    response = staff_operator.post(url, data)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "webhook_url": ["A webhook channel needs a webhook URL."]
    }
    data["webhook_url"] = "https://example.com/hook"
    assert staff_operator.post(url, data).status_code == 302
    assert ChannelConfig.objects.get().channel == "slack"


# --- who may do what ------------------------------------------------------------------------


def test_a_viewer_cannot_reach_the_policy_pages(staff_viewer):
    SendPolicy.load()
    assert staff_viewer.get(POLICY_URL).status_code == 403
    assert staff_viewer.get("/admin/policies_app/sendpolicy/").status_code == 403
    assert staff_viewer.post(POLICY_URL, policy_post(enabled=False)).status_code == 403
    assert not SendPolicyChange.objects.exists()


def test_a_viewer_sees_deliveries_but_cannot_retry(staff_viewer):
    delivery = failed_delivery()
    response = staff_viewer.get(DELIVERIES_URL)
    assert response.status_code == 200
    assert [row.pk for row in response.context["cl"].result_list] == [delivery.pk]
    assert "retry_failed" not in response.content.decode()
    response = staff_viewer.post(
        DELIVERIES_URL, {"action": "retry_failed", "_selected_action": [str(delivery.pk)]}
    )
    assert response.status_code == 403
    delivery.refresh_from_db()
    assert delivery.status == "failed"


def test_anonymous_users_are_sent_to_log_in(agents):
    response = Client().get(POLICY_URL)
    assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_the_editor_and_the_preview_number_rules_the_same_way(staff_operator):
    """Issue 17.6: a rule typed at position 0 was "rule 1" in the preview. Saved rules are
    renumbered 1, 2, 3… in evaluation order, and a blank row offers the next number."""
    SendPolicy.load()
    make_session(DISCORD_GROUP, channel="discord")
    data = policy_post(
        rules=[rule("allow", 7, channel="slack"), rule("deny", 0, channel="discord")]
    )
    assert staff_operator.post(POLICY_URL, data).status_code == 302
    saved = list(SendPolicy.load().rules.all())
    assert [(r.position, r.channel) for r in saved] == [(1, "discord"), (2, "slack")]

    page = staff_operator.get(POLICY_URL, {"preview_key": DISCORD_GROUP})
    assert page.context["preview"]["rule_number"] == 1 == saved[0].position
    forms = page.context["inline_admin_formsets"][0].formset.forms
    assert [f.initial.get("position") for f in forms] == [1, 2, 3]
