"""Live updates across real processes: the ASGI server (uvicorn, `manage.py serve`), a django-q2
worker cluster, and the test as a WebSocket or SSE client. On SQLite the hint from the worker
cannot reach the server, so the hub's poll carries it; on PostgreSQL + Redis the channel layer
does. Both backends run this file."""

from __future__ import annotations

import http.client
import json
import time
from urllib.parse import urlsplit

import pytest
from websockets.sync.client import connect

from sessions_app.access import key_cache
from tests.worlds import ANNOUNCE_SKIP

pytestmark = pytest.mark.django_db(transaction=True)

HISTORY = "/api/v1/sessions/agent:research:main/history/"


@pytest.fixture
def research_rules() -> list[dict]:
    # The research agent answers "capital" (tests/worlds.py builds the rest of the live world).
    return [{"match": "capital", "reply": "Paris."}, ANNOUNCE_SKIP]


def ws_url(server) -> str:
    return server.url.replace("http://", "ws://") + "/ws/"


def request(ws, request_id: str, method: str, params: dict) -> dict:
    ws.send(json.dumps({"type": "req", "id": request_id, "method": method, "params": params}))
    while True:
        frame = json.loads(ws.recv(timeout=10))
        if frame["type"] == "res" and frame["id"] == request_id:
            return frame


def test_a_worker_run_streams_into_a_websocket_subscriber(live_world, operator_token):
    server, token = live_world.server, operator_token
    auth = {"Authorization": f"Bearer {token}"}
    with connect(ws_url(server), additional_headers=auth) as ws:
        assert request(ws, "1", "sessions.subscribe", {})["ok"]
        subscribed = request(ws, "2", "sessions.messages.subscribe", {"key": "agent:research:main"})
        assert subscribed["payload"] == {"key": "agent:research:main", "lastSeq": 0}
        sent = server.request(
            "POST",
            "/tools/invoke",
            token=token,
            body={
                "tool": "sessions_send",
                "args": {"sessionKey": "agent:research:main", "message": "capital of France?"},
            },
        )
        assert sent.json()["result"]["details"]["status"] == "ok"
        messages, changes = [], []
        deadline = time.monotonic() + 15
        # Both kinds of event, in whichever order the hub's rounds hand them out.
        while time.monotonic() < deadline and (
            len(messages) < 2 or "run" not in {c["payload"]["reason"] for c in changes}
        ):
            frame = json.loads(ws.recv(timeout=10))
            (messages if frame["event"] == "session.message" else changes).append(frame)
    # The send's two messages first (the announce step's may follow while we wait for the
    # lifecycle event).
    assert [m["payload"]["messageSeq"] for m in messages][:2] == [1, 2]
    inbound, reply = (m["payload"]["message"] for m in messages[:2])
    assert inbound["role"] == "user" and inbound["provenance"]["kind"] == "inter_session"
    assert reply["role"] == "assistant" and reply["content"][0]["text"] == "Paris."
    # The worker's run status changes reached the lifecycle subscription too.
    assert {"agent:research:main"} <= {c["payload"]["key"] for c in changes}
    assert "run" in {c["payload"]["reason"] for c in changes}


class SSE:
    """A raw HTTP/1.1 SSE client, so the test controls disconnects exactly."""

    def __init__(self, server, token, path, **headers):
        parts = urlsplit(server.url)
        self.conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {token}", **headers})
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.read()

    def frame(self) -> dict:
        out = {}
        while True:
            line = self.response.readline().decode().rstrip("\n")
            if not line:
                if out:
                    return out
                continue
            name, _, value = line.partition(": ")
            out[name or "comment"] = json.loads(value) if name == "data" else value

    def events(self, name: str, count: int) -> list[dict]:
        found = []
        while len(found) < count:
            frame = self.frame()
            if frame.get("event") == name:
                found.append(frame)
        return found

    def close(self):
        self.conn.close()


def append(server, token, *texts):
    response = server.request(
        "POST",
        "/api/v1/sessions/agent:research:main/messages/",
        token=token,
        body={"messages": [{"role": "user", "content": t} for t in texts]},
    )
    assert response.status == 201 or response.status == 200, response.body


def test_sse_follow_survives_a_disconnect_with_no_gap_and_no_duplicate(live_world, operator_token):
    server, token = live_world.server, operator_token
    stream = SSE(server, token, HISTORY + "?follow=1")
    assert stream.frame() == {"retry": "1000"}
    assert stream.events("history", 1)[0]["data"]["messages"] == []
    append(server, token, "one")
    (first,) = stream.events("message", 1)
    assert first["id"] == "1"
    stream.close()  # the client drops; meanwhile two more messages arrive
    append(server, token, "two", "three")
    stream = SSE(server, token, HISTORY + "?follow=1", **{"Last-Event-ID": "1"})
    resumed = stream.events("message", 2)
    append(server, token, "four")
    resumed += stream.events("message", 1)
    stream.close()
    assert [e["id"] for e in resumed] == ["2", "3", "4"]
    assert [e["data"]["message"]["content"] for e in resumed] == ["two", "three", "four"]


def test_revoking_a_key_closes_its_websocket_and_its_stream(live_world, operator_token):
    server, token = live_world.server, operator_token
    stream = SSE(server, token, HISTORY + "?follow=1")
    stream.events("history", 1)
    with connect(ws_url(server), additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        assert request(ws, "1", "sessions.messages.subscribe", {"key": "agent:research:main"})["ok"]
        key_cache.authenticate(token).revoke()
        (error,) = stream.events("error", 1)
        with pytest.raises(Exception) as closed:
            ws.recv(timeout=10)
    assert error["data"] == {"code": 4401, "reason": "access revoked"}
    assert closed.value.rcvd.code == 4401 and closed.value.rcvd.reason == "access revoked"
    stream.close()


def test_browser_sessions_need_same_origin_and_the_view_permission(live_world, django_user_model):
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django.test import Client

    from sessions_app.models import Session

    server = live_world.server
    user = django_user_model.objects.create_user("viewer", password="pw-123456")
    # A transactional flush may have taken the permission rows with it; make sure it exists.
    permission, _ = Permission.objects.get_or_create(
        codename="view_session",
        content_type=ContentType.objects.get_for_model(Session),
        defaults={"name": "Can view session"},
    )
    user.user_permissions.add(permission)
    client = Client()
    client.force_login(user)
    cookie = f"sessionid={client.cookies['sessionid'].value}"
    with connect(ws_url(server), additional_headers={"Cookie": cookie}, origin=server.url) as ws:
        listed = request(ws, "1", "sessions.list", {})
        assert {r["key"] for r in listed["payload"]["sessions"]} >= {"agent:research:main"}
        # Losing the permission to view sessions ends the connection, as a revoked key does.
        user.user_permissions.remove(permission)
        with pytest.raises(Exception) as closed:
            ws.recv(timeout=10)
        assert closed.value.rcvd.code == 4401
    with pytest.raises(Exception) as refused:
        connect(ws_url(server), additional_headers={"Cookie": cookie}, origin="http://evil.example")
    assert "403" in str(refused.value)
