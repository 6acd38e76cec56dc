"""The per-session state-version log (9.6 §2.2): what happened to a session, numbered.

One row per event, `sequence` 1, 2, 3, … per session; a session's `stateVersion` is its newest
sequence (the log head: session_status, and sessions_list rows once there are events, read in
the list page's statement by rows.page_rows). Events are written in the transaction of what they record (a session
created, a child spawned, a human's message stored, a run finished), by one INSERT that takes
the next number itself, so recording costs one statement. The writer holds the session's row
lock (the append's seq allocation, the run's finishing lock, a creation) or takes it first
(`lock=True`), so two writers never pick the same number; UniqueConstraint(session, sequence)
backs that.

Retention (prune()): 30 days and 50,000 rows per session, always keeping each session's newest
event, so heads stay monotonic (a number is never given out twice). `historyGap` tells a
caller that the versions it asks about are gone.

Kinds 9.6 has and we record: created, human_direct_message, child_spawned, run_completed,
run_failed. `upstream_missing`, `goal_changed`, `compacted` and `adopted` are accepted kinds with
nothing here that produces them yet (no goals, compaction or adoption in this service).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection
from django.db.models import F, Max, Min, OuterRef, Q, Subquery
from django.utils import timezone

from . import send_modes
from .models import Session, now_ms
from .models.events import ACTOR_TYPES, KINDS, SUMMARY_CHARS, SessionEvent
from .models.events import version_of as version_of  # the log head, part of this API

MAX_EVENTS = 200
RETENTION_DAYS = 30
MAX_ROWS_PER_SESSION = 50_000


# What event_json() reads of an event, in its order (changes_since reads these columns only).
EVENT_COLUMNS = (
    "sequence",
    "kind",
    "actor_type",
    "occurred_at",
    "summary",
    "actor_id",
    "run_id",
    "payload",
)


def event_json(
    sequence: int,
    kind: str,
    actor_type: str,
    occurred_at: int,
    summary: str,
    actor_id: str,
    run_id: Any,
    payload: Any,
) -> dict[str, Any]:
    """One event as session_status shows it (9.6 §2.1 stateChanges.events[])."""
    event: dict[str, Any] = {
        "sequence": sequence,
        "kind": kind,
        "actorType": actor_type,
        "occurredAt": occurred_at,
        "summary": summary,
    }
    if actor_id:
        event["actorId"] = actor_id
    if run_id:
        event["runId"] = str(run_id)
    if payload:
        event["payload"] = payload
    return event


_TABLE = "sessions_app_sessionevent"
_INSERT = f"""
INSERT INTO {_TABLE}
    (session_id, sequence, kind, actor_type, actor_id, run_id, summary, payload, occurred_at)
SELECT %s, COALESCE(MAX(sequence), 0) + 1, %s, %s, %s, %s, %s, %s, %s
FROM {_TABLE} WHERE session_id = %s
"""


def record(
    session_pk: int,
    kind: str,
    *,
    actor_type: str,
    summary: str,
    actor_id: str = "",
    run_id: Any = None,
    payload: dict | None = None,
    lock: bool = False,
) -> None:
    """Append one event to the session's log, in the caller's transaction. `lock`: take the
    session's row lock first (a writer that does not hold it already)."""
    assert kind in KINDS and actor_type in ACTOR_TYPES, (kind, actor_type)
    if lock and connection.features.has_select_for_update:
        list(Session.objects.select_for_update().filter(pk=session_pk).values_list("pk"))
    run = None
    if run_id:
        run = run_id.hex if connection.vendor != "postgresql" else str(run_id)
    with connection.cursor() as cursor:
        cursor.execute(
            _INSERT,
            [
                session_pk,
                kind,
                actor_type,
                actor_id[:200],
                run,
                summary[:SUMMARY_CHARS],
                _json(payload),
                now_ms(),
                session_pk,
            ],
        )
    if kind in NOTIFYING_KINDS:
        send_modes.notify_watchers(session_pk, actor_id=actor_id)


# The kinds that notify the session's watchers (9.6 §2.2; send_modes.notify_watchers).
NOTIFYING_KINDS = frozenset({"human_direct_message", "upstream_missing", "goal_changed"})


def _json(payload: dict | None) -> str | None:
    import orjson

    return orjson.dumps(payload).decode() if payload else None


@dataclass(frozen=True)
class Changes:
    version: int
    events: list[dict]
    truncated: bool
    earliest: int
    gap: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "events": self.events,
            "truncated": self.truncated,
            "earliestAvailableSequence": self.earliest,
            "historyGap": self.gap,
        }


def changes_since(session_pk: int, since: int) -> Changes:
    """The events after version `since`, oldest first, at most MAX_EVENTS (`truncated` when more
    remain); `gap` when `since` predates the oldest event still kept."""
    bounds = SessionEvent.objects.filter(session_id=session_pk).aggregate(
        head=Max("sequence"), first=Min("sequence")
    )
    head, first = bounds["head"] or 0, bounds["first"]
    earliest = first if first is not None else head + 1
    # Tuples, not model instances: a log of 200 events is most of the tool's time otherwise.
    rows = list(
        SessionEvent.objects.filter(session_id=session_pk, sequence__gt=since)
        .order_by("sequence")
        .values_list(*EVENT_COLUMNS)[: MAX_EVENTS + 1]
    )
    return Changes(
        version=head,
        events=[event_json(*row) for row in rows[:MAX_EVENTS]],
        truncated=len(rows) > MAX_EVENTS,
        earliest=earliest,
        gap=since + 1 < earliest and since < head,
    )


def prune(*, now: datetime | None = None) -> int:
    """Retention, in one DELETE: events older than RETENTION_DAYS or more than
    MAX_ROWS_PER_SESSION behind their head go; each session's newest event stays. Returns how
    many rows were deleted."""
    now = now or timezone.now()
    cutoff = int((now - timedelta(days=RETENTION_DAYS)).timestamp() * 1000)
    head = Subquery(
        SessionEvent.objects.filter(session_id=OuterRef("session_id"))
        .order_by("-sequence")
        .values("sequence")[:1]
    )
    stale = SessionEvent.objects.annotate(head=head).filter(sequence__lt=F("head"))
    return stale.filter(
        Q(occurred_at__lt=cutoff) | Q(sequence__lte=F("head") - MAX_ROWS_PER_SESSION)
    ).delete()[0]
