"""The transcript browser's ACP panel (templates/acp/_facts.html in ui/_panel.html): an ACP
child's harness, ACP session id, cwd, warm or cold as the worker last recorded it, and its
permission decisions, with real turns of the demo's echo harness. Shown to whoever may see the
session (ui/access.py), on the page and in the panel fragment the page refreshes live; absent
for any other session."""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import quote

import pytest

from sessions_app.acp import facts
from sessions_app.models import AcpChild, AcpPermission, Run, Session
from tests.acp.harness_fixtures import echo, misbehaving, register
from tests.acp.page_fixtures import no_heartbeat, spawn_echo_child
from tests.conftest import admin_groups, make_agent, make_session
from tests.runs.helpers import drain
from tests.ui.conftest import client_for, make_user

__all__ = ["no_heartbeat"]  # a fixture, used by name


@pytest.fixture
def vera(db):
    admin_groups()
    return client_for(make_user("vera", group="Viewers"))


def page_of(client, session: Session, suffix: str = "") -> str:
    response = client.get(f"/sessions/{quote(session.key)}/{suffix}")
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def panel(page: str) -> str:
    start = page.index('id="sec-acp"')
    return page[start : page.index("</details>", start)]


def test_a_viewer_sees_the_harness_session_cwd_warmth_and_the_decision(
    vera, agent_main, tmp_path, no_heartbeat
):
    child = spawn_echo_child(agent_main, tmp_path, mode="read-only")
    row = AcpChild.objects.get(session=child)
    for suffix in ("", "panel/"):  # the page, and the fragment its live updates fetch
        shown = panel(page_of(vera, child, suffix))
        assert "<h2>ACP harness</h2>" in shown
        assert '<dd class="mono acp-harness">echo</dd>' in shown
        assert f'<dd class="mono acp-session-id">{row.acp_session_id}</dd>' in shown
        assert row.cwd in shown
        assert 'class="badge acp-state acp-warm">warm</span>' in shown
        assert f"its process {row.pid} is kept warm by worker {row.worker}" in shown
        until = row.warm_until.strftime("%Y-%m-%d %H:%M:%S UTC")
        assert f"at the latest until {until} (about " in shown  # ahead: not "… ago"
        assert "acp-decision acp-allowed" in shown and "Read the task" in shown
        assert 'by permissionMode <span class="mono">read-only</span>' in shown


def test_a_denied_decision_and_a_cold_process(vera, agent_main, tmp_path, no_heartbeat):
    child = spawn_echo_child(agent_main, tmp_path, mode="deny", warmSeconds=0)
    shown = panel(page_of(vera, child))
    assert "acp-decision acp-denied" in shown and "chose Reject of:" in shown
    assert 'acp-state acp-cold">cold</span> its process has ended' in shown


def test_a_follow_up_in_the_warm_process_says_so_and_a_crash_there_turns_every_sharer_cold(
    vera, agent_main, tmp_path, no_heartbeat
):
    child = spawn_echo_child(agent_main, tmp_path)
    first = AcpChild.objects.get(session=child)
    # A second child in the same cwd gets a new ACP session in the same warm process.
    result = agent_main.details("sessions_spawn", {"task": "again", "runtime": "acp"})
    drain()
    second = AcpChild.objects.get(session__key=result["childSessionKey"])
    assert (second.pid, second.warm_start, second.reached) == (first.pid, True, "new")
    assert "a new ACP session, in a warm process" in panel(page_of(vera, second.session))
    # The follow-up to the first continues its ACP session there.
    agent_main.details(
        "sessions_send", {"sessionKey": child.key, "message": "once more", "timeoutSeconds": 0}
    )
    drain()
    first.refresh_from_db()
    assert (first.reached, first.warm_start, first.pid) == ("warm", True, second.pid)
    assert "continued in a warm process" in panel(page_of(vera, child))
    assert first.warm_until is not None
    second.refresh_from_db()
    assert second.warm_until == first.warm_until  # the same process, the same fate


def test_a_failed_turn_is_cold_and_its_decisions_stay(vera, agent_main, tmp_path, no_heartbeat):
    make_session("main")
    register(echo=misbehaving(tmp_path, "crash"))
    result = agent_main.details("sessions_spawn", {"task": "x", "runtime": "acp"})
    drain()
    child = Session.objects.get(key=result["childSessionKey"])
    assert Run.objects.get(pk=result["runId"]).status == Run.ERROR
    row = AcpChild.objects.get(session=child)
    assert row.warm_until is None and row.turn_ended_at is not None
    assert "acp-cold" in panel(page_of(vera, child))


def test_the_warmth_is_what_the_worker_last_said(vera, agent_main, tmp_path, no_heartbeat):
    child = spawn_echo_child(agent_main, tmp_path)
    row = AcpChild.objects.get(session=child)
    later = row.warm_until + timedelta(seconds=1)
    assert facts.page_facts(child, now=later)["state"] == "cold"
    # Queued, not started yet: harness and cwd from the spawn, no session yet.
    register(echo=echo(tmp_path))
    result = agent_main.details("sessions_spawn", {"task": "wait", "runtime": "acp"})
    queued = Session.objects.get(key=result["childSessionKey"])
    shown = panel(page_of(vera, queued))
    assert "acp-waiting" in shown and "no turn has started yet" in shown
    assert str(tmp_path) in shown and "No permission requests yet." in shown


def test_a_session_that_is_no_acp_child_has_no_panel_and_costs_no_query(
    vera, agent_main, tmp_path, no_heartbeat, django_assert_num_queries
):
    child = spawn_echo_child(agent_main, tmp_path)
    main = Session.objects.get(key="agent:main:main")
    page = page_of(vera, main)
    assert 'id="sec-acp"' not in page and "Permission decisions" not in page
    with django_assert_num_queries(0):
        assert facts.page_facts(main) is None
    with django_assert_num_queries(2):  # the child's row (with its run), its decisions
        assert facts.page_facts(child)["harness"] == "echo"


def test_an_acp_child_spawned_before_the_facts_were_kept_names_its_harness(vera, agents):
    make_agent("echo")
    old = make_session("agent:echo:acp:0b8e7c2e-5f7c-4d55-b1d6-1f1e2f3a4b5c")
    shown = panel(page_of(vera, old))
    assert '<dd class="mono acp-harness">echo</dd>' in shown and "none recorded" in shown


def test_who_may_not_see_the_session_sees_no_facts(agent_main, tmp_path, no_heartbeat):
    child = spawn_echo_child(agent_main, tmp_path)
    url = f"/sessions/{quote(child.key)}/"
    anonymous = client_for(None).get(url)
    assert anonymous.status_code == 302 and "/login" in anonymous["Location"]
    nobody = client_for(make_user("nina")).get(url)
    assert nobody.status_code == 403
    fragment = client_for(make_user("ned")).get(url + "panel/")
    assert fragment.status_code == 403
    for response in (anonymous, nobody, fragment):
        assert AcpChild.objects.get(session=child).acp_session_id not in response.content.decode()
    assert AcpPermission.objects.filter(session=child).count() == 1
