"""9.6 §0: "Every string, number and array parameter also accepts its snake_case spelling
(`timeout_seconds`)", for every tool and the REST endpoints that take tool arguments. The
camelCase spelling wins when both are sent; booleans have no snake_case spelling; a name neither
spelling knows stays a 400 naming it; the schemas offer the camelCase names only."""

from __future__ import annotations

import pytest

from openclaw_common.errors import InvalidArgument
from sessions_app.api import send_body
from sessions_app.mcp.server import MCP_TOOLS
from sessions_app.tools import TOOLS
from sessions_app.tools import offer as tool_specs
from sessions_app.tools.declaration import ARGUMENTS, Boolean, _snake, _types
from tests.conftest import add_messages, assistant, make_session, set_config, user

NAMES = list(TOOLS.names)
# The tools with a camelCase boolean parameter (a boolean without one has no snake_case twin to
# refuse); every tool but agents_list has a parameter 9.6 also reads as snake_case.
WITH_CAMEL_BOOLEANS = {
    "sessions_list",
    "sessions_history",
    "sessions_search",
    "sessions_spawn",
    "sessions",
}
WITHOUT_SNAKE_PARAMS = {"agents_list"}


def snake_params(declaration):
    """(param, snake name) for each parameter 9.6 also reads as snake_case."""
    return [
        (p, _snake(p.name))
        for p in declaration.params
        if _snake(p.name) != p.name and {"string", "number", "array"} & _types(p.schema())
    ]


def sample(param):
    """A value the parameter's reader accepts."""
    kind = type(param).__name__
    if kind == "Integer":
        return max(param.minimum, 1) + 1
    if kind == "Choice":
        return next(iter(param.choices))
    if kind == "StringList":
        return ["main"]
    if kind == "Structured":
        return ["x"] if "array" in _types(param.schema()) else "x"
    return "agent:main:main"


@pytest.mark.parametrize("name", NAMES)
def test_each_snake_case_spelling_reads_as_its_parameter(name):
    declaration = TOOLS.get(name).declaration
    params = snake_params(declaration)
    assert bool(params) == (name not in WITHOUT_SNAKE_PARAMS), params
    for param, snake in params:
        value = sample(param)
        required = {p.name: sample(p) for p in declaration.params if p.required and p is not param}
        by_snake = declaration.read({**required, snake: value}, ARGUMENTS[name])
        by_camel = declaration.read({**required, param.name: value}, ARGUMENTS[name])
        assert getattr(by_snake, param.name) == getattr(by_camel, param.name) is not None
        as_read = declaration.camel({**required, snake: value})  # what a tool's `raw` keeps
        assert snake not in as_read and param.name in as_read


@pytest.mark.parametrize("name", NAMES)
def test_booleans_have_no_snake_case_spelling(name):
    declaration = TOOLS.get(name).declaration
    booleans = [
        p for p in declaration.params if isinstance(p, Boolean) and _snake(p.name) != p.name
    ]
    assert bool(booleans) == (name in WITH_CAMEL_BOOLEANS), [p.name for p in booleans]
    for param in booleans:
        with pytest.raises(
            InvalidArgument, match=f"^Unknown argument for {name}: {_snake(param.name)}$"
        ):
            declaration.read({_snake(param.name): True}, ARGUMENTS[name])


def test_the_camel_case_spelling_wins_when_both_are_sent():
    declaration = TOOLS.get("sessions_list").declaration
    a = declaration.read({"message_limit": 1, "messageLimit": 3}, ARGUMENTS["sessions_list"])
    assert a.messageLimit == 3


def test_names_neither_spelling_knows_are_still_refused():
    declaration = TOOLS.get("session_status").declaration
    for raw, named in [
        ({"changes_sinc": 0}, "changes_sinc"),
        ({"changessince": 0}, "changessince"),
        ({"Changes_Since": 0}, "Changes_Since"),
        ({"changes_since": 0, "nope": 1}, "nope"),
    ]:
        with pytest.raises(
            InvalidArgument, match=f"^Unknown argument for session_status: {named}$"
        ):
            declaration.read(raw, ARGUMENTS["session_status"])


@pytest.mark.parametrize("name", NAMES)
def test_every_surface_offers_the_camel_case_names_only(db, anonymous, name):
    from tests.tools.test_tool_declarations import openapi

    declaration = TOOLS.get(name).declaration
    offered = set(declaration.parameters()["properties"])
    snake = {s for _, s in snake_params(declaration)}
    assert offered and not offered & snake or name == "agents_list"
    assert set(tool_specs.TOOL_SPECS[name].parameters["properties"]) == offered
    schemas = openapi(anonymous)["components"]["schemas"]
    from sessions_app.api import schema as api_schema

    assert set(schemas[api_schema.args_component(name)]["properties"]) == offered
    if name in MCP_TOOLS.names:
        assert set(MCP_TOOLS.get(name).declaration.parameters()["properties"]) == offered


# --- through /tools/invoke --------------------------------------------------------------------


@pytest.fixture
def world(main_session):
    # Particular: words to search for, and a child for the snake_case send to reach.
    set_config(visibility="all", a2a_enabled=True)
    add_messages(
        main_session, user("deploy the nightly build"), assistant("nightly build is green")
    )
    make_session("agent:main:subagent:kid", spawnedBy="agent:main:main")
    return main_session


@pytest.mark.parametrize(
    ("tool", "snake", "camel"),
    [
        (
            "sessions_list",
            {"message_limit": 1, "agent_id": "main"},
            {"messageLimit": 1, "agentId": "main"},
        ),
        ("sessions_list", {"active_minutes": 5}, {"activeMinutes": 5}),
        (
            "sessions_history",
            {"session_key": "main", "message_id": "00000002"},
            {"sessionKey": "main", "messageId": "00000002"},
        ),
        (
            "sessions_search",
            {"query": "nightly", "session_key": "main"},
            {"query": "nightly", "sessionKey": "main"},
        ),
        (
            "session_status",
            {"session_key": "main", "changes_since": 0},
            {"sessionKey": "main", "changesSince": 0},
        ),
        ("subagents", {"recent_minutes": 30}, {"recentMinutes": 30}),
        ("sessions_yield", {"wait_for": "nothing"}, {"waitFor": "nothing"}),
        (
            "sessions",
            {"action": "patch", "status_note": "busy", "ttl_minutes": 5},
            {"action": "patch", "statusNote": "busy", "ttlMinutes": 5},
        ),
    ],
)
def test_tools_answer_a_snake_case_call_as_its_camel_case_twin(
    agent_main, world, tool, snake, camel
):
    by_snake = agent_main.invoke(tool, snake)
    assert by_snake.status_code == 200, by_snake.content
    by_camel = agent_main.invoke(tool, camel)
    assert by_camel.status_code == 200, by_camel.content

    def stable(details):
        # What differs between two calls: the clock, the card's text.
        return {
            k: v
            for k, v in details.items()
            if k not in ("statusText", "stateVersion", "stateChanges")
        }

    assert stable(by_snake.json()["result"]["details"]) == stable(
        by_camel.json()["result"]["details"]
    )


def test_an_unknown_name_is_ignored_by_a_tool_call(agent_main, world):
    """A snake_case spelling the tool does not take (a boolean's, a name it never had) is an
    unknown argument: a tool call ignores it as OpenClaw 2026.9.6 does, and the tool reads the
    rest (REST query strings stay closed: below)."""
    with_it = agent_main.invoke("session_status", {"changes_since": 0, "since_when": 1})
    without = agent_main.invoke("session_status", {"changes_since": 0})
    assert with_it.status_code == without.status_code == 200
    changes = [r.json()["result"]["details"]["stateChanges"] for r in (with_it, without)]
    assert changes[0] == changes[1]
    found = agent_main.invoke("sessions_search", {"query": "nightly", "include_tools": True})
    plain = agent_main.invoke("sessions_search", {"query": "nightly"})
    assert found.status_code == 200
    assert found.json() == plain.json()  # include_tools is not includeTools: no tool results


# --- REST endpoints that take tool arguments --------------------------------------------------


def test_rest_list_search_and_status_take_snake_case_query_parameters(agent_main, world):
    listed = agent_main.get("/api/v1/sessions/", {"message_limit": 1, "kinds": "main"})
    assert listed.status_code == 200, listed.content
    (row,) = listed.json()["sessions"]
    assert len(row["messages"]) == 1

    found = agent_main.get("/api/v1/search/", {"q": "nightly", "session_key": "main"})
    assert found.status_code == 200, found.content
    assert len(found.json()["results"]) == 2

    status = agent_main.get("/api/v1/sessions/agent:main:main/status/", {"changes_since": 0})
    assert status.status_code == 200, status.content
    assert status.json()["stateChanges"]["events"][0]["kind"] == "created"
    unknown = agent_main.get("/api/v1/sessions/agent:main:main/status/", {"changes_sinc": 0})
    assert unknown.status_code == 400
    assert unknown.json()["error"]["message"] == "Unknown argument for session status: changes_sinc"


def test_rest_send_takes_timeout_seconds(agent_main, world):
    assert {"timeoutSeconds", "timeout_seconds"} <= send_body.NAMES
    target = "agent:main:subagent:kid"
    response = agent_main.post(
        f"/api/v1/sessions/{target}/send/", {"message": "hi", "timeout_seconds": 0}
    )
    assert response.status_code == 200, response.content
    assert response.json()["status"] == "accepted"
    bad = agent_main.post(f"/api/v1/sessions/{target}/send/", {"message": "hi", "timeout_secs": 0})
    assert bad.status_code == 400
    assert bad.json()["error"]["message"] == "Unknown argument for send: timeout_secs"
