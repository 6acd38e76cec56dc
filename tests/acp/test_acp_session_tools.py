"""The session tools inside a harness (issue 27 item 4; acp/session_tools.py): the harness
setting, the key a turn gets (pinned to the child, held to the child's limits), its revocation
(at the turn's end, by the sweep for a turn that could not), and where the key may be sent
(OPENCLAW_MCP_URL). Codex calling the tools end to end: test_acp_codex.py."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from openclaw_common.errors import InvalidArgument
from sessions_app.acp import session_tools
from sessions_app.acp.client import redact
from sessions_app.acp.harnesses import parse_harness
from sessions_app.lib.outbound import OutboundRefused, check_own_url
from sessions_app.lib.shared_version import ACCESS
from sessions_app.models import ApiKey, Message, Run
from sessions_app.runs import sweeper
from tests.acp.harness_fixtures import echo, misbehaving, register
from tests.acp.turn_helpers import TASK, spawn, spawn_and_run
from tests.conftest import add_messages, assistant, make_session, set_config
from tests.mcp.asgi import Session as McpSession
from tests.mcp.asgi import post
from tests.runs.helpers import drain

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("no_heartbeat"),
]


def run(coro):
    return asyncio.run(coro)


def plaintext(grant: session_tools.Grant) -> str:
    header = grant.server.headers[0]
    assert header.name == "Authorization"
    return header.value.removeprefix("Bearer ")


def child_key(agent_main, home, **harness) -> tuple[Run, str]:
    """A queued ACP child of agent:main:main and the key its turn would get."""
    register(echo=echo(home, sessionTools=True, **harness))
    _, child_run = spawn(agent_main)
    return child_run, plaintext(session_tools.grant(child_run))


def call(token: str, tool: str, args: dict) -> dict:
    async def scenario():
        mcp = McpSession(token)
        opened = await mcp.initialize()
        assert opened.status == 200, opened.body
        answer = await mcp.call_tool(tool, args)
        assert answer.status == 200, answer.body
        return answer.messages[-1]["result"]

    return run(scenario())


# --- the setting ---------------------------------------------------------------------------


def test_session_tools_are_off_unless_the_operator_turns_them_on(tmp_path):
    definition = {"command": "/usr/bin/env", "args": ["true"], "cwdRoot": str(tmp_path)}
    assert parse_harness("x", definition).session_tools is False
    assert parse_harness("x", definition).as_json()["sessionTools"] is False
    assert parse_harness("x", {**definition, "sessionTools": True}).session_tools is True
    for wrong in ("yes", 1, None, [], {}):
        with pytest.raises(InvalidArgument) as refused:
            parse_harness("x", {**definition, "sessionTools": wrong})
        assert refused.value.message == "acp.agents.x.sessionTools must be true or false"


def test_a_turn_with_the_setting_off_makes_no_key_and_hands_no_mcp_server(agent_main, home):
    register(echo=echo(home))
    child, child_run = spawn(agent_main)
    drain()
    child_run.refresh_from_db()
    assert child_run.status == Run.OK, child_run.error
    assert not ApiKey.objects.filter(acp_run=child_run).exists()
    start = Message.objects.get(session=child, extra__acp__event="started").extra["acp"]
    assert "sessionTools" not in start and "sessionToolsNote" not in start


def test_a_harness_without_mcp_over_http_is_told_nothing_and_the_key_dies_with_the_turn(
    agent_main, home
):
    # The demo's echo announces no mcpCapabilities: it gets no MCP server, and the start
    # message says why; the key made for the turn is revoked at its end all the same.
    register(echo=echo(home, sessionTools=True))
    child, child_run = spawn(agent_main)
    drain()
    child_run.refresh_from_db()
    assert child_run.status == Run.OK, child_run.error
    key = ApiKey.objects.get(acp_run=child_run)
    assert key.revoked_at is not None
    assert (key.scope, key.agent_id, key.session_key) == (ApiKey.AGENT, "echo", child.key)
    start = Message.objects.get(session=child, extra__acp__event="started")
    assert start.extra["acp"]["sessionToolsNote"] == (
        "The session tools were not offered: the harness does not announce MCP over HTTP "
        "(mcpCapabilities.http)."
    )
    assert "ocs_" not in str(start.content)


def test_an_mcp_url_the_key_may_not_go_to_runs_the_turn_without_the_tools(
    agent_main, home, settings
):
    settings.OPENCLAW_MCP_URL = "http://10.1.2.3:8000/mcp/"
    register(echo=echo(home, sessionTools=True))
    child, child_run = spawn(agent_main)
    drain()
    child_run.refresh_from_db()
    assert child_run.status == Run.OK, child_run.error
    assert not ApiKey.objects.filter(acp_run=child_run).exists()
    note = Message.objects.get(session=child, extra__acp__event="started").extra["acp"]
    assert note["sessionToolsNote"].startswith(
        "The session tools were not offered: OPENCLAW_MCP_URL 'http://10.1.2.3:8000/mcp/': "
        "10.1.2.3 is not a loopback address, nor one OPENCLAW_OUTBOUND_ALLOW names"
    )


def said(child_run: Run) -> dict:
    child_run.refresh_from_db()
    assert child_run.status == Run.OK, child_run.error
    return json.loads(child_run.reply)


def test_a_harness_taking_mcp_over_http_gets_our_server_with_a_key_of_each_turn(
    agent_main, home, settings
):
    settings.OPENCLAW_MCP_URL = "http://127.0.0.1:18200/mcp/"
    register(echo=misbehaving(home, "tools", sessionTools=True))
    child, first_run = spawn_and_run(agent_main)
    first = said(first_run)
    first_key = ApiKey.objects.get(acp_run=first_run)
    assert first["how"] == "new"
    assert first["servers"] == [
        {"name": "openclaw", "url": "http://127.0.0.1:18200/mcp/", "lookup": first_key.lookup}
    ]
    assert first_key.revoked_at is not None  # the turn is over
    # A follow-up in the warm process: its ACP session held the revoked key, so it is loaded
    # again there (the harness announces loadSession) with this turn's.
    sent = agent_main.details(
        "sessions_send", {"sessionKey": child.key, "message": "again", "timeoutSeconds": 0}
    )
    assert sent["status"] == "accepted", sent
    drain()
    second_run = Run.objects.get(pk=sent["runId"])
    second = said(second_run)
    second_key = ApiKey.objects.get(acp_run=second_run)
    assert second_key.pk != first_key.pk and second_key.revoked_at is not None
    assert (second["session"], second["how"]) == (first["session"], "loaded")
    assert [s["lookup"] for s in second["servers"]] == [second_key.lookup]
    starts = Message.objects.filter(session=child, extra__acp__event="started").order_by("seq")
    acp = [m.extra["acp"] for m in starts]
    assert (acp[1]["warm"], acp[1]["resumed"], acp[1]["pid"]) == (True, "load", acp[0]["pid"])
    assert [a["sessionTools"]["keyId"] for a in acp] == [first_key.pk, second_key.pk]


def test_with_the_setting_off_a_harness_taking_mcp_is_handed_none(agent_main, home):
    register(echo=misbehaving(home, "tools"))
    _, child_run = spawn_and_run(agent_main)
    assert said(child_run)["servers"] == []
    assert not ApiKey.objects.filter(acp_run=child_run).exists()


# --- where the key may go ----------------------------------------------------------------------


def test_the_mcp_url_must_be_loopback_or_named_and_https_off_loopback(settings):
    settings.OPENCLAW_OUTBOUND_ALLOW = ["10.0.0.0/8", "127.0.0.1"]
    for url in ("http://127.0.0.1:8000/mcp/", "http://[::1]:9/mcp/", "http://localhost/mcp/"):
        assert check_own_url(url, setting="S") == url
    assert check_own_url("https://10.1.2.3/mcp/", setting="S")
    refused = {
        "http://10.1.2.3/mcp/": "10.1.2.3 is not loopback, so it must be https",
        "https://192.168.1.2/mcp/": "192.168.1.2 is not a loopback address, nor one",
        "https://8.8.8.8/mcp/": "8.8.8.8 is not a loopback address, nor one",  # public: no
        "ftp://127.0.0.1/mcp/": "the URL must be http(s) with a host",
        "not a url": "the URL must be http(s) with a host",
    }
    for url, why in refused.items():
        with pytest.raises(OutboundRefused) as caught:
            check_own_url(url, setting="OPENCLAW_MCP_URL")
        assert str(caught.value).startswith(f"OPENCLAW_MCP_URL {url!r}: ")
        assert why in str(caught.value)
    settings.OPENCLAW_OUTBOUND_ALLOW = ["*"]  # "everything" is not a place to send a key
    with pytest.raises(OutboundRefused):
        check_own_url("https://8.8.8.8/mcp/", setting="S")


def test_what_a_harness_writes_to_the_log_loses_any_key(caplog):
    _, token = ApiKey.generate(scope=ApiKey.OPERATOR)
    assert token not in redact(f"connecting with Authorization: Bearer {token} failed")
    assert "Bearer ocs_[redacted] failed" in redact(f"Bearer {token} failed")


# --- the key's limits ----------------------------------------------------------------------


def test_the_key_acts_only_as_the_child_and_sees_what_the_child_may(agent_main, home):
    set_config(visibility="tree")
    child_run, token = child_key(agent_main, home)
    child = child_run.session
    # Itself: yes.
    own = call(token, "sessions_history", {"sessionKey": child.key})
    assert own["isError"] is False
    assert [m["content"] for m in own["structuredContent"]["messages"]][0] == TASK
    # Its parent, another agent's session: not under tree (the child's view, not the parent's).
    parent = call(token, "sessions_history", {"sessionKey": "agent:main:main"})
    assert parent["isError"] is True
    assert parent["structuredContent"]["status"] == "forbidden"
    # Another session of its own agent, as the key's session: refused, it is pinned.
    sibling = make_session("agent:echo:acp:00000000-0000-4000-8000-000000000001")
    add_messages(sibling, assistant("not yours"))

    async def as_other():
        mcp = McpSession(token)
        mcp.headers["x-openclaw-session-key"] = sibling.key
        await mcp.initialize()
        return (await mcp.call_tool("sessions_list", {})).messages[-1]["result"]

    pinned = run(as_other())
    assert pinned["isError"] is True
    assert f"pinned to session {child.key}" in pinned["content"][0]["text"]
    # Its siblings of the same agent: visible under `agent`, as they would be to the child.
    set_config(visibility="agent")
    seen = call(token, "sessions_history", {"sessionKey": sibling.key})
    assert seen["isError"] is False


def test_a_sandboxed_childs_key_is_clamped_to_its_tree(agent_main, home):
    set_config(visibility="all", a2a_enabled=True)
    register(echo=echo(home, sessionTools=True))
    _, child_run = spawn(agent_main)
    Run.objects.filter(pk=child_run.pk).update(sandboxed=True)  # as if a sandboxed key sent it
    child_run.refresh_from_db()
    token = plaintext(session_tools.grant(child_run))
    assert ApiKey.objects.get(acp_run=child_run).sandboxed is True
    sibling = make_session("agent:echo:acp:00000000-0000-4000-8000-000000000002")
    refused = call(token, "sessions_history", {"sessionKey": sibling.key})
    assert refused["isError"] is True and refused["structuredContent"]["status"] == "forbidden"
    # A sandboxed session lists only what it spawned: nothing.
    listed = call(token, "sessions_list", {})
    assert listed["structuredContent"]["sessions"] == []
    # A sandboxed session may not spawn ACP children, through MCP as anywhere.
    spawned = call(token, "sessions_spawn", {"task": "x", "runtime": "acp"})
    assert spawned["structuredContent"]["status"] == "forbidden"


def test_the_send_policy_holds_for_the_childs_key(agent_main, home):
    set_config(visibility="all", a2a_enabled=True)
    _, token = child_key(agent_main, home)
    make_session("agent:main:main", sendPolicy="deny")
    blocked = call(
        token,
        "sessions_send",
        {"sessionKey": "agent:main:main", "message": "hi", "timeoutSeconds": 0},
    )
    # OpenClaw's send result (not a tool error): status error, its text; nothing was sent.
    details = blocked["structuredContent"]
    assert (details["status"], details["error"]) == ("error", "send blocked by session policy")
    assert not Message.objects.filter(session__key="agent:main:main", content="hi").exists()


def test_a_leaf_childs_key_may_not_spawn(agent_main, home):
    # maxSpawnDepth 1 (the default): a child is a leaf, through MCP as in a native run.
    set_config(visibility="all", a2a_enabled=True)
    _, token = child_key(agent_main, home)
    spawned = call(token, "sessions_spawn", {"task": "x", "agentId": "echo"})
    assert spawned["structuredContent"]["status"] == "forbidden"
    assert spawned["structuredContent"]["error"] == (
        "sessions_spawn is not allowed at this depth (current depth: 1, max: 1)"
    )


# --- the key's lifetime ----------------------------------------------------------------------


def test_a_revoked_key_is_401_on_mcp(agent_main, home):
    child_run, token = child_key(agent_main, home)
    assert call(token, "sessions_list", {})["isError"] is False
    assert session_tools.revoke(child_run) == 1
    answer = run(
        post(
            "/mcp/",
            {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
            {"authorization": f"Bearer {token}", "content-type": "application/json"},
        )
    )
    assert answer.status == 401
    assert answer.json()["error"]["message"].startswith("Invalid or missing API key")
    assert session_tools.revoke(child_run) == 0  # nothing left to revoke: nothing written


def test_the_sweep_revokes_the_keys_of_turns_that_ended_without_revoking_them(agent_main, home):
    child_run, token = child_key(agent_main, home)
    assert sweeper.sweep()["acpKeysRevoked"] == 0  # queued: its key stays
    Run.objects.filter(pk=child_run.pk).update(status=Run.RUNNING)
    assert sweeper.sweep()["acpKeysRevoked"] == 0  # running: its key stays
    assert call(token, "sessions_list", {})["isError"] is False
    # The worker died: the run ended (the watchdog), the key was not revoked by the turn.
    Run.objects.filter(pk=child_run.pk).update(status=Run.ERROR)
    version = ACCESS.read()
    assert sweeper.sweep()["acpKeysRevoked"] == 1
    assert ACCESS.read() != version  # every process refuses it on its next request
    assert ApiKey.objects.get(acp_run=child_run).revoked_at is not None
    # Nothing to revoke: no write, the access version stays (every process keeps its cache).
    version = ACCESS.read()
    assert sweeper.sweep()["acpKeysRevoked"] == 0
    assert ACCESS.read() == version


def test_the_key_is_never_logged_or_stored_in_the_transcript(agent_main, home, caplog):
    caplog.set_level(logging.DEBUG)
    register(echo=echo(home, sessionTools=True))
    child, _ = spawn(agent_main)
    drain()
    stored = [(m.content, m.extra) for m in Message.objects.filter(session=child)]
    assert "ocs_" not in str(stored)
    assert "ocs_" not in caplog.text
