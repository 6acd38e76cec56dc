"""Per-source limits on failed API-key checks (issue 28 item 2, sessions_app/access/
source_limit.py): a source (the client's address, or the one a trusted proxy reports) that
failed too many checks has new keys refused before any lookup, while keys already served go on.
Every way in is in tests/test_gate.py's table; here, a real server and the door's counts."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import Client

from openclaw_site import page_gate
from sessions_app.access import source_limit
from sessions_app.api import door
from sessions_app.models import ApiKey
from tests.access.test_limits import page_stand_in, stand_in
from tests.servers import start_server

LIST = "/api/v1/sessions/"
NEVER = str(10**9)  # a window no test can cross the edge of (windows are aligned to the clock)


def bad_key(i: int) -> str:
    return f"ocs_{i:012x}_{'x' * 43}"


@pytest.mark.django_db(transaction=True)
def test_a_source_that_failed_its_key_checks_gets_new_keys_refused_before_the_lookup(agents):
    """Against `manage.py serve` behind a trusted proxy (127.0.0.1): three distinct bad keys
    from one client address are looked up (401); the fourth, and a valid key never served
    here, from that address are a 429 naming the limit, with the window's remaining seconds in
    Retry-After; a key served before is still served, and so is the new key from another
    address, or from the proxy's own."""
    _, served = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])
    _, new = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])
    server = start_server(
        env={
            "OPENCLAW_SOURCE_AUTH_FAILURES": "3",
            "OPENCLAW_SOURCE_WINDOW_SECONDS": NEVER,
            "OPENCLAW_TRUSTED_PROXIES": "127.0.0.1",
        }
    )

    def get(token: str, forwarded_for: str | None = "203.0.113.50"):
        headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
        return server.request("GET", LIST, token=token, headers=headers)

    try:
        assert get(served).status == 200
        assert [get(bad_key(i)).status for i in range(3)] == [401] * 3
        refused = get(bad_key(3))
        again = get(new)
        # What the client wrote left of the address the proxy saw is never read.
        spoofed = get(new, "198.51.100.1, 203.0.113.50")
        still = get(served)
        elsewhere = get(new, "203.0.113.9")
        the_proxy = get(new, None)
    finally:
        server.stop()
    for answer in (refused, again, spoofed):
        assert answer.status == 429
        assert int(answer.headers["retry-after"]) > 1
        error = answer.json()["error"]
        assert error["type"] == "rate_limited"
        assert error["message"].startswith(
            "too many failed API key checks from 203.0.113.50: at most 3 per "
        )
        assert "OPENCLAW_SOURCE_AUTH_FAILURES" in error["message"]
    assert still.status == 200
    assert elsewhere.status == 200
    assert the_proxy.status == 200


def test_the_refusal_costs_no_query(db, settings, agents, django_assert_num_queries):
    """Past the limit a key is not looked up on the ways in that do not pass the door (here
    Django's test client, as a WSGI deployment would call the view)."""
    settings.OPENCLAW_SOURCE_AUTH_FAILURES = 2
    settings.OPENCLAW_SOURCE_WINDOW_SECONDS = int(NEVER)
    _, token = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"])
    client = Client()
    for i in range(2):
        assert client.get(LIST, HTTP_AUTHORIZATION=f"Bearer {bad_key(i)}").status_code == 401
    with django_assert_num_queries(0):
        response = client.get(LIST, HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 429
    assert "too many failed API key checks from 127.0.0.1" in response.json()["error"]["message"]
    # Another address is not refused for it.
    assert (
        client.get(LIST, HTTP_AUTHORIZATION=f"Bearer {token}", REMOTE_ADDR="10.1.2.3").status_code
        == 200
    )


def test_failures_in_an_earlier_window_do_not_count(settings):
    settings.OPENCLAW_SOURCE_AUTH_FAILURES = 2
    settings.OPENCLAW_SOURCE_WINDOW_SECONDS = 60
    source_limit.failed("192.0.2.1", now=59.0)
    source_limit.failed("192.0.2.1", now=59.5)
    assert source_limit.retry_after("192.0.2.1", now=59.5) == 1
    assert source_limit.retry_after("192.0.2.1", now=60.0) is None
    source_limit.failed("192.0.2.1", now=61.0)
    assert source_limit.retry_after("192.0.2.1", now=61.0) is None
    assert source_limit.retry_after(None) is None  # a local process (stdio MCP)


def test_an_ipv6_source_is_its_64():
    assert source_limit.source_key("2001:db8:1:2:aaaa::1") == "2001:db8:1:2::/64"
    assert source_limit.source_key("2001:db8:1:2:bbbb::7") == "2001:db8:1:2::/64"
    assert source_limit.source_key("192.0.2.7") == "192.0.2.7"
    scope = {"client": ("2001:db8:1:2::5", 1), "headers": []}
    assert source_limit.source_of_scope(scope) == "2001:db8:1:2::/64"


def test_forget_clears_the_places_sources_hold_too(settings):
    """forget() (what each test starts with) forgot the failures but not the shares: a place a
    test left held counted against the next test's source."""
    settings.OPENCLAW_SOURCE_UNCHECKED_LIMIT = 1
    assert source_limit.take_share(source_limit.UNCHECKED, "192.0.2.1", "key a") == (True, True)
    assert source_limit.take_share(source_limit.UNCHECKED, "192.0.2.1", "key b") == (False, False)
    source_limit.failed("192.0.2.1")
    source_limit.forget()
    assert source_limit.counts() == {"sources": 0, "unchecked": 0, "pages": 0}
    # "key a" is no longer joined to a place that is gone: it takes a place of its own.
    assert source_limit.take_share(source_limit.UNCHECKED, "192.0.2.1", "key a") == (True, True)
    source_limit.give_back_share(source_limit.UNCHECKED, "192.0.2.1", "key a")
    assert source_limit.counts()["unchecked"] == 0


def test_a_share_goes_back_at_the_end_of_the_with_unless_kept(settings):
    settings.OPENCLAW_SOURCE_PAGE_LIMIT = 1
    with source_limit.share(source_limit.PAGES, "192.0.2.1") as first:
        assert first.may
        with source_limit.share(source_limit.PAGES, "192.0.2.1") as second:
            assert not second.may and second.keep() is None  # (nothing to keep)
    assert source_limit.counts()["pages"] == 0  # the count was full: given back
    with source_limit.share(source_limit.PAGES, "192.0.2.1") as kept:
        assert kept.keep() == "192.0.2.1"
    assert source_limit.counts()["pages"] == 1  # the request holds it until it is done
    source_limit.give_back_share(source_limit.PAGES, "192.0.2.1")
    with source_limit.share(source_limit.PAGES, None) as local:  # no source: not counted
        assert local.may and local.keep() is None
    assert source_limit.counts()["pages"] == 0


def _scope(source: str, authorization: str) -> dict:
    return {
        "type": "http",
        "method": "GET",
        "path": LIST,
        "headers": [(b"authorization", authorization.encode())],
        "client": (source, 4000),
    }


def test_one_source_holds_at_most_its_share_of_the_unchecked_places(db, settings, monkeypatch):
    """Before it has failed enough to be refused, a burst of distinct keys from one address
    takes at most OPENCLAW_SOURCE_UNCHECKED_LIMIT of the door's unchecked places (the rest wait
    in a queue of that size, or are refused): a new client at another address still gets one."""
    settings.OPENCLAW_API_UNCHECKED_LIMIT = 6
    settings.OPENCLAW_SOURCE_UNCHECKED_LIMIT = 2
    settings.OPENCLAW_API_QUEUE_SECONDS = 0  # (refused at once, not queued)
    application, inside, release = stand_in(monkeypatch)
    door.forget()

    async def call(scope) -> tuple[int, bytes]:
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await application(scope, receive, send)
        body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return sent[0]["status"], body

    async def burst():
        flood = [
            asyncio.create_task(call(_scope("192.0.2.1", f"Bearer {bad_key(i)}")))
            for i in range(10)
        ]
        while len(inside) < 2 or sum(not c.done() for c in flood) > 2:
            await asyncio.sleep(0.01)
        other = asyncio.create_task(call(_scope("192.0.2.2", f"Bearer {bad_key(99)}")))
        while len(inside) < 3:
            await asyncio.sleep(0.01)
        release.set()
        return [await c for c in flood], await other

    flood, other = asyncio.run(burst())
    assert sorted(status for status, _ in flood) == [200] * 2 + [429] * 8
    refused = json.loads(next(body for status, body in flood if status == 429))
    assert refused["error"]["message"] == (
        "too many requests with API keys not checked yet from 192.0.2.1: at most 2 are checked "
        "at once per address on this server process (OPENCLAW_SOURCE_UNCHECKED_LIMIT); retry "
        "shortly"
    )
    assert other[0] == 200
    assert source_limit.counts()["unchecked"] == 0  # every place given back
    assert door.counts()["unchecked"] == 0


def test_one_new_key_in_a_burst_holds_one_place_of_its_sources_share(db, settings, monkeypatch):
    """A client's first burst with a key this process has not checked yet (twenty sends at
    once, tests/runs/test_live_send.py) is one key being checked: its requests share one of
    the source's places, so none is refused, where as many distinct keys would be."""
    settings.OPENCLAW_SOURCE_UNCHECKED_LIMIT = 2
    settings.OPENCLAW_API_QUEUE_SECONDS = 0  # (refused at once, not queued)
    application, inside, release = stand_in(monkeypatch)
    door.forget()

    async def call(scope) -> int:
        sent = []

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            sent.append(message)

        await application(scope, receive, send)
        return sent[0]["status"]

    async def burst():
        calls = [
            asyncio.create_task(call(_scope("192.0.2.1", f"Bearer {bad_key(7)}"))) for _ in range(5)
        ]
        while len(inside) < 5:
            await asyncio.sleep(0.01)
        assert source_limit.counts()["unchecked"] == 1
        release.set()
        return [await c for c in calls]

    assert asyncio.run(burst()) == [200] * 5
    assert source_limit.counts()["unchecked"] == 0
    assert door.counts()["unchecked"] == 0


def test_one_source_holds_at_most_its_share_of_the_pages_places(db, settings, monkeypatch):
    """Anonymous pages from one address take at most OPENCLAW_SOURCE_PAGE_LIMIT of the pages'
    gate's places: someone at another address still gets the login page."""
    settings.OPENCLAW_PAGE_CONCURRENCY_LIMIT = 4
    settings.OPENCLAW_SOURCE_PAGE_LIMIT = 2
    settings.OPENCLAW_API_QUEUE_SECONDS = 0  # (refused at once, not queued)
    application, inside, release = page_stand_in(monkeypatch)
    refused: list[dict] = []

    def page(source: str, sent=None):
        scope = {**_scope(source, ""), "path": "/accounts/login/", "headers": []}

        async def receive():
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message):
            if sent is not None:
                sent.append(message)
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        statuses: list[int] = []
        return application(scope, receive, send), statuses

    async def flood():
        calls = [page("192.0.2.1", refused if i == 9 else None) for i in range(10)]
        tasks = [asyncio.create_task(c) for c, _ in calls]
        while len(inside) < 2 or sum(not t.done() for t in tasks) > 2:
            await asyncio.sleep(0.01)
        other, other_status = page("192.0.2.2")
        other_task = asyncio.create_task(other)
        while len(inside) < 3:
            await asyncio.sleep(0.01)
        release.set()
        await asyncio.gather(*tasks, other_task)
        return [s[0] for _, s in calls], other_status[0]

    statuses, other = asyncio.run(flood())
    assert sorted(statuses) == [200] * 2 + [429] * 8 and other == 200
    body = json.loads(next(m for m in refused if m["type"] == "http.response.body")["body"])
    assert body["error"]["message"] == (
        "too many requests without a signed-in session from 192.0.2.1: at most 2 are served at "
        "once per address on this server process (OPENCLAW_SOURCE_PAGE_LIMIT); retry shortly"
    )
    assert source_limit.counts()["pages"] == 0  # every place given back
    assert page_gate.counts()["anonymous"] == 0
