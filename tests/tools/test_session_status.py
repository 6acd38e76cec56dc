"""session_status (9.6 §2.1) and the state-version log (§2.2): the card, stateVersion and
changesSince, the events each write records, model overrides, visibility, bad input, retention,
and GET /api/v1/sessions/{key}/status/."""

from __future__ import annotations

import uuid

import pytest

from sessions_app import state_log
from sessions_app.models import Run, Session
from sessions_app.runs.chain import Chain
from sessions_app.runs.engine import execute_run, finish_run, start_run
from sessions_app.state_log import SessionEvent
from sessions_app.tools.offer import tools_for
from tests.conftest import add_messages, assistant, make_session, set_config, user


def status(api, **args) -> dict:
    return api.details("session_status", args)


def kinds(details) -> list[str]:
    return [e["kind"] for e in details["stateChanges"]["events"]]


@pytest.fixture
def main(agents):
    session = make_session(
        "agent:main:main",
        origin={"provider": "discord", "accountId": "acct"},
        deliveryContext={"channel": "discord", "to": "channel:42"},
    )
    add_messages(session, user("hi"), assistant("hello", usage={"input": 12, "output": 3}))
    return session


def test_the_callers_own_session_by_default(agent_main, main):
    details = status(agent_main)
    assert details["ok"] is True and details["sessionKey"] == "agent:main:main"
    assert details["agentId"] == "main" and details["changedModel"] is False
    assert details["stateVersion"] == 1  # created
    assert "stateChanges" not in details and "model" not in details
    assert details["origin"] == {"provider": "discord", "accountId": "acct"}
    assert details["deliveryContext"] == {"channel": "discord", "to": "channel:42"}
    text = details["statusText"]
    assert text.startswith("🦞 Session status · agent:main:main\n🧠 Model: ")
    assert "🧮 Tokens: 12 in / 3 out · total 15" in text  # backfilled from the transcript
    assert "Route context:\n```json\n" in text and "Session state changes" not in text
    assert status(agent_main, sessionKey="current") == details


def test_the_tool_text_is_the_status_text(agent_main, main):
    body = agent_main.invoke("session_status", {}).json()
    assert body["result"]["content"] == [
        {"type": "text", "text": body["result"]["details"]["statusText"]}
    ]


def test_changes_since_lists_the_events_after_a_version(agent_main, ingest, main):
    ingest.post(
        "/api/v1/sessions/agent:main:main/messages/",
        {"messages": [{"role": "user", "content": "please look again", "senderName": "bob"}]},
    )
    make_session("agent:main:subagent:c1", spawnedBy="agent:main:main")
    details = status(agent_main, changesSince=0)
    assert kinds(details) == ["created", "human_direct_message", "child_spawned"]
    assert details["stateVersion"] == 3
    human = details["stateChanges"]["events"][1]
    assert human["actorType"] == "human" and human["actorId"] == "bob"
    assert human["summary"] == "please look again" and human["sequence"] == 2
    assert details["stateChanges"]["truncated"] is False
    assert details["stateChanges"]["earliestAvailableSequence"] == 1
    assert details["stateChanges"]["historyGap"] is False
    assert "Session state changes:\n```json\n" in details["statusText"]
    assert kinds(status(agent_main, changesSince=2)) == ["child_spawned"]
    assert kinds(status(agent_main, changesSince=3)) == []
    assert kinds(status(agent_main, changesSince=99)) == []


def test_messages_relayed_from_another_session_are_not_a_human_message(ingest, main):
    relayed = {"role": "user", "content": "x", "provenance": {"kind": "inter_session"}}
    ingest.post("/api/v1/sessions/agent:main:main/messages/", {"messages": [relayed]})
    assert state_log.version_of(main.pk) == 1


def run_to_end(session, *, fail: str | None = None) -> Run:
    run = start_run(session=session, kind="send", message="go", chain=Chain(uuid.uuid4(), ()))
    if fail:
        finish_run(run, fail, error="boom")
    else:
        assert execute_run(str(run.pk)) == Run.OK
    return run


def test_finished_runs_are_recorded(agent_main, main):
    done = run_to_end(main)
    failed = run_to_end(main, fail=Run.TIMEOUT)
    aborted = run_to_end(main, fail=Run.ABORTED)
    events = status(agent_main, changesSince=1)["stateChanges"]["events"]
    assert [(e["kind"], e["runId"], e.get("payload")) for e in events] == [
        ("run_completed", str(done.pk), None),
        ("run_failed", str(failed.pk), {"outcome": "timeout"}),
        ("run_failed", str(aborted.pk), {"outcome": "cancelled"}),
    ]
    assert {e["actorType"] for e in events} == {"agent"} and events[1]["summary"].endswith("boom")


def test_at_most_200_events_and_a_gap_after_retention(agent_main, main):
    for _ in range(205):
        state_log.record(main.pk, "goal_changed", actor_type="system", summary="g")
    changes = status(agent_main, changesSince=0)["stateChanges"]
    assert len(changes["events"]) == 200 and changes["truncated"] is True
    assert changes["events"][-1]["sequence"] == 200
    SessionEvent.objects.filter(session=main).update(occurred_at=0)
    assert state_log.prune() == 205  # all but the head
    details = status(agent_main, changesSince=3)
    assert details["stateVersion"] == 206
    assert details["stateChanges"]["historyGap"] is True
    assert details["stateChanges"]["earliestAvailableSequence"] == 206
    assert status(agent_main, changesSince=205)["stateChanges"]["historyGap"] is False
    state_log.record(main.pk, "goal_changed", actor_type="system", summary="g")
    assert state_log.version_of(main.pk) == 207  # heads stay monotonic


def test_model_override_set_and_cleared(agent_main, main):
    details = status(agent_main, model="openai/gpt-4o-mini")
    assert details["changedModel"] is True
    assert details["model"] == "openai/gpt-4o-mini" and details["modelProvider"] == "openai"
    assert details["modelOverride"] == "openai/gpt-4o-mini"
    assert "🧠 Model: openai/gpt-4o-mini" in details["statusText"]
    assert Session.objects.get(pk=main.pk).model == "openai/gpt-4o-mini"
    assert status(agent_main, model="openai/gpt-4o-mini")["changedModel"] is False
    cleared = status(agent_main, model="default")
    assert cleared["changedModel"] is True and cleared["modelOverride"] is None
    assert Session.objects.get(pk=main.pk).model == ""


def test_another_visible_session_and_session_ids(agent_main, main):
    child = make_session("agent:main:subagent:c1", spawnedBy="agent:main:main")
    assert status(agent_main, sessionKey="agent:main:subagent:c1")["sessionKey"] == child.key
    assert status(agent_main, sessionKey=child.session_id)["sessionKey"] == child.key


def test_visibility_denials_use_the_status_prefix(agent_main, main, agents):
    make_session("agent:other:main")
    make_session("agent:main:cron:daily")
    restricted = (
        "Session status visibility is restricted. Set tools.sessions.visibility=all to allow "
        "cross-agent access."
    )
    assert status(agent_main, sessionKey="agent:other:main") == {
        "status": "forbidden",
        "error": restricted,
    }
    # A session that does not exist is refused the same way: its absence is not told.
    assert status(agent_main, sessionKey="agent:other:nope")["error"] == restricted
    assert status(agent_main, sessionKey="agent:main:cron:daily")["error"] == (
        "Session status visibility is restricted to the current session tree "
        "(tools.sessions.visibility=tree)."
    )
    set_config(visibility="all", a2a_enabled=False)
    assert status(agent_main, sessionKey="agent:other:main")["error"] == (
        "Agent-to-agent status is disabled. Set tools.agentToAgent.enabled=true to allow "
        "cross-agent access."
    )
    set_config(visibility="all", a2a_enabled=True, a2a_allow=["main"])
    assert status(agent_main, sessionKey="agent:other:main")["error"] == (
        "Agent-to-agent status denied by tools.agentToAgent.allow."
    )
    set_config(a2a_allow=[])
    assert status(agent_main, sessionKey="agent:other:main")["sessionKey"] == "agent:other:main"


def test_unknown_sessions(agent_main, main):
    set_config(visibility="agent")  # under tree, an unknown key is refused as outside the tree
    assert status(agent_main, sessionKey="agent:main:nope") == {
        "status": "error",
        "error": "Unknown sessionKey: agent:main:nope",
    }
    missing = str(uuid.uuid4())
    assert status(agent_main, sessionKey=missing)["error"] == f"Unknown sessionId: {missing}"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"changesSince": -1}, "changesSince must be a non-negative integer"),
        ({"changesSince": "x"}, "changesSince must be a non-negative integer"),
        ({"changesSince": True}, "changesSince must be a non-negative integer"),
        ({"model": 5}, "model must be a string"),
        ({"model": "a b"}, "model must not contain spaces"),
        ({"model": "m" * 201}, "model must be at most 200 characters"),
        ({"sessionKey": ["main"]}, "sessionKey must be a string"),
    ],
)
def test_bad_input_is_a_400(agent_main, main, args, message):
    response = agent_main.invoke("session_status", args)
    assert response.status_code == 400, response.content
    assert response.json()["error"]["message"] == message


def test_sub_agents_never_get_the_tool():
    names = {t.name for t in tools_for([], [], is_subagent=True, orchestrator=True)}
    assert "session_status" not in names and "sessions_search" in names
    assert "session_status" not in {t.name for t in tools_for([], [], is_subagent=True)}


# --- GET /api/v1/sessions/{key}/status/ ------------------------------------------------------


def test_rest_status_is_the_tool(agent_main, main):
    response = agent_main.get("/api/v1/sessions/agent%3Amain%3Amain/status/", {"changesSince": 0})
    assert response.status_code == 200
    body = response.json()
    tool = status(agent_main, sessionKey="agent:main:main", changesSince=0)
    assert body["stateChanges"] == tool["stateChanges"] and body["sessionKey"] == "agent:main:main"


@pytest.mark.parametrize(
    ("key", "params", "code", "message"),
    [
        ("agent:main:main", {"model": "x"}, 400, "Unknown argument for session status: model"),
        (
            "agent:main:main",
            {"changesSince": "-2"},
            400,
            "changesSince must be a non-negative integer",
        ),
        ("agent:main:nope", {}, 404, "Unknown sessionKey: agent:main:nope"),
        (
            "agent:other:main",
            {},
            403,
            "Session status visibility is restricted. Set tools.sessions.visibility=all to "
            "allow cross-agent access.",
        ),
    ],
)
def test_rest_status_errors(agent_main, main, key, params, code, message):
    set_config(visibility="agent")
    response = agent_main.get(f"/api/v1/sessions/{key}/status/", params)
    assert response.status_code == code, response.content
    assert response.json()["error"]["message"] == message


def test_the_retention_runs_hourly_after_migrate(db):
    from django_q.models import Schedule

    schedule = Schedule.objects.get(name="openclaw-state-log-prune")
    assert schedule.func == "sessions_app.state_log.prune" and schedule.schedule_type == "H"


def test_an_ingest_key_cannot_ask_for_status(ingest, main):
    assert ingest.invoke("session_status", {}).status_code == 403
    assert ingest.get("/api/v1/sessions/agent:main:main/status/").status_code == 403


def test_active_route_only_for_the_callers_own_session_while_it_runs(agent_main, main):
    assert "active" not in status(agent_main)
    Session.objects.filter(pk=main.pk).update(
        run_status="running", last_channel="discord", last_to="channel:42"
    )
    assert status(agent_main)["active"] == {"channel": "discord", "to": "channel:42"}
    child = make_session("agent:main:subagent:c1", spawnedBy="agent:main:main")
    Session.objects.filter(pk=child.pk).update(run_status="running", last_channel="discord")
    assert "active" not in status(agent_main, sessionKey=child.key)
