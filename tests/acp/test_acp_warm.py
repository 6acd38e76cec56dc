"""Warm and resumable harnesses (issue 27 item 3; acp/client.py's Pool): a process that ended its
turn well serves the next turn of the same harness, cwd, user and environment; a follow-up to an
ACP child continues its ACP session (the warm one, else session/load, else a new one with a
note); sessions_spawn's resumeSessionId. Failure first: a failed turn keeps no process, a warm
process that died is replaced."""

from __future__ import annotations

import json
import os
import signal

import pytest

from sessions_app.acp.client import POOL
from sessions_app.models import ApiKey, Message, Run, Session
from tests.acp.harness_fixtures import echo, misbehaving, register
from tests.acp.test_acp_live import gone
from tests.acp.turn_helpers import TASK, spawn_and_run
from tests.conftest import make_agent, make_session
from tests.runs.helpers import drain
from tests.servers import start_server, start_worker, wait_until

pytestmark = pytest.mark.usefixtures("no_heartbeat")


def send(api, child: Session, message: str) -> Run:
    sent = api.details(
        "sessions_send", {"sessionKey": child.key, "message": message, "timeoutSeconds": 0}
    )
    assert sent["status"] == "accepted", sent
    drain()
    return Run.objects.filter(session=child, kind="send").order_by("-created_at").first()


def starts(child: Session) -> list[dict]:
    rows = Message.objects.filter(session=child, extra__acp__event="started").order_by("seq")
    return [{**m.extra["acp"], "text": m.content[0]["text"]} for m in rows]


def test_a_follow_up_continues_the_acp_session_in_the_warm_process(agent_main, home):
    register(echo=echo(home))
    child, run = spawn_and_run(agent_main)
    assert run.status == Run.OK
    first = starts(child)[0]
    assert first["warm"] is False and POOL.warm_pids() == [first["pid"]]
    again = send(agent_main, child, "once more")
    assert again.status == Run.OK and again.reply == "once more"
    second = starts(child)[1]
    assert second["resumed"] == "warm" and second["warm"] is True
    assert (second["sessionId"], second["pid"]) == (first["sessionId"], first["pid"])
    assert second["text"].startswith(f"ACP harness echo continued session {first['sessionId']}")
    # Another child working in the same directory: the same process, a session of its own.
    other, _ = spawn_and_run(agent_main)
    third = starts(other)[0]
    assert third["pid"] == first["pid"] and third["sessionId"] != first["sessionId"]
    assert "resumed" not in third


def test_a_harness_not_kept_warm_ends_with_its_turn_and_a_follow_up_says_what_it_lost(
    agent_main, home
):
    register(echo=echo(home, warmSeconds=0))
    child, _ = spawn_and_run(agent_main)
    first = starts(child)[0]
    assert POOL.warm_pids() == []
    assert send(agent_main, child, "once more").status == Run.OK
    second = starts(child)[1]
    assert second["pid"] != first["pid"] and second["sessionId"]
    assert second["notContinued"] == first["sessionId"]
    assert (
        f"ACP session {first['sessionId']} could not be continued (its process has ended and it "
        "does not announce loadSession): this turn starts a new ACP session" in second["text"]
    )


def test_without_a_warm_process_a_harness_that_announces_load_session_loads_it(agent_main, home):
    register(echo=misbehaving(home, "resumable", warmSeconds=0))
    child, run = spawn_and_run(agent_main)
    first = starts(child)[0]
    assert run.reply == f"{first['sessionId']} new prompt 1"
    again = send(agent_main, child, "more")
    second = starts(child)[1]
    assert second["resumed"] == "load" and second["sessionId"] == first["sessionId"]
    assert again.reply == f"{first['sessionId']} loaded prompt 1"
    assert "loaded session" in second["text"]
    # What the harness replayed while loading is in the transcript already: not stored again.
    assert not [m for m in Message.objects.filter(session=child) if "REPLAYED" in str(m.content)]


def test_spawn_resume_session_id_loads_that_session(agent_main, home):
    register(echo=misbehaving(home, "resumable"))
    child, run = spawn_and_run(agent_main, resumeSessionId="codex-7f4a78e0")
    started = starts(child)[0]
    assert started["resumed"] == "load" and started["sessionId"] == "codex-7f4a78e0"
    assert run.status == Run.OK and run.reply == "codex-7f4a78e0 loaded prompt 1"
    assert Run.objects.get(pk=run.pk).flow["resumeSessionId"] == "codex-7f4a78e0"


def test_spawn_resume_session_id_on_a_harness_without_load_session_starts_anew_and_says_so(
    agent_main, home
):
    register(echo=echo(home))
    child, run = spawn_and_run(agent_main, resumeSessionId="gone-1")
    started = starts(child)[0]
    assert run.status == Run.OK and started["notContinued"] == "gone-1"
    assert "ACP session gone-1 could not be continued" in started["text"]


def test_resume_session_id_is_checked(agent_main, home):
    register(echo=echo(home))
    result = agent_main.details(
        "sessions_spawn", {"task": "x", "resumeSessionId": "7f4a78e0", "agentId": "research"}
    )
    assert result == {
        "status": "error",
        "error": "resumeSessionId is only supported for runtime=acp; got runtime=subagent",
    }
    result = agent_main.details(
        "sessions_spawn", {"task": "x", "runtime": "acp", "resumeSessionId": "a b"}
    )
    assert result["error"] == "resumeSessionId must be an ACP session id (printable, no spaces)"
    response = agent_main.post(
        "/tools/invoke",
        {"tool": "sessions_spawn", "args": {"task": "x", "runtime": "acp", "resumeSessionId": 5}},
    )
    assert response.status_code == 400 and "resumeSessionId" in response.json()["error"]["message"]
    assert not Run.objects.exists()


def test_a_warm_process_that_died_is_replaced(agent_main, home):
    register(echo=echo(home))
    child, _ = spawn_and_run(agent_main)
    pid = starts(child)[0]["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: POOL.warm_pids() == [], timeout=10)  # the pool noticed and let it go
    again = send(agent_main, child, "once more")
    assert again.status == Run.OK and again.reply == "once more"
    second = starts(child)[1]
    assert second["pid"] != pid and second["warm"] is False
    assert second["notContinued"] == starts(child)[0]["sessionId"]


def test_a_failed_turn_keeps_no_process(agent_main, home):
    register(echo=misbehaving(home, "crash"))
    _, run = spawn_and_run(agent_main)
    assert run.status == Run.ERROR and POOL.warm_pids() == []
    register(echo=misbehaving(home, "garbage"))
    _, run = spawn_and_run(agent_main)
    assert run.status == Run.ERROR and POOL.warm_pids() == []


def test_a_warm_process_serves_only_the_same_environment_and_directory(
    agent_main, home, monkeypatch
):
    monkeypatch.setenv("OPENCLAW_TEST_VISIBLE", "one")
    (home / "sub").mkdir()
    register(echo=misbehaving(home, "env", env=["OPENCLAW_TEST_VISIBLE"]))
    child, _ = spawn_and_run(agent_main)
    first = starts(child)[0]["pid"]
    # The environment's value changed (a rotated key): not the warm process.
    monkeypatch.setenv("OPENCLAW_TEST_VISIBLE", "two")
    send(agent_main, child, "again")
    second = starts(child)[1]["pid"]
    assert second != first
    # Another directory (another user, when sandboxed): not the warm process either.
    other, run = spawn_and_run(agent_main, cwd="sub")
    assert starts(other)[0]["pid"] not in (first, second)
    said = json.loads(run.reply)
    assert "OPENCLAW_TEST_VISIBLE" in said["env"] and said["cwd"] == str(home / "sub")
    if os.geteuid() == 0:  # each directory's user (sandbox.py), warm or not
        uids = {s["uid"] for s in starts(child)} | {starts(other)[0]["uid"]}
        assert len(uids) == 2
        with open(f"/proc/{second}/status") as status:
            line = next(x for x in status if x.startswith("Uid:"))
        assert int(line.split()[1]) == starts(child)[1]["uid"]


def test_warm_seconds_is_checked(operator, tmp_path):
    bad = echo(tmp_path, warmSeconds=-1)
    response = operator.patch("/api/v1/config/", {"acp.agents": {"echo": bad}})
    assert response.status_code == 400
    assert response.json()["error"]["message"] == (
        "acp.agents.echo.warmSeconds must be an integer from 0 to 86400"
    )


# --- in a real worker ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        server = start_server()
    yield server
    server.stop()


def invoke(server, token: str, tool: str, args: dict) -> dict:
    response = server.request(
        "POST", "/tools/invoke", body={"tool": tool, "args": args}, token=token
    )
    assert response.status == 200, response.body
    return response.json()["result"]["details"]


def finished(run_id) -> Run:
    return wait_until(
        lambda: Run.objects.filter(pk=run_id, status__in=[Run.OK, Run.ERROR]).first(), timeout=60
    )


@pytest.mark.django_db(transaction=True)
def test_in_a_worker_a_follow_up_finds_the_warm_process_which_ends_with_the_worker(
    server, tmp_path
):
    worker = start_worker(workers=1)  # one worker process: the follow-up lands where it ran
    try:
        make_agent("main")
        make_session("main")
        _, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
        register(echo=echo(tmp_path))
        accepted = invoke(server, token, "sessions_spawn", {"task": TASK, "runtime": "acp"})
        assert finished(accepted["runId"]).status == Run.OK
        child = Session.objects.get(key=accepted["childSessionKey"])
        sent = invoke(
            server,
            token,
            "sessions_send",
            {"sessionKey": child.key, "message": "once more", "timeoutSeconds": 0},
        )
        again = finished(sent["runId"])
        assert again.status == Run.OK and again.reply == "once more"
        first, second = starts(child)
        assert second["resumed"] == "warm" and second["pid"] == first["pid"]
    finally:
        worker.stop()
    # Its stdin closed with the worker: the warm process is gone too.
    wait_until(lambda: gone(first["pid"]), timeout=15)


@pytest.mark.django_db(transaction=True)
def test_a_harness_that_outstays_its_stdin_ends_with_a_killed_worker(server, tmp_path):
    """A worker killed (SIGKILL: no exit hooks run) takes its warm harnesses with it, even one
    that does not end when its stdin closes (client._end_with_the_worker)."""
    worker = start_worker(workers=1)
    try:
        make_agent("main")
        make_session("main")
        _, token = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
        register(stubborn=misbehaving(tmp_path, "stubborn"), default="stubborn")
        accepted = invoke(server, token, "sessions_spawn", {"task": TASK, "runtime": "acp"})
        assert finished(accepted["runId"]).status == Run.OK
        (first,) = starts(Session.objects.get(key=accepted["childSessionKey"]))
        assert not gone(first["pid"])  # kept warm
    finally:
        worker.kill()
    wait_until(lambda: gone(first["pid"]), timeout=15)
