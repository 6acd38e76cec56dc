"""Completion webhooks (beyond OpenClaw): an operator sets a URL on an agent; every send or spawn
that agent's sessions asked for POSTs a signed event through the delivery outbox, retried until
the receiver takes it, with a visible final state."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from sessions_app.delivery import deliver, retry_due_deliveries
from sessions_app.models import Agent, Delivery
from tests.conftest import make_agent, make_session
from tests.runs.helpers import drain


class Receiver:
    """A local webhook receiver that answers 500 `failures` times, then 204."""

    def __init__(self, failures: int):
        self.failures = failures
        self.received: list[tuple[dict, bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = 500 if receiver.failures > 0 else 204
                receiver.failures -= 1
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    found = Receiver(failures=2)
    yield found
    found.close()


@pytest.fixture
def home(agents, receiver, operator):
    response = operator.put(
        "/api/v1/agents/main/",
        {"subagents": {"allowAgents": ["research"]}, "webhook": {"url": receiver.url}},
    )
    assert response.status_code == 200, response.content
    secret = response.json()["webhook"]["secret"]
    assert len(secret) > 20 and Agent.objects.get(pk="main").webhook_secret == secret
    make_agent("research")
    return make_session("main")


def verify(headers: dict, body: bytes, secret: str) -> None:
    timestamp, signature = (
        part.split("=", 1)[1] for part in headers["x-openclaw-signature"].split(",")
    )
    expected = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    assert hmac.compare_digest(signature, expected.hexdigest())


def test_a_finished_spawn_is_posted_signed_after_two_failures(agent_main, home, receiver):
    spawned = agent_main.details("sessions_spawn", {"agentId": "research", "task": "look"})
    drain()
    delivery = Delivery.objects.get(kind="webhook_event")
    assert delivery.adapter == "agent_webhook" and delivery.to == "main"
    assert deliver(delivery.pk) == "pending"  # 500
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.last_error.startswith("HTTP 500")
    later = timezone.now() + timedelta(minutes=1)
    retry_due_deliveries(later)  # 500 again
    retry_due_deliveries(later + timedelta(minutes=1))  # 204
    delivery.refresh_from_db()
    assert delivery.status == Delivery.SENT and delivery.attempts == 3
    headers, body = receiver.received[-1]
    verify(headers, body, Agent.objects.get(pk="main").webhook_secret)
    event = json.loads(body)
    assert event["event"] == "run.finished" and event["kind"] == "spawn"
    assert event["deliveryId"] == delivery.pk and event["status"] == "ok"
    assert event["runId"] == spawned["runId"] and event["requesterSessionKey"] == "agent:main:main"
    assert headers["x-openclaw-event"] == "run.finished"


def test_a_tampered_body_does_not_verify(agent_main, home, receiver):
    agent_main.details("sessions_spawn", {"agentId": "research", "task": "look"})
    drain()
    receiver.failures = 0
    deliver(Delivery.objects.get(kind="webhook_event").pk)
    headers, body = receiver.received[-1]
    with pytest.raises(AssertionError):
        verify(
            headers, body.replace(b'"ok"', b'"error"'), Agent.objects.get(pk="main").webhook_secret
        )


def test_a_webhook_that_keeps_failing_ends_failed_visibly(agent_main, home, receiver):
    receiver.failures = 100
    agent_main.details("sessions_spawn", {"agentId": "research", "task": "look"})
    drain()
    delivery = Delivery.objects.get(kind="webhook_event")
    now = timezone.now()
    for minutes in range(1, 12):
        deliver(delivery.pk, now=now + timedelta(minutes=minutes * 10))
    delivery.refresh_from_db()
    assert delivery.status == Delivery.FAILED and delivery.last_error.startswith("HTTP 500")


def test_bad_webhook_settings_are_refused(operator, agents):
    for body, text in (
        ({"webhook": {"url": "ftp://x"}}, "webhook.url must be an http(s) URL"),
        ({"webhook": {"url": 3}}, "webhook.url must be a string"),
        (
            {"webhook": {"url": "http://x", "secret": "mine"}},
            'webhook must be an object with only "url"',
        ),
        ({"webhook": "http://x"}, 'webhook must be an object with only "url"'),
    ):
        response = operator.put("/api/v1/agents/main/", body)
        assert response.status_code == 400 and text in response.json()["error"]["message"]
    assert Agent.objects.get(pk="main").webhook_url == ""


def test_no_webhook_no_event(agent_main, agents):
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_session("main")
    agent_main.details("sessions_spawn", {"agentId": "research", "task": "look"})
    drain()
    assert not Delivery.objects.filter(kind="webhook_event").exists()
