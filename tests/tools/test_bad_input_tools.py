"""Bad input to POST /tools/invoke: every body field and every tool argument (api.md §2).

Malformed calls are 400 {"ok": false, "error": {"type": "tool_error", "message": <names the
parameter>}}, never 500, and change nothing. Refusals are 200 results; access problems 401/403.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings
from django.test import Client

from sessions_app.models import Agent, ApiKey, GatewayConfig, Message, Session
from sessions_app.tools import TOOLS
from tests.conftest import Api

BIG = 2**53  # one past JavaScript's safe-integer range


def assert_error(response, status: int, error_type: str, *names: str) -> str:
    """The error envelope, exactly, with a message that mentions each of `names`."""
    assert response.status_code == status, response.content
    body = response.json()
    assert set(body) == {"ok", "error"}
    assert body["ok"] is False
    assert set(body["error"]) == {"type", "message"}
    assert body["error"]["type"] == error_type
    message = body["error"]["message"]
    assert isinstance(message, str) and message
    for name in names:
        assert name in message, f"{name!r} not in {message!r}"
    return message


def check_all(
    send, cases, *, status: int = 400, error_type: str = "tool_error", writes: bool = False
) -> None:
    """send(case) for each (case, expected text or texts); every one must be that error and change
    nothing. Mismatches are collected and reported together (a test per case made the file slow).
    `writes`: compare the data after every case, to name the one that wrote; reads compare once.
    """
    before = snapshot()
    failures = []
    for case, expected in cases:
        try:
            names = (expected,) if isinstance(expected, str) else expected
            assert_error(send(case), status, error_type, *names)
            if writes:
                assert snapshot() == before, "the data changed"
        except AssertionError as exc:
            failures.append(f"{case!r:.80} -> {exc}")
    assert not failures, "\n".join(failures)
    assert snapshot() == before


def snapshot() -> dict:
    """Every row a request could touch, to compare before and after."""
    return {
        "sessions": list(Session.objects.order_by("id").values()),
        "messages": list(Message.objects.order_by("id").values()),
        "agents": list(Agent.objects.order_by("id").values()),
        "config": list(GatewayConfig.objects.values()),
        "keys": list(ApiKey.objects.order_by("id").values("id", "revoked_at")),
    }


@pytest.fixture(scope="module")
def oversized_body() -> bytes:
    """Valid JSON one byte past DATA_UPLOAD_MAX_MEMORY_SIZE, built once for the module."""
    head = b'{"tool": "sessions_list", "args": {"label": "'
    tail = b'"}}'
    filler = settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1 - len(head) - len(tail)
    return head + b"x" * filler + tail


def invoke_raw(api: Api, body: bytes | str):
    return api.post("/tools/invoke", body)


# --- the request body as a whole ------------------------------------------------------------

BODY_CASES = [  # (raw body, text in the message)
    (b"", "request body is empty"),
    (b"   \n ", "request body is empty"),
    (b"{", "request body is not valid JSON"),
    (b"{'tool': 'sessions_list'}", "request body is not valid JSON"),
    (b'{"tool": "sessions_list",}', "request body is not valid JSON"),
    (b'{"tool": "sessions_list"} {}', "request body is not valid JSON"),
    (b"[]", "request body must be a JSON object"),
    (b'[{"tool": "sessions_list"}]', "request body must be a JSON object"),
    (b'"sessions_list"', "request body must be a JSON object"),
    (b"42", "request body must be a JSON object"),
    (b"null", "request body must be a JSON object"),
    (b"true", "request body must be a JSON object"),
    (b"\xff\xfe", "request body is not valid UTF-8"),
    (b'{"tool": "sessions_\xe9"}', "request body is not valid UTF-8"),
    (b"\xc0\xaf", "request body is not valid UTF-8"),
    ('{"tool": "sessions_list"}'.encode("utf-16"), "request body is not valid UTF-8"),
    (b'{"tool": "sessions_list", "args": {"limit": NaN}}', "NaN is not JSON"),
    (b'{"tool": "sessions_list", "args": {"limit": Infinity}}', "Infinity is not JSON"),
    (b'{"tool": "sessions_list", "args": {"offset": -Infinity}}', "-Infinity is not JSON"),
    (b"[" * 100_000 + b"]" * 100_000, "request body is not valid JSON"),
    (
        b'{"tool": "sessions_list", "args": {"limit": ' + b"9" * 5000 + b"}}",
        "request body is not valid JSON",
    ),
    (b'{"tool": "sessions_list", "args": {"label": "\\ud800"}}', "args.label is not valid Unicode"),
    (
        b'{"tool": "sessions_list", "args": {"\\udfff": 1}}',
        "field name args.\\udfff is not valid Unicode",
    ),
    (
        b'{"tool": "sessions_list", "args": {"search": "a\\u0000b"}}',
        "args.search must not contain NUL",
    ),
    (b'{"tool": "sessions_list\\u0000"}', "tool must not contain NUL"),
    (
        b'{"tool": "sessions_history", "args": {"sessionKey": "main"}, "sessionKey": "\\u0000"}',
        "sessionKey must not contain NUL",
    ),
]


def test_malformed_body_is_400(operator, chat_sessions):
    check_all(lambda body: invoke_raw(operator, body), BODY_CASES)


def test_oversized_body_is_413(operator, chat_sessions, oversized_body):
    before = snapshot()
    response = invoke_raw(operator, oversized_body)
    assert_error(response, 413, "payload_too_large", "request body", "limit")
    assert snapshot() == before


def test_body_at_the_limit_is_read(operator, chat_sessions):
    # A body just under the limit is parsed (here refused for its label, not its size).
    head = b'{"tool": "sessions_list", "args": {"label": "'
    filler = settings.DATA_UPLOAD_MAX_MEMORY_SIZE - len(head) - 3
    response = invoke_raw(operator, head + b"x" * filler + b'"}}')
    assert_error(response, 400, "tool_error", "label must be at most 200 characters")


@pytest.mark.parametrize("method", ["get", "put", "patch", "delete", "head", "options"])
def test_other_methods_are_405_with_allow(operator, chat_sessions, method):
    before = snapshot()
    response = getattr(operator.client, method)("/tools/invoke", **operator.headers())
    assert response.status_code == 405
    assert response["Allow"] == "POST"
    if method != "head":
        assert_error(response, 405, "method_not_allowed", "POST")
    assert snapshot() == before


# --- the envelope fields ----------------------------------------------------------------------

FIELD_CASES = [
    ({"tool": "sessions_list", "foo": 1}, "Unknown field: foo"),
    ({"tool": "sessions_list", "Tool": "x"}, "Unknown field: Tool"),
    ({"tool": "sessions_list", "limit": 5}, "Unknown field: limit"),
    ({"args": {}}, "tool is required"),
    ({"tool": None}, "tool is required"),
    ({"tool": ""}, "tool is required"),
    ({"tool": "   "}, "tool is required"),
    ({"tool": 42}, "tool is required"),
    ({"tool": ["sessions_list"]}, "tool is required"),
    ({"tool": {"name": "sessions_list"}}, "tool is required"),
    ({"tool": True}, "tool is required"),
    ({"tool": "sessions_list", "args": []}, "args must be a JSON object"),
    ({"tool": "sessions_list", "args": "limit=5"}, "args must be a JSON object"),
    ({"tool": "sessions_list", "args": 5}, "args must be a JSON object"),
    ({"tool": "sessions_list", "args": True}, "args must be a JSON object"),
    ({"tool": "sessions_list", "sessionKey": 42}, "sessionKey must be a string"),
    ({"tool": "sessions_list", "sessionKey": ["main"]}, "sessionKey must be a string"),
    ({"tool": "sessions_list", "sessionKey": {"key": "main"}}, "sessionKey must be a string"),
    ({"tool": "sessions_list", "sessionKey": True}, "sessionKey must be a string"),
    ({"tool": "sessions_list", "sessionKey": ""}, "sessionKey: session key"),
    ({"tool": "sessions_list", "sessionKey": "agent::"}, "sessionKey: malformed agent session key"),
    (
        {"tool": "sessions_list", "sessionKey": "agent:main"},
        "sessionKey: malformed agent session key",
    ),
    ({"tool": "sessions_list", "sessionKey": "agent:Bad Id:x"}, "sessionKey: malformed agent id"),
    (
        {"tool": "sessions_list", "sessionKey": "agent:main:a\x01b"},
        "sessionKey: session key must not contain control characters",
    ),
    (
        {"tool": "sessions_list", "sessionKey": "agent:main:a\nb"},
        "sessionKey: session key must not contain control characters",
    ),
    (
        {"tool": "sessions_list", "sessionKey": "agent:main:" + "x" * 600},
        "sessionKey: session key is longer than 512",
    ),
    ({"tool": "sessions_list", "agentId": 42}, "agentId"),
    ({"tool": "sessions_list", "agentId": ["main"]}, "agentId"),
    ({"tool": "sessions_list", "agentId": ""}, "agentId"),
    ({"tool": "sessions_list", "agentId": "x" * 65}, "agentId must be at most 64"),
    ({"tool": "sessions_list", "agentId": "ghost"}, "agent not found: ghost"),
    ({"tool": "sessions_list", "idempotencyKey": 42}, "idempotencyKey must be a string"),
    ({"tool": "sessions_list", "idempotencyKey": {"id": 1}}, "idempotencyKey must be a string"),
    ({"tool": "sessions_list", "idempotencyKey": "x" * 257}, "idempotencyKey must be at most 256"),
    ({"tool": "sessions_list", "action": ["json"]}, "action must be a string"),
    ({"tool": "sessions_list", "dryRun": "false"}, "dryRun must be a boolean"),
    ({"tool": "sessions_list", "dryRun": 0}, "dryRun must be a boolean"),
]


def test_bad_envelope_field_is_400(operator, chat_sessions):
    check_all(lambda body: operator.post("/tools/invoke", body), FIELD_CASES)


def test_unknown_tool_is_404(operator, chat_sessions):
    names = ["sessions_spawnx", "Sessions_List", "exec", "x" * 300, "sessions_list\x01"]
    cases = [(name, f"Tool not available: {name}") for name in names]
    check_all(operator.invoke, cases, status=404, error_type="not_found")


def test_envelope_fields_of_the_right_type_are_accepted(operator, chat_sessions):
    details = operator.details(
        "sessions_list",
        {},
        sessionKey="main",
        agentId="main",
        idempotencyKey="a2f3",
        action="json",
        dryRun=False,
    )
    assert [row["key"] for row in details["sessions"]] == ["agent:main:main"]


def test_null_args_mean_no_args(operator, chat_sessions):
    response = invoke_raw(operator, b'{"tool": "sessions_list", "args": null}')
    assert response.status_code == 200, response.content
    assert response.json()["result"]["details"]["limitApplied"] == 100


# --- tool arguments ----------------------------------------------------------------------------

INTEGER_ARGS = {
    # tool: [(argument, minimum)]
    "sessions_list": [("limit", 1), ("activeMinutes", 1), ("messageLimit", 0), ("offset", 0)],
    "sessions_history": [("limit", 1), ("offset", 0)],
}
# Values no integer argument accepts, whatever its minimum; the message is the second item.
BAD_INTEGERS = [
    ("abc", "must be a"),
    ("", "must be a"),
    ("1.5", "must be a"),
    ("1e3", "must be a"),
    ("1e999", "must be a"),
    ("0x10", "must be a"),
    ("--1", "must be a"),
    ("²", "must be a"),
    ("١٢", "must be a"),
    ("9" * 5000, "must be a"),
    (-1, "must be a"),
    (-1.5, "must be a"),
    ("-3", "must be a"),
    (True, "must be a"),
    (False, "must be a"),
    ([], "must be a"),
    ([5], "must be a"),
    ({}, "must be a"),
    ({"value": 5}, "must be a"),
    (BIG, "must be at most 9007199254740991"),
    (2**64, "must be at most 9007199254740991"),
    (1e300, "must be at most 9007199254740991"),
    (str(BIG), "must be at most 9007199254740991"),
]


def _bad_integers(minimum: int) -> list:
    if minimum == 1:
        return BAD_INTEGERS + [
            (0, "must be a positive integer"),
            ("0", "must be a"),
            (0.5, "must be a"),
        ]
    return BAD_INTEGERS


def _with_session_key(tool: str, args: dict) -> dict:
    return {"sessionKey": "main", **args} if tool == "sessions_history" else args


@pytest.mark.parametrize(
    ("tool", "name", "minimum"),
    [(tool, name, minimum) for tool, names in INTEGER_ARGS.items() for name, minimum in names],
)
def test_bad_integer_argument_is_400(operator, chat_sessions, tool, name, minimum):
    cases = [(value, f"{name} {expected}") for value, expected in _bad_integers(minimum)]
    check_all(lambda value: operator.invoke(tool, _with_session_key(tool, {name: value})), cases)


def test_integer_overflowing_to_infinity_is_400(operator, chat_sessions):
    # json.loads reads 1e999 as float("inf"); it must not slip through as a huge limit.
    cases = []
    for tool, names in INTEGER_ARGS.items():
        for name, _ in names:
            for literal in ("1e999", "-1e999"):
                args = json.dumps(_with_session_key(tool, {name: 0})).replace(": 0", f": {literal}")
                cases.append((f'{{"tool": "{tool}", "args": {args}}}', f"{name} must be a"))
    check_all(lambda body: invoke_raw(operator, body), cases)


OTHER_BAD_ARGS = [
    # sessions_list
    ("sessions_list", {"kinds": 42}, "kinds must be an array of strings"),
    ("sessions_list", {"kinds": [1, 2]}, "kinds must be an array of strings"),
    ("sessions_list", {"kinds": {"main": True}}, "kinds must be an array of strings"),
    ("sessions_list", {"kinds": True}, "kinds must be an array of strings"),
    ("sessions_list", {"kinds": [["main"]]}, "kinds must be an array of strings"),
    ("sessions_list", {"kinds": ["main"] * 51}, "kinds must have at most 50 items"),
    ("sessions_list", {"kinds": ["x" * 65]}, "kinds items must be at most 64 characters"),
    ("sessions_list", {"agentId": 42}, "agentId must be a string"),
    ("sessions_list", {"agentId": ["main"]}, "agentId must be a string"),
    ("sessions_list", {"agentId": "x" * 65}, "agentId must be at most 64 characters"),
    ("sessions_list", {"label": 42}, "label must be a string"),
    ("sessions_list", {"label": {"eq": "home"}}, "label must be a string"),
    ("sessions_list", {"label": "x" * 201}, "label must be at most 200 characters"),
    ("sessions_list", {"search": False}, "search must be a string"),
    ("sessions_list", {"search": "x" * 201}, "search must be at most 200 characters"),
    ("sessions_list", {"archived": "maybe"}, 'archived must be true, false or "all"'),
    ("sessions_list", {"archived": 1}, "archived must be"),
    ("sessions_list", {"archived": 0}, "archived must be"),
    ("sessions_list", {"archived": []}, "archived must be"),
    ("sessions_list", {"archived": {"all": True}}, "archived must be"),
    ("sessions_list", {"archived": "yes"}, "archived must be"),
    # sessions_history
    ("sessions_history", {}, "sessionKey required"),
    ("sessions_history", {"limit": 5}, "sessionKey required"),
    ("sessions_history", {"sessionKey": None}, "sessionKey required"),
    ("sessions_history", {"sessionKey": ""}, "sessionKey required"),
    ("sessions_history", {"sessionKey": "   "}, "sessionKey required"),
    ("sessions_history", {"sessionKey": 42}, "sessionKey must be a string"),
    ("sessions_history", {"sessionKey": ["main"]}, "sessionKey must be a string"),
    ("sessions_history", {"sessionKey": {"key": "main"}}, "sessionKey must be a string"),
    ("sessions_history", {"sessionKey": True}, "sessionKey must be a string"),
    ("sessions_history", {"sessionKey": "x" * 513}, "sessionKey must be at most 512 characters"),
    ("sessions_history", {"sessionKey": "agent::"}, "sessionKey: malformed agent session key"),
    ("sessions_history", {"sessionKey": "agent:Bad Id:x"}, "sessionKey: malformed agent id"),
    (
        "sessions_history",
        {"sessionKey": "agent:main:a\x1fb"},
        "sessionKey: session key must not contain control characters",
    ),
    ("sessions_history", {"sessionKey": "main", "includeTools": "maybe"}, "includeTools must be"),
    ("sessions_history", {"sessionKey": "main", "includeTools": 1}, "includeTools must be"),
    ("sessions_history", {"sessionKey": "main", "includeTools": []}, "includeTools must be"),
    ("sessions_history", {"sessionKey": "main", "includeTools": {}}, "includeTools must be"),
    # session_status (9.6 §2.1), by either spelling (9.6 §0)
    ("session_status", {"changesSince": -1}, "changesSince must be a non-negative integer"),
    ("session_status", {"changes_since": -1}, "changesSince must be a non-negative integer"),
    ("session_status", {"changes_since": "x"}, "changesSince must be a non-negative integer"),
    ("session_status", {"changes_since": [1]}, "changesSince must be a non-negative integer"),
    ("session_status", {"changes_since": True}, "changesSince must be a non-negative integer"),
    ("session_status", {"changes_since": BIG}, "changesSince must be at most 9007199254740991"),
    ("session_status", {"changes_since": 1e300}, "changesSince must be at most 9007199254740991"),
    ("session_status", {"session_key": 42}, "sessionKey must be a string"),
    ("session_status", {"session_key": ["main"]}, "sessionKey must be a string"),
    ("session_status", {"session_key": "x" * 100_000}, "sessionKey must be at most 512 characters"),
    ("session_status", {"sessionKey": "agent::"}, "sessionKey: malformed agent session key"),
    (
        "session_status",
        {"sessionKey": "agent:main:a\x1fb"},
        "sessionKey: session key must not contain control characters",
    ),
    ("session_status", {"model": ["a"]}, "model must be a string"),
    ("session_status", {"model": "m" * 100_000}, "model must be at most 200 characters"),
    ("session_status", {"model": "a\x00b"}, "model must not contain NUL characters"),
    ("session_status", [], "args must be a JSON object"),
    ("session_status", "main", "args must be a JSON object"),
    # sessions_search (9.6 §3)
    ("sessions_search", {}, "query required"),
    ("sessions_search", {"query": None}, "query required"),
    ("sessions_search", {"query": ""}, "query must not be empty"),
    ("sessions_search", {"query": "   "}, "query must not be empty"),
    ("sessions_search", {"query": 5}, "query must be a string"),
    ("sessions_search", {"query": ["a"]}, "query must be a string"),
    ("sessions_search", {"query": {"a": 1}}, "query must be a string"),
    ("sessions_search", {"query": "x" * 4097}, "query must not exceed 4096 characters"),
    ("sessions_search", {"query": "x " * 100_000}, "query must not exceed 4096 characters"),
    ("sessions_search", {"query": "a\x00b"}, "query must not contain NUL characters"),
    ("sessions_search", {"query": "x", "limit": 26}, "limit must be a positive integer"),
    ("sessions_search", {"query": "x", "limit": 0}, "limit must be a positive integer"),
    ("sessions_search", {"query": "x", "limit": "abc"}, "limit must be a positive integer"),
    ("sessions_search", {"query": "x", "limit": True}, "limit must be a positive integer"),
    ("sessions_search", {"query": "x", "limit": BIG}, "limit must be a positive integer"),
    ("sessions_search", {"query": "x", "session_key": 5}, "sessionKey must be a string"),
    (
        "sessions_search",
        {"query": "x", "session_key": "x" * 513},
        "sessionKey must be at most 512 characters",
    ),
    (
        "sessions_search",
        {"query": "x", "session_key": "agent::"},
        "sessionKey: malformed agent session key",
    ),
    ("sessions_search", {"query": "x", "includeTools": "maybe"}, "includeTools must be a boolean"),
    ("sessions_search", [], "args must be a JSON object"),
    # agents_list takes no arguments
    ("agents_list", [], "args must be a JSON object"),
]


@pytest.mark.parametrize(
    "tool",
    ["sessions_list", "sessions_history", "agents_list", "session_status", "sessions_search"],
)
def test_bad_argument_is_400(operator, chat_sessions, tool):
    cases = [(args, expected) for name, args, expected in OTHER_BAD_ARGS if name == tool]
    check_all(lambda args: operator.invoke(tool, args), cases)


# Names a tool does not take: a tool call ignores them, as OpenClaw 2026.9.6 does (logged once
# per tool and name), and answers as it does without them (REST stays closed: below).
UNKNOWN_ARGS = [
    ("sessions_list", {"foo": 1}),
    ("sessions_list", {"Limit": 5}),
    ("sessions_list", {"sessionKey": "main"}),
    ("sessions_list", {"a": 1, "b": 2}),
    ("sessions_history", {"sessionKey": "main", "foo": 1}),
    ("sessions_history", {"sessionKey": "main", "cursor": "5"}),
    ("session_status", {"includeTools": True}),
    ("session_status", {"changessince": 0}),
    ("sessions_search", {"q": "x"}),
    ("sessions_search", {"query_text": "x"}),
    ("agents_list", {"foo": 1}),
    ("agents_list", {"limit": 5}),
    ("session_status", {"changes_since": 0, "sessionkey": "main"}),
    ("sessions_search", {"query": "x", "include_tools": True}),
]


@pytest.mark.parametrize("tool", sorted({tool for tool, _ in UNKNOWN_ARGS}))
def test_unknown_arguments_are_ignored_on_a_tool_call(operator, chat_sessions, tool):
    for name, args in UNKNOWN_ARGS:
        if name != tool:
            continue
        declaration = TOOLS.get(tool).declaration
        with_them, without = (
            operator.invoke(tool, args),
            operator.invoke(tool, declaration.known(args)),
        )
        assert (with_them.status_code, with_them.json()) == (without.status_code, without.json()), (
            args
        )


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        ("/api/v1/search/", {"q": ""}, "query must not be empty"),
        ("/api/v1/search/", {"q": "x" * 4097}, "query must not exceed 4096 characters"),
        ("/api/v1/search/", {"q": "x", "limit": "26"}, "limit must be a positive integer"),
        ("/api/v1/search/", {"q": "x", "session_key": "agent::"}, "sessionKey: malformed"),
        ("/api/v1/search/", {"q": "x", "include_tools": "1"}, "Unknown argument"),
        ("/api/v1/search/", {"q": "x", "query": "y"}, "q and query cannot be used together"),
        (
            "/api/v1/sessions/agent:main:main/status/",
            {"changes_since": "-1"},
            "changesSince must be a non-negative integer",
        ),
        (
            "/api/v1/sessions/agent:main:main/status/",
            {"session_key": "main"},
            "Unknown argument for session status: session_key",
        ),
        ("/api/v1/sessions/", {"message_limit": "x"}, "messageLimit must be a non-negative"),
        ("/api/v1/sessions/", {"message_limits": "1"}, "Unknown argument for sessions_list"),
    ],
)
def test_rest_bad_tool_arguments_are_400_by_either_spelling(
    operator, chat_sessions, path, params, message
):
    response = operator.get(path, params)
    assert_error(response, 400, "invalid_request", message)


# --- what the lenient rules do accept (OpenClaw-compatible) -----------------------------------


@pytest.mark.parametrize(
    ("args", "field", "expected"),
    [
        ({"limit": 1.5}, "limitApplied", 1),  # finite floats are floored
        ({"limit": 1.999}, "limitApplied", 1),
        ({"limit": "7"}, "limitApplied", 7),  # decimal strings, as REST query values are
        ({"limit": " 7 "}, "limitApplied", 7),
        ({"limit": 500}, "limitApplied", 200),  # clamped, not refused
        ({"limit": None}, "limitApplied", 100),  # null means "not given"
        ({"offset": 2.9}, "offset", 2),
        ({"offset": -0.0}, "offset", 0),
        ({"offset": "0"}, "offset", 0),
    ],
)
def test_lenient_numbers(operator, chat_sessions, args, field, expected):
    assert operator.details("sessions_list", args)[field] == expected


def test_unknown_kinds_are_ignored(operator, chat_sessions):
    details = operator.details("sessions_list", {"kinds": ["main", "bogus"]})
    assert [row["key"] for row in details["sessions"]] == ["agent:main:main"]


def test_include_tools_truthy_spellings(operator, chat_sessions):
    for value in [True, "true", "1", "yes", " ON "]:
        args = {"sessionKey": "main", "includeTools": value}
        assert len(operator.details("sessions_history", args)["messages"]) == 2, value


def test_message_limit_is_clamped_to_20(operator, chat_sessions):
    details = operator.details("sessions_list", {"messageLimit": 1000, "kinds": ["main"]})
    assert len(details["sessions"][0]["messages"]) == 2


# --- refusals are results, not HTTP errors -----------------------------------------------------


def test_history_of_another_agents_session_is_a_forbidden_result(agent_main, chat_sessions):
    details = agent_main.details("sessions_history", {"sessionKey": "agent:other:main"})
    assert details["status"] == "forbidden"
    assert "tools.sessions.visibility" in details["error"]


def test_history_of_an_unknown_session_id_is_an_error_result(agent_main, chat_sessions):
    unknown = "00000000-0000-4000-8000-000000000000"
    details = agent_main.details("sessions_history", {"sessionKey": unknown})
    assert details == {
        "status": "error",
        "error": f"Session not found: {unknown} (use the full sessionKey from sessions_list)",
    }


def test_refusal_result_also_comes_as_text(outsider, chat_sessions):
    response = outsider.invoke("sessions_history", {"sessionKey": "agent:main:main"})
    assert response.status_code == 200
    result = response.json()["result"]
    assert result["details"]["status"] == "forbidden"
    assert json.loads(result["content"][0]["text"]) == result["details"]


# --- who may call ------------------------------------------------------------------------------


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


def test_missing_or_bad_key_is_401(anonymous, chat_sessions):
    def send(authorization):
        headers = {} if authorization is None else {"HTTP_AUTHORIZATION": authorization}
        response = anonymous.post("/tools/invoke", {"tool": "sessions_list"}, **headers)
        assert response["WWW-Authenticate"].startswith("Bearer")
        return response

    cases = [(authorization, "Authorization: Bearer") for authorization in BAD_AUTHORIZATIONS]
    check_all(send, cases, status=401, error_type="unauthorized")


def test_revoked_key_is_401(agents, chat_sessions):
    key, token = ApiKey.generate(scope=ApiKey.OPERATOR)
    key.revoke()
    response = Api(Client(), token).invoke("sessions_list")
    assert_error(response, 401, "unauthorized", "Authorization: Bearer")


def test_unauthenticated_oversized_body_is_401_not_read(anonymous, chat_sessions, oversized_body):
    assert_error(invoke_raw(anonymous, oversized_body), 401, "unauthorized")


def test_ingest_key_may_not_call_tools(ingest, chat_sessions):
    cases = [
        (("sessions_list", {}), "ingest key cannot act as a session"),
        (("sessions_history", {"sessionKey": "main"}), "ingest key cannot act as a session"),
        (("agents_list", {}), "ingest key cannot act as a session"),
    ]
    check_all(lambda case: ingest.invoke(*case), cases, status=403, error_type="forbidden")


ACT_AS_OTHERS = [
    ({"sessionKey": "agent:other:main"}, "may not act as session agent:other:main"),
    ({"sessionKey": "AGENT:OTHER:main"}, "may not act as session agent:other:main"),
    ({"sessionKey": "agent:research:subagent:1"}, "may not act as session agent:research"),
    ({"agentId": "other"}, "belongs to agent main, not other"),
    ({"agentId": "research", "sessionKey": "main"}, "belongs to agent main, not research"),
]


@pytest.mark.parametrize("persona", ["agent_main", "sandboxed_main"])
def test_agent_key_may_not_act_as_another_agents_session(request, chat_sessions, persona):
    api = request.getfixturevalue(persona)

    def send(body):
        return api.invoke("sessions_list", {}, **body)

    check_all(send, ACT_AS_OTHERS, status=403, error_type="forbidden")


def test_pinned_key_may_act_only_as_its_session(agents, chat_sessions):
    _, token = ApiKey.generate(
        scope=ApiKey.AGENT, agent=agents["main"], session_key="agent:main:discord:group:dev"
    )
    api = Api(Client(), token)
    response = api.invoke("sessions_list", {}, sessionKey="main")
    assert_error(response, 403, "forbidden", "pinned to session agent:main:discord:group:dev")
    assert api.details("sessions_list", {})["count"] >= 1
