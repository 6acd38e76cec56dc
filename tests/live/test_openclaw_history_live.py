"""OpenClaw's `GET /sessions/{sessionKey}/history` over a real server (uvicorn, `manage.py serve`):
JSON and SSE with Last-Event-ID resume, as /api/v1/sessions/{key}/history/ answers them, and the
transcript page for a browser at the same address."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

import pytest

from tests.conftest import make_agent, make_session
from tests.live.test_across_processes import SSE
from tests.servers import manage, start_server

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "agent:main:main"
OPENCLAW = f"/sessions/{KEY}/history"


@pytest.fixture
def served():
    make_agent("main")
    session = make_session(KEY)
    token = manage("create_api_key", "--scope", "operator").strip().splitlines()[-1]
    server = start_server()
    yield server, token, session
    server.stop()


def append(server, token, *texts):
    response = server.request(
        "POST",
        f"/api/v1/sessions/{KEY}/messages/",
        token=token,
        body={"messages": [{"role": "user", "content": t} for t in texts]},
    )
    assert response.status == 201, response.body


def test_json_matches_the_api_by_key_and_by_session_id(served):
    server, token, session = served
    append(server, token, "one", "two", "three")
    api = server.request("GET", f"/api/v1/sessions/{KEY}/history/?limit=2", token=token)
    ours = server.request("GET", f"{OPENCLAW}?limit=2", token=token)
    by_id = server.request("GET", f"/sessions/{session.session_id}/history?limit=2", token=token)
    assert api.status == ours.status == by_id.status == 200
    assert json.loads(ours.body) == json.loads(api.body) == json.loads(by_id.body)
    assert json.loads(ours.body)["nextCursor"] == "2"


def test_sse_by_accept_header_resumes_after_last_event_id(served):
    server, token, _ = served
    append(server, token, "one")
    stream = SSE(server, token, OPENCLAW, Accept="text/event-stream")
    assert stream.frame() == {"retry": "1000"}
    (history,) = stream.events("history", 1)
    assert [m["content"] for m in history["data"]["messages"]] == ["one"]
    append(server, token, "two")
    (first,) = stream.events("message", 1)
    assert first["id"] == "2" and first["data"]["message"]["content"] == "two"
    stream.close()
    append(server, token, "three", "four")
    resumed_stream = SSE(server, token, f"{OPENCLAW}?follow=1", **{"Last-Event-ID": "2"})
    resumed = resumed_stream.events("message", 2)
    resumed_stream.close()
    assert [e["id"] for e in resumed] == ["3", "4"]
    assert [e["data"]["message"]["content"] for e in resumed] == ["three", "four"]


def get_once(server, path, headers):
    """One GET, redirects not followed (urllib would follow the login redirect)."""
    parts = urlsplit(server.url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.getheader("Location"), response.read()
    finally:
        conn.close()


def test_a_browser_at_the_same_address_is_sent_to_log_in(served):
    server, _, _ = served
    status, location, _ = get_once(server, OPENCLAW, {"Accept": "text/html,*/*;q=0.8"})
    assert status == 302 and location.startswith("/accounts/login/")
    status, _, body = get_once(server, f"{OPENCLAW}?limit=zero", {"Authorization": "Bearer x"})
    assert status == 401 and json.loads(body)["error"]["type"] == "unauthorized"
