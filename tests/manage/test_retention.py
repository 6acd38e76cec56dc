"""Retention (9.6 §6.1 session.maintenance): age and cap archiving, protection, cold storage
with a byte-for-byte restore, the policy's validation, and a worker killed mid-sweep."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from sessions_app import transcript
from sessions_app.manage import retention, session_admin
from sessions_app.manage.config import update_config
from sessions_app.models import GatewayConfig, Message, Run, Session
from sessions_app.storage import cold_storage
from tests.conftest import add_messages, assistant, make_session, set_config, tool_result, user

DAY_MS = 86_400_000


@pytest.fixture
def cold_dir(settings, tmp_path):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    return settings.COLD_STORAGE_DIR


def aged(key: str, days: float, *messages: dict) -> Session:
    """A session last active `days` ago, with `messages`."""
    session = make_session(key)
    if messages:
        add_messages(session, *messages)
    updated = int(time.time() * 1000 - days * DAY_MS)
    Session.objects.filter(pk=session.pk).update(updated_at=updated)
    session.refresh_from_db()
    return session


def export(session: Session) -> str:
    session.refresh_from_db()
    return "".join(transcript.export_jsonl(session, raw=True))


def test_prune_after_archives_stale_sessions_in_place(agents):
    stale = aged("agent:main:discord:dm:old", 40, user("hello"))
    fresh = aged("agent:main:discord:dm:new", 2, user("hi"))
    report = retention.sweep(retention.Policy(prune_after=timedelta(days=30)))
    stale.refresh_from_db()
    fresh.refresh_from_db()
    assert stale.archived and stale.archive_reason == "age-retention"
    assert stale.messages.count() == 1  # archived in place: the transcript stays
    assert not fresh.archived
    assert report["archiveAge"] == 1 and report["archived"] == 1


def test_protected_sessions_are_kept(agents):
    pinned = aged("agent:main:discord:dm:pinned", 40)
    Session.objects.filter(pk=pinned.pk).update(pinned_at=timezone.now())
    busy = aged("agent:main:discord:dm:busy", 40)
    Run.objects.create(session=busy, status=Run.RUNNING)
    queued = aged("agent:main:discord:dm:queued", 40)
    Run.objects.create(session=queued, status=Run.QUEUED)
    group = aged("agent:main:discord:group:dev", 40)
    main = aged("agent:main:main", 40)  # never archived: "Cannot archive an agent's main session."
    done = aged("agent:main:discord:dm:done", 40)
    Run.objects.create(session=done, status=Run.OK)
    retention.sweep(retention.Policy(prune_after=timedelta(days=30)))
    archived = set(Session.objects.archived().values_list("key", flat=True))
    assert archived == {done.key}
    assert group.pk and main.pk  # kept: a durable external pointer, and the agent's main
    # Nor by the cap.
    retention.sweep(retention.Policy(prune_after=None, max_entries=1))
    assert not Session.objects.get(pk=main.pk).archived


def test_max_entries_archives_the_oldest_per_agent(agents):
    for days in (5, 4, 3, 2, 1):
        aged(f"agent:main:discord:dm:u{days}", days)
    aged("agent:research:discord:dm:x", 9)  # another agent's store: not counted
    report = retention.sweep(retention.Policy(prune_after=None, max_entries=3))
    capped = Session.objects.archived()
    assert sorted(capped.values_list("key", flat=True)) == [
        "agent:main:discord:dm:u4",
        "agent:main:discord:dm:u5",
    ]
    assert set(capped.values_list("archive_reason", flat=True)) == {"active-session-cap"}
    assert report["archiveCap"] == 2


def test_warn_mode_and_dry_run_change_nothing(agents):
    aged("agent:main:discord:dm:old", 40)
    warn = retention.sweep(retention.Policy(mode="warn"))
    dry = retention.sweep(retention.Policy(), dry_run=True)
    assert warn["archiveAge"] == dry["archiveAge"] == 1
    assert warn["archived"] == dry["archived"] == 0
    assert not Session.objects.archived().exists()


def test_reset_archive_retention_deletes_old_reset_archives(agents):
    """The row a real reset leaves (session_admin.reset) is what resetArchiveRetention deletes;
    the session itself, under its new sessionId, stays."""
    reset_one = aged("agent:main:discord:dm:old", 1, user("x"))
    previous_key = session_admin.reset(reset_one)["previousKey"]
    old = Session.objects.get(key=previous_key)
    assert old.archived and old.archive_reason == "reset"
    Session.objects.filter(pk=old.pk).update(archived_at=timezone.now() - timedelta(days=10))
    manual = aged("agent:main:discord:dm:manual", 1)
    Session.objects.filter(pk=manual.pk).update(
        archived_at=timezone.now() - timedelta(days=10), archive_reason="manual"
    )
    policy = retention.Policy(prune_after=None, reset_archive_retention=timedelta(days=7))
    assert retention.sweep(policy)["deleted"] == 1
    assert not Session.objects.filter(pk=old.pk).exists()
    assert Session.objects.filter(pk=reset_one.pk, archived_at=None).exists()
    assert Session.objects.filter(pk=manual.pk).exists()  # manual archives are never deleted


def test_deleting_a_cold_session_removes_its_file_after_commit(
    agents, cold_dir, django_capture_on_commit_callbacks
):
    session = aged("agent:main:discord:dm:gone", 40, user("old words"))
    policy = retention.Policy(prune_after=None, cold_enabled=True, cold_after=timedelta(days=30))
    assert retention.sweep(policy)["movedCold"] == 1
    session.refresh_from_db()
    path = cold_dir / session.cold_file
    assert path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        session_admin.delete(session, archived_only=False)
    assert not Session.objects.filter(pk=session.pk).exists()
    assert not path.exists()


def test_cold_storage_round_trip_is_byte_for_byte(
    agents, cold_dir, django_capture_on_commit_callbacks
):
    session = aged(
        "agent:main:discord:dm:cold",
        40,
        user("hello ünïcode", provenance={"kind": "external_user"}),
        assistant("token sk-abcdefghijklmnopqrstuvwxyz123456 here", model="m", stopReason="stop"),
        tool_result("ok"),
        {"role": "user", "content": None, "timestamp": 5, "custom": {"nested": [1, 2.5]}},
    )
    before = export(session)
    policy = retention.Policy(prune_after=None, cold_enabled=True, cold_after=timedelta(days=30))
    assert retention.sweep(policy)["movedCold"] == 1
    session.refresh_from_db()
    assert session.cold_at is not None
    assert not Message.objects.filter(session=session).exists()
    path = cold_dir / session.cold_file
    assert path.is_file() and path.name.endswith((".jsonl.gz", ".jsonl.zst"))
    with django_capture_on_commit_callbacks(execute=True):
        assert cold_storage.thaw(session) == 4
    assert export(session) == before
    assert not path.exists()
    redact = [m.redact_needed for m in session.messages.order_by("seq")]
    assert redact[1] is True


def test_cold_session_takes_new_messages_and_restores_both(agents, cold_dir):
    session = aged("agent:main:discord:dm:c2", 40, user("one"), assistant("two"))
    assert cold_storage.freeze(session.pk)
    add_messages(session, user("three"))
    session.refresh_from_db()
    assert not cold_storage.freeze(session.pk)  # already cold: left alone
    cold_storage.thaw(session)
    texts = [m.seq for m in session.messages.order_by("seq")]
    assert texts == [1, 2, 3]


def test_freeze_is_skipped_when_a_message_arrives_meanwhile(agents, cold_dir, monkeypatch):
    session = aged("agent:main:discord:dm:race", 40, user("one"))
    real = cold_storage._write_file

    def write_then_append(s, last_seq):
        name = real(s, last_seq)
        add_messages(s, user("late"))
        return name

    monkeypatch.setattr(cold_storage, "_write_file", write_then_append)
    assert not cold_storage.freeze(session.pk)
    assert session.messages.count() == 2
    assert not list(cold_dir.iterdir())  # its file was removed


def test_missing_cold_file_fails_explicitly(agents, cold_dir):
    session = aged("agent:main:discord:dm:gone", 40, user("one"))
    cold_storage.freeze(session.pk)
    session.refresh_from_db()
    (cold_dir / session.cold_file).unlink()
    with pytest.raises(cold_storage.ColdStorageError, match="missing"):
        cold_storage.thaw(session)
    session.refresh_from_db()
    assert session.cold_at is not None  # still cold, nothing half restored


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("x", "session.maintenance must be an object"),
        ({"mode": "delete"}, "session.maintenance.mode must be one of warn, enforce"),
        ({"pruneAfter": "soon"}, "session.maintenance.pruneAfter must be a duration"),
        ({"pruneAfter": 30}, "session.maintenance.pruneAfter must be a duration"),
        ({"maxEntries": -1}, "session.maintenance.maxEntries must be an integer"),
        ({"maxEntries": True}, "session.maintenance.maxEntries must be an integer"),
        ({"coldStorage": {"enabled": "yes"}}, "coldStorage.enabled must be a boolean"),
        ({"coldStorage": {"afterDays": 0}}, "coldStorage.afterDays must be an integer"),
        ({"coldStorage": {"dir": "/tmp"}}, "Unknown setting: session.maintenance.coldStorage.dir"),
        ({"maxDisk": 1}, "Unknown setting: session.maintenance.maxDisk"),
    ],
)
def test_bad_policy_is_a_400(operator, value, message):
    response = operator.patch("/api/v1/config/", {"session.maintenance": value})
    assert response.status_code == 400
    assert message in response.json()["error"]["message"]


def test_policy_is_saved_and_read_with_defaults(db):
    update_config(
        api_key=None,
        changes={"session.maintenance": {"pruneAfter": "7d", "coldStorage": {"enabled": True}}},
    )
    policy = retention.load_policy(GatewayConfig.load())
    assert policy.prune_after == timedelta(days=7)
    assert policy.cold_enabled and policy.cold_after == timedelta(days=30)
    assert policy.mode == "enforce" and policy.max_entries == 5000
    update_config(api_key=None, changes={"session.maintenance": {"pruneAfter": False}})
    assert retention.load_policy().prune_after is None


def test_schedules_exist_after_migrate(db):
    from django_q.models import Schedule

    names = set(Schedule.objects.values_list("name", flat=True))
    assert {retention.SCHEDULE_NAME, retention.COLD_SCHEDULE_NAME} <= names
    retention.ensure_schedules()  # idempotent
    assert Schedule.objects.filter(name=retention.SCHEDULE_NAME).count() == 1


@pytest.mark.django_db(transaction=True)
def test_worker_killed_mid_sweep_leaves_nothing_half_removed(settings, tmp_path, monkeypatch):
    """A real django-q2 worker runs the sweep; it is killed (SIGKILL, the whole cluster) once
    some transcripts are cold. Every session is then either hot with all its rows, or cold with
    no rows and a readable file; restoring them gives the exports back byte for byte."""
    from openclaw_common import taskqueue
    from sessions_app import store
    from tests.conftest import make_agent
    from tests.servers import start_worker, wait_until

    cold = tmp_path / "cold"
    settings.COLD_STORAGE_DIR = cold
    monkeypatch.setenv("OPENCLAW_COLD_DIR", str(cold))
    make_agent("main")
    sessions = []
    for n in range(300):
        session = make_session(f"agent:main:discord:dm:k{n}")
        batch = [
            user(f"message {i} of {n}") if i % 2 else assistant(f"reply {i}") for i in range(30)
        ]
        store.append_to_session(session, store.read_messages(batch))
        sessions.append(session)
    Session.objects.update(updated_at=int(time.time() * 1000 - 40 * DAY_MS))
    before = {s.pk: export(s) for s in sessions}
    update_config(
        api_key=None,
        changes={"session.maintenance": {"mode": "warn", "coldStorage": {"enabled": True}}},
    )

    worker = start_worker(workers=1)
    try:
        taskqueue.enqueue(
            "sessions_app.manage.retention.scheduled_sweep", name="retention-kill-test"
        )
        wait_until(
            lambda: Session.objects.filter(cold_at__isnull=False).count() >= 5,
            timeout=60,
            interval=0.01,
        )
    finally:
        worker.kill()

    cold_count = 0
    for session in Session.objects.all():
        rows = session.messages.count()
        if session.cold_at is None:
            assert rows == session.last_seq == 30, session.key
        else:
            cold_count += 1
            assert rows == 0, session.key
            assert (cold / session.cold_file).is_file()
    assert 5 <= cold_count < len(sessions), "the kill came after the sweep: not mid-sweep"
    for session in Session.objects.filter(cold_at__isnull=False):
        cold_storage.thaw(session)
    assert {s.pk: export(s) for s in sessions} == before
    assert not Session.objects.filter(cold_at__isnull=False).exists()


# --- the admin's preview ---------------------------------------------------------------------


def _staff(name: str, group_name: str):
    from django.contrib.auth.models import User
    from django.test import Client

    from tests.conftest import admin_groups

    person = User.objects.create_user(name, password="x", is_staff=True)
    person.groups.add(admin_groups()[group_name])
    client = Client()
    client.force_login(person)
    return client


RETENTION_URL = "/admin/sessions_app/gatewayconfig/retention/"


def test_admin_preview_shows_what_a_policy_would_remove_before_it_is_saved(agents):
    import html
    import json

    old = aged("agent:main:discord:dm:old", 10)
    aged("agent:main:discord:dm:new", 1)
    op = _staff("olivia", "Operators")
    assert "retention-link" in op.get("/admin/sessions_app/gatewayconfig/1/change/").text
    page = op.get(RETENTION_URL)
    assert page.status_code == 200 and '"pruneAfter": "30d"' in html.unescape(page.text)
    policy = json.dumps({"pruneAfter": "7d", "coldStorage": {"enabled": True, "afterDays": 5}})
    preview = op.post(RETENTION_URL, {"policy": policy, "_preview": "1"})
    assert preview.status_code == 200
    text = preview.text
    assert 'data-tier="archive_age"' in text and old.key in text
    assert (
        "agent:main:discord:dm:new"
        not in text.split('id="retention-preview"')[1].split("Saved policy")[0]
    )
    # Nothing saved, nothing archived.
    assert GatewayConfig.load().session_maintenance == {}
    assert not Session.objects.archived().exists()
    saved = op.post(RETENTION_URL, {"policy": policy, "_save": "1"})
    assert saved.status_code == 302
    assert GatewayConfig.load().session_maintenance["pruneAfter"] == "7d"
    assert not Session.objects.archived().exists()  # saving does not sweep


def test_admin_preview_refuses_a_bad_policy_and_viewers_cannot_save(agents):
    op = _staff("olivia", "Operators")
    bad = op.post(RETENTION_URL, {"policy": '{"mode": "nuke"}', "_preview": "1"})
    assert bad.status_code == 200 and "mode must be one of warn, enforce" in bad.text
    assert "retention-preview" not in bad.text
    viewer = _staff("victor", "Viewers")
    assert viewer.get(RETENTION_URL).status_code == 403  # as the gateway settings page
    assert viewer.post(RETENTION_URL, {"policy": "{}", "_save": "1"}).status_code == 403
    anonymous = __import__("django.test", fromlist=["Client"]).Client()
    assert anonymous.get(RETENTION_URL).status_code == 302  # to the login page


def test_stale_temporaries_of_a_killed_worker_are_removed(cold_dir):
    import os

    cold_dir.mkdir(parents=True)
    stale, fresh = cold_dir / ".a.jsonl.gz.tmp-1", cold_dir / ".b.jsonl.gz.tmp-2"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"x")
    os.utime(stale, (time.time() - 7200, time.time() - 7200))
    assert cold_storage.remove_stale_temporaries() == 1
    assert not stale.exists() and fresh.exists()


def test_a_second_sweep_racing_the_first_keeps_the_winners_file(agents, cold_dir, monkeypatch):
    """Two passes freeze the same session at once: the loser removes only its own file."""
    session = aged("agent:main:discord:dm:both", 40, user("one"), assistant("two"))
    before = export(session)
    real = cold_storage._write_file
    calls = []

    def write_while_another_pass_wins(s, last_seq):
        name = real(s, last_seq)
        if not calls:
            calls.append(name)
            assert cold_storage.freeze(s.pk)  # the other pass, start to finish
        return name

    monkeypatch.setattr(cold_storage, "_write_file", write_while_another_pass_wins)
    assert not cold_storage.freeze(session.pk)
    session.refresh_from_db()
    assert (cold_dir / session.cold_file).is_file()
    assert [p.name for p in cold_dir.iterdir()] == [session.cold_file]
    cold_storage.thaw(session)
    assert export(session) == before


def test_orphan_cold_files_are_removed_after_an_hour(agents, cold_dir):
    import os

    session = aged("agent:main:discord:dm:kept", 40, user("one"))
    cold_storage.freeze(session.pk)
    session.refresh_from_db()
    orphan = cold_dir / "dead.1234.jsonl.gz"
    orphan.write_bytes(b"x")
    for path in (orphan, cold_dir / session.cold_file):
        os.utime(path, (time.time() - 7200, time.time() - 7200))
    assert cold_storage.remove_orphans() == 1
    assert not orphan.exists() and (cold_dir / session.cold_file).exists()


def test_a_pass_past_its_deadline_stops_and_the_next_goes_on(agents, cold_dir):
    pks = [aged(f"agent:main:discord:dm:d{n}", 40, user("x")).pk for n in range(3)]
    assert cold_storage.freeze_many(pks, deadline=time.monotonic() - 1) == 0
    assert cold_storage.freeze_many(pks) == 3


# --- reading a cold transcript: thawed, then hot for 24 h (cold_storage.ensure_hot) ----------


def test_a_thawed_transcript_stays_hot_for_24_hours(agents, cold_dir):
    session = aged("agent:main:discord:dm:thaw", 40, user("one"), assistant("two"))
    before = export(session)
    assert cold_storage.freeze(session.pk)
    session.refresh_from_db()
    cold_storage.ensure_hot(session)
    assert export(session) == before
    session.refresh_from_db()
    assert session.cold_at is None and session.hot_until > timezone.now() + timedelta(hours=23)
    set_config(session_maintenance={"coldStorage": {"enabled": True, "afterDays": 30}})
    policy = retention.load_policy()
    assert retention.cold_candidates(timezone.now() - policy.cold_after) == []
    assert retention.scheduled_cold_storage() == 0
    assert retention.sweep(policy)["movedCold"] == 0
    assert cold_storage.freeze(session.pk) is False  # an operator's direct call too
    # A day later it is idle like any other.
    Session.objects.filter(pk=session.pk).update(hot_until=timezone.now() - timedelta(seconds=1))
    assert retention.cold_candidates(timezone.now() - policy.cold_after) == [session.pk]
    assert retention.scheduled_cold_storage() == 1


def test_a_read_racing_the_minutes_freeze_keeps_every_message(agents, cold_dir, monkeypatch):
    """The freeze has written its file when a reader opens the (still hot) idle session: the
    read keeps it hot, the freeze's final check fails, the reader sees every row once."""
    session = aged("agent:main:discord:dm:racing", 40, user("one"), assistant("two"))
    before = export(session)
    real = cold_storage._write_file
    seen = []

    def write_while_a_reader_opens_it(s, last_seq):
        name = real(s, last_seq)
        reader_copy = Session.objects.get(pk=s.pk)
        cold_storage.ensure_hot(reader_copy)
        seen.append(export(reader_copy))
        return name

    monkeypatch.setattr(cold_storage, "_write_file", write_while_a_reader_opens_it)
    idle_before = timezone.now() - timedelta(days=30)
    assert cold_storage.freeze(session.pk, idle_before=idle_before) is False
    assert seen == [before]
    session.refresh_from_db()
    assert session.cold_at is None and session.messages.count() == 2
    assert not list(cold_dir.iterdir())  # the losing freeze removed its own file


def test_two_readers_thaw_one_session_once(agents, cold_dir):
    """Both loaded the session while it was cold; the second finds it restored (the row lock
    and the locked row's cold_file decide, not the reader's copy): no message twice."""
    session = aged("agent:main:discord:dm:two", 40, user("one"), assistant("two"))
    before = export(session)
    assert cold_storage.freeze(session.pk)
    first, second = Session.objects.get(pk=session.pk), Session.objects.get(pk=session.pk)
    assert first.cold_at is not None and second.cold_at is not None
    cold_storage.ensure_hot(first)
    cold_storage.ensure_hot(second)
    assert session.messages.count() == 2
    assert export(session) == before


def test_a_stale_reader_reads_the_file_the_session_points_at_now(agents, cold_dir):
    """A reader holds a copy naming an old file; meanwhile the session was thawed, kept hot,
    frozen again into a new file. The restore reads the new one."""
    session = aged("agent:main:discord:dm:stale", 40, user("one"))
    assert cold_storage.freeze(session.pk)
    stale = Session.objects.get(pk=session.pk)
    cold_storage.thaw(Session.objects.get(pk=session.pk))
    add_messages(session, user("two"))
    Session.objects.filter(pk=session.pk).update(
        hot_until=timezone.now() - timedelta(seconds=1), updated_at=stale.updated_at
    )
    assert cold_storage.freeze(session.pk)
    session.refresh_from_db()
    assert session.cold_file != stale.cold_file
    (cold_dir / stale.cold_file).unlink(missing_ok=True)  # gone (after the thaw's commit)...
    cold_storage.ensure_hot(stale)  # ...and the restore does not need it
    assert [m.seq for m in session.messages.order_by("seq")] == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_two_readers_and_the_minutes_freeze_racing_in_threads(agents, cold_dir):
    """Real concurrency (threads, each its own connection): each round starts the session cold
    or hot-but-idle, then two readers and the scheduled freeze go at once. Every reader sees
    every message exactly once, and the transcript ends whole, in the rows or in one file."""
    import threading

    from django.db import connection

    session = aged("agent:main:discord:dm:threads", 40, *[user(f"m{n}") for n in range(40)])
    before = export(session)
    set_config(session_maintenance={"coldStorage": {"enabled": True, "afterDays": 30}})
    seen: list[list[int]] = []
    errors: list[BaseException] = []

    def in_thread(barrier, work):
        try:
            barrier.wait()
            work()
        except BaseException as exc:  # reported by the main thread
            errors.append(exc)
        finally:
            connection.close()

    def read():
        reader = Session.objects.get(pk=session.pk)
        cold_storage.ensure_hot(reader)
        seen.append(list(reader.messages.order_by("seq").values_list("seq", flat=True)))

    for round_number in range(6):
        Session.objects.filter(pk=session.pk).update(hot_until=None)  # a day went by
        if round_number % 2 == 0:
            cold_storage.freeze(session.pk)
        barrier = threading.Barrier(3)
        threads = [
            threading.Thread(target=in_thread, args=(barrier, work))
            for work in (read, read, retention.scheduled_cold_storage)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        assert seen[-2:] == [list(range(1, 41))] * 2, round_number
        current = Session.objects.get(pk=session.pk)
        assert current.cold_at is None  # both readers kept it hot: the freeze gave way
        assert current.messages.count() == 40
        assert {p.name for p in cold_dir.iterdir()} <= {current.cold_file}
    assert export(session) == before
