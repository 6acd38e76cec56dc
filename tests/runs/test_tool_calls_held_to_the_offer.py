"""A run may call only the tools it was offered (tools/offer.not_offered). A model may name a
tool it was not given, and a script calls what it likes: the agent's tools.allow / tools.deny,
the sub-agent default, tools.subagents.tools and a session's toolOverrides hold for the call as
they do for the offer, and the refusal names the setting. One answer decides both
(runs/tool_policy.offered_names), so they cannot drift apart."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import Message, Run, Session
from sessions_app.tools import NAMES as ALL_TOOLS
from sessions_app.tools.offer import not_offered, offered_tools
from tests.conftest import make_agent, make_session, set_config, user
from tests.runs.helpers import drain

LIST_CALL = {"name": "sessions_list", "arguments": {}}


def scripted(*tool_calls: dict, on: str | None = None) -> dict:
    rule = {"match": ".*", "toolCalls": list(tool_calls), "reply": "{toolResult}"}
    if on:
        rule["on"] = [on]
    return {"type": "scripted", "rules": [rule]}


def ingest_and_run(operator, key: str, text: str = "go") -> Run:
    response = operator.post(
        f"/api/v1/sessions/{key}/messages/", {"messages": [user(text)], "run": True}
    )
    assert response.status_code == 201, response.content
    drain()
    return Run.objects.filter(session__key=f"agent:main:{key}").latest("created_at")


def test_an_agents_deny_list_holds_for_its_calls(operator, agents):
    make_agent("main", tools={"deny": ["sessions_list"]}, backend=scripted(LIST_CALL))
    make_session("main")
    run = ingest_and_run(operator, "main")
    assert json.loads(run.reply) == {
        "status": "forbidden",
        "error": "sessions_list is not allowed for agent main (tools.allow/tools.deny)",
    }
    result = Message.objects.get(session__key="agent:main:main", role="toolResult")
    assert '"status": "forbidden"' in result.content[0]["text"]


def test_a_models_arguments_are_checked_as_every_way_ins(operator, agents, fake_openai):
    """A NUL in a model's tool arguments (here from an OpenAI-compatible model) never reaches
    the tool: on PostgreSQL a DataError in the middle of the turn, on SQLite a label stored
    with a NUL. The call is refused, and the turn ends saying why, since the assistant message
    holding the call cannot be stored either."""
    backend = {"type": "openai", "baseUrl": fake_openai.base_url, "model": "fake-model"}
    make_agent("main", backend=backend)
    make_session("main")
    fake_openai.tool_calls(("sessions", {"action": "patch", "label": "a\u0000b"}))
    fake_openai.reply("done")
    run = ingest_and_run(operator, "main")
    assert run.status == Run.ERROR
    assert "arguments.label must not contain NUL characters" in run.error
    assert Session.objects.get(key="agent:main:main").label == ""


def test_an_agents_allow_list_holds_for_its_calls(operator, agents):
    make_agent("main", tools={"allow": ["agents_list"]}, backend=scripted(LIST_CALL))
    make_session("main")
    run = ingest_and_run(operator, "main")
    assert json.loads(run.reply)["error"] == (
        "sessions_list is not allowed for agent main (tools.allow/tools.deny)"
    )


def test_a_leaf_subagent_may_not_send(operator, agents):
    """A leaf sub-agent is offered sessions_yield only (seeds: no session tools)."""
    send = {
        "name": "sessions_send",
        "arguments": {"sessionKey": "main", "message": "up from below"},
    }
    spawn = {"name": "sessions_spawn", "arguments": {"agentId": "research", "task": "send up"}}
    make_agent(
        "main",
        subagents={"allowAgents": ["research"]},
        backend={
            "type": "scripted",
            "rules": [
                {"match": ".*", "on": ["completion", "announce"], "reply": "noted"},
                {"match": ".*", "toolCalls": [spawn], "reply": "spawned"},
            ],
        },
    )
    make_agent("research", backend=scripted(send, on="spawn"))
    make_session("main")
    ingest_and_run(operator, "main")
    child = Run.objects.get(kind="spawn")
    assert json.loads(child.reply) == {
        "status": "forbidden",
        "error": "sessions_send is not offered to a sub-agent at depth 1",
    }
    assert not Run.objects.filter(kind="send").exists()
    assert not Message.objects.filter(
        session__key="agent:main:main", content__icontains="up from below"
    )


@pytest.mark.parametrize(
    "tools, depth, subagent_tools, overrides",
    [
        ({}, 0, None, None),
        ({"deny": ["group:sessions"]}, 0, None, None),
        ({"allow": ["sessions_list", "agents_list"], "deny": ["agents_list"]}, 0, None, None),
        ({}, 1, None, None),
        ({}, 1, {"deny": ["sessions_yield"]}, None),
        ({"allow": ["*"]}, 1, {"allow": ["sessions_send", "sessions_list"]}, None),
        ({}, 0, None, {"deny": ["sessions_send"]}),
        ({"allow": ["*"]}, 2, None, {"allow": ["sessions_history"]}),
    ],
)
def test_a_call_is_refused_exactly_when_the_tool_was_not_offered(
    agents, tools, depth, subagent_tools, overrides
):
    """For every tool: offered (on an owner's turn: the owner-gated tool refuses other turns
    itself) if and only if the call is not refused, whatever the settings."""
    set_config(max_spawn_depth=2, subagent_tools=subagent_tools or {})
    make_agent("main", tools=tools)
    extra = {"toolOverrides": overrides} if overrides else {}
    session = make_session(f"agent:main:depth{depth}")
    Session.objects.filter(pk=session.pk).update(spawn_depth=depth, extra=extra)
    run = Run(session=Session.objects.get(pk=session.pk), kind="ingest")
    offered = set(offered_tools(run, owner=True))
    assert offered or tools.get("deny")  # the cases offer something to refuse beside
    for name in ALL_TOOLS:
        refused = not_offered(run, name)
        assert (refused is None) == (name in offered), (name, refused)
    assert not_offered(run, "no_such_tool") is None  # the registry says "Tool not available"
