"""Bad input to every parameter issue 13 added: a clear 400 naming it (or 9.6's exact text),
never a 500, nothing written."""

from __future__ import annotations

import pytest

from tests.conftest import make_agent
from tests.tools.test_bad_input_tools import check_all

TOOL_CASES = {
    "sessions_spawn": [
        (
            {"task": "x", "completionTarget": "child"},
            'sessions_spawn completionTarget must be "parent" or omitted.',
        ),
        ({"task": "x", "completionTarget": 3}, "completionTarget must be a string"),
        (
            {"task": "x", "completionTarget": "parent", "expectsCompletionMessage": False},
            'sessions_spawn completionTarget="parent" requires mode="run", thread=false, '
            "collect=false, and completion notifications enabled.",
        ),
        (
            {"task": "x", "expectsCompletionMessage": "maybe"},
            "expectsCompletionMessage must be a boolean",
        ),
        (
            {"task": "x", "expectsCompletionMessage": 2},
            "expectsCompletionMessage must be a boolean",
        ),
    ],
    "subagents": [
        ({"action": 3}, "action must be a string"),
        ({"recentMinutes": 0}, "recentMinutes must be a positive integer"),
        ({"recentMinutes": "soon"}, "recentMinutes must be a positive integer"),
        (
            {"action": "wait", "taskIds": ["a"], "timeoutSeconds": -1},
            "timeoutSeconds must be a non-negative integer",
        ),
        ({"action": "wait", "taskIds": "abc"}, "taskIds must be an array of task ids"),
        ({"action": "wait", "taskIds": [1]}, "taskIds must be an array of task ids"),
        ({"action": "wait", "taskIds": []}, "taskIds required"),
        ({"action": "wait"}, "taskIds required"),
        ({"action": "cancel"}, "taskId required"),
        ({"action": "cancel", "taskId": 5}, "taskId must be a string"),
    ],
    "sessions_yield": [
        ({"message": 5}, "message must be a string"),
        ({"acknowledgment": "x" * 1025}, "acknowledgment must be at most 1024 characters"),
        ({"waitFor": 3}, "waitFor must be a string"),
    ],
}


@pytest.mark.parametrize("tool", sorted(TOOL_CASES))
def test_bad_tool_arguments_are_400(operator, main_session, tool):
    check_all(lambda args: operator.invoke(tool, args), TOOL_CASES[tool])


def test_bad_orchestration_settings_are_400(operator, main_session):
    check_all(
        lambda body: operator.patch("/api/v1/config/", body),
        [
            (
                {"agents.defaults.subagents.maxConcurrent": 0},
                "agents.defaults.subagents.maxConcurrent must be between 1 and 1000",
            ),
            (
                {"agents.defaults.subagents.announceTimeoutMs": "soon"},
                "agents.defaults.subagents.announceTimeoutMs must be an integer",
            ),
            (
                {"agents.defaults.subagents.runTimeoutSeconds": -5},
                "agents.defaults.subagents.runTimeoutSeconds must be between 0",
            ),
            (
                {"agents.defaults.subagents.completionDelivery": "loud"},
                "agents.defaults.subagents.completionDelivery must be one of both, report, reply",
            ),
            (
                {"agents.defaults.subagents.maxSpawnDepth": 6},
                "agents.defaults.subagents.maxSpawnDepth must be between 1 and 5",
            ),
        ],
        error_type="invalid_request",
        writes=True,
    )


def test_bad_per_agent_limits_are_400(operator, main_session):
    check_all(
        lambda body: operator.put("/api/v1/agents/main/", body),
        [
            (
                {"subagents": {"maxSpawnDepth": 9}},
                "subagents.maxSpawnDepth must be an integer from 1 to 5",
            ),
            (
                {"subagents": {"maxChildrenPerAgent": True}},
                "subagents.maxChildrenPerAgent must be an integer",
            ),
            (
                {"subagents": {"announceTimeoutMs": 0}},
                "subagents.announceTimeoutMs must be an integer from 1",
            ),
            ({"subagents": {"maxConcurrent": 2}}, "subagents must be an object with only"),
        ],
        error_type="invalid_request",
        writes=True,
    )


def test_per_agent_limits_apply(operator, agent_main, main_session):
    response = operator.put(
        "/api/v1/agents/main/",
        {"subagents": {"allowAgents": ["research"], "maxChildrenPerAgent": 1}},
    )
    assert response.json()["subagents"] == {"allowAgents": ["research"], "maxChildrenPerAgent": 1}
    make_agent("research")
    assert (
        agent_main.details("sessions_spawn", {"task": "a", "agentId": "research"})["status"]
        == "accepted"
    )
    refused = agent_main.details("sessions_spawn", {"task": "b", "agentId": "research"})
    assert refused == {
        "status": "forbidden",
        "error": "sessions_spawn has reached max active children for this session (1/1)",
    }
