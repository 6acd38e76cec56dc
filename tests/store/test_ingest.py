"""Ingest: create or update sessions from sessions.json entries, append messages, PATCH (api.md §3)."""

import threading

import pytest
from django.db import connection

from sessions_app import store
from sessions_app.models import Message, Session
from tests.conftest import make_agent, make_session, user


def test_post_creates_then_updates_a_session(ingest):
    created = ingest.post(
        "/api/v1/sessions/",
        {"key": "discord:group:dev", "channel": "discord", "displayName": "#dev"},
    )
    assert created.status_code == 201
    row = created.json()
    assert (
        row["key"] == "agent:main:discord:group:dev"
        and row["kind"] == "group"
        and row["channel"] == "discord"
    )
    updated = ingest.post(
        "/api/v1/sessions/", {"key": "agent:main:discord:group:dev", "label": "dev", "updatedAt": 5}
    )
    assert updated.status_code == 200
    assert updated.json()["label"] == "dev" and updated.json()["sessionId"] == row["sessionId"]
    assert updated.json()["updatedAt"] == row["updatedAt"]  # updatedAt only moves forward
    assert Session.objects.count() == 1


def test_bare_keys_are_stored_canonically_and_found_in_either_form(ingest, operator):
    ingest.post("/api/v1/sessions/", {"key": "cron:job-1"})
    assert Session.objects.get().key == "agent:main:cron:job-1"
    assert (
        operator.get(
            "/api/v1/sessions/cron:job-1/", HTTP_X_OPENCLAW_SESSION_KEY="cron:job-1"
        ).status_code
        == 200
    )


def test_entry_fields_round_trip_including_openclaw_only_fields(ingest):
    entry = {
        "key": "agent:main:telegram:group:-100",
        "sessionId": "5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f",
        "chatType": "supergroup",
        "lastChannel": "telegram",
        "lastTo": "group:-100",
        "lastThreadId": 7,
        "inputTokens": 3,
        "outputTokens": 4,
        "skillsSnapshot": {"skills": ["x"]},
        "sendPolicy": "deny",
    }
    row = ingest.post("/api/v1/sessions/", entry).json()
    session = Session.objects.get()
    assert session.chat_type == "group" and session.extra == {"skillsSnapshot": {"skills": ["x"]}}
    assert (
        row["sessionId"] == entry["sessionId"]
        and row["sendPolicy"] == "deny"
        and row["totalTokens"] == 7
    )
    assert row["deliveryContext"] == {"channel": "telegram", "to": "group:-100", "threadId": "7"}


def test_unknown_agent_is_400(ingest):
    response = ingest.post("/api/v1/sessions/", {"key": "agent:ghost:main"})
    assert (
        response.status_code == 400
        and "agent not found: ghost" in response.json()["error"]["message"]
    )


def test_agent_key_cannot_ingest(agent_main):
    assert agent_main.post("/api/v1/sessions/", {"key": "cron:x"}).status_code == 403


def test_append_messages_allocates_seqs_and_moves_updated_at(ingest):
    session = make_session("main", updatedAt=1)
    response = ingest.post(
        "/api/v1/sessions/main/messages/",
        {
            "messages": [
                user("a"),
                {"role": "assistant", "content": [{"type": "text", "text": "b"}], "api": "x"},
            ]
        },
    )
    assert response.status_code == 201 and response.json() == {
        "appended": 2,
        "firstSeq": 1,
        "lastSeq": 2,
    }
    again = ingest.post("/api/v1/sessions/main/messages/", {"messages": [user("c")]}).json()
    assert again == {"appended": 1, "firstSeq": 3, "lastSeq": 3}
    session.refresh_from_db()
    assert session.last_seq == 3 and session.updated_at > 1
    assert Message.objects.get(seq=2).to_transcript()["api"] == "x"


def test_append_to_a_missing_session_is_404(ingest, agents):
    response = ingest.post("/api/v1/sessions/cron:nope/messages/", {"messages": [user("a")]})
    assert response.status_code == 404


def test_unknown_provenance_kinds_are_ignored(ingest):
    make_session("main")
    ingest.post(
        "/api/v1/sessions/main/messages/",
        {
            "messages": [
                user("a", provenance={"kind": "bogus"}),
                user("b", provenance={"kind": "inter_session", "sourceTool": "sessions_send"}),
            ]
        },
    )
    first, second = Message.objects.order_by("seq")
    assert first.provenance is None and second.provenance["kind"] == "inter_session"


def test_patch_sets_and_clears_the_send_policy_override(operator, agents):
    make_session("main")
    assert (
        operator.patch("/api/v1/sessions/main/", {"sendPolicy": "deny", "label": "home"}).json()[
            "sendPolicy"
        ]
        == "deny"
    )
    row = operator.patch("/api/v1/sessions/main/", {"sendPolicy": "inherit"}).json()
    assert "sendPolicy" not in row and row["label"] == "home"


def test_patch_needs_operator_or_ingest(agent_main):
    make_session("main")
    assert agent_main.patch("/api/v1/sessions/main/", {"label": "x"}).status_code == 403


def test_set_send_policy_is_the_shared_entry_point(agents):
    session = make_session("main")
    assert store.set_send_policy(session=session, policy="allow").send_policy == "allow"
    assert store.set_send_policy(session=session, policy=None).send_policy == ""


@pytest.mark.django_db(transaction=True)
def test_concurrent_appends_get_contiguous_unique_seqs():
    make_agent("main")
    session = make_session("main")
    errors = []

    def writer(n):
        try:
            for i in range(5):
                store.append_to_session(
                    session, store.read_messages([user(f"{n}-{i}"), user(f"{n}-{i}b")])
                )
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    seqs = list(
        Message.objects.filter(session=session).order_by("seq").values_list("seq", flat=True)
    )
    assert seqs == list(range(1, 81))
    session.refresh_from_db()
    assert session.last_seq == 80


def test_session_ids_may_be_any_openclaw_shaped_id(ingest, agent_main):
    ingest.post("/api/v1/sessions/", {"key": "main", "sessionId": "Legacy-Session.01"})
    ingest.post(
        "/api/v1/sessions/", {"key": "cron:x", "sessionId": "5D0C3A52-8F1E-4C7E-9A8E-1F2B3C4D5E6F"}
    )
    assert (
        Session.objects.get(key="agent:main:cron:x").session_id
        == "5d0c3a52-8f1e-4c7e-9a8e-1f2b3c4d5e6f"
    )
    details = agent_main.details("sessions_history", {"sessionKey": "Legacy-Session.01"})
    assert details["sessionKey"] == "agent:main:main"
