"""Operators configure ACP harnesses in the admin's gateway settings, checked by the same rules
as PATCH /api/v1/config/ (config.clean_value → acp/harnesses.py); an ACP child's session page
shows its harness facts (acp/facts.py), with real turns of the demo's echo harness."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import AcpChild, AcpPermission, GatewayConfig, Message, Session
from tests.acp.page_fixtures import no_heartbeat, spawn_echo_child
from tests.admin.test_admin import _staff_client, change, gateway_form
from tests.conftest import admin_groups

__all__ = ["no_heartbeat"]  # a fixture, used by name


@pytest.fixture
def op(agents):
    return _staff_client("olivia", admin_groups()["Operators"])


def test_the_gateway_page_shows_the_acp_settings(op):
    page = op.get(change("gatewayconfig", GatewayConfig.load().pk)).content.decode()
    for path in (
        "acp.enabled",
        "acp.defaultAgent",
        "acp.allowedAgents",
        "acp.maxConcurrentSessions",
        "acp.agents",
    ):
        assert path in page
    assert "permissionMode" in page  # the help names the definition's keys


def test_an_operator_registers_a_harness(op, tmp_path):
    harnesses = {"codex": {"command": "/usr/bin/env", "args": ["true"], "cwdRoot": str(tmp_path)}}
    response = op.post(
        change("gatewayconfig", GatewayConfig.load().pk),
        gateway_form(acp_agents=json.dumps(harnesses), acp_allowed_agents="echo, codex"),
    )
    assert response.status_code == 302, response.content
    saved = GatewayConfig.load()
    assert saved.acp_agents["codex"]["permissionMode"] == "deny"
    assert saved.acp_allowed_agents == ["echo", "codex"]


def test_a_bad_harness_is_shown_on_the_form_and_not_saved(op):
    bad = {"codex": {"command": "codex", "cwdRoot": "relative/path"}}
    response = op.post(
        change("gatewayconfig", GatewayConfig.load().pk),
        gateway_form(acp_agents=json.dumps(bad)),
    )
    assert response.status_code == 200
    assert "acp.agents.codex.cwdRoot must be an absolute directory path" in (
        response.content.decode()
    )
    assert GatewayConfig.load().acp_agents == {}


# --- an ACP child's page: harness, ACP session, cwd, warm or cold, permission decisions ---------


def acp_section(page: str) -> str:
    """The page's ACP section (templates/acp/_facts.html inside the admin's #acp)."""
    start = page.index('id="acp"')
    return page[start : page.index("</section>", start)]


def test_an_acp_childs_page_shows_its_harness_session_cwd_warmth_and_an_allowed_decision(
    op, agent_main, tmp_path, no_heartbeat
):
    child = spawn_echo_child(agent_main, tmp_path, mode="read-only")
    facts = AcpChild.objects.get(session=child)
    started = Message.objects.get(session=child, role="system", extra__acp__event="started")
    # What the worker recorded is what the transcript's start note says.
    assert facts.acp_session_id == started.extra["acp"]["sessionId"]
    assert facts.turn_cwd == started.extra["acp"]["cwd"] == facts.cwd
    assert facts.pid == started.extra["acp"]["pid"] and facts.reached == "new"
    assert facts.warm_until is not None  # end_turn, warmSeconds 300: kept warm
    (decision,) = AcpPermission.objects.filter(session=child)
    assert (decision.mode, decision.allowed, decision.option_id) == ("read-only", True, "allow")
    assert decision.title == "Read the task" and decision.tool_kind == "read"
    assert decision.options == [
        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
        {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
    ]
    assert decision.acp_session_id == facts.acp_session_id and decision.run.kind == "spawn"

    page = op.get(change("session", child.pk)).content.decode()
    section = acp_section(page)
    assert '<dd class="mono acp-harness">echo</dd>' in section
    assert facts.acp_session_id in section and facts.cwd in section
    assert "acp-warm" in section and "kept warm by worker" in section
    assert "a new ACP session, in a new process" in section
    assert "allowed" in section and "Read the task" in section and "read-only" in section
    assert "chose Allow of: Allow (allow_once) · Reject (reject_once)" in section


def test_a_denied_decision_and_a_process_not_kept_warm_are_shown(
    op, agent_main, tmp_path, no_heartbeat
):
    child = spawn_echo_child(agent_main, tmp_path, mode="deny", warmSeconds=0)
    (decision,) = AcpPermission.objects.filter(session=child)
    assert (decision.mode, decision.allowed, decision.option_id) == ("deny", False, "reject")
    assert AcpChild.objects.get(session=child).warm_until is None
    section = acp_section(op.get(change("session", child.pk)).content.decode())
    assert "acp-denied" in section and 'by permissionMode <span class="mono">deny</span>' in (
        section
    )
    assert "chose Reject of:" in section
    assert "acp-cold" in section and "its process has ended" in section


def test_a_viewer_sees_it_and_a_session_that_is_no_acp_child_has_no_acp_section(
    agent_main, tmp_path, no_heartbeat
):
    child = spawn_echo_child(agent_main, tmp_path)
    viewer = _staff_client("vic", admin_groups()["Viewers"])
    assert 'id="acp"' in viewer.get(change("session", child.pk)).content.decode()
    main = Session.objects.get(key="agent:main:main")
    page = viewer.get(change("session", main.pk)).content.decode()
    assert 'id="acp"' not in page and "Permission decisions" not in page
