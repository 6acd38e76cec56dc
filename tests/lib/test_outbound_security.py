"""Secrets and internal addresses through model backends and webhooks (issue 16, item 1):
apiKeyEnv limited to OPENCLAW_MODEL_KEY_ENVS, non-public destinations refused unless
OPENCLAW_OUTBOUND_ALLOW allows them, no redirects, no remote body in an error."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.db import transaction
from django.urls import reverse

from openclaw_common.errors import InvalidArgument
from sessions_app.delivery import deliver, enqueue_delivery, enqueue_webhook_event, save_channel
from sessions_app.lib import outbound
from sessions_app.models import Agent, ChannelConfig, Delivery
from sessions_app.runs.backends import BackendError, TurnInput
from sessions_app.runs.backends.openai import OpenAIBackend
from tests.conftest import make_session

SECRET = "s3cret-value-that-must-not-leak"
LOOPBACK_FORMS = [
    "http://127.0.0.1:9/v1",
    "http://[::1]:9/v1",
    "http://0x7f000001/v1",
    "http://2130706433/v1",
    "http://017700000001/v1",
    "http://127.1/v1",
    "http://[::ffff:127.0.0.1]/v1",
    "http://[::ffff:7f00:1]/v1",
    "http://169.254.169.254/latest/meta-data/",
    "http://10.0.0.5/v1",
    "http://192.168.1.1/v1",
    "http://172.16.0.1/v1",
    "http://100.64.0.1/v1",
    "http://0.0.0.0/v1",
    "http://[fe80::1]/v1",
    "http://[fd00:ec2::254]/v1",
    "http://[64:ff9b::a9fe:a9fe]/v1",
    # IPv4 inside IPv6 forms a translator on the path turns into that IPv4 address (audit):
    "http://[64:ff9b:1::a9fe:a9fe]/v1",  # local-use NAT64
    "http://[64:ff9b:1::7f00:1]/v1",
    "http://[::a9fe:a9fe]/v1",  # IPv4-compatible
    "http://[::ffff:0:a9fe:a9fe]/v1",  # IPv4-translated
    "http://[2002:a9fe:a9fe::]/v1",  # 6to4
    "http://localhost:9/v1",
]


@pytest.fixture
def no_allow(settings):
    settings.OPENCLAW_OUTBOUND_ALLOW = []
    return settings


def openai_backend(base_url: str, **extra) -> dict:
    return {"type": "openai", "baseUrl": base_url, "model": "m", **extra}


def turn(backend: dict) -> TurnInput:
    return TurnInput(
        session_key="agent:main:main",
        agent_id="main",
        kind="send",
        model="m",
        backend=backend,
        messages=[{"role": "user", "content": "hi"}],
        extra_system_prompt="",
        tools=[],
    )


def run(backend: dict):
    return OpenAIBackend().run(
        turn(backend), call_tool=lambda name, args: {}, check_abort=lambda: None
    )


class Recorder:
    """A tiny HTTP server on 127.0.0.1: answers every POST with the next scripted answer."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                recorder.requests.append(
                    {
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": self.rfile.read(length),
                    }
                )
                status, headers, body = recorder.answers.pop(0)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_port}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def recorders():
    made = []

    def make(*answers):
        made.append(Recorder(answers))
        return made[-1]

    yield make
    for recorder in made:
        recorder.close()


# --- apiKeyEnv --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["SECRET_KEY", "DATABASE_URL", "REDIS_URL", "PATH"])
def test_rest_refuses_an_api_key_env_the_deployment_does_not_list(operator, fake_openai, name):
    response = operator.put(
        "/api/v1/agents/leaky/",
        {"backend": openai_backend(fake_openai.base_url, apiKeyEnv=name)},
    )
    assert response.status_code == 400, response.content
    assert "OPENCLAW_MODEL_KEY_ENVS" in response.json()["error"]["message"]
    assert not Agent.objects.filter(pk="leaky").exists()


def test_rest_accepts_a_provider_key_name(operator, fake_openai):
    response = operator.put(
        "/api/v1/agents/ok/",
        {"backend": openai_backend(fake_openai.base_url, apiKeyEnv="OPENAI_API_KEY")},
    )
    assert response.status_code in (200, 201), response.content


def test_the_list_is_a_setting(operator, fake_openai, settings):
    settings.OPENCLAW_MODEL_KEY_ENVS = ["MY_MODEL_KEY"]
    body = {"backend": openai_backend(fake_openai.base_url, apiKeyEnv="OPENAI_API_KEY")}
    assert operator.put("/api/v1/agents/a/", body).status_code == 400
    body["backend"]["apiKeyEnv"] = "MY_MODEL_KEY"
    assert operator.put("/api/v1/agents/a/", body).status_code in (200, 201)


def test_admin_form_refuses_an_api_key_env_the_deployment_does_not_list(
    admin_client, agents, fake_openai
):
    response = admin_client.post(
        reverse("admin:sessions_app_agent_add"),
        {
            "id": "leaky",
            "name": "",
            "description": "",
            "model": "",
            "backend": json.dumps(openai_backend(fake_openai.base_url, apiKeyEnv="SECRET_KEY")),
            "allow_agents": "",
            "tools_allow": "",
            "tools_deny": "",
        },
    )
    assert response.status_code == 200
    assert "OPENCLAW_MODEL_KEY_ENVS" in response.content.decode()
    assert not Agent.objects.filter(pk="leaky").exists()


def test_a_saved_backend_naming_a_secret_is_refused_at_run_time(fake_openai, monkeypatch):
    monkeypatch.setenv("SECRET_KEY", SECRET)
    fake_openai.reply("hello")
    with pytest.raises(BackendError, match="OPENCLAW_MODEL_KEY_ENVS"):
        run(openai_backend(fake_openai.base_url, apiKeyEnv="SECRET_KEY"))
    assert fake_openai.requests == []


# --- destinations ------------------------------------------------------------------------------


@pytest.mark.parametrize("url", LOOPBACK_FORMS)
def test_every_form_of_an_internal_address_is_refused(no_allow, url):
    with pytest.raises(outbound.OutboundRefused, match="OPENCLAW_OUTBOUND_ALLOW"):
        outbound.check_url(url)


@pytest.mark.parametrize("url", [u for u in LOOPBACK_FORMS if "localhost" not in u])
def test_literal_internal_addresses_are_refused_when_saved(no_allow, url):
    assert "OPENCLAW_OUTBOUND_ALLOW" in outbound.check_saved_url(url)


def test_local_names_are_refused_when_saved_and_look_alikes_are_not(no_allow):
    assert outbound.check_saved_url("http://localhost:11434/v1")
    assert outbound.check_saved_url("http://api.localhost/v1")
    assert outbound.check_saved_url("https://notlocalhost.example/v1") is None


def test_a_public_address_passes(no_allow):
    assert outbound.check_url("https://93.184.215.14/v1").address == "93.184.215.14"
    assert outbound.check_url("http://[2606:4700::1]/v1").address == "2606:4700::1"
    assert outbound.check_saved_url("https://api.openai.com/v1") is None


@pytest.mark.parametrize(
    ("allow", "url"),
    [
        (["*"], "http://127.0.0.1:9/v1"),
        (["127.0.0.0/8"], "http://0x7f000001/v1"),
        (["10.1.2.3"], "http://10.1.2.3/v1"),
        (["::1"], "http://[::1]:9/v1"),
        (["localhost"], "http://localhost:9/v1"),
    ],
)
def test_the_deployment_may_allow_internal_destinations(settings, allow, url):
    settings.OPENCLAW_OUTBOUND_ALLOW = allow
    outbound.check_url(url)
    assert outbound.check_saved_url(url) is None


def test_rest_refuses_an_internal_base_url(operator, no_allow):
    response = operator.put(
        "/api/v1/agents/leaky/", {"backend": openai_backend("http://169.254.169.254/v1")}
    )
    assert response.status_code == 400
    assert "OPENCLAW_OUTBOUND_ALLOW" in response.json()["error"]["message"]


def test_a_saved_internal_base_url_is_refused_at_run_time(fake_openai, no_allow):
    fake_openai.reply("hello")
    with pytest.raises(BackendError, match="OPENCLAW_OUTBOUND_ALLOW"):
        run(openai_backend(fake_openai.base_url))
    assert fake_openai.requests == []


def test_a_name_is_checked_after_resolution(no_allow, monkeypatch):
    def resolve(host, port, **kwargs):
        return [(2, 1, 6, "", ("127.0.0.1", port))]

    monkeypatch.setattr(outbound.socket, "getaddrinfo", resolve)
    with pytest.raises(outbound.OutboundRefused, match="not a public address"):
        outbound.check_url("https://models.example.com/v1")


def test_the_connection_goes_to_the_checked_address(recorders, monkeypatch):
    """No second lookup between check and connect (DNS rebinding)."""
    target = recorders((200, {"Content-Type": "application/json"}, b'{"ok": 1}'))
    port = target.server.server_port
    answers = iter([[(2, 1, 6, "", ("127.0.0.1", port))], [(2, 1, 6, "", ("10.9.9.9", port))]])
    real = outbound.socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        # The name answers once with the checked address, then with another one.
        return next(answers) if host == "rebind.test" else real(host, *args, **kwargs)

    monkeypatch.setattr(outbound.socket, "getaddrinfo", resolve)
    response = outbound.post(f"http://rebind.test:{port}/x", b"{}", {}, timeout=5)
    assert response.status == 200
    assert target.requests[0]["headers"]["Host"] == f"rebind.test:{port}"


# --- answers -----------------------------------------------------------------------------------


def test_a_non_json_answer_is_not_echoed_into_the_run_error(fake_openai):
    fake_openai.respond(f"<html>{SECRET}</html>")
    with pytest.raises(BackendError) as info:
        run(openai_backend(fake_openai.base_url))
    assert SECRET not in str(info.value)
    assert "not JSON" in str(info.value) and "bytes" in str(info.value)


def test_an_http_error_body_is_not_echoed_into_the_run_error(fake_openai):
    fake_openai.error(500, SECRET)
    with pytest.raises(BackendError, match=r"^HTTP 500 \(application/json, \d+ bytes\)$"):
        run(openai_backend(fake_openai.base_url))


def test_a_redirect_is_not_followed_and_no_key_goes_anywhere(recorders, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    elsewhere = recorders((200, {}, b"{}"))
    first = recorders((302, {"Location": f"{elsewhere.url}/v1/chat/completions"}, b""))
    with pytest.raises(BackendError, match="redirects are not followed"):
        run(openai_backend(f"{first.url}/v1", apiKeyEnv="OPENAI_API_KEY"))
    assert elsewhere.requests == []


# --- webhooks ----------------------------------------------------------------------------------


def delivery_to(url: str) -> Delivery:
    ChannelConfig.objects.create(channel="discord", adapter="webhook", webhook_url=url)
    session = make_session(
        "agent:main:main", deliveryContext={"channel": "discord", "to": "channel:1"}
    )
    with transaction.atomic():
        return enqueue_delivery(session=session, text="hello", kind="announce")


def test_a_webhook_error_keeps_no_remote_body(agents, recorders):
    receiver = recorders((500, {"Content-Type": "text/plain"}, SECRET.encode()))
    delivery = delivery_to(f"{receiver.url}/hook")
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert SECRET not in delivery.last_error
    assert delivery.last_error == f"HTTP 500 (text/plain, {len(SECRET)} bytes)"


def test_a_remote_content_type_is_named_only_when_it_is_a_known_one(agents, recorders):
    """A header is remote text: "x/internal-token-…" is a valid media type, and it reached
    Delivery.last_error and run errors (audit, 28 Nov)."""
    odd = "x/internal-token-ab12cd34ef56; charset=x"
    receiver = recorders((500, {"Content-Type": odd}, b"oops"))
    delivery = delivery_to(f"{receiver.url}/hook")
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.last_error == "HTTP 500 (other, 4 bytes)"
    model = recorders((502, {"Content-Type": odd}, b"body"))
    with pytest.raises(BackendError) as failed:
        run(openai_backend(f"{model.url}/v1"))
    assert "internal-token" not in str(failed.value) and "(other, 4 bytes)" in str(failed.value)


def test_the_timeout_bounds_the_whole_answer_not_each_read(no_allow, settings):
    """A server trickling a byte every 0.3 s answered within every read's timeout, so a 1 s
    request took as long as it liked (a webhook attempt outlasting its lease is sent twice)."""
    settings.OPENCLAW_OUTBOUND_ALLOW = ["127.0.0.1"]
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def trickle():
        conn, _ = server.accept()
        conn.recv(65536)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n")
        while not stop.wait(0.3):  # never done: only the deadline ends the request
            try:
                conn.sendall(b" ")
            except OSError:
                break
        conn.close()

    thread = threading.Thread(target=trickle, daemon=True)
    thread.start()
    try:
        with pytest.raises(outbound.OutboundFailed) as failed:
            outbound.post(f"http://127.0.0.1:{server.getsockname()[1]}/h", b"{}", {}, timeout=1)
        assert str(failed.value) == "no answer from 127.0.0.1 within 1 s"
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_webhook_redirect_is_a_failed_attempt(agents, recorders):
    elsewhere = recorders((200, {}, b"ok"))
    receiver = recorders((307, {"Location": f"{elsewhere.url}/x"}, b""))
    delivery = delivery_to(f"{receiver.url}/hook")
    deliver(delivery.pk)
    delivery.refresh_from_db()
    assert "redirects are not followed" in delivery.last_error
    assert elsewhere.requests == []


def assert_failed_at_once(delivery: Delivery) -> None:
    """A refusal is the same on every attempt: `failed` after the first, none scheduled
    (issue 28: it was retried as transient, five attempts over ~30 s)."""
    delivery.refresh_from_db()
    assert delivery.status == Delivery.FAILED
    assert delivery.attempts == 1 and delivery.next_attempt_at is None
    assert "OPENCLAW_OUTBOUND_ALLOW" in delivery.last_error


def test_a_webhook_to_an_internal_address_is_refused_at_send_time(agents, recorders, no_allow):
    receiver = recorders((200, {}, b"ok"))
    delivery = delivery_to(f"{receiver.url}/hook")
    assert deliver(delivery.pk) == Delivery.FAILED
    assert_failed_at_once(delivery)
    assert receiver.requests == []


def test_a_completion_webhook_the_policy_refuses_is_failed_at_once(agents, recorders, no_allow):
    receiver = recorders((200, {}, b"ok"))
    # Saved while the deployment allowed it (saving checks it too), refused when sent.
    Agent.objects.filter(pk="main").update(webhook_url=f"{receiver.url}/hook", webhook_secret="s")
    session = make_session("agent:main:main")
    with transaction.atomic():
        delivery = enqueue_webhook_event(session=session, agent_id="main", event={"event": "x"})
    assert deliver(delivery.pk) == Delivery.FAILED
    assert_failed_at_once(delivery)
    assert receiver.requests == []


def test_a_name_that_does_not_resolve_is_retried(agents, no_allow, monkeypatch):
    """Not a refusal: the resolver may be back on the next attempt."""

    def resolve(host, port, **kwargs):
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")

    monkeypatch.setattr(outbound.socket, "getaddrinfo", resolve)
    delivery = delivery_to("https://hooks.example.com/hook")
    assert deliver(delivery.pk) == Delivery.PENDING
    delivery.refresh_from_db()
    assert delivery.attempts == 1 and delivery.next_attempt_at is not None
    assert delivery.last_error == "webhook unreachable: cannot resolve hooks.example.com: gaierror"


def test_saving_a_webhook_channel_to_an_internal_address_is_refused(agents, no_allow):
    with pytest.raises(InvalidArgument, match="OPENCLAW_OUTBOUND_ALLOW"):
        save_channel(channel="discord", adapter="webhook", webhook_url="http://169.254.169.254/x")


def test_an_agent_webhook_to_an_internal_address_is_refused(operator, no_allow):
    response = operator.put("/api/v1/agents/hooked/", {"webhook": {"url": "http://10.0.0.1/"}})
    assert response.status_code == 400
    assert "OPENCLAW_OUTBOUND_ALLOW" in response.json()["error"]["message"]


def test_the_admin_agent_form_refuses_an_internal_webhook(admin_client, agents, no_allow):
    response = admin_client.post(
        reverse("admin:sessions_app_agent_add"),
        {
            "id": "hooked",
            "name": "",
            "description": "",
            "model": "",
            "backend": "",
            "allow_agents": "",
            "tools_allow": "",
            "tools_deny": "",
            "webhook_url": "http://169.254.169.254/latest/",
        },
    )
    assert response.status_code == 200
    assert "OPENCLAW_OUTBOUND_ALLOW" in response.content.decode()
    assert not Agent.objects.filter(pk="hooked").exists()
