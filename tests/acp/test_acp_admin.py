"""Operators configure ACP harnesses in the admin's gateway settings, checked by the same rules
as PATCH /api/v1/config/ (config.clean_value → acp/harnesses.py)."""

from __future__ import annotations

import json

import pytest

from sessions_app.models import GatewayConfig
from tests.admin.test_admin import _staff_client, change, gateway_form
from tests.conftest import admin_groups


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
