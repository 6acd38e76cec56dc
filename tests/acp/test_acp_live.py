"""runtime="acp" across real processes: an HTTP server, a django-q2 worker cluster, and real
harness processes it starts (the demo's echo agent, a misbehaving one). The test is the client
(/tools/invoke, REST) and the operator (abort)."""

from __future__ import annotations

import os
import signal
import time

import pytest
from django.conf import settings

from sessions_app.models import ApiKey, Completion, Message, Run, Session
from tests.acp.harness_fixtures import echo, misbehaving, register
from tests.conftest import make_agent, make_session, set_config
from tests.live.test_across_processes import SSE
from tests.servers import start_server, start_worker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

TASK = "one two three four five six seven eight nine ten"


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        server = start_server()
    yield server
    server.stop()


@pytest.fixture
def world(server, tmp_path):
    # Particular: the server is the module's (started once), the worker each test's own.
    set_config(max_children_per_agent=10)
    make_agent(
        "main",
        subagents={"allowAgents": ["research"]},
        backend={
            "type": "scripted",
            "rules": [{"match": ".*", "on": ["completion"], "reply": "noted"}],
        },
    )
    make_agent("research")
    make_session("main")
    _, agent = ApiKey.generate(scope=ApiKey.AGENT, agent_id="main")
    _, operator = ApiKey.generate(scope=ApiKey.OPERATOR)
    # A worker per test, stopped before the flush: a parent's completion turn may still be
    # writing when a test has seen what it waits for, and on PostgreSQL the flush's TRUNCATE
    # deadlocked with such a write (CI, 27 Nov). A stopped worker writes nothing more.
    worker = start_worker(workers=2)
    yield {"server": server, "agent": agent, "operator": operator, "root": tmp_path}
    worker.stop()


def spawn(w, **args) -> dict:
    response = w["server"].request(
        "POST",
        "/tools/invoke",
        body={"tool": "sessions_spawn", "args": {"task": TASK, "runtime": "acp", **args}},
        token=w["agent"],
    )
    assert response.status == 200, response.body
    return response.json()["result"]["details"]


def history(w, key: str) -> list[dict]:
    response = w["server"].request(
        "GET", f"/api/v1/sessions/{key}/history/?includeTools=1&limit=200", token=w["agent"]
    )
    assert response.status == 200, response.body
    return response.json()["messages"]


def text(message: dict) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def abort(w, key: str) -> dict:
    response = w["server"].request(
        "POST", f"/api/v1/sessions/{key}/abort/", body={}, token=w["operator"]
    )
    assert response.status == 200, response.body
    return response.json()


def harness_pid(child_key: str) -> int:
    started = wait_until(
        lambda: Message.objects.filter(
            session__key=child_key, role="system", extra__acp__event="started"
        ).first(),
        timeout=30,
    )
    return started.extra["acp"]["pid"]


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # A zombie still answers kill(0) until its parent reaps it: look at its state.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(")")[-1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_updates_are_readable_while_the_harness_works_and_the_parent_hears_the_end(world):
    register(echo=echo(world["root"], mode="deny", args=("--chunks", "5", "--delay", "0.8")))
    accepted = spawn(world, streamTo="parent", label="count")
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    # Mid-turn, over the API: the task, the start, the tool call, its permission and result,
    # while the run is still running (the reply streams for 4 s after the result).
    wait_until(lambda: [m for m in history(world, key) if m["role"] == "toolResult"], timeout=30)
    assert Run.objects.get(pk=run_id).status == Run.RUNNING
    wait_until(lambda: Run.objects.get(pk=run_id).status == Run.OK, timeout=30)
    messages = history(world, key)
    roles = [m["role"] for m in messages]
    assert roles == ["user", "system", "assistant", "system", "toolResult", "assistant"]
    call, result = messages[2]["content"][0], messages[4]
    assert call["type"] == "toolCall" and result["toolCallId"] == call["id"]
    assert text(messages[3]) == "Permission denied by permissionMode deny: Read the task"
    assert text(result) == "Permission denied: the task was not read."
    # Five chunks over four seconds, stored as one message (issue 27).
    assert text(messages[5]) == TASK and messages[5]["stopReason"] == "stop"
    # streamTo: progress notes reached the parent while the child worked, the reply whole in
    # one of them; then the completion, with the whole reply.
    main = Session.objects.get(key="agent:main:main")
    notes = Message.objects.filter(session=main, extra__acpProgress__childSessionKey=key)
    assert [text({"content": n.content}) for n in notes.order_by("seq")][-1] == f"[{key}] {TASK}"
    wait_until(
        lambda: Completion.objects.filter(child_run_id=run_id, status="delivered").exists(),
        timeout=30,
    )
    turn = Run.objects.get(session=main, kind="completion")
    assert (
        TASK in turn.message
        or Message.objects.filter(
            session=main, seq=turn.input_seq, content__icontains=TASK
        ).exists()
    )


def said(w, words: str) -> None:
    """Wait until the slow harness has said `words` (its text is stored when the turn ends)."""
    path = w["root"] / "said.txt"
    wait_until(lambda: path.exists() and words in path.read_text(), timeout=30)


def test_abort_sends_session_cancel_then_ends_the_process(world):
    register(echo=misbehaving(world["root"], "slow"))
    accepted = spawn(world)
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    pid = harness_pid(key)
    said(world, "tick 1")
    assert abort(world, key)["status"] == "aborted"
    wait_until(lambda: (world["root"] / "cancelled.txt").exists(), timeout=10)
    wait_until(lambda: gone(pid), timeout=15)
    run = Run.objects.get(pk=run_id)
    assert run.status == Run.ABORTED
    (reply,) = Message.objects.filter(session__key=key, role="assistant")
    assert text({"content": reply.content}).startswith(
        "partial output before trouble tick 0 tick 1"
    )
    assert reply.extra["stopReason"] == "aborted"  # nothing said is lost, and it reads as cut


def test_a_cascade_stop_from_the_parent_stops_the_harness(world):
    register(echo=misbehaving(world["root"], "slow"))
    accepted = spawn(world)
    pid = harness_pid(accepted["childSessionKey"])
    stopped = abort(world, "agent:main:main")
    assert stopped["cancelledDescendants"] == 1
    wait_until(lambda: (world["root"] / "cancelled.txt").exists(), timeout=10)
    wait_until(lambda: gone(pid), timeout=15)
    assert Run.objects.get(pk=accepted["runId"]).status == Run.ABORTED


def test_a_crash_mid_turn_fails_the_child_and_the_parent_hears_it(world):
    register(echo=misbehaving(world["root"], "crash"))
    accepted = spawn(world)
    run_id = accepted["runId"]
    wait_until(lambda: Run.objects.get(pk=run_id).status == Run.ERROR, timeout=30)
    run = Run.objects.get(pk=run_id)
    assert "the harness exited with code 3 during the turn" in run.error
    assert Message.objects.filter(
        session__key=accepted["childSessionKey"], content__icontains="partial output"
    ).exists()
    wait_until(lambda: Completion.objects.filter(child_run_id=run_id).exists(), timeout=30)
    main = Session.objects.get(key="agent:main:main")
    wait_until(
        lambda: Message.objects.filter(
            session=main, content__icontains="the harness exited with code 3"
        ).exists(),
        timeout=30,
    )


def test_a_harness_killed_mid_reply_leaves_what_had_arrived_marked_as_cut(world):
    register(echo=misbehaving(world["root"], "slow"))
    accepted = spawn(world)
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    pid = harness_pid(key)
    said(world, "tick 1")
    os.killpg(pid, signal.SIGKILL)  # the harness runs in its own process group
    wait_until(lambda: Run.objects.get(pk=run_id).status == Run.ERROR, timeout=30)
    run = Run.objects.get(pk=run_id)
    assert "the harness exited with code -9 during the turn" in run.error
    (reply,) = Message.objects.filter(session__key=key, role="assistant")
    arrived = text({"content": reply.content})
    assert arrived.startswith("partial output before trouble tick 0")
    assert (world["root"] / "said.txt").read_text().startswith(arrived)
    assert reply.extra["stopReason"] == "error" and reply.extra["errorMessage"] == run.error


def test_refusals_over_the_live_server(world):
    register(echo=echo(world["root"]), other=echo(world["root"]), allowed=["echo"])
    assert spawn(world, agentId="other") == {
        "status": "forbidden",
        "error": 'agentId "other" is not allowed for runtime=acp (allowed: echo; '
        "acp.allowedAgents)",
    }
    set_config(attachments_enabled=True)
    assert spawn(world, attachments=[{"name": "a.txt", "content": "x"}])["error"] == (
        "attachments are currently unsupported for runtime=acp; use runtime=subagent or "
        "remove attachments"
    )
    assert spawn(world, runtime="subagent", agentId="research", streamTo="parent") == {
        "status": "error",
        "error": "streamTo is only supported for runtime=acp; got runtime=subagent",
    }
    time.sleep(0.2)
    assert not Run.objects.exists()


def test_a_follower_of_the_child_sees_each_update_live_in_order(world):
    register(echo=echo(world["root"], args=("--chunks", "4", "--delay", "0.8")))
    accepted = spawn(world)
    key, run_id = accepted["childSessionKey"], accepted["runId"]
    stream = SSE(world["server"], world["agent"], f"/api/v1/sessions/{key}/history/?follow=1")
    try:
        seen, deltas, said = [], [], []
        while not said:
            frame = stream.frame()
            if frame.get("event") == "history":  # what was there before we connected
                said += [text(m) for m in frame["data"]["messages"] if m["role"] == "assistant"]
                said = [t for t in said if t == TASK]
            elif frame.get("event") == "delta":
                assert "id" not in frame  # not a row: nothing to resume from
                deltas.append(frame["data"])
                if len(deltas) == 1:
                    assert Run.objects.get(pk=run_id).status == Run.RUNNING
            elif frame.get("event") == "message":
                seen.append(frame["data"]["messageSeq"])
                message = frame["data"]["message"]
                if message["role"] == "assistant" and text(message):
                    said.append(text(message))
        assert seen == sorted(seen) and len(seen) == len(set(seen))
        assert said == [TASK]  # the reply, once, whole
        if settings.REDIS_URL:
            # The worker is another process: its deltas reach this server through Redis (without
            # it they stay in the worker, and followers see the stored reply only).
            assert len(deltas) >= 2
            draft = ""
            for delta in deltas:
                draft = draft[: delta["offset"]] + delta["delta"]
            assert draft == TASK
    finally:
        stream.close()
