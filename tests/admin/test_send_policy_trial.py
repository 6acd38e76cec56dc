"""Issue 29.5: the send-policy page previews the rules in its form before they are saved (the
API's dry run, the same function: send_policy_api.trial), and lists the sessions a policy would
block, each linking to its admin page; the saved policy's count lists them too."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from policies_app.models import SendPolicy, SendPolicyChange, SendPolicyRule
from sessions_app.manage import send_policy_api
from sessions_app.models import Session
from tests.conftest import make_session
from tests.policies_app.test_admin_policy import (
    POLICY_URL,
    policy_post,
    rule,
    seed_policy,
    staff_operator,  # noqa: F401  (a fixture)
)

pytestmark = pytest.mark.django_db

DEV = "agent:main:discord:group:dev"
OPS = "agent:main:discord:group:ops"
ALICE = "agent:main:telegram:direct:alice"


@pytest.fixture
def rooms(agents):
    make_session(DEV, channel="discord", chatType="group")
    make_session(OPS, channel="discord", chatType="group")
    make_session(ALICE, channel="telegram", chatType="direct")


def preview_post(**kwargs) -> dict:
    data = policy_post(**kwargs)
    del data["_save"]
    data["_preview"] = "Preview these rules (without saving)"
    return data


def change_url(key: str) -> str:
    return f"/admin/sessions_app/session/{Session.objects.get(key=key).pk}/change/"


def test_the_saved_policy_lists_the_sessions_it_blocks_with_links(staff_operator, rooms):  # noqa: F811
    seed_policy()
    html = staff_operator.get(POLICY_URL).content.decode()
    assert "2 of 3 active sessions would be blocked</strong> by the saved policy" in html
    listed = html[html.index('id="blocked-sessions"') :]
    listed = listed[: listed.index("</table>")]
    assert f'<a href="{change_url(DEV)}">{DEV}</a>' in listed
    assert f'<a href="{change_url(OPS)}">{OPS}</a>' in listed
    assert ALICE not in listed and "rule 1" in listed


def test_preview_runs_the_unsaved_rules_and_saves_nothing(staff_operator, rooms):  # noqa: F811
    seed_policy()
    before = list(SendPolicyRule.objects.values_list("pk", "action", "channel", "chat_type"))
    # The form as edited: the saved discord rule kept, a new one denying telegram.
    data = preview_post(rules=[rule("deny", 2, channel="telegram")])
    response = staff_operator.post(POLICY_URL, data)
    assert response.status_code == 200
    html = response.content.decode()
    trial = html[html.index('id="send-policy-trial"') :]
    assert "3 of 3 active sessions would be blocked</strong> by the rules in the form" in trial
    assert f'<a href="{change_url(ALICE)}">{ALICE}</a>' in trial
    assert "rule 2" in trial
    # The saved policy's own count is still there, unchanged; nothing was written or logged.
    assert "2 of 3 active sessions would be blocked</strong> by the saved policy" in html
    assert list(SendPolicyRule.objects.values_list("pk", "action", "channel", "chat_type")) == (
        before
    )
    assert not SendPolicyChange.objects.exists()
    # The form comes back as sent: the unsaved rule is still in it, ready to save.
    assert 'value="telegram"' in html
    assert "was changed successfully" not in html


def test_preview_is_the_api_dry_run(staff_operator, operator, rooms):  # noqa: F811
    """The admin and POST /api/v1/policies/dry-run/ answer the same for the same rules."""
    seed_policy()
    response = staff_operator.post(
        POLICY_URL,
        preview_post(
            enabled=True, default="deny", keep=False, rules=[rule("allow", 1, channel="telegram")]
        ),
    )
    page = response.context["trial_run"]
    api = operator.post(
        "/api/v1/policies/dry-run/",
        {
            "enabled": True,
            "default": "deny",
            "rules": [{"action": "allow", "match": {"channel": "telegram"}}],
        },
    ).json()
    assert api == send_policy_api.trial(
        enabled=True,
        default_action="deny",
        rules=[{"action": "allow", "channel": "telegram"}],
    )
    assert {k: page[k] for k in api} == api
    assert page["blockedCount"] == 2 and [b["key"] for b in page["blocked"]] == [DEV, OPS]


def test_a_preview_with_a_bad_rule_shows_the_field_error(staff_operator, rooms):  # noqa: F811
    response = staff_operator.post(
        POLICY_URL, preview_post(rules=[rule("deny", 1, channel="nope")])
    )
    assert response.status_code == 200
    errors = response.context["inline_admin_formsets"][0].formset.errors
    assert "not a known channel" in str(errors)
    assert "trial_run" not in response.context
    assert not SendPolicy.load().enabled


def test_viewers_get_no_preview_button(agents):
    person = User.objects.create_user("vic", is_staff=True)
    person.user_permissions.add(Permission.objects.get(codename="view_sendpolicy"))
    client = Client()
    client.force_login(person)
    html = client.get(POLICY_URL).content.decode()
    assert 'name="_preview"' not in html
    assert client.post(POLICY_URL, preview_post()).status_code == 403
