"""An ACP child's reply streaming in the transcript browser (issue 27): while the harness
speaks, a draft below the stored messages grows with its `session.delta` events; when the reply
is stored, the draft gives way to the one stored message.

The worker is another process, so its deltas reach the server through Redis: without REDIS_URL
the browser only sees the stored reply (docs/acp.md), and this test is skipped."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from django.conf import settings
from playwright.sync_api import expect

from sessions_app.models import ApiKey
from tests.acp.harness_fixtures import ACP_COMMANDS, ACP_ENV, echo, register
from tests.browser.test_ui_browser import make_viewer, ui_login
from tests.conftest import make_agent, make_session
from tests.servers import LiveServer, start_worker

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        not settings.REDIS_URL,
        reason="deltas cross from the worker to the server through Redis: needs REDIS_URL",
    ),
]

TASK = "Say this back to me, in a few pieces, slowly."
TIMEOUT = 20_000  # ms


@pytest.fixture
def worker():
    cluster = start_worker(workers=1)
    yield cluster
    cluster.stop()


def test_the_reply_streams_as_a_draft_then_is_stored_once(
    settings, worker, page, live_url, tmp_path
):
    settings.OPENCLAW_ACP_COMMANDS = ACP_COMMANDS
    settings.OPENCLAW_ACP_ENV = ACP_ENV
    make_agent("main")
    make_session("main")
    make_viewer()
    _, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
    # The tool call and its permission first, then the reply over ~6 s.
    register(echo=echo(tmp_path, args=("--chunks", "6", "--delay", "1.0")))
    ui_login(page, live_url)
    response = LiveServer(live_url, None).request(
        "POST",
        "/tools/invoke",
        body={"tool": "sessions_spawn", "args": {"task": TASK, "runtime": "acp"}},
        token=token,
    )
    assert response.status == 200, response.body
    key = response.json()["result"]["details"]["childSessionKey"]
    page.goto(f"{live_url}/sessions/{quote(key)}/")
    expect(page.locator("#live-status")).to_have_text("Live", timeout=TIMEOUT)
    draft = page.locator("article.msg.draft")
    expect(draft).to_be_visible(timeout=TIMEOUT)
    expect(draft).to_contain_text("streaming")
    expect(draft.locator(".text")).to_contain_text("Say", timeout=TIMEOUT)
    # The whole reply, stored, replaces the draft: one message, no draft left.
    stored = page.locator("article.msg.role-assistant:not(.draft)", has_text=TASK)
    expect(stored).to_have_count(1, timeout=TIMEOUT)
    expect(draft).to_have_count(0, timeout=TIMEOUT)
