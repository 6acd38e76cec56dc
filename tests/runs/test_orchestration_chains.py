"""Loop safety and sub-agent trees (runs/chain.py): a fan-out is not a long conversation, a
completion turn may spawn again, and a child still may not message back up its own path."""

from __future__ import annotations

import json
import uuid

import pytest
from django.db import transaction

from sessions_app.models import Completion, Message, Run, Session
from sessions_app.runs import engine
from sessions_app.runs.chain import Chain
from tests.conftest import make_agent, make_session, set_config
from tests.runs.helpers import drain

CHILD_RULES = [
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    {
        "match": "call home",
        "on": ["spawn"],
        "toolCalls": [
            {
                "name": "sessions_send",
                "arguments": {
                    "sessionKey": "agent:main:main",
                    "message": "hi",
                    "timeoutSeconds": 0,
                },
            }
        ],
        "reply": "{toolResult}",
    },
    {"match": "round two", "on": ["spawn"], "reply": "Round two done."},
    {"match": ".*", "on": ["spawn"], "reply": "Part done."},
]


def spawn_call(task: str) -> dict:
    return {"name": "sessions_spawn", "arguments": {"agentId": "research", "task": task}}


def main_rules(children: int) -> list[dict]:
    return [
        {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
        {
            "match": "^fan out$",
            "on": ["ingest"],
            "toolCalls": [
                *(spawn_call(f"part {i}") for i in range(children)),
                {"name": "sessions_yield", "arguments": {}},
            ],
        },
        {"match": "^one$", "on": ["ingest"], "toolCalls": [spawn_call("first round")]},
        {"match": "^home$", "on": ["ingest"], "toolCalls": [spawn_call("call home")]},
        {"match": "yielded for have all completed", "on": ["completion"], "reply": "All parts."},
        # Round one's result starts round two, from the completion turn itself.
        {
            "match": "Part done",
            "on": ["completion"],
            "toolCalls": [spawn_call("round two")],
            "reply": "Started round two.",
        },
        {"match": ".*", "on": ["completion"], "reply": "All done."},
    ]


@pytest.fixture
def home(agents):
    def setup(children: int = 1, **config):
        set_config(**config)
        make_agent(
            "main",
            backend={"type": "scripted", "rules": main_rules(children)},
            subagents={"allowAgents": ["research"], "maxChildrenPerAgent": max(children, 1)},
        )
        make_agent("research", backend={"type": "scripted", "rules": CHILD_RULES})
        return make_session("main")

    return setup


def ingest(session: Session, text: str) -> Run:
    with transaction.atomic():
        return engine.start_run(
            session=session, kind="ingest", message=text, chain=Chain(uuid.uuid4(), ("main",))
        )


def tool_results(session: Session) -> list[dict]:
    return [
        json.loads(m.content[0]["text"])
        for m in Message.objects.filter(session=session, role="toolResult").order_by("seq")
    ]


def test_a_fan_out_wider_than_the_chain_cap_is_spawned_and_heard_in_one_turn(home):
    main = home(children=8, chain_max_turns=3)
    ingest(main, "fan out")
    drain()
    statuses = [r["status"] for r in tool_results(main)]
    assert statuses == ["accepted"] * 8 + ["yielded"]
    (successor,) = Run.objects.filter(session=main, kind="completion").exclude(started_at=None)
    assert successor.status == Run.OK
    assert (
        Message.objects.get(session=main, seq=successor.input_seq).content.count("Part done.") == 8
    )
    assert set(Completion.objects.values_list("status", flat=True)) == {Completion.DELIVERED}


def test_each_child_gets_a_chain_of_its_own_on_the_spawners_path(home):
    main = home()
    ingest(main, "one")
    drain()
    turn = Run.objects.get(session=main, kind="ingest")
    first, second = Run.objects.filter(kind="spawn").order_by("created_at")
    assert first.chain_agents == second.chain_agents == ["main", "research"]
    assert len({turn.chain_id, first.chain_id, second.chain_id}) == 3


def test_a_completion_turn_may_spawn_the_same_agent_again(home):
    """Round one's completion turn spawns `research` again (a hop from main, not a loop back
    through research), and round two's result comes back too."""
    main = home(chain_max_turns=3)
    ingest(main, "one")
    drain()
    assert [r["status"] for r in tool_results(main)] == ["accepted", "accepted"]
    replies = Message.objects.filter(session=main, role="assistant").order_by("seq")
    texts = [b["text"] for m in replies for b in m.content if b.get("type") == "text"]
    assert texts[-2:] == ["Started round two.", "All done."]
    turns = Run.objects.filter(session=main, kind="completion").order_by("created_at")
    assert [t.chain_agents for t in turns] == [["main"], ["main"]]


def test_a_child_still_may_not_message_back_up_its_path(home):
    main = home(visibility="all", a2a_enabled=True)
    # Sub-agents are not offered sessions_send; an operator may give it to them on purpose.
    make_agent("research", backend={"type": "scripted", "rules": CHILD_RULES},
               tools={"allow": ["*"]})  # fmt: skip
    ingest(main, "home")
    drain()
    child_run = Run.objects.get(kind="spawn")
    assert (
        "sessions_send refused: this hop would close an agent loop (main → research → main)"
        in child_run.reply
    )
    assert not Run.objects.filter(session=main, kind="send").exists()
