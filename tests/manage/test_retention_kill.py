"""Retention with its worker killed mid-sweep, for the archive and the delete batches (the
cold-storage tier's kill test is in test_retention.py): a real django-q2 worker runs the
scheduled sweep and the whole cluster is SIGKILLed once some batches are done. Every session is
then whole (its row, messages, search index rows, runs and state events) or wholly gone, never
in between; a second sweep finishes the work."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from openclaw_common import taskqueue
from sessions_app.manage import retention
from sessions_app.manage.config import update_config
from sessions_app.models import Message, Run, Session
from sessions_app.state_log import SessionEvent
from tests.conftest import make_agent
from tests.servers import start_worker, wait_until

pytestmark = pytest.mark.django_db(transaction=True)

DAY_MS = 86_400_000
MESSAGES = 4
# Only the tier under test acts (no cap, no disk budget, no cold storage).
QUIET = {"maxEntries": 0, "maxDiskBytes": False, "coldStorage": {"enabled": False}}


def build(count: int, *, archived_as: str = "") -> list[int]:
    """`count` sessions idle 40 days, each with MESSAGES messages, a finished run and a state
    event (bulk inserts: the search index rows come from the insert trigger / GIN index)."""
    agent = make_agent("main")
    idle = int(time.time() * 1000) - 40 * DAY_MS
    archived_at = timezone.now() - timedelta(days=10) if archived_as else None
    Session.objects.bulk_create(
        Session(
            key=f"agent:main:discord:dm:k{n}",
            agent=agent,
            last_seq=MESSAGES,
            updated_at=idle,
            archived_at=archived_at,
            archive_reason=archived_as,
        )
        for n in range(count)
    )
    pks = list(Session.objects.order_by("pk").values_list("pk", flat=True))
    Message.objects.bulk_create(
        Message(
            session_id=pk,
            seq=seq,
            role="user" if seq % 2 else "assistant",
            content=[{"type": "text", "text": f"words of session {pk} line {seq}"}],
        )
        for pk in pks
        for seq in range(1, MESSAGES + 1)
    )
    Run.objects.bulk_create(Run(session_id=pk, status=Run.OK) for pk in pks)
    SessionEvent.objects.bulk_create(
        SessionEvent(session_id=pk, sequence=1, kind="created", actor_type="system", summary="x")
        for pk in pks
    )
    return pks


def index_rows(message_ids: list[int]) -> int:
    """Search index rows of these messages: SQLite's FTS5 table (PostgreSQL indexes the
    message rows themselves, so a deleted row leaves no entry to check)."""
    if connection.vendor != "sqlite" or not message_ids:
        return 0
    with connection.cursor() as cursor:
        marks = ",".join("%s" for _ in message_ids)
        cursor.execute(
            f"SELECT count(*) FROM sessions_app_message_fts WHERE rowid IN ({marks})", message_ids
        )
        return cursor.fetchone()[0]


def kill_mid_sweep(done) -> None:
    worker = start_worker(workers=1)
    try:
        taskqueue.enqueue(
            "sessions_app.manage.retention.scheduled_sweep", name="retention-kill-test"
        )
        wait_until(done, timeout=120, interval=0.01)
    finally:
        worker.kill()


def test_killed_during_the_archive_batches(settings, tmp_path):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    pks = build(4000)
    update_config(api_key=None, changes={"session.maintenance": {"pruneAfter": "30d", **QUIET}})

    kill_mid_sweep(lambda: Session.objects.archived().count() >= retention.BATCH)

    archived = Session.objects.archived()
    done = archived.count()
    assert retention.BATCH <= done < len(pks), "the kill came after the sweep: not mid-sweep"
    assert done % retention.BATCH == 0  # whole batches only
    # Archived in place: either archived with its reason, or untouched; the rest stays.
    assert set(archived.values_list("archive_reason", flat=True)) == {retention.AGE}
    assert not Session.objects.active().exclude(archive_reason="").exists()
    assert Message.objects.count() == len(pks) * MESSAGES
    assert Run.objects.count() == SessionEvent.objects.count() == len(pks)

    report = retention.sweep()  # the next pass finishes the work
    assert report["archived"] == len(pks) - done
    assert not Session.objects.active().exists()
    assert Message.objects.count() == len(pks) * MESSAGES


def test_killed_during_the_delete_batches(settings, tmp_path):
    settings.COLD_STORAGE_DIR = tmp_path / "cold"
    pks = build(500, archived_as="reset")
    message_ids: dict[int, list[int]] = {}
    for pk, message_pk in Message.objects.values_list("session_id", "pk"):
        message_ids.setdefault(pk, []).append(message_pk)
    update_config(
        api_key=None,
        changes={
            "session.maintenance": {"pruneAfter": False, "resetArchiveRetention": "1d", **QUIET}
        },
    )

    kill_mid_sweep(lambda: Session.objects.count() <= len(pks) - 50)

    left = set(Session.objects.values_list("pk", flat=True))
    assert 0 < len(left) <= len(pks) - 50, "the kill came after the sweep: not mid-sweep"
    messages = dict.fromkeys(pks, 0)
    for pk in Message.objects.values_list("session_id", flat=True):
        messages[pk] += 1
    runs = set(Run.objects.values_list("session_id", flat=True))
    events = set(SessionEvent.objects.values_list("session_id", flat=True))
    gone = [pk for pk in pks if pk not in left]
    for pk in left:  # whole
        assert messages[pk] == MESSAGES and pk in runs and pk in events, pk
    for pk in gone:  # wholly gone
        assert messages[pk] == 0 and pk not in runs and pk not in events, pk
    assert index_rows([m for pk in gone for m in message_ids[pk]]) == 0
    if connection.vendor == "sqlite":
        assert index_rows([m for pk in left for m in message_ids[pk]]) == len(left) * MESSAGES

    report = retention.sweep()  # the next pass finishes the work
    assert report["deleted"] == len(left)
    assert not Session.objects.exists()
    assert not Message.objects.exists() and not Run.objects.exists()
    assert not SessionEvent.objects.exists()
    assert index_rows([m for ids in message_ids.values() for m in ids]) == 0
