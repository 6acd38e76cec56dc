"""sessions_spawn runtime="acp", the part before any process starts: the settings, who may set
them, and every refusal with its text (reference §5.2; docs/acp.md)."""

from __future__ import annotations

import re
import sys

import pytest

from sessions_app.models import Agent, GatewayConfig, Run, Session
from sessions_app.runs.flow_state import Flow
from tests.acp.harness_fixtures import ECHO, PYTHON, echo, register
from tests.conftest import make_session, set_config
from tests.runs.helpers import drain


@pytest.fixture
def home(agents, tmp_path):
    make_session("main")
    (tmp_path / "repo" / "src").mkdir(parents=True)
    register(echo=echo(tmp_path), other=echo(tmp_path))
    return tmp_path


def spawn(api, **args):
    return api.details("sessions_spawn", {"task": "say hello", **args})


def test_spawn_is_accepted_at_once_with_an_acp_key(agent_main, home):
    result = spawn(agent_main, runtime="acp", agentId="echo", label="hi", cwd="repo/src")
    assert result["status"] == "accepted"
    assert re.fullmatch(r"agent:echo:acp:[0-9a-f-]{36}", result["childSessionKey"])
    child = Session.objects.get(key=result["childSessionKey"])
    assert child.spawned_by == "agent:main:main" and child.spawn_depth == 1
    assert child.label == "hi"
    run = Run.objects.get(pk=result["runId"])
    assert run.status == Run.QUEUED and run.kind == "spawn" and run.message == "say hello"
    flow = Flow.from_json(run.flow)
    assert flow.runtime == "acp" and flow.cwd == str((home / "repo" / "src").resolve())
    assert Agent.objects.filter(pk="echo").exists()  # the child's key names it


def test_an_acp_spawn_reports_its_context_and_task_name(agent_main, home):
    result = spawn(agent_main, runtime="acp", agentId="echo", taskName="echo-1", groupId="g")
    assert result["status"] == "accepted"
    assert result["context"] == "isolated" and result["taskName"] == "echo-1"
    assert result["note"].endswith(
        "Not applied by this gateway (accepted for compatibility): groupId."
    )
    assert Run.objects.get(pk=result["runId"]).flow["taskName"] == "echo-1"


def test_default_agent_is_used_without_agent_id(agent_main, home):
    result = spawn(agent_main, runtime="acp")
    assert result["childSessionKey"].startswith("agent:echo:acp:")


def test_stream_to_on_runtime_subagent_is_refused(agent_main, home):
    assert spawn(agent_main, agentId="research", streamTo="parent") == {
        "status": "error",
        "error": "streamTo is only supported for runtime=acp; got runtime=subagent",
    }
    assert not Run.objects.exists()


def test_any_runtime_but_exactly_acp_is_a_subagent(agent_main, home):
    result = spawn(agent_main, runtime="ACP", streamTo="parent")
    assert result["error"] == "streamTo is only supported for runtime=acp; got runtime=subagent"


def test_attachments_are_refused(agent_main, home):
    set_config(attachments_enabled=True)
    result = spawn(agent_main, runtime="acp", attachments=[{"name": "a.txt", "content": "hello"}])
    assert result == {
        "status": "error",
        "error": "attachments are currently unsupported for runtime=acp; use runtime=subagent "
        "or remove attachments",
    }


def test_a_harness_outside_acp_allowed_agents_is_forbidden(agent_main, home):
    set_config(acp_allowed_agents=["echo"])
    assert spawn(agent_main, runtime="acp", agentId="other") == {
        "status": "forbidden",
        "error": 'agentId "other" is not allowed for runtime=acp (allowed: echo; '
        "acp.allowedAgents)",
    }
    set_config(acp_allowed_agents=["*"])
    assert spawn(agent_main, runtime="acp", agentId="other")["status"] == "accepted"


def test_an_unconfigured_harness_is_an_error(agent_main, home):
    set_config(acp_allowed_agents=["*"])
    assert spawn(agent_main, runtime="acp", agentId="codex") == {
        "status": "error",
        "error": 'ACP harness "codex" is not configured (configured: echo, other; acp.agents)',
    }


def test_no_agent_id_and_no_default(agent_main, home):
    set_config(acp_default_agent="")
    result = spawn(agent_main, runtime="acp")
    assert result["error"].startswith('runtime="acp" needs agentId')


@pytest.mark.parametrize("cwd", ["..", "/etc", "repo/../../x", "repo/../.."])
def test_cwd_must_stay_inside_the_harness_root(agent_main, home, cwd):
    result = spawn(agent_main, runtime="acp", cwd=cwd)
    assert result["status"] == "error"
    assert (
        f'cwd "{cwd}" is outside the working-directory root of ACP harness "echo"'
        in (result["error"])
    )
    assert not Session.objects.filter(key__contains=":acp:").exists()


def test_cwd_through_a_symlink_out_of_the_root_is_refused(agent_main, home, tmp_path_factory):
    outside = tmp_path_factory.mktemp("outside")
    (home / "link").symlink_to(outside)
    result = spawn(agent_main, runtime="acp", cwd="link")
    assert "is outside the working-directory root" in result["error"]


def test_cwd_must_exist(agent_main, home):
    result = spawn(agent_main, runtime="acp", cwd="repo/missing")
    assert result == {"status": "error", "error": 'cwd "repo/missing" is not an existing directory'}


def test_acp_disabled_is_forbidden(agent_main, home):
    set_config(acp_enabled=False)
    assert spawn(agent_main, runtime="acp") == {
        "status": "forbidden",
        "error": "ACP is disabled by policy (acp.enabled=false).",
    }


def test_sandboxed_requesters_cannot_spawn_acp(sandboxed_main, home):
    result = spawn(sandboxed_main, runtime="acp")
    assert result["status"] == "forbidden"
    assert result["error"].startswith("Sandboxed sessions cannot spawn ACP sessions")


def test_max_concurrent_sessions(agent_main, home):
    set_config(acp_max_concurrent_sessions=1, max_children_per_agent=10)
    assert spawn(agent_main, runtime="acp")["status"] == "accepted"
    assert spawn(agent_main, runtime="acp") == {
        "status": "forbidden",
        "error": "ACP session limit reached (1/1; acp.maxConcurrentSessions)",
    }


def test_a_missing_command_is_named(agent_main, home):
    register(echo={"command": "no-such-harness-binary", "cwdRoot": str(home)})
    result = spawn(agent_main, runtime="acp")
    assert result["error"].startswith(
        'ACP harness "echo": command "no-such-harness-binary" was not found on PATH'
    )


def test_stream_to_must_be_parent(agent_main, home):
    response = agent_main.invoke(
        "sessions_spawn", {"task": "x", "runtime": "acp", "streamTo": "child"}
    )
    assert response.status_code == 400
    assert "streamTo" in response.json()["error"]["message"]


# --- the settings ---------------------------------------------------------------------------


def test_fresh_settings_name_echo(db):
    config = GatewayConfig.load()
    assert config.acp_enabled is True
    assert config.acp_default_agent == "echo" and config.acp_allowed_agents == ["echo"]
    assert config.acp_agents == {}


def test_operators_set_harnesses_over_the_config_api(operator, tmp_path):
    definition = {"command": "/usr/bin/env", "args": ["true"], "cwdRoot": str(tmp_path)}
    response = operator.patch("/api/v1/config/", {"acp.agents": {"codex": definition}})
    assert response.status_code == 200, response.content
    stored = operator.get("/api/v1/config/").json()["acp.agents"]["codex"]
    assert stored == {
        **definition,
        "env": [],
        "permissionMode": "deny",
        "startTimeoutSeconds": 30,
        "warmSeconds": 300,
        "sessionTools": False,
    }


@pytest.mark.parametrize(
    ("definition", "reason"),
    [
        # The audit's case: a harness naming the worker's secrets, run by any program.
        (
            {"command": sys.executable, "args": ["-c", "print(1)"], "env": ["HOME"]},
            f"command {sys.executable!r} with these args is not a program the deployment lets "
            "a harness run (OPENCLAW_ACP_COMMANDS)",
        ),
        (
            {"command": "sh", "args": ["-c", "env"]},
            "command 'sh' with these args is not a program the deployment lets a harness run "
            "(OPENCLAW_ACP_COMMANDS)",
        ),
        (
            {"command": sys.executable, "args": [str(ECHO)], "env": ["HOME", "SECRET_KEY"]},
            "env SECRET_KEY is not one the deployment lets a harness have (OPENCLAW_ACP_ENV)",
        ),
    ],
)
def test_the_deployment_decides_what_a_harness_runs(operator, tmp_path, definition, reason):
    """An operator key configures harnesses; which programs run on the worker, with which of
    its variables, is the deployment's (OPENCLAW_ACP_COMMANDS, OPENCLAW_ACP_ENV)."""
    response = operator.patch(
        "/api/v1/config/", {"acp.agents.leak": {**definition, "cwdRoot": str(tmp_path)}}
    )
    assert response.status_code == 400
    assert response.json()["error"]["message"] == f"acp.agents.leak: {reason}"
    assert "leak" not in (GatewayConfig.load().acp_agents or {})


def test_a_saved_harness_the_deployment_no_longer_lets_run_fails_its_run(
    agent_main, agents, tmp_path, settings
):
    make_session("main")
    register(echo=echo(tmp_path))
    settings.OPENCLAW_ACP_COMMANDS = [("/usr/bin/env", "true")]  # narrowed since it was saved
    accepted = agent_main.details("sessions_spawn", {"task": "hi", "runtime": "acp"})
    drain()
    run = Run.objects.get(pk=accepted["runId"])
    assert run.status == Run.ERROR
    assert run.error == (
        'ACP harness "echo": command '
        f"{PYTHON[0]!r} with these args is not a program the deployment lets a harness "
        "run (OPENCLAW_ACP_COMMANDS)"
    )


def test_one_harness_is_set_or_removed_by_its_own_path(operator, tmp_path):
    """`acp.agents.<id>` (the README's example) keeps the other harnesses, echo included."""
    echo = {"command": "/usr/bin/env", "args": ["true"], "cwdRoot": str(tmp_path)}
    assert operator.patch("/api/v1/config/", {"acp.agents": {"echo": echo}}).status_code == 200
    codex = {
        "command": "npx",
        "args": ["-y", "@zed-industries/codex-acp"],
        "cwdRoot": str(tmp_path),
    }
    response = operator.patch(
        "/api/v1/config/", {"acp.agents.codex": codex, "acp.allowedAgents": ["echo", "codex"]}
    )
    assert response.status_code == 200, response.content
    assert set(GatewayConfig.load().acp_agents) == {"echo", "codex"}
    assert operator.patch("/api/v1/config/", {"acp.agents.codex": None}).status_code == 200
    assert set(GatewayConfig.load().acp_agents) == {"echo"}
    # Checked as the whole set is; the two forms do not mix.
    bad = operator.patch("/api/v1/config/", {"acp.agents.x": {"command": "sh"}})
    assert bad.status_code == 400
    assert (
        "acp.agents.x.cwdRoot must be an absolute directory path" in bad.json()["error"]["message"]
    )
    both = operator.patch("/api/v1/config/", {"acp.agents": {}, "acp.agents.codex": codex})
    assert both.json()["error"]["message"] == "acp.agents and acp.agents.<id> cannot be combined"
    assert set(GatewayConfig.load().acp_agents) == {"echo"}


def test_agent_keys_cannot_set_harnesses(agent_main, tmp_path):
    definition = {"command": "/bin/sh", "cwdRoot": str(tmp_path)}
    response = agent_main.patch("/api/v1/config/", {"acp.agents": {"x": definition}})
    assert response.status_code == 403
    assert GatewayConfig.load().acp_agents == {}


@pytest.mark.parametrize(
    "value, message",
    [
        ([], "acp.agents must be an object of harness id → definition"),
        ({"Bad Id": {}}, "harness id 'Bad Id' must be 1-64 lowercase letters"),
        ({"x": "sh"}, "acp.agents.x must be an object"),
        ({"x": {"cwdRoot": "/tmp"}}, "acp.agents.x.command must be a non-empty string"),
        ({"x": {"command": "sh"}}, "acp.agents.x.cwdRoot must be an absolute directory path"),
        ({"x": {"command": "sh", "cwdRoot": "rel"}}, "cwdRoot must be an absolute"),
        ({"x": {"command": "sh", "cwdRoot": "/tmp", "args": "a"}}, "args must be an array"),
        ({"x": {"command": "sh", "cwdRoot": "/tmp", "env": ["A B"]}}, "is not an environment"),
        (
            {"x": {"command": "sh", "cwdRoot": "/tmp", "permissionMode": "yes"}},
            "permissionMode must be one of deny, read-only, allow-all",
        ),
        (
            {"x": {"command": "sh", "cwdRoot": "/tmp", "startTimeoutSeconds": 0}},
            "startTimeoutSeconds must be an integer from 1 to 300",
        ),
        ({"x": {"command": "sh", "cwdRoot": "/tmp", "shell": True}}, "unknown key shell"),
        (
            {"x": {"command": "sh", "cwdRoot": "/tmp", "sessionTools": "yes"}},
            "acp.agents.x.sessionTools must be true or false",
        ),
        (
            {"x": {"command": "sh", "cwdRoot": "/tmp", "sessionTools": None}},
            "acp.agents.x.sessionTools must be true or false",
        ),
    ],
)
def test_bad_harness_definitions_are_a_400(operator, value, message):
    response = operator.patch("/api/v1/config/", {"acp.agents": value})
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "changes",
    [
        {"acp.enabled": "yes"},
        {"acp.defaultAgent": 3},
        {"acp.defaultAgent": "Not An Id!"},
        {"acp.allowedAgents": "echo"},
        {"acp.maxConcurrentSessions": 0},
    ],
)
def test_bad_acp_settings_are_a_400(operator, changes):
    assert operator.patch("/api/v1/config/", changes).status_code == 400


# --- who sees the child ----------------------------------------------------------------------


def test_the_requester_reads_and_lists_its_acp_child_across_agents(agent_main, outsider, home):
    key = spawn(agent_main, runtime="acp")["childSessionKey"]
    history = agent_main.details("sessions_history", {"sessionKey": key})
    assert [m["role"] for m in history["messages"]] == ["user"]
    listed = agent_main.details("sessions_list", {})
    assert key in [row["key"] for row in listed["sessions"]]
    refused = outsider.details("sessions_history", {"sessionKey": key})
    assert refused["status"] == "forbidden"
    assert key not in [row["key"] for row in outsider.details("sessions_list", {})["sessions"]]


def test_self_visibility_still_hides_the_child(agent_main, home):
    key = spawn(agent_main, runtime="acp")["childSessionKey"]
    set_config(visibility="self")
    assert agent_main.details("sessions_history", {"sessionKey": key})["status"] == "forbidden"


def test_subagents_list_shows_the_acp_runtime(agent_main, home):
    accepted = spawn(agent_main, runtime="acp", label="acp child")
    listed = agent_main.details("subagents", {"action": "list"})
    (row,) = [t for t in listed["tasks"] if t["taskId"] == accepted["runId"]]
    assert row["runtime"] == "acp" and row["label"] == "acp child"
