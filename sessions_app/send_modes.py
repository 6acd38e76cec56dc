"""Watchers and notifications (9.6 §2.2, §4.3): watchers registered with sessions_send's
`watch: true` or by a spawn (the parent watches its child), and notifications (`mode: "notify"`,
and the watch notices) waiting for a session's next turn.

9.6 keeps notifications in process memory (lost on restart). Here a notification is a row, read
and consumed by the session's next turn (runs/engine.py), so it survives a restart and reaches
whichever worker runs that turn; the result says `durability: "database"`. A main-session
watcher is also woken at once (wake: a turn, after the change commits); any other watcher reads
the notice on its next turn.
"""

from __future__ import annotations

from django.db import connection, transaction

from openclaw_common import taskqueue

from .lib import rawsql
from .models import Session
from .models.events import version_of
from .models.watchers import SessionNotification, SessionWatcher

# Per target session; the oldest are evicted beyond it (9.6: bounded, evictable).
MAX_NOTIFICATIONS = 20
NOTIFY_HEADER = (
    "Notifications queued for this session since its last turn (context, not a request):"
)
WATCH_NOTICE = (
    'Session "{target}" changed (other actor). Reconcile before acting: session_status '
    'sessionKey "{target}" changesSince {version}.'
)
# The input of the turn that wakes a main-session watcher; the notices themselves come with the
# turn's notifications.
WAKE_MESSAGE = "A session you watch changed: read the notifications and reconcile."
WAKE_TOOL = "session_watch"  # the wake turn's input provenance (sourceTool)
# Called after the notice commits; the run engine it starts is above this module.
WAKE = "sessions_app.runs.wake.wake"


def watch(session: Session, watcher_key: str) -> bool:
    """Register `watcher_key` as a watcher of `session` from its current state version; a
    repeat keeps the first registration's cursor. True when it is watching."""
    if not watcher_key or watcher_key == session.key:
        return False
    SessionWatcher.objects.get_or_create(
        session=session, watcher_key=watcher_key, defaults={"cursor": version_of(session.pk)}
    )
    return True


def watch_notice(target_key: str, version: int) -> str:
    """The notice text a watcher gets when the target changed (9.6 §2.2, exact)."""
    return WATCH_NOTICE.format(target=target_key, version=version)


def notify(session: Session, text: str, *, source_key: str) -> str:
    """Queue `text` for the session's next turn; evicts the oldest beyond the bound. Its id."""
    with transaction.atomic():
        note = SessionNotification.objects.create(session=session, source_key=source_key, text=text)
        stale = SessionNotification.objects.filter(session=session).order_by("-created_at")[
            MAX_NOTIFICATIONS:
        ]
        SessionNotification.objects.filter(pk__in=list(stale.values_list("pk", flat=True))).delete()
    return str(note.pk)


def take_notifications(session_pk: int) -> str:
    """The queued notifications as a prompt block, consumed; "" when none. One statement
    (DELETE … RETURNING, PostgreSQL and SQLite ≥ 3.35): every turn runs it."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"DELETE FROM {rawsql.table(SessionNotification)} WHERE session_id = %s"
            " RETURNING created_at, source_key, text",
            [session_pk],
        )
        notes = sorted(cursor.fetchall(), key=lambda row: str(row[0]))
    if not notes:
        return ""
    lines = [NOTIFY_HEADER]
    lines += [f"- from {source or 'unknown'}: {text}" for _, source, text in notes]
    return "\n".join(lines)


def notify_watchers(session_pk: int, *, actor_id: str) -> int:
    """Queue the §2.2 notice for each watcher of the session but the actor, one per
    watcher/target pair (a newer notice replaces an unread one). The watcher's next turn reads
    it; a main-session watcher is woken at once (wake(), after commit: it locks the watcher's
    row, which this transaction, holding the target's, must not). Returns how many were
    queued. Runs in the caller's transaction."""
    watchers = list(
        SessionWatcher.objects.filter(session_id=session_pk)
        .exclude(watcher_key=actor_id)
        .values_list("watcher_key", "cursor", "session__key")
    )
    if not watchers:
        return 0
    sessions = {
        key: (pk, kind)
        for key, pk, kind in Session.objects.filter(key__in=[w[0] for w in watchers]).values_list(
            "key", "pk", "kind"
        )
    }
    queued = 0
    for watcher_key, cursor, target_key in watchers:
        if watcher_key not in sessions:
            continue
        watcher_pk, kind = sessions[watcher_key]
        SessionNotification.objects.filter(
            session_id=watcher_pk, source_key=target_key, text__startswith='Session "'
        ).delete()
        SessionNotification.objects.create(
            session_id=watcher_pk, source_key=target_key, text=watch_notice(target_key, cursor)
        )
        if kind == "main":
            taskqueue.call_after_commit(WAKE, watcher_pk, target_key)
        queued += 1
    return queued
