"""spawnedBy decides who may read a session (visibility tree, the sandbox clamp), so it is set
once, at creation: an ingest key cannot widen access by rewriting it (issue 16)."""

from __future__ import annotations

import pytest

from sessions_app.models import Session
from tests.conftest import add_messages, make_session, user
from tests.manage.test_import_openclaw import (
    run_import,
    sessions_dir,
    write_store,
    write_transcript,
)

CRON = "agent:main:cron:secret"
MESSAGE = "spawnedBy of agent:main:cron:secret is set once, at creation"


@pytest.fixture
def secret(agents):
    session = make_session(CRON)
    add_messages(session, user("the secret"))
    return session


@pytest.mark.parametrize("spawned_by", ["agent:main:main", "main"])
def test_upsert_may_not_change_spawned_by(ingest, agent_main, secret, spawned_by):
    path = f"/api/v1/sessions/{CRON}/history/"
    assert agent_main.get(path).status_code == 403
    response = ingest.post("/api/v1/sessions/", {"key": CRON, "spawnedBy": spawned_by})
    assert response.status_code == 400, response.content
    assert response.json()["error"]["type"] == "invalid_request"
    assert MESSAGE in response.json()["error"]["message"]
    assert agent_main.get(path).status_code == 403  # tree: still not the main session's child


def test_upsert_may_not_clear_spawned_by(ingest, agents):
    make_session("agent:main:subagent:s1", spawnedBy="agent:main:main")
    for cleared in ("", None):
        body = {"key": "agent:main:subagent:s1", "spawnedBy": cleared}
        response = ingest.post("/api/v1/sessions/", body)
        assert response.status_code == 400, response.content
        assert "is set once, at creation (it is agent:main:main)" in response.content.decode()


def test_upsert_repeating_the_stored_spawned_by_is_fine(ingest, agents):
    body = {"key": "agent:main:subagent:s1", "spawnedBy": "agent:main:main", "label": "a"}
    assert ingest.post("/api/v1/sessions/", body).status_code == 201
    again = ingest.post("/api/v1/sessions/", {**body, "spawnedBy": "main", "label": "b"})
    assert again.status_code == 200, again.content
    assert again.json()["label"] == "b" and again.json()["spawnedBy"] == "agent:main:main"
    omitted = ingest.post("/api/v1/sessions/", {"key": "agent:main:subagent:s1", "label": "c"})
    assert omitted.status_code == 200


def test_patch_does_not_take_spawned_by(ingest, secret):
    response = ingest.patch(f"/api/v1/sessions/{CRON}/", {"spawnedBy": "agent:main:main"})
    assert response.status_code == 400
    assert Session.objects.get(key=CRON).spawned_by == ""


def test_import_keeps_the_stored_spawned_by_and_notes_it(agents, tmp_path):
    entry = {"sessionId": "11111111-1111-4111-8111-111111111111", "updatedAt": 1}
    write_store(tmp_path, "main", {"cron:secret": entry})
    directory = sessions_dir(tmp_path, "main")
    write_transcript(directory, f"{entry['sessionId']}.jsonl")
    run_import(tmp_path)
    write_store(tmp_path, "main", {"cron:secret": {**entry, "spawnedBy": "agent:main:main"}})
    out, err = run_import(tmp_path)
    assert "0 sessions failed" in out
    assert (
        "cron:secret: spawnedBy changed from empty to agent:main:main; kept empty "
        "(set once, at creation)"
    ) in err
    assert Session.objects.get(key=CRON).spawned_by == ""
