"""Exports mask credentials as sessions_history does (issue 16, item 3): the API's and the
browser's transcript.jsonl and the admin's export; `raw=1` for operators only (403 otherwise)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from sessions_app import transcript
from tests.conftest import add_messages, assistant, make_session, user

SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz123456"
PATH = "/api/v1/sessions/agent:main:main/transcript.jsonl"


@pytest.fixture
def leaky(agents):
    session = make_session("main")
    add_messages(
        session,
        user(f"my key is {SECRET} ok"),
        {"role": "assistant", "content": [{"type": "text", "text": f"noted: {SECRET}"}]},
        assistant("plain"),
    )
    return session


def lines(body: bytes) -> list[dict]:
    return [json.loads(line) for line in body.decode().splitlines()]


def streamed(response) -> bytes:
    assert response.status_code == 200, response
    return b"".join(response.streaming_content)


def test_export_masks_credentials_by_default(leaky):
    body = "".join(transcript.export_jsonl(leaky)).encode()
    assert b"abcdefghijklmnopqrstuvwxyz" not in body
    messages = [entry["message"] for entry in lines(body)[1:]]
    assert messages[0]["content"].startswith("my key is sk-")
    assert "plain" in json.dumps(messages[2]["content"])
    assert len(messages) == 3


def test_raw_export_keeps_the_stored_text(leaky):
    assert SECRET.encode() in "".join(transcript.export_jsonl(leaky, raw=True)).encode()


@pytest.mark.parametrize("persona", ["agent_main", "operator"])
def test_api_transcript_is_masked_for_every_key(request, leaky, persona):
    api = request.getfixturevalue(persona)
    body = streamed(api.get(PATH))
    assert b"abcdefghijklmnopqrstuvwxyz" not in body


def test_api_raw_for_an_operator_key(operator, leaky):
    assert SECRET.encode() in streamed(operator.get(PATH, {"raw": "1"}))


def test_api_raw_is_403_for_other_keys(agent_main, leaky):
    response = agent_main.get(PATH, {"raw": "1"})
    assert response.status_code == 403
    assert SECRET not in response.content.decode()
    assert "operator" in response.json()["error"]["message"]


def test_api_raw_must_be_a_boolean(operator, leaky):
    assert operator.get(PATH, {"raw": "maybe"}).status_code == 400


def browser(name: str, group: str) -> Client:
    person = User.objects.create_user(name)
    person.groups.add(Group.objects.get(name=group))
    client = Client()
    client.force_login(person)
    return client


UI_PATH = "/sessions/agent:main:main/transcript.jsonl"


def test_ui_download_is_masked_and_raw_is_for_operators(leaky):
    viewer = browser("vera", "Viewers")
    operator = browser("otto", "Operators")
    assert b"abcdefghijklmnopqrstuvwxyz" not in streamed(viewer.get(UI_PATH))
    assert b"abcdefghijklmnopqrstuvwxyz" not in streamed(operator.get(UI_PATH))
    refused = viewer.get(UI_PATH, {"raw": "1"})
    assert refused.status_code == 403 and SECRET not in refused.content.decode()
    assert SECRET.encode() in streamed(operator.get(UI_PATH, {"raw": "1"}))


def test_admin_export_is_masked(admin_client, leaky):
    url = f"/admin/sessions_app/session/{leaky.pk}/export.jsonl"
    assert b"abcdefghijklmnopqrstuvwxyz" not in streamed(admin_client.get(url))
    assert SECRET.encode() in streamed(admin_client.get(url, {"raw": "1"}))
