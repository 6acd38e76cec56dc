"""sessions_send as OpenClaw 2026.9.6 answers it (9.6 §4.3): mode (followup, steer, notify,
resume), watch, targetDisposition, no_reply, agentId-only targets, the message aliases and the
new refusals, with their exact texts. Bad input is a 400, never a 500."""

import pytest

from sessions_app.models import Message, Run, Session
from sessions_app.send_modes import (
    NOTIFY_HEADER,
    SessionNotification,
    SessionWatcher,
    take_notifications,
    watch_notice,
)
from sessions_app.state_log import version_of
from sessions_app.tools.sessions_send import (
    MISSING_FOR_MODE,
    NO_REPLY_MESSAGE,
    RESUME_ADMISSION_ONLY,
    RESUME_NO_CHILD,
    RESUME_NOT_PARENT,
    SELF_TARGET,
    STEER_IDLE,
    THREAD_TARGET,
    send_result,
)
from tests.conftest import make_session, set_config
from tests.runs.helpers import drain
from tests.runs.test_yield import home  # noqa: F401  (the paused-child fixture)

TARGET = "agent:main:discord:group:dev"
PENDING = {"status": "pending", "mode": "announce"}


@pytest.fixture
def target(agents):
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=0)
    make_session("main")
    return make_session(TARGET, channel="discord", chatType="group")


def send(api, **args):
    return api.details("sessions_send", {"message": "hello", "timeoutSeconds": 0, **args})


def error_of(response):
    assert response.status_code == 400, response.content
    return response.json()["error"]["message"]


def test_an_accepted_send_reports_its_disposition_and_delivery(agent_main, target):
    details = send(agent_main, sessionKey=TARGET)
    assert details["status"] == "accepted" and details["targetDisposition"] == "queued"
    assert details["delivery"] == PENDING and details["sessionKey"] == TARGET
    assert "watched" not in details


@pytest.mark.parametrize("alias", ["SendMessage", "content", "text"])
def test_the_message_aliases_are_accepted(agent_main, target, alias):
    details = agent_main.details(
        "sessions_send", {"sessionKey": TARGET, alias: "via alias", "timeoutSeconds": 0}
    )
    assert details["status"] == "accepted"
    assert Message.objects.filter(session=target, content="via alias").exists()


def test_no_message_under_any_name_is_message_required(agent_main, target):
    response = agent_main.invoke("sessions_send", {"sessionKey": TARGET, "text": "  "})
    assert error_of(response) == "message required"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"mode": "later"}, "mode must be notify, steer, followup, or resume"),
        ({"mode": 3}, "mode must be notify, steer, followup, or resume"),
        ({"watch": "maybe"}, "watch must be a boolean"),
        ({"text": 5}, "text must be a string"),
        ({"mode": "resume", "timeoutSeconds": 5}, RESUME_ADMISSION_ONLY),
        ({"mode": "resume", "watch": True}, RESUME_ADMISSION_ONLY),
    ],
)
def test_bad_new_arguments_are_400(agent_main, target, args, message):
    response = agent_main.invoke("sessions_send", {"sessionKey": TARGET, "message": "m", **args})
    assert error_of(response) == message


def test_resume_without_timeout_or_with_zero_is_not_refused_as_input(agent_main, target):
    details = send(agent_main, sessionKey=TARGET, mode="resume")
    assert details["status"] == "forbidden" and details["error"] == RESUME_NOT_PARENT


def test_watch_registers_the_sender_from_the_targets_version(agent_main, target):
    details = send(agent_main, sessionKey=TARGET, watch=True)
    assert details["watched"] is True
    watcher = SessionWatcher.objects.get(session=target)
    assert watcher.watcher_key == "agent:main:main" and watcher.cursor == version_of(target.pk)
    # a repeat keeps the first registration
    send(agent_main, sessionKey=TARGET, watch=True)
    assert SessionWatcher.objects.count() == 1


def test_watch_false_or_a_refusal_reports_watched_false(agent_main, target):
    assert send(agent_main, sessionKey=TARGET, watch=False)["watched"] is False
    refused = send(agent_main, sessionKey=TARGET, watch=True, mode="steer")
    assert refused["error"] == STEER_IDLE and refused["watched"] is False
    assert not SessionWatcher.objects.exists()


def test_the_watch_notice_text_is_exact():
    assert watch_notice("agent:main:x", 7) == (
        'Session "agent:main:x" changed (other actor). Reconcile before acting: '
        'session_status sessionKey "agent:main:x" changesSince 7.'
    )


def test_agent_id_alone_targets_that_agents_main_creating_it(agent_main, target):
    assert not Session.objects.filter(key="agent:research:main").exists()
    details = send(agent_main, agentId="research")
    assert details["status"] == "accepted" and details["sessionKey"] == "agent:research:main"
    created = Session.objects.get(key="agent:research:main")
    assert Message.objects.filter(session=created, content="hello").exists()


def test_agent_id_alone_for_an_unknown_agent(agent_main, target):
    details = send(agent_main, agentId="ghost")
    assert details["status"] == "error" and details["error"] == "agent not found: ghost"


@pytest.mark.parametrize("mode", ["notify", "steer", "resume"])
def test_modes_other_than_followup_refuse_a_missing_session(agent_main, target, mode):
    by_agent = send(agent_main, agentId="research", mode=mode)
    assert by_agent["status"] == "error" and by_agent["error"] == MISSING_FOR_MODE
    assert not Session.objects.filter(key="agent:research:main").exists()
    by_key = send(agent_main, sessionKey="agent:main:nowhere", mode=mode)
    assert by_key["error"] == MISSING_FOR_MODE


def test_steer_into_an_idle_target_is_refused(agent_main, target):
    details = send(agent_main, sessionKey=TARGET, mode="steer", timeoutSeconds=30)
    assert details["status"] == "error" and details["error"] == STEER_IDLE
    assert not Run.objects.exists()


def test_steer_goes_into_the_active_run(agent_main, target):
    active = Run.objects.create(session=target, kind="send", status=Run.RUNNING)
    details = send(agent_main, sessionKey=TARGET, mode="steer", timeoutSeconds=30)
    assert details == {
        "runId": str(active.pk),
        "status": "accepted",
        "sessionKey": TARGET,
        "targetDisposition": "steered",
        "delivery": {"status": "skipped", "mode": "announce"},
    }
    assert Run.objects.count() == 1  # no turn started
    steered = Message.objects.get(session=target, content="hello")
    assert steered.provenance["sourceTool"] == "sessions_send"


def test_notify_queues_context_without_waking_the_target(agent_main, target):
    details = send(agent_main, sessionKey=TARGET, mode="notify", message="FYI: deploy at 5")
    assert details == {
        "status": "queued",
        "sessionKey": TARGET,
        "notificationId": details["notificationId"],
        "durability": "database",
        "runStarted": False,
    }
    assert not Run.objects.exists() and not Message.objects.filter(session=target).exists()
    assert take_notifications(target.pk) == (
        f"{NOTIFY_HEADER}\n- from agent:main:main: FYI: deploy at 5"
    )
    assert take_notifications(target.pk) == ""  # consumed


def test_the_next_turn_consumes_the_notifications(agent_main, target):
    send(agent_main, sessionKey=TARGET, mode="notify", message="context")
    send(agent_main, sessionKey=TARGET, mode="followup")
    drain()
    assert not SessionNotification.objects.exists()


def test_a_waited_send_to_the_calling_session_is_refused(agent_main, target):
    details = send(agent_main, sessionKey="main", timeoutSeconds=5)
    assert details["status"] == "error" and details["error"] == SELF_TARGET
    assert send(agent_main, sessionKey="main")["status"] == "accepted"


def test_a_thread_session_target_is_refused(agent_main, target):
    make_session("agent:main:discord:channel:dev:thread:77")
    details = send(agent_main, sessionKey="agent:main:discord:channel:dev:thread:77")
    assert details["status"] == "error" and details["error"] == THREAD_TARGET


@pytest.mark.parametrize("reply", ["", "NO_REPLY", "no_reply."])
def test_a_waited_run_without_visible_text_is_no_reply(target, reply):
    run = Run.objects.create(session=target, kind="send", status=Run.OK, reply=reply)
    assert send_result(run, session_key=TARGET, timeout=30, watched=True) == {
        "runId": str(run.pk),
        "sessionKey": TARGET,
        "status": "no_reply",
        "message": NO_REPLY_MESSAGE,
        "watched": True,
    }
    assert NO_REPLY_MESSAGE == (
        "No visible reply or pending announcement. Continue or retry if needed."
    )


def test_a_terminal_error_keeps_sent_before_error(target):
    run = Run.objects.create(session=target, kind="send", status=Run.ERROR, error="")
    result = send_result(run, session_key=TARGET, timeout=30)
    assert result["status"] == "error" and result["error"] == "agent error"
    assert result["sentBeforeError"] is True
    timed_out = Run.objects.create(session=target, kind="send", status=Run.TIMEOUT)
    result = send_result(timed_out, session_key=TARGET, timeout=30)
    assert result["status"] == "timeout" and result["error"] == "agent run timed out"
    assert result["sentBeforeError"] is True


def test_resume_of_a_child_that_is_not_paused(agent_main, target):
    child = make_session("agent:main:subagent:kid", spawnedBy="agent:main:main")
    assert child.spawned_by == "agent:main:main"
    Session.objects.filter(pk=child.pk).update(spawn_depth=1)
    details = send(agent_main, sessionKey="agent:main:subagent:kid", mode="resume")
    assert details["status"] == "error" and details["error"] == RESUME_NO_CHILD


def _paused_child(agent_main):
    set_config(visibility="all", a2a_enabled=True)
    spawned = agent_main.details("sessions_spawn", {"agentId": "research", "task": "pause here"})
    drain()
    assert Run.objects.get(pk=spawned["runId"]).yielded == Run.YIELDED_FOR_MESSAGE
    return spawned


def test_mode_resume_continues_a_paused_child(agent_main, home):  # noqa: F811
    spawned = _paused_child(agent_main)
    details = send(agent_main, sessionKey=spawned["childSessionKey"], mode="resume")
    assert details["status"] == "accepted" and details["mode"] == "resume"
    assert details["taskRunId"] == spawned["runId"] and details["completion"] == "task"


def test_followup_never_resumes_a_paused_child(agent_main, home):  # noqa: F811
    spawned = _paused_child(agent_main)
    details = send(agent_main, sessionKey=spawned["childSessionKey"], mode="followup")
    assert details["status"] == "accepted" and "mode" not in details
    assert details["targetDisposition"] == "queued"


def test_snake_case_spellings_are_accepted(agent_main, target):
    details = agent_main.details(
        "sessions_send", {"session_key": TARGET, "message": "snake", "timeout_seconds": 0}
    )
    assert details["status"] == "accepted" and details["sessionKey"] == TARGET


def test_a_watcher_gets_one_coalesced_notice_when_a_human_writes(agent_main, ingest, target):
    from tests.conftest import user

    def human_writes(key, text):
        response = ingest.post(f"/api/v1/sessions/{key}/messages/", {"messages": [user(text)]})
        assert response.status_code == 201, response.content

    send(agent_main, sessionKey=TARGET, watch=True)
    cursor = SessionWatcher.objects.get().cursor
    human_writes(TARGET, "a person writes")
    human_writes(TARGET, "and again")
    main = Session.objects.get(key="agent:main:main")
    (notice,) = SessionNotification.objects.filter(session=main)
    assert notice.source_key == TARGET
    assert notice.text == (
        f'Session "{TARGET}" changed (other actor). Reconcile before acting: session_status '
        f'sessionKey "{TARGET}" changesSince {cursor}.'
    )
    # nobody watches main: its own human messages notify no one
    human_writes("agent:main:main", "hi")
    assert SessionNotification.objects.count() == 1


def test_the_rest_send_endpoint_takes_mode_and_watch(agent_main, target):
    response = agent_main.post(
        f"/api/v1/sessions/{TARGET}/send/", {"message": "fyi", "mode": "notify", "watch": True}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "queued" and body["watched"] is True
    bad = agent_main.post(f"/api/v1/sessions/{TARGET}/send/", {"message": "x", "mode": "loud"})
    assert error_of(bad) == "mode must be notify, steer, followup, or resume"
