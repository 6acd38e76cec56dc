"""Issue 4's walkthrough in a real headless Chromium against a real server: an operator logs in,
adds a deny rule for discord groups, sees the preview block a discord group key, sets one
session's override to allow and sees the preview allow it. Screenshots of each step go to
tests/artifacts/admin-*.png."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from policies_app.models import SendPolicy, SendPolicyChange
from sessions_app.models import Session
from tests.browser.conftest import login, screenshot, staff_user
from tests.conftest import make_agent, make_session

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEV_GROUP = "agent:main:discord:group:dev"
OPS_GROUP = "agent:main:discord:group:ops"
POLICY_PATH = "/admin/policies_app/sendpolicy/1/change/"


@pytest.fixture
def world():
    # Particular: the groups and the staff user the walkthrough clicks through.
    make_agent("main")
    make_session(DEV_GROUP, channel="discord", displayName="dev room")
    make_session(OPS_GROUP, channel="discord")
    make_session("agent:main:telegram:direct:alice", channel="telegram")
    staff_user("olivia", "walkthrough-pw-1")


def preview(page, live_url, key: str):
    page.goto(live_url + POLICY_PATH)
    page.fill("#id_preview_key", key)
    page.click("#send-policy-preview input[type=submit]")
    expect(page.locator("#preview-result")).to_be_visible()


def expect_decision(page, action: str, reason: str, rule: str = "none"):
    expect(page.locator(".preview-action")).to_have_text(action)
    expect(page.locator(".preview-reason")).to_have_text(reason)
    expect(page.locator(".preview-rule")).to_have_text(rule)


def test_operator_blocks_discord_groups_then_allows_one_session(world, page, live_url):
    # 1. Log in as an operator (staff in the Operators group, not a superuser).
    login(page, live_url, "olivia", "walkthrough-pw-1")
    expect(page.locator("#site-name")).to_be_visible()
    screenshot(page, "admin-1-logged-in")

    # 2. Turn the policy on and add a deny rule for discord groups; save.
    page.goto(live_url + "/admin/policies_app/sendpolicy/")  # the list is the one row's page
    expect(page).to_have_url(live_url + POLICY_PATH)
    page.check("#id_enabled")
    page.select_option("#id_default_action", "allow")
    page.fill("#id_rules-0-position", "1")
    page.select_option("#id_rules-0-action", "deny")
    page.fill("#id_rules-0-channel", "discord")
    page.fill("#id_rules-0-chat_type", "group")
    page.fill("#id_rules-0-note", "no bots in discord groups")
    page.fill("#id_change_note", "walkthrough")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist .success")).to_contain_text("was changed successfully")
    expect(page.locator("#blocked-count")).to_contain_text(
        "2 of 3 active sessions would be blocked"
    )
    expect(page.locator("#send-policy-history")).to_contain_text(
        "rule added: deny (channel=discord, chatType=group)"
    )
    screenshot(page, "admin-2-rule-saved")

    # 3. The preview blocks a discord group key and names the rule.
    preview(page, live_url, DEV_GROUP)
    expect_decision(
        page,
        "deny",
        "rule 1 denies (channel=discord, chatType=group)",
        "rule 1: channel=discord, chatType=group — no bots in discord groups",
    )
    screenshot(page, "admin-3-preview-blocked")

    # 4. On the session's admin page, set its send-policy override to allow.
    page.goto(live_url + "/admin/sessions_app/session/?q=discord:group:dev")
    page.click(f"#result_list a:text-is('{DEV_GROUP}')")
    expect(page).to_have_url(re.compile(r"/admin/sessions_app/session/\d+/change/"))
    override = page.locator("form[action$='/send-policy/']")
    override.locator("select[name=policy]").select_option("allow")
    override.locator("button[type=submit]").click()
    expect(page.locator(".messagelist")).to_contain_text("Send policy: allow.")
    screenshot(page, "admin-4-session-override-allow")

    # ... and the preview now allows that session.
    preview(page, live_url, DEV_GROUP)
    expect_decision(page, "allow", "session override: allow")
    expect(page.locator("#blocked-count")).to_contain_text(
        "1 of 3 active sessions would be blocked"
    )
    screenshot(page, "admin-5-preview-allowed")
    preview(page, live_url, OPS_GROUP)
    expect(page.locator(".preview-action")).to_have_text("deny")  # its sibling: still blocked

    # What the browser did is what the database holds.
    policy = SendPolicy.load()
    assert policy.enabled
    assert [(r.action, r.channel, r.chat_type) for r in policy.rules.all()] == [
        ("deny", "discord", "group")
    ]
    change = SendPolicyChange.objects.get()
    assert (change.username, change.note) == ("olivia", "walkthrough")
    assert Session.objects.get(key=DEV_GROUP).send_policy == "allow"
    assert Session.objects.get(key=OPS_GROUP).send_policy == ""
