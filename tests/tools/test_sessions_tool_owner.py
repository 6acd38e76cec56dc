"""The `sessions` tool is owner-gated (9.6 §2.3, §1.10 [obs]): a model run is offered it only
on a turn whose input came from the owner (an operator key, or a message its gateway marked
`senderIsOwner`), never as a sub-agent, and a call from any other turn is a forbidden result.
Over /tools/invoke and REST the API key decides (docs/sessions-admin.md)."""

from __future__ import annotations

import json

import pytest

from sessions_app.manage.session_admin import NOT_OWNER_TEXT, SUBAGENT_TEXT
from sessions_app.models import Message, Run, Session
from sessions_app.tools.offer import tools_for
from tests.conftest import make_agent, make_session, set_config, user
from tests.runs.helpers import drain

MAIN = "agent:main:main"
WORK = "agent:main:work"
TARGET = "agent:main:discord:group:dev"
RULES = [
    {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    {
        "match": "relabel",
        "toolCalls": [
            {
                "name": "sessions",
                "arguments": {"action": "patch", "sessionKey": TARGET, "label": "by the model"},
            }
        ],
        "reply": "{toolResult}",
    },
    {
        "match": "regroup",
        "toolCalls": [{"name": "sessions", "arguments": {"action": "group_set", "names": ["Ops"]}}],
        "reply": "{toolResult}",
    },
    {"match": ".*", "reply": "{tools}"},
]


@pytest.fixture
def world(agents):
    # Particular: main and research scripted to call the owner-only tool, "all" visibility.
    set_config(visibility="all")
    make_agent(
        "main",
        backend={"type": "scripted", "rules": RULES},
        tools={"allow": ["*"]},
        subagents={"allowAgents": ["research"]},
    )
    make_agent("research", backend={"type": "scripted", "rules": RULES}, tools={"allow": ["*"]})
    for key in (MAIN, WORK):
        make_session(key)
    make_session(TARGET, label="dev")


def last_reply(key: str) -> str:
    reply = Message.objects.filter(session__key=key, role="assistant").order_by("-seq").first()
    return reply.to_transcript()["content"][0]["text"]


def offered(key: str) -> list[str]:
    return last_reply(key).split(",")


def ingest_run(api, text: str, **marks) -> Run:
    response = api.post(
        f"/api/v1/sessions/{MAIN}/messages/",
        {"messages": [user(text, **marks)], "run": True},
    )
    assert response.status_code == 201, response.content
    run = Run.objects.get(pk=response.json()["run"]["runId"])
    drain()
    run.refresh_from_db()
    return run


@pytest.mark.parametrize(
    ("key_fixture", "marks", "owner"),
    [
        ("operator", {}, True),  # the operator key's holder is the owner
        ("operator", {"senderIsOwner": False}, False),  # the gateway says otherwise
        ("ingest", {}, False),  # a channel user, forwarded by a bridge
        ("ingest", {"senderIsOwner": True}, True),  # the bridge marked the owner's message
    ],
)
def test_ingested_turns_are_offered_it_only_from_the_owner(
    request, world, key_fixture, marks, owner
):
    run = ingest_run(request.getfixturevalue(key_fixture), "which tools?", **marks)
    assert run.status == Run.OK and run.sender_is_owner is owner
    tools = offered(MAIN)
    assert ("sessions" in tools) is owner
    assert "sessions_list" in tools  # the other tools stay


def test_an_operators_send_is_an_owner_turn_and_an_agents_send_is_not(world, operator, agent_main):
    args = {"sessionKey": WORK, "message": "which tools?", "timeoutSeconds": 0}
    assert operator.details("sessions_send", args)["status"] == "accepted"
    assert agent_main.details("sessions_send", args)["status"] == "accepted"
    drain()
    sends = Run.objects.filter(session__key=WORK, kind="send").order_by("created_at")
    assert [r.sender_is_owner for r in sends] == [True, False]
    assert ["sessions" in r.reply.split(",") for r in sends] == [True, False]
    # The ping-pong steps back in the requester's session are another agent's words.
    assert not Run.objects.filter(kind="step", sender_is_owner=True).exists()


def test_an_owner_turn_manages_sessions(world, operator):
    run = ingest_run(operator, "relabel the dev group")
    assert run.status == Run.OK
    assert json.loads(last_reply(MAIN))["status"] == "updated"
    assert Session.objects.get(key=TARGET).label == "by the model"


def test_the_owners_turn_may_change_the_group_catalog(world, operator, ingest):
    """The catalog is the owner's: an operator key's, or a turn the owner started (an agent
    key over the API may not: test_sessions_manage_api)."""
    assert ingest_run(ingest, "regroup", senderIsOwner=True).status == Run.OK
    assert json.loads(last_reply(MAIN))["groups"] == [{"name": "Ops", "position": 0}]


def test_a_non_owner_turn_calling_it_anyway_is_refused(world, ingest):
    """A model (here a script) may call a tool it was not offered: the tool refuses."""
    ingest_run(ingest, "relabel the dev group")
    assert json.loads(last_reply(MAIN)) == {"status": "forbidden", "error": NOT_OWNER_TEXT}
    assert Session.objects.get(key=TARGET).label == "dev"


def test_a_sub_agent_is_never_offered_it_even_spawned_by_the_owner(world, operator):
    spawned = operator.details("sessions_spawn", {"task": "which tools?"})
    assert spawned["status"] == "accepted", spawned
    drain()
    child = spawned["childSessionKey"]
    assert "sessions" not in Run.objects.get(pk=spawned["runId"]).reply.split(",")
    # Sent to by the owner, the child is still a sub-agent; and its call is refused.
    args = {"sessionKey": child, "message": "relabel it", "timeoutSeconds": 0}
    sent = operator.details("sessions_send", args)
    assert sent["status"] == "accepted", sent
    drain()
    reply = Run.objects.get(pk=sent["runId"]).reply
    assert json.loads(reply) == {"status": "forbidden", "error": SUBAGENT_TEXT}
    assert Session.objects.get(key=TARGET).label == "dev"


def test_no_allow_list_adds_it_to_a_non_owner_turn():
    def names(**kw):
        return {t.name for t in tools_for(["*"], [], **kw)}

    assert "sessions" in names(is_subagent=False, owner_turn=True)
    assert "sessions" not in names(is_subagent=False, owner_turn=False)
    assert "sessions" not in names(is_subagent=True, owner_turn=False)
    assert "sessions" not in {t.name for t in tools_for([], [], is_subagent=False)}


# --- API principals: the key decides, the same on /tools/invoke and REST ---------------------


def tool_patch(api, key: str, **fields) -> tuple[int, dict]:
    response = api.invoke("sessions", {"action": "patch", "sessionKey": key, **fields})
    body = response.json()
    return response.status_code, body["result"]["details"] if body.get("ok") else body


def rest_patch(api, key: str, **fields) -> tuple[int, dict]:
    response = api.patch(f"/api/v1/sessions/{key}/", fields)
    return response.status_code, response.json()


@pytest.mark.parametrize("way", [tool_patch, rest_patch])
def test_api_keys_decide_over_the_tool_and_rest_alike(world, operator, agent_main, outsider, way):
    """Operator keys are the owner: any session. Agent keys act for the owner within what their
    visibility shows (tools.sessions.visibility); another agent's key is refused, 403."""
    assert way(operator, TARGET, pinned=True) == (
        200,
        {"status": "updated", "sessionKey": TARGET, "updated": ["pinned"]},
    )
    assert way(agent_main, TARGET, color="red")[1]["updated"] == ["color"]
    hidden = {
        "ok": False,
        "error": {
            "type": "forbidden",
            "message": f"Session not visible from session tools: {TARGET}",
        },
    }
    assert way(outsider, TARGET, color="blue") == (403, hidden)
    set_config(visibility="tree")  # agent_main's key no longer sees the group session
    assert way(agent_main, TARGET, color="green") == (403, hidden)
    assert Session.objects.get(key=TARGET).color == "red"
