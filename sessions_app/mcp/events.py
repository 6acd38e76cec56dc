"""`events_poll` / `events_wait` (spec 9.6 §7): OpenClaw's MCP event queue, read from the stored
messages rather than kept in memory.

The cursor is the message row's primary key: it only grows, it is the same in every process, and
it survives a restart, so a client resumes where it was with the cursor it holds. Every message
of every session the key may see (sessions_list's visibility) is an event; nothing is dropped,
so there is never a `gap` (OpenClaw keeps only the newest 1000 and reports one).

`events_wait` holds no thread: it reads once, then waits on the live hub's "session changed"
notices for the sessions the key may see (live/hub.py, its public follow_changes), reading again
on each, and at least every FALLBACK_SECONDS in case a notice was lost. Cancelling the MCP
request (or the client going away) ends the wait and removes its subscriber.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from .. import transcript
from ..access import visibility
from ..access.identity import Requester
from ..access.resolve import resolve_session
from ..lib import sanitize
from ..live.consumer import in_thread
from ..live.hub import Hub
from ..live.subscribers import Subscriber
from ..models import Message, Session
from ..rows import session_row
from ..tools.declaration import Declaration, Integer, String, Tool
from ..tools.shapes import ANY_OBJECT, INTEGER, STRING, array, obj
from .conversations import conversation_of, message_id, text_of

MAX_LIMIT = 200
# settled_horizon: how many ids after a cursor it looks at, and how far the clocks of the
# writing processes and the database may differ.
SCAN_IDS = 5000
CLOCK_MARGIN = timedelta(seconds=1)
MAX_TIMEOUT_MS = 300_000
FALLBACK_SECONDS = 2.0

EVENT = obj(
    {
        "cursor": INTEGER,
        "type": {"type": "string", "enum": ["message"]},
        "sessionKey": STRING,
        "conversation": ANY_OBJECT,
        "messageId": STRING,
        "messageSeq": INTEGER,
        "role": STRING,
        "text": STRING,
        "raw": ANY_OBJECT,
    },
    ("cursor", "type", "sessionKey", "raw"),
)
SESSION_KEY = String("session_key", "Only events of this session.", max_length=200, advertised=True)

POLL = Declaration(
    name="events_poll",
    description=(
        "Events (new messages in the sessions you can see) after a cursor, oldest first. "
        "Does not consume them: pass next_cursor next time."
    ),
    params=(
        Integer("after_cursor", "Events after this cursor (default 0).", default=0),
        SESSION_KEY,
        Integer("limit", f"Maximum events (1-{MAX_LIMIT}, default 20).", minimum=1, default=20),
    ),
    result=obj(
        {"events": array(EVENT), "next_cursor": INTEGER, "gap": ANY_OBJECT},
        ("events", "next_cursor"),
    ),
)


@POLL.arguments
@dataclass(frozen=True)
class PollArgs:
    after_cursor: int
    session_key: str | None
    limit: int


WAIT = Declaration(
    name="events_wait",
    description=(
        "Wait for the next event after a cursor (default: the newest now, i.e. the next new "
        "message). Returns at once if there is one; else waits up to timeout_ms."
    ),
    params=(
        Integer("after_cursor", "Wait for an event after this cursor."),
        SESSION_KEY,
        Integer(
            "timeout_ms",
            f"How long to wait (1-{MAX_TIMEOUT_MS} ms, default 30000).",
            minimum=1,
            default=30_000,
        ),
    ),
    result=obj({"event": {"anyOf": [EVENT, {"type": "null"}]}, "gap": ANY_OBJECT}, ("event",)),
)


@WAIT.arguments
@dataclass(frozen=True)
class WaitArgs:
    after_cursor: int | None
    session_key: str | None
    timeout_ms: int


def _messages(requester: Requester, session_key: str | None):
    if session_key:
        return Message.objects.filter(
            session=resolve_session(requester, session_key, action="history")
        )
    sessions = Session.objects.listable(settings=requester.key_settings).filter(
        visibility.visible_filter(visibility.policy_for(requester))
    )
    return Message.objects.filter(session__in=sessions)


def settled_horizon(after: int) -> int | None:
    """The highest message id up to which no message can still appear, or None if none can.

    On PostgreSQL ids are drawn when a row is inserted, not when it commits: a message with a
    lower id may still be in an open transaction while a higher one is already visible, and a
    cursor moved past the higher one would skip it for good. So a gap in the ids after `after`
    (ids of every session, visible or not) stops the events there, unless no transaction that
    was already writing when the row after the gap was made is still open (the gap was a
    rollback or a deleted message). SQLite appends one transaction at a time: no such gap."""
    if connection.vendor != "postgresql":
        return None
    expected = after + 1
    looked, oldest = False, None  # the oldest open writer, read once, at the first gap
    for pk, created_at in (
        Message.objects.filter(pk__gt=after).order_by("pk").values_list("pk", "created_at")
    )[:SCAN_IDS]:
        if pk != expected:
            if not looked:
                looked, oldest = True, oldest_open_writer()
            if oldest is not None and oldest <= created_at + CLOCK_MARGIN:
                return expected - 1
        expected = pk + 1
    return None


def oldest_open_writer() -> datetime | None:
    """When the oldest transaction that has written and is still open began (PostgreSQL)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT min(xact_start) FROM pg_stat_activity WHERE datname = current_database() "
            "AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()"
        )
        row = cursor.fetchone()
    return row[0] if row else None


def read_events(requester: Requester, after: int, session_key: str | None, limit: int) -> list:
    """The events after cursor `after`, oldest first, sanitised as history is; never past a
    message that may still appear below them (settled_horizon)."""
    messages = _messages(requester, session_key).filter(pk__gt=after)
    horizon = settled_horizon(after)
    if horizon is not None:
        messages = messages.filter(pk__lte=horizon)
    found = list(
        messages.order_by("pk").values_list("pk", "session_id", *transcript.READ_COLUMNS)[:limit]
    )
    sessions = {s.pk: s for s in Session.objects.filter(pk__in={r[1] for r in found})}
    rows = {pk: session_row(s, settings=requester.key_settings) for pk, s in sessions.items()}
    events = []
    for pk, session_pk, *columns in found:
        row = transcript.MessageRow(*columns)
        message = sanitize.sanitize_message(row.payload(), sanitize.Flags(), scan=row.scan_needed)
        event: dict[str, Any] = {
            "cursor": pk,
            "type": "message",
            "sessionKey": rows[session_pk]["key"],
        }
        conversation = conversation_of(rows[session_pk])
        if conversation is not None:
            event["conversation"] = conversation
        event.update(
            messageId=message_id(row.seq),
            messageSeq=row.seq,
            role=row.role,
            text=text_of(message),
            raw=message,
        )
        events.append(event)
    return events


def newest_cursor(requester: Requester, session_key: str | None) -> int:
    newest = _messages(requester, session_key).order_by("-pk").values_list("pk", flat=True).first()
    if not newest:
        return 0
    # Not past a message still being written below the newest one (it is an event to come).
    horizon = settled_horizon(max(newest - SCAN_IDS, 0))
    return newest if horizon is None else min(newest, horizon)


def events_poll(*, requester: Requester, args: Any) -> dict:
    a = POLL.read(args, PollArgs)
    events = read_events(requester, a.after_cursor, a.session_key, min(a.limit, MAX_LIMIT))
    return {"events": events, "next_cursor": events[-1]["cursor"] if events else a.after_cursor}


def events_wait(*, requester: Requester, args: Any) -> dict:
    """The sync form (no hub): reads every FALLBACK_SECONDS / 8 until the deadline."""
    a = WAIT.read(args, WaitArgs)
    after = (
        a.after_cursor if a.after_cursor is not None else newest_cursor(requester, a.session_key)
    )
    deadline = time.monotonic() + min(a.timeout_ms, MAX_TIMEOUT_MS) / 1000
    while True:
        found = read_events(requester, after, a.session_key, 1)
        if found or time.monotonic() >= deadline:
            return {"event": found[0] if found else None}
        time.sleep(min(FALLBACK_SECONDS / 8, max(0.0, deadline - time.monotonic())))


async def events_wait_async(*, requester: Requester, args: Any, idempotency_key=None) -> dict:
    a = WAIT.read(args, WaitArgs)
    after = a.after_cursor
    if after is None:
        after = await in_thread(newest_cursor)(requester, a.session_key)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + min(a.timeout_ms, MAX_TIMEOUT_MS) / 1000
    hub = Hub.current()
    subscriber = Subscriber(requester)
    hub.add(subscriber)
    hub.follow_changes(subscriber)
    try:
        while True:
            found = await in_thread(read_events)(requester, after, a.session_key, 1)
            remaining = deadline - loop.time()
            if found or remaining <= 0:
                return {"event": found[0] if found else None}
            await subscriber.next(timeout=min(remaining, FALLBACK_SECONDS))
            while not subscriber.outbox.empty():  # one read covers every notice so far
                subscriber.outbox.get_nowait()
    finally:
        with contextlib.suppress(Exception):
            hub.remove(subscriber)


def wait_text(details: dict) -> str:
    if details.get("event"):
        return f"event {details['event']['cursor']}"
    if details.get("gap"):
        return f"event gap before {details['gap']['oldest_available_cursor']}"
    return "timeout"


POLL_TOOL = Tool(POLL, events_poll)
WAIT_TOOL = Tool(WAIT, events_wait, run_async=events_wait_async)
