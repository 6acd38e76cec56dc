"""sessions_spawn's 9.6 parameters (9.6 §4.4): context isolated|fork (same agent, native only, the
~100K-token cap), taskName (its texts, and `subagents` targeting by it), resolvedModel and
resolvedProvider, and the visible/cloud/swarm parameters 9.6 accepts: accepted, refused with
9.6's texts, or accepted and named as not applied."""

from __future__ import annotations

import pytest

from sessions_app.models import Message, Run, Session
from sessions_app.runs import flows, fork
from sessions_app.runs import spawn as spawning
from tests.conftest import add_messages, assistant, make_agent, make_session, tool_result, user
from tests.runs.helpers import drain

# The requester's own agent scripts a turn that calls a tool, then forks a child.
MAIN_RULES = [
    {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
    {
        "match": "fork now",
        "on": ["ingest"],
        "toolCalls": [
            {"name": "agents_list", "arguments": {}},
            {
                "name": "sessions_spawn",
                "arguments": {"task": "carry on", "context": "fork", "taskName": "carry"},
            },
        ],
        "reply": "spawned",
    },
    {"match": "break", "on": ["spawn"], "error": "the model refused"},
    {"match": ".*", "on": ["spawn"], "reply": "child done"},
]


@pytest.fixture
def home(agents):
    make_agent(
        "main",
        subagents={"allowAgents": ["research"]},
        backend={"type": "scripted", "rules": MAIN_RULES},
    )
    make_agent(
        "research",
        backend={
            "type": "scripted",
            "models": ["gpt-x"],
            "rules": [
                {"match": ".*", "on": ["announce"], "reply": "ANNOUNCE_SKIP"},
                {"match": "slow", "on": ["spawn"], "delayMs": 60_000, "reply": "late"},
                {"match": ".*", "on": ["spawn"], "reply": "done"},
            ],
        },
    )
    session = make_session("agent:main:main")
    add_messages(session, user("What do we know about WAL?"), assistant("Checkpoints, mostly."))
    return session


def spawn(api, **args) -> dict:
    return api.details("sessions_spawn", {"task": "Find papers", **args})


def child_messages(details: dict) -> list[Message]:
    child = Session.objects.get(key=details["childSessionKey"])
    return list(Message.objects.filter(session=child).order_by("seq"))


def error_of(api, args: dict) -> str:
    response = api.invoke("sessions_spawn", {"task": "x", **args})
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


# --- context ------------------------------------------------------------------------------------


def test_isolated_is_the_default_and_is_reported(agent_main, home):
    details = spawn(agent_main)
    assert details["status"] == "accepted" and details["context"] == "isolated"
    assert [m.content for m in child_messages(details)] == ["Find papers"]


def test_fork_copies_the_requester_transcript_before_the_task(agent_main, home):
    details = spawn(agent_main, context="fork")
    assert details["status"] == "accepted" and details["context"] == "fork"
    messages = child_messages(details)
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert messages[0].content == "What do we know about WAL?"
    assert messages[1].content == [{"type": "text", "text": "Checkpoints, mostly."}]
    assert all(m.extra["forkOf"] == "agent:main:main" for m in messages[:2])
    assert messages[2].content == "Find papers" and "forkOf" not in (messages[2].extra or {})
    run = Run.objects.get(pk=details["runId"])
    assert run.input_seq == messages[2].seq and run.flow["context"] == "fork"


def test_fork_from_a_turn_carries_the_turn_and_its_finished_tool_results(ingest, home):
    response = ingest.post(
        "/api/v1/sessions/main/messages/", {"messages": [user("fork now")], "run": True}
    )
    assert response.status_code == 201, response.content
    drain()
    run = Run.objects.get(kind="spawn", requester_key="agent:main:main")
    assert run.flow["taskName"] == "carry" and run.flow["context"] == "fork"
    messages = list(Message.objects.filter(session=run.session).order_by("seq"))
    forked = [m for m in messages if (m.extra or {}).get("forkOf")]
    assert [m.role for m in forked] == ["user", "assistant", "user", "assistant", "toolResult"]
    assert forked[2].content == "fork now"
    # The turn's agents_list call and its result, without the unanswered sessions_spawn call.
    calls = [b["name"] for b in forked[3].content if b["type"] == "toolCall"]
    assert calls == ["agents_list"] and forked[4].tool_name == "agents_list"
    task = messages[len(forked)]
    assert task.role == "user" and task.content == "carry on" and run.input_seq == task.seq


def test_a_forked_tool_result_is_never_the_childs_result(agent_main, home):
    add_messages(home, tool_result("the requester's own finding"))
    details = spawn(agent_main, context="fork", task="break it")
    drain()
    run = Run.objects.get(pk=details["runId"])
    assert run.status == Run.ERROR and flows.child_result(run) == "(no output)"


def test_fork_needs_the_same_agent(agent_main, home):
    assert spawn(agent_main, context="fork", agentId="research") == {
        "status": "error",
        "error": 'context="fork" currently requires the same target agent as the requester; '
        'use context="isolated" for cross-agent spawns.',
    }
    assert not Run.objects.exists()


def test_fork_is_for_native_sub_agents_only(agent_main, home):
    assert spawn(agent_main, context="fork", runtime="acp") == {
        "status": "error",
        "error": 'context="fork" is only supported for runtime="subagent".',
    }


def test_a_fork_over_the_cap_starts_isolated_and_says_why(agent_main, home):
    big = "x" * 90_000
    add_messages(home, *[user(big) for _ in range(5)])
    details = spawn(agent_main, context="fork")
    assert details["status"] == "accepted" and details["context"] == "isolated"
    assert details["note"].startswith(spawning.RUN_NOTE)
    assert 'context="fork" was not applied' in details["note"]
    assert f"over the {fork.FORK_MAX_TOKENS}-token fork cap" in details["note"]
    assert [m.content for m in child_messages(details)] == ["Find papers"]


@pytest.mark.parametrize("value", ["both", "", 1, True, ["fork"], {"kind": "fork"}])
def test_bad_context_values_are_400(agent_main, home, value):
    assert error_of(agent_main, {"context": value}) == 'context must be "isolated" or "fork"'


# --- taskName -----------------------------------------------------------------------------------


def test_task_name_is_returned_and_stored(agent_main, home):
    details = spawn(agent_main, agentId="research", taskName="papers-1")
    assert details["taskName"] == "papers-1"
    assert Run.objects.get(pk=details["runId"]).flow["taskName"] == "papers-1"
    assert "taskName" not in spawn(agent_main, agentId="research")


@pytest.mark.parametrize("name", ["Papers", "1abc", "-a", "a b", "a.b", "é", "a" * 65])
def test_invalid_task_names(agent_main, home, name):
    assert (
        error_of(agent_main, {"taskName": name})
        == f'Invalid taskName "{name}". Use 1-64 chars matching [a-z][a-z0-9_-]*.'
    )


@pytest.mark.parametrize("name", ["all", "last"])
def test_reserved_task_names(agent_main, home, name):
    assert error_of(agent_main, {"taskName": name}) == (
        f'Invalid taskName "{name}". Reserved subagent targets cannot be used as taskName values.'
    )


@pytest.mark.parametrize("value", [1, True, ["a"], {"a": 1}])
def test_task_name_must_be_a_string(agent_main, home, value):
    assert error_of(agent_main, {"taskName": value}) == "taskName must be a string"


def test_subagents_targets_and_lists_children_by_task_name(agent_main, home):
    papers = spawn(agent_main, agentId="research", task="slow one", taskName="papers")
    spawn(agent_main, agentId="research", task="slow two", taskName="patents")
    spawn(agent_main, agentId="research", task="slow three", taskName="summary-long")
    listed = agent_main.details("subagents", {})
    assert {r["taskName"] for r in listed["active"]} == {"papers", "patents", "summary-long"}
    assert "papers: task (" in listed["text"]
    # Exact, then an unambiguous prefix; an ambiguous one is no task.
    waited = agent_main.details(
        "subagents", {"action": "wait", "taskIds": ["pa"], "timeoutSeconds": 0}
    )
    assert waited["reason"] == "unavailable" and waited["unavailable"] == ["pa"]
    cancelled = agent_main.details("subagents", {"action": "cancel", "taskId": "papers"})
    assert cancelled == {
        "status": "cancelled",
        "taskId": papers["runId"],
        "found": True,
        "cancelled": True,
    }
    assert agent_main.details("subagents", {"action": "cancel", "taskId": "pa"}) == {
        "status": "error",
        "taskId": "pa",
        "found": False,
        "cancelled": False,
        "reason": 'taskName prefix "pa" is ambiguous: papers, patents',
    }
    by_prefix = agent_main.details("subagents", {"action": "cancel", "taskId": "summ"})
    assert by_prefix["status"] == "cancelled"
    assert agent_main.details("subagents", {"action": "cancel", "taskId": "nope"}) == {
        "status": "forbidden",
        "error": "Task outside session tree.",
    }


def test_another_sessions_task_names_are_not_targets(agent_main, outsider, home):
    spawn(agent_main, agentId="research", task="slow one", taskName="papers")
    assert outsider.details("subagents", {"action": "cancel", "taskId": "papers"}) == {
        "status": "forbidden",
        "error": "Task outside session tree.",
    }


# --- resolvedModel / resolvedProvider -----------------------------------------------------------


def test_resolved_model_and_provider(agent_main, home):
    make_agent(
        "research",
        model="openai/gpt-5-mini",
        backend={"type": "scripted", "models": ["gpt-x"]},
    )
    details = spawn(agent_main, agentId="research", model="openai/gpt-5-mini")
    assert details["modelApplied"] == "openai/gpt-5-mini"
    assert details["resolvedModel"] == "openai/gpt-5-mini"
    assert details["resolvedProvider"] == "openai"
    bare = spawn(agent_main, agentId="research", model="gpt-x")
    assert bare["resolvedModel"] == "gpt-x" and bare["resolvedProvider"] == "scripted"
    plain = spawn(agent_main, agentId="research")
    assert not {"modelApplied", "resolvedModel", "resolvedProvider"} & set(plain)


# --- the other 9.6 parameters ------------------------------------------------------------------


def test_visible_is_refused_as_a_result(agent_main, home):
    assert spawn(agent_main, visible=True) == {
        "status": "error",
        "error": spawning.VISIBLE_UNSUPPORTED,
    }
    assert spawn(agent_main, visible=False)["status"] == "accepted"


@pytest.mark.parametrize(
    "args",
    [
        {"projectId": "p1"},
        {"projectGitUrl": "https://example.invalid/r.git"},
        {"worktree": True},
        {"worktreeBranch": "feature"},
        {"projectId": "p1", "visible": False},
    ],
)
def test_project_and_worktree_options_need_visible(agent_main, home, args):
    assert error_of(agent_main, args) == "Parameters require visible=true"


def test_project_options_with_visible_get_the_visible_refusal(agent_main, home):
    details = spawn(agent_main, visible=True, projectId="p1", worktreeBranch="b")
    assert details == {"status": "error", "error": spawning.VISIBLE_UNSUPPORTED}


def test_unapplied_parameters_are_accepted_and_named_in_the_note(agent_main, home):
    details = spawn(
        agent_main,
        group="research",
        placement="local",
        collect=False,
        outputSchema={"type": "object"},
        groupId="g1",
        fastMode="auto",
        cwd="/tmp",
        lightContext=True,
    )
    assert details["status"] == "accepted"
    assert details["note"] == (
        f"{spawning.RUN_NOTE} Not applied by this gateway (accepted for compatibility): "
        "group, placement, outputSchema, groupId, fastMode, cwd."
    )
    assert spawn(agent_main)["note"] == spawning.RUN_NOTE


def test_light_context_is_for_native_sub_agents(agent_main, home):
    assert spawn(agent_main, lightContext=True, runtime="acp") == {
        "status": "error",
        "error": 'lightContext is only supported for runtime="subagent".',
    }


def test_collect_rules_out_a_parent_completion_target(agent_main, home):
    assert error_of(agent_main, {"collect": True, "completionTarget": "parent"}) == (
        'sessions_spawn completionTarget="parent" requires mode="run", thread=false, '
        "collect=false, and completion notifications enabled."
    )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"visible": "maybe"}, "visible must be a boolean"),
        ({"lightContext": 2}, "lightContext must be a boolean"),
        ({"collect": []}, "collect must be a boolean"),
        ({"fastMode": "fast"}, 'fastMode must be true, false or "auto"'),
        ({"fastMode": 1}, 'fastMode must be true, false or "auto"'),
        ({"outputSchema": "json"}, "outputSchema must be an object"),
        ({"group": 5}, "group must be a string"),
        ({"placement": ["cloud"]}, "placement must be a string"),
        ({"projectId": 7}, "projectId must be a string"),
        ({"groupId": {"a": 1}}, "groupId must be a string"),
    ],
)
def test_bad_types_are_400(agent_main, home, args, error):
    assert error_of(agent_main, args) == error


def test_an_unknown_parameter_is_ignored(agent_main, home):
    """A name sessions_spawn does not take (a typo of `context`) is ignored, as a tool call
    treats every unknown argument (OpenClaw 2026.9.6): the spawn is the default, isolated."""
    details = spawn(agent_main, contexts="fork")
    assert details["status"] == "accepted" and details["context"] == "isolated"


def test_snake_case_spellings_and_the_timeout_alias(agent_main, home):
    details = spawn(agent_main, task_name="snaky", run_timeout_seconds=5)
    assert details["taskName"] == "snaky"
    assert Run.objects.get(pk=details["runId"]).timeout_seconds == 5
    # The reference still documents timeoutSeconds as runTimeoutSeconds' older name.
    older = spawn(agent_main, timeoutSeconds=7)
    assert Run.objects.get(pk=older["runId"]).timeout_seconds == 7


def test_rest_spawn_takes_the_same_parameters(agent_main, home):
    spawned = agent_main.post(
        "/api/v1/spawn/", {"task": "look", "context": "fork", "taskName": "look"}
    )
    assert spawned.status_code == 200, spawned.content
    assert spawned.json()["context"] == "fork" and spawned.json()["taskName"] == "look"
    refused = agent_main.post("/api/v1/spawn/", {"task": "look", "taskName": "all"})
    assert refused.status_code == 400
    assert refused.json()["error"]["message"] == (
        'Invalid taskName "all". Reserved subagent targets cannot be used as taskName values.'
    )
