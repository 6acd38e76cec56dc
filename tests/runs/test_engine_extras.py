"""The owner-only /send command, the OpenAI backend inside the engine, and REPLY_SKIP matching."""

import pytest

from sessions_app.models import Message, Run, Session
from tests.conftest import make_agent, make_session, set_config, user
from tests.runs.helpers import drain


@pytest.mark.parametrize(
    ("text", "policy", "reply"),
    [
        ("/send off", "deny", "⚙️ Send policy set to off."),
        ("/send on", "allow", "⚙️ Send policy set to on."),
        ("/send inherit", "", "⚙️ Send policy set to inherit."),
        ("/send sideways", "deny", "⚙️ Usage: /send on|off|inherit"),
    ],
)
def test_the_owner_sets_the_override_with_send(ingest, agents, text, policy, reply):
    session = make_session("discord:group:dev", channel="discord", sendPolicy="deny")
    response = ingest.post(
        f"/api/v1/sessions/{session.key}/messages/",
        {"messages": [user(text, senderIsOwner=True)], "run": True},
    )
    assert response.status_code == 201 and response.json()["command"]["reply"] == reply
    session.refresh_from_db()
    assert session.send_policy == policy
    last = Message.objects.filter(session=session).order_by("-seq").first()
    assert last.role == "assistant" and last.content[0]["text"] == reply
    assert not Run.objects.exists()  # a command, not a message for the agent


def test_a_send_command_from_anyone_else_is_an_ordinary_message(ingest, agents):
    session = make_session("discord:group:dev", channel="discord")
    response = ingest.post(
        f"/api/v1/sessions/{session.key}/messages/", {"messages": [user("/send off")]}
    )
    assert "command" not in response.json()
    session.refresh_from_db()
    assert session.send_policy == ""


def test_reply_skip_is_trimmed_and_case_sensitive(agent_main, agents):
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=5)
    make_agent(
        "main",
        backend={
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["step"], "reply": "reply_skip"}],
        },
    )
    make_agent(
        "research",
        backend={
            "type": "scripted",
            "rules": [
                {"match": ".*", "on": ["step"], "reply": "  REPLY_SKIP \n"},
                {"match": ".*", "reply": "hi"},
            ],
        },
    )
    make_session("main")
    make_session("agent:research:main")
    details = agent_main.details(
        "sessions_send", {"sessionKey": "agent:research:main", "message": "x", "timeoutSeconds": 0}
    )
    drain()
    chain = Run.objects.get(pk=details["runId"]).chain_id
    steps = list(
        Run.objects.filter(chain_id=chain, kind="step")
        .order_by("created_at")
        .values_list("session__key", "reply")
    )
    # lowercase reply_skip does not stop the loop; the padded exact token does
    assert steps == [("agent:main:main", "reply_skip"), ("agent:research:main", "REPLY_SKIP")]


def test_an_openai_agent_calls_session_tools_as_itself_and_usage_is_recorded(
    agent_main, agents, fake_openai
):
    set_config(visibility="agent", max_ping_pong_turns=0)
    make_agent(
        "main", backend={"type": "openai", "baseUrl": fake_openai.base_url, "model": "fake-model"}
    )
    make_session("main")
    target = make_session("cron:report")
    fake_openai.tool_calls(("sessions_list", {"limit": 5}))
    fake_openai.reply("Two sessions.")
    fake_openai.reply("ANNOUNCE_SKIP")
    details = agent_main.details(
        "sessions_send",
        {"sessionKey": target.key, "message": "How many sessions?", "timeoutSeconds": 0},
    )
    drain()
    run = Run.objects.get(pk=details["runId"])
    assert run.status == "ok" and run.reply == "Two sessions."
    tool_result = Message.objects.get(session=target, role="toolResult")
    assert (
        tool_result.tool_name == "sessions_list" and '"count": 2' in tool_result.content[0]["text"]
    )
    assert run.usage["totalTokens"] > 0
    assert (
        Session.objects.get(pk=target.pk).total_tokens
        == run.usage["totalTokens"]
        + Run.objects.get(chain_id=run.chain_id, kind="announce").usage["totalTokens"]
    )
