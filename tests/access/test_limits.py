"""Brute force and limits (issue 16): per-key request and concurrency limits on the API (429 +
Retry-After), login throttling on both login forms, password rules for create_ui_user."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError
from django.test import Client

from openclaw_common.errors import Unauthenticated
from sessions_app.api import door, ratelimit
from sessions_app.models import ApiKey
from tests.ui.test_create_ui_user import run as create_ui_user


@pytest.fixture(autouse=True)
def _refuse_at_once(settings):
    """The door refuses a full count at once here (its short wait has a test of its own)."""
    settings.OPENCLAW_API_QUEUE_SECONDS = 0


def assert_429(response, text: str) -> None:
    assert response.status_code == 429, response.content
    assert int(response["Retry-After"]) >= 1
    body = response.json()
    assert body["ok"] is False and body["error"]["type"] == "rate_limited"
    assert text in body["error"]["message"]


# --- API rate ---------------------------------------------------------------------------------


def test_rate_limit_per_key_on_every_kind_of_endpoint(settings, agent_main, operator):
    settings.OPENCLAW_API_RATE_LIMIT = 3
    for _ in range(3):
        assert agent_main.get("/api/v1/sessions/").status_code == 200
    assert_429(agent_main.get("/api/v1/sessions/"), "at most 3 requests per 60 s")
    assert_429(agent_main.invoke("sessions_list", {}), "at most 3 requests per 60 s")  # async edge
    assert_429(agent_main.get("/api/v1/runs/x/"), "at most 3 requests per 60 s")
    assert operator.get("/api/v1/sessions/").status_code == 200  # another key: its own count


def test_the_window_passes(settings, agents):
    settings.OPENCLAW_API_RATE_LIMIT = 2
    settings.OPENCLAW_API_RATE_WINDOW_SECONDS = 10
    ratelimit.check_rate(7, now=100.0)
    ratelimit.check_rate(7, now=101.0)
    with pytest.raises(ratelimit.RateLimited) as refused:
        ratelimit.check_rate(7, now=102.5)
    assert refused.value.retry_after == 8  # the window ends at 110
    ratelimit.check_rate(7, now=110.0)  # a new window


def test_zero_turns_the_limits_off(settings, agent_main):
    settings.OPENCLAW_API_RATE_LIMIT = 0
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 0
    for _ in range(5):
        assert agent_main.invoke("sessions_list", {}).status_code == 200


def test_unauthenticated_requests_are_401_not_counted(settings, anonymous, agents):
    settings.OPENCLAW_API_RATE_LIMIT = 1
    for _ in range(3):
        assert anonymous.get("/api/v1/sessions/").status_code == 401


# --- API concurrency -------------------------------------------------------------------------


def test_concurrency_limit_per_key(settings, agent_main, operator):
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 2
    key = ApiKey.objects.get(scope="agent", agent_id="main")
    # two requests of this key in flight (e.g. sends waiting for their replies)
    assert ratelimit._acquire(key.pk) and ratelimit._acquire(key.pk)
    try:
        assert_429(agent_main.invoke("sessions_list", {}), "at most 2 in flight")
        assert operator.invoke("sessions_list", {}).status_code == 200
    finally:
        ratelimit._release(key.pk)
        ratelimit._release(key.pk)
    assert agent_main.invoke("sessions_list", {}).status_code == 200
    assert ratelimit._in_flight == {}  # every finished request gave its slot back


def test_a_burst_of_one_credential_is_refused_before_any_key_lookup(
    settings, anonymous, operator, django_assert_num_queries
):
    """10,000 waits or 3,000 bad-key requests at once: past the limit, a request carrying the
    same credential is a 429 with no database work, so it cannot queue other clients'."""
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 2
    bad = "Bearer not-a-key"
    held = hashlib.sha256(bad.encode()).hexdigest()
    ratelimit._by_credential[held] = 2  # two requests of it are being looked up
    try:
        with django_assert_num_queries(0):
            refused = anonymous.post(
                "/tools/invoke", {"tool": "sessions_list", "args": {}}, HTTP_AUTHORIZATION=bad
            )
        assert_429(refused, "at most 2 in flight")
        assert operator.invoke("sessions_list", {}).status_code == 200  # others go on
    finally:
        ratelimit._by_credential.pop(held, None)
    assert (
        anonymous.post(
            "/tools/invoke", {"tool": "sessions_list"}, HTTP_AUTHORIZATION=bad
        ).status_code
        == 401
    )
    assert ratelimit._by_credential == {}


async def asgi_request(
    application, path: str, *, method: str = "GET", headers=(), body: bytes = b"", sent=None
) -> list[dict]:
    """One HTTP request through an ASGI application, as the server makes it (the client stays
    connected after its body); returns the messages sent back (into `sent` when given)."""
    sent = [] if sent is None else sent
    bodies = [{"type": "http.request", "body": body, "more_body": False}]

    async def receive():
        if bodies:
            return bodies.pop()
        await asyncio.Event().wait()  # the client stays connected

    async def send(message):
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": list(headers),
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 8000),
    }
    await application(scope, receive, send)
    return sent


def asgi_call(path: str, authorization: str, method: str = "POST") -> tuple[int, dict, bytes]:
    """One HTTP request through the project's ASGI application, with a key and a `{}` body."""
    from openclaw_site.asgi import application

    headers = [(b"authorization", authorization.encode()), (b"host", b"localhost")]
    sent = asyncio.run(asgi_request(application, path, method=method, headers=headers, body=b"{}"))
    start = next(m for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return start["status"], {k.decode(): v.decode() for k, v in start["headers"]}, body


@pytest.mark.parametrize(
    "path", ["/tools/invoke", "/api/v1/runs/x/wait/", "/api/v1/sessions/agent:main:main/send/"]
)
def test_a_saturated_credential_is_refused_at_the_door(
    db, settings, path, django_assert_num_queries
):
    """Past the limit, the 429 is written by the ASGI entry before Django builds a request: a
    burst of 13,000 answered through Django's handler kept the event loop busy for minutes and
    every other client's requests waited behind it (issue 16)."""
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 2
    bad = "Bearer not-a-key"
    held = hashlib.sha256(bad.encode()).hexdigest()
    ratelimit._by_credential[held] = 2
    try:
        with django_assert_num_queries(0):
            status, headers, body = asgi_call(path, bad)
    finally:
        ratelimit._by_credential.pop(held, None)
    assert status == 429 and headers["retry-after"] == "1"
    assert headers["content-type"] == "application/json"
    assert json.loads(body) == {
        "ok": False,
        "error": {
            "type": "rate_limited",
            "message": "too many concurrent requests: at most 2 in flight for this API key",
        },
    }


def test_a_burst_arriving_at_once_enters_django_only_up_to_the_limit(db, settings, monkeypatch):
    """The door takes the credential's place, not only looks at it: 5,000 requests arriving
    before any reached a view all found the places free, entered Django, and left thousands of
    threads (one per request) that stalled every other client (issue 16)."""
    import openclaw_site.asgi as entry

    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 2
    inside, release = [], asyncio.Event()

    async def slow_app(scope, receive, send):  # stands in for Django: stays in flight
        inside.append(scope)
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    monkeypatch.setattr(entry, "api_app", slow_app)

    async def burst():
        calls = [
            asyncio.create_task(_asgi(entry.application, "/tools/invoke", "Bearer k"))
            for _ in range(10)
        ]
        while len(inside) < 2 or sum(not c.done() for c in calls) > 2:
            await asyncio.sleep(0.01)
        release.set()
        return [await c for c in calls]

    statuses = asyncio.run(burst())
    assert sorted(statuses) == [200, 200] + [429] * 8
    assert len(inside) == 2 and all(scope[ratelimit.DOOR_PLACE] for scope in inside)
    assert ratelimit._by_credential == {}  # every place given back


def test_the_doors_place_is_the_requests_only_place(db, settings):
    """With a limit of one, a request the door let in is not refused again by the view."""
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 1
    status, _, _ = asgi_call("/tools/invoke", "Bearer not-a-key")
    assert status == 401
    assert ratelimit._by_credential == {}


async def _asgi(application, path: str, authorization: str, *, method: str = "POST") -> int:
    statuses = []

    async def receive():
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message):
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "headers": [(b"authorization", authorization.encode())],
    }
    await application(scope, receive, send)
    return statuses[0]


# --- the door: distinct keys, every endpoint (sessions_app/api/door.py) ----------------------


@pytest.fixture
def door_state():
    door.forget()
    yield door
    door.forget()
    assert door.counts() == {"unchecked": 0, "known": 0, "credentials": 0, "waiting": 0}


def stand_in(monkeypatch, *, stream: bool = False):
    """Django (and the MCP app) replaced by an app that stays in flight until released; for a
    stream, after starting its answer."""
    import openclaw_site.asgi as entry

    inside, release = [], asyncio.Event()

    async def slow_app(scope, receive, send):
        inside.append(scope)
        if stream:
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
        await release.wait()
        if not stream:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    monkeypatch.setattr(entry, "api_app", slow_app)
    monkeypatch.setattr(entry, "mcp_app", slow_app)
    return entry.application, inside, release


def burst_statuses(application, inside, release, requests, *, entering: int) -> list[int]:
    """Send `requests` ((path, authorization, method)) at once; once `entering` are inside and
    the rest answered, release them."""

    async def burst():
        calls = [
            asyncio.create_task(_asgi(application, path, auth, method=method))
            for path, auth, method in requests
        ]
        while len(inside) < entering or sum(not c.done() for c in calls) > entering:
            await asyncio.sleep(0.01)
        release.set()
        return [await c for c in calls]

    return asyncio.run(burst())


def test_a_burst_of_distinct_bad_keys_enters_django_only_up_to_the_unchecked_limit(
    db, settings, monkeypatch, door_state
):
    """3,000 requests each with a different bad key: the per-credential count sees 3,000
    credentials with one request each and let them all in to be looked up (issue 16)."""
    settings.OPENCLAW_API_UNCHECKED_LIMIT = 3
    application, inside, release = stand_in(monkeypatch)
    requests = [("/api/v1/sessions/", f"Bearer ocs_{i:012x}_guess", "GET") for i in range(10)]
    statuses = burst_statuses(application, inside, release, requests, entering=3)
    assert sorted(statuses) == [200] * 3 + [429] * 7
    assert len(inside) == 3


def test_the_unchecked_refusal_is_a_429_with_retry_after(db, settings, door_state, monkeypatch):
    settings.OPENCLAW_API_UNCHECKED_LIMIT = 2
    monkeypatch.setattr(door, "_unchecked", 2)  # two strangers' keys are being looked up
    try:
        status, headers, body = asgi_call("/api/v1/sessions/", "Bearer ocs_0_x", method="GET")
    finally:
        monkeypatch.setattr(door, "_unchecked", 0)
    assert status == 429 and headers["retry-after"] == "1"
    assert json.loads(body) == {
        "ok": False,
        "error": {
            "type": "rate_limited",
            "message": "too many requests with API keys not checked yet: at most 2 are checked "
            "at once on this server process; retry shortly",
        },
    }


@pytest.mark.parametrize(
    ("path", "method"),
    [
        ("/api/v1/sessions/", "GET"),
        ("/api/v1/sessions/main/history/", "GET"),
        ("/api/v1/agents/", "GET"),
        ("/sessions/main/history", "GET"),  # OpenClaw's path, API-key form
        ("/mcp/", "POST"),
        ("/tools/invoke", "POST"),
    ],
)
def test_every_api_endpoint_is_gated_at_the_door(
    db, settings, monkeypatch, door_state, path, method
):
    """A burst of one credential at an endpoint that cannot wait went straight to Django and
    its key lookup, thousands at once; now every API request takes its credential's place."""
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 2
    application, inside, release = stand_in(monkeypatch)
    requests = [(path, "Bearer ocs_000000000000_same", method)] * 10
    statuses = burst_statuses(application, inside, release, requests, entering=2)
    assert sorted(statuses) == [200, 200] + [429] * 8
    assert len(inside) == 2


def test_a_small_burst_waits_at_the_door_for_a_place(db, settings, monkeypatch, door_state):
    """Over the limit, as many requests as the count has places wait for one (no thread, no
    Django) instead of a 429, so a key's hundred MCP clients opening together get in; the rest
    of a large burst are refused at once. Django never holds more than the limit."""
    import openclaw_site.asgi as entry

    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 2
    settings.OPENCLAW_API_QUEUE_SECONDS = 5
    inside, most = [0], [0]

    async def brief_app(scope, receive, send):
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        await asyncio.sleep(0.2)
        inside[0] -= 1
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    monkeypatch.setattr(entry, "api_app", brief_app)

    async def burst():
        auth = "Bearer ocs_000000000000_same"
        calls = [_asgi(entry.application, "/api/v1/agents/", auth, method="GET") for _ in range(10)]
        return await asyncio.gather(*calls)

    statuses = asyncio.run(burst())
    assert sorted(statuses) == [200] * 4 + [429] * 6
    assert most[0] == 2


def test_a_stream_gives_its_place_back_once_it_runs(db, settings, monkeypatch, door_state):
    """SSE and MCP streams hold no thread once they run: one key may follow more sessions than
    its concurrency limit (an MCP client per desktop app, a dashboard)."""
    settings.OPENCLAW_API_CONCURRENCY_LIMIT = 1
    application, inside, release = stand_in(monkeypatch, stream=True)
    requests = [("/api/v1/sessions/main/history/", "Bearer ocs_000000000000_same", "GET")] * 5
    statuses = burst_statuses(application, inside, release, requests, entering=5)
    assert statuses == [200] * 5 and len(inside) == 5


@pytest.mark.django_db(transaction=True)
def test_a_credential_that_authenticated_is_not_refused_for_strangers(
    settings, monkeypatch, door_state, django_assert_num_queries, agents
):
    """Clients already served keep being served while strangers fill the unchecked places; a
    stranger's request past them costs no database work; a credential refused is forgotten."""
    settings.OPENCLAW_API_UNCHECKED_LIMIT = 1
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR)
    status, _, _ = asgi_call("/api/v1/sessions/", f"Bearer {token}", method="GET")
    assert status == 200 and door.counts()["known"] == 1
    monkeypatch.setattr(door, "_unchecked", 1)  # a stranger's key is being looked up
    status, _, _ = asgi_call("/api/v1/sessions/", f"Bearer {token}", method="GET")
    assert status == 200
    with django_assert_num_queries(0):
        refused, _, _ = asgi_call("/api/v1/sessions/", "Bearer ocs_0123456789ab_x", method="GET")
    assert refused == 429
    monkeypatch.setattr(door, "_unchecked", 0)
    assert asgi_call("/tools/invoke", "Bearer ocs_0123456789ab_x")[0] == 401
    assert door.counts()["known"] == 1  # a bad key is not remembered
    key.revoke()
    assert asgi_call("/api/v1/sessions/", f"Bearer {token}", method="GET")[0] == 401
    assert door.counts()["known"] == 0  # nor a revoked one


@pytest.mark.django_db(transaction=True)
def test_a_request_gives_its_unchecked_place_back_once_its_key_is_checked(
    settings, monkeypatch, door_state, agents
):
    """A first request of a key that then waits (a send, a run's wait) holds the unchecked place
    only for its lookup, not for the wait."""
    from asgiref.sync import sync_to_async

    import openclaw_site.asgi as entry

    settings.OPENCLAW_API_UNCHECKED_LIMIT = 1
    _, token = ApiKey.generate(scope=ApiKey.OPERATOR)
    seen, release = [], asyncio.Event()

    async def waiting_view(scope, receive, send):  # looks the key up, then waits
        authorization = dict(scope["headers"])[b"authorization"].decode()
        try:
            await sync_to_async(door.authenticate)(authorization, scope)
        except Unauthenticated:
            status = 401
        else:
            seen.append(door.counts()["unchecked"])
            await release.wait()
            status = 202
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}"})

    monkeypatch.setattr(entry, "api_app", waiting_view)

    async def scenario():
        wait = _asgi(entry.application, "/api/v1/runs/x/wait/", f"Bearer {token}", method="GET")
        waiting = asyncio.create_task(wait)
        while not seen:
            await asyncio.sleep(0.01)
        # While the first request waits, a stranger's key is looked up: the place is free.
        other = await _asgi(entry.application, "/api/v1/sessions/", "Bearer x", method="GET")
        release.set()
        return await waiting, other

    waited, other = asyncio.run(scenario())
    assert seen == [0] and (waited, other) == (202, 401)


# --- login throttling -------------------------------------------------------------------------


@pytest.fixture
def person(db):
    return User.objects.create_user("vera", password="a long enough secret", is_staff=True)


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_failed_logins_lock_the_username_out(settings, person, path):
    settings.OPENCLAW_LOGIN_FAILURES = 3
    client = Client()
    for _ in range(3):
        assert client.post(path, {"username": "vera", "password": "wrong"}).status_code == 200
    locked = client.post(path, {"username": "vera", "password": "a long enough secret"})
    assert locked.status_code == 429
    assert 1 <= int(locked["Retry-After"]) <= settings.OPENCLAW_LOGIN_LOCKOUT_SECONDS
    assert client.get(path).status_code in (200, 302)  # the form still shows
    # another username from the same address is not locked by these failures
    assert client.post(path, {"username": "nora", "password": "x"}).status_code == 200


def test_a_successful_login_clears_the_count(settings, person):
    settings.OPENCLAW_LOGIN_FAILURES = 3
    client = Client()
    for _ in range(2):
        client.post("/accounts/login/", {"username": "vera", "password": "wrong"})
    ok = client.post("/accounts/login/", {"username": "vera", "password": "a long enough secret"})
    assert ok.status_code == 302
    Client().post("/accounts/logout/")
    for _ in range(2):
        assert (
            Client().post("/accounts/login/", {"username": "vera", "password": "no"}).status_code
            == 200
        )


def test_one_address_trying_many_usernames_is_locked_out(settings, person):
    settings.OPENCLAW_LOGIN_FAILURES = 2  # per address: 5 times as many
    client = Client()
    for i in range(10):
        assert (
            client.post("/accounts/login/", {"username": f"u{i}", "password": "x"}).status_code
            == 200
        )
    assert client.post("/accounts/login/", {"username": "u99", "password": "x"}).status_code == 429


PROXY = {"REMOTE_ADDR": "10.0.0.5"}  # a proxy on another host


def from_client(address: str, *, spoofed: str = "") -> dict:
    """A login POST's headers as the proxy forwards it (a client may have written `spoofed`)."""
    chain = f"{spoofed}, {address}" if spoofed else address
    return {**PROXY, "HTTP_X_FORWARDED_FOR": chain}


def test_behind_a_trusted_proxy_the_lockout_is_per_client_address(settings, person):
    """Issue 28: behind a proxy every user shared its address, so 25 wrong passwords from one
    locked every login. With the proxy trusted each client is its own address, and a client
    cannot escape its lockout by writing addresses into the header."""
    settings.OPENCLAW_LOGIN_FAILURES = 2  # per address: 10
    settings.OPENCLAW_TRUSTED_PROXIES = ["10.0.0.5"]
    guesser, colleague = Client(), Client()
    for i in range(10):
        forwarded = from_client("198.51.100.1", spoofed=f"192.0.2.{i}")
        response = guesser.post(
            "/accounts/login/", {"username": f"u{i}", "password": "x"}, **forwarded
        )
        assert response.status_code == 200
    locked = guesser.post(
        "/accounts/login/",
        {"username": "u99", "password": "x"},
        **from_client("198.51.100.1", spoofed="192.0.2.99"),
    )
    assert locked.status_code == 429
    signed_in = colleague.post(
        "/accounts/login/",
        {"username": "vera", "password": "a long enough secret"},
        **from_client("198.51.100.2"),
    )
    assert signed_in.status_code == 302


def test_an_untrusted_peers_forwarded_for_is_ignored(settings, person):
    settings.OPENCLAW_LOGIN_FAILURES = 2
    settings.OPENCLAW_TRUSTED_PROXIES = []  # the default: the header means nothing
    client = Client()
    for i in range(10):
        forwarded = from_client(f"198.51.100.{i}")  # a fresh "address" each time
        assert (
            client.post(
                "/accounts/login/", {"username": f"u{i}", "password": "x"}, **forwarded
            ).status_code
            == 200
        )
    again = client.post(
        "/accounts/login/", {"username": "u99", "password": "x"}, **from_client("198.51.100.99")
    )
    assert again.status_code == 429  # all from 10.0.0.5, as they were


# --- passwords --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("short", "too short"),
        ("password1234", "too common"),
        ("938475629384756", "entirely numeric"),
        ("veronica-smith", "too similar to the username"),
    ],
)
def test_create_ui_user_refuses_weak_passwords(db, monkeypatch, password, why):
    monkeypatch.setenv("UI_PASSWORD", password)
    with pytest.raises(CommandError, match=f"password refused: .*{why}"):
        create_ui_user("veronica-smith", "--password-env", "UI_PASSWORD")
    assert not User.objects.filter(username="veronica-smith").exists()


# --- the door for WebSocket upgrades and connect frames (sessions_app/live/consumer.py) -------


async def _ws_handshake(application, headers: list, *, denial_response: bool = False) -> dict:
    """One WebSocket upgrade through the ASGI app: its first answer (accept, close, or the
    denial extension's HTTP response start)."""
    answered = asyncio.get_running_loop().create_future()
    sent_connect = False

    async def receive():
        nonlocal sent_connect
        if not sent_connect:
            sent_connect = True
            return {"type": "websocket.connect"}
        await answered
        return {"type": "websocket.disconnect", "code": 1000}

    async def send(message):
        if not answered.done():
            answered.set_result(message)

    scope = {
        "type": "websocket",
        "path": "/ws/",
        "raw_path": b"/ws/",
        "query_string": b"",
        "root_path": "",
        "headers": headers,
        "extensions": {"websocket.http.response": {}} if denial_response else {},
    }
    await application(scope, receive, send)
    return answered.result()


def test_a_burst_of_websocket_upgrades_with_distinct_bad_keys_is_looked_up_only_up_to_the_limit(
    db, settings, monkeypatch, door_state
):
    """Before, upgrades were not behind the door: each of a burst of distinct bad keys (or made
    up session cookies) was one key lookup in a thread of its own, all at once."""
    import threading

    from openclaw_site.asgi import application

    settings.OPENCLAW_API_UNCHECKED_LIMIT = 3
    settings.OPENCLAW_API_QUEUE_SECONDS = 0
    inside, release = [], threading.Event()

    def slow_lookup(authorization, scope):
        inside.append(authorization)
        release.wait(10)
        raise Unauthenticated()

    monkeypatch.setattr(door, "authenticate", slow_lookup)

    async def burst():
        upgrades = [
            asyncio.create_task(
                _ws_handshake(application, [(b"authorization", f"Bearer ocs_{i:012x}_x".encode())])
            )
            for i in range(10)
        ]
        deadline = asyncio.get_running_loop().time() + 10
        while len(inside) < 3 or sum(not u.done() for u in upgrades) > 3:
            if asyncio.get_running_loop().time() > deadline:
                break  # (fails below with what got in)
            await asyncio.sleep(0.01)
        release.set()
        return [await u for u in upgrades]

    answers = asyncio.run(burst())
    assert len(inside) == 3
    # Every upgrade refused (a bad key, or the door) before it was accepted.
    assert all(a == {"type": "websocket.close", "code": 4403} for a in answers), answers


def test_a_refused_websocket_upgrade_is_a_429_where_the_server_can_say_so(
    db, settings, monkeypatch, door_state
):
    """uvicorn offers ASGI's denial-response extension: the door's refusal is then the API's
    429 with Retry-After, not a 403 that reads as a bad key. A session cookie passes it too."""
    from openclaw_site.asgi import application

    settings.OPENCLAW_API_UNCHECKED_LIMIT = 2
    settings.OPENCLAW_API_QUEUE_SECONDS = 0
    monkeypatch.setattr(door, "_unchecked", 2)  # two strangers' keys are being looked up
    try:
        for header in (
            (b"authorization", b"Bearer ocs_000000000000_x"),
            (b"cookie", b"sessionid=made-up"),
        ):
            start = asyncio.run(_ws_handshake(application, [header], denial_response=True))
            assert start["type"] == "websocket.http.response.start"
            assert start["status"] == 429 and (b"retry-after", b"1") in start["headers"]
    finally:
        monkeypatch.setattr(door, "_unchecked", 0)


# --- the pages' gate (openclaw_site/page_gate.py) --------------------------------------------


@pytest.fixture
def page_state():
    from openclaw_site import page_gate

    page_gate.forget()
    yield page_gate
    page_gate.forget()
    assert page_gate.counts() == {
        "anonymous": 0,
        "session": 0,
        "signed in": 0,
        "waiting": 0,
        "known": 0,
    }


def page_stand_in(monkeypatch):
    """Django's page stack replaced by an app that stays in flight until released; the API's
    own stand-in as well, so a keyed request shows it was let through."""
    import openclaw_site.asgi as entry

    application, inside, release = stand_in(monkeypatch)

    async def slow_pages(scope, receive, send):
        inside.append(scope)
        await release.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"<html></html>"})

    monkeypatch.setattr(entry, "django_asgi_app", slow_pages)
    return application, inside, release


async def _page(application, path: str, *, headers=(), sent=None) -> int:
    """One GET of a page through the ASGI application; its messages go to `sent`."""
    sent = await asgi_request(application, path, headers=headers, sent=sent)
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_a_page_flood_past_the_limit_is_429_while_a_keyed_request_passes(
    db, settings, monkeypatch, door_state, page_state
):
    """3,000 anonymous `GET /accounts/login/` were all served on Django's threads while a keyed
    client waited seconds (issue 28): now at most the limit reach Django; the rest are a 429
    written before it, and an API request is not counted with them."""
    settings.OPENCLAW_PAGE_CONCURRENCY_LIMIT = 3
    application, inside, release = page_stand_in(monkeypatch)
    refused: list[dict] = []

    async def flood():
        pages = [
            asyncio.create_task(_page(application, path, sent=refused if i >= 3 else None))
            for i, path in enumerate(["/accounts/login/", "/admin/", "/ui/", "/static/x.css"] * 3)
        ]
        while len(inside) < 3 or sum(not p.done() for p in pages) > 3:
            await asyncio.sleep(0.01)
        assert page_state.counts()["anonymous"] == 3
        keyed = asyncio.create_task(
            _asgi(application, "/api/v1/sessions/", "Bearer k", method="GET")
        )
        while len(inside) < 4:
            await asyncio.sleep(0.01)
        release.set()
        return [await p for p in pages], await keyed

    statuses, keyed = asyncio.run(flood())
    assert sorted(statuses) == [200] * 3 + [429] * 9 and keyed == 200
    start = next(m for m in refused if m["type"] == "http.response.start")
    headers = dict(start["headers"])
    assert headers[b"retry-after"] == b"1" and headers[b"content-type"] == b"application/json"
    body = json.loads(next(m for m in refused if m["type"] == "http.response.body")["body"])
    assert body["error"] == {
        "type": "rate_limited",
        "message": "too many requests without a session: at most 3 are served at once on this "
        "server process (OPENCLAW_PAGE_CONCURRENCY_LIMIT); retry shortly",
    }


def test_a_browser_gets_a_line_of_text(db, settings, monkeypatch, page_state):
    settings.OPENCLAW_PAGE_CONCURRENCY_LIMIT = 1
    monkeypatch.setitem(page_state._held, page_state.ANONYMOUS, 1)  # a page in flight
    sent: list[dict] = []
    try:
        status = asyncio.run(
            _page(
                __import__("openclaw_site.asgi").asgi.application,
                "/accounts/login/",
                headers=[(b"accept", b"text/html,application/xhtml+xml,*/*;q=0.8")],
                sent=sent,
            )
        )
    finally:
        page_state._held[page_state.ANONYMOUS] = 0
    assert status == 429
    headers = dict(sent[0]["headers"])
    assert headers[b"content-type"] == b"text/plain; charset=utf-8"
    assert sent[1]["body"].startswith(b"429 Too Many Requests: too many requests without a")


def test_a_page_flood_does_not_block_a_session_cookie(db, settings, monkeypatch, page_state):
    """Anonymous requests fill their own count; a signed-in browser's requests (its session
    cookie seen signed in) have a count of their own that made-up cookies cannot fill either."""
    settings.OPENCLAW_PAGE_CONCURRENCY_LIMIT = 2
    application, inside, release = page_stand_in(monkeypatch)
    mine = [(b"cookie", b"sessionid=abc123mine")]

    async def scenario():
        flood = [asyncio.create_task(_page(application, "/accounts/login/")) for _ in range(6)]
        made_up = [
            asyncio.create_task(
                _page(application, "/ui/", headers=[(b"cookie", f"sessionid=x{i}".encode())])
            )
            for i in range(6)
        ]
        while len(inside) < 4 or sum(not c.done() for c in flood + made_up) > 4:
            await asyncio.sleep(0.01)
        # The signed-in user's cookie, as PageGateMiddleware reports it after a page.
        page_state.Place(
            page_state.SESSION, page_state.session_digest({"headers": mine})
        ).signed_in(True)
        user = asyncio.create_task(_page(application, "/ui/", headers=mine))
        while len(inside) < 5:
            await asyncio.sleep(0.01)
        assert page_state.counts()["signed in"] == 1
        release.set()
        return [await c for c in flood], [await c for c in made_up], await user

    flood, made_up, user = asyncio.run(scenario())
    assert sorted(flood) == [200] * 2 + [429] * 4
    assert sorted(made_up) == [200] * 2 + [429] * 4
    assert user == 200


@pytest.mark.django_db(transaction=True)
def test_a_signed_in_page_tells_the_gate(settings, page_state):
    """A page that looked its user up reports whether the session cookie is signed in; with no
    query of its own."""
    from asgiref.sync import async_to_sync

    from openclaw_site.asgi import application
    from tests.ui.conftest import client_for, make_user

    client = client_for(make_user("ada", superuser=True))
    cookie = f"sessionid={client.cookies['sessionid'].value}".encode()
    headers = [(b"cookie", cookie), (b"host", b"localhost")]
    status = async_to_sync(_page)(application, "/", headers=headers)
    assert status == 200
    assert page_state.counts()["known"] == 1  # its next request takes the signed-in count
    anonymous = [(b"host", b"localhost")]
    assert async_to_sync(_page)(application, "/accounts/login/", headers=anonymous) == 200
    assert page_state.counts()["known"] == 1  # an anonymous page changes nothing


@pytest.mark.parametrize("ending", ["response", "disconnect", "exception"])
def test_the_gate_gives_the_place_back(db, settings, monkeypatch, page_state, ending):
    """Once the last of the answer is sent, when the client leaves mid-answer, or when the app
    fails: the place goes back every time."""
    import openclaw_site.asgi as entry

    settings.OPENCLAW_PAGE_CONCURRENCY_LIMIT = 1
    held_while_running: list[int] = []

    async def page(scope, receive, send):
        held_while_running.append(page_state.counts()["anonymous"])
        if ending == "exception":
            raise RuntimeError("the page failed")
        await send({"type": "http.response.start", "status": 200, "headers": []})
        if ending == "disconnect":
            await send({"type": "http.response.body", "body": b"<p>", "more_body": True})
            raise asyncio.CancelledError  # the server cancels the app when the client goes
        await send({"type": "http.response.body", "body": b"<html></html>"})
        held_while_running.append(page_state.counts()["anonymous"])  # after the last byte

    monkeypatch.setattr(entry, "django_asgi_app", page)

    async def once():
        try:
            return await _page(entry.application, "/accounts/login/")
        except (RuntimeError, asyncio.CancelledError, StopIteration):
            return None

    asyncio.run(once())
    assert held_while_running[0] == 1
    if ending == "response":
        assert held_while_running[1] == 0
    assert page_state.counts()["anonymous"] == 0


def test_zero_turns_the_page_gate_off(db, settings, monkeypatch, page_state):
    settings.OPENCLAW_PAGE_CONCURRENCY_LIMIT = 0
    application, inside, release = page_stand_in(monkeypatch)
    requests = [("/accounts/login/", "", "GET")] * 5
    statuses = burst_statuses(application, inside, release, requests, entering=5)
    assert statuses == [200] * 5 and page_state.counts()["anonymous"] == 0


def test_the_schema_is_built_once(db, anonymous, django_assert_num_queries):
    """The same document for everyone: a flood of schema requests costs one build per format."""
    from sessions_app.api import schema_view

    schema_view.forget()
    before = schema_view.builds
    first = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    for _ in range(5):
        again = anonymous.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
        assert again.content == first.content
    yaml = anonymous.get("/api/v1/schema/")  # another format: rendered from the same build
    assert schema_view.builds == before + 1
    assert first["Content-Type"] == "application/vnd.oai.openapi+json"
    assert yaml["Content-Type"] == "application/vnd.oai.openapi; charset=utf-8"
    assert json.loads(first.content)["openapi"] == "3.1.0"
    assert 'filename="openclaw-sessions API.json"' in first["Content-Disposition"]


def test_concurrent_first_schema_requests_build_it_once(db):
    """Requests arriving together before the first build wait for it: drf-spectacular's first
    build is not thread-safe (500s when 300 arrived at once on a fresh process)."""
    import threading

    from django.test import RequestFactory

    from sessions_app.api import schema_view

    schema_view.forget()
    before = schema_view.builds
    view = schema_view.CachedSchemaView.as_view()
    start, statuses = threading.Barrier(6), []

    def ask():
        start.wait()
        request = RequestFactory().get("/api/v1/schema/", HTTP_ACCEPT="application/json")
        statuses.append(view(request).status_code)

    threads = [threading.Thread(target=ask) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert statuses == [200] * 6 and schema_view.builds == before + 1
