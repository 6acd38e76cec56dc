"""sessions.patch's fields beyond the tool's (9.6 §2.4) over REST, and what they do here:
preferences kept and exported, toolOverrides narrowing a session's runs, the exec/host fields
accepted and ignored, privileged ones for operator keys only (sessions_app/manage/patch_fields.py)."""

from __future__ import annotations

import json
from io import StringIO
from urllib.parse import quote

import pytest
from django.core.management import call_command

from sessions_app.models import Message, Run, Session
from tests.conftest import make_agent, make_session, set_config, user
from tests.runs.helpers import drain

DEV = "agent:main:discord:group:dev"
URL = f"/api/v1/sessions/{quote(DEV)}/"
PREFERENCES = {
    "autoLabel": "Deploy chat",
    "boardFace": "compact",
    "boardPresentation": {"columns": 2},
    "contextWindow": 128_000,
    "fastMode": True,
    "traceLevel": "debug",
    "responseUsage": "full",
    "groupActivation": "mention",
}


@pytest.fixture
def dev(agents):
    return make_session(DEV, label="dev")


def test_rest_patch_takes_the_96_fields(operator, dev):
    response = operator.patch(
        URL, {**PREFERENCES, "unread": True, "verboseLevel": "on", "execHost": "node"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert set(body["updated"]) == {*PREFERENCES, "verboseLevel", "unread"}
    assert body["ignored"] == ["execHost"]
    session = Session.objects.get(key=DEV)
    assert {k: session.extra[k] for k in PREFERENCES} == PREFERENCES
    assert session.extra["unread"] is True and session.verbose_level == "on"
    assert "execHost" not in session.extra


def test_what_a_patch_stored_reads_back_from_the_session(operator, dev):
    """GET /api/v1/sessions/{key}/ answers the row with the stored preferences, as the
    sessions.patch RPC's `entry` does (it answered the bare row: a PATCH did not read back)."""
    set_config(visibility="all")  # reading a row is sessions_list's: the key's visibility
    patch = {**PREFERENCES, "icon": "kanban", "statusNote": "deploying", "attention": "monitor"}
    response = operator.patch(URL, patch)
    assert response.status_code == 200, response.content
    body = operator.get(URL).json()
    assert {k: body.get(k) for k in patch} == patch
    assert body["key"] == DEV and body["label"] == "dev"  # the row is all there


@pytest.mark.parametrize(
    ("body", "status", "text"),
    [
        ({"execSecurity": None}, 400, "execSecurity is retired and cannot be patched"),
        ({"spawnDepth": 2}, 400, "spawnDepth is spawn lineage and cannot be patched"),
        ({"fastMode": "yes", "pinned": True}, 400, "fastMode must be one of true, false, auto"),
        ({"pinned": True, "bogus": 1}, 400, "Unknown field: bogus"),
        # PostgreSQL stores no NUL in text or jsonb: a DataError (500) before.
        ({"verboseLevel": "o\u0000n"}, 400, "verboseLevel must not contain NUL characters"),
        ({"autoLabel": "a\u0000b"}, 400, "autoLabel must not contain NUL characters"),
        # An integer past 64 bits: orjson cannot encode it to measure it (a TypeError, 500).
        ({"boardFace": 2**70}, 200, None),
        (
            {"boardFace": {"n": 10**2100}},
            400,
            "boardFace must be a string, number, boolean or object of at most 2048 bytes",
        ),
    ],
)
def test_rest_refusals(operator, dev, body, status, text):
    response = operator.patch(URL, body)
    assert response.status_code == status, response.content
    if text is not None:
        assert response.json()["error"]["message"] == text
    else:  # taken whole
        assert Session.objects.get(key=DEV).extra["boardFace"] == body["boardFace"]


def test_privileged_fields_need_an_operator_key(agent_main, dev):
    from tests.conftest import set_config

    set_config(visibility="agent")
    response = agent_main.patch(URL, {"permissionMode": "default"})
    assert response.status_code == 403
    assert response.json()["error"]["message"] == (
        "permissionMode can be patched with an operator key only"
    )
    assert agent_main.patch(URL, {"traceLevel": "off"}).status_code == 200


def test_the_ingest_patch_keeps_its_own_fields(ingest, dev):
    """verboseLevel/reasoningLevel alone are still the ingest PATCH (answered with the row)."""
    response = ingest.patch(URL, {"verboseLevel": "on", "reasoningLevel": "off"})
    assert response.status_code == 200 and response.json()["verboseLevel"] == "on"


def test_tool_overrides_narrow_the_sessions_runs(operator, dev):
    rules = [
        {"match": "list", "toolCalls": [{"name": "sessions_list"}], "reply": "{toolResult}"},
        {"match": ".*", "reply": "{tools}"},
    ]
    make_agent("main", backend={"type": "scripted", "rules": rules})
    assert operator.patch(URL, {"toolOverrides": {"deny": ["sessions_list"]}}).status_code == 200
    for text in ("which tools?", "list them"):
        response = operator.post(f"{URL}messages/", {"messages": [user(text)], "run": True})
        assert response.status_code == 201, response.content
    drain()
    first, second = Run.objects.filter(session__key=DEV).order_by("created_at")
    assert "sessions_list" not in first.reply.split(",") and "sessions_history" in first.reply
    assert json.loads(second.reply) == {
        "status": "forbidden",
        "error": "sessions_list is not allowed in this session (toolOverrides)",
    }
    assert operator.patch(URL, {"toolOverrides": None}).status_code == 200  # null clears
    assert "toolOverrides" not in Session.objects.get(key=DEV).extra
    assert Message.objects.filter(session__key=DEV, role="toolResult").count() == 1


def test_preferences_survive_export_and_import(operator, dev, tmp_path):
    overrides = {"deny": ["sessions_spawn"]}
    body = {**PREFERENCES, "unread": True, "toolOverrides": overrides}
    assert operator.patch(URL, body).status_code == 200
    kept = Session.objects.get(key=DEV).extra
    call_command("sessions", "export", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    entry = json.loads((tmp_path / "agents/main/sessions/sessions.json").read_text())[DEV]
    assert {k: entry[k] for k in PREFERENCES} == PREFERENCES
    assert entry["toolOverrides"] == overrides and entry["markedUnreadAt"] > 0
    Session.objects.filter(key=DEV).delete()
    call_command("import_openclaw", str(tmp_path), stdout=StringIO(), stderr=StringIO())
    back = Session.objects.get(key=DEV).extra
    assert {k: back[k] for k in (*PREFERENCES, "unread", "markedUnreadAt", "toolOverrides")} == {
        k: kept[k] for k in (*PREFERENCES, "unread", "markedUnreadAt", "toolOverrides")
    }
