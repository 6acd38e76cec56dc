"""The state log's watchers and versions (9.6 §2.2): "A spawn parent watches its child
automatically (the cursor is seeded at spawn)"; "main-session watchers are woken at once,
sub-agent watchers see it next turn"; "`stateVersion` is the log head (on `sessions_list` rows
only once events exist)"."""

from __future__ import annotations

import uuid

import pytest
from django.db import transaction

from sessions_app import send_modes
from sessions_app.models import Message, Run, Session
from sessions_app.runs.chain import Chain
from sessions_app.runs.engine import start_run
from sessions_app.send_modes import (
    NOTIFY_HEADER,
    WAKE_MESSAGE,
    WAKE_TOOL,
    SessionNotification,
    SessionWatcher,
    watch_notice,
)
from sessions_app.state_log import version_of
from tests.conftest import make_agent, make_session, set_config, user
from tests.runs.helpers import drain

TARGET = "agent:main:discord:group:dev"


def human_writes(ingest, key: str, text: str) -> None:
    response = ingest.post(f"/api/v1/sessions/{key}/messages/", {"messages": [user(text)]})
    assert response.status_code == 201, response.content


def wake_runs(session: Session):
    return Run.objects.filter(session=session, input_provenance__sourceTool=WAKE_TOOL)


# --- stateVersion on sessions_list rows ---------------------------------------------------------


def test_rows_carry_the_state_version_after_updated_at(agent_main, ingest):
    set_config(visibility="agent")
    session = make_session(TARGET, channel="discord", chatType="group")
    human_writes(ingest, TARGET, "hello")
    (row,) = [r for r in agent_main.details("sessions_list")["sessions"] if r["key"] == TARGET]
    assert row["stateVersion"] == version_of(session.pk) == 2  # created, human_direct_message
    names = list(row)
    assert names.index("stateVersion") == names.index("updatedAt") + 1
    rest = agent_main.get("/api/v1/sessions/").json()["sessions"]
    assert next(r for r in rest if r["key"] == TARGET)["stateVersion"] == 2


def test_a_session_without_events_has_no_state_version(agent_main):
    set_config(visibility="agent")
    # Rows written without the store (an old database, a bulk load) have no log yet.
    Session.objects.create(key="agent:main:cron:bare", agent_id="main", kind="cron")
    rows = {r["key"]: r for r in agent_main.details("sessions_list")["sessions"]}
    assert "stateVersion" not in rows["agent:main:cron:bare"]


# --- a spawn parent watches its child -----------------------------------------------------------


def test_a_spawn_parent_watches_its_child_from_the_childs_version_at_spawn(
    agent_main,
    ingest,
    home,
    django_capture_on_commit_callbacks,
):
    spawned = agent_main.details(
        "sessions_spawn", {"task": "Find papers on SQLite WAL", "agentId": "research"}
    )
    child = Session.objects.get(key=spawned["childSessionKey"])
    watcher = SessionWatcher.objects.get(session=child)
    assert watcher.watcher_key == "agent:main:main" and watcher.cursor == 1  # `created`
    drain()  # the child's run and the parent's completion turn: nothing notifies
    assert not SessionNotification.objects.exists()

    cursor = watcher.cursor
    with django_capture_on_commit_callbacks(execute=True):
        human_writes(ingest, child.key, "a person writes to the sub-agent")
    (notice,) = SessionNotification.objects.filter(session=home)
    assert notice.text == watch_notice(child.key, cursor)


# --- who is woken, and when --------------------------------------------------------------------


@pytest.fixture
def target(agents):
    set_config(visibility="all", a2a_enabled=True, max_ping_pong_turns=0)
    make_session("main")
    return make_session(TARGET, channel="discord", chatType="group")


def test_a_main_session_watcher_is_woken_at_once(
    agent_main, ingest, target, django_capture_on_commit_callbacks
):
    main = Session.objects.get(key="agent:main:main")
    send_modes.watch(target, main.key)
    with django_capture_on_commit_callbacks(execute=True):
        human_writes(ingest, TARGET, "a person writes")
    (run,) = wake_runs(main)
    assert run.status == Run.QUEUED and run.serial and run.message == WAKE_MESSAGE
    assert run.requester_key == TARGET
    # One wake however many notices: a second change while it is queued adds none.
    with django_capture_on_commit_callbacks(execute=True):
        human_writes(ingest, TARGET, "and again")
    assert wake_runs(main).count() == 1 and SessionNotification.objects.count() == 1

    drain()
    run.refresh_from_db()
    assert run.status == Run.OK
    # The turn read the notice (consumed with its notifications) after its input message.
    assert not SessionNotification.objects.filter(session=main).exists()
    wake_input = Message.objects.get(session=main, seq=run.input_seq)
    assert wake_input.provenance["sourceTool"] == WAKE_TOOL
    assert wake_input.provenance["sourceSessionKey"] == TARGET


def test_a_turn_already_queued_reads_the_notice_no_wake(
    agent_main, ingest, target, django_capture_on_commit_callbacks
):
    main = Session.objects.get(key="agent:main:main")
    send_modes.watch(target, main.key)
    Run.objects.create(session=main, kind="send", serial=True, message="busy")  # queued
    with django_capture_on_commit_callbacks(execute=True):
        human_writes(ingest, TARGET, "a person writes")
    assert not wake_runs(main).exists()
    assert SessionNotification.objects.filter(session=main).count() == 1


def test_a_sub_agent_watcher_sees_it_on_its_next_turn(
    agent_main, ingest, target, fake_openai, django_capture_on_commit_callbacks
):
    # An OpenAI-compatible model, so what the turn is given is recorded (its request).
    make_agent(
        "main", backend={"type": "openai", "baseUrl": fake_openai.base_url, "model": "fake-model"}
    )
    child = make_session("agent:main:subagent:w1", spawnedBy="agent:main:main", spawnDepth=1)
    send_modes.watch(target, child.key)
    cursor = SessionWatcher.objects.get(session=target, watcher_key=child.key).cursor
    with django_capture_on_commit_callbacks(execute=True):
        human_writes(ingest, TARGET, "a person writes")
    # Not woken: the notice waits.
    assert SessionNotification.objects.filter(session=child).count() == 1
    assert not Run.objects.filter(session=child).exists()

    # Its next turn (its parent sends it more work) reads the notice, and consumes it.
    fake_openai.reply("Reconciled.")
    with transaction.atomic():
        run = start_run(
            session=child,
            kind="send",
            message="next step",
            chain=Chain(uuid.uuid4(), ("main",)),
            requester_key="agent:main:main",
        )
    drain()
    run.refresh_from_db()
    assert (run.status, run.reply) == (Run.OK, "Reconciled.")
    assert not SessionNotification.objects.filter(session=child).exists()
    (request,) = fake_openai.requests
    messages = request.body["messages"]
    assert messages[0] == {
        "role": "system",
        "content": f"{NOTIFY_HEADER}\n- from {TARGET}: {watch_notice(TARGET, cursor)}",
    }
    assert messages[-1] == {"role": "user", "content": "next step"}


def test_the_watchers_own_actions_notify_no_one(agent_main, ingest, target):
    """A human message whose sender is the watcher itself is its own action."""
    main = Session.objects.get(key="agent:main:main")
    send_modes.watch(target, main.key)
    response = ingest.post(
        f"/api/v1/sessions/{TARGET}/messages/",
        {"messages": [user("mine", senderId="agent:main:main")]},
    )
    assert response.status_code == 201
    assert not SessionNotification.objects.exists()
