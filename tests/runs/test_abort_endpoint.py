"""POST /api/v1/sessions/{key}/abort/: stops a session's work and, by default, everything below
it; bad input is a clear 4xx that changes nothing."""

from __future__ import annotations

import pytest
from django.conf import settings

from sessions_app.models import Run, Session
from tests.conftest import make_agent, make_session, set_config
from tests.tools.test_bad_input_tools import assert_error, check_all

MAIN = "/api/v1/sessions/agent:main:main/abort/"
SLOW = [
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    {"match": ".*", "on": ["spawn"], "delayMs": 60_000, "reply": "late"},
]


@pytest.fixture
def home(agents):
    make_agent("main", subagents={"allowAgents": ["research"]})
    make_agent("research", backend={"type": "scripted", "rules": SLOW})
    return make_session("main")


def test_abort_stops_the_session_and_cascades(agent_main, home):
    child = agent_main.details("sessions_spawn", {"agentId": "research", "task": "slow"})
    Run.objects.filter(pk=child["runId"]).update(status=Run.RUNNING)  # mid-run on some worker
    response = agent_main.post(MAIN, {})
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["ok"] is True and body["key"] == "agent:main:main"
    assert body["cancelledDescendants"] == 1
    assert Run.objects.get(pk=child["runId"]).status == Run.ABORTED
    assert response.json()["status"] == "no-active-run"  # main itself had nothing running


def test_abort_without_cascade_leaves_the_children(agent_main, home):
    child = agent_main.details("sessions_spawn", {"agentId": "research", "task": "slow"})
    response = agent_main.post(MAIN, {"cascade": False, "clearQueued": True})
    assert response.json()["cancelledDescendants"] == 0
    assert Run.objects.get(pk=child["runId"]).status == Run.QUEUED


def test_an_empty_body_is_the_defaults(agent_main, home):
    response = agent_main.client.post(
        MAIN, b"", content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {agent_main.token}"
    )
    assert response.status_code == 200 and response.json()["status"] == "no-active-run"


def test_bad_input_is_a_clear_400(agent_main, home):
    check_all(
        lambda body: agent_main.post(MAIN, body),
        [
            ({"clearQueued": "maybe"}, "clearQueued must be a boolean"),
            ({"cascade": 3}, "cascade must be a boolean"),
            ({"nope": True}, "Unknown argument for abort: nope"),
            ([1, 2], "request body must be a JSON object"),  # (the one body reader, issue 28)
        ],
        status=400,
        error_type="invalid_request",
        writes=True,
    )


def test_oversized_body_is_413(agent_main, home):
    body = b'{"x": "' + b"x" * settings.DATA_UPLOAD_MAX_MEMORY_SIZE + b'"}'
    response = agent_main.client.post(
        MAIN, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {agent_main.token}"
    )
    assert_error(response, 413, "payload_too_large", "limit")


def test_forbidden_and_missing(outsider, ingest, operator, home):
    assert_error(outsider.post(MAIN, {}), 403, "forbidden", "visibility is restricted")
    assert_error(ingest.post(MAIN, {}), 403, "forbidden", "ingest key")
    set_config(visibility="agent")
    missing = operator.post("/api/v1/sessions/agent:main:nope/abort/", {})
    assert_error(missing, 404, "not_found", "agent:main:nope")
    assert Session.objects.filter(key="agent:main:main").exists()
