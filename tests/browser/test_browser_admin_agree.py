"""Issue 29.5 in headless Chromium against a real server: the transcript browser and the admin
agree and explain. Spawned sessions named the same in both (kind, harness, task label as
title); one time rule (how long ago, the UTC time on hover, whatever the reader's time zone);
the admin's session page leads with the transcript, its raw fields folded. And issue 29.4's
folded internal rows, seen in a browser: a completion prompt is one line, "Sub-agent X
finished: success · show prompt", in the browser and in the admin."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest
from django.db import connections
from playwright.sync_api import expect

from policies_app.models import SendPolicy
from sessions_app.models import Session, now_ms
from tests.browser.conftest import VIEWPORT, login, screenshot, staff_user
from tests.conftest import add_messages, assistant, finished_run, make_agent, make_session, user
from tests.runs.helpers import completed_spawn

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PARENT = "agent:main:main"
CHILD = "agent:research:subagent:5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"
ACP_CHILD = "agent:echo:acp:0b6f1c1e-2f7a-4d55-9c1e-6a0d3e0f9b21"
PASSWORD = "agree-pw-1"
THREE_HOURS_MS = 3 * 3600 * 1000


@pytest.fixture
def spawned(agents):
    """main's session, a research sub-agent and an echo ACP child, each spawned with a task
    label; an operator (staff) who may read the browser and the admin."""
    make_agent("echo", name="Echo harness")
    make_session(PARENT, displayName="Alice (webchat)")
    child = make_session(CHILD, spawnedBy=PARENT, spawnDepth=1, label="summarise-inbox")
    add_messages(child, user("Summarise the inbox"), assistant("4 unread, nothing urgent."))
    acp = make_session(ACP_CHILD, spawnedBy=PARENT, spawnDepth=1, label="fix-tests")
    add_messages(acp, user("Fix the failing tests"), assistant("Done: 3 tests fixed."))
    staff_user("olivia", PASSWORD)
    return {"child": child, "acp": acp}


def in_a_thread(function, *args, **kwargs):
    """Call `function` in a thread of its own: the test client's async_to_sync refuses the
    thread where Playwright's loop runs. Its database connection is closed after."""

    def call():
        try:
            return function(*args, **kwargs)
        finally:
            connections.close_all()

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(call).result()


def admin_change_url(key: str) -> str:
    return f"/admin/sessions_app/session/{Session.objects.get(key=key).pk}/change/"


def test_spawned_sessions_are_named_the_same_in_the_browser_and_the_admin(spawned, page, live_url):
    login(page, live_url, "olivia", PASSWORD)

    # The browser's list: kind, harness and task; the task label is the title.
    page.goto(live_url + "/")
    acp_row = page.locator(f'li.srow[data-key="{ACP_CHILD}"]')
    expect(acp_row.locator(".srow-title")).to_have_text("fix-tests")
    expect(acp_row.locator(".badge.kind")).to_have_text("ACP")
    expect(acp_row.locator(".badge.harness")).to_have_text("harness echo")
    expect(acp_row.locator(".badge.task")).to_have_text("task fix-tests")
    expect(acp_row.locator(".srow-parent")).to_contain_text(f"ACP of {PARENT}")
    expect(acp_row).not_to_contain_text("unknown")
    child_row = page.locator(f'li.srow[data-key="{CHILD}"]')
    expect(child_row.locator(".srow-title")).to_have_text("summarise-inbox")
    expect(child_row.locator(".badge.kind")).to_have_text("sub-agent")
    screenshot(page, "agree-browser-list")

    # The browser's transcript page and the parent's tree say the same.
    acp_row.locator("a.srow-link").click()
    expect(page.locator("#t-title")).to_have_text("fix-tests")
    expect(page.locator(".t-head .badge.kind")).to_have_text("ACP")
    expect(page.locator(".t-head .badge.harness")).to_have_text("harness echo")
    page.locator(".t-head .t-parent a").click()
    acp_item = page.locator("#sec-tree .tree-self > ul > li", has_text="fix-tests")
    expect(acp_item.locator(".badge.kind")).to_have_text("ACP")
    expect(acp_item.locator(".badge.harness")).to_have_text("harness echo")

    # The admin's list: the same name, kind and (no) channel; not `other` / `unknown`.
    page.goto(live_url + "/admin/sessions_app/session/")
    acp_line = page.locator("#result_list tr", has_text=ACP_CHILD)
    expect(acp_line.locator("td.field-title")).to_have_text("fix-tests")
    expect(acp_line.locator("td.field-kind_shown")).to_have_text("ACP · echo")
    expect(acp_line.locator("td.field-channel_shown")).to_have_text("—")
    child_line = page.locator("#result_list tr", has_text=CHILD)
    expect(child_line.locator("td.field-title")).to_have_text("summarise-inbox")
    expect(child_line.locator("td.field-kind_shown")).to_have_text("sub-agent")
    screenshot(page, "agree-admin-list")

    # The admin's session page leads with the same name.
    acp_line.locator("th a").click()
    summary = page.locator("#session-summary")
    expect(summary.locator(".oc-title")).to_have_text("fix-tests")
    expect(summary.locator(".oc-kind")).to_have_text("ACP")
    expect(summary.locator(".oc-harness")).to_have_text("harness echo")
    expect(summary.locator(".oc-task")).to_have_text("task fix-tests")
    expect(summary.locator(".oc-parent a")).to_have_text(PARENT)
    # ... and the parent's sub-agent list names both children as the browser's tree does.
    summary.locator(".oc-parent a").click()
    tree = page.locator("#subagents")
    expect(tree.locator("li", has_text="fix-tests").locator(".oc-kind").first).to_have_text(
        "ACP · echo"
    )
    expect(tree.locator("li", has_text="summarise-inbox").locator(".oc-kind").first).to_have_text(
        "sub-agent"
    )


def test_one_time_rule_in_both_whatever_the_readers_time_zone(spawned, browser, live_url):
    """Relative text, the UTC time on hover, in the browser and the admin, for a reader in
    New York: no time is rewritten into the reader's locale."""
    at = now_ms() - THREE_HOURS_MS
    session = make_session("agent:main:cron:nightly", displayName="nightly", updatedAt=at)
    add_messages(session, user("Run the nightly report", timestamp=at))
    Session.objects.filter(pk=session.pk).update(updated_at=at)
    absolute = datetime.fromtimestamp(at / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    context = browser.new_context(viewport=VIEWPORT, timezone_id="America/New_York")
    page = context.new_page()
    try:
        login(page, live_url, "olivia", PASSWORD)

        def expect_rule(time_locator):
            expect(time_locator).to_have_text("3 h ago")
            expect(time_locator).to_have_attribute("title", absolute)

        page.goto(live_url + "/")
        expect_rule(page.locator('li.srow[data-key="agent:main:cron:nightly"] time.rel'))
        page.goto(live_url + "/sessions/agent:main:cron:nightly/")
        expect_rule(page.locator("#seq-1 time.rel"))
        expect_rule(page.locator("#sec-meta time.rel"))  # updatedAt: not raw epoch ms alone
        expect(page.locator("time:not(.rel)")).to_have_count(0)
        screenshot(page, "agree-browser-times")

        page.goto(live_url + "/admin/sessions_app/session/?q=cron:nightly")
        expect_rule(page.locator("#result_list td.field-updated time.rel"))
        page.goto(live_url + admin_change_url("agent:main:cron:nightly"))
        expect_rule(page.locator("#session-summary time.rel"))
        expect_rule(page.locator("#seq-1 time.rel"))
        screenshot(page, "agree-admin-times")
    finally:
        context.close()


def test_the_admin_session_page_leads_with_the_transcript_fields_folded(spawned, page, live_url):
    login(page, live_url, "olivia", PASSWORD)
    page.goto(live_url + admin_change_url(CHILD))
    summary, transcript = page.locator("#session-summary"), page.locator("#transcript")
    raw = page.locator("fieldset.collapse details")
    expect(transcript).to_contain_text("4 unread, nothing urgent.")
    # Top to bottom: who it is, the transcript, then every stored field, folded.
    tops = [box["y"] for box in (summary.bounding_box(), transcript.bounding_box())]
    raw_top = raw.bounding_box()["y"]
    assert tops[0] < tops[1] < raw_top
    expect(raw).not_to_have_attribute("open", re.compile(".*"))
    expect(page.locator(".field-session_id")).to_be_hidden()
    raw.locator("summary").click()
    expect(page.locator(".field-session_id")).to_be_visible()
    screenshot(page, "agree-admin-session-page")


def test_a_completion_prompt_is_one_folded_line_in_the_browser_and_the_admin(
    agent_main, page, live_url
):
    """Issue 29.4: main's real completion turn (the ~25-line prompt, its NO_REPLY) reads as
    folded lines; the prompt opens on "show prompt"."""
    make_session("main", lastChannel="webchat")
    in_a_thread(completed_spawn, agent_main, label="papers")
    staff_user("olivia", PASSWORD)
    login(page, live_url, "olivia", PASSWORD)

    page.goto(live_url + f"/sessions/{PARENT}/")
    prompt = page.locator("article#seq-1")
    expect(prompt).to_have_class(re.compile(r"\bis-internal\b"))
    line = prompt.locator("details.internal > summary")
    expect(line).to_contain_text("— Sub-agent papers finished: success · show prompt")
    body = prompt.locator(".internal-body")
    expect(body).to_be_hidden()
    expect(prompt.locator("header.msg-head")).to_have_count(0)  # not a User bubble
    line.locator(".show").click()
    expect(body).to_be_visible()
    expect(body).to_contain_text("A background task completed.")
    expect(page.locator("article#seq-2 summary")).to_contain_text(
        "Replied NO_REPLY (nothing to send) · show message"
    )
    screenshot(page, "agree-browser-folded-prompt")

    # The list's preview skips the prompt and the NO_REPLY.
    page.goto(live_url + "/")
    preview = page.locator(f'li.srow[data-key="{PARENT}"] .srow-preview')
    expect(preview).not_to_contain_text("A background task completed")
    expect(preview).not_to_contain_text("NO_REPLY")

    # The admin folds it the same way.
    page.goto(live_url + admin_change_url(PARENT))
    folded = page.locator("#seq-1 details.oc-internal")
    expect(folded.locator("summary")).to_have_text(
        "Sub-agent papers finished: success · show prompt"
    )
    expect(folded.locator("pre")).to_be_hidden()
    folded.locator("summary").click()
    expect(folded.locator("pre")).to_contain_text("A background task completed.")


def test_the_pin_group_and_status_note_a_sessions_call_set_show_in_the_list(
    spawned, operator, page, live_url
):
    def patch():
        response = operator.invoke(
            "sessions",
            {
                "action": "patch",
                "sessionKey": PARENT,
                "pinned": True,
                "group": "Inbox work",
                "statusNote": "waiting on the mail server",
            },
        )
        assert response.status_code == 200, response.content

    in_a_thread(patch)
    login(page, live_url, "olivia", PASSWORD)
    page.goto(live_url + "/")
    row = page.locator(f'li.srow[data-key="{PARENT}"]')
    expect(row.locator(".badge.pin")).to_have_text("pinned")
    expect(row.locator(".badge.group")).to_have_text("group Inbox work")
    expect(row.locator(".srow-note")).to_have_text("waiting on the mail server")
    expect(row.locator(".srow-note")).to_be_visible()
    other = page.locator(f'li.srow[data-key="{ACP_CHILD}"]')
    expect(other.locator(".badge.pin, .badge.group, .srow-note")).to_have_count(0)
    screenshot(page, "agree-list-pin-group-note")


def test_search_answers_agree_and_mark_the_matched_words(spawned, page, live_url):
    add_messages(spawned["child"], user("Is the quarterly report in the inbox?"))
    login(page, live_url, "olivia", PASSWORD)

    # A word only a message holds: the hit is listed, and the empty session list says why it
    # is empty instead of "No sessions match".
    page.goto(live_url + "/")
    page.fill("#q", "quarterly")
    page.press("#q", "Enter")
    hit = page.locator("#message-hits li.hit")
    expect(hit).to_have_count(1)
    expect(hit.locator(".hit-snippet mark")).to_have_text("quarterly")
    expect(page.locator("#no-rows")).to_have_text(
        "No session's key, label or name contains “quarterly”; the messages above do contain it."
    )
    expect(page.get_by_text("No sessions match these filters.")).to_have_count(0)
    screenshot(page, "agree-search-message-only")

    # A word in a name and in a message: both answers, the word marked in each.
    page.fill("#q", "inbox")
    page.press("#q", "Enter")
    expect(page.locator("#message-hits li.hit mark").first).to_have_text(re.compile("inbox", re.I))
    row = page.locator(f'li.srow[data-key="{CHILD}"]')
    expect(row.locator(".srow-title mark")).to_have_text("inbox")
    expect(page.locator("#no-rows")).to_have_count(0)


def test_the_send_policy_page_previews_unsaved_rules_and_lists_whom_they_block(
    spawned, page, live_url
):
    make_session("agent:main:discord:group:dev", channel="discord", chatType="group")
    make_session("agent:main:telegram:direct:bob", channel="telegram", chatType="direct")
    login(page, live_url, "olivia", PASSWORD)
    page.goto(live_url + "/admin/policies_app/sendpolicy/1/change/")
    expect(page.locator("#blocked-count")).to_contain_text("0 of 5 active sessions")

    # An unsaved rule: deny discord groups. Preview, not Save.
    page.check("#id_enabled")
    page.select_option("#id_rules-0-action", "deny")
    page.fill("#id_rules-0-channel", "discord")
    page.fill("#id_rules-0-chat_type", "group")
    page.click("#preview-rules")
    trial = page.locator("#send-policy-trial")
    expect(trial.locator("#trial-count")).to_contain_text(
        "1 of 5 active sessions would be blocked by the rules in the form"
    )
    link = trial.locator("#trial-sessions a")
    expect(link).to_have_text("agent:main:discord:group:dev")
    # Nothing saved: the saved policy still blocks nobody, and the form keeps the rule.
    expect(page.locator("#blocked-count")).to_contain_text("0 of 5 active sessions")
    expect(page.locator("#id_rules-0-channel")).to_have_value("discord")
    expect(page.locator(".messagelist .success")).to_have_count(0)
    screenshot(page, "agree-send-policy-preview")
    assert not SendPolicy.load().enabled

    # The link leads to the session it would block.
    link.click()
    expect(page.locator("#session-summary .oc-key")).to_have_text("agent:main:discord:group:dev")


def test_the_activity_plots_have_axes_a_range_error_rate_and_p95(spawned, page, live_url):
    parent = Session.objects.get(key=PARENT)
    for days_ago, ms, status in ((0.01, 400, "ok"), (0.02, 2000, "error"), (3, 900, "ok")):
        finished_run(parent, hours_ago=days_ago * 24, ms=ms, tokens=100, status=status)
    login(page, live_url, "olivia", PASSWORD)
    page.goto(live_url + "/")
    box = page.locator("#agent-activity")
    main = box.locator('tr[data-agent="main"]')
    expect(box.locator("#activity-title")).to_have_text("Agents, last 24 hours")
    expect(main.locator("td.runs")).to_have_text("2")
    expect(main.locator("td.error-rate")).to_have_text("50%")
    expect(main.locator("td.p95")).to_have_text("2.0 s")
    runs_chart = main.locator("svg.chart").first
    expect(runs_chart.locator("path.axis")).to_have_count(1)
    expect(runs_chart.locator("text.tick.time")).to_have_text(["24 h ago", "12 h ago", "now"])
    expect(runs_chart.locator("rect.bar.failed")).to_have_count(1)
    screenshot(page, "agree-activity-24h")

    box.locator('a[data-range="7d"]').click()
    expect(page).to_have_url(re.compile(r"\?range=7d$"))
    expect(box.locator("#activity-title")).to_have_text("Agents, last 7 days")
    expect(main.locator("td.runs")).to_have_text("3")
    expect(main.locator("td.error-rate")).to_have_text("33%")
    expect(main.locator("svg.chart").first.locator("text.tick.time").first).to_have_text("7 d ago")
    screenshot(page, "agree-activity-7d")

    # The admin's index has the same plots and ranges.
    page.goto(live_url + "/admin/?range=30d")
    expect(page.locator("#activity-title")).to_have_text("Agents, last 30 days")
    admin_main = page.locator('#agent-activity tr[data-agent="main"]')
    expect(admin_main.locator("td.error-rate")).to_have_text("33%")
    expect(admin_main.locator("svg.chart path.axis")).to_have_count(2)
