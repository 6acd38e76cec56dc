"""Reading transcripts: pages by seq, the last N messages of many sessions, bounded output.

Pages are index range scans on UniqueConstraint(session, seq), so their cost does not grow with
depth. "Last N per session" is one OR-of-ranges query over `seq > last_seq - N`, never a sliced
Prefetch over whole transcripts (stack.md §7.2).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from dataclasses import dataclass
from functools import reduce
from operator import itemgetter, or_
from typing import TYPE_CHECKING, Any, NamedTuple

import orjson
from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import connection
from django.db.models import Q, QuerySet

from openclaw_common.dbstep import db_step

from .lib import jsontext, rawsql, sanitize
from .models import Message, Session
from .storage import cold_storage, jsonl_format

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from .rows import SessionRow

TOOL_RESULT = "toolResult"


def tool_result_message(call_id: str, name: str, text: str, *, error: bool = False) -> dict:
    """A transcript's toolResult message, as OpenClaw writes it (ACP turns, the demo)."""
    return {
        "role": TOOL_RESULT,
        "toolCallId": call_id,
        "toolName": name,
        "content": [{"type": "text", "text": text}],
        "isError": error,
    }


def payload(message: Message) -> dict:
    """The raw transcript message plus `__openclaw.seq`, its 1-based transcript position."""
    data = message.to_transcript()
    data["__openclaw"] = {"seq": message.seq}
    return data


class MessageRow(NamedTuple):
    """A transcript message as pages read it: Message.TRANSCRIPT_COLUMNS, then whether the
    redaction scan is needed. Read with values_list (message_rows()), no model object."""

    seq: int
    role: str
    content: str | list[Any] | None
    provenance: dict[str, Any] | None
    tool_call_id: str
    tool_name: str
    usage: dict[str, Any] | None
    timestamp: int
    extra: dict[str, Any] | None
    redact_needed: bool | None

    def payload(self) -> dict[str, Any]:
        """Like payload() for a Message."""
        data = Message.transcript_from_values(*self[:_TRANSCRIPT_WIDTH])
        data["__openclaw"] = {"seq": self.seq}
        return data

    @property
    def scan_needed(self) -> bool:
        """Whether sanitising must scan it for secrets (not known to be clean)."""
        return self.redact_needed is not False


READ_COLUMNS: tuple[str, ...] = MessageRow._fields
_ROW_JSON_AT = tuple(
    i for i, name in enumerate(READ_COLUMNS) if name in ("content", "provenance", "usage", "extra")
)
_TRANSCRIPT_WIDTH = len(Message.TRANSCRIPT_COLUMNS)


def message_rows(queryset: QuerySet[Message]) -> list[MessageRow]:
    """A (sliced, ordered) queryset of messages as MessageRows, in one query.

    PostgreSQL: run with a plain cursor and the jsonb columns decoded by jsontext.loads; the
    ORM's JSONField converter (the standard library's json.loads, ~500 calls for a history
    page) was the largest part of a page's Python (BENCHMARKS.md, issue 18)."""
    new = tuple.__new__  # what NamedTuple._make does, less its length check (one per row)
    values_list = queryset.values_list(*READ_COLUMNS)
    if connection.vendor != "postgresql":
        return [new(MessageRow, values) for values in values_list]
    try:
        sql, params = values_list.query.sql_with_params()
    except EmptyResultSet:  # the ORM knows no row can match (a seq past the column's range)
        return []
    found = rawsql.fetchall(sql, params)
    return [new(MessageRow, values) for values in rawsql.decode_json(found, _ROW_JSON_AT)]


_PAGE_COLUMNS = rawsql.ModelColumns(Message, "m", READ_COLUMNS)


def read_rows(
    session_id: int,
    *,
    below: int | None = None,
    above: int | None = None,
    include_tools: bool = True,
    newest_first: bool = True,
    limit: int,
    offset: int = 0,
) -> list[MessageRow]:
    """One session's messages with `above` < seq < `below` (either bound optional), toolResult
    ones left out unless `include_tools`, by seq (newest first or oldest first), `offset`
    skipped, at most `limit`: one range scan of the (session, seq) index.

    Plain SQL on every backend: the ORM spent longer building and compiling this statement,
    and converting its rows, than PostgreSQL spends running it (BENCHMARKS.md, issue 18)."""
    where: list[str] = ["m.session_id = %s"]
    params: list[object] = [session_id]
    if below is not None:
        where.append("m.seq < %s")
        params.append(below)
    if above is not None:
        where.append("m.seq > %s")
        params.append(above)
    if not include_tools:
        where.append("m.role <> %s")
        params.append(TOOL_RESULT)
    sql = (
        f"SELECT {_PAGE_COLUMNS.sql} FROM {rawsql.table(Message)} m WHERE {' AND '.join(where)}"
        f" ORDER BY m.seq {'DESC' if newest_first else 'ASC'} LIMIT %s OFFSET %s"
    )
    new = tuple.__new__
    found = rawsql.fetchall(sql, [*params, limit, offset])
    return [new(MessageRow, values) for values in _PAGE_COLUMNS.rows(found)]


# A session's id, then READ_COLUMNS: rows of several sessions (range_rows).
_RANGE_COLUMNS = rawsql.ModelColumns(Message, "m", ("session", *READ_COLUMNS))


def range_rows(
    ranges: Iterable[tuple[int, int | None, int | None]],
    *,
    roles: tuple[str, ...] = (),
    without_role: str | None = None,
    newest_first: bool = False,
) -> list[tuple[int, MessageRow]]:
    """(session id, row) of the messages with `above` < seq <= `up_to` (either bound None: none)
    for each (session id, above, up_to) of `ranges`, only of `roles` (when given) and not of
    `without_role`, ordered by session id then seq (newest first or oldest first). One
    statement: an OR of seq ranges on the (session, seq) index, the statement the ORM builds for
    an OR of Q(session_id=…, seq__gt=…), written out instead: Django spent a few ms a page
    resolving each term of the OR, and converting its rows one by one (issue 26). `usage` is
    not read (None): every caller leaves it out (sanitising drops it).

    Never called with no ranges (an OR of none is no statement)."""
    terms: list[str] = []
    params: list[object] = []
    for session_id, above, up_to in ranges:
        term = "m.session_id = %s"
        params.append(session_id)
        if above is not None:
            term += " AND m.seq > %s"
            params.append(above)
        if up_to is not None:
            term += " AND m.seq <= %s"
            params.append(up_to)
        terms.append(f"({term})")
    where = f"({' OR '.join(terms)})"
    if roles:
        where += f" AND m.role IN ({', '.join(['%s'] * len(roles))})"
        params.extend(roles)
    if without_role is not None:
        where += " AND NOT (m.role = %s)"
        params.append(without_role)
    sql = (
        f"SELECT {_range_columns()} FROM {rawsql.table(Message)} m WHERE {where}"
        f" ORDER BY m.session_id ASC, m.seq {'DESC' if newest_first else 'ASC'}"
    )
    new = tuple.__new__
    return [
        (values[0], new(MessageRow, values[1:]))
        for values in _RANGE_COLUMNS.rows(rawsql.fetchall(sql, params))
    ]


@functools.cache
def _range_columns() -> str:
    return _RANGE_COLUMNS.sql.replace(f"m.{rawsql.column('usage')}", "NULL")


def seq_of(message: dict) -> int:
    return message["__openclaw"]["seq"]


def read_page(
    session: Session,
    *,
    limit: int,
    include_tools: bool,
    offset: int = 0,
    before_seq: int | None = None,
) -> tuple[list[tuple[dict[str, Any], bool]], bool]:
    """The newest `limit` messages (oldest first) older than `before_seq`, skipping the newest
    `offset` visible ones, as payloads. Returns (messages, has_more)."""
    below = before_seq
    skip = offset
    if include_tools and offset:
        # seq is contiguous (1..last_seq) and messages are never deleted one by one, so an offset
        # over the whole transcript is a seq bound: no rows to skip over.
        bound = session.last_seq - offset + 1
        below = bound if below is None else min(below, bound)
        skip = 0
    rows = read_rows(
        session.pk, below=below, include_tools=include_tools, limit=limit + 1, offset=skip
    )
    has_more = len(rows) > limit
    rows = rows[:limit]
    rows.reverse()
    return [(r.payload(), r.scan_needed) for r in rows], has_more


@dataclass
class Bounded:
    messages: list[dict]
    kept_from_source: int  # how many source messages the output still represents
    truncated: bool
    dropped_messages: bool
    content_truncated: bool
    content_redacted: bool
    bytes: int

    def flags(self) -> dict:
        return {
            "truncated": self.truncated,
            "droppedMessages": self.dropped_messages,
            "contentTruncated": self.content_truncated,
            "contentRedacted": self.content_redacted,
            "bytes": self.bytes,
        }


def bound(messages: list[tuple[dict, bool]]) -> Bounded:
    """Sanitise each (payload, scan) and keep the newest that fit in 80 KiB (reference §3.3–3.4)."""
    flags = sanitize.Flags()
    cleaned = [sanitize.sanitize_message(m, flags, scan=scan) for m, scan in messages]
    kept, hard_capped, size = sanitize.cap_messages(cleaned)
    dropped = len(kept) < len(cleaned) or hard_capped
    return Bounded(
        messages=kept,
        kept_from_source=len(kept),
        truncated=dropped or flags.truncated or hard_capped,
        dropped_messages=dropped,
        content_truncated=flags.truncated,
        content_redacted=flags.redacted,
        bytes=size,
    )


# The newest `count` messages of each session (one backward index scan each), toolResult ones
# then dropped. No ORDER BY: rows are grouped per session in Python and each group sorted there.
_LAST_N_LATERAL = """
    SELECT m.session_id, {columns}
    FROM unnest(%s::bigint[]) AS wanted(session_id)
    CROSS JOIN LATERAL (
        SELECT * FROM sessions_app_message
        WHERE session_id = wanted.session_id ORDER BY seq DESC LIMIT %s
    ) AS m
    WHERE m.role <> 'toolResult'
"""
# Per READ_COLUMNS entry: usage is not read (previews are sanitised, which drops it) and an
# empty `extra` comes back as NULL, which MessageRow.payload() treats the same and which needs
# no decoding.
_LAST_N_COLUMNS = ", ".join(
    {"usage": "NULL", "extra": "NULLIF(m.extra, '{}'::jsonb)"}.get(c, f"m.{c}")
    for c in READ_COLUMNS
)
# Their places in a row of _LAST_N_LATERAL (the session id first).
_JSON_COLUMNS = tuple(
    1 + i
    for i, name in enumerate(Message.TRANSCRIPT_COLUMNS)
    if name in ("content", "provenance", "extra")
)


def _last_rows_postgresql(
    wanted: list[Session | SessionRow], count: int
) -> list[tuple[int, MessageRow]]:
    """(session_id, row) without toolResult messages, grouped by session, in seq order within
    each. jsonb arrives as text and is decoded here in one pass, several times cheaper than model
    instances for a page of a thousand messages."""
    with connection.cursor() as cursor:
        cursor.execute(
            _LAST_N_LATERAL.format(columns=_LAST_N_COLUMNS), [[s.pk for s in wanted], count]
        )
        raw_rows = cursor.fetchall()
    raw_rows.sort(key=itemgetter(0, 1))
    new = tuple.__new__
    return [
        (values[0], new(MessageRow, values[1:]))
        for values in rawsql.decode_json(raw_rows, _JSON_COLUMNS)
    ]


def last_messages(sessions: Iterable[Session | SessionRow], count: int) -> dict[int, list[dict]]:
    """For each session, its last `count` messages with toolResult messages removed afterwards
    (as OpenClaw does, so fewer than `count` may remain), sanitised. One query.

    PostgreSQL: a LATERAL join, one backward index scan per session. Elsewhere: an OR of
    `seq > last_seq - count` ranges on the (session, seq) index.
    """
    wanted = [s for s in sessions if s.last_seq > 0]
    found: dict[int, list[dict]] = {}
    if not wanted:
        return found
    rows: Iterable[tuple[int, MessageRow]]
    if connection.vendor == "postgresql":
        rows = _last_rows_postgresql(wanted, count)
    elif settings.OPENCLAW_FAST_ROWS:
        rows = range_rows(
            [(s.pk, s.last_seq - count, None) for s in wanted], without_role=TOOL_RESULT
        )
    else:  # the plain path (the ORM's statement, the same rows)
        ranges = [Q(session_id=s.pk, seq__gt=s.last_seq - count) for s in wanted]
        values = (
            Message.objects.filter(reduce(or_, ranges))
            .exclude(role=TOOL_RESULT)
            .order_by("session_id", "seq")
            .values_list("session_id", *READ_COLUMNS)
        )
        new = tuple.__new__
        rows = ((v[0], new(MessageRow, v[1:])) for v in values)
    flags = sanitize.Flags()
    sanitize_message = sanitize.sanitize_message
    for session_id, row in rows:
        found.setdefault(session_id, []).append(
            sanitize_message(row.payload(), flags, scan=row.scan_needed)
        )
    for session_id, messages in _cold_tails([s for s in wanted if s.pk not in found], count):
        found[session_id] = [sanitize_message(m, flags, scan=scan) for m, scan in messages]
    return found


def _cold_tails(
    empty: list[Session | SessionRow], count: int
) -> Iterator[tuple[int, list[tuple[dict, bool]]]]:
    """The last messages of those sessions without rows that are cold, read from their files
    (9.6: lists keep payloads archived; nothing is restored). One query, only when a session
    came back empty; TranscriptUnavailable when a file is lost."""
    for pk, tail in cold_storage.listed_messages(empty, last=count):
        kept = [m for m in tail if m.role != TOOL_RESULT]
        if kept:
            yield pk, [(payload(m), m.redact_needed is not False) for m in kept]


_CONTEXT = """
    SELECT {columns} FROM sessions_app_message
    WHERE session_id = %s {up_to} ORDER BY seq DESC LIMIT %s
"""


def context_messages(session_id: int, *, up_to: int | None, limit: int) -> list[dict]:
    """The last `limit` messages up to seq `up_to` (all when None), oldest first, as raw
    transcript messages (no `__openclaw`): what an agent's turn is given. On PostgreSQL read
    with a plain cursor and decoded by jsontext.loads (a turn reads up to 50 messages)."""
    if connection.vendor == "postgresql":
        columns = ", ".join(Message.TRANSCRIPT_COLUMNS)
        params = [session_id, limit] if up_to is None else [session_id, up_to, limit]
        sql = _CONTEXT.format(columns=columns, up_to="" if up_to is None else "AND seq <= %s")
        rows = rawsql.decode_json(rawsql.fetchall(sql, params), _CONTEXT_JSON_COLUMNS)
    else:
        qs = Message.objects.filter(session_id=session_id)
        if up_to is not None:
            qs = qs.filter(seq__lte=up_to)
        rows = list(qs.order_by("-seq").values_list(*Message.TRANSCRIPT_COLUMNS)[:limit])
    rows.reverse()
    return [Message.transcript_from_values(*row) for row in rows]


_CONTEXT_JSON_COLUMNS = tuple(
    i
    for i, name in enumerate(Message.TRANSCRIPT_COLUMNS)
    if name in ("content", "provenance", "usage", "extra")
)


EXPORT_BATCH = 1000


def export_jsonl(
    session: Session, *, raw: bool = False, batch_size: int = EXPORT_BATCH
) -> Iterator[str]:
    """The transcript as OpenClaw JSONL (reference §8.3): a session header, then one `message`
    entry per message chained by parentId, compact JSON as OpenClaw writes it. Streams in seq
    batches, so memory stays flat.

    Credential-like text is masked as in sessions_history (sanitize.redact_message) unless
    `raw`: the callers allow raw to operators only (API key of operator scope, the admin)."""
    yield jsonl_format.export_header(session)
    cursor = ExportCursor(session.pk, raw=raw, batch_size=batch_size)
    while (chunk := cursor.next_chunk()) is not None:
        yield chunk


async def export_jsonl_async(
    session: Session, *, raw: bool = False, batch_size: int = EXPORT_BATCH
) -> AsyncIterator[str]:
    """export_jsonl() for an ASGI response: each batch is read in a thread, so the first line
    leaves before the rest is read and only one batch is in memory (Django buffers a sync
    iterator whole under ASGI)."""
    yield jsonl_format.export_header(session)
    cursor = ExportCursor(session.pk, raw=raw, batch_size=batch_size)
    # Each page hands its connection back: a download of a million messages takes minutes and
    # must not hold a pooled connection meanwhile (openclaw_common.dbstep).
    next_chunk = db_step(cursor.next_chunk)
    while (chunk := await next_chunk()) is not None:
        yield chunk


class ExportCursor:
    """Where an export is: the last seq written and the last entry id (the next parentId).
    Each chunk is one index range scan by seq, read as values (no model instances)."""

    def __init__(self, session_id: int, *, raw: bool, batch_size: int):
        self.session_id, self.raw, self.batch_size = session_id, raw, batch_size
        self.after = 0
        self.parent: str | None = None

    def next_chunk(self) -> str | None:
        rows = message_rows(
            Message.objects.filter(session_id=self.session_id, seq__gt=self.after).order_by("seq")[
                : self.batch_size
            ]
        )
        if not rows:
            return None
        lines = []
        for row in rows:
            entry_id = f"{row.seq:08x}"
            entry = {
                "type": "message",
                "id": entry_id,
                "parentId": self.parent,
                "timestamp": jsonl_format.iso(row.timestamp),
            }
            lines.append(self._line(entry, row))
            self.parent = entry_id
        self.after = rows[-1].seq
        return b"\n".join(lines).decode() + "\n"

    def _line(self, entry: dict, row: MessageRow) -> bytes:
        """One entry's line. Encoded as history's answer is (jsontext.dumps_bytes: orjson, and
        the standard library for what orjson refuses, such as nesting past its 255 levels, stored
        before the depth limit). A row even that cannot encode is a placeholder: the headers are
        already sent, so raising here would cut the download mid-stream (issue 28)."""
        try:
            data = Message.transcript_from_values(*row[:_TRANSCRIPT_WIDTH])
            # redact_needed False: known to hold nothing credential-like.
            if not self.raw and row.redact_needed is not False:
                data = sanitize.redact_message(data)[0]
            return jsontext.dumps_bytes({**entry, "message": data})
        except (RecursionError, TypeError, ValueError) as exc:
            log.warning(
                "export: message %s of session %s not encodable: %s", row.seq, self.session_id, exc
            )
            placeholder = {
                "role": row.role,
                "content": [{"type": "text", "text": sanitize.NOT_ENCODABLE_PLACEHOLDER}],
                "timestamp": row.timestamp,
            }
            return orjson.dumps({**entry, "message": placeholder})
