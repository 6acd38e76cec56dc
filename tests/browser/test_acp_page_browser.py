"""An ACP child's panel in the transcript browser and the admin (issue 27 item 5), with a real
worker running the demo's echo harness: the harness, its ACP session id, cwd, warm (as the worker
recorded it when the turn ended) and the permission decision; no panel on a session that is no
ACP child."""

from __future__ import annotations

from urllib.parse import quote

import pytest
from playwright.sync_api import expect

from sessions_app.models import AcpChild, ApiKey, Session
from tests.acp.harness_fixtures import ACP_COMMANDS, ACP_ENV, echo, register
from tests.browser.conftest import login, screenshot, staff_user
from tests.conftest import make_agent, make_session
from tests.servers import LiveServer, start_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TIMEOUT = 30_000  # ms: the worker picks the run up, the harness starts, the panel refreshes


@pytest.fixture
def worker():
    cluster = start_worker(workers=1)
    yield cluster
    cluster.stop()


def test_the_acp_panel_shows_what_the_worker_recorded(settings, worker, page, live_url, tmp_path):
    settings.OPENCLAW_ACP_COMMANDS = ACP_COMMANDS
    settings.OPENCLAW_ACP_ENV = ACP_ENV
    make_agent("main")
    make_session("main")
    staff_user("olivia", "pw-olivia", group="Operators")
    _, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
    register(echo=echo(tmp_path, mode="read-only"))
    login(page, live_url, "olivia", "pw-olivia")
    response = LiveServer(live_url, None).request(
        "POST",
        "/tools/invoke",
        body={"tool": "sessions_spawn", "args": {"task": "Say it back", "runtime": "acp"}},
        token=token,
    )
    assert response.status == 200, response.body
    key = response.json()["result"]["details"]["childSessionKey"]

    page.goto(f"{live_url}/sessions/{quote(key)}/")
    acp = page.locator("#sec-acp")
    expect(acp.locator("h2")).to_have_text("ACP harness")
    expect(acp.locator(".acp-harness")).to_have_text("echo")
    # The turn ends in the worker; the panel refreshes with the run's end.
    expect(acp.locator(".acp-state")).to_have_text("warm", timeout=TIMEOUT)
    row = AcpChild.objects.get(session__key=key)
    expect(acp.locator(".acp-session-id")).to_have_text(row.acp_session_id)
    expect(acp.locator(".acp-cwd")).to_contain_text(str(tmp_path))
    expect(acp.locator(".acp-warmth")).to_contain_text(f"kept warm by worker {row.worker}")
    decision = acp.locator(".acp-decision")
    expect(decision).to_have_count(1)
    expect(decision).to_contain_text("allowed")
    expect(decision).to_contain_text("Read the task")
    expect(decision).to_contain_text("read-only")
    screenshot(page, "acp-panel-browser")

    # The admin's page says the same.
    child = Session.objects.get(key=key)
    page.goto(f"{live_url}/admin/sessions_app/session/{child.pk}/change/")
    admin_acp = page.locator("#acp")
    expect(admin_acp.locator(".acp-session-id")).to_have_text(row.acp_session_id)
    expect(admin_acp.locator(".acp-state")).to_have_text("warm")
    expect(admin_acp.locator(".acp-decision")).to_contain_text("allowed")
    screenshot(page, "acp-panel-admin")

    # A session that is no ACP child has no such panel.
    page.goto(f"{live_url}/sessions/{quote('agent:main:main')}/")
    expect(page.locator("#sec-tree")).to_be_visible()
    expect(page.locator("#sec-acp")).to_have_count(0)
