"""transcript.jsonl never cuts its stream on a stored row (issue 28 item 3): a message nested past
orjson's 255 levels (stored before the depth limit) is written as history answers it, and so is a
row holding an unpaired surrogate (U+FFFD in its place, models/fields.py); every line parses,
under WSGI and under ASGI."""

from __future__ import annotations

import http.client
import json
from contextlib import closing
from urllib.parse import urlsplit

import pytest
from django.db import connection

from sessions_app import store
from sessions_app.models import ApiKey, Message
from tests.conftest import add_messages, assistant, make_session, user
from tests.servers import start_server

EXPORT = "/api/v1/sessions/agent%3Amain%3Amain/transcript.jsonl"


def nested(depth: int) -> dict:
    value: dict = {"leaf": True}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


def append_raw(session, content) -> None:
    """What an older version or a hand-written import let in: past read_message and the depth
    and NUL checks, so nothing flattens or refuses it."""
    message = Message(role="user", content=content)
    message.timestamp = 1
    store.append_to_session(session, [message])


def deep_session():
    session = make_session("main")
    add_messages(session, user("before"))
    append_raw(session, [{"type": "text", "text": "x", "data": nested(400)}])
    add_messages(session, assistant("after"))
    return session


def entries(body: bytes) -> list[dict]:
    lines = body.decode().splitlines()
    return [json.loads(line) for line in lines]  # every line parses, or this raises


def check_deep_export(lines: list[dict], history: list[dict]) -> None:
    header, *messages = lines
    assert header["type"] == "session"
    assert [m["message"]["role"] for m in messages] == ["user", "user", "assistant"]
    assert messages[-1]["message"]["content"] == [{"type": "text", "text": "after"}]
    # The chain holds across the deep row, and it is as history shows it, in full.
    assert [m["parentId"] for m in messages] == [None, messages[0]["id"], messages[1]["id"]]
    assert messages[1]["message"]["content"] == history[1]["content"]
    assert messages[1]["message"]["content"][0]["data"] == nested(400)


def test_a_row_past_orjsons_depth_is_exported_as_history_shows_it(operator, agents):
    deep_session()
    history = operator.get("/api/v1/sessions/agent:main:main/history/")
    assert history.status_code == 200
    response = operator.get(EXPORT)
    assert response.status_code == 200
    check_deep_export(entries(b"".join(response.streaming_content)), history.json()["messages"])


@pytest.mark.django_db(transaction=True)
def test_the_same_row_under_asgi(operator):
    deep_session()
    history = operator.get("/api/v1/sessions/agent:main:main/history/").json()["messages"]
    _, token = ApiKey.generate(scope=ApiKey.OPERATOR, name="export")
    server = start_server()
    try:
        port = urlsplit(server.url).port
        with closing(http.client.HTTPConnection("127.0.0.1", port, timeout=60)) as conn:
            conn.request("GET", EXPORT, headers={"Authorization": f"Bearer {token}"})
            response = conn.getresponse()
            assert response.status == 200
            body = response.read()  # IncompleteRead when the stream was cut
    finally:
        server.stop()
    check_deep_export(entries(body), history)


@pytest.mark.skipif(
    connection.vendor == "postgresql",
    reason="PostgreSQL cannot store an unpaired surrogate, so no such row exists there",
)
def test_a_row_with_an_unpaired_surrogate_is_written_as_history_answers_it(operator, agents):
    # SQLite keeps "\ud800" as an escape; read back it is U+FFFD, which UTF-8 can write.
    session = make_session("main")
    add_messages(session, user("before"))
    append_raw(session, [{"type": "text", "text": "half a pair \ud800"}])
    add_messages(session, assistant("after"))
    response = operator.get(EXPORT)
    assert response.status_code == 200
    _, *messages = entries(b"".join(response.streaming_content))
    assert len(messages) == 3
    bad = messages[1]
    assert bad["message"]["role"] == "user" and bad["message"]["timestamp"] == 1
    assert bad["message"]["content"] == [{"type": "text", "text": "half a pair \ufffd"}]
    assert bad["parentId"] == messages[0]["id"] and messages[2]["parentId"] == bad["id"]
    assert messages[2]["message"]["content"] == [{"type": "text", "text": "after"}]
