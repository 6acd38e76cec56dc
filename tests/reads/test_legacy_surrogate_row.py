"""A row stored before the Unicode check (an older version, a hand-written import) may hold an
unpaired surrogate ("\\ud800" in its JSON text). Every way a person or a client reads it answers,
never a 500: the surrogate reads as U+FFFD, as the JSONL export and Node's Buffer do."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from sessions_app.models import Message
from tests.conftest import add_messages, assistant, user

KEY = "agent:main:main"


@pytest.fixture
def legacy(main_session):
    add_messages(main_session, user("before"), assistant("after"))
    first = Message.objects.filter(session=main_session).order_by("seq").first()
    table = Message._meta.db_table
    text = json.dumps([{"type": "text", "text": "a\\ud800b"}]).replace("\\\\ud800", "\\ud800")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # (jsonb refuses the escape itself; a text value is all PostgreSQL could hold)
            pytest.skip("PostgreSQL's jsonb never stored an unpaired surrogate")
        cursor.execute(f"UPDATE {table} SET content = %s WHERE id = %s", [text, first.pk])
    return main_session


def test_rest_history_reads_it(legacy, operator):
    response = operator.get(f"/api/v1/sessions/{KEY}/history/")
    assert response.status_code == 200, response.content[:300]
    text = json.dumps(response.json())
    assert "a\\ufffdb" in text and "after" in text


def test_the_tool_reads_it(legacy, operator):
    details = operator.details("sessions_history", {"sessionKey": KEY, "limit": 10})
    assert "after" in json.dumps(details)


def test_the_list_preview_reads_it(legacy, operator):
    details = operator.details("sessions_list", {"messageLimit": 2})
    assert any(row["key"] == KEY for row in details["sessions"])


def test_the_export_reads_it(legacy, operator):
    response = operator.get(f"/api/v1/sessions/{KEY}/transcript.jsonl")
    assert response.status_code == 200
    body = b"".join(response.streaming_content) if response.streaming else response.content
    assert all(json.loads(line) for line in body.decode().splitlines())


@pytest.mark.parametrize("path", [f"/sessions/{KEY}/", f"/sessions/{KEY}/messages/"])
def test_the_browser_reads_it(legacy, client, admin_user, path):
    client.force_login(admin_user)
    response = client.get(path)
    assert response.status_code == 200, response.status_code
    assert "a\ufffdb" in response.content.decode()


def test_the_admin_page_reads_it(legacy, client, admin_user):
    client.force_login(admin_user)
    response = client.get(f"/admin/sessions_app/session/{legacy.pk}/change/")
    assert response.status_code == 200, response.status_code
