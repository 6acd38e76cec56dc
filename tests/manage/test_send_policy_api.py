"""The send policy over the API (issue 20 item 5): session.sendPolicy in PATCH /api/v1/config/,
/api/v1/policies/ rule by rule and its dry run, the same rows as the admin, null resets."""

from __future__ import annotations

import pytest
from django.test import Client

from policies_app.models import SendPolicy, SendPolicyChange, SendPolicyRule
from sessions_app.models import GatewayConfig
from sessions_app.store import set_send_policy
from tests.conftest import admin_groups, make_session

POLICIES = "/api/v1/policies/"
CONFIG = "/api/v1/config/"
DISCORD_GROUP = "agent:main:discord:group:dev"


def deny_discord_groups() -> dict:
    return {
        "default": "allow",
        "rules": [
            {"action": "deny", "match": {"channel": "discord", "chatType": "group"}},
            {"action": "allow", "match": {"keyPrefix": "cron:"}},
        ],
    }


def test_config_reads_and_writes_session_send_policy(operator):
    assert operator.get(CONFIG).json()["session.sendPolicy"] is None  # none configured

    response = operator.patch(CONFIG, {"session.sendPolicy": deny_discord_groups()})

    assert response.status_code == 200, response.content
    assert response.json()["session.sendPolicy"] == deny_discord_groups()
    saved = SendPolicy.load()
    assert saved.enabled and saved.default_action == "allow"
    rules = list(saved.rules.order_by("position"))
    assert [(r.action, r.channel, r.chat_type, r.key_prefix) for r in rules] == [
        ("deny", "discord", "group", ""),
        ("allow", "", "", "cron:"),
    ]
    change = SendPolicyChange.objects.get()
    assert change.username.startswith("API key ocs_") and "rule added" in change.summary


def test_a_configured_policy_blocks_sends(operator, agents):
    operator.patch(CONFIG, {"session.sendPolicy": deny_discord_groups()})
    make_session(DISCORD_GROUP)
    response = operator.post(
        f"/api/v1/sessions/{DISCORD_GROUP}/messages/",
        {"messages": [{"role": "user", "content": "hi"}], "run": True},
    )
    assert response.status_code == 201, response.content
    assert response.json()["run"] == {"status": "error", "error": "send blocked by session policy"}


def test_null_resets_the_policy_and_any_setting(operator):
    operator.patch(
        CONFIG,
        {
            "session.sendPolicy": deny_discord_groups(),
            "tools.sessions.visibility": "all",
            "tools.agentToAgent.allow": ["main"],
        },
    )
    response = operator.patch(
        CONFIG,
        {
            "session.sendPolicy": None,
            "tools.sessions.visibility": None,
            "tools.agentToAgent.allow": None,
        },
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["session.sendPolicy"] is None
    assert body["tools.sessions.visibility"] == "tree"
    assert body["tools.agentToAgent.allow"] == []
    assert not SendPolicy.load().enabled and not SendPolicyRule.objects.exists()


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("deny", "session.sendPolicy must be an object"),
        ({"default": "maybe"}, 'session.sendPolicy.default must be "allow" or "deny"'),
        ({"rules": {}}, "session.sendPolicy.rules must be an array"),
        ({"rules": [{"action": "deny", "match": {"peer": "x"}}]}, "unknown field(s) peer"),
        ({"rules": [{"action": "nope"}]}, 'Action: must be "allow" or "deny"'),
        ({"rules": [{"action": "deny", "match": {"channel": "fax"}}]}, "not a known channel"),
        ({"rules": [{"action": "deny", "match": {"chatType": "room"}}]}, "not a chat type"),
        ({"bogus": 1}, "unknown field(s) bogus"),
    ],
)
def test_config_refuses_a_bad_send_policy_and_changes_nothing(operator, value, words):
    response = operator.patch(
        CONFIG, {"session.sendPolicy": value, "tools.sessions.visibility": "all"}
    )
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]["message"]
    assert GatewayConfig.load().visibility == "tree"  # all or nothing
    assert not SendPolicy.load().enabled


def test_policies_list_create_update_delete(operator):
    assert operator.get(POLICIES).json()["rules"] == []

    created = operator.post(POLICIES, {"action": "deny", "match": {"channel": "discord"}})
    assert created.status_code == 201, created.content
    rule = created.json()
    assert rule["action"] == "deny" and rule["match"] == {"channel": "discord"}
    assert rule["position"] == 1
    second = operator.post(POLICIES, {"action": "allow", "note": "cron is fine"}).json()
    assert second["position"] == 2

    url = f"{POLICIES}{rule['id']}/"
    assert operator.get(url).json() == rule
    changed = operator.patch(url, {"match": {"chatType": "dm"}, "note": "no DMs"})
    assert changed.status_code == 200, changed.content
    assert changed.json()["match"] == {"chatType": "direct"}
    assert changed.json()["action"] == "deny" and changed.json()["note"] == "no DMs"

    policy = operator.patch(POLICIES, {"enabled": True, "default": "deny", "changeNote": "go"})
    assert policy.status_code == 200, policy.content
    body = policy.json()
    assert body["enabled"] and body["default"] == "deny"
    assert [r["id"] for r in body["rules"]] == [rule["id"], second["id"]]

    assert operator.client.delete(url, **operator.headers()).status_code == 204
    assert operator.get(url).status_code == 404
    assert [r["id"] for r in operator.get(POLICIES).json()["rules"]] == [second["id"]]
    assert SendPolicyChange.objects.count() == 5  # every write is in the history


def test_patch_rules_replaces_the_list_and_the_admin_sees_it(operator, admin_client):
    first = operator.post(POLICIES, {"action": "deny", "match": {"keyPrefix": "hook:"}}).json()
    response = operator.patch(
        POLICIES,
        {
            "rules": [
                {"action": "allow", "match": {"channel": "slack"}},
                {"id": first["id"], "action": "deny"},
            ]
        },
    )
    assert response.status_code == 200, response.content
    rules = response.json()["rules"]
    assert [r["action"] for r in rules] == ["allow", "deny"]
    assert rules[1]["id"] == first["id"] and rules[1]["match"] == {}
    assert "blocks everything" in response.json()["warnings"][0]
    page = admin_client.get("/admin/policies_app/sendpolicy/1/change/").content.decode()
    assert 'value="slack"' in page


def test_the_admin_and_the_api_edit_the_same_rows(operator, admin_client):
    SendPolicy.load()
    SendPolicyRule.objects.create(policy_id=1, position=1, action="deny", channel="telegram")
    assert operator.get(POLICIES).json()["rules"][0]["match"] == {"channel": "telegram"}
    assert operator.get(CONFIG).json()["session.sendPolicy"] is None  # not enabled yet


def test_dry_run_lists_the_sessions_a_rule_set_would_block(operator):
    make_session(DISCORD_GROUP)
    make_session("agent:main:discord:group:ops")
    make_session("agent:main:telegram:group:x")
    make_session("agent:main:main")
    session = make_session("agent:main:discord:group:ok")
    set_send_policy(session=session, policy="allow")

    response = operator.post(
        f"{POLICIES}dry-run/",
        {"enabled": True, "rules": deny_discord_groups()["rules"], "limit": 1},
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["blockedCount"] == 2 and body["activeCount"] == 5 and body["truncated"]
    assert body["blocked"] == [
        {
            "key": "agent:main:discord:group:dev",
            "reason": "rule 1 denies (channel=discord, chatType=group)",
            "ruleNumber": 1,
            "channel": "discord",
            "chatType": "group",
        }
    ]
    assert not SendPolicy.load().enabled and not SendPolicyRule.objects.exists()  # saved nothing
    everything = operator.post(f"{POLICIES}dry-run/", {"enabled": True, "default": "deny"}).json()
    assert everything["blockedCount"] == 4  # all but the session's own allow


@pytest.mark.parametrize(
    ("method", "path", "body", "words"),
    [
        ("post", POLICIES, {"action": "deny", "id": 4}, "id is given by the server"),
        ("post", POLICIES, {"match": {}}, 'Action: must be "allow" or "deny"'),
        ("post", POLICIES, [], "request body must be a JSON object"),
        ("post", POLICIES, {"action": "deny", "position": -1}, "Position"),
        ("patch", POLICIES, {}, "body must set one of"),
        ("patch", POLICIES, {"enabled": "yes"}, "enabled must be true or false"),
        ("patch", POLICIES, {"rules": [{"id": 999, "action": "deny"}]}, "rule id 999"),
        ("patch", POLICIES, {"colour": "red"}, "unknown field(s) colour"),
        ("post", POLICIES + "dry-run/", {"limit": 0}, "limit must be an integer"),
        ("post", POLICIES + "dry-run/", {"rules": "x"}, "rules must be an array"),
    ],
)
def test_bad_policy_input_is_a_clear_400(operator, method, path, body, words):
    response = getattr(operator, method)(path, body)
    assert response.status_code == 400, response.content
    assert words in response.json()["error"]["message"]


def test_unknown_rule_is_404(operator):
    assert operator.patch(f"{POLICIES}999/", {"action": "deny"}).status_code == 404
    for bad in ("-3", "x", "99999999999999999999"):
        response = operator.get(f"{POLICIES}{bad}/")
        assert response.status_code == 404 and response.json()["error"]["type"] == "not_found"
    assert operator.client.delete(f"{POLICIES}999/", **operator.headers()).status_code == 404


def test_policies_are_operator_only(agent_main, ingest, anonymous):
    for api in (agent_main, ingest):
        assert api.get(POLICIES).status_code == 403
        assert api.post(POLICIES, {"action": "deny"}).status_code == 403
        assert api.patch(POLICIES, {"enabled": True}).status_code == 403
        assert api.post(f"{POLICIES}dry-run/", {}).status_code == 403
        assert api.patch(CONFIG, {"session.sendPolicy": None}).status_code == 403
    assert anonymous.get(POLICIES).status_code == 401
    assert not SendPolicyRule.objects.exists()


@pytest.fixture
def admin_client(db):
    from django.contrib.auth.models import User

    user = User.objects.create_user("op", password="pw", is_staff=True)
    user.groups.add(admin_groups()["Operators"])
    client = Client()
    client.force_login(user)
    return client


def test_listing_takes_the_same_queries_for_any_number_of_rules(operator):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries_for_listing() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert operator.get(POLICIES).status_code == 200
        return len(captured)

    operator.post(POLICIES, {"action": "deny", "match": {"channel": "discord"}})
    one = queries_for_listing()
    operator.patch(
        POLICIES,
        {"rules": [{"action": "deny", "match": {"keyPrefix": f"k{i}"}} for i in range(30)]},
    )
    assert queries_for_listing() == one
