"""sessions_send validation and resolution texts, loop safety, the send policy at every delivery
point, ingest run=true, and run abort."""

import pytest

from policies_app.models import SendPolicy, SendPolicyRule
from sessions_app.models import Message, Run
from tests.conftest import add_messages, make_agent, make_session, set_config, user
from tests.runs.helpers import drain

DISCORD_DEV = "agent:main:discord:group:dev"


def deny_discord_groups():
    policy = SendPolicy.load()
    policy.enabled = True
    policy.save()
    SendPolicyRule.objects.create(
        policy=policy, position=1, action="deny", channel="discord", chat_type="group"
    )


@pytest.fixture
def sessions(agents):
    set_config(visibility="agent", max_ping_pong_turns=0)
    make_agent(
        "main",
        backend={
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["announce"], "reply": "Announcing."}],
        },
    )
    return {
        "main": make_session("main", lastChannel="webchat"),
        "dev": make_session(DISCORD_DEV, channel="discord", chatType="group"),
        "cron": make_session("cron:nightly", label="nightly"),
    }


def send(api, **args):
    return api.details("sessions_send", {"message": "hello", "timeoutSeconds": 0, **args})


def test_message_is_required(agent_main, sessions):
    response = agent_main.invoke("sessions_send", {"sessionKey": DISCORD_DEV})
    assert response.status_code == 400 and response.json()["error"]["message"] == "message required"


def test_key_or_label_is_required_and_not_both(agent_main, sessions):
    neither = send(agent_main)
    assert (
        neither["status"] == "error"
        and neither["error"] == "Either sessionKey or label is required"
    )
    assert "runId" in neither
    both = send(agent_main, sessionKey=DISCORD_DEV, label="nightly")
    assert both["error"] == "Provide either sessionKey or label (not both)."


def test_label_resolves_to_the_newest_session_with_it(agent_main, sessions):
    details = send(agent_main, label="nightly")
    assert details["status"] == "accepted" and details["sessionKey"] == "agent:main:cron:nightly"
    assert send(agent_main, label="nope")["error"] == "No session found with label: nope"


def test_label_lookup_across_agents_needs_agent_to_agent(agent_main, sessions):
    make_session("agent:research:cron:x", label="x")
    details = send(agent_main, label="x", agentId="research")
    assert details["status"] == "forbidden"
    assert details["error"] == (
        "Agent-to-agent messaging is disabled. Set tools.agentToAgent.enabled=true to allow cross-agent sends."
    )
    set_config(a2a_enabled=True, a2a_allow=["main"])
    assert (
        send(agent_main, label="x", agentId="research")["error"]
        == "Agent-to-agent messaging denied by tools.agentToAgent.allow."
    )


def test_a_session_id_resolves_and_an_unknown_one_is_an_error(agent_main, sessions):
    assert send(agent_main, sessionKey=str(sessions["dev"].session_id))["sessionKey"] == DISCORD_DEV
    unknown = send(agent_main, sessionKey="5d0c3a52-8f1e-4c7e-9a8e-000000000000")
    assert unknown["status"] == "error" and unknown["error"].startswith("Session not found:")


def test_visibility_refusal_carries_run_id_and_session_key(agent_main, sessions):
    set_config(visibility="self")
    details = send(agent_main, sessionKey=DISCORD_DEV)
    assert (
        details["status"] == "forbidden"
        and details["sessionKey"] == DISCORD_DEV
        and details["runId"]
    )
    assert details["error"] == (
        "Session send visibility is restricted to the current session (tools.sessions.visibility=self)."
    )


def test_policy_deny_blocks_a_send_and_starts_nothing(agent_main, sessions):
    deny_discord_groups()
    details = send(agent_main, sessionKey=DISCORD_DEV)
    assert details["status"] == "error" and details["error"] == "send blocked by session policy"
    assert not Run.objects.exists() and not Message.objects.filter(session=sessions["dev"]).exists()


def test_a_session_override_allows_a_send_the_rules_deny(agent_main, operator, sessions):
    deny_discord_groups()
    operator.patch(f"/api/v1/sessions/{DISCORD_DEV}/", {"sendPolicy": "allow"})
    assert send(agent_main, sessionKey=DISCORD_DEV)["status"] == "accepted"


def test_policy_deny_blocks_the_announce_delivery(agent_main, sessions):
    details = send(agent_main, sessionKey=DISCORD_DEV)
    deny_discord_groups()  # between the send and its announce
    drain()
    announce = Run.objects.get(
        chain_id=Run.objects.get(pk=details["runId"]).chain_id, kind="announce"
    )
    delivery = announce.deliveries.get()
    assert delivery.status == "blocked" and "channel=discord" in delivery.decided_by


def test_policy_deny_blocks_the_sub_agent_report_delivery(agent_main, operator, sessions):
    operator.patch("/api/v1/sessions/main/", {"sendPolicy": "deny"})
    agent_main.details("sessions_spawn", {"task": "look around"})
    drain()
    delivery = sessions["main"].deliveries.get(kind="subagent_announce")
    assert delivery.status == "blocked"
    # the report itself is still in the requester's transcript: nothing is lost
    assert Message.objects.filter(
        session=sessions["main"], provenance__sourceTool="sessions_spawn"
    ).exists()


def test_ingest_run_true_starts_a_reply_run_and_delivers_it(ingest, sessions):
    response = ingest.post(
        f"/api/v1/sessions/{DISCORD_DEV}/messages/", {"messages": [user("ping?")], "run": True}
    )
    assert response.status_code == 201 and response.json()["run"]["status"] == "accepted"
    drain()
    run = Run.objects.get(pk=response.json()["run"]["runId"])
    assert run.kind == "ingest" and run.status == "ok" and run.reply == "ACK: ping?"
    assert run.deliveries.get().kind == "reply"


def test_ingest_run_true_is_refused_by_the_policy_but_keeps_the_message(ingest, sessions):
    deny_discord_groups()
    response = ingest.post(
        f"/api/v1/sessions/{DISCORD_DEV}/messages/", {"messages": [user("ping?")], "run": True}
    )
    assert response.status_code == 201
    assert response.json()["run"] == {"status": "error", "error": "send blocked by session policy"}
    assert Message.objects.filter(session=sessions["dev"]).count() == 1 and not Run.objects.exists()


def test_the_triangle_a_b_c_a_is_refused(agents):
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=0)
    for me, nxt in (("a", "b"), ("b", "c"), ("c", "a")):
        make_agent(
            me,
            backend={
                "type": "scripted",
                "rules": [
                    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
                    {
                        "match": "go",
                        "on": ["send"],
                        "toolCalls": [
                            {
                                "name": "sessions_send",
                                "arguments": {"sessionKey": f"agent:{nxt}:main", "message": "go"},
                            }
                        ],
                        "reply": "{toolResult}",
                    },
                ],
            },
        )
        make_session(f"agent:{me}:main")
    from django.test import Client

    from sessions_app.models import ApiKey
    from tests.conftest import Api

    _, token = ApiKey.generate(scope="agent", agent_id="a")
    Api(Client(), token).details(
        "sessions_send", {"sessionKey": "agent:b:main", "message": "go", "timeoutSeconds": 0}
    )
    drain()
    refused = Run.objects.get(session__key="agent:c:main", kind="send")
    assert (
        "sessions_send refused: this hop would close an agent loop (a → b → c → a)" in refused.reply
    )
    assert refused.chain_agents == ["a", "b", "c"]
    assert not Run.objects.filter(session__key="agent:a:main", kind="send").exists()


def test_a_chain_stops_at_its_turn_cap(agents):
    set_config(visibility="agent", max_ping_pong_turns=0, chain_max_turns=4)
    make_agent(
        "main",
        backend={
            "type": "scripted",
            "rules": [
                {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
                {
                    "match": "again",
                    "on": ["send"],
                    "toolCalls": [
                        {
                            "name": "sessions_send",
                            # timeout 0: 9.6 refuses a waited send to the calling session.
                            "arguments": {
                                "sessionKey": "main",
                                "message": "again",
                                "timeoutSeconds": 0,
                            },
                        }
                    ],
                    "reply": "{toolResult}",
                },
            ],
        },
    )
    make_session("main")
    make_session("cron:loop")
    from django.test import Client

    from sessions_app.models import ApiKey
    from tests.conftest import Api

    _, token = ApiKey.generate(scope="agent", agent_id="main", session_key="agent:main:cron:loop")
    Api(Client(), token).details(
        "sessions_send", {"sessionKey": "main", "message": "again", "timeoutSeconds": 0}
    )
    drain()
    runs = Run.objects.filter(kind="send")
    assert runs.count() <= 4
    assert any("has used its 4 turns" in r.reply for r in runs)


def test_abort_stops_a_queued_run(agent_main, sessions):
    details = send(agent_main, sessionKey=DISCORD_DEV)
    response = agent_main.post(f"/api/v1/runs/{details['runId']}/abort/", {})
    assert response.status_code == 200 and response.json()["aborted"] is True
    assert response.json()["status"] == "aborted"
    drain()
    assert Run.objects.get(pk=details["runId"]).status == "aborted"
    assert not Message.objects.filter(session=sessions["dev"], role="assistant").exists()


def test_runs_of_other_agents_are_not_visible(outsider, agent_main, sessions):
    details = send(agent_main, sessionKey=DISCORD_DEV)
    assert outsider.get(f"/api/v1/runs/{details['runId']}/").status_code == 403
    assert agent_main.get(f"/api/v1/runs/{details['runId']}/").json()["status"] == "queued"
    assert agent_main.get("/api/v1/runs/not-a-uuid/").status_code == 400


def test_rest_send_and_spawn(agent_main, sessions):
    sent = agent_main.post(
        f"/api/v1/sessions/{DISCORD_DEV}/send/", {"message": "hi", "timeoutSeconds": 0}
    )
    assert sent.status_code == 200 and sent.json()["status"] == "accepted"
    spawned = agent_main.post("/api/v1/spawn/", {"task": "look"})
    assert spawned.status_code == 200 and spawned.json()["status"] == "accepted"
    add_messages(sessions["main"], user("x"))
