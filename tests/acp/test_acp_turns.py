"""An ACP child's turn with real harness processes (the demo's echo agent, a misbehaving one),
executed in the test process (tests/runs/helpers.drain: the worker's own entry point). What
crosses processes through a real worker is in test_acp_live.py."""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from sessions_app.models import Completion, Message, Run, Session
from tests.acp.harness_fixtures import echo, misbehaving, register
from tests.acp.turn_helpers import TASK, spawn
from tests.conftest import admin_groups, set_config
from tests.runs.helpers import drain
from tests.ui.conftest import client_for, make_user

pytestmark = pytest.mark.usefixtures("no_heartbeat")


def transcript(session: Session) -> list[Message]:
    return list(Message.objects.filter(session=session).order_by("seq"))


def texts(message: Message) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def test_the_echo_agent_streams_the_task_back_with_a_paired_tool_call(agent_main, home):
    # Chunks far enough apart to come in separate batches: still one stored reply.
    register(echo=echo(home, args=("--chunks", "4", "--delay", "0.3")))
    child, run = spawn(agent_main)
    drain()
    run.refresh_from_db()
    assert run.status == Run.OK, run.error
    assert run.reply == TASK
    messages = transcript(child)
    roles = [m.role for m in messages]
    # The task; the harness started; the tool call, its permission, its result; the text.
    assert roles[:5] == ["user", "system", "assistant", "system", "toolResult"], roles
    assert texts(messages[0]) == TASK
    call = messages[2].content[0]
    assert call["type"] == "toolCall" and call["name"] == "read"
    assert call["title"] == "Read the task" and call["arguments"] == {"characters": len(TASK)}
    assert texts(messages[3]) == "Permission allowed by permissionMode read-only: Read the task"
    result = messages[4]
    assert result.tool_call_id == call["id"] and result.tool_name == "read"
    assert texts(result) == f"The task has {len(TASK)} characters."
    assert result.extra["isError"] is False
    # The reply: one assistant message with the whole text (issue 27), ended normally.
    assert len(messages) == 6, roles
    reply = messages[5]
    assert reply.role == "assistant" and texts(reply) == TASK
    assert reply.extra["stopReason"] == "stop" and "errorMessage" not in reply.extra


def test_permission_denied_by_the_mode_is_recorded_and_the_call_fails(agent_main, home):
    register(echo=echo(home, mode="deny"))
    child, run = spawn(agent_main)
    drain()
    messages = transcript(child)
    permission = next(m for m in messages if "Permission" in texts(m))
    assert texts(permission) == "Permission denied by permissionMode deny: Read the task"
    assert permission.extra["acp"]["allowed"] is False
    assert permission.extra["acp"]["optionId"] == "reject"
    result = next(m for m in messages if m.role == "toolResult")
    assert result.extra["isError"] is True
    assert texts(result) == "Permission denied: the task was not read."


def test_the_requester_hears_the_result_through_the_completion_path(agent_main, home):
    register(echo=echo(home, args=("--chunks", "4", "--delay", "0.3")))
    child, run = spawn(agent_main, label="echo it")
    drain()
    completion = Completion.objects.get(child_run=run)
    main = Session.objects.get(key="agent:main:main")
    texts_in_main = [texts(m) for m in transcript(main)]
    assert any(TASK in t and "echo it" in t for t in texts_in_main), texts_in_main
    assert completion.status in ("delivered", "pending")
    # The report (the seeds' Status/Result/Notes) too, with no announce step in the harness.
    assert any(
        t.startswith(f"Status: success\nResult: {TASK}\nNotes: (none)") for t in texts_in_main
    )
    assert not Run.objects.filter(session=child, kind="announce").exists()


def test_a_crash_mid_turn_fails_the_run_and_keeps_what_was_written(agent_main, home, caplog):
    register(echo=misbehaving(home, "crash"))
    child, run = spawn(agent_main)
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error == (
        'ACP harness "echo": the harness exited with code 3 during the turn; its stderr is in '
        "the worker's log"
    )
    # Its stderr is for the operator's log only: every reader of the session sees run errors,
    # and a harness's traceback may hold a password (audit, 28 Nov).
    assert "boom: the harness crashed" in caplog.text
    # What had arrived of the reply is one message, marked as cut by the crash.
    (said,) = [m for m in transcript(child) if m.role == "assistant"]
    assert texts(said) == "partial output before trouble"
    assert said.extra["stopReason"] == "error" and said.extra["errorMessage"] == run.error
    admin_groups()
    viewer = client_for(make_user("vera", group="Viewers"))
    page = viewer.get(f"/sessions/{quote(child.key)}/").content.decode()
    assert "cut short" in page  # the browser shows it as cut


def test_garbage_on_stdout_fails_the_run_and_logs_the_line(agent_main, home, caplog):
    register(echo=misbehaving(home, "garbage"))
    child, run = spawn(agent_main)
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error == (
        'ACP harness "echo": the harness wrote something that is not ACP JSON-RPC on stdout: '
        "a line of 20 bytes"
    )
    assert "this is not json-rpc" in caplog.text
    assert "partial output before trouble" in [texts(m) for m in transcript(child)]


def test_a_harness_that_hangs_at_start_fails_after_its_start_timeout(agent_main, home):
    register(echo=misbehaving(home, "hang", startTimeoutSeconds=1))
    child, run = spawn(agent_main)
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error == (
        'ACP harness "echo": the harness did not answer initialize/session/new within 1s '
        "(startTimeoutSeconds)"
    )


def test_the_process_gets_only_the_allowlisted_environment(agent_main, home, monkeypatch):
    monkeypatch.setenv("OPENCLAW_TEST_VISIBLE", "1")
    monkeypatch.setenv("OPENCLAW_TEST_SECRET", "do-not-pass")
    (home / "work").mkdir()
    register(echo=misbehaving(home, "env", env=["OPENCLAW_TEST_VISIBLE"]))
    child, run = spawn(agent_main, cwd="work")
    drain()
    run.refresh_from_db()
    said = json.loads(run.reply)
    assert set(said["env"]) <= {"OPENCLAW_TEST_VISIBLE", "PATH", "PWD", "LC_CTYPE"}
    assert "OPENCLAW_TEST_VISIBLE" in said["env"] and "OPENCLAW_TEST_SECRET" not in said["env"]
    assert said["cwd"] == str((home / "work").resolve())


def test_stream_to_parent_writes_progress_into_the_requester(agent_main, home):
    register(echo=echo(home))
    child, run = spawn(agent_main, streamTo="parent")
    drain()
    main = Session.objects.get(key="agent:main:main")
    notes = [m for m in transcript(main) if m.extra.get("acpProgress")]
    assert notes and all(m.role == "system" for m in notes)
    assert notes[0].extra["acpProgress"] == {"childSessionKey": child.key}
    joined = " ".join(texts(m) for m in notes)
    assert "[tool read: Read the task]" in joined
    # The reply reaches the parent whole, in one note, not a note per batch of chunks.
    assert texts(notes[-1]) == f"[{child.key}] {TASK}"


def test_without_stream_to_the_parent_gets_no_progress(agent_main, home):
    register(echo=echo(home))
    spawn(agent_main)
    drain()
    main = Session.objects.get(key="agent:main:main")
    assert not [m for m in transcript(main) if m.extra.get("acpProgress")]


def test_a_run_timeout_cancels_the_harness(agent_main, home):
    set_config(max_children_per_agent=10)
    register(echo=misbehaving(home, "slow"))
    child, run = spawn(agent_main, runTimeoutSeconds=5)
    drain()
    run.refresh_from_db()
    assert run.status == Run.TIMEOUT
    assert (home / "cancelled.txt").read_text() == "session/cancel received\n"
    (said,) = [m for m in transcript(child) if m.role == "assistant"]
    assert texts(said).startswith("partial output before trouble tick 0")
    assert said.extra["stopReason"] == "aborted"


def test_the_transcript_browser_shows_the_child(agent_main, home):
    register(echo=echo(home, mode="deny"))
    child, run = spawn(agent_main)
    drain()
    admin_groups()
    viewer = client_for(make_user("vera", group="Viewers"))
    page = viewer.get(f"/sessions/{quote(child.key)}/")
    assert page.status_code == 200
    messages = viewer.get(f"/sessions/{quote(child.key)}/messages/").content.decode()
    assert "characters" in messages  # the tool call's arguments
    assert "Permission denied by permissionMode deny" in messages
    assert "echo back." in messages
    assert "cut short" not in messages  # a reply that ended normally


def test_a_send_to_the_acp_child_runs_the_harness_once_with_no_reply_flow(agent_main, home):
    register(echo=echo(home))
    child, run = spawn(agent_main)
    drain()
    sent = agent_main.details(
        "sessions_send", {"sessionKey": child.key, "message": "once more", "timeoutSeconds": 0}
    )
    assert sent["status"] == "accepted", sent
    drain()
    runs = list(Run.objects.filter(session=child).order_by("created_at"))
    assert [(r.kind, r.status, r.reply) for r in runs] == [
        ("spawn", Run.OK, TASK),
        ("send", Run.OK, "once more"),
    ]
    assert not Run.objects.filter(kind__in=["step", "announce"]).exists()


def test_cleanup_delete_archives_the_child_after_the_report(agent_main, home):
    register(echo=echo(home))
    child, run = spawn(agent_main, cleanup="delete")
    drain()
    child.refresh_from_db()
    assert Run.objects.get(pk=run.pk).status == Run.OK
    assert child.archived_at is not None and not Message.objects.filter(session=child).exists()
    main = Session.objects.get(key="agent:main:main")
    assert any(texts(m).startswith("Status: success") for m in transcript(main))


def test_a_harness_removed_before_its_turn_fails_the_run(agent_main, home):
    register(echo=echo(home))
    child, run = spawn(agent_main)
    register(other=echo(home), default="other")
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error == 'ACP harness "echo" is no longer configured (acp.agents)'


def test_a_command_that_cannot_be_run_fails_the_run_with_the_os_error(agent_main, home, settings):
    # As the worker's user: run as a user of its own, the sandbox refuses it before the OS does
    # (tests/acp/test_acp_sandbox.py).
    settings.OPENCLAW_ACP_SANDBOX = "none"
    script = home / "not-executable.sh"
    script.write_text("#!/bin/sh\n")
    settings.OPENCLAW_ACP_COMMANDS = [*settings.OPENCLAW_ACP_COMMANDS, (str(script),)]
    register(echo={"command": str(script), "cwdRoot": str(home)})
    child, run = spawn(agent_main)
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error.startswith('ACP harness "echo": the harness could not be started: ')
    assert "Permission denied" in run.error


def test_a_turn_stops_itself_before_the_worker_task_limit(agent_main, home, settings):
    settings.Q_CLUSTER = {**settings.Q_CLUSTER, "timeout": 20}  # the turn's limit: 5 s
    register(echo=misbehaving(home, "slow"))
    child, run = spawn(agent_main)
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert run.error.startswith(
        'ACP harness "echo": the turn was stopped after 5s, the worker\'s task time limit'
    )
    assert (home / "cancelled.txt").exists()


def test_the_cwd_is_resolved_again_when_the_turn_starts(agent_main, home, tmp_path_factory):
    """Checked at spawn only, `sub` swapped for a symlink out of the root before the worker
    ran let the harness start outside it (audit, 28 Nov)."""
    root = home / "root"
    (root / "sub").mkdir(parents=True)
    outside = tmp_path_factory.mktemp("outside")
    register(echo=echo(root))
    child, run = spawn(agent_main, cwd="sub")
    (root / "sub").rmdir()
    (root / "sub").symlink_to(outside)
    drain()
    run.refresh_from_db()
    assert run.status == Run.ERROR
    assert "is outside the working-directory root" in run.error
    assert not Message.objects.filter(session=child, extra__acp__event="started").exists()
