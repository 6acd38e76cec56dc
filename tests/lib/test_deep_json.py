"""Deeply nested JSON (issue 16): refused with a 400 naming the limit at the API, stored
flattened and marked when it comes from an import or a model backend."""

from __future__ import annotations

import json

import pytest

from sessions_app import store
from sessions_app.lib import jsondepth
from sessions_app.models import Message
from tests.conftest import make_session
from tests.manage.test_import_openclaw import (
    run_import,
    sessions_dir,
    write_store,
    write_transcript,
)
from tests.runs.test_openai_backend import make_turn, run

LIMIT_TEXT = "deeper than 64 levels (the limit is 64)"


def nested(depth: int) -> dict:
    value: dict = {"leaf": True}
    for _ in range(depth - 1):
        value = {"d": value}
    return value


def deep_message(depth: int = 400) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": "x", "data": nested(depth)}]}


@pytest.mark.parametrize("depth", [70, 400])
def test_rest_append_refuses_deep_messages(ingest, agents, depth):
    make_session("agent:main:main")
    response = ingest.post(
        "/api/v1/sessions/agent:main:main/messages/", {"messages": [deep_message(depth)]}
    )
    assert response.status_code == 400, response.content
    assert LIMIT_TEXT in response.json()["error"]["message"]
    assert not Message.objects.exists()


def test_a_message_under_the_limit_is_stored_as_it_is(ingest, agents):
    make_session("agent:main:main")
    message = deep_message(50)
    response = ingest.post("/api/v1/sessions/agent:main:main/messages/", {"messages": [message]})
    assert response.status_code in (200, 201), response.content
    stored = Message.objects.get()
    assert stored.content == message["content"] and "flattened" not in (stored.extra or {})


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/sessions/", {"key": "cron:x", "origin": nested(400)}),
        ("/tools/invoke", {"tool": "sessions_list", "args": nested(100)}),
        ("/api/v1/sessions/agent:main:main/send/", {"message": "hi", "x": nested(100)}),
    ],
)
def test_other_api_bodies_refuse_deep_json(operator, agents, path, body):
    response = operator.post(path, body)
    assert response.status_code == 400, response.content
    assert LIMIT_TEXT in response.json()["error"]["message"]


def test_the_limit_is_a_setting(settings, ingest, agents):
    settings.OPENCLAW_MAX_JSON_DEPTH = 8
    make_session("agent:main:main")
    response = ingest.post(
        "/api/v1/sessions/agent:main:main/messages/", {"messages": [deep_message(10)]}
    )
    assert response.status_code == 400
    assert "deeper than 8 levels (the limit is 8)" in response.json()["error"]["message"]


def test_import_stores_a_deep_message_flattened_and_marked(agents, tmp_path):
    session_id = "11111111-1111-4111-8111-111111111111"
    write_store(tmp_path, "main", {"main": {"sessionId": session_id, "updatedAt": 1}})
    write_transcript(
        sessions_dir(tmp_path, "main"),
        f"{session_id}.jsonl",
        {"type": "message", "id": "e1", "message": deep_message(400)},
        {"type": "message", "id": "e2", "message": {"role": "user", "content": "after"}},
    )
    out, _ = run_import(tmp_path)
    assert "2 messages added, 0 lines skipped" in out
    first, second = Message.objects.order_by("seq")
    assert first.extra["flattened"]["maxDepth"] == 64
    assert not jsondepth.depth_exceeds(first.to_transcript(), 64)
    assert second.content == "after"


def test_backend_output_nested_too_deep_is_stored_flattened(fake_openai, agents):
    """A model's tool call with absurdly nested arguments: the engine stores its messages with
    store.read_message, which flattens instead of failing the run."""
    fake_openai.tool_calls(("sessions_list", nested(400)))
    fake_openai.reply("done")
    output = run(make_turn(fake_openai, tools=["sessions_list"]))
    messages = [store.read_message(i, m) for i, m in enumerate(output.messages)]
    call = messages[0]
    assert call.extra["flattened"]["maxDepth"] == 64
    arguments = call.content[0]["arguments"] if call.content[0]["type"] == "toolCall" else None
    assert arguments is not None
    assert not jsondepth.depth_exceeds({"content": call.content}, 64)
    text = json.dumps(call.content)
    assert '\\"leaf\\":true' in text  # the deep part survives as JSON text


def test_flatten_is_safe_at_any_depth():
    value = {"role": "user", "content": "x"}
    deep = value
    for _ in range(5000):
        deep["d"] = {}
        deep = deep["d"]
    flat = jsondepth.flatten_message(value, 64)
    assert flat["flattened"]["maxDepth"] == 64
    assert not jsondepth.depth_exceeds(flat, 64)
