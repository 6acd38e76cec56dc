"""Issue 17 in headless Chromium against a real server: what a newcomer sees in the transcript
browser. Sub-agent sessions shown as sub-agents (list, filter, tree and page)."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import screenshot
from tests.browser.test_ui_browser import make_viewer, ui_login
from tests.conftest import add_messages, assistant, make_agent, make_session, user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PARENT = "agent:main:main"
CHILD = "agent:research:subagent:5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"


@pytest.fixture
def world():
    # Particular: the parent and child transcripts a newcomer reads in the browser.
    make_agent("main")
    make_agent("research")
    parent = make_session(PARENT, displayName="Alice (webchat)")
    add_messages(parent, user("Ask the research agent to summarise the inbox."))
    child = make_session(
        CHILD, spawnedBy=PARENT, spawnDepth=1, label="summarise-inbox", displayName="inbox"
    )
    add_messages(child, user("Summarise the inbox"), assistant("4 unread, nothing urgent."))
    make_session("agent:main:discord:group:dev", channel="discord", chatType="group")
    return {"parent": parent, "child": child}


def test_subagent_sessions_are_shown_as_sub_agents(page, live_url, world):
    make_viewer()
    ui_login(page, live_url)
    row = page.locator(f'li.srow[data-key="{CHILD}"]')
    expect(row.locator(".kind-subagent")).to_have_text("sub-agent")
    expect(row.locator(".badge.task")).to_have_text("task summarise-inbox")
    expect(row.locator(".srow-parent")).to_contain_text(f"sub-agent of {PARENT}")
    expect(row.get_by_title("Latest run")).to_have_text("no run")
    expect(row).not_to_contain_text("unknown")

    # The kind filter has sub-agents: only the child is left.
    page.select_option("#f-kind", "subagent")
    page.click("#filters button[type=submit] >> text=Apply")
    expect(page.locator("li.srow")).to_have_count(1)
    expect(page.locator("li.srow")).to_have_attribute("data-key", CHILD)
    screenshot(page, "newcomer-subagent-list")

    # Its page: sub-agent of the parent (a link), the task, the run state.
    row.locator("a.srow-link").click()
    head = page.locator(".t-head")
    expect(head.locator(".kind-subagent")).to_be_visible()
    expect(head.locator(".t-parent a")).to_have_text(PARENT)
    expect(head.locator(".badge.task")).to_have_text("task summarise-inbox")
    expect(page.locator("#sec-tree .tree-parent")).to_contain_text("Spawned by Alice (webchat)")

    # The parent's tree marks the child as a sub-agent, with its task.
    head.locator(".t-parent a").click()
    child_item = page.locator("#sec-tree li", has_text="inbox").first
    expect(child_item.locator(".kind-subagent")).to_be_visible()
    expect(child_item.locator(".badge.task")).to_have_text("task summarise-inbox")
    screenshot(page, "newcomer-subagent-tree")


def test_tool_calls_come_with_their_results_and_skips_are_quiet(page, live_url, world):
    """Issue 17.3: each call with its result as one card (folded when long), results
    pretty-printed like arguments, REPLY_SKIP / ANNOUNCE_SKIP as quiet markers."""
    from tests.conftest import tool_result

    session = make_session("agent:main:cron:tools", displayName="tools")
    rows = [{"n": i, "ok": True} for i in range(30)]
    add_messages(
        session,
        user("What's on today?"),
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "c1", "name": "calendar_list", "arguments": {"d": 1}},
                {"type": "toolCall", "id": "c2", "name": "db_query", "arguments": {"q": "all"}},
            ],
        },
        tool_result('{"time": "10:00", "title": "Standup"}', call_id="c1", name="calendar_list"),
        tool_result(__import__("json").dumps(rows), call_id="c2", name="db_query"),
        assistant("Standup at 10:00."),
        assistant("REPLY_SKIP"),
        assistant("ANNOUNCE_SKIP"),
    )
    make_viewer()
    ui_login(page, live_url)
    page.goto(f"{live_url}/sessions/agent:main:cron:tools/")
    calls = page.locator("#seq-2 details.tool-call")
    short, long = calls.nth(0), calls.nth(1)
    expect(short).to_have_attribute("open", "")
    expect(short.locator(".tool-result-part pre.json")).to_contain_text('"title": "Standup"')
    expect(long.locator(".tool-result-part")).to_be_hidden()  # folded: long
    long.locator("summary").click()
    expect(long.locator(".tool-result-part pre.json")).to_contain_text('"n": 29')
    expect(page.locator("#seq-3")).to_contain_text("result of calendar_list shown with its call")
    expect(page.locator("#seq-6.is-skip")).to_contain_text("reply step skipped (REPLY_SKIP)")
    expect(page.locator("#seq-7.is-skip")).to_contain_text("announce skipped (ANNOUNCE_SKIP)")
    expect(page.locator("#seq-6 .role")).to_have_count(0)
    screenshot(page, "newcomer-tool-cards")


def test_agent_activity_and_the_run_timeline_are_where_people_look(page, live_url, world):
    """Issue 17.7: the list and the admin index chart each agent's last day (runs per hour,
    median run time, tokens); a session's page has a timeline of its runs. Inline SVG only."""
    from datetime import timedelta

    from django.utils import timezone

    from sessions_app.models import Run
    from tests.browser.conftest import login, staff_user

    now = timezone.now()
    for minutes, ms, status in ((90, 400, "ok"), (30, 1200, "error"), (5, 800, "ok")):
        created = now - timedelta(minutes=minutes)
        Run.objects.create(
            session=world["parent"],
            kind="send",
            status=status,
            created_at=created,
            started_at=created,
            finished_at=created + timedelta(milliseconds=ms),
            usage={"input": 90, "output": 10},
        )
    outside = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_url) else None)
    make_viewer()
    ui_login(page, live_url)
    main = page.locator('#agent-activity tr[data-agent="main"]')
    expect(main.locator("td.runs")).to_have_text("3")
    expect(main.locator("td.median")).to_have_text("800 ms")
    expect(main.locator("td.tokens")).to_have_text("300")
    expect(main.locator("svg.chart")).to_have_count(2)
    # Runs and tokens in the hours of 90, 30 and 5 minutes ago: 2 or 3 hours, in both charts.
    assert main.locator("svg.chart rect.bar:not(.empty):not(.failed)").count() in (4, 6)
    screenshot(page, "newcomer-activity-list")

    page.goto(f"{live_url}/sessions/{PARENT}/")
    timeline = page.locator("#run-timeline svg.timeline")
    expect(timeline.locator("rect.tl")).to_have_count(3)
    expect(timeline.locator("rect.tl-error title")).to_contain_text("send error")
    assert not outside, outside  # no CDN, no external asset

    staff_user("otto", "otto-walkthrough-1")
    page.context.clear_cookies()
    login(page, live_url, "otto", "otto-walkthrough-1")
    admin_row = page.locator('#agent-activity tr[data-agent="main"]')
    expect(admin_row.locator("td.runs")).to_have_text("3")
    expect(admin_row.locator("svg.chart")).to_have_count(2)
    screenshot(page, "newcomer-activity-admin")
