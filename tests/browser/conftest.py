"""Real headless Chromium against a real ASGI server, for the few flows that need a browser.

Fixtures: `browser` (one Chromium for the browser tests), `page` (a fresh context and page per
test), `live_url` (`manage.py serve` on the test database). Helpers: `login()` through the admin
login form, `screenshot()` into tests/artifacts/ (git-ignored), `staff_user()`.

Browser tests are marked `browser` and need `django_db(transaction=True)`: the server is another
process and only sees committed rows. Without Chromium at /usr/bin/chromium or without playwright
they are skipped, unless OPENCLAW_REQUIRE_BROWSER=1 (CI), where that is a failure.

Never `playwright install`: we drive Debian's chromium, so nothing is downloaded.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ARTIFACTS = Path(__file__).resolve().parent.parent / "artifacts"
VIEWPORT = {"width": 1280, "height": 800}


def pytest_collection_modifyitems(items):
    """Everything in this folder is a browser test: `-m "not browser"` leaves them out."""
    here = Path(__file__).resolve().parent
    for item in items:
        if here in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.browser)


def _missing() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if importlib.util.find_spec("playwright") is None:
        return "playwright is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.exists():
        return f"no Chromium at {CHROMIUM} (apt-get install chromium)"
    return None


@pytest.fixture(scope="package")
def browser():
    """One headless Chromium for all browser tests.

    Package scope, not session: while Playwright's sync API is alive it marks its asyncio loop as
    running in this thread (playwright/_impl/_greenlets.py, wait_for_future). That would break
    every async test that runs after the browser tests, so the browser is closed when they end.
    For the same reason the ORM would refuse sync calls (SynchronousOnlyOperation) in the tests
    and in the database fixtures around them; the loop only ever runs Playwright's own
    coroutines, never Django code, so DJANGO_ALLOW_ASYNC_UNSAFE is set for exactly that span.
    """
    missing = _missing()
    if missing:
        if os.environ.get("OPENCLAW_REQUIRE_BROWSER") == "1":
            pytest.fail(f"browser tests required (OPENCLAW_REQUIRE_BROWSER=1): {missing}")
        pytest.skip(f"browser tests skipped: {missing}")
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    playwright = sync_playwright().start()
    try:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
    finally:
        playwright.stop()
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


FAILED = pytest.StashKey[bool]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # Lets `page` know the test failed, to keep a picture of where it stopped.
    report = yield
    if report.when == "call" and report.failed:
        item.stash[FAILED] = True
    return report


@pytest.fixture
def page(browser, request):
    """A fresh context (no cookies from other tests) and one page in it. When the test fails,
    the page as it was is saved as tests/artifacts/failed-<test name>.png."""
    context = browser.new_context(viewport=VIEWPORT)
    tab = context.new_page()
    try:
        yield tab
        if request.node.stash.get(FAILED, False):
            screenshot(tab, "failed-" + re.sub(r"[^\w.-]+", "_", request.node.name))
    finally:
        context.close()


@pytest.fixture
def live_url(transactional_db) -> str:
    """Base URL (no trailing slash) of a real server on the test database, stopped after."""
    from tests.servers import start_server

    server = start_server()
    try:
        yield server.url
    finally:
        server.stop()


def staff_user(username: str, password: str, *, group: str = "Operators"):
    """A staff user in the Operators or Viewers group (the groups of migration 0006, made again
    because a transactional test's flush removes them)."""
    from django.contrib.auth.models import User

    from tests.conftest import admin_groups

    person = User.objects.create_user(username, password=password, is_staff=True)
    person.groups.add(admin_groups()[group])
    return person


def login(page, live_url: str, username: str, password: str) -> None:
    """Log in through the admin login form; the page ends on the admin index."""
    page.goto(f"{live_url}/admin/login/?next=/admin/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{live_url}/admin/")


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot as tests/artifacts/<name>.png; returns the path."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path
