"""sessions_send end to end in one process: primary run, reply loop, announce, delivery."""

import pytest

from sessions_app.models import Message, Run
from tests.conftest import make_agent, make_session, set_config
from tests.runs.helpers import drain


@pytest.fixture
def pair(agents):
    """main (requester, webchat) and research (target, discord group), a2a allowed."""
    set_config(visibility="all", a2a_enabled=True)
    make_agent(
        "research",
        name="Research",
        backend={
            "type": "scripted",
            "rules": [
                {
                    "match": "Agent-to-agent announce",
                    "on": ["announce"],
                    "reply": "Posting: {input}",
                },
                {"match": ".*", "on": ["step"], "reply": "REPLY_SKIP"},
                {"match": "capital", "reply": "Paris."},
            ],
        },
    )
    make_agent(
        "main",
        backend={
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["step"], "reply": "Thanks!"}],
        },
    )
    requester = make_session("main", lastChannel="webchat")
    target = make_session("agent:research:discord:group:dev", channel="discord", chatType="group")
    return requester, target


def transcript(session):
    return [
        (m.role, m.content if isinstance(m.content, str) else m.content[0].get("text"))
        for m in Message.objects.filter(session=session).order_by("seq")
    ]


def test_accepted_send_runs_the_reply_loop_and_announce(agent_main, pair):
    requester, target = pair
    details = agent_main.details(
        "sessions_send",
        {
            "sessionKey": target.key,
            "message": "What is the capital of France?",
            "timeoutSeconds": 0,
        },
    )
    assert details["status"] == "accepted" and details["sessionKey"] == target.key
    assert details["delivery"] == {"status": "pending", "mode": "announce"}
    drain()
    primary = Run.objects.get(pk=details["runId"])
    assert primary.status == "ok" and primary.reply == "Paris."
    # target: the message with inter_session provenance, the reply, then turn 2 and the announce
    first = Message.objects.get(session=target, seq=1)
    assert first.provenance == {
        "kind": "inter_session",
        "sourceSessionKey": "agent:main:main",
        "sourceChannel": "webchat",
        "sourceTool": "sessions_send",
    }
    assert transcript(target)[:2] == [
        ("user", "What is the capital of France?"),
        ("assistant", "Paris."),
    ]
    # turn 1: the requester answers the target's reply; turn 2: the target says REPLY_SKIP
    assert ("user", "Paris.") in transcript(requester) and ("assistant", "Thanks!") in transcript(
        requester
    )
    kinds = list(
        Run.objects.filter(chain_id=primary.chain_id)
        .order_by("created_at")
        .values_list("kind", "status")
    )
    assert kinds == [("send", "ok"), ("step", "ok"), ("step", "ok"), ("announce", "ok")]
    announce = Run.objects.get(chain_id=primary.chain_id, kind="announce")
    assert "Original request: What is the capital of France?" in announce.extra_system_prompt
    assert "Round 1 reply: Paris." in announce.extra_system_prompt
    assert "Latest reply: Thanks!" in announce.extra_system_prompt
    delivery = announce.deliveries.get()
    assert (
        delivery.status == "pending"
        and delivery.channel == "discord"
        and delivery.text.startswith("Posting:")
    )
