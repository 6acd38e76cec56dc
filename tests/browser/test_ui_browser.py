"""Issue 6's transcript browser in headless Chromium against a real server (and, for the live
step, a real django-q2 worker): a viewer logs in, filters to discord groups, opens a transcript,
expands a tool call, sees a message a worker appended appear without a reload, and loads an
older page by scrolling up. Screenshots of the list and the transcript, light and dark, go to
tests/artifacts/ui-*.png.

The live steps use the /ws/ endpoint of the live-updates issue (sessions_app/live)."""

from __future__ import annotations

import importlib
import importlib.util
import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from sessions_app.models import ApiKey
from tests.browser.conftest import ARTIFACTS, screenshot
from tests.conftest import add_messages, admin_groups, make_agent, make_session, user
from tests.servers import LiveServer, start_worker

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

DEV = "agent:main:discord:group:dev"
PASSWORD = "viewer-walkthrough-1"
LIVE_TIMEOUT = 20_000  # ms
# The live steps need the /ws/ endpoint of the live-updates issue (sessions_app/live/consumer.py).
needs_ws = pytest.mark.skipif(
    importlib.util.find_spec("sessions_app.live.consumer") is None,
    reason="LIVE STEP NOT RUN: the /ws/ endpoint (sessions_app/live/consumer.py) is not here yet",
)


def make_viewer(username: str = "vera") -> User:
    """A Viewers member, not staff (the groups are made again: a transactional flush drops them)."""
    person = User.objects.create_user(username, password=PASSWORD)
    person.groups.add(admin_groups()["Viewers"])
    return person


def ui_login(page, live_url: str, username: str = "vera") -> None:
    page.goto(f"{live_url}/")
    expect(page).to_have_url(re.compile(r"/accounts/login/\?next=/$"))
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_url}/")


def tool_turn(i: int) -> list[dict]:
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"Check the build {i} first."},
                {
                    "type": "toolCall",
                    "id": f"call_{i}",
                    "name": "ci_status",
                    "arguments": {"pipeline": "nightly", "build": i},
                },
            ],
        },
        {
            "role": "toolResult",
            "toolCallId": f"call_{i}",
            "toolName": "ci_status",
            "content": [{"type": "text", "text": f"nightly #{i}: passed"}],
        },
    ]


@pytest.fixture
def world():
    # Particular: 120 messages (paged at 50), groups to filter, a viewer and an ingest key.
    make_agent("main", backend={"type": "scripted"})  # replies "ACK: <the message>"
    dev = make_session(DEV, channel="discord", chatType="group", displayName="discord:#dev")
    history = []
    for i in range(1, 41):
        history += [user(f"question {i}: did build {i} pass?", senderName="bob"), *tool_turn(i)]
    add_messages(dev, *history)  # 120 messages: the first page holds 50
    ops = make_session("discord:group:ops", channel="discord", chatType="group")
    add_messages(ops, user("deploy at five"))
    make_session("telegram:group:family", channel="telegram", chatType="group")
    make_session("cron:nightly", label="nightly")
    make_viewer()
    _, token = ApiKey.generate(scope=ApiKey.INGEST)
    return {"ingest": token}


@pytest.fixture
def worker():
    cluster = start_worker(workers=1)
    yield cluster
    cluster.stop()


def ingest(live_url: str, token: str, key: str, text: str, *, run: bool = False):
    server = LiveServer(live_url, None)
    body = {"messages": [{"role": "user", "content": text}], "run": run}
    response = server.request("POST", f"/api/v1/sessions/{key}/messages/", body=body, token=token)
    assert response.status == 201, response.body
    return response.json()


def set_theme(page, theme: str) -> None:
    """Through the header toggle (auto → light → dark), as a person would."""
    for _ in range(3):
        if page.evaluate("document.documentElement.dataset.theme || 'auto'") == theme:
            return
        page.click("#theme-toggle")
    raise AssertionError(f"the toggle never reached {theme}")


def view_shot(page, name: str) -> None:
    """The visible part only (a long transcript's full page is mostly scrollback)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def background(page) -> str:
    return page.evaluate("getComputedStyle(document.body).backgroundColor")


@needs_ws
def test_viewer_walkthrough(world, worker, page, live_url):
    # 1. Log in as a viewer.
    ui_login(page, live_url)
    expect(page.locator("h1")).to_have_text("Sessions")
    expect(page.locator("#live-status")).to_have_text("Live", timeout=LIVE_TIMEOUT)

    # 2. Filter to discord groups.
    page.select_option("#f-kind", "group")
    page.fill("#f-channel", "discord")
    page.click(".filter-row button[type=submit]")
    expect(page).to_have_url(re.compile(r"kind=group"))
    rows = page.locator("li.srow")
    expect(rows).to_have_count(2)
    for key in (DEV, "agent:main:discord:group:ops"):
        expect(page.locator(f'li.srow[data-key="{key}"] .badge.channel')).to_have_text("discord")
    page.emulate_media(color_scheme="light")
    screenshot(page, "ui-list-light")
    page.emulate_media(color_scheme="dark")
    assert background(page) != "rgb(247, 247, 245)"
    screenshot(page, "ui-list-dark")
    page.emulate_media(color_scheme="light")

    # 3. Open a transcript: the newest page, scrolled to the latest message.
    page.click(f'li.srow[data-key="{DEV}"] a')
    expect(page).to_have_url(f"{live_url}/sessions/{DEV}/")
    expect(page.locator("#t-title")).to_have_text("discord:#dev")
    expect(page.locator("article.msg")).to_have_count(50)
    expect(page.locator("#seq-120")).to_be_in_viewport()

    # 4. A tool call: its arguments, pretty-printed, with its result in the same card (issue
    # 17: open because both are short; the summary folds and unfolds it).
    call = page.locator("#seq-119 details.tool-call")
    expect(call.locator("pre.json")).to_be_visible()
    expect(call.locator(".tool-result-part")).to_contain_text("nightly #40: passed")
    call.locator("summary").click()
    expect(call.locator("pre.json")).to_be_hidden()
    call.locator("summary").click()
    expect(call.locator("pre.json")).to_be_visible()
    expect(call.locator("pre.json")).to_contain_text('"build": 40')
    set_theme(page, "light")
    view_shot(page, "ui-transcript-light")
    set_theme(page, "dark")
    assert background(page) != "rgb(247, 247, 245)"
    view_shot(page, "ui-transcript-dark")
    set_theme(page, "auto")

    # 5. A message appended by a worker appears without a reload.
    expect(page.locator("#live-status")).to_have_text("Live", timeout=LIVE_TIMEOUT)
    page.evaluate("window.__sameDocument = true")
    result = ingest(live_url, world["ingest"], DEV, "ping from the test", run=True)
    assert result["run"]["status"] == "accepted"
    expect(page.locator("#seq-121")).to_contain_text("ping from the test", timeout=LIVE_TIMEOUT)
    reply = page.locator("#seq-122")
    expect(reply).to_contain_text("ACK: ping from the test", timeout=LIVE_TIMEOUT)
    expect(reply).to_be_in_viewport()  # following
    assert page.evaluate("window.__sameDocument") is True
    expect(page.locator("#panel .run .badge.status").first).to_have_text("ok", timeout=LIVE_TIMEOUT)

    # 6. Scroll up: the older page loads above, the reading position stays.
    expect(page.locator("#seq-70")).to_have_count(0)
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator("#seq-70")).to_have_count(1)
    expect(page.locator("#seq-23")).to_have_count(1, timeout=LIVE_TIMEOUT)
    page.evaluate("window.scrollTo(0, 0)")
    expect(page.locator("#seq-1")).to_have_count(1)
    expect(page.locator("#transcript-start")).to_be_visible()
    seqs = [
        int(s)
        for s in page.eval_on_selector_all("article.msg", "els => els.map(e => e.dataset.seq)")
    ]
    assert seqs == list(range(1, 123))  # every message once, in order


@needs_ws
def test_new_and_updated_sessions_appear_live_in_the_list(world, page, live_url):
    ui_login(page, live_url)
    expect(page.locator("#live-status")).to_have_text("Live", timeout=LIVE_TIMEOUT)
    first = page.locator("li.srow").first
    family = "agent:main:telegram:group:family"
    expect(first).not_to_have_attribute("data-key", family)
    # An update moves a row to the top.
    ingest(live_url, world["ingest"], "telegram:group:family", "dinner at seven")
    expect(first).to_have_attribute("data-key", family, timeout=LIVE_TIMEOUT)
    expect(first.locator(".srow-preview")).to_contain_text("dinner at seven")
    # A new session appears.
    LiveServer(live_url, None).request(
        "POST",
        "/api/v1/sessions/",
        body={
            "key": "slack:channel:c0new",
            "channel": "slack",
            "chatType": "channel",
            "displayName": "slack:#new",
        },
        token=world["ingest"],
    )
    expect(page.locator('li.srow[data-key="agent:main:slack:channel:c0new"]')).to_have_count(
        1, timeout=LIVE_TIMEOUT
    )
    expect(page.locator("li.srow").first).to_contain_text("slack:#new")
    keys = page.eval_on_selector_all("li.srow", "els => els.map(e => e.dataset.key)")
    assert len(keys) == len(set(keys))


@needs_ws
def test_a_filtered_list_only_takes_matching_sessions(world, page, live_url):
    ui_login(page, live_url)
    page.goto(f"{live_url}/?kind=group&channel=discord")
    expect(page.locator("#live-status")).to_have_text("Live", timeout=LIVE_TIMEOUT)
    ingest(live_url, world["ingest"], "cron:nightly", "not a discord group")
    ingest(live_url, world["ingest"], "discord:group:ops", "ops moved")
    expect(page.locator("li.srow").first).to_have_attribute(
        "data-key", "agent:main:discord:group:ops", timeout=LIVE_TIMEOUT
    )
    expect(page.locator("li.srow")).to_have_count(2)


@needs_ws
def test_a_dropped_socket_reconnects_and_misses_nothing(world, page, live_url):
    ui_login(page, live_url)
    page.goto(f"{live_url}/sessions/{DEV}/")
    expect(page.locator("#live-status")).to_have_text("Live", timeout=LIVE_TIMEOUT)
    page.evaluate("window.OCSLiveInstance.ws.close()")
    ingest(live_url, world["ingest"], DEV, "sent while the socket was down")
    ingest(live_url, world["ingest"], DEV, "and another one")
    expect(page.locator("#seq-122")).to_contain_text("and another one", timeout=LIVE_TIMEOUT)
    expect(page.locator("#live-status")).to_have_text("Live")
    seqs = page.eval_on_selector_all("article.msg", "els => els.map(e => e.dataset.seq)")
    assert len(seqs) == len(set(seqs)) and seqs[-2:] == ["121", "122"]


def test_deep_link_loads_the_page_holding_the_message(world, page, live_url):
    ui_login(page, live_url)
    page.goto(f"{live_url}/sessions/{DEV}/#seq-7")
    target = page.locator("#seq-7")
    expect(target).to_be_in_viewport()
    expect(target).to_have_class(re.compile(r"\btarget\b"))
    expect(page.locator("#follow")).not_to_be_checked()
    # The newer messages after the loaded window come back with "Load newer" and Latest.
    page.click("#jump-latest")
    expect(page.locator("#seq-120")).to_be_in_viewport()


def test_narrow_screen_and_keyboard(world, page, live_url):
    page.set_viewport_size({"width": 375, "height": 740})
    ui_login(page, live_url)
    for path in ("/", f"/sessions/{DEV}/"):
        page.goto(live_url + path)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        assert overflow <= 0, f"{path} scrolls sideways by {overflow}px at 375px"
    view_shot(page, "ui-transcript-375")
    page.goto(live_url + "/")
    screenshot(page, "ui-list-375")
    # Keyboard: "/" focuses the search; j moves to the first row; Enter opens it.
    page.keyboard.press("/")
    expect(page.locator("#q")).to_be_focused()
    page.keyboard.type("dev")
    page.keyboard.press("Enter")
    expect(page).to_have_url(re.compile(r"q=dev"))
    page.locator("body").click(position={"x": 5, "y": 300})
    page.keyboard.press("j")
    expect(page.locator("li.srow .srow-link").first).to_be_focused()
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{live_url}/sessions/{DEV}/")
    # Tool calls fold and open from the keyboard too (a short one starts open).
    summary = page.locator("#seq-119 details.tool-call summary")
    summary.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#seq-119 details.tool-call pre.json")).to_be_hidden()
    page.keyboard.press("Enter")
    expect(page.locator("#seq-119 details.tool-call pre.json")).to_be_visible()
