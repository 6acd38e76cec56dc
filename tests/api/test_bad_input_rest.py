"""Bad input to the REST resources under /api/v1/ (api.md §3).

Every malformed request is a 4xx {"ok": false, "error": {"type", "message"}} whose message names
the parameter, never a 500, and writes nothing. Tables are checked case by case inside one test
per endpoint and field group (a test per value made the file slow); all mismatches are reported
together.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import Client

from openclaw_common.errors import Unauthenticated
from sessions_app.models import ApiKey, Message, Session
from tests.conftest import Api, add_messages, make_session, set_config, tool_result, user
from tests.tools.test_bad_input_tools import assert_error, check_all

BIG = 2**53
MAIN = "/api/v1/sessions/agent:main:main"
GROUP_KEY = "agent:main:discord:group:dev"
GROUP = f"/api/v1/sessions/{GROUP_KEY}"
CALL = {"name": "sessions_list", "arguments": {}}


@pytest.fixture
def world(chat_sessions):
    # A tool result too (a message appended here is seq 4), and the group labelled.
    add_messages(chat_sessions, tool_result("ok"))
    make_session("discord:group:dev", label="dev")
    return chat_sessions


@pytest.fixture(scope="module")
def oversized_body() -> bytes:
    """Valid JSON one byte past DATA_UPLOAD_MAX_MEMORY_SIZE, built once for the module."""
    head, tail = b'{"label": "', b'"}'
    return head + b"x" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1 - len(head) - len(tail)) + tail


def send(api: Api, method: str, path: str, body=None, **headers):
    if method == "get":
        return api.get(path, body, **headers)
    return getattr(api, method)(path, b"" if body is None else body, **headers)


def expect_errors(api, method, path, cases, *, status=400, error_type="invalid_request", **headers):
    """Each (body or query, expected text) gets `status` with the text in its message; no writes."""
    check_all(
        lambda body: send(api, method, path, body, **headers),
        cases,
        status=status,
        error_type=error_type,
        writes=method != "get",
    )


# --- the body as a whole, on every endpoint that takes one --------------------------------------

WRITES = [
    pytest.param("post", "/api/v1/sessions/", "key", id="sessions-post"),
    pytest.param("patch", f"{MAIN}/", "label", id="session-patch"),
    pytest.param("post", f"{MAIN}/messages/", "messages", id="messages-post"),
    pytest.param("put", "/api/v1/agents/main/", "name", id="agent-put"),
    pytest.param("patch", "/api/v1/config/", "session.mainKey", id="config-patch"),
]


def malformed_bodies(field: str) -> list:
    """Bodies no endpoint accepts; `field` is a string field of that endpoint."""
    if field == "messages":
        nul = {"messages": [{"role": "user", "content": "a\x00b"}]}
        surrogate = {"messages": [{"role": "user", "content": "\ud800"}]}
        where = "messages[0].content"
    else:
        nul, surrogate, where = {field: "a\x00b"}, {field: "\udc00"}, field
    return [
        (b"", "request body is empty"),
        (b"{", "request body is not valid JSON"),
        (b'{"a": 1,}', "request body is not valid JSON"),
        (b"{'a': 1}", "request body is not valid JSON"),
        (b"{} []", "request body is not valid JSON"),
        (b"\xef\xbb\xbf{}", "request body is not valid JSON"),
        (b"[" * 50_000 + b"]" * 50_000, "request body is not valid JSON"),
        (b'{"a": ' + b"7" * 5000 + b"}", "request body is not valid JSON"),
        (b'{"a": NaN}', "NaN is not JSON"),
        (b'{"a": Infinity}', "Infinity is not JSON"),
        (b'{"a": -Infinity}', "-Infinity is not JSON"),
        (b"\xff\xfe", "request body is not valid UTF-8"),
        (b'{"a": "\xe9"}', "request body is not valid UTF-8"),
        ('{"a": 1}'.encode("utf-16"), "request body is not valid UTF-8"),
        ([], "JSON object"),
        ([{field: "x"}], "JSON object"),
        ("x", "JSON object"),
        (42, "JSON object"),
        (None, "JSON object"),
        (True, "JSON object"),
        (nul, f"{where} must not contain NUL characters"),
        (surrogate, f"{where} is not valid Unicode"),
        ({"a\x00": 1}, "must not contain NUL characters"),
    ]


def _json(value):
    """Api.post/patch/put send str and bytes as they are; anything else as JSON."""
    return value if isinstance(value, bytes) else json.dumps(value)


@pytest.mark.parametrize(("method", "path", "field"), WRITES)
def test_malformed_body_is_400(operator, world, method, path, field):
    cases = [(_json(body), expected) for body, expected in malformed_bodies(field)]
    expect_errors(operator, method, path, cases)


@pytest.mark.parametrize(("method", "path", "field"), WRITES)
def test_oversized_body_is_413(operator, world, oversized_body, method, path, field):
    expect_errors(
        operator,
        method,
        path,
        [(oversized_body, ("request body", "limit"))],
        status=413,
        error_type="payload_too_large",
    )


@pytest.mark.parametrize(("method", "path", "field"), WRITES)
def test_body_that_is_not_json_is_415(operator, world, method, path, field):
    call = getattr(operator.client, method)
    content_types = [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "",
    ]
    check_all(
        lambda content_type: call(
            path, '{"a": 1}', content_type=content_type, **operator.headers()
        ),
        [(content_type, "media type") for content_type in content_types],
        status=415,
        error_type="unsupported_media_type",
        writes=True,
    )


# --- POST /api/v1/sessions/ (ingest) ---------------------------------------------------------

SESSION_KEY_CASES = [
    ({}, "key must be a string"),
    ({"label": "x"}, "key must be a string"),
    ({"key": None}, "key must be a string"),
    ({"key": 42}, "key must be a string"),
    ({"key": ["agent:main:x"]}, "key must be a string"),
    ({"key": {"id": "x"}}, "key must be a string"),
    ({"key": True}, "key must be a string"),
    ({"key": ""}, "key: session key must not be empty"),
    ({"key": "   "}, "key: session key must not be empty"),
    ({"key": "agent::"}, "key: malformed agent session key"),
    ({"key": "agent:main"}, "key: malformed agent session key"),
    ({"key": "agent:Bad Id:x"}, "key: malformed agent id"),
    ({"key": "agent:main:a\x01b"}, "key: session key must not contain control characters"),
    ({"key": "agent:main:a\x7fb"}, "key: session key must not contain control characters"),
    ({"key": "agent:main:" + "x" * 510}, "key: session key is longer than 512"),
    # A bare key gains its `agent:main:` prefix: 510 characters become 521.
    ({"key": "cron:" + "x" * 505}, "key: session key is longer than 512 characters once stored"),
    ({"key": "agent:ghost:main"}, "agent not found: ghost"),
    ({"key": GROUP_KEY, "foo": 1}, "Unknown field: foo"),
    ({"key": GROUP_KEY, "Label": "x"}, "Unknown field: Label"),
    ({"key": GROUP_KEY, "messages": []}, "Unknown field: messages"),
    ({"key": GROUP_KEY, "b": 1, "a": 2}, "Unknown field: a, b"),
]


def test_session_post_bad_key_or_unknown_field(operator, world):
    expect_errors(operator, "post", "/api/v1/sessions/", SESSION_KEY_CASES)


STRING_FIELD_LIMITS = {
    # OpenClaw name: the column's max_length (a longer value is a PostgreSQL DataError)
    "label": 200,
    "displayName": 300,
    "subject": 300,
    "channel": 64,
    "lastChannel": 64,
    "lastTo": 300,
    "lastAccountId": 200,
    "model": 200,
    "modelProvider": 100,
    "thinkingLevel": 32,
    "verboseLevel": 32,
    "reasoningLevel": 32,
}
INTEGER_FIELDS = ("contextTokens", "inputTokens", "outputTokens", "totalTokens", "updatedAt")


def _entry_field_cases():
    cases = []
    for name, limit in STRING_FIELD_LIMITS.items():
        cases += [
            ({name: 42}, f"{name} must be a string"),
            ({name: ["x"]}, f"{name} must be a string"),
            ({name: {"x": 1}}, f"{name} must be a string"),
            ({name: True}, f"{name} must be a string"),
            ({name: "x" * (limit + 1)}, f"{name} must be at most {limit} characters"),
            ({name: "a\x00b"}, f"{name} must not contain NUL characters"),
        ]
    for name in INTEGER_FIELDS:
        for value in (-1, -0.5, 1.5, "5", "", True, False, [], {}, [1]):
            cases.append(({name: value}, name))
        cases += [
            ({name: BIG}, f"{name} must be at most 9007199254740991"),
            ({name: 2**64}, f"{name} must be at most"),
            ({name: 10**400}, f"{name} must be at most"),
            (b'{"key": "%s", "%s": 1e999}' % (GROUP_KEY.encode(), name.encode()), name),
        ]
    for name in ("systemSent", "abortedLastRun"):
        for value in ("true", 1, 0, [], {}):
            cases.append(({name: value}, f"{name} must be a boolean"))
    for name in ("deliveryContext", "origin"):
        for value in ([], "discord", 1, True, [{"channel": "x"}]):
            cases.append(({name: value}, f"{name} must be an object"))
    cases += [
        ({"origin": {"label": "a\x00"}}, "origin.label must not contain NUL characters"),
        ({"origin": {"p": ["\ud800"]}}, "origin.p[0] is not valid Unicode"),
        ({"deliveryContext": {"to": "\x00"}}, "deliveryContext.to must not contain NUL"),
        ({"groupId": "a\x00"}, "groupId must not contain NUL"),  # a passthrough field
        ({"chatType": 42}, "chatType must be a string"),
        ({"chatType": "room"}, 'chatType must be "direct", "group" or "channel"'),
        ({"chatType": ["group"]}, "chatType must be a string"),
        ({"chatType": "x" * 3000}, "chatType must be at most"),
        ({"lastThreadId": []}, "lastThreadId must be a string or a number"),
        ({"lastThreadId": {}}, "lastThreadId must be a string or a number"),
        ({"lastThreadId": True}, "lastThreadId must be a string or a number"),
        ({"lastThreadId": "x" * 201}, "lastThreadId must be at most 200 characters"),
        ({"lastThreadId": 10**300}, "lastThreadId must be at most 200 characters"),
        (b'{"key": "%s", "lastThreadId": 1e999}' % GROUP_KEY.encode(), "lastThreadId must be"),
        ({"sendPolicy": "maybe"}, "sendPolicy must be"),
        ({"sendPolicy": 1}, "sendPolicy must be"),
        ({"sendPolicy": True}, "sendPolicy must be"),
        ({"sendPolicy": ["deny"]}, "sendPolicy must be"),
        ({"spawnedBy": 42}, "spawnedBy must be a string"),
        ({"spawnedBy": False}, "spawnedBy must be a string"),
        ({"spawnedBy": 0}, "spawnedBy must be a string"),
        ({"spawnedBy": []}, "spawnedBy must be a string"),
        ({"spawnedBy": {}}, "spawnedBy must be a string"),
        ({"spawnedBy": "agent::"}, "spawnedBy: malformed agent session key"),
        ({"spawnedBy": "agent:main:\x02"}, "spawnedBy: session key must not contain control"),
        ({"spawnedBy": "cron:" + "x" * 505}, "spawnedBy: session key is longer than 512"),
        ({"spawnDepth": -1}, "spawnDepth must be a non-negative integer"),
        ({"spawnDepth": 33}, "spawnDepth must be at most 32"),
        ({"spawnDepth": 1.5}, "spawnDepth must be a non-negative integer"),
        ({"spawnDepth": "1"}, "spawnDepth must be a non-negative integer"),
        ({"spawnDepth": True}, "spawnDepth must be a non-negative integer"),
        ({"sessionId": "not a uuid!"}, "sessionId must be a UUID"),
        ({"sessionId": "../escape"}, "sessionId must be a UUID"),
        ({"sessionId": "x" * 129}, "sessionId must be a UUID"),
        ({"sessionId": 42}, "sessionId must be a UUID"),
        ({"sessionId": ""}, "sessionId must be a UUID"),
        ({"sessionId": ["x"]}, "sessionId must be a UUID"),
        ({"sessionId": {"id": 1}}, "sessionId must be a UUID"),
    ]
    return cases


def test_session_post_bad_field(operator, world):
    # Against an existing session: a refused update leaves every column as it was.
    cases = [
        (body if isinstance(body, bytes) else {"key": GROUP_KEY, **body}, expected)
        for body, expected in _entry_field_cases()
    ]
    expect_errors(operator, "post", "/api/v1/sessions/", cases)


def test_session_post_session_id_of_another_session(operator, world):
    taken = str(Session.objects.get(key="agent:main:main").session_id)
    cases = [
        ({"key": GROUP_KEY, "sessionId": taken}, "sessionId is already used by another session"),
        ({"key": "agent:main:new", "sessionId": taken}, "sessionId is already used"),
    ]
    expect_errors(operator, "post", "/api/v1/sessions/", cases)


def test_session_post_lenient_values_are_accepted(operator, world):
    # Whole floats are integers, null clears a field, bare keys are stored canonically.
    response = operator.post(
        "/api/v1/sessions/",
        {
            "key": "cron:job-1",
            "contextTokens": 12.0,
            "label": None,
            "sendPolicy": "inherit",
            "spawnedBy": "",
            "lastThreadId": 17,
        },
    )
    assert response.status_code == 201, response.content
    session = Session.objects.get(key="agent:main:cron:job-1")
    assert (session.context_tokens, session.label, session.send_policy) == (12, "", "")
    assert session.last_thread_id == "17"


# --- PATCH /api/v1/sessions/{key}/ -----------------------------------------------------------

PATCH_LIMITS = {
    "label": 200,
    "displayName": 300,
    "model": 200,
    "thinkingLevel": 32,
    "verboseLevel": 32,
    "reasoningLevel": 32,
}


def _patch_cases():
    cases = [
        ({}, "body must be a non-empty JSON object"),
        ({"foo": 1}, "Unknown field: foo"),
        ({"label": "ok", "foo": 1}, "Unknown field: foo"),
        ({"contextTokens": 5}, "Unknown field: contextTokens"),  # ingest-only, not patchable
        ({"key": "agent:main:other"}, "Unknown field: key"),
        ({"sendPolicy": "maybe"}, "sendPolicy must be"),
        ({"sendPolicy": 0}, "sendPolicy must be"),
        ({"sendPolicy": False}, "sendPolicy must be"),
        ({"sendPolicy": {"action": "deny"}}, "sendPolicy must be"),
        # All or nothing: a good field next to a bad one is not applied.
        ({"label": "renamed", "model": 42}, "model must be a string"),
        ({"label": "renamed", "sendPolicy": "nope"}, "sendPolicy must be"),
    ]
    for name, limit in PATCH_LIMITS.items():
        cases += [
            ({name: 42}, f"{name} must be a string"),
            ({name: []}, f"{name} must be a string"),
            ({name: {}}, f"{name} must be a string"),
            ({name: False}, f"{name} must be a string"),
            ({name: 1.5}, f"{name} must be a string"),
            ({name: "x" * (limit + 1)}, f"{name} must be at most {limit} characters"),
            ({name: "a\x00"}, f"{name} must not contain NUL characters"),
        ]
    return cases


def test_session_patch_bad_field(operator, world):
    expect_errors(operator, "patch", f"{MAIN}/", _patch_cases())


def test_session_patch_unknown_session_is_404(operator, world):
    expect_errors(
        operator,
        "patch",
        "/api/v1/sessions/agent:main:nope/",
        [({"label": "x"}, "Session not found: agent:main:nope")],
        status=404,
        error_type="not_found",
    )


MALFORMED_PATH_KEYS = [
    ("agent::", "malformed agent session key"),
    ("agent:main", "malformed agent session key"),
    ("agent:Bad%20Id:x", "malformed agent id"),
    ("agent:main:a%01b", "must not contain control characters"),
    ("agent:main:a%00b", "must not contain control characters"),
    ("%20", "must not be empty"),
    ("x" * 600, "longer than 512"),
]


@pytest.mark.parametrize(
    ("method", "suffix", "body"),
    [
        ("patch", "/", {"label": "x"}),
        ("post", "/messages/", {"messages": [{"role": "user", "content": "x"}]}),
    ],
)
def test_write_to_a_malformed_key_is_400(operator, world, method, suffix, body):
    check_all(
        lambda key: send(operator, method, f"/api/v1/sessions/{key}{suffix}", body),
        [(key, ("key: ", expected)) for key, expected in MALFORMED_PATH_KEYS],
        error_type="invalid_request",
        writes=True,
    )


# --- POST /api/v1/sessions/{key}/messages/ (ingest) ------------------------------------------


def _message_cases():
    ok = {"role": "user", "content": "fine"}

    def one(**message):
        return {"messages": [message]}

    return [
        ({"run": False}, "messages must be a non-empty array"),
        ({"messages": []}, "messages must be a non-empty array"),
        ({"messages": None}, "messages must be a non-empty array"),
        ({"messages": "hello"}, "messages must be a non-empty array"),
        ({"messages": ok}, "messages must be a non-empty array"),
        ({"messages": 3}, "messages must be a non-empty array"),
        ({"messages": [ok] * 1001}, "messages must have at most 1000 items"),
        ({"messages": [ok], "foo": 1}, "Unknown field: foo"),
        ({"messages": [ok], "sessionKey": "main"}, "Unknown field: sessionKey"),
        ({"messages": [ok], "run": "yes"}, "run must be a boolean"),
        ({"messages": [ok], "run": 1}, "run must be a boolean"),
        ({"messages": [ok], "run": None}, "run must be a boolean"),
        ({"messages": ["hello"]}, "messages[0] must be an object"),
        ({"messages": [42]}, "messages[0] must be an object"),
        ({"messages": [[ok]]}, "messages[0] must be an object"),
        ({"messages": [None]}, "messages[0] must be an object"),
        ({"messages": [{"content": "x"}]}, "messages[0].role must be one of"),
        (one(role="robot", content="x"), "messages[0].role must be one of"),
        (one(role="User", content="x"), "messages[0].role must be one of"),
        (one(role=1, content="x"), "messages[0].role must be one of"),
        (one(role=["user"], content="x"), "messages[0].role must be one of"),
        (one(role="user", content=42), "messages[0].content must be a string or an array"),
        (one(role="user", content={"text": "x"}), "messages[0].content must be"),
        (one(role="user", content=True), "messages[0].content must be"),
        (one(role="user", content=["x"]), "messages[0].content must be"),
        (one(role="user", content=[{"text": "x"}]), "messages[0].content must be"),
        (one(role="user", content=[{"type": 1}]), "messages[0].content must be"),
        (one(role="user", content="a\x00b"), "messages[0].content must not contain NUL"),
        (
            one(role="user", content=[{"type": "text", "text": "a\x00"}]),
            "messages[0].content[0].text must not contain NUL",
        ),
        (one(role="user", content="x", timestamp=-1), "messages[0].timestamp"),
        (one(role="user", content="x", timestamp=1.5), "messages[0].timestamp"),
        (one(role="user", content="x", timestamp="now"), "messages[0].timestamp"),
        (one(role="user", content="x", timestamp=True), "messages[0].timestamp"),
        (one(role="user", content="x", timestamp=[1]), "messages[0].timestamp"),
        (one(role="user", content="x", timestamp=BIG), "messages[0].timestamp must be at most"),
        (one(role="user", content="x", provenance="inter_session"), "messages[0].provenance"),
        (one(role="user", content="x", provenance=[]), "messages[0].provenance"),
        (one(role="user", content="x", toolCallId=42), "messages[0].toolCallId must be a string"),
        (one(role="user", content="x", toolCallId="x" * 201), "messages[0].toolCallId must be"),
        (one(role="user", content="x", toolName=["exec"]), "messages[0].toolName must be"),
        (one(role="user", content="x", toolName="a\x00"), "messages[0].toolName must not"),
        (one(role="user", content="x", usage="lots"), "messages[0].usage must be an object"),
        (one(role="user", content="x", usage=[1]), "messages[0].usage must be an object"),
        (one(role="user", content="x", meta={"k": "\ud800"}), "messages[0].meta.k is not valid"),
        # One bad message refuses the batch: nothing is appended, no seq is used up.
        ({"messages": [ok, ok, {"role": "robot"}]}, "messages[2].role"),
        ({"messages": [ok, {"role": "user", "content": 5}]}, "messages[1].content"),
        (
            b'{"messages": [{"role": "user", "content": "x", "timestamp": 1e999}]}',
            "messages[0].timestamp",
        ),
    ]


def test_messages_post_bad_body(operator, world):
    expect_errors(operator, "post", f"{MAIN}/messages/", _message_cases())


def test_messages_post_unknown_session_is_404(operator, world):
    body = {"messages": [{"role": "user", "content": "x"}]}
    expect_errors(
        operator,
        "post",
        "/api/v1/sessions/agent:main:nope/messages/",
        [(body, "Session not found: agent:main:nope")],
        status=404,
        error_type="not_found",
    )


def test_messages_keep_unknown_fields(operator, world):
    # api.md §3: unknown fields of a transcript message are kept as they are, not refused.
    body = {"messages": [{"role": "user", "content": "x", "senderName": "Ann", "x": [1]}]}
    response = operator.post(f"{MAIN}/messages/", body)
    assert response.status_code == 201, response.content
    message = Message.objects.get(session__key="agent:main:main", seq=4)
    assert message.extra == {"senderName": "Ann", "x": [1]}


# --- PUT /api/v1/agents/{id}/ (operator) -----------------------------------------------------


def test_agent_put_bad_id(operator, world):
    cases = [
        ("Bad%20Id", "agent id must be lowercase letters, digits, - and _ (try bad-id)"),
        ("MAIN", "agent id must be lowercase"),
        ("a.b", "agent id must be lowercase"),
        ("-x", "agent id must be lowercase"),
        ("%00", "agent id must be lowercase"),
        ("%20", "agent id must be a non-empty string"),
        ("x" * 65, "agent id must be a non-empty string of at most 64 characters"),
    ]
    check_all(
        lambda agent_id: operator.put(f"/api/v1/agents/{agent_id}/", {"name": "x"}),
        cases,
        error_type="invalid_request",
        writes=True,
    )


AGENT_CASES = [
    ({"foo": 1}, "Unknown field: foo"),
    ({"allowAgents": ["x"]}, "Unknown field: allowAgents"),
    ({"id": "main"}, "Unknown field: id"),
    ({"name": 42}, "name must be a string of at most 200 characters"),
    ({"name": ["x"]}, "name must be a string"),
    ({"name": "x" * 201}, "name must be a string of at most 200 characters"),
    ({"name": "a\x00"}, "name must not contain NUL"),
    ({"description": {}}, "description must be a string"),
    ({"description": "x" * 5001}, "description must be a string of at most 5000 characters"),
    ({"model": True}, "model must be a string"),
    ({"model": "x" * 201}, "model must be a string of at most 200"),
    ({"backend": "scripted"}, "backend must be an object"),
    ({"backend": []}, "backend must be an object"),
    ({"backend": 1}, "backend must be an object"),
    ({"backend": {}}, "backend.type must be"),
    ({"backend": {"type": "bogus"}}, "backend.type must be"),
    ({"backend": {"type": ["scripted"]}}, "backend.type must be"),
    ({"backend": {"type": "scripted", "foo": 1}}, "Unknown field in backend: foo"),
    ({"backend": {"type": "scripted", "rules": "x"}}, "backend.rules must be an array"),
    ({"backend": {"type": "scripted", "rules": {}}}, "backend.rules must be an array"),
    ({"backend": {"type": "scripted", "rules": [{"match": "a"}] * 201}}, "backend.rules"),
    ({"backend": {"type": "scripted", "rules": ["hi"]}}, "backend.rules[0].match"),
    ({"backend": {"type": "scripted", "rules": [{}]}}, "backend.rules[0].match"),
    ({"backend": {"type": "scripted", "rules": [{"match": 1}]}}, "backend.rules[0].match"),
    ({"backend": {"type": "scripted", "rules": [{"match": "("}]}}, "not a valid regex"),
    (
        {"backend": {"type": "scripted", "rules": [{"match": "a"}, {"match": "a", "reply": 1}]}},
        "backend.rules[1].reply must be a string",
    ),
    (
        {"backend": {"type": "scripted", "rules": [{"match": "a", "toolCalls": [CALL] * 101}]}},
        "backend.rules[0].toolCalls must be an array of at most 100 calls",
    ),
    ({"backend": {"type": "scripted", "delayMs": -1}}, "backend.delayMs"),
    ({"backend": {"type": "scripted", "delayMs": "5"}}, "backend.delayMs"),
    ({"backend": {"type": "scripted", "delayMs": 1.5}}, "backend.delayMs"),
    ({"backend": {"type": "scripted", "delayMs": True}}, "backend.delayMs"),
    ({"backend": {"type": "scripted", "delayMs": 600_001}}, "backend.delayMs"),
    ({"backend": {"type": "scripted", "delayMs": BIG}}, "backend.delayMs"),
    ({"backend": {"type": "openai", "model": "m"}}, "backend.baseUrl is required"),
    ({"backend": {"type": "openai", "baseUrl": "http://x"}}, "backend.model is required"),
    ({"backend": {"type": "openai", "baseUrl": 1, "model": "m"}}, "backend.baseUrl"),
    ({"backend": {"type": "openai", "baseUrl": "ftp://x", "model": "m"}}, "backend.baseUrl"),
    ({"backend": {"type": "openai", "baseUrl": "http://", "model": "m"}}, "backend.baseUrl"),
    (
        {"backend": {"type": "openai", "baseUrl": "http://x", "model": "m", "apiKeyEnv": "1X"}},
        "backend.apiKeyEnv",
    ),
    (
        {"backend": {"type": "openai", "baseUrl": "http://x", "model": "m", "apiKeyEnv": 5}},
        "backend.apiKeyEnv",
    ),
    (
        {"backend": {"type": "openai", "baseUrl": "http://x", "model": "m", "apiKey": "sk"}},
        "Unknown field in backend: apiKey",
    ),
    ({"subagents": "research"}, "subagents must be an object"),
    ({"subagents": ["research"]}, "subagents must be an object"),
    ({"subagents": {"allow": ["x"]}}, "subagents must be an object with only"),
    ({"subagents": {"allowAgents": "research"}}, "subagents.allowAgents must be an array"),
    ({"subagents": {"allowAgents": [1]}}, "subagents.allowAgents must be an array"),
    ({"subagents": {"allowAgents": [""]}}, "subagents.allowAgents must be an array"),
    ({"subagents": {"allowAgents": [None]}}, "subagents.allowAgents"),
    ({"subagents": {"allowAgents": ["a"] * 201}}, "subagents.allowAgents must have at most"),
    ({"sandboxed": "yes"}, "sandboxed must be a boolean"),
    ({"sandboxed": 1}, "sandboxed must be a boolean"),
    ({"sandboxed": None}, "sandboxed must be a boolean"),
    ({"sandboxed": []}, "sandboxed must be a boolean"),
    ({"tools": "exec"}, "tools must be an object"),
    ({"tools": {"only": []}}, "tools must be an object"),
    ({"tools": {"allow": "exec"}}, "tools.allow must be an array"),
    ({"tools": {"allow": [1]}}, "tools.allow must be an array"),
    ({"tools": {"deny": [{}]}}, "tools.deny must be an array"),
    ({"tools": {"deny": ["a\x00"]}}, "tools.deny[0] must not contain NUL"),
    # All or nothing: a good field next to a bad one is not applied.
    ({"name": "Renamed", "sandboxed": "no"}, "sandboxed must be a boolean"),
]


@pytest.mark.parametrize("agent_id", ["main", "newbie"])
def test_agent_put_bad_body(operator, world, agent_id):
    # "main" exists (a refused update keeps it as it was); "newbie" does not (none is created).
    expect_errors(operator, "put", f"/api/v1/agents/{agent_id}/", AGENT_CASES)


# --- PATCH /api/v1/config/ (operator) --------------------------------------------------------

CONFIG_CASES = [
    ({}, "body must be a non-empty JSON object of settings"),
    ({"foo": 1}, "Unknown setting: foo"),
    ({"tools.sessions.Visibility": "all"}, "Unknown setting: tools.sessions.Visibility"),
    ({"tools": {"sessions": {"visibility": "all"}}}, "Unknown setting: tools"),
    ({"session.scope": "both"}, "session.scope must be one of per-sender, global"),
    ({"session.scope": 1}, "session.scope must be one of"),
    ({"tools.sessions.visibility": "everyone"}, "tools.sessions.visibility must be one of"),
    ({"tools.sessions.visibility": ["all"]}, "tools.sessions.visibility must be one of"),
    ({"agents.defaults.sandbox.sessionToolsVisibility": "tree"}, "sessionToolsVisibility"),
    ({"tools.agentToAgent.enabled": "true"}, "tools.agentToAgent.enabled must be a boolean"),
    ({"tools.agentToAgent.enabled": 1}, "tools.agentToAgent.enabled must be a boolean"),
    ({"tools.agentToAgent.allow": "*"}, "tools.agentToAgent.allow must be an array"),
    ({"tools.agentToAgent.allow": [1]}, "tools.agentToAgent.allow must be an array"),
    ({"tools.agentToAgent.allow": [""]}, "tools.agentToAgent.allow must be an array"),
    ({"tools.agentToAgent.allow": ["x" * 65]}, "tools.agentToAgent.allow must have at most"),
    ({"tools.agentToAgent.allow": ["a"] * 101}, "tools.agentToAgent.allow must have at most"),
    ({"tools.agentToAgent.allow": ["a\x00"]}, "tools.agentToAgent.allow[0] must not contain"),
    ({"session.mainKey": ""}, "session.mainKey must be a non-empty string"),
    ({"session.mainKey": "   "}, "session.mainKey must be a non-empty string"),
    ({"session.mainKey": 42}, "session.mainKey must be a non-empty string"),
    ({"session.mainKey": "x" * 65}, "session.mainKey must be a non-empty string of at most 64"),
    ({"session.mainKey": "a\x01b"}, "session.mainKey must not contain control characters"),
    ({"session.mainKey": "a\nb"}, "session.mainKey must not contain control characters"),
    ({"agents.defaultAgentId": ["main"]}, "agents.defaultAgentId must be a non-empty string"),
    ({"agents.defaultAgentId": "a\tb"}, "agents.defaultAgentId must not contain control"),
    # All or nothing: the good setting next to the bad one is not applied.
    (
        {"tools.sessions.visibility": "all", "session.agentToAgent.maxPingPongTurns": 99},
        "session.agentToAgent.maxPingPongTurns must be between 0 and 5",
    ),
    (
        {"session.mainKey": "home", "tools.agentToAgent.enabled": "yes"},
        "tools.agentToAgent.enabled must be a boolean",
    ),
]
CONFIG_INTEGERS = {
    "session.agentToAgent.maxPingPongTurns": (0, 5),
    "agents.defaults.subagents.archiveAfterMinutes": (0, 525_600),
    "agents.defaults.subagents.maxSpawnDepth": (1, 5),
    "agents.defaults.subagents.maxChildrenPerAgent": (1, 100),
    "tools.sessions_spawn.attachments.maxTotalBytes": (0, 64 * 1024 * 1024),
    "tools.sessions_spawn.attachments.maxFiles": (0, 1000),
    "tools.sessions_spawn.attachments.maxFileBytes": (0, 64 * 1024 * 1024),
    "session.agentToAgent.maxChainTurns": (1, 1000),
}


def _config_integer_cases():
    cases = []
    for path, (low, high) in CONFIG_INTEGERS.items():
        # (null is not here: it resets the setting, test_send_policy_api.py)
        for value in ("2", True, False, 1.5, 2.0, [], {}):
            cases.append(({path: value}, f"{path} must be an integer"))
        for value in (low - 1, high + 1, -1, BIG, 10**30):
            cases.append(({path: value}, f"{path} must be between {low} and {high}"))
        cases.append((b'{"%s": 1e999}' % path.encode(), f"{path} must be an integer"))
    return cases


def test_config_patch_bad_setting(operator, world):
    expect_errors(operator, "patch", "/api/v1/config/", CONFIG_CASES)


def test_config_patch_bad_integer(operator, world):
    expect_errors(operator, "patch", "/api/v1/config/", _config_integer_cases())


# --- query parameters on GET endpoints -----------------------------------------------------

LIST_QUERY_CASES = [
    ({"limit": "abc"}, "limit must be a positive integer"),
    ({"limit": ""}, "limit must be a positive integer"),
    ({"limit": "0"}, "limit must be a positive integer"),
    ({"limit": "-1"}, "limit must be a positive integer"),
    ({"limit": "--1"}, "limit must be a positive integer"),
    ({"limit": "1.5"}, "limit must be a positive integer"),
    ({"limit": "1e3"}, "limit must be a positive integer"),
    ({"limit": "²"}, "limit must be a positive integer"),
    ({"limit": "true"}, "limit must be a positive integer"),
    ({"limit": str(BIG)}, "limit must be at most 9007199254740991"),
    ({"limit": "9" * 5000}, "limit must be a"),
    ({"limit": ["1", "2"]}, "limit must be given once"),
    ({"offset": "-1"}, "offset must be a non-negative integer"),
    ({"offset": "x"}, "offset must be a non-negative integer"),
    ({"offset": str(BIG)}, "offset must be at most"),
    ({"activeMinutes": "1e999"}, "activeMinutes must be at most 9007199254740991"),
    # Issue 17.6: a number past the bound says so, whatever its notation.
    ({"limit": "1e25"}, "limit must be at most 9007199254740991"),
    ({"limit": "9" * 25}, "limit must be at most 9007199254740991"),
    ({"activeMinutes": "0"}, "activeMinutes must be a positive integer"),
    ({"activeMinutes": "Infinity"}, "activeMinutes must be a positive integer"),
    ({"activeMinutes": "NaN"}, "activeMinutes must be a positive integer"),
    ({"messageLimit": "-1"}, "messageLimit must be a non-negative integer"),
    ({"messageLimit": "many"}, "messageLimit must be a non-negative integer"),
    ({"archived": "maybe"}, 'archived must be true, false or "all"'),
    ({"archived": "2"}, "archived must be"),
    ({"archived": ""}, "archived must be"),
    ({"agentId": "x" * 65}, "agentId must be at most 64 characters"),
    ({"label": "x" * 201}, "label must be at most 200 characters"),
    ({"label": "a\x00b"}, "label must not contain NUL characters"),
    ({"search": "x" * 201}, "search must be at most 200 characters"),
    ({"kinds": ["main"] * 51}, "kinds must have at most 50 items"),
    ({"kinds": "x" * 65}, "kinds items must be at most 64 characters"),
    ({"kinds": "main,gr\x00oup"}, "kinds must not contain NUL characters"),
    ({"foo": "1"}, "Unknown argument for sessions_list: foo"),
    ({"sessionKey": "main"}, "Unknown argument for sessions_list: sessionKey"),
    ({"format": "json"}, "Unknown argument for sessions_list: format"),
]

HISTORY_QUERY_CASES = [
    ({"limit": "abc"}, "limit must be a positive integer"),
    ({"limit": "0"}, "limit must be a positive integer"),
    ({"limit": "-1"}, "limit must be a positive integer"),
    ({"limit": "²"}, "limit must be a positive integer"),
    ({"limit": str(BIG)}, "limit must be at most"),
    ({"limit": ["5", "6"]}, "limit must be given once"),
    ({"cursor": "abc"}, "cursor must be a positive integer"),
    ({"cursor": "0"}, "cursor must be a positive integer"),
    ({"cursor": "seq:0"}, "cursor must be a positive integer"),
    ({"cursor": "seq:-1"}, "cursor must be a positive integer"),
    ({"cursor": "-1"}, "cursor must be a positive integer"),
    ({"cursor": "seq:"}, "cursor must be a positive integer"),
    ({"cursor": "1.5"}, "cursor must be a positive integer"),
    ({"cursor": "²"}, "cursor must be a positive integer"),
    ({"cursor": "seq:³"}, "cursor must be a positive integer"),
    ({"cursor": str(BIG)}, "cursor must be a positive integer"),
    ({"cursor": "1" * 41}, "cursor must be at most 40 characters"),
    ({"cursor": "5\x00"}, "cursor must not contain NUL"),
    ({"includeTools": "maybe"}, "includeTools must be a boolean"),
    ({"includeTools": "2"}, "includeTools must be a boolean"),
    ({"offset": "1"}, "Unknown argument for history: offset"),
    ({"foo": "1"}, "Unknown argument for history: foo"),
]


@pytest.mark.parametrize(
    ("path", "cases"),
    [
        pytest.param("/api/v1/sessions/", LIST_QUERY_CASES, id="sessions"),
        pytest.param(f"{MAIN}/history/", HISTORY_QUERY_CASES, id="history"),
        pytest.param(
            "/api/v1/agents/",
            [({"foo": "1"}, "Unknown argument for agents_list: foo")],
            id="agents",
        ),
        pytest.param(
            f"{MAIN}/", [({"foo": "1"}, "Unknown argument for this endpoint: foo")], id="session"
        ),
        pytest.param(
            f"{MAIN}/transcript.jsonl",
            [({"limit": "5"}, "Unknown argument for this endpoint: limit")],
            id="transcript",
        ),
        pytest.param(
            "/api/v1/config/",
            [({"path": "x"}, "Unknown argument for this endpoint: path")],
            id="config",
        ),
    ],
)
def test_bad_query_parameter_is_400(operator, world, path, cases):
    expect_errors(operator, "get", path, cases)


def test_query_values_that_are_not_utf8_are_read_not_refused(operator, world):
    # Django decodes query strings with replacement characters; nothing matches, nothing breaks.
    response = operator.client.get("/api/v1/sessions/?label=%ff%fe", **operator.headers())
    assert response.status_code == 200, response.content
    assert response.json()["count"] == 0


def test_format_is_an_unknown_parameter_like_any_other(operator, world):
    response = operator.get("/api/v1/sessions/", {"format": "xml"})
    assert_error(response, 400, "invalid_request", "format")


@pytest.mark.parametrize("suffix", ["/", "/history/", "/transcript.jsonl"])
def test_read_of_a_malformed_key_is_400(operator, world, suffix):
    check_all(
        lambda key: operator.get(f"/api/v1/sessions/{key}{suffix}"),
        [(key, ("sessionKey: ", expected)) for key, expected in MALFORMED_PATH_KEYS],
        error_type="invalid_request",
    )


@pytest.mark.parametrize("suffix", ["/", "/history/", "/transcript.jsonl"])
def test_read_of_an_unknown_session_is_404(operator, world, suffix):
    set_config(visibility="all")  # under "tree" an unknown key of one's agent is 403 first
    response = operator.get(f"/api/v1/sessions/agent:main:nope{suffix}")
    assert_error(response, 404, "not_found", "Session not found: agent:main:nope")
    unknown = "00000000-0000-4000-8000-000000000000"
    response = operator.get(f"/api/v1/sessions/{unknown}{suffix}")
    assert_error(response, 404, "not_found", f"Session not found: {unknown}")


# --- methods -------------------------------------------------------------------------------

METHOD_CASES = [
    ("/api/v1/sessions/", ["put", "patch", "delete"], {"GET", "POST"}),
    # DELETE is the sessions tool's delete (test_sessions_manage_api.py).
    (f"{MAIN}/", ["post", "put"], {"GET", "PATCH", "DELETE"}),
    (f"{MAIN}/history/", ["post", "put", "patch", "delete"], {"GET"}),
    (f"{MAIN}/messages/", ["get", "put", "patch", "delete"], {"POST"}),
    (f"{MAIN}/transcript.jsonl", ["post", "put", "delete"], {"GET"}),
    ("/api/v1/agents/", ["post", "put", "delete"], {"GET"}),
    ("/api/v1/agents/main/", ["get", "post", "patch", "delete"], {"PUT"}),
    ("/api/v1/config/", ["post", "put", "delete"], {"GET", "PATCH"}),
]


def test_other_methods_are_405_with_allow(operator, world):
    def call(case):
        path, method, allowed = case
        if method == "get":
            response = operator.client.get(path, **operator.headers())
        else:
            call = getattr(operator.client, method)
            response = call(path, "{}", content_type="application/json", **operator.headers())
        assert allowed <= {m.strip() for m in response.get("Allow", "").split(",")}
        return response

    cases = [
        ((path, method, allowed), method.upper())
        for path, methods, allowed in METHOD_CASES
        for method in methods
    ]
    check_all(call, cases, status=405, error_type="method_not_allowed", writes=True)


# --- who may call ----------------------------------------------------------------------------

ENDPOINTS = [
    ("get", "/api/v1/sessions/", None),
    ("post", "/api/v1/sessions/", {"key": "agent:main:new"}),
    ("get", f"{MAIN}/", None),
    ("patch", f"{MAIN}/", {"label": "x"}),
    ("get", f"{MAIN}/history/", None),
    ("post", f"{MAIN}/messages/", {"messages": [{"role": "user", "content": "x"}]}),
    ("get", f"{MAIN}/transcript.jsonl", None),
    ("post", f"{MAIN}/abort/", {}),
    ("get", "/api/v1/agents/", None),
    ("put", "/api/v1/agents/main/", {"name": "x"}),
    ("put", "/api/v1/agents/newbie/", {"name": "x"}),
    ("get", "/api/v1/config/", None),
    ("patch", "/api/v1/config/", {"tools.sessions.visibility": "all"}),
]
BAD_AUTHORIZATIONS = [
    None,
    "",
    "Bearer",
    "Bearer ",
    "Bearer nope",
    "Bearer ocs_0_0",
    "Bearer ocs_deadbeef0000_" + "x" * 43,
    "Basic b2NzOnNlY3JldA==",
    "Token ocs_a_b",
]


def test_missing_or_bad_key_is_401(anonymous, world, settings):
    # Every endpoint × every bad header from one address: past the per-source limit on failed
    # checks, which has tests of its own (tests/access/test_source_limit.py).
    settings.OPENCLAW_SOURCE_AUTH_FAILURES = 0

    def call(case):
        (method, path, body), authorization = case
        headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
        response = send(anonymous, method, path, body, **headers)
        assert response["WWW-Authenticate"].startswith("Bearer")
        return response

    # One text, with or without a header: a client cannot tell which part was wrong.
    cases = [
        ((endpoint, a), Unauthenticated.TEXT) for endpoint in ENDPOINTS for a in BAD_AUTHORIZATIONS
    ]
    check_all(call, cases, status=401, error_type="unauthorized", writes=True)


def test_revoked_key_is_401(agents, world):
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR)
    key.revoke()
    api = Api(Client(), token)
    check_all(
        lambda endpoint: send(api, *endpoint),
        [(endpoint, Unauthenticated.TEXT) for endpoint in ENDPOINTS],
        status=401,
        error_type="unauthorized",
        writes=True,
    )


FORBIDDEN = [
    # (persona, method, path, body, text in the message)
    ("agent_main", "post", "/api/v1/sessions/", {"key": "agent:main:new"}, "scope (agent)"),
    ("agent_main", "patch", f"{MAIN}/", {"label": "x"}, "scope (agent)"),
    ("agent_main", "post", f"{MAIN}/messages/", {"messages": [user("x")]}, "scope (agent)"),
    ("agent_main", "put", "/api/v1/agents/main/", {"name": "x"}, "scope (agent)"),
    ("agent_main", "get", "/api/v1/config/", None, "scope (agent)"),
    ("agent_main", "patch", "/api/v1/config/", {"tools.sessions.visibility": "all"}, "scope"),
    ("sandboxed_main", "patch", "/api/v1/config/", {"session.scope": "global"}, "scope"),
    ("outsider", "put", "/api/v1/agents/other/", {"sandboxed": False}, "scope (agent)"),
    ("ingest", "get", "/api/v1/sessions/", None, "ingest key cannot act as a session"),
    ("ingest", "get", f"{MAIN}/", None, "ingest key cannot act as a session"),
    ("ingest", "get", f"{MAIN}/history/", None, "ingest key cannot act as a session"),
    ("ingest", "get", f"{MAIN}/transcript.jsonl", None, "ingest key cannot act as a session"),
    ("ingest", "get", "/api/v1/agents/", None, "ingest key cannot act as a session"),
    ("ingest", "put", "/api/v1/agents/main/", {"name": "x"}, "scope (ingest)"),
    ("ingest", "get", "/api/v1/config/", None, "scope (ingest)"),
    ("ingest", "patch", "/api/v1/config/", {"tools.sessions.visibility": "all"}, "scope"),
    # Refusals by visibility are 403 on REST (a 200 result on /tools/invoke).
    ("outsider", "get", f"{MAIN}/", None, "visibility"),
    ("outsider", "get", f"{MAIN}/history/", None, "visibility"),
    ("outsider", "get", f"{MAIN}/transcript.jsonl", None, "visibility"),
    ("agent_main", "get", "/api/v1/sessions/agent:other:main/", None, "visibility"),
    ("sandboxed_main", "get", f"{GROUP}/", None, "sandboxed"),
    ("sandboxed_main", "get", f"{GROUP}/history/", None, "sandboxed"),
]


@pytest.mark.parametrize("persona", ["agent_main", "sandboxed_main", "outsider", "ingest"])
def test_forbidden_is_403(request, world, persona):
    api = request.getfixturevalue(persona)
    check_all(
        lambda endpoint: send(api, *endpoint),
        [
            ((method, path, body), expected)
            for who, method, path, body, expected in FORBIDDEN
            if who == persona
        ],
        status=403,
        error_type="forbidden",
        writes=True,
    )


SESSION_HEADER_READS = [
    "/api/v1/sessions/",
    f"{MAIN}/",
    f"{MAIN}/history/",
    f"{MAIN}/transcript.jsonl",
    "/api/v1/agents/",
]


@pytest.mark.parametrize("path", SESSION_HEADER_READS)
@pytest.mark.parametrize("persona", ["agent_main", "sandboxed_main"])
def test_agent_key_may_not_act_as_another_agents_session(request, world, persona, path):
    api = request.getfixturevalue(persona)
    cases = [
        ("agent:other:main", "may not act as session agent:other:main"),
        ("Agent:Other:Main", "may not act as session agent:other:main"),
        ("agent:research:subagent:x", "may not act as session agent:research:subagent:x"),
    ]
    check_all(
        lambda header: api.get(path, HTTP_X_OPENCLAW_SESSION_KEY=header),
        cases,
        status=403,
        error_type="forbidden",
    )


@pytest.mark.parametrize("path", SESSION_HEADER_READS)
def test_malformed_session_header_is_400(operator, world, path):
    cases = [
        ("agent::", "sessionKey: malformed agent session key"),
        ("agent:Bad Id:x", "sessionKey: malformed agent id"),
        ("agent:main:a\x01", "sessionKey: session key must not contain control characters"),
        ("x" * 600, "sessionKey: session key is longer than 512"),
    ]
    check_all(
        lambda header: operator.get(path, HTTP_X_OPENCLAW_SESSION_KEY=header),
        cases,
        error_type="invalid_request",
    )


def test_pinned_key_may_not_act_as_another_session_of_its_agent(agents, world):
    _, token = ApiKey.generate(scope=ApiKey.AGENT, agent=agents["main"], session_key=GROUP_KEY)
    api = Api(Client(), token)
    response = api.get("/api/v1/sessions/", HTTP_X_OPENCLAW_SESSION_KEY="agent:main:main")
    assert_error(response, 403, "forbidden", f"pinned to session {GROUP_KEY}")
    assert api.get("/api/v1/sessions/").status_code == 200
