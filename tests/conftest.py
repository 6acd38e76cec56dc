"""Personas and factories shared by every test (STYLE.md rule 9).

Personas: an operator key, an agent key for `main`, a sandboxed agent key for `main`, an ingest
key, and an outsider (an agent key for another agent). Factories are keyword-only and go through
the same sessions_app functions the API uses.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from sessions_app import store
from sessions_app.access import source_limit
from sessions_app.manage.agents import upsert_agent
from sessions_app.models import ApiKey, GatewayConfig, Run, Session
from tests.fake_openai import fake_openai  # noqa: F401  (a fixture, shared by every test module)

# The composed worlds (session tree, live server and worker, keys), for every test folder.
pytest_plugins = ["tests.worlds"]


def admin_groups() -> dict:
    """The admin's Operators and Viewers groups, as the migrations make them. Made again here:
    a transactional test's flush removes them (the migration's function is idempotent)."""
    from django.apps import apps
    from django.contrib.auth.models import Group

    # The newest migration that defines the groups.
    migration = importlib.import_module("sessions_app.migrations.0012_completion_permissions")
    migration.create_groups(apps, None)
    return {g.name: g for g in Group.objects.filter(name__in=["Operators", "Viewers"])}


def make_agent(agent_id: str = "main", **data):
    agent, _ = upsert_agent(api_key=None, agent_id=agent_id, data=data)
    return agent


def make_session(key: str, **entry) -> Session:
    session, _ = store.upsert_session(api_key=None, key=key, entry=entry)
    return session


def finished_run(
    session, *, hours_ago: float, ms: int, tokens: int = 20, status: str = "ok"
) -> Run:
    """A finished send run of `ms` that started `hours_ago`, with `tokens` of usage."""
    created = timezone.now() - timedelta(hours=hours_ago)
    return Run.objects.create(
        session=session,
        kind="send",
        status=status,
        created_at=created,
        started_at=created,
        finished_at=created + timedelta(milliseconds=ms),
        usage={"input": tokens - 10, "output": 10},
    )


def add_messages(session: Session, *messages: dict) -> tuple[int, int]:
    return store.append_to_session(session, store.read_messages(list(messages)))


def user(text: str, **extra) -> dict:
    return {"role": "user", "content": text, **extra}


def assistant(text: str, **extra) -> dict:
    return {"role": "assistant", "content": [{"type": "text", "text": text}], **extra}


def tool_result(text: str, *, call_id: str = "call_1", name: str = "exec") -> dict:
    return {
        "role": "toolResult",
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
    }


def set_config(**fields) -> GatewayConfig:
    config = GatewayConfig.load()
    for name, value in fields.items():
        setattr(config, name, value)
    config.save()
    return config


@dataclass
class Api:
    """A test client speaking as one API key."""

    client: Client
    token: str | None

    def headers(self, extra: dict | None = None) -> dict:
        headers = {}
        if self.token:
            headers["HTTP_AUTHORIZATION"] = f"Bearer {self.token}"
        headers.update(extra or {})
        return headers

    def invoke(self, tool: str, args: dict | None = None, **body):
        payload = {"tool": tool, **body}
        if args is not None:
            payload["args"] = args
        return self.post("/tools/invoke", payload)

    def details(self, tool: str, args: dict | None = None, **body) -> dict:
        response = self.invoke(tool, args, **body)
        assert response.status_code == 200, response.content
        return response.json()["result"]["details"]

    def get(self, path: str, params: dict | None = None, **headers):
        return self.client.get(path, params or {}, **self.headers(headers))

    def post(self, path: str, body, **headers):
        data = body if isinstance(body, bytes | str) else json.dumps(body)
        return self.client.post(
            path, data, content_type="application/json", **self.headers(headers)
        )

    def patch(self, path: str, body, **headers):
        data = body if isinstance(body, bytes | str) else json.dumps(body)
        return self.client.patch(
            path, data, content_type="application/json", **self.headers(headers)
        )

    def put(self, path: str, body, **headers):
        data = body if isinstance(body, bytes | str) else json.dumps(body)
        return self.client.put(path, data, content_type="application/json", **self.headers(headers))

    def delete(self, path: str, **headers):
        return self.client.delete(path, **self.headers(headers))


@pytest.fixture(autouse=True)
def _fresh_limits(settings):
    """Rate and login-failure counters live in Django's cache, which outlives a test (and key
    ids repeat after a flush): each test starts with none."""
    from django.core.cache import caches

    caches[getattr(settings, "OPENCLAW_LIMITS_CACHE", "default")].clear()
    # The per-source failure counts live in this process's memory: every test comes from
    # 127.0.0.1, and the suite's hundreds of 401s would otherwise lock it out.
    source_limit.forget()
    # The API keys this process has read and their noted uses (key ids repeat after a flush).
    from sessions_app.access import key_cache

    key_cache.forget()


@pytest.fixture
def agents(db):
    """Agents main (may spawn research), research, and other."""
    return {
        "main": make_agent(
            "main",
            name="Main",
            description="The main agent",
            subagents={"allowAgents": ["research"]},
        ),
        "research": make_agent("research", name="Research"),
        "other": make_agent("other", name="Other"),
    }


@pytest.fixture
def home(agents):
    """`main` may spawn `research`, a scripted sub-agent (its spawn turn fails, calls a tool
    only, is slow, or says "Found 3 papers.", by the task; its announce step has a reply), and
    main's session (last channel webchat). Modules with a `home` of their own override it."""
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent(
        "research",
        # agents_list is not a sub-agent's by default; "tools only" calls it.
        tools={"allow": ["agents_list", "sessions_yield"]},
        backend={
            "type": "scripted",
            "rules": [
                {
                    "match": "announce step",
                    "on": ["announce"],
                    "reply": "All done, nothing urgent.",
                },
                {"match": "fail", "on": ["spawn"], "error": "the model refused"},
                {
                    "match": "tools only",
                    "on": ["spawn"],
                    "toolCalls": [{"name": "agents_list"}],
                    "reply": "",
                },
                {"match": "slow", "on": ["spawn"], "delayMs": 3000, "reply": "too late"},
                {"match": ".*", "on": ["spawn"], "reply": "Found 3 papers."},
            ],
        },
    )
    return make_session("main", lastChannel="webchat")


def _api(scope: str, **fields) -> Api:
    _, token = ApiKey.generate(scope=scope, **fields)
    return Api(Client(), token)


@pytest.fixture
def operator(agents) -> Api:
    return _api(ApiKey.OPERATOR)


@pytest.fixture
def ingest(agents) -> Api:
    return _api(ApiKey.INGEST)


@pytest.fixture
def agent_main(agents) -> Api:
    return _api(ApiKey.AGENT, agent=agents["main"])


@pytest.fixture
def sandboxed_main(agents) -> Api:
    return _api(ApiKey.AGENT, agent=agents["main"], sandboxed=True)


@pytest.fixture
def outsider(agents) -> Api:
    return _api(ApiKey.AGENT, agent=agents["other"])


@pytest.fixture
def anonymous(db) -> Api:
    return Api(Client(), None)


@pytest.fixture
def demo_server(transactional_db):
    """The README's start: the demo loaded, then a real server (no worker) on a free port."""
    from tests.servers import manage, start_server

    manage("seed_demo")
    live = start_server()
    yield live
    live.stop()


@pytest.fixture
def main_session(agents):
    """agent:main:main, empty."""
    return make_session("main")
