"""Each tool is declared once (sessions_app/tools/): what a model is offered, what the API
documents for /tools/invoke and what the tool accepts and returns all come from that one
declaration, and agree. (The WebSocket RPCs: tests/live/test_tool_rpcs.py.)"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
import pytest
from django.test import Client

from sessions_app.api import schema as api_schema
from sessions_app.mcp.server import MCP_TOOLS
from sessions_app.runs import tool_policy
from sessions_app.tools import TOOLS, offer
from sessions_app.tools.declaration import (
    ARGUMENTS,
    Boolean,
    Choice,
    Integer,
    String,
    StringList,
    Structured,
)
from tests.conftest import (
    add_messages,
    assistant,
    make_agent,
    make_session,
    set_config,
    tool_result,
    user,
)

NAMES = list(TOOLS.names)


def openapi(anonymous) -> dict:
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def test_the_registry_lists_every_tool_module_once():
    assert NAMES == [
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_send",
        "sessions_spawn",
        "sessions_yield",
        "subagents",
        "agents_list",
        "session_status",
        "sessions",
    ]
    assert tool_policy.catalog().names == tuple(NAMES)


def test_each_tool_declares_how_the_offer_treats_it():
    """The policies the tools declare give OpenClaw's sets (seeds, 9.6 §1.10, §2.3)."""
    tools = tool_policy.catalog()
    assert tools.groups == {
        "group:sessions": (
            "sessions_list",
            "sessions_history",
            "sessions_search",
            "sessions_send",
            "sessions_spawn",
            "subagents",
            "session_status",
            "sessions",
        )
    }
    assert tools.orchestrator == {
        "sessions_spawn",
        "subagents",
        "sessions_list",
        "sessions_history",
        "sessions_search",
        "sessions_yield",
    }
    assert tools.subagent_default_deny == set(NAMES) - {"sessions_yield"}
    assert tools.owner_only == {"sessions"}


@pytest.mark.parametrize("name", NAMES)
def test_model_schema_and_openapi_are_the_declaration(db, anonymous, name):
    declaration = TOOLS.get(name).declaration
    offered = offer.TOOL_SPECS[name]
    assert offered.description == declaration.description
    assert offered.parameters == declaration.parameters()

    schemas = openapi(anonymous)["components"]["schemas"]
    assert schemas[api_schema.args_component(name)] == declaration.parameters()
    assert schemas[api_schema.result_component(name)] == declaration.result
    invoke = schemas[f"Invoke{api_schema.camel(name)}"]
    assert invoke["properties"]["tool"] == {"type": "string", "enum": [name]}
    assert invoke["properties"]["args"] == api_schema.ref(api_schema.args_component(name))
    mapping = schemas["ToolsInvokeRequest"]["discriminator"]["mapping"]
    assert mapping[name] == f"#/components/schemas/Invoke{api_schema.camel(name)}"


@pytest.mark.parametrize("name", NAMES)
def test_the_reader_accepts_what_is_offered_and_refuses_the_rest(name):
    declaration = TOOLS.get(name).declaration
    offered = set(declaration.parameters()["properties"])
    assert offered <= declaration.names
    # Accepted but offered to no one: OpenClaw's aliases and values this service only refuses.
    hidden = declaration.names - offered
    assert hidden == {
        "sessions_spawn": {
            "mode",
            "thread",
            "sandbox",
            "timeoutSeconds",
            "thinking",
            # 9.6 parameters accepted for compatibility, refused or not applied here.
            "lightContext",
            "visible",
            "group",
            "placement",
            "projectId",
            "projectGitUrl",
            "collect",
            "outputSchema",
            "groupId",
            "fastMode",
        },
        "sessions_send": {"SendMessage", "content", "text"},
    }.get(name, set())
    with pytest.raises(Exception, match=f"Unknown argument for {name}: nope"):
        declaration.read({"nope": 1}, ARGUMENTS[name])


def expected_type(param) -> Any:
    """The type a parameter's reader returns (its `read` annotation, narrowed where the reader
    guarantees a value: an Integer or Boolean with a default, a required String)."""
    if isinstance(param, Integer):
        return int if param.default is not None else int | None
    if isinstance(param, Boolean):
        return bool if param.default is not None else bool | None
    if isinstance(param, String):
        return str if param.required else str | None
    if isinstance(param, StringList):
        return list[str] | None
    assert isinstance(param, Structured), param
    return Any  # the tool checks the value itself


@pytest.mark.parametrize("name", list(MCP_TOOLS.names))
def test_each_tools_arguments_are_a_dataclass_typed_as_its_declaration_reads(name):
    """`Declaration.read` builds the tool's dataclass (so mypy checks each `a.name`): one field
    per parameter (the decorator checked the names at import), typed as the reader returns it."""
    declaration = MCP_TOOLS.get(name).declaration
    hints = typing.get_type_hints(ARGUMENTS[name])
    if "raw" in hints:
        assert hints.pop("raw") == Mapping[str, Any]
    assert list(hints) == [p.name for p in declaration.params]  # in declaration order
    for param in declaration.params:
        if isinstance(param, Choice):
            # Every value the choice maps to, and its default, is of the field's type.
            for value in (*param.choices.values(), param.default):
                assert isinstance(value, hints[param.name]), (param.name, value)
        else:
            assert hints[param.name] == expected_type(param), param.name


def test_arguments_that_do_not_match_the_declaration_fail_at_import():
    declaration = TOOLS.get("session_status").declaration
    with pytest.raises(
        TypeError, match=r"missing \['changesSince'\], not parameters \['changes'\]"
    ):

        @declaration.arguments
        @dataclass(frozen=True)
        class Misspelt:
            sessionKey: str | None
            model: str | None
            changes: int | None


def test_the_rest_list_endpoint_takes_the_tool_arguments(db, anonymous):
    operation = openapi(anonymous)["paths"]["/api/v1/sessions/"]["get"]
    query = {p["name"] for p in operation["parameters"] if p["in"] == "query"}
    assert query == set(TOOLS.get("sessions_list").declaration.parameters()["properties"])


@pytest.fixture
def results(operator, agents, settings, tmp_path):
    """One real call of each tool through /tools/invoke, and the details it returned."""
    settings.MEDIA_ROOT = tmp_path
    set_config(attachments_enabled=True, visibility="all", a2a_enabled=True)
    session = make_session("agent:main:discord:group:dev", label="dev")
    add_messages(session, user("hello"), assistant("hi there"))
    add_messages(make_session("agent:main:main"), user("go"), tool_result("done"))
    make_agent("research", name="Research", model="scripted/echo")  # serves the spawn's model
    # The spawn first, so the list shows a child and its parent.
    calls = {
        "sessions_spawn": {
            "task": "look",
            "agentId": "research",
            "model": "scripted/echo",
            "attachments": [{"name": "a.txt", "content": "x"}],
        },
        "sessions_list": {"messageLimit": 2},
        "sessions_history": {"sessionKey": "main", "includeTools": True},
        "sessions_search": {"query": "hello", "includeTools": True},
        "sessions_send": {
            "sessionKey": "agent:main:discord:group:dev",
            "message": "ping",
            "timeoutSeconds": 0,
        },
        # Outside a run there is no turn to end: its refusal is the sample.
        "sessions_yield": {},
        "subagents": {"action": "list"},
        "agents_list": {},
        "session_status": {"changesSince": 0, "model": "scripted/echo"},
        "sessions": {
            "action": "patch",
            "sessionKey": "agent:main:discord:group:dev",
            "pinned": True,
        },
    }
    found = {}
    for name, args in calls.items():
        response = operator.invoke(name, args)
        assert response.status_code == 200, response.content
        found[name] = response.json()
    return found


@pytest.mark.parametrize("name", NAMES)
def test_results_match_the_declared_shape(results, name):
    body = results[name]
    details = body["result"]["details"]
    if name != "sessions_yield":
        assert details.get("status") not in ("error", "forbidden"), details
    jsonschema.Draft202012Validator(TOOLS.get(name).declaration.result).validate(details)
    if name == "sessions_list":  # the optional fields were there to be checked
        rows = details["sessions"]
        assert any("spawnedBy" in r for r in rows) and any(r["childSessions"] for r in rows)
        assert any(r.get("messages") for r in rows) and any("status" in r for r in rows)
    if name == "sessions_search":
        assert details["results"]


def test_refusals_match_the_declared_refusal(operator, agents):
    from sessions_app.tools.shapes import REFUSAL

    details = operator.invoke("sessions_history", {"sessionKey": "agent:other:main"}).json()
    jsonschema.Draft202012Validator(REFUSAL).validate(details["result"]["details"])
