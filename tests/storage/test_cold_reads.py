"""Reading a cold transcript (9.6 §6.1 cold storage; cold_storage.ensure_hot): every reader gets
the whole transcript, restored under the row lock and then hot for 24 h; lists read it from the
file and leave it cold; a lost or corrupt archive is an explicit 503, never an empty answer."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app.models import Message, Session
from sessions_app.runs.engine import recent_messages
from sessions_app.storage import cold_storage
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user
from tests.ui.conftest import client_for, make_user


@pytest.fixture
def viewer(agents):
    return client_for(make_user("vera", group="Viewers"))


DAY_MS = 86_400_000
KEY = "agent:main:main"
TEXTS = ["first question", "first answer", "second question", "second answer"]


@pytest.fixture
def cold_dir(settings, tmp_path):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    return settings.COLD_STORAGE_DIR


def frozen(key: str = KEY, days: float = 40) -> Session:
    """A session idle `days`, its four messages (and a tool result) moved to cold storage."""
    session = make_session(key)
    add_messages(
        session,
        user(TEXTS[0]),
        assistant(TEXTS[1]),
        tool_result("ok"),
        user(TEXTS[2]),
        assistant(TEXTS[3]),
    )
    Session.objects.filter(pk=session.pk).update(updated_at=int(time.time() * 1000 - days * DAY_MS))
    assert cold_storage.freeze(session.pk)
    session.refresh_from_db()
    assert session.cold_at is not None and not session.messages.exists()
    return session


def texts(messages: list[dict]) -> list[str]:
    found = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            found.append(content)
        elif isinstance(content, list):
            found.extend(b["text"] for b in content if b.get("type") == "text")
    return [t for t in found if t in TEXTS]


def assert_hot_for_a_day(session: Session) -> None:
    session.refresh_from_db()
    assert session.cold_at is None and session.cold_file == ""
    assert session.messages.count() == session.last_seq == 5  # each message once
    left = session.hot_until - timezone.now()
    assert timedelta(hours=23) < left <= timedelta(hours=24)


# --- every reader restores -------------------------------------------------------------------


def test_sessions_history_tool_reads_the_whole_cold_transcript(
    agent_main, agents, cold_dir, django_capture_on_commit_callbacks
):
    """The tool, and so chat.history and MCP's messages_read and resources, which call it."""
    session = frozen()
    with django_capture_on_commit_callbacks(execute=True):
        details = agent_main.details("sessions_history", {"sessionKey": KEY})
    assert texts(details["messages"]) == TEXTS
    assert details["totalMessages"] == 5
    assert_hot_for_a_day(session)
    assert not list(cold_dir.iterdir())  # the file goes once the rows are back


@pytest.mark.parametrize("path", [f"/api/v1/sessions/{KEY}/history/", f"/sessions/{KEY}/history"])
def test_rest_and_openclaw_history_read_the_whole_cold_transcript(
    agent_main, agents, cold_dir, path
):
    session = frozen()
    response = agent_main.get(path, HTTP_ACCEPT="application/json")
    assert response.status_code == 200, response.content
    assert texts(response.json()["messages"]) == TEXTS
    assert_hot_for_a_day(session)


def test_transcript_exports_are_whole(operator, agents, cold_dir):
    session = frozen()
    by_key = operator.get(f"/api/v1/sessions/{KEY}/transcript.jsonl")
    assert by_key.status_code == 200
    body = b"".join(by_key.streaming_content).decode()
    assert all(text in body for text in TEXTS)
    assert_hot_for_a_day(session)
    by_id = operator.get(f"/api/v1/transcripts/{session.session_id}.jsonl")
    assert b"".join(by_id.streaming_content).decode() == body


def test_the_transcript_browser_shows_a_cold_transcript(viewer, agents, cold_dir):
    session = frozen()
    page = viewer.get(f"/sessions/{KEY}/")
    assert page.status_code == 200
    assert all(text in page.text for text in TEXTS)
    assert_hot_for_a_day(session)


def test_an_agents_turn_sees_the_cold_history(agents, cold_dir):
    session = frozen()
    assert texts(recent_messages(session, up_to=None)) == TEXTS
    assert_hot_for_a_day(session)


def test_a_hot_session_read_recently_costs_no_write(agent_main, agents, cold_dir):
    session = make_session(KEY)
    add_messages(session, user("hello"))
    session.refresh_from_db()
    before = session.changed_ms
    assert cold_storage.ensure_hot(session) is session
    session.refresh_from_db()
    assert session.hot_until is None and session.changed_ms == before


# --- lists leave it cold ---------------------------------------------------------------------


def test_sessions_list_message_limit_reads_the_file_and_leaves_it_cold(
    agent_main, agents, cold_dir
):
    session = frozen()
    row = agent_main.details("sessions_list", {"messageLimit": 3})["sessions"][0]
    # The last three transcript positions, tool result dropped afterwards (as for hot rows).
    assert texts(row["messages"]) == TEXTS[2:]
    session.refresh_from_db()
    assert session.cold_at is not None and not session.messages.exists()


def test_list_titles_and_previews_read_the_file_and_leave_it_cold(agent_main, agents, cold_dir):
    session = frozen()
    args = {"includeDerivedTitles": True, "includeLastMessage": True}
    row = agent_main.details("sessions_list", args)["sessions"][0]
    assert (row["derivedTitle"], row["lastMessagePreview"]) == (TEXTS[0], TEXTS[3])
    session.refresh_from_db()
    assert session.cold_at is not None and not session.messages.exists()


# --- a lost or corrupt archive fails explicitly ----------------------------------------------


def lose(session: Session, cold_dir, *, corrupt: bool = False) -> None:
    path = cold_dir / session.cold_file
    if corrupt:
        path.write_bytes(b"\x1f\x8bnot really gzip")
    else:
        path.unlink()


@pytest.mark.parametrize("corrupt", [False, True], ids=["missing", "corrupt"])
def test_a_lost_archive_is_an_explicit_503_everywhere(
    agent_main, operator, viewer, agents, cold_dir, corrupt
):
    session = frozen()
    lose(session, cold_dir, corrupt=corrupt)
    reason = "unreadable" if corrupt else "missing"
    text = (
        f"Transcript is in cold storage and its archive {session.cold_file} is {reason}; "
        "an operator must restore that file under COLD_STORAGE_DIR."
    )
    details = agent_main.details("sessions_history", {"sessionKey": KEY})
    assert details == {"status": "error", "error": text}
    for path in (f"/api/v1/sessions/{KEY}/history/", f"/sessions/{KEY}/history"):
        response = agent_main.get(path, HTTP_ACCEPT="application/json")
        assert response.status_code == 503, path
        assert response.json() == {
            "ok": False,
            "error": {"type": "transcript_unavailable", "message": text},
        }
        # Every 503 says when to ask again (issue 16 item 13); an operator must act first.
        assert response["Retry-After"] == "60", path
    export = operator.get(f"/api/v1/sessions/{KEY}/transcript.jsonl")
    assert export.status_code == 503 and export.json()["error"]["message"] == text
    assert export["Retry-After"] == "60"
    page = viewer.get(f"/sessions/{KEY}/")
    assert page.status_code == 503 and session.cold_file in page.text
    assert page["Retry-After"] == "60"
    listed = agent_main.details("sessions_list", {"messageLimit": 2})
    assert listed == {"status": "error", "error": text}
    session.refresh_from_db()
    assert session.cold_at is not None  # still cold, nothing half restored
    assert not Message.objects.filter(session=session).exists()


def test_the_admin_shows_a_lost_archive_as_a_message(agents, cold_dir):
    from django.contrib.auth.models import User
    from django.test import Client

    session = frozen()
    lose(session, cold_dir)
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="x"))
    page = client.get(f"/admin/sessions_app/session/{session.pk}/change/")
    assert page.status_code == 200
    assert "cold storage" in page.text and session.cold_file in page.text


def test_a_reset_takes_the_cold_file_with_the_old_transcript(
    agent_main, operator, agents, cold_dir
):
    from sessions_app.manage import session_admin

    session = frozen()
    result = session_admin.reset(session)
    session.refresh_from_db()
    assert session.cold_at is None and session.cold_file == "" and session.last_seq == 0
    fresh = agent_main.details("sessions_history", {"sessionKey": KEY})
    assert fresh["messages"] == [] and fresh["totalMessages"] == 0
    previous = Session.objects.get(session_id=result["previousSessionId"])
    assert previous.cold_at is not None
    set_config(visibility="agent")  # the old transcript is another session of the agent
    old = operator.get(f"/api/v1/transcripts/{previous.session_id}.jsonl")
    assert old.status_code == 200, old.content
    body = b"".join(old.streaming_content).decode()
    assert all(text in body for text in TEXTS), body
    assert previous.messages.count() == 5 and not session.messages.exists()
